//go:build amd64 && !purego

package kvq

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// hasQ2KKernel selects a q2k scores kernel (q2k_amd64.s) for ScoresRangeMulti.
var hasQ2KKernel = hasAVX2

// q2kScores is ScoresRangeMulti's kernel: on CPUs with AVX-512 F and BW (not under
// KVLAB_NO_AVX512) the queries scaled by the group's channel scales (q2kScaleAVX512) and the
// cells scored against them by multiScoresQ2KZ (multi_turbo_amd64.s: turbo2's decode, q2k's
// codes being turbo2's bit stream with q2k's levels, two cells a pass, the query vectors loaded once
// for both, the sums taken in the order of the kernel it replaced, so bit for bit the same
// scores); else q2kScoresAVX2. Direct calls keep the caller's stack buffers from escaping (a decode step
// allocates nothing).
//
// For d a multiple of 64 the AVX-512 cells go through multiScoresQ2KT instead
// (multi_tq4vnni_amd64.s, gen_tq4vnni.go): sixteen cells a pass, one per lane, each value's
// code looked up once for the four queries, with no reduction across lanes; its sums run in
// another order, within (d/4 + 4)·2⁻²⁴·Σ_c |q_c·k̂_c| of the exact score.
//
// With AVX-512 VNNI and VBMI too and d a multiple of 64, the scores are integer dots instead
// (q2kScoresInt with avx512; ScoresRangeMulti scores runs of whole groups for four queries by
// q2kScoresGroups, the same scores); on CPUs with AVX2 and no AVX-512 likewise (q2kScoresInt
// without).
//
// prepped says that q2kPrep(q, d, grp, qs, finite) returned true: the first half of the query
// preparation is in qs already (AVX-512 only; q2kPrep returns false elsewhere). finite is
// q2kQueriesFinite(q, d): the AVX-512 integer path takes only finite queries.
func q2kScores(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int, prepped, finite bool) {
	if hasAVX512BW {
		cells := (*byte)(unsafe.Add(unsafe.Pointer(grp), 2*d+j0*(d/4)))
		if finite && q2kVNNI(d) && q2kScoresInt(true, q, d, grp, cells, m, qs, out, ostride, prepped) {
			return
		}
		q2kScaleAVX512(q, d, grp, qs)
		if d%64 == 0 {
			q2kScoresT(qs, d, cells, m, out, ostride)
			return
		}
		multiScoresQ2KZ(qs, d, d, cells, d/4, m, out, ostride)
		return
	}
	if q2kVNNI(d) {
		cells := (*byte)(unsafe.Add(unsafe.Pointer(grp), 2*d+j0*(d/4)))
		if q2kScoresInt(false, q, d, grp, cells, m, qs, out, ostride, false) {
			return
		}
	}
	q2kScoresAVX2(q, d, grp, j0, m, qs, out, ostride)
}

// q2kCellsAVX2 runs q2k's AVX2 scores kernel on this CPU (m a multiple of 8); stage is the
// plain kernel's 32 words of float sums.
func q2kCellsAVX2(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *[32]uint32) {
	if hasAVXVNNI {
		multiScoresQ2KAVXVNNI(dig, aux, nb, rows, rb, m, out, ostride, off, &stage[0])
		return
	}
	multiScoresQ2KAVX2I(dig, aux, nb, rows, rb, m, out, ostride, off, &stage[0])
}

// q2kAVX2U is turboInts2/9 + 10 as unsigned bytes (four times): the levels multiScoresQ2KAVX2I
// looks up (gen_tq4avx2.go, q2kChunkAVX2).
var q2kAVX2U = func() (t [16]byte) {
	for k := range t {
		t[k] = byte(turboInts2[k&3]/9 + 10)
	}
	return t
}()

// q2kAVX2UHi is q2kAVX2U by the upper two bits of a nibble: the level of the nibble's second
// code (q2kChunkAVX2 looks up two codes a nibble).
var q2kAVX2UHi = func() (t [16]byte) {
	for k := range t {
		t[k] = byte(turboInts2[k>>2]/9 + 10)
	}
	return t
}()

// q2kDigitsAVX2 is q2kDigitsAVX512 for the AVX2 kernels: the same digits in t2AVX2Perm's order
// within each 32-channel block (gen_tq4avx2.go).
//
//go:noescape
func q2kDigitsAVX2(q *float32, d int, grp *byte, dig *byte, aux *uint32) bool

