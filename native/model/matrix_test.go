package model

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model/modeltest"
)

// randomWeights is modeltest.RandomWeights: random codes of type t with sane scales.
var randomWeights = modeltest.RandomWeights

var weightTypes = []gguf.Type{
	gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1,
	gguf.Q4_K, gguf.Q5_K, gguf.Q6_K,
}

// TestMatrixProductsMatchReference checks MatVec (per-block dots in place) and MatMul (tiles
// dequantized once per batch) against MatVecReference on random weights of every type, with 1
// and 3 threads. The bound: |fast − ref| ≤ 1e-5 · Σ_i |w_i·x_i| per output, float32 rounding
// of sums taken in a different order.
func TestMatrixProductsMatchReference(t *testing.T) {
	pool := NewPool(3)
	defer pool.Close()
	for _, typ := range weightTypes {
		t.Run(typ.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(typ), 7))
			cols := 512
			rows := 160 // above workGrain: the pool splits the rows
			m, err := NewMatrix("w", typ, rows, cols, randomWeights(r, typ, rows, cols))
			if err != nil {
				t.Fatal(err)
			}
			const n = 5
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			ref := make([]float32, n*rows)
			mag := make([]float64, n*rows)
			row := make([]float32, cols)
			for tok := 0; tok < n; tok++ {
				if err := m.MatVecReference(ref[tok*rows:(tok+1)*rows], x[tok*cols:(tok+1)*cols]); err != nil {
					t.Fatal(err)
				}
				for j := 0; j < rows; j++ {
					if err := gguf.DequantizeRow(typ, m.Row(j), row); err != nil {
						t.Fatal(err)
					}
					for i, w := range row {
						mag[tok*rows+j] += math.Abs(float64(w * x[tok*cols+i]))
					}
				}
			}
			// Integer kernels round the activations to 8 bits per block of bs values first:
			// add Σ_i |w_i|·d_b/2 with d_b = max|x| over the block / 127.
			act := make([]float64, n*rows)
			if m.intK {
				bs := m.wk.Format().BlockSize()
				for tok := 0; tok < n; tok++ {
					for j := 0; j < rows; j++ {
						_ = gguf.DequantizeRow(typ, m.Row(j), row)
						for b := 0; b < cols; b += bs {
							var amax float64
							for i := b; i < b+bs; i++ {
								amax = max(amax, math.Abs(float64(x[tok*cols+i])))
							}
							for i := b; i < b+bs; i++ {
								act[tok*rows+j] += math.Abs(float64(row[i])) * amax / 127 / 2
							}
						}
					}
				}
			}
			check := func(name string, got []float32) {
				t.Helper()
				for i := range got {
					lim := 1e-5*mag[i] + act[i]*(1+1e-5) + 1e-30
					if d := math.Abs(float64(got[i] - ref[i])); d > lim || math.IsNaN(float64(got[i])) {
						t.Fatalf("%s: output %d = %g, reference %g (|Δ| %g > %g)", name, i, got[i], ref[i], d, lim)
					}
				}
			}
			for _, p := range []*Pool{nil, pool} {
				got := make([]float32, n*rows)
				for tok := 0; tok < n; tok++ {
					m.MatVec(got[tok*rows:(tok+1)*rows], x[tok*cols:(tok+1)*cols], p)
				}
				check("MatVec", got)
				got = make([]float32, n*rows)
				m.MatMul(got, x, n, p)
				check("MatMul", got)
			}
			deq := make([]float32, cols)
			for j := 0; j < rows; j++ {
				m.DequantRow(deq, j)
				if err := gguf.DequantizeRow(typ, m.Row(j), row); err != nil {
					t.Fatal(err)
				}
				for i := range row {
					if math.Float32bits(row[i]) != math.Float32bits(deq[i]) {
						t.Fatalf("DequantRow row %d value %d = %g, gguf %g", j, i, deq[i], row[i])
					}
				}
			}
		})
	}
}

func TestNewMatrixErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		typ        gguf.Type
		rows, cols int
		bytes      int
	}{
		{"unsupported type", gguf.IQ4_NL, 2, 32, 36},
		{"partial block", gguf.Q8_0, 2, 40, 80},
		{"short data", gguf.F32, 2, 4, 28},
		{"empty", gguf.F32, 0, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewMatrix("w", tc.typ, tc.rows, tc.cols, make([]byte, tc.bytes)); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestPoolCoversRange(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	for _, n := range []int{1, 3, 17, 1000} {
		seen := make([]int32, n)
		p.For(n, 2, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, s := range seen {
			if s != 1 {
				t.Fatalf("n=%d: index %d visited %d times", n, i, s)
			}
		}
	}
	p.Close()
	ran := 0
	p.For(10, 1, func(lo, hi int) { ran += hi - lo })
	if ran != 10 {
		t.Fatalf("after Close: %d of 10 indices ran", ran)
	}
}

// TestMatVecF32Rows checks the f32 one-token product row by row against dot4 of the row alone
// (rows taken four at a time) or dotF32 (the last (hi−lo)%4 rows), bit for bit: dot4's sum of a
// row does not depend on the other three, so a row written to another's output, a stream of
// rows off by one or a wrong stride changes some row's bits. Row counts the four-row loop takes
// whole, in part and not at all; a sub-range; widths below and above dot4's assembly minimum.
func TestMatVecF32Rows(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, shape := range [][2]int{{1, 40}, {3, 40}, {4, 40}, {7, 8}, {13, 40}, {13, 520}, {14, 64}, {64, 256}} {
		rows, cols := shape[0], shape[1]
		m, err := NewMatrix("w", gguf.F32, rows, cols, randomWeights(r, gguf.F32, rows, cols))
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		w := f32s(m.Data)
		for _, span := range [][2]int{{0, rows}, {rows / 3, rows - rows/5}} {
			lo, hi := span[0], span[1]
			y := make([]float32, rows)
			for i := range y {
				y[i] = -1
			}
			m.matVec(y, x, lo, hi)
			for row := range rows {
				want := float32(-1)
				switch {
				case row >= lo && row < lo+(hi-lo)/4*4:
					var out [4]float32
					dot4(x, w[row*cols:(row+1)*cols], 0, &out)
					want = out[0]
				case row >= lo && row < hi:
					want = dotF32(x, w[row*cols:(row+1)*cols])
				}
				if math.Float32bits(y[row]) != math.Float32bits(want) {
					t.Fatalf("%d×%d rows [%d,%d): row %d = %g, want %g", rows, cols, lo, hi, row, y[row], want)
				}
			}
		}
	}
}

// TestDotKernels checks dotF32, dotF16 and dot4 (assembly where the CPU has it) against a float64 dot
// for every length up to 80, within 1e-6 of Σ|a_i·b_i|.
func TestDotKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 80; n++ {
		stride := n + r.IntN(5)
		a := make([]float32, n)
		b := make([]float32, 3*stride+n)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		want := func(k int) (float64, float64) {
			var s, mag float64
			for i := range a {
				p := float64(a[i]) * float64(b[k*stride+i])
				s += p
				mag += math.Abs(p)
			}
			return s, mag
		}
		s, mag := want(0)
		if got := dotF32(a, b); math.Abs(float64(got)-s) > 1e-6*mag+1e-30 {
			t.Fatalf("n=%d: dotF32 %g, want %g", n, got, s)
		}
		h := make([]byte, 2*n)
		var hs, hmag float64
		for i := range a {
			binary.LittleEndian.PutUint16(h[2*i:], kvq.F32ToF16(b[i]))
			p := float64(a[i]) * float64(kvq.F16ToF32(binary.LittleEndian.Uint16(h[2*i:])))
			hs += p
			hmag += math.Abs(p)
		}
		if got := dotF16(h, a); math.Abs(float64(got)-hs) > 1e-6*hmag+1e-30 {
			t.Fatalf("n=%d: dotF16 %g, want %g", n, got, hs)
		}
		if n == 0 {
			continue
		}
		var out [4]float32
		dot4(a, b, stride, &out)
		for k := range out {
			s, mag := want(k)
			if math.Abs(float64(out[k])-s) > 1e-6*mag+1e-30 {
				t.Fatalf("n=%d: dot4[%d] %g, want %g", n, k, out[k], s)
			}
		}
	}
}

// TestKVQBlocksAsWeights quantizes random rows with native/kvq's block codecs (bit-compatible
// with ggml's blocks of the same name) and reads them as GGUF weights: the matrix's rows must
// dequantize to exactly what the codec decodes, and MatVec must match the reference.
func TestKVQBlocksAsWeights(t *testing.T) {
	for _, tc := range []struct {
		f   kvq.Format
		typ gguf.Type
	}{
		{kvq.Q8_0, gguf.Q8_0}, {kvq.Q4_0, gguf.Q4_0}, {kvq.Q4_1, gguf.Q4_1}, {kvq.Q5_0, gguf.Q5_0}, {kvq.Q5_1, gguf.Q5_1},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			const rows, cols = 16, 256
			c, err := kvq.NewCodec(tc.f, cols, kvq.CodecOptions{})
			if err != nil {
				t.Skipf("kvq has no %s codec: %v", tc.f, err)
			}
			r := rand.New(rand.NewPCG(11, uint64(tc.f)))
			src := make([]float32, cols)
			data := make([]byte, rows*c.RowBytes())
			for j := 0; j < rows; j++ {
				for i := range src {
					src[i] = float32(r.NormFloat64())
				}
				c.Encode(data[j*c.RowBytes():(j+1)*c.RowBytes()], src)
			}
			m, err := NewMatrix("w", tc.typ, rows, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			want, got := make([]float32, cols), make([]float32, cols)
			for j := 0; j < rows; j++ {
				c.Decode(want, m.Row(j))
				m.DequantRow(got, j)
				for i := range want {
					if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
						t.Fatalf("row %d value %d: weight %g, kvq %g", j, i, got[i], want[i])
					}
				}
			}
			x := make([]float32, cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			ref, fast := make([]float32, rows), make([]float32, rows)
			if err := m.MatVecReference(ref, x); err != nil {
				t.Fatal(err)
			}
			m.MatVec(fast, x, nil)
			for j := range ref {
				tol := 1e-4 * (1 + math.Abs(float64(ref[j])))
				if m.intK { // 8-bit activations: Σ_i |w_i|·d_b/2, d_b = max|x| over the block / 127
					bs := m.wk.Format().BlockSize()
					m.DequantRow(got, j)
					for b := 0; b < cols; b += bs {
						var amax float64
						for _, v := range x[b : b+bs] {
							amax = max(amax, math.Abs(float64(v)))
						}
						for _, w := range got[b : b+bs] {
							tol += math.Abs(float64(w)) * amax / 254
						}
					}
				}
				if d := math.Abs(float64(fast[j] - ref[j])); d > tol {
					t.Fatalf("row %d: MatVec %g, reference %g", j, fast[j], ref[j])
				}
			}
		})
	}
}
