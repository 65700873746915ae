//go:build linux && !(nvml && cgo)

package gpuinfo

import (
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
)

// nvmlDevices asks NVML loaded with purego from libnvidia-ml.so.1.
func nvmlDevices() ([]Device, error) {
	lib, err := loadNVML()
	if err != nil {
		return nil, err
	}
	return collect(lib, "nvml-purego")
}

// pureNVML is the raw NVML table (nvml.h): nvmlReturn_t results, nvmlDevice_t handles.
type pureNVML struct {
	init          func() int32
	shutdown      func() int32
	count         func(n *uint32) int32
	handle        func(i uint32, h *uintptr) int32
	name          func(h uintptr, buf *byte, n uint32) int32
	uuid          func(h uintptr, buf *byte, n uint32) int32
	memory        func(h uintptr, m *nvmlMemory) int32
	utilization   func(h uintptr, u *nvmlUtilization) int32
	compute       func(h uintptr, major, minor *int32) int32
	driverVersion func(buf *byte, n uint32) int32
	errorString   func(r int32) string
}

type nvmlMemory struct{ total, free, used uint64 }
type nvmlUtilization struct{ gpu, memory uint32 }

var (
	nvmlOnce sync.Once
	nvmlLoad *pureNVML
	nvmlErr  error
)

func loadNVML() (*pureNVML, error) {
	nvmlOnce.Do(func() {
		h, err := purego.Dlopen("libnvidia-ml.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			nvmlErr = fmt.Errorf("NVML: %v", err)
			return
		}
		l := &pureNVML{}
		for _, s := range []struct {
			fn   any
			name string
		}{
			{&l.init, "nvmlInit_v2"}, {&l.shutdown, "nvmlShutdown"}, {&l.count, "nvmlDeviceGetCount_v2"},
			{&l.handle, "nvmlDeviceGetHandleByIndex_v2"}, {&l.name, "nvmlDeviceGetName"}, {&l.uuid, "nvmlDeviceGetUUID"},
			{&l.memory, "nvmlDeviceGetMemoryInfo"}, {&l.utilization, "nvmlDeviceGetUtilizationRates"},
			{&l.compute, "nvmlDeviceGetCudaComputeCapability"}, {&l.driverVersion, "nvmlSystemGetDriverVersion"},
			{&l.errorString, "nvmlErrorString"},
		} {
			addr, err := purego.Dlsym(h, s.name)
			if err != nil || addr == 0 {
				nvmlErr = fmt.Errorf("NVML: missing symbol %s", s.name)
				return
			}
			purego.RegisterFunc(s.fn, addr)
		}
		nvmlLoad = l
	})
	return nvmlLoad, nvmlErr
}

func (l *pureNVML) check(r int32) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%s", l.errorString(r))
}

func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func (l *pureNVML) Init() error { return l.check(l.init()) }
func (l *pureNVML) Shutdown()   { l.shutdown() }

func (l *pureNVML) Count() (int, error) {
	var n uint32
	err := l.check(l.count(&n))
	return int(n), err
}

func (l *pureNVML) DriverVersion() (string, error) {
	b := make([]byte, 96)
	err := l.check(l.driverVersion(&b[0], uint32(len(b))))
	return cstr(b), err
}

func (l *pureNVML) Device(i int) (Device, error) {
	var h uintptr
	if err := l.check(l.handle(uint32(i), &h)); err != nil {
		return Device{}, err
	}
	d := Device{UtilGPU: -1, UtilMemory: -1}
	b := make([]byte, 96)
	if err := l.check(l.name(h, &b[0], uint32(len(b)))); err != nil {
		return Device{}, err
	}
	d.Name = cstr(b)
	var m nvmlMemory
	if err := l.check(l.memory(h, &m)); err != nil {
		return Device{}, err
	}
	d.TotalBytes, d.FreeBytes = m.total, m.free
	u := make([]byte, 96)
	if l.uuid(h, &u[0], uint32(len(u))) == 0 {
		d.UUID = cstr(u)
	}
	var ut nvmlUtilization
	if l.utilization(h, &ut) == 0 {
		d.UtilGPU, d.UtilMemory = int(ut.gpu), int(ut.memory)
	}
	var maj, mnr int32
	if l.compute(h, &maj, &mnr) == 0 {
		d.Compute = fmt.Sprintf("%d.%d", maj, mnr)
	}
	return d, nil
}
