//go:build ignore

// gen_tq4avx2 writes multi_tq4avx2_amd64.s: the AVX2 integer scores kernels of tq4, turbo4,
// turbo3 (t3Group), turbo2 (t2Chunk) and q2k (turbo2's with every row scale 1, and its query
// preparation, q2kDigitsAVX2), the 256-bit ports of gen_tq4vnni.go's AVX-512 VNNI kernels (the same digits, the same exact
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
//     written as bytes (vexDPBUSD).
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
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// vexDPBUSD is the VEX.256 encoding of VPDPBUSD ymm(acc), ymm(u), ymm(s) (acc += Σ u8·s8 per
// dword): VEX.256.66.0F38.W0 50 /r.
func vexDPBUSD(acc, u, s int) string {
	b1 := 0x02 // m-mmmm 0F38
	if acc < 8 {
		b1 |= 0x80 // R̄
	}
	b1 |= 0x40 // X̄
	if s < 8 {
		b1 |= 0x20 // B̄
	}
	b2 := (^u&15)<<3 | 1<<2 | 0x01 // W0, vvvv = ¬u, L = 256, pp = 66
	modrm := 0xC0 | (acc&7)<<3 | s&7
	return fmt.Sprintf("BYTE $0xC4; BYTE $0x%02X; BYTE $0x%02X; BYTE $0x50; BYTE $0x%02X // VPDPBUSD Y%d, Y%d, Y%d (VEX)",
		b1, b2, modrm, s, u, acc)
}

// chain writes code vector Yc (the codes of the values at digit offset off, 0..15 each) looked up
// (the table in Y12) and run through the four queries' chains Y4..Y7; it clobbers Yc, Y13 (plain
// flavour), Y14 and Y15.
func chain(b *strings.Builder, vnni bool, c, off int) {
	w := func(f string, a ...any) { fmt.Fprintf(b, "\t"+f+"\n", a...) }
	if vnni {
		w("VPSHUFB Y%d, Y12, Y%d", c, c)
		for h := 0; h < 4; h++ {
			w("VPBROADCASTD %d(SI), Y14", off+32*h)
			w("%s", vexDPBUSD(4+h, c, 14))
		}
		return
	}
	w("VPSHUFB Y%d, Y12, Y14 // L", c)
	w("VPABSB Y14, Y15       // |L|")
	for h := 0; h < 4; h++ {
		w("VPBROADCASTD %d(SI), Y13", off+32*h)
		w("VPSIGNB Y14, Y13, Y13")
		w("VPMADDUBSW Y13, Y15, Y13")
		w("VPMADDWD ·tq4AVX2Ones(SB), Y13, Y13")
		w("VPADDD Y13, Y%d, Y%d", 4+h, 4+h)
	}
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
	for r, idx := range []string{"", "(R8*1)", "(R8*2)", "(R12*1)"} {
		w("VMOVDQU (CX)%s, X%d", idx, r)
		w("VINSERTI128 $1, (BX)%s, Y%d, Y%d", idx, r, r)
	}
	w("VPUNPCKLDQ Y1, Y0, Y4")
	w("VPUNPCKHDQ Y1, Y0, Y5")
	w("VPUNPCKLDQ Y3, Y2, Y6")
	w("VPUNPCKHDQ Y3, Y2, Y7")
	w("VPUNPCKLQDQ Y6, Y4, Y0")
	w("VPUNPCKHQDQ Y6, Y4, Y1")
	w("VPUNPCKLQDQ Y7, Y5, Y2")
	w("VPUNPCKHQDQ Y7, Y5, Y3")
	for g := 0; g < 2; g++ {
		for h := 0; h < 4; h++ {
			if vnni {
				w("VPBROADCASTD %d(DX), Y%d // −128·ΣQ: the levels' offset", 48+4*h, 4+h)
			} else {
				w("VPXOR Y%d, Y%d, Y%d", 4+h, 4+h, 4+h)
			}
		}
		for k := 2 * g; k < 2*g+2; k++ {
			for t := 0; t < 4; t++ {
				if t == 0 {
					w("VPAND ·t2AVX2Mask3(SB), Y%d, Y13", k)
				} else {
					w("VPSRLW $%d, Y%d, Y13", 2*t, k)
					w("VPAND ·t2AVX2Mask3(SB), Y13, Y13")
				}
				chain(&b, vnni, 13, 16*(k%2)+4*t)
			}
		}
		for h := 0; h < 4; h++ {
			w("VCVTDQ2PS Y%d, Y%d", 4+h, 4+h)
			w("VBROADCASTSS %d(DX), Y13", 4*h)
			w("VFMADD231PS Y13, Y%d, Y%d", 4+h, 8+h)
		}
		w("ADDQ $128, SI")
		w("ADDQ $96, DX")
	}
	return b.String()
}

