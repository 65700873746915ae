//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMultiQueryAVX512FloatAcc runs the reference checks of the formats the integer kernels serve with the integer
// accumulate kernels switched off, so the AVX-512 float accumulate kernels they replace stay
// tested on CPUs that have both.
func TestMultiQueryAVX512FloatAcc(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	vl := hasAVX512VL
	hasAVX512VL = false
	defer func() { hasAVX512VL = vl }()
	rng := rand.New(rand.NewPCG(43, 44))
	for _, f := range []Format{Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Turbo2, Turbo3, Turbo4} {
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
