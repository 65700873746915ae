//go:build arm64 && !purego

package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// neonKernels are the formats with NEON MultiQuery kernels and the kernels arm64 builds select.
func neonKernels() []struct {
	f Format
	k *multiKernels
} {
	return []struct {
		f Format
		k *multiKernels
	}{{F16, multiF16}, {Q8_0, multiQ8_0}, {Q4_0, multiQ4_0}, {TQ4, multiTQ4}, {BF16, multiBF16}, {IQ4_NL, multiIQ4NL}, {Q4_1, multiQ4_1},
		{Q5_0, multiQ5_0}, {Q5_1, multiQ5_1}, {Turbo4, multiTurbo4}, {FP8, multiFP8}, {Turbo3, multiTurbo3}, {Turbo2, multiTurbo2}}
}

// TestNEONKernelsSelected checks that arm64 builds route f16, q8_0, q4_0, tq4, bf16, iq4_nl,
// q4_1, q5_0, q5_1, turbo4, fp8, turbo3 and turbo2 through the NEON kernels, so the reference
// tests (TestMultiQueryMatchesReference and the rest) exercise them rather than the per-query
// fallback, and q2k's ScoresRangeMulti through its kernel (TestQ2KScoresRangeMulti); and that
// FastDecode and KernelSummary say so: every format but f32 has a fast path at head_dim 128.
func TestNEONKernelsSelected(t *testing.T) {
	for _, tc := range neonKernels() {
		if tc.k == nil {
			t.Errorf("%s: no NEON kernels selected", tc.f)
		}
	}
	for _, f := range Formats() {
		if fast := FastDecode(f, 128); fast != (f != F32) {
			t.Errorf("%s: FastDecode(128) is %v", f, fast)
		}
	}
	for _, d := range []int{32, 64, 128, 256} {
		if !Q2KFastPath(d) {
			t.Errorf("q2k: Q2KFastPath(%d) is false", d)
		}
	}
	if s := KernelSummary(); !strings.Contains(s, "no fast path for f32 at head_dim ≥ 32,") {
		t.Errorf("KernelSummary: %q", s)
	}
}

// TestNEONKernels calls the NEON kernels directly, with output and weight strides wider than
// four, and checks the contract multi_arm64.go states: each score within
// (nv/16 + 5)·2⁻²⁴·Σ|q[i]·x[i]| of the exact sum over the first nv values (16 lanes of fused
// multiply-adds, reduced pairwise; turbo3 and turbo2, whose row scale multiplies the reduced
// sum, (nv/16 + 6)), each accumulated value within (m + 2)·2⁻²⁴·(|acc₀[i]| +
// Σ_j |w_j·x_j[i]|) of the exact one (row order, one rounding a row), the output slots past
// the four queries and the accumulators' values past nv untouched. tq4's and turbo4's x is
// their rotated-domain values in tq4Permute's order, the order their kernels take queries and
// accumulators in; turbo3's and turbo2's their rotated-domain values in order.
func TestNEONKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const stride = 6 // floats per row of out and w: two slots past the four queries
	for _, tc := range neonKernels() {
		for _, d := range []int{32, 75, 128, 200} {
			for _, m := range []int{1, 5, 64, 65, 130} {
				t.Run(fmt.Sprintf("%s/d%d/m%d", tc.f, d, m), func(t *testing.T) {
					checkNEONKernels(t, rng, tc.f, tc.k, d, m, stride)
				})
			}
		}
	}
}

