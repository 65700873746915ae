//go:build ignore

// gen_tq4avx2 writes multi_tq4avx2_amd64.s: the AVX2 integer scores kernels of tq4, turbo4,
// turbo3 (t3GroupVAVX2, the plain flavour t3GroupAVX2, and its uniform-scale form t3GroupUAVX2,
// whose digits and scores differ: multiScoresT3UAVX2I; the AVX-VNNI uniform-scale form
// t3GroupUVAVX2, the AVX-512 uniform kernels' scores), turbo2 (t2Chunk, the plain flavour
// t2ChunkAVX2, the AVX-VNNI uniform-scale t2ChunkUV) and q2k (turbo2's with every row scale 1, the plain
// flavour's dots by q2kChunkAVX2, and its query preparation, q2kDigitsAVX2), the 256-bit ports of gen_tq4vnni.go's AVX-512 VNNI kernels (the same digits, the same exact
// int32 group dots, the same float32 operations in the same order after them, so the same
// scores bit for bit). Run with `go generate ./native/kvq`.
//
// Eight rows go at a time, one per 32-bit lane (lane l of every vector holds row l). Per
// 32-value group the rows' 16 payload bytes are loaded two rows to a vector (row r in the low
// 128-bit lane, row 4 + r in the high one) and transposed to dwords, so that dword vector k holds
// bytes 4k..4k+3 of every row: permuted values 4k..4k+3 in its low nibbles, 16+4k..16+4k+3 in
// its high ones (tq4Permute), as the query's digits at offsets 4k and 16 + 4k lie.
//
// Two flavours form the group's dot of each query, one chain a query:
//
//   - AVX-VNNI (the VEX-coded VPDPBUSD of Intel Alder Lake and later and AMD Zen 5; multiScores
//     ...AVXVNNI): the nibbles are looked up with VPSHUFB in tq4Ints + 128 (unsigned bytes 24..232)
//     and VPDPBUSD adds their products with the query's digits (signed bytes) into a chain
//     started at −128·ΣQ, as the AVX-512 kernels do. Go's assembler encodes VPDPBUSD on Y
//     registers as EVEX (AVX-512 VL), which faults on CPUs without AVX-512, so the VEX form is
//     written as bytes (vexReg, gen_vexlib.go).
//   - Plain AVX2 (multiScores...AVX2I): VPMADDUBSW multiplies unsigned by signed bytes and
//     SATURATES its pair sums to int16, so the levels cannot go in offset by 128 (a pair of
//     232·127 would overflow). The nibbles are looked up as the signed levels L (tq4Ints,
//     |L| ≤ 104), VPABSB makes |L| the unsigned operand, and VPSIGNB gives each query digit
//     the level's sign: |L|·(sign(L)·Q) = L·Q, a pair sum at most 2·104·127 = 26416 < 2¹⁵, so
//     nothing saturates and the int16 pair sums are exact; VPMADDWD by ones widens them to
//     int32 and VPADDD adds them to the chain (started at 0). The chain holds the same exact
//     Σ Q·L as the VNNI flavour's.
//
// Each group's integer dot is converted and added times the query's group scale (an FMA);
// after the last group the sum is multiplied by the row scale (f32 for tq4, f16 for turbo4)
// times tq4Unit and the query's offset is added (an FMA), as in the AVX-512 kernels.
//
// Cost per row of 128 values and four queries: 16 VPDPBUSD (VNNI), or 16 each of VPSIGNB,
// VPMADDUBSW, VPMADDWD and VPADDD (plain), plus per 32 values ~6 loads, shuffles and masks
// a row, against the float kernels' 64 FMAs and their lookups.
//
// Tried on an Intel Xeon (Sapphire Rapids class, KVLAB_NO_AVX512, AVX-VNNI, load ~15) and not
// kept: each query's chain split in two (even and odd code vectors; a timing-only kernel, its
// sums wrong) took turbo4's scores 5.64–5.84 → 5.26–5.52 ns a row in cache and the same
// streamed, so the chains' latency (8 VPDPBUSD a group, 40 cycles) is not what bounds them
// (turbo2's two groups a chunk interleaved on eight chains, likewise timing-only: 4.61–4.79 →
// 4.56–4.72 in cache, 5.32–5.53 → 5.27–5.50 streamed);
// the prefetch 256 rows ahead instead of 128 (SHLQ $8) took attn's TestDecodeBreakdown scores
// turbo2 4.92–5.01 → 4.94–5.23, turbo4 6.62–6.72 → 6.83–6.98, tq4 6.49–7.21 → 7.05–7.50.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// chainStart starts the four queries' chains Y4..Y7: at −128·ΣQ (the aux words at DX + 48) for
// the AVX-VNNI flavour's offset levels; the plain flavour's first code vector starts them with
// its widened products instead of adding them to zeros (chain): 8 operations fewer a group of
// eight rows, measured on Zen 4 under KVLAB_NO_AVX512 (thread CPU, d 128, four queries, in
// cache, min of two runs of six alternations) tq4 10.20 → 10.04 ns a row, turbo4 10.28 →
// 10.14, turbo3 12.00 → 11.82.
func chainStart(b *strings.Builder, vnni bool) {
	w := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	if !vnni {
		firstChain = true // the group's first code vector starts the chains
		return
	}
	for h := 0; h < 4; h++ {
		w("VPBROADCASTD %d(DX), Y%d // −128·ΣQ: the levels' offset", 48+4*h, 4+h)
	}
}

// chain writes code vector Yc (the codes of the values at digit offset off, 0..15 each) looked up
// (the table in Y12) and run through the four queries' chains Y4..Y7; it clobbers Yc, Yt (plain
// flavour), Y14 and Y15.
func chain(b *strings.Builder, vnni bool, c, t, off int) {
	w := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	if vnni {
		chainVia(b, c, 12, off)
		return
	}
	w("VPSHUFB Y%d, Y12, Y14 // L", c)
	w("VPABSB Y14, Y15       // |L|")
	for h := 0; h < 4; h++ {
		w("VPBROADCASTD %d(SI), Y%d", off+32*h, t)
		w("VPSIGNB Y14, Y%d, Y%d", t, t)
		w("VPMADDUBSW Y%d, Y15, Y%d", t, t)
		if firstChain {
			w("VPMADDWD ·avx2Ones16(SB), Y%d, Y%d", t, 4+h)
			continue
		}
		w("VPMADDWD ·avx2Ones16(SB), Y%d, Y%d", t, t)
		w("VPADDD Y%d, Y%d, Y%d", t, 4+h, 4+h)
	}
	firstChain = false
}

// chainVia is chain's AVX-VNNI flavour for a code vector Yc looked up in the table in Ytab
// (none where tab < 0: Yc holds the levels + 128 already) in place.
func chainVia(b *strings.Builder, c, tab, off int) {
	w := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	if tab >= 0 {
		w("VPSHUFB Y%d, Y%d, Y%d", c, tab, c)
	}
	for h := 0; h < 4; h++ {
		w("VPBROADCASTD %d(SI), Y14", off+32*h)
		w("%s", vexReg(opVPDPBUSD, 4+h, c, 14))
	}
}

// firstChain marks the plain flavour's first code vector of a group, whose products start
// the chains (chainStart, chain).
var firstChain bool

// chainEnd converts the chains Y4..Y7 and adds them times the queries' group scales (the
// float32s at DX) to the sums Y8..Y11, and steps SI and DX to the next group's digits and aux
// words; it clobbers Y13.
func chainEnd(b *strings.Builder) {
	w := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	for h := 0; h < 4; h++ {
		w("VCVTDQ2PS Y%d, Y%d", 4+h, 4+h)
		w("VBROADCASTSS %d(DX), Y13", 4*h)
		w("VFMADD231PS Y13, Y%d, Y%d", 4+h, 8+h)
	}
	w("ADDQ $128, SI")
	w("ADDQ $96, DX")
}

// loadRows loads 16 payload bytes of each of the eight rows (CX rows 0..3, BX rows 4..7; R8 =
// rb, R12 = 3rb) and transposes their dwords within the 128-bit lanes, so that Yk (k = 0..3)
// holds dword k of row l in lane l; it clobbers Y4..Y7.
func loadRows(b *strings.Builder) {
	for r := 0; r < 4; r++ {
		loadRow(b, r, 0)
	}
	transposeRows(b)
}

// loadRow loads the 16 payload bytes at offset o of rows r (CX) and 4 + r (BX) into Yr.
func loadRow(b *strings.Builder, r, o int) {
	w := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	idx := []string{"", "(R8*1)", "(R8*2)", "(R12*1)"}[r]
	w("VMOVDQU %s(CX)%s, X%d", disp(o), idx, r)
	w("VINSERTI128 $1, %s(BX)%s, Y%d, Y%d", disp(o), idx, r, r)
}

// disp writes the displacement o ("" for 0, as the loads were written before loadRow).
func disp(o int) string {
	if o == 0 {
		return ""
	}
	return fmt.Sprint(o)
}

// transposeRows transposes the dwords of Y0..Y3 (rows r and 4 + r in Yr) within the 128-bit
// lanes, as loadRows; it clobbers Y4..Y7.
func transposeRows(b *strings.Builder) {
	w := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	w("VPUNPCKLDQ Y1, Y0, Y4")
	w("VPUNPCKHDQ Y1, Y0, Y5")
	w("VPUNPCKLDQ Y3, Y2, Y6")
	w("VPUNPCKHDQ Y3, Y2, Y7")
	w("VPUNPCKLQDQ Y6, Y4, Y0")
	w("VPUNPCKHQDQ Y6, Y4, Y1")
	w("VPUNPCKLQDQ Y7, Y5, Y2")
	w("VPUNPCKHQDQ Y7, Y5, Y3")
}

// t2Chunk writes one 64-value chunk of eight turbo2 rows (16 code bytes each, two groups;
// CX rows 0..3, BX rows 4..7) into the sums Y8..Y11. The rows' bytes are loaded and
// transposed as tq4's, so that dword k of lane l holds values 16k..16k+15 of row l, four to a
// byte; a 16-bit shift by 2t and a mask leave code t of every byte (values 16k + 4b + t at byte
// b, t2AVX2Perm the order the queries are permuted to), and each group's four dword vectors
// give eight code vectors, chained as tq4's.
func t2Chunk(vnni bool) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	loadRows(&b)
	for g := 0; g < 2; g++ {
		chainStart(&b, vnni)
		for k := 2 * g; k < 2*g+2; k++ {
			if vnni { // two codes a nibble (t2VNNIU8Hi in Y15: the level + 128 of a nibble's high code)
				w("VPAND ·avx2Nib(SB), Y%d, Y13", k)
				chainVia(&b, 13, 12, 16*(k%2))
				w("VPAND ·avx2Nib(SB), Y%d, Y13", k)
				chainVia(&b, 13, 15, 16*(k%2)+4)
				w("VPSRLW $4, Y%d, Y%d", k, k)
				w("VPAND ·avx2Nib(SB), Y%d, Y%d", k, k)
				w("VPSHUFB Y%d, Y12, Y13", k)
				chainVia(&b, 13, -1, 16*(k%2)+8)
				chainVia(&b, k, 15, 16*(k%2)+12)
				continue
			}
			for t := 0; t < 4; t++ {
				if t == 0 {
					w("VPAND ·t2AVX2Mask3(SB), Y%d, Y13", k)
				} else {
					w("VPSRLW $%d, Y%d, Y13", 2*t, k)
					w("VPAND ·t2AVX2Mask3(SB), Y13, Y13")
				}
				chain(&b, vnni, 13, 13, 16*(k%2)+4*t)
			}
		}
		chainEnd(&b)
	}
	return b.String()
}

