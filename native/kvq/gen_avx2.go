//go:build ignore

// gen_avx2 writes multi_avx2x_amd64.s: the AVX2 + FMA + F16C MultiQuery kernels of q4_1, q5_0,
// q5_1, iq4_nl, tq4, turbo4, turbo3 and turbo2 (bf16's and fp8's: gen_avx2f.go), one scores
// and one accumulate kernel per format on the skeleton of the q8_0 and q4_0 kernels
// (multi_avx2_amd64.s), each format contributing its decoder of 32 values (scores) or of 16
// (accumulate). Run with `go generate ./native/kvq`.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// format is one format's pieces of assembly. Registers available to the decoders:
//
//	scores: p is BX; out Y4..Y7 (values 0..7, 8..15, 16..23, 24..31 of the 32-value group,
//	        in the order the queries are laid out); temporaries Y8, Y9, Y14, Y15 and AX.
//	acc:    p is R12; out Y8, Y9 (values 16h..16h+7, 16h+8..16h+15); temporaries Y10, Y11,
//	        Y13, Y14, Y15 (Y14, Y15 hold tq4's levels) and AX.
//
// R14 holds f16Table for the block formats, the byte offset of the row scale for tq4.
type format struct {
	name  string // kernel name part: multiScores<name>AVX2
	doc   string
	step  int // bytes per 32 values
	setup string
	// rowScale: the row's scores are multiplied by the float32 at (row + R14) times mul.
	rowScale bool
	half16   bool   // the row scale is an f16 (turbo4), not an f32
	mul      string // a 16-byte constant multiplying the row scale, or ""
	dec      string
	half     [2]string
}

const f16Scale = `MOVWLZX OFF(P), AX
	VBROADCASTSS (R14)(AX*4), REG
`

func scale(off int, p, reg string) string {
	r := strings.ReplaceAll(f16Scale, "OFF", fmt.Sprint(off))
	r = strings.ReplaceAll(r, "P", p)
	return strings.ReplaceAll(r, "REG", reg)
}

