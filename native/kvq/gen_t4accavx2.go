//go:build ignore

// gen_t4accavx2 writes multi_t4accavx2_amd64.s: the AVX2 integer accumulate (value) kernels of
// turbo4 and tq4 (and with their own decoding, t3Dec and t2Dec, turbo3 and turbo2), the 256-bit ports of gen_turboacc.go's AVX-512 ones (contract in
// multi_t4accavx2_amd64.go). Run with `go generate ./native/kvq`.
//
// Per tile of ≤ 64 rows a prepass forms w·s for each row and accumulator (s the row's f16 scale
// widened, tq4's f32 as it is), the largest magnitude per accumulator, inv = min(32767/M, 2¹⁰⁰)
// and T·unit (0 where M = 0), and the int16 weights W = round(w·s·inv), paired: row 2p's in
// the low word of accumulator h's dword, row 2p + 1's in the high one. These are the AVX-512
// kernels' float32 operations on the same operands, so the same W and T·unit.
//
// The row loop takes 16 values (8 code bytes) of every row pair of the tile at a time: the two
// rows' 8 bytes interleaved (VPUNPCKLBW: a's byte k, then b's), the low and the high nibbles
// masked apart, looked up as signed levels (tq4Ints) with VPSHUFB and widened to words
// (VPMOVSXBW), so that dword k of the even vector holds (L_a[2k], L_b[2k]) and of the odd one
// (L_a[2k+1], L_b[2k+1]). Each accumulator's pair of weights, broadcast as one dword, times
// them gives W_a·L_a + W_b·L_b per dword: VPMADDWD and VPADDD, or with AVX-VNNI one VEX
// VPDPWSSD (written as bytes: Go's assembler emits the EVEX form). The int32 sums Σ W·L are
// exact (|Σ| ≤ 64·32767·104 < 2³¹), the AVX-512 kernels' −128·ΣW + Σ W·(L + 128) bit for bit;
// per tile and 16 values they are put back in the values' order (two unpacks, two lane
// permutes), converted and added times T·unit with one FMA, as there. So the accumulators
// are the AVX-512 kernels' bit for bit (TestT4AccAVX2Match).
//
// Cost per row of 128 values and four accumulators: 32 VPMADDWD and 32 VPADDD (AVX-VNNI: 32
// VPDPWSSD), and 8 loads and 20 shuffles, masks and widenings, against the float kernels' 64
// FMAs and ~100 decode operations (two VPERMPS, a blend, a shift, a widening load per 8
// values), and 16 scale multiplies.
//
// The 8-bit kernels (tmpl8, below: 7-bit weights, rows in quads, VPMADDUBSW; with AVX-VNNI one
// VEX VPDPBUSD in place of VPMADDUBSW, VPMADDWD and VPADDD) replace the 16-bit ones where
// KVLAB_ACC16 is unset. On an Intel Xeon (Sapphire Rapids class) the 16-bit VPDPWSSD kernels
// took 8.5 ns a row (turbo4, in cache), the 8-bit VPDPBUSD ones 6.0, the 8-bit VPMADDUBSW ones
// 9.7 (multi_t4accavx2_amd64.go has the figures).
package main

import (
	"fmt"
	"math"
	"os"
	"strings"
)

// The row loops prefetch the next tile's rows into L1 (PREFETCHT0), spread over the tile's
// passes, where they took the tile four tiles on: streamed past the caches, 0.22–0.35 ns a row
// less for turbo4, 0.09–0.12 for turbo2 (medians of the per-round differences, two runs of
// 30–40 rounds interleaved by call, 4096-row calls over 64 MiB, AMD Zen 4, plain AVX2, load
// 8.5; two tiles on in between; in cache the same).

// Frame layout (hardware SP offsets).
const (
	oWS   = 0    // w·s of the tile's rows, 16 bytes a row; a zero row after
	oQP   = 1040 // int16 weight pairs: pair p at 16p, accumulator h's dword at 16p + 4h
	oTU   = 1552 // T·unit per accumulator
	oINV  = 1568 // inv per accumulator
	oTN   = 1584 // rows in the tile
	oPF   = 1592 // prefetch pointer
	oPS   = 1600 // prefetch step a row pair
	oUL   = 1608 // units left in the row
	oRL   = 1616 // rows left after this tile
	oWP   = 1624 // the tile's first weight
	frame = 1632
)

// t3Dec decodes turbo3's 16 values (6 code bytes, 8 read: the row's scale follows its last
// codes) of rows a and b: the two rows' bytes broadcast to (a, b, a, b) qwords; two VPSHUFB
// (·t3AccSpread) give dword j of lane l, vector e the 16-bit windows of value i = 8e + 4l + j
// in both rows (a's low, b's high), VPSRLVD shifts each by the value's bit offset 3i mod 8 (the
// same for i and i + 8, so one table of counts serves both vectors), a
// mask keeps the codes and VPACKUSWB packs them to bytes: lane 0 values 0..3 and 8..11, lane 1
// 4..7 and 12..15, a's code and b's in turn. Looked up as signed levels and widened to words:
// Y10 holds the level pairs of values 0..3, 8..11, Y11 of 4..7, 12..15.
const t3Dec = `	VPBROADCASTQ (R12), Y10
	VPBROADCASTQ (R12)(R9*1), Y11
	VPBLENDD $0xCC, Y11, Y10, Y10
	VPSHUFB ·t3AccSpread(SB), Y10, Y11
	VPSHUFB ·t3AccSpread+32(SB), Y10, Y10
	VPSRLVD ·t3AccShift(SB), Y11, Y11
	VPSRLVD ·t3AccShift(SB), Y10, Y10
	VPAND Y9, Y11, Y11
	VPAND Y9, Y10, Y10
	VPACKUSWB Y10, Y11, Y10
	VPSHUFB Y10, Y8, Y10
	VEXTRACTI128 $1, Y10, X11
	VPMOVSXBW X10, Y10
	VPMOVSXBW X11, Y11
`

// t2Dec decodes turbo2's 16 values (4 code bytes) of rows a and b: the bytes interleaved (a's
// byte j, then b's) and broadcast to four qwords, qword t shifted by 2t (VPSRLVQ) and masked so
// that its bytes hold code t of each byte: values 4j + t of a and b in turn. Looked up as
// signed levels and widened to words: Y10 holds the level pairs of values 4j (j = 0..3), then
// 4j + 1, Y11 of 4j + 2, then 4j + 3.
const t2Dec = `	VMOVD (R12), X10
	VMOVD (R12)(R9*1), X11
	VPUNPCKLBW X11, X10, X10
	VPBROADCASTQ X10, Y10
	VPSRLVQ ·t2AccShift(SB), Y10, Y10
	VPAND Y9, Y10, Y10
	VPSHUFB Y10, Y8, Y10
	VEXTRACTI128 $1, Y10, X11
	VPMOVSXBW X10, Y10
	VPMOVSXBW X11, Y11
`

