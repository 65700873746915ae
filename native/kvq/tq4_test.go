package kvq

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// lloydMaxGaussian runs Lloyd's iteration for the n-level MSE-optimal quantizer of N(0,1) to
// convergence and returns the levels (ascending), the decision thresholds and the MSE.
func lloydMaxGaussian(n int) (levels, thresholds []float64, mse float64) {
	pdf := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	levels = make([]float64, n)
	thresholds = make([]float64, n-1)
	for i := range levels {
		levels[i] = -3 + 6*(float64(i)+0.5)/float64(n)
	}
	cell := func(i int) (a, b float64) {
		a, b = math.Inf(-1), math.Inf(1)
		if i > 0 {
			a = thresholds[i-1]
		}
		if i < n-1 {
			b = thresholds[i]
		}
		return a, b
	}
	for it := 0; it < 10000; it++ {
		for i := range thresholds {
			thresholds[i] = (levels[i] + levels[i+1]) / 2
		}
		moved := 0.0
		for i := range levels {
			a, b := cell(i)
			c := (pdf(a) - pdf(b)) / (cdf(b) - cdf(a)) // E[X | a < X < b]
			moved = math.Max(moved, math.Abs(c-levels[i]))
			levels[i] = c
		}
		if moved < 1e-13 {
			break
		}
	}
	for i := range thresholds {
		thresholds[i] = (levels[i] + levels[i+1]) / 2
	}
	xpdf := func(x float64) float64 {
		if math.IsInf(x, 0) {
			return 0
		}
		return x * pdf(x)
	}
	for i, l := range levels {
		a, b := cell(i)
		p := cdf(b) - cdf(a)
		m1 := pdf(a) - pdf(b)       // ∫ x
		m2 := p + xpdf(a) - xpdf(b) // ∫ x²
		mse += m2 - 2*l*m1 + l*l*p
	}
	return levels, thresholds, mse
}

// gaussianMSE is the MSE on N(0,1) of the quantizer with the given ascending levels and the
// midpoints between them as thresholds.
func gaussianMSE(levels []float64) float64 {
	pdf := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	xpdf := func(x float64) float64 {
		if math.IsInf(x, 0) {
			return 0
		}
		return x * pdf(x)
	}
	var mse float64
	for i, l := range levels {
		a, b := math.Inf(-1), math.Inf(1)
		if i > 0 {
			a = (levels[i-1] + l) / 2
		}
		if i < len(levels)-1 {
			b = (l + levels[i+1]) / 2
		}
		p := cdf(b) - cdf(a)
		mse += p + xpdf(a) - xpdf(b) - 2*l*(pdf(a)-pdf(b)) + l*l*p
	}
	return mse
}

// TestTQ4Codebook: tq4's levels are the 16-level Lloyd–Max levels rounded to the nearest
// multiples of tq4Unit, at most 127 of them, no unit on a grid of 1e-4·unit around it gives a
// smaller MSE with the levels so rounded, and the thresholds are their midpoints.
func TestTQ4Codebook(t *testing.T) {
	levels, _, mse := lloydMaxGaussian(16)
	if math.Abs(mse-0.009501) > 1e-6 {
		t.Errorf("16-level Lloyd–Max MSE = %.7f, the documented value is 0.009501", mse)
	}
	checkIntCodebook(t, levels, tq4Ints[:], tq4Unit, tq4Levels[:], 0.0095062)
	for i, th := range tq4Thresholds {
		if want := (float64(tq4Levels[i]) + float64(tq4Levels[i+1])) / 2; math.Abs(float64(th)-want) > 1e-6 {
			t.Errorf("tq4Thresholds[%d] = %.9g, the midpoint is %.9g", i, th, want)
		}
	}
}

