//go:build ignore

// gen_avx2intacc writes multi_avx2intacc_amd64.s: the integer accumulate (value) kernels of the
// block formats for CPUs with AVX2 (contract and bound in multi_avx2intacc_amd64.go). They are
// the AVX-512 integer kernels' design (gen_intacc.go) on 256-bit registers: per tile of ≤ 64 rows
// and per pair of 32-value blocks, a prepass forms the weights w·d (lane 4b+h: block b of the
// pair, accumulator h), quantizes them to int16 with one scale per lane exactly as the AVX-512
// kernels do, and pairs them row by row; the row loop then takes rows in pairs, widens the two
// rows' codes to interleaved words and adds them into int32 sums with VPMADDWD and VPADDD (or,
// on CPUs with AVX-VNNI, the VEX-coded VPDPWSSD, the kernel's name taking a VNNI), the pair's two
// weights broadcast as one dword; the sums are converted and scaled into the float32
// accumulators once per tile, block and half.
//
// Sixteen 256-bit registers hold the int32 sums of half a block for the four accumulators
// (eight registers, 16 values each), so every block is taken in two halves of 16 values, each
// half a pass over the tile's row pairs that reads only its own bytes of the codes (the nibble
// formats' bytes 0..7, then 8..15: values 0..7 and 16..23, then 8..15 and 24..31; q8_0's values
// 0..15, then 16..31). Only the weight broadcasts (4 loads a row pair and half) are repeated.
// The row loops take two row pairs a step (~2–4% less time than one on AMD Zen 5, per kernel in
// cache, thread CPU time, interleaved). With AVX-VNNI the loop is not bound by VPDPWSSD's
// latency (each sum takes one a row pair): the second pair's products through VPMADDWD and
// VPADDD, which shortens each sum's chain, took 3–17% more time on Zen 5.
//
// Unlike the plain AVX2 scores kernels (gen_avx2int.go, whose row loads bound them), the plain
// AVX2 values row loops are not bound by their row loads on AMD Zen 4. A timing-only build with
// every row load of the row loops replaced by zeroing (VPXOR; prefetches kept, without them the
// prepass's scale loads miss), AccumulateManyMulti over 4096 rows of 128 values, four
// accumulators, thread CPU time, six runs alternated (KVLAB_NO_AVX512), median ns a row in
// cache / streamed: q8_0 9.14 → 8.94 / 11.37 → 10.54, iq4_nl 10.33 → 10.00 / 10.92 → 10.61,
// q4_1's 8-bit kernel 7.94 → 7.55 / 8.73 → 8.53, q4_0's 8-bit kernel within the noise in cache
// / 8.17 → 8.03; attn's TestDecodeBreakdown (values, min ns a row, best of three runs
// alternated): q8_0 10.72 → 9.96, q4_0 8.17 → 7.79, q4_1 8.46 → 8.20, iq4_nl 10.86 → 10.46.
// So at most 0.2–0.8 ns a row (2–7%) is the loads'; the rest is issue-bound (q8_0: 32
// VPMADDWD and 32 VPADDD a row of 128 values, besides the decode and broadcasts). q8_0's int16
// kernel with its row loads pipelined as the scores kernels' are (X10, X11 holding the next row
// pair's 16 bytes, loaded right after the previous pair's interleave; the last step its own
// body) was bit for bit the same and took the same time: 9.16 → 9.21 ns in cache, 11.91 both
// streamed (medians of seven alternations); TestDecodeBreakdown values 10.77 → 10.66 (median of
// four runs' minima, within the noise). It is not kept.
//
// The two-accumulator variants (named with Two) take a whole block a pass: two accumulators'
// sums of 32 values fill the same eight registers, so a row pair's codes are decoded once a
// block and its two weights broadcast once (twice where the decoder needs Y8 and Y9).
//
// Run with `go generate ./native/kvq`.
package main

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// format is one block format's pieces. dec(half) widens the codes of half `half` of the block
// of rows a (R12) and b (R12+R9; R9 = 0 for a lone last row) into Y12 and Y13: dword k of Y12
// holds row a's code of value lo+k in its low word and row b's in its high word, Y13 the same
// for values hi+k (lo, hi = f.lo[half], f.hi[half]). Scratch: Y14, Y15, and where scratch8
// Y8 and Y9 (the weights are broadcast after it); Y10 and Y11 hold the constants consts loads.
type format struct {
	name string
	doc  string
	bs   int // bytes per block
	// off is the integer subtracted from every code, applied once per tile, block and half as
	// off·ΣW (offShift = log2 off).
	off, offShift int
	// min: the block holds a min m (f16 after d): Σ_j w_j·m_j + off·Σ_j w_j·d_j is added in f32.
	min bool
	// lo, hi are the first values of Y12's and Y13's dwords in each half.
	lo, hi [2]int
	consts string
	dec    func(half int) string
	// decS, where set, is the plain AVX2 int16 kernels' decoder in place of dec: dec's layout
	// with the words holding 16·(c − off) (constsS its constants), so that the sums are 16·(Σ W·c
	// − off·ΣW) and T is taken over 16.
	decS    func(half int) string
	constsS string
	// scratch8: dec uses Y8 and Y9, so the two-accumulator kernels broadcast a row pair's
	// weights again for the second half.
	scratch8 bool
	// split: dec leaves values lo..lo+3 and hi..hi+3 in Y12, lo+4..lo+7 and hi+4..hi+7 in Y13
	// (128-bit lanes); the finish swaps the sums' lanes back.
	split bool
	// hi16: the sums of the second 128-bit lane (values hi..) are 16 times the sums of the codes
	// (nibDec8Hi's high nibbles in place); the finish takes T/16 and 16·off·ΣW for them.
	hi16 bool
	// dec8, where set, is the decoder of the 8-bit-weight kernel (kernel8): half `half`'s codes
	// of four rows at addresses a, b, c, d as unsigned bytes in Y12 and Y13 (split layout).
	dec8 func(half int, a, b, c, d string) string
	// steps8 is the four-row steps the 8-bit kernel adds in words before widening them:
	// 32767 / (2·127·(largest code)), 8 for the 4-bit codes, 4 for the 5-bit ones.
	steps8 int
}

// nibDec: the two rows' payload bytes 8h..8h+7 interleaved (a b a b …) and zero-extended to
// words, the low nibbles (values 8h+k) split off by a mask (Y10, 0x000F a word), the high ones
// (values 16+8h+k) by a shift (each word holds one byte).
func nibDec(pay int) func(half int) string {
	return func(half int) string {
		unpck := [2]string{"VPUNPCKLBW", "VPUNPCKHBW"}[half]
		return fmt.Sprintf(`VMOVDQU %[1]d(R12), X12
	%[2]s %[1]d(R12)(R9*1), X12, X12
	VPMOVZXBW X12, Y12
	VPSRLW $4, Y12, Y13
	VPAND Y10, Y12, Y12`, pay, unpck)
	}
}

// q80Dec: the two rows' code bytes 16h..16h+15 interleaved and sign-extended to words: values
// 16h..16h+7 in Y12, 16h+8..16h+15 in Y13.
func q80Dec(half int) string {
	return fmt.Sprintf(`VMOVDQU %[1]d(R12), X14
	VPUNPCKLBW %[1]d(R12)(R9*1), X14, X12
	VPUNPCKHBW %[1]d(R12)(R9*1), X14, X13
	VPMOVSXBW X12, Y12
	VPMOVSXBW X13, Y13`, 2+16*half)
}

// q5Dec works in bytes, 32 codes (both nibbles of the half's eight byte pairs) a vector, then
// widens: the two rows' payload bytes 8h..8h+7, each broadcast to the four quadwords, are
// interleaved in both 128-bit lanes at once (VPUNPCKLBW: P, a b a b …, in each lane), lane 1
// shifted down a nibble (VPSRLVQ, counts 0, 0, 4, 4 by quadword) and masked (Y10, 0x0F a
// byte): lane 0 holds the low nibbles of pairs 0..7 (values 8h..8h+7 of rows a and b), lane 1
// their high nibbles (values 16+8h..). The fifth bits take the same layout: the rows' qh bytes
// interleaved once (VPUNPCKLBW of the two broadcast dwords: a0 b0 a1 b1 a2 b2 a3 b3), copied to
// the code bytes (VPSHUFB, ·avx2IntAccQ5Rep+32h: qh byte h in lane 0, 2+h in lane 1), each
// byte tested for bit k of pair k (·avx2IntAccQ5Bit, VPAND and VPCMPEQB), 16 (Y11, 0x10 a
// byte) kept where set and OR'ed into the codes; VPUNPCKLBW and VPUNPCKHBW with zero give the
// words of Y12 (values lo..lo+3 in lane 0, hi..hi+3 in lane 1) and Y13 (lo+4.., hi+4..), whose
// sums the finish puts back in value order with two VPERM2I128 an accumulator, once per tile,
// block and half (split). Eleven vector operations a half: spreading P from one 128-bit
// interleave with VPERMQ (a lane-crossing shuffle, port 5 on Intel) took twelve and ~2% more
// thread CPU time (AccumulateManyMulti of q5_0 and q5_1 on Zen 4, plain AVX2, in cache and
// streamed, interleaved with the former kernel); widening to words first and testing the bits
// in word vectors took sixteen and three more loads (~3–5% more). On Intel client cores
// (instruction tables, not measured) VPBROADCASTQ from memory is a load alone, so a half issues
// one shuffle (port 5) less: four on ports 1 and 5 where it was five.
func q5Dec(qh, pay int) func(half int) string {
	return func(half int) string {
		return fmt.Sprintf(`VPBROADCASTQ %[1]d(R12), Y12
	VPBROADCASTQ %[1]d(R12)(R9*1), Y13
	VPUNPCKLBW Y13, Y12, Y12
	VPSRLVQ ·avx2IntAccQ5Shift(SB), Y12, Y12
	VPAND Y10, Y12, Y12
	VPBROADCASTD %[2]d(R12), Y14
	VPBROADCASTD %[2]d(R12)(R9*1), Y15
	VPUNPCKLBW Y15, Y14, Y14
	VPSHUFB ·avx2IntAccQ5Rep+%[3]d(SB), Y14, Y14
	VPAND ·avx2IntAccQ5Bit(SB), Y14, Y14
	VPCMPEQB ·avx2IntAccQ5Bit(SB), Y14, Y14
	VPAND Y11, Y14, Y14
	VPOR Y14, Y12, Y12
	VPXOR Y15, Y15, Y15
	VPUNPCKHBW Y15, Y12, Y13
	VPUNPCKLBW Y15, Y12, Y12`, pay+8*half, qh, 32*half)
	}
}

// q5DecS is q5Dec for the plain AVX2 int16 kernels with the codes' offset and a factor 16 in
// the words (format.decS): lane 0 of the interleaved payload bytes P shifted up a nibble
// (VPSLLVQ, counts 4, 4, 0, 0 by quadword) and both lanes masked with 0xF0 (Y10) leave 16·nib
// in each byte, the nibble of its own byte (what crosses a byte is masked off); the fifth bits
// are q5Dec's up to the VPAND with each byte's bit, then VPCMPEQB with zero (Y11) gives 0xFF
// where the bit is clear; VPUNPCKLBW and VPUNPCKHBW of the nibbles with those bytes (in place
// of zero) make words 16·nib − 256·(1 − bit) = 16·(c − 16), c the 5-bit code, signed, in
// q5Dec's split layout. Nine vector operations a half where q5Dec takes eleven (the
// VPAND with 16 and the VPOR go), and the kernel needs no ΣW (the offset is in the codes).
// The sums stay exact: |16·(c − 16)| ≤ 256, so a row pair's product is at most 2·32767·256
// and a 64-row tile's sum at most 32·2·32767·256 < 2³¹; they are 16 times the former kernel's
// (Σ W·c − 16·ΣW), and T is stored over 16, so the finish's T/16·float(16·x) is T·float(x)
// exactly (both scalings by a power of two, T ≥ 2⁻¹⁰⁰): the same results bit for bit.
// Measured on AMD Zen 4, plain AVX2 (KVLAB_NO_AVX512), alternated with the former kernels in
// one process (min of 9 rounds, ns a row of 128 values): q5_0 four accumulators 12.6 → 11.4 in
// cache and 13.1 → 11.8 streamed from huge pages (0.90–0.91×), two 0.88–0.90×, q5_1's int16
// kernel (KVLAB_ACC16) 0.91–0.92×; attn's TestDecodeBreakdown (131072 cells, 32 heads on 8,
// three runs alternated, min ns a row) q5_0 values 12.97–13.35 → 11.91–12.32 and the whole
// step 22.6–23.1 → 21.3–21.7, q5_1 with KVLAB_ACC16 values 13.8–14.5 → 12.8–13.1. The
// AVX-VNNI kernels keep q5Dec (not measured here).
func q5DecS(qh, pay int) func(half int) string {
	return func(half int) string {
		return fmt.Sprintf(`VPBROADCASTQ %[1]d(R12), Y12
	VPBROADCASTQ %[1]d(R12)(R9*1), Y13
	VPUNPCKLBW Y13, Y12, Y12
	VPSLLVQ ·avx2IntAccQ5ShiftL(SB), Y12, Y12
	VPAND Y10, Y12, Y12
	VPBROADCASTD %[2]d(R12), Y14
	VPBROADCASTD %[2]d(R12)(R9*1), Y15
	VPUNPCKLBW Y15, Y14, Y14
	VPSHUFB ·avx2IntAccQ5Rep+%[3]d(SB), Y14, Y14
	VPAND ·avx2IntAccQ5Bit(SB), Y14, Y14
	VPCMPEQB Y11, Y14, Y14
	VPUNPCKHBW Y14, Y12, Y13
	VPUNPCKLBW Y14, Y12, Y12`, pay+8*half, qh, 32*half)
	}
}

// iq4Dec: q5Dec's nibbles without the fifth bits (both rows' payload bytes 8h..8h+7 interleaved
// in both 128-bit lanes from two broadcasts, lane 1 shifted down a nibble, masked with Y10, 0x0F
// a byte), looked up in the codebook as bytes (Y11, the levels + 128 as unsigned bytes,
// VPSHUFB) and widened with zero: the words hold level + 128 (o = 128 comes back out as
// 128·ΣW), Y12 values lo..lo+3 and hi..hi+3, Y13 lo+4.. and hi+4.. (split). Six vector
// operations a half, where widening the interleaved bytes to words first (VPMOVZXBW), setting
// their high bytes to 0x80 so that VPSHUFB clears them, and looking up both words' vectors took
// seven and ~5% more thread CPU time (AccumulateManyMulti of iq4_nl on Zen 4, plain AVX2, in
// cache and streamed, interleaved with the former kernel). The same decoder for q4_0 and q4_1
// (five operations, nibDec's four) took ~2% more than nibDec. On Intel client cores
// (instruction tables) it is one operation less a half on ports 0, 1 and 5, with as many
// shuffles (four, ports 1 and 5; VPMOVZXBW is port 5 alone).
func iq4Dec(half int) string {
	return fmt.Sprintf(`VPBROADCASTQ %[1]d(R12), Y12
	VPBROADCASTQ %[1]d(R12)(R9*1), Y13
	VPUNPCKLBW Y13, Y12, Y12
	VPSRLVQ ·avx2IntAccQ5Shift(SB), Y12, Y12
	VPAND Y10, Y12, Y12
	VPSHUFB Y12, Y11, Y12
	VPXOR Y15, Y15, Y15
	VPUNPCKHBW Y15, Y12, Y13
	VPUNPCKLBW Y15, Y12, Y12`, 2+8*half)
}

const (
	nibConsts = "VMOVDQU ·avx2IntAccW000F(SB), Y10"
	q5Consts  = "VMOVDQU ·avx2Nib(SB), Y10\n\tVMOVDQU ·avx2IntAccB10(SB), Y11"
	q5SConsts = "VMOVDQU ·avx2IntAccBF0(SB), Y10\n\tVPXOR Y11, Y11, Y11"
)

var formats = []format{
	{name: "Q40", doc: "q4_0: d (f16), 16 nibble bytes; x = (c − 8)·d.", bs: 18, off: 8, offShift: 3,
		lo: [2]int{0, 8}, hi: [2]int{16, 24}, consts: nibConsts, dec: nibDec(2), dec8: nibDec8(2), steps8: 8},
	{name: "Q80", doc: "q8_0: d (f16), 32 int8 codes; x = c·d.", bs: 34,
		lo: [2]int{0, 16}, hi: [2]int{8, 24}, dec: q80Dec},
	{name: "Q41", doc: "q4_1: d, m (f16), 16 nibble bytes; x = (c − 8)·d + (m + 8·d).", bs: 20, off: 8, offShift: 3,
		min: true, lo: [2]int{0, 8}, hi: [2]int{16, 24}, consts: nibConsts, dec: nibDec(4), dec8: nibDec8(4), steps8: 8},
	{name: "Q50", doc: "q5_0: d (f16), qh (32 fifth bits), 16 nibble bytes; x = (c − 16)·d.", bs: 22, off: 16, offShift: 4,
		lo: [2]int{0, 8}, hi: [2]int{16, 24}, consts: q5Consts, dec: q5Dec(2, 6), decS: q5DecS(2, 6), constsS: q5SConsts, split: true, dec8: q5Dec8(2, 6), steps8: 4},
	{name: "Q51", doc: "q5_1: d, m (f16), qh, 16 nibble bytes; x = (c − 16)·d + (m + 16·d).", bs: 24, off: 16, offShift: 4,
		min: true, lo: [2]int{0, 8}, hi: [2]int{16, 24}, consts: q5Consts, dec: q5Dec(4, 8), decS: q5DecS(4, 8), constsS: q5SConsts, split: true, dec8: q5Dec8(4, 8), steps8: 4},
	{name: "IQ4NL", doc: "iq4_nl: d (f16), 16 nibble bytes; x = kvalues[c]·d (int8 levels).", bs: 18, off: 128, offShift: 7,
		lo: [2]int{0, 8}, hi: [2]int{16, 24},
		consts: "VMOVDQU ·avx2Nib(SB), Y10\n\tVBROADCASTI128 ·avx2IntAccIQ4Levels(SB), Y11", dec: iq4Dec, split: true},
}

