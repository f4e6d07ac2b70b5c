package workload

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// The sections of a workload file: SQL that makes what the script needs,
// then the pgbench script.
//
//	-- abtest:setup
//	CREATE TABLE IF NOT EXISTS ping (id bigserial PRIMARY KEY, batch int, n int DEFAULT 0);
//	-- abtest:script
//	INSERT INTO ping (batch) SELECT :batch FROM generate_series(1, :batch);
//
// A file without the markers is all script.
const (
	setupMarker  = "-- abtest:setup"
	scriptMarker = "-- abtest:script"
)

// splitSetup splits a workload file into its setup SQL and its script.
func splitSetup(text string) (setup, script string) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != setupMarker {
		return "", text
	}
	for i, l := range lines[1:] {
		if strings.TrimSpace(l) == scriptMarker {
			return strings.Join(lines[1:i+1], ""), strings.Join(lines[i+2:], "")
		}
	}
	return strings.Join(lines[1:], ""), ""
}

// RunSetup runs w's setup SQL, if any, on the server c names, in one
// transaction.
func RunSetup(ctx context.Context, c Conn, w Workload) error {
	if strings.TrimSpace(w.Setup) == "" {
		return nil
	}
	conn, err := pgx.Connect(ctx, c.connString(c.Database))
	if err != nil {
		return exitcode.Failure(fmt.Errorf("%w: workload %s setup: cannot connect: %v", ErrServer, w.Name, err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, marker+"\n"+w.Setup)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return exitcode.Failure(fmt.Errorf("workload %s: its setup SQL failed: %v", w.Name, err))
	}
	return nil
}