var formats = []format{
	{
		name: "Q41", doc: "q4_1: d, m (f16), 16 nibble bytes; x = c·d + m.", step: 20,
		setup: "MOVQ ·f16Table(SB), R14",
		dec: scale(0, "BX", "Y8") + scale(2, "BX", "Y9") + `	VPMOVZXBD 4(BX), Y4
	VPMOVZXBD 12(BX), Y5
	VPSRLD $4, Y4, Y6
	VPSRLD $4, Y5, Y7
	VPAND ·avx2Mask15(SB), Y4, Y4
	VPAND ·avx2Mask15(SB), Y5, Y5
` + cvtFMA("VFMADD213PS", "Y9", "Y8", "Y4", "Y5", "Y6", "Y7"),
		half: [2]string{
			scale(0, "R12", "Y10") + scale(2, "R12", "Y11") + `	VPMOVZXBD 4(R12), Y8
	VPMOVZXBD 12(R12), Y9
	VPAND ·avx2Mask15(SB), Y8, Y8
	VPAND ·avx2Mask15(SB), Y9, Y9
` + cvtFMA("VFMADD213PS", "Y11", "Y10", "Y8", "Y9"),
			scale(0, "R12", "Y10") + scale(2, "R12", "Y11") + `	VPMOVZXBD 4(R12), Y8
	VPMOVZXBD 12(R12), Y9
	VPSRLD $4, Y8, Y8
	VPSRLD $4, Y9, Y9
` + cvtFMA("VFMADD213PS", "Y11", "Y10", "Y8", "Y9")},
	},
	q5("Q50", "q5_0: d (f16), qh (32 high bits), 16 nibble bytes; x = (c − 16)·d.", 22, 0, false),
	q5("Q51", "q5_1: d, m (f16), qh, 16 nibble bytes; x = c·d + m.", 24, 2, true),
	{
		name: "IQ4NL", doc: "iq4_nl: d (f16), 16 nibble bytes; x = d·kvalues[c], looked up with VPSHUFB.", step: 18,
		setup: "MOVQ ·f16Table(SB), R14",
		dec: `VMOVDQU 2(BX), X15
	VPSRLW $4, X15, X14
	VPAND ·avx2Mask15B(SB), X15, X15
	VPAND ·avx2Mask15B(SB), X14, X14
	VMOVDQU ·avx2IQ4NL(SB), X9
	VPSHUFB X15, X9, X15
	VPSHUFB X14, X9, X14
	VPMOVSXBD X15, Y4
	VPSRLDQ $8, X15, X15
	VPMOVSXBD X15, Y5
	VPMOVSXBD X14, Y6
	VPSRLDQ $8, X14, X14
	VPMOVSXBD X14, Y7
` + scale(0, "BX", "Y8") + cvtMul("Y8", "Y4", "Y5", "Y6", "Y7"),
		half: [2]string{`VMOVDQU 2(R12), X13
	VPAND ·avx2Mask15B(SB), X13, X13
	VMOVDQU ·avx2IQ4NL(SB), X14
	VPSHUFB X13, X14, X13
	VPMOVSXBD X13, Y8
	VPSRLDQ $8, X13, X13
	VPMOVSXBD X13, Y9
` + scale(0, "R12", "Y10") + cvtMul("Y10", "Y8", "Y9"), `VMOVDQU 2(R12), X13
	VPSRLW $4, X13, X13
	VPAND ·avx2Mask15B(SB), X13, X13
	VMOVDQU ·avx2IQ4NL(SB), X14
	VPSHUFB X13, X14, X13
	VPMOVSXBD X13, Y8
	VPSRLDQ $8, X13, X13
	VPMOVSXBD X13, Y9
` + scale(0, "R12", "Y10") + cvtMul("Y10", "Y8", "Y9")},
	},
	{
		name: "TQ4", doc: "tq4: 16 code bytes per 32 values (low nibbles the even values, high the odd; the\n// queries and accumulators permuted to match, tq4Permute), the levels looked up with two\n// VPERMPS and a blend, the row's f32 scale after its ⌈d/2⌉ code bytes.", step: 16,
		setup: `MOVQ d+8(FP), R14
	INCQ R14
	SHRQ $1, R14`, rowScale: true,
		dec: tq4Dec("(BX)", "VPAND ·avx2Mask15(SB)", "Y4", "Y8", "Y9", "Y14", "Y15") +
			tq4Dec("8(BX)", "VPAND ·avx2Mask15(SB)", "Y5", "Y8", "Y9", "Y14", "Y15") +
			tq4Dec("(BX)", "VPSRLD $4", "Y6", "Y8", "Y9", "Y14", "Y15") +
			tq4Dec("8(BX)", "VPSRLD $4", "Y7", "Y8", "Y9", "Y14", "Y15"),
		half: [2]string{
			tq4Dec("(R12)", "VPAND ·avx2Mask15(SB)", "Y8", "Y10", "Y11", "Y14", "Y15") +
				tq4Dec("8(R12)", "VPAND ·avx2Mask15(SB)", "Y9", "Y10", "Y11", "Y14", "Y15") + tq4RowScale,
			tq4Dec("(R12)", "VPSRLD $4", "Y8", "Y10", "Y11", "Y14", "Y15") +
				tq4Dec("8(R12)", "VPSRLD $4", "Y9", "Y10", "Y11", "Y14", "Y15") + tq4RowScale},
	},
	{
		name: "T4", doc: "turbo4: tq4's layout and levels with an f16 row scale after the ⌈d/2⌉ code bytes.", step: 16,
		setup: `MOVQ d+8(FP), R14
	INCQ R14
	SHRQ $1, R14`, rowScale: true, half16: true,
		dec: tq4Dec("(BX)", "VPAND ·avx2Mask15(SB)", "Y4", "Y8", "Y9", "Y14", "Y15") +
			tq4Dec("8(BX)", "VPAND ·avx2Mask15(SB)", "Y5", "Y8", "Y9", "Y14", "Y15") +
			tq4Dec("(BX)", "VPSRLD $4", "Y6", "Y8", "Y9", "Y14", "Y15") +
			tq4Dec("8(BX)", "VPSRLD $4", "Y7", "Y8", "Y9", "Y14", "Y15"),
		half: [2]string{
			tq4Dec("(R12)", "VPAND ·avx2Mask15(SB)", "Y8", "Y10", "Y11", "Y14", "Y15") +
				tq4Dec("8(R12)", "VPAND ·avx2Mask15(SB)", "Y9", "Y10", "Y11", "Y14", "Y15") + t4RowScale,
			tq4Dec("(R12)", "VPSRLD $4", "Y8", "Y10", "Y11", "Y14", "Y15") +
				tq4Dec("8(R12)", "VPSRLD $4", "Y9", "Y10", "Y11", "Y14", "Y15") + t4RowScale},
	},
	{
		name: "T3", doc: "turbo3: 3-bit codes as a little-endian bit stream (8 codes in 3 bytes: one dword\n// broadcast, shifted per lane, the level looked up by VPERMPS), an f16 row scale after the\n// ⌈3d/8⌉ code bytes.", step: 12,
		setup: `MOVQ d+8(FP), R14
	LEAQ 7(R14)(R14*2), R14
	SHRQ $3, R14`, rowScale: true, half16: true,
		dec: t3Dec("(BX)", "Y4") + t3Dec("3(BX)", "Y5") + t3Dec("6(BX)", "Y6") + t3Dec("9(BX)", "Y7"),
		half: [2]string{t3Dec("(R12)", "Y8") + t3Dec("3(R12)", "Y9") + t4RowScale,
			t3Dec("6(R12)", "Y8") + t3Dec("9(R12)", "Y9") + t4RowScale},
	},
	{
		name: "T2", doc: "turbo2: 2-bit codes as a little-endian bit stream (16 codes in one dword: broadcast,\n// shifted per lane, the level looked up by VPERMPS in the 4 levels twice), an f16 row scale after\n// the ⌈d/4⌉ code bytes.", step: 8,
		setup: `MOVQ d+8(FP), R14
	ADDQ $3, R14
	SHRQ $2, R14`, rowScale: true, half16: true,
		dec: t2Dec("(BX)", "·avx2Sh2", "Y4") + t2Dec("(BX)", "·avx2Sh2+32", "Y5") + t2Dec("4(BX)", "·avx2Sh2", "Y6") + t2Dec("4(BX)", "·avx2Sh2+32", "Y7"),
		half: [2]string{t2Dec("(R12)", "·avx2Sh2", "Y8") + t2Dec("(R12)", "·avx2Sh2+32", "Y9") + t4RowScale,
			t2Dec("4(R12)", "·avx2Sh2", "Y8") + t2Dec("4(R12)", "·avx2Sh2+32", "Y9") + t4RowScale},
	},
}

