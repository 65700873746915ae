package history

import (
	"runtime"
	"slices"
	"testing"
)

// TestThisMachineKernelSwitches checks that a run made with the switches that turn CPU features
// off for the kernels says so: its features name them.
func TestThisMachineKernelSwitches(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the feature list is amd64's")
	}
	t.Setenv("KVLAB_NO_AVX512", "")
	t.Setenv("KVLAB_NO_AVXVNNI", "")
	if f := ThisMachine("test").Features; slices.Contains(f, "KVLAB_NO_AVX512") || slices.Contains(f, "KVLAB_NO_AVXVNNI") {
		t.Fatalf("features %v name a switch that is not set", f)
	}
	t.Setenv("KVLAB_NO_AVX512", "1")
	f := ThisMachine("test").Features
	if !slices.Contains(f, "KVLAB_NO_AVX512") || slices.Contains(f, "KVLAB_NO_AVXVNNI") {
		t.Fatalf("features %v: want KVLAB_NO_AVX512 alone of the switches", f)
	}
}
