//go:build amd64 && !purego

package wkern

import (
	"math"
	"unsafe"
)

//go:generate go run gen_invq6.go gen_ktile.go

// The Q6_K tile kernels (invq6tile_amd64.s, written by gen_invq6.go): 16 rows of Q6_K weights,
// one per zmm lane, read in place, times one token or up to 16 (in groups of eight and one of
// the rest, each super-block unpacked once for all). For every row and token, acc = 0, then per
// super-block b in order
//
//	I   = Σ_G sc_G·Σ_{i∈G} (code_i − 32)·q_i    (exact int32, G the 16 sub-blocks of 16 values)
//	acc = fma(float32(I)·d_t[b], dw[b], acc)
//
// (dw the super-block's f16 scale, d_t the token's Q8_K scale): the one-token kernel and the
// multi-token ones form I differently, but I is exact and the float operations are the same,
// so every output is the same bits whichever tile computes it. Bound: as dotQ6_KGo's, the
// integer sums exact, float32(I) one rounding (|I| < 2³¹), then a product and a fused
// multiply-add per super-block.
//
// The kernels read per super-block and token the operands ops: c_G = −32·Σq_G (the token's
// 16-code sums, int32) and d_t. ops holds, per tile of tokens and super-block, the tile's c
// values (16 per token) then its d values.

//go:noescape
func invQ6_Kx1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, ops unsafe.Pointer, nb int, y unsafe.Pointer)

// The multi-token kernels: invQ6_Kx8r<r> multiplies 16 rows by groups·8 + r tokens (token t's
// codes at q + t·qstride, s a 64-byte aligned scratch), y[t·ystride + i] row i's product with
// token t; one unpacking of each super-block serves all the tokens.
var invQ6Kernels = [8]func(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int){
	invQ6_Kx8r0, invQ6_Kx8r1, invQ6_Kx8r2, invQ6_Kx8r3, invQ6_Kx8r4, invQ6_Kx8r5, invQ6_Kx8r6, invQ6_Kx8r7,
}

//go:noescape
func invQ6_Kx8r0(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ6_Kx8r1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ6_Kx8r2(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ6_Kx8r3(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ6_Kx8r4(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ6_Kx8r5(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ6_Kx8r6(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ6_Kx8r7(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

// q6TileScratchBytes is the multi-token kernels' super-block scratch (kTileScratch.buf).
const q6TileScratchBytes = 6208

// q6Tile is the Q6_K tiles for mulInvTileK: 17 operands per token and super-block.
var q6Tile = kTile{x1: invQ6_Kx1, xr: &invQ6Kernels, opsPer: 17, ops: q6TileOps}

// q6TileOps returns ops (grown) holding the kernels' token operands for every tile of the n
// tokens of a (nb super-blocks each): tile [t, t+tn) at 17·nb·t, per super-block 17·tn values,
// c_G of token t+k at 16k + G (as int32 bits), d at 16·tn + k.
func q6TileOps(ops []int32, a *Act, nb int) []int32 {
	_ = a.BS[a.N*nb*16-1]
	ops = grow(ops, 17*nb*a.N)
	for t := 0; t < a.N; {
		tn := kTileTokens(t, a.N)
		for k := 0; k < tn; k++ {
			bs := a.BS[(t+k)*nb*16 : (t+k+1)*nb*16]
			d := a.D[(t+k)*nb : (t+k+1)*nb]
			for b := range nb {
				o := ops[17*nb*t+17*tn*b:]
				for g := range 16 {
					o[16*k+g] = -32 * int32(bs[16*b+g])
				}
				o[16*tn+k] = int32(math.Float32bits(d[b]))
			}
		}
		t += tn
	}
	return ops
}