// t2Finish is finish for turbo2's order: Y2h holds values 4j (j = 0..3) then 4j + 1, Y2h+1
// 4j + 2 then 4j + 3; two lane permutes, two unpacks and two qword permutes restore it.
func t2Finish(tu int) string {
	return finishVia(tu, `	VPERM2I128 $0x20, Y%[2]d, Y%[1]d, Y12
	VPERM2I128 $0x31, Y%[2]d, Y%[1]d, Y13
	VPUNPCKLDQ Y13, Y12, Y10
	VPUNPCKHDQ Y13, Y12, Y11
	VPERMQ $0xD8, Y10, Y12
	VPERMQ $0xD8, Y11, Y13
`)
}

// t3Finish is finish for turbo3's order: Y2h holds values 0..3, 8..11, Y2h+1 4..7, 12..15.
func t3Finish(tu int) string {
	return finishVia(tu, `	VPERM2I128 $0x20, Y%[2]d, Y%[1]d, Y12
	VPERM2I128 $0x31, Y%[2]d, Y%[1]d, Y13
`)
}

// t3AccTables writes turbo3's spread controls and shift counts (t3Dec) and the codes' mask.
func t3AccTables() string {
	var b strings.Builder
	var spread [64]byte
	var shift [8]uint32
	for e := 0; e < 2; e++ {
		for l := 0; l < 2; l++ {
			for j := 0; j < 4; j++ {
				i := 8*e + 4*l + j
				p := 3 * i / 8
				o := 32*e + 16*l + 4*j
				spread[o], spread[o+1], spread[o+2], spread[o+3] = byte(p), byte(p+1), byte(8+p), byte(9+p)
				shift[4*l+j] = uint32(3 * i % 8) // i and i + 8 alike
			}
		}
	}
	for i := 0; i < 64; i += 8 {
		var x uint64
		for k := 7; k >= 0; k-- {
			x = x<<8 | uint64(spread[i+k])
		}
		fmt.Fprintf(&b, "DATA ·t3AccSpread+%d(SB)/8, $0x%016x\n", i, x)
	}
	b.WriteString("GLOBL ·t3AccSpread(SB), RODATA|NOPTR, $64\n\n")
	for i := 0; i < 8; i += 2 {
		fmt.Fprintf(&b, "DATA ·t3AccShift+%d(SB)/8, $0x%08x%08x\n", 4*i, shift[i+1], shift[i])
	}
	b.WriteString("GLOBL ·t3AccShift(SB), RODATA|NOPTR, $32\n\n")
	for q := 0; q < 4; q++ {
		fmt.Fprintf(&b, "DATA ·t2AccShift+%d(SB)/8, $%d\n", 8*q, 2*q)
	}
	b.WriteString("GLOBL ·t2AccShift(SB), RODATA|NOPTR, $32\n\n")
	return b.String()
}

const dec = `	VMOVQ (R12), X10
	VMOVQ (R12)(R9*1), X11
	VPUNPCKLBW X11, X10, X10
	VPSRLW $4, X10, X11
	VPAND X9, X10, X10
	VPAND X9, X11, X11
	VPSHUFB X10, X8, X10
	VPSHUFB X11, X8, X11
	VPMOVSXBW X10, Y10
	VPMOVSXBW X11, Y11
`

// dots: accumulators Y2h (even values) and Y2h+1 (odd) += the pair's weights of accumulator h
// (dword h at R8) times the decoded vectors Y10, Y11.
func dots(vnni bool) string {
	var b strings.Builder
	for h := 0; h < 4; h++ {
		w := 12 + 3*(h%2) // Y12 or Y15
		fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), Y%d\n", 4*h, w)
		if vnni {
			fmt.Fprintf(&b, "\t%s\n\t%s\n", vexReg(opVPDPWSSD, 2*h, 10, w), vexReg(opVPDPWSSD, 2*h+1, 11, w))
			continue
		}
		fmt.Fprintf(&b, "\tVPMADDWD Y%[1]d, Y10, Y13\n\tVPADDD Y13, Y%[2]d, Y%[2]d\n\tVPMADDWD Y%[1]d, Y11, Y14\n\tVPADDD Y14, Y%[3]d, Y%[3]d\n", w, 2*h, 2*h+1)
	}
	return b.String()
}

// finish: per accumulator h, Y2h and Y2h+1 put in the values' order, converted and added times
// T·unit to the accumulator's 16 values at R12.
func finish(tu int) string {
	return finishVia(tu, `	VPUNPCKLDQ Y%[2]d, Y%[1]d, Y10
	VPUNPCKHDQ Y%[2]d, Y%[1]d, Y11
	VPERM2I128 $0x20, Y11, Y10, Y12
	VPERM2I128 $0x31, Y11, Y10, Y13
`)
}

// finishVia is finish with order, per accumulator h, a format of Y%[1]d = Y2h and Y%[2]d =
// Y2h+1 that leaves the sums of values 0..7 in Y12 and of 8..15 in Y13: they are converted and
// added times T·unit (%[3]d(SP), tu the frame offset) to the accumulator's 16 values at R12.
func finishVia(tu int, order string) string {
	var b strings.Builder
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, order+`	VCVTDQ2PS Y12, Y12
	VCVTDQ2PS Y13, Y13
	VBROADCASTSS %[3]d(SP), Y14
	VMOVUPS (R12), Y15
	VFMADD231PS Y14, Y12, Y15
	VMOVUPS Y15, (R12)
	VMOVUPS 32(R12), Y15
	VFMADD231PS Y14, Y13, Y15
	VMOVUPS Y15, 32(R12)
	ADDQ DX, R12
`, 2*h, 2*h+1, tu+4*h)
	}
	return b.String()
}

