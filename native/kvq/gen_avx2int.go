//go:build ignore

// gen_avx2int writes multi_avx2int_amd64.s: the AVX2 integer scores kernels of q4_0, q4_1,
// q5_0, q5_1, q8_0 and iq4_nl for CPUs with AVX2 but not AVX-512, each also in an AVX-VNNI
// form, and the query preparation they take (contract and bound in multi_avx2int_amd64.go).
// Run with `go generate ./native/kvq`.
//
// They port the AVX-512 VNNI kernels' design (multi_vnni_amd64.s) to sixteen 256-bit
// registers. Eight rows go at a time, one per 32-bit lane, so a score needs no horizontal sum:
// per 32-value block the eight rows' payloads are loaded two to a vector (rows m and 4+m in its
// two 128-bit lanes) and their dwords transposed within the lanes, so that vector k holds
// payload dword k of row l in lane l. The query's digits come pre-broadcast (avx2Expand): per
// block, query and payload dword one 32-byte vector, so every multiply takes its query operand
// from memory (a micro-fused load) and the kernels need no register for it.
//
// Two integer routes, both exact in int32 and giving the integer the VNNI kernels form:
//
//   - u8 (q4_0, q4_1: codes 0..15; q5_0, q5_1: 0..31, u8Block). VPMADDUBSW multiplies a
//     lane's four unsigned codes by the four signed query bytes and adds pairs into int16:
//     |pair| ≤ 2·15·127 = 3810, so no saturation, and the eight products of a block summed
//     with VPADDW stay ≤ 30480 < 2¹⁵. VPMADDWD by ones folds the int16 sum into the lane's
//     int32, to which q4_0 adds −8·ΣQ.
//   - s16 (q8_0: signed bytes; iq4_nl: its levels, −127..113, looked up with VPSHUFB). The
//     codes' even and odd bytes are sign-extended to int16 in place (VPSLLW/VPSRAW), each
//     multiplied by the query's even or odd values as int16 (VPMADDWD; q8_0's Q = 2⁸·hi + lo,
//     |Q| ≤ 32639) and added into int32: |Σ Q·c| ≤ 32·128·32639 < 2³¹. VPMADDUBSW would
//     saturate here (2·255·128 for offset codes).
//   - high-byte (iq4_nl, and q8_0 at one-byte query digits: hbBlock): the s16 route with the
//     codes as 2⁸·c in their int16 and software-pipelined row loads, plain AVX2 only.
//
// q4_0's and q4_1's plain kernels pipeline their row loads too (u8PipeBlock).
//
// The AVX-VNNI forms (vnni) replace each product and its add by VPDPBUSD or VPDPWSSD, emitted
// as VEX bytes (vexSI, gen_vexlib.go): Go's assembler encodes both mnemonics as EVEX, the AVX-512 VL form,
// which faults on AVX2-only CPUs. The same forms with the EVEX mnemonics, otherwise
// instruction for instruction, make multi_avx2int_evex_amd64.s (build tag kvlabevex): AVX-512
// CPUs without AVX-VNNI (AMD Zen 4, which faults on the VEX forms) run them in the kvlabevex
// tests (multi_avx2int_evex_amd64_test.go) against the AVX-512 VNNI kernels.
//
// Each block's integer is then converted and scaled with the float operations of the VNNI
// kernels in their order (s·d once, then one fused multiply-add; q4_1: d·Σ, m·ΣQ fused in,
// times s fused into the score), so every score is theirs bit for bit.
//
// Ports: per eight rows and block the u8 route issues 36 multiplies (VPMADDUBSW, VPMADDWD)
// and 12 float operations, the s16 one 64 multiplies and 12: on Intel's client cores (Golden
// Cove, Raptor Cove) all on ports 0 and 1, two a cycle, with the transposes' 12 shuffles on
// port 5 and the adds and masks on 0, 1 and 5, so the multiplies bound the kernels there. The
// memory operands are base plus displacement, never indexed, so each multiply stays one fused
// µop on Intel. The AVX-VNNI forms drop the u8 route's VPADDW chains and VPMADDWD and the s16
// route's VPADDDs, not the multiplies.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// kern is one format's kernel.
type kern struct {
	name   string // avx2Scores<name>
	doc    string
	block  int  // bytes of one 32-value block
	hdr    int  // header bytes before the payload
	min    bool // a second f16 (the minimum m) after the scale
	s16    bool // the s16 route (else u8)
	wide   bool // a 32-byte payload (q8_0), else 16 bytes of nibbles
	iq4    bool // nibbles are indices into iq4_nl's levels
	offset int  // aux word offset (bytes) of the int32 added per query, 0 for none
	q5     bool // a fifth bit per value in the dword qh at qh
	qh     int  // qh's offset in the block
	// stride is the stage's bytes a block where not 16 (the scales) or 32 (scales, minima):
	// q5_1 keeps its minima as float32 at 32 too.
	stride int
	hb     bool // the high-byte route (hbBlock): plain AVX2 only, one-byte query digits
}

var kerns = []kern{
	{name: "Q40", doc: "q4_0: codes c − 8, the −8·ΣQ of aux added to each block's int32 sum.", block: 18, hdr: 2, offset: 16},
	{name: "Q41", doc: "q4_1: codes c, d·Σ Q·c + m·ΣQ, times s, added to the score.", block: 20, hdr: 4, min: true},
	{name: "Q80", doc: "q8_0: signed codes, the s16 route over the 32-byte payload.", block: 34, hdr: 2, s16: true, wide: true},
	{name: "Q50", doc: "q5_0: codes c − 16 (the fifth bit from qh), the −16·ΣQ of aux added.", block: 22, hdr: 6, offset: 32, q5: true, qh: 2},
	{name: "Q51", doc: "q5_1: codes c (the fifth bit from qh), d·Σ Q·c + m·ΣQ, times s.", block: 24, hdr: 8, min: true, q5: true, qh: 4, stride: 64},
	{name: "IQ4NL", doc: "iq4_nl: its levels (VPSHUFB), the s16 route.", block: 18, hdr: 2, s16: true, iq4: true},
	{name: "Q80One", doc: "q8_0 at one-byte query digits: signed codes, the high-byte route.", block: 34, hdr: 2, s16: true, wide: true, hb: true},
	{name: "IQ4NLHB", doc: "iq4_nl: its levels (VPSHUFB), the high-byte route.", block: 18, hdr: 2, s16: true, iq4: true, hb: true},
}

var out bytes.Buffer

// vnni selects the AVX-VNNI forms of the kernels being written: VPDPBUSD and VPDPWSSD in place
// of VPMADDUBSW and VPMADDWD with their adds.
var vnni bool

// evex writes the AVX-VNNI forms' VPDPBUSD and VPDPWSSD as Go's assembler encodes them, EVEX
// (AVX-512 VNNI and VL): the kvlabevex build's twins (multi_avx2int_evex_amd64.s), the same
// kernels for tests and timings on AVX-512 CPUs without AVX-VNNI (AMD Zen 4). s16Q8 keeps
// q8_0's s16 route in the AVX-VNNI form, the twins' baseline (avx2ScoresQ80S16EVEX).
var evex, s16Q8 bool

// base writes the plain kernels as they were before the change under measurement
// (avx2Scores*Base in the kvlabevex build; TestAVX2IntBaseSpeed times the two interleaved):
// now one stream of rows (not twoStream), without q8_0's former PREFETCHT1 (q8T1), and q5_0's
// and q5_1's fifth bits by q5Fifth (not q5SwapFifth).
var base bool

// kname and kstride are the name and the stage's bytes a block of the kernel being written.
var (
	kname   string
	kstride int
)

// q8T1 (8192, no longer a constant) was how far beyond its PREFETCHT0 (PFGROUPS2) q8_0's plain kernels prefetched each line
// into L2 (PREFETCHT1) in one stream, in bytes: none emits it since the plain kernels read two
// streams (twoStream), which stream faster without it; the figures stay for the record. 8 KiB, 16.5 KiB ahead of the rows in all at 128 values, which the
// hardware prefetchers, stopping at 4 KiB pages, do not reach. Measured on AMD Zen 4, plain
// AVX2 (TestAVX2IntBaseSpeed, KVLAB_SPEED_Q8, kvlabevex build: thread CPU, interleaved with the
// kernels without it, 25 rounds, load 7, ns a row of 128 values and 4 queries streamed past
// the caches, min/median): 12.20/12.66 → 10.65/11.04 and 13.71/15.24 → 11.88/12.71; 4 KiB and
// 16 KiB beyond ~1.0–1.5 less; in cache the same. The other formats, nearer their arithmetic
// bound streamed, measured no better with it (q4_0, q4_1 within the noise; iq4_nl, q5_0, q5_1
// 0.3–1 ns a row slower). On an Intel Xeon (Sapphire/Emerald Rapids class, 2 shared vCPUs, load
// 7–11; KVLAB_NO_AVX512, so the AVX-VNNI kernels; attn's TestDecodeBreakdown, four alternations,
// scores min ns a row) no other distance paid for the AVX-VNNI kernels: q8_0 11.90–12.77 with
// this one, 12.00–13.13 with PREFETCHT1 32 KiB beyond; with a PREFETCHT1 32 KiB beyond for every
// format q8_0 12.32–12.97, q4_0 7.58–7.89 → 7.83–7.94, q5_0 10.53–11.07 → 10.94–11.07 (16 KiB:
// q4_0 7.94–8.41, q5_0 10.71–11.73, q8_0 12.15–13.09); q8_0's PREFETCHT0 4 or 16 groups ahead in
// place of PFGROUPS2 (8) 12.42–12.84 and 13.15–13.71 against 12.60–13.13, 4 groups without the
// PREFETCHT1 13.49–14.11. Streamed, q8_0's scores (12 ns a row against 8 with the keys in
// cache) read near the one-core bandwidth, which these prefetches do not raise.

// dot is VPDPBUSD or VPDPWSSD (op) of ymm v and disp(SI) into ymm acc: VEX bytes (vexSI), or the
// mnemonic where evex.
func dot(op byte, acc, v, disp int) string {
	if evex {
		return fmt.Sprintf("%s %d(SI), Y%d, Y%d", vexName(op), disp, v, acc)
	}
	return vexSI(op, acc, v, disp)
}

func p(format string, args ...any) { fmt.Fprintf(&out, "\t"+format+"\n", args...) }
func label(l string)               { fmt.Fprintf(&out, "%s:\n", l) }

// loadTranspose loads 16 payload bytes at byte offset off of the eight rows (CX rows 0..3,
// BX rows 4..7; R8 = rb, R12 = 3rb) and leaves payload dword k of row l in lane l of Y12+k
// (temporaries Y0..Y3).
func loadTranspose(off int) {
	loadRowBytes(off)
	transpose()
}

// transpose transposes the row bytes loadRowBytes leaves in Y12..Y15 within their lanes
// (temporaries Y0..Y3).
func transpose() {
	p("VPUNPCKLDQ Y13, Y12, Y0")
	p("VPUNPCKHDQ Y13, Y12, Y1")
	p("VPUNPCKLDQ Y15, Y14, Y2")
	p("VPUNPCKHDQ Y15, Y14, Y3")
	p("VPUNPCKLQDQ Y2, Y0, Y12")
	p("VPUNPCKHQDQ Y2, Y0, Y13")
	p("VPUNPCKLQDQ Y3, Y1, Y14")
	p("VPUNPCKHQDQ Y3, Y1, Y15")
}

