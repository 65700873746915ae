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
	"golang.org/x/sys/cpu"
)

// avx2IntAccCases are the AVX2 integer accumulate kernels (plain and AVX-VNNI) of each block
// format, next to the AVX-512 kernel (non-VBMI flavour) they compute bit for bit.
var avx2IntAccCases = []struct {
	f          Format
	i          int // index in avx2IntAcc and avx2VNNIAcc
	avx512     accKernel
	avx512Kern **multiKernels
}{
	{Q4_0, 0, multiAccQ40INT, &intAccQ4_0}, {Q8_0, 1, multiAccQ80INT, &intAccQ8_0},
	{Q4_1, 2, multiAccQ41INT, &intAccQ4_1}, {Q5_0, 3, multiAccQ50INT, &intAccQ5_0},
	{Q5_1, 4, multiAccQ51INT, &intAccQ5_1}, {IQ4_NL, 5, multiAccIQ4NLINT, &intAccIQ4NL},
}

// avx2IntAccFlavours are the kernels this CPU can run: the plain AVX2 ones, and the AVX-VNNI
// ones where the CPU has AVX-VNNI (whatever KVLAB_NO_AVXVNNI says).
func avx2IntAccFlavours() map[string]*[6]*multiKernels {
	fl := map[string]*[6]*multiKernels{"avx2": &avx2IntAcc}
	if cpu.X86.HasAVXVNNI {
		fl["avxvnni"] = &avx2VNNIAcc
	}
	return fl
}

// TestAVX2IntAccMatches checks the AVX2 integer accumulate kernels against the AVX-512 integer
// kernels, bit for bit (the bound of multi_intacc_amd64.go then holds for them as it does for
// those, and TestIntAccBound checks it where they run), on CPUs with both (KVLAB_NO_AVX512
// unset; KVLAB_NO_AVX512VNNI and KVLAB_NO_AVX512VBMI leave the reference kernels to it): softmax-like weights with some exactly 0, one large per tile, and some negative; the
// dims one block, an odd count of blocks (a pair's missing second block), pairs, and a short
// tail block; the row counts a lone last row, the 64-row tiles and a partial last tile; the
// weights' stride 16 bytes (four accumulators) and 20 (four of five). Sentinels past the
// accumulators' values check that nothing is written there.
func TestAVX2IntAccMatches(t *testing.T) {
	if !hasAVX2 || !vnniReference {
		t.Skip("needs AVX2 and the AVX-512 integer kernels")
	}
	rng := rand.New(rand.NewPCG(71, 72))
	for name, ks := range avx2IntAccFlavours() {
		for _, tc := range avx2IntAccCases {
			for _, d := range []int{32, 64, 96, 128, 160, 200, 256} {
				for _, rows := range []int{1, 2, 3, 63, 64, 65, 130} {
					for _, n := range []int{4, 5} {
						t.Run(fmt.Sprintf("%s/%s/d%d/rows%d/n%d", name, tc.f, d, rows, n), func(t *testing.T) {
							checkAVX2IntAcc(t, rng, tc.f, d, rows, n, ks[tc.i].acc, tc.avx512)
						})
					}
				}
			}
		}
	}
}

