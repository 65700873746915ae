package wkern

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// randomFloatRows returns rows×cols random values of float type t (stride rowBytes ≥ the row).
func randomFloatRows(r *rand.Rand, t gguf.Type, rows, cols, rowBytes int) []byte {
	data := make([]byte, rows*rowBytes)
	for i := 0; i < rows; i++ {
		for k := 0; k < cols; k++ {
			v := float32(r.NormFloat64())
			b := data[i*rowBytes:]
			switch t {
			case gguf.F32:
				binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(v))
			case gguf.F16:
				binary.LittleEndian.PutUint16(b[2*k:], toHalf(v))
			case gguf.BF16:
				binary.LittleEndian.PutUint16(b[2*k:], uint16(math.Float32bits(v)>>16))
			}
		}
	}
	return data
}

// TestMulFloat checks the float GEMM, assembly and portable, against float64 dot products of
// the converted rows: |y − ref| ≤ 2·cols·ε·Σ|w·x| (float32 sums of at most cols terms).
func TestMulFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	shapes := []struct{ rows, cols, n, lo, hi int }{
		{16, 8, 6, 0, 16}, {32, 256, 6, 0, 32}, {48, 2048, 13, 16, 48}, {21, 300, 7, 0, 21},
		{40, 517, 1, 3, 37}, {16, 5, 3, 0, 16}, {64, 1000, 12, 0, 64},
		{35, 264, 31, 0, 35}, {32, 512, 24, 16, 32}, {17, 24, 19, 1, 17}, {35, 264, 53, 0, 35}, {20, 512, 61, 3, 20}, {16, 40, 48, 0, 16},
	}
	for _, typ := range []gguf.Type{gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0} {
		for _, v := range []struct{ asm, avx512 bool }{{false, false}, {true, false}, {true, true}} {
			asm := v.asm
			if asm && !hasAVX2 || v.avx512 && !hasAVX512F {
				continue
			}
			for _, s := range shapes {
				if bs := typ.BlockSize(); s.cols%bs != 0 {
					s.cols = (s.cols + bs - 1) / bs * bs
				}
				name := fmt.Sprintf("%s/asm=%v/avx512=%v/%dx%d/n=%d", typ, asm, v.avx512, s.rows, s.cols, s.n)
				t.Run(name, func(t *testing.T) {
					defer func(a, b bool) { gemmAsm, gemm512 = a, b }(gemmAsm, gemm512)
					gemmAsm, gemm512 = asm, v.avx512
					var w []byte
					rb := int(typ.RowBytes(uint64(s.cols)))
					if typ.BlockSize() == 1 {
						rb += 2 * typ.TypeSize() // padded rows: the stride is not the row length
						w = randomFloatRows(r, typ, s.rows, s.cols, rb)
					} else {
						w = randomRows(r, typ, s.rows, s.cols)
					}
					row := make([]float32, s.cols)
					x := randomVec(r, s.n*s.cols)
					ys := s.rows + 3
					y := make([]float32, s.n*ys)
					for i := range y {
						y[i] = -7
					}
					MulFloat(y, ys, typ, w, rb, x, s.n, s.cols, s.lo, s.hi)
					for tk := 0; tk < s.n; tk++ {
						for i := 0; i < s.rows+3; i++ {
							got := y[tk*ys+i]
							if i < s.lo || i >= s.hi {
								if got != -7 {
									t.Fatalf("token %d row %d outside [%d,%d) written: %g", tk, i, s.lo, s.hi, got)
								}
								continue
							}
							if err := gguf.DequantizeRow(typ, w[i*rb:i*rb+int(typ.RowBytes(uint64(s.cols)))], row); err != nil {
								t.Fatal(err)
							}
							var ref, mag float64
							for k := 0; k < s.cols; k++ {
								p := float64(row[k]) * float64(x[tk*s.cols+k])
								ref += p
								mag += math.Abs(p)
							}
							if d := math.Abs(float64(got) - ref); d > 2*float64(s.cols)*0x1p-24*mag+1e-30 {
								t.Fatalf("token %d row %d: got %g, want %g (diff %g, bound %g)", tk, i, got, ref, d, 2*float64(s.cols)*0x1p-24*mag)
							}
						}
					}
				})
			}
		}
	}
}

