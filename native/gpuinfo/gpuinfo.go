// Package gpuinfo discovers NVIDIA GPUs: name, memory (total and free) and utilization, for
// the planner's auto policy and the server's /system page.
//
// It asks NVML first: through NVML loaded with purego (libnvidia-ml.so.1) by default, or
// through go-nvml when built with `-tags nvml` and cgo on Linux (opt-in: go-nvml's C
// prolog needs a C toolchain and prints deprecation warnings). Where NVML is missing it falls back to the
// CUDA driver API (native/cuda), which knows names and memory but not utilization. With
// neither, Devices returns an error matching ErrNoGPU, whose message says "no NVIDIA GPU
// found" and why.
package gpuinfo

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvlab/kvlab/native/cuda"
)

// ErrNoGPU means no NVIDIA GPU can be seen from this process.
var ErrNoGPU = errors.New("no NVIDIA GPU found")

// Device is one GPU as the planner and /system see it.
type Device struct {
	Index      int    `json:"index"`
	Name       string `json:"name"`
	UUID       string `json:"uuid,omitempty"`
	TotalBytes uint64 `json:"total_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
	// UtilGPU and UtilMemory are the percent of time over the last sample period that a
	// kernel ran and that memory was read or written; −1 when the source cannot tell.
	UtilGPU    int    `json:"util_gpu"`
	UtilMemory int    `json:"util_memory"`
	Compute    string `json:"compute_capability,omitempty"` // "9.0"
	Driver     string `json:"driver,omitempty"`             // driver version
	// Source is what answered: "nvml" (go-nvml), "nvml-purego", or "cuda".
	Source string `json:"source"`
}

// Devices lists the GPUs. It never panics; without a GPU the error matches ErrNoGPU.
func Devices() ([]Device, error) {
	devs, nvmlErr := nvmlDevices()
	if nvmlErr == nil && len(devs) > 0 {
		return devs, nil
	}
	devs, cudaErr := cudaDevices()
	if cudaErr == nil && len(devs) > 0 {
		return devs, nil
	}
	var why []string
	for _, err := range []error{nvmlErr, cudaErr} {
		if err != nil {
			why = append(why, err.Error())
		}
	}
	if len(why) == 0 {
		why = append(why, "the drivers report 0 devices")
	}
	return nil, fmt.Errorf("%w (%s)", ErrNoGPU, strings.Join(why, "; "))
}

// nvmlLib is the part of NVML gpuinfo reads, so that the conversion is tested with fakes.
type nvmlLib interface {
	Init() error
	Shutdown()
	Count() (int, error)
	DriverVersion() (string, error)
	// Device returns what NVML knows of device i; util fields are −1 where unsupported.
	Device(i int) (Device, error)
}

// collect reads every device of lib; source names the binding.
func collect(lib nvmlLib, source string) ([]Device, error) {
	if err := lib.Init(); err != nil {
		return nil, fmt.Errorf("NVML: %w", err)
	}
	defer lib.Shutdown()
	n, err := lib.Count()
	if err != nil {
		return nil, fmt.Errorf("NVML: device count: %w", err)
	}
	drv, _ := lib.DriverVersion()
	out := make([]Device, 0, n)
	for i := 0; i < n; i++ {
		d, err := lib.Device(i)
		if err != nil {
			return nil, fmt.Errorf("NVML: device %d: %w", i, err)
		}
		d.Index, d.Driver, d.Source = i, drv, source
		out = append(out, d)
	}
	return out, nil
}

// cudaDevices is the driver-API fallback: names and memory, utilization unknown. Free memory
// needs a context, so each device's primary context is retained briefly.
func cudaDevices() ([]Device, error) {
	infos, err := cuda.Devices()
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, len(infos))
	for _, in := range infos {
		d := Device{Index: in.Ordinal, Name: in.Name, TotalBytes: in.TotalBytes, UtilGPU: -1, UtilMemory: -1,
			Compute: fmt.Sprintf("%d.%d", in.Major, in.Minor), Source: "cuda"}
		if in.DriverVersion > 0 {
			d.Driver = fmt.Sprintf("CUDA %d.%d", in.DriverVersion/1000, in.DriverVersion%1000/10)
		}
		if ctx, err := cuda.Open(in.Ordinal); err == nil {
			if free, _, err := ctx.MemInfo(); err == nil {
				d.FreeBytes = free
			}
			ctx.Close()
		}
		out = append(out, d)
	}
	return out, nil
}
