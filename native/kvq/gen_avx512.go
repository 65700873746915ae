//go:build ignore

// gen_avx512 writes multi_avx512x_amd64.s: the AVX-512 MultiQuery kernels of q4_1, q5_0, q5_1
// and fp8 on the skeleton of the f16 and iq4_nl AVX-512 kernels
// (multi_amd64.s, multi_iq4nl_amd64.s): the scores kernels take rows in pairs, each 32-value
// group decoded into two vectors of 16 floats per row and multiplied into one partial sum per
// query and row; the accumulate kernels go over tiles of 64 rows, per 32-value group one pass
// that decodes the group's 32 values per row and holds four accumulators' two vectors in
// Z0..Z7. fp8 also has a scores kernel over bf16 queries (fp8BF16), with its query packer.
// Run with `go generate ./native/kvq`.
package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
)

// format is one format's pieces of assembly. A decoder dec(p, lo, hi, t, e) turns the group at p
// into lo (its first 16 values in the order the queries are laid out) and hi (the next 16).
// For the row-scale formats t holds the row's table (levels times the row scale, set by
// rowTab); for the block formats t and e are scratch. Constant registers: Z28, Z30, Z31
// (consts); scratch beyond t and e: AX and K1..K3 only where consts does not claim them.
type format struct {
	name   string
	doc    string
	step   int    // bytes per 32 values
	consts string // constant registers, R14
	// scaleOff sets R14 to the byte offset of the row scale (row-scale formats), else "".
	scaleOff string
	// rowTab(p, t, tmp) sets t to the row's table from the row scale at (p)(R14*1); "" for none.
	rowTab func(p, t string) string
	// sumScale scales the eight sums of a row pair in Y11 (lanes 0..3 row DI, 4..7 row DI+R8)
	// when the table does not carry the row scale (fp8); "" for none.
	sumScale string
	// accScale sets Z10 to the factor of the row at R12 (scale at (R12)(R14*1)) that the
	// weights are multiplied by as they are broadcast (the decoded Z8, Z9 stay as they are);
	// "" for none (the weights broadcast as they are).
	accScale string
	dec      func(p, lo, hi, t, e string) string
}

func f32hex(v float32) string { return fmt.Sprintf("$0x%08x", math.Float32bits(v)) }

// table writes a 64-byte constant of sixteen float32 values.
func table(name string, v [16]float32) string {
	var b strings.Builder
	for i := 0; i < 16; i += 2 {
		fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $0x%08x%08x\n", name, 4*i, math.Float32bits(v[i+1]), math.Float32bits(v[i]))
	}
	fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $64\n\n", name)
	return b.String()
}

const f16Tab = "MOVQ ·f16Table(SB), R14\n\t"

// q41Dec: t = [0..15]·d + m, the nibbles looked up in it (VPERMPS reads an index's low 4 bits).
func q41Dec(p, lo, hi, t, e string) string {
	return fmt.Sprintf(`MOVWLZX (%[1]s), AX
	VBROADCASTSS (R14)(AX*4), %[4]s
	MOVWLZX 2(%[1]s), AX
	VFMADD213PS.BCST (R14)(AX*4), Z31, %[4]s
	VPMOVZXBD 4(%[1]s), %[2]s
	VPSRLD $4, %[2]s, %[3]s
	VPERMPS %[4]s, %[2]s, %[2]s
	VPERMPS %[4]s, %[3]s, %[3]s
	`, p, lo, hi, t)
}

// q5Dec: the 32-entry table (t: codes 0..15, e: 16..31) built from the block's d (and m), the
// fifth bits of values 0..15 and 16..31 (qh's halves) in K1 and K2 OR 16 into the indices,
// VPERMI2PS looks them up (it reads an index's low 5 bits).
func q5Dec(withMin bool) func(p, lo, hi, t, e string) string {
	return func(p, lo, hi, t, e string) string {
		qh, qs := 2, 6
		var tab string
		if withMin {
			qh, qs = 4, 8
			tab = fmt.Sprintf(`MOVWLZX (%[1]s), AX
	VBROADCASTSS (R14)(AX*4), %[2]s
	VMOVAPS %[2]s, %[3]s
	MOVWLZX 2(%[1]s), AX
	VFMADD213PS.BCST (R14)(AX*4), Z31, %[2]s
	VFMADD213PS.BCST (R14)(AX*4), Z30, %[3]s
	`, p, t, e)
		} else {
			tab = fmt.Sprintf(`MOVWLZX (%[1]s), AX
	VMULPS.BCST (R14)(AX*4), Z28, %[2]s
	VMULPS.BCST (R14)(AX*4), Z31, %[3]s
	`, p, t, e)
		}
		return tab + fmt.Sprintf(`MOVL %[5]d(%[1]s), AX
	KMOVW AX, K1
	SHRL $16, AX
	KMOVW AX, K2
	VPMOVZXBD %[6]d(%[1]s), %[2]s
	VPSRLD $4, %[2]s, %[3]s
	VPANDD.BCST ·avx512Mask15(SB), %[2]s, %[2]s
	VPORD.BCST ·avx512C16(SB), %[2]s, K1, %[2]s
	VPORD.BCST ·avx512C16(SB), %[3]s, K2, %[3]s
	VPERMI2PS %[7]s, %[4]s, %[2]s
	VPERMI2PS %[7]s, %[4]s, %[3]s
	`, p, lo, hi, t, qh, qs, e)
	}
}

// fp8Dec: a code b, sign-extended to a word and shifted left by 7 (T), holds the e4m3 magnitude
// (exponent, mantissa) in bits 13..7 and the sign in bits 15 and 14; with bit 14 cleared the word
// is the f16 of the e4m3 value / 256, subnormals included (an f16 exponent field of 0..15 for
// e4m3's 0..15, both biased by half their range, 2⁸ apart). Adding 0x80 (Z30) carries into
// bit 14 exactly when the magnitude is 0x7f (a NaN code), so bit 14 of T + 0x80, XORed with
// bit 14 of T (the sign), is the NaN flag; one VPTERNLOGD (T ^ (T+0x80 & 0x4000)) puts it in
// bit 14: the NaN codes become f16 NaNs (0x7f80, 0xff80), the others their f16. Then VCVTPH2PS.
// 7 operations for 32 values, where masking the NaN codes took 10.
func fp8Dec(p, lo, hi, t, e string) string {
	return fmt.Sprintf(`VPMOVSXBW (%[1]s), %[4]s
	VPSLLW $7, %[4]s, %[4]s
	VPADDW Z30, %[4]s, %[5]s
	VPTERNLOGD.BCST $0x78, ·avx512W4000(SB), %[5]s, %[4]s
	VCVTPH2PS %[6]s, %[2]s
	VEXTRACTI64X4 $1, %[4]s, %[6]s
	VCVTPH2PS %[6]s, %[3]s
	`, p, lo, hi, t, e, "Y"+t[1:])
}

var formats = []format{
	{name: "Q41", doc: "q4_1: d, m (f16), 16 nibble bytes; x = c·d + m.", step: 20,
		consts: f16Tab + "VMOVUPS ·avx512Iota(SB), Z31", dec: q41Dec},
	{name: "Q50", doc: "q5_0: d (f16), qh (32 fifth bits), 16 nibble bytes; x = (c − 16)·d.", step: 22,
		consts: f16Tab + "VMOVUPS ·avx512Iota(SB), Z31\n\tVMOVUPS ·avx512Neg16(SB), Z28", dec: q5Dec(false)},
	{name: "Q51", doc: "q5_1: d, m (f16), qh, 16 nibble bytes; x = c·d + m.", step: 24,
		consts: f16Tab + "VMOVUPS ·avx512Iota(SB), Z31\n\tVMOVUPS ·avx512Iota16(SB), Z30", dec: q5Dec(true)},
	{name: "FP8", doc: "fp8: one e4m3 byte per value, the row's f32 scale after them; the sums (scores) or the\n// weights (accumulate) are multiplied by the scale × 256.", step: 32,
		consts:   "VPBROADCASTW ·avx512W0080(SB), Z30",
		scaleOff: "MOVQ d+8(FP), R14",
		sumScale: `VBROADCASTSS (DI)(R14*1), X12
	LEAQ (DI)(R8*1), AX
	VBROADCASTSS (AX)(R14*1), X13
	VINSERTF128 $1, X13, Y12, Y12
	VMULPS ·avx2F256(SB), Y12, Y12
	VMULPS Y12, Y11, Y11`,
		accScale: `VBROADCASTSS (R12)(R14*1), Z10
	VMULPS.BCST ·avx512F256(SB), Z10, Z10`,
		dec: fp8Dec},
}

func header() string {
	var b strings.Builder
	b.WriteString(`// Code generated by gen_avx512.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 MultiQuery kernels of q4_1, q5_0, q5_1 and fp8, on the skeleton of the f16 kernels
// of multi_amd64.s (the same contracts, multiKernels): the scores kernels take rows in pairs
// and decode each 32-value group into two vectors of 16 floats per row; the accumulate kernels
// go over tiles of 64 rows, one pass per 32-value group holding four accumulators' two vectors
// in Z0..Z7. Block scales are widened through f16Table (R14); q5_0 and q5_1 look their 5-bit
// codes up in a 32-entry table with VPERMI2PS. (tq4's and the turbo tiers' AVX-512 kernels
// are gen_turbo.go's.)

`)
	var iota, iota16, neg16 [16]float32
	for i := range iota {
		iota[i], iota16[i], neg16[i] = float32(i), float32(16+i), float32(i-16)
	}
	b.WriteString(table("avx512Iota", iota))
	b.WriteString(table("avx512Iota16", iota16))
	b.WriteString(table("avx512Neg16", neg16))
	for _, c := range []struct {
		name string
		v    uint32
	}{{"avx512Mask15", 15}, {"avx512C16", 16}, {"avx512W0080", 0x00800080},
		{"avx512W4000", 0x40004000}, {"avx512F256", math.Float32bits(256)}} {
		fmt.Fprintf(&b, "DATA ·%s+0(SB)/4, $0x%08x\nGLOBL ·%s(SB), RODATA|NOPTR, $4\n\n", c.name, c.v, c.name)
	}
	b.WriteString("// PFDISTZ is how far ahead of a row the scores kernels prefetch, in bytes (multi_amd64.s's PFDIST).\n#define PFDISTZ 6144\n")
	b.WriteString("\n// PFDISTZ2 is how far ahead of a row fp8's loop over four rows prefetches into L2\n// (fp8ScoresBF16Quad): 128 rows of 128 values, 16.5 KiB. (Defined here, not inside the\n// kernel, so that gen_runs finds the kernel's text whole.)\n#define PFDISTZ2 16896\n")
	return b.String()
}

// reduceText sums each of the eight partial-sum vectors of a row pair (Z0..Z3 row a, Z16..Z19
// row b, four queries) to one float, into Y11 (lanes 0..3 row a, 4..7 row b; Z29 reduceOrder).
const reduceText = `	// Sum each vector's 16 lanes: 128-bit lanes first, pairing queries, then within lanes.
	VSHUFF32X4 $0x44, Z1, Z0, Z4
	VSHUFF32X4 $0xEE, Z1, Z0, Z5
	VADDPS Z5, Z4, Z4
	VSHUFF32X4 $0x44, Z3, Z2, Z5
	VSHUFF32X4 $0xEE, Z3, Z2, Z6
	VADDPS Z6, Z5, Z5
	VSHUFF32X4 $0x44, Z17, Z16, Z7
	VSHUFF32X4 $0xEE, Z17, Z16, Z8
	VADDPS Z8, Z7, Z7
	VSHUFF32X4 $0x44, Z19, Z18, Z8
	VSHUFF32X4 $0xEE, Z19, Z18, Z9
	VADDPS Z9, Z8, Z8
	VSHUFF32X4 $0x88, Z5, Z4, Z6
	VSHUFF32X4 $0xDD, Z5, Z4, Z9
	VADDPS Z9, Z6, Z6
	VSHUFF32X4 $0x88, Z8, Z7, Z9
	VSHUFF32X4 $0xDD, Z8, Z7, Z10
	VADDPS Z10, Z9, Z9
	VSHUFPS $0x88, Z9, Z6, Z10
	VSHUFPS $0xDD, Z9, Z6, Z11
	VADDPS Z11, Z10, Z10
	VSHUFPS $0x88, Z10, Z10, Z11
	VSHUFPS $0xDD, Z10, Z10, Z12
	VADDPS Z12, Z11, Z11
	VPERMPS Z11, Z29, Z11      // [a0 a1 a2 a3 b0 b1 b2 b3 …]`

const scoresTmpl = `
// func multiScores@AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// %DOC%
TEXT ·multiScores@AVX512(SB), NOSPLIT, $0-64
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
	%CONSTS%
	%SCALEOFF%
	VMOVUPS ·reduceOrder(SB), Z29
	TESTQ R10, R10
	JZ   s@_done
	TESTQ R11, R11
	JZ   s@_done

s@_pair:
	CMPQ R10, $1
	JNE  s@_two
	XORQ R8, R8                // odd last row: b reads a again
s@_two:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z16, Z16, Z16
	VXORPS Z17, Z17, Z17
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19
	MOVQ DI, BX
	LEAQ (DI)(R8*1), R15
	%ROWTAB%
	MOVQ SI, CX
	MOVQ R11, R12

s@_blk:
	PREFETCHT0 PFDISTZ(BX)
	PREFETCHT0 PFDISTZ(R15)
	%DECA%
	%DECB%
	VMOVUPS (CX), Z10
	VMOVUPS 64(CX), Z11
	VMOVUPS (CX)(DX*1), Z12
	VMOVUPS 64(CX)(DX*1), Z13
	VMOVUPS (CX)(DX*2), Z14
	VMOVUPS 64(CX)(DX*2), Z15
	VMOVUPS (CX)(R13*1), Z20
	VMOVUPS 64(CX)(R13*1), Z21
	VFMADD231PS Z10, Z4, Z0
	VFMADD231PS Z11, Z5, Z0
	VFMADD231PS Z10, Z7, Z16
	VFMADD231PS Z11, Z8, Z16
	VFMADD231PS Z12, Z4, Z1
	VFMADD231PS Z13, Z5, Z1
	VFMADD231PS Z12, Z7, Z17
	VFMADD231PS Z13, Z8, Z17
	VFMADD231PS Z14, Z4, Z2
	VFMADD231PS Z15, Z5, Z2
	VFMADD231PS Z14, Z7, Z18
	VFMADD231PS Z15, Z8, Z18
	VFMADD231PS Z20, Z4, Z3
	VFMADD231PS Z21, Z5, Z3
	VFMADD231PS Z20, Z7, Z19
	VFMADD231PS Z21, Z8, Z19
	ADDQ $%STEP%, BX
	ADDQ $%STEP%, R15
	ADDQ $128, CX
	DECQ R12
	JNZ  s@_blk

` + reduceText + `
	%SUMSCALE%
	VMOVUPS X11, (R9)
	CMPQ R10, $1
	JEQ  s@_done
	VEXTRACTF32X4 $1, Z11, X12
	MOVQ ostride+56(FP), AX
	VMOVUPS X12, (R9)(AX*1)

	LEAQ (DI)(R8*2), DI
	LEAQ (R9)(AX*2), R9
	SUBQ $2, R10
	JNZ  s@_pair

s@_done:
	VZEROUPPER
	RET
`

const accTmpl = `
// func multiAcc@AVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// %DOC%
TEXT ·multiAcc@AVX512(SB), NOSPLIT, $16-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	%CONSTS%
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
	MOVQ R12, pf-16(SP)        // bytes to the next tile, which the row loop prefetches
	MOVQ nv+16(FP), R11
	SHRQ $5, R11
	XORQ BX, BX                // byte offset of the group in a row
	MOVQ SI, CX                // accumulators of the group

a@_grp:
	%GRPOFF%
	VMOVUPS (CX), Z0
	VMOVUPS 64(CX), Z1
	VMOVUPS (CX)(DX*1), Z2
	VMOVUPS 64(CX)(DX*1), Z3
	VMOVUPS (CX)(DX*2), Z4
	VMOVUPS 64(CX)(DX*2), Z5
	VMOVUPS (CX)(R13*1), Z6
	VMOVUPS 64(CX)(R13*1), Z7
	LEAQ (DI)(BX*1), R12
	MOVQ R9, R8
	MOVQ tn-8(SP), R15

a@_row:
	MOVQ pf-16(SP), AX
	PREFETCHT0 (R12)(AX*1)
	%ACCTAB%
	%ACCDEC%
	%ACCSCALE%
	%ACCW0%
	VFMADD231PS Z11, Z8, Z0
	VFMADD231PS Z11, Z9, Z1
	%ACCW1%
	VFMADD231PS Z12, Z8, Z2
	VFMADD231PS Z12, Z9, Z3
	%ACCW2%
	VFMADD231PS Z13, Z8, Z4
	VFMADD231PS Z13, Z9, Z5
	%ACCW3%
	VFMADD231PS Z14, Z8, Z6
	VFMADD231PS Z14, Z9, Z7
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	DECQ R15
	JNZ  a@_row

	VMOVUPS Z0, (CX)
	VMOVUPS Z1, 64(CX)
	VMOVUPS Z2, (CX)(DX*1)
	VMOVUPS Z3, 64(CX)(DX*1)
	VMOVUPS Z4, (CX)(DX*2)
	VMOVUPS Z5, 64(CX)(DX*2)
	VMOVUPS Z6, (CX)(R13*1)
	VMOVUPS Z7, 64(CX)(R13*1)
	ADDQ $%STEP%, BX
	ADDQ $128, CX
	DECQ R11
	JNZ  a@_grp

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

func main() {
	var out bytes.Buffer
	out.WriteString(header())
	out.WriteString(fp8BF16())
	out.WriteString(fp8AccBF16())
	out.WriteString(fp8ScoresBF16H())
	out.WriteString(fp8ScoresF32())
	out.WriteString(fp8PackF32Text())
	out.WriteString(fp8ScoresAMXText)
	out.WriteString(fp8ScoresAMX2Text)
	out.WriteString(fp8AccAMX())
	out.WriteString(fp8AccAMXAText())
	for _, f := range formats {
		rowTab, accTab, grpOff := "", "", ""
		if f.rowTab != nil {
			rowTab = f.rowTab("DI", "Z6") + f.rowTab("R15", "Z9")
			accTab = f.rowTab("R12", "Z10")
		}
		if f.scaleOff != "" {
			grpOff = f.scaleOff + "\n\tSUBQ BX, R14              // from the group to the row's scale"
		}
		accW := make([]string, 8)
		for h := 0; h < 4; h++ {
			w := "(R8)"
			if h > 0 {
				w = fmt.Sprintf("%d(R8)", 4*h)
			}
			accW[2*h] = fmt.Sprintf("%%ACCW%d%%", h)
			if f.accScale != "" { // the row's factor rides on the weight: w·(scale·256), rounded once
				accW[2*h+1] = fmt.Sprintf("VMULPS.BCST %s, Z10, Z%d", w, 11+h)
			} else {
				accW[2*h+1] = fmt.Sprintf("VBROADCASTSS %s, Z%d", w, 11+h)
			}
		}
		r := strings.NewReplacer(append(accW, "@", f.name, "%DOC%", f.doc, "%CONSTS%", f.consts, "%STEP%", fmt.Sprint(f.step),
			"%SCALEOFF%", f.scaleOff, "%ROWTAB%", strings.TrimSpace(rowTab), "%SUMSCALE%", f.sumScale,
			"%DECA%", strings.TrimSpace(f.dec("BX", "Z4", "Z5", "Z6", "Z22")),
			"%DECB%", strings.TrimSpace(f.dec("R15", "Z7", "Z8", "Z9", "Z22")),
			"%GRPOFF%", grpOff, "%ACCTAB%", strings.TrimSpace(accTab), "%ACCSCALE%", f.accScale,
			"%ACCDEC%", strings.TrimSpace(f.dec("R12", "Z8", "Z9", "Z10", "Z15")))...)
		out.WriteString(r.Replace(scoresTmpl))
		out.WriteString(r.Replace(accTmpl))
	}
	s := out.String()
	for strings.Contains(s, "\n\t\n") {
		s = strings.ReplaceAll(s, "\n\t\n", "\n")
	}
	if err := os.WriteFile("multi_avx512x_amd64.s", []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// fp8BF16 writes fp8's bf16 scores kernel and its query packer (multi_fp8bf16_amd64.go): the
// tables that map an e4m3 magnitude (7 bits) to the high and low bytes of its bf16, the
// encodings of VDPBF16PS and VCVTNEPS2BF16 (the Go assembler has neither), and the two
// functions. A 64-code chunk of a row decodes in five operations: VPERMI2B looks up the high
// bytes (the sign ORed in after) and the low bytes, VPUNPCKLBW and VPUNPCKHBW interleave them
// into the words of codes 0–7, 16–23, 32–39, 48–55 and of the others, the order in which the
// packer lays the queries out; VDPBF16PS then takes 32 products per operation.
//
// An arithmetic widening instead of the lookups did not pay on AMD Zen 4. With a code in a
// word's high byte (VPSLLW 8 for the low byte's code), VPSRAW 4 and VPTERNLOGD (the sign and
// magnitude bits kept, an exponent bias ORed in) give the bf16 of every normal code exactly,
// but VDPBF16PS takes the bf16 subnormals that codes with exponent 0 become as zero, so
// subnormal codes need the lookup, and a chunk needs a check before the fast path may be
// taken (VPADDB of the code to itself and VPMINUB into a running minimum, two operations;
// VPTESTNMB into a mask issues on the multiply pipes, as VDPBF16PS does). In
// multiScoresFP8BF16H's loop over four rows (TestFP8ScoresBF16HSpeed, 128 values a row, in
// cache, thread CPU time, alternated): the lookups 6.87–6.95 ns a row, the arithmetic
// widening 6.56 without the check (the most it could save) and 6.94 with it; with no
// widening at all 5.16. There every vector operation besides VDPBF16PS cost ~0.14 ns a row
// for each in a 64-code chunk, shuffle or not. In a loop of 16 VDPBF16PS, 8 of VPERMI2B,
// VPERMB, VPSRAW, VPANDD, VPUNPCKLBW or VINSERTI64X4 took no time beside them, 8 of
// VPTESTNMB, VPSHLDW or VGF2P8AFFINEQB 50% more (6.55 ns against 4.38; thread CPU time).
// A loop of 16 VDPBF16PS on independent accumulators takes 16 cycles on Zen 4 (the clock
// ~3.65 GHz); beside them, per iteration, 12, 16 or 24 operations that cross 128-bit lanes
// (VPERMI2B, VPERMB, VSHUFF32X4, VINSERTI64X4; VPSRAW alike) took 18.5, 21.2 and 26.5
// cycles, in-lane VPUNPCKLBW or VSHUFPS 17.2, 17.7 and 19.8, VPTERNLOGD 18.6, 20.0 and
// 23.3, VPBLENDMD 16.3, 18.9 and 19.9, register copies (VMOVDQA64) none; alone, 16 of the
// lane-crossing ones or VPSRAW take 16 cycles, VPUNPCKLBW or VSHUFPS 10.6, VPTERNLOGD 9.0,
// VPBLENDMD 7.9 (thread CPU time, best of 15 runs of 200000 iterations). So beside the 16
// VDPBF16PS a row of 128 values needs for four queries, about 8 lane-crossing operations
// are free and each further one costs ~0.66 cycle. Arithmetic with the scale folded in (a
// code's bf16 (b&0x80)<<8 | (b&0x7F)<<4, 2⁻¹²⁰ of its value) does not help: on Zen 4
// VDPBF16PS takes bf16 subnormal inputs (the codes with exponent 0) as zero and flushes
// subnormal float32 results (checked: 0x0010 × 2¹²⁰ gave 0, 2⁻¹²⁶ × 2⁻³ gave 0).
func fp8BF16() string {
	var hi, lo [128]byte
	for c := range 128 {
		e, m := c>>3, c&7
		var v float64
		switch {
		case c == 0x7f:
			v = math.NaN()
		case e == 0:
			v = math.Ldexp(float64(m), -9)
		default:
			v = math.Ldexp(1+float64(m)/8, e-7)
		}
		w := uint16(math.Float32bits(float32(v)) >> 16) // exact: 3 mantissa bits
		if c == 0x7f {
			w = 0x7fc0
		}
		hi[c], lo[c] = byte(w>>8), byte(w)
	}
	var b strings.Builder
	b.WriteString(`
