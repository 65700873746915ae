//go:build ignore

// gen_avx2f writes multi_avx2f_amd64.s: the AVX2 + FMA + F16C MultiQuery kernels of the float
// formats, f16, bf16 and fp8 (multi_avx2f_amd64.go states their contracts and bounds). Run with
// `go generate ./native/kvq`.
//
// Scores. Four queries against three rows a step: the twelve sums (row × query) in Y0..Y11, one
// vector each, every 8-value slice of the three rows widened once into Y12..Y14 and each
// query's slice loaded once into Y15 for the three rows' fused multiply-adds. The one-row
// kernels they replace held eight sums, two FMAs apart in each: eight chains of the FMA latency
// (4 cycles) against two FMAs a cycle, so any stall cost throughput; twelve chains leave slack,
// and each query vector loaded serves three rows (4 loads per 12 FMAs instead of 16): ~0.8 of
// their time on rows in cache. The three rows of a step come from three streams a third of the
// call's rows apart (rows j, M+j, 2M+j, M = ⌈m/3⌉; a stream that has ended rereads row a and
// stores nothing): three adjacent rows a step streamed from memory slower than the one-row
// kernel did, however far ahead they were prefetched, three sequential streams faster. The
// scores are stored with ordinary stores: stored non-temporally (as multiScoresF16AVX512 still
// stores whole lines) they went to DRAM, and the softmax's first pass read them back from there
// (Zen 4, KVLAB_NO_AVX512=1, decode at 131072 cells, 32/8 heads × 128, rows on 2 MiB pages,
// thread CPU, three alternations: softmax 1.16–1.19 → 0.86–0.89 ns a row of one KV head for
// f16, 1.12–1.17 → 0.85–0.86 for bf16, 1.11–1.17 → 0.82–0.99 for fp8; scores the same). Each group step prefetches
// the three rows' lines 3 KiB ahead (PFDISTF) into L1: on Zen 4 (f16 rows streamed, the
// kernels alternated by call, 40 rounds, load 6–7) 0.8–1.2 ns a row less than 6 KiB ahead
// (2–4 KiB measured alike); adding PREFETCHT1 8–24 KiB ahead, as the AVX-512 Zen 4 kernel
// does, cost 1.5–2.9 ns a row, and three adjacent rows a step (one stream) with either
// prefetch cost 1.3–1.8. fp8 widens a step's three 32-value groups to f16 (integer ops) into a 192-byte scratch
// first, its temporaries needing registers the sums hold; the slices read it with VCVTPH2PS.
//
// Accumulate. Tiles of 64 rows, each taken in passes over windows of 24 values (then 16 or 8
// for the rest of nv: 128 = 5·24 + 8), a pass holding the four accumulators' window in
// registers across the tile: for 24 values twelve vectors (Y0..Y11), the row's three in
// Y12..Y14, each weight broadcast into Y15 for three FMAs. The two-pass kernels before took
// 16-value halves of each 32-value group: eight accumulator chains, one FMA a row each, against
// eight FMAs a row step, tied as the scores' were; twelve chains took ~0.87 of their time on
// rows in cache. Each accumulator value still gets one FMA a row, in row order. The next tile
// is prefetched as many bytes a row step as the pass reads, so the passes over this tile,
// which read its rows column-wise, bring the next one into L1 evenly (the kernels before
// prefetched the same group's line 64 rows ahead in both passes, at the row stride: half the
// prefetches repeated, and streamed values took 1.6× their in-cache time; two tiles ahead
// measured no better than one). The tile after next is prefetched into L2 (PREFETCHT1) at the
// same pace: the PREFETCHT0 of the next tile, 16 KiB ahead in 4 KiB pages the hardware
// prefetchers do not cross, otherwise waited on DRAM (Zen 4, f16, 4096-row calls over 256 MiB,
// the kernels alternated by call, 40 rounds, load 6–7: 2.2–2.5 ns a row less in three runs of
// four, 1.0 in one, every round faster; ~10.3–11 ns a row streamed against ~10.5 in cache, where
// it was ~12.5–13.3; tiles of 32 rows with it, or the PREFETCHT1 two tiles ahead, measured the
// same). fp8 keeps the two 16-value passes per group (accFP8) and
// multiplies each tile's
// weights by its rows' scales (and 256) once, into a 1 KiB scratch, instead of each row's
// widened values by its scale in every pass (three multiplies a row step), and widens each
// 32-value group of the tile once (fp8Grp) into a 4 KiB scratch of f16 the two passes read
// with VCVTPH2PS, as f16's do its rows, the next group's widening interleaved with the current
// group's two passes (accFP8), instead of widening 16 values a row step with the extracts and
// conversions twice: ~0.7 of the old kernel's time on rows in cache.
//
// On an Intel Xeon (Sapphire Rapids class, ~3.8 GHz, KVLAB_NO_AVX512) these kernels are bound
// by the two FMA ports, which also take VCVTPH2PS and the widening's shifts and compares
// (gen_vexlib.go has the per-op figures): a row of 128 values and four queries is 64 FMAs and
// 16 VCVTPH2PS, 40 cycles, and f16 took 10.1 ns a row in cache for the scores and 10.7 for the
// values (kvq TestMultiQuerySpeed), fp8, with ~16 more port-0/1 operations a row to widen, 13.8
// and 13.9; in the decode (attn TestDecodeBreakdown) fp8 16.5 and 16.9 where f16, bound by
// memory, took 14.2 and 15.8. fp8's target there (0.67 of f16's time, ~20.7 ns a row whole)
// lies below these float kernels' floor (two passes of 64 FMAs, ~17 ns, before the softmax):
// only fewer multiplies (integer dots, a rounding change) would reach it.
//
// Measured again there (2 vCPUs, load 4–12; 256-bit operations 2–6 per 24 independent FMAs in
// a loop in L1): VCVTPH2PS (register or memory source), VPSRLW/VPSLLW/VPSLLD, VPCMPEQB,
// VPCMPGTB, VPMINUB, VPADDUSB, VPAVGB, VPMADDUBSW, VPMULLW and VCVTDQ2PS each take an FMA port's
// slot (half a cycle); VPSHUFB, VPUNPCKLBW/HBW, VPERMD, VPMOVZXBW/BD, VPALIGNR, VPSLLDQ,
// VEXTRACTI128, VPERM2I128, VPSHUFD, VSHUFPS, VPBROADCASTB, VPBLENDD, VPAND, VPADDB/W and
// stores cost nothing beside them (VPBLENDVB does at 6 per 24). So a phase's row is 80 port-0/1
// operations with VCVTPH2PS (10.5 ns at 3.8 GHz; both phases and the softmax ~22 ns, 0.74 of a
// 31 ms f16) and 96 with the widening's four (12.6 ns): 0.67 is out of reach of these kernels by
// their FMAs and conversions alone. Taken apart (kvq, 1024 rows in L2, thread CPU, min of 7):
// the scores 15.1–15.9 ns a row, 11.4 without the widening (wrong values), 14.1–14.5 without the
// per-row sums' reduction and scaling, 27 streamed without the PREFETCHT0s (17.2 with); the
// values 15.9, 13.4 without the widening. The widening's other forms counted no fewer operations
// in all (a loop of three rows' widening and FMAs in L1, cycles per 32 codes a row: this form
// 13.3, a VPSHUFB-table form with one shift 13.8, a two-shift form 14.3, without the NaN codes'
// two operations 12.7); e4m3 straight to float32 bits (no VCVTPH2PS) takes ~21 operations per
// 32 codes for the subnormals and NaN and five VPSHUFB tables in registers. Did not pay in the
// scores (decode or kvq, alternated with this kernel): two rows a step from two streams (the
// call's halves, eight sums; 17.6–18.1 against 16.6–17.2 ns a row streamed, though the bare loop
// in L1 took 12.1 against 12.6 cycles per 32 codes a row), the widening's stores split into
// 16-byte halves for the loads that read them, the group loop unrolled for d 128, PFDISTF 2048
// or 4096, PREFETCHT1 16 KiB ahead of each stream (within noise). Nor in the values: no
// PREFETCHT1, or the prefetch pointer 40 or 64 bytes a row step in place of 32 (within noise).
//
// Integer prototypes on that Xeon (kernels outside the tree; rows of 128 Gaussian values
// encoded as here, four Gaussian queries, thread CPU, load 5–10 on the 2 vCPUs, each against
// multiScoresFP8AVX2T or multiAccFP8AVX2T in the same binary, alternated: min of 300 calls on
// 512 rows in cache, min of 8 passes over 64 MiB in 16384-row calls streamed):
//   - int16 keys, VPDPWSSD (AVX-VNNI), 13-bit query: k = value·2⁶ = A·P with A = (8+m) << e0
//     looked up (VPSHUFB) by the code's low nibble and P = ±4^(e>>1 − 2) by its high one (two
//     VPSHUFB for P's bytes, unpacks, VPMULLW): 16 operations and 8 VPDPWSSD per 32 codes,
//     scores 14.1–14.7 ns a row in cache against 15.3–16.1 (the decode alone 8.4–8.6); int16 holds
//     only e ≥ 4 exactly (value·2⁹ spans 18 bits), so 7% of the rows (codes with e 1..3 or
//     subnormal) would need an exact second pass. Eight accumulators instead of four: the same.
//     Not worth its fallback.
//   - int8 keys, VPDPBUSD, 8-bit query: k8 = round(value/4), |k8| ≤ 112, from A (above) and P'
//     = ±4^(e>>1 − 4) (0 for e < 8) by VPSHUFB, P' split into even and odd bytes (VPAND),
//     VPMADDUBSW of each with A, VPMULHRSW by 2¹¹ (round(x/16)), VPACKSSWB, VPXOR 0x80 (k8 +
//     128 unsigned against the signed query from memory; 128·ΣQ taken off once per query): 14
//     operations and 4 VPDPBUSD per 32 codes, scores 9.9–10.2 ns a row in cache against
//     15.3–15.7 (0.65×), 12.3 against 18.2 streamed (0.68×). Values the same way with 8-bit
//     weights (w·s over the 64-row tile's largest, per query), four rows' k8 interleaved to
//     dwords (8 unpacks per four rows and 32 codes) into a scratch, passes of 2 vectors × 4
//     queries: 10.4 against 15.6 in cache (0.66×, the weights' preparation not counted). RMS
//     error against the float32 data the rows encode: scores 0.3006 (exact fp8) → 0.3137 (the
//     8-bit query alone 0.3093, k8 alone 0.3046), values 43.0 → 44.1 (weights e^{2N(0,1)}).
//     Both sides so would bring fp8 near 0.67 of f16 on AVX2, but they round the keys to a
//     per-row int8 grid, which undoes what fp8 is for: commit bd99459 (reverted) ran the
//     scores so in the tree (multiScoresFP8ByteVNNI, k8 = round(v·127/448), behind a switch;
//     the contiguous decode's scores 20.3–21.0 → 14.7–17.0 ns a row, whole 43.8–45.4 →
//     37.8–40.1, kvlab ab on kvlab-tiny-64 attention error +1.4 % ± 0.3, KL and perplexity
//     unchanged), but kvlab gate (d 128, 4 queries, KVLAB_NO_AVX512) put its decode 2.2 %
//     (gaussian), 4.1 % (outlier5x) and 14 % (outlier75x) from the reference on the same fp8
//     cache, where fp8 itself is 7.4 %, 8.6 % and 2.9 % from f32 (q8_0 1.3 %, 1.6 %, 6.2 %):
//     the median channels of an outlier row fall to a few int8 steps. Exact bytes need
//     exponent groups (one VPDPBUSD per group and query; values below 2 of 448 need a third
//     and fourth group on outlier rows), more multiplies than the float kernel's FMAs.
//
// Prefetch variants of multiScoresFP8AVX2T there (streamed, 16384-row calls, alternated, two
// runs): PREFETCHT1 16, 32 or 64 KiB ahead beside the PREFETCHT0, or the PREFETCHT0 at 1.5 or
// 6 KiB: 17.9–19.6 against 18.9–19.4 ns a row, within the noise.
package main

