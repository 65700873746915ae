//go:build amd64 && !purego

package kvq

import (
	"math/rand/v2"
	"testing"
)

// TestAccRunsKernel: where the CPU has the AVX-512 or the AVX2 f16 kernels, f16 runs of up to a tile with
// four accumulators take AccumulateManyMultiRuns's kernel path (accRuns), which
// TestAccumulateManyMultiRuns checks bit for bit.
func TestAccRunsKernel(t *testing.T) {
	c := mustCodec(t, F16, 128)
	if multiF16 != avx512Kernels[0] && multiF16 != f16AVX2 {
		t.Skip("no AVX-512 or AVX2 f16 kernels")
	}
	rb := c.RowBytes()
	if !accRuns(c, make([]float32, 4*128), 4, make([]float32, 4*64), [][]byte{make([]byte, 64*rb)}) {
		t.Error("f16: AccumulateManyMultiRuns does not take the f16 kernel")
	}
}

// TestRunsKernels: on Zen 4, q8_0 and q4_0 runs (rotated or not) take the runs flavours, whose
// prefetches follow the runs: with the integer kernels the values' multiAccQ80Z4RunsINT and
// multiAccQ40V8Z4RunsINT (accIntRuns) and the scores' multiScoresQ80OneZ4RunsVNNI (q8_0 at one
// query digit) and multiScoresQ40HdrZ4RunsVNNI (runsPF); and f16's scores
// multiScoresF16Z4Runs (scoresRuns); the values of tq4 and the turbo tiers their 8-bit
// kernels' runs flavours (accIntRuns), and the scores of tq4 and turbo4
// multiScoresTQ4B2RunsVNNI and multiScoresT4B2RunsVNNI (scoresRunsTQ4; tq4's uniform-scale
// multiScoresTQ4B2URunsVNNI where tq4Uni), checked here bit for bit with the pair kernels forced
// (tq4PairMode 1) against DotManyMulti over each run.
// TestAccumulateManyMultiRuns and TestDotManyMultiRuns check them bit for bit.
func TestRunsKernels(t *testing.T) {
	for _, rot := range []bool{false, true} {
		c, err := NewCodec(Q8_0, 128, CodecOptions{Seed: 3, Rotate: rot})
		if err != nil {
			t.Fatal(err)
		}
		rb := c.RowBytes()
		runs := [][]byte{make([]byte, 64*rb), make([]byte, 64*rb), make([]byte, 3*rb)}
		if accRunsQ80 && intAcc() && !accIntRuns(c, make([]float32, 4*128), 4, make([]float32, 4*131), runs) {
			t.Errorf("rot=%v: q8_0 values do not take multiAccQ80Z4RunsINT", rot)
		}
	}
	for _, rot := range []bool{false, true} {
		c, err := NewCodec(Q4_0, 128, CodecOptions{Seed: 3, Rotate: rot})
		if err != nil {
			t.Fatal(err)
		}
		rb := c.RowBytes()
		if accRunsQ40 && intAcc() && !accIntRuns(c, make([]float32, 4*128), 4, make([]float32, 4*67), [][]byte{make([]byte, 64*rb), make([]byte, 3*rb)}) {
			t.Errorf("rot=%v: q4_0 values do not take multiAccQ40V8Z4RunsINT", rot)
		}
	}
	if vnniHdrZ4 && !vnniStaged && intScores {
		rows := make([]byte, 64*72)
		if runsPF(vnniQ4_0, 1, false, rows[:8*72], [][]byte{rows[16*72:]}) != 16*72 {
			t.Error("q4_0 scores: runsPF is not the next run's offset")
		}
	}
	if f16ScoresRuns && multiF16 == avx512Kernels[0] {
		c := mustCodec(t, F16, 128)
		if !scoresRuns(c, make([]float32, 4*128), 4, [][]byte{make([]byte, 64*c.RowBytes()), make([]byte, 3*c.RowBytes())}, make([]float32, 4*67)) {
			t.Error("f16 scores do not take multiScoresF16Z4Runs")
		}
	}
	if vnniQ8One && zen4Stream && intScores {
		rows := make([]byte, 64*136)
		if runsPF(vnniQ8_0, 1, false, rows[:8*136], [][]byte{nil, rows[16*136:]}) != 16*136 {
			t.Error("q8_0 scores: runsPF is not the next non-empty run's offset")
		}
	}
	for _, rot := range []bool{false, true} {
		c, err := NewCodec(TQ4, 128, CodecOptions{Seed: 3, Rotate: rot})
		if err != nil {
			t.Fatal(err)
		}
		rb := c.RowBytes()
		runs := [][]byte{make([]byte, 64*rb), make([]byte, 64*rb), make([]byte, 3*rb)}
		if accRunsTQ4 && turboAccKernels(c) == intAccT4FB && !accIntRuns(c, make([]float32, 4*128), 4, make([]float32, 4*131), runs) {
			t.Errorf("rot=%v: tq4 values do not take multiAccT4FBRunsINT", rot)
		}
	}
	for _, f := range []Format{Turbo4, Turbo3, Turbo2} {
		c := mustCodec(t, f, 128)
		rb := c.RowBytes()
		runs := [][]byte{make([]byte, 64*rb), make([]byte, 64*rb), make([]byte, 3*rb)}
		k := turboAccKernels(c)
		if accRunsTQ4 && (k == intAccT4B || k == intAccT3B || k == intAccT2B) && !accIntRuns(c, make([]float32, 4*128), 4, make([]float32, 4*131), runs) {
			t.Errorf("%s values do not take their runs flavour", f)
		}
	}
	if scoresRunsTQ4 && hasVNNIBW && hasVBMI {
		defer func(m, u int) { tq4PairMode, tq4UniMode = m, u }(tq4PairMode, tq4UniMode)
		tq4PairMode = 1
		rng := rand.New(rand.NewPCG(51, 52))
		for _, uni := range []int{-1, 1} { // tq4 on the per-chunk grid, and uniform (tq4Uni: TQ4B2URuns)
			tq4UniMode = uni
			for _, f := range []Format{TQ4, Turbo4} {
				c := mustCodec(t, f, 128)
				for _, lens := range [][]int{{64, 64, 64, 64}, {64, 17, 0, 16, 3, 64, 1, 31}, {16}} {
					checkRuns(t, rng, c, lens)
				}
			}
		}
	}
}
