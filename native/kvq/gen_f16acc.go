//go:build ignore

// gen_f16acc writes multi_f16acc_amd64.s: the AVX-512 f16 accumulate kernels for two
// accumulators over rows of 64 or 128 values that hold every value of both accumulators in
// registers across the rows, a scores kernel for two queries over rows of 64 values that
// takes eight rows a step, the four-query scores kernel for AMD Zen 4 and the f16 and bf16
// four-query scores kernels for Intel CPUs over two streams of rows (scoresSplit)
// (multi_f16acc_amd64.go states the contracts and when they run).
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
// The four-query scores kernel for AMD Zen 4 (multiScoresF16Z4) is the four-query AVX-512
// kernel (multi_amd64.s, multiScoresF16AVX512) in 256-bit operations: each 512-bit
// accumulator is two 256-bit ones (its lanes 0..7 and 8..15), each 512-bit FMA two 256-bit
// FMAs, each row conversion two VCVTPH2PS of eight values, and the reduction's 512-bit
// shuffles 256-bit ones. Every lane takes the same fused multiply-adds in the same order and
// every sum the same pairs in the same operand order, so the scores are that kernel's bit for
// bit (gen_f16acc.go's scoresZ4 states the tree). On Zen 4 a 512-bit VCVTPH2PS and a
// lane-crossing 512-bit shuffle (VSHUFF32X4, VPERMPS) take issue slots of the FMA pipes, where
// the 256-bit ones and the adds do not (a loop of 12 independent 512-bit FMAs and 12
// conversions took 18 cycles, 12 FMAs alone 12; 24 256-bit FMAs and 12 256-bit conversions 12):
// in cache the kernel takes ~9.6–10.0 ns a row of 128 values where the 512-bit one takes
// ~11.6–12.1 (thread CPU time, 4 queries), ~10.8 of it with each pair's whole reduction at the
// pair's end instead of overlapping the next pair's FMAs (scoresZ4). What did not pay on Zen 4:
// in that non-overlapping 256-bit kernel (10.8), the queries as memory operands of the FMAs
// (12.3 ns) and two groups a loop step (11.1); in the 512-bit one (12.0), four rows a step
// with the 16 sums reduced together (12.0: the shuffles, not the query loads, cost) and the
// first reduction level by a blend and one shuffle (11.9); and the f16 accumulate kernel in
// 256-bit operations (11.0 ns a row with broadcast registers, 13.3 with embedded broadcasts,
// against the 512-bit kernel's 9.3), or with a second prefetch, PREFETCHT1 a tile further
// ahead (~0.5–2.5 ns a row slower streamed), or in tiles of 32 rows (within the noise).
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

