//go:build !linux

package cu

import (
	"fmt"
	"runtime"
)

// Load reports ErrUnavailable: the CUDA binding is built for Linux only.
func Load() (*Driver, error) {
	return nil, fmt.Errorf("%w: the CUDA binding is not built for %s", ErrUnavailable, runtime.GOOS)
}

// LoadNVRTC reports ErrUnavailable: the CUDA binding is built for Linux only.
func LoadNVRTC() (*NVRTC, string, error) {
	return nil, "", fmt.Errorf("%w: the CUDA binding is not built for %s", ErrUnavailable, runtime.GOOS)
}
