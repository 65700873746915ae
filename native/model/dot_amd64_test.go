//go:build amd64 && !purego

package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// TestMatVecF16RowLoop checks the f16 assembly row loops against dotF16 row by row (the same
// sums: equal bit for bit) and MatVec against MatVecReference within float32 rounding, on
// widths the loops take (multiples of 8, with 64-, 16- and 8-value steps) and widths they leave
// to the per-row path, and on row counts that the four-stream loop takes whole, takes with one
// to three rows left to the one-row loop, or leaves to it entirely (fewer than four), for the
// AVX2 loops and, where the CPU has them, the AVX-512 ones. A row of one stream written to
// another's output, a stream's rows off by one, or a tail step into the wrong sum changes some
// row's bits.
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
	for _, shape := range [][2]int{{13, 8}, {13, 24}, {13, 40}, {13, 64}, {13, 88}, {13, 2048}, {13, 2050}, {13, 5632},
		{1, 88}, {3, 88}, {4, 88}, {8, 24}, {14, 40}, {15, 88}, {64, 2048}} {
		rows, cols := shape[0], shape[1]
		t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
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
			// A sub-range writes only its rows, their sums as before (five rows: one pass of
			// four, one left).
			if rows < 9 {
				return
			}
			want := slices.Clone(y)
			for i := range y {
				y[i] = -1
			}
			m.matVec(y, x, 4, 9)
			for row := range rows {
				if in := row >= 4 && row < 9; in && math.Float32bits(y[row]) != math.Float32bits(want[row]) || !in && y[row] != -1 {
					t.Fatalf("rows [4,9): row %d is %g", row, y[row])
				}
			}
		})
	}
}
