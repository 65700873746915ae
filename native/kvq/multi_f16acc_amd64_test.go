//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

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

// TestF16ScoresZ4Matches checks the four-query f16 scores kernel for AMD Zen 4
// (multiScoresF16Z4, multi_f16acc_amd64.go) against the four-query AVX-512 kernel it stands
// for, bit for bit, on any CPU with AVX-512 VL: rows of 32 to 256 values (nv = d, and nv < d
// with the queries d apart), odd and even row counts around the pair and four-row line steps,
// score strides of 16 bytes (64-byte aligned: the AVX-512 kernel's whole-line non-temporal
// stores, the Zen 4 kernel's 32-byte ones; and not),
// 20 and 32, and rows and queries with edge values: f16 infinities, NaNs with several
// payloads, subnormals, the largest f16 and −0 (a sum taken with its operands swapped
// returns another NaN payload). Sentinels around and past the scores check that nothing else
// is written.
func TestF16ScoresZ4Matches(t *testing.T) {
	if !hasAVX512 || !hasAVX512VL {
		t.Skip("no AVX-512 VL here")
	}
	rng := rand.New(rand.NewPCG(79, 80))
	edges := []uint16{0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe12, 0x7d55, 0x0001, 0x8001, 0x03ff, 0x7bff, 0xfbff, 0x8000}
	for _, dn := range [][2]int{{32, 32}, {64, 64}, {96, 96}, {128, 128}, {160, 160}, {256, 256}, {72, 64}, {136, 128}} {
		d, nv := dn[0], dn[1]
		for _, m := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 258} {
			for _, edge := range []bool{false, true} {
				for _, os := range []int{16, 20, 32} {
					for _, shift := range []int{0, 4} { // out 64-byte aligned, or 16 bytes past it
						if shift != 0 && os != 16 {
							continue
						}
						t.Run(fmt.Sprintf("d%d/nv%d/m%d/edge%v/ostride%d/shift%d", d, nv, m, edge, os, shift), func(t *testing.T) {
							rb := 2 * d
							enc := make([]byte, m*rb)
							c := mustCodec(t, F16, d)
							src := outlierRows(rng, m, d)
							for r := 0; r < m; r++ {
								c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
							}
							q := gaussianRows(rng, 4, d, 1)
							if edge {
								for i := 0; i+1 < len(enc); i += 2 {
									if rng.IntN(8) == 0 {
										e := edges[rng.IntN(len(edges))]
										enc[i], enc[i+1] = byte(e), byte(e>>8)
									}
								}
								for i := range q {
									switch rng.IntN(32) {
									case 0:
										q[i] = float32(math.Inf(1))
									case 1:
										q[i] = float32(math.Copysign(0, -1))
									case 2:
										q[i] = 0
									case 3:
										q[i] = math.Float32frombits(0x7fc12345)
									case 4:
										q[i] = 1e30
									}
								}
							}
							const sentinel = -777.25
							n := (m-1)*os/4 + 4 + 32
							buf := make([]float32, n+32)
							a := int(uintptr(unsafe.Pointer(&buf[0]))%64) / 4 // 64-byte aligned at (16 − a) % 16
							got := buf[(16-a)%16+shift:][:n]
							want := make([]float32, n)
							for i := range got {
								got[i], want[i] = sentinel, sentinel
							}
							multiScoresF16AVX512(&q[0], d, nv, &enc[0], rb, m, &want[0], os)
							multiScoresF16Z4(&q[0], d, nv, &enc[0], rb, m, &got[0], os)
							for i := range want {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("out[%d] (row %d, query %d): %g (%#08x), the AVX-512 kernel %g (%#08x)", i, i/(os/4), i%(os/4), got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestF16ScoresZ4Speed reports (KVLAB_SPEED_REPORT set) the thread CPU time of four queries'
// scores of rows of 128 f16 values through multiScoresF16Z4 and multiScoresF16AVX512,
// alternated: 4096 rows in cache (best of 30 calls, the median of KVLAB_SPEED_ROUNDS rounds)
// and streamed past the caches (benchStreamRows' 64 MiB, 4096 rows a call, the kernels taking
// turns by call; the median and best pass).
func TestF16ScoresZ4Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX512 || !hasAVX512VL {
		t.Skip("no AVX-512 VL here")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := mustCodec(t, F16, benchDim)
	rb := c.RowBytes()
	tile, big := benchStreamRows(c)
	q, out, _, _ := benchQueries()
	ks := []func(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int){multiScoresF16AVX512, multiScoresF16Z4}
	rounds := speedRounds(11)
	var cache, stream [2][]float64
	chunks := len(big) / len(tile)
	for r := 0; r < rounds; r++ {
		for i, k := range ks {
			best := time.Hour
			for range 30 {
				t0 := cputime.Thread()
				k(&q[0], benchDim, benchDim, &tile[0], rb, benchRows, &out[0], 16)
				best = min(best, cputime.Thread()-t0)
			}
			cache[i] = append(cache[i], float64(best.Nanoseconds())/benchRows)
		}
		var tot [2]time.Duration
		var calls [2]int
		for j := 0; j < chunks; j++ {
			i := (j + r) % 2
			t0 := cputime.Thread()
			ks[i](&q[0], benchDim, benchDim, &big[j*len(tile)], rb, benchRows, &out[0], 16)
			tot[i] += cputime.Thread() - t0
			calls[i]++
		}
		for i := range tot {
			stream[i] = append(stream[i], float64(tot[i].Nanoseconds())/float64(calls[i]*benchRows))
		}
	}
	for i, name := range []string{"multiScoresF16AVX512", "multiScoresF16Z4"} {
		slices.Sort(cache[i])
		slices.Sort(stream[i])
		t.Logf("%-20s 4 queries, rows of %d values: in cache %.2f ns a row (median; best %.2f), streamed %.2f (best %.2f)",
			name, benchDim, cache[i][rounds/2], cache[i][0], stream[i][rounds/2], stream[i][0])
	}
}

// TestScoresSplitMatches checks the split scores kernels (f16ScoresSplit, bf16ScoresSplit,
// multi_f16acc_amd64.go) against the AVX-512 kernels they stand for on Intel CPUs,
// multiScoresF16AVX512 and multiScoresBF16AVX512, bit for bit, on any CPU with AVX-512 F:
// rows of 32 to 256 values (nv = d, and nv < d with the queries d apart), no rows, odd and
// even row counts, score strides of 16 bytes (64-byte aligned, where the f16 kernel writes
// whole lines non-temporally, and not), 20 and 32, and rows and queries with edge values:
// infinities, NaNs with several payloads, subnormals, the largest finite value and −0.
// Sentinels around and past the scores check that nothing else is written.
func TestScoresSplitMatches(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512 here")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	type kernel = func(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
	for _, k := range []struct {
		f         Format
		ref, test kernel
		edges     []uint16
	}{
		{F16, multiScoresF16AVX512, f16ScoresSplit, []uint16{0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe12, 0x7d55, 0x0001, 0x8001, 0x03ff, 0x7bff, 0xfbff, 0x8000}},
		{BF16, multiScoresBF16AVX512, bf16ScoresSplit, []uint16{0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc3, 0x7fa5, 0x0001, 0x8001, 0x007f, 0x7f7f, 0xff7f, 0x8000}},
	} {
		for _, dn := range [][2]int{{32, 32}, {64, 64}, {96, 96}, {128, 128}, {256, 256}, {72, 64}, {136, 128}} {
			d, nv := dn[0], dn[1]
			for _, m := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 64, 65, 258} {
				for _, edge := range []bool{false, true} {
					for _, os := range []int{16, 20, 32} {
						for _, shift := range []int{0, 4} { // out 64-byte aligned, or 16 bytes past it
							if shift != 0 && os != 16 {
								continue
							}
							t.Run(fmt.Sprintf("%v/d%d/nv%d/m%d/edge%v/ostride%d/shift%d", k.f, d, nv, m, edge, os, shift), func(t *testing.T) {
								c := mustCodec(t, k.f, d)
								rb := c.RowBytes()
								enc := make([]byte, max(m, 1)*rb)
								src := outlierRows(rng, m, d)
								for r := 0; r < m; r++ {
									c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
								}
								q := gaussianRows(rng, 4, d, 1)
								if edge {
									for i := 0; i+1 < m*rb; i += 2 {
										if rng.IntN(8) == 0 {
											e := k.edges[rng.IntN(len(k.edges))]
											enc[i], enc[i+1] = byte(e), byte(e>>8)
										}
									}
									for i := range q {
										switch rng.IntN(32) {
										case 0:
											q[i] = float32(math.Inf(1))
										case 1:
											q[i] = float32(math.Copysign(0, -1))
										case 2:
											q[i] = 0
										case 3:
											q[i] = math.Float32frombits(0x7fc12345)
										case 4:
											q[i] = 1e30
										}
									}
								}
								const sentinel = -777.25
								n := max(m-1, 0)*os/4 + 4 + 32
								buf := make([]float32, n+32)
								a := int(uintptr(unsafe.Pointer(&buf[0]))%64) / 4 // 64-byte aligned at (16 − a) % 16
								got := buf[(16-a)%16+shift:][:n]
								want := make([]float32, n)
								for i := range got {
									got[i], want[i] = sentinel, sentinel
								}
								k.ref(&q[0], d, nv, &enc[0], rb, m, &want[0], os)
								k.test(&q[0], d, nv, &enc[0], rb, m, &got[0], os)
								for i := range want {
									if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
										t.Fatalf("out[%d] (row %d, query %d): %g (%#08x), the AVX-512 kernel %g (%#08x)", i, i/(os/4), i%(os/4), got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
									}
								}
							})
						}
					}
				}
			}
		}
	}
}
