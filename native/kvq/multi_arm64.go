//go:build arm64 && !purego

package kvq

import (
	"encoding/binary"
	"math"
)

// The NEON kernels (multi_arm64.s) serve f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, tq4,
// turbo4 and fp8 on every arm64 CPU: they use only baseline ARMv8.0 Advanced SIMD (FCVTL for f16,
// no FP16 arithmetic, no dot product), which every arm64 target Go supports has. They keep the
// amd64 kernels' precision contract (MultiQuery): codes times the block scale first, exact; one
// fused multiply-add per product; a row's products summed in 16 lanes (value i in lane i mod
// 16), reduced pairwise. tq4's levels are multiplied by its f32 row scale (turbo4: f16), one
// rounding, in the permuted order of tq4Permute; bf16 is widened exactly; iq4_nl's levels are
// looked up (TBL) and scaled as q4_0's codes; q4_1 and q5_1 decode as c·d + m (the product
// exact), q5_0 as (c − 16)·d, the fifth bits spread to bytes with TBL and CMTST; fp8's codes
// widen through f16 to the e4m3 value / 256 (exact) and are multiplied by the row scale × 256
// (one rounding: the codec's decoded value). turbo3 and turbo2 have no NEON kernels yet and
// run DotMany and AccumulateMany per query.
var (
	multiF16  = &multiKernels{multiScoresF16NEON, multiAccF16NEON}
	multiQ8_0 = &multiKernels{multiScoresQ80NEON, multiAccQ80NEON}
	multiQ4_0 = &multiKernels{multiScoresQ40NEON, multiAccQ40NEON}
	multiTQ4  = &multiKernels{multiScoresTQ4NEON, multiAccTQ4NEON}

	multiBF16  = &multiKernels{multiScoresBF16NEON, multiAccBF16NEON}
	multiIQ4NL = &multiKernels{multiScoresIQ4NLNEON, multiAccIQ4NLNEON}
	multiQ4_1  = &multiKernels{multiScoresQ41NEON, multiAccQ41NEON}
	multiQ5_0  = &multiKernels{multiScoresQ50NEON, multiAccQ50NEON}
	multiQ5_1  = &multiKernels{multiScoresQ51NEON, multiAccQ51NEON}

	multiTurbo4 = &multiKernels{multiScoresT4NEON, multiAccT4NEON}
	multiFP8    = &multiKernels{multiScoresFP8NEON, multiAccFP8NEON}

	// No NEON kernels yet: these formats run DotMany and AccumulateMany per query.
	multiTurbo3, multiTurbo2 *multiKernels
)

// fp8Consts are the fp8 kernels' constants: 256 (float32, four lanes), then the f16-bit masks
// 0x4000, 0x3f80 and 0x7c00 (eight halves each) of the e4m3 → f16 widening.
var fp8Consts = func() (c [64]byte) {
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint32(c[4*i:], math.Float32bits(256))
	}
	for k, v := range []uint16{0x4000, 0x3f80, 0x7c00} {
		for i := 0; i < 8; i++ {
			binary.LittleEndian.PutUint16(c[16+16*k+2*i:], v)
		}
	}
	return c
}()

// q5Consts are the q5 kernels' constants: the byte indices that spread a 32-bit qh word to one
// byte per value (bytes 0..15 for values 0..15, 16..31 for values 16..31), then each byte's bit
// mask.
var q5Consts = [48]byte{
	0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
	2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
	1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128,
}

// tq4Planes are tq4Levels as four byte planes, plane k (bytes 16k..16k+15) byte k of each
// level's float32 bits (little-endian): the tables the tq4 kernels' byte lookups (TBL) read
// before interleaving the bytes back into floats.
var tq4Planes = func() (p [64]byte) {
	for i, v := range tq4Levels {
		b := math.Float32bits(v)
		for k := 0; k < 4; k++ {
			p[16*k+i] = byte(b >> (8 * k))
		}
	}
	return p
}()

// The kernels' contracts are multiKernels'. Implemented in multi_arm64.s.

//go:noescape
func multiScoresFP8NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccFP8NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresF16NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccF16NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ80NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ80NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ40NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ40NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresTQ4NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccTQ4NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresBF16NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccBF16NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresIQ4NLNEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccIQ4NLNEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ41NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ41NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ50NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ50NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ51NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ51NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresT4NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccT4NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
