package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The plain formats store every value on its own, little-endian, value i at bytes
// [w·i, w·(i+1)) of the row, w the value's width in bytes:
//
//	f32   w = 4  IEEE binary32 bits, exact
//	f16   w = 2  IEEE binary16 bits, F32ToF16 (round to nearest even; |x̂−x| ≤ 2⁻¹¹·|x| for
//	             2⁻¹⁴ ≤ |x| ≤ 65504, ≤ 2⁻²⁵ below; larger values become ±Inf)
//	bf16  w = 2  bfloat16 bits, F32ToBF16 (round to nearest even; |x̂−x| ≤ 2⁻⁸·|x| for normal x)
//
// These are ggml's f32, f16 and bf16 rows (GGML_FP32_TO_FP16 and GGML_FP32_TO_BF16), except
// that a NaN keeps its payload where ggml canonicalizes it.
//
// Reference semantics: Dot is Σ q[i]·x[i] computed in float64 (every product exact) and rounded
// once to float32, and AccumulateScaled is acc[i] += w·x[i] with the product and the sum each rounded
// to float32. The fast paths:
//
//	DotMany          four float32 partial sums over each chunk of 32 values, the chunk sums
//	                 and the short tail added in float32: |DotMany − Dot| ≤ (d/32 + 43)·2⁻²⁴·Σ|q[i]·x[i]|,
//	                 which is ≤ 1e-5·Σ|q[i]·x[i]| for rows of up to 1024 values
//	AccumulateMany   bit-identical to a loop of AccumulateScaled

// plainCodec holds what the f32, f16 and bf16 codecs share: the format and the row length.
type plainCodec struct {
	f     Format
	d, rb int
}

func (c *plainCodec) Format() Format { return c.f }
func (c *plainCodec) Dim() int       { return c.d }
func (c *plainCodec) RowBytes() int  { return c.rb }

// PrepareQuery copies q: plain rows are stored in the value domain.
func (c *plainCodec) PrepareQuery(dst, q []float32) { copy(dst[:c.d], q[:c.d]) }

// FinishAccumulate copies acc: plain rows are stored in the value domain.
func (c *plainCodec) FinishAccumulate(dst, acc []float32) { copy(dst[:c.d], acc[:c.d]) }

func newPlainCodec(f Format, d int) (plainCodec, error) {
	if d < MinDim {
		return plainCodec{}, fmt.Errorf("%w: %s: head dimension %d is below the minimum %d", ErrUnsupported, f, d, MinDim)
	}
	return plainCodec{f: f, d: d, rb: f.RowBytes(d)}, nil
}

func init() {
	codecFactories[F32] = func(d int, _ CodecOptions) (Codec, error) {
		c, err := newPlainCodec(F32, d)
		if err != nil {
			return nil, err
		}
		return &f32Codec{c}, nil
	}
	codecFactories[F16] = func(d int, _ CodecOptions) (Codec, error) {
		c, err := newPlainCodec(F16, d)
		if err != nil {
			return nil, err
		}
		return &f16Codec{c}, nil
	}
	codecFactories[BF16] = func(d int, _ CodecOptions) (Codec, error) {
		c, err := newPlainCodec(BF16, d)
		if err != nil {
			return nil, err
		}
		return &bf16Codec{c}, nil
	}
}

// ---- f32

// f32Codec is the F32 codec.
type f32Codec struct{ plainCodec }

func f32At(row []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
}

