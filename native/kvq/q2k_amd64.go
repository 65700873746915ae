//go:build amd64 && !purego

package kvq

import "unsafe"

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
func q2kScores(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int) {
	if hasAVX512BW {
		q2kScaleAVX512(q, d, grp, qs)
		cells := (*byte)(unsafe.Add(unsafe.Pointer(grp), 2*d+j0*(d/4)))
		if d%64 == 0 {
			q2kScoresT(qs, d, cells, m, out, ostride)
			return
		}
		multiScoresQ2KZ(qs, d, d, cells, d/4, m, out, ostride)
		return
	}
	q2kScoresAVX2(q, d, grp, j0, m, qs, out, ostride)
}

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

// q2kGridQuery: ScoresRangeMulti takes the queries as they are here.
func q2kGridQuery(dst, q []float32, grp []byte, d int) bool { return false }