// tileP1 is a tile's start and first prepass, shared by the 16-bit kernels (tmpl: tiles of 64
// rows) and the 8-bit ones (tmpl8): the tile's rows (at most %TILE%, 2^%TSHIFT%), the next
// tile's address for the row loops' prefetch, and w·s per row and accumulator with the largest
// magnitude per accumulator (X10), and where %SUMINIT% and %SUM% are set (the adaptive
// kernels) the sum of the magnitudes (X11, in row order); X0 is zeroed after it. The largest
// magnitudes of the even rows and of the odd ones go in two chains (X10, X13), joined at the
// end: the same M (max is exact), where one VMAXPS chain a row held the loop to its latency
// and the row loops, which need inv, waited on it. Intel Xeon (Sapphire Rapids class,
// KVLAB_NO_AVX512, AVX-VNNI 8-bit kernels, TestT4AccB8AVX2Speed, old and new test binaries
// alternated twice, min, load 14–17; in cache / streamed): turbo2 6.32–6.41 → 5.28 / 6.68–7.05
// → 6.18–6.44 ns a row, turbo3 7.23–7.68 → 6.74–6.77 / 8.79–9.02 → 8.40–8.48, turbo4
// 5.71–6.15 → 5.24–5.97 / 6.56–6.71 → 5.79–5.89, tq4 5.44–5.57 → 4.97–5.04 / 6.28–6.79 →
// 5.80–6.78; the decode's values phase (attn TestDecodeBreakdown, two alternations, min)
// turbo2 6.80–7.01 → 6.44–6.62, turbo3 8.66–9.04 → 8.20–8.84, turbo4 7.44–7.45 → 7.08–7.21,
// tq4 6.99–7.21 → 6.41–6.69. It now takes four rows a step (a last one to three one at a time),
// each row's scale, weights and w·s addressed off three pointers (the scales', the weights' and
// the w·s's; BX and CX hold 3·rb and 3·wstride), and the maxima in four chains (rows 4k + j in
// X10, X13, X12, X14): 3 pointer updates and a count a step where every row took 3 and a count,
// the magnitudes and sums the same (the sum's chain still in row order), so the same M, W and
// results bit for bit. Its loop stays port-5 bound (VPBROADCASTW and VCVTPH2PS: two a row).
// llvm-mca a row (-mcpu alderlake / skylake / znver3): 2.42 → 2.37, 2.82 → 2.28, 1.90 → 1.85
// cycles. TestT4AccB8AVX2Speed (Intel Xeon, KVLAB_NO_AVX512, two alternations of test binaries,
// load 7–8, min ns a row, 8-bit kernels in cache / streamed): AVX-VNNI turbo2 5.67–5.76 →
// 5.22–5.41 / 6.61–6.68 → 6.57–6.60, turbo3 7.92–8.22 → 7.44–7.83 / 9.46–9.61 → 9.17–9.29,
// turbo4 5.70–5.96 → 5.36–5.75 / 6.95–7.08 → 7.06–7.18, tq4 5.56–5.93 → 5.41–5.60 / 6.30–6.65 →
// 6.45–6.70; plain AVX2 turbo2 9.21–9.49 → 9.05–9.14, turbo3 10.42–10.92 → 9.98–10.24, turbo4
// 9.37–9.81 → 9.09–9.18, tq4 9.21–9.34 → 8.35–8.70 in cache (streamed within ±0.4).
var tileP1 = `@_tile:
	MOVQ %RL%(SP), R10
	CMPQ R10, $%TILE%
	JLE  @_tn
	MOVQ $%TILE%, R10
@_tn:
	MOVQ R10, %TN%(SP)
	SUBQ R10, %RL%(SP)
	MOVQ rb+32(FP), AX
	SHLQ $%TSHIFT%, AX
	ADDQ DI, AX
	MOVQ AX, %PF%(SP)          // the next tile, which the row loops prefetch

	// w·s per row and accumulator, and the largest magnitude per accumulator (X10).
	LEAQ (DI)(%SREG%*1), R12   // the first row's scale
	MOVQ %WP%(SP), R8
	MOVQ wstride+56(FP), R9
	MOVQ rb+32(FP), R11
	LEAQ (R11)(R11*2), BX      // 3·rb
	LEAQ (R9)(R9*2), CX        // 3·wstride
	LEAQ %WS%(SP), R15
	VXORPS X10, X10, X10
	VXORPS X12, X12, X12
	VXORPS X13, X13, X13
	VXORPS X14, X14, X14
%SUMINIT%	VPCMPEQD X9, X9, X9
	VPSRLD $1, X9, X9          // the magnitude mask
	CMPQ R10, $4
	JB   @_p1r
@_p1:
` + p1Row("(R12)", "(R8)", "(R15)", 10) + p1Row("(R12)(R11*1)", "(R8)(R9*1)", "16(R15)", 13) +
	p1Row("(R12)(R11*2)", "(R8)(R9*2)", "32(R15)", 12) + p1Row("(R12)(BX*1)", "(R8)(CX*1)", "48(R15)", 14) + `	LEAQ (R12)(R11*4), R12
	LEAQ (R8)(R9*4), R8
	ADDQ $64, R15
	SUBQ $4, R10
	CMPQ R10, $4
	JAE  @_p1
@_p1r:
	TESTQ R10, R10
	JZ   @_p1e
@_p1s:
` + p1Row("(R12)", "(R8)", "(R15)", 10) + `	ADDQ R11, R12
	ADDQ R9, R8
	ADDQ $16, R15
	DECQ R10
	JNZ  @_p1s
@_p1e:
	VMAXPS X13, X10, X10
	VMAXPS X14, X12, X12
	VMAXPS X12, X10, X10
	VXORPS X0, X0, X0
`

// p1Row is one row of tileP1's first prepass: the row's scale at sa (%SCALE%'s SADDR), its
// weights at wa, w·s stored at wsa, its magnitudes into the sum (%SUM%) and the largest
// magnitudes' chain X(chain).
func p1Row(sa, wa, wsa string, chain int) string {
	return fmt.Sprintf(`	%%SCALE:%[1]s%%
	VMULPS %[2]s, X0, X0
	VMOVUPS X0, %[3]s
	VANDPS X9, X0, X1
%%SUM%%	VMAXPS X1, X%[4]d, X%[4]d
`, sa, wa, wsa, chain)
}

// scaleReplacer replaces tileP1's %SCALE:addr% markers with scale, a row scale's load and
// widening with SADDR standing for the address, and %SREG% with sreg, the register holding
// the scale's byte offset in a row.
func scaleReplacer(scale, sreg string) *strings.Replacer {
	var pairs []string
	for _, a := range []string{"(R12)", "(R12)(R11*1)", "(R12)(R11*2)", "(R12)(BX*1)"} {
		pairs = append(pairs, "%SCALE:"+a+"%", strings.ReplaceAll(scale, "SADDR", a))
	}
	return strings.NewReplacer(append(pairs, "%SREG%", sreg)...)
}