// Encode stores the bits of src (Dim values) in dst (4·Dim bytes).
func (c *f32Codec) Encode(dst []byte, src []float32) {
	dst, src = dst[:c.rb], src[:c.d]
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

// Decode writes the Dim stored values of row into dst.
func (c *f32Codec) Decode(dst []float32, row []byte) {
	dst, row = dst[:c.d], row[:c.rb]
	for i := range dst {
		dst[i] = f32At(row, i)
	}
}

// Dot is the reference Σ q[i]·x[i], computed in float64 (every product exact), rounded once.
func (c *f32Codec) Dot(q []float32, row []byte) float32 {
	q, row = q[:c.d], row[:c.rb]
	var s float64
	for i, v := range q {
		s += float64(v) * float64(f32At(row, i))
	}
	return float32(s)
}

// AccumulateScaled is the reference acc[i] += w·x[i], each operation rounded to float32.
func (c *f32Codec) AccumulateScaled(acc []float32, w float32, row []byte) {
	acc, row = acc[:c.d], row[:c.rb]
	for i := range acc {
		acc[i] += float32(w * f32At(row, i))
	}
}

// DotMany writes out[j] = Dot(q, row j) within the plain formats' DotMany bound.
func (c *f32Codec) DotMany(q []float32, rows []byte, out []float32) {
	d, rb := c.d, c.rb
	q = q[:d]
	rows = rows[:len(out)*rb]
	for j := range out {
		out[j] = f32DotRow(q, rows[j*rb:(j+1)*rb])
	}
}

// f32DotRow is Σ q[i]·x[i] over one f32 row: four float32 partial sums within each chunk of 32
// values, the chunk sums added in order.
func f32DotRow(q []float32, row []byte) float32 {
	var s float32
	n := len(q)
	i := 0
	for ; i+32 <= n; i += 32 {
		qq := (*[32]float32)(q[i:])
		r := (*[128]byte)(row[4*i:])
		var s0, s1, s2, s3 float32
		for k := 0; k < 32; k += 4 {
			s0 += qq[k] * math.Float32frombits(binary.LittleEndian.Uint32(r[4*k:]))
			s1 += qq[k+1] * math.Float32frombits(binary.LittleEndian.Uint32(r[4*k+4:]))
			s2 += qq[k+2] * math.Float32frombits(binary.LittleEndian.Uint32(r[4*k+8:]))
			s3 += qq[k+3] * math.Float32frombits(binary.LittleEndian.Uint32(r[4*k+12:]))
		}
		s += (s0 + s1) + (s2 + s3)
	}
	for ; i < n; i++ {
		s += q[i] * f32At(row, i)
	}
	return s
}

// AccumulateMany adds Σ_j w[j]·x_j to acc, bit-identical to a loop of AccumulateScaled.
func (c *f32Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	d, rb := c.d, c.rb
	acc = acc[:d]
	rows = rows[:len(w)*rb]
	for j, wj := range w {
		row := rows[j*rb : (j+1)*rb]
		i := 0
		for ; i+4 <= d; i += 4 {
			a := (*[4]float32)(acc[i:])
			r := (*[16]byte)(row[4*i:])
			a[0] += float32(wj * math.Float32frombits(binary.LittleEndian.Uint32(r[0:])))
			a[1] += float32(wj * math.Float32frombits(binary.LittleEndian.Uint32(r[4:])))
			a[2] += float32(wj * math.Float32frombits(binary.LittleEndian.Uint32(r[8:])))
			a[3] += float32(wj * math.Float32frombits(binary.LittleEndian.Uint32(r[12:])))
		}
		for ; i < d; i++ {
			acc[i] += float32(wj * f32At(row, i))
		}
	}
}

// ---- f16

// f16Codec is the F16 codec; values widen through F16ToF32's table.
type f16Codec struct{ plainCodec }

func f16At(row []byte, i int) float32 {
	return f16Table[binary.LittleEndian.Uint16(row[2*i:])]
}

// Encode stores src (Dim values) in dst (2·Dim bytes) with F32ToF16 (f32ToF16Row: F16C where
// the CPU has it, the same bits).
func (c *f16Codec) Encode(dst []byte, src []float32) {
	f32ToF16Row(dst[:c.rb], src[:c.d])
}

// f32ToF16Go writes F32ToF16 of every value of src into dst, little-endian.
func f32ToF16Go(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
	}
}

// Decode writes the Dim stored values of row into dst.
func (c *f16Codec) Decode(dst []float32, row []byte) {
	f16ToF32Row(dst[:c.d], row[:c.rb])
}

// f16ToF32Go writes F16ToF32 of every binary16 of src (2·len(dst) bytes) into dst.
func f16ToF32Go(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = f16At(src, i)
	}
}

