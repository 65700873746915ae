//go:build ignore

// gen_turbo writes multi_turbo_amd64.s: the AVX-512 MultiQuery kernels of the codebook formats
// whose values are a row scale times a level looked up by code (tq4, turbo4, turbo3, turbo2),
// and q2k's scores kernel (2-bit codes, the per-channel scales folded into the queries), laid
// out for the FMA units, which bound them: four queries cost four FMAs per 16 values and side
// however the codes are stored, and the codes cost two or three more operations that run beside
// them. Run with `go generate ./native/kvq`.
//
// Scores: rows go four at a time (the queries' vectors loaded once per 32-value group for the
// four rows), each row and query one accumulator of 16 lanes (the group's two vectors fused
// into it one after the other: 16 accumulators, each a chain of two FMAs per group, where one
// group's 32 FMAs take 16 cycles); the codes are looked up in the unscaled levels and the row
// scale multiplies the row's four sums once, after the 16 accumulators are reduced together
// (30 shuffles and 15 adds for 16 sums).
//
// Accumulate: rows go in tiles of 64; a prepass multiplies each row's four weights by its
// scale (ws, on the stack), then the tile is read once per pair of 32-value groups, the pair's
// 16 accumulator vectors held in registers (each one FMA a row, so no chain is longer than the
// row's 16 FMAs take) and each row's four weights broadcast once for both groups.
package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
)

type format struct {
	name   string
	doc    string
	step   int    // bytes per 32 values
	consts string // loads Z31 (the levels, unscaled) and what dec needs (Z30, K3)
	// scaleOff sets R14 to the byte offset of the row scale; "" for none (q2k).
	scaleOff string
	f32      bool // the row scale is a float32 (tq4), else f16
	acc      bool // emit the accumulate kernel
	pair     bool // scores through pairTmpl (q2k) instead of scoresTmpl
	// dec(p, lo, hi) turns the 32-value group at p (a register) into lo (its first 16 values in
	// the queries' order) and hi (the next 16), looked up in Z31.
	dec func(p, lo, hi string) string
}

func f32bits(v float32) uint32 { return math.Float32bits(v) }

// table writes a 64-byte constant of sixteen dwords.
func table(name string, v [16]uint32) string {
	var b strings.Builder
	for i := 0; i < 16; i += 2 {
		fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $0x%08x%08x\n", name, 4*i, v[i+1], v[i])
	}
	fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $64\n\n", name)
	return b.String()
}

// tq4Dec: tq4's nibbles (low: the group's even values, high: its odd ones).
func tq4Dec(p, lo, hi string) string {
	return fmt.Sprintf(`VPMOVZXBD (%[1]s), %[2]s
	VPSRLD $4, %[2]s, %[3]s
	VPERMPS Z31, %[2]s, %[2]s
	VPERMPS Z31, %[3]s, %[3]s`, p, lo, hi)
}

// t3Dec: 16 3-bit codes from two dwords (bytes 0..3 into lanes 0..7, 3..6 into 8..15 under
// K3), shifted per lane (Z30), looked up in the 8 levels twice over (VPERMPS reads 4 bits).
func t3Dec(p, lo, hi string) string {
	return fmt.Sprintf(`VPBROADCASTD (%[1]s), %[2]s
	VPBROADCASTD 3(%[1]s), K3, %[2]s
	VPSRLVD Z30, %[2]s, %[2]s
	VPERMPS Z31, %[2]s, %[2]s
	VPBROADCASTD 6(%[1]s), %[3]s
	VPBROADCASTD 9(%[1]s), K3, %[3]s
	VPSRLVD Z30, %[3]s, %[3]s
	VPERMPS Z31, %[3]s, %[3]s`, p, lo, hi)
}

// t2Dec: 16 2-bit codes from one dword, shifted per lane (Z30), looked up in the 4 levels four
// times over.
func t2Dec(p, lo, hi string) string {
	return fmt.Sprintf(`VPBROADCASTD (%[1]s), %[2]s
	VPSRLVD Z30, %[2]s, %[2]s
	VPERMPS Z31, %[2]s, %[2]s
	VPBROADCASTD 4(%[1]s), %[3]s
	VPSRLVD Z30, %[3]s, %[3]s
	VPERMPS Z31, %[3]s, %[3]s`, p, lo, hi)
}

