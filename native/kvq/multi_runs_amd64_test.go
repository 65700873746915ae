//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
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
// prefetches follow the runs: with the integer kernels the values' multiAccQ80Z4RunsINT (q8_0
// without a rotated codec's offsets: multiAccQ80Z4ListINT, runs a call) and
// multiAccQ40V8Z4RunsINT (accIntRuns) and the scores' multiScoresQ80OneZ4RunsVNNI (q8_0 at one
// query digit) and multiScoresQ40HdrZ4RunsVNNI (runsPF); and f16's scores
// multiScoresF16Z4Runs (scoresRuns); the values of tq4 and the turbo tiers their 8-bit
// kernels' runs flavours (accIntRuns), and the scores of tq4 and turbo4
// multiScoresTQ4B2RunsVNNI and multiScoresT4B2RunsVNNI (scoresRunsTQ4; tq4's uniform-scale
// multiScoresTQ4B2URunsVNNI where tq4Uni), checked here bit for bit with the pair kernels forced
// (tq4PairMode 1) against DotManyMulti over each run.
// bf16's values and scores take multiAccBF16RunsAVX512 and multiScoresBF16RunsAVX512 (accRuns,
// scoresRuns), q5_0's and q5_1's values multiAccQ50VRunsINT and multiAccQ51V8Z4RunsINT
// (accIntRuns) and their scores multiScoresQ50Z4RunsGFNI and multiScoresQ51Z4RunsGFNI (runsPF),
// q4_1's and iq4_nl's values multiAccQ41V8Z4RunsINT and multiAccIQ4NLV8Z4RunsINT and their
// scores multiScoresQ41HdrZ4RunsVNNI and multiScoresIQ4NLHdrZ4RunsVBMI; fp8's values
// multiAccFP8BF16RunsAVX512 (accFP8Runs) and scores multiScoresFP8BF16HRunsAVX512
// (fp8ScoresRuns), on Intel's float32 kernels (fp8F32) its values multiAccFP8VBMIRunsAVX512;
// turbo3's and turbo2's scores multiScoresT3PURunsVNNI and
// multiScoresT2PURunsVNNI (t23ScoresRuns). On the AVX2 kernels (any CPU) bf16's values take
// multiAccBF16AVX2TPF, fp8's multiAccFP8AVX2TPF, q8_0's multiAccQ80AVX2RunsINT (its int16 kernel),
// and f16's, bf16's and fp8's scores their runs flavours (avx2FloatScoresRuns), q8_0's one-digit
// scores on the high-byte route avx2ScoresQ80OneRuns.
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
			t.Errorf("rot=%v: q8_0 values do not take multiAccQ80Z4RunsINT (multiAccQ80Z4ListINT)", rot)
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
	if hdrRuns && !vnniStaged && intScores {
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
	if multiBF16 == bf16AVX2 {
		c := mustCodec(t, BF16, 128)
		rb := c.RowBytes()
		if !accRuns(c, make([]float32, 4*128), 4, make([]float32, 4*67), [][]byte{make([]byte, 64*rb), make([]byte, 3*rb)}) {
			t.Error("bf16 values do not take multiAccBF16AVX2TPF")
		}
	}
	// The AVX2 kernels: f16's, bf16's and fp8's scores (avx2FloatScoresRuns), fp8's and q8_0's
	// values (multiAccFP8AVX2TPF, multiAccQ80AVX2RunsINT) and q8_0's one-digit scores on the
	// high-byte route (avx2ScoresQ80OneRuns: runsPF).
	for _, f := range []Format{F16, BF16, FP8} {
		for _, rot := range []bool{false, true} {
			c, err := NewCodec(f, 128, CodecOptions{Seed: 3, Rotate: rot})
			if err != nil {
				t.Fatal(err)
			}
			rb := c.RowBytes()
			runs := [][]byte{make([]byte, 64*rb), make([]byte, 3*rb)}
			on := (f == F16 && multiF16 == f16AVX2) || (f == BF16 && multiBF16 == bf16AVX2) || (f == FP8 && multiFP8 == fp8AVX2)
			if on && !scoresRuns(c, make([]float32, 4*128), 4, runs, make([]float32, 4*67)) {
				t.Errorf("%s rot=%v: scores do not take their AVX2 runs flavour", f, rot)
			}
			if f == FP8 && fp8AccKernels() == fp8AVX2 && !accRuns(c, make([]float32, 4*128), 4, make([]float32, 4*67), runs) {
				t.Errorf("%s rot=%v: values do not take multiAccFP8AVX2TPF", f, rot)
			}
		}
	}
	if !intAcc() && avx2IntAccFor(intAccQ8_0) == avx2IntAcc[1] {
		for _, rot := range []bool{false, true} {
			c, err := NewCodec(Q8_0, 128, CodecOptions{Seed: 3, Rotate: rot})
			if err != nil {
				t.Fatal(err)
			}
			rb := c.RowBytes()
			runs := [][]byte{make([]byte, 64*rb), make([]byte, 64*rb), make([]byte, 3*rb)}
			if !accIntRuns(c, make([]float32, 4*128), 4, make([]float32, 4*131), runs) {
				t.Errorf("rot=%v: q8_0 values do not take multiAccQ80AVX2RunsINT", rot)
			}
		}
	}
	if avx2Int && !hasVNNI && avx2HBRoute(vnniQ8_0) && !avx2TwinsOn() {
		rows := make([]byte, 64*136)
		if runsPF(vnniQ8_0, 1, true, rows[:8*136], [][]byte{nil, rows[16*136:]}) != 16*136 {
			t.Error("q8_0 AVX2 scores: runsPF is not the next non-empty run's offset")
		}
	}
	if bf16RunsZ4 && multiBF16 == bf16AVX512 {
		c := mustCodec(t, BF16, 128)
		rb := c.RowBytes()
		runs := [][]byte{make([]byte, 64*rb), make([]byte, 3*rb)}
		if !accRuns(c, make([]float32, 4*128), 4, make([]float32, 4*67), runs) {
			t.Error("bf16 values do not take multiAccBF16RunsAVX512")
		}
		if !scoresRuns(c, make([]float32, 4*128), 4, runs, make([]float32, 4*67)) {
			t.Error("bf16 scores do not take multiScoresBF16RunsAVX512")
		}
	}
	for _, f := range []Format{Q4_1, IQ4_NL} {
		c := mustCodec(t, f, 128)
		rb := c.RowBytes()
		runs := [][]byte{make([]byte, 64*rb), make([]byte, 64*rb), make([]byte, 3*rb)}
		if accRunsQ40 && intAcc() && !accIntRuns(c, make([]float32, 4*128), 4, make([]float32, 4*131), runs) {
			t.Errorf("%s values do not take their runs flavour", f)
		}
		kind, on := vnniQ4_1, hdrRuns && !vnniStaged && intScores
		if f == IQ4_NL {
			kind, on = vnniIQ4NL, on && iq4ScoresVBMI && intScoresBW
		}
		if on && runsPF(kind, 1, false, runs[0], runs[1:]) != runOffset(runs[0], runs[1]) {
			t.Errorf("%s scores: runsPF is not the next run's offset", f)
		}
	}
	if fp8AccKernels() == fp8F32 {
		c := mustCodec(t, FP8, 128)
		rb := c.RowBytes()
		runs := [][]byte{make([]byte, 64*rb), make([]byte, 3*rb)}
		if !accRuns(c, make([]float32, 4*128), 4, make([]float32, 4*67), runs) {
			t.Error("fp8 values do not take multiAccFP8VBMIRunsAVX512 (fp8AMXAccRuns with AMX)")
		}
		if !scoresRuns(c, make([]float32, 4*128), 4, runs, make([]float32, 4*67)) {
			t.Error("fp8 scores do not take fp8F32ScoresRuns (fp8AMXScoresRuns with AMX)")
		}
	}
	if fp8RunsZ4 && fp8BF16AccActive() && fp8BF16ScoresH {
		c := mustCodec(t, FP8, 128)
		rb := c.RowBytes()
		runs := [][]byte{make([]byte, 64*rb), make([]byte, 3*rb)}
		if !accRuns(c, make([]float32, 4*128), 4, make([]float32, 4*67), runs) {
			t.Error("fp8 values do not take multiAccFP8BF16RunsAVX512")
		}
		if !scoresRuns(c, make([]float32, 4*128), 4, runs, make([]float32, 4*67)) {
			t.Error("fp8 scores do not take fp8ScoresRuns")
		}
	}
	for _, f := range []Format{Q5_0, Q5_1} {
		c := mustCodec(t, f, 128)
		rb := c.RowBytes()
		runs := [][]byte{make([]byte, 64*rb), make([]byte, 64*rb), make([]byte, 3*rb)}
		on := accRunsQ50
		if f == Q5_1 {
			on = accRunsQ51
		}
		if on && intAcc() && !accIntRuns(c, make([]float32, 4*128), 4, make([]float32, 4*131), runs) {
			t.Errorf("%s values do not take their runs flavour", f)
		}
		kind := vnniQ5_0
		if f == Q5_1 {
			kind = vnniQ5_1
		}
		if q5ScoresGFNI && q5ScoresZ4 && intScoresBW && runsPF(kind, 1, false, runs[0], runs[1:]) != runOffset(runs[0], runs[1]) {
			t.Errorf("%s scores: runsPF is not the next run's offset", f)
		}
	}
	for _, f := range []Format{Turbo3, Turbo2} {
		c := mustCodec(t, f, 128)
		kind := vnniT3
		if f == Turbo2 {
			kind = vnniT2
		}
		if scoresRunsTQ4 && hasVNNIBW && hasVBMI && t23Uni(kind, 128) && !t23ScoresRuns(kind, 128, c.RowBytes()) {
			t.Errorf("%s scores do not take their packed kernel's runs flavour", f)
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
					checkRuns(t, rng, c, lens, false)
				}
			}
		}
	}
}

