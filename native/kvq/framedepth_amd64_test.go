//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/kvlab/kvlab/internal/cputime"
)

// frameMod is p's address mod 64.
//
//go:noinline
func frameMod(p unsafe.Pointer) int { return int(uintptr(p) & 63) }

// depthCall calls k from a frame of its own, its local's address mod 64 the result; depth1 to
// depth8 have locals of 1 to 8 words.
type depthCall func(k accKernel, acc *float32, d, nv int, rows *byte, rb, m int, w *float32, ws int) int

//go:noinline
func depth1(k accKernel, acc *float32, d, nv int, rows *byte, rb, m int, w *float32, ws int) int {
	var p [1]uint64
	k(acc, d, nv, rows, rb, m, w, ws)
	return frameMod(unsafe.Pointer(&p))
}

//go:noinline
func depth2(k accKernel, acc *float32, d, nv int, rows *byte, rb, m int, w *float32, ws int) int {
	var p [2]uint64
	k(acc, d, nv, rows, rb, m, w, ws)
	return frameMod(unsafe.Pointer(&p))
}

//go:noinline
func depth3(k accKernel, acc *float32, d, nv int, rows *byte, rb, m int, w *float32, ws int) int {
	var p [3]uint64
	k(acc, d, nv, rows, rb, m, w, ws)
	return frameMod(unsafe.Pointer(&p))
}

//go:noinline
func depth4(k accKernel, acc *float32, d, nv int, rows *byte, rb, m int, w *float32, ws int) int {
	var p [4]uint64
	k(acc, d, nv, rows, rb, m, w, ws)
	return frameMod(unsafe.Pointer(&p))
}

//go:noinline
func depth5(k accKernel, acc *float32, d, nv int, rows *byte, rb, m int, w *float32, ws int) int {
	var p [5]uint64
	k(acc, d, nv, rows, rb, m, w, ws)
	return frameMod(unsafe.Pointer(&p))
}

//go:noinline
func depth6(k accKernel, acc *float32, d, nv int, rows *byte, rb, m int, w *float32, ws int) int {
	var p [6]uint64
	k(acc, d, nv, rows, rb, m, w, ws)
	return frameMod(unsafe.Pointer(&p))
}

//go:noinline
func depth7(k accKernel, acc *float32, d, nv int, rows *byte, rb, m int, w *float32, ws int) int {
	var p [7]uint64
	k(acc, d, nv, rows, rb, m, w, ws)
	return frameMod(unsafe.Pointer(&p))
}

//go:noinline
func depth8(k accKernel, acc *float32, d, nv int, rows *byte, rb, m int, w *float32, ws int) int {
	var p [8]uint64
	k(acc, d, nv, rows, rb, m, w, ws)
	return frameMod(unsafe.Pointer(&p))
}

// depthCalls are depth1 to depth8.
var depthCalls = []depthCall{depth1, depth2, depth3, depth4, depth5, depth6, depth7, depth8}

// frameDepthCases are the kernels gen_align.go rewrites that take four accumulators' weights
// (the two-accumulator ones read the first two of each four), with their formats.
func frameDepthCases() []struct {
	f  Format
	ks []accKernel
} {
	cases := []struct {
		f  Format
		ks []accKernel
	}{
		{Q4_0, []accKernel{multiAccQ40V8Z4INT}},
		{Q4_1, []accKernel{multiAccQ41V8Z4INT}},
		{IQ4_NL, []accKernel{multiAccIQ4NLV8Z4INT}},
		{Q8_0, []accKernel{multiAccQ80Z4INT}},
		{Q4_0, []accKernel{multiAccQ40V8Z4TwoINT}},
		{Q4_1, []accKernel{multiAccQ41V8Z4TwoINT}},
		{IQ4_NL, []accKernel{multiAccIQ4NLV8Z4TwoINT}},
		{Q8_0, []accKernel{multiAccQ80Z4TwoINT}},
		{Q5_0, []accKernel{multiAccQ50VINT}},
		{Q5_0, []accKernel{multiAccQ50VZ4INT}},
	}
	if hasBITALG && hasGFNI512 {
		cases = append(cases, []struct {
			f  Format
			ks []accKernel
		}{{Q5_0, []accKernel{multiAccQ50V8Z4INT}}, {Q5_0, []accKernel{multiAccQ50VIINT}}, {Q5_1, []accKernel{multiAccQ51V8Z4INT}}, {Q5_1, []accKernel{multiAccQ51V8XINT}}, {Q5_1, []accKernel{q51RunsAsAcc}}}...)
	}
	return append(cases, []struct {
		f  Format
		ks []accKernel
	}{
		{Q8_0, []accKernel{q80RunsAsAcc}}, {Q8_0, []accKernel{q80ListAsAcc}}, {Q4_0, []accKernel{q40RunsAsAcc}}, {Q4_1, []accKernel{q41RunsAsAcc}},
		{IQ4_NL, []accKernel{iq4nlRunsAsAcc}}, {Q5_0, []accKernel{q50RunsAsAcc}},
	}...)
}

