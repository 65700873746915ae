//go:build ignore

// gen_tq4vnni writes multi_tq4vnni_amd64.s: the AVX-512 VNNI scores kernels of tq4 and the
// turbo tiers, whose codes look up integer levels (tq4Ints, turboInts2, turboInts3) under one
// row scale. Run with `go generate ./native/kvq`.
//
// The work follows the iq4_nl VNNI kernel (multi_vnni_amd64.s), which reads the same nibble
// layout once the queries are permuted (tq4Permute: a 32-value group's even values, then its odd
// ones, so that payload byte j of the group holds permuted values j and 16 + j, as an iq4_nl
// block's byte j holds values j and 16 + j). Sixteen rows go at a time, one per 32-bit lane
// (lane 4m+g of every vector holds row 4g+m of the sixteen). Per 32-value group the rows' 16
// payload bytes are loaded four rows to a vector and transposed to dwords; low and high nibbles
// are looked up with VPSHUFB in tq4Ints + 128 (unsigned bytes 24..232) and VPDPBUSD multiplies
// them by the query's digits (one signed byte a value, vnniDigits), one chain a query started
// at −128·ΣQ, so that it holds Σ Q·tq4Ints exactly in int32. Each group's integer
// dot is converted and added times the query's group scale; after the last group the sum is
// multiplied by the row scale (f32 for tq4, f16 for turbo4) times tq4Unit and the query's
// offset is added.
//
// turbo2 (AVX-512 VBMI too) reads 16 code bytes a row at a time, 64 values: after the
// transpose, dword k of a lane holds values 16k..16k+15 of its row, four to a byte (byte b
// values 16k+4b..16k+4b+3, value 16k+4b+t in bits 2t..2t+1). VPERMB looks code t of every byte
// up at once in a 64-byte table indexed by the byte's low six bits (tables 0, 1, 2: code t is
// bits 2t..2t+1 of the index; code 3 through table 0 after a 16-bit shift by 6, the bits shifted
// in above it only selecting a repeat), so that code vector t's dword k holds the levels + 128 of
// values 16k+t, 16k+4+t, 16k+8+t, 16k+12+t. The query's digits are laid out to match: each
// 16-byte run of vnniDigits' digits transposed as a 4×4 matrix of bytes (t2DigitsPermute;
// q2kDigitsAVX512 writes that order itself), byte 4t + b the digit of value 4b + t, a
// permutation of the dot's terms that leaves each group's exact int32 sum as it is. Four lookups
// and a shift per data vector, where VPMULTISHIFTQB and VPERMB took eight: on AMD Zen 5
// VPMULTISHIFTQB issues on the two pipes that run VPDPBUSD. The two 32-value groups of the 64 are
// chained and finished one after the other.
//
// turbo3 (VBMI too) reads a group's 12 code bytes a row (masked loads: the row may end 2 bytes
// past them), spreads them with VPSHUFB so that dword k holds bytes 3k..3k+2 (values
// 8k..8k+7), transposes, and takes each dword's codes two to a byte with VPMULTISHIFTQB
// (bits 6b..6b + 5 for byte b: codes 2b, 2b + 1) and VPERMB in a table repeating turboInts3 +
// 128 (the low code; bits 3..5 select a repeat) and one of turboInts3 + 128 by bits 3..5 (the
// high code): code vectors 2k and 2k + 1 of a group hold values 8k + 2b and 8k + 2b + 1 in byte
// b, whose digits t3DigitsPermute puts there (each 8-byte run as its bytes 0, 2, 4, 6, 1, 3, 5,
// 7). Its first form, a VPMULTISHIFTQB a code vector (bits 3b and 12 + 3b), took twice as many:
// on AMD Zen 4 VPMULTISHIFTQB takes the two pipes of VPDPBUSD for a cycle, the VPERMB issue
// beside them.
// T3P is turbo3's kernel for rows at most 52 bytes apart (rb ≤ 52: d ≤ 133; multiScoresT3PVNNI):
// per four rows two loads masked by K1 to a row's 12 bytes and the next row's (rb bytes on) and
// one VPERMT2B by Z31 (t3PairIdx, adjusted for rb once a call) with zeroing (K7) that spreads
// them as LOAD4M and VPSHUFB do, where those took four loads, three inserts and a VPSHUFB; and
// its row scales staged by vector as T2P's are (stageP). On AMD Zen 4 (the time a row: see
// multiScoresT3PVNNI) this took ~16% off the kernel.
//
// Where T2P's and T3P's time goes on AMD Zen 4 (d 128, four queries, 4096-row calls in cache,
// thread CPU, min ns a row, each piece left out of a copy, not a working kernel, alternated with
// the kernel; T2P 3.5, T3P 4.15): all the VPDPBUSD (eight a row) 1.40 and 1.47; TRANSPOSE4 (T2P
// one unpack a row, T3P two) 0.23 and 0.35; the VPERMB lookups (two a row; T2P's with its
// half a shift) 0.26 and 0.43; FINISH's VCVTDQ2PS (one a row) 0.25 and 0.12, its FMA (one a
// row) 0.26 and 0.11. Each operation a row costs ~0.12–0.25 ns, VPDPBUSD ~0.18: the pipes,
// not the multiplies alone, bound them, and the dots' FINISH, the transposes and the lookups
// are each near their fewest (one lookup a code vector; a transpose of sixteen rows of two-row
// loads needs three two-source stages). T2P's LOAD4P with three loads merge-masked into their
// lanes for its VPERMT2B: in cache −0.03, streamed +0.11.
//
// turbo2's and turbo3's Zen 4 budgets (README "Speed targets": 0.28 and 0.35 of f16's 21.0 ms,
// ~5.6 and ~7.0 ns a row, ~21 and ~26 cycles at ~3.7 GHz) against their decodes there (bench
// 0.355 and 0.41, ~7.1 and ~8.2 ns; TestDecodeBreakdown turbo2 scores 3.03, values 3.4, the rest
// 0.7; turbo3 scores ~3.9): the 16 VPDPBUSD a row of scores and values take 16 cycles, 4.3 ns
// (1.4 ns measured above for the scores kernels' eight), so the 1.5 and 1.2 ns to cut are
// 40–70 % and 25–40 % of everything else both phases do but the softmax (decode, weights, finishes):
// fewer multiplies or a new layout, not a leaner kernel. mcakernels (-zenvnni, judged.specs'
// weights), cycles a row: multiScoresT2PUSVNNI 10.0, multiAccT2BMINT 16.9 (~14.2 on the
// decode's path), multiScoresT3PUVNNI 10.7 (low: LLVM's znver4 takes VPMULTISHIFTQB at half a
// cycle), multiAccT3BINT 19.0 (~16.4).
package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
)

// load4 loads a chunk's code bytes of four rows (LOAD4) and transposes them (TRANSPOSE4).
const load4 = `	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
`

// chunk4 is tq4's and turbo4's chunk: 16 code bytes a row, one group of 32 values.
const chunk4 = load4 + nibbles4 + tail4

// nibbles4 looks chunk4's nibbles up (VPSHUFB in the levels, Z20) after masking them (Z31).
const nibbles4 = `	VPANDD Z31, Z25, Z0
	VPSRLD $4, Z25, Z4
	VPANDD Z31, Z4, Z4
	VPANDD Z31, Z26, Z1
	VPSRLD $4, Z26, Z5
	VPANDD Z31, Z5, Z5
	VPANDD Z31, Z27, Z2
	VPSRLD $4, Z27, Z6
	VPANDD Z31, Z6, Z6
	VPANDD Z31, Z28, Z3
	VPSRLD $4, Z28, Z7
	VPANDD Z31, Z7, Z7
	VPSHUFB Z0, Z20, Z0
	VPSHUFB Z1, Z20, Z1
	VPSHUFB Z2, Z20, Z2
	VPSHUFB Z3, Z20, Z3
	VPSHUFB Z4, Z20, Z4
	VPSHUFB Z5, Z20, Z5
	VPSHUFB Z6, Z20, Z6
	VPSHUFB Z7, Z20, Z7
`

// tail4 is chunk4's and chunk4B's dot products and scores.
const tail4 = `
	VPBROADCASTD 48(DX), Z12   // −128·ΣQ: the levels' offset
	VPBROADCASTD 52(DX), Z13
	VPBROADCASTD 56(DX), Z14
	VPBROADCASTD 60(DX), Z15
	CHAINS1
	FINISH(Z12, 0, Z8)
	FINISH(Z13, 1, Z9)
	FINISH(Z14, 2, Z10)
	FINISH(Z15, 3, Z11)

	ADDQ $128, SI
	ADDQ $96, DX
`

// t2chunk is turbo2's chunk: 16 code bytes a row, 64 values in two groups.
const t2chunk = load4 + `	T2GROUP(Z25, Z26)
	T2GROUP(Z27, Z28)
`

// chunk4B is chunk4 for CPUs with AVX-512 VBMI (TQ4B, T4B): each nibble looked up by VPERMB in
// the table repeated over the vector's four lanes (Z20), whose index bits 4 and 5 (the other
// nibble's low bits) only select a repeat, so the low nibble needs no mask and the high one only
// its shift: eight VPERMB and four shifts where chunk4 takes eight VPSHUFB, four shifts and
// eight VPANDD. On AMD Zen 4 2–5% off the kernel in cache (multiScoresTQ4BVNNI).
//
// Two chunks a step (TQ4B2, T4B2: chunk4B2), each four rows' 32 code bytes by two 32-byte
// loads (a load and a VINSERTI64X4) split into the two chunks' LOAD4 layout by two VSHUFI64X2
// (LOAD8), four operations where two LOAD4 take six inserts (the scores bit for bit), with
// each line also prefetched into L2 PFFAR bytes beyond the PREFETCHT0 (~25 KiB ahead of the
// rows), on rows of an even number of chunks where the large buffers get 2 MiB pages
// (hugemem.Huge: the KV caches' row stores come from hugemem.Bytes). On AMD Zen 4 (d 128,
// four queries, thread CPU, the kernels alternated pass by pass in one process; 128 MiB of
// keys and of values from hugemem.Bytes in 16384-row chunks, each chunk's scores then its
// values, as attention's Decode takes them; min ns a row of 10–12 passes, load 5–15 on 2
// vCPUs): streamed tq4 4.38 → 4.07, turbo4 4.47 → 4.10; in cache (4096 rows) tq4 4.22 →
// 4.00, turbo4 4.38 → 4.08. At the bench shape (native/attn TestDecodeBreakdown, 131072
// cells, 32/8 heads, one thread, one test binary alternated five times, scores min ns a cell)
// tq4 4.33–5.11 → 3.99–4.67 (4.33–4.59 → 3.99–4.13 in four of the five), turbo4 4.40–4.60 →
// 4.05–4.24. Not measured on Intel cores or Zen 5; by instruction tables (Ice Lake, Sapphire
// Rapids: VINSERTI32X4 and VSHUFI64X2 each one port-5 shuffle) LOAD8 takes four port-5 uops
// where two LOAD4 take six. Its parts alone, in the same runs: two chunks a step without the
// L2 prefetch, in cache tq4 3.89 and turbo4 3.98 but streamed 4.35 and 4.54, no gain (so
// this form first lost, +0.7 to +1.3 streamed, on 4 KiB pages with PREFETCHT0 alone); the
// L2 prefetch alone, one chunk a step, streamed −0.1; the loop unrolled to two chunks with
// LOAD4's 16-byte loads and the L2 prefetch, ±0.05 (the gain is LOAD8's, not the loop's);
// the L2 prefetch 8 or 32 KiB beyond the PREFETCHT0 instead of 16, within ±0.05; the L2
// prefetch of every other line only (three PREFETCHT1 a chunk): streamed tq4 4.18 → 4.33 and
// 4.26 → 4.54, turbo4 ±0.2; the L2 prefetch without the PREFETCHT0: streamed 5.8–6.2 against
// 4.25–4.31, in cache ±0.05; PFGROUPS 4 or 16 instead of 8 (decode, four alternations):
// within noise. On 4 KiB pages (KVLAB_NO_HUGEPAGES=1) the two-chunk kernel streamed tq4
// 4.63 → 5.08 and 4.53 → 4.84, turbo4 4.62 → 4.59 and 4.53 → 4.32: hence the one-chunk
// kernels there. The row scales are staged by stageV (which see). The L2 prefetch added to
// the one-chunk turbo3 and turbo2 kernels (T3P, T2P; 16 or 32 KiB beyond the PREFETCHT0,
// huge pages, decode, five alternations): turbo3 4.13–4.67 → 4.17–4.85, turbo2 3.48–4.06 →
// 3.44–4.42, no gain; again with 8 or 16 KiB (ten alternations, scores min/median of the runs'
// minima): turbo2 3.47/3.50 → 3.42/3.50 and 3.45/3.48, turbo3 4.09/4.14 → 4.05/4.14 and
// 4.08/4.15, no gain (q2k's group kernels, the same loop, gain: q2kFar). LOAD4's three inserts as three loads merge-masked into their lanes: in
// cache +0.06 to +0.14, streamed +0.06 to +0.2.
const chunk4B = load4 + nibbles4B + tail4

// chunk4B2 is two chunk4B a step (TQ4B2, T4B2): LOAD8 for eight LOAD4 (both chunks' layout at
// once, the second's in Z16..Z19), then each chunk's transpose, lookups, dots and scores.
const chunk4B2 = `	LOAD8(CX, Z24, Y24, Z16)
	LOAD8(BX, Z25, Y25, Z17)
	LOAD8(R14, Z26, Y26, Z18)
	LOAD8(R15, Z27, Y27, Z19)
	TRANSPOSE4
` + nibbles4B + tail4 + "\tTRANSPOSE4X\n" + nibbles4B + tail4

// q2kFar is body with each line its loop prefetches (PREFETCHT0, PFGROUPS groups ahead) also
// prefetched into L2 PFFAR bytes further on (PREFETCHT1): q2k's group flavours for AMD Zen 4
// (Q2KGZ4, Q2KGPZ4; multiScoresQ2KGZ4VNNI's comment has the measurements).
func q2kFar(b string) string {
	const pf = `	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
`
	const pf2 = `	PREFETCHT0 (AX)
	PREFETCHT1 PFFAR(AX)
	PREFETCHT0 64(AX)
	PREFETCHT1 PFFAR+64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT1 PFFAR+128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT1 PFFAR+192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT1 PFFAR+256(AX)
`
	if strings.Count(b, pf) != 1 {
		panic("q2kFar: body changed")
	}
	return strings.Replace(b, pf, pf2, 1)
}

