//go:build arm64 && !purego

package kvq

import "unsafe"

// hasQ2KKernel selects q2k's NEON scores kernel for ScoresRangeMulti: every arm64 CPU has it.
const hasQ2KKernel = true

// q2kScores is ScoresRangeMulti's kernel on arm64: the four queries multiplied by the group's
// channel scales into qs (q2kScaleNEON, one rounding each, as ScoresRange's q_c·scale_c), then
// the cells scored against them by multiScoresQ2KNEON (multi_arm64.s: turbo2's decoder, q2k's
// codes being turbo2's bit stream with q2k's levels (q2kPlanes), without a row scale; 16 lanes of fused
// multiply-adds a query, reduced pairwise). Direct calls keep the caller's stack buffers from
// escaping. prepped is never true here (q2kPrep prepares nothing).
func q2kScores(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int, prepped, finite bool) {
	q2kScaleNEON(q, d, grp, qs)
	cells := (*byte)(unsafe.Add(unsafe.Pointer(grp), 2*d+j0*(d/4)))
	multiScoresQ2KNEON(qs, d, d, cells, d/4, m, out, ostride)
}

// q2kPrep: nothing to prepare ahead on arm64.
func q2kPrep(q *float32, d int, grp *byte, scratch *float32, finite bool) bool { return false }

// q2kScoresGroups: no group kernel here (q2kScores scores each group).
func q2kScoresGroups(q *float32, d int, grp *byte, ng int, scratch *float32, out *float32, ostride int) int {
	return 0
}

// q2kQueriesFinite: no kernel here needs to know.
func q2kQueriesFinite(q *float32, d int) bool { return true }

// q2kScaleNEON writes qs_h[c] = q_h[c]·scale_c for the four queries q[h·d:] (d a multiple of
// 32) and the channel scales (f16) that open the group at grp (multi_arm64.s).
//
//go:noescape
func q2kScaleNEON(q *float32, d int, grp *byte, qs *float32)

// multiScoresQ2KNEON scores four queries (the group's channel scales folded in) against m q2k
// cells of d/4 code bytes each (rb apart): multiKernels' scores contract with x the cells'
// unscaled levels.
//
//go:noescape
func multiScoresQ2KNEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

// q2kGridQuery: ScoresRangeMulti takes the queries as they are here.
func q2kGridQuery(dst, q []float32, grp []byte, d int) bool { return false }
