//go:build amd64 && !purego

package kvq

import (
	"cmp"
	"math"

	"github.com/kvlab/kvlab/internal/isa"
	"golang.org/x/sys/cpu"
)

// hasVNNI reports the AVX-512 VNNI q4_0, q4_1 and q8_0 scores kernels (multi_vnni_amd64.s), which
// also use AVX-512 DQ and BW (the header-register kernels' byte-masked loads and word
// permutes; every CPU with VNNI so far has both; checked all the same).
var hasVNNI = hasAVX512 && isa.AVX512VNNI && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW

// vnniStaged makes the q4_0, q4_1 and iq4_nl VNNI scores take the kernels that stage the rows'
// block headers through memory (multiScoresQ40VNNI, multiScoresQ41VNNI, multiScoresIQ4NLVNNI,
// multiScoresIQ4NLVBMI) in place of the ones that read them into registers (the same names
// with Hdr; multi_vnni_amd64.s says how): the same scores bit for bit (TestVNNIHeaderRegs).
// For the tests only: the reference twin, and the comparison of TestVNNIHeaderRegsSpeed. On AMD
// Zen 4 (4096 rows of 128 values, 4 queries, thread CPU time, alternated, medians), ns a row,
// staged → registers: q4_0 4.88 → 4.50 in cache, 5.24 → 4.92 streamed; q4_1 5.35 → 4.84,
// 5.82 → 5.28; iq4_nl 5.34 → 4.90, 5.66 → 5.32. In the one-thread decode at the bench shape
// (native/attn TestDecodeBreakdown, 131072 cells, 7 alternations, load ~2.4), the scores
// phase, ns a cell: q4_0 5.02 → 4.68, q4_1 5.57 → 5.04, iq4_nl 5.60 → 5.15.
var vnniStaged bool

// multiScoresQ40HdrVNNI, multiScoresQ41HdrVNNI, multiScoresIQ4NLHdrVNNI and
// multiScoresIQ4NLHdrVBMI are the kernels without Hdr with the rows' block headers read into
// registers four blocks at a time (vnniStaged); stage is not used.
//
//go:noescape
func multiScoresQ40HdrVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ41HdrVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresIQ4NLHdrVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresIQ4NLHdrVBMI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// vnniHdrZ4 makes the header-register kernels take their flavours for AMD Zen 4 (zen4Stream;
// the same names with Z4): they also prefetch every line of the rows 32 KiB past the near
// prefetches into L2 (PREFETCHT1; multi_vnni_amd64.s's HDRFAR), read a whole chunk's headers
// by plain loads (HDRR18U, HDRR20U), q4_0's and q4_1's load each block's payloads by 128-bit
// loads and inserts (LOAD4Y) in place of merge-masked loads, and q4_0's converts each block's
// scales from a copy of the chunk's in its frame (HDRK18Z4) in place of moving them down: the
// same scores bit for bit (TestVNNIHeaderRegs, TestVNNIHeaderRegsGuard). Measured on AMD Zen 4
// (EPYC Genoa, shared 2 vCPUs, load 5–24), ns a row, min:
//   - the far prefetches alone (native/attn TestDecodeBreakdown at the bench shape, 131072
//     cells, 32/8 heads, d 128, one thread, keys on 2 MiB pages; test binaries alternated 8
//     times, twice; the scores phase, min of the runs' minima): q4_0 4.26 → 4.18, 4.24 →
//     4.11; iq4_nl 4.41 → 4.26, 4.43 → 4.22; q4_1 4.43 → 4.42, 4.38 → 4.33. With the keys in
//     L2/L3 first (KVLAB_TOUCH=k) the near kernels took ~4.0, 4.2, 4.2: the far prefetches
//     take about half of the wait on memory away. 8, 16 and 64 KiB in place of 32 scored
//     alike (q4_0 4.14, 4.07, 4.09 against 4.07, and 4.18 near only); the far PREFETCHT1
//     alone, no near PREFETCHT0, 4.17 (near only 4.14). In TestVNNIHdrZ4Speed (4096 rows of
//     128 values, 4 queries, streamed over 96 MiB on 2 MiB pages) streamed q4_0 4.68 → 4.34,
//     q4_1 4.90 → 4.66, iq4_nl 4.77 → 4.51; in cache 0.00–0.05 slower (five prefetches more a
//     block).
//   - then LOAD4Y and the plain header loads (the same decode test, 10 alternations, against
//     the far prefetches alone): q4_0 4.15 → 3.99 (median 4.27 → 4.10), q4_1 4.35 → 4.19
//     (4.47 → 4.30); iq4_nl 4.28 → 4.63 with LOAD4Y (its VPERMB or VPSHUFB lookups and the
//     inserts share the shuffle pipes), so iq4_nl keeps LOAD4M: 4.27 → 4.30 with the plain
//     header loads alone (median 4.42 → 4.37), within the noise. q4_0 alone, in cache
//     (4096 rows, alternated): LOAD4Y 4.06 → 3.99, the plain header loads 4.08 → 4.05, both
//     3.99.
//   - then q4_0's scales from the frame (the same decode test, 10 alternations): 3.94 → 3.78
//     (median 4.06 → 3.84); in TestVNNIHdrZ4Speed's cache 3.97 → 3.77, 3.96 → 3.82. For q4_1
//     (its four header vectors stored, scales and minima converted from there, no extract and
//     no moves) 4.11 → 4.10 in the decode, in cache 4.13 → 4.07, streamed 4.38 → 4.46; for
//     iq4_nl 4.20 → 4.24, in cache 4.15 → 4.14, streamed 4.46 → 4.53: not kept.
//   - all of it against the kernels before, in the decode (10 alternations, three times, load
//     11–16, 11–16, 1): scores q4_0 4.48 → 3.96, 4.25 → 3.82, 4.16 → 3.75 (median 4.21 →
//     3.85); q4_1 4.51 → 4.28, 4.30 → 4.21, 4.34 → 4.14; iq4_nl 4.64 → 4.56, 4.39 → 4.20,
//     4.45 → 4.23; the whole decode at load 1 q4_0 9.44 → 9.08, q4_1 10.74 → 10.44, iq4_nl
//     10.18 → 9.76. With the keys in L2/L3 first (KVLAB_TOUCH=k) 3.83, 4.17, 4.13: what is
//     left is arithmetic. kvlab bench attn --ctx 131072 --heads 32 --kv-heads 8 --head-dim 128
//     --threads 1 (three alternations, load 1–2.5, best round, ms): q4_0 10.14, 10.57, 10.16
//     → 9.52, 9.55, 9.70; q4_1 11.42, 11.38, 12.14 → 10.94, 11.12, 11.05; iq4_nl 11.43,
//     11.46, 12.59 → 11.30, 11.48, 11.43 (f16 21.6–23.8 in both).
//   - all of it against the kernels before (TestVNNIHdrZ4Speed, two runs): q4_0 in cache
//     4.01 → 3.77, 4.02 → 3.82, streamed 4.67 → 3.97, 4.68 → 4.21; q4_1 in cache 4.24 → 4.12,
//     streamed 4.94 → 4.36, 4.98 → 4.42; iq4_nl in cache 4.22 → 4.18, 4.21 → 4.15, streamed
//     4.80 → 4.45, 4.84 → 4.64.
//
// Not kept (q4_0, in cache, alternated): LOAD4M's masked loads zero-masked and ORed
// (VPTERNLOGD, VPORD) in place of merged, 4.06 → 4.48: the merge-masked loads take no
// vector ALU operation here; a whole chunk's headers by four word-masked loads a group of
// four rows (row m's four headers, 9 words apart, into words m, m+9, m+18, m+27 of one
// vector) and four VPERMI2W, 4 word permutes a chunk in place of 16 shuffles, 4.04 → 4.07.
// What the headers cost (0.34 ns a row: 4.05 → 3.71 without them, wrong scores, timing
// only) is not their shuffles (nor, with LOAD4Y and the frame's queue, 4.43 → 4.42 at a
// slower hour). The query digits as register operands in place of the 32 VPDPBUSD's
// broadcasts from memory (wrong scores, timing only) took 4.05 → 3.87. On the final q4_0
// kernel: two chains a query (CHAINS1, FINISH1) 3.79 → 3.85; LOAD4Y for two of the four
// quads and LOAD4M for the others 3.95 → 4.03 (iq4_nl 4.39 → 4.43). The near prefetches 2
// or 8 groups ahead in place of 4 with the far ones: within noise in the decode. iq4_nl's
// Z4 flavour without VBMI (VPSHUFB) stays slower than with it: 4.33 against 4.16 in cache.
//
// Later, iq4_nl's VBMI flavour took q4_0's frame of scales after all, with its payloads by
// 256-bit masked loads and one insert a quad (LOAD4Q): in cache 4.25 → 3.94, streamed 5.00 →
// 4.65; in the decode (TestDecodeBreakdown at the bench shape, test binaries alternated, load
// 10–24, medians of the runs' minima over 13 and 9 runs) the scores 4.32 → 3.95 and the whole
// 10.07 → 9.78 (multi_vnni_amd64.s, multiScoresIQ4NLHdrZ4VBMI).
//
// Intel CPUs (intelCPU) take the Z4 flavours too: on an Intel Xeon (family 6 model 167,
// Sapphire Rapids class, 2 shared vCPUs, load 5–12; TestVNNIHdrZ4Speed: 4096 rows of 128
// values, 4 queries, alternated in one process, ns a row min/median, two runs) without → with
// Z4, in cache q4_0 4.03/4.06 → 3.68/3.70 and 4.60/4.75 → 4.15/4.28, q4_1 4.19/4.24 →
// 4.04/4.06 and 4.73/4.89 → 4.45/4.59, iq4_nl 3.69/4.06 → 3.56/3.67 and 4.84/5.00 →
// 4.79/4.95; streamed (96 MiB on 2 MiB pages) q4_0 6.29/6.82 → 5.47/5.83 and 6.71/7.10 →
// 5.95/6.24, q4_1 7.43/7.82 → 6.35/6.47 and 7.69/7.82 → 6.48/6.69, iq4_nl 6.66/6.77 →
// 5.67/5.84 and 6.93/7.17 → 6.39/6.65; under KVLAB_NO_AVX512VBMI (iq4_nl's VPSHUFB flavour)
// iq4_nl 4.69 → 4.64 in cache, 6.84 → 6.37 streamed. In the decode (native/attn
// TestDecodeBreakdown at the bench shape, test binaries alternated six times, load ~6, ns a
// row min/median of the runs' minima) the scores q4_0 7.05/7.22 → 6.00/6.38, q4_1 7.48/7.83 →
// 6.92/7.13. q4_1's kernel without Z4 with the far prefetches alone (PF20Z4; HDRFAR 16, 32 or
// 64 KiB) took 5.00–5.19 streamed where its Z4 flavour took 4.79 and the kernel before 5.46,
// and 4.32 in cache against 4.05 and 4.20: LOAD4Q and HDRR20P pay on Intel too, although the
// instruction tables count more port-5 µops for them. Zen 5 keeps the kernels without Z4.
var vnniHdrZ4 = zen4Stream || intelCPU

