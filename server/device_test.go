package server

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestNewCUDAWithoutDriver: Device "cuda" without a driver fails New with the one-line
// ErrNoCUDA message; an unknown device is refused.
func TestNewCUDAWithoutDriver(t *testing.T) {
	t.Setenv("KVLAB_CUDA_DRIVER", filepath.Join(t.TempDir(), "libcuda.so.1"))
	if e, err := engine.Open(0); err == nil {
		e.Close()
		t.Skip("a CUDA driver was loaded earlier in this process")
	}
	_, err := New(Config{Logger: quiet, Device: DeviceCUDA})
	if !errors.Is(err, cuda.ErrNoCUDA) || !strings.HasPrefix(err.Error(), "no CUDA driver found: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want one line starting %q", err, "no CUDA driver found: ")
	}
	if _, err := New(Config{Logger: quiet, Device: "tpu"}); err == nil || !strings.Contains(err.Error(), "want cpu or cuda") {
		t.Errorf("device tpu: %v", err)
	}
}

// TestNewKVResident: Config.KVResident (serve --kv-resident) is refused off the GPU, with the
// FP16 overlay and when negative, before a device is opened.
func TestNewKVResident(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{KVResident: 64}, "the host-spill tail is for --device cuda"},
		{Config{KVResident: 64, Device: DeviceCUDA, KVWindow: 16}, "takes no FP16 overlay"},
		{Config{KVResident: 64, Device: DeviceCUDA, KVSinks: 4}, "takes no FP16 overlay"},
		{Config{KVResident: -1, Device: DeviceCUDA}, "must not be negative"},
	} {
		c.cfg.Logger = quiet
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestCheckKVResident: a tail is refused on a model with sliding-window layers (the error names
// the flag and the model) and with the f16 recent window, and taken where every window entry is
// 0 (whole-context layers) or none is asked for.
func TestCheckKVResident(t *testing.T) {
	cfg := kvcache.Config{Layers: 2, Windows: []int{0, 512}}
	if err := CheckKVResident(64, DeviceCUDA, cfg, "gemma.gguf"); err == nil || !strings.Contains(err.Error(), "--kv-resident 64: gemma.gguf has sliding-window layers") {
		t.Errorf("sliding windows: %v", err)
	}
	if err := CheckKVResident(64, DeviceCUDA, kvcache.Config{Recent: 64}, ""); err == nil || !strings.Contains(err.Error(), "takes no --kv-recent") {
		t.Errorf("recent window: %v", err)
	}
	if err := CheckKVResident(0, DeviceCUDA, cfg, "gemma.gguf"); err != nil {
		t.Errorf("no tail: %v", err)
	}
	cfg.Windows = []int{0, 0}
	if err := CheckKVResident(64, DeviceCUDA, cfg, "m.gguf"); err != nil {
		t.Errorf("windows of 0: %v", err)
	}
}

// TestKVResidentHint: the advice for CUDA caches that do not fit names --kv-resident and the
// largest value whose GPU part of every session's cache fits (the next tile up does not).
func TestKVResidentHint(t *testing.T) {
	// 32 layers × 8 KV heads × 128 in f16: 128 KiB per cell.
	ccfg := kvcache.Config{Layers: 32, KVHeads: 8, HeadDimK: 128, HeadDimV: 128, MaxCells: 65536, Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}}
	// 2 sessions in 2 GiB: 8192 cells each, less a 1024-cell chunk.
	got := kvResidentHint(ccfg, 0, 2, 2<<30)
	if !strings.Contains(got, "--kv-resident N keeps only the first N cells") || !strings.Contains(got, "N = 7168 fits") {
		t.Errorf("hint %q", got)
	}
	if got := kvResidentHint(ccfg, 0, 2, 100<<20); !strings.Contains(got, "not even a small GPU part") {
		t.Errorf("no room: %q", got)
	}
}
