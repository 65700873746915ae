//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
)

// TestQ51Z4Speed reports, per row of benchDim values and four accumulators, the thread CPU time
// of q5_1's Zen 4 values kernel with 8-bit weights (multiAccQ51V8Z4INT) in cache (benchRows rows,
// 41 calls) and streamed (passes over 64 MiB of rows in chunks of benchRows, KVLAB_SPEED_ROUNDS
// passes, default 5): min and median. It runs only when KVLAB_SPEED_REPORT is set; alternate
// builds to compare kernels.
func TestQ51Z4Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !intAcc() || !hasVBMI || !hasBITALG || !hasGFNI512 {
		t.Skip("no q5_1 Zen 4 values kernel here")
	}
	rounds := speedRounds(5)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := Unwrap(mustCodec(t, Q5_1, benchDim))
	rb := c.RowBytes()
	tile, big := benchStreamRows(c)
	_, _, w, acc := benchQueries()
	var cache, stream []float64
	for r := 0; r < 41; r++ {
		t0 := cputime.Thread()
		multiAccQ51V8Z4INT(&acc[0], benchDim, benchDim, &tile[0], rb, benchRows, &w[0], 16)
		cache = append(cache, float64((cputime.Thread()-t0).Nanoseconds())/benchRows)
	}
	chunks := len(big) / len(tile)
	for r := 0; r < rounds; r++ {
		var d time.Duration
		for ch := 0; ch < chunks; ch++ {
			t0 := cputime.Thread()
			multiAccQ51V8Z4INT(&acc[0], benchDim, benchDim, &big[ch*len(tile)], rb, benchRows, &w[0], 16)
			d += cputime.Thread() - t0
		}
		stream = append(stream, float64(d.Nanoseconds())/float64(chunks*benchRows))
	}
	mm := func(x []float64) string {
		slices.Sort(x)
		return fmt.Sprintf("%.2f/%.2f", x[0], x[len(x)/2])
	}
	t.Logf("q5_1 Zen 4 values per row of %d, 4 accumulators, ns min/median: in cache %s, streamed %s", benchDim, mm(cache), mm(stream))
}