// q2kChunkAVX2 is t2Chunk's plain AVX2 flavour for q2k (multiScoresQ2KAVX2I), with the same
// int32 group dots by fewer operations: t2ChunkAVX2's route with the digits as q2kDigitsAVX2
// leaves them (not widened: q2k's digits change every group of 32 cells, where turbo2's serve a
// whole call). turboInts2 are 9 times l = {−10, −3, 3, 10}, so VPMADDUBSW takes l + 10 (0, 7,
// 13, 20: Y12 holds them, q2kAVX2U) as its unsigned operand and the query's digits Q as they
// are (|Q| ≤ 127) as the signed one: a pair sum is at most 2·20·127 = 5080 in magnitude, and
// the four code vectors of a half group add up in int16 (VPADDW, at most 20320 < 2¹⁵: nothing
// saturates or wraps) before one VPMADDWD (by 9s: see the end) widens them. Per group the eight code
// vectors are looked up once into Y0..Y7 (the second group's dwords wait in the stage words,
// R13) and the queries go one after another, each digit dword broadcast (VPBROADCASTD) into
// the register its product goes to. The offset and the factor 9 were first applied in float32 where
// S = Σ (l + 10)·Q (|S| ≤ 32·20·127) is converted: 9·S − 90·ΣQ, with −90·ΣQ a float32 in aux
// words 8..11 (q2kDigitsAVX2), all whole numbers below 2²⁴, so the FMA forms Σ Q·L exactly, the
// dot t2Chunk forms, and the group's FMA adds it times the query's scale to the sum in
// Y8..Y11 as t2Chunk does: the scores are the same bit for bit. Per (code vector, query)
// VPBROADCASTD, VPMADDUBSW and VPADDW; per code vector VPSHUFB once for the four queries. The
// codes are looked up two a nibble: each dword vector's low nibbles (one mask) and high ones (a
// shift and a mask) index q2kAVX2U for their low code and q2kAVX2UHi for their high one, 3
// operations and 4 lookups a dword vector where a shift and a mask a code took 7 and 4:
// TestQ2KDecodeSplit's cells 6.37 → 6.07 ns a cell in cache, scores 8.67 → 8.38 (Zen 4,
// KVLAB_NO_AVX512, min of five alternated runs).
// Tried and not paying (same measure): the rows not transposed (a row pair's vector against
// per-chunk digit patterns, dword k of pattern t the digits of code t of the chunk's dword k,
// written per group by a pass over the digits; VPHADDD and VSHUFPS sort the dots to rows): the
// cells 6.05 → 5.90 ns a cell, the scores 8.36 → 8.46 with the patterns' pass.
// Measured on Zen 4 under KVLAB_NO_AVX512 (thread CPU, d 128, four queries, min of five
// alternated runs of TestQ2KDecodeSplit), against the earlier route (the code vectors looked
// up per run of four and the queries side by side, the chains in int32 from −10·ΣQ times 9 by
// a shift and an add, the float sums in the stage words): the cells 6.81 → 6.37 ns a cell in
// cache, 6.78 → 6.32 streamed; the scores (preparation and cells) 9.67 → 9.21 in cache, 9.83
// → 9.35 streamed; attn's TestDecodeBreakdown (131072 rows, min of 14 alternations) scores
// 9.90 → 9.34 ns a row, the whole decode 18.57 → 17.88. Before it (same test, three runs):
// 9.21–9.22 with t2Chunk, 7.96 with l signed and the int16 sums (VPABSB, VPSIGNB), 6.80–6.82
// with the earlier route. As t2ChunkAVX2 now does, the factor 9 and the offset are applied
// in int32 before the conversion (VPMADDWD by 9s, t2AVX2Nine16; −90·ΣQ an int32 aux word,
// VPBROADCASTD and VPADDD where VBROADCASTSS and an FMA were): the same whole number below
// 2²⁴, converted exactly, so the same scores bit for bit. TestQ2KDecodeSplit (Zen 4,
// KVLAB_NO_AVX512, min of each of six alternations): the cells 6.03–6.07 → 5.82–5.83 ns a cell
// in cache, the scores 8.33–8.38 → 8.17–8.21 in cache, 8.40–8.56 → 8.22–8.43 streamed; attn's
// TestDecodeBreakdown scores 8.45 → 8.25 ns a row in the quietest of four alternations.
func q2kChunkAVX2() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	loadRows(&b)
	w("VMOVDQU Y2, (R13)")
	w("VMOVDQU Y3, 32(R13)")
	for g := 0; g < 2; g++ {
		if g == 1 {
			w("VMOVDQU (R13), Y0")
			w("VMOVDQU 32(R13), Y1")
		}
		// Code vector 4e + t (code t of the dwords in Y(e)) into Y(cv[4e+t]): codes 0 and 1
		// from the low nibbles (Y12: the level of the nibble's low code, Y15: of its high one),
		// 2 and 3 from the high nibbles.
		cv := []int{2, 3, 4, 5, 6, 7, 0, 1}
		w("VBROADCASTI128 ·q2kAVX2UHi(SB), Y15")
		for e := 0; e < 2; e++ {
			w("VPAND ·avx2Nib(SB), Y%d, Y13", e)
			w("VPSRLW $4, Y%d, Y14", e)
			w("VPAND ·avx2Nib(SB), Y14, Y14")
			for t := 0; t < 4; t++ {
				w("VPSHUFB Y%d, Y%d, Y%d // l + 10", 13+t/2, 12+3*(t%2), cv[4*e+t])
			}
		}
		for h := 0; h < 4; h++ {
			for half, acc := range []int{14, 15} {
				for t := 0; t < 4; t++ {
					off := 16*half + 4*t + 32*h
					if t == 0 {
						w("VPBROADCASTD %d(SI), Y%d", off, acc)
						w("VPMADDUBSW Y%d, Y%d, Y%d", acc, cv[4*half+t], acc)
						continue
					}
					w("VPBROADCASTD %d(SI), Y13", off)
					w("VPMADDUBSW Y13, Y%d, Y13", cv[4*half+t])
					w("VPADDW Y13, Y%d, Y%d", acc, acc)
				}
				w("VPMADDWD ·t2AVX2Nine16(SB), Y%d, Y%d", acc, acc)
			}
			w("VPADDD Y15, Y14, Y14 // 9·S, S = Σ (l + 10)·Q")
			w("VPBROADCASTD %d(DX), Y13 // −90·ΣQ", 32+4*h)
			w("VPADDD Y13, Y14, Y14 // 9·S − 90·ΣQ = Σ Q·L")
			w("VCVTDQ2PS Y14, Y13")
			w("VBROADCASTSS %d(DX), Y14", 4*h)
			w("VFMADD231PS Y14, Y13, Y%d", 8+h)
		}
		w("ADDQ $128, SI")
		w("ADDQ $96, DX")
	}
	return b.String()
}

// t2ChunkAVX2 writes one 64-value chunk of eight turbo2 rows (two groups) into the sums Y8..Y11
// for the plain AVX2 flavour, by q2kChunkAVX2's route (l + 10 as VPMADDUBSW's unsigned operand,
// the query digits as they are, int16 sums of four code vectors) with the looked-up code vectors
// held in registers and the queries taken one after another: per group the eight code vectors
// are looked up once into Y0..Y7 (the second group's dwords wait in the stage words, R13),
// and per query the first product of each run of four starts its int16 sum, which one
// VPMADDWD widens (by 9s: see the end). The offset and the levels' factor 9 were first applied
// in float32 where the sums are converted: 9·S − 90·ΣQ (S = Σ (l + 10)·Q, at most 32·20·127 in magnitude, and
// 90·ΣQ are whole numbers below 2²⁴, so the FMA forms Σ Q·L exactly, the float32 t2Chunk
// converts; ΣQ is the aux word 20 + h), and the group's FMA adds it times the query's scale
// to the sum in Y8..Y11 as t2Chunk does, so the scores stay the same bit for bit. The query
// digits come widened (t2AVX2Widen: each dword broadcast to 32 bytes, once per call), so that
// every VPMADDUBSW takes them as its memory operand instead of after a VPBROADCASTD, and with
// them each query's −90·ΣQ, broadcast (one load where VBROADCASTSS and VMULPS were:
// TestMultiQueryStreamSpeed 7.13 → 6.88 ns a row in cache, min of six alternations, medians
// 7.22 → 7.10; streamed 7.29 → 7.22). Per
// (code vector, query) VPMADDUBSW and VPADDW where t2Chunk takes VPBROADCASTD, VPSIGNB,
// VPMADDUBSW, VPMADDWD and VPADDD (and VPSHUFB, VPABSB per code vector). Measured on Zen 4
// under KVLAB_NO_AVX512 (thread CPU, d 128, four queries, per row; base → this, min of five
// alternations): kvq's TestMultiQueryStreamSpeed scores 10.05 → 7.28 ns in cache, 10.25 →
// 7.51 streamed; attn's TestDecodeBreakdown (131072 rows, three alternations) scores 9.89 →
// 6.93, the whole decode 19.15 → 16.23. Of that, the q2k route alone (t2Chunk's layout, the
// sums in memory) gave 8.0 in cache, the sums in registers 7.4, the widened digits 6.9 (kvq
// kernel alone). The codes are looked up two a nibble as q2kChunkAVX2 looks them up (3
// operations a dword vector where a shift and a mask a code took 7: 8 fewer a group of eight
// rows): TestMultiQueryStreamSpeed scores 6.98/7.02 → 6.61/6.68 ns a row in cache (min/median
// of five alternations), 7.19/7.28 → 6.78/6.88 streamed; attn's TestDecodeBreakdown scores
// 6.67–6.74 → 6.38–6.58 (min of each of three alternations; Zen 4, KVLAB_NO_AVX512). The factor
// 9 and the offset are applied in int32 before the conversion, not by an FMA after it: the
// VPMADDWD that widens the int16 sums takes 9s (t2AVX2Nine16) where it took ones, so the two
// halves add to 9·S (at most 9·81280 in magnitude), and t2AVX2Widen leaves −90·ΣQ as int32s
// for a VPADDD memory operand: 9·S − 90·ΣQ is the same whole number below 2²⁴, converted
// exactly, so the scores stay the same bit for bit; a VPADDD where an FMA took a multiply pipe,
// per (query, group). TestMultiQueryStreamSpeed scores 6.62/6.70 → 6.40/6.51 ns a row in cache
// (min/median of six alternations), 6.81/6.93 → 6.56/6.74 streamed; attn's TestDecodeBreakdown
// scores lower in each of four alternations (6.63 → 6.21 the quietest pair; Zen 4,
// KVLAB_NO_AVX512).
func t2ChunkAVX2() string { return t2ChunkAVX2x(false) }

// t2ChunkUAVX2 is t2ChunkAVX2 for the uniform-scale kernel (multiScoresT2UAVX2I): the queries'
// digits at one scale each (vnniDigitsUni, |Q| ≤ 127, as the AVX-512 uniform kernels take
// them), so each query's 9·S of a group is added to its row chain (Y8..Y11, int32) and the
// offset, conversion and scaling wait for the row's end (uniFini): per group and query one
// VPADDD where t2ChunkAVX2 takes a VPADDD, a conversion, a broadcast and an FMA; the widened
// digits 1024 bytes a group, the offsets after the last (uniWiden, uniDigitsAVX2). Measured on
// Zen 4 under KVLAB_NO_AVX512 (attn's TestDecodeBreakdown, 131072 rows, d 128, 32/8 heads, one
// thread, thread CPU, old and new test binaries alternated five times, min ns a row of each
// run, load ~14): scores 6.39–6.51 → 5.68–5.77, the whole decode 15.45–16.20 → 15.05–15.34.
func t2ChunkUAVX2() string { return t2ChunkAVX2x(true) }

