package kvq

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func newRotated(t testing.TB, f Format, d int, opt CodecOptions) Codec {
	t.Helper()
	opt.Rotate = true
	c, err := NewCodec(f, d, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rotatedFormats are the formats the rotation tests cover: every Rotatable one and the turbo
// tiers (rotated by construction).
var rotatedFormats = []Format{Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, FP8, Turbo2, Turbo3, Turbo4}

func TestRotatableNames(t *testing.T) {
	for _, f := range Formats() {
		want := f == Q8_0 || f == Q4_0 || f == Q4_1 || f == Q5_0 || f == Q5_1 || f == IQ4_NL || f == FP8 || f == Q2K
		if f.Rotatable() != want {
			t.Errorf("%s.Rotatable() = %v, want %v", f, f.Rotatable(), want)
		}
		p := Pair{K: f, V: f}
		if f.KOnly() {
			continue
		}
		back, err := ParsePair(p.String())
		if err != nil || back != p {
			t.Errorf("%s: ParsePair(String) = %v, %v", p, back, err)
		}
		if f.Rotatable() {
			raw := p.Unrotated()
			if raw.String() != f.String()+"-r" || !raw.Valid() || raw.KRotated() || !p.KRotated() {
				t.Errorf("%s unrotated: %s valid %v", p, raw, raw.Valid())
			}
			if back, err := ParsePair(raw.String()); err != nil || back != raw {
				t.Errorf("%s: ParsePair(String) = %v, %v", raw, back, err)
			}
		} else if (Pair{K: f, V: f, KRaw: true}).Valid() {
			t.Errorf("%s marked raw is valid", f)
		}
	}
}

// TestRotatedBytesUnchanged: rotation costs no storage.
func TestRotatedBytesUnchanged(t *testing.T) {
	for _, f := range []Format{Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, FP8} {
		for _, d := range []int{8, 40, 64, 80, 128} {
			c := newRotated(t, f, d, CodecOptions{Seed: 3})
			if c.RowBytes() != f.RowBytes(d) || c.Format() != f || c.Dim() != d {
				t.Errorf("%s d=%d: rotated codec %d bytes, format %s", f, d, c.RowBytes(), c.Format())
			}
		}
	}
}

func TestTurboRowBytes(t *testing.T) {
	for _, tc := range []struct {
		f         Format
		d, want   int
		bitsPerV  float64
		bitsPerV2 float64
	}{
		{Turbo2, 64, 18, 2.25, 0}, {Turbo3, 64, 26, 3.25, 0}, {Turbo4, 64, 34, 4.25, 0},
		{Turbo3, 128, 50, 3.125, 0}, {Turbo4, 128, 66, 4.125, 0}, {Turbo3, 9, 6, 0, 0}, {Turbo2, 10, 5, 0, 0},
	} {
		if got := tc.f.RowBytes(tc.d); got != tc.want {
			t.Errorf("%s.RowBytes(%d) = %d, want %d", tc.f, tc.d, got, tc.want)
		}
		c, err := NewCodec(tc.f, tc.d, CodecOptions{})
		if err != nil || c.RowBytes() != tc.want {
			t.Errorf("%s d=%d codec: %v", tc.f, tc.d, err)
		}
		if tc.bitsPerV != 0 && tc.f.BitsPerValue(tc.d) != tc.bitsPerV {
			t.Errorf("%s d=%d: %g bits/value, want %g", tc.f, tc.d, tc.f.BitsPerValue(tc.d), tc.bitsPerV)
		}
	}
}

// TestRotatedCodecs checks every rotated codec against its own reference: Decode of the stored
// row is close to the input (relative error within the format's Gaussian distortion), Dot and
// DotMany on the prepared query equal q·Decode, and Σ w·x through AccumulateScaled,
// AccumulateMany and FinishAccumulate equals Σ w·Decode, at several head dimensions, with and
// without per-channel scales.
func TestRotatedCodecs(t *testing.T) {
	maxRel := map[Format]float64{Q8_0: 0.01, Q4_0: 0.11, Q4_1: 0.11, Q5_0: 0.055, Q5_1: 0.05, IQ4_NL: 0.11,
		FP8: 0.05, Turbo2: 0.36, Turbo3: 0.2, Turbo4: 0.105}
	for _, f := range rotatedFormats {
		for _, d := range []int{8, 40, 64, 80, 128, 130} {
			for _, scaled := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/d%d/scaled=%v", f, d, scaled), func(t *testing.T) {
					c := newRotated(t, f, d, CodecOptions{Seed: 7, Layer: 1, Head: 2})
					rows := gaussRows(uint64(d), 48, d)
					if scaled {
						for _, r := range rows {
							r[1] *= 16
							r[d-1] *= 40
							r[2] += 3 // a stable per-channel offset
						}
						flat := make([]float32, 0, 48*d)
						for _, r := range rows {
							flat = append(flat, r...)
						}
						c.(Calibrator).Calibrate(flat, len(rows))
						lam := ChannelScalesOf(c)
						if lam == nil || lam[1] != 16 || lam[d-1] != 32 || lam[0] != 1 {
							t.Fatalf("channel scales %v", lam)
						}
						if mu := ChannelMeansOf(c); mu == nil || math.Abs(float64(mu[2])-3) > 0.5 {
							t.Fatalf("channel offsets %v", mu)
						}
					}
					checkRowCodec(t, c, rows, maxRel[f])
				})
			}
		}
	}
}

