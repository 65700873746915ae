//go:build ignore

// gen_f16acc writes multi_f16acc_amd64.s: the AVX-512 f16 accumulate kernels for two
// accumulators over rows of 64 or 128 values that hold every value of both accumulators in
// registers across the rows, and a scores kernel for two queries over rows of 64 values that
// takes eight rows a step (multi_f16acc_amd64.go states the contracts and when they run).
//
// The two-query kernel (multi_two_amd64.s) goes over the rows once per 32-value group, holding
// that group's four accumulator vectors: each takes one VFMADD231PS a row, so a row costs the
// FMA latency (4 cycles on Zen 4 and 5, Ice Lake and Sapphire Rapids) per group, 8 cycles a
// row at 64 values. These kernels keep all 2·d/16 vectors (8 at 64 values, 16 at 128) and take
// each row once: its d/16 conversions and 2·d/16 FMAs are independent, so a row costs the FMA
// throughput instead (two 512-bit FMAs a cycle: 4 cycles at 64 values, 8 at 128, where Intel
// parts with one 512-bit FMA unit need twice that, still no more than the latency-bound loop).
// Every value of an accumulator gets the same fused multiply-add of each row, in row order, as
// in the two-query kernel, so the sums are that kernel's bit for bit.
//
// The two-query scores kernel (multi_two_amd64.s) takes four rows a step: it reloads the two
// queries' vectors for every 32-value group, prefetches each row, reduces its eight sums (four
// rows, two queries) with 16 shuffles and stores them row by row. The wide scores kernel, for
// rows of 64 values, takes eight rows a step: the two queries stay in registers (Z24..Z31), the
// 16 sums (eight rows, two queries) reduce with 30 shuffles into one vector stored whole, and no
// row is prefetched (it runs on short runs, in cache). Each sum takes the same fused
// multiply-adds in the same order and the same reduction tree as in the two-query kernel: lane
// j sums the values j, 16+j, 32+j, 48+j of the row times the query's from zero; then lanes j
// and j+8 (four-lane groups 0+2, 1+3 by VSHUFF32X4 $0x44/$0xEE), the results j and j+4 (groups
// 0+1, 2+3 by $0x88/$0xDD), then elements 0+1 and 2+3 and their sum (VSHUFPS $0x88/$0xDD
// twice). Float addition is commutative, so with the same pairs at every level the sums are
// that kernel's bit for bit, whichever operand comes first. At 128 values the queries take 16
// registers, which with the 16 sums leaves none for the rows: the FMAs reading the queries from
// memory instead measured about 5% slower than the two-query kernel, so there is none.
//
// Run with `go generate ./native/kvq`.
package main

import (
	"fmt"
	"os"
	"strings"
)

func kernel(d int) string {
	v := d / 16 // vectors per accumulator
	var b strings.Builder
	fmt.Fprintf(&b, `
// func multiAccF16Two%[1]d(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// Accumulators 0 and 1: Z0..Z%[2]d and Z%[3]d..Z%[4]d; the row's values: Z16..Z%[5]d; its weights: Z30, Z31.
TEXT ·multiAccF16Two%[1]d(SB), NOSPLIT, $0-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	MOVQ rows+24(FP), DI
	MOVQ rb+32(FP), R13
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	MOVQ wstride+56(FP), R14
	TESTQ R10, R10
	JZ   f%[1]d_done
`, d, v-1, v, 2*v-1, 16+v-1)
	for i := 0; i < v; i++ {
		fmt.Fprintf(&b, "\tVMOVUPS %d(SI), Z%d\n", 64*i, i)
	}
	for i := 0; i < v; i++ {
		fmt.Fprintf(&b, "\tVMOVUPS %d(SI)(DX*1), Z%d\n", 64*i, v+i)
	}
	fmt.Fprintf(&b, "\nf%d_row:\n", d)
	for i := 0; i < v; i++ {
		fmt.Fprintf(&b, "\tVCVTPH2PS %d(DI), Z%d\n", 32*i, 16+i)
	}
	b.WriteString("\tVBROADCASTSS (R9), Z30\n\tVBROADCASTSS 4(R9), Z31\n")
	for i := 0; i < v; i++ {
		fmt.Fprintf(&b, "\tVFMADD231PS Z30, Z%d, Z%d\n", 16+i, i)
	}
	for i := 0; i < v; i++ {
		fmt.Fprintf(&b, "\tVFMADD231PS Z31, Z%d, Z%d\n", 16+i, v+i)
	}
	fmt.Fprintf(&b, "\tADDQ R13, DI\n\tADDQ R14, R9\n\tDECQ R10\n\tJNZ  f%d_row\n\n", d)
	for i := 0; i < v; i++ {
		fmt.Fprintf(&b, "\tVMOVUPS Z%d, %d(SI)\n", i, 64*i)
	}
	for i := 0; i < v; i++ {
		fmt.Fprintf(&b, "\tVMOVUPS Z%d, %d(SI)(DX*1)\n", v+i, 64*i)
	}
	fmt.Fprintf(&b, "\nf%d_done:\n\tVZEROUPPER\n\tRET\n", d)
	return b.String()
}