func checkAVX2IntAcc(t *testing.T, rng *rand.Rand, f Format, d, rows, n int, got, want accKernel) {
	c := Unwrap(mustCodec(t, f, d))
	bc := intAccBlocks(c)
	nv, rb := bc.full*BlockSize, c.RowBytes()
	src := outlierRows(rng, rows, d)
	enc := make([]byte, rows*rb)
	for r := 0; r < rows; r++ {
		c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
	}
	w := make([]float32, n*rows)
	for j := 0; j < rows; j++ {
		for h := 0; h < n; h++ {
			x := float32(math.Exp(-10 * rng.Float64()))
			switch {
			case rng.IntN(7) == 0:
				x = 0
			case j%64 == 3*h+1:
				x = 1
			case rng.IntN(11) == 0:
				x = -x
			}
			w[n*j+h] = x
		}
	}
	const sentinel = 12345.5
	a1 := make([]float32, 4*d+8)
	for i := range a1 {
		a1[i] = float32(rng.NormFloat64())
	}
	for i := 4 * d; i < len(a1); i++ {
		a1[i] = sentinel
	}
	for h := 0; h < 4; h++ { // the values past nv are the caller's
		for i := nv; i < d; i++ {
			a1[h*d+i] = sentinel
		}
	}
	a2 := append([]float32(nil), a1...)
	got(&a1[0], d, nv, &enc[0], rb, rows, &w[0], 4*n)
	want(&a2[0], d, nv, &enc[0], rb, rows, &w[0], 4*n)
	for i := range a1 {
		if math.Float32bits(a1[i]) != math.Float32bits(a2[i]) {
			t.Fatalf("accumulator %d [%d]: AVX2 kernel %g, AVX-512 kernel %g", i/d, i%d, a1[i], a2[i])
		}
	}
	for i := 4 * d; i < len(a1); i++ {
		if a1[i] != sentinel {
			t.Fatalf("the kernel wrote %g past the accumulators (at %d)", a1[i], i-4*d)
		}
	}
}

// TestAVX2IntAccChosen checks that the block formats' AccumulateManyMulti run the AVX2 integer
// kernels where avx2IntAccOn (KVLAB_NO_AVX512 set on this CPU), the AVX-VNNI flavour where
// hasAVXVNNI, q4_0's and q4_1's 8-bit-weight kernels (q5_1's unsigned one, q8_0's, q5_0's and iq4_nl's adaptive ones) where neither
// AVX-VNNI nor KVLAB_ACC16, their AVX-VNNI forms (avx2B8VNNI: q4_0's, q4_1's, iq4_nl's,
// q5_0's, q5_1's and q8_0's) where AVX-VNNI but not KVLAB_ACC16, and that AccumulateStep says so.
func TestAVX2IntAccChosen(t *testing.T) {
	if !avx2IntAccOn {
		t.Skip("the AVX2 integer kernels do not run here")
	}
	ks := avx2IntAccKernels(hasAVXVNNI)
	for _, tc := range avx2IntAccCases {
		want, step := ks[tc.i], 0x1p-16
		wantTwo := avx2IntAccTwoK[tc.i]
		if hasAVXVNNI {
			wantTwo = avx2VNNIAccTwoK[tc.i]
		}
		q5 := tc.f == Q5_0 || tc.f == Q5_1
		if b8 := avx2B8On && !hasAVXVNNI; b8 && tc.f != Q8_0 && tc.f != IQ4_NL && (!q5 || avx2B8Q5) {
			j := map[Format]int{Q4_0: 0, Q4_1: 1, Q5_0: 2, Q5_1: 3}[tc.f]
			want, wantTwo, step = avx2B8Acc[j], avx2B8TwoK[j], 0x1p-8 // the 8-bit-weight kernels
		} else if b8 && tc.f == Q5_0 && avx2A8Q50 {
			want, wantTwo, step = avx2A8Q5Acc, avx2A8Q5Two, 0x1p-8 // adaptive 8-bit weights
		} else if b8 && tc.f == Q8_0 && avx2A8Q80 {
			want, wantTwo, step = avx2A8Acc, avx2A8Two, 0x1p-8 // adaptive 8-bit weights
		} else if b8 && tc.f == Q5_1 && avx2U8Q51 {
			want, wantTwo, step = avx2U8Acc, avx2U8Two, 0x1p-9 // unsigned 8-bit weights
		} else if b8 && tc.f == IQ4_NL && avx2A8IQ4 {
			want, wantTwo, step = avx2A8IQ4Acc, avx2A8IQ4Two, 0x1p-8 // adaptive 8-bit weights
		}
		if avx2B8On && hasAVXVNNI && avx2B8VNNI { // the AVX-VNNI 8-bit kernels
			switch {
			case tc.f == Q4_0 || tc.f == Q4_1:
				j := map[Format]int{Q4_0: 0, Q4_1: 1}[tc.f]
				want, wantTwo, step = avx2B8VNNIAcc[j], avx2B8VNNITwo[j], 0x1p-8
			case tc.f == Q8_0 && avx2A8Q80:
				want, wantTwo, step = avx2A8VNNIAcc, avx2A8VNNITwo, 0x1p-8
			case tc.f == IQ4_NL && avx2A8IQ4:
				want, wantTwo, step = avx2A8IQ4VNNIAcc, avx2A8IQ4VNNITwo, 0x1p-8
			case tc.f == Q5_0 && avx2A8Q50:
				want, wantTwo, step = avx2A8Q5VNNIAcc, avx2A8Q5VNNITwo, 0x1p-8
			case tc.f == Q5_1 && avx2U8Q51:
				want, wantTwo, step = avx2U8VNNIAcc, avx2U8VNNITwo, 0x1p-9
			}
		}
		if got := avx2IntAccFor(*tc.avx512Kern); got != want {
			t.Errorf("%s: another kernel runs", tc.f)
		}
		if two := multiTwo(want); two != wantTwo {
			t.Errorf("%s: another two-accumulator kernel", tc.f)
		}
		if s := AccumulateStep(mustCodec(t, tc.f, 128)); s != step {
			t.Errorf("%s: AccumulateStep %g", tc.f, s)
		}
	}
}

