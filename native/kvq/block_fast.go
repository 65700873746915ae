package kvq

import (
	"encoding/binary"
	"math/bits"
)

// Fast paths of the block formats. DotMany and AccumulateMany read full blocks with one kernel
// per format that works on integer (or codebook) codes and applies the block scale, and min,
// once per block; the short block, if any, goes through the block decoder.
//
// DotMany computes, per row, Σ_blocks (d·Σ_i q[i]·c_i + m·Σ_i q[i]), c_i the code, with four
// float32 partial sums per block and the block results summed in float32 in block order (q5_0
// and q5_1 split c_i into its low nibble and high bit; see q5DotMany). Against the reference Dot
// (Σ q[i]·x[i] in float64, rounded once):
//
//	|DotMany − Dot| ≤ 1e-5 · Σ_i |q[i]|·(|x[i]| + o_b(i))   for rows of up to 1024 values,
//
// o_b the offset term of value i's block: |m̂| for q4_1 and q5_1, 16·|d̂| for q5_0, 0 for q8_0,
// q4_0 and iq4_nl. The bound follows from at most 16 roundings inside a block and d/32 + 1
// across blocks, each ≤ 2⁻²⁴ of the magnitudes summed, which are at most |x[i]| + o_b per term.
//
// AccumulateMany adds, per row and block, (w·d)·c_i (+ w·m) to acc[i]: the reference loop of
// AccumulateScaled (acc[i] += w·x[i]) with the scale multiplied in a different order. After n
// rows, per element,
//
//	|AccumulateMany − Σ AccumulateScaled| ≤ (2n + 8)·2⁻²⁴ · (|acc₀[i]| + Σ_j |w_j|·(|x_j[i]| + |m̂_j|)):
//
// at most 8 roundings' worth per term, and one rounding of the running sum per row in each of
// the two computations.

// Code tables: byte b of a 4-bit payload holds two codes, the low nibble (value j) and the high
// nibble (value j+16 in a full block). Each table maps b to the float32 of both codes.
var (
	// q4SignedTab[b] = {lo−8, hi−8}: the signed q4_0 codes.
	q4SignedTab = nibbleTable(func(c int) float32 { return float32(c - 8) })
	// q4UnsignedTab[b] = {lo, hi}: the q4_1 codes, and the low nibbles of the q5_1 codes.
	q4UnsignedTab = nibbleTable(func(c int) float32 { return float32(c) })
	// q5SignedNibTab[b] = {lo−16, hi−16}: the low nibbles of the q5_0 codes, offset.
	q5SignedNibTab = nibbleTable(func(c int) float32 { return float32(c - 16) })
	// iq4nlTab[b] = {kvalues[lo], kvalues[hi]}.
	iq4nlTab = nibbleTable(func(c int) float32 { return float32(iq4nlValues[c]) })
	// q8Tab[b] = float32(int8(b)).
	q8Tab = func() *[256]float32 {
		var t [256]float32
		for b := range t {
			t[b] = float32(int8(b))
		}
		return &t
	}()
	// q5SignedTab[c] = c − 16 and q5UnsignedTab[c] = c for the 5-bit codes.
	q5SignedTab, q5UnsignedTab = func() (*[32]float32, *[32]float32) {
		var s, u [32]float32
		for c := range s {
			s[c], u[c] = float32(c-16), float32(c)
		}
		return &s, &u
	}()
)

func nibbleTable(val func(c int) float32) *[256][2]float32 {
	var t [256][2]float32
	for b := range t {
		t[b] = [2]float32{val(b & 15), val(b >> 4)}
	}
	return &t
}

// ---- q8_0

// q8_0Codec is the Q8_0 codec: blockCodec plus the q8_0 kernels.
type q8_0Codec struct{ blockCodec }

// DotMany writes out[j] = Dot(q, row j) within the block formats' DotMany bound.
func (c *q8_0Codec) DotMany(q []float32, rows []byte, out []float32) {
	c.dotMany(q, rows, out, q8_0DotBlock)
}

// AccumulateMany adds Σ_j w[j]·x_j to acc within the block formats' AccumulateMany bound.
func (c *q8_0Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	c.accumulateMany(acc, w, rows, q8_0AccBlock)
}