// TestQ80ListMatchesKernel: multiAccQ80Z4ListINT over rows split into runs of 64 (the last
// shorter) gives multiAccQ80Z4INT's sums over the same rows bit for bit (its tiles are those
// runs), odd row counts included, and writes nothing past the accumulators.
func TestQ80ListMatchesKernel(t *testing.T) {
	if !intAcc() {
		t.Skip("no Zen 4 integer values kernels")
	}
	c := Unwrap(mustCodec(t, Q8_0, 128))
	rb := c.RowBytes()
	rng := rand.New(rand.NewPCG(61, 62))
	const m0 = 777
	rows := make([]byte, m0*rb)
	src := outlierRows(rng, m0, 128)
	for j := 0; j < m0; j++ {
		c.Encode(rows[j*rb:(j+1)*rb], src[j*128:(j+1)*128])
	}
	for _, m := range []int{1, 63, 64, 65, 130, 777} {
		w := gaussianRows(rng, m, 4, 0.1)
		start := gaussianRows(rng, 4, 128, 1)
		const sentinel = 12345.5
		want := append(append([]float32(nil), start...), sentinel)
		got := append(append([]float32(nil), start...), sentinel)
		multiAccQ80Z4INT(&want[0], 128, 128, &rows[0], rb, m, &w[0], 16)
		q80ListAsAcc(&got[0], 128, 128, &rows[0], rb, m, &w[0], 16)
		if got[4*128] != sentinel {
			t.Fatalf("m %d: wrote past the accumulators", m)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("m %d: acc[%d] %v over the list, %v", m, i, got[i], want[i])
			}
		}
	}
}

