//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMultiQueryAVX2Kernels runs the reference checks with the AVX2 kernels selected, whatever
// the CPU prefers, so they are tested on AVX-512 machines too.
func TestMultiQueryAVX2Kernels(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	withAVX2Kernels(func() {
		rng := rand.New(rand.NewPCG(17, 18))
		for _, f := range multiFormats {
			for _, d := range []int{40, 64, 128, 200} {
				for _, n := range []int{1, 3, 4, 8} {
					for _, rows := range []int{1, 7, 130} {
						t.Run(fmt.Sprintf("%s/d%d/n%d/rows%d", f, d, n, rows), func(t *testing.T) {
							checkMulti(t, rng, f, d, n, rows)
						})
					}
				}
			}
		}
	})
}

// withAVX2Kernels runs f with the AVX2 kernels selected (and the VNNI ones off), whatever the
// CPU prefers.
func withAVX2Kernels(f func()) {
	f16, q8, q4, tq, bf, iq := multiF16, multiQ8_0, multiQ4_0, multiTQ4, multiBF16, multiIQ4NL
	multiF16, multiQ8_0, multiQ4_0, multiTQ4 = avx2Kernels[0], avx2Kernels[1], avx2Kernels[2], tq4AVX2
	multiBF16 = &multiKernels{multiScoresBF16AVX2, multiAccBF16AVX2}
	multiIQ4NL = &multiKernels{multiScoresIQ4NLAVX2, multiAccIQ4NLAVX2}
	defer func() {
		multiF16, multiQ8_0, multiQ4_0, multiTQ4, multiBF16, multiIQ4NL = f16, q8, q4, tq, bf, iq
	}()
	withoutVNNI(f)
}

// TestMultiQuerySpeedAVX2 is TestMultiQuerySpeed with the AVX2 kernels selected.
func TestMultiQuerySpeedAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	withAVX2Kernels(func() { TestMultiQuerySpeed(t) })
}
