//go:build nvml && cgo && linux

package gpuinfo

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlDevices asks NVML through go-nvml (which dlopens libnvidia-ml.so.1 at Init).
func nvmlDevices() ([]Device, error) { return collect(goNVML{}, "nvml") }

type goNVML struct{}

func ret(r nvml.Return) error {
	if r == nvml.SUCCESS {
		return nil
	}
	return errors.New(nvml.ErrorString(r))
}

func (goNVML) Init() (err error) {
	defer func() {
		if r := recover(); r != nil { // go-nvml panics when the library cannot be loaded
			err = fmt.Errorf("%v", r)
		}
	}()
	return ret(nvml.Init())
}

func (goNVML) Shutdown() { nvml.Shutdown() }

func (goNVML) Count() (int, error) {
	n, r := nvml.DeviceGetCount()
	return n, ret(r)
}

func (goNVML) DriverVersion() (string, error) {
	v, r := nvml.SystemGetDriverVersion()
	return v, ret(r)
}

func (goNVML) Device(i int) (Device, error) {
	h, r := nvml.DeviceGetHandleByIndex(i)
	if err := ret(r); err != nil {
		return Device{}, err
	}
	d := Device{UtilGPU: -1, UtilMemory: -1}
	if d.Name, r = h.GetName(); r != nvml.SUCCESS {
		return Device{}, ret(r)
	}
	mem, r := h.GetMemoryInfo()
	if err := ret(r); err != nil {
		return Device{}, err
	}
	d.TotalBytes, d.FreeBytes = mem.Total, mem.Free
	d.UUID, _ = h.GetUUID()
	if u, r := h.GetUtilizationRates(); r == nvml.SUCCESS {
		d.UtilGPU, d.UtilMemory = int(u.Gpu), int(u.Memory)
	}
	if maj, mnr, r := h.GetCudaComputeCapability(); r == nvml.SUCCESS {
		d.Compute = fmt.Sprintf("%d.%d", maj, mnr)
	}
	return d, nil
}