func scaleOff(bits int) string {
	return fmt.Sprintf("MOVQ d+8(FP), R14\n\tIMULQ $%d, R14\n\tADDQ $7, R14\n\tSHRQ $3, R14", bits)
}

var (
	// turboLevels2 and turboLevels3 are turbo.go's (turboInts2 times turboUnit2, turboInts3
	// times turboUnit3), q2kLevels q2k.go's: turbo2's.
	turboLevels2 = func() (l [4]float32) {
		for k, v := range [4]int8{-90, -27, 27, 90} {
			l[k] = float32(v) * float32(0.01678167)
		}
		return l
	}()
	q2kLevels    = turboLevels2
	turboLevels3 = func() (l [8]float32) {
		for k, v := range [8]int8{-88, -55, -31, -10, 10, 31, 55, 88} {
			l[k] = float32(v) * float32(0.02444615)
		}
		return l
	}()
)

const (
	t4Consts  = "VMOVUPS ·tq4Levels(SB), Z31"
	t3Consts  = "VMOVUPS ·turboZL3(SB), Z31\n\tVMOVUPS ·turboZSh3(SB), Z30\n\tMOVL $0xff00, AX\n\tKMOVW AX, K3"
	t2Consts  = "VMOVUPS ·turboZL2(SB), Z31\n\tVMOVUPS ·turboZSh2(SB), Z30"
	q2kConsts = "VMOVUPS ·q2kZL(SB), Z31\n\tVMOVUPS ·turboZSh2(SB), Z30"
)

var formats = []format{
	{name: "TQ4", doc: "tq4: 16 code bytes per 32 values (low nibbles the group's even values, high the odd; the\n// queries and accumulators permuted to match, tq4Permute), an f32 row scale after ⌈d/2⌉ bytes.",
		step: 16, consts: t4Consts, scaleOff: "MOVQ d+8(FP), R14\n\tINCQ R14\n\tSHRQ $1, R14", f32: true, acc: true, dec: tq4Dec},
	{name: "T4", doc: "turbo4: tq4's layout and levels, an f16 row scale after ⌈d/2⌉ bytes.",
		step: 16, consts: t4Consts, scaleOff: scaleOff(4), acc: true, dec: tq4Dec},
	{name: "T3", doc: "turbo3: 3-bit codes as a little-endian bit stream, an f16 row scale after ⌈3d/8⌉ bytes.",
		step: 12, consts: t3Consts, scaleOff: scaleOff(3), acc: true, dec: t3Dec},
	{name: "T2", doc: "turbo2: 2-bit codes as a little-endian bit stream, an f16 row scale after ⌈d/4⌉ bytes.",
		step: 8, consts: t2Consts, scaleOff: scaleOff(2), acc: true, dec: t2Dec},
	{name: "Q2K", doc: "q2k: a cell's d/4 bytes of 2-bit codes (channel 4i+k at bits 2k of byte i, turbo2's bit\n// stream and levels), no row scale: the queries come multiplied by the group's channel scales.",
		step: 8, consts: q2kConsts, pair: true, dec: t2Dec},
}

func header() string {
	var b strings.Builder
	b.WriteString(`// Code generated by gen_turbo.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 MultiQuery kernels of tq4 and the turbo tiers, and q2k's scores kernel: see
// gen_turbo.go for the layout of the work. The contracts are multiKernels' (multi.go).

`)
	var l3, l2, lq, sh3, sh2, spread [16]uint32
	for i := range l3 {
		l3[i], l2[i], lq[i] = f32bits(turboLevels3[i%8]), f32bits(turboLevels2[i%4]), f32bits(q2kLevels[i%4])
		sh3[i], sh2[i] = uint32(3*(i%8)), uint32(2*i)
		spread[i] = uint32(i / 4)
	}
	b.WriteString(table("turboZL3", l3))
	b.WriteString(table("turboZL2", l2))
	b.WriteString(table("q2kZL", lq))
	b.WriteString(table("turboZSh3", sh3))
	b.WriteString(table("turboZSh2", sh2))
	b.WriteString(table("turboZSpread", spread))
	var even, odd, ilo, ihi [16]uint32
	for i := range even {
		even[i], odd[i] = uint32(2*i), uint32(2*i+1)
		ilo[i], ihi[i] = uint32(i/2+16*(i%2)), uint32(8+i/2+16*(i%2))
	}
	b.WriteString(table("turboZEven", even))
	b.WriteString(table("turboZOdd", odd))
	b.WriteString(table("turboZILo", ilo))
	b.WriteString(table("turboZIHi", ihi))
	b.WriteString(permuteAsm)
	b.WriteString("// PFDISTT is how far ahead of a row the scores kernels prefetch, in bytes.\n#define PFDISTT 6144\n")
	return b.String()
}