// group writes one 32-value group of eight rows (CX rows 0..3, BX rows 4..7) into the sums
// Y8..Y11; vnni picks the flavour.
func group(vnni bool) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	for r, idx := range []string{"", "(R8*1)", "(R8*2)", "(R12*1)"} {
		w("VMOVDQU (CX)%s, X%d", idx, r)
		w("VINSERTI128 $1, (BX)%s, Y%d, Y%d", idx, r, r)
	}
	// Transpose the dwords within 128-bit lanes: Yk lane l = dword k of row l.
	w("VPUNPCKLDQ Y1, Y0, Y4")
	w("VPUNPCKHDQ Y1, Y0, Y5")
	w("VPUNPCKLDQ Y3, Y2, Y6")
	w("VPUNPCKHDQ Y3, Y2, Y7")
	w("VPUNPCKLQDQ Y6, Y4, Y0")
	w("VPUNPCKHQDQ Y6, Y4, Y1")
	w("VPUNPCKLQDQ Y7, Y5, Y2")
	w("VPUNPCKHQDQ Y7, Y5, Y3")
	// The chains Y4..Y7.
	for h := 0; h < 4; h++ {
		if vnni {
			w("VPBROADCASTD %d(DX), Y%d // −128·ΣQ: the levels' offset", 48+4*h, 4+h)
		} else {
			w("VPXOR Y%d, Y%d, Y%d", 4+h, 4+h, 4+h)
		}
	}
	// codes runs code vector c (values at digit offset off) through the chains.
	codes := func(c, off int) {
		if vnni {
			w("VPSHUFB Y%d, Y12, Y%d", c, c)
			for h := 0; h < 4; h++ {
				w("VPBROADCASTD %d(SI), Y14", off+32*h)
				w("%s", vexDPBUSD(4+h, c, 14))
			}
			return
		}
		w("VPSHUFB Y%d, Y12, Y14 // L", c)
		w("VPABSB Y14, Y15       // |L|")
		for h := 0; h < 4; h++ {
			w("VPBROADCASTD %d(SI), Y13", off+32*h)
			w("VPSIGNB Y14, Y13, Y13")
			w("VPMADDUBSW Y13, Y15, Y13")
			w("VPMADDWD ·tq4AVX2Ones(SB), Y13, Y13")
			w("VPADDD Y13, Y%d, Y%d", 4+h, 4+h)
		}
	}
	for k := 0; k < 4; k++ {
		w("VPAND ·tq4AVX2Nib(SB), Y%d, Y13", k)
		w("VPSRLW $4, Y%d, Y%d", k, k)
		w("VPAND ·tq4AVX2Nib(SB), Y%d, Y%d", k, k)
		codes(13, 4*k)
		codes(k, 16+4*k)
	}
	for h := 0; h < 4; h++ {
		w("VCVTDQ2PS Y%d, Y%d", 4+h, 4+h)
		w("VBROADCASTSS %d(DX), Y13", 4*h)
		w("VFMADD231PS Y13, Y%d, Y%d", 4+h, 8+h)
	}
	w("ADDQ $128, SI")
	w("ADDQ $96, DX")
	return b.String()
}

