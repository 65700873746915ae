//go:build !race

package kvq

import (
	"math/rand/v2"
	"testing"
)

// TestRotatedEncodeNoAlloc: a rotated codec's Encode takes its scratch from a pool, not a
// fresh allocation per row (a stack array escaping through the codec's func values cost 4 KiB
// a row). Not under the race detector, which makes pools drop items.
func TestRotatedEncodeNoAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, f := range []Format{Q8_0, FP8} { // (q4_0's scale search allocates its own)
		c, err := NewCodec(f, 128, CodecOptions{Seed: 1, Rotate: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.(*rotCodec); !ok {
			t.Fatalf("%s: NewCodec with Rotate gave %T, not a rotated codec", f, c)
		}
		src := make([]float32, 128)
		for i := range src {
			src[i] = float32(r.NormFloat64())
		}
		dst := make([]byte, c.RowBytes())
		c.Encode(dst, src)
		if n := testing.AllocsPerRun(100, func() { c.Encode(dst, src) }); n != 0 {
			t.Fatalf("%s: %v allocations per rotated Encode, want 0", f, n)
		}
	}
}
