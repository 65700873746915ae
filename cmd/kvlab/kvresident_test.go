package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
)

func TestCheckKVResident(t *testing.T) {
	for _, c := range []struct {
		resident              int
		device                string
		window, sinks, recent int
		want                  string // "" is no error
	}{
		{0, "cpu", 8, 4, 16, ""},
		{0, "cuda", 0, 0, 0, ""},
		{1024, "cuda", 0, 0, 0, ""},
		{1024, "cpu", 0, 0, 0, "host-spill tail is for --device cuda"},
		{-1, "cuda", 0, 0, 0, "want 0"},
		{1 << 25, "cuda", 0, 0, 0, "want 0"},
		{1024, "cuda", 16, 0, 0, "no FP16 overlay (--kv-window 16, --kv-sink 0)"},
		{1024, "cuda", 0, 4, 0, "no FP16 overlay"},
		{1024, "cuda", 0, 0, 64, "no --kv-recent"},
	} {
		err := checkKVResident(c.resident, c.device, c.window, c.sinks, c.recent)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: error %v, want %q", c, err, c.want)
		}
	}
	cfg := kvcache.Config{Layers: 4, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, MaxCells: 4096, Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}}
	if err := checkKVResidentModel(1024, cfg, "m.gguf"); err != nil {
		t.Error(err)
	}
	cfg.Windows = []int{0, 512, 0, 512}
	if err := checkKVResidentModel(1024, cfg, "m.gguf"); err == nil || !strings.Contains(err.Error(), "m.gguf has sliding-window layers") {
		t.Errorf("sliding windows: %v", err)
	}
	if err := checkKVResidentModel(0, cfg, "m.gguf"); err != nil {
		t.Error(err)
	}
}

// TestDeviceKVFit checks the device part of a cache against free memory: the all-GPU cache
// that does not fit is refused naming --kv-resident and a value whose GPU part fits the free
// memory less the reserve (the next tile up does not), and a tail whose GPU part does not fit
// is refused too.
func TestDeviceKVFit(t *testing.T) {
	// 32 layers × 8 KV heads × 128: 128 KiB per f16 cell.
	cfg := kvcache.Config{Layers: 32, KVHeads: 8, HeadDimK: 128, HeadDimV: 128, MaxCells: 131072, Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}}
	all := kvBytesAt(cfg, cfg.MaxCells) // 16 GiB
	if all != 16<<30 {
		t.Fatalf("estimate %d", all)
	}
	if err := deviceKVFit(cfg, 0, 0, all, "test"); err != nil {
		t.Errorf("a cache that fits exactly: %v", err)
	}
	free := int64(8 << 30)
	err := deviceKVFit(cfg, 0, 0, free, "test GPU")
	if err == nil {
		t.Fatal("a 16 GiB cache fits 8 GiB")
	}
	fits := engine.ResidentThatFits(cfg, 0, 1, free-calc.DefaultReserveBytes)
	// (8 GiB − 1.5 GiB) / 128 KiB = 53248 cells, less the 1024-cell chunk.
	if fits != 52224 {
		t.Errorf("fits %d, want 52224", fits)
	}
	for _, want := range []string{"--device cuda: a KV cache of 131072 cells in f16 needs 16.0 GiB", "8.0 GiB free", "test GPU",
		fmt.Sprintf("--kv-resident N (%d fits", fits), "--ctx"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if err := deviceKVFit(cfg, fits, 0, free, "test"); err != nil {
		t.Errorf("--kv-resident %d, the value suggested: %v", fits, err)
	}
	if kvBytesAt(cfg, fits+1024) > free-calc.DefaultReserveBytes || kvBytesAt(cfg, fits+32+1024) <= free-calc.DefaultReserveBytes {
		t.Errorf("%d is not the largest tile count that fits", fits)
	}
	// A chunk of 32 cells leaves more room for resident cells.
	if f := engine.ResidentThatFits(cfg, 32, 1, free-calc.DefaultReserveBytes); f != 53216 {
		t.Errorf("chunk 32: fits %d, want 53216", f)
	}
	err = deviceKVFit(cfg, 100000, 0, free, "test")
	if err == nil || !strings.Contains(err.Error(), "--kv-resident 100000: the GPU part of the KV cache (101024 cells") ||
		!strings.Contains(err.Error(), fmt.Sprintf("lower it (--kv-resident %d fits", fits)) {
		t.Errorf("a resident part that does not fit: %v", err)
	}
	if err := deviceKVFit(cfg, 0, 0, 1<<30, "test"); err == nil || !strings.Contains(err.Error(), "not even a host-spill tail's GPU part fits") {
		t.Errorf("no room at all: %v", err)
	}
	// deviceKVCells: the resident cells rounded up to a tile, and one chunk; all when no tail.
	for _, c := range []struct{ resident, chunk, want int }{{0, 0, 131072}, {1000, 0, 2048}, {1000, 64, 1088}, {131072, 0, 131072}, {131050, 0, 131072}} {
		if got := deviceKVCells(cfg, c.resident, c.chunk); got != c.want {
			t.Errorf("deviceKVCells(%d, %d) = %d, want %d", c.resident, c.chunk, got, c.want)
		}
	}
}

// TestRunKVResidentFlag: --kv-resident is in run's and serve's --help, and refused off the GPU
// before anything loads.
func TestRunKVResidentFlag(t *testing.T) {
	for _, cmd := range []string{"run", "serve"} {
		out, _, err := execute(t, cmd, "--help")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"--kv-resident N", "host-spill tail", "Nothing spills unless asked"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help lacks %q", cmd, want)
			}
		}
	}
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	_, _, err := execute(t, "run", "--model", path, "--n", "4", "--kv-resident", "64")
	if err == nil || !strings.Contains(err.Error(), "--kv-resident 64: --device cpu keeps the KV cache in host memory already") {
		t.Errorf("run --device cpu --kv-resident: %v", err)
	}
	_, _, err = execute(t, "serve", "--model", path, "--kv-resident", "64", "--no-discover", "--addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "--kv-resident 64: --device cpu keeps the KV cache in host memory already") {
		t.Errorf("serve --device cpu --kv-resident: %v", err)
	}
}
