package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The turbo tiers (turbo2, turbo3, turbo4): the TurboQuant-style rotated Lloyd–Max formats. A row
// of d values is stored through the codec's rotation (rotate.go: per-channel K scales λ, then the
// randomized Hadamard rotation R, y = R·(x/λ)) as b-bit codes of the 2^b-level Lloyd–Max
// quantizer of N(0,1) (turboLevels) and one f16 scale s per row:
//
//	codes  ⌈b·d/8⌉ bytes: a little-endian bit stream, code i in bits b·i … b·i+b−1
//	       (turbo4: code 2j in the low nibble of byte j, 2j+1 in the high one, as tq4)
//	s      f16, little-endian
//
// The stored rotated value is ŷ_i = s·L[c_i]. Encoding starts from s₀ = ‖y‖/√d (the per-row
// norm, under which a rotated row's coordinates are close to N(0,1)), then corrects the norm:
// three rounds of nearest codes for s and the least-squares scale s = Σ y_i·L[c_i] / Σ L[c_i]²
// for those codes, then s rounded to f16 and the codes nearest it. The correction makes the
// stored row the least-squares fit of y on its codes, rather than matching its norm, which a
// Lloyd–Max quantizer's shrunken levels would otherwise bias low. A row whose s is 0 or
// underflows f16 stores zeros; s saturates at the largest finite f16.
//
// Bytes per row: ⌈b·d/8⌉ + 2 (d = 64: 18, 26, 34 bytes; 2.25, 3.25, 4.25 bits per value).
// Attention reads the codes directly: Dot is s·Σ q'_i·L[c_i] with q' the prepared (rotated)
// query, AccumulateScaled adds w·s·L[c_i] in the rotated domain, and FinishAccumulate rotates the
// sum back once.

// Turbo formats are declared with the other formats in kvq.go.

// turboLevels2/3 are the 4- and 8-level quantizers of N(0,1): the Lloyd–Max levels rounded to
// integer multiples of one unit as tq4's are (turboInts2·turboUnit2, MSE 0.1174819 where
// Lloyd–Max has 0.1174818; turboInts3·turboUnit3, MSE 0.0345486 where it has 0.0345478), so
// that the VNNI kernels look them up as signed bytes. turbo4 uses tq4Levels (MSE 0.0095062).
// TestTurboCodebooks re-derives them.
var turboLevels2 = func() (l [4]float32) {
	for k, v := range turboInts2 {
		l[k] = float32(v) * turboUnit2
	}
	return l
}()

// turboInts2 are turbo2's levels in units of turboUnit2.
var turboInts2 = [4]int8{-90, -27, 27, 90}

// turboUnit2 is the value of one step of turboInts2.
const turboUnit2 = float32(0.01678167)

var turboLevels3 = func() (l [8]float32) {
	for k, v := range turboInts3 {
		l[k] = float32(v) * turboUnit3
	}
	return l
}()

// turboInts3 are turbo3's levels in units of turboUnit3.
var turboInts3 = [8]int8{-88, -55, -31, -10, 10, 31, 55, 88}

// turboUnit3 is the value of one step of turboInts3.
const turboUnit3 = float32(0.02444615)

// turbo reports whether f is one of the turbo tiers.
func (f Format) turbo() bool { return f == Turbo2 || f == Turbo3 || f == Turbo4 }

// turboBits is the code width of a turbo tier.
func (f Format) turboBits() int {
	switch f {
	case Turbo2:
		return 2
	case Turbo3:
		return 3
	case Turbo4:
		return 4
	}
	return 0
}

func turboRowBytes(bits, d int) int { return (bits*d+7)/8 + 2 }

// lmCodec is a turbo tier's codec on rotated rows (rotCodec supplies the rotation).
type lmCodec struct {
	f      Format
	bits   int
	d, nb  int // values; code bytes
	levels []float32
	mids   []float32 // decision thresholds, ascending
	// pairs4 / quads2 / trip3 decode a byte (turbo4, turbo2) or are nil.
	quads2 *[256][4]float32
}