// t2ChunkUV writes one 64-value chunk of eight turbo2 rows for the AVX-VNNI uniform-scale
// kernel (multiScoresT2UAVXVNNI): the rows loaded and transposed as t2Chunk's (with two
// temporaries) into the stage words (R13, rounded up to 32 bytes: a 32-byte store split across
// a 4 KiB page does not forward to the load after it (a split across a line within a page
// costs nothing measurable: see the kinds loop in main), which took a paged cache's turbo2 scores
// from 1.78–1.81 ms to 2.68–2.88 where the caller's stack left the stage unaligned; kvcache
// TestPagedBreakdown), each dword vector's codes looked up two a nibble as
// t2ChunkAVX2's (Y12: turbo2VNNIU8, the level + 128 of a nibble's low code; Y15: t2VNNIU8Hi, of
// its high one) into four code vectors (Y0..Y3), each with one VEX VPDPBUSD a query on the
// widened digits of the AVX-512 uniform kernels' queries (|Q| ≤ 127; chainUV's layout, 1024
// bytes a group) into the row's chains, two a query (codes 0 and 2 of a byte into Y4..Y7, 1
// and 3 into Y8..Y11), added, converted and scaled once a row (uniFini, −128·ΣQ added):
// multiScoresT2PUVNNI's exact Σ Q·L and float32 operations, so its scores bit for bit. Per
// chunk of eight rows it drops t2Chunk's 64 digit broadcasts, eight conversions, scale
// broadcasts and FMAs, and 8 of its 24 shifts and masks. Intel Xeon (Sapphire Rapids class,
// 2 vCPUs, KVLAB_NO_AVX512, thread CPU, load ~12; the kernel alone on 256 rows in L1, three
// runs of four alternations, min): multiScoresT2AVXVNNI 4.87–5.12 ns a row, this 4.37–4.44;
// with one chain a query (the chains' latency: 32 VPDPBUSD deep a block of eight rows at d
// 128) 4.68–5.15, no faster than the per-group kernel; with half the VPDPBUSD (timing only)
// 3.5–3.8. attn's TestDecodeBreakdown scores 6.12–6.32 → 5.67–6.03 (three alternations, min,
// load ~12).
func t2ChunkUV() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	for r := 0; r < 4; r++ {
		loadRow(&b, r, 0)
	}
	// Transpose with two temporaries (t3GroupAVX2x's): dword vectors 0..3 in Y2, Y3, Y13, Y0,
	// then into the stage words (R13).
	for _, l := range []string{"VPUNPCKLDQ Y1, Y0, Y13", "VPUNPCKHDQ Y1, Y0, Y14", "VPUNPCKLDQ Y3, Y2, Y0",
		"VPUNPCKHDQ Y3, Y2, Y1", "VPUNPCKLQDQ Y0, Y13, Y2", "VPUNPCKHQDQ Y0, Y13, Y3",
		"VPUNPCKLQDQ Y1, Y14, Y13", "VPUNPCKHQDQ Y1, Y14, Y0"} {
		w("%s", l)
	}
	for e, reg := range []int{2, 3, 13, 0} {
		w("VMOVDQU Y%d, %d(R13)", reg, 32*e)
	}
	for e := 0; e < 4; e++ {
		w("VMOVDQU %d(R13), Y13", 32*e)
		w("VPSRLW $4, Y13, Y14")
		w("VPAND ·avx2Nib(SB), Y13, Y13")
		w("VPAND ·avx2Nib(SB), Y14, Y14")
		for t := 0; t < 4; t++ {
			w("VPSHUFB Y%d, Y%d, Y%d // L + 128", 13+t/2, 12+3*(t%2), t)
		}
		for t := 0; t < 4; t++ {
			for h := 0; h < 4; h++ { // even codes into Y4..Y7, odd into Y8..Y11
				w("%s", vexSI(opVPDPBUSD, 4+4*(t%2)+h, t, 1024*(e/2)+256*h+32*(4*(e%2)+t)))
			}
		}
	}
	w("ADDQ $2048, SI")
	return b.String()
}

// groupUV writes one 32-value group of eight turbo4 rows for the AVX-VNNI uniform-scale kernel
// (multiScoresT4UAVXVNNI): the rows loaded and transposed with two temporaries (dword vectors
// 0..3 in Y2, Y3, Y13, Y0), each dword vector's low and high nibbles looked up as the levels +
// 128 (Y12, tq4VNNIU8) and multiplied by the widened digits of the queries (|Q| ≤ 127;
// chainUV's layout) with one VEX VPDPBUSD a query into the row's chains, two a query (the low
// nibbles' into Y4..Y7, the high ones' into Y8..Y11). Per group of eight rows it drops
// group(true)'s 36 digit broadcasts, four conversions, scale broadcasts and FMAs. Intel Xeon
// (Sapphire Rapids class, 2 vCPUs, KVLAB_NO_AVX512, thread CPU, load ~15; the kernel alone on
// 256 rows in L1, three runs of four alternations, min): multiScoresT4AVXVNNI 5.73–5.88 ns a
// row, this 4.95–5.33; attn's TestDecodeBreakdown scores 8.34–8.61 → 7.25–8.09 (three
// alternations, min, load ~20). Not kept for the three uniform-scale AVX-VNNI kernels: two
// PREFETCHT1 32 KiB past the body's PREFETCHT0s a group (the decode's scores, three
// alternations, min, load ~25: turbo3 8.79–9.26 → 8.68–9.11, turbo2 5.01–5.31 → 5.19–5.46,
// turbo4 7.76–8.04 → 7.85–8.09, within the noise).
func groupUV() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	for r := 0; r < 4; r++ {
		loadRow(&b, r, 0)
	}
	for _, l := range []string{"VPUNPCKLDQ Y1, Y0, Y13", "VPUNPCKHDQ Y1, Y0, Y14", "VPUNPCKLDQ Y3, Y2, Y0",
		"VPUNPCKHDQ Y3, Y2, Y1", "VPUNPCKLQDQ Y0, Y13, Y2", "VPUNPCKHQDQ Y0, Y13, Y3",
		"VPUNPCKLQDQ Y1, Y14, Y13", "VPUNPCKHQDQ Y1, Y14, Y0"} {
		w("%s", l)
	}
	for k, reg := range []int{2, 3, 13, 0} {
		w("VPSRLW $4, Y%d, Y14", reg)
		w("VPAND ·avx2Nib(SB), Y%d, Y1", reg)
		w("VPAND ·avx2Nib(SB), Y14, Y14")
		w("VPSHUFB Y1, Y12, Y1 // u = L + 128")
		w("VPSHUFB Y14, Y12, Y14")
		for h := 0; h < 4; h++ {
			w("%s", vexSI(opVPDPBUSD, 4+h, 1, 256*h+32*k))
		}
		for h := 0; h < 4; h++ {
			w("%s", vexSI(opVPDPBUSD, 8+h, 14, 256*h+32*(4+k)))
		}
	}
	w("ADDQ $1024, SI")
	return b.String()
}

func t2ChunkAVX2x(uni bool) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	loadRows(&b)
	w("VMOVDQU Y2, (R13)")
	w("VMOVDQU Y3, 32(R13)")
	for g := 0; g < 2; g++ {
		if g == 1 {
			w("VMOVDQU (R13), Y0")
			w("VMOVDQU 32(R13), Y1")
		}
		// Code vector 4e + t (code t of the dwords in Y(e)) into Y(cv[4e+t]), two codes a
		// nibble as q2kChunkAVX2 looks them up: codes 0 and 1 from the low nibbles (Y12: the
		// level of the nibble's low code, Y15: of its high one), 2 and 3 from the high nibbles.
		cv := []int{2, 3, 4, 5, 6, 7, 0, 1}
		w("VBROADCASTI128 ·q2kAVX2UHi(SB), Y15")
		for e := 0; e < 2; e++ {
			w("VPAND ·avx2Nib(SB), Y%d, Y13", e)
			w("VPSRLW $4, Y%d, Y14", e)
			w("VPAND ·avx2Nib(SB), Y14, Y14")
			for t := 0; t < 4; t++ {
				w("VPSHUFB Y%d, Y%d, Y%d // l + 10", 13+t/2, 12+3*(t%2), cv[4*e+t])
			}
		}
		for h := 0; h < 4; h++ {
			for half, acc := range []int{14, 15} {
				for t := 0; t < 4; t++ {
					off := 8 * (16*half + 4*t + 32*h) // the widened digits: 32 bytes a dword
					if t == 0 {
						w("VPMADDUBSW %d(SI), Y%d, Y%d", off, cv[4*half+t], acc)
						continue
					}
					w("VPMADDUBSW %d(SI), Y%d, Y13", off, cv[4*half+t])
					w("VPADDW Y13, Y%d, Y%d", acc, acc)
				}
				w("VPMADDWD ·t2AVX2Nine16(SB), Y%d, Y%d", acc, acc)
			}
			w("VPADDD Y15, Y14, Y14 // 9·S, S = Σ (l + 10)·Q")
			if uni {
				w("VPADDD Y14, Y%d, Y%d", 8+h, 8+h)
				continue
			}
			w("VPADDD %d(SI), Y14, Y14 // 9·S − 90·ΣQ = Σ Q·L", 1024+32*h)
			w("VCVTDQ2PS Y14, Y13")
			w("VBROADCASTSS %d(DX), Y14", 4*h)
			w("VFMADD231PS Y14, Y13, Y%d", 8+h)
		}
		if uni {
			w("ADDQ $1024, SI")
			continue
		}
		w("ADDQ $1152, SI")
		w("ADDQ $96, DX")
	}
	return b.String()
}

// group writes one 32-value group of eight rows (CX rows 0..3, BX rows 4..7) into the sums
// Y8..Y11; vnni picks the flavour.
func group(vnni bool) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	loadRows(&b)
	// The chains Y4..Y7.
	chainStart(&b, vnni)
	for k := 0; k < 4; k++ {
		w("VPAND ·avx2Nib(SB), Y%d, Y13", k)
		w("VPSRLW $4, Y%d, Y%d", k, k)
		w("VPAND ·avx2Nib(SB), Y%d, Y%d", k, k)
		chain(&b, vnni, 13, 13, 4*k)
		chain(&b, vnni, k, 13, 16+4*k)
	}
	chainEnd(&b)
	return b.String()
}

// groupPipe writes the plain flavour's group as group(false) does, but with its rows already
// in Y0..Y3 (loadRow, not transposed): each Yk, once its codes are looked up, is loaded with
// the next group's rows r = k (16 bytes on), unless last (the row's last group, whose next 16
// bytes would run past the rows). The kernels run the first group's loads before the loop and
// the last group apart, so nothing reads past the rows. Measured on Zen 4 under KVLAB_NO_AVX512
// (thread CPU, d 128, four queries, ns a row, min of 100 alternations in cache and of 7 passes
// over 128 MiB of hugemem rows streamed, six runs, three of each order; turbo2's unchanged
// kernel alternated beside them moved ±0.05): tq4 in cache 10.01–10.06 → 9.85–9.87, streamed
// 10.13–10.37 → 9.87–10.15; turbo4 in cache 10.10–10.18 → 9.94–9.98, streamed 10.25–10.38 →
// 9.96–10.32; attn's TestDecodeBreakdown (131072 rows, old and new test binaries alternated,
// the four pairs on a quiet machine) scores tq4 10.07–10.22 → 9.93–10.00, turbo4 10.21–10.39 →
// 10.06–10.23. The rows' loads are a small part of these kernels' cost: a timing-only run with
// them replaced by register copies took tq4 10.01 → 9.92, turbo4 10.12 → 10.04 in cache, and
// turbo3's (t3GroupAVX2) no faster, turbo2's (t2ChunkAVX2) 6.30 → 6.14; turbo2's registers are
// all taken until its chunk's last products, so both keep their loads where they are.
func groupPipe(last bool) string { return groupPipeX(last, false) }

// groupPipeU is groupPipe for turbo4's uniform-scale kernel (multiScoresT4UAVX2I): the nibbles
// looked up as u = L + 104 (0..208, tq4AVX2U) against the queries' widened digits at one scale
// a query, |Q| ≤ 78 (t4UniQMax: a VPMADDUBSW pair sum at most 2·208·78 = 32448 < 2¹⁵), chained
// over the whole row as turbo3's (chainU; in tq4UChains, as transposeRows takes Y4..Y7), the
// offset −104·ΣQ, conversion and scaling once a row (uniFiniX). Measured on Zen 4 under
// KVLAB_NO_AVX512 (attn's TestDecodeBreakdown, 131072 rows, d 128, 32/8 heads, one thread,
// thread CPU, old and new test binaries alternated five times, min ns a row of each run, load
// ~8): scores 10.11–10.20 → 7.12–7.26, the whole decode 19.42–19.65 → 16.89–17.48.
func groupPipeU(last bool) string { return groupPipeX(last, true) }

