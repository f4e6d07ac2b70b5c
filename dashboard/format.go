package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// human writes x for people: four significant digits, never an
// exponent, thousands grouped by a narrow no-break space (16 460, not
// 1.646e+04), and integers of five digits or more whole.
func human(x float64) string {
	switch {
	case math.IsNaN(x):
		return "–"
	case math.IsInf(x, 0):
		// The store keeps no infinity (they are NULL); a caller that
		// computes one says so in words.
		return "n/a"
	case x == 0:
		return "0"
	}
	if math.Abs(x) < 1e-6 {
		return strings.Replace(fmt.Sprintf("%.3g", x), "-", "−", 1)
	}
	digits := 3 - int(math.Floor(math.Log10(math.Abs(x))))
	if digits < 0 {
		digits = 0
	}
	s := strconv.FormatFloat(x, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return group(s)
}

// group puts a narrow no-break space between the thousands of s's
// integer part.
func group(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "−", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(whole) > 4 {
		var b strings.Builder
		for i, r := range whole {
			if i > 0 && (len(whole)-i)%3 == 0 {
				b.WriteRune('\u202f')
			}
			b.WriteRune(r)
		}
		whole = b.String()
	}
	if frac != "" {
		return sign + whole + "." + frac
	}
	return sign + whole
}

// num is human for a stored value that may be NULL (empty).
func num(p *float64) string {
	if p == nil {
		return ""
	}
	return human(*p)
}

// pnum is a change in percent with its sign: "+1.85 %", "−4.80 %".
func pnum(p *float64) string {
	if p == nil {
		return ""
	}
	return pct(*p)
}

func pct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	s := fmt.Sprintf("%+.2f\u202f%%", x)
	return strings.Replace(s, "-", "−", 1)
}

// pval is a p-value: three significant digits, "< 0.0001" below.
func pval(p *float64) string {
	switch {
	case p == nil:
		return ""
	case *p < 0.0001:
		return "< 0.0001"
	}
	return strconv.FormatFloat(*p, 'g', 3, 64)
}

// raw is a sort key: the number as JavaScript's parseFloat reads it, ""
// for NULL.
func raw(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

// sparkline draws xs as an inline SVG polyline w × h pixels, its last
// point marked, and marks (indexes into xs) as red ticks.
func sparkline(xs []float64, marks []int, w, h float64) template.HTML {
	if len(xs) == 0 {
		return ""
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	at := func(i int, x float64) (float64, float64) {
		px := w / 2
		if len(xs) > 1 {
			px = 2 + (w-4)*float64(i)/float64(len(xs)-1)
		}
		py := h / 2
		if hi > lo {
			py = h - 2 - (h-4)*(x-lo)/(hi-lo)
		}
		return px, py
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" width="%g" height="%g" viewBox="0 0 %g %g" role="img"><polyline fill="none" stroke="#36c" stroke-width="1.2" points="`, w, h, w, h)
	for i, x := range xs {
		px, py := at(i, x)
		fmt.Fprintf(&b, "%.1f,%.1f ", px, py)
	}
	b.WriteString(`"/>`)
	for _, m := range marks {
		if m >= 0 && m < len(xs) {
			px, _ := at(m, xs[m])
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="0" y2="%g" stroke="#d62728" stroke-dasharray="2,2"/>`, px, px, h)
		}
	}
	px, py := at(len(xs)-1, xs[len(xs)-1])
	fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2" fill="#36c"/></svg>`, px, py)
	return template.HTML(b.String())
}
