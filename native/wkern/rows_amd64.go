//go:build amd64 && !purego

package wkern

import (
	"unsafe"

	"github.com/kvlab/kvlab/native/gguf"
)

// The row loops (rows_amd64.s) run a one-token kernel over consecutive rows from assembly:
// y[r] = kernel(w + r·rowBytes, …) for r < rows. A decode product calls them once per range of
// rows instead of once per row through Go (a call, the activation's slices and bounds checks
// per row: 3–10 % of a 2048×2048 product's CPU time on Zen 4), with the same kernel, so the
// same sums.

// rowsQ4_KAVX2 and rowsQ4_KAVX512 are row loops of their own (dot_amd64.s), s32 the
// activation's 32-code sums.
//
//go:noescape
func rowsQ4_KAVX2(w unsafe.Pointer, rowBytes, rows int, q, d, s32 unsafe.Pointer, nb int, y *float32)

//go:noescape
func rowsQ4_KAVX512(w unsafe.Pointer, rowBytes, rows int, q, d, s32 unsafe.Pointer, nb int, y *float32)

// rowsQ4_KAVX512P is rowsQ4_KAVX512 on the activation's regrouped codes (Act.QK).
//
//go:noescape
func rowsQ4_KAVX512P(w unsafe.Pointer, rowBytes, rows int, qp, d, s32 unsafe.Pointer, nb int, y *float32)

//go:noescape
func rowsQ6_KAVX2(w unsafe.Pointer, rowBytes, rows int, q, d, s unsafe.Pointer, nb int, y *float32)

// rowsQ6_KVNNI512 is a row loop of its own (vnniq6_amd64.s).
//
//go:noescape
func rowsQ6_KVNNI512(w unsafe.Pointer, rowBytes, rows int, q, d, bs unsafe.Pointer, nb int, y *float32)

//go:noescape
func rowsQ4_0uAVX2(w unsafe.Pointer, rowBytes, rows int, q, d, s unsafe.Pointer, nb int, y *float32)

//go:noescape
func rowsQ4_0VNNI(w unsafe.Pointer, rowBytes, rows int, q, d, s unsafe.Pointer, nb int, y *float32)

//go:noescape
func rowsQ8_0AVX2(w unsafe.Pointer, rowBytes, rows int, q, d unsafe.Pointer, nb int, y *float32)

// rowsK returns the row loop of a K-quant kernel of blockBytes per super-block over rows
// [lo, hi) of a one-token activation, its code sums taken by sums ((*Act).q8k: every 16 codes,
// (*Act).q8k32: every 32, as the Q4_K loops read them).
func rowsK(f func(w unsafe.Pointer, rowBytes, rows int, q, d, s unsafe.Pointer, nb int, y *float32), blockBytes int,
	sums func(a *Act, t int) ([]int8, []float32, []int16)) rowsDot {
	return func(y []float32, w []byte, rowBytes int, a *Act, lo, hi int) {
		q, d, bs := sums(a, 0)
		if hi <= lo || len(d) == 0 {
			return
		}
		_ = w[(hi-1)*rowBytes+len(d)*blockBytes-1]
		_ = y[hi-1]
		f(unsafe.Pointer(&w[lo*rowBytes]), rowBytes, hi-lo, unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), len(d), &y[lo])
	}
}

// rowsQ4_K512 runs the Q4_K row kernel that dots[gguf.Q4_K] is on AVX-512: on the activation's
// regrouped codes where it has them (rowsQ4_KAVX512P), else rowsQ4_KAVX512; the same bits.
func rowsQ4_K512(y []float32, w []byte, rowBytes int, a *Act, lo, hi int) {
	q, d, s32 := a.q8k32(0)
	if hi <= lo || len(d) == 0 {
		return
	}
	_ = w[(hi-1)*rowBytes+len(d)*q4_KBytes-1]
	_ = y[hi-1]
	f := rowsQ4_KAVX512
	if len(a.QK) == a.Cols {
		f, q = rowsQ4_KAVX512P, a.QK
	}
	f(unsafe.Pointer(&w[lo*rowBytes]), rowBytes, hi-lo, unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&s32[0]), len(d), &y[lo])
}

// rowsQ4_0 runs the Q4_0 kernel that dots[gguf.Q4_0] is: the 16-block VNNI one where the
// activation has its regrouped copy and no tail (else the rows go one by one through
// dotQ4_0Asm512), or the AVX2 one.
func rowsQ4_0(y []float32, w []byte, rowBytes int, a *Act, lo, hi int) {
	q, d, s := a.q8(0)
	nb := len(d)
	if hi <= lo || nb == 0 {
		return
	}
	_ = w[(hi-1)*rowBytes+nb*q4_0Bytes-1]
	_ = y[hi-1]
	if permQ8 {
		groups := nb / 16
		if groups == 0 || nb%16 != 0 || len(a.P) != 512*groups {
			for r := lo; r < hi; r++ {
				y[r] = dotQ4_0Asm512(w[r*rowBytes:(r+1)*rowBytes], a, 0)
			}
			return
		}
		rowsQ4_0VNNI(unsafe.Pointer(&w[lo*rowBytes]), rowBytes, hi-lo, unsafe.Pointer(&a.P[0]), unsafe.Pointer(&a.PD[0]), unsafe.Pointer(&a.PS[0]), groups, &y[lo])
		return
	}
	rowsQ4_0uAVX2(unsafe.Pointer(&w[lo*rowBytes]), rowBytes, hi-lo, unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&s[0]), nb, &y[lo])
}

func rowsQ8_0(y []float32, w []byte, rowBytes int, a *Act, lo, hi int) {
	q, d, _ := a.q8(0)
	if hi <= lo || len(d) == 0 {
		return
	}
	_ = w[(hi-1)*rowBytes+len(d)*q8_0Bytes-1]
	_ = y[hi-1]
	rowsQ8_0AVX2(unsafe.Pointer(&w[lo*rowBytes]), rowBytes, hi-lo, unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), len(d), &y[lo])
}

func init() {
	if hasAVX2 {
		rowsDots[gguf.Q4_K] = rowsK(rowsQ4_KAVX2, q4_KBytes, (*Act).q8k32)
		rowsDots[gguf.Q6_K] = rowsK(rowsQ6_KAVX2, q6_KBytes, (*Act).q8k)
		if hasVNNI && !noVNNI() {
			rowsDots[gguf.Q4_K] = rowsQ4_K512 // the kernels vnni_amd64.go picks
			rowsDots[gguf.Q6_K] = rowsK(rowsQ6_KVNNI512, q6_KBytes, (*Act).q8k)
		}
		rowsDots[gguf.Q4_0] = rowsQ4_0
		rowsDots[gguf.Q8_0] = rowsQ8_0
	}
}
