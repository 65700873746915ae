package model

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/kvlab/kvlab/native/ggml"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvq"
)

// A kernel is the pair of row operations the matrix products need for one weight type:
//
//	dot(row, x)      Σ_i w_i·x_i over one stored row of len(x) values
//	dequant(row, y)  y_i = w_i, the row converted to float32 (len(y) values)
//
// Both read the row in place, block by block; dot never materializes the row. The value of w_i
// is exactly gguf.DequantizeRow's; dot differs from "dequantize, then a sequential float32 dot"
// only in summation order (per block, then across blocks).
type kernel struct {
	dot     func(row []byte, x []float32) float32
	dequant func(row []byte, y []float32)
}

// kernels holds the kernel of every weight type the matrix products support.
var kernels = map[gguf.Type]kernel{
	gguf.F32:  {dotF32Bytes, deqF32},
	gguf.F16:  {dotF16, deqF16},
	gguf.BF16: {dotBF16, deqBF16},
	gguf.Q8_0: {dotQ8_0, deqQ8_0},
	gguf.Q4_0: {dotQ4_0, deqQ4_0},
	gguf.Q4_1: {dotQ4_1, deqQ4_1},
	gguf.Q5_0: {dotQ5_0, deqQ5_0},
	gguf.Q5_1: {dotQ5_1, deqQ5_1},
	gguf.Q4_K: {dotQ4_K, deqQ4_K},
	gguf.Q5_K: {dotQ5_K, deqQ5_K},
	gguf.Q6_K: {dotQ6_K, deqQ6_K},
}

// f32s views a little-endian float32 tensor's bytes as float32 values without copying. It
// returns nil when the bytes are not 4-byte aligned (the caller then copies).
func f32s(b []byte) []float32 {
	if len(b) == 0 || uintptr(unsafe.Pointer(&b[0]))%4 != 0 || !littleEndian {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func half(b []byte) float32 { return kvq.F16ToF32(binary.LittleEndian.Uint16(b)) }

// dotF32Go is the portable dotF32: Σ a_i·b_i over len(a) values (len(b) ≥ len(a)) in four
// partial sums.
func dotF32Go(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += aa[0]*bb[0] + aa[4]*bb[4]
		s1 += aa[1]*bb[1] + aa[5]*bb[5]
		s2 += aa[2]*bb[2] + aa[6]*bb[6]
		s3 += aa[3]*bb[3] + aa[7]*bb[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot4Go is the portable dot4: out[k] = Σ_i a_i·b[k·stride+i] over len(a) values, k < 4.
func dot4Go(a, b []float32, stride int, out *[4]float32) {
	n := len(a)
	b0, b1, b2, b3 := b[:n], b[stride:stride+n], b[2*stride:2*stride+n], b[3*stride:3*stride+n]
	var s0, s1, s2, s3 float32
	for i, x := range a {
		s0 += x * b0[i]
		s1 += x * b1[i]
		s2 += x * b2[i]
		s3 += x * b3[i]
	}
	out[0], out[1], out[2], out[3] = s0, s1, s2, s3
}

func dotF32Bytes(row []byte, x []float32) float32 {
	if w := f32s(row); w != nil {
		return dotF32(x, w)
	}
	var s float32
	for i, xi := range x {
		s += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])) * xi
	}
	return s
}

func deqF32(row []byte, y []float32) {
	if w := f32s(row); w != nil {
		copy(y, w)
		return
	}
	for i := range y {
		y[i] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
	}
}

// dotF16Go is the portable dotF16.
func dotF16Go(row []byte, x []float32) float32 {
	row = row[:2*len(x)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += half(row[2*i:]) * x[i]
		s1 += half(row[2*i+2:]) * x[i+1]
	}
	if i < len(x) {
		s0 += half(row[2*i:]) * x[i]
	}
	return s0 + s1
}

func deqF16(row []byte, y []float32) {
	row = row[:2*len(y)]
	for i := range y {
		y[i] = half(row[2*i:])
	}
}

func bf16(b []byte) float32 {
	return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
}

func dotBF16(row []byte, x []float32) float32 {
	row = row[:2*len(x)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += bf16(row[2*i:]) * x[i]
		s1 += bf16(row[2*i+2:]) * x[i+1]
	}
	if i < len(x) {
		s0 += bf16(row[2*i:]) * x[i]
	}
	return s0 + s1
}

func deqBF16(row []byte, y []float32) {
	row = row[:2*len(y)]
	for i := range y {
		y[i] = bf16(row[2*i:])
	}
}

// Block sizes in bytes of the ggml block types (32 values; 256 for the K-quants).
const (
	q8_0Bytes = 2 + 32
	q4_0Bytes = 2 + 16
	q4_1Bytes = 4 + 16
	q5_0Bytes = 2 + 4 + 16
	q5_1Bytes = 4 + 4 + 16
	q4_KBytes = 4 + 12 + 128
	q5_KBytes = 4 + 12 + 32 + 128
	q6_KBytes = 128 + 64 + 16 + 2
	qkK       = 256
)

// Q8_0: d (f16), 32 int8 codes; w_i = d·q_i.
func dotQ8_0(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[b*q8_0Bytes : (b+1)*q8_0Bytes]
		q := blk[2:34:34]
		xb := x[b*32 : b*32+32 : b*32+32]
		var a0, a1 float32
		for j := 0; j < 32; j += 2 {
			a0 += float32(int8(q[j])) * xb[j]
			a1 += float32(int8(q[j+1])) * xb[j+1]
		}
		s += half(blk) * (a0 + a1)
	}
	return s
}