// hdrIntel makes Intel CPUs (intelCPU) take the header-register kernels' Intel flavours
// (multiScoresQ40HdrIntelVNNI, multiScoresQ41HdrIntelVNNI, multiScoresIQ4NLHdrIntelVBMI) over
// contiguous rows where the scores do not overlap (out stride 16 bytes or more; the decode's
// four queries a KV head): the Z4 flavours' code taking the call's groups of sixteen rows from
// its two halves in turn (two streams, each read in order), their near prefetches (PREFETCHT0)
// two groups on in the group's own stream in place of four, and no far ones (PREFETCHT1 HDRFAR
// on): the same scores bit for bit (TestVNNIHeaderRegs, TestVNNIHeaderRegsGuard). A paged
// cache's runs keep their runs flavours (hdrRuns).
//
// Measured on an Intel Xeon (family 6 model 167, Sapphire Rapids class, KVM, 2 vCPUs shared
// with other jobs, load ~10): native/attn TestDecodeBreakdown at the bench shape (131072 cells,
// 32/8 heads, d 128, one thread, rows on 2 MiB pages), test binaries of main and of this
// alternated ten times, ns a row, median of the rounds' minima (the paired median difference,
// lower in): the scores q4_0 6.72 → 5.71 (−1.12, 10 of 10), q4_1 7.62 → 6.22 (−1.45, 10 of
// 10), iq4_nl 6.88 → 5.63 (−1.16, 10 of 10); the whole decode q4_0 14.36 → 12.96 (−1.40), q4_1
// 15.48 → 14.12 (−2.25), iq4_nl 14.61 → 12.91 (−1.53), lower in 10 of 10 each (the values
// phase after the scores −0.13 to −0.70 too). Of that, the near prefetches alone at two groups
// (one stream, no far ones), the same binary switched by a scratch variable (12 paired rounds,
// load ~8, q4_0): scores −0.20, whole −0.62 (10 of 12); the two streams on top (8 rounds): scores
// q4_0 −0.90, q4_1 −0.95, iq4_nl −0.69 (8 of 8 each). Per-line figures from a scratch loop of
// q4_0's access shape (16 rows of 72 bytes, four passes of 16-byte loads, five PREFETCHT0 a
// pass; 256 MiB on 2 MiB pages): 17.5 GB/s with the PREFETCHT0 2304 bytes on, 12.9 at 4096 and
// 11.9 at 4608 (PFGROUPS four), 15.0 at 4608 with PREFETCHT1 32 KiB on as Zen 4's; in the kernel
// streamed in 4096-row calls (ns a row min) the Zen 4 flavour 5.99, PREFETCHT0 two groups on
// alone 5.49, four groups alone 6.40, no prefetches 6.21. Not kept: PREFETCHT1 2 KiB past the
// two-group PREFETCHT0 (q4_0's scores −0.12 against the Zen 4 flavour where the PREFETCHT0 alone
// took −0.20), PREFETCHT0 one group on (1152 bytes: 5.60 against 5.23 streamed in that harness);
// with the two streams, two sparse PREFETCHT1 32 KiB on a block step (at +0 and +192 of its 320
// or 384 bytes, as q5's Intel kernels take; eight paired rounds, load ~15): scores q4_0 +0.15,
// q4_1 +0.08, iq4_nl +0.29, whole +0.23, +0.25, +0.63.
var hdrIntel = intelCPU

// twoStreamRows is the fewest rows a call over which the Intel two-stream scores kernels
// (hdrIntel, q80IntelTwo, tq4X, q50Split, q51Split) run; shorter calls take the kernels before them. Over a paged cache
// read a page of 64 rows a call (kvcache TestPagedDecodeSpeed's baseline arm, 32768 cells, two
// alternations, load ~6) q8_0's two-stream kernel took 14.7 ms against 13.2–13.7 (iq4_nl's
// alike, 10.0–10.1); with this bound (the kernel before) 12.2–13.1 against 11.8–12.6 in other
// runs (noise). The decode's calls are chunks of thousands of rows. A variable for the
// tests, which take the kernels over fewer rows.
var twoStreamRows = 512

// twoStreamCall reports whether a scores call of m rows, its scores ostride bytes apart, suits
// the Intel two-stream kernels (hdrIntel, q80IntelTwo, tq4X, q50Split, q51Split): m at least twoStreamRows, and
// ostride at least 16 bytes, below which adjacent rows' stores overlap and the two streams'
// group order would break them.
func twoStreamCall(m, ostride int) bool { return ostride >= 16 && m >= twoStreamRows }

// q80IntelTwo makes Intel CPUs (intelCPU) take multiScoresQ80OneIntelTwoVNNI for q8_0's
// one-digit scores over contiguous rows where the scores do not overlap (out stride 16 bytes
// or more): multiScoresQ80OneIntelVNNI's code taking the call's groups of sixteen rows from its
// two halves in turn, the same scores bit for bit (TestQ80IntelMatches). Measured on an Intel
// Xeon (family 6 model 167, KVM, 2 shared vCPUs, load ~13): native/attn TestDecodeBreakdown at
// the bench shape (131072 cells, 32/8 heads, d 128, one thread), the two kernels switched in one
// binary by a scratch variable, ten paired rounds, ns a row, median of the rounds' minima: the
// scores 12.21 → 10.26 (paired −2.02, lower in 10 of 10), the whole decode 23.55 → 21.30 (−2.47,
// 10 of 10), the values phase after them 11.02 → 10.36. Not kept (same harness, 16 rounds,
// load ~11, against multiScoresQ80OneIntelVNNI, one stream): a PREFETCHT1 of every line 32 KiB
// past its PREFETCHT0 scores −0.66 (15 of 16) but the values after them +0.22 (5 of 16 lower),
// and test binaries alternated ten times: whole +0.34; 8 KiB past it scores −0.71, values +0.48;
// with the two streams, three sparse PREFETCHT1 32 KiB on a block step (one per 192 bytes; eight
// paired rounds, load ~15): scores +0.10, whole −0.31 (4 of 8), within noise.
var q80IntelTwo = intelCPU

// multiScoresQ80OneIntelTwoVNNI is q8_0's one-digit scores kernel for Intel (q80IntelTwo).
//
//go:noescape
func multiScoresQ80OneIntelTwoVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// multiScoresQ40HdrIntelVNNI, multiScoresQ41HdrIntelVNNI and multiScoresIQ4NLHdrIntelVBMI are
// the Intel flavours (hdrIntel).
//
//go:noescape
func multiScoresQ40HdrIntelVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ41HdrIntelVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresIQ4NLHdrIntelVBMI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// multiScoresQ40HdrZ4VNNI, multiScoresQ41HdrZ4VNNI, multiScoresIQ4NLHdrZ4VNNI and
// multiScoresIQ4NLHdrZ4VBMI are the kernels above for AMD Zen 4 and Intel (vnniHdrZ4).
//
//go:noescape
func multiScoresQ40HdrZ4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ41HdrZ4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresIQ4NLHdrZ4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresIQ4NLHdrZ4VBMI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// hasVNNIBW reports the iq4_nl, q5_0 and q5_1 VNNI kernels, which also use AVX-512 BW byte
// operations (VPSHUFB, VPTESTMB, masked VPADDB, VPERMI2W).
var hasVNNIBW = hasVNNI && cpu.X86.HasAVX512BW

// q4_0, q4_1, q5_0, q5_1, q8_0 and iq4_nl scores through VNNI. Each query's block of 32 values
// is quantized to integers Q = round(q/s), s = max|q over the block| / qmax, as llama.cpp
// quantizes the query of its q4_0 and q8_0 dots: one signed byte per value (qmax 127), but two
// signed bytes (Q = hi·2⁸ + lo, qmax vnniQMax2) for q8_0, whose own error is small
// enough that an int8 query measurably raised its KL. The kernels form the digits' dots with
// the codes exactly in int32 (VPDPBUSD, one row per lane), combine them into Σ Q·c (c the
// codes, their offset −8, −16 or −128 included; exactly in int32), convert it and add s·d·Σ to
// the score (d the row's block scale), for q4_1 and q5_1 s·(d·Σ + m·ΣQ) (m the block's
// minimum; three roundings, as the two terms apart took four). The only departure from the
// float kernels is the query's quantization: with q̃ = s·Q the query on the kernels' grid
// (vnniGrid), |q − q̃| ≤ (1 + 2⁻⁶)·max|q_b| / (2·qmax) per value, and
//
//	|DotManyMulti − Dot(q̃)| ≤ 1e-5·Σ_i |q̃[i]·x[i]|,
//	|DotManyMulti − Dot|    ≤ (1 + 2⁻⁶)/(2·qmax)·Σ_b max_{i∈b}|q[i]|·Σ_{i∈b}|x[i]| + 1e-5·Σ_i |q[i]·x[i]|,
//
// the 1e-5 term the float rounding of the converted block dots (one rounding for q8_0's
// 28-bit ones), their scaling and the sum over blocks, as for the float kernels. A block with
// max|q| below qmax·2⁻¹²⁶ counts as zero (vnniQuant), which the second line then misses by at
// most 2⁻¹¹²·Σ_{i∈b}|x[i]|. A row's score
// depends only on its own bytes and the query: rows run sixteen at a time, one per lane, and a
// short last group is padded with zero rows.