// The runs flavours gen_align.go rewrites (gen_runs.go), called as their kernels are: pf 0
// (the prefetches at the rows themselves), which does not change the sums.
func q80RunsAsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiAccQ80Z4RunsINT(acc, d, nv, rows, rb, m, w, wstride, 0)
}

// q80ListAsAcc is multiAccQ80Z4ListINT over the m rows as runs of 64 (the last shorter).
func q80ListAsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	list := make([]runEntry, 0, m/64+2)
	for j := 0; j < m; j += 64 {
		list = append(list, runEntry{unsafe.Add(unsafe.Pointer(rows), j*rb), uintptr(min(64, m-j)), 0})
	}
	list = append(list, list[len(list)-1])
	multiAccQ80Z4ListINT(acc, d, nv, rows, rb, m, w, wstride, &list[0])
}

func q40RunsAsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiAccQ40V8Z4RunsINT(acc, d, nv, rows, rb, m, w, wstride, 0)
}

func q41RunsAsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiAccQ41V8Z4RunsINT(acc, d, nv, rows, rb, m, w, wstride, 0)
}

func iq4nlRunsAsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiAccIQ4NLV8Z4RunsINT(acc, d, nv, rows, rb, m, w, wstride, 0)
}

func q50RunsAsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiAccQ50VRunsINT(acc, d, nv, rows, rb, m, w, wstride, 0)
}

func q51RunsAsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiAccQ51V8Z4RunsINT(acc, d, nv, rows, rb, m, w, wstride, 0)
}

func q80AVX2RunsAsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiAccQ80AVX2RunsINT(acc, d, nv, rows, rb, m, w, wstride, 0, 0)
}

func fp8AVX2RunsAsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiAccFP8AVX2TPF(acc, d, nv, rows, rb, m, w, wstride, 0, 0)
}

// fp8ScoresRunsAVX2AsAcc is multiScoresFP8AVX2TRuns called as fp8ScoresAVX2AsAcc calls its
// kernel, pf 0.
func fp8ScoresRunsAVX2AsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiScoresFP8AVX2TRuns(acc, d, nv, rows, rb, m, w, wstride, 0)
}