import (
	"fmt"
	"os"
	"strings"
)

type format struct {
	name string
	doc  string
	gb   int // bytes per 32-value group
	// slice widens the 8 values at byte offset off of the row at p into x (scores; f16, bf16).
	slice func(p string, off int, x string) string
	// grp widens the 32 values at p into the scratch at dst (fp8 scores), using Y12..Y15.
	grp func(p string, dst int) string
	// half widens 16 values at p (acc) into Y8, Y9; temporaries Y10, Y11, Y13..Y15.
	half     func(p string) string
	rowScale bool // fp8: f32 scale at row + d, values widened as value/256
}

var formats = []format{
	{
		name: "F16", doc: "f16: VCVTPH2PS widens each value exactly.", gb: 64,
		slice: func(p string, off int, x string) string {
			return fmt.Sprintf("\tVCVTPH2PS %d%s, %s\n", 2*off, p, x)
		},
		half: func(p string) string {
			return fmt.Sprintf("\tVCVTPH2PS (%[1]s), Y8\n\tVCVTPH2PS 16(%[1]s), Y9\n", p)
		},
	},
	{
		name: "BF16", doc: "bf16: each value its bits << 16 (VPMOVZXWD, VPSLLD).", gb: 64,
		slice: func(p string, off int, x string) string {
			return fmt.Sprintf("\tVPMOVZXWD %d%s, %s\n\tVPSLLD $16, %s, %s\n", 2*off, p, x, x, x)
		},
		half: func(p string) string {
			return fmt.Sprintf("\tVPMOVZXWD (%[1]s), Y8\n\tVPMOVZXWD 16(%[1]s), Y9\n\tVPSLLD $16, Y8, Y8\n\tVPSLLD $16, Y9, Y9\n", p)
		},
	},
	{
		name: "FP8", doc: "fp8: one e4m3 byte per value, the row's f32 scale after them. A code b becomes the f16\n// bits (b & 0x7f) << 7 | (b & 0x80) << 8, whose value is the e4m3 value / 256 (subnormals\n// included); the NaN codes become f16 NaNs.", gb: 32,
		grp:      fp8Grp,
		half:     func(p string) string { return fp8Dec("("+p+")", "Y8", "Y9") },
		rowScale: true,
	},
}

