//go:build ignore

// gen_turboacc writes multi_turboacc_amd64.s: the integer accumulate (value) kernels of the
// turbo tiers for CPUs with AVX-512 VNNI, BW, VL and VBMI (contract in multi_turboacc_amd64.go).
// A turbo row is one f16 scale s times levels that are whole multiples of one unit (turboInts2,
// turboInts3, tq4Ints), so the scale folds into the weight: per tile of ≤ 64 rows a prepass
// forms w·s for each row and accumulator, quantizes it to int16 with one scale per accumulator and pairs
// the rows' weights; the row loop then takes rows in pairs, looks each value's code up straight
// into a 16-bit lane (its level + 128 as an unsigned byte, the lane's high byte zero), row a's
// in the low word of a dword and row b's in the high one, and adds the pair times its two
// weights into int32 sums with VPDPWSSD (the weights broadcast as one dword). The sums start at
// −128·ΣW, which takes the levels' offset back out exactly, and are converted, put back in the
// values' order and added times the tile's scale and the unit once per tile and 64 values.
//
// A unit is 64 values of a row: turbo2's 16 code bytes, turbo3's 24, turbo4's (and tq4's) 32.
//
// tq4 (T4F) has turbo4's codes, levels and unit and its scale at the same offset, d/2 bytes,
// but as an f32: its kernel is turbo4's with the prepass's scale loads 32-bit broadcasts and
// no widening. Its rows are read in the values' natural order as turbo4's are (the float
// kernels' even/odd permutation of the accumulators, tq4Permute, is theirs alone).
//
// turbo2: the two rows' 16 bytes go into one register (a at bytes 0..15, b at 16..31); one
// VPERMB spreads them so that dword k holds row a's byte j = 4(k%4) + k/4 in its bytes 0 and 1
// and row b's in 2 and 3. Three VPERMB with zeroing on the odd bytes look codes 0, 1 and 2 of
// each byte up (tables of 64 bytes indexed by the byte's low six bits: code t is bits
// 2t..2t+1), and code 3 after a 16-bit shift by 6 (the table of code 0 ignores the bits
// shifted in above it): four vectors of 16 dwords, vector t lane k the level pair of value
// 4j + t.
//
// T2M is turbo2's kernel for rows at most 48 bytes apart (d ≤ 184; multiAccT2 picks): one
// load masked to row a's 16 bytes and row b's, rb bytes on, takes the pair into one register
// (the bytes between them zero) and the build, adjusted for rb once a call, spreads them as
// above; the insert goes (in cache on AMD Zen 5 ~5% of the kernel's time). A lone last row's
// load is masked to row a's bytes alone.
//
// turbo3: the two rows' 24 bytes (masked loads: the row may end 2 bytes past them) go into one
// register (a at bytes 0..23, b at 32..55); one VPERMB gives dword k < 8 row a's bytes 3k, 3k + 1
// (bits 0..15 of its group of eight codes, values 8k..8k+7) in its low word and row b's in its
// high one, and dword 8 + g the bytes 3g + 1, 3g + 2 (bits 8..23 of group g), which a masked
// 16-bit shift by 4 brings to codes 4..7 at bits 0, 3, 6, 9. Shifts by 0, 3, 6 and 9 and VPERMB
// with zeroing on the odd bytes (a table repeating turboInts3 + 128: bits 3..5 only select a
// repeat) give vector t lane k the level pair of value 8k + t (k < 8), 8(k − 8) + 4 + t.
// VPMULTISHIFTQB, which would pick the codes in fewer operations, issues on the two pipes that
// run VPDPWSSD on AMD Zen 5 (four of them beside 16 VPDPWSSD cost ~2 cycles; four 16-bit shifts
// nothing): with two of them a row pair and 64 values this kernel took ~11% longer in cache.
//
// turbo4: the two rows' 32 bytes go into one register (a at bytes 0..31, b at 32..63); two
// VPERMB give dword k row a's byte 2j (2j + 1) twice and row b's twice, j as turbo2's; a VPERMB
// with zeroing on the odd bytes looks the low nibble up (a table repeating tq4Ints + 128, so
// bits 4 and 5 only select a repeat), and another the high one after a 16-bit shift by 4:
// vectors 0, 1 (2, 3) lane k the level pairs of values 4j, 4j + 1 (4j + 2, 4j + 3).
//
// The finish puts the four vectors of an accumulator back in the values' order: turbo2's and
// turbo4's with an in-lane 4×4 dword transpose (eight unpacks; the order of the bytes j above
// is the one that leaves the values in order, checkUnpck), turbo3's with eight two-table dword
// permutes (VPERMI2D, tables computed here from the lanes' values).
//
// The tiles' first prepass runs one tile ahead, before the previous tile's row loops, so that
// its chain (the largest weight, two divisions) overlaps them; the row loops prefetch each line
// of the rows once, 3 KiB past the tile after next (pfRepl).
// The 8-bit kernels (T4B, T2B, T3B, T4FB) share the frame, the first prepass (255 in place of
// 32767), the finish and the builds; the second prepass packs each quad's 16 weights W to
// bytes (VPMOVDB) and transposes them so that accumulator h's four rows are one dword at
// 16q + 4h; a tile with a negative W is flagged and packed again split into max(W, 0) and
// max(−W, 0) (the negative parts 256 bytes on); the row loop (rows8Tmpl) takes rows in quads, decodes a
// quad and 64 values into four vectors whose dword k holds the four rows' levels (signed bytes,
// tables tAcc*STab*) of one value (dword byte r = row r), and adds them times the broadcast
// weight dword with VPDPBUSD (the weights the unsigned operand): 16 a quad and unit where the
// 16-bit kernels take 32 VPDPWSSD. A flagged tile takes a second pass with the negative parts
// into the negated sums. turbo4's decode: two VPERMI2B over the quad's 128 code bytes (rows 0,
// 1 and 2, 3 in two registers) give bytes 2j and 2j + 1 of each row per dword, then the nibble
// lookups as above with no zeroing (every byte is a level now). turbo2's: one register holds
// the quad's 64 code bytes, one VPERMB spreads byte j of each row into a dword. turbo3's
// (t3vDec): two two-table byte permutes give each qword the four rows' 16-bit windows of one
// group of four values, one VPMULTISHIFTQB a group's two codes of each row into the low six bits of a
// byte, and two lookups (the low code, the high one) make its two vectors: 11 operations a quad
// and unit. Its first form, two pair decodes as t3Dec's (rows 0, 2 and rows 1, 3), each shifted
// code looked up into the even bytes of one and, moved to the high byte, into the odd bytes of
// the other, took ~25; on AMD Zen 4 the new one took the kernel from 4.66 to 4.10 ns a row
// (multi_turboacc_amd64.go).
//
// Run with `go generate ./native/kvq`.
package main

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

type format struct {
	name  string
	doc   string
	bits  int
	ints  []int8 // the levels in units
	unit  float32
	ubyte int // code bytes per unit of 64 values
	// val(t, k) is the value (0..63 in the unit) of lane k of decoded vector t.
	val    func(t, k int) int
	consts string
	dec    string
	wreg   [4]string // the registers of a row pair's four weight dwords, broadcast
	// unpck: the finish is an in-lane 4×4 dword transpose (the values' order is chosen so
	// that it gives them in order), else two stages of VPERMI2D.
	unpck bool
	// unitSetup runs before a tile's row loops (after the prepass, which uses K3).
	unitSetup string
	// f32: the row scale is a float32 (tq4's), not an f16 (the turbo tiers').
	f32 bool
	// tables: the format whose tables (levels, builds) this one reads, "" for its own.
	tables string
	// lone decodes a lone last row (the pair's row b given weight 0); "" for dec with R9 = 0.
	lone string
	// rest8 decodes an 8-bit kernel's last quad of one to three rows (AX of them); "" for dec.
	rest8 string
	// b8: 8-bit weights (rows8Tmpl: quads of rows, VPDPBUSD; dec decodes a quad into bytes,
	// dword k of vector t holding the four rows' levels + 128 of value val(t, k)).
	b8 bool
	// ownPerm: the finish's VPERMI2D tables are this format's own (its val differs from the
	// one of the format whose other tables it reads).
	ownPerm bool
}

// t2Byte is the code byte (of the unit's 16) that turbo2's lane k holds: 4(k%4) + k/4, so that
// an in-lane transpose of the four vectors leaves the values in order.
func t2Byte(k int) int { return 4*(k%4) + k/4 }

const t2Dec = `VMOVDQU32 (R12), X20
	VINSERTI32X4 $1, (R12)(R9*1), Y20, Y20
	VPERMB Z20, Z28, Z21
	VPERMB.Z Z29, Z21, K1, Z16
	VPERMB.Z Z30, Z21, K1, Z17
	VPERMB.Z Z31, Z21, K1, Z18
	VPSRLW $6, Z21, Z21
	VPERMB.Z Z29, Z21, K1, Z19`

const t3Dec = `VMOVDQU8.Z (R12), K2, Y20
	VMOVDQU8.Z (R12)(R9*1), K2, Y21
	VINSERTI64X4 $1, Y21, Z20, Z20
	VPERMB Z20, Z28, Z21
	VPSRLW $4, Z21, K3, Z21
	VPERMB.Z Z29, Z21, K1, Z16
	VPSRLW $3, Z21, Z22
	VPERMB.Z Z29, Z22, K1, Z17
	VPSRLW $6, Z21, Z20
	VPERMB.Z Z29, Z20, K1, Z18
	VPSRLW $9, Z21, Z22
	VPERMB.Z Z29, Z22, K1, Z19`

const t4Dec = `VMOVDQU32 (R12), Y20
	VINSERTI64X4 $1, (R12)(R9*1), Z20, Z20
	VPERMB Z20, Z28, Z21
	VPERMB Z20, Z30, Z22
	VPERMB.Z Z29, Z21, K1, Z16
	VPSRLW $4, Z21, Z21
	VPERMB.Z Z29, Z21, K1, Z17
	VPERMB.Z Z29, Z22, K1, Z18
	VPSRLW $4, Z22, Z22
	VPERMB.Z Z29, Z22, K1, Z19`