// permuteAsm is tq4Permute and tq4Unpermute over whole 32-value groups: two VPERMT2PS a group.
const permuteAsm = `
// func tq4PermuteAVX512(dst, src *float32, groups int)
// Each 32-float group of src to dst as its even values, then its odd ones (tq4Permute).
TEXT ·tq4PermuteAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ groups+16(FP), CX
	VMOVUPS ·turboZEven(SB), Z4
	VMOVUPS ·turboZOdd(SB), Z5
	TESTQ CX, CX
	JZ   tp_done
tp_loop:
	VMOVUPS (SI), Z0
	VMOVUPS (SI), Z1
	VMOVUPS 64(SI), Z2
	VPERMT2PS Z2, Z4, Z0
	VPERMT2PS Z2, Z5, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  tp_loop
tp_done:
	VZEROUPPER
	RET

// func tq4UnpermuteAVX512(dst, src *float32, groups int)
// tq4PermuteAVX512 undone: each group's first 16 values to its even places, the rest to its odd.
TEXT ·tq4UnpermuteAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ groups+16(FP), CX
	VMOVUPS ·turboZILo(SB), Z4
	VMOVUPS ·turboZIHi(SB), Z5
	TESTQ CX, CX
	JZ   tu_done
tu_loop:
	VMOVUPS (SI), Z0
	VMOVUPS (SI), Z1
	VMOVUPS 64(SI), Z2
	VPERMT2PS Z2, Z4, Z0
	VPERMT2PS Z2, Z5, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  tu_loop
tu_done:
	VZEROUPPER
	RET
`

const scoresTmpl = `
// func multiScores@Z(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// %DOC%
TEXT ·multiScores@Z(SB), NOSPLIT, $8-64
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between queries
	LEAQ (DX)(DX*2), R13       // 3 queries
	MOVQ nv+16(FP), R11
	SHRQ $5, R11               // 32-value groups per row
	MOVQ R11, ng-8(SP)
	MOVQ rows+24(FP), DI
	MOVQ rb+32(FP), R8
	MOVQ m+40(FP), R10
	MOVQ out+48(FP), R9
	%CONSTS%
	VMOVUPS ·reduceOrder(SB), Z29
	%SCALEINIT%
	TESTQ R10, R10
	JZ   s@_done
	TESTQ R11, R11
	JZ   s@_done

s@_quad:
	// Rows a, b, c, d at BX, R15, R12, AX; past the last row they read row a again.
	MOVQ DI, BX
	MOVQ DI, R15
	MOVQ DI, R12
	MOVQ DI, AX
	CMPQ R10, $2
	JLT  s@_ptrs
	ADDQ R8, R15
	CMPQ R10, $3
	JLT  s@_ptrs
	LEAQ (DI)(R8*2), R12
	CMPQ R10, $4
	JLT  s@_ptrs
	LEAQ (R12)(R8*1), AX
s@_ptrs:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15
	MOVQ SI, CX
	MOVQ ng-8(SP), R11

s@_blk:
	PREFETCHT0 PFDISTT(BX)
	PREFETCHT0 PFDISTT(AX)
	%DECA%
	%DECB%
	%DECC%
	%DECD%
%FMAS%
	ADDQ $%STEP%, BX
	ADDQ $%STEP%, R15
	ADDQ $%STEP%, R12
	ADDQ $%STEP%, AX
	ADDQ $128, CX
	DECQ R11
	JNZ  s@_blk

%REDUCE%
	%SCALE%
	VMOVUPS X0, (R9)
	CMPQ R10, $1
	JEQ  s@_done
	MOVQ ostride+56(FP), CX
	VEXTRACTF32X4 $1, Z0, X1
	VMOVUPS X1, (R9)(CX*1)
	CMPQ R10, $2
	JEQ  s@_done
	LEAQ (R9)(CX*2), BX
	VEXTRACTF32X4 $2, Z0, X1
	VMOVUPS X1, (BX)
	CMPQ R10, $3
	JEQ  s@_done
	VEXTRACTF32X4 $3, Z0, X1
	VMOVUPS X1, (BX)(CX*1)

	LEAQ (DI)(R8*4), DI
	LEAQ (BX)(CX*2), R9
	SUBQ $4, R10
	JNZ  s@_quad

s@_done:
	VZEROUPPER
	RET
`