// TestMulFloatSameAcrossSplits checks that a product split into row ranges gives the same bits
// as one range (threads must not change results).
func TestMulFloatSameAcrossSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const rows, cols, n = 80, 700, 9
	w := randomFloatRows(r, gguf.F16, rows, cols, 2*cols)
	x := randomVec(r, n*cols)
	one := make([]float32, n*rows)
	MulFloat(one, rows, gguf.F16, w, 2*cols, x, n, cols, 0, rows)
	split := make([]float32, n*rows)
	for lo := 0; lo < rows; lo += 16 {
		MulFloat(split, rows, gguf.F16, w, 2*cols, x, n, cols, lo, min(lo+16, rows))
	}
	for i := range one {
		if math.Float32bits(one[i]) != math.Float32bits(split[i]) {
			t.Fatalf("value %d: %g in one range, %g split", i, one[i], split[i])
		}
	}
}

// TestGemmMicro12x2Bits checks that the two-sliver AVX-512 micro-kernel writes the same bits as
// the one-sliver kernel run on each sliver, setting and adding.
func TestGemmMicro12x2Bits(t *testing.T) {
	if !gemmAsm || !gemm512 {
		t.Skip("no AVX-512 micro-kernel on this CPU")
	}
	r := rand.New(rand.NewPCG(5, 6))
	var a, b [gemmKC * gemmMR]float32
	for i := range a {
		a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	for _, kc := range []int{1, 7, 64, gemmKC} {
		xp := make([]float32, gemmNR512*kc)
		for i := range xp {
			xp[i] = float32(r.NormFloat64())
		}
		const ystride = 3 * gemmMR
		for _, first := range []bool{true, false} {
			want := make([]float32, gemmNR512*ystride)
			for i := range want {
				want[i] = float32(r.NormFloat64())
			}
			got := append([]float32(nil), want...)
			gemmMicro12p(&a, xp, kc, want, ystride, first)
			gemmMicro12p(&b, xp, kc, want[gemmMR:], ystride, first)
			gemmMicro12x2p(&a, &b, xp, kc, got, ystride, first)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("kc %d first %v: y[%d] = %g, want %g (bits differ)", kc, first, i, got[i], want[i])
				}
			}
		}
	}
}

// TestMulF16SameBits checks that the f16 AVX-512 path (slivers packed as f16, two sum blocks
// per micro-kernel call) writes the same bits as the float32 path on F16 weights: whole and
// short pairs and token groups, one block and several, a last block shorter than gemmKC.
func TestMulF16SameBits(t *testing.T) {
	if !gemmAsm || !gemm512 {
		t.Skip("no AVX-512 micro-kernel on this CPU")
	}
	defer func(h bool) { gemmH = h }(gemmH)
	r := rand.New(rand.NewPCG(13, 14))
	shapes := []struct{ rows, cols, n, lo, hi int }{
		{64, 256, 48, 0, 64}, {64, 512, 60, 0, 64}, {96, 1024, 53, 0, 96}, {80, 5632, 49, 16, 80},
		{50, 700, 61, 3, 47}, {33, 264, 72, 0, 33}, {48, 40, 48, 0, 48}, {128, 2048, 97, 32, 128},
	}
	for _, s := range shapes {
		rb := 2*s.cols + 6
		w := randomFloatRows(r, gguf.F16, s.rows, s.cols, rb)
		x := randomVec(r, s.n*s.cols)
		ys := s.rows + 5
		want, got := make([]float32, s.n*ys), make([]float32, s.n*ys)
		gemmH = false
		MulFloat(want, ys, gguf.F16, w, rb, x, s.n, s.cols, s.lo, s.hi)
		gemmH = true
		MulFloat(got, ys, gguf.F16, w, rb, x, s.n, s.cols, s.lo, s.hi)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%dx%d n=%d [%d,%d): y[%d] = %g, want %g (bits differ)", s.rows, s.cols, s.n, s.lo, s.hi, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkGemmMicro times the AVX-512 micro-kernels on L1-resident slivers, in multiply-adds
// per nanosecond.
func BenchmarkGemmMicro(b *testing.B) {
	if !gemmAsm || !gemm512 {
		b.Skip("no AVX-512 micro-kernel on this CPU")
	}
	var a, a2 [gemmKC * gemmMR]float32
	xp := make([]float32, gemmNR512*gemmKC)
	y := make([]float32, gemmNR512*2*gemmMR)
	macs := float64(gemmKC * gemmNR512 * 2 * gemmMR)
	b.Run("12p-twice", func(b *testing.B) {
		for b.Loop() {
			gemmMicro12p(&a, xp, gemmKC, y, 2*gemmMR, true)
			gemmMicro12p(&a2, xp, gemmKC, y[gemmMR:], 2*gemmMR, true)
		}
		b.ReportMetric(macs*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GMAC/s")
	})
	b.Run("12x2p", func(b *testing.B) {
		for b.Loop() {
			gemmMicro12x2p(&a, &a2, xp, gemmKC, y, 2*gemmMR, true)
		}
		b.ReportMetric(macs*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GMAC/s")
	})
}