// q2kFarX is q2kFar's body for Intel CPUs (Q2KGX, Q2KGPX; q2k_amd64.go's q2kSparse): of each
// step's five lines only those at 0 and 192 are prefetched into L2 PFFAR bytes on (two
// PREFETCHT1 a 320-byte step, about one line in three), as the Intel q5 scores kernels' far
// prefetches (multi_vnni_amd64.go's PF22X and PF20X) are; the L2's own streamer fetches the
// lines between. The same instructions otherwise, so the same scores. q2k_amd64.go's q2kSparse
// has the measurements.
func q2kFarX(b string) string {
	b = q2kFar(b)
	for _, o := range []string{"+64", "+128", "+256"} {
		l := "\tPREFETCHT1 PFFAR" + o + "(AX)\n"
		if strings.Count(b, l) != 1 {
			panic("q2kFarX: body changed")
		}
		b = strings.Replace(b, l, "", 1)
	}
	return b
}

// tq4FarX is body with two of each step's five lines (at 0 and 192) also prefetched into L2
// PFFARX bytes past its PREFETCHT0 (PFGROUPS groups ahead): the one-chunk kernels' Intel
// flavours (TQ4BX, T4BX; multi_tq4vnni_amd64.go's tq4X has the measurements), and turbo3's
// per-group one's (T3PX; t3X), sparse as q2k's Intel flavours' (q2kFarX). The same instructions otherwise, so the same scores.
func tq4FarX(b string) string {
	const pf = "\tPREFETCHT0 256(AX)\n\tADDQ $320, AX\n"
	if strings.Count(b, pf) != 1 {
		panic("tq4FarX: body changed")
	}
	return strings.Replace(b, pf, "\tPREFETCHT0 256(AX)\n\tPREFETCHT1 PFFARX(AX)\n\tPREFETCHT1 PFFARX+192(AX)\n\tADDQ $320, AX\n", 1)
}

// tq4Split is body over two streams of rows (the one-chunk kernels' Intel flavours, TQ4BX and
// T4BX; multi_tq4vnni_amd64.go's tq4X has the measurements): its groups of sixteen rows taken
// alternately from the call's first ⌈groups/2⌉ groups and from the rest (R13 and the m
// argument's slot hold the other stream's rows and scores), each stream's lines read in order
// and prefetched into L1 two of its own groups on (PFGROUPS: 8), as multi_vnni_amd64.go's
// q50Split reads q5_0's. Each group's code is the same, so the same scores; ostride must be at
// least 16 (a group's stores stay in its rows').
func tq4Split(b string) string { return tq4SplitAt(b, 2) }

// tq4SplitAt is tq4Split with each stream prefetched into L1 ahead of its own groups on:
// turbo3's and turbo2's per-group Intel flavours (T3PS, T2PS; multi_tq4vnni_amd64.go's t23Split)
// take three (2.4 and 1.6 KiB at d 128); 2, 4 and 6 measured alike there.
func tq4SplitAt(b string, ahead int) string {
	if strings.Contains(b, "R13") {
		panic("tq4Split: R13 taken")
	}
	for _, r := range [][2]string{
		{"\tSHRQ $4, R10               // groups of sixteen rows\n\tJZ   @_done\n",
			"\tSHRQ $4, R10               // groups of sixteen rows\n\tJZ   @_done\n" +
				"\tMOVQ R10, AX               // two streams: the first ⌈groups/2⌉ groups (DI, R9) and the rest\n" +
				"\tINCQ AX\n\tSHRQ $1, AX\n\tMOVQ R8, R13\n\tSHLQ $4, R13\n\tIMULQ AX, R13\n" +
				"\tADDQ DI, R13               // the second stream's rows\n" +
				"\tIMULQ ostride+56(FP), AX\n\tSHLQ $4, AX\n\tADDQ R9, AX\n" +
				"\tMOVQ AX, m+40(FP)          // the second stream's scores (the stream not in DI and R9)\n"},
		{"\tIMULQ $PFGROUPS, AX", fmt.Sprintf("\tIMULQ $%d, AX", ahead)},
		{"\tADDQ AX, DI\n%NEXTG%\tDECQ R10\n\tJNZ  @_group\n",
			"\tADDQ AX, DI\n%NEXTG%\tXCHGQ DI, R13              // the other stream's next group\n" +
				"\tMOVQ m+40(FP), AX\n\tMOVQ R9, m+40(FP)\n\tMOVQ AX, R9\n\tDECQ R10\n\tJNZ  @_group\n"},
	} {
		if strings.Count(b, r[0]) != 1 {
			panic("tq4Split: body changed: " + r[0])
		}
		b = strings.Replace(b, r[0], r[1], 1)
	}
	return b
}

// pairBody is body for chunk4B2's kernels: the loop runs over pairs of chunks (nb even),
// prefetches each line into L1 as body does and into L2 PFFAR bytes further on, and the row
// scales are staged by stageV (no stage buffer).
var pairBody = func() string {
	const pf = `	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	ADDQ $320, AX
`
	const pf2 = `	PREFETCHT0 (AX)
	PREFETCHT1 PFFAR(AX)
	PREFETCHT0 64(AX)
	PREFETCHT1 PFFAR+64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT1 PFFAR+128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT1 PFFAR+192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT1 PFFAR+256(AX)
	ADDQ $320, AX
`
	const nb = "\tMOVQ nb+16(FP), R11\n\tVPXORD Z8"
	if !strings.Contains(body, pf) || !strings.Contains(body, nb) {
		panic("pairBody: body changed")
	}
	const st = "\tMOVQ stage+72(FP), SI\n\t%STAGE%"
	if !strings.Contains(body, st) {
		panic("pairBody: body changed")
	}
	b := strings.Replace(body, pf, pf2+pf2, 1)
	b = strings.Replace(b, st, "\t%STAGE%", 1) // stageV needs no stage
	return strings.Replace(b, nb, "\tMOVQ nb+16(FP), R11\n\tSHRQ $1, R11               // pairs of chunks\n\tVPXORD Z8", 1)
}()

// nibbles4B is nibbles4 by VPERMB (chunk4B).
const nibbles4B = `	VPSRLD $4, Z25, Z4
	VPSRLD $4, Z26, Z5
	VPSRLD $4, Z27, Z6
	VPSRLD $4, Z28, Z7
	VPERMB Z20, Z25, Z0
	VPERMB Z20, Z26, Z1
	VPERMB Z20, Z27, Z2
	VPERMB Z20, Z28, Z3
	VPERMB Z20, Z4, Z4
	VPERMB Z20, Z5, Z5
	VPERMB Z20, Z6, Z6
	VPERMB Z20, Z7, Z7
`

// t2chunkP is t2chunk for rows at most 48 bytes apart (T2P, Q2KP): LOAD4P for LOAD4.
var t2chunkP = strings.ReplaceAll(t2chunk, "LOAD4(", "LOAD4P(")

// q2kChunk is t2chunk for q2k's kernels, whose query grid is per 64 channels (a chunk): the
// two 32-value groups in one chain a query (Q2KGROUPA, Q2KGROUPB), converted and scaled once.
var q2kChunk = strings.Replace(strings.Replace(t2chunk, "T2GROUP(Z25", "Q2KGROUPA(Z25", 1), "T2GROUP(Z27", "Q2KGROUPB(Z27", 1)

// q2kChunkP is q2kChunk for rows at most 48 bytes apart (Q2KP and its group flavours).
//
// On an Intel Xeon (family 6 model 167, Sapphire Rapids class) a 512-bit VPDPBUSD issues on
// ports 0 and 5, not port 0 alone: 1.80–1.85 a cycle from registers (12 independent chains),
// 1.60–1.66 with the embedded broadcast from memory, the 256-bit form 2.0, VPERMB zmm 1.0,
// VFMADD231PS zmm 1.85–1.9, VPDPBUSD and VPERMB mixed 1.84 a cycle together, masked
// zeroing byte loads no port-5 µop beside VPERMB; a VPDPBUSD's latency ~5.5 cycles (four
// chains four deep: 22.8 cycles an iteration); the clock ~4.0 GHz (a dependent IMUL chain).
// Not kept there: two chains a query a chunk (the second group's products in four chains of
// their own from zero, VPADDD before FINISH: the same sums, chains eight VPDPBUSD deep in place
// of sixteen): ScoresRangeMulti at d 128 with q2kFar's kernels (4096 and 16384-cell calls,
// alternated in one process, load ~16, ns a cell min/median) in cache 3.89/3.90 → 3.97/3.99 and
// 3.87/3.90 → 3.94/3.96, streamed 5.15/5.35 → 5.23/5.33 and 4.33/4.57 → 4.55/4.71: the
// out-of-order window already overlaps a chunk's chains with the next chunk's. Where
// multiScoresQ2KGPZ4VNNI's 2.67–2.74 ns a cell in cache goes there (a group's 32 cells a
// call, 4096 cells, d 128; each piece taken out alone, wrong scores, timing only, load ~24):
// the 16 VPERMB a chunk 0.2, the digits' embedded broadcasts (a register instead) 0.14, the
// transpose 0.1, the prefetches nothing; the 64 VPDPBUSD a chunk (35 cycles at 1.8 a cycle)
// and the rest ~2.2.
var q2kChunkP = strings.ReplaceAll(q2kChunk, "LOAD4(", "LOAD4P(")

// t3chunkP is t3chunk for rows at most 52 bytes apart (T3P): LOAD4T3P for LOAD4M and VPSHUFB.
var t3chunkP = func() string {
	s := strings.ReplaceAll(t3chunk, "LOAD4M(", "LOAD4T3P(")
	for _, z := range []string{"Z24", "Z25", "Z26", "Z27"} {
		s = strings.Replace(s, "\tVPSHUFB ·turbo3VNNIShuf(SB), "+z+", "+z+"\n", "", 1)
	}
	return s
}()

// Uniform-scale flavours (T2PU, T3PU; AMD Zen 4 only, multiScoresT2PUVNNI): each query is
// quantized with one scale for all its d values (vnniDigitsUni), not one a 32-value group, so
// that a row's whole dot is one exact int32 sum: one chain a query runs on over every group
// of the row, started at the query's −128·ΣQ, and is converted and scaled once per sixteen
// rows (bodyU), where the per-group kernels (T2P, T3P) take a group's four broadcasts of
// −128·ΣQ, four VCVTDQ2PS and four FMAs. Chains of 32 VPDPBUSD (d 128), four side by side:
// two a query (turbo2's groups alternating, added at the end; turbo3's chunks two a loop
// step) measured the same on AMD Zen 4 (kernel alone, in cache, ns a row: turbo2 3.25 against
// 3.21, turbo3 4.04 against 4.03).

// t2chunkPU is t2chunkP for T2PU: the groups' chains continue (T2GROUPU).
var t2chunkPU = func() string {
	s := strings.Replace(t2chunkP, "T2GROUP(Z25, Z26)", "T2GROUPU(Z25, Z26, Z12, Z13, Z14, Z15)", 1)
	s = strings.Replace(s, "T2GROUP(Z27, Z28)", "T2GROUPU(Z27, Z28, Z12, Z13, Z14, Z15)", 1)
	if s == t2chunkP || strings.Contains(s, "T2GROUP(") {
		panic("t2chunkPU: t2chunkP changed")
	}
	return s
}()

// t2chunkU is t2chunk for T2U (rows more than 48 bytes apart): the groups' chains continue.
var t2chunkU = func() string {
	s := strings.Replace(t2chunk, "T2GROUP(Z25, Z26)", "T2GROUPU(Z25, Z26, Z12, Z13, Z14, Z15)", 1)
	s = strings.Replace(s, "T2GROUP(Z27, Z28)", "T2GROUPU(Z27, Z28, Z12, Z13, Z14, Z15)", 1)
	if s == t2chunk || strings.Contains(s, "T2GROUP(") {
		panic("t2chunkU: t2chunk changed")
	}
	return s
}()

// t3chunkPU is t3chunkP for T3PU: the group's chains continue (CHAINSU into Z12..Z15), no
// per-group offsets and scales.
var t3chunkPU = func() string {
	const tail = `	VPBROADCASTD 48(DX), Z12   // −128·ΣQ: the levels' offset
	VPBROADCASTD 52(DX), Z13
	VPBROADCASTD 56(DX), Z14
	VPBROADCASTD 60(DX), Z15
	CHAINS1
	FINISH(Z12, 0, Z8)
	FINISH(Z13, 1, Z9)
	FINISH(Z14, 2, Z10)
	FINISH(Z15, 3, Z11)
	ADDQ $128, SI
	ADDQ $96, DX
`
	if !strings.HasSuffix(t3chunkP, tail) || !strings.HasSuffix(t3chunk, tail) {
		panic("t3chunkPU: t3chunkP changed")
	}
	const u = "\tCHAINSU(Z12, Z13, Z14, Z15)\n\tADDQ $128, SI\n"
	t3chunkU = strings.TrimSuffix(t3chunk, tail) + u
	return strings.TrimSuffix(t3chunkP, tail) + u
}()

// t3chunkU is t3chunk for T3U (rows more than 52 bytes apart), as t3chunkPU is t3chunkP's.
var t3chunkU string

// bodyU is body for the uniform-scale kernels: the chains Z12..Z15 start at O_h = −128·ΣQ_h
// (the int32 at off[12+h]), and per query h the score is (Σ + O_h)·s_h·(s·unit) + offset_h,
// s_h the query's scale (off[8+h]): the sum exact in int32 and converted exactly (|Σ + O| =
// |Σ Q·L| ≤ d·127·90 < 2²⁴ for the d ≤ 512 that t23Uni admits), then two roundings (the product by s_h, the FMA). Its first form, the
// chains started at zero and O_h added at the end by VPADDD, the offset broadcast by
// VBROADCASTSS: turbo3's kernel 4.03 → 3.86 ns a row in cache with this one (AMD Zen 4).
var bodyU = uniBody(body)

// uniBody is bodyU's change made to a kernel body b (body, or pairBody for TQ4B2U).
func uniBody(body string) string {
	const zero = "\tVPXORD Z11, Z11, Z11\n"
	const aux = "\tMOVQ aux+8(FP), DX\n"
	const fin = `	// score = sum·(s·unit) + offset.
	MOVQ off+64(FP), AX
	VBROADCASTSS (AX), Z12
	VFMADD213PS Z12, Z21, Z8
	VBROADCASTSS 4(AX), Z12
	VFMADD213PS Z12, Z21, Z9
	VBROADCASTSS 8(AX), Z12
	VFMADD213PS Z12, Z21, Z10
	VBROADCASTSS 12(AX), Z12
	VFMADD213PS Z12, Z21, Z11
`
	if strings.Count(body, zero) != 1 || strings.Count(body, fin) != 1 || strings.Count(body, aux) != 1 {
		panic("bodyU: body changed")
	}
	var f strings.Builder
	f.WriteString("\t// score = (Σ + O_h)·s_h·(s·unit) + offset_h: query h's chains added, converted, times its\n\t// scale s_h (off[8+h]), times s·unit plus offset_h.\n\tMOVQ off+64(FP), AX\n")
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&f, "\tVCVTDQ2PS Z%d, Z%d\n", 12+h, 8+h)
		fmt.Fprintf(&f, "\tVMULPS.BCST %[2]d(AX), Z%[1]d, Z%[1]d\n\tVFMADD213PS.BCST %[3]d(AX), Z21, Z%[1]d\n", 8+h, 32+4*h, 4*h)
	}
	b := strings.Replace(body, aux, "\tMOVQ off+64(FP), DX\n", 1)
	b = strings.Replace(b, zero, zero+"\tVPBROADCASTD 48(DX), Z12   // O_h: the levels' offset\n\tVPBROADCASTD 52(DX), Z13\n\tVPBROADCASTD 56(DX), Z14\n\tVPBROADCASTD 60(DX), Z15\n", 1)
	return strings.Replace(b, fin, f.String(), 1)
}

