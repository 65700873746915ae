package wkern

import (
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/gguf"
)

// BenchmarkMulFloat times the float GEMM on a 512-token batch against one 2048² f16 matrix,
// in multiply-adds per nanosecond of process CPU time.
func BenchmarkMulFloat(b *testing.B) {
	for _, typ := range []gguf.Type{gguf.F16, gguf.Q8_0, gguf.Q4_0} {
		b.Run(typ.String(), func(b *testing.B) { benchMulFloat(b, typ) })
	}
}

func benchMulFloat(b *testing.B, typ gguf.Type) {
	r := rand.New(rand.NewPCG(11, 12))
	const rows, cols, n = 2048, 2048, 512
	rb := int(typ.RowBytes(cols))
	var w []byte
	if typ == gguf.F16 {
		w = randomFloatRows(r, typ, rows, cols, rb)
	} else {
		w = randomRows(r, typ, rows, cols)
	}
	x := randomVec(r, n*cols)
	y := make([]float32, n*rows)
	c0 := cputime.Process()
	for b.Loop() {
		MulFloat(y, rows, typ, w, rb, x, n, cols, 0, rows)
	}
	b.ReportMetric(float64(rows*cols*n)*float64(b.N)/float64((cputime.Process()-c0).Nanoseconds()), "cpuGMAC/s")
}

// BenchmarkMulRowsBlocked times the integer blocked batch products on the shape of BenchmarkMulFloat.
func BenchmarkMulRowsBlocked(b *testing.B) {
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K} {
		b.Run(typ.String(), func(b *testing.B) { benchMulRows(b, typ) })
	}
}

func benchMulRows(b *testing.B, typ gguf.Type) {
	r := rand.New(rand.NewPCG(11, 12))
	const rows, cols, n = 2048, 2048, 512
	k, _ := KernelOf(typ)
	w := randomRows(r, typ, rows, cols)
	var a Act
	a.Quantize(k.Format(), randomVec(r, n*cols), n, cols)
	y := make([]float32, n*rows)
	c0 := cputime.Process()
	for b.Loop() {
		k.MulRows(y, rows, w, int(typ.RowBytes(cols)), &a, 0, rows)
	}
	b.ReportMetric(float64(rows*cols*n)*float64(b.N)/float64((cputime.Process()-c0).Nanoseconds()), "cpuGMAC/s")
}

// BenchmarkMulRowsSmall measures MulRows (the blocked product from eight tokens) against
// MulInvariant on 2048×2048 matrices at the token counts of chunked prefill and batched
// decode, in thread CPU time per product (cpu-ns/op).
func BenchmarkMulRowsSmall(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	const rows, cols = 2048, 2048
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q8_0, gguf.Q4_K, gguf.Q6_K} {
		k, _ := KernelOf(typ)
		w := randomRows(r, typ, rows, cols)
		for _, n := range []int{8, 16, 30, 64, 128} {
			var a Act
			a.Quantize(k.Format(), randomVec(r, n*cols), n, cols)
			y := make([]float32, n*rows)
			for _, kind := range []string{"rows", "inv"} {
				b.Run(typ.String()+"/"+kind+"/n"+itoa(n), func(b *testing.B) {
					defer threadCPU(b)()
					for b.Loop() {
						if kind == "rows" {
							k.MulRows(y, rows, w, int(typ.RowBytes(cols)), &a, 0, rows)
						} else {
							k.MulInvariant(y, rows, w, int(typ.RowBytes(cols)), &a, 0, rows)
						}
					}
				})
			}
		}
	}
}
