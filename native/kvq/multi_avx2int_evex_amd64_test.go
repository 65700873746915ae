//go:build amd64 && !purego && kvlabevex

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// The kvlabevex tests (go test -tags kvlabevex) run the AVX2 integer kernels' AVX-VNNI forms
// through their EVEX twins (multi_avx2int_evex_amd64.go) on CPUs with AVX-512 VNNI, where the
// VEX forms fault when the CPU lacks AVX-VNNI (AMD Zen 4).

// withAVX2EVEX runs f with the AVX2 integer kernels' AVX-VNNI forms (EVEX twins); with s16,
// q8_0's former s16 route (avx2ScoresQ80S16EVEX).
func withAVX2EVEX(s16 bool, f func()) {
	if s16 {
		withAVX2Twins(false, 2, f)
	} else {
		withAVX2Twins(true, 1, f)
	}
}

// withAVX2Twins runs f with withAVX2Int(vnni) and avx2Twins set to twins.
func withAVX2Twins(vnni bool, twins int, f func()) {
	withAVX2Int(vnni, func() {
		avx2Twins = twins
		defer func() { avx2Twins = 0 }()
		f()
	})
}

// TestAVX2IntEVEX is TestAVX2IntScores for the AVX-VNNI forms' EVEX twins: every score the
// AVX-512 VNNI kernel's bit for bit, over encoded and random payloads (q8_0's −128 included),
// row counts around the groups, one to eight queries, rows of one to 32 blocks; and q8_0 rows
// of only −128 or 127 codes against queries at the two digits' extremes (every |Q| 32639).
// Planted bugs in the twins (a dot product dropped, a score read from the wrong place) fail it.
func TestAVX2IntEVEX(t *testing.T) {
	if !hasVNNIBW || !hasAVX2 {
		t.Skip("needs AVX-512 VNNI and BW")
	}
	// The AVX-VNNI q8_0 kernel takes the query at two digits whatever vnniQ8One says (vnniND):
	// compare it with the AVX-512 kernel at two digits.
	defer func(o bool) { vnniQ8One = o }(vnniQ8One)
	vnniQ8One = false
	rng := rand.New(rand.NewPCG(71, 72))
	check := func(t *testing.T, c Codec, q []float32, n int, enc []byte, mu []float32) {
		rows := len(enc) / c.RowBytes()
		mq := c.(muScorer)
		want := make([]float32, rows*n)
		mq.dotManyMultiMu(q, n, enc, want, mu)
		got := make([]float32, rows*n)
		for _, s16 := range []bool{false, true} {
			for i := range got {
				got[i] = float32(math.NaN())
			}
			withAVX2EVEX(s16, func() { mq.dotManyMultiMu(q, n, enc, got, mu) })
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("s16 %v: row %d query %d: AVX-VNNI (EVEX) %g, AVX-512 VNNI %g", s16, i/n, i%n, got[i], want[i])
				}
			}
		}
	}
	for _, f := range avx2IntFormats {
		for _, d := range []int{32, 128, 200, 1024} {
			for _, n := range []int{1, 4, 5, 8} {
				for _, rows := range []int{1, 8, 37, 130} {
					t.Run(fmt.Sprintf("%s/d%d/n%d/rows%d", f, d, n, rows), func(t *testing.T) {
						c := Unwrap(mustCodec(t, f, d))
						q := gaussianRows(rng, n, d, 1)
						for i := range q {
							q[i] *= float32(math.Ldexp(1, i/32%7-3))
						}
						var mu []float32
						if rows%2 == 1 {
							mu = gaussianRows(rng, 1, d, 1)
						}
						check(t, c, q, n, avx2IntRows(rng, c, rows), mu)
					})
				}
			}
		}
	}
	const d, rows, n = 128, 32, 4
	c := Unwrap(mustCodec(t, Q8_0, d))
	rb := c.RowBytes()
	enc := make([]byte, rows*rb)
	for r := 0; r < rows; r++ {
		for b := 0; b < d/32; b++ {
			blk := enc[r*rb+b*34 : r*rb+(b+1)*34]
			for i := range blk {
				blk[i] = []byte{0x80, 0x7F}[r/8%2]
			}
			blk[0], blk[1] = 0x00, 0x3C // d = 1
		}
	}
	q := make([]float32, n*d)
	for i := range q {
		q[i] = []float32{1, -1}[i/d%2]
	}
	check(t, c, q, n, enc, nil)
}

