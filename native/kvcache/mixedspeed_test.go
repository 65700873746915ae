package kvcache

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/attn"
)

// TestMixedStepSpeed prints (KVLAB_SPEED_REPORT set) the best thread-CPU time of a decode step's
// cache work: the writes (Write and Commit) and the attention (attn.Decode, one thread) apart,
// uniform formats against the mixed cache (+p) and the overlay (+w), the arms interleaved round
// by round; then the attention alone at a fixed state, best of many. Two shapes:
// kvlab-tiny-64's (4 layers, 2 query heads over 1 KV head of 64 dims, a 192-cell prompt, 64
// steps, window 64, 8 sinks) and a TinyLlama-like long context (22 layers, 32 query heads over
// 4 KV heads of 64 dims, a 1536-cell prompt, 40 steps, window 256, 8 sinks). KVLAB_MIXED_ARM
// keeps one arm (for a profile); KVLAB_MIXED_CELLS sets the long context's prompt cells.
func TestMixedStepSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	long := mixedShape{"tinyllama-like", 22, 64, 4, 32, 1536, 40, 256, 5}
	if n, err := strconv.Atoi(os.Getenv("KVLAB_MIXED_CELLS")); err == nil && n > 0 { // a longer context
		long.prompt, long.rounds = n, 2
	}
	for _, sh := range []mixedShape{{"kvlab-tiny-64", 4, 64, 1, 2, 192, 64, 64, 400}, long} {
		mixedStepSpeed(t, sh)
	}
}

type mixedShape struct {
	name                                                string
	layers, d, hn, heads, prompt, steps, recent, rounds int
}

func mixedStepSpeed(t *testing.T, sh mixedShape) {
	layers, d, hn, heads, prompt, steps := sh.layers, sh.d, sh.hn, sh.heads, sh.prompt, sh.steps
	type arm struct {
		name string
		mut  func(*Config)
	}
	p := fmt.Sprintf("+p%d+s8", sh.recent)
	arms := []arm{
		{"q4_0", nil},
		{"q4_0" + p, func(c *Config) { c.Recent, c.Sinks = sh.recent, 8 }},
		{fmt.Sprintf("q4_0+w%d+s8", sh.recent), func(c *Config) { c.Window, c.Sinks = sh.recent, 8 }},
		{"q8_0", func(c *Config) { c.Pair = mustPairNoT("q8_0") }},
		{"q8_0" + p, func(c *Config) { c.Pair, c.Recent, c.Sinks = mustPairNoT("q8_0"), sh.recent, 8 }},
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
		cfg := Config{Layers: layers, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPairNoT("q4_0"), MaxCells: prompt + steps, Seed: 1}
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
	rounds := sh.rounds
	if os.Getenv("KVLAB_MIXED_ARM") != "" {
		rounds *= 3
	}
	prefill := func(c *Cache, extra int) {
		c.Reset()
		for l := 0; l < layers; l++ {
			c.Write(l, pk, pv, prompt)
		}
		c.Commit(prompt)
		for j := 0; j < extra; j++ {
			for l := 0; l < layers; l++ {
				c.Write(l, sk[j*hn*d:(j+1)*hn*d], sv[j*hn*d:(j+1)*hn*d], 1)
			}
			c.Commit(1)
		}
	}
	for round := 0; round < rounds; round++ {
		for i, c := range caches {
			prefill(c, 0)
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
	// The attention alone at a fixed state (the prompt and most steps written), best of many.
	bestF := make([]time.Duration, len(arms))
	for i, c := range caches {
		prefill(c, steps*5/8)
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
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(steps) }
	for i, a := range arms {
		t.Logf("%s %-13s per step: writes %7.1f cpu-µs, attention %7.1f, both %7.1f (%.2f× %s); attention at %d cells %7.1f",
			sh.name, a.name, us(bestW[i]), us(bestA[i]), us(bestW[i])+us(bestA[i]),
			float64(bestW[0]+bestA[0])/float64(bestW[i]+bestA[i]), arms[0].name,
			prompt+steps*5/8, float64(bestF[i].Nanoseconds())/1e3)
	}
}
