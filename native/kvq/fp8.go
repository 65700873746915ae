package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
)

// FP8 row layout (seed 004, "KV8"): a row of d values is d e4m3 code bytes, code i holding
// element i, followed by one float32 scale, little-endian, at bytes [d, d+4). The stored value of
// element i is fp8E4M3Table[code_i] × scale.
//
// e4m3 is the OCP "E4M3FN" encoding: 1 sign bit, 4 exponent bits with bias 7, 3 mantissa bits,
// subnormals (exponent field 0: m·2^-9), no infinities; 0x7f and 0xff are NaN, so the largest
// finite magnitude is 0x7e = 1.75·2^8 = 448.
//
// Encoding a row: scale = amax/448 in float32, amax the largest finite |x| of the row. Each x is
// divided by scale (the exact quotient, computed in float64, is rounded once) and rounded to the
// nearest e4m3 value, ties to the even code, saturating at ±448; a NaN input stores the NaN code
// of its sign and ±Inf stores ±448. A row whose scale is 0 (all zeros, nothing finite but zeros,
// or amax below about 3e-43 so that amax/448 underflows) stores scale 0 and zero codes.
//
// Error bound per element, for a finite row: |x̂ − x| ≤ 2^-4·|x| (plus a float32 rounding of the
// final product, ≤ 2^-24·|x̂|) when |x|/scale ≥ 2^-6 (the normal range), and |x̂ − x| ≤ scale·2^-10
// below it, where the subnormal spacing is 2^-9. The bound assumes a normal float32 scale
// (amax ≥ 448·2^-126 ≈ 5.3e-36); below that the scale itself carries up to 2^-150 of absolute
// rounding, so every element may be off by up to 448·2^-150 more.
const (
	fp8MaxFinite     = 448
	fp8NaN           = 0x7f
	fp8MinNormalBits = 0x3f90000000000000 // float64 bits of 2^-6
	fp8MaxBits       = 0x407c000000000000 // float64 bits of 448
)

// fp8E4M3Table maps every e4m3 code to its value (NaN for 0x7f and 0xff).
var fp8E4M3Table = func() *[256]float32 {
	var t [256]float32
	for c := 0; c < 256; c++ {
		e, m := (c>>3)&0xf, c&7
		var v float64
		switch {
		case c&0x7f == fp8NaN:
			v = math.NaN()
		case e == 0:
			v = math.Ldexp(float64(m), -9)
		default:
			v = math.Ldexp(1+float64(m)/8, e-7)
		}
		if c&0x80 != 0 {
			v = -v
		}
		t[c] = float32(v)
	}
	return &t
}()

// FP8E4M3ToF32 returns the value of one e4m3 code (NaN for 0x7f and 0xff).
func FP8E4M3ToF32(c uint8) float32 { return fp8E4M3Table[c] }

// F64ToFP8E4M3 rounds v to the nearest e4m3 code, ties to the even code (the code whose mantissa's
// last bit is 0), saturating at ±448. NaN maps to the NaN code of its sign; ±0 to 0x00/0x80.
func F64ToFP8E4M3(v float64) uint8 {
	bits := math.Float64bits(v)
	sign := uint8(bits>>56) & 0x80
	a := math.Abs(v)
	switch {
	case a != a:
		return sign | fp8NaN
	case a >= fp8MaxFinite:
		return sign | 0x7e
	case a < 1.0/64: // subnormal range: spacing 2^-9; 8·2^-9 rounds up into the first normal code
		return sign | uint8(math.RoundToEven(a*512))
	}
	return sign | fp8RoundNormal(math.Float64bits(a))
}

// fp8RoundNormal returns the e4m3 code of the magnitude whose float64 bits are a, for
// 2^-6 ≤ magnitude < 448: it keeps the top 3 of the 52 mantissa bits with round-to-nearest-even
// on the bit pattern, a carry moving into the exponent (exactly the next binade); nothing below
// 448 rounds past 448 (0x7e).
func fp8RoundNormal(a uint64) uint8 {
	return uint8((a+(1<<48-1)+(a>>49)&1)>>49 - (1023-7)<<3)
}

type fp8Codec struct{ d int }

func init() {
	codecFactories[FP8] = func(d int, _ CodecOptions) (Codec, error) {
		if d < MinDim {
			return nil, fmt.Errorf("%w: fp8: head dimension %d is below the minimum %d", ErrUnsupported, d, MinDim)
		}
		return fp8Codec{d: d}, nil
	}
}

func (c fp8Codec) Format() Format { return FP8 }
func (c fp8Codec) Dim() int       { return c.d }
func (c fp8Codec) RowBytes() int  { return c.d + 4 }

