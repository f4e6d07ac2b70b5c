package analysis

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/pgabtest/abtest/results"
)

// crossVersion is the fixture run as seed 002 ran it across versions:
// base on PG 15 (asked --no-data-checksums, which its initdb does not
// know, so it was given nothing), patch on PG 18 (given it), pg_cron
// built into both, preloaded, a setup SQL file, one pgbench (PG 18's);
// the servers differ in 70 settings, one of them hostile.
func crossVersion(t *testing.T) *Input {
	t.Helper()
	in := loadFixture(t)
	o := &in.Plan.Options
	o.InitdbOpts = []string{"--no-data-checksums"}
	o.Extensions = []string{"/src/pg_cron"}
	o.Preload = []string{"pg_cron"}
	o.SetupSQL, o.SetupSQLSHA256 = "/work/examples/cron_ticker.sql", "5e7a1c0ffee0123456789abcdef"
	installs := map[string]string{"base": "/pg/install/pg15", "patch": "/pg/install/pg18"}
	for i := range in.Plan.Commits {
		c := &in.Plan.Commits[i]
		c.Extensions = []results.Extension{{Name: "pg_cron", Dir: "/src/pg_cron", SHA: "0123abcd4567ef", Tree: "feedbeef99", Fingerprint: "f00d" + c.Label}}
	}
	for i := range in.Records {
		rec := &in.Records[i]
		rec.Server = &results.Server{Exe: installs[rec.Commit] + "/bin/postgres"}
		rec.Pgbench = "/pg/install/pg18/bin/pgbench"
	}
	none, off := []string{}, []string{"--no-data-checksums"}
	s15 := map[string]string{"data_checksums": "off", "io_method": "", "application_name": "<script>alert(1)</script>|x\ny"}
	s18 := map[string]string{"data_checksums": "off", "io_method": "worker", "application_name": "abtest"}
	for i := range 70 {
		s18[fmt.Sprintf("new_in_18_%02d", i)] = "on"
	}
	in.Servers = results.Servers{
		"base":  {Version: "postgres (PostgreSQL) 15.18", InitdbOpts: off, InitdbPassed: &none, Settings: s15},
		"patch": {Version: "postgres (PostgreSQL) 18.3", InitdbOpts: off, InitdbPassed: &off, Settings: s18},
	}
	return in
}

// TestHowThisRan: the section names each server as it ran (PG 15 not
// given --no-data-checksums, PG 18 given it), the extension with its
// commit, tree and build fingerprints, the preload, the setup SQL with
// its sha256, and the pgbench with its version, in markdown and text.
func TestHowThisRan(t *testing.T) {
	r, err := Analyze(crossVersion(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md, txt bytes.Buffer
	r.WriteMarkdown(&md)
	r.WriteText(&txt)
	sec := section(md.String(), "## How this ran")
	for _, want := range []string{
		"- base: PostgreSQL 15.18, build base, release (/pg/install/pg15); data checksums off; initdb given no options beyond abtest's\n",
		"- patch: PostgreSQL 18.3, build patch, release (/pg/install/pg18); data checksums off; initdb given --no-data-checksums\n",
		"- extension pg_cron: source /src/pg_cron at commit 0123abcd, tree sha256 feedbeef; fingerprint of its build for base f00dbase, patch f00dpatc\n",
		"- preloaded: pg_cron (beside pg_stat_statements)\n",
		"- setup SQL: /work/examples/cron_ticker.sql (sha256 5e7a1c0f), run before the cells of a cluster whenever its settings, preloads or extensions changed\n",
		"- pgbench: /pg/install/pg18/bin/pgbench (PostgreSQL 18.3), 80 cells\n",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("How this ran lacks %q:\n%s", want, sec)
		}
	}
	if strings.Count(sec, "--no-data-checksums") != 1 {
		t.Errorf("--no-data-checksums named for a server not given it:\n%s", sec)
	}
	for _, want := range []string{"How this ran", "extension pg_cron: source /src/pg_cron at commit 0123abcd", "pgbench: /pg/install/pg18/bin/pgbench (PostgreSQL 18.3)"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("the text report lacks %q", want)
		}
	}
}