// fp8Grp widens the 32 e4m3 bytes at src to f16 (value / 256) at dst(SP), in the order
// fp8Slot gives, with Y12..Y15 as temporaries (fp8GrpTo says how).
func fp8Grp(src string, dst int) string {
	return fp8GrpTo(src, fmt.Sprintf("%d(SP)", dst), fmt.Sprintf("%d(SP)", dst+32), "Y12", "Y13", "Y14", "Y15")
}

// fp8GrpTo is fp8Grp storing values 0..7 and 16..23 at d0, 8..15 and 24..31 at d1, with the
// temporaries hi, t, x and lo. Bytewise, t = b & 0x7f, all ones for the NaN codes (t = 0x7f,
// VPCMPEQB, VPOR), and the sign b >> 7 in bit 0 of each byte of x (VPSRLW $7 of the codes:
// the bits above it are shifted out later); VPUNPCKLBW and VPUNPCKHBW make the words x << 8 | t
// (values 0..7 and 16..23, then 8..15 and 24..31), and VPSLLW $7 turns each into the f16
// S ‖ t << 7: exponent 0EEEE, mantissa MMM0000000, the value / 256 (subnormals included), and
// for the NaN codes exponent 11111 with a nonzero mantissa, an f16 NaN. 8 operations per 32
// values, where building the bytewise high and low halves of each f16 took 11; the same f16
// bits, so the kernels' results are unchanged bit for bit (Zen 4, KVLAB_NO_AVX512=1, rows of
// 128 values, thread CPU, old and new kernels alternated by call, min over 200 calls in cache
// and 10 passes over 96 MiB on 2 MiB pages, three runs: scores 14.4–14.5 → 13.3–13.4 ns a row
// in cache, 15.8 → 14.5–14.7 streamed; values 14.6–15.1 → 13.2–13.7 in cache, 15.7–16.9 →
// 14.6–16.2 streamed). The sign taken as 0 > b (VPXOR, VPCMPGTB: one shift fewer) measured the
// same. With no widening at all (wrong values, the scratch still written) the scores took 11.0
// in cache, f16's 10.0.
func fp8GrpTo(src, d0, d1, hi, t, x, lo string) string {
	return strings.NewReplacer("HI", hi, "TT", t, "XX", x, "LO", lo, "SRC", src, "D0", d0, "D1", d1).Replace(`	VMOVDQU SRC, XX
	VPAND ·avx2fB7F(SB), XX, TT
	VPCMPEQB ·avx2fB7F(SB), TT, HI
	VPOR HI, TT, TT
	VPSRLW $7, XX, XX
	VPUNPCKLBW XX, TT, LO
	VPUNPCKHBW XX, TT, XX
	VPSLLW $7, LO, LO
	VPSLLW $7, XX, XX
	VMOVDQU LO, D0
	VMOVDQU XX, D1
`)
}

// fp8Slot is the byte offset in fp8Grp's output of values 8s..8s+7.
func fp8Slot(s int) int { return []int{0, 32, 16, 48}[s] }

// fp8Half turns the 16 e4m3 bytes at src into 16 f16 values (value / 256) in w, with t as a
// temporary.
func fp8Half(src, w, t string) string {
	return fmt.Sprintf(`	VPMOVZXBW %[1]s, %[2]s
	VPSLLW $7, %[2]s, %[2]s
	VPAND ·avx2fW4000(SB), %[2]s, %[3]s
	VPADDW %[3]s, %[2]s, %[2]s
	VPAND ·avx2fW3F80(SB), %[2]s, %[3]s
	VPCMPEQW ·avx2fW3F80(SB), %[3]s, %[3]s
	VPAND ·avx2fW7C00(SB), %[3]s, %[3]s
	VPOR %[3]s, %[2]s, %[2]s
`, src, w, t)
}

// fp8Dec turns the 16 e4m3 bytes at src into two vectors of 8 floats (value / 256), with Y14 and
// Y15 as temporaries.
func fp8Dec(src, a, b string) string {
	return fmt.Sprintf(`	VPMOVZXBW %s, Y14
	VPSLLW $7, Y14, Y14
	VPAND ·avx2fW4000(SB), Y14, Y15
	VPADDW Y15, Y14, Y14
	VPAND ·avx2fW3F80(SB), Y14, Y15
	VPCMPEQW ·avx2fW3F80(SB), Y15, Y15
	VPAND ·avx2fW7C00(SB), Y15, Y15
	VPOR Y15, Y14, Y14
	VCVTPH2PS X14, %s
	VEXTRACTI128 $1, Y14, X14
	VCVTPH2PS X14, %s
`, src, a, b)
}

