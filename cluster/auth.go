package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// Authentication. Only the cluster's private Unix socket directory
// (0700, the server account's: socketDir, privateDir) is trusted:
// whoever can reach a socket there is root or the server's account
// already. Every TCP connection authenticates with scram-sha-256 as the
// superuser, whose password initdb sets from a random one abtest makes.
// With trust on TCP, `--listen 127.0.0.1` let any local account connect
// as superuser, and from there run programs as the server's account.
//
// The password is kept in the data directory, in PassFile (pgpass
// format), mode 0600 and the server account's: the data directory is
// 0700 and that account's, so only it and root can even reach the file,
// which are the accounts abtest runs as; it lives and dies with the data
// directory it opens (a recreated cluster has a new one), and nothing is
// added to a data root others may write to. env.sh names it in
// PGPASSFILE when the cluster listens on TCP, so that `source env.sh;
// psql -h 127.0.0.1` works for whoever can read it. abtest's own
// connections use the socket and need no password.

// PassFile is the password file in a cluster's data directory.
const PassFile = "abtest.pgpass"

// ErrHostTrust: a cluster asked to listen on TCP trusts TCP connections.
var ErrHostTrust = errors.New("cluster: trust on TCP")

// initdbPassDir is where initdb reads the new superuser's password from
// (--pwfile) while it runs: a directory of the server account's, 0700,
// beside the staging directory, removed when initdb is done.
func initdbPassDir(root, name string) string {
	return filepath.Join(root, "."+name+".initdb-pw")
}

// newPassword returns 32 random hexadecimal digits (128 bits).
func newPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// passLine is PassFile's content: the superuser's password for any host
// at the cluster's port (pgpass: host:port:database:user:password). A
// hexadecimal password needs no pgpass escapes.
func passLine(port int, password string) string {
	return fmt.Sprintf("*:%d:*:%s:%s\n", port, SuperUser, password)
}

// parsePassFile returns the password of a PassFile abtest wrote.
func parsePassFile(path string, data []byte) (string, error) {
	f := strings.Split(strings.TrimSuffix(string(data), "\n"), ":")
	if len(f) != 5 || f[3] != SuperUser || len(f[4]) != 32 {
		return "", untrusted(path, "is not a password file abtest wrote")
	}
	if _, err := hex.DecodeString(f[4]); err != nil {
		return "", untrusted(path, "is not a password file abtest wrote")
	}
	return f[4], nil
}

// initdbAuth writes a new password into a private file for initdb
// (initdbPassDir) and returns initdb's authentication options, the
// password, and what removes the file.
func (m *Manager) initdbAuth(name string) (args []string, password string, done func(), err error) {
	dir := initdbPassDir(m.Root, name)
	if err := m.Run.RemoveAll(dir); err != nil {
		return nil, "", nil, err
	}
	if password, err = newPassword(); err != nil {
		return nil, "", nil, err
	}
	done = func() {
		// A dry run has made nothing that RemoveAll would print.
		m.Run.Note("rm -rf %s (initdb's password file)", dir)
		_ = m.Run.RemoveAll(dir)
	}
	if err := m.privateDir(dir); err != nil {
		done()
		return nil, "", nil, err
	}
	pwfile := filepath.Join(dir, "pwfile")
	if err := m.writeOwned(pwfile, []byte(password+"\n"), 0o600); err != nil {
		done()
		return nil, "", nil, err
	}
	return []string{"--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + pwfile}, password, done, nil
}

// syncPassFile rewrites data directory dir's PassFile for port when the
// port (or the file's mode) changed, and returns its path; "" when the
// cluster has none (made by an older abtest: its password, if any, is
// the user's own). A file abtest did not write is ErrUntrusted (exit 2).
func (m *Manager) syncPassFile(dir string, port int) (string, error) {
	path := filepath.Join(dir, PassFile)
	data, err := m.readTrusted(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if errors.Is(err, ErrUntrusted) {
		return "", err
	}
	if err != nil {
		return "", exitcode.Failure(err)
	}
	password, err := parsePassFile(path, data)
	if err != nil {
		return "", err
	}
	want := passLine(port, password)
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 || string(data) != want {
		if err := m.writeOwned(path, []byte(want), 0o600); err != nil {
			return "", exitcode.Failure(err)
		}
	}
	return path, nil
}

// checkHostAuth refuses to have cluster name (data directory dir) listen
// on TCP while its pg_hba.conf trusts a TCP connection: what initdb -A
// trust, as older abtests ran it, wrote. Such a cluster is made anew
// (--recreate-cluster) rather than its pg_hba.conf edited behind its
// owner's back. An include directive is refused too: abtest would have
// to follow it to know. Nothing is changed: a server running as it was
// is left so.
func (m *Manager) checkHostAuth(name, dir, listen string) error {
	if listen == "" {
		return nil
	}
	path := filepath.Join(dir, "pg_hba.conf")
	data, err := m.readTrusted(path)
	if errors.Is(err, os.ErrNotExist) && m.Run.DryRun {
		return nil
	}
	if err != nil {
		return exitcode.Failure(fmt.Errorf("cluster %s: %w", name, err))
	}
	n, line := hostTrust(string(data))
	if n == 0 {
		return nil
	}
	return exitcode.BadInputf("%w: cluster %s: %s line %d (%s) lets any local user connect as superuser once it listens on %s; recreate the cluster (abtest switch %s --recreate-cluster: its data is lost) or start it without --listen",
		ErrHostTrust, name, path, n, line, listen, name)
}

// hostTrust returns the number and text of the first line of a
// pg_hba.conf that trusts TCP connections (a host* record whose method
// is trust) or includes another file; 0 when there is none. Records may
// continue on the next line after a backslash (PostgreSQL 16).
func hostTrust(hba string) (int, string) {
	lines := strings.Split(hba, "\n")
	for i := 0; i < len(lines); i++ {
		n, rec := i+1, lines[i]
		for strings.HasSuffix(rec, `\`) && i+1 < len(lines) {
			i++
			rec = strings.TrimSuffix(rec, `\`) + " " + lines[i]
		}
		f := hbaFields(rec)
		if len(f) == 0 {
			continue
		}
		typ := strings.ToLower(f[0])
		if strings.HasPrefix(typ, "include") {
			return n, strings.TrimSpace(rec)
		}
		if !strings.HasPrefix(typ, "host") || len(f) < 5 {
			continue
		}
		method := 4
		if !strings.Contains(f[3], "/") && net.ParseIP(f[3]) != nil {
			method = 5 // address, then a separate mask
		}
		if method < len(f) && strings.EqualFold(f[method], "trust") {
			return n, strings.Join(strings.Fields(rec), " ")
		}
	}
	return 0, ""
}

// hbaFields splits a pg_hba.conf record into its fields: blank-separated,
// double quotes keeping blanks and # inside, # starting a comment
// outside them. Quotes are removed.
func hbaFields(rec string) []string {
	var out []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range rec {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case quoted:
			cur.WriteRune(r)
		case r == '#':
			if in {
				out = append(out, cur.String())
			}
			return out
		case r == ' ' || r == '\t' || r == '\r':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