// body16 is the 16-bit kernels' work on a tile after its first prepass: inv, T·unit, the
// int16 weight pairs and every unit's row loop over the tile's row pairs; %W% makes its labels
// unique, %PSW% is the frame offset of its prefetch step, %QMAX16% sets X13 to the largest
// weight per accumulator (qmax16; the adaptive kernels' 127 where an accumulator's tile is not a
// peak's, so that its W, T and sums are body8's whatever the other accumulators' weights).
const body16 = `	// inv = min(32767/M, cap), T = 1/inv where M > 0; both 0 where M = 0.
	VXORPS X12, X12, X12
	VCMPPS $0x0E, X12, X10, X11
%QMAX16%	VDIVPS X10, X13, X14
	VBROADCASTSS ·tAccInvCap(SB), X15
	VMINPS X15, X14, X14
	VANDPS X11, X14, X14
	VMOVUPS X14, %INV%(SP)
	VBROADCASTSS ·tAccOne(SB), X13
	VDIVPS X14, X13, X15
	VANDPS X11, X15, X15
	VBROADCASTSS ·%UNIT%(SB), X13
	VMULPS X13, X15, X15
	VMOVUPS X15, %TU%(SP)

	// W = round(w·s·inv) as int16, rows paired: (W_2p, W_2p+1) per dword.
	VBROADCASTF128 %INV%(SP), Y14
	LEAQ %WS%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	INCQ R10
	SHRQ $1, R10
@_p2%W%:
	VMULPS (R8), Y14, Y0
	VCVTPS2DQ Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPSLLD $16, X1, X1
	VPBLENDW $0xAA, X1, X0, X0
	VMOVDQU X0, (R12)
	ADDQ $32, R8
	ADDQ $16, R12
	DECQ R10
	JNZ  @_p2%W%

	%TABLES%
	MOVQ nv+16(FP), AX
	SHRQ $4, AX
	MOVQ AX, %UL%(SP)
	XORQ BX, BX                // byte offset of the unit in a row
	MOVQ acc+0(FP), CX         // the unit's accumulators
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators

@_unit%W%:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	LEAQ (DI)(BX*1), R12
	LEAQ %QP%(SP), R8
	MOVQ %PF%(SP), R15
	MOVQ %PSW%(SP), R11
	MOVQ rb+32(FP), R9
	MOVQ %TN%(SP), R10
	SHRQ $1, R10
	JZ   @_odd%W%
@_pair%W%:
	PREFETCHT0 (R15)
	ADDQ R11, R15
%DEC%%DOTS%	ADDQ $16, R8
	LEAQ (R12)(R9*2), R12
	DECQ R10
	JNZ  @_pair%W%
@_odd%W%:
	MOVQ R15, %PF%(SP)
	TESTQ $1, %TN%(SP)
	JZ   @_fin%W%
	XORQ R9, R9                // a lone last row: b reads a again, with weight 0
%DEC%%DOTS%
@_fin%W%:
	MOVQ CX, R12
%FINISH%	ADDQ $%UBYTE%, BX
	ADDQ $64, CX
	DECQ %UL%(SP)
	JNZ  @_unit%W%

`

const tmpl = `
// func multiAcc@(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAcc@(SB), 0, $%FRAME%-64
	MOVQ m+40(FP), AX
	TESTQ AX, AX
	JZ   @_done
	MOVQ nv+16(FP), AX
	SHRQ $4, AX
	TESTQ AX, AX
	JZ   @_done
	MOVQ d+8(FP), R14          // the scale's byte offset in a row
	%SOFF%
	MOVQ rb+32(FP), AX         // prefetch step: ⌈2·rb / units⌉ a row pair and unit
	SHLQ $1, AX
	MOVQ nv+16(FP), CX
	SHRQ $4, CX
	ADDQ CX, AX
	DECQ AX
	XORQ DX, DX
	DIVQ CX
	MOVQ AX, %PS%(SP)
	MOVQ rows+24(FP), DI
	MOVQ w+48(FP), AX
	MOVQ AX, %WP%(SP)
	MOVQ m+40(FP), AX
	MOVQ AX, %RL%(SP)

%TILEP1%	VMOVUPS X0, (R15)          // the partner of a lone last row
%BODY16%	MOVQ %TN%(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	IMULQ wstride+56(FP), AX
	ADDQ AX, %WP%(SP)
	CMPQ %RL%(SP), $0
	JNE  @_tile

@_done:
	VZEROUPPER
	RET
`

// The 8-bit kernels (T4B8AVX2I, T4FB8AVX2I, T3B8AVX2I, T2B8AVX2I; contract in
// multi_t4accavx2_amd64.go; turbo3's and turbo2's decodes t3Dec8 and t2Dec8, turbo4's and
// tq4's adapting, gen8): the same first prepass with 127 in place of 32767 (VPMADDUBSW
// sums two products a word, saturating: 2·127·104 < 2¹⁵ where 255 would not fit), three zero
// rows after the tile's last; the second prepass rounds a quad's 16 w·s at a time
// (VCVTPS2DQ), packs them to bytes (VPACKSSDW, VPACKSSWB, VPERMQ) and transposes them with one
// VPSHUFB so that accumulator h's dword at 16q + 4h holds the quad's four weights (byte r =
// row 4q + r), and stores max(W, 0) there and max(−W, 0) 256 bytes on; a tile with a negative
// W is flagged. The row loop takes rows in quads and 16 values (8 code bytes) of each at a
// time: the four rows' bytes interleaved (two VPUNPCKLBW, two word unpacks, one insert) so
// that dword k holds byte k of the four rows, the low and high nibbles masked apart and looked
// up as signed levels (tq4Ints): the even vector's dword k holds the four rows' levels of value
// 2k, the odd one's of 2k + 1, the order dec's pairs have, so finish serves as it is. Each
// accumulator's weight dword, broadcast, times them: VPMADDUBSW (the weights the unsigned
// operand; W_a·L_a + W_b·L_b per word, exact: ≤ 26416), VPMADDWD by ones (the quad's four
// products per dword) and VPADDD. A flagged tile takes a second pass with the negative parts,
// subtracted (VPSUBD; the AVX-VNNI kernels' too: VPDPBUSD only adds). The sums are Σ_j W_j·L_j[i] exactly, as the 16-bit kernels'. A last
// quad of one to three rows reads its first row in place of the missing ones (weights 0).
//
// Cost per row of 128 values and four accumulators: 16 VPMADDUBSW, 16 VPMADDWD and 16 VPADDD,
// where the 16-bit kernels take 32 VPMADDWD and 32 VPADDD, and 28 loads, unpacks, masks and
// lookups (there 40, with the widenings).
//
// turbo4's and tq4's kernels adapt (adapt, body16): their first prepass also sums |w·s| per
// accumulator (one VADDPS a row), and a tile where t4a8Ratio times some accumulator's largest
// exceeds its sum (a softmax peak) goes through the 16-bit kernels' work (body16: their
// rounding, pairs and row loop on the same frame, its own prefetch step), with 32767 as the
// largest weight of those accumulators and 127 of the others (VBLENDVPS), the other tiles
// through the 8-bit work; tiles of 64 rows, as the 16-bit kernels', so a peak's accumulator is
// theirs bit for bit and the others' sums are the 8-bit work's.