// frameDepthAVX2Cases are the AVX2 kernels gen_align.go rewrites, with their formats, and
// multiScoresFP8AVX2TRuns, which aligns its frame's scratches itself.
func frameDepthAVX2Cases() []struct {
	f  Format
	ks []accKernel
} {
	return []struct {
		f  Format
		ks []accKernel
	}{
		{Q4_0, []accKernel{multiAccQ40AVX2INT}}, {Q4_0, []accKernel{multiAccQ40B8AVX2INT}},
		{Q4_0, []accKernel{multiAccQ40TwoAVX2INT}}, {Q4_0, []accKernel{multiAccQ40B8TwoAVX2INT}},
		{Q4_1, []accKernel{multiAccQ41AVX2INT}}, {Q4_1, []accKernel{multiAccQ41B8AVX2INT}},
		{Q4_1, []accKernel{multiAccQ41TwoAVX2INT}}, {Q4_1, []accKernel{multiAccQ41B8TwoAVX2INT}},
		{Q5_0, []accKernel{multiAccQ50AVX2INT}}, {Q5_0, []accKernel{multiAccQ50B8AVX2INT}},
		{Q5_0, []accKernel{multiAccQ50A8AVX2INT}}, {Q5_0, []accKernel{multiAccQ50TwoAVX2INT}},
		{Q5_0, []accKernel{multiAccQ50B8TwoAVX2INT}}, {Q5_0, []accKernel{multiAccQ50A8TwoAVX2INT}},
		{Q5_1, []accKernel{multiAccQ51AVX2INT}}, {Q5_1, []accKernel{multiAccQ51B8AVX2INT}},
		{Q5_1, []accKernel{multiAccQ51U8AVX2INT}}, {Q5_1, []accKernel{multiAccQ51TwoAVX2INT}},
		{Q5_1, []accKernel{multiAccQ51B8TwoAVX2INT}}, {Q5_1, []accKernel{multiAccQ51U8TwoAVX2INT}},
		{Q8_0, []accKernel{multiAccQ80AVX2INT}}, {Q8_0, []accKernel{multiAccQ80A8AVX2INT}},
		{Q8_0, []accKernel{multiAccQ80TwoAVX2INT}}, {Q8_0, []accKernel{multiAccQ80A8TwoAVX2INT}},
		{IQ4_NL, []accKernel{multiAccIQ4NLAVX2INT}}, {IQ4_NL, []accKernel{multiAccIQ4NLTwoAVX2INT}},
		{IQ4_NL, []accKernel{multiAccIQ4NLA8AVX2INT}}, {IQ4_NL, []accKernel{multiAccIQ4NLA8TwoAVX2INT}},
		{FP8, []accKernel{multiAccFP8AVX2T}}, {FP8, []accKernel{fp8ScoresAVX2AsAcc}},
		{Q8_0, []accKernel{q80AVX2RunsAsAcc}}, {FP8, []accKernel{fp8AVX2RunsAsAcc}}, {FP8, []accKernel{fp8ScoresRunsAVX2AsAcc}},
	}
}

// fp8ScoresAVX2AsAcc is multiScoresFP8AVX2T (gen_align.go aligns its frame too) called as an
// accumulate kernel: acc its four queries, w its scores (four a row: wstride must be 4).
func fp8ScoresAVX2AsAcc(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	multiScoresFP8AVX2T(acc, d, nv, rows, rb, m, w, wstride)
}

// TestFrameDepthMatches checks that the kernels gen_align.go rewrites (those this CPU runs) give the same sums bit
// for bit called from eight stack depths 8 bytes apart (their aligned frame base moves by 0 to
// 56 bytes) and from the test itself, odd row counts and tiles included, and write nothing
// past their accumulators. TestIntAcc8Matches, TestAVX2IntAccMatches and the others check the sums
// themselves.
func TestFrameDepthMatches(t *testing.T) {
	var cases []struct {
		f  Format
		ks []accKernel
	}
	if intAcc() && hasVBMI {
		cases = frameDepthCases()
	}
	if hasAVX2 {
		cases = append(cases, frameDepthAVX2Cases()...)
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for ci, tc := range cases {
		if p := reflect.ValueOf(tc.ks[0]).Pointer(); p == reflect.ValueOf(fp8ScoresAVX2AsAcc).Pointer() || p == reflect.ValueOf(fp8ScoresRunsAVX2AsAcc).Pointer() {
			checkScoresDepths(t, tc.ks[0], rng)
			continue
		}
		c := Unwrap(mustCodec(t, tc.f, benchDim))
		rb := c.RowBytes()
		tile, _ := benchRowsOf(c)
		for _, m := range []int{1, 63, 64, 130, 777} {
			w := make([]float32, 4*m)
			for i := range w {
				w[i] = float32(rng.NormFloat64()) / float32(m)
			}
			want := make([]float32, 4*benchDim+16)
			for i := range want {
				want[i] = float32(i) * 0.25
			}
			start := slices.Clone(want)
			tc.ks[0](&want[0], benchDim, benchDim, &tile[0], rb, m, &w[0], 16)
			mods := map[int]bool{}
			for _, call := range depthCalls {
				got := slices.Clone(start)
				mods[call(tc.ks[0], &got[0], benchDim, benchDim, &tile[0], rb, m, &w[0], 16)] = true
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("case %d %v m %d: acc[%d] %v called from a depth, %v not", ci, tc.f, m, i, got[i], want[i])
					}
				}
			}
			for i := 4 * benchDim; i < len(want); i++ {
				if want[i] != start[i] {
					t.Fatalf("case %d %v m %d: acc[%d] written past the accumulators", ci, tc.f, m, i)
				}
			}
			if len(mods) != 8 {
				t.Fatalf("the depths' locals sit at %d offsets mod 64, not 8", len(mods))
			}
		}
	}
}

