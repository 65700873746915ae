//go:build amd64 && !purego

package wkern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/gguf"
)

// TestVNNIAgainstReference checks the AVX-512 one-token kernels against the float64 dot of the
// dequantized row within the stated bound, and against the AVX2 and portable kernels (the same
// integer block sums: equal up to float32 order), on shapes with and without a tail of fewer
// than 16 blocks and with none whole.
func TestVNNIAgainstReference(t *testing.T) {
	if !hasVNNI || noVNNI() {
		t.Skip("no AVX-512 VNNI/VBMI on this CPU, or KVLAB_NO_AVX512 set")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q4_K, gguf.Q6_K} {
		for _, cols := range []int{96, 256, 512, 768, 896, 2048, 2080, 5632} {
			if cols%FormatOf(typ).BlockSize() != 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", typ, cols), func(t *testing.T) {
				if !permQ8 {
					t.Fatal("the regrouped activation is off")
				}
				rows := 5
				data := randomRows(r, typ, rows, cols)
				rb := int(typ.RowBytes(uint64(cols)))
				x := randomVec(r, cols)
				var a Act
				a.Quantize(FormatOf(typ), x, 1, cols)
				if want := cols / 512 * 512; FormatOf(typ) == Q8 && len(a.P) != want {
					t.Fatalf("regrouped codes: %d, want %d", len(a.P), want)
				}
				w := make([]float32, cols)
				for row := 0; row < rows; row++ {
					rw := data[row*rb : (row+1)*rb]
					if err := gguf.DequantizeRow(typ, rw, w); err != nil {
						t.Fatal(err)
					}
					var want float64
					for i, wi := range w {
						want += float64(wi) * float64(x[i])
					}
					got := dots[typ](rw, &a, 0)
					b := bound(w, x, &a, 0)
					if d := math.Abs(float64(got) - want); d > b {
						t.Fatalf("row %d: %g, reference %g (|Δ| %g > bound %g)", row, got, want, d, b)
					}
					for name, f := range map[string]rowDot{"AVX2": asmDots[typ], "Go": goDots[typ]} {
						if g := f(rw, &a, 0); math.Abs(float64(g-got)) > b/4+1e-6*math.Abs(want) {
							t.Fatalf("row %d: %s kernel %g, AVX-512 %g", row, name, g, got)
						}
					}
				}
			})
		}
	}
}

// TestQ4_KAVX512Bits checks that the 64-byte Q4_K kernel returns the AVX2 kernel's bits
// (checkKBits), on rows of extreme codes and scales too: every nibble 15 or 0, every 6-bit scale
// and min 63.
func TestQ4_KAVX512Bits(t *testing.T) {
	checkKBits(t, gguf.Q4_K, dotQ4_KAsm512, rand.New(rand.NewPCG(9, 10)), func(blk []byte, k int) {
		for i := 4; i < 16; i++ {
			blk[i] = 0xff
		}
		for i := 16; i < q4_KBytes; i++ {
			blk[i] = []byte{0xff, 0x00}[k]
		}
	})
}

// TestQ6_KAVX512Bits is TestQ4_KAVX512Bits for the 64-byte Q6_K kernel: extreme rows of every
// code 63 (scales 127) or 0 (scales −128).
func TestQ6_KAVX512Bits(t *testing.T) {
	checkKBits(t, gguf.Q6_K, dotQ6_KAsm512, rand.New(rand.NewPCG(11, 12)), func(blk []byte, k int) {
		for i := 0; i < 192; i++ {
			blk[i] = []byte{0xff, 0x00}[k]
		}
		for i := 192; i < 208; i++ {
			blk[i] = 0x7f + byte(k)
		}
	})
}