// t4qDec is turbo4's quad decode (8-bit weights): rows 0, 1 at bytes 0..31, 32..63 of Z20,
// rows 2, 3 of Z23; two VPERMI2B give dword k bytes 2j (2j + 1) of the four rows, j as
// turbo2's; VPERMB looks the low nibbles up (a table repeating tq4Ints + 128), and the high
// ones after a 16-bit shift by 4 (the bits shifted in only select a repeat).
const t4qDec = `VMOVDQU32 (R12), Y20
	VINSERTI64X4 $1, (R12)(R9*1), Z20, Z20
	VMOVDQU32 (R12)(R13*1), Y23
	VINSERTI64X4 $1, (R12)(SI*1), Z23, Z23
	VMOVDQA64 Z28, Z21
	VPERMI2B Z23, Z20, Z21
	VMOVDQA64 Z30, Z22
	VPERMI2B Z23, Z20, Z22
	VPERMB Z29, Z21, Z16
	VPSRLW $4, Z21, Z21
	VPERMB Z29, Z21, Z17
	VPERMB Z29, Z22, Z18
	VPSRLW $4, Z22, Z22
	VPERMB Z29, Z22, Z19`

// t2qDec is turbo2's quad decode: the four rows' 16 bytes in one register, one VPERMB gives
// dword k byte j of each row, and the three tables and the shift by 6 look codes 0..3 up as
// t2Dec's do (in every byte: the bits above a code select a repeat).
const t2qDec = `VMOVDQU32 (R12), X20
	VINSERTI32X4 $1, (R12)(R9*1), Y20, Y20
	VINSERTI32X4 $2, (R12)(R13*1), Z20, Z20
	VINSERTI32X4 $3, (R12)(SI*1), Z20, Z20
	VPERMB Z20, Z28, Z21
	VPERMB Z29, Z21, Z16
	VPERMB Z30, Z21, Z17
	VPERMB Z31, Z21, Z18
	VPSRLW $6, Z21, Z21
	VPERMB Z29, Z21, Z19`

// t2pDec is turbo2's quad decode for rows at most 48 bytes apart (T2BM): two loads masked by
// K2 take rows 0, 1 (row 1 rb bytes on, the bytes between zero) and rows 2, 3, and one VPERMT2B
// by Z28 (tAccT2QMBuild, adjusted for rb once a call) spreads them as t2qDec's VPERMB does,
// where t2qDec takes a load, three inserts and a VPERMB.
const t2pDec = `VMOVDQU8.Z (R12), K2, Z20
	VMOVDQU8.Z (R12)(R13*1), K2, Z22
	VPERMT2B Z22, Z28, Z20
	VPERMB Z29, Z20, Z16
	VPERMB Z30, Z20, Z17
	VPERMB Z31, Z20, Z18
	VPSRLW $6, Z20, Z20
	VPERMB Z29, Z20, Z19`

// t2pRest is t2pDec for a last quad of AX = 1..3 rows (R13 = 2rb for 3, else 0): a load's
// second row masked off where it is past the rows (row 0 alone: K3 for rows 0, 1 when one row
// is left, K1 for rows 2, 3, or 0, 1 again, when one or three are).
var t2pRest = `KMOVQ K2, DX
	MOVQ $0xFFFF, R10
	CMPQ AX, $1
	CMOVQEQ R10, DX
	KMOVQ DX, K3
	KMOVQ K2, DX
	CMPQ AX, $2
	CMOVQNE R10, DX
	KMOVQ DX, K1
	` + strings.Replace(strings.Replace(t2pDec, "(R12), K2", "(R12), K3", 1), "(R13*1), K2", "(R13*1), K1", 1)

// t3vGroup is the group of four values (values 4g..4g+3, bits 12g..12g+11 of a row's unit) that
// qword q of T3B's build b holds: build 0 groups 0..3 and 8..11, build 1 groups 4..7 and 12..15,
// so that each build's two vectors hold 16 of the values 0..31 and 16 of 32..63 (perms).
func t3vGroup(b, q int) int { return 4*b + q + 4*(q/4) }

// t3vVal is T3B's lane value: vector t = 2b + u, dword k = 2q + i holds value 4g + 2i + u of
// the four rows, g = t3vGroup(b, q).
func t3vVal(t, k int) int { return 4*t3vGroup(t/2, k/2) + 2*(k%2) + t%2 }

// t3vDec is turbo3's quad decode (T3B): rows 0, 1 at bytes 0..23, 32..55 of
// Z20 and rows 2, 3 of Z22 (masked loads: the row may end 2 bytes past them); two two-table
// byte permutes (builds 0 and 1, tAccT3VBuild) give qword q the 16-bit window of each row that
// holds group g = t3vGroup(b, q) (bytes ⌊3g/2⌋, ⌊3g/2⌋ + 1, the group at bit 4·(g%2) of it), row
// r in word r; VPMULTISHIFTQB by Z31 puts the bits of values 2i, 2i + 1 of the group of row r
// at bits 0..5 of the qword's byte 4i + r, and VPERMB looks the two codes up: the low three
// bits in the signed levels (Z29, tAccT3STab0), the high three in a table of bits 3..5 (Z28,
// tAccT3VSTab1). 11 operations a quad and unit, two of them VPMULTISHIFTQB, where t3qDec takes
// 25: on AMD Zen 4 VPMULTISHIFTQB issues on the two pipes that run VPDPBUSD (each costs a
// VPDPBUSD's cycle), the byte permutes and shifts beside them.
const t3vDec = `VMOVDQU8.Z (R12), K2, Y20
	VMOVDQU8.Z (R12)(R9*1), K2, Y21
	VINSERTI64X4 $1, Y21, Z20, Z20
	VMOVDQU8.Z (R12)(R13*1), K2, Y22
	VMOVDQU8.Z (R12)(SI*1), K2, Y23
	VINSERTI64X4 $1, Y23, Z22, Z22
	VMOVDQU64 ·tAccT3VBuild(SB), Z21
	VPERMI2B Z22, Z20, Z21
	VPERMT2B Z22, Z30, Z20
	VPMULTISHIFTQB Z21, Z31, Z21
	VPMULTISHIFTQB Z20, Z31, Z20
	VPERMB Z29, Z21, Z16
	VPERMB Z28, Z21, Z17
	VPERMB Z29, Z20, Z18
	VPERMB Z28, Z20, Z19`

// t2Val is the lane value of the formats with turbo2's lanes: vector t lane k holds value 4·t2Byte(k) + t.
func t2Val(t, k int) int { return 4*t2Byte(k) + t }

// t2Ints are turbo2's levels in units (turboInts2).
var t2Ints = []int8{-90, -27, 27, 90}

// t3Ints are turbo3's levels in units (turboInts3).
var t3Ints = []int8{-88, -55, -31, -10, 10, 31, 55, 88}

// t4Ints are turbo4's and tq4's levels in units (tq4Ints).
var t4Ints = []int8{-104, -79, -62, -48, -36, -25, -15, -5, 5, 15, 25, 36, 48, 62, 79, 104}

// t4Consts loads turbo4's (and tq4's) builds and level table.
const t4Consts = `VMOVDQU64 ·tAccT4Build(SB), Z28
	VMOVDQU64 ·tAccT4Build+64(SB), Z30
	VMOVDQU64 ·tAccT4Tab0(SB), Z29`

// t2mDec is turbo2's decode for rows at most 48 bytes apart (T2M): one load masked by K2 takes
// row a's 16 bytes at 0..15 and row b's at rb..rb+15 (the bytes between and after zero), and
// the build (Z28, adjusted for rb once a call) spreads them as t2Dec's does.
const t2mDec = `VMOVDQU8.Z (R12), K2, Z20
	VPERMB Z20, Z28, Z21
	VPERMB.Z Z29, Z21, K1, Z16
	VPERMB.Z Z30, Z21, K1, Z17
	VPERMB.Z Z31, Z21, K1, Z18
	VPSRLW $6, Z21, Z21
	VPERMB.Z Z29, Z21, K1, Z19`