// multiScoresQ2KAVX2I and multiScoresQ2KAVXVNNI are multiScoresT2AVX2I and
// multiScoresT2AVXVNNI for cells without a row scale (every row scale 1), their scores bit for
// bit; multiScoresQ2KAVX2I forms the group dots by q2k's own chunk (gen_tq4avx2.go,
// q2kChunkAVX2: turbo2's plain route, t2ChunkAVX2, on digits not widened), reads aux words
// 8..11 (−90·ΣQ as int32s, which q2kDigitsAVX2 writes) and keeps the second group of each
// chunk's codes in stage (16 of its 32 words).
//
//go:noescape
func multiScoresQ2KAVX2I(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresQ2KAVXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// q2kScoresT scores the m cells at cells (d/4 bytes each, d a multiple of 64 up to
// q2kMultiMaxDim) for the four scaled queries qs through multiScoresQ2KT, a last partial
// sixteen padded with zero cells; out rows are ostride bytes apart.
func q2kScoresT(qs *float32, d int, cells *byte, m int, out *float32, ostride int) {
	rb := d / 4
	whole := m &^ 15
	if whole > 0 {
		multiScoresQ2KT(qs, d, cells, rb, whole, out, ostride)
	}
	if rest := m - whole; rest > 0 {
		var pad [16 * q2kMultiMaxDim / 4]byte
		copy(pad[:], unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(cells), whole*rb)), rest*rb))
		var tmp [16 * 4]float32
		multiScoresQ2KT(qs, d, &pad[0], rb, 16, &tmp[0], 16)
		for j := 0; j < rest; j++ {
			*(*[4]float32)(unsafe.Add(unsafe.Pointer(out), (whole+j)*ostride)) = [4]float32(tmp[4*j : 4*j+4])
		}
	}
}

// multiScoresQ2KT scores m (a multiple of 16) q2k cells of rb = d/4 code bytes at rows for
// the four queries qs[h·d:] (channel scales folded in): out row j (ostride bytes apart) gets the
// four scores of cell j (gen_tq4vnni.go).
//
//go:noescape
func multiScoresQ2KT(qs *float32, d int, rows *byte, rb, m int, out *float32, ostride int)

// The kernels' contract is q2kScoresAVX2's (q2k_amd64.s).

//go:noescape
func q2kScoresAVX2(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int)

// q2kScaleAVX512 writes qs_h[c] = q_h[c]·scale_c for the four queries and the group's channel
// scales (q2k_amd64.s).
//
//go:noescape
func q2kScaleAVX512(q *float32, d int, grp *byte, qs *float32)

// q2kVNNI reports whether q2k's scores at head dimension d go through the VNNI kernel: AVX-512
// VNNI, BW and VBMI (turbo2's kernel's), d a multiple of 64 (up to q2kMultiMaxDim).
// Without AVX-512 the AVX2 kernels (tq4AVX2Int, q2kScoresInt without avx512) give the same scores.
func q2kVNNI(d int) bool {
	return (hasVNNIBW && hasVBMI || tq4AVX2Int) && d%64 == 0 && d <= q2kMultiMaxDim
}

// The scratch q2kScoresInt carves out of ScoresRangeMulti's 4·q2kMultiMaxDim floats: the
// digits (vnniDigits' layout, one digit a value) and the aux words of d/32 blocks.
const (
	q2kDigBytes = q2kMultiMaxDim / 32 * vnniBlockBytes / 2
	q2kAuxBytes = 4 * q2kMultiMaxDim / 32 * vnniAuxWords
)

var _ [4*4*q2kMultiMaxDim - q2kDigBytes - q2kAuxBytes]struct{} // the scratch fits

