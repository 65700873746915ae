package ggml

import "math"

// F32ToF16 converts to IEEE 754 binary16 bits with round-to-nearest-even, as ggml's
// GGML_FP32_TO_FP16 does on hardware with F16C: overflow goes to ±Inf, NaN stays NaN, tiny
// values become subnormals or zero.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	case exp > 142: // ≥ 2^16: overflow
		return sign | 0x7c00
	case exp >= 113: // normal half
		h := uint32(exp-112)<<10 | mant>>13
		rest := mant & 0x1fff
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++ // may carry into the exponent, and up to Inf: both correct
		}
		return sign | uint16(h)
	case exp >= 102: // subnormal half
		m := mant | 0x800000
		shift := uint32(126 - exp) // 14..24
		h := m >> shift
		rest := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	return sign
}

// F16ToF32 converts IEEE 754 binary16 bits to float32 exactly.
func F16ToF32(h uint16) float32 { return HalfTable[h] }

// HalfTable maps every binary16 bit pattern to its float32 value (F16ToF32); read only. native/kvq's
// assembly reads it through its own pointer to the same table.
var HalfTable = func() *[65536]float32 {
	var t [65536]float32
	for i := range t {
		t[i] = f16ToF32Slow(uint16(i))
	}
	return &t
}()

func f16ToF32Slow(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// subnormal: normalize
	e := uint32(113)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// F32ToBF16 converts to bfloat16 bits with round-to-nearest-even (NaN stays NaN), as ggml does.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// BF16ToF32 converts bfloat16 bits to float32 exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