// Frame layout (hardware SP offsets).
const (
	oPB   = 0    // w·d of the tile's rows (lane 4b+h: block b of the pair, accumulator h), a zero row after (65 rows; the adaptive kernels write three, adaptPrepass)
	oQP   = 2080 // int16 weight pairs: pair p at 32p, block b's accumulator h's dword at 32p + 16b + 4h (the adaptive kernels': a8PairsBytes at their frame's end)
	oTT   = 3104 // T per lane
	oSS   = 3136 // off·ΣW per lane (int32)
	oMT   = 3168 // Σ w·m + off·Σ w·d per lane
	oTN   = 3200 // rows in the tile
	oWP   = 3208 // the tile's first weight
	oRL   = 3216 // rows left after this tile
	oBL   = 3224 // blocks left in the row
	oNQ   = 3232 // blocks left in the pair
	oQB   = 3240 // the block's first weight pair
	oPF   = 3248 // prefetch pointer
	frame = 3264
)

const accTmpl = `
// func multiAcc@(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// %DOC%
TEXT ·multiAcc@(SB), 0, $%FRAME%-64
	MOVQ m+40(FP), AX
	TESTQ AX, AX
	JZ   a@_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   a@_done
	%CONSTS%
	MOVQ rows+24(FP), DI
	MOVQ w+48(FP), AX
	MOVQ AX, %WP%(SP)
	MOVQ m+40(FP), AX
	MOVQ AX, %RL%(SP)

a@_tile:
	MOVQ %RL%(SP), AX
	CMPQ AX, $64
	JLE  a@_tn
	MOVQ $64, AX
a@_tn:
	MOVQ AX, %TN%(SP)
	SUBQ AX, %RL%(SP)
	MOVQ rb+32(FP), R12
	SHLQ $6, R12
	ADDQ DI, R12
	MOVQ R12, %PF%(SP)         // the next tile, prefetched %BS% bytes a row-pair step and half
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	MOVQ AX, %BL%(SP)
	XORQ BX, BX                // byte offset of the block in a row
	MOVQ acc+0(FP), CX         // accumulators of the block

a@_bpair:
	// Up to two blocks at a time: R14 is the offset of the second block's scale, 0 for none
	// (its lanes then repeat the first block's, unused).
	MOVQ %BL%(SP), AX
	MOVQ $%BS%, R14
	CMPQ AX, $2
	JGE  a@_nq2
	XORQ R14, R14
	MOVQ AX, %NQ%(SP)
	JMP  a@_nq
a@_nq2:
	MOVQ $2, %NQ%(SP)
a@_nq:
	MOVQ %NQ%(SP), AX
	SUBQ AX, %BL%(SP)

	// w·d per row (lane 4b+h), its largest magnitude per lane (and Σ w·m, Σ w·d), two rows a
	// step with a chain each (row a: Y0, Y1, Y2; row b: Y3, Y4, Y5), joined after.
	LEAQ (DI)(BX*1), R12
	MOVQ %WP%(SP), R8
	LEAQ %PB%(SP), R15
	MOVQ %TN%(SP), R10
	MOVQ wstride+56(FP), R9
	MOVQ rb+32(FP), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	SHRQ $1, R10
	JZ   a@_p1o
a@_p1:
	%P1A%
	%P1B%
	LEAQ (R8)(R9*2), R8
	LEAQ (R12)(R11*2), R12
	ADDQ $64, R15
	DECQ R10
	JNZ  a@_p1
a@_p1o:
	TESTQ $1, %TN%(SP)
	JZ   a@_p1e
	%P1A%
	ADDQ $32, R15
a@_p1e:
	VMAXPS Y3, Y0, Y0
	%MINJOIN%
	VXORPS Y15, Y15, Y15
	VMOVUPS Y15, (R15)         // the zero row that pairs with a lone last row
	%MINSTORE%
	// inv = min(32767/M, cap) and T = 1/inv where M > 0; both 0 where M = 0.
	VXORPS Y12, Y12, Y12
	VCMPPS $0x0E, Y12, Y0, Y1  // M > 0
	VBROADCASTSS ·intAccQMax(SB), Y2
	VDIVPS Y0, Y2, Y14
	VBROADCASTSS ·intAccInvCap(SB), Y3
	VMINPS Y3, Y14, Y14
	VANDPS Y1, Y14, Y14
	VBROADCASTSS ·intAccOne(SB), Y4
	VDIVPS Y14, Y4, Y15
	VANDPS Y1, Y15, Y15
	%TSCALE%
	VMOVUPS Y15, %TT%(SP)

	// W = round(w·d·inv) as int16, rows paired: (W_2p, W_2p+1) per dword; ΣW per lane where
	// the codes have an offset.
	LEAQ %PB%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	INCQ R10
	SHRQ $1, R10
	%SUMZERO%
a@_p2:
	VMULPS (R8), Y14, Y0
	VMULPS 32(R8), Y14, Y1
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	%SUMADD%
	VPSLLD $16, Y1, Y1
	VPBLENDW $0xAA, Y1, Y0, Y0
	VMOVDQU Y0, (R12)
	ADDQ $64, R8
	ADDQ $32, R12
	DECQ R10
	JNZ  a@_p2
	%SUMSTORE%
	LEAQ %QP%(SP), AX
	MOVQ AX, %QB%(SP)
	LEAQ %TT%(SP), R13

a@_blk:
%HALF0%
%HALF1%
	ADDQ $%BS%, BX
	ADDQ $128, CX
	ADDQ $16, %QB%(SP)
	ADDQ $16, R13
	DECQ %NQ%(SP)
	JNZ  a@_blk
	CMPQ %BL%(SP), $0
	JNE  a@_bpair

	MOVQ %TN%(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	IMULQ wstride+56(FP), AX
	ADDQ AX, %WP%(SP)
	CMPQ %RL%(SP), $0
	JNE  a@_tile

a@_done:
	VZEROUPPER
	RET
`

// halfTmpl is one half of a block: the row pairs' codes of the half widened and multiplied into
// int32 sums (Y0..Y7: accumulator h's in Y2h, Y2h+1), then scaled into the accumulators.
const halfTmpl = `	// Half %H%: values %LO%.. and %HI%...
%INIT%
	LEAQ (DI)(BX*1), R12
	MOVQ %QB%(SP), R8
	MOVQ %PF%(SP), R15
	MOVQ rb+32(FP), R9
	LEAQ (R9)(R9*2), R11
	MOVQ %TN%(SP), R10
	SHRQ $2, R10
	JZ   a@_one%H%
a@_pair%H%:
	// Two row pairs a step: rows a and b at R12 and R12+R9, the next two at R12+2·R9 and R12+R11.
	%PF2%
	%DEC%
%DOTS%
	%DEC2%
%DOTS2%
	ADDQ $64, R8
	LEAQ (R12)(R9*4), R12
	DECQ R10
	JNZ  a@_pair%H%
a@_one%H%:
	TESTQ $2, %TN%(SP)
	JZ   a@_odd%H%
	%PF1%
	%DEC%
%DOTS%
	ADDQ $32, R8
	LEAQ (R12)(R9*2), R12
a@_odd%H%:
	MOVQ R15, %PF%(SP)
	TESTQ $1, %TN%(SP)
	JZ   a@_fin%H%
	XORQ R9, R9                // a lone last row: b reads a again, with weight 0
	%DEC%
%DOTS%
a@_fin%H%:
	// acc_h += T·(Σ W·c − off·ΣW) (+ Σ w·m), per accumulator's two vectors (R13: the block's
	// lanes of T; off·ΣW 32 bytes on, Σ w·m 64).
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	MOVQ CX, R12
%FINISH%`

// sumsInit starts the int32 sums Y0..Y7 of a pass (sum r: accumulator (r/2) mod nacc) at zero,
// or where the format has an offset at −off·ΣW of their block and accumulator (the frame's
// off·ΣW lanes, stored negated, 32 bytes on from R13), so that the finish subtracts nothing:
// Σ W·c − off·ΣW is the same int32 (exact, wrapping) either way, and two broadcasts (loads)
// an accumulator stand for its two VPSUBD (ALU operations).
func sumsInit(f format, nacc int) string {
	var b strings.Builder
	for r := 0; r < 8; r++ {
		if f.off == 0 {
			fmt.Fprintf(&b, "\tVPXOR Y%[1]d, Y%[1]d, Y%[1]d\n", r)
			continue
		}
		fmt.Fprintf(&b, "\tVPBROADCASTD %d(R13), Y%d\n", 32+4*((r/2)%nacc), r)
	}
	return strings.TrimRight(b.String(), "\n")
}

// dots adds a row pair's codes (Y12, Y13) times accumulator h's two weights (the dword at
// off+4h(R8), broadcast into Y8 or Y9) into sums base+2h and base+2h+1, h < nacc.
func dots(vnni bool, off, nacc, base int) string {
	return dotsB(vnni, off, nacc, base, true)
}