// q2kScoresInt scores the m cells at cells (d/4 code bytes each, of the group at grp) for the
// four queries q[h·d:] as integer dots, and reports false (having written nothing) where a
// query times a channel scale is not finite, which the float kernels then score.
//
// Per group the queries times the channel scales, q'_h[c] = q_h[c]·scale_c (one float32
// rounding, as ScoresRange's), are quantized per block of q2kGridBlock() channels (64 with
// AVX-512, 32 on the AVX2 path) as the block formats' VNNI kernels quantize a query, q' ≈ q̃ =
// s_b·Q (q2kQuant: vnniQuant's arithmetic, each digit rounded once with AVX-512; one signed byte a value, |q' − q̃| ≤
// (1 + 2⁻⁶)·max_b|q'|/254), by q2kDigitsAVX512; multiScoresQ2KVNNI (turbo2's VNNI kernel with
// every row scale 1 and one chain a query per 64 values: q2k's codes are turbo2's bit stream
// and its levels turbo2's, turboInts2 units) forms Σ Q·turboInts2[code] exactly in int32 per
// block, and the score is Σ_b s_b·(that)·turboUnit2. With L_c = turboInts2[code_c]·turboUnit2 (so q'_c·L_c = q_c·k̂_c up
// to the rounding of q'), the score is within
//
//	(1 + 2⁻⁶)/254·Σ_b max_{c∈b}|q'_c|·Σ_{c∈b}|L_c| + 1e-5·Σ_c |q_c·k̂_c|
//
// of the exact q·k̂ (the first term the query's grid, the second the float rounding of the
// converted block dots, their scaling and sum, and of q'), and within 1e-5·Σ_c |q̃_c·L_c| of the
// exact dot of the grid query q̃ with the levels (TestQ2KScoresRangeMulti). The grid is per
// group and block: a channel 75× the others' RMS coarsens only its own block's grid, for that
// block's other 63 (AVX2: 31) channels. On the q2k tests' outlier data, where every 32 channels
// hold such a channel (5× to 75×), the softmax attention output moves by 4.0 % of its norm
// with the 64-channel grid, 3.4 % with the 32-channel one (TestQ2KScoresVNNIAttention), where
// the q2k codes themselves move it by 95 %; on the tiny test model's decode the mean KL to f16
// rose 1–3 % with the 32-channel grid (0.27–0.62 nats, 1.7–2 standard errors).
//
// The grid went from 32 to 64 channels on AVX-512 for speed: the kernel's chains then run
// over a whole 64-value chunk, one VCVTDQ2PS and one FMA a query and chunk where they took them
// per 32 values. On AMD Zen 4 (thread CPU, d 128, four queries, TestQ2KDecodeSplit, old and new
// test binaries alternated six times, min/median of the runs' minima, load ~20 on 2 vCPUs):
// the scores 4.86/4.94 → 4.74/4.80 ns a cell in cache, 4.89/5.00 → 4.73/4.82 streamed (the
// cells' kernel alone 3.32/3.34 → 3.14/3.19; the preparation, two operations more a half,
// 2.02/2.04 → 2.09/2.10; gen_tq4vnni.go's q2kDigits has the preparation's later form). At the
// bench shape with that later form (native/attn TestDecodeBreakdown: 131072 cells, 32/8 heads,
// one thread; test binaries alternated four times, min/median of the runs' minima, ns a row of
// one KV head): the scores 4.81/4.94 → 4.70/4.74, the whole decode 10.24/10.30 → 9.86/10.15. Quality
// (kvlab ab, seeds 1–16, ctx 128, the q2k arm, mean relative change of the KL to f16 ± its
// standard error, this kernel against the 32-channel one; a Go emulation of each grid gave
// their KLs to the last digit): kvlab-tiny-64 (d 64: one block a head) decode KL
// −1.03 ± 0.29 %, prompt KL +0.16 ± 0.46 %;
// on its outlier fixture (kvlab fixture outlier) the same numbers, as q' = q·scale does not
// change when a K channel is scaled up and its Q channel down. A grid step from a bound
// instead of the maxima, max|q|·max scale per block (no products for the maxima), was
// measured the same way and rejected: decode KL −1.2 ± 0.3 % on kvlab-tiny-64 but +8.5 ± 1.1 %
// on the outlier fixture (+26 ± 1.4 % per 64 channels).
//
// With avx512 the queries must be finite (q2kQueriesFinite; q2kDigitsAVX512).
//
// prepped: q2kPrep(q, d, grp, scratch, true) has run the first half of the preparation
// (q2kDigitsAAVX512: the blocks' maxima and scales) and returned true; the second
// (q2kDigitsBAVX512) runs here.
//
// avx512 false is the same on CPUs with AVX2 and no AVX-512 (tq4AVX2Int; prepped must be
// false): the queries prepared by q2kDigitsAVX2 (per 32-channel block, vnniDigits' digits and
// scales, in the order the turbo2 AVX2 kernels read the codes, t2AVX2Perm) and the cells scored
// by q2k's AVX2 kernels (turbo2's with every row scale 1, the plain flavour with q2k's own
// chunk, q2kChunkAVX2: exact int32 dots), so the bound holds as it is, with 32-channel blocks
// (the AVX2 kernels' chains are per 32 values).
func q2kScoresInt(avx512 bool, q *float32, d int, grp *byte, cells *byte, m int, scratch *float32, out *float32, ostride int, prepped bool) bool {
	dig := (*byte)(unsafe.Pointer(scratch))
	aux := (*uint32)(unsafe.Add(unsafe.Pointer(scratch), q2kDigBytes))
	switch {
	case !avx512:
		if !q2kDigitsAVX2(q, d, grp, dig, aux) {
			return false
		}
	case prepped:
		q2kDigitsBAVX512(q, d, grp, dig, aux)
	case !q2kDigitsAVX512(q, d, grp, dig, aux):
		return false
	}
	off := [5]float32{4: turboUnit2}
	var stage [32]uint32 // multiScoresQ2KAVX2I's float sums
	rb := d / 4
	// Direct calls (not through a func value) keep the stack buffers from escaping.
	kernel := func(rows *byte, m int, out *float32, ostride int) {
		switch {
		case !avx512:
			q2kCellsAVX2(dig, aux, d/64, rows, rb, m, out, ostride, &off[0], &stage)
		case rb <= 48:
			multiScoresQ2KPVNNI(dig, aux, d/64, rows, rb, m, out, ostride, &off[0], nil)
		default:
			multiScoresQ2KVNNI(dig, aux, d/64, rows, rb, m, out, ostride, &off[0], nil)
		}
	}
	// The AVX-512 kernel takes sixteen cells a pass, the AVX2 one eight; a last partial pass
	// is padded with zero cells.
	step := 16
	if !avx512 {
		step = 8
	}
	whole := m - m%step
	if whole > 0 {
		kernel(cells, whole, out, ostride)
	}
	if rest := m - whole; rest > 0 {
		var pad [16 * q2kMultiMaxDim / 4]byte
		copy(pad[:], unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(cells), whole*rb)), rest*rb))
		var tmp [16 * 4]float32
		kernel(&pad[0], step, &tmp[0], 16)
		for j := 0; j < rest; j++ {
			*(*[4]float32)(unsafe.Add(unsafe.Pointer(out), (whole+j)*ostride)) = [4]float32(tmp[4*j : 4*j+4])
		}
	}
	return true
}