// checkRowCodec encodes rows with c and checks Decode's error and that Dot, DotMany,
// AccumulateScaled and AccumulateMany agree with the decoded rows.
func checkRowCodec(t *testing.T, c Codec, rows [][]float32, maxRel float64) {
	t.Helper()
	d, rb := c.Dim(), c.RowBytes()
	enc := make([]byte, len(rows)*rb)
	dec := make([][]float32, len(rows))
	var num, den float64
	for i, r := range rows {
		c.Encode(enc[i*rb:(i+1)*rb], r)
		dec[i] = make([]float32, d)
		c.Decode(dec[i], enc[i*rb:(i+1)*rb])
		for j := range r {
			e := float64(dec[i][j] - r[j])
			num += e * e
			den += float64(r[j]) * float64(r[j])
		}
	}
	if rel := math.Sqrt(num / den); rel > maxRel {
		t.Errorf("relative RMS error %.4f > %.4f", rel, maxRel)
	}
	q := gaussRows(99, 1, d)[0]
	pq := make([]float32, d)
	c.PrepareQuery(pq, q)
	out := make([]float32, len(rows))
	c.DotMany(pq, enc, out)
	w := make([]float32, len(rows))
	want := make([]float64, d)
	for i := range rows {
		ref := dot64(q, dec[i])
		var mag float64
		for j := range q {
			mag += math.Abs(float64(q[j]) * float64(dec[i][j]))
		}
		tol := 1e-5*mag + 1e-6
		if got := float64(c.Dot(pq, enc[i*rb:(i+1)*rb])); math.Abs(got-ref) > tol {
			t.Fatalf("row %d: Dot %g, q·Decode %g", i, got, ref)
		}
		if math.Abs(float64(out[i])-ref) > tol {
			t.Fatalf("row %d: DotMany %g, q·Decode %g", i, out[i], ref)
		}
		w[i] = float32(i%5) - 1.5
		for j := range want {
			want[j] += float64(w[i]) * float64(dec[i][j])
		}
	}
	acc1, acc2 := make([]float32, d), make([]float32, d)
	for i := range rows {
		c.AccumulateScaled(acc1, w[i], enc[i*rb:(i+1)*rb])
	}
	c.AccumulateMany(acc2, w, enc)
	c.FinishAccumulate(acc1, acc1)
	c.FinishAccumulate(acc2, acc2)
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	for j := range want {
		if math.Abs(float64(acc1[j])-want[j]) > 1e-4*scale || math.Abs(float64(acc2[j])-want[j]) > 1e-4*scale {
			t.Fatalf("accumulate[%d]: %g, %g, want %g", j, acc1[j], acc2[j], want[j])
		}
	}
	if mq, ok := c.(MultiQuery); ok {
		const n = 3
		qs := make([]float32, 0, n*d)
		for h := 0; h < n; h++ {
			qs = append(qs, pq...)
		}
		mo := make([]float32, n*len(rows))
		mq.DotManyMulti(qs, n, enc, mo)
		// Integer kernels score the prepared query rounded per block of the inner codec's
		// domain (ScoresGrid; scoresGridBlock values a block, the whole query for turbo2 and
		// turbo3 where t23Uni): DotManyMulti is within the float tolerance of DotMany of the
		// rounded query, and within u·Σ_b max|q_b|·Σ_b(|x| + o_b) more of DotMany's.
		inner := c
		if rc, ok := c.(*rotCodec); ok {
			inner = rc.inner
		}
		gq := make([]float32, d)
		u := ScoresGrid(c, gq, pq, 1)
		gout := make([]float32, len(rows))
		c.DotMany(gq, enc, gout)
		x := make([]float32, d)
		for i := range rows {
			row := enc[i*rb : (i+1)*rb]
			inner.Decode(x, row)
			var quant float64
			gb := scoresGridBlock(inner) // the values under one scale
			for b := 0; b < d; b += gb {
				var m, sx float64
				for j := b; j < min(b+gb, d); j++ {
					m = math.Max(m, math.Abs(float64(pq[j])))
					sx += math.Abs(float64(x[j])) + blockOffset(inner, row, j)
				}
				quant += m * sx
			}
			for h := 0; h < n; h++ {
				got := float64(mo[i*n+h])
				if math.Abs(got-float64(gout[i])) > 1e-4*math.Abs(float64(gout[i]))+1e-4 {
					t.Fatalf("DotManyMulti row %d query %d: %g, DotMany of the rounded query %g", i, h, got, gout[i])
				}
				if math.Abs(got-float64(out[i])) > u*quant+1e-4*math.Abs(float64(out[i]))+1e-4 {
					t.Fatalf("DotManyMulti row %d query %d: %g, DotMany %g (u %g)", i, h, got, out[i], u)
				}
			}
		}
	}
}

