package wkern

import (
	"maps"

	"github.com/kvlab/kvlab/native/gguf"
)

// dots holds the kernel of every supported weight type: the portable one, replaced by the
// assembly one where the CPU has it (dot_amd64.go's init).
var dots = maps.Clone(goDots)

// rowDot4 is a four-token kernel: out[k] = the row's dot with token t+k of a, k < 4.
type rowDot4 func(row []byte, a *Act, t int, out *[4]float32)

// dots4 holds the four-token kernels where there are some (assembly only).
var dots4 = map[gguf.Type]rowDot4{}

// rowsDot is a one-token kernel over a range of rows: y[r] = W_r·(token 0 of a) for lo ≤ r < hi,
// row r at w[r·rowBytes:]; the same sums as the type's rowDot, without a Go call per row.
type rowsDot func(y []float32, w []byte, rowBytes int, a *Act, lo, hi int)

// rowsDots holds the row loops where there are some (assembly only).
var rowsDots = map[gguf.Type]rowsDot{}

// Kernel is one weight type's integer kernel.
type Kernel struct {
	typ    gguf.Type
	format Format
	dot    rowDot
	dot4   rowDot4 // nil when there is none
	rows   rowsDot // nil when there is none
	inv    invPair // the batch-invariant kernels, zero when there are none
	// gemm is the blocked product of four or more tokens where there is one (assembly only).
	gemm func(k Kernel, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int)
}

// gemms holds the blocked products of four or more tokens where there are some.
var gemms = map[gguf.Type]func(k Kernel, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int){}

// KernelOf returns weight type t's kernel; ok is false when t has none (the float types
// among them: those multiply float32 activations directly).
func KernelOf(t gguf.Type) (k Kernel, ok bool) {
	d, ok := dots[t]
	if !ok {
		return Kernel{}, false
	}
	return Kernel{typ: t, format: FormatOf(t), dot: d, dot4: dots4[t], rows: rowsDots[t], inv: invDots[t], gemm: gemms[t]}, true
}

// Type is the weight type.
func (k Kernel) Type() gguf.Type { return k.typ }

// Format is the activation format the kernel reads.
func (k Kernel) Format() Format { return k.format }

// Blocked reports whether the kernel multiplies batches of four or more tokens with a blocked
// product of its own (faster than converting the weights to float32 for a float GEMM).
func (k Kernel) Blocked() bool { return k.gemm != nil }

// Dot returns Σ_i w_i·x_i for one stored row of a.Cols values and token tok of a, which must
// be in k.Format().
func (k Kernel) Dot(row []byte, a *Act, tok int) float32 { return k.dot(row, a, tok) }

// rowTile is the number of weight rows MulRows keeps hot while it sweeps the tokens: 16 rows
// of 2048 q8_0 values are 34 KiB, the rows then stay in the L1/L2 cache while every token's
// activation streams past them once.
const rowTile = 16

// MulRows writes y[t·ystride + r] = W_r·x_t for rows lo ≤ r < hi of the matrix whose row r is
// w[r·rowBytes : (r+1)·rowBytes] and every token t < a.N: a blocked product, rows in tiles of
// rowTile, each tile read from memory once for all tokens.
func (k Kernel) MulRows(y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	dot := k.dot
	if a.N == 1 {
		if k.rows != nil {
			k.rows(y, w, rowBytes, a, lo, hi)
			return
		}
		for r := lo; r < hi; r++ {
			y[r] = dot(w[r*rowBytes:(r+1)*rowBytes], a, 0)
		}
		return
	}
	if k.gemm != nil && a.N >= 4 {
		k.gemm(k, y, ystride, w, rowBytes, a, lo, hi)
		return
	}
	k.mulRowDots(y, ystride, w, rowBytes, a, lo, hi)
}

// mulRowDots is MulRows of several tokens through the row dots: four tokens at a time where
// the type has a four-token kernel, rows in tiles of rowTile.
func (k Kernel) mulRowDots(y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	dot, dot4 := k.dot, k.dot4
	var out [4]float32
	for r0 := lo; r0 < hi; r0 += rowTile {
		r1 := min(r0+rowTile, hi)
		t := 0
		if dot4 != nil {
			for ; t+4 <= a.N; t += 4 {
				for r := r0; r < r1; r++ {
					dot4(w[r*rowBytes:(r+1)*rowBytes], a, t, &out)
					y[t*ystride+r] = out[0]
					y[(t+1)*ystride+r] = out[1]
					y[(t+2)*ystride+r] = out[2]
					y[(t+3)*ystride+r] = out[3]
				}
			}
		}
		for ; t < a.N; t++ {
			yt := y[t*ystride : t*ystride+hi]
			for r := r0; r < r1; r++ {
				yt[r] = dot(w[r*rowBytes:(r+1)*rowBytes], a, t)
			}
		}
	}
}

// Accelerated reports whether weight type t has an assembly kernel on this CPU. The portable
// kernels compute the same sums but are slower than a float32 dot in Go, so a caller with a
// float path of its own should use this package only where Accelerated holds.
func Accelerated(t gguf.Type) bool {
	_, ok := asmDots[t]
	return ok && asmOn
}
