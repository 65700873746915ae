//go:build arm64 && !purego

package wkern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// TestArm64Dots checks both arm64 row dots, SDOT (where the CPU has it) and the baseline
// widening one, against the exact sum within bound and against the portable kernel up to
// float32 order, at row lengths of one block, an odd number of blocks and more, so every
// block pairing of the kernels' loop runs.
func TestArm64Dots(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, sdot := range []bool{false, true} {
		if sdot && !hasSDOT {
			t.Log("no ASIMDDP: the SDOT kernels are not tested here")
			continue
		}
		for typ, dot := range arm64Dots(sdot) {
			for _, cols := range []int{32, 96, 256, 2048, 5632} {
				t.Run(fmt.Sprintf("sdot=%v/%s/%d", sdot, typ, cols), func(t *testing.T) {
					checkArm64Dot(t, r, typ, dot, cols)
				})
			}
		}
	}
	if !Accelerated(gguf.Q8_0) || !Accelerated(gguf.Q4_0) {
		t.Errorf("Accelerated is false for q8_0 or q4_0 on arm64")
	}
}

func checkArm64Dot(t *testing.T, r *rand.Rand, typ gguf.Type, dot rowDot, cols int) {
	const rows, n = 4, 3
	data := randomRows(r, typ, rows, cols)
	rb := int(typ.RowBytes(uint64(cols)))
	x := randomVec(r, n*cols)
	var a Act
	a.Quantize(FormatOf(typ), x, n, cols)
	w := make([]float32, cols)
	for row := 0; row < rows; row++ {
		rw := data[row*rb : (row+1)*rb]
		if err := gguf.DequantizeRow(typ, rw, w); err != nil {
			t.Fatal(err)
		}
		for tok := 0; tok < n; tok++ {
			xt := x[tok*cols : (tok+1)*cols]
			var want float64
			for i, wi := range w {
				want += float64(wi) * float64(xt[i])
			}
			got := dot(rw, &a, tok)
			b := bound(w, xt, &a, tok)
			if d := math.Abs(float64(got) - want); !(d <= b) {
				t.Fatalf("row %d token %d: %g, reference %g (|Δ| %g > bound %g)", row, tok, got, want, d, b)
			}
			g := goDots[typ](rw, &a, tok)
			if d := math.Abs(float64(g - got)); d > b/4+1e-6*math.Abs(want) {
				t.Fatalf("row %d token %d: Go kernel %g, arm64 %g", row, tok, g, got)
			}
		}
	}
}