// q2kDigitsAVX512 quantizes the four queries q[h·d:] (d a multiple of 64) times the channel
// scales that open the group at grp, per 64-channel block, into dig and aux as
// vnniDigits(dig, aux, q', d, d/32, 1) lays them out for q' = q·scale, with each 64-channel
// block quantized as a whole (q2kQuantUniFMA) and aux words 0..3 (s·turboUnit2: the levels' unit folded in) and 12..15 (−128·ΣQ over the
// 64 channels) of both its 32-channel blocks the 64-channel block's, the digits in the turbo2
// kernel's order (t2DigitsPermute's) (its aux words 4..11 and 16..23 of a block left as they
// are; words 4..7 hold inv for the second half); false where a q' is not finite
// (gen_tq4vnni.go). The queries must be finite (q2kQueriesFinite): the blocks' maxima drop a
// NaN, so a NaN q' is caught only as a scale that is not finite (the only way to one from
// finite queries: NaN, or ±Inf times a zero query value); an overflow to ±Inf is caught by the
// maxima.
//
//go:noescape
func q2kDigitsAVX512(q *float32, d int, grp *byte, dig *byte, aux *uint32) bool

// q2kScoresGroups scores the ng whole groups (32 cells each) that start at grp (10d bytes
// apart) for the four finite queries q[h·d:] (q2kQueriesFinite), out row j (ostride bytes
// apart) the four scores of cell j, where q2kScores takes the AVX-512 VNNI kernel, and returns
// the groups it scored: all ng, or fewer where the next group's q' is not finite (q2kScores then
// scores it in float), or 0 where the kernel is not there. The scores are q2kScoresInt's bit
// for bit: per batch of the groups that fit scratch (q2kScratchBytes), q2kDigitsGroupsAVX512
// prepares their queries in one loop and one call of the kernel's group flavour
// (multiScoresQ2KGPVNNI, multiScoresQ2KGVNNI: the next group's digits, aux words and cells
// every 32 cells) scores their cells; where q2kScores took four calls a group. On CPUs with
// AVX2 and no AVX-512 it is q2kScoresGroupsAVX2.
func q2kScoresGroups(q *float32, d int, grp *byte, ng int, scratch *float32, out *float32, ostride int) int {
	if !hasAVX512BW {
		return q2kScoresGroupsAVX2(q, d, grp, ng, scratch, out, ostride)
	}
	if !q2kVNNI(d) {
		return 0
	}
	batch := q2kScratchBytes / (7 * d) // 4d digit bytes and 3d aux bytes a group
	dig := (*byte)(unsafe.Pointer(scratch))
	aux := (*uint32)(unsafe.Add(unsafe.Pointer(scratch), batch*4*d))
	off := [5]float32{4: turboUnit2}
	gb := int(q2kGroupBytes(d))
	done := 0
	for done < ng {
		b := min(batch, ng-done)
		g := unsafe.Add(unsafe.Pointer(grp), done*gb)
		p := q2kDigitsGroupsAVX512(q, d, (*byte)(g), b, dig, aux)
		if p > 0 {
			rows := (*byte)(unsafe.Add(g, 2*d))
			o := (*float32)(unsafe.Add(unsafe.Pointer(out), done*GroupCells*ostride))
			switch {
			case d <= 192 && q2kFar && q2kSparse:
				multiScoresQ2KGPXVNNI(dig, aux, d/64, rows, d/4, p*GroupCells, o, ostride, &off[0], nil)
			case d <= 192 && q2kFar:
				multiScoresQ2KGPZ4VNNI(dig, aux, d/64, rows, d/4, p*GroupCells, o, ostride, &off[0], nil)
			case d <= 192:
				multiScoresQ2KGPVNNI(dig, aux, d/64, rows, d/4, p*GroupCells, o, ostride, &off[0], nil)
			case q2kFar && q2kSparse:
				multiScoresQ2KGXVNNI(dig, aux, d/64, rows, d/4, p*GroupCells, o, ostride, &off[0], nil)
			case q2kFar:
				multiScoresQ2KGZ4VNNI(dig, aux, d/64, rows, d/4, p*GroupCells, o, ostride, &off[0], nil)
			default:
				multiScoresQ2KGVNNI(dig, aux, d/64, rows, d/4, p*GroupCells, o, ostride, &off[0], nil)
			}
		}
		done += p
		if p < b {
			break
		}
	}
	return done
}

