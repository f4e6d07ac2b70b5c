package build

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pgabtest/abtest/internal/proc"
)

// TestConcurrentBuildsOfOneName: two builds of the same tree into one
// install, started together (two abtest processes needing one build),
// compile it once: the second waits for the first's lock and then
// finds its fingerprint installed.
func TestConcurrentBuildsOfOneName(t *testing.T) {
	count := filepath.Join(t.TempDir(), "builds")
	// A configure that writes a Makefile whose compile takes a second
	// and notes itself in count, and whose install makes bin/postgres.
	configure := fmt.Sprintf(`#!/bin/sh
for a; do case $a in --prefix=*) prefix=${a#--prefix=};; esac; done
mkdir -p contrib/pg_stat_statements
printf 'all:\n\tsleep 1; echo built >>%s\ninstall:\n\tmkdir -p %%s/bin && cp /bin/true %%s/bin/postgres\n' "$prefix" "$prefix" >Makefile
printf 'all:\ninstall:\n' >contrib/pg_stat_statements/Makefile
`, count)
	b, prov, dir, _ := fakeTreeWith(t, false, map[string]string{"configure": configure})
	b.Run = &proc.Runner{}
	var wg sync.WaitGroup
	results := make([]*Result, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.Build(context.Background(), prov, dir, Options{Type: Release, NoCCache: true})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("build %d: %v", i+1, err)
		}
	}
	data, _ := os.ReadFile(count)
	if n := strings.Count(string(data), "built"); n != 1 {
		t.Errorf("the tree was compiled %d times, want once", n)
	}
	if results[0].Skipped == results[1].Skipped {
		t.Errorf("skipped: %v and %v, want one build and one skip", results[0].Skipped, results[1].Skipped)
	}
}
