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
)

// TestF16AccTwoWideMatches checks the wide f16 accumulate kernels (multi_f16acc_amd64.go)
// against the two-query kernel they stand for, bit for bit (each value gets the same fused
// multiply-adds in the same row order), through f16Codec.AccumulateManyMulti with n = 2 on
// runs of rows around the four-row and 64-row steps of that kernel; a run longer than
// f16AccWideRows goes to the two-query kernel. Sentinels past the two accumulators check that
// nothing is written there.
func TestF16AccTwoWideMatches(t *testing.T) {
	if multiF16 != avx512Kernels[0] {
		t.Skip("no AVX-512 f16 kernels here")
	}
	rng := rand.New(rand.NewPCG(71, 72))
	for _, d := range []int{64, 128} {
		for _, rows := range []int{1, 2, 3, 7, 64, 65, 130, f16AccWideRows, f16AccWideRows + 1} {
			t.Run(fmt.Sprintf("d%d/rows%d", d, rows), func(t *testing.T) {
				c := mustCodec(t, F16, d).(*f16Codec)
				if (f16AccWide(c, rows) != nil) != (rows <= f16AccWideRows) {
					t.Fatalf("the wide kernel runs on %d rows: %v", rows, rows <= f16AccWideRows)
				}
				rb := c.RowBytes()
				src := outlierRows(rng, rows, d)
				enc := make([]byte, rows*rb)
				for r := 0; r < rows; r++ {
					c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
				}
				w := make([]float32, 2*rows)
				for i := range w {
					w[i] = float32(math.Exp(-10 * rng.Float64()))
				}
				const sentinel = -777.25
				got := make([]float32, 2*d+16)
				want := make([]float32, 2*d)
				for i := range want {
					want[i] = float32(rng.NormFloat64())
				}
				copy(got, want)
				for i := 2 * d; i < len(got); i++ {
					got[i] = sentinel
				}
				c.AccumulateManyMulti(got[:2*d], 2, w, enc)
				multiAccF16TwoAVX512(&want[0], d, d, &enc[0], rb, rows, &w[0], 8)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("accumulator %d [%d]: %g, the two-query kernel %g", i/d, i%d, got[i], want[i])
					}
				}
				for i := 2 * d; i < len(got); i++ {
					if got[i] != sentinel {
						t.Fatalf("%g written past the two accumulators (at %d)", got[i], i-2*d)
					}
				}
			})
		}
	}
}

// TestF16AccTwoWideSpeed reports (KVLAB_SPEED_REPORT set) the thread CPU time of two
// accumulators over 72 and 288 rows of 64 and 128 f16 values in cache (an f16 recent window's
// reads) through the wide kernel and through the two-query kernel, interleaved, best of 300
// rounds of 50 calls.
func TestF16AccTwoWideSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if multiF16 != avx512Kernels[0] {
		t.Skip("no AVX-512 f16 kernels here")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(73, 74))
	for _, d := range []int{64, 128} {
		for _, rows := range []int{72, 288} {
			c := mustCodec(t, F16, d).(*f16Codec)
			rb := c.RowBytes()
			src := gaussianRows(rng, rows, d, 1)
			enc := make([]byte, rows*rb)
			for r := 0; r < rows; r++ {
				c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
			}
			w := make([]float32, 2*rows)
			for i := range w {
				w[i] = rng.Float32()
			}
			acc := make([]float32, 2*d)
			wide := f16AccWide(c, rows)
			best := [2]time.Duration{time.Hour, time.Hour}
			for r := 0; r < 300; r++ {
				for i, k := range []func(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int){multiAccF16TwoAVX512, wide} {
					t0 := cputime.Thread()
					for range 50 {
						k(&acc[0], d, d, &enc[0], rb, rows, &w[0], 8)
					}
					best[i] = min(best[i], (cputime.Thread()-t0)/50)
				}
			}
			t.Logf("f16 d %d, %d rows, two accumulators: wide %v, two-query kernel %v (%.2f×)", d, rows, best[1], best[0], float64(best[1])/float64(best[0]))
		}
	}
}