// loadRowBytes loads the 16 bytes at byte offset off of the eight rows (CX rows 0..3, BX
// rows 4..7; R8 = rb, R12 = 3rb), untransposed: rows m and 4+m in Y12+m.
func loadRowBytes(off int) {
	for m := 0; m < 4; m++ {
		idx := [...]string{"", "(R8*1)", "(R8*2)", "(R12*1)"}[m]
		p("VMOVDQU %d(CX)%s, X%d", off, idx, 12+m)
		p("VINSERTI128 $1, %d(BX)%s, Y%d, Y%d", off, idx, 12+m, 12+m)
	}
}

// u8Nibbles splits the transposed payload Y12..Y15 into the codes Y0..Y7 (low nibbles, then
// high).
func u8Nibbles() {
	// The nibble mask in Y7 (the last code vector written): one load where eight memory
	// operands were. Measured on AMD Zen 4 (TestAVX2IntBaseSpeed, kvlabevex build: thread CPU,
	// the two interleaved, three runs of 200 rounds in cache, median ns a row of 128 values and
	// 4 queries): q4_0 6.18–6.27 → 6.06–6.13, q4_1 6.43–6.67 → 6.26–6.48, q5_0 8.69–8.84 →
	// 8.42–8.66, q5_1 10.60–10.87 → 10.25–10.26 (2–3% less); streamed within the noise.
	p("VMOVDQU ·avx2Nib(SB), Y7")
	for i := 0; i < 3; i++ {
		p("VPAND Y7, Y%d, Y%d", 12+i, i)
		p("VPSRLW $4, Y%d, Y%d", 12+i, 4+i)
		p("VPAND Y7, Y%d, Y%d", 4+i, 4+i)
	}
	p("VPAND Y7, Y15, Y3")
	p("VPSRLW $4, Y15, Y15")
	p("VPAND Y7, Y15, Y7")
}

// u8Block is one block of the u8 route: codes into Y0..Y7, four int32 dots, finished into
// the scores Y8..Y11. Y12 holds the rows' scales (and Y15 q4_1's minima) when the dots finish.
// q5_0's and q5_1's fifth bits come from the rows' qh dwords, loaded and transposed as the
// payload is (lane l: row l's qh; the plain kernels read them so from the stage, qhStage),
// and a copy with each byte's low nibble shifted up (VPSLLW): for code vector k the byte k/2
// of each lane (of the copy where k is even) is copied to its four bytes (VPSHUFB), byte j's
// bit 4 + j kept (VPAND), VPMINUB with 16 leaves 16 where it is set and 0 where not, OR'ed
// into the codes: three operations a code vector, where staging qh and testing with VPCMPEQB
// took four and two scalar moves a row (DotManyMulti of q5_0 and q5_1 ~5–8% less thread CPU
// time than the float kernels' on Zen 5, TestAVX2IntSpeed); their codes reach 31, so a chain
// adds four products (|Σ| ≤ 4·2·31·127 = 31496), two chains a query.
func u8Block(k kern) {
	loadTranspose(k.hdr)
	u8Nibbles()
	offset := k.offset
	if iq4U8(k) {
		// The nibbles looked up as iq4_nl's levels + 128 (unsigned bytes 1..241), the chains
		// started at −128·ΣQ (aux[12+h]): Σ (L + 128)·Q − 128·ΣQ = Σ L·Q exactly.
		p("VBROADCASTI128 ·avx2IntAccIQ4Levels(SB), Y15 // the levels + 128")
		for c := 0; c < 8; c++ {
			p("VPSHUFB Y%d, Y15, Y%d", c, c)
		}
		offset = 48
	}
	if k.q5 {
		// The rows' qh dwords transposed as the payload's (lane l: row l's), and a copy with
		// each byte's low nibble moved to its high one, so that every tested bit sits in bits
		// 4..7 of its byte: then VPMINUB with 16 gives 16 where it is set, 0 where not.
		if qhs := qhStage(k); qhs >= 0 {
			p("VMOVDQU %d(R13), Y12 // the rows' qh, staged", qhs)
		} else {
			loadRowBytes(k.qh)
			p("VPUNPCKLDQ Y13, Y12, Y12")
			p("VPUNPCKLDQ Y15, Y14, Y14")
			p("VPUNPCKLQDQ Y14, Y12, Y12 // the rows' qh")
		}
		if swapQH(k) {
			q5SwapFifth(k)
		} else {
			q5Fifth(k)
		}
	}
	if k.min && !k.q5 {
		// The stage's (d_l, m_l) dwords split: d_0..d_7 into the low 128 bits, m_0..m_7 the high.
		p("VMOVDQU (R13), Y13")
		p("VPSHUFB ·avx2DMShuf(SB), Y13, Y13")
		p("VPERMQ $0xD8, Y13, Y13")
		p("VCVTPH2PS X13, Y12")
		p("VEXTRACTI128 $1, Y13, X13")
		p("VCVTPH2PS X13, Y15")
	} else {
		p("VCVTPH2PS (R13), Y12")
	}
	if k.min && k.q5 {
		p("VCVTPH2PS 16(R13), Y13 // the minima as float32, at 32 of the stage")
		p("VMOVUPS Y13, 32(R13)")
	}
	for h := 0; h < 4; h++ {
		if vnni {
			// Two int32 chains of four products, the first started at the codes' offset.
			if offset != 0 {
				p("VPBROADCASTD %d(DX), Y13", offset+4*h)
			} else {
				p("VPXOR Y13, Y13, Y13")
			}
			p("VPXOR Y14, Y14, Y14")
			for c := 0; c < 8; c++ {
				p("%s", dot(opVPDPBUSD, 13+c/4, c, (h*8+c)*32))
			}
			p("VPADDD Y14, Y13, Y13")
		} else if k.q5 {
			// Two int16 chains of four products.
			for ch := 0; ch < 2; ch++ {
				acc := 13 + ch
				p("VPMADDUBSW %d(SI), Y%d, Y%d", (h*8+4*ch)*32, 4*ch, acc)
				for c := 4*ch + 1; c < 4*ch+4; c++ {
					p("VPMADDUBSW %d(SI), Y%d, Y15", (h*8+c)*32, c)
					p("VPADDW Y15, Y%d, Y%d", acc, acc)
				}
			}
			p("VPMADDWD ·avx2Ones16(SB), Y13, Y13")
			p("VPMADDWD ·avx2Ones16(SB), Y14, Y14")
			p("VPADDD Y14, Y13, Y13")
		} else {
			// One int16 chain: the queries' chains are independent.
			p("VPMADDUBSW %d(SI), Y0, Y13", h*8*32)
			for c := 1; c < 8; c++ {
				p("VPMADDUBSW %d(SI), Y%d, Y14", (h*8+c)*32, c)
				p("VPADDW Y14, Y13, Y13")
			}
			p("VPMADDWD ·avx2Ones16(SB), Y13, Y13")
		}
		if k.offset != 0 && !vnni {
			p("VPBROADCASTD %d(DX), Y14", k.offset+4*h)
			p("VPADDD Y14, Y13, Y13")
		}
		p("VCVTDQ2PS Y13, Y13")
		if k.min {
			p("VMULPS Y12, Y13, Y13")
			p("VBROADCASTSS %d(DX), Y14", 80+4*h)
			if k.q5 {
				p("VFMADD231PS 32(R13), Y14, Y13")
			} else {
				p("VFMADD231PS Y14, Y15, Y13")
			}
			p("VBROADCASTSS %d(DX), Y14", 4*h)
			p("VFMADD231PS Y14, Y13, Y%d", 8+h)
			continue
		}
		p("VBROADCASTSS %d(DX), Y14", 4*h)
		p("VMULPS Y12, Y14, Y14")
		p("VFMADD231PS Y14, Y13, Y%d", 8+h)
	}
}

// iq4U8 reports iq4_nl's AVX-VNNI kernel on the u8 route (u8Block, its nibbles looked up as
// the levels + 128 by VPSHUFB): 32 VPDPBUSD a block and eight rows where the s16 route issues
// 64 VPDPWSSD, and 8 VPSHUFB; the same integers Σ L·Q, converted, scaled and added as there,
// so the same scores (TestAVX2IntScores). The kvlabevex twins keep the s16 route (the layout
// avx2BQBytes gives them). Measured on an Intel Xeon (KVLAB_NO_AVX512; multi_avx2int_amd64.go's
// avx2IQ4U8): the decode's scores 9.4–9.7 → 6.9–7.4 ns a row.
func iq4U8(k kern) bool { return vnni && !evex && k.iq4 && !k.hb }

// pipe reports the u8 route's pipelined form (u8PipeBlock) for k: q4_0's and q4_1's plain
// kernels (not their AVX-VNNI forms, not the baseline).
func pipe(k kern) bool { return !k.s16 && !k.q5 && !vnni && !base }

