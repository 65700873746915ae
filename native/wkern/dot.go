package wkern

import (
	"encoding/binary"

	"github.com/kvlab/kvlab/native/ggml"
	"github.com/kvlab/kvlab/native/gguf"
)

// Block sizes in bytes.
const (
	q8_0Bytes   = 2 + 32
	q4_0Bytes   = 2 + 16
	q4_1Bytes   = 4 + 16
	q5_0Bytes   = 2 + 4 + 16
	q5_1Bytes   = 4 + 4 + 16
	iq4nlBytes  = 2 + 16
	q4_KBytes   = 4 + 12 + 128
	q5_KBytes   = 4 + 12 + 32 + 128
	q6_KBytes   = 128 + 64 + 16 + 2
	superValues = 256
)

// rowDot is one weight type's dot of a stored row with token t of a: Σ over the row's blocks.
type rowDot func(row []byte, a *Act, t int) float32

// goDots are the portable kernels: integer block sums exactly as the assembly computes them.
var goDots = map[gguf.Type]rowDot{
	gguf.Q8_0:   dotQ8_0Go,
	gguf.Q4_0:   dotQ4_0Go,
	gguf.Q4_1:   dotQ4_1Go,
	gguf.Q5_0:   dotQ5_0Go,
	gguf.Q5_1:   dotQ5_1Go,
	gguf.IQ4_NL: dotIQ4NLGo,
	gguf.Q4_K:   dotQ4_KGo,
	gguf.Q5_K:   dotQ5_KGo,
	gguf.Q6_K:   dotQ6_KGo,
}

// q8 returns token t's codes, scales and scaled sums of a Q8 activation.
func (a *Act) q8(t int) ([]int8, []float32, []float32) {
	nb := a.Cols / 32
	return a.Q[t*a.Cols : (t+1)*a.Cols], a.D[t*nb : (t+1)*nb], a.S[t*nb : (t+1)*nb]
}

// q8k returns token t's codes, scales and 16-code sums of a Q8K activation.
func (a *Act) q8k(t int) ([]int8, []float32, []int16) {
	nb := a.Cols / 256
	return a.Q[t*a.Cols : (t+1)*a.Cols], a.D[t*nb : (t+1)*nb], a.BS[t*a.Cols/16 : (t+1)*a.Cols/16]
}

// q8k32 is q8k with the sums of every 32 codes in place of every 16.
func (a *Act) q8k32(t int) ([]int8, []float32, []int16) {
	nb := a.Cols / 256
	return a.Q[t*a.Cols : (t+1)*a.Cols], a.D[t*nb : (t+1)*nb], a.BS32[t*a.Cols/32 : (t+1)*a.Cols/32]
}

func dotQ8_0Go(row []byte, a *Act, t int) float32 {
	q, d, _ := a.q8(t)
	var s float32
	for b := range d {
		w := row[b*q8_0Bytes : (b+1)*q8_0Bytes]
		x := q[32*b : 32*b+32]
		sum := 0
		for j, c := range w[2:34] {
			sum += int(int8(c)) * int(x[j])
		}
		s += f16(w) * d[b] * float32(sum)
	}
	return s
}

func dotQ4_0Go(row []byte, a *Act, t int) float32 {
	q, d, _ := a.q8(t)
	var s float32
	for b := range d {
		w := row[b*q4_0Bytes : (b+1)*q4_0Bytes]
		x := q[32*b : 32*b+32]
		sum := 0
		for j, c := range w[2:18] {
			sum += (int(c&0xf)-8)*int(x[j]) + (int(c>>4)-8)*int(x[j+16])
		}
		s += f16(w) * d[b] * float32(sum)
	}
	return s
}

func dotQ4_1Go(row []byte, a *Act, t int) float32 {
	q, d, sx := a.q8(t)
	var s float32
	for b := range d {
		w := row[b*q4_1Bytes : (b+1)*q4_1Bytes]
		x := q[32*b : 32*b+32]
		sum := 0
		for j, c := range w[4:20] {
			sum += int(c&0xf)*int(x[j]) + int(c>>4)*int(x[j+16])
		}
		s += f16(w)*d[b]*float32(sum) + f16(w[2:])*sx[b]
	}
	return s
}

func dotQ5_0Go(row []byte, a *Act, t int) float32 {
	q, d, _ := a.q8(t)
	var s float32
	for b := range d {
		w := row[b*q5_0Bytes : (b+1)*q5_0Bytes]
		qh := binary.LittleEndian.Uint32(w[2:])
		x := q[32*b : 32*b+32]
		sum := 0
		for j, c := range w[6:22] {
			h0 := int(qh>>j&1) << 4
			h1 := int(qh>>(j+16)&1) << 4
			sum += (int(c&0xf)|h0-16)*int(x[j]) + (int(c>>4)|h1-16)*int(x[j+16])
		}
		s += f16(w) * d[b] * float32(sum)
	}
	return s
}

func dotQ5_1Go(row []byte, a *Act, t int) float32 {
	q, d, sx := a.q8(t)
	var s float32
	for b := range d {
		w := row[b*q5_1Bytes : (b+1)*q5_1Bytes]
		qh := binary.LittleEndian.Uint32(w[4:])
		x := q[32*b : 32*b+32]
		sum := 0
		for j, c := range w[8:24] {
			h0 := int(qh>>j&1) << 4
			h1 := int(qh>>(j+16)&1) << 4
			sum += (int(c&0xf)|h0)*int(x[j]) + (int(c>>4)|h1)*int(x[j+16])
		}
		s += f16(w)*d[b]*float32(sum) + f16(w[2:])*sx[b]
	}
	return s
}