// q2kScoresGroupsAVX2 is q2kScoresGroups on CPUs with AVX2 and no AVX-512, where q2kScoresInt
// takes the AVX2 kernels: per group q2kDigitsAVX2 prepares the queries and q2kCellsAVX2 scores
// its 32 cells, as q2kScoresInt does (so its scores bit for bit), in one loop where
// ScoresRangeMulti took a call of q2kScores and q2kScoresInt a group (their setup, the next
// group's q2kPrep call and the closure: about 16 ns a group). It returns the groups scored (0
// where q2kScoresInt takes no integer kernel), fewer than ng where a group's q' is not finite.
// Measured on Zen 4 under KVLAB_NO_AVX512 (thread CPU, d 128, four queries, min of four
// alternated runs): TestQ2KDecodeSplit's scores 9.22 → 8.69 ns a cell in cache, 9.39 → 8.80
// streamed. Widening the digits here for turbo2's plain kernel (t2AVX2Widen per group into
// this scratch, d ≤ 192, and t2ChunkAVX2 with every row scale 1) did not pay: the scores
// 9.29–9.34 in cache against 9.22–9.32 with the digits as they are (the widening, about 256
// operations a group at d 128, ate the kernel's gain).
func q2kScoresGroupsAVX2(q *float32, d int, grp *byte, ng int, scratch *float32, out *float32, ostride int) int {
	if !q2kVNNI(d) {
		return 0
	}
	dig := (*byte)(unsafe.Pointer(scratch))
	aux := (*uint32)(unsafe.Add(unsafe.Pointer(scratch), q2kDigBytes))
	off := [5]float32{4: turboUnit2}
	var stage [32]uint32
	gb := int(q2kGroupBytes(d))
	for g := 0; g < ng; g++ {
		gp := (*byte)(unsafe.Add(unsafe.Pointer(grp), g*gb))
		if !q2kDigitsAVX2(q, d, gp, dig, aux) {
			return g
		}
		o := (*float32)(unsafe.Add(unsafe.Pointer(out), g*GroupCells*ostride))
		q2kCellsAVX2(dig, aux, d/64, (*byte)(unsafe.Add(unsafe.Pointer(gp), 2*d)), d/4, GroupCells, o, ostride, &off[0], &stage)
	}
	return ng
}

// q2kScratchBytes is the scratch q2kScoresGroups takes: ScoresRangeMulti's two buffers.
const q2kScratchBytes = int(unsafe.Sizeof(q2kScratch{}))