// pairTmpl is q2k's scores kernel: rows (cells) two at a time, each (row, query) two
// accumulators (a group's first 16 values and its last 16), summed as q2k's first AVX-512
// kernel summed them (the two added, the halves folded, then three horizontal pairwise adds,
// done here with in-lane shuffles for both rows at once), so its scores stay bit for bit what
// they were: q2k requantizes its open group as cells arrive, which turns any change in a
// score's rounding into code flips downstream.
const pairTmpl = `
// func multiScores@Z(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// %DOC%
TEXT ·multiScores@Z(SB), NOSPLIT, $0-64
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between queries
	LEAQ (DX)(DX*2), R13       // 3 queries
	MOVQ nv+16(FP), R11
	SHRQ $5, R11               // 32-value groups per row
	MOVQ rows+24(FP), DI
	MOVQ rb+32(FP), R8
	MOVQ m+40(FP), R10
	MOVQ out+48(FP), R9
	MOVQ ostride+56(FP), R14
	%CONSTS%
	TESTQ R10, R10
	JZ   s@_done
	TESTQ R11, R11
	JZ   s@_done

s@_pair:
	CMPQ R10, $1
	JNE  s@_two
	XORQ R8, R8                // odd last row: b reads a again
s@_two:
%ZERO16%
	MOVQ DI, BX
	LEAQ (DI)(R8*1), R15
	MOVQ SI, CX
	MOVQ R11, R12

s@_blk:
	PREFETCHT0 PFDISTT(BX)
	%DECA%
	%DECB%
%PAIRFMAS%
	ADDQ $%STEP%, BX
	ADDQ $%STEP%, R15
	ADDQ $128, CX
	DECQ R12
	JNZ  s@_blk

%PAIRREDUCE%
	VMOVUPS X0, (R9)
	CMPQ R10, $1
	JEQ  s@_done
	VEXTRACTF32X4 $1, Z0, X1
	VMOVUPS X1, (R9)(R14*1)

	LEAQ (DI)(R8*2), DI
	LEAQ (R9)(R14*2), R9
	SUBQ $2, R10
	JNZ  s@_pair

s@_done:
	VZEROUPPER
	RET
`