func checkNEONKernels(t *testing.T, rng *rand.Rand, f Format, k *multiKernels, d, m, stride int) {
	c := mustCodec(t, f, d)
	if rc, ok := c.(*rotCodec); ok {
		c = rc.inner // turbo4's kernels work in the rotated domain, under the rotation
	}
	rb, nv := c.RowBytes(), d&^31
	src := outlierRows(rng, m, d)
	enc := make([]byte, m*rb)
	x := make([]float32, m*d)
	for j := 0; j < m; j++ {
		c.Encode(enc[j*rb:(j+1)*rb], src[j*d:(j+1)*d])
		c.Decode(x[j*d:(j+1)*d], enc[j*rb:(j+1)*rb])
	}
	if tc, ok := c.(*tq4Codec); ok {
		y := make([]float32, m*d)
		for j := 0; j < m; j++ {
			tc.rotatedDecode(y[j*d:(j+1)*d], enc[j*rb:(j+1)*rb])
		}
		tq4Permute(x, y, m, d)
	}
	sumRoundings := 5 // the scores' bound in units of 2⁻²⁴·Σ|q[i]·x[i]|, past nv/16
	if lc, ok := c.(*lmCodec); ok && lc.bits == 4 {
		y := append([]float32(nil), x...)
		tq4Permute(x, y, m, d) // turbo4 takes tq4's order too
	} else if ok {
		sumRoundings = 6 // the row scale times the reduced sum
	}
	nan := float32(math.NaN())
	u := math.Ldexp(1, -24)

	q := gaussianRows(rng, 4, d, 1)
	out := make([]float32, m*stride)
	for i := range out {
		out[i] = nan
	}
	k.scores(&q[0], d, nv, &enc[0], rb, m, &out[0], 4*stride)
	for j := 0; j < m; j++ {
		for h := 0; h < 4; h++ {
			var exact, mag float64
			for i := 0; i < nv; i++ {
				p := float64(q[h*d+i]) * float64(x[j*d+i])
				exact += p
				mag += math.Abs(p)
			}
			bound := float64(nv/16+sumRoundings) * u * mag
			if got := out[j*stride+h]; !(math.Abs(float64(got)-exact) <= bound) {
				t.Fatalf("row %d query %d: score %g, exact %g: error %g > %g", j, h, got, exact, math.Abs(float64(got)-exact), bound)
			}
		}
		for h := 4; h < stride; h++ {
			if !math.IsNaN(float64(out[j*stride+h])) {
				t.Fatalf("row %d: slot %d past the queries written (%g)", j, h, out[j*stride+h])
			}
		}
	}

	w := make([]float32, m*stride)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
		if i%stride >= 4 {
			w[i] = nan // never read
		}
	}
	acc0 := gaussianRows(rng, 4, d, 1)
	acc := append([]float32(nil), acc0...)
	k.acc(&acc[0], d, nv, &enc[0], rb, m, &w[0], 4*stride)
	for h := 0; h < 4; h++ {
		for i := 0; i < d; i++ {
			got := acc[h*d+i]
			if i >= nv {
				if math.Float32bits(got) != math.Float32bits(acc0[h*d+i]) {
					t.Fatalf("acc %d [%d] past nv changed: %g, was %g", h, i, got, acc0[h*d+i])
				}
				continue
			}
			exact, mag := float64(acc0[h*d+i]), math.Abs(float64(acc0[h*d+i]))
			for j := 0; j < m; j++ {
				p := float64(w[j*stride+h]) * float64(x[j*d+i])
				exact += p
				mag += math.Abs(p)
			}
			bound := float64(m+2) * u * mag
			if math.Abs(float64(got)-exact) > bound || math.IsNaN(float64(got)) {
				t.Fatalf("acc %d [%d]: %g, exact %g: error %g > %g", h, i, got, exact, math.Abs(float64(got)-exact), bound)
			}
		}
	}
}

// TestQ2KScaleNEON checks q2k's query scaling against q_h[c]·scale_c in Go, bit for bit (one
// rounding each), scales of every sign and size included, and that it writes nothing past the
// four queries.
func TestQ2KScaleNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, d := range []int{32, 64, 128, 256} {
		grp := make([]byte, q2kGroupBytes(d))
		for c := 0; c < d; c++ {
			binary.LittleEndian.PutUint16(grp[2*c:], uint16(rng.Uint32()))
		}
		q := gaussianRows(rng, 4, d, 1)
		qs := make([]float32, 4*d+8)
		for i := range qs {
			qs[i] = float32(math.NaN())
		}
		q2kScaleNEON(&q[0], d, &grp[0], &qs[0])
		for h := 0; h < 4; h++ {
			for c := 0; c < d; c++ {
				want := q[h*d+c] * F16ToF32(binary.LittleEndian.Uint16(grp[2*c:]))
				if got := qs[h*d+c]; math.Float32bits(got) != math.Float32bits(want) && !(want != want && got != got) {
					t.Fatalf("d%d query %d channel %d: %g, want %g", d, h, c, got, want)
				}
			}
		}
		for i := 4 * d; i < len(qs); i++ {
			if !math.IsNaN(float64(qs[i])) {
				t.Fatalf("d%d: qs[%d] past the queries written", d, i)
			}
		}
	}
}
