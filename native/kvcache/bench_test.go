package kvcache

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/kvlab/kvlab/native/attn"
)

// BenchmarkDecodeSteps times decode steps (write one cell, attend over all) of one layer at a
// long context: uniform formats, the overlay (+w) and the mixed cache (+p) over the same cells.
// One op is 128 steps from 4096 cells; 32 query heads over 8 KV heads of 128 dims, one thread;
// cpu-µs/step is the thread's CPU time (Linux), steadier than wall time on a shared machine.
//
//	go test -run XXX -bench DecodeSteps -count 5 ./native/kvcache/
func BenchmarkDecodeSteps(b *testing.B) {
	const d, hn, heads, ctx, steps = 128, 8, 32, 4096, 128
	for _, tc := range []struct {
		name string
		mut  func(*Config)
	}{
		{"f16", func(c *Config) { c.Pair = mustPairNoT("f16") }},
		{"q4_0", nil},
		{"q4_0+w256+s8", func(c *Config) { c.Window, c.Sinks = 256, 8 }},
		{"q4_0+p256+s8", func(c *Config) { c.Recent, c.Sinks = 256, 8 }},
		{"q8_0", func(c *Config) { c.Pair = mustPairNoT("q8_0") }},
		{"q8_0+p256+s8", func(c *Config) { c.Pair, c.Recent, c.Sinks = mustPairNoT("q8_0"), 256, 8 }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPairNoT("q4_0"), MaxCells: ctx + steps}
			if tc.mut != nil {
				tc.mut(&cfg)
			}
			c, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 1))
			pk, pv := randVec(r, ctx*hn*d), randVec(r, ctx*hn*d)
			sk, sv := randVec(r, steps*hn*d), randVec(r, steps*hn*d)
			q := randVec(r, heads*d)
			out := make([]float32, heads*d)
			s := attn.Shape{Heads: heads, KVHeads: hn, HeadDimK: d, HeadDimV: d, Scale: 0.088, Threads: 1}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c.Reset()
				c.Write(0, pk, pv, ctx)
				c.Commit(ctx)
				b.StartTimer()
				t0, _ := threadCPU()
				for j := 0; j < steps; j++ {
					c.Write(0, sk[j*hn*d:(j+1)*hn*d], sv[j*hn*d:(j+1)*hn*d], 1)
					c.Commit(1)
					if err := attn.Decode(out, q, s, c.Keys(0, true), c.Values(0, true), 0, c.Len()); err != nil {
						b.Fatal(err)
					}
				}
				t1, _ := threadCPU()
				cpu += t1 - t0
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*steps), "µs/step")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*steps), "cpu-µs/step")
			}
		})
	}
}

// BenchmarkDecodeAttention times one decode step's attention over every layer (no write) at a
// fixed state: kvlab-tiny-64's shape (4 layers, 2 query heads over 1 KV head of 64 dims, 232
// cells, window 64) and a TinyLlama-like one (22 layers, 32 query heads over 4 KV heads of 64
// dims, 1561 cells, window 256); uniform q4_0 and f16 against the mixed cache, where the
// fixed per-call cost of its f16 parts shows. The cells are written one at a time, as decode
// writes them. -benchmem reports the step's allocations (none expected).
//
//	go test -run XXX -bench DecodeAttention -benchmem ./native/kvcache/
func BenchmarkDecodeAttention(b *testing.B) {
	for _, sh := range []struct {
		name                                    string
		layers, hn, heads, cells, recent, sinks int
	}{
		{"tiny", 4, 1, 2, 232, 64, 8},
		{"long", 22, 4, 32, 1561, 256, 8},
	} {
		const d = 64
		for _, tc := range []struct {
			name string
			mut  func(*Config)
		}{
			{"q4_0", nil},
			{fmt.Sprintf("q4_0+p%d+s%d", sh.recent, sh.sinks), func(c *Config) { c.Recent, c.Sinks = sh.recent, sh.sinks }},
			{"f16", func(c *Config) { c.Pair = mustPairNoT("f16") }},
		} {
			b.Run(sh.name+"/"+tc.name, func(b *testing.B) {
				cfg := Config{Layers: sh.layers, KVHeads: sh.hn, HeadDimK: d, HeadDimV: d, Pair: mustPairNoT("q4_0"), MaxCells: sh.cells, Seed: 1}
				if tc.mut != nil {
					tc.mut(&cfg)
				}
				c, err := New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				r := rand.New(rand.NewPCG(1, 1))
				k, v := randVec(r, sh.hn*d), randVec(r, sh.hn*d)
				for j := 0; j < sh.cells; j++ {
					for l := 0; l < sh.layers; l++ {
						k[(j+l)%len(k)] = float32(r.NormFloat64())
						v[(j+l)%len(v)] = float32(r.NormFloat64())
						c.Write(l, k, v, 1)
					}
					c.Commit(1)
				}
				q := randVec(r, sh.heads*d)
				out := make([]float32, sh.heads*d)
				s := attn.Shape{Heads: sh.heads, KVHeads: sh.hn, HeadDimK: d, HeadDimV: d, Scale: 0.125, Threads: 1}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				t0, _ := threadCPU()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for l := 0; l < sh.layers; l++ {
						if err := attn.Decode(out, q, s, c.Keys(l, true), c.Values(l, true), 0, c.Len()); err != nil {
							b.Fatal(err)
						}
					}
				}
				if t1, ok := threadCPU(); ok {
					b.ReportMetric(float64((t1-t0).Nanoseconds())/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
