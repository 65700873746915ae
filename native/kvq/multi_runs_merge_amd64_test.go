//go:build amd64 && !purego

package kvq

import "testing"

// TestManyMultiRunsAdjacentMerged runs TestManyMultiRunsAdjacent with mergeRuns set whatever
// the CPU, so that the merged path (oneRun: adjacent f16 and bf16 runs in one kernel call) is
// checked against the run-by-run results on AMD as well, where mergeRuns is off and the test
// would check only the unmerged path.
func TestManyMultiRunsAdjacentMerged(t *testing.T) {
	defer func(m bool) { mergeRuns = m }(mergeRuns)
	mergeRuns = true
	TestManyMultiRunsAdjacent(t)
}
