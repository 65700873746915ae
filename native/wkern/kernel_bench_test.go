package wkern

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMulRows measures one 2048×2048 matrix against 1 token (decode; the weights, 2–9
// MiB, come from the cache or memory) and against 64 tokens (prefill tiles): GMAC/s is
// multiply-adds per nanosecond.
func BenchmarkMulRows(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 2048, 2048
	for _, typ := range intTypes {
		k, _ := KernelOf(typ)
		data := randomRows(r, typ, rows, cols)
		rb := int(typ.RowBytes(cols))
		for _, n := range []int{1, 64} {
			x := randomVec(r, n*cols)
			var a Act
			a.Quantize(k.Format(), x, n, cols)
			y := make([]float32, n*rows)
			b.Run(typ.String()+"/n"+itoa(n), func(b *testing.B) {
				for b.Loop() {
					k.MulRows(y, rows, data, rb, &a, 0, rows)
				}
				b.ReportMetric(float64(rows*cols*n)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GMAC/s")
			})
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
