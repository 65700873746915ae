package wkern

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// intTypes are the weight types with an integer kernel.
var intTypes = []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.IQ4_NL, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K}

// f16Fields are the byte offsets of each block's f16 scales (d, and dmin or m).
var f16Fields = map[gguf.Type][]int{
	gguf.Q8_0: {0}, gguf.Q4_0: {0}, gguf.Q4_1: {0, 2}, gguf.Q5_0: {0}, gguf.Q5_1: {0, 2}, gguf.IQ4_NL: {0},
	gguf.Q4_K: {0, 2}, gguf.Q5_K: {0, 2}, gguf.Q6_K: {208},
}

func toHalf(f float32) uint16 {
	// Round-to-nearest-even f32 → f16 for the normal range the tests use.
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	man := b & 0x7fffff
	if exp <= 0 {
		return sign
	}
	h := uint32(exp)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++
	}
	return sign | uint16(h)
}

// randomRows returns rows×cols values of type t: random codes, random sane scales.
func randomRows(r *rand.Rand, t gguf.Type, rows, cols int) []byte {
	rb := int(t.RowBytes(uint64(cols)))
	data := make([]byte, rows*rb)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	bb := t.TypeSize()
	for off := 0; off < len(data); off += bb {
		for _, f := range f16Fields[t] {
			v := float32(r.NormFloat64() * 0.01)
			binary.LittleEndian.PutUint16(data[off+f:], toHalf(v))
		}
	}
	return data
}

func randomVec(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		if r.IntN(50) == 0 {
			x[i] *= 8 // outliers, as activations have
		}
	}
	return x
}

// bound is the stated error bound of a row dot against the exact Σ w_i·x_i: the activation
// rounding Σ_i |w_i|·d_{b(i)}/2, plus float32 rounding of the block sums (2⁻¹⁶ of Σ|w_i·x̂_i|,
// which covers a few thousand blocks).
func bound(w []float32, x []float32, a *Act, tok int) float64 {
	bs := a.Format.BlockSize()
	nb := a.Cols / bs
	var e, mag float64
	for i, wi := range w {
		d := float64(a.D[tok*nb+i/bs])
		e += math.Abs(float64(wi)) * d / 2
		mag += math.Abs(float64(wi)) * (math.Abs(float64(x[i])) + d/2)
	}
	return e + mag/(1<<16) + 1e-30
}

func TestKernelsAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range intTypes {
		for _, cols := range []int{256, 512, 2048, 5632} {
			t.Run(fmt.Sprintf("%s/%d", typ, cols), func(t *testing.T) {
				k, ok := KernelOf(typ)
				if !ok {
					t.Fatalf("no kernel")
				}
				rows := 8
				data := randomRows(r, typ, rows, cols)
				rb := int(typ.RowBytes(uint64(cols)))
				n := 6 // a four-token group and two single tokens
				x := randomVec(r, n*cols)
				var a Act
				a.Quantize(k.Format(), x, n, cols)
				w := make([]float32, cols)
				y := make([]float32, n*rows)
				k.MulRows(y, rows, data, rb, &a, 0, rows)
				for row := 0; row < rows; row++ {
					if err := gguf.DequantizeRow(typ, data[row*rb:(row+1)*rb], w); err != nil {
						t.Fatal(err)
					}
					for tok := 0; tok < n; tok++ {
						xt := x[tok*cols : (tok+1)*cols]
						var want float64
						for i, wi := range w {
							want += float64(wi) * float64(xt[i])
						}
						got := k.Dot(data[row*rb:(row+1)*rb], &a, tok)
						b := bound(w, xt, &a, tok)
						if d := math.Abs(float64(got) - want); d > b {
							t.Fatalf("row %d token %d: %g, reference %g (|Δ| %g > bound %g)", row, tok, got, want, d, b)
						}
						if d := math.Abs(float64(y[tok*rows+row]) - want); d > b {
							t.Fatalf("MulRows row %d token %d: %g, reference %g (|Δ| %g > bound %g)", row, tok, y[tok*rows+row], want, d, b)
						}
						if d := math.Abs(float64(y[tok*rows+row] - got)); d > b/4+1e-6*math.Abs(want) {
							t.Fatalf("MulRows row %d token %d: %g, Dot %g", row, tok, y[tok*rows+row], got)
						}
						// The portable kernel has the same integer sums: equal up to float32 order.
						g := goDots[typ](data[row*rb:(row+1)*rb], &a, tok)
						if d := math.Abs(float64(g - got)); d > b/4+1e-6*math.Abs(want) {
							t.Fatalf("row %d token %d: Go kernel %g, assembly %g", row, tok, g, got)
						}
					}
				}
			})
		}
	}
}

