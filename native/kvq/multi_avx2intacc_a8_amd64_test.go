//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
)

// refIntAccQ80A8 is the Go reference of q8_0's adaptive kernel (multiAccQ80A8AVX2INT): per
// 64-row tile, block and accumulator h < 4, w'_j = w_j·d_j, M = max |w'_j| and S = Σ |w'_j|
// summed as the kernel's prepass sums it (the tile's even rows and odd rows in two chains, a
// lone last row in the first, joined), the weights rounded against 32767 where
// avx2A8RatioQ80·M > S, else against 127 (intAccRound), S_i = Σ W·c_i exactly and acc =
// fma(T, float32(S_i), acc). With force > 0 every tile rounds against force instead.
func refIntAccQ80A8(acc []float32, d, nv int, enc []byte, rb, m int, w []float32, n int, force, q8 float32) {
	const bs = 34
	wd := make([]float32, 64)
	W := make([]int32, 64)
	for t0 := 0; t0 < m; t0 += 64 {
		t1 := min(t0+64, m)
		for b := 0; b < nv/BlockSize; b++ {
			for h := 0; h < 4; h++ {
				var mx float32
				var ch [2]float32
				for j := t0; j < t1; j++ {
					wd[j-t0] = w[j*n+h] * blockF16(enc[j*rb+b*bs:], 0)
					a := float32(math.Abs(float64(wd[j-t0])))
					mx = max(mx, a)
					ch[(j-t0)%2] += a
				}
				q := q8
				if avx2A8RatioQ80*mx > ch[0]+ch[1] {
					q = 32767
				}
				if force > 0 {
					q = force
				}
				T := intAccRound(wd[:t1-t0], q, W)
				for i := 0; i < BlockSize; i++ {
					var s int32
					for j := t0; j < t1; j++ {
						s += W[j-t0] * int32(int8(enc[j*rb+b*bs+2+i]))
					}
					a := &acc[h*d+b*BlockSize+i]
					*a = fma32(T, float32(s), *a)
				}
			}
		}
	}
}

// TestAVX2IntAccA8Matches checks q8_0's adaptive kernel against refIntAccQ80A8 bit for bit, and
// the reference (every tile at 32767) against the int16 kernel: weights with a softmax peak in
// some tiles and accumulators and none in others ("mixed": a peak's lane in every tile, the
// int16 path with 8-bit lanes), softmax-like ones without peaks ("soft"), flat ones (no peak: every tile
// with four rows or more on the 8-bit path) of either sign (negative: the int16 path), on rows
// whose codes are all −128 or all 127 with one scale where flat weights make every W 127 (the
// words at 2·127·128 = 32512); dims with a pair's missing second block and a short tail; row
// counts around the quads and the 64-row tiles; weight strides of four and five accumulators;
// sentinels past the accumulators.
func TestAVX2IntAccA8Matches(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(91, 92))
	for _, d := range []int{32, 64, 96, 128, 200} {
		for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 8, 31, 33, 63, 64, 65, 66, 67, 130, 200} {
			for _, n := range []int{4, 5} {
				for _, shape := range []string{"mixed", "soft", "flat+", "flat-", "min+", "max+", "min-"} {
					t.Run(fmt.Sprintf("d%d/rows%d/n%d/%s", d, rows, n, shape), func(t *testing.T) {
						c := Unwrap(mustCodec(t, Q8_0, d))
						rb := c.RowBytes()
						src := outlierRows(rng, rows, d)
						enc := make([]byte, rows*rb)
						for r := 0; r < rows; r++ {
							c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
						}
						if shape != "mixed" && shape != "soft" && shape != "flat+" && shape != "flat-" {
							v := byte(0x80) // −128
							if shape == "max+" {
								v = 0x7F
							}
							for r := 0; r < rows; r++ {
								for b := 0; b < d/BlockSize; b++ {
									blk := enc[r*rb+b*34:]
									copy(blk, enc[b*34:b*34+2]) // row 0's scales
									for i := 2; i < 34; i++ {
										blk[i] = v
									}
								}
							}
						}
						w := a8Weights(rng, shape, n, rows)
						checkA8(t, rng, d, rows, n, enc, w, multiAccQ80A8AVX2INT, 0, 127)
						checkA8(t, rng, d, rows, n, enc, w, multiAccQ80AVX2INT, 32767, 127)
						// The two-accumulator kernel: accumulators 0 and 1 of the four-accumulator
						// reference with the weights of 2 and 3 zero.
						w2, w4 := make([]float32, 2*rows), make([]float32, 4*rows)
						for j := 0; j < rows; j++ {
							w2[2*j], w2[2*j+1] = w[n*j], w[n*j+1]
							w4[4*j], w4[4*j+1] = w[n*j], w[n*j+1]
						}
						checkA8Two(t, rng, d, rows, enc, w2, w4)
					})
				}
			}
		}
	}
}