func newTQ4(t testing.TB, d int, opt CodecOptions) Codec {
	t.Helper()
	c, err := NewCodec(TQ4, d, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTQ4Distortion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d        int
		outliers bool
		lo, hi   float64
	}{
		{"gaussian d=128", 128, false, 0.090, 0.100},
		{"gaussian d=64", 64, false, 0.090, 0.100},
		{"gaussian d=80 (64+16)", 80, false, 0.090, 0.100},
		{"gaussian d=96 (64+32)", 96, false, 0.090, 0.100},
		{"channel outliers d=128", 128, true, 0.090, 0.105},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTQ4(t, tc.d, CodecOptions{Seed: 9, Layer: 2, Head: 1})
			rows := gaussRows(uint64(tc.d)*7, 400, tc.d)
			if tc.outliers {
				for _, x := range rows {
					x[3] *= 20
					x[77] *= 8
				}
			}
			row := make([]byte, c.RowBytes())
			got := make([]float32, tc.d)
			var num, den float64
			for _, x := range rows {
				c.Encode(row, x)
				c.Decode(got, row)
				for i := range x {
					e := float64(got[i] - x[i])
					num += e * e
					den += float64(x[i]) * float64(x[i])
				}
			}
			if rel := math.Sqrt(num / den); rel < tc.lo || rel > tc.hi {
				t.Errorf("relative L2 distortion %.4f outside [%.3f, %.3f]", rel, tc.lo, tc.hi)
			} else {
				t.Logf("relative L2 distortion %.4f", rel)
			}
		})
	}
}

func TestTQ4Kernels(t *testing.T) {
	for _, d := range []int{8, 16, 64, 128, 256, 80, 96, 9} {
		t.Run(fmt.Sprint("d=", d), func(t *testing.T) {
			c := newTQ4(t, d, CodecOptions{Seed: 1, Layer: 4, Head: 2})
			checkKernels(t, c, gaussRows(uint64(d)+200, 40, d), 2e-5)
		})
	}
}

func TestTQ4Layout(t *testing.T) {
	t.Run("zero row stores zero bytes", func(t *testing.T) {
		c := newTQ4(t, 16, CodecOptions{})
		row := make([]byte, c.RowBytes())
		for i := range row {
			row[i] = 0x5a
		}
		c.Encode(row, make([]float32, 16))
		for i, b := range row {
			if b != 0 {
				t.Fatalf("byte %d = %#02x", i, b)
			}
		}
		got := make([]float32, 16)
		c.Decode(got, row)
		for _, v := range got {
			if v != 0 {
				t.Fatalf("zero row decodes to %v", got)
			}
		}
	})
	t.Run("odd d leaves the last high nibble 0", func(t *testing.T) {
		c := newTQ4(t, 9, CodecOptions{})
		if c.RowBytes() != 9 || TQ4.RowBytes(9) != 9 {
			t.Fatalf("RowBytes(9) = %d, want 5 + 4", c.RowBytes())
		}
		row := make([]byte, c.RowBytes())
		for _, x := range gaussRows(3, 20, 9) {
			c.Encode(row, x)
			if row[4]>>4 != 0 {
				t.Fatalf("last code byte %#02x", row[4])
			}
		}
	})
	t.Run("codes are the nearest level of R·x/s, scale is ‖x‖/√d", func(t *testing.T) {
		const d = 32
		c := newTQ4(t, d, CodecOptions{Seed: 5})
		tc := c.(*tq4Codec)
		x := gaussRows(11, 1, d)[0]
		row := make([]byte, c.RowBytes())
		c.Encode(row, x)
		s := float64(tc.scale(row))
		if want := math.Sqrt(dot64(x, x) / d); math.Abs(s-want) > 1e-6*want {
			t.Fatalf("scale %g, want %g", s, want)
		}
		y := make([]float32, d)
		tc.rot.apply(y, x)
		for i := range y {
			code := row[i/2] >> (4 * (i % 2)) & 15
			best := 0
			for k := range tq4Levels {
				if math.Abs(float64(y[i])/s-float64(tq4Levels[k])) < math.Abs(float64(y[i])/s-float64(tq4Levels[best])) {
					best = k
				}
			}
			if int(code) != best {
				t.Errorf("y[%d]/s = %g: code %d, nearest level is %d", i, float64(y[i])/s, code, best)
			}
		}
	})
	t.Run("fast code search matches counting thresholds", func(t *testing.T) {
		const d = 64
		c := newTQ4(t, d, CodecOptions{Seed: 8})
		tc := c.(*tq4Codec)
		row := make([]byte, c.RowBytes())
		y := make([]float32, d)
		rows := gaussRows(13, 3000, d)
		for n, x := range rows {
			switch n % 4 {
			case 1:
				x[n%d] *= 50 // coordinates far beyond ±3·s after rotation
			case 2:
				x[n%d] = float32(math.NaN())
			}
			c.Encode(row, x)
			s := tc.scale(row)
			var st [16]float32
			for k, th := range tq4Thresholds {
				st[k] = s * th
			}
			tc.rot.apply(y, x)
			for i, v := range y {
				if got, want := row[i/2]>>(4*(i%2))&15, tq4CodeExact(v, &st); got != want {
					t.Fatalf("row %d, y[%d]/s = %g: code %d, counting gives %d", n, i, v/s, got, want)
				}
			}
		}
		var st [16]float32
		for k, th := range tq4Thresholds {
			st[k] = 0.37 * th
		}
		for k := range 15 { // values on, just below and just above every threshold
			for _, v := range []float32{st[k], math.Nextafter32(st[k], -10), math.Nextafter32(st[k], 10)} {
				x := tq4CodeExact(v, &st)
				want := uint8(k)
				if v >= st[k] {
					want++
				}
				if x != want {
					t.Fatalf("tq4CodeExact(%g) = %d, want %d", v, x, want)
				}
			}
		}
	})
	t.Run("rotation depends on the head", func(t *testing.T) {
		x := gaussRows(12, 1, 64)[0]
		a, b := newTQ4(t, 64, CodecOptions{Seed: 1, Head: 0}), newTQ4(t, 64, CodecOptions{Seed: 1, Head: 1})
		ra, rb := make([]byte, a.RowBytes()), make([]byte, b.RowBytes())
		a.Encode(ra, x)
		b.Encode(rb, x)
		if string(ra) == string(rb) {
			t.Error("heads 0 and 1 stored identical bytes")
		}
		a2 := newTQ4(t, 64, CodecOptions{Seed: 1, Head: 0})
		a2.Encode(rb, x)
		if string(ra) != string(rb) {
			t.Error("two codecs of the same (seed, layer, head) stored different bytes")
		}
	})
}

