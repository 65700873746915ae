//go:build amd64 && !purego

package kvq

import (
	"encoding/binary"
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:generate go run gen_tq4avx2.go gen_vexlib.go

// tq4, turbo4 and turbo3 scores through AVX2 integer kernels (multi_tq4avx2_amd64.s, generated
// by gen_tq4avx2.go) on CPUs with AVX2, FMA and F16C but not AVX-512 (whose kernels,
// multi_tq4vnni_amd64.go, stay as they are), for rows whose d is a multiple of 32. They take the AVX-512
// kernels' prepared queries and digits (vnniDigits) and form the same exact int32 group dots,
// converted and scaled by the same float32 operations in the same order, so their scores are
// the AVX-512 per-group kernels' bit for bit (TestTQ4AVX2ScoresMatch) and the VNNI bounds
// (multi_tq4vnni_amd64.go, per 32-value group) hold as they are; ScoresGrid reports the same
// rounding. (turbo3 on an AVX-512 AMD Zen 4 takes the uniform-scale kernels instead, t23Uni,
// whose scores differ; so do turbo2, turbo3 and turbo4 in the plain AVX2 flavour, below.) Two
// flavours: one with the VEX-coded VPDPBUSD of AVX-VNNI (Intel Alder Lake and later, AMD Zen 5),
// chosen where cpu.X86 reports it and KVLAB_NO_AVXVNNI is unset (read once at start), and one
// with VPMADDUBSW, VPMADDWD and the sign trick of gen_tq4avx2.go for every other AVX2 CPU.
//
// Measured on AMD Zen 5 with KVLAB_NO_AVX512 (thread CPU time per row of 128 values and four
// queries, best of interleaved runs of the float kernels and both flavours, a shared machine;
// in cache / streamed past the caches): tq4 float 15.8 / 17.6 ns, plain 9.0 / 10.2, AVX-VNNI
// 5.2 / 6.4; turbo4 16.2 / 21.8, 9.2 / 12.9, 5.3 / 8.7; turbo3 13.7 / 18.3, 13.7 / 16.2,
// 8.5 / 11.8; turbo2 13.7 / 14.9, 9.0 / 10.0, 4.9 / 5.3. On Intel client cores (Golden Cove;
// from published instruction tables, not measured) VPMADDUBSW, VPMADDWD and VEX VPDPBUSD
// issue on ports 0 and 1 as the FMAs do: 16 VPDPBUSD a row take the issue slots of 16 of the
// float kernels' 64 FMAs, the plain flavour's 48 multiplies and 16 adds about as many as the
// FMAs, with the float kernels' lookups gone. The plain flavour has since changed (not
// measured on Zen 5): turbo2's takes the query digits as they are against l + 10
// (t2ChunkAVX2, its digits widened by t2AVX2Widen), turbo3's unpacks its codes by fewer
// operations in another order (t3GroupAVX2, t3AVX2PermPlain), and every group's chains start
// with its first products. On Zen 4 under KVLAB_NO_AVX512 (thread CPU, kvq's
// TestMultiQueryStreamSpeed in cache, min of alternations) the scores took tq4 10.2 → 10.0 ns
// a row, turbo4 10.3 → 10.1, turbo3 14.1 → 12.1, turbo2 10.1 → 6.9. turbo3's, turbo2's and
// turbo4's plain flavours now take their queries at one scale each instead
// (multiScoresT3UAVX2I, t3UniAVX2; multiScoresT2UAVX2I, t2UniAVX2; multiScoresT4UAVX2I,
// t4UniAVX2), whose scores are not the AVX-512 per-group kernels' (turbo2's are the AVX-512
// uniform kernels'). On AVX-VNNI CPUs turbo3's and turbo2's take them at one scale each too,
// as the AVX-512 uniform kernels do, their scores bit for bit (multiScoresT3UAVXVNNI,
// multiScoresT2UAVXVNNI; t3UniVNNI, t2UniVNNI).

// The AVX-VNNI flavour (VEX VPDPBUSD on 256-bit vectors) runs where hasAVXVNNI
// (multi_avx2intacc_amd64.go) says so.

// tq4AVXVNNICPU reports the CPU's AVX-VNNI, whatever KVLAB_NO_AVXVNNI says.
var tq4AVXVNNICPU = cpu.X86.HasAVXVNNI

// tq4AVX2Int reports that tq4's and turbo4's scores and values take the AVX2 integer kernels
// (on CPUs without AVX-512, whose float or integer kernels stay as they are; a variable so that
// tests can select the AVX2 float kernels or these). AVX-512 CPUs without VNNI keep the 512-bit
// float kernels: measured with KVLAB_NO_AVX512VNNI on AMD Zen 4 (TestSKXIntSpeed, in cache and
// streamed) these took 0.92–0.99× their time for tq4 and turbo4, 0.89× and 1.12× for turbo2's
// scores and values, 1.04–1.13× for turbo3's, too little to carry over to other cores.
var tq4AVX2Int = avx2Int && !hasAVX512

// tq4AVX2Ints is tq4Ints as signed bytes: the plain flavour's VPSHUFB table.
var tq4AVX2Ints = func() (t [16]byte) {
	for k, v := range tq4Ints {
		t[k] = byte(v)
	}
	return t
}()

// bytes32 is 32 bytes of b.
func bytes32(b byte) (t [32]byte) {
	for i := range t {
		t[i] = b
	}
	return t
}

// The AVX2 kernels have multiScoresTQ4VNNI's contract, for m a multiple of 8.

//go:noescape
func multiScoresTQ4AVX2I(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresT4AVX2I(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresTQ4AVXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresT4AVXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// tq4ScoresAVX2 runs the AVX2 scores kernel of kind vnniTQ4, vnniT4, vnniT3 or vnniT2 on this CPU (direct
// calls, so that the caller's stack buffers do not escape).
func tq4ScoresAVX2(kind int, dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32) {
	switch {
	case kind == vnniTQ4 && hasAVXVNNI:
		multiScoresTQ4AVXVNNI(dig, aux, nb, rows, rb, m, out, ostride, off, stage)
	case kind == vnniT4 && t4UniVNNI(nb*32):
		multiScoresT4UAVXVNNI(dig, aux, nb, rows, rb, m, out, ostride, off, stage)
	case kind == vnniT4 && t4UniAVX2(nb*32):
		multiScoresT4UAVX2I(dig, aux, nb, rows, rb, m, out, ostride, off, stage)
	case kind == vnniTQ4:
		multiScoresTQ4AVX2I(dig, aux, nb, rows, rb, m, out, ostride, off, stage)
	case kind == vnniT3 && t3UniVNNI(nb*32):
		var st [32]uint32 // the row scales (the stage words)
		multiScoresT3UAVXVNNI(dig, aux, nb, rows, rb, m, out, ostride, off, &st[0])
	case kind == vnniT3 && hasAVXVNNI:
		var st [40]uint32 // the kernel's packed codes (t3GroupVAVX2; 128 bytes from the first 32-byte boundary) and row scales
		multiScoresT3AVXVNNI(dig, aux, nb, rows, rb, m, out, ostride, off, &st[0])
	case kind == vnniT3 && t3UniAVX2(nb*32):
		var st [32]uint32 // the kernel's packed codes and row scales, as multiScoresT3AVX2I's
		multiScoresT3UAVX2I(dig, aux, nb, rows, rb, m, out, ostride, off, &st[0])
	case kind == vnniT3:
		var st [40]uint32 // the kernel's packed codes (t3GroupAVX2; 128 bytes from the first 32-byte boundary) and row scales
		multiScoresT3AVX2I(dig, aux, nb, rows, rb, m, out, ostride, off, &st[0])
	case kind == vnniT2 && t2UniVNNI(nb*32): // nb/2 chunks of 64 values
		var st [40]uint32 // the kernel's transposed codes (128 bytes from the first 32-byte boundary) and row scales
		multiScoresT2UAVXVNNI(dig, aux, nb/2, rows, rb, m, out, ostride, off, &st[0])
	case kind == vnniT2 && hasAVXVNNI: // nb/2 chunks of 64 values, as multiScoresT2VNNI
		multiScoresT2AVXVNNI(dig, aux, nb/2, rows, rb, m, out, ostride, off, stage)
	case kind == vnniT2 && t2UniAVX2(nb*32):
		multiScoresT2UAVX2I(dig, aux, nb/2, rows, rb, m, out, ostride, off, stage)
	case kind == vnniT2:
		multiScoresT2AVX2I(dig, aux, nb/2, rows, rb, m, out, ostride, off, stage)
	case hasAVXVNNI:
		multiScoresT4AVXVNNI(dig, aux, nb, rows, rb, m, out, ostride, off, stage)
	default:
		multiScoresT4AVX2I(dig, aux, nb, rows, rb, m, out, ostride, off, stage)
	}
}

// t3AVX2PermPlain is the order of turbo3's codes in the AVX2 scores kernels (multiScoresT3AVX2I
// and multiScoresT3AVXVNNI, gen_tq4avx2.go's t3GroupAVX2 and t3GroupVAVX2, and t3NValue); the
// queries and offsets are permuted to match before they are quantized: a permutation within a
// group leaves its quantization (vnniQuant) as it is, and the exact int32 dots do not depend on
// the order, so the scores are the AVX-512 kernel's bit for bit. Positions 4d + b hold the
// values t3N0[d] + 8b, positions 16 + 4d + b the values t3N1[d][b/2] + b%2, with t3N0 = {0, 3, 6,
// 7} and t3N1 = {{1, 9}, {17, 25}, {4, 12}, {20, 28}}.
var t3AVX2PermPlain = func() (p [32]uint8) {
	n0 := [4]int{0, 3, 6, 7}
	n1 := [4][2]int{{1, 9}, {17, 25}, {4, 12}, {20, 28}}
	for i := range p {
		if i < 16 {
			p[i] = uint8(n0[i/4] + 8*(i%4))
			continue
		}
		q := i - 16
		p[i] = uint8(n1[q/4][q%4/2] + q%2)
	}
	return p
}()

// t3AVX2Ints is turboInts3 as signed bytes (twice): the plain flavour's VPSHUFB table.
var t3AVX2Ints = func() (t [16]byte) {
	for k := range t {
		t[k] = byte(turboInts3[k&7])
	}
	return t
}()

// turbo2's AVX2 scores kernels (gen_tq4avx2.go's t2Chunk) read each 32-value group's codes in
// the order t2AVX2Perm: position 16h + 4t + b holds value 16h + 4b + t (code t of byte b of
// the half's dword), permuted as turbo3's.
var t2AVX2Perm = func() (p [32]uint8) {
	for i := range p {
		h, t, b := i/16, i%16/4, i%4
		p[i] = uint8(16*h + 4*b + t)
	}
	return p
}()

// t2AVX2Ints is turboInts2 as signed bytes (four times), t2AVX2Mask3 the two-bit code mask.
var (
	t2AVX2Ints = func() (t [16]byte) {
		for k := range t {
			t[k] = byte(turboInts2[k&3])
		}
		return t
	}()
	t2AVX2Mask3 = bytes32(0x03)
)

// t2AVX2Wide reports that turbo2's scores take the plain AVX2 kernel (multiScoresT2AVX2I),
// which reads its query digits widened by t2AVX2Widen (the AVX-512 and AVX-VNNI kernels read
// them as they are).
func t2AVX2Wide() bool { return !hasVNNIBW && !hasAVXVNNI }

// t2AVX2Widen writes the digits of nb blocks (dig, aux) widened for multiScoresT2AVX2I into dst
// (1152·nb bytes): per block each dword of the digits 8 times over (each a VPMADDUBSW operand),
// then for each query −90·ΣQ (from the aux word 20 + h) 8 times over, as int32s.
//
//go:noescape
func t2AVX2Widen(dig *byte, aux *uint32, dst *byte, nb int)

// floatBytes is the first byte of b.
func floatBytes(b []float32) *byte { return (*byte)(unsafe.Pointer(&b[0])) }

// t2AVX2M90 is −90 eight times: the factor of ΣQ in t2AVX2Widen's and q2kDigitsAVX2's offsets
// (t2ChunkAVX2 in gen_tq4avx2.go).
var t2AVX2M90 = [8]float32{-90, -90, -90, -90, -90, -90, -90, -90}

// t2AVX2Nine16 is 9 as sixteen int16s: the plain turbo2 kernel's VPMADDWD factor, which forms
// 9·S in int32 (t2ChunkAVX2).
var t2AVX2Nine16 = [16]int16{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}

// avx2Permute writes the n vectors of d values of src (d a multiple of 32) into dst in perm's
// order within each 32-value group.
func avx2Permute(perm *[32]uint8, dst, src []float32, n, d int) {
	for g := 0; g+32 <= n*d; g += 32 {
		s, t := (*[32]float32)(src[g:]), (*[32]float32)(dst[g:])
		for p, v := range perm {
			t[p] = s[v]
		}
	}
}

//go:noescape
func multiScoresT2AVX2I(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresT2AVXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresT3AVX2I(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresT3AVXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// turbo2VNNIU8 is turboInts2 + 128 as unsigned bytes, repeated over 16 bytes: the AVX2 turbo2
// and q2k kernels' VPSHUFB table, broadcast to both lanes (index bits 2..3 select a repeat).
var turbo2VNNIU8 = func() (t [16]byte) {
	for i := range t {
		t[i] = byte(int(turboInts2[i&3]) + 128)
	}
	return t
}()

// turbo3's uniform-scale AVX2 scores kernel (multiScoresT3UAVX2I, gen_tq4avx2.go's
// t3GroupUAVX2) takes each query rounded with one scale for all its values as the AVX-512
// uniform kernels do (t23Uni), but to |Q| ≤ 93 (t3UniQMax) instead of 127: the codes are
// looked up as u = L + 88 (0..176, t3AVX2U), VPMADDUBSW's unsigned operand, and 2·176·93 =
// 32736 keeps its int16 pair sums from saturating, so each (code vector, query) takes
// VPMADDUBSW, VPMADDWD and VPADDD where the per-group kernel's sign trick takes VPBROADCASTD,
// VPSIGNB, VPMADDUBSW, VPMADDWD and VPADDD (and VPABSB per code vector), and a row's chains
// run over all its groups, converted once after −88·ΣQ is added (exact: |Σ Q·L| ≤ d·93·88 <
// 2²⁴ for d ≤ 2048). The digits come widened (uniWiden; uniDigitsAVX2 forms them), each
// dword 8 times over, so that VPMADDUBSW reads them from memory.
//
// Scores: Dot(q̃), q̃ = s·Q one grid a query with s = max|q|/93 (vnniGridUni, ScoresGrid's u =
// (1 + 2⁻⁶)/186), the dot exact in int32, then three float32 roundings as the AVX-512 uniform
// kernels (the conversion exact, the product by s_h, the FMA by the row scale times the unit
// and the offset). Quality (kvlab ab, ctx 128, seeds 1..16, KVLAB_NO_AVX512, mean change of
// the per-seed KL ± standard error, per-group → this): kvlab-tiny-64 turbo3 decode KL
// +0.7 % ± 1.0, prompt −0.3 % ± 2.4, turbo3/turbo4 −1.0 % ± 1.2 and +10 % ± 9 (one seed
// 0.023 → 0.057, the rest within −11 %..+18 %); the outlier fixture turbo3 −0.3 % ± 1.1 and
// +1.9 % ± 1.8, turbo3/turbo4 −2.0 % ± 1.1 and 0.0 % ± 2.1. Speed: gen_tq4avx2.go's
// t3GroupUAVX2.
var (
	t3AVX2U = func() (t [16]byte) {
		for k := range t {
			t[k] = byte(int(turboInts3[k&7]) + 88)
		}
		return t
	}()
)

// t3UniQMax is the largest |Q| of turbo3's uniform-scale AVX2 digits.
const t3UniQMax = 93

// t3UniAVX2Mode picks where turbo3's scores take the uniform-scale AVX2 kernel (t3UniAVX2):
// 0 wherever the plain AVX2 flavour runs (tq4AVX2Int without AVX-VNNI), −1 never (tests and
// speed reports set it).
var t3UniAVX2Mode = 0

// t3UniAVX2 reports whether turbo3 rows of d values score through multiScoresT3UAVX2I.
func t3UniAVX2(d int) bool { return plainUniAVX2(t3UniAVX2Mode, d) }

// plainUniAVX2 reports whether rows of d values take a uniform-scale kernel of the plain AVX2
// flavour (tq4AVX2Int without AVX-VNNI) where its mode (t3UniAVX2Mode, t4UniAVX2Mode) is not −1.
func plainUniAVX2(mode, d int) bool {
	return mode >= 0 && tq4AVX2Int && !hasVNNIBW && !hasAVXVNNI && d%32 == 0 && d > 0 && d <= 2048
}

// uniAVX2 reports whether rows of kind and d values score through a uniform-scale AVX2 kernel
// (t3UniAVX2, t2UniAVX2, t4UniAVX2), and with which query digits (|Q| ≤ qmax) and offset lmid
// (uniDigitsAVX2's, uniWiden's: the levels' offset in the kernel's unsigned lookup, times its
// factor).
func uniAVX2(kind, d int) (qmax, lmid int, ok bool) {
	switch {
	case kind == vnniT3 && t3UniVNNI(d):
		return vnniQMax1, -128, true // the levels + 128
	case kind == vnniT3:
		return t3UniQMax, -88, t3UniAVX2(d)
	case kind == vnniT2 && t2UniVNNI(d):
		return vnniQMax1, -128, true // the levels + 128
	case kind == vnniT2:
		return vnniQMax1, -90, t2UniAVX2(d) // turbo2's l + 10 times 9
	case kind == vnniT4 && t4UniVNNI(d):
		return vnniQMax1, -128, true // the levels + 128
	case kind == vnniT4:
		return t4UniQMax, -104, t4UniAVX2(d)
	}
	return 0, 0, false
}

// turbo3's uniform-scale AVX-VNNI scores kernel (multiScoresT3UAVXVNNI, gen_tq4avx2.go's
// t3GroupUVAVX2) takes the queries as the AVX-512 uniform kernels do (t23Uni: vnniDigitsUni,
// one scale a query, |Q| ≤ 127), widened by uniDigitsAVX2 at −128·ΣQ, and forms the same
// exact Σ Q·L by VEX VPDPBUSD on the levels + 128, converted and scaled by the same float32
// operations, so its scores are multiScoresT3PUVNNI's bit for bit (TestT23UniAVX2Scores):
// a rounding change on AVX-VNNI CPUs from the per-group kernel (multiScoresT3AVXVNNI) to the
// uniform grid whose quality the AVX-512 uniform kernels measured (kvlab ab, their comment;
// ScoresGrid says so). On an Intel Xeon (kvlab ab --ctx 128 --n 64 --threads 1,
// KVLAB_NO_AVX512, seeds 1..12, this binary against the previous one, mean change of the
// per-seed KL ± standard error; kvlab-tiny-64 / its outlier copy): turbo3 decode KL
// +1.6 % ± 1.3 / −1.0 % ± 0.8, prompt −0.9 % ± 1.3 / −1.6 % ± 1.8, perplexity +0.06 % /
// +0.03 %; turbo3/turbo4 decode +0.3 % ± 0.5 / +0.1 % ± 1.4, prompt +7.3 % ± 5.2 / +1.2 % ±
// 1.3, perplexity +0.02 % / −0.05 %. Speed: gen_tq4avx2.go's t3GroupUVAVX2.
//
//go:noescape
func multiScoresT3UAVXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// t3UniVNNIMode picks where turbo3's scores take multiScoresT3UAVXVNNI (t3UniVNNI): 0 wherever
// the AVX-VNNI flavour runs (tq4AVX2Int with hasAVXVNNI), −1 never (the per-group
// multiScoresT3AVXVNNI; tests and speed reports set it).
var t3UniVNNIMode = 0

// t3UniVNNI reports whether turbo3 rows of d values score through multiScoresT3UAVXVNNI: d a
// multiple of 32 up to 512, as t23Uni admits (|Σ Q·L| ≤ d·127·88 < 2²⁴: the conversion exact).
func t3UniVNNI(d int) bool {
	return t3UniVNNIMode >= 0 && tq4AVX2Int && !hasVNNIBW && hasAVXVNNI && d%32 == 0 && d > 0 && d <= 512
}

// turbo2's uniform-scale AVX-VNNI scores kernel (multiScoresT2UAVXVNNI, gen_tq4avx2.go's
// t2ChunkUV) is turbo3's (multiScoresT3UAVXVNNI) for turbo2's codes: the AVX-512 uniform
// kernels' queries widened at −128·ΣQ, VEX VPDPBUSD on the levels + 128, so its scores are
// multiScoresT2PUVNNI's bit for bit (TestT23UniAVX2Scores; stage holds 160 bytes, 4-byte
// aligned), a rounding change on AVX-VNNI CPUs
// from multiScoresT2AVXVNNI's per-group scores to the uniform grid (t23Uni's kvlab ab). On an
// Intel Xeon (as turbo3's above): turbo2 decode KL −2.1 % ± 0.9 / −0.4 % ± 0.6, prompt
// +0.3 % ± 1.1 / −0.8 % ± 1.3, perplexity −0.00 % / +0.05 %; turbo2/turbo4 decode −0.3 % ±
// 0.5 / +0.4 % ± 0.6, prompt +0.7 % ± 0.8 / +0.1 % ± 0.6, perplexity within ±0.01 %. Speed:
// gen_tq4avx2.go's t2ChunkUV.
//
//go:noescape
func multiScoresT2UAVXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// t2UniVNNIMode picks where turbo2's scores take multiScoresT2UAVXVNNI (t2UniVNNI), as
// t3UniVNNIMode does turbo3's.
var t2UniVNNIMode = 0

// t2UniVNNI reports whether turbo2 rows of d values score through multiScoresT2UAVXVNNI: d a
// multiple of 64 up to 512, as t23Uni admits.
func t2UniVNNI(d int) bool {
	return t2UniVNNIMode >= 0 && tq4AVX2Int && !hasVNNIBW && hasAVXVNNI && d%64 == 0 && d > 0 && d <= 512
}

// t2VNNIU8Hi is turbo2VNNIU8 by the upper two bits of a nibble: the level + 128 of the
// nibble's second code (t2ChunkUV looks up two codes a nibble).
var t2VNNIU8Hi = func() (t [16]byte) {
	for k := range t {
		t[k] = byte(int(turboInts2[k>>2]) + 128)
	}
	return t
}()

// multiScoresT3UAVX2I has multiScoresT3AVX2I's contract, with dig the widened digits
// (uniWiden), aux unused, and off[8+h] the scale s_h of query h.
//
//go:noescape
func multiScoresT3UAVX2I(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// uniWiden writes vnniDigitsUniQ's digits of nb blocks (dig; off[12+h] = −128·ΣQ_h as int32
// bits) widened for the uniform-scale AVX2 kernels into dst (1024·nb + 128 bytes): per block
// and query each dword of the digits 8 times over, then per query f·ΣQ_h 8 times over, as
// int32s (f = lmid, uniAVX2's: −88 for turbo3, −90 for turbo2, −104 for turbo4).
func uniWiden(dig []byte, off *[16]float32, dst []byte, nb int, f int32) {
	dst = dst[:1024*nb+128]
	for b := 0; b < nb; b++ {
		src := dig[128*b : 128*b+128]
		out := dst[1024*b : 1024*b+1024]
		for k := 0; k < 32; k++ { // dword k of the block's 128 digit bytes (query k/8)
			w := binary.LittleEndian.Uint32(src[4*k:])
			for r := 0; r < 8; r++ {
				binary.LittleEndian.PutUint32(out[32*k+4*r:], w)
			}
		}
	}
	for h := 0; h < 4; h++ {
		sum := -int32(math.Float32bits(off[12+h])) / 128
		for r := 0; r < 8; r++ {
			binary.LittleEndian.PutUint32(dst[1024*nb+32*h+4*r:], uint32(f*sum))
		}
	}
}

// floatBytesN is b as bytes.
func floatBytesN(b []float32) []byte { return unsafe.Slice(floatBytes(b), 4*len(b)) }

// turbo2's uniform-scale AVX2 scores kernel (multiScoresT2UAVX2I, gen_tq4avx2.go's
// t2ChunkUAVX2) takes the queries as the AVX-512 uniform kernels do (vnniDigitsUni: one scale
// a query, |Q| ≤ 127; t23Uni) and forms the same exact Σ Q·L, converted and scaled by the same
// float32 operations, so its scores are multiScoresT2PUVNNI's bit for bit: t2ChunkAVX2's
// products and int16 sums, each group's 9·S added to the row's int32 chain, −90·ΣQ_h added
// and the chain converted and multiplied by s_h once a row (|Σ Q·L| ≤ d·127·90 < 2²⁴ for
// d ≤ 1024), where t2ChunkAVX2 converts and scales every group. The digits come widened as
// turbo3's (uniWiden, uniDigitsAVX2: 1024 bytes a group, the offsets after the last).
// Quality (kvlab ab, ctx 128, seeds 1..16, KVLAB_NO_AVX512, mean change of the per-seed KL ±
// standard error, per-group → this): kvlab-tiny-64 turbo2 decode KL −1.7 % ± 0.7, prompt
// 0.0 % ± 0.8, turbo2/turbo4 −0.1 % ± 0.5 and +0.8 % ± 0.7; the outlier fixture turbo2
// −0.5 % ± 0.5 and −0.7 % ± 1.0, turbo2/turbo4 +0.3 % ± 0.5 and −0.1 % ± 0.5. Speed:
// gen_tq4avx2.go's t2ChunkUAVX2.
//
//go:noescape
func multiScoresT2UAVX2I(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// t2UniAVX2Mode picks where turbo2's scores take the uniform-scale AVX2 kernel (t2UniAVX2):
// 0 wherever the plain AVX2 flavour runs (t2AVX2Wide), −1 never (tests and speed reports set
// it).
var t2UniAVX2Mode = 0

// t2UniAVX2 reports whether turbo2 rows of d values score through multiScoresT2UAVX2I.
func t2UniAVX2(d int) bool {
	return t2UniAVX2Mode >= 0 && tq4AVX2Int && t2AVX2Wide() && d%64 == 0 && d > 0 && d <= 1024
}

// uniDigitsAVX2 is vnniDigitsUniQ (at qmax) and uniWiden (at lmid) for four queries of finite
// values (gen_tq4avx2.go, uniDigitsText): the same digits, widened digits, block scale words
// aux[24·b + h] and off[8..15] bit for bit (the other aux words not written); false, having
// written part of them, where a value is ±Inf or NaN (the Go functions then say what to do).
//
//go:noescape
func uniDigitsAVX2(dig *byte, aux *uint32, wide *byte, q *float32, d, nb int, off *float32, qmax, lmid int) bool

// turbo4's uniform-scale AVX2 scores kernel (multiScoresT4UAVX2I, gen_tq4avx2.go's
// groupPipeU) is turbo3's route (multiScoresT3UAVX2I) for its nibbles: the queries rounded
// with one scale each to |Q| ≤ 78 (t4UniQMax), the nibbles looked up as u = L + 104 (0..208,
// tq4AVX2U; 2·208·78 = 32448 keeps VPMADDUBSW's pair sums from saturating), one VPMADDUBSW,
// VPMADDWD and VPADDD a (code vector, query) where the per-group kernel takes five, the row's
// chains converted once after −104·ΣQ is added (exact: |Σ Q·L| ≤ d·78·104 < 2²⁴ for
// d ≤ 2048), times s_h, then the body's row scale times the unit and offset. Scores: Dot(q̃),
// q̃ = s·Q one grid a query with s = max|q|/78 (ScoresGrid's u = (1 + 2⁻⁶)/156).
// tq4 keeps its per-group kernel: through the same route (an f32 row scale) its KL on the
// outlier fixture rose (kvlab ab, ctx 128, seeds 1..16, KVLAB_NO_AVX512, mean change of the
// per-seed KL ± standard error) decode +4.8 % ± 1.8, prompt +2.8 % ± 1.8 (kvlab-tiny-64
// −0.4 % ± 0.8, −0.7 % ± 1.4). turbo4 (same runs): kvlab-tiny-64 decode +0.3 % ± 0.8, prompt
// +3.0 % ± 2.1; the outlier fixture −0.2 % ± 1.5, +0.5 % ± 1.9; q8_0/turbo4 the same bit for
// bit (turbo4 values only).
//
//go:noescape
func multiScoresT4UAVX2I(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// multiScoresT4UAVXVNNI is turbo4's uniform-scale AVX-VNNI scores kernel (gen_tq4avx2.go's
// groupUV): turbo4's uniform route (multiScoresT4UAVX2I) with VEX VPDPBUSD on the levels + 128,
// so the queries at |Q| ≤ 127 (vnniDigitsUni's, widened at −128·ΣQ), not 78, two chains a
// query over the whole row, converted once (exact: |Σ Q·L| ≤ d·127·104 < 2²⁴ for d ≤ 1024).
// Scores: Dot(q̃), q̃ = s·Q one grid a query with s = max|q|/127 (ScoresGrid's whole-row block),
// then the uniform kernels' three float32 roundings (TestT23UniAVX2Scores). A rounding change
// on AVX-VNNI CPUs from multiScoresT4AVXVNNI's per-group grids (the AVX-512 per-group kernels'
// scores), with no AVX-512 twin: kvlab ab --ctx 128 --n 64 --threads 1, KVLAB_NO_AVX512, seeds
// 1..12, against the per-group kernel's binary, mean change of the per-seed KL ± standard
// error (kvlab-tiny-64 / its outlier copy): turbo4 decode −0.7 % ± 1.4 / +1.5 % ± 1.0, prompt
// +2.8 % ± 2.7 / −1.3 % ± 1.0, perplexity +0.02 % / −0.01 %. tq4 keeps its per-group kernel
// (the uniform route raised its outlier KL: t4UniAVX2's comment). Speed: gen_tq4avx2.go's
// groupUV.
//
//go:noescape
func multiScoresT4UAVXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// t4UniVNNIMode picks where turbo4's scores take multiScoresT4UAVXVNNI (t4UniVNNI), as
// t3UniVNNIMode does turbo3's.
var t4UniVNNIMode = 0

// t4UniVNNI reports whether turbo4 rows of d values score through multiScoresT4UAVXVNNI.
func t4UniVNNI(d int) bool {
	return t4UniVNNIMode >= 0 && tq4AVX2Int && !hasVNNIBW && hasAVXVNNI && d%32 == 0 && d > 0 && d <= 1024
}

// tq4AVX2U is tq4Ints + 104 as unsigned bytes: turbo4's uniform kernel's VPSHUFB table.
var tq4AVX2U = func() (t [16]byte) {
	for k, v := range tq4Ints {
		t[k] = byte(int(v) + 104)
	}
	return t
}()

// t4UniQMax is the largest |Q| of turbo4's uniform-scale AVX2 digits.
const t4UniQMax = 78

// t4UniAVX2Mode picks where turbo4's scores take the uniform-scale AVX2 kernel (t4UniAVX2): 0
// wherever the plain AVX2 flavour runs (tq4AVX2Int without AVX-VNNI), −1 never (tests and
// speed reports set it).
var t4UniAVX2Mode = 0

// t4UniAVX2 reports whether turbo4 rows of d values score through multiScoresT4UAVX2I.
func t4UniAVX2(d int) bool { return plainUniAVX2(t4UniAVX2Mode, d) }