// fp8BF16Hi and fp8BF16Lo are the high and low bytes of the bf16 of every e4m3 magnitude
// (codes 0..0x7f; 0x7f, a NaN, is the bf16 NaN 0x7fc0). Every value is a normal bf16 (the
// smallest, 2⁻⁹, included), so VDPBF16PS, which takes subnormal inputs as zero, loses none.
`)
	for _, t := range []struct {
		name string
		v    *[128]byte
	}{{"fp8BF16Hi", &hi}, {"fp8BF16Lo", &lo}} {
		for i := 0; i < 128; i += 8 {
			var x uint64
			for k := 7; k >= 0; k-- {
				x = x<<8 | uint64(t.v[i+k])
			}
			fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $0x%016x\n", t.name, i, x)
		}
		fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $128\n\n", t.name)
	}
	b.WriteString(fp8BF16Text)
	return b.String()
}

var fp8BF16Text = `DATA ·fp8SignMask+0(SB)/4, $0x80808080
GLOBL ·fp8SignMask(SB), RODATA|NOPTR, $4

// DPBF16(a, b, acc) is VDPBF16PS Za, Zb, Zacc (EVEX.512.F3.0F38.W0 52 /r; register numbers):
// acc[i] += a[2i]·b[2i] + a[2i+1]·b[2i+1] in bf16 pairs.
#define DPBF16(a, b, acc) BYTE $0x62; \
	BYTE $(((((acc)>>3)&1)^1)<<7 | ((((a)>>4)&1)^1)<<6 | ((((a)>>3)&1)^1)<<5 | ((((acc)>>4)&1)^1)<<4 | 2); \
	BYTE $((((b)&15)^15)<<3 | 6); BYTE $(0x40 | ((((b)>>4)&1)^1)<<3); BYTE $0x52; \
	BYTE $(0xC0 | ((acc)&7)<<3 | ((a)&7))

// CVTBF16(src, dst) is VCVTNEPS2BF16 Zsrc, Ydst (EVEX.512.F3.0F38.W0 72 /r): sixteen floats
// rounded to nearest even bf16, subnormal inputs and outputs taken as zero.
#define CVTBF16(src, dst) BYTE $0x62; \
	BYTE $(((((dst)>>3)&1)^1)<<7 | ((((src)>>4)&1)^1)<<6 | ((((src)>>3)&1)^1)<<5 | ((((dst)>>4)&1)^1)<<4 | 2); \
	BYTE $0x7E; BYTE $0x48; BYTE $0x72; BYTE $(0xC0 | ((dst)&7)<<3 | ((src)&7))

// FP8BF16DEC turns the 64 codes in Z(a) and (a copy) Z(b) into the bf16 words of codes
// 0–7, 16–23, 32–39, 48–55 in Z(l) and of the others in Z(a).
#define FP8BF16DEC(a, b, l) \
	VPERMI2B Z25, Z24, a; \
	VPTERNLOGD $0xF8, Z28, b, a; \
	VPERMI2B Z27, Z26, b; \
	VPUNPCKLBW a, b, l; \
	VPUNPCKHBW a, b, a

// func fp8QueryBF16(dst *uint16, q *float32, d, nv int)
// For the four queries q[h·d:], writes their first nv values (nv a positive multiple of 32) as
// bf16 (VCVTNEPS2BF16) in the scores kernel's layout: per 64-value chunk c and query h, at
// dst[(4c + h)·64:], the words of values 0–7, 16–23, 32–39, 48–55 of the chunk, then of the
// others; a last chunk of 32 values has zeros for the 32 it lacks.
TEXT ·fp8QueryBF16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ d+16(FP), DX
	SHLQ $2, DX                // bytes between queries
	MOVQ nv+24(FP), R11
fqb_chunk:
	MOVQ SI, AX
	MOVQ $4, CX
fqb_query:
	VMOVUPS (AX), Z0
	VMOVUPS 64(AX), Z1
	CVTBF16(0, 0)
	CVTBF16(1, 1)
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	CMPQ R11, $64
	JLT  fqb_half
	VMOVUPS 128(AX), Z2
	VMOVUPS 192(AX), Z3
	CVTBF16(2, 2)
	CVTBF16(3, 3)
fqb_half:
	VINSERTI64X4 $1, Y1, Z0, Z0
	VINSERTI64X4 $1, Y3, Z2, Z2
	VSHUFI64X2 $0x88, Z2, Z0, Z4
	VSHUFI64X2 $0xDD, Z2, Z0, Z5
	VMOVDQU64 Z4, (DI)
	VMOVDQU64 Z5, 64(DI)
	ADDQ $128, DI
	ADDQ DX, AX
	DECQ CX
	JNZ  fqb_query
	ADDQ $256, SI
	SUBQ $64, R11
	JGT  fqb_chunk
	VZEROUPPER
	RET

// func bf16RoundAVX512(dst, src *float32, n int)
// dst[i] = src[i] rounded to bf16 as fp8QueryBF16 rounds it, widened back, for i < n (a
// positive multiple of 16).
TEXT ·bf16RoundAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
brd_loop:
	VMOVUPS (SI), Z0
	CVTBF16(0, 0)
	VPMOVZXWD Y0, Z0
	VPSLLD $16, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JGT  brd_loop
	VZEROUPPER
	RET

// func fp8Offsets(off, q *float32, d, nv int, mu *float32)
// off[h] = Σ_{i<nv} q̃_h[i]·mu[i] for the four queries q[h·d:], q̃ as bf16RoundAVX512 rounds
// them (nv a positive multiple of 16), summed in 16 lanes, then pairwise.
TEXT ·fp8Offsets(SB), NOSPLIT, $0-40
	MOVQ off+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ d+16(FP), DX
	SHLQ $2, DX                // bytes between queries
	MOVQ nv+24(FP), R11
	MOVQ mu+32(FP), R8
	MOVQ $4, R10
fo_query:
	VXORPS Z1, Z1, Z1
	XORQ AX, AX
	MOVQ R11, CX
fo_loop:
	VMOVUPS (SI)(AX*1), Z0
	CVTBF16(0, 0)
	VPMOVZXWD Y0, Z0
	VPSLLD $16, Z0, Z0
	VFMADD231PS (R8)(AX*1), Z0, Z1
	ADDQ $64, AX
	SUBQ $16, CX
	JGT  fo_loop
	VEXTRACTF64X4 $1, Z1, Y2
	VADDPS Y2, Y1, Y1
	VEXTRACTF128 $1, Y1, X2
	VADDPS X2, X1, X1
	VMOVHLPS X1, X1, X2
	VADDPS X2, X1, X1
	VMOVSHDUP X1, X2
	VADDSS X2, X1, X1
	VMOVSS X1, (DI)
	ADDQ $4, DI
	ADDQ DX, SI
	DECQ R10
	JNZ  fo_query
	VZEROUPPER
	RET

// func multiScoresFP8BF16(q *uint16, nv int, rows *byte, rb, m int, out *float32, ostride, so int, off *float32)
// fp8 scores of four queries packed by fp8QueryBF16 over the first nv values of the m rows at
// rows (rb bytes apart, each with its f32 scale at byte so): out[j·ostride/4 + h] =
// scale_j·Σ_{i<nv} q̃_h[i]·e4m3(code_{j,i}) + off[h]. Rows go in pairs as in the float kernels, each
// 64-code chunk of a row decoded once (FP8BF16DEC) for the four queries.
TEXT ·multiScoresFP8BF16(SB), NOSPLIT, $0-72
	MOVQ q+0(FP), SI
	MOVQ nv+8(FP), R11
	MOVQ rows+16(FP), DI
	MOVQ rb+24(FP), R8
	MOVQ m+32(FP), R10
	MOVQ out+40(FP), R9
	MOVQ so+56(FP), R14
	MOVQ off+64(FP), AX
	VBROADCASTF32X4 (AX), Y30
` + fp8BF16Tabs + `	VMOVUPS ·reduceOrder(SB), Z29
	TESTQ R10, R10
	JZ   fbs_done

fbs_pair:
	CMPQ R10, $1
	JNE  fbs_two
	XORQ R8, R8                // odd last row: b reads a again
fbs_two:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z16, Z16, Z16
	VXORPS Z17, Z17, Z17
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19
	MOVQ DI, BX
	LEAQ (DI)(R8*1), R15
	MOVQ SI, CX
	MOVQ R11, R12              // values left

fbs_chunk:
	PREFETCHT0 PFDISTZ(BX)
	PREFETCHT0 PFDISTZ(R15)
	CMPQ R12, $64
	JLT  fbs_half
	VMOVDQU64 (BX), Z4
	VMOVDQU64 (BX), Z5
	VMOVDQU64 (R15), Z8
	VMOVDQU64 (R15), Z9
	JMP  fbs_dec
fbs_half:                      // 32 codes; the zeros above them decode to 0
	VMOVDQU (BX), Y4
	VMOVDQU (BX), Y5
	VMOVDQU (R15), Y8
	VMOVDQU (R15), Y9
	MOVQ $64, R12
fbs_dec:
	FP8BF16DEC(Z4, Z5, Z6)
	FP8BF16DEC(Z8, Z9, Z10)
	VMOVDQU64 (CX), Z12
	VMOVDQU64 64(CX), Z13
	VMOVDQU64 128(CX), Z14
	VMOVDQU64 192(CX), Z15
	VMOVDQU64 256(CX), Z20
	VMOVDQU64 320(CX), Z21
	VMOVDQU64 384(CX), Z22
	VMOVDQU64 448(CX), Z23
	DPBF16(12, 6, 0)
	DPBF16(12, 10, 16)
	DPBF16(14, 6, 1)
	DPBF16(14, 10, 17)
	DPBF16(20, 6, 2)
	DPBF16(20, 10, 18)
	DPBF16(22, 6, 3)
	DPBF16(22, 10, 19)
	DPBF16(13, 4, 0)
	DPBF16(13, 8, 16)
	DPBF16(15, 4, 1)
	DPBF16(15, 8, 17)
	DPBF16(21, 4, 2)
	DPBF16(21, 8, 18)
	DPBF16(23, 4, 3)
	DPBF16(23, 8, 19)
	ADDQ $64, BX
	ADDQ $64, R15
	ADDQ $512, CX
	SUBQ $64, R12
	JNZ  fbs_chunk

` + reduceText + `
	VBROADCASTSS (DI)(R14*1), X12
	LEAQ (DI)(R8*1), AX
	VBROADCASTSS (AX)(R14*1), X13
	VINSERTF128 $1, X13, Y12, Y12
	VFMADD213PS Y30, Y12, Y11
	VMOVUPS X11, (R9)
	CMPQ R10, $1
	JEQ  fbs_done
	VEXTRACTF32X4 $1, Z11, X12
	MOVQ ostride+48(FP), AX
	VMOVUPS X12, (R9)(AX*1)

	LEAQ (DI)(R8*2), DI
	LEAQ (R9)(AX*2), R9
	SUBQ $2, R10
	JNZ  fbs_pair

fbs_done:
	VZEROUPPER
	RET
// func multiAccFP8VBMI(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// fp8 accumulate (multiKernels' contract) with the codes decoded as the bf16 scores kernel
// decodes them (FP8BF16DEC) and widened to floats by VPUNPCKLWD and VPUNPCKHWD under zero
// words: a 64-code chunk becomes four vectors whose 128-bit lane L holds values 16L+4k..+3
// (k the vector), so each 64-value chunk of the four accumulators is transposed by 128-bit
// lanes (8 VSHUFF32X4 per accumulator) as a tile's pass loads it and back as it stores it.
// Per tile of up to 64 rows the weights are first multiplied by their row's scale (one
// rounding, as the f16 kernel does) into the frame. A row's four weights are broadcast from
// there into registers (Z16, Z17, Z18 and Z23, free once the codes are widened), each read by
// its accumulator's four multiply-adds: on AMD Zen 5 ~16% less time in cache and ~9% less
// streamed past the caches than a memory broadcast in every multiply-add (thread CPU time,
// interleaved, rows of 128 values, four accumulators; the same products, so the same sums).
// On Intel cores with AVX-512 (not measured; from published instruction tables: Ice Lake,
// Sapphire Rapids) a broadcast load is a load µop alone and a memory-broadcast FMA a load
// micro-fused with the FMA: the same 16 FMA µops on ports 0 and 5 a row chunk, with 4 loads
// instead of 16, so nothing there is expected to be slower. On AMD Zen 4, whose 512-bit
// broadcasts compete with the decode's shuffles for the non-FMA vector pipes, it is the other
// way round: where accBcastFMA is set (Zen 4) the row loop gives each FMA its weight as an
// embedded broadcast (fvaRow), ~12.1 → ~10.9 ns a row of 128 values in cache there (thread
// CPU time, the two alternated, best of 7; the same sums bit for bit, TestAccBcastFMA).
// Intel CPUs run this kernel (fp8F32, multi_fp8f32_amd64.go), with weights from registers
// (fva_row): there each row's pass prefetches two lines of the row a tile on (at the chunk
// and 64 bytes past it, so that the last pass reaches the row scale) and the same lines two
// tiles on into L2 (PREFETCHT1), where one line a tile on was all: attention's decode values
// (native/attn TestDecodeBreakdown, fp8, test binaries alternated three times, load ~16, min)
// 14.83–15.01 ns a row against 16.81–17.50; the L2 ones four tiles on 15.27–15.53 against
// 14.83–15.31, all four PREFETCHT1 (none into L1) 15.18–15.91 against 14.92–15.72. Those two
// lines a row, at the chunk and 64 bytes on, gave each tile's first pass nearly all of the
// next tile's lines to fetch and its second pass almost none, so the first pass waited on
// memory while the second computed. Now each pass prefetches the line at its chunk and only
// the last pass the line 64 bytes on as well (R14, 0 or 64 a pass; the other prefetch
// repeats the first), a tile on and two tiles on alike: about one new line a row in every
// pass. Decode values (same test, f16 and fp8, old and new binaries alternated four times,
// load 6.1–6.3, min) 13.64–14.27 ns a row against 14.97–15.38, whole 27.84–27.96 against
// 28.93–29.64; TestFP8F32Speed streamed 13.82–14.08 against 15.14–15.31, in cache the same.
// The T1 pair in descending order (64 bytes on first) lost it all (values 15.99–16.16
// against base 14.95–15.55), and so did the two offsets kept in the frame and added from
// memory (16.1 against 14.5). Not better either (same test, three alternations, load ~5.3):
// the L2 pair three tiles on (values 13.16–15.83 against 13.46–14.72), no L2 pair
// (14.79–16.29). fva_rowz (accBcastFMA: Zen 4 under KVLAB_ACC16) keeps its one line.
TEXT ·multiAccFP8VBMI(SB), 0, $1040-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), R14          // byte offset of the row scale
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
` + fp8BF16Tabs + `	VPXORD Z29, Z29, Z29
	TESTQ R10, R10
	JZ   fva_done
	MOVQ nv+16(FP), AX
	TESTQ AX, AX
	JZ   fva_done

fva_tile:
	MOVQ R10, AX               // rows in this tile
	CMPQ AX, $64
	JLE  fva_tn
	MOVQ $64, AX
fva_tn:
	MOVQ AX, tn-8(SP)
	MOVQ rb+32(FP), R12
	SHLQ $6, R12
	MOVQ R12, pf-16(SP)        // bytes to the next tile, which the row loop prefetches
	// The tile's weights times their row's scale, four floats a row, into ws.
	LEAQ ws-1040(SP), BX
	MOVQ DI, R12
	MOVQ R9, R8
	MOVQ AX, R15
fva_ws:
	VBROADCASTSS (R12)(R14*1), X1
	VMULPS (R8), X1, X0
	VMOVUPS X0, (BX)
	ADDQ $16, BX
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	DECQ R15
	JNZ  fva_ws

	MOVQ nv+16(FP), R11        // values left
	XORQ BX, BX                // byte offset of the chunk in a row
	MOVQ SI, CX                // accumulators of the chunk

fva_chunk:
	CMPQ R11, $64
	JLT  fva_lhalf
	` + fvaLoad("", 0, 1, 2, 3) + `
	` + fvaLoad("DX*1", 4, 5, 6, 7) + `
	` + fvaLoad("DX*2", 8, 9, 10, 11) + `
	` + fvaLoad("R13*1", 12, 13, 14, 15) + `
	JMP  fva_rows
fva_lhalf:
	` + fvaLoadH("", 0, 1, 2, 3) + `
	` + fvaLoadH("DX*1", 4, 5, 6, 7) + `
	` + fvaLoadH("DX*2", 8, 9, 10, 11) + `
	` + fvaLoadH("R13*1", 12, 13, 14, 15) + `
fva_rows:
	LEAQ (DI)(BX*1), R12
	LEAQ ws-1040(SP), R8
	MOVQ tn-8(SP), R15

	CMPB ·accBcastFMA(SB), $0
	JNE  fva_rowz
	XORQ R14, R14              // the row loop's second line: the last pass's is 64 bytes on
	CMPQ R11, $64
	JG   fva_row
	MOVQ $64, R14
` + fvaRow("fva_row", false) + `	MOVQ d+8(FP), R14
	JMP  fva_store
` + fvaRow("fva_rowz", true) + `
fva_store:

	CMPQ R11, $64
	JLT  fva_shalf
	` + fvaStore("", 0, 1, 2, 3) + `
	` + fvaStore("DX*1", 4, 5, 6, 7) + `
	` + fvaStore("DX*2", 8, 9, 10, 11) + `
	` + fvaStore("R13*1", 12, 13, 14, 15) + `
	ADDQ $64, BX
	ADDQ $256, CX
	SUBQ $64, R11
	JNZ  fva_chunk
	JMP  fva_next
fva_shalf:
	` + fvaStoreH("", 0, 1, 2, 3) + `
	` + fvaStoreH("DX*1", 4, 5, 6, 7) + `
	` + fvaStoreH("DX*2", 8, 9, 10, 11) + `
	` + fvaStoreH("R13*1", 12, 13, 14, 15) + `

fva_next:
	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ wstride+56(FP), R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  fva_tile

fva_done:
	VZEROUPPER
	RET
`

// fvaRow is multiAccFP8VBMI's row loop (label l; without bcst it prefetches the line at the
// chunk a tile on and two tiles on, and the line R14 bytes past it, see the kernel's comment): a row's 64 codes (32 in a half chunk)
// decoded and widened into Z19..Z22, then its four scaled weights (ws, at R8) multiplied into
// the sixteen accumulator vectors, broadcast into Z16, Z17, Z18 and Z23 (bcst false) or as each
// FMA's embedded broadcast (bcst true, where accBcastFMA is set: AMD Zen 4; the same products
// and sums).
func fvaRow(l string, bcst bool) string {
	var b strings.Builder
	pf := ""
	if !bcst {
		pf = `ADDQ R14, AX
	PREFETCHT0 (R12)(AX*1)
	MOVQ pf-16(SP), AX
	ADDQ AX, AX
	PREFETCHT1 (R12)(AX*1)
	ADDQ R14, AX
	PREFETCHT1 (R12)(AX*1)
	`
	}
	fmt.Fprintf(&b, `%[1]s:
	MOVQ pf-16(SP), AX
	PREFETCHT0 (R12)(AX*1)
	%[2]sCMPQ R11, $64
	JLT  %[1]s_half
	VMOVDQU64 (R12), Z16
	VMOVDQU64 (R12), Z17
	JMP  %[1]s_dec
%[1]s_half: // 32 codes; the zeros above them decode to 0
	VMOVDQU32 (R12), Y16
	VMOVDQU32 (R12), Y17
%[1]s_dec:
	FP8BF16DEC(Z16, Z17, Z18)
	VPUNPCKLWD Z18, Z29, Z19
	VPUNPCKHWD Z18, Z29, Z20
	VPUNPCKLWD Z16, Z29, Z21
	VPUNPCKHWD Z16, Z29, Z22