func q8_0DotBlock(q *[BlockSize]float32, _ float32, blk []byte) float32 {
	b := (*[34]byte)(blk)
	d := F16ToF32(binary.LittleEndian.Uint16(b[:2]))
	qs := (*[32]byte)(b[2:])
	t := q8Tab
	var s0, s1, s2, s3 float32
	for i := 0; i < 32; i += 4 {
		s0 += q[i] * t[qs[i]]
		s1 += q[i+1] * t[qs[i+1]]
		s2 += q[i+2] * t[qs[i+2]]
		s3 += q[i+3] * t[qs[i+3]]
	}
	return ((s0 + s1) + (s2 + s3)) * d
}

func q8_0AccBlock(acc *[BlockSize]float32, w float32, blk []byte) {
	b := (*[34]byte)(blk)
	wd := w * F16ToF32(binary.LittleEndian.Uint16(b[:2]))
	qs := (*[32]byte)(b[2:])
	t := q8Tab
	for i := 0; i < 32; i += 4 {
		acc[i] += wd * t[qs[i]]
		acc[i+1] += wd * t[qs[i+1]]
		acc[i+2] += wd * t[qs[i+2]]
		acc[i+3] += wd * t[qs[i+3]]
	}
}

// ---- q4_0 and iq4_nl: one f16 scale and 16 bytes of nibbles

// q4_0Codec is the Q4_0 codec: blockCodec plus the nibble kernels with codes n − 8.
type q4_0Codec struct{ blockCodec }

// DotMany writes out[j] = Dot(q, row j) within the block formats' DotMany bound.
func (c *q4_0Codec) DotMany(q []float32, rows []byte, out []float32) {
	c.dotMany(q, rows, out, q4_0DotBlock)
}

// AccumulateMany adds Σ_j w[j]·x_j to acc within the block formats' AccumulateMany bound.
func (c *q4_0Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	c.accumulateMany(acc, w, rows, q4_0AccBlock)
}

// iq4nlCodec is the IQ4_NL codec: blockCodec plus the nibble kernels with codebook levels.
type iq4nlCodec struct{ blockCodec }

// DotMany writes out[j] = Dot(q, row j) within the block formats' DotMany bound.
func (c *iq4nlCodec) DotMany(q []float32, rows []byte, out []float32) {
	c.dotMany(q, rows, out, iq4nlDotBlock)
}

// AccumulateMany adds Σ_j w[j]·x_j to acc within the block formats' AccumulateMany bound.
func (c *iq4nlCodec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	c.accumulateMany(acc, w, rows, iq4nlAccBlock)
}

func q4_0DotBlock(q *[BlockSize]float32, _ float32, blk []byte) float32 {
	return nibbleDot(q, (*[18]byte)(blk), q4SignedTab)
}

func iq4nlDotBlock(q *[BlockSize]float32, _ float32, blk []byte) float32 {
	return nibbleDot(q, (*[18]byte)(blk), iq4nlTab)
}

func q4_0AccBlock(acc *[BlockSize]float32, w float32, blk []byte) {
	nibbleAcc(acc, w, (*[18]byte)(blk), q4SignedTab)
}

func iq4nlAccBlock(acc *[BlockSize]float32, w float32, blk []byte) {
	nibbleAcc(acc, w, (*[18]byte)(blk), iq4nlTab)
}

// nibbleDot is d·Σ q[i]·t(c_i) over one block of an f16 scale and 16 nibble bytes.
func nibbleDot(q *[BlockSize]float32, b *[18]byte, t *[256][2]float32) float32 {
	d := F16ToF32(binary.LittleEndian.Uint16(b[:2]))
	return nibbleSum(q, (*[16]byte)(b[2:]), t) * d
}

// nibbleSum is Σ q[i]·t(c_i) over the 16 nibble bytes of one block.
func nibbleSum(q *[BlockSize]float32, qs *[16]byte, t *[256][2]float32) float32 {
	var s0, s1, s2, s3 float32
	for j := 0; j < 16; j += 2 {
		t0, t1 := &t[qs[j]], &t[qs[j+1]]
		s0 += q[j] * t0[0]
		s1 += q[j+16] * t0[1]
		s2 += q[j+1] * t1[0]
		s3 += q[j+17] * t1[1]
	}
	return (s0 + s1) + (s2 + s3)
}

