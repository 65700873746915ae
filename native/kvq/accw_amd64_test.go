//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestAccBcastFMA checks that the f16, bf16 and fp8 (VBMI) AVX-512 accumulate kernels sum bit
// for bit the same with accFloatBcst (f16, bf16) and accBcastFMA (fp8) set (each weight an
// FMA's embedded broadcast, as on AMD Zen 4 and, for f16 and bf16, Intel) and unset (register
// broadcasts), over row counts around the 64-row tiles, rows with a tail past
// the last 32-value group, outlier values and weights, zero, negative and NaN weights included,
// and that neither writes past the four accumulators.
func TestAccBcastFMA(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	saved, savedFloat := accBcastFMA, accFloatBcst
	defer func() { accBcastFMA, accFloatBcst = saved, savedFloat }()
	rng := rand.New(rand.NewPCG(31, 32))
	kernels := []struct {
		f Format
		k func(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
	}{{F16, multiAccF16AVX512}, {BF16, multiAccBF16AVX512}}
	if hasFP8VBMI {
		kernels = append(kernels, struct {
			f Format
			k func(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
		}{FP8, multiAccFP8VBMI})
	}
	for _, kc := range kernels {
		for _, d := range []int{32, 64, 100, 128, 256} {
			c := mustCodec(t, kc.f, d)
			rb, nv := c.RowBytes(), d&^31
			for _, m := range []int{1, 2, 7, 63, 64, 65, 129, 200} {
				t.Run(fmt.Sprintf("%v/d%d/m%d", kc.f, d, m), func(t *testing.T) {
					rows := make([]byte, m*rb)
					EncodeRows(c, rows, outlierRows(rng, m, d), m)
					w := gaussianRows(rng, m, 4, 1)
					w[0], w[len(w)-1] = 0, -3.5e7
					if m > 2 {
						w[5] = float32(math.NaN())
					}
					acc0 := gaussianRows(rng, 1, 4*d+16, 1)
					var got [2][]float32
					for i, on := range []bool{false, true} {
						accBcastFMA, accFloatBcst = on, on
						acc := append([]float32(nil), acc0...)
						kc.k(&acc[0], d, nv, &rows[0], rb, m, &w[0], 16)
						checkBits(t, "past the accumulators", acc[4*d:], acc0[4*d:])
						got[i] = acc
					}
					checkBits(t, "accumulator", got[1], got[0])
				})
			}
		}
	}
}