// scoresZ4 is the four-query f16 scores kernel for AMD Zen 4 (multiScoresF16Z4; the contract
// is multiKernels', as multiScoresF16AVX512's in multi_amd64.s, whose structure it keeps: rows
// in pairs a and b, b = a on an odd last row). A pair's scores are stored with ordinary stores,
// one 32-byte store when ostride is 16, where multiScoresF16AVX512 writes whole 64-byte lines
// non-temporally: on Zen 4 the softmax's first pass then read the scores back from DRAM. In
// the decode at 131072 cells (one thread, 8 KV heads, 4 queries a KV head, rows on 2 MiB pages;
// thread CPU, ns a row of one KV head, min of 15 rounds, the two stores alternated by work item
// in one process, three runs, load 20 on the 2 vCPUs), the softmax took 0.74–0.77 ns after
// ordinary stores against 0.99–1.08 after the non-temporal ones, the scores kernel the same
// within the noise (10.3–10.7 both). Each 32-value group of both rows
// is prefetched into L2 12 KiB ahead (PREFETCHT1) and into L1 3 KiB ahead (PREFETCHT0): on Zen
// 4, rows streamed from DRAM, ~1.5–2 ns a row less than PREFETCHT0 6 KiB ahead alone
// (multiScoresF16AVX512's PFDIST; thread CPU time, 4 queries, the two kernels alternated, 61
// rounds, four runs; 16 KiB + 3 KiB, 24 KiB + 2 or 4 KiB and 32 KiB + 6 KiB within ~0.3 of it,
// PREFETCHT1 16 KiB alone ~0.3 behind, PREFETCHT0 8 KiB alone ~0.3 ahead of 6 KiB). Item k = 4·row + query (row 0 = a, 1 = b) sums in Yk (the 512-bit kernel's
// lanes 0..7) and Y(8+k) (lanes 8..15). A 32-value group of a row is four conversions of
// eight values, a..d; the 512-bit kernel's low vector is a|b and its high vector c|d, so lane j
// takes q·a then q·c in Yk and q·b then q·d in Y(8+k), as its lanes j and j+8 take the low
// then the high vector. The reduction is that kernel's: lanes j and j+8 (Yk + Y(8+k), the low
// lanes first), then j and j+4 (the two 128-bit lanes of Yk, items 2p and 2p+1 paired by
// VSHUFF32X4), then elements 0+1 and 2+3 and their sum (VSHUFPS $0x88/$0xDD twice), the first
// operand of every add the one that kernel puts first, so even NaN payloads agree.
//
// The last levels of a pair's reduction (elements, lane order, store) wait in Y22..Y25 and run
// among the next pair's first group of multiply-adds (Y26..Y29 their temporaries), so the
// reduction's chain of dependent shuffles and adds overlaps the FMAs instead of ending each
// pair: ~10.0 ns a row in cache against ~10.9 with the whole reduction at the end of the pair.
// The working set of a group step is then two row vectors (Y16, Y17) and four query vectors
// (Y18..Y21): one conversion of each row and one query vector of each query at a time.
func scoresZ4() string {
	const name = "multiScoresF16Z4"
	var b strings.Builder
	fmt.Fprintf(&b, `
// func %[1]s(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// Sums: Y0..Y15 (item k's lanes 0..7 in Yk, 8..15 in Y(8+k)); a row's eight values Y16, Y17;
// the queries' Y18..Y21; the previous pair's partial sums Y22..Y25, their temporaries
// Y26..Y29; the lane order Y31.
TEXT ·%[1]s(SB), NOSPLIT, $0-64
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
	VMOVUPS ·f16Order8(SB), Y31
	TESTQ R10, R10
	JZ   %[1]s_ret
	TESTQ R11, R11
	JZ   %[1]s_ret
	MOVQ ostride+56(FP), R14   // bytes between rows' scores
`, name)
	// group is one 32-value group of both rows: for each half (low lanes: conversions a, c;
	// high lanes: b, d) and each of its two conversions, both rows' eight values, the four
	// queries' matching eight, and their eight multiply-adds.
	var group []string
	group = append(group, "PREFETCHT1 12288(BX)", "PREFETCHT1 12288(R15)", "PREFETCHT0 3072(BX)", "PREFETCHT0 3072(R15)")
	qidx := []string{"(CX)", "(CX)(DX*1)", "(CX)(DX*2)", "(CX)(R13*1)"}
	for half := 0; half < 2; half++ {
		for step := 0; step < 2; step++ {
			o, qo := 16*half+32*step, 32*half+64*step
			group = append(group, fmt.Sprintf("VCVTPH2PS %d(BX), Y16", o), fmt.Sprintf("VCVTPH2PS %d(R15), Y17", o))
			for h := 0; h < 4; h++ {
				group = append(group, fmt.Sprintf("VMOVUPS %d%s, Y%d", qo, qidx[h], 18+h))
			}
			for r := 0; r < 2; r++ {
				for h := 0; h < 4; h++ {
					group = append(group, fmt.Sprintf("VFMADD231PS Y%d, Y%d, Y%d", 18+h, 16+r, 8*half+4*r+h))
				}
			}
		}
	}
	// tail is the last levels of a pair's reduction from Y22..Y25 (items [0|1], [2|3], [4|5],
	// [6|7], one 128-bit lane each): elements 0+1 and 2+3, their sum (items [0 2 4 6 | 1 3 5
	// 7]), and the lane order, into Y22.
	tail := []string{
		"VSHUFPS $0x88, Y23, Y22, Y26", "VSHUFPS $0xDD, Y23, Y22, Y27", "VADDPS Y27, Y26, Y22",
		"VSHUFPS $0x88, Y25, Y24, Y28", "VSHUFPS $0xDD, Y25, Y24, Y29", "VADDPS Y29, Y28, Y23",
		"VSHUFPS $0x88, Y23, Y22, Y26", "VSHUFPS $0xDD, Y23, Y22, Y27", "VADDPS Y27, Y26, Y22",
		"VPERMPS Y22, Y31, Y22", // [a0 a1 a2 a3 b0 b1 b2 b3]
	}
	// store writes a pair's two rows of scores (Y22): one 32-byte store where they are
	// contiguous (ostride 16), else 16 bytes a row.
	store := func(l string) string {
		return fmt.Sprintf(`	CMPQ R14, $16
	JNE  %[1]s_st%[2]s
	VMOVUPS Y22, (R9)
	ADDQ $32, R9
	JMP  %[1]s_sd%[2]s
%[1]s_st%[2]s:
	VMOVUPS X22, (R9)
	VEXTRACTF32X4 $1, Y22, X26
	VMOVUPS X26, (R9)(R14*1)
	LEAQ (R9)(R14*2), R9
%[1]s_sd%[2]s:
`, name, l)
	}
	fmt.Fprintf(&b, "\n%[1]s_pair:\n\tCMPQ R10, $1\n\tJNE  %[1]s_two\n\tXORQ R8, R8                // odd last row: b reads a again\n%[1]s_two:\n", name)
	for k := 0; k < 16; k++ {
		fmt.Fprintf(&b, "\tVXORPS Y%[1]d, Y%[1]d, Y%[1]d\n", k)
	}
	fmt.Fprintf(&b, `	MOVQ DI, BX
	LEAQ (DI)(R8*1), R15
	MOVQ SI, CX
	MOVQ R11, R12
	CMPQ DI, rows+24(FP)
	JEQ  %[1]s_first           // the first pair: no previous pair's sums wait
	// The first group, the previous pair's tail among its instructions, then its store.
`, name)
	ti := 0
	for i, in := range group {
		fmt.Fprintf(&b, "\t%s\n", in)
		if i%5 == 4 && ti < len(tail) {
			fmt.Fprintf(&b, "\t%s\n", tail[ti])
			ti++
		}
	}
	for ; ti < len(tail); ti++ {
		fmt.Fprintf(&b, "\t%s\n", tail[ti])
	}
	b.WriteString(store("a"))
	fmt.Fprintf(&b, "\tJMP  %[1]s_next\n\n%[1]s_first:\n", name)
	for _, in := range group {
		fmt.Fprintf(&b, "\t%s\n", in)
	}
	fmt.Fprintf(&b, `
%[1]s_next:
	ADDQ $64, BX
	ADDQ $64, R15
	ADDQ $128, CX
	DECQ R12
	JZ   %[1]s_red

%[1]s_blk:
`, name)
	for _, in := range group {
		fmt.Fprintf(&b, "\t%s\n", in)
	}
	fmt.Fprintf(&b, `	ADDQ $64, BX
	ADDQ $64, R15
	ADDQ $128, CX
	DECQ R12
	JNZ  %[1]s_blk

%[1]s_red:
	// Lanes j and j+8, then j and j+4: items 2p and 2p+1 into Y(22+p), one 128-bit lane each.
`, name)
	for k := 0; k < 8; k++ {
		fmt.Fprintf(&b, "\tVADDPS Y%d, Y%d, Y%d\n", 8+k, k, k)
	}
	for p := 0; p < 4; p++ {
		fmt.Fprintf(&b, "\tVSHUFF32X4 $0, Y%[1]d, Y%[2]d, Y16\n\tVSHUFF32X4 $3, Y%[1]d, Y%[2]d, Y17\n\tVADDPS Y17, Y16, Y%[3]d\n", 2*p+1, 2*p, 22+p)
	}
	fmt.Fprintf(&b, `	CMPQ R10, $1
	JEQ  %[1]s_last1
	LEAQ (DI)(R8*2), DI
	SUBQ $2, R10
	JNZ  %[1]s_pair
	// The last pair of two rows: its tail and store alone.
`, name)
	for _, in := range tail {
		fmt.Fprintf(&b, "\t%s\n", in)
	}
	b.WriteString(store("z"))
	fmt.Fprintf(&b, "\tJMP  %[1]s_done\n\n%[1]s_last1:\n\t// An odd last row: its tail, and its scores alone.\n", name)
	for _, in := range tail {
		fmt.Fprintf(&b, "\t%s\n", in)
	}
	fmt.Fprintf(&b, `	VMOVUPS X22, (R9)

%[1]s_done:
%[1]s_ret:
	VZEROUPPER
	RET

// f16Order8 is the lane order that gathers multiScoresF16Z4's sums, items [0 2 4 6 1 3 5 7],
// into [0 1 … 7].
DATA ·f16Order8+0(SB)/4, $0
DATA ·f16Order8+4(SB)/4, $4
DATA ·f16Order8+8(SB)/4, $1
DATA ·f16Order8+12(SB)/4, $5
DATA ·f16Order8+16(SB)/4, $2
DATA ·f16Order8+20(SB)/4, $6
DATA ·f16Order8+24(SB)/4, $3
DATA ·f16Order8+28(SB)/4, $7
GLOBL ·f16Order8(SB), RODATA|NOPTR, $32
`, name)
	return b.String()
}

