package kvcache

import (
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/attn"
)

// TestMixedStepSpeed prints (KVLAB_SPEED_REPORT set) the best thread-CPU time of a decode step's
// cache work at kvlab-tiny-64's shape (4 layers, 2 query heads over 1 KV head of 64 dims, a
// 192-cell prompt, 64 steps): the writes (Write and Commit) and the attention (attn.Decode,
// one thread) apart, uniform formats against the mixed cache (+p64+s8) and the overlay, the
// arms interleaved round by round; then the attention alone at a fixed state, best of many.
// KVLAB_MIXED_ARM keeps one arm (for a profile).
func TestMixedStepSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	const layers, d, hn, heads, prompt, steps = 4, 64, 1, 2, 192, 64
	type arm struct {
		name string
		mut  func(*Config)
	}
	arms := []arm{
		{"q4_0", nil},
		{"q4_0+p64+s8", func(c *Config) { c.Recent, c.Sinks = 64, 8 }},
		{"q4_0+w64+s8", func(c *Config) { c.Window, c.Sinks = 64, 8 }},
		{"q8_0", func(c *Config) { c.Pair = mustPairNoT("q8_0") }},
		{"q8_0+p64+s8", func(c *Config) { c.Pair, c.Recent, c.Sinks = mustPairNoT("q8_0"), 64, 8 }},
		{"f16", func(c *Config) { c.Pair = mustPairNoT("f16") }},
	}
	if only := os.Getenv("KVLAB_MIXED_ARM"); only != "" { // one arm, for a profile
		arms = slices.DeleteFunc(arms, func(a arm) bool { return a.name != only })
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewPCG(1, 1))
	pk, pv := randVec(r, prompt*hn*d), randVec(r, prompt*hn*d)
	sk, sv := randVec(r, steps*hn*d), randVec(r, steps*hn*d)
	q := randVec(r, heads*d)
	out := make([]float32, heads*d)
	s := attn.Shape{Heads: heads, KVHeads: hn, HeadDimK: d, HeadDimV: d, Scale: 0.125, Threads: 1}
	caches := make([]*Cache, len(arms))
	for i, a := range arms {
		cfg := Config{Layers: layers, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPairNoT("q4_0"), MaxCells: 256, Seed: 1}
		if a.mut != nil {
			a.mut(&cfg)
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		caches[i] = c
	}
	bestW, bestA := make([]time.Duration, len(arms)), make([]time.Duration, len(arms))
	for i := range arms {
		bestW[i], bestA[i] = time.Hour, time.Hour
	}
	rounds := 400
	if os.Getenv("KVLAB_MIXED_ARM") != "" {
		rounds = 1000
	}
	for round := 0; round < rounds; round++ {
		for i, c := range caches {
			c.Reset()
			for l := 0; l < layers; l++ {
				c.Write(l, pk, pv, prompt)
			}
			c.Commit(prompt)
			var w, a time.Duration
			for j := 0; j < steps; j++ {
				t0 := cputime.Thread()
				for l := 0; l < layers; l++ {
					if err := c.Write(l, sk[j*hn*d:(j+1)*hn*d], sv[j*hn*d:(j+1)*hn*d], 1); err != nil {
						t.Fatal(err)
					}
				}
				c.Commit(1)
				t1 := cputime.Thread()
				for l := 0; l < layers; l++ {
					if err := attn.Decode(out, q, s, c.Keys(l, true), c.Values(l, true), 0, c.Len()); err != nil {
						t.Fatal(err)
					}
				}
				t2 := cputime.Thread()
				w, a = w+t1-t0, a+t2-t1
			}
			bestW[i], bestA[i] = min(bestW[i], w), min(bestA[i], a)
		}
	}
	// The attention alone at a fixed state (the prompt and 40 steps written), best of many.
	bestF := make([]time.Duration, len(arms))
	for i, c := range caches {
		c.Reset()
		for l := 0; l < layers; l++ {
			c.Write(l, pk, pv, prompt)
		}
		c.Commit(prompt)
		for j := 0; j < 40; j++ {
			for l := 0; l < layers; l++ {
				c.Write(l, sk[j*hn*d:(j+1)*hn*d], sv[j*hn*d:(j+1)*hn*d], 1)
			}
			c.Commit(1)
		}
		bestF[i] = time.Hour
	}
	for round := 0; round < 20*rounds; round++ {
		for i, c := range caches {
			t0 := cputime.Thread()
			for l := 0; l < layers; l++ {
				if err := attn.Decode(out, q, s, c.Keys(l, true), c.Values(l, true), 0, c.Len()); err != nil {
					t.Fatal(err)
				}
			}
			bestF[i] = min(bestF[i], cputime.Thread()-t0)
		}
	}
	for i, a := range arms {
		t.Logf("%-12s attention at a fixed state (232 cells, 4 layers): %5.2f cpu-µs", a.name, float64(bestF[i].Nanoseconds())/1e3)
	}
	for i, a := range arms {
		us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / steps }
		t.Logf("%-12s per step: writes %5.1f cpu-µs, attention %5.1f cpu-µs, both %5.1f", a.name, us(bestW[i]), us(bestA[i]), us(bestW[i])+us(bestA[i]))
	}
}
