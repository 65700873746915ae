//go:build cudaemu

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/kernels/emu"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/engine"
)

// TestBenchSpillEmu runs `kvlab bench spill` on kvlab-tiny-64 on the CPU emulator (two
// contexts, tails of 0 and 128 cells) and feeds its JSON to `kvlab plan --fit`. The times are
// the emulator's and mean nothing; the test checks the sweep's bookkeeping and the round trip.
//
//	go test -tags cudaemu -run BenchSpillEmu -v ./cmd/kvlab/
func TestBenchSpillEmu(t *testing.T) {
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
	out, _, err := execute(t, "bench", "spill", "--model", path, "--ctx", "256,512", "--spill", "0,128", "--chunk", "64",
		"--tokens", "2", "--rounds", "2", "--json", "--check")
	if err != nil {
		t.Fatal(err)
	}
	var rep benchSpillReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Emulated || rep.Kind != benchSpillKind || len(rep.Points) != 4 || rep.Layers != 4 {
		t.Fatalf("report %+v", rep)
	}
	for _, p := range rep.Points {
		if p.HostCells != p.SpilledCells || p.ResidentCells != p.Ctx-p.HostCells || !(p.TPS > 0) {
			t.Errorf("point %+v", p)
		}
		if want := int64(p.HostCells) * 4 * 1 * 64 * 2 * 2; p.TailBytes != want {
			t.Errorf("point %+v: %d tail bytes, want %d", p, p.TailBytes, want)
		}
		if p.HostCells > 0 && (p.ArgmaxAgrees == nil || !*p.ArgmaxAgrees || p.LogitsRelRMS > 1e-5) {
			t.Errorf("point %+v: logits differ from the all-resident point's", p)
		}
	}
	doc := filepath.Join(t.TempDir(), "spill.json")
	if err := os.WriteFile(doc, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, _, err := execute(t, "plan", "--fit", doc, "--gpu", "h200")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Spill model fitted to", "kvlab-tiny-64.gguf", "CPU emulator", "before:", "after:"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan --fit lacks %q:\n%s", want, plan)
		}
	}
	t.Logf("%s", plan[strings.Index(plan, "Spill model fitted"):])
}