// scoresSplit is the four-query scores kernel of f16 (bf16 false) or bf16 for Intel CPUs
// (multiScoresF16Split, multiScoresBF16Split; multi_f16acc_amd64.go's f16ScoresSplit and
// bf16ScoresSplit call them): k steps, each scoring one row of each of two streams, rows j
// and j' = j + ss/rb of the call's rows (f16ScoresSplit's halves), where multiScoresF16AVX512
// and multiScoresBF16AVX512 take two adjacent rows a step. A row's arithmetic is theirs: its
// 32-value groups in order, each the low 16 values (VCVTPH2PS; bf16: VPMOVZXWD and VPSLLD 16)
// then the high 16 into one sum vector per query, lane j of the sum taking values j, 16+j,
// 32+j, … times the query's, from zero; then their reduction tree (reduceSplit), so the scores
// are theirs bit for bit (TestScoresSplitMatches). Each group step prefetches the group 3 KiB
// on in both streams into L1 (PREFETCHT0); the scores go out with ordinary stores, 16 bytes a
// row, where multiScoresF16AVX512 writes whole lines non-temporally.
//
// Intel Xeon (2 vCPUs, KVM, family 6 model 167), attn decode at 131072 cells (one thread, 8
// KV heads of 128, 4 queries, rows on 2 MiB pages; thread CPU, ns a row of one KV head,
// min/median of 15–21 rounds, the kernels alternated by round in one process, load 3–5): f16
// scores 15.9–17.1/18.1–20.6 with multiScoresF16AVX512 against 14.1–15.9/15.8–18.2 so (the
// AVX2 kernel's three streams 14.3–15.4/15.5–16.4), and the softmax after them 1.66–1.71/
// 1.81–1.85 against 0.66–0.73/0.78–0.85 (non-temporally stored scores come back from DRAM).
// What made the difference: a step's two adjacent rows read the line order 0, 4, 1, 5, 2, 6,
// 3, 7 of the eight lines they span, each stream here its own lines in order. Also measured,
// scores median: multiScoresF16AVX512's loop with ordinary stores (adjacent rows, PREFETCHT0
// 6 KiB on) 20.1, no faster; two streams with PREFETCHT0 2, 4 or 6 KiB on within ~0.5 of 3
// KiB, 1.5 KiB ~+1, none +4–6; four streams (four rows a step, 2, 3 or 6 KiB on) no better
// than two (17.4–17.6 against 17.3–18.2 at load ~13, AVX2's 16.9–17.7); PREFETCHT1 12 KiB on
// beside the PREFETCHT0 (four streams) +2; sparse PREFETCHT1s (one line of each row a step,
// 16, 32 or 64 KiB on; or two lines, 32 KiB on) +2 to +6 (21.1–25.2 against 17.9–19.2);
// multiScoresF16Z4 (256-bit, one stream, PREFETCHT1 12 KiB and PREFETCHT0 3 KiB, ordinary
// stores) 16.9–19.0. bf16 the same way: scores 16.3–16.4/18.1–20.0 → 14.7–15.1/16.2–17.1.
func scoresSplit(bf16 bool) string {
	name, dec := "multiScoresF16Split", "VCVTPH2PS %[1]d%[2]s, Z%[3]d\n"
	if bf16 {
		name, dec = "multiScoresBF16Split", "VPMOVZXWD %[1]d%[2]s, Z%[3]d\n\tVPSLLD $16, Z%[3]d, Z%[3]d\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `
// func %[1]s(q *float32, d, nv int, rows *byte, rb, k, ss int, out *float32, ostride, os int)
// Sums: query h's of the first stream's row in Zh, of the second's in Z(4+h); a group's low
// halves of the two rows in Z8, Z9, the queries' in Z10..Z13; the high halves' in Z14, Z15
// and Z16..Z19; the reduction's temporaries Z8..Z15, its lane order Z31.
TEXT ·%[1]s(SB), NOSPLIT, $0-80
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between queries
	LEAQ (DX)(DX*2), R13       // 3 queries
	MOVQ nv+16(FP), R11
	SHRQ $5, R11               // 32-value groups per row
	MOVQ rows+24(FP), DI
	MOVQ k+40(FP), R10
	MOVQ ss+48(FP), R8         // bytes from the first stream's rows to the second's
	MOVQ out+56(FP), R9
	MOVQ os+72(FP), R15        // bytes from the first stream's scores to the second's
	VMOVUPS ·reduceOrder(SB), Z31
	TESTQ R10, R10
	JZ   %[1]s_done
	TESTQ R11, R11
	JZ   %[1]s_done

%[1]s_step:
`, name)
	for z := 0; z < 8; z++ {
		fmt.Fprintf(&b, "\tVXORPS Z%[1]d, Z%[1]d, Z%[1]d\n", z)
	}
	fmt.Fprintf(&b, "\tMOVQ DI, BX\n\tMOVQ SI, CX\n\tMOVQ R11, R12\n\n%s_grp:\n", name)
	b.WriteString("\tPREFETCHT0 3072(BX)\n\tPREFETCHT0 3072(BX)(R8*1)\n")
	rowAt := []string{"(BX)", "(BX)(R8*1)"}
	qAt := []string{"(CX)", "(CX)(DX*1)", "(CX)(DX*2)", "(CX)(R13*1)"}
	for half := 0; half < 2; half++ {
		rz, qz := 8+6*half, 10+6*half
		for r := 0; r < 2; r++ {
			b.WriteString("\t" + fmt.Sprintf(dec, 32*half, rowAt[r], rz+r))
		}
		for h := 0; h < 4; h++ {
			fmt.Fprintf(&b, "\tVMOVUPS %d%s, Z%d\n", 64*half, qAt[h], qz+h)
		}
	}
	for half := 0; half < 2; half++ {
		rz, qz := 8+6*half, 10+6*half
		for h := 0; h < 4; h++ {
			for r := 0; r < 2; r++ {
				fmt.Fprintf(&b, "\tVFMADD231PS Z%d, Z%d, Z%d\n", qz+h, rz+r, 4*r+h)
			}
		}
	}
	fmt.Fprintf(&b, "\tADDQ $64, BX\n\tADDQ $128, CX\n\tDECQ R12\n\tJNZ  %s_grp\n\n", name)
	b.WriteString(reduceSplit())
	fmt.Fprintf(&b, `	VMOVUPS X15, (R9)
	VEXTRACTF32X4 $1, Z15, X8
	VMOVUPS X8, (R9)(R15*1)
	ADDQ rb+32(FP), DI
	ADDQ ostride+64(FP), R9
	DECQ R10
	JNZ  %[1]s_step

%[1]s_done:
	VZEROUPPER
	RET
`, name)
	return b.String()
}

// reduceSplit reduces scoresSplit's sums, Z0..Z3 (row a's four queries) and Z4..Z7 (row b's),
// into Z15 = [a0 a1 a2 a3 b0 b1 b2 b3 …] by multiScoresF16AVX512's tree (multi_amd64.s), the
// same shuffles and adds with the same operands in the same order: lanes j and j+8 pairing
// queries, then j and j+4, then elements 0+1 and 2+3 and their sum, then the lane order (Z31).
func reduceSplit() string {
	return `	VSHUFF32X4 $0x44, Z1, Z0, Z8
	VSHUFF32X4 $0xEE, Z1, Z0, Z9
	VADDPS Z9, Z8, Z8          // [a0 ×8 | a1 ×8]
	VSHUFF32X4 $0x44, Z3, Z2, Z9
	VSHUFF32X4 $0xEE, Z3, Z2, Z10
	VADDPS Z10, Z9, Z9         // [a2 ×8 | a3 ×8]
	VSHUFF32X4 $0x44, Z5, Z4, Z11
	VSHUFF32X4 $0xEE, Z5, Z4, Z12
	VADDPS Z12, Z11, Z11       // [b0 ×8 | b1 ×8]
	VSHUFF32X4 $0x44, Z7, Z6, Z12
	VSHUFF32X4 $0xEE, Z7, Z6, Z13
	VADDPS Z13, Z12, Z12       // [b2 ×8 | b3 ×8]
	VSHUFF32X4 $0x88, Z9, Z8, Z10
	VSHUFF32X4 $0xDD, Z9, Z8, Z13
	VADDPS Z13, Z10, Z10       // 128-bit lane h: four partial sums of a_h
	VSHUFF32X4 $0x88, Z12, Z11, Z13
	VSHUFF32X4 $0xDD, Z12, Z11, Z14
	VADDPS Z14, Z13, Z13       // the same for b_h
	VSHUFPS $0x88, Z13, Z10, Z14
	VSHUFPS $0xDD, Z13, Z10, Z15
	VADDPS Z15, Z14, Z14
	VSHUFPS $0x88, Z14, Z14, Z15
	VSHUFPS $0xDD, Z14, Z14, Z8
	VADDPS Z8, Z15, Z15        // lane h: [a_h, b_h, a_h, b_h]
	VPERMPS Z15, Z31, Z15      // [a0 a1 a2 a3 b0 b1 b2 b3 …]
`
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
	out.WriteString(`
// AVX-512 (VL) f16 scores kernel for four queries in 256-bit operations, for AMD Zen 4: the
// four-query AVX-512 kernel's scores bit for bit (multi_f16acc_amd64.go).
`)
	out.WriteString(scoresZ4())
	out.WriteString(`
// AVX-512 f16 and bf16 scores kernels for four queries over two streams of rows, for Intel
// CPUs: the four-query AVX-512 kernels' scores bit for bit (multi_f16acc_amd64.go).
`)
	out.WriteString(scoresSplit(false))
	out.WriteString(scoresSplit(true))
	if err := os.WriteFile("multi_f16acc_amd64.s", []byte(out.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