// u8PipeBlock is one block of q4_0's and q4_1's plain kernels: u8Block's products, sums and
// float operations in the same order for each query (so the same scores bit for bit), with the
// loops turned: the codes outer, the four queries' int16 chains (Y12..Y15) inner, so that code
// vector c is dead once its four products are issued. Code 0's products start the chains (no
// temporary); Y0 is then the products' temporary, and where preload, the next block's raw
// row bytes (rows m and 4+m) are loaded into Y1+m right after code 1+m's last product, three
// quarters of the block's multiplies ahead of their use, and transposed into Y12..Y15 at the
// end of the block (the last block's body, which the kernel writes apart, loads nothing).
//
// The loads had bound the kernels: with the row loads replaced by zeroing (wrong scores, timing
// only) q4_0 took 5.11 ns a row in cache where it took 5.97, q4_1 5.53 where 6.25 (Zen 4, plain
// AVX2, TestAVX2IntBaseSpeed as below). Measured on AMD Zen 4, plain AVX2 (TestAVX2IntBaseSpeed,
// kvlabevex build, KVLAB_NO_AVX512: thread CPU, interleaved with the former kernels
// (avx2Scores*Base), five runs, load 3–4, ns a row of 128 values and 4 queries, min): q4_0 in
// cache 5.97–6.00 → 5.14–5.22, streamed 8.10–8.45 → 7.54–7.86; q4_1 in cache 6.23–6.27 →
// 5.57–5.61, streamed 8.67–9.41 → 7.61–8.34. Whole decodes (attn's TestDecodeBreakdown,
// KVLAB_NO_AVX512, 131072 cells, seven runs alternated with the former binary, scores ns a
// cell, min/median of the runs' minima): q4_0 6.19/7.34 → 5.89/6.60, q4_1 7.15/7.76 →
// 6.59/6.92. On Intel's cores (not measured; instruction tables) the same multiplies, adds,
// loads and shuffles issue, in another order: the ports' load is unchanged.
func u8PipeBlock(k kern, preload bool) {
	u8Nibbles()
	for c := 0; c < 8; c++ {
		for h := 0; h < 4; h++ {
			if c == 0 {
				p("VPMADDUBSW %d(SI), Y0, Y%d", h*8*32, 12+h)
			} else {
				p("VPMADDUBSW %d(SI), Y%d, Y0", (h*8+c)*32, c)
				p("VPADDW Y0, Y%d, Y%d", 12+h, 12+h)
			}
		}
		if m := c - 1; preload && m >= 0 && m < 4 {
			idx := [...]string{"", "(R8*1)", "(R8*2)", "(R12*1)"}[m]
			next := k.block + k.hdr
			p("VMOVDQU %d(CX)%s, X%d", next, idx, 1+m)
			p("VINSERTI128 $1, %d(BX)%s, Y%d, Y%d", next, idx, 1+m, 1+m)
		}
	}
	// Y5: the rows' scales, Y6: q4_1's minima.
	if k.min {
		p("VMOVDQU (R13), Y6")
		p("VPSHUFB ·avx2DMShuf(SB), Y6, Y6")
		p("VPERMQ $0xD8, Y6, Y6")
		p("VCVTPH2PS X6, Y5")
		p("VEXTRACTI128 $1, Y6, X6")
		p("VCVTPH2PS X6, Y6")
	} else {
		p("VCVTPH2PS (R13), Y5")
	}
	for h := 0; h < 4; h++ {
		acc := 12 + h
		p("VPMADDWD ·avx2Ones16(SB), Y%d, Y%d", acc, acc)
		if k.offset != 0 {
			p("VPBROADCASTD %d(DX), Y0", k.offset+4*h)
			p("VPADDD Y0, Y%d, Y%d", acc, acc)
		}
		p("VCVTDQ2PS Y%d, Y%d", acc, acc)
		if k.min {
			p("VMULPS Y5, Y%d, Y%d", acc, acc)
			p("VBROADCASTSS %d(DX), Y0", 80+4*h)
			p("VFMADD231PS Y0, Y6, Y%d", acc)
			p("VBROADCASTSS %d(DX), Y0", 4*h)
			p("VFMADD231PS Y0, Y%d, Y%d", acc, 8+h)
			continue
		}
		p("VBROADCASTSS %d(DX), Y0", 4*h)
		p("VMULPS Y5, Y0, Y0")
		p("VFMADD231PS Y0, Y%d, Y%d", acc, 8+h)
	}
	if preload {
		// transpose's shuffles with the raw rows in Y1..Y4 and temporaries Y0, Y5..Y7.
		p("VPUNPCKLDQ Y2, Y1, Y0")
		p("VPUNPCKHDQ Y2, Y1, Y5")
		p("VPUNPCKLDQ Y4, Y3, Y6")
		p("VPUNPCKHDQ Y4, Y3, Y7")
		p("VPUNPCKLQDQ Y6, Y0, Y12")
		p("VPUNPCKHQDQ Y6, Y0, Y13")
		p("VPUNPCKLQDQ Y7, Y5, Y14")
		p("VPUNPCKHQDQ Y7, Y5, Y15")
	}
}

// qhStage is the stage offset of q5_0's and q5_1's qh dwords (lane order) in their plain AVX2
// kernels, -1 where the block loads and transposes them from the rows (the AVX-VNNI forms and
// the baseline). Staged as the scales are (the stage loop, and for q5_1 a group ahead in the
// block loop), each a scalar load and store a row, they leave one vector load where eight
// loads (four VINSERTI128) and three unpacks were; q5_0 then stages a group ahead as q5_1
// (staged at its group's start, the block's vector load of qh waited on the eight stores:
// 8.49 → 8.9 in cache). Measured on AMD Zen 4, plain AVX2 (TestAVX2IntBaseSpeed, kvlabevex
// build: thread CPU, interleaved with the baseline, five runs, ns a row of 128 values and 4
// queries, min/median, load 12–16): q5_0 in cache 8.38–8.40/8.48–8.50 → 7.87–7.93/8.08–8.10,
// streamed 9.41–10.87 → 9.41–10.69 (min; medians ±2 %); q5_1 in cache 8.95–9.03/9.12–9.31 →
// 8.80–8.84/8.99–9.15, streamed 10.93–12.31 → 10.61–11.99. Without qh at all (wrong scores,
// timing only) the bound: q5_0 7.67 in cache, 8.88 streamed; q5_1 8.16, 10.92; without the
// payload's row loads too, 7.26 and 8.50, 8.39 and 10.10. Software pipelining those loads as
// hbBlock does did not pay here: loaded over codes 0..3 once query 3's first chain had read
// them (the rest of the block's lead), q5_0 7.84–7.88 and q5_1 8.96–8.98 in cache (no better
// than without it); with every query's first chain run first and kept on the stack for the
// longer lead, 8.46–8.50 and 9.53–9.56 (worse). Whole decodes
// (attn's TestDecodeBreakdown, KVLAB_NO_AVX512, four runs alternated with main's binary, scores
// ns a row, min): q5_0 8.70–11.73 → 8.40–8.52, q5_1 9.60–12.31 → 9.41–9.59. On Intel (not
// measured; instruction tables) the unpacks and VINSERTI128 it drops all take port 5, the
// scalar moves any integer port and the store ports.
//
// The plain kernels transpose each block's staged qh in place a block ahead of its use
// (q5SwapQH, q5SwapFifth).
func qhStage(k kern) int {
	if !k.q5 || vnni {
		return -1
	}
	if k.min {
		return 64 // after q5_1's scales, minima and minima as float32
	}
	return 16
}

// s16Block is one block of the s16 route: int32 dots in Y4..Y7, finished into Y8..Y11.
func s16Block(k kern) {
	halves := 1
	if k.wide {
		halves = 2
	}
	for half := 0; half < halves; half++ {
		loadTranspose(k.hdr + 16*half)
		if k.iq4 {
			p("VMOVDQU ·avx2IQ4Levels(SB), Y3")
		}
		ncode := 4
		if k.iq4 {
			ncode = 8
		}
		for c := 0; c < ncode; c++ {
			dw := 4*half + c // the payload dword's values: 4·dw .. 4·dw+3
			src := 12 + c
			if k.iq4 {
				src = 12 + c%4
				if c < 4 {
					p("VPAND ·avx2Nib(SB), Y%d, Y0", src)
				} else {
					p("VPSRLW $4, Y%d, Y0", src)
					p("VPAND ·avx2Nib(SB), Y0, Y0")
				}
				p("VPSHUFB Y0, Y3, Y0")
				src = 0
			}
			// Y1: even bytes sign-extended, Y0: odd bytes.
			p("VPSLLW $8, Y%d, Y1", src)
			p("VPSRAW $8, Y1, Y1")
			p("VPSRAW $8, Y%d, Y0", src)
			for h := 0; h < 4; h++ {
				off := (dw*4 + h) * 64
				switch {
				case dw == 0:
					p("VPMADDWD %d(SI), Y1, Y%d", off, 4+h)
				case vnni:
					p("%s", dot(opVPDPWSSD, 4+h, 1, off))
				default:
					p("VPMADDWD %d(SI), Y1, Y2", off)
					p("VPADDD Y2, Y%d, Y%d", 4+h, 4+h)
				}
				if vnni {
					p("%s", dot(opVPDPWSSD, 4+h, 0, off+32))
				} else {
					p("VPMADDWD %d(SI), Y0, Y2", off+32)
					p("VPADDD Y2, Y%d, Y%d", 4+h, 4+h)
				}
			}
		}
	}
	p("VCVTPH2PS (R13), Y3")
	for h := 0; h < 4; h++ {
		p("VCVTDQ2PS Y%d, Y%d", 4+h, 4+h)
		p("VBROADCASTSS %d(DX), Y2", 4*h)
		p("VMULPS Y3, Y2, Y2")
		p("VFMADD231PS Y2, Y%d, Y%d", 4+h, 8+h)
	}
}