// t2Dec decodes 8 2-bit codes of the dword at src, shifted by the 8 counts at sh, levels in Y14.
func t2Dec(src, sh, out string) string {
	return fmt.Sprintf("VPBROADCASTD %s, %s\n\tVPSRLVD %s(SB), %s, %s\n\tVPERMPS Y14, %s, %s\n\t", src, out, sh, out, out, out, out)
}

// t3Dec decodes the 8 3-bit codes in the 3 bytes at src (reading 4), levels in Y14.
func t3Dec(src, out string) string {
	return fmt.Sprintf("VPBROADCASTD %s, %s\n\tVPSRLVD ·avx2Sh3(SB), %s, %s\n\tVPERMPS Y14, %s, %s\n\t", src, out, out, out, out, out)
}

// tq4Dec decodes 8 codes: the bytes at src, their nibble chosen by sel, looked up in lo (levels
// 0..7) or hi (8..15) by bit 3.
func tq4Dec(src, sel, out, t0, t1, lo, hi string) string {
	s := "VPMOVZXBD " + src + ", " + t0 + "\n\t"
	if strings.HasPrefix(sel, "VPAND") {
		s += sel + ", " + t0 + ", " + t0 + "\n\t"
	} else {
		s += sel + ", " + t0 + ", " + t0 + "\n\t"
	}
	return s + fmt.Sprintf(`VPERMPS %[4]s, %[2]s, %[1]s
	VPERMPS %[5]s, %[2]s, %[3]s
	VPSLLD $28, %[2]s, %[2]s
	VBLENDVPS %[2]s, %[3]s, %[1]s, %[1]s
	`, out, t0, t1, lo, hi)
}

// The accumulate kernels' row scale, for the two decoded vectors: the row starts at R12 − BX.
const tq4RowScale = `MOVQ R12, AX
	SUBQ BX, AX
	VBROADCASTSS (AX)(R14*1), Y13
	VMULPS Y13, Y8, Y8
	VMULPS Y13, Y9, Y9`

// t4RowScale is tq4RowScale for an f16 scale, broadcast and converted with VCVTPH2PS (no
// legacy-SSE MOVQ into an X register inside the loops: mixing it with dirty 256-bit state
// stalls, ~15× here).
const t4RowScale = `MOVQ R12, AX
	SUBQ BX, AX
	VPBROADCASTW (AX)(R14*1), X13
	VCVTPH2PS X13, Y13
	VMULPS Y13, Y8, Y8
	VMULPS Y13, Y9, Y9`