func groupPipeX(last, uni bool) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	transposeRows(&b)
	if !uni {
		chainStart(&b, false)
	}
	for k := 0; k < 4; k++ {
		w("VPAND ·avx2Nib(SB), Y%d, Y13", k)
		w("VPSRLW $4, Y%d, Y%d", k, k)
		w("VPAND ·avx2Nib(SB), Y%d, Y%d", k, k)
		if uni {
			chainUX(&b, 13, 14, k, tq4UChains, "u = L + 104")
			chainUX(&b, k, 14, 4+k, tq4UChains, "u = L + 104")
		} else {
			chain(&b, false, 13, 13, 4*k)
			chain(&b, false, k, 13, 16+4*k)
		}
		if !last {
			loadRow(&b, k, 16)
		}
	}
	if uni {
		w("ADDQ $1024, SI")
		return b.String()
	}
	chainEnd(&b)
	return b.String()
}

// t3Tables writes turbo3's code mask (the values kernels' t3Dec8).
func t3Tables() string {
	var b strings.Builder
	for i := 0; i < 32; i += 8 {
		fmt.Fprintf(&b, "DATA ·t3AVX2Mask7+%d(SB)/8, $0x0007000700070007\n", i)
	}
	b.WriteString("GLOBL ·t3AVX2Mask7(SB), RODATA|NOPTR, $32\n")
	return b.String()
}

// t3N0 and t3N1 give turbo3's plain AVX2 code order (t3GroupAVX2): dword d of a row's first
// packed vector holds the codes of values t3N0[d] + 8b (b = 0..3, one byte each; the values
// whose codes lie at bit offset t3NS0[d] within one byte), dword d of its second the codes of
// values a and a + 1 for a in t3N1[d] (the pairs whose second code straddles two bytes: the
// first at bit offset 3 or 4 of a 16-bit window, the second 3 bits above it).
var (
	t3N0  = [4]int{0, 3, 6, 7}
	t3NS0 = [4]int{0, 1, 2, 5}
	t3N1  = [4][2]int{{1, 9}, {17, 25}, {4, 12}, {20, 28}}
)

// t3NValue is the value whose code sits at position p (0..31) of turbo3's plain AVX2 order:
// the digits' order of t3AVX2PermPlain (multi_tq4avx2_amd64.go).
func t3NValue(p int) int {
	if p < 16 {
		return t3N0[p/4] + 8*(p%4)
	}
	q := p - 16
	return t3N1[q/4][q%4/2] + q%2
}

// t3NTables writes t3GroupAVX2's byte placements (t3AVX2Ctl0: each value's code byte;
// t3AVX2Ctl1: each pair's 16-bit window, two a dword), shift counts (t3AVX2Sh0, and the
// windows' t3AVX2ShA right and t3AVX2ShB left), the blend mask (the odd bytes from the left
// shift) and the code mask.
func t3NTables() string {
	var b strings.Builder
	var ctl0, ctl1, blend, mask [32]byte
	var sh0, shA, shB [8]uint32
	for l := 0; l < 2; l++ {
		for d := 0; d < 4; d++ {
			for k := 0; k < 4; k++ {
				v := t3N0[d] + 8*k
				if 3*v%8 != t3NS0[d] {
					panic("turbo3: a code off its class")
				}
				ctl0[16*l+4*d+k] = byte(3 * v / 8)
				a := t3N1[d][k/2]
				s := 3 * a % 8
				if s != 3 && s != 4 || 3*a/8+1 > 11 {
					panic("turbo3: a window off")
				}
				ctl1[16*l+4*d+k] = byte(3*a/8 + k%2)
				blend[16*l+4*d+k] = byte(0xFF * (k % 2))
				mask[16*l+4*d+k] = 0x07
			}
			s := 3 * t3N1[d][0] % 8
			sh0[4*l+d], shA[4*l+d], shB[4*l+d] = uint32(t3NS0[d]), uint32(s), uint32(5-s)
		}
	}
	seen := map[int]bool{}
	for p := 0; p < 32; p++ {
		seen[t3NValue(p)] = true
	}
	if len(seen) != 32 {
		panic("turbo3: the order is not a permutation")
	}
	bytesData := func(name string, t [32]byte) {
		for i := 0; i < 32; i += 8 {
			var x uint64
			for k := 7; k >= 0; k-- {
				x = x<<8 | uint64(t[i+k])
			}
			fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $0x%016x\n", name, i, x)
		}
		fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $32\n\n", name)
	}
	dwordsData := func(name string, t [8]uint32) {
		for i := 0; i < 8; i += 2 {
			fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $0x%08x%08x\n", name, 4*i, t[i+1], t[i])
		}
		fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $32\n\n", name)
	}
	bytesData("t3AVX2Ctl0", ctl0)
	bytesData("t3AVX2Ctl1", ctl1)
	bytesData("t3AVX2Blend", blend)
	bytesData("t3AVX2Mask3", mask)
	dwordsData("t3AVX2Sh0", sh0)
	dwordsData("t3AVX2ShA", shA)
	dwordsData("t3AVX2ShB", shB)
	return b.String()
}

// t3GroupAVX2 writes one 32-value group of eight turbo3 rows (12 code bytes each; CX rows 0..3,
// BX rows 4..7) into the sums Y8..Y11 for the plain flavour. Each row
// pair's 12 code bytes go into one vector (row r low, 4 + r high; the 16 bytes from the group's
// start, or for the row's last group, whose 16 bytes would run past the row, 8 and 4 of them),
// and two packed vectors are formed of them, 16 codes a row each, in t3NValue's order: one
// VPSHUFB puts each code's byte in place, VPSRLVD aligns the four codes of a dword (one bit
// offset a dword) and a mask keeps them; for the codes that straddle two bytes, one VPSHUFB
// puts two 16-bit windows in each dword, VPSRLVD aligns each window's first code (bit offset
// 3 or 4) in the even bytes, VPSLLVD its second (3 bits above) in the odd ones, and VPBLENDVB
// and a mask join them. The first vectors are transposed to dwords and chained as tq4's
// (VPSIGNB, VPMADDUBSW, VPMADDWD), the second wait in the stage words (R13) meanwhile. Per row
// pair and group 9 operations and a load, where t3Group (since removed: t3GroupVAVX2) took 16. Measured on Zen 4 under
// KVLAB_NO_AVX512 (thread CPU, d 128, four queries, per row; t3Group → this, min of five
// alternations): kvq's TestMultiQueryStreamSpeed scores 14.09 → 12.25 ns in cache, 14.27 →
// 12.42 streamed; attn's TestDecodeBreakdown (131072 rows, three alternations) scores 13.98 →
// 12.26, the whole decode 24.33 → 22.59.
func t3GroupAVX2(last bool) string { return t3GroupAVX2x(last, false, false) }

// t3GroupVAVX2 is t3GroupAVX2 with the AVX-VNNI chains (chain's VPDPBUSD on the levels + 128,
// started at −128·ΣQ): the AVX-VNNI kernel's group (multiScoresT3AVXVNNI), its digits in
// t3AVX2PermPlain's order. It replaced t3Group, which spread each 16-bit window with VPSHUFB,
// shifted and masked 16 codes an operation and packed them (16 operations a row pair and
// group, where this takes 9; the digits in another order, the same int32 dots, so the same
// scores bit for bit). Intel Xeon (Sapphire Rapids class, 2 vCPUs, KVLAB_NO_AVX512, thread
// CPU, load 12–13; the two alternated in one process, 15 rounds, min; in cache / streamed):
// 8.50–8.68 → 7.55–7.65 / 8.98–9.03 → 8.78–8.83 ns a row; the decode's scores (attn
// TestDecodeBreakdown, three alternations, min) 9.39–9.75 → 8.92–9.09.
func t3GroupVAVX2(last bool) string { return t3GroupAVX2x(last, false, true) }

// t3GroupUAVX2 is t3GroupAVX2 for the uniform-scale kernel (multiScoresT3UAVX2I): the same
// code vectors, each looked up as u = L + 88 (0..176, t3AVX2U) and multiplied by the query's
// widened digits (|Q| ≤ 93, t3UniQMax: a pair sum at most 2·176·93 = 32736 < 2¹⁵, so
// VPMADDUBSW never saturates) as VPMADDUBSW's memory operand, widened by VPMADDWD by ones
// (Y8) into the row's chains Y4..Y7, which run over the whole row: per (code vector, query)
// three operations where t3GroupAVX2 takes five (VPBROADCASTD, VPSIGNB, VPMADDUBSW, VPMADDWD,
// VPADDD) and no VPABSB, and no conversion, broadcast or FMA per group (chainU). Measured on
// Zen 4 under KVLAB_NO_AVX512 (attn's TestDecodeBreakdown, 131072 rows, d 128, 32/8 heads, one
// thread, thread CPU, old and new test binaries alternated five times, min ns a row of each
// run): scores 11.95–12.18 → 9.54–9.66, the whole decode 22.59–22.90 → 20.20–20.52 (with the
// query preparation in Go, ~10 µs a call; uniDigitsAVX2 then took it to ~0.34 µs: scores
// 11.84–12.41 → 9.39–9.52 in three more alternations on a busier machine).
func t3GroupUAVX2(last bool) string { return t3GroupAVX2x(last, true, false) }

// t3GroupUVAVX2 is t3GroupUAVX2 for AVX-VNNI CPUs (multiScoresT3UAVXVNNI): the same code
// vectors, looked up as u = L + 128 and multiplied by the widened digits of the AVX-512
// uniform kernels' queries (|Q| ≤ 127, vnniDigitsUni's) with one VEX VPDPBUSD a (code vector,
// query), the digits its memory operand (chainUV), into chains that run over the whole row,
// converted and scaled once a row (uniFini, −128·ΣQ added): the exact Σ Q·L and float32
// operations of multiScoresT3PUVNNI, so its scores bit for bit. Per group of eight rows it
// drops t3GroupVAVX2's 36 digit broadcasts, four conversions, four scale broadcasts and four
// FMAs, and the stage words' four stores and loads (the second packed vectors wait in
// registers, t3USecond). Intel Xeon (Sapphire Rapids class, 2 vCPUs, KVLAB_NO_AVX512, thread
// CPU, load 4–7): the kernel alone on 256 rows in L1 8.0–8.5 → 6.7–7.2 ns a row; attn's
// TestDecodeBreakdown scores 10.08–10.58 → 8.90–9.12 (three alternations, min). Where its
// time goes (timing-only variants, L1, 7.3 ns a row): the code vectors taken as the loaded
// bytes 5.2 (the decode ~2.1, its straddling half ~1.3), no VPDPBUSD 4.3 (~3.0). Not kept:
// two chains a query (the group's halves, Y4..Y7 and Y8..Y11) with the second vectors through
// the stage words 6.9–7.2 → 7.4–7.6, or with each half decoded from the rows loaded again
// 6.7–7.1 → 7.3–7.6: the chains' latency does not bound it, its operation count does. (That
// test's stage words may have been split, as multiScoresT2UAVXVNNI's were: with
// them rounded up to 32 bytes the first form took the decode's scores 8.03–8.06 → 7.85–8.11
// ns a row, three alternations, load ~12: within the noise, not kept.) Nor the straddling
// pairs' blend (VPBLENDVB: three uops, two of them on port 5, in LLVM's Alder Lake model; one
// uop fewer and none on the shuffle ports as two masks of the even and the odd bytes and an
// OR, the same codes): the kernel alone on 256 rows in L1 6.74–7.11 → 6.78–6.91 ns a row,
// attn's TestDecodeBreakdown scores 8.47–8.81 → 8.22–8.97 (three alternations each, load
// ~9–10): within the noise.
func t3GroupUVAVX2(last bool) string { return t3GroupAVX2x(last, true, true) }

// chainU writes code vector Yc (turbo3 codes 0..7) looked up as u = L + 88 (Y12) and its
// products with the four queries' widened digits (32 bytes a dword of digits: query h's dword
// k of the group at SI + 256·h + 32·k) added to the chains Y4..Y7; it clobbers Yc and Yt.
func chainU(b *strings.Builder, c, t, k int) { chainUX(b, c, t, k, [4]int{4, 5, 6, 7}, "u = L + 88") }

