//go:build ignore

// gen_intacc writes multi_intacc_amd64.s: the integer accumulate (value) kernels of the block
// formats for AVX-512 VNNI CPUs (contract in multi_intacc_amd64.go). Per tile of ≤ 64 rows and
// per 32-value block, a prepass forms the weights w·d (weight × block scale, per row and
// accumulator), quantizes them to int16 with one scale per accumulator and pairs them row by row;
// the row loop then takes rows in pairs, widens the two rows' codes to interleaved words and adds
// them into int32 accumulators with VPDPWSSD (the pair's two weights broadcast as one dword); the
// accumulators are converted and scaled into the float32 ones once per tile and block.
//
// Each accumulator's weight dword is broadcast into a register once a row pair (VPBROADCASTD)
// and read by its two VPDPWSSD, not broadcast from memory by each: on AMD Zen 5 the row loop
// with memory-broadcast VPDPWSSD took ~17% longer for q4_0, q8_0 and q4_1 and ~4% for iq4_nl
// (in cache, thread CPU time, interleaved with the previous kernels). q5_0 and q5_1, whose
// decode adds scalar and mask-register work, ran ~2–5% faster with memory broadcasts and keep
// them (bcst). On Intel
// cores with AVX-512 (the choice not measured there) 512-bit VPDPWSSD issues on port 0 by the
// published instruction tables (Ice Lake, Sapphire Rapids; measured on a Sapphire Rapids class
// Xeon: two a cycle on ports 0 and 5, latency 5–6, multi_intacc_amd64.go's intAcc), its
// broadcast memory operand a load µop (ports 2/3) micro-fused with it, and a broadcast
// VPBROADCASTD from memory is a load µop alone: the same eight multiply µops a row pair, half the
// loads, so the change costs nothing there.
//
// q4_0's, q4_1's and q8_0's row loops take two row pairs a step, the second pair's products into
// a second set of sums (set2) added into the first after the loop: on Zen 5 ~3–5% less time for
// those three (in cache and streamed past the caches, thread CPU time, interleaved), nothing
// for q5_0, q5_1 and iq4_nl (up to ~4% more streamed), which keep one pair a step. The sums
// are int32 and exact, so the split changes no result. On Intel it changes no port's count. By
// the instruction tables a step's VPDPWSSD need 8 cycles on port 0 a pair, more than the
// 5-cycle latency each sum's chain adds; measured on a Sapphire Rapids class Xeon they issue
// two a cycle (ports 0 and 5, latency 5–6: multi_intacc_amd64.go's intAcc), a pair's 8 in 4
// cycles, less than that latency, so there the second set of sums is what keeps them issuing.
//
// The row-pair loops prefetch the tile after next, a line's worth each step: a tile's
// prefetches are spread over its own block loops, so aiming them at the next tile left that
// tile's last lines almost no lead (whole one-thread decodes at 131072 cells of 8 heads ran ~6% faster for q4_0,
// ~4% for q5_1 two tiles ahead; further ahead gained nothing more). A step advances 2·bs
// bytes, or a line where that is more (q8_0: pfRepl), so every line of the tile is prefetched.
// The nibble formats' kernels are written twice: with the decoders above, and for CPUs with
// AVX-512 VBMI with vdec, which interleaves the row pair's bytes into words with one two-table
// byte permute (and looks iq4_nl's levels up with VPERMB, no mask first), the kernel's name
// taking a V (multi_intacc_amd64.go has the measurements and the Intel reasoning). With that
// decoder q5_0's, q5_1's and iq4_nl's row loops gain from two row pairs a step too (vtwo; Zen 5,
// in cache and streamed, thread CPU time, interleaved with one pair a step: q5_0 and q5_1 ~7%
// less time, iq4_nl ~2%), the weights then broadcast into registers (with one pair a step,
// memory and register broadcasts measured alike); on Intel, as above, the split changes no
// port's count.
//
// On AMD Zen 4 (EPYC Genoa) these kernels are bound by vector operations around the VPDPWSSD:
// 4096 rows of 128 values, four accumulators, in cache, thread CPU time, median of 41 calls
// interleaved with ablated copies, ns a row: q4_0 7.0 (the VPDPWSSD and loads alone 4.6–4.7,
// the codes' decode ~0.45, the first prepass ~1.3, the second ~0.65), q4_1 8.0 (prepasses
// 2.2 + 0.65), q5_0 8.35 (decode with the fifth bits ~1.6, prepasses 1.5 + 0.7), q5_1 9.3,
// iq4_nl 7.4. The prepasses ran alone, beside no multiplies: the first now runs in the
// previous tile's row loops where a row is one quad (p1Pipe; the formats with pipe). Tried
// there and not paying (each within ±1%): the second prepass in the first block's row loop (its
// multiplies and conversions cost as much there), the nibbles' mask or shift dropped
// (Σ W·b − 16·Σ W·hi), the tile maximum by integer max in place of VRANGEPS. The weights
// broadcast by the VPDPWSSD from memory took ~1–2% less time there, ~17% more on Zen 5: kept.
//
// q4_0's, q4_1's, iq4_nl's, q5_0's and q5_1's kernels are written a third time with 8-bit
// weights (the V8 kernels, w8; contract in multi_intacc_amd64.go's intAcc8): the second
// prepass rounds the weights to int8 (q = 127) and lays four rows' weights into a dword per
// accumulator and block (p2Quads; q4_0's, q4_1's and iq4_nl's by packs, p2QuadsPack), the row
// loop takes rows in quads, four rows' code bytes
// interleaved into dwords by one two-table byte permute (quadDec; q5's fifth bits by
// VPSHUFBITQMB masks, quadDec5), and each accumulator's two VPDPBUSD a quad read the weight
// dword by memory broadcast: 8 multiplies a quad and block where the int16 kernels issue 16.
// Two quads a step (two sets of sums); the first prepass pipelined into the row loops where
// the VBMI kernels pipeline it (p1Pipe), a row of the next tile each quad (q4_0's and iq4_nl's
// with a quad's rows in lanes, a row quad of the next tile each two quads: rlPipe; q4_1's so
// too, rlPipeMin). q5_1's (w8u) rounds
// the weights to unsigned bytes (q = 255), the VPDPBUSD's unsigned operand broadcast into a
// register and the codes its signed one, a tile's block quad with a negative weight taking a
// second pass (p2QuadsU, pass2U); on AMD Zen 4 (TestIntAcc8Speed, thread CPU time, median ns a
// row, int16 VBMI kernel → this one) 9.2 → 7.9 in cache, 9.8–10.1 → 8.9–9.3 streamed. Tried
// and not kept: its first prepass pipelined into the row loops (p1Pipe, the chains in the frame,
// both fifth-bit masks in K6 in turn so that K7 is free for the fourth block's min): 8.5 in
// cache, no gain streamed; q5_0's kernel the same way (w8u): 12.7 in cache, as q5_0's scale d
// takes either sign, so that most tiles hold a negative weight and take the second pass.
// Where q5_1's kernel spends its time (in cache, as above, before p2QuadsU's packs, alternated
// with copies of the kernel with a piece removed, not working ones; ns a row, median): whole
// 7.50, without the fifth bits' loads, permute, masks and adds 6.46, without its first prepass
// loop (formed alone before the row loops, not pipelined) 5.10 (streamed 2.2 less too), without
// prefetches 7.47 (streamed ~0.5 more); q4_1's kernel beside it 5.73. Of the first prepass,
// VRANGEPS took ~0.4, the mins' extraction, conversion and FMA ~0.7, the Σ w·d adds ~0.27, the
// stores ~0.1.
//
// q5_0's kernel with 8-bit weights (w8sgn) therefore takes |W| as the unsigned operand and folds
// the sign of each row's block into its codes: V = s·W with s accumulator 0's sign of w·d (the
// sign of d for softmax weights), S and P per quad and block from the second prepass
// (p2QuadsS), and the codes split as c XOR S plus P where the fifth bit is set (sgnCodes: the
// same vector operations as quadDec5's split), ~c = −c − 1 for a negative row, the −1's taken
// back through the offset sum; the second pass only where a weight's sign differs from its
// block's s. Its sums are intAccRef's with q = 255 bit for bit (TestIntAcc8Matches): the same
// weights as the w8u kernel it replaces, and as q5_1's. On AMD Zen 4 (TestIntAcc8Speed's shape,
// 61 calls alternated with the int16 VBMI kernel, min/median ns a row, three runs; a shared
// machine at load 7–8): 7.88–7.90/7.90–7.94 → 6.73–7.38/7.35–7.42 in cache, streamed
// 8.4–9.0/9.2–9.7 → 8.5–9.0/8.8–9.5: the gain in cache, none clear streamed. Measured on the way
// (same shape): the sign masks by scalar PEXTQ, PDEPQ and multiplies a quad and block cost
// 0.5 ns a row (the second prepass runs alone), a masked VPSUBB from zero of each code vector
// 0.4. Whether multi_intacc_amd64.go's q5W8 chooses it: its comment.
//
// Run with `go generate ./native/kvq`.
package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"unicode"
)

// format is one block format's pieces. dec(a) widens the codes of the block at a (row a) and
// at a+R9 (row b, R9 = 0 for a lone last row) into Z23 and Z24: dword k of Z23 holds row a's code
// of value k in its low word and row b's in its high word, Z24 the same for values 16+k (or in
// the order perm says). Scratch: X20..X22, AX, K1, K2.
type format struct {
	name string
	doc  string
	bs   int // bytes per block
	// off is the integer subtracted from every code (q4_0's 8, q5_0's 16), applied once per
	// tile and block as off·ΣW.
	off int
	// offShift is log2(off).
	offShift int
	// min reports a block min m (f16 after d): Σ_j w_j·m_j + off·Σ_j w_j·d_j is added per tile
	// and block in f32 (the codes centred by off, so each weight's rounding meets |c − off|).
	min bool
	// qh: the block holds q5's fifth bits (the decoder wants DX = 0x5555555555555555).
	qh bool
	// bcst: the weights are broadcast from memory by each VPDPWSSD, not into registers once.
	bcst bool
	// two: the row-pair loop takes two pairs a step into two sets of sums (loop2), else one.
	two bool
	// perm: Z23 holds values 0..7 and 16..23, Z24 8..15 and 24..31 (in-lane byte unpacks).
	perm bool
	// consts loads the decoder's constants (Z19).
	consts string
	dec    func(a string) string
	// vdec is dec for CPUs with AVX-512 VBMI (nil for none): the kernel written with it is named
	// with a V after the format's name (multiAccQ40VINT) and also has Z30 = ·intAccPairIdx.
	vdec func(a string) string
	// vtwo: the VBMI kernel takes two row pairs a step (loop2) with its weights broadcast into
	// registers, whatever two and bcst say for the other.
	vtwo bool
	// pipe: the VBMI kernel (four accumulators; q8_0's, which has no VBMI flavour: its two
	// kernels) forms the next tile's w·d in this tile's row loops (p1Pipe).
	pipe bool
	// w8dec decodes a row quad's codes for the kernel with 8-bit weights (quadDec; nil for
	// none): its name takes V8 (multiAccQ40V8INT, multiAccQ40V8TwoINT).
	w8dec func(a string) string
	// w8u: the kernel with 8-bit weights rounds them to unsigned bytes (q = 255) and takes them
	// as VPDPBUSD's unsigned operand, broadcast into a register, the codes the signed one
	// (p2QuadsU, pass2U).
	w8u bool
	// w8sgn (with w8u): the kernel with 8-bit weights takes the weights' magnitudes as unsigned
	// bytes and the sign of each row's block into its codes (p2QuadsS, sgnCodes), so that a
	// scale d of either sign (q5_0's) needs no second pass.
	w8sgn bool
	// w8raw: the kernel with 8-bit weights multiplies the high nibbles' weights by the whole code
	// bytes, unshifted and unmasked (rawHi).
	w8raw bool
	// w8rl: the kernel with 8-bit weights (four accumulators) forms w·d with a quad's rows in
	// lanes (rlPipe, or rlPipeMin where min; p2RL).
	w8rl bool
	// w8z4: the kernel with 8-bit weights (four accumulators) has a flavour prefetching into L2
	// (PREFETCHT1) for AMD Zen 4, its name with V8Z4.
	w8z4 bool
}

// q40Dec: the two rows' 16 payload bytes interleaved (a0 b0 a1 b1 …) and zero-extended to words
// (one 512-bit widening), then split on the words: the low nibbles by a mask (Z31, 0x000F
// per word), the high ones by a shift (each word holds one byte, so nothing else reaches bits
// 0..3).
func q40Dec(pay int) func(a string) string {
	return func(a string) string {
		return fmt.Sprintf(`VMOVDQU8 %[2]d(%[1]s), X20
	VPUNPCKLBW %[2]d(%[1]s)(R9*1), X20, X21
	VPUNPCKHBW %[2]d(%[1]s)(R9*1), X20, X22
	VINSERTI32X4 $1, X22, Y21, Y21
	VPMOVZXBW Y21, Z22
	VPANDD Z31, Z22, Z23
	VPSRLW $4, Z22, Z24`, a, pay)
	}
}

// q80Dec: the two rows' 32 code bytes interleaved within 128-bit lanes, sign-extended.
func q80Dec(a string) string {
	return fmt.Sprintf(`VMOVDQU8 2(%[1]s), Y20
	VPUNPCKLBW 2(%[1]s)(R9*1), Y20, Y21
	VPUNPCKHBW 2(%[1]s)(R9*1), Y20, Y22
	VPMOVSXBW Y21, Z23
	VPMOVSXBW Y22, Z24`, a)
}

// q40DecVBMI is q40Dec with the two rows' bytes interleaved into words by one two-table byte
// permute (VPERMT2B, AVX-512 VBMI; the index ·intAccPairIdx in Z30): word 2k of the 64 bytes is
// row a's byte k, word 2k+1 row b's, the high bytes taken from a zero byte of row a's register
// (the 16-byte load clears the rest), so the words are q40Dec's Z22 exactly. One shuffle where
// q40Dec has four (two unpacks, an insert and a widening).
func q40DecVBMI(pay int) func(a string) string {
	return func(a string) string {
		return fmt.Sprintf(`VMOVDQU8 %[2]d(%[1]s), X20
	VMOVDQU8 %[2]d(%[1]s)(R9*1), X21
	VPERMT2B Z21, Z30, Z20
	VPANDD Z31, Z20, Z23
	VPSRLW $4, Z20, Z24`, a, pay)
	}
}

// q5DecGF is q5Dec for q5_0's Intel flavour (multiAccQ50VIINT; AVX-512 VBMI and GFNI): the
// row pair's 16 payload bytes broadcast into the 128-bit lanes a, a, b, b (row b's by a
// masked broadcast, K7), their low nibbles (lanes 0 and 2) and high nibbles (lanes 1 and 3)
// moved to bits 0..3 by one GF(2) affine transform (Z31: ·intAccQ5GFMat, a matrix per qword),
// so the 64 bytes hold the codes of values 0..31 of row a then of row b, in qh's bit order: the
// fifth bits are 16 added (Z19, 0x10 bytes) under one 64-bit mask, row a's qh in its low 32
// bits and row b's in its high 32 (K1, one KMOVQ), and two one-table byte permutes with the
// odd bytes zeroed (K6) form q5Dec's words (Z23: values 0..15 of rows a, b, index Z30; Z24:
// 16..31, index Z28, ·intAccQ5GFIdx2, loaded at each block). The same words bit for bit, in
// six operations on ports 0 and 5 where q5Dec with an insert and a one-table VPERMB (this
// flavour's first form, e1f35b6) takes eight (two KMOVD, two
// masked VPADDW, a VPANDD, a VPSRLW, an insert, a VPERMB) and no PDEP.
//
// On the Intel Xeon this was measured on (family 6 model 0xA7 as KVM reports it, 2 vCPUs,
// ~4 GHz; sixteen independent operations a loop, thread CPU time) VPDPWSSD, VPDPBUSD,
// VPMADDWD, VPMADDUBSW, VPADDW (masked), VCVTPS2DQ, VCVTDQ2PS, VRANGEPS and the FMAs zmm issue
// two a cycle (ports 0 and 5: the integer multiplies are not port 0 alone there), VPERMB,
// VPSHUFB, VPUNPCKLDQ, VPSRLW, VGF2P8AFFINEQB, VPSHUFBITQMB, VPTESTMB zmm and KMOVD (from a
// GPR) one a cycle, VPERMT2B and VPERMI2W zmm one every two cycles, VCVTPH2PS ymm→zmm one
// every ~1.2. multiAccQ50VINT there, piece by piece (TestIntAcc8Speed's harness, each piece
// removed from a copy, ns a row in cache against ~7.2–7.9 whole, load 7–11): its 16 VPDPWSSD a
// row ~1.5–2 (~25%), the fifth bits ~0.9 (12%), the VPERMT2B ~0.7 (10%), the pipelined
// prepass ~1.3 (17%), the code loads ~1 (L2), the second prepass, finish and loop the rest (~2):
// no one part dominates, and the 8-bit-weight kernel (multiAccQ50V8INT) took as long as it
// (6.9 against 6.8 in cache), its halved multiplies being cheap here. Tried there and not
// kept (time against the kernel, alternated): the weights broadcast from memory by each
// VPDPWSSD (.BCST) in place of four VPBROADCASTD, ~1% slower; the fifth-bit masks stored by
// a MOVQ and loaded by two KMOVD from memory in place of two KMOVD from a GPR, ~3% slower; the
// scores' PFGROUPS 12 in place of 4, within the noise (streamed, load 7). multiAccQ50VIINT
// piece by piece the same way (TestQ50IntelSpeed, load 14, two runs, ns a row in cache, 6.8
// whole against multiAccQ50VINT's 7.5–7.8 in the same runs): without its 16 VPDPWSSD a row
// 4.7, without its pipelined prepass 5.2–5.4, without q5DecGF's codes (loads, affine, mask,
// add, permutes) 5.0–5.3: the multiplies ~1.8 ns, the codes ~1.6, the prepass ~1.4, the
// weights' loads, the second prepass, the finish and the loop the remaining ~2.
func q5DecGF(qh, pay int) func(a string) string {
	return func(a string) string {
		return fmt.Sprintf(`MOVL %[2]d(%[1]s), AX
	MOVL %[2]d(%[1]s)(R9*1), SI
	SHLQ $32, SI
	ORQ SI, AX
	KMOVQ AX, K1
	VBROADCASTI32X4 %[3]d(%[1]s), Z20
	VBROADCASTI32X4 %[3]d(%[1]s)(R9*1), K7, Z20
	VGF2P8AFFINEQB $0, Z31, Z20, Z20
	VPADDB Z19, Z20, K1, Z20
	VPERMB.Z Z20, Z30, K6, Z23
	VPERMB.Z Z20, Z28, K6, Z24`, a, qh, pay)
	}
}

// q5Dec: the nibbles (nib: q40Dec or q40DecVBMI), then each word whose fifth bit is set gets 16
// added (Z19): bit k of row
// a's qh goes to mask bit 2k and row b's to bit 2k+1 (one 64-bit PDEP per row spreads a row's
// 32 bits over the even bits, DX = 0x5555…; row b's shifted up one), the mask's low 32 bits
// for Z23 (values 0..15), its high 32 bits for Z24 (values 16..31), each moved into its mask
// register by a KMOVD (the high half shifted down in AX first), the masks formed before the
// nibbles. On AMD Zen 4 (4096 rows of 128, four accumulators, thread CPU time, 41 calls
// alternated with the previous kernels; ns a row, median) the two KMOVD took less time than one
// KMOVQ and a KSHIFTRQ: VBMI kernels q5_0 8.2 → 7.9 in cache, 9.0 → 8.8 streamed, q5_1 9.3 →
// 9.1 and ~10.4 both streamed; the kernels without VBMI q5_0 8.15 → 8.0, q5_1 9.15 → 9.0 in
// cache. The fifth bits cost ~1.2 ns a row in cache before (the kernels without them: q5_0 6.9,
// q5_1 8.2). Tried and not kept: the masks by VPSHUFBITQMB from the two rows' qh broadcast into
// every qword (AVX-512 BITALG; no scalar work, no mask moves): +0.45 ns a row in cache, +0.3
// streamed, the row loop bound by vector operations there; q5_1's first prepass pipelined into
// the previous tile's row loops as q5_0's is (p1Pipe): +0.1 ns a row in cache, streamed alike.
//
// q5_0's VBMI kernel (multiAccQ50VINT, the one q5_0 takes on AMD Zen 4) measured again piece by
// piece (the same harness, alternated with copies with a piece removed, three runs, ns a row
// median): whole 7.8 in cache, 9.3–9.8 streamed over 64 MiB of 4 KiB pages; without the fifth
// bits (their scalar work, mask moves and masked adds) 6.9 in cache, streamed alike (the loop
// waits on memory there); without the pipelined first prepass (p1Pipe's rows) 6.75 and 8.1–8.9
// (−1.1 both); without the second prepass's loop 7.3; without the nibbles' mask and shift 7.4;
// without prefetches 7.8 and 12.6–13.5. Its 16 VPDPWSSD a row (~4.6 in cache, the q4_0
// measurement above) leave no way to 6.5 ns a row with int16 weights. Tried there and not kept
// (alternated in one process, 201 calls in cache and 9 passes over 96 MiB on 2 MiB pages, five
// runs, ns a row min): the pipelined prepass's two pointers in R14 and DX (p1Regs's rewrite,
// the PDEPQ mask from memory): 7.79–7.87 → 7.79–7.87 in cache, streamed alike; the fourth
// block's scale by a masked load and VPERMT2W, as p1Pipe's comment had it before: 7.82–7.84 →
// 7.93–8.02 in cache, 8.15–8.25 → 8.28–8.34 streamed; with q50OneSet and offInitQ50On, the
// second prepass's ΣW by one VPDPWSSD of each packed weight pair with (1, 1) in place of two
// VPADDD: 7.53–7.60 → 7.52–7.60 in cache, streamed alike.
func q5Dec(qh, pay int, nib func(pay int) func(a string) string) func(a string) string {
	return func(a string) string {
		return fmt.Sprintf(`MOVL %[2]d(%[1]s), AX
	MOVL %[2]d(%[1]s)(R9*1), SI
	PDEPQ DX, AX, AX
	PDEPQ DX, SI, SI
	LEAQ (AX)(SI*2), AX
	KMOVD AX, K1
	SHRQ $32, AX
	KMOVD AX, K2
	`, a, qh) + nib(pay)(a) + `
	VPADDW Z19, Z23, K1, Z23
	VPADDW Z19, Z24, K2, Z24`
	}
}

// iq4Dec: each row's 16 payload bytes zero-extended to dwords (row b's shifted into the high
// words), split into nibbles on the words as q4_0's, and looked up in the codebook (Z19, the
// levels + 128 as unsigned bytes, VPSHUFB) with the words' high bytes zeroed (K6): the words
// hold level + 128, and the offset o = 128 comes back out as 128·ΣW. On Zen 5 ~4–5% less time
// than interleaving the bytes in 128-bit lanes, looking the levels up as int8 in 256 bits and
// sign-extending (six shuffles a row pair and block, now four; in cache and streamed, thread
// CPU time, interleaved; a second set of sums gained nothing more). On Intel (instruction
// tables, Ice Lake and Sapphire Rapids, where 512-bit µops run on ports 0 and 5 only) both take
// ~10 cycles a row pair and block: port 0 takes the 8 VPDPWSSD and the two shifts, port 5 the
// two widening loads and two VPSHUFB and the logic, against the 8 VPDPWSSD on port 0 and ~10
// shuffles and logic on port 5 before. (q4_0's and q5's nibbles widened the same way, ~2% on
// Zen 5, would add the two shifts to port 0 beside ~5 shuffles on port 5: ~10% slower there.)
// Measured on a Sapphire Rapids class Xeon the VPDPWSSD issue on ports 0 and 5
// (multi_intacc_amd64.go's intAcc), so there the two ports' total counts: ~14 µops and the
// logic a row pair and block against ~18 before.
func iq4Dec(a string) string {
	return fmt.Sprintf(`VPMOVZXBD 2(%[1]s), Z22
	VPMOVZXBD 2(%[1]s)(R9*1), Z21
	VPSLLD $16, Z21, Z21
	VPORD Z21, Z22, Z22
	VPANDD Z31, Z22, Z23
	VPSRLW $4, Z22, Z24
	VPSHUFB.Z Z23, Z19, K6, Z23
	VPSHUFB.Z Z24, Z19, K6, Z24`, a)
}

// iq4DecVBMI: q40DecVBMI's words, looked up with VPERMB (the codebook in Z19 is 16 bytes four
// times over, so a byte's index bits 4 and 5 choose nothing) with the words' high bytes zeroed
// (K6): the low nibbles need no mask first. Three shuffles and a shift where iq4Dec has four
// shuffles and four other operations.
func iq4DecVBMI(a string) string {
	return fmt.Sprintf(`VMOVDQU8 2(%[1]s), X20
	VMOVDQU8 2(%[1]s)(R9*1), X21
	VPERMT2B Z21, Z30, Z20
	VPSRLW $4, Z20, Z24
	VPERMB.Z Z19, Z20, K6, Z23
	VPERMB.Z Z19, Z24, K6, Z24`, a)
}

// quadDec is the row-quad decoder of the kernels with 8-bit weights (w8): the 16 payload bytes
// at pay of rows a and a+R9 into the two 128-bit lanes of Y20, of rows R14 and R14+R9 (R14 =
// a + 2·R9) into Y21's, then one two-table byte permute (·intAccQuad2Idx in Z13) moves row i's
// byte k to byte 4k+i, so dword k holds the four rows' byte k: its low nibbles are values k
// (Z23), its high ones values 16+k (Z24), as unsigned bytes. The last quad's rows (a "tail:"
// prefix on a) load into their lanes of Z20 with masks instead (K1..K3 mark lanes 1..3; a
// missing row's load, masked off, neither reads nor faults; its weights are 0), permuted by
// ·intAccQuadIdx (Z30). Measured on AMD Zen 4 (thread CPU time, 41 calls alternated, 4096 rows of 128
// values): the masked loads in the row loop too took ~5% more time in cache, ~3–5% streamed;
// in iq4_nl's Zen 4 kernel too, where the inserts share the shuffle pipes with the lookups
// (alternated in one process, 201 calls in cache and 9 passes over 96 MiB on 2 MiB pages,
// five runs, ns a row min): 4.56–4.71 → 4.92–5.13 in cache, 4.77–5.05 → 5.20–5.51 streamed.
// Also not kept there (same measurement): the high nibbles moved down by GF2P8AFFINEQB (a
// matrix for x >> 4 per byte) in place of VPSRLW, the same codes: 4.54–4.68 → 4.63–4.74 in
// cache, streamed 4.77–5.23 → 4.86–5.05 (higher in four of five). Nor rows 1..3 of a quad
// loaded into their lanes of Z20 by merge-masked 128-bit broadcasts (VBROADCASTI32X4 with
// dword masks: 16 bytes read a row, no line crossed that the plain loads do not) and permuted
// by the one-table ·intAccQuadIdx, in place of the two inserts and the two-table permute (AMD
// Zen 4, iq4_nl's kernel, alternated in one process, 201 calls in cache and 9 passes over
// 96 MiB on 2 MiB pages, five runs, ns a row min): 4.49–4.53 → 4.90–4.95 in cache,
// 4.75–4.83 → 5.19–5.30 streamed: the merges cost more than the shuffles they replace.
// iq4: the nibbles looked up in the codebook (Z19, levels + 128 four times over) by VPERMB,
// which reads only a byte's low 6 bits (the other nibble's bits 4, 5 choose the same copy).
// On AMD Zen 4 (multiAccIQ4NLV8Z4INT, 4096 rows of 128 values, four accumulators, in cache,
// thread CPU time, 101 calls alternated, min/median ns a row) the two lookups cost ~0.25:
// 4.76/4.80 against 4.52 with each VPERMB replaced by a VPORD (wrong values, timing only) and
// q4_0's 4.45–4.53; the high nibbles by VPSRLW, VPANDD and VPSHUFB in place of the VPERMB
// 4.78/4.80, no gain. q4_0's rawHi (the whole bytes for the high nibbles) has no iq4_nl form:
// the levels + 128 differ by no constant 4 or 8 codes apart, so no sum of Σ W·b and Σ W·T[b]
// over one 6- or 7-bit lookup T of the bytes gives the high nibbles' Σ W·level.
//
// iq4_nl's Zen 4 budget (README "Speed targets": 0.43 of f16's 21.0 ms, ~8.6 ns a row) against
// the bench's 0.45 there (~9.0): 0.4 ns, two to three vector operations a row. Its Zen 4
// kernels' loops differ from q4_0's (multiAccQ40V8Z4INT, multiScoresQ40HdrZ4VNNI; q4_0 at 0.42)
// only in the lookups: here a VPSRLW and two VPERMB a row where q4_0 takes one VPANDD, in the
// scores two VPERMB a row where it takes two VPANDD. At one lookup a code vector (VPMULTISHIFTQB
// or an affine nibble swap in place of the shift are no fewer, the first on Zen 4's dot-product
// pipes) they are at their fewest, so the 0.4 would have to come out of the work both formats
// share. mcakernels (-zenvnni), cycles a row: scores 17.2 (q4_0 16.8), values 20.5 (19.0).
func quadDec(pay int, iq4 bool) func(a string) string {
	return func(a string) string {
		var s string
		if t := strings.TrimPrefix(a, "tail:"); t != a {
			s = fmt.Sprintf(`VMOVDQU8 %[2]d(%[1]s), X20
	VMOVDQU8 %[3]d(%[1]s)(R9*1), K1, Z20
	VMOVDQU8 %[4]d(R14), K2, Z20
	VMOVDQU8 %[5]d(R14)(R9*1), K3, Z20
	VPERMB Z20, Z30, Z20`, t, pay, pay-16, pay-32, pay-48)
		} else {
			s = fmt.Sprintf(`VMOVDQU8 %[2]d(%[1]s), X20
	VINSERTI32X4 $1, %[2]d(%[1]s)(R9*1), Y20, Y20
	VMOVDQU8 %[2]d(R14), X21
	VINSERTI32X4 $1, %[2]d(R14)(R9*1), Y21, Y21
	VPERMT2B Z21, Z13, Z20`, a, pay)
		}
		if iq4 {
			return s + `
	VPSRLW $4, Z20, Z24
	VPERMB Z19, Z20, Z23
	VPERMB Z19, Z24, Z24`
		}
		return s + `
	VPANDD Z31, Z20, Z23
	VPSRLW $4, Z20, Z24
	VPANDD Z31, Z24, Z24`
	}
}

// quadDec5 is quadDec for q5_0 and q5_1 (AVX-512 BITALG too): the nibbles (pay), then each
// byte whose fifth bit is set gets 16 added (Z19, 0x10 bytes; K6 for values 0..15, K7 for
// 16..31). The four rows' 32-bit qh (at qh) gathered into X10 (VMOVD, VPINSRD; the last quad's
// rows load into Z10's lanes with quadDec's masks instead, ·intAccQ5TailIdx reading them), one
// byte permute (Z12: ·intAccQ5PermIdx) puts into qword j of Z11 the four rows' qh byte j/4
// (bytes 0..3: the bits of values 2j, 2j+1) and byte 2 + j/4 (bytes 4..7: values 16 + 2j,
// 17 + 2j), and two VPSHUFBITQMB (·intAccQ5BitIdx's two tables) pick K6's bit 4k+i and K7's
// (row i's bit k, 16 + k), so the masks line up with quadDec's bytes. On AMD Zen 4
// (TestIntAcc8Speed's shape: 4096 rows of 128 values, four accumulators, thread CPU time, 61
// calls alternated with the previous kernel, min/median ns a row) q5_1's kernel took 7.79/7.92 →
// 7.40/7.51 and 7.92/8.07 → 7.53/7.62 in cache, streamed alike (9.7–9.8 both): one permute
// and one shift fewer a quad and block than one permute for each half (the low 16 bits into
// every qword, then the high ones after a 16-bit shift).
func quadDec5(pay, qh int) func(a string) string { return quadDec5Of(pay, qh, false) }

// quadDec5Of is quadDec5, or where raw its fifth-bit masks and the quad's permuted bytes (Z20)
// only, the nibbles split by sgnCodes (w8sgn).
// Tried and not kept in the Zen 4 kernels (V8Z4): rows b, c and d's qh dwords put into X10 by
// VPBLENDD from the 16 bytes that hold each in place (4, 8 and 12 bytes before its qh) in place
// of the three VPINSRD (a load and a blend any vector pipe takes, against a load and a
// shuffle): the same bits; on AMD Zen 4 (4096 rows of 128 values, four accumulators, thread
// CPU time, 61 calls alternated in one process, in cache and over 1M rows on 2 MiB pages, five
// runs, ns a row min) q5_1 6.83–7.97 → 6.86–7.96 in cache (higher in four of five), streamed
// alike; q5_0 within ±0.1 either way. Nor a full quad's four blocks loaded whole, 32 bytes a
// row (rows a and b into the halves of Z20 by a load and VINSERTI64X4, c and d into Z21's, row d
// from 32 − bs bytes before its block so that nothing past it is read), the qh bytes placed by
// VPERMI2B and the payload by VPERMT2B from those two tables, in place of the VMOVD, three
// VPINSRD, VPERMB and the 16-byte loads and VINSERTI32X4: the same masks and codes, three
// shuffles fewer but two of 512 bits where there were 256, and loads across lines; AMD Zen 4
// (the same harness, 101 calls in cache, five passes over 64 MiB, min ns a row) q5_1 6.61 →
// 7.04 in cache, 9.23 → 9.30 streamed; q5_0 7.25 → 7.39, 9.80 → 9.81.
func quadDec5Of(pay, qh int, raw bool) func(a string) string {
	return func(a string) string {
		var s string
		if t := strings.TrimPrefix(a, "tail:"); t != a {
			s = fmt.Sprintf(`VMOVDQU8 %[2]d(%[1]s), X10
	VMOVDQU8 %[3]d(%[1]s)(R9*1), K1, Z10
	VMOVDQU8 %[4]d(R14), K2, Z10
	VMOVDQU8 %[5]d(R14)(R9*1), K3, Z10
	VMOVDQU64 ·intAccQ5TailIdx(SB), Z12`, t, qh, qh-16, qh-32, qh-48)
		} else {
			s = fmt.Sprintf(`VMOVD %[2]d(%[1]s), X10
	VPINSRD $1, %[2]d(%[1]s)(R9*1), X10, X10
	VPINSRD $2, %[2]d(R14), X10, X10
	VPINSRD $3, %[2]d(R14)(R9*1), X10, X10`, a, qh)
		}
		s += `
	VPERMB Z10, Z12, Z11
	VPSHUFBITQMB ·intAccQ5BitIdx(SB), Z11, K6
	VPSHUFBITQMB ·intAccQ5BitIdx+64(SB), Z11, K7
	`
		if raw {
			const split = "\n\tVPANDD Z31, Z20, Z23\n\tVPSRLW $4, Z20, Z24\n\tVPANDD Z31, Z24, Z24"
			q := quadDec(pay, false)(a)
			if !strings.HasSuffix(q, split) {
				panic("quadDec5Of: quadDec changed")
			}
			return s + strings.TrimSuffix(q, split)
		}
		return s + quadDec(pay, false)(a) + `
	VPADDB Z19, Z23, K6, Z23
	VPADDB Z19, Z24, K7, Z24`
	}
}

// q51GFHiOn makes q5_1's Zen 4 kernel with 8-bit weights (V8Z4, q51GFHi) take each code byte's
// high nibble by one VGF2P8AFFINEQB.
const q51GFHiOn = true

// q51GFHi rewrites the row-quad decodes of q5_1's Zen 4 kernel with 8-bit weights s (quadDec5's,
// the last quad's too): each byte's high nibble moved down by one VGF2P8AFFINEQB (GFNI; the
// matrix ·intAccHiNibGF, broadcast from memory: bit i of the result is bit i + 4 of the byte,
// bits 4..7 zero) in place of VPSRLW and VPANDD: the same codes, so the same sums bit for bit
// (TestIntAcc8Matches), one vector operation a quad and block fewer. On AMD Zen 4 (EPYC
// Genoa, 2 shared vCPUs at load 7–15; 4096 rows of 128 values, four accumulators, thread CPU
// time, alternated call by call in one process with the kernel before, 201 calls in cache and
// 9 passes over 96 MiB on 2 MiB pages streamed, five runs, ns a row min/median): in cache
// 6.64–6.69/6.76–6.85 → 6.08–6.56/6.67–6.70, streamed 6.96–7.08/7.09–7.19 → 6.90–6.98/
// 6.99–7.13, lower in five of five. Only AMD Zen 4 runs this flavour (zen4Stream; GFNI checked
// by intAccQ5_1's choice): the other CPUs' q5_1 kernels keep the shift and mask.
//
// Where this kernel spends its time (before this rewrite; AMD Zen 4, the same harness, 61
// calls in cache and three passes over 64 MiB, alternated with copies with a piece removed,
// not working ones, two to three runs, ns a row, median): whole 6.7 in cache; without its first
// prepass loop 4.8 (−1.9; streamed −2.1); of that loop, its four VPERMILPS ~0.65, the Σ w·m
// and Σ w·d chains ~0.35, the two VRANGEPS ~0.3, the two merge-masked loads ~0.15; the second
// prepass ~0.6; the fifth bits ~1.0 (the VMOVD and VPINSRD gather ~0.3, VPERMB ~0.1, the two
// VPSHUFBITQMB ~0.3, the low nibbles' mask and masked add ~0.25); the weights' four
// VPBROADCASTD a quad and block ~0.05 (so VPDPBUSD.BCST of the weights as its signed operand,
// W − 128 with 128·Σ c added back, would not pay: two VPDPBUSD more); the high nibbles' shift
// and mask ~0.2 (this rewrite). Tried in that loop and not kept: PREFETCHT0 of the next tile
// beside each PREFETCHT1 (its rows in L1 for the prepass): no change (6.52/6.64 → 6.53/6.64 in
// cache, streamed alike); d and m spread over the lanes by a store of the converted words and
// four VBROADCASTF32X4 from it, the weights by VPERMPS (a lane order 4h + b, timing only), in
// place of the four VPERMILPS: +0.45 (6.52 → 6.97 in cache, 6.92 → 7.32 streamed). A first
// prepass with a quad's rows in lanes (q4_1's rlPipeMin) is what is left to try there.
func q51GFHi(s string) string {
	const old = "\tVPSRLW $4, Z20, Z24\n\tVPANDD Z31, Z24, Z24\n\tVPADDB Z19, Z23, K6, Z23\n"
	const new = "\tVGF2P8AFFINEQB.BCST $0, ·intAccHiNibGF(SB), Z20, Z24\n\tVPADDB Z19, Z23, K6, Z23\n"
	if n := strings.Count(s, old); n != 8 {
		panic(fmt.Sprintf("q51GFHi: %d decodes, want 8", n))
	}
	return strings.ReplaceAll(s, old, new)
}