func cvtFMA(op, add, mul string, regs ...string) string {
	var b strings.Builder
	for _, r := range regs {
		fmt.Fprintf(&b, "\tVCVTDQ2PS %s, %s\n", r, r)
	}
	for _, r := range regs {
		fmt.Fprintf(&b, "\t%s %s, %s, %s\n", op, add, mul, r)
	}
	return b.String()
}

func cvtMul(mul string, regs ...string) string {
	var b strings.Builder
	for _, r := range regs {
		fmt.Fprintf(&b, "\tVCVTDQ2PS %s, %s\n", r, r)
	}
	for _, r := range regs {
		fmt.Fprintf(&b, "\tVMULPS %s, %s, %s\n", mul, r, r)
	}
	return b.String()
}

// q5 is q5_0 (withMin false: x = c·d − 16·d) or q5_1 (x = c·d + m). Header: d at 0, m at 2 for
// q5_1, then qh (bit i the fifth bit of value i), then the nibbles. The fifth bits of values
// 0..15 come from (qh << 4) >> i, of values 16..31 from (qh >> 12) >> (i − 16), masked to bit 4.
func q5(name, doc string, step, hoff int, withMin bool) format {
	qh, qs := 2+hoff, 6+hoff
	fin := func(p, d, k string, regs ...string) string {
		s := scale(0, p, d)
		if withMin {
			s += scale(2, p, k)
			return s + cvtFMA("VFMADD213PS", k, d, regs...)
		}
		s += "\tVMULPS ·avx2F16(SB), " + d + ", " + k + "\n"
		return s + cvtFMA("VFMSUB213PS", k, d, regs...)
	}
	hb := func(base, t, sh, out string) string {
		return fmt.Sprintf("\tVPSRLVD %s(SB), %s, %s\n\tVPAND ·avx2C16(SB), %s, %s\n\tVPOR %s, %s, %s\n",
			sh, base, t, t, t, t, out, out)
	}
	dec := fmt.Sprintf(`VPMOVZXBD %[1]d(BX), Y5
	VPAND ·avx2Mask15(SB), Y5, Y4
	VPSRLD $4, Y5, Y6
	VPMOVZXBD %[2]d(BX), Y5
	VPSRLD $4, Y5, Y7
	VPAND ·avx2Mask15(SB), Y5, Y5
	VPBROADCASTD %[3]d(BX), Y14
	VPSLLD $4, Y14, Y15
`, qs, qs+8, qh) + hb("Y15", "Y8", "·avx2Sh0", "Y4") + hb("Y15", "Y8", "·avx2Sh8", "Y5") +
		"\tVPSRLD $12, Y14, Y15\n" + hb("Y15", "Y8", "·avx2Sh0", "Y6") + hb("Y15", "Y8", "·avx2Sh8", "Y7") +
		fin("BX", "Y8", "Y9", "Y4", "Y5", "Y6", "Y7")
	half := func(h int) string {
		nib := "\tVPAND ·avx2Mask15(SB), Y8, Y8\n\tVPAND ·avx2Mask15(SB), Y9, Y9\n"
		shift := "\tVPSLLD $4, Y13, Y13\n"
		if h == 1 {
			nib = "\tVPSRLD $4, Y8, Y8\n\tVPSRLD $4, Y9, Y9\n"
			shift = "\tVPSRLD $12, Y13, Y13\n"
		}
		return fmt.Sprintf("VPMOVZXBD %d(R12), Y8\n\tVPMOVZXBD %d(R12), Y9\n", qs, qs+8) + nib +
			fmt.Sprintf("\tVPBROADCASTD %d(R12), Y13\n", qh) + shift +
			hb("Y13", "Y14", "·avx2Sh0", "Y8") + hb("Y13", "Y14", "·avx2Sh8", "Y9") +
			fin("R12", "Y10", "Y11", "Y8", "Y9")
	}
	return format{name: name, doc: doc, step: step, setup: "MOVQ ·f16Table(SB), R14", dec: dec,
		half: [2]string{half(0), half(1)}}
}

