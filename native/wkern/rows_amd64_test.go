//go:build amd64 && !purego

package wkern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// TestRowLoops checks the assembly row loops against the row kernel they run (the same float32
// result bit for bit) and against the float64 dot of the dequantized row within the stated
// bound, on widths with and without a tail of fewer than 16 blocks and on sub-ranges of rows.
func TestRowLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for typ, loop := range rowsDots {
		f := FormatOf(typ)
		for _, cols := range []int{32, 96, 256, 512, 768, 2048, 2080, 5632} {
			if cols%f.BlockSize() != 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", typ, cols), func(t *testing.T) {
				const rows = 19
				data := randomRows(r, typ, rows, cols)
				rb := int(typ.RowBytes(uint64(cols)))
				x := randomVec(r, cols)
				var a Act
				a.Quantize(f, x, 1, cols)
				w := make([]float32, cols)
				for _, span := range [][2]int{{0, rows}, {3, 4}, {5, 17}, {7, 7}} {
					lo, hi := span[0], span[1]
					y := make([]float32, rows)
					for i := range y {
						y[i] = -1
					}
					loop(y, data, rb, &a, lo, hi)
					for row := 0; row < rows; row++ {
						rw := data[row*rb : (row+1)*rb]
						if row < lo || row >= hi {
							if y[row] != -1 {
								t.Fatalf("rows [%d,%d): wrote row %d", lo, hi, row)
							}
							continue
						}
						if want := dots[typ](rw, &a, 0); math.Float32bits(y[row]) != math.Float32bits(want) {
							t.Fatalf("rows [%d,%d) row %d: %g, the row kernel %g", lo, hi, row, y[row], want)
						}
						if err := gguf.DequantizeRow(typ, rw, w); err != nil {
							t.Fatal(err)
						}
						var ref float64
						for i, wi := range w {
							ref += float64(wi) * float64(x[i])
						}
						if d, b := math.Abs(float64(y[row])-ref), bound(w, x, &a, 0); d > b {
							t.Fatalf("rows [%d,%d) row %d: %g, reference %g (|Δ| %g > bound %g)", lo, hi, row, y[row], ref, d, b)
						}
					}
				}
			})
		}
	}
}