// TestFP8ScoresRunsBothLoops checks fp8's scores over runs (fp8ScoresRuns) against
// DotManyMulti over each run, bit for bit, with each of the kernels' loops of four rows:
// multiScoresFP8BF16HRunsAVX512 (fp8BF16ScoresZ4 false) and multiScoresFP8BF16HZ4RunsAVX512
// (true, Zen 4's choice): runs of odd lengths, one empty, of a page (64 rows) and one past the
// scored rows (checkRuns).
func TestFP8ScoresRunsBothLoops(t *testing.T) {
	if f, ok := mustCodec(t, FP8, 128).(fp8Codec); !ok || !fp8RunsZ4 || !fp8BF16ScoresH || !f.bf16Scores() {
		t.Skip("fp8's scores do not take fp8ScoresRuns")
	}
	saved := fp8BF16ScoresZ4
	defer func() { fp8BF16ScoresZ4 = saved }()
	rng := rand.New(rand.NewPCG(51, 52))
	for _, z4 := range []bool{false, true} {
		fp8BF16ScoresZ4 = z4
		for _, rot := range []bool{false, true} {
			c, err := NewCodec(FP8, 128, CodecOptions{Seed: 3, Head: 1, Rotate: rot})
			if err != nil {
				t.Fatal(err)
			}
			if !scoresRuns(c, make([]float32, 4*128), 4, [][]byte{make([]byte, 64*c.RowBytes())}, make([]float32, 4*64)) {
				t.Fatalf("z4=%v rot=%v: fp8 scores do not take fp8ScoresRuns", z4, rot)
			}
			t.Run(fmt.Sprintf("z4=%v/rot=%v", z4, rot), func(t *testing.T) {
				checkRuns(t, rng, c, []int{64, 17, 0, 64, 3, 64, 1, 31, 5}, false)
			})
		}
	}
}
