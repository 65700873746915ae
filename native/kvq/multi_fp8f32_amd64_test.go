//go:build amd64 && !purego

package kvq

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
)

// TestFP8F32Speed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the thread-CPU time of fp8's kernels alternated, ns min/median, in cache (benchRows
// rows) and streamed from 2 MiB pages (96 MiB): the scores through multiScoresFP8BF16H
// (fp8VBMI where the CPU has AVX-512 BF16, else multiScoresFP8AVX512), multiScoresFP8AVX512
// (fp8AVX512) and multiScoresFP8F32 (fp8F32); the values through multiAccFP8BF16 (bf16
// weights), multiAccFP8VBMI, multiAccFP8AVX512 and, where the CPU has AMX-BF16,
// multiAccFP8AMX (fp8F32's values otherwise: multiAccFP8VBMI).
func TestFP8F32Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasFP8VBMI {
		t.Skip("no AVX-512 VBMI")
	}
	defer func(a *multiKernels, b, x bool) { multiFP8, fp8BF16AccOn, fp8AMXAccOn = a, b, x }(multiFP8, fp8BF16AccOn, fp8AMXAccOn)
	smodes := []func(func()){
		func(f func()) { multiFP8 = fp8VBMI; f() },
		func(f func()) { multiFP8 = fp8AVX512; f() },
		func(f func()) { multiFP8 = fp8F32; f() },
	}
	cache, stream, pr := scoreSpeedsHuge(t, FP8, smodes)
	for i := range smodes {
		t.Logf("fp8 scores, %s: in cache %s, streamed %s", []string{"fp8VBMI", "multiScoresFP8AVX512", "multiScoresFP8F32"}[i], minMedian(cache[i], benchRows), minMedian(stream[i], pr))
	}
	amodes := []func(){
		func() { multiFP8 = fp8VBMI; fp8BF16AccOn = true },  // multiAccFP8BF16 where the CPU has BF16
		func() { multiFP8 = fp8VBMI; fp8BF16AccOn = false }, // multiAccFP8VBMI
		func() { multiFP8 = fp8AVX512 },                     // multiAccFP8AVX512
		func() { multiFP8 = fp8F32; fp8AMXAccOn = true },    // multiAccFP8AMX where the CPU has AMX-BF16
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := mustCodec(t, FP8, benchDim)
	mq := c.(MultiQuery)
	tile, _ := benchRowsOf(c)
	vals := hugemem.Bytes((96 << 20) / len(tile) * len(tile))
	for o := 0; o < len(vals); o += len(tile) {
		copy(vals[o:], tile)
	}
	_, _, w, acc := benchQueries()
	ca, st := make([][]time.Duration, len(amodes)), make([][]time.Duration, len(amodes))
	for r := 0; r < 200; r++ {
		for i, m := range amodes {
			m()
			t0 := cputime.Thread()
			mq.AccumulateManyMulti(acc, 4, w, tile)
			ca[i] = append(ca[i], cputime.Thread()-t0)
		}
	}
	chunks := len(vals) / len(tile)
	for r := 0; r < speedRounds(10); r++ {
		for i, m := range amodes {
			m()
			var d time.Duration
			for k := 0; k < chunks; k++ {
				t0 := cputime.Thread()
				mq.AccumulateManyMulti(acc, 4, w, vals[k*len(tile):(k+1)*len(tile)])
				d += cputime.Thread() - t0
			}
			st[i] = append(st[i], d)
		}
	}
	for i := range amodes {
		t.Logf("fp8 values, %s: in cache %s, streamed %s", []string{"bf16 weights", "multiAccFP8VBMI", "multiAccFP8AVX512", "AMX"}[i], minMedian(ca[i], benchRows), minMedian(st[i], chunks*benchRows))
	}
}
