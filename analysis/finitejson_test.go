package analysis

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestFiniteJSON: NaN and ±Inf are null, or left out under omitempty; a
// finite 0 is written even under omitempty (a Δ of exactly 0 is an
// answer) and left out under omitzero; an embedded struct's fields are
// promoted and the outer field of a name wins, as encoding/json does;
// an int under omitzero is left out at 0; map keys are sorted, and
// text is HTML-escaped as encoding/json's is.
func TestFiniteJSON(t *testing.T) {
	type inner struct {
		A float64 `json:"a"`
		X string  `json:"x"`
	}
	type outer struct {
		inner
		N    float64           `json:"n"`
		E    float64           `json:"e,omitempty"`
		Z    float64           `json:"z,omitempty"`
		Zero float64           `json:"zero,omitzero"`
		Keep float64           `json:"keep,omitzero"`
		Both float64           `json:"both,omitzero,omitempty"`
		Skip float64           `json:"-"`
		X    string            `json:"x"`
		I    int               `json:"i,omitzero"`
		Vals []float64         `json:"vals"`
		M    map[string]string `json:"m"`
	}
	got, err := marshalJSON(outer{inner: inner{A: math.Inf(-1), X: "inner"}, N: math.NaN(), E: math.Inf(1), Z: 0, Zero: 0, Keep: 2.5, Both: math.NaN(), Skip: 1, X: "<script>",
		Vals: []float64{1, math.NaN()}, M: map[string]string{"b": "1", "a": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":null,"n":null,"z":0,"keep":2.5,"x":"\u003cscript\u003e","vals":[1,null],"m":{"a":"2","b":"1"}}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	js, err := Stat{Commit: "patch", N: 1, Median: 5, Lo: math.Inf(-1), Hi: math.Inf(1), DeltaPct: math.Inf(1), DeltaLo: math.NaN(), DeltaHi: math.NaN(),
		DecideLo: math.NaN(), DecideHi: math.NaN(), P: math.NaN(), Geomean: math.NaN(), BaseGeomean: math.NaN(), MinEffectPct: 5,
		DetectablePct: math.Inf(1), Verdict: results.Unknown}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ci_lo":null`, `"ci_hi":null`, `"median":5`, `"delta_pct":"the baseline's median is 0`, `"p":"not tested"`} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).Match(js) {
			t.Errorf("a Stat of one value lacks %s: %s", want, js)
		}
	}
}

// TestNoShadowJSON: no type of the analysis writes its own shadow of
// *float64 fields for JSON any more, nor encodes JSON but through
// marshalJSON (encoding/json refuses the NaN the types hold): it is the
// one way. The plan inside report.json is the one exception, encoded
// as plan.json is.
func TestNoShadowJSON(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	shadow := regexp.MustCompile(`\*float64\s+` + "`json:" + `|json\.(NewEncoder|MarshalIndent|MarshalWrite|Marshal)\(`)
	for _, f := range files {
		if regexp.MustCompile(`_test\.go$`).MatchString(f) || f == "finitejson.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if shadow.Match(bytes.ReplaceAll(src, []byte("json.Marshal(&plan)"), nil)) {
			t.Errorf("%s declares a *float64 JSON field or encodes JSON itself: use a float64 and marshalJSON", f)
		}
	}
}

// TestOmitEmptyMeansEmpty: report.json is written with v2's omitempty,
// which leaves out a field whose JSON is empty ("", [], {}, null) but
// writes a 0 or false; v1 left those out. So no type report.json
// reaches may say omitempty where it means "leave out 0": an int, a
// bool or a struct says omitzero, and a float outside this package
// (whose omitempty means "leave out NaN, write 0") says omitzero too.
// The plan inside is encoded by encoding/json and is not walked.
func TestOmitEmptyMeansEmpty(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || !f.IsExported() && !f.Anonymous || f.Type == reflect.TypeFor[*results.Plan]() {
				continue
			}
			opts := strings.Split(tag, ",")[1:]
			empty, zero := slices.Contains(opts, "omitempty"), slices.Contains(opts, "omitzero")
			k := f.Type.Kind()
			switch {
			case !empty || zero:
			case k == reflect.Bool || k >= reflect.Int && k <= reflect.Uint64 || k == reflect.Struct:
				t.Errorf("%s.%s (%s) says omitempty: under JSON v2 a zero is written; say omitzero", path, f.Name, k)
			case k == reflect.Float64 && ty.PkgPath() != reflect.TypeFor[Report]().PkgPath():
				t.Errorf("%s.%s (float64 of %s) says omitempty: under JSON v2 a 0 is written; say omitzero", path, f.Name, ty.PkgPath())
			}
			walk(f.Type, path+"."+f.Name)
		}
	}
	walk(reflect.TypeFor[jsonReport](), "report")
	walk(reflect.TypeFor[Doc](), "doc")
	walk(reflect.TypeFor[Cell](), "cell")
	if len(seen) < 20 {
		t.Errorf("walked %d types: the walk lost its way", len(seen))
	}
}