// t3Pair is the first value i of dword j of turbo3's spread vector v (0..3): the dword holds
// the 16-bit windows of values i and i + 8, whose codes lie at the same bit offset 3i mod 8
// of their windows (24 bits, three bytes, apart).
func t3Pair(v, j int) int { return 16*(v/2) + 4*(v%2) + j }

// t3Tables writes turbo3's spread controls (per half h of the group, the eight code bytes
// loaded from byte 4h of it: vectors 2h and 2h + 1), shift counts and masks.
func t3Tables() string {
	var b strings.Builder
	var spread [4][32]byte
	var shift [2][8]uint32
	for v := 0; v < 4; v++ {
		off := 4 * (v / 2)
		for l := 0; l < 2; l++ {
			for j := 0; j < 4; j++ {
				i := t3Pair(v, j)
				p, sh := 3*i/8, 3*i%8
				for k, src := range []int{p, p + 1, p + 3, p + 4} {
					x := src - off
					if x < 0 || x >= 8 {
						if x < 0 || (k == 1 || k == 3) && sh >= 6 {
							panic(fmt.Sprintf("turbo3: value %d needs byte %d, not loaded", i, src))
						}
						x = 0x80 // beyond the code bytes the window needs
					}
					spread[v][16*l+4*j+k] = byte(x)
				}
				shift[v%2][4*l+j] = uint32(sh)
			}
		}
	}
	for v := range spread {
		for i := 0; i < 32; i += 8 {
			var x uint64
			for k := 7; k >= 0; k-- {
				x = x<<8 | uint64(spread[v][i+k])
			}
			fmt.Fprintf(&b, "DATA ·t3AVX2Spread+%d(SB)/8, $0x%016x\n", 32*v+i, x)
		}
	}
	b.WriteString("GLOBL ·t3AVX2Spread(SB), RODATA|NOPTR, $128\n\n")
	for v := range shift {
		for i := 0; i < 8; i += 2 {
			fmt.Fprintf(&b, "DATA ·t3AVX2Shift+%d(SB)/8, $0x%08x%08x\n", 32*v+4*i, shift[v][i+1], shift[v][i])
		}
	}
	b.WriteString("GLOBL ·t3AVX2Shift(SB), RODATA|NOPTR, $64\n\n")
	for i := 0; i < 32; i += 8 {
		fmt.Fprintf(&b, "DATA ·t3AVX2Mask7+%d(SB)/8, $0x0007000700070007\n", i)
	}
	b.WriteString("GLOBL ·t3AVX2Mask7(SB), RODATA|NOPTR, $32\n")
	return b.String()
}