// Frame layout of the 8-bit kernels (hardware SP offsets).
const (
	o8WS   = 0    // w·s of the tile's rows, 16 bytes a row; three zero rows after
	o8QP   = 1088 // 8-bit weights: quad q's at 16q (accumulator h's dword at 16q + 4h), the negative parts 256 bytes on
	o8TU   = 1600 // T·unit per accumulator
	o8INV  = 1616 // inv per accumulator
	o8TN   = 1632 // rows in the tile
	o8PF   = 1640 // prefetch pointer
	o8PS   = 1648 // prefetch step a quad
	o8UL   = 1656 // units left in the row
	o8RL   = 1664 // rows left after this tile
	o8WP   = 1672 // the tile's first weight
	o8FLAG = 1680 // nonzero where the tile has a negative weight
	o8PS16 = 1688 // the adaptive kernels' body16 prefetch step a row pair
	frame8 = 1696
)

// dec8 decodes 16 values (8 code bytes at the unit's offset) of the quad's rows at R12,
// R12 + R9, R12 + R13, R12 + R14 into Y10 (dword k: the four rows' levels of value 2k) and Y11
// (2k + 1); X12, X13 temporaries.
const dec8 = `	VMOVQ (R12), X10
	VMOVQ (R12)(R9*1), X11
	VMOVQ (R12)(R13*1), X12
	VMOVQ (R12)(R14*1), X13
	VPUNPCKLBW X11, X10, X10
	VPUNPCKLBW X13, X12, X12
	VPUNPCKHWD X12, X10, X11
	VPUNPCKLWD X12, X10, X10
	VINSERTI128 $1, X11, Y10, Y10
	VPSRLW $4, Y10, Y11
	VPAND Y9, Y10, Y10
	VPAND Y9, Y11, Y11
	VPSHUFB Y10, Y8, Y10
	VPSHUFB Y11, Y8, Y11
`

// dots8: accumulators Y2h (even values) and Y2h+1 (odd) += (op VPADDD) or −= (VPSUBD) the
// quad's weight bytes of accumulator h (dword h at R8) times the levels Y10, Y11 (Y15: words
// of 1).
func dots8(op string) string {
	var b strings.Builder
	for h := 0; h < 4; h++ {
		if op == "VPDPBUSD" {
			w := 12 + h%2 // Y12 or Y13
			fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), Y%d\n\t%s\n\t%s\n", 4*h, w,
				vexReg(opVPDPBUSD, 2*h, w, 10), vexReg(opVPDPBUSD, 2*h+1, w, 11))
			continue
		}
		fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), Y12\n\tVPMADDUBSW Y10, Y12, Y13\n\tVPMADDUBSW Y11, Y12, Y14\n", 4*h)
		fmt.Fprintf(&b, "\tVPMADDWD Y15, Y13, Y13\n\tVPMADDWD Y15, Y14, Y14\n\t%[1]s Y13, Y%[2]d, Y%[2]d\n\t%[1]s Y14, Y%[3]d, Y%[3]d\n", op, 2*h, 2*h+1)
	}
	return b.String()
}

// rows8 is one pass of the unit's row loop over the tile's quads, the weights at R8: op VPADDD
// (the positive parts, prefetching the next tile) or VPSUBD (the negative ones); sfx makes its
// labels unique.
func rows8(dec, op, sfx string, prefetch bool) string {
	pf := ""
	if prefetch {
		pf = "\tPREFETCHT0 (R15)\n\tADDQ R11, R15\n"
	}
	return strings.NewReplacer("SFX", sfx, "%PFQ%", pf, "%DEC%", dec, "%DOTS%", dots8(op)).Replace(`	LEAQ (DI)(BX*1), R12
	MOVQ rb+32(FP), R9
	LEAQ (R9)(R9*1), R13
	LEAQ (R13)(R9*1), R14
	MOVQ %TN%(SP), R10
	SHRQ $2, R10
	JZ   @_remSFX
@_quadSFX:
%PFQ%%DEC%%DOTS%	ADDQ $16, R8
	LEAQ (R12)(R9*4), R12
	DECQ R10
	JNZ  @_quadSFX
@_remSFX:
	MOVQ %TN%(SP), AX
	ANDQ $3, AX
	JZ   @_endSFX
	XORQ R14, R14              // a last quad of one to three rows: the missing ones read row a, weight 0
	CMPQ AX, $3
	JGE  @_r3SFX
	XORQ R13, R13
@_r3SFX:
	CMPQ AX, $2
	JGE  @_r2SFX
	XORQ R9, R9
@_r2SFX:
%DEC%%DOTS%@_endSFX:
`)
}

// body8 is the 8-bit kernels' work on a tile after its first prepass (body16's with 7-bit
// weights in quads).
const body8 = `	// inv = min(127/M, cap), T = 1/inv where M > 0; both 0 where M = 0.
	VXORPS X12, X12, X12
	VCMPPS $0x0E, X12, X10, X11
	VBROADCASTSS ·t4a8QMax(SB), X13
	VDIVPS X10, X13, X14
	VBROADCASTSS ·tAccInvCap(SB), X15
	VMINPS X15, X14, X14
	VANDPS X11, X14, X14
	VMOVUPS X14, %INV%(SP)
	VBROADCASTSS ·tAccOne(SB), X13
	VDIVPS X14, X13, X15
	VANDPS X11, X15, X15
	VBROADCASTSS ·%UNIT%(SB), X13
	VMULPS X13, X15, X15
	VMOVUPS X15, %TU%(SP)

	// W = round(w·s·inv), |W| ≤ 127, as bytes: max(W, 0) at 16q + 4h + r, max(−W, 0) 256 on.
	VBROADCASTF128 %INV%(SP), Y14
	VMOVDQU ·t4a8Tr(SB), X12
	VPXOR Y13, Y13, Y13
	VPXOR X11, X11, X11
	LEAQ %WS%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	ADDQ $3, R10
	SHRQ $2, R10
@_p2:
	VMULPS (R8), Y14, Y0
	VMULPS 32(R8), Y14, Y1
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VPACKSSDW Y1, Y0, Y0       // lane 0: rows 0, 2; lane 1: rows 1, 3 (words, accumulators 0..3)
	VPOR Y0, Y13, Y13
	VPACKSSWB Y0, Y0, Y0
	VPERMQ $0x08, Y0, Y0       // rows 0, 2, 1, 3
	VPSHUFB X12, X0, X0        // accumulator h's dword: rows 0..3
	VPMAXSB X11, X0, X1
	VMOVDQU X1, (R12)
	VPSUBB X0, X11, X1
	VPMAXSB X11, X1, X1
	VMOVDQU X1, 256(R12)
	ADDQ $64, R8
	ADDQ $16, R12
	DECQ R10
	JNZ  @_p2
	VPMOVMSKB Y13, AX          // a negative W's word has its sign bits set
	MOVQ AX, %FLAG%(SP)

	%TABLES%
	MOVQ nv+16(FP), AX
	SHRQ $4, AX
	MOVQ AX, %UL%(SP)
	XORQ BX, BX                // byte offset of the unit in a row
	MOVQ acc+0(FP), CX         // the unit's accumulators
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators

@_unit:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VMOVDQU ·t4a8Ones(SB), Y15
	LEAQ %QP%(SP), R8
	MOVQ %PF%(SP), R15
	MOVQ %PS%(SP), R11
%ROWSP%	CMPQ %FLAG%(SP), $0
	JE   @_fin
	LEAQ %QPN%(SP), R8
%ROWSN%@_fin:
	MOVQ R15, %PF%(SP)
	MOVQ CX, R12
%FINISH%	ADDQ $%UBYTE%, BX
	ADDQ $64, CX
	DECQ %UL%(SP)
	JNZ  @_unit

`