// scores writes the scores kernel of f. Registers: SI queries, DX bytes between queries, R13
// 3·DX, DI row a, R8 rb, R10 rows left, R9 out, R15 ostride, R11 groups a row; per step BX row
// a's group, AX and R14 the offsets of rows b and c from row a (a previous row's on a short
// last step: the scores computed twice, stored once), CX the queries' group, R12 groups left.
func scores(f format) string {
	var b strings.Builder
	n := "f" + strings.ToLower(f.name) + "s"
	frame := 32
	if f.grp != nil {
		frame += 3 * 64
	}
	fmt.Fprintf(&b, `
// func multiScores%[1]sAVX2T(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// %[2]s
TEXT ·multiScores%[1]sAVX2T(SB), NOSPLIT, $%[3]d-64
	MOVQ m+40(FP), R10
	TESTQ R10, R10
	JZ   %[4]s_done
	LEAQ 2(R10), AX
	XORQ DX, DX
	MOVQ $3, CX
	DIVQ CX                    // AX = M = ⌈m/3⌉ steps: rows j, M+j, 2M+j
	MOVQ R10, BX
	SUBQ AX, BX                // rows past a's stream
	MOVQ AX, CX
	CMPQ BX, AX
	JGE  %[4]s_nb
	MOVQ BX, CX
%[4]s_nb:                          // CX = b's rows
	SUBQ AX, BX
	JGE  %[4]s_nc
	XORQ BX, BX
%[4]s_nc:                          // BX = c's rows
	MOVQ AX, R12
	SUBQ CX, R12
	MOVQ R12, tb-24(SP)        // b's row is real while the steps left exceed this
	MOVQ AX, R12
	SUBQ BX, R12
	MOVQ R12, tc-32(SP)
	MOVQ AX, R10               // steps left
	MOVQ rb+32(FP), R8
	MOVQ R8, R12
	IMULQ AX, R12
	MOVQ R12, mrb-8(SP)        // bytes from row a to row b
	MOVQ ostride+56(FP), R15
	MOVQ R15, R12
	IMULQ AX, R12
	MOVQ R12, mos-16(SP)       // bytes from a's scores to b's
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), R13
	MOVQ nv+16(FP), R11
	SHRQ $5, R11
	MOVQ rows+24(FP), DI
	MOVQ out+48(FP), R9
	TESTQ R11, R11
	JZ   %[4]s_done
`, f.name, f.doc, frame, n)
	b.WriteString(scoresLoop(f, n, "", "VMOVUPS"))
	fmt.Fprintf(&b, `
%[1]s_done:
	VZEROUPPER
	RET
`, n)
	return b.String()
}

// scoresLoop is the scores kernel's loop over the steps, labels n_<sfx>…, each row's four
// scores stored with st.
func scoresLoop(f format, n, sfx, st string) string {
	var b strings.Builder
	l := n + "_" + sfx
	fmt.Fprintf(&b, `
%[1]sstep:
	MOVQ mrb-8(SP), AX
	LEAQ (AX)(AX*1), R14
	CMPQ R10, tc-32(SP)
	JG   %[1]sc
	XORQ R14, R14              // c's stream has ended: it reads row a again
%[1]sc:
	CMPQ R10, tb-24(SP)
	JG   %[1]srows
	XORQ AX, AX
%[1]srows:
`, l)
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "\tVXORPS Y%[1]d, Y%[1]d, Y%[1]d\n", i)
	}
	fmt.Fprintf(&b, "\tMOVQ DI, BX\n\tMOVQ SI, CX\n\tMOVQ R11, R12\n\n%sgrp:\n", l)
	fmt.Fprintf(&b, "\tPREFETCHT0 PFDISTF(BX)\n\tPREFETCHT0 PFDISTF(BX)(AX*1)\n\tPREFETCHT0 PFDISTF(BX)(R14*1)\n")
	rows := []string{"(BX)", "(BX)(AX*1)", "(BX)(R14*1)"}
	qs := []string{"(CX)", "(CX)(DX*1)", "(CX)(DX*2)", "(CX)(R13*1)"}
	if f.grp != nil {
		for r := 0; r < 3; r++ {
			b.WriteString(f.grp(rows[r], 64*r))
		}
	}
	for s := 0; s < 4; s++ {
		for r := 0; r < 3; r++ {
			if f.grp == nil {
				b.WriteString(f.slice(rows[r], 8*s, fmt.Sprintf("Y%d", 12+r)))
			} else {
				fmt.Fprintf(&b, "\tVCVTPH2PS %d(SP), Y%d\n", 64*r+fp8Slot(s), 12+r)
			}
		}
		for h, qo := range qs {
			fmt.Fprintf(&b, "\tVMOVUPS %d%s, Y15\n", 32*s, qo)
			for r := 0; r < 3; r++ {
				fmt.Fprintf(&b, "\tVFMADD231PS Y15, Y%d, Y%d\n", 12+r, 4*r+h)
			}
		}
	}
	fmt.Fprintf(&b, "\tADDQ $%d, BX\n\tSUBQ $-128, CX\n\tDECQ R12\n\tJNZ  %sgrp\n\n", f.gb, l)
	if f.rowScale {
		b.WriteString("\tMOVQ d+8(FP), CX\n\tADDQ DI, CX\n")
	}
	// Reduce and store the three rows' scores (b and c only where they are real rows).
	b.WriteString("\tMOVQ mos-16(SP), R12\n")
	for r := 0; r < 3; r++ {
		a := 4 * r
		fmt.Fprintf(&b, "\tVHADDPS Y%d, Y%d, Y%d\n\tVHADDPS Y%d, Y%d, Y%d\n\tVHADDPS Y%d, Y%d, Y%d\n\tVEXTRACTF128 $1, Y%d, X%d\n\tVADDPS X%d, X%d, X%d\n",
			a+1, a, a, a+3, a+2, a+2, a+2, a, a, a, a+1, a+1, a, a)
		if f.rowScale {
			off := []string{"(CX)", "(CX)(AX*1)", "(CX)(R14*1)"}[r]
			fmt.Fprintf(&b, "\tVBROADCASTSS %s, X15\n\tVMULPS ·avx2fF256(SB), X15, X15\n\tVMULPS X15, X%d, X%d\n", off, a, a)
		}
		switch r {
		case 0:
			fmt.Fprintf(&b, "\t%s X%d, (R9)\n", st, a)
		case 1:
			fmt.Fprintf(&b, "\tCMPQ R10, tb-24(SP)\n\tJLE  %[1]snext\n\t%[2]s X%[3]d, (R9)(R12*1)\n", l, st, a)
		case 2:
			fmt.Fprintf(&b, "\tCMPQ R10, tc-32(SP)\n\tJLE  %[1]snext\n\t%[2]s X%[3]d, (R9)(R12*2)\n", l, st, a)
		}
	}
	fmt.Fprintf(&b, `%[1]snext:
	ADDQ R8, DI
	ADDQ R15, R9
	DECQ R10
	JNZ  %[1]sstep
`, l)
	return b.String()
}

