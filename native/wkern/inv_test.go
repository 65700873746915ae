package wkern

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// invSplits are row ranges the invariance tests cut a product into (the last one is hi).
var invSplits = [][]int{{0}, {0, 1}, {0, 5, 13}, {0, 3, 4, 21, 40}}

// checkInvariant runs mul over 1–19 tokens and several splits of the rows and fails unless
// every output equals, bit for bit, the one the token gets multiplied alone over all rows.
func checkInvariant(t *testing.T, name string, rows, maxN int, mul func(y []float32, n, lo, hi int)) {
	t.Helper()
	one := make([]float32, maxN*rows)
	for tok := 0; tok < maxN; tok++ {
		y := make([]float32, rows)
		mulTok := func(y []float32, lo, hi int) { mul(y, -(tok + 1), lo, hi) }
		mulTok(y, 0, rows)
		copy(one[tok*rows:], y)
	}
	for n := 1; n <= maxN; n++ {
		for _, sp := range invSplits {
			y := make([]float32, n*rows)
			cuts := append(append([]int(nil), sp...), rows)
			for i := 0; i+1 < len(cuts); i++ {
				lo, hi := min(cuts[i], rows), min(cuts[i+1], rows)
				mul(y, n, lo, hi)
			}
			for i, v := range y {
				if math.Float32bits(v) != math.Float32bits(one[i]) {
					t.Fatalf("%s: %d tokens, split %v: token %d row %d is %g, alone %g", name, n, sp, i/rows, i%rows, v, one[i])
				}
			}
		}
	}
}

// TestMulFloatInvariant: MulF32 and MulF16 give every output bit for bit the same whatever
// the tokens multiplied together (1–19) and the split of the rows, on odd shapes (a column
// tail, a short last row group), and each is within float32 rounding of the float64 sum.
func TestMulFloatInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, shape := range [][2]int{{37, 172}, {40, 64}, {9, 7}, {61, 520}} {
		rows, cols := shape[0], shape[1]
		const maxN = 19
		w := make([]float32, rows*cols)
		h := make([]byte, 2*rows*cols)
		for i := range w {
			w[i] = float32(r.NormFloat64())
			binary.LittleEndian.PutUint16(h[2*i:], toHalf(w[i]))
			w[i] = half(binary.LittleEndian.Uint16(h[2*i:])) // the f16 matrix's exact values
		}
		x := make([]float32, maxN*cols)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		// mul's n < 0 means token −n−1 alone.
		xs := func(n int) ([]float32, int) {
			if n < 0 {
				return x[(-n-1)*cols : -n*cols], 1
			}
			return x, n
		}
		checkInvariant(t, "f32", rows, maxN, func(y []float32, n, lo, hi int) {
			xx, nn := xs(n)
			MulF32(y, rows, w, cols, xx, nn, lo, hi)
		})
		checkInvariant(t, "f16", rows, maxN, func(y []float32, n, lo, hi int) {
			xx, nn := xs(n)
			MulF16(y, rows, h, 2*cols, cols, xx, nn, lo, hi)
		})
		y32, y16 := make([]float32, maxN*rows), make([]float32, maxN*rows)
		MulF32(y32, rows, w, cols, x, maxN, 0, rows)
		MulF16(y16, rows, h, 2*cols, cols, x, maxN, 0, rows)
		for tok := 0; tok < maxN; tok++ {
			for row := 0; row < rows; row++ {
				var s, mag float64
				for i := 0; i < cols; i++ {
					p := float64(w[row*cols+i]) * float64(x[tok*cols+i])
					s += p
					mag += math.Abs(p)
				}
				tol := 1e-6*mag + 1e-30
				g := invDotF32Go(w[row*cols:(row+1)*cols], x[tok*cols:(tok+1)*cols])
				for _, c := range []struct {
					name string
					v    float32
				}{{"f32", y32[tok*rows+row]}, {"f16", y16[tok*rows+row]}, {"go", g}} {
					if d := math.Abs(float64(c.v) - s); d > tol {
						t.Fatalf("%d×%d %s token %d row %d: %g, float64 sum %g (|Σ|w·x|| %g)", rows, cols, c.name, tok, row, c.v, s, mag)
					}
				}
			}
		}
	}
}

// TestMulInvariant: for every integer weight type, MulInvariant gives each output bit for bit
// the same whatever the tokens multiplied together (1–19) and the split of the rows (odd row
// counts, short tiles), and within the kernels' error bound of the float64 product of the
// dequantized weights; the portable kernel agrees up to float32 order.
func TestMulInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for _, typ := range intTypes {
		k, _ := KernelOf(typ)
		if _, asm := asmDots[typ]; asm && hasAVX2 && !k.Invariant() {
			t.Fatalf("%s has an assembly kernel but no blocked invariant pair", typ)
		}
		variants := []Kernel{k}
		if typ == gguf.Q4_0 {
			for i, p := range q4Pairs { // each Q4_0 pair this CPU runs (the first is k's)
				if i > 0 {
					v := k
					v.inv = p
					variants = append(variants, v)
				}
			}
		}
		for vi, k := range variants {
			testMulInvariant(t, r, typ, vi, k)
		}
		if invTiled(typ) { // the pairs the tile kernels stand in for
			func() {
				was := hasInvTile
				hasInvTile = false
				defer func() { hasInvTile = was }()
				for vi, k := range variants {
					testMulInvariant(t, r, typ, len(variants)+vi, k)
				}
			}()
		}
	}
}

