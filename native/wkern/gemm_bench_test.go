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

// BenchmarkMulFloatMem is BenchmarkMulFloat/f16 on a 16384×2048 matrix (64 MiB, more than the
// L3 cache) in thread CPU time: the weights and the 32 MiB output come from memory, as in a
// model's prefill. f32 is the float32-sliver path the f16 one (gemmh_amd64.go) replaces.
func BenchmarkMulFloatMem(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	const rows, cols, n = 16384, 2048, 512
	typ := gguf.F16
	rb := int(typ.RowBytes(cols))
	w := make([]byte, rows*rb)
	rnd := randomFloatRows(r, typ, 256, cols, rb)
	for i := 0; i < rows; i += 256 { // 256 random rows repeated: quick to make
		copy(w[i*rb:], rnd)
	}
	x := randomVec(r, n*cols)
	y := make([]float32, n*rows)
	has := gemmH
	defer func() { gemmH = has }()
	for _, h := range []bool{false, true} {
		if h && !has {
			continue // no f16 path here
		}
		b.Run(map[bool]string{false: "f32", true: "f16"}[h], func(b *testing.B) {
			gemmH = h
			defer threadCPU(b)()
			c0 := cputime.Thread()
			for b.Loop() {
				MulFloat(y, rows, typ, w, rb, x, n, cols, 0, rows)
			}
			b.ReportMetric(float64(rows*cols*n)*float64(b.N)/float64((cputime.Thread()-c0).Nanoseconds()), "cpuGMAC/s")
		})
	}
}