// scoresAhead writes fp8's scores kernel for contiguous rows, multiScoresFP8AVX2TW: scores'
// steps (three rows from three streams, twelve sums), each group's codes widened a group ahead:
// the step's first group into one of two 192-byte scratches at BP (SP rounded up to 64 bytes),
// then each group's FMAs, reading one scratch, come after the widening of the next group into
// the other, which they do not wait on. Every row's sums are scores' operations in scores'
// order, so its scores are multiScoresFP8AVX2T's bit for bit (TestFP8ScoresAhead). It is the
// runs' kernel too (gen_runs.go's multiScoresFP8AVX2TRuns; avx2FloatScoresRuns has the paged
// figures); multiScoresFP8AVX2T, which no path calls, is the text it is built from and the
// tests' reference. It aligns its scratches itself (BP), so gen_align.go leaves it. A loop of the scores' operations in L1
// (three rows, 32 codes a row a step) took 12.1–12.4 cycles per 32 codes a row so against
// 12.8–13.0 with each group widened just before its FMAs. Intel Xeon, KVLAB_NO_AVX512=1, attn
// TestDecodeBreakdown (fp8, 131072 cells), test binaries alternated, min ns a row, load 6–9,
// scores: 17.3–18.4 → 16.1–17.8 streamed (8 rounds), 17.2–17.5 → 16.2–17.2 with KVLAB_TOUCH=kv
// (3), 17.7–18.9 → 16.3–17.4 with KVLAB_NO_AVXVNNI=1 too (3; the same kernel); whole decodes,
// three rounds against main, 37.0–39.0 → 34.2–36.2.
func scoresAhead(f format) string {
	n := "ffp8w"
	k := scores(f)
	// The prologue and the step's setup, to the sums' zeroing, are scores'; the loop over the
	// groups and the reduction follow.
	k = strings.Replace(k, "·multiScoresFP8AVX2T(SB), NOSPLIT, $224-64", "·multiScoresFP8AVX2TW(SB), NOSPLIT, $480-64\n\tLEAQ 63(SP), BP\n\tANDQ $-64, BP              // the scratches: 384 bytes, 64-byte aligned", 1)
	k = strings.Replace(k, "// func multiScoresFP8AVX2T(", "// func multiScoresFP8AVX2TW(", 1)
	k = strings.ReplaceAll(k, "ffp8s_", n+"_")
	k = strings.Replace(k, "ostride int)\n", "ostride int)\n// multiScoresFP8AVX2T's scores, each group's codes widened a group ahead (gen_avx2f.go's scoresAhead).\n", 1)
	st := strings.Index(k, n+"_grp:\n")
	en := strings.Index(k, "\tMOVQ d+8(FP), CX\n\tADDQ DI, CX\n")
	if st < 0 || en < 0 {
		panic("scoresAhead: scores' group loop changed")
	}
	rows := []string{"(BX)", "(BX)(AX*1)", "(BX)(R14*1)"}
	qs := []string{"(CX)", "(CX)(DX*1)", "(CX)(DX*2)", "(CX)(R13*1)"}
	var b strings.Builder
	widen := func(buf int) {
		b.WriteString("\tPREFETCHT0 PFDISTF(BX)\n\tPREFETCHT0 PFDISTF(BX)(AX*1)\n\tPREFETCHT0 PFDISTF(BX)(R14*1)\n")
		for r := 0; r < 3; r++ {
			b.WriteString(fp8GrpTo(rows[r], fmt.Sprintf("%d(BP)", buf+64*r), fmt.Sprintf("%d(BP)", buf+64*r+32), "Y12", "Y13", "Y14", "Y15"))
		}
	}
	fmas := func(buf int) {
		for s := 0; s < 4; s++ {
			for r := 0; r < 3; r++ {
				fmt.Fprintf(&b, "\tVCVTPH2PS %d(BP), Y%d\n", buf+64*r+fp8Slot(s), 12+r)
			}
			for h, qo := range qs {
				fmt.Fprintf(&b, "\tVMOVUPS %d%s, Y15\n", 32*s, qo)
				for r := 0; r < 3; r++ {
					fmt.Fprintf(&b, "\tVFMADD231PS Y15, Y%d, Y%d\n", 12+r, 4*r+h)
				}
			}
		}
	}
	widen(0)
	for g, bufs := range [2][2]int{{0, 192}, {192, 0}} {
		fmt.Fprintf(&b, "%[1]s_g%[2]d:\n\tCMPQ R12, $1\n\tJEQ  %[1]s_l%[2]d\n\tADDQ $%[3]d, BX\n", n, g, f.gb)
		widen(bufs[1])
		fmas(bufs[0])
		fmt.Fprintf(&b, "\tSUBQ $-128, CX\n\tDECQ R12\n")
		if g == 1 {
			fmt.Fprintf(&b, "\tJMP  %s_g0\n", n)
		}
	}
	for g, buf := range []int{0, 192} {
		fmt.Fprintf(&b, "%s_l%d:\n", n, g)
		fmas(buf)
		if g == 0 {
			fmt.Fprintf(&b, "\tJMP  %s_sums\n", n)
		}
	}
	fmt.Fprintf(&b, "%s_sums:\n", n)
	return k[:st] + b.String() + k[en:]
}

// acc writes the accumulate kernel of f. Registers: SI accumulators, DX bytes between them, R13
// 3·DX, DI the tile's first row, R10 rows left, R9 the tile's weights, R14 the prefetch pointer,
// R11 groups left, BX the group's byte offset, CX its accumulators, R12 the pass's row, R8 its
// weights, R15 rows left in the pass. fp8's weights, times the row scales and 256, go to
// 0..1023(SP), 16 bytes a row.
func acc(f format) string {
	var b strings.Builder
	n := "f" + strings.ToLower(f.name) + "a"
	wstep := "ADDQ wstride+56(FP), R8"
	accHead(&b, f, "NOSPLIT", 16, n)
	b.WriteString("\tMOVQ R14, AX\n\tADDQ DI, R14\n") // AX: a tile's bytes, R14 + AX the tile after next
	fmt.Fprintf(&b, "\tMOVQ nv+16(FP), R11\n\tXORQ BX, BX\n\tMOVQ SI, CX\n\n%s_win:\n", n)
	fmt.Fprintf(&b, "\tCMPQ R11, $24\n\tJLT  %[1]s_w16\n", n)
	accs := []string{"(CX)", "(CX)(DX*1)", "(CX)(DX*2)", "(CX)(R13*1)"}
	pass := func(w int) {
		v := w / 8
		for q, a := range accs {
			for i := 0; i < v; i++ {
				fmt.Fprintf(&b, "\tVMOVUPS %d%s, Y%d\n", 32*i, a, q*v+i)
			}
		}
		fmt.Fprintf(&b, "\tLEAQ (DI)(BX*1), R12\n\tMOVQ R9, R8\n")
		fmt.Fprintf(&b, "\tMOVQ tn-8(SP), R15\n%s_row%d:\n\tPREFETCHT0 (R14)\n\tPREFETCHT1 (R14)(AX*1)\n\tADDQ $%d, R14\n", n, w, 2*w)
		for i := 0; i < v; i++ {
			b.WriteString(f.slice("(R12)", 8*i, fmt.Sprintf("Y%d", 12+i)))
		}
		for q := 0; q < 4; q++ {
			fmt.Fprintf(&b, "\tVBROADCASTSS %d(R8), Y15\n", 4*q)
			for i := 0; i < v; i++ {
				fmt.Fprintf(&b, "\tVFMADD231PS Y15, Y%d, Y%d\n", 12+i, q*v+i)
			}
		}
		fmt.Fprintf(&b, "\tADDQ rb+32(FP), R12\n\t%s\n\tDECQ R15\n\tJNZ  %s_row%d\n", wstep, n, w)
		for q, a := range accs {
			for i := 0; i < v; i++ {
				fmt.Fprintf(&b, "\tVMOVUPS Y%d, %d%s\n", q*v+i, 32*i, a)
			}
		}
		fmt.Fprintf(&b, "\tADDQ $%d, BX\n\tADDQ $%d, CX\n\tSUBQ $%d, R11\n\tJNZ  %s_win\n\tJMP  %s_tend\n", 2*w, 4*w, w, n, n)
	}
	pass(24)
	fmt.Fprintf(&b, "%[1]s_w16:\n\tCMPQ R11, $16\n\tJLT  %[1]s_w8\n", n)
	pass(16)
	fmt.Fprintf(&b, "%s_w8:\n", n)
	pass(8)
	tileEnd(&b, n, "tend")
	return b.String()
}