// chainUX is chainU with the chains in Y(ch[h]).
func chainUX(b *strings.Builder, c, t, k int, ch [4]int, what string) {
	w := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	w("VPSHUFB Y%d, Y12, Y%d // %s", c, c, what)
	for h := 0; h < 4; h++ {
		w("VPMADDUBSW %d(SI), Y%d, Y%d", 256*h+32*k, c, t)
		w("VPMADDWD Y8, Y%d, Y%d", t, t)
		w("VPADDD Y%d, Y%d, Y%d", t, ch[h], ch[h])
	}
}

// chainUV is chainU for the AVX-VNNI uniform-scale kernel (multiScoresT3UAVXVNNI,
// t3GroupUVAVX2): code vector Yc looked up as u = L + 128 (Y12, turbo3VNNIU8) and one VEX
// VPDPBUSD a query with the widened digits as its memory operand (query h's dword k of the
// group at SI + 256·h + 32·k) into the chains Y4..Y7, which start at zero and take −128·ΣQ
// after the row's last group (uniFini); it clobbers Yc.
func chainUV(b *strings.Builder, c, k int) {
	w := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	w("VPSHUFB Y%d, Y12, Y%d // u = L + 128", c, c)
	for h := 0; h < 4; h++ {
		w("%s", vexSI(opVPDPBUSD, 4+h, c, 256*h+32*k))
	}
}

// tq4UChains are turbo4's uniform kernel's chains (transposeRows takes Y4..Y7).
var tq4UChains = [4]int{9, 10, 11, 15}

// t3USecond are the registers of t3GroupUAVX2's second packed vectors, rows r and 4 + r, where
// t3GroupAVX2 stores them to the stage words and loads them back (its chains' Y8..Y11 and Y15
// are free here): attn's TestDecodeBreakdown scores (Zen 4, KVLAB_NO_AVX512, five alternations
// of test binaries, min ns a row) 9.63/9.64/9.72/9.69/9.67 → 9.34/9.64/9.44/9.67/9.52.
var t3USecond = [4]int{9, 10, 11, 15}

func t3GroupAVX2x(last, uni, vnni bool) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	w("VMOVDQU ·t3AVX2Blend(SB), Y15")
	for r, idx := range []string{"", "(R8*1)", "(R8*2)", "(R12*1)"} {
		if last {
			w("VMOVQ (CX)%s, X13", idx)
			w("VPINSRD $2, 8(CX)%s, X13, X13", idx)
			w("VMOVQ (BX)%s, X14", idx)
			w("VPINSRD $2, 8(BX)%s, X14, X14", idx)
			w("VINSERTI128 $1, X14, Y13, Y13")
		} else {
			w("VMOVDQU (CX)%s, X13", idx)
			w("VINSERTI128 $1, (BX)%s, Y13, Y13", idx)
		}
		w("VPSHUFB ·t3AVX2Ctl0(SB), Y13, Y%d", r)
		w("VPSRLVD ·t3AVX2Sh0(SB), Y%d, Y%d", r, r)
		w("VPAND ·t3AVX2Mask3(SB), Y%d, Y%d", r, r)
		w("VPSHUFB ·t3AVX2Ctl1(SB), Y13, Y13")
		w("VPSRLVD ·t3AVX2ShA(SB), Y13, Y14")
		w("VPSLLVD ·t3AVX2ShB(SB), Y13, Y13")
		w("VPBLENDVB Y15, Y13, Y14, Y13")
		if uni { // the second vectors wait in Y9, Y10, Y11 and Y15 (the blend mask's last use)
			w("VPAND ·t3AVX2Mask3(SB), Y13, Y%d", t3USecond[r])
			continue
		}
		w("VPAND ·t3AVX2Mask3(SB), Y13, Y13")
		w("VMOVDQU Y13, %d(R13)", 32*r)
	}
	for half := 0; half < 2; half++ {
		if uni && half == 1 {
			// Transpose Y9, Y10, Y11, Y15 as below: K0..K3 in Y11, Y15, Y13, Y9.
			w("VPUNPCKLDQ Y10, Y9, Y13")
			w("VPUNPCKHDQ Y10, Y9, Y14")
			w("VPUNPCKLDQ Y15, Y11, Y9")
			w("VPUNPCKHDQ Y15, Y11, Y10")
			w("VPUNPCKLQDQ Y9, Y13, Y11")
			w("VPUNPCKHQDQ Y9, Y13, Y15")
			w("VPUNPCKLQDQ Y10, Y14, Y13")
			w("VPUNPCKHQDQ Y10, Y14, Y9")
			for k, reg := range []int{11, 15, 13, 9} {
				if vnni {
					chainUV(&b, reg, 4+k)
					continue
				}
				chainU(&b, reg, 14, 4+k)
			}
			continue
		}
		if half == 1 {
			for r := 0; r < 4; r++ {
				w("VMOVDQU %d(R13), Y%d", 32*r, r)
			}
		}
		// Transpose the dwords within 128-bit lanes (transposeRows with two temporaries):
		// K0..K3 in Y2, Y3, Y13, Y0.
		w("VPUNPCKLDQ Y1, Y0, Y13")
		w("VPUNPCKHDQ Y1, Y0, Y14")
		w("VPUNPCKLDQ Y3, Y2, Y0")
		w("VPUNPCKHDQ Y3, Y2, Y1")
		w("VPUNPCKLQDQ Y0, Y13, Y2")
		w("VPUNPCKHQDQ Y0, Y13, Y3")
		w("VPUNPCKLQDQ Y1, Y14, Y13")
		w("VPUNPCKHQDQ Y1, Y14, Y0")
		if uni {
			for k, reg := range []int{2, 3, 13, 0} {
				if vnni {
					chainUV(&b, reg, 4*half+k)
					continue
				}
				chainU(&b, reg, 1, 4*half+k)
			}
			continue
		}
		if half == 0 {
			chainStart(&b, vnni)
		}
		for k, reg := range []int{2, 3, 13, 0} {
			chain(&b, vnni, reg, 1, 16*half+4*k)
		}
	}
	if uni {
		w("ADDQ $1024, SI")
		return b.String()
	}
	chainEnd(&b)
	return b.String()
}

const body = `
// func multiScores@(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)
TEXT ·multiScores@(SB), NOSPLIT, $0-80
	MOVQ rows+24(FP), DI
	MOVQ rb+32(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+48(FP), R9
	MOVQ m+40(FP), R10
	SHRQ $3, R10               // groups of eight rows
	JZ   @_done

@_group:
	MOVQ DI, CX                // rows 0..3
	LEAQ (CX)(R8*4), BX        // rows 4..7
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+16(FP), R11
	%TABLE%
	%INIT%
	MOVQ R8, AX                // prefetch pointer: 128 rows ahead, PFSTEP bytes per chunk of
	SHLQ $7, AX                // codes (at least eight rows' share of a chunk)
	ADDQ DI, AX

@_blk:
%PF%%GROUP%	ADDQ $%STEP%, CX
	ADDQ $%STEP%, BX
	DECQ R11
	JNZ  @_blk
%FINI%
	// CX and BX now point at the row scales: lane l from row l, times the levels' unit
	// (off[4]), into Y12.
	MOVQ stage+72(FP), SI
	%STAGE%
	MOVQ off+64(FP), AX
	VBROADCASTSS 16(AX), Y13
	VMULPS Y13, Y12, Y12

	// score = sum·(s·unit) + offset.
	VBROADCASTSS (AX), Y13
	VFMADD213PS Y13, Y12, Y8
	VBROADCASTSS 4(AX), Y13
	VFMADD213PS Y13, Y12, Y9
	VBROADCASTSS 8(AX), Y13
	VFMADD213PS Y13, Y12, Y10
	VBROADCASTSS 12(AX), Y13
	VFMADD213PS Y13, Y12, Y11

	// Transpose within 128-bit lanes: Y4+m holds row m (low lane) and row 4+m (high lane).
	VUNPCKLPS Y9, Y8, Y0
	VUNPCKHPS Y9, Y8, Y1
	VUNPCKLPS Y11, Y10, Y2
	VUNPCKHPS Y11, Y10, Y3
	VUNPCKLPD Y2, Y0, Y4
	VUNPCKHPD Y2, Y0, Y5
	VUNPCKLPD Y3, Y1, Y6
	VUNPCKHPD Y3, Y1, Y7
	MOVQ ostride+56(FP), AX
	LEAQ (AX)(AX*2), R11
	VMOVUPS X4, (R9)
	VMOVUPS X5, (R9)(AX*1)
	VMOVUPS X6, (R9)(AX*2)
	VMOVUPS X7, (R9)(R11*1)
	LEAQ (R9)(AX*4), BX
	VEXTRACTF128 $1, Y4, (BX)
	VEXTRACTF128 $1, Y5, (BX)(AX*1)
	VEXTRACTF128 $1, Y6, (BX)(AX*2)
	VEXTRACTF128 $1, Y7, (BX)(R11*1)
	LEAQ (BX)(AX*4), R9
	LEAQ (DI)(R8*8), DI
	DECQ R10
	JNZ  @_group

@_done:
	VZEROUPPER
	RET
`

// twoMin is the fewest groups of eight rows a call of an AVX-VNNI kernel takes in two streams
// (twoStreams): 1024 rows, so a paged cache's runs of a page (kvcache's PageCells, 64 rows)
// keep one, as gen_avx2int.go's block-format kernels.
const twoMin = 128

// twoPF is log₂ of the rows a stream's prefetches run ahead with two streams: 32 rows, 2.2 KiB
// of tq4's 68-byte rows at d 128 (the one stream's run 128 rows, 8.7 KiB, ahead).
const twoPF = 5