// q51XDoc: q5_1's kernel with 8-bit weights for Intel CPUs (V8X, multi_intacc_amd64.go's
// q51X) is the Zen 4 flavour's code (PREFETCHT1 at the tile after next; q51GFHi, offInitOf,
// q51P1Plain, q51OneSet, q51P2Or, pairHeads, each bit for bit) without q51RL, whose min term
// rounds in another order, and without p2QuadsU2 (two VPERMI2B a row quad, each ~3 µops on
// Intel, for four one-µop packs): the V8 kernel's sums bit for bit (TestIntAcc8Matches). On an
// Intel Xeon (KVM, 2 shared vCPUs at load 15–20; 4096 rows of 128 values, four accumulators,
// weights ≥ 0, thread CPU time, alternated call by call in one process, 61 calls in cache and
// 7 passes over 64 MiB, two runs, ns a row min/median): V8 6.97/7.37 in cache, 12.44–13.12/
// 13.10–13.48 streamed; V8X 6.32–6.34/6.69–6.71, 12.20–12.21/12.33–12.47; V8Z4 6.42/6.80,
// 13.12–13.57/13.41–13.79. In the one-thread decode at the bench shape (attn's
// TestDecodeBreakdown shape, the kernels switched round by round in one process, 15 rounds,
// min/median ns a row, load 9–16) the values phase: V8 10.54–11.22/10.95–11.83, this code (q51RL
// off, before gen_align) 10.66/11.00, V8Z4 10.18–10.77/10.54–10.95; the same code with
// PREFETCHT0 11.01/11.33 (the Zen 4 code with PREFETCHT0 11.06/11.55): on Intel the L2 hint
// makes most of it. Measured on the way (same harness, wrong sums, timing only): without its
// two VPSHUFBITQMB a row quad and block the values phase took ~0.3 ns a row less; with no
// prefetch at all ~2 more. Per-operation facts from a throughput loop there (16 independent
// VPDPBUSD zmm chains with 8 other operations interleaved, relative to a VPANDD's cost): a zmm
// VPSHUFBITQMB, VCVTPH2PS or VPERMI2W costs two, VPERMT2B three, VPERMB, VPUNPCKLDQ, VPSRLW,
// VGF2P8AFFINEQB, a masked VPADDB, VPMOVM2B, VPTERNLOGD, KMOVD from memory and an insert from
// memory (VINSERTI32X4, VINSERTI64X4) one each.
//
// q51XAMX (not kept; no kernel): its values' multiplies through AMX int8 tiles, bit for bit. Each
// decoded row quad's two zmm of a block (a dword per dim = four rows' codes) is a B-tile row, so
// per 64-row tile and block the 8 VPDPBUSD and 4 broadcasts a quad would become two 64-byte
// stores to an L1 scratch, then 2 B and 1 A TILELOADD (A: the four accumulators' 64 unsigned
// weights), 2 TILEZERO, 2 TDPBUUD into C tiles of 4 rows × 16 dwords, 2 TILESTORED and the sums
// read back into Z0..Z7 before the block's finish. The C tiles cannot stay across tiles or
// blocks (each tile, block and accumulator has its own T), so 8 TILESTORED a 64-row tile is the
// least. Timing variants of this kernel (wrong sums; TestIntAcc8Speed's shape, 4096 rows of 128,
// four accumulators, weights ≥ 0, thread CPU, alternated call by call in one process, 101 calls
// in cache and 5 passes over 64 MiB, six runs, load ~1.5–1.8, ns a row min): this kernel
// 6.00–6.34 in cache, 8.04–9.39 streamed; without the broadcasts and VPDPBUSD (all else kept)
// 4.69–4.96, 7.13–8.97; the two stores in their place 4.71–5.01, 7.21–9.13 (stores ~free); with
// the per-block tile operations as above 6.26–6.74 and 8.82–9.97, +0.26–0.40 in cache and
// +0.26–0.83 streamed against this kernel in the same runs: no gain to find. Where the tile time
// goes (differences of the variants, in cache): the 12 TILELOADD a tile 0.36–0.43 ns a row (~8
// cycles each), the 8 TILEZERO + 8 TDPBUUD (M 4, K 64) 0.39–0.41 (~13 cycles a pair), the 8
// TILESTORED of 4-row C tiles 0.65–0.68 (~21 cycles each), the read-back's wait 0.12–0.26; the
// work they replace 1.31–1.38. The tile unit runs beside ports 0/5, but its loads and stores
// cost the core more than the 512 VPDPBUSD (2 a cycle) and 256 broadcasts a tile they replace
// (fp8AccAMXAText's tile operations, ~1.8 ns a row, paid against float work, not VPDPBUSD).

// q51XPFOn makes q5_1's Intel kernel with 8-bit weights prefetch as q51XPF says.
const q51XPFOn = true

// q51XPF rewrites the row-quad loops' prefetches of q5_1's Intel kernel with 8-bit weights s:
// each PREFETCHT1 of the tile after next becomes a PREFETCHT0 of the same bytes of the next tile
// (R11 = −64·rb, set where the loops load their prefetch pointer; R11 is free there) and a
// PREFETCHT1 32 KiB past the tile after next: the same instructions otherwise, so the same sums.
// On an Intel Xeon (the harness of q51XDoc's decode figures, 25 rounds, load ~16), the values
// phase min/median ns a row: PREFETCHT1 at the tile after next alone 10.49/10.88, this
// 9.86/10.46; in other runs (15 rounds) 10.40/10.75 → 9.82/10.28 and 10.41/10.87 → 10.08/10.69.
// Tried there and not kept (within the noise of the PREFETCHT1 alone, or between): a second
// PREFETCHT1 32 or 64 KiB on (10.18/10.75), the PREFETCHT0 of the next tile beside the PREFETCHT1
// (10.04/10.49), PREFETCHT2 in place of PREFETCHT1 (4096 rows streamed over 64 MiB: 11.87–12.07
// against 11.71–11.76), the prefetch pointer at the next tile with its PREFETCHT0 there and a
// PREFETCHT1 16, 32, 40 or 64 KiB on (10.09–10.46/10.74–10.99).
func q51XPF(s string) string {
	const setup = "\tMOVQ 6512(SP), R15\n\tMOVQ rb+32(FP), R9\n"
	const pf = "\tPREFETCHT1 (R15)\n"
	if n := strings.Count(s, setup); n != 2 {
		panic(fmt.Sprintf("q51XPF: %d prefetch setups, want 2", n))
	}
	if n := strings.Count(s, pf); n != 12 {
		panic(fmt.Sprintf("q51XPF: %d prefetches, want 12", n))
	}
	if strings.Contains(s, "(R15)(R11*1)") {
		panic("q51XPF: already rewritten")
	}
	s = strings.ReplaceAll(s, setup, setup+"\tMOVQ R9, R11\n\tSHLQ $6, R11\n\tNEGQ R11                   // back to the next tile\n")
	return strings.ReplaceAll(s, pf, "\tPREFETCHT0 (R15)(R11*1)\n\tPREFETCHT1 32768(R15)\n")
}

// q51XSparseOn makes q5_1's Intel kernel with 8-bit weights thin its far prefetches as
// q51XSparse says.
const q51XSparseOn = true

// q51XSparse rewrites q51XPF's far prefetches of q5_1's Intel kernel with 8-bit weights s: of
// each row-quad loop's PREFETCHT1 32768(R15) (one a 48-byte step of the prefetch pointer: four
// a step of two quads, every line of the rows and a third of them twice) only the loop's first
// is kept, one a 192 bytes (about a line in three), as the Intel q5 scores kernels' far
// prefetches (multi_vnni_amd64.go's PF22X and PF20X) and q2k's (gen_tq4vnni.go's q2kFarX): the
// L2's streamer fetches the lines between, and the loop no longer waits on L1 fill buffers held
// by far prefetches. The PREFETCHT0 are kept, so the same sums. On an Intel Xeon (family 6
// model 167, 2 shared vCPUs, load 5–7; native/attn TestDecodeBreakdown at the bench shape,
// KVLAB_SPEED_FORMATS=q5_1, the kernels switched process by process, ns a row, each process's
// min of 5 rounds) the values phase: 9.17–10.26 (sixteen runs, and one of 8.24) → 8.48–9.94
// (lower in 14 of 16 paired runs, median of the differences −0.45); the whole step lower in 10
// of 16, within its noise. Not kept (the same runs): two of the four (one a 96 bytes) 9.59–10.07
// (against 9.76–10.26); none at all 9.41–10.32; the one kept taken on every second loop trip
// only (a branch on the trip count) 9.68–10.37; the one kept 48 KiB on in place of 32
// 8.91–9.94, within the noise of 32. Test binaries of main and this (with q2k_amd64.go's
// q2kSparse) alternated twelve times (ABBA, load 6–9), min/median of the runs' minima: values
// 9.53/9.86 → 9.26/9.50 (paired median −0.40, lower in 11 of 12), whole 17.19/17.86 →
// 16.74/17.46 (−0.45, 9 of 12); the scores phase, whose kernel is the same, 7.74/7.95 →
// 7.30/7.49 (−0.46, 12 of 12): it follows the values of the chunk before, whose dense far
// prefetches it waited behind.
func q51XSparse(s string) string {
	const far = "\tPREFETCHT1 32768(R15)"
	if n := strings.Count(s, far+"\n"); n != 12 {
		panic(fmt.Sprintf("q51XSparse: %d far prefetches, want 12", n))
	}
	var b strings.Builder
	kept := false
	for _, l := range strings.SplitAfter(s, "\n") {
		switch {
		case strings.HasSuffix(l, ":\n"):
			kept = false
		case l == far+"\n" && kept:
			continue
		case l == far+"\n":
			kept = true
		}
		b.WriteString(l)
	}
	s = b.String()
	if n := strings.Count(s, far+"\n"); n != 4 {
		panic(fmt.Sprintf("q51XSparse: %d far prefetches left, want 4 (one a row-quad loop)", n))
	}
	return s
}

// q51XTestOn makes q5_1's Intel kernel with 8-bit weights take its fifth-bit masks as
// q51XTest says.
const q51XTestOn = true

// q51XTest rewrites the row-quad decodes of q5_1's Intel kernel with 8-bit weights s (quadDec5's,
// not the last quad's, which keeps its own): the quad's gathered qh (X10) goes through two byte
// permutes (Z12: ·intAccQ5TestLo, Z14: ·intAccQ5TestHi; byte 4k + i of each row i's qh byte k/8,
// or 2 + k/8) and two VPTESTMB against one bit a dword (Z15: ·intAccQ5TestBit, bit k mod 8 in
// dword k's bytes) in place of one permute and two VPSHUFBITQMB: the same masks (K6's bit 4k+i
// row i's bit k, K7's its bit 16 + k), so the same sums bit for bit (TestIntAcc8Matches). On
// this Xeon a zmm VPSHUFBITQMB costs two vector operations and a VPERMB or VPTESTMB one
// (q51XDoc), so one operation a quad and block fewer. Intel Xeon (load 6–11; 4096 rows of 128
// values, four accumulators, thread CPU time, 101 calls in cache alternated with the kernel
// before in one process, three runs, ns a row min): 7.22–7.43 → 6.75–7.15; streamed over 64 MiB
// (three passes, memory-bound at that load) 13.22–13.65 → 13.17–13.24. Measured on the way
// (the same harness, pieces removed, wrong sums, timing only): without the fifth bits at all
// (the qh gather, permute, masks and masked adds) 7.54 → 5.80, without the eight VPDPBUSD
// 7.02 → 5.99, without the prefetches alike in cache (7.04 → 7.12) and 13.05 → 17.44
// streamed.
func q51XTest(s string) string {
	const setup = "\tVMOVDQU64 ·intAccQ5PermIdx(SB), Z12\n"
	const dec = "X10, X10\n\tVPERMB Z10, Z12, Z11\n\tVPSHUFBITQMB ·intAccQ5BitIdx(SB), Z11, K6\n\tVPSHUFBITQMB ·intAccQ5BitIdx+64(SB), Z11, K7\n"
	if n := strings.Count(s, setup); n != 2 {
		panic(fmt.Sprintf("q51XTest: %d permute setups, want 2", n))
	}
	if n := strings.Count(s, dec); n != 6 {
		panic(fmt.Sprintf("q51XTest: %d decodes, want 6", n))
	}
	for _, z := range []string{"Z14", "Z15", "Z16"} {
		if i := strings.Index(s, "_blk:"); strings.Contains(s[i:], z) {
			panic("q51XTest: " + z + " taken in the block loop")
		}
	}
	s = strings.ReplaceAll(s, setup, "\tVMOVDQU64 ·intAccQ5TestLo(SB), Z12\n\tVMOVDQU64 ·intAccQ5TestHi(SB), Z14\n\tVMOVDQU64 ·intAccQ5TestBit(SB), Z15\n")
	return strings.ReplaceAll(s, dec, "X10, X10\n\tVPERMB Z10, Z12, Z11\n\tVPTESTMB Z15, Z11, K6\n\tVPERMB Z10, Z14, Z16\n\tVPTESTMB Z15, Z16, K7\n")
}

// q51XQuadOn makes q5_1's Intel kernel with 8-bit weights load its row quads as q51XQuad says.
const q51XQuadOn = true

// q51XQuad rewrites the row-quad decodes of q5_1's Intel kernel with 8-bit weights s (quadDec's
// loads and permute, not the last quad's): the four rows' 16 payload bytes into the four lanes
// of Z20 (a load and three VINSERTI32X4 from memory) and one single-table VPERMB by
// ·intAccQuadIdx (Z30, as the last quad's) in place of two rows into each of Y20 and Y21 (two
// loads, two inserts) and the two-table VPERMT2B by ·intAccQuad2Idx: the same code bytes, so
// the same sums bit for bit (TestIntAcc8Matches). On this Xeon VPERMT2B costs three vector
// operations and an insert from memory or VPERMB one (q51XDoc): one fewer a quad and block.
// Intel Xeon (load ~25; TestIntAcc8Speed's shape, alternated with the kernel before in one
// process as q51XTest's figures, eight runs, ns a row min): in cache 6.36–6.97 → 6.15–6.74
// (lower by 0.08–0.23 in seven of eight; in the eighth the old kernel had one 5.01 call),
// streamed within that load's noise (±1).
// Not kept (same harness, three runs): the quad's qh gathered by three VPBLENDD from the 16
// bytes that hold each row's qh in place (as quadDec5Of's Zen 4 try) in place of the three
// VPINSRD: in cache −0.05, streamed +0.1 to +0.7.
// Where the kernel's time goes with this (same harness, two runs, pieces taken out of a copy,
// wrong sums, timing only, ns a row min, in cache whole 6.36–6.55): the first prepass loop's
// work (p1f and p1 less their pointer steps) −1.7 (4.65; streamed 13.3 → 11.2–11.9), the
// second prepass's multiplies, conversions and packs −0.5 to −0.65 (5.88–5.89). The first
// prepass is what is left to cut on Intel: q51RL's layout (Zen 4's; its min term rounds in
// another order, and its packs take two VPERMI2B a quad) was not tried here.
func q51XQuad(s string) string {
	const dec = "\tVMOVDQU8 8(R12), X20\n\tVINSERTI32X4 $1, 8(R12)(R9*1), Y20, Y20\n\tVMOVDQU8 8(R14), X21\n\tVINSERTI32X4 $1, 8(R14)(R9*1), Y21, Y21\n\tVPERMT2B Z21, Z13, Z20\n"
	const idx = "\tVMOVDQU64 ·intAccQuad2Idx(SB), Z13\n"
	if n := strings.Count(s, dec); n != 6 {
		panic(fmt.Sprintf("q51XQuad: %d decodes, want 6", n))
	}
	if n := strings.Count(s, idx); n != 2 {
		panic(fmt.Sprintf("q51XQuad: %d index loads, want 2", n))
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "Z30") && !strings.Contains(l, ", Z30, ") && l != "\tVMOVDQU64 ·intAccQuadIdx(SB), Z30" {
			panic("q51XQuad: Z30 is not ·intAccQuadIdx throughout: " + l)
		}
	}
	s = strings.ReplaceAll(s, idx, "")
	return strings.ReplaceAll(s, dec, "\tVMOVDQU8 8(R12), X20\n\tVINSERTI32X4 $1, 8(R12)(R9*1), Y20, Y20\n\tVINSERTI32X4 $2, 8(R14), Z20, Z20\n\tVINSERTI32X4 $3, 8(R14)(R9*1), Z20, Z20\n\tVPERMB Z20, Z30, Z20\n")
}

// q51XPdepOn makes q5_1's Intel kernel with 8-bit weights form its fifth-bit masks as q51XPdep
// says. Off: it did not pay.
const q51XPdepOn = false

// q51XPdep rewrites the row-quad decodes of q5_1's Intel kernel with 8-bit weights s (q51XTest's,
// not the last quad's): each of the quad's four rows' qh halves (bits 0..15 at 4 bytes into the
// block, 16..31 at 6) loaded into a general register and spread by a PDEP with 0x1111…1 (R13,
// its block's T pointer kept at 6576(SP) over the row loops) to bits 4k, row i's shifted up i by
// the LEA that joins it to rows 0..i−1 (SI: values 0..15, DX: 16..31), and one KMOVQ each into K6
// and K7, in place of the qh gathered into X10 (three VPINSRD) and two VPERMB and two VPTESTMB:
// the same masks (K6's bit 4k+i row i's bit k, K7's its bit 16 + k), so the same sums bit for bit
// (TestIntAcc8Matches). Seven vector operations a quad and block (ports 0 and 5 on the Intel
// Xeon) become two mask moves (port 5); the PDEP run on port 1, the loads and LEAs beside.
// Not kept: on the Intel Xeon (2 shared vCPUs, load 7–9; after q51XHeadD, test binaries
// alternated ABBA) 4096 rows in cache, twelve runs each, ns a row min: median 6.15 → 6.10, the
// streamed passes no lower; native/attn TestDecodeBreakdown (q5_1 at the bench shape, eight runs
// each, each run's min) values median 9.9 → 10.1, whole 18.4 → 18.8. Eight PDEP a quad and block
// on port 1 alone (llvm-mca -mcpu sapphirerapids: the row-quad loop 18 → 32 cycles, port 1
// bound) take back what the vector ports gain.
func q51XPdep(s string) string {
	const setup = "\tVMOVDQU64 ·intAccQ5TestLo(SB), Z12\n\tVMOVDQU64 ·intAccQ5TestHi(SB), Z14\n\tVMOVDQU64 ·intAccQ5TestBit(SB), Z15\n"
	const dec = "\tVMOVD 4(R12), X10\n\tVPINSRD $1, 4(R12)(R9*1), X10, X10\n\tVPINSRD $2, 4(R14), X10, X10\n\tVPINSRD $3, 4(R14)(R9*1), X10, X10\n\tVPERMB Z10, Z12, Z11\n\tVPTESTMB Z15, Z11, K6\n\tVPERMB Z10, Z14, Z16\n\tVPTESTMB Z15, Z16, K7\n"
	if n := strings.Count(s, setup); n != 2 {
		panic(fmt.Sprintf("q51XPdep: %d mask setups, want 2", n))
	}
	if n := strings.Count(s, dec); n != 6 {
		panic(fmt.Sprintf("q51XPdep: %d decodes, want 6", n))
	}
	if strings.Contains(s, "6576(SP)") {
		panic("q51XPdep: 6576(SP) taken")
	}
	i, j := strings.Index(s, "_blk:\n"), strings.Index(s, "_pass1:\n")
	if i < 0 || j < i {
		panic("q51XPdep: no block loop")
	}
	body := s[i:j]
	body = body[strings.Index(body, setup):]
	for _, r := range []string{"R13", "SI", "DX", "6576(SP)"} {
		if strings.Contains(body, r) {
			panic("q51XPdep: " + r + " taken in the row loops")
		}
	}
	first := strings.Index(s, setup)
	s = s[:first] + "\tMOVQ R13, 6576(SP)         // the block's T (q51XPdep)\n\tMOVQ $0x1111111111111111, R13\n" + s[first+len(setup):]
	s = strings.Replace(s, setup, "", 1)
	var b strings.Builder
	for k, a := range []string{"(R12)", "(R12)(R9*1)", "(R14)", "(R14)(R9*1)"} {
		if k == 0 {
			fmt.Fprintf(&b, "\tMOVL 4%[1]s, AX\n\tPDEPQ R13, AX, SI\n\tMOVWLZX 6%[1]s, AX\n\tPDEPQ R13, AX, DX\n", a)
			continue
		}
		fmt.Fprintf(&b, "\tMOVL 4%[1]s, AX\n\tPDEPQ R13, AX, AX\n\tLEAQ (SI)(AX*%[2]d), SI\n\tMOVWLZX 6%[1]s, AX\n\tPDEPQ R13, AX, AX\n\tLEAQ (DX)(AX*%[2]d), DX\n", a, 1<<k)
	}
	b.WriteString("\tKMOVQ SI, K6\n\tKMOVQ DX, K7\n")
	s = strings.ReplaceAll(s, dec, b.String())
	j = strings.Index(s, "_pass1:\n") + len("_pass1:\n")
	return s[:j] + "\tMOVQ 6576(SP), R13\n" + s[j:]
}

// q51XHeadDOn makes q5_1's Intel kernel with 8-bit weights permute its first prepass's heads as
// q51XHeadD says.
const q51XHeadDOn = true

// q51XHeadD rewrites the first prepass of q5_1's Intel kernel with 8-bit weights s (pairHeads'
// row-pair loops): the two rows' d and min words, which pairHeads' merges leave in whole dwords
// (row a's block b at dword 6b, row b's at 6b + 1), are gathered by a dword permute (VPERMT2D,
// ·intAccQ51LD2DIdx: dwords 2b, 2b + 1 from 6b, 6b + 1, the upper half again) in place of the word
// permute by ·intAccQ51LD2Idx (VPERMT2W): the same register, so the same sums bit for bit
// (TestIntAcc8Matches). On the Intel Xeon a zmm VPERMT2W costs three operations (q51XDoc's
// two-table permutes) and VPERMT2D one: two fewer a row pair. Intel Xeon (family 6 model 167, 2
// shared vCPUs, load 7–8; 4096 rows of 128 values, four accumulators, thread CPU time, 101 calls
// in cache, test binaries alternated, four runs, ns a row min/median): 6.15–6.51/6.37–7.09 →
// 5.97–6.34/6.02–6.36; native/attn TestDecodeBreakdown (q5_1 at the bench shape, five runs
// alternated, each run's min) the values phase 9.74–9.98 (median 9.86) → 9.29–9.90 (9.60).
func q51XHeadD(s string) string {
	const idx = "\tVMOVDQU16 ·intAccQ51LD2Idx(SB), Z7\n"
	const perm = "\tVPERMT2W Z14, Z7, Z13\n"
	if n := strings.Count(s, idx); n != 1 {
		panic(fmt.Sprintf("q51XHeadD: %d index loads, want 1", n))
	}
	if n := strings.Count(s, perm); n != 2 {
		panic(fmt.Sprintf("q51XHeadD: %d permutes, want 2", n))
	}
	s = strings.Replace(s, idx, "\tVMOVDQU32 ·intAccQ51LD2DIdx(SB), Z7\n", 1)
	return strings.ReplaceAll(s, perm, "\tVPERMT2D Z14, Z7, Z13\n")
}

// q50RegsOn makes q5_0's Intel values kernel (multiAccQ50VIINT) keep its pipelined prepass's
// pointers in registers as q50Regs says.
const q50RegsOn = true