// scoresKernel is the wide scores kernel for two queries over rows of 64 values, eight rows a
// step (m a multiple of 8, out 16 floats a step: row r's scores at out[2r], out[2r+1]).
func scoresKernel() string {
	const v = 4 // vectors per row
	var b strings.Builder
	b.WriteString(`
// func multiScoresF16Wide64(q *float32, qs int, rows *byte, rb, m int, out *float32)
// Sums: item k = 2·row + query in Zk (k < 16); query 0 in Z24..Z27, query 1 in Z28..Z31; the
// row's vectors and the reduction's in Z16..Z23.
TEXT ·multiScoresF16Wide64(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ qs+8(FP), DX
	SHLQ $2, DX                // bytes between queries
	MOVQ rows+16(FP), DI
	MOVQ rb+24(FP), R8
	MOVQ m+32(FP), R10
	MOVQ out+40(FP), R9
	SHRQ $3, R10               // steps of eight rows
	JZ   w64_done
`)
	for i := 0; i < v; i++ {
		fmt.Fprintf(&b, "\tVMOVUPS %d(SI), Z%d\n", 64*i, 24+i)
	}
	for i := 0; i < v; i++ {
		fmt.Fprintf(&b, "\tVMOVUPS %d(SI)(DX*1), Z%d\n", 64*i, 28+i)
	}
	b.WriteString("\nw64_step:\n")
	for k := 0; k < 16; k++ {
		fmt.Fprintf(&b, "\tVXORPS Z%[1]d, Z%[1]d, Z%[1]d\n", k)
	}
	b.WriteString("\tMOVQ DI, AX\n")
	const temps = 8 // Z16..Z23
	t := 0
	for r := 0; r < 8; r++ {
		for i := 0; i < v; i++ {
			z := 16 + t%temps
			t++
			fmt.Fprintf(&b, "\tVCVTPH2PS %d(AX), Z%d\n", 32*i, z)
			fmt.Fprintf(&b, "\tVFMADD231PS Z%d, Z%d, Z%d\n", 24+i, z, 2*r)
			fmt.Fprintf(&b, "\tVFMADD231PS Z%d, Z%d, Z%d\n", 28+i, z, 2*r+1)
		}
		b.WriteString("\tADDQ R8, AX\n")
	}
	b.WriteString("\tMOVQ AX, DI\n")
	// pair reduces the sums in Za and Zb into Zdst with the shuffle op and its two immediates,
	// through two of Z16..Z23.
	pair := func(op string, lo, hi, a, bb, dst int) {
		t0, t1 := 16+t%temps, 16+(t+1)%temps
		t += 2
		fmt.Fprintf(&b, "\t%s $0x%02X, Z%d, Z%d, Z%d\n", op, lo, bb, a, t0)
		fmt.Fprintf(&b, "\t%s $0x%02X, Z%d, Z%d, Z%d\n", op, hi, bb, a, t1)
		fmt.Fprintf(&b, "\tVADDPS Z%d, Z%d, Z%d\n", t1, t0, dst)
	}
	b.WriteString("\t// Lanes j and j+8: items 2p and 2p+1 into Zp.\n")
	for p := 0; p < 8; p++ {
		pair("VSHUFF32X4", 0x44, 0xEE, 2*p, 2*p+1, p)
	}
	b.WriteString("\t// Then j and j+4: items 4s … 4s+3 into Zs, one four-lane group each.\n")
	for s := 0; s < 4; s++ {
		pair("VSHUFF32X4", 0x88, 0xDD, 2*s, 2*s+1, s)
	}
	b.WriteString("\t// Then elements 0+1 and 2+3, and their sum: item 4e+l at element e of group l.\n")
	pair("VSHUFPS", 0x88, 0xDD, 0, 1, 0)
	pair("VSHUFPS", 0x88, 0xDD, 2, 3, 1)
	pair("VSHUFPS", 0x88, 0xDD, 0, 1, 0)
	fmt.Fprintf(&b, `	VMOVUPS ·reduceOrder(SB), Z%[1]d
	VPERMPS Z0, Z%[1]d, Z0         // item k at k
	VMOVUPS Z0, (R9)
	ADDQ $64, R9
	DECQ R10
	JNZ  w64_step

w64_done:
	VZEROUPPER
	RET
`, 16+t%temps)
	return b.String()
}

func main() {
	var out strings.Builder
	out.WriteString(`// Code generated by gen_f16acc.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 f16 accumulate kernels for two accumulators over rows of 64 or 128 values, each row
// taken once with both accumulators' every value in registers (multi_f16acc_amd64.go).
`)
	for _, d := range []int{64, 128} {
		out.WriteString(kernel(d))
	}
	out.WriteString(`
// AVX-512 f16 scores kernel for two queries over rows of 64 values, eight rows a step, the sums
// reduced as the two-query kernel reduces them (multi_f16acc_amd64.go).
`)
	out.WriteString(scoresKernel())
	if err := os.WriteFile("multi_f16acc_amd64.s", []byte(out.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