func deqQ8_0(row []byte, y []float32) {
	for b := 0; b < len(y)/32; b++ {
		blk := row[b*q8_0Bytes : (b+1)*q8_0Bytes]
		d, q := half(blk), blk[2:34:34]
		yb := y[b*32 : b*32+32 : b*32+32]
		for j := range yb {
			yb[j] = float32(int8(q[j])) * d
		}
	}
}

// Q4_0: d (f16), 16 bytes of nibbles; w_j = d·(lo_j − 8), w_{j+16} = d·(hi_j − 8).
func dotQ4_0(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[b*q4_0Bytes : (b+1)*q4_0Bytes]
		q := blk[2:18:18]
		xb := x[b*32 : b*32+32 : b*32+32]
		var a0, a1 float32
		for j := 0; j < 16; j++ {
			a0 += float32(int(q[j]&0xf)-8) * xb[j]
			a1 += float32(int(q[j]>>4)-8) * xb[j+16]
		}
		s += half(blk) * (a0 + a1)
	}
	return s
}

func deqQ4_0(row []byte, y []float32) {
	for b := 0; b < len(y)/32; b++ {
		blk := row[b*q4_0Bytes : (b+1)*q4_0Bytes]
		d, q := half(blk), blk[2:18:18]
		yb := y[b*32 : b*32+32 : b*32+32]
		for j := 0; j < 16; j++ {
			yb[j] = float32(int(q[j]&0xf)-8) * d
			yb[j+16] = float32(int(q[j]>>4)-8) * d
		}
	}
}

// Q4_1: d, m (f16), 16 bytes of nibbles; w = d·q + m.
func dotQ4_1(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[b*q4_1Bytes : (b+1)*q4_1Bytes]
		q := blk[4:20:20]
		xb := x[b*32 : b*32+32 : b*32+32]
		var a0, a1, sx float32
		for j := 0; j < 16; j++ {
			a0 += float32(q[j]&0xf) * xb[j]
			a1 += float32(q[j]>>4) * xb[j+16]
			sx += xb[j] + xb[j+16]
		}
		s += half(blk)*(a0+a1) + half(blk[2:])*sx
	}
	return s
}