// Dot is the reference Σ q[i]·x[i], computed in float64 (every product exact), rounded once.
func (c *f16Codec) Dot(q []float32, row []byte) float32 {
	q, row = q[:c.d], row[:c.rb]
	var s float64
	for i, v := range q {
		s += float64(v) * float64(f16At(row, i))
	}
	return float32(s)
}

// AccumulateScaled is the reference acc[i] += w·x[i], each operation rounded to float32.
func (c *f16Codec) AccumulateScaled(acc []float32, w float32, row []byte) {
	acc, row = acc[:c.d], row[:c.rb]
	for i := range acc {
		acc[i] += float32(w * f16At(row, i))
	}
}

// DotMany writes out[j] = Dot(q, row j) within the plain formats' DotMany bound. Values are
// widened through F16ToF32's 64 Ki-entry table.
func (c *f16Codec) DotMany(q []float32, rows []byte, out []float32) {
	d, rb := c.d, c.rb
	q = q[:d]
	rows = rows[:len(out)*rb]
	for j := range out {
		out[j] = f16DotRow(q, rows[j*rb:(j+1)*rb])
	}
}

// f16DotRow is Σ q[i]·x[i] over one f16 row, summed as f32DotRow does.
func f16DotRow(q []float32, row []byte) float32 {
	t := f16Table
	var s float32
	n := len(q)
	i := 0
	for ; i+32 <= n; i += 32 {
		qq := (*[32]float32)(q[i:])
		r := (*[64]byte)(row[2*i:])
		var s0, s1, s2, s3 float32
		for k := 0; k < 32; k += 4 {
			s0 += qq[k] * t[binary.LittleEndian.Uint16(r[2*k:])]
			s1 += qq[k+1] * t[binary.LittleEndian.Uint16(r[2*k+2:])]
			s2 += qq[k+2] * t[binary.LittleEndian.Uint16(r[2*k+4:])]
			s3 += qq[k+3] * t[binary.LittleEndian.Uint16(r[2*k+6:])]
		}
		s += (s0 + s1) + (s2 + s3)
	}
	for ; i+8 <= n; i += 8 {
		qq := (*[8]float32)(q[i:])
		r := (*[16]byte)(row[2*i:])
		s += ((qq[0]*t[binary.LittleEndian.Uint16(r[0:])] + qq[1]*t[binary.LittleEndian.Uint16(r[2:])]) +
			(qq[2]*t[binary.LittleEndian.Uint16(r[4:])] + qq[3]*t[binary.LittleEndian.Uint16(r[6:])])) +
			((qq[4]*t[binary.LittleEndian.Uint16(r[8:])] + qq[5]*t[binary.LittleEndian.Uint16(r[10:])]) +
				(qq[6]*t[binary.LittleEndian.Uint16(r[12:])] + qq[7]*t[binary.LittleEndian.Uint16(r[14:])]))
	}
	for ; i < n; i++ {
		s += q[i] * f16At(row, i)
	}
	return s
}

// AccumulateMany adds Σ_j w[j]·x_j to acc, bit-identical to a loop of AccumulateScaled.
func (c *f16Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	d, rb := c.d, c.rb
	acc = acc[:d]
	rows = rows[:len(w)*rb]
	t := f16Table
	i := 0
	for ; i+8 <= d; i += 8 {
		a := (*[8]float32)(acc[i:])
		a0, a1, a2, a3, a4, a5, a6, a7 := a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
		for j, wj := range w {
			r := (*[16]byte)(rows[j*rb+2*i:])
			a0 += float32(wj * t[binary.LittleEndian.Uint16(r[0:])])
			a1 += float32(wj * t[binary.LittleEndian.Uint16(r[2:])])
			a2 += float32(wj * t[binary.LittleEndian.Uint16(r[4:])])
			a3 += float32(wj * t[binary.LittleEndian.Uint16(r[6:])])
			a4 += float32(wj * t[binary.LittleEndian.Uint16(r[8:])])
			a5 += float32(wj * t[binary.LittleEndian.Uint16(r[10:])])
			a6 += float32(wj * t[binary.LittleEndian.Uint16(r[12:])])
			a7 += float32(wj * t[binary.LittleEndian.Uint16(r[14:])])
		}
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7] = a0, a1, a2, a3, a4, a5, a6, a7
	}
	for ; i < d; i++ {
		for j, wj := range w {
			acc[i] += float32(wj * f16At(rows[j*rb:], i))
		}
	}
}

