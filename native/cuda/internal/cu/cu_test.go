package cu

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// checkSymbols asserts that syms binds every func field of the struct *v exactly once.
func checkSymbols(t *testing.T, v any, syms []Symbol) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	bound := map[uintptr]string{}
	for _, s := range syms {
		p := reflect.ValueOf(s.Fn)
		if p.Kind() != reflect.Pointer || p.Elem().Kind() != reflect.Func {
			t.Fatalf("%v: Fn is %T, want a pointer to a func field", s.Names, s.Fn)
		}
		if prev, dup := bound[p.Pointer()]; dup {
			t.Errorf("%v binds the same field as %s", s.Names, prev)
		}
		bound[p.Pointer()] = s.Names[0]
	}
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		if f.Kind() != reflect.Func {
			continue
		}
		if _, ok := bound[f.Addr().Pointer()]; !ok {
			t.Errorf("field %s has no symbol", rv.Type().Field(i).Name)
		}
	}
	if len(bound) != len(syms) {
		t.Errorf("%d symbols for %d distinct fields", len(syms), len(bound))
	}
}

func TestDriverSymbolsBindEveryFieldOnce(t *testing.T) {
	d := &Driver{}
	syms := d.Symbols()
	checkSymbols(t, d, syms)
	var names []string
	for _, s := range syms {
		names = append(names, s.Names[0])
	}
	// The versioned names: the unversioned ones are the CUDA 3.x ABI with 32-bit sizes.
	for _, want := range []string{"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
		"cuMemcpyDtoD_v2", "cuMemcpyDtoDAsync_v2", "cuMemsetD8_v2", "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2",
		"cuMemGetInfo_v2", "cuDeviceTotalMem_v2", "cuDevicePrimaryCtxRelease_v2", "cuStreamDestroy_v2",
		"cuEventDestroy_v2", "cuDevicePrimaryCtxRetain", "cuModuleLoadData", "cuModuleGetFunction",
		"cuLaunchKernel", "cuStreamCreate", "cuEventCreate", "cuEventRecord", "cuEventElapsedTime_v2",
		"cuDeviceGetAttribute", "cuDeviceGetName", "cuGetErrorString", "cuGetErrorName"} {
		if !slices.Contains(names, want) {
			t.Errorf("no symbol %s", want)
		}
	}
	for _, n := range names {
		for _, legacy := range []string{"cuMemAlloc", "cuMemFree", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemGetInfo", "cuCtxPushCurrent"} {
			if n == legacy {
				t.Errorf("binds the unversioned legacy symbol %s", n)
			}
		}
	}
}

func TestNVRTCSymbolsBindEveryFieldOnce(t *testing.T) {
	n := &NVRTC{}
	checkSymbols(t, n, n.Symbols())
}

func TestNVRTCCandidates(t *testing.T) {
	t.Setenv(NVRTCEnv, "")
	t.Setenv("CUDA_HOME", "/opt/cuda-x")
	c := NVRTCCandidates()
	if c[0] != "libnvrtc.so.13" || c[1] != "libnvrtc.so.12" {
		t.Errorf("first candidates %v, want the .13 then .12 sonames", c[:2])
	}
	if !slices.Contains(c, "/opt/cuda-x/lib64/libnvrtc.so.12") {
		t.Errorf("candidates %v lack $CUDA_HOME/lib64", c)
	}
	t.Setenv(NVRTCEnv, "/x/libnvrtc.so.12.4")
	if c := NVRTCCandidates(); len(c) != 1 || c[0] != "/x/libnvrtc.so.12.4" {
		t.Errorf("with %s set: %v", NVRTCEnv, c)
	}
}

func TestLoadWithoutLibraryFails(t *testing.T) {
	t.Setenv(DriverEnv, "/nonexistent/libcuda.so.1")
	_, err := Load()
	if err == nil {
		t.Fatal("Load of a missing library succeeded")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}

func TestGoString(t *testing.T) {
	b := CString("héllo")
	if got := GoString(&b[0]); got != "héllo" {
		t.Errorf("GoString = %q", got)
	}
	if GoString(nil) != "" {
		t.Error("GoString(nil) not empty")
	}
}
