package cluster

import "testing"

// TestConfDiff: a restart's reason names the first line of abtest.conf
// that changed, or nothing when none did.
func TestConfDiff(t *testing.T) {
	old := Conf{Port: 5433, SharedBufMB: 6026, MaxConns: 100}.Render()
	if d := confDiff(old, old); d != "" {
		t.Errorf("same conf: %q", d)
	}
	d := confDiff(old, Conf{Port: 5433, SharedBufMB: 6020, MaxConns: 100}.Render())
	if d != `"shared_buffers = '6026MB'" -> "shared_buffers = '6020MB'"` {
		t.Errorf("shared_buffers changed: %q", d)
	}
	if d := confDiff(old, old+"work_mem = '7MB'\n"); d != `"" -> "work_mem = '7MB'"` {
		t.Errorf("a line added: %q", d)
	}
}
