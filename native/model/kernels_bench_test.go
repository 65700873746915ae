package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// BenchmarkMatVec measures y = W·x for a 512×512 matrix of each weight type on one thread.
func BenchmarkMatVec(b *testing.B) {
	for _, typ := range weightTypes {
		b.Run(typ.String(), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			const rows, cols = 512, 512
			m, err := NewMatrix("w", typ, rows, cols, randomWeights(r, typ, rows, cols))
			if err != nil {
				b.Fatal(err)
			}
			x, y := make([]float32, cols), make([]float32, rows)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			b.SetBytes(int64(len(m.Data)))
			for b.Loop() {
				m.MatVec(y, x, nil)
			}
			b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// BenchmarkMatVecDecode measures y = W·x on one thread for a 5632×2048 matrix of the types a
// decode reads: "cache" multiplies one matrix over and over (the weights stay in the last-level
// cache where they fit), "dram" cycles through copies of it totalling at least 256 MiB, so the
// weights stream from memory as in a decode step. GMAC/s is multiply-adds per nanosecond.
func BenchmarkMatVecDecode(b *testing.B) {
	const rows, cols = 5632, 2048
	for _, typ := range []gguf.Type{gguf.F16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K} {
		r := rand.New(rand.NewPCG(1, 2))
		w := randomWeights(r, typ, rows, cols)
		x, y := make([]float32, cols), make([]float32, rows)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for _, mode := range []string{"cache", "dram"} {
			copies := 1
			if mode == "dram" {
				copies = max(1, (256<<20+len(w)-1)/len(w))
			}
			ms := make([]*Matrix, copies)
			for i := range ms {
				d := w
				if i > 0 {
					d = slices.Clone(w)
				}
				m, err := NewMatrix("w", typ, rows, cols, d)
				if err != nil {
					b.Fatal(err)
				}
				ms[i] = m
			}
			b.Run(typ.String()+"/"+mode, func(b *testing.B) {
				i := 0
				for b.Loop() {
					ms[i].MatVec(y, x, nil)
					i = (i + 1) % len(ms)
				}
				b.ReportMetric(float64(rows*cols)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GMAC/s")
			})
		}
	}
}
