package gguf

import (
	"fmt"
	"io"
	"math"
)

// readData reads bytes [off, size) of r into a new slice; the release function is nil.
func readData(r io.ReaderAt, off, size int64) ([]byte, func() error, error) {
	n := size - off
	if n < 0 || n > math.MaxInt {
		return nil, nil, fmt.Errorf("%d bytes of tensor data do not fit in memory on this platform", n)
	}
	b := make([]byte, n)
	got, err := r.ReadAt(b, off)
	if got < len(b) {
		if err == nil || err == io.EOF {
			return nil, nil, fmt.Errorf("read %d of %d bytes at offset %d: %w", got, n, off, ErrTruncated)
		}
		return nil, nil, err
	}
	return b, nil, nil
}