func TestQuantizeAct(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := randomVec(r, 512)
	x[3] = 0
	for i := 256; i < 288; i++ {
		x[i] = 0 // an all-zero block
	}
	for _, f := range []Format{Q8, Q8K} {
		var a Act
		a.Quantize(f, x, 2, 256)
		bs := f.BlockSize()
		for i, v := range x {
			d := a.D[i/bs]
			if e := math.Abs(float64(v) - float64(d)*float64(a.Q[i])); e > float64(d)/2*(1+1e-6) {
				t.Fatalf("format %d value %d: %g coded %d·%g", f, i, v, a.Q[i], d)
			}
		}
		if f == Q8K {
			for g := range a.BS {
				s := 0
				for _, c := range a.Q[16*g : 16*g+16] {
					s += int(c)
				}
				if int(a.BS[g]) != s {
					t.Fatalf("bsum %d: %d, want %d", g, a.BS[g], s)
				}
			}
			for g := range a.BS32 {
				s := 0
				for _, c := range a.Q[32*g : 32*g+32] {
					s += int(c)
				}
				if int(a.BS32[g]) != s {
					t.Fatalf("32-code sum %d: %d, want %d", g, a.BS32[g], s)
				}
			}
			if len(a.BS32) != 2*256/32 {
				t.Fatalf("%d 32-code sums, want %d", len(a.BS32), 2*256/32)
			}
		}
	}
}

// FuzzDot runs every kernel on arbitrary block bytes: no panics, and the assembly and portable
// kernels agree wherever the result is finite.
func FuzzDot(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint8(0), int64(1))
	f.Fuzz(func(t *testing.T, raw []byte, ti uint8, seed int64) {
		typ := intTypes[int(ti)%len(intTypes)]
		k, _ := KernelOf(typ)
		cols := k.Format().BlockSize()
		if typ.BlockSize() == 256 {
			cols = 256
		}
		cols *= 2
		rb := int(typ.RowBytes(uint64(cols)))
		row := make([]byte, rb)
		for i := range row {
			if len(raw) > 0 {
				row[i] = raw[i%len(raw)] ^ byte(i*int(seed))
			}
		}
		r := rand.New(rand.NewPCG(uint64(seed), 1))
		x := randomVec(r, cols)
		var a Act
		a.Quantize(k.Format(), x, 1, cols)
		got := k.Dot(row, &a, 0)
		g := goDots[typ](row, &a, 0)
		if math.IsInf(float64(got), 0) || got != got || math.IsInf(float64(g), 0) || g != g {
			return
		}
		// Tolerance: float32 rounding of the lane and block sums, relative to Σ|w_i·x̂_i|.
		w := make([]float32, cols)
		if err := gguf.DequantizeRow(typ, row, w); err != nil {
			t.Fatal(err)
		}
		var mag float64
		for i, wi := range w {
			mag += math.Abs(float64(wi)) * math.Abs(float64(a.D[i/k.Format().BlockSize()])*float64(a.Q[i]))
		}
		if math.IsInf(mag, 0) || mag != mag {
			return
		}
		if d := math.Abs(float64(got - g)); d > 1e-5*mag {
			t.Fatalf("%s: assembly %g, Go %g", typ, got, g)
		}
	})
}

