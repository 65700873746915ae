//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// avx2B8VNNIPairs are the AVX-VNNI 8-bit kernels (avx2B8VNNI) with the plain AVX2 kernels whose
// results they must give bit for bit, and their accumulators.
var avx2B8VNNIPairs = []struct {
	f           Format
	nacc        int
	plain, vnni accKernel
}{
	{Q4_0, 4, multiAccQ40B8AVX2INT, multiAccQ40B8VNNIINT},
	{Q4_0, 2, multiAccQ40B8TwoAVX2INT, multiAccQ40B8TwoVNNIINT},
	{Q4_1, 4, multiAccQ41B8AVX2INT, multiAccQ41B8VNNIINT},
	{Q4_1, 2, multiAccQ41B8TwoAVX2INT, multiAccQ41B8TwoVNNIINT},
	{Q8_0, 4, multiAccQ80A8AVX2INT, multiAccQ80A8VNNIINT},
	{Q8_0, 2, multiAccQ80A8TwoAVX2INT, multiAccQ80A8TwoVNNIINT},
	{IQ4_NL, 4, multiAccIQ4NLA8AVX2INT, multiAccIQ4NLA8VNNIINT},
	{IQ4_NL, 2, multiAccIQ4NLA8TwoAVX2INT, multiAccIQ4NLA8TwoVNNIINT},
	{Q5_0, 4, multiAccQ50A8AVX2INT, multiAccQ50A8VNNIINT},
	{Q5_0, 2, multiAccQ50A8TwoAVX2INT, multiAccQ50A8TwoVNNIINT},
	{Q5_1, 4, multiAccQ51U8AVX2INT, multiAccQ51U8VNNIINT},
	{Q5_1, 2, multiAccQ51U8TwoAVX2INT, multiAccQ51U8TwoVNNIINT},
}

// TestAVX2IntAccB8VNNIMatches checks each AVX-VNNI 8-bit kernel against its plain AVX2 kernel
// bit for bit (the accumulators and sentinels past them) where the CPU has AVX-VNNI: softmax-like
// weights (zeros, a peak a tile, some negative: the adaptive kernels' int16 path), flat positive
// weights (their 8-bit path), flat weights of either sign (no peak: iq4_nl's plain kernel takes
// its int16 path for a row's weights of both signs, its AVX-VNNI one its 8-bit path, iq4U8Swap),
// and rows whose every code is the largest or the smallest with
// equal weights of either sign (the plain kernels' word sums at their bound); dims with a
// pair's missing second block, row counts around the quads, the plain kernels' flushes and the
// 64-row tiles; weight strides of n and n+1 accumulators. That the VNNI kernels are selected
// where they should be is TestAVX2IntAccB8VNNISelected's.
func TestAVX2IntAccB8VNNIMatches(t *testing.T) {
	if !hasAVX2 || !hasAVXVNNI {
		t.Skip("no AVX-VNNI")
	}
	rng := rand.New(rand.NewPCG(91, 92))
	for _, p := range avx2B8VNNIPairs {
		for _, d := range []int{32, 96, 128, 200} {
			for _, rows := range []int{1, 2, 3, 4, 5, 31, 32, 33, 63, 64, 65, 130, 200} {
				for _, n := range []int{p.nacc, p.nacc + 1} {
					for _, shape := range []string{"softmax", "flat", "mixed", "max+", "max-", "min+"} {
						t.Run(fmt.Sprintf("%s/acc%d/d%d/rows%d/n%d/%s", p.f, p.nacc, d, rows, n, shape), func(t *testing.T) {
							c := Unwrap(mustCodec(t, p.f, d))
							enc := b8Rows(rng, c, rows, false)
							switch shape {
							case "max+", "max-":
								b8Fill(c, enc, rows, map[Format]byte{Q8_0: 0x7F}[p.f]|map[bool]byte{true: 0xFF}[p.f != Q8_0])
							case "min+":
								b8Fill(c, enc, rows, map[Format]byte{Q8_0: 0x80}[p.f])
							}
							w := make([]float32, n*rows)
							for j := range w {
								switch shape {
								case "softmax":
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
								case "flat":
									w[j] = float32(0.5 + 0.5*rng.Float64())
								case "mixed":
									w[j] = float32(0.5 + 0.5*rng.Float64())
									if rng.IntN(2) == 0 {
										w[j] = -w[j]
									}
								case "max-":
									w[j] = -1
								default:
									w[j] = 1
								}
							}
							nv, rb := intAccBlocks(c).full*BlockSize, c.RowBytes()
							const sentinel = 12345.5
							a1 := make([]float32, p.nacc*d+8)
							for i := range a1 {
								a1[i] = float32(rng.NormFloat64())
							}
							for i := p.nacc * d; i < len(a1); i++ {
								a1[i] = sentinel
							}
							a2 := append([]float32(nil), a1...)
							p.plain(&a1[0], d, nv, &enc[0], rb, rows, &w[0], 4*n)
							p.vnni(&a2[0], d, nv, &enc[0], rb, rows, &w[0], 4*n)
							for i := range a1 {
								if math.Float32bits(a1[i]) != math.Float32bits(a2[i]) {
									t.Fatalf("[%d]: plain %g, AVX-VNNI %g", i, a1[i], a2[i])
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestAVX2IntAccB8VNNISelected checks that AVX-VNNI CPUs take the AVX-VNNI 8-bit kernels for
// q4_0, q4_1, iq4_nl, q5_0, q5_1 and (where avx2A8Q80) q8_0, four accumulators and two, where the plain
// AVX2 ones would run, and the int16 ones under KVLAB_ACC16 (avx2B8On false).
func TestAVX2IntAccB8VNNISelected(t *testing.T) {
	if !avx2IntAccOn || !hasAVX2 || !hasAVXVNNI {
		t.Skip("the AVX2 integer kernels with AVX-VNNI do not run here")
	}
	want := map[*multiKernels]*multiKernels{
		intAccQ4_0: avx2B8VNNIAcc[0], intAccQ4_1: avx2B8VNNIAcc[1], intAccIQ4NL: avx2A8IQ4VNNIAcc,
		intAccQ5_0: avx2A8Q5VNNIAcc, intAccQ5_1: avx2U8VNNIAcc,
	}
	if avx2A8Q80 {
		want[intAccQ8_0] = avx2A8VNNIAcc
	}
	two := map[*multiKernels]*multiKernels{
		avx2B8VNNIAcc[0]: avx2B8VNNITwo[0], avx2B8VNNIAcc[1]: avx2B8VNNITwo[1], avx2A8VNNIAcc: avx2A8VNNITwo, avx2A8IQ4VNNIAcc: avx2A8IQ4VNNITwo,
		avx2A8Q5VNNIAcc: avx2A8Q5VNNITwo, avx2U8VNNIAcc: avx2U8VNNITwo,
	}
	for i, k := range want {
		got := avx2IntAccFor(i)
		if avx2B8On && got != k {
			t.Errorf("%p: kernel %p, want the AVX-VNNI 8-bit one %p", i, got, k)
		}
		if !avx2B8On && got == k {
			t.Errorf("%p: the AVX-VNNI 8-bit kernel under KVLAB_ACC16", i)
		}
		if got := avx2IntAccTwo(k); got != two[k] {
			t.Errorf("two accumulators of %p: %p, want %p", k, got, two[k])
		}
	}
}
