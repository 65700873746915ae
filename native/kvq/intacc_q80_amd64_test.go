//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIntAccQ80Matches checks q8_0's AVX-512 integer accumulate kernels (the PREFETCHT0 and the
// Zen 4 PREFETCHT1 flavour, four accumulators and two) against the Go reference of their
// computation (intAccRef, q = 32767) bit for bit. Their first prepass runs in the previous tile's
// row loops where a row is one quad of blocks (d 128 here, the blocks' scales past the first 64
// bytes broadcast into their lanes), else in its own loop. The rows carry random code bytes
// (−128 included) and random f16 scales of either sign; the weights are softmax-like with some
// exactly 0, one large per tile and some negative; the dims one block, partial and whole quads,
// two quads and a short tail block; the row counts every remainder of a row pair (and of a
// two-pair step) around the 64-row tiles. Sentinels past each accumulator's nv values check that
// nothing is written there.
func TestIntAccQ80Matches(t *testing.T) {
	if !intAcc() {
		t.Skip("no AVX-512 integer accumulate kernels here")
	}
	rng := rand.New(rand.NewPCG(91, 92))
	kernels := []struct {
		name string
		n    int
		acc  accKernel
	}{{"Q80", 4, multiAccQ80INT}, {"Q80Z4", 4, multiAccQ80Z4INT}, {"Q80Two", 2, multiAccQ80TwoINT}, {"Q80Z4Two", 2, multiAccQ80Z4TwoINT}}
	for _, d := range []int{32, 64, 96, 128, 200, 256} {
		for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 61, 62, 63, 64, 65, 66, 67, 127, 128, 130, 200, 257} {
			t.Run(fmt.Sprintf("d%d/rows%d", d, rows), func(t *testing.T) {
				c := Unwrap(mustCodec(t, Q8_0, d))
				bc := intAccBlocks(c)
				nv, rb := bc.full*BlockSize, c.RowBytes()
				src := outlierRows(rng, rows, d)
				enc := make([]byte, rows*rb)
				for r := 0; r < rows; r++ {
					c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
					if r%3 == 2 { // random codes and a random finite f16 scale
						row := enc[r*rb : (r+1)*rb]
						for b := 0; b < bc.full; b++ {
							blk := row[b*bc.fullBytes : (b+1)*bc.fullBytes]
							for i := range blk {
								blk[i] = byte(rng.Uint32())
							}
							if blk[1]&0x7c == 0x7c {
								blk[1] &^= 0x40 // not Inf or NaN
							}
						}
					}
				}
				w := make([]float32, 4*rows)
				for j := 0; j < rows; j++ {
					for h := 0; h < 4; h++ {
						x := float32(math.Exp(-8 * rng.Float64()))
						switch {
						case rng.IntN(7) == 0:
							x = 0
						case j%64 == h:
							x = 1
						case rng.IntN(5) == 0:
							x = -x
						}
						w[4*j+h] = x
					}
				}
				const sentinel = 12345.5
				init := make([]float32, 4*d)
				for h := 0; h < 4; h++ {
					for i := 0; i < d; i++ {
						init[h*d+i] = float32(rng.NormFloat64())
						if i >= nv {
							init[h*d+i] = sentinel
						}
					}
				}
				want := slices.Clone(init)
				intAccRef(c, 32767, want, d, nv, rows, w, enc)
				for _, k := range kernels {
					wk := w
					if k.n == 2 {
						wk = make([]float32, 2*rows)
						for j := 0; j < rows; j++ {
							wk[2*j], wk[2*j+1] = w[4*j], w[4*j+1]
						}
					}
					got := slices.Clone(init[:k.n*d])
					k.acc(&got[0], d, nv, &enc[0], rb, rows, &wk[0], 4*k.n)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: accumulator %d [%d] = %g, the reference %g", k.name, i/d, i%d, got[i], want[i])
						}
					}
				}
			})
		}
	}
}
