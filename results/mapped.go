package results

import (
	"os"
	"syscall"
)

// readMapped returns the contents of the file at path mapped read-only
// into memory, and the function that unmaps them (after which nothing
// may point into them); a file that cannot be mapped (empty, or a pipe)
// is read as os.ReadFile reads it. A plan of 10⁵ cells is 18 MB: read
// into the heap, it was that much garbage once decoded, and live in a
// collection while it decoded (whose goal it raised by twice that).
//
// The mapping is private and read-only; the file must not shrink while
// mapped (SIGBUS): abtest writes plans whole and renames them into
// place (WriteJSON), so the file mapped is never changed.
func readMapped(path string) (data []byte, unmap func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	none := func() {}
	st, err := f.Stat()
	if err == nil && st.Mode().IsRegular() && st.Size() > 0 && int64(int(st.Size())) == st.Size() {
		data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
		if err == nil {
			return data, func() { _ = syscall.Munmap(data) }, nil
		}
	}
	data, err = os.ReadFile(path)
	return data, none, err
}