// qmax16 is body16's largest weight, 32767 for every accumulator.
const qmax16 = "\tVBROADCASTSS ·tAccQMax(SB), X13\n"

// adapt is the adaptive kernels' choice after a tile's first prepass (X10: the largest |w·s|
// per accumulator, X11 the sum of them all): where some accumulator's sum is below t4a8Ratio
// times its largest (X12: the mask of those), the tile goes through body16 (@_w16) with int16
// weights for those accumulators and 7-bit ones for the others, else through body8.
const adapt = `	VBROADCASTSS ·t4a8Ratio(SB), X13
	VMULPS X13, X10, X12
	VCMPPS $0x0E, X11, X12, X12   // ratio·M > Σ|w·s|
	VMOVMSKPS X12, AX
	TESTQ AX, AX
	JNZ  @_w16
`

const tmpl8 = `
// func multiAcc@(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAcc@(SB), 0, $%FRAME%-64
	MOVQ m+40(FP), AX
	TESTQ AX, AX
	JZ   @_done
	MOVQ nv+16(FP), AX
	SHRQ $4, AX
	TESTQ AX, AX
	JZ   @_done
	MOVQ d+8(FP), SI           // the scale's byte offset in a row
	%SOFF%
	MOVQ rb+32(FP), AX         // prefetch step: ⌈4·rb / units⌉ a quad and unit
	SHLQ $2, AX
	MOVQ nv+16(FP), CX
	SHRQ $4, CX
	ADDQ CX, AX
	DECQ AX
	XORQ DX, DX
	DIVQ CX
	MOVQ AX, %PS%(SP)
%PS16INIT%	MOVQ rows+24(FP), DI
	MOVQ w+48(FP), AX
	MOVQ AX, %WP%(SP)
	MOVQ m+40(FP), AX
	MOVQ AX, %RL%(SP)

%TILEP1%	VMOVUPS X0, (R15)          // the partners of a last quad's rows
	VMOVUPS X0, 16(R15)
	VMOVUPS X0, 32(R15)
%WORK%	MOVQ %TN%(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	IMULQ wstride+56(FP), AX
	ADDQ AX, %WP%(SP)
	CMPQ %RL%(SP), $0
	JNE  @_tile

@_done:
	VZEROUPPER
	RET
`

// bitsLen is the bit length of n (tile sizes: powers of two).
func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// t3Shift is t3Dec's bit offset of the codes in dword k of a lane (values k and k + 8; 3k mod 8).
func t3Shift(k int) uint32 { return uint32(3 * k % 8) }

// tables8 writes the 8-bit kernels' constants: 127, the transpose's byte order, words of 1 and
// t3Dec8's shift counts and mask.
func tables8() string {
	var b strings.Builder
	fmt.Fprintf(&b, "DATA ·t4a8QMax+0(SB)/4, $0x%08x\nGLOBL ·t4a8QMax(SB), RODATA|NOPTR, $4\n\n", math.Float32bits(127))
	// After VPERMQ: row 0's weights at bytes 0..3, row 2's at 4..7, row 1's at 8..11, row 3's
	// at 12..15 (accumulator h at + h); byte 4h + r takes row r's of accumulator h.
	var tr [16]byte
	for h := 0; h < 4; h++ {
		for r := 0; r < 4; r++ {
			tr[4*h+r] = byte([]int{0, 8, 4, 12}[r] + h)
		}
	}
	for i := 0; i < 16; i += 8 {
		var x uint64
		for k := 7; k >= 0; k-- {
			x = x<<8 | uint64(tr[i+k])
		}
		fmt.Fprintf(&b, "DATA ·t4a8Tr+%d(SB)/8, $0x%016x\n", i, x)
	}
	b.WriteString("GLOBL ·t4a8Tr(SB), RODATA|NOPTR, $16\n\n")
	for i := 0; i < 32; i += 8 {
		fmt.Fprintf(&b, "DATA ·t4a8Ones+%d(SB)/8, $0x0001000100010001\n", i)
	}
	b.WriteString("GLOBL ·t4a8Ones(SB), RODATA|NOPTR, $32\n\n")
	fmt.Fprintf(&b, "DATA ·t4a8Ratio+0(SB)/4, $0x%08x\nGLOBL ·t4a8Ratio(SB), RODATA|NOPTR, $4\n\n", math.Float32bits(t4a8Ratio))
	// t3Dec8's left shifts of rows 1 and 3 (8 − the right shift t3AccShift takes: each window's
	// code to bits 8..10 of its word) and their mask.
	for i := 0; i < 8; i += 2 {
		fmt.Fprintf(&b, "DATA ·t3a8ShiftL+%d(SB)/8, $0x%08x%08x\n", 4*i, 8-t3Shift(i+1), 8-t3Shift(i))
	}
	b.WriteString("GLOBL ·t3a8ShiftL(SB), RODATA|NOPTR, $32\n\n")
	for i := 0; i < 32; i += 8 {
		fmt.Fprintf(&b, "DATA ·t3a8Mask7Hi+%d(SB)/8, $0x0700070007000700\n", i)
	}
	b.WriteString("GLOBL ·t3a8Mask7Hi(SB), RODATA|NOPTR, $32\n\n")
	return b.String()
}