var formats = []format{
	{name: "T4", doc: "turbo4: tq4's nibbles (code 2j low in byte j, 2j+1 high), an f16 row scale after d/2 bytes.",
		bits: 4, ints: t4Ints, unit: 0.02621692, ubyte: 32,
		val: t2Val, unpck: true, consts: t4Consts, dec: t4Dec,
		wreg: [4]string{"Z24", "Z25", "Z26", "Z27"}},
	{name: "T2", doc: "turbo2: 2-bit codes as a little-endian bit stream, an f16 row scale after d/4 bytes.",
		bits: 2, ints: t2Ints, unit: 0.01678167, ubyte: 16,
		val: t2Val, unpck: true,
		consts: `VMOVDQU64 ·tAccT2Build(SB), Z28
	VMOVDQU64 ·tAccT2Tab0(SB), Z29
	VMOVDQU64 ·tAccT2Tab1(SB), Z30
	VMOVDQU64 ·tAccT2Tab2(SB), Z31`,
		dec: t2Dec, wreg: [4]string{"Z24", "Z25", "Z26", "Z27"}},
	{name: "T2M", doc: "turbo2 as T2, for rows at most 48 bytes apart (rb ≤ 48: d ≤ 184).",
		bits: 2, ints: t2Ints, unit: 0.01678167, ubyte: 16, tables: "T2",
		val: t2Val, unpck: true,
		consts: `VMOVDQU64 ·tAccT2MBuild(SB), Z28
	MOVQ rb+32(FP), CX
	VPBROADCASTB CX, Z20
	MOVQ $0xCCCCCCCCCCCCCCCC, AX
	KMOVQ AX, K2
	VPADDB Z20, Z28, K2, Z28   // row b's bytes at rb + j
	MOVQ $0xFFFF, AX
	SHLQ CX, AX
	ORQ  $0xFFFF, AX
	KMOVQ AX, K2               // the load: row a's 16 bytes and row b's
	VMOVDQU64 ·tAccT2Tab0(SB), Z29
	VMOVDQU64 ·tAccT2Tab1(SB), Z30
	VMOVDQU64 ·tAccT2Tab2(SB), Z31`,
		dec: t2mDec, wreg: [4]string{"Z24", "Z25", "Z26", "Z27"},
		unitSetup: "MOVL $0xffff, AX\n\tKMOVQ AX, K3           // a lone row's load",
		lone:      strings.Replace(t2mDec, "K2", "K3", 1)},
	{name: "T3", doc: "turbo3: 3-bit codes as a little-endian bit stream, an f16 row scale after 3d/8 bytes.",
		bits: 3, ints: t3Ints, unit: 0.02444615, ubyte: 24,
		val: func(t, k int) int {
			if k < 8 {
				return 8*k + t
			}
			return 8*(k-8) + 4 + t
		},
		consts: `VMOVDQU64 ·tAccT3Build(SB), Z28
	VMOVDQU64 ·tAccT3Tab0(SB), Z29
	MOVL $0xffffff, AX
	KMOVD AX, K2`,
		dec: t3Dec, wreg: [4]string{"Z24", "Z25", "Z26", "Z27"},
		unitSetup: "MOVL $0xffff0000, AX\n\tKMOVD AX, K3           // the words of lanes 8..15"},
	{name: "T4F", doc: "tq4: turbo4's codes and levels (T4's tables), an f32 row scale after d/2 bytes.",
		bits: 4, ints: t4Ints, unit: 0.02621692, ubyte: 32,
		val: t2Val, unpck: true, f32: true, tables: "T4",
		consts: t4Consts, dec: t4Dec, wreg: [4]string{"Z24", "Z25", "Z26", "Z27"}},
	// The 8-bit weights' kernels (b8): the same levels, units, lanes and finishes, rows in quads.
	{name: "T4B", doc: "turbo4 as T4, with 8-bit weights (quads of rows, VPDPBUSD).",
		bits: 4, ints: t4Ints, unit: 0.02621692, ubyte: 32, tables: "T4", b8: true,
		val: t2Val, unpck: true, consts: t4qConsts, dec: t4qDec},
	{name: "T2B", doc: "turbo2 as T2, with 8-bit weights (quads of rows, VPDPBUSD).",
		bits: 2, ints: t2Ints, unit: 0.01678167, ubyte: 16, tables: "T2", b8: true,
		val: t2Val, unpck: true,
		consts: `VMOVDQU64 ·tAccT2QBuild(SB), Z28
	VMOVDQU64 ·tAccT2STab0(SB), Z29
	VMOVDQU64 ·tAccT2STab1(SB), Z30
	VMOVDQU64 ·tAccT2STab2(SB), Z31`,
		dec: t2qDec},
	{name: "T2BM", doc: "turbo2 as T2B, for rows at most 48 bytes apart (rb ≤ 48: d ≤ 184; t2pDec).",
		bits: 2, ints: t2Ints, unit: 0.01678167, ubyte: 16, tables: "T2", b8: true,
		val: t2Val, unpck: true,
		consts: `VMOVDQU64 ·tAccT2QMBuild(SB), Z28
	MOVQ rb+32(FP), CX
	VPBROADCASTB CX, Z20
	MOVQ $0xAAAAAAAAAAAAAAAA, AX
	KMOVQ AX, K2
	VPADDB Z20, Z28, K2, Z28   // rows 1 and 3: rb bytes into their loads
	MOVQ $0xFFFF, AX
	SHLQ CX, AX
	ORQ  $0xFFFF, AX
	KMOVQ AX, K2               // a row's 16 bytes and the next row's
	VMOVDQU64 ·tAccT2STab0(SB), Z29
	VMOVDQU64 ·tAccT2STab1(SB), Z30
	VMOVDQU64 ·tAccT2STab2(SB), Z31`,
		dec: t2pDec, rest8: t2pRest},
	{name: "T3B", doc: "turbo3 as T3, with 8-bit weights (quads of rows, VPDPBUSD).",
		bits: 3, ints: t3Ints, unit: 0.02444615, ubyte: 24, tables: "T3", b8: true,
		val: t3vVal, ownPerm: true,
		consts: `VMOVDQU64 ·tAccT3VMs(SB), Z31
	VMOVDQU64 ·tAccT3VSTab1(SB), Z28
	VMOVDQU64 ·tAccT3VBuild+64(SB), Z30
	VMOVDQU64 ·tAccT3STab0(SB), Z29
	MOVL $0xffffff, AX
	KMOVD AX, K2`,
		dec: t3vDec},
	{name: "T4FB", doc: "tq4 as T4F, with 8-bit weights (quads of rows, VPDPBUSD).",
		bits: 4, ints: t4Ints, unit: 0.02621692, ubyte: 32, f32: true, tables: "T4", b8: true,
		val: t2Val, unpck: true, consts: t4qConsts, dec: t4qDec},
}

// t4qConsts loads turbo4's (and tq4's) quad builds and level table.
const t4qConsts = `VMOVDQU64 ·tAccT4QBuild(SB), Z28
	VMOVDQU64 ·tAccT4QBuild+64(SB), Z30
	VMOVDQU64 ·tAccT4STab0(SB), Z29`

// loMin: calls of more rows than this keep the accumulators in the lanes' order (laneOrder).
//
// laneOrder: a tile's finish puts each accumulator's four vectors in the values' order (eight
// unpacks or eight VPERMI2D an accumulator and unit) before adding them; a call of more than
// two tiles instead puts its accumulators in the lanes' order once at its start (the inverse
// permutation, in memory), adds each tile's vectors as they are (finishLO) and puts the
// accumulators back at its end: per value the same conversion and fused add, so the sums are
// bit for bit the others'. On AMD Zen 4 (TestTurboAcc8Speed, 4096-row calls, d 128, thread CPU,
// old and new test binaries alternated three times, best of 7, load ~11) the 8-bit kernels went
// from 4.10 to 3.81 ns a row (turbo3, VPERMI2D), 3.38 to 3.26 (turbo2), 3.69 to 3.54 (turbo4)
// and 3.62 to 3.54 (tq4); turbo3's 16-bit one from 5.91 to 5.60.
const loMin = 128

// Frame layout (hardware SP offsets).
const (
	oWS   = 0    // w·s of the next tile's rows, 16 bytes a row; three zero rows after
	oQP   = 1088 // int16 weight pairs: pair p at 16p, accumulator h's dword at 16p + 4h
	oTU   = 1600 // T·unit per accumulator
	oSS   = 1616 // −128·ΣW per accumulator (int32)
	oTN   = 1632 // rows in the tile
	oWP   = 1640 // the tile's first weight
	oRL   = 1648 // rows left after this tile
	oPF   = 1656 // prefetch line pointer (pfRepl)
	oPS   = 1664 // prefetch step a row pair (8-bit kernels: quad)
	oUL   = 1672 // units left in the row
	oINV  = 1680 // the next tile's inv per accumulator
	oTUN  = 1696 // the next tile's T·unit
	oNN   = 1712 // rows in the next tile
	oFLAG = 1720 // 8-bit kernels: nonzero where the tile has a negative weight
	oLO   = 1728 // nonzero: the accumulators are in the lanes' order (laneOrder)
	oPT   = 1736 // prefetch byte pointer (pfRepl)
	frame = 1744
)

