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

// refIntAccNib is the Go reference of the nibble formats' integer accumulate kernels (q4_0,
// q4_1: pay 2 or 4) with weights scaled to qmax (intAccRound): per 64-row tile, block and
// accumulator h < 4, W from w·d, S_i = Σ W·c_i exactly (c the nibble), off·ΣW with off 8, q4_1's
// float term Σ w·m + 8·Σ w·d summed as the kernels' prepass does (even rows and odd rows in two
// chains, joined, then the fused 8·Σ w·d), and acc = fma(T, float32(S_i − 8·ΣW), acc (+ term)).
func refIntAccNib(acc []float32, d, nv int, enc []byte, rb, m int, w []float32, n int, c Codec, qmax float32) {
	_, min1 := c.(*q4_1Codec)
	_, min5 := c.(*q5_1Codec)
	hasMin := min1 || min5
	bs := intAccBlocks(c).fullBytes
	off := int32(8)
	code := func(blk []byte, i int) int32 {
		pay := bs - 16
		q := blk[pay+i%16]
		if i >= 16 {
			q >>= 4
		}
		return int32(q & 15)
	}
	switch c.(type) {
	case *q5_0Codec, *q5_1Codec:
		off = 16
		code = func(blk []byte, i int) int32 {
			return int32(blockCode5(blk[bs-20:bs-16], blk[bs-16:bs], BlockSize, i))
		}
	}
	wd := make([]float32, 64)
	W := make([]int32, 64)
	for t0 := 0; t0 < m; t0 += 64 {
		t1 := min(t0+64, m)
		for b := 0; b < nv/BlockSize; b++ {
			for h := 0; h < 4; h++ {
				var wmC, wdC [2]float32
				for j := t0; j < t1; j++ {
					blk := enc[j*rb+b*bs:]
					wd[j-t0] = w[j*n+h] * blockF16(blk, 0)
					if hasMin {
						wmC[(j-t0)%2] = fma32(w[j*n+h], blockF16(blk, 2), wmC[(j-t0)%2])
						wdC[(j-t0)%2] += wd[j-t0]
					}
				}
				T := intAccRound(wd[:t1-t0], qmax, W)
				var sw int32
				for j := range t1 - t0 {
					sw += W[j]
				}
				var term float32
				if hasMin {
					term = fma32(float32(off), wdC[0]+wdC[1], wmC[0]+wmC[1])
				}
				for i := 0; i < BlockSize; i++ {
					var s int32
					for j := t0; j < t1; j++ {
						s += W[j-t0] * code(enc[j*rb+b*bs:], i)
					}
					a := &acc[h*d+b*BlockSize+i]
					x := *a
					if hasMin {
						x += term
					}
					*a = fma32(T, float32(s-off*sw), x)
				}
			}
		}
	}
}

// b8Rows is rows of codec c: outlier rows, or ("full") every nibble 15 and one scale, where
// equal weights make every 8-bit weight 127 and the word sums reach the bound's 8·2·127·15.
func b8Rows(rng *rand.Rand, c Codec, rows int, full bool) []byte {
	d, rb := c.Dim(), c.RowBytes()
	src := outlierRows(rng, rows, d)
	enc := make([]byte, rows*rb)
	for r := 0; r < rows; r++ {
		c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
	}
	if full {
		bs := intAccBlocks(c).fullBytes
		sc := 2 // the scales' bytes
		switch c.(type) {
		case *q4_1Codec, *q5_1Codec:
			sc = 4
		}
		for r := 0; r < rows; r++ {
			for b := 0; b < d/BlockSize; b++ {
				blk := enc[r*rb+b*bs:]
				copy(blk, enc[b*bs:b*bs+sc]) // row 0's scales
				for i := sc; i < bs; i++ {
					blk[i] = 0xFF // every code the largest (qh bits set too)
				}
			}
		}
	}
	return enc
}

// b8Fill sets every code byte (payload and qh, not the scales) of rows of codec c to v.
func b8Fill(c Codec, enc []byte, rows int, v byte) {
	d, rb := c.Dim(), c.RowBytes()
	bs := intAccBlocks(c).fullBytes
	sc := 2
	switch c.(type) {
	case *q4_1Codec, *q5_1Codec:
		sc = 4
	}
	for r := 0; r < rows; r++ {
		for b := 0; b < d/BlockSize; b++ {
			blk := enc[r*rb+b*bs:]
			for i := sc; i < bs; i++ {
				blk[i] = v
			}
		}
	}
}

// avx2B8Index is each 8-bit kernel's format's index in avx2IntAcc.
var avx2B8Index = [4]int{0, 2, 3, 4}