// nibbleAcc adds (w·d)·t(c_i) to acc[i] over one block of an f16 scale and 16 nibble bytes.
func nibbleAcc(acc *[BlockSize]float32, w float32, b *[18]byte, t *[256][2]float32) {
	wd := w * F16ToF32(binary.LittleEndian.Uint16(b[:2]))
	qs := (*[16]byte)(b[2:])
	for j := 0; j < 16; j += 2 {
		t0, t1 := &t[qs[j]], &t[qs[j+1]]
		acc[j] += wd * t0[0]
		acc[j+16] += wd * t0[1]
		acc[j+1] += wd * t1[0]
		acc[j+17] += wd * t1[1]
	}
}

// ---- q4_1

// q4_1Codec is the Q4_1 codec: blockCodec plus the nibble kernels with a min.
type q4_1Codec struct{ blockCodec }

// DotMany writes out[j] = Dot(q, row j) within the block formats' DotMany bound.
func (c *q4_1Codec) DotMany(q []float32, rows []byte, out []float32) {
	c.dotMany(q, rows, out, q4_1DotBlock)
}

// AccumulateMany adds Σ_j w[j]·x_j to acc within the block formats' AccumulateMany bound.
func (c *q4_1Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	c.accumulateMany(acc, w, rows, q4_1AccBlock)
}

func q4_1DotBlock(q *[BlockSize]float32, qsum float32, blk []byte) float32 {
	b := (*[20]byte)(blk)
	d := F16ToF32(binary.LittleEndian.Uint16(b[0:2]))
	m := F16ToF32(binary.LittleEndian.Uint16(b[2:4]))
	return nibbleSum(q, (*[16]byte)(b[4:]), q4UnsignedTab)*d + qsum*m
}

func q4_1AccBlock(acc *[BlockSize]float32, w float32, blk []byte) {
	b := (*[20]byte)(blk)
	wd := w * F16ToF32(binary.LittleEndian.Uint16(b[0:2]))
	wm := w * F16ToF32(binary.LittleEndian.Uint16(b[2:4]))
	qs := (*[16]byte)(b[4:])
	t := q4UnsignedTab
	for j := 0; j < 16; j += 2 {
		t0, t1 := &t[qs[j]], &t[qs[j+1]]
		acc[j] += wd*t0[0] + wm
		acc[j+16] += wd*t0[1] + wm
		acc[j+1] += wd*t1[0] + wm
		acc[j+17] += wd*t1[1] + wm
	}
}

// ---- q5_0 and q5_1

// q5_0Codec is the Q5_0 codec: blockCodec plus the 5-bit kernels with codes c − 16.
type q5_0Codec struct{ blockCodec }

// DotMany writes out[j] = Dot(q, row j) within the block formats' DotMany bound.
func (c *q5_0Codec) DotMany(q []float32, rows []byte, out []float32) {
	c.q5DotMany(q, rows, out, 2, q5SignedNibTab)
}

// AccumulateMany adds Σ_j w[j]·x_j to acc within the block formats' AccumulateMany bound.
func (c *q5_0Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	c.accumulateMany(acc, w, rows, q5_0AccBlock)
}

// q5_1Codec is the Q5_1 codec: blockCodec plus the 5-bit kernels with a min.
type q5_1Codec struct{ blockCodec }

// DotMany writes out[j] = Dot(q, row j) within the block formats' DotMany bound.
func (c *q5_1Codec) DotMany(q []float32, rows []byte, out []float32) {
	c.q5DotMany(q, rows, out, 4, q4UnsignedTab)
}

// AccumulateMany adds Σ_j w[j]·x_j to acc within the block formats' AccumulateMany bound.
func (c *q5_1Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	c.accumulateMany(acc, w, rows, q5_1AccBlock)
}