// p1Tmpl is the first prepass of a tile (R12 its first row, R8 its first weight, R10 its rows):
// w·s per row and accumulator into ws (s an f16 widened, or tq4's f32 as it is; four rows' s in
// the lanes of four accumulators each, by masked broadcasts), four rows a step, the largest
// magnitude per accumulator, and from it inv and T·unit. It runs one tile ahead, before the previous
// tile's row loops, so its latency hides behind them. On AMD Zen 4 (TestTurboAcc8Speed, d 128,
// thread CPU, five rounds alternated, min ns a row, load ~3) it is the largest piece of the
// 8-bit kernels outside their row loops: with the next tile's pass left out (not a working
// kernel) turbo4 took 3.40 → 3.04 streamed and 3.54 → 3.26 in cache, tq4 3.40 → 3.03 and
// 3.56 → 3.26, turbo2 3.09 → 2.75, turbo3 3.73 → 3.39; with the second prepass left out,
// 0.14–0.22 less; with the finishes left out, 0.2–0.28. Two rewrites did not pay: a loop of its
// own for the weights' stride of 16 with the four scales read at R12 + {0, 1, 2, 3}·rb (6
// instructions a quad fewer) measured within ±0.02, and sixteen rows' scales by one
// VPGATHERDD (spread by four VPERMPS) took 0.4–0.5 ns a row more: Zen 4's gathers are slow.
//
// Nor did these (8-bit kernels, AMD Zen 4, d 128, thread CPU, old and new kernels alternated
// in one process nine rounds, min ns a row; in cache 256 rows, streamed 524288 rows (past the
// 32 MiB L3) in calls of 4096; load 1–2 unless said):
//   - the next tile's pass pipelined into this tile's row loops, as gen_intacc.go's p1Pipe does
//     for q4_0 (one quad of the next tile a quad of the first unit's first pass, the weights
//     broadcast into two registers so that two are free, the pointers in the frame, the quads'
//     rest and the tail, inv and T·unit after that unit; bit for bit): in cache turbo4 −0.06 to
//     −0.09, tq4 −0.04 to −0.06, turbo3 −0.06, turbo2 ±0.01, but streamed turbo4 +0.17 to
//     +0.67 and tq4 +0.40 to +0.98 (turbo2, turbo3 within ±0.1). The pass as one burst of
//     loads before the row loops reads the next tile's lines many at a time; spread over the
//     row loop its misses stall the loop. With the next tile's rows prefetched at the tile's
//     start (a PREFETCHT0 a row) streamed came back to −0.02..+0.13, but in cache +0.13..+0.16;
//     with the quads at the loop's top, the prefetches a tile further ahead, or in the last
//     unit rather than the first: streamed still +0.13 to +0.7.
//   - sixteen rows' f16 scales built in general registers (four 16-bit loads, shifts and ORs a
//     quad), moved by VMOVQ/VPINSRQ, widened by one VCVTPH2PS and spread by four VPERMPS, where
//     this loop takes sixteen masked broadcasts and four VCVTPH2PS: in cache −0.05 to +0.06;
//     the same scales stored to the frame as words and loaded back (a failed store forward):
//     +0.4 to +0.7.
const p1Tmpl = `MOVQ R10, %NN%(SP)
	LEAQ %WS%(SP), R15
	MOVQ wstride+56(FP), R9
	MOVQ rb+32(FP), R11
	LEAQ (R9)(R9*2), R13
	VXORPS Z10, Z10, Z10
	SHRQ $2, R10
	JZ   a@_p1o#
a@_p1#:
	%BC%.Z (R12)(R14*1), K4, %BV%
	ADDQ R11, R12
	%BC% (R12)(R14*1), K5, %BV%
	ADDQ R11, R12
	%BC% (R12)(R14*1), K6, %BV%
	ADDQ R11, R12
	%BC% (R12)(R14*1), K7, %BV%
	ADDQ R11, R12
	CMPQ R9, $16
	JNE  a@_p1w#
	VMOVUPS (R8), Z17          // four accumulators' weights: four rows' in one load
	JMP  a@_p1m#
a@_p1w#:
	VMOVUPS (R8), X17
	VINSERTF32X4 $1, (R8)(R9*1), Y17, Y17
	VINSERTF32X4 $2, (R8)(R9*2), Z17, Z17
	VINSERTF32X4 $3, (R8)(R13*1), Z17, Z17
a@_p1m#:
	%CVT4%
	VMULPS Z17, Z16, Z16
	VMOVUPS Z16, (R15)
	VRANGEPS $0x0B, Z16, Z10, Z10
	LEAQ (R8)(R9*4), R8
	ADDQ $64, R15
	DECQ R10
	JNZ  a@_p1#
a@_p1o#:
	MOVQ %NN%(SP), R10
	ANDQ $3, R10
	JZ   a@_p1e#
a@_p1r#:
	%BC% (R12)(R14*1), X16
	%CVT1%
	VMULPS (R8), X16, X16
	VMOVUPS X16, (R15)
	VRANGEPS $0x0B, Z16, Z10, Z10
	ADDQ R9, R8
	ADDQ R11, R12
	ADDQ $16, R15
	DECQ R10
	JNZ  a@_p1r#
a@_p1e#:
	VXORPS X16, X16, X16
	VMOVUPS X16, (R15)         // zero rows: the partner of a lone last row, and the pass in fours
	VMOVUPS X16, 16(R15)
	VMOVUPS X16, 32(R15)%P1Z%
	VEXTRACTF64X4 $1, Z10, Y11
	VRANGEPS $0x0B, Y11, Y10, Y10
	VEXTRACTF32X4 $1, Y10, X11
	VRANGEPS $0x0B, X11, X10, X10
	// inv = min(32767/M, cap), T = 1/inv where M > 0; both 0 where M = 0.
	VXORPS X12, X12, X12
	VCMPPS $0x0E, X12, X10, K3
	VBROADCASTSS ·%QMAX%(SB), X13
	VBROADCASTSS ·tAccInvCap(SB), X11
	VDIVPS.Z X10, X13, K3, X14
	VMINPS X11, X14, K3, X14
	VMOVUPS X14, %INV%(SP)
	VBROADCASTSS ·tAccOne(SB), X13
	VDIVPS.Z X14, X13, K3, X15
	VMULPS.BCST ·tAcc@Unit(SB), X15, X15
	VMOVUPS X15, %TUN%(SP)`

// rows16Tmpl is the 16-bit kernels' row loop of a unit: row pairs, VPDPWSSD, the sums started
// at −128·ΣW.
const rows16Tmpl = `	VPBROADCASTD %SS%(SP), Z0
	VPBROADCASTD %SS4%(SP), Z4
	VPBROADCASTD %SS8%(SP), Z8
	VPBROADCASTD %SS12%(SP), Z12
	VMOVDQA64 Z0, Z1
	VMOVDQA64 Z0, Z2
	VMOVDQA64 Z0, Z3
	VMOVDQA64 Z4, Z5
	VMOVDQA64 Z4, Z6
	VMOVDQA64 Z4, Z7
	VMOVDQA64 Z8, Z9
	VMOVDQA64 Z8, Z10
	VMOVDQA64 Z8, Z11
	VMOVDQA64 Z12, Z13
	VMOVDQA64 Z12, Z14
	VMOVDQA64 Z12, Z15
	LEAQ (DI)(BX*1), R12
	LEAQ %QP%(SP), R8
	MOVQ %PF%(SP), R15
	MOVQ %PS%(SP), R11
	MOVQ rb+32(FP), R9
	MOVQ %TN%(SP), R10
	SHRQ $1, R10
	JZ   a@_odd
a@_pair:
%PFP%
	%DEC%
%DOTS%
	ADDQ $16, R8
	LEAQ (R12)(R9*2), R12
	DECQ R10
	JNZ  a@_pair
a@_odd:
	MOVQ R15, %PF%(SP)
	TESTQ $1, %TN%(SP)
	JZ   a@_fin
	%LONE%
%DOTS%
`

// rows8Tmpl is the 8-bit kernels' row loop of a unit: row quads (rows 0..3 at R12, R12 + R9,
// R12 + R13, R12 + SI), VPDPBUSD of the quad's levels (signed bytes) and its four unsigned
// weight bytes of each accumulator (a dword, broadcast). Pass 1 adds the weights' positive
// parts U⁺ = max(W, 0); where the tile has a negative weight (the flag), pass 2 adds the
// negative parts U⁻ = max(−W, 0) to the negated sums and negates them back: Σ U⁺·L − Σ U⁻·L.
// A last quad of 1 to 3 rows reads row 0 in place of the missing ones, whose weights are 0.
const rows8Tmpl = `	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	LEAQ %QP%(SP), R8
%PASS1%
	CMPL %FLAG%(SP), $0
	JEQ  a@_fin
%NEG%
	LEAQ %QN%(SP), R8
%PASS2%
%NEG%
`

// pass8Tmpl is one pass of rows8Tmpl over the tile's rows (weights from R8; # the pass).
const pass8Tmpl = `	LEAQ (DI)(BX*1), R12
	MOVQ %PF%(SP), R15
	MOVQ %PS%(SP), R11
	MOVQ rb+32(FP), R9
	LEAQ (R9)(R9*1), R13
	LEAQ (R9)(R9*2), SI
	MOVQ %TN%(SP), R10
	SHRQ $2, R10
	JZ   a@_rest#
a@_quad#:
%PFQ#%
	%DEC%
%DOTS%
	ADDQ $16, R8
	LEAQ (R12)(R9*4), R12
	DECQ R10
	JNZ  a@_quad#
a@_rest#:
%PFEND#%
	MOVQ %TN%(SP), AX
	ANDQ $3, AX
	JZ   a@_end#
	XORQ SI, SI                // rows 1..3 past the tile read row 0, with weight 0
	CMPQ AX, $3
	CMOVQNE SI, R13
	CMPQ AX, $2
	CMOVQLT SI, R9
	%DECREST%
%DOTS%
a@_end#:`

// neg8 negates the sums Z0..Z15 (Z20 zeroed).
var neg8 = func() string {
	var b strings.Builder
	b.WriteString("\tVPXORD Z20, Z20, Z20")
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&b, "\n\tVPSUBD Z%d, Z20, Z%d", i, i)
	}
	return b.String()
}()

