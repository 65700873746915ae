//go:build amd64 && !purego

package kvq

// hasQ2KKernel selects a q2k scores kernel (q2k_amd64.s) for ScoresRangeMulti.
var hasQ2KKernel = hasAVX2

// q2kScores is ScoresRangeMulti's kernel: q2kScoresAVX512 on CPUs with AVX-512 F and BW (not
// under KVLAB_NO_AVX512), else q2kScoresAVX2. The 512-bit one takes about half the vector
// operations (15 against 29 a 32-channel chunk of four queries). Direct calls keep the
// caller's stack buffers from escaping (a decode step allocates nothing).
func q2kScores(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int) {
	if hasAVX512BW {
		q2kScoresAVX512(q, d, grp, j0, m, qs, out, ostride)
		return
	}
	q2kScoresAVX2(q, d, grp, j0, m, qs, out, ostride)
}

// The kernels' contract is q2kScoresAVX2's (q2k_amd64.s).

//go:noescape
func q2kScoresAVX2(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int)

//go:noescape
func q2kScoresAVX512(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int)