// twoStreams edits body (and its prefetch text pf) for the AVX-VNNI kernels: with four queries
// a row (ostride ≥ 16 bytes: a row's scores do not spill into the next row's) and at least
// twoMin groups, a group's rows 0..3 come from the first half of the call's rows and its rows
// 4..7 from the second, H = 4·groups rows on (R14 = H·rb; their scores H·ostride on, R15), a
// group stepping four rows, each stream's row loads ascending, where a group of eight adjacent
// rows read its rows 0, 4, 1, 5, 2, 6, 3, 7 (rows m and 4+m into one register); each prefetch
// is taken in both streams. The two streams run a copy of body's group loop of their own
// (@_two, after the RET); a call that keeps one stream (fewer than twoMin groups: a paged run;
// ostride under 16) runs body's loop as it was, instruction for instruction, after the four
// that pick (its three prefetches a block, no frame). Every row's score is the same as in one stream (a lane's work depends only on
// its row), bit for bit. gen_avx2int.go's twoStream takes the block formats' AVX-VNNI scores
// this way. tq4's and turbo4's AVX-VNNI kernels (TQ4AVXVNNI, T4AVXVNNI, T4UAVXVNNI) take it:
// on an Intel Xeon (Sapphire/Emerald Rapids class, KVM, 2 shared vCPUs, load 9–13;
// KVLAB_NO_AVX512), attn's TestDecodeBreakdown (131072 cells, 32 heads on 8, d 128, one thread;
// four alternations of test binaries, each run's min, ns a row), scores tq4 7.11–7.61 →
// 6.22–6.30, turbo4 6.85–6.97 → 5.72–6.23; tq4's values after them alike, turbo4's +0.3–0.7
// (8 alternations, unexplained, as q4_1's values after its two-stream scores: its whole decode
// still 0.4–0.9 less). Half the prefetches with two streams (two lines a block and stream, 80
// bytes on: no line a stream prefetched twice) no different beyond the noise. With the prefetches
// 128 rows ahead a stream (8.7 KiB) the gain was about half (tq4 6.49–7.52, turbo4 6.40–6.94),
// 64 rows between. Not kept: the same for turbo2's, turbo3's and q2k's AVX-VNNI kernels
// (T2UAVXVNNI, T3UAVXVNNI, Q2KAVXVNNI; 32, 64 or 128 rows ahead), whose scores took the same
// time streamed as with their rows in cache (KVLAB_TOUCH=k): turbo2 4.55–4.96 → 4.46–4.84,
// turbo3 7.48–8.54 → 7.20–8.06, q2k 6.86–7.14 → 6.84–8.03, within the noise.
func twoStreams(body, pf string) (string, string) {
	edit := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			panic("twoStreams: " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
	// The two streams' loop: body's group loop with its own labels and prefetches (%PF2%).
	i, j := strings.Index(body, "@_group:\n"), strings.Index(body, "\tJNZ  @_group\n")
	if i < 0 || j < 0 {
		panic("twoStreams: no group loop")
	}
	two := strings.NewReplacer("@_group", "@_two", "@_blk", "@_twoblk", "%PF%", "%PF2%").Replace(body[i : j+len("\tJNZ  @_group\n")])
	two = edit(two, "LEAQ (CX)(R8*4), BX        // rows 4..7", "LEAQ (CX)(R14*1), BX       // rows 4..7: H rows on")
	two = edit(two, "	MOVQ R8, AX                // prefetch pointer: 128 rows ahead, PFSTEP bytes per chunk of\n\tSHLQ $7, AX ",
		fmt.Sprintf("	MOVQ R8, AX                // prefetch pointer: %d rows ahead a stream, PFSTEP bytes per chunk of\n\tSHLQ $%d, AX ", 1<<twoPF, twoPF))
	two = edit(two, "LEAQ (R9)(AX*4), BX", "LEAQ (R9)(R15*1), BX")
	two = edit(two, "LEAQ (BX)(AX*4), R9\n\tLEAQ (DI)(R8*8), DI", "LEAQ (R9)(AX*4), R9\n\tLEAQ (DI)(R8*4), DI")
	body = edit(body, "\tJZ   @_done\n", fmt.Sprintf(`	JZ   @_done
	CMPQ ostride+56(FP), $16
	JLT  @_group
	CMPQ R10, $%d
	JGE  @_twoset              // two streams (twoStreams)
`, twoMin))
	body = edit(body, "\tVZEROUPPER\n\tRET\n", `	VZEROUPPER
	RET

	// Two streams (twoStreams): H = 4·groups rows, a group steps 4.
@_twoset:
	MOVQ R8, R14
	SHLQ $2, R14
	IMULQ R10, R14             // H·rb
	MOVQ ostride+56(FP), R15
	SHLQ $2, R15
	IMULQ R10, R15             // H·ostride

`+two+"\tJMP  @_done\n")
	var b strings.Builder
	for _, line := range strings.SplitAfter(pf, "\n") {
		b.WriteString(line)
		if strings.HasPrefix(line, "\tPREFETCHT0 ") {
			b.WriteString(strings.Replace(line, "(AX)", "(AX)(R14*1)", 1))
		}
	}
	return body, b.String()
}

// stage writes the row scales' staging: lane l of Y12 from the scale of row l at CX (rows
// 0..3) or BX (4..7), rb (R8) apart.
func stage(f32 bool) string {
	var b strings.Builder
	for r, idx := range []string{"", "(R8*1)", "(R8*2)", "(R12*1)"} {
		for half, p := range []string{"CX", "BX"} {
			l := 4*half + r
			if f32 {
				fmt.Fprintf(&b, "MOVL (%s)%s, AX\n\tMOVL AX, %d(SI)\n\t", p, idx, 4*l)
			} else {
				fmt.Fprintf(&b, "MOVWLZX (%s)%s, AX\n\tMOVW AX, %d(SI)\n\t", p, idx, 2*l)
			}
		}
	}
	if f32 {
		b.WriteString("VMOVUPS (SI), Y12")
	} else {
		b.WriteString("VCVTPH2PS (SI), Y12")
	}
	return b.String()
}

// q2kDigitsAVX2Text writes q2kDigitsAVX2: the four queries times a q2k group's channel scales,
// quantized per 32-channel block as vnniQuant quantizes them (the same float32 operations:
// q' = q·scale, m = max|q'|, s = m/127, inv = 127/m, Q = round(q'·inv) to nearest even; a
// block with s < 2⁻¹²⁶ all zero), the digits in t2AVX2Perm's order for the turbo2 AVX2
// kernels, the aux words they read (s, −90·ΣQ as int32s in words 8..11 for the plain
// flavour, −128·ΣQ for the AVX-VNNI one) and inv in words 4..7 (which they do not read); false where a q' is not
// finite.
//
// Two blocks go a pass, their eight (query, block) pairs side by side, so that the maxima's
// reductions, the divisions, the zero tests and the sums' reductions run eight pairs to a vector
// instead of one pair a chain (the reductions by a transpose: two unpack levels within the
// 128-bit lanes, one across them). The maxima are taken as integers on the magnitudes' bits:
// for finite magnitudes the same value as a float maximum, and a NaN's or an infinity's bits
// exceed the largest finite float's, so one compare of the eight maxima is the finiteness test.
// A zero block's s and inv are masked to zero (its digits q'·0 = 0, its ΣQ 0). For finite q'
// |q'·inv| ≤ m·RN(127/m) rounds to at most 127, so the digits need no clamp and the packs do
// not saturate. The first pass takes the maxima (q' formed once), the second forms q' again,
// times inv from aux, and the digits and their sums. Measured on AMD Zen 5 (thread CPU time, in cache, best of
// 300 interleaved runs of 1000 calls): 69 ns a group of d = 128, where one pair a chain took 147.
// Tried and not paying (Zen 4, KVLAB_NO_AVX512, TestQ2KDecodeSplit, min of each of five to six
// alternated runs): the first pass's maxima as |q|·|scale| (|q| formed once a
// q2kScoresGroupsAVX2 call into the scratch's second buffer, the scales' magnitudes 4 VANDPS a
// block where the products' took 16, VPMAXUD and one VPAND of the maxima so that ∞·0's NaN,
// sign bit set, still fails): the preparation alone 2.46–2.48 → 2.39–2.41 ns a cell in cache,
// but the scores 8.36–8.40 → 8.39–8.53 in cache, 8.45–8.66 → 8.53–8.68 streamed. On an Intel
// Xeon (Sapphire Rapids class, KVLAB_NO_AVX512, AVX-VNNI, load 20–26; two alternations of test
// binaries) the first pass's q' stored to a 1 KiB frame and multiplied by inv from there (16
// VMULPS and 4 VCVTPH2PS a block fewer, the same digits) took the preparation 2.34–2.35 →
// 2.31 ns a cell in cache and the scores 6.30–6.35 → 6.28–6.30: not kept.
func q2kDigitsAVX2Text() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	qidx := []string{"(SI)", "(SI)(R9*1)", "(SI)(R9*2)", "(SI)(R12*1)"}
	scales := func(blk int) {
		for k := 0; k < 4; k++ {
			w("VCVTPH2PS %d(R8), Y%d", 64*blk+16*k, 8+k)
		}
	}
	// reduce writes Y4..Y7 (one pair each) reduced by op within each 128-bit lane into
	// Ydst: lane h (and 4 + h) from Y(4+h); clobbers Y0..Y3.
	reduce := func(op string, dst int) {
		w("VPUNPCKLDQ Y5, Y4, Y0")
		w("VPUNPCKHDQ Y5, Y4, Y1")
		w("%s Y1, Y0, Y0", op)
		w("VPUNPCKLDQ Y7, Y6, Y1")
		w("VPUNPCKHDQ Y7, Y6, Y2")
		w("%s Y2, Y1, Y1", op)
		w("VPUNPCKLQDQ Y1, Y0, Y2")
		w("VPUNPCKHQDQ Y1, Y0, Y3")
		w("%s Y3, Y2, Y%d", op, dst)
	}
	b.WriteString(`
// func q2kDigitsAVX2(q *float32, d int, grp *byte, dig *byte, aux *uint32) bool
TEXT ·q2kDigitsAVX2(SB), NOSPLIT, $0-41
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), R9
	MOVQ grp+16(FP), R8
	MOVQ dig+24(FP), DI
	MOVQ aux+32(FP), DX
	MOVQ R9, R10
	SHRQ $6, R10               // pairs of blocks
	SHLQ $2, R9                // bytes between queries
	LEAQ (R9)(R9*2), R12
q2kd_blk:
	VPCMPEQD Y15, Y15, Y15
	VPSRLD $1, Y15, Y15        // the magnitude mask
	MOVL $0x7F7FFFFF, AX       // the largest finite float32
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
`)
	for blk := 0; blk < 2; blk++ {
		fmt.Fprintf(&b, "\t// block %d's maxima, query h in Y(4+h)\n", blk)
		scales(blk)
		for h := 0; h < 4; h++ {
			for k := 0; k < 4; k++ {
				w("VMULPS %d%s, Y%d, Y%d", 128*blk+32*k, qidx[h], 8+k, k)
			}
			for k := 0; k < 4; k++ {
				w("VANDPS Y15, Y%d, Y%d", k, k)
			}
			w("VPMAXSD Y1, Y0, Y0")
			w("VPMAXSD Y3, Y2, Y2")
			w("VPMAXSD Y2, Y0, Y%d", 4+h)
		}
		reduce("VPMAXSD", 12+blk)
	}
	b.WriteString(`	// m: lane 4·block + h
	VPERM2I128 $0x20, Y13, Y12, Y0
	VPERM2I128 $0x31, Y13, Y12, Y1
	VPMAXSD Y1, Y0, Y0
	VPCMPGTD Y14, Y0, Y1       // NaN or infinite
	VPTEST Y1, Y1
	JNZ  q2kd_fail
	MOVL $0x42FE0000, AX       // 127.0
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x00800000, AX       // 2⁻¹²⁶
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VDIVPS Y13, Y0, Y2         // s = m/127
	VDIVPS Y0, Y13, Y3         // inv = 127/m
	VCMPPS $0x11, Y12, Y2, Y4  // s < 2⁻¹²⁶ (or m = 0): a zero block
	VANDNPS Y2, Y4, Y2
	VANDNPS Y3, Y4, Y3
	VMOVUPS X2, (DX)           // s
	VEXTRACTF128 $1, Y2, 96(DX)
	VMOVUPS X3, 16(DX)         // inv
	VEXTRACTF128 $1, Y3, 112(DX)
`)
	for blk := 0; blk < 2; blk++ {
		fmt.Fprintf(&b, "\t// block %d's digits, query h's sum in Y(4+h)\n", blk)
		scales(blk)
		for h := 0; h < 4; h++ {
			w("VBROADCASTSS %d(DX), Y12", 96*blk+16+4*h)
			for k := 0; k < 4; k++ {
				w("VMULPS %d%s, Y%d, Y%d", 128*blk+32*k, qidx[h], 8+k, k)
			}
			for k := 0; k < 4; k++ {
				w("VMULPS Y12, Y%d, Y%d", k, k)
			}
			for k := 0; k < 4; k++ {
				w("VCVTPS2DQ Y%d, Y%d", k, k)
			}
			w("VPADDD Y1, Y0, Y13")
			w("VPADDD Y3, Y2, Y%d", 4+h)
			w("VPADDD Y13, Y%d, Y%d", 4+h, 4+h)
			w("VPACKSSDW Y1, Y0, Y0")
			w("VPACKSSDW Y3, Y2, Y2")
			w("VPACKSSWB Y2, Y0, Y0     // dwords: values 0-3, 8-11, 16-19, 24-27 | 4-7, 12-15, 20-23, 28-31")
			w("VPERMQ $0xD8, Y0, Y0       // 0-3, 8-11, 4-7, 12-15 | 16-19, 24-27, 20-23, 28-31")
			w("VPSHUFB ·q2kA2Shuf(SB), Y0, Y0 // t2AVX2Perm's order")
			w("VMOVDQU Y0, %d(DI)", 128*blk+32*h)
		}
		reduce("VPADDD", 14+blk)
	}
	b.WriteString(`	VPERM2I128 $0x20, Y15, Y14, Y0
	VPERM2I128 $0x31, Y15, Y14, Y1
	VPADDD Y1, Y0, Y0          // ΣQ
	VCVTDQ2PS Y0, Y2
	VMULPS ·t2AVX2M90(SB), Y2, Y2 // −90·ΣQ, exact
	VCVTPS2DQ Y2, Y2           // as int32 (multiScoresQ2KAVX2I's offset)
	VPSLLD $7, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPSUBD Y0, Y1, Y0          // −128·ΣQ
	VMOVDQU X0, 48(DX)
	VEXTRACTI128 $1, Y0, 144(DX)
	VMOVDQU X2, 32(DX)
	VEXTRACTI128 $1, Y2, 128(DX)
	ADDQ $256, SI
	ADDQ $128, R8
	ADDQ $256, DI
	ADDQ $192, DX
	DECQ R10
	JNZ  q2kd_blk
	MOVB $1, ret+40(FP)
	VZEROUPPER
	RET
q2kd_fail:
	MOVB $0, ret+40(FP)
	VZEROUPPER
	RET
`)
	return b.String()
}