// q2kDigitsGroupsAVX512 is q2kDigitsAVX512 for the ng groups at grp (10d bytes apart) in turn,
// the digits of group i at dig + 4d·i and its aux words at aux + 3d·i bytes, up to the first
// group with a q' that is not finite; it returns the groups prepared (gen_tq4vnni.go).
//
//go:noescape
func q2kDigitsGroupsAVX512(q *float32, d int, grp *byte, ng int, dig *byte, aux *uint32) int

// multiScoresQ2KGVNNI and multiScoresQ2KGPVNNI are multiScoresQ2KVNNI and multiScoresQ2KPVNNI
// for the cells of m/32 whole groups, their scores bit for bit: every 32 cells they go on to the
// next group's digits (4d bytes on), aux words (3d bytes on) and cells (past its 2d bytes of
// scales) (gen_tq4vnni.go).
//
//go:noescape
func multiScoresQ2KGVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresQ2KGPVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// multiScoresQ2KGZ4VNNI and multiScoresQ2KGPZ4VNNI are multiScoresQ2KGVNNI and
// multiScoresQ2KGPVNNI for AMD Zen 4 (zen4Stream), their scores bit for bit
// (TestQ2KScoresGroups): each line the loop prefetches into L1 (PFGROUPS groups ahead) is
// also prefetched into L2 PFFAR (16 KiB) further on (gen_tq4vnni.go's q2kFar). On AMD Zen 4
// (native/attn TestDecodeBreakdown at the bench shape: 131072 cells, 32/8 heads, d 128, one
// thread, thread CPU time; test binaries alternated, scores ns a row, min/median of the runs'
// minima): on 2 MiB pages 4.96/5.03 → 4.82/4.88 (lower in 9 of 10), the whole decode
// 10.34/10.46 → 10.09/10.22; on 4 KiB pages (KVLAB_NO_HUGEPAGES=1) 4.95/5.09 → 4.87/4.89
// (5 of 5); with the keys in cache first (KVLAB_TOUCH=k) 4.81/4.88 against 4.83/4.90, so the
// streamed scores now run at their in-cache time. The L2 prefetch 8, 12 or 24 KiB further
// on: 4.88, 4.91, 5.02 (16 KiB 4.86, old 4.99, eight alternations); 32 KiB 5.53 (old 5.04).
// Intel CPUs take them too (q2kFar); Zen 5 keeps the kernels without the L2 prefetch: not
// measured there.
//
//go:noescape
func multiScoresQ2KGZ4VNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresQ2KGPZ4VNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// q2kFar makes q2kScoresGroups take the group kernels' flavours with the L2 prefetch
// (multiScoresQ2KGZ4VNNI, multiScoresQ2KGPZ4VNNI): on AMD Zen 4 (zen4Stream) and on Intel
// (intelCPU, there with the sparse prefetches: q2kSparse). On an Intel Xeon (family 6 model 167, Sapphire Rapids class, 2 shared vCPUs, load
// ~6; ScoresRangeMulti at d 128, four queries, 4096-cell calls, the two alternated in one
// process, 15 rounds, ns a cell min/median) in cache 3.90/3.92 → 3.94/3.95, streamed (2²⁰
// cells) 4.63/4.70 → 4.17/4.22; in the decode (native/attn TestDecodeBreakdown at the bench
// shape, test binaries alternated six times, the runs' minima) the scores 5.85/6.01 → 5.24/5.43.
var q2kFar = zen4Stream || intelCPU