// splitGroups is how many groups of sixteen rows splitU's kernels take a block.
const splitGroups = 8

// splitU is a uniform-scale kernel's text k (multiScores<name>VNNI, a paged kernel: its row
// scales staged by vector) as kernel <to>, for scores sixteen bytes apart (ostride 16, which it
// does not read): the groups go in blocks of up to splitGroups, each block in two passes. The
// first runs each group's chains and stores them raw, four vectors of int32, where the group's
// scores go; the second stages each group's row scales, loads its chains back and converts,
// scales, transposes and stores them as k does, so the scores are k's bit for bit. In k the
// conversion waits on the last links of the group's chains, and the next group's stage and
// chains wait behind it. On AMD Zen 4 (native/attn TestDecodeBreakdown, turbo2, 131072 cells,
// 32/8 heads, one thread, builds alternated three times, scores min ns a cell): 3.25–3.35 →
// 3.02–3.03 with blocks of 4 or 8 groups, 3.04–3.08 with 32; in one pass over the whole call
// (16384 rows) 3.13–3.16; with blocks of 8, eight alternations against main at load ~11, means
// of the minima, scores 3.32 → 3.04, values 3.44 → 3.38, the whole decode 7.37 → 7.15 (on 4 KiB
// pages, KVLAB_NO_HUGEPAGES=1, eight alternations, means of the minima: scores 3.40 → 3.28, the
// values' phase 3.82 → 3.94, unexplained, the whole 7.92 → 7.88). The kernel alone
// (TestT2PUSplitSpeed, d 128, min ns a row, three alternations): in cache 3.26–3.41 →
// 2.96–3.08, streamed in 4096-row calls 3.20–3.24 → 2.99–3.03, in 64-row calls (a paged
// cache's pages, the runs flavour's) 3.25–3.27 → 3.00–3.02. What did not pay on top: two chains
// a query (the groups alternating, added before the stores; ±0.05), the loads unmasked with the
// second folded into the VPERMT2B (−0.03, and it would read past the rows). turbo3's (T3PU)
// measured the same as its kernel with blocks of 4 or 8 (3.83–3.89 both) and slower in one pass
// (4.08–4.34): it is not split. Its finish left out of a copy (timing only) took 0.27 ns a row
// off, about what its twenty operations a group cost at turbo3's ~0.2 ns an operation a row:
// there the tail is issue, not waiting, and the split keeps every operation.
func splitU(k, name, to string) string {
	k = strings.ReplaceAll(k, name+"_", to+"_")
	k = strings.Replace(k, "multiScores"+name+"VNNI", "multiScores"+to+"VNNI", 2)
	cut := func(from, to string) (string, int, int) {
		i, j := strings.Index(k, from), strings.Index(k, to)
		if i < 0 || j < i || strings.Count(k, from) != 1 || strings.Count(k, to) != 1 {
			panic("splitU: " + name + " changed")
		}
		return k[i:j], i, j
	}
	_, g, _ := cut(to+"_group:\n", "\t// The sixteen row scales")
	stage, s0, s1 := cut("\t// The sixteen row scales", "\tMOVQ dig+0(FP), SI\n")
	fin, f0, _ := cut("\t// score = (Σ + O_h)", "\tSCORES_T\n")
	if strings.Count(k, "R12") != 1 || strings.Count(k[:g], "LEAQ (R8)(R8*2), R12") != 1 || strings.Contains(k, "R13") {
		panic("splitU: " + name + " uses R12 or R13") // the block's counters
	}
	const step = "\tADDQ $256, R9\n\tMOVQ R8, AX\n\tSHLQ $4, AX\n\tADDQ AX, DI\n"
	const ptrs = "\tMOVQ DI, CX\n\tLEAQ (CX)(R8*4), BX\n\tLEAQ (BX)(R8*4), R14\n\tLEAQ (R14)(R8*4), R15\n"
	var b strings.Builder
	b.WriteString(k[:g])
	fmt.Fprintf(&b, "@_block:\n\tMOVQ $%d, R13               // groups in this block\n\tCMPQ R10, R13\n\tCMOVQLT R10, R13\n\tMOVQ R13, R12\n\n", splitGroups)
	b.WriteString(k[g:s0])
	b.WriteString(k[s1:f0])
	b.WriteString("\t// The chains, raw, where the group's scores go; the block's second pass converts them.\n")
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, "\tVMOVDQU32 Z%d, %d(R9)\n", 12+h, 64*h)
	}
	b.WriteString(step + "\tDECQ R12\n\tJNZ  @_group\n\n")
	b.WriteString("\t// Back to the block's first group.\n\tMOVQ R13, AX\n\tSHLQ $8, AX\n\tSUBQ AX, R9\n\tMOVQ R8, AX\n\tSHLQ $4, AX\n\tIMULQ R13, AX\n\tSUBQ AX, DI\n\tMOVQ R13, R12\n\n")
	b.WriteString("@_fin:\n" + ptrs + stage)
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, "\tVMOVDQU32 %d(R9), Z%d\n", 64*h, 12+h)
	}
	b.WriteString(fin + "\tSCORES_T\n\tSCORES_CONTIG\n" + step + "\tDECQ R12\n\tJNZ  @_fin\n\tSUBQ R13, R10\n\tJNZ  @_block\n\n@_done:\n\tVZEROUPPER\n\tRET\n")
	return strings.ReplaceAll(b.String(), "@", to)
}

// chunk4B2U is chunk4B2 for TQ4B2U, the uniform-scale flavour of TQ4B2 (tq4Uni): each chunk's
// chains continue (CHAINSU into Z12..Z15), no per-chunk offsets, conversions and scales.
var chunk4B2U = func() string {
	const u = "\tCHAINSU(Z12, Z13, Z14, Z15)\n\tADDQ $128, SI\n"
	if strings.Count(chunk4B2, tail4) != 2 {
		panic("chunk4B2U: chunk4B2 changed")
	}
	return strings.ReplaceAll(chunk4B2, tail4, "\n"+u)
}()

// t3chunk is turbo3's chunk: 12 code bytes a row, one group of 32 values.
const t3chunk = `	LOAD4M(CX, Z24, X24)
	LOAD4M(BX, Z25, X25)
	LOAD4M(R14, Z26, X26)
	LOAD4M(R15, Z27, X27)
	VPSHUFB ·turbo3VNNIShuf(SB), Z24, Z24
	VPSHUFB ·turbo3VNNIShuf(SB), Z25, Z25
	VPSHUFB ·turbo3VNNIShuf(SB), Z26, Z26
	VPSHUFB ·turbo3VNNIShuf(SB), Z27, Z27
	TRANSPOSE4
	VPMULTISHIFTQB Z25, Z22, Z1
	VPERMB Z20, Z1, Z0
	VPERMB Z23, Z1, Z1
	VPMULTISHIFTQB Z26, Z22, Z3
	VPERMB Z20, Z3, Z2
	VPERMB Z23, Z3, Z3
	VPMULTISHIFTQB Z27, Z22, Z5
	VPERMB Z20, Z5, Z4
	VPERMB Z23, Z5, Z5
	VPMULTISHIFTQB Z28, Z22, Z7
	VPERMB Z20, Z7, Z6
	VPERMB Z23, Z7, Z7
	VPBROADCASTD 48(DX), Z12   // −128·ΣQ: the levels' offset
	VPBROADCASTD 52(DX), Z13
	VPBROADCASTD 56(DX), Z14
	VPBROADCASTD 60(DX), Z15
	CHAINS1
	FINISH(Z12, 0, Z8)
	FINISH(Z13, 1, Z9)
	FINISH(Z14, 2, Z10)
	FINISH(Z15, 3, Z11)
	ADDQ $128, SI
	ADDQ $96, DX
`

const body = `
// func multiScores@VNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)
TEXT ·multiScores@VNNI(SB), NOSPLIT, $0-80
	MOVQ rows+24(FP), DI
	MOVQ rb+32(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+48(FP), R9
	MOVQ m+40(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   @_done
	%CONSTS%

@_group:
	// Row-group pointers: CX rows 0..3, BX rows 4..7, R14 rows 8..11, R15 rows 12..15.
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15

	// The sixteen row scales, lane 4m+g from row 4g+m (past the nb chunks of codes), times
	// the levels' unit (off[4]), into Z21.
	MOVQ nb+16(FP), R11
	%SOFF%
	MOVQ stage+72(FP), SI
	%STAGE%
	MOVQ off+64(FP), AX
	VMULPS.BCST 16(AX), Z21, Z21

	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+16(FP), R11
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 320 bytes
	SHLQ $4, AX                // per chunk of codes (a group of rows is at most 16·(16 + 4)
	IMULQ $PFGROUPS, AX        // bytes per chunk)
	ADDQ DI, AX

@_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	ADDQ $320, AX
%CHUNK%	ADDQ $%STEP%, CX
	ADDQ $%STEP%, BX
	ADDQ $%STEP%, R14
	ADDQ $%STEP%, R15
	DECQ R11
	JNZ  @_blk

	// score = sum·(s·unit) + offset.
	MOVQ off+64(FP), AX
	VBROADCASTSS (AX), Z12
	VFMADD213PS Z12, Z21, Z8
	VBROADCASTSS 4(AX), Z12
	VFMADD213PS Z12, Z21, Z9
	VBROADCASTSS 8(AX), Z12
	VFMADD213PS Z12, Z21, Z10
	VBROADCASTSS 12(AX), Z12
	VFMADD213PS Z12, Z21, Z11

	SCORES_T
	MOVQ ostride+56(FP), AX
	CMPQ AX, $16
	JNE  @_strided
	SCORES_CONTIG
	JMP  @_next

@_strided:
	SCORES_STRIDED

@_next:
	MOVQ ostride+56(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
%NEXTG%	DECQ R10
	JNZ  @_group

@_done:
	VZEROUPPER
	RET
`

// q2kBody is body for q2k's kernels, whose cells have no row scale and whose scores no offset
// or unit: q2kDigits folds the levels' unit into each chunk's query scale, so the chains'
// FINISH sums are the scores, where body's row scales 1 (Z21) times off[4] and four FMAs a
// sixteen rows scaled them (six operations a sixteen rows fewer; the scores round
// differently, within q2kScoresInt's bound). On Zen 4 (TestQ2KDecodeSplit, d 128, four
// queries, test binaries alternated five times, min/median of the runs' minima, load ~13 on 2
// vCPUs): the cells' kernel 3.15/3.17 → 3.05/3.09 ns a cell in cache, the scores 4.49/4.56 →
// 4.43/4.48 in cache and 4.44/4.49 → 4.33/4.42 streamed.
var q2kBody = func() string {
	const st = `	// The sixteen row scales, lane 4m+g from row 4g+m (past the nb chunks of codes), times
	// the levels' unit (off[4]), into Z21.
	MOVQ nb+16(FP), R11
	%SOFF%
	MOVQ stage+72(FP), SI
	%STAGE%
	MOVQ off+64(FP), AX
	VMULPS.BCST 16(AX), Z21, Z21

`
	const fin = `	// score = sum·(s·unit) + offset.
	MOVQ off+64(FP), AX
	VBROADCASTSS (AX), Z12
	VFMADD213PS Z12, Z21, Z8
	VBROADCASTSS 4(AX), Z12
	VFMADD213PS Z12, Z21, Z9
	VBROADCASTSS 8(AX), Z12
	VFMADD213PS Z12, Z21, Z10
	VBROADCASTSS 12(AX), Z12
	VFMADD213PS Z12, Z21, Z11

`
	if strings.Count(body, st) != 1 || strings.Count(body, fin) != 1 {
		panic("q2kBody: body changed")
	}
	b := strings.Replace(body, st, "", 1)
	return strings.Replace(b, fin, "\t// the sums are the scores (the unit is in the chunks' scales: q2kDigits)\n\n", 1)
}()