func checkA8(t *testing.T, rng *rand.Rand, d, rows, n int, enc []byte, w []float32, k accKernel, force, q8 float32) {
	nv, rb := d/BlockSize*BlockSize, Unwrap(mustCodec(t, Q8_0, d)).RowBytes()
	const sentinel = 12345.5
	a1 := make([]float32, 4*d+8)
	for i := range a1 {
		a1[i] = float32(rng.NormFloat64())
	}
	for i := 4 * d; i < len(a1); i++ {
		a1[i] = sentinel
	}
	for h := 0; h < 4; h++ {
		for i := nv; i < d; i++ {
			a1[h*d+i] = sentinel
		}
	}
	a2 := append([]float32(nil), a1...)
	k(&a1[0], d, nv, &enc[0], rb, rows, &w[0], 4*n)
	refIntAccQ80A8(a2, d, nv, enc, rb, rows, w, n, force, q8)
	for i := range a1 {
		if math.Float32bits(a1[i]) != math.Float32bits(a2[i]) {
			t.Fatalf("force %g: accumulator %d [%d]: kernel %g, reference %g", force, i/d, i%d, a1[i], a2[i])
		}
	}
	for i := 4 * d; i < len(a1); i++ {
		if a1[i] != sentinel {
			t.Fatalf("force %g: the kernel wrote %g past the accumulators (at %d)", force, a1[i], i-4*d)
		}
	}
}

func checkA8Two(t *testing.T, rng *rand.Rand, d, rows int, enc []byte, w2, w4 []float32) {
	if multiTwo(avx2A8Acc) != avx2A8Two {
		t.Fatal("multiTwo does not choose the adaptive two-accumulator kernel")
	}
	nv, rb := d/BlockSize*BlockSize, Unwrap(mustCodec(t, Q8_0, d)).RowBytes()
	const sentinel = 12345.5
	a4 := make([]float32, 4*d)
	for i := range a4 {
		a4[i] = float32(rng.NormFloat64())
	}
	a2 := make([]float32, 2*d+8)
	copy(a2, a4[:2*d])
	for i := 2 * d; i < len(a2); i++ {
		a2[i] = sentinel
	}
	for h := 0; h < 2; h++ {
		for i := nv; i < d; i++ {
			a2[h*d+i], a4[h*d+i] = sentinel, sentinel
		}
	}
	multiAccQ80A8TwoAVX2INT(&a2[0], d, nv, &enc[0], rb, rows, &w2[0], 8)
	refIntAccQ80A8(a4, d, nv, enc, rb, rows, w4, 4, 0, 127)
	for i := 0; i < 2*d; i++ {
		if math.Float32bits(a2[i]) != math.Float32bits(a4[i]) {
			t.Fatalf("two accumulators: accumulator %d [%d]: kernel %g, reference %g", i/d, i%d, a2[i], a4[i])
		}
	}
	for i := 2 * d; i < len(a2); i++ {
		if a2[i] != sentinel {
			t.Fatalf("the two-accumulator kernel wrote %g past the accumulators (at %d)", a2[i], i-2*d)
		}
	}
}

// refIntAccQ50A8 is the Go reference of q5_0's adaptive kernel (multiAccQ50A8AVX2INT):
// refIntAccQ80A8's choice of the weights' scale per tile, block and accumulator (32767 for a
// peak's, avx2A8RatioQ50·M > S, else 127), the codes c − 16, c the 5-bit code: acc = fma(T, float32(Σ W·c −
// 16·ΣW), acc).
func refIntAccQ50A8(acc []float32, d, nv int, enc []byte, rb, m int, w []float32, n int) {
	const bs = 22
	wd := make([]float32, 64)
	W := make([]int32, 64)
	for t0 := 0; t0 < m; t0 += 64 {
		t1 := min(t0+64, m)
		for b := 0; b < nv/BlockSize; b++ {
			for h := 0; h < 4; h++ {
				var mx float32
				var ch [2]float32
				for j := t0; j < t1; j++ {
					wd[j-t0] = w[j*n+h] * blockF16(enc[j*rb+b*bs:], 0)
					a := float32(math.Abs(float64(wd[j-t0])))
					mx = max(mx, a)
					ch[(j-t0)%2] += a
				}
				q := float32(127)
				if avx2A8RatioQ50*mx > ch[0]+ch[1] {
					q = 32767
				}
				T := intAccRound(wd[:t1-t0], q, W)
				var sw int32
				for j := range t1 - t0 {
					sw += W[j]
				}
				for i := 0; i < BlockSize; i++ {
					var s int32
					for j := t0; j < t1; j++ {
						blk := enc[j*rb+b*bs:]
						s += W[j-t0] * int32(blockCode5(blk[2:6], blk[6:22], BlockSize, i))
					}
					a := &acc[h*d+b*BlockSize+i]
					*a = fma32(T, float32(s-16*sw), *a)
				}
			}
		}
	}
}