const accTmpl = `
// func multiAcc@INT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// %DOC%
TEXT ·multiAcc@INT(SB), 0, $%FRAME%-64
	MOVQ m+40(FP), AX
	TESTQ AX, AX
	JZ   a@_done
	MOVQ nv+16(FP), AX
	SHRQ $6, AX
	TESTQ AX, AX
	JZ   a@_done
	%CONSTS%
	MOVQ $0x5555555555555555, AX
	KMOVQ AX, K1
	MOVL $0x000f, AX           // the word lanes of rows 0..3 of four
	KMOVW AX, K4
	SHLL $4, AX
	KMOVW AX, K5
	SHLL $4, AX
	KMOVW AX, K6
	SHLL $4, AX
	KMOVW AX, K7
	MOVQ d+8(FP), R14          // the scale's byte offset in a row
	IMULQ $%BITS%, R14
	ADDQ $7, R14
	SHRQ $3, R14
	MOVQ rb+32(FP), AX         // prefetch step: ⌈%GROUP%·rb / units⌉ a %GROUPN% and unit
	SHLQ $%GSHIFT%, AX
	MOVQ nv+16(FP), CX
	SHRQ $6, CX
	ADDQ CX, AX
	DECQ AX
	XORQ DX, DX
	DIVQ CX
	MOVQ AX, %PS%(SP)
	MOVQ rows+24(FP), DI
	MOVQ w+48(FP), AX
	MOVQ AX, %WP%(SP)
	MOVQ m+40(FP), AX
	MOVQ AX, %RL%(SP)
	// Calls of more than two tiles keep the accumulators in the lanes' order (laneOrder).
	MOVL $0, %LO%(SP)
	CMPQ AX, $%LOMIN%
	JLE  a@_lo0
	MOVL $1, %LO%(SP)
%REORDERIN%a@_lo0:
	// the first tile's prepass
	MOVQ DI, R12
	MOVQ w+48(FP), R8
	MOVQ m+40(FP), R10
	CMPQ R10, $64
	JLE  a@_f0
	MOVQ $64, R10
a@_f0:
	%P1A%

a@_tile:
	MOVQ %NN%(SP), AX
	MOVQ AX, %TN%(SP)
	SUBQ AX, %RL%(SP)
	MOVQ rb+32(FP), R12
	SHLQ $7, R12
	ADDQ DI, R12
	MOVQ R12, %PF%(SP)         // %PFDOC%
	MOVQ R12, %PT%(SP)
	VMOVUPS %TUN%(SP), X15
	VMOVUPS X15, %TU%(SP)

	// W = round(w·s·inv) as int16, four rows a step, rows paired: (W_2p, W_2p+1) per dword;
	// ΣW per lane (Z18).
	VBROADCASTF32X4 %INV%(SP), Z14
%P2LOOP%%P2END%
	VEXTRACTI64X4 $1, Z18, Y19
	VPADDD Y19, Y18, Y18
	VEXTRACTI32X4 $1, Y18, X19
	VPADDD X19, X18, X18
	VPSLLD $7, X18, X18
	VPXORD X19, X19, X19
	VPSUBD X18, X19, X18
	VMOVDQU32 X18, %SS%(SP)

	// the next tile's first prepass
	MOVQ %RL%(SP), R10
	TESTQ R10, R10
	JZ   a@_nonext
	CMPQ R10, $64
	JLE  a@_f1
	MOVQ $64, R10
a@_f1:
	MOVQ %TN%(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ DI, R12
	IMULQ wstride+56(FP), AX
	MOVQ %WP%(SP), R8
	ADDQ AX, R8
	%P1B%
a@_nonext:
	%UNITSETUP%

	MOVQ nv+16(FP), AX
	SHRQ $6, AX
	MOVQ AX, %UL%(SP)
	XORQ BX, BX                // byte offset of the unit in a row
	MOVQ acc+0(FP), CX         // the unit's accumulators

a@_unit:
%ROWS%
a@_fin:
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	MOVQ CX, R12
	CMPL %LO%(SP), $0
	JNE  a@_finlo
%FINISH%
	JMP  a@_finend
a@_finlo:
%FINISHLO%a@_finend:
	ADDQ $%UBYTE%, BX
	ADDQ $256, CX
	DECQ %UL%(SP)
	JNZ  a@_unit

	MOVQ %TN%(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	IMULQ wstride+56(FP), AX
	ADDQ AX, %WP%(SP)
	CMPQ %RL%(SP), $0
	JNE  a@_tile
	CMPL %LO%(SP), $0
	JEQ  a@_done
%REORDEROUT%
a@_done:
	VZEROUPPER
	RET
`