const macros = `// PFGROUPS is how many groups of sixteen rows ahead the kernels prefetch (PREFETCHT0). On AMD
// Zen 4 (the one-thread decode of 131072 cells, native/attn's TestDecodeBreakdown, builds
// alternated five or six times, load 8–11 on 2 vCPUs, scores ns a cell, medians) 2, 4, 12 groups
// scored within ~0.4 of 8, 16 slower (tq4 5.4 against 4.8, turbo4 5.5 against 5.0), none
// slower (tq4 5.2 against 4.8); a second level, PREFETCHT1 4 or 8 KiB beyond these, slower
// still (tq4 5.5–5.8 against 4.8, turbo2 4.2 against 3.8, turbo3 5.0–5.2 against 4.6, turbo4
// 5.7–5.8 against 4.9–5.0, q2k 5.9–6.6 against 5.5–5.7; at load 3, PREFETCHT1 8 KiB beyond:
// tq4 5.1 against 4.6, turbo4 5.2 against 4.6).
#define PFGROUPS 8

// PFFAR is how far beyond their PREFETCHT0 the two-chunk kernels (TQ4B2, T4B2) and q2k's Zen 4
// group kernels (Q2KGZ4, Q2KGPZ4) also prefetch each line into L2 (PREFETCHT1), and Intel's (Q2KGX,
// Q2KGPX) two lines of each step's five: gen_tq4vnni.go's chunk4B comment and q2k_amd64.go's
// multiScoresQ2KGZ4VNNI and q2kSparse have the measurements.
#define PFFAR 16384

// PFFARX is how far beyond their PREFETCHT0 the one-chunk kernels' Intel flavours (TQ4BX, T4BX)
// and turbo3's per-group one (T3PX) prefetch two lines of each step's five into L2
// (PREFETCHT1): multi_tq4vnni_amd64.go's tq4X and t3X have the measurements.
#define PFFARX 32768

// CHAIN1 adds code vector c times the four query bytes at offset off of each of the four
// queries' digit rows (query h at h·32) into accumulators a0..a3.
#define CHAIN1(c, off, a0, a1, a2, a3) \
	VPDPBUSD.BCST off(SI), c, a0; \
	VPDPBUSD.BCST off+32(SI), c, a1; \
	VPDPBUSD.BCST off+64(SI), c, a2; \
	VPDPBUSD.BCST off+96(SI), c, a3

// CHAINS1 runs a group's eight code vectors Z0..Z7 (Z0..Z3 the group's values 0..15: tq4's low
// nibbles, in permuted order; Z4..Z7 values 16..31) through CHAIN1 into one chain a query,
// Z12..Z15, started at −128·ΣQ: eight VPDPBUSD long, the exact int32 dot of the group. (Two
// chains a query, added at the end, cost a VPADDD a query and group: in cache on AMD Zen 5,
// ~1–6% of turbo2's and turbo3's scores, ~10% of turbo4's and tq4's. The longer chains cost
// nothing there: the groups in flight are independent, each group's chains starting afresh.)
#define CHAINS1 \
	CHAIN1(Z0, 0, Z12, Z13, Z14, Z15); \
	CHAIN1(Z4, 16, Z12, Z13, Z14, Z15); \
	CHAIN1(Z1, 4, Z12, Z13, Z14, Z15); \
	CHAIN1(Z5, 20, Z12, Z13, Z14, Z15); \
	CHAIN1(Z2, 8, Z12, Z13, Z14, Z15); \
	CHAIN1(Z6, 24, Z12, Z13, Z14, Z15); \
	CHAIN1(Z3, 12, Z12, Z13, Z14, Z15); \
	CHAIN1(Z7, 28, Z12, Z13, Z14, Z15)

// CHAINSU is CHAINS1 into the chains a0..a3 (the uniform-scale kernels, T2PU and T3PU).
#define CHAINSU(a0, a1, a2, a3) \
	CHAIN1(Z0, 0, a0, a1, a2, a3); \
	CHAIN1(Z4, 16, a0, a1, a2, a3); \
	CHAIN1(Z1, 4, a0, a1, a2, a3); \
	CHAIN1(Z5, 20, a0, a1, a2, a3); \
	CHAIN1(Z2, 8, a0, a1, a2, a3); \
	CHAIN1(Z6, 24, a0, a1, a2, a3); \
	CHAIN1(Z3, 12, a0, a1, a2, a3); \
	CHAIN1(Z7, 28, a0, a1, a2, a3)

// FINISH converts query h's chain a (its exact int32 dot of the group) and adds it, times the
// query's group scale (4h(DX)), to acc.
#define FINISH(a, h, acc) \
	VCVTDQ2PS a, a; \
	VFMADD231PS.BCST (4*h)(DX), a, acc

// LOAD4 loads the 16 payload bytes of rows p, p+rb, p+2rb, p+3rb into the four 128-bit lanes
// of z.
#define LOAD4(p, z, x) \
	VMOVDQU32 (p), x; \
	VINSERTI32X4 $1, (p)(R8*1), z, z; \
	VINSERTI32X4 $2, (p)(R8*2), z, z; \
	VINSERTI32X4 $3, (p)(R12*1), z, z

// LOAD8 loads two chunks' code bytes (32 a row) of rows p, p+rb, p+2rb, p+3rb, the first
// chunk's into the four 128-bit lanes of a and the second's into those of b, as LOAD4 would:
// rows 0 and 1 in a, rows 2 and 3 in Z29 (a row's 32 bytes in each half), then lanes 0 and 2 of
// each (the first chunk's) to a and lanes 1 and 3 to b. Clobbers Z29.
#define LOAD8(p, a, ya, b) \
	VMOVDQU64 (p), ya; \
	VINSERTI64X4 $1, (p)(R8*1), a, a; \
	VMOVDQU64 (p)(R8*2), Y29; \
	VINSERTI64X4 $1, (p)(R12*1), Z29, Z29; \
	VSHUFI64X2 $0xDD, Z29, a, b; \
	VSHUFI64X2 $0x88, Z29, a, a

// TRANSPOSE4X is TRANSPOSE4 of Z16..Z19 (in place of Z24..Z27), into Z25..Z28. Clobbers Z24,
// Z29, Z30.
#define TRANSPOSE4X \
	VPUNPCKLDQ Z17, Z16, Z28; \
	VPUNPCKHDQ Z17, Z16, Z29; \
	VPUNPCKLDQ Z19, Z18, Z30; \
	VPUNPCKHDQ Z19, Z18, Z24; \
	VPUNPCKLQDQ Z30, Z28, Z25; \
	VPUNPCKHQDQ Z30, Z28, Z26; \
	VPUNPCKLQDQ Z24, Z29, Z27; \
	VPUNPCKHQDQ Z24, Z29, Z28

// TRANSPOSE4 transposes the dwords of Z24..Z27 within 128-bit lanes: V0..V3 (Z25..Z28) lane
// (m, g) = dword k of row 4g+m. Clobbers Z24, Z29, Z30.
#define TRANSPOSE4 \
	VPUNPCKLDQ Z25, Z24, Z28; \
	VPUNPCKHDQ Z25, Z24, Z29; \
	VPUNPCKLDQ Z27, Z26, Z30; \
	VPUNPCKHDQ Z27, Z26, Z24; \
	VPUNPCKLQDQ Z30, Z28, Z25; \
	VPUNPCKHQDQ Z30, Z28, Z26; \
	VPUNPCKLQDQ Z24, Z29, Z27; \
	VPUNPCKHQDQ Z24, Z29, Z28

// SCORES_T transposes the four score vectors Z8..Z11 (query h, one row per lane) within
// 128-bit lanes: Wg (Z4+g) lane m holds the four scores of row 4g+m.
#define SCORES_T \
	VUNPCKLPS Z9, Z8, Z0; \
	VUNPCKHPS Z9, Z8, Z1; \
	VUNPCKLPS Z11, Z10, Z2; \
	VUNPCKHPS Z11, Z10, Z3; \
	VUNPCKLPD Z2, Z0, Z4; \
	VUNPCKHPD Z2, Z0, Z5; \
	VUNPCKLPD Z3, Z1, Z6; \
	VUNPCKHPD Z3, Z1, Z7

// SCORES_CONTIG stores W0..W3 as sixteen rows of four scores at R9 (out stride 16 bytes).
#define SCORES_CONTIG \
	VMOVUPS Z4, (R9); \
	VMOVUPS Z5, 64(R9); \
	VMOVUPS Z6, 128(R9); \
	VMOVUPS Z7, 192(R9)

// SCORES_ROW4 stores the four 128-bit lanes of z at BX, BX+AX, BX+2AX, BX+3AX (R11 = 3AX).
#define SCORES_ROW4(z, x) \
	VMOVUPS x, (BX); \
	VEXTRACTF32X4 $1, z, (BX)(AX*1); \
	VEXTRACTF32X4 $2, z, (BX)(AX*2); \
	VEXTRACTF32X4 $3, z, (BX)(R11*1)

// SCORES_STRIDED stores W0..W3 at R9 with AX bytes between rows (clobbers R11 and BX).
#define SCORES_STRIDED \
	LEAQ (AX)(AX*2), R11; \
	MOVQ R9, BX; \
	SCORES_ROW4(Z4, X4); \
	LEAQ (BX)(AX*4), BX; \
	SCORES_ROW4(Z5, X5); \
	LEAQ (BX)(AX*4), BX; \
	SCORES_ROW4(Z6, X6); \
	LEAQ (BX)(AX*4), BX; \
	SCORES_ROW4(Z7, X7)

// T2CODES makes the four code vectors of data vector v (codes 0..3 of its bytes) in d0..d3:
// VPERMB in the tables Z20, Z22, Z23 (codes 0, 1, 2), and code 3 by table Z20 after a 16-bit
// shift by 6.
#define T2CODES(v, d0, d1, d2, d3) \
	VPERMB Z20, v, d0; \
	VPERMB Z22, v, d1; \
	VPERMB Z23, v, d2; \
	VPSRLW $6, v, d3; \
	VPERMB Z20, d3, d3

// T2GROUP scores one 32-value group of turbo2 codes, data vectors a (values 0..15) and b
// (16..31), into Z8..Z11, and steps SI and DX to the next group's digits and scales.
#define T2GROUP(a, b) \
	T2CODES(a, Z0, Z1, Z2, Z3); \
	T2CODES(b, Z4, Z5, Z6, Z7); \
	VPBROADCASTD 48(DX), Z12; \
	VPBROADCASTD 52(DX), Z13; \
	VPBROADCASTD 56(DX), Z14; \
	VPBROADCASTD 60(DX), Z15; \
	CHAINS1; \
	FINISH(Z12, 0, Z8); \
	FINISH(Z13, 1, Z9); \
	FINISH(Z14, 2, Z10); \
	FINISH(Z15, 3, Z11); \
	ADDQ $128, SI; \
	ADDQ $96, DX

// Q2KGROUPA starts q2k's chains of a 64-value chunk (its query grid is per 64 channels) with
// its first 32-value group, data vectors a and b, at −128·ΣQ of the chunk (aux words 12..15
// of its first group); Q2KGROUPB runs the second group on in the same chains, then converts
// each query's chain and adds it times the chunk's query scale (FINISH), and steps DX past
// the chunk's two groups of aux words. One VCVTDQ2PS and one FMA a query and chunk, where
// T2GROUP takes them a group.
#define Q2KGROUPA(a, b) \
	T2CODES(a, Z0, Z1, Z2, Z3); \
	T2CODES(b, Z4, Z5, Z6, Z7); \
	VPBROADCASTD 48(DX), Z12; \
	VPBROADCASTD 52(DX), Z13; \
	VPBROADCASTD 56(DX), Z14; \
	VPBROADCASTD 60(DX), Z15; \
	CHAINS1; \
	ADDQ $128, SI

#define Q2KGROUPB(a, b) \
	T2CODES(a, Z0, Z1, Z2, Z3); \
	T2CODES(b, Z4, Z5, Z6, Z7); \
	CHAINS1; \
	FINISH(Z12, 0, Z8); \
	FINISH(Z13, 1, Z9); \
	FINISH(Z14, 2, Z10); \
	FINISH(Z15, 3, Z11); \
	ADDQ $128, SI; \
	ADDQ $192, DX

// T2GROUPU is T2GROUP for the uniform-scale kernel (T2PU): the group's products into the
// chains a0..a3, no per-group offsets and scales.
#define T2GROUPU(a, b, a0, a1, a2, a3) \
	T2CODES(a, Z0, Z1, Z2, Z3); \
	T2CODES(b, Z4, Z5, Z6, Z7); \
	CHAINSU(a0, a1, a2, a3); \
	ADDQ $128, SI

// LOAD4P is LOAD4 for rows at most 48 bytes apart: two loads masked by K1 to a row's 16 bytes
// and the next row's (rb bytes on), and one VPERMT2B by Z31 (pairIdx) that puts the four rows
// in the vector's 128-bit lanes, where LOAD4 takes three inserts. Clobbers Z16.
#define LOAD4P(p, z, x) \
	VMOVDQU8.Z (p), K1, z; \
	VMOVDQU8.Z (p)(R8*2), K1, Z16; \
	VPERMT2B Z16, Z31, z

// LOAD4T3P is LOAD4M then turbo3's VPSHUFB for rows at most 52 bytes apart: two loads masked by
// K1 to a row's 12 bytes and the next row's (rb bytes on), one VPERMT2B by Z31 (t3PairIdx),
// zeroing byte 3 of each dword (K7). Clobbers Z16.
#define LOAD4T3P(p, z, x) \
	VMOVDQU8.Z (p), K1, z; \
	VMOVDQU8.Z (p)(R8*2), K1, Z16; \
	VPERMT2B.Z Z16, Z31, K7, z

// LOAD4M is LOAD4 of 12 bytes a row (masked by K1; the other bytes zero).
#define LOAD4M(p, z, x) \
	VMOVDQU8.Z (p), K1, x; \
	VMOVDQU8.Z (p)(R8*1), K1, X29; \
	VINSERTI32X4 $1, X29, z, z; \
	VMOVDQU8.Z (p)(R8*2), K1, X29; \
	VINSERTI32X4 $2, X29, z, z; \
	VMOVDQU8.Z (p)(R12*1), K1, X29; \
	VINSERTI32X4 $3, X29, z, z

// STAGE32 copies the f32 scales of the four rows at p, p+rb, p+2rb, p+3rb (each R11 bytes in)
// to lanes g, 4+g, 8+g, 12+g of the sixteen words at SI.
#define STAGE32(p, g) \
	LEAQ (p)(R11*1), AX; \
	MOVL (AX), DX; \
	MOVL DX, (4*g)(SI); \
	MOVL (AX)(R8*1), DX; \
	MOVL DX, (16+4*g)(SI); \
	MOVL (AX)(R8*2), DX; \
	MOVL DX, (32+4*g)(SI); \
	MOVL (AX)(R12*1), DX; \
	MOVL DX, (48+4*g)(SI)

// STAGE16 is STAGE32 for f16 scales, into sixteen halves at SI.
#define STAGE16(p, g) \
	LEAQ (p)(R11*1), AX; \
	MOVWLZX (AX), DX; \
	MOVW DX, (2*g)(SI); \
	MOVWLZX (AX)(R8*1), DX; \
	MOVW DX, (8+2*g)(SI); \
	MOVWLZX (AX)(R8*2), DX; \
	MOVW DX, (16+2*g)(SI); \
	MOVWLZX (AX)(R12*1), DX; \
	MOVW DX, (24+2*g)(SI)
`

func stage(f32 bool) string {
	m, load := "STAGE16", "VCVTPH2PS (SI), Z21"
	if f32 {
		m, load = "STAGE32", "VMOVUPS (SI), Z21"
	}
	var b strings.Builder
	for g, p := range []string{"CX", "BX", "R14", "R15"} {
		fmt.Fprintf(&b, "%s(%s, %d)\n\t", m, p, g)
	}
	b.WriteString(load)
	return b.String()
}