// multiScoresQ2KGXVNNI and multiScoresQ2KGPXVNNI are multiScoresQ2KGZ4VNNI and
// multiScoresQ2KGPZ4VNNI with two of each step's five L2 prefetches (the lines at 0 and 192;
// gen_tq4vnni.go's q2kFarX): their scores bit for bit (TestQ2KScoresGroups). Intel CPUs take
// them (q2kSparse).
//
//go:noescape
func multiScoresQ2KGXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresQ2KGPXVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// q2kSparse makes q2kScoresGroups take, where q2kFar, the flavours with the sparse L2
// prefetches (multiScoresQ2KGXVNNI, multiScoresQ2KGPXVNNI) on Intel CPUs (intelCPU): with a
// PREFETCHT1 for every line PFFAR on, as Zen 4 takes them, this Intel's loop waited on its L1
// fill buffers (as multi_vnni_amd64.go's q50ScoresX says of q5_0's six far prefetches a block).
// On an Intel Xeon (family 6 model 167, 2 shared vCPUs, load 5–7; native/attn
// TestDecodeBreakdown at the bench shape, KVLAB_SPEED_FORMATS=q2k, the kernels switched process
// by process, ns a row, each process's min of 5 rounds), scores phase: every line 5.65–6.44
// (ten runs) → lines 0 and 192 5.38–6.21 (lower in 9 of 10 paired runs; median 6.00 → 5.62),
// whole 12.29–14.08 → 11.49–13.49 (lower in 9 of 10). Not kept (the same runs): lines 0, 128
// and 256 5.81–6.04; line 0 alone 5.69–6.27; lines 64 and 256 5.40–5.98 (within the noise of
// 0 and 192); lines 0 and 192 at 8 KiB 6.06–6.44 or 32 KiB 5.49–6.02 in place of PFFAR. Test
// binaries with and without q2kSparse alternated ten times (load ~6, the same test): scores
// 5.13–5.77 → 4.86–5.54 (lower in 9 of 10, median of the differences −0.23), whole
// 11.98–13.71 → 11.63–12.93 (lower in 10 of 10, median −0.65).
//
// Not kept on that Xeon (the same test, test binaries against these flavours alternated eight
// to ten times, load 6–10, paired median difference of the scores phase, ns a row): two streams
// of groups, as the other Intel scores kernels take rows (twoStreamCall; each batch half its
// groups from the call's first ⌈ng/2⌉ and half from the rest, their digits prepared by two
// q2kDigitsGroupsAVX512 calls, one kernel call alternating a group of each, the four stream
// pointers swapped at each group's end; bit for bit), with each stream's L1 prefetch 2, 4, 6
// or 8 sixteen-row groups on and no L2 prefetch: +1.58, +1.27, +1.16, +1.00 (0 of 10 lower);
// with an L1 prefetch of each group's scales two batches on (the next batch's preparation read
// them on a miss): 4 on +0.94, 8 on +0.69; with these flavours' sparse L2 prefetches kept
// (q2kFarX): 4 on +0.51, 8 on +0.13 (1 of 8). These flavours' L1 prefetch 4, 6, 10 or 12
// sixteen-row groups on in place of PFGROUPS' 8 (the L2 ones PFFAR past it; ten alternations,
// load ~12): +0.64, +0.34, +0.03, +0.32 (8 is best here, though ~2 KiB is for the other Intel
// kernels). The keys stream at about their in-cache time here already (TestDecodeBreakdown
// with KVLAB_TOUCH=k: 4.4–4.8 against 4.75–5.0 streamed); in cache the query preparation
// (q2kDigitsGroupsAVX512) is ~1.4–1.7 ns a cell of the ~4.2 (TestQ2KDecodeSplit).
var q2kSparse = intelCPU

// q2kQueriesFinite reports whether the four queries q[h·d:] are finite where q2kScores would
// take the AVX-512 integer path (q2kFiniteAVX512), else true: that path's preparation
// (q2kDigitsAVX512, q2kDigitsAAVX512) catches a non-finite q' = q·scale only where q is finite.
func q2kQueriesFinite(q *float32, d int) bool {
	if !hasAVX512BW || !q2kVNNI(d) {
		return true
	}
	return q2kFiniteAVX512(q, 4*d)
}

// q2kFiniteAVX512 reports whether the n floats at q (n a multiple of 64) are all finite
// (gen_tq4vnni.go).
//
//go:noescape
func q2kFiniteAVX512(q *float32, n int) bool

// q2kPrep runs the first half of q2kScoresInt's query preparation for the group at grp into
// scratch (q2kDigitsAAVX512) where q2kScores takes the VNNI kernel and the queries are finite
// (finite: q2kQueriesFinite), and reports whether it did (false too where a q' is not finite:
// q2kScores then starts afresh). ScoresRangeMulti runs it
// for the next group before the current one's second half and cells, so that the half's long
// chain (the maxima's reduction and two divisions) overlaps independent work.
func q2kPrep(q *float32, d int, grp *byte, scratch *float32, finite bool) bool {
	if !finite || !hasAVX512BW || !q2kVNNI(d) {
		return false
	}
	dig := (*byte)(unsafe.Pointer(scratch))
	aux := (*uint32)(unsafe.Add(unsafe.Pointer(scratch), q2kDigBytes))
	return q2kDigitsAAVX512(q, d, grp, dig, aux)
}