func deqQ4_1(row []byte, y []float32) {
	for b := 0; b < len(y)/32; b++ {
		blk := row[b*q4_1Bytes : (b+1)*q4_1Bytes]
		d, m, q := half(blk), half(blk[2:]), blk[4:20:20]
		yb := y[b*32 : b*32+32 : b*32+32]
		for j := 0; j < 16; j++ {
			yb[j] = float32(q[j]&0xf)*d + m
			yb[j+16] = float32(q[j]>>4)*d + m
		}
	}
}

// Q5_0: d (f16), 32 high bits (u32), 16 bytes of nibbles; w = d·(q − 16) with q 5 bits.
func dotQ5_0(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[b*q5_0Bytes : (b+1)*q5_0Bytes]
		qh := binary.LittleEndian.Uint32(blk[2:])
		q := blk[6:22:22]
		xb := x[b*32 : b*32+32 : b*32+32]
		var a0, a1 float32
		for j := 0; j < 16; j++ {
			h0 := byte(qh>>j) << 4 & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			a0 += float32(int(q[j]&0xf|h0)-16) * xb[j]
			a1 += float32(int(q[j]>>4|h1)-16) * xb[j+16]
		}
		s += half(blk) * (a0 + a1)
	}
	return s
}

func deqQ5_0(row []byte, y []float32) {
	for b := 0; b < len(y)/32; b++ {
		blk := row[b*q5_0Bytes : (b+1)*q5_0Bytes]
		d, qh, q := half(blk), binary.LittleEndian.Uint32(blk[2:]), blk[6:22:22]
		yb := y[b*32 : b*32+32 : b*32+32]
		for j := 0; j < 16; j++ {
			h0 := byte(qh>>j) << 4 & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			yb[j] = float32(int(q[j]&0xf|h0)-16) * d
			yb[j+16] = float32(int(q[j]>>4|h1)-16) * d
		}
	}
}

// Q5_1: d, m (f16), 32 high bits, 16 bytes of nibbles; w = d·q + m with q 5 bits.
func dotQ5_1(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[b*q5_1Bytes : (b+1)*q5_1Bytes]
		qh := binary.LittleEndian.Uint32(blk[4:])
		q := blk[8:24:24]
		xb := x[b*32 : b*32+32 : b*32+32]
		var a0, a1, sx float32
		for j := 0; j < 16; j++ {
			h0 := byte(qh>>j) << 4 & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			a0 += float32(q[j]&0xf|h0) * xb[j]
			a1 += float32(q[j]>>4|h1) * xb[j+16]
			sx += xb[j] + xb[j+16]
		}
		s += half(blk)*(a0+a1) + half(blk[2:])*sx
	}
	return s
}

func deqQ5_1(row []byte, y []float32) {
	for b := 0; b < len(y)/32; b++ {
		blk := row[b*q5_1Bytes : (b+1)*q5_1Bytes]
		d, m := half(blk), half(blk[2:])
		qh, q := binary.LittleEndian.Uint32(blk[4:]), blk[8:24:24]
		yb := y[b*32 : b*32+32 : b*32+32]
		for j := 0; j < 16; j++ {
			h0 := byte(qh>>j) << 4 & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			yb[j] = float32(q[j]&0xf|h0)*d + m
			yb[j+16] = float32(q[j]>>4|h1)*d + m
		}
	}
}

// scaleMinK4 is ggml.ScaleMinK4 (the one unpacking of Q4_K/Q5_K scales and mins).
func scaleMinK4(j int, s []byte) (sc, m byte) { return ggml.ScaleMinK4(j, s) }