// stageV is stage by vector inserts, with no stores: the row scale of row 4g+m (group
// pointer g of CX, BX, R14, R15, row m rb·m bytes on, the scale R11 bytes in) into lane 4m+g
// of Z21, for f32 scales by VMOVD and VPINSRD into 128-bit lane m's XMM register and three
// VINSERTI32X4, for f16 ones by VPINSRW into two XMM registers (words 4m+g) joined by
// VINSERTI128 and converted (each load the scale's own bytes: none past a row's end).
// Clobbers AX, DX, R13, SI, Z0..Z3. stage's STAGE32/STAGE16 take 16 scalar loads and 16
// stores, read back by one 64-byte (32-byte) load that no store can forward; on AMD Zen 4
// (the two-chunk kernels, TestTQ4PairSpeed's shape, alternated in one process, min ns a row)
// that staging cost 0.21–0.24 in cache and 0.25–0.3 streamed (a copy of the kernels without
// it), stageV 0.02–0.05: in cache tq4 4.00–4.02 → 3.83–3.86, turbo4 4.05–4.08 → 3.85–3.88,
// streamed tq4 4.05–4.15 → 3.96–3.99, turbo4 4.13–4.20 → 3.94–3.96; in the decode
// (TestDecodeBreakdown, five alternations, scores min ns a cell) tq4 4.00–4.14 → 3.85–3.97,
// turbo4 4.07–4.19 → 3.87–3.95. By instruction tables on Intel cores VPINSRD/VPINSRW from
// memory are a load and a port-5 shuffle each (16 of them, and 3 inserts): not measured. The
// one-chunk kernels (TQ4B, T4B, which run on 4 KiB pages) with stageV did not pay: in cache
// tq4 4.20–4.22 → 4.14–4.16, turbo4 4.32–4.35 → 4.09–4.20, but streamed on huge pages ±0.1
// and on 4 KiB pages +0.1 to +0.3 (two alternations of the test binaries): they keep stage.
func stageV(f32 bool) string {
	var b strings.Builder
	b.WriteString("LEAQ (CX)(R11*1), AX\n\tLEAQ (BX)(R11*1), DX\n\tLEAQ (R14)(R11*1), R13\n\tLEAQ (R15)(R11*1), SI\n\t")
	ptr := []string{"AX", "DX", "R13", "SI"}
	off := []string{"", "(R8*1)", "(R8*2)", "(R12*1)"}
	if f32 {
		for m := 0; m < 4; m++ {
			x := fmt.Sprintf("X%d", m)
			if m == 0 {
				x = "X21"
			}
			fmt.Fprintf(&b, "VMOVD (AX)%s, %s\n\t", off[m], x)
			for g := 1; g < 4; g++ {
				fmt.Fprintf(&b, "VPINSRD $%d, (%s)%s, %s, %s\n\t", g, ptr[g], off[m], x, x)
			}
		}
		b.WriteString("VINSERTI32X4 $1, X1, Z21, Z21\n\tVINSERTI32X4 $2, X2, Z21, Z21\n\tVINSERTI32X4 $3, X3, Z21, Z21")
		return b.String()
	}
	b.WriteString("VPXOR X0, X0, X0\n\tVPXOR X1, X1, X1\n\t")
	for m := 0; m < 4; m++ {
		x := fmt.Sprintf("X%d", m/2)
		for g := 0; g < 4; g++ {
			fmt.Fprintf(&b, "VPINSRW $%d, (%s)%s, %s, %s\n\t", 4*(m%2)+g, ptr[g], off[m], x, x)
		}
	}
	b.WriteString("VINSERTI128 $1, X1, Y0, Y0\n\tVCVTPH2PS Y0, Z21")
	return b.String()
}

// q2kT writes q2k's AVX-512 scores kernel, multiScoresQ2KT: float, with the work laid out as
// the VNNI kernels lay theirs. Sixteen cells go at a time, one per lane; per 64 values their 16
// code bytes are loaded four cells to a vector and transposed to dwords (LOAD4, TRANSPOSE4), so
// that dword k of a lane holds the codes of values 16k..16k+15 of its cell, value 16k+i in bits
// 2i. Per value, one VPSRLD brings its code to the low bits and one VPERMPS looks it up in
// q2kZL (q2kLevels repeated: the bits above the code select a repeat); four FMAs then add the
// level times the value of each query (the group's channel scales folded in, q2kScaleAVX512),
// broadcast from memory, into four chains a query (values i mod 4), summed pairwise at the end.
// A lane's chain adds d/4 products in order, each FMA rounding once: a score is within
// (d/4 + 4)·2⁻²⁴·Σ_c |q_c·k̂_c| of the exact one (the scaled query's rounding, the chains and
// the two adds, and k̂'s own rounding in Decode).
func q2kT() string {
	var b strings.Builder
	b.WriteString(`
// func multiScoresQ2KT(qs *float32, d int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresQ2KT(SB), NOSPLIT, $0-56
	MOVQ rows+16(FP), DI
	MOVQ rb+24(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+40(FP), R9
	MOVQ m+32(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   Q2KT_done
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between queries
	LEAQ (DX)(DX*2), R13       // 3 queries
	VMOVUPS ·q2kZL(SB), Z31

Q2KT_group:
	// Row-group pointers: CX rows 0..3, BX rows 4..7, R14 rows 8..11, R15 rows 12..15.
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ qs+0(FP), SI
	MOVQ d+8(FP), R11
	SHRQ $6, R11               // chunks of 64 values
`)
	for z := 8; z < 24; z++ {
		fmt.Fprintf(&b, "\tVPXORD Z%d, Z%d, Z%d\n", z, z, z)
	}
	b.WriteString(`	LEAQ 2048(DI), AX          // prefetch pointer: 256 bytes a chunk, 2 KiB ahead

Q2KT_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	ADDQ $256, AX
` + load4)
	for k := 0; k < 4; k++ {
		v := fmt.Sprintf("Z%d", 25+k)
		for i := 0; i < 16; i++ {
			c := 16*k + i
			t := fmt.Sprintf("Z%d", c%8)
			if i == 0 {
				fmt.Fprintf(&b, "\tVPERMPS Z31, %s, %s\n", v, t)
			} else {
				fmt.Fprintf(&b, "\tVPSRLD $%d, %s, %s\n\tVPERMPS Z31, %s, %s\n", 2*i, v, t, t, t)
			}
			for h, idx := range []string{"", "(DX*1)", "(DX*2)", "(R13*1)"} {
				fmt.Fprintf(&b, "\tVFMADD231PS.BCST %d(SI)%s, %s, Z%d\n", 4*c, idx, t, 8+4*(i%4)+h)
			}
		}
	}
	b.WriteString(`	ADDQ $256, SI
	ADDQ $16, CX
	ADDQ $16, BX
	ADDQ $16, R14
	ADDQ $16, R15
	DECQ R11
	JNZ  Q2KT_blk

	// The four chains of each query, pairwise.
	VADDPS Z12, Z8, Z8
	VADDPS Z20, Z16, Z16
	VADDPS Z16, Z8, Z8
	VADDPS Z13, Z9, Z9
	VADDPS Z21, Z17, Z17
	VADDPS Z17, Z9, Z9
	VADDPS Z14, Z10, Z10
	VADDPS Z22, Z18, Z18
	VADDPS Z18, Z10, Z10
	VADDPS Z15, Z11, Z11
	VADDPS Z23, Z19, Z19
	VADDPS Z19, Z11, Z11

	SCORES_T
	MOVQ ostride+48(FP), AX
	CMPQ AX, $16
	JNE  Q2KT_strided
	SCORES_CONTIG
	JMP  Q2KT_next

Q2KT_strided:
	SCORES_STRIDED

Q2KT_next:
	MOVQ ostride+48(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  Q2KT_group

Q2KT_done:
	VZEROUPPER
	RET
`)
	return b.String()
}

