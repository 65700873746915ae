package wkern

import "github.com/kvlab/kvlab/native/gguf"

// invPair is a four-token kernel and a one-token kernel (out[0]) that run the same operations
// per token, so together they give a batch-invariant product.
type invPair struct {
	x4, x1 rowDot4
}

// invDots holds the invariant pairs where there are some (assembly only).
var invDots = map[gguf.Type]invPair{}

// Invariant reports whether MulInvariant multiplies several tokens at once (blocked): with
// false it runs the one-token kernel for every token, still batch-invariant but without
// sharing a weight block's unpacking between tokens.
func (k Kernel) Invariant() bool { return k.inv.x1 != nil }

// invTileRows is the number of weight rows of one tile kernel (one per zmm lane).
const invTileRows = 16

// InvariantRows is the row group MulInvariant works in: a range [lo, hi) whose bounds are
// multiples of it (or hi the matrix's last row) wastes no work on a short group.
func (k Kernel) InvariantRows() int {
	if invTiled(k.typ) {
		return invTileRows
	}
	return 1
}

// MulInvariant is MulRows computed batch-invariantly: every output y[t·ystride + r] is the
// same float32 value, bit for bit, whatever a.N, lo and hi, so a token's results do not
// depend on the tokens multiplied with it (a batched forward pass stays the same as each
// sequence run alone).
//
// Q4_0 and Q8_0 on AVX-512 VNNI run the tile kernels (invtile_amd64.s): for every row and
// token, acc = 0, then per block b in order i = Σ u·q − off·Σq (exact integers: u the
// unsigned codes, Q4_0's nibbles with off 8, Q8_0's codes + 128 with off 128) and
// acc = fma(float32(i)·d_t[b], dw[b], acc); 16 rows × up to 8 tokens share each unpacked
// block, and one token runs the same operations. Q6_K and Q4_K there run their own tiles
// (invq6tile_amd64.go, invq4ktile_amd64.go: per super-block exact integer sums, then a fixed
// few float products and fused multiply-adds). Elsewhere tokens go four at a time
// through a four-token kernel (each weight block unpacked once for the tokens of a call) and
// the rest through a one-token kernel of the same operations; rows in tiles of rowTile, each
// read from memory once for all tokens.
func (k Kernel) MulInvariant(y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	if invTiled(k.typ) {
		mulInvTile(k.typ, y, ystride, w, rowBytes, a, lo, hi)
		return
	}
	if k.inv.x1 == nil {
		mulRowsTail(k, y, ystride, w, rowBytes, a, 0, lo, hi)
		return
	}
	var out [4]float32
	for r0 := lo; r0 < hi; r0 += rowTile {
		r1 := min(r0+rowTile, hi)
		t := 0
		for ; t+4 <= a.N; t += 4 {
			for r := r0; r < r1; r++ {
				k.inv.x4(w[r*rowBytes:(r+1)*rowBytes], a, t, &out)
				y[t*ystride+r] = out[0]
				y[(t+1)*ystride+r] = out[1]
				y[(t+2)*ystride+r] = out[2]
				y[(t+3)*ystride+r] = out[3]
			}
		}
		for ; t < a.N; t++ {
			for r := r0; r < r1; r++ {
				k.inv.x1(w[r*rowBytes:(r+1)*rowBytes], a, t, &out)
				y[t*ystride+r] = out[0]
			}
		}
	}
}