// hbBlock is one block of the high-byte route (q8_0 at one-byte digits, iq4_nl): s16Block's
// layout and multiplies, with two changes, both measured on AMD Zen 4, plain AVX2 (thread CPU,
// TestAVX2HBSpeed: interleaved with the s16 kernels, ns a row of 128 values and 4 queries,
// min/median, a shared machine at load 15–23).
//
//   - Each code vector's (q8_0's codes, iq4_nl's levels) even bytes are moved to the high byte
//     of their int16 (VPSLLW $8) and its odd bytes kept there (VPAND 0xFF00), so the int16 are
//     2⁸·c: two operations where the sign extension took three shifts. The int32 sums are then
//     2⁸·Σ Q·c, |Σ| ≤ 32·128·127, so within ±2²⁸ at one-byte digits (not at two: q8_0's
//     two-digit queries keep s16Block), and VPSRAD $8 before the conversion leaves the s16
//     route's integer, so the scores are the same. Alone: q8_0 in cache 9.38 → 9.17.
//   - Software pipelining (preload): each payload register, once its code vector is read, takes
//     the raw bytes of the next half's rows (the next block's at the last half; not past the
//     last block, whose body the kernel writes apart), transposed at the end of the half, so
//     the row loads' latency overlaps the multiplies. The loads had bound the kernel more than
//     its arithmetic: the s16 kernel with its row loads removed (wrong scores, timing only)
//     took 5.7 ns a row in cache where it took 9.2, without its unpacks 8.2.
//
// Both: q8_0 in cache 9.29–9.37/9.33–11.51 → 8.63–8.69/8.61–11.11, streamed
// 10.00–11.68/12.42–12.75 → 9.40–10.33/11.99–12.50; iq4_nl in cache 9.20–9.24/11.25–11.43 →
// 8.54–8.56/10.77–11.22, streamed 9.84–10.14/11.81–11.96 → 9.64–9.90/11.40–11.80. Whole
// decodes (attn's TestDecodeBreakdown, KVLAB_NO_AVX512, 131072 cells, four runs alternated with
// main's binary, scores ns a cell, min): q8_0 9.72–9.87 → 9.03–9.31, iq4_nl 9.47–11.36 →
// 9.02–9.22; whole 21.06–21.76 → 20.17–20.96 and 21.23–22.03 → 20.64–21.08.
//
// On Intel's cores (not measured; instruction tables) the shifts and multiplies share ports 0
// and 1, where VPAND may take port 5 too, so the first change should help there as well; the
// loads and unpacks are the same ones, issued earlier.
//
// Tried and slower: the sign route, |c| (VPABSB) as VPMADDUBSW's unsigned operand against
// Q·sgn(c) (VPSIGNB; exact, pairs within 2·128·127), then VPMADDWD by ones: q8_0 in cache
// 9.30 → 9.65, iq4_nl 9.20 → 9.86. Zen 4 runs VPSIGNB and VPABSB on the two pipes of its
// integer multiplies (a loop of VPMADDWD and VPSIGNB alternated: two a cycle, as VPMADDWD
// alone; VPMADDWD with VPADDD, VPSRAW, VPAND or VPMINUB: four), so the route's 13 such
// operations a code vector cost more than the s16 route's 8 multiplies and 3 shifts.
//
// Where the time goes, by ablation (wrong scores, timing only; AMD Zen 4, plain AVX2,
// TestAVX2IntBaseSpeed alternated with the unchanged kernel, three runs, in cache, ns a row of
// 128 values and 4 queries, min; q8_0 8.3–8.6, iq4_nl 8.6–8.9, q4_0 5.2): without the 64
// VPMADDWD a block 5.5–5.6 and 5.8–5.9; without the 60 VPADDD 0.2–0.55 less; with the
// multiplies' query from registers (no loads) 0.1–0.5 less for q8_0, the same for iq4_nl;
// without the row loads 0.8 less for q8_0, 0.1 for iq4_nl; without the transposes 0.1–0.25;
// without the float finish 0.5–0.55; without the scales' staging 0.2 for q8_0. So the
// multiplies are the largest piece, twice q4_0's: VPMADDWD takes two values of a lane where
// VPMADDUBSW takes four. Zen 4 runs two of either a cycle on the two pipes that also run
// VMULPS and VFMADD*PS and, one of them, VPSHUFB, VINSERTI128 and VPERM2I128 (a loop of 32
// independent VPMADDWD and 32 other operations: 16 cycles with VPADDD, VPAND, VPOR, VPMINUB,
// shifts, VPUNPCK*, VPBLENDD, VCVTDQ2PS or loads, 21.4 with VPSHUFB, VINSERTI128 or
// VPERM2I128, 32 with VMULPS or VFMADD231PS).
//
// No exact route takes fewer multiplies. VPMADDUBSW's pair of u8·s8 products must stay within
// int16: 8-bit codes (q8_0's −128..127, iq4_nl's levels −127..113) against one-byte digits
// (±127) reach 2·128·127 = 32512 a pair, so no chain of two pairs fits and a VPMADDWD must
// widen each, two multiplies again; the query as the unsigned operand (Q + 128) against signed
// codes saturates (2·255·128 = 65280 a pair), as do iq4_nl's levels + 128 against signed
// digits (2·241·127 = 61214); codes or digits split into nibbles (each chain then fits) take
// two VPMADDUBSW a code vector and query; the sign route widens after each product too
// (above). So the goals of 6 (iq4_nl) and 7 (q8_0) ns a row would need the multiplies hidden
// behind the rest, which takes 5.5 ns without them. Also measured and not better: VPBLENDD
// with a 32-byte load in place of each VINSERTI128 (so that the row loads' second halves run
// beside the multiplies): q8_0, iq4_nl, q4_0 and q5_0 within ±0.1 ns in cache and streamed.
func hbBlock(k kern, preload bool) {
	halves := 1
	if k.wide {
		halves = 2
	}
	for half := 0; half < halves; half++ {
		// The payload dwords of this half are transposed in Y12..Y15 (by the previous half or
		// block, or the kernel's prologue). Each is replaced, once read, by the raw bytes of
		// the next half's (next block's at the last half) rows, transposed at the end of the half.
		next := k.hdr + 16*(half+1)
		if half == halves-1 {
			next = k.block + k.hdr
		}
		more := preload || half < halves-1 // a next half to load
		load := func(m int) {
			if !more {
				return
			}
			idx := [...]string{"", "(R8*1)", "(R8*2)", "(R12*1)"}[m]
			p("VMOVDQU %d(CX)%s, X%d", next, idx, 12+m)
			p("VINSERTI128 $1, %d(BX)%s, Y%d, Y%d", next, idx, 12+m, 12+m)
		}
		// Y2: iq4_nl's levels, or q8_0's 0xFF00 mask (iq4_nl reads it from memory). The mask in
		// a register where eight memory operands a block were: q8_0 in cache 8.58–8.73 →
		// 8.32–8.34 ns a row, streamed 9.20–9.31 → 8.87–8.92 (TestAVX2HBSpeed, three runs each
		// way, alternated, min).
		ncode := 4
		if k.iq4 {
			ncode = 8
			p("VMOVDQU ·avx2IQ4Levels(SB), Y2")
		} else {
			p("VMOVDQU ·avx2HiByte(SB), Y2")
		}
		for c := 0; c < ncode; c++ {
			dw := 4*half + c // the payload dword's values (iq4_nl's high nibbles: dw 4..7)
			src := 12 + c
			if k.iq4 {
				src = 12 + c%4
				if c < 4 {
					p("VPAND ·avx2Nib(SB), Y%d, Y0", src)
				} else {
					p("VPSRLW $4, Y%d, Y0", src)
					p("VPAND ·avx2Nib(SB), Y0, Y0")
					load(c % 4)
				}
				p("VPSHUFB Y0, Y2, Y0")
				src = 0
			}
			// Y1: 2⁸ times the even bytes, Y0: the odd ones.
			p("VPSLLW $8, Y%d, Y1", src)
			if k.iq4 {
				p("VPAND ·avx2HiByte(SB), Y%d, Y0", src)
			} else {
				p("VPAND Y2, Y%d, Y0", src)
				load(c)
			}
			for h := 0; h < 4; h++ {
				off := (dw*4 + h) * 64
				if dw == 0 {
					p("VPMADDWD %d(SI), Y1, Y%d", off, 4+h)
				} else {
					p("VPMADDWD %d(SI), Y1, Y3", off)
					p("VPADDD Y3, Y%d, Y%d", 4+h, 4+h)
				}
				p("VPMADDWD %d(SI), Y0, Y3", off+32)
				p("VPADDD Y3, Y%d, Y%d", 4+h, 4+h)
			}
		}
		if more {
			transpose()
		}
	}
	p("VCVTPH2PS (R13), Y3")
	for h := 0; h < 4; h++ {
		p("VPSRAD $8, Y%d, Y%d", 4+h, 4+h)
		p("VCVTDQ2PS Y%d, Y%d", 4+h, 4+h)
		p("VBROADCASTSS %d(DX), Y2", 4*h)
		p("VMULPS Y3, Y2, Y2")
		p("VFMADD231PS Y2, Y%d, Y%d", 4+h, 8+h)
	}
}

// q8VNNI reports the AVX-VNNI q8_0 kernel's byte route (q8VNNIBlock) for k.
func q8VNNI(k kern) bool { return vnni && k.wide && !s16Q8 }

// q8VNNIBlock is one block of the AVX-VNNI q8_0 kernel: multiScoresQ80VNNI's method
// (multi_vnni_amd64.s) on eight rows. The codes, XOR 0x80 (Y10), are unsigned bytes c + 128
// for VPDPBUSD, one per payload dword, query and digit (hi, lo: pre-broadcast at
// ((2h + t)·8 + k)·32 of a block's 2176 bytes, avx2Expand). Each query's hi chain starts at
// 0 and its lo chain at −128·ΣQ (pre-broadcast at 2048 + 32h), so 2⁸·hi + lo is Σ Q·c exactly
// (the chains stay within ±2²⁸), the s16 route's integer, converted and scaled as there. The
// eight chains (Y0..Y7), the constant and the transpose (four rows, one temporary: Y11..Y15)
// leave two registers for scores: queries 0 and 1 stay in Y8 and Y9, 2 and 3 live at 8(SP)
// and 40(SP), updated by VFMADD213PS from memory and a store (the s16 route's product and sum,
// so the same bits).
//
// Per eight rows and block it issues 64 VPDPBUSD, 8 VPXOR, 4 VPSLLD and 4 VPADDD where the s16
// route issues 64 VPDPWSSD and 24 shifts: on Golden Cove the dot products and the shifts share
// ports 0 and 1, where the tables predict 80 µops a block in place of 100; the loads grow by 4
// (the lo chains' starts) and 2 (the spilled scores). Measured on AMD Zen 4 through the EVEX
// twins (TestAVX2IntEVEXSpeed, kvlabevex build; Zen 4 has AVX-512 VNNI but not AVX-VNNI; thread
// CPU, the two interleaved, three quiet runs of 200 rounds in cache and 10 streamed, ns a row of
// 128 values and 4 queries, min/median): in cache 8.33–8.50/8.42–8.58 against the s16 route's
// 7.92–8.00/7.98–8.07 (+5%), streamed (min) 14.61–14.94 against 14.65–15.08 (the same). Zen 4
// runs the s16 route's shifts beside its multiplies, and the loads rather than the multiplies
// seem to bound both (starting all eight chains from memory cost another ~7%). Not measured on
// an AVX-VNNI CPU: the gain is the tables' prediction for Intel's cores.
func q8VNNIBlock(k kern) {
	if k.hb {
		q8VNNIOneBlock(k)
		return
	}
	for q := 0; q < 4; q++ {
		p("VPXOR Y%d, Y%d, Y%d // hi", q, q, q)
		p("VMOVDQU %d(SI), Y%d // lo, from −128·ΣQ", 2048+32*q, 4+q)
	}
	for half := 0; half < 2; half++ {
		off := k.hdr + 16*half
		loadRowBytes(off)
		// The transpose with one temporary (Y11): dwords 0..3 end in Y15, Y11, Y13, Y12.
		p("VPUNPCKLDQ Y13, Y12, Y11")
		p("VPUNPCKHDQ Y13, Y12, Y12")
		p("VPUNPCKLDQ Y15, Y14, Y13")
		p("VPUNPCKHDQ Y15, Y14, Y14")
		p("VPUNPCKLQDQ Y13, Y11, Y15 // payload dword 0 of the half")
		p("VPUNPCKHQDQ Y13, Y11, Y11 // 1")
		p("VPUNPCKLQDQ Y14, Y12, Y13 // 2")
		p("VPUNPCKHQDQ Y14, Y12, Y12 // 3")
		regs := [4]int{15, 11, 13, 12}
		for c := 0; c < 4; c++ {
			p("VPXOR Y10, Y%d, Y%d", regs[c], regs[c])
		}
		for c := 0; c < 4; c++ {
			dw := 4*half + c
			for q := 0; q < 4; q++ {
				for t := 0; t < 2; t++ {
					p("%s", dot(opVPDPBUSD, 4*t+q, regs[c], ((2*q+t)*8+dw)*32))
				}
			}
		}
	}
	p("VCVTPH2PS (R13), Y14")
	for q := 0; q < 4; q++ {
		p("VPSLLD $8, Y%d, Y%d", q, q)
		p("VPADDD Y%d, Y%d, Y%d", 4+q, q, q)
		p("VCVTDQ2PS Y%d, Y%d", q, q)
		p("VBROADCASTSS %d(DX), Y11", 4*q)
		p("VMULPS Y14, Y11, Y11")
		if q < 2 {
			p("VFMADD231PS Y11, Y%d, Y%d", q, 8+q)
		} else {
			p("VFMADD213PS %d(SP), Y%d, Y11", q8Spill(q), q)
			p("VMOVUPS Y11, %d(SP)", q8Spill(q))
		}
	}
}

