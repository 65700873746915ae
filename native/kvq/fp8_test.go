package kvq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
)

func TestFP8E4M3EveryCode(t *testing.T) {
	prev := float32(-1)
	for c := 0; c < 256; c++ {
		v := FP8E4M3ToF32(uint8(c))
		if c&0x7f == 0x7f {
			if v == v {
				t.Errorf("code %#02x decodes to %g, want NaN", c, v)
			}
			if got := F64ToFP8E4M3(float64(v)); got != uint8(c) {
				t.Errorf("NaN of code %#02x encodes to %#02x", c, got)
			}
			continue
		}
		if got := F64ToFP8E4M3(float64(v)); got != uint8(c) {
			t.Errorf("code %#02x -> %g -> %#02x", c, v, got)
		}
		if math.Signbit(float64(v)) != (c&0x80 != 0) {
			t.Errorf("code %#02x -> %g has the wrong sign", c, v)
		}
		if c < 0x7f { // positive codes are increasing
			if !(v > prev) && c > 0 {
				t.Errorf("code %#02x = %g is not above the previous %g", c, v, prev)
			}
			prev = v
		}
	}
	for _, tc := range []struct {
		code uint8
		want float32
	}{
		{0x00, 0}, {0x01, 1.0 / 512}, {0x07, 7.0 / 512}, {0x08, 1.0 / 64}, {0x38, 1}, {0x3f, 1.875},
		{0x7e, 448}, {0xfe, -448}, {0xb8, -1},
	} {
		if got := FP8E4M3ToF32(tc.code); got != tc.want {
			t.Errorf("code %#02x = %g, want %g", tc.code, got, tc.want)
		}
	}
	if got := F64ToFP8E4M3(math.Copysign(0, -1)); got != 0x80 {
		t.Errorf("-0 encodes to %#02x, want 0x80", got)
	}
}

func TestFP8RoundsToNearestEven(t *testing.T) {
	const sub = 1.0 / 512 // subnormal spacing
	for _, tc := range []struct {
		name string
		in   float64
		want uint8
	}{
		{"tie 1|1.125 to even 1", 1.0625, 0x38},
		{"tie 1.125|1.25 to even 1.25", 1.1875, 0x3a},
		{"above tie", math.Nextafter(1.0625, 2), 0x39},
		{"below tie", math.Nextafter(1.1875, 0), 0x39},
		{"tie 1.875|2 carries into the exponent", 1.9375, 0x40},
		{"tie 384|416 to even 384", 400, 0x7c},
		{"tie 416|448 to even 448", 432, 0x7e},
		{"negative tie", -1.0625, 0xb8},
		{"subnormal tie 0|1 to 0", 0.5 * sub, 0x00},
		{"subnormal tie 1|2 to 2", 1.5 * sub, 0x02},
		{"subnormal tie 2|3 to 2", 2.5 * sub, 0x02},
		{"tie max subnormal|min normal to min normal", 7.5 * sub, 0x08},
		{"tie min normal|next", 1.0/64 + 1.0/1024, 0x08},
		{"tiny positive to +0", 1e-30, 0x00},
		{"tiny negative to -0", -1e-30, 0x80},
		{"max finite", 448, 0x7e},
		{"saturates above the max", 460, 0x7e},
		{"saturates at the would-be tie 464", 464, 0x7e},
		{"saturates far above", 1e30, 0x7e},
		{"saturates negative", -1e30, 0xfe},
		{"+Inf saturates", math.Inf(1), 0x7e},
		{"-Inf saturates", math.Inf(-1), 0xfe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := F64ToFP8E4M3(tc.in); got != tc.want {
				t.Errorf("F64ToFP8E4M3(%g) = %#02x (%g), want %#02x (%g)", tc.in, got, FP8E4M3ToF32(got), tc.want, FP8E4M3ToF32(tc.want))
			}
		})
	}
}

