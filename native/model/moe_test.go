package model

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestMoEDecodeAllocs checks that a mixture-of-experts decode step allocates about what the
// same model with a dense FFN does: the router's logits, picks, weights and gathered activations
// are the backend's buffers, reused from layer to layer and pass to pass, and the experts'
// matrix lists are built once at load.
func TestMoEDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	allocs := func(s synth) float64 {
		m, err := Load(s.Write(t, 3), Options{Threads: 1, Batch: 8})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		c, err := kvcache.New(m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 256))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, m.Hparams.Vocab)
		if err := m.Forward([]int32{1, 2, 3, 4, 5, 6}, c, out); err != nil {
			t.Fatal(err)
		}
		tok := []int32{7}
		step := func() { // the same cell rewritten: the attention's work stays the same size
			if err := c.Truncate(6); err != nil {
				t.Fatal(err)
			}
			if err := m.Forward(tok, c, out); err != nil {
				t.Fatal(err)
			}
		}
		step()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 50 {
			step()
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / 50
	}
	for _, s := range []synth{
		{Arch: "llama", Typ: gguf.F32, Embd: 64, FFN: 48, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 6, Vocab: 40, RopeBase: 10000, Experts: 8, Used: 2},
		{Arch: "qwen3moe", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 6, Vocab: 40, QKNorm: true, RopeBase: 1e6, Experts: 8, Used: 3},
		{Arch: "qwen2moe", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 6, Vocab: 40, Bias: true, RopeBase: 1e6, Experts: 8, Used: 2, ShFFN: 64},
	} {
		t.Run(fmt.Sprintf("%s-e%d", s.Arch, s.Experts), func(t *testing.T) {
			dense := s
			dense.Experts, dense.Used, dense.ShFFN, dense.Arch = 0, 0, 0, map[string]string{"llama": "llama", "qwen3moe": "qwen3", "qwen2moe": "qwen2"}[s.Arch]
			moe, base := allocs(s), allocs(dense)
			t.Logf("allocations per decode step: %.1f (the dense model: %.1f)", moe, base)
			// Before the buffers were reused: about 12 objects per layer, 70 a step. The count
			// also sees the runtime's own (about 1 a step here, either model), so the bound is
			// well under one per layer (6).
			if moe > base+2 {

				t.Errorf("a MoE decode step allocates %.1f objects, the dense model %.1f", moe, base)
			}
		})
	}
}

// TestEveryArchEveryKVFormat runs every architecture (small random files; the window ones past
// their window) on every KV format pair: a prefill and greedy decodes, each format's logits
// finite and, against the f32 cache's, within a bound of its precision (f16 and bf16 1e-2 of
// the logits' RMS; every format under 1: it runs and reads back what was written).
func TestEveryArchEveryKVFormat(t *testing.T) {
	archs := []synth{
		{Arch: "llama", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 32, Layers: 2, Vocab: 40, RopeBase: 10000},
		{Arch: "llama", Typ: gguf.F32, Embd: 64, FFN: 48, Heads: 4, KVHeads: 2, HeadDim: 32, Layers: 2, Vocab: 40, RopeBase: 10000, Experts: 4, Used: 2},
		{Arch: "qwen2", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, Bias: true, RopeBase: 1e6},
		{Arch: "qwen3", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, QKNorm: true, RopeBase: 1e6},
		{Arch: "qwen3moe", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, QKNorm: true, RopeBase: 1e6, Experts: 4, Used: 2},
		{Arch: "qwen2moe", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, RopeBase: 1e6, Experts: 4, Used: 2, ShFFN: 32},
		{Arch: "gemma2", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, Tied: true, RopeBase: 10000, Window: 6},
		{Arch: "gemma3", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 3, Vocab: 40, Tied: true, RopeBase: 1e6, Window: 6, Pattern: 3},
		{Arch: "phi3", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, RopeBase: 10000, Window: 6},
	}
	formats := []string{"f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl", "q8_0/q4_0", "f16/q4_0", "fp8", "tq4", "q2k", "q2k/q8_0", "turbo3"}
	prompt := []int32{1, 5, 9, 2, 7, 3, 3, 8, 1, 6}
	for _, s := range archs {
		t.Run(fmt.Sprintf("%s-e%d", s.Arch, s.Experts), func(t *testing.T) {
			m, err := Load(s.Write(t, 21), Options{Threads: 2, Batch: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			run := func(kv string) []float32 {
				p, err := kvq.ParsePair(kv)
				if err != nil {
					t.Fatal(err)
				}
				cfg := m.CacheConfig(p, 64)
				cfg.Seed = 3
				c, err := kvcache.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				out := make([]float32, m.Hparams.Vocab)
				var all []float32
				for _, tok := range prompt { // one at a time: the group formats see their cells as a decode writes them
					if err := m.Forward([]int32{tok}, c, out); err != nil {
						t.Fatalf("%s: %v", kv, err)
					}
					all = append(all, out...)
				}
				return all
			}
			ref := run("f32")
			var worst string
			var worstRel float64
			for _, kv := range formats {
				got := run(kv)
				var se, ss float64
				for i, w := range ref {
					if math.IsNaN(float64(got[i])) || math.IsInf(float64(got[i]), 0) {
						t.Fatalf("%s: logit %d is %v", kv, i, got[i])
					}
					d := float64(got[i] - w)
					se, ss = se+d*d, ss+float64(w)*float64(w)
				}
				rel := math.Sqrt(se / ss)
				if rel > worstRel {
					worst, worstRel = kv, rel
				}
				lim := 1.0
				if kv == "f16" || kv == "bf16" {
					lim = 1e-2
				}
				if rel > lim {
					t.Errorf("%s: logits %.3g (relative RMS) off the f32 cache's, bound %g", kv, rel, lim)
				}
			}
			t.Logf("%d formats run; the farthest from f32: %s at %.2e relative RMS", len(formats), worst, worstRel)
		})
	}
}