// TestScoresUnchangedByRotation: in exact arithmetic rotation leaves q·k alone, so a q8_0 row's
// rotated score is within q8_0's error of the exact one, for unit rows.
func TestRotationZeroAndSpecialRows(t *testing.T) {
	for _, f := range rotatedFormats {
		c := newRotated(t, f, 64, CodecOptions{Seed: 1})
		row := make([]byte, c.RowBytes())
		dst := make([]float32, 64)
		c.Encode(row, make([]float32, 64))
		c.Decode(dst, row)
		for i, v := range dst {
			if v != 0 {
				t.Fatalf("%s: zero row decodes to %g at %d", f, v, i)
			}
		}
		src := make([]float32, 64)
		src[5] = float32(math.NaN())
		src[6] = float32(math.Inf(1))
		c.Encode(row, src) // must not panic
		c.Decode(dst, row)
	}
}

func TestChannelScales(t *testing.T) {
	const d, n = 8, 4
	rows := make([]float32, n*d)
	for i := range rows {
		rows[i] = float32(i%3) - 1 + 0.25
	}
	if lam := ChannelScales(rows, n, d); lam != nil {
		t.Errorf("flat channels: %v, want nil", lam)
	}
	for i := 0; i < n; i++ {
		rows[i*d+2] *= 64
		rows[i*d+5] *= 3
	}
	lam := ChannelScales(rows, n, d)
	if lam == nil || lam[2] < 32 || lam[5] != 4 && lam[5] != 2 {
		t.Fatalf("scales %v", lam)
	}
	for i, l := range lam {
		if l < 1 || math.Float32bits(l)&0x7fffff != 0 {
			t.Errorf("λ[%d] = %g is not a power of two ≥ 1", i, l)
		}
	}
	if ChannelScales(make([]float32, n*d), n, d) != nil || ChannelScales(nil, 0, d) != nil {
		t.Error("zero rows get scales")
	}
}

