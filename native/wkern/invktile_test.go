package wkern

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// checkKTileOrder checks the tile kernels of K-quant typ (TestInvTileOrderQ6,
// TestInvTileOrderQ4K) against order, the operations their comment states for a row times
// token tok of a: bit for bit for 1–27 tokens (every kernel: one token, groups of eight with
// each rest 0…7, a second tile of 1…11 tokens) over 37 random rows of 768 columns drawn from
// seed (a short last row group), and for the 16 rows of ext (two super-blocks each, the largest
// integer sums the format allows) times 1, 3 and 16 tokens of codes ±127; then every output the
// same bits whatever the tokens multiplied together (1–27) and the split of the rows, and
// within the kernels' error bound of the float64 product of the dequantized weights
// (checkInvariantBound).
func checkKTileOrder(t *testing.T, typ gguf.Type, seed uint64, order func(row []byte, a *Act, tok int) float32, ext []byte) {
	t.Helper()
	if !invTiled(typ) {
		t.Skipf("%s: no tile kernels on this CPU", typ)
	}
	r := rand.New(rand.NewPCG(seed, seed))
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
				want := order(data[row*rb:(row+1)*rb], &a, tok)
				if got := y[tok*rows+row]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%d tokens: row %d token %d: %g, the stated order gives %g", n, row, tok, got, want)
				}
			}
		}
	}

	erb := len(ext) / 16 // two super-blocks a row
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
		k.MulInvariant(y, 16, ext, erb, &a, 0, 16)
		for row := 0; row < 16; row++ {
			for tok := 0; tok < n; tok++ {
				want := order(ext[row*erb:(row+1)*erb], &a, tok)
				if got := y[tok*16+row]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("extreme sums, %d tokens: row %d token %d: %g, the stated order gives %g", n, row, tok, got, want)
				}
			}
		}
	}

	checkInvariantBound(t, typ.String()+" tiles", typ, k, data, rows, cols, x, maxN, nil)
}
