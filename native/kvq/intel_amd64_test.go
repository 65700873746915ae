//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
)

// TestQ80IntelMatches checks q8_0's one-digit scores kernels for Intel CPUs
// (multiScoresQ80OneIntelVNNI: another prefetch distance; multiScoresQ80OneIntelTwoVNNI: its
// groups from two streams) against the one other AVX-512 CPUs
// take (multiScoresQ80OneVNNI) bit for bit, whichever of the two the codecs take here: dims of
// one to eight blocks, one group of sixteen rows to ten (past the prefetch distance of both),
// outputs contiguous and strided with sentinels after the last score. The rows are random
// bytes (every code) with random finite f16 scales. (Intel's values kernel, multiAccQ80Z4INT,
// is TestQ80Zen4Matches'.)
func TestQ80IntelMatches(t *testing.T) {
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI kernels here")
	}
	rng := rand.New(rand.NewPCG(95, 96))
	const sentinel = float32(-12345.5)
	for _, nb := range []int{1, 2, 3, 4, 5, 8} {
		d := 32 * nb
		for _, m := range []int{16, 32, 48, 80, 160} {
			for _, ostride := range []int{16, 20} {
				t.Run(fmt.Sprintf("d%d/rows%d/stride%d", d, m, ostride), func(t *testing.T) {
					rb := 34 * nb
					enc := make([]byte, m*rb)
					for i := range enc {
						enc[i] = byte(rng.Uint32())
					}
					for j := 0; j < m; j++ {
						for b := 0; b < nb; b++ {
							s := F32ToF16(float32(rng.NormFloat64()) * 0.01)
							enc[j*rb+34*b], enc[j*rb+34*b+1] = byte(s), byte(s>>8)
						}
					}
					q := gaussianRows(rng, 4, d, 1)
					dig := make([]byte, nb*vnniBlockBytes)
					aux := make([]uint32, nb*vnniAuxWords)
					stage := make([]uint16, nb*64)
					vnniDigits(dig, aux, q, d, nb, 1)
					offs := [4]float32{float32(rng.NormFloat64()), 0, float32(rng.NormFloat64()), -1}
					n := (m-1)*ostride/4 + 4
					a, b, c := make([]float32, n+8), make([]float32, n+8), make([]float32, n+8)
					for i := range a {
						a[i], b[i], c[i] = sentinel, sentinel, sentinel
					}
					multiScoresQ80OneVNNI(&dig[0], &aux[0], &stage[0], nb, &enc[0], rb, m, &a[0], ostride, &offs[0])
					multiScoresQ80OneIntelVNNI(&dig[0], &aux[0], &stage[0], nb, &enc[0], rb, m, &b[0], ostride, &offs[0])
					multiScoresQ80OneIntelTwoVNNI(&dig[0], &aux[0], &stage[0], nb, &enc[0], rb, m, &c[0], ostride, &offs[0])
					if a[0] == sentinel || a[n-1] == sentinel {
						t.Fatal("no scores written")
					}
					for i := range a {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
							t.Fatalf("[%d]: Intel kernel %g, the other %g", i, b[i], a[i])
						}
						if math.Float32bits(a[i]) != math.Float32bits(c[i]) {
							t.Fatalf("[%d]: Intel two-stream kernel %g, the other %g", i, c[i], a[i])
						}
						if (i >= n || i%(ostride/4) >= 4) && a[i] != sentinel {
							t.Fatalf("[%d] written past the scores: %g", i, a[i])
						}
					}
				})
			}
		}
	}
}

// TestQ80IntelSpeed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the thread-CPU time of q8_0's DotManyMulti and AccumulateManyMulti without and with
// the Intel flavours (intelCPU: multiScoresQ80OneIntelTwoVNNI (q80IntelTwo), and pickFar's multiAccQ80Z4INT),
// alternated pass by pass (q80DecodeSpeeds): streamed past the caches in decode's order, ns
// min/median. KVLAB_SPEED_ROUNDS sets the passes (default 8).
func TestQ80IntelSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasVNNI || !intAcc() || !vnniQ8One {
		t.Skip("no AVX-512 VNNI kernels with one-digit q8_0 queries here")
	}
	saved, two, acc := intelCPU, q80IntelTwo, intAccQ8_0.acc
	defer func() { intelCPU, q80IntelTwo, intAccQ8_0.acc = saved, two, acc }()
	modes := []func(func()){
		func(f func()) {
			intelCPU, q80IntelTwo, intAccQ8_0.acc = false, false, pickZen4(multiAccQ80INT, multiAccQ80Z4INT)
			f()
		},
		func(f func()) { intelCPU, q80IntelTwo, intAccQ8_0.acc = true, true, multiAccQ80Z4INT; f() },
	}
	sc, va, rows := q80DecodeSpeeds(t, modes)
	t.Logf("q8_0 per row of %d values, 4 queries, streamed, ns min/median: scores %s, Intel flavour %s; values %s, Intel flavour %s",
		benchDim, minMedian(sc[0], rows), minMedian(sc[1], rows), minMedian(va[0], rows), minMedian(va[1], rows))
}

// q80DecodeSpeeds times q8_0's scores and values as native/attn's one-thread decode takes them
// at its bench shape: chunks of 16384 rows, a chunk's scores (DotManyMulti, four queries) then
// its values (AccumulateManyMulti, four accumulators), keys and values 128 MiB each on 2 MiB
// pages (internal/hugemem), past the caches; the modes alternated pass by pass. It returns per
// mode the passes' scores and values times and the rows of a pass.
func q80DecodeSpeeds(t *testing.T, modes []func(func())) (sc, va [][]time.Duration, rows int) {
	const size, chunk = 128 << 20, 16384
	rounds := speedRounds(8)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := mustCodec(t, Q8_0, benchDim)
	mq := c.(MultiQuery)
	tile, _ := benchRowsOf(c)
	rb := c.RowBytes()
	keys := hugemem.Bytes(size / len(tile) * len(tile))
	vals := hugemem.Bytes(size / len(tile) * len(tile))
	for o := 0; o < len(keys); o += len(tile) {
		copy(keys[o:], tile)
		copy(vals[o:], tile)
	}
	q := gaussianRows(rand.New(rand.NewPCG(11, 12)), 4, benchDim, 1)
	out, w := make([]float32, 4*chunk), make([]float32, 4*chunk)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range w {
		w[i] = rng.Float32() / chunk
	}
	acc := make([]float32, 4*benchDim)
	n := len(keys) / rb / chunk
	sc, va = make([][]time.Duration, len(modes)), make([][]time.Duration, len(modes))
	for r := 0; r < rounds; r++ {
		for i, mode := range modes {
			mode(func() {
				var ds, dv time.Duration
				for k := 0; k < n; k++ {
					t0 := cputime.Thread()
					mq.DotManyMulti(q, 4, keys[k*chunk*rb:(k+1)*chunk*rb], out)
					t1 := cputime.Thread()
					mq.AccumulateManyMulti(acc, 4, w, vals[k*chunk*rb:(k+1)*chunk*rb])
					t2 := cputime.Thread()
					ds += t1 - t0
					dv += t2 - t1
				}
				sc[i] = append(sc[i], ds)
				va[i] = append(va[i], dv)
			})
		}
	}
	return sc, va, n * chunk
}