func TestFP8EncodeMatchesScalar(t *testing.T) {
	// Rows whose amax is 448 have scale 1, so Encode's codes must be F64ToFP8E4M3 of the values.
	const d = 64
	c, _ := NewCodec(FP8, d, CodecOptions{})
	r := &seedRand{99}
	src := make([]float32, d)
	row := make([]byte, c.RowBytes())
	for n := 0; n < 2000; n++ {
		for i := range src {
			// Magnitudes 2^-12..2^8, and every tie between two codes and its neighbours.
			v := math.Ldexp(r.uniform()*2-1, int(r.uniform()*21)-12)
			if i%2 == 0 {
				k := uint8(r.next()) &^ 0x80
				if k >= 0x7e {
					continue
				}
				v = (float64(FP8E4M3ToF32(k)) + float64(FP8E4M3ToF32(k+1))) / 2
				v = math.Copysign(v, float64(i%4)-1)
				if i%3 == 0 {
					v = float64(math.Nextafter32(float32(v), float32(i%5)-2))
				}
			}
			src[i] = float32(v)
		}
		src[0] = 448
		c.Encode(row, src)
		for i, x := range src {
			if want := F64ToFP8E4M3(float64(x)); row[i] != want {
				t.Fatalf("%g: Encode stored %#02x, F64ToFP8E4M3 gives %#02x", x, row[i], want)
			}
		}
	}
}

// fp8TestRows returns rows whose magnitudes span 2^-20..2^20 within each row, so both the normal
// and the subnormal range of the scaled values are exercised, plus plain Gaussian rows.
func fp8TestRows(seed uint64, n, d int) [][]float32 {
	r := &seedRand{seed}
	rows := gaussRows(seed, n, d)
	for i := 0; i < n; i += 2 {
		for j := range rows[i] {
			rows[i][j] *= float32(math.Ldexp(1, int(r.uniform()*40)-20))
		}
	}
	return rows
}