// TestSearchedScaleNoWorse: the scale-searched q4_0 and q5_0 encoders never have a larger block
// error than ggml's choice on the same (rotated) block, and usually a smaller one.
func TestSearchedScaleNoWorse(t *testing.T) {
	for _, tc := range []struct {
		f      Format
		lo, hi int32
		enc    func(dst []byte, src []float32)
		dec    func(dst []float32, blk []byte)
	}{
		{Q4_0, 8, 7, q4_0Encode, q4_0Decode},
		{Q5_0, 16, 15, q5_0Encode, q5_0Decode},
	} {
		var better, total int
		var eg, es float64
		for i, r := range gaussRows(5, 400, BlockSize) {
			n := BlockSize - i%3*7 // full and short blocks
			x := r[:n]
			bg := make([]byte, tc.f.RowBytes(n))
			bs := make([]byte, tc.f.RowBytes(n))
			tc.enc(bg, x)
			searchedBlockRow(bs, x, 2, tc.lo, tc.hi)
			xg, xs := make([]float32, n), make([]float32, n)
			tc.dec(xg, bg)
			tc.dec(xs, bs)
			var e1, e2 float64
			for j := range x {
				e1 += sq(float64(xg[j] - x[j]))
				e2 += sq(float64(xs[j] - x[j]))
			}
			if e2 > e1 {
				t.Fatalf("%s block %d: searched error %g > ggml's %g", tc.f, i, e2, e1)
			}
			if e2 < e1 {
				better++
			}
			total++
			eg += e1
			es += e2
		}
		t.Logf("%s: searched scale better on %d/%d blocks; MSE ratio %.3f", tc.f, better, total, es/eg)
		if es > 0.95*eg {
			t.Errorf("%s: the search gains too little: MSE ratio %.3f", tc.f, es/eg)
		}
	}
}

func sq(x float64) float64 { return x * x }

// TestRotatedGolden pins the rotated encoders' bytes (rotation, per-channel scales, scale
// search) at head dimensions 40 and 64 for rows like the other golden tests'.
func TestRotatedGolden(t *testing.T) {
	for _, f := range rotatedFormats {
		for _, d := range []int{40, 64} {
			name := fmt.Sprintf("rot_%s_d%d.hex", f, d)
			t.Run(name, func(t *testing.T) {
				c := newRotated(t, f, d, CodecOptions{Seed: 0x5eed, Layer: 2, Head: 3})
				r := &seedRand{uint64(d) + 7}
				rb := c.RowBytes()
				const nrows = 4
				src := make([]float32, nrows*d)
				for row := 0; row < nrows; row++ {
					for i := 0; i < d; i++ {
						v := r.exactish()
						if row == 1 && i%9 == 4 {
							v *= 32
						}
						if i == 3 {
							v *= 16 // a K outlier channel: λ = 16
						}
						if row == 2 {
							v = 0
						}
						src[row*d+i] = v
					}
				}
				src[3*d+d/2] = -1.5
				c.(Calibrator).Calibrate(src[:2*d], 2)
				enc := make([]byte, nrows*rb)
				for row := 0; row < nrows; row++ {
					c.Encode(enc[row*rb:(row+1)*rb], src[row*d:(row+1)*d])
				}
				checkGolden(t, name, enc)
			})
		}
	}
}

