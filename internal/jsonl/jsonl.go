// Package jsonl appends records to JSON-lines files durably: one line per
// record, fsynced before Append returns, so that a killed process loses at
// most the record it was writing (and a reader skips a torn last line).
package jsonl

import (
	"encoding/json"
	"os"
)

// Append writes v as one line at the end of path and syncs it.
func Append(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
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
