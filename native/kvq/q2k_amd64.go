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
func q2kScores(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int) {
	if hasAVX512BW {
		q2kScaleAVX512(q, d, grp, qs)
		cells := (*byte)(unsafe.Add(unsafe.Pointer(grp), 2*d+j0*(d/4)))
		multiScoresQ2KZ(qs, d, d, cells, d/4, m, out, ostride)
		return
	}
	q2kScoresAVX2(q, d, grp, j0, m, qs, out, ostride)
}

// The kernels' contract is q2kScoresAVX2's (q2k_amd64.s).

//go:noescape
func q2kScoresAVX2(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int)

// q2kScaleAVX512 writes qs_h[c] = q_h[c]·scale_c for the four queries and the group's channel
// scales (q2k_amd64.s).
//
//go:noescape
func q2kScaleAVX512(q *float32, d int, grp *byte, qs *float32)