`, l, pf)
	wr := [4]string{"Z16", "Z17", "Z18", "Z23"}
	for h := 0; h < 4; h++ {
		off := ""
		if h > 0 {
			off = fmt.Sprint(4 * h)
		}
		if !bcst {
			fmt.Fprintf(&b, "\tVBROADCASTSS %s(R8), %s\n", off, wr[h])
		}
	}
	for h := 0; h < 4; h++ {
		off := ""
		if h > 0 {
			off = fmt.Sprint(4 * h)
		}
		for k := 0; k < 4; k++ {
			if bcst {
				fmt.Fprintf(&b, "\tVFMADD231PS.BCST %s(R8), Z%d, Z%d\n", off, 19+k, 4*h+k)
			} else {
				fmt.Fprintf(&b, "\tVFMADD231PS %s, Z%d, Z%d\n", wr[h], 19+k, 4*h+k)
			}
		}
	}
	fmt.Fprintf(&b, `	ADDQ rb+32(FP), R12
	ADDQ $16, R8
	DECQ R15
	JNZ  %s
`, l)
	return b.String()
}

// fvaT4 transposes Z16..Z19 (four vectors of four 128-bit lanes) into t[0]..t[3] by lanes:
// t[k] lane L = Z(16+L) lane k; Z20..Z23 are scratch.
func fvaT4(t [4]string) string {
	return fmt.Sprintf(`VSHUFF32X4 $0x44, Z17, Z16, Z20
	VSHUFF32X4 $0xEE, Z17, Z16, Z21
	VSHUFF32X4 $0x44, Z19, Z18, Z22
	VSHUFF32X4 $0xEE, Z19, Z18, Z23
	VSHUFF32X4 $0x88, Z22, Z20, %s
	VSHUFF32X4 $0xDD, Z22, Z20, %s
	VSHUFF32X4 $0x88, Z23, Z21, %s
	VSHUFF32X4 $0xDD, Z23, Z21, %s
`, t[0], t[1], t[2], t[3])
}

// fvaAddr is the address of the k-th 64 bytes of the accumulator chunk at CX plus index
// register idx ("" for none).
func fvaAddr(idx string, k int) string {
	a := "(CX)"
	if k > 0 {
		a = fmt.Sprintf("%d(CX)", 64*k)
	}
	if idx != "" {
		a += "(" + idx + ")"
	}
	return a
}

func fvaRegs(r ...int) [4]string {
	return [4]string{fmt.Sprintf("Z%d", r[0]), fmt.Sprintf("Z%d", r[1]), fmt.Sprintf("Z%d", r[2]), fmt.Sprintf("Z%d", r[3])}
}

// fvaLoad loads the 64 floats of the chunk of the accumulator at CX (+idx) transposed into
// Z(a)..Z(d); half, the 32 of a half chunk, zeros for the other 32.
func fvaLoadN(idx string, half bool, r [4]string) string {
	var b strings.Builder
	for k := 0; k < 4; k++ {
		if half && k >= 2 {
			fmt.Fprintf(&b, "VPXORD Z%d, Z%d, Z%d\n\t", 16+k, 16+k, 16+k)
			continue
		}
		fmt.Fprintf(&b, "VMOVUPS %s, Z%d\n\t", fvaAddr(idx, k), 16+k)
	}
	return b.String() + fvaT4(r)
}

func fvaLoad(idx string, a, b, c, d int) string  { return fvaLoadN(idx, false, fvaRegs(a, b, c, d)) }
func fvaLoadH(idx string, a, b, c, d int) string { return fvaLoadN(idx, true, fvaRegs(a, b, c, d)) }

// fvaStoreN transposes Z(a)..Z(d) back and stores the chunk (half: its first 32 floats).
func fvaStoreN(idx string, half bool, r [4]string) string {
	var b strings.Builder
	for k := 0; k < 4; k++ {
		fmt.Fprintf(&b, "VMOVAPS %s, Z%d\n\t", r[k], 16+k)
	}
	b.WriteString(fvaT4(fvaRegs(16, 17, 18, 19)))
	for k := 0; k < 4; k++ {
		if half && k >= 2 {
			break
		}
		fmt.Fprintf(&b, "\tVMOVUPS Z%d, %s\n", 16+k, fvaAddr(idx, k))
	}
	return b.String()
}

func fvaStore(idx string, a, b, c, d int) string  { return fvaStoreN(idx, false, fvaRegs(a, b, c, d)) }
func fvaStoreH(idx string, a, b, c, d int) string { return fvaStoreN(idx, true, fvaRegs(a, b, c, d)) }

// fp8AccBF16 writes multiAccFP8BF16 (multi_fp8bf16_amd64.go): fp8 accumulate through
// VDPBF16PS. Rows go in pairs: the codes of a pair's two rows are interleaved byte by byte
// (two VPERMI2B with the fp8PairIdx indices), looked up into the high and low bytes of their
// bf16 (fp8BF16Hi/Lo, the scores kernel's tables) and the two interleaved again (VPUNPCKLBW,
// VPUNPCKHBW), so that each dword lane holds one value position of the two rows as two bf16;
// a pair's weight for a query, w·scale of each row rounded to bf16 in the tile's prepass, is
// the dword {1to16} embedded-broadcast operand. A pair's 64-value chunk thus costs 16
// VDPBF16PS for four queries (32 FMAs in multiAccFP8VBMI) and 12 decode operations (18). The
// indices order the codes so that vector k of a chunk holds values 16k..16k+15 in order, and
// the accumulators load and store as they lie in memory (fbaLoad, fbaStore). With
// VPUNPCKLBW/VPUNPCKHBW for the first interleave instead, vector k held values 16L+4k..+3 in
// its 128-bit lane L, and each pass over a tile transposed the accumulators by 128-bit lanes
// as it loaded and stored them (fvaLoad, fvaStore: 64 VSHUFF32X4 a 64-value chunk and tile).
// The two give the same sums bit for bit (the same products, in the same order); on AMD Zen 4
// in attention's decode (TestDecodeBreakdown, fp8, 131072 cells, one thread, rows on 2 MiB
// pages, thread CPU time, 10 runs each, test binaries alternated, load 7–10 on 2 vCPUs;
// min/first quartile/median of the runs' minima, ns a row) values 6.49/6.56/6.58 against
// 6.70/6.70/6.74, the whole decode 14.46/14.51/14.54 against 14.65/14.70/14.75.
// Each pass over a tile prefetches two lines of every row of the next tile (at the chunk and
// 64 bytes on, so the pass over the last chunk reaches the row scale): on AMD Zen 4 ~0.4–1.1
// ns a row of 128 values less streamed past the caches than one line (8.5–9.8 ns against
// 8.9–11.0, three runs on a busy machine, thread CPU time, alternated), and prefetching two
// tiles ahead instead was slower (9.9–12.4). The same lines two tiles ahead (128 rows) are
// prefetched into L2 as well (PREFETCHT1), as the f16 kernels do on Zen 4. In attention's
// decode there (native/attn's TestDecodeBreakdown, fp8, 131072 cells, one thread, thread CPU
// time, runs alternated, load 4–8 on 2 vCPUs; min/first quartile/median of the runs' minima,
// ns a row): two tiles ahead against one level, 30 runs each, values 6.83/7.19/7.88 instead of
// 8.15/8.49/8.85, the whole decode 15.09/15.92/16.62 instead of 16.43/17.04/18.41; a tile and
// a half against two tiles, 25 runs each, values 7.22/7.58/7.69 against 7.60/7.91/8.05, whole
// 16.01/16.73/16.90 against 16.83/17.24/17.89. PREFETCHT1 one tile ahead alone (instead of
// PREFETCHT0) was ~1.2 ns slower (four runs), three tiles ahead the same as two (15 runs), the
// second level in the first pass over a tile only no better (10 runs). Streamed alone past the
// caches (TestFP8AccBF16Speed: values only, 64 MiB, no scores between; medians of six runs at
// load ~4) a tile and a half measured 7.72–8.60 ns a row against 8.17–8.44 with one level and
// 8.08–8.45 with two tiles; on a busier machine two tiles measured 9.6–14.2 there against
// 8.4–9.2 with one level. Where other processes kept the memory busier (the decode's scores
// 9.2–11 ns a row instead of 7.2–8.3), the second level did not pay in the decode either:
// values 8.45/9.51/10.23 against 8.39/8.61/8.91 with one level (20 runs each, alternated).
// Those runs had the rows on 4 KiB pages. With the rows on 2 MiB pages (internal/hugemem, as
// the decode allocates them) the second level two tiles ahead instead of a tile and a half
// took values 6.63/6.77/6.82 ns a row against 6.93/7.00/7.21 and the whole decode
// 14.72/14.79/14.97 against 14.97/15.07/15.49 (TestDecodeBreakdown, 10 runs each, old and new
// test binaries alternated, load ~10 on 2 vCPUs; three tiles and four tiles ahead measured as
// two in 5–6 runs each, prefetching only the line 64 bytes on in the passes after the first no
// better); on 4 KiB pages (KVLAB_NO_HUGEPAGES=1) the two measured within noise of each other
// (values 7.37/7.99/9.04 against 7.69/8.62/8.98, 10 runs each). On 2 MiB pages these were no
// better than the two levels one and two tiles ahead: a third level, PREFETCHT2 five or eight
// tiles ahead (values 6.99 and 6.93 against 6.69 ns a row, min of 8 decodes each), and each
// call's first tile prefetched (PREFETCHT0) and its second (PREFETCHT1) before the first
// prepass (6.76 against 6.74).
// The pair loop alone (its instructions from fba_pair on, rows in L1) takes 18.3–18.5 cycles
// a pair and 64-value chunk on Zen 4, 5.0 ns a row of 128 values, against 16 for its
// VDPBF16PS; the kernel takes 6.2 with its rows in L2 (TestFP8AccBF16Speed) and 6.5–7.0 in
// the decode. Without the tile's prepass it took 6.01–6.08 against 6.18–6.24 in L2, with the
// weights in registers instead of {1to16} operands 6.11 against 6.19, without its
// prefetches the same (thread CPU time; the rest is the rows' way through the caches).
// fp8BF16Tabs loads the fp8 → bf16 tables (Z24..Z27) and the sign mask (Z28) FP8BF16DEC takes.
const fp8BF16Tabs = `	VMOVDQU64 ·fp8BF16Hi+0(SB), Z24
	VMOVDQU64 ·fp8BF16Hi+64(SB), Z25
	VMOVDQU64 ·fp8BF16Lo+0(SB), Z26
	VMOVDQU64 ·fp8BF16Lo+64(SB), Z27
	VPBROADCASTD ·fp8SignMask(SB), Z28
`

func fp8AccBF16() string {
	var b strings.Builder
	b.WriteString(`
// fp8PairWords takes the words a0..a3 b0..b3 of a row pair's bf16 weights to a0 b0 a1 b1 …
DATA ·fp8PairWords+0(SB)/8, $0x0b0a030209080100
DATA ·fp8PairWords+8(SB)/8, $0x0f0e07060d0c0504
GLOBL ·fp8PairWords(SB), RODATA|NOPTR, $16
` + fp8PairIdx() + `
// CVTBF16Y(src, dst) is VCVTNEPS2BF16 Ysrc, Xdst (EVEX.256.F3.0F38.W0 72 /r).
#define CVTBF16Y(src, dst) BYTE $0x62; \
	BYTE $(((((dst)>>3)&1)^1)<<7 | ((((src)>>4)&1)^1)<<6 | ((((src)>>3)&1)^1)<<5 | ((((dst)>>4)&1)^1)<<4 | 2); \
	BYTE $0x7E; BYTE $0x28; BYTE $0x72; BYTE $(0xC0 | ((dst)&7)<<3 | ((src)&7))

// DPBF16R8(n, a, acc) is VDPBF16PS 4n(R8){1to16}, Za, Zacc (EVEX.512.F3.0F38.W0 52 /r, base
// R8, disp8·4): acc[i] += a[2i]·m[0] + a[2i+1]·m[1], m the bf16 pair at R8+4n.
#define DPBF16R8(n, a, acc) BYTE $0x62; \
	BYTE $(((((acc)>>3)&1)^1)<<7 | 1<<6 | ((((acc)>>4)&1)^1)<<4 | 2); \
	BYTE $((((a)&15)^15)<<3 | 6); BYTE $(0x50 | ((((a)>>4)&1)^1)<<3); BYTE $0x52; \
	BYTE $(0x40 | ((acc)&7)<<3); BYTE $(n)

// func multiAccFP8BF16(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// fp8 accumulate (multiKernels' contract, with the weights rounded to bf16 as
// multi_fp8bf16_amd64.go states) through VDPBF16PS over row pairs (gen_avx512.go's fp8AccBF16).
// Per tile of up to 64 rows the prepass writes, per row pair and query, the dword of the two
// rows' w·scale (one float32 rounding, as multiAccFP8VBMI) rounded to bf16 (VCVTNEPS2BF16),
// the first row's in the low word; an odd tile's last row pairs with itself under weight 0.
TEXT ·multiAccFP8BF16(SB), 0, $536-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), R14          // byte offset of the row scale
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
` + fp8BF16Tabs + `	VMOVDQU64 ·fp8PairIdx+0(SB), Z29
	VMOVDQU64 ·fp8PairIdx+64(SB), Z30
	TESTQ R10, R10
	JZ   fba_done
	MOVQ nv+16(FP), AX
	TESTQ AX, AX
	JZ   fba_done

fba_tile:
	MOVQ R10, AX               // rows in this tile
	CMPQ AX, $64
	JLE  fba_tn
	MOVQ $64, AX
fba_tn:
	MOVQ AX, tn-8(SP)
	MOVQ rb+32(FP), R12
	MOVQ R12, R15
	SHLQ $6, R12
	MOVQ R12, pf-16(SP)        // bytes to the next tile, which the pair loop prefetches
	ADDQ R15, R12
	MOVQ R12, pfb-24(SP)       // the same from a pair's second row
	// The tile's weights times their row's scale, rounded to bf16, a dword per pair and query.
	LEAQ ws-536(SP), BX
	MOVQ DI, R12
	MOVQ R9, R8
	MOVQ AX, R15
fba_ws:
	VBROADCASTSS (R12)(R14*1), X1
	VMULPS (R8), X1, X0
	VXORPS X2, X2, X2
	CMPQ R15, $1
	JEQ  fba_ws1
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	VBROADCASTSS (R12)(R14*1), X3
	VMULPS (R8), X3, X2
	DECQ R15
fba_ws1:
	VINSERTF128 $1, X2, Y0, Y0
	CVTBF16Y(0, 0)
	VPSHUFB ·fp8PairWords(SB), X0, X0
	VMOVDQU X0, (BX)
	ADDQ $16, BX
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	DECQ R15
	JNZ  fba_ws

	MOVQ nv+16(FP), R11        // values left
	XORQ BX, BX                // byte offset of the chunk in a row
	MOVQ SI, CX                // accumulators of the chunk

fba_chunk:
	CMPQ R11, $64
	JLT  fba_lhalf
	` + fbaLoad(false, "", 0, 1, 2, 3) + `
	` + fbaLoad(false, "DX*1", 4, 5, 6, 7) + `
	` + fbaLoad(false, "DX*2", 8, 9, 10, 11) + `
	` + fbaLoad(false, "R13*1", 12, 13, 14, 15) + `
	JMP  fba_rows
fba_lhalf:
	` + fbaLoad(true, "", 0, 1, 2, 3) + `
	` + fbaLoad(true, "DX*1", 4, 5, 6, 7) + `
	` + fbaLoad(true, "DX*2", 8, 9, 10, 11) + `
	` + fbaLoad(true, "R13*1", 12, 13, 14, 15) + `
fba_rows:
	LEAQ (DI)(BX*1), R12
	LEAQ ws-536(SP), R8
	MOVQ tn-8(SP), R15

fba_pair:
	MOVQ pf-16(SP), AX
	PREFETCHT0 (R12)(AX*1)
	PREFETCHT0 64(R12)(AX*1)
	MOVQ pfb-24(SP), AX
	PREFETCHT0 (R12)(AX*1)
	PREFETCHT0 64(R12)(AX*1)
	MOVQ pf-16(SP), AX
	ADDQ AX, AX
	ADDQ R12, AX               // the same lines two tiles on, into L2
	PREFETCHT1 (AX)
	PREFETCHT1 64(AX)
	ADDQ rb+32(FP), AX
	PREFETCHT1 (AX)
	PREFETCHT1 64(AX)
	MOVQ rb+32(FP), AX
	CMPQ R15, $1
	JNE  fba_two
	XORQ AX, AX                // odd last row: the second reads the first again
fba_two:
	CMPQ R11, $64
	JLT  fba_half
	VMOVDQU64 (R12), Z16
	VMOVDQU64 (R12)(AX*1), Z17
	JMP  fba_dec
fba_half: // 32 codes; the zeros above them decode to 0
	VMOVDQU32 (R12), Y16
	VMOVDQU32 (R12)(AX*1), Y17
fba_dec:
	VMOVDQA64 Z29, Z18
	VMOVDQA64 Z30, Z19
	VPERMI2B Z17, Z16, Z18
	VPERMI2B Z17, Z16, Z19
	VMOVDQA64 Z18, Z20
	VMOVDQA64 Z19, Z21
	VPERMI2B Z25, Z24, Z18
	VPERMI2B Z25, Z24, Z19
	VPTERNLOGD $0xF8, Z28, Z20, Z18
	VPTERNLOGD $0xF8, Z28, Z21, Z19
	VPERMI2B Z27, Z26, Z20
	VPERMI2B Z27, Z26, Z21
	VPUNPCKLBW Z18, Z20, Z22
	VPUNPCKHBW Z18, Z20, Z23
	VPUNPCKLBW Z19, Z21, Z16
	VPUNPCKHBW Z19, Z21, Z17
`)
	vec := [4]int{22, 23, 16, 17}
	for k := 0; k < 4; k++ {
		for h := 0; h < 4; h++ {
			fmt.Fprintf(&b, "\tDPBF16R8(%d, %d, %d)\n", h, vec[k], 4*h+k)
		}
	}
	b.WriteString(`	LEAQ (R12)(AX*2), R12
	ADDQ $16, R8
	SUBQ $2, R15
	JGT  fba_pair

	CMPQ R11, $64
	JLT  fba_shalf
	` + fbaStore(false, "", 0, 1, 2, 3) + `
	` + fbaStore(false, "DX*1", 4, 5, 6, 7) + `
	` + fbaStore(false, "DX*2", 8, 9, 10, 11) + `
	` + fbaStore(false, "R13*1", 12, 13, 14, 15) + `
	ADDQ $64, BX
	ADDQ $256, CX
	SUBQ $64, R11
	JNZ  fba_chunk
	JMP  fba_next
fba_shalf:
	` + fbaStore(true, "", 0, 1, 2, 3) + `
	` + fbaStore(true, "DX*1", 4, 5, 6, 7) + `
	` + fbaStore(true, "DX*2", 8, 9, 10, 11) + `
	` + fbaStore(true, "R13*1", 12, 13, 14, 15) + `

fba_next:
	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ wstride+56(FP), R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  fba_tile

fba_done:
	VZEROUPPER
	RET
`)
	return b.String()
}

// fp8PairIdx writes fp8PairIdx, the two VPERMI2B indices that interleave a row pair's 64
// codes (row a's the first table, row b's the second) so that, after the lookups and the
// VPUNPCKLBW/VPUNPCKHBW of the high and low bytes, vector k of a chunk holds values
// 16k..16k+15 in order (dword j: value 16k+j of rows a and b): 128-bit lane L of the first
// index takes values 4L..4L+3 then 16+4L..16+4L+3, each as the pair (a, b), the second index
// the same 32 values on.
func fp8PairIdx() string {
	var idx [128]byte
	for h := 0; h < 2; h++ {
		for l := 0; l < 4; l++ {
			for half := 0; half < 2; half++ {
				for i := 0; i < 4; i++ {
					v := 32*h + 16*half + 4*l + i
					p := 64*h + 16*l + 8*half + 2*i
					idx[p], idx[p+1] = byte(v), byte(64+v)
				}
			}
		}
	}
	var b strings.Builder
	for i := 0; i < 128; i += 8 {
		var x uint64
		for k := 7; k >= 0; k-- {
			x = x<<8 | uint64(idx[i+k])
		}
		fmt.Fprintf(&b, "DATA ·fp8PairIdx+%d(SB)/8, $0x%016x\n", i, x)
	}
	b.WriteString("GLOBL ·fp8PairIdx(SB), RODATA|NOPTR, $128\n")
	return b.String()
}

// fbaLoad loads the 64 floats of the chunk of the accumulator at CX (+idx) in order into
// Z(r)..Z(r+3); half, the 32 of a half chunk, zeros for the other 32.
func fbaLoad(half bool, idx string, r, _, _, _ int) string {
	var b strings.Builder
	for k := 0; k < 4; k++ {
		if half && k >= 2 {
			fmt.Fprintf(&b, "VPXORD Z%d, Z%d, Z%d\n\t", r+k, r+k, r+k)
			continue
		}
		fmt.Fprintf(&b, "VMOVUPS %s, Z%d\n\t", fvaAddr(idx, k), r+k)
	}
	return b.String()
}

// fbaStore stores Z(r)..Z(r+3) into the chunk of the accumulator at CX (+idx) (half: its
// first 32 floats).
func fbaStore(half bool, idx string, r, _, _, _ int) string {
	var b strings.Builder
	for k := 0; k < 4; k++ {
		if half && k >= 2 {
			break
		}
		fmt.Fprintf(&b, "VMOVUPS Z%d, %s\n\t", r+k, fvaAddr(idx, k))
	}
	return b.String()
}

// fp8ScoresBF16H writes multiScoresFP8BF16H and its query packer fp8QueryBF16H
// (multi_fp8bf16_amd64.go): fp8 scores through VDPBF16PS with a row pair's 32-value chunks in
// the two 256-bit halves of one vector (row a's below, row b's above, VINSERTI64X4 from
// memory), so that one accumulator per query holds both rows and a pair ends with four
// accumulators to reduce instead of eight: 8 shuffles and 8 adds a pair instead of 13 and 7.
// The packer lays each query's 32-value chunk out twice, once per half, and VDPBF16PS reads it
// from memory. Each query's products go into two accumulators (the words of values 0–7 of
// each 16, and the others) added before the reduction: with one, a chain of eight VDPBF16PS a
// pair, the kernel took 8.3 ns a row in cache instead of 7.5. On AMD Zen 4 (thread CPU time,
// rows of 128 values, four queries, alternated with multiScoresFP8BF16): 7.5 ns a row in
// cache instead of 8.6, but 10.8–13.2 streamed past the caches instead of 9.7–12.3
// (TestFP8ScoresBF16HSpeed, a busy machine), and the whole decode of 131072 cells (32 heads,
// 8 KV heads, one thread, native/attn's TestDecodeSpeedReport) 18.70 ms instead of 19.66
// (medians of five runs alternated, 18.62 against 19.25 at best). Streamed, the pair loop
// issues twice the loads of multiScoresFP8BF16 a row (its query vectors as memory operands,
// duplicated per half); the loop over four rows (fp8ScoresBF16Quad), which loads them once
// for two pairs, streams at 11.5–11.7 ns a row against multiScoresFP8BF16's 11.2–11.6 in the
// same runs, 7.4 in cache. Its prefetch (PREFETCHT0 PFDISTZ ahead of each row) against others
// on Zen 4, in that decode (native/attn's TestDecodeBreakdown, builds alternated 8–12 times,
// load 8–12 on 2 vCPUs, scores ns a cell, medians): none 9.2–9.8 against 9.8–9.9 when the
// memory was busier, but 8.8–9.2 against 8.5–8.7 when it was less (slower in all 12 pairs of
// one run); two levels, PREFETCHT1 12 KiB and PREFETCHT0 3 KiB ahead (the f16 Zen 4 kernel's),
// 10.9 against 10.5 and 9.1 against 8.5 (at load 3: 9.8 against 8.9, none 9.3); PREFETCHT1
// alone 4 or 12 KiB ahead ~15 against ~10. With the values kernel's second level in place,
// PREFETCHT1 12 or 24 KiB ahead added to the loop over four rows did not help either (scores
// 7.16/7.55/7.79 and 7.32/7.54/7.92 ns a row against 7.27/7.48/7.69, min/first quartile/
// median of 15 decodes each, alternated). With the rows on 2 MiB pages (internal/hugemem),
// PFDISTZ 3072 or 12288 instead of 6144: scores 7.35–7.71 and 7.40–7.59 ns a cell against
// 7.52–8.69 (TestDecodeBreakdown, four alternations, min), within noise; the scores' wait
// on memory there (streamed against KVLAB_TOUCH=k) was 0–0.8 ns a cell, in noise as large.
// On 2 MiB pages a PREFETCHT1 16, 24 or 32 KiB ahead of each row added to the loop over four
// rows did not help either (24 and 32 KiB: scores 7.77 and 7.78 against 7.70 ns a cell, min
// of 10 decodes each, alternated; 16 KiB 7.90 against 7.91 in 8), nor did the second row's 32 codes come in by a masked VMOVDQU8 (the upper half
// of the vector) or by VINSERTI64X4 from memory instead of a load and VINSERTI64X4 (scores
// 7.61/7.80/8.02 and 7.32/7.62/7.81 against 7.46/7.63/7.76, 8 decodes each; min/first
// quartile/median). Those prefetch variants were measured with the loop over four rows bound
// by its reduction's wait; with the reduction deferred, the L2 prefetch pays
// (fp8ScoresBF16Quad).
func fp8ScoresBF16H() string {
	var b strings.Builder
	b.WriteString(`
