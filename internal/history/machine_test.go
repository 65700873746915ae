package history

import (
	"runtime"
	"slices"
	"testing"

	"github.com/kvlab/kvlab/internal/isa"
)

// TestThisMachineKernelSwitches checks that a run made with the switches that turn CPU features
// off for the kernels says so: its features name them.
func TestThisMachineKernelSwitches(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the feature list is amd64's")
	}
	switches := isa.Switches
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
