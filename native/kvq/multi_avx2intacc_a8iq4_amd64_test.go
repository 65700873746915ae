//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
)

// refIntAccIQ4A8 is the Go reference of iq4_nl's adaptive kernel (multiAccIQ4NLA8AVX2INT):
// refIntAccQ80A8's choice of the weights' scale per tile, block and accumulator (32767 for a
// peak's, avx2A8RatioIQ4·M > S, else 127), the codes iq4_nl's levels: acc = fma(T, float32(Σ
// W·L), acc).
func refIntAccIQ4A8(acc []float32, d, nv int, enc []byte, rb, m int, w []float32, n int) {
	const bs = 18
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
				if avx2A8RatioIQ4*mx > ch[0]+ch[1] {
					q = 32767
				}
				T := intAccRound(wd[:t1-t0], q, W)
				for i := 0; i < BlockSize; i++ {
					var s int32
					for j := t0; j < t1; j++ {
						c := enc[j*rb+b*bs+2+i%16]
						if i >= 16 {
							c >>= 4
						}
						s += W[j-t0] * int32(iq4nlValues[c&15])
					}
					a := &acc[h*d+b*BlockSize+i]
					*a = fma32(T, float32(s), *a)
				}
			}
		}
	}
}

// TestAVX2IntAccA8IQ4Matches checks iq4_nl's adaptive kernel, four accumulators and two,
// against refIntAccIQ4A8 bit for bit: TestAVX2IntAccA8Matches's weights (a peak's lanes in
// some tiles, softmax-like ones, flat ones of either sign), weights of both signs in one row
// ("pm": every accumulator's sign its own, the int16 path; "pm1": one negative weight in a
// tile), rows whose weights are all zero ("rows0": a zero sign), on the encoder's rows
// (scales of both signs) and on rows whose codes are all 15 (113) or all 0 (−127) with one
// scale and flat weights (every W 127: words 2·127·127); sentinels past the accumulators.
func TestAVX2IntAccA8IQ4Matches(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(95, 96))
	for _, d := range []int{32, 64, 96, 128, 200} {
		for _, rows := range []int{1, 2, 3, 4, 5, 7, 8, 31, 33, 63, 64, 65, 67, 130, 200} {
			for _, n := range []int{4, 5} {
				for _, shape := range []string{"mixed", "soft", "flat+", "flat-", "pm", "pm1", "rows0", "max+", "min+", "min-"} {
					t.Run(fmt.Sprintf("d%d/rows%d/n%d/%s", d, rows, n, shape), func(t *testing.T) {
						c := Unwrap(mustCodec(t, IQ4_NL, d))
						rb := c.RowBytes()
						enc := b8Rows(rng, c, rows, shape == "max+" || shape == "min+" || shape == "min-")
						if shape == "min+" || shape == "min-" {
							b8Fill(c, enc, rows, 0)
						}
						ws := shape
						switch shape {
						case "pm", "pm1":
							ws = "soft"
						case "rows0":
							ws = "mixed"
						}
						w := a8Weights(rng, ws, n, rows)
						switch shape {
						case "pm":
							for j := range w {
								if j%n%2 == 1 {
									w[j] = -w[j]
								}
							}
						case "pm1":
							j := rng.IntN(len(w))
							w[j] = -w[j] - 0.5
						case "rows0":
							for j := 0; j < rows; j++ {
								if rng.IntN(2) == 0 {
									for h := 0; h < n; h++ {
										w[j*n+h] = 0
									}
								}
							}
						}
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
						multiAccIQ4NLA8AVX2INT(&a1[0], d, nv, &enc[0], rb, rows, &w[0], 4*n)
						refIntAccIQ4A8(a2, d, nv, enc, rb, rows, w, n)
						for i := range a1 {
							if math.Float32bits(a1[i]) != math.Float32bits(a2[i]) {
								t.Fatalf("accumulator %d [%d]: kernel %g, reference %g", i/d, i%d, a1[i], a2[i])
							}
						}
						if multiTwo(avx2A8IQ4Acc) != avx2A8IQ4Two {
							t.Fatal("multiTwo does not choose the adaptive two-accumulator kernel")
						}
						// The two-accumulator kernel: accumulators 0 and 1 of the reference with
						// the weights of 2 and 3 zero.
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
						multiAccIQ4NLA8TwoAVX2INT(&b2[0], d, nv, &enc[0], rb, rows, &w2[0], 8)
						refIntAccIQ4A8(b4, d, nv, enc, rb, rows, w4, 4)
						for i := range b2 {
							if math.Float32bits(b2[i]) != math.Float32bits(func() float32 {
								if i < 2*d {
									return b4[i]
								}
								return sentinel
							}()) {
								t.Fatalf("two accumulators: [%d]: kernel %g, want %g", i, b2[i], b4[min(i, 4*d-1)])
							}
						}
					})
				}
			}
		}
	}
}

// TestAVX2IntAccA8IQ4Speed reports (KVLAB_SPEED_REPORT set) the thread-CPU time per row of
// iq4_nl's int16 AVX2 kernel and its adaptive one (softmax-like weights without peaks, and with
// a peak in every tile and accumulator: the int16 path), d 128, four accumulators and two,
// 4096 rows a call, alternated seven times, in cache (256 rows) and streamed (2²⁰ rows on huge
// pages).
func TestAVX2IntAccA8IQ4Speed(t *testing.T) {
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
		k16, k8 accKernel
		n       int
	}{{multiAccIQ4NLAVX2INT, multiAccIQ4NLA8AVX2INT, 4}, {multiAccIQ4NLTwoAVX2INT, multiAccIQ4NLA8TwoAVX2INT, 2}} {
		c := Unwrap(mustCodec(t, IQ4_NL, d))
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
			t.Logf("iq4_nl %d accumulators, rows %7d: int16 %.2f / %.2f ns a row (min / median), adaptive %.2f / %.2f (%.2f×), peaky weights %.2f / %.2f (%.2f×)",
				tc.n, total, a0, a1, b0, b1, b0/a0, c0, c1, c0/a0)
		}
	}
}