// q50Regs rewrites q5_0's Intel values kernel s (after q50Intel) so that the row-pair loop
// keeps the pipelined prepass's three pointers (the next tile's rows, its weights and its w·d
// rows: 6528, 6536 and 6544(SP)) in R14, DX and CX, which the loop leaves free (DX held
// q5Dec's PDEP mask, which q5DecGF does not take; CX, the block's accumulators, is saved at
// 6568(SP) beside them and restored after the loop): three loads and three stores a prepass row
// fewer, the same operations otherwise, so the same sums bit for bit (TestIntAcc8Matches). Its
// runs flavour (multiAccQ50VIRunsINT) takes it too. On the Intel Xeon (load 5–13): 4096 rows in
// cache (copies in one test binary, three runs) 6.47/5.88/6.79 → 6.31/5.84/6.74 ns a row min;
// native/attn TestDecodeBreakdown (q5_0 at the bench shape, the kernels switched process by
// process, 22 runs, ns a row of each run's min) whole lower in 14 of 22 (median of the paired
// differences −0.51), values lower in 15 of 22 (−0.11).
func q50Regs(s string) string {
	if strings.Contains(s, "R14") || strings.Contains(s, "6568(SP)") {
		panic("q50Regs: R14 or 6568(SP) taken")
	}
	const setup = "\tMOVQ $0x5555555555555555, DX\n\tSHRQ $2, R10\n"
	if strings.Count(s, setup) != 1 {
		panic("q50Regs: the pair loop's setup changed")
	}
	s = strings.Replace(s, setup, "\tMOVQ 6528(SP), R14         // the pipelined prepass's pointers (q50Regs)\n\tMOVQ 6536(SP), DX\n\tMOVQ CX, 6568(SP)\n\tMOVQ 6544(SP), CX\n\tSHRQ $2, R10\n", 1)
	for _, r := range [][2]string{
		{"\tMOVQ 6528(SP), AX\n\tVPERMW (AX), Z29, Z26\n\tVPBROADCASTW 66(AX), K5, Z26\n\tADDQ R9, AX\n\tMOVQ AX, 6528(SP)\n",
			"\tVPERMW (R14), Z29, Z26\n\tVPBROADCASTW 66(R14), K5, Z26\n\tADDQ R9, R14\n"},
		{"\tMOVQ 6536(SP), AX\n\tVBROADCASTF32X4 (AX), Z25\n\tADDQ wstride+56(FP), AX\n\tMOVQ AX, 6536(SP)\n",
			"\tVBROADCASTF32X4 (DX), Z25\n\tADDQ wstride+56(FP), DX\n"},
		{"\tMOVQ 6544(SP), AX\n\tVMOVUPS Z22, (AX)\n\tADDQ $64, AX\n\tMOVQ AX, 6544(SP)\n",
			"\tVMOVUPS Z22, (CX)\n\tADDQ $64, CX\n"},
	} {
		// The pair loop's (the first); the loop after the blocks (the second) keeps the stack.
		if strings.Count(s, r[0]) != 2 {
			panic("q50Regs: the pipelined prepass changed")
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	const odd = "\tMOVQ R15, 6512(SP)\n" // at the pair loop's end (aQ50VI_odd)
	if strings.Count(s, odd) != 1 {
		panic("q50Regs: the pair loop's end changed")
	}
	return strings.Replace(s, odd, odd+"\tMOVQ R14, 6528(SP)\n\tMOVQ DX, 6536(SP)\n\tMOVQ CX, 6544(SP)\n\tMOVQ 6568(SP), CX\n", 1)
}

// q50TwoSetsOn makes q5_0's Intel values kernel (multiAccQ50VIINT) add its row-pair loop's
// second pair into a second set of sums as q50TwoSets says. Off: it did not pay.
const q50TwoSetsOn = false

// q50TwoSets rewrites q5_0's Intel values kernel s (after q50Regs): the row-pair loop's second
// pair of a step adds into a second set of sums (Z14, Z15, Z16, Z17, Z18, Z21, Z8, Z9 for Z0..Z7,
// registers the block loop leaves free), cleared before the loop and added into the first at
// its end (aQ50VI_join, which every path reaches before the finish), undoing q50OneSet there:
// sixteen chains of VPDPWSSD in place of eight, so each chain takes one every sixteen. The
// int32 sums are exact in any order, so the same results bit for bit (TestIntAcc8Matches).
// On the Intel Xeon VPDPWSSD has a latency of 5–6 cycles (multi_intacc_amd64.go's intAcc: ten
// chains keep it at 1.7 a cycle, twelve at 1.9); q50OneSet was measured on AMD Zen 4 only.
// Not kept: on that Xeon (load ~9; 4096 rows of 128 values, four accumulators, 101 calls in
// cache, test binaries alternated ABBA, eight runs each, ns a row min) 7.01–7.48 (median 7.04)
// → 7.09–7.56 (7.32), streamed alike (10.0–10.9 both): the chains' latency does not bind there.
func q50TwoSets(s string) string {
	set2 := [8]string{"Z14", "Z15", "Z16", "Z17", "Z18", "Z21", "Z8", "Z9"}
	i := strings.Index(s, "aQ50VI_pair:\n")
	j := strings.Index(s, "aQ50VI_s1:\n")
	k := strings.Index(s, "aQ50VI_pair1:\n")
	if i < 0 || j < i || k < j || strings.Count(s, "aQ50VI_s1:\n") != 1 {
		panic("q50TwoSets: the pair loop changed")
	}
	blk := s[strings.Index(s, "aQ50VI_blk:\n"):strings.Index(s, "aQ50VI_fin:\n")]
	for _, z := range set2 {
		if strings.Contains(blk, z+",") || strings.Contains(blk, z+"\n") {
			panic("q50TwoSets: " + z + " taken in the block loop")
		}
	}
	second := s[j:k]
	if n := strings.Count(second, "VPDPWSSD"); n != 8 {
		panic(fmt.Sprintf("q50TwoSets: %d VPDPWSSD in the second pair, want 8", n))
	}
	for h := 0; h < 8; h++ {
		second = strings.ReplaceAll(second, fmt.Sprintf(", Z%d\n", h), ", "+set2[h]+"\n")
	}
	s = s[:j] + second + s[k:]
	const loop = "\tSHRQ $2, R10\n\tJZ   aQ50VI_pair1\n"
	const join = "aQ50VI_join:\n"
	if strings.Count(s, loop) != 1 || strings.Count(s, join) != 1 {
		panic("q50TwoSets: the pair loop's setup or join changed")
	}
	var clr, add strings.Builder
	for h, z := range set2 {
		fmt.Fprintf(&clr, "\tVPXORD %[1]s, %[1]s, %[1]s\n", z)
		fmt.Fprintf(&add, "\tVPADDD %s, Z%d, Z%d\n", z, h, h)
	}
	s = strings.Replace(s, loop, clr.String()+loop, 1)
	return strings.Replace(s, join, join+add.String(), 1)
}

// q50XPFOn makes q5_0's Intel values kernel (multiAccQ50VIINT) prefetch as q50XPF says. Off:
// it did not pay.
const q50XPFOn = false

// q50XPF rewrites the row-pair loops' prefetches of q5_0's Intel values kernel s as q51XPF does
// q5_1's: each PREFETCHT0 of the tile after next becomes a PREFETCHT0 of the same bytes of the
// next tile (R14 = −64·rb, set where the loops load their prefetch pointer; the kernel leaves
// R14 unused) and a PREFETCHT1 32 KiB past the tile after next: the same sums.
//
// Not kept: on an Intel Xeon (KVM, 2 shared vCPUs, load 3–7; native/attn TestDecodeBreakdown
// at the bench shape, KVLAB_SPEED_FORMATS=q5_0, test binaries alternated run by run, the values
// phase, ns a row, median over rounds of each round's min, or paired: the median difference of
// the rounds' mins) the kernel as generated 8.94, 8.32, 9.54, 9.50 against this 9.25, 8.21,
// 9.70, 9.07 (12–20 rounds each), and in 30 paired rounds +0.00 (lower in 15 of 30). Nor did
// these (same runs): the PREFETCHT0 kept and a PREFETCHT1 32 KiB on added 9.33, 8.12, 9.57,
// 8.77, paired −0.03 (15 of 30); that at 64 KiB 9.61; PREFETCHT1 in place of the PREFETCHT0
// 9.53, 9.17, with a second 32 KiB on 9.55, 9.48; PREFETCHT0 at the next tile and PREFETCHT1 at
// and 32 KiB past the tile after next 9.49; one PREFETCHT0 a step of two row pairs (88 bytes)
// in place of one a pair +0.24 (7 of 20), with a PREFETCHT1 32 KiB on −0.09 (11 of 20); the
// PREFETCHT0 as generated and a PREFETCHT1 32 KiB on every second step (as PF22X's sparse far
// lines, which paid for the scores: multi_vnni_amd64.go's q50ScoresX) −0.24 (15 of 20) and
// −0.13 (18 of 30), the whole step +0.05 and +0.10. Unlike
// q5_1's kernel (q51XDoc: PREFETCHT1 at the tile after next), this one already prefetches
// into L1 at the tile after next. At that load the values took 7.75–8.34 with their rows in
// cache (KVLAB_TOUCH=v) against 8.47–9.79 streamed: about 1 ns a row of waiting, which no
// prefetch placement here moved.
func q50XPF(s string) string {
	const setup = "\tMOVQ 6512(SP), R15\n\tMOVQ rb+32(FP), R9\n"
	const pf = "\tPREFETCHT0 (R15)\n"
	if n := strings.Count(s, setup); n != 1 {
		panic(fmt.Sprintf("q50XPF: %d prefetch setups, want 1", n))
	}
	if n := strings.Count(s, pf); n != 3 {
		panic(fmt.Sprintf("q50XPF: %d prefetches, want 3", n))
	}
	if strings.Contains(s, "R14") {
		panic("q50XPF: R14 taken")
	}
	s = strings.Replace(s, setup, setup+"\tMOVQ R9, R14\n\tSHLQ $6, R14\n\tNEGQ R14                   // back to the next tile\n", 1)
	return strings.ReplaceAll(s, pf, "\tPREFETCHT0 (R15)(R14*1)\n\tPREFETCHT1 32768(R15)\n")
}

var formats = []format{
	{name: "Q40", doc: "q4_0: d (f16), 16 nibble bytes; x = (c − 8)·d.", bs: 18, off: 8, offShift: 3, two: true, dec: q40Dec(2),
		vdec: q40DecVBMI(2), pipe: true, w8dec: quadDec(2, false), w8raw: true, w8rl: true, w8z4: true},
	{name: "Q80", doc: "q8_0: d (f16), 32 int8 codes; x = c·d.", bs: 34, perm: true, two: true, dec: q80Dec, pipe: true},
	{name: "Q41", doc: "q4_1: d, m (f16), 16 nibble bytes; x = (c − 8)·d + (m + 8·d).", bs: 20, off: 8, offShift: 3,
		min: true, two: true, dec: q40Dec(4), vdec: q40DecVBMI(4), pipe: true, w8dec: quadDec(4, false), w8raw: true, w8rl: true, w8z4: true},
	{name: "Q50", doc: "q5_0: d (f16), qh (32 fifth bits), 16 nibble bytes; x = (c − 16)·d.", bs: 22, off: 16, offShift: 4,
		qh: true, bcst: true, consts: "MOVL $0x00100010, AX\n\tVPBROADCASTD AX, Z19", dec: q5Dec(2, 6, q40Dec),
		vdec: q5Dec(2, 6, q40DecVBMI), vtwo: true, pipe: true, w8dec: quadDec5Of(6, 2, true), w8u: true, w8sgn: true, w8z4: true},
	{name: "Q51", doc: "q5_1: d, m (f16), qh, 16 nibble bytes; x = (c − 16)·d + (m + 16·d).", bs: 24, off: 16, offShift: 4,
		min: true,
		qh:  true, bcst: true, consts: "MOVL $0x00100010, AX\n\tVPBROADCASTD AX, Z19", dec: q5Dec(4, 8, q40Dec),
		vdec: q5Dec(4, 8, q40DecVBMI), vtwo: true, w8dec: quadDec5(8, 4), w8u: true, w8z4: true},
	{name: "IQ4NL", doc: "iq4_nl: d (f16), 16 nibble bytes; x = kvalues[c]·d (int8 levels).", bs: 18, off: 128, offShift: 7,
		consts: "VBROADCASTI32X4 ·intAccIQ4Levels(SB), Z19\n\tMOVQ $0x5555555555555555, AX\n\tKMOVQ AX, K6", dec: iq4Dec,
		vdec: iq4DecVBMI, vtwo: true, pipe: true, w8dec: quadDec(2, true), w8rl: true, w8z4: true},
}

// Frame layout (hardware SP offsets).
const (
	oPB    = 0    // w·d of the tile's rows (lane 4b+h: block b of the quad, accumulator h), a zero row after
	oQP    = 4224 // int16 weight pairs: pair p at 64p, block b's accumulator h's dword at 64p + 16b + 4h
	oTT    = 6272 // T per lane
	oSS    = 6336 // off·ΣW per lane (int32)
	oMT    = 6400 // Σ w·m per lane
	oTN    = 6464 // rows in the tile
	oWP    = 6472 // the tile's first weight
	oRL    = 6480 // rows left after this tile
	oBL    = 6488 // blocks left in the row
	oNQ    = 6496 // blocks left in the quad
	oQB    = 6504 // the block's first weight pair
	oPF    = 6512 // prefetch pointer
	oP1R   = 6528 // pipelined first prepass (p1Pipe): the next tile's next row
	oP1W   = 6536 // its weights
	oP1S   = 6544 // where its w·d goes
	oPAR   = 6552 // 64·(its index & 1): which of the two chains it adds into
	oPRE   = 6560 // 1 where the tile's first prepass ran in the previous tile's row loops
	oFLG   = 6568 // w8u: nonzero where the tile's block quad has a negative weight
	oCH    = 6592 // the chains Σ w·d (row index even, odd) and Σ w·m (even, odd), 64 bytes each
	frame  = 6848
	consts = `VPBROADCASTD ·intAccNibW(SB), Z31
	VMOVDQU16 ·intAcc@DIdx(SB), Z29
	VPBROADCASTD ·%QMAX%(SB), Z27
	VPBROADCASTD ·intAccInvCap(SB), Z26
	VPBROADCASTD ·intAccOne(SB), Z25
	MOVL $0x55555555, AX
	KMOVD AX, K3`
)

// The w8sgn kernels' frame: quad q's and block b's S and P (sgnCodes) at oSM + 64q + 16b and 4
// bytes on (the row loop reads them at R8 + oSM − oQP), after the others' frame.
const (
	oSM    = frame
	frameS = oSM + 1024
)

// p2Pairs is the second prepass of the kernels with int16 weights.
const p2Pairs = `	// W = round(w·d·inv) as int16, rows paired: (W_2p, W_2p+1) per dword; ΣW per lane.
	LEAQ %PB%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	INCQ R10
	SHRQ $1, R10
	VPXORD Z18, Z18, Z18
a@_p2:
	VMULPS (R8), Z14, Z16
	VMULPS 64(R8), Z14, Z17
	VCVTPS2DQ Z16, Z16
	VCVTPS2DQ Z17, Z17
	VPADDD Z16, Z17, Z13
	VPADDD Z13, Z18, Z18
	VPSLLD $16, Z17, Z17
	VPBLENDMW Z16, Z17, K3, Z16
	VMOVDQU32 Z16, (R12)
	ADDQ $128, R8
	ADDQ $64, R12
	DECQ R10
	JNZ  a@_p2`

// p2PairsNoSum is p2Pairs without ΣW, for q8_0 (off = 0: no off·ΣW to subtract). On AMD Zen 4
// (TestIntAccQ80Speed, in cache, thread CPU time, 201 calls alternated, median ns a row) 7.14 →
// 6.99.
var p2PairsNoSum = strings.Replace(strings.Replace(p2Pairs, "\tVPXORD Z18, Z18, Z18\n", "", 1),
	"\tVPADDD Z16, Z17, Z13\n\tVPADDD Z13, Z18, Z18\n", "", 1)

// tailPair is the row-pair loop's lone last row (int16 weights).
const tailPair = `	TESTQ $1, %TN%(SP)
	JZ   a@_join
	XORQ R9, R9                // a lone last row: b reads a again, with weight 0
	%DEC%
%DOTS0%`

// p2Quads is the second prepass of the kernels with 8-bit weights: four rows' int32 W (each
// within ±127) narrowed to bytes, one row a 128-bit lane, and permuted as the codes are
// (quadDec), so dword 4b+h of quad q holds accumulator h's weights of rows 4q..4q+3 in block b.
var p2Quads = `	// W = round(w·d·inv) as int8, rows in quads: (W_4q … W_4q+3) per dword; ΣW per lane.
` + p2Head + `	VPXORD Z18, Z18, Z18
a@_p2:
` + p2Round + p2Sum + p2Pack("Z16", "Z17", "Z12", "Z13", "(R12)") + p2Next + `	JNZ  a@_p2`

// p2QuadsPack is p2Quads for q4_0's, q4_1's and iq4_nl's kernels with 8-bit weights: the four
// rows' int32 W packed to bytes by two VPACKSSDW and one VPACKSSWB (byte 16L + 4r + j: row r's
// W of lane 4L+j; each W is within ±127, so the saturation never acts and the bytes are
// VPMOVDB's), one in-lane VPSHUFB (·intAccPackIdx) into p2Quads' order (byte 16L + 4j + r), and
// ΣW per lane by one VPDPBUSD of bytes 1 (Z20) with them: p2Quads' bytes and sums bit for bit
// (TestIntAcc8Matches), 14 instructions a row quad where p2Quads takes 20. On AMD Zen 4
// (4096 rows of 128 values, four accumulators, in cache, thread CPU time, 201 calls alternated
// with p2Quads' kernels, median ns a row): q4_0 5.03 → 4.78, q4_1 5.97 → 5.73, iq4_nl 5.15 →
// 4.90. With the pass removed altogether (not a working kernel) q4_0 took 4.24: the rest of the
// pass, ~0.5 ns a row, runs before the row loops with nothing beside it.
//
// Where q4_0's kernel (with p2QuadsPack) spends its 4.78 ns a row, by ablation (the time saved
// with each piece dropped from a copy of the kernel, not a working one; same measurement): the
// VPDPBUSD 1.45, the decoder's mask and shifts 0.7 (a mask and a shift since dropped: rawHi), VPERMT2B
// 0.5, this pass 0.5, and the pipelined first prepass's vector operations 1.0 (~0.8 since with
// rows in lanes, rlPipe; q4_1's 2.1, with
// its mins): of those VCVTPH2PS 0.4 (q4_1's two 0.8), VPERMW 0.3, VBROADCASTF32X4 0.25, VMULPS and VRANGEPS
// 0.15 each; the prefetches nothing in cache. The vector pipes are the bound (each 512-bit
// operation costs its slots), not the multiplies nor the scalar work: the first prepass's row
// pointer kept in SI rather than the frame changed nothing (5.01 and 5.01 ns, medians).
var p2QuadsPack = `	// W = round(w·d·inv) as int8, rows in quads: (W_4q … W_4q+3) per dword; ΣW per lane.
` + p2Head + `	VPXORD Z18, Z18, Z18
	VPBROADCASTD ·intAccOnes8(SB), Z20
a@_p2:
` + p2Round + `	VPACKSSDW Z17, Z16, Z16
	VPACKSSDW Z13, Z12, Z12
	VPACKSSWB Z12, Z16, Z16
	VPSHUFB ·intAccPackIdx(SB), Z16, Z16
	VPDPBUSD Z16, Z20, Z18
	VMOVDQU32 Z16, (R12)
` + p2Next + `	JNZ  a@_p2`

// p2QuadsPack2 is p2QuadsPack for the Zen 4 flavours of q4_0's, q4_1's and iq4_nl's
// two-accumulator variants (V8Z4Two): the four rows' int32 W put into p2Quads' order (byte
// 16b + 4h + r takes row r's lane 4b + h) by two merge-masked two-table byte permutes
// (VPERMI2B, AVX-512 VBMI) of the index ·intAccQuadPack2Idx, loaded afresh each quad, the
// first taking rows 0 and 1 under K1 (bytes with r < 2), the second rows 2 and 3 under K2 (the
// rest), as p2RLZ4 packs: each W is within ±127, so its low byte is the byte the saturating
// packs gave, and the weights and sums are p2QuadsPack's bit for bit (TestIntAccTwoMatchesFour
// checks them against the four-accumulator kernels). Two shuffles a row quad
// where p2QuadsPack takes four (two VPACKSSDW, a VPACKSSWB and a VPSHUFB). On AMD Zen 4
// (4096 rows of 128 values, two accumulators, weights 1/4096, thread CPU time, 201 calls in
// cache and 9 passes over 96 MiB on 2 MiB pages, alternated with p2QuadsPack's kernel in one
// process, five runs at load ~23, ns a row min): in cache q4_0 3.65–3.81 → 3.58–3.75, iq4_nl
// 3.96–4.13 → 3.89–4.06, q4_1 4.57–4.95 → 4.51–4.91 (lower in five of five each), streamed
// within ±0.1 either way. Only AMD Zen 4 runs it (zen4Stream); the PREFETCHT0 flavours, which
// Intel runs, keep p2QuadsPack.
var p2QuadsPack2 = func() string {
	pack := `	VPACKSSDW Z17, Z16, Z16
	VPACKSSDW Z13, Z12, Z12
	VPACKSSWB Z12, Z16, Z16
	VPSHUFB ·intAccPackIdx(SB), Z16, Z16
	VPDPBUSD Z16, Z20, Z18
	VMOVDQU32 Z16, (R12)
`
	loop := "a@_p2:\n"
	if strings.Count(p2QuadsPack, pack) != 1 || strings.Count(p2QuadsPack, loop) != 1 {
		panic("p2QuadsPack2: p2QuadsPack changed")
	}
	return strings.NewReplacer(loop, `	MOVQ $0x3333333333333333, AX
	KMOVQ AX, K1
	KNOTQ K1, K2
`+loop, pack, `	VMOVDQU64 ·intAccQuadPack2Idx(SB), Z21
	VPERMI2B Z17, Z16, K1, Z21
	VPERMI2B Z13, Z12, K2, Z21
	VPDPBUSD Z21, Z20, Z18
	VMOVDQU32 Z21, (R12)
`).Replace(p2QuadsPack)
}()

// p2QuadsPack2On makes the Zen 4 flavours of the two-accumulator variants with 8-bit weights
// pack by p2QuadsPack2.
const p2QuadsPack2On = true

// p2QuadsU is p2Quads for the kernels with unsigned 8-bit weights (w8u; q = 255): the bytes
// packed by p2PackU, and beside ΣW (the sum of the signed W) Σ max(W, 0) per lane by one
// VPDPBUSD of the packed bytes with bytes 1 (Z10): the two differ exactly where a lane has a
// negative W, and there the flag (oFLG) is set and the tile's weights are packed again split into
// max(W, 0) (at QP) and max(−W, 0) (1024 bytes on), for the row loop's second pass (pass2U). On
// AMD Zen 4 (TestIntAcc8Speed's shape, 61 calls alternated with the previous kernel, which
// packed by p2Pack and found a negative W by VPMINSD, min/median ns a row, three runs) q5_1
// 7.40–7.44/7.52–7.55 → 7.14–7.18/7.23–7.32 in cache, streamed 9.6–10.2 → 9.5–9.8 (medians).
var p2QuadsU = `	// W = round(w·d·inv) as unsigned bytes, rows in quads: (W_4q … W_4q+3) per dword; ΣW and
	// Σ max(W, 0) per lane (Z18, Z10).
` + p2Head + `	VPXORD Z18, Z18, Z18
	VPXORD Z10, Z10, Z10
	VPBROADCASTD ·intAccOnes8(SB), Z15
a@_p2:
` + p2Round + p2Sum + p2PackU + `	VPDPBUSD Z15, Z16, Z10
` + p2Next + `	JNZ  a@_p2
	VPXORD Z9, Z9, Z9
	VPCMPD $4, Z18, Z10, K1
	KMOVW K1, AX
	MOVL AX, %FLG%(SP)
	TESTL AX, AX
	JZ   a@_p2d
` + p2Head + `a@_p2s:
` + p2Round + p2Split + p2Next + `	JNZ  a@_p2s
a@_p2d:`

// p2QuadsU2 is p2QuadsU for q5_1's Zen 4 kernel (V8Z4): the four rows' int32 W put into
// p2Quads' order by p2QuadsPack2's two merge-masked two-table byte permutes (VPERMI2B,
// ·intAccQuadPack2Idx loaded afresh each quad; K1 rows 0 and 1, K2 rows 2 and 3) in place of
// p2PackU's two VPACKSSDW, VPACKUSWB and VPSHUFB: a W within 0..255 has the saturating packs'
// byte as its low byte, so where a lane holds no negative W the bytes are p2PackU's; a negative
// W (≥ −255) leaves W + 256 there, its Σ of bytes then exceeds ΣW by 256 a negative W where
// p2PackU's exceeded it by −W, so the flag is set for the same lanes and the second pass
// packs the whole tile again as before: the same weights, sums and flag bit for bit
// (TestIntAcc8Matches). Two shuffles a row quad fewer. On AMD Zen 4 (4096 rows of 128 values,
// four accumulators, weights > 0, thread CPU time, 61 calls alternated with the kernel before in
// one process, in cache and over 1M rows on 2 MiB pages, six runs at load ~9–20, ns a row
// min/median): in cache 6.89–7.97/7.02–8.23 → 6.81–7.90/6.93–8.21, streamed 7.06–8.23/7.17–8.59
// → 7.01–8.22/7.10–8.51, lower in six of six each (−0.05 to −0.08 in cache, ~1 %). Only AMD
// Zen 4 runs it (zen4Stream); the V8 kernel, which Intel runs, keeps p2PackU.
var p2QuadsU2 = func() string {
	pack := p2PackU + "\tVPDPBUSD Z15, Z16, Z10\n"
	loop := "a@_p2:\n"
	if strings.Count(p2QuadsU, pack) != 1 || strings.Count(p2QuadsU, loop) != 1 {
		panic("p2QuadsU2: p2QuadsU changed")
	}
	return strings.NewReplacer(loop, `	MOVQ $0x3333333333333333, AX
	KMOVQ AX, K1
	KNOTQ K1, K2
`+loop, pack, `	VMOVDQU64 ·intAccQuadPack2Idx(SB), Z21
	VPERMI2B Z17, Z16, K1, Z21
	VPERMI2B Z13, Z12, K2, Z21
	VMOVDQU32 Z21, (R12)
	VPDPBUSD Z15, Z21, Z10
`).Replace(p2QuadsU)
}()

// p2QuadsU2On makes q5_1's Zen 4 kernel with 8-bit weights pack by p2QuadsU2.
const p2QuadsU2On = true

// p2QuadsS2 is p2QuadsS for q5_0's Zen 4 kernel (V8Z4): the four rows' int32 V put into
// p2Quads' order by two two-table byte permutes (VPERMT2B of ·intAccQuadPack2Idx, kept in Z0
// for the tile: rows 0 and 1 from Z16:Z17, rows 2 and 3 from Z12:Z13, each byte at its place)
// and one bitwise select of the two (VPTERNLOGD, Z1: 0xFFFF0000 a dword, rows 2 and 3's bytes),
// in place of p2PackU's two VPACKSSDW, VPACKUSWB and VPSHUFB (the k registers are taken here,
// so not p2QuadsU2's masked permutes). A V within 0..255 has the saturating packs' byte as its
// low byte; a negative V sets the flag by the smallest V (Z10) as before, and the second pass
// packs the tile and sums Z11 afresh: the same weights, S, P and sums bit for bit
// (TestIntAcc8Matches). Z0 and Z1, the row loop's sums, are zeroed there. One shuffle a row
// quad fewer (two permutes and a logic operation for four shuffles). On AMD Zen 4 (4096 rows of
// 128 values, four accumulators, weights > 0, thread CPU time, 61 calls alternated with the
// kernel before in one process, in cache and over 1M rows on 2 MiB pages, six runs at load
// ~9, ns a row min/median): in cache 7.18–7.25/7.30–8.69 → 7.14–7.24/7.27–8.49, streamed
// 7.40–7.55/7.56–8.38 → 7.37–7.49/7.53–8.45, min lower in six of six each (−0.01 to −0.08,
// ~0.5 %). Only AMD Zen 4 runs it (zen4Stream); the V8 kernel keeps p2PackU.
var p2QuadsS2 = func() string {
	pack := "\tVPACKSSDW Z17, Z16, Z16\n\tVPACKSSDW Z13, Z12, Z12\n\tVPACKUSWB Z12, Z16, Z16\n\tVPSHUFB ·intAccPackIdx(SB), Z16, Z16\n"
	loop := "a@_p2:\n"
	if strings.Count(p2QuadsS, pack) != 1 || strings.Count(p2QuadsS, loop) != 1 {
		panic("p2QuadsS2: p2QuadsS changed")
	}
	return strings.NewReplacer(loop, `	VMOVDQU64 ·intAccQuadPack2Idx(SB), Z0
	MOVL $0xFFFF0000, AX
	VPBROADCASTD AX, Z1
`+loop, pack, `	VPERMT2B Z17, Z0, Z16
	VPERMT2B Z13, Z0, Z12
	VPTERNLOGD $0xD8, Z1, Z12, Z16
`).Replace(p2QuadsS)
}()

// p2QuadsS2On makes q5_0's Zen 4 kernel with 8-bit weights pack by p2QuadsS2.
const p2QuadsS2On = true

// p2Split is the second pass's split of the four rows' W (Z16, Z17, Z12, Z13; Z9 zero) into
// max(W, 0), packed at (R12), and max(−W, 0), packed 1024 bytes on (p2QuadsU's and p2QuadsS's).
var p2Split = `	VPSUBD Z16, Z9, Z20
	VPSUBD Z17, Z9, Z21
	VPSUBD Z12, Z9, Z22
	VPSUBD Z13, Z9, Z23
	VPMAXSD Z9, Z16, Z16
	VPMAXSD Z9, Z17, Z17
	VPMAXSD Z9, Z12, Z12
	VPMAXSD Z9, Z13, Z13
	VPMAXSD Z9, Z20, Z20
	VPMAXSD Z9, Z21, Z21
	VPMAXSD Z9, Z22, Z22
	VPMAXSD Z9, Z23, Z23
` + p2Pack("Z16", "Z17", "Z12", "Z13", "(R12)") + p2Pack("Z20", "Z21", "Z22", "Z23", "1024(R12)")

// p2QuadsS is p2QuadsU for the kernels that fold the sign into the codes (w8sgn): per row and
// block the sign s of accumulator 0's w·d (lane 4b: the sign of d where the weights are ≥ +0) is
// spread over the block's four lanes (VPSHUFD, VPMOVD2M), ΣW summed from the signed W, and
// V = s·W (a masked VPSUBD from zero) packed as p2QuadsU packs W: V ≥ 0 wherever a block's
// weights share accumulator 0's sign, so no second pass unless some weight is negative. The four
// rows' masks, joined (KUNPCK) and made bytes (VPMOVM2B), permuted as the weights are, give the
// quad's S (byte 4(4b+h) + i 0xFF where row i's s is −1 in block b); Z11 sums −Σ V over the rows
// of negative sign (VPDPBUSD of the packed V with S), and the odd dwords become P (0x10, or 0xF0
// where S is set; K7), stored at oSM for sgnCodes. Where the flag is set the second pass packs
// max(V, 0) and max(−V, 0) and sums Z11 again from the two parts.
var p2QuadsS = `	// W = round(w·d·inv), ΣW per lane; V = s·W as unsigned bytes, rows in quads, the smallest V
	// per lane in Z10; S and P; −Σ V over the negative rows in Z11.
` + p2Head + `	VPXORD Z18, Z18, Z18
	VPXORD Z10, Z10, Z10
	VPXORD Z9, Z9, Z9
	VPXORD Z11, Z11, Z11
	MOVL $0xAAAA, AX
	KMOVW AX, K7
a@_p2:
` + p2Sign + p2Sum + p2Neg + `	VPMINSD Z16, Z17, Z20
	VPMINSD Z12, Z13, Z21
	VPMINSD Z20, Z21, Z20
	VPMINSD Z20, Z10, Z10
	KUNPCKWD K1, K2, K1
	KUNPCKWD K3, K6, K3
	KUNPCKDQ K1, K3, K1
	VPMOVM2B K1, Z22
	VPERMB Z22, Z30, Z22
` + p2PackU + `	VPDPBUSD Z22, Z16, Z11
	VPTERNLOGD $0xDC, Z31, Z19, K7, Z22
` + fmt.Sprintf("\tVMOVDQU32 Z22, %d(R12)\n", oSM-oQP) + p2Next + `	JNZ  a@_p2
	VPCMPD $1, Z9, Z10, K1
	KMOVW K1, AX
	MOVL AX, %FLG%(SP)
	TESTL AX, AX
	JZ   a@_p2d
	VPXORD Z11, Z11, Z11
	VPXORD Z15, Z15, Z15
` + p2Head + `a@_p2s:
` + p2Sign + p2Neg + fmt.Sprintf("\tVPSHUFD $0xA0, %d(R12), Z8\n", oSM-oQP) + p2Split + `	VPDPBUSD Z8, Z16, Z11
	VPDPBUSD Z8, Z20, Z15
` + p2Next + `	JNZ  a@_p2s
	VPSUBD Z15, Z11, Z11
a@_p2d:`

// p2Sign is p2Round for p2QuadsS: between the multiplies and the conversions, lane 4b's sign of
// each row (accumulator 0's w·d·inv) spread over block b's lanes, as masks K1, K2, K3, K6.
const p2Sign = `	VMULPS (R8), Z14, Z16
	VMULPS 64(R8), Z14, Z17
	VMULPS 128(R8), Z14, Z12
	VMULPS 192(R8), Z14, Z13
	VPSHUFD $0, Z16, Z20
	VPSHUFD $0, Z17, Z21
	VPSHUFD $0, Z12, Z22
	VPSHUFD $0, Z13, Z23
	VPMOVD2M Z20, K1
	VPMOVD2M Z21, K2
	VPMOVD2M Z22, K3
	VPMOVD2M Z23, K6
	VCVTPS2DQ Z16, Z16
	VCVTPS2DQ Z17, Z17
	VCVTPS2DQ Z12, Z12
	VCVTPS2DQ Z13, Z13
`

// p2Neg negates each row's W where its sign mask is set (Z9 = 0): V = s·W.
const p2Neg = `	VPSUBD Z16, Z9, K1, Z16
	VPSUBD Z17, Z9, K2, Z17
	VPSUBD Z12, Z9, K3, Z12
	VPSUBD Z13, Z9, K6, Z13
`

// sgnCodes splits a row quad's permuted bytes (Z20, quadDec5Of raw) into the codes of values
// 0..15 (Z20) and 16..31 (Z24) with each row's sign folded in: nibble XOR S (one VPTERNLOGD,
// S the block's dword at off(R8), broadcast: byte i 0xFF where row i's s is −1, else 0), then
// P added where the fifth bit is set (K6, K7; P at off+4(R8): byte i 0x10, or 0xF0 where
// negative), so each byte is c where s = 1 and ~c = −c − 1 where s = −1 (c = nibble + 16·fifth
// bit ≤ 31, as int8). With V = s·W, V·(c XOR S) = W·c − V·[s = −1], and p2QuadsS adds the
// second term back through the offset sum. The same vector operations as quadDec5's split.
func sgnCodes(off int) string {
	return fmt.Sprintf(`	VPSRLW $4, Z20, Z24
	VPTERNLOGD.BCST $0x6A, %[1]d(R8), Z31, Z24
	VPTERNLOGD.BCST $0x6A, %[1]d(R8), Z31, Z20
	VPBROADCASTD %[2]d(R8), Z21
	VPADDB Z21, Z20, K6, Z20
	VPADDB Z21, Z24, K7, Z24
`, off, off+4)
}

// sgnDots is dots, the row loop's products of a quad, for a w8sgn kernel: sgnCodes first (the
// quad's S and P at sm(R8)) and the low codes taken from Z20.
func sgnDots(dots string, sm int) string {
	if !strings.Contains(dots, "VPDPBUSD Z23, ") {
		panic("sgnDots: dots changed")
	}
	return sgnCodes(sm) + strings.ReplaceAll(dots, "VPDPBUSD Z23, ", "VPDPBUSD Z20, ")
}

// p2PackU is p2Pack of Z16, Z17, Z12, Z13 into (R12) for W within 0…255 (w8u), as p2QuadsPack
// packs (two VPACKSSDW, VPACKUSWB, the in-lane VPSHUFB ·intAccPackIdx: 4 shuffles where p2Pack
// takes 8); a negative W becomes 0 (VPACKUSWB saturates), which the caller's flag catches and
// its second pass packs again with p2Pack. The packed bytes stay in Z16.
const p2PackU = `	VPACKSSDW Z17, Z16, Z16
	VPACKSSDW Z13, Z12, Z12
	VPACKUSWB Z12, Z16, Z16
	VPSHUFB ·intAccPackIdx(SB), Z16, Z16
	VMOVDQU32 Z16, (R12)
`

// p2Head points the second prepass at the tile's products (R8) and packed weights (R12), R10
// its row quads.
const p2Head = `	LEAQ %PB%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	ADDQ $3, R10
	SHRQ $2, R10
`

// p2Round rounds a quad's four rows of w·d (R8) times inv (Z14) to int32 W in Z16, Z17, Z12, Z13.
const p2Round = `	VMULPS (R8), Z14, Z16
	VMULPS 64(R8), Z14, Z17
	VMULPS 128(R8), Z14, Z12
	VMULPS 192(R8), Z14, Z13
	VCVTPS2DQ Z16, Z16
	VCVTPS2DQ Z17, Z17
	VCVTPS2DQ Z12, Z12
	VCVTPS2DQ Z13, Z13
`

// p2Sum adds a quad's W to ΣW (Z18).
const p2Sum = `	VPADDD Z16, Z17, Z20
	VPADDD Z12, Z13, Z21
	VPADDD Z20, Z21, Z20
	VPADDD Z20, Z18, Z18
`

// p2Next steps the second prepass to the next quad.
const p2Next = `	ADDQ $256, R8
	ADDQ $64, R12
	DECQ R10
`

// p2Pack narrows four rows' int32 W (a, b, c, d) to bytes, one row a 128-bit lane, permutes
// them as the codes are (Z30) and stores the 64 bytes at dst.
func p2Pack(a, b, c, d, dst string) string {
	x := func(z string) string { return "X" + z[1:] }
	return fmt.Sprintf(`	VPMOVDB %[1]s, %[5]s
	VPMOVDB %[2]s, %[6]s
	VPMOVDB %[3]s, %[7]s
	VPMOVDB %[4]s, %[8]s
	VINSERTI32X4 $1, %[6]s, %[1]s, %[1]s
	VINSERTI32X4 $2, %[7]s, %[1]s, %[1]s
	VINSERTI32X4 $3, %[8]s, %[1]s, %[1]s
	VPERMB %[1]s, Z30, %[1]s
	VMOVDQU32 %[1]s, %[9]s
`, a, b, c, d, x(a), x(b), x(c), x(d), dst)
}

// pass2U is the second pass of the kernels with unsigned 8-bit weights (w8u) over a block's
// rows, where the flag is set: the sums negated, the negative parts max(−W, 0) added by the row
// loop again, and the sums negated back: Σ max(W, 0)·c − Σ max(−W, 0)·c = Σ W·c, exact in int32.
func pass2U(loop, tail, setup string) string {
	var neg strings.Builder
	neg.WriteString("\tVPXORD Z22, Z22, Z22\n")
	for _, r := range append(set1[:], set2[:]...) {
		fmt.Fprintf(&neg, "\tVPSUBD %[1]s, Z22, %[1]s\n", r)
	}
	body := strings.NewReplacer("a@_", "a@_n", "%DOTS0%", "%DOTS0N%", "%DOTS1%", "%DOTS1N%").Replace(
		loop + "a@_odd:\n" + tail + "\na@_join:\n")
	return `	CMPL %FLG%(SP), $0
	JEQ  a@_pass1
` + neg.String() + `	LEAQ (DI)(BX*1), R12
	MOVQ %QB%(SP), R8
	ADDQ $1024, R8
	MOVQ %PF%(SP), R15
	MOVQ rb+32(FP), R9
	MOVQ %TN%(SP), R10
	` + setup + "\n" + body + neg.String() + "a@_pass1:"
}

// quadSetup starts a block's row-quad loop (8-bit weights): R14 two rows on, Z13 quadDec's
// index, K1..K3 the lanes of a quad's rows 1..3 (the last quad's loads).
const quadSetup = `LEAQ (R12)(R9*2), R14
	VMOVDQU64 ·intAccQuad2Idx(SB), Z13
	MOVQ $0x00000000FFFF0000, AX
	KMOVQ AX, K1
	MOVQ $0x0000FFFF00000000, AX
	KMOVQ AX, K2
	MOVQ $0xFFFF000000000000, AX
	KMOVQ AX, K3`

// loopQuad is the row-quad loop of the kernels with 8-bit weights, two quads a step (into set1
// and set2), prefetching two lines' steps a quad.
const loopQuad = `	SHRQ $3, R10
	JZ   a@_pair1
a@_pair:
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%DEC%
%DOTS0%
	LEAQ (R12)(R9*4), R12
	LEAQ (R14)(R9*4), R14
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%DEC%
%DOTS1%
	ADDQ $128, R8
	LEAQ (R12)(R9*4), R12
	LEAQ (R14)(R9*4), R14
	DECQ R10
	JNZ  a@_pair
a@_pair1:
	TESTQ $4, %TN%(SP)
	JZ   a@_odd
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%DEC%
%DOTS0%
	ADDQ $64, R8
	LEAQ (R12)(R9*4), R12
	LEAQ (R14)(R9*4), R14
`

// tailQuad is the row-quad loop's last 1–3 rows: the missing rows' loads masked off (their
// weights are 0, the zero rows after the tile's w·d).
const tailQuad = `	MOVQ %TN%(SP), AX
	ANDQ $3, AX
	JZ   a@_join
	KXORQ K3, K3, K3
	CMPQ AX, $2
	JAE  a@_t2
	KXORQ K1, K1, K1
a@_t2:
	CMPQ AX, $3
	JAE  a@_t3
	KXORQ K2, K2, K2
a@_t3:
	%DECT%
%DOTS0%`

const accTmpl = `
// func multiAcc@INT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// %DOC%
TEXT ·multiAcc@INT(SB), 0, $%FRAME%-64
	MOVQ m+40(FP), AX
	TESTQ AX, AX
	JZ   a@_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   a@_done
	%CONSTS%
	%MINCONST%
	MOVQ rows+24(FP), DI
	MOVQ w+48(FP), AX
	MOVQ AX, %WP%(SP)
	MOVQ m+40(FP), AX
	MOVQ AX, %RL%(SP)
%PREINIT%

a@_tile:
	MOVQ %RL%(SP), AX
	CMPQ AX, $64
	JLE  a@_tn
	MOVQ $64, AX
a@_tn:
	MOVQ AX, %TN%(SP)
	SUBQ AX, %RL%(SP)
	MOVQ rb+32(FP), R12
	SHLQ $7, R12
	ADDQ DI, R12
	MOVQ R12, %PF%(SP)         // %PFDOC%
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	MOVQ AX, %BL%(SP)
	XORQ BX, BX                // byte offset of the block in a row
	MOVQ acc+0(FP), CX         // accumulators of the block

a@_quad:
	// Up to four blocks at a time: K4 (K5) marks the words of the row's first (second) 64
	// bytes from the quad's first block that hold its scales (and mins).
	MOVQ %BL%(SP), AX
	CMPQ AX, $4
	JLE  a@_nq
	MOVQ $4, AX
a@_nq:
	MOVQ AX, %NQ%(SP)
	SUBQ AX, %BL%(SP)
	DECQ AX
	IMULQ $%BS%, AX
	ADDQ $%HDR%, AX
	SHRQ $1, AX
	MOVQ $-1, R9
	BZHIQ AX, R9, R9
	KMOVQ R9, K4
	SHRQ $32, R9
	KMOVQ R9, K5

%PRECHECK%
	// w·d per row (lane 4b+h), its largest magnitude per lane (and Σ w·m), two rows a step
	// with a chain each (row a: Z10, Z11, Z9; row b: Z28, Z18, Z17), joined after.
	LEAQ (DI)(BX*1), R12
	MOVQ %WP%(SP), R8
	LEAQ %PB%(SP), R15
	MOVQ %TN%(SP), R10
	MOVQ wstride+56(FP), R9
	MOVQ rb+32(FP), R11
	VXORPS Z10, Z10, Z10       // max |w·d|
	VXORPS Z11, Z11, Z11       // Σ w·m
	VXORPS Z9, Z9, Z9          // Σ w·d
	VXORPS Z28, Z28, Z28
	VXORPS Z18, Z18, Z18
	VXORPS Z17, Z17, Z17
	SHRQ $1, R10
	JZ   a@_p1o
a@_p1:
	%P1A%
	%P1B%
	LEAQ (R8)(R9*2), R8
	LEAQ (R12)(R11*2), R12
	ADDQ $128, R15
	DECQ R10
	JNZ  a@_p1
%PREBLOCK%
a@_p1o:
	TESTQ $1, %TN%(SP)
	JZ   a@_p1e
	%P1A%
	ADDQ $64, R15
a@_p1e:
	VRANGEPS $0x0B, Z28, Z10, Z10
	%MINJOIN%
	VXORPS Z15, Z15, Z15
	VMOVUPS Z15, (R15)         // %ZROWDOC%
%ZROWS%	%MINSTORE%
	// inv = min(32767/M, cap) and T = 1/inv where M > 0; both 0 where M = 0.
	VXORPS Z12, Z12, Z12
	VCMPPS $0x0E, Z12, Z10, K1 // M > 0
	VDIVPS.Z Z10, Z27, K1, Z14
	VMINPS Z26, Z14, K1, Z14
	VDIVPS.Z Z14, Z25, K1, Z15
	VMOVUPS Z15, %TT%(SP)

%P2%
	%SUMSTORE%
	LEAQ %QP%(SP), AX
	MOVQ AX, %QB%(SP)
	LEAQ %TT%(SP), R13
%PIPESETUP%

a@_blk:
	// Row pairs: the codes of rows a and b widened and multiplied into int32 sums (Z0..Z7; where
	// the loop takes two pairs a step, the second pair's into %SET2%, joined after).
%ZERO%
	LEAQ (DI)(BX*1), R12
	MOVQ %QB%(SP), R8
	MOVQ %PF%(SP), R15
	MOVQ rb+32(FP), R9
	MOVQ %TN%(SP), R10
	%PAIRSETUP%
%LOOP%
a@_odd:
	%PFEXTRA%
	MOVQ R15, %PF%(SP)
%TAIL%
a@_join:
%PASS2%
%JOIN%

a@_fin:
	// acc_h += T·(Σ W·c − off·ΣW) (+ Σ w·m), per accumulator's two vectors (R13: the block's
	// lanes of T; off·ΣW 64 bytes on, Σ w·m 128).
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	MOVQ CX, R12
%FINISH%
	ADDQ $%BS%, BX
	ADDQ $128, CX
	ADDQ $16, %QB%(SP)
	ADDQ $16, R13
	DECQ %NQ%(SP)
	JNZ  a@_blk
	CMPQ %BL%(SP), $0
	JNE  a@_quad
%CATCHUP%

	MOVQ %TN%(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	IMULQ wstride+56(FP), AX
	ADDQ AX, %WP%(SP)
	CMPQ %RL%(SP), $0
	JNE  a@_tile

a@_done:
	VZEROUPPER
	RET
`

// finish is the conversion and scaling of the accumulators' int32 sums (Z2h, Z2h+1).
func finish(f format) string {
	var b strings.Builder
	for h := 0; h < nacc; h++ {
		lo, hi := fmt.Sprintf("Z%d", 2*h), fmt.Sprintf("Z%d", 2*h+1)
		if f.perm {
			fmt.Fprintf(&b, "\tVSHUFI64X2 $0x44, %[2]s, %[1]s, Z8\n\tVSHUFI64X2 $0xEE, %[2]s, %[1]s, %[2]s\n\tVMOVDQA64 Z8, %[1]s\n", lo, hi)
		}
		if f.off != 0 {
			fmt.Fprintf(&b, "\tVPSUBD.BCST %d(R13), %s, %s\n\tVPSUBD.BCST %d(R13), %s, %s\n", 64+4*h, lo, lo, 64+4*h, hi, hi)
		}
		fmt.Fprintf(&b, "\tVCVTDQ2PS %[1]s, %[1]s\n\tVCVTDQ2PS %[2]s, %[2]s\n", lo, hi)
		fmt.Fprintf(&b, "\tVMOVUPS (R12), Z8\n\tVMOVUPS 64(R12), Z9\n")
		if f.min {
			fmt.Fprintf(&b, "\tVADDPS.BCST %d(R13), Z8, Z8\n\tVADDPS.BCST %d(R13), Z9, Z9\n", 128+4*h, 128+4*h)
		}
		fmt.Fprintf(&b, "\tVFMADD231PS.BCST %[1]d(R13), %[2]s, Z8\n\tVFMADD231PS.BCST %[1]d(R13), %[3]s, Z9\n", 4*h, lo, hi)
		fmt.Fprintf(&b, "\tVMOVUPS Z8, (R12)\n\tVMOVUPS Z9, 64(R12)\n")
		if h < nacc-1 {
			b.WriteString("\tADDQ DX, R12\n")
		}
	}
	return b.String()
}

// loop2 is the row-pair loop taking two pairs a step (into set1 and set2).
const loop2 = `	SHRQ $2, R10
	JZ   a@_pair1
a@_pair:
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%DEC%
%DOTS0%
	LEAQ (R12)(R9*2), R12
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%DEC%
%DOTS1%
	ADDQ $128, R8
	LEAQ (R12)(R9*2), R12
	DECQ R10
	JNZ  a@_pair
a@_pair1:
	TESTQ $2, %TN%(SP)
	JZ   a@_odd
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%DEC%
%DOTS0%
	ADDQ $64, R8
	LEAQ (R12)(R9*2), R12
`

// loop1 is the row-pair loop taking one pair a step (into set1).
const loop1 = `	SHRQ $1, R10
	JZ   a@_odd
a@_pair:
	%PFI% (R15)
	ADDQ $%PFSTEP%, R15
	%DEC%
%DOTS0%
	ADDQ $64, R8
	LEAQ (R12)(R9*2), R12
	DECQ R10
	JNZ  a@_pair
`

// set1 and set2 are the two sets of int32 sums: sums 2h and 2h+1 of a set are accumulator h's.
var (
	set1 = [8]string{"Z0", "Z1", "Z2", "Z3", "Z4", "Z5", "Z6", "Z7"}
	set2 = [8]string{"Z8", "Z9", "Z14", "Z15", "Z16", "Z17", "Z18", "Z28"}
)

// dots adds a row pair's codes (Z23, Z24) times accumulator h's two weights (the dword at
// off+4h(R8), broadcast into Z10+h once) into sums 2h and 2h+1 of set.
func dots(off int, set [8]string) string {
	var b strings.Builder
	for h := 0; h < nacc; h++ {
		fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), Z%d\n", off+4*h, 10+h)
	}
	for h := 0; h < nacc; h++ {
		fmt.Fprintf(&b, "\tVPDPWSSD Z%d, Z23, %s\n\tVPDPWSSD Z%d, Z24, %s\n", 10+h, set[2*h], 10+h, set[2*h+1])
	}
	return strings.TrimRight(b.String(), "\n")
}

// dotsW is dotsOf, or where w8 the row quad's unsigned codes (Z23, Z24) times accumulator h's
// four signed weight bytes (the dword at off+4h(R8), broadcast from memory by each VPDPBUSD).
func dotsW(w8 bool, f format, off int, set [8]string) string {
	if !w8 {
		if off != 0 && !f.bcst {
			return dots(off, set)
		}
		return dotsOf(f, off, set)
	}
	var b strings.Builder
	if f.w8u {
		for h := 0; h < nacc; h++ {
			fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), Z22\n\tVPDPBUSD Z23, Z22, %s\n\tVPDPBUSD Z24, Z22, %s\n", off+4*h, set[2*h], set[2*h+1])
		}
		return strings.TrimRight(b.String(), "\n")
	}
	for h := 0; h < nacc; h++ {
		fmt.Fprintf(&b, "\tVPDPBUSD.BCST %d(R8), Z23, %s\n\tVPDPBUSD.BCST %d(R8), Z24, %s\n", off+4*h, set[2*h], off+4*h, set[2*h+1])
	}
	return strings.TrimRight(b.String(), "\n")
}

// zero clears set1 (and set2 where two).
// dotsOf is f's dots: where f.bcst, each VPDPWSSD broadcasts its weight dword from memory.
func dotsOf(f format, off int, set [8]string) string {
	if !f.bcst {
		return dots(off, set)
	}
	var b strings.Builder
	for h := 0; h < nacc; h++ {
		fmt.Fprintf(&b, "\tVPDPWSSD.BCST %d(R8), Z23, %s\n\tVPDPWSSD.BCST %d(R8), Z24, %s\n", off+4*h, set[2*h], off+4*h, set[2*h+1])
	}
	return strings.TrimRight(b.String(), "\n")
}