// pairFMAs: Z(8r+2h+v) += query h's vector v (Z(16+2h+v)) × row r's decoded vector v
// (Z(24+2r+v)).
func pairFMAs() string {
	var b strings.Builder
	qaddr := []string{"(CX)", "(CX)(DX*1)", "(CX)(DX*2)", "(CX)(R13*1)"}
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, "\tVMOVUPS %[1]s, Z%[2]d\n\tVMOVUPS 64%[1]s, Z%[3]d\n", qaddr[h], 16+2*h, 17+2*h)
	}
	for h := 0; h < 4; h++ {
		for r := 0; r < 2; r++ {
			for v := 0; v < 2; v++ {
				fmt.Fprintf(&b, "\tVFMADD231PS Z%d, Z%d, Z%d\n", 16+2*h+v, 24+2*r+v, 8*r+2*h+v)
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// pairReduce sums row a's (Z0..Z7) and row b's (Z8..Z15) accumulators into lanes 0..3
// (row a's four queries) and 4..7 (row b's) of Z0.
func pairReduce() string {
	var b strings.Builder
	b.WriteString("\t// Per query: the two accumulators added, the 512-bit halves folded (row a into the low\n\t// 256 bits, row b into the high), then three pairwise horizontal adds within 128-bit lanes.\n")
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, "\tVADDPS Z%[2]d, Z%[1]d, Z%[1]d\n\tVADDPS Z%[4]d, Z%[3]d, Z%[3]d\n", 2*h, 2*h+1, 8+2*h, 8+2*h+1)
	}
	for h := 0; h < 4; h++ { // Z(16+h) = [a: lanes 0+2, 1+3 | b: lanes 0+2, 1+3] of query h
		fmt.Fprintf(&b, "\tVSHUFF32X4 $0x44, Z%[2]d, Z%[1]d, Z20\n\tVSHUFF32X4 $0xEE, Z%[2]d, Z%[1]d, Z21\n\tVADDPS Z21, Z20, Z%[3]d\n", 2*h, 8+2*h, 16+h)
	}
	hadd := func(x, y, dst int) {
		fmt.Fprintf(&b, "\tVSHUFPS $0x88, Z%[2]d, Z%[1]d, Z20\n\tVSHUFPS $0xDD, Z%[2]d, Z%[1]d, Z21\n\tVADDPS Z21, Z20, Z%[3]d\n", x, y, dst)
	}
	hadd(16, 17, 16)
	hadd(18, 19, 18)
	hadd(16, 18, 16)
	b.WriteString("\tVSHUFF32X4 $0x88, Z16, Z16, Z20\n\tVSHUFF32X4 $0xDD, Z16, Z16, Z21\n\tVADDPS Z21, Z20, Z0")
	return b.String()
}

// fmas is the scores kernel's 32 FMAs of a group: query h's two vectors (Z24/Z25 for even h,
// Z26/Z27 for odd) into the accumulator Z(4r+h) of each row r, whose decoded vectors are
// Z(16+2r) and Z(17+2r).
func fmas() string {
	var b strings.Builder
	qaddr := []string{"(CX)", "(CX)(DX*1)", "(CX)(DX*2)", "(CX)(R13*1)"}
	for h := 0; h < 4; h++ {
		lo, hi := 24+2*(h%2), 25+2*(h%2)
		fmt.Fprintf(&b, "\tVMOVUPS %s, Z%d\n\tVMOVUPS 64%s, Z%d\n", qaddr[h], lo, qaddr[h], hi)
		for r := 0; r < 4; r++ {
			fmt.Fprintf(&b, "\tVFMADD231PS Z%d, Z%d, Z%d\n", lo, 16+2*r, 4*r+h)
		}
		for r := 0; r < 4; r++ {
			fmt.Fprintf(&b, "\tVFMADD231PS Z%d, Z%d, Z%d\n", hi, 17+2*r, 4*r+h)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// reduce sums the 16 lanes of each accumulator Z(4r+h) into lane 4r+h of Z0.
func reduce() string {
	var b strings.Builder
	b.WriteString("\t// Sum the 16 accumulators' lanes: 128-bit lanes first (pairing queries, then rows),\n\t// then within lanes; lane 4h+r then holds row r's sum for query h, permuted to 4r+h.\n")
	for r := 0; r < 4; r++ { // Z(4r) = [h0 h0 h1 h1], Z(4r+2) = [h2 h2 h3 h3] (half sums)
		for _, p := range []int{0, 2} {
			x, y := 4*r+p, 4*r+p+1
			fmt.Fprintf(&b, "\tVSHUFF32X4 $0x44, Z%[2]d, Z%[1]d, Z16\n\tVSHUFF32X4 $0xEE, Z%[2]d, Z%[1]d, Z17\n\tVADDPS Z17, Z16, Z%[1]d\n", x, y)
		}
	}
	for r := 0; r < 4; r++ { // Z(4r): 128-bit lane h holds four partial sums of query h
		fmt.Fprintf(&b, "\tVSHUFF32X4 $0x88, Z%[2]d, Z%[1]d, Z16\n\tVSHUFF32X4 $0xDD, Z%[2]d, Z%[1]d, Z17\n\tVADDPS Z17, Z16, Z%[1]d\n", 4*r, 4*r+2)
	}
	for _, r := range []int{0, 2} { // Z(4r): lane h = [r (f0+f1), r (f2+f3), r+1 …, r+1 …]
		fmt.Fprintf(&b, "\tVSHUFPS $0x88, Z%[2]d, Z%[1]d, Z16\n\tVSHUFPS $0xDD, Z%[2]d, Z%[1]d, Z17\n\tVADDPS Z17, Z16, Z%[1]d\n", 4*r, 4*r+4)
	}
	b.WriteString("\tVSHUFPS $0x88, Z8, Z0, Z16\n\tVSHUFPS $0xDD, Z8, Z0, Z17\n\tVADDPS Z17, Z16, Z0\n")
	b.WriteString("\tVPERMPS Z0, Z29, Z0")
	return b.String()
}

// scale multiplies lane 4r+h of Z0 by row r's scale (rows at BX, R15, R12, AX, their scales
// at R14 past them).
func scale(f format) string {
	if f.scaleOff == "" {
		return ""
	}
	if f.f32 {
		return `MOVL (BX)(R14*1), CX
	VMOVD CX, X1
	MOVL (R15)(R14*1), CX
	VPINSRD $1, CX, X1, X1
	MOVL (R12)(R14*1), CX
	VPINSRD $2, CX, X1, X1
	MOVL (AX)(R14*1), CX
	VPINSRD $3, CX, X1, X1
	VPERMPS Z1, Z28, Z1
	VMULPS Z1, Z0, Z0`
	}
	return `MOVWLZX (BX)(R14*1), CX
	VMOVD CX, X1
	MOVWLZX (R15)(R14*1), CX
	VPINSRW $1, CX, X1, X1
	MOVWLZX (R12)(R14*1), CX
	VPINSRW $2, CX, X1, X1
	MOVWLZX (AX)(R14*1), CX
	VPINSRW $3, CX, X1, X1
	VCVTPH2PS X1, X1
	VPERMPS Z1, Z28, Z1
	VMULPS Z1, Z0, Z0`
}

const accTmpl = `
// func multiAcc@Z(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// %DOC%
TEXT ·multiAcc@Z(SB), 0, $1048-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	%CONSTS%
	%SCALEOFF%
	TESTQ R10, R10
	JZ   a@_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   a@_done

a@_tile:
	MOVQ R10, AX               // rows in this tile
	CMPQ AX, $64
	JLE  a@_tn
	MOVQ $64, AX
a@_tn:
	MOVQ AX, tn-8(SP)
	MOVQ rb+32(FP), R12
	SHLQ $6, R12
	MOVQ R12, pf-16(SP)        // bytes to the next tile, which the row loops prefetch

	// ws[j] = the four weights of row j times its scale.
	MOVQ DI, R12
	MOVQ R9, R8
	LEAQ ws-1048(SP), CX
	MOVQ AX, R15
a@_pre:
	%WSCALE%
	VMULPS (R8), X16, X16
	VMOVUPS X16, (CX)
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	ADDQ $16, CX
	DECQ R15
	JNZ  a@_pre

	MOVQ nv+16(FP), R11
	SHRQ $5, R11               // groups left
	XORQ BX, BX                // byte offset of the group in a row
	MOVQ SI, CX                // accumulators of the group

a@_g2:
	CMPQ R11, $2
	JLT  a@_g1
%LOAD16%
	LEAQ (DI)(BX*1), R12
	LEAQ ws-1048(SP), R8
	MOVQ tn-8(SP), R15
a@_row2:
	MOVQ pf-16(SP), AX
	PREFETCHT0 (R12)(AX*1)
	LEAQ %STEP%(R12), AX
	%DEC2A%
	%DEC2B%
	VBROADCASTSS (R8), Z24
	VBROADCASTSS 4(R8), Z25
	VBROADCASTSS 8(R8), Z26
	VBROADCASTSS 12(R8), Z27
%FMA16%
	ADDQ rb+32(FP), R12
	ADDQ $16, R8
	DECQ R15
	JNZ  a@_row2
%STORE16%
	ADDQ $%STEP2%, BX
	ADDQ $256, CX
	SUBQ $2, R11
	JMP  a@_g2

a@_g1:
	TESTQ R11, R11
	JZ   a@_next
%LOAD8%
	LEAQ (DI)(BX*1), R12
	LEAQ ws-1048(SP), R8
	MOVQ tn-8(SP), R15
a@_row1:
	MOVQ pf-16(SP), AX
	PREFETCHT0 (R12)(AX*1)
	%DEC1%
	VBROADCASTSS (R8), Z24
	VBROADCASTSS 4(R8), Z25
	VBROADCASTSS 8(R8), Z26
	VBROADCASTSS 12(R8), Z27
%FMA8%
	ADDQ rb+32(FP), R12
	ADDQ $16, R8
	DECQ R15
	JNZ  a@_row1
%STORE8%

a@_next:
	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ wstride+56(FP), R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  a@_tile

a@_done:
	VZEROUPPER
	RET
`

func zero16() string {
	var b strings.Builder
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&b, "\tVXORPS Z%[1]d, Z%[1]d, Z%[1]d\n", i)
	}
	return strings.TrimRight(b.String(), "\n")
}

// accAddr is accumulator h's vector v (0, 1: group g's two; 2, 3: group g+1's) at CX.
func accAddr(h, v int) string {
	idx := []string{"", "(DX*1)", "(DX*2)", "(R13*1)"}[h]
	off := 64 * v
	if off == 0 {
		return "(CX)" + idx
	}
	return fmt.Sprintf("%d(CX)%s", off, idx)
}

// accMoves loads (or stores) the accumulators of g groups: Z(8k+2h+v) is group k's vector v of
// accumulator h.
func accMoves(groups int, store bool) string {
	var b strings.Builder
	for k := 0; k < groups; k++ {
		for h := 0; h < 4; h++ {
			for v := 0; v < 2; v++ {
				a, z := accAddr(h, 2*k+v), fmt.Sprintf("Z%d", 8*k+2*h+v)
				if store {
					fmt.Fprintf(&b, "\tVMOVUPS %s, %s\n", z, a)
				} else {
					fmt.Fprintf(&b, "\tVMOVUPS %s, %s\n", a, z)
				}
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// accFMAs: Z(8k+2h+v) += the weight of accumulator h (Z24+h) × group k's decoded vector v
// (Z(16+2k+v)).
func accFMAs(groups int) string {
	var b strings.Builder
	for h := 0; h < 4; h++ {
		for k := 0; k < groups; k++ {
			for v := 0; v < 2; v++ {
				fmt.Fprintf(&b, "\tVFMADD231PS Z%d, Z%d, Z%d\n", 24+h, 16+2*k+v, 8*k+2*h+v)
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func main() {
	var out bytes.Buffer
	out.WriteString(header())
	for _, f := range formats {
		scaleInit, wscale := "", ""
		if f.scaleOff != "" {
			scaleInit = f.scaleOff + fmt.Sprintf("\n\tMOVQ R11, AX\n\tIMULQ $%d, AX\n\tSUBQ AX, R14              // from the rows' ends of the groups to their scales", f.step) +
				"\n\tVMOVUPS ·turboZSpread(SB), Z28"
			if f.f32 {
				wscale = "VBROADCASTSS (R12)(R14*1), X16"
			} else {
				wscale = "VPBROADCASTW (R12)(R14*1), X16\n\tVCVTPH2PS X16, X16"
			}
		}
		decA, decB := f.dec("BX", "Z16", "Z17"), f.dec("R15", "Z18", "Z19")
		if f.pair {
			decA, decB = f.dec("BX", "Z24", "Z25"), f.dec("R15", "Z26", "Z27")
		}
		r := strings.NewReplacer("@", f.name, "%DOC%", f.doc, "%CONSTS%", f.consts, "%STEP%", fmt.Sprint(f.step),
			"%STEP2%", fmt.Sprint(2*f.step), "%SCALEINIT%", scaleInit, "%SCALEOFF%", f.scaleOff,
			"%DECA%", decA, "%DECB%", decB,
			"%DECC%", f.dec("R12", "Z20", "Z21"), "%DECD%", f.dec("AX", "Z22", "Z23"),
			"%FMAS%", fmas(), "%PAIRFMAS%", pairFMAs(), "%PAIRREDUCE%", pairReduce(), "%ZERO16%", zero16(), "%REDUCE%", reduce(), "%SCALE%", scale(f), "%WSCALE%", wscale,
			"%LOAD16%", accMoves(2, false), "%STORE16%", accMoves(2, true),
			"%LOAD8%", accMoves(1, false), "%STORE8%", accMoves(1, true),
			"%DEC2A%", f.dec("R12", "Z16", "Z17"), "%DEC2B%", f.dec("AX", "Z18", "Z19"),
			"%DEC1%", f.dec("R12", "Z16", "Z17"), "%FMA16%", accFMAs(2), "%FMA8%", accFMAs(1))
		if f.pair {
			out.WriteString(r.Replace(pairTmpl))
		} else {
			out.WriteString(r.Replace(scoresTmpl))
		}
		if f.acc {
			out.WriteString(r.Replace(accTmpl))
		}
	}
	s := out.String()
	for strings.Contains(s, "\n\t\n") {
		s = strings.ReplaceAll(s, "\n\t\n", "\n")
	}
	if err := os.WriteFile("multi_turbo_amd64.s", []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
