//go:build !linux && !darwin

package gguf

import "os"

// mapData reads the file's bytes [off, size) into memory: this platform has no mmap binding in
// this package (js/wasm, windows, the BSDs, …).
func mapData(fd *os.File, off, size int64) ([]byte, func() error, error) {
	return readData(fd, off, size)
}
