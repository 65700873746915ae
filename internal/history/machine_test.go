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
	switches := []string{"KVLAB_NO_AVX512", "KVLAB_NO_AVX512VNNI", "KVLAB_NO_AVX512VBMI", "KVLAB_NO_AVXVNNI"}
	for _, env := range switches {
		t.Setenv(env, "")
	}
	for _, env := range switches {
		if f := ThisMachine("test").Features; slices.Contains(f, env) {
			t.Fatalf("features %v name %s, which is not set", f, env)
		}
	}
	for _, on := range switches {
		t.Setenv(on, "1")
		f := ThisMachine("test").Features
		for _, env := range switches {
			if slices.Contains(f, env) != (env == on) {
				t.Fatalf("features %v: want %s alone of the switches", f, on)
			}
		}
		t.Setenv(on, "")
	}
}
