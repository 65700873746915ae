package kvcache

import (
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
