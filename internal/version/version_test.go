package version

import (
	"runtime/debug"
	"testing"
)

// TestOf: a linked version wins; a go build binary says its revision
// (dirty when modified), a go install of a tagged module its version.
func TestOf(t *testing.T) {
	bi := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"v1.2", bi, "v1.2"},
		{"dev", bi, "0123456789ab-dirty"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, "v0.3.0"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	} {
		if got := Of(tc.linked, tc.bi, true); got != tc.want {
			t.Errorf("Of(%q, …) = %q, want %q", tc.linked, got, tc.want)
		}
	}
	if got := Of("dev", nil, false); got != "dev" {
		t.Errorf("no build info: %q", got)
	}
}