// vnniQMax1 and vnniQMax2 are the largest |Q| of one and two digits: 127, and 127·2⁸ + 127, so
// every digit fits a signed byte (the low one in −128..127).
const (
	vnniQMax1 = 127
	vnniQMax2 = 127<<8 + 127
)

// vnniBlockBytes is one block's digits at two digits a value (four queries × two × 32 bytes;
// one digit takes half); vnniAuxWords its scales and offsets (vnniDigits).
const (
	vnniBlockBytes = 4 * 2 * 32
	vnniAuxWords   = 24
)

// vnniMaxBlocks is the largest row (in 32-value blocks) whose buffers live on the stack.
const vnniMaxBlocks = 8

//go:noescape
func vnniDigitsAVX512(dig *byte, aux *uint32, q *float32, d, nb, nd int) bool

//go:noescape
func multiScoresQ40VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ41VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ50VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ51VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// q5ScoresGFNI reports that q5_0's and q5_1's scores take multiScoresQ50GFNI and
// multiScoresQ51GFNI (AVX-512 BITALG and GFNI; hidden with VBMI by the KVLAB_NO_AVX512VNNI and
// KVLAB_NO_AVX512VBMI switches), whose scores are the VNNI kernels' bit for bit
// (TestQ5ScoresGFNI). Measured on AMD Zen 4 (TestQ5ScoresGFNISpeed: 4096 rows of 128 values,
// four queries, thread CPU time, alternated, medians of two runs), ns a row, VNNI → GFNI:
// q5_0 5.62 → 5.25 in cache, 6.4 → 6.2 streamed; q5_1 6.05 → 5.75, 7.1 → 7.0. Of that, the
// fifth bits by VPSHUFBITQMB (FIFTHSG) ~0.2 and the high nibbles by one affine transform
// (NIBBLESG) ~0.2, each measured alone; the mask operations stay the dearest part: without
// FIFTHSG, q5_0's kernel took ~0.9 ns less (wrong scores, for the measurement only).
var q5ScoresGFNI = hasVNNIBW && hasBITALG && cpu.X86.HasAVX512GFNI

//go:noescape
func multiScoresQ50GFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ51GFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// q5ScoresZ4 makes q5_0's and q5_1's GFNI scores (q5ScoresGFNI) take their flavours for AMD
// Zen 4 (zen4Stream), multiScoresQ50Z4GFNI and multiScoresQ51Z4GFNI: the q4 Z4 kernels' far
// prefetches into L2 (HDRFAR), their payload loads (LOAD4Y: two 256-bit inserts and one
// 512-bit one a vector of four rows in place of three 512-bit inserts) and one VPDPBUSD chain
// a query (CHAINSM: four VPADDD and four zeroed chains a block fewer). The same int32 sums and
// float operations, so the same scores bit for bit (TestQ5ScoresZ4). Measured on AMD Zen 4
// (EPYC Genoa, 2 shared vCPUs, load 10–22), ns a row, GFNI → Z4:
//   - TestQ5ScoresZ4Speed (4096 rows of 128 values, 4 queries, thread CPU time, alternated in
//     one process, 200 calls in cache, 20 passes over 96 MiB on 2 MiB pages; min/median):
//     q5_0 in cache 5.16/5.32 → 4.76/4.91, streamed 5.85/6.00 → 5.13/5.43; q5_1 in cache
//     5.67/7.09 → 5.14/6.75, streamed 6.44/7.53 → 5.60/6.46 (three earlier runs alike).
//     Without the far prefetches (the near ones as before) in cache the same, streamed q5_0
//     5.52–5.59, q5_1 5.89–5.99: they take ~0.4 of the streamed gain.
//   - native/attn TestDecodeBreakdown at the bench shape (131072 cells, 32/8 heads, d 128, one
//     thread, keys on 2 MiB pages; test binaries alternated six times, load ~15), the scores
//     phase, min of each run, median over runs: q5_0 5.42 → 4.98, q5_1 5.98 → 5.31 (lower in
//     six of six each), the whole step 14.54 → 14.12 and 14.14 → 13.46; six alternations at
//     load ~20: q5_0 5.56 → 5.12 (four of six), q5_1 6.02 → 5.46 (six of six).
//   - kvlab bench attn (wall clock) at load 12–22 was too noisy to read (main's q5_0 took
//     0.52–0.72 of f16's time across three runs).
//
// Where the Z4 kernels' time goes (TestQ5ScoresZ4Speed in cache, a piece taken out, wrong
// scores, timing only; q5_0 4.76, q5_1 5.14 whole): FIFTHSG 0.8 (q5_0 3.96, q5_1 4.22 without
// it; its eight VPSHUFBITQMB 0.42 and eight masked VPADDB 0.38: ~0.05 ns a row for each
// operation a block, as any other), the headers (HDRI) 0.23 (4.51–4.54, 4.91).
//
// Not kept (same speed test, in cache/streamed min): the high nibbles by shift and mask
// (NIBBLES4S) in place of NIBBLESG's affine transforms, q5_0 4.99–5.00 / 5.30–5.35, slower
// than with them; the fifth bits merged by bit logic in place of FIFTHSG's masks (each lane's
// qh bit-transposed by two GF(2) affine transforms with the qh qwords as the matrix and a
// VPTERNLOGQ, then per transposed payload dword one affine transform making both codes' fifth
// bits, two VPTERNLOGD merging them with the nibbles and one affine transform moving the high
// ones down: 24 operations a block for NIBBLESG and FIFTHSG's 24, four of them register
// moves, no mask operations), bit for bit the same scores: q5_0 4.77–4.78 / 5.12–5.33, q5_1
// 5.23 / 5.53–5.61, the Z4 kernels' within the noise (likely the affine transforms share
// the multiply pipes with the 32 VPDPBUSD a block, as q4_0's NIBBLESG measurement suggested).
//
// Later, also not kept (AMD Zen 4, TestQ5ScoresZ4Speed's harness, the Z4 kernels alternated
// with each variant in one process, 200 calls in cache, 10–20 passes streamed over 2 MiB
// pages, three to five runs; ns a row, min, q5_0 / q5_1; Z4 in cache 4.75–4.83 / 5.16–5.22,
// streamed 5.41–5.76 / 5.64–5.74):
//   - the eight masks loaded by KMOVQ from a 64-byte nibble transpose of the qh dwords (two
//     VPERMI2B, one affine nibble swap, one VPTERNLOGD, one store; qword k byte j = nibble k
//     of lanes 2j and 2j+1) in place of the eight VPSHUFBITQMB: the transpose in the block
//     that reads it 6.02–6.10 / 6.44–6.66 in cache (the 8-byte loads wait for the 64-byte
//     store to reach the cache); in a pass over the group's blocks before them (their scales
//     staged with it) 5.02–5.12 / 5.44–5.47, streamed 6.00–6.04 / 5.84–5.96. The transpose
//     alone (its masks unused) cost 0.2–0.45; the masks' loads alone (stale bytes, wrong
//     scores, timing only) took 4.51–4.58 / 4.86–4.90, streamed 5.05–5.43 / 5.21–5.32: the
//     eight VPSHUFBITQMB cost ~0.3, no more than any transpose that replaces them.
//   - the payloads by LOAD4Q (as q4_0's Z4 kernel): 4.78–4.96 / 5.21–5.35, streamed
//     5.42–5.77 / 5.61–5.78.
//   - five of the eight VPSHUFBITQMB controls held in registers (the rest from memory):
//     4.69–4.81 / 5.17–5.25, streamed 5.30–5.70 / 5.61–5.70, within the noise.
//
// Each code vector takes three operations (its nibbles, its mask, the masked add): one
// VPTERNLOGD could merge a fifth-bit byte into the nibbles only if that byte were clean in
// bits 5..7, which takes an operation of its own. Without the fifth bits at all (FIFTHSG out,
// above) q5_0's whole decode step would still take ~13.3 ns a row (native/attn
// TestDecodeBreakdown at the bench shape: whole 14.13, scores 5.03).
//
// Other CPUs keep the GFNI kernels: not measured (on Intel the inserts are port-5 shuffles,
// as LOAD4Y's comment says).
var q5ScoresZ4 = zen4Stream

// q51ScoresX makes q5_1's GFNI scores (q5ScoresGFNI) take multiScoresQ51Z4GFNI's code on Intel
// CPUs (intelCPU) too, as multiScoresQ51XGFNI: the same scores bit for bit (TestQ5ScoresZ4). A
// paged cache's runs take its runs flavour with Intel's values kernel's (q5RunsIntel). The figures below are for
// multiScoresQ51Z4GFNI itself, before multiScoresQ51XGFNI. Measured on an Intel Xeon (KVM, 2 shared vCPUs; AVX-512 with VNNI, VBMI, BITALG,
// GFNI, FP16) in the one-thread decode at the bench shape (attn's TestDecodeBreakdown shape:
// 131072 cells, 32 heads on 8 KV heads, d 128; the kernels switched in one process round by
// round, 15 rounds, min/median ns a row), the scores phase: GFNI 9.31/9.85 → 8.53/8.97 (load
// 8–12 on the 2 vCPUs; other runs: 9.11/9.55 → 8.36/8.58, 9.64/9.98 → 8.55/8.80). Of the Z4
// flavour's changes its far prefetches (HDRFAR, 32 KiB on, into L2) make the gain: with its
// PREFETCHT0 alone it scored as GFNI (9.70/9.86); 16 or 64 KiB on in place of 32 within the
// noise (8.40–8.63); its payloads by LOAD4 (inserts) or LOAD4M (merge-masked loads) in place of
// LOAD4Y, and two chains a query (CHAINS1) in place of CHAINSM, within the noise too. Where the
// Z4 flavour's time goes there (pieces taken out, wrong scores, timing only, the same harness):
// its 32 VPDPBUSD a block 0.6–0.9 ns a row, FIFTHSG 0.75–0.8, HDRI, TRANSPOSE4 and the
// payload loads nothing measurable each.
var q51ScoresX = intelCPU