// TestMultiQueryAVX2FloatAcc runs the reference checks of the formats the AVX2 integer kernels
// serve with those kernels switched off, so the AVX2 float accumulate kernels they replace stay
// tested where they run (KVLAB_NO_AVX512 set on this CPU).
func TestMultiQueryAVX2FloatAcc(t *testing.T) {
	if !avx2IntAccOn {
		t.Skip("the AVX2 integer kernels do not run here")
	}
	avx2IntAccOn = false
	defer func() { avx2IntAccOn = true }()
	rng := rand.New(rand.NewPCG(73, 74))
	for _, f := range []Format{Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, IQ4_NL} {
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

// TestAVX2IntAccSpeed reports (KVLAB_SPEED_REPORT set, KVLAB_NO_AVX512 set on an AVX-512 CPU),
// per row of benchDim values and four accumulators, the thread CPU time of
// AccumulateManyMulti through the AVX2 float kernels, the plain AVX2 integer kernels and (where
// the CPU has it) the AVX-VNNI ones, interleaved in one run: in cache (best of 500 calls over
// benchRows rows) and streamed past the caches (64 MiB of those rows in chunks of benchRows,
// best of KVLAB_SPEED_ROUNDS rounds, default 10, of the chunks' sum).
func TestAVX2IntAccSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !avx2IntAccOn {
		t.Skip("the AVX2 integer kernels do not run here (set KVLAB_NO_AVX512 on AVX-512 CPUs)")
	}
	rounds := 10
	if n, err := fmt.Sscan(os.Getenv("KVLAB_SPEED_ROUNDS"), &rounds); n != 1 || err != nil {
		rounds = 10
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	on, vnni := avx2IntAccOn, hasAVXVNNI
	defer func() { avx2IntAccOn, hasAVXVNNI = on, vnni }()
	names := []string{"float", "avx2 int"}
	if cpu.X86.HasAVXVNNI {
		names = append(names, "avx-vnni")
	}
	set := func(i int) { avx2IntAccOn, hasAVXVNNI = i > 0, i == 2 }
	for _, f := range []Format{Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, IQ4_NL} {
		c := mustCodec(t, f, benchDim)
		mq := c.(MultiQuery)
		tile, _ := benchRowsOf(c)
		vals := make([]byte, (64<<20)/len(tile)*len(tile))
		for o := 0; o < len(vals); o += len(tile) {
			copy(vals[o:], tile)
		}
		w := make([]float32, 4*benchRows)
		for i := range w {
			w[i] = 1.0 / benchRows
		}
		acc := make([]float32, 4*benchDim)
		cache := make([]time.Duration, len(names))
		stream := make([]time.Duration, len(names))
		for i := range cache {
			cache[i], stream[i] = time.Hour, time.Hour
		}
		for r := 0; r < 500; r++ {
			for i := range names {
				set(i)
				t0 := cputime.Thread()
				mq.AccumulateManyMulti(acc, 4, w, tile)
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
					mq.AccumulateManyMulti(acc, 4, w, vals[k*len(tile):(k+1)*len(tile)])
					s += cputime.Thread() - t0
				}
				stream[i] = min(stream[i], s)
			}
		}
		line := fmt.Sprintf("%-6s acc per row of %d values, 4 accumulators:", f, benchDim)
		for i, name := range names {
			line += fmt.Sprintf(" %s %.2f ns in cache (%.2f×), %.2f ns streamed (%.2f×);", name,
				float64(cache[i].Nanoseconds())/benchRows, float64(cache[i])/float64(cache[0]),
				float64(stream[i].Nanoseconds())/float64(chunks*benchRows), float64(stream[i])/float64(stream[0]))
		}
		t.Log(line)
	}
}

// TestAVX2IntAccTwoMatchesFour checks the two-accumulator AVX2 integer kernels against the
// four-accumulator ones, bit for bit, on any AVX2 CPU: the two accumulators' rows weighted in
// place (each row's two weights adjacent, stride 8 bytes) against the same two in the first
// places of four whose other two carry unrelated weights. Dims, row counts and weights as
// TestAVX2IntAccMatches's; sentinels past the two accumulators check that nothing is written
// there, and multiTwo must choose the variant.
func TestAVX2IntAccTwoMatchesFour(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(75, 76))
	for name, ks := range avx2IntAccFlavours() {
		for _, tc := range avx2IntAccCases {
			four := ks[tc.i]
			two := avx2IntAccTwo(four)
			if two == nil || multiTwo(four) != two {
				t.Fatalf("%s/%s: no two-accumulator variant chosen", name, tc.f)
			}
			for _, d := range []int{32, 64, 96, 128, 200, 256} {
				for _, rows := range []int{1, 2, 3, 5, 63, 64, 65, 130} {
					t.Run(fmt.Sprintf("%s/%s/d%d/rows%d", name, tc.f, d, rows), func(t *testing.T) {
						c := Unwrap(mustCodec(t, tc.f, d))
						nv, rb := intAccBlocks(c).full*BlockSize, c.RowBytes()
						src := outlierRows(rng, rows, d)
						enc := make([]byte, rows*rb)
						for r := 0; r < rows; r++ {
							c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
						}
						w2 := make([]float32, 2*rows)
						w4 := make([]float32, 4*rows)
						for j := 0; j < rows; j++ {
							for h := 0; h < 4; h++ {
								x := float32(math.Exp(-8 * rng.Float64()))
								switch {
								case rng.IntN(7) == 0:
									x = 0
								case j%64 == h:
									x = 1
								case rng.IntN(11) == 0:
									x = -x
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
								t.Fatalf("accumulator %d [%d]: two-accumulator kernel %g, four-accumulator %g", i/d, i%d, acc2[i], acc4[i])
							}
						}
						for i := 2 * d; i < len(acc2); i++ {
							if acc2[i] != sentinel {
								t.Fatalf("the kernel wrote %g past the two accumulators (at %d)", acc2[i], i-2*d)
							}
						}
					})
				}
			}
		}
	}
}

// TestAVX2IntAccQ5Extremes checks q5_0's and q5_1's AVX2 integer kernels (four and two
// accumulators) against the AVX-512 integer kernels bit for bit on rows whose codes are all at
// the ends of their range or next to the offset (c = 0, 31, 15, 16: every fifth bit clear, set,
// or mixed) and whose weights are all equal in magnitude, so that every int16 weight is ±32767
// and the int32 sums reach the largest the kernels can meet (64 rows × 32767 × 16·16 for the
// plain AVX2 kernels' scaled words), with signs all alike or alternating; rows 64 and 130
// (whole tiles and a partial one with a lone last row).
func TestAVX2IntAccQ5Extremes(t *testing.T) {
	if !hasAVX2 || !vnniReference {
		t.Skip("needs AVX2 and the AVX-512 integer kernels")
	}
	const d = 128
	rng := rand.New(rand.NewPCG(77, 78))
	for name, ks := range avx2IntAccFlavours() {
		for _, tc := range avx2IntAccCases {
			if tc.f != Q5_0 && tc.f != Q5_1 {
				continue
			}
			c := Unwrap(mustCodec(t, tc.f, d))
			rb := c.RowBytes()
			bs := rb / (d / BlockSize)
			hdr := bs - 20 // d (and m) before qh (4 bytes) and the 16 nibble bytes
			for _, pattern := range []string{"zero", "max", "mid", "mixed"} {
				for _, sign := range []string{"same", "alternating", "negative"} {
					for _, rows := range []int{64, 130} {
						enc := make([]byte, rows*rb)
						for r := 0; r < rows; r++ {
							for b := 0; b < d/BlockSize; b++ {
								blk := enc[r*rb+b*bs : r*rb+(b+1)*bs]
								for i := 0; i < hdr; i += 2 {
									blk[i], blk[i+1] = 0x00, 0x3C // 1.0 (f16)
								}
								qh, qs := blk[hdr:hdr+4], blk[hdr+4:]
								for j := 0; j < BlockSize; j++ {
									var code int
									switch pattern {
									case "zero":
									case "max":
										code = 31
									case "mid":
										code = 15 + (j+r)%2
									default:
										code = []int{0, 31, 15, 16}[rng.IntN(4)]
									}
									if code >= 16 {
										qh[j/8] |= 1 << (j % 8)
									}
									if j < 16 {
										qs[j] |= byte(code & 15)
									} else {
										qs[j-16] |= byte(code&15) << 4
									}
								}
							}
						}
						w := make([]float32, 4*rows)
						for j := range w {
							w[j] = 1
							if sign == "negative" || (sign == "alternating" && (j/4+j%4)%2 == 1) {
								w[j] = -1
							}
						}
						w2 := make([]float32, 2*rows)
						for j := 0; j < rows; j++ {
							w2[2*j], w2[2*j+1] = w[4*j], w[4*j+1]
						}
						a4 := make([]float32, 4*d+8)
						for i := range a4 {
							a4[i] = float32(rng.NormFloat64())
						}
						ref := append([]float32(nil), a4...)
						a2 := append([]float32(nil), a4[:2*d]...)
						ks[tc.i].acc(&a4[0], d, d, &enc[0], rb, rows, &w[0], 16)
						tc.avx512(&ref[0], d, d, &enc[0], rb, rows, &w[0], 16)
						avx2IntAccTwo(ks[tc.i]).acc(&a2[0], d, d, &enc[0], rb, rows, &w2[0], 8)
						for i := range a4 {
							if math.Float32bits(a4[i]) != math.Float32bits(ref[i]) {
								t.Fatalf("%s/%s/%s/%s/rows%d: accumulator %d [%d]: AVX2 kernel %g, AVX-512 kernel %g",
									name, tc.f, pattern, sign, rows, i/d, i%d, a4[i], ref[i])
							}
							if i < 2*d && math.Float32bits(a2[i]) != math.Float32bits(ref[i]) {
								t.Fatalf("%s/%s/%s/%s/rows%d: accumulator %d [%d]: two-accumulator kernel %g, AVX-512 kernel %g",
									name, tc.f, pattern, sign, rows, i/d, i%d, a2[i], ref[i])
							}
						}
					}
				}
			}
		}
	}
}