var turboQuads2 = func() *[256][4]float32 {
	var t [256][4]float32
	for b := range t {
		for k := 0; k < 4; k++ {
			t[b][k] = turboLevels2[b>>(2*k)&3]
		}
	}
	return &t
}()

func init() {
	for _, f := range []Format{Turbo2, Turbo3, Turbo4} {
		codecFactories[f] = func(d int, opt CodecOptions) (Codec, error) {
			if d < MinDim {
				return nil, fmt.Errorf("%w: %s: head dimension %d is below the minimum %d", ErrUnsupported, f, d, MinDim)
			}
			return newRotCodec(newLMCodec(f, d), opt), nil
		}
	}
}

func newLMCodec(f Format, d int) *lmCodec {
	b := f.turboBits()
	c := &lmCodec{f: f, bits: b, d: d, nb: (b*d + 7) / 8}
	switch b {
	case 2:
		c.levels, c.quads2 = turboLevels2[:], turboQuads2
	case 3:
		c.levels = turboLevels3[:]
	case 4:
		c.levels = tq4Levels[:]
	}
	for i := 1; i < len(c.levels); i++ {
		c.mids = append(c.mids, (c.levels[i-1]+c.levels[i])/2)
	}
	return c
}

func (c *lmCodec) Format() Format { return c.f }
func (c *lmCodec) Dim() int       { return c.d }
func (c *lmCodec) RowBytes() int  { return c.nb + 2 }

// nearest is the index of the level nearest v/s given the 2^b − 1 scaled thresholds st
// (ascending): the number of thresholds at or below v, found by binary search. NaN reaches none.
func nearest(v float32, st []float32) uint8 {
	var k uint8
	for step := uint8(len(st)+1) >> 1; step > 0; step >>= 1 {
		k += step * b2u(v >= st[k+step-1])
	}
	return k
}

// Encode stores the rotated row y (see the turbo layout).
func (c *lmCodec) Encode(dst []byte, y []float32) {
	d, L := c.d, c.levels
	dst, y = dst[:c.nb+2], y[:d]
	clear(dst)
	var ss float64
	for _, v := range y {
		ss += float64(v) * float64(v)
	}
	s := math.Sqrt(ss / float64(d))
	if !(s > 0) || math.IsInf(s, 0) {
		return
	}
	var cbuf [tq4StackDim]uint8
	var codes []uint8
	if d <= tq4StackDim {
		codes = cbuf[:d]
	} else {
		codes = make([]uint8, d)
	}
	var st [15]float32
	pick := func(s float32) {
		for k, m := range c.mids {
			st[k] = s * m
		}
		for i, v := range y {
			codes[i] = nearest(v, st[:len(c.mids)])
		}
	}
	for it := 0; it < 3; it++ {
		pick(float32(s))
		var yl, ll float64
		for i, v := range y {
			l := float64(L[codes[i]])
			yl += float64(v) * l
			ll += l * l
		}
		if !(yl > 0) || ll == 0 {
			return
		}
		s = yl / ll
	}
	h := F32ToF16(float32(min(s, 65504)))
	if F16ToF32(h) == 0 {
		clear(dst)
		return
	}
	c.pack(dst, codes)
	binary.LittleEndian.PutUint16(dst[c.nb:], h)
}

// pack writes the codes as the layout's bit stream.
func (c *lmCodec) pack(dst []byte, codes []uint8) {
	b := uint(c.bits)
	var acc uint32
	var n uint
	j := 0
	for _, k := range codes {
		acc |= uint32(k) << n
		n += b
		for n >= 8 {
			dst[j] = byte(acc)
			acc >>= 8
			n -= 8
			j++
		}
	}
	if n > 0 {
		dst[j] = byte(acc)
	}
}