// q2kDigitsTables writes q2kDigitsAVX2's byte shuffle: within each 16-byte half, position
// 4t + b takes value 4b + t (t2AVX2Perm), from the values' dword groups in the order the packs
// and VPERMQ $0xD8 leave them (0, 2, 1, 3 of the half's four).
func q2kDigitsTables() string {
	var b strings.Builder
	var sh [32]byte
	pos := [4]int{0, 2, 1, 3}
	for i := range sh {
		p := i % 16
		sh[i] = byte(4*pos[p%4] + p/4)
	}
	for i := 0; i < 32; i += 8 {
		var x uint64
		for k := 7; k >= 0; k-- {
			x = x<<8 | uint64(sh[i+k])
		}
		fmt.Fprintf(&b, "DATA ·q2kA2Shuf+%d(SB)/8, $0x%016x\n", i, x)
	}
	b.WriteString("GLOBL ·q2kA2Shuf(SB), RODATA|NOPTR, $32\n")
	return b.String()
}

func main() {
	var out bytes.Buffer
	out.WriteString(`// Code generated by gen_tq4avx2.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// The AVX2 integer scores kernels of tq4 and turbo4: see gen_tq4avx2.go for the work and
// multi_tq4avx2_amd64.go for the contract.
`)
	out.WriteString(t3Tables())
	out.WriteString(t3NTables())
	const pf4 = "\tPREFETCHT0 (AX)\n\tPREFETCHT0 64(AX)\n\tPREFETCHT0 128(AX)\n\tADDQ $160, AX\n" // ≥ 8·(16 + 4)
	const pf3 = "\tPREFETCHT0 (AX)\n\tPREFETCHT0 64(AX)\n\tADDQ $112, AX\n"                       // ≥ 8·(12 + 2)
	type kind struct {
		name string
		f32  bool
		vnni bool
		t3   bool
	}
	kinds := []kind{
		{"TQ4AVX2I", true, false, false},
		{"T4AVX2I", false, false, false},
		{"TQ4AVXVNNI", true, true, false},
		{"T4AVXVNNI", false, true, false},
		{"T3AVX2I", false, false, true},
		{"T3AVXVNNI", false, true, true},
		{"T3UAVX2I", false, false, true},
		{"T3UAVXVNNI", false, true, true},
		{"T2UAVX2I", false, false, false},
		{"T2UAVXVNNI", false, true, false},
		{"T4UAVX2I", false, false, false},
		{"T4UAVXVNNI", false, true, false},
		{"T2AVX2I", false, false, false},
		{"T2AVXVNNI", false, true, false},
		{"Q2KAVX2I", false, false, false},
		{"Q2KAVXVNNI", false, true, false},
	}
	for _, k := range kinds {
		table, grp, pf, step := "VBROADCASTI128 ·tq4AVX2Ints(SB), Y12", group(k.vnni), pf4, "16"
		if k.vnni {
			table = "VBROADCASTI128 ·tq4VNNIU8(SB), Y12"
		}
		if k.t3 {
			table, pf, step = "VBROADCASTI128 ·t3AVX2Ints(SB), Y12", pf3, "12" // grp: below
			if k.vnni {
				table = "VBROADCASTI128 ·turbo3VNNIU8(SB), Y12"
			}
		}
		stg := stage(k.f32)
		if strings.HasPrefix(k.name, "T2") || strings.HasPrefix(k.name, "Q2K") {
			table, grp = "VBROADCASTI128 ·t2AVX2Ints(SB), Y12", t2Chunk(k.vnni)
			if k.vnni {
				table = "VBROADCASTI128 ·turbo2VNNIU8(SB), Y12\n\tVBROADCASTI128 ·t2VNNIU8Hi(SB), Y15"
			}
		}
		if strings.HasPrefix(k.name, "Q2K") { // q2k's cells have no row scale: turbo2's with 1
			stg = "MOVL $0x3F800000, AX\n\tVMOVD AX, X12\n\tVPBROADCASTD X12, Y12"
		}
		init := "VPXOR Y8, Y8, Y8\n\tVPXOR Y9, Y9, Y9\n\tVPXOR Y10, Y10, Y10\n\tVPXOR Y11, Y11, Y11"
		fini := ""
		// The kernels that store vectors to the stage words (R13) round it up to 32 bytes: the
		// caller's words are only 4-byte aligned, and a 32-byte store split across a 4 KiB page
		// does not forward to the load after it (a split across a 64-byte line within a page
		// costs nothing measurable here). With the stage put across a page on purpose, rows in
		// cache, an Intel Xeon's AVX2 path took T2AVX2I 5.8 -> 7.3 ns a row, T2UAVX2I 5.4 -> 7.2,
		// Q2KAVX2I 5.4 -> 6.8, T3AVX2I 11.5 -> 14.6, T3AVXVNNI 7.5 -> 13.0 (T2UAVXVNNI before its
		// fix 4.1 -> 8.1); at a line split within a page all within 2 %.
		if k.name == "T3AVX2I" { // the last group apart (t3GroupAVX2)
			grp = t3GroupAVX2(false)
			init += "\n\tMOVQ stage+72(FP), R13\n\tADDQ $31, R13\n\tANDQ $-32, R13 // 32-byte aligned (stage: 160 bytes or more)\n\tDECQ R11\n\tJZ   " + k.name + "_last"
			fini = k.name + "_last:\n" + t3GroupAVX2(true) + "\tADDQ $12, CX\n\tADDQ $12, BX\n"
		}
		if k.name == "T3AVXVNNI" { // likewise (t3GroupVAVX2)
			grp = t3GroupVAVX2(false)
			init += "\n\tMOVQ stage+72(FP), R13\n\tADDQ $31, R13\n\tANDQ $-32, R13 // 32-byte aligned (stage: 160 bytes or more)\n\tDECQ R11\n\tJZ   " + k.name + "_last"
			fini = k.name + "_last:\n" + t3GroupVAVX2(true) + "\tADDQ $12, CX\n\tADDQ $12, BX\n"
		}
		if k.name == "T3UAVX2I" { // the whole row's chains, the last group apart (t3GroupUAVX2)
			table, grp = "VBROADCASTI128 ·t3AVX2U(SB), Y12", t3GroupUAVX2(false)
			init = "VPXOR Y4, Y4, Y4\n\tVPXOR Y5, Y5, Y5\n\tVPXOR Y6, Y6, Y6\n\tVPXOR Y7, Y7, Y7\n\tVMOVDQU ·avx2Ones16(SB), Y8" +
				"\n\tMOVQ stage+72(FP), R13\n\tDECQ R11\n\tJZ   " + k.name + "_last"
			fini = k.name + "_last:\n" + t3GroupUAVX2(true) + "\tADDQ $12, CX\n\tADDQ $12, BX\n" + t3UniFini
		}
		if k.name == "T3UAVXVNNI" { // T3UAVX2I's structure with VPDPBUSD (t3GroupUVAVX2)
			table, grp = "VBROADCASTI128 ·turbo3VNNIU8(SB), Y12", t3GroupUVAVX2(false)
			init = "VPXOR Y4, Y4, Y4\n\tVPXOR Y5, Y5, Y5\n\tVPXOR Y6, Y6, Y6\n\tVPXOR Y7, Y7, Y7" +
				"\n\tDECQ R11\n\tJZ   " + k.name + "_last"
			fini = k.name + "_last:\n" + t3GroupUVAVX2(true) + "\tADDQ $12, CX\n\tADDQ $12, BX\n" + uniFini(4, "Σ (L + 128)·Q − 128·ΣQ = Σ Q·L")
		}
		if k.name == "TQ4AVX2I" || k.name == "T4AVX2I" { // rows loaded a group ahead (groupPipe)
			grp = groupPipe(false)
			var lb strings.Builder
			for r := 0; r < 4; r++ {
				loadRow(&lb, r, 0)
			}
			init += "\n" + strings.TrimSuffix(lb.String(), "\n") + "\n\tDECQ R11\n\tJZ   " + k.name + "_last"
			fini = k.name + "_last:\n" + groupPipe(true) + "\tADDQ $16, CX\n\tADDQ $16, BX\n"
		}
		if k.name == "T4UAVX2I" { // groupPipe's loads, the whole row's chains
			grp = groupPipeU(false)
			table = "VBROADCASTI128 ·tq4AVX2U(SB), Y12"
			var lb strings.Builder
			for r := 0; r < 4; r++ {
				loadRow(&lb, r, 0)
			}
			init = "VPXOR Y9, Y9, Y9\n\tVPXOR Y10, Y10, Y10\n\tVPXOR Y11, Y11, Y11\n\tVPXOR Y15, Y15, Y15\n\tVMOVDQU ·avx2Ones16(SB), Y8\n" +
				strings.TrimSuffix(lb.String(), "\n") + "\n\tDECQ R11\n\tJZ   " + k.name + "_last"
			fini = k.name + "_last:\n" + groupPipeU(true) + "\tADDQ $16, CX\n\tADDQ $16, BX\n" + uniFiniX(tq4UChains, "Σ u·Q − 104·ΣQ = Σ Q·L")
		}
		if k.name == "T2AVX2I" { // the second group's codes in the stage words (t2ChunkAVX2)
			table, grp = "VBROADCASTI128 ·q2kAVX2U(SB), Y12", t2ChunkAVX2()
			init += "\n\tMOVQ stage+72(FP), R13\n\tADDQ $31, R13\n\tANDQ $-32, R13 // 32-byte aligned (stage: 96 bytes or more)"
		}
		if k.name == "T2UAVX2I" { // the whole row's chains in Y8..Y11 (t2ChunkUAVX2)
			table, grp = "VBROADCASTI128 ·q2kAVX2U(SB), Y12", t2ChunkUAVX2()
			init += "\n\tMOVQ stage+72(FP), R13\n\tADDQ $31, R13\n\tANDQ $-32, R13 // 32-byte aligned (stage: 96 bytes or more)"
			fini = uniFini(8, "Σ 9·S − 90·ΣQ = Σ Q·L")
		}
		if k.name == "T2UAVXVNNI" { // the whole row's chains in Y8..Y11 (t2ChunkUV)
			table, grp = "VBROADCASTI128 ·turbo2VNNIU8(SB), Y12", t2ChunkUV()
			init = ""
			for c := 4; c < 12; c++ {
				init += fmt.Sprintf("VPXOR Y%d, Y%d, Y%d\n\t", c, c, c)
			}
			init += "VBROADCASTI128 ·t2VNNIU8Hi(SB), Y15\n\tMOVQ stage+72(FP), R13\n\tADDQ $31, R13\n\tANDQ $-32, R13 // 32-byte aligned (stage: 160 bytes or more)"
			fini = "\tVPADDD Y8, Y4, Y4\n\tVPADDD Y9, Y5, Y5\n\tVPADDD Y10, Y6, Y6\n\tVPADDD Y11, Y7, Y7\n" +
				uniFini(4, "Σ (L + 128)·Q − 128·ΣQ = Σ Q·L")
		}
		if k.name == "T4UAVXVNNI" { // the whole row's chains, two a query (groupUV)
			table, grp = "VBROADCASTI128 ·tq4VNNIU8(SB), Y12", groupUV()
			init = ""
			for c := 4; c < 12; c++ {
				init += fmt.Sprintf("VPXOR Y%d, Y%d, Y%d\n\t", c, c, c)
			}
			init = strings.TrimSuffix(init, "\n\t")
			fini = "\tVPADDD Y8, Y4, Y4\n\tVPADDD Y9, Y5, Y5\n\tVPADDD Y10, Y6, Y6\n\tVPADDD Y11, Y7, Y7\n" +
				uniFini(4, "Σ (L + 128)·Q − 128·ΣQ = Σ Q·L")
		}
		if k.name == "Q2KAVX2I" { // the second group's codes in the stage words (q2kChunkAVX2)
			table, grp = "VBROADCASTI128 ·q2kAVX2U(SB), Y12", q2kChunkAVX2()
			init += "\n\tMOVQ stage+72(FP), R13\n\tADDQ $31, R13\n\tANDQ $-32, R13 // 32-byte aligned (stage: 96 bytes or more)"
		}
		bd, pf2 := body, ""
		if k.vnni && (strings.HasPrefix(k.name, "TQ4") || strings.HasPrefix(k.name, "T4")) {
			bd, pf2 = twoStreams(bd, pf)
		}
		r := strings.NewReplacer("@", k.name, "%TABLE%", table, "%GROUP%", grp, "%STAGE%", stg, "%PF%", pf, "%PF2%", pf2,
			"%STEP%", step, "%INIT%", init, "%FINI%", fini)
		out.WriteString(r.Replace(bd))
	}
	out.WriteString(t2WidenText)
	out.WriteString(uniDigitsText)
	out.WriteString(q2kDigitsTables())
	out.WriteString(q2kDigitsAVX2Text())
	if err := os.WriteFile("multi_tq4avx2_amd64.s", out.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// t3UniFini ends multiScoresT3UAVX2I's rows: per query h the chain plus −88·ΣQ_h (the int32s
// after the widened digits, at SI once the groups are done) is Σ Q·L, exact in int32 and
// converted exactly (|Σ Q·L| ≤ d·93·88 < 2²⁴ for d ≤ 2048), then times the query's scale s_h
// (off[8+h]) into Y8..Y11, which the body's end multiplies by the row scale times the unit and
// adds the offset to, as the AVX-512 uniform kernels do (gen_tq4vnni.go, bodyU).
var t3UniFini = uniFini(4, "Σ u·Q − 88·ΣQ = Σ Q·L")

// uniFini is t3UniFini for chains Y(c)..Y(c+3): turbo2's uniform kernel has them in Y8..Y11
// (9·S summed over the groups, plus −90·ΣQ_h: Σ Q·L, |Σ Q·L| ≤ d·127·90 < 2²⁴ for d ≤ 1024).
func uniFini(c int, what string) string { return uniFiniX([4]int{c, c + 1, c + 2, c + 3}, what) }

// uniFiniX is uniFini with the chains in Y(ch[h]), converted in order into Y8..Y11.
func uniFiniX(ch [4]int, what string) string {
	var b strings.Builder
	b.WriteString("\tMOVQ off+64(FP), AX\n")
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, "\tVPADDD %d(SI), Y%d, Y%d\n", 32*h, ch[h], ch[h])
	}
	b.WriteString("\t// " + what + "\n")
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, "\tVCVTDQ2PS Y%d, Y%d\n", ch[h], 8+h)
	}
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, "\tVBROADCASTSS %d(AX), Y13\n\tVMULPS Y13, Y%d, Y%d\n", 32+4*h, 8+h, 8+h)
	}
	return b.String()
}

