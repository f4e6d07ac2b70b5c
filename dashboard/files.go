package dashboard

// The results directories under serve: a served site cannot link a
// file beside it with ../../.. (a server has no parent of its root), so
// Serve serves each run's shard directories beneath the site, at
// files/RUN/SHARD/PATH, read-only, and a site written to be served links
// them there.

import (
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pgabtest/abtest/store"
)

// FilesPrefix is where a served site has the runs' results directories.
const FilesPrefix = "files"

// FilesPolicy is the Content-Security-Policy of a file of a results
// directory: it is a document of no origin (sandbox), runs no script and
// loads nothing but its own styles and images. An .svg plot or a file a
// run left behind is then data, never a page of the dashboard's origin.
const FilesPolicy = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox; frame-ancestors 'none'"

// runDirs are the results directories a served site links, by run and
// shard segment (shardSegment).
type runDirs map[string]map[string]string

// shardSegment is a shard's name in a URL path: its "I/N" as "I-of-N",
// any other character outside [A-Za-z0-9._=-] as "_".
func shardSegment(shard string) string {
	return unsafe.ReplaceAllString(strings.ReplaceAll(shard, "/", "-of-"), "_")
}

// addRun records r's shard directories.
func (rd runDirs) addRun(r *store.Run) {
	m := map[string]string{}
	for _, sh := range r.Shards {
		m[shardSegment(sh.Shard)] = sh.Dir
	}
	rd[r.ID] = m
}

// servedPath is the site path (relative, slash-separated) a served site
// links the file at p of run by, or "" when p lies in none of its shard
// directories (it is then named, not served).
func servedPath(r *store.Run, p string) string {
	for _, sh := range r.Shards {
		rel, err := filepath.Rel(sh.Dir, p)
		if err != nil || rel == "." || !filepath.IsLocal(rel) {
			continue
		}
		return path.Join(FilesPrefix, r.ID, shardSegment(sh.Shard), filepath.ToSlash(rel))
	}
	return ""
}

// textTypes are the extensions a results directory's text has: served
// as plain text whatever else a host's MIME table says (a .md is not
// rendered, a .html a run left is not a page).
var textTypes = map[string]bool{".md": true, ".log": true, ".txt": true, ".jsonl": true, ".sql": true, ".conf": true,
	".csv": true, ".html": true, ".htm": true, ".sh": true, ".out": true, ".err": true, ".tsv": true}

// fileType is the Content-Type a file of a results directory is served
// as, by its extension alone: text, JSON, an image, or bytes to save.
func fileType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	switch {
	case textTypes[ext] || ext == "":
		return "text/plain; charset=utf-8"
	case ext == ".json":
		return "application/json"
	case ext == ".svg" || ext == ".png":
		return mime.TypeByExtension(ext)
	}
	return "application/octet-stream"
}

// ServeHTTP serves GET and HEAD of files/RUN/SHARD/PATH: a regular file
// beneath that shard's directory, opened through an os.Root of it (a
// link that leaves it, or a path with "..", is refused), never a
// directory (no listing) nor a symbolic link.
func (rd runDirs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Security-Policy", FilesPolicy)
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"+FilesPrefix+"/"), "/", 3)
	if len(parts) != 3 || !fs.ValidPath(parts[2]) || strings.Contains(parts[2], `\`) {
		http.NotFound(w, r)
		return
	}
	dir, ok := rd[parts[0]][parts[1]]
	if !ok {
		http.NotFound(w, r)
		return
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer root.Close()
	name := filepath.FromSlash(parts[2])
	if fi, err := root.Lstat(name); err != nil || !fi.Mode().IsRegular() {
		refuse(w, r, err)
		return
	}
	// O_NONBLOCK: a FIFO put there after the Lstat does not hang the
	// server; the Stat below refuses it.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		refuse(w, r, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		refuse(w, r, err)
		return
	}
	w.Header().Set("Content-Type", fileType(name))
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// refuse answers a path that is not a regular file: 404 when nothing is
// there, 403 for a directory, a link or a path that leaves the root.
func refuse(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		http.NotFound(w, r)
		return
	}
	http.Error(w, "forbidden: only the regular files of a run's results directory are served", http.StatusForbidden)
}

// siteHandler serves the site in dir and, beneath FilesPrefix, the runs'
// results directories.
func siteHandler(dir string, files runDirs) http.Handler {
	site := http.FileServer(http.Dir(dir))
	return secured(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if files != nil && (r.URL.Path == "/"+FilesPrefix || strings.HasPrefix(r.URL.Path, "/"+FilesPrefix+"/")) {
			files.ServeHTTP(w, r)
			return
		}
		site.ServeHTTP(w, r)
	}))
}