const header = `// Code generated by gen_avx2.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// AVX2 + FMA + F16C MultiQuery kernels of the block formats beyond q8_0 and q4_0, tq4 and the turbo tiers, on the
// skeleton of multi_avx2_amd64.s (the same contracts, multiKernels): the scores kernels decode a
// row's 32-value groups one at a time into four vectors of 8 floats and multiply them into two
// partial sums per query; the accumulate kernels go over tiles of 64 rows, per 32-value group
// two passes (values 0..15, then 16..31), each decoding 16 values per row and holding four
// accumulators' two vectors in Y0..Y7.

DATA ·avx2Mask15+0(SB)/8, $0x0000000f0000000f
DATA ·avx2Mask15+8(SB)/8, $0x0000000f0000000f
DATA ·avx2Mask15+16(SB)/8, $0x0000000f0000000f
DATA ·avx2Mask15+24(SB)/8, $0x0000000f0000000f
GLOBL ·avx2Mask15(SB), RODATA|NOPTR, $32

DATA ·avx2Mask15B+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·avx2Mask15B+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL ·avx2Mask15B(SB), RODATA|NOPTR, $16

DATA ·avx2C16+0(SB)/8, $0x0000001000000010
DATA ·avx2C16+8(SB)/8, $0x0000001000000010
DATA ·avx2C16+16(SB)/8, $0x0000001000000010
DATA ·avx2C16+24(SB)/8, $0x0000001000000010
GLOBL ·avx2C16(SB), RODATA|NOPTR, $32

DATA ·avx2F16+0(SB)/8, $0x4180000041800000
DATA ·avx2F16+8(SB)/8, $0x4180000041800000
DATA ·avx2F16+16(SB)/8, $0x4180000041800000
DATA ·avx2F16+24(SB)/8, $0x4180000041800000
GLOBL ·avx2F16(SB), RODATA|NOPTR, $32

DATA ·avx2F256+0(SB)/8, $0x4380000043800000
DATA ·avx2F256+8(SB)/8, $0x4380000043800000
DATA ·avx2F256+16(SB)/8, $0x4380000043800000
DATA ·avx2F256+24(SB)/8, $0x4380000043800000
GLOBL ·avx2F256(SB), RODATA|NOPTR, $32

DATA ·avx2Sh0+0(SB)/8, $0x0000000100000000
DATA ·avx2Sh0+8(SB)/8, $0x0000000300000002
DATA ·avx2Sh0+16(SB)/8, $0x0000000500000004
DATA ·avx2Sh0+24(SB)/8, $0x0000000700000006
GLOBL ·avx2Sh0(SB), RODATA|NOPTR, $32

DATA ·avx2Sh8+0(SB)/8, $0x0000000900000008
DATA ·avx2Sh8+8(SB)/8, $0x0000000b0000000a
DATA ·avx2Sh8+16(SB)/8, $0x0000000d0000000c
DATA ·avx2Sh8+24(SB)/8, $0x0000000f0000000e
GLOBL ·avx2Sh8(SB), RODATA|NOPTR, $32

DATA ·avx2Sh3+0(SB)/8, $0x0000000300000000
DATA ·avx2Sh3+8(SB)/8, $0x0000000900000006
DATA ·avx2Sh3+16(SB)/8, $0x0000000f0000000c
DATA ·avx2Sh3+24(SB)/8, $0x0000001500000012
GLOBL ·avx2Sh3(SB), RODATA|NOPTR, $32

DATA ·avx2Sh2+0(SB)/8, $0x0000000200000000
DATA ·avx2Sh2+8(SB)/8, $0x0000000600000004
DATA ·avx2Sh2+16(SB)/8, $0x0000000a00000008
DATA ·avx2Sh2+24(SB)/8, $0x0000000e0000000c
DATA ·avx2Sh2+32(SB)/8, $0x0000001200000010
DATA ·avx2Sh2+40(SB)/8, $0x0000001600000014
DATA ·avx2Sh2+48(SB)/8, $0x0000001a00000018
DATA ·avx2Sh2+56(SB)/8, $0x0000001e0000001c
GLOBL ·avx2Sh2(SB), RODATA|NOPTR, $64

// iq4_nl's kvalues as bytes: −127 −104 −83 −65 −49 −35 −22 −10 1 13 25 38 53 69 89 113.
DATA ·avx2IQ4NL+0(SB)/8, $0xf6eaddcfbfad9881
DATA ·avx2IQ4NL+8(SB)/8, $0x7159453526190d01
GLOBL ·avx2IQ4NL(SB), RODATA|NOPTR, $16

// PFDISTX is how far ahead of a row the scores kernels prefetch, in bytes.
#define PFDISTX 6144
`

