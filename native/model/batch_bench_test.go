package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/gguf"
)

// BenchmarkDecodeBatch measures one decode step of s sequences at 64 tokens of context: s = 1
// through Forward (the serial path) and through ForwardBatch, and s = 16 through ForwardBatch
// (one pass). cpu-µs/tok is process CPU time per decoded token (the figure to trust on a busy
// machine): the batched pass's gain is forward/1's figure over batch/16's.
func BenchmarkDecodeBatch(b *testing.B) {
	const ctx = 64
	for _, name := range benchModels {
		for _, mode := range []struct {
			name  string
			seqs  int
			batch bool
		}{{"forward/1", 1, false}, {"batch/1", 1, true}, {"batch/16", 16, true}} {
			b.Run(fmt.Sprintf("%s/%s", name, mode.name), func(b *testing.B) {
				m, _ := load(b, name, 1)
				steps := make([]SeqStep, mode.seqs)
				for i := range steps {
					c := newCache(b, m, "f16", ctx+1)
					if err := m.Forward(benchTokens(m.Hparams.Vocab, ctx), c, nil); err != nil {
						b.Fatal(err)
					}
					steps[i] = SeqStep{Cache: c, Tokens: []int32{int32(5 + i)}, Logits: make([]float32, m.Hparams.Vocab)}
				}
				truncate := func() {
					for _, st := range steps {
						if err := st.Cache.Truncate(ctx); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cputime.Process()
				for b.Loop() {
					var err error
					if mode.batch {
						err = m.ForwardBatch(steps)
					} else {
						err = m.Forward(steps[0].Tokens, steps[0].Cache, steps[0].Logits)
					}
					if err != nil {
						b.Fatal(err)
					}
					truncate()
				}
				n := float64(b.N * mode.seqs)
				b.ReportMetric(n/b.Elapsed().Seconds(), "tok/s")
				b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/n, "cpu-µs/tok")
			})
		}
	}
}

// BenchmarkMulRowwise measures the invariant product alone: 16 tokens through a weight matrix
// of each type at tiny-64's FFN shape and at a 1.1B-class FFN shape; ns/MAC is the time per
// multiply-add.
func BenchmarkMulRowwise(b *testing.B) {
	for _, typ := range []gguf.Type{gguf.F32, gguf.Q4_0, gguf.Q6_K} {
		for _, shape := range [][2]int{{384, 128}, {1024, 2048}} {
			rows, cols := shape[0], shape[1]
			if cols%typ.BlockSize() != 0 {
				continue
			}
			for _, n := range []int{1, 16} {
				b.Run(fmt.Sprintf("%s/%dx%d/n%d", typ, rows, cols, n), func(b *testing.B) {
					r := rand.New(rand.NewPCG(1, 2))
					m, err := NewMatrix("w", typ, rows, cols, randomWeights(r, typ, rows, cols))
					if err != nil {
						b.Fatal(err)
					}
					x := make([]float32, n*cols)
					for i := range x {
						x[i] = float32(r.NormFloat64())
					}
					y := make([]float32, n*rows)
					pool := NewPool(1)
					defer pool.Close()
					cpu0 := cputime.Process()
					for b.Loop() {
						m.mulRowwise(y, x, n, pool)
					}
					b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N*n*rows*cols), "cpu-ns/MAC")
				})
			}
		}
	}
}