// TestTurboCodebooks re-derives the 4- and 8-level Lloyd–Max codebooks.
func TestTurboCodebooks(t *testing.T) {
	levels, _, mse := lloydMaxGaussian(8)
	if math.Abs(mse-0.0345478) > 1e-6 {
		t.Errorf("8 levels: Lloyd–Max MSE %.7f, documented 0.0345478", mse)
	}
	checkIntCodebook(t, levels, turboInts3[:], turboUnit3, turboLevels3[:], 0.0345486)
	levels, _, mse = lloydMaxGaussian(4)
	if math.Abs(mse-0.1174818) > 1e-6 {
		t.Errorf("4 levels: Lloyd–Max MSE %.7f, documented 0.1174818", mse)
	}
	checkIntCodebook(t, levels, turboInts2[:], turboUnit2, turboLevels2[:], 0.1174819)
}

// checkIntCodebook checks levels (a codec's) against the Lloyd–Max levels lm rounded to the
// nearest multiples of unit (ints, at most 127 of them): the levels are ints·unit, no unit on a
// grid of 1e-4·unit around it gives a smaller MSE on N(0,1) with the levels so rounded, and
// that MSE is mse (to 1e-7).
func checkIntCodebook(t *testing.T, lm []float64, ints []int8, unit float32, levels []float32, mse float64) {
	t.Helper()
	rounded := func(u float64) ([]float64, bool) {
		r := make([]float64, len(lm))
		for i, l := range lm {
			k := math.Round(l / u)
			if math.Abs(k) > 127 {
				return nil, false
			}
			r[i] = k * u
		}
		return r, true
	}
	u := float64(unit)
	for i, l := range lm {
		if k := math.Round(l / u); float64(ints[i]) != k {
			t.Errorf("%d levels: ints[%d] = %d, the Lloyd–Max level %.9g rounds to %g units", len(lm), i, ints[i], l, k)
		}
		if want := float32(ints[i]) * unit; levels[i] != want {
			t.Errorf("%d levels: [%d] = %g, want %g", len(lm), i, levels[i], want)
		}
	}
	r, _ := rounded(u)
	got := gaussianMSE(r)
	if math.Abs(got-mse) > 1e-7 {
		t.Errorf("%d levels: the integer levels' MSE = %.7f, the documented value is %.7f", len(lm), got, mse)
	}
	for k := -200; k <= 200; k++ {
		v := u * (1 + float64(k)*1e-4)
		if r, ok := rounded(v); ok && gaussianMSE(r) < got-1e-12 {
			t.Errorf("%d levels: unit %.9g gives MSE %.8f below the codec's %.8f", len(lm), v, gaussianMSE(r), got)
			break
		}
	}
}

// TestTurboNormCorrection: the stored scale is the least-squares fit, so a turbo row's
// reconstruction is never farther from y than the plain norm-matched scale would put it.
func TestTurboNormCorrection(t *testing.T) {
	for _, f := range []Format{Turbo2, Turbo3, Turbo4} {
		c := newLMCodec(f, 128)
		var eLS, eNorm float64
		for _, y := range gaussRows(11, 64, 128) {
			row := make([]byte, c.RowBytes())
			c.Encode(row, y)
			x := make([]float32, 128)
			c.Decode(x, row)
			lv := make([]float32, 128)
			c.levelsOf(lv, row[:c.nb])
			var ss, ll float64
			for i := range y {
				ss += sq(float64(y[i]))
				ll += sq(float64(lv[i]))
			}
			sn := math.Sqrt(ss / ll) // the scale that matches the norm
			for i := range y {
				eLS += sq(float64(x[i] - y[i]))
				eNorm += sq(sn*float64(lv[i]) - float64(y[i]))
			}
		}
		if eLS > eNorm {
			t.Errorf("%s: least-squares scale error %g > norm-matched %g", f, eLS, eNorm)
		}
	}
}

