//go:build amd64 && !purego

package wkern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuantSumsAsm checks that the assembly activation quantizer gives quantSumsGo's codes,
// scale and 16-code sums bit for bit, on random blocks of both sizes (with outliers), on
// exact rounding ties, and on the blocks it hands back to Go (zeros, NaN, ±Inf).
func TestQuantSumsAsm(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(3, 4))
	type tc struct {
		name string
		x    []float32
	}
	var cases []tc
	for _, n := range []int{16, 32, 256} {
		for i := 0; i < 200; i++ {
			x := randomVec(r, n)
			if i%5 == 0 {
				for j := range x {
					x[j] *= 1e-30 // subnormal-adjacent scales
				}
			}
			cases = append(cases, tc{fmt.Sprintf("random%d/%d", n, i), x})
		}
		ties := make([]float32, n)
		for j := range ties {
			ties[j] = float32(j%255-127) + 0.5 // amax 127: x·id lands on .5 ± rounding
		}
		ties[0] = 127
		cases = append(cases, tc{fmt.Sprintf("ties%d", n), ties})
		negz := make([]float32, n)
		negz[1] = float32(math.Copysign(0, -1))
		negz[2] = -3
		cases = append(cases, tc{fmt.Sprintf("negzero%d", n), negz})
		for name, v := range map[string]float32{"zero": 0, "nan": float32(math.NaN()), "inf": float32(math.Inf(1)), "-inf": float32(math.Inf(-1))} {
			x := randomVec(r, n)
			if name == "zero" {
				clear(x)
			} else {
				x[n/2] = v
			}
			cases = append(cases, tc{fmt.Sprintf("%s%d", name, n), x})
		}
	}
	for _, c := range cases {
		n := len(c.x)
		qa, qg := make([]int8, n), make([]int8, n)
		ga, gg := make([]int32, n/16), make([]int32, n/16)
		da := quantSumsAsm(qa, c.x, ga)
		dg := quantSumsGo(qg, c.x, gg)
		if math.Float32bits(da) != math.Float32bits(dg) || !slices.Equal(qa, qg) || !slices.Equal(ga, gg) {
			t.Fatalf("%s: assembly d=%g codes %v sums %v; Go d=%g codes %v sums %v", c.name, da, qa, ga, dg, qg, gg)
		}
	}
}

// BenchmarkQuantize measures the activation quantization of one 2048-value token (decode) in
// both formats.
func BenchmarkQuantize(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x := randomVec(r, 2048)
	for _, f := range []Format{Q8, Q8K} {
		for _, impl := range []string{"asm", "go"} {
			b.Run(fmt.Sprintf("%d/%s", f.BlockSize(), impl), func(b *testing.B) {
				save := quantSums
				if impl == "go" {
					quantSums = quantSumsGo
				}
				defer func() { quantSums = save }()
				var a Act
				for b.Loop() {
					a.Quantize(f, x, 1, 2048)
				}
			})
		}
	}
}
