//go:build cudaemu

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/kernels/emu"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestRunCUDAEmu runs `kvlab run --device cuda` end to end on the CPU emulator of the driver
// and NVRTC (kernels/emu) and requires the CPU's greedy text, 64 tokens of kvlab-tiny-64 with
// f16 and q8_0/q4_0 KV. The driver is loaded once per process, so run it alone:
//
//	go test -tags cudaemu -run RunCUDAEmu -v ./cmd/kvlab/
func TestRunCUDAEmu(t *testing.T) {
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
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
	for _, kv := range []string{"f16", "q8_0/q4_0"} {
		t.Run(strings.ReplaceAll(kv, "/", "-"), func(t *testing.T) {
			// The device stores every pair unrotated: the CPU runs that variant to compare.
			pair, err := kvq.ParsePair(kv)
			if err != nil {
				t.Fatal(err)
			}
			stored := pair.Unrotated().String()
			args := func(kv, device string) []string {
				return []string{"run", "--model", path, "--temp", "0", "--n", "64", "--kv", kv, "--device", device}
			}
			cpuOut, _, err := execute(t, args(stored, "cpu")...)
			if err != nil {
				t.Fatal(err)
			}
			gpuOut, gpuErr, err := execute(t, args(kv, "cuda")...)
			if err != nil {
				t.Fatal(err)
			}
			if gpuOut != cpuOut {
				t.Fatalf("--device cuda printed\n%q\nthe CPU\n%q", gpuOut, cpuOut)
			}
			for _, want := range []string{"cuda: kvlab CPU emulator", "weights 3.5 MiB: f32 ×30", "decode: 64 tokens", "KV cache: " + stored} {
				if !strings.Contains(gpuErr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, gpuErr)
				}
			}
			t.Logf("%s: %q", kv, gpuOut)
		})
	}
}
