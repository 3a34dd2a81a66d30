//go:build unix

package journal

import (
	"os"
	"syscall"
)

// mapFile maps the first n bytes of f shared, for reading and writing:
// what is copied into the mapping is in the file's pages in the page
// cache.
func mapFile(f *os.File, n int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

func unmapFile(m []byte) error { return syscall.Munmap(m) }