// dotsB is dots, the weights broadcast first where bcst (else already in Y8, Y9).
func dotsB(vnni bool, off, nacc, base int, bcst bool) string {
	var b strings.Builder
	for h := 0; h < nacc; h++ {
		w := fmt.Sprintf("Y%d", 8+h%2)
		if bcst {
			fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), %s\n", off+4*h, w)
		}
		for i, c := range []string{"Y12", "Y13"} {
			s := base + 2*h + i
			if vnni {
				fmt.Fprintf(&b, "\t%s\n", vexReg(opVPDPWSSD, s, 8+h%2, 12+i))
				continue
			}
			t := fmt.Sprintf("Y%d", 14+i)
			fmt.Fprintf(&b, "\tVPMADDWD %s, %s, %s\n\tVPADDD %s, Y%d, Y%d\n", w, c, t, t, s, s)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// finish is the conversion and scaling of half `half`'s int32 sums (accumulator h's in
// base+2h, base+2h+1, h < nacc).
func finish(f format, half, nacc, base int) string { return finishOff(f, half, nacc, base, false) }

// finishOff is finish; where offInit the sums already hold −off·ΣW (sumsInit), so it
// subtracts nothing.
func finishOff(f format, half, nacc, base int, offInit bool) string {
	var b strings.Builder
	for h := 0; h < nacc; h++ {
		lo, hi := fmt.Sprintf("Y%d", base+2*h), fmt.Sprintf("Y%d", base+2*h+1)
		if f.split {
			fmt.Fprintf(&b, "\tVPERM2I128 $0x31, %[2]s, %[1]s, Y14\n\tVPERM2I128 $0x20, %[2]s, %[1]s, %[1]s\n\tVMOVDQA Y14, %[2]s\n", lo, hi)
		}
		tHi := "Y15"
		if f.hi16 {
			tHi = "Y13"
			fmt.Fprintf(&b, "\tVPBROADCASTD %d(R13), Y14\n\tVPSUBD Y14, %[2]s, %[2]s\n\tVPBROADCASTD %[3]d(R13), Y14\n\tVPSUBD Y14, %[4]s, %[4]s\n",
				32+4*h, lo, o8SS16-o8TT+4*h, hi)
		} else if f.off != 0 && !offInit {
			fmt.Fprintf(&b, "\tVPBROADCASTD %d(R13), Y14\n\tVPSUBD Y14, %[2]s, %[2]s\n\tVPSUBD Y14, %[3]s, %[3]s\n", 32+4*h, lo, hi)
		}
		fmt.Fprintf(&b, "\tVCVTDQ2PS %[1]s, %[1]s\n\tVCVTDQ2PS %[2]s, %[2]s\n", lo, hi)
		fmt.Fprintf(&b, "\tVBROADCASTSS %d(R13), Y15\n", 4*h)
		if f.hi16 {
			fmt.Fprintf(&b, "\tVBROADCASTSS %d(R13), Y13\n", o8T16-o8TT+4*h)
		}
		fmt.Fprintf(&b, "\tVMOVUPS %d(R12), Y8\n\tVMOVUPS %d(R12), Y9\n", 4*f.lo[half], 4*f.hi[half])
		if f.min {
			fmt.Fprintf(&b, "\tVBROADCASTSS %d(R13), Y14\n\tVADDPS Y14, Y8, Y8\n\tVADDPS Y14, Y9, Y9\n", 64+4*h)
		}
		fmt.Fprintf(&b, "\tVFMADD231PS Y15, %s, Y8\n\tVFMADD231PS %s, %s, Y9\n", lo, tHi, hi)
		fmt.Fprintf(&b, "\tVMOVUPS Y8, %d(R12)\n\tVMOVUPS Y9, %d(R12)\n", 4*f.lo[half], 4*f.hi[half])
		if h < nacc-1 {
			b.WriteString("\tADDQ DX, R12\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// prefetch is n prefetches a line apart from R15 (the next tile's rows: the tile after next,
// as before, streamed 0.73 ns a row slower for q8_0, 0.15 for q4_0, 0.08 for iq4_nl, medians
// of the per-round differences, 40 rounds interleaved by call, Zen 4, plain AVX2, load 6; a
// PREFETCHT1 8 or 16 KiB further on besides cost 0.3–1.2 ns a row), which then moves step
// bytes on: the
// four-accumulator kernels prefetch the row pairs' bytes of their block over both halves, so one
// line a step where the step (two row pairs' blocks) is at most a line, and two for q8_0's 68
// bytes, which one a step left a line in 17 unprefetched (streamed, nine runs on a busy Zen 4,
// plain AVX2, interleaved with one a step: −4% to +1% thread CPU time, median −2%; in cache the
// same); the two-accumulator kernels take a block in one pass, so all of the step's bytes.
// q8_0's AVX-VNNI kernel (multiAccQ80VNNIINT) on an Intel Xeon (KVLAB_NO_AVX512, load ~22,
// attn's TestDecodeBreakdown, five alternations, values min ns a row, 13.24–13.61 as it is):
// prefetching the tile after next with PREFETCHT1 (what Intel's AVX-512 q8_0 kernel takes,
// pickFar) 13.44–14.40, with PREFETCHT0 11.89–13.82, the next tile with PREFETCHT1 12.76–14.81:
// none better beyond the noise.
//
// q4_0's 8-bit AVX-VNNI kernel (multiAccQ40B8VNNIINT) on the same Xeon (scratch flavours
// alternated in one process: AccumulateManyMulti over 256 MiB of rows on 2 MiB pages in calls
// of 16384 rows, four accumulators, three runs each, load 5–15, ns a row streamed, min; main
// 7.8–8.4): a PREFETCHT1 4, 8, 16, 32 or 64 KiB beyond each PREFETCHT0, or 1, 2, 3 tiles
// beyond, within ±0.3 or worse; the PREFETCHT0 two, three or four tiles ahead, or both one
// and two, within ±0.3; a PREFETCHT1 32 KiB (16, 64) past the rows of each four-row step of
// the first half-block pass (one a 288-byte step) or of each first-prepass row pair, +0.3 to
// +1.0; PREFETCHT2 32 KiB beyond, +0.3. On 4 KiB pages (the plain Go heap) a PREFETCHT1 16–32
// KiB beyond took 0.6–0.9 ns a row off (7.4–8.3 → 6.5–7.1), which on 2 MiB pages it does not:
// the TLB's, not the streamer's. q8_0's int16 AVX-VNNI kernel (multiAccQ80VNNIINT), as above:
// PREFETCHT1 one, two or three tiles beyond beside its PREFETCHT0s 10.3–13.8 against
// 12.4–14.1, PREFETCHT0 two tiles ahead in place of the next or beside it 11.7–13.4 (noise at
// load 5–10). Where the time goes, q4_0's kernel in cache (timing-only builds, ns a row of
// 5.8): the row loop 2.6 (16 VPDPBUSD a row: 2.0 at two a cycle), the first prepass (w·d and
// its maximum) 1.2, the second (the packed weights) 0.7, the finish 0.6; without its row loop
// it still took 8.1 streamed (4 KiB pages): the stream, not the arithmetic, sets its pace there.
// farTiles moves the 8-bit nibble and 5-bit kernels' prefetches to the tile after next on Intel
// (avx2AccPFRows); without any prefetch q4_0's AVX-VNNI values took 11.7–12.1 ns a row in the
// decode against 9.1–9.5 (TestDecodeBreakdown, three rounds), iq4_nl's 12.4–13.2 against
// 10.7–11.4.
func prefetch(step, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "PREFETCHT0 %d(R15)\n\t", 64*i)
	}
	fmt.Fprintf(&b, "ADDQ $%d, R15", step)
	return b.String()
}

// second is decoder text dec for the second row pair of a step: rows R12+2·R9 and R12+R11.
func second(dec string) string {
	dec = strings.ReplaceAll(dec, "(R12)(R9*1)", "@B@")
	dec = strings.ReplaceAll(dec, "(R12)", "(R12)(R9*2)")
	return strings.ReplaceAll(dec, "@B@", "(R12)(R11*1)")
}

func u32(v float32) uint32 { return math.Float32bits(v) }

// words writes a 32-byte constant of 16 words.
func words(b *strings.Builder, name string, w [16]uint16) {
	for i := 0; i < 16; i += 4 {
		fmt.Fprintf(b, "DATA ·%s+%d(SB)/8, $0x%04x%04x%04x%04x\n", name, 2*i, w[i+3], w[i+2], w[i+1], w[i])
	}
	fmt.Fprintf(b, "GLOBL ·%s(SB), RODATA|NOPTR, $32\n\n", name)
}

func splat(v uint16) (w [16]uint16) {
	for i := range w {
		w[i] = v
	}
	return w
}

func header() string {
	var b strings.Builder
	b.WriteString(`// Code generated by gen_avx2intacc.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// AVX2 integer accumulate kernels of the block formats (multi_avx2intacc_amd64.go states the
// contract): per tile of ≤ 64 rows and per pair of 32-value blocks, the weights w·d quantized
// to int16 with one scale per block and accumulator, rows taken in pairs, the two rows' codes
// widened to interleaved words and summed into int32 with VPMADDWD and VPADDD (or AVX-VNNI's
// VPDPWSSD), converted and scaled once per tile, block and half block.

`)
	words(&b, "avx2IntAccW000F", splat(0x000F))
	words(&b, "avx2IntAccB10", splat(0x1010))
	words(&b, "avx2IntAccBF0", splat(0xF0F0))
	b.WriteString("DATA ·avx2IntAccNibHi+0(SB)/8, $0x0f0f0f0f0f0f0f0f\nDATA ·avx2IntAccNibHi+8(SB)/8, $0x0f0f0f0f0f0f0f0f\n")
	b.WriteString("DATA ·avx2IntAccNibHi+16(SB)/8, $0xf0f0f0f0f0f0f0f0\nDATA ·avx2IntAccNibHi+24(SB)/8, $0xf0f0f0f0f0f0f0f0\n")
	b.WriteString("GLOBL ·avx2IntAccNibHi(SB), RODATA|NOPTR, $32\n\n")
	b.WriteString("DATA ·avx2IntAccQ5ShiftL+0(SB)/8, $4\nDATA ·avx2IntAccQ5ShiftL+8(SB)/8, $4\n")
	b.WriteString("DATA ·avx2IntAccQ5ShiftL+16(SB)/8, $0\nDATA ·avx2IntAccQ5ShiftL+24(SB)/8, $0\n")
	b.WriteString("GLOBL ·avx2IntAccQ5ShiftL(SB), RODATA|NOPTR, $32\n\n")
	fmt.Fprintf(&b, "DATA ·avx2IntAccSixteenth+0(SB)/4, $0x%08x\nGLOBL ·avx2IntAccSixteenth(SB), RODATA|NOPTR, $4\n\n", u32(1.0/16))
	// q5Dec's constants (the shifts iq4Dec's too): the quadword shifts, the qh byte copies of
	// half h (qh byte pair h in lane 0, 2+h in lane 1) and the bit of pair k (bit k, bytes 2k
	// and 2k+1 of each lane).
	b.WriteString("DATA ·avx2IntAccQ5Shift+0(SB)/8, $0\nDATA ·avx2IntAccQ5Shift+8(SB)/8, $0\n")
	b.WriteString("DATA ·avx2IntAccQ5Shift+16(SB)/8, $4\nDATA ·avx2IntAccQ5Shift+24(SB)/8, $4\n")
	b.WriteString("GLOBL ·avx2IntAccQ5Shift(SB), RODATA|NOPTR, $32\n\n")
	for h := 0; h < 2; h++ {
		for q := 0; q < 4; q++ {
			src := h
			if q >= 2 {
				src = 2 + h
			}
			var v uint64
			for i := 0; i < 8; i++ {
				v |= uint64(2*src+i%2) << (8 * i)
			}
			fmt.Fprintf(&b, "DATA ·avx2IntAccQ5Rep+%d(SB)/8, $0x%016x\n", 32*h+8*q, v)
		}
	}
	b.WriteString("GLOBL ·avx2IntAccQ5Rep(SB), RODATA|NOPTR, $64\n\n")
	for q := 0; q < 4; q++ {
		var v uint64
		for i := 0; i < 8; i++ {
			v |= uint64(1<<(4*(q%2)+i/2)) << (8 * i)
		}
		fmt.Fprintf(&b, "DATA ·avx2IntAccQ5Bit+%d(SB)/8, $0x%016x\n", 8*q, v)
	}
	b.WriteString("GLOBL ·avx2IntAccQ5Bit(SB), RODATA|NOPTR, $32\n\n")
	for i := 0; i < 32; i += 8 {
		fmt.Fprintf(&b, "DATA ·avx2IntAccAbsV+%d(SB)/8, $0x7fffffff7fffffff\n", i)
	}
	b.WriteString("GLOBL ·avx2IntAccAbsV(SB), RODATA|NOPTR, $32\n\n")
	var lv [2]uint64
	for i, v := range [16]int{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113} {
		lv[i/8] |= uint64(v+128) << (8 * (i % 8))
	}
	fmt.Fprintf(&b, "DATA ·avx2IntAccIQ4Levels+0(SB)/8, $0x%016x\nDATA ·avx2IntAccIQ4Levels+8(SB)/8, $0x%016x\n", lv[0], lv[1])
	b.WriteString("GLOBL ·avx2IntAccIQ4Levels(SB), RODATA|NOPTR, $16\n\n")
	// The 8-bit kernels' constants: the prepass's byte transpose (dword i of a lane takes bytes
	// i, 4+i, 8+i, 12+i), and the weights' scale 127.
	for q := 0; q < 4; q++ {
		var v uint64
		for k := 0; k < 8; k++ {
			i, r := (8*(q%2)+k)/4, k%4
			v |= uint64(4*r+i) << (8 * k)
		}
		fmt.Fprintf(&b, "DATA ·avx2IntAccB8T+%d(SB)/8, $0x%016x\n", 8*q, v)
	}
	b.WriteString("GLOBL ·avx2IntAccB8T(SB), RODATA|NOPTR, $32\n\n")
	// q5Dec8's: qh dword h to lane 0's dwords and 2+h to lane 1's (half h), and the shifts.
	for h := 0; h < 2; h++ {
		for q := 0; q < 4; q++ {
			src := h
			if q >= 2 {
				src = 2 + h
			}
			var v uint64
			for i := 0; i < 8; i++ {
				v |= uint64(4*src+i%4) << (8 * i)
			}
			fmt.Fprintf(&b, "DATA ·avx2IntAccB8Q5Rep+%d(SB)/8, $0x%016x\n", 32*h+8*q, v)
		}
	}
	b.WriteString("GLOBL ·avx2IntAccB8Q5Rep(SB), RODATA|NOPTR, $64\n\n")
	for i := 0; i < 16; i++ {
		k := i % 4
		sh := 4 - k
		if i >= 8 {
			sh = k
		}
		fmt.Fprintf(&b, "DATA ·avx2IntAccB8Q5Sh+%d(SB)/4, $%d\n", 4*i, sh)
	}
	b.WriteString("GLOBL ·avx2IntAccB8Q5Sh(SB), RODATA|NOPTR, $64\n\n")
	fmt.Fprintf(&b, "DATA ·avx2A8RatioQ80+0(SB)/4, $0x%08x\nGLOBL ·avx2A8RatioQ80(SB), RODATA|NOPTR, $4\n\n", u32(a8RatioQ80))
	fmt.Fprintf(&b, "DATA ·avx2A8RatioQ50+0(SB)/4, $0x%08x\nGLOBL ·avx2A8RatioQ50(SB), RODATA|NOPTR, $4\n\n", u32(a8RatioQ50))
	fmt.Fprintf(&b, "DATA ·avx2A8RatioIQ4NL+0(SB)/4, $0x%08x\nGLOBL ·avx2A8RatioIQ4NL(SB), RODATA|NOPTR, $4\n\n", u32(a8RatioIQ4))
	fmt.Fprintf(&b, "DATA ·avx2A8Sixteen+0(SB)/4, $0x%08x\nGLOBL ·avx2A8Sixteen(SB), RODATA|NOPTR, $4\n\n", u32(16))
	return b.String()
}

// p1 is one row's step of the first prepass: row a's registers and addresses, or row b's (the
// next row: weights R9, bytes R11 on; products stored 32 bytes on). R14 is the second block's
// scale offset.
//
// The prepass is about a fifth of a plain AVX2 int16 kernel's time (the first pass removed:
// 0.84× for q8_0 in cache, the second 0.93–0.96×). Measured on AMD Zen 4, plain AVX2 (each
// kernel alone over 256 rows in cache and 2¹⁹ rows streamed from huge pages, 128 values, four
// accumulators, thread CPU time, alternated with this kernel in one process, 9–21 rounds, min
// ratios): without the scales' gather (d = 1, an upper bound, not a kernel) 0.92–0.97× for
// q8_0 and iq4_nl, 0.85–0.91× for q4_0's 8-bit kernel; with inv taken off M's division (the
// second pass not waiting on it) 0.99–1.00×, so no latency bubble stands between the passes.
// What did not pay (same measurement):
//   - the four scales of a row pair gathered as words in a general register (MOVWLZX, shifts,
//     ORs), stored and broadcast back as a quadword (or VMOVQ and VPUNPCKLQDQ), converted by one
//     VCVTPH2PS and spread by two VPERMILPS, three vector operations a row pair where this takes
//     eight: 1.02–1.04× (constants in registers), 1.00–1.08× (from memory);
//   - the |x| mask held in a register: 0.97–1.02×, noise;
//   - four rows a step here and two row pairs a step in the second pass (half the loop's pointer
//     and counter operations): 0.99–1.01×;
//   - M as the unsigned maximum of the products' bits (VPMAXUD, one operation a row where VANDPS
//     and VMAXPS take two; exact where every product is finite and ≥ +0, else M taken again):
//     q8_0 (d ≥ 0) within the noise, q4_0, q5_0 and iq4_nl 1.03–1.06×, whose encoders write
//     negative scales (d = max/−8, max/−16), so the second scan runs in most tiles.
func p1(f format, b bool, nacc int) string {
	w, s, s2, pr, ab, mx, wm, wd := "Y12", "Y13", "Y14", "Y15", "Y14", "Y0", "Y1", "Y2"
	wa, ra, st := "(R8)", "(R12)", "(R15)"
	rb := "(R12)(R14*1)"
	if b {
		w, s, s2, pr, ab, mx, wm, wd = "Y6", "Y7", "Y8", "Y9", "Y8", "Y3", "Y4", "Y5"
		wa, ra, st, rb = "(R8)(R9*1)", "(R12)(R11*1)", "32(R15)", "(R12)(R11*1)"
	}
	var x strings.Builder
	if nacc == 2 {
		// The row's two weights in lanes 4b and 4b+1, the others zero.
		fmt.Fprintf(&x, "VMOVQ %s, X%s\n\tVPERMQ $0x44, %s, %s\n\t", wa, w[1:], w, w)
	} else {
		fmt.Fprintf(&x, "VBROADCASTF128 %s, %s\n\t", wa, w)
	}
	// The pair's scales: block 0's at ra (off 0), block 1's at R14 on; row b's second block is
	// at R12 + R11 + R14, one register short of an address, so R14 is added to a copy.
	rb1 := rb
	if b {
		x.WriteString("LEAQ (R12)(R14*1), AX\n\t")
		rb1 = "(AX)(R11*1)"
	}
	if !f.min {
		// d (f16) of block 0 in words 0..3 and block 1's in words 4..7 (VPBROADCASTW, VPBLENDD),
		// converted: lanes 0..3 and 4..7.
		fmt.Fprintf(&x, "VPBROADCASTW %s, X%[2]s\n\tVPBROADCASTW %[3]s, X%[4]s\n\tVPBLENDD $0x0C, X%[4]s, X%[2]s, X%[2]s\n\tVCVTPH2PS X%[2]s, %[5]s\n\t",
			ra, s[1:], rb1, s2[1:], s)
		fmt.Fprintf(&x, "VMULPS %s, %s, %s\n\tVMOVUPS %s, %s\n\tVANDPS ·avx2IntAccAbsV(SB), %s, %s\n\tVMAXPS %s, %s, %s",
			w, s, pr, pr, st, pr, ab, ab, mx, mx)
		return x.String()
	}
	// d and m (f16, adjacent) of block 0 as dwords 0..1 and block 1's as dwords 2..3
	// (VPBROADCASTD, VPBLENDD), converted (s: d m d m in each 128-bit lane) and spread
	// (VPERMILPS): d in s2, then m in s. Where the formats without m load their d the same way
	// (the dword's other half a code byte pair), q4_0, q8_0, q5_0 and iq4_nl took ~1% more thread
	// CPU time than with two VPBROADCASTW; with d and m loaded apart (four VPBROADCASTW, two
	// VPBLENDD and two VCVTPH2PS a row and pair) q4_1 and q5_1 took 1–2% more (AccumulateManyMulti
	// on Zen 4, plain AVX2, in cache, interleaved). On Intel client cores (instruction tables)
	// VPBROADCASTW from memory is a load and a port-5 shuffle, VPBROADCASTD a load alone, and
	// VCVTPH2PS of a YMM two operations (ports 0 or 1, and 5): a row and pair takes five vector
	// operations, three on port 5, where loading d and m apart took ten, six on port 5.
	fmt.Fprintf(&x, "VPBROADCASTD %s, X%[2]s\n\tVPBROADCASTD %[3]s, X%[4]s\n\tVPBLENDD $0x0C, X%[4]s, X%[2]s, X%[2]s\n\tVCVTPH2PS X%[2]s, %[5]s\n\tVPERMILPS $0x00, %[5]s, %[6]s\n\t",
		ra, s[1:], rb1, s2[1:], s, s2)
	fmt.Fprintf(&x, "VMULPS %s, %s, %s\n\tVMOVUPS %s, %s\n\tVANDPS ·avx2IntAccAbsV(SB), %s, %s\n\tVMAXPS %s, %s, %s",
		w, s2, pr, pr, st, pr, ab, ab, mx, mx)
	fmt.Fprintf(&x, "\n\tVPERMILPS $0x55, %s, %s\n\tVFMADD231PS %s, %s, %s\n\tVADDPS %s, %s, %s", s, s, w, s, wm, pr, wd, wd)
	return x.String()
}

func main() {
	var out strings.Builder
	out.WriteString(header())
	for _, nacc := range []int{4, 2} {
		for _, vnni := range []bool{false, true} {
			for _, f := range formats {
				kernel(&out, f, vnni, nacc)
			}
		}
	}
	for _, f := range formats {
		if f.dec8 != nil {
			kernel8(&out, f, 4, false)
			kernel8(&out, f, 2, false)
		}
	}
	kernel8u(&out, formats[4], 4, false) // q5_1
	kernel8u(&out, formats[4], 2, false)
	kernelA8(&out, formats[1], 4, false) // q8_0
	kernelA8(&out, formats[1], 2, false)
	kernelA8Q5(&out, formats[3], 4, false) // q5_0
	kernelA8Q5(&out, formats[3], 2, false)
	kernelA8IQ4(&out, formats[5], 4, false) // iq4_nl
	kernelA8IQ4(&out, formats[5], 2, false)
	// The AVX-VNNI forms of the 8-bit kernels (vnni8): q4_0's, q4_1's, q8_0's and iq4_nl's,
	// q5_0's adaptive and q5_1's unsigned ones.
	for _, nacc := range []int{4, 2} {
		for _, f := range []format{formats[0], formats[2]} {
			var b strings.Builder
			kernel8(&b, f, nacc, true)
			out.WriteString(vnni8(b.String()))
		}
		kernelA8(&out, formats[1], nacc, true)
		kernelA8IQ4(&out, formats[5], nacc, true)
	}
	for _, nacc := range []int{4, 2} {
		kernelA8Q5(&out, formats[3], nacc, true)
		var b strings.Builder
		kernel8u(&b, formats[4], nacc, true)
		out.WriteString(vnni8(b.String()))
	}
	s := farTiles(out.String())
	for strings.Contains(s, "\n\t\n") {
		s = strings.ReplaceAll(s, "\n\t\n", "\n")
	}
	if err := os.WriteFile("multi_avx2intacc_amd64.s", []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// farTileKernels are the kernels whose prefetches run avx2AccPFRows rows ahead (farTiles): on
// Intel the tile after next, which the previous session's sweep (prefetch's comment) saw pay
// for iq4_nl and q5_0 alone and this one measured again per format, in the decode
// (multi_avx2intacc_amd64.go has the figures). Not kept (Intel Xeon, KVLAB_NO_AVX512, attn's
// TestDecodeBreakdown, three rounds, load ~5): the values of a call over 1024 rows or more
// taken a tile of 64 (128, 256) rows a call from the call's two halves in turn (two streams,
// a prototype in multiAccStride; a rounding change, the tiles' sums added in another order):
// values iq4_nl 10.4–10.8 → 9.5–9.9, q4_0 8.9–9.0 → 8.7–9.1, q4_1 within the noise, q8_0 12.1–13.1
// → 12.5–13.5 (128 and 256 rows no better): the tile after next gives iq4_nl as much, bit for bit.
// Also not kept: the next tile's lines prefetched in the first block pair's passes (two
// PREFETCHT0 a four-row step, the step doubled, so the pointer runs on past the tile after
// next; q4_0's, q4_1's and iq4_nl's kernels, four alternations, AVX-VNNI): values q4_0
// 8.40–8.64 → 9.38–10.01, q4_1 8.33–8.83 → 9.38–9.77, iq4_nl 9.14–9.42 → 9.59–10.78 (bursts of
// prefetches cost); q8_0's int16 kernels at 96 or 128 rows (five and six rounds in one binary,
// load 10–14): values within the noise of 64's on both paths.
var farTileKernels = []string{"multiAccQ40B8AVX2INT", "multiAccQ41B8AVX2INT", "multiAccQ50A8AVX2INT",
	"multiAccQ51U8AVX2INT", "multiAccIQ4NLA8AVX2INT", "multiAccQ40B8VNNIINT", "multiAccQ41B8VNNIINT",
	"multiAccQ50A8VNNIINT", "multiAccQ51U8VNNIINT", "multiAccIQ4NLA8VNNIINT"}

// farTiles is the kernels' text s with farTileKernels' prefetch pointer set avx2AccPFRows rows
// past the tile's start (multi_avx2intacc_amd64.go) in place of one tile, 64 rows.
func farTiles(s string) string {
	const old = "\tMOVQ rb+32(FP), R12\n\tSHLQ $6, R12\n\tADDQ DI, R12\n"
	for _, name := range farTileKernels {
		i := strings.Index(s, "TEXT ·"+name+"(SB)")
		j := -1
		if i >= 0 {
			j = strings.Index(s[i:], "\tRET\n")
		}
		if j < 0 || strings.Count(s[i:i+j], old) != 1 {
			panic("farTiles: " + name)
		}
		t := strings.Replace(s[i:i+j], old, "\tMOVQ rb+32(FP), R12\n\tIMULQ ·avx2AccPFRows(SB), R12\n\tADDQ DI, R12\n", 1)
		s = s[:i] + t + s[i+j:]
	}
	return s
}

// kernel writes f's kernel for nacc accumulators (4, or 2: the two-accumulator variant, named
// with Two, which takes a whole block a pass: sums Y0..Y3 for values of half 0, Y4..Y7 half 1).
func kernel(out *strings.Builder, f format, vnni bool, nacc int) {
	{
		{
			name := f.name + "AVX2INT"
			doc := f.doc
			if vnni {
				name = f.name + "VNNIINT"
				doc += " AVX-VNNI (VEX VPDPWSSD)."
			}
			if nacc == 2 {
				name = f.name + "Two" + name[len(f.name):]
				doc += " Two accumulators."
			}
			minStore, minJoin := "", ""
			if f.min {
				minStore = fmt.Sprintf("MOVL $0x%08x, AX\n\tVMOVD AX, X8\n\tVPBROADCASTD X8, Y8\n\tVFMADD231PS Y8, Y2, Y1\n\tVMOVUPS Y1, %d(SP)", u32(float32(f.off)), oMT)
				minJoin = "VADDPS Y4, Y1, Y1\n\tVADDPS Y5, Y2, Y2"
			}
			// The plain AVX2 kernels start their sums at −off·ΣW (sumsInit) and form ΣW only
			// where the format has an offset (q8_0 none: two VPADDD a row pair and block pair
			// less). Zen 4, plain
			// AVX2, attn's TestDecodeBreakdown alternated three times with the former kernels
			// (values, min ns a row): q8_0 10.55–10.77 → 10.34–10.59; iq4_nl and q5_0 the same
			// within the noise (a VPSUBD pair an accumulator, half, block and tile is ~1
			// operation a row). Where the format has a scaled decoder (decS) they take it, its
			// words 16·(c − off), so the offset is in the codes (fk.off 0) and T is stored
			// over 16. The AVX-VNNI kernels (VPDPWSSD: q8_0's on AVX-VNNI CPUs, the others' under
			// KVLAB_ACC16) start their sums at −off·ΣW too, so q8_0's forms no ΣW either (the same
			// integers, bit for bit; on the Intel Xeon at load ~20, TestDecodeBreakdown, five
			// alternations, q8_0's values within the noise, 13.10–13.93 → 13.35–14.60 ns a row in
			// cache and 14.62–15.95 → 14.86–16.46 streamed).
			fk, dec, consts, tScale := f, f.dec, f.consts, ""
			if !vnni && f.decS != nil {
				fk.off, dec, consts = 0, f.decS, f.constsS
				tScale = "VBROADCASTSS ·avx2IntAccSixteenth(SB), Y13\n\tVMULPS Y13, Y15, Y15"
			}
			sumStore, sumZero, sumAdd := "", "", ""
			if fk.off != 0 {
				sumZero, sumAdd = "VPXOR Y6, Y6, Y6", "VPADDD Y0, Y1, Y2\n\tVPADDD Y2, Y6, Y6"
			}
			if fk.off != 0 { // stored negated, as sumsInit takes it
				sumStore = fmt.Sprintf("VPSLLD $%d, Y6, Y6\n\tVPXOR Y7, Y7, Y7\n\tVPSUBD Y6, Y7, Y6\n\tVMOVDQU Y6, %d(SP)", f.offShift, oSS)
			}
			init := func(nacc int) string { return sumsInit(fk, nacc) }
			var halves [2]string
			if nacc == 4 {
				for h := 0; h < 2; h++ {
					halves[h] = strings.NewReplacer("%H%", fmt.Sprint(h), "%LO%", fmt.Sprint(f.lo[h]), "%HI%", fmt.Sprint(f.hi[h]),
						"%DEC%", dec(h), "%DOTS%", dots(vnni, 0, 4, 0), "%DEC2%", second(dec(h)), "%DOTS2%", dots(vnni, 32, 4, 0),
						"%FINISH%", finishOff(fk, h, 4, 0, true), "%INIT%", init(4), "%PF1%", prefetch(f.bs, 1), "%PF2%", prefetch(2*f.bs, (2*f.bs+63)/64)).Replace(halfTmpl)
				}
			} else {
				// One pass: both halves' codes of a row pair, each half's sums apart.
				dec1 := dec(0) + "\n" + dots(vnni, 0, 2, 0) + "\n\t" + dec(1)
				dec2 := second(dec(0)) + "\n" + dots(vnni, 32, 2, 0) + "\n\t" + second(dec(1))
				halves[0] = strings.NewReplacer("%H%", "0", "%LO%", "0", "%HI%", "0",
					"%DEC%", dec1, "%DOTS%", dotsB(vnni, 0, 2, 4, f.scratch8), "%DEC2%", dec2, "%DOTS2%", dotsB(vnni, 32, 2, 4, f.scratch8),
					"%FINISH%", finishOff(fk, 0, 2, 0, true)+"\n\tMOVQ CX, R12\n"+finishOff(fk, 1, 2, 4, true), "%INIT%", init(2),
					"%PF1%", prefetch(2*f.bs, (2*f.bs+63)/64), "%PF2%", prefetch(4*f.bs, (4*f.bs+63)/64)).Replace(halfTmpl)
				halves[0] = strings.Replace(halves[0], "// Half 0: values 0.. and 0...", "// The whole block, both halves' sums apart.", 1)
			}
			s := strings.NewReplacer("%HALF0%", halves[0], "%HALF1%", halves[1]).Replace(accTmpl)
			// The prepass's |x| mask comes from memory (Y10, Y11 hold the decoders' constants).
			p1a, p1b := p1(f, false, nacc), p1(f, true, nacc)
			r := strings.NewReplacer("@", name, "%DOC%", doc, "%CONSTS%", consts, "%TSCALE%", tScale,
				"%FRAME%", fmt.Sprint(frame), "%BS%", fmt.Sprint(f.bs),
				"%PB%", fmt.Sprint(oPB), "%QP%", fmt.Sprint(oQP), "%TT%", fmt.Sprint(oTT), "%TN%", fmt.Sprint(oTN),
				"%WP%", fmt.Sprint(oWP), "%RL%", fmt.Sprint(oRL), "%BL%", fmt.Sprint(oBL), "%NQ%", fmt.Sprint(oNQ),
				"%QB%", fmt.Sprint(oQB), "%PF%", fmt.Sprint(oPF),
				"%P1A%", p1a, "%P1B%", p1b, "%MINJOIN%", minJoin,
				"%MINSTORE%", minStore, "%SUMSTORE%", sumStore, "%SUMZERO%", sumZero, "%SUMADD%", sumAdd)
			out.WriteString(r.Replace(s))
		}
	}
}

// The 8-bit-weight kernels (named B8, multi_avx2intacc_amd64.go states their bound): the
// prepass is the int16 kernels' with 127 in place of 32767, each weight W = round(w·d·inv)
// in −127..127, rows grouped by four (W_4g..W_4g+3 a dword, lane 4b+h); the row loop takes
// four rows a step, their codes of a half interleaved so that each dword holds one value's
// four codes (unsigned bytes 0..15), and multiplies them by a query's weight dword with
// VPMADDUBSW (32 products an operation, two adjacent summed into a word), adding the words
// with VPADDW; every eight steps (32 rows) VPMADDWD by ones widens the word sums into int32.
// Two quads a step in the four-accumulator row loop of q4_0 and q4_1 (the second's rows from
// R12 + 4·R9, half the pointer, counter and branch operations) took 0.98–1.01× the time of one
// (Zen 4, plain AVX2, 256 rows of 128 values in cache, thread CPU time, five alternations by
// process, min): not kept. In cache the q4_0 kernel took 7.0 ns a row, 2.7 without its row
// loop, 6.0 without the first prepass's body, 6.4 without the second's, 6.5 without the
// finish's vector operations and 6.6 without the row loop's weight broadcasts (timing-only
// builds): the row loop, at its 24 vector operations a quad and half, is ~60% of the time.

// nibDec8: four rows' payload bytes 8h..8h+7, each broadcast to the four quadwords,
// interleaved (a b, c d, then the two pairs: dword k holds byte k of each row, k < 4 in Y12, 4..7
// in Y13, in both 128-bit lanes), lane 1 shifted down a nibble (VPSRLVQ) and masked (Y10, 0x0F
// a byte): lane 0 holds values 8h+k, lane 1 values 16+8h+k (split).
func nibDec8(pay int) func(half int, a, b, c, d string) string {
	return func(half int, a, b, c, d string) string {
		o := pay + 8*half
		return fmt.Sprintf(`VPBROADCASTQ %[1]d%[2]s, Y12
	VPBROADCASTQ %[1]d%[3]s, Y13
	VPBROADCASTQ %[1]d%[4]s, Y14
	VPBROADCASTQ %[1]d%[5]s, Y15
	VPUNPCKLBW Y13, Y12, Y12
	VPUNPCKLBW Y15, Y14, Y14
	VPUNPCKHWD Y14, Y12, Y13
	VPUNPCKLWD Y14, Y12, Y12
	VPSRLVQ ·avx2IntAccQ5Shift(SB), Y12, Y12
	VPSRLVQ ·avx2IntAccQ5Shift(SB), Y13, Y13
	VPAND Y10, Y12, Y12
	VPAND Y10, Y13, Y13`, o, a, b, c, d)
	}
}

// nibDec8Hi is nibDec8 for the AVX-VNNI kernels (kernel8's hi16), whose VPDPBUSD sums do not
// saturate: lane 1 keeps each byte's high nibble in place (masked with 0xF0, Y10 holding 0x0F a
// byte in lane 0 and 0xF0 in lane 1), so its codes are 16·c and its sums 16 times the codes'
// sums (|16·c·W| ≤ 240·127, four a dword, 16 steps a tile: far inside int32). The finish takes
// T/16 and 16·off·ΣW for them, both exact (powers of two), and float32(16·x) is 16·float32(x):
// the same results bit for bit, two vector operations (the VPSRLVQ) less a quad and half.
func nibDec8Hi(pay int) func(half int, a, b, c, d string) string {
	return func(half int, a, b, c, d string) string {
		o := pay + 8*half
		return fmt.Sprintf(`VPBROADCASTQ %[1]d%[2]s, Y12
	VPBROADCASTQ %[1]d%[3]s, Y13
	VPBROADCASTQ %[1]d%[4]s, Y14
	VPBROADCASTQ %[1]d%[5]s, Y15
	VPUNPCKLBW Y13, Y12, Y12
	VPUNPCKLBW Y15, Y14, Y14
	VPUNPCKHWD Y14, Y12, Y13
	VPUNPCKLWD Y14, Y12, Y12
	VPAND Y10, Y12, Y12
	VPAND Y10, Y13, Y13`, o, a, b, c, d)
	}
}

// q5Dec8 is nibDec8 with the fifth bits: the four rows' qh dwords interleaved by byte (dword j:
// qh byte j of rows a, b, c, d), dword h copied to lane 0's dwords and 2+h to lane 1's
// (VPSHUFB, ·avx2IntAccB8Q5Rep+32h), then shifted per dword so that bit k of the byte (value
// 8h+k or 16+8h+k, k < 4, Y12) or bit 4+k (Y13) lands on bit 4 (VPSLLVD by 4−k, VPSRLVD by
// k), kept (Y11, 0x10 a byte) and OR'ed into the codes. Scratch Y9 (the weights are broadcast
// after it).
func q5Dec8(qh, pay int) func(half int, a, b, c, d string) string {
	nib := nibDec8(pay)
	return func(half int, a, b, c, d string) string {
		return nib(half, a, b, c, d) + fmt.Sprintf(`
	VPBROADCASTD %[1]d%[2]s, Y14
	VPBROADCASTD %[1]d%[3]s, Y15
	VPUNPCKLBW Y15, Y14, Y14
	VPBROADCASTD %[1]d%[4]s, Y15
	VPBROADCASTD %[1]d%[5]s, Y9
	VPUNPCKLBW Y9, Y15, Y15
	VPUNPCKLWD Y15, Y14, Y14
	VPSHUFB ·avx2IntAccB8Q5Rep+%[6]d(SB), Y14, Y14
	VPSLLVD ·avx2IntAccB8Q5Sh(SB), Y14, Y15
	VPAND Y11, Y15, Y15
	VPOR Y15, Y12, Y12
	VPSRLVD ·avx2IntAccB8Q5Sh+32(SB), Y14, Y15
	VPAND Y11, Y15, Y15
	VPOR Y15, Y13, Y13`, qh, a, b, c, d, 32*half)
	}
}

// Frame layout of the 8-bit kernels (hardware SP offsets).
const (
	o8PB   = 0    // w·d of the tile's rows (lane 4b+h), three zero rows after
	o8QP   = 2176 // int8 weights: group g's (four rows) at 32g, block b's accumulator h's dword at 32g + 16b + 4h
	o8TT   = 2688 // T per lane
	o8SS   = 2720 // off·ΣW per lane (int32)
	o8MT   = 2752 // Σ w·m + off·Σ w·d per lane
	o8TN   = 2784
	o8WP   = 2792
	o8RL   = 2800
	o8BL   = 2808
	o8NQ   = 2816
	o8QB   = 2824
	o8PF   = 2832
	o8S32  = 2848 // the int32 sums of the first 32 rows of a half (8 vectors)
	o8T16  = 2848 // hi16 kernels (AVX-VNNI, no S32): T/16 per lane
	o8SS16 = 2880 // hi16 kernels: 16·off·ΣW per lane
	frame8 = 3136
)

// acc8Tmpl is accTmpl with the 8-bit prepass and row loop (%HALF0%, %HALF1%: half8Tmpl).
const acc8Tmpl = `
// func multiAcc@(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// %DOC%
TEXT ·multiAcc@(SB), 0, $%FRAME%-64
	MOVQ m+40(FP), AX
	TESTQ AX, AX
	JZ   a@_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   a@_done
	%CONSTS%
	MOVQ rows+24(FP), DI
	MOVQ w+48(FP), AX
	MOVQ AX, %WP%(SP)
	MOVQ m+40(FP), AX
	MOVQ AX, %RL%(SP)

a@_tile:
	MOVQ %RL%(SP), AX
	CMPQ AX, $64
	JLE  a@_tn
	MOVQ $64, AX
a@_tn:
	MOVQ AX, %TN%(SP)
	SUBQ AX, %RL%(SP)
	MOVQ rb+32(FP), R12
	SHLQ $6, R12
	ADDQ DI, R12
	MOVQ R12, %PF%(SP)         // the next tile, prefetched
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	MOVQ AX, %BL%(SP)
	XORQ BX, BX                // byte offset of the block in a row
	MOVQ acc+0(FP), CX         // accumulators of the block

a@_bpair:
	MOVQ %BL%(SP), AX
	MOVQ $%BS%, R14
	CMPQ AX, $2
	JGE  a@_nq2
	XORQ R14, R14
	MOVQ AX, %NQ%(SP)
	JMP  a@_nq
a@_nq2:
	MOVQ $2, %NQ%(SP)
a@_nq:
	MOVQ %NQ%(SP), AX
	SUBQ AX, %BL%(SP)

	// w·d per row (lane 4b+h), its largest magnitude per lane (and Σ w·m, Σ w·d), as the int16
	// kernels.
	LEAQ (DI)(BX*1), R12
	MOVQ %WP%(SP), R8
	LEAQ %PB%(SP), R15
	MOVQ %TN%(SP), R10
	MOVQ wstride+56(FP), R9
	MOVQ rb+32(FP), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	SHRQ $1, R10
	JZ   a@_p1o
a@_p1:
	%P1A%
	%P1B%
	LEAQ (R8)(R9*2), R8
	LEAQ (R12)(R11*2), R12
	ADDQ $64, R15
	DECQ R10
	JNZ  a@_p1
a@_p1o:
	TESTQ $1, %TN%(SP)
	JZ   a@_p1e
	%P1A%
	ADDQ $32, R15
a@_p1e:
	VMAXPS Y3, Y0, Y0
	%MINJOIN%
	VXORPS Y15, Y15, Y15
	VMOVUPS Y15, (R15)         // the zero rows that fill the last group of four
	VMOVUPS Y15, 32(R15)
	VMOVUPS Y15, 64(R15)
	%MINSTORE%
	// inv = min(127/M, cap) and T = 1/inv where M > 0; both 0 where M = 0.
	VXORPS Y12, Y12, Y12
	VCMPPS $0x0E, Y12, Y0, Y1  // M > 0
	VBROADCASTSS ·intAccQMax8(SB), Y2
	VDIVPS Y0, Y2, Y14
	VBROADCASTSS ·intAccInvCap(SB), Y3
	VMINPS Y3, Y14, Y14
	VANDPS Y1, Y14, Y14
	VBROADCASTSS ·intAccOne(SB), Y4
	VDIVPS Y14, Y4, Y15
	VANDPS Y1, Y15, Y15
	VMOVUPS Y15, %TT%(SP)
	%T16%

	// W = round(w·d·inv) (−127..127) of four rows packed to bytes (VPACKSSDW, VPACKSSWB: exact,
	// |W| ≤ 127; in each 128-bit lane rows 0..3's four lanes in turn), then transposed (VPSHUFB)
	// so that dword l holds lane l's W_4g .. W_4g+3; ΣW per lane. Masking, shifting and OR'ing
	// the four rows' low bytes together took ten operations where this takes four, and ~2% more
	// time (q4_0, q4_1 on Zen 4, plain AVX2, in cache, interleaved).
	LEAQ %PB%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	ADDQ $3, R10
	SHRQ $2, R10
	VPXOR Y6, Y6, Y6
	VMOVDQU ·avx2IntAccB8T(SB), Y7
a@_p2:
	VMULPS (R8), Y14, Y0
	VMULPS 32(R8), Y14, Y1
	VMULPS 64(R8), Y14, Y2
	VMULPS 96(R8), Y14, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPADDD Y0, Y1, Y4
	VPADDD Y2, Y3, Y5
	VPADDD Y4, Y5, Y4
	VPADDD Y4, Y6, Y6
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPSHUFB Y7, Y0, Y0
	VMOVDQU Y0, (R12)
	ADDQ $128, R8
	ADDQ $32, R12
	DECQ R10
	JNZ  a@_p2
	%SUMSTORE%
	LEAQ %QP%(SP), AX
	MOVQ AX, %QB%(SP)
	LEAQ %TT%(SP), R13

a@_blk:
%HALF0%
%HALF1%
	ADDQ $%BS%, BX
	ADDQ $128, CX
	ADDQ $16, %QB%(SP)
	ADDQ $16, R13
	DECQ %NQ%(SP)
	JNZ  a@_blk
	CMPQ %BL%(SP), $0
	JNE  a@_bpair

	MOVQ %TN%(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	IMULQ wstride+56(FP), AX
	ADDQ AX, %WP%(SP)
	CMPQ %RL%(SP), $0
	JNE  a@_tile

a@_done:
	VZEROUPPER
	RET
`

// half8Tmpl is one half of a block in the 8-bit kernels: word sums in Y0..Y7 (accumulator h's
// in Y2h, Y2h+1), R14 the steps they hold (at most steps8: the bound), SI set once int32 sums
// of earlier steps wait at S32.
const half8Tmpl = `	// Half %H%: values %LO%.. and %HI%...
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	LEAQ (DI)(BX*1), R12
	MOVQ %QB%(SP), R8
	MOVQ %PF%(SP), R15
	MOVQ rb+32(FP), R9
	LEAQ (R9)(R9*2), R11
	XORQ R14, R14
	XORQ SI, SI
	MOVQ %TN%(SP), R10
	SHRQ $2, R10
	JZ   a@_tl%H%
a@_g%H%:
	CMPQ R14, $%STEPS%
	JNE  a@_ng%H%
%FLUSHG%
	// The step after a flush: its products written over the flushed word sums.
	%PFX%
	%DECD%
%DOTSD%
	JMP  a@_nx%H%
a@_ng%H%:
	// Four rows a step: at R12, R12+R9, R12+2·R9 and R12+R11.
	%PFX%
	%DEC%
%DOTS%
a@_nx%H%:
	ADDQ $32, R8
	LEAQ (R12)(R9*4), R12
	INCQ R14
	DECQ R10
	JNZ  a@_g%H%
a@_tl%H%:
	MOVQ R15, %PF%(SP)
	MOVQ %TN%(SP), R11
	ANDQ $3, R11
	JZ   a@_end%H%
	CMPQ R14, $%STEPS%
	JNE  a@_nt%H%
%FLUSHT%
a@_nt%H%:
	// The last one to three rows; the others of the group read row a again, with weight 0.
	MOVQ R12, AX
	MOVQ R12, DX
	CMPQ R11, $2
	JL   a@_ta%H%
	LEAQ (R12)(R9*1), AX
	JE   a@_ta%H%
	LEAQ (R12)(R9*2), DX
a@_ta%H%:
	%DECT%
%DOTS%
a@_end%H%:
	// int32 sums: the word pairs added (VPMADDWD by ones), the first 32 rows' added.
%WIDEN%
	TESTQ SI, SI
	JZ   a@_fin%H%
%ADDS32%
a@_fin%H%:
	// acc_h += T·(Σ W·c − off·ΣW) (+ Σ w·m), as the int16 kernels.
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	MOVQ CX, R12
%FINISH%`

// dots8 adds four rows' codes (Y12, Y13) times accumulator h's weight dword (at 4h(R8),
// broadcast) into word sums 2h and 2h+1, h < nacc.
func dots8(nacc int) string { return dots8B(nacc, 0, true) }

// dots8B is dots8 into word sums base+2h and base+2h+1, the weights broadcast first where bcst
// (else already in Y8, Y9).
func dots8B(nacc, base int, bcst bool) string {
	var b strings.Builder
	for h := 0; h < nacc; h++ {
		w := fmt.Sprintf("Y%d", 8+h%2)
		if bcst {
			fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), %s\n", 4*h, w)
		}
		for i, c := range []string{"Y12", "Y13"} {
			t := fmt.Sprintf("Y%d", 14+i)
			s := base + 2*h + i
			fmt.Fprintf(&b, "\tVPMADDUBSW %s, %s, %s\n\tVPADDW %s, Y%d, Y%d\n", w, c, t, t, s, s)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// maddRe matches a product of the 8-bit kernels: weights (Y8, Y9), codes (Y12, Y13).
var maddRe = regexp.MustCompile(`VPMADDUBSW (Y[89]), (Y1[23]), (Y\d+)`)

// clearRe matches a flush's clearing of a word sum.
var clearRe = regexp.MustCompile(`\tVPXOR (Y\d), (Y\d), (Y\d)\n`)

// directRe matches a product into a temporary added to a word sum.
var directRe = regexp.MustCompile(`VPMADDUBSW (Y\d+), (Y\d+), (Y1[45])\n\tVPADDW (Y1[45]), (Y\d), (Y\d)`)

// direct is dots (or decoder text with dots) with each product written to its word sum in
// place of added: the four-accumulator 8-bit kernels' step after a flush, which then leaves the
// sums uncleared, eight VPADDW and eight VPXOR less a flush. Measured on AMD Zen 4, plain AVX2
// (AccumulateManyMulti's kernels over 4096 rows of 128 values, four accumulators, thread CPU
// time, alternated with the former kernels in one process, five runs, min ns a row): q4_0
// 7.23–7.89 → 7.04–7.68 in cache (0.97×, every run), streamed 0.95–1.00×; q4_1 0.95–0.97× in
// cache (one run 1.11×), 0.95–0.98× streamed; q5_1's unsigned kernel 0.94–1.02× streamed
// (median 0.99×).
func direct(dots string) string {
	return directRe.ReplaceAllStringFunc(dots, func(m string) string {
		g := directRe.FindStringSubmatch(m)
		if g[3] != g[4] || g[5] != g[6] {
			panic("direct: " + m)
		}
		return fmt.Sprintf("VPMADDUBSW %s, %s, %s", g[1], g[2], g[5])
	})
}

// kernel8 writes f's 8-bit-weight kernel (plain AVX2) for nacc accumulators: 4, or 2 (named
// with Two: the prepass's lanes of accumulators 2 and 3 zero, as the int16 two-accumulator
// kernels' are, so each accumulator's lanes and sums are the four-accumulator kernel's bit for
// bit, and the row loop multiplies and adds for two).
//
// With vnni it writes the text of the kernel's AVX-VNNI form (named B8VNNI, B8TwoVNNI) for
// vnni8 to finish (each VPMADDUBSW and VPADDW pair a VEX VPDPBUSD into int32 sums): the loop
// neither flushes nor widens (vnni8Tmpl).
func kernel8(out *strings.Builder, f format, nacc int, vnni bool) {
	name := f.name + "B8AVX2INT"
	doc := f.doc + " 8-bit weights (VPMADDUBSW)."
	if nacc == 2 {
		name = f.name + "B8TwoAVX2INT"
		doc += " Two accumulators."
	}
	if vnni {
		name = strings.Replace(name, "AVX2INT", "VNNIINT", 1)
	}
	minStore, minJoin := "", ""
	if f.min {
		minStore = fmt.Sprintf("MOVL $0x%08x, AX\n\tVMOVD AX, X8\n\tVPBROADCASTD X8, Y8\n\tVFMADD231PS Y8, Y2, Y1\n\tVMOVUPS Y1, %d(SP)", u32(float32(f.off)), o8MT)
		minJoin = "VADDPS Y4, Y1, Y1\n\tVADDPS Y5, Y2, Y2"
	}
	sumStore := fmt.Sprintf("VPSLLD $%d, Y6, Y6\n\tVMOVDQU Y6, %d(SP)", f.offShift, o8SS)
	// hi16 (the AVX-VNNI nibble kernels, nibDec8Hi): T/16 and 16·off·ΣW for the second lane's sums.
	hi16 := vnni && f.dec8 != nil && f.off == 8
	t16 := ""
	if hi16 {
		f.dec8 = nibDec8Hi(f.bs - 16)
		sumStore += fmt.Sprintf("\n\tVPSLLD $4, Y6, Y6\n\tVMOVDQU Y6, %d(SP)", o8SS16)
		t16 = fmt.Sprintf("VBROADCASTSS ·avx2IntAccSixteenth(SB), Y3\n\tVMULPS Y3, Y15, Y15\n\tVMOVUPS Y15, %d(SP)", o8T16)
	}
	// flush(l) widens the word sums into S32: stored the first time (SI clear), added after.
	var store, add, widen, adds strings.Builder
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&store, "\tVPMADDWD ·avx2Ones16(SB), Y%d, Y8\n\tVMOVDQU Y8, %d(SP)\n\tVPXOR Y%d, Y%d, Y%d\n", i, o8S32+32*i, i, i, i)
		fmt.Fprintf(&add, "\tVPMADDWD ·avx2Ones16(SB), Y%d, Y8\n\tVPADDD %d(SP), Y8, Y8\n\tVMOVDQU Y8, %d(SP)\n\tVPXOR Y%d, Y%d, Y%d\n", i, o8S32+32*i, o8S32+32*i, i, i, i)
		fmt.Fprintf(&widen, "\tVPMADDWD ·avx2Ones16(SB), Y%d, Y%d\n", i, i)
		fmt.Fprintf(&adds, "\tVPADDD %d(SP), Y%d, Y%d\n", o8S32+32*i, i, i)
	}
	flush := func(l string) string {
		st, ad := store.String(), add.String()
		if l[0] == 'g' && nacc == 4 {
			// The main loop's: the step after it writes its products over the word sums
			// (direct), so they are not cleared.
			st, ad = clearRe.ReplaceAllString(st, ""), clearRe.ReplaceAllString(ad, "")
		}
		if f.steps8 >= 8 { // a 64-row tile is sixteen steps: one flush at most
			return st + "\tXORQ R14, R14\n\tMOVQ $1, SI"
		}
		return fmt.Sprintf("\tTESTQ SI, SI\n\tJNZ  a@_fa%[1]s\n%[2]s\tJMP  a@_fd%[1]s\na@_fa%[1]s:\n%[3]sa@_fd%[1]s:\n\tXORQ R14, R14\n\tMOVQ $1, SI",
			l, st, ad)
	}
	fs := f
	fs.split, fs.hi16 = true, hi16
	tmpl := half8Tmpl
	if nacc == 2 {
		// The two-accumulator kernels keep clearing their sums at a flush: the direct step
		// measured 1% slower for q4_1 in cache and 2–4% for q5_1's unsigned kernel streamed
		// (four runs of five; q4_0 3.5% faster in cache, 1.5% streamed).
		i, j := strings.Index(tmpl, "a@_g%H%:\n"), strings.Index(tmpl, "a@_nx%H%:\n")
		tmpl = tmpl[:i] + "a@_g%H%:\n\tCMPQ R14, $%STEPS%\n\tJNE  a@_ng%H%\n%FLUSHG%\na@_ng%H%:\n" +
			"\t// Four rows a step: at R12, R12+R9, R12+2·R9 and R12+R11.\n\t%PFX%\n\t%DEC%\n%DOTS%\n" + tmpl[j+len("a@_nx%H%:\n"):]
	}
	if vnni {
		tmpl = vnni8Tmpl(tmpl)
	}
	if hi16 {
		// No S32 (it holds T/16 and 16·off·ΣW): without the adds of its sums, which never ran.
		for _, l := range []string{"\tXORQ SI, SI\n", "\tTESTQ SI, SI\n\tJZ   a@_fin%H%\n%ADDS32%\n"} {
			if strings.Count(tmpl, l) != 1 {
				panic("kernel8: " + l)
			}
			tmpl = strings.Replace(tmpl, l, "", 1)
		}
	}
	var halves [2]string
	main := [4]string{"(R12)", "(R12)(R9*1)", "(R12)(R9*2)", "(R12)(R11*1)"}
	if nacc == 2 {
		// One pass over the rows: two accumulators' word sums of the whole block fill the eight
		// registers (half 0's in Y0..Y3, half 1's in Y4..Y7), so the rows are read once a block,
		// their weights broadcast once (again for half 1 where the decoder takes Y9: q5's).
		// Two passes, a half each, took 5–13% more thread CPU time than the int16
		// two-accumulator kernels streamed past the caches (q4_0, q4_1 on Zen 4, plain AVX2).
		q5 := f.off == 16
		dec := func(a, b, c, d string) string {
			return f.dec8(0, a, b, c, d) + "\n" + dots8B(2, 0, true) + "\n\t" + f.dec8(1, a, b, c, d)
		}
		halves[0] = strings.NewReplacer("%H%", "0", "%LO%", "0", "%HI%", "0",
			"%DECD%", direct(dec(main[0], main[1], main[2], main[3])), "%DOTSD%", direct(dots8B(2, 4, q5)),
			"%DEC%", dec(main[0], main[1], main[2], main[3]), "%DECT%", dec("(R12)", "(AX)", "(DX)", "(R12)"),
			"%DOTS%", dots8B(2, 4, q5), "%FLUSHG%", flush("g0"), "%FLUSHT%", flush("t0"), "%STEPS%", fmt.Sprint(f.steps8),
			"%WIDEN%", strings.TrimRight(widen.String(), "\n"), "%ADDS32%", strings.TrimRight(adds.String(), "\n"),
			"%FINISH%", finish(fs, 0, 2, 0)+"\n\tMOVQ CX, R12\n"+finish(fs, 1, 2, 4),
			"%PFX%", prefetch(4*f.bs, (4*f.bs+63)/64)).Replace(tmpl)
		halves[0] = strings.Replace(halves[0], "// Half 0: values 0.. and 0...", "// The whole block, both halves' sums apart.", 1)
	}
	for h := 0; h < 2 && nacc == 4; h++ {
		halves[h] = strings.NewReplacer("%H%", fmt.Sprint(h), "%LO%", fmt.Sprint(f.lo[h]), "%HI%", fmt.Sprint(f.hi[h]),
			"%DECD%", f.dec8(h, main[0], main[1], main[2], main[3]), "%DOTSD%", direct(dots8(nacc)),
			"%DEC%", f.dec8(h, main[0], main[1], main[2], main[3]), "%DECT%", f.dec8(h, "(R12)", "(AX)", "(DX)", "(R12)"),
			"%DOTS%", dots8(nacc), "%FLUSHG%", flush(fmt.Sprintf("g%d", h)), "%FLUSHT%", flush(fmt.Sprintf("t%d", h)), "%STEPS%", fmt.Sprint(f.steps8), "%WIDEN%", strings.TrimRight(widen.String(), "\n"),
			"%ADDS32%", strings.TrimRight(adds.String(), "\n"),
			"%FINISH%", finish(fs, h, nacc, 0), "%PFX%", prefetch(2*f.bs, (2*f.bs+63)/64)).Replace(tmpl)
	}
	s := strings.NewReplacer("%HALF0%", halves[0], "%HALF1%", halves[1]).Replace(acc8Tmpl)
	if hi16 {
		s = sumWDot(s)
	}
	consts := "VMOVDQU ·avx2Nib(SB), Y10"
	if f.off == 16 {
		consts = q5Consts
	}
	if hi16 {
		consts = "VMOVDQU ·avx2IntAccNibHi(SB), Y10"
	}
	r := strings.NewReplacer("@", name, "%DOC%", doc, "%CONSTS%", consts,
		"%FRAME%", fmt.Sprint(frame8), "%BS%", fmt.Sprint(f.bs),
		"%PB%", fmt.Sprint(o8PB), "%QP%", fmt.Sprint(o8QP), "%TT%", fmt.Sprint(o8TT), "%TN%", fmt.Sprint(o8TN),
		"%WP%", fmt.Sprint(o8WP), "%RL%", fmt.Sprint(o8RL), "%BL%", fmt.Sprint(o8BL), "%NQ%", fmt.Sprint(o8NQ),
		"%QB%", fmt.Sprint(o8QB), "%PF%", fmt.Sprint(o8PF),
		"%P1A%", p1(f, false, nacc), "%P1B%", p1(f, true, nacc), "%MINJOIN%", minJoin,
		"%MINSTORE%", minStore, "%SUMSTORE%", sumStore, "%T16%", t16)
	out.WriteString(r.Replace(s))
}

// sumWDot is the AVX-VNNI 8-bit kernel text s with ΣW per lane taken from the packed weights by
// one VEX VPDPBUSD of bytes 1 (Y5) a group of four rows, in place of four VPADDD of their int32
// weights: the same integers. On the Intel Xeon (KVLAB_NO_AVX512, load 11–13, attn's
// TestDecodeBreakdown with KVLAB_TOUCH=kv, six alternations, values min ns a row) q4_0 went
// 9.30–9.66 → 8.82–9.57 (medians 9.56 → 9.32), q4_1 within the noise. Not kept (the same runs):
//   - the first prepass's two scales of a row and pair loaded by VPBROADCASTD (a load alone on
//     Intel, VPBROADCASTW a load and a port-5 shuffle) and spread by one VPSHUFB, a vector
//     operation less: q4_0 9.23–10.13 (median 9.75);
//   - the pair's scales staged by MOVWLZX and MOVW (no vector operation) and converted eight
//     rows a VCVTPH2PS from memory, so the first prepass broadcasts them (VBROADCASTSS, a load
//     alone) and blends the two blocks' (VBLENDPS): four vector operations a row and pair where
//     there were eight, but q4_0's values 9.36–9.96 → 10.47–11.17 (TestDecodeBreakdown streamed,
//     five alternations): the conversions' loads wait on the eight two-byte stores they read (no
//     store forwarding);
//   - a row pair's four scales gathered as words in AX (MOVWLZX, SHLQ, ORQ), stored and
//     broadcast back (VBROADCASTSD), converted by one VCVTPH2PS and spread to each row's lanes by
//     one VPERMILPS (control from memory): ten vector operations a row pair and block pair where
//     there were sixteen, as on AMD Zen 4 (p1) no faster: q4_0's values 8.81–9.74 → 9.07–10.15 in
//     cache and 9.09–9.63 → 9.90–10.20 streamed (six and four alternations, load 16).
func sumWDot(s string) string {
	old := "\tVPADDD Y0, Y1, Y4\n\tVPADDD Y2, Y3, Y5\n\tVPADDD Y4, Y5, Y4\n\tVPADDD Y4, Y6, Y6\n"
	sh := "\tVPSHUFB Y7, Y0, Y0\n"
	init := "\tVMOVDQU ·avx2IntAccB8T(SB), Y7\n"
	for _, l := range []string{old, sh, init} {
		if strings.Count(s, l) != 1 {
			panic("sumWDot: " + l)
		}
	}
	s = strings.Replace(s, old, "", 1)
	s = strings.Replace(s, sh, sh+"\t"+vexReg(opVPDPBUSD, 6, 5, 0)+"\n", 1)
	return strings.Replace(s, init, init+"\tVPCMPEQB Y5, Y5, Y5\n\tVPABSB Y5, Y5 // bytes 1\n", 1)
}

// vnni8Tmpl is half8Tmpl (or kernel8's two-accumulator form of it) for the AVX-VNNI 8-bit
// kernels, whose sums are int32 from the first step (vnni8): without the flush every steps8
// steps, the step after it and the widening at the end.
func vnni8Tmpl(tmpl string) string {
	cut := func(from, to, with string) {
		i := strings.Index(tmpl, from)
		j := strings.Index(tmpl, to)
		if i < 0 || j < i || strings.Count(tmpl, from) != 1 || strings.Count(tmpl, to) != 1 {
			panic("vnni8Tmpl: " + from)
		}
		tmpl = tmpl[:i] + with + tmpl[j+len(to):]
	}
	cut("a@_g%H%:\n", "a@_ng%H%:\n", "a@_g%H%:\n")
	if strings.Contains(tmpl, "a@_nx%H%:\n") {
		cut("a@_nx%H%:\n", "a@_nx%H%:\n", "")
	}
	cut("\tCMPQ R14, $%STEPS%\n\tJNE  a@_nt%H%\n", "a@_nt%H%:\n", "")
	cut("\t// int32 sums: the word pairs added", "%WIDEN%\n", "")
	for _, l := range []string{"\tXORQ R14, R14\n", "\tINCQ R14\n"} {
		if strings.Count(tmpl, l) != 1 {
			panic("vnni8Tmpl: " + l)
		}
		tmpl = strings.Replace(tmpl, l, "", 1)
	}
	return tmpl
}

// dpbRe matches a product of four rows' bytes added into an int32 sum: VPMADDUBSW (the second
// operand's bytes unsigned, the first's signed) and VPADDW (the word sums of the plain 8-bit
// kernels), or VPMADDWD by ones and VPADDD (the adaptive kernels').
var dpbRe = regexp.MustCompile(`VPMADDUBSW (Y\d+), (Y\d+), (Y1[45])\n\t(?:VPADDW (Y1[45]), (Y\d), (Y\d)|VPMADDWD \S+, (Y1[45]), (Y1[45])\n\tVPADDD (Y1[45]), (Y\d), (Y\d))`)

// dpwRe matches a product of a row pair's words added into an int32 sum (VPMADDWD, VPADDD).
var dpwRe = regexp.MustCompile(`VPMADDWD (Y[89]), (Y1[23]), (Y1[45])\n\tVPADDD (Y1[45]), (Y\d), (Y\d)`)

// On an Intel Xeon (Sapphire/Emerald Rapids class, KVM, shared; KVLAB_NO_AVX512) q4_0's AVX-VNNI
// 8-bit kernel took 6.2–6.8 ns a row in cache (AccumulateManyMulti, 4096 rows of 128 values,
// four accumulators), 3.0–3.2 without its row loop (prepass and finish: timing-only builds),
// 5.0–5.6 without its VPDPBUSD, 4.5–5.4 without its decoder; streamed from 64 MiB 9.0–9.5,
// and 9.0–9.3 without its row loop (which holds the next tile's prefetches): the prepass's
// reads of the rows' scales, each tile's first touch of its lines, wait on memory as long as
// the whole kernel takes. Not kept: the prefetches two tiles on (SHLQ $7 at the tile's
// pointer) in the AVX-VNNI kernels, 0.90× streamed in one run and 1.00× in the next (three,
// four tiles on alike), and in the decode (TestDecodeBreakdown, three alternations, load 13)
// iq4_nl's and q5_0's values 0.92× but q4_0's, q4_1's and q5_1's within the noise and q8_0's
// 1.00–1.08×; PREFETCHT1 in place of PREFETCHT0 1.05×; a PREFETCHT0 of the next tile's (or
// two tiles on) rows in the prepass's row loop 0.97–1.01× (1.15×).
//
// vnni8 is an 8-bit kernel's text s with its products in AVX-VNNI form, the same int32 sums:
// VEX VPDPBUSD (four unsigned bytes times four signed ones, summed into a dword without
// saturation) for each VPMADDUBSW and its adds (dpbRe; the word a VPMADDUBSW forms never
// saturates, so the sums match), VEX VPDPWSSD for each VPMADDWD and VPADDD of words (dpwRe,
// the adaptive kernels' int16 path), and the names' AVX2INT VNNIINT.
func vnni8(s string) string {
	s = strings.ReplaceAll(s, "8-bit weights (VPMADDUBSW)", "8-bit weights (VEX VPDPBUSD)")
	n := 0
	s = dpbRe.ReplaceAllStringFunc(s, func(m string) string {
		g := dpbRe.FindStringSubmatch(m)
		t, acc := g[3], g[6]
		ok := g[4] == t && g[5] == acc
		if g[4] == "" {
			acc = g[11]
			ok = g[7] == t && g[8] == t && g[9] == t && g[10] == acc
		}
		if !ok {
			panic("vnni8: " + m)
		}
		n++
		a, _ := strconv.Atoi(acc[1:])
		v, _ := strconv.Atoi(g[2][1:])
		r, _ := strconv.Atoi(g[1][1:])
		return vexReg(opVPDPBUSD, a, v, r)
	})
	s = dpwRe.ReplaceAllStringFunc(s, func(m string) string {
		g := dpwRe.FindStringSubmatch(m)
		if g[3] != g[4] || g[5] != g[6] {
			panic("vnni8: " + m)
		}
		a, _ := strconv.Atoi(g[6][1:])
		v, _ := strconv.Atoi(g[1][1:])
		r, _ := strconv.Atoi(g[2][1:])
		return vexReg(opVPDPWSSD, a, v, r)
	})
	if n == 0 || strings.Contains(s, "VPMADDUBSW") {
		panic("vnni8: a product left")
	}
	return strings.ReplaceAll(s, "AVX2INT", "VNNIINT")
}

// Frame additions of the unsigned 8-bit kernel (kernel8u), after frame8's slots.
const (
	o8uQN   = 3136 // the negative parts max(−W, 0), laid out as o8QP's
	o8uSN   = 3648 // the first pass's int32 sums of a half (8 vectors) where a second pass runs
	o8uNF   = 3904 // the sign bits of the tile's weights, OR'ed (0: no second pass)
	o8uPS   = 3912 // the pass's weight offset: 0, then o8uQN − o8QP
	frame8u = 3936
)

// kernel8u writes f's kernel with unsigned 8-bit weights (q5_1; plain AVX2, four
// accumulators): kernel8's tiles, prepass and row loop with the weights rounded against 255 in
// place of 127 (intAccQMax8U, the AVX-512 kernels' intAcc8q51 rounding), so |W| ≤ 255 is
// VPMADDUBSW's unsigned operand and the codes its signed one, centred, c − 16 in −16..15 (the
// fifth bits' VPAND and VPOR become VPANDN and VPSUBB): |Wa·(ca − 16) + Wb·(cb − 16)| ≤ 2·255·16 = 8160, four
// steps' words ≤ 32640 < 32767, so steps8 (4) holds and the int32 sums Σ W·(c − 16) are exact;
// the finish subtracts no off·ΣW. The prepass packs max(W, 0) (VPACKUSWB); where a tile's
// weights hold a negative W (a negative scale d: never from the encoders, whose d ≥ 0) a third
// prepass packs max(−W, 0) and each half takes its rows a second time with those and subtracts
// the sums from the first pass's: Σ W·(c − 16) exactly, as with signed weights. Packing
// max(−W, 0) in every tile took 1.5–3% more thread CPU time (median of five runs, 10.52 → 10.24
// ns a row in cache, 11.58 → 11.40 streamed; TestAVX2IntAccB8Speed's shape, AMD Zen 4, plain
// AVX2, interleaved).
func kernel8u(out *strings.Builder, f format, nacc int, vnni bool) {
	var b strings.Builder
	kernel8(&b, f, nacc, vnni)
	s := b.String()
	name, uname := f.name+"B8AVX2INT", f.name+"U8AVX2INT"
	halves := 2 // passes over the rows a block: the four-accumulator kernel's halves, or one
	copies := 3 // of the decoder and products a pass: the direct step's, the row loop's, the tail's
	if nacc == 2 {
		name, uname, halves, copies = f.name+"B8TwoAVX2INT", f.name+"U8TwoAVX2INT", 1, 2
	}
	if vnni { // no flush, so no direct step (vnni8Tmpl)
		name, copies = strings.Replace(name, "AVX2INT", "VNNIINT", 1), 2
	}
	rep := func(old, new string, n int) {
		if c := strings.Count(s, old); c != n {
			panic(fmt.Sprintf("kernel8u: %q found %d times, want %d", old, c, n))
		}
		s = strings.ReplaceAll(s, old, new)
	}
	s = strings.ReplaceAll(s, name, uname)
	rep(" 8-bit weights (VPMADDUBSW).", " Unsigned 8-bit weights (VPMADDUBSW), centred codes.", 1)
	rep(fmt.Sprintf("$%d-64", frame8), fmt.Sprintf("$%d-64", frame8u), 1)
	rep("·intAccQMax8(SB)", "·intAccQMax8U(SB)", 1)
	rep("inv = min(127/M, cap)", "inv = min(255/M, cap)", 1)
	// The second prepass: W+ = max(W, 0) and W− = max(−W, 0) as bytes, the sign bits OR'ed.
	rep(`	VPADDD Y0, Y1, Y4
	VPADDD Y2, Y3, Y5
	VPADDD Y4, Y5, Y4
	VPADDD Y4, Y6, Y6
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPSHUFB Y7, Y0, Y0
	VMOVDQU Y0, (R12)
`, fmt.Sprintf(`	VPOR Y0, Y1, Y4
	VPOR Y2, Y3, Y5
	VPOR Y4, Y5, Y4
	VPOR Y4, Y6, Y6
	VPACKSSDW Y1, Y0, Y4
	VPACKSSDW Y3, Y2, Y5
	VPACKUSWB Y5, Y4, Y4
	VPSHUFB Y7, Y4, Y4
	VMOVDQU Y4, (R12)
`), 1)
	rep("	VPXOR Y6, Y6, Y6\n	VMOVDQU ·avx2IntAccB8T(SB), Y7\n",
		"	VPXOR Y6, Y6, Y6\n	VPXOR Y9, Y9, Y9\n	VMOVDQU ·avx2IntAccB8T(SB), Y7\n", 1)
	// W− only where the tile has a negative W: the second prepass's products again, negated.
	lbl := "a" + uname
	rep(fmt.Sprintf("VPSLLD $%d, Y6, Y6\n\tVMOVDQU Y6, %d(SP)", f.offShift, o8SS),
		fmt.Sprintf(`VMOVMSKPS Y6, AX
	MOVQ AX, %[1]d(SP)
	TESTQ AX, AX
	JZ   %[2]s_nn
	LEAQ %[3]d(SP), R8
	LEAQ %[4]d(SP), R12
	MOVQ %[5]d(SP), R10
	ADDQ $3, R10
	SHRQ $2, R10
%[2]s_p3:
	VMULPS (R8), Y14, Y0
	VMULPS 32(R8), Y14, Y1
	VMULPS 64(R8), Y14, Y2
	VMULPS 96(R8), Y14, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPSUBD Y0, Y9, Y0
	VPSUBD Y1, Y9, Y1
	VPSUBD Y2, Y9, Y2
	VPSUBD Y3, Y9, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKUSWB Y2, Y0, Y0
	VPSHUFB Y7, Y0, Y0
	VMOVDQU Y0, (R12)
	ADDQ $128, R8
	ADDQ $32, R12
	DECQ R10
	JNZ  %[2]s_p3
%[2]s_nn:`, o8uNF, lbl, o8PB, o8uQN, o8TN), 1)
	for h := 0; h < halves; h++ {
		H := fmt.Sprint(h)
		// Each half a pass, or two: PS the weights' offset.
		hd := fmt.Sprintf("	// Half %d: values %d.. and %d...\n", h, f.lo[h], f.hi[h])
		if nacc == 2 {
			hd = "	// The whole block, both halves' sums apart.\n"
		}
		rep(hd+"	VPXOR Y0, Y0, Y0\n", fmt.Sprintf("%s	MOVQ $0, %d(SP)\n%s_pass%s:\n	VPXOR Y0, Y0, Y0\n", hd, o8uPS, lbl, H), 1)
	}
	rep("	MOVQ "+fmt.Sprint(o8QB)+"(SP), R8\n	MOVQ "+fmt.Sprint(o8PF)+"(SP), R15\n",
		"	MOVQ "+fmt.Sprint(o8QB)+"(SP), R8\n	ADDQ "+fmt.Sprint(o8uPS)+"(SP), R8\n	MOVQ "+fmt.Sprint(o8PF)+"(SP), R15\n", halves)
	for h := 0; h < halves; h++ {
		H := fmt.Sprint(h)
		rep("	JZ   "+lbl+"_fin"+H+"\n", "	JZ   "+lbl+"_s2"+H+"\n", 1)
		var sec strings.Builder
		fmt.Fprintf(&sec, "%s_s2%s:\n\t// The negative parts' pass where the tile has any: its sums subtracted from the first's.\n", lbl, H)
		fmt.Fprintf(&sec, "\tCMPQ %d(SP), $0\n\tJNE  %s_sub%s\n\tCMPQ %d(SP), $0\n\tJEQ  %s_fin%s\n", o8uPS, lbl, H, o8uNF, lbl, H)
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&sec, "\tVMOVDQU Y%d, %d(SP)\n", i, o8uSN+32*i)
		}
		fmt.Fprintf(&sec, "\tMOVQ $%d, %d(SP)\n\tJMP  %s_pass%s\n%s_sub%s:\n", o8uQN-o8QP, o8uPS, lbl, H, lbl, H)
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&sec, "\tVMOVDQU %d(SP), Y8\n\tVPSUBD Y%d, Y8, Y%d\n", o8uSN+32*i, i, i)
		}
		rep(lbl+"_fin"+H+":\n", sec.String()+lbl+"_fin"+H+":\n", 1)
	}
	// Codes centred, c − 16 = nibble − 16·(1 − bit) (signed): VPANDN keeps 16 where the fifth
	// bit is clear and VPSUBB takes it off, as many operations as VPAND and VPOR.
	for _, c := range []string{"Y12", "Y13"} {
		rep(fmt.Sprintf("VPAND Y11, Y15, Y15\n\tVPOR Y15, %[1]s, %[1]s\n", c), fmt.Sprintf("VPANDN Y11, Y15, Y15\n\tVPSUBB Y15, %[1]s, %[1]s\n", c), 2*copies)
	}
	// The weights (Y8, Y9) VPMADDUBSW's unsigned operand, the codes (Y12, Y13) its signed one.
	n := 0
	s = maddRe.ReplaceAllStringFunc(s, func(m string) string {
		n++
		g := maddRe.FindStringSubmatch(m)
		return fmt.Sprintf("VPMADDUBSW %s, %s, %s", g[2], g[1], g[3])
	})
	if n != 4*copies*nacc {
		panic(fmt.Sprintf("kernel8u: %d products, want %d", n, 4*copies*nacc))
	}
	// No off·ΣW: the finish's subtraction of it goes.
	for r := 0; r < 4; r++ { // sums Y2r, Y2r+1: accumulator r (both halves), or r%2 (half r/2)
		h := r % nacc
		old := fmt.Sprintf("\tVPBROADCASTD %d(R13), Y14\n\tVPSUBD Y14, Y%d, Y%d\n\tVPSUBD Y14, Y%d, Y%d\n", 32+4*h, 2*r, 2*r, 2*r+1, 2*r+1)
		rep(old, "", halves)
	}
	out.WriteString(s)
}

// Frame additions of the adaptive kernel (kernelA8), after frame's slots.
const (
	oA8QP   = 3264 // 8-bit weights of the tile: quad g's (four rows) at 32g, block b's accumulator h's dword at 32g + 16b + 4h
	frameA8 = 3776
)

// a8RatioQ80 and a8RatioQ50 are the adaptive kernels' peak tests (kernelA8, kernelA8Q5): a lane
// keeps int16 weights for a tile where the ratio times its largest |w·d| exceeds their sum
// (multi_avx2intacc_amd64.go's avx2A8RatioQ80 and avx2A8RatioQ50, the same figures).
const (
	a8RatioQ80 = 6
	a8RatioQ50 = 4
)

// q80Dec8 widens nothing: half `half`'s 16 code bytes of four rows at a, b, c, d into Y12 and
// Y13, dword k of each holding one value's four codes (row a's byte first): Y12 values lo..lo+3
// (lane 0) and hi..hi+3 (lane 1), Y13 lo+4.. and hi+4.. (split; lo, hi = 16h, 16h+8). Each
// row's 16 bytes broadcast to both lanes (VBROADCASTI128, a load), rows a and b interleaved by
// byte (VPUNPCKLBW: values 0..7; VPUNPCKHBW: 8..15) and the two joined by lane (VPBLENDD:
// lane 0 the low values, lane 1 the high), the same for c and d, then the pairs interleaved by
// word (VPUNPCKLWD, VPUNPCKHWD): eight vector operations and four loads a quad and half, where
// the int16 kernel's decoder takes eight (two row pairs' unpacks and VPMOVSXBW) and six loads.
// Scratch Y8, Y9, Y14, Y15 (the weights are broadcast after it).
func q80Dec8(half int, a, b, c, d string) string {
	return q80Dec8R(half, a, b, c, d, "Y12", "Y13", "Y14", "Y15", "Y8", "Y9")
}

// q80Dec8R is q80Dec8 into o0, o1 (Y12's and Y13's layout) with scratch s0..s3.
func q80Dec8R(half int, a, b, c, d, o0, o1, s0, s1, s2, s3 string) string {
	return strings.NewReplacer("O0", o0, "O1", o1, "S0", s0, "S1", s1, "S2", s2, "S3", s3).Replace(fmt.Sprintf(`VBROADCASTI128 %[1]d%[2]s, O0
	VBROADCASTI128 %[1]d%[3]s, O1
	VBROADCASTI128 %[1]d%[4]s, S0
	VBROADCASTI128 %[1]d%[5]s, S1
	VPUNPCKHBW O1, O0, S2
	VPUNPCKLBW O1, O0, O0
	VPBLENDD $0xF0, S2, O0, O0
	VPUNPCKHBW S1, S0, S3
	VPUNPCKLBW S1, S0, S0
	VPBLENDD $0xF0, S3, S0, S0
	VPUNPCKHWD S0, O0, O1
	VPUNPCKLWD S0, O0, O0`, 2+16*half, a, b, c, d))
}

// dotsA8 adds four rows' codes (Y12, Y13, signed) times accumulator h's four weight bytes (the
// dword at 4h(R8), unsigned 0..127, broadcast) into int32 sums 2h and 2h+1: VPMADDUBSW (each
// word W_a·c_a + W_b·c_b, |·| ≤ 2·127·128 = 32512: no saturation), VPMADDWD by ones (Y10: the
// quad's four products a dword) and VPADDD.
func dotsA8() string { return dotsA8O("Y10") }

// dotsA8O is dotsA8 with the words of ones at ones (a register or memory).
func dotsA8O(ones string) string { return dotsA8N(ones, 4, 0, true) }

// dotsA8N is dotsA8O for nacc accumulators into sums base+2h, base+2h+1, the weights broadcast
// first where bcst (else already in Y8, Y9).
func dotsA8N(ones string, nacc, base int, bcst bool) string {
	var b strings.Builder
	for h := 0; h < nacc; h++ {
		w := fmt.Sprintf("Y%d", 8+h%2)
		if bcst {
			fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), %s\n", 4*h, w)
		}
		for i, c := range []string{"Y12", "Y13"} {
			t := fmt.Sprintf("Y%d", 14+i)
			s := base + 2*h + i
			fmt.Fprintf(&b, "\tVPMADDUBSW %[2]s, %[1]s, %[3]s\n\tVPMADDWD %[5]s, %[3]s, %[3]s\n\tVPADDD %[3]s, Y%[4]d, Y%[4]d\n", w, c, t, s, ones)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// halfA8Tmpl is one half of a block on the 8-bit path of the adaptive kernel: four rows a step,
// int32 sums in Y0..Y7 (accumulator h's in Y2h, Y2h+1); a last quad of one to three rows reads
// row a in place of the missing ones (their weights 0: the prepass's zero rows).
const halfA8Tmpl = `	// Half %H% (8-bit weights): values %LO%.. and %HI%...
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	LEAQ (DI)(BX*1), R12
	MOVQ %QB%(SP), R8
	MOVQ %PF%(SP), R15
	MOVQ rb+32(FP), R9
	LEAQ (R9)(R9*2), R11
	MOVQ %TN%(SP), R10
	SHRQ $2, R10
	JZ   a@_u%H%
a@_q%H%:
	// Four rows a step: at R12, R12+R9, R12+2·R9 and R12+R11.
	%PFX%
	%DEC%
%DOTS%
	ADDQ $32, R8
	LEAQ (R12)(R9*4), R12
	DECQ R10
	JNZ  a@_q%H%
a@_u%H%:
	MOVQ R15, %PF%(SP)
	MOVQ %TN%(SP), R10
	ANDQ $3, R10
	JZ   a@_v%H%
	MOVQ R12, AX
	MOVQ R12, DX
	CMPQ R10, $2
	JL   a@_ua%H%
	LEAQ (R12)(R9*1), AX
	JE   a@_ua%H%
	LEAQ (R12)(R9*2), DX
a@_ua%H%:
	%DECT%
%DOTS%
a@_v%H%:
	// acc_h += T·Σ W·c, as the int16 path.
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	MOVQ CX, R12
%FINISH%`

// a8PairsBytes is the adaptive kernels' int16 weight-pair area (oQP's layout, 32 pairs of 32
// bytes), which adaptPrepass moves from oQP to the end of their frame: their prepass writes
// three zero rows after the tile's last row (rows TN..TN+2, up to 66 for a tile of 64), past
// oPB's 65 rows, where oQP's first pairs were.
const a8PairsBytes = 1024

// adaptPrepass is kernelA8's and kernelA8Q5's edits of the int16 kernel text s (of format f,
// nacc accumulators, named name): the name aname, the frame (frame2 and the weight pairs after
// it, a8PairsBytes), the first prepass's sums of |w·d| and three zero rows, and the largest
// weight per lane (32767 for a peak's, else 127; SI the peaks' lanes) in place of 32767.
func adaptPrepass(s string, f format, nacc int, name, aname string, frame2 int) string {
	rep := func(old, new string, n int) {
		if c := strings.Count(s, old); c != n {
			panic(fmt.Sprintf("adaptPrepass: %q found %d times, want %d", old, c, n))
		}
		s = strings.ReplaceAll(s, old, new)
	}
	s = strings.ReplaceAll(s, name, aname)
	doc := f.doc
	if nacc == 2 {
		doc += " Two accumulators."
	}
	rep(doc, doc+" Adaptive 8-bit weights (VPMADDUBSW) where a tile has no peak.", 1)
	rep(fmt.Sprintf("$%d-64", frame), fmt.Sprintf("$%d-64", frame2+a8PairsBytes), 1)
	rep(fmt.Sprintf("LEAQ %d(SP), R12", oQP), fmt.Sprintf("LEAQ %d(SP), R12", frame2), 1)
	rep(fmt.Sprintf("LEAQ %d(SP), AX", oQP), fmt.Sprintf("LEAQ %d(SP), AX", frame2), 1)
	// The first prepass's sums of |w·d|: row a's chain in Y1, row b's in Y4 (no m: those
	// registers are free).
	if f.min {
		panic("adaptPrepass: a format with m")
	}
	rep("VANDPS ·avx2IntAccAbsV(SB), Y15, Y14\n\tVMAXPS Y14, Y0, Y0", "VANDPS ·avx2IntAccAbsV(SB), Y15, Y14\n\tVMAXPS Y14, Y0, Y0\n\tVADDPS Y14, Y1, Y1", 2)
	rep("VANDPS ·avx2IntAccAbsV(SB), Y9, Y8\n\tVMAXPS Y8, Y3, Y3", "VANDPS ·avx2IntAccAbsV(SB), Y9, Y8\n\tVMAXPS Y8, Y3, Y3\n\tVADDPS Y8, Y4, Y4", 1)
	rep("	VMOVUPS Y15, (R15)         // the zero row that pairs with a lone last row\n",
		"	VADDPS Y4, Y1, Y1\n	VMOVUPS Y15, (R15)         // the zero rows that pair with a lone last row and fill the last quad\n	VMOVUPS Y15, 32(R15)\n	VMOVUPS Y15, 64(R15)\n", 1)
	rep("	// inv = min(32767/M, cap) and T = 1/inv where M > 0; both 0 where M = 0.\n",
		`	// The largest weight per lane: 32767 where ratio·M > Σ|w·d| (a peak), else 127; SI
	// the peaks' lanes.
	VBROADCASTSS ·avx2A8Ratio`+f.name+`(SB), Y2
	VMULPS Y2, Y0, Y2
	VCMPPS $0x0E, Y1, Y2, Y3
	VMOVMSKPS Y3, SI
	VBROADCASTSS ·intAccQMax(SB), Y2
	VBROADCASTSS ·intAccQMax8(SB), Y4
	VBLENDVPS Y3, Y2, Y4, Y2
	// inv = min(qmax/M, cap) and T = 1/inv where M > 0; both 0 where M = 0.
`, 1)
	rep("	VBROADCASTSS ·intAccQMax(SB), Y2\n	VDIVPS Y0, Y2, Y14\n", "	VDIVPS Y0, Y2, Y14\n", 1)
	return s
}

// kernelA8 writes q8_0's adaptive kernel (plain AVX2, four accumulators; named A8): the int16
// kernel's tiles, prepass, row loops and finish, with the weights' scale chosen per tile and
// lane (block b of the pair, accumulator h) as turbo4's and tq4's AVX2 kernels choose it
// (gen_t4accavx2.go's adapt): the first prepass also sums |w·d| (a VADDPS a row, in the two
// rows' chains, joined after), and a lane where a8RatioQ80·M exceeds that sum (a softmax peak)
// rounds against 32767, the others against 127. A tile and block pair with a peak's lane goes
// through the int16 kernel's work (its second prepass and row loops) for all eight lanes; the
// others pack their weights (0..127) to bytes, four rows a dword, and take the 8-bit row loop
// (halfA8Tmpl): VPMADDUBSW with the weights as its unsigned operand and the codes as its
// signed one. A negative W (a negative w or d: never softmax weights and q8_0's encoder, d ≥
// 0) sends the tile to the int16 path too. Each lane's W, T and sums are the same on either
// path, so a query's sums do not depend on the other lanes' weights.
func kernelA8(out *strings.Builder, f format, nacc int, vnni bool) {
	var b strings.Builder
	kernel(&b, f, false, nacc)
	s := b.String()
	name, aname := f.name+"AVX2INT", f.name+"A8AVX2INT"
	if nacc == 2 {
		name, aname = f.name+"TwoAVX2INT", f.name+"A8TwoAVX2INT"
	}
	rep := func(old, new string, n int) {
		if c := strings.Count(s, old); c != n {
			panic(fmt.Sprintf("kernelA8: %q found %d times, want %d", old, c, n))
		}
		s = strings.ReplaceAll(s, old, new)
	}
	s = adaptPrepass(s, f, nacc, name, aname, frameA8)
	lbl := "a" + aname
	// After T: the 8-bit path where no lane is a peak's and no W negative.
	tt := fmt.Sprintf("	VMOVUPS Y15, %d(SP)\n\n", oTT)
	var halves [2]string
	fs := f
	fs.split = true
	for h := 0; h < 2 && nacc == 4; h++ {
		halves[h] = strings.NewReplacer("%H%", fmt.Sprint(h), "%LO%", fmt.Sprint(f.lo[h]), "%HI%", fmt.Sprint(f.hi[h]),
			"%DEC%", q80Dec8(h, "(R12)", "(R12)(R9*1)", "(R12)(R9*2)", "(R12)(R11*1)"),
			"%DECT%", q80Dec8(h, "(R12)", "(AX)", "(DX)", "(R12)"), "%DOTS%", dotsA8(),
			"%FINISH%", finish(fs, h, 4, 0), "%PFX%", prefetch(2*f.bs, (2*f.bs+63)/64),
			"@", aname, "%QB%", fmt.Sprint(oQB), "%PF%", fmt.Sprint(oPF), "%TN%", fmt.Sprint(oTN)).Replace(halfA8Tmpl)
	}
	if nacc == 2 {
		// The whole block a pass (as the int16 two-accumulator kernel): half 0's sums in Y0..Y3,
		// half 1's in Y4..Y7; the decoder's scratch Y10, Y11 in place of the weights' Y8, Y9, so
		// that a quad's two weights are broadcast once, the ones words from memory.
		dec := func(a, b, c, d string) string {
			return q80Dec8R(0, a, b, c, d, "Y12", "Y13", "Y14", "Y15", "Y10", "Y11") + "\n" +
				dotsA8N("·avx2Ones16(SB)", 2, 0, true) + "\n\t" + q80Dec8R(1, a, b, c, d, "Y12", "Y13", "Y14", "Y15", "Y10", "Y11")
		}
		halves[0] = strings.NewReplacer("%H%", "0", "%LO%", "0", "%HI%", "0",
			"%DEC%", dec("(R12)", "(R12)(R9*1)", "(R12)(R9*2)", "(R12)(R11*1)"),
			"%DECT%", dec("(R12)", "(AX)", "(DX)", "(R12)"), "%DOTS%", dotsA8N("·avx2Ones16(SB)", 2, 4, false),
			"%FINISH%", finish(fs, 0, 2, 0)+"\n\tMOVQ CX, R12\n"+finish(fs, 1, 2, 4), "%PFX%", prefetch(4*f.bs, (4*f.bs+63)/64),
			"@", aname, "%QB%", fmt.Sprint(oQB), "%PF%", fmt.Sprint(oPF), "%TN%", fmt.Sprint(oTN)).Replace(halfA8Tmpl)
		halves[0] = strings.Replace(halves[0], "// Half 0 (8-bit weights): values 0.. and 0...", "// The whole block (8-bit weights), both halves' sums apart.", 1)
	}
	path8 := fmt.Sprintf(`	TESTQ SI, SI
	JNZ  %[1]s_w16

	// W = round(w·d·inv) (0..127) of four rows packed to bytes (VPACKSSDW, VPACKSSWB) and
	// transposed (VPSHUFB) so that dword l holds lane l's W_4g .. W_4g+3, as the 8-bit kernels
	// of q4_0 and q4_1 pack theirs; their signs OR'ed (a negative W: the int16 path).
	LEAQ %[2]d(SP), R8
	LEAQ %[3]d(SP), R12
	MOVQ %[4]d(SP), R10
	ADDQ $3, R10
	SHRQ $2, R10
	VPXOR Y6, Y6, Y6
	VMOVDQU ·avx2IntAccB8T(SB), Y7
%[1]s_p8:
	VMULPS (R8), Y14, Y0
	VMULPS 32(R8), Y14, Y1
	VMULPS 64(R8), Y14, Y2
	VMULPS 96(R8), Y14, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPOR Y0, Y6, Y6
	VPSHUFB Y7, Y0, Y0
	VMOVDQU Y0, (R12)
	ADDQ $128, R8
	ADDQ $32, R12
	DECQ R10
	JNZ  %[1]s_p8
	VPMOVMSKB Y6, AX
	TESTL AX, AX
	JNZ  %[1]s_w16
	LEAQ %[3]d(SP), AX
	MOVQ AX, %[5]d(SP)
	LEAQ %[6]d(SP), R13
	VMOVDQU ·avx2Ones16(SB), Y10

%[1]s_blk8:
%[7]s
%[8]s
	ADDQ $%[9]d, BX
	ADDQ $128, CX
	ADDQ $16, %[5]d(SP)
	ADDQ $16, R13
	DECQ %[10]d(SP)
	JNZ  %[1]s_blk8
	JMP  %[1]s_bend

%[1]s_w16:
`, lbl, oPB, oA8QP, oTN, oQB, oTT, halves[0], halves[1], f.bs, oNQ)
	rep(tt, tt+path8, 1)
	rep("	CMPQ "+fmt.Sprint(oBL)+"(SP), $0\n	JNE  "+lbl+"_bpair\n", lbl+"_bend:\n	CMPQ "+fmt.Sprint(oBL)+"(SP), $0\n	JNE  "+lbl+"_bpair\n", 1)
	if regexp.MustCompile(`%[A-Z0-9]+%|@`).MatchString(s) {
		panic("kernelA8: a placeholder left")
	}
	if vnni {
		s = vnni8(s)
	}
	out.WriteString(s)
}

// Frame additions of q5_0's adaptive kernel (kernelA8Q5), after frameA8's slots.
const (
	oA8S32    = 3776 // the 8-bit path's int32 sums of a half's first rows (8 vectors)
	frameA8Q5 = 4032
)

// kernelA8Q5 writes q5_0's adaptive kernel (plain AVX2, four accumulators or two; named A8,
// A8Two): the int16
// kernel's (its scaled decoder, q5DecS) with adaptPrepass's choice, and on the 8-bit path (no
// lane a peak's) the 8-bit kernel's work (kernel8: signed weights −127..127 packed with ΣW, the
// codes 0..31 VPMADDUBSW's unsigned operand, four steps' words added before they are widened,
// the finish subtracting off·ΣW), its halves taken from kernel8's text with their frame offsets
// moved to this frame's. The int16 path stores T over 16 (its words hold 16·(c − 16)): the
// 8-bit path takes it back times 16 (exact), and each path loads its decoder's constants.
func kernelA8Q5(out *strings.Builder, f format, nacc int, vnni bool) {
	var b strings.Builder
	kernel(&b, f, false, nacc)
	name, aname, name8 := f.name+"AVX2INT", f.name+"A8AVX2INT", f.name+"B8AVX2INT"
	if nacc == 2 {
		name, aname, name8 = f.name+"TwoAVX2INT", f.name+"A8TwoAVX2INT", f.name+"B8TwoAVX2INT"
	}
	s := adaptPrepass(b.String(), f, nacc, name, aname, frameA8Q5)
	lbl := "a" + aname
	rep := func(old, new string, n int) {
		if c := strings.Count(s, old); c != n {
			panic(fmt.Sprintf("kernelA8Q5: %q found %d times, want %d", old, c, n))
		}
		s = strings.ReplaceAll(s, old, new)
	}
	// kernel8's halves, moved: labels, the tile's and the sums' slots.
	var b8 strings.Builder
	kernel8(&b8, f, nacc, vnni)
	if vnni {
		name8 = strings.Replace(name8, "AVX2INT", "VNNIINT", 1)
	}
	k8 := b8.String()
	i, j := strings.Index(k8, "_blk:\n"), strings.Index(k8, fmt.Sprintf("\tADDQ $%d, BX\n", f.bs))
	halves := k8[i+len("_blk:\n") : j]
	halves = strings.ReplaceAll(halves, "a"+name8+"_", lbl+"_b")
	moves := []string{fmt.Sprintf("%d(SP)", o8QB), fmt.Sprintf("%d(SP)", oQB), fmt.Sprintf("%d(SP)", o8PF), fmt.Sprintf("%d(SP)", oPF),
		fmt.Sprintf("%d(SP)", o8TN), fmt.Sprintf("%d(SP)", oTN)}
	for k := 0; k < 8; k++ {
		moves = append(moves, fmt.Sprintf("%d(SP)", o8S32+32*k), fmt.Sprintf("%d(SP)", oA8S32+32*k))
	}
	halves = strings.NewReplacer(moves...).Replace(halves)
	if m := regexp.MustCompile(`\d+\(SP\)`).FindAllString(halves, -1); len(m) > 0 {
		for _, x := range m {
			ok := false
			for k := 1; k < len(moves); k += 2 {
				ok = ok || x == moves[k]
			}
			if !ok {
				panic("kernelA8Q5: a slot not moved: " + x)
			}
		}
	}
	path8 := fmt.Sprintf(`	TESTQ SI, SI
	JNZ  %[1]s_w16

	// T back from T/16 (the int16 path's), and W = round(w·d·inv) (−127..127) of four rows
	// packed to bytes as kernel8 packs them, ΣW per lane (off·ΣW stored for the finish).
	VBROADCASTSS ·avx2A8Sixteen(SB), Y13
	VMULPS Y13, Y15, Y15
	VMOVUPS Y15, %[6]d(SP)
	LEAQ %[2]d(SP), R8
	LEAQ %[3]d(SP), R12
	MOVQ %[4]d(SP), R10
	ADDQ $3, R10
	SHRQ $2, R10
	VPXOR Y6, Y6, Y6
	VMOVDQU ·avx2IntAccB8T(SB), Y7
%[1]s_p8:
	VMULPS (R8), Y14, Y0
	VMULPS 32(R8), Y14, Y1
	VMULPS 64(R8), Y14, Y2
	VMULPS 96(R8), Y14, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPADDD Y0, Y1, Y4
	VPADDD Y2, Y3, Y5
	VPADDD Y4, Y5, Y4
	VPADDD Y4, Y6, Y6
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPSHUFB Y7, Y0, Y0
	VMOVDQU Y0, (R12)
	ADDQ $128, R8
	ADDQ $32, R12
	DECQ R10
	JNZ  %[1]s_p8
	VPSLLD $%[11]d, Y6, Y6
	VMOVDQU Y6, %[12]d(SP)
	LEAQ %[3]d(SP), AX
	MOVQ AX, %[5]d(SP)
	LEAQ %[6]d(SP), R13
	%[13]s

%[1]s_blk8:
%[7]s
	ADDQ $%[9]d, BX
	ADDQ $128, CX
	ADDQ $16, %[5]d(SP)
	ADDQ $16, R13
	DECQ %[10]d(SP)
	JNZ  %[1]s_blk8
	JMP  %[1]s_bend

%[1]s_w16:
	%[8]s
`, lbl, oPB, oA8QP, oTN, oQB, oTT, halves, f.constsS, f.bs, oNQ, f.offShift, oSS, q5Consts)
	tt := fmt.Sprintf("	VMOVUPS Y15, %d(SP)\n\n", oTT)
	rep(tt, tt+path8, 1)
	rep("	CMPQ "+fmt.Sprint(oBL)+"(SP), $0\n	JNE  "+lbl+"_bpair\n", lbl+"_bend:\n	CMPQ "+fmt.Sprint(oBL)+"(SP), $0\n	JNE  "+lbl+"_bpair\n", 1)
	if regexp.MustCompile(`%[A-Z0-9]+%|@`).MatchString(s) {
		panic("kernelA8Q5: a placeholder left")
	}
	if vnni {
		s = sumWDot(vnni8(s))
	}
	out.WriteString(s)
}

// Frame additions of iq4_nl's adaptive kernel (kernelA8IQ4), after frameA8's slots.
const (
	oA8IQ4S    = 3776 // the 8-bit weights' row signs: quad g's at 32g, block b's (four bytes, each dword of its lane) at 32g + 16b
	frameA8IQ4 = 4288
)

// a8RatioIQ4 is iq4_nl's adaptive peak test (kernelA8IQ4; multi_avx2intacc_amd64.go's
// avx2A8RatioIQ4, the same figure).
const a8RatioIQ4 = 4

// iq4Dec8 is nibDec8's nibbles (four rows' payload bytes of half `half` at a, b, c, d: dword k
// holds the four rows' nibble of one value, split layout) looked up as iq4_nl's signed levels
// (Y11, VPSHUFB) and each row's byte multiplied by the sign of its row's scale in the block
// (VPSIGNB by the quad's sign dword at 512(R8), broadcast: −1, 0 or +1 a row), so that the
// weights |W| are VPMADDUBSW's unsigned operand. Scratch Y14, Y15.
func iq4Dec8(half int, a, b, c, d string) string {
	return nibDec8(2)(half, a, b, c, d) + `
	VPSHUFB Y12, Y11, Y12
	VPSHUFB Y13, Y11, Y13
	VPBROADCASTD 512(R8), Y14
	VPSIGNB Y14, Y12, Y12
	VPSIGNB Y14, Y13, Y13`
}

// iq4Sign is iq4Dec8's multiplication of the levels by the rows' signs, which the AVX-VNNI form
// leaves out (iq4U8Swap).
const iq4Sign = `
	VPBROADCASTD 512(R8), Y14
	VPSIGNB Y14, Y12, Y12
	VPSIGNB Y14, Y13, Y13`

// ubRe matches a VPMADDUBSW of the weights (Y8, Y9: the unsigned operand) and the looked-up
// levels (Y12, Y13: the signed one).
var ubRe = regexp.MustCompile(`VPMADDUBSW (Y1[23]), (Y[89]), `)

// iq4U8Swap is kernelA8IQ4's 8-bit row loop text s for its AVX-VNNI form (vnni8 makes each
// VPMADDUBSW a VEX VPDPBUSD of the same operands): the levels + 128 (1..241,
// ·avx2IntAccIQ4Levels, the int16 path's table) the unsigned operand and the weights W
// (−127..127) as the prepass packs them the signed one, where the plain kernel multiplies |W|
// by the levels times the rows' signs (VPSIGNB). VPDPBUSD adds four such products into a
// dword without saturating, so the sums are Σ W·(L + 128) = Σ W·L + 128·ΣW exactly, and the
// finish takes off 128·ΣW (from oSS, which the 8-bit prepass sums with one VPDPBUSD of bytes 1
// a quad, as sumWDot): the same Σ W·L, T and results bit for bit, without the row loop's two
// VPSIGNB and sign broadcast a quad and half and the prepass's five sign operations a quad. The
// prepass no longer tests for weights of both signs in a row: the int16 path it sent them to
// forms the same W and sums for every lane without a peak (the only tiles the 8-bit path takes),
// so the results do not depend on it (TestAVX2IntAccB8VNNIMatches' mixed weights). On the Intel
// Xeon (attn's TestDecodeBreakdown, iq4_nl, KVLAB_NO_AVX512, six alternations with the former
// kernel's binary, load ~13, min ns a row): values 10.63–10.84 → 9.94–10.51 streamed, 10.21–10.83
// → 9.70–10.29 with the rows in cache (KVLAB_TOUCH=kv, KVLAB_CHUNK=4096), the whole step
// 17.38–18.14 → 16.81–17.92.
func iq4U8Swap(s string) string {
	if !ubRe.MatchString(s) {
		panic("iq4U8Swap: no product")
	}
	return ubRe.ReplaceAllString(s, "VPMADDUBSW $2, $1, ")
}

// kernelA8IQ4 writes iq4_nl's adaptive kernel (plain AVX2, four accumulators or two; named A8,
// A8Two): the int16 kernel's tiles, prepass, row loops and finish with adaptPrepass's choice of
// the weights' scale per tile and lane (32767 for a softmax peak's, avx2A8RatioIQ4·M > S, else
// 127), and where no lane of a tile's block pair is a peak's, an 8-bit path. The levels are
// signed (−127..113) and the scales d of either sign (the encoder writes d = max/−127), so the
// weights W = round(w·d·inv) (−127..127) are not VPMADDUBSW's unsigned operand as they stand:
// the 8-bit prepass ORs the four accumulators' W of each row and block (a byte: its sign is the
// sign of the row's d·w, zero where every W is), stores those bytes S (a dword of four rows per
// quad and block) and W·sign(S) = |W|, and the row loop multiplies the levels by sign(S)
// (VPSIGNB): Σ |W|·sign(S)·L = Σ W·L where every nonzero W of a row and block has S's sign,
// which holds for weights of one sign (softmax weights); a byte of W·sign(S) below zero (weights
// of both signs) sends the block pair to the int16 path. |W|·|L| ≤ 127·127, so a word of two
// products is at most 32258 and VPMADDWD by ones widens each quad's words into the int32 sums
// (dotsA8: three operations for 32 products). Each lane's W, T and sums are the same on either
// path (Σ W·L exactly), so a query's sums do not depend on the other lanes' or on the path.
func kernelA8IQ4(out *strings.Builder, f format, nacc int, vnni bool) {
	var b strings.Builder
	kernel(&b, f, false, nacc)
	s := b.String()
	name, aname := f.name+"AVX2INT", f.name+"A8AVX2INT"
	if nacc == 2 {
		name, aname = f.name+"TwoAVX2INT", f.name+"A8TwoAVX2INT"
	}
	rep := func(old, new string, n int) {
		if c := strings.Count(s, old); c != n {
			panic(fmt.Sprintf("kernelA8IQ4: %q found %d times, want %d", old, c, n))
		}
		s = strings.ReplaceAll(s, old, new)
	}
	s = adaptPrepass(s, f, nacc, name, aname, frameA8IQ4)
	lbl := "a" + aname
	tt := fmt.Sprintf("	VMOVUPS Y15, %d(SP)\n\n", oTT)
	fs := f
	fs.split, fs.off = true, 0 // Σ W·L: no offset to take off
	ones := "·avx2Ones16(SB)"
	// swap is the row loops' text for this form: as it is, or iq4U8Swap'ed (AVX-VNNI).
	dec8, swap := iq4Dec8, func(s string) string { return s }
	if vnni {
		// iq4U8: the levels + 128 unsigned against the signed W, 128·ΣW taken off.
		fs.off, fs.offShift = 128, 7
		dec8 = func(half int, a, b, c, d string) string {
			return strings.TrimSuffix(iq4Dec8(half, a, b, c, d), iq4Sign)
		}
		swap = iq4U8Swap
	}
	dots := func(ones string) string { return swap(dotsA8O(ones)) }
	var halves [2]string
	for h := 0; h < 2 && nacc == 4; h++ {
		halves[h] = strings.NewReplacer("%H%", fmt.Sprint(h), "%LO%", fmt.Sprint(f.lo[h]), "%HI%", fmt.Sprint(f.hi[h]),
			"%DEC%", dec8(h, "(R12)", "(R12)(R9*1)", "(R12)(R9*2)", "(R12)(R11*1)"),
			"%DECT%", dec8(h, "(R12)", "(AX)", "(DX)", "(R12)"), "%DOTS%", dots(ones),
			"%FINISH%", finish(fs, h, 4, 0), "%PFX%", prefetch(2*f.bs, (2*f.bs+63)/64),
			"@", aname, "%QB%", fmt.Sprint(oQB), "%PF%", fmt.Sprint(oPF), "%TN%", fmt.Sprint(oTN)).Replace(halfA8Tmpl)
	}
	if nacc == 2 {
		// The whole block a pass: half 0's sums in Y0..Y3, half 1's in Y4..Y7, a quad's two
		// weights broadcast once (the decoder leaves Y8, Y9).
		dec := func(a, b, c, d string) string {
			return swap(dec8(0, a, b, c, d) + "\n" + dotsA8N(ones, 2, 0, true) + "\n\t" + dec8(1, a, b, c, d))
		}
		halves[0] = strings.NewReplacer("%H%", "0", "%LO%", "0", "%HI%", "0",
			"%DEC%", dec("(R12)", "(R12)(R9*1)", "(R12)(R9*2)", "(R12)(R11*1)"),
			"%DECT%", dec("(R12)", "(AX)", "(DX)", "(R12)"), "%DOTS%", swap(dotsA8N(ones, 2, 4, false)),
			"%FINISH%", finish(fs, 0, 2, 0)+"\n\tMOVQ CX, R12\n"+finish(fs, 1, 2, 4), "%PFX%", prefetch(4*f.bs, (4*f.bs+63)/64),
			"@", aname, "%QB%", fmt.Sprint(oQB), "%PF%", fmt.Sprint(oPF), "%TN%", fmt.Sprint(oTN)).Replace(halfA8Tmpl)
		halves[0] = strings.Replace(halves[0], "// Half 0 (8-bit weights): values 0.. and 0...", "// The whole block (8-bit weights), both halves' sums apart.", 1)
	}
	path8 := fmt.Sprintf(`	TESTQ SI, SI
	JNZ  %[1]s_w16

	// W = round(w·d·inv) (−127..127) of four rows packed to bytes and transposed as kernel8
	// packs them (dword h of lane b: accumulator h's W of the quad's rows); S, the OR of a
	// lane's four dwords (VPSHUFD, VPOR: every dword the same), stored 512 bytes on, and
	// W·sign(S) in place of W; a byte of it below zero (weights of both signs) sends the block
	// pair to the int16 path.
	LEAQ %[2]d(SP), R8
	LEAQ %[3]d(SP), R12
	MOVQ %[4]d(SP), R10
	ADDQ $3, R10
	SHRQ $2, R10
	VPXOR Y6, Y6, Y6
	VMOVDQU ·avx2IntAccB8T(SB), Y7
%[1]s_p8:
	VMULPS (R8), Y14, Y0
	VMULPS 32(R8), Y14, Y1
	VMULPS 64(R8), Y14, Y2
	VMULPS 96(R8), Y14, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPSHUFB Y7, Y0, Y0
	VPSHUFD $0x4E, Y0, Y1
	VPOR Y1, Y0, Y1
	VPSHUFD $0xB1, Y1, Y2
	VPOR Y2, Y1, Y1
	VPSIGNB Y1, Y0, Y0
	VPOR Y0, Y6, Y6
	VMOVDQU Y0, (R12)
	VMOVDQU Y1, 512(R12)
	ADDQ $128, R8
	ADDQ $32, R12
	DECQ R10
	JNZ  %[1]s_p8
	VPMOVMSKB Y6, AX
	TESTL AX, AX
	JNZ  %[1]s_w16
	LEAQ %[3]d(SP), AX
	MOVQ AX, %[5]d(SP)
	LEAQ %[6]d(SP), R13
	VMOVDQU ·avx2IQ4Levels(SB), Y11

%[1]s_blk8:
%[7]s
%[8]s
	ADDQ $%[9]d, BX
	ADDQ $128, CX
	ADDQ $16, %[5]d(SP)
	ADDQ $16, R13
	DECQ %[10]d(SP)
	JNZ  %[1]s_blk8
	VBROADCASTI128 ·avx2IntAccIQ4Levels(SB), Y11
	JMP  %[1]s_bend

%[1]s_w16:
`, lbl, oPB, oA8QP, oTN, oQB, oTT, halves[0], halves[1], f.bs, oNQ)
	rep(tt, tt+path8, 1)
	rep("	CMPQ "+fmt.Sprint(oBL)+"(SP), $0\n	JNE  "+lbl+"_bpair\n", lbl+"_bend:\n	CMPQ "+fmt.Sprint(oBL)+"(SP), $0\n	JNE  "+lbl+"_bpair\n", 1)
	if vnni {
		// iq4U8: W stored as it is and ΣW summed (one VPDPBUSD of bytes 1 a quad, sumWDot's),
		// 128·ΣW per lane into oSS for the finish; no signs, no test of them.
		rep("\tVPSHUFD $0x4E, Y0, Y1\n\tVPOR Y1, Y0, Y1\n\tVPSHUFD $0xB1, Y1, Y2\n\tVPOR Y2, Y1, Y1\n\tVPSIGNB Y1, Y0, Y0\n\tVPOR Y0, Y6, Y6\n\tVMOVDQU Y0, (R12)\n\tVMOVDQU Y1, 512(R12)\n",
			"\t"+vexReg(opVPDPBUSD, 6, 5, 0)+"\n\tVMOVDQU Y0, (R12)\n", 1)
		rep("\tVMOVDQU ·avx2IntAccB8T(SB), Y7\n"+lbl+"_p8:\n",
			"\tVMOVDQU ·avx2IntAccB8T(SB), Y7\n\tVPCMPEQB Y5, Y5, Y5\n\tVPABSB Y5, Y5 // bytes 1\n"+lbl+"_p8:\n", 1)
		rep("\tVPMOVMSKB Y6, AX\n\tTESTL AX, AX\n\tJNZ  "+lbl+"_w16\n",
			fmt.Sprintf("\tVPSLLD $7, Y6, Y6\n\tVMOVDQU Y6, %d(SP)\n", oSS), 1)
		rep("\tVMOVDQU ·avx2IQ4Levels(SB), Y11\n", "\tVBROADCASTI128 ·avx2IntAccIQ4Levels(SB), Y11 // the levels + 128\n", 1)
		rep("); S, the OR of a\n\t// lane's four dwords (VPSHUFD, VPOR: every dword the same), stored 512 bytes on, and\n\t// W·sign(S) in place of W; a byte of it below zero (weights of both signs) sends the block\n\t// pair to the int16 path.\n",
			"), stored as they are;\n\t// ΣW per lane summed (VPDPBUSD of bytes 1) for the finish to take 128·ΣW off (iq4U8Swap).\n", 1)
	}
	if oA8QP+512 != oA8IQ4S || oA8IQ4S+512 != frameA8IQ4 {
		panic("kernelA8IQ4: frame")
	}
	if regexp.MustCompile(`%[A-Z0-9]+%|@`).MatchString(s) {
		panic("kernelA8IQ4: a placeholder left")
	}
	if vnni {
		s = vnni8(s)
	}
	out.WriteString(s)
}