func TestFP8RowErrorBound(t *testing.T) {
	for _, d := range []int{8, 16, 64, 128, 256} {
		t.Run(fmt.Sprint("d=", d), func(t *testing.T) {
			c, err := NewCodec(FP8, d, CodecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c.RowBytes() != d+4 || c.RowBytes() != FP8.RowBytes(d) {
				t.Fatalf("RowBytes = %d, want %d", c.RowBytes(), d+4)
			}
			row := make([]byte, c.RowBytes())
			got := make([]float32, d)
			for _, x := range fp8TestRows(uint64(d), 64, d) {
				c.Encode(row, x)
				c.Decode(got, row)
				var amax float32
				for _, v := range x {
					amax = max(amax, float32(math.Abs(float64(v))))
				}
				scale := math.Float32frombits(binary.LittleEndian.Uint32(row[d:]))
				if scale != amax/448 {
					t.Fatalf("scale = %g, want amax/448 = %g", scale, amax/448)
				}
				for i, v := range x {
					e := math.Abs(float64(got[i]) - float64(v))
					var bound float64
					if math.Abs(float64(v))/float64(scale) >= 1.0/64 {
						bound = math.Abs(float64(v))/16 + math.Abs(float64(got[i]))*0x1p-24
					} else {
						bound = float64(scale)/1024 + math.Abs(float64(got[i]))*0x1p-24
					}
					if e > bound {
						t.Fatalf("x[%d] = %g decodes to %g: error %g > bound %g (scale %g)", i, v, got[i], e, bound, scale)
					}
				}
			}
		})
	}
}

func TestFP8SpecialRows(t *testing.T) {
	const d = 16
	c, _ := NewCodec(FP8, d, CodecOptions{})
	row := make([]byte, c.RowBytes())
	got := make([]float32, d)
	t.Run("zero row", func(t *testing.T) {
		for i := range row {
			row[i] = 0xaa
		}
		c.Encode(row, make([]float32, d))
		for i, b := range row {
			if b != 0 {
				t.Fatalf("byte %d = %#02x, want 0", i, b)
			}
		}
	})
	t.Run("non-finite", func(t *testing.T) {
		x := make([]float32, d)
		x[0], x[1], x[2], x[3] = 2, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
		c.Encode(row, x)
		c.Decode(got, row)
		if got[0] != 2 || got[1] == got[1] || got[2] != 2 || got[3] != -2 {
			t.Errorf("decoded %v, want [2 NaN 2 -2 …] (scale from the finite values, ±Inf saturated)", got[:4])
		}
	})
	t.Run("max element is exact", func(t *testing.T) {
		x := gaussRows(5, 1, d)[0]
		x[7] = -3.3
		c.Encode(row, x)
		c.Decode(got, row)
		if row[7] != 0xfe || math.Abs(float64(got[7]+3.3)) > 1e-6 {
			t.Errorf("amax element: code %#02x value %g, want 0xfe and -3.3", row[7], got[7])
		}
	})
}

// checkKernels checks a codec's attention kernels against its own Decode: Dot on a prepared
// query against q·Decode(row), AccumulateMany+FinishAccumulate against Σ w·Decode(row), both
// within float32 rounding (tol relative to the sums of magnitudes), and the Many forms against
// the single-row forms exactly.
func checkKernels(t *testing.T, c Codec, rows [][]float32, tol float64) {
	t.Helper()
	d, rb := c.Dim(), c.RowBytes()
	packed := make([]byte, len(rows)*rb)
	dec := make([][]float32, len(rows))
	for j, x := range rows {
		c.Encode(packed[j*rb:(j+1)*rb], x)
		dec[j] = make([]float32, d)
		c.Decode(dec[j], packed[j*rb:(j+1)*rb])
	}
	r := &seedRand{uint64(d) * 31}
	q := make([]float32, d)
	w := make([]float32, len(rows))
	for i := range q {
		q[i] = float32(r.norm())
	}
	for j := range w {
		w[j] = float32(r.uniform())
	}
	qp := make([]float32, d)
	c.PrepareQuery(qp, q)
	many := make([]float32, len(rows))
	c.DotMany(qp, packed, many)
	for j := range rows {
		row := packed[j*rb : (j+1)*rb]
		got := c.Dot(qp, row)
		if got != many[j] {
			t.Fatalf("row %d: DotMany %g != Dot %g", j, many[j], got)
		}
		want := dot64(q, dec[j])
		if e := math.Abs(float64(got) - want); e > tol*math.Sqrt(dot64(q, q)*dot64(dec[j], dec[j])) {
			t.Fatalf("row %d: Dot = %g, q·Decode = %g (error %g)", j, got, want, e)
		}
	}
	accMany := make([]float32, d)
	c.AccumulateMany(accMany, w, packed)
	acc := make([]float32, d)
	for j := range rows {
		c.AccumulateScaled(acc, w[j], packed[j*rb:(j+1)*rb])
	}
	for i := range acc {
		if acc[i] != accMany[i] {
			t.Fatalf("AccumulateMany[%d] = %g, AccumulateScaled in order gives %g", i, accMany[i], acc[i])
		}
	}
	out := make([]float32, d)
	c.FinishAccumulate(out, acc)
	var mag float64
	for j := range rows {
		mag += math.Abs(float64(w[j])) * math.Sqrt(dot64(dec[j], dec[j]))
	}
	for i := range out {
		var want float64
		for j := range rows {
			want += float64(w[j]) * float64(dec[j][i])
		}
		if e := math.Abs(float64(out[i]) - want); e > tol*mag {
			t.Fatalf("Σ w·x̂ [%d] = %g, want %g (error %g, scale %g)", i, out[i], want, e, mag)
		}
	}
}

func TestFP8Kernels(t *testing.T) {
	for _, d := range []int{8, 16, 64, 128, 256, 13} {
		t.Run(fmt.Sprint("d=", d), func(t *testing.T) {
			c, err := NewCodec(FP8, d, CodecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkKernels(t, c, fp8TestRows(uint64(d)+100, 40, d), 1e-5)
		})
	}
}

func TestFP8Unsupported(t *testing.T) {
	if _, err := NewCodec(FP8, 7, CodecOptions{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("d=7: %v, want ErrUnsupported", err)
	}
}

func FuzzFP8DecodeRows(f *testing.F) {
	c, _ := NewCodec(FP8, 16, CodecOptions{})
	row := make([]byte, c.RowBytes())
	c.Encode(row, gaussRows(1, 1, 16)[0])
	f.Add(uint8(16), row)
	f.Add(uint8(8), make([]byte, 12))
	f.Add(uint8(9), []byte{0x7f, 0xff, 0x80, 1, 2, 3, 4, 5, 6, 0, 0, 0x80, 0x7f})
	f.Fuzz(func(t *testing.T, dim uint8, src []byte) {
		d := int(dim)
		c, err := NewCodec(FP8, d, CodecOptions{})
		if err != nil {
			if d >= MinDim {
				t.Fatalf("d=%d: %v", d, err)
			}
			return
		}
		fuzzRows(t, c, src)
	})
}

// fuzzRows decodes untrusted bytes through DecodeRows, which must accept exactly a whole number
// of rows, and runs every kernel over the whole rows: nothing may panic.
func fuzzRows(t *testing.T, c Codec, src []byte) {
	d, rb := c.Dim(), c.RowBytes()
	n := len(src) / rb
	if err := DecodeRows(c, make([]float32, n*d), src); (err == nil) != (len(src)%rb == 0) {
		t.Fatalf("%d bytes of %d-byte rows: DecodeRows error %v", len(src), rb, err)
	}
	if n == 0 {
		return
	}
	whole := src[:n*rb]
	q := make([]float32, d)
	for i := range q {
		q[i] = float32(i%3) - 1
	}
	c.PrepareQuery(q, q)
	c.DotMany(q, whole, make([]float32, n))
	_ = c.Dot(q, whole[:rb])
	w := make([]float32, n)
	for i := range w {
		w[i] = 1
	}
	c.AccumulateMany(q, w, whole)
	c.AccumulateScaled(q, 0.5, whole[:rb])
	c.FinishAccumulate(q, q)
}

// TestFP8Golden pins the encoded bytes at a short, a mixed and a long head dimension for five
// rows: bell-shaped, bell-shaped with 32× outliers, exact ties under scale 1 (RNE), zeros, and
// a row with NaN and ±Inf.
func TestFP8Golden(t *testing.T) {
	ties := []float32{1.0625, 1.1875, -1.9375, 400, 432, 7.5 / 512, 1.5 / 512, 0.5 / 512, -2.5 / 512, 1.0/64 + 1.0/1024}
	for _, d := range []int{8, 40, 128} {
		name := fmt.Sprintf("fp8_d%d.hex", d)
		t.Run(name, func(t *testing.T) {
			c, err := NewCodec(FP8, d, CodecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := &seedRand{uint64(d)}
			rb := c.RowBytes()
			enc := make([]byte, 5*rb)
			src := make([]float32, d)
			for row := 0; row < 5; row++ {
				for i := range src {
					src[i] = r.exactish()
					switch {
					case row == 1 && i%9 == 4:
						src[i] *= 32
					case row == 2:
						src[i] = ties[i%len(ties)]
					case row == 3:
						src[i] = 0
					}
				}
				switch row {
				case 2:
					src[d-1] = 448 // amax 448: scale 1, so every tie is exact
				case 4:
					src[1], src[2], src[3] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
				}
				c.Encode(enc[row*rb:(row+1)*rb], src)
			}
			checkGolden(t, name, enc)
		})
	}
}

// FuzzSeedFormatsEncode encodes arbitrary float32 bits (NaN and Inf included) with fp8 and tq4
// and appends them to a q2k head: nothing may panic, and for finite input of magnitude ≤ 1e4
// every decoded value must be finite (and, for fp8, no larger than the input's amax, up to the
// rounding of a subnormal scale).
func FuzzSeedFormatsEncode(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x7f, 0, 0, 0xc0, 0x7f}, byte(0), uint8(0))
	f.Add(make([]byte, 4*40), byte(1), uint8(32))
	f.Add([]byte{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0xbf, 0, 0, 0, 0x40}, byte(2), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, which byte, dim uint8) {
		d := MinDim + int(dim)%64
		src := make([]float32, d)
		amax := 0.0
		finite := true
		for i := range src {
			if 4*i+4 <= len(data) {
				src[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
			a := math.Abs(float64(src[i]))
			finite = finite && a <= 1e4
			amax = math.Max(amax, a)
		}
		dec := make([]float32, d)
		switch which % 3 {
		case 0, 1:
			fm := []Format{FP8, TQ4}[which%3]
			c, err := NewCodec(fm, d, CodecOptions{Head: int(dim)})
			if err != nil {
				t.Fatal(err)
			}
			row := make([]byte, c.RowBytes())
			c.Encode(row, src)
			c.Decode(dec, row)
			q := make([]float32, d)
			c.PrepareQuery(q, src)
			_ = c.Dot(q, row)
			c.AccumulateScaled(q, 1, row)
			c.FinishAccumulate(q, q)
			if !finite {
				return
			}
			for i, v := range dec {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || (fm == FP8 && math.Abs(float64(v)) > amax*(1+1e-6)+448*0x1p-149) {
					t.Fatalf("%s: value %d: %g decoded to %g (amax %g)", fm, i, src[i], v, amax)
				}
			}
		case 2:
			h, err := NewQ2KHead(d, 1.1)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				h.Append(src)
			}
			out := make([]float32, h.Len())
			h.Scores(src, out)
			h.Decode(dec, 2)
			if !finite {
				return
			}
			for i, v := range dec {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("q2k: value %d: %g decoded to %g", i, src[i], v)
				}
			}
		}
	})
}

// TestFP8MultiEveryCode checks that the multi-query kernels decode every e4m3 code exactly as
// the reference table does, NaN codes to NaN: each of 256 rows of 256 values holds one code (row
// r code r at value r, zeros elsewhere) under a power-of-two scale, so every score and every
// accumulated value is exact; a row holding a NaN code scores NaN and accumulates NaN at that
// value only.
func TestFP8MultiEveryCode(t *testing.T) {
	const d, n = 256, 4
	c, err := NewCodec(FP8, d, CodecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mq := c.(MultiQuery)
	rb := c.RowBytes()
	rows := make([]byte, 256*rb)
	for r := 0; r < 256; r++ {
		rows[r*rb+r] = byte(r)
		binary.LittleEndian.PutUint32(rows[r*rb+d:], math.Float32bits(0.5))
	}
	q := make([]float32, n*d)
	for h := 0; h < n; h++ {
		for i := 0; i < d; i++ {
			q[h*d+i] = float32(h + 1)
		}
	}
	same := func(got, want float32) bool {
		return got == want || math.IsNaN(float64(got)) && math.IsNaN(float64(want))
	}
	out := make([]float32, 256*n)
	mq.DotManyMulti(q, n, rows, out)
	for r := 0; r < 256; r++ {
		for h := 0; h < n; h++ {
			if want := float32(h+1) * FP8E4M3ToF32(uint8(r)) * 0.5; !same(out[r*n+h], want) {
				t.Errorf("code %#02x query %d: score %g, want %g", r, h, out[r*n+h], want)
			}
		}
	}
	w := make([]float32, 256*n)
	for j := range w {
		w[j] = 1
	}
	acc := make([]float32, n*d)
	mq.AccumulateManyMulti(acc, n, w, rows)
	for h := 0; h < n; h++ {
		for i := 0; i < d; i++ {
			if want := FP8E4M3ToF32(uint8(i)) * 0.5; !same(acc[h*d+i], want) {
				t.Errorf("code %#02x accumulator %d: %g, want %g", i, h, acc[h*d+i], want)
			}
		}
	}
}

// fp8SubSlack is how far fp8's AMX kernels may be from the exact value i of row: |x_i| where
// code i is subnormal (exponent 0, not zero), which they read as zero (FP8AFF: a bf16
// subnormal, zero to TDPBF16PS), and where c is fp8 of rows of 128 values whose scores (or,
// with values, values) take the AMX kernels; else 0.
func fp8SubSlack(c Codec, row []byte, i int, values bool) float64 {
	fc, ok := Unwrap(c).(fp8Codec)
	if !ok || fc.d != 128 || !fp8AMXActive() || values && !fp8AMXAccActive() {
		return 0
	}
	if b := row[i]; b&0x78 != 0 || b&7 == 0 {
		return 0
	}
	return math.Abs(float64(fp8E4M3Table[row[i]] * fc.scale(row)))
}