// fp8PairOrder picks, from the reduced vector (128-bit lane L, dword 2k: query 2k+L/2's sum
// of row L&1 — see multiScoresFP8BF16H), row a's four sums, then row b's.
DATA ·fp8PairOrder+0(SB)/8, $0x0000000800000000
DATA ·fp8PairOrder+8(SB)/8, $0x0000000a00000002
DATA ·fp8PairOrder+16(SB)/8, $0x0000000c00000004
DATA ·fp8PairOrder+24(SB)/8, $0x0000000e00000006
DATA ·fp8PairOrder+32(SB)/8, $0x0000000000000000
DATA ·fp8PairOrder+40(SB)/8, $0x0000000000000000
DATA ·fp8PairOrder+48(SB)/8, $0x0000000000000000
DATA ·fp8PairOrder+56(SB)/8, $0x0000000000000000
GLOBL ·fp8PairOrder(SB), RODATA|NOPTR, $64

// DPBF16CX(n, a, acc) is VDPBF16PS 64n(CX), Za, Zacc (EVEX.512.F3.0F38.W0 52 /r, base CX,
// disp8·64).
#define DPBF16CX(n, a, acc) BYTE $0x62; \
	BYTE $(((((acc)>>3)&1)^1)<<7 | 1<<6 | 1<<5 | ((((acc)>>4)&1)^1)<<4 | 2); \
	BYTE $((((a)&15)^15)<<3 | 6); BYTE $(0x40 | ((((a)>>4)&1)^1)<<3); BYTE $0x52; \
	BYTE $(0x41 | ((acc)&7)<<3); BYTE $(n)

