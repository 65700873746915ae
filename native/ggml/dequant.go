package ggml

import (
	"encoding/binary"
	"math"
)

// The block decoders: each value is computed as ggml's reference C code (dequantize_row_* in
// ggml-quants.c) computes it, in float32 with every multiply and add rounded separately (no
// fused multiply-add), so the results are bit-identical to that code compiled without
// floating-point contraction. Each takes one block of its type and fills its values.

// toFloat is the table's to-float column: one block (TypeSize bytes) to BlockSize values; nil
// for a type the engine does not convert.
var toFloat [len(typeTable)]func(blk []byte, y []float32)

func init() {
	le := binary.LittleEndian
	set := func(t Type, f func(b []byte, y []float32)) { toFloat[t] = f }
	set(F32, func(b []byte, y []float32) { y[0] = math.Float32frombits(le.Uint32(b)) })
	set(F16, func(b []byte, y []float32) { y[0] = HalfTable[le.Uint16(b)] })
	set(BF16, func(b []byte, y []float32) { y[0] = math.Float32frombits(uint32(le.Uint16(b)) << 16) })
	set(F64, func(b []byte, y []float32) { y[0] = float32(math.Float64frombits(le.Uint64(b))) })
	set(Q4_0, deqQ4_0)
	set(Q4_1, deqQ4_1)
	set(Q5_0, deqQ5_0)
	set(Q5_1, deqQ5_1)
	set(Q8_0, func(b []byte, y []float32) { deqQ8(f16(b), b[2:34], y) })
	set(Q8_1, func(b []byte, y []float32) { deqQ8(f16(b), b[4:36], y) }) // d, s (unused here), 32 quants
	set(Q2_K, deqQ2_K)
	set(Q3_K, deqQ3_K)
	set(Q4_K, deqQ4_K)
	set(Q5_K, deqQ5_K)
	set(Q6_K, deqQ6_K)
	set(Q8_K, func(b []byte, y []float32) { deqQ8(math.Float32frombits(le.Uint32(b)), b[4:4+qkK], y) })
	set(IQ4_NL, deqIQ4_NL)
}

// CanConvert reports whether ToFloat converts the type.
func (t Type) CanConvert() bool { return uint64(t) < uint64(len(toFloat)) && toFloat[t] != nil }

// ToFloat converts one block of type t (TypeSize bytes) to its BlockSize values in y, as
// ggml's reference dequantizer does. It panics for a type that cannot convert (CanConvert).
func (t Type) ToFloat(blk []byte, y []float32) { toFloat[t](blk, y) }

func f16(b []byte) float32 { return HalfTable[binary.LittleEndian.Uint16(b)] }

// Blocks of 32: d (f16) then 16 bytes of nibbles; value j is the low nibble of qs[j], value
// j+16 the high nibble.

func deqQ4_0(b []byte, y []float32) {
	d := f16(b)
	qs := b[2:18]
	for j, q := range qs {
		y[j] = float32(int(q&0xf)-8) * d
		y[j+16] = float32(int(q>>4)-8) * d
	}
}

func deqQ4_1(b []byte, y []float32) {
	d, m := f16(b), f16(b[2:])
	qs := b[4:20]
	for j, q := range qs {
		y[j] = float32(float32(q&0xf)*d) + m
		y[j+16] = float32(float32(q>>4)*d) + m
	}
}

// Q5: qh (32 bits, little-endian) holds the fifth bit of value j at bit j.

