//go:build cudaemu

package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/kernels/emu"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/engine"
)

// useEmulator points the CUDA backend at the project's CPU emulator of the driver and NVRTC
// (kernels/emu, built into $KVLAB_EMU_DIR or a temporary folder) and checks that a device
// opens. The driver is loaded once per process: a test that finds it loaded and failed by an
// earlier one skips, asking to be run alone.
func useEmulator(t *testing.T) {
	t.Helper()
	dir := os.Getenv("KVLAB_EMU_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kvlab-emu-test")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lib, err := emu.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KVLAB_CUDA_DRIVER", lib)
	t.Setenv("KVLAB_NVRTC", lib)
	t.Setenv(cuda.CacheEnv, filepath.Join(dir, "cache"))
	e, err := engine.Open(0)
	if errors.Is(err, cuda.ErrNoCUDA) {
		t.Skipf("the driver was loaded (and failed) earlier in this process; run this test alone: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// useSpillEmulator is useEmulator with the host-spill tail in chunks of 32 cells (spillChunk)
// for the test, so that a short run moves chunks to host memory; it returns kvlab-tiny-64's
// path.
func useSpillEmulator(t *testing.T) string {
	t.Helper()
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	useEmulator(t)
	old := spillChunk
	spillChunk = 32
	t.Cleanup(func() { spillChunk = old })
	return path
}