// TestMulRowsOneToken checks the one-token products (the four-row kernels where there are
// some, and the row tail) against the reference, for row ranges not a multiple of four.
func TestMulRowsOneToken(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, typ := range intTypes {
		for _, cols := range []int{256, 2048} {
			t.Run(fmt.Sprintf("%s/%d", typ, cols), func(t *testing.T) {
				k, _ := KernelOf(typ)
				const rows, lo, hi = 13, 1, 12
				data := randomRows(r, typ, rows, cols)
				rb := int(typ.RowBytes(uint64(cols)))
				x := randomVec(r, cols)
				var a Act
				a.Quantize(k.Format(), x, 1, cols)
				y := make([]float32, rows)
				k.MulRows(y, rows, data, rb, &a, lo, hi)
				w := make([]float32, cols)
				for row := 0; row < rows; row++ {
					if row < lo || row >= hi {
						if y[row] != 0 {
							t.Fatalf("row %d outside [%d,%d) written", row, lo, hi)
						}
						continue
					}
					if err := gguf.DequantizeRow(typ, data[row*rb:(row+1)*rb], w); err != nil {
						t.Fatal(err)
					}
					var want float64
					for i, wi := range w {
						want += float64(wi) * float64(x[i])
					}
					b := bound(w, x, &a, 0)
					if d := math.Abs(float64(y[row]) - want); d > b {
						t.Fatalf("row %d: %g, reference %g (|Δ| %g > bound %g)", row, y[row], want, d, b)
					}
					g := goDots[typ](data[row*rb:(row+1)*rb], &a, 0)
					if d := math.Abs(float64(g - y[row])); d > b/4+1e-6*math.Abs(want) {
						t.Fatalf("row %d: Go kernel %g, MulRows %g", row, g, y[row])
					}
				}
			})
		}
	}
}

// TestMulRowsBatch checks the batch products (the blocked ones where there are some, and
// their row and token tails) against the reference on a row range not a multiple of 8.
func TestMulRowsBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, typ := range intTypes {
		for _, c := range []struct{ cols, rows, lo, hi, n int }{
			{256, 21, 1, 20, 9}, {4352, 21, 1, 20, 9}, {1024, 37, 0, 37, 21}, {2048, 40, 3, 35, 16}, {512, 19, 2, 19, 5},
		} {
			cols, rows, lo, hi, n := c.cols, c.rows, c.lo, c.hi, c.n
			t.Run(fmt.Sprintf("%s/%d/n=%d", typ, cols, n), func(t *testing.T) {
				k, _ := KernelOf(typ)
				data := randomRows(r, typ, rows, cols)
				rb := int(typ.RowBytes(uint64(cols)))
				x := randomVec(r, n*cols)
				var a Act
				a.Quantize(k.Format(), x, n, cols)
				y := make([]float32, n*rows)
				k.MulRows(y, rows, data, rb, &a, lo, hi)
				w := make([]float32, cols)
				for row := 0; row < rows; row++ {
					if err := gguf.DequantizeRow(typ, data[row*rb:(row+1)*rb], w); err != nil {
						t.Fatal(err)
					}
					for tok := 0; tok < n; tok++ {
						got := y[tok*rows+row]
						if row < lo || row >= hi {
							if got != 0 {
								t.Fatalf("row %d outside [%d,%d) written", row, lo, hi)
							}
							continue
						}
						xt := x[tok*cols : (tok+1)*cols]
						var want float64
						for i, wi := range w {
							want += float64(wi) * float64(xt[i])
						}
						if b := bound(w, xt, &a, tok); math.Abs(float64(got)-want) > b {
							t.Fatalf("row %d token %d: %g, reference %g (bound %g)", row, tok, got, want, b)
						}
					}
				}
			})
		}
	}
}