// q8VNNIOneBlock is one block of the AVX-VNNI q8_0 kernel at one-byte query digits
// (avx2ScoresQ80OneVNNI, vnniQ8One): q8VNNIBlock's codes and transposes with one digit, the u8
// route's layout (query h's four digits of payload dword k pre-broadcast at (h·8 + k)·32 of a
// block's 1024 bytes, avx2Expand), each query's one chain started at −128·ΣQ (aux[12+h],
// broadcast), so that it ends at Σ Q·c exactly: 32 VPDPBUSD a block and eight rows where the
// two-digit kernel issues 64, and no shift or add to join two chains. The chains leave Y4..Y7
// free, so queries 2 and 3's scores stay in Y6 and Y7. Converted, scaled (s·d) and added with
// one FMA as multiScoresQ80OneVNNI's FINISHQ1 does: its scores bit for bit (TestAVX2IntScores).
func q8VNNIOneBlock(k kern) {
	for q := 0; q < 4; q++ {
		p("VPBROADCASTD %d(DX), Y%d // from −128·ΣQ (aux[12+h])", 48+4*q, q)
	}
	for half := 0; half < 2; half++ {
		loadRowBytes(k.hdr + 16*half)
		p("VPUNPCKLDQ Y13, Y12, Y11")
		p("VPUNPCKHDQ Y13, Y12, Y12")
		p("VPUNPCKLDQ Y15, Y14, Y13")
		p("VPUNPCKHDQ Y15, Y14, Y14")
		p("VPUNPCKLQDQ Y13, Y11, Y15 // payload dword 0 of the half")
		p("VPUNPCKHQDQ Y13, Y11, Y11 // 1")
		p("VPUNPCKLQDQ Y14, Y12, Y13 // 2")
		p("VPUNPCKHQDQ Y14, Y12, Y12 // 3")
		regs := [4]int{15, 11, 13, 12}
		for c := 0; c < 4; c++ {
			p("VPXOR Y10, Y%d, Y%d", regs[c], regs[c])
		}
		for c := 0; c < 4; c++ {
			for q := 0; q < 4; q++ {
				p("%s", dot(opVPDPBUSD, q, regs[c], (q*8+4*half+c)*32))
			}
		}
	}
	p("VCVTPH2PS (R13), Y14")
	for q := 0; q < 4; q++ {
		p("VCVTDQ2PS Y%d, Y%d", q, q)
		p("VBROADCASTSS %d(DX), Y11", 4*q)
		p("VMULPS Y14, Y11, Y11")
		p("VFMADD231PS Y11, Y%d, Y%d", q, [4]int{8, 9, 6, 7}[q])
	}
}

// q8Spill is the frame offset of query q's scores (2, 3) in the AVX-VNNI q8_0 kernel.
func q8Spill(q int) int { return 8 + 32*(q-2) }

func kernel(k kern) {
	n := k.name
	if base {
		n += "Base"
	}
	if vnni {
		n += "VNNI"
		if evex {
			n = k.name + "EVEX"
			if s16Q8 {
				n = k.name + "S16EVEX"
			}
		}
	}
	lines := (8*k.block + 63) / 64
	bq := 1024 // bytes of pre-broadcast digits per block
	if k.s16 && !iq4U8(k) {
		bq = 2048
	}
	if q8VNNI(k) && !k.hb {
		bq = 2176 // and the offsets
	}
	if q8VNNI(k) && k.hb {
		bq = 1024 // one digit: the u8 route's layout
	}
	stageStride := 16
	if k.min {
		stageStride = 32
	}
	if k.stride != 0 {
		stageStride = k.stride
	}
	qhs := qhStage(k)
	if qhs >= 0 {
		stageStride = qhs + 32
	}
	fmt.Fprintf(&out, "\n// func avx2Scores%s(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)\n", n)
	if vnni {
		enc := "VEX"
		if evex {
			enc = "EVEX: the twin of avx2Scores" + k.name + "VNNI"
		}
		fmt.Fprintf(&out, "// avx2Scores%s with AVX-VNNI: VPDPBUSD or VPDPWSSD (%s) for each product and its add.\n", k.name, enc)
	} else {
		fmt.Fprintf(&out, "// %s\n", k.doc)
	}
	ahead := !k.q5 || k.min || qhStage(k) >= 0 // q5_0's plain kernel stages its qh too
	frame := 0
	if ahead {
		frame = 8 // the next group's offset from this one's rows
	}
	if q8VNNI(k) {
		frame = 72 // and queries 2 and 3's scores
	}
	// two: the kernels (all but the base ones) take a group's rows 0..3 and 4..7 from two
	// streams (twoStream), its offsets in four frame words from twoSlot, and q8_0's no
	// PREFETCHT1 (q8T1).
	two := vnni || !base
	twoSlot := frame
	if two {
		frame += 32
	}
	tH, tS, tO, tR := twoSlot, twoSlot+8, twoSlot+16, twoSlot+24
	kname, kstride = n, stageStride
	fmt.Fprintf(&out, "TEXT ·avx2Scores%s(SB), NOSPLIT, $%d-80\n", n, frame)
	p("MOVQ rows+32(FP), DI")
	p("MOVQ rb+40(FP), R8")
	p("LEAQ (R8)(R8*2), R12 // 3 rows")
	p("MOVQ out+56(FP), R9")
	p("MOVQ m+48(FP), R10")
	p("SHRQ $3, R10 // groups of eight rows")
	p("JZ   a2%s_done", n)
	if two {
		twoStream(n, tH, tS, tO, tR)
	}
	// ahead: the eight rows' scales (and minima) of the next group are staged during this
	// group's block loop, each block's after its own are read, so a group's stage is written a
	// whole group before it is read; staged just before (q5_0), the block loop's first
	// vector load of the stage waits for the eight 2-byte stores it spans to retire, as a load
	// cannot take its bytes from several stores. Measured on AMD Zen 5 (TestAVX2IntSpeed, in
	// cache, best of four runs alternating with the kernels that staged each group at its start):
	// q4_0 5.57 → 5.31 ns a row (AVX-VNNI 5.05 → 4.90), q4_1 6.20 → 5.76 (5.64 → 5.51), q8_0
	// and iq4_nl within the noise. It issues the same loads and stores, less the stage loop's.
	// q5_1 too, on AMD Zen 4 (TestAVX2IntSpeed, five runs alternated with the kernel staging
	// each group at its start, median): 10.15 → 9.20 ns a row in cache, 10.81 → 10.05
	// streamed; whole decodes (attn's TestDecodeBreakdown, KVLAB_NO_AVX512, 131072 cells, eight
	// runs alternated, median) 26.0 → 25.0 ns a cell. q5_0 (one 2-byte scale a row to stage)
	// moved 8.39 → 8.06 in cache but 9.05 → 9.42 streamed and 23.2 → 23.45 whole, within the
	// noise of a loaded machine, and keeps its stage loop in its AVX-VNNI forms; its plain
	// kernel, which stages its qh too (qhStage), stages ahead.
	if ahead {
		p("// The first group's scales (and minima) are staged here, each next group's during its")
		p("// predecessor's block loop (8·rb on in 0(SP), 0 at the last group: it restages itself).")
	} else {
		label("a2" + n + "_group")
	}
	p("// Stage every block's eight scales (and minima) in lane order.")
	p("MOVQ DI, CX")
	rowsB(two, tH)
	p("MOVQ stage+16(FP), SI")
	p("MOVQ nb+24(FP), R11")
	label("a2" + n + "_stage")
	fields := 1
	if k.min {
		fields = 2
	}
	// pairDM: q4_1's scale and minimum, adjacent in the block, are staged as one dword a row
	// (d_l, m_l at 4l) and split by u8Block (four vector operations): 8 loads and 8 stores a
	// block and group where 16 and 16 were. Measured on AMD Zen 5 (TestAVX2IntSpeed, best of
	// eight runs alternating with the kernels that staged d and m apart): AVX-VNNI 5.75 → 5.31
	// ns a row in cache, 6.84 → 6.61 streamed; plain AVX2 within the noise (6.04 → 5.97).
	// q5_1 staged so too (its minima converted and stored as float32 at 32 of the stage in the
	// block loop) measured on AMD Zen 4, plain AVX2 (TestAVX2IntBaseSpeed, six runs, min ns a
	// row): 8.9–9.0 → 7.7–8.7 in cache, but streamed 11.0–12.8 → 10.8–13.5, slower in five runs
	// of six (~2–3%); not kept.
	pairDM := k.min && !k.q5
	if pairDM {
		fields = 0
		for r := 0; r < 8; r++ {
			base := "CX"
			if r >= 4 {
				base = "BX"
			}
			idx := [...]string{"", "(R8*1)", "(R8*2)", "(R12*1)"}[r%4]
			p("MOVL (%s)%s, AX", base, idx)
			p("MOVL AX, %d(SI)", 4*r)
		}
	}
	for f := 0; f < fields; f++ {
		for r := 0; r < 8; r++ {
			base := "CX"
			if r >= 4 {
				base = "BX"
			}
			idx := [...]string{"", "(R8*1)", "(R8*2)", "(R12*1)"}[r%4]
			p("MOVWLZX %d(%s)%s, AX", 2*f, base, idx)
			p("MOVW AX, %d(SI)", 16*f+2*r)
		}
	}
	if qhs >= 0 {
		for r := 0; r < 8; r++ {
			base := "CX"
			if r >= 4 {
				base = "BX"
			}
			idx := [...]string{"", "(R8*1)", "(R8*2)", "(R12*1)"}[r%4]
			p("MOVL %d(%s)%s, AX // qh", k.qh, base, idx)
			p("MOVL AX, %d(SI)", qhs+4*r)
		}
	}
	p("ADDQ $%d, CX", k.block)
	p("ADDQ $%d, BX", k.block)
	p("ADDQ $%d, SI", stageStride)
	p("DECQ R11")
	p("JNZ  a2%s_stage", n)
	if swapQH(k) {
		p("// The first group's first block's qh transposed (q5SwapQH); each next one a block")
		p("// ahead of its use (u8Block).")
		p("MOVQ stage+16(FP), R14")
		q5SwapQH(qhs)
	}
	p("")
	if ahead {
		label("a2" + n + "_group")
		if two {
			p("MOVQ %d(SP), R14", tS)
		} else {
			p("MOVQ R8, R14")
			p("SHLQ $3, R14")
		}
		p("XORQ R15, R15")
		p("CMPQ R10, $1")
		p("CMOVQEQ R15, R14")
		p("MOVQ R14, 0(SP)")
	}
	p("MOVQ DI, CX")
	rowsB(two, tH)
	p("MOVQ bq+0(FP), SI")
	p("MOVQ aux+8(FP), DX")
	p("MOVQ stage+16(FP), R13")
	p("MOVQ nb+24(FP), R11")
	p("MOVQ off+72(FP), AX // the scores start at the queries' offsets")
	for h := 0; h < 4; h++ {
		p("VBROADCASTSS %d(AX), Y%d", 4*h, 8+h)
	}
	if q8VNNI(k) && k.hb {
		p("VMOVUPS Y10, Y6 // queries 2 and 3")
		p("VMOVUPS Y11, Y7")
		p("VPBROADCASTD ·avx2C80(SB), Y10 // 0x80 bytes: the codes' XOR")
	} else if q8VNNI(k) {
		p("VMOVUPS Y10, %d(SP)", q8Spill(2))
		p("VMOVUPS Y11, %d(SP)", q8Spill(3))
		p("VPBROADCASTD ·avx2C80(SB), Y10 // 0x80 bytes: the codes' XOR")
	}
	if two {
		lines = (4*k.block + 63) / 64
		p("MOVQ %d(SP), AX // prefetch pointer: PFGROUPS2 groups ahead, %d bytes a block and stream", tS, lines*64)
	} else {
		p("MOVQ R8, AX // prefetch pointer: PFGROUPS2 groups of eight rows ahead, %d bytes a block", lines*64)
		p("SHLQ $3, AX")
	}
	if two && k.wide {
		p("IMULQ $%d, AX // q8PFGroups", q8PFGroups)
	} else {
		p("IMULQ $PFGROUPS2, AX")
	}
	p("ADDQ DI, AX")
	// body is one block's code; preload (the high-byte route) also loads the next block's payload.
	body := func(preload bool) {
		if two {
			p("MOVQ %d(SP), R14", tH)
		}
		for l := 0; l < lines; l++ {
			p("PREFETCHT0 %d(AX)", 64*l)
			if two {
				p("PREFETCHT0 %d(AX)(R14*1)", 64*l)
			}
		}
		p("ADDQ $%d, AX", 64*lines)
		if q8VNNI(k) {
			q8VNNIBlock(k)
		} else if k.hb {
			hbBlock(k, preload)
		} else if pipe(k) {
			u8PipeBlock(k, preload)
		} else if k.s16 && !iq4U8(k) {
			s16Block(k)
		} else {
			u8Block(k)
		}
		if ahead {
			p("// The next group's scales (and minima) of this block, over the ones just read.")
			p("MOVQ 0(SP), R14")
			p("ADDQ CX, R14")
			for r := 0; r < 8; r++ {
				if r == 4 && two {
					p("MOVQ 0(SP), R14")
					p("ADDQ BX, R14")
				} else if r == 4 {
					p("LEAQ (R14)(R8*4), R14")
				}
				idx := [...]string{"", "(R8*1)", "(R8*2)", "(R12*1)"}[r%4]
				if pairDM {
					p("MOVL (R14)%s, R15", idx)
					p("MOVL R15, %d(R13)", 4*r)
				}
				for f := 0; f < fields; f++ {
					p("MOVWLZX %d(R14)%s, R15", 2*f, idx)
					p("MOVW R15, %d(R13)", 16*f+2*r)
				}
				if qhs >= 0 {
					p("MOVL %d(R14)%s, R15 // qh", k.qh, idx)
					p("MOVL R15, %d(R13)", qhs+4*r)
				}
			}
		}
		p("ADDQ $%d, CX", k.block)
		p("ADDQ $%d, BX", k.block)
		p("ADDQ $%d, SI", bq)
		p("ADDQ $96, DX")
		if swapQH(k) {
			p("// One block a row: its next group's qh, just staged, transposed (q5SwapQH).")
			p("CMPQ nb+24(FP), $1")
			p("JNE  a2%s_swapped", n)
			p("MOVQ R13, R14")
			q5SwapQH(qhs)
			label("a2" + n + "_swapped")
		}
		p("ADDQ $%d, R13", stageStride)
	}
	if (!k.hb || q8VNNI(k)) && !pipe(k) {
		label("a2" + n + "_blk")
		body(false)
		p("DECQ R11")
		p("JNZ  a2%s_blk", n)
		p("")
	} else {
		// Software-pipelined: the first block's payload is loaded here, each next block's
		// during its predecessor (hbBlock, u8PipeBlock), the last block's body without it.
		loadTranspose(k.hdr)
		p("DECQ R11")
		p("JZ   a2%s_last", n)
		label("a2" + n + "_blk")
		body(true)
		p("DECQ R11")
		p("JNZ  a2%s_blk", n)
		label("a2" + n + "_last")
		body(false)
		p("")
	}
	if q8VNNI(k) && k.hb {
		p("VMOVUPS Y6, Y10")
		p("VMOVUPS Y7, Y11")
	} else if q8VNNI(k) {
		p("VMOVUPS %d(SP), Y10", q8Spill(2))
		p("VMOVUPS %d(SP), Y11", q8Spill(3))
	}
	p("// Rows of four scores: W0..W3 (Y4..Y7) hold rows 0..3 in their low lanes, 4..7 in their high.")
	p("VUNPCKLPS Y9, Y8, Y0")
	p("VUNPCKHPS Y9, Y8, Y1")
	p("VUNPCKLPS Y11, Y10, Y2")
	p("VUNPCKHPS Y11, Y10, Y3")
	p("VUNPCKLPD Y2, Y0, Y4")
	p("VUNPCKHPD Y2, Y0, Y5")
	p("VUNPCKLPD Y3, Y1, Y6")
	p("VUNPCKHPD Y3, Y1, Y7")
	p("MOVQ ostride+64(FP), AX")
	p("LEAQ (AX)(AX*2), R11")
	p("VMOVUPS X4, (R9)")
	p("VMOVUPS X5, (R9)(AX*1)")
	p("VMOVUPS X6, (R9)(AX*2)")
	p("VMOVUPS X7, (R9)(R11*1)")
	if two {
		p("MOVQ R9, BX")
		p("ADDQ %d(SP), BX", tO)
	} else {
		p("LEAQ (R9)(AX*4), BX")
	}
	p("VEXTRACTF128 $1, Y4, (BX)")
	p("VEXTRACTF128 $1, Y5, (BX)(AX*1)")
	p("VEXTRACTF128 $1, Y6, (BX)(AX*2)")
	p("VEXTRACTF128 $1, Y7, (BX)(R11*1)")
	if two {
		p("ADDQ %d(SP), R9", tR)
		p("ADDQ %d(SP), DI", tS)
	} else {
		p("LEAQ (BX)(AX*4), R9")
		p("LEAQ (DI)(R8*8), DI")
	}
	p("DECQ R10")
	p("JNZ  a2%s_group", n)
	label("a2" + n + "_done")
	p("VZEROUPPER")
	p("RET")
}