// TestAVX2IntAccA8Q5Matches checks q5_0's adaptive kernel against refIntAccQ50A8 bit for bit:
// TestAVX2IntAccA8Matches's weights, on the encoder's rows (negative scales among them) and on
// rows whose codes are all 31 or all 0 with one scale.
func TestAVX2IntAccA8Q5Matches(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(93, 94))
	for _, d := range []int{32, 64, 96, 128, 200} {
		for _, rows := range []int{1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 67, 130, 200} {
			for _, n := range []int{4, 5} {
				for _, shape := range []string{"mixed", "soft", "flat+", "flat-", "max+", "min+", "max-"} {
					t.Run(fmt.Sprintf("d%d/rows%d/n%d/%s", d, rows, n, shape), func(t *testing.T) {
						c := Unwrap(mustCodec(t, Q5_0, d))
						rb := c.RowBytes()
						enc := b8Rows(rng, c, rows, strings.HasPrefix(shape, "max") || shape == "min+")
						if shape == "min+" {
							b8Fill(c, enc, rows, 0)
						}
						w := a8Weights(rng, shape, n, rows)
						nv := d / BlockSize * BlockSize
						const sentinel = 12345.5
						a1 := make([]float32, 4*d+8)
						for i := range a1 {
							a1[i] = float32(rng.NormFloat64())
						}
						for i := 4 * d; i < len(a1); i++ {
							a1[i] = sentinel
						}
						for h := 0; h < 4; h++ {
							for i := nv; i < d; i++ {
								a1[h*d+i] = sentinel
							}
						}
						a2 := append([]float32(nil), a1...)
						multiAccQ50A8AVX2INT(&a1[0], d, nv, &enc[0], rb, rows, &w[0], 4*n)
						refIntAccQ50A8(a2, d, nv, enc, rb, rows, w, n)
						for i := range a1 {
							if math.Float32bits(a1[i]) != math.Float32bits(a2[i]) {
								t.Fatalf("accumulator %d [%d]: kernel %g, reference %g", i/d, i%d, a1[i], a2[i])
							}
						}
						for i := 4 * d; i < len(a1); i++ {
							if a1[i] != sentinel {
								t.Fatalf("the kernel wrote %g past the accumulators (at %d)", a1[i], i-4*d)
							}
						}
						// The two-accumulator kernel: accumulators 0 and 1 of the reference with
						// the weights of 2 and 3 zero.
						if multiTwo(avx2A8Q5Acc) != avx2A8Q5Two {
							t.Fatal("multiTwo does not choose the adaptive two-accumulator kernel")
						}
						w2, w4 := make([]float32, 2*rows), make([]float32, 4*rows)
						for j := 0; j < rows; j++ {
							w2[2*j], w2[2*j+1] = w[n*j], w[n*j+1]
							w4[4*j], w4[4*j+1] = w[n*j], w[n*j+1]
						}
						b2 := make([]float32, 2*d+8)
						b4 := make([]float32, 4*d)
						for i := range b4 {
							b4[i] = float32(rng.NormFloat64())
						}
						copy(b2, b4[:2*d])
						for i := 2 * d; i < len(b2); i++ {
							b2[i] = sentinel
						}
						for h := 0; h < 2; h++ {
							for i := nv; i < d; i++ {
								b2[h*d+i], b4[h*d+i] = sentinel, sentinel
							}
						}
						multiAccQ50A8TwoAVX2INT(&b2[0], d, nv, &enc[0], rb, rows, &w2[0], 8)
						refIntAccQ50A8(b4, d, nv, enc, rb, rows, w4, 4)
						for i := 0; i < 2*d; i++ {
							if math.Float32bits(b2[i]) != math.Float32bits(b4[i]) {
								t.Fatalf("two accumulators: accumulator %d [%d]: kernel %g, reference %g", i/d, i%d, b2[i], b4[i])
							}
						}
						for i := 2 * d; i < len(b2); i++ {
							if b2[i] != sentinel {
								t.Fatalf("the two-accumulator kernel wrote %g past the accumulators (at %d)", b2[i], i-2*d)
							}
						}
					})
				}
			}
		}
	}
}