// ---- bf16

// bf16Codec is the BF16 codec.
type bf16Codec struct{ plainCodec }

func bf16At(row []byte, i int) float32 {
	return math.Float32frombits(uint32(binary.LittleEndian.Uint16(row[2*i:])) << 16)
}

// Encode stores src (Dim values) in dst (2·Dim bytes) with F32ToBF16.
func (c *bf16Codec) Encode(dst []byte, src []float32) {
	dst, src = dst[:c.rb], src[:c.d]
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
	}
}

// Decode writes the Dim stored values of row into dst.
func (c *bf16Codec) Decode(dst []float32, row []byte) {
	dst, row = dst[:c.d], row[:c.rb]
	for i := range dst {
		dst[i] = bf16At(row, i)
	}
}

// Dot is the reference Σ q[i]·x[i], computed in float64 (every product exact), rounded once.
func (c *bf16Codec) Dot(q []float32, row []byte) float32 {
	q, row = q[:c.d], row[:c.rb]
	var s float64
	for i, v := range q {
		s += float64(v) * float64(bf16At(row, i))
	}
	return float32(s)
}

// AccumulateScaled is the reference acc[i] += w·x[i], each operation rounded to float32.
func (c *bf16Codec) AccumulateScaled(acc []float32, w float32, row []byte) {
	acc, row = acc[:c.d], row[:c.rb]
	for i := range acc {
		acc[i] += float32(w * bf16At(row, i))
	}
}

// DotMany writes out[j] = Dot(q, row j) within the plain formats' DotMany bound.
func (c *bf16Codec) DotMany(q []float32, rows []byte, out []float32) {
	d, rb := c.d, c.rb
	q = q[:d]
	rows = rows[:len(out)*rb]
	for j := range out {
		out[j] = bf16DotRow(q, rows[j*rb:(j+1)*rb])
	}
}

// bf16DotRow is Σ q[i]·x[i] over one bf16 row, summed as f32DotRow does.
func bf16DotRow(q []float32, row []byte) float32 {
	var s float32
	n := len(q)
	i := 0
	for ; i+32 <= n; i += 32 {
		qq := (*[32]float32)(q[i:])
		r := (*[64]byte)(row[2*i:])
		var s0, s1, s2, s3 float32
		for k := 0; k < 32; k += 4 {
			s0 += qq[k] * math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[2*k:]))<<16)
			s1 += qq[k+1] * math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[2*k+2:]))<<16)
			s2 += qq[k+2] * math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[2*k+4:]))<<16)
			s3 += qq[k+3] * math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[2*k+6:]))<<16)
		}
		s += (s0 + s1) + (s2 + s3)
	}
	for ; i < n; i++ {
		s += q[i] * bf16At(row, i)
	}
	return s
}

// AccumulateMany adds Σ_j w[j]·x_j to acc, bit-identical to a loop of AccumulateScaled.
func (c *bf16Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	d, rb := c.d, c.rb
	acc = acc[:d]
	rows = rows[:len(w)*rb]
	for j, wj := range w {
		row := rows[j*rb : (j+1)*rb]
		i := 0
		for ; i+4 <= d; i += 4 {
			a := (*[4]float32)(acc[i:])
			r := (*[8]byte)(row[2*i:])
			a[0] += float32(wj * math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[0:]))<<16))
			a[1] += float32(wj * math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[2:]))<<16))
			a[2] += float32(wj * math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[4:]))<<16))
			a[3] += float32(wj * math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[6:]))<<16))
		}
		for ; i < d; i++ {
			acc[i] += float32(wj * bf16At(row, i))
		}
	}
}
