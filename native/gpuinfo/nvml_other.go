//go:build !linux

package gpuinfo

import (
	"fmt"
	"runtime"
)

// nvmlDevices reports that NVML is probed on Linux only.
func nvmlDevices() ([]Device, error) {
	return nil, fmt.Errorf("NVML is only probed on Linux, not %s", runtime.GOOS)
}
