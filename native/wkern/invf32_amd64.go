//go:build amd64 && !purego

package wkern

import "unsafe"

// hasInvF32 selects the assembly batch-invariant float kernels (invf32_amd64.s): AVX2 and FMA
// (F16C for the f16 weights).
var hasInvF32 = hasAVX2

//go:noescape
func invF32x4x3(w *[4]unsafe.Pointer, x *[3]unsafe.Pointer, n int, out *[12]float32)

//go:noescape
func invF32x8x1(w *[8]unsafe.Pointer, x unsafe.Pointer, n int, out *[8]float32)

//go:noescape
func invF16x4x3(w *[4]unsafe.Pointer, x *[3]unsafe.Pointer, n int, out *[12]float32)

//go:noescape
func invF16x8x1(w *[8]unsafe.Pointer, x unsafe.Pointer, n int, out *[8]float32)

// invFloat is one float weight type: f16 weights (else float32) and the bytes per weight.
type invFloat struct {
	half bool
	size int
}

var (
	invF32 = invFloat{false, 4}
	invF16 = invFloat{true, 2}
)

// x43 and x81 call the type's kernels (directly: through a func value their arguments would
// escape to the heap).
func (k invFloat) x43(w *[4]unsafe.Pointer, x *[3]unsafe.Pointer, n int, out *[12]float32) {
	if k.half {
		invF16x4x3(w, x, n, out)
	} else {
		invF32x4x3(w, x, n, out)
	}
}

func (k invFloat) x81(w *[8]unsafe.Pointer, x unsafe.Pointer, n int, out *[8]float32) {
	if k.half {
		invF16x8x1(w, x, n, out)
	} else {
		invF32x8x1(w, x, n, out)
	}
}

func mulF32Asm(y []float32, ystride int, w []float32, cols int, x []float32, n, lo, hi int) {
	wb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 4*len(w))
	invF32.mul(y, ystride, wb, 4*cols, cols, x, n, lo, hi)
}

func mulF16Asm(y []float32, ystride int, w []byte, rowBytes, cols int, x []float32, n, lo, hi int) {
	invF16.mul(y, ystride, w, rowBytes, cols, x, n, lo, hi)
}

// mul runs the kernels over rows [lo, hi) in tiles of invRowTile bytes: tokens three at a
// time through the 4×3 kernel, the rest one at a time through the 8×1 one. A short group of
// rows repeats its last row (the repeat's outputs are dropped), so every output comes from a
// kernel over the same values in the same order. The caller has checked the bounds.
func (k invFloat) mul(y []float32, ystride int, w []byte, rowBytes, cols int, x []float32, n, lo, hi int) {
	c8 := cols &^ 7
	whole := c8 == cols
	tile := max(8, invRowTile/(k.size*cols)&^7)
	var wp4 [4]unsafe.Pointer
	var wp8 [8]unsafe.Pointer
	var xp [3]unsafe.Pointer
	var o12 [12]float32
	var o8 [8]float32
	for r0 := lo; r0 < hi; r0 += tile {
		r1 := min(r0+tile, hi)
		t := 0
		for ; t+3 <= n; t += 3 {
			xp[0], xp[1], xp[2] = unsafe.Pointer(&x[t*cols]), unsafe.Pointer(&x[(t+1)*cols]), unsafe.Pointer(&x[(t+2)*cols])
			y0, y1, y2 := y[t*ystride:], y[(t+1)*ystride:], y[(t+2)*ystride:]
			for r := r0; r < r1; r += 4 {
				for j := range wp4 {
					wp4[j] = unsafe.Pointer(&w[min(r+j, r1-1)*rowBytes])
				}
				k.x43(&wp4, &xp, c8, &o12)
				if whole && r+4 <= r1 {
					copy(y0[r:r+4], o12[0:4])
					copy(y1[r:r+4], o12[4:8])
					copy(y2[r:r+4], o12[8:12])
					continue
				}
				for j := 0; j < 4 && r+j < r1; j++ {
					for i := 0; i < 3; i++ {
						y[(t+i)*ystride+r+j] = k.tailOf(o12[4*i+j], w, (r+j)*rowBytes, x, (t+i)*cols, c8, cols)
					}
				}
			}
		}
		for ; t < n; t++ {
			xt := unsafe.Pointer(&x[t*cols])
			yt := y[t*ystride:]
			for r := r0; r < r1; r += 8 {
				for j := range wp8 {
					wp8[j] = unsafe.Pointer(&w[min(r+j, r1-1)*rowBytes])
				}
				k.x81(&wp8, xt, c8, &o8)
				if whole && r+8 <= r1 {
					copy(yt[r:r+8], o8[:])
					continue
				}
				for j := 0; j < 8 && r+j < r1; j++ {
					yt[r+j] = k.tailOf(o8[j], w, (r+j)*rowBytes, x, t*cols, c8, cols)
				}
			}
		}
	}
}

// tailOf adds the products of columns c8 … cols−1 of the row at w[off:] and the token at
// x[xo:] to s (in order).
func (k invFloat) tailOf(s float32, w []byte, off int, x []float32, xo, c8, cols int) float32 {
	if c8 == cols {
		return s
	}
	wt, xt := w[off+k.size*c8:off+k.size*cols], x[xo+c8:xo+cols]
	if k.half {
		return invTailF16(s, wt, xt)
	}
	return invTailF32(s, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(wt))), len(wt)/4), xt)
}
