package wkern

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
)

// threadCPU starts measuring the calling goroutine's thread CPU time (the steadier figure on a
// shared machine); the returned func reports it per op as cpu-ns/op.
func threadCPU(b *testing.B) func() {
	runtime.LockOSThread()
	c0 := cputime.Thread()
	return func() {
		b.ReportMetric(float64((cputime.Thread()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		runtime.UnlockOSThread()
	}
}

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
				defer threadCPU(b)()
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

// BenchmarkMulInvariantMem is BenchmarkMulInvariant/n1 on a 65536×2048 matrix (36–70 MiB,
// more than the L3 cache), the weights streamed from memory as in a model's decode step;
// pair gives the row-pair kernels the tiles replace, rows MulRows' one-token kernel.
func BenchmarkMulInvariantMem(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 65536, 2048
	for _, typ := range intTypes {
		k, _ := KernelOf(typ)
		if !invTiled(typ) {
			continue
		}
		data := randomRows(r, typ, rows, cols)
		rb := int(typ.RowBytes(cols))
		x := randomVec(r, cols)
		var a Act
		a.Quantize(k.Format(), x, 1, cols)
		y := make([]float32, rows)
		for _, kind := range []string{"inv", "pair", "rows"} {
			b.Run(typ.String()+"/"+kind, func(b *testing.B) {
				defer threadCPU(b)()
				if kind == "pair" { // the AVX2/VNNI row pairs the tiles replace
					hasInvTile = false
					defer func() { hasInvTile = true }()
				}
				for b.Loop() {
					if kind == "rows" {
						k.MulRows(y, rows, data, rb, &a, 0, rows)
					} else {
						k.MulInvariant(y, rows, data, rb, &a, 0, rows)
					}
				}
				b.SetBytes(int64(len(data)))
			})
		}
	}
}
