// Package jsonl appends records to JSON-lines files durably: one line per
// record, fsynced before Append returns, so that a killed process loses at
// most the record it was writing (and a reader skips a torn last line).
package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"

	"github.com/pgabtest/abtest/internal/safefile"
)

// Append writes v as one line at the end of path and syncs it. It never
// follows a link at path, and appends only to a regular file of the
// effective user's (safefile.OpenFile): in a directory others can write
// to, a planted link would have it append to any file the user can write.
func Append(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := safefile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Repair truncates path after its last newline when the file does not
// end in one (a torn last record), and returns how many bytes it removed.
// A missing file is whole.
func Repair(path string) (int64, error) {
	f, err := safefile.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, err
	}
	size := st.Size()
	// Read backwards in blocks to the last newline.
	buf := make([]byte, 64*1024)
	end := size
	for end > 0 {
		start := max(end-int64(len(buf)), 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, err
		}
		if end == size && b[len(b)-1] == '\n' {
			return 0, nil
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			keep := start + int64(i) + 1
			if err := f.Truncate(keep); err != nil {
				return 0, err
			}
			return size - keep, f.Sync()
		}
		end = start
	}
	if err := f.Truncate(0); err != nil {
		return 0, err
	}
	return size, f.Sync()
}
