package kvq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBlockKindsMatchGGML: each block format's full block has native/ggml's bytes, and its
// decoder gives ggml's reference ToFloat bit for bit on encoded random rows.
func TestBlockKindsMatchGGML(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []*blockKind{q8_0Kind, q4_0Kind, q4_1Kind, q5_0Kind, q5_1Kind, iq4nlKind} {
		t.Run(k.f.String(), func(t *testing.T) {
			if got, want := k.f.RowBytes(BlockSize), k.g.TypeSize(); got != want || k.g.BlockSize() != BlockSize {
				t.Fatalf("full block %d bytes, ggml %s %d bytes of %d values", got, k.g, want, k.g.BlockSize())
			}
			blk := make([]byte, k.g.TypeSize())
			src, got, want := make([]float32, BlockSize), make([]float32, BlockSize), make([]float32, BlockSize)
			for trial := 0; trial < 50; trial++ {
				for i := range src {
					src[i] = float32(r.NormFloat64() * 3)
				}
				k.encode(blk, src)
				k.decode(got, blk)
				k.g.ToFloat(blk, want)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("value %d: kvq %v, ggml %v", i, got[i], want[i])
					}
				}
			}
		})
	}
}
