//go:build cudaemu

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
)

// TestBenchSpillEmu runs `kvlab bench spill` on kvlab-tiny-64 on the CPU emulator (two
// contexts, tails of 0 and 128 cells) and feeds its JSON to `kvlab plan --fit`. The times are
// the emulator's and mean nothing; the test checks the sweep's bookkeeping and the round trip.
//
//	go test -tags cudaemu -run BenchSpillEmu -v ./cmd/kvlab/
func TestBenchSpillEmu(t *testing.T) {
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	useEmulator(t)
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
