package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchSpillRefusesCPU(t *testing.T) {
	_, err := runKvlab(t, "bench", "spill", "--device", "cpu")
	if err == nil || !strings.Contains(err.Error(), "no device budget to spill past") {
		t.Errorf("--device cpu: %v", err)
	}
	for _, args := range [][]string{
		{"--chunk", "48"}, {"--tokens", "0"}, {"--ctx", "0"}, {"--ctx", "1G"}, {"--tokens", "400", "--rounds", "3"},
		{"--kv", "q9_9"}, {"--spill", "x"}, {"--device", "tpu"},
	} {
		if _, err := runKvlab(t, append([]string{"bench", "spill"}, args...)...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

func TestSpillSizes(t *testing.T) {
	got, err := spillSizes("", 8192, 1024)
	if err != nil || !equalInts(got, []int{0, 1024, 2048, 4096, 6144}) {
		t.Errorf("default sweep %v %v", got, err)
	}
	got, err = spillSizes("100,1k,64k,0,1024", 4096, 1024)
	if err != nil || !equalInts(got, []int{0, 1024, 3072}) {
		t.Errorf("rounded and clamped %v %v", got, err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPlanFitBenchSpill feeds plan --fit a bench spill document whose speeds follow a known
// spill model (device 4000 GB/s, link 40 GB/s, 1 ms per token) at two contexts, for a model
// whose file is not here (the document's own shape is used): the fit must recover the
// parameters and print them beside the nominal ones.
func TestPlanFitBenchSpill(t *testing.T) {
	const layers, kvHeads, hd, weights = 22, 4, 64, int64(1_100_000_000)
	perCell := int64(layers * kvHeads * hd * 2 * 2) // f16 K and V
	doc := benchSpillReport{Kind: benchSpillKind, Device: "cuda", DeviceName: "test", Model: "/nonexistent/model.gguf",
		Arch: "llama", Layers: layers, KVHeads: kvHeads, HeadDim: hd, WeightBytes: weights, KV: "f16/f16", ChunkCells: 1024}
	for _, ctx := range []int{16384, 65536} {
		for _, host := range []int{0, ctx / 4, ctx / 2} {
			dev := weights + int64(ctx-host)*perCell
			sec := float64(dev)/4000e9 + float64(int64(host)*perCell)/40e9 + 1e-3
			doc.Points = append(doc.Points, benchSpillPoint{BaseCtx: ctx, SpilledCells: host, Ctx: ctx, ResidentCells: ctx - host,
				HostCells: host, TailBytes: int64(host) * perCell, Seconds: sec, TPS: 1 / sec})
		}
	}
	b, _ := json.Marshal(doc)
	path := filepath.Join(t.TempDir(), "spill.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runKvlab(t, "plan", "--fit", path, "--gpu", "h200", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		SpillParams struct {
			DeviceGBps float64 `json:"device_gbps"`
			LinkGBps   float64 `json:"link_gbps"`
			OverheadMs float64 `json:"overhead_ms"`
		} `json:"spill_params"`
		Fit *struct {
			RMSLogErr float64 `json:"rms_log_err"`
			Fitted    int     `json:"fitted"`
			Held      bool    `json:"held_device_gbps"`
		} `json:"spill_fit"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	p := plan.SpillParams
	if math.Abs(p.DeviceGBps-4000)/4000 > 0.01 || math.Abs(p.LinkGBps-40)/40 > 0.01 || math.Abs(p.OverheadMs-1) > 0.01 {
		t.Errorf("fitted %+v, want device 4000 GB/s, link 40 GB/s, 1 ms", p)
	}
	if plan.Fit == nil || plan.Fit.Fitted != 6 || plan.Fit.RMSLogErr > 1e-3 || plan.Fit.Held {
		t.Errorf("fit summary %+v", plan.Fit)
	}
	text, err := runKvlab(t, "plan", "--fit", path, "--gpu", "h200")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before: device 4800 GB/s, link", "after:  device 4000 GB/s, link 40 GB/s, overhead 1 ms/token", "measured tok/s"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan lacks %q:\n%s", want, text)
		}
	}
	// One context: the device bandwidth is held at the GPU's figure.
	doc.Points = doc.Points[:3]
	b, _ = json.Marshal(doc)
	os.WriteFile(path, b, 0o644)
	text, err = runKvlab(t, "plan", "--fit", path, "--gpu", "h200")
	if err != nil || !strings.Contains(text, "device bandwidth is held") {
		t.Errorf("one context: %v\n%s", err, text)
	}
	// Foreign and broken documents.
	for name, body := range map[string]string{
		"kind":   `{"kind": "something else", "points": []}`,
		"broken": `{"kind": "kvlab bench spill", "points": [`,
		"pair":   `{"kind": "kvlab bench spill", "kv": "zz", "points": [{"ctx": 10, "tps": 1}]}`,
		"host":   `{"kind": "kvlab bench spill", "kv": "f16", "layers": 2, "kv_heads": 1, "head_dim": 64, "points": [{"ctx": 10, "host_cells": 10, "tps": 1}]}`,
		"empty":  `{"kind": "kvlab bench spill", "kv": "f16", "points": []}`,
	} {
		os.WriteFile(path, []byte(body), 0o644)
		if _, err := runKvlab(t, "plan", "--fit", path); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