// section is the markdown section beginning with head, up to the next.
func section(md, head string) string {
	i := strings.Index(md, head+"\n")
	if i < 0 {
		return ""
	}
	rest := md[i+len(head):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestServersTableDiffers: the main table has the version, the data
// checksums and the performance settings that differ (io_method), the
// 71 other differing settings are in a collapsed block; a value with
// <script>, | and a newline stays text in one row of its table.
func TestServersTableDiffers(t *testing.T) {
	r, err := Analyze(crossVersion(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	r.WriteMarkdown(&md)
	// The summary says, in one line, the differences that change every
	// answer between them (on the seed-002 run: PG 15's data_checksums
	// off beside PG 18's on; here PG 18's io_method).
	if sum := section(md.String(), "## Summary"); !strings.Contains(sum, "beware: the servers differ in settings that change performance: io_method (base (none), patch worker)") ||
		strings.Count(sum, "beware:") != 1 {
		t.Errorf("the summary does not say the checksum difference once:\n%s", sum)
	}
	sec := section(md.String(), "## Servers")
	main, rest, ok := strings.Cut(sec, "<details>")
	if !ok {
		t.Fatalf("no collapsed block:\n%s", sec)
	}
	rows := tableRows(main)
	if want := []string{"setting", "version", "data_checksums ⚠", "io_method ⚠"}; fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("main table rows %q, want %q", rows, want)
	}
	if !strings.Contains(rest, "<summary>Other settings that differ: 71</summary>") {
		t.Errorf("collapsed block's summary:\n%.200s", rest)
	}
	if n := len(tableRows(rest)); n != 1+71 {
		t.Errorf("%d rows in the collapsed table, want the heading and 71", n)
	}
	if strings.Contains(md.String(), "<script>") {
		t.Error("a setting's <script> reached the markdown")
	}
	for _, line := range strings.Split(sec, "\n") {
		if strings.HasPrefix(line, "| application_name") {
			if cols := len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(line, -1)); cols != 4 {
				t.Errorf("application_name's row has %d column bars, want 4: %s", cols, line)
			}
			if !strings.Contains(line, "&lt;script&gt;alert(1)&lt;/script&gt;\\|x y") {
				t.Errorf("application_name not escaped as text: %s", line)
			}
		}
	}
}

// tableRows are the first cells of a markdown text's table rows (the
// separator left out).
func tableRows(md string) []string {
	var out []string
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := regexp.MustCompile(`[^\\]\|`).Split(line[1:], -1)
		out = append(out, strings.TrimSpace(cells[0]))
	}
	return out
}

// fileSweep is sweepInput with its workload a file by absolute path,
// p99 latency 40 ms except 5 s at its saturated rate, and a declared
// metric delivery_p99_ms that grows with :batch.
func fileSweep(t *testing.T) *Input {
	in := sweepInput(t, false)
	const wl = "file:/work/seed/examples/ping.sql"
	in.Plan.Options.Workloads = []string{wl}
	in.Plan.Metrics = append(in.Plan.Metrics, results.Metric{Name: "delivery_p99_ms", Unit: "ms", Direction: results.LowerIsBetter, ThresholdPct: 10, Tier: results.TierReport})
	for i := range in.Plan.Configs {
		in.Plan.Configs[i].Workload = wl
	}
	for i := range in.Plan.Cells {
		in.Plan.Cells[i].Config.Workload = wl
		c := &in.Plan.Cells[i]
		c.ID = fmt.Sprintf("%s/r%d/%s", c.Config.ID(), c.Repeat, c.Commit)
	}
	for i := range in.Records {
		rec := &in.Records[i]
		rec.Config.Workload = wl
		rec.Cell = in.Plan.Cells[i].ID
		p99 := 40.0
		if rec.Saturated {
			p99 = 5000
		}
		rec.Metrics.Set(results.MetricLatencyP99, p99)
		batch, _ := strconv.ParseFloat(rec.Config.Vars["batch"], 64)
		rec.Metrics.Set("delivery_p99_ms", 9*batch+rec.Rate/1000)
	}
	return in
}

// TestPlotsThatRead: configuration names are decoded (a workload file's
// base name, never file:%2F…) in the report and the plots' titles; the
// latency plot's y axis is a log one when its points span more than
// 20× (40 ms beside 5 s) and linear when they do not; the declared
// metric is drawn against :batch, a line per commit and rate.
func TestPlotsThatRead(t *testing.T) {
	for _, wide := range []bool{true, false} {
		in := fileSweep(t)
		if !wide {
			for i := range in.Records {
				in.Records[i].Metrics.Set(results.MetricLatencyP99, 40+float64(i%7))
			}
		}
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := r.WritePlots(filepath.Join(dir, "plots"), dir); err != nil {
			t.Fatal(err)
		}
		var md, txt bytes.Buffer
		r.WriteMarkdown(&md)
		r.WriteText(&txt)
		if strings.Contains(md.String(), "%2F") || strings.Contains(txt.String(), "%2F") {
			t.Errorf("an encoded name in the report:\n%s", grepLines(md.String()+txt.String(), "%2F"))
		}
		if !strings.Contains(md.String(), "## Sweep: ping.sql/c4/cpuall") {
			t.Errorf("the sweep is not named by the file's base name:\n%s", grepLines(md.String(), "Sweep"))
		}
		svgs := map[string]string{}
		for _, p := range r.Plots {
			data, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			svgs[filepath.Base(p)] = string(data)
			if strings.Contains(string(data), "%2F") {
				t.Errorf("%s: an encoded name in the plot", p)
			}
		}
		lat := svgs["latency-vs-rate-file_2Fwork_2Fseed_2Fexamples_2Fping.sql_c4_cpuall.svg"]
		if lat == "" {
			t.Fatalf("no latency plot among %v", r.Plots)
		}
		if !strings.Contains(lat, "ping.sql/c4/cpuall") {
			t.Error("the latency plot's title does not name its series")
		}
		if got := strings.Contains(lat, "(log scale)"); got != wide {
			t.Errorf("latency plot (points spanning 125x: %v): log y %v", wide, got)
		}
		if wide && !(strings.Contains(lat, ">100</text>") && strings.Contains(lat, ">1000</text>")) {
			t.Error("the log y axis has no ticks at 100 and 1000")
		}
		del := svgs["delivery_p99_ms-vs-batch-file_2Fwork_2Fseed_2Fexamples_2Fping.sql_c4_cpuall.svg"]
		if del == "" {
			t.Fatalf("no delivery-vs-batch plot among %v", r.Plots)
		}
		if paths, longest := svgLines(del); longest < 1 || paths < 6 || !strings.Contains(del, "base r500") || !strings.Contains(del, "patch r4000") {
			t.Errorf("delivery-vs-batch: %d paths (longest %d segments), or a line's legend missing", paths, longest)
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestPlotsFitTheDrawing: in every plot of the fixture, the sweep and a
// run whose workload has a long path, every text that is not rotated
// lies within the drawing as a browser draws it (gonum's width ×
// browserWidth), the drawing is white under everything (the legend
// included), and a title too long for one line is broken, not cut.
func TestPlotsFitTheDrawing(t *testing.T) {
	long := fileSweep(t)
	wl := "file:/work/a/very/long/directory/name/that/goes/on/and/on/for/a/while/longer/than/a/plot/is/wide/heartbeat_with_a_long_name.sql"
	long.Plan.Options.Workloads = []string{wl, "file:/elsewhere/heartbeat_with_a_long_name.sql"}
	for i := range long.Plan.Configs {
		long.Plan.Configs[i].Workload = wl
	}
	for i := range long.Records {
		long.Records[i].Config.Workload = wl
	}
	inputs := map[string]*Input{"fixture": loadFixture(t), "sweep": fileSweep(t), "long": long}
	handler := plot.New().TextHandler
	textRE := regexp.MustCompile(`^<text x="([^"]+)" y="([^"]+)" transform="scale\(1, -1\)"$`)
	sizeRE := regexp.MustCompile(`font-size:([0-9.]+)px`)
	for name, in := range inputs {
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := r.WritePlots(dir, dir); err != nil {
			t.Fatal(err)
		}
		titles := 0
		for _, p := range r.Plots {
			data, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			svg := string(data)
			if !strings.Contains(svg, `<path d="M0,0L504,0L504,288L0,288Z" style="fill:#FFFFFF"`) {
				t.Errorf("%s %s: the drawing is not white under its legend", name, p)
			}
			// The texts, and whether a rotation holds them (the y
			// axis's label).
			var rotated []bool
			lines := strings.Split(svg, "\n")
			for i := 0; i < len(lines); i++ {
				l := lines[i]
				switch {
				case strings.HasPrefix(l, "<g transform="):
					rotated = append(rotated, strings.Contains(l, "rotate(") || len(rotated) > 0 && rotated[len(rotated)-1])
				case l == "</g>":
					rotated = rotated[:len(rotated)-1]
				case strings.HasPrefix(l, "<text "):
					m := textRE.FindStringSubmatch(l)
					if m == nil || i+1 >= len(lines) {
						t.Fatalf("%s: a text element of another shape: %s", p, l)
					}
					sty := lines[i+1]
					i++
					if len(rotated) > 1 && rotated[len(rotated)-1] {
						continue
					}
					x, _ := strconv.ParseFloat(m[1], 64)
					y, _ := strconv.ParseFloat(m[2], 64)
					sz := sizeRE.FindStringSubmatch(sty)
					str := html.UnescapeString(regexp.MustCompile(`>(.*)</text>`).FindStringSubmatch(sty)[1])
					size, _ := strconv.ParseFloat(sz[1], 64)
					w := text.Style{Font: font.From(plot.DefaultFont, vg.Points(size)), Handler: handler}.Width(str).Points() * browserWidth
					if x < 0 || x+w > plotW.Points()+0.01 || -y < 0 || -y > plotH.Points() {
						t.Errorf("%s %s: %q at (%.1f, %.1f), %.1f wide, is cut off the %.0f×%.0f drawing", name, p, str, x, -y, w, plotW.Points(), plotH.Points())
					}
					if strings.Contains(str, "heartbeat_with_a_long_name") {
						titles++
					}
				}
			}
		}
		if name == "long" && titles == 0 {
			t.Error("no title names the long workload")
		}
	}
	if got := fitTitle(text.Style{Font: font.From(plot.DefaultFont, vg.Points(12)), Handler: handler}, "a/b/"+strings.Repeat("c", 300), vg.Points(100)); !strings.HasPrefix(got, "a/b/\n") || math.Abs(float64(len(got)-305)) > 0 {
		t.Errorf("a part wider than the line: %q", got)
	}
}
