package model

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// ropeHeader returns a header-only llama GGUF with the given extra metadata.
func ropeHeader(t *testing.T, kv map[string]any) *gguf.File {
	t.Helper()
	var w gguf.Writer
	w.AddKV("general.architecture", "llama")
	for k, v := range map[string]any{"embedding_length": uint32(64), "block_count": uint32(1),
		"feed_forward_length": uint32(128), "attention.head_count": uint32(8), "context_length": uint32(64)} {
		w.AddKV("llama."+k, v)
	}
	for k, v := range kv {
		w.AddKV("llama."+k, v)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// TestRopeYarnHandComputed checks YaRN against values computed by hand from ggml's formulas
// (ggml_rope_yarn_corr_dims, rope_yarn_ramp, rope_yarn) for head dim 8, base 1e4, a training
// context of 64 and factor 4:
//
//	corr_dim(32) = 8·ln(64/(64π))/(2 ln 1e4) = −0.497 → floor −1 → low 0
//	corr_dim(1)  = 8·ln(64/(2π))/(2 ln 1e4)  =  1.008 → ceil 2  → high 2
//	ramp = 1, 0.5, 0, 0;  f = 1, 0.1, 0.01, 0.001
//	freq = f·((1−ramp)/4 + ramp) = 1, 0.0625, 0.0025, 0.00025;  mscale = 1 + 0.1·ln 4
func TestRopeYarnHandComputed(t *testing.T) {
	f := ropeHeader(t, map[string]any{"rope.scaling.type": "yarn", "rope.scaling.factor": float32(4)})
	hp, err := readHparams(f, archs["llama"])
	if err != nil {
		t.Fatal(err)
	}
	if hp.RopeScaling != "yarn" || hp.RopeFactor != 4 || hp.RopeScale != 1 || hp.RopeOrigCtx != 64 ||
		hp.YarnExtFactor != 1 || hp.YarnBetaFast != 32 || hp.YarnBetaSlow != 1 {
		t.Fatalf("hparams %+v", hp)
	}
	lo, hi := yarnCorrDims(8, 64, 1e4, 32, 1)
	if lo != 0 || hi != 2 {
		t.Fatalf("corr dims %g, %g; want 0, 2", lo, hi)
	}
	freq, mscale := RopeFrequencies(hp, nil)
	want := []float64{1, 0.0625, 0.0025, 0.00025}
	for j := range want {
		if !near(float64(freq[j]), want[j]) {
			t.Errorf("freq[%d] = %g, want %g", j, freq[j], want[j])
		}
	}
	if !near(float64(mscale), 1+0.1*math.Log(4)) {
		t.Errorf("mscale %g, want %g", mscale, 1+0.1*math.Log(4))
	}

	// The rotation at position 10 of pair 1: angle 0.625, magnitude mscale.
	r := newRope(hp, RopeNorm, nil)
	cos, sin := make([]float32, 4), make([]float32, 4)
	r.angles(cos, sin, 10)
	m := 1 + 0.1*math.Log(4)
	if !near(float64(cos[1]), m*math.Cos(0.625)) || !near(float64(sin[1]), m*math.Sin(0.625)) {
		t.Errorf("pair 1 at 10: cos %g sin %g, want %g %g", cos[1], sin[1], m*math.Cos(0.625), m*math.Sin(0.625))
	}

	// ext_factor 0: plain interpolation, every frequency divided by the factor, magnitude 1.
	f = ropeHeader(t, map[string]any{"rope.scaling.type": "yarn", "rope.scaling.factor": float32(4),
		"rope.scaling.yarn_ext_factor": float32(0), "rope.scaling.original_context_length": uint32(32)})
	hp, err = readHparams(f, archs["llama"])
	if err != nil {
		t.Fatal(err)
	}
	freq, mscale = RopeFrequencies(hp, nil)
	if hp.RopeOrigCtx != 32 || mscale != 1 || !near(float64(freq[1]), 0.025) {
		t.Errorf("ext 0: orig %d, freq %v, mscale %g", hp.RopeOrigCtx, freq, mscale)
	}

	// yarn_log_multiplier 1: get_mscale(4, 1) / get_mscale(4, 1) = 1.
	f = ropeHeader(t, map[string]any{"rope.scaling.type": "yarn", "rope.scaling.factor": float32(4),
		"rope.scaling.yarn_log_multiplier": float32(1), "rope.scaling.yarn_beta_fast": float32(4)})
	hp, _ = readHparams(f, archs["llama"])
	if _, mscale = RopeFrequencies(hp, nil); !near(float64(mscale), 1) {
		t.Errorf("log multiplier 1: mscale %g, want 1", mscale)
	}
	// beta_fast 4: corr_dim(4) = 8·ln(64/(8π))/(2 ln 1e4) = 0.406 → floor 0.
	if lo, hi := yarnCorrDims(8, 64, 1e4, float64(hp.YarnBetaFast), 1); lo != 0 || hi != 2 {
		t.Errorf("beta_fast 4: corr dims %g, %g", lo, hi)
	}
}

// TestRopeScalingKeys: llama.cpp's reading of the scaling keys, and clear errors.
func TestRopeScalingKeys(t *testing.T) {
	for _, tc := range []struct {
		kv      map[string]any
		scaling string
		scale   float32
		err     string
	}{
		{kv: nil, scaling: "", scale: 1},
		{kv: map[string]any{"rope.scaling.factor": float32(2)}, scaling: "linear", scale: 2},
		{kv: map[string]any{"rope.scaling.type": "linear", "rope.scaling.factor": float32(8)}, scaling: "linear", scale: 8},
		{kv: map[string]any{"rope.scaling.type": "none", "rope.scaling.factor": float32(8)}, scaling: "none", scale: 1},
		{kv: map[string]any{"rope.scaling.type": "longrope"}, err: "longrope"},
		{kv: map[string]any{"rope.scaling.type": uint32(1)}, err: "not a string"},
		{kv: map[string]any{"rope.scaling.factor": float32(math.NaN())}, err: "rope.scaling.factor"},
		{kv: map[string]any{"rope.scaling.type": "yarn", "rope.scaling.yarn_beta_fast": float32(-1)}, err: "yarn_beta_fast"},
		{kv: map[string]any{"rope.scaling.type": "yarn", "rope.scaling.yarn_ext_factor": float32(2)}, err: "yarn_ext_factor"},
		{kv: map[string]any{"rope.scaling.type": "yarn", "rope.scaling.original_context_length": int32(-4)}, err: "original_context_length"},
	} {
		hp, err := readHparams(ropeHeader(t, tc.kv), archs["llama"])
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: error %v, want one naming %q", tc.kv, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.kv, err)
		case tc.err == "" && (hp.RopeScaling != tc.scaling || hp.RopeScale != tc.scale):
			t.Errorf("%v: scaling %q scale %g, want %q %g", tc.kv, hp.RopeScaling, hp.RopeScale, tc.scaling, tc.scale)
		}
	}
}

// TestRopeFreqFactors: a rope_freqs tensor divides the frequencies (llama-3 scaling).
func TestRopeFreqFactors(t *testing.T) {
	hp := Hparams{RopeDims: 4, RopeBase: 100}
	freq, mscale := RopeFrequencies(hp, []float32{1, 8})
	if freq[0] != 1 || !near(float64(freq[1]), 0.1/8) || mscale != 1 {
		t.Errorf("freq %v mscale %g", freq, mscale)
	}
}
