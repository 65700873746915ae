//go:build amd64 && !purego

package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// TestMatVecF16RowLoop checks the f16 assembly row loop against dotF16 row by row (the same
// kernel: equal bit for bit) and MatVec against MatVecReference within float32 rounding, on
// widths the loop takes (multiples of 8, with 64-, 16- and 8-value steps) and widths it leaves
// to the per-row path, for the AVX2 loop and, where the CPU has it, the AVX-512 one.
func TestMatVecF16RowLoop(t *testing.T) {
	paths := []bool{false}
	if hasF16AVX512 {
		paths = append(paths, true)
	}
	defer func(v bool) { hasF16AVX512 = v }(hasF16AVX512)
	for _, wide := range paths {
		hasF16AVX512 = wide
		t.Run(fmt.Sprintf("avx512=%v", wide), testMatVecF16RowLoop)
	}
}

func testMatVecF16RowLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, cols := range []int{8, 24, 40, 64, 88, 2048, 2050, 5632} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			const rows = 13
			m, err := NewMatrix("w", gguf.F16, rows, cols, randomWeights(r, gguf.F16, rows, cols))
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float32, cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			y, ref := make([]float32, rows), make([]float32, rows)
			m.MatVec(y, x, nil)
			if err := m.MatVecReference(ref, x); err != nil {
				t.Fatal(err)
			}
			for row := range rows {
				if want := dotF16(m.Row(row), x); math.Float32bits(y[row]) != math.Float32bits(want) {
					t.Fatalf("row %d: %g, dotF16 %g", row, y[row], want)
				}
				var mag float64
				w := make([]float32, cols)
				m.DequantRow(w, row)
				for i := range w {
					mag += math.Abs(float64(w[i]) * float64(x[i]))
				}
				if d := math.Abs(float64(y[row] - ref[row])); d > 1e-5*mag {
					t.Fatalf("row %d: %g, reference %g (|Δ| %g > %g)", row, y[row], ref[row], d, 1e-5*mag)
				}
			}
			// A sub-range writes only its rows.
			for i := range y {
				y[i] = -1
			}
			m.matVec(y, x, 4, 9)
			for row := range rows {
				if (row < 4 || row >= 9) != (y[row] == -1) {
					t.Fatalf("rows [4,9): row %d is %g", row, y[row])
				}
			}
		})
	}
}