// multiScoresQ51XGFNI is multiScoresQ51Z4GFNI with the fifth bits by multiScoresQ51VNNI's
// shuffle and mask tests in place of VPSHUFBITQMB (a VPSHUFB a pair of code vectors and a
// VPTESTMB each: on this Intel a zmm VPSHUFBITQMB costs about two other vector operations):
// the same scores bit for bit (TestQ5ScoresZ4). q5_1 takes it where q51ScoresX (and not
// q5ScoresZ4). Intel Xeon (as q51ScoresX; TestQ5ScoresGFNISpeed's harness, the kernels
// alternated in one process, 200 calls in cache, two runs, load ~25, ns a row min/median):
// Z4 5.15–5.16/5.22–5.31 → 4.85–4.86/5.16–5.26 in cache (the VNNI kernel 5.16–5.17, GFNI
// 5.28–5.29); streamed (10 passes over 64 MiB) 12.35–12.39 → 12.48–12.82 min, memory-bound at
// that load. In the decode's scores phase (as q51ScoresX, 15 rounds, three runs) Z4 → this
// 8.82 → 8.60, 8.69 → 8.75, 8.60 → 8.30 min; TestDecodeBreakdown (q5_1, test binaries with
// the Z4 and this kernel alternated six times, load ~20, min ns a row) scores 8.15–8.66 →
// 7.91–8.30, whole 18.22–19.32 → 17.42–18.18 (lower in six of six).
//
// Its far prefetches then went from six lines a block (PF20Z4's) to two 192 bytes apart (PF20X),
// as multiScoresQ50XGFNI's (q50ScoresX): TestDecodeBreakdown, KVLAB_SPEED_FORMATS=q5_1, test
// binaries alternated run by run (Intel Xeon, load 1–4), paired rounds, median of the
// differences of each round's mins, ns a row: scores −0.64 (lower in 19 of 20; 8.05 → 7.42),
// whole −0.85 (17 of 20; 17.55 → 16.90); in an earlier 16 rounds scores −0.50 (16 of 16),
// whole −0.59 (14 of 16). Tried again with gen_intacc.go's q51XSparse (the same test, the
// flavours switched process by process, five runs, load ~10, scores ns a row min): PF20X
// 7.82–8.18; its two far lines 48 KiB on in place of 32, 7.85–8.06; three (0, 128, 256)
// 8.84–9.77; one (0) 8.24–8.70. Two lines in six is the optimum here, and denser costs more
// than sparser. Two streams of rows with these far prefetches kept (f16's
// multiScoresF16Split's shape: the groups of sixteen rows taken alternately from the call's
// first half and its second; test binaries alternated ABBA, load ~12, paired median
// differences, scores/whole) did not pay: the PREFETCHT0 two of a stream's own groups on
// −0.15/−0.63 (q5_0, lower in 7 and 8 of 12) and −0.05/+0.26 (q5_1); one group on +0.25/+0.02
// and +0.10/+0.03 (ten runs). Without them they do: q50Split, q51Split.
//
// Its headers then came by HDRT (each row's first 16 bytes loaded as the payloads are, four
// unpacks, one VPERMW for d and m) in place of HDRI's eight inserting loads, six inserts, a
// VPERMI2D and a VPERMI2W, as multiScoresQ50XGFNI's: on the Intel Xeon (load 6–11), the
// kernels alternated in one process (TestQ5ScoresZ4Speed's harness, 200 calls of 4096 rows in
// cache, three runs, ns a row min) 5.09–5.40 → 4.82–5.10; native/attn TestDecodeBreakdown
// (KVLAB_SPEED_FORMATS=q5_0,q5_1, test binaries alternated, ns a row, min of 5 each) scores
// phase with the rows in cache (KVLAB_TOUCH=kv) 7.32–7.76 → 6.86–7.21 (lower in 5 of 5, median
// 7.45 → 6.98); streamed at that load (f16 ~41 ns a row: memory ~12 GB/s) 8.70–9.44 →
// 8.90–9.66, memory-bound.
//
// Where its time went before that (the same in-cache harness, load ~6, pieces taken out of a
// copy, wrong scores, timing only; whole 4.96–5.10 ns a row): the 32 VPDPBUSD a block −1.4,
// FIFTHX −1.0, HDRI −0.7, FINISHES41M −0.6, TRANSPOSE4 −0.2, the prefetches nothing in cache
// (+3.2 streamed). Not kept: the payloads and headers by merge-masked 512-bit loads (LOAD4M at
// offsets 0 and 8, no inserts) in place of LOAD4YO, 5.57 → 6.19 (two runs); the fifth bits by
// two VGF2P8AFFINEQB with the qh vector as the matrix (a constant byte 1 << c picks bit c of
// each of a qword's eight qh bytes: row 2j's at bits 7..4, row 2j+1's at 3..0, for bits i, 8+i,
// 16+i, 24+i with c = i and 4+i with c = 4+i) and eight VPTESTMB against four tables of one bit
// for each row of a qword, no VPSHUFB (18 operations a block, 8 of them shuffles or mask
// tests, where FIFTHX takes 20 and 12), bit for bit the same scores: 4.96–5.11 → 4.92–5.05
// (three runs), within the noise.
//
//go:noescape
func multiScoresQ51XGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// q50ScoresX makes q5_0's GFNI scores (q5ScoresGFNI) take multiScoresQ50XGFNI on Intel CPUs
// (intelCPU), as q51ScoresX does q5_1's: the same scores bit for bit (TestQ5ScoresZ4). Before
// it, Intel took multiScoresQ50VNNI in place of multiScoresQ50GFNI (TestQ5ScoresGFNISpeed, 4096
// rows of 128 values, in cache, ns a row min, GFNI → VNNI: 5.03–5.45 → 4.85–5.25; streamed
// 9.5–10.9 both): the GFNI kernel's VPSHUFBITQMB and VGF2P8AFFINEQB issue one a cycle there. The gain is q5_1's: the far prefetches into L2
// (HDRFAR) in the decode's streamed scores. Measured on an Intel Xeon (KVM, 2 shared vCPUs,
// load 4–6) in native/attn's TestDecodeBreakdown at the bench shape (KVLAB_SPEED_FORMATS=q5_0;
// test binaries of stage and this alternated run by run, 10–20 runs each, the median over runs
// of each run's min, ns a row), scores phase multiScoresQ50VNNI → this: 8.13 → 7.65 (10 runs),
// 7.42 → 6.55 (20), 7.60 → 6.97 (16); the whole step 16.88 → 16.42, 15.50 → 14.77, 15.66 →
// 15.45. Not kept (the last of those runs): multiScoresQ50Z4GFNI itself (FIFTHSG's
// VPSHUFBITQMB) 7.31; this with the far prefetches 64 KiB on in place of 32, 7.09.
//
// Its far prefetches then went from six lines a block (PF22Z4's, every line of the rows) to two
// lines 176 bytes apart (PF22X, one a 176 bytes): the same harness (load 3–7), paired rounds,
// median of the differences of each round's mins, ns a row, scores phase: six → two 7.39 →
// 6.67 (lower in 16 of 16 rounds; whole 15.94 → 15.29, 16 of 16; stage's kernel 7.83). Two a
// block at 0 and 192: −0.45 (20 of 20), −0.50; three (0, 128, 256 or 0, 117, 234): −0.14,
// −0.19, −0.17; one (0): −0.05; two at 16 or 64 KiB on in place of 32: −0.49, −0.32. Fewer
// PREFETCHT0 (three a block, at 0, 128 and 256: L1's lines left to its own prefetcher): +0.91,
// with the far ones halved too +0.99; no PREFETCHT0 at all +1.3; the PREFETCHT0 two or eight
// groups of rows ahead in place of four (PFGROUPS) +0.0 and +0.2. With PF22X (16 rounds, load
// 1–4, against it): the PREFETCHT0 two, three or six groups ahead +0.43, +0.24, −0.04; the far
// ones 20 or 48 KiB on +0.01, +0.03. Left at 5.1–5.7 in cache (KVLAB_TOUCH=k) against 6.5–7.2
// streamed. A likely cause (inferred from
// these figures, not counted): if each far PREFETCHT1 holds one of L1's fill buffers until its
// line comes from memory, six a block keep about as many misses in flight as there are fill
// buffers, and the PREFETCHT0s and demand loads wait for them; with two, the L2's streamer
// fetches the lines between without taking them.
//
// Its headers then came by HDRT (each row's first 16 bytes loaded as the payloads are, four
// unpacks, qh by one VPSHRDD (AVX-512 VBMI2), d by one VPERMW) in place of HDRI's eight
// inserting loads, six inserts and two VPERMI2W: on the Intel Xeon (load 6–11), the kernels
// alternated in one process (TestQ5ScoresZ4Speed's harness, 200 calls of 4096 rows in cache,
// three runs, ns a row min) 5.05–5.20 → 4.72–4.86; native/attn TestDecodeBreakdown
// (KVLAB_SPEED_FORMATS=q5_0,q5_1, test binaries alternated, ns a row, min of 5 each) scores
// phase with the rows in cache (KVLAB_TOUCH=kv) 7.16–7.86 → 6.85–7.05 (lower in 5 of 5, median
// 7.54 → 6.99), whole 19.96–20.79 → 19.41–20.32 (median 20.38 → 19.70); streamed at that load
// (f16 ~41 ns a row: memory ~12 GB/s) scores 8.17–9.37 → 7.99–8.36 (median 8.33 → 8.33),
// whole 19.45–22.64 → 19.13–20.47 (median 20.31 → 19.80, lower in 7 of 8). Over a paged
// cache's runs, where this kernel runs too (native/kvcache TestPagedDecodeSpeed, q5_0 and q5_1,
// with gen_intacc.go's q51XTest and q51XQuad, test binaries alternated 13 times, load ~25,
// median ms of the paged arm): q5_0 8.66 → 8.64 (paired −0.01, lower in 7 of 13), q5_1 9.53 →
// 9.56 (+0.08, 6 of 13); the contiguous arm 5.83 → 5.67 and 6.42 → 6.13 (10 of 13 each).
var q50ScoresX = intelCPU && cpu.X86.HasAVX512VBMI2