// a8Weights is n accumulators' weights of rows rows in TestAVX2IntAccA8Matches's shapes.
func a8Weights(rng *rand.Rand, shape string, n, rows int) []float32 {
	w := make([]float32, n*rows)
	for j := range w {
		switch shape {
		case "mixed":
			x := float32(math.Exp(-0.7 * rng.Float64()))
			switch ((j/n)/64 + j%n) % 3 {
			case 0:
				x = float32(math.Exp(-10 * rng.Float64()))
				if (j/n)%64 == 3*(j%n)+1 {
					x = 1
				}
			case 2:
				if rng.IntN(5) == 0 {
					x = 0
				}
			}
			w[j] = x
		case "soft":
			w[j] = float32(math.Exp(-2 * rng.Float64()))
			if rng.IntN(5) == 0 {
				w[j] = 0
			}
		case "flat-", "min-", "max-":
			w[j] = -1
		default:
			w[j] = 1
		}
	}
	return w
}

// TestAVX2IntAccA8Speed reports (KVLAB_SPEED_REPORT set) the thread-CPU time per row of q8_0's
// and q5_0's int16 AVX2 kernels and their adaptive ones (softmax-like weights without peaks, and with a peak
// in every tile and accumulator: the int16 path), d 128, four accumulators and two, 4096 rows a call,
// alternated seven times, in cache (256 rows) and streamed (2²⁰ rows on huge pages).
func TestAVX2IntAccA8Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const d = 128
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		f       Format
		k16, k8 accKernel
		n       int
	}{{Q8_0, multiAccQ80AVX2INT, multiAccQ80A8AVX2INT, 4}, {Q5_0, multiAccQ50AVX2INT, multiAccQ50A8AVX2INT, 4},
		{Q8_0, multiAccQ80TwoAVX2INT, multiAccQ80A8TwoAVX2INT, 2}, {Q5_0, multiAccQ50TwoAVX2INT, multiAccQ50A8TwoAVX2INT, 2}} {
		c := Unwrap(mustCodec(t, tc.f, d))
		rb := c.RowBytes()
		for _, total := range []int{256, 1 << 20} {
			call := min(total, 4096)
			enc := hugemem.Bytes(total * rb)
			src := gaussianRows(rng, 256, d, 1)
			for r := 0; r < 256; r++ {
				c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
			}
			for r := 256; r < total; r += 256 {
				copy(enc[r*rb:(r+256)*rb], enc[:256*rb])
			}
			w := make([]float32, 4*call)
			for i := range w {
				w[i] = float32(math.Exp(-4 * rng.Float64()))
			}
			peaky := append([]float32(nil), w...)
			for j := 0; j < call; j += 64 {
				for h := 0; h < tc.n; h++ {
					peaky[tc.n*(j+rng.IntN(64))+h] = 64
				}
			}
			acc := make([]float32, 4*d)
			reps := max(1, 400*256/total)
			var ts [3][]float64
			for round := 0; round < 7; round++ {
				for i, k := range []accKernel{tc.k16, tc.k8, tc.k8} {
					wk := w
					if i == 2 {
						wk = peaky
					}
					t0 := cputime.Thread()
					for r := 0; r < reps; r++ {
						for j0 := 0; j0 < total; j0 += call {
							k(&acc[0], d, d, &enc[j0*rb], rb, call, &wk[0], 4*tc.n)
						}
					}
					ts[i] = append(ts[i], float64((cputime.Thread()-t0).Nanoseconds())/float64(reps*total))
				}
			}
			a0, a1 := minMedianF(ts[0])
			b0, b1 := minMedianF(ts[1])
			c0, c1 := minMedianF(ts[2])
			t.Logf("%-5s %d accumulators, rows %7d: int16 %.2f / %.2f ns a row (min / median), adaptive %.2f / %.2f (%.2f×), peaky weights %.2f / %.2f (%.2f×)",
				tc.f, tc.n, total, a0, a1, b0, b1, b0/a0, c0, c1, c0/a0)
		}
	}
}

// minMedianF is the least and the median of x (shared with the linux-only speed tests).
func minMedianF(x []float64) (float64, float64) {
	y := append([]float64(nil), x...)
	sort.Float64s(y)
	return y[0], y[len(y)/2]
}