// iq4nl is IQ4_NL's non-linear code book.
var iq4nl = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func dotIQ4NLGo(row []byte, a *Act, t int) float32 {
	q, d, _ := a.q8(t)
	var s float32
	for b := range d {
		w := row[b*iq4nlBytes : (b+1)*iq4nlBytes]
		x := q[32*b : 32*b+32]
		sum := 0
		for j, c := range w[2:18] {
			sum += int(iq4nl[c&0xf])*int(x[j]) + int(iq4nl[c>>4])*int(x[j+16])
		}
		s += f16(w) * d[b] * float32(sum)
	}
	return s
}

// scaleMinK4 is ggml.ScaleMinK4 (the one unpacking of Q4_K/Q5_K scales and mins), widened.
func scaleMinK4(j int, s []byte) (sc, m int) {
	a, b := ggml.ScaleMinK4(j, s)
	return int(a), int(b)
}

// Q4_K: w = d·sc_j·q − dmin·m_j, so Σ w·x = d_a·(d·Σ_j sc_j·Σ q·c − dmin·Σ_j m_j·Σ c).
func dotQ4_KGo(row []byte, a *Act, t int) float32 {
	q, d, bs := a.q8k(t)
	var s float32
	for b := range d {
		w := row[b*q4_KBytes : (b+1)*q4_KBytes]
		scales, qs := w[4:16], w[16:144]
		x := q[256*b : 256*b+256]
		sq, sm := 0, 0
		for p := 0; p < 4; p++ {
			ql := qs[32*p : 32*p+32]
			s0, s1 := 0, 0
			for l, c := range ql {
				s0 += int(c&0xf) * int(x[64*p+l])
				s1 += int(c>>4) * int(x[64*p+32+l])
			}
			sc0, m0 := scaleMinK4(2*p, scales)
			sc1, m1 := scaleMinK4(2*p+1, scales)
			sq += sc0*s0 + sc1*s1
			g := 16*b + 4*p
			sm += m0*int(bs[g]+bs[g+1]) + m1*int(bs[g+2]+bs[g+3])
		}
		s += d[b] * (f16(w)*float32(sq) - f16(w[2:])*float32(sm))
	}
	return s
}

func dotQ5_KGo(row []byte, a *Act, t int) float32 {
	q, d, bs := a.q8k(t)
	var s float32
	for b := range d {
		w := row[b*q5_KBytes : (b+1)*q5_KBytes]
		scales, qh, qs := w[4:16], w[16:48], w[48:176]
		x := q[256*b : 256*b+256]
		sq, sm := 0, 0
		for p := 0; p < 4; p++ {
			ql := qs[32*p : 32*p+32]
			s0, s1 := 0, 0
			for l, c := range ql {
				h := qh[l]
				s0 += int(c&0xf|(h>>(2*p)&1)<<4) * int(x[64*p+l])
				s1 += int(c>>4|(h>>(2*p+1)&1)<<4) * int(x[64*p+32+l])
			}
			sc0, m0 := scaleMinK4(2*p, scales)
			sc1, m1 := scaleMinK4(2*p+1, scales)
			sq += sc0*s0 + sc1*s1
			g := 16*b + 4*p
			sm += m0*int(bs[g]+bs[g+1]) + m1*int(bs[g+2]+bs[g+3])
		}
		s += d[b] * (f16(w)*float32(sq) - f16(w[2:])*float32(sm))
	}
	return s
}

// Q6_K: w = d·sc_g·(q − 32) with one int8 scale per 16 values, so
// Σ w·x = d·d_a·(Σ_g sc_g·Σ q·c − 32·Σ_g sc_g·Σ c).
func dotQ6_KGo(row []byte, a *Act, t int) float32 {
	q, d, bs := a.q8k(t)
	var s float32
	for b := range d {
		w := row[b*q6_KBytes : (b+1)*q6_KBytes]
		x := q[256*b : 256*b+256]
		sum := 0
		for n := 0; n < 2; n++ {
			ql, qh, sc := w[64*n:64*n+64], w[128+32*n:128+32*n+32], w[192+8*n:192+8*n+8]
			xh := x[128*n : 128*n+128]
			for g := 0; g < 2; g++ {
				var a0, a1, a2, a3 int
				for l := 16 * g; l < 16*g+16; l++ {
					h := qh[l]
					a0 += int(ql[l]&0xf|(h&3)<<4) * int(xh[l])
					a1 += int(ql[l+32]&0xf|(h>>2&3)<<4) * int(xh[l+32])
					a2 += int(ql[l]>>4|(h>>4&3)<<4) * int(xh[l+64])
					a3 += int(ql[l+32]>>4|(h>>6&3)<<4) * int(xh[l+96])
				}
				sum += int(int8(sc[g]))*a0 + int(int8(sc[g+2]))*a1 + int(int8(sc[g+4]))*a2 + int(int8(sc[g+6]))*a3
			}
		}
		corr := 0
		for g, c := range w[192:208] {
			corr += int(int8(c)) * int(bs[16*b+g])
		}
		s += f16(w[208:]) * d[b] * float32(sum-32*corr)
	}
	return s
}