func TestTQ4AndQ2KCodecs(t *testing.T) {
	if _, err := NewCodec(TQ4, 4, CodecOptions{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("tq4 d=4: %v, want ErrUnsupported", err)
	}
	if _, err := NewCodec(Q2K, 128, CodecOptions{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("q2k is not a row codec: %v, want ErrUnsupported", err)
	}
}

func FuzzTQ4DecodeRows(f *testing.F) {
	c := newTQ4(f, 16, CodecOptions{})
	row := make([]byte, c.RowBytes())
	c.Encode(row, gaussRows(2, 1, 16)[0])
	f.Add(uint8(16), uint8(0), row)
	f.Add(uint8(9), uint8(3), []byte{0xff, 0x0f, 0xf0, 0x12, 0x34, 0xff, 0xff, 0x7f, 0xff})
	f.Add(uint8(80), uint8(1), make([]byte, 88))
	f.Fuzz(func(t *testing.T, dim, head uint8, src []byte) {
		d := int(dim)
		c, err := NewCodec(TQ4, d, CodecOptions{Seed: 1, Head: int(head)})
		if err != nil {
			if d >= MinDim {
				t.Fatalf("d=%d: %v", d, err)
			}
			return
		}
		fuzzRows(t, c, src)
	})
}

// TestTQ4Golden pins the encoded bytes (rotation included) at head dimensions 8, 40 (32 + 8),
// 80 (64 + 16) and 128 for four rows: bell-shaped, bell-shaped with 32× outliers, zeros, and a
// single non-zero value.
func TestTQ4Golden(t *testing.T) {
	for _, d := range []int{8, 40, 80, 128} {
		name := fmt.Sprintf("tq4_d%d.hex", d)
		t.Run(name, func(t *testing.T) {
			c := newTQ4(t, d, CodecOptions{Seed: 0x5eed, Layer: 2, Head: 3})
			r := &seedRand{uint64(d) + 1}
			rb := c.RowBytes()
			enc := make([]byte, 4*rb)
			src := make([]float32, d)
			for row := 0; row < 4; row++ {
				for i := range src {
					src[i] = r.exactish()
					if row == 1 && i%9 == 4 {
						src[i] *= 32
					}
					if row >= 2 {
						src[i] = 0
					}
				}
				if row == 3 {
					src[d/2] = -1.5
				}
				c.Encode(enc[row*rb:(row+1)*rb], src)
			}
			checkGolden(t, name, enc)
		})
	}
}