func main() {
	var out bytes.Buffer
	out.WriteString(`// Code generated by gen_tq4vnni.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// The AVX-512 VNNI scores kernels of tq4 and turbo4, and q2k's AVX-512 scores kernel: see
// gen_tq4vnni.go for the work and multi_tq4vnni_amd64.go (q2k: q2k_amd64.go) for the contract.

`)
	out.WriteString(macros)
	const tq4Consts = "MOVL $0x0F0F0F0F, AX\n\tVPBROADCASTD AX, Z31\n\tVBROADCASTI32X4 ·tq4VNNIU8(SB), Z20"
	const t2Consts = "VMOVDQU64 ·turbo2VNNITab(SB), Z20\n\tVMOVDQU64 ·turbo2VNNITab+64(SB), Z22\n\tVMOVDQU64 ·turbo2VNNITab+128(SB), Z23"
	const t3Consts = "VMOVDQU64 ·turbo3VNNIU8(SB), Z20\n\tVMOVDQU64 ·turbo3VNNIShift(SB), Z22\n\tVMOVDQU64 ·turbo3VNNIU8Hi(SB), Z23\n\tMOVL $0x0FFF, AX\n\tKMOVW AX, K1"
	// pairSetupOf is a paired kernel's setup: its VPERMT2B index (idx: byte 16g + i from row
	// g's byte i, rows 1 and 3 rb bytes on in their loads, added here once a call) in Z31, then
	// extra, then the loads' mask in K1 (mask: a row's n bytes and the next row's).
	pairSetupOf := func(idx, extra, mask string, n int) string {
		return fmt.Sprintf(`
	MOVQ rb+32(FP), CX
	VMOVDQU64 ·%s(SB), Z31
	VPBROADCASTB CX, Z16
	MOVQ $0xFFFF0000FFFF0000, AX
	KMOVQ AX, K1
	VPADDB Z16, Z31, K1, Z31   // rows 1 and 3: rb bytes into their loads
%s	MOVQ $%s, AX
	SHLQ CX, AX
	ORQ  $%s, AX
	KMOVQ AX, K1               // a row's %d bytes and the next row's`, idx, extra, mask, mask, n)
	}
	// pairSetup: LOAD4P's (T2P, Q2KP).
	pairSetup := pairSetupOf("t2PairIdx", "", "0xFFFF", 16)
	// t3PairSetup: T3P's (t3PairIdx), with its zeroing mask in K7.
	t3PairSetup := pairSetupOf("t3PairIdx", "\tMOVQ $0x7777777777777777, AX\n\tKMOVQ AX, K7               // byte 3 of each dword zero\n", "0x0FFF", 12)
	// T2P's row scales by vector (rows at most 48 bytes apart): per four rows two loads masked
	// by K2 to a row's f16 scale and the next row's (rb bytes on), one VPERMT2B by Z17
	// (t2ScaleIdx, adjusted for rb once a call) zeroing all but the four rows' words (K3..K6),
	// the four results ORed into lane 4m+g's word for row 4g+m, where STAGE16 took 32 scalar
	// loads and stores.
	const stagePSetup = `
	VMOVDQU64 ·t2ScaleIdx(SB), Z17
	VPBROADCASTB CX, Z16
	MOVQ $0x00000000FF00FF00, AX
	KMOVQ AX, K2
	VPADDB Z16, Z17, K2, Z17   // rows 4g+1, 4g+3: rb bytes into their loads
	MOVQ $3, AX
	SHLQ CX, AX
	ORQ  $3, AX
	KMOVQ AX, K2               // a row's scale and the next row's
	MOVQ $0x03030303, AX
	KMOVQ AX, K3               // the words of lanes 4m
	SHLQ $2, AX
	KMOVQ AX, K4
	SHLQ $2, AX
	KMOVQ AX, K5
	SHLQ $2, AX
	KMOVQ AX, K6`
	var stageP strings.Builder
	for g, p := range []string{"CX", "BX", "R14", "R15"} {
		fmt.Fprintf(&stageP, "LEAQ (%s)(R11*1), AX\n\tVMOVDQU8.Z (AX), K2, Z%d\n\tVMOVDQU8.Z (AX)(R8*2), K2, Z%d\n\t", p, 2*g, 2*g+1)
	}
	for g := 0; g < 4; g++ {
		fmt.Fprintf(&stageP, "VPERMT2B.Z Z%d, Z17, K%d, Z%d\n\t", 2*g+1, 3+g, 2*g)
	}
	stageP.WriteString("VPTERNLOGD $0xFE, Z4, Z2, Z0\n\tVPORD Z6, Z0, Z0\n\tVCVTPH2PS Y0, Z21")
	const shl4 = "SHLQ $4, R11"
	// q2kNextG: the group flavours' step to the next group of 32 cells after every second
	// sixteen (R10 odd): the cells past the group's 2d bytes of scales (8·rb), the digits and
	// aux words of the next group's query preparation (4d and 3d bytes on).
	const q2kNextG = `	TESTQ $1, R10
	JZ   @_sameg
	LEAQ (DI)(R8*8), DI        // past the next group's scales
	MOVQ nb+16(FP), AX
	SHLQ $8, AX
	ADDQ AX, dig+0(FP)         // 4d bytes of digits a group
	MOVQ nb+16(FP), AX
	IMULQ $192, AX
	ADDQ AX, aux+8(FP)         // 3d bytes of aux words a group

@_sameg:
`
	for _, k := range []struct {
		name, consts, chunk, soff, step, stage string
	}{
		{"TQ4", tq4Consts, chunk4, shl4, "16", stage(true)},
		{"TQ4B", tq4Consts, chunk4B, shl4, "16", stage(true)},
		{"T4B", tq4Consts, chunk4B, shl4, "16", stage(false)},
		{"T4", tq4Consts, chunk4, shl4, "16", stage(false)},
		{"T2", t2Consts, t2chunk, shl4, "16", stage(false)},
		{"T3", t3Consts, t3chunk, "IMULQ $12, R11", "12", stage(false)},
		{"T3P", t3Consts + t3PairSetup + stagePSetup, t3chunkP, "IMULQ $12, R11", "12", stageP.String()},
		{"T2P", t2Consts + pairSetup + stagePSetup, t2chunkP, shl4, "16", stageP.String()},
	} {
		named := func(name string) *strings.Replacer { // this kernel's text as name
			return strings.NewReplacer("%NEXTG%", "", "@", name, "%STAGE%", k.stage, "%CONSTS%", k.consts, "%CHUNK%", k.chunk,
				"%SOFF%", k.soff, "%STEP%", k.step)
		}
		out.WriteString(named(k.name).Replace(body))
		if k.name == "TQ4B" || k.name == "T4B" || k.name == "T3P" { // their Intel flavours, TQ4BX, T4BX (tq4Split), T3PX (tq4FarX)
			if k.name == "T3P" {
				out.WriteString(named(k.name + "X").Replace(tq4FarX(body)))
			} else {
				out.WriteString(named(k.name + "X").Replace(tq4Split(body)))
			}
		}
		if k.name == "T3P" || k.name == "T2P" { // their Intel two-stream flavours, T3PS and T2PS (tq4SplitAt; t23Split)
			out.WriteString(named(k.name + "S").Replace(tq4SplitAt(body, 3)))
		}
		if k.name == "TQ4B" || k.name == "T4B" { // their two-chunk flavours, TQ4B2 and T4B2
			r := strings.NewReplacer("%NEXTG%", "", "@", k.name+"2", "%STAGE%", stageV(k.name == "TQ4B"), "%CONSTS%", k.consts, "%CHUNK%", chunk4B2,
				"%SOFF%", k.soff, "%STEP%", "32")
			out.WriteString(r.Replace(pairBody))
		}
		if k.name == "T3P" || k.name == "T2P" { // q2k's kernels where they stood
			q := "Q2K"
			consts, chunk := t2Consts, q2kChunk
			if k.name == "T2P" {
				q, consts, chunk = "Q2KP", t2Consts+pairSetup, q2kChunkP
			}
			r := strings.NewReplacer("%NEXTG%", "", "@", q, "%CONSTS%", consts, "%CHUNK%", chunk, "%STEP%", "16")
			out.WriteString(r.Replace(q2kBody))
		}
	}
	// The uniform-scale flavours of T2P and T3P (AMD Zen 4: multiScoresT2PUVNNI).
	for _, k := range []struct {
		name, consts, chunk, soff, step, stage string
	}{
		{"T2PU", t2Consts + pairSetup + stagePSetup, t2chunkPU, shl4, "16", stageP.String()},
		{"T3PU", t3Consts + t3PairSetup + stagePSetup, t3chunkPU, "IMULQ $12, R11", "12", stageP.String()},
		{"T2U", t2Consts, t2chunkU, shl4, "16", stage(false)},
		{"T3U", t3Consts, t3chunkU, "IMULQ $12, R11", "12", stage(false)},
	} {
		r := strings.NewReplacer("%NEXTG%", "", "@", k.name, "%STAGE%", k.stage, "%CONSTS%", k.consts, "%CHUNK%", k.chunk,
			"%SOFF%", k.soff, "%STEP%", k.step)
		out.WriteString(r.Replace(bodyU))
	}
	// T2PU in blocks of groups, each block's dots first and then its scores (multiScoresT2PUSVNNI).
	out.WriteString(splitU(strings.NewReplacer("%NEXTG%", "", "@", "T2PU", "%STAGE%", stageP.String(),
		"%CONSTS%", t2Consts+pairSetup+stagePSetup, "%CHUNK%", t2chunkPU, "%SOFF%", shl4, "%STEP%", "16").Replace(bodyU), "T2PU", "T2PUS"))
	// The uniform-scale flavour of TQ4B2 (AMD Zen 4: multiScoresTQ4B2UVNNI, tq4Uni).
	out.WriteString(strings.NewReplacer("%NEXTG%", "", "@", "TQ4B2U", "%STAGE%", stageV(true), "%CONSTS%", tq4Consts,
		"%CHUNK%", chunk4B2U, "%SOFF%", shl4, "%STEP%", "32").Replace(uniBody(pairBody)))
	// q2k's group flavours (multiScoresQ2KGVNNI, multiScoresQ2KGPVNNI): Q2K's and Q2KP's with
	// q2kNextG; and their Zen 4 flavours (Q2KGZ4, Q2KGPZ4), with q2kFar's L2 prefetches, and
	// Intel's (Q2KGX, Q2KGPX), with q2kFarX's.
	for _, k := range []struct {
		name, consts, chunk string
		far                 bool
	}{
		{"Q2KG", t2Consts, q2kChunk, false},
		{"Q2KGP", t2Consts + pairSetup, q2kChunkP, false},
		{"Q2KGZ4", t2Consts, q2kChunk, true},
		{"Q2KGPZ4", t2Consts + pairSetup, q2kChunkP, true},
		{"Q2KGX", t2Consts, q2kChunk, true},
		{"Q2KGPX", t2Consts + pairSetup, q2kChunkP, true},
	} {
		r := strings.NewReplacer("%NEXTG%", strings.ReplaceAll(q2kNextG, "@", k.name), "@", k.name,
			"%CONSTS%", k.consts, "%CHUNK%", k.chunk, "%STEP%", "16")
		b := q2kBody
		switch {
		case k.far && strings.HasSuffix(k.name, "X"):
			b = q2kFarX(q2kBody)
		case k.far:
			b = q2kFar(q2kBody)
		}
		out.WriteString(r.Replace(b))
	}
	out.WriteString(q2kT())
	out.WriteString(q2kDigits())
	out.WriteString(t2DigitsPermute())
	out.WriteString(t3DigitsPermute())
	out.WriteString(digitsUni)
	var si [64]byte // word 4m+g from row m's scale (rows 0, 1 in the first load, 2, 3 the second)
	for i := 0; i < 32; i++ {
		m := i / 8
		si[i] = byte(64*(m/2) + i%2)
	}
	out.WriteString("\n// t2ScaleIdx: byte 2(4m+g) + e from byte e of row m's scale in its load (before rb).\n")
	out.WriteString(bytes64("t2ScaleIdx", si))
	var pi [64]byte
	for i := range pi {
		pi[i] = byte(64*(i/32) + i%16)
	}
	var ti [64]byte // byte 16g + 4k + b from byte 3k + b of row g's load; byte 3 of a dword zeroed
	for i := range ti {
		g, k, b := i/16, i%16/4, i%4
		if b < 3 {
			ti[i] = byte(64*(g/2) + 3*k + b)
		}
	}
	out.WriteString("\n// t3PairIdx: byte 16g + 4k + b from byte 3k + b of row g's load (rows 0, 1 the first, 2, 3 the second).\n")
	out.WriteString(bytes64("t3PairIdx", ti))
	out.WriteString("\n// t2PairIdx: byte 16g + i from byte i of row g's load (rows 0, 1 the first, 2, 3 the second).\n")
	out.WriteString(bytes64("t2PairIdx", pi))
	if err := os.WriteFile("multi_tq4vnni_amd64.s", out.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// q2kDigits writes q2kDigitsAVX512, the per-group query preparation of q2k's VNNI scores kernel
// (multiScoresQ2KVNNI, turbo2's kernel with every row scale 1 and one chain a query per 64
// values): the four queries times the group's channel scales, q' = q·scale (one float32
// rounding, as ScoresRange's), quantized per 64-value block as vnniDigits quantizes a query of
// 32 at one digit a value (vnniQuantUni: vnniQuant's float32 operations over 64 values, but
// each digit rounded once: q2kQuantUniFMA); both
// 32-value halves of a 64-value block get its scale, inv and −128·ΣQ in their aux words. The
// |q'| maxima of a block's halves are combined first (a VPMAXUD a query and block), so eight
// vectors are reduced (reduce8) where sixteen were, and each pair of queries' digit sums of a
// block's halves go into one VPDPBUSD accumulator, so four vectors are reduced (reduce4) where
// eight were; a VPERMD each puts the results in lane 4k + h (query h, 32-value half k), twice
// over. That is 47 → 32 operations for the maxima and 32 → 16 for ΣQ besides its eight
// VPDPBUSD, a group of 128 channels; on Zen 4 (TestQ2KDecodeSplit, d 128, test binaries
// alternated eight times, min/median of the runs' minima) the preparation alone 2.09/2.10 → 1.98/2.00 ns a cell in cache, the scores
// 4.73/4.78 → 4.65/4.69 in cache and 4.73/4.82 → 4.63/4.78 streamed (against the same
// 64-channel grid formed from the 32-channel results, one shuffle and an operation more a half). It
// works on 128 channels at a time (the last 64 where d mod 128 = 64). The sixteen (query,
// block) pairs' |q'| maxima: VRANGEPS (max of the absolute values, sign cleared) of each pair
// of 16-lane halves, then as integers (the bits of non-negative floats order as the floats do,
// and ±Inf exceeds every finite value) reduced sixteen vectors at once (reduce16); one
// division each forms s = m/127 and inv = 127/m for all sixteen. VRANGEPS drops a quiet NaN
// (it returns the other value), so the queries must be finite (the caller checks them once a
// call, q2kFiniteAVX512) and a NaN q' is caught by the only ways to one from finite queries,
// a scale that is not finite: the sum of the block's scales (at most 8·65504 where all are
// finite) is classed by VFPCLASSPS. Where VPANDD twice and VPMAXUD took a pair, on Zen 4 the
// first half's time went from 1.00 to 0.87 ns a cell (the half alone over 128 groups, d 128,
// thread CPU, in cache, alternated with the previous build). q' is formed
// again (the same product) rather than kept, times inv (broadcast from the aux word the first
// half stored), converted, and the low bytes of the int32 gathered by two VPERMT2B and a
// VPBLENDMB into query order and the turbo2 kernel's order of each 16 digits (q2kDigGather);
// ΣQ is VPDPBUSD of them with ones, reduced (reduceHalves). A non-finite q' makes it return
// false, having written nothing the caller uses.
//
// Measured on Zen 4 (thread CPU, d 128, four queries, TestQ2KDecodeSplit, alternated with the
// previous build, load average ~20 on the shared VM): inv by embedded broadcast, where VSHUFPS
// spread it from a VBROADCASTF32X4 of the block's four, took the preparation from 2.36 to 2.25 ns
// a cell (its group's work over 32 cells); the gather, where VPACKSSDW, VPACKSSWB and VPERMB
// (by q2kDigPermB, from which q2kDigGather derives its tables) took four shuffles a 64 digits,
// to 2.16–2.17; the scores (preparation and cells) from 5.59–5.61 to 5.47–5.55 ns a cell. The
// shuffles share a pipe with the multiplies, the prepared digits' first user. Keeping q'
// from the first half (32 stores a group, read back by the second instead of the product
// formed again) took the second half from 1.11 to 0.92 ns a cell but the scores from 5.35 to
// 5.67: it did not pay. Runs of whole groups go in batches (q2kDigitsGroupsAVX512, then one
// call of the kernel's group flavour), where four calls a group took ~0.35 ns a cell of the
// scores' time (5.33 → 4.97 in cache, TestQ2KDecodeSplit, alternated builds). Two blocks at
// a time with their sixteen vectors of q' kept in registers from the maxima to the digits
// (no product formed twice, four divisions a group where there were two) did not pay either:
// 4.99 → 5.21–5.25 in cache, 5.3–5.45 with inv broadcast by VPERMPS from its register (the
// chain from the maxima through the division to the digits is exposed two blocks at a time).
// Nor did the maxima's and ΣQ's reductions with a blend (VPBLENDMD) and one shuffle a halving
// where reduce16 and reduceHalves take two shuffles (and one VPERMD at the end): 4.98 → 5.04.
// Ablations of the batched scores (4.96–5.01 ns a cell in cache): without the maxima's
// reduction 4.60, without the product formed again 4.85, without the digits' gather 4.81,
// without ΣQ 4.84.
//
// The digits are one FMA a vector, q'·inv + 1.5·2²³ (Z27): in [2²², 2²⁴) a float32's unit is
// 1, so the sum is 1.5·2²³ + RN(q'·inv) exactly and its low byte the digit (two's
// complement), which the gather takes as it took VCVTPS2DQ's, where a VMULPS by inv and a
// VCVTPS2DQ rounded twice (q2kQuantUniFMA has the one rounding; the digits differ where the
// float32 product lands on a half, about one in 10⁶). On Zen 4 (TestQ2KDecodeSplit, d 128,
// test binaries alternated five times, min/median of the runs' minima): the preparation
// 1.98/2.00 → 1.93/1.95 ns a cell in cache, the scores 4.66/4.69 → 4.55/4.60 in cache and
// 4.60/4.69 → 4.48/4.56 streamed. The decode's KL to f16 (kvlab ab, q2k, seeds 1–16, ctx
// 128, kvlab-tiny-64 and its outlier fixture): 15 of 16 seeds identical, the mean change
// below 0.001 %.
//
// Ablations with that and q2kBody (copies with one piece left out, timing only; Zen 4,
// TestQ2KDecodeSplit, alternated three times, in cache, the scores 4.38–4.48 ns a cell):
// without the maxima's reduction (reduce8 and its VPERMD, 24 operations a group) 4.20–4.26;
// without the digits' gather (24) 4.27–4.29; without ΣQ (8 VPDPBUSD, reduce4, VPERMD) 4.24–4.26;
// with the second half's scales loaded as they are, not converted (VCVTPH2PS), 4.35–4.46;
// without the kernel's FINISH (a VCVTDQ2PS and an FMA a query and chunk) 4.14–4.19 (the
// cells' kernel 3.07–3.11 → 2.77–2.80). Each is at about the fewest operations its work
// needs (a halving of two vectors' lanes three operations; the gather three a 64 digits), so
// what would pay is less of it: a grid per 128 channels at d 128 (one FINISH a query and row,
// half the reductions) changes the query's rounding where the test models (d 64) cannot show it.
//
// q2k's Zen 4 budget (README "Speed targets": 0.37 of f16's 21.0 ms, ~7.4 ns a row) against the
// bench's 0.46 there (~9.2): its values are q4_0's (multiAccQ40V8Z4INT, 4.8–5.0 ns a row in the
// decode) and with the softmax (~0.5) they leave ~2 ns for the scores, where this preparation
// alone takes ~1.9 and the group kernel's eight VPDPBUSD ~1.4 (mcakernels, -zenvnni:
// multiScoresQ2KGPZ4VNNI 10.8 cycles a row, 2.9 ns at 3.7 GHz). The target needs the
// preparation gone (a grid per 128 channels, above) and q4_0's values faster.
func q2kDigits() string {
	var b strings.Builder
	b.WriteString("\n")
	// q2kMaxPerm64 and q2kSumPerm64: the dwords of reduce8's and reduce4's results (half A's
	// maxima: A_j = query j/2, 64-channel block j mod 2; half B's sums: Z(16 + 2kk + hp) =
	// queries 2hp, 2hp + 1 of 64-channel block kk) that lane 4k + h takes: query h, 64-channel
	// block k/2, so that both 32-channel halves of a block hold its result.
	pos := func(j int) int {
		if j < 4 {
			return 4 * j
		}
		return 4*(j-4) + 2
	}
	b.WriteString("// q2kMaxPerm64, q2kSumPerm64: see q2kDigits (gen_tq4vnni.go).\n")
	for l := 0; l < 16; l++ {
		k, h := l/4, l%4
		fmt.Fprintf(&b, "DATA ·q2kMaxPerm64+%d(SB)/4, $%d\n", 4*l, pos(2*h+k/2))
	}
	b.WriteString("GLOBL ·q2kMaxPerm64(SB), RODATA|NOPTR, $64\n")
	for l := 0; l < 16; l++ {
		k, h := l/4, l%4
		fmt.Fprintf(&b, "DATA ·q2kSumPerm64+%d(SB)/4, $%d\n", 4*l, 4*h+2*(k/2))
	}
	b.WriteString("GLOBL ·q2kSumPerm64(SB), RODATA|NOPTR, $64\n\n")
	// q2kUnit: turboUnit2 (the levels' unit), which the first half folds into each block's s.
	fmt.Fprintf(&b, "// q2kUnit: turboUnit2, see q2kDigitsChunkA (gen_tq4vnni.go).\nDATA ·q2kUnit+0(SB)/4, $%#08x\nGLOBL ·q2kUnit(SB), RODATA|NOPTR, $4\n\n", math.Float32bits(0.01678167))
	// q2kDigPermB (the order of the packed digits, VPACKSSDW then VPACKSSWB, that puts them in
	// query order and the turbo2 kernel's): a 4×4 transpose of the dwords (dword p takes dword
	// 4·(p mod 4) + p/4), then t2DigT's
	// of the bytes in each 16-byte run; byte 16c + 4t + b takes byte t of dword
	// 4·(p mod 4) + p/4, p = 4c + b.
	var pb [64]byte
	for i := range pb {
		c, t, bb := i/16, i%16/4, i%4
		p := 4*c + bb
		pb[i] = byte(4*(4*(p%4)+p/4) + t)
	}
	// q2kDigT1, q2kDigT2 and q2kDigMask: the same 64 digits gathered straight from the four
	// vectors of int32 (Z0, Z1: query 2hp's values 0..15, 16..31; Z4, Z5: query 2hp+1's), the
	// low byte of each, by VPERMT2B from (Z0, Z1) and from (Z4, Z5), then VPBLENDMB by the mask.
	b.WriteString("// q2kDigT1, q2kDigT2, q2kDigMask: see q2kDigGather (gen_tq4vnni.go).\n")
	t1, t2, mask := q2kDigGather(pb)
	b.WriteString(bytes64("q2kDigT1", t1))
	b.WriteString(bytes64("q2kDigT2", t2))
	fmt.Fprintf(&b, "DATA ·q2kDigMask+0(SB)/8, $%#016x\nGLOBL ·q2kDigMask(SB), RODATA|NOPTR, $8\n", mask)
	b.WriteString(q2kFinite)
	b.WriteString(q2kDigitsText("q2kDigitsAVX512", "Q2KD", q2kDigitsChunk, true))
	b.WriteString(q2kDigitsGroupsText())
	b.WriteString(q2kDigitsText("q2kDigitsAAVX512", "Q2KA", q2kDigitsChunkA, true))
	b.WriteString(q2kDigitsText("q2kDigitsBAVX512", "Q2KB", q2kDigitsChunkB, false))
	return b.String()
}

// q2kFinite is q2kFiniteAVX512: whether the n floats at q (n a multiple of 64) are all finite,
// by VFPCLASSPS, four vectors a step.
const q2kFinite = `
// func q2kFiniteAVX512(q *float32, n int) bool
TEXT ·q2kFiniteAVX512(SB), NOSPLIT, $0-17
	MOVQ q+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $6, CX
	KXORW K1, K1, K1
	TESTQ CX, CX
	JZ   Q2KF_done

Q2KF_loop:
	VFPCLASSPSZ $0x99, (SI), K2     // NaN or ±Inf
	VFPCLASSPSZ $0x99, 64(SI), K3
	KORW K2, K1, K1
	VFPCLASSPSZ $0x99, 128(SI), K2
	KORW K3, K1, K1
	VFPCLASSPSZ $0x99, 192(SI), K3
	KORW K2, K1, K1
	KORW K3, K1, K1
	ADDQ $256, SI
	DECQ CX
	JNZ  Q2KF_loop

Q2KF_done:
	KORTESTW K1, K1
	SETEQ ret+16(FP)
	RET
`

// q2kDigGather works out where each byte of the packed digits comes from: VPACKSSDW of
// (Z0, Z1) and of (Z4, Z5), VPACKSSWB of the two, then VPERMB by pb. It returns the VPERMT2B
// indices that take the low byte of the same int32 lanes from (Z0, Z1) (t1) and (Z4, Z5) (t2),
// and the mask of the bytes that come from the second pair. The digits are within ±127 (q'·inv
// rounds to at most 127 in magnitude), so the packs' saturation never acts and the low byte is
// the digit.
func q2kDigGather(pb [64]byte) (t1, t2 [64]byte, mask uint64) {
	for i := range pb {
		p := int(pb[i])
		lane, pos := p/16, p%16
		second := pos >= 8 // the second source of VPACKSSWB: the (Z4, Z5) words
		w := pos % 8       // word w of the lane's VPACKSSDW
		hi := w >= 4       // its second source: Z1 (or Z5)
		off := 4 * (4*lane + w%4)
		if hi {
			off += 64
		}
		if second {
			t2[i] = byte(off)
			mask |= 1 << i
		} else {
			t1[i] = byte(off)
		}
	}
	return t1, t2, mask
}

// q2kDigitsText is a digits function: chunk over the channels, 128 at a time (the last 64 where
// d mod 128 = 64), reporting success where ret (then a non-finite q' returns false).
func q2kDigitsText(name, label string, chunk func(int) string, ret bool) string {
	var b strings.Builder
	sig, frame, done, fail := "", "$0-40", "", ""
	if ret {
		sig, frame = " bool", "$0-41"
		done, fail = "\tMOVB $1, ret+40(FP)\n", "\nQ2KD_nonfinite:\n\tMOVB $0, ret+40(FP)\n\tVZEROUPPER\n\tRET\n"
	}
	t := `

// func %NAME%(q *float32, d int, grp *byte, dig *byte, aux *uint32)%SIG%
TEXT ·%NAME%(SB), NOSPLIT, %FRAME%
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), R10
	MOVQ R10, R8
	SHLQ $2, R8                // bytes between queries
	LEAQ (R8)(R8*2), R12       // 3 queries
	MOVQ grp+16(FP), DI
	MOVQ dig+24(FP), BX
	MOVQ aux+32(FP), DX
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z31       // ones, for ΣQ
	MOVL $0x42FE0000, AX       // 127.0, vnniQMax1
	VPBROADCASTD AX, Z30
	MOVL $0x00800000, AX       // 2⁻¹²⁶, the smallest normal float32
	VPBROADCASTD AX, Z29
	MOVL $0x7F800000, AX       // +Inf: |x| bits at or above it are not finite
	VPBROADCASTD AX, Z28
	MOVL $0x4B400000, AX       // 1.5·2²³: q'·inv plus it holds the digit in its low byte
	VPBROADCASTD AX, Z27

Q2KD_chunk:
	CMPQ R10, $128
	JLT  Q2KD_half
%CHUNK4%	ADDQ $512, SI
	ADDQ $256, DI
	ADDQ $512, BX
	ADDQ $384, DX
	SUBQ $128, R10
	JNZ  Q2KD_chunk
	JMP  Q2KD_done

Q2KD_half:
%CHUNK2%
Q2KD_done:
%DONE%	VZEROUPPER
	RET
%FAIL%`
	r := strings.NewReplacer("%NAME%", name, "%SIG%", sig, "%FRAME%", frame, "%CHUNK4%", chunk(4), "%CHUNK2%", chunk(2),
		"%DONE%", done, "%FAIL%", fail)
	b.WriteString(strings.ReplaceAll(r.Replace(t), "Q2KD_", label+"_"))
	return b.String()
}

// q2kDigitsGroupsText writes q2kDigitsGroupsAVX512: q2kDigitsAVX512 for ng groups in turn (10d
// bytes apart), the digits 4d bytes a group apart at dig and the aux words 3d at aux, up to the
// first group with a q' that is not finite; it returns the groups prepared. The loop is
// pipelined as ScoresRangeMulti's calls were: the first half of group g+1 (its maxima, the
// reduction and the two divisions, a long chain) runs before the second half of group g, so
// that the chain overlaps the digits' independent work (on Zen 4, d 128, in cache: 4.96 → 4.84
// ns a cell of the scores, streamed 5.18 → 5.03; TestQ2KDecodeSplit, alternated builds).
// Where group g+1's q' is not finite, group g's second half still runs and the loop stops.
// q2kPFG is how many groups ahead q2kDigitsGroupsAVX512 prefetches a group's first 512 bytes
// (its scales, and at d < 256 some code bytes too). Without it the batches' preparation waited on them where the
// cells stream from memory (TestQ2KDecodeSplit, 2²⁰ cells, Zen 4: 5.7–6.0 ns a cell against
// 5.4–5.5 before the batches); 2, 4 and 6 groups ahead scored 5.2–5.3. With the pipelined loop
// (min of 7, alternated): 2 groups 5.53, 4 to 16 groups 4.93–5.04 (8: 4.94–5.01); the whole
// group (20 lines at d 128) four ahead 5.36.
//
// On an Intel Xeon (family 6 model 167) the preparation is port-0/5 bound: by llvm-mca's
// sapphirerapids model (internal/tools/mcakernels, FMAs counted on ports 0 and 5 as measured
// there) a 128-channel chunk's first half takes ~58 cycles and its second ~81 (d 128: ~150 a
// group with the rest, ~37 ns; TestQ2KDecodeSplit measures the preparation at 1.4–1.7 ns a
// cell in cache, 45–53 ns a group, of the scores' ~4.2). The second half recomputes q' = q·scale
// (32 VMULPS and 8 VCVTPH2PS at d 128, ~48 of the ~300 port-0/5 µops a group) that the first half
// formed for the maxima. Keeping q' from the first half (stored, 16d bytes a group in one of two
// buffers by the group's parity, R15 their pointer and the stop flag a local; the same digits)
// did not pay there (native/attn TestDecodeBreakdown, q2k, test binaries alternated, load 5–8,
// scores paired median): streamed +0.08 (14 alternations), keys in cache (KVLAB_TOUCH=k) +0.01
// (10): the 32 stores of 64 bytes a group cost what the 48 operations saved. Nor did q2kPFG's
// prefetch pay there in another shape (the same test, ten alternations, load 4–7, scores
// paired median against 8 lines 8 groups on): 4 lines (the scales alone) +0.45, 12 lines +0.19,
// 16 +0.23, 20 (the whole group) +0.46, PREFETCHT1 in place of PREFETCHT0 +0.15, 12 groups on
// +0.27.
const q2kPFG = 8

func q2kDigitsGroupsText() string {
	t := `

// func q2kDigitsGroupsAVX512(q *float32, d int, grp *byte, ng int, dig *byte, aux *uint32) int
TEXT ·q2kDigitsGroupsAVX512(SB), NOSPLIT, $0-56
	MOVQ d+8(FP), R8
	SHLQ $2, R8                // bytes between queries (4d)
	LEAQ (R8)(R8*2), R12       // 3 queries
	LEAQ (R8)(R8*4), CX
	SHRQ $1, CX                // 10d: a group's bytes
	MOVQ grp+16(FP), R9        // group g
	MOVQ dig+32(FP), R13       // its digits
	MOVQ aux+40(FP), R14       // its aux words
	XORQ R11, R11              // groups prepared
	MOVQ R11, ret+48(FP)
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z31       // ones, for ΣQ
	MOVL $0x42FE0000, AX       // 127.0, vnniQMax1
	VPBROADCASTD AX, Z30
	MOVL $0x00800000, AX       // 2⁻¹²⁶, the smallest normal float32
	VPBROADCASTD AX, Z29
	MOVL $0x7F800000, AX       // +Inf: |x| bits at or above it are not finite
	VPBROADCASTD AX, Z28
	MOVL $0x4B400000, AX       // 1.5·2²³: q'·inv plus it holds the digit in its low byte
	VPBROADCASTD AX, Z27
	CMPQ ng+24(FP), $0
	JLE  Q2KD_ret

	// the first half of group 0
	MOVQ R9, DI
	MOVQ R14, DX
%AFIRST%
Q2KD_group:
%PF%	// the first half of group g+1 where there is one (R15: stop after group g)
	MOVQ $1, R15
	LEAQ 1(R11), AX
	CMPQ AX, ng+24(FP)
	JGE  Q2KD_second
	LEAQ (R9)(CX*1), DI
	MOVQ R12, DX
	SHRQ $2, DX
	ADDQ R14, DX               // aux + 3d
%ANEXT%	XORQ R15, R15

Q2KD_second:
	// the second half of group g
	MOVQ R9, DI
	MOVQ R13, BX
	MOVQ R14, DX
%B%	INCQ R11
	TESTQ R15, R15
	JNZ  Q2KD_done
	ADDQ CX, R9
	ADDQ R8, R13
	MOVQ R12, AX
	SHRQ $2, AX
	ADDQ AX, R14
	JMP  Q2KD_group

Q2KD_done:
	MOVQ R11, ret+48(FP)

Q2KD_ret:
	VZEROUPPER
	RET
`
	// a half's loop over the channels, 128 at a time (the last 64 where d mod 128 = 64);
	// label prefixes its labels, fail is where a q' that is not finite goes
	half := func(label, fail string, chunk func(int) string, dig bool) string {
		adv := "\tADDQ $512, SI\n\tADDQ $256, DI\n\tADDQ $384, DX\n"
		if dig {
			adv += "\tADDQ $512, BX\n"
		}
		x := `	MOVQ q+0(FP), SI
	MOVQ d+8(FP), R10

L_chunk:
	CMPQ R10, $128
	JLT  L_half
` + chunk(4) + adv + `	SUBQ $128, R10
	JNZ  L_chunk
	JMP  L_end

L_half:
` + chunk(2) + `
L_end:
`
		x = strings.ReplaceAll(x, "Q2KD_nonfinite", fail)
		return strings.ReplaceAll(x, "L_", label)
	}
	// AX = R9 + q2kPFG groups (10d·q2kPFG bytes)
	pf := fmt.Sprintf("\tIMUL3Q $%d, CX, AX\n\tADDQ R9, AX\n", q2kPFG)
	for i := 0; i < 8; i++ {
		pf += fmt.Sprintf("\tPREFETCHT0 %d(AX)\n", 64*i)
	}
	r := strings.NewReplacer("%AFIRST%", half("Q2KD_a0", "Q2KD_ret", q2kDigitsChunkA, false),
		"%ANEXT%", half("Q2KD_a1", "Q2KD_second", q2kDigitsChunkA, false),
		"%B%", half("Q2KD_b", "Q2KD_never", q2kDigitsChunkB, true), "%PF%", pf)
	return strings.ReplaceAll(r.Replace(t), "Q2KD_", "Q2KM_")
}

// q2kDigitsChunk prepares nblk blocks (4 or 2) of 32 channels of the four queries at SI (R8
// bytes apart, R12 = 3·R8) with the scales at DI into BX (digits) and DX (aux).
func q2kDigitsChunk(nblk int) string { return q2kDigitsChunkA(nblk) + q2kDigitsChunkB(nblk) }

// q2kDigitsChunkA is the first half of q2kDigitsChunk: the blocks' maxima, s into aux words
// 0..3 and inv = qmax/m into words 4..7 (a non-finite q' jumps to Q2KD_nonfinite).
func q2kDigitsChunkA(nblk int) string {
	var b strings.Builder
	qa := []string{"(SI)", "(SI)(R8*1)", "(SI)(R8*2)", "(SI)(R12*1)"}
	for k := 0; k < nblk; k++ {
		fmt.Fprintf(&b, "\tVCVTPH2PS %d(DI), Z16\n\tVCVTPH2PS %d(DI), Z17\n", 64*k, 64*k+32)
		// the scales' sum (Z20): not finite where a scale is not (at most 8·65504 where all are)
		if k == 0 {
			b.WriteString("\tVADDPS Z17, Z16, Z20\n")
		} else {
			b.WriteString("\tVADDPS Z16, Z20, Z20\n\tVADDPS Z17, Z20, Z20\n")
		}
		for h := 0; h < 4; h++ {
			v := 4*h + k
			fmt.Fprintf(&b, "\tVMULPS %d%s, Z16, Z18\n\tVMULPS %d%s, Z17, Z19\n", 128*k, qa[h], 128*k+64, qa[h])
			// max(|q'_c|, |q'_c+16|), sign cleared (a NaN drops out: the scales' check and
			// the caller's of q catch it)
			fmt.Fprintf(&b, "\tVRANGEPS $0x0B, Z19, Z18, Z%d\n", v)
		}
	}
	b.WriteString("\tVFPCLASSPSZ $0x99, Z20, K4      // a scale NaN or ±Inf\n")
	// each 64-channel block's two halves into Z(4h + 2kk): the eight vectors of reduce8
	for h := 0; h < 4; h++ {
		for kk := 0; kk < nblk/2; kk++ {
			v := 4*h + 2*kk
			fmt.Fprintf(&b, "\tVPMAXUD Z%d, Z%d, Z%d\n", v+1, v, v)
		}
		if nblk == 2 {
			fmt.Fprintf(&b, "\tVPXORD Z%d, Z%d, Z%d\n", 4*h+2, 4*h+2, 4*h+2)
		}
	}
	b.WriteString(reduce8("VPMAXUD"))
	b.WriteString("\tVMOVDQU32 ·q2kMaxPerm64(SB), Z2\n\tVPERMD Z0, Z2, Z0          // lane 4k + h: query h, 64-channel block k/2\n")
	b.WriteString(`	VPCMPUD $5, Z28, Z0, K1    // m ≥ +Inf (as bits): not finite
	KORTESTW K4, K1
	JNZ  Q2KD_nonfinite
	VDIVPS Z30, Z0, Z1         // s = m / qmax
	VCMPPS $0x1D, Z29, Z1, K2  // s ≥ 2⁻¹²⁶: a normal scale; else the block counts as zero
	VDIVPS.Z Z0, Z30, K2, Z2   // inv = qmax / m
	VMOVAPS.Z Z1, K2, Z1
	VMULPS.BCST ·q2kUnit(SB), Z1, Z1   // s·unit: the kernels' chunk scale (q2kBody)
`)
	// s into aux words 0..3 of each block, inv into words 4..7 (which the kernel does not read)
	for k := 0; k < nblk; k++ {
		if k == 0 {
			b.WriteString("\tVMOVUPS X1, (DX)\n\tVMOVUPS X2, 16(DX)\n")
		} else {
			fmt.Fprintf(&b, "\tVEXTRACTF32X4 $%d, Z1, %d(DX)\n\tVEXTRACTF32X4 $%d, Z2, %d(DX)\n", k, 96*k, k, 96*k+16)
		}
	}
	return b.String()
}

// q2kDigitsChunkB is the second half of q2kDigitsChunk: the digits and −128·ΣQ of nblk blocks
// whose inv q2kDigitsChunkA left in aux words 4..7.
func q2kDigitsChunkB(nblk int) string {
	var b strings.Builder
	qa := []string{"(SI)", "(SI)(R8*1)", "(SI)(R8*2)", "(SI)(R12*1)"}
	b.WriteString(`	VMOVDQU32 ·q2kSumPerm64(SB), Z15
	VMOVDQU64 ·q2kDigT1(SB), Z12
	VMOVDQU64 ·q2kDigT2(SB), Z13
	KMOVQ ·q2kDigMask(SB), K3
`)
	// Per block k and pair of queries hp (2hp, 2hp+1): the digits of 64 values into one vector
	// (stored at the block's query 2hp), and its dword sums of four digits into Z16 + 2(k/2) +
	// hp (a 64-channel block's two halves into one).
	for k := 0; k < nblk; k++ {
		fmt.Fprintf(&b, "\tVCVTPH2PS %d(DI), Z10\n\tVCVTPH2PS %d(DI), Z11\n", 64*k, 64*k+32)
		for hp := 0; hp < 2; hp++ {
			for j := 0; j < 2; j++ {
				x0, x1 := 4*j, 4*j+1
				h := 2*hp + j
				fmt.Fprintf(&b, "\tVMULPS %d%s, Z10, Z%d\n\tVMULPS %d%s, Z11, Z%d\n", 128*k, qa[h], x0, 128*k+64, qa[h], x1)
				// times query h's inv (aux word 4 + h, broadcast from memory) plus 1.5·2²³ (Z27)
				// in one rounding: the float's low byte is the digit (see q2kDigits)
				fmt.Fprintf(&b, "\tVFMADD132PS.BCST %d(DX), Z27, Z%d\n\tVFMADD132PS.BCST %d(DX), Z27, Z%d\n", 96*k+16+4*h, x0, 96*k+16+4*h, x1)
			}
			acc := 16 + 2*(k/2) + hp
			fmt.Fprintf(&b, "\tVPERMT2B Z1, Z12, Z0\n\tVPERMT2B Z5, Z13, Z4\n\tVPBLENDMB Z4, Z0, K3, Z0\n\tVMOVDQU32 Z0, %d(BX)\n", 128*k+64*hp)
			if k%2 == 0 {
				fmt.Fprintf(&b, "\tVPXORD Z%d, Z%d, Z%d\n", acc, acc, acc)
			}
			fmt.Fprintf(&b, "\tVPDPBUSD Z0, Z31, Z%d\n", acc)
		}
	}
	for m := nblk; m < 4; m++ {
		fmt.Fprintf(&b, "\tVPXORD Z%d, Z%d, Z%d\n", 16+m, 16+m, 16+m)
	}
	b.WriteString(reduce4("VPADDD"))
	b.WriteString("\tVPERMD Z0, Z15, Z0         // lane 4k + h: query h, 64-channel block k/2\n")
	b.WriteString("\tVPSLLD $7, Z0, Z0\n\tVPXORD Z1, Z1, Z1\n\tVPSUBD Z0, Z1, Z0        // −128·ΣQ\n")
	for k := 0; k < nblk; k++ {
		if k == 0 {
			b.WriteString("\tVMOVDQU32 X0, 48(DX)\n")
		} else {
			fmt.Fprintf(&b, "\tVEXTRACTI32X4 $%d, Z0, %d(DX)\n", k, 96*k+48)
		}
	}
	return b.String()
}

// reduce8 reduces each of Z0, Z2, …, Z14 (A_j = Z(2j), j = 0..7) across its lanes with op
// into Z0, whose dwords 4j and 4j + 1 then hold A_j's result for j < 4, dwords 4(j − 4) + 2 and
// + 3 for j ≥ 4 (clobbers Z1, Z16..Z21 and the inputs): a first halving by 256-bit halves
// (VINSERTI64X4, VSHUFI64X2) into Z16..Z19, each the eight lanes of two sums, then reduce4.
func reduce8(op string) string {
	var b strings.Builder
	for i := 0; i < 8; i += 2 {
		a, c, o := 2*i, 2*i+2, 16+i/2
		fmt.Fprintf(&b, "\tVINSERTI64X4 $1, Y%d, Z%d, Z%d\n\tVSHUFI64X2 $0xEE, Z%d, Z%d, Z%d\n\t%s Z%d, Z%d, Z%d\n",
			c, a, o, c, a, a, op, a, o, o)
	}
	b.WriteString(reduce4(op))
	return b.String()
}

// reduce4 reduces Z16..Z19, each the eight lanes of two sums (lanes 0..7 and 8..15: sums
// 2m and 2m + 1 of Z(16 + m)), with op into Z0: sum j's result in dwords 4j and 4j + 1 for
// j < 4, in dwords 4(j − 4) + 2 and + 3 for j ≥ 4. A halving by 128-bit lanes (VSHUFI32X4)
// into Z20, Z21 (sum j in lane j mod 4 of Z(20 + j/4)), one by pairs within lanes (VSHUFPS)
// into Z0, and one of adjacent dwords (VSHUFPS $0xB1), which leaves each result twice.
// Clobbers Z1, Z16..Z21.
func reduce4(op string) string {
	var b strings.Builder
	for i := 0; i < 4; i += 2 {
		a, c, o := 16+i, 17+i, 20+i/2
		fmt.Fprintf(&b, "\tVSHUFI32X4 $0x88, Z%d, Z%d, Z%d\n\tVSHUFI32X4 $0xDD, Z%d, Z%d, Z%d\n\t%s Z%d, Z%d, Z%d\n",
			c, a, o, c, a, a, op, a, o, o)
	}
	fmt.Fprintf(&b, "\tVSHUFPS $0x44, Z21, Z20, Z0\n\tVSHUFPS $0xEE, Z21, Z20, Z20\n\t%s Z20, Z0, Z0\n", op)
	fmt.Fprintf(&b, "\tVSHUFPS $0xB1, Z0, Z0, Z1\n\t%s Z1, Z0, Z0\n", op)
	return b.String()
}

// t2DigitsPermute writes t2DigitsPermute, which puts vnniDigits' one-digit-a-value digits in the
// turbo2 kernel's order: each 16-byte run transposed as a 4×4 matrix of bytes (byte 4t + b
// takes byte 4b + t), one VPERMB a 64 bytes.
func t2DigitsPermute() string {
	var t [64]byte
	for i := range t {
		t[i] = byte(i&^15 + 4*(i%4) + i%16/4)
	}
	return digitsPermute("t2", "T2P", "byte 16c + 4t + b takes byte 16c + 4b + t.", t)
}

// t3DigitsPermute writes t3DigitsPermute, which puts vnniDigits' one-digit-a-value digits in
// the turbo3 kernel's order: each 8-byte run as its bytes 0, 2, 4, 6, 1, 3, 5, 7, one VPERMB a
// 64 bytes.
func t3DigitsPermute() string {
	var t [64]byte
	for i := range t {
		j := i % 8
		t[i] = byte(i&^7 + 2*(j%4) + j/4)
	}
	return digitsPermute("t3", "T3D", "byte 8c + j takes byte 8c + 2(j%4) + j/4.", t)
}

// digitsPermute is <p>DigitsPermute(dig *byte, n int): n·64 bytes at dig permuted in place by
// one VPERMB each with the table <p>DigT (t, doc its comment); label prefixes its labels.
func digitsPermute(p, label, doc string, t [64]byte) string {
	return "\n// " + p + "DigT: " + doc + "\n" + bytes64(p+"DigT", t) + strings.NewReplacer("@", p, "L_", label+"_").Replace(`// func @DigitsPermute(dig *byte, n int)
TEXT ·@DigitsPermute(SB), NOSPLIT, $0-16
	MOVQ dig+0(FP), SI
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JZ   L_done
	VMOVDQU64 ·@DigT(SB), Z1

L_loop:
	VMOVDQU64 (SI), Z0
	VPERMB Z0, Z1, Z0
	VMOVDQU64 Z0, (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ  L_loop

L_done:
	VZEROUPPER
	RET
`)
}

// bytes64 is the DATA and GLOBL of a 64-byte table.
func bytes64(name string, t [64]byte) string {
	var b strings.Builder
	for i := 0; i < 64; i += 8 {
		var v uint64
		for k := 7; k >= 0; k-- {
			v = v<<8 | uint64(t[i+k])
		}
		fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $0x%016x\n", name, i, v)
	}
	fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $64\n\n", name)
	return b.String()
}

// digitsUni is vnniDigitsUniAVX512, vnniDigitsUni's work for finite queries: per query the
// largest |q| over its nb whole blocks (VPMAXUD of the values' bits with the sign cleared:
// non-negative floats order as their bits do, and a NaN or ±Inf exceeds 0x7F7FFFFF, which
// returns false for the Go code to handle), s = m/127 and inv = 127/m by VDIVSS (as
// vnniQuantUni's float32 divisions; s below 2⁻¹²⁶ makes s and inv 0, every digit 0), each
// value times inv rounded to even by VCVTPS2DQ (|q·inv| ≤ 127·(1 + 2⁻²³) rounds to at most 127,
// so VPMOVSDB's saturation never acts), the digits stored by VPMOVSDB, s into each block's aux
// word [h] and off[8+h], and −128·ΣQ into off[12+h]. The other aux words are not written.
const digitsUni = `
// func vnniDigitsUniAVX512(dig *byte, aux *uint32, q *float32, d, nb int, off *float32) bool
TEXT ·vnniDigitsUniAVX512(SB), NOSPLIT, $0-49
	MOVQ dig+0(FP), DI
	MOVQ aux+8(FP), R8
	MOVQ q+16(FP), SI
	MOVQ d+24(FP), DX
	SHLQ $2, DX                // bytes between queries
	MOVQ nb+32(FP), R10
	MOVQ off+40(FP), R9
	TESTQ R10, R10
	JZ   du_ok
	MOVL $0x7FFFFFFF, AX
	VPBROADCASTD AX, Z30       // the sign cleared
	MOVL $0x42FE0000, AX       // 127
	VMOVD AX, X29
	XORQ CX, CX                // query h

du_query:
	MOVQ SI, R11
	MOVQ R10, R12
	VPXORD Z0, Z0, Z0
du_max:
	VPANDD (R11), Z30, Z1
	VPANDD 64(R11), Z30, Z2
	VPMAXUD Z1, Z0, Z0
	VPMAXUD Z2, Z0, Z0
	ADDQ $128, R11
	DECQ R12
	JNZ  du_max
	VEXTRACTI64X4 $1, Z0, Y1
	VPMAXUD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPMAXUD X1, X0, X0         // lane 0: the bits of m
	VMOVD X0, AX
	CMPL AX, $0x7F7FFFFF
	JA   du_fail               // ±Inf or NaN
	VDIVSS X29, X0, X2         // s = m/127
	VMOVD X2, AX
	CMPL AX, $0x00800000
	JAE  du_normal
	XORL AX, AX                // s below 2⁻¹²⁶: s and inv 0
	VPXORD Z3, Z3, Z3
	JMP  du_scale
du_normal:
	VDIVSS X0, X29, X3         // inv = 127/m
	VBROADCASTSS X3, Z3
du_scale:
	MOVL AX, 32(R9)(CX*4)      // off[8+h] = s
	MOVQ SI, R11
	MOVQ DI, R13
	LEAQ (R8)(CX*4), R14
	MOVQ R10, R12
	VPXORD Z5, Z5, Z5
du_q:
	VMULPS (R11), Z3, Z1
	VMULPS 64(R11), Z3, Z2
	VCVTPS2DQ Z1, Z1
	VCVTPS2DQ Z2, Z2
	VPADDD Z1, Z5, Z5
	VPADDD Z2, Z5, Z5
	VPMOVSDB Z1, (R13)
	VPMOVSDB Z2, 16(R13)
	MOVL AX, (R14)             // the block's s
	ADDQ $128, R11
	ADDQ $128, R13
	ADDQ $96, R14
	DECQ R12
	JNZ  du_q
	VEXTRACTI64X4 $1, Z5, Y1
	VPADDD Y1, Y5, Y5
	VEXTRACTI128 $1, Y5, X1
	VPADDD X1, X5, X5
	VPSHUFD $0x4E, X5, X1
	VPADDD X1, X5, X5
	VPSHUFD $0xB1, X5, X1
	VPADDD X1, X5, X5
	VMOVD X5, AX
	IMULL $-128, AX
	MOVL AX, 48(R9)(CX*4)      // off[12+h] = −128·ΣQ
	ADDQ DX, SI
	ADDQ $32, DI
	INCQ CX
	CMPQ CX, $4
	JLT  du_query
du_ok:
	VZEROUPPER
	MOVB $1, ret+48(FP)
	RET
du_fail:
	VZEROUPPER
	MOVB $0, ret+48(FP)
	RET
`