// Q4_K: d, dmin (f16), 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, 128 bytes of
// nibbles (64 values per 32 bytes: low nibbles then high nibbles); w = d·sc·q − dmin·m.
func dotQ4_K(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/qkK; b++ {
		blk := row[b*q4_KBytes : (b+1)*q4_KBytes]
		d, dmin := half(blk), half(blk[2:])
		scales, qs := blk[4:16:16], blk[16:144:144]
		xb := x[b*qkK : (b+1)*qkK : (b+1)*qkK]
		var sq, sm float32
		for p := 0; p < 4; p++ {
			q := qs[32*p : 32*p+32 : 32*p+32]
			x0, x1 := xb[64*p:64*p+32:64*p+32], xb[64*p+32:64*p+64:64*p+64]
			var a0, a1, m0, m1 float32
			for l := 0; l < 32; l++ {
				a0 += float32(q[l]&0xf) * x0[l]
				a1 += float32(q[l]>>4) * x1[l]
				m0 += x0[l]
				m1 += x1[l]
			}
			sc0, mn0 := scaleMinK4(2*p, scales)
			sc1, mn1 := scaleMinK4(2*p+1, scales)
			sq += float32(sc0)*a0 + float32(sc1)*a1
			sm += float32(mn0)*m0 + float32(mn1)*m1
		}
		s += d*sq - dmin*sm
	}
	return s
}

func deqQ4_K(row []byte, y []float32) {
	for b := 0; b < len(y)/qkK; b++ {
		blk := row[b*q4_KBytes : (b+1)*q4_KBytes]
		d, dmin := half(blk), half(blk[2:])
		scales, qs := blk[4:16:16], blk[16:144:144]
		yb := y[b*qkK : (b+1)*qkK : (b+1)*qkK]
		for p := 0; p < 4; p++ {
			sc0, mn0 := scaleMinK4(2*p, scales)
			sc1, mn1 := scaleMinK4(2*p+1, scales)
			d1, m1 := d*float32(sc0), dmin*float32(mn0)
			d2, m2 := d*float32(sc1), dmin*float32(mn1)
			q := qs[32*p : 32*p+32 : 32*p+32]
			for l := 0; l < 32; l++ {
				yb[64*p+l] = d1*float32(q[l]&0xf) - m1
				yb[64*p+32+l] = d2*float32(q[l]>>4) - m2
			}
		}
	}
}

// Q5_K: as Q4_K with a fifth bit per value in 32 bytes of qh (bit 2p for the low-nibble
// sub-block of pass p, bit 2p+1 for the high-nibble one).
func dotQ5_K(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/qkK; b++ {
		blk := row[b*q5_KBytes : (b+1)*q5_KBytes]
		d, dmin := half(blk), half(blk[2:])
		scales, qh, qs := blk[4:16:16], blk[16:48:48], blk[48:176:176]
		xb := x[b*qkK : (b+1)*qkK : (b+1)*qkK]
		var sq, sm float32
		for p := 0; p < 4; p++ {
			q := qs[32*p : 32*p+32 : 32*p+32]
			x0, x1 := xb[64*p:64*p+32:64*p+32], xb[64*p+32:64*p+64:64*p+64]
			sh0, sh1 := uint(2*p), uint(2*p+1)
			var a0, a1, m0, m1 float32
			for l := 0; l < 32; l++ {
				h := qh[l]
				a0 += float32(q[l]&0xf|(h>>sh0&1)<<4) * x0[l]
				a1 += float32(q[l]>>4|(h>>sh1&1)<<4) * x1[l]
				m0 += x0[l]
				m1 += x1[l]
			}
			sc0, mn0 := scaleMinK4(2*p, scales)
			sc1, mn1 := scaleMinK4(2*p+1, scales)
			sq += float32(sc0)*a0 + float32(sc1)*a1
			sm += float32(mn0)*m0 + float32(mn1)*m1
		}
		s += d*sq - dmin*sm
	}
	return s
}

func deqQ5_K(row []byte, y []float32) {
	for b := 0; b < len(y)/qkK; b++ {
		blk := row[b*q5_KBytes : (b+1)*q5_KBytes]
		d, dmin := half(blk), half(blk[2:])
		scales, qh, qs := blk[4:16:16], blk[16:48:48], blk[48:176:176]
		yb := y[b*qkK : (b+1)*qkK : (b+1)*qkK]
		for p := 0; p < 4; p++ {
			sc0, mn0 := scaleMinK4(2*p, scales)
			sc1, mn1 := scaleMinK4(2*p+1, scales)
			d1, m1 := d*float32(sc0), dmin*float32(mn0)
			d2, m2 := d*float32(sc1), dmin*float32(mn1)
			q := qs[32*p : 32*p+32 : 32*p+32]
			sh0, sh1 := uint(2*p), uint(2*p+1)
			for l := 0; l < 32; l++ {
				h := qh[l]
				yb[64*p+l] = d1*float32(q[l]&0xf|(h>>sh0&1)<<4) - m1
				yb[64*p+32+l] = d2*float32(q[l]>>4|(h>>sh1&1)<<4) - m2
			}
		}
	}
}

// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8 scales (one per 16
// values), d (f16) last; w = d·sc·(q − 32) with q 6 bits. Each half of 128 values reads 64 ql
// bytes, 32 qh bytes and 8 scales: value l+32k of the half (k = 0..3) takes its low nibble from
// ql[l] (k = 0, 2: low/high nibble) or ql[l+32] (k = 1, 3) and its high bits from qh[l] >> 2k.
func dotQ6_K(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/qkK; b++ {
		blk := row[b*q6_KBytes : (b+1)*q6_KBytes]
		d := half(blk[208:])
		xb := x[b*qkK : (b+1)*qkK : (b+1)*qkK]
		var acc float32
		for n := 0; n < 2; n++ {
			ql := blk[64*n : 64*n+64 : 64*n+64]
			qh := blk[128+32*n : 128+32*n+32 : 128+32*n+32]
			sc := blk[192+8*n : 192+8*n+8 : 192+8*n+8]
			xh := xb[128*n : 128*n+128 : 128*n+128]
			for g := 0; g < 2; g++ { // l in [16g, 16g+16) shares scales sc[g], sc[g+2], sc[g+4], sc[g+6]
				var a0, a1, a2, a3 float32
				for l := 16 * g; l < 16*g+16; l++ {
					h := qh[l]
					q1 := int(ql[l]&0xf|(h&3)<<4) - 32
					q2 := int(ql[l+32]&0xf|(h>>2&3)<<4) - 32
					q3 := int(ql[l]>>4|(h>>4&3)<<4) - 32
					q4 := int(ql[l+32]>>4|(h>>6&3)<<4) - 32
					a0 += float32(q1) * xh[l]
					a1 += float32(q2) * xh[l+32]
					a2 += float32(q3) * xh[l+64]
					a3 += float32(q4) * xh[l+96]
				}
				acc += float32(int8(sc[g]))*a0 + float32(int8(sc[g+2]))*a1 +
					float32(int8(sc[g+4]))*a2 + float32(int8(sc[g+6]))*a3
			}
		}
		s += d * acc
	}
	return s
}

func deqQ6_K(row []byte, y []float32) {
	for b := 0; b < len(y)/qkK; b++ {
		blk := row[b*q6_KBytes : (b+1)*q6_KBytes]
		d := half(blk[208:])
		yb := y[b*qkK : (b+1)*qkK : (b+1)*qkK]
		for n := 0; n < 2; n++ {
			ql := blk[64*n : 64*n+64 : 64*n+64]
			qh := blk[128+32*n : 128+32*n+32 : 128+32*n+32]
			sc := blk[192+8*n : 192+8*n+8 : 192+8*n+8]
			yh := yb[128*n : 128*n+128 : 128*n+128]
			for l := 0; l < 32; l++ {
				is := l / 16
				h := qh[l]
				yh[l] = d * float32(int8(sc[is])) * float32(int(ql[l]&0xf|(h&3)<<4)-32)
				yh[l+32] = d * float32(int8(sc[is+2])) * float32(int(ql[l+32]&0xf|(h>>2&3)<<4)-32)
				yh[l+64] = d * float32(int8(sc[is+4])) * float32(int(ql[l]>>4|(h>>4&3)<<4)-32)
				yh[l+96] = d * float32(int8(sc[is+6])) * float32(int(ql[l+32]>>4|(h>>6&3)<<4)-32)
			}
		}
	}
}
