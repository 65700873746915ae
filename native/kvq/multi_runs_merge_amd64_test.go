//go:build amd64 && !purego

package kvq

import "testing"

// TestManyMultiRunsAdjacentMerged runs TestManyMultiRunsAdjacent with mergeRuns set whatever
// the CPU, so that the merged path (runStretches: adjacent runs a stretch a kernel call) is
// checked against the run-by-run results on AMD as well, where mergeRuns is off and the test
// would check only the unmerged path; and again with stretches of a few tiles taken in one call
// (mergeMin), so that the two-stream scores kernels (twoStreamRows) meet stretches between
// runs taken apart.
func TestManyMultiRunsAdjacentMerged(t *testing.T) {
	defer func(m bool, k int) { mergeRuns, mergeMin = m, k }(mergeRuns, mergeMin)
	mergeRuns = true
	TestManyMultiRunsAdjacent(t)
	mergeMin = 8 * AccumulateTile
	TestManyMultiRunsAdjacent(t)
}