// q8PFGroups is how many groups ahead q8_0's AVX-VNNI kernels (two, twoStream) prefetch in
// place of PFGROUPS2: 4, 16 rows of each stream (2.2 KiB at 128 values), where PFGROUPS2's
// 8 are 4.4 KiB. Scratch flavours of avx2ScoresQ80OneVNNI on an Intel Xeon (kvq harness, 96
// MiB of q8_0 keys on 2 MiB pages, five passes, three runs, load ~15, min ns a row streamed):
// 8 groups 9.96–10.41, 4 groups 9.16–9.63, 6 groups 9.36–9.91, 12 groups 10.03–10.98; in cache
// the same. attn's TestDecodeBreakdown (five alternations with 8 groups, load ~15–18, min ns a
// row): scores 10.21–10.81 → 9.50–10.16, the whole step 24.34–25.93 → 23.82–25.54. The values
// kernels read a whole tile at its start (the first prepass), so their prefetches stay a tile
// ahead: q4_0's 8-bit AVX-VNNI kernel with them 1152 or 2304 bytes nearer took 8.84–9.60 and
// 9.14–9.86 ns a row streamed against 8.41–8.61, q8_0's int16 one 2176 or 4352 nearer
// 13.50–15.74 and 15.31–18.47 against 14.51–15.15 (kvq harness, 2 MiB pages, load ~15).
const q8PFGroups = 4

// rowsB sets BX, the rows of lanes 4..7, from CX: 4 rows on, or where two the second
// stream's (H·rb, at tH(SP)).
func rowsB(two bool, tH int) {
	if two {
		p("MOVQ CX, BX")
		p("ADDQ %d(SP), BX", tH)
		return
	}
	p("LEAQ (CX)(R8*4), BX")
}

// twoMin is the fewest groups of eight rows (R10) a call of an AVX-VNNI kernel takes in two
// streams (twoStream): 1024 rows, so a paged cache's runs of a page (kvcache's PageCells, 64
// rows) keep one.
const twoMin = 128

// twoStream writes the kernels' stream offsets (frame words tH, tS, tO, tR: the
// second stream's rows from the first's, H·rb; a group's step through the rows; the second
// stream's scores from the first's, H·ostride; a group's step through the scores). With four
// queries a row (ostride ≥ 16: a row's scores do not spill into the next row's) and at least
// twoMin groups, a group's rows 0..3 come from the first half of the call's rows and its rows
// 4..7 from the second, H = 4·groups rows on, a group stepping four rows: each stream's row
// loads then ascend, where a group of eight adjacent rows read its rows in the order 0, 4, 1,
// 5, 2, 6, 3, 7 (rows m and 4+m into one register). Otherwise H is 4 rows and a group steps
// eight, the one stream of before. Every row's score is the same as in one stream (a lane's
// work depends only on its row), bit for bit.
//
// Measured on an Intel Xeon (Sapphire/Emerald Rapids class, KVM, 2 vCPUs shared with other
// jobs, load 5–8; KVLAB_NO_AVX512, so the AVX-VNNI kernels): attn's TestDecodeBreakdown (131072
// cells, 32 heads on 8, d 128, one thread; four alternations of main's test binary and this
// one, each run's minimum, ns a row) scores q4_0 6.77–7.25 → 5.62–6.04, q4_1 7.89–8.29 →
// 6.02–6.65, q5_0 9.55–10.03 → 7.44–8.65, iq4_nl 6.80–7.11 → 5.91–6.33; the whole step q4_0
// 14.82–16.77 → 13.91–14.92, q4_1 17.22–18.09 → 15.22–17.09, q5_0 21.00–22.81 → 19.13–21.21,
// iq4_nl 17.76–18.66 → 16.72–17.81. A scratch prototype of q4_0's (kvq harness, 96 MiB of keys
// on 2 MiB pages, three runs, min ns a row): streamed 7.89–8.38 → 6.94–7.31, in cache 4.88–5.07
// → 5.02–5.24 (the second stream's prefetches and frame loads). In the decode the rows are a
// work item's chunk (16384 rows at this shape), so the streams lie 8192 rows apart.
//
// The plain AVX2 kernels (Zen 2 and 3, Intel before Alder Lake; here KVLAB_NO_AVX512 and
// KVLAB_NO_AVXVNNI) take the two streams too, q8_0's without its PREFETCHT1 (q8T1), as the
// AVX-VNNI ones do: the same operations a group but the frame loads of the offsets, only the
// order of the rows' loads and prefetches changed, every score bit for bit (TestAVX2IntScores
// runs both forms past twoMin). On the Intel Xeon (TestDecodeBreakdown as above, KVLAB_NO_AVX512
// and KVLAB_NO_AVXVNNI, four and five alternations of main's binary and this one, load 5–7, min
// ns a row): scores q4_0 8.32–8.40 → 7.47–7.80, q4_1 8.96–9.23 → 7.94–8.16, q8_0 14.43–15.30 →
// 12.45–13.35, q5_0 10.39–11.01 → 9.11–9.94, q5_1 11.45–12.30 → 10.42–11.35, iq4_nl (its
// multiplies bound it: 12 ns a row in cache too) 11.03–12.39 → 11.04–12.41; the whole step q4_0
// 21.08–22.39 → 20.41–21.18, q4_1 21.87–23.24 → 21.16–21.55, q8_0 30.58–32.13 → 27.54–30.56,
// q5_0 25.80–27.34 → 24.31–25.81. avx2ScoresQ80OneRuns (gen_runs.go) prefetches the next runs
// for both streams, as avx2ScoresQ80OneVNNIRuns does. Their prefetch distance swept in one
// binary (a scratch build reading PFGROUPS2 and q8PFGroups from memory; four rounds, load 3–5,
// scores min ns a row) at 4/2, 8/4 (kept), 12/6 and 16/8 groups: q4_0 7.10–7.63, 6.52–7.66,
// 6.84–7.30, 6.86–7.40; q8_0 12.27–13.62, 11.49–12.46, 11.21–12.31, 11.72–12.89; q4_1 and q5_0
// alike: within the noise.
//
// q8_0's kernel at one-byte digits (avx2ScoresQ80OneVNNI) takes two streams too, without the
// PREFETCHT1 q8T1 beyond its PREFETCHT0s (its runs flavour keeps the one of the run after
// next, for both streams). Scratch flavours alternated in one process (kvq harness, 96 MiB of
// q8_0 keys on 2 MiB pages, five passes, six runs, load ~10, min ns a row streamed): one stream
// as before 11.08–12.07; two streams with the PREFETCHT1 of both 10.63–11.05, of the first
// only 10.13–11.16, of neither 9.95–10.87; PREFETCHT0 16 groups ahead in place of PFGROUPS2,
// 10.67–11.67 with the PREFETCHT1s and 10.47–11.45 without. In cache all 5.7–6.2. In the
// decode (TestDecodeBreakdown as above, five alternations, load ~11): scores 11.14–12.20 →
// 9.23–10.66, the whole step 25.21–27.22 → 22.38–24.94. A paged cache (kvcache's
// TestPagedBreakdown, KVLAB_NO_AVX512, five alternations, load 13–17: runs of a page keep one
// stream) moved within the noise: q8_0's paged scores 3.35–3.64 → 3.26–3.72 ms, q4_0's
// 3.02–3.63 → 3.20–3.46, where its contiguous scores went 2.84–3.05 → 2.57–2.79 and
// 2.37–2.60 → 1.79–1.93.
func twoStream(n string, tH, tS, tO, tR int) {
	p("// One stream: H = 4 rows, a group steps 8 (twoStream).")
	p("MOVQ R8, AX")
	p("SHLQ $2, AX")
	p("MOVQ AX, %d(SP)", tH)
	p("SHLQ $1, AX")
	p("MOVQ AX, %d(SP)", tS)
	p("MOVQ ostride+64(FP), AX")
	p("SHLQ $2, AX")
	p("MOVQ AX, %d(SP)", tO)
	p("SHLQ $1, AX")
	p("MOVQ AX, %d(SP)", tR)
	p("CMPQ ostride+64(FP), $16")
	p("JLT  a2%s_one", n)
	p("CMPQ R10, $%d", twoMin)
	p("JLT  a2%s_one", n)
	p("// Two streams: H = 4·groups rows, a group steps 4.")
	p("MOVQ R10, AX")
	p("SHLQ $2, AX")
	p("IMULQ R8, AX")
	p("MOVQ AX, %d(SP)", tH)
	p("MOVQ R8, AX")
	p("SHLQ $2, AX")
	p("MOVQ AX, %d(SP)", tS)
	p("MOVQ R10, AX")
	p("SHLQ $2, AX")
	p("IMULQ ostride+64(FP), AX")
	p("MOVQ AX, %d(SP)", tO)
	p("MOVQ ostride+64(FP), AX")
	p("SHLQ $2, AX")
	p("MOVQ AX, %d(SP)", tR)
	label("a2" + n + "_one")
}