// multiScoresQ50XGFNI is multiScoresQ50Z4GFNI with the fifth bits as multiScoresQ51XGFNI
// takes them (FIFTHX): q5_0's scores on Intel CPUs (q50ScoresX).
//
//go:noescape
func multiScoresQ50XGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// multiScoresQ50XSGFNI and multiScoresQ51XSGFNI are multiScoresQ50XGFNI and
// multiScoresQ51XGFNI over two streams of rows without their far prefetches (q50Split,
// q51Split): their groups of sixteen rows taken alternately from the call's first half and its
// second, each group's scores theirs bit for bit (TestQ5ScoresZ4); ostride at least 16.
//
//go:noescape
func multiScoresQ50XSGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ51XSGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// q50Split and q51Split make q5_0's and q5_1's Intel scores (q50ScoresX, q51ScoresX) over
// contiguous rows take their two-stream flavours (multiScoresQ50XSGFNI, multiScoresQ51XSGFNI)
// where the scores are at least 16 bytes apart, as f16's multiScoresF16Split reads its rows,
// each stream's PREFETCHT0 two of its own groups on and no far prefetches (PF22XS, PF20XS).
// Paged runs keep the one-stream runs flavours. On an Intel Xeon (family 6 model 167, 2 shared
// vCPUs, load 13–17; native/attn TestDecodeBreakdown at the bench shape, test binaries
// alternated ABBA, ten runs, ns a row of each run's min, min/median, paired median
// difference): scores q5_0 7.02/7.43 → 5.89/7.00 (−0.42, lower in 10 of 10), q5_1 7.54/7.82 →
// 6.23/6.80 (−0.91, 10 of 10); whole q5_0 16.36/17.29 → 15.05/16.95 (−0.51, 6 of 10), q5_1
// 17.39/18.25 → 16.15/17.16 (−0.98, 9 of 10). Not kept (q5_0, one binary, five runs): one stream
// with its PREFETCHT0 two groups on, without the far prefetches 8.70–9.40 against 7.81–8.39,
// with them 8.36–8.94; two streams one own group on 7.73–8.14 against 7.26–7.52 for two.
//
// Calls of fewer than twoStreamRows rows keep the one-stream kernels (twoStreamCall), as the
// other Intel two-stream scores do: TestDecodeBreakdown with KVLAB_CHUNK 64, 128, 256 and 512
// (calls of that many rows; test binaries with and without the bound alternated ABBA, 12
// rounds, load 3–7, scores ns a row min/median, paired median difference): streamed q5_0
// 14.66/16.48 → 14.09/14.69 (−1.77, lower in 12 of 12), 12.36/13.48 → 9.78/10.64 (−2.83, 12 of
// 12), 8.86/10.25 → 8.53/8.87 (−1.33, 12 of 12), q5_1 11.31/14.02 → 11.73/12.96 (−0.79, 9 of
// 12), 12.02/12.67 → 9.48/10.17 (−2.40, 12 of 12), 8.90/10.01 → 8.48/8.82 (−1.11, 12 of 12); at
// 512 (both two streams) +0.01 and +0.09; with the keys in cache (KVLAB_TOUCH=k, 6 rounds)
// −0.34 to +0.15, noise: the one-stream kernels' far prefetches reach the rows the next call
// reads.
var q50Split, q51Split = intelCPU, intelCPU

//go:noescape
func multiScoresQ50Z4GFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ51Z4GFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresIQ4NLVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresIQ4NLVBMI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// iq4ScoresVBMI reports that iq4_nl's scores take multiScoresIQ4NLVBMI (AVX-512 VBMI), whose
// scores are multiScoresIQ4NLVNNI's bit for bit (TestIQ4NLScoresVBMI).
var iq4ScoresVBMI = hasVBMI

//go:noescape
func multiScoresQ80VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// multiScoresQ80Z4VNNI is multiScoresQ80VNNI prefetching into L2 four groups of rows ahead
// (zen4Stream; q80Z4Scores), its scores the same bit for bit. Each query's two digits go
// through one chain (multi_vnni_q80_amd64.h's Q80SHLD): from X = −128·Σhi + ⌊−128·Σlo/2⁸⌋
// (aux[4+h]) the high digit's products are added, VPSHLDD (AVX-512 VBMI2) shifts the chain up
// by 8 bits and shifts r = −128·Σlo mod 2⁸ (0 or 128; aux[8+h] = r·2²⁴) into its low byte,
// and the low digit's products are added: 2⁸·(X + Σ hi·(c+128)) + r + Σ lo·(c+128) =
// 2⁸·Σ hi·c + Σ lo·c, the exact int32 dot that multiScoresQ80VNNI forms from its two chains
// (a VPSLLD and a VPADDD), so the same scores bit for bit (TestVNNIQ8Scores,
// TestQ80Zen4Matches). The words come from aux[12..19] (q80ShldAux). Per block of sixteen
// rows one VPADDD a query fewer (four of the block's ~150 vector operations) and four
// broadcasts fewer. On AMD Zen 4 (EPYC Genoa, 2 shared vCPUs; 4096 rows of 128 values, four
// queries, thread CPU time, alternated with the two-chain kernel in one process, 201 calls in
// cache, 7 passes over 96 MiB on 2 MiB pages streamed, three runs, ns a row min/median): in
// cache 6.33–6.34/6.47–6.51 → 6.22–6.23/6.30–6.33, streamed 6.93–7.03/7.01–7.12 →
// 6.78–6.83/6.92–7.00; native/attn TestDecodeBreakdown at the bench shape (131072 cells,
// 32/8 heads, q8_0 keys and values, test binaries alternated four times, load ~6), the scores
// phase min 6.64–6.77 → 6.50–6.70 (lower in three of four; median of the mins 6.73 → 6.58),
// and five more alternations at load ~8: 6.69–6.95 → 6.62–6.87 (lower in five of five, by
// 0.03–0.18; median of the mins 6.90 → 6.77).
// Each chain is sixteen VPDPBUSD deep where it was eight, four chains
// side by side: one VPDPBUSD issues a cycle, so four chains of latency 4 keep the multiply
// pipes as busy as eight. Not kept (same harness): the code vectors' XOR with 0x80 by
// merge-masked VPXORD loads in place of LOAD4's inserts (no VPXORD after the transposes),
// 6.39 → 7.35 in cache; LOAD4's inserts by merge-masked loads (LOAD4M) 6.34 → 7.35; by LOAD4Y
// (two 256-bit inserts and a 512-bit one) 6.32–6.34 → 6.17–6.33, medians alike (these three
// with two chains a query); with one chain, against the two-chain kernel: LOAD4's rows by
// VBROADCASTI32X4 and a merge-masked VPTERNLOGD that blends and XORs them (no VPXORD after
// the transposes) 6.40 → 7.00; each row's 16 bytes XORed by a 128-bit VPXORD from memory and
// inserted from the register, 7.10–7.16 → 7.47–7.55 (at a slower hour). Dropping the
// eight VPXORD (wrong scores, timing only) took 0.4 ns a row off in cache: no exact form of
// the codes as unsigned bytes without them was found (the query digits as the unsigned operand
// would take 64 register broadcasts a block). Register broadcasts cost more than the
// VPDPBUSD's embedded ones here: each digit dword broadcast into a register by VPBROADCASTD and
// read by a register VPDPBUSD, 6.35–6.47 → 6.91–7.04 in cache; one register broadcast read by
// two VPDPBUSD (wrong scores, timing only: what two groups a pass sharing them would take)
// 6.33–6.48 → 6.62–6.76, streamed +0.3: not worth the second group's registers. STAGEN's scale
// loads also bring the next group's rows into L1: without them (stale scales, timing only) in
// cache no faster, streamed +0.15–0.2; a PREFETCHT0 of each next-group row's block end beside
// them, +0.1 in cache and +0.15–0.5 streamed.
//
//go:noescape
func multiScoresQ80Z4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// vnniQ8One makes q8_0's VNNI scores quantize the query to one signed byte a value (qmax
// vnniQMax1, as llama.cpp's q8_0 dot and the q4 kernels here), not two digits, and take
// multiScoresQ80OneVNNI (multiScoresQ80OneZ4VNNI on Zen 4): eight VPDPBUSD a query and block,
// not sixteen. On by default; KVLAB_Q8_TWO_DIGITS (isa.Q8TwoDigits) turns it off. AVX2
// without AVX-VNNI takes one digit with it too (vnniND), the same scores; AVX-VNNI keeps two.
// Measured on AMD Zen 4 (shared 2 vCPUs, load 2–4), two digits → one:
//   - TestVNNIQ8OneSpeed (4096 rows of 128 values, 4 queries, thread CPU, alternated, ns a row
//     min/median): in cache 7.46/7.53 → 5.59/5.63, streamed 8.33/8.57 → 7.98/8.17;
//   - native/attn TestDecodeBreakdown at the bench shape (131072 cells, 9 alternations, ns a
//     cell, median of the rounds' medians): scores 8.90 → 8.00, whole 19.8 → 18.4;
//   - kvlab ab on kvlab-tiny-64 (20 seeds, mean change ± standard error): q8_0 decode KL
//     5.98e-5 → +16.6 % ± 3.2 %, prompt KL 5.32e-5 → +18.9 % ± 2.1 % (llama.cpp's q8_0 there:
//     6.3e-5 rotated), PPL and top-1 within noise; q8_0/q4_0 and q8_0/turbo4 within noise but
//     q8_0/q4_0's decode KL (+3.4 % ± 1.1 %); the outlier fixture alike (q8_0 +15 %, +20 %);
//     unrotated q8_0 (q8_0-r, the same for every seed) decode KL 6.23e-5 → 7.76e-5, prompt KL
//     6.17e-5 → 6.82e-5 (llama.cpp's: 7.9e-5);
//   - kvlab bench attn --ctx 131072 --kv q8_0 --heads 32 --kv-heads 8 --head-dim 128
//     --threads 1 (12 alternations, wall clock, load ~3.4): median 18.1 → 16.8 ms, min 17.1 →
//     15.5 ms, median of the pairs' differences −1.6 ms (f16 median 25.7 ms, min 25.1);
//   - again on the rotated formats of today (kvlab ab --ctx 128 --no-needle, 24 seeds, the
//     same binary with and without the switch, mean change ± standard error): kvlab-tiny-64
//     q8_0 decode KL 7.21e-5 → 8.53e-5 (+20 % ± 3), prompt KL 3.96e-5 → 4.91e-5 (+24 % ± 4;
//     llama.cpp's rotated q8_0: 6.3e-5), PPL 9.217 both, top-1 100 % both; q8_0/q4_0 decode
//     +1.3 % ± 1.1, prompt −0.2 % ± 1.4; q8_0/turbo4 +2.3 % ± 1.3, +0.5 % ± 1.4; the outlier
//     fixture alike (q8_0 +19 % / +25 %, the pairs −0.6 % to +2.3 %).
//
// One digit is the default: q8_0 stays below llama.cpp's q8_0 KL and its perplexity does not
// move, while its scores take half the multiplies.
var vnniQ8One = !isa.Q8TwoDigits

