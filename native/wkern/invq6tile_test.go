package wkern

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// q6TileOrder is a Q6_K row times token tok of a in the order the tile kernels state
// (invq6tile_amd64.go): per super-block the exact I = Σ_G sc_G·Σ_{i∈G} (code_i − 32)·q_i, then
// acc = fma(float32(I)·d_t, dw, acc), the fused multiply-add rounded once.
func q6TileOrder(row []byte, a *Act, tok int) float32 {
	nb := a.Cols / 256
	var acc float32
	for b := 0; b < nb; b++ {
		blk := row[b*q6_KBytes : (b+1)*q6_KBytes]
		q := a.Q[tok*a.Cols+256*b : tok*a.Cols+256*b+256]
		var sum int64
		for g := 0; g < 16; g++ {
			var i int64
			for v := 16 * g; v < 16*g+16; v++ {
				n, r := v/128, v%128 // half, value within it
				l, s := r%32, r/32   // position, quarter-plane
				ql := blk[64*n+l+32*(s&1)]
				if s >= 2 {
					ql >>= 4
				}
				code := int64(ql&15) | int64(blk[128+32*n+l]>>(2*s)&3)<<4
				i += (code - 32) * int64(q[v])
			}
			sum += int64(int8(blk[192+g])) * i
		}
		if sum != int64(int32(sum)) {
			panic("q6TileOrder: I overflows int32")
		}
		x := float32(sum) * a.D[tok*nb+b]
		acc = fma32(x, f16(blk[208:]), acc)
	}
	return acc
}

// TestInvTileOrderQ6: the Q6_K tile kernels compute, bit for bit, the operations their comment
// states (q6TileOrder), for 1–27 tokens (every kernel: one token, groups of eight with each rest
// 0…7, a second tile of 1…11 tokens) over 37 rows (a short last row group) and on the largest
// integer sums the format allows; every output is the same bits whatever the tokens multiplied
// together (1–27) and the split of the rows; and each is within the kernels' error bound of the
// float64 product of the dequantized weights. A wrong
// sub-block scale, a code's high bits from the wrong position, a token's chain fed another
// token's codes or operands, all change some output's bits.
func TestInvTileOrderQ6(t *testing.T) {
	typ := gguf.Q6_K
	if !invTiled(typ) {
		t.Skipf("%s: no tile kernels on this CPU", typ)
	}
	r := rand.New(rand.NewPCG(6, 6))
	k, _ := KernelOf(typ)
	const rows, cols, maxN = 37, 768, 27
	data := randomRows(r, typ, rows, cols)
	rb := int(typ.RowBytes(cols))
	x := randomVec(r, maxN*cols)
	for n := 1; n <= maxN; n++ {
		var a Act
		a.Quantize(k.Format(), x[:n*cols], n, cols)
		y := make([]float32, n*rows)
		k.MulInvariant(y, rows, data, rb, &a, 0, rows)
		for row := 0; row < rows; row++ {
			for tok := 0; tok < n; tok++ {
				want := q6TileOrder(data[row*rb:(row+1)*rb], &a, tok)
				if got := y[tok*rows+row]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%d tokens: row %d token %d: %g, the stated order gives %g", n, row, tok, got, want)
				}
			}
		}
	}

	// The largest sums: codes 0 (−32) and 63 (+31), scales −128 and 127, every activation code
	// ±127: |I| = 16·16·32·127·128, exact in int32.
	ext := make([]byte, 16*2*q6_KBytes)
	for i := 0; i < len(ext); i += q6_KBytes {
		blk := ext[i : i+q6_KBytes]
		hi := byte(0)
		if i/q6_KBytes%3 == 1 {
			hi = 0xff // codes 63
		}
		for j := 0; j < 192; j++ {
			blk[j] = hi
		}
		for g := 0; g < 16; g++ {
			blk[192+g] = 0x80 // −128
			if i/q6_KBytes%5 == 2 {
				blk[192+g] = 127
			}
		}
		blk[208], blk[209] = 0x00, 0x3c // 1.0
	}
	for _, n := range []int{1, 3, 16} {
		xe := make([]float32, n*512)
		for i := range xe {
			xe[i] = 1
			if i/512%2 == 1 {
				xe[i] = -1
			}
		}
		var a Act
		a.Quantize(k.Format(), xe, n, 512)
		y := make([]float32, n*16)
		k.MulInvariant(y, 16, ext, 2*q6_KBytes, &a, 0, 16)
		for row := 0; row < 16; row++ {
			for tok := 0; tok < n; tok++ {
				want := q6TileOrder(ext[row*2*q6_KBytes:(row+1)*2*q6_KBytes], &a, tok)
				if got := y[tok*16+row]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("extreme sums, %d tokens: row %d token %d: %g, the stated order gives %g", n, row, tok, got, want)
				}
			}
		}
	}

	// Batch invariance over 1–27 tokens and row splits, and the float64 bound.
	acts := make([]Act, maxN)
	for tok := range acts {
		acts[tok].Quantize(k.Format(), x[tok*cols:(tok+1)*cols], 1, cols)
	}
	var a Act
	checkInvariant(t, "q6_K tiles", rows, maxN, func(y []float32, n, lo, hi int) {
		if n < 0 {
			k.MulInvariant(y, rows, data, rb, &acts[-n-1], lo, hi)
			return
		}
		a.Quantize(k.Format(), x[:n*cols], n, cols)
		k.MulInvariant(y, rows, data, rb, &a, lo, hi)
	})
	a.Quantize(k.Format(), x, maxN, cols)
	y := make([]float32, maxN*rows)
	k.MulInvariant(y, rows, data, rb, &a, 0, rows)
	w := make([]float32, cols)
	for row := 0; row < rows; row++ {
		if err := gguf.DequantizeRow(typ, data[row*rb:(row+1)*rb], w); err != nil {
			t.Fatal(err)
		}
		for tok := 0; tok < maxN; tok++ {
			var want float64
			for i, wi := range w {
				want += float64(wi) * float64(x[tok*cols+i])
			}
			got := y[tok*rows+row]
			if d, b := math.Abs(float64(got)-want), bound(w, x[tok*cols:(tok+1)*cols], &a, tok); d > b {
				t.Fatalf("row %d token %d: %g, reference %g (|Δ| %g > bound %g)", row, tok, got, want, d, b)
			}
		}
	}
}
