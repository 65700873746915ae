package gpuinfo

import (
	"errors"
	"strings"
	"testing"
)

type fakeNVML struct {
	initErr error
	devs    []Device
	failAt  int
	shut    bool
}

func (f *fakeNVML) Init() error                    { return f.initErr }
func (f *fakeNVML) Shutdown()                      { f.shut = true }
func (f *fakeNVML) Count() (int, error)            { return len(f.devs), nil }
func (f *fakeNVML) DriverVersion() (string, error) { return "560.35.03", nil }
func (f *fakeNVML) Device(i int) (Device, error) {
	if i == f.failAt {
		return Device{}, errors.New("GPU is lost")
	}
	return f.devs[i], nil
}

func TestCollect(t *testing.T) {
	f := &fakeNVML{failAt: -1, devs: []Device{
		{Name: "NVIDIA H200", TotalBytes: 150 << 30, FreeBytes: 140 << 30, UtilGPU: 3, UtilMemory: 1, Compute: "9.0"},
		{Name: "NVIDIA H200", TotalBytes: 150 << 30, FreeBytes: 150 << 30, UtilGPU: -1, UtilMemory: -1},
	}}
	devs, err := collect(f, "nvml")
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || devs[1].Index != 1 || devs[0].Driver != "560.35.03" || devs[0].Source != "nvml" || devs[1].UtilGPU != -1 || !f.shut {
		t.Errorf("%+v", devs)
	}
	f.failAt = 1
	if _, err := collect(f, "nvml"); err == nil || !strings.Contains(err.Error(), "device 1: GPU is lost") {
		t.Errorf("failing device: %v", err)
	}
	if _, err := collect(&fakeNVML{initErr: errors.New("Driver Not Loaded")}, "nvml"); err == nil || !strings.Contains(err.Error(), "Driver Not Loaded") {
		t.Errorf("init failure: %v", err)
	}
}

// TestDevicesWithoutGPU runs the real probes: on a machine without an NVIDIA driver (CI) the
// answer is a clear ErrNoGPU in one line, never a panic.
func TestDevicesWithoutGPU(t *testing.T) {
	devs, err := Devices()
	if err == nil {
		t.Skipf("a GPU is present: %+v", devs)
	}
	if !errors.Is(err, ErrNoGPU) || !strings.HasPrefix(err.Error(), "no NVIDIA GPU found") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Devices without a GPU: %q", err)
	}
}