// multiScoresQ80OneVNNI and multiScoresQ80OneZ4VNNI are multiScoresQ80VNNI and
// multiScoresQ80Z4VNNI for one-digit queries (vnniQ8One).
//
//go:noescape
func multiScoresQ80OneVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ80OneIntelVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func multiScoresQ80OneZ4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// vnniND is the digits per query value of kind's kernel: vnniNDigits, but one for q8_0 under
// vnniQ8One, on AVX-512 VNNI and on AVX2 without AVX-VNNI (whose s16 route takes the integers
// Q of either, iq4_nl's one digit as q8_0's two, and forms the same Σ Q·c: the AVX-512
// kernel's scores bit for bit); the AVX-VNNI q8_0 kernel keeps two (its byte route is written
// for two digits) unless avx2VNNIQ8One gives it its one-digit kernel.
func vnniND(kind int) int {
	if kind == vnniQ8_0 && vnniQ8One && !(avx2Int && avxVNNI && (!avx2VNNIQ8One || avx2TwinsOn())) {
		return 1
	}
	return vnniNDigits[kind]
}

// vnniQuant is the quantization of one block of 32 query values at nd digits (1 or 2): the
// scale s and the integers Q. s is NaN for a block with a non-finite value (every score of the
// query is then NaN) and 0 for a block with max|q| < qmax·2⁻¹²⁶, where s would not be a normal
// float32; such a block counts as zero.
func vnniQuant(qb *[32]float32, nd int) (s float32, Q [32]int32) {
	qmax := float32(vnniQMax1)
	if nd == 2 {
		qmax = vnniQMax2
	}
	var m float32
	finite := true
	for _, x := range qb {
		a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
		if a > m {
			m = a
		}
		finite = finite && a <= math.MaxFloat32
	}
	if !finite {
		return float32(math.NaN()), Q
	}
	s = m / qmax
	if !(s >= 0x1p-126) {
		return 0, Q
	}
	// s, inv and x·inv each round once in float32, so |x/s − x·inv| ≤ 1.5·2⁻²³·qmax < 2⁻⁷ and
	// |q − s·Q| ≤ (½ + 2⁻⁷)·s ≤ (1 + 2⁻⁶)·m/(2·qmax).
	inv := qmax / m
	for i, x := range qb {
		v := int32(math.RoundToEven(float64(x * inv)))
		Q[i] = min(max(v, -int32(qmax)), int32(qmax))
	}
	return s, Q
}

// vnniDigits prepares four queries of d values (q[h·d:]) for the kernels over nb whole blocks at
// nd digits a value (1 or 2). Block b's digits start at dig[b·128·nd]: digit t (hi first) of
// value 32b+i of query h at (h·nd + t)·32 + i. aux holds vnniAuxWords words a block: [h] the
// bits of s, [4+h] the int32 −8·ΣQ (q4_0's offset), [8+h] −16·ΣQ, [12 + nd·h + t] −128·Σ of
// digit t (where q8_0's and iq4_nl's chains start), [20+h] the bits of float32(ΣQ). For q8_0's
// kernels the driver then rewrites [4+h] and [8+h] (q80ShldAux).
func vnniDigits(dig []byte, aux []uint32, q []float32, d, nb, nd int) {
	for b := 0; b < nb; b++ {
		a := aux[b*vnniAuxWords : (b+1)*vnniAuxWords]
		clear(a)
		for h := 0; h < 4; h++ {
			s, Q := vnniQuant((*[32]float32)(q[h*d+32*b:]), nd)
			dd := dig[b*128*nd+h*nd*32 : b*128*nd+(h+1)*nd*32]
			var sum int32
			var ds [2]int32
			for i, v := range Q {
				sum += v
				if nd == 1 {
					dd[i] = byte(int8(v))
					ds[0] += v
					continue
				}
				lo := (v+128)&255 - 128
				hi := (v - lo) >> 8
				dd[i], dd[32+i] = byte(int8(hi)), byte(int8(lo))
				ds[0] += hi
				ds[1] += lo
			}
			a[h] = math.Float32bits(s)
			a[4+h] = uint32(-8 * sum)
			a[8+h] = uint32(-16 * sum)
			for t := 0; t < nd; t++ {
				a[12+nd*h+t] = uint32(-128 * ds[t])
			}
			a[20+h] = math.Float32bits(float32(sum))
		}
	}
}

// q80Z4Scores reports the CPUs where q8_0's two-digit scores may take multiScoresQ80Z4VNNI (on
// zen4Stream): AVX-512 VBMI2, which every Zen 4 has, for its VPSHLDD (hidden with VBMI by the
// KVLAB_NO_AVX512VBMI and KVLAB_NO_AVX512VNNI switches).
var q80Z4Scores = cpu.X86.HasAVX512VBMI2 && isa.AVX512VBMI

// q80ShldAux writes into each of the nb blocks' aux words (vnniDigits, two digits) what
// multiScoresQ80Z4VNNI's one chain a query takes from them, in words 4..11 (q4_0's and q5_0's
// offsets, which no q8_0 kernel reads): [4+h] X = −128·Σhi + ⌊−128·Σlo/2⁸⌋ and [8+h]
// r·2²⁴, r = −128·Σlo mod 2⁸ (0 or 128), from [12+2h] = −128·Σhi and [13+2h] = −128·Σlo, so
// that 2⁸·X + r = −128·(2⁸·Σhi + Σlo). It reads only words 12..19, so it may run twice.
func q80ShldAux(aux []uint32, nb int) {
	for b := 0; b < nb; b++ {
		a := (*[vnniAuxWords]uint32)(aux[b*vnniAuxWords:])
		for h := 0; h < 4; h++ {
			hi, lo := int32(a[12+2*h]), int32(a[13+2*h])
			a[4+h] = uint32(hi + lo>>8)
			a[8+h] = uint32(lo) << 24
		}
	}
}

// vnniGridDot is q̃_h·mu over the nb whole blocks of query h of digits dig and aux
// (vnniDigits), q̃ = s·Q: per block Σ Q·mu in float32, times s.
func vnniGridDot(dig []byte, aux []uint32, h, nb, nd int, mu []float32) float32 {
	var sum float32
	for b := 0; b < nb; b++ {
		s := math.Float32frombits(aux[b*vnniAuxWords+h])
		m := (*[32]float32)(mu[32*b:])
		dd := dig[b*128*nd+h*nd*32:]
		var t float32
		if nd == 1 {
			dd := (*[32]byte)(dd)
			for i, x := range m {
				t += float32(int8(dd[i])) * x
			}
		} else {
			dd := (*[64]byte)(dd)
			for i, x := range m {
				t += float32(int32(int8(dd[i]))<<8+int32(int8(dd[32+i]))) * x
			}
		}
		sum += s * t
	}
	return sum
}

// vnniGrid writes into dst the queries q (d values each, nb whole blocks) as the kernels at nd
// digits score them, q̃ = s·Q per whole block, and copies the values past the blocks.
func vnniGrid(dst, q []float32, d, nb, nd int) {
	copy(dst, q)
	for h := 0; h < len(q)/d; h++ {
		for b := 0; b < nb; b++ {
			s, Q := vnniQuant((*[32]float32)(q[h*d+32*b:]), nd)
			for i, v := range Q {
				dst[h*d+32*b+i] = s * float32(v)
			}
		}
	}
}

// The VNNI scores kernels vnniScores runs.
const (
	vnniQ4_0 = iota
	vnniQ8_0
	vnniIQ4NL
	vnniQ4_1
	vnniQ5_0
	vnniQ5_1
)

// vnniNDigits is each kernel's digits per query value.
var vnniNDigits = [...]int{vnniQ4_0: 1, vnniQ8_0: 2, vnniIQ4NL: 1, vnniQ4_1: 1, vnniQ5_0: 1, vnniQ5_1: 1}

// vnniScores is DotManyMulti through the VNNI kernel of kind (vnniQ4_0, vnniQ8_0, vnniIQ4NL)
// over the nb whole blocks of each row, then tail (nil for none) for the values past them.
// With mu (d values; nil for none), every score of query h starts from q̃_h·mu, q̃_h the query
// as the kernel rounds it (vnniGrid).
func vnniScores(kind int, d, rb, nb int, tail func(q []float32, row []byte) float32, q []float32, n int, rows []byte, out, mu []float32) {
	vnniScoresStride(kind, d, rb, nb, tail, q, d, n, rows, out, mu)
}

// vnniScoresStride is vnniScores with query h at q[h·qs : h·qs+d] (qs ≥ d).
func vnniScoresStride(kind int, d, rb, nb int, tail func(q []float32, row []byte) float32, q []float32, qs, n int, rows []byte, out, mu []float32) {
	m := len(out) / n
	runs := [1][]byte{rows[:m*rb]}
	vnniScoresRunsStride(kind, d, rb, nb, tail, q, qs, n, runs[:], out, mu)
}

