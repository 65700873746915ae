//go:build (!amd64 && !arm64) || purego

package kvq

const hasQ2KKernel = false

func q2kScores(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int, prepped, finite bool) {
	panic("kvq: no q2k kernel")
}

func q2kPrep(q *float32, d int, grp *byte, scratch *float32, finite bool) bool { return false }

// q2kScoresGroups: no group kernel here (q2kScores scores each group).
func q2kScoresGroups(q *float32, d int, grp *byte, ng int, scratch *float32, out *float32, ostride int) int {
	return 0
}

// q2kQueriesFinite: no kernel here needs to know.
func q2kQueriesFinite(q *float32, d int) bool { return true }

// q2kGridQuery: ScoresRangeMulti takes the queries as they are here.
func q2kGridQuery(dst, q []float32, grp []byte, d int) bool { return false }