// TestF16ScoresTwoWideMatches checks the wide f16 scores kernel (multi_f16acc_amd64.go)
// against the two-query kernel they stand for, bit for bit (each score takes the same fused
// multiply-adds in the same order and the same reduction tree), through f16Codec.DotManyMulti
// and DotManyMultiStride (the queries apart by more than a row) with n = 2, on runs around the
// eight-row step (the rows past the last whole step go to the two-query kernel) and
// f16AccWideRows (a longer run goes to the two-query kernel whole). A swapped shuffle
// immediate, a lane order off by one or a sum taken in another order changes some score's
// bits. Sentinels past the scores check that nothing is written there.
func TestF16ScoresTwoWideMatches(t *testing.T) {
	if multiF16 != avx512Kernels[0] {
		t.Skip("no AVX-512 f16 kernels here")
	}
	rng := rand.New(rand.NewPCG(75, 76))
	for _, d := range []int{64, 128} {
		for _, rows := range []int{1, 7, 8, 9, 15, 16, 17, 64, 72, 73, f16AccWideRows, f16AccWideRows + 1} {
			for _, qs := range []int{d, 2 * d, d + 8} {
				t.Run(fmt.Sprintf("d%d/rows%d/stride%d", d, rows, qs), func(t *testing.T) {
					c := mustCodec(t, F16, d).(*f16Codec)
					if runs := d == 64 && rows >= 8 && rows <= f16AccWideRows; (f16ScoresWide(c, rows) != nil) != runs {
						t.Fatalf("the wide kernel runs on %d rows of %d values: %v", rows, d, runs)
					}
					rb := c.RowBytes()
					src := outlierRows(rng, rows, d)
					enc := make([]byte, rows*rb)
					for r := 0; r < rows; r++ {
						c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
					}
					q := make([]float32, qs+d)
					for i := range q {
						q[i] = float32(rng.NormFloat64())
					}
					qc := append(append([]float32(nil), q[:d]...), q[qs:qs+d]...) // contiguous
					want := make([]float32, 2*rows)
					multiScoresF16TwoAVX512(&qc[0], d, d, &enc[0], rb, rows, &want[0], 8)
					const sentinel = -777.25
					got := make([]float32, 2*rows+16)
					for i := range got {
						got[i] = sentinel
					}
					if qs == d {
						c.DotManyMulti(q[:2*d], 2, enc, got[:2*rows])
					} else {
						DotManyMultiStride(c, q, qs, 2, enc, got[:2*rows])
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("row %d query %d: %g, the two-query kernel %g", i/2, i%2, got[i], want[i])
						}
					}
					for i := 2 * rows; i < len(got); i++ {
						if got[i] != sentinel {
							t.Fatalf("%g written past the scores (at %d)", got[i], i-2*rows)
						}
					}
				})
			}
		}
	}
}

// TestF16ScoresTwoWideSpeed reports (KVLAB_SPEED_REPORT set) the thread CPU time of two
// queries' scores over 64, 72 and 256 rows of 64 f16 values in cache (an f16 recent window's
// reads, a short f16 context's) through the wide kernel and through the two-query kernel,
// interleaved, best of 300 rounds of 50 calls.
func TestF16ScoresTwoWideSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if multiF16 != avx512Kernels[0] {
		t.Skip("no AVX-512 f16 kernels here")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(77, 78))
	for _, d := range []int{64} {
		for _, rows := range []int{64, 72, 256} {
			c := mustCodec(t, F16, d).(*f16Codec)
			rb := c.RowBytes()
			src := gaussianRows(rng, rows, d, 1)
			enc := make([]byte, rows*rb)
			for r := 0; r < rows; r++ {
				c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
			}
			q := gaussianRows(rng, 2, d, 1)
			out := make([]float32, 2*rows)
			wide := f16ScoresWide(c, rows)
			best := [2]time.Duration{time.Hour, time.Hour}
			for r := 0; r < 300; r++ {
				t0 := cputime.Thread()
				for range 50 {
					multiScoresF16TwoAVX512(&q[0], d, d, &enc[0], rb, rows, &out[0], 8)
				}
				best[0] = min(best[0], (cputime.Thread()-t0)/50)
				t0 = cputime.Thread()
				for range 50 {
					wide(&q[0], d, &enc[0], rb, rows, &out[0])
				}
				best[1] = min(best[1], (cputime.Thread()-t0)/50)
			}
			t.Logf("f16 d %d, %d rows, two queries' scores: wide %v, two-query kernel %v (%.2f×)", d, rows, best[1], best[0], float64(best[1])/float64(best[0]))
		}
	}
}