// gen8 writes the 8-bit kernel name of bits-bit codes (4: f32, tq4's float32 scale, else
// turbo4's f16; 3, 2: turbo3's and turbo2's) over tiles of tile rows (a power of two ≤ 64,
// each with its own largest weight; 4 bits: adapting, with body16 for a softmax peak's tiles;
// tiles of 16 took as long as the 16-bit kernels, multi_t4accavx2_amd64.go).
func gen8(name string, bits int, f32, vnni bool, tile int) string {
	scale, unit := "VPBROADCASTW SADDR, X0\n\tVCVTPH2PS X0, X0", "tAccT4Unit"
	if f32 {
		scale, unit = "VBROADCASTSS SADDR, X0", "tAccT4FUnit"
	}
	soff, tables, dc, fin, ubyte := "SHRQ $1, SI", "VBROADCASTI128 ·tq4AVX2Ints(SB), Y8\n\tVMOVDQU ·avx2Nib(SB), Y9", dec8, finish(o8TU), "8"
	switch bits {
	case 3:
		unit, soff, ubyte = "tAccT3Unit", "IMULQ $3, SI\n\tSHRQ $3, SI", "6"
		tables = "VBROADCASTI128 ·t3AVX2Ints(SB), Y8\n\tVMOVDQU ·t3AVX2Mask7(SB), Y9"
		dc, fin = t3Dec8, finishVia(o8TU, "\tVMOVDQA Y%[1]d, Y12\n\tVMOVDQA Y%[2]d, Y13\n")
	case 2:
		unit, soff, ubyte = "tAccT2Unit", "SHRQ $2, SI", "4"
		tables = "VBROADCASTI128 ·t2AVX2Ints(SB), Y8\n\tVBROADCASTI128 ·t2AVX2IntsHi(SB), Y9"
		dc, fin = t2Dec8, t2Finish8(o8TU)
	}
	work, suminit, sumop, ps16, qmax := body8, "", "", "", qmax16
	if bits == 4 {
		work = adapt + body8 + "\tJMP  @_next\n@_w16:\n" + `	VBROADCASTSS ·tAccQMax(SB), X3
	VBROADCASTSS ·t4a8QMax(SB), X13
	VBLENDVPS X12, X3, X13, X3    // 32767 for the accumulators whose tile is a peak's, else 127
` + body16 + "@_next:\n"
		qmax = "\tVMOVAPS X3, X13\n"
		suminit = "\tVXORPS X11, X11, X11\n"
		sumop = "\tVADDPS X1, X11, X11         // the sum of |w·s|\n"
		ps16 = `	MOVQ rb+32(FP), AX         // body16's: ⌈2·rb / units⌉ a row pair and unit
	SHLQ $1, AX
	ADDQ CX, AX
	DECQ AX
	XORQ DX, DX
	DIVQ CX
	MOVQ AX, %PS16%(SP)
`
	}
	s := strings.NewReplacer("%WORK%", work, "%PS16INIT%", ps16, "%TILEP1%", tileP1).Replace(tmpl8)
	s = scaleReplacer(scale, "SI").Replace(s)
	add := "VPADDD"
	if vnni {
		add = "VPDPBUSD"
	}
	s = strings.NewReplacer("%ROWSP%", rows8(dc, add, "", true), "%ROWSN%", rows8(dc, "VPSUBD", "n", false),
		"%FINISH%", fin, "%SUMINIT%", suminit, "%SUM%", sumop, "%W%", "w", "%PSW%", "%PS16%", "%DEC%", dec, "%DOTS%", dots(vnni),
		"%QMAX16%", qmax).Replace(s)
	return strings.NewReplacer("@", name, "%FRAME%", fmt.Sprint(frame8), "%SCALE%", scale, "%UNIT%", unit,
		"%SOFF%", soff, "%TABLES%", tables, "%UBYTE%", ubyte, "%TILE%", fmt.Sprint(tile), "%TSHIFT%", fmt.Sprint(bitsLen(tile)-1),
		"%WS%", fmt.Sprint(o8WS), "%QP%", fmt.Sprint(o8QP), "%QPN%", fmt.Sprint(o8QP+256), "%TU%", fmt.Sprint(o8TU),
		"%INV%", fmt.Sprint(o8INV), "%TN%", fmt.Sprint(o8TN), "%PF%", fmt.Sprint(o8PF), "%PS%", fmt.Sprint(o8PS),
		"%UL%", fmt.Sprint(o8UL), "%RL%", fmt.Sprint(o8RL), "%WP%", fmt.Sprint(o8WP), "%FLAG%", fmt.Sprint(o8FLAG), "%PS16%", fmt.Sprint(o8PS16)).Replace(s)
}

// t3Dec8 is dec8 for turbo3 (16 values, 6 code bytes, 8 read): t3Dec's spread, shifts and
// mask on rows 0 and 2 (codes in the low and high word of each dword) and on rows 1 and 3,
// whose windows are shifted left instead, by 8 less the bit offset (t3a8ShiftL: their codes to
// bits 8..10 of each word, the low word's higher bits short of the high word's code) and
// masked there, so that they join the first pair's: dword j of lane l holds the quad's four
// codes (byte r = row r) of value 4l + j (Y10) and 8 + 4l + j (Y11), looked up as signed
// levels: the values in order. 22 operations a quad where t3Dec takes 14 a pair; shifted
// right like rows 0 and 2, then left a byte (VPSLLD $8), rows 1 and 3 took two more.
const t3Dec8 = `	VPBROADCASTQ (R12), Y10
	VPBROADCASTQ (R12)(R13*1), Y11
	VPBLENDD $0xCC, Y11, Y10, Y10
	VPBROADCASTQ (R12)(R9*1), Y12
	VPBROADCASTQ (R12)(R14*1), Y11
	VPBLENDD $0xCC, Y11, Y12, Y12
	VPSHUFB ·t3AccSpread(SB), Y10, Y11
	VPSHUFB ·t3AccSpread+32(SB), Y10, Y10
	VPSHUFB ·t3AccSpread(SB), Y12, Y13
	VPSHUFB ·t3AccSpread+32(SB), Y12, Y12
	VPSRLVD ·t3AccShift(SB), Y11, Y11
	VPSRLVD ·t3AccShift(SB), Y10, Y10
	VPSLLVD ·t3a8ShiftL(SB), Y13, Y13
	VPSLLVD ·t3a8ShiftL(SB), Y12, Y12
	VPAND Y9, Y11, Y11
	VPAND Y9, Y10, Y10
	VPAND ·t3a8Mask7Hi(SB), Y13, Y13
	VPAND ·t3a8Mask7Hi(SB), Y12, Y12
	VPOR Y13, Y11, Y13
	VPOR Y12, Y10, Y12
	VPSHUFB Y13, Y8, Y10
	VPSHUFB Y12, Y8, Y11
`

// t2Dec8 is dec8 for turbo2 (16 values, 4 code bytes): the quad's bytes interleaved so that
// dword j holds byte j of the four rows, its high nibbles shifted down into a copy in the upper
// lane, both lanes masked to nibbles and each nibble looked up twice, for its low code (Y8:
// the level of n & 3) and its high one (Y9, t2AVX2IntsHi: of n >> 2): Y10 the four rows'
// levels of values 4j (lane 0) and 4j + 2 (lane 1), Y11 of 4j + 1 and 4j + 3, the order
// t2Finish8 restores. 12 operations a quad (3 unpacks, a shift, an insert, a mask, two
// lookups and the 4 loads) where the earlier decode took 14 (each qword shifted by twice the
// code it kept, VPSRLVQ twice with its counts from memory, two masks: t2a8Shift), and
// t2Finish8 two lane permutes an accumulator fewer than t2Finish.
const t2Dec8 = `	VMOVD (R12), X10
	VMOVD (R12)(R9*1), X11
	VMOVD (R12)(R13*1), X12
	VMOVD (R12)(R14*1), X13
	VPUNPCKLBW X11, X10, X10
	VPUNPCKLBW X13, X12, X12
	VPUNPCKLWD X12, X10, X10
	VPSRLW $4, X10, X11
	VINSERTI128 $1, X11, Y10, Y10
	VPAND ·avx2Nib(SB), Y10, Y10
	VPSHUFB Y10, Y9, Y11
	VPSHUFB Y10, Y8, Y10
`