// TestAVX2IntAccB8Matches checks the 8-bit-weight AVX2 kernels (q4_0, q4_1) against the Go
// reference with qmax 127, bit for bit, and the reference itself against the int16 AVX2
// kernels with qmax 32767: softmax-like weights (some 0, one 1 a tile, some negative) and, on
// rows whose codes are all 15, equal weights of either sign (every W ±127: the word sums at
// the bound, 30480); dims with a pair's missing second block and a short tail; row counts
// around the four-row groups, the 32-row flush and the 64-row tiles; weight strides of four and
// five accumulators; sentinels past the accumulators.
func TestAVX2IntAccB8Matches(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	for i, f := range []Format{Q4_0, Q4_1, Q5_0, Q5_1} {
		for _, d := range []int{32, 64, 96, 128, 200} {
			for _, rows := range []int{1, 2, 3, 4, 5, 7, 31, 32, 33, 35, 36, 63, 64, 65, 130, 200} {
				for _, n := range []int{4, 5} {
					for _, shape := range []string{"softmax", "full+", "full-"} {
						t.Run(fmt.Sprintf("%s/d%d/rows%d/n%d/%s", f, d, rows, n, shape), func(t *testing.T) {
							c := Unwrap(mustCodec(t, f, d))
							enc := b8Rows(rng, c, rows, shape != "softmax")
							w := make([]float32, n*rows)
							for j := range w {
								switch shape {
								case "full+":
									w[j] = 1
								case "full-":
									w[j] = -1
								default:
									x := float32(math.Exp(-10 * rng.Float64()))
									switch {
									case rng.IntN(7) == 0:
										x = 0
									case (j/n)%64 == 3*(j%n)+1:
										x = 1
									case rng.IntN(11) == 0:
										x = -x
									}
									w[j] = x
								}
							}
							checkB8(t, rng, c, d, rows, n, enc, w, avx2B8Acc[i].acc, 127)
							checkB8(t, rng, c, d, rows, n, enc, w, avx2IntAcc[avx2B8Index[i]].acc, 32767)
							if f == Q5_1 {
								checkB8(t, rng, c, d, rows, n, enc, w, avx2U8Acc.acc, 255)
								if shape != "softmax" {
									// Every code 0 (c − 16 = −16): the centred word sums at the
									// bound's −4·2·255·16 = −32640 with equal weights.
									b8Fill(c, enc, rows, 0)
									checkB8(t, rng, c, d, rows, n, enc, w, avx2U8Acc.acc, 255)
								}
							}
						})
					}
				}
			}
		}
	}
}

func checkB8(t *testing.T, rng *rand.Rand, c Codec, d, rows, n int, enc []byte, w []float32, k accKernel, qmax float32) {
	nv, rb := intAccBlocks(c).full*BlockSize, c.RowBytes()
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
	refIntAccNib(a2, d, nv, enc, rb, rows, w, n, c, qmax)
	for i := range a1 {
		if math.Float32bits(a1[i]) != math.Float32bits(a2[i]) {
			t.Fatalf("qmax %g: accumulator %d [%d]: kernel %g, reference %g", qmax, i/d, i%d, a1[i], a2[i])
		}
	}
	for i := 4 * d; i < len(a1); i++ {
		if a1[i] != sentinel {
			t.Fatalf("qmax %g: the kernel wrote %g past the accumulators (at %d)", qmax, a1[i], i-4*d)
		}
	}
}

// TestAVX2IntAccB8Speed reports (KVLAB_SPEED_REPORT set, KVLAB_NO_AVX512 set on an AVX-512
// CPU) TestAVX2IntAccSpeed's thread-CPU times per row through the int16 AVX2 kernels and the
// 8-bit-weight ones (q5_0's and q5_1's too), interleaved in one run, in cache and streamed, for
// four accumulators, and for two (q4_0, q4_1: both run the int16 two-accumulator kernels, which
// avx2IntAccTwo chose after the 8-bit four-accumulator kernels with two zero weights took
// 1.7–1.9× their time).
func TestAVX2IntAccB8Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !avx2IntAccOn || hasAVXVNNI || intAcc() {
		t.Skip("the plain AVX2 integer kernels do not run here (set KVLAB_NO_AVX512, KVLAB_NO_AVXVNNI)")
	}
	rounds := 10
	if n, err := fmt.Sscan(os.Getenv("KVLAB_SPEED_ROUNDS"), &rounds); n != 1 || err != nil {
		rounds = 10
	}
	on, q5, u8 := avx2B8On, avx2B8Q5, avx2U8Q51
	defer func() { avx2B8On, avx2B8Q5, avx2U8Q51 = on, q5, u8 }()
	avx2B8Q5 = true
	if os.Getenv("KVLAB_SPEED_U8") != "" {
		// q5_1's kernels: int16, the unsigned 8-bit one (avx2U8Acc), the signed one.
		avx2SpeedB8(t, rounds, []string{"int16", "u8", "s8"}, func(i int) {
			avx2B8On, avx2B8Q5, avx2U8Q51 = i > 0, i == 2, i == 1
		}, []Format{Q5_1, Q5_1}, []int{4, 2})
		return
	}
	avx2SpeedB8(t, rounds, []string{"int16", "int8"}, func(i int) { avx2B8On = i == 1 },
		[]Format{Q4_0, Q4_1, Q5_0, Q5_1, Q4_0, Q4_1}, []int{4, 4, 4, 4, 2, 2})
}

