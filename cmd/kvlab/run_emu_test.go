//go:build cudaemu

package main

import (
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestRunCUDAEmu runs `kvlab run --device cuda` end to end on the CPU emulator of the driver
// and NVRTC (kernels/emu) and requires the CPU's greedy text, 64 tokens of kvlab-tiny-64 with
// f16 and q8_0/q4_0 KV. The driver is loaded once per process, so run it alone:
//
//	go test -tags cudaemu -run RunCUDAEmu -v ./cmd/kvlab/
func TestRunCUDAEmu(t *testing.T) {
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	useEmulator(t)
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
