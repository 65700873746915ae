package kvq

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAddF32s: AddF32s, and each vector kernel this CPU runs, give the Go loop's sums bit for bit
// (one float32 addition an element) over lengths with and without a remainder past the whole
// vectors, including infinities, NaN and signed zeros, and leave dst's values past len(x) alone.
// A kernel that skips or repeats a vector, adds the wrong element or reads past n differs here.
func TestAddF32s(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64()) * float32(math.Exp2(float64(r.IntN(40)-20)))
		}
		return v
	}
	check := func(name string, n int, add func(dst, x []float32)) {
		t.Helper()
		dst, x := vec(n+5), vec(n+5)
		if n > 3 {
			dst[1], x[2], dst[3], x[3] = float32(math.Inf(1)), float32(math.NaN()), float32(math.Copysign(0, -1)), 0
		}
		want := slices.Clone(dst)
		for i := 0; i < n; i++ {
			want[i] += x[i]
		}
		add(dst, x[:n])
		for i := range dst {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(dst[i])) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("%s n=%d: dst[%d] = %v, want %v", name, n, i, dst[i], want[i])
			}
		}
	}
	for _, vecOn := range []bool{true, false} {
		addF32VecOn = vecOn
		for n := 0; n <= 100; n++ {
			check("AddF32s", n, AddF32s)
		}
	}
	addF32VecOn = true
	for name, k := range addF32Kernels() {
		for n := k.w; n <= 12*k.w; n += k.w {
			check(name, n, func(dst, x []float32) { k.f(&dst[0], &x[0], len(x)) })
		}
	}
}

// TestScaleF32s: ScaleF32s, and each scale kernel this CPU runs, give the Go loop's products bit
// for bit (one float32 multiplication an element, for factors that round and that overflow)
// over lengths with and without a remainder, and leave the values past dst alone. A kernel that
// skips or repeats a vector, or multiplies by the wrong lane of s, differs here.
func TestScaleF32s(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	check := func(name string, n int, sc float32, scale func(dst []float32, s float32)) {
		t.Helper()
		dst := make([]float32, n+5)
		for i := range dst {
			dst[i] = float32(r.NormFloat64()) * float32(math.Exp2(float64(r.IntN(40)-20)))
		}
		if n > 3 {
			dst[1], dst[3] = float32(math.Inf(-1)), float32(math.Copysign(0, -1))
		}
		want := slices.Clone(dst)
		for i := 0; i < n; i++ {
			want[i] *= sc
		}
		scale(dst[:n], sc)
		for i := range dst {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(dst[i])) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("%s n=%d s=%v: dst[%d] = %v, want %v", name, n, sc, i, dst[i], want[i])
			}
		}
	}
	for _, sc := range []float32{1 / 3.0, -1.7e-3, 3e37} {
		for _, vecOn := range []bool{true, false} {
			addF32VecOn = vecOn
			for n := 0; n <= 100; n++ {
				check("ScaleF32s", n, sc, ScaleF32s)
			}
		}
		addF32VecOn = true
		for name, k := range addF32Kernels() {
			for n := k.w; n <= 12*k.w; n += k.w {
				check(name, n, sc, func(dst []float32, s float32) { k.scale(&dst[0], s, len(dst)) })
			}
		}
	}
}