// uniDigitsText writes uniDigitsAVX2, vnniDigitsUniQ and uniWiden at once for the uniform-scale
// AVX2 kernels: per query the maximum magnitude over its nb blocks (as integers on the
// magnitudes' bits, as avx2Digits takes it; a NaN's or an infinity's bits exceed the largest
// finite float's, so one compare tests finiteness), s = m/qmax and inv = qmax/m by the same
// float32 divisions (both 0 where s is below 2⁻¹²⁶, which makes every digit 0), the digits
// Q = RN(q·inv) clamped to ±qmax (vnniQuantUniQ's float32 operations), written to dig in
// vnniDigits' layout and each dword 8 times over to wide (1024 bytes a block: query h's dword k
// at 256·h + 32·k), the block scale words aux[24·b + h] = s (what vnniGridDot reads; the
// other aux words are not written), off[8+h] = s, off[12+h] = −128·ΣQ (int32 bits), and
// lmid·ΣQ eight times at wide + 1024·nb + 32·h. It returns false, having written part of
// them, where a value is not finite. The Go functions took ~12 µs a call of four queries of
// d 128 on Zen 4, ~0.7 ns a row of attention's 16384-row chunks.
const uniDigitsText = `
// func uniDigitsAVX2(dig *byte, aux *uint32, wide *byte, q *float32, d, nb int, off *float32, qmax, lmid int) bool
TEXT ·uniDigitsAVX2(SB), NOSPLIT, $0-73
	MOVQ dig+0(FP), DI
	MOVQ aux+8(FP), DX
	MOVQ wide+16(FP), R8
	MOVQ q+24(FP), SI
	MOVQ nb+40(FP), R9
	MOVQ off+48(FP), R11
	MOVQ qmax+56(FP), AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15      // qmax
	VPXOR Y14, Y14, Y14
	VPSUBD Y15, Y14, Y14       // −qmax
	VCVTDQ2PS X15, X13         // qmax as float32 (exact)
	MOVL $0x7FFFFFFF, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12      // |x|
	MOVL $0x7F7FFFFF, AX       // the largest finite magnitude
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL $0x00800000, AX       // 2⁻¹²⁶, the smallest normal float32
	VMOVD AX, X10
	XORQ R10, R10              // query
ud_q:
	// the maximum magnitude over the query's blocks
	MOVQ SI, BX
	MOVQ R9, CX
	VPXOR Y4, Y4, Y4
ud_max:
	VPAND (BX), Y12, Y0
	VPAND 32(BX), Y12, Y1
	VPAND 64(BX), Y12, Y2
	VPAND 96(BX), Y12, Y3
	VPMAXSD Y1, Y0, Y0
	VPMAXSD Y3, Y2, Y2
	VPMAXSD Y2, Y0, Y0
	VPMAXSD Y0, Y4, Y4
	ADDQ $128, BX
	DECQ CX
	JNZ  ud_max
	VPCMPGTD Y11, Y4, Y5       // a NaN or an infinity
	VPTEST Y5, Y5
	JNZ  ud_fail
	VEXTRACTI128 $1, Y4, X5
	VPMAXSD X5, X4, X4
	VPSHUFD $0x4E, X4, X5
	VPMAXSD X5, X4, X4
	VPSHUFD $0xB1, X4, X5
	VPMAXSD X5, X4, X4         // m in every lane
	VDIVSS X13, X4, X6         // s = m / qmax
	VDIVSS X4, X13, X5         // inv = qmax / m
	VUCOMISS X10, X6
	JAE  ud_scaled             // s is a normal number
	VXORPS X6, X6, X6          // s and inv 0: every digit 0
	VXORPS X5, X5, X5
ud_scaled:
	VMOVSS X6, 32(R11)(R10*4)  // off[8+h] = s
	VBROADCASTSS X5, Y5
	VPXOR Y8, Y8, Y8           // ΣQ
	MOVQ SI, BX
	MOVQ R10, R13
	SHLQ $5, R13
	ADDQ DI, R13               // query h's digits in block 0
	MOVQ R10, R12
	SHLQ $8, R12
	ADDQ R8, R12               // query h's widened digits in block 0
	MOVQ R10, R14
	SHLQ $2, R14
	ADDQ DX, R14               // aux word h of block 0
	MOVQ R9, CX
ud_blk:
	VMULPS (BX), Y5, Y0
	VMULPS 32(BX), Y5, Y1
	VMULPS 64(BX), Y5, Y2
	VMULPS 96(BX), Y5, Y3
	VCVTPS2DQ Y0, Y0           // round to nearest even
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPMINSD Y15, Y0, Y0
	VPMINSD Y15, Y1, Y1
	VPMINSD Y15, Y2, Y2
	VPMINSD Y15, Y3, Y3
	VPMAXSD Y14, Y0, Y0
	VPMAXSD Y14, Y1, Y1
	VPMAXSD Y14, Y2, Y2
	VPMAXSD Y14, Y3, Y3
	VPADDD Y1, Y0, Y4
	VPADDD Y3, Y2, Y7
	VPADDD Y7, Y4, Y4
	VPADDD Y4, Y8, Y8
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VMOVDQU ·avx2PackPerm(SB), Y1
	VPERMD Y0, Y1, Y0
	VMOVDQU Y0, (R13)
	VMOVSS X6, (R14)           // the block's scale word h
	VPSHUFD $0x00, Y0, Y1      // dword k of each lane to all of it: k and 4 + k
	VPSHUFD $0x55, Y0, Y2
	VPSHUFD $0xAA, Y0, Y3
	VPSHUFD $0xFF, Y0, Y4
	VPERM2I128 $0x00, Y1, Y1, Y7
	VMOVDQU Y7, (R12)
	VPERM2I128 $0x11, Y1, Y1, Y7
	VMOVDQU Y7, 128(R12)
	VPERM2I128 $0x00, Y2, Y2, Y7
	VMOVDQU Y7, 32(R12)
	VPERM2I128 $0x11, Y2, Y2, Y7
	VMOVDQU Y7, 160(R12)
	VPERM2I128 $0x00, Y3, Y3, Y7
	VMOVDQU Y7, 64(R12)
	VPERM2I128 $0x11, Y3, Y3, Y7
	VMOVDQU Y7, 192(R12)
	VPERM2I128 $0x00, Y4, Y4, Y7
	VMOVDQU Y7, 96(R12)
	VPERM2I128 $0x11, Y4, Y4, Y7
	VMOVDQU Y7, 224(R12)
	ADDQ $128, BX
	ADDQ $128, R13
	ADDQ $1024, R12
	ADDQ $96, R14
	DECQ CX
	JNZ  ud_blk
	VEXTRACTI128 $1, Y8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0x4E, X8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0xB1, X8, X9
	VPADDD X9, X8, X8          // ΣQ in every lane
	VMOVD X8, AX
	MOVL AX, CX
	IMULL $-128, CX
	MOVL CX, 48(R11)(R10*4)    // off[12+h] = −128·ΣQ
	MOVQ lmid+64(FP), CX
	IMULL AX, CX
	VMOVD CX, X9
	VPBROADCASTD X9, Y9
	MOVQ R9, AX
	SHLQ $10, AX
	ADDQ R8, AX
	MOVQ R10, CX
	SHLQ $5, CX
	VMOVDQU Y9, (AX)(CX*1)     // lmid·ΣQ
	ADDQ d+32(FP), SI          // the next query: d floats on
	ADDQ d+32(FP), SI
	ADDQ d+32(FP), SI
	ADDQ d+32(FP), SI
	INCQ R10
	CMPQ R10, $4
	JNE  ud_q
	MOVB $1, ret+72(FP)
	VZEROUPPER
	RET
ud_fail:
	MOVB $0, ret+72(FP)
	VZEROUPPER
	RET
`

// t2WidenText writes t2AVX2Widen: per block, each dword of the digits broadcast to 32 bytes,
// then −90·ΣQ of each query (float32(ΣQ), aux word 20 + h, times −90: exact) eight times, as
// int32s.
const t2WidenText = `
// func t2AVX2Widen(dig *byte, aux *uint32, dst *byte, nb int)
TEXT ·t2AVX2Widen(SB), NOSPLIT, $0-32
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ nb+24(FP), CX
	TESTQ CX, CX
	JZ   t2w_done
t2w_blk:
	MOVQ $8, BX
t2w_loop:
	VPBROADCASTD (SI), Y0
	VPBROADCASTD 4(SI), Y1
	VPBROADCASTD 8(SI), Y2
	VPBROADCASTD 12(SI), Y3
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ $16, SI
	ADDQ $128, DI
	DECQ BX
	JNZ  t2w_loop
	VBROADCASTSS 80(DX), Y0
	VBROADCASTSS 84(DX), Y1
	VBROADCASTSS 88(DX), Y2
	VBROADCASTSS 92(DX), Y3
	VMULPS ·t2AVX2M90(SB), Y0, Y0
	VMULPS ·t2AVX2M90(SB), Y1, Y1
	VMULPS ·t2AVX2M90(SB), Y2, Y2
	VMULPS ·t2AVX2M90(SB), Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $96, DX
	DECQ CX
	JNZ  t2w_blk
t2w_done:
	VZEROUPPER
	RET
`