// accFP8 writes fp8's accumulate kernel: acc's tiles and passes over the tile's groups widened
// to f16 in two 4 KiB scratches at 1024(SP) and 5120(SP), 64 bytes a row, alternately: the
// first group before the passes, each next one by the current group's two passes, two rows a
// step, the first pass widening the even rows, the second the odd ones (one row a step each),
// so that its integer operations fill the slots the passes' FMAs leave. The passes' eight
// accumulator chains tie them to the FMA latency, 4 cycles a row step: with the whole widening
// in the second pass (one row a row step, as before) its row steps had more operations than
// those slots (Zen 4, KVLAB_NO_AVX512=1, rows of 128 values, thread CPU, alternated by call,
// three runs: 13.5–13.6 → 12.9–13.0 ns a row in cache, 14.2–14.3 → 13.7–13.9 streamed from
// 2 MiB pages; with no widening at all 11.9 in cache). Each widened row prefetches 32 bytes of
// the next tile into L1 and of the tile after next into L2 (PREFETCHT1, as acc does; without
// it the kernel measured 0.1–0.3 ns a row slower streamed, the same in cache). Where a whole
// tile follows (at least 128 rows left with this one's 64), the last group's passes widen the
// next tile's first group into the other scratch, even rows in the first pass and odd ones in
// the second, as they would a next group (R11 −1 or −2 says which scratch), the second pass
// prescales the next tile's weights over each row step's own once it has read them
// (prescale), and that tile starts without its weights' loop (_ws) and widening pass (_dec),
// which ran with no FMAs beside them: the widened bytes, the prescaled weights and every sum
// are the same, bit for bit. A run's flavour (multiAccFP8AVX2TPF, one tile a call) never takes
// it. Intel Xeon, KVLAB_NO_AVX512=1, attn TestDecodeBreakdown (131072 cells: the contiguous
// decode, whose calls cover a chunk of rows), test binaries alternated, min ns a row, load
// 8–11, values: the widening alone against main 18.6–19.2 → 17.2–18.2 streamed (4 rounds),
// 17.6–18.0 → 16.6–17.1 with KVLAB_TOUCH=kv (3), 19.0–20.3 → 18.2–18.6 with KVLAB_NO_AVXVNNI=1
// too (the same kernel); the weights too, against the widening alone, 18.0–19.4 → 17.7–18.5
// streamed (5 rounds), within noise with KVLAB_TOUCH=kv; against main 18.6–19.8 → 17.6–18.7
// (4). On Zen 4 (4096-row calls) the widening had measured 13.0 → 11.5 ns a row in cache and
// 13.9 → 12.5 streamed but not been kept: the decode measured then called the kernel a 64-cell
// page at a time. Widening the first group in the passes instead (16 values a row step in xmm
// registers, no scratch) took 0.5 ns a row more in the decode (values 13.4–14.3 → 14.1–14.4).
// R12 counts 16 bytes a row (the prescaled weights at 0(SP)(R12*1), the scratch row at
// (R12*4)), R15 is its end and te-16(SP) that of the pairs of rows, AX the row whose next group
// is widened, R8 a tile's bytes; the weights' broadcast is Y10, the widening's temporaries Y11,
// Y13..Y15 (Y12 and X11 the prescale's). Without ahead (the text gen_runs.go makes
// multiAccFP8AVX2TPF of, one tile a call: `go run gen_avx2f.go -onetile` writes it) the kernel
// has no next-tile path, the instructions of the kernel before it (commit 2c81847's parent).
func accFP8(f format, ahead bool) string {
	var b strings.Builder
	n := "ffp8a"
	var head strings.Builder
	accHead(&head, f, "0", 16+1024+2*4096, n)
	if ahead {
		b.WriteString(strings.Replace(head.String(), "\n"+n+"_tile:\n",
			"\tMOVQ $1, R11               // no tile's first group widened ahead (−1, −2: into 1024(SP), 5120(SP))\n\n"+n+"_tile:\n", 1))
	} else {
		b.WriteString(head.String())
	}
	fmt.Fprintf(&b, `	ADDQ DI, R14               // the next tile, prefetched 32 bytes a row step
	MOVQ AX, R15
	SHLQ $4, R15               // 16 bytes a row
	MOVQ R15, AX
	ANDQ $-32, AX
	MOVQ AX, te-16(SP)         // the rows' pairs, 32 bytes a pair
`)
	if ahead {
		fmt.Fprintf(&b, "\tCMPQ R11, $0\n\tJL   %s_wsd             // the weights prescaled by the last tile's last pass\n", n)
	}
	fmt.Fprintf(&b, `	MOVQ DI, AX
	MOVQ R9, R8
	MOVQ d+8(FP), CX
	XORQ R12, R12
%[1]s_ws:
	VMOVUPS (R8), X8
	VBROADCASTSS (AX)(CX*1), X9
	VMULPS ·avx2fF256(SB), X9, X9
	VMULPS X9, X8, X8
	VMOVUPS X8, (SP)(R12*1)
	ADDQ rb+32(FP), AX
	ADDQ wstride+56(FP), R8
	ADDQ $16, R12
	CMPQ R12, R15
	JNE  %[1]s_ws
`, n)
	if ahead {
		fmt.Fprintf(&b, "%s_wsd:\n", n)
	}
	fmt.Fprintf(&b, `	MOVQ DI, AX
	XORQ R12, R12
	MOVQ rb+32(FP), R8
	SHLQ $6, R8                // a tile's bytes: R14 + R8 the tile after next
`)
	if ahead {
		fmt.Fprintf(&b, "\tCMPQ R11, $0\n\tJL   %s_skip\n", n)
	}
	fmt.Fprintf(&b, `%[1]s_dec:
	PREFETCHT0 (R14)
	PREFETCHT1 (R14)(R8*1)
	ADDQ $32, R14
`, n)
	b.WriteString(fp8GrpTo("(AX)", "1024(SP)(R12*4)", "1056(SP)(R12*4)", "Y11", "Y13", "Y14", "Y15"))
	fmt.Fprintf(&b, "\tADDQ rb+32(FP), AX\n\tADDQ $16, R12\n\tCMPQ R12, R15\n\tJNE  %s_dec\n", n)
	fmt.Fprintf(&b, "\tMOVQ nv+16(FP), R11\n\tSHRQ $5, R11\n\tXORQ BX, BX\n\tMOVQ SI, CX\n")
	if ahead {
		fmt.Fprintf(&b, "\tJMP  %s_g0\n", n)
		// The tile's first group widened by the last tile's last passes (R11 −1: into 1024(SP), −2:
		// into 5120(SP)): its passes start from that buffer.
		fmt.Fprintf(&b, "%[1]s_skip:\n\tCMPQ R11, $-1\n\tJNE  %[1]s_skip1\n", n)
		fmt.Fprintf(&b, "\tMOVQ nv+16(FP), R11\n\tSHRQ $5, R11\n\tXORQ BX, BX\n\tMOVQ SI, CX\n\tJMP  %s_g0\n", n)
		fmt.Fprintf(&b, "%s_skip1:\n\tMOVQ nv+16(FP), R11\n\tSHRQ $5, R11\n\tXORQ BX, BX\n\tMOVQ SI, CX\n\tJMP  %s_g1\n", n, n)
	}
	accs := []string{"(CX)", "(CX)(DX*1)", "(CX)(DX*2)", "(CX)(R13*1)"}
	// row writes one row step of pass h over the group at cur, the row at R12 + 16·o.
	row := func(h, cur, o int) {
		fmt.Fprintf(&b, "\tVCVTPH2PS %d(SP)(R12*4), Y8\n\tVCVTPH2PS %d(SP)(R12*4), Y9\n", cur+64*o+fp8Slot(2*h), cur+64*o+fp8Slot(2*h+1))
		for q := 0; q < 4; q++ {
			fmt.Fprintf(&b, "\tVBROADCASTSS %d(SP)(R12*1), Y10\n\tVFMADD231PS Y10, Y8, Y%d\n\tVFMADD231PS Y10, Y9, Y%d\n", 16*o+4*q, 2*q, 2*q+1)
		}
	}
	// widen widens the next group of the row at AX into the scratch at next, the row at R12 +
	// 16·o, prefetching 32 bytes of the tiles ahead.
	widen := func(next, o int) {
		b.WriteString("\tPREFETCHT0 (R14)\n\tPREFETCHT1 (R14)(R8*1)\n\tADDQ $32, R14\n")
		b.WriteString(fp8GrpTo("(AX)", fmt.Sprintf("%d(SP)(R12*4)", next+64*o), fmt.Sprintf("%d(SP)(R12*4)", next+64*o+32), "Y11", "Y13", "Y14", "Y15"))
	}
	// prescale writes the next tile's prescaled weights of the row at BX (its scale) and R11
	// (its weights) over those of the row at R12 + 16·o, which the pass has read.
	prescale := func(o int) {
		fmt.Fprintf(&b, "\tVMOVUPS (R11), X12\n\tVBROADCASTSS (BX), X11\n\tVMULPS ·avx2fF256(SB), X11, X11\n\tVMULPS X11, X12, X12\n\tVMOVUPS X12, %d(SP)(R12*1)\n\tADDQ rb+32(FP), BX\n\tADDQ wstride+56(FP), R11\n", 16*o)
	}
	var passFrom func(label string, h, cur, next, par int, src string, pre bool)
	// pass writes pass h over the group at cur, two rows a step (then the odd row left), the
	// rows of parity par (0, 1; -1: none) widening their next group into next, one a step.
	pass := func(label string, h, cur, next, par int) {
		passFrom(label, h, cur, next, par, "\tLEAQ 32(DI)(BX*1), AX\n", false)
	}
	// passFrom is pass with AX set by src, and where pre, each row step's rows of the next
	// tile prescaled (prescale) over the weights the step has read: BX and R11 step over them.
	passFrom = func(label string, h, cur, next, par int, src string, pre bool) {
		for i, a := range accs {
			fmt.Fprintf(&b, "\tVMOVUPS %d%s, Y%d\n\tVMOVUPS %d%s, Y%d\n", 64*h, a, 2*i, 64*h+32, a, 2*i+1)
		}
		b.WriteString("\tXORQ R12, R12\n")
		if pre {
			b.WriteString("\tMOVQ rb+32(FP), BX\n\tSHLQ $6, BX\n\tADDQ DI, BX\n\tADDQ d+8(FP), BX         // the next tile's scales\n")
			b.WriteString("\tMOVQ wstride+56(FP), R11\n\tSHLQ $6, R11\n\tADDQ R9, R11              // and weights\n")
		}
		if par >= 0 {
			b.WriteString(src)
			if par == 1 {
				b.WriteString("\tADDQ rb+32(FP), AX\n")
			}
		}
		fmt.Fprintf(&b, "\tCMPQ R12, te-16(SP)\n\tJEQ  %[1]s_e\n%[1]s:\n", label)
		row(h, cur, 0)
		if par >= 0 {
			widen(next, par)
			b.WriteString("\tADDQ rb+32(FP), AX\n\tADDQ rb+32(FP), AX\n")
		}
		row(h, cur, 1)
		if pre {
			prescale(0)
			prescale(1)
		}
		fmt.Fprintf(&b, "\tADDQ $32, R12\n\tCMPQ R12, te-16(SP)\n\tJNE  %[1]s\n%[1]s_e:\n\tCMPQ R12, R15\n\tJEQ  %[1]s_d\n", label)
		row(h, cur, 0)
		if par == 0 {
			widen(next, 0)
		}
		if pre {
			prescale(0)
		}
		fmt.Fprintf(&b, "%s_d:\n", label)
		for i, a := range accs {
			fmt.Fprintf(&b, "\tVMOVUPS Y%d, %d%s\n\tVMOVUPS Y%d, %d%s\n", 2*i, 64*h, a, 2*i+1, 64*h+32, a)
		}
	}
	for k, bufs := range [2][2]int{{1024, 5120}, {5120, 1024}} {
		g := fmt.Sprintf("%s_g%d", n, k)
		fmt.Fprintf(&b, "\n%s:\n", g)
		fmt.Fprintf(&b, "\tCMPQ R11, $1\n\tJEQ  %s_last%d\n", n, k)
		pass(g+"p0", 0, bufs[0], bufs[1], 0)
		pass(g+"p1", 1, bufs[0], bufs[1], 1)
		fmt.Fprintf(&b, "\tADDQ $32, BX\n\tSUBQ $-128, CX\n\tDECQ R11\n")
		if k == 0 {
			fmt.Fprintf(&b, "\tJMP  %s_g1\n", n)
		} else {
			fmt.Fprintf(&b, "\tJMP  %s_g0\n", n)
		}
		fmt.Fprintf(&b, "%s_last%d:\n", n, k)
		if ahead {
			// A whole tile follows (R10, the rows left with this tile's 64, at least 128): the last
			// passes widen its first group into the other buffer, the widening pass it would start with.
			fmt.Fprintf(&b, "\tCMPQ R10, $128\n\tJLT  %s_lastp%d\n", n, k)
			nt := "\tMOVQ rb+32(FP), AX\n\tSHLQ $6, AX\n\tADDQ DI, AX\n"
			passFrom(g+"p0n", 0, bufs[0], bufs[1], 0, nt, false)
			passFrom(g+"p1n", 1, bufs[0], bufs[1], 1, nt, true)
			fmt.Fprintf(&b, "\tMOVQ $%d, R11\n\tJMP  %s_next\n", -2+k, n)
			fmt.Fprintf(&b, "%s_lastp%d:\n", n, k)
		}
		pass(g+"p0l", 0, bufs[0], -1, -1)
		pass(g+"p1l", 1, bufs[0], -1, -1)
		fmt.Fprintf(&b, "\tJMP  %s_next\n", n)
	}
	b.WriteString("\n")
	tileEnd(&b, n, "next")
	return b.String()
}

