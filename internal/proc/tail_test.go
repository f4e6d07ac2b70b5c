package proc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestWriteTail: a failed command's last stderr lines are printed under
// its name, also through wrapping; one line (already in the message) or
// another error prints nothing.
func TestWriteTail(t *testing.T) {
	err := (&Runner{}).Run(context.Background(), Cmd{Path: "sh", Args: []string{"-c", "echo a >&2; echo b >&2; exit 3"}})
	var out strings.Builder
	WriteTail(&out, fmt.Errorf("building x: %w", err))
	if out.String() != "last lines of sh:\n  a\n  b\n" {
		t.Errorf("tail %q", out.String())
	}
	out.Reset()
	WriteTail(&out, &Error{Cmd: "sh", Tail: []string{"only"}})
	WriteTail(&out, errors.New("plain"))
	if out.Len() != 0 {
		t.Errorf("printed %q", out.String())
	}
}