// q5DotMany is DotMany for q5_0 (hdr 2, the codes offset by −16) and q5_1 (hdr 4, with a min).
// A block's inner product is split as d·(Σ q[i]·(n_i − off) + 16·Σ_{h_i=1} q[i]) (+ m·Σ q[i]),
// n_i the low nibble and h_i the high bit: the nibble part goes through nibbleSum and the
// high-bit part through q5HighSums' subset-sum tables, eight lookups per block. For q5_0 the
// split cancels (code 16 is n = 0, h = 1), so its DotMany bound counts 16·|d̂| as the block's
// offset term, where the formats with a min count |m̂|.
func (c *blockCodec) q5DotMany(q []float32, rows []byte, out []float32, hdr int, nib *[256][2]float32) {
	d, rb, fb, full := c.d, c.rb, c.fullBytes, c.full
	q = q[:d]
	rows = rows[:len(out)*rb]
	var hbuf [64][16]float32 // 4 KiB: rows of up to 256 values
	hs := hbuf[:]
	if 8*full > len(hbuf) {
		hs = make([][16]float32, 8*full)
	}
	hs = hs[:8*full]
	q5HighSums(hs, q[:full*BlockSize])
	var sumBuf [32]float32
	qsums := sumBuf[:0]
	if full > len(sumBuf) {
		qsums = make([]float32, 0, full)
	}
	for b := 0; b < full; b++ {
		qsums = append(qsums, qBlockSum((*[BlockSize]float32)(q[b*BlockSize:])))
	}
	x := c.tailScratch()
	for j := range out {
		row := rows[j*rb : (j+1)*rb]
		var s float32
		for b, qsum := range qsums {
			blk := row[b*fb : (b+1)*fb]
			dh := F16ToF32(binary.LittleEndian.Uint16(blk[0:2]))
			qh := binary.LittleEndian.Uint32(blk[hdr : hdr+4])
			h := (*[8][16]float32)(hs[8*b:])
			hsum := ((h[0][qh&15] + h[1][qh>>4&15]) + (h[2][qh>>8&15] + h[3][qh>>12&15])) +
				((h[4][qh>>16&15] + h[5][qh>>20&15]) + (h[6][qh>>24&15] + h[7][qh>>28&15]))
			v := (nibbleSum((*[BlockSize]float32)(q[b*BlockSize:]), (*[16]byte)(blk[hdr+4:hdr+20]), nib) + 16*hsum) * dh
			if hdr == 4 {
				v += qsum * F16ToF32(binary.LittleEndian.Uint16(blk[2:4]))
			}
			s += v
		}
		if c.tail > 0 {
			s += c.tailDot(q[full*BlockSize:], row[full*fb:], x)
		}
		out[j] = s
	}
}

// q5HighSums fills h[g][k] = Σ q[4g + t] over the set bits t of k, for every aligned group g of
// four values of q: the sum of q over any subset of a group is one lookup. Each entry costs one
// addition (the entry without k's lowest bit, plus that bit's value).
func q5HighSums(h [][16]float32, q []float32) {
	for g := range h {
		qq := (*[4]float32)(q[4*g:])
		e := &h[g]
		e[0] = 0
		for k := 1; k < 16; k++ {
			low := k & -k
			e[k] = e[k&^low] + qq[bits.TrailingZeros8(uint8(low))&3]
		}
	}
}

// qBlockSum is Σ q[i] over one block, in float32.
func qBlockSum(q *[BlockSize]float32) float32 {
	var u0, u1, u2, u3 float32
	for i := 0; i < 32; i += 4 {
		u0 += q[i]
		u1 += q[i+1]
		u2 += q[i+2]
		u3 += q[i+3]
	}
	return (u0 + u1) + (u2 + u3)
}

func q5_0AccBlock(acc *[BlockSize]float32, w float32, blk []byte) {
	b := (*[22]byte)(blk)
	wd := w * F16ToF32(binary.LittleEndian.Uint16(b[0:2]))
	q5Acc(acc, wd, 0, binary.LittleEndian.Uint32(b[2:6]), (*[16]byte)(b[6:]), q5SignedTab)
}

func q5_1AccBlock(acc *[BlockSize]float32, w float32, blk []byte) {
	b := (*[24]byte)(blk)
	wd := w * F16ToF32(binary.LittleEndian.Uint16(b[0:2]))
	wm := w * F16ToF32(binary.LittleEndian.Uint16(b[2:4]))
	q5Acc(acc, wd, wm, binary.LittleEndian.Uint32(b[4:8]), (*[16]byte)(b[8:]), q5UnsignedTab)
}

// q5Acc adds wd·t[c_i] + wm to acc[i] over the 5-bit codes of one block.
func q5Acc(acc *[BlockSize]float32, wd, wm float32, qh uint32, qs *[16]byte, t *[32]float32) {
	lo, hi := qh, qh>>16
	for j := 0; j < 16; j += 2 {
		b0, b1 := uint32(qs[j]), uint32(qs[j+1])
		acc[j] += wd*t[(b0&15|lo<<4&16)&31] + wm
		acc[j+16] += wd*t[(b0>>4|hi<<4&16)&31] + wm
		acc[j+1] += wd*t[(b1&15|lo<<3&16)&31] + wm
		acc[j+17] += wd*t[(b1>>4|hi<<3&16)&31] + wm
		lo >>= 2
		hi >>= 2
	}
}