func deqQ5_0(b []byte, y []float32) {
	d := f16(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	qs := b[6:22]
	for j, q := range qs {
		h0 := uint8(qh>>j<<4) & 0x10
		h1 := uint8(qh>>(j+12)) & 0x10
		y[j] = float32(int((q&0xf)|h0)-16) * d
		y[j+16] = float32(int((q>>4)|h1)-16) * d
	}
}

func deqQ5_1(b []byte, y []float32) {
	d, m := f16(b), f16(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	qs := b[8:24]
	for j, q := range qs {
		h0 := uint8(qh>>j<<4) & 0x10
		h1 := uint8(qh>>(j+12)) & 0x10
		y[j] = float32(float32((q&0xf)|h0)*d) + m
		y[j+16] = float32(float32((q>>4)|h1)*d) + m
	}
}

func deqQ8(d float32, qs []byte, y []float32) {
	for j, q := range qs {
		y[j] = float32(int8(q)) * d
	}
}

var iq4nlValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func deqIQ4_NL(b []byte, y []float32) {
	d := f16(b)
	for j, q := range b[2:18] {
		y[j] = d * float32(iq4nlValues[q&0xf])
		y[j+16] = d * float32(iq4nlValues[q>>4])
	}
}

// Q2_K super-block (84 bytes): scales[16] (low nibble: scale, high nibble: min, one pair per
// 16 values), qs[64] (2-bit quants), d (f16), dmin (f16). Each 128-value half reads 32 bytes of
// qs four times, at shifts 0, 2, 4, 6; within a shift, values 0–15 and 16–31 use consecutive
// scales.
func deqQ2_K(b []byte, y []float32) {
	scales, qs := b[0:16], b[16:80]
	d, dmin := f16(b[80:]), f16(b[82:])
	is := 0
	for n := 0; n < qkK; n += 128 {
		q := qs[n/4 : n/4+32]
		for shift := uint(0); shift < 8; shift += 2 {
			for half := 0; half < 2; half++ {
				sc := scales[is]
				is++
				dl := d * float32(sc&0xf)
				ml := dmin * float32(sc>>4)
				for l := range 16 {
					y[l] = float32(dl*float32((q[half*16+l]>>shift)&3)) - ml
				}
				y = y[16:]
			}
		}
	}
}

// Q3_K super-block (110 bytes): hmask[32] (the third bit: value group g of 32 lanes uses bit g),
// qs[64] (low 2 bits, laid out as in Q2_K), scales[12] (sixteen 6-bit signed scales, offset by
// 32), d (f16). A quant is (low2 − 4 when its hmask bit is clear).
func deqQ3_K(b []byte, y []float32) {
	hmask, qs, sc := b[0:32], b[32:96], b[96:108]
	d := f16(b[108:])
	var scales [16]int8
	for j := range 16 {
		var lo uint8
		if j < 8 {
			lo = sc[j] & 0xf
		} else {
			lo = sc[j-8] >> 4
		}
		hi := (sc[8+j%4] >> (2 * (j / 4))) & 3
		scales[j] = int8(lo|hi<<4) - 32
	}
	is := 0
	m := uint8(1)
	for n := 0; n < qkK; n += 128 {
		q := qs[n/4 : n/4+32]
		for shift := uint(0); shift < 8; shift += 2 {
			for half := 0; half < 2; half++ {
				dl := d * float32(scales[is])
				is++
				for l := range 16 {
					k := half*16 + l
					v := int8((q[k] >> shift) & 3)
					if hmask[k]&m == 0 {
						v -= 4
					}
					y[l] = dl * float32(v)
				}
				y = y[16:]
			}
			m <<= 1
		}
	}
}

// ScaleMinK4 unpacks the j-th (0..7) 6-bit scale and min of a Q4_K/Q5_K super-block from its
// 12 packed bytes: j < 4 keep the low 6 bits of bytes j and j+4; j >= 4 take their low 4 bits
// from byte j+4 and their top 2 bits from the top bits of bytes j−4 (scale) and j (min).
func ScaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// Q4_K super-block (144 bytes): d (f16), dmin (f16), scales[12] (eight 6-bit scale/min pairs),
// qs[128]. Each 64 values use 32 bytes of qs: low nibbles with pair 2k, high nibbles with pair
// 2k+1. A value is d·sc·q − dmin·m.
func deqQ4_K(b []byte, y []float32) {
	d, dmin := f16(b), f16(b[2:])
	scales, qs := b[4:16], b[16:144]
	for k := range 4 {
		sc1, m1 := ScaleMinK4(2*k, scales)
		sc2, m2 := ScaleMinK4(2*k+1, scales)
		d1, mn1 := d*float32(sc1), dmin*float32(m1)
		d2, mn2 := d*float32(sc2), dmin*float32(m2)
		q := qs[32*k : 32*k+32]
		for l, v := range q {
			y[l] = float32(d1*float32(v&0xf)) - mn1
			y[32+l] = float32(d2*float32(v>>4)) - mn2
		}
		y = y[64:]
	}
}

// Q5_K super-block (176 bytes): d, dmin, scales[12] as in Q4_K, qh[32] (fifth bits: the k-th 64
// values use bits 2k and 2k+1), qs[128] as in Q4_K.
func deqQ5_K(b []byte, y []float32) {
	d, dmin := f16(b), f16(b[2:])
	scales, qh, qs := b[4:16], b[16:48], b[48:176]
	u1, u2 := uint8(1), uint8(2)
	for k := range 4 {
		sc1, m1 := ScaleMinK4(2*k, scales)
		sc2, m2 := ScaleMinK4(2*k+1, scales)
		d1, mn1 := d*float32(sc1), dmin*float32(m1)
		d2, mn2 := d*float32(sc2), dmin*float32(m2)
		q := qs[32*k : 32*k+32]
		for l, v := range q {
			lo, hi := v&0xf, v>>4
			if qh[l]&u1 != 0 {
				lo += 16
			}
			if qh[l]&u2 != 0 {
				hi += 16
			}
			y[l] = float32(d1*float32(lo)) - mn1
			y[32+l] = float32(d2*float32(hi)) - mn2
		}
		y = y[64:]
		u1 <<= 2
		u2 <<= 2
	}
}

// Q6_K super-block (210 bytes): ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8,
// one per 16 values), d (f16). Each 128 values use 64 bytes of ql, 32 of qh and 8 scales; a
// value is d·scale·(q − 32).
func deqQ6_K(b []byte, y []float32) {
	d := f16(b[208:])
	for n := range 2 {
		ql := b[64*n : 64*n+64]
		qh := b[128+32*n : 128+32*n+32]
		sc := b[192+8*n : 192+8*n+8]
		for l := range 32 {
			is := l / 16
			q1 := int8(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
			q2 := int8(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
			q3 := int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q4 := int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			y[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
			y[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
			y[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
			y[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
		}
		y = y[128:]
	}
}