// vnniStride is DotManyMultiStride through the VNNI kernels for q4_0 and q8_0 rows (mu, nil
// for none, the rows' value offsets), false where they do not run.
func vnniStride(c Codec, q []float32, qs, n int, rows []byte, out, mu []float32) bool {
	if !intScores || n <= 0 {
		return false
	}
	switch c := c.(type) {
	case *q4_0Codec:
		if c.full > 0 {
			td, _ := c.tails()
			vnniScoresStride(vnniQ4_0, c.d, c.rb, c.full, td, q, qs, n, rows, out, mu)
			return true
		}
	case *q8_0Codec:
		if c.full > 0 {
			td, _ := c.tails()
			vnniScoresStride(vnniQ8_0, c.d, c.rb, c.full, td, q, qs, n, rows, out, mu)
			return true
		}
	}
	return false
}

// vnniScoresRuns is vnniScores over the rows of several runs (DotManyMultiRuns): out holds
// runs[0]'s rows' scores, then runs[1]'s, and so on. Each group of four queries is rounded to
// its digits once for all the runs; a row's score depends only on its bytes and the digits, so
// it is the one vnniScores over its run alone gives.
func vnniScoresRuns(kind int, d, rb, nb int, tail func(q []float32, row []byte) float32, q []float32, n int, runs [][]byte, out, mu []float32) {
	vnniScoresRunsStride(kind, d, rb, nb, tail, q, d, n, runs, out, mu)
}

// vnniScoresRunsStride is vnniScoresRuns with query h at q[h·qs : h·qs+d] (qs ≥ d): a group
// of queries not contiguous is copied contiguous (as a short last group is padded) before its
// digits are taken, so the scores are vnniScoresRuns' bit for bit.
func vnniScoresRunsStride(kind int, d, rb, nb int, tail func(q []float32, row []byte) float32, q []float32, qs, n int, runs [][]byte, out, mu []float32) {
	m := len(out) / n
	q, out = q[:(n-1)*qs+d], out[:m*n]
	if m == 0 {
		return
	}
	nd := vnniND(kind)
	var digStack [vnniMaxBlocks * vnniBlockBytes]byte
	var auxStack [vnniMaxBlocks * vnniAuxWords]uint32
	var stageStack [vnniMaxBlocks * 64]uint16 // per block 16 scales (and minima, high bits; q8_0: two groups' scales)
	dig, aux, stage := digStack[:], auxStack[:], stageStack[:]
	if nb > vnniMaxBlocks {
		dig, aux, stage = make([]byte, nb*vnniBlockBytes), make([]uint32, nb*vnniAuxWords), make([]uint16, nb*64)
	}
	var offs [4]float32
	var bq []byte // the AVX2 kernels' pre-broadcast digits (avx2Expand)
	switch {
	case avx2Int && nb > vnniMaxBlocks:
		bq = make([]byte, nb*avx2BQBytes(kind))
	case avx2Int:
		bp := avx2BQPool.Get().(*[vnniMaxBlocks * avx2BQMax]byte)
		defer avx2BQPool.Put(bp)
		bq = bp[:]
	}
	// pf, where the Zen 4 kernel takes runs (len(runs) > 1: runsPF), is the byte offset of the
	// next run's rows from the run's, 0 for none.
	pf, pf2 := 0, 0
	// intelX is whether q5_1's Intel scores flavour (q51ScoresX) may run run by run: over one
	// run, not a paged cache's (its far prefetches, 32 KiB on, land past the page), where
	// q5RunsIntel does not take its runs flavour.
	intelX := len(runs) <= 1
	kernel := func(rows *byte, m int, out *float32, ostride int) {
		if bq != nil {
			if pf != 0 && kind == vnniQ8_0 && avxVNNI {
				avx2ScoresQ80OneVNNIRuns(&bq[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf, pf2)
				return
			}
			if pf != 0 && kind == vnniQ8_0 {
				avx2ScoresQ80OneRuns(&bq[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf, pf2)
				return
			}
			avx2IntKernel(kind, &bq[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
			return
		}
		if !vnniStaged {
			switch kind {
			case vnniIQ4NL:
				switch {
				case iq4ScoresVBMI && vnniHdrZ4 && pf != 0:
					multiScoresIQ4NLHdrZ4RunsVBMI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf)
				case iq4ScoresVBMI && hdrIntel && twoStreamCall(m, ostride):
					multiScoresIQ4NLHdrIntelVBMI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				case iq4ScoresVBMI && vnniHdrZ4:
					multiScoresIQ4NLHdrZ4VBMI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				case iq4ScoresVBMI:
					multiScoresIQ4NLHdrVBMI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				case vnniHdrZ4:
					multiScoresIQ4NLHdrZ4VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				default:
					multiScoresIQ4NLHdrVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				}
				return
			case vnniQ4_1:
				if hdrRuns && pf != 0 {
					multiScoresQ41HdrZ4RunsVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf)
					return
				}
				if hdrIntel && twoStreamCall(m, ostride) {
					multiScoresQ41HdrIntelVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
					return
				}
				if vnniHdrZ4 {
					multiScoresQ41HdrZ4VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
					return
				}
				multiScoresQ41HdrVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				return
			case vnniQ4_0:
				if hdrRuns && pf != 0 {
					multiScoresQ40HdrZ4RunsVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf)
					return
				}
				if hdrIntel && twoStreamCall(m, ostride) {
					multiScoresQ40HdrIntelVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
					return
				}
				if vnniHdrZ4 {
					multiScoresQ40HdrZ4VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
					return
				}
				multiScoresQ40HdrVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				return
			}
		}
		switch kind {
		case vnniQ8_0:
			if nd == 1 {
				if q80OneRuns && pf != 0 {
					multiScoresQ80OneZ4RunsVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf)
					break
				}
				if zen4Stream {
					multiScoresQ80OneZ4VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
					break
				}
				if q80IntelTwo && twoStreamCall(m, ostride) {
					multiScoresQ80OneIntelTwoVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
					break
				}
				if intelCPU {
					multiScoresQ80OneIntelVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
					break
				}
				multiScoresQ80OneVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				break
			}
			if zen4Stream && q80Z4Scores {
				multiScoresQ80Z4VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				break
			}
			multiScoresQ80VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
		case vnniIQ4NL:
			if iq4ScoresVBMI {
				multiScoresIQ4NLVBMI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				break
			}
			multiScoresIQ4NLVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
		case vnniQ4_1:
			multiScoresQ41VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
		case vnniQ5_0:
			if pf != 0 && q5RunsIntel {
				multiScoresQ50XRunsGFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf, pf2-pf)
				break
			}
			if q5ScoresGFNI && q50ScoresX && !q5ScoresZ4 {
				if q50Split && intelX && twoStreamCall(m, ostride) {
					multiScoresQ50XSGFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
					break
				}
				multiScoresQ50XGFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				break
			}
			if q5ScoresGFNI && q5ScoresZ4 && pf != 0 {
				multiScoresQ50Z4RunsGFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf)
				break
			}
			if q5ScoresGFNI && q5ScoresZ4 {
				multiScoresQ50Z4GFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				break
			}
			if q5ScoresGFNI {
				multiScoresQ50GFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				break
			}
			multiScoresQ50VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
		case vnniQ5_1:
			if pf != 0 && q5RunsIntel {
				multiScoresQ51XRunsGFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf, pf2-pf)
				break
			}
			if q5ScoresGFNI && q5ScoresZ4 && pf != 0 {
				multiScoresQ51Z4RunsGFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0], pf)
				break
			}
			if q5ScoresGFNI && q51ScoresX && !q5ScoresZ4 && intelX {
				if q51Split && twoStreamCall(m, ostride) {
					multiScoresQ51XSGFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
					break
				}
				multiScoresQ51XGFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				break
			}
			if q5ScoresGFNI && q5ScoresZ4 {
				multiScoresQ51Z4GFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				break
			}
			if q5ScoresGFNI {
				multiScoresQ51GFNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
				break
			}
			multiScoresQ51VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
		default:
			multiScoresQ40VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride, &offs[0])
		}
	}
	// The stack buffers used only by a short last group of queries or rows are declared where
	// they are used: each is zeroed where it is declared, 8 KiB a call (of 64 rows, a page) if
	// declared here.
	var tmp [16 * 4]float32
	for h := 0; h < n; h += 4 {
		r := min(4, n-h)
		qh := q[h*d : (h+r)*d]
		if qs != d || r < 4 {
			// A short last group of queries padded to 4, or a group not contiguous gathered.
			var qpad [4 * multiScratchDim]float32
			qh = padQueries(qpad[:], q[h*qs:], qs, r, d)
		}
		if bq != nil {
			if !avx2Digits(&dig[0], &aux[0], &qh[0], d, nb, nd) {
				vnniDigits(dig, aux, qh, d, nb, nd) // a non-finite value
			}
			avx2Expand(bq, dig, aux, nb, nd, kind)
		} else if !vnniDigitsAVX512(&dig[0], &aux[0], &qh[0], d, nb, nd) {
			vnniDigits(dig, aux, qh, d, nb, nd) // a non-finite value: the reference says what to do
		}
		if kind == vnniQ8_0 && nd == 2 && bq == nil && zen4Stream && q80Z4Scores {
			q80ShldAux(aux, nb)
		}
		if mu != nil {
			// A padded query's offset is 0: its digits and values are zeros.
			offs = [4]float32{}
			for i := 0; i < r; i++ {
				offs[i] = vnniGridDot(dig, aux, i, nb, nd, mu) + lmDot(qh[i*d+nb*32:(i+1)*d], mu[nb*32:d])
			}
		}
		base := 0 // the run's first row in out
		for i, rows := range runs {
			mr := min(len(rows)/rb, m-base)
			if mr <= 0 {
				continue // an empty run
			}
			pf = 0
			if i+1 < len(runs) {
				if pf = runsPF(kind, nd, bq != nil, rows, runs[i+1:]); pf != 0 {
					pf2 = cmp.Or(runsAfterNext(runs, i), pf) // the run after next, for the kernels that take it (the next one where there is none)
					if q5RunsIntel && (kind == vnniQ5_0 || kind == vnniQ5_1) {
						pf2 = cmp.Or(runOffset(rows, runs[min(i+q5FarRuns, len(runs)-1)]), pf) // the far prefetches' run
					}
				}
				if pf == 0 {
					Prefetch(runs[i+1]) // the kernels' prefetches run past this run's end
				} else if j := i + runsFar(kind); j > i && j < len(runs) {
					Prefetch(runs[j]) // into L2, ahead of the kernel's L1 prefetches of the next run
				}
			}
			out := out[base*n : (base+mr)*n]
			base += mr
			whole := mr &^ 15
			if whole > 0 {
				direct := 0 // rows the kernel writes in place
				switch {
				case r == 4:
					direct = whole
				case n == r && n >= 2:
					// Two or three queries: the kernel's rows, stored one after another in
					// order, each spill 4 − n scores into the next row's first, which that row
					// then overwrites; the last row's spill needs a row after it in out.
					direct = whole
					if mr == whole && base == m {
						direct -= 16
					}
				}
				if direct > 0 {
					kernel(&rows[0], direct, &out[h], 4*n)
				}
				if r < 4 {
					for j0 := direct; j0 < whole; j0 += 16 {
						kernel(&rows[j0*rb], 16, &tmp[0], 16)
						for j := 0; j < 16; j++ {
							o, t := out[(j0+j)*n+h:(j0+j)*n+h+r], tmp[4*j:4*j+4] // element by element: no memmove call per row
							for i := range o {
								o[i] = t[i]
							}
						}
					}
				}
			}
			if rest := mr - whole; rest > 0 {
				var padStack [16 * vnniMaxBlocks * 34]byte
				pad := padStack[:]
				if 16*rb > len(pad) {
					pad = make([]byte, 16*rb)
				}
				pad = pad[:16*rb]
				clear(pad[copy(pad, rows[whole*rb:mr*rb]):])
				pf = 0 // the pad's rows: the kernel prefetches past them
				kernel(&pad[0], 16, &tmp[0], 16)
				for j := 0; j < rest; j++ {
					copy(out[(whole+j)*n+h:(whole+j)*n+h+r], tmp[4*j:4*j+r])
				}
			}
		}
	}
	if tail != nil {
		base := 0
		for _, rows := range runs {
			mr := min(len(rows)/rb, m-base)
			for j := 0; j < mr; j++ {
				row := rows[j*rb : (j+1)*rb]
				for h := 0; h < n; h++ {
					out[(base+j)*n+h] += tail(q[h*qs:h*qs+d], row)
				}
			}
			base += max(mr, 0)
		}
	}
}