const header = `// Code generated by gen_avx2int.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// The AVX2 integer scores kernels of q4_0, q4_1, q5_0, q5_1, q8_0 and iq4_nl: see gen_avx2int.go for the
// work and multi_avx2int_amd64.go for the contract.

// PFGROUPS2 is how many groups of eight rows ahead the kernels prefetch: 8 (4.5 KiB of
// q4_0 rows, 8.5 KiB of q8_0's at 128 values) where 16 was. Measured on AMD Zen 4, plain AVX2
// (TestAVX2IntBaseSpeed, thread CPU, interleaved with the kernels at 16, two runs, median ns a
// row of 128 values and 4 queries, streamed past the caches): q8_0 13.82 → 12.95 and 13.44 →
// 12.66, iq4_nl 10.81 → 10.50 and 10.59 → 10.45, q4_0 7.85 → 7.62 and 7.70 → 7.34, q4_1 9.07
// → 8.78 and 8.71 → 8.58, q5_1 12.64 → 11.94 and 11.82 → 11.52, q5_0 the same; in cache the
// same. 4 measured about as 8, 32 worse than 16.
#define PFGROUPS2 8
`

// digits writes avx2Digits, vnniDigitsAVX512 (multi_vnni_amd64.s) on 256-bit registers: the
// same float32 operations in the same order, so its digits and aux words are vnniDigits' bit
// for bit (the block maximum is taken on the magnitudes' bits, whose order is the floats' for
// finite non-negative values). It reports false, leaving the rest undone, at a non-finite
// value: the caller then runs vnniDigits, which says what such a query scores.
const digits = `
// func avx2Digits(dig *byte, aux *uint32, q *float32, d, nb, nd int) bool
TEXT ·avx2Digits(SB), NOSPLIT, $0-49
	MOVQ dig+0(FP), DI
	MOVQ aux+8(FP), DX
	MOVQ q+16(FP), SI
	MOVQ d+24(FP), R8
	SHLQ $2, R8                // bytes between queries
	MOVQ nb+32(FP), R9
	MOVQ nd+40(FP), R12
	MOVQ R12, R13
	SHLQ $5, R13               // bytes of one query's digits in a block
	MOVL $127, AX              // qmax: vnniQMax1 or vnniQMax2
	CMPQ R12, $1
	JEQ  a2dig_qmax
	MOVL $32639, AX
a2dig_qmax:
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
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
a2dig_blk:
	VPXOR Y6, Y6, Y6           // aux words a query leaves alone are 0
	VMOVDQU Y6, (DX)
	VMOVDQU Y6, 32(DX)
	VMOVDQU Y6, 64(DX)
	XORQ R10, R10              // query
	MOVQ SI, BX
a2dig_q:
	VMOVUPS (BX), Y0
	VMOVUPS 32(BX), Y1
	VMOVUPS 64(BX), Y2
	VMOVUPS 96(BX), Y3
	VPAND Y12, Y0, Y4
	VPAND Y12, Y1, Y5
	VPAND Y12, Y2, Y6
	VPAND Y12, Y3, Y7
	VPMAXSD Y5, Y4, Y4
	VPMAXSD Y7, Y6, Y6
	VPMAXSD Y6, Y4, Y4
	VPCMPGTD Y11, Y4, Y5       // a NaN or an infinity
	VPTEST Y5, Y5
	JNZ  a2dig_nonfinite
	VEXTRACTI128 $1, Y4, X5
	VPMAXSD X5, X4, X4
	VPSHUFD $0x4E, X4, X5
	VPMAXSD X5, X4, X4
	VPSHUFD $0xB1, X4, X5
	VPMAXSD X5, X4, X4         // m in every lane
	VDIVSS X13, X4, X5         // s = m / qmax
	VUCOMISS X10, X5
	JAE  a2dig_scaled          // s is a normal number
	// s is 0 or not normal: no digits, and the aux words stay 0.
	VPXOR Y6, Y6, Y6
	VMOVDQU Y6, (DI)
	CMPQ R12, $1
	JEQ  a2dig_next
	VMOVDQU Y6, 32(DI)
	JMP  a2dig_next
a2dig_scaled:
	VMOVSS X5, (DX)(R10*4)
	VDIVSS X4, X13, X5         // inv = qmax / m
	VBROADCASTSS X5, Y5
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y1, Y1
	VMULPS Y5, Y2, Y2
	VMULPS Y5, Y3, Y3
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
	VPADDD Y1, Y0, Y4          // ΣQ
	VPADDD Y3, Y2, Y5
	VPADDD Y5, Y4, Y4
	SUMD(Y4, X4, X5)
	VMOVD AX, X7
	VCVTDQ2PS X7, X7
	VMOVSS X7, 80(DX)(R10*4)   // float32(ΣQ)
	MOVL AX, CX
	IMULL $-8, CX
	MOVL CX, 16(DX)(R10*4)
	MOVL AX, CX
	IMULL $-16, CX
	MOVL CX, 32(DX)(R10*4)
	CMPQ R12, $1
	JNE  a2dig_two
	PACKB(Y0, Y1, Y2, Y3)
	VMOVDQU Y0, (DI)
	IMULL $-128, AX
	MOVL AX, 48(DX)(R10*4)
	JMP  a2dig_next
a2dig_two:
	// lo = (v + 128) mod 256 − 128 into Y4..Y7, hi = (v − lo) >> 8 in place.
	SPLIT2(Y0, Y4)
	SPLIT2(Y1, Y5)
	SPLIT2(Y2, Y6)
	SPLIT2(Y3, Y7)
	VPADDD Y1, Y0, Y8
	VPADDD Y3, Y2, Y9
	VPADDD Y9, Y8, Y8
	SUMD(Y8, X8, X9)
	IMULL $-128, AX
	MOVL AX, 48(DX)(R10*8)
	VPADDD Y5, Y4, Y8
	VPADDD Y7, Y6, Y9
	VPADDD Y9, Y8, Y8
	SUMD(Y8, X8, X9)
	IMULL $-128, AX
	MOVL AX, 52(DX)(R10*8)
	PACKB(Y0, Y1, Y2, Y3)
	VMOVDQU Y0, (DI)
	PACKB(Y4, Y5, Y6, Y7)
	VMOVDQU Y4, 32(DI)
a2dig_next:
	ADDQ R13, DI
	ADDQ R8, BX
	INCQ R10
	CMPQ R10, $4
	JLT  a2dig_q
	ADDQ $128, SI              // next block of every query
	ADDQ $96, DX
	DECQ R9
	JNZ  a2dig_blk
	MOVB $1, ret+48(FP)
	VZEROUPPER
	RET
a2dig_nonfinite:
	MOVB $0, ret+48(FP)
	VZEROUPPER
	RET

// func avx2ExpandU8(bq *byte, dig *byte, nw int)
// Writes each of the nw digit dwords at dig as 32 bytes at bq (eight copies): the u8 route's
// layout (avx2Expand).
TEXT ·avx2ExpandU8(SB), NOSPLIT, $0-24
	MOVQ bq+0(FP), DI
	MOVQ dig+8(FP), SI
	MOVQ nw+16(FP), CX
	SHRQ $2, CX
	JZ   a2xu_done
a2xu_loop:
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
	DECQ CX
	JNZ  a2xu_loop
a2xu_done:
	VZEROUPPER
	RET

// func avx2ExpandS16(bq *byte, dig *byte, nb, nd int)
// Writes the digits of nb blocks (nd a value) in the s16 route's layout (avx2Expand): per
// block and query the 32 values Q as int16 (2⁸·hi + lo at two digits, |Q| ≤ 32639), each
// quadruple reordered to Q4k, Q4k+2, Q4k+1, Q4k+3, so dword 2k holds the even pair and
// dword 2k+1 the odd one; each dword is then written eight times.
TEXT ·avx2ExpandS16(SB), NOSPLIT, $64-32
	MOVQ bq+0(FP), DI
	MOVQ dig+8(FP), SI
	MOVQ nb+16(FP), R9
	MOVQ nd+24(FP), R12
	VMOVDQU ·avx2EOShuf(SB), Y5
a2xs_blk:
	XORQ R10, R10              // query
a2xs_q:
	CMPQ R12, $1
	JNE  a2xs_two
	VPMOVSXBW (SI), Y0
	VPMOVSXBW 16(SI), Y1
	ADDQ $32, SI
	JMP  a2xs_shuf
a2xs_two:
	VPMOVSXBW (SI), Y0
	VPMOVSXBW 16(SI), Y1
	VPMOVSXBW 32(SI), Y2
	VPMOVSXBW 48(SI), Y3
	VPSLLW $8, Y0, Y0
	VPSLLW $8, Y1, Y1
	VPADDW Y2, Y0, Y0
	VPADDW Y3, Y1, Y1
	ADDQ $64, SI
a2xs_shuf:
	VPSHUFB Y5, Y0, Y0
	VPSHUFB Y5, Y1, Y1
	VMOVDQU Y0, (SP)
	VMOVDQU Y1, 32(SP)
	MOVQ R10, AX
	SHLQ $6, AX
	ADDQ DI, AX                // (k·4 + h)·64 at k = 0
	XORQ CX, CX
a2xs_k:
	VPBROADCASTD (SP)(CX*8), Y2
	VPBROADCASTD 4(SP)(CX*8), Y3
	VMOVDQU Y2, (AX)
	VMOVDQU Y3, 32(AX)
	ADDQ $256, AX
	INCQ CX
	CMPQ CX, $8
	JLT  a2xs_k
	INCQ R10
	CMPQ R10, $4
	JLT  a2xs_q
	ADDQ $2048, DI
	DECQ R9
	JNZ  a2xs_blk
	VZEROUPPER
	RET
`

