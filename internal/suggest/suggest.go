// Package suggest finds the name a typo meant: the nearest candidate by
// edit distance, for "did you mean" in usage errors.
package suggest

import "fmt"

// DidYouMean is " (did you mean X?)" for the candidate nearest to got,
// when it is near enough to be a typo (at most half of got's length
// plus one edits away), else "". Flags (flag set) get their dashes: -x
// for one letter, --name otherwise.
func DidYouMean(got string, candidates []string, flag bool) string {
	best := Nearest(got, candidates)
	if best == "" {
		return ""
	}
	if flag && len(best) > 1 {
		best = "--" + best
	} else if flag {
		best = "-" + best
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// Nearest is the candidate nearest to got by Distance when it is closer
// than len(got)/2+1 edits, else "".
func Nearest(got string, candidates []string) string {
	best, bestD := "", len(got)/2+1
	for _, c := range candidates {
		if d := Distance(got, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the edit distance between a and b in runes, a swap of
// two neighbours counting as one edit (the commonest typo: --hots).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