func zero(two bool) string {
	var b strings.Builder
	for i := range 2 * nacc {
		fmt.Fprintf(&b, "\tVPXORD %[1]s, %[1]s, %[1]s\n", set1[i])
		if two {
			fmt.Fprintf(&b, "\tVPXORD %[1]s, %[1]s, %[1]s\n", set2[i])
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// join adds set2 into set1 where two.
func join(two bool) string {
	var b strings.Builder
	for i := 0; two && i < 2*nacc; i++ {
		fmt.Fprintf(&b, "\tVPADDD %[2]s, %[1]s, %[1]s\n", set1[i], set2[i])
	}
	return strings.TrimRight(b.String(), "\n")
}

func u32(v float32) uint32 { return math.Float32bits(v) }

func header() string {
	var b strings.Builder
	b.WriteString(`// Code generated by gen_intacc.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// Integer accumulate kernels of the block formats (multi_intacc_amd64.go states the contract):
// per tile of ≤ 64 rows and per 32-value block, the weights w·d quantized to int16 with one
// scale per accumulator, rows taken in pairs, the two rows' codes widened to interleaved words
// and summed into int32 with VPDPWSSD, converted and scaled once per tile and block.

`)
	for _, f := range formats {
		// Word k < 16 of the quad's scales: block k/4's d (and, words 16.., its min).
		var idx [32]uint16
		for k := 0; k < 16; k++ {
			idx[k] = uint16(k / 4 * f.bs / 2)
			idx[16+k] = idx[k] + 1
		}
		for i := 0; i < 32; i += 4 {
			fmt.Fprintf(&b, "DATA ·intAcc%sDIdx+%d(SB)/8, $0x%04x%04x%04x%04x\n", f.name, 2*i, idx[i+3], idx[i+2], idx[i+1], idx[i])
		}
		fmt.Fprintf(&b, "GLOBL ·intAcc%sDIdx(SB), RODATA|NOPTR, $64\n\n", f.name)
		if f.qh && f.min {
			// laneMins' index: word 4b of the 16 block b's d, word 4b+1 its min (the rest d).
			for k := 0; k < 16; k++ {
				idx[k] = uint16(k / 4 * f.bs / 2)
				if k%4 == 1 {
					idx[k]++
				}
				idx[16+k] = idx[k]
			}
			for i := 0; i < 32; i += 4 {
				fmt.Fprintf(&b, "DATA ·intAcc%sLDIdx+%d(SB)/8, $0x%04x%04x%04x%04x\n", f.name, 2*i, idx[i+3], idx[i+2], idx[i+1], idx[i])
			}
			fmt.Fprintf(&b, "GLOBL ·intAcc%sLDIdx(SB), RODATA|NOPTR, $64\n\n", f.name)
			// pairHeads' index: lane b of the 16 words row a's d and min of block b, then row b's
			// (loaded two words on).
			for k := 0; k < 16; k++ {
				idx[k] = uint16(k/4*f.bs/2 + k%4)
				idx[16+k] = idx[k]
			}
			for i := 0; i < 32; i += 4 {
				fmt.Fprintf(&b, "DATA ·intAcc%sLD2Idx+%d(SB)/8, $0x%04x%04x%04x%04x\n", f.name, 2*i, idx[i+3], idx[i+2], idx[i+1], idx[i])
			}
			fmt.Fprintf(&b, "GLOBL ·intAcc%sLD2Idx(SB), RODATA|NOPTR, $64\n\n", f.name)
			// q51XHeadD's: the same as dwords (word pairs 12b + 2j, 12b + 2j + 1 are dword 6b + j).
			var d [16]uint32
			for k := range d {
				d[k] = uint32(idx[2*k] / 2)
			}
			for i := 0; i < 16; i += 2 {
				fmt.Fprintf(&b, "DATA ·intAcc%sLD2DIdx+%d(SB)/8, $0x%08x%08x\n", f.name, 4*i, d[i+1], d[i])
			}
			fmt.Fprintf(&b, "GLOBL ·intAcc%sLD2DIdx(SB), RODATA|NOPTR, $64\n\n", f.name)
		}
	}
	// iq4_nl's codebook as its levels + 128 (unsigned bytes), for VPSHUFB.
	var lv [2]uint64
	for i, v := range [16]int{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113} {
		lv[i/8] |= uint64(v+128) << (8 * (i % 8))
	}
	// q40DecVBMI's VPERMT2B index: byte 4k of the 64 takes row a's byte k, byte 4k+2 row b's
	// (64 + k: the second table), bytes 4k+1 and 4k+3 row a's byte 16, which its load zeroed.
	for i := 0; i < 64; i += 8 {
		var v uint64
		for j := 0; j < 8; j++ {
			k, x := (i+j)/4, uint64(16)
			switch (i + j) % 4 {
			case 0:
				x = uint64(k)
			case 2:
				x = uint64(64 + k)
			}
			v |= x << (8 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccPairIdx+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·intAccPairIdx(SB), RODATA|NOPTR, $64\n\n")
	// q5DecGF's VPERMB indices (byte 4k takes code k of row a, byte 4k+2 code k of row b: byte
	// k and 32 + k of the 64 for values 0..15, 16 + k and 48 + k for values 16..31; the odd
	// bytes zeroed by the mask) and its affine matrices (per 128-bit lane: the low nibbles to
	// bits 0..3 in lanes 0 and 2, the high nibbles in lanes 1 and 3, the other bits 0).
	for t, base := range [2]int{0, 16} {
		name := [2]string{"intAccQ5GFIdx", "intAccQ5GFIdx2"}[t]
		for i := 0; i < 64; i += 8 {
			var v uint64
			for j := 0; j < 8; j++ {
				k, x := (i+j)/4, uint64(0)
				switch (i + j) % 4 {
				case 0:
					x = uint64(base + k)
				case 2:
					x = uint64(32 + base + k)
				}
				v |= x << (8 * j)
			}
			fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $0x%016x\n", name, i, v)
		}
		fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $64\n\n", name)
	}
	for q := 0; q < 8; q++ {
		m := uint64(0x0102040800000000) // out bits 0..3 = in bits 0..3
		if q/2%2 == 1 {
			m = 0x1020408000000000 // out bits 0..3 = in bits 4..7
		}
		fmt.Fprintf(&b, "DATA ·intAccQ5GFMat+%d(SB)/8, $0x%016x\n", 8*q, m)
	}
	b.WriteString("GLOBL ·intAccQ5GFMat(SB), RODATA|NOPTR, $64\n\n")
	// quadDec's and p2Quads' VPERMB index: byte 4k+i of the 64 takes byte 16i+k (row i's byte
	// k, each row a 128-bit lane).
	for i := 0; i < 64; i += 8 {
		var v uint64
		for j := 0; j < 8; j++ {
			v |= uint64(16*((i+j)%4)+(i+j)/4) << (8 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccQuadIdx+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·intAccQuadIdx(SB), RODATA|NOPTR, $64\n\n")
	// p2QuadsPack's VPSHUFB index: byte 16L + 4j + r of each 128-bit lane L takes byte 16L + 4r + j
	// (row r's W of lane 4L+j, as the packs leave it).
	for i := 0; i < 64; i += 8 {
		var v uint64
		for j := 0; j < 8; j++ {
			k, r := (i+j)/4, (i+j)%4
			v |= uint64(4*r+k%4) << (8 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccPackIdx+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·intAccPackIdx(SB), RODATA|NOPTR, $64\n\n")
	// rlGather's VPERMW index (blocks of 18 bytes): word 4r + b takes word 9b + r; and p2RL's
	// VPERMB index: byte 16b + 4h + r takes byte 16r + 4b + h.
	for i := 0; i < 32; i += 4 {
		var v uint64
		for j := 0; j < 4; j++ {
			if k := i + j; k < 16 {
				v |= uint64(9*(k%4)+k/4) << (16 * j)
			}
		}
		fmt.Fprintf(&b, "DATA ·intAccRL18Idx+%d(SB)/8, $0x%016x\n", 2*i, v)
	}
	b.WriteString("GLOBL ·intAccRL18Idx(SB), RODATA|NOPTR, $64\n\n")
	// rlGatherMin's VPERMT2W index (blocks of 20 bytes, two rows): word 4r + b (and 8 on) takes
	// row r's d, word 10b of table r; word 16 + 4r + b (and 8 on) its m, word 10b + 1.
	for i := 0; i < 32; i += 4 {
		var v uint64
		for j := 0; j < 4; j++ {
			k := i + j
			x := 32*(k%8/4) + 10*(k%4) + k/16
			v |= uint64(x) << (16 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccRL20Idx+%d(SB)/8, $0x%016x\n", 2*i, v)
	}
	b.WriteString("GLOBL ·intAccRL20Idx(SB), RODATA|NOPTR, $64\n\n")
	// rlProductsMin's rotation (vector k, lane 4r + b: block b's accumulator (b + k) mod 4):
	// p2RLMin's inv for vector k (lane 4r + b takes 4b + (b + k) mod 4), rlRotOut's index (lane
	// 4b + h takes 4·((h − b) mod 4) + b) and p2RLMin's VPERMB index (byte 16b + 4h + r takes
	// byte 16r + 4·((h − b) mod 4) + b).
	for k := 0; k < 4; k++ {
		for i := 0; i < 16; i += 2 {
			b0, b1 := i%4, (i+1)%4
			v := uint64(4*b0+(b0+k)%4) | uint64(4*b1+(b1+k)%4)<<32
			fmt.Fprintf(&b, "DATA ·intAccRotInvIdx+%d(SB)/8, $0x%016x\n", 64*k+4*i, v)
		}
	}
	b.WriteString("GLOBL ·intAccRotInvIdx(SB), RODATA|NOPTR, $256\n\n")
	for i := 0; i < 16; i += 2 {
		var v uint64
		for j := 0; j < 2; j++ {
			bb, h := (i+j)/4, (i+j)%4
			v |= uint64(4*((h-bb+4)%4)+bb) << (32 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccRotOutIdx+%d(SB)/8, $0x%016x\n", 4*i, v)
	}
	b.WriteString("GLOBL ·intAccRotOutIdx(SB), RODATA|NOPTR, $64\n\n")
	for i := 0; i < 64; i += 8 {
		var v uint64
		for j := 0; j < 8; j++ {
			t := i + j
			bb, h, r := t/16, t/4%4, t%4
			v |= uint64(16*r+4*((h-bb+4)%4)+bb) << (8 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccRLRotPackIdx+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·intAccRLRotPackIdx(SB), RODATA|NOPTR, $64\n\n")
	// p2RLMinZ4's VPERMT2B index: byte 16b + 4h + r takes the low byte of vector k = (h − b)
	// mod 4's lane 4r + b after the two VPACKSSDW (vectors 0 and 1 in the first table, word
	// 8r + b and 8r + 4 + b; vectors 2 and 3 in the second, 64 bytes on).
	for i := 0; i < 64; i += 8 {
		var v uint64
		for j := 0; j < 8; j++ {
			t := i + j
			bb, h, r := t/16, t/4%4, t%4
			k := (h - bb + 4) % 4
			v |= uint64(64*(k/2)+2*(8*r+4*(k%2)+bb)) << (8 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccRLRotPack2Idx+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·intAccRLRotPack2Idx(SB), RODATA|NOPTR, $64\n\n")
	for i := 0; i < 64; i += 8 {
		var v uint64
		for j := 0; j < 8; j++ {
			t := i + j
			bb, h, r := t/16, t/4%4, t%4
			v |= uint64(16*r+4*bb+h) << (8 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccRLPackIdx+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·intAccRLPackIdx(SB), RODATA|NOPTR, $64\n\n")
	for i := 0; i < 64; i += 8 {
		var v uint64
		for j := 0; j < 8; j++ {
			t := i + j
			bb, h, r := t/16, t/4%4, t%4
			v |= uint64(64*(bb&1)+16*r+4*h) << (8 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccRLPack2Idx+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·intAccRLPack2Idx(SB), RODATA|NOPTR, $64\n\n")
	q51RLData(&b)
	// p2QuadsPack2's index: byte 16b + 4h + r takes the low byte of row r's lane 4b + h (rows 0
	// and 1 from the first table, 2 and 3 from the second: bit 6 the odd row of the pair).
	for i := 0; i < 64; i += 8 {
		var v uint64
		for j := 0; j < 8; j++ {
			t := i + j
			bb, h, r := t/16, t/4%4, t%4
			v |= uint64(64*(r%2)+4*(4*bb+h)) << (8 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccQuadPack2Idx+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·intAccQuadPack2Idx(SB), RODATA|NOPTR, $64\n\n")
	// quadDec's VPERMT2B index: byte 4k+i of the 64 takes row i's byte k, rows 0 and 1 the
	// first table's lanes 0 and 1, rows 2 and 3 the second's (64 + 16(i − 2) + k).
	for i := 0; i < 64; i += 8 {
		var v uint64
		for j := 0; j < 8; j++ {
			r, k := (i+j)%4, (i+j)/4
			x := 16*r + k
			if r >= 2 {
				x = 64 + 16*(r-2) + k
			}
			v |= uint64(x) << (8 * j)
		}
		fmt.Fprintf(&b, "DATA ·intAccQuad2Idx+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·intAccQuad2Idx(SB), RODATA|NOPTR, $64\n\n")
	// quadDec5's indices: the permute's (byte 8j + i of the 64 row i's qh byte j/4, byte
	// 8j + 4 + i its byte 2 + j/4, from the dwords of X10, or from the 128-bit lanes of Z10 in
	// the last quad), and VPSHUFBITQMB's, two tables of 64 (mask bit 4k+i of K6: bit 8i + k%8
	// of its qword, row i's bit k; of K7: bit 32 + 8i + k%8, row i's bit 16 + k).
	for _, t := range []struct {
		name string
		n    int
		f    func(j int) int
	}{
		{"intAccQ5PermIdx", 64, func(j int) int { return 4*(j%4) + 2*(j%8/4) + j/32 }},
		{"intAccQ5TailIdx", 64, func(j int) int { return 16*(j%4) + 2*(j%8/4) + j/32 }},
		{"intAccQ5BitIdx", 128, func(j int) int { return 32*(j/64) + 8*(j%4) + (j%64/4)%8 }},
		// q51XTest's: byte 4k + i of row i's qh byte k/8 (Lo) or 2 + k/8 (Hi), and bit k mod 8.
		{"intAccQ5TestLo", 64, func(j int) int { return 4*(j%4) + j/32 }},
		{"intAccQ5TestHi", 64, func(j int) int { return 4*(j%4) + 2 + j/32 }},
		{"intAccQ5TestBit", 64, func(j int) int { return 1 << (j / 4 % 8) }},
	} {
		for i := 0; i < t.n; i += 8 {
			var v uint64
			for j := 0; j < 8; j++ {
				v |= uint64(t.f(i+j)) << (8 * j)
			}
			fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $0x%016x\n", t.name, i, v)
		}
		fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $%d\n\n", t.name, t.n)
	}
	// q51GFHi's matrix: row byte 7 − i selects bit i + 4 for bit i (i < 4).
	b.WriteString("DATA ·intAccHiNibGF+0(SB)/8, $0x1020408000000000\nGLOBL ·intAccHiNibGF(SB), RODATA|NOPTR, $8\n\n")
	fmt.Fprintf(&b, "DATA ·intAccIQ4Levels+0(SB)/8, $0x%016x\nDATA ·intAccIQ4Levels+8(SB)/8, $0x%016x\n", lv[0], lv[1])
	b.WriteString("GLOBL ·intAccIQ4Levels(SB), RODATA|NOPTR, $16\n\n")
	for _, c := range []struct {
		name string
		v    uint32
	}{{"intAccNib", 0x0f0f0f0f}, {"intAccNibW", 0x000f000f}, {"intAccQMax", u32(32767)}, {"intAccQMax8", u32(127)}, {"intAccQMax8U", u32(255)}, {"intAccQ5Bit", 0x10101010}, {"intAccOnes8", 0x01010101},
		{"intAccInvCap", u32(0x1p100)}, {"intAccOne", u32(1)}, {"intAccEight", u32(8)}} {
		fmt.Fprintf(&b, "DATA ·%s+0(SB)/4, $0x%08x\nGLOBL ·%s(SB), RODATA|NOPTR, $4\n\n", c.name, c.v, c.name)
	}
	return b.String()
}

// nacc is the accumulators a kernel serves: 4 (multi_intacc_amd64.s), or 2 for the two-accumulator
// variants (multi_intacc2_amd64.s).
var nacc = 4

// twoFormats are the formats with a two-accumulator variant.
var twoFormats = map[string]bool{"Q40": true, "Q80": true, "Q41": true, "IQ4NL": true}

// twoHeader opens multi_intacc2_amd64.s.
const twoHeader = `// Code generated by gen_intacc.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// Two-accumulator variants of the integer accumulate kernels (multi_intacc2_amd64.go): the
// kernels of multi_intacc_amd64.s with each row's two weights loaded into lanes h < 2 of every
// block (lanes h ≥ 2 zero, as the four-accumulator kernels hold a pair padded with zero
// weights) and only accumulators 0 and 1 summed and written.

`

func main() {
	write("multi_intacc_amd64.s", header(), "")
	nacc = 2
	write("multi_intacc2_amd64.s", twoHeader, "Two")
}

// write generates the kernels of the formats (where suffix is set, those of twoFormats, named
// with it) into file.
func write(file, head, suffix string) {
	s := head + gen(suffix)
	for strings.Contains(s, "\n\t\n") {
		s = strings.ReplaceAll(s, "\n\t\n", "\n")
	}
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func gen(suffix string) string {
	var out strings.Builder
	type kernel struct {
		f     format
		name  string // the kernel's name between multiAcc and the suffix
		pf    string // the prefetch instruction
		w8    bool   // 8-bit weights, row quads (VPDPBUSD)
		pfOff int    // bytes past the tile after next the row loops prefetch (pfRepl)
	}
	var kernels []kernel
	for _, f := range formats {
		if suffix != "" && !twoFormats[f.name] {
			continue
		}
		kernels = append(kernels, kernel{f, f.name, "PREFETCHT0", false, 0})
		if f.name == "Q80" {
			// The flavour for AMD Zen 4 (cpuid_amd64.go's zen4Stream): into L2, and with four
			// accumulators its weights broadcast from memory by each VPDPWSSD (q80Z4Bcst).
			z := f
			z.bcst = suffix == "" && q80Z4Bcst
			kernels = append(kernels, kernel{z, f.name + "Z4", "PREFETCHT1", false, 0})
		}
		if f.vdec != nil {
			v := f
			v.dec, v.doc = f.vdec, f.doc+" Decoded with AVX-512 VBMI byte permutes."
			v.consts = strings.TrimPrefix(f.consts+"\n\tVMOVDQU64 ·intAccPairIdx(SB), Z30", "\n\t")
			if f.vtwo {
				v.two, v.bcst = true, false
			}
			kernels = append(kernels, kernel{v, f.name + "V", "PREFETCHT0", false, 0})
			if f.name == "Q50" && suffix == "" && q50Z4BcstOn {
				// The flavour for AMD Zen 4 (cpuid_amd64.go's zen4Stream): q50Z4Bcst.
				kernels = append(kernels, kernel{v, f.name + "VZ4", "PREFETCHT0", false, 0})
			}
			if f.name == "Q50" && suffix == "" {
				// The flavour for Intel (cpuid_amd64.go's intelCPU): q5DecGF's codes and
				// q50Intel's prepass, the same sums bit for bit.
				vi := v
				vi.dec = q5DecGF(2, 6)
				vi.consts = "MOVL $0x10101010, AX\n\tVPBROADCASTD AX, Z19\n\tVMOVDQU64 ·intAccQ5GFIdx(SB), Z30\n\t" +
					"MOVQ $0x5555555555555555, AX\n\tKMOVQ AX, K6\n\tMOVL $0xFF00, AX\n\tKMOVW AX, K7"
				kernels = append(kernels, kernel{vi, f.name + "VI", "PREFETCHT0", false, 0})
			}
		}
		if f.w8dec != nil {
			v := f
			v.dec, v.doc = f.w8dec, f.doc+" 8-bit weights, rows in quads (VPDPBUSD), AVX-512 VBMI."
			v.consts = strings.TrimPrefix(f.consts+"\n\tVMOVDQU64 ·intAccQuadIdx(SB), Z30", "\n\t")
			if f.qh {
				v.consts = "VPBROADCASTD ·intAccQ5Bit(SB), Z19\n\tVMOVDQU64 ·intAccQuadIdx(SB), Z30"
			}
			v.two, v.bcst = true, true
			kernels = append(kernels, kernel{v, f.name + "V8", "PREFETCHT0", true, 0})
			if f.w8z4 {
				// The flavour for AMD Zen 4 (cpuid_amd64.go's zen4Stream): into L2 (measurements:
				// multi_intacc_amd64.go, and multiAccQ51V8Z4INT's for q5; the two-accumulator
				// variants': multi_intacc2_amd64.go).
				kernels = append(kernels, kernel{v, f.name + "V8Z4", "PREFETCHT1", true, pfFar[f.name]})
			}
			if f.name == "Q51" && suffix == "" {
				// The flavour for Intel (multi_intacc_amd64.go's q51X): q51XDoc.
				kernels = append(kernels, kernel{v, f.name + "V8X", "PREFETCHT1", true, 0})
			}
		}
	}
	for _, k := range kernels {
		f := k.f
		hdr, minStore, minJoin := 2, "", ""
		if f.min {
			hdr = 4
			minStore = fmt.Sprintf("MOVL $0x%08x, AX\n\tVPBROADCASTD AX, Z8\n\tVFMADD231PS Z8, Z9, Z11\n\tVMOVUPS Z11, %d(SP)", u32(float32(f.off)), oMT)
			minJoin = "VADDPS Z18, Z11, Z11\n\tVADDPS Z17, Z9, Z9"
		}
		// p1 is one row's step of the first prepass: row a's registers and addresses, or row b's
		// (the next row: weights R9, bytes R11 on; products stored 64 bytes on).
		p1 := func(b bool) string {
			w, h, h2, pr, mh, mx, wm, wd := "Z12", "Z13", "Z14", "Z15", "Z16", "Z10", "Z11", "Z9"
			wa, ra, st := "(R8)", "(R12)", "(R15)"
			ra64 := "64(R12)"
			if b {
				w, h, h2, pr, mh, mx, wm, wd = "Z20", "Z21", "Z23", "Z22", "Z24", "Z28", "Z18", "Z17"
				wa, ra, st, ra64 = "(R8)(R9*1)", "(R12)(R11*1)", "64(R15)", "64(R12)(R11*1)"
			}
			var x strings.Builder
			if nacc == 2 {
				// The row's two weights in lanes 4b and 4b+1 (K7), the others zero.
				fmt.Fprintf(&x, "VBROADCASTF32X2.Z %s, K7, %s\n\t", wa, w)
			} else {
				fmt.Fprintf(&x, "VBROADCASTF32X4 %s, %s\n\t", wa, w)
			}
			if 3*f.bs+hdr > 64 {
				fmt.Fprintf(&x, "VMOVDQU16.Z %s, K4, %s\n\tVMOVDQU16.Z %s, K5, %s\n\tVPERMT2W %s, Z29, %s\n\t", ra, h, ra64, h2, h2, h)
			} else {
				fmt.Fprintf(&x, "VMOVDQU16.Z %s, K4, %s\n\tVPERMW %s, Z29, %s\n\t", ra, h, h, h)
			}
			fmt.Fprintf(&x, "VCVTPH2PS Y%s, %s\n\tVMULPS %s, %s, %s\n\tVMOVUPS %s, %s\n\tVRANGEPS $0x0B, %s, %s, %s",
				h[1:], pr, w, pr, pr, pr, st, pr, mx, mx)
			if f.min {
				fmt.Fprintf(&x, "\n\tVEXTRACTI64X4 $1, %s, Y%s\n\tVCVTPH2PS Y%s, %s\n\tVFMADD231PS %s, %s, %s\n\tVADDPS %s, %s, %s",
					h, mh[1:], mh[1:], mh, w, mh, wm, pr, wd, wd)
			}
			return x.String()
		}
		pairSetup := ""
		if f.qh {
			pairSetup = "MOVQ $0x5555555555555555, DX"
		}
		sumStore := ""
		if f.off != 0 {
			sumStore = fmt.Sprintf("VPSLLD $%d, Z18, Z18\n\tVMOVDQU32 Z18, %d(SP)", f.offShift, oSS)
			if k.w8 && f.w8sgn {
				// off·ΣW less Σ V over the rows of negative sign (Z11 holds −Σ V: sgnCodes' ~c = −c − 1).
				sumStore = fmt.Sprintf("VPSLLD $%d, Z18, Z18\n\tVPADDD Z11, Z18, Z18\n\tVMOVDQU32 Z18, %d(SP)", f.offShift, oSS)
			}
		}
		loop, p2, tail, zrows, zdoc := loop1, p2Pairs, tailPair, "", "the zero row that pairs with a lone last row"
		if f.off == 0 {
			p2 = p2PairsNoSum
		}
		if f.two {
			loop = loop2
		}
		if k.w8 {
			loop, p2, tail, pairSetup = loopQuad, p2Quads, tailQuad, quadSetup
			if !f.qh {
				p2 = p2QuadsPack
				if nacc == 2 && k.name == f.name+"V8Z4" && p2QuadsPack2On {
					p2 = p2QuadsPack2
				}
			}
			if f.qh {
				pairSetup += "\n\tVMOVDQU64 ·intAccQ5PermIdx(SB), Z12"
			}
			zrows, zdoc = "\tVMOVUPS Z15, 64(R15)\n\tVMOVUPS Z15, 128(R15)\n", "the zero rows that fill the last quad"
		}
		pass2 := ""
		if k.w8 && f.w8u {
			p2, pass2 = p2QuadsU, pass2U(loop, tail, pairSetup)
			if f.w8sgn {
				p2 = p2QuadsS
			}
			if !f.w8sgn && k.name == f.name+"V8Z4" && p2QuadsU2On {
				p2 = p2QuadsU2
			}
			if f.w8sgn && k.name == f.name+"V8Z4" && p2QuadsS2On {
				p2 = p2QuadsS2
			}
		}
		tmpl, rl := accTmpl, k.w8 && f.w8rl && nacc == 4
		if rl {
			tmpl, p2 = rlTemplate(tmpl, f.min), p2RL
			if !f.min && k.name == f.name+"V8Z4" && p2RLZ4On {
				p2 = p2RLZ4
			}
			if f.min {
				if p2RLMin == p2RL {
					panic("p2RLMin: p2RL changed")
				}
				p2 = p2RLMin
				if k.name == f.name+"V8Z4" && p2RLMinZ4On {
					p2 = p2RLMinZ4
				}
			}
		}
		s := strings.NewReplacer("%LOOP%", loop, "%P2%", p2, "%TAIL%", tail, "%ZROWS%", zrows, "%ZROWDOC%", zdoc,
			"%PASS2%\n", pass2).Replace(tmpl)
		cs := strings.ReplaceAll(consts, "@", f.name)
		if k.w8 {
			cs = strings.Replace(cs, "·intAccNibW(SB)", "·intAccNib(SB)", 1)
		}
		if rl {
			cs = strings.Replace(cs, "·intAcc"+f.name+"DIdx(SB)", fmt.Sprintf("·intAccRL%dIdx(SB)", f.bs), 1)
		}
		if nacc == 2 {
			cs += "\n\tMOVL $0x3333, AX\n\tKMOVW AX, K7"
		}
		fr := frame
		// The second pass's (pass2U) products: its R8 is 1024 bytes on, S and P are not.
		d0, d1 := dotsW(k.w8, f, 0, set1), dotsW(k.w8, f, 64, set2)
		d0n, d1n := d0, d1
		if k.w8 && f.w8sgn {
			fr = frameS
			d0, d1 = sgnDots(d0, oSM-oQP), sgnDots(d1, oSM-oQP+64)
			d0n, d1n = sgnDots(d0n, oSM-oQP-1024), sgnDots(d1n, oSM-oQP-1024+64)
		}
		r := strings.NewReplacer("@", k.name+suffix, "%DOC%", f.doc, "%CONSTS%", cs,
			"%FRAME%", fmt.Sprint(fr), "%BS%", fmt.Sprint(f.bs), "%BS2%", fmt.Sprint(2*f.bs), "%HDR%", fmt.Sprint(hdr),
			"%PB%", fmt.Sprint(oPB), "%QP%", fmt.Sprint(oQP), "%TT%", fmt.Sprint(oTT), "%TN%", fmt.Sprint(oTN),
			"%WP%", fmt.Sprint(oWP), "%RL%", fmt.Sprint(oRL), "%BL%", fmt.Sprint(oBL), "%NQ%", fmt.Sprint(oNQ),
			"%QB%", fmt.Sprint(oQB), "%PF%", fmt.Sprint(oPF), "%FLG%", fmt.Sprint(oFLG), "%MINCONST%", f.consts,
			"%P1A%", p1(false), "%P1B%", p1(true), "%MINJOIN%", minJoin, "%PAIRSETUP%", pairSetup,
			"%MINSTORE%", minStore, "%SUMSTORE%", sumStore,
			"%DEC%", f.dec("R12"), "%DECT%", f.dec("tail:R12"), "%DOTS0%", d0, "%DOTS1%", d1, "%DOTS0N%", d0n, "%DOTS1N%", d1n,
			"%SET2%", strings.Join(set2[:], ", "), "%ZERO%", zero(f.two), "%JOIN%", join(f.two), "%FINISH%", finish(f))
		if rl && f.min {
			s = rlPipeMin(f, s)
		} else if rl {
			s = rlPipe(f, s)
		} else {
			s = p1Pipe(f, s, f.pipe && nacc == 4 && (strings.HasSuffix(k.name, "V") || k.name == "Q50VI" || k.name == "Q50VZ4" || k.w8 || f.vdec == nil), k.w8)
		}
		s = pfRepl(f, k.pf, k.pfOff).Replace(s)
		s = r.Replace(s)
		if k.name == "Q80Z4" && suffix == "" && q80Z4Regs {
			s = p1Regs(s)
		}
		if k.name == "Q80Z4" && suffix == "" && q80Z4Perm2 {
			s = p1Perm2(s)
		}
		if k.name == "Q80Z4" && suffix == "" && q80Z4OneSet {
			s = oneSet(s)
		}
		qmax := "intAccQMax"
		if k.w8 && f.w8u {
			qmax = "intAccQMax8U"
		} else if k.w8 {
			qmax = "intAccQMax8"
		}
		s = strings.ReplaceAll(s, "%QMAX%", qmax)
		if k.w8 && f.w8raw {
			s = rawHi(s)
		}
		if k.w8 && f.qh && f.min {
			s = laneMins(s, f.name)
		}
		if k.w8 && f.qh && f.min && (k.name == f.name+"V8Z4" || k.name == "Q51V8X") && pairHeadsOn {
			s = pairHeads(s, f.name)
		}
		if (k.name == "Q51V8Z4" || k.name == "Q51V8X") && q51GFHiOn {
			s = q51GFHi(s)
		}
		if (k.name == "Q51V8Z4" || k.name == "Q51V8X") && offInitQ51On {
			s = offInitOf(s, 4, 0)
		}
		if (k.name == "Q51V8Z4" || k.name == "Q51V8X") && q51P1PlainOn {
			s = q51P1Plain(s, "a"+k.name+suffix)
		}
		if (k.name == "Q51V8Z4" || k.name == "Q51V8X") && q51OneSetOn {
			s = q51OneSet(s, "a"+k.name+suffix)
		}
		if (k.name == "Q51V8Z4" || k.name == "Q51V8X") && q51P2OrOn {
			s = q51P2Or(s, "a"+k.name+suffix)
		}
		if k.name == "Q51V8X" && q51XPFOn {
			s = q51XPF(s)
			if q51XSparseOn {
				s = q51XSparse(s)
			}
		}
		if k.name == "Q51V8X" && q51XTestOn {
			s = q51XTest(s)
		}
		if k.name == "Q51V8X" && q51XQuadOn {
			s = q51XQuad(s)
		}
		if k.name == "Q51V8X" && q51XPdepOn {
			s = q51XPdep(s)
		}
		if k.name == "Q51V8X" && q51XHeadDOn {
			s = q51XHeadD(s)
		}
		if k.name == "Q51V8Z4" && q51RLOn {
			s = q51RL(s, "a"+k.name+suffix)
		}
		if (k.name == "Q50V" || k.name == "Q50VI" || k.name == "Q50VZ4") && suffix == "" { // q5_0's values kernels
			if q50OneSetOn {
				s = q50OneSet(s)
			}
			if offInitQ50On {
				s = offInitOf(s, 4, 0)
			}
		}
		if k.name == "Q50VZ4" {
			s = q50Z4Bcst(f, s)
		}
		if k.name == "Q50VI" {
			s = q50Intel(s)
			if q50XPFOn {
				s = q50XPF(s)
			}
			if q50RegsOn {
				s = q50Regs(s)
			}
			if q50TwoSetsOn {
				s = q50TwoSets(s)
			}
		}
		if rl && f.min {
			s = rlMinRegs(s)
		}
		if k.w8 && f.min && !f.qh && nacc == 2 {
			s = minFour(s, "a"+k.name+suffix)
		}
		if rl && !f.min && k.name == "Q40V8Z4" && offInitOn {
			s = offInit(s)
		}
		if rl && !f.min && k.name == "Q40V8Z4" && hiT16On {
			s = hiT16(s)
		}
		if rl && !f.min && k.name == "Q40V8Z4" && p1SpreadOn {
			s = p1Spread(s)
		}
		if rl && !f.min && k.name == "Q40V8Z4" && oneSetQ40On {
			s = oneSetQuadOf(s, "Z20")
		}
		if rl && k.name == "Q41V8Z4" && rlMinPerm2On {
			s = rlMinPerm2(s)
		}
		if rl && k.name == "Q41V8Z4" && offInitQ41On {
			s = offInitOf(s, 3, oCH+64)
			s = hiT16Of(s, oCH)
		}
		if rl && k.name == "Q41V8Z4" && q41Z4RowsOn {
			s = q41Z4Rows(s, "a"+k.name+suffix)
		}
		if rl && k.name == "IQ4NLV8Z4" && offInitIQ4On {
			s = offInitOf(s, 7, 0)
		}
		if rl && k.name == "IQ4NLV8Z4" && oneSetIQ4On {
			s = oneSetQuad(s)
		}
		out.WriteString(s)
	}
	return out.String()
}

// q80Z4Bcst makes q8_0's Zen 4 kernel with four accumulators (multiAccQ80Z4INT) broadcast each
// weight dword from memory in its VPDPWSSD (VPDPWSSD.BCST) instead of into a register once a
// row pair (VPBROADCASTD) and read by two: four instructions a row pair fewer, eight 4-byte
// loads where there were four, the same products and sums, so the same results bit for bit
// (TestIntAccQ80Matches). AMD Zen 4 (EPYC Genoa, 2 shared vCPUs at load 5–20; 4096 rows of 128
// values, four accumulators, thread CPU time, the old kernel and the new alternated in one
// process, 201 calls in cache, 9 passes over 96 MiB on 2 MiB pages streamed, seven runs, ns a
// row min): in cache 6.56–6.67 → 6.37–6.54 (−0.15 to −0.2), streamed 6.92–7.17 → 6.86–7.52
// (medians 7.10–7.88 → 7.04–7.64); native/attn TestDecodeBreakdown (131072 cells, 32/8 heads,
// q8_0 keys and values, test binaries alternated, values ns a row min) 6.84–7.22 → 6.68–6.77
// (five rounds at load ~5), 6.95–7.89 → 6.77–7.24 (six at load ~20, lower in five). Zen 5 took
// ~17% longer with memory broadcasts (the comment at the top) and runs multiAccQ80INT, which
// keeps the registers; the two-accumulator flavour was not measured and keeps them too. Intel
// (instruction tables) never runs the Zen 4 flavour.
const q80Z4Bcst = true

// q80Z4Regs makes q8_0's Zen 4 kernel with four accumulators (multiAccQ80Z4INT) keep two of its
// pipelined first prepass's pointers in registers (p1Regs).
const q80Z4Regs = true

// q80Z4Perm2 makes q8_0's Zen 4 kernel with four accumulators (multiAccQ80Z4INT) gather a
// row's four block scales in its pipelined first prepass by one load and one two-table word
// permute (p1Perm2).
const q80Z4Perm2 = true

// p1Perm2 replaces, in the pipelined first prepass (p1Pipe) of q8_0's kernel s, the gathering
// of a row's four f16 block scales (at bytes 0, 34, 68 and 102) into their lanes, a masked
// load, a word permute of the row's first 64 bytes and two masked word broadcasts of the third
// and fourth blocks' scales, by a load of the first 64 bytes and VPERMT2W with the next 64
// bytes from memory (the index the unpipelined first prepass uses, intAccQ80DIdx: the lanes of
// the third and fourth blocks from the second table): two vector operations a row where there
// were four, the same words in every lane, so the same results bit for bit
// (TestIntAccQ80Matches). The pipe runs only where a row is four blocks (136 bytes), so both
// 64-byte reads stay in the row; the masks K5 and K6 of the broadcasts are no longer set. AMD
// Zen 4 (EPYC Genoa, 2 shared vCPUs; 4096 rows of 128 values, four accumulators, thread CPU
// time, alternated call by call in one process with the kernel before, 7×201 calls in cache and
// 7×3 passes over 96 MiB on 2 MiB pages streamed, ns a row, four runs): in cache min
// 6.34–6.41 → 6.24–6.33 (lower in four of four, by 0.08–0.10; medians too), streamed min
// 6.67–7.13 → 6.55–6.83 (lower in four of four, by 0.08–0.3), medians 6.81–8.69 → 6.72–8.12
// (lower in three). Only AMD Zen 4 runs this flavour (zen4Stream).
//
// Tried on the same machine and harness and not kept: the row pair's codes widened by two
// VPMOVSXBW from memory and two word unpacks (four operations a pair and block for five, the
// finish's VSHUFI64X2 pairs replaced by two-table qword permutes): in cache 6.45 → 6.81 min,
// slower; the second prepass's row pairing (VPSLLD, VPBLENDMW) by one VPERMT2W: within noise
// (cache medians ±0.08, streamed +0.01 to +0.09); the prepass pointers in R14 and SI addressed
// directly (four scalar moves a row fewer): within noise; the finish's accumulators read by
// VFMADD213PS from memory, T broadcast into a register once per accumulator (one load a
// vector pair fewer, the same single rounding of acc + T·x): within noise (four runs, cache
// medians −0.09 to +0.01, streamed −0.19 to +0.31); the second prepass's row pairing by two
// masked word stores (K3, the second row's 2 bytes on) in place of the shift, blend and store:
// in cache +0.15–0.19, streamed +0.10–0.25 (three and four runs; with the first row's store
// unmasked too: +0.12–0.18, +0.15–0.18). Where the kernel's time goes now (the same harness,
// alternated with copies with a piece removed, not working ones, three runs, ns a row): the
// pipelined first prepass ~0.87 in cache but only 0.1–0.25 streamed (its work hides under the
// memory wait there), the codes' sign extension (VPMOVSXBW) ~0.3 in both, the second prepass's
// multiplies, conversions and pairing ~0.45 in both. That second prepass moved into the first
// block's row loops (a step forming the weight pairs of a later step, the first pairs before
// the loop; the same results) did not pay: one step ahead +0.4 in cache and streamed (the
// broadcasts waiting on the stores just made), two steps ahead +0.12–0.15, four within noise.
// The decoder's unpacks and sign extensions (a load, two 256-bit unpacks from memory, two
// VPMOVSXBW a row pair and block) replaced by the codes + 128 as unsigned bytes (two 256-bit
// VPXORD from memory, the offset to come back as 128·ΣW) interleaved into zero-extended words
// by two VPERMI2B (AVX-512 VBMI; each after a copy of its index), timing only (the sums left
// uncorrected): in cache 6.11–6.12 → 7.23–7.24 ns a row, streamed 6.51–6.58 → 7.62–7.76 (three
// runs, alternated as above): the byte permutes cost more than the unpacks and widenings here.
// Row b's codes loaded once into a register for the two unpacks (two loads a row pair and block
// where there were three, one instruction more): in cache and streamed within noise.
func p1Perm2(s string) string {
	const old = "\tVMOVDQU16.Z (AX), K4, Z26\n\tVPERMW Z26, Z29, Z26\n\tVPBROADCASTW 68(AX), K6, Z26\n\tVPBROADCASTW 102(AX), K5, Z26\n"
	const masks = "\tMOVL $0xF000, AX\n\tKMOVD AX, K5\n\tMOVL $0x0F00, AX\n\tKMOVD AX, K6\n"
	if strings.Count(s, old) != 2 || strings.Count(s, masks) != 1 {
		panic("p1Perm2: prepass step changed")
	}
	s = strings.ReplaceAll(s, old, "\tVMOVDQU16 (AX), Z26\n\tVPERMT2W 64(AX), Z29, Z26\n")
	s = strings.Replace(s, masks, "", 1)
	if strings.Contains(s, "K6") {
		panic("p1Perm2: K6 in use")
	}
	return s
}

// q80Z4OneSet makes q8_0's Zen 4 kernel with four accumulators (multiAccQ80Z4INT) add both row
// pairs of a step into one set of sums (oneSet).
const q80Z4OneSet = true

// oneSet makes the row loops of q8_0's kernel s add the second row pair of a step into the
// first pair's sums (Z0..Z7), not into a second set joined after the loop: eight VPXORD and
// eight VPADDD a block and tile fewer. Each sum still takes one VPDPWSSD every eight, more
// than its latency (AMD Zen 4 and Intel, from instruction tables: 4–5 cycles), so no chain
// waits. The sums are int32 and exact in any order, so the same results bit for bit
// (TestIntAccQ80Matches). AMD Zen 4 (the harness of p1Perm2's comment, alternated with the
// kernel with p1Perm2 and two sets, four runs, ns a row min/median): in cache
// 6.24–7.29/6.28–7.70 → 6.18–7.21/6.23–7.60, streamed 6.60–8.27/6.75–8.40 →
// 6.56–8.15/6.68–8.31 (lower in four of four, by 0.02–0.14). Zen 5, where two sets paid for
// q8_0 (the comment at the top), runs multiAccQ80INT, which keeps them.
func oneSet(s string) string {
	set2 := [8]string{"Z8", "Z9", "Z14", "Z15", "Z16", "Z17", "Z18", "Z28"}
	const note = "where\n\t// the loop takes two pairs a step, the second pair's into Z8, Z9, Z14, Z15, Z16, Z17, Z18, Z28, joined after)."
	if strings.Count(s, note) != 1 {
		panic("oneSet: comment changed")
	}
	s = strings.Replace(s, note, "two pairs\n\t// a step).", 1)
	for i, z := range set2 {
		x := fmt.Sprintf("\tVPXORD %[1]s, %[1]s, %[1]s\n", z)
		j := fmt.Sprintf("\tVPADDD %s, Z%d, Z%d\n", z, i, i)
		src := "Z23"
		if i%2 == 1 {
			src = "Z24"
		}
		d := fmt.Sprintf("VPDPWSSD.BCST %d(R8), %s, %s\n", 64+4*(i/2), src, z)
		if strings.Count(s, x) != 1 || strings.Count(s, j) != 1 || strings.Count(s, d) != 1 {
			panic("oneSet: sums changed")
		}
		s = strings.Replace(s, x, "", 1)
		s = strings.Replace(s, j, "", 1)
		s = strings.Replace(s, d, fmt.Sprintf("VPDPWSSD.BCST %d(R8), %s, Z%d\n", 64+4*(i/2), src, i), 1)
	}
	return s
}

// p1Regs keeps the pipelined first prepass's (p1Pipe) next-row and store pointers (oP1R, oP1S)
// of kernel s in R14 and SI, which its code leaves free, not in the frame: per row the prepass
// step then loads and stores neither (four memory operations fewer, and no wait on a store to
// load the pointer again); the same pointers, so the same results bit for bit
// (TestIntAccQ80Matches). AMD Zen 4 (EPYC Genoa, 2 shared vCPUs at load ~19; 4096 rows of 128
// values, four accumulators, thread CPU time, alternated in one process with the kernel keeping
// them in the frame, five runs, ns a row min/median): in cache 6.46–7.90/6.52–7.95 →
// 6.38–7.73/6.42–7.79 (medians lower in five of five, by 0.08–0.16), streamed past the caches
// (96 MiB on 2 MiB pages) medians 8.53–8.70 → 8.39–8.68 (lower in four). Not measured
// elsewhere: only AMD Zen 4 runs this flavour (zen4Stream).
//
// Tried on the same machine for this kernel and not kept (4096-row harness as above, or
// native/attn TestDecodeBreakdown at the bench shape, binaries alternated, values ns a row
// min): a PREFETCHT0 of the next tile's line beside each PREFETCHT1 of the tile after next's
// (decode 6.82–7.01 → 7.20–7.47, four rounds); the prepass's first two scales by two masked
// word broadcasts in place of the masked load and VPERMW (within noise); the third pointer
// (oP1W) in DX, the finish's accumulator stride in R9 (in cache −0.01 to −0.04, streamed
// within noise); PREFETCHT1 over the first two tiles at entry, which the tile-after-next
// prefetches miss (streamed within noise: the first tiles' wait is not what streaming costs);
// the finish's two VSHUFI64X2 a sum pair ablated (wrong results, an upper bound for keeping the
// accumulators in the decoder's order): in cache −0.01 to −0.14, not worth a permuted copy.
func p1Regs(s string) string {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if f == "R14" || f == "SI" {
			panic("p1Regs: R14 or SI in use")
		}
	}
	return strings.NewReplacer(fmt.Sprintf("%d(SP)", oP1R), "R14", fmt.Sprintf("%d(SP)", oP1S), "SI").Replace(s)
}

// pfFar is how many bytes past the tile after next the Zen 4 flavours of the 8-bit kernels
// (V8Z4, PREFETCHT1) prefetch, by format. With the rows on 2 MiB pages (internal/hugemem) the
// hardware prefetchers no longer stop at 4 KiB boundaries and a prefetch there costs no TLB
// walk: on AMD Zen 4 (native/attn TestDecodeBreakdown, 131072 cells, 32/8 heads, one thread,
// thread CPU time, test binaries alternated, 7–12 runs a round, four rounds, ns a row, values
// min/median) q4_0 4.93–4.99/5.02–5.10 → 4.82–4.83/4.86–4.93 with 32768 bytes further (16384
// and 4096 alike, 8192 4.74/5.06, 65536 4.86/4.95; 2048 bytes short of the tile after next
// 7.88/7.94, iq4_nl 8.06 too, q4_1 6.27: not measured why), iq4_nl 5.31–5.47/5.42–5.61 →
// 5.26–5.28/5.43–5.44; q4_1 ±0.05 (the same distance kept for it); in cache (KVLAB_TOUCH=kv)
// q4_0 4.82, iq4_nl 5.27: their wait on memory is gone. q8_0 (Z4) and q5_1 within noise
// either way (4096 to 65536 further), left at the tile after next; measured again (test
// binaries alternated 8–12 times, values min/median of the runs' minima): q8_0 16 KiB further
// 6.61/7.28 → 6.61/7.89, 32 KiB 7.18/8.02 → 7.32/7.87; q5_1 16 and 32 KiB 7.27/8.27 →
// 7.56/8.14 and 7.66/8.04; iq4_nl 16, 48 or 64 KiB in place of 32: 5.41/5.94 → 5.41/6.32,
// 5.53/6.45, 5.47/6.30. No gain: kept.
// PREFETCHT0 in place of PREFETCHT1 at the tile after next: q4_0 5.08 → 5.72, q8_0 7.19 →
// 12.20; no prefetches: q4_0 8.13, q8_0 13.33, q5_1 8.92 against 7.56 (min of six).
//
// On an Intel Xeon (family 6 model 167, Sapphire Rapids class; multi_intacc_amd64.go's pickFar)
// q4_1 takes its V8Z4 flavour too; q4_0's values took no prefetch variant better than its
// PREFETCHT0 flavour there (q2k's decode, whose values are q4_0's: TestDecodeBreakdown at the
// bench shape, five alternations at load ~10, values min/median ns a row; the kernel as it is
// 6.17/6.84): PREFETCHT0 8 or 32 KiB past the tile after next 6.90/6.97 and 6.10/7.31,
// PREFETCHT1 8 KiB on 6.66/6.80, PREFETCHT2 at the tile after next 6.54/6.67, PREFETCHNTA there
// 11.67/11.87, V8Z4 (PREFETCHT1 32 KiB on) 6.35/6.84. perf's samples of the streamed loop
// there fall most after its PREFETCHT0 instructions (likely waiting for a free line fill
// buffer): a wait on memory that moving the prefetches did not shorten. Without them (the
// hardware prefetchers alone; 4096 rows × 128, four accumulators, alternated in one process,
// 96 MiB on 2 MiB pages, load ~25, ns a row min/median) 9.81/10.03 and 9.77/9.87 streamed
// against 5.78/6.03 and 5.75/5.97, in cache alike (4.34–4.56 against 4.40–4.61).
//
// Tried again on that Xeon after the scores kernels took two streams (multi_vnni_amd64.go's
// hdrIntel) and not kept (scratch copies of the generated kernels, switched in one native/attn
// test binary, TestDecodeBreakdown at the bench shape, the values phase, load 10–16): q4_0's V8
// with its PREFETCHT0 at the next tile in place of the tile after next (the first prepass reads
// the next tile's scales during this one, so no lead is left) 7.31 → 9.48 ns a row (median of six
// rounds' minima), with a PREFETCHT1 4608 bytes or 32 KiB further 7.56 both, at 1.5 tiles 7.87;
// a PREFETCHT1 32 KiB past every fourth PREFETCHT0 (one per 144 bytes) paired −0.01 (lower in 4
// of 8), every second PREFETCHT0 left out (one a row) +0.11 (2 of 8); q4_1's V8Z4 with its
// PREFETCHT1 thinned to one in four (one per 160 bytes) +1.93 (0 of 8), one in two +0.54 (3 of 8);
// q8_0's Z4 (Intel's, pickFar) with its PREFETCHT1 of each line thinned to one per 128 bytes
// +3.82 (0 of 8), or 32 KiB past the tile after next +0.21 (3 of 8). Unlike the scores (q5_1's
// sparse far lines, multi_vnni_amd64.go), these values kernels want every line prefetched.
var pfFar = map[string]int{"Q40": 32768, "Q41": 32768, "IQ4NL": 32768}

// pfRepl fills in the template's prefetch pieces for f with instruction inst. A row-pair step
// prefetches a line and advances 2·bs bytes, or 64 where 2·bs is more (q8_0), the block's other
// (bs − 32)·64 bytes of a 64-row tile prefetched after the loop: so every line of the tile after
// next is prefetched (2·34-byte steps missed one line in 17; on AMD Zen 4, q8_0's values of 4096
// rows of 128 streamed past the caches took ~6–10% less time with every line: thread CPU time,
// interleaved with the previous kernel, best and median of 11).
func pfRepl(f format, inst string, off int) *strings.Replacer {
	step, extra := 2*f.bs, ""
	doc := fmt.Sprintf("the tile after next, prefetched 2·%d bytes a row-pair step", f.bs)
	if step > 64 {
		if f.bs-32 != 2 {
			panic("pfRepl: LEAQ scales the row count by bs − 32 = 2")
		}
		step = 64
		for k := 0; k < f.bs-32; k++ {
			extra += fmt.Sprintf("%s %d(R15)\n\t", inst, 64*k)
		}
		extra += fmt.Sprintf("MOVQ %%TN%%(SP), AX\n\tLEAQ (R15)(AX*%d), R15", f.bs-32)
		doc = fmt.Sprintf("the tile after next, a line a row-pair step and %d bytes a row after", f.bs-32)
	}
	pfi := inst + " (R15)"
	if off != 0 {
		if extra != "" {
			panic("pfRepl: no offset for the block's extra lines")
		}
		pfi = fmt.Sprintf("%s %d(R15)", inst, off)
		doc += fmt.Sprintf(", %d bytes further on", off)
	}
	return strings.NewReplacer("%PFI% (R15)", pfi, "%PFI%", inst, "%PFSTEP%", fmt.Sprint(step), "%PFEXTRA%", extra, "%PFDOC%", doc)
}

// p1Pipe fills in the template's pieces of the pipelined first prepass (on, else empty). Where a
// row is one quad (≤ 4 blocks), the w·d of the next tile's rows (and their largest magnitudes,
// and Σ w·d and Σ w·m in two chains, rows of even and odd index, as the prepass's own loop
// adds them) are formed in this tile's row-pair loops, one row a two-pair step (p1Step), the
// rows the loops leave over after them (catch-up), and the next tile starts from them (pre)
// instead of its own first prepass loop. The same operations on the same values in the same
// order per chain (the largest magnitude is exact in any order), so the weights and sums are
// the other kernels' bit for bit (TestIntAccVBMIMatches); the prepass's operations issue beside
// the loop's VPDPWSSD. Measured on AMD Zen 4 (4096 rows of 128 values, four accumulators, thread
// CPU time, 41 calls interleaved with the previous kernels, median, four runs; streamed: rows
// past the caches, 96 MiB): q4_0 7.05 → 6.6 ns a row in cache (−6.5%), streamed −4 to −7%;
// q4_1 −2% in cache, −2 to −4% streamed; q5_0 −2.4% and −1.5 to −3% (where a row is four
// blocks exactly: its fourth block's scale, past the first 64 bytes, comes by a masked
// broadcast; with the prepass loop's second load and two-table permute −1%); iq4_nl −3% and
// −5%. q5_1 (its fourth scale and min broadcast so too, or loaded and permuted as q5_0's were)
// was 1–2% slower and keeps its own prepass loop, and so do the two-accumulator kernels (not
// measured). q8_0's two kernels (no VBMI flavour; its blocks' third and fourth scales past the
// first 64 bytes, broadcast by K6 and K5) pipeline it too: on AMD Zen 4 (4096 rows of 128
// values, four accumulators, thread CPU time, 201 calls alternated with the previous
// multiAccQ80Z4INT, three runs, median ns a row, with p2PairsNoSum) 7.11–7.20 → 6.59–6.65 in
// cache (−7.5%), streamed 9.66–10.33 → 9.37–10.18 (−0.1 to −0.3: there it waits on memory). Its
// prepass loop alone had cost ~1.4 ns a row (a copy without it, not a working kernel: 5.59),
// the decoder's unpacks and sign extensions ~0.1 (6.99 → 6.88 with two plain loads in their
// place); the VPDPWSSD broadcasting their weights from memory measured alike (6.53 and 6.60), a
// VPERMT2W for p2Pairs' shift and blend slower (−0.26 against this −0.53, one run).
// Not measured on Zen 5 or Intel: the prepass's operations are the same ones, now beside the
// multiplies rather than alone, with ~12 scalar operations (pointers kept in the frame) a row
// added.
// Registers: Z22, Z25..Z27 (the inv constants, reloaded by pre), R11 (the next tile's rows
// left), Z29 and K4, K5 (the quad's, unchanged while one quad is the whole row).
// chainRegs are the registers of the pipelined prepass's chains (Σ w·d, Σ w·m) of rows of even
// and odd index in the w8 kernels of formats with a min: Z10..Z12 and Z19 are free in their
// row loops (the weights are broadcast from memory; q4_1 has no decoder constant). The same
// additions in the same order per chain, so the sums are unchanged bit for bit. On AMD Zen 4
// (4096 rows of 128 values, four accumulators, thread CPU time, 41 calls alternated with the
// chains in the frame, two runs) q4_1's kernel took 6.72 → 5.91 ns a row in cache (−12%),
// streamed 8.54 → 8.09 and 9.31 → 8.69 (−5 to −7%): the frame's read-modify-write chains no
// longer wait on store forwarding.
var chainRegs = [2][2]string{{"Z10", "Z11"}, {"Z12", "Z19"}}

// p1Next is the pipelined first prepass's setup (p1Pipe's and rlPipe's, at their %P1NEXT%):
// the next tile's first row, its weights and the products' buffer, into the frame.
var p1Next = fmt.Sprintf(`	MOVQ %%TN%%(SP), AX
	IMULQ rb+32(FP), AX
	ADDQ DI, AX
	MOVQ AX, %d(SP)
	MOVQ %%TN%%(SP), AX
	IMULQ wstride+56(FP), AX
	ADDQ %%WP%%(SP), AX
	MOVQ AX, %d(SP)
	LEAQ %%PB%%(SP), AX
	MOVQ AX, %d(SP)
`, oP1R, oP1W, oP1S)

// withP1Next is s with p1Next in place of its %P1NEXT% line.
func withP1Next(s string) string {
	if strings.Count(s, "%P1NEXT%\n") != 1 {
		panic("withP1Next: no single %P1NEXT%")
	}
	return strings.Replace(s, "%P1NEXT%\n", p1Next, 1)
}

func p1Pipe(f format, s string, on, w8 bool) string {
	if !on {
		return strings.NewReplacer("%PRECHECK%\n", "", "%PREBLOCK%\n", "", "%PIPESETUP%\n", "", "%CATCHUP%\n", "",
			"%PREINIT%\n", "").Replace(s)
	}
	hdr := 2
	if f.min {
		hdr = 4
	}
	// regs: the w8 kernels of formats with a min keep the chains in registers (chainRegs), a
	// step's parity fixed by its place in the loop (par 0 or 1), -1: in the frame by oPAR.
	regs := w8 && f.min
	par := func(p int) int { // p where regs, else -1 (oPAR)
		if regs {
			return p
		}
		return -1
	}
	step := func(label string, test bool, par int) string {
		var b strings.Builder
		if test {
			fmt.Fprintf(&b, "\tTESTQ R11, R11\n\tJZ   a@_%s\n", label)
		}
		fmt.Fprintf(&b, "\tMOVQ %d(SP), AX\n\tVMOVDQU16.Z (AX), K4, Z26\n", oP1R)
		b.WriteString("\tVPERMW Z26, Z29, Z26\n")
		if 3*f.bs+hdr > 64 {
			// The fourth block's scale (and min) past the first 64 bytes: broadcast into its
			// lanes (K5: words 12..15; K7: words 28..31), which VPERMW filled from the index
			// mod 32.
			if 2*f.bs+hdr > 64 {
				// q8_0: the third block's scale too (K6: words 8..11).
				fmt.Fprintf(&b, "\tVPBROADCASTW %d(AX), K6, Z26\n", 2*f.bs)
			}
			fmt.Fprintf(&b, "\tVPBROADCASTW %d(AX), K5, Z26\n", 3*f.bs)
			if f.min {
				fmt.Fprintf(&b, "\tVPBROADCASTW %d(AX), K7, Z26\n", 3*f.bs+2)
			}
		}
		fmt.Fprintf(&b, "\tADDQ R9, AX\n\tMOVQ AX, %d(SP)\n\tMOVQ %d(SP), AX\n", oP1R, oP1W)
		if nacc == 2 {
			b.WriteString("\tVBROADCASTF32X2.Z (AX), K7, Z25\n")
		} else {
			b.WriteString("\tVBROADCASTF32X4 (AX), Z25\n")
		}
		fmt.Fprintf(&b, "\tADDQ wstride+56(FP), AX\n\tMOVQ AX, %d(SP)\n", oP1W)
		fmt.Fprintf(&b, "\tVCVTPH2PS Y26, Z22\n\tVMULPS Z25, Z22, Z22\n\tMOVQ %d(SP), AX\n\tVMOVUPS Z22, (AX)\n\tADDQ $64, AX\n\tMOVQ AX, %d(SP)\n", oP1S, oP1S)
		b.WriteString("\tVRANGEPS $0x0B, Z22, Z27, Z27\n")
		if f.min && par >= 0 {
			wd, wm := chainRegs[par][0], chainRegs[par][1]
			fmt.Fprintf(&b, "\tVADDPS Z22, %[1]s, %[1]s\n\tVEXTRACTI64X4 $1, Z26, Y26\n\tVCVTPH2PS Y26, Z26\n\tVFMADD231PS Z25, Z26, %[2]s\n", wd, wm)
		} else if f.min {
			fmt.Fprintf(&b, "\tMOVQ %d(SP), AX\n\tXORQ $64, %d(SP)\n\tLEAQ %d(SP)(AX*1), AX\n", oPAR, oPAR, oCH)
			b.WriteString("\tVADDPS (AX), Z22, Z22\n\tVMOVUPS Z22, (AX)\n\tVEXTRACTI64X4 $1, Z26, Y26\n\tVCVTPH2PS Y26, Z26\n")
			b.WriteString("\tVMOVUPS 128(AX), Z22\n\tVFMADD231PS Z25, Z26, Z22\n\tVMOVUPS Z22, 128(AX)\n")
		}
		b.WriteString("\tDECQ R11\n")
		if test {
			fmt.Fprintf(&b, "a@_%s:\n", label)
		}
		return b.String()
	}
	var pre strings.Builder
	chains, moves := "chains", ""
	if regs {
		// Z10 (Σ w·d, even rows) moves before the largest magnitudes overwrite it; Z11 is Σ w·m
		// of the even rows in both.
		chains, moves = "chains (chainRegs)", "\tVMOVAPS Z10, Z9\n\tVMOVAPS Z12, Z17\n\tVMOVAPS Z19, Z18\n"
	}
	fmt.Fprintf(&pre, `	JMP  a@_p1o
a@_pre:
	// The tile's w·d, formed in the previous tile's row loops: its largest magnitudes (Z27) and
	// %[2]s into the registers the prepass loop leaves them in.
	MOVQ $0, %[1]d(SP)
%[3]s	VMOVAPS Z27, Z10
	VXORPS Z28, Z28, Z28
`, oPRE, chains, moves)
	if !regs && f.min {
		fmt.Fprintf(&pre, "\tVMOVUPS %d(SP), Z9\n\tVMOVUPS %d(SP), Z17\n\tVMOVUPS %d(SP), Z11\n\tVMOVUPS %d(SP), Z18\n", oCH, oCH+64, oCH+128, oCH+192)
	}
	pre.WriteString(`	MOVQ %TN%(SP), AX
	SHLQ $6, AX
	LEAQ %PB%(SP)(AX*1), R15
	VPBROADCASTD ·%QMAX%(SB), Z27
	VPBROADCASTD ·intAccInvCap(SB), Z26
	VPBROADCASTD ·intAccOne(SB), Z25
	JMP  a@_p1e`)
	var setup strings.Builder
	setup.WriteString(withP1Next(fmt.Sprintf(`	// The next tile's first prepass in this tile's row loops where a row is one quad.
	XORQ R11, R11
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	CMPQ AX, $4
	%%PIPEJ%% a@_nopipe
	MOVQ %%RL%%(SP), R11
	CMPQ R11, $64
	JLE  a@_pn
	MOVQ $64, R11
a@_pn:
	TESTQ R11, R11
	JZ   a@_nopipe
%%P1NEXT%%
	MOVQ $0, %[4]d(SP)
	MOVQ $1, %[5]d(SP)
	VXORPS Z27, Z27, Z27
`, oP1R, oP1W, oP1S, oPAR, oPRE)))
	if regs {
		fmt.Fprintf(&setup, "\tVXORPS Z10, Z10, Z10\n\tVXORPS Z11, Z11, Z11\n\tVXORPS Z12, Z12, Z12\n\tVXORPS Z19, Z19, Z19\n")
	} else if f.min {
		fmt.Fprintf(&setup, "\tVMOVUPS Z27, %d(SP)\n\tVMOVUPS Z27, %d(SP)\n\tVMOVUPS Z27, %d(SP)\n\tVMOVUPS Z27, %d(SP)\n", oCH, oCH+64, oCH+128, oCH+192)
	}
	jump := "JA  "
	if 3*f.bs+hdr > 64 {
		// Four blocks exactly, so that the fourth block's scale is in the row.
		jump = "JNE "
		setup.WriteString("\tMOVL $0xF000, AX\n\tKMOVD AX, K5\n")
		if 2*f.bs+hdr > 64 {
			setup.WriteString("\tMOVL $0x0F00, AX\n\tKMOVD AX, K6\n")
		}
		if f.min {
			setup.WriteString("\tMOVL $0xF0000000, AX\n\tKMOVD AX, K7\n")
		}
	}
	setup.WriteString("a@_nopipe:")
	setup2 := strings.Replace(setup.String(), "%PIPEJ%", jump, 1)
	check := fmt.Sprintf("\tCMPQ %d(SP), $0\n\tJNE  a@_pre", oPRE)
	catch := "\tMOVQ rb+32(FP), R9\na@_cu:\n\tTESTQ R11, R11\n\tJZ   a@_cud\n" + step("", false, -1) + "\tJMP  a@_cu\na@_cud:"
	if regs {
		// The loops' steps come in pairs (even, odd), so the rows left start at an even one.
		catch = "\tMOVQ rb+32(FP), R9\na@_cu:\n\tTESTQ R11, R11\n\tJZ   a@_cud\n" + step("", false, 0) +
			step("cu1", true, 1) + "\tJMP  a@_cu\na@_cud:"
	}
	old := "%DOTS0%\n\tLEAQ (R12)(R9*2), R12\n\t%PFI% (R15)"
	if w8 {
		// A row of the next tile a quad (two a step), so that the row loops of a row's four
		// blocks (64 rows each) form the next tile's 64 rows.
		old = "%DOTS0%\n\tLEAQ (R12)(R9*4), R12\n\tLEAQ (R14)(R9*4), R14\n\t%PFI% (R15)"
		old2 := "%DOTS1%\n\tADDQ $128, R8\n\tLEAQ (R12)(R9*4), R12\n\tLEAQ (R14)(R9*4), R14\n"
		if !strings.Contains(s, old2) {
			panic("p1Pipe: quad loop changed")
		}
		s = strings.Replace(s, old2, old2+step("s2", true, par(1)), 1)
		if !strings.Contains(s, old) {
			panic("p1Pipe: quad loop changed")
		}
		s = strings.Replace(s, old, "%DOTS0%\n\tLEAQ (R12)(R9*4), R12\n\tLEAQ (R14)(R9*4), R14\n"+step("s1", true, par(0))+"\t%PFI% (R15)", 1)
	} else {
		if !strings.Contains(s, old) {
			panic("p1Pipe: loop changed")
		}
		s = strings.Replace(s, old, "%DOTS0%\n\tLEAQ (R12)(R9*2), R12\n"+step("s1", true, -1)+"\t%PFI% (R15)", 1)
	}
	return strings.NewReplacer("%PRECHECK%", check, "%PREBLOCK%", pre.String(), "%PIPESETUP%", setup2,
		"%CATCHUP%", catch, "%PREINIT%", fmt.Sprintf("\tMOVQ $0, %d(SP)", oPRE)).Replace(s)
}

// laneMins rewrites the first prepass of q5_1's kernels with 8-bit weights (name: the format's):
// the row's permute leaves block b's d and min in words 4b and 4b+1 (·intAccQ51LDIdx), one
// VCVTPH2PS converts them, and two in-lane VPERMILPS spread d and m over the block's four lanes,
// where the prepass converted d (words 0..15) and m (16..31, extracted first) apart: the same
// floats, so the same results bit for bit (TestIntAcc8Matches). One conversion and one
// extraction become two in-lane shuffles a row. On AMD Zen 4 (TestIntAcc8Speed's shape, the
// PREFETCHT1 flavour, 61 calls alternated with the previous kernel, four runs, load 5–7, median
// ns a row): 7.18 → 7.11, 8.53 → 8.38, 7.18 → 7.07, 7.18 → 7.04 in cache (−1 to −2 %), streamed
// min 11.67 → 11.41, 11.99 → 11.50, 10.70 → 10.52, 10.98 → 10.77 (medians within the noise).
func laneMins(s, name string) string {
	n := 0
	for _, r := range []struct{ h, pr, mh, w, st, mx string }{
		{"13", "Z15", "16", "Z12", "(R15)", "Z10"}, {"21", "Z22", "24", "Z20", "64(R15)", "Z28"}} {
		old := fmt.Sprintf("\tVCVTPH2PS Y%[1]s, %[2]s\n\tVMULPS %[4]s, %[2]s, %[2]s\n\tVMOVUPS %[2]s, %[5]s\n"+
			"\tVRANGEPS $0x0B, %[2]s, %[6]s, %[6]s\n\tVEXTRACTI64X4 $1, Z%[1]s, Y%[3]s\n\tVCVTPH2PS Y%[3]s, Z%[3]s\n",
			r.h, r.pr, r.mh, r.w, r.st, r.mx)
		new := fmt.Sprintf("\tVCVTPH2PS Y%[1]s, Z%[3]s\n\tVPERMILPS $0x00, Z%[3]s, %[2]s\n\tVPERMILPS $0x55, Z%[3]s, Z%[3]s\n"+
			"\tVMULPS %[4]s, %[2]s, %[2]s\n\tVMOVUPS %[2]s, %[5]s\n\tVRANGEPS $0x0B, %[2]s, %[6]s, %[6]s\n",
			r.h, r.pr, r.mh, r.w, r.st, r.mx)
		n += strings.Count(s, old)
		s = strings.ReplaceAll(s, old, new)
	}
	old := fmt.Sprintf("·intAcc%sDIdx(SB), Z29", name)
	if n != 3 || strings.Count(s, old) != 1 {
		panic("laneMins: the first prepass changed")
	}
	return strings.Replace(s, old, fmt.Sprintf("·intAcc%sLDIdx(SB), Z29", name), 1)
}

// pairHeads rewrites the first prepass's row-pair loop of q5_1's Zen 4 kernel with 8-bit
// weights (V8Z4, after laneMins): the two rows' d and m in one register, row a's header words
// (K4, K5 narrowed to them: words 12b and 12b + 1) and row b's loaded 4 bytes lower (K6, K7:
// the same shifted up two words) merged into Z13 and Z14, one permute (·intAccQ51LD2Idx, Z7:
// lane b = row a's d and m, row b's d and m) and one VCVTPH2PS for both rows, and four in-lane
// VPERMILPS spread them, where each row took its own permute and conversion: the same floats
// into the same operations, so the same results bit for bit (TestIntAcc8Matches). A row's
// masked-off words are not read: row b's load starts in row a's bytes. One permute and one
// conversion a row pair fewer. On AMD Zen 4 (4096 rows of 128 values, four accumulators,
// weights > 0, thread CPU time, 61 calls alternated with p2QuadsU2's kernel in one process, in
// cache and over 1M rows on 2 MiB pages, six runs at load ~9–20, ns a row min/median): in cache
// 6.82–7.96/6.97–8.28 → 6.64–7.87/6.82–8.21, streamed 6.98–7.10/7.20–8.53 → 6.84–6.95/7.04–8.46,
// lower in six of six each (−0.16 to −0.20 in cache, −0.12 to −0.18 streamed, ~2.5 %). On Intel
// (instruction tables, not measured; no Z4 kernel runs there) the permute and the conversion's
// shuffle are port-5 µops, the merge-masked loads a load and a blend each.
func pairHeads(s, name string) string {
	old := `	VBROADCASTF32X4 (R8), Z12
	VMOVDQU16.Z (R12), K4, Z13
	VMOVDQU16.Z 64(R12), K5, Z14
	VPERMT2W Z14, Z29, Z13
	VCVTPH2PS Y13, Z16
	VPERMILPS $0x00, Z16, Z15
	VPERMILPS $0x55, Z16, Z16
	VMULPS Z12, Z15, Z15
	VMOVUPS Z15, (R15)
	VRANGEPS $0x0B, Z15, Z10, Z10
	VFMADD231PS Z12, Z16, Z11
	VADDPS Z15, Z9, Z9
	VBROADCASTF32X4 (R8)(R9*1), Z20
	VMOVDQU16.Z (R12)(R11*1), K4, Z21
	VMOVDQU16.Z 64(R12)(R11*1), K5, Z23
	VPERMT2W Z23, Z29, Z21
	VCVTPH2PS Y21, Z24
	VPERMILPS $0x00, Z24, Z22
	VPERMILPS $0x55, Z24, Z24
	VMULPS Z20, Z22, Z22
	VMOVUPS Z22, 64(R15)
	VRANGEPS $0x0B, Z22, Z28, Z28
	VFMADD231PS Z20, Z24, Z18
	VADDPS Z22, Z17, Z17
`
	setup := "\tKMOVQ R9, K5\n"
	if name != "Q51" || strings.Count(s, old) != 1 || strings.Count(s, setup) != 1 {
		panic("pairHeads: the first prepass changed")
	}
	s = strings.Replace(s, setup, setup+`	MOVL $0x03003003, AX
	KMOVQ AX, K6
	KANDQ K6, K4, K4
	KSHIFTLQ $2, K4, K6
	MOVL $0x30, AX
	KMOVQ AX, K7
	KANDQ K7, K5, K5
	KSHIFTLQ $2, K5, K7
	VMOVDQU16 ·intAccQ51LD2Idx(SB), Z7
`, 1)
	return strings.Replace(s, old, `	VBROADCASTF32X4 (R8), Z12
	VBROADCASTF32X4 (R8)(R9*1), Z20
	VMOVDQU16.Z (R12), K4, Z13
	VMOVDQU16 -4(R12)(R11*1), K6, Z13
	VMOVDQU16.Z 64(R12), K5, Z14
	VMOVDQU16 60(R12)(R11*1), K7, Z14
	VPERMT2W Z14, Z7, Z13
	VCVTPH2PS Y13, Z16
	VPERMILPS $0x00, Z16, Z15
	VPERMILPS $0xAA, Z16, Z22
	VPERMILPS $0x55, Z16, Z24
	VPERMILPS $0xFF, Z16, Z16
	VMULPS Z12, Z15, Z15
	VMOVUPS Z15, (R15)
	VRANGEPS $0x0B, Z15, Z10, Z10
	VFMADD231PS Z12, Z24, Z11
	VADDPS Z15, Z9, Z9
	VMULPS Z20, Z22, Z22
	VMOVUPS Z22, 64(R15)
	VRANGEPS $0x0B, Z22, Z28, Z28
	VFMADD231PS Z20, Z16, Z18
	VADDPS Z22, Z17, Z17
`, 1)
}

// pairHeadsOn makes q5_1's Zen 4 kernel with 8-bit weights form its first prepass by pairHeads.
const pairHeadsOn = true

// rawHi rewrites a w8raw kernel (q4_0, q4_1 with 8-bit weights): the high nibbles' VPDPBUSD
// take the whole code bytes b = lo + 16·hi (Z20, as quadDec leaves them) in place of the
// shifted and masked hi (Z24), and once per tile and block hi's sums become (b's sums − lo's
// sums) / 16: Σ W·b − Σ W·lo = 16·Σ W·hi exactly in int32 (|W| ≤ 127, b ≤ 255, ≤ 64 rows), so
// the results are the masked kernel's bit for bit (TestIntAcc8Matches), the decoder's one
// 512-bit AND a row quad and block (the low nibbles'). It replaces rawLo, which took the whole
// bytes for the low nibbles' sums instead (lo = b − 16·hi) and so kept a shift and an AND for
// the high ones (q4_0 4.78 → 4.69 ns a row, q4_1 5.73 → 5.58 against the masked kernel). On AMD
// Zen 4 (4096 rows of 128 values, four accumulators, in cache, thread CPU time, 201 calls
// alternated with rawLo's kernels, median ns a row, two runs, a loaded machine): q4_0 4.51 →
// 4.44 and 4.48 → 4.41, q4_1 5.63 → 5.48 and 5.62 → 5.47; streamed alike (±0.1). On Intel
// (instruction tables, not measured) the shift ran on port 0 beside the VPDPBUSD, the AND on
// port 0 or 5.
func rawHi(s string) string {
	old := "\tVPSRLW $4, Z20, Z24\n\tVPANDD Z31, Z24, Z24\n"
	if !strings.Contains(s, old) {
		panic("rawHi")
	}
	s = strings.ReplaceAll(s, old, "")
	s = strings.ReplaceAll(s, "(R8), Z24, Z", "(R8), Z20, Z")
	var b strings.Builder
	for h := 0; h < nacc; h++ {
		fmt.Fprintf(&b, "\tVPSUBD Z%d, Z%d, Z%d\n\tVPSRAD $4, Z%d, Z%d\n", 2*h, 2*h+1, 2*h+1, 2*h+1, 2*h+1)
	}
	fin := "\tMOVQ CX, R12\n"
	if !strings.Contains(s, fin) {
		panic("rawHi fin")
	}
	return strings.Replace(s, fin, fin+b.String(), 1)
}

// rlMx are the pipelined rows-in-lanes prepass's largest magnitudes of block b's products (lane
// 4r + h), free in q4_0's and iq4_nl's row loops.
var rlMx = [4]string{"Z27", "Z10", "Z11", "Z12"}

// rlProducts forms block b's products of a row quad (lane 4r + h: row r, accumulator h) from
// the scales in d (lane 4r + b) and the weights in w (lane 4r + h): element b of each 128-bit
// lane of d times w into p, stored at 64b(dst), and its magnitudes into mx[b].
func rlProducts(d, w, p, dst string, mx [4]string) string {
	var b strings.Builder
	for k := 0; k < 4; k++ {
		fmt.Fprintf(&b, "\tVPERMILPS $0x%02X, %[2]s, %[3]s\n\tVMULPS %[4]s, %[3]s, %[3]s\n\tVMOVUPS %[3]s, %[5]d(%[6]s)\n\tVRANGEPS $0x0B, %[3]s, %[7]s, %[7]s\n",
			0x55*k, d, p, w, 64*k, dst, mx[k])
	}
	return b.String()
}

// rlGather loads a row quad's scales and weights: row r's block b scale (f16) at word 9b + r of
// d (rows r's 64 bytes loaded 2r bytes before its block at row, merged by K4..K7), permuted to
// words 4r + b (Z29, ·intAccRL18Idx) and converted; row r's four weights into lane r of w. rows
// (rb bytes apart, rbr) and wts (ws bytes apart, wsr) are registers; AX scratch. Where n is set
// (a register holding 1..3), only that many rows, the others' lanes left zero (lbl: a label).
func rlGather(rows, rbr, wts, wsr, d, w, n, lbl string) string {
	x := "X" + w[1:]
	if n == "" {
		return fmt.Sprintf(`	VMOVDQU16.Z (%[1]s), K4, %[5]s
	VMOVDQU16 -2(%[1]s)(%[2]s*1), K5, %[5]s
	LEAQ (%[1]s)(%[2]s*2), AX
	VMOVDQU16 -4(AX), K6, %[5]s
	VMOVDQU16 -6(AX)(%[2]s*1), K7, %[5]s
	VMOVUPS (%[3]s), %[7]s
	VINSERTF32X4 $1, (%[3]s)(%[4]s*1), %[6]s, %[6]s
	LEAQ (%[3]s)(%[4]s*2), AX
	VINSERTF32X4 $2, (AX), %[6]s, %[6]s
	VINSERTF32X4 $3, (AX)(%[4]s*1), %[6]s, %[6]s
	VPERMW %[5]s, Z29, %[5]s
	VCVTPH2PS Y%[8]s, %[5]s
`, rows, rbr, wts, wsr, d, w, x, d[1:])
	}
	return fmt.Sprintf(`	VMOVDQU16.Z (%[1]s), K4, %[5]s
	VMOVUPS (%[3]s), %[7]s
	CMPQ %[9]s, $2
	JB   %[10]s
	VMOVDQU16 -2(%[1]s)(%[2]s*1), K5, %[5]s
	VINSERTF32X4 $1, (%[3]s)(%[4]s*1), %[6]s, %[6]s
	CMPQ %[9]s, $3
	JB   %[10]s
	VMOVDQU16 -4(%[1]s)(%[2]s*2), K6, %[5]s
	VINSERTF32X4 $2, (%[3]s)(%[4]s*2), %[6]s, %[6]s
%[10]s:
	VPERMW %[5]s, Z29, %[5]s
	VCVTPH2PS Y%[8]s, %[5]s
`, rows, rbr, wts, wsr, d, w, x, d[1:], n, lbl)
}

// rlReduce joins the largest magnitudes mx[b] (lane 4r + h) over the rows r into lane 4b + h of
// Z10 (t: four scratch registers, none of mx but mx[0] may be Z10).
func rlReduce(mx, t [4]string) string {
	return fmt.Sprintf(`	VSHUFF32X4 $0x44, %[2]s, %[1]s, %[5]s
	VSHUFF32X4 $0xEE, %[2]s, %[1]s, %[6]s
	VRANGEPS $0x0B, %[6]s, %[5]s, %[5]s
	VSHUFF32X4 $0x44, %[4]s, %[3]s, %[6]s
	VSHUFF32X4 $0xEE, %[4]s, %[3]s, %[7]s
	VRANGEPS $0x0B, %[7]s, %[6]s, %[6]s
	VSHUFF32X4 $0x88, %[6]s, %[5]s, %[7]s
	VSHUFF32X4 $0xDD, %[6]s, %[5]s, %[8]s
	VRANGEPS $0x0B, %[8]s, %[7]s, Z10
`, mx[0], mx[1], mx[2], mx[3], t[0], t[1], t[2], t[3])
}

// rlMasks computes K4..K7 for rlGather from the quad's blocks (AX on entry): bit 9b + r of K(4+r)
// for its blocks b.
const rlMasks = `	DECQ AX
	IMULQ $%BS%, AX
	ADDQ $%HDR%, AX
	SHRQ $1, AX
	MOVL $0x08040201, R9
	BZHIL AX, R9, R9
	KMOVD R9, K4
	KSHIFTLD $1, K4, K5
	KSHIFTLD $1, K5, K6
	KSHIFTLD $1, K6, K7
`

// oldMasks is accTmpl's K4, K5 of the quad.
const oldMasks = `	DECQ AX
	IMULQ $%BS%, AX
	ADDQ $%HDR%, AX
	SHRQ $1, AX
	MOVQ $-1, R9
	BZHIQ AX, R9, R9
	KMOVQ R9, K4
	SHRQ $32, R9
	KMOVQ R9, K5
`

// rlTemplate is accTmpl with the first prepass of the rows-in-lanes kernels (%RLP1%) and their
// masks.
func rlTemplate(t string, min bool) string {
	if !strings.Contains(t, oldMasks) {
		panic("rlTemplate: masks")
	}
	if min {
		t = strings.Replace(t, oldMasks, rlMinMasks, 1)
	} else {
		t = strings.Replace(t, oldMasks, rlMasks, 1)
	}
	i := strings.Index(t, "\t// w·d per row (lane 4b+h)")
	j := strings.Index(t, "\t// inv = min(")
	if i < 0 || j < i {
		panic("rlTemplate: prepass")
	}
	return t[:i] + "%RLP1%" + t[j:]
}

// p2RL is p2QuadsPack for the rows-in-lanes products (a quad's block b at 256q + 64b, lane
// 4r + h): block b's vector times the lanes 4b..4b+3 of inv (Z0..Z3), packed as p2QuadsPack's
// (byte 16r + 4b + h) and put into p2Quads' order (byte 16b + 4h + r) by one VPERMB
// (·intAccRLPackIdx, Z4).
var p2RL = `	// W = round(w·d·inv) as int8, rows in quads: (W_4q … W_4q+3) per dword; ΣW per lane.
` + p2Head + `	VPXORD Z18, Z18, Z18
	VPBROADCASTD ·intAccOnes8(SB), Z20
	VSHUFF32X4 $0x00, Z14, Z14, Z0
	VSHUFF32X4 $0x55, Z14, Z14, Z1
	VSHUFF32X4 $0xAA, Z14, Z14, Z2
	VSHUFF32X4 $0xFF, Z14, Z14, Z3
	VMOVDQU64 ·intAccRLPackIdx(SB), Z4
a@_p2:
	VMULPS (R8), Z0, Z16
	VMULPS 64(R8), Z1, Z17
	VMULPS 128(R8), Z2, Z12
	VMULPS 192(R8), Z3, Z13
	VCVTPS2DQ Z16, Z16
	VCVTPS2DQ Z17, Z17
	VCVTPS2DQ Z12, Z12
	VCVTPS2DQ Z13, Z13
	VPACKSSDW Z17, Z16, Z16
	VPACKSSDW Z13, Z12, Z12
	VPACKSSWB Z12, Z16, Z16
	VPERMB Z16, Z4, Z16
	VPDPBUSD Z16, Z20, Z18
	VMOVDQU32 Z16, (R12)
` + p2Next + `	JNZ  a@_p2`

// p2RLZ4 is p2RL for the Zen 4 flavours of q4_0's and iq4_nl's kernels (V8Z4): the four
// blocks' int32 W put into p2Quads' order (byte 16b + 4h + r) by two merge-masked two-table
// byte permutes (VPERMI2B, AVX-512 VBMI) of the index ·intAccRLPack2Idx, loaded afresh each
// quad (a load, no vector operation), the first filling the low 32 bytes from blocks 0 and 1,
// the second the high 32 from blocks 2 and 3: each W is within ±127, so its low byte is the
// byte the saturating packs gave, and the weights and sums are p2RL's bit for bit
// (TestIntAcc8Matches). Two shuffles a row quad where p2RL takes four (two VPACKSSDW, a
// VPACKSSWB and a VPERMB). On AMD Zen 4 (4096 rows of 128 values, four accumulators, random
// softmax-like weights, thread CPU time, 201 calls in cache and 9 passes over 96 MiB on 2 MiB
// pages, alternated with p2RL's kernel in one process, ns a row min/median, five runs at load
// ~2): q4_0 in cache 4.30–4.37/4.33–4.40 → 4.22–4.30/4.26–4.34, streamed 4.54–4.64/4.58–5.01
// → 4.47–4.59/4.51–4.73; iq4_nl (five runs at a higher load) in cache 5.36–5.59 → 5.39–5.57
// min, −0.04 in four runs of five. In the one-thread decode (native/attn TestDecodeBreakdown,
// eight rounds alternated) the values kernel's 4.7–6.3 ns a row moved with the machine's load,
// not measurably with this. Why the pass pays to shrink rather than to hide: on AMD Zen 4 (2 MiB
// pages, TestIntAcc8Speed's shape with random weights, thread CPU time, ns a row min) a copy of
// q4_0's kernel with this pass run 1 row quad in 16 (not a working kernel) took 3.77 in cache
// where the kernel took 4.31 (4.07 against 4.55 streamed): the pass costs ~0.55 ns a row,
// bound by its vector operations' issue; the pass of the next tile run instead at the start of
// the third block loop of this one, into a second set of packed weights, once the pipelined
// first prepass was complete (so its divisions and joins waited on nothing), measured alike
// (in cache 4.29/4.33 and 4.35/4.37 → 4.29/4.33 and 4.35/4.39, streamed alike; min/median,
// 201 calls and 9 passes over 96 MiB alternated): not kept. On Intel (instruction tables, not
// measured) the four shuffles and the two permutes all issue on port 5: two µops a quad fewer.
// Measured and not kept, a contract change: each weight rounded once, W = round(w·d·inv) of the
// exact product, by one VFMADD213PS of the loaded w·d with inv and 1.5·2²³ (the float's low
// byte is then W's, as |w·d·inv| < 2²²; the permutes take it as here), where the VMULPS and
// VCVTPS2DQ round twice: four conversions a row quad fewer, the multiplies unchanged. AMD Zen 4
// (TestIntAcc8Speed's shape, weights 1/4096, thread CPU time, 201 calls in cache and 9 passes
// over 96 MiB on 2 MiB pages, alternated with this kernel in one process, five runs at load
// ~23, ns a row min): in cache q4_0 4.15–4.24 → 4.23–4.33 (higher in five of five), iq4_nl
// 4.43–4.49 → 4.50–4.66 (four of five), q4_1 (p2RLMinZ4's) 4.62–4.67 → 4.66–4.78 (five of
// five); streamed within ±0.15 either way. Copies with the loads folded into the FMA (a copy
// of 1.5·2²³ into each destination first) took longer still (q4_0 4.40–4.42 against 4.22–4.25),
// with the loads and FMAs interleaved as long. The cost is in loading apart from the multiply
// (the FMA forms that read a factor from memory overwrite the addend or the other factor):
// this pass with the four loads apart and VMULPS from registers took as long as the
// FMA's (q4_0 4.27–4.37 against 4.19–4.27, iq4_nl 4.60–4.65 against 4.52–4.56, three runs),
// and with 1.5·2²³ added by VADDPS in place of the conversions (bit for bit these weights) as
// long as this one: the conversions themselves cost nothing measurable here. In whole
// decodes (native/attn TestDecodeBreakdown, 8 rounds with test binaries alternated, load ~20,
// values phase min ns a row, median paired change): q4_0 −0.04, iq4_nl −0.09, q4_1 +0.06,
// single rounds −0.65 … +0.47: within the noise. Where the packs saturate (p2RL, p2QuadsPack)
// the float's low bytes need the permutes instead, and the gains measured there were the
// permutes' alone: the PREFETCHT0 flavours (which Zen 4 does not run), in cache, q4_0 4.30–4.32
// → 4.23 with the FMA and 4.24 with the permutes after VMULPS and VCVTPS2DQ (bit for bit), q4_1
// 4.84–4.87 → 4.75–4.79 and 4.77–4.80; the two-accumulator Zen 4 flavours alike (p2QuadsPack2).
var p2RLZ4 = func() string {
	old := `	VMOVDQU64 ·intAccRLPackIdx(SB), Z4
`
	pack := `	VPACKSSDW Z17, Z16, Z16
	VPACKSSDW Z13, Z12, Z12
	VPACKSSWB Z12, Z16, Z16
	VPERMB Z16, Z4, Z16
	VPDPBUSD Z16, Z20, Z18
	VMOVDQU32 Z16, (R12)
`
	if strings.Count(p2RL, old) != 1 || strings.Count(p2RL, pack) != 1 {
		panic("p2RLZ4: p2RL changed")
	}
	return strings.NewReplacer(old, `	MOVQ $0x00000000FFFFFFFF, AX
	KMOVQ AX, K1
	KNOTQ K1, K2
`, pack, `	VMOVDQU64 ·intAccRLPack2Idx(SB), Z21
	VPERMI2B Z17, Z16, K1, Z21
	VPERMI2B Z13, Z12, K2, Z21
	VPDPBUSD Z21, Z20, Z18
	VMOVDQU32 Z21, (R12)
`).Replace(p2RL)
}()

// p2RLZ4On makes the Zen 4 flavours of q4_0's and iq4_nl's kernels with 8-bit weights pack by
// p2RLZ4.
const p2RLZ4On = true

// p2RLMin is p2RL for rlProductsMin's rotated products: vector k of a quad, lane 4r + b, is
// block b's accumulator (b + k) mod 4, so it is multiplied by inv permuted to match (Z0..Z3:
// lane 4r + b of Zk takes inv's lane 4b + (b + k) mod 4) and the packed bytes (byte 16r + 4k + b)
// put into p2Quads' order (byte 16b + 4h + r) by ·intAccRLRotPackIdx: p2RL's weights and sums
// bit for bit from the same products.
var p2RLMin = strings.Replace(p2RL, `	VSHUFF32X4 $0x00, Z14, Z14, Z0
	VSHUFF32X4 $0x55, Z14, Z14, Z1
	VSHUFF32X4 $0xAA, Z14, Z14, Z2
	VSHUFF32X4 $0xFF, Z14, Z14, Z3
	VMOVDQU64 ·intAccRLPackIdx(SB), Z4
`, `	VMOVDQU64 ·intAccRotInvIdx(SB), Z0
	VMOVDQU64 ·intAccRotInvIdx+64(SB), Z1
	VMOVDQU64 ·intAccRotInvIdx+128(SB), Z2
	VMOVDQU64 ·intAccRotInvIdx+192(SB), Z3
	VPERMPS Z14, Z0, Z0
	VPERMPS Z14, Z1, Z1
	VPERMPS Z14, Z2, Z2
	VPERMPS Z14, Z3, Z3
	VMOVDQU64 ·intAccRLRotPackIdx(SB), Z4
`, 1)

// p2RLMinZ4 is p2RLMin for q4_1's Zen 4 kernel (V8Z4): the four rotated vectors' int32 W
// packed to words by the two VPACKSSDW and the words' low bytes put into p2Quads' order by
// one two-table byte permute (VPERMT2B, AVX-512 VBMI; ·intAccRLRotPack2Idx, its index kept in
// Z4), where p2RLMin packs the words to bytes (VPACKSSWB) and permutes them (VPERMB): each W
// is within ±127, so a word's low byte is the byte VPACKSSWB gave, and the weights and sums are
// p2RLMin's bit for bit (TestIntAcc8Matches). Three shuffles a row quad in place of four. On
// AMD Zen 4 (4096 rows of 128 values, four accumulators, random softmax-like weights, thread
// CPU time, 201 calls in cache and 9 passes over 96 MiB on 2 MiB pages streamed, alternated
// with the kernel before in one process, five runs, ns a row min/median): in cache
// 4.83–4.95/4.85–4.98 → 4.78–4.90/4.81–4.94 (lower in five of five), streamed 5.08–5.46 →
// 5.00–5.43 min (lower in five), medians 5.12–6.33 → 5.07–5.77. Only AMD Zen 4 runs it.
var p2RLMinZ4 = func() string {
	rep := [][2]string{{`	VMOVDQU64 ·intAccRLRotPackIdx(SB), Z4
`, `	VMOVDQU64 ·intAccRLRotPack2Idx(SB), Z4
`}, {`	VPACKSSWB Z12, Z16, Z16
	VPERMB Z16, Z4, Z16
`, `	VPERMT2B Z12, Z4, Z16
`}}
	s := p2RLMin
	for _, r := range rep {
		if strings.Count(s, r[0]) != 1 {
			panic("p2RLMinZ4: p2RLMin changed")
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return s
}()

// p2RLMinZ4On makes q4_1's Zen 4 kernel with 8-bit weights pack by p2RLMinZ4.
const p2RLMinZ4On = true

// rlPipe fills in the first prepass of q4_0's and iq4_nl's kernels with 8-bit weights (four
// accumulators) with a quad's rows in lanes: the quad's 16 block scales gathered into one
// register (row r's 64 bytes loaded 2r bytes early under the masks K4..K7, so that its block b
// lands in word 9b + r), moved to words 4r + b by one VPERMW and converted by one VCVTPH2PS; the
// four rows' weights one 128-bit lane each (one load where wstride is 16); block b's products
// by one VPERMILPS (element b of each lane) and one VMULPS, lane 4r + h; their largest
// magnitudes kept per block (four registers) and joined once per tile (rlReduce). p1Pipe's
// operations a row were one VPERMW, one VCVTPH2PS and one VBROADCASTF32X4 besides the
// VMULPS and VRANGEPS: now one VPERMILPS and a quarter of a VPERMW and a VCVTPH2PS. The same
// products (the same float32 multiplications), the same maxima (exact in any order) and so
// the same weights and sums bit for bit (TestIntAcc8Matches). It runs pipelined as p1Pipe's, a
// row quad of the next tile each two-quad step of the row loops (the first half of a tile's
// block loops), the rest after them; the tile's own loop where it was not. Measured on AMD Zen 4
// (TestIntAcc8Speed-style, 4096 rows of 128 values, four accumulators, thread CPU time, 201
// calls alternated with the p1Pipe kernels, median ns a row, two runs, a loaded machine): q4_0
// 5.14 → 4.81 and 4.95 → 4.64 in cache, 6.69 → 6.62 and 6.70 → 6.60 streamed (7 passes over
// 64 MiB); iq4_nl 5.33 → 5.05 and 5.17 → 4.87, 7.02 → 7.05 and 6.98 → 6.82. Ablations (not
// working kernels, same measurement): the prepass dropped altogether q4_0 4.0 in cache (it still
// costs ~0.8 ns a row); run after the row loops in its own loop instead of pipelined 5.1 (no
// gain, +0.6 streamed); the step after a step's first quad rather than its second: alike; in
// the tile's own loop only (not pipelined, pointers in registers): alike; the scales permuted
// already replicated (two VPERMW a quad), stored to the frame and converted from there by four
// VCVTPH2PS in place of the VPERMILPS: +0.7 in cache and streamed. Not
// measured on Intel: there VPERMILPS runs on port 5 beside the permutes, the VPDPBUSD on port 0
// by the tables (on ports 0 and 5 as measured on a Sapphire Rapids class Xeon: intAcc),
// and three VPERMW and three VCVTPH2PS (ports 0 and 5) a quad fewer, against three merge-masked
// VMOVDQU16 loads a quad (a load and a port 0/5 µop each; three VINSERTF32X4 more where the
// weights are not 16 bytes apart): no more port 5 µops than p1Pipe's in total. q4_1's is
// rlPipeMin: kept in p1Pipe's order (chains Σ w·d and Σ w·m by row parity) rows in lanes had
// counted ~8.3 512-bit operations a row against p1Pipe's ~8.5, so it forms its min term in
// another order.
//
// Tried in q4_0's Zen 4 kernel and not kept (AMD Zen 4, EPYC Genoa, 2 shared vCPUs, load ~2–10;
// 4096 rows of 128 values, four accumulators, weights 1/4096, thread CPU time, 101 calls in
// cache and 9 passes over 96 MiB on 2 MiB pages, old and new copies alternated in one process,
// three runs, ns a row median): where rows are 72 bytes apart, the pipelined step's scale
// gather (four merge-masked word loads and the VPERMW) by two plain 64-byte loads and two
// VPERMI2W with the next 64 bytes from memory (rows 0 and 1's scales lie within the first
// row's 128 bytes, rows 2 and 3's within the third's; words 0..7 and 8..15 under two masks):
// in cache 4.25–4.41 → 4.26–4.43, streamed 4.60–4.71 → 4.64–4.71, no gain. Where the kernel's
// time goes (the same harness, copies with a piece removed, not working kernels, two to three
// runs): whole 4.23–4.42 in cache, 4.55–4.68 streamed; without the pipelined first prepass
// (its steps and catch-up skipped) 3.54–3.70 and 3.92–4.10; without the second prepass's loop
// as well 3.40–3.56 and 3.60–3.77 (tq4's kernel, one scale a row and so no per-block weights,
// sits near there); within the first prepass the merge-masked scale loads ~0.25, the products'
// VMULPS and stores ~0.22, VRANGEPS ~0.1, VCVTPH2PS ~0.08, VPERMW ~0.05; in the row loops the
// codes' VPERMT2B and VPANDD ~0.2, their two inserts ~0.15, half the VPDPBUSD ~0.7; the
// finish's conversions ~0.1.
//
// Tried later in the same kernel and not kept (AMD Zen 4, EPYC Genoa, 2 shared vCPUs, load 1–15;
// 4096 rows of 128 values, four accumulators, weights 1/4096, thread CPU time, 101 calls in cache
// and 5–9 passes over 96 MiB on 2 MiB pages, copies alternated in one process, two to three runs,
// ns a row p10 in cache / min streamed). What one operation costs: four independent ones on free
// registers added to each two-quad step of the row loops (two a row) took in cache +0.17–0.21 for
// VPANDD, VMULPS, VPERMILPS, VRANGEPS, VCVTDQ2PS, VCVTPS2DQ, VPSRLW, VPSHUFD, VSHUFPS, VPUNPCKLBW,
// 16- and 32-byte loads and VPBROADCASTD from memory (VPBLENDMW, VPMAXUW, VPMULTISHIFTQB and a ymm
// VPERMB as much as VPANDD in a run where it was +0.07); VINSERTI32X4 (ymm, from memory) +0.23;
// VPDPBUSD +0.30, with its memory broadcast +0.345; VPERMB, VPERMW, VPERMD, VPSHUFB, VSHUFI64X2,
// VPBROADCASTD from a register, merge-masked VMOVDQU16 loads and 64-byte loads +0.38–0.40
// (VPACKSSDW, VPMOVDB and VPERMQ 3.5 times VPANDD in the loaded run); a ymm VPERMT2B +0.44, a
// 64-byte store +0.45, VCVTPH2PS +0.61, a zmm VPERMT2B +0.68. Scalar instructions cost nothing
// measurable: the prefetches taken out (timing only) −0.01 in cache, and a step's four prefetches
// with one ADDQ in place of four, its second quad addressed off an index of 3·rb (two LEAQ a step
// fewer), alike (3.97–3.99 each). Two blocks a step (each row's two payloads by one 64-byte load,
// 0 or rb − 64 bytes into the row; a block's quad by two levels of VPERMT2B, four a quad and two
// blocks, in place of four inserts and two permutes; 16 sums): 4.01 → 4.58 in cache, 4.35 → 4.92
// streamed (the second table in a register first: 3.99 → 4.55, 4.29 → 4.79). The second prepass
// forming the products again from the quad's scales (one 64-byte store a quad in the first prepass
// in place of four) and the weights (four VPERMILPS and four VMULPS more a quad), the same weights
// bit for bit: 3.97–3.99 → 4.16–4.17 in cache, 4.24–4.28 → 4.43–4.44 streamed (taking out, timing
// only, three of the first prepass's four stores gains 0.06 in cache, the finish's loads and
// stores of the accumulators 0.09, its stores alone 0.05: a second set of sums to finish two tiles
// at once would gain less than that). Two prefetches of 72 bytes a step in place of four of 36
// (one line in nine missed): streamed 4.25 → 8.1. A tile's maxima bounded by max w · max |d|
// (cheaper first prepass, not bit for bit; quality first, through a Go model of the kernels whose
// exact maxima gave the kernels' results): kvlab ab, 16 seeds on kvlab-tiny-64 and its outlier
// fixture (two queries a KV head: the two-accumulator kernels' rounding), q4_0 and iq4_nl against
// the exact maxima, decode / prompt KL: tiny q4_0 +2.5 ± 2.5 / +4.0 ± 3.6 %, iq4_nl +1.6 ± 2.0 /
// +4.5 ± 3.5; outlier q4_0 +6.6 ± 2.0 / −1.6 ± 2.2, iq4_nl +1.6 ± 1.9 / +6.5 ± 3.1: above the 1–2
// % this rounding may move.
func rlPipe(f format, s string) string {
	if f.bs != 18 || f.min {
		panic("rlPipe: q4_0's and iq4_nl's layout only")
	}
	own := [4]string{"Z10", "Z11", "Z9", "Z28"}
	var p1 strings.Builder
	p1.WriteString(`	// w·d with a quad's rows in lanes (rlPipe): block b's products of rows 4q..4q+3 at
	// 256q + 64b, lane 4r + h; the largest magnitudes per block (Z10, Z11, Z9, Z28), joined after.
	LEAQ (DI)(BX*1), R12
	MOVQ %WP%(SP), R8
	LEAQ %PB%(SP), R15
	MOVQ %TN%(SP), R10
	MOVQ wstride+56(FP), SI
	MOVQ rb+32(FP), R11
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z9, Z9, Z9
	VXORPS Z28, Z28, Z28
	SHRQ $2, R10
	JZ   a@_p1o
a@_p1:
`)
	p1.WriteString(rlGather("R12", "R11", "R8", "SI", "Z13", "Z12", "", ""))
	p1.WriteString(rlProducts("Z13", "Z12", "Z15", "R15", own))
	p1.WriteString(`	LEAQ (R12)(R11*4), R12
	LEAQ (R8)(SI*4), R8
	ADDQ $256, R15
	DECQ R10
	JNZ  a@_p1
%PREBLOCK%
a@_p1o:
	MOVQ %TN%(SP), R10
	ANDQ $3, R10
	JZ   a@_p1r
`)
	p1.WriteString(rlGather("R12", "R11", "R8", "SI", "Z13", "Z12", "R10", "a@_p1g"))
	p1.WriteString(rlProducts("Z13", "Z12", "Z15", "R15", own))
	p1.WriteString("a@_p1r:\n")
	p1.WriteString(rlReduce(own, [4]string{"Z12", "Z13", "Z15", "Z16"}))
	p1.WriteString("a@_p1e:\n")

	pre := fmt.Sprintf(`	JMP  a@_p1o
a@_pre:
	// The tile's w·d, formed in the previous tile's row loops: its largest magnitudes (rlMx)
	// joined into Z10.
	MOVQ $0, %d(SP)
`, oPRE) + rlReduce(rlMx, [4]string{"Z13", "Z14", "Z15", "Z16"}) + `	VPBROADCASTD ·%QMAX%(SB), Z27
	VPBROADCASTD ·intAccInvCap(SB), Z26
	VPBROADCASTD ·intAccOne(SB), Z25
	JMP  a@_p1e`

	setup := withP1Next(fmt.Sprintf(`	// The next tile's first prepass in this tile's row loops where a row is one quad: a row
	// quad a row-loop step (R11: the full quads left), the rest after the loops.
	XORQ R11, R11
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	CMPQ AX, $4
	JA   a@_nopipe
	MOVQ %%RL%%(SP), AX
	CMPQ AX, $64
	JLE  a@_pn
	MOVQ $64, AX
a@_pn:
	TESTQ AX, AX
	JZ   a@_nopipe
	MOVQ AX, R11
	SHRQ $2, R11
%%P1NEXT%%
	MOVQ $1, %[4]d(SP)
	VXORPS Z27, Z27, Z27
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
a@_nopipe:`, oP1R, oP1W, oP1S, oPRE))

	// A full quad's step (R9 = rb); AX, SI scratch.
	full := fmt.Sprintf(`	MOVQ %[1]d(SP), AX
	VMOVDQU16.Z (AX), K4, Z26
	VMOVDQU16 -2(AX)(R9*1), K5, Z26
	LEAQ (AX)(R9*2), AX
	VMOVDQU16 -4(AX), K6, Z26
	VMOVDQU16 -6(AX)(R9*1), K7, Z26
	LEAQ (AX)(R9*2), AX
	MOVQ AX, %[1]d(SP)
	MOVQ %[2]d(SP), AX
	MOVQ wstride+56(FP), SI
	CMPQ SI, $16
	JNE  a@_wg@L@
	VMOVUPS (AX), Z25
	JMP  a@_wd@L@
a@_wg@L@:
	VMOVUPS (AX), X25
	VINSERTF32X4 $1, (AX)(SI*1), Z25, Z25
	LEAQ (AX)(SI*2), DX
	VINSERTF32X4 $2, (DX), Z25, Z25
	VINSERTF32X4 $3, (DX)(SI*1), Z25, Z25
a@_wd@L@:
	LEAQ (AX)(SI*4), AX
	MOVQ AX, %[2]d(SP)
	VPERMW Z26, Z29, Z26
	VCVTPH2PS Y26, Z26
	MOVQ %[3]d(SP), AX
`, oP1R, oP1W, oP1S) + rlProducts("Z26", "Z25", "Z22", "AX", rlMx) + fmt.Sprintf("\tADDQ $256, AX\n\tMOVQ AX, %d(SP)\n\tDECQ R11\n", oP1S)

	catch := "\tMOVQ rb+32(FP), R9\na@_cu:\n\tTESTQ R11, R11\n\tJZ   a@_cud\n" + strings.ReplaceAll(full, "@L@", "c") + "\tJMP  a@_cu\na@_cud:\n" +
		fmt.Sprintf(`	CMPQ %[1]d(SP), $0
	JE   a@_cue
	MOVQ %%RL%%(SP), R10
	CMPQ R10, $64
	JAE  a@_cue
	ANDQ $3, R10
	JZ   a@_cue
	MOVQ %[2]d(SP), R12
	MOVQ %[3]d(SP), R8
	MOVQ wstride+56(FP), SI
`, oPRE, oP1R, oP1W) + rlGather("R12", "R9", "R8", "SI", "Z26", "Z25", "R10", "a@_cug") +
		fmt.Sprintf("\tMOVQ %d(SP), AX\n", oP1S) + rlProducts("Z26", "Z25", "Z22", "AX", rlMx) + "a@_cue:"

	// A row quad of the next tile each two-quad step, after its second quad.
	old := "%DOTS1%\n\tADDQ $128, R8\n\tLEAQ (R12)(R9*4), R12\n\tLEAQ (R14)(R9*4), R14\n"
	if !strings.Contains(s, old) {
		panic("rlPipe: quad loop changed")
	}
	s = strings.Replace(s, old, old+"\tTESTQ R11, R11\n\tJZ   a@_s1\n"+strings.ReplaceAll(full, "@L@", "s")+"a@_s1:\n", 1)
	s = strings.Replace(s, "%RLP1%", p1.String(), 1)
	return strings.NewReplacer("%PRECHECK%", fmt.Sprintf("\tCMPQ %d(SP), $0\n\tJNE  a@_pre", oPRE),
		"%PREBLOCK%", pre, "%PIPESETUP%", setup, "%CATCHUP%", catch, "%PREINIT%", fmt.Sprintf("\tMOVQ $0, %d(SP)", oPRE)).Replace(s)
}

// rlChains are the pipelined rows-in-lanes prepass's chains Σ w·e of q4_1's kernels (block b's,
// lane 4r + h), where the row loops hold them: Z30 and Z31 freed for them (rlMinRegs).
var rlChains = [4]string{"Z19", "Z24", "Z30", "Z31"}

// rlGatherMin loads a row quad's scales and mins (q4_1: 20-byte blocks, d and m at words 10b
// and 10b + 1 of a row's 64 bytes from its quad, masked by K4) and weights for rlPipeMin: rows 0
// and 1 into d by one two-table word permute (Z29, ·intAccRL20Idx: word 4r + b of the 32 row
// r's d of block b, word 16 + 4r + b its m, the same words again 8 on), rows 2 and 3 into s2
// the same way and merged into words 8..15 and 24..31 (K5); d and m converted (d into d's lanes
// 4r + b, m into e's) and e = m + 8·d (one FMA: 8·d is exact, so e is m + 8·d rounded once);
// row r's four weights into lane r of w. AX, s1, s2 scratch. Where n is set (a register holding
// 1..3), only that many rows, the others' words and weights zero (lbl: a label prefix).
func rlGatherMin(rows, rbr, wts, wsr, d, e, w, s1, s2, n, lbl string) string {
	x := "X" + w[1:]
	y := func(z string) string { return "Y" + z[1:] }
	var b strings.Builder
	if n == "" {
		fmt.Fprintf(&b, `	VMOVDQU16.Z (%[1]s), K4, %[3]s
	VMOVDQU16.Z (%[1]s)(%[2]s*1), K4, %[4]s
	VPERMT2W %[4]s, Z29, %[3]s
	LEAQ (%[1]s)(%[2]s*2), AX
	VMOVDQU16.Z (AX), K4, %[5]s
	VMOVDQU16.Z (AX)(%[2]s*1), K4, %[4]s
	VPERMT2W %[4]s, Z29, %[5]s
	VMOVDQU16 %[5]s, K5, %[3]s
	VMOVUPS (%[6]s), %[8]s
	VINSERTF32X4 $1, (%[6]s)(%[7]s*1), %[9]s, %[9]s
	LEAQ (%[6]s)(%[7]s*2), AX
	VINSERTF32X4 $2, (AX), %[9]s, %[9]s
	VINSERTF32X4 $3, (AX)(%[7]s*1), %[9]s, %[9]s
`, rows, rbr, d, s1, s2, wts, wsr, x, w)
	} else {
		fmt.Fprintf(&b, `	VMOVDQU16.Z (%[1]s), K4, %[3]s
	VMOVUPS (%[6]s), %[8]s
	VPXORD %[4]s, %[4]s, %[4]s
	VPXORD %[5]s, %[5]s, %[5]s
	CMPQ %[10]s, $2
	JB   %[11]sa
	VMOVDQU16.Z (%[1]s)(%[2]s*1), K4, %[4]s
	VINSERTF32X4 $1, (%[6]s)(%[7]s*1), %[9]s, %[9]s
	CMPQ %[10]s, $3
	JB   %[11]sa
	VMOVDQU16.Z (%[1]s)(%[2]s*2), K4, %[5]s
	VINSERTF32X4 $2, (%[6]s)(%[7]s*2), %[9]s, %[9]s
%[11]sa:
	VPERMT2W %[4]s, Z29, %[3]s
	VPXORD %[4]s, %[4]s, %[4]s
	VPERMT2W %[4]s, Z29, %[5]s
	VMOVDQU16 %[5]s, K5, %[3]s
`, rows, rbr, d, s1, s2, wts, wsr, x, w, n, lbl)
	}
	fmt.Fprintf(&b, `	VEXTRACTI64X4 $1, %[1]s, %[3]s
	VCVTPH2PS %[4]s, %[1]s
	VCVTPH2PS %[3]s, %[2]s
	VFMADD231PS.BCST ·intAccEight(SB), %[1]s, %[2]s
`, d, e, y(e), y(d))
	return b.String()
}

// rlProductsMin is rlProducts for q4_1 (rlPipeMin) with the weights rotated instead of the
// scales spread: for k = 0..3, w's lanes rotated by k within each 128-bit lane (wk: lane 4r + b
// holds row r's weight h = (b + k) mod 4; w itself for k = 0, one VPERMILPS for each other k)
// times d (lane 4r + b: row r's block b) into p, stored at 64k(dst) (p2RLMin takes them in this
// order), its magnitudes into mx[k], and wk times e added into ch[k]: three shuffles a quad
// where spreading d (and e) over the weights' lanes took eight. Lane 4r + b of vector k is
// block b's accumulator (b + k) mod 4, put back by rlRotOut once per tile.
func rlProductsMin(d, e, w, wk, p, dst string, mx, ch [4]string) string {
	var b strings.Builder
	for k := 0; k < 4; k++ {
		x := w
		if k > 0 {
			imm := 0
			for i := 0; i < 4; i++ {
				imm |= (i + k) % 4 << (2 * i)
			}
			fmt.Fprintf(&b, "\tVPERMILPS $0x%02X, %s, %s\n", imm, w, wk)
			x = wk
		}
		fmt.Fprintf(&b, "\tVMULPS %[1]s, %[2]s, %[3]s\n\tVMOVUPS %[3]s, %[4]d(%[5]s)\n\tVRANGEPS $0x0B, %[3]s, %[6]s, %[6]s\n\tVFMADD231PS %[1]s, %[7]s, %[8]s\n",
			x, d, p, 64*k, dst, mx[k], e, ch[k])
	}
	return b.String()
}

// rlRotOut puts rlReduce's (or rlReduceSum's) result in r back into p2's lanes: lane 4b + h
// takes lane 4k + b, k = (h − b) mod 4 (rlProductsMin's rotation), by one VPERMPS (t scratch).
func rlRotOut(r, t string) string {
	return fmt.Sprintf("\tVMOVDQU64 ·intAccRotOutIdx(SB), %[2]s\n\tVPERMPS %[1]s, %[2]s, %[1]s\n", r, t)
}

// rlReduceSum is rlReduce with sums in place of the largest magnitudes, into out: lane 4b + h
// of out is (L0 + L2) + (L1 + L3) of ch[b], Lr its lane 4r + h.
func rlReduceSum(ch, t [4]string, out string) string {
	s := rlReduce(ch, t)
	s = strings.ReplaceAll(s, "VRANGEPS $0x0B,", "VADDPS")
	if !strings.HasSuffix(s, ", Z10\n") {
		panic("rlReduceSum")
	}
	return strings.TrimSuffix(s, "Z10\n") + out + "\n"
}

// rlMinMasks is accTmpl's masks for rlPipeMin: K4 the words of the quad's scales and mins in
// the row's first 64 bytes (oldMasks' K4), K5 rlGatherMin's merge of rows 2 and 3.
const rlMinMasks = `	DECQ AX
	IMULQ $%BS%, AX
	ADDQ $%HDR%, AX
	SHRQ $1, AX
	MOVQ $-1, R9
	BZHIQ AX, R9, R9
	KMOVQ R9, K4
	MOVL $0xFF00FF00, R9
	KMOVD R9, K5
`

// rlMinRegs frees Z30 and Z31 in a rlPipeMin kernel for rlChains: the low nibbles' mask
// broadcast from memory by the VPANDD, the last quad's permute index loaded into Z21 before it.
func rlMinRegs(s string) string {
	for _, r := range []struct{ old, new string }{
		{"VPANDD Z31, Z20, Z23", "VPANDD.BCST ·intAccNib(SB), Z20, Z23"},
		{"\tVPERMB Z20, Z30, Z20\n", "\tVMOVDQU64 ·intAccQuadIdx(SB), Z21\n\tVPERMB Z20, Z21, Z20\n"},
		{"\tVPBROADCASTD ·intAccNib(SB), Z31\n", ""},
		{"\tVMOVDQU64 ·intAccQuadIdx(SB), Z30\n", ""},
	} {
		if !strings.Contains(s, r.old) {
			panic("rlMinRegs: " + r.old)
		}
		s = strings.ReplaceAll(s, r.old, r.new)
	}
	return s
}

// rlPipeMin is rlPipe for q4_1 (its mins): the first prepass with a quad's rows in lanes
// (rlGatherMin, rlProductsMin), pipelined into the row loops as rlPipe's, and Σ_j w_j·(m_j +
// 8·d_j) (the offset and min term) formed as e_j = m_j + 8·d_j (rounded once) times w_j added in
// four float32 chains per lane, one per row index mod 4 (rows of a tile in order), joined as
// (c₀ + c₂) + (c₁ + c₃) once per tile (rlReduceSum): in place of p1Pipe's Σ w·d and Σ w·m in two
// chains each (row index even, odd) and 8·Σ w·d + Σ w·m, so that this sum alone differs from
// p1Pipe's by float32 rounding (multi_intacc_amd64.go states the bound; TestIntAccMinBound).
// The w·d, their largest magnitudes and so the weights are rlPipe's and p1Pipe's bit for bit.
// A quad's steps: two masked loads and a two-table word permute for each row pair (rows 0, 1
// and 2, 3: rlGatherMin; q4_0's masked loads 2r bytes early do not fit: a row's four 20-byte
// blocks fill its first 64 bytes), a merge, an extract, two conversions and the FMA for e, and
// per block a VMULPS, store, VRANGEPS and FMA, with three VPERMILPS a quad rotating the
// weights (rlProductsMin): ~26 vector operations a quad where p1Pipe's four rows took ~42 (Z30
// and Z31 freed for the chains: rlMinRegs). On AMD Zen 4 (4096 rows of 128 values, four
// accumulators, thread CPU time, 201 calls in cache and 7 passes over 96 MiB on 2 MiB pages
// streamed, alternated with the p1Pipe kernel (PREFETCHT1 flavour), three runs, min/median ns a
// row): in cache 5.47–5.50/5.52–5.55 → 4.95–4.99/4.99–5.02, streamed 5.86–5.96/5.90–7.16 →
// 5.18–5.28/5.32–6.30 (q4_0's kernel beside them 4.42–4.52/4.46–4.56 and 4.66–4.76/5.00–6.13);
// with d and e spread over the weights' lanes instead (four VPERMILPS each a quad, the products
// in rlProducts' order) 5.14–5.20/5.20–5.25 and 5.47–5.53/5.54–6.76. Whole decodes (attn's
// TestDecodeBreakdown, 131072 cells, 32 heads on 8 KV heads, d 128, thread CPU time, test
// binaries alternated five times, a machine at load ~20 on 2 CPUs), the values phase, min ns a
// row: 6.56, 6.65, 7.71, 7.49, 7.01 → 6.13, 6.80, 6.98, 6.64, 6.41. Not measured on
// Intel: by the published tables (Skylake-SP, Ice Lake) VPERMT2W is three µops, two on port 5,
// so the two a quad take about what p1Pipe's four VPERMW took there; the conversions, FMAs and
// VRANGEPS (ports 0 and 5) are 12 a quad fewer.
func rlPipeMin(f format, s string) string {
	if f.bs != 20 || !f.min {
		panic("rlPipeMin: q4_1's layout only")
	}
	own, och := [4]string{"Z10", "Z11", "Z9", "Z28"}, [4]string{"Z0", "Z1", "Z2", "Z3"}
	var p1 strings.Builder
	p1.WriteString(`	// w·d with a quad's rows in lanes (rlPipeMin): block b's products of rows 4q..4q+3 at
	// 256q + 64b, lane 4r + h; the largest magnitudes per block (Z10, Z11, Z9, Z28) and the
	// chains Σ w·e (Z0..Z3), joined after.
	LEAQ (DI)(BX*1), R12
	MOVQ %WP%(SP), R8
	LEAQ %PB%(SP), R15
	MOVQ %TN%(SP), R10
	MOVQ wstride+56(FP), SI
	MOVQ rb+32(FP), R11
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z9, Z9, Z9
	VXORPS Z28, Z28, Z28
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	SHRQ $2, R10
	JZ   a@_p1o
a@_p1:
`)
	p1.WriteString(rlGatherMin("R12", "R11", "R8", "SI", "Z13", "Z17", "Z12", "Z16", "Z18", "", ""))
	p1.WriteString(rlProductsMin("Z13", "Z17", "Z12", "Z16", "Z15", "R15", own, och))
	p1.WriteString(`	LEAQ (R12)(R11*4), R12
	LEAQ (R8)(SI*4), R8
	ADDQ $256, R15
	DECQ R10
	JNZ  a@_p1
%PREBLOCK%
a@_p1o:
	MOVQ %TN%(SP), R10
	ANDQ $3, R10
	JZ   a@_p1r
`)
	p1.WriteString(rlGatherMin("R12", "R11", "R8", "SI", "Z13", "Z17", "Z12", "Z16", "Z18", "R10", "a@_p1g"))
	p1.WriteString(rlProductsMin("Z13", "Z17", "Z12", "Z16", "Z15", "R15", own, och))
	p1.WriteString("a@_p1r:\n")
	p1.WriteString(rlReduce(own, [4]string{"Z12", "Z13", "Z15", "Z16"}))
	p1.WriteString(rlReduceSum(och, [4]string{"Z12", "Z13", "Z15", "Z16"}, "Z9"))
	p1.WriteString(rlRotOut("Z10", "Z12") + rlRotOut("Z9", "Z12"))
	fmt.Fprintf(&p1, "a@_p1e:\n\tVMOVUPS Z9, %d(SP)\n", oMT)

	pre := fmt.Sprintf(`	JMP  a@_p1o
a@_pre:
	// The tile's w·d, formed in the previous tile's row loops: its largest magnitudes (rlMx)
	// joined into Z10, its chains (rlChains) into Z9.
	MOVQ $0, %d(SP)
`, oPRE) + rlReduce(rlMx, [4]string{"Z13", "Z14", "Z15", "Z16"}) + rlReduceSum(rlChains, [4]string{"Z13", "Z14", "Z15", "Z16"}, "Z9") +
		rlRotOut("Z10", "Z13") + rlRotOut("Z9", "Z13") +
		`	VPBROADCASTD ·%QMAX%(SB), Z27
	VPBROADCASTD ·intAccInvCap(SB), Z26
	VPBROADCASTD ·intAccOne(SB), Z25
	JMP  a@_p1e`

	setup := withP1Next(fmt.Sprintf(`	// The next tile's first prepass in this tile's row loops where a row is one quad: a row
	// quad a row-loop step (R11: the full quads left), the rest after the loops.
	XORQ R11, R11
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	CMPQ AX, $4
	JA   a@_nopipe
	MOVQ %%RL%%(SP), AX
	CMPQ AX, $64
	JLE  a@_pn
	MOVQ $64, AX
a@_pn:
	TESTQ AX, AX
	JZ   a@_nopipe
	MOVQ AX, R11
	SHRQ $2, R11
%%P1NEXT%%
	MOVQ $1, %[4]d(SP)
	VXORPS Z27, Z27, Z27
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z19, Z19, Z19
	VXORPS Z24, Z24, Z24
	VXORPS Z30, Z30, Z30
	VXORPS Z31, Z31, Z31
a@_nopipe:`, oP1R, oP1W, oP1S, oPRE))

	// A full quad's step (R9 = rb); AX, SI, DX scratch; Z26 d, Z23 e, Z25 w, Z22 and Z20, Z21
	// scratch.
	full := fmt.Sprintf(`	MOVQ %[1]d(SP), AX
	VMOVDQU16.Z (AX), K4, Z26
	VMOVDQU16.Z (AX)(R9*1), K4, Z21
	VPERMT2W Z21, Z29, Z26
	LEAQ (AX)(R9*2), AX
	VMOVDQU16.Z (AX), K4, Z20
	VMOVDQU16.Z (AX)(R9*1), K4, Z21
	VPERMT2W Z21, Z29, Z20
	VMOVDQU16 Z20, K5, Z26
	LEAQ (AX)(R9*2), AX
	MOVQ AX, %[1]d(SP)
	MOVQ %[2]d(SP), AX
	MOVQ wstride+56(FP), SI
	CMPQ SI, $16
	JNE  a@_wg@L@
	VMOVUPS (AX), Z25
	JMP  a@_wd@L@
a@_wg@L@:
	VMOVUPS (AX), X25
	VINSERTF32X4 $1, (AX)(SI*1), Z25, Z25
	LEAQ (AX)(SI*2), DX
	VINSERTF32X4 $2, (DX), Z25, Z25
	VINSERTF32X4 $3, (DX)(SI*1), Z25, Z25
a@_wd@L@:
	LEAQ (AX)(SI*4), AX
	MOVQ AX, %[2]d(SP)
	VEXTRACTI64X4 $1, Z26, Y23
	VCVTPH2PS Y26, Z26
	VCVTPH2PS Y23, Z23
	VFMADD231PS.BCST ·intAccEight(SB), Z26, Z23
	MOVQ %[3]d(SP), AX
`, oP1R, oP1W, oP1S) + rlProductsMin("Z26", "Z23", "Z25", "Z21", "Z22", "AX", rlMx, rlChains) +
		fmt.Sprintf("\tADDQ $256, AX\n\tMOVQ AX, %d(SP)\n\tDECQ R11\n", oP1S)

	catch := "\tMOVQ rb+32(FP), R9\na@_cu:\n\tTESTQ R11, R11\n\tJZ   a@_cud\n" + strings.ReplaceAll(full, "@L@", "c") + "\tJMP  a@_cu\na@_cud:\n" +
		fmt.Sprintf(`	CMPQ %[1]d(SP), $0
	JE   a@_cue
	MOVQ %%RL%%(SP), R10
	CMPQ R10, $64
	JAE  a@_cue
	ANDQ $3, R10
	JZ   a@_cue
	MOVQ %[2]d(SP), R12
	MOVQ %[3]d(SP), R8
	MOVQ wstride+56(FP), SI
`, oPRE, oP1R, oP1W) + rlGatherMin("R12", "R9", "R8", "SI", "Z26", "Z23", "Z25", "Z21", "Z20", "R10", "a@_cug") +
		fmt.Sprintf("\tMOVQ %d(SP), AX\n", oP1S) + rlProductsMin("Z26", "Z23", "Z25", "Z21", "Z22", "AX", rlMx, rlChains) + "a@_cue:"

	// A row quad of the next tile each two-quad step, after its second quad.
	old := "%DOTS1%\n\tADDQ $128, R8\n\tLEAQ (R12)(R9*4), R12\n\tLEAQ (R14)(R9*4), R14\n"
	if !strings.Contains(s, old) {
		panic("rlPipeMin: quad loop changed")
	}
	s = strings.Replace(s, old, old+"\tTESTQ R11, R11\n\tJZ   a@_s1\n"+strings.ReplaceAll(full, "@L@", "s")+"a@_s1:\n", 1)
	s = strings.Replace(s, "%RLP1%", p1.String(), 1)
	return strings.NewReplacer("%PRECHECK%", fmt.Sprintf("\tCMPQ %d(SP), $0\n\tJNE  a@_pre", oPRE),
		"%PREBLOCK%", pre, "%PIPESETUP%", setup, "%CATCHUP%", catch, "%PREINIT%", fmt.Sprintf("\tMOVQ $0, %d(SP)", oPRE)).Replace(s)
}

// rlMinPerm2On makes q4_1's Zen 4 kernel with 8-bit weights gather a full row quad's scales
// and mins by rlMinPerm2.
const rlMinPerm2On = true

// rlMinPerm2 rewrites the full row quads' gathers of q4_1's Zen 4 kernel (rlGatherMin's, in the
// tile's own first prepass and the pipelined one): the four rows' loads into four registers and
// two merge-masked two-table word permutes (VPERMI2W) of ·intAccRL20Idx, loaded afresh into
// the destination each quad, rows 0 and 1 into words 0..7 and 16..23 (K6, the complement of
// K5), rows 2 and 3 into words 8..15 and 24..31 (K5): in place of two VPERMT2W of the same
// index and a merge-masked move. The same words, so the same floats and results bit for bit
// (TestIntAcc8Matches). On AMD Zen 4 (p2RLMinZ4's measurement, against the kernel with
// p2RLMinZ4, five runs, ns a row min/median): in cache 4.76–4.82/4.79–4.85 →
// 4.69–4.76/4.72–4.78 (lower in five of five), streamed min 5.05–5.12 → 4.96–5.06 (lower in
// four), medians 5.09–5.58 → 5.08–5.45 (lower in five). Where q4_0's and iq4_nl's gather
// (rlGather: three merge-masked loads and one VPERMW, which the Zen 4 merges take no vector
// operation for) was rewritten the same way (four zero-masked loads, two VPERMI2W), it took
// longer: q4_0 4.30–4.35 → 4.38–4.42 in cache, 4.52–4.73 → 4.62–4.94 streamed, iq4_nl
// 4.65–4.67 → 4.74–4.76 and 4.87–5.03 → 4.93–5.18 (min, three runs): not kept. Also not kept
// (same measurement, five runs on a machine at load ~12): the gathered words stored to the
// frame and the minima converted from there (VCVTPH2PS from memory) in place of the
// VEXTRACTI64X4, a store for a shuffle: in cache 5.26–6.15 → 5.31–6.33 min, higher in five of
// five. Only AMD Zen 4 runs this flavour.
func rlMinPerm2(s string) string {
	for _, r := range []struct{ ld, rr, d, a, b, c, e string }{
		{"AX", "R9", "Z26", "Z21", "Z20", "Z22", "Z23"},
		{"R12", "R11", "Z13", "Z16", "Z18", "Z20", "Z21"},
	} {
		old := fmt.Sprintf(`	VMOVDQU16.Z (%[1]s), K4, %[3]s
	VMOVDQU16.Z (%[1]s)(%[2]s*1), K4, %[4]s
	VPERMT2W %[4]s, Z29, %[3]s
	LEAQ (%[1]s)(%[2]s*2), AX
	VMOVDQU16.Z (AX), K4, %[5]s
	VMOVDQU16.Z (AX)(%[2]s*1), K4, %[4]s
	VPERMT2W %[4]s, Z29, %[5]s
	VMOVDQU16 %[5]s, K5, %[3]s
`, r.ld, r.rr, r.d, r.a, r.b)
		new := fmt.Sprintf(`	VMOVDQU16.Z (%[1]s), K4, %[4]s
	VMOVDQU16.Z (%[1]s)(%[2]s*1), K4, %[5]s
	LEAQ (%[1]s)(%[2]s*2), AX
	VMOVDQU16.Z (AX), K4, %[6]s
	VMOVDQU16.Z (AX)(%[2]s*1), K4, %[7]s
	VMOVDQU64 ·intAccRL20Idx(SB), %[3]s
	VPERMI2W %[5]s, %[4]s, K6, %[3]s
	VPERMI2W %[7]s, %[6]s, K5, %[3]s
`, r.ld, r.rr, r.d, r.b, r.a, r.c, r.e)
		n := strings.Count(s, old)
		if n == 0 {
			panic("rlMinPerm2: gather changed")
		}
		s = strings.ReplaceAll(s, old, new)
	}
	k := "\tMOVL $0xFF00FF00, R9\n\tKMOVD R9, K5\n"
	if strings.Count(s, k) != 1 {
		panic("rlMinPerm2: masks changed")
	}
	return strings.Replace(s, k, k+"\tKNOTD K5, K6\n", 1)
}

// minFour rewrites the first prepass of q4_1's two-accumulator kernel with 8-bit weights (its
// labels' prefix lbl) to form the offset and min term as rlPipeMin does in the four-accumulator
// kernel: e = m + 8·d rounded once, w·e added into four chains by row index mod 4 (rows taken
// four a step), joined as (c₀ + c₂) + (c₁ + c₃), so that its accumulators' results are the
// four-accumulator kernel's bit for bit (TestIntAccTwoMatchesFour).
func minFour(s, lbl string) string {
	start := "\tSHRQ $1, R10\n\tJZ   " + lbl + "_p1o\n"
	end := fmt.Sprintf("\tVMOVUPS Z11, %d(SP)\n", oMT)
	i := strings.Index(s, start)
	j := strings.Index(s, end)
	if i < 0 || j < i || strings.Count(s, start) != 1 {
		panic("minFour: the prepass changed")
	}
	// row: one row's step (b: the next row, R9 and R11 on), its sum into chain ch.
	row := func(b bool, ch string) string {
		w, h, pr, mh, mx := "Z12", "Z13", "Z15", "Z16", "Z10"
		wa, ra, st := "(R8)", "(R12)", "(R15)"
		if b {
			w, h, pr, mh, mx = "Z20", "Z21", "Z22", "Z24", "Z28"
			wa, ra, st = "(R8)(R9*1)", "(R12)(R11*1)", "64(R15)"
		}
		return fmt.Sprintf(`	VBROADCASTF32X2.Z %[6]s, K7, %[1]s
	VMOVDQU16.Z %[7]s, K4, %[2]s
	VPERMW %[2]s, Z29, %[2]s
	VCVTPH2PS Y%[9]s, %[3]s
	VEXTRACTI64X4 $1, %[2]s, Y%[10]s
	VCVTPH2PS Y%[10]s, %[4]s
	VFMADD231PS.BCST ·intAccEight(SB), %[3]s, %[4]s
	VMULPS %[1]s, %[3]s, %[3]s
	VMOVUPS %[3]s, %[8]s
	VRANGEPS $0x0B, %[3]s, %[5]s, %[5]s
	VFMADD231PS %[1]s, %[4]s, %[11]s
`, w, h, pr, mh, mx, wa, ra, st, h[1:], mh[1:], ch)
	}
	const adv = "\tLEAQ (R8)(R9*2), R8\n\tLEAQ (R12)(R11*2), R12\n\tADDQ $128, R15\n"
	const adv1 = "\tADDQ R9, R8\n\tADDQ R11, R12\n\tADDQ $64, R15\n"
	// The chains c₀..c₃: Z11, Z18, Z9, Z17.
	var b strings.Builder
	fmt.Fprintf(&b, "\tSHRQ $2, R10\n\tJZ   %[1]s_p1o\n%[1]s_p1:\n", lbl)
	b.WriteString(row(false, "Z11") + row(true, "Z18") + adv + row(false, "Z9") + row(true, "Z17") + adv)
	fmt.Fprintf(&b, "\tDECQ R10\n\tJNZ  %[1]s_p1\n%[1]s_p1o:\n\tMOVQ %[2]d(SP), R10\n\tANDQ $3, R10\n\tJZ   %[1]s_p1e\n", lbl, oTN)
	b.WriteString(row(false, "Z11") + adv1)
	fmt.Fprintf(&b, "\tCMPQ R10, $2\n\tJB   %s_p1e\n", lbl)
	b.WriteString(row(false, "Z18") + adv1)
	fmt.Fprintf(&b, "\tCMPQ R10, $3\n\tJB   %s_p1e\n", lbl)
	b.WriteString(row(false, "Z9") + adv1)
	fmt.Fprintf(&b, `%[1]s_p1e:
	VRANGEPS $0x0B, Z28, Z10, Z10
	VXORPS Z15, Z15, Z15
	VMOVUPS Z15, (R15)         // the zero rows that fill the last quad
	VMOVUPS Z15, 64(R15)
	VMOVUPS Z15, 128(R15)
	VADDPS Z9, Z11, Z11
	VADDPS Z17, Z18, Z18
	VADDPS Z18, Z11, Z11
`, lbl)
	return s[:i] + b.String() + s[j:]
}

// offInitOn makes q4_0's Zen 4 kernel with 8-bit weights and four accumulators start its sums
// at the offset terms (offInit).
const offInitOn = true

// offInit rewrites q4_0's Zen 4 kernel with 8-bit weights and four accumulators (rawHi's sums)
// so that each block's sums start at their offset terms instead of at zero: accumulator h's
// low-nibble sum at −8·ΣW and its whole-byte sum at −136·ΣW, broadcast from the frame (oSS and
// oMT, which q4_0 leaves unused), so that rawHi's (Σ W·b − Σ W·lo) >> 4 comes out as Σ W·hi − 8·ΣW
// (−136 + 8 = −128 = −8·16: still a multiple of 16) and the low sum as Σ W·lo − 8·ΣW: the
// finish's eight VPSUBD a block dropped, the same int32 values (no sum comes near 2³¹) and so
// the same results bit for bit (TestIntAcc8Matches). On AMD Zen 4 (p2RLZ4's measurement,
// against the kernel with p2RLZ4 alone, eleven runs) in cache −0.02 to −0.03 ns a row in ten
// runs of eleven (min 4.29–4.45 → 4.26–4.42 in the quiet ones), streamed within the noise
// (±0.1).
func offInit(s string) string { return offInitOf(s, 3, oMT) }

// offInitOf is offInit for a kernel whose sumStore shifts ΣW left by sh (off = 2^sh) and whose
// high sums start at hi's lanes: where hi is set (rawHi's kernels, q4_0 and q4_1), the low sums
// start at −off·ΣW and the whole-byte sums at −(off + 16·off)·ΣW stored at hi; where hi is 0
// (iq4_nl: both nibbles' codes are levels + 128) both start at −off·ΣW.
func offInitOf(s string, sh, hi int) string {
	rep := func(old, new string) {
		if strings.Count(s, old) != 1 {
			panic("offInit: " + old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	store := fmt.Sprintf(`	VPSLLD $%d, Z18, Z18
	VPXORD Z16, Z16, Z16
	VPSUBD Z18, Z16, Z17
	VMOVDQU32 Z17, %d(SP)
`, sh, oSS)
	if hi != 0 {
		store += fmt.Sprintf(`	VPSLLD $4, Z18, Z18
	VPSUBD Z18, Z17, Z17
	VMOVDQU32 Z17, %d(SP)
`, hi)
	} else {
		hi = oSS
	}
	rep(fmt.Sprintf("\tVPSLLD $%d, Z18, Z18\n\tVMOVDQU32 Z18, %d(SP)\n", sh, oSS), store)
	for h := 0; h < 4; h++ {
		lo, hr := fmt.Sprintf("Z%d", 2*h), fmt.Sprintf("Z%d", 2*h+1)
		rep(fmt.Sprintf("\tVPXORD %[1]s, %[1]s, %[1]s\n", lo), fmt.Sprintf("\tVPBROADCASTD %d(R13), %s\n", oSS-oTT+4*h, lo))
		rep(fmt.Sprintf("\tVPXORD %[1]s, %[1]s, %[1]s\n", hr), fmt.Sprintf("\tVPBROADCASTD %d(R13), %s\n", hi-oTT+4*h, hr))
		rep(fmt.Sprintf("\tVPSUBD.BCST %d(R13), %s, %s\n", oSS-oTT+4*h, lo, lo), "")
		rep(fmt.Sprintf("\tVPSUBD.BCST %d(R13), %s, %s\n", oSS-oTT+4*h, hr, hr), "")
	}
	return s
}

// offInitQ41On makes q4_1's Zen 4 kernel with 8-bit weights and four accumulators start its
// sums at the offset terms (offInitOf: −136·ΣW in the frame at oCH + 64, which rlPipeMin leaves
// unused) and scale its high nibbles' sums by T/16 (hiT16Of, at oCH): per block and tile eight
// VPSUBD and four VPSRAD fewer; as in q4_0's kernel the int32 sums are the old ones less their
// offset terms (no sum comes near 2³¹) and T/16 times 16·x is T times x exactly, so the same
// results bit for bit (TestIntAcc8Matches). On AMD Zen 4 (4096 rows of 128 values, four
// accumulators, random softmax-like weights, thread CPU time, 201 calls in cache and 9 passes
// over 96 MiB on 2 MiB pages streamed, alternated with the kernel before in one process, five
// runs at load 4–6, ns a row min): in cache 4.86–4.97 → 4.78–4.84 (lower in five of five),
// streamed 5.15–5.33 → 5.05–5.32 (lower in four).
const offInitQ41On = true

// offInitQ51On makes q5_1's Zen 4 kernel with 8-bit weights start its sums at the offset
// terms (offInitOf: both nibbles' sums at −16·ΣW, ΣW over the tile's W of either sign): eight
// VPSUBD a block and tile fewer. Its second pass (pass2U) negates the sums before and after
// adding the negative weights' products, so they end at −16·ΣW + Σ W⁺·c − Σ W⁻·c, the sums the
// finish formed before: the same int32 values, so the same results bit for bit
// (TestIntAcc8Matches). On AMD Zen 4 (q51GFHi's measurement, against the kernel with q51GFHi,
// five runs at load 6–9, ns a row min/median): in cache 6.50–6.64/6.61–6.76 → 6.45–6.59/
// 6.61–6.72 (min lower in five of five, by 0.04–0.05), streamed 6.87–7.09/6.95–7.18 →
// 6.85–7.04/6.88–7.21 (min lower in four): the 1/8 operation a row it removes.
const offInitQ51On = true

// q51P1PlainOn makes q5_1's Zen 4 kernel with 8-bit weights read row a's header bytes in its
// first prepass's row-pair loop by plain loads where a quad is four blocks (q51P1Plain).
const q51P1PlainOn = true

// q51P1Plain rewrites the first prepass's row-pair loop of q5_1's Zen 4 kernel with 8-bit
// weights s (labels from lbl on; after pairHeads): where the block quad is four blocks (oNQ),
// a copy of the loop reads row a's 128 bytes from the quad's first block by two plain 64-byte
// loads in place of the two zero-masked ones (K4, K5), the quad's 96 bytes and 32 of what
// follows, row a's next blocks or row b's first (row b, the pair's second row, is in the
// call's rows, so nothing past them is read); row b's merge-masked loads and the permute,
// which takes the header words only, are unchanged: the same words, so the same results bit
// for bit (TestIntAcc8Matches). A shorter quad takes the loop as it was. Zen 4 runs a masked
// 512-bit load slower than a plain one (q41Z4Rows). On AMD Zen 4 (q51GFHi's measurement,
// against the kernel with offInitQ51On, four runs at load 6–9, ns a row median): in cache
// 6.63–6.68 → 6.51–6.55 (lower in four of four), streamed within the noise (the machine
// loaded by other tests in those runs).
func q51P1Plain(s, lbl string) string {
	start := "\tSHRQ $1, R10\n\tJZ   " + lbl + "_p1o\n" + lbl + "_p1:\n"
	end := "\tJNZ  " + lbl + "_p1\n"
	i := strings.Index(s, start)
	if i < 0 || strings.Count(s, start) != 1 {
		panic("q51P1Plain: the prepass loop changed")
	}
	i += len(start) - len(lbl+"_p1:\n")
	j := i + strings.Index(s[i:], end) + len(end)
	loop := s[i:j]
	const za, zb = "\tVMOVDQU16.Z (R12), K4, Z13\n", "\tVMOVDQU16.Z 64(R12), K5, Z14\n"
	if strings.Count(loop, za) != 1 || strings.Count(loop, zb) != 1 {
		panic("q51P1Plain: the prepass loads changed")
	}
	plain := strings.NewReplacer(lbl+"_p1", lbl+"_p1f", za, "\tVMOVDQU64 (R12), Z13\n", zb, "\tVMOVDQU64 64(R12), Z14\n").Replace(loop)
	check := fmt.Sprintf("\tCMPQ %d(SP), $4\n\tJNE  %s_p1\n", oNQ, lbl)
	return s[:i] + check + plain + "\tJMP  " + lbl + "_p1o\n" + s[i:]
}

// q51OneSetOn makes q5_1's Zen 4 kernel with 8-bit weights add both row quads of a step into
// one set of sums (q51OneSet).
const q51OneSetOn = true

// q51OneSet is oneSetQuad for q5_1's Zen 4 kernel with 8-bit weights s (labels from lbl on;
// its VPDPBUSD take the weights from Z22, the codes from Z23 and Z24): the second quad of a
// step adds into the first quad's sums (Z0..Z7), in both passes, not into a second set
// cleared at the block's start, negated with the first around the second pass and joined
// after: eight VPXORD and eight VPADDD a block and tile fewer (and eight VPSUBD twice where a
// second pass runs). Each sum still takes one VPDPBUSD every eight, and the int32 sums are
// exact in any order: the same results bit for bit (TestIntAcc8Matches). On AMD Zen 4
// (q51GFHi's measurement, against the kernel with q51P1Plain, five runs at load 5–6, ns a row
// median): in cache 6.60–6.70 → 6.38–6.48, streamed 6.92–9.68 → 6.77–9.48 (lower in five of
// five each).
func q51OneSet(s, lbl string) string {
	set2 := [8]string{"Z8", "Z9", "Z14", "Z15", "Z16", "Z17", "Z18", "Z28"}
	const note = "where\n\t// the loop takes two pairs a step, the second pair's into Z8, Z9, Z14, Z15, Z16, Z17, Z18, Z28, joined after)."
	if strings.Count(s, note) != 1 {
		panic("q51OneSet: comment changed")
	}
	s = strings.Replace(s, note, "two quads\n\t// a step, in both passes).", 1)
	i := strings.Index(s, "two quads\n\t// a step, in both passes).")
	j := i + strings.Index(s[i:], "_pair:\n")
	head, body, tail := s[:i], s[i:j], s[j:]
	rep := func(t *string, old, new string, n int) {
		if strings.Count(*t, old) != n {
			panic(fmt.Sprintf("q51OneSet: %q %d times, want %d", old, strings.Count(*t, old), n))
		}
		*t = strings.ReplaceAll(*t, old, new)
	}
	for k, z := range set2 {
		src := "Z23"
		if k%2 == 1 {
			src = "Z24"
		}
		rep(&body, fmt.Sprintf("\tVPXORD %[1]s, %[1]s, %[1]s\n", z), "", 1)
		rep(&tail, fmt.Sprintf("\tVPDPBUSD %s, Z22, %s\n", src, z), fmt.Sprintf("\tVPDPBUSD %s, Z22, Z%d\n", src, k), 2)
		rep(&tail, fmt.Sprintf("\tVPSUBD %[1]s, Z22, %[1]s\n", z), "", 2)
		if k == 0 {
			rep(&tail, lbl+"_pass1:\tVPADDD Z8, Z0, Z0\n", lbl+"_pass1:\n", 1)
		} else {
			rep(&tail, fmt.Sprintf("\tVPADDD %s, Z%d, Z%d\n", z, k, k), "", 1)
		}
	}
	return head + body + tail
}

// q51P2OrOn makes q5_1's Zen 4 kernel with 8-bit weights find a negative weight in its second
// prepass by the W's sign bits (q51P2Or).
const q51P2OrOn = true

// q51P2Or rewrites the second prepass of q5_1's Zen 4 kernel with 8-bit weights s (labels from
// lbl on; p2QuadsU2's): per row quad the four rows' int32 W OR-ed into Z18 (two VPTERNLOGD) in
// place of their sum (four VPADDD), a lane's flag its sign bit (VPMOVD2M) in place of ΣW ≠ the
// Σ of the packed bytes (VPCMPD), and ΣW that Σ of bytes where no W is negative (every W then
// 0…255, its own byte), else the sum of the W formed in the second pass's pack loop (p2s),
// which runs then: the same flag (set where a W is negative: W ≥ −255 and ≤ 255) and the same
// ΣW, so the same results bit for bit (TestIntAcc8Matches, its negative weights too). Two
// operations a row quad fewer. On AMD Zen 4 (q51GFHi's measurement, against the kernel with
// q51OneSet, five runs at load 5–7, ns a row median): in cache 6.38–6.52 → 6.32–6.46, streamed
// 6.70–9.02 → 6.62–8.95 (lower in five of five each).
func q51P2Or(s, lbl string) string {
	rep := func(old, new string) {
		if strings.Count(s, old) != 1 {
			panic("q51P2Or: " + old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	rep("\tVPADDD Z16, Z17, Z20\n\tVPADDD Z12, Z13, Z21\n\tVPADDD Z20, Z21, Z20\n\tVPADDD Z20, Z18, Z18\n",
		"\tVPTERNLOGD $0xFE, Z13, Z12, Z18\n\tVPTERNLOGD $0xFE, Z17, Z16, Z18\n")
	rep("\tVPCMPD $4, Z18, Z10, K1\n", "\tVPMOVD2M Z18, K1\n\tVMOVDQA32 Z10, Z18\n")
	cvt := "\tVCVTPS2DQ Z16, Z16\n\tVCVTPS2DQ Z17, Z17\n\tVCVTPS2DQ Z12, Z12\n\tVCVTPS2DQ Z13, Z13\n"
	i := strings.Index(s, lbl+"_p2s:\n")
	j := i + strings.Index(s[i:], cvt)
	if i < 0 || j < i || strings.Count(s[i:], lbl+"_p2s:\n") != 1 {
		panic("q51P2Or: the second pass's pack loop changed")
	}
	s = s[:i] + "\tVPXORD Z18, Z18, Z18\n" + s[i:j] + cvt +
		"\tVPADDD Z16, Z18, Z18\n\tVPADDD Z17, Z18, Z18\n\tVPADDD Z12, Z18, Z18\n\tVPADDD Z13, Z18, Z18\n" + s[j+len(cvt):]
	return s
}

// q50Z4BcstOn writes multiAccQ50VZ4INT, q5_0's VBMI values kernel for AMD Zen 4 (q50Z4Bcst).
const q50Z4BcstOn = true

// q50Z4Bcst makes q5_0's VBMI kernel s (multiAccQ50VINT, after q50OneSet) broadcast each weight
// dword from memory in its VPDPWSSD (VPDPWSSD.BCST, dotsOf with bcst) in place of four
// VPBROADCASTD a row pair and block into Z10..Z13 read by two VPDPWSSD each, as q8_0's Zen 4
// kernel does (q80Z4Bcst): four instructions a row pair and block fewer (eight a row), eight
// 4-byte loads where there were four, the same products added into the same sums in the same
// order, so the same results bit for bit (TestIntAccVBMIMatches). multiAccQ50VZ4INT; Zen 4
// takes it only where KVLAB_Z4NEW is set (multi_intacc_amd64.go's q50Z4: slower as a proxy
// on the Intel Xeon in cache, so not Zen 4's default until measured there).
//
// Not measured on a Zen 4 (none here). By instruction counts, a row pair and block of the row
// loop: 12 vector µops with a memory operand or none (4 broadcasts, 8 VPDPWSSD) → 8, the 5
// decode operations and the scalar mask work unchanged; the VPDPWSSD stay 16 a row (16 cycles
// at one 512-bit multiply a cycle, the loop's floor). On Zen 4 q8_0's same change measured
// −0.15 to −0.2 ns a row in cache (of ~6.6) and −0.1 to −0.3 in the decode's values phase; at
// the top of this file, the memory broadcasts took ~1–2 % less time on Zen 4 for the kernels of
// that time and ~17 % more on Zen 5 (which keeps multiAccQ50VINT). LLVM's znver4 model (19 and
// 22 alike), with mcakernels' -zenvnni proxy (the dot products priced as FMAs), judged.specs'
// weights, cycles a row: multiAccQ50VINT 31.47 → this 24.18 (the row-pair loop 24.07 → 17.15
// an iteration of two pairs: the model puts each VPBROADCASTD m32 on FP1 beside the
// multiplies, likely too dear, since the measured gains above are ~10× smaller); without the
// proxy 48.48 → 23.11 (the model's register-form dot products at four pipe-cycles, its memory
// forms at one: not a measure); sapphirerapids 31.09 → 30.51. Intel never runs it; its figures there as a proxy
// (TestQ50Z4Speed) are at multi_intacc_amd64.go's q50Z4.
//
// q5_0's Zen 4 budget (README "Speed targets": 0.49 of f16's 21.0 ms, 10.3 ms, ~9.8 ns a row,
// ~36 cycles at ~3.7 GHz) against what these kernels take there (native/attn
// TestDecodeBreakdown at the bench shape, measured: whole ~14.1 ns, scores ~5.0, values ~8.3,
// the rest ~0.8): the values' 16 VPDPWSSD a row alone are 16 cycles at one a cycle, the
// scores' 8 VPDPBUSD 8 more, and the scores kernel measured ~17.6 cycles a row in cache.
// With every values cycle but the multiplies gone (16) the decode would still take ~37: the
// target needs fewer multiplies, that is q5W8's 8-bit weights (a quality decision:
// multi_intacc_amd64.go's q5W8), not a cheaper int16 kernel. mcakernels with -zenvnni,
// judged.specs' weights, cycles a row: multiScoresQ50Z4GFNI 20.5, multiAccQ50VINT 31.5 (this
// kernel 24.2).
func q50Z4Bcst(f format, s string) string {
	b := f
	b.bcst = true
	n := 0
	for _, off := range []int{0, 64} {
		old, new := dots(off, set1)+"\n", dotsOf(b, off, set1)+"\n"
		n += strings.Count(s, old)
		s = strings.ReplaceAll(s, old, new)
	}
	if n != 4 || strings.Contains(s, "VPBROADCASTD 0(R8), Z10") {
		panic(fmt.Sprintf("q50Z4Bcst: %d row-pair dots", n))
	}
	return s
}

// q50OneSetOn makes q5_0's VBMI kernel (multiAccQ50VINT) add both row pairs of a step into one
// set of sums (q50OneSet).
const q50OneSetOn = true

// offInitQ50On makes q5_0's VBMI kernel (multiAccQ50VINT) start its sums at the offset terms
// (offInitOf: both nibbles' sums at −16·ΣW): eight VPSUBD a block and tile fewer, the same
// int32 sums, so the same results bit for bit (TestIntAccVBMIMatches). On AMD Zen 4
// (q50OneSet's measurement, against the kernel with it, five runs at load 2–4, ns a row
// min/median): in cache 7.58–7.64/7.60–7.67 → 7.53–7.60/7.56–7.62, streamed 7.91–8.01/
// 7.93–8.42 → 7.85–7.94/7.93–8.47 (min lower in five of five).
const offInitQ50On = true

// q50OneSet is oneSetQuad for q5_0's VBMI kernel s (two row pairs a step, VPDPWSSD with the
// weights in Z10..Z13): the second pair of a step adds into the first pair's sums (Z0..Z7), not
// into a second set cleared at the block's start and joined after: eight VPXORD and eight
// VPADDD a block and tile fewer. Each sum still takes one VPDPWSSD every eight, and the int32
// sums are exact in any order: the same results bit for bit (TestIntAccVBMIMatches). On AMD
// Zen 4 (4096 rows of 128 values, four accumulators, thread CPU time, alternated call by call in
// one process with the kernel before, 201 calls in cache and 9 passes over 96 MiB on 2 MiB pages,
// four runs at load 3–5, ns a row min/median): in cache 7.79–7.91/7.82–7.96 → 7.56–7.68/
// 7.58–7.73, streamed 8.11–9.26/8.17–11.89 → 7.89–9.10/7.95–11.23 (lower in four of four each).
func q50OneSet(s string) string {
	set2 := [8]string{"Z8", "Z9", "Z14", "Z15", "Z16", "Z17", "Z18", "Z28"}
	const note = "where\n\t// the loop takes two pairs a step, the second pair's into Z8, Z9, Z14, Z15, Z16, Z17, Z18, Z28, joined after)."
	if strings.Count(s, note) != 1 {
		panic("q50OneSet: comment changed")
	}
	s = strings.Replace(s, note, "two pairs\n\t// a step).", 1)
	i := strings.Index(s, "two pairs\n\t// a step).")
	j := i + strings.Index(s[i:], "_pair:\n")
	head, body, tail := s[:i], s[i:j], s[j:]
	rep := func(t *string, old, new string) {
		if strings.Count(*t, old) != 1 {
			panic(fmt.Sprintf("q50OneSet: %q %d times", old, strings.Count(*t, old)))
		}
		*t = strings.Replace(*t, old, new, 1)
	}
	for k, z := range set2 {
		src := "Z23"
		if k%2 == 1 {
			src = "Z24"
		}
		w := fmt.Sprintf("Z%d", 10+k/2)
		rep(&body, fmt.Sprintf("\tVPXORD %[1]s, %[1]s, %[1]s\n", z), "")
		rep(&tail, fmt.Sprintf("\tVPDPWSSD %s, %s, %s\n", w, src, z), fmt.Sprintf("\tVPDPWSSD %s, %s, Z%d\n", w, src, k))
		rep(&tail, fmt.Sprintf("\tVPADDD %s, Z%d, Z%d\n", z, k, k), "")
	}
	return head + body + tail
}

// q50Intel is q5_0's Intel flavour's prepass (multiAccQ50VIINT, intelCPU): the rows pipelined
// into the previous tile's row loops (p1Pipe, rows of four blocks: 88 bytes) gather their four
// block scales by a VPERMW that reads its table from the row's first 64 bytes, in place of a
// masked load and a VPERMW: one port-0/5 operation a row fewer on Intel, the same words in the
// lanes the conversion reads (the index picks words 0, 11 and 22; the fourth scale is
// broadcast into lanes 12..15 after), so the same sums bit for bit.
//
// Not kept (on the Intel Xeon, load 5–13; copies of this kernel in one test binary, the same
// sums bit for bit): the fifth-bit mask by two KMOVD from memory and a KUNPCKDQ in place of two
// MOVL, a shift, an OR and a KMOVQ: 4096 rows in cache 6.42–7.18 ns a row min against
// 5.88–6.79, slower.
func q50Intel(s string) string {
	const old = "\tVMOVDQU16.Z (AX), K4, Z26\n\tVPERMW Z26, Z29, Z26\n"
	if n := strings.Count(s, old); n != 2 {
		panic(fmt.Sprintf("q50Intel: the pipelined prepass's gather %d times", n))
	}
	s = strings.ReplaceAll(s, old, "\tVPERMW (AX), Z29, Z26\n")
	// q5DecGF's constants: the affine matrices in Z31 (the nibble mask's register, which it does
	// not take), the second permute index in Z28 at each block (the prepasses clobber Z28).
	for _, r := range [][2]string{
		{"\tVPBROADCASTD ·intAccNibW(SB), Z31\n", "\tVMOVDQU64 ·intAccQ5GFMat(SB), Z31\n"},
		{"aQ50VI_blk:\n", "aQ50VI_blk:\n\tVMOVDQU64 ·intAccQ5GFIdx2(SB), Z28\n"},
	} {
		if n := strings.Count(s, r[0]); n != 1 {
			panic(fmt.Sprintf("q50Intel: %q %d times", r[0], n))
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return s
}

// offInitIQ4On makes iq4_nl's Zen 4 kernel with 8-bit weights and four accumulators start its
// sums at the offset terms (offInitOf: both nibbles' sums at −128·ΣW): eight VPSUBD a block
// and tile fewer, the same sums, so the same results bit for bit (TestIntAcc8Matches). On AMD
// Zen 4 (offInitQ41On's measurement, the same five runs): in cache 4.60–5.53 → 4.52–5.45
// (lower in five of five by 0.05–0.11), streamed 4.88–6.34 → 4.76–6.21 (lower in five).
const offInitIQ4On = true

// hiT16On makes q4_0's Zen 4 kernel with 8-bit weights scale its high nibbles' sums by T/16
// (hiT16).
const hiT16On = true

// hiT16 rewrites q4_0's Zen 4 kernel with 8-bit weights and four accumulators so that the
// finish converts each high-nibble sum 16·(Σ W·hi − 8·ΣW) (rawHi's difference, offInit's
// start) unshifted and multiplies it by T/16 (stored per tile beside T, where oCH is, which
// q4_0 leaves unused) instead of shifting it right by 4 and multiplying by T: the conversion of
// 16·x is 16 times x's exactly, T/16 is exact (T ≥ 2⁻¹⁰⁰, intAccInvCap, or 0), so each FMA
// multiplies the same real numbers and rounds once: the same results bit for bit
// (TestIntAcc8Matches). Four VPSRAD a block fewer. On AMD Zen 4 (p2RLZ4's measurement, against
// the kernel with offInit, eight runs at load 3–4, ns a row median) in cache 4.29–4.48 →
// 4.25–4.52, lower in six runs of eight (−0.02 to −0.04), streamed 4.54–4.69 → 4.50–4.74,
// lower in five: at the edge of the noise, as four operations a block and tile (1/16 of one a
// row) predict.
func hiT16(s string) string { return hiT16Of(s, oCH) }

// hiT16Of is hiT16 with T/16 stored at slot.
func hiT16Of(s string, slot int) string {
	rep := func(old, new string) {
		if strings.Count(s, old) != 1 {
			panic("hiT16: " + old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	rep(fmt.Sprintf("\tVDIVPS.Z Z14, Z25, K1, Z15\n\tVMOVUPS Z15, %d(SP)\n", oTT), fmt.Sprintf(`	VDIVPS.Z Z14, Z25, K1, Z15
	VMOVUPS Z15, %d(SP)
	MOVL $0x%08x, AX
	VPBROADCASTD AX, Z16
	VMULPS Z16, Z15, Z16
	VMOVUPS Z16, %d(SP)
`, oTT, u32(1.0/16), slot))
	for h := 0; h < 4; h++ {
		hi := fmt.Sprintf("Z%d", 2*h+1)
		rep(fmt.Sprintf("\tVPSRAD $4, %[1]s, %[1]s\n", hi), "")
		rep(fmt.Sprintf("\tVFMADD231PS.BCST %d(R13), %s, Z9\n", 4*h, hi), fmt.Sprintf("\tVFMADD231PS.BCST %d(R13), %s, Z9\n", slot-oTT+4*h, hi))
	}
	return s
}

// oneSetIQ4On makes iq4_nl's Zen 4 kernel with 8-bit weights and four accumulators add both
// row quads of a step into one set of sums (oneSetQuad).
const oneSetIQ4On = true

// Where iq4_nl's Zen 4 kernel with 8-bit weights and four accumulators (multiAccIQ4NLV8Z4INT)
// spends the time q4_0's does not. AMD Zen 4 (EPYC Genoa, 2 shared vCPUs at load 10–15; 4096
// rows of 128 values, four accumulators, thread CPU time, copies of the kernel alternated in one
// process, 201 calls in cache and 8 passes over 96 MiB on 2 MiB pages, three runs, ns a row, p10
// in cache / min streamed): the kernel 4.50–4.57 / 4.71–4.88, q4_0's (multiAccQ40V8Z4INT)
// 4.27–4.50 / 4.51–4.57. Each piece taken out (wrong values, timing only), in cache: the two
// VPERMB lookups (a VPANDD each in their place) 4.34–4.39, streamed 4.53–4.63, q4_0's time; the
// shift for the high nibbles 4.39–4.42; of the pipelined first prepass (a row quad of the next
// tile every two quads), its four VPERMILPS 4.37–4.44, its four VRANGEPS 4.37–4.40, its four
// VMULPS 4.34–4.35, its four stores 4.35–4.37. Every vector operation of a step costs about as
// much as any other (~0.1–0.15 ns a row for four of them): no one pipe bounds the loop, and
// fewer operations is what pays. The decode's are fewest already: a quad's 64 code bytes hold
// 128 codes, two 64-byte lookups at least, the high nibbles moved down for VPERMB's 6-bit index,
// and no rawHi form exists (quadDec). In whole decodes (native/attn TestDecodeBreakdown, 131072
// cells, 32 heads on 8 KV heads, d 128, test binaries alternated six times at load ~11) both
// iq4_nl kernels with their lookups replaced by VPANDD (wrong results, timing only) took the
// whole decode 9.41–9.82 → 9.01–9.45 ns a row (q4_0 8.72–9.13 in the same runs; five times at
// load 2–10: 9.24–9.43 → 8.92–9.05): the lookups are ~0.3 ns of the decode, most of its gap to
// q4_0. Not kept (the same values bit for bit; same measurement): the prepass's four block
// vectors of d by four VPERMW (one index each) and VCVTPH2PS in place of one VPERMW, one
// VCVTPH2PS and four VPERMILPS, 4.85–4.87 against 4.50–4.58; by two VPERMW stored to the frame
// and four VCVTPH2PS from it, 4.83–4.85 (streamed 5.03 against 4.71); the tile maxima by VPANDD
// and VPMAXUD on the products' bits (the same maxima) in place of VRANGEPS, 4.75–4.78 against
// 4.50–4.54; each weight dword broadcast into a register (VPBROADCASTD) for its two VPDPBUSD in
// place of their memory broadcasts, 4.64–4.69 against 4.50–4.57. Two blocks a step (each row's
// two payloads by one 64-byte load, a block's quad by two levels of VPERMT2B) lost 0.55 ns a row
// in q4_0's kernel, where a 512-bit VPERMT2B costs about four VPANDD (rlPipe's comment).

// oneSetQuad is oneSet for the row-quad loops of a kernel with 8-bit weights (VPDPBUSD): the
// second quad of a step adds into the first quad's sums (Z0..Z7), not into a second set
// cleared at the block's start and joined after the loop: eight VPXORD and eight VPADDD a
// block and tile fewer. Each sum still takes one VPDPBUSD every eight, more than its latency,
// and the int32 sums are exact in any order: the same results bit for bit (TestIntAcc8Matches).
// AMD Zen 4 (EPYC Genoa, 2 shared vCPUs at load 4–11; 4096 rows of 128 values, four
// accumulators, thread CPU time, alternated in one process with the kernel keeping two sets,
// 201 calls in cache and 9 passes over 96 MiB on 2 MiB pages, six runs, ns a row min): in cache
// 4.49–4.63 → 4.44–4.56 (lower in six of six, by 0.06–0.08), streamed 4.77–5.20 → 4.68–4.98
// (lower in six). Not kept (same measurement against this kernel): the pipelined first
// prepass's three pointers kept in CX, DI and R13 across the row loop (as p1Regs; six memory
// operations a quad step fewer), in cache −0.09 to +0.02, streamed −0.05 to +0.05: noise.
func oneSetQuad(s string) string { return oneSetQuadOf(s, "Z24") }

// oneSetQuadOf is oneSetQuad for a kernel whose VPDPBUSD take the high codes from hi (iq4_nl's
// Z24; rawHi's whole code bytes, Z20, in q4_0's and q4_1's).
func oneSetQuadOf(s, hi string) string {
	set2 := [8]string{"Z8", "Z9", "Z14", "Z15", "Z16", "Z17", "Z18", "Z28"}
	const note = "where\n\t// the loop takes two pairs a step, the second pair's into Z8, Z9, Z14, Z15, Z16, Z17, Z18, Z28, joined after)."
	if strings.Count(s, note) != 1 {
		panic("oneSetQuad: comment changed")
	}
	s = strings.Replace(s, note, "two quads\n\t// a step).", 1)
	// The block's start: from the comment above to the row-quad loop.
	i := strings.Index(s, "two quads\n\t// a step).")
	j := i + strings.Index(s[i:], "_pair:\n")
	head, body, tail := s[:i], s[i:j], s[j:]
	for k, z := range set2 {
		x := fmt.Sprintf("\tVPXORD %[1]s, %[1]s, %[1]s\n", z)
		jn := fmt.Sprintf("\tVPADDD %s, Z%d, Z%d\n", z, k, k)
		src := "Z23"
		if k%2 == 1 {
			src = hi
		}
		d := fmt.Sprintf("VPDPBUSD.BCST %d(R8), %s, %s\n", 64+4*(k/2), src, z)
		if strings.Count(body, x) != 1 || strings.Count(tail, jn) != 1 || strings.Count(tail, d) != 1 {
			panic("oneSetQuad: sums changed")
		}
		body = strings.Replace(body, x, "", 1)
		tail = strings.Replace(tail, jn, "", 1)
		tail = strings.Replace(tail, d, fmt.Sprintf("VPDPBUSD.BCST %d(R8), %s, Z%d\n", 64+4*(k/2), src, k), 1)
	}
	return head + body + tail
}

// q41Z4RowsOn makes q4_1's Zen 4 kernel with 8-bit weights and four accumulators take its row
// loops as q41Z4Rows rewrites them.
const q41Z4RowsOn = true

// q41Z4Rows rewrites q4_1's Zen 4 kernel with 8-bit weights and four accumulators (its labels'
// prefix lbl) in three ways, each leaving the same operations on the same numbers, so the same
// results bit for bit (TestIntAcc8Matches):
//   - both row quads of a step add into one set of sums (oneSetQuadOf, as iq4_nl's kernel):
//     eight VPXORD and eight VPADDD a block and tile fewer, and Z8, Z9, Z14..Z18, Z28 free in
//     the row loops;
//   - the low nibbles' mask kept in Z28 (broadcast once a block and tile) in place of
//     rlMinRegs' broadcast from memory by each VPANDD;
//   - a whole quad's scales and mins (four blocks: K4 all 32 words, KORTESTD) gathered by
//     plain 64-byte loads in place of the zero-masked ones (a row's four blocks are 80 bytes
//     from the quad's first, so nothing past the row is read; VPERMI2W takes the header words
//     only), in the tile's own first prepass and the pipelined one; a short quad keeps the
//     masked loads. Zen 4 runs a masked 512-bit load slower than a plain one (the mask all
//     ones here all the same).
//
// On AMD Zen 4 (EPYC Genoa, 2 shared vCPUs at load 2–12; 4096 and 16384 rows of 128 values a
// call, four accumulators, random softmax-like weights, thread CPU time, 101 calls in cache and
// 6 passes over 96 MiB on 2 MiB pages streamed, alternated with the kernel before in one
// process, six runs, ns a row min): in cache 4.63–4.68 → 4.38–4.44, streamed 4.82–4.93 →
// 4.60–4.79 (lower in six of six). Each alone (three runs, without the quad's branch): the first
// 4.48–4.52 in cache, 4.67–4.76 streamed; with the second 4.47–4.50, 4.67–4.69. Not kept: the
// FMA's constant 8 from a freed register (the broadcast from memory kept): no change.
func q41Z4Rows(s, lbl string) string {
	s = oneSetQuadOf(s, "Z20")
	// The mask: from Z28, set at the block's start.
	const and = "VPANDD.BCST ·intAccNib(SB), Z20, Z23"
	blk := lbl + "_blk:\n"
	i, j := strings.Index(s, blk), strings.Index(s, lbl+"_fin:\n")
	if strings.Count(s, blk) != 1 || j < i || strings.Count(s[i:j], and) != 4 || strings.Count(s, and) != 4 {
		panic("q41Z4Rows: row loops changed")
	}
	if strings.Contains(s[i:j], "Z28") {
		panic("q41Z4Rows: Z28 taken")
	}
	s = strings.ReplaceAll(s, and, "VPANDD Z28, Z20, Z23")
	s = strings.Replace(s, blk, blk+"\tVPBROADCASTD ·intAccNib(SB), Z28\n", 1)
	// The gathers: plain loads for a whole quad.
	n := 0
	for _, r := range []struct{ p, rr, a, b, c, d string }{
		{"R12", "R11", "Z18", "Z16", "Z20", "Z21"},
		{"AX", "R9", "Z20", "Z21", "Z22", "Z23"},
	} {
		old := fmt.Sprintf(`	VMOVDQU16.Z (%[1]s), K4, %[3]s
	VMOVDQU16.Z (%[1]s)(%[2]s*1), K4, %[4]s
	LEAQ (%[1]s)(%[2]s*2), AX
	VMOVDQU16.Z (AX), K4, %[5]s
	VMOVDQU16.Z (AX)(%[2]s*1), K4, %[6]s
`, r.p, r.rr, r.a, r.b, r.c, r.d)
		plain := fmt.Sprintf(`	VMOVDQU64 (%[1]s), %[3]s
	VMOVDQU64 (%[1]s)(%[2]s*1), %[4]s
	LEAQ (%[1]s)(%[2]s*2), AX
	VMOVDQU64 (AX), %[5]s
	VMOVDQU64 (AX)(%[2]s*1), %[6]s
`, r.p, r.rr, r.a, r.b, r.c, r.d)
		c := strings.Count(s, old)
		if c == 0 {
			panic("q41Z4Rows: gather changed")
		}
		for from := 0; c > 0; c-- {
			k := from + strings.Index(s[from:], old)
			g := fmt.Sprintf("\tKORTESTD K4, K4\n\tJCC  %[1]s_gm%[2]d\n%[3]s\tJMP  %[1]s_gd%[2]d\n%[1]s_gm%[2]d:\n%[4]s%[1]s_gd%[2]d:\n", lbl, n, plain, old)
			s = s[:k] + g + s[k+len(old):]
			from = k + len(g)
			n++
		}
	}
	if n != 3 {
		panic("q41Z4Rows: gathers changed")
	}
	return s
}

// p1SpreadOn makes q4_0's Zen 4 kernel with 8-bit weights and four accumulators
// (multiAccQ40V8Z4INT) spread its pipelined first prepass over all four block loops (p1Spread).
const p1SpreadOn = true

// oneSetQ40On makes q4_0's Zen 4 kernel with 8-bit weights and four accumulators
// (multiAccQ40V8Z4INT, and its runs form multiAccQ40V8Z4RunsINT) add both row quads of a step
// into one set of sums (oneSetQuadOf, with rawHi's high codes in Z20, as q4_1's and iq4_nl's
// kernels): eight VPXORD and eight VPADDD a block and tile fewer, the same int32 sums exact in
// any order, so the same results bit for bit (TestIntAcc8Matches, TestFrameDepthMatches). AMD
// Zen 4 (EPYC Genoa, 2 shared vCPUs at load ~1.4; 4096 rows of 128 values, four accumulators,
// thread CPU time, a copy of the kernel before alternated in one process, 101 calls in cache
// and 9 passes over the streamed rows, five runs, ns a row p10): in cache 4.10–4.12 →
// 3.98–4.01, streamed 4.97–5.17 → 4.92–5.07 (lower in five of five each); native/attn
// TestDecodeBreakdown q4_0 (test binaries alternated eight times, ns a row min) values
// 4.26–4.45 → 4.11–4.51 and the whole decode 8.70–8.85 → 8.56–8.85 (each lower in six of eight).
// Not kept (same harness against this kernel, five runs each, ns a row p10): where a row is four
// blocks (oSPR set), the pipelined step's scale gather by four plain 64-byte loads (into the
// freed Z8, Z9, Z14) and three VPBLENDMW in place of the four masked loads, in cache
// 3.98–4.16 → 3.99–4.08, streamed 5.02–5.29 → 5.07–5.28 (worse in four of five); only its
// first, zero-masked, load plain, 3.98–4.02 → 3.97–4.00, 5.08–5.43 → 5.06–5.47: noise.
const oneSetQ40On = true

// oSPR is p1Spread's mask in the frame.
const oSPR = 6584

// p1Spread makes the pipelined first prepass of q4_0's Zen 4 kernel s (rlPipe) take its row
// quad of the next tile every other two-quad step of the row loops, not every step, where a row
// is four blocks (d 128): its 16 quads then run beside all four block loops' 32 steps, not
// beside the first two loops' only (a step runs the prepass where its count of steps left in
// the loop, R10, has no bit of the mask at oSPR: 1 there, so the even counts; 0, every step,
// for rows of fewer blocks, whose loops have fewer steps). The same quads in the same order, so the same results
// bit for bit (TestIntAcc8Matches); the catch-up after the loops takes what is left, as before.
// AMD Zen 4 (EPYC Genoa, 2 shared vCPUs, load ~11–15; 4096 rows of 128 values, four
// accumulators, weights 1/4096, thread CPU time, 101 calls in cache and 9 passes over 96 MiB on
// 2 MiB pages, old and new copies alternated twice each in one process, three runs, ns a row
// min): in cache 4.25–4.30 → 4.16–4.23, streamed 4.52–4.98 → 4.45–4.51 (lower in six of six
// pairs each); native/attn TestDecodeBreakdown (131072 cells, 32/8 heads, one thread, test
// binaries alternated five times, load ~10, ns a cell min) q4_0's values 4.73–4.84 →
// 4.50–5.01 (lower in four of five), the whole decode 8.89–9.43 → 8.80–9.24. Only AMD Zen 4
// runs this kernel (zen4Stream).
func p1Spread(s string) string {
	rep := func(old, new string) {
		if strings.Count(s, old) != 1 {
			panic("p1Spread: " + old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	rep(fmt.Sprintf("\tMOVQ $1, %d(SP)\n\tVXORPS Z27, Z27, Z27\n", oPRE), fmt.Sprintf(`	MOVQ $1, %[1]d(SP)
	MOVQ $0, %[2]d(SP)
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	CMPQ AX, $4
	JNE  aQ40V8Z4_spr
	MOVQ $1, %[2]d(SP)
aQ40V8Z4_spr:
	VXORPS Z27, Z27, Z27
`, oPRE, oSPR))
	rep("\tTESTQ R11, R11\n\tJZ   aQ40V8Z4_s1\n", fmt.Sprintf(`	TESTQ R11, R11
	JZ   aQ40V8Z4_s1
	TESTQ R10, %[1]d(SP)
	JNZ  aQ40V8Z4_s1
`, oSPR))
	return s
}

// q51RLOn makes q5_1's Zen 4 kernel with 8-bit weights form its first prepass with a quad's
// rows in lanes (q51RL). multi_intacc_amd64.go's q51Z4RL must say the same (the tests' reference
// of the min term).
const q51RLOn = true

// q51RL rewrites the first prepass of q5_1's Zen 4 kernel with 8-bit weights s (labels from lbl
// on) in q4_1's layout (rlPipeMin): per row quad, both row pairs' header loads as before (row b's
// merged into row a's registers 4 bytes on), one two-table word permute per pair into one vector
// (·intAccQ51RLIdx: d of row r's block b at word 4r + b, its m 16 words on), converted in two
// halves; e = m + 16·d by one fma; the four rows' weights in lanes 4r + h, rotated within their
// lane (VPERMILPS) for products j = 0..3: lane 4r + b takes query (b + j) mod 4, stored at
// 256q + 64j, its largest magnitude per j (VRANGEPS) and Σ w·e in four chains by row index mod 4
// (intAccRefMin's rl order), joined as rlPipeMin joins them. The second prepass takes inv rotated
// as the products are (·intAccRotInvIdx) and packs the W by ·intAccQ51RLPackIdx (and its second
// pass by ·intAccQ51RLQuadIdx; its ΣW from the packed bytes, as a lane of the products is no
// longer one of the sums'). Where wstride is 16 (four queries a row: multiAccStride's) a quad's
// weights are one load (p1w), else one load and three VINSERTF32X4. Per row where the row-pair
// loop spent two VPERMILPS, a multiply, a VRANGEPS, an fma and an add, this spends 0.75
// VPERMILPS, a multiply, a VRANGEPS, an fma and per quad one fma, an extract and a convert
// more. On AMD Zen 4 (TestQ51Z4Speed, old and new builds alternated five times, load 7–9, ns a
// row min/median): in cache 6.28–6.44/6.34–6.51 → 5.98–6.06/6.01–6.10, streamed 8.05–8.98/
// 8.21–9.15 → 7.77–9.24/7.86–9.27 (noisy); without p1w (the weights by inserts) in cache
// 6.07–6.22/6.11–6.26. TestDecodeBreakdown q5_1 (four alternations, min): values 6.47–6.74 →
// 6.21–6.38, whole 12.45–12.70 → 12.07–12.23.
// In its full-quad loops (p1w, p1f) block 3's d and m of a row pair come by VMOVD and
// VPINSRD (4 bytes each, ·intAccQ51RLIdxD) in place of a 64-byte load and a masked 64-byte
// merge: the same words, half the bytes loaded. Against the kernel without it (the same
// harness, five alternations, load 8): in cache 5.97–6.06/6.01–6.10 → 5.89–6.05/5.91–6.08
// (lower in four of five), streamed 8.51–9.82 → 8.46–9.52 min (lower in five of five).
//
// q5_1's Zen 4 budget (README "Speed targets": 0.53 of f16's 21.0 ms, ~10.6 ns a row, ~39
// cycles at ~3.7 GHz) against its decode there (bench 0.60, ~12.0 ns; TestDecodeBreakdown
// scores ~5.3, values ~6.3, the rest ~0.5): the 16 VPDPBUSD a row (8 in the scores, 8 here)
// take 16 cycles, 4.3 ns, which leaves ~5.8 ns for all else but the rest, where it takes ~7.2:
// ~20 % of it, 6–12 vector operations a row at Zen 4's ~0.12–0.25 ns each. The fifth bits
// alone take ~0.8 (scores) and ~1.0 (here), and every other way to them on record measured no
// better on Zen 4; the first prepass took ~1.9 before this rewrite took ~0.3 off. Not reachable
// by a leaner kernel over ggml's block layout. mcakernels (-zenvnni, judged.specs' weights),
// cycles a row: multiScoresQ51Z4GFNI 21.8, this kernel 24.5.
func q51RL(s, lbl string) string {
	start := "\t// w·d per row (lane 4b+h), its largest magnitude per lane (and Σ w·m), two rows a step\n"
	end := "\tVFMADD231PS Z8, Z9, Z11\n\tVMOVUPS Z11, 6400(SP)\n"
	i, j := strings.Index(s, start), strings.Index(s, end)
	if i < 0 || j < i || strings.Count(s, start) != 1 || strings.Count(s, end) != 1 {
		panic("q51RL: the first prepass changed")
	}
	body := func(t string) string {
		idx := "·intAccQ51RLIdx(SB)"
		if strings.Contains(t, "VMOVD 72(") {
			idx = "·intAccQ51RLIdxD(SB)"
		}
		return t + `	VMOVDQU64 ` + idx + `, Z16
	VPERMI2W Z14, Z13, K1, Z16
	VPERMI2W Z21, Z20, K2, Z16
	VEXTRACTI64X4 $1, Z16, Y17
	VCVTPH2PS Y16, Z16
	VCVTPH2PS Y17, Z17
	VFMADD231PS Z5, Z16, Z17
	VMULPS Z12, Z16, Z15
	VMOVUPS Z15, 0(R15)
	VRANGEPS $0x0B, Z15, Z10, Z10
	VFMADD231PS Z12, Z17, Z0
	VPERMILPS $0x39, Z12, Z22
	VMULPS Z22, Z16, Z15
	VMOVUPS Z15, 64(R15)
	VRANGEPS $0x0B, Z15, Z11, Z11
	VFMADD231PS Z22, Z17, Z1
	VPERMILPS $0x4E, Z12, Z22
	VMULPS Z22, Z16, Z15
	VMOVUPS Z15, 128(R15)
	VRANGEPS $0x0B, Z15, Z9, Z9
	VFMADD231PS Z22, Z17, Z2
	VPERMILPS $0x93, Z12, Z22
	VMULPS Z22, Z16, Z15
	VMOVUPS Z15, 192(R15)
	VRANGEPS $0x0B, Z15, Z28, Z28
	VFMADD231PS Z22, Z17, Z3
`
	}
	wts := `	VMOVUPS (R8), X12
	VINSERTF32X4 $1, (R8)(R9*1), Z12, Z12
	LEAQ (R8)(R9*2), AX
	VINSERTF32X4 $2, (AX), Z12, Z12
	VINSERTF32X4 $3, (AX)(R9*1), Z12, Z12
`
	step := `	LEAQ (R12)(R11*4), R12
	LEAQ (R8)(R9*4), R8
	ADDQ $256, R15
	DECQ R10
`
	p1 := `	// w·d with a quad's rows in lanes (q51RL): block b's products of rows 4q..4q+3 at
	// 256q + 64j, lane 4r + b: query (b + j) mod 4; the largest magnitudes per j (Z10, Z11, Z9,
	// Z28) and the chains Σ w·e, e = m + 16·d, by row index mod 4 (Z0..Z3), joined after.
	LEAQ (DI)(BX*1), R12
	MOVQ 6472(SP), R8
	LEAQ 0(SP), R15
	MOVQ 6464(SP), R10
	MOVQ wstride+56(FP), R9
	MOVQ rb+32(FP), R11
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z9, Z9, Z9
	VXORPS Z28, Z28, Z28
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	MOVL $0x41800000, AX
	VPBROADCASTD AX, Z5
	MOVL $0x00FF00FF, AX
	KMOVD AX, K1
	KNOTD K1, K2
	SHRQ $2, R10
	JZ   @_p1o
	CMPQ 6496(SP), $4
	JNE  @_p1
	CMPQ R9, $16
	JNE  @_p1f
@_p1w:
` + body(`	VMOVDQU64 (R12), Z13
	VMOVDQU16 -4(R12)(R11*1), K6, Z13
	VMOVD 72(R12), X14
	VPINSRD $1, 72(R12)(R11*1), X14, X14
	LEAQ (R12)(R11*2), R14
	VMOVDQU64 (R14), Z20
	VMOVDQU16 -4(R14)(R11*1), K6, Z20
	VMOVD 72(R14), X21
	VPINSRD $1, 72(R14)(R11*1), X21, X21
	VMOVUPS (R8), Z12
`) + step + `	JNZ  @_p1w
	JMP  @_p1o
@_p1f:
` + body(`	VMOVDQU64 (R12), Z13
	VMOVDQU16 -4(R12)(R11*1), K6, Z13
	VMOVD 72(R12), X14
	VPINSRD $1, 72(R12)(R11*1), X14, X14
	LEAQ (R12)(R11*2), R14
	VMOVDQU64 (R14), Z20
	VMOVDQU16 -4(R14)(R11*1), K6, Z20
	VMOVD 72(R14), X21
	VPINSRD $1, 72(R14)(R11*1), X21, X21
`+wts) + step + `	JNZ  @_p1f
	JMP  @_p1o
@_p1:
` + body(`	VMOVDQU16.Z (R12), K4, Z13
	VMOVDQU16 -4(R12)(R11*1), K6, Z13
	VMOVDQU16.Z 64(R12), K5, Z14
	VMOVDQU16 60(R12)(R11*1), K7, Z14
	LEAQ (R12)(R11*2), R14
	VMOVDQU16.Z (R14), K4, Z20
	VMOVDQU16 -4(R14)(R11*1), K6, Z20
	VMOVDQU16.Z 64(R14), K5, Z21
	VMOVDQU16 60(R14)(R11*1), K7, Z21
`+wts) + step + `	JNZ  @_p1
@_p1o:
	MOVQ 6464(SP), R10
	ANDQ $3, R10
	JZ   @_p1r
	VMOVDQU16.Z (R12), K4, Z13
	VMOVDQU16.Z 64(R12), K5, Z14
	VMOVUPS (R8), X12
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	CMPQ R10, $2
	JB   @_p1ga
	VMOVDQU16 -4(R12)(R11*1), K6, Z13
	VMOVDQU16 60(R12)(R11*1), K7, Z14
	VINSERTF32X4 $1, (R8)(R9*1), Z12, Z12
	CMPQ R10, $3
	JB   @_p1ga
	LEAQ (R12)(R11*2), R14
	VMOVDQU16.Z (R14), K4, Z20
	VMOVDQU16.Z 64(R14), K5, Z21
	VINSERTF32X4 $2, (R8)(R9*2), Z12, Z12
@_p1ga:
` + body("") + `@_p1r:
	VSHUFF32X4 $0x44, Z11, Z10, Z12
	VSHUFF32X4 $0xEE, Z11, Z10, Z13
	VRANGEPS $0x0B, Z13, Z12, Z12
	VSHUFF32X4 $0x44, Z28, Z9, Z13
	VSHUFF32X4 $0xEE, Z28, Z9, Z15
	VRANGEPS $0x0B, Z15, Z13, Z13
	VSHUFF32X4 $0x88, Z13, Z12, Z15
	VSHUFF32X4 $0xDD, Z13, Z12, Z16
	VRANGEPS $0x0B, Z16, Z15, Z10
	VSHUFF32X4 $0x44, Z1, Z0, Z12
	VSHUFF32X4 $0xEE, Z1, Z0, Z13
	VADDPS Z13, Z12, Z12
	VSHUFF32X4 $0x44, Z3, Z2, Z13
	VSHUFF32X4 $0xEE, Z3, Z2, Z15
	VADDPS Z15, Z13, Z13
	VSHUFF32X4 $0x88, Z13, Z12, Z15
	VSHUFF32X4 $0xDD, Z13, Z12, Z16
	VADDPS Z16, Z15, Z9
	VMOVDQU64 ·intAccRotOutIdx(SB), Z12
	VPERMPS Z10, Z12, Z10
	VPERMPS Z9, Z12, Z9
	VMOVUPS Z9, 6400(SP)
`
	s = s[:i] + strings.ReplaceAll(p1, "@", lbl) + s[j+len(end):]
	rep := func(old, new string, n int) {
		if strings.Count(s, old) != n {
			panic(fmt.Sprintf("q51RL: %q %d times, want %d", old, strings.Count(s, old), n))
		}
		s = strings.ReplaceAll(s, old, new)
	}
	rep("\tVPBROADCASTD ·intAccOnes8(SB), Z15\n\tMOVQ $0x3333333333333333, AX\n\tKMOVQ AX, K1\n\tKNOTQ K1, K2\n",
		fmt.Sprintf("\tVPBROADCASTD ·intAccOnes8(SB), Z15\n\tMOVQ $0x%016x, AX\n\tKMOVQ AX, K1\n\tKNOTQ K1, K2\n", q51RLPackMask())+
			"\tVMOVDQU64 ·intAccRotInvIdx(SB), Z0\n\tVMOVDQU64 ·intAccRotInvIdx+64(SB), Z1\n"+
			"\tVMOVDQU64 ·intAccRotInvIdx+128(SB), Z2\n\tVMOVDQU64 ·intAccRotInvIdx+192(SB), Z3\n"+
			"\tVPERMPS Z14, Z0, Z0\n\tVPERMPS Z14, Z1, Z1\n\tVPERMPS Z14, Z2, Z2\n\tVPERMPS Z14, Z3, Z3\n", 1)
	for k, o := range []string{"(R8)", "64(R8)", "128(R8)", "192(R8)"} {
		rep("\tVMULPS "+o+", Z14, ", fmt.Sprintf("\tVMULPS %s, Z%d, ", o, k), 2)
	}
	rep("\tVMOVDQU64 ·intAccQuadPack2Idx(SB), Z21\n", "\tVMOVDQU64 ·intAccQ51RLPackIdx(SB), Z21\n", 1)
	p2s := lbl + "_p2s:\n"
	rep(p2s, "\tVMOVDQU64 ·intAccQ51RLQuadIdx(SB), Z4\n"+p2s, 1)
	// ΣW from the packed bytes (a lane of the products is not one of the sums'): Σ max(W, 0)
	// (Z18) less Σ max(−W, 0) (Z5).
	rep("\tVPERMB Z16, Z30, Z16\n\tVMOVDQU32 Z16, (R12)\n", "\tVPERMB Z16, Z4, Z16\n\tVMOVDQU32 Z16, (R12)\n\tVPDPBUSD Z15, Z16, Z18\n", 1)
	rep("\tVPERMB Z20, Z30, Z20\n\tVMOVDQU32 Z20, 1024(R12)\n", "\tVPERMB Z20, Z4, Z20\n\tVMOVDQU32 Z20, 1024(R12)\n\tVPDPBUSD Z15, Z20, Z5\n", 1)
	rep("\tVPADDD Z16, Z18, Z18\n\tVPADDD Z17, Z18, Z18\n\tVPADDD Z12, Z18, Z18\n\tVPADDD Z13, Z18, Z18\n", "", 1)
	rep("\tVMOVDQU64 ·intAccQ51RLQuadIdx(SB), Z4\n"+p2s, "\tVMOVDQU64 ·intAccQ51RLQuadIdx(SB), Z4\n\tVPXORD Z5, Z5, Z5\n"+p2s, 1)
	rep("\tJNZ  "+p2s[:len(p2s)-2]+"\n", "\tJNZ  "+p2s[:len(p2s)-2]+"\n\tVPSUBD Z5, Z18, Z18\n", 1)
	return s
}

// q51RLPackMask is q51RL's VPERMI2B mask: byte 16b + 4h + r of the packed W takes vector
// (h − b) mod 4 of its quad, the first VPERMI2B (this mask) vectors 0 and 1.
func q51RLPackMask() uint64 {
	var m uint64
	for t := 0; t < 64; t++ {
		bb, h := t/16, t/4%4
		if (h-bb+4)%4 < 2 {
			m |= 1 << t
		}
	}
	return m
}

// q51RLData is q51RL's tables: ·intAccQ51RLIdx (word 4r + b: d of row r's block b, word 16 +
// 4r + b its m; rows 0 and 1 from the first pair's registers, 2 and 3 from the second's: the
// same index, row b's words 2 on, block 3's in the second register), ·intAccQ51RLPackIdx (byte
// 16b + 4h + r takes the low byte of vector k = (h − b) mod 4's lane 4r + b: k odd from the
// second table of each VPERMI2B, vectors 0 and 1 by the first, 2 and 3 by the second) and ·intAccQ51RLQuadIdx (the same from vector k's
// bytes at 16k, lane 4r + b at 16k + 4r + b).
func q51RLData(b *strings.Builder) {
	for i := 0; i < 32; i += 4 {
		var v uint64
		for j := 0; j < 4; j++ {
			o := i + j
			mm, r, bb := o/16, o%16/4, o%4
			x := 12*bb + 2*(r%2) + mm
			if bb == 3 {
				x = 32 + 4 + 2*(r%2) + mm
			}
			v |= uint64(x) << (16 * j)
		}
		fmt.Fprintf(b, "DATA ·intAccQ51RLIdx+%d(SB)/8, $0x%016x\n", 2*i, v)
	}
	b.WriteString("GLOBL ·intAccQ51RLIdx(SB), RODATA|NOPTR, $64\n\n")
	for i := 0; i < 32; i += 4 {
		var v uint64
		for j := 0; j < 4; j++ {
			o := i + j
			mm, r, bb := o/16, o%16/4, o%4
			x := 12*bb + 2*(r%2) + mm
			if bb == 3 {
				x = 32 + 2*(r%2) + mm
			}
			v |= uint64(x) << (16 * j)
		}
		fmt.Fprintf(b, "DATA ·intAccQ51RLIdxD+%d(SB)/8, $0x%016x\n", 2*i, v)
	}
	b.WriteString("GLOBL ·intAccQ51RLIdxD(SB), RODATA|NOPTR, $64\n\n")
	for i := 0; i < 64; i += 8 {
		var v, u uint64
		for j := 0; j < 8; j++ {
			t := i + j
			bb, h, r := t/16, t/4%4, t%4
			k := (h - bb + 4) % 4
			v |= uint64(64*(k%2)+4*(4*r+bb)) << (8 * j)
			u |= uint64(16*k+4*r+bb) << (8 * j)
		}
		fmt.Fprintf(b, "DATA ·intAccQ51RLPackIdx+%d(SB)/8, $0x%016x\n", i, v)
		fmt.Fprintf(b, "DATA ·intAccQ51RLQuadIdx+%d(SB)/8, $0x%016x\n", i, u)
	}
	b.WriteString("GLOBL ·intAccQ51RLPackIdx(SB), RODATA|NOPTR, $64\n\n")
	b.WriteString("GLOBL ·intAccQ51RLQuadIdx(SB), RODATA|NOPTR, $64\n\n")
}