// checkKBits checks that kernel, typ's 64-byte one-token kernel, returns the AVX2 kernel's bits,
// row by row, through the row loop and through the four-token kernel (checkFourTokens), on
// random rows and on two rows whose super-blocks extreme(blk, k) fills (rows 0 and 1), against
// random and alternating ±1 activations.
func checkKBits(t *testing.T, typ gguf.Type, kernel rowDot, r *rand.Rand, extreme func(blk []byte, k int)) {
	if !hasVNNI || noVNNI() {
		t.Skip("no AVX-512 VNNI/VBMI on this CPU, or KVLAB_NO_AVX512 set")
	}
	sb := int(typ.RowBytes(256))
	for _, cols := range []int{256, 2048, 5632} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			const rows = 7
			rb := int(typ.RowBytes(uint64(cols)))
			data := randomRows(r, typ, rows, cols)
			for b := 0; b < cols/256; b++ {
				for k := range 2 {
					extreme(data[k*rb+b*sb:k*rb+(b+1)*sb], k)
				}
			}
			for tok := 0; tok < 3; tok++ {
				x := randomVec(r, cols)
				if tok == 2 {
					for i := range x {
						x[i] = float32(1 - 2*(i%2))
					}
				}
				var a Act
				a.Quantize(Q8K, x, 1, cols)
				y := make([]float32, rows)
				k, _ := KernelOf(typ)
				k.MulRows(y, rows, data, rb, &a, 0, rows)
				for row := 0; row < rows; row++ {
					rw := data[row*rb : (row+1)*rb]
					want := asmDots[typ](rw, &a, 0)
					if got := kernel(rw, &a, 0); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("token %d row %d: %g, AVX2 %g", tok, row, got, want)
					}
					if math.Float32bits(y[row]) != math.Float32bits(want) {
						t.Fatalf("token %d row %d: row loop %g, AVX2 %g", tok, row, y[row], want)
					}
				}
				// Without the regrouped codes (Act.QK) the kernels read the plain ones, as
				// they do for the tokens of a batch: the same bits.
				if len(a.QK) > 0 {
					a.QK = a.QK[:0]
					k.MulRows(y, rows, data, rb, &a, 0, rows)
					for row := 0; row < rows; row++ {
						rw := data[row*rb : (row+1)*rb]
						want := asmDots[typ](rw, &a, 0)
						if got := kernel(rw, &a, 0); math.Float32bits(got) != math.Float32bits(want) || math.Float32bits(y[row]) != math.Float32bits(want) {
							t.Fatalf("token %d row %d, plain codes: %g, row loop %g, AVX2 %g", tok, row, got, y[row], want)
						}
					}
				}
			}
			checkFourTokens(t, r, typ, data, rows, cols)
		})
	}
}

// checkFourTokens checks that typ's four-token row dot gives each of four tokens the AVX2
// one-token kernel's bits, row by row.
func checkFourTokens(t *testing.T, r *rand.Rand, typ gguf.Type, data []byte, rows, cols int) {
	t.Helper()
	rb := int(typ.RowBytes(uint64(cols)))
	var a Act
	a.Quantize(Q8K, randomVec(r, 4*cols), 4, cols)
	for row := 0; row < rows; row++ {
		rw := data[row*rb : (row+1)*rb]
		var out [4]float32
		dots4[typ](rw, &a, 0, &out)
		for tok := range 4 {
			if want := asmDots[typ](rw, &a, tok); math.Float32bits(out[tok]) != math.Float32bits(want) {
				t.Fatalf("row %d: four-token kernel's token %d %g, AVX2 %g", row, tok, out[tok], want)
			}
		}
	}
}

// BenchmarkVNNI compares the AVX-512 and AVX2 one-token kernels on one cache-resident row of
// 2048 values and on a 5632×2048 matrix (the TinyLlama FFN's, larger than the L2 cache), in
// multiply-adds per nanosecond of process CPU time.
func BenchmarkVNNI(b *testing.B) {
	if !hasVNNI {
		b.Skip("no AVX-512 VNNI/VBMI on this CPU")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q4_K, gguf.Q6_K} {
		for _, rows := range []int{1, 5632} {
			const cols = 2048
			data := randomRows(r, typ, rows, cols)
			rb := int(typ.RowBytes(cols))
			var a Act
			a.Quantize(FormatOf(typ), randomVec(r, cols), 1, cols)
			y := make([]float32, rows)
			for _, k := range []struct {
				name string
				f    rowDot
			}{{"avx512", dots[typ]}, {"avx2", asmDots[typ]}} {
				b.Run(fmt.Sprintf("%s/rows%d/%s", typ, rows, k.name), func(b *testing.B) {
					c0 := cputime.Process()
					for b.Loop() {
						for i := 0; i < rows; i++ {
							y[i] = k.f(data[i*rb:(i+1)*rb], &a, 0)
						}
					}
					b.ReportMetric(float64(rows*cols)*float64(b.N)/float64((cputime.Process()-c0).Nanoseconds()), "cpuGMAC/s")
				})
			}
		}
	}
}
