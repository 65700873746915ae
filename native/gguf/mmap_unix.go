//go:build linux || darwin

package gguf

import (
	"math"
	"os"
	"syscall"
)

// mapData maps the file read-only and returns its bytes [off, size) and a function that unmaps
// them. When the file cannot be mapped (a file system without mmap, a 32-bit address space too
// small for the file) it falls back to reading the bytes into memory.
func mapData(fd *os.File, off, size int64) ([]byte, func() error, error) {
	if size > math.MaxInt {
		return readData(fd, off, size)
	}
	m, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return readData(fd, off, size)
	}
	adviseHuge(m)
	return m[off:], func() error { return syscall.Munmap(m) }, nil
}
