package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSwiGLUExact checks swiGLU (the assembly loop where there is one) against swiGLUGo bit for
// bit — NaN inputs only for being NaN — on a sweep of float32 bit patterns, special values and
// lengths with a tail of fewer than 8 values.
func TestSwiGLUExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var zs []float32
	for b := uint64(0); b < 1<<32; b += 251 {
		zs = append(zs, math.Float32frombits(uint32(b)))
	}
	for _, v := range []float64{0, 1, 1e-45, 1e-38, 88.72, 88.73, 100, 100.01, 103.3, 103.98, 104, 109.99, 110, 110.01, 708, 709.8, 745, 3e38} {
		zs = append(zs, float32(v), float32(-v), math.Nextafter32(float32(v), 0), math.Nextafter32(-float32(v), 0))
	}
	zs = append(zs, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	for range 1 << 16 {
		zs = append(zs, float32(r.NormFloat64()*4))
	}
	us := make([]float32, len(zs))
	for i := range us {
		us[i] = float32(r.NormFloat64())
	}
	us[0], us[1] = float32(math.Inf(1)), 0
	for _, n := range []int{len(zs), 1, 7, 8, 9, 15, 17, 5632} {
		want, got := append([]float32(nil), zs[:n]...), append([]float32(nil), zs[:n]...)
		swiGLUGo(want, us)
		swiGLU(got, us)
		bad := 0
		for i := range want {
			w, g := want[i], got[i]
			if w != w && g != g {
				continue
			}
			if math.Float32bits(w) != math.Float32bits(g) {
				if bad++; bad <= 5 {
					t.Errorf("n=%d: z=%g (%#08x) u=%g: got %g (%#08x), want %g (%#08x)", n, zs[i], math.Float32bits(zs[i]), us[i], g, math.Float32bits(g), w, math.Float32bits(w))
				}
			}
		}
		if bad > 0 {
			t.Errorf("n=%d: %d of %d values differ", n, bad, n)
		}
	}
}

func BenchmarkSwiGLU(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	g, u := make([]float32, 5632), make([]float32, 5632)
	for i := range g {
		g[i], u[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	for _, c := range []struct {
		name string
		f    func(g, u []float32)
	}{{"go", swiGLUGo}, {"asm", swiGLU}} {
		b.Run(c.name, func(b *testing.B) {
			x := make([]float32, len(g))
			for b.Loop() {
				copy(x, g)
				c.f(x, u)
			}
		})
	}
}