func FuzzTurboDecodeRows(f *testing.F) {
	f.Add(uint8(2), uint8(16), uint8(0), make([]byte, 6))
	f.Add(uint8(3), uint8(9), uint8(3), []byte{0xff, 0x0f, 0xf0, 0x12, 0x34, 0xff, 0xff, 0x7f, 0xff})
	f.Add(uint8(4), uint8(64), uint8(1), make([]byte, 68))
	f.Add(uint8(3), uint8(64), uint8(1), []byte{0x7c, 0x00, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, bits, dim, head uint8, src []byte) {
		fm := []Format{Turbo2, Turbo3, Turbo4}[int(bits)%3]
		d := int(dim)
		c, err := NewCodec(fm, d, CodecOptions{Seed: 1, Head: int(head)})
		if err != nil {
			if d >= MinDim {
				t.Fatalf("%s d=%d: %v", fm, d, err)
			}
			return
		}
		fuzzRows(t, c, src)
	})
}

func FuzzRotatedDecodeRows(f *testing.F) {
	f.Add(uint8(1), uint8(40), make([]byte, 44))
	f.Add(uint8(3), uint8(64), []byte{0x00, 0x7c, 0xff, 0xff, 0x12})
	f.Fuzz(func(t *testing.T, which, dim uint8, src []byte) {
		fm := []Format{Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, FP8}[int(which)%7]
		d := int(dim)
		c, err := NewCodec(fm, d, CodecOptions{Seed: 2, Rotate: true})
		if err != nil {
			if d >= MinDim {
				t.Fatalf("%s d=%d: %v", fm, d, err)
			}
			return
		}
		fuzzRows(t, c, src)
	})
}

// BenchmarkEncodeRotated measures the write cost of one 128-value row per format, unrotated
// ("-r") against rotated (rotation, per-channel scales and offsets, and q4_0/q5_0's scale
// search).
func BenchmarkEncodeRotated(b *testing.B) {
	rows := gaussRows(3, 64, 128)
	flat := make([]float32, 0, 64*128)
	for _, r := range rows {
		flat = append(flat, r...)
	}
	for _, f := range []Format{Q8_0, Q4_0, Q5_0, IQ4_NL, TQ4, Turbo4, Turbo3} {
		for _, rot := range []bool{false, true} {
			if !f.Rotatable() && !rot {
				continue
			}
			b.Run(halfName(f, !rot), func(b *testing.B) {
				c, err := NewCodec(f, 128, CodecOptions{Seed: 1, Rotate: rot})
				if err != nil {
					b.Fatal(err)
				}
				if cal, ok := c.(Calibrator); ok {
					cal.Calibrate(flat, 64)
				}
				dst := make([]byte, c.RowBytes())
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c.Encode(dst, rows[i%64])
				}
			})
		}
	}
}

func TestNearestMatchesCount(t *testing.T) {
	for _, f := range []Format{Turbo2, Turbo3, Turbo4} {
		c := newLMCodec(f, 8)
		for i := -4000; i <= 4000; i++ {
			v := float32(i) / 1000
			var want uint8
			for _, m := range c.mids {
				want += b2u(v >= m)
			}
			if got := nearest(v, c.mids); got != want {
				t.Fatalf("%s: nearest(%g) = %d, want %d", f, v, got, want)
			}
		}
		if nearest(float32(math.NaN()), c.mids) != 0 {
			t.Errorf("%s: NaN", f)
		}
	}
}

// rowsSqErr is the total squared error of encoding rows with c.
func rowsSqErr(c Codec, rows [][]float32) float64 {
	buf := make([]byte, c.RowBytes())
	dec := make([]float32, c.Dim())
	var e float64
	for _, r := range rows {
		c.Encode(buf, r)
		c.Decode(dec, buf)
		for j, v := range r {
			e += sq(float64(v) - float64(dec[j]))
		}
	}
	return e
}

