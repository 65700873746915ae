package main

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/gguf"
)

func TestBenchAttnCPUJSON(t *testing.T) {
	out, err := run(t, "bench", "attn", "--ctx", "512", "--kv", "f16,q4_0,q8_0/q4_0", "--heads", "4", "--kv-heads", "2",
		"--head-dim", "64", "--iters", "1", "--mem-mib", "8", "--threads", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Device != "cpu" || len(rep.Results) != 3 || rep.BandwidthGBps <= 0 {
		t.Fatalf("%+v", rep)
	}
	for _, r := range rep.Results {
		if r.Seconds <= 0 || r.GBps <= 0 || r.RatioF16 <= 0 || r.BWFraction <= 0 {
			t.Errorf("row %+v", r)
		}
		if r.KV == "f16" && r.RatioF16 != 1 {
			t.Errorf("f16 ratio %g", r.RatioF16)
		}
		// One thread: the share of bandwidth is on the yardstick's clock, the thread's CPU time.
		if want := float64(r.KVBytes) / r.CPUSeconds / 1e9 / rep.BandwidthGBps; r.CPUSeconds <= 0 || math.Abs(r.BWFraction-want) > 1e-12*want {
			t.Errorf("%s: bw_fraction %g, want %g (cpu_seconds_per_token %g)", r.KV, r.BWFraction, want, r.CPUSeconds)
		}
	}
	// The bytes read are kvq's: q4_0 at head_dim 64 is 2 heads × (36 + 36) bytes per cell.
	if r := rep.Results[1]; r.KV != "q4_0" || r.BytesPerCell != 144 || r.KVBytes != 512*144 {
		t.Errorf("q4_0 row %+v", r)
	}
}

// TestBenchFillRatiosClock checks that with one CPU thread a row's bw_fraction takes its thread
// CPU time (the yardstick's clock), and else, or without one, its wall-clock GB/s.
func TestBenchFillRatiosClock(t *testing.T) {
	row := benchRow{Ctx: 64, KV: "f16", KVBytes: 1e9, Seconds: 0.2, CPUSeconds: 0.1, GBps: 5}
	for _, c := range []struct {
		device  string
		threads int
		cpu     float64
		want    float64
	}{{"cpu", 1, 0.1, 1}, {"cpu", 2, 0.1, 0.5}, {"cpu", 1, 0, 0.5}, {"cuda", 0, 0.1, 0.5}} {
		r := row
		r.CPUSeconds = c.cpu
		rep := benchReport{Device: c.device, Threads: c.threads, BandwidthGBps: 10, Results: []benchRow{r}}
		fillRatios(&rep)
		if got := rep.Results[0]; got.BWFraction != c.want || got.RatioF16 != 1 {
			t.Errorf("%s, %d threads, cpu %g s: bw_fraction %g (want %g), ratio %g", c.device, c.threads, c.cpu, got.BWFraction, c.want, got.RatioF16)
		}
	}
}

func TestBenchAttnRejects(t *testing.T) {
	for _, args := range [][]string{
		{"--device", "tpu"}, {"--heads", "5", "--kv-heads", "2"}, {"--ctx", "0"}, {"--kv", "q9_9"}, {"--iters", "0"},
	} {
		if _, err := run(t, append([]string{"bench", "attn", "--ctx", "64", "--mem-mib", "1"}, args...)...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// TestCUDACommandsWithoutDriver: with no driver, the GPU paths fail in one line naming it.
func TestCUDACommandsWithoutDriver(t *testing.T) {
	t.Setenv("KVLAB_CUDA_DRIVER", filepath.Join(t.TempDir(), "libcuda.so.1"))
	if _, err := engine.Open(0); err == nil {
		t.Skip("a CUDA driver was loaded earlier in this process")
	}
	for _, args := range [][]string{
		{"bench", "attn", "--device", "cuda", "--ctx", "64"},
		{"gate", "--device", "cuda"},
	} {
		_, err := run(t, args...)
		if !errors.Is(err, cuda.ErrNoCUDA) || !strings.HasPrefix(err.Error(), "no CUDA driver found: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, err := run(t, "gate", "--device", "cuda", "--head-dims", "96"); !errors.Is(err, engine.ErrUnsupported) {
		t.Errorf("gate --device cuda --head-dims 96: %v", err)
	}
}

// TestBenchModelSynthetic writes tiny synthetic models of every weight set and times them.
func TestBenchModelSynthetic(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, "bench", "model", "--shape", "tiny", "--weights", strings.Join(benchWeightSets, ","), "--threads", "1,2",
		"--prompt", "16", "--gen", "4", "--rounds", "1", "--dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep benchModelReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2*len(benchWeightSets) {
		t.Fatalf("%d rows", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.PrefillTPS <= 0 || r.DecodeTPS <= 0 || r.Rounds != 1 || r.WeightMiB <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	// The q4_k_m mix: the output and the "more bits" layers' attn_v and ffn_down in q6_K.
	if got := weightType("q4_k_m", "ffn_down", 0, 22, 5632); got != gguf.Q6_K {
		t.Errorf("layer 0 ffn_down %s", got)
	}
	if got := weightType("q4_k_m", "ffn_down", 3, 22, 5632); got != gguf.Q4_K {
		t.Errorf("layer 3 ffn_down %s", got)
	}
	if got := weightType("q4_k_m", "attn_q", 0, 24, 896); got != gguf.Q8_0 {
		t.Errorf("896-column q4_K falls back to %s", got)
	}
	if _, err := run(t, "bench", "model", "--shape", "nope", "--dir", dir); err == nil || !strings.Contains(err.Error(), "tinyllama-1.1b") {
		t.Errorf("unknown shape: %v", err)
	}
}
