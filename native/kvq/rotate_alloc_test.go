//go:build !race

package kvq

import (
	"math/rand/v2"
	"testing"
)

// TestRotatedEncodeNoAlloc: a rotated codec's Encode, and EncodeRows over it, allocate nothing
// per row: the scratch row comes from a pool (a stack array escaping through the codec's func
// values cost 4 KiB a row) and q4_0's and q5_0's scale search keeps its codes on the stack.
// Every rotated format (rotatedFormats and tq4), calibrated and not, at a head dimension with a
// short last block.
// Not under the race detector, which makes pools drop items.
func TestRotatedEncodeNoAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, f := range append([]Format{TQ4}, rotatedFormats...) {
		for _, d := range []int{128, 80} {
			c, err := NewCodec(f, d, CodecOptions{Seed: 1, Rotate: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := c.(*rotCodec); !ok && f.Rotatable() {
				t.Fatalf("%s: NewCodec with Rotate gave %T, not a rotated codec", f, c)
			}
			rows := make([]float32, 16*d)
			for i := range rows {
				rows[i] = float32(r.NormFloat64()) * float32(1+i%d%7)
			}
			src := rows[:d]
			dst := make([]byte, c.RowBytes())
			for _, calibrate := range []bool{false, true} {
				if cal, ok := c.(Calibrator); ok && calibrate {
					cal.Calibrate(rows, 16)
				}
				c.Encode(dst, src)
				if n := testing.AllocsPerRun(100, func() { c.Encode(dst, src) }); n != 0 {
					t.Fatalf("%s d=%d calibrated %v: %v allocations per rotated Encode, want 0", f, d, calibrate, n)
				}
				many := make([]byte, 16*c.RowBytes())
				if n := testing.AllocsPerRun(100, func() { EncodeRows(c, many, rows, 16) }); n != 0 {
					t.Fatalf("%s d=%d calibrated %v: %v allocations per rotated EncodeRows, want 0", f, d, calibrate, n)
				}
			}
		}
	}
}