// TestInvTileOrder: the tile kernels compute, bit for bit, the operations MulInvariant's
// comment states (acc = fma(float32(i)·d_t, dw, acc) per block in order, i the exact block
// sum), checked against that sequence with each fused multiply-add rounded once (big.Float).
func TestInvTileOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 8))
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q8_0} {
		if !invTiled(typ) {
			t.Skipf("%s: no tile kernels on this CPU", typ)
		}
		k, _ := KernelOf(typ)
		const rows, cols, n = 21, 352, 27 // 27 tokens: a tile of each of 16, 8, 2 and 1
		data := randomRows(r, typ, rows, cols)
		rb := int(typ.RowBytes(cols))
		x := randomVec(r, n*cols)
		var a Act
		a.Quantize(k.Format(), x, n, cols)
		y := make([]float32, n*rows)
		k.MulInvariant(y, rows, data, rb, &a, 0, rows)
		nb := cols / 32
		for row := 0; row < rows; row++ {
			for tok := 0; tok < n; tok++ {
				var acc float32
				for b := 0; b < nb; b++ {
					blk := data[row*rb+b*(rb/nb):]
					dw := f16(blk)
					var i int32
					for j := 0; j < 32; j++ {
						var w int32
						if typ == gguf.Q4_0 {
							c := blk[2+j%16]
							if j >= 16 {
								c >>= 4
							}
							w = int32(c&15) - 8
						} else {
							w = int32(int8(blk[2+j]))
						}
						i += w * int32(a.Q[tok*cols+32*b+j])
					}
					g := float32(i) * a.D[tok*nb+b]
					acc = fma32(g, dw, acc)
				}
				if got := y[tok*rows+row]; math.Float32bits(got) != math.Float32bits(acc) {
					t.Fatalf("%s row %d token %d: %g, the stated order gives %g", typ, row, tok, got, acc)
				}
			}
		}
		for tok := 0; tok < n; tok++ {
			for b := 0; b < nb; b++ {
				var s int32
				for _, c := range a.Q[tok*cols+32*b : tok*cols+32*b+32] {
					s += int32(c)
				}
				if a.QS[tok*nb+b] != s {
					t.Fatalf("token %d block %d: QS %d, Σq %d", tok, b, a.QS[tok*nb+b], s)
				}
			}
		}
	}
}

// fma32 is a·b + c rounded once to float32.
func fma32(a, b, c float32) float32 {
	p := new(big.Float).SetPrec(1000).SetFloat64(float64(a))
	p.Mul(p, new(big.Float).SetPrec(1000).SetFloat64(float64(b)))
	p.Add(p, new(big.Float).SetPrec(1000).SetFloat64(float64(c)))
	v, _ := p.Float32()
	return v
}

func testMulInvariant(t *testing.T, r *rand.Rand, typ gguf.Type, variant int, k Kernel) {
	t.Helper()
	name := fmt.Sprintf("%s (variant %d)", typ, variant)
	{
		cols := 512
		if k.Format() == Q8 {
			cols = 544 // 17 blocks: an odd tail block
		}
		rows := 37
		const maxN = 19
		data := randomRows(r, typ, rows, cols)
		rb := int(typ.RowBytes(uint64(cols)))
		x := randomVec(r, maxN*cols)
		checkInvariantBound(t, name, typ, k, data, rows, cols, x, maxN, func(row, tok int, got float32, want, b float64, all *Act) {
			g := goDots[typ](data[row*rb:(row+1)*rb], all, tok)
			if d := math.Abs(float64(g - got)); d > b/4+1e-6*math.Abs(want) {
				t.Fatalf("%s row %d token %d: Go kernel %g, invariant %g", name, row, tok, g, got)
			}
		})
	}
}