// t3Group writes one 32-value group of eight turbo3 rows (12 code bytes each; CX rows 0..3,
// BX rows 4..7) into the sums Y8..Y11. Per half of the group (values 16h..16h+15), the eight
// code bytes at 4h of rows r and 4 + r are broadcast into one vector (row r low, 4 + r high);
// two VPSHUFB spread the 16-bit windows of its values into dwords (values i and i + 8 in the
// low and the high word, t3Pair), VPSRLVD shifts each dword by its values' common bit offset,
// a mask keeps the codes and VPACKUSWB packs the two vectors' words to bytes: lane bytes 4k..4k+3
// the codes of values 16h + 2k, 16h + 2k + 8, 16h + 2k + 1, 16h + 2k + 9 (t3AVX2Perm, the order
// the queries are permuted to). The four row pairs' vectors are transposed to dwords (lane l
// row l) and looked up and chained as tq4's.
func t3Group(vnni bool) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, "\t"+f+"\n", a...) }
	for h := 0; h < 2; h++ {
		for r, idx := range []string{"", "(R8*1)", "(R8*2)", "(R12*1)"} {
			w("VPBROADCASTQ %d(CX)%s, Y13", 4*h, idx)
			w("VPBROADCASTQ %d(BX)%s, Y14", 4*h, idx)
			w("VPBLENDD $0xF0, Y14, Y13, Y13")
			for e := 0; e < 2; e++ {
				v := 2*h + e
				w("VPSHUFB ·t3AVX2Spread+%d(SB), Y13, Y%d", 32*v, 14+e)
				w("VPSRLVD ·t3AVX2Shift+%d(SB), Y%d, Y%d", 32*e, 14+e, 14+e)
				w("VPAND ·t3AVX2Mask7(SB), Y%d, Y%d", 14+e, 14+e)
			}
			w("VPACKUSWB Y15, Y14, Y%d", r)
		}
		// Transpose the dwords within 128-bit lanes with two temporaries: K_k lane l = dword k
		// of row l, K0..K3 in Y2, Y3, Y13, Y0.
		w("VPUNPCKLDQ Y1, Y0, Y13")
		w("VPUNPCKHDQ Y1, Y0, Y14")
		w("VPUNPCKLDQ Y3, Y2, Y0")
		w("VPUNPCKHDQ Y3, Y2, Y1")
		w("VPUNPCKLQDQ Y0, Y13, Y2")
		w("VPUNPCKHQDQ Y0, Y13, Y3")
		w("VPUNPCKLQDQ Y1, Y14, Y13")
		w("VPUNPCKHQDQ Y1, Y14, Y0")
		if h == 0 {
			for c := 0; c < 4; c++ {
				if vnni {
					w("VPBROADCASTD %d(DX), Y%d // −128·ΣQ: the levels' offset", 48+4*c, 4+c)
				} else {
					w("VPXOR Y%d, Y%d, Y%d", 4+c, 4+c, 4+c)
				}
			}
		}
		for k, reg := range []int{2, 3, 13, 0} {
			off := 16*h + 4*k
			if vnni {
				w("VPSHUFB Y%d, Y12, Y%d", reg, reg)
				for q := 0; q < 4; q++ {
					w("VPBROADCASTD %d(SI), Y14", off+32*q)
					w("%s", vexDPBUSD(4+q, reg, 14))
				}
				continue
			}
			w("VPSHUFB Y%d, Y12, Y14 // L", reg)
			w("VPABSB Y14, Y15       // |L|")
			for q := 0; q < 4; q++ {
				w("VPBROADCASTD %d(SI), Y1", off+32*q)
				w("VPSIGNB Y14, Y1, Y1")
				w("VPMADDUBSW Y1, Y15, Y1")
				w("VPMADDWD ·tq4AVX2Ones(SB), Y1, Y1")
				w("VPADDD Y1, Y%d, Y%d", 4+q, 4+q)
			}
		}
	}
	for q := 0; q < 4; q++ {
		w("VCVTDQ2PS Y%d, Y%d", 4+q, 4+q)
		w("VBROADCASTSS %d(DX), Y13", 4*q)
		w("VFMADD231PS Y13, Y%d, Y%d", 4+q, 8+q)
	}
	w("ADDQ $128, SI")
	w("ADDQ $96, DX")
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
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	MOVQ R8, AX                // prefetch pointer: 128 rows ahead, PFSTEP bytes per chunk of
	SHLQ $7, AX                // codes (at least eight rows' share of a chunk)
	ADDQ DI, AX

@_blk:
%PF%%GROUP%	ADDQ $%STEP%, CX
	ADDQ $%STEP%, BX
	DECQ R11
	JNZ  @_blk

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