// accHead writes the TEXT line (flag flag, a frame of frame bytes) and the prologue of f's
// accumulate kernel n, up to the tile's rows in tn-8(SP) and R14 = 64·rb, which the caller
// adds DI to: the next tile, its prefetch pointer.
func accHead(b *strings.Builder, f format, flag string, frame int, n string) {
	fmt.Fprintf(b, `
// func multiAcc%[1]sAVX2T(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// %[2]s
TEXT ·multiAcc%[1]sAVX2T(SB), %[5]s, $%[3]d-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	TESTQ R10, R10
	JZ   %[4]s_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   %[4]s_done

%[4]s_tile:
	MOVQ R10, AX
	CMPQ AX, $64
	JLE  %[4]s_tn
	MOVQ $64, AX
%[4]s_tn:
	MOVQ AX, tn-8(SP)
	MOVQ rb+32(FP), R14
	SHLQ $6, R14
`, f.name, f.doc, frame, n, flag)
}

// accRuns is f16's accumulate kernel k made multiAccF16AVX2TPF, the kernel of a run of at most
// one tile (AccumulateManyMultiRuns): its prefetches go to the rows pf1 bytes from the run's
// (into L1) and pf2 bytes from them (into L2), the next runs of a paged store, instead of the
// tile after the run and the one after that in memory, another head's rows there. The
// instructions are k's but for the prefetch pointers, so are the sums.
func accRuns(k string) string {
	setup := "\tMOVQ rb+32(FP), R14\n\tSHLQ $6, R14\n\tMOVQ R14, AX\n\tADDQ DI, R14\n"
	if strings.Count(k, setup) != 1 {
		panic("accRuns: the f16 accumulate kernel's prefetch setup changed")
	}
	k = strings.Replace(k, setup, "\tMOVQ pf1+64(FP), R14\n\tMOVQ pf2+72(FP), AX\n\tSUBQ R14, AX\n\tADDQ DI, R14\n", 1)
	k = strings.Replace(k, "// func multiAccF16AVX2T(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)",
		"// func multiAccF16AVX2TPF(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf1, pf2 int)\n// multiAccF16AVX2T over at most one tile, prefetching the rows pf1 and pf2 bytes on (accRuns).", 1)
	k = strings.Replace(k, "TEXT ·multiAccF16AVX2T(SB), NOSPLIT, $16-64", "TEXT ·multiAccF16AVX2TPF(SB), NOSPLIT, $16-80", 1)
	return strings.ReplaceAll(k, "ff16a_", "ff16p_")
}