const scoresTmpl = `
// func multiScores@AVX2(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// %DOC%
TEXT ·multiScores@AVX2(SB), NOSPLIT, $0-64
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), R13
	MOVQ nv+16(FP), R11
	SHRQ $5, R11
	MOVQ rows+24(FP), DI
	MOVQ rb+32(FP), R8
	MOVQ m+40(FP), R10
	MOVQ out+48(FP), R9
	MOVQ ostride+56(FP), R15
	%SETUP%
	%LEVELS%
	TESTQ R10, R10
	JZ   done
	TESTQ R11, R11
	JZ   done

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	MOVQ DI, BX
	MOVQ SI, CX
	MOVQ R11, R12

blk:
	PREFETCHT0 PFDISTX(BX)
	%DEC%
	VFMADD231PS (CX), Y4, Y0
	VFMADD231PS 32(CX), Y5, Y0
	VFMADD231PS 64(CX), Y6, Y10
	VFMADD231PS 96(CX), Y7, Y10
	VFMADD231PS (CX)(DX*1), Y4, Y1
	VFMADD231PS 32(CX)(DX*1), Y5, Y1
	VFMADD231PS 64(CX)(DX*1), Y6, Y11
	VFMADD231PS 96(CX)(DX*1), Y7, Y11
	VFMADD231PS (CX)(DX*2), Y4, Y2
	VFMADD231PS 32(CX)(DX*2), Y5, Y2
	VFMADD231PS 64(CX)(DX*2), Y6, Y12
	VFMADD231PS 96(CX)(DX*2), Y7, Y12
	VFMADD231PS (CX)(R13*1), Y4, Y3
	VFMADD231PS 32(CX)(R13*1), Y5, Y3
	VFMADD231PS 64(CX)(R13*1), Y6, Y13
	VFMADD231PS 96(CX)(R13*1), Y7, Y13
	ADDQ $%STEP%, BX
	ADDQ $128, CX
	DECQ R12
	JNZ  blk

	VADDPS Y10, Y0, Y0
	VADDPS Y11, Y1, Y1
	VADDPS Y12, Y2, Y2
	VADDPS Y13, Y3, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	%ROWSCALE%
	VMOVUPS X0, (R9)
	ADDQ R8, DI
	ADDQ R15, R9
	DECQ R10
	JNZ  row

done:
	VZEROUPPER
	RET
`

