package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"host", "hots", 1}, {"matrix", "matirx", 1}, {"kitten", "sitting", 3}, {"é", "e", 1}, {"", "abc", 3}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	cmds := []string{"switch", "status", "matrix", "bench"}
	for _, tc := range []struct {
		got  string
		flag bool
		want string
	}{
		{"matirx", false, " (did you mean matrix?)"},
		{"stauts", false, " (did you mean status?)"},
		{"zzzzzz", false, ""},
		{"hots", true, " (did you mean --host?)"},
		{"x", true, ""},
		{"prot", true, " (did you mean --port?)"},
	} {
		cands := cmds
		if tc.flag {
			cands = []string{"host", "h", "port", "p"}
		}
		if got := DidYouMean(tc.got, cands, tc.flag); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.got, got, tc.want)
		}
	}
	// A one-letter typo is never near enough: any letter is one edit
	// from any other.
	if got := DidYouMean("q", []string{"p"}, true); got != "" {
		t.Errorf("one letter: %q", got)
	}
}