// func fp8QueryBF16H(dst *uint16, q *float32, d, nv int)
// For the four queries q[h·d:], writes their first nv values (nv a positive multiple of 32) as
// bf16 (VCVTNEPS2BF16) in multiScoresFP8BF16H's layout: per 32-value chunk c and query h, at
// dst[(4c + h)·64:], the words of values 0–7, 16–23, 0–7, 16–23 of the chunk, then of values
// 8–15, 24–31, 8–15, 24–31.
TEXT ·fp8QueryBF16H(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ d+16(FP), DX
	SHLQ $2, DX                // bytes between queries
	MOVQ nv+24(FP), R11
fqh_chunk:
	MOVQ SI, AX
	MOVQ $4, CX
fqh_query:
	VMOVUPS (AX), Z0
	VMOVUPS 64(AX), Z1
	CVTBF16(0, 0)
	CVTBF16(1, 1)
	VINSERTI64X4 $1, Y1, Z0, Z0
	VSHUFI64X2 $0x88, Z0, Z0, Z4
	VSHUFI64X2 $0xDD, Z0, Z0, Z5
	VMOVDQU64 Z4, (DI)
	VMOVDQU64 Z5, 64(DI)
	ADDQ $128, DI
	ADDQ DX, AX
	DECQ CX
	JNZ  fqh_query
	ADDQ $128, SI
	SUBQ $32, R11
	JGT  fqh_chunk
	VZEROUPPER
	RET

// func multiScoresFP8BF16H(q *uint16, nv int, rows *byte, rb, m int, out *float32, ostride, so int, off *float32)
// multiScoresFP8BF16's contract, with the queries packed by fp8QueryBF16H: per row pair and
// 32-value chunk, row a's codes and row b's in one vector's halves, decoded once
// (FP8BF16DEC) for the four queries into accumulator Z(h) (row a in the low half).
TEXT ·multiScoresFP8BF16H(SB), 0, $648-72
	MOVB $0, pend-8(SP)        // no four rows' sums wait in the frame (fp8ScoresBF16Quad)
	MOVQ q+0(FP), SI
	MOVQ nv+8(FP), R11
	MOVQ rows+16(FP), DI
	MOVQ rb+24(FP), R8
	MOVQ m+32(FP), R10
	MOVQ out+40(FP), R9
	MOVQ so+56(FP), R14
	MOVQ off+64(FP), AX
	VBROADCASTF32X4 (AX), Z30
` + fp8BF16Tabs + `	VMOVUPS ·fp8PairOrder(SB), Z29
	TESTQ R10, R10
	JZ   fbh_done
` + fp8ScoresBF16Quad(false) + `
fbh_pair:
	CMPQ R10, $1
	JNE  fbh_two
	XORQ R8, R8                // odd last row: b reads a again
fbh_two:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	MOVQ DI, BX
	LEAQ (DI)(R8*1), R15
	MOVQ SI, CX
	MOVQ R11, R12              // values left

fbh_chunk:
	PREFETCHT0 PFDISTZ(BX)
	PREFETCHT0 PFDISTZ(R15)
	CMPQ R12, $64
	JLT  fbh_last
`)
	chunk := func(off int, codes, copy_, l string) string {
		o := ""
		if off > 0 {
			o = fmt.Sprint(off)
		}
		var s strings.Builder
		fmt.Fprintf(&s, "\tVMOVDQU64 %s(BX), Y%s\n\tVMOVDQU64 %s(R15), Y%s\n\tVINSERTI64X4 $1, Y%s, Z%s, Z%s\n\tVMOVDQA64 Z%s, Z%s\n\tFP8BF16DEC(Z%s, Z%s, Z%s)\n",
			o, codes, o, copy_, copy_, codes, codes, codes, copy_, codes, copy_, l)
		return s.String()
	}
	// The l words' products go to Z(h), the other words' to Z(8+h): two chains per query.
	dp := func(qoff int, l, a int) string {
		var s strings.Builder
		for h := 0; h < 4; h++ {
			fmt.Fprintf(&s, "\tDPBF16CX(%d, %d, %d)\n\tDPBF16CX(%d, %d, %d)\n", (qoff+128*h)/64, l, h, (qoff+128*h+64)/64, a, 8+h)
		}
		return s.String()
	}
	b.WriteString(chunk(0, "4", "5", "6"))
	b.WriteString(chunk(32, "7", "31", "5"))
	b.WriteString(dp(0, 6, 4))
	b.WriteString(dp(512, 5, 7))
	b.WriteString(`	ADDQ $64, BX
	ADDQ $64, R15
	ADDQ $1024, CX
	SUBQ $64, R12
	JNZ  fbh_chunk
	JMP  fbh_reduce
fbh_last:                      // a last 32 values
`)
	b.WriteString(chunk(0, "4", "5", "6"))
	b.WriteString(dp(0, 6, 4))
	b.WriteString(`
fbh_reduce:
	VADDPS Z8, Z0, Z0
	VADDPS Z9, Z1, Z1
	VADDPS Z10, Z2, Z2
	VADDPS Z11, Z3, Z3
	// Z(h) lanes: row a's two, row b's two; sum the 128-bit lanes of each row, pairing queries,
	// then the four dwords of each lane.
	VSHUFF32X4 $0x88, Z1, Z0, Z4
	VSHUFF32X4 $0xDD, Z1, Z0, Z5
	VADDPS Z5, Z4, Z4          // lanes: q0 a, q0 b, q1 a, q1 b
	VSHUFF32X4 $0x88, Z3, Z2, Z5
	VSHUFF32X4 $0xDD, Z3, Z2, Z6
	VADDPS Z6, Z5, Z5          // lanes: q2 a, q2 b, q3 a, q3 b
	VSHUFPS $0x88, Z5, Z4, Z6
	VSHUFPS $0xDD, Z5, Z4, Z7
	VADDPS Z7, Z6, Z6
	VPERMILPS $0xB1, Z6, Z7
	VADDPS Z7, Z6, Z6          // lane L dwords 0, 2: queries L/2 and 2+L/2 of row L&1
	VPERMPS Z6, Z29, Z11       // [a0 a1 a2 a3 b0 b1 b2 b3 …]
	VBROADCASTSS (DI)(R14*1), X12
	LEAQ (DI)(R8*1), AX
	VBROADCASTSS (AX)(R14*1), X13
	VINSERTF128 $1, X13, Y12, Y12
	VFMADD213PS Y30, Y12, Y11
	VMOVUPS X11, (R9)
	CMPQ R10, $1
	JEQ  fbh_done
	VEXTRACTF32X4 $1, Z11, X12
	MOVQ ostride+48(FP), AX
	VMOVUPS X12, (R9)(AX*1)

	LEAQ (DI)(R8*2), DI
	LEAQ (R9)(AX*2), R9
	SUBQ $2, R10
	JNZ  fbh_pair

fbh_done:
	VZEROUPPER
	RET
`)
	// multiScoresFP8BF16HZ4: the same kernel with fp8ScoresBF16Quad's Zen 4 loop.
	s := b.String()
	k := s[strings.Index(s, "// func multiScoresFP8BF16H("):]
	z4 := strings.Replace(k, fp8ScoresBF16Quad(false), fp8ScoresBF16Quad(true), 1)
	z4 = strings.NewReplacer("multiScoresFP8BF16H(", "multiScoresFP8BF16HZ4(", "fbh_", "fzh_", "fbq_", "fzq_").Replace(z4)
	z4 = strings.Replace(z4, "\n// multiScoresFP8BF16's contract,", "\n// multiScoresFP8BF16H with its loop over four rows keeping their sums in registers\n// (fp8ScoresBF16Quad's z4; AMD Zen 4): the same scores bit for bit.\n// multiScoresFP8BF16's contract,", 1)
	return s + "\n" + z4
}

// fp8ScoresBF16Quad is multiScoresFP8BF16H's loop over four rows at a time (two pairs, rows
// DI, BX = DI+R8 … as R15, R13, DX), while four are left: each 32-value chunk's query vectors
// loaded once for both pairs (half the loads a row of the pair loop's memory operands, 24 a
// pair of 128 values; z4: each into Z29 just before its two VDPBF16PS, see below), the pairs'
// products into Z0..Z3 and Z8..Z11
// (one chain per query and pair: two pairs interleaved keep eight chains going).
// The four rows' sums go to the frame (z4: Z12..Z19) and are reduced and stored after the
// next four rows' first chunk (fp8QuadReduce; a flag in the frame says that sums wait), and
// each chunk prefetches into L2 as well (PREFETCHT1 PFDISTZ2 ahead of each row, beside PREFETCHT0
// PFDISTZ): the loop's loads and prefetches alone (no decode, no VDPBF16PS) took 7.6–7.9 ns a
// cell in attention's decode with PREFETCHT0 only, 6.1–6.9 with no prefetch, 5.5–5.8 with
// both, 5.9–6.1 with PREFETCHT0 8.25 KiB ahead and both (native/attn's TestDecodeBreakdown,
// fp8, 131072 cells, one thread, rows on 2 MiB pages; the kernel with its decode 7.1–7.3
// either way), so the kernel was bound by that memory floor, not by its arithmetic (but see
// below: that floor was the loop's own cost). The
// whole decode (same test, test binaries alternated five times, load 9–12 on 2 vCPUs, Zen 4)
// took 14.16–14.98 ns a cell, median 14.19, against 14.63–15.32, median 14.65, before; the
// L2 prefetch alone 14.40–15.06, median 14.55; the deferred reduction alone 14.57–15.44
// against 14.62–15.65 (six alternations). The scores timed apart there measured the same
// (7.1–7.4) in all four; the values after them 6.5–6.6 against 6.6–7.1. Deferring the
// reduction with the sums kept in Z12..Z19 and the queries as VDPBF16PS memory operands
// instead (6.12–6.14 ns a row in cache) scored 9.2–9.8 ns a cell timed apart in the decode,
// the whole 14.38–15.80 with the L2 prefetch.
//
// That memory floor was the loop's own cost, not the memory's. With the packed queries on a
// 64-byte boundary (scoresBF16), chunks of 16384 rows of 2 MiB pages streamed one after another
// with a read of as many V bytes between (AMD Zen 4, thread CPU time, min of five, ns a row):
// the loop's loads alone (32-byte loads of four rows, its prefetches, no query loads) 2.5–3.1,
// none of its prefetches 2.4–2.7, a plain read of the same bytes 2.2–2.7 (49 GB/s); the kernel
// 6.7–6.9 streamed and 6.6–7.0 with its 4096 rows in L2. Without decode and VDPBF16PS it still
// took 5.4–5.5 streamed (6.4–6.6 in L2), without the deferred reductions too 4.2–4.4, and the
// query loads were most of that in L2. In the whole kernel, in L2, each part removed saved
// (timing only, most with the queries not yet aligned): the reductions 0.7–1.1 ns a row (a
// second one per four rows cost 0.56 more; with their lane shuffles made VADDPS or integer
// operations, or their operations spread one or two after each VDPBF16PS of the next chunk,
// the same), the decode 0.4, all query loads 0.2–0.4, half of them 0.1–0.3, the sums' frame
// stores 0.35, the VINSERTI64X4 0.2, the prefetches 0.0; rows 128 bytes apart instead of 132
// (no load across a line) the same.
//
// So on Zen 4 (z4: multiScoresFP8BF16HZ4, fp8BF16ScoresZ4) the four rows' sums wait in
// Z12..Z19, not in the frame, and VDPBF16PS takes the queries as memory operands (twice the loads of them, each 64 bytes from one line now that
// scoresBF16 aligns them; unaligned, that measured 9.1–9.3 ns a row in L2): on Zen 4 the kernel
// 6.55–6.68 ns a row streamed and 6.44–6.65 in L2 against 6.74–6.86 and 6.67–6.74, and in the
// decode (TestDecodeBreakdown, fp8, 131072 cells, one thread, test binaries alternated four
// times, min) scores 6.66–6.75 against 6.88–6.99, the whole 13.88–14.22 against 14.09–14.76.
//
// Since then each query vector is loaded once into Z29 for the two pairs' VDPBF16PS (register
// operands; renaming keeps the eight loads of a chunk apart), not taken twice as a memory
// operand: the same products in the same order, half the query loads and eight loads more
// instructions a chunk. On Zen 4 (thread CPU time, in one process alternated with the memory
// operand kernel, 200 calls in cache and 10 passes streamed, three runs, a busy machine, load
// 8–11): 6.15–6.16 ns a row in cache against 6.40–6.46 (medians 6.73–6.78 against 7.0–7.2),
// streamed 10.82–11.43 against 11.40–11.90; in the decode (TestDecodeBreakdown, fp8, 131072
// cells, one thread, test binaries alternated four times, min) scores 6.23–6.39 against
// 6.67–6.76 and the whole 13.49–13.60 against 13.95–14.26; kvlab bench attn (131072 cells, 32
// heads, 8 KV heads, one thread, binaries alternated three times) fp8 14.01–14.20 ms against
// 14.55–14.75 (a fourth, noisy round 17.3).
//
// Where the time went, the same measure in cache (variants for timing only). With the queries
// as memory operands, before: without the deferred reductions' 14 shuffles and 7 adds the
// same 6.33–6.45; without the decode the same; every VDPBF16PS taking one register and no
// query loads 6.15; no VDPBF16PS 3.75; the second row pair's products in Z12..Z19 (16 chains
// of 4 a four rows, not 8 of 8) 6.83: bound by the query loads, not by the chains' latency.
// With each query vector loaded once (6.11–6.22 in those runs): without the reductions'
// shuffles and adds 5.42–5.52, without the decode 4.43–4.80: now bound by the vector
// operations' issue, where each zmm operation a row costs about 0.13 ns. Not paying then,
// bit for bit, each alone, 6.07–6.24 against 6.11–6.22 in cache and the same streamed: the
// loop over two sets of sums (Z0..Z3, Z8..Z11 and Z12..Z19 taking turns, no VMOVAPS of the
// sums: those moves cost nothing); each pair's second row by VINSERTI64X4 from memory, or by a
// VBROADCASTI64X4 merge-masked to the upper half; the scales stored as four broadcast 16-byte
// vectors (no lane inserts); the reduction with the rows paired 0 with 2 and 1 with 3 and
// each add's operands by two VBLENDMPS and one single-source shuffle (VSHUFF32X4 $0xB1,
// VPERMILPS $0xB1 or $0x4E) instead of two two-source shuffles (half the shuffles, a third
// more operations), for its first level or all three. The reductions' 7 adds and 14 shuffles
// a four rows are the fewest operations for their order (each add needs its operands moved
// across lanes: two two-source shuffles, or two blends and a shuffle); the decode takes 5 (and
// a copy) per 64 codes.
//
// Not kept: the four rows' codes in one vector, 16 of each row in each 128-bit lane
// (VBROADCASTI32X4 and VPBLENDMD), which makes the reduction one VADDPS per query with the
// same sums bit for bit but needs each query's 16 bytes broadcast from memory for every four
// rows: 11.0–11.4 ns a row in L2 (10.5 with the broadcasts as plain loads, 10.2 without the
// blends).
func fp8ScoresBF16Quad(z4 bool) string {
	var b strings.Builder
	b.WriteString(`
fbq_quad:
	CMPQ R10, $4
	JLT  fbq_end
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	MOVQ DI, BX
	LEAQ (DI)(R8*1), R15
	LEAQ (DI)(R8*2), R13
	LEAQ (R13)(R8*1), DX
	MOVQ SI, CX
	MOVQ R11, R12              // values left

fbq_chunk:
	PREFETCHT0 PFDISTZ(BX)
	PREFETCHT1 PFDISTZ2(BX)
	PREFETCHT0 PFDISTZ(R15)
	PREFETCHT1 PFDISTZ2(R15)
	PREFETCHT0 PFDISTZ(R13)
	PREFETCHT1 PFDISTZ2(R13)
	PREFETCHT0 PFDISTZ(DX)
	PREFETCHT1 PFDISTZ2(DX)
	CMPQ R12, $64
	JLT  fbq_last
`)
	// dec decodes the 32-value chunk at off of rows 0 and 1 (one vector's halves) and of rows 2
	// and 3 into four vectors of words, r[0] and r[1] the first pair's (the words of values
	// 0–7, 16–23 and the others), r[2] and r[3] the second's; t[0], t[1] and t[2] are scratch.
	dec := func(off int, r [4]int, t [3]int) string {
		return fmt.Sprintf(`	VMOVDQU64 %[1]d(BX), Y%[3]d
	VMOVDQU64 %[1]d(R15), Y%[6]d
	VINSERTI64X4 $1, Y%[6]d, Z%[3]d, Z%[3]d
	VMOVDQA64 Z%[3]d, Z%[6]d
	FP8BF16DEC(Z%[3]d, Z%[6]d, Z%[2]d)
	VMOVDQU64 %[1]d(R13), Y%[5]d
	VMOVDQU64 %[1]d(DX), Y%[7]d
	VINSERTI64X4 $1, Y%[7]d, Z%[5]d, Z%[5]d
	VMOVDQA64 Z%[5]d, Z%[7]d
	FP8BF16DEC(Z%[5]d, Z%[7]d, Z%[4]d)
`, off, r[0], r[1], r[2], r[3], t[0], t[1])
	}
	// dp multiplies the decoded chunk (r as dec left it) by the four queries' words at qoff(CX):
	// loaded into Z12..Z19, or (z4) each into Z29 just before its two VDPBF16PS, Z12..Z19
	// holding the previous four rows' sums.
	dp := func(qoff int, r [4]int) string {
		var s strings.Builder
		if !z4 {
			for h := 0; h < 4; h++ {
				fmt.Fprintf(&s, "\tVMOVDQU64 %d(CX), Z%d\n\tVMOVDQU64 %d(CX), Z%d\n", qoff+128*h, 12+h, qoff+128*h+64, 16+h)
			}
			for h := 0; h < 4; h++ {
				fmt.Fprintf(&s, "\tDPBF16(%d, %d, %d)\n\tDPBF16(%d, %d, %d)\n", 12+h, r[0], h, 12+h, r[2], 8+h)
			}
			for h := 0; h < 4; h++ {
				fmt.Fprintf(&s, "\tDPBF16(%d, %d, %d)\n\tDPBF16(%d, %d, %d)\n", 16+h, r[1], h, 16+h, r[3], 8+h)
			}
			return s.String()
		}
		for h := 0; h < 4; h++ {
			fmt.Fprintf(&s, "\tVMOVDQU64 %d(CX), Z29\n\tDPBF16(29, %d, %d)\n\tDPBF16(29, %d, %d)\n", qoff+128*h, r[0], h, r[2], 8+h)
		}
		for h := 0; h < 4; h++ {
			fmt.Fprintf(&s, "\tVMOVDQU64 %d(CX), Z29\n\tDPBF16(29, %d, %d)\n\tDPBF16(29, %d, %d)\n", qoff+128*h+64, r[1], h, r[3], 8+h)
		}
		return s.String()
	}
	// The second chunk's codes are decoded into Z20..Z23 (Z29 scratch, fp8PairOrder loaded
	// again after the loop) before the first chunk's products, so that its decode overlaps
	// them: on AMD Zen 4, rows of 128 values in cache, 6.87–6.93 ns a row instead of 7.07–7.23
	// with each chunk decoded just before its products (TestFP8ScoresBF16HSpeed, thread CPU
	// time, medians of five runs alternated); the same products in the same order. Spreading
	// that decode among the first chunk's VDPBF16PS, one instruction after each, was slower
	// (7.08–7.12).
	ra, ta := [4]int{6, 4, 5, 7}, [3]int{5, 31, 0}
	rb, tb := [4]int{22, 20, 21, 23}, [3]int{21, 29, 0}
	b.WriteString(dec(0, ra, ta))
	b.WriteString(dec(32, rb, tb))
	b.WriteString(dp(0, ra))
	b.WriteString(dp(512, rb))
	b.WriteString(`	ADDQ $64, BX
	ADDQ $64, R15
	ADDQ $64, R13
	ADDQ $64, DX
	ADDQ $1024, CX
	CMPB pend-8(SP), $0
	JNE  fbq_pend
fbq_next:
	SUBQ $64, R12
	JNZ  fbq_chunk
	JMP  fbq_qend
fbq_pend:
` + fp8QuadReduce("p", z4) + `	JMP  fbq_next
fbq_last:                      // a last 32 values
`)
	b.WriteString(dec(0, ra, ta))
	b.WriteString(dp(0, ra))
	b.WriteString(`	CMPB pend-8(SP), $0
	JEQ  fbq_qend
` + fp8QuadReduce("l", z4) + `
fbq_qend:
`)
	sums := `	VMOVUPS Z0, (AX)           // the sums, reduced after the next four rows' first chunk
	VMOVUPS Z1, 64(AX)
	VMOVUPS Z2, 128(AX)
	VMOVUPS Z3, 192(AX)
	VMOVUPS Z8, 256(AX)
	VMOVUPS Z9, 320(AX)
	VMOVUPS Z10, 384(AX)
	VMOVUPS Z11, 448(AX)
`
	if z4 {
		sums = `	VMOVAPS Z0, Z12            // the sums, reduced after the next four rows' first chunk
	VMOVAPS Z1, Z13
	VMOVAPS Z2, Z14
	VMOVAPS Z3, Z15
	VMOVAPS Z8, Z16
	VMOVAPS Z9, Z17
	VMOVAPS Z10, Z18
	VMOVAPS Z11, Z19
`
	}
	b.WriteString(`	LEAQ buf-648(SP), AX
	ADDQ $63, AX
	ANDQ $~63, AX              // the frame's 64-byte aligned buffer, 576 bytes below pend
` + sums + `	LEAQ (DI)(R8*1), R15
	LEAQ (DI)(R8*2), R13
	LEAQ (R13)(R8*1), DX
	VBROADCASTSS (DI)(R14*1), X4
	VBROADCASTSS (R15)(R14*1), X5
	VBROADCASTSS (R13)(R14*1), X6
	VBROADCASTSS (DX)(R14*1), X7
	VINSERTF32X4 $1, X5, Y4, Y4
	VINSERTF32X4 $1, X7, Y6, Y6
	VINSERTF64X4 $1, Y6, Z4, Z4
	VMOVUPS Z4, 512(AX)
	MOVB $1, pend-8(SP)
	LEAQ (DI)(R8*4), DI
	SUBQ $4, R10
	JMP  fbq_quad
fbq_end:
	CMPB pend-8(SP), $0
	JEQ  fbq_none
` + fp8QuadReduce("e", z4) + `
fbq_none:
	VMOVUPS ·fp8PairOrder(SB), Z29
	TESTQ R10, R10
	JZ   fbh_done
`)
	return b.String()
}

// fp8QuadReduce writes the reduction of four rows' sums that fp8ScoresBF16Quad's loop left in
// its frame (the 64-byte aligned buffer at AX: at 64k the vector of query k of rows 0 and 1,
// at 256 + 64k that of rows 2 and 3; z4: in Z(12+k) and Z(16+k)) with the four rows' scales
// (at 512, each in a 128-bit lane) and the stores of their scores at R9, which it advances; l makes its labels unique. It
// takes AX, Z4..Z7 and Z20..Z23, which are free at the end of a chunk.
//
// The eight vectors are reduced into one whose 128-bit lane k holds row k's four sums: per
// query, the lanes of each row added (VSHUFF32X4 pairs; lane k of the sum is row k), then the
// four dwords of each lane added across the four queries (VSHUFPS pairs, twice), in the order
// the pair loop's reduction adds them (so the same sums bit for bit): 8 VSHUFF32X4, 6 VSHUFPS
// and 7 adds for four rows, against 20 shuffles (VPERMPS among them) and 8 adds for two
// reductions of a pair, and one multiply-add with the row scales for the four rows; their 64
// bytes of output are stored at once where the rows' outputs are adjacent (ostride 16: four
// queries), as the decode calls it. On AMD Zen 4, rows of 128 values in cache: 7.07–7.20 ns a
// row instead of 7.45–7.55 (TestFP8ScoresBF16HSpeed, thread CPU time, medians of five runs
// alternated with the previous kernel on a busy machine).
//
// The loop runs this after the first chunk of the next four rows (or after the last four
// rows), not right after their last VDPBF16PS, where it waited on the products' latency with
// little else to issue: with its first shuffles fed from other registers (the same work, no
// wait) the kernel took 6.05–6.10 ns a row in cache instead of 6.86–6.88; deferred through the
// frame, 6.58–6.64 (Zen 4, TestFP8ScoresBF16HSpeed, 4096 rows, thread CPU time); deferred in
// registers, see fp8ScoresBF16Quad.
func fp8QuadReduce(l string, z4 bool) string {
	sums := `	VMOVUPS (AX), Z4
	VSHUFF32X4 $0x88, 256(AX), Z4, Z20
	VSHUFF32X4 $0xDD, 256(AX), Z4, Z21
	VADDPS Z21, Z20, Z20       // query 0: lane k row k
	VMOVUPS 64(AX), Z4
	VSHUFF32X4 $0x88, 320(AX), Z4, Z21
	VSHUFF32X4 $0xDD, 320(AX), Z4, Z22
	VADDPS Z22, Z21, Z21
	VMOVUPS 128(AX), Z4
	VSHUFF32X4 $0x88, 384(AX), Z4, Z22
	VSHUFF32X4 $0xDD, 384(AX), Z4, Z23
	VADDPS Z23, Z22, Z22
	VMOVUPS 192(AX), Z4
	VSHUFF32X4 $0x88, 448(AX), Z4, Z23
	VSHUFF32X4 $0xDD, 448(AX), Z4, Z5
	VADDPS Z5, Z23, Z23
`
	if z4 {
		sums = `	VSHUFF32X4 $0x88, Z16, Z12, Z20
	VSHUFF32X4 $0xDD, Z16, Z12, Z21
	VADDPS Z21, Z20, Z20       // query 0: lane k row k
	VSHUFF32X4 $0x88, Z17, Z13, Z21
	VSHUFF32X4 $0xDD, Z17, Z13, Z22
	VADDPS Z22, Z21, Z21
	VSHUFF32X4 $0x88, Z18, Z14, Z22
	VSHUFF32X4 $0xDD, Z18, Z14, Z23
	VADDPS Z23, Z22, Z22
	VSHUFF32X4 $0x88, Z19, Z15, Z23
	VSHUFF32X4 $0xDD, Z19, Z15, Z5
	VADDPS Z5, Z23, Z23
`
	}
	return strings.NewReplacer("%L%", l, "%SUMS%", sums).Replace(`	MOVB $0, pend-8(SP)
	LEAQ buf-648(SP), AX
	ADDQ $63, AX
	ANDQ $~63, AX              // the frame's 64-byte aligned buffer, 576 bytes below pend
%SUMS%	VSHUFPS $0x88, Z21, Z20, Z4
	VSHUFPS $0xDD, Z21, Z20, Z5
	VADDPS Z5, Z4, Z4          // lane k: queries 0, 0, 1, 1 of row k
	VSHUFPS $0x88, Z23, Z22, Z6
	VSHUFPS $0xDD, Z23, Z22, Z7
	VADDPS Z7, Z6, Z6          // lane k: queries 2, 2, 3, 3 of row k
	VSHUFPS $0x88, Z6, Z4, Z20
	VSHUFPS $0xDD, Z6, Z4, Z21
	VADDPS Z21, Z20, Z20       // lane k: queries 0..3 of row k
	VFMADD132PS 512(AX), Z30, Z20
	MOVQ ostride+48(FP), AX
	CMPQ AX, $16
	JNE  fbq_store4%L%
	VMOVUPS Z20, (R9)
	ADDQ $64, R9
	JMP  fbq_stored%L%
fbq_store4%L%:
	VMOVUPS X20, (R9)
	VEXTRACTF32X4 $1, Z20, X21
	VMOVUPS X21, (R9)(AX*1)
	LEAQ (R9)(AX*2), R9
	VEXTRACTF32X4 $2, Z20, X21
	VMOVUPS X21, (R9)
	VEXTRACTF32X4 $3, Z20, X21
	VMOVUPS X21, (R9)(AX*1)
	LEAQ (R9)(AX*2), R9
fbq_stored%L%:
`)
}

// fp8ScoresF32 writes multiScoresFP8F32 (multi_fp8f32_amd64.go, Intel CPUs with AVX-512 VBMI:
// intelCPU): fp8 scores with float32 multiply-adds, the query as it is (no bf16 rounding).
// A row pair's 32-value group comes in as one vector, row a's codes below and row b's above
// (VINSERTI64X4 from memory), decodes as the bf16 kernels decode it (FP8BF16DEC: two VPERMI2B
// lookups, the sign ORed in, VPUNPCKLBW/VPUNPCKHBW) and widens to floats (VPSLLD 16 for a
// word pair's first bf16, VPANDD with the high words for its second): four vectors whose
// 128-bit lanes 0 and 1 hold row a's values and lanes 2 and 3 row b's. The packer
// (fp8PackF32) lays each query's values out in that order, once per half, so that every
// multiply-add takes both rows; the loop takes four rows (two pairs) at a time, each query
// vector loaded once for both pairs: 32 FMAs and 16 loads a group, query h's products of a
// pair in one accumulator. The sums are of the exact products q·x, each row's times its scale.
//
// Why not the bf16 kernels on Intel: there VDPBF16PS Z takes 2.2 cycles (16 of them on
// independent accumulators: 35 cycles) where VFMADD231PS takes 0.55, so its 32 products an
// operation cost 2× an FMA's 16; VPERMI2B Z (or VPERMT2B) takes 2.0 cycles, VPERMB,
// VPUNPCKLBW, VPMOVSXBW and VEXTRACTI64X4 1.0, VCVTPH2PS 1.15, VPTERNLOGD, VPDPBUSD and
// VFMADD231PH 0.55 (2 vCPUs of a Xeon, family 6 model 167 as reported, ~4.07 GHz by a
// dependent IMULQ chain; 16 independent operations a loop, thread CPU time, best of 15 runs
// of 200000 loops; 16 VDPBF16PS with 8 VPERMI2B 53 cycles, with 8 VPUNPCKLBW 45; 16 FMAs with
// 8 VPERMI2B 25.5, with 8 VCVTPH2PS 19). 16 FMAs on 8 accumulators took 9.7 cycles from
// registers but 12.7 with their query vectors as 64-byte memory operands (aligned), hence the
// four-row loop. An FMA with a subnormal float32 input or result took ~146 cycles there (a
// microcode assist; AMD takes none), so a decode that leaves e4m3's subnormal codes as
// float32 subnormals (their bits shifted into place, the exponent bias folded into the scale)
// does not pay there. In L1 (the loops alone, same method): multiScoresFP8AVX512's row pair
// and group (fp8Dec through VCVTPH2PS, 16 FMAs) 20.8 cycles, 10.5 its decode alone and 11.9
// its FMAs with their loads; this kernel's pair loop 18.4 (VPUNPCKLWD/VPUNPCKHWD under zero
// words to widen) or 19.2 (VPSLLD/VPANDD), its four-row loop 35.5 cycles a group of four rows
// (14.6 the two decodes alone, 20.9 the 32 FMAs with their 16 loads alone: the two add up,
// as every vector operation here issues on ports 0 and 5). Rows of 128 values, four queries,
// thread CPU time, alternated (fp8f32_amd64_test.go's TestFP8F32Speed), ns a row min/median:
// in cache (L2) 10.64/10.69 against 13.87/13.89 for multiScoresFP8BF16H and 13.09/13.16 for
// multiScoresFP8AVX512; streamed from 2 MiB pages 13.15/13.50 against 15.45/15.89 and
// 14.48/14.97 (load ~15 on the 2 vCPUs). Beside PREFETCHT0 PFDISTZ ahead of each row, a
// PREFETCHT1 PFDISTZ2 ahead: attention's decode scores (native/attn TestDecodeBreakdown,
// fp8, test binaries alternated three times, load ~18, min) 13.26–13.65 ns a row against
// 13.57–13.91. Not better (the same test, each against this kernel, 3 alternations, load
// 4.3–5.8, min): the L2 prefetch 12, 24, 32 or 48 KiB ahead (scores 13.08–13.39, 13.26–13.81,
// 13.13–13.49, 12.95–13.31 against 12.99–13.24), the L1 one 3 or 9 KiB ahead (13.19–13.36,
// 13.16–13.38); one prefetch of each kind for each line of the four rows (two a group, from a
// pointer rb on a group) in place of one a row a group: 13.11–13.51 against 12.72–13.00 (4
// alternations, load ~3.5).
//
// Products in fp16 (AVX512-FP16, VFMADD231PH: 32 lanes at 0.55 cycles; the Go assembler has no
// mnemonic, so BYTE encodings) did not pay either. An e4m3 code is an exact fp16 times 2⁻⁸
// (sign-extended byte << 7, bit 14 cleared; or from a 16-bit load of a code pair, the even code
// by VPSLLW 8, VPSRAW 1 and an AND with 0xBFFF, the odd by VPSRAW 1 and an AND with 0xBF80,
// with no port-5 operation); the query scaled per query by 2^s (max|q|·2^s in [2¹¹, 2¹²), so a
// lane's sum of four products stays below 2^14.9) and rounded to fp16; one VMULPH and three
// VFMADD231PH a lane over a row of 128 (fp16 sums of four products), then widened by VCVTPH2PS
// and summed in float32. Its error bound: (1 + 4)·2⁻¹¹·Σ|q·x| (query rounding and four
// roundings a lane), under the bf16 kernels' 2⁻⁸·Σ_b max|q_b|·Σ_b|x| (ScoresGrid); measured on
// rows of 128 at most 1.13·2⁻¹¹·Σ|q·x|, 1.77·2⁻¹¹ with one more fp16 add (row pairs' 256-bit
// halves, 6·2⁻¹¹ bound). Prototypes against this kernel (TestFP8F32Speed's harness, four
// queries, rows of 128, alternated, load 2.3–4.2, ns a row in cache): a row a loop, VPMOVSXBW
// decode, register widening and a per-row shuffle reduction 13.0–13.4 against 10.4–10.7; the
// code-pair decode, stores and VCVTPH2PS from memory 11.5–12.8 against 10.1–11.3; that with row
// pairs, the halves added in fp16 and this kernel's pair reduction 10.6–10.9 against 10.1–10.4
// (streamed 12.0–13.4 against 11.3–12.5). Without the widening and reduction (decode and
// products alone) a row took 4.6–6.5: the 128 fp16 sums a row to widen (VCVTPH2PS) and the
// cross-lane shuffles to reduce them, all on ports 0 and 5, cost what the halved FMAs save. One
// more fp16 level (the quarters, 7·2⁻¹¹ of the 8·2⁻¹¹ budget) would halve the widening again,
// for perhaps 10% by the uop count.
//
// A decode by arithmetic did not pay either (scratch, not committed). Two VGF2P8AFFINEQB give
// each code's bf16 of 2⁻⁸ times its value, the high byte s0111EEE (the exponent bias 112 ORed
// in by the instruction's constant) and the low byte Emmm0000, interleaved by the same
// VPUNPCKLBW/VPUNPCKHBW, with the packer scaling the queries by 2⁸ (exact), so the products
// are this kernel's bit for bit: 2 operations for the two VPERMI2B (3 µops each) and the
// sign's VPTERNLOGD. But the codes the arithmetic gets wrong (exponent 0: zero and the
// subnormals; NaN) need a check and a table path: VPADDB 1 and VPTESTNMB 0x70 (magnitudes
// 0–14 and 0x7f), KORQ and KORTESTQ a group of four rows: 12 operations a 64-code vector
// against 14, and a branch that real rows take at random. Bit for bit (rows with zeros and
// tiny values, 64–256 values a row), but in cache (4096 rows of 128, four queries, old and
// new test binaries alternated four times, load 13.5, thread CPU, min): Gaussian rows
// 10.79–11.44 ns a row against 10.80–11.77, benchRowsOf's outlier rows (9.4% of 32-code
// groups flagged, 0.16% of codes subnormal) 13.17–13.19 against 11.06–11.70; attention's
// decode scores (Gaussian, 3 alternations, load ~10) 17.38–17.66 against 17.04–17.92. Fixing
// the flagged bytes without a branch (VPERMB merge-masked from 64-entry tables: indices 0–15
// and 63 do not collide; then the sign) costs the 7 operations it would save.
//
// The integer route (VPDPBUSD on 8-bit queries, as q8_0's) was counted, not written: an e4m3
// magnitude is M·2^(E'−10), M ≤ 15, E' = max(E, 1) in 1..15. Unsigned bytes M·2^l ≤ 240 in
// the u8 operand need three exponent groups (E'−1 = 5h + l) and the code's sign moved to the
// query bytes (VPMOVB2M, four merge-masked VPSUBB); per 64-code vector and four queries: a
// VPERMI2B for the bytes (3 µops), ~3 for the group masks, 3 zero-masked copies, 5 for the
// sign, 12 VPDPBUSD and ~8 to combine the groups (per row and query two shifts and two adds
// of int32 sums, below 2²⁹): ~34 operations against this kernel's 30 (16 FMAs, 14 decode),
// and 12 int32 accumulators a row (48 for a loop of four rows). Signed bytes ±M·2^l ≤ 120 in
// the s8 operand (four groups) with the query biased to u8 need a fifth VPDPBUSD a group for
// the bias: 20 multiplies against 16 FMAs. The values phase groups alike.
//
// Nor did prefetching the other phase's rows (scratch harness of attention's chunk: these
// scores over a chunk of K rows, then multiAccFP8VBMI over its V rows in calls of 64 rows,
// 131072 rows, Gaussian; five runs, four with chunks of 16384 and one of 4096, load ~12,
// thread CPU, min ns a row): the runs flavour's pf2 aimed at the chunk's V rows (into L2):
// values 12.1–15.2 against 12.2–17.0, scores 14.0–20.6 against 13.8–14.6, whole 26.9–35.8
// against 26.0–31.6 (noise, no gain); multiAccFP8VBMIRunsAVX512's pf2 aimed at the next
// chunk's K rows: scores 12.9–14.7 but values 14.4–21.4, whole 28.0–37.6; both 29.7–39.5.
func fp8ScoresF32() string {
	var b strings.Builder
	b.WriteString(`
// fp8F32Order picks, from multiScoresFP8F32's reduced vector (128-bit lane L, dword i: query
// 2i + L/2's sum of row L&1), row a's four sums, then row b's.
DATA ·fp8F32Order+0(SB)/8, $0x0000000800000000
DATA ·fp8F32Order+8(SB)/8, $0x0000000900000001
DATA ·fp8F32Order+16(SB)/8, $0x0000000c00000004
DATA ·fp8F32Order+24(SB)/8, $0x0000000d00000005
DATA ·fp8F32Order+32(SB)/8, $0
DATA ·fp8F32Order+40(SB)/8, $0
DATA ·fp8F32Order+48(SB)/8, $0
DATA ·fp8F32Order+56(SB)/8, $0
GLOBL ·fp8F32Order(SB), RODATA|NOPTR, $64

DATA ·fp8F32High+0(SB)/4, $0xffff0000
GLOBL ·fp8F32High(SB), RODATA|NOPTR, $4

// func multiScoresFP8F32(q *float32, nv int, rows *byte, rb, m int, out *float32, ostride, so int)
// fp8 scores (multiKernels' contract but for q) of the four queries packed by fp8PackF32
// (nv values each, nv a positive multiple of 32: per 32-value group g, vector k and query h
// the 16 floats at q[((4g + k)·4 + h)·16:]) over the first nv values of the m rows at rows
// (rb bytes apart, the row scale so bytes into a row): query h's score of row j at
// out[j·ostride/4 + h]. Four rows a loop (two pairs: each query vector loaded once for
// both), the last one to three in pairs; either way query h's products of a pair go into one
// accumulator in the same order, so a row's scores do not depend on its place.
TEXT ·multiScoresFP8F32(SB), NOSPLIT, $0-64
	MOVQ q+0(FP), SI
	MOVQ nv+8(FP), R11
	SHRQ $5, R11               // 32-value groups a row
	MOVQ rows+16(FP), DI
	MOVQ rb+24(FP), R8
	MOVQ m+32(FP), R10
	MOVQ out+40(FP), R9
	MOVQ so+56(FP), R14
` + fp8BF16Tabs + `	VPBROADCASTD ·fp8F32High(SB), Z29
	VMOVDQU64 ·fp8F32Order(SB), Z30
	TESTQ R10, R10
	JZ   f32s_done
	TESTQ R11, R11
	JZ   f32s_done

f32s_quad:
	CMPQ R10, $4
	JLT  f32s_pair
` + f32sZero(8) + `	MOVQ DI, BX
	LEAQ (DI)(R8*1), R15
	MOVQ SI, CX
	MOVQ R11, R12
f32s_qgrp:
	PREFETCHT0 PFDISTZ(BX)
	PREFETCHT0 PFDISTZ(R15)
	PREFETCHT0 PFDISTZ(BX)(R8*2)
	PREFETCHT0 PFDISTZ(R15)(R8*2)
	PREFETCHT1 PFDISTZ2(BX)
	PREFETCHT1 PFDISTZ2(R15)
	PREFETCHT1 PFDISTZ2(BX)(R8*2)
	PREFETCHT1 PFDISTZ2(R15)(R8*2)
` + f32sDec("(BX)", "(R15)", 16, 8) + f32sDec("(BX)(R8*2)", "(R15)(R8*2)", 19, 12))
	for k := 0; k < 4; k++ {
		for h := 0; h < 4; h++ {
			qr := 22 + h&1
			fmt.Fprintf(&b, "\tVMOVUPS %d(CX), Z%d\n\tVFMADD231PS Z%d, Z%d, Z%d\n\tVFMADD231PS Z%d, Z%d, Z%d\n",
				64*(4*k+h), qr, qr, 8+k, h, qr, 12+k, 4+h)
		}
	}
	b.WriteString(`	ADDQ $32, BX
	ADDQ $32, R15
	ADDQ $1024, CX
	DECQ R12
	JNZ  f32s_qgrp
	MOVQ ostride+48(FP), AX
	LEAQ (R9)(AX*2), DX
` + f32sReduce(0, "DI", "(DI)(R8*1)") + `	VMOVUPS X11, (R9)
	VEXTRACTF128 $1, Y11, X12
	VMOVUPS X12, (R9)(AX*1)
	LEAQ (DI)(R8*2), BX
` + f32sReduce(4, "BX", "(BX)(R8*1)") + `	VMOVUPS X11, (DX)
	VEXTRACTF128 $1, Y11, X12
	VMOVUPS X12, (DX)(AX*1)
	LEAQ (DI)(R8*4), DI
	LEAQ (R9)(AX*4), R9
	SUBQ $4, R10
	JNZ  f32s_quad
	JMP  f32s_done

f32s_pair:
	CMPQ R10, $1
	JNE  f32s_two
	XORQ R8, R8                // odd last row: b reads a again
f32s_two:
` + f32sZero(4) + `	MOVQ DI, BX
	LEAQ (DI)(R8*1), R15
	MOVQ SI, CX
	MOVQ R11, R12
f32s_grp:
	PREFETCHT0 PFDISTZ(BX)
	PREFETCHT0 PFDISTZ(R15)
` + f32sDec("(BX)", "(R15)", 16, 8))
	for k := 0; k < 4; k++ {
		for h := 0; h < 4; h++ {
			fmt.Fprintf(&b, "\tVFMADD231PS %d(CX), Z%d, Z%d\n", 64*(4*k+h), 8+k, h)
		}
	}
	b.WriteString(`	ADDQ $32, BX
	ADDQ $32, R15
	ADDQ $1024, CX
	DECQ R12
	JNZ  f32s_grp
` + f32sReduce(0, "DI", "(DI)(R8*1)") + `	VMOVUPS X11, (R9)
	CMPQ R10, $1
	JEQ  f32s_done
	VEXTRACTF128 $1, Y11, X12
	MOVQ ostride+48(FP), AX
	VMOVUPS X12, (R9)(AX*1)
	LEAQ (DI)(R8*2), DI
	LEAQ (R9)(AX*2), R9
	SUBQ $2, R10
	JNZ  f32s_pair

f32s_done:
	VZEROUPPER
	RET
`)
	return b.String()
}

// fp8PackF32Text writes fp8PackF32, multiScoresFP8F32's query packer, and its indices: per
// query and 32-value group, the group's two vectors (values 0–15, 16–31) and one VPERMI2PS
// for each of the kernel's four vectors.
func fp8PackF32Text() string {
	var b strings.Builder
	for k := 0; k < 4; k++ {
		var idx [16]uint32
		for l := 0; l < 4; l++ {
			for i := 0; i < 4; i++ {
				idx[4*l+i] = uint32(16*(l&1) + 8*(k>>1) + k&1 + 2*i)
			}
		}
		for i := 0; i < 16; i += 2 {
			fmt.Fprintf(&b, "DATA ·fp8F32Pack+%d(SB)/8, $0x%08x%08x\n", 64*k+4*i, idx[i+1], idx[i])
		}
	}
	b.WriteString(`GLOBL ·fp8F32Pack(SB), RODATA|NOPTR, $256

// func fp8PackF32(dst, q *float32, d, nv int)
// Writes the first nv values (nv a positive multiple of 32) of the four queries q[h·d:] into
// dst (8·nv floats) as multiScoresFP8F32 takes them: per 32-value group g, vector k and query
// h, the 16 floats at dst[((4g + k)·4 + h)·16:] hold in dword i of 128-bit lane L the query's
// value 32g + 16(L&1) + 8(k>>1) + 2i + (k&1) (lanes 2 and 3 repeat lanes 0 and 1).
TEXT ·fp8PackF32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ d+16(FP), DX
	SHLQ $2, DX                // bytes between queries
	LEAQ (DX)(DX*2), R10
	MOVQ nv+24(FP), CX
	SHRQ $5, CX                // groups
	VMOVDQU64 ·fp8F32Pack+0(SB), Z4
	VMOVDQU64 ·fp8F32Pack+64(SB), Z5
	VMOVDQU64 ·fp8F32Pack+128(SB), Z6
	VMOVDQU64 ·fp8F32Pack+192(SB), Z7
f32p_grp:
`)
	for h, a := range []string{"(SI)", "(SI)(DX*1)", "(SI)(DX*2)", "(SI)(R10*1)"} {
		fmt.Fprintf(&b, "\tVMOVUPS %s, Z0\n\tVMOVUPS 64%s, Z1\n", a, a)
		for k := 0; k < 4; k++ {
			fmt.Fprintf(&b, "\tVMOVDQA64 Z%d, Z2\n\tVPERMI2PS Z1, Z0, Z2\n\tVMOVUPS Z2, %d(DI)\n", 4+k, 64*(4*k+h))
		}
	}
	b.WriteString(`	ADDQ $128, SI
	ADDQ $1024, DI
	DECQ CX
	JNZ  f32p_grp
	VZEROUPPER
	RET
`)
	return b.String()
}

// f32sZero zeroes Z0..Z(n-1).
func f32sZero(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\tVPXORD Z%d, Z%d, Z%d\n", i, i, i)
	}
	return b.String()
}

// f32sDec decodes a row pair's 32-value group (row a's codes at a, row b's at bb) through
// Z(t)..Z(t+2) into the floats Z(v)..Z(v+3): 128-bit lanes 0 and 1 row a's, 2 and 3 row b's,
// dword i of lane L in vector k value 16(L&1) + 8(k>>1) + 2i + (k&1) of its row's group
// (VPSLLD 16 takes a word pair's first bf16 to a float, VPANDD with the high words its second).
func f32sDec(a, bb string, t, v int) string {
	return fmt.Sprintf(`	VMOVDQU32 %[1]s, Y%[3]d
	VINSERTI64X4 $1, %[2]s, Z%[3]d, Z%[3]d
	VMOVDQA64 Z%[3]d, Z%[4]d
	FP8BF16DEC(Z%[3]d, Z%[4]d, Z%[5]d)
	VPSLLD $16, Z%[5]d, Z%[6]d
	VPANDD Z29, Z%[5]d, Z%[7]d
	VPSLLD $16, Z%[3]d, Z%[8]d
	VPANDD Z29, Z%[3]d, Z%[9]d
`, a, bb, t, t+1, t+2, v, v+1, v+2, v+3)
}

// f32sReduce sums each of the accumulators Z(a)..Z(a+3) (query h's in Z(a+h), row a's
// products in 128-bit lanes 0 and 1, row b's in 2 and 3) into Y11, [a0 a1 a2 a3 b0 b1 b2 b3]
// times the rows' scales (row a at ra, row b at the address rb; R14 the scale's offset), with
// Z8..Z13 as scratch.
func f32sReduce(a int, ra, rb string) string {
	return fmt.Sprintf(`	VSHUFF32X4 $0x88, Z%[2]d, Z%[1]d, Z8
	VSHUFF32X4 $0xDD, Z%[2]d, Z%[1]d, Z9
	VADDPS Z9, Z8, Z8          // lanes: q0 a, q0 b, q1 a, q1 b (four floats each)
	VSHUFF32X4 $0x88, Z%[4]d, Z%[3]d, Z9
	VSHUFF32X4 $0xDD, Z%[4]d, Z%[3]d, Z10
	VADDPS Z10, Z9, Z9         // lanes: q2 a, q2 b, q3 a, q3 b
	VSHUFPS $0x88, Z9, Z8, Z10
	VSHUFPS $0xDD, Z9, Z8, Z11
	VADDPS Z11, Z10, Z10
	VSHUFPS $0x88, Z10, Z10, Z11
	VSHUFPS $0xDD, Z10, Z10, Z12
	VADDPS Z12, Z11, Z11       // lane L: dword 0 Z8's lane L summed, dword 1 Z9's
	VPERMPS Z11, Z30, Z11      // [a0 a1 a2 a3 b0 b1 b2 b3 …]
	VBROADCASTSS (%[5]s)(R14*1), X12
	LEAQ %[6]s, R13
	VBROADCASTSS (R13)(R14*1), X13
	VINSERTF128 $1, X13, Y12, Y12
	VMULPS Y12, Y11, Y11
`, a, a+1, a+2, a+3, ra, rb)
}

// fp8ScoresAMXText is multiScoresFP8AMX (multi_fp8amx_amd64.go): fp8 scores of four queries
// over rows of 128 values through AMX (TDPBF16PS), on Intel CPUs with AMX-BF16 (Sapphire Rapids
// and later). The Go assembler has no AMX mnemonics, so the tile instructions are BYTE
// encodings (VEX, Intel SDM): LDTILECFG, TILERELEASE, TILEZERO, TILELOADD, TILESTORED and
// TDPBF16PS. Per call: the tile configuration (fp8AMXCfg: C tiles tmm0 and tmm2 16 rows of 4
// floats, A tiles tmm1 and tmm3 16 rows of 32 bf16, B tiles tmm4..7 16 rows of 8 bf16), the
// four B tiles (the queries rounded to bf16, packed by fp8PackAMX: chunk c, pair row p, query
// h: the bf16 pair of values v(c, 2p), v(c, 2p+1), each finite nonzero word 2ᵏ times its
// value, k = 120 unless the queries reach 2⁸), then per loop two blocks of 16 rows: each row's
// 128 codes decoded by FP8AFF (two VGF2P8AFFINEQB and the interleave a 64-code half: the bf16
// of 2⁻¹²⁰ times each value) and stored as four A chunks (buf + 1024c + 64r: chunk c word j is value v(c, j) = 64(c>>1) + 16(j>>3) +
// 8(c&1) + (j&7)), the first block's four TILELOADD/TDPBF16PS into tmm0 issued before the
// second block's decode (into buf + 4096, tmm2), so that the tile unit works beside the vector
// decode; the C tiles stored to cbuf (buf + 8192) and each row's four sums times 2¹²⁰⁻ᵏ (exact)
// times its scale plus offs written to out. So the products and sums are those of the table
// decode (FP8BF16DEC, as the bf16 kernels decode) bit for bit, but for the subnormal codes
// (exponent 0, |x| < 2⁻⁶·scale, below 1/28672 of the largest a row holds), whose words are bf16
// subnormals that TDPBF16PS takes as zero, and the NaN codes, which read as finite values
// (TestFP8AMXSubnormals). Against the table decode (Intel Xeon, 2 vCPUs, load ~6–8, thread CPU,
// min; TestFP8F32Speed, 4096 rows of 128, four queries) 4.63–4.76 ns a row in cache against
// 5.70–5.79, streamed 7.69–8.40 against 9.36–9.37; in attention's decode (TestDecodeBreakdown,
// 131072 cells, three alternations, load ~6) scores 9.08–10.32 against 10.60–11.00. The exact variant (the
// table path for chunks with exponent-0 codes, a check of two operations a chunk) was measured
// for the VDPBF16PS kernel (fp8ScoresF32's comment), not here. Prefetch distances against
// PFDISTZ, PFDISTZ2 (6144, 16896; attention's decode, three alternations, load ~14): 2048,
// 33792 scores 10.31–11.13 against 10.79–11.17; 3072, 16896 10.07–11.40: noise; PREFETCHT1 at
// PFDISTZ too (no L2 prefetch further on) 11.58–12.84 against 10.83–11.75, both at 2048
// 12.64–12.91. Nor did scaling each 32 rows' sums after the next block's first 16 rows (so
// that the scale loop's loads of the C tiles wait less on their TILESTORED; bit for bit):
// TestFP8F32Speed in cache 4.64–4.99 against 4.65–4.82, streamed 9.54–10.54 against
// 10.03–10.64. Nor two streams (each loop's first 16 rows from the call's first half, its
// second 16 from the second half, as the f16 scores on Intel take them; bit for bit):
// TestFP8F32Speed streamed 10.85–11.09 against 10.57–11.11, attention's decode scores
// 11.14–12.04 against 9.51–12.03 (load ~14): its rows already stream one after the other. A row's sums are the same wherever it sits (each C row is its A row
// times B), so the caller may split the rows anyhow (it passes m a multiple of 32; a shorter
// rest goes through a zero-padded copy). TILERELEASE at the end: every call configures its
// tiles itself (a goroutine may move to another thread between calls).
//
// Where the scores are 16 bytes apart (four queries, ostride 16: attention's decode), each 32
// rows' are scaled as eight vectors of four rows (famx_vscale, fp8AMXVScale: the scales
// gathered, the same products and sums bit for bit) in place of 32 trips of the row loop
// (famx_scale, ~10 instructions a row): rows in L2 (4096 rows of 128, four queries, thread CPU,
// min/median of 300 calls, load ~5, main's kernel in the same run) 4.66/4.81 ns a row against
// 5.06/5.09 and 4.36/4.43 against 4.74/4.83; streamed the same (~11.3, waiting on memory).
//
// fp8's values take the tiles the same way: fp8AccAMX (its prototype's and its figures there).
var fp8ScoresAMXText = `
// fp8AMXCfg is multiScoresFP8AMX's tile configuration (palette 1; bytes per row of tiles 0..7
// at 16, rows at 48).
DATA ·fp8AMXCfg+0(SB)/8, $0x0000000000000001
DATA ·fp8AMXCfg+8(SB)/8, $0
DATA ·fp8AMXCfg+16(SB)/8, $0x0040001000400010
DATA ·fp8AMXCfg+24(SB)/8, $0x0010001000100010
DATA ·fp8AMXCfg+32(SB)/8, $0
DATA ·fp8AMXCfg+40(SB)/8, $0
DATA ·fp8AMXCfg+48(SB)/8, $0x1010101010101010
DATA ·fp8AMXCfg+56(SB)/8, $0
GLOBL ·fp8AMXCfg(SB), RODATA|NOPTR, $64

// TDPBF16PS tmm(d), tmm(a), tmm(b): C(d) += A(a)·B(b) (VEX.128.F3.0F38.W0 5C).
#define AMXTDP(d, a, b) BYTE $0xC4; BYTE $0xE2; BYTE $(((15-(b))&15)<<3 | 2); BYTE $0x5C; BYTE $(0xC0 | (d)<<3 | (a))
// TILELOADD tmm(t), disp(base)(index*1) (VEX.128.F2.0F38.W0 4B) and TILESTORED
// disp(base)(index*1), tmm(t) (VEX.128.F3.0F38.W0 4B), base and index AX, CX, DX, BX, SI or
// DI (0..3, 6, 7).
#define AMXLD(t, base, index, disp) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $(0x84 | (t)<<3); BYTE $((index)<<3 | (base)); LONG $(disp)
#define AMXST(t, base, index, disp) BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $(0x84 | (t)<<3); BYTE $((index)<<3 | (base)); LONG $(disp)
// TILELOADD tmm(t), disp(DI)(DX*1); TILELOADD tmm(t), disp(BX)(DX*1); TILESTORED
// disp(CX)(AX*1), tmm(t).
#define AMXLOADDI(t, disp) AMXLD(t, 7, 2, disp)
#define AMXLOADBX(t, disp) AMXLD(t, 3, 2, disp)
#define AMXSTORECX(t, disp) AMXST(t, 1, 0, disp)
// TILEZERO tmm(t) (VEX.128.F2.0F38.W0 49 11:rrr:000).
#define AMXZERO(t) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $(0xC0 | (t)<<3)
// LDTILECFG (BX) (VEX.128.NP.0F38.W0 49 /0) and TILERELEASE (VEX.128.NP.0F38.W0 49 C0).
#define AMXCFGBX BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x03
#define AMXRELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0

// fp8AffHi and fp8AffLo are VGF2P8AFFINEQB's matrices that take an e4m3 code sEEEEmmm to the
// high byte s0000EEE and the low byte Emmm0000 of the bf16 of 2⁻¹²⁰ times its value.
DATA ·fp8AffHi+0(SB)/8, $0x1020400000000080
GLOBL ·fp8AffHi(SB), RODATA|NOPTR, $8
DATA ·fp8AffLo+0(SB)/8, $0x0000000001020408
GLOBL ·fp8AffLo(SB), RODATA|NOPTR, $8

// FP8AFF turns the 64 codes in Z(a) into the bf16 words of 2⁻¹²⁰ times codes 0–7, 16–23,
// 32–39, 48–55 in Z(l) and of the others in Z(a) (Z(b) scratch; the matrices in Z24 and Z25),
// FP8BF16DEC's layout: exact for zero and the normal codes; a subnormal code's word is a bf16
// subnormal, which TDPBF16PS takes as zero, and NaN's (0x7f, 0xff) a finite 1.875·2⁻¹¹².
#define FP8AFF(a, b, l) \
	VGF2P8AFFINEQB $0, Z25, a, b; \
	VGF2P8AFFINEQB $0, Z24, a, a; \
	VPUNPCKLBW a, b, l; \
	VPUNPCKHBW a, b, a

// fp8AffTabs loads FP8AFF's matrices.
#define fp8AffTabs \
	VPBROADCASTQ ·fp8AffHi(SB), Z24; \
	VPBROADCASTQ ·fp8AffLo(SB), Z25

// AMXDEC decodes the row at BX into the A chunks at R12 (+1024 a chunk).
#define AMXDEC \
	VMOVDQU64 (BX), Z16; \
	FP8AFF(Z16, Z17, Z18); \
	VMOVDQU64 Z18, (R12); \
	VMOVDQU64 Z16, 1024(R12); \
	VMOVDQU64 64(BX), Z19; \
	FP8AFF(Z19, Z20, Z21); \
	VMOVDQU64 Z21, 2048(R12); \
	VMOVDQU64 Z19, 3072(R12)

// AMXROW is AMXDEC prefetching two lines R11 bytes on into L1 and AX bytes on into L2.
#define AMXROW \
	PREFETCHT0 (BX)(R11*1); \
	PREFETCHT0 64(BX)(R11*1); \
	PREFETCHT1 (BX)(AX*1); \
	PREFETCHT1 64(BX)(AX*1); \
	AMXDEC

// func multiScoresFP8AMX(bt *uint16, rows *byte, rb, m int, out *float32, ostride, so int, offs *float32, buf *byte, pf, pf2 int)
// fp8 scores of four queries packed by fp8PackAMX (bf16, 1 KiB) over the m rows (m a positive
// multiple of 32) of 128 values at rows (rb bytes apart, the row scale so bytes into a row):
// query h's score of row j, its sum times offs[4] (fp8PackAMX's factor) times the scale plus
// offs[h], at out + j·ostride + 4h; buf is 8704 bytes of scratch, 64-byte aligned. Each row prefetches its first two lines' pf
// bytes on into L1 and pf2 bytes on into L2 (PFDISTZ and PFDISTZ2 over contiguous rows; over
// a paged cache's runs the next run and the one after). The tiles must be permitted
// (amxPermit).
TEXT ·multiScoresFP8AMX(SB), NOSPLIT, $0-88
` + fp8AMXEntry + `	MOVQ ostride+40(FP), R15
	MOVQ so+48(FP), R14
	MOVQ offs+56(FP), AX
	VBROADCASTF32X4 (AX), Z2   // the offsets, four times
	MOVQ buf+64(FP), DI
	LEAQ 8192(DI), CX          // the C tiles
	VBROADCASTSS 16(AX), Z3    // the sums' factor
` + fp8AMXVScaleSetup + `	MOVQ pf+72(FP), R11
	fp8AffTabs
	MOVQ $64, DX
	MOVQ pf2+80(FP), AX
` + fp8AMXBlock("famx", "AMXROW", "") + `	MOVQ $16, AX               // the C tiles' stride
	AMXSTORECX(0, 0)
	AMXSTORECX(2, 256)
	MOVQ pf2+80(FP), AX
	CMPQ R15, $16
	JEQ  famx_vscale
	MOVQ SI, BX
	XORQ R13, R13
famx_scale:
	VMULPS (CX)(R13*1), X3, X4  // exact: a power of two
	VBROADCASTSS (BX)(R14*1), X1
	VMULPS X4, X1, X1
	VADDPS X2, X1, X1
	VMOVUPS X1, (R9)
	ADDQ R8, BX
	ADDQ R15, R9
	ADDQ $16, R13
	CMPQ R13, $512
	JNE  famx_scale
	MOVQ BX, SI
famx_next:
	SUBQ $32, R10
	JNZ  famx_blk
	AMXRELEASE
	VZEROUPPER
	RET
famx_vscale:                   // scores 16 bytes apart: 32 rows' in eight vectors
	LEAQ (SI)(R14*1), BX
	KXNORW K1, K1, K1
	VGATHERDPS (BX)(Z22*1), K1, Z5
	MOVQ R8, R13
	SHLQ $4, R13
	ADDQ R13, BX
	KXNORW K1, K1, K1
	VGATHERDPS (BX)(Z22*1), K1, Z6
` + fp8AMXVScale(0, "(R9)", 256, "(R9)") + `	ADDQ $512, R9
	ADDQ R13, BX
	SUBQ R14, BX
	MOVQ BX, SI
	JMP  famx_next
`

// fp8ScoresAMX2Text is multiScoresFP8AMX2 (multi_fp8amx_amd64.go): multiScoresFP8AMX's scores
// where they are 16 bytes apart (famx_vscale's), each loop's first 16 rows from the call's
// first half and its second 16 from its second half (two streams of rows, each ascending), each
// row prefetching the lines at 64 and 131 bytes into it pf bytes on (its own stream) into L1
// only (AMXROWT0: 32 of every 33 lines of the stream, the one left out named in fp8AccAMXAText's
// comment; no L2 prefetch), the lesson of the Intel two-stream
// scores kernels (hdrIntel, multiScoresF16Split). The same scores bit for bit (each C row is
// its A row times B; the outputs' hash over 3 seeds, 7 row counts and 5 query counts unchanged).
// Against multiScoresFP8AMX (Intel Xeon, 2 vCPUs shared; attention's decode,
// TestDecodeBreakdown, fp8, 131072 cells, one thread, thread CPU, the kernels switched in one
// test binary, alternated, median/min of the rounds, ns a row): scores 10.53/10.08 against
// 11.18/10.73 (12 rounds, load ~7), 10.68/10.03 against 11.32/10.43 (6 rounds); a scratch loop
// over 207 MB of rows (scores only, min of three passes) 9.34 and 10.05 against 10.82 and 10.87.
// The L1 distance (three runs of 10 rounds, load 9–11): 1536, 2048, 3072 and 4096 bytes
// 10.46, 10.74, 10.53 and 10.68 (medians), 2048 and 3072 10.56 and 10.07 in another: noise;
// 3072 kept. The one-stream kernel with no L2 prefetch and its L1 one 2 KiB on streamed as it
// does with both (10.2–11.5 against 10.7–11.3), 4 KiB on slower (12.0–13.1): one stream of
// rows needs the far prefetches, two do not; nor did the one-stream kernel gain from
// prefetching the lines at 64 and 131 bytes into each row in place of 0 and 64 (10.7–11.1
// against 10.8–11.3). The two-stream kernel streams near its loads' own speed (that loop,
// three runs, load ~10): its loads and prefetches alone 8.7–9.5 ns a row, the kernel 9.6–9.9,
// without its TDPBF16PS the same. Calls of fewer than twoStreamRows rows, and other strides,
// take multiScoresFP8AMX.
var fp8ScoresAMX2Text = `
// AMXROWT0 is AMXROW prefetching the lines at 64 and 131 bytes into the row R11 bytes on into
// L1 only: 32 of the 33 lines of every 16 rows, the one left out, where the rows start on a
// line, the first line of every 16th row (the row that starts on it).
#define AMXROWT0 \
	PREFETCHT0 64(BX)(R11*1); \
	PREFETCHT0 131(BX)(R11*1); \
	AMXDEC

// func multiScoresFP8AMX2(bt *uint16, rows *byte, rb, m int, out *float32, so int, offs *float32, buf *byte, pf int)
// multiScoresFP8AMX's contract with the scores 16 bytes apart (out + 16j) and m a positive
// multiple of 32: rows j and m/2 + j in the same loop (two streams), each row prefetching two
// lines pf bytes on into L1.
TEXT ·multiScoresFP8AMX2(SB), NOSPLIT, $0-72
` + fp8AMXEntry + `	MOVQ so+40(FP), R14
	MOVQ offs+48(FP), AX
	VBROADCASTF32X4 (AX), Z2   // the offsets, four times
	VBROADCASTSS 16(AX), Z3    // the sums' factor
	MOVQ buf+56(FP), DI
	LEAQ 8192(DI), CX          // the C tiles
` + fp8AMXVScaleSetup + `	MOVQ pf+64(FP), R11
	fp8AffTabs
	MOVQ R10, AX
	SHRQ $1, AX
	MOVQ AX, R15
	SHLQ $4, R15               // the second half's scores, bytes on
	IMULQ R8, AX               // the second half's rows, bytes on
	MOVQ $64, DX
` + fp8AMXBlock("famx2", "AMXROWT0", "\tLEAQ (SI)(AX*1), BX\n") + `	MOVQ $16, DX               // the C tiles' stride
	AMXST(0, 1, 2, 0)          // (CX)(DX*1)
	AMXST(2, 1, 2, 256)
	MOVQ $64, DX
	LEAQ (SI)(R14*1), BX
	KXNORW K1, K1, K1
	VGATHERDPS (BX)(Z22*1), K1, Z5
	ADDQ AX, BX
	KXNORW K1, K1, K1
	VGATHERDPS (BX)(Z22*1), K1, Z6
` + fp8AMXVScale(0, "(R9)", 0, "(R9)(R15*1)") + `	ADDQ $256, R9
	MOVQ R8, BX
	SHLQ $4, BX
	ADDQ BX, SI
	SUBQ $32, R10
	JNZ  famx2_blk
	AMXRELEASE
	VZEROUPPER
	RET
`

// fp8AMXVScaleSetup loads fp8AMXVScale's constants: the row offsets 0, rb, … 15·rb (Z22) and
// the VPERMPS indices that repeat four rows' scales four times each (Z26..Z29).
const fp8AMXVScaleSetup = `	VMOVDQU32 ·fp8AMXIota(SB), Z9
	VPBROADCASTD R8, Z22
	VPMULLD Z9, Z22, Z22       // row offsets
	VPSRLD $2, Z9, Z26         // 0 0 0 0 1 1 1 1 …: four rows' scales, each four times
	MOVL $4, AX
	VPBROADCASTD AX, Z9
	VPADDD Z9, Z26, Z27
	VPADDD Z9, Z27, Z28
	VPADDD Z9, Z28, Z29
`

// fp8AMXEntry starts multiScoresFP8AMX and multiScoresFP8AMX2: their tile configuration, the
// queries' B tiles (tmm4..7) from bt, and rows, rb, m and out in SI, R8, R10 and R9.
const fp8AMXEntry = `	LEAQ ·fp8AMXCfg(SB), BX
	AMXCFGBX
	MOVQ bt+0(FP), BX
	MOVQ $16, DX
	AMXLOADBX(4, 0)
	AMXLOADBX(5, 256)
	AMXLOADBX(6, 512)
	AMXLOADBX(7, 768)
	MOVQ rows+8(FP), SI
	MOVQ rb+16(FP), R8
	MOVQ m+24(FP), R10
	MOVQ out+32(FP), R9
`

// fp8AMXBlock is the loop body (label+"_blk") of multiScoresFP8AMX and multiScoresFP8AMX2 up to
// their C tiles: 16 rows from SI decoded by row (the AMXROW macro or a flavour of it) into the
// A chunks at DI, their sums in tmm0; then 16 more, from where the first 16 ended, or from where
// second (an instruction or none) sets BX, into the A chunks at DI + 4096, their sums in tmm2 (A
// chunks through tmm1 and tmm3 in turn, DX 64; the B tiles in tmm4..7).
func fp8AMXBlock(label, row, second string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s_blk:\n\tMOVQ SI, BX\n", label)
	for c := 0; c < 2; c++ {
		if c == 0 {
			b.WriteString("\tMOVQ DI, R12\n")
		} else {
			fmt.Fprintf(&b, "%s\tLEAQ 4096(DI), R12\n", second)
		}
		fmt.Fprintf(&b, `	MOVQ $16, R13
%[1]s_row%[2]d:
	%[3]s
	ADDQ R8, BX
	ADDQ $64, R12
	DECQ R13
	JNZ  %[1]s_row%[2]d
	AMXZERO(%[4]d)
`, label, c+1, row, 2*c)
		for k := 0; k < 4; k++ {
			fmt.Fprintf(&b, "\tAMXLOADDI(%d, %d)\n\tAMXTDP(%d, %d, %d)\n", 1+2*(k%2), 4096*c+1024*k, 2*c, 1+2*(k%2), 4+k)
		}
	}
	return b.String()
}

// fp8AMXVScale writes the scores of two blocks of 16 rows, whose C tiles TILESTORED left at
// CX (16 bytes a row) and whose scales VGATHERDPS left in Z5 and Z6, to ao bytes past the
// address a and bo past b (16 bytes a row): four rows a vector, each sum times the factor (Z3,
// exact) times its scale plus the offsets (Z2), as famx_scale takes them one row at a time
// (the same products and sums bit for bit), Z7 and Z8 scratch.
func fp8AMXVScale(ao int, a string, bo int, b string) string {
	var s strings.Builder
	for k := 0; k < 8; k++ {
		o, dst := ao+64*k, a
		if k >= 4 {
			o, dst = bo+64*(k-4), b
		}
		fmt.Fprintf(&s, `	VPERMPS Z%d, Z%d, Z7
	VMULPS %d(CX), Z3, Z8      // exact: a power of two
	VMULPS Z8, Z7, Z8
	VADDPS Z2, Z8, Z8
	VMOVUPS Z8, %d%s
`, 5+k/4, 26+k%4, 64*k, o, dst)
	}
	return s.String()
}

// fp8AccAMX is multiAccFP8AMX (multi_fp8amx_amd64.go): fp8 values of four accumulators over
// rows of 128 values through AMX (TDPBF16PS), on Intel CPUs with AMX-BF16. The accumulators are
// kept in scratch as eight C tiles' worth (cscr, buf + 0: per pass p of 64 values and tile t,
// 4 rows of 16 floats at 1024p + 256t + 64h), their 128-bit chunks transposed on entry and
// back on exit (accT), because a row pair's 64 decoded codes (FP8BF16DEC) interleaved by
// VPUNPCKLWD and VPUNPCKHWD (the B tiles' VNNI pairs: row 2q's word, then row 2q+1's) put
// values 16L + 4t + k (L the 128-bit lane, k < 4) in B tile t's columns 4L + k. Per
// super-block of up to 128 rows (both passes while its rows are in cache): the A tiles (per
// 32 rows, 4 rows of 32 bf16: row h's word k is w[k][h]·scale_k rounded to bf16 by
// VCVTNEPS2BF16, as multiAccFP8BF16 rounds it; the weights and scales gathered) at buf +
// 2048 + 256b, then per pass the four C tiles loaded (tmm0..3), per 32 rows 16 row pairs
// decoded into four B chunks (buf + 3072 + 4096(b&1) + 1024t + 64q) and four TDPBF16PS (A in
// tmm4 or tmm7 by the block's parity, B in tmm5 and tmm6 in turn), the C tiles stored.
//
// A first scratch prototype (the weights' packing left out; 4096 rows of 128, four queries,
// 3 runs, load ~15, thread CPU, min) took 7.35–7.65 ns a row in cache against
// multiAccFP8VBMI's 11.16–11.64, streamed 10.6–16.9 against 13.7–16.9; one that made each pass
// one sweep over all the rows read them twice from memory (streamed 13.7–14.2 against
// 12.7–14.0), hence the super-blocks. This kernel (Intel Xeon, family 6 model 167, 2 vCPUs,
// load ~1.9, TestFP8F32Speed, thread CPU, min/median): in cache 6.65/6.73 ns a row against
// 9.54/10.42, streamed 12.33/13.50 against 13.00/13.80. In attention's decode (native/attn
// TestDecodeBreakdown, fp8, the scores already on AMX, test binaries alternated three times,
// load ~3.6, min) values 14.19–15.64 ns a row against 14.21–15.65: there both are waiting on
// memory (~9.4 GB/s for 132-byte rows while f16's values read ~17), in cache (KVLAB_TOUCH=kv)
// 8.50–8.67 against 10.90–11.30. The prefetch distances (L1, L2; TestDecodeBreakdown, load
// ~3.2, values min over 2–3 runs): 128 and 256 rows on (amxAccPF) 13.59–14.31; 64 and 256
// 14.67–14.71; 128 and 384 13.76–15.07; 256 and 512 14.13–15.39; 32 and 128 15.13–20.58;
// 128 and 128 15.95–22.73; 16 and 16 22.43–22.83; none 23.49–24.31. Both lines of a row
// from pass 0 into L1 and from pass 1 into L2 (in place of each pass's own line into both; the
// same count): 16.77–17.12 against 15.45–15.66 (three alternations, load ~3.3). Paged (native/kvcache
// TestPagedBreakdown, fp8, two alternations, load ~3.3): paged values 3.74–3.91 ms against
// 4.77–4.84, contiguous 3.81–3.96 against 3.99–4.17.
func fp8AccAMX() string {
	var b strings.Builder
	b.WriteString(`
// fp8AMXAccCfg is multiAccFP8AMX's tile configuration: tmm0..4 and tmm7 4 rows of 64 bytes
// (C tiles, A tiles), tmm5 and tmm6 16 rows of 64 bytes (B tiles).
DATA ·fp8AMXAccCfg+0(SB)/8, $0x0000000000000001
DATA ·fp8AMXAccCfg+8(SB)/8, $0
DATA ·fp8AMXAccCfg+16(SB)/8, $0x0040004000400040
DATA ·fp8AMXAccCfg+24(SB)/8, $0x0040004000400040
DATA ·fp8AMXAccCfg+32(SB)/8, $0
DATA ·fp8AMXAccCfg+40(SB)/8, $0
DATA ·fp8AMXAccCfg+48(SB)/8, $0x0410100404040404
DATA ·fp8AMXAccCfg+56(SB)/8, $0
GLOBL ·fp8AMXAccCfg(SB), RODATA|NOPTR, $64

// fp8AMXIota is 0..15 as int32.
DATA ·fp8AMXIota+0(SB)/8, $0x0000000100000000
DATA ·fp8AMXIota+8(SB)/8, $0x0000000300000002
DATA ·fp8AMXIota+16(SB)/8, $0x0000000500000004
DATA ·fp8AMXIota+24(SB)/8, $0x0000000700000006
DATA ·fp8AMXIota+32(SB)/8, $0x0000000900000008
DATA ·fp8AMXIota+40(SB)/8, $0x0000000b0000000a
DATA ·fp8AMXIota+48(SB)/8, $0x0000000d0000000c
DATA ·fp8AMXIota+56(SB)/8, $0x0000000f0000000e
GLOBL ·fp8AMXIota(SB), RODATA|NOPTR, $64

// fp8AffWords are the words multiAccFP8AMXA's weights take: the bf16 exponent field's mask,
// 120 in that field, the magnitude's mask and the largest magnitude whose exponent field 120
// may be added to (134).
DATA ·fp8AffWords+0(SB)/4, $0x7f807f80
DATA ·fp8AffWords+4(SB)/4, $0x3c003c00
DATA ·fp8AffWords+8(SB)/4, $0x7fff7fff
DATA ·fp8AffWords+12(SB)/4, $0x437f437f
GLOBL ·fp8AffWords(SB), RODATA|NOPTR, $16

// fp8AffW4Idx are VPERMI2PS's indices that take, from the weights of rows 0–3 and 4–7 (four
// queries a row), queries 0 and 1 (rows 0–7 each), then queries 2 and 3.
DATA ·fp8AffW4Idx+0(SB)/8, $0x0000000400000000
DATA ·fp8AffW4Idx+8(SB)/8, $0x0000000c00000008
DATA ·fp8AffW4Idx+16(SB)/8, $0x0000001400000010
DATA ·fp8AffW4Idx+24(SB)/8, $0x0000001c00000018
DATA ·fp8AffW4Idx+32(SB)/8, $0x0000000500000001
DATA ·fp8AffW4Idx+40(SB)/8, $0x0000000d00000009
DATA ·fp8AffW4Idx+48(SB)/8, $0x0000001500000011
DATA ·fp8AffW4Idx+56(SB)/8, $0x0000001d00000019
DATA ·fp8AffW4Idx+64(SB)/8, $0x0000000600000002
DATA ·fp8AffW4Idx+72(SB)/8, $0x0000000e0000000a
DATA ·fp8AffW4Idx+80(SB)/8, $0x0000001600000012
DATA ·fp8AffW4Idx+88(SB)/8, $0x0000001e0000001a
DATA ·fp8AffW4Idx+96(SB)/8, $0x0000000700000003
DATA ·fp8AffW4Idx+104(SB)/8, $0x0000000f0000000b
DATA ·fp8AffW4Idx+112(SB)/8, $0x0000001700000013
DATA ·fp8AffW4Idx+120(SB)/8, $0x0000001f0000001b
GLOBL ·fp8AffW4Idx(SB), RODATA|NOPTR, $128

// func multiAccFP8AMX(acc *float32, as int, rows *byte, rb, m int, w *float32, wstride int, buf *byte, pf, pf2 int)
// fp8 values (multiKernels' acc contract, nv = 128, accumulator h at acc + 4·as·h) over m
// rows (m a positive multiple of 64) with bf16 weights w·scale; buf is 11264 bytes of
// scratch, 64-byte aligned. Each row pass prefetches its 64 bytes pf bytes on into L1 and pf2
// bytes on into L2. The tiles must be permitted (amxPermit).
TEXT ·multiAccFP8AMX(SB), NOSPLIT, $0-80
	LEAQ ·fp8AMXAccCfg(SB), BX
	AMXCFGBX
	MOVQ buf+56(FP), DI
	MOVQ acc+0(FP), SI
	MOVQ as+8(FP), AX
	SHLQ $2, AX
`)
	b.WriteString(accT(false))
	b.WriteString(`	MOVQ rows+16(FP), SI
	MOVQ rb+24(FP), R8
	MOVQ m+32(FP), R10
	MOVQ w+40(FP), R9
	MOVQ wstride+48(FP), R15
	MOVQ pf+64(FP), R11
	MOVQ pf2+72(FP), R12
	VMOVDQU32 ·fp8AMXIota(SB), Z22
	VPBROADCASTD R8, Z20
	VPMULLD Z22, Z20, Z20      // row offsets
	VPBROADCASTD R15, Z21
	VPMULLD Z22, Z21, Z21      // weight offsets
` + fp8BF16Tabs + `	MOVQ $64, DX

famxa_sb:
	MOVQ R10, R13
	CMPQ R13, $128
	JLE  famxa_nb
	MOVQ $128, R13
famxa_nb:
	// the A tiles: per 16 rows the scales and each query's weights gathered
	MOVQ SI, BX
	MOVQ R9, AX
	LEAQ 2048(DI), CX
	MOVQ R13, R14
	SHRQ $4, R14
famxa_a:
	KXNORW K1, K1, K1
	VGATHERDPS 128(BX)(Z20*1), K1, Z0
`)
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, `	KXNORW K1, K1, K1
	VGATHERDPS %d(AX)(Z21*1), K1, Z1
	VMULPS Z0, Z1, Z1
	CVTBF16(1, 1)
	VMOVDQU Y1, %d(CX)
`, 4*h, 64*h)
	}
	b.WriteString(`	MOVQ R8, R15
	SHLQ $4, R15
	ADDQ R15, BX
	MOVQ wstride+48(FP), R15
	SHLQ $4, R15
	ADDQ R15, AX
	TESTQ $32, CX              // two halves of 32 bytes a tile row
	JNZ  famxa_a2
	ADDQ $32, CX
	JMP  famxa_a3
famxa_a2:
	ADDQ $224, CX
famxa_a3:
	DECQ R14
	JNZ  famxa_a
	MOVQ AX, R9                // the next super-block's weights
`)
	for p := 0; p < 2; p++ {
		fmt.Fprintf(&b, `	// pass %[1]d
`, p)
		for t := 0; t < 4; t++ {
			fmt.Fprintf(&b, "\tAMXLD(%d, 7, 2, %d)\n", t, 1024*p+256*t)
		}
		fmt.Fprintf(&b, `	MOVQ SI, BX
	LEAQ 2048(DI), AX          // the A tiles
	MOVQ R13, R14
	SHRQ $6, R14               // block pairs
famxa_p%[1]d_pair:
`, p)
		for e := 0; e < 2; e++ {
			fmt.Fprintf(&b, `	LEAQ %[3]d(DI), CX
	MOVQ $16, R15
famxa_p%[1]d_%[2]d:
	PREFETCHT0 %[4]d(BX)(R11*1)
	PREFETCHT1 %[4]d(BX)(R12*1)
	VMOVDQU64 %[4]d(BX), Z0
	VMOVDQU64 %[4]d(BX), Z1
	FP8BF16DEC(Z0, Z1, Z2)
	ADDQ R8, BX
	PREFETCHT0 %[4]d(BX)(R11*1)
	PREFETCHT1 %[4]d(BX)(R12*1)
	VMOVDQU64 %[4]d(BX), Z3
	VMOVDQU64 %[4]d(BX), Z4
	FP8BF16DEC(Z3, Z4, Z5)
	ADDQ R8, BX
	VPUNPCKLWD Z5, Z2, Z6
	VPUNPCKHWD Z5, Z2, Z7
	VPUNPCKLWD Z3, Z0, Z8
	VPUNPCKHWD Z3, Z0, Z9
	VMOVDQU64 Z6, (CX)
	VMOVDQU64 Z7, 1024(CX)
	VMOVDQU64 Z8, 2048(CX)
	VMOVDQU64 Z9, 3072(CX)
	ADDQ $64, CX
	DECQ R15
	JNZ  famxa_p%[1]d_%[2]d
	SUBQ $1024, CX
	AMXLD(%[5]d, 0, 2, 0)
	AMXLD(5, 1, 2, 0)
	AMXTDP(0, %[5]d, 5)
	AMXLD(6, 1, 2, 1024)
	AMXTDP(1, %[5]d, 6)
	AMXLD(5, 1, 2, 2048)
	AMXTDP(2, %[5]d, 5)
	AMXLD(6, 1, 2, 3072)
	AMXTDP(3, %[5]d, 6)
	ADDQ $256, AX
`, p, e, 3072+4096*e, 64*p, 4+3*e)
		}
		fmt.Fprintf(&b, `	DECQ R14
	JNZ  famxa_p%[1]d_pair
`, p)
		for t := 0; t < 4; t++ {
			fmt.Fprintf(&b, "\tAMXST(%d, 7, 2, %d)\n", t, 1024*p+256*t)
		}
	}
	b.WriteString(`	MOVQ BX, SI                // the next super-block's rows
	SUBQ R13, R10
	JNZ  famxa_sb
	MOVQ acc+0(FP), SI
	MOVQ as+8(FP), AX
	SHLQ $2, AX
`)
	b.WriteString(accT(true))
	b.WriteString(`	AMXRELEASE
	VZEROUPPER
	RET
`)
	return b.String()
}

// accT moves the four accumulators (SI, AX bytes apart) into multiAccFP8AMX's C tile scratch
// (DI) or, back, from it: per accumulator and pass the 4×4 128-bit chunks transposed.
func accT(back bool) string {
	var b strings.Builder
	for h := 0; h < 4; h++ {
		for p := 0; p < 2; p++ {
			src := func(i int) string { return fmt.Sprintf("%d(SI)", 256*p+64*i) }
			dst := func(i int) string { return fmt.Sprintf("%d(DI)", 1024*p+256*i+64*h) }
			if back {
				src, dst = dst, src
			}
			for i := 0; i < 4; i++ {
				fmt.Fprintf(&b, "\tVMOVUPS %s, Z%d\n", src(i), i)
			}
			fmt.Fprintf(&b, `	VSHUFF32X4 $0x44, Z1, Z0, Z4
	VSHUFF32X4 $0xEE, Z1, Z0, Z5
	VSHUFF32X4 $0x44, Z3, Z2, Z6
	VSHUFF32X4 $0xEE, Z3, Z2, Z7
	VSHUFF32X4 $0x88, Z6, Z4, Z0
	VSHUFF32X4 $0xDD, Z6, Z4, Z1
	VSHUFF32X4 $0x88, Z7, Z5, Z2
	VSHUFF32X4 $0xDD, Z7, Z5, Z3
`)
			for i := 0; i < 4; i++ {
				fmt.Fprintf(&b, "\tVMOVUPS Z%d, %s\n", i, dst(i))
			}
		}
		if h < 3 {
			b.WriteString("\tADDQ AX, SI\n")
		}
	}
	return b.String()
}

// fp8AccAMXAText is multiAccFP8AMXA (multi_fp8amx_amd64.go): multiAccFP8AMX's sums with the
// codes decoded by FP8AFF (2⁻¹²⁰ times their values) and each bf16 weight word's exponent field
// raised by 120 (VPTESTMW and a masked VPADDW: zeros stay zero), so that the products are
// multiAccFP8AMX's bit for bit but for the subnormal codes (bf16 subnormals, which TDPBF16PS
// takes as zero) and the NaN codes (finite); and each row read once. Per super-block of 64 rows
// (m is a multiple of 64): the A tiles as multiAccFP8AMX builds them (for wstride 16, four
// queries a row, the weights of 16 rows loaded and transposed by four VPERMI2PS and four
// VSHUFF32X4 in place of four gathers), then one sweep over the rows, each row's two 64-code
// halves decoded and both halves' B chunks stored (buf + 3072 + 8192b + 4096p + 1024t + 64q for
// block b of 32 rows, pass p), pass 0's TDPBF16PS after each block, pass 1's from the stored
// chunks after both. Where a super-block's weight words reach 2⁸ in magnitude (exponent field
// 135 or more, infinities and NaNs included: the raised field would not fit) it returns true
// before writing the accumulators, and the caller takes the rows through multiAccFP8AMX.
//
// multiAccFP8AMX's two passes over 128-row super-blocks (each pass 64 bytes of each 132-byte
// row) left the streamed rows waiting on memory: in attention's decode (TestDecodeBreakdown,
// fp8, 131072 cells, Intel Xeon, 2 vCPUs, load 5–8, thread CPU, min/median ns a row) values
// 14.5–15.3 against 7.6–8.7 with the rows touched first. Steps, each against the one before in
// the same runs: FP8AFF in those two passes 14.68–14.94 against 14.46–15.22 (no gain streamed,
// ~1 ns in cache); super-blocks of 64 rows, two passes, 12.85–13.68 against 14.88–14.91; one
// sweep 11.48–12.13 against 12.85–13.15; the weights transposed in place of gathered (in cache,
// TestFP8F32Speed, 4.91–5.24 against 5.39–6.13) 10.82–11.59. The prefetch distances of the one
// sweep (L1, L2 in rows; one run each, load ~6.5): 16, 128 12.11; 16, 512 12.47; 64, 128
// 12.03; 64, 512 12.54; 64, 64 12.08; 93, 256 11.81; 128, 256 12.0–12.1; 64, 256
// (amxAccPF) 11.48–12.0; 31, 256 11.7: within the noise, none far from the rest. Did not pay
// either (load 10–15, alternated, thread CPU): 16, 256 against 64, 256 three times 10.83–12.13
// against 11.39–12.01; one PREFETCHT1 a row (the first line) in place of two, here and in the
// scores, 12.00–13.24 against 11.92–12.48; a third line a row (+128 to the lines at 0 and 64
// then prefetched, T0 and T1, so that the one line in 33 that two lines a row leave out, the
// last line of every 16th row where the rows start on a line, is fetched too; a bare read loop
// gained 1.5 ns a row by it) 12.66–13.33 against 12.74–13.28, and in TestFP8F32Speed 10.70–11.26
// against 10.45–11.20; a runs flavour taking up to 64 whole 64-row runs a call (one tile set-up
// and accumulator transpose a call, not a run; bit for bit) over a paged cache
// (native/kvcache TestPagedBreakdown, three alternations): values in runs 3.44–3.75 ms against
// 3.45–3.69, paged 4.03–4.19 against 3.79–4.02. PREFETCHT1 at the L1 distance too (no L2
// prefetch further on): values 12.48–13.28 against 12.29–12.49; both at 16 rows 15.65–16.24.
//
// A row pair's codes are interleaved before the decode (pair): the same B chunks bit for bit
// in 10 vector operations a pair's 64 codes in place of 12 (4 VGF2P8AFFINEQB, 2 VPUNPCK*BW
// interleaving the two rows and 4 in pair; VPUNPCK, one a cycle, 6 in place of 8). Rows of
// 128 values in L2 (4096 rows, four accumulators, thread CPU, min/median over 300 calls, load
// ~5): 4.84/4.96 ns a row against 5.35/5.43 and 4.83/4.97 against 5.04/5.30;
// streamed from memory and in attention's decode the same within the noise (~12.6 and ~11.5):
// the streamed rows wait on memory.
//
// Each row prefetches into L1 the lines at 64 and 131 bytes into it and into L2 one line, not two
// (half the far L2 prefetches, which slow the core and the next phase when dense): attention's
// decode (TestDecodeBreakdown, fp8, 131072 cells, one thread, the prefetch shapes switched in
// one test binary, alternated, median/min of 10–12 rounds, load 7–11, ns a row) values
// 13.25/12.77 against 13.69/13.35 and 13.26/12.79 against 14.09/13.47, the scores after them
// 10.18 against 10.53 and 10.56 against 10.76 (medians). Not better: one L2 prefetch a row
// pair (13.57/12.86 in the first run), the L2 one 192 or 384 rows on in place of 256
// (13.44/12.98, 13.37/13.11), the L1 one 32 rows on in place of 64 (13.94/13.54). In a scratch
// loop over 207 MB of rows (values only): the L2 prefetches dropped (T0 16 or 23 rows on)
// 17.5 and 15.1–15.8 ns a row against 12.7–13.1: one stream of rows needs them. Two lines a
// row do not reach every line: 16 rows of 132 bytes span 33 lines, and any two fixed offsets
// leave one of them out. Where the rows start on a line, the lines at 64 and 131 leave out the
// first line of every 16th row (the row that starts on it; the lines at 0 and 64 left out the
// last line of the row before it); with the rows at other offsets it is still one line in 33.
// Fetching it too with a third line a row did not pay (the +128 line above).
//
// Where the streamed time goes (that scratch loop, values only, 207 MB of rows on 2 MiB pages,
// thread CPU, min of three passes, three runs, load ~10; timing variants only): the kernel
// 11.3–12.1 ns a row (4.6–5.1 in L2); its loads and prefetches alone 9.7–10.0; with the decode
// and the chunks' stores but no tile operation 10.1–10.6 (2.7–2.8 in L2); with the tile loads
// and stores but no TDPBF16PS 10.9–11.1 (3.8): the tile operations add ~1.8 ns a row streamed,
// about what they take in cache, not hidden behind the memory as the vector work is. Not
// paying (bit for bit, the TDPBF16PS order of each C tile kept): pass 0's products of a
// super-block's first 32 rows after its second 32 rows' sweep, next to theirs (the chunks'
// stores long done by their tile loads) 11.98–12.27 against 11.58–11.84 (4.35–4.77 in L2
// against 4.64–4.91); those four tile load and TDPBF16PS steps spread through the second 32
// rows' loop, one after every four row pairs, 11.84–12.00 against 11.31–11.87 (4.47–4.58
// against 4.70–4.87 in L2). Paying (bit for bit): fewer tile operations. Super-blocks take
// turns at their passes' order, so that the C tiles of one's second pass stay in the tiles for
// the next one's first (4 C tile loads and 4 stores a super-block in place of 8 and 8), and the
// second pass takes the A tiles the first left (2 tile loads fewer): 42 tile operations a
// super-block in place of 52. In L2 4.27–4.58 ns a row against 4.60–5.06 (six runs), streamed
// 11.06–11.35 against 11.02–12.10; attention's decode (TestDecodeBreakdown, alternated,
// median/min, loads 10–11) values 11.38/10.86 against 11.83/11.54 (10 rounds) and 11.29/10.70
// against 11.63/10.93 (8 rounds). With these, the prefetch distances again (same test, one
// binary, 12 rounds alternated, load ~4, values median/min): L1 64 rows on (amxAccPF)
// 11.01/10.57, 23 rows (3 KiB) 11.88/11.47, 40 rows 11.54/11.34, 96 rows 11.04/10.54; L2 384
// rows on 11.00/10.50, 192 rows 10.91/10.48, 256 rows 11.01/10.57 (the L1 64 rows' figures):
// all within the noise, 64 and 256 rows (amxAccPF, amxAccPF2) kept.
//
// Two streams of rows (as the scores take them) did not pay here (timing variants summing in
// the wrong order, the scratch loop, values only, load ~6, min of three passes): the
// super-blocks from the call's two halves in turn 10.64–11.03 ns a row against 10.53–10.61
// with the L2 prefetches, 14.5–16.1 without (L1 2, 3 or 8 KiB on); each super-block's first 32
// rows from the first half and its second 32 from the second 11.17–11.40 against 11.13–11.19
// with them, 11.54–12.49 without (L1 3 or 4 KiB on). A two-stream kernel would also sum each
// half's rows apart, changing the sums with the split, which a paged cache's runs (that must
// read the same values) would have to follow: nothing to buy with it.
func fp8AccAMXAText() string {
	var b strings.Builder
	const l = "famxf_"
	b.WriteString(`
// func multiAccFP8AMXA(acc *float32, as int, rows *byte, rb, m int, w *float32, wstride int, buf *byte, pf, pf2 int) (over bool)
// multiAccFP8AMX's contract with buf 19456 bytes of scratch; each row prefetches the lines at
// 64 and 131 bytes into it pf bytes on into L1, and one of them (64 in a pair's first row, 131
// in its second) pf2 bytes on into L2. over: the weights reached 2⁸, the accumulators are as
// they were.
TEXT ·multiAccFP8AMXA(SB), NOSPLIT, $0-81
	LEAQ ·fp8AMXAccCfg(SB), BX
	AMXCFGBX
	MOVQ buf+56(FP), DI
	MOVQ acc+0(FP), SI
	MOVQ as+8(FP), AX
	SHLQ $2, AX
`)
	b.WriteString(accT(false))
	b.WriteString(`	MOVQ rows+16(FP), SI
	MOVQ rb+24(FP), R8
	MOVQ m+32(FP), R10
	MOVQ w+40(FP), R9
	MOVQ wstride+48(FP), R15
	MOVQ pf+64(FP), R11
	MOVQ pf2+72(FP), R12
	VMOVDQU32 ·fp8AMXIota(SB), Z22
	VPBROADCASTD R8, Z20
	VPMULLD Z22, Z20, Z20      // row offsets
	VPBROADCASTD R15, Z21
	VPMULLD Z22, Z21, Z21      // weight offsets
	fp8AffTabs
	VPBROADCASTD ·fp8AffWords+0(SB), Y26
	VPBROADCASTD ·fp8AffWords+4(SB), Y27
	VPBROADCASTD ·fp8AffWords+8(SB), Y28
	VMOVDQU32 ·fp8AffW4Idx(SB), Z29
	VMOVDQU32 ·fp8AffW4Idx+64(SB), Z30
	MOVQ $64, DX
`)
	// sb writes a super-block: its weights, its sweep with pass q's products after each 32
	// rows, then pass q's C tiles stored and pass 1-q's loaded and its products (lp the labels'
	// prefix).
	sb := func(q int, lp string) {
		fmt.Fprintf(&b, `%[1]ssb:
	VPXORD Y23, Y23, Y23        // the largest weight magnitude
	MOVQ SI, BX
	MOVQ R9, AX
	LEAQ 2048(DI), CX
	MOVQ $4, R14
%[1]sa:
	KXNORW K1, K1, K1
	VGATHERDPS 128(BX)(Z20*1), K1, Z0
	CMPQ wstride+48(FP), $16
	JNE  %[1]sg
	VMOVUPS (AX), Z10          // four queries' weights of 16 rows, transposed
	VMOVUPS 128(AX), Z12
	VMOVAPS Z29, Z1
	VPERMI2PS 64(AX), Z10, Z1
	VMOVAPS Z30, Z2
	VPERMI2PS 64(AX), Z10, Z2
	VMOVAPS Z29, Z3
	VPERMI2PS 192(AX), Z12, Z3
	VMOVAPS Z30, Z4
	VPERMI2PS 192(AX), Z12, Z4
	VSHUFF32X4 $0x44, Z3, Z1, Z10
	VSHUFF32X4 $0xEE, Z3, Z1, Z11
	VSHUFF32X4 $0x44, Z4, Z2, Z12
	VSHUFF32X4 $0xEE, Z4, Z2, Z13
	JMP  %[1]sw
%[1]sg:
`, lp)
		for h := 0; h < 4; h++ {
			fmt.Fprintf(&b, `	KXNORW K1, K1, K1
	VGATHERDPS %d(AX)(Z21*1), K1, Z%d
`, 4*h, 10+h)
		}
		fmt.Fprintf(&b, "%sw:\n", lp)
		for h := 0; h < 4; h++ {
			fmt.Fprintf(&b, `	VMULPS Z0, Z%d, Z1
	CVTBF16(1, 1)
	VPANDD Y28, Y1, Y2
	VPMAXUW Y2, Y23, Y23
	VPTESTMW Y26, Y1, K2
	VPADDW Y27, Y1, K2, Y1
	VMOVDQU Y1, %d(CX)
`, 10+h, 64*h)
		}
		fmt.Fprintf(&b, `	MOVQ R8, R15
	SHLQ $4, R15
	ADDQ R15, BX
	MOVQ wstride+48(FP), R15
	SHLQ $4, R15
	ADDQ R15, AX
	TESTQ $32, CX              // two halves of 32 bytes a tile row
	JNZ  %[1]sa2
	ADDQ $32, CX
	JMP  %[1]sa3
%[1]sa2:
	ADDQ $224, CX
%[1]sa3:
	DECQ R14
	JNZ  %[1]sa
	MOVQ AX, R9                // the next super-block's weights
	VPBROADCASTD ·fp8AffWords+12(SB), Y2
	VPCMPUW $6, Y2, Y23, K2    // above 0x437f
	KORTESTW K2, K2
	JNZ  %[2]sover
`, lp, l)
		b.WriteString("\tMOVQ SI, BX\n")
		// row loads the row at BX into Z(lo) (its first 64 codes) and Z(hi) (the next 64),
		// prefetching into L1 R11 bytes on the lines at 64 and 131 bytes into the row (a 132-byte
		// row spans three lines, its first the row before's last: so 32 of every 33 lines of the
		// rows, the one left out the first line of every 16th row where the rows start on a line) and
		// into L2 R12 bytes on one line, at 64 bytes into a pair's first row and 131 into its
		// second (fp8AccAMXAText's comment).
		row := func(lo, hi int) string {
			t1 := 64
			if lo != 0 {
				t1 = 131
			}
			return fmt.Sprintf(`	PREFETCHT0 64(BX)(R11*1)
	PREFETCHT0 131(BX)(R11*1)
	PREFETCHT1 %[3]d(BX)(R12*1)
	VMOVDQU64 (BX), Z%[1]d
	VMOVDQU64 64(BX), Z%[2]d
	ADDQ R8, BX
`, lo, hi, t1)
		}
		// pair decodes Z(x), a row pair's codes interleaved (VPUNPCKLBW or VPUNPCKHBW of row 2q's
		// and row 2q+1's, 2q's first), into the B chunks' dwords of its low eight byte pairs of each
		// 128-bit lane in Z(l) and of its high eight in Z(h), Z(t) scratch: FP8AFF's two transforms
		// of the interleaved codes and their low and high bytes interleaved, so that each dword is
		// row 2q's bf16 word, then row 2q+1's: the chunks FP8AFF of each row and VPUNPCKLWD/HWD of
		// the pair gave, bit for bit. With the two VPUNPCKLBW/HBW that interleave the rows, 10
		// operations a pair's 64 codes in place of 12: two pair calls' 4 VGF2P8AFFINEQB and 4
		// VPUNPCK, and the interleave's 2 (VPUNPCK 6 in place of 8).
		pair := func(x, t, l, h int) string {
			return fmt.Sprintf(`	VGF2P8AFFINEQB $0, Z25, Z%[1]d, Z%[2]d
	VGF2P8AFFINEQB $0, Z24, Z%[1]d, Z%[1]d
	VPUNPCKLBW Z%[1]d, Z%[2]d, Z%[3]d
	VPUNPCKHBW Z%[1]d, Z%[2]d, Z%[4]d
`, x, t, l, h)
		}
		for e := 0; e < 2; e++ {
			fmt.Fprintf(&b, `	LEAQ %[3]d(DI), CX
	MOVQ $16, R15
%[1]sr%[2]d:
%[4]s%[5]s	VPUNPCKLBW Z3, Z0, Z1
	VPUNPCKHBW Z3, Z0, Z0
	VPUNPCKLBW Z13, Z10, Z11
	VPUNPCKHBW Z13, Z10, Z10
%[6]s%[7]s%[8]s%[9]s	VMOVDQU64 Z6, (CX)
	VMOVDQU64 Z7, 1024(CX)
	VMOVDQU64 Z8, 2048(CX)
	VMOVDQU64 Z9, 3072(CX)
	VMOVDQU64 Z16, 4096(CX)
	VMOVDQU64 Z17, 5120(CX)
	VMOVDQU64 Z18, 6144(CX)
	VMOVDQU64 Z19, 7168(CX)
	ADDQ $64, CX
	DECQ R15
	JNZ  %[1]sr%[2]d
`, lp, e, 3072+8192*e, row(0, 10), row(3, 13), pair(1, 2, 6, 7), pair(0, 4, 8, 9), pair(11, 12, 16, 17), pair(10, 14, 18, 19))
			a := 4 + 3*e
			fmt.Fprintf(&b, "\tAMXLD(%d, 7, 2, %d)\n", a, 2048+256*e)
			for t := 0; t < 4; t++ {
				fmt.Fprintf(&b, "\tAMXLD(%d, 7, 2, %d)\n\tAMXTDP(%d, %d, %d)\n", 5+t&1, 3072+8192*e+4096*q+1024*t, t, a, 5+t&1)
			}
		}
		for t := 0; t < 4; t++ {
			fmt.Fprintf(&b, "\tAMXST(%d, 7, 2, %d)\n", t, 1024*q+256*t)
		}
		for t := 0; t < 4; t++ {
			fmt.Fprintf(&b, "\tAMXLD(%d, 7, 2, %d)\n", t, 1024*(1-q)+256*t)
		}
		// The second pass takes the A tiles the first left in tmm4 and tmm7 (no tile in between
		// writes them).
		for e := 0; e < 2; e++ {
			a := 4 + 3*e
			for t := 0; t < 4; t++ {
				fmt.Fprintf(&b, "\tAMXLD(%d, 7, 2, %d)\n\tAMXTDP(%d, %d, %d)\n", 5+t&1, 3072+8192*e+4096*(1-q)+1024*t, t, a, 5+t&1)
			}
		}
	}
	// Super-blocks take turns at their passes' order (pass 0 first, then pass 1 first), so that
	// the C tiles of a super-block's second pass stay for the next one's first: 4 tile stores and
	// 4 loads a super-block in place of 8 and 8; each C tile takes its products in the same order.
	for t := 0; t < 4; t++ {
		fmt.Fprintf(&b, "\tAMXLD(%d, 7, 2, %d)\n", t, 256*t)
	}
	sb(0, l+"e")
	fmt.Fprintf(&b, `	MOVQ BX, SI                // the next super-block's rows
	SUBQ $64, R10
	JZ   %[1]sd1
`, l)
	sb(1, l+"o")
	fmt.Fprintf(&b, `	MOVQ BX, SI
	SUBQ $64, R10
	JNZ  %[1]sesb
`, l)
	for t := 0; t < 4; t++ {
		fmt.Fprintf(&b, "\tAMXST(%d, 7, 2, %d)\n", t, 256*t)
	}
	fmt.Fprintf(&b, "\tJMP  %sfin\n%sd1:\n", l, l)
	for t := 0; t < 4; t++ {
		fmt.Fprintf(&b, "\tAMXST(%d, 7, 2, %d)\n", t, 1024+256*t)
	}
	fmt.Fprintf(&b, `%[1]sfin:
	MOVQ acc+0(FP), SI
	MOVQ as+8(FP), AX
	SHLQ $2, AX
`, l)
	b.WriteString(accT(true))
	fmt.Fprintf(&b, `	MOVB $0, over+80(FP)
	AMXRELEASE
	VZEROUPPER
	RET
%[1]sover:
	MOVB $1, over+80(FP)
	AMXRELEASE
	VZEROUPPER
	RET
`, l)
	return b.String()
}
