//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestKernelISAZen4 checks that KernelISA names the Zen 4 flavours exactly where they run: an
// AVX-512 name with its own integer kernels (not "AVX-512 + AVX2 integer") on a CPU where
// zen4Stream is set, and nowhere else.
func TestKernelISAZen4(t *testing.T) {
	isa := KernelISA()
	want := zen4Stream && strings.HasPrefix(isa, "AVX-512") && !strings.HasPrefix(isa, "AVX-512 + ")
	if strings.Contains(isa, "Zen 4 flavours") != want {
		t.Fatalf("zen4Stream %v: KernelISA %q", zen4Stream, isa)
	}
}

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
	saved := []*multiKernels{multiF16, multiQ8_0, multiQ4_0, multiTQ4, multiBF16, multiIQ4NL, multiQ4_1, multiQ5_0,
		multiQ5_1, multiFP8, multiTurbo4, multiTurbo3, multiTurbo2}
	multiF16, multiQ8_0, multiQ4_0, multiTQ4 = avx2Kernels[0], avx2Kernels[1], avx2Kernels[2], tq4AVX2
	multiBF16 = bf16AVX2
	multiIQ4NL = &multiKernels{scores: multiScoresIQ4NLAVX2, acc: multiAccIQ4NLAVX2}
	multiQ4_1 = &multiKernels{scores: multiScoresQ41AVX2, acc: multiAccQ41AVX2}
	multiQ5_0 = &multiKernels{scores: multiScoresQ50AVX2, acc: multiAccQ50AVX2}
	multiQ5_1 = &multiKernels{scores: multiScoresQ51AVX2, acc: multiAccQ51AVX2}
	multiFP8 = fp8AVX2
	multiTurbo4 = &multiKernels{scores: multiScoresT4AVX2, acc: multiAccT4AVX2}
	multiTurbo3 = &multiKernels{scores: multiScoresT3AVX2, acc: multiAccT3AVX2}
	multiTurbo2 = &multiKernels{scores: multiScoresT2AVX2, acc: multiAccT2AVX2}
	defer func() {
		multiF16, multiQ8_0, multiQ4_0, multiTQ4, multiBF16, multiIQ4NL, multiQ4_1, multiQ5_0 = saved[0], saved[1], saved[2], saved[3], saved[4], saved[5], saved[6], saved[7]
		multiQ5_1, multiFP8, multiTurbo4, multiTurbo3, multiTurbo2 = saved[8], saved[9], saved[10], saved[11], saved[12]
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