const accTmpl = `
// func multiAcc@AVX2(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// %DOC%
TEXT ·multiAcc@AVX2(SB), NOSPLIT, $16-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	%SETUP%
	%LEVELS%
	TESTQ R10, R10
	JZ   done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   done

tile:
	MOVQ R10, AX
	CMPQ AX, $64
	JLE  tnok
	MOVQ $64, AX
tnok:
	MOVQ AX, tn-8(SP)
	MOVQ rb+32(FP), R12
	SHLQ $6, R12
	MOVQ R12, pf-16(SP)
	MOVQ nv+16(FP), R11
	SHRQ $5, R11
	XORQ BX, BX
	MOVQ SI, CX

grp:
	VMOVUPS 0(CX), Y0
	VMOVUPS 32(CX), Y1
	VMOVUPS 0(CX)(DX*1), Y2
	VMOVUPS 32(CX)(DX*1), Y3
	VMOVUPS 0(CX)(DX*2), Y4
	VMOVUPS 32(CX)(DX*2), Y5
	VMOVUPS 0(CX)(R13*1), Y6
	VMOVUPS 32(CX)(R13*1), Y7
	LEAQ (DI)(BX*1), R12
	MOVQ R9, R8
	MOVQ tn-8(SP), R15

row0:
	MOVQ pf-16(SP), AX
	PREFETCHT0 (R12)(AX*1)
	%HALF0%
	VBROADCASTSS (R8), Y12
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y9, Y1
	VBROADCASTSS 4(R8), Y12
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y12, Y9, Y3
	VBROADCASTSS 8(R8), Y12
	VFMADD231PS Y12, Y8, Y4
	VFMADD231PS Y12, Y9, Y5
	VBROADCASTSS 12(R8), Y12
	VFMADD231PS Y12, Y8, Y6
	VFMADD231PS Y12, Y9, Y7
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	DECQ R15
	JNZ  row0

	VMOVUPS Y0, 0(CX)
	VMOVUPS Y1, 32(CX)
	VMOVUPS Y2, 0(CX)(DX*1)
	VMOVUPS Y3, 32(CX)(DX*1)
	VMOVUPS Y4, 0(CX)(DX*2)
	VMOVUPS Y5, 32(CX)(DX*2)
	VMOVUPS Y6, 0(CX)(R13*1)
	VMOVUPS Y7, 32(CX)(R13*1)
	VMOVUPS 64(CX), Y0
	VMOVUPS 96(CX), Y1
	VMOVUPS 64(CX)(DX*1), Y2
	VMOVUPS 96(CX)(DX*1), Y3
	VMOVUPS 64(CX)(DX*2), Y4
	VMOVUPS 96(CX)(DX*2), Y5
	VMOVUPS 64(CX)(R13*1), Y6
	VMOVUPS 96(CX)(R13*1), Y7
	LEAQ (DI)(BX*1), R12
	MOVQ R9, R8
	MOVQ tn-8(SP), R15

row1:
	MOVQ pf-16(SP), AX
	PREFETCHT0 (R12)(AX*1)
	%HALF1%
	VBROADCASTSS (R8), Y12
	VFMADD231PS Y12, Y8, Y0
	VFMADD231PS Y12, Y9, Y1
	VBROADCASTSS 4(R8), Y12
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y12, Y9, Y3
	VBROADCASTSS 8(R8), Y12
	VFMADD231PS Y12, Y8, Y4
	VFMADD231PS Y12, Y9, Y5
	VBROADCASTSS 12(R8), Y12
	VFMADD231PS Y12, Y8, Y6
	VFMADD231PS Y12, Y9, Y7
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	DECQ R15
	JNZ  row1

	VMOVUPS Y0, 64(CX)
	VMOVUPS Y1, 96(CX)
	VMOVUPS Y2, 64(CX)(DX*1)
	VMOVUPS Y3, 96(CX)(DX*1)
	VMOVUPS Y4, 64(CX)(DX*2)
	VMOVUPS Y5, 96(CX)(DX*2)
	VMOVUPS Y6, 64(CX)(R13*1)
	VMOVUPS Y7, 96(CX)(R13*1)
	ADDQ $%STEP%, BX
	ADDQ $128, CX
	DECQ R11
	JNZ  grp

	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ wstride+56(FP), R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  tile

done:
	VZEROUPPER
	RET
`

func main() {
	var out bytes.Buffer
	out.WriteString(header)
	for _, f := range formats {
		levels := ""
		if f.name == "TQ4" || f.name == "T4" {
			levels = "VMOVUPS ·tq4Levels(SB), Y14\n\tVMOVUPS ·tq4Levels+32(SB), Y15"
		}
		if f.name == "T3" {
			levels = "VMOVUPS ·turboLevels3(SB), Y14"
		}
		if f.name == "T2" {
			levels = "VMOVUPS ·turboLevels2x2(SB), Y14"
		}
		rowScale := ""
		if f.rowScale {
			rowScale = "VBROADCASTSS (DI)(R14*1), X1\n\tVMULPS X1, X0, X0"
			if f.half16 {
				rowScale = "VPBROADCASTW (DI)(R14*1), X1\n\tVCVTPH2PS X1, X1\n\tVMULPS X1, X0, X0"
			}
			if f.mul != "" {
				rowScale = "VBROADCASTSS (DI)(R14*1), X1\n\tVMULPS " + f.mul + "(SB), X1, X1\n\tVMULPS X1, X0, X0"
			}
		}
		r := strings.NewReplacer("@", f.name, "%DOC%", f.doc, "%SETUP%", f.setup, "%LEVELS%", levels,
			"%DEC%", strings.TrimSpace(f.dec), "%STEP%", fmt.Sprint(f.step), "%ROWSCALE%", rowScale,
			"%HALF0%", strings.TrimSpace(f.half[0]), "%HALF1%", strings.TrimSpace(f.half[1]))
		out.WriteString(r.Replace(scoresTmpl))
		out.WriteString(r.Replace(accTmpl))
	}
	// Drop the blank lines left by empty pieces.
	s := strings.ReplaceAll(out.String(), "\n\t\n", "\n")
	s = strings.ReplaceAll(s, "\n\t\n", "\n")
	if err := os.WriteFile("multi_avx2x_amd64.s", []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