// checkInvariantBound checks k.MulInvariant on the rows rows of data (typ, cols columns) times
// the maxN tokens x: every output the same bits whatever the tokens multiplied together and
// the split of the rows (checkInvariant), and within the kernels' error bound of the float64
// product of the dequantized weights. also, where not nil, checks more of each output got of
// the maxN tokens' product (all their activation, want the float64 product, b the bound).
func checkInvariantBound(t *testing.T, name string, typ gguf.Type, k Kernel, data []byte, rows, cols int, x []float32, maxN int, also func(row, tok int, got float32, want, b float64, all *Act)) {
	t.Helper()
	rb := int(typ.RowBytes(uint64(cols)))
	var all Act
	all.Quantize(k.Format(), x, maxN, cols)
	acts := make([]Act, maxN)
	for tok := range acts {
		acts[tok].Quantize(k.Format(), x[tok*cols:(tok+1)*cols], 1, cols)
	}
	var a Act
	checkInvariant(t, name, rows, maxN, func(y []float32, n, lo, hi int) {
		if n < 0 {
			k.MulInvariant(y, rows, data, rb, &acts[-n-1], lo, hi)
			return
		}
		a.Quantize(k.Format(), x[:n*cols], n, cols)
		k.MulInvariant(y, rows, data, rb, &a, lo, hi)
	})
	y := make([]float32, maxN*rows)
	k.MulInvariant(y, rows, data, rb, &all, 0, rows)
	w := make([]float32, cols)
	for row := 0; row < rows; row++ {
		if err := gguf.DequantizeRow(typ, data[row*rb:(row+1)*rb], w); err != nil {
			t.Fatal(err)
		}
		for tok := 0; tok < maxN; tok++ {
			xt := x[tok*cols : (tok+1)*cols]
			var want float64
			for i, wi := range w {
				want += float64(wi) * float64(xt[i])
			}
			got := y[tok*rows+row]
			b := bound(w, xt, &all, tok)
			if d := math.Abs(float64(got) - want); d > b {
				t.Fatalf("%s row %d token %d: %g, reference %g (|Δ| %g > bound %g)", name, row, tok, got, want, d, b)
			}
			if also != nil {
				also(row, tok, got, want, b, &all)
			}
		}
	}
}

// TestMulInvariantNoAlloc: a product through the tile kernels (every tiled weight type, a short
// row group, one token and 19: one- and multi-token kernels) allocates nothing once its
// scratch is held.
func TestMulInvariantNoAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const rows, cols = 21, 512
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q8_0, gguf.Q6_K, gguf.Q4_K} {
		if !invTiled(typ) {
			continue
		}
		k, _ := KernelOf(typ)
		data := randomRows(r, typ, rows, cols)
		rb := int(typ.RowBytes(cols))
		for _, n := range []int{1, 19} {
			var a Act
			a.Quantize(k.Format(), randomVec(r, n*cols), n, cols)
			y := make([]float32, n*rows)
			if allocs := testing.AllocsPerRun(20, func() { k.MulInvariant(y, rows, data, rb, &a, 0, rows) }); allocs != 0 {
				t.Errorf("%s, %d tokens: %g allocations a product", typ, n, allocs)
			}
		}
	}
}

// TestInvTileScalesShared: the tile kernels' token operands an Act keeps for its products
// (invTileScales and kTileOps, built once and shared by the row ranges) follow the weight type
// and the Act's latest quantization: one Act multiplied by a Q4_0, a Q8_0 and again a Q4_0
// matrix (a Q6_K, a Q4_K and a Q6_K one), then quantized again, gives every output the bits a
// fresh Act gives, rows cut into ranges as a pool cuts them.
func TestInvTileScalesShared(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	const rows, cols, n = 37, 256, 19 // tiles of 16, 2 and 1 tokens
	for _, types := range [][]gguf.Type{{gguf.Q4_0, gguf.Q8_0, gguf.Q4_0}, {gguf.Q6_K, gguf.Q4_K, gguf.Q6_K}} {
		var shared Act
		for round := range 2 {
			x := randomVec(r, n*cols)
			shared.Quantize(FormatOf(types[0]), x, n, cols)
			for _, typ := range types {
				k, _ := KernelOf(typ)
				data := randomRows(r, typ, rows, cols)
				rb := int(typ.RowBytes(cols))
				var fresh Act
				fresh.Quantize(k.Format(), x, n, cols)
				want := make([]float32, n*rows)
				k.MulInvariant(want, rows, data, rb, &fresh, 0, rows)
				got := make([]float32, n*rows)
				for lo := 0; lo < rows; lo += 16 {
					k.MulInvariant(got, rows, data, rb, &shared, lo, min(lo+16, rows))
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("round %d, %s: token %d row %d is %g, a fresh activation's %g", round, typ, i/rows, i%rows, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestInvTileScalesConcurrent: the row ranges of one product run at once on one Act, as a pool
// runs them, the first to need them building the tile operands (invTileScales, kTileOps) under
// the Act's mutex and the others reading them: every output has a fresh Act's bits, over three
// quantizations of the Act, and under -race (CI) the sharing is checked.
func TestInvTileScalesConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const rows, cols, n = 160, 256, 35
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q8_0, gguf.Q6_K, gguf.Q4_K} {
		if !invTiled(typ) {
			continue
		}
		k, _ := KernelOf(typ)
		x := randomVec(r, n*cols)
		data := randomRows(r, typ, rows, cols)
		rb := int(typ.RowBytes(cols))
		var fresh, shared Act
		fresh.Quantize(k.Format(), x, n, cols)
		want := make([]float32, n*rows)
		k.MulInvariant(want, rows, data, rb, &fresh, 0, rows)
		for round := 0; round < 3; round++ {
			shared.Quantize(k.Format(), x, n, cols)
			got := make([]float32, n*rows)
			var wg sync.WaitGroup
			for lo := 0; lo < rows; lo += 16 {
				wg.Go(func() { k.MulInvariant(got, rows, data, rb, &shared, lo, min(lo+16, rows)) })
			}
			wg.Wait()
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s round %d: token %d row %d is %g, want %g", typ, round, i/rows, i%rows, got[i], want[i])
				}
			}
		}
	}
}