// q2kDigitsAVX2 writes q2kDigitsAVX2: the four queries times a q2k group's channel scales,
// quantized per 32-channel block as vnniQuant quantizes them (the same float32 operations:
// q' = q·scale, m = max|q'|, s = m/127, inv = 127/m, Q = round(q'·inv) to nearest even,
// clamped to ±127; a block with s < 2⁻¹²⁶ all zero), the digits in t2AVX2Perm's order for
// the turbo2 AVX2 kernels, the aux words they read (s, −128·ΣQ); false where a q' is not finite.
const q2kDigitsAVX2 = `
// func q2kDigitsAVX2(q *float32, d int, grp *byte, dig *byte, aux *uint32) bool
TEXT ·q2kDigitsAVX2(SB), NOSPLIT, $0-41
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), R9
	MOVQ grp+16(FP), R8
	MOVQ dig+24(FP), DI
	MOVQ aux+32(FP), DX
	MOVQ R9, R10
	SHRQ $5, R10               // blocks
	SHLQ $2, R9                // bytes between queries
	VPCMPEQD Y15, Y15, Y15
	VPSRLD $1, Y15, Y15        // the magnitude mask
	MOVL $0x7F7FFFFF, AX       // the largest finite float32
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x42FE0000, AX       // 127.0
	VMOVD AX, X13
	MOVL $127, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VPXOR Y11, Y11, Y11
	VPSUBD Y12, Y11, Y11       // −127
	VMOVDQU ·q2kA2DigPerm(SB), Y10
q2kd_blk:
	MOVQ SI, R11               // query 0's block
	MOVQ DI, R13               // its digits
	XORQ CX, CX
q2kd_q:
	VCVTPH2PS (R8), Y4
	VCVTPH2PS 16(R8), Y5
	VCVTPH2PS 32(R8), Y6
	VCVTPH2PS 48(R8), Y7
	VMULPS (R11), Y4, Y0
	VMULPS 32(R11), Y5, Y1
	VMULPS 64(R11), Y6, Y2
	VMULPS 96(R11), Y7, Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VCMPPS $0x12, Y14, Y4, Y8  // |q'| ≤ max finite (false for NaN)
	VCMPPS $0x12, Y14, Y5, Y9
	VANDPS Y9, Y8, Y8
	VCMPPS $0x12, Y14, Y6, Y9
	VANDPS Y9, Y8, Y8
	VCMPPS $0x12, Y14, Y7, Y9
	VANDPS Y9, Y8, Y8
	VMOVMSKPS Y8, AX
	CMPL AX, $0xFF
	JNE  q2kd_fail
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0x4E, X4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0xB1, X4, X5
	VMAXPS X5, X4, X4          // m
	VDIVSS X13, X4, X6         // s = m/127
	VDIVSS X4, X13, X7         // inv = 127/m
	MOVL $0x00800000, AX       // 2⁻¹²⁶
	VMOVD AX, X8
	VUCOMISS X8, X6
	JCS  q2kd_zero             // s < 2⁻¹²⁶ (or m = 0): a zero block
	VBROADCASTSS X7, Y7
	VMULPS Y7, Y0, Y0
	VMULPS Y7, Y1, Y1
	VMULPS Y7, Y2, Y2
	VMULPS Y7, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPMINSD Y12, Y0, Y0
	VPMINSD Y12, Y1, Y1
	VPMINSD Y12, Y2, Y2
	VPMINSD Y12, Y3, Y3
	VPMAXSD Y11, Y0, Y0
	VPMAXSD Y11, Y1, Y1
	VPMAXSD Y11, Y2, Y2
	VPMAXSD Y11, Y3, Y3
	VPADDD Y1, Y0, Y4
	VPADDD Y3, Y2, Y5
	VPADDD Y5, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPADDD X5, X4, X4
	VPSHUFD $0x4E, X4, X5
	VPADDD X5, X4, X4
	VPSHUFD $0xB1, X4, X5
	VPADDD X5, X4, X4
	VMOVD X4, AX
	IMUL3L $-128, AX, AX
	MOVL AX, 48(DX)(CX*4)      // −128·ΣQ
	VMOVSS X6, (DX)(CX*4)      // s
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y10, Y0         // the values' order
	VPSHUFB ·q2kT2Shuf(SB), Y0, Y0 // t2AVX2Perm's
	VMOVDQU Y0, (R13)
	JMP  q2kd_next
q2kd_zero:
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, (R13)
	MOVL $0, (DX)(CX*4)
	MOVL $0, 48(DX)(CX*4)
q2kd_next:
	ADDQ R9, R11
	ADDQ $32, R13
	INCQ CX
	CMPQ CX, $4
	JNE  q2kd_q
	ADDQ $128, SI
	ADDQ $64, R8
	ADDQ $128, DI
	ADDQ $96, DX
	DECQ R10
	JNZ  q2kd_blk
	MOVB $1, ret+40(FP)
	VZEROUPPER
	RET
q2kd_fail:
	MOVB $0, ret+40(FP)
	VZEROUPPER
	RET
`

