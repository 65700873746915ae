package kvq

import (
	"fmt"
	"math"
	"testing"
)

// seedRand is a splitmix64 stream for the tests of the seed formats (fp8, tq4, q2k): its
// outputs depend on nothing but the seed, on every platform.
type seedRand struct{ s uint64 }

func (r *seedRand) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// uniform is in [0, 1), a multiple of 2^-24.
func (r *seedRand) uniform() float64 { return float64(r.next()>>40) / (1 << 24) }

// norm is a standard normal draw (Box–Muller; platform math may differ in the last ulp).
func (r *seedRand) norm() float64 {
	u1 := (float64(r.next()>>11) + 0.5) / (1 << 53)
	u2 := r.uniform()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// exactish is an approximately normal draw (Irwin–Hall of four uniforms, mean 0, variance 1/3)
// computed with exact arithmetic only, so golden inputs are identical on every platform.
func (r *seedRand) exactish() float32 {
	return float32(r.uniform() + r.uniform() + r.uniform() + r.uniform() - 2)
}

// gaussRows returns n rows of d standard normal values.
func gaussRows(seed uint64, n, d int) [][]float32 {
	r := &seedRand{seed}
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, d)
		for j := range rows[i] {
			rows[i][j] = float32(r.norm())
		}
	}
	return rows
}

func dot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func absDot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return s
}

func relL2(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		e := float64(got[i]) - float64(want[i])
		num += e * e
		den += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(num / den)
}

// denseHadamard is H_n with entries ±1: H[i][j] = (−1)^popcount(i&j).
func denseHadamard(n int) [][]float64 {
	h := make([][]float64, n)
	for i := range h {
		h[i] = make([]float64, n)
		for j := range h[i] {
			v, x := 1.0, i&j
			for ; x > 0; x &= x - 1 {
				v = -v
			}
			h[i][j] = v
		}
	}
	return h
}

func TestRotationMatchesDenseMatrix(t *testing.T) {
	for _, d := range []int{8, 16, 24, 80, 96, 100} {
		t.Run(fmt.Sprint("d=", d), func(t *testing.T) {
			r := newRotation(d, 7, 3, 1)
			sum := 0
			for i, n := range r.chunks {
				if n&(n-1) != 0 || (i > 0 && n >= r.chunks[i-1]) {
					t.Fatalf("chunks %v are not distinct powers of two, largest first", r.chunks)
				}
				sum += n
			}
			if sum != d {
				t.Fatalf("chunks %v sum to %d", r.chunks, sum)
			}
			x := gaussRows(uint64(d), 1, d)[0]
			got := make([]float32, d)
			r.apply(got, x)
			off := 0
			for _, n := range r.chunks {
				h := denseHadamard(n)
				for i := 0; i < n; i++ {
					var want float64
					for j := 0; j < n; j++ {
						sign := float64(r.sc[off+j]) * math.Sqrt(float64(n)) // ±1
						want += h[i][j] * sign * float64(x[off+j]) / math.Sqrt(float64(n))
					}
					if math.Abs(float64(got[off+i])-want) > 1e-5 {
						t.Fatalf("(R·x)[%d] = %g, dense H·D/√n gives %g", off+i, got[off+i], want)
					}
				}
				off += n
			}
		})
	}
}

func TestRotationOrthogonal(t *testing.T) {
	for _, d := range []int{8, 16, 64, 80, 96, 128, 256, 576} {
		t.Run(fmt.Sprint("d=", d), func(t *testing.T) {
			r := newRotation(d, 1, 0, 0)
			for _, x := range gaussRows(uint64(d)+1, 4, d) {
				y := make([]float32, d)
				r.apply(y, x)
				if n0, n1 := math.Sqrt(dot64(x, x)), math.Sqrt(dot64(y, y)); math.Abs(n0-n1) > 1e-5*n0 {
					t.Errorf("‖R·x‖ = %g, ‖x‖ = %g", n1, n0)
				}
				r.applyT(y, y) // in place
				for i := range x {
					if math.Abs(float64(y[i]-x[i])) > 1e-5 {
						t.Fatalf("(RᵀR·x)[%d] = %g, x = %g", i, y[i], x[i])
					}
				}
			}
		})
	}
}

func TestRotationDeterministicPerHead(t *testing.T) {
	same := func(a, b *rotation) bool {
		for i := range a.sc {
			if a.sc[i] != b.sc[i] {
				return false
			}
		}
		return true
	}
	base := newRotation(128, 42, 5, 3)
	if !same(base, newRotation(128, 42, 5, 3)) {
		t.Fatal("the same (seed, layer, head) drew different signs")
	}
	for _, tc := range []struct {
		name        string
		seed        uint64
		layer, head int
	}{
		{"other head", 42, 5, 4},
		{"other layer", 42, 6, 3},
		{"other seed", 43, 5, 3},
		{"layer and head swapped", 42, 3, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if same(base, newRotation(128, tc.seed, tc.layer, tc.head)) {
				t.Error("drew the same signs")
			}
		})
	}
	// The signs are balanced: a stuck generator would draw all one sign.
	neg := 0
	for _, s := range newRotation(4096, 0, 0, 0).sc {
		if s < 0 {
			neg++
		}
	}
	if neg < 1900 || neg > 2200 {
		t.Errorf("%d of 4096 signs negative", neg)
	}
}
