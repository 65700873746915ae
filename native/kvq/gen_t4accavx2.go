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
package main

import (
	"fmt"
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
func t2Finish() string {
	return finishVia(`	VPERM2I128 $0x20, Y%[2]d, Y%[1]d, Y12
	VPERM2I128 $0x31, Y%[2]d, Y%[1]d, Y13
	VPUNPCKLDQ Y13, Y12, Y10
	VPUNPCKHDQ Y13, Y12, Y11
	VPERMQ $0xD8, Y10, Y12
	VPERMQ $0xD8, Y11, Y13
`)
}

// t3Finish is finish for turbo3's order: Y2h holds values 0..3, 8..11, Y2h+1 4..7, 12..15.
func t3Finish() string {
	return finishVia(`	VPERM2I128 $0x20, Y%[2]d, Y%[1]d, Y12
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
func finish() string {
	return finishVia(`	VPUNPCKLDQ Y%[2]d, Y%[1]d, Y10
	VPUNPCKHDQ Y%[2]d, Y%[1]d, Y11
	VPERM2I128 $0x20, Y11, Y10, Y12
	VPERM2I128 $0x31, Y11, Y10, Y13
`)
}

// finishVia is finish with order, per accumulator h, a format of Y%[1]d = Y2h and Y%[2]d =
// Y2h+1 that leaves the sums of values 0..7 in Y12 and of 8..15 in Y13: they are converted and
// added times T·unit (%[3]d(SP)) to the accumulator's 16 values at R12.
func finishVia(order string) string {
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
`, 2*h, 2*h+1, oTU+4*h)
	}
	return b.String()
}

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

@_tile:
	MOVQ %RL%(SP), R10
	CMPQ R10, $64
	JLE  @_tn
	MOVQ $64, R10
@_tn:
	MOVQ R10, %TN%(SP)
	SUBQ R10, %RL%(SP)
	MOVQ rb+32(FP), AX
	SHLQ $6, AX
	ADDQ DI, AX
	MOVQ AX, %PF%(SP)          // the next tile, which the row loops prefetch

	// w·s per row and accumulator, and the largest magnitude per accumulator (X10).
	MOVQ DI, R12
	MOVQ %WP%(SP), R8
	MOVQ wstride+56(FP), R9
	MOVQ rb+32(FP), R11
	LEAQ %WS%(SP), R15
	VXORPS X10, X10, X10
	VPCMPEQD X9, X9, X9
	VPSRLD $1, X9, X9          // the magnitude mask
@_p1:
	%SCALE%
	VMULPS (R8), X0, X0
	VMOVUPS X0, (R15)
	VANDPS X9, X0, X1
	VMAXPS X1, X10, X10
	ADDQ R9, R8
	ADDQ R11, R12
	ADDQ $16, R15
	DECQ R10
	JNZ  @_p1
	VXORPS X0, X0, X0
	VMOVUPS X0, (R15)          // the partner of a lone last row
	// inv = min(32767/M, cap), T = 1/inv where M > 0; both 0 where M = 0.
	VXORPS X12, X12, X12
	VCMPPS $0x0E, X12, X10, X11
	VBROADCASTSS ·tAccQMax(SB), X13
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

	// W = round(w·s·inv) as int16, rows paired: (W_2p, W_2p+1) per dword.
	VBROADCASTF128 %INV%(SP), Y14
	LEAQ %WS%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	INCQ R10
	SHRQ $1, R10
@_p2:
	VMULPS (R8), Y14, Y0
	VCVTPS2DQ Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPSLLD $16, X1, X1
	VPBLENDW $0xAA, X1, X0, X0
	VMOVDQU X0, (R12)
	ADDQ $32, R8
	ADDQ $16, R12
	DECQ R10
	JNZ  @_p2

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
	LEAQ (DI)(BX*1), R12
	LEAQ %QP%(SP), R8
	MOVQ %PF%(SP), R15
	MOVQ %PS%(SP), R11
	MOVQ rb+32(FP), R9
	MOVQ %TN%(SP), R10
	SHRQ $1, R10
	JZ   @_odd
@_pair:
	PREFETCHT0 (R15)
	ADDQ R11, R15
%DEC%%DOTS%	ADDQ $16, R8
	LEAQ (R12)(R9*2), R12
	DECQ R10
	JNZ  @_pair
@_odd:
	MOVQ R15, %PF%(SP)
	TESTQ $1, %TN%(SP)
	JZ   @_fin
	XORQ R9, R9                // a lone last row: b reads a again, with weight 0
%DEC%%DOTS%
@_fin:
	MOVQ CX, R12
%FINISH%	ADDQ $%UBYTE%, BX
	ADDQ $64, CX
	DECQ %UL%(SP)
	JNZ  @_unit

	MOVQ %TN%(SP), AX
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
		scale, unit := "VPBROADCASTW (R12)(R14*1), X0\n\tVCVTPH2PS X0, X0", "tAccT4Unit"
		if k.f32 {
			scale, unit = "VBROADCASTSS (R12)(R14*1), X0", "tAccT4FUnit"
		}
		soff, tables, dc, fin, ubyte := "SHRQ $1, R14", "VBROADCASTI128 ·tq4AVX2Ints(SB), Y8\n\tVMOVDQU ·avx2Nib(SB), Y9", dec, finish(), "8"
		if k.t3 {
			unit = "tAccT3Unit"
			soff = "IMULQ $3, R14\n\tSHRQ $3, R14"
			tables = "VBROADCASTI128 ·t3AVX2Ints(SB), Y8\n\tVMOVDQU ·t3AVX2Mask7(SB), Y9"
			dc, fin, ubyte = t3Dec, t3Finish(), "6"
		}
		if strings.HasPrefix(k.name, "T2") {
			unit = "tAccT2Unit"
			soff = "SHRQ $2, R14"
			tables = "VBROADCASTI128 ·t2AVX2Ints(SB), Y8\n\tVMOVDQU ·t2AVX2Mask3(SB), Y9"
			dc, fin, ubyte = t2Dec, t2Finish(), "4"
		}
		r := strings.NewReplacer("@", k.name, "%FRAME%", fmt.Sprint(frame), "%SCALE%", scale, "%UNIT%", unit,
			"%WS%", fmt.Sprint(oWS), "%QP%", fmt.Sprint(oQP), "%TU%", fmt.Sprint(oTU), "%INV%", fmt.Sprint(oINV),
			"%TN%", fmt.Sprint(oTN), "%PF%", fmt.Sprint(oPF), "%PS%", fmt.Sprint(oPS), "%UL%", fmt.Sprint(oUL),
			"%RL%", fmt.Sprint(oRL), "%WP%", fmt.Sprint(oWP), "%SOFF%", soff, "%TABLES%", tables, "%UBYTE%", ubyte,
			"%DEC%", dc, "%DOTS%", dots(k.vnni), "%FINISH%", fin)
		out.WriteString(r.Replace(tmpl))
	}
	if err := os.WriteFile("multi_t4accavx2_amd64.s", []byte(out.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