// Where a turbo2 and a turbo3 8-bit AVX-VNNI kernel's time goes (Intel Xeon, KVLAB_NO_AVX512,
// d 128, 256 rows in L1, thread CPU, min of 15 rounds, load ~9–14, after t2Dec8): by nv (the
// units of 16 values a call takes) 16 / 32 / 64 / 128, turbo2 1.61–1.65 / 2.11–2.17 / 3.19–3.25
// / 5.54–5.68 ns a row, turbo3 1.94–2.07 / 2.66–2.71 / 4.32–4.41 / 8.17–8.18: the prepasses
// ~1.1 ns a row, each unit 0.50–0.60 (turbo2) and 0.77–0.94 (turbo3), growing with the units
// (d 256: turbo2 0.55, 0.59, 0.60 a unit by halves). The finish of turbo2's units (dropped,
// timing-only) 5.57 → 4.95–5.02 at nv 128, 0.03–0.06 at 16..64: ~0.6 ns a row there. Not
// kept: the quad loop run two quads an iteration (its branch taken half as often; timing-only)
// 5.67–5.82 → 5.54–5.75, within the noise.

// t2Finish8 is finish for t2Dec8's order: Y2h holds values 4j (j = 0..3) then 4j + 2, Y2h+1
// 4j + 1 then 4j + 3 (t2Finish's order after its lane permutes); two unpacks and two qword
// permutes restore it.
func t2Finish8(tu int) string {
	return finishVia(tu, `	VPUNPCKLDQ Y%[2]d, Y%[1]d, Y10
	VPUNPCKHDQ Y%[2]d, Y%[1]d, Y11
	VPERMQ $0xD8, Y10, Y12
	VPERMQ $0xD8, Y11, Y13
`)
}

func main() {
	var out strings.Builder
	out.WriteString(`// Code generated by gen_t4accavx2.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// The AVX2 integer accumulate kernels of turbo4 and tq4: see gen_t4accavx2.go for the work and
// multi_t4accavx2_amd64.go for the contract.
`)
	out.WriteString(t3AccTables())
	for _, k := range []struct {
		name string
		f32  bool
		vnni bool
		t3   bool
	}{
		{"T4AVX2I", false, false, false},
		{"T4FAVX2I", true, false, false},
		{"T4AVXVNNI", false, true, false},
		{"T4FAVXVNNI", true, true, false},
		{"T3AVX2I", false, false, true},
		{"T3AVXVNNI", false, true, true},
		{"T2AVX2I", false, false, false},
		{"T2AVXVNNI", false, true, false},
	} {
		scale, unit := "VPBROADCASTW SADDR, X0\n\tVCVTPH2PS X0, X0", "tAccT4Unit"
		if k.f32 {
			scale, unit = "VBROADCASTSS SADDR, X0", "tAccT4FUnit"
		}
		soff, tables, dc, fin, ubyte := "SHRQ $1, R14", "VBROADCASTI128 ·tq4AVX2Ints(SB), Y8\n\tVMOVDQU ·avx2Nib(SB), Y9", dec, finish(oTU), "8"
		if k.t3 {
			unit = "tAccT3Unit"
			soff = "IMULQ $3, R14\n\tSHRQ $3, R14"
			tables = "VBROADCASTI128 ·t3AVX2Ints(SB), Y8\n\tVMOVDQU ·t3AVX2Mask7(SB), Y9"
			dc, fin, ubyte = t3Dec, t3Finish(oTU), "6"
		}
		if strings.HasPrefix(k.name, "T2") {
			unit = "tAccT2Unit"
			soff = "SHRQ $2, R14"
			tables = "VBROADCASTI128 ·t2AVX2Ints(SB), Y8\n\tVMOVDQU ·t2AVX2Mask3(SB), Y9"
			dc, fin, ubyte = t2Dec, t2Finish(oTU), "4"
		}
		r := strings.NewReplacer("@", k.name, "%FRAME%", fmt.Sprint(frame), "%SCALE%", scale, "%UNIT%", unit,
			"%WS%", fmt.Sprint(oWS), "%QP%", fmt.Sprint(oQP), "%TU%", fmt.Sprint(oTU), "%INV%", fmt.Sprint(oINV),
			"%TN%", fmt.Sprint(oTN), "%PF%", fmt.Sprint(oPF), "%PS%", fmt.Sprint(oPS), "%UL%", fmt.Sprint(oUL),
			"%RL%", fmt.Sprint(oRL), "%WP%", fmt.Sprint(oWP), "%SOFF%", soff, "%TABLES%", tables, "%UBYTE%", ubyte,
			"%DEC%", dc, "%DOTS%", dots(k.vnni), "%FINISH%", fin)
		t := strings.NewReplacer("%TILEP1%", tileP1, "%BODY16%", body16).Replace(tmpl)
		t = scaleReplacer(scale, "R14").Replace(t)
		t = strings.NewReplacer("%SUMINIT%", "", "%SUM%", "", "%W%", "", "%PSW%", "%PS%", "%QMAX16%", qmax16).Replace(t)
		out.WriteString(r.Replace(strings.NewReplacer("%TILE%", "64", "%TSHIFT%", "6").Replace(t)))
	}
	out.WriteString(tables8())
	out.WriteString(gen8("T4B8AVX2I", 4, false, false, 64))
	out.WriteString(gen8("T4FB8AVX2I", 4, true, false, 64))
	out.WriteString(gen8("T3B8AVX2I", 3, false, false, 64))
	out.WriteString(gen8("T2B8AVX2I", 2, false, false, 64))
	out.WriteString(gen8("T4B8AVXVNNI", 4, false, true, 64))
	out.WriteString(gen8("T4FB8AVXVNNI", 4, true, true, 64))
	out.WriteString(gen8("T3B8AVXVNNI", 3, false, true, 64))
	out.WriteString(gen8("T2B8AVXVNNI", 2, false, true, 64))
	if err := os.WriteFile("multi_t4accavx2_amd64.s", []byte(out.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// t4a8Ratio: turbo4's and tq4's 8-bit kernels take a tile through the 16-bit work (body16)
// where this times some accumulator's largest |w·s| exceeds the sum of its |w·s| (adapt); the
// same figure as multi_t4accavx2_amd64.go's.
const t4a8Ratio = 4