// q4ScoresVNNI is DotManyMulti for q4_0 rows through the VNNI kernel, with mu (nil for none)
// the rows' value offsets (vnniScores).
func (c *q4_0Codec) q4ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	td, _ := c.tails()
	vnniScores(vnniQ4_0, c.d, c.rb, c.full, td, q, n, rows, out, mu)
}

// q8ScoresVNNI is q4ScoresVNNI for q8_0 rows.
func (c *q8_0Codec) q8ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	td, _ := c.tails()
	vnniScores(vnniQ8_0, c.d, c.rb, c.full, td, q, n, rows, out, mu)
}

// iq4ScoresVNNI is q4ScoresVNNI for iq4_nl rows.
func (c *iq4nlCodec) iq4ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	td, _ := c.tails()
	vnniScores(vnniIQ4NL, c.d, c.rb, c.full, td, q, n, rows, out, mu)
}

// scoresDigits is the digits per query value of c's DotManyMulti on this CPU (0: float kernels
// or none, the query taken as it is) and the number of whole blocks they cover.
func scoresDigits(c Codec) (nd, nb int) {
	switch c := c.(type) {
	case *q4_0Codec:
		if intScores && c.full > 0 {
			return vnniNDigits[vnniQ4_0], c.full
		}
	case *q8_0Codec:
		if intScores && c.full > 0 {
			return vnniND(vnniQ8_0), c.full
		}
	case *iq4nlCodec:
		if intScoresBW && c.full > 0 {
			return vnniNDigits[vnniIQ4NL], c.full
		}
	case *q4_1Codec:
		if intScores && c.full > 0 {
			return vnniNDigits[vnniQ4_1], c.full
		}
	case *q5_0Codec:
		if intScoresBW && c.full > 0 {
			return vnniNDigits[vnniQ5_0], c.full
		}
	case *q5_1Codec:
		if intScoresBW && c.full > 0 {
			return vnniNDigits[vnniQ5_1], c.full
		}
	case *tq4Codec:
		// Permuted within each group (tq4ScoresVNNI), which leaves its rounding as it is.
		if tq4VNNI(c.d) {
			return 1, c.d / 32
		}
	case *lmCodec:
		if _, ok := c.vnniKind(); ok {
			return 1, c.d / 32
		}
	}
	return 0, 0
}

// scoresGridBlock is the number of values c's DotManyMulti rounds to one scale (ScoresGrid):
// all its whole 32-value blocks at once for turbo2 and turbo3 where they take the
// uniform-scale kernels (t23Uni) and for tq4 where it does (tq4Uni), else BlockSize.
func scoresGridBlock(c Codec) int {
	switch c := c.(type) {
	case *lmCodec:
		if k, ok := c.vnniKind(); ok {
			if _, _, a2 := uniAVX2(k, c.d); t23Uni(k, c.d) || a2 {
				return c.d / 32 * 32
			}
		}
	case *tq4Codec:
		if tq4VNNI(c.d) && tq4Uni(vnniTQ4, c.d) {
			return c.d / 32 * 32
		}
	}
	return BlockSize
}

// scoresGridQMax is the largest digit of c's uniform-scale query rounding (scoresGridBlock
// above BlockSize): 93 for turbo3 and 78 for turbo4 through their uniform-scale plain AVX2
// kernels (t3UniAVX2, t3UniQMax; t4UniAVX2, t4UniQMax), else 127 (the AVX-VNNI ones among them).
func scoresGridQMax(c Codec) float32 {
	if c, ok := c.(*lmCodec); ok {
		if k, ok := c.vnniKind(); ok {
			if qm, _, a2 := uniAVX2(k, c.d); a2 {
				return float32(qm) // 127 for turbo2
			}
		}
	}
	return vnniQMax1
}

// q41ScoresVNNI is q4ScoresVNNI for q4_1 rows.
func (c *q4_1Codec) q41ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	td, _ := c.tails()
	vnniScores(vnniQ4_1, c.d, c.rb, c.full, td, q, n, rows, out, mu)
}

// q50ScoresVNNI is q4ScoresVNNI for q5_0 rows.
func (c *q5_0Codec) q50ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	td, _ := c.tails()
	vnniScores(vnniQ5_0, c.d, c.rb, c.full, td, q, n, rows, out, mu)
}

// q51ScoresVNNI is q4ScoresVNNI for q5_1 rows.
func (c *q5_1Codec) q51ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	td, _ := c.tails()
	vnniScores(vnniQ5_1, c.d, c.rb, c.full, td, q, n, rows, out, mu)
}

// vnniRuns is DotManyMultiRuns where c's DotManyMulti takes the VNNI kernels (c itself, or
// the rotated codec over it, whose channel offsets the kernels then start the scores from, as
// its DotManyMulti has them do): the same kernels over the runs, each group of queries rounded
// once. It reports false, doing nothing, for any other codec or CPU. The conditions are the
// codecs' own DotManyMulti and dotManyMultiMu ones (TestDotManyMultiRuns checks every format
// against them bit for bit).
func vnniRuns(c Codec, q []float32, n int, runs [][]byte, out []float32) bool {
	if n <= 0 {
		return false
	}
	var mu []float32
	if r, ok := c.(*rotCodec); ok {
		c, mu = r.inner, r.muR
	}
	switch c := c.(type) {
	case *q4_0Codec:
		if intScores && c.full > 0 {
			td, _ := c.tails()
			vnniScoresRuns(vnniQ4_0, c.d, c.rb, c.full, td, q, n, runs, out, mu)
			return true
		}
	case *q8_0Codec:
		if intScores && c.full > 0 {
			td, _ := c.tails()
			vnniScoresRuns(vnniQ8_0, c.d, c.rb, c.full, td, q, n, runs, out, mu)
			return true
		}
	case *iq4nlCodec:
		if intScoresBW && c.full > 0 {
			td, _ := c.tails()
			vnniScoresRuns(vnniIQ4NL, c.d, c.rb, c.full, td, q, n, runs, out, mu)
			return true
		}
	case *q4_1Codec:
		if intScores && c.full > 0 {
			td, _ := c.tails()
			vnniScoresRuns(vnniQ4_1, c.d, c.rb, c.full, td, q, n, runs, out, mu)
			return true
		}
	case *q5_0Codec:
		if intScoresBW && c.full > 0 {
			td, _ := c.tails()
			vnniScoresRuns(vnniQ5_0, c.d, c.rb, c.full, td, q, n, runs, out, mu)
			return true
		}
	case *q5_1Codec:
		if intScoresBW && c.full > 0 {
			td, _ := c.tails()
			vnniScoresRuns(vnniQ5_1, c.d, c.rb, c.full, td, q, n, runs, out, mu)
			return true
		}
	case *tq4Codec:
		// Not a muScorer: a rotated tq4 with offsets adds them after its DotManyMulti.
		if tq4VNNI(c.d) && mu == nil {
			tq4ScoresVNNIRuns(vnniTQ4, c.d, c.RowBytes(), q, n, runs, out, nil)
			return true
		}
	case *lmCodec:
		if k, ok := c.vnniKind(); ok {
			if mu != nil {
				mu = mu[:c.d]
			}
			tq4ScoresVNNIRuns(k, c.d, c.nb+2, q, n, runs, out, mu)
			return true
		}
	}
	return false
}
