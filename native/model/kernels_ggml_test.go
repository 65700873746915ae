package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDequantMatchesGGML: every weight type's dequantizing kernel gives native/ggml's
// reference ToFloat bit for bit, on random blocks (scales kept finite).
func TestDequantMatchesGGML(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for typ, k := range kernels {
		t.Run(typ.String(), func(t *testing.T) {
			const cols = 512
			rb := int(typ.RowBytes(cols))
			row := make([]byte, rb)
			for trial := 0; trial < 20; trial++ {
				for i := range row {
					row[i] = byte(r.Uint32())
				}
				// Keep every f16/bf16/f32 field finite: clear the exponent's top bit of every
				// byte pair's high byte where a scale may sit.
				for i := 1; i < len(row); i += 2 {
					row[i] &= 0x3f
				}
				got, want := make([]float32, cols), make([]float32, cols)
				k.dequant(row, got)
				bs, ts := typ.BlockSize(), typ.TypeSize()
				for b := 0; b < cols/bs; b++ {
					typ.ToFloat(row[b*ts:(b+1)*ts], want[b*bs:(b+1)*bs])
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
						t.Fatalf("value %d: kernel %v, ggml %v", i, got[i], want[i])
					}
				}
			}
		})
	}
}