// checkScoresDepths is TestFrameDepthMatches for fp8ScoresAVX2AsAcc: the scores of four
// queries, four a row, the same from every depth, nothing written past them.
func checkScoresDepths(t *testing.T, k accKernel, rng *rand.Rand) {
	c := Unwrap(mustCodec(t, FP8, benchDim))
	tile, _ := benchRowsOf(c)
	q := make([]float32, 4*benchDim)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	for _, m := range []int{1, 63, 64, 130, 777} {
		want := make([]float32, 4*m+16)
		for i := range want {
			want[i] = -1
		}
		start := slices.Clone(want)
		k(&q[0], benchDim, benchDim, &tile[0], c.RowBytes(), m, &want[0], 4)
		for _, call := range depthCalls {
			got := slices.Clone(start)
			call(k, &q[0], benchDim, benchDim, &tile[0], c.RowBytes(), m, &got[0], 4)
			checkBits(t, fmt.Sprintf("fp8 scores m %d: out called from a depth (not)", m), got, want)
		}
		for i := 4 * m; i < len(want); i++ {
			if want[i] != -1 {
				t.Fatalf("fp8 scores m %d: out[%d] written past the scores", m, i)
			}
		}
	}
}

// TestFrameDepthSpeed times the Zen 4 values kernels whose frame vectors gen_align.go aligns,
// called from eight stack depths 8 bytes apart (without it their frame vectors sat at eight
// offsets mod 64), in cache, thread CPU time, the depths alternated; each line gives the
// callers' local's address mod 64 and the time a row, min/median. The kernels' ks: more kernels
// with their signature to alternate with (an unaligned copy, say).
func TestFrameDepthSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX2 {
		t.Skip("no AVX2 here")
	}
	cases := frameDepthAVX2Cases()
	if intAcc() && hasVBMI {
		cases = append(frameDepthCases(), cases...)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, tc := range cases {
		c := Unwrap(mustCodec(t, tc.f, benchDim))
		rb := c.RowBytes()
		tile, _ := benchRowsOf(c)
		_, _, w, acc := benchQueries()
		ws := 16
		if reflect.ValueOf(tc.ks[0]).Pointer() == reflect.ValueOf(fp8ScoresAVX2AsAcc).Pointer() {
			ws = 4 // acc the queries, w the scores
		}
		nk := len(tc.ks)
		ns := make([][8][]float64, nk)
		var mod [8]int
		for r := 0; r < 61; r++ {
			for j := range 8 * nk {
				j = (j + r) % (8 * nk) // rotate the order
				i, k := j%8, j/8
				t0 := cputime.Thread()
				mod[i] = depthCalls[i](tc.ks[k], &acc[0], benchDim, benchDim, &tile[0], rb, benchRows, &w[0], ws)
				ns[k][i] = append(ns[k][i], float64((cputime.Thread()-t0).Nanoseconds())/benchRows)
			}
		}
		for k := range ns {
			s := ""
			for i := range ns[k] {
				slices.Sort(ns[k][i])
				s += fmt.Sprintf(" [%2d] %.3f/%.3f", mod[i], ns[k][i][0], ns[k][i][len(ns[k][i])/2])
			}
			t.Logf("%-6s kernel %d: ns a row min/med by caller local mod 64:%s", tc.f, k, s)
		}
	}
}