// macros are the digits' helpers.
const macros = `
// SUMD leaves the sum of the eight int32 lanes of y (x its low half; t a temporary) in AX.
#define SUMD(y, x, t) \
	VEXTRACTI128 $1, y, t; \
	VPADDD t, x, x; \
	VPSHUFD $0x4E, x, t; \
	VPADDD t, x, x; \
	VPSHUFD $0xB1, x, t; \
	VPADDD t, x, x; \
	VMOVD x, AX

// PACKB packs the 32 int32 of a, b, c, d (each within −128..127) into the bytes of a, in order
// (clobbers b and c).
#define PACKB(a, b, c, d) \
	VPACKSSDW b, a, a; \
	VPACKSSDW d, c, c; \
	VPACKSSWB c, a, a; \
	VMOVDQU ·avx2PackPerm(SB), b; \
	VPERMD a, b, a

// SPLIT2 splits the int32 v (|v| ≤ 32639) into its low digit lo = (v + 128) mod 256 − 128
// and its high digit, left in v: (v − lo) >> 8.
#define SPLIT2(v, lo) \
	VPADDD ·avx2C128(SB), v, lo; \
	VPAND ·avx2C255(SB), lo, lo; \
	VPSUBD ·avx2C128(SB), lo, lo; \
	VPSUBD lo, v, v; \
	VPSRAD $8, v, v
`

func main() {
	out.WriteString(header)
	out.WriteString(macros)
	for _, v := range []bool{false, true} {
		vnni = v
		for _, k := range kerns {
			if k.hb && vnni && !k.wide {
				continue // plain AVX2 only
			}
			kernel(k) // Q80One's AVX-VNNI form: q8VNNIOneBlock

		}
	}
	out.WriteString(digits)
	write("multi_avx2int_amd64.s")
	out.Reset()
	out.WriteString(strings.Replace(strings.Replace(header, "!purego", "!purego && kvlabevex", 1),
		"integer scores kernels of", "integer scores kernels' AVX-VNNI forms in EVEX (the kvlabevex build's twins) of", 1))
	vnni, evex = true, true
	for _, k := range kerns {
		if !k.hb {
			kernel(k)
		}
	}
	s16Q8 = true
	kernel(kerns[2])
	vnni, evex, s16Q8, base = false, false, false, true
	for _, k := range kerns {
		if !k.hb {
			kernel(k)
		}
	}
	write("multi_avx2int_evex_amd64.s")
}

func write(name string) {
	s := strings.ReplaceAll(out.String(), "\n\t\n", "\n\n")
	if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// q5Fifth ORs the fifth bits into q5_0's and q5_1's code vectors Y0..Y7 from the rows' qh dwords
// in Y12 (u8Block): per code vector a byte of qh (or of a copy with each byte's low nibble
// shifted up) replicated (VPSHUFB), its bit kept (VPAND), VPMINUB with 16 and VPOR.
func q5Fifth(k kern) {
	p("VPSLLW $4, Y12, Y15")
	// The plain kernels keep the 16s in Y14 (one temporary, Y13): eight memory operands
	// fewer a block. Measured on AMD Zen 4 (TestAVX2IntBaseSpeed, kvlabevex build, three
	// runs each way alternated, medians): in cache q5_0 8.05–8.10 → 7.68–7.73 ns a row, q5_1
	// 9.00–9.02 → 8.74–8.79; streamed the same against the baseline of the same run. The
	// dots' int16 ones in a register too (the scales then read as float32 from the stage)
	// measured within the noise of that (q5_0 7.62–7.66, q5_1 8.65 in cache); not kept.
	c10 := "·avx2C10(SB)"
	if qhStage(k) >= 0 {
		p("VMOVDQU ·avx2C10(SB), Y14")
		c10 = "Y14"
	}
	for b := 0; b < 4; b++ {
		for c := 2 * b; c < 2*b+2; c++ {
			src, t := 15, 13 // code vector 2b: bits 0..3 of byte b, moved up
			if c%2 == 1 {
				src, t = 12, 14
			}
			if qhStage(k) >= 0 {
				t = 13 // Y14 holds the 16s
			}
			p("VPSHUFB ·avx2Rep+%d(SB), Y%d, Y%d", 32*b, src, t)
			p("VPAND ·avx2BitHi(SB), Y%d, Y%d", t, t)
			p("VPMINUB %s, Y%d, Y%d", c10, t, t)
			p("VPOR Y%d, Y%d, Y%d", t, c, c)
		}
	}
}

// swapQH reports q5SwapFifth for k: q5_0's and q5_1's plain kernels (staged qh), not the
// baseline.
func swapQH(k kern) bool { return qhStage(k) >= 0 && !base }

// q5SwapFifth ORs the fifth bits into the code vectors Y0..Y7 from the rows' qh dwords in Y12
// (lane l: row l's) as q5Fifth does, without its byte replications (VPSHUFB). Code vector k
// takes bits 4k..4k+3 of qh, bit 4k + j for its byte j: at bit index [k2 k1 k0 j1 j0] all four
// sit in byte k/2. The stage holds qh transposed (q5SwapQH), each bit at [j1 j0 k0 k2 k1]: in
// byte j, at 4 + k/2 for odd k, at k/2 for even k, which a copy shifted up by 4 moves to 4 + k/2
// too. So a code vector takes three operations (VPAND with 2^(4+k/2) in each byte, VPMINUB with
// 16, VPOR) where q5Fifth took four and a shuffle; the stage's next block is transposed here,
// between its fifth bits and its products, a block ahead of its use (the group's first block at
// its last; at one block a row, the kernel's body does it after staging). Y14 holds the 16s,
// Y13 and Y15 are temporaries.
//
// Measured on AMD Zen 4, plain AVX2 (KVLAB_NO_AVX512, load 11–15, so thread CPU time min and
// median; TestAVX2IntBaseSpeed interleaved with q5Fifth's kernels, four runs, ns a row of 128
// values and 4 queries; TestDecodeBreakdown five runs alternated with main's binary, 131072
// cells, scores ns a row, min of each run): q5_1 in cache 8.56–8.62 → 8.34–8.43, streamed
// about 0.1–0.4 less, decode scores 9.02–9.43 (median 9.18) → 8.83–9.19 (median 8.94); q5_0
// in cache 7.52–7.66 → 7.50–7.55, streamed 0.3–0.5 less, decode 7.85–8.12 (median 7.88) →
// 7.74–7.98 (7.89), no change. The shuffles had cost more than their count: q5Fifth without
// its eight replications (wrong scores, timing only) took 7.08–7.11 ns in cache for q5_0,
// 8.07–8.17 for q5_1 (without any fifth bits 6.1–6.5 and 7.1–7.4), and Zen 4 runs VPSHUFB, VINSERTI128 and
// VPERM2I128 on two pipes of which one also multiplies (a loop of 32 VPMADDWD and 32 VPSHUFB
// takes 21.4 cycles where either alone takes 16), VPAND, VPOR, VPMINUB, shifts, blends and
// VPUNPCK* beside the multiplies. The transposes' two delta swaps cost about what the
// replications did when placed at the end of the block, just ahead of their use (q5_0 8.04–8.27
// in cache, a chain of 12 operations the next block's fifth bits waited on). Also measured:
// the replications halved (one a qh byte, the even code vector's bit moved up by VPSLLW) about
// as fast in cache (q5_0 7.38–7.49, q5_1 8.43–8.49 against 7.52–7.64 and 8.55–8.68) but
// streamed no faster than q5Fifth; one replication a qh byte with the even code vector's 16s
// from a VPSHUFB table, within the noise of q5Fifth.
func q5SwapFifth(k kern) {
	p("VPSLLD $4, Y12, Y15")
	p("VMOVDQU ·avx2C10(SB), Y14")
	for c := 0; c < 8; c++ {
		src := 15
		if c%2 == 1 {
			src = 12
		}
		p("VPAND ·avx2BitPos+%d(SB), Y%d, Y13", 32*(c/2), src)
		p("VPMINUB Y14, Y13, Y13")
		p("VPOR Y13, Y%d, Y%d", c, c)
	}
	// The next block's qh transposed in the stage (the group's first at the group's last
	// block); not at one block a row, where that is this block's, read above and staged for
	// the next group later in the body.
	p("CMPQ nb+24(FP), $1")
	p("JEQ  a2%s_swapnext", kname)
	p("LEAQ %d(R13), R14", kstride)
	p("CMPQ R11, $1")
	p("CMOVQEQ stage+16(FP), R14")
	q5SwapQH(qhStage(k))
	label("a2" + kname + "_swapnext")
}

// q5SwapQH transposes the eight rows' qh dwords at qhs(R14) in place for q5SwapFifth, each
// bit at index [k2 k1 k0 j1 j0] to [j1 j0 k0 k2 k1]: two delta swaps, index bits 4 and 1
// (distance 14), then 3 and 0 (distance 7). Temporaries Y12, Y13.
func q5SwapQH(qhs int) {
	p("VMOVDQU %d(R14), Y12", qhs)
	for _, sw := range []struct {
		d    int
		mask string
	}{{14, "·avx2QHSwap14(SB)"}, {7, "·avx2QHSwap7(SB)"}} {
		p("VPSRLD $%d, Y12, Y13", sw.d)
		p("VPXOR Y12, Y13, Y13")
		p("VPAND %s, Y13, Y13", sw.mask)
		p("VPXOR Y13, Y12, Y12")
		p("VPSLLD $%d, Y13, Y13", sw.d)
		p("VPXOR Y13, Y12, Y12")
	}
	p("VMOVDQU Y12, %d(R14)", qhs)
}