// q2kDigitsAAVX512 is the first half of q2kDigitsAVX512: the blocks' maxima, the scales s into
// aux words 0..3 of each block and inv = qmax/max into words 4..7; false where a q' is not
// finite (the queries finite, as q2kDigitsAVX512's). q2kDigitsBAVX512 is the second: from inv, the digits and −128·ΣQ. The two in turn
// write what q2kDigitsAVX512 writes (gen_tq4vnni.go).
//
//go:noescape
func q2kDigitsAAVX512(q *float32, d int, grp *byte, dig *byte, aux *uint32) bool

//go:noescape
func q2kDigitsBAVX512(q *float32, d int, grp *byte, dig *byte, aux *uint32)

// multiScoresQ2KVNNI is multiScoresT2VNNI for rows without a row scale (every row scale 1) and
// a query grid per 64 values (q2kDigitsAVX512): nb chunks of 64 values, one chain a query
// through both 32-value groups of a chunk, started at the chunk's −128·ΣQ (aux words 12..15
// of its first group) and scaled by its s (words 0..3 of its first group) (gen_tq4vnni.go,
// q2kChunk). stage is unused.
//
// multiScoresQ2KPVNNI is multiScoresQ2KVNNI for cells at most 48 bytes apart (d ≤ 192), its
// scores bit for bit (gen_tq4vnni.go, LOAD4P).
//
//go:noescape
func multiScoresQ2KPVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

//go:noescape
func multiScoresQ2KVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// q2kGridQuery is ScoresGrid's work for one group (grp): the query on q2kScoresInt's grid, in
// K's domain; false where ScoresRangeMulti does not round queries.
func q2kGridQuery(dst, q []float32, grp []byte, d int) bool {
	if !q2kVNNI(d) {
		return false
	}
	var qs [q2kMultiMaxDim]float32
	for c := 0; c < d; c++ {
		qs[c] = q[c] * F16ToF32(binary.LittleEndian.Uint16(grp[2*c:]))
		if math.IsNaN(float64(qs[c])) || math.IsInf(float64(qs[c]), 0) {
			copy(dst, q)
			return true
		}
	}
	bs := q2kGridBlock()
	var Q [64]int32
	for b := 0; b < d/bs; b++ {
		s := q2kQuant(qs[bs*b:bs*(b+1)], Q[:bs])
		for i, v := range Q[:bs] {
			c := bs*b + i
			if sc := float64(F16ToF32(binary.LittleEndian.Uint16(grp[2*c:]))); sc != 0 {
				dst[c] = float32(float64(s) * float64(v) / sc)
			} else {
				dst[c] = 0
			}
		}
	}
	return true
}

// q2kQuant quantizes one block of q2k's scaled query q' = q·scale (x) into Q as this CPU's
// kernels do and returns its step s: with AVX-512, q2kQuantUniFMA; on the AVX2 path,
// vnniQuantUni (q2kDigitsAVX2).
func q2kQuant(x []float32, Q []int32) float32 {
	if hasAVX512BW {
		return q2kQuantUniFMA(x, Q)
	}
	return vnniQuantUni(x, Q)
}

// q2kQuantUniFMA is vnniQuantUni with each digit rounded once: Q = RN(q'·inv), the exact
// product of the two float32 rounded to the nearest integer (ties to even), where
// vnniQuantUni rounds the product to float32 first. q2kDigitsAVX512 forms it by one FMA,
// q'·inv + 1.5·2²³, whose float32 result holds the digit in its low byte (gen_tq4vnni.go's
// q2kDigits). The two differ only where the float32 product lands on a half (about one digit
// in 10⁶ on Gaussian queries), by one.
func q2kQuantUniFMA(x []float32, Q []int32) (s float32) {
	clear(Q[:len(x)])
	var m float32
	for _, v := range x {
		a := math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
		if !(a <= math.MaxFloat32) {
			return float32(math.NaN())
		}
		m = max(m, a)
	}
	s = m / vnniQMax1
	if !(s >= 0x1p-126) {
		return 0
	}
	inv := vnniQMax1 / m
	for i, v := range x {
		r := int32(math.RoundToEven(float64(v) * float64(inv)))
		Q[i] = min(max(r, -vnniQMax1), vnniQMax1)
	}
	return s
}

// q2kGridBlock is the number of channels that share one step of q2kScoresInt's query grid on
// this CPU: 64 with AVX-512 (q2kDigitsAVX512 and its kernels), 32 on the AVX2 path
// (q2kDigitsAVX2, vnniDigits' blocks).
func q2kGridBlock() int {
	if hasAVX512BW {
		return 64
	}
	return 32
}
