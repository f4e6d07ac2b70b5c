package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/store"
)

// TestWriteAndServe: the site of a store is served on loopback from a
// temporary directory, which is gone once serving ends; a public
// address is refused.
func TestWriteAndServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := t.TempDir()
	dirs, err := storetest.Nights(filepath.Join(root, "nights"), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, filepath.Join(root, store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := history.ImportAll(ctx, s, dirs, nil, nil); err != nil {
		t.Fatal(err)
	}
	var site, index string
	done := make(chan struct{})
	err = dashboard.WriteAndServe(ctx, s, "", "127.0.0.1:0", func(dir, addr string) {
		site = dir
		// ready is called before serving starts: fetch meanwhile.
		go func() {
			defer close(done)
			defer cancel()
			resp, err := http.Get("http://" + addr + "/index.html")
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				index = string(b)
			}
		}()
	})
	if err != nil {
		t.Fatalf("serve: %v", err) // before ready: nothing to wait for
	}
	<-done
	if !strings.Contains(index, "<html") {
		t.Fatalf("served: %v, index %d bytes", err, len(index))
	}
	if _, err := os.Stat(site); err == nil {
		t.Errorf("the temporary site %s is left", site)
	}
	s2, err := store.Open(context.Background(), filepath.Join(root, store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := dashboard.WriteAndServe(context.Background(), s2, t.TempDir(), "0.0.0.0:0", nil); err == nil {
		t.Error("served on a public address")
	}
}
