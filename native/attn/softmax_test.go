package attn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxRowsFloor checks softmaxRows on scores spread over hundreds of nats: every weight
// is e^(x − max) within the exponential's 2⁻²² plus the rounding of its argument (x·log₂e and
// max·log₂e are rounded apart on the vector path, so the error grows with |x| + |max|; the
// scalar path handles the entries past the last whole vector), weights at or below 2^expFloor are exactly 0, none is
// subnormal (subnormal weights stall the multiply-adds that follow), and the sums are the
// sums of the weights.
func TestSoftmaxRowsFloor(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	// Scores spread over a few nats too, where the bound is tight enough to catch an error of
	// 2⁻¹⁸ in the exponential itself.
	for _, spread := range []float64{80, 2} {
		for _, n := range []int{1, 2, 3, 4, 8} {
			for _, m := range []int{1, 15, 64, 333} {
				sco := make([]float32, n*m)
				for i := range sco {
					sco[i] = float32(rng.NormFloat64() * spread)
				}
				orig := append([]float32(nil), sco...)
				const scale = 0.75
				mx, sums := make([]float32, n), make([]float32, n)
				softmaxRows(sco, n, scale, mx, sums)
				for i := 0; i < n; i++ {
					want := math.Inf(-1)
					for j := 0; j < m; j++ {
						want = math.Max(want, float64(orig[j*n+i]*scale))
					}
					if float64(mx[i]) != want {
						t.Fatalf("n%d m%d column %d: max %g, want %g", n, m, i, mx[i], want)
					}
					var sum float64
					for j := 0; j < m; j++ {
						x := float64(orig[j*n+i]*scale) - want
						got := float64(sco[j*n+i])
						sum += got
						if got != 0 && got < 0x1p-126 {
							t.Fatalf("n%d m%d: weight %g is subnormal", n, m, got)
						}
						if x*math.Log2E <= expFloor {
							if got != 0 {
								t.Fatalf("n%d m%d: e^%g = %g, want 0 below the floor", n, m, x, got)
							}
							continue
						}
						tol := math.Exp(x) * (0x1p-21 + 0x1p-22*(math.Abs(float64(orig[j*n+i]*scale))+math.Abs(want)))
						if e := math.Abs(got - math.Exp(x)); e > tol {
							t.Fatalf("n%d m%d: e^%g = %g, want %g", n, m, x, got, math.Exp(x))
						}
					}
					if math.Abs(float64(sums[i])-sum) > 1e-6*sum {
						t.Fatalf("n%d m%d column %d: sum %g, weights add to %g", n, m, i, sums[i], sum)
					}
				}
			}
		}
	}
}

// TestSoftmaxRowsNaN checks that a NaN score gets weight 0 and leaves each column's maximum
// the largest of its other scores, the other weights e^(x − max) and the sums the sums of the
// weights (AVX-512: the kernel without the floor test runs on these scores, and softmaxVec
// zeroes its NaN weights). Seeds 1–20 place the NaNs anywhere in the columns, and one always
// past the last whole vector: a vector maximum pass that took a NaN into its running maximum
// lost the maximum before it, and so did a tail folded in with Go's max.
func TestSoftmaxRowsNaN(t *testing.T) {
	for seed := uint64(0); seed <= 20; seed++ {
		softmaxRowsNaN(t, seed)
	}
}

func softmaxRowsNaN(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(43, 44+seed))
	const n, m, scale = 4, 333, 0.75
	sco := make([]float32, n*m)
	for i := range sco {
		sco[i] = float32(rng.NormFloat64() * 2)
	}
	nan := map[int]bool{5: true, 77: true, 640: true, 1001: true} // in whole vectors
	if seed > 0 {
		nan = map[int]bool{}
		for range 6 {
			nan[rng.IntN(n*m)] = true
		}
		// One past the last whole vector (16 or 8 lanes: the same 4 entries here), where
		// softmaxVec folds the scores into the maxima itself.
		tail := n * m &^ 15
		nan[tail+rng.IntN(n*m-tail)] = true
	}
	for i := range nan {
		sco[i] = float32(math.NaN())
	}
	orig := append([]float32(nil), sco...)
	mx, sums := make([]float32, n), make([]float32, n)
	softmaxRows(sco, n, scale, mx, sums)
	for i := 0; i < n; i++ {
		want := float32(math.Inf(-1))
		for j := 0; j < m; j++ {
			if k := j*n + i; !nan[k] {
				want = max(want, orig[k]*scale)
			}
		}
		if mx[i] != want {
			t.Fatalf("seed %d column %d: max %g, want %g", seed, i, mx[i], want)
		}
		var sum float64
		for j := 0; j < m; j++ {
			k := j*n + i
			got := float64(sco[k])
			sum += got
			if nan[k] {
				if got != 0 {
					t.Fatalf("seed %d cell %d column %d: NaN score's weight %g, want 0", seed, j, i, got)
				}
				continue
			}
			x := float64(orig[k]*scale) - float64(mx[i])
			if e := math.Abs(got - math.Exp(x)); !(e <= math.Exp(x)*0x1p-19) {
				t.Fatalf("seed %d cell %d column %d: e^%g = %g, want %g", seed, j, i, x, got, math.Exp(x))
			}
		}
		if !(math.Abs(float64(sums[i])-sum) <= 1e-6*sum) {
			t.Fatalf("seed %d column %d: sum %g, weights add to %g", seed, i, sums[i], sum)
		}
	}
}