// tileEnd writes kernel n's label n_l, where a tile's passes end: the rows and weights step
// past the tile (tn-8(SP) rows), the next tile if rows are left, else the return.
func tileEnd(b *strings.Builder, n, l string) {
	fmt.Fprintf(b, `%[1]s_%[2]s:
	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ wstride+56(FP), R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  %[1]s_tile

%[1]s_done:
	VZEROUPPER
	RET
`, n, l)
}

const header = `// Code generated by gen_avx2f.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// AVX2 + FMA + F16C MultiQuery kernels of f16, bf16 and fp8 (gen_avx2f.go describes them).

// PFDISTF is how far ahead of a row the scores kernels prefetch, in bytes (gen_avx2f.go says
// why 3072).
#define PFDISTF 3072
`

func data(name string, words ...uint64) string {
	var b strings.Builder
	for i, w := range words {
		fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $%#016x\n", name, 8*i, w)
	}
	fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $%d\n\n", name, 8*len(words))
	return b.String()
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-onetile" {
		// The fp8 accumulate kernel without its next-tile path, for gen_runs.go.
		for _, f := range formats {
			if f.grp != nil {
				fmt.Print(accFP8(f, false))
			}
		}
		return
	}
	var b strings.Builder
	b.WriteString(header + "\n")
	b.WriteString(data("avx2fW4000", 0x4000400040004000, 0x4000400040004000, 0x4000400040004000, 0x4000400040004000))
	b.WriteString(data("avx2fW3F80", 0x3f803f803f803f80, 0x3f803f803f803f80, 0x3f803f803f803f80, 0x3f803f803f803f80))
	b.WriteString(data("avx2fW7C00", 0x7c007c007c007c00, 0x7c007c007c007c00, 0x7c007c007c007c00, 0x7c007c007c007c00))
	b.WriteString(data("avx2fB7F", 0x7f7f7f7f7f7f7f7f, 0x7f7f7f7f7f7f7f7f, 0x7f7f7f7f7f7f7f7f, 0x7f7f7f7f7f7f7f7f))
	b.WriteString(data("avx2fF256", 0x4380000043800000, 0x4380000043800000))
	for _, f := range formats {
		b.WriteString(scores(f))
		if f.grp != nil {
			b.WriteString(scoresAhead(f))
			b.WriteString(accFP8(f, true))
		} else {
			b.WriteString(acc(f))
			if f.name == "F16" {
				b.WriteString(accRuns(acc(f)))
			}
		}
	}
	if err := os.WriteFile("multi_avx2f_amd64.s", []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