// dots: Z(4h+t) += the pair's weights of accumulator h (dword h at R8) × decoded vector t.
func dots(f format) string {
	var b strings.Builder
	if f.b8 { // the quad's unsigned weight bytes of accumulator h: the dword at 4h(R8), broadcast
		for h := 0; h < 4; h++ {
			fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), Z%d\n", 4*h, 24+h)
		}
		for h := 0; h < 4; h++ {
			for t := 0; t < 4; t++ {
				fmt.Fprintf(&b, "\tVPDPBUSD Z%d, Z%d, Z%d\n", 16+t, 24+h, 4*h+t)
			}
		}
		return strings.TrimRight(b.String(), "\n")
	}
	for h := 0; h < 4; h++ {
		fmt.Fprintf(&b, "\tVPBROADCASTD %d(R8), %s\n", 4*h, f.wreg[h])
	}
	for h := 0; h < 4; h++ {
		for t := 0; t < 4; t++ {
			fmt.Fprintf(&b, "\tVPDPWSSD %s, Z%d, Z%d\n", f.wreg[h], 16+t, 4*h+t)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// perms computes the finish's VPERMI2D indices for f: stage 1 joins vectors 0, 1 (and 2, 3)
// into the values 0..31 (x) and 32..63 (y) they hold; stage 2 joins x with x' (y with y') into
// the values 0..15, 16..31 (32..47, 48..63) in order.
func perms(f format) (idx [8][16]uint32) {
	type src struct{ t, k int }
	at := map[int]src{}
	for t := 0; t < 4; t++ {
		for k := 0; k < 16; k++ {
			v := f.val(t, k)
			if _, dup := at[v]; dup || v < 0 || v >= 64 {
				panic(fmt.Sprintf("%s: value %d twice or out of range", f.name, v))
			}
			at[v] = src{t, k}
		}
	}
	// stage 1: idx[0] x from (0,1), idx[1] y from (0,1), idx[2] x' from (2,3), idx[3] y'.
	var lane [4]map[int]int // value → lane in x, y, x', y'
	for s := 0; s < 4; s++ {
		lane[s] = map[int]int{}
		pair, half := s/2, s%2
		var vals []int
		for v := 32 * half; v < 32*half+32; v++ {
			if at[v].t/2 == pair {
				vals = append(vals, v)
			}
		}
		sort.Ints(vals)
		if len(vals) != 16 {
			panic(fmt.Sprintf("%s: stage 1 vector %d holds %d values", f.name, s, len(vals)))
		}
		for i, v := range vals {
			a := at[v]
			idx[s][i] = uint32(a.k + 16*(a.t%2))
			lane[s][v] = i
		}
	}
	// stage 2: out r (values 16r..16r+15) from x (s = half·1) and x' (s = 2 + half).
	for r := 0; r < 4; r++ {
		half := r / 2
		for i := 0; i < 16; i++ {
			v := 16*r + i
			if l, ok := lane[half][v]; ok {
				idx[4+r][i] = uint32(l)
			} else {
				idx[4+r][i] = uint32(16 + lane[2+half][v])
			}
		}
	}
	return idx
}

// network puts the four vectors src(0..3) of one accumulator and 64 values in the values'
// order (Z20..Z23, with Z16..Z19 between): vector t lane k holds value val(t, k) before, vector r
// lane i value 16r + i after. inverse: the other way (tables tAcc*IPerm; the unpck finish's
// in-lane 4×4 transpose is its own inverse).
func network(f format, src func(t int) string, inverse bool) string {
	var b strings.Builder
	if f.unpck {
		checkUnpck(f)
		fmt.Fprintf(&b, "\tVPUNPCKLDQ %[2]s, %[1]s, Z16\n\tVPUNPCKHDQ %[2]s, %[1]s, Z17\n", src(0), src(1))
		fmt.Fprintf(&b, "\tVPUNPCKLDQ %[2]s, %[1]s, Z18\n\tVPUNPCKHDQ %[2]s, %[1]s, Z19\n", src(2), src(3))
		b.WriteString("\tVPUNPCKLQDQ Z18, Z16, Z20\n\tVPUNPCKHQDQ Z18, Z16, Z21\n\tVPUNPCKLQDQ Z19, Z17, Z22\n\tVPUNPCKHQDQ Z19, Z17, Z23\n")
		return b.String()
	}
	tab := f.name
	if f.tables != "" && !f.ownPerm {
		tab = f.tables
	}
	name := "Perm"
	if inverse {
		name = "IPerm"
	}
	for i, p := range [][3]string{{src(0), src(1), "Z16"}, {src(0), src(1), "Z17"}, {src(2), src(3), "Z18"}, {src(2), src(3), "Z19"},
		{"Z16", "Z18", "Z20"}, {"Z16", "Z18", "Z21"}, {"Z17", "Z19", "Z22"}, {"Z17", "Z19", "Z23"}} {
		fmt.Fprintf(&b, "\tVMOVDQU32 ·tAcc%s%s+%d(SB), %s\n\tVPERMI2D %s, %s, %s\n", tab, name, 64*i, p[2], p[1], p[0], p[2])
	}
	return b.String()
}

// finish: per accumulator h, its four vectors (Z4h..Z4h+3) put in order (Z20..Z23), converted
// and added times T·unit to the accumulator's 64 values at R12.
func finish(f format) string {
	var b strings.Builder
	for h := 0; h < 4; h++ {
		b.WriteString(network(f, func(t int) string { return fmt.Sprintf("Z%d", 4*h+t) }, false))
		for r := 0; r < 4; r++ {
			fmt.Fprintf(&b, "\tVCVTDQ2PS Z%[1]d, Z%[1]d\n\tVMOVUPS %[2]d(R12), Z%[3]d\n\tVFMADD231PS.BCST %[4]d(SP), Z%[1]d, Z%[3]d\n\tVMOVUPS Z%[3]d, %[2]d(R12)\n",
				20+r, 64*r, 16+r, oTU+4*h)
		}
		if h < 3 {
			b.WriteString("\tADDQ DX, R12\n")
		}
	}
	return b.String()
}

// finishLO is finish for accumulators in the lanes' order (laneOrder): vector t of accumulator
// h converted and added as it is to the 16 values at 64t(R12), the same operations on each
// value as finish's.
func finishLO() string {
	var b strings.Builder
	for h := 0; h < 4; h++ {
		for t := 0; t < 4; t++ {
			fmt.Fprintf(&b, "\tVCVTDQ2PS Z%[1]d, Z%[1]d\n\tVMOVUPS %[2]d(R12), Z%[3]d\n\tVFMADD231PS.BCST %[4]d(SP), Z%[1]d, Z%[3]d\n\tVMOVUPS Z%[3]d, %[2]d(R12)\n",
				4*h+t, 64*t, 16+t, oTU+4*h)
		}
		if h < 3 {
			b.WriteString("\tADDQ DX, R12\n")
		}
	}
	return b.String()
}

// reorder is laneOrder's pass over the accumulators (R12 the first, DX bytes apart, AX units of
// 64 values, all set up here): each unit's four vectors loaded, put in the lanes' order (inverse) or back in the
// values' order, and stored. Clobbers R12, R11, AX, Z0..Z3, Z16..Z23.
func reorder(f format, label string, inverse bool) string {
	var b strings.Builder
	b.WriteString("\tMOVQ acc+0(FP), R12")
	if !inverse {
		b.WriteString("        // the accumulators back in the values' order")
	}
	b.WriteString("\n\tMOVQ d+8(FP), DX\n\tSHLQ $2, DX\n\tMOVQ nv+16(FP), AX\n\tSHRQ $6, AX\n")
	fmt.Fprintf(&b, "%s:\n\tMOVQ R12, R11\n", label)
	for h := 0; h < 4; h++ {
		for t := 0; t < 4; t++ {
			fmt.Fprintf(&b, "\tVMOVUPS %d(R11), Z%d\n", 64*t, t)
		}
		b.WriteString(network(f, func(t int) string { return fmt.Sprintf("Z%d", t) }, inverse))
		for t := 0; t < 4; t++ {
			fmt.Fprintf(&b, "\tVMOVUPS Z%d, %d(R11)\n", 20+t, 64*t)
		}
		if h < 3 {
			b.WriteString("\tADDQ DX, R11\n")
		}
	}
	fmt.Fprintf(&b, "\tADDQ $256, R12\n\tDECQ AX\n\tJNZ  %s\n", label)
	return b.String()
}

// checkUnpck simulates the unpck finish on f's lane values and panics unless it leaves vector r
// holding values 16r..16r+15 in order.
func checkUnpck(f format) {
	var S [4][16]int
	for t := range S {
		for k := range S[t] {
			S[t][k] = f.val(t, k)
		}
	}
	// unpack within 128-bit lanes: lo/hi dwords (size 1) or qwords (size 2) of a, then b
	unp := func(a, b [16]int, size int, hi bool) (r [16]int) {
		for l := 0; l < 4; l++ {
			base := 4 * l
			if hi {
				base += 2
			}
			for i := 0; i < 4/(2*size); i++ {
				for e := 0; e < size; e++ {
					r[4*l+2*size*i+e] = a[base+size*i+e]
					r[4*l+2*size*i+size+e] = b[base+size*i+e]
				}
			}
		}
		return r
	}
	A, B := unp(S[0], S[1], 1, false), unp(S[0], S[1], 1, true)
	C, D := unp(S[2], S[3], 1, false), unp(S[2], S[3], 1, true)
	R := [4][16]int{unp(A, C, 2, false), unp(A, C, 2, true), unp(B, D, 2, false), unp(B, D, 2, true)}
	for r := range R {
		for i, v := range R[r] {
			if v != 16*r+i {
				panic(fmt.Sprintf("%s: the unpck finish leaves value %d at %d of vector %d", f.name, v, i, r))
			}
		}
	}
}

// permTab is f's finish tables (perms), tAcc<name>Perm, and laneOrder's inverse ones,
// tAcc<name>IPerm: perms of the lanes relabelled, value val(t, k) as 16t + k, so that they take
// the values' order to the lanes'.
func permTab(f format) string {
	var b strings.Builder
	at := map[int]int{}
	for t := 0; t < 4; t++ {
		for k := 0; k < 16; k++ {
			at[f.val(t, k)] = 16*t + k
		}
	}
	inv := f
	inv.val = func(r, i int) int { return at[16*r+i] }
	for _, x := range []struct {
		name string
		f    format
	}{{"Perm", f}, {"IPerm", inv}} {
		for i, p := range perms(x.f) {
			for k := 0; k < 16; k += 2 {
				fmt.Fprintf(&b, "DATA ·tAcc%s%s+%d(SB)/8, $0x%08x%08x\n", f.name, x.name, 64*i+4*k, p[k+1], p[k])
			}
		}
		fmt.Fprintf(&b, "GLOBL ·tAcc%s%s(SB), RODATA|NOPTR, $512\n\n", f.name, x.name)
	}
	return b.String()
}

func bytes64(name string, t [64]byte) string { return bytesTab(name, t[:]) }

func bytesTab(name string, t []byte) string {
	var b strings.Builder
	for i := 0; i < len(t); i += 8 {
		var v uint64
		for k := 7; k >= 0; k-- {
			v = v<<8 | uint64(t[i+k])
		}
		fmt.Fprintf(&b, "DATA ·%s+%d(SB)/8, $0x%016x\n", name, i, v)
	}
	fmt.Fprintf(&b, "GLOBL ·%s(SB), RODATA|NOPTR, $%d\n\n", name, len(t))
	return b.String()
}

func header() string {
	var b strings.Builder
	b.WriteString(`// Code generated by gen_turboacc.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// Integer accumulate kernels of the turbo tiers and tq4 (multi_turboacc_amd64.go states the
// contract; gen_turboacc.go the layout of the work).

`)
	for _, f := range formats {
		if f.tables != "" {
			if f.ownPerm {
				b.WriteString(permTab(f))
			}
			fmt.Fprintf(&b, "DATA ·tAcc%sUnit+0(SB)/4, $0x%08x\nGLOBL ·tAcc%sUnit(SB), RODATA|NOPTR, $4\n\n", f.name, math.Float32bits(f.unit), f.name)
			continue
		}
		// the level tables: byte i → the level + 128 of code (i >> shift) & (2^bits − 1)
		nt := 1
		if f.bits == 2 {
			nt = 3
		}
		for t := 0; t < nt; t++ {
			var tab [64]byte
			for i := range tab {
				tab[i] = byte(int(f.ints[i>>(f.bits*t)&(1<<f.bits-1)]) + 128)
			}
			b.WriteString(bytes64(fmt.Sprintf("tAcc%sTab%d", f.name, t), tab))
		}
		var build [64]byte
		switch f.bits {
		case 4: // two builds: dword k of build b holds byte 2·j + b of each row (j as turbo2's)
			var build1 [64]byte
			for k := 0; k < 16; k++ {
				j := 2 * t2Byte(k)
				build[4*k], build[4*k+1], build[4*k+2], build[4*k+3] = byte(j), byte(j), byte(32+j), byte(32+j)
				build1[4*k], build1[4*k+1], build1[4*k+2], build1[4*k+3] = byte(j+1), byte(j+1), byte(33+j), byte(33+j)
			}
			t := bytes64("tAccT4Build", build) + bytes64("tAccT4Build", build1)
			// one symbol of two: the second's DATA at +64, one GLOBL
			var lines []string
			n := 0
			for _, line := range strings.Split(t, "\n") {
				if strings.HasPrefix(line, "GLOBL") || line == "" {
					continue
				}
				var off int
				var val string
				fmt.Sscanf(line, "DATA ·tAccT4Build+%d(SB)/8, %s", &off, &val)
				lines = append(lines, fmt.Sprintf("DATA ·tAccT4Build+%d(SB)/8, %s", off+64*(n/8), val))
				n++
			}
			b.WriteString(strings.Join(lines, "\n") + "\nGLOBL ·tAccT4Build(SB), RODATA|NOPTR, $128\n\n")
		case 2: // dword k: row a's byte k twice, row b's (16 + k) twice
			for k := 0; k < 16; k++ {
				j := t2Byte(k)
				build[4*k], build[4*k+1], build[4*k+2], build[4*k+3] = byte(j), byte(j), byte(16+j), byte(16+j)
			}
		case 3: // dword k: bytes 3k, 3k + 1 of each row's group k (k < 8), 3g + 1, 3g + 2 of group g = k − 8
			for k := 0; k < 16; k++ {
				o := 3 * k
				if k >= 8 {
					o = 3*(k-8) + 1
				}
				build[4*k], build[4*k+1], build[4*k+2], build[4*k+3] = byte(o), byte(o+1), byte(32+o), byte(33+o)
			}
		}
		if f.bits != 4 {
			b.WriteString(bytes64(fmt.Sprintf("tAcc%sBuild", f.name), build))
		}
		if !f.unpck {
			b.WriteString(permTab(f))
		}
		fmt.Fprintf(&b, "DATA ·tAcc%sUnit+0(SB)/4, $0x%08x\nGLOBL ·tAcc%sUnit(SB), RODATA|NOPTR, $4\n\n", f.name, math.Float32bits(f.unit), f.name)
	}
	// T2M's build before the rb adjustment: dword k holds byte t2Byte(k) four times.
	var b2m [64]byte
	for k := 0; k < 16; k++ {
		for i := 0; i < 4; i++ {
			b2m[4*k+i] = byte(t2Byte(k))
		}
	}
	b.WriteString(bytes64("tAccT2MBuild", b2m))
	// the prepass's pairing: words (a0..a3, b0..b3) of each 16-byte lane → (a0 b0 a1 b1 …)
	var ps [32]byte
	for l := 0; l < 2; l++ {
		for h := 0; h < 4; h++ {
			ps[16*l+4*h], ps[16*l+4*h+1] = byte(2*h), byte(2*h+1)
			ps[16*l+4*h+2], ps[16*l+4*h+3] = byte(8+2*h), byte(8+2*h+1)
		}
	}
	for i := 0; i < 32; i += 8 {
		var v uint64
		for k := 7; k >= 0; k-- {
			v = v<<8 | uint64(ps[i+k])
		}
		fmt.Fprintf(&b, "DATA ·tAccPairShuf+%d(SB)/8, $0x%016x\n", i, v)
	}
	b.WriteString("GLOBL ·tAccPairShuf(SB), RODATA|NOPTR, $32\n\n")
	for _, c := range []struct {
		name string
		v    uint32
	}{{"tAccQMax", math.Float32bits(32767)}, {"tAccInvCap", math.Float32bits(0x1p100)}, {"tAccOne", math.Float32bits(1)}} {
		fmt.Fprintf(&b, "DATA ·%s+0(SB)/4, $0x%08x\nGLOBL ·%s(SB), RODATA|NOPTR, $4\n\n", c.name, c.v, c.name)
	}
	b.WriteString(header8())
	return b.String()
}

// header8 is the 8-bit kernels' tables: the quad builds (turbo4's two: dword k holds byte 2j
// (2j + 1) of rows 0..3, at 0, 32, 64, 96 of the VPERMI2B pair; turbo2's: byte j of rows 0..3
// at 0, 16, 32, 48; j = t2Byte(k)), the prepass's transpose of four quads' weight bytes
// (p2loop8's VPERMB index), the largest 8-bit weight, 255, and the signed level
// tables.
func header8() string {
	var b strings.Builder
	var q4 [128]byte
	var q2 [64]byte
	for k := 0; k < 16; k++ {
		j := t2Byte(k)
		for r := 0; r < 4; r++ {
			q4[4*k+r] = byte(32*r + 2*j)
			q4[64+4*k+r] = byte(32*r + 2*j + 1)
			q2[4*k+r] = byte(16*r + j)
		}
	}
	b.WriteString(bytesTab("tAccT4QBuild", q4[:]))
	b.WriteString(bytes64("tAccT2QBuild", q2))
	// T2BM's build before the rb adjustment: dword k byte r from byte t2Byte(k) of row r's load
	// (rows 0, 1 the first, 2, 3 the second, 64 bytes on).
	var q2m [64]byte
	for k := 0; k < 16; k++ {
		for r := 0; r < 4; r++ {
			q2m[4*k+r] = byte(64*(r/2) + t2Byte(k))
		}
	}
	b.WriteString(bytes64("tAccT2QMBuild", q2m))
	// T3B's builds (qword q of build b: row r's bytes ⌊3g/2⌋ and ⌊3g/2⌋ + 1 at 8q + 2r, rows at
	// 0, 32, 64, 96 of the VPERMI2B pair), its VPMULTISHIFTQB control (byte 4i + r of each
	// qword: bit 16r + 4·(g%2) + 6i, g%2 = q%2 for both builds) and its table of bits 3..5.
	var t3b [128]byte
	var t3m, t3s [64]byte
	for bld := 0; bld < 2; bld++ {
		for q := 0; q < 8; q++ {
			g := t3vGroup(bld, q)
			for r := 0; r < 4; r++ {
				t3b[64*bld+8*q+2*r] = byte(32*r + 3*g/2)
				t3b[64*bld+8*q+2*r+1] = byte(32*r + 3*g/2 + 1)
			}
		}
	}
	for q := 0; q < 8; q++ {
		for i := 0; i < 2; i++ {
			for r := 0; r < 4; r++ {
				t3m[8*q+4*i+r] = byte(16*r + 4*(q%2) + 6*i)
			}
		}
	}
	for i := range t3s {
		t3s[i] = byte(t3Ints[i>>3&7])
	}
	b.WriteString(bytesTab("tAccT3VBuild", t3b[:]))
	b.WriteString(bytesTab("tAccT3VMs", t3m[:]))
	b.WriteString(bytesTab("tAccT3VSTab1", t3s[:]))
	// p2loop8's VPERMB index: byte 16k + 4h + r (quad k, accumulator h, row r) takes byte
	// 16r + 4k + h, where the packs leave it.
	var pk [64]byte
	for k := 0; k < 4; k++ {
		for h := 0; h < 4; h++ {
			for r := 0; r < 4; r++ {
				pk[16*k+4*h+r] = byte(16*r + 4*k + h)
			}
		}
	}
	b.WriteString(bytes64("tAccPack8Idx", pk))
	fmt.Fprintf(&b, "DATA ·tAccQMax8+0(SB)/4, $0x%08x\nGLOBL ·tAccQMax8(SB), RODATA|NOPTR, $4\n\n", math.Float32bits(255))
	// the signed level tables: byte i → the level of code (i >> (bits·t)) & (2^bits − 1)
	for _, f := range formats {
		if f.tables != "" {
			continue
		}
		nt := 1
		if f.bits == 2 {
			nt = 3
		}
		for t := 0; t < nt; t++ {
			var tab [64]byte
			for i := range tab {
				tab[i] = byte(f.ints[i>>(f.bits*t)&(1<<f.bits-1)])
			}
			b.WriteString(bytes64(fmt.Sprintf("tAcc%sSTab%d", f.name, t), tab))
		}
	}
	return b.String()
}

// p2loop16 is the 16-bit kernels' second prepass loop: W = round(w·s·inv) as int16, four rows
// a step, rows paired: (W_2p, W_2p+1) per dword; ΣW per lane (Z18).
const p2loop16 = `	LEAQ %WS%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	ADDQ $3, R10
	SHRQ $2, R10
	VPXORD Z18, Z18, Z18
a@_p2:
	VMULPS (R8), Z14, Z16
	VCVTPS2DQ Z16, Z16
	VPADDD Z16, Z18, Z18
	VPMOVDW Z16, Y16
	VPSHUFB ·tAccPairShuf(SB), Y16, Y16
	VMOVDQU32 Y16, (R12)
	ADDQ $64, R8
	ADDQ $32, R12
	DECQ R10
	JNZ  a@_p2`

// p2loop8 is the 8-bit kernels' second prepass loop: W = round(w·s·inv) (|W| ≤ 255), sixteen
// rows (four quads) a step: the four quads' int32 W packed to words by two VPACKSSDW (exact),
// to bytes by one VPACKUSWB (byte 16L + 4k + h: quad k's row L, accumulator h; the unsigned
// saturation keeps max(W, 0), which is VPMOVDB's byte wherever W ≥ 0), and one VPERMB
// (·tAccPack8Idx) into the row loops' order (quad k at 16k, accumulator h's dword at 4h, byte r
// row r); Z19 ORs the words, whose sign bits flag a negative W (p2end8). The first prepass
// leaves zero rows up to the sixteen's end (p1Zero8), so the rows past the tile pack as 0.
// Against the previous loop (a quad a step: VPMOVDB, VPSHUFB, VPMINSD; 11 instructions a quad
// where this takes 4.5) on AMD Zen 4 (TestTurboAcc8Speed, d 128, thread CPU, old and new test
// binaries alternated six times, min of the rounds' mins, load ~3): turbo4 3.62 → 3.55 ns a row
// in cache, 3.47 → 3.42 streamed; tq4 3.62 → 3.54, 3.47 → 3.40; turbo3 4.05 → 3.97, 3.81 →
// 3.73; turbo2 3.32 → 3.24, 3.17 → 3.09; the 16-bit kernels (unchanged) within ±0.01. Cutting
// the first prepass as well (a loop of its own for a weights' stride of 16, one row pointer step
// a quad: 6 instructions a quad fewer) measured within ±0.02 of this and was not kept.
const p2loop8 = `	LEAQ %WS%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	ADDQ $15, R10
	SHRQ $4, R10
	VPXORD Z19, Z19, Z19
	VMOVDQU64 ·tAccPack8Idx(SB), Z20
a@_p2:
` + p2cvt8 + `	VPTERNLOGD $0xfe, Z16, Z12, Z19
	VPACKUSWB Z12, Z16, Z16
	VPERMB Z16, Z20, Z16
	VMOVDQU32 Z16, (R12)
	ADDQ $256, R8
	ADDQ $64, R12
	DECQ R10
	JNZ  a@_p2`

// p2cvt8: sixteen rows' W (four quads at R8) as words: quads 0 and 1 in Z16, 2 and 3 in Z12
// (VPACKSSDW, per 128-bit lane).
const p2cvt8 = `	VMULPS (R8), Z14, Z16
	VMULPS 64(R8), Z14, Z17
	VMULPS 128(R8), Z14, Z12
	VMULPS 192(R8), Z14, Z13
	VCVTPS2DQ Z16, Z16
	VCVTPS2DQ Z17, Z17
	VCVTPS2DQ Z12, Z12
	VCVTPS2DQ Z13, Z13
	VPACKSSDW Z17, Z16, Z16
	VPACKSSDW Z13, Z12, Z12
`

// p1Zero8 (the 8-bit kernels' first prepass, after the three zero rows) zeroes the rows of ws
// on to the end of the tile's last sixteen rows (p2loop8 packs sixteen a step): at most 64 rows
// and three more, inside ws. Z16 is zero.
func p1Zero8(name string) string {
	return strings.NewReplacer("@", name).Replace(fmt.Sprintf(`
	MOVQ %d(SP), R10
	ADDQ $15, R10
	ANDQ $-16, R10
	SHLQ $4, R10
	LEAQ %d(SP)(R10*1), R10
	ADDQ $48, R15
a@_p1z#:
	CMPQ R15, R10
	JAE  a@_p1zd#
	VMOVUPS Z16, (R15)
	ADDQ $64, R15
	JMP  a@_p1z#
a@_p1zd#:`, oNN, oWS))
}

// p2end8 stores the flag (a negative W in the tile) and, where it is set, packs the tile's
// weights again split into max(W, 0) (at QP) and max(−W, 0) (256 bytes on), as p2loop8 does
// (the words negated by VPSUBW: exact, |W| ≤ 255); ΣW is zeroed: the
// 8-bit kernels' sums start at 0 (signed levels, no offset).
const p2end8 = `
	VPMOVW2M Z19, K3
	KMOVD K3, AX
	MOVL AX, %FLAG%(SP)
	TESTL AX, AX
	JZ   a@_p2d
	LEAQ %WS%(SP), R8
	LEAQ %QP%(SP), R12
	MOVQ %TN%(SP), R10
	ADDQ $15, R10
	SHRQ $4, R10
	VPXORD Z21, Z21, Z21
a@_p2s:
` + p2cvt8 + `	VPSUBW Z16, Z21, Z15
	VPSUBW Z12, Z21, Z13
	VPACKUSWB Z12, Z16, Z16
	VPACKUSWB Z13, Z15, Z15
	VPERMB Z16, Z20, Z16
	VPERMB Z15, Z20, Z15
	VMOVDQU32 Z16, (R12)
	VMOVDQU32 Z15, 256(R12)
	ADDQ $256, R8
	ADDQ $64, R12
	DECQ R10
	JNZ  a@_p2s
a@_p2d:
	VPXORD Z18, Z18, Z18`

// pfRepl fills in the prefetch pieces of f's template. The row loops prefetch each line of the
// rows once (PREFETCHT0), pfNear bytes ahead of a line pointer (R15, %PF%) that follows a byte
// pointer (%PT%) sweeping the tile after next (the next tile's first prepass runs before this
// one's row loops), a unit's share in the unit's row loop (the 8-bit kernels' first pass): each
// row pair (quad) moves the byte pointer on by ⌈2·rb / units⌉ (⌈4·rb / units⌉) bytes, %PS%, and
// the line pointer, a line at a time, past it, so the lines are spread over the rows as evenly
// as they allow; the 8-bit kernels' second pass (negative weights) reads the same rows and
// prefetches nothing. Prefetches past the last row reach at most pfNear bytes past the tile
// after next and never fault. The previous scheme (four tiles on, a line (the 8-bit kernels:
// two) at a pointer moved on by the pair's (quad's) share: turbo2's and turbo3's lines
// prefetched 1.3–1.9 times, a line of turbo4's and tq4's in 33 not at all) against this one, on
// AMD Zen 4 (4 queries, 128 values; 64 MiB of rows in calls of 16384 rows, the kernels
// alternated call by call, thread CPU time, 21 passes, median, shared machine at load ~4–10),
// ns a row, 8-bit kernels: turbo4 5.27 → 4.56, tq4 5.18 → 4.83, turbo3 5.60 → 5.41, turbo2
// 3.97 → 3.89; 16-bit: turbo4 6.6–7.0 → 6.0–6.1, tq4 6.7–6.9 → 6.1–6.2, turbo3 6.4–6.7 →
// 6.3–6.6, turbo2 ±0; in cache unchanged or up to 0.1 less. 2048 bytes ahead ran within ±0.1
// of 3072. Adding PREFETCHT1 12–24 KiB ahead (with PREFETCHT0 1.5–6 KiB), as gen_f16acc.go's
// Zen 4 scores kernel does, was slower than PREFETCHT0 alone: turbo2 3.7 → 4.2, turbo4 ±0. Not
// measured on Zen 5 or Intel cores. At the bench shape (native/attn TestDecodeBreakdown, 131072
// cells, 32/8 heads, one thread, builds alternated three times, values ns a cell, min; load
// ~10) the prefetches carry the 8-bit kernels: without them turbo4 8.4–8.5 against 4.7–5.3,
// turbo2 5.0–5.1 against 3.4–3.6; PREFETCHT1 in their place 6.3–6.6 and 3.7–4.1, PREFETCHNTA
// 5.2–6.5 and 3.5–3.9. 1536 bytes ahead ran within ±0.05 of 3072 (TestTurboAcc8Speed's
// shape, 524288 rows streamed past the L3, alternated in one process), 6144 turbo4 +0.1 to
// +0.27, 9216 +0.3 to +0.6. turbo4's quad loads as sixteen-byte pieces (fewer of them across
// two lines than of the 32-byte ones; three inserts more): in cache +0.38, streamed +0.14, at
// the bench shape alike: loads across lines are not what the streamed rows cost.
func pfRepl(f format) *strings.Replacer {
	q := fmt.Sprintf(`	ADDQ R11, %%PT%%(SP)
a@_pfq:
	CMPQ R15, %%PT%%(SP)
	JAE  a@_pfqd
	PREFETCHT0 %d(R15)
	PREFETCHT1 %d(R15)
	ADDQ $64, R15
	JMP  a@_pfq
a@_pfqd:`, pfNear, pfFar)
	return strings.NewReplacer("%PFP%", q, "%PFQp%", q, "%PFQn%\n", "", "%PFENDp%", "\tMOVQ R15, %PF%(SP)", "%PFENDn%\n", "",
		"%PFDOC%", fmt.Sprintf("the tile after next, prefetched %d bytes on (L2: %d)", pfNear, pfFar))
}

// pfNear is the 8-bit kernels' prefetch distance (pfRepl), in bytes.
const pfNear = 3072

// pfFar is how far ahead the row loops prefetch each line into L2 as well (PREFETCHT1), in
// bytes. On 4 KiB pages a second level lost (pfRepl); with the rows on 2 MiB pages
// (internal/hugemem) it pays on AMD Zen 4 (native/attn TestDecodeBreakdown, 131072 cells, 32/8
// heads, one thread, thread CPU time, test binaries alternated, 8 and 10 runs, values ns a
// row, min/median): turbo4 4.27–4.40/4.60–4.61 → 3.59–3.72/3.80–4.60, tq4 4.29/4.45 →
// 3.55/3.72 (in cache, KVLAB_TOUCH=kv, turbo4 3.51), turbo3 4.03–4.07/4.18–4.46 →
// 3.91–4.12/4.05–4.17, turbo2 3.30–3.42/3.45–3.47 → 3.22–3.33/3.38–3.50; 16384 alike
// (turbo4 3.72–3.96/3.99–4.12). With the PREFETCHT0 distance alone changed (1536 to 12288,
// or no PREFETCHT0) nothing gained on huge pages. The 16-bit kernels (KVLAB_ACC16=1) ±0.05;
// on 4 KiB pages (KVLAB_NO_HUGEPAGES=1, 5 runs) turbo4 4.51/4.80 → 4.23/4.38, tq4 4.58/4.92 →
// 3.77/4.12, turbo2 3.56/3.83 → 3.73/3.82. Not measured on Intel cores or Zen 5.
const pfFar = 32768

func main() {
	var out strings.Builder
	out.WriteString(header())
	for _, f := range formats {
		tmpl, qmax, group := accTmpl, "tAccQMax", [3]string{"2", "row pair", "1"}
		p2end, p2loop, p1z := "", p2loop16, ""
		if f.b8 {
			tmpl = strings.Replace(tmpl, "%ROWS%", rows8Tmpl, 1)
			p2loop, p1z = p2loop8, p1Zero8(f.name)
			p2end = p2end8
			qmax, group = "tAccQMax8", [3]string{"4", "row quad", "2"}
			rest := f.rest8
			if rest == "" {
				rest = f.dec
			}
			pass := func(n string) string {
				return strings.ReplaceAll(strings.Replace(pass8Tmpl, "%DECREST%", rest, 1), "#", n)
			}
			tmpl = strings.NewReplacer("%PASS1%", pass("p"), "%PASS2%", pass("n"), "%NEG%", neg8,
				"%QN%", fmt.Sprint(oQP+256)).Replace(tmpl)
		} else {
			tmpl = strings.Replace(tmpl, "%ROWS%", rows16Tmpl, 1)
		}
		tmpl = pfRepl(f).Replace(tmpl)
		tmpl = strings.NewReplacer("%P2LOOP%", p2loop, "%P2END%", p2end, "%GROUP%", group[0], "%GROUPN%", group[1], "%GSHIFT%", group[2]).Replace(tmpl)
		bc, bv, cvt4, cvt1 := "VPBROADCASTW", "Y16", "VCVTPH2PS Y16, Z16", "VCVTPH2PS X16, X16"
		if f.f32 {
			bc, bv, cvt4, cvt1 = "VPBROADCASTD", "Z16", "", ""
		}
		p1 := strings.NewReplacer("@", f.name, "%NN%", fmt.Sprint(oNN), "%WS%", fmt.Sprint(oWS), "%INV%", fmt.Sprint(oINV),
			"%TUN%", fmt.Sprint(oTUN), "%BC%", bc, "%BV%", bv, "%CVT4%", cvt4, "%CVT1%", cvt1,
			"%QMAX%", qmax, "%P1Z%", p1z)
		lone := f.lone
		if lone == "" {
			lone = "XORQ R9, R9                // a lone last row: b reads a again, with weight 0\n\t" + f.dec
		} else {
			lone = "// a lone last row: b's bytes zero, with weight 0\n\t" + lone
		}
		r := strings.NewReplacer("@", f.name, "%DOC%", f.doc, "%CONSTS%", f.consts, "%FRAME%", fmt.Sprint(frame),
			"%P1A%", strings.ReplaceAll(p1.Replace(p1Tmpl), "#", "a"), "%P1B%", strings.ReplaceAll(p1.Replace(p1Tmpl), "#", "b"),
			"%BITS%", fmt.Sprint(f.bits), "%UBYTE%", fmt.Sprint(f.ubyte),
			"%WS%", fmt.Sprint(oWS), "%QP%", fmt.Sprint(oQP), "%TU%", fmt.Sprint(oTU),
			"%SS%", fmt.Sprint(oSS), "%SS4%", fmt.Sprint(oSS+4), "%SS8%", fmt.Sprint(oSS+8), "%SS12%", fmt.Sprint(oSS+12),
			"%TN%", fmt.Sprint(oTN), "%WP%", fmt.Sprint(oWP), "%RL%", fmt.Sprint(oRL), "%PF%", fmt.Sprint(oPF), "%PT%", fmt.Sprint(oPT),
			"%PS%", fmt.Sprint(oPS), "%UL%", fmt.Sprint(oUL), "%NN%", fmt.Sprint(oNN), "%INV%", fmt.Sprint(oINV),
			"%TUN%", fmt.Sprint(oTUN),
			"%DEC%", f.dec, "%LONE%", lone, "%DOTS%", dots(f), "%UNITSETUP%", f.unitSetup, "%FINISH%", finish(f),
			"%FINISHLO%", finishLO(), "%LO%", fmt.Sprint(oLO), "%LOMIN%", fmt.Sprint(loMin), "%FLAG%", fmt.Sprint(oFLAG),
			"%REORDERIN%", reorder(f, "a"+f.name+"_loi", true), "%REORDEROUT%", reorder(f, "a"+f.name+"_loo", false))
		out.WriteString(r.Replace(tmpl))
	}
	s := out.String()
	for strings.Contains(s, "\n\t\n") {
		s = strings.ReplaceAll(s, "\n\t\n", "\n")
	}
	if err := os.WriteFile("multi_turboacc_amd64.s", []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