func (c *lmCodec) scale(row []byte) float32 {
	return F16ToF32(binary.LittleEndian.Uint16(row[c.nb : c.nb+2]))
}

// levelsOf writes L[c_i] (unscaled) for the row's codes into dst (Dim values).
func (c *lmCodec) levelsOf(dst []float32, codes []byte) {
	d := c.d
	dst = dst[:d]
	switch c.bits {
	case 4:
		t := tq4Pairs
		for j, b := range codes[:d/2] {
			p := &t[b]
			dst[2*j], dst[2*j+1] = p[0], p[1]
		}
		if d%2 == 1 {
			dst[d-1] = tq4Levels[codes[d/2]&15]
		}
	case 2:
		t := c.quads2
		i := 0
		for ; i+4 <= d; i += 4 {
			p := &t[codes[i/4]]
			dst[i], dst[i+1], dst[i+2], dst[i+3] = p[0], p[1], p[2], p[3]
		}
		for ; i < d; i++ {
			dst[i] = turboLevels2[codes[i/4]>>(2*(i%4))&3]
		}
	case 3:
		L := &turboLevels3
		i := 0
		for ; i+8 <= d; i += 8 {
			o := 3 * i / 8
			w := uint32(codes[o]) | uint32(codes[o+1])<<8 | uint32(codes[o+2])<<16
			v := (*[8]float32)(dst[i:])
			v[0], v[1], v[2], v[3] = L[w&7], L[w>>3&7], L[w>>6&7], L[w>>9&7]
			v[4], v[5], v[6], v[7] = L[w>>12&7], L[w>>15&7], L[w>>18&7], L[w>>21&7]
		}
		for ; i < d; i++ {
			bit := 3 * i
			w := uint32(codes[bit/8])
			if bit/8+1 < len(codes) {
				w |= uint32(codes[bit/8+1]) << 8
			}
			dst[i] = L[w>>(bit%8)&7]
		}
	}
}

// Decode writes ŷ = s·L[c] (the rotated domain; rotCodec rotates it back).
func (c *lmCodec) Decode(dst []float32, row []byte) {
	row = row[:c.nb+2]
	c.levelsOf(dst, row[:c.nb])
	s := c.scale(row)
	for i := range dst[:c.d] {
		dst[i] *= s
	}
}

func (c *lmCodec) PrepareQuery(dst, q []float32)       { copy(dst[:c.d], q[:c.d]) }
func (c *lmCodec) FinishAccumulate(dst, acc []float32) { copy(dst[:c.d], acc[:c.d]) }

// lmStackDim is the largest Dim whose level scratch lives on the stack in Dot and Accumulate.
const lmStackDim = 256

func (c *lmCodec) scratch(buf *[lmStackDim]float32) []float32 {
	if c.d <= lmStackDim {
		return buf[:c.d]
	}
	return make([]float32, c.d)
}

// Dot returns s·Σ q[i]·L[c_i] (four interleaved float32 partial sums); turbo4 uses tq4's kernel.
func (c *lmCodec) Dot(q []float32, row []byte) float32 {
	row = row[:c.nb+2]
	if c.bits == 4 {
		return tq4Dot(q[:c.d], row[:c.nb]) * c.scale(row)
	}
	var buf [lmStackDim]float32
	x := c.scratch(&buf)
	c.levelsOf(x, row[:c.nb])
	return lmDot(q[:c.d], x) * c.scale(row)
}

