//go:build amd64 && !purego

package wkern

import (
	"math"
	"unsafe"
)

//go:generate go run gen_invq4k.go gen_ktile.go

// The Q4_K tile kernels (invq4ktile_amd64.s, written by gen_invq4k.go): 16 rows of Q4_K
// weights, one per zmm lane, read in place, times one token or up to 16 (in groups of eight
// and one of the rest, each super-block unpacked once for all). For every row and token,
// acc = 0, then per super-block b in order
//
//	SQ  = Σ_j sc_j·Σ_{i∈j} code_i·q_i     (exact int32, j the 8 sub-blocks of 32 values)
//	SM  = Σ_j m_j·Σ_{i∈j} q_i             (exact int32)
//	x   = fma(−float32(SM), dmin, float32(SQ)·dw)
//	acc = fma(x, d_t[b], acc)
//
// (dw, dmin the super-block's f16 scales, sc_j, m_j its 6-bit sub-block scales and mins, d_t
// the token's Q8_K scale): the one-token kernel and the multi-token ones form SQ and SM
// differently, but they are exact and the float operations are the same, so every output is
// the same bits whichever tile computes it. Bound: as dotQ4_KGo's, the integer sums exact,
// then per super-block two conversions (|SQ|, |SM| < 2²⁵: one rounding each), a product, and
// two fused multiply-adds.
//
// The kernels read per super-block and token the operands ops: the token's 32-code sums s_j as
// int16 word pairs (s0, s2), (s1, s3), (s4, s6), (s5, s7) and d_t. ops holds, per tile of
// tokens and super-block, the tile's pairs (four dwords per token) then its d values.

//go:noescape
func invQ4_Kx1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, ops unsafe.Pointer, nb int, y unsafe.Pointer)

// The multi-token kernels: invQ4_Kx8r<r> multiplies 16 rows by groups·8 + r tokens (token t's
// codes at q + t·qstride, s a 64-byte aligned scratch), y[t·ystride + i] row i's product with
// token t; one unpacking of each super-block serves all the tokens.
var invQ4KKernels = [8]func(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int){
	invQ4_Kx8r0, invQ4_Kx8r1, invQ4_Kx8r2, invQ4_Kx8r3, invQ4_Kx8r4, invQ4_Kx8r5, invQ4_Kx8r6, invQ4_Kx8r7,
}

//go:noescape
func invQ4_Kx8r0(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ4_Kx8r1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ4_Kx8r2(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ4_Kx8r3(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ4_Kx8r4(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ4_Kx8r5(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ4_Kx8r6(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

//go:noescape
func invQ4_Kx8r7(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)

// q4kTileScratchBytes is the multi-token kernels' super-block scratch (kTileScratch.buf).
const q4kTileScratchBytes = 3968

// q4kTile is the Q4_K tiles for mulInvTileK: 5 operands per token and super-block.
var q4kTile = kTile{x1: invQ4_Kx1, xr: &invQ4KKernels, opsPer: 5, ops: q4kTileOps}

// q4kTileOps returns ops (grown) holding the kernels' token operands for every tile of the n
// tokens of a (nb super-blocks each; tiles as kTileTokens cuts them): tile [t, t+tn) at
// 5·nb·t, per super-block 5·tn values, the pairs of token t+k at 4k…4k+3, d at 4·tn + k.
func q4kTileOps(ops []int32, a *Act, nb int) []int32 {
	_ = a.BS32[a.N*nb*8-1]
	ops = grow(ops, 5*nb*a.N)
	for t := 0; t < a.N; {
		tn := kTileTokens(t, a.N)
		for k := 0; k < tn; k++ {
			s := a.BS32[(t+k)*nb*8 : (t+k+1)*nb*8]
			d := a.D[(t+k)*nb : (t+k+1)*nb]
			for b := range nb {
				o := ops[5*nb*t+5*tn*b:]
				s := s[8*b : 8*b+8]
				for i, j := range [4]int{0, 1, 4, 5} {
					o[4*k+i] = int32(uint32(uint16(s[j])) | uint32(uint16(s[j+2]))<<16)
				}
				o[4*tn+k] = int32(math.Float32bits(d[b]))
			}
		}
		t += tn
	}
	return ops
}
