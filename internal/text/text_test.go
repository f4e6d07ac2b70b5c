package text

import "testing"

func TestShort(t *testing.T) {
	for in, want := range map[string]string{
		"0123456789abcdef0123456789abcdef01234567": "01234567",
		"01234567":  "01234567",
		"0123":      "0123",
		"":          "",
		"012345678": "01234567",
	} {
		if got := Short(in); got != want {
			t.Errorf("Short(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOrDash(t *testing.T) {
	if OrDash("") != "-" || OrDash("x") != "x" {
		t.Errorf("OrDash: %q, %q", OrDash(""), OrDash("x"))
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("  exit 1:\n\tlast line\r\n  more  "); got != "exit 1: last line more" {
		t.Errorf("OneLine = %q", got)
	}
}
