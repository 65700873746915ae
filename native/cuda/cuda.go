// Package cuda is kvlab's CUDA binding without cgo: the driver API and NVRTC are loaded at
// run time with purego, so a CGO_ENABLED=0 binary runs on any Linux machine and uses a GPU
// when one is there.
//
// The binding has three layers (../../../shared/STYLE.md rule 4):
//
//   - raw symbols (package internal/cu): one func field per C function, bound by its exact
//     versioned name; tests replace the whole table with fakes (package internal/fakecu);
//   - errors (errors.go): every CUresult becomes an *Error carrying the driver's own name and
//     description, matching sentinels (ErrOutOfMemory, ErrNoCUDA, …) with errors.Is;
//   - the typed API (this package): Context, Buffer, Stream, Event, Module, Function, Launch
//     and the NVRTC Compiler. Only this layer is imported outside native/cuda.
//
// Threads: a Context is the device's primary context, current on exactly one OS thread that
// one executor goroutine owns (runtime.LockOSThread); every driver call of the Context and of
// the objects made from it runs there, so all of them are safe for concurrent use. Kernel
// arguments are copied into memory pinned with runtime.Pinner until cuLaunchKernel returns.
//
// On platforms other than Linux, and on Linux without libcuda.so.1, Open returns an error
// matching ErrNoCUDA whose message starts "no CUDA driver found: ".
package cuda

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kvlab/kvlab/native/cuda/internal/cu"
)

// unavailable is the error for "CUDA cannot be used here": a one-line message and the
// underlying cause. It matches ErrNoCUDA and whatever the cause matches.
type unavailable struct {
	msg string
	err error
}

func (u *unavailable) Error() string        { return u.msg }
func (u *unavailable) Unwrap() error        { return u.err }
func (u *unavailable) Is(target error) bool { return target == ErrNoCUDA }

var (
	loadOnce sync.Once
	loaded   *cu.Driver
	loadErr  error
)

// driver loads and initializes the system's driver once per process.
func driver() (*cu.Driver, error) {
	loadOnce.Do(func() {
		d, err := cu.Load()
		if err != nil {
			loadErr = &unavailable{msg: "no CUDA driver found: " + trimUnavailable(err), err: err}
			return
		}
		if err := initDriver(d); err != nil {
			loadErr = err
			return
		}
		loaded = d
	})
	return loaded, loadErr
}

func trimUnavailable(err error) string {
	s := err.Error()
	p := cu.ErrUnavailable.Error() + ": "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// initDriver calls cuInit(0); no device or an unusable driver becomes an ErrNoCUDA error.
func initDriver(d *cu.Driver) error {
	err := describer{d}.check("cuInit", d.Init(0))
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNoCUDA) {
		return &unavailable{msg: "no CUDA device found: " + err.Error(), err: err}
	}
	return err
}

// DeviceInfo describes one device: what the planner, the bench and the gate print.
type DeviceInfo struct {
	Ordinal           int    `json:"ordinal"`
	Name              string `json:"name"`
	Major             int    `json:"cc_major"` // compute capability
	Minor             int    `json:"cc_minor"`
	TotalBytes        uint64 `json:"total_bytes"`
	SMs               int    `json:"sms"`
	MaxThreadsPerSM   int    `json:"max_threads_per_sm"`
	MaxSharedPerBlock int    `json:"max_shared_per_block"` // bytes, with the opt-in limit
	MaxSharedPerSM    int    `json:"max_shared_per_sm"`    // bytes
	L2Bytes           int    `json:"l2_bytes"`
	MemClockKHz       int    `json:"mem_clock_khz"`
	BusWidthBits      int    `json:"bus_width_bits"`
	DriverVersion     int    `json:"driver_version"` // e.g. 12040 for 12.4
}

// Arch is the NVRTC architecture for the device's exact compute capability, e.g. "sm_90".
func (d DeviceInfo) Arch() string { return fmt.Sprintf("sm_%d%d", d.Major, d.Minor) }

// PeakBandwidth is the memory bandwidth the data sheet implies, in bytes per second:
// 2 transfers per memory clock × the bus width. The driver's memory clock is not always the
// marketing one, so kvlab measures bandwidth instead of trusting this.
func (d DeviceInfo) PeakBandwidth() float64 {
	return 2 * float64(d.MemClockKHz) * 1e3 * float64(d.BusWidthBits) / 8
}

// Devices lists the CUDA devices without creating contexts. Without a usable driver it
// returns an error matching ErrNoCUDA.
func Devices() ([]DeviceInfo, error) {
	d, err := driver()
	if err != nil {
		return nil, err
	}
	return listDevices(d)
}

func listDevices(d *cu.Driver) ([]DeviceInfo, error) {
	x := describer{d}
	var n int32
	if err := x.check("cuDeviceGetCount", d.DeviceGetCount(&n)); err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, 0, n)
	for i := 0; i < int(n); i++ {
		info, _, err := deviceInfo(d, i)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// deviceInfo reads the attributes of device ordinal.
func deviceInfo(d *cu.Driver, ordinal int) (DeviceInfo, cu.Device, error) {
	x := describer{d}
	var dev cu.Device
	if err := x.check("cuDeviceGet", d.DeviceGet(&dev, int32(ordinal))); err != nil {
		return DeviceInfo{}, 0, err
	}
	info := DeviceInfo{Ordinal: ordinal}
	name := make([]byte, 256)
	if err := x.check("cuDeviceGetName", d.DeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return DeviceInfo{}, 0, err
	}
	info.Name = cu.GoString(&name[0])
	if err := x.check("cuDeviceTotalMem_v2", d.DeviceTotalMem(&info.TotalBytes, dev)); err != nil {
		return DeviceInfo{}, 0, err
	}
	attrs := []struct {
		a   cu.Attribute
		dst *int
	}{
		{cu.AttrComputeCapabilityMajor, &info.Major},
		{cu.AttrComputeCapabilityMinor, &info.Minor},
		{cu.AttrMultiprocessorCount, &info.SMs},
		{cu.AttrMaxThreadsPerSM, &info.MaxThreadsPerSM},
		{cu.AttrMaxSharedPerBlockOptin, &info.MaxSharedPerBlock},
		{cu.AttrMaxSharedPerSM, &info.MaxSharedPerSM},
		{cu.AttrL2CacheSize, &info.L2Bytes},
		{cu.AttrMemoryClockRate, &info.MemClockKHz},
		{cu.AttrGlobalMemoryBusWidth, &info.BusWidthBits},
	}
	for _, at := range attrs {
		var v int32
		if err := x.check("cuDeviceGetAttribute", d.DeviceGetAttr(&v, at.a, dev)); err != nil {
			return DeviceInfo{}, 0, err
		}
		*at.dst = int(v)
	}
	var ver int32
	if d.DriverGetVersion(&ver) == cu.Success {
		info.DriverVersion = int(ver)
	}
	return info, dev, nil
}