// TestChooseRotation: a rotated store's chosen rotation (the base, an alternate or the
// identity) encodes the rows it was chosen on with no more error than the base rotation or
// ggml's unrotated quantizer, and the codec stays consistent (Dot, Accumulate, Decode) with it.
func TestChooseRotation(t *testing.T) {
	for _, f := range []Format{Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1} {
		for _, n := range []int{1, 3, 40} {
			t.Run(fmt.Sprintf("%s/n%d", f, n), func(t *testing.T) {
				const d = 64
				rows := gaussRows(uint64(31*n)+uint64(f), n, d)
				flat := make([]float32, 0, n*d)
				for _, r := range rows {
					flat = append(flat, r...)
				}
				opt := CodecOptions{Seed: 3, Layer: 1, Head: 0}
				base := newRotated(t, f, d, opt)
				raw, err := NewCodec(f, d, CodecOptions{})
				if err != nil {
					t.Fatal(err)
				}
				c := newRotated(t, f, d, opt)
				c.(RotationChooser).ChooseRotation(flat, n)
				eb, er, ec := rowsSqErr(base, rows), rowsSqErr(raw, rows), rowsSqErr(c, rows)
				if ec > eb || ec > er {
					t.Fatalf("chosen error %g, base rotation %g, ggml's unrotated %g", ec, eb, er)
				}
				t.Logf("chosen %g (identity %v), base %g, unrotated %g", ec, IsIdentityRotation(c), eb, er)
				checkRowCodec(t, c, gaussRows(9, 8, d), 0.11)
			})
		}
	}
	// Rows on q4_0's grid are exact unrotated: the identity wins; turbo keeps its rotation.
	const d = 32
	x := make([]float32, d)
	for i := range x {
		x[i] = float32(i%16-8) * 0.25
	}
	c := newRotated(t, Q4_0, d, CodecOptions{})
	c.(RotationChooser).ChooseRotation(x, 1)
	if !IsIdentityRotation(c) || rowsSqErr(c, [][]float32{x}) != 0 {
		t.Errorf("grid row: identity %v, error %g", IsIdentityRotation(c), rowsSqErr(c, [][]float32{x}))
	}
	checkRowCodec(t, c, gaussRows(4, 8, d), 0.11)
	tc := newRotated(t, Turbo4, d, CodecOptions{})
	tc.(RotationChooser).ChooseRotation(x, 1)
	if IsIdentityRotation(tc) {
		t.Error("turbo4 chose the identity")
	}
}

func TestNameAtVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    int
		want string
	}{
		{"q4_0", FormatsUnrotated, "q4_0-r"},
		{"q8_0/q4_0", FormatsUnrotated, "q8_0-r/q4_0-r"},
		{"f16/q4_0", FormatsUnrotated, "f16/q4_0-r"},
		{"q2k", FormatsUnrotated, "q2k-r"},
		{"q2k/q8_0", FormatsUnrotated, "q2k-r/q8_0-r"},
		{"q2k", FormatsRotated, "q2k-r/q4_0"},
		{"q2k", FormatsIntegerLevels, "q2k-r/q4_0"},
		{"q2k/q4_0-r", FormatsIntegerLevels, "q2k-r"},
		{"q2k", FormatVersion, "q2k"},
		{"tq4", FormatsUnrotated, "tq4"},
		{"f16", FormatsUnrotated, "f16"},
		{"bogus", FormatsUnrotated, "bogus"},
		{"q4_0", FormatsRotated, "q4_0"},
		{"q4_0", FormatVersion, "q4_0"},
	} {
		if got := NameAtVersion(tc.name, tc.v); got != tc.want {
			t.Errorf("NameAtVersion(%q, %d) = %q, want %q", tc.name, tc.v, got, tc.want)
		}
	}
	p, _ := ParsePair("q8_0/q4_0")
	if b := p.PairBitsPerValue(128, 128); b != 6.5 {
		t.Errorf("q8_0/q4_0: %g bits/value, want 6.5", b)
	}
}

