package results

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
)

// ServersFile, in a results directory, holds what each commit's server
// ran with: its initdb options and every setting pg_settings showed
// after its first start in the run. The report compares them, so that a
// comparison across versions says where the servers differ besides the
// code (PG 18's initdb turns data checksums on).
const ServersFile = "servers.json"

// ServerSetup is one commit's server as the run found it.
type ServerSetup struct {
	Version string `json:"version"`
	// InitdbOpts are the initdb options the run asked for
	// (--initdb-opt); InitdbPassed those its initdb was given (PG 15's
	// initdb does not know --no-data-checksums, its default: it is left
	// out there), nil in the servers.json of an older abtest.
	InitdbOpts   []string          `json:"initdb_opts,omitempty"`
	InitdbPassed *[]string         `json:"initdb_passed,omitempty"`
	Settings     map[string]string `json:"settings"`
}

// Initdb is what the server's initdb was given beyond abtest's own
// options, and whether that was recorded (else the options asked for).
func (s ServerSetup) Initdb() (opts []string, recorded bool) {
	if s.InitdbPassed == nil {
		return s.InitdbOpts, false
	}
	return *s.InitdbPassed, true
}

// Servers are the commits' servers, by commit label.
type Servers map[string]ServerSetup

// WriteServers writes dir/servers.json atomically.
func WriteServers(dir string, s Servers) error { return WriteJSON(dir, ServersFile, s) }

// ReadServers reads dir/servers.json; a directory without one (a run of
// an older abtest, or none started) has none.
func ReadServers(dir string) (Servers, error) {
	data, err := os.ReadFile(filepath.Join(dir, ServersFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Servers
	return s, json.Unmarshal(data, &s)
}