// TestAVX2IntEVEXSpeed prints (KVLAB_SPEED_REPORT set) TestAVX2IntSpeed's thread-CPU times a
// row of benchDim values and four queries for the plain AVX2 integer kernels, the AVX-VNNI
// forms with q8_0's former s16 route and the AVX-VNNI forms (EVEX twins), interleaved, in cache
// and streamed; best and median of the rounds (KVLAB_SPEED_Q8 set: q8_0 alone).
func TestAVX2IntEVEXSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasVNNIBW || !hasAVX2 {
		t.Skip("needs AVX-512 VNNI and BW")
	}
	plain := func(f func()) { withAVX2Kernels(func() { withAVX2Int(false, f) }) }
	s16 := func(f func()) { withAVX2Kernels(func() { withAVX2EVEX(true, f) }) }
	twin := func(f func()) { withAVX2Kernels(func() { withAVX2EVEX(false, f) }) }
	modes := []func(func()){plain, s16, twin}
	formats := avx2IntFormats
	if os.Getenv("KVLAB_SPEED_Q8") != "" {
		formats = []Format{Q8_0}
	}
	for _, f := range formats {
		cache, stream, passRows := scoreSpeeds(t, f, modes)
		t.Logf("%-6s ns a row (min/median), in cache: AVX2 %s, AVX-VNNI s16 q8_0 %s, AVX-VNNI %s; streamed: %s, %s, %s",
			f, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows), minMedian(cache[2], benchRows),
			minMedian(stream[0], passRows), minMedian(stream[1], passRows), minMedian(stream[2], passRows))
	}
}

// withAVX2Base runs f with the plain AVX2 integer kernels' baseline (avx2Scores*Base).
func withAVX2Base(f func()) { withAVX2Twins(false, 3, f) }

// TestAVX2IntBase checks the baseline kernels (avx2Scores*Base) as TestAVX2IntEVEX checks the
// twins, so that the timings compare kernels that score alike.
func TestAVX2IntBase(t *testing.T) {
	if !hasVNNIBW || !hasAVX2 {
		t.Skip("needs AVX-512 VNNI and BW")
	}
	rng := rand.New(rand.NewPCG(73, 74))
	for _, f := range avx2IntFormats {
		c := Unwrap(mustCodec(t, f, 200))
		q := gaussianRows(rng, 5, 200, 1)
		enc := avx2IntRows(rng, c, 37)
		mq := c.(muScorer)
		want := make([]float32, 37*5)
		mq.dotManyMultiMu(q, 5, enc, want, nil)
		got := make([]float32, len(want))
		withAVX2Base(func() { mq.dotManyMultiMu(q, 5, enc, got, nil) })
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: row %d query %d: baseline %g, AVX-512 VNNI %g", f, i/5, i%5, got[i], want[i])
			}
		}
	}
}

// TestAVX2IntBaseSpeed prints (KVLAB_SPEED_REPORT set) TestAVX2IntSpeed's thread-CPU times a
// row for the plain AVX2 integer kernels' baseline (avx2Scores*Base) and the kernels,
// interleaved, in cache and streamed; min and median of the rounds (KVLAB_SPEED_Q8 set: q8_0
// alone; KVLAB_SPEED_FORMATS: the formats named, comma-separated).
func TestAVX2IntBaseSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	baseline := func(f func()) { withAVX2Kernels(func() { withAVX2Base(f) }) }
	plain := func(f func()) { withAVX2Kernels(func() { withAVX2Int(false, f) }) }
	modes := []func(func()){baseline, plain}
	formats := avx2IntFormats
	if os.Getenv("KVLAB_SPEED_Q8") != "" {
		formats = []Format{Q8_0}
	}
	if list := os.Getenv("KVLAB_SPEED_FORMATS"); list != "" {
		formats = nil
		for _, name := range strings.Split(list, ",") {
			f, err := Parse(strings.TrimSpace(name))
			if err != nil {
				t.Fatal(err)
			}
			formats = append(formats, f)
		}
	}
	for _, f := range formats {
		cache, stream, passRows := scoreSpeeds(t, f, modes)
		t.Logf("%-6s ns a row (min/median), in cache: base %s, now %s; streamed: base %s, now %s",
			f, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
			minMedian(stream[0], passRows), minMedian(stream[1], passRows))
	}
}
