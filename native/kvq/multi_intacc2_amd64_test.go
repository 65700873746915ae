//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIntAccTwoMatchesFour checks the two-accumulator integer kernels (multi_intacc2_amd64.go;
// int16 and, where VBMI runs, 8-bit weights) against the four-accumulator kernels they stand
// for, bit for bit: the two accumulators' rows
// weighted in place (n = 2, each row's two weights adjacent) against the same two in the first
// places of four whose other two carry unrelated weights (an accumulator's sums depend only on
// its own weights). The weights are softmax-like with some exactly 0 and one large per tile;
// the dims cover one block, a partial and a whole quad of blocks, two quads and a short tail
// block; the row counts a lone last row and the 64-row tiles. Sentinels past the two
// accumulators check that nothing is written there.
func TestIntAccTwoMatchesFour(t *testing.T) {
	if !intAcc() {
		t.Skip("no integer accumulate kernels here")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	for _, tc := range []struct {
		f           Format
		cur         *multiKernels // the codec's four-accumulator kernels
		four, two   *multiKernels // the int16 ones
		four8, two8 *multiKernels // the 8-bit ones (intAcc8), nil for none
		two8k       [2]accKernel  // two8's flavours: PREFETCHT0 and into L2 (pickZen4), nil for none
	}{
		{Q4_0, intAccQ4_0, intAccVBMI(multiAccQ40INT, multiAccQ40VINT), intAccTwoQ4_0,
			&multiKernels{acc: multiAccQ40V8INT}, intAccTwo8Q4_0, [2]accKernel{multiAccQ40V8TwoINT, multiAccQ40V8Z4TwoINT}},
		{Q8_0, intAccQ8_0, intAccQ8_0, intAccTwoQ8_0, nil, nil, [2]accKernel{}},
		{Q4_1, intAccQ4_1, intAccVBMI(multiAccQ41INT, multiAccQ41VINT), intAccTwoQ4_1,
			&multiKernels{acc: multiAccQ41V8INT}, intAccTwo8Q4_1, [2]accKernel{multiAccQ41V8TwoINT, multiAccQ41V8Z4TwoINT}},
		{IQ4_NL, intAccIQ4NL, intAccVBMI(multiAccIQ4NLINT, multiAccIQ4NLVINT), intAccTwoIQ4NL,
			&multiKernels{acc: multiAccIQ4NLV8INT}, intAccTwo8IQ4NL, [2]accKernel{multiAccIQ4NLV8TwoINT, multiAccIQ4NLV8Z4TwoINT}},
	} {
		wantTwo := tc.two
		if tc.cur.w8step > 0 {
			wantTwo = tc.two8
		}
		if got := multiTwo(tc.cur); got != wantTwo {
			t.Fatalf("%s: multiTwo gives another kernel", tc.f)
		}
		for _, d := range []int{32, 64, 96, 128, 200, 256} {
			for _, rows := range []int{1, 2, 3, 63, 64, 65, 130} {
				t.Run(fmt.Sprintf("%s/d%d/rows%d", tc.f, d, rows), func(t *testing.T) {
					c := Unwrap(mustCodec(t, tc.f, d))
					bc := intAccBlocks(c)
					nv, rb := bc.full*BlockSize, c.RowBytes()
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
					check := func(name string, four, two *multiKernels) {
						if four == nil || !hasVBMI && four == tc.four8 {
							return
						}
						a2, a4 := slices.Clone(acc2), slices.Clone(acc4)
						four.acc(&a4[0], d, nv, &enc[0], rb, rows, &w4[0], 16)
						two.acc(&a2[0], d, nv, &enc[0], rb, rows, &w2[0], 8)
						for i := 0; i < 2*d; i++ {
							if math.Float32bits(a2[i]) != math.Float32bits(a4[i]) {
								t.Fatalf("%s: accumulator %d [%d]: two-accumulator kernel %g, four-accumulator %g", name, i/d, i%d, a2[i], a4[i])
							}
						}
						for i := 2 * d; i < len(a2); i++ {
							if a2[i] != sentinel {
								t.Fatalf("%s: the kernel wrote %g past the two accumulators (at %d)", name, a2[i], i-2*d)
							}
						}
					}
					check("int16", tc.four, tc.two)
					check("8-bit", tc.four8, tc.two8)
					for i, k := range tc.two8k {
						if k != nil {
							check([2]string{"8-bit, PREFETCHT0", "8-bit, Zen 4"}[i], tc.four8, &multiKernels{acc: k})
						}
					}
				})
			}
		}
	}
}
