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

// scoreSpeedsHuge is scoreSpeeds with the streamed rows on 2 MiB pages (hugemem.Bytes, 96 MiB
// of copies of the benchRows rows), as the decode's KV rows are: 200 calls in cache, then
// KVLAB_SPEED_ROUNDS passes (default 10) over the 96 MiB in chunks of benchRows rows, the modes
// interleaved on a locked thread; thread-CPU times, a call's in cache and a pass's streamed.
func scoreSpeedsHuge(t *testing.T, f Format, modes []func(func())) (cache, stream [][]time.Duration, passRows int) {
	rounds := speedRounds(10)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := mustCodec(t, f, benchDim)
	mq := c.(MultiQuery)
	tile, _ := benchRowsOf(c)
	keys := hugemem.Bytes((96 << 20) / len(tile) * len(tile))
	for o := 0; o < len(keys); o += len(tile) {
		copy(keys[o:], tile)
	}
	q, out, _, _ := benchQueries()
	cache, stream = make([][]time.Duration, len(modes)), make([][]time.Duration, len(modes))
	for r := 0; r < 200; r++ {
		for i, mode := range modes {
			mode(func() {
				t0 := cputime.Thread()
				mq.DotManyMulti(q, 4, tile, out)
				cache[i] = append(cache[i], cputime.Thread()-t0)
			})
		}
	}
	chunks := len(keys) / len(tile)
	for r := 0; r < rounds; r++ {
		for i, mode := range modes {
			mode(func() {
				var d time.Duration
				for k := 0; k < chunks; k++ {
					t0 := cputime.Thread()
					mq.DotManyMulti(q, 4, keys[k*len(tile):(k+1)*len(tile)], out)
					d += cputime.Thread() - t0
				}
				stream[i] = append(stream[i], d)
			})
		}
	}
	return cache, stream, chunks * benchRows
}

// TestVNNIHdrZ4Speed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the thread-CPU time of q4_0's, q4_1's and iq4_nl's DotManyMulti through the
// header-register kernels without and with their Zen 4 flavours (vnniHdrZ4) and their Intel
// flavours (hdrIntel), alternated
// (scoreSpeedsHuge): in cache and streamed from 2 MiB pages, ns min/median.
func TestVNNIHdrZ4Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasVNNIBW {
		t.Skip("no AVX-512 VNNI and BW")
	}
	defer func(v, x bool) { vnniHdrZ4, hdrIntel = v, x }(vnniHdrZ4, hdrIntel)
	modes := []func(func()){
		func(f func()) { vnniHdrZ4, hdrIntel = false, false; f() },
		func(f func()) { vnniHdrZ4, hdrIntel = true, false; f() },
		func(f func()) { vnniHdrZ4, hdrIntel = true, true; f() },
	}
	for _, f := range []Format{Q4_0, Q4_1, IQ4_NL} {
		cache, stream, passRows := scoreSpeedsHuge(t, f, modes)
		t.Logf("%v scores per row of %d values, 4 queries, ns min/median: in cache %s, Z4 %s, Intel %s; streamed %s, Z4 %s, Intel %s",
			f, benchDim, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows), minMedian(cache[2], benchRows),
			minMedian(stream[0], passRows), minMedian(stream[1], passRows), minMedian(stream[2], passRows))
	}
}

// TestQ5ScoresZ4Speed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the thread-CPU time of q5_0's and q5_1's DotManyMulti through the GFNI kernels
// without and with their Zen 4 flavours (q5ScoresZ4), alternated (scoreSpeedsHuge): in cache
// and streamed from 2 MiB pages, ns min/median.
func TestQ5ScoresZ4Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !q5ScoresGFNI {
		t.Skip("no AVX-512 VNNI, BW, BITALG and GFNI")
	}
	defer func(v, x, x0 bool) { q5ScoresZ4, q51ScoresX, q50ScoresX = v, x, x0 }(q5ScoresZ4, q51ScoresX, q50ScoresX)
	modes := []func(func()){
		func(f func()) { q5ScoresZ4, q51ScoresX, q50ScoresX = false, false, false; f() },
		func(f func()) { q5ScoresZ4, q51ScoresX, q50ScoresX = true, true, true; f() },
	}
	for _, f := range []Format{Q5_0, Q5_1} {
		cache, stream, passRows := scoreSpeedsHuge(t, f, modes)
		t.Logf("%v scores per row of %d values, 4 queries, ns min/median: in cache %s, Z4 %s; streamed %s, Z4 %s",
			f, benchDim, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
			minMedian(stream[0], passRows), minMedian(stream[1], passRows))
	}
}
