//go:build amd64 && !purego

package model

import (
	"unsafe"

	"github.com/kvlab/kvlab/internal/isa"
	"golang.org/x/sys/cpu"
)

// hasAVX2FMA selects the assembly float32 dot products on CPUs with AVX2 and FMA, and hasF16C
// the f16-weight dot product on those that also convert halves (F16C).
var (
	hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasF16C    = hasAVX2FMA && cpu.X86.HasF16C
	// hasF16AVX512 runs the f16 row loops on 64-byte vectors (rowsF16AVX512, rowsF16x4AVX512),
	// unless KVLAB_NO_AVX512 (any value, read once at start) asks for the AVX2 ones.
	hasF16AVX512 = hasF16C && isa.AVX512F
)

// dotF16AVX2 returns Σ x_i·w_i for len(x) values, w_i the little-endian f16 at w[2i:]; len(x)
// must be a multiple of 8. Implemented in dot_amd64.s.
//
//go:noescape
func dotF16AVX2(x []float32, w []byte) float32

// dotF16 returns Σ x_i·w_i over len(x) values of an f16 row (w: 2·len(x) bytes).
func dotF16(row []byte, x []float32) float32 {
	n := len(x)
	row = row[:2*n]
	if hasF16C && n >= 8 {
		n8 := n &^ 7
		var s float32
		if hasF16AVX512 {
			rowsF16AVX512(&x[0], n8, unsafe.Pointer(&row[0]), 0, 1, &s)
		} else {
			s = dotF16AVX2(x[:n8], row)
		}
		for i := n8; i < n; i++ {
			s += half(row[2*i:]) * x[i]
		}
		return s
	}
	return dotF16Go(row, x)
}

// dotAVX2 returns Σ a_i·b_i over len(a) values (len(b) ≥ len(a)) with 8-wide fused
// multiply-adds in four partial sums. Implemented in dot_amd64.s.
//
//go:noescape
func dotAVX2(a, b []float32) float32

// dotF32 returns Σ a_i·b_i over len(a) values; b must hold at least len(a). The sum is taken in
// several partial sums (and with fused multiply-adds on AVX2 hardware), so it differs from a
// sequential float32 loop by rounding only.
func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	if hasAVX2FMA && len(a) >= 16 {
		return dotAVX2(a, b)
	}
	return dotF32Go(a, b)
}

// dot4AVX2 writes out[k] = Σ_{i<len(a)} a_i·b[k·stride+i] for k < 4; len(a) must be a multiple
// of 8 and b must hold 3·stride+len(a) values. Implemented in dot_amd64.s.
//
//go:noescape
func dot4AVX2(a, b []float32, stride int, out *[4]float32)

// dot4 writes out[k] = Σ_i a_i·b[k·stride+i] over len(a) values for k < 4: one vector against
// four (four weight rows for one token, or four tokens for one weight row), each load of a
// shared by the four sums.
func dot4(a, b []float32, stride int, out *[4]float32) {
	n := len(a)
	if hasAVX2FMA && n >= 16 {
		n8 := n &^ 7
		dot4AVX2(a[:n8], b, stride, out)
		for i := n8; i < n; i++ {
			for k := range out {
				out[k] += a[i] * b[k*stride+i]
			}
		}
		return
	}
	dot4Go(a, b, stride, out)
}

// rowsF16AVX2 writes y[r] = dotF16AVX2(x[:n], w + r·rowBytes) for r < rows; n must be a
// multiple of 8. rowsF16AVX512 computes the same products with rowsF16AVX512's own sums.
// Implemented in dot_amd64.s.
//
//go:noescape
func rowsF16AVX512(x *float32, n int, w unsafe.Pointer, rowBytes, rows int, y *float32)

//go:noescape
func rowsF16AVX2(x *float32, n int, w unsafe.Pointer, rowBytes, rows int, y *float32)

// rowsF16x4AVX512 writes the products of rowsF16AVX512 for the 4q rows at w, four rows a pass
// (r, r+q, r+2q, r+3q for r < q: four streams from memory, each load of x shared), the same
// sums bit for bit; rowsF16x4AVX2 is the same for rowsF16AVX2. Implemented in dot_amd64.s.
//
//go:noescape
func rowsF16x4AVX512(x *float32, n int, w unsafe.Pointer, rowBytes, q int, y *float32)

//go:noescape
func rowsF16x4AVX2(x *float32, n int, w unsafe.Pointer, rowBytes, q int, y *float32)

// matVecF16 writes y[r] = dotF16(row r, x) for lo ≤ r < hi of an f16 matrix whose rows are
// rowBytes apart, from assembly loops (no Go call per row), and reports whether it could (the
// CPU has F16C and len(x) is a multiple of 8: then the sums are dotF16's exactly). The rows go
// four at a time, a quarter of the range apart (rowsF16x4AVX512), the last rows%4 one at a time.
func matVecF16(y, x []float32, data []byte, rowBytes, lo, hi int) bool {
	n := len(x)
	if !hasF16C || n < 8 || n%8 != 0 || hi <= lo {
		return false
	}
	_ = data[(hi-1)*rowBytes+2*n-1]
	_ = y[hi-1]
	q := (hi - lo) / 4
	if q > 0 {
		if hasF16AVX512 {
			rowsF16x4AVX512(&x[0], n, unsafe.Pointer(&data[lo*rowBytes]), rowBytes, q, &y[lo])
		} else {
			rowsF16x4AVX2(&x[0], n, unsafe.Pointer(&data[lo*rowBytes]), rowBytes, q, &y[lo])
		}
	}
	if lo += 4 * q; lo < hi {
		if hasF16AVX512 {
			rowsF16AVX512(&x[0], n, unsafe.Pointer(&data[lo*rowBytes]), rowBytes, hi-lo, &y[lo])
		} else {
			rowsF16AVX2(&x[0], n, unsafe.Pointer(&data[lo*rowBytes]), rowBytes, hi-lo, &y[lo])
		}
	}
	return true
}

// swiGLUAVX2 is swiGLUGo(x[:n], y[:n]) over n values (a multiple of 8) with math.Exp's float64 steps four
// lanes at a time: the same results bit for bit on a CPU with AVX2 and FMA (where math.Exp
// takes its FMA path). Implemented in swiglu_amd64.s.
//
//go:noescape
func swiGLUAVX2(x, y *float32, n int)

// swiGLUAsm runs swiGLUAVX2 over the longest multiple of 8 of g (u at least as long) and
// returns how many values it did (0 without AVX2 and FMA).
func swiGLUAsm(g, u []float32) int {
	n := len(g) &^ 7
	if !hasAVX2FMA || n == 0 {
		return 0
	}
	_ = u[n-1]
	swiGLUAVX2(&g[0], &u[0], n)
	return n
}
