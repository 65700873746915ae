//go:build amd64 && !purego

package kvq

// hasQ2KKernel selects q2kScoresAVX2 (q2k_amd64.s) for ScoresRangeMulti.
var hasQ2KKernel = hasAVX2

//go:noescape
func q2kScoresAVX2(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int)