// avx2SpeedB8 is TestAVX2IntAccB8Speed's loop: formats fs[i] with ns[i] accumulators, the
// kernels that set(k) chooses interleaved.
func avx2SpeedB8(t *testing.T, rounds int, names []string, set func(int), fs []Format, ns []int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for fi := range fs {
		f, n := fs[fi], ns[fi]
		c := mustCodec(t, f, benchDim)
		mq := c.(MultiQuery)
		tile, _ := benchRowsOf(c)
		vals := make([]byte, (64<<20)/len(tile)*len(tile))
		for o := 0; o < len(vals); o += len(tile) {
			copy(vals[o:], tile)
		}
		w := make([]float32, n*benchRows)
		for i := range w {
			w[i] = 1.0 / benchRows
		}
		acc := make([]float32, n*benchDim)
		cache := make([]time.Duration, len(names))
		stream := make([]time.Duration, len(names))
		for i := range cache {
			cache[i], stream[i] = time.Hour, time.Hour
		}
		for r := 0; r < 500; r++ {
			for i := range names {
				set(i)
				t0 := cputime.Thread()
				mq.AccumulateManyMulti(acc, n, w, tile)
				cache[i] = min(cache[i], cputime.Thread()-t0)
			}
		}
		chunks := len(vals) / len(tile)
		for r := 0; r < rounds; r++ {
			for i := range names {
				set(i)
				var s time.Duration
				for k := 0; k < chunks; k++ {
					t0 := cputime.Thread()
					mq.AccumulateManyMulti(acc, n, w, vals[k*len(tile):(k+1)*len(tile)])
					s += cputime.Thread() - t0
				}
				stream[i] = min(stream[i], s)
			}
		}
		line := fmt.Sprintf("%-6s acc per row of %d values, %d accumulators:", f, benchDim, n)
		for i, name := range names {
			line += fmt.Sprintf(" %s %.2f ns in cache (%.2f×), %.2f ns streamed (%.2f×);", name,
				float64(cache[i].Nanoseconds())/benchRows, float64(cache[i])/float64(cache[0]),
				float64(stream[i].Nanoseconds())/float64(chunks*benchRows), float64(stream[i])/float64(stream[0]))
		}
		t.Log(line)
	}
}

// TestAVX2IntAccB8Bound runs TestIntAccBound's check on q5_0 and q5_1 through their 8-bit-weight
// kernels (avx2B8Q5 set for the test) where those run (KVLAB_NO_AVX512 set on this CPU): the
// bound with 127 in place of 32767. q4_0's and q4_1's run in TestIntAccBound itself.
func TestAVX2IntAccB8Bound(t *testing.T) {
	if !avx2IntAccOn || !hasAVX2 || hasAVXVNNI || intAcc() || !avx2B8On {
		t.Skip("the plain AVX2 8-bit kernels do not run here")
	}
	q5 := avx2B8Q5
	defer func() { avx2B8Q5 = q5 }()
	avx2B8Q5 = true
	rng := rand.New(rand.NewPCG(83, 84))
	for _, f := range []Format{Q5_0, Q5_1} {
		for _, d := range []int{32, 128, 200} {
			for _, rows := range []int{1, 15, 16, 17, 63, 64, 65, 200} {
				t.Run(fmt.Sprintf("%s/d%d/rows%d", f, d, rows), func(t *testing.T) {
					c := mustCodec(t, f, d)
					if AccumulateStep(c) != 0x1p-8 {
						t.Fatalf("AccumulateStep %g", AccumulateStep(c))
					}
					checkIntAccBound(t, rng, c, rows)
				})
			}
		}
	}
}