// TestZeroMeansNoOffsets: calibration rows whose channel means are all unstable (ChannelMeans
// gives 0 everywhere) leave no offset pass (muR nil), and the scores still match Dot.
func TestZeroMeansNoOffsets(t *testing.T) {
	const d, n = 64, 64
	rows := make([]float32, n*d)
	for i := range rows {
		rows[i] = float32(i%d%5 + 1)
		if i/d >= n/2 {
			rows[i] = -rows[i] // the halves' means differ in sign: unstable
		}
	}
	for _, f := range []Format{Q4_0, Turbo4} {
		c, err := NewCodec(f, d, CodecOptions{Seed: 3, Rotate: true})
		if err != nil {
			t.Fatal(err)
		}
		c.(Calibrator).Calibrate(rows, n)
		r := c.(*rotCodec)
		if r.mu == nil || r.muR != nil {
			t.Fatalf("%s: μ %v, muR %v: want zero offsets kept, no offset pass", f, r.mu, r.muR)
		}
		row := make([]byte, c.RowBytes())
		c.Encode(row, rows[:d])
		q := make([]float32, d)
		c.PrepareQuery(q, rows[d:2*d])
		if got, want := c.Dot(q, row), c.(*rotCodec).inner.Dot(q, row); got != want {
			t.Errorf("%s: Dot %g, inner Dot %g", f, got, want)
		}
	}
}

// TestEncodeRowsIsEncode: EncodeRows writes the bytes Encode writes row by row, for every format,
// rotated (calibrated or not, with the rotation ChooseRotation kept or the identity) and not, at
// a head dimension with and without a short last block, never past the rows. A scratch row
// carried from one row into the next (an offset or scale applied twice, a row read at the wrong
// place) differs here.
func TestEncodeRowsIsEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	const n = 5
	for _, f := range Formats() {
		for _, d := range []int{64, 80} {
			for _, rotate := range []bool{false, true} {
				for _, state := range []string{"plain", "calibrated", "identity"} {
					c, err := NewCodec(f, d, CodecOptions{Seed: 3, Rotate: rotate})
					if err != nil {
						continue // a grouped format, or one that does not take this dimension
					}
					rows := make([]float32, n*d)
					for i := range rows {
						rows[i] = float32(r.NormFloat64()) * float32(1+i%d%5)
					}
					switch state {
					case "calibrated":
						cal, ok := c.(Calibrator)
						if !ok {
							continue
						}
						cal.Calibrate(rows, n)
					case "identity":
						// Integers up to ±127 with 127 in every block: q8_0 stores them unrotated
						// exactly, so ChooseRotation keeps the identity for it.
						ch, ok := c.(RotationChooser)
						if !ok {
							continue
						}
						for i := range rows {
							rows[i] = float32((i*37)%255 - 127)
							if i%32 == 0 {
								rows[i] = 127
							}
						}
						ch.ChooseRotation(rows, n)
						if f == Q8_0 && !IsIdentityRotation(c) {
							t.Fatalf("d=%d: ChooseRotation kept a rotation for rows q8_0 stores exactly", d)
						}
					}
					rb := c.RowBytes()
					want := make([]byte, n*rb)
					for i := 0; i < n; i++ {
						c.Encode(want[i*rb:(i+1)*rb], rows[i*d:(i+1)*d])
					}
					got := make([]byte, n*rb+1)
					got[n*rb] = 0xa5
					EncodeRows(c, got[:n*rb], rows, n)
					if !bytes.Equal(got[:n*rb], want) {
						t.Fatalf("%s d=%d rotate %v %s: EncodeRows differs from Encode row by row", f, d, rotate, state)
					}
					if got[n*rb] != 0xa5 {
						t.Fatalf("%s d=%d rotate %v %s: EncodeRows wrote past the rows", f, d, rotate, state)
					}
				}
			}
		}
	}
}
