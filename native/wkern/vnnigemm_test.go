//go:build amd64 && !purego

package wkern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// vnniOffset is the VNNI GEMM's row offset ow of the block of bv values holding value i of a
// row of type typ (the value a code of 0 stands for): −128·d (Q8_0), −8·d (Q4_0), −dmin·m_j
// (Q4_K), −32·d·sc_G (Q6_K).
func vnniOffset(typ gguf.Type, row []byte, i int) float64 {
	switch typ {
	case gguf.Q8_0:
		return -128 * float64(f16(row[i/32*q8_0Bytes:]))
	case gguf.Q4_0:
		return -8 * float64(f16(row[i/32*q4_0Bytes:]))
	case gguf.Q4_K:
		blk := row[i/256*q4_KBytes:]
		_, m := scaleMinK4(i%256/32, blk[4:16])
		return -float64(f16(blk[2:])) * float64(m)
	case gguf.Q6_K:
		blk := row[i/256*q6_KBytes:]
		return -32 * float64(f16(blk[208:])) * float64(int8(blk[192+i%256/16]))
	}
	panic("no VNNI layout")
}

// TestVNNIGEMMFloatOrder checks the VNNI GEMM against the float64 product of the dequantized
// rows with the quantized tokens x̂ = d·c, where the only error left is float32 rounding:
// each block term d_t·(dw·Σ code·c + ow·Σc) is rounded a few times and the nb block terms
// are summed in float32, so |y − Σ w·x̂| ≤ (nb + 4)·2⁻²⁴·M with M = Σ_i d_t·(|w_i − ow| +
// |ow|)·|c_i| (dw·code_i = w_i − ow). Shapes have row ranges not multiples of 16, token
// tails (n mod 8), and a last column chunk shorter than vnniKC.
func TestVNNIGEMMFloatOrder(t *testing.T) {
	if !hasVNNI || noVNNI() {
		t.Skip("no AVX-512 VNNI/VBMI on this CPU, or KVLAB_NO_AVX512 set")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for typ, l := range vnniLayouts {
		for _, c := range []struct{ cols, rows, lo, hi, n int }{
			{256, 21, 1, 20, 9}, {4352, 35, 3, 35, 16}, {1024, 37, 0, 37, 21}, {2048, 17, 0, 16, 8},
		} {
			cols, rows, lo, hi, n := c.cols, c.rows, c.lo, c.hi, c.n
			t.Run(fmt.Sprintf("%s/%d/n=%d", typ, cols, n), func(t *testing.T) {
				k, _ := KernelOf(typ)
				data := randomRows(r, typ, rows, cols)
				rb := int(typ.RowBytes(uint64(cols)))
				var a Act
				a.Quantize(k.Format(), randomVec(r, n*cols), n, cols)
				y := make([]float32, n*rows)
				mulVNNIGEMM(k, y, rows, data, rb, &a, lo, hi)
				bsz := a.Format.BlockSize()
				nb := cols / l.bv
				w := make([]float32, cols)
				for row := lo; row < hi; row++ {
					rw := data[row*rb : (row+1)*rb]
					if err := gguf.DequantizeRow(typ, rw, w); err != nil {
						t.Fatal(err)
					}
					for tok := 0; tok < n; tok++ {
						var want, m float64
						for i, wi := range w {
							d := float64(a.D[(tok*cols+i)/bsz])
							ci := float64(a.Q[tok*cols+i])
							ow := vnniOffset(typ, rw, i)
							want += float64(wi) * d * ci
							m += d * (math.Abs(float64(wi)-ow) + math.Abs(ow)) * math.Abs(ci)
						}
						b := float64(nb+4) * 0x1p-24 * m
						if tok >= n&^7 {
							b = float64(cols/bsz+4) * 0x1p-24 * m // the row dots
						}
						if got := float64(y[tok*rows+row]); math.Abs(got-want) > b {
							t.Fatalf("row %d token %d: %g, want %g (|Δ| %g > bound %g)", row, tok, got, want, math.Abs(got-want), b)
						}
					}
				}
			})
		}
	}
}

// TestPackVNNIAsm checks the AVX-512 packs of Q4_0, Q8_0, Q4_K and Q6_K slivers against the Go packs, word
// for word (a scale that is NaN in both counts as equal: the conversions may quiet NaNs
// differently), on random bytes, at row offsets and block ranges inside the matrix.
func TestPackVNNIAsm(t *testing.T) {
	if !hasInvTile {
		t.Skip("no AVX-512 VNNI pack kernels on this CPU")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q8_0, gguf.Q4_K, gguf.Q6_K} {
		const rows, cols = 40, 1024 + 256
		w := randomRows(r, typ, rows, cols)
		rb := int(typ.RowBytes(cols))
		l := vnniLayouts[typ]
		per := 1 // blocks per super-block
		if typ == gguf.Q4_K || typ == gguf.Q6_K {
			per = 256 / l.bv
		}
		for _, c := range [][3]int{{0, 0, 5}, {16, 1, 4}, {24, 4, 1}, {7, 2, 3}} {
			r0, b0, nb := c[0], c[1]*per, c[2]*per
			bw := 4*l.bv + 32
			want := make([]uint32, nb*bw)
			got := make([]uint32, nb*bw)
			for i := range got {
				got[i] = 0xdeadbeef // every word must be written
			}
			hasInvTile = false
			l.pack(want, w, rb, r0, 16, b0, nb)
			hasInvTile = true
			l.pack(got, w, rb, r0, 16, b0, nb)
			for i := range want {
				if want[i] == got[i] {
					continue
				}
				isScale := i%bw >= 4*l.bv
				if isScale && math.IsNaN(float64(math.Float32frombits(want[i]))) && math.IsNaN(float64(math.Float32frombits(got[i]))) {
					continue
				}
				t.Fatalf("%v rows %d… blocks %d…+%d: word %d (block %d, word %d of it) = %#x, the Go pack %#x", typ, r0, b0, nb, i, i/bw, i%bw, got[i], want[i])
			}
		}
	}
}