// TestAVX2IntAccU8Bound runs TestIntAccBound's check on q5_1 through its kernel with unsigned
// 8-bit weights where it runs (KVLAB_NO_AVX512 set on this CPU): the bound with 255 in place
// of 32767 (AccumulateStep 2⁻⁹), on encoded rows (non-negative weights; the second pass over
// negative ones is checked bit for bit against the reference, not against the bound).
func TestAVX2IntAccU8Bound(t *testing.T) {
	if !avx2IntAccOn || !hasAVX2 || hasAVXVNNI || intAcc() || !avx2B8On || avx2B8Q5 || !avx2U8Q51 {
		t.Skip("the plain AVX2 unsigned 8-bit kernel does not run here")
	}
	rng := rand.New(rand.NewPCG(87, 88))
	for _, d := range []int{32, 128, 200} {
		for _, rows := range []int{1, 15, 16, 17, 63, 64, 65, 200} {
			t.Run(fmt.Sprintf("d%d/rows%d", d, rows), func(t *testing.T) {
				c := mustCodec(t, Q5_1, d)
				if AccumulateStep(c) != 0x1p-9 {
					t.Fatalf("AccumulateStep %g", AccumulateStep(c))
				}
				if blockIntAccKernel(Unwrap(c)) != avx2U8Acc {
					t.Fatal("q5_1 does not take avx2U8Acc")
				}
				checkIntAccBound(t, rng, c, rows)
			})
		}
	}
}

// TestAVX2IntAccB8TwoMatchesFour checks the 8-bit kernels' two-accumulator variants against the
// four-accumulator kernels, bit for bit (each accumulator's sums must not depend on the others
// in its call), as TestAVX2IntAccTwoMatchesFour does the int16 ones', and that multiTwo chooses
// them; sentinels past the two accumulators.
func TestAVX2IntAccB8TwoMatchesFour(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(85, 86))
	type kcase struct {
		f         Format
		four, two *multiKernels
		name      string
	}
	var cases []kcase
	for i, f := range []Format{Q4_0, Q4_1, Q5_0, Q5_1} {
		cases = append(cases, kcase{f, avx2B8Acc[i], avx2B8TwoK[i], "s8"})
	}
	cases = append(cases, kcase{Q5_1, avx2U8Acc, avx2U8Two, "u8"}) // q5_1's unsigned 8-bit weights
	for _, kc := range cases {
		f, four, two := kc.f, kc.four, kc.two
		if multiTwo(four) != two {
			t.Fatalf("%s %s: multiTwo does not choose the 8-bit two-accumulator kernel", f, kc.name)
		}
		for _, d := range []int{32, 64, 96, 128, 200} {
			for _, rows := range []int{1, 2, 3, 5, 17, 33, 63, 64, 65, 130} {
				for _, shape := range []string{"softmax", "full+", "full-", "low+"} {
					t.Run(fmt.Sprintf("%s/%s/d%d/rows%d/%s", f, kc.name, d, rows, shape), func(t *testing.T) {
						c := Unwrap(mustCodec(t, f, d))
						nv, rb := intAccBlocks(c).full*BlockSize, c.RowBytes()
						enc := b8Rows(rng, c, rows, shape != "softmax")
						if shape == "low+" {
							b8Fill(c, enc, rows, 0) // every code 0
						}
						w2 := make([]float32, 2*rows)
						w4 := make([]float32, 4*rows)
						for j := 0; j < rows; j++ {
							for h := 0; h < 4; h++ {
								x := float32(1)
								if shape == "full-" {
									x = -1
								}
								if shape == "softmax" {
									x = float32(math.Exp(-8 * rng.Float64()))
									switch {
									case rng.IntN(7) == 0:
										x = 0
									case j%64 == h:
										x = 1
									case rng.IntN(11) == 0:
										x = -x
									}
								}
								w4[4*j+h] = x
								if h < 2 {
									w2[2*j+h] = x
								}
							}
						}
						const sentinel = 12345.5
						acc2 := make([]float32, 2*d+8)
						acc4 := make([]float32, 4*d)
						for i := range acc4 {
							acc4[i] = float32(rng.NormFloat64())
						}
						copy(acc2, acc4[:2*d])
						for i := 2 * d; i < len(acc2); i++ {
							acc2[i] = sentinel
						}
						four.acc(&acc4[0], d, nv, &enc[0], rb, rows, &w4[0], 16)
						two.acc(&acc2[0], d, nv, &enc[0], rb, rows, &w2[0], 8)
						for i := 0; i < 2*d; i++ {
							if math.Float32bits(acc2[i]) != math.Float32bits(acc4[i]) {
								t.Fatalf("accumulator %d [%d]: two %g, four %g", i/d, i%d, acc2[i], acc4[i])
							}
						}
						for i := 2 * d; i < len(acc2); i++ {
							if acc2[i] != sentinel {
								t.Fatalf("the two-accumulator kernel wrote %g past the accumulators (at %d)", acc2[i], i-2*d)
							}
						}
					})
				}
			}
		}
	}
}