func lmDot(q, x []float32) float32 {
	x = x[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		s0 += q[i] * x[i]
		s1 += q[i+1] * x[i+1]
		s2 += q[i+2] * x[i+2]
		s3 += q[i+3] * x[i+3]
	}
	for ; i < len(q); i++ {
		s0 += q[i] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// DotMany writes out[j] = Dot(q, row j) for the len(out) rows laid end to end in rows.
func (c *lmCodec) DotMany(q []float32, rows []byte, out []float32) {
	rb := c.nb + 2
	rows = rows[:len(out)*rb]
	if c.bits == 4 {
		q = q[:c.d]
		for j := range out {
			row := rows[j*rb : (j+1)*rb]
			out[j] = tq4Dot(q, row[:c.nb]) * c.scale(row)
		}
		return
	}
	var buf [lmStackDim]float32
	x := c.scratch(&buf)
	for j := range out {
		row := rows[j*rb : (j+1)*rb]
		c.levelsOf(x, row[:c.nb])
		out[j] = lmDot(q[:c.d], x) * c.scale(row)
	}
}

// AccumulateScaled adds (w·s)·L[c_i] to acc[i] (the rotated domain).
func (c *lmCodec) AccumulateScaled(acc []float32, w float32, row []byte) {
	row = row[:c.nb+2]
	ws := w * c.scale(row)
	if c.bits == 4 {
		tq4Axpy(acc[:c.d], ws, row[:c.nb])
		return
	}
	var buf [lmStackDim]float32
	x := c.scratch(&buf)
	c.levelsOf(x, row[:c.nb])
	for i, v := range x {
		acc[i] += ws * v
	}
}

// AccumulateMany adds Σ_j w[j]·ŷ_j for the len(w) rows laid end to end in rows.
func (c *lmCodec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	rb := c.nb + 2
	rows = rows[:len(w)*rb]
	for j, wj := range w {
		c.AccumulateScaled(acc, wj, rows[j*rb:(j+1)*rb])
	}
}

// dotManyMultiGo is MultiQuery for the turbo tiers in Go: each row's levels are decoded once and
// dotted with every query (lmDot's four partial sums), so it agrees with Dot within float32
// summation-order rounding. DotManyMulti (multi_more.go) runs it where no kernel applies.
func (c *lmCodec) dotManyMultiGo(q []float32, n int, rows []byte, out []float32) {
	if n <= 0 {
		return
	}
	d, rb := c.d, c.nb+2
	m := len(out) / n
	q, rows = q[:n*d], rows[:m*rb]
	var buf [lmStackDim]float32
	x := c.scratch(&buf)
	for j := 0; j < m; j++ {
		row := rows[j*rb : (j+1)*rb]
		c.levelsOf(x, row[:c.nb])
		s := c.scale(row)
		o := out[j*n : (j+1)*n]
		for h := range o {
			o[h] = lmDot(q[h*d:(h+1)*d], x) * s
		}
	}
}

// accumulateManyMultiGo is MultiQuery for the turbo tiers in Go: each row's levels are decoded
// once and added to every accumulator with its weight times the row's scale.
// AccumulateManyMulti (multi_more.go) runs it where no kernel applies.
func (c *lmCodec) accumulateManyMultiGo(acc []float32, n int, w []float32, rows []byte) {
	if n <= 0 {
		return
	}
	d, rb := c.d, c.nb+2
	m := len(w) / n
	acc, rows = acc[:n*d], rows[:m*rb]
	var buf [lmStackDim]float32
	x := c.scratch(&buf)
	for j := 0; j < m; j++ {
		row := rows[j*rb : (j+1)*rb]
		c.levelsOf(x, row[:c.nb])
		s := c.scale(row)
		for h := 0; h < n; h++ {
			ws := w[j*n+h] * s
			if ws == 0 {
				continue
			}
			a := acc[h*d : (h+1)*d]
			for i, v := range x {
				a[i] += ws * v
			}
		}
	}
}

// turboLevels2x2 is turboLevels2 twice: the AVX2 turbo2 kernels' VPERMPS table (an index's low
// three bits: the code and one bit of the next).
var turboLevels2x2 = [8]float32{
	turboLevels2[0], turboLevels2[1], turboLevels2[2], turboLevels2[3],
	turboLevels2[0], turboLevels2[1], turboLevels2[2], turboLevels2[3],
}
