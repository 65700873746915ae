//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
)

// TestMultiQueryAVX512FloatAcc runs the reference checks of the formats the integer kernels serve with the integer
// accumulate kernels switched off, so the AVX-512 float accumulate kernels they replace stay
// tested on CPUs that have both.
func TestMultiQueryAVX512FloatAcc(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	vl := hasAVX512VL
	hasAVX512VL = false
	defer func() { hasAVX512VL = vl }()
	rng := rand.New(rand.NewPCG(43, 44))
	for _, f := range []Format{Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Turbo2, Turbo3, Turbo4, TQ4} {
		for _, d := range []int{40, 128, 200} {
			for _, n := range []int{1, 4, 5} {
				for _, rows := range []int{1, 7, 130} {
					t.Run(fmt.Sprintf("%s/d%d/n%d/rows%d", f, d, n, rows), func(t *testing.T) {
						checkMulti(t, rng, f, d, n, rows)
					})
				}
			}
		}
	}
}

// TestIntAccSpeed reports, per row of benchDim values and four accumulators, the thread CPU
// time of AccumulateManyMulti through the integer kernels and through the float kernels they
// replace, the two interleaved in one run (best of 500 each), for the formats whose values
// accumulate through integer kernels on this CPU. It runs only when KVLAB_SPEED_REPORT is set.
func TestIntAccSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	vl := hasAVX512VL
	defer func() { hasAVX512VL = vl }()
	for _, f := range []Format{Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Turbo2, Turbo3, Turbo4, TQ4} {
		c := mustCodec(t, f, benchDim)
		if AccumulateStep(c) == 0 {
			continue
		}
		mq := c.(MultiQuery)
		enc, _ := benchRowsOf(c)
		w := make([]float32, 4*benchRows)
		for i := range w {
			w[i] = 1.0 / benchRows
		}
		acc := make([]float32, 4*benchDim)
		best := [2]time.Duration{time.Hour, time.Hour} // float, integer
		for r := 0; r < 500; r++ {
			for i := range best {
				hasAVX512VL = i == 1
				t0 := cputime.Thread()
				mq.AccumulateManyMulti(acc, 4, w, enc)
				best[i] = min(best[i], cputime.Thread()-t0)
			}
		}
		hasAVX512VL = vl
		perRow := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / benchRows }
		t.Logf("%-6s acc per row of %d values, 4 accumulators: integer %.2f ns, float %.2f ns (%.2f×)",
			f, benchDim, perRow(best[1]), perRow(best[0]), float64(best[1])/float64(best[0]))
	}
}
