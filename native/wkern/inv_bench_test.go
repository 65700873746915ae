package wkern

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMulInvariant measures the batch-invariant product of a 2048×2048 matrix against
// 1, 4 and 16 tokens (one stream alone, a small batch, a full decode batch): GMAC/s is
// multiply-adds per nanosecond, ns/token the time per token of the product.
func BenchmarkMulInvariant(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 2048, 2048
	for _, typ := range intTypes {
		k, _ := KernelOf(typ)
		if !k.Invariant() {
			continue
		}
		data := randomRows(r, typ, rows, cols)
		rb := int(typ.RowBytes(cols))
		for _, n := range []int{1, 4, 16} {
			x := randomVec(r, n*cols)
			var a Act
			a.Quantize(k.Format(), x, n, cols)
			y := make([]float32, n*rows)
			b.Run(typ.String()+"/n"+itoa(n), func(b *testing.B) {
				for b.Loop() {
					k.MulInvariant(y, rows, data, rb, &a, 0, rows)
				}
				ns := float64(b.Elapsed().Nanoseconds())
				b.ReportMetric(float64(rows*cols*n)*float64(b.N)/ns, "GMAC/s")
				b.ReportMetric(ns/float64(b.N*n), "ns/token")
			})
		}
	}
}
