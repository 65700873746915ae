package model

import (
	"math/rand/v2"
	"testing"
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