// q2kDigitsTables writes q2kDigitsAVX2's dword permute (the packs' order back to the values')
// and byte shuffle (t2AVX2Perm within each 16-byte half: position 4t + b takes value 4b + t).
func q2kDigitsTables() string {
	var b strings.Builder
	idx := []uint32{0, 4, 1, 5, 2, 6, 3, 7}
	for i := 0; i < 8; i += 2 {
		fmt.Fprintf(&b, "DATA ·q2kA2DigPerm+%d(SB)/8, $0x%08x%08x\n", 4*i, idx[i+1], idx[i])
	}
	b.WriteString("GLOBL ·q2kA2DigPerm(SB), RODATA|NOPTR, $32\n\n")
	var sh [32]byte
	for i := range sh {
		p := i % 16
		sh[i] = byte(4*(p%4) + p/4)
	}
	for i := 0; i < 32; i += 8 {
		var x uint64
		for k := 7; k >= 0; k-- {
			x = x<<8 | uint64(sh[i+k])
		}
		fmt.Fprintf(&b, "DATA ·q2kT2Shuf+%d(SB)/8, $0x%016x\n", i, x)
	}
	b.WriteString("GLOBL ·q2kT2Shuf(SB), RODATA|NOPTR, $32\n")
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
	const pf4 = "\tPREFETCHT0 (AX)\n\tPREFETCHT0 64(AX)\n\tPREFETCHT0 128(AX)\n\tADDQ $160, AX\n" // ≥ 8·(16 + 4)
	const pf3 = "\tPREFETCHT0 (AX)\n\tPREFETCHT0 64(AX)\n\tADDQ $112, AX\n"                       // ≥ 8·(12 + 2)
	for _, k := range []struct {
		name string
		f32  bool
		vnni bool
		t3   bool
	}{
		{"TQ4AVX2I", true, false, false},
		{"T4AVX2I", false, false, false},
		{"TQ4AVXVNNI", true, true, false},
		{"T4AVXVNNI", false, true, false},
		{"T3AVX2I", false, false, true},
		{"T3AVXVNNI", false, true, true},
		{"T2AVX2I", false, false, false},
		{"T2AVXVNNI", false, true, false},
		{"Q2KAVX2I", false, false, false},
		{"Q2KAVXVNNI", false, true, false},
	} {
		table, grp, pf, step := "VBROADCASTI128 ·tq4AVX2Ints(SB), Y12", group(k.vnni), pf4, "16"
		if k.vnni {
			table = "VBROADCASTI128 ·tq4VNNIU8(SB), Y12"
		}
		if k.t3 {
			table, grp, pf, step = "VBROADCASTI128 ·t3AVX2Ints(SB), Y12", t3Group(k.vnni), pf3, "12"
			if k.vnni {
				table = "VBROADCASTI128 ·turbo3VNNIU8(SB), Y12"
			}
		}
		stg := stage(k.f32)
		if strings.HasPrefix(k.name, "T2") || strings.HasPrefix(k.name, "Q2K") {
			table, grp = "VBROADCASTI128 ·t2AVX2Ints(SB), Y12", t2Chunk(k.vnni)
			if k.vnni {
				table = "VBROADCASTI128 ·turbo2VNNIU8(SB), Y12"
			}
		}
		if strings.HasPrefix(k.name, "Q2K") { // q2k's cells have no row scale: turbo2's with 1
			stg = "MOVL $0x3F800000, AX\n\tVMOVD AX, X12\n\tVPBROADCASTD X12, Y12"
		}
		r := strings.NewReplacer("@", k.name, "%TABLE%", table, "%GROUP%", grp, "%STAGE%", stg, "%PF%", pf, "%STEP%", step)
		out.WriteString(r.Replace(body))
	}
	out.WriteString(q2kDigitsTables())
	out.WriteString(q2kDigitsAVX2)
	if err := os.WriteFile("multi_tq4avx2_amd64.s", out.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
