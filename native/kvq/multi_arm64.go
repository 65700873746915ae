//go:build arm64 && !purego

package kvq

import (
	"encoding/binary"
	"math"
)

// The NEON kernels (multi_arm64.s) serve f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, tq4,
// turbo4, turbo3, turbo2 and fp8 on every arm64 CPU: they use only baseline ARMv8.0 Advanced SIMD (FCVTL for f16,
// no FP16 arithmetic, no dot product), which every arm64 target Go supports has. They keep the
// amd64 kernels' precision contract (MultiQuery): codes times the block scale first, exact; one
// fused multiply-add per product; a row's products summed in 16 lanes (value i in lane i mod
// 16), reduced pairwise. tq4's levels are multiplied by its f32 row scale (turbo4: f16), one
// rounding, in the permuted order of tq4Permute; bf16 is widened exactly; iq4_nl's levels are
// looked up (TBL) and scaled as q4_0's codes; q4_1 and q5_1 decode as c·d + m (the product
// exact), q5_0 as (c − 16)·d, the fifth bits spread to bytes with TBL and CMTST; fp8's codes
// widen through f16 to the e4m3 value / 256 (exact) and are multiplied by the row scale × 256
// (one rounding: the codec's decoded value). turbo3's and turbo2's bit-stream codes are spread
// to one byte per value (TBL gathers each value's byte, or pair of bytes for turbo3, and a
// per-lane shift isolates its code), then looked up in the level planes as tq4's; their f16 row
// scale multiplies each row's four reduced sums (scores) or its four weights (accumulate), one
// rounding more than the decoded value's, as on amd64 (AVX-512). q2k's ScoresRangeMulti
// (q2k_arm64.go) scores a group's cells with turbo2's decoder against the queries multiplied
// by the channel scales.
var (
	multiF16  = &multiKernels{scores: multiScoresF16NEON, acc: multiAccF16NEON}
	multiQ8_0 = &multiKernels{scores: multiScoresQ80NEON, acc: multiAccQ80NEON}
	multiQ4_0 = &multiKernels{scores: multiScoresQ40NEON, acc: multiAccQ40NEON}
	multiTQ4  = &multiKernels{scores: multiScoresTQ4NEON, acc: multiAccTQ4NEON}

	multiBF16  = &multiKernels{scores: multiScoresBF16NEON, acc: multiAccBF16NEON}
	multiIQ4NL = &multiKernels{scores: multiScoresIQ4NLNEON, acc: multiAccIQ4NLNEON}
	multiQ4_1  = &multiKernels{scores: multiScoresQ41NEON, acc: multiAccQ41NEON}
	multiQ5_0  = &multiKernels{scores: multiScoresQ50NEON, acc: multiAccQ50NEON}
	multiQ5_1  = &multiKernels{scores: multiScoresQ51NEON, acc: multiAccQ51NEON}

	multiTurbo4 = &multiKernels{scores: multiScoresT4NEON, acc: multiAccT4NEON}
	multiTurbo3 = &multiKernels{scores: multiScoresT3NEON, acc: multiAccT3NEON}
	multiTurbo2 = &multiKernels{scores: multiScoresT2NEON, acc: multiAccT2NEON}
	multiFP8    = &multiKernels{scores: multiScoresFP8NEON, acc: multiAccFP8NEON}
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

// tq4Planes are tq4Levels as four byte planes (levelPlanes): the tables the tq4 kernels' byte
// lookups (TBL) read before interleaving the bytes back into floats. turbo3Planes and
// turbo2Planes are turboLevels3's and turboLevels2's, for the turbo3 and turbo2 kernels;
// q2kPlanes q2kLevels', for q2k's scores kernel.
var (
	tq4Planes    = levelPlanes(tq4Levels[:])
	turbo3Planes = levelPlanes(turboLevels3[:])
	turbo2Planes = levelPlanes(turboLevels2[:])
	q2kPlanes    = levelPlanes(q2kLevels[:])
)

// levelPlanes returns up to 16 levels as four byte planes: plane k (bytes 16k..16k+15) holds
// byte k of each level's float32 bits (little-endian), zeros past the levels.
func levelPlanes(levels []float32) (p [64]byte) {
	for i, v := range levels {
		b := math.Float32bits(v)
		for k := 0; k < 4; k++ {
			p[16*k+i] = byte(b >> (8 * k))
		}
	}
	return p
}

// turbo2Consts are the turbo2 decoders' constants: the byte indices that spread four code bytes
// to one byte per value (bytes 0..15 for values 0..15 of bytes 0..3, 16..31 for values 16..31 of
// bytes 4..7), then each byte's left shift, 6 − 2·(i mod 4), that puts its code in bits 6..7.
var turbo2Consts = func() (c [48]byte) {
	for i := 0; i < 16; i++ {
		c[i], c[16+i], c[32+i] = byte(i/4), byte(4+i/4), byte(6-2*(i%4))
	}
	return c
}()

// turbo3Consts are the turbo3 decoders' constants. A value's 3-bit code lies within the two
// bytes at its bit offset 3i/8; four gathers of eight byte pairs each (bytes 0..15, ..., 48..63;
// halfword lane i of gather g holds value 8g+i's pair) read 32 values from a register that holds
// a group's bytes 0..7 in bytes 0..7 and its bytes 6..13 in bytes 8..15 (the accumulate
// decoders use the first two on a 16-value chunk's bytes 0..7). Bytes 64..79 are each
// halfword's left shift, 13 − (3i mod 8), that puts its code in bits 13..15.
var turbo3Consts = func() (c [80]byte) {
	for g := 0; g < 4; g++ {
		base := 3 * (g % 2) // the second eight values of a 16-value half start at byte 3
		if g >= 2 {
			base += 8 // the second half's bytes 6..13 sit in bytes 8..15
		}
		for i := 0; i < 8; i++ {
			b := base + 3*i/8
			c[16*g+2*i], c[16*g+2*i+1] = byte(b), byte(b+1)
		}
	}
	for i := 0; i < 8; i++ {
		binary.LittleEndian.PutUint16(c[64+2*i:], uint16(13-3*i%8))
	}
	return c
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

//go:noescape
func multiScoresT3NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccT3NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresT2NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccT2NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

// KernelISA names the instruction sets the decode-attention kernels use: NEON on every arm64 CPU.
func KernelISA() string { return "NEON" }