// Encode stores src (Dim values) as one fp8 row in dst (RowBytes bytes); see the FP8 layout.
func (c fp8Codec) Encode(dst []byte, src []float32) {
	d := c.d
	dst, src = dst[:d+4], src[:d]
	var amax float32
	for _, x := range src {
		if a := float32(math.Abs(float64(x))); a > amax && a <= math.MaxFloat32 {
			amax = a
		}
	}
	scale := amax / fp8MaxFinite
	if scale == 0 {
		clear(dst)
		return
	}
	s := float64(scale)
	for i, x := range src {
		v := float64(x) / s
		b := math.Float64bits(v)
		if a := b &^ (1 << 63); a >= fp8MinNormalBits && a < fp8MaxBits {
			dst[i] = uint8(b>>56)&0x80 | fp8RoundNormal(a) // F64ToFP8E4M3's normal case, inlined
		} else {
			dst[i] = F64ToFP8E4M3(v)
		}
	}
	binary.LittleEndian.PutUint32(dst[d:], math.Float32bits(scale))
}

func (c fp8Codec) scale(row []byte) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(row[c.d : c.d+4]))
}

// Decode writes dst[i] = e4m3(code_i) × scale, rounded to float32.
func (c fp8Codec) Decode(dst []float32, row []byte) {
	d := c.d
	s := c.scale(row)
	codes, dst := row[:d], dst[:d]
	for i, b := range codes {
		dst[i] = fp8E4M3Table[b] * s
	}
}

// PrepareQuery copies q: fp8 rows are stored in the value domain.
func (c fp8Codec) PrepareQuery(dst, q []float32) { copy(dst[:c.d], q[:c.d]) }

// FinishAccumulate copies acc: fp8 rows are stored in the value domain.
func (c fp8Codec) FinishAccumulate(dst, acc []float32) { copy(dst[:c.d], acc[:c.d]) }

// Dot returns scale × Σ_i q[i]·e4m3(code_i), summed in float32 in four interleaved partial sums.
// It differs from Σ q[i]·Decode(row)[i] only by float32 rounding: at most about
// (d/4 + 3)·2^-24 × Σ|q[i]·x̂[i]|.
func (c fp8Codec) Dot(q []float32, row []byte) float32 {
	return fp8Dot(q[:c.d], row[:c.d]) * c.scale(row)
}

func fp8Dot(q []float32, codes []byte) float32 {
	t := fp8E4M3Table
	q = q[:len(codes)]
	var s0, s1, s2, s3 float32
	for len(codes) >= 32 {
		cb, x := (*[32]byte)(codes), (*[32]float32)(q)
		for i := 0; i < 8; i++ {
			s0 += x[4*i] * t[cb[4*i]]
			s1 += x[4*i+1] * t[cb[4*i+1]]
			s2 += x[4*i+2] * t[cb[4*i+2]]
			s3 += x[4*i+3] * t[cb[4*i+3]]
		}
		codes, q = codes[32:], q[32:]
	}
	for i, c := range codes {
		s0 += q[i] * t[c]
	}
	return (s0 + s1) + (s2 + s3)
}

// DotMany writes out[j] = Dot(q, row j) for the len(out) rows laid end to end in rows.
func (c fp8Codec) DotMany(q []float32, rows []byte, out []float32) {
	d, rb := c.d, c.d+4
	q = q[:d]
	rows = rows[:len(out)*rb]
	for j := range out {
		row := rows[j*rb : (j+1)*rb]
		out[j] = fp8Dot(q, row[:d]) * math.Float32frombits(binary.LittleEndian.Uint32(row[d:]))
	}
}

// AccumulateScaled adds (w·scale)·e4m3(code_i) to acc[i]. It differs from acc[i] += w·x̂[i] by
// float32 rounding only (the product w·scale is rounded once per row).
func (c fp8Codec) AccumulateScaled(acc []float32, w float32, row []byte) {
	fp8Axpy(acc[:c.d], w*c.scale(row), row[:c.d])
}

func fp8Axpy(acc []float32, ws float32, codes []byte) {
	t := fp8E4M3Table
	acc = acc[:len(codes)]
	for len(codes) >= 32 {
		cb, a := (*[32]byte)(codes), (*[32]float32)(acc)
		for i := range cb {
			a[i] += ws * t[cb[i]]
		}
		codes, acc = codes[32:], acc[32:]
	}
	for i, b := range codes {
		acc[i] += ws * t[b]
	}
}

// AccumulateMany adds Σ_j w[j]·x̂_j for the len(w) rows laid end to end in rows, in row order.
func (c fp8Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	d, rb := c.d, c.d+4
	acc = acc[:d]
	rows = rows[:len(w)*rb]
	for j, wj := range w {
		row := rows[j*rb : (j+1)*rb]
		fp8Axpy(acc, wj*math.Float32frombits(binary.LittleEndian.Uint32(row[d:])), row[:d])
	}
}
