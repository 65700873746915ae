package kvq

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/ggml"
)

// The ggml block formats: q8_0, q4_0, q4_1, q5_0, q5_1 (this file) and iq4_nl (iq4nl.go).
//
// A row of d values is ⌊d/32⌋ full blocks followed, when m = d mod 32 > 0, by one short block of
// m values. A full block is byte-for-byte ggml's block of the same name, all fields
// little-endian:
//
//	q8_0    d f16 | qs[32] int8                       x_i = qs_i·d
//	q4_0    d f16 | qs[16]                             x_i = (n_i − 8)·d
//	q4_1    d f16 | m f16 | qs[16]                     x_i = n_i·d + m
//	q5_0    d f16 | qh[4] | qs[16]                     x_i = ((n_i | h_i<<4) − 16)·d
//	q5_1    d f16 | m f16 | qh[4] | qs[16]             x_i = (n_i | h_i<<4)·d + m
//	iq4_nl  d f16 | qs[16]                             x_i = kvalues_iq4nl[n_i]·d
//
// Nibbles: value i of a block of 32 is the low nibble of qs[i] for i < 16 and the high nibble of
// qs[i−16] otherwise. High bits: bit i of qh (bit i%8 of byte i/8, which is bit i of ggml's
// little-endian uint32) is bit 4 of value i's 5-bit code.
//
// A short block of m values keeps the same header and lays the payload out the same way for m
// values: q8_0 stores m code bytes; the 4-bit payloads are h = ⌈m/2⌉ bytes, value i < h in the
// low nibble of byte i and value i ≥ h in the high nibble of byte i−h (for odd m the last high
// nibble is 0); q5 formats store ⌈m/8⌉ qh bytes with the same bit numbering. For m = 32 these
// rules give ggml's layout, so one block encoder and decoder serves both block lengths. The
// scale and min of a short block are computed from its m values only.
//
// Decoding computes x_i in float32 exactly as written above, each product and sum rounded once
// (never fused), with d and m widened from f16: the same value ggml's dequantize_row_* gives on
// a build without FMA contraction.
//
// Encoders follow ggml's quantize_row_*_ref exactly, float32 operation for float32 operation
// (products and sums rounded once, no fused multiply-add), so a full block is bit-identical to
// ggml's reference quantizer as built for x86-64 without FMA (ggml's CPU library on targets that
// contract a·b+c into an FMA can differ in a code where x/d sits on a rounding boundary);
// TestEncodeMatchesGGML and TestBulkMatchesGGML check this against bytes ggml wrote. ggml's CPU
// backend quantizes with the same reference functions for every format here but q8_0, whose x86
// AVX path scales by 127/amax and rounds ties to even, so a q8_0 row it writes can differ from
// ours by one code step where x·id sits within rounding of a half-integer. The only
// documented departures are for non-finite input, where ggml's C conversions are
// undefined: codes are clamped into their valid range instead, and a NaN scale is stored with
// its payload truncated (F32ToF16) where ggml stores 0x7e00.
//
// Error bounds, per block of source values x with amax = max|x|: let d₀ be the scale ggml
// computes before rounding (amax/127 for q8_0; max/−8, max/−16 and max/−127 for q4_0, q5_0 and
// iq4_nl, max the value of largest magnitude; (max−min)/15 and /31 for q4_1 and q5_1), d̂ the
// stored f16 scale and m̂ the stored f16 min. Every decoded x̂ then satisfies, up to float32
// rounding of at most 2⁻²⁰·amax,
//
//	q8_0    |x̂−x| ≤ |d₀|/2 + 127·|d̂−d₀|
//	q4_0    |x̂−x| ≤ |d₀|/2 + 8·|d̂−d₀|, and |d₀| + 8·|d̂−d₀| where x/d₀ > 7.5 (values opposite
//	        in sign to max, beyond the top code 15, are clipped to it)
//	q5_0    |x̂−x| ≤ |d₀|/2 + 16·|d̂−d₀|, and |d₀| + 16·|d̂−d₀| where x/d₀ > 15.5
//	q4_1    |x̂−x| ≤ d₀/2 + 15·|d̂−d₀| + |m̂−min|
//	q5_1    |x̂−x| ≤ d₀/2 + 31·|d̂−d₀| + |m̂−min|
//	iq4_nl  the stored code is the codebook level nearest x/d₀, and |x̂−x| ≤ 14·|d₀| + 127·|d̂−d₀|
//
// For all but iq4_nl, d̂ is d₀ rounded to f16, so |d̂−d₀| ≤ 2⁻¹¹·|d₀| while |d₀| ≥ 2⁻¹⁴ and
// ≤ 2⁻²⁵ below; iq4_nl's d̂ is the refitted least-squares scale. On N(0, 1) rows of 128 values
// the RMS error relative to the RMS of the data is about 0.0054 (q8_0), 0.086 (q4_0), 0.078
// (q4_1), 0.043 (q5_0), 0.038 (q5_1) and 0.079 (iq4_nl).

// blockKind describes one block format: its header, and the encoder and decoder of one block.
type blockKind struct {
	f Format
	// g is ggml's type of the same full block: its table (native/ggml) gives the block's bytes
	// and the reference decoder the tests hold decode to.
	g   ggml.Type
	hdr int // header bytes: the f16 scale, the f16 min where the format has one
	// encode quantizes src (1..32 values) into dst (f.RowBytes(len(src)) bytes).
	encode func(dst []byte, src []float32)
	// decode writes len(dst) (1..32) values of the block blk.
	decode func(dst []float32, blk []byte)
}

// blockCodec is the reference codec of a block format: Encode, Decode, Dot and
// AccumulateScaled work block by block through the kind's encoder and decoder. Formats embed it
// and add their fast DotMany and AccumulateMany.
type blockCodec struct {
	k         *blockKind
	d, rb     int
	full      int // number of 32-value blocks
	tail      int // values in the short block; 0 when d is a multiple of 32
	fullBytes int // bytes of one full block
}

func newBlockCodec(k *blockKind, d int) (blockCodec, error) {
	if d < MinDim {
		return blockCodec{}, fmt.Errorf("%w: %s: head dimension %d is below the minimum %d", ErrUnsupported, k.f, d, MinDim)
	}
	return blockCodec{
		k:         k,
		d:         d,
		rb:        k.f.RowBytes(d),
		full:      d / BlockSize,
		tail:      d % BlockSize,
		fullBytes: k.g.TypeSize(),
	}, nil
}

func (c *blockCodec) Format() Format { return c.k.f }
func (c *blockCodec) Dim() int       { return c.d }
func (c *blockCodec) RowBytes() int  { return c.rb }

// Encode quantizes src (Dim values) into dst (RowBytes bytes), block by block.
func (c *blockCodec) Encode(dst []byte, src []float32) {
	dst, src = dst[:c.rb], src[:c.d]
	fb := c.fullBytes
	for b := 0; b < c.full; b++ {
		c.k.encode(dst[b*fb:(b+1)*fb], src[b*BlockSize:(b+1)*BlockSize])
	}
	if c.tail > 0 {
		c.k.encode(dst[c.full*fb:], src[c.full*BlockSize:])
	}
}

// Decode writes the Dim stored values of row into dst.
func (c *blockCodec) Decode(dst []float32, row []byte) {
	dst, row = dst[:c.d], row[:c.rb]
	fb := c.fullBytes
	for b := 0; b < c.full; b++ {
		c.k.decode(dst[b*BlockSize:(b+1)*BlockSize], row[b*fb:(b+1)*fb])
	}
	if c.tail > 0 {
		c.k.decode(dst[c.full*BlockSize:], row[c.full*fb:])
	}
}

// PrepareQuery copies q: block formats are stored in the value domain.
func (c *blockCodec) PrepareQuery(dst, q []float32) { copy(dst[:c.d], q[:c.d]) }

// FinishAccumulate copies acc: block formats are stored in the value domain.
func (c *blockCodec) FinishAccumulate(dst, acc []float32) { copy(dst[:c.d], acc[:c.d]) }

// Dot is the reference inner product Σ_i q[i]·x[i], x the decoded row, computed in float64
// (every product exact) and rounded to float32 once at the end.
func (c *blockCodec) Dot(q []float32, row []byte) float32 {
	q, row = q[:c.d], row[:c.rb]
	var x [BlockSize]float32
	var s float64
	fb := c.fullBytes
	for b := 0; b*BlockSize < c.d; b++ {
		n := min(BlockSize, c.d-b*BlockSize)
		c.k.decode(x[:n], row[b*fb:])
		for i, v := range x[:n] {
			s += float64(q[b*BlockSize+i]) * float64(v)
		}
	}
	return float32(s)
}

// AccumulateScaled is the reference update acc[i] += w·x[i], the product and the sum each
// rounded to float32 once.
func (c *blockCodec) AccumulateScaled(acc []float32, w float32, row []byte) {
	acc, row = acc[:c.d], row[:c.rb]
	var x [BlockSize]float32
	fb := c.fullBytes
	for b := 0; b*BlockSize < c.d; b++ {
		n := min(BlockSize, c.d-b*BlockSize)
		c.k.decode(x[:n], row[b*fb:])
		a := acc[b*BlockSize : b*BlockSize+n]
		for i, v := range x[:n] {
			a[i] += float32(w * v)
		}
	}
}

// tailScratch returns the buffer the short-block helpers decode into, or nil when rows have no
// short block. The decoders are function values, so the buffer escapes: callers take one per
// batched call, not one per row.
func (c *blockCodec) tailScratch() []float32 {
	if c.tail == 0 {
		return nil
	}
	return make([]float32, BlockSize)
}

// tailDot is the fast paths' inner product over the short block blk of c.tail values: the
// decoded values (in x, a tailScratch buffer) times q, summed in float32.
func (c *blockCodec) tailDot(q []float32, blk []byte, x []float32) float32 {
	n := c.tail
	c.k.decode(x[:n], blk)
	var s0, s1 float32
	i := 0
	for ; i+2 <= n; i += 2 {
		s0 += q[i] * x[i]
		s1 += q[i+1] * x[i+1]
	}
	if i < n {
		s0 += q[i] * x[i]
	}
	return s0 + s1
}

// tailAccumulate is the fast paths' acc[i] += w·x[i] over the short block blk of c.tail values,
// decoded into x, a tailScratch buffer.
func (c *blockCodec) tailAccumulate(acc []float32, w float32, blk []byte, x []float32) {
	n := c.tail
	c.k.decode(x[:n], blk)
	acc = acc[:n]
	for i, v := range x[:n] {
		acc[i] += float32(w * v)
	}
}

// blockDotKernel returns the inner product of q with one full block blk, scale (and min)
// applied; qsum is Σ q[i] over the block, which formats with a min multiply by it.
type blockDotKernel func(q *[BlockSize]float32, qsum float32, blk []byte) float32

// blockAccKernel adds w·x of one full block blk to acc.
type blockAccKernel func(acc *[BlockSize]float32, w float32, blk []byte)

// dotMany is DotMany over a full-block kernel: per row, the block results are summed in float32
// in block order, the short block last. The per-block sums of q are computed once per call.
func (c *blockCodec) dotMany(q []float32, rows []byte, out []float32, kern blockDotKernel) {
	d, rb, fb, full := c.d, c.rb, c.fullBytes, c.full
	q = q[:d]
	rows = rows[:len(out)*rb]
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
		for b, qs := range qsums {
			s += kern((*[BlockSize]float32)(q[b*BlockSize:]), qs, row[b*fb:(b+1)*fb])
		}
		if c.tail > 0 {
			s += c.tailDot(q[full*BlockSize:], row[full*fb:], x)
		}
		out[j] = s
	}
}

// accumulateMany is AccumulateMany over a full-block kernel, rows in order.
func (c *blockCodec) accumulateMany(acc []float32, w []float32, rows []byte, kern blockAccKernel) {
	d, rb, fb, full := c.d, c.rb, c.fullBytes, c.full
	acc = acc[:d]
	rows = rows[:len(w)*rb]
	x := c.tailScratch()
	for j, wj := range w {
		row := rows[j*rb : (j+1)*rb]
		for b := 0; b < full; b++ {
			kern((*[BlockSize]float32)(acc[b*BlockSize:]), wj, row[b*fb:(b+1)*fb])
		}
		if c.tail > 0 {
			c.tailAccumulate(acc[full*BlockSize:], wj, row[full*fb:], x)
		}
	}
}

// blockF16 reads the little-endian f16 at blk[off:off+2] as float32.
func blockF16(blk []byte, off int) float32 {
	return F16ToF32(binary.LittleEndian.Uint16(blk[off : off+2]))
}

// blockAbs is |v| for float32 (clears the sign bit; NaN stays NaN).
func blockAbs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// blockClamp truncates v toward zero, as C's float-to-integer conversion does, and clamps the
// result into [0, hi]. Non-finite v, where C is undefined, gives 0 or hi.
func blockClamp(v float32, hi int32) byte {
	if !(v >= 0) { // negative or NaN
		return 0
	}
	if v >= float32(hi) {
		return byte(hi)
	}
	return byte(int32(v))
}

// blockSignedMax returns the value of largest magnitude in src (the first one on ties) and its
// magnitude, as ggml's q4_0/q5_0/iq4_nl quantizers pick it.
func blockSignedMax(src []float32) (mx, amax float32) {
	for _, v := range src {
		if a := blockAbs(v); amax < a {
			amax, mx = a, v
		}
	}
	return mx, amax
}

// blockMinMax returns the smallest and largest value of src, as ggml's q4_1/q5_1 quantizers do
// (starting from ±FLT_MAX).
func blockMinMax(src []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range src {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// blockPackNibbles writes the 4-bit codes of one block into qs: codes i < h = ⌈n/2⌉ into low
// nibbles of qs[i], the rest into high nibbles of qs[i−h].
func blockPackNibbles(qs []byte, codes []byte) {
	n := len(codes)
	h := (n + 1) / 2
	qs = qs[:h]
	for i := range qs {
		qs[i] = codes[i] & 0x0f
	}
	for i := h; i < n; i++ {
		qs[i-h] |= codes[i] << 4
	}
}

// blockPackHigh writes bit 4 of each 5-bit code into qh (⌈n/8⌉ bytes), code i at bit i%8 of
// byte i/8, and the low 4 bits with blockPackNibbles.
func blockPackHigh(qh, qs []byte, codes []byte) {
	n := len(codes)
	qh = qh[:(n+7)/8]
	clear(qh)
	for i, c := range codes {
		qh[i/8] |= (c >> 4 & 1) << (i % 8)
	}
	blockPackNibbles(qs, codes)
}

// blockNibble returns the 4-bit code of value i of an n-value block's nibble payload qs.
func blockNibble(qs []byte, n, i int) byte {
	h := (n + 1) / 2
	if i < h {
		return qs[i] & 0x0f
	}
	return qs[i-h] >> 4
}

// blockCode5 returns the 5-bit code of value i of an n-value q5 block payload (qh, qs).
func blockCode5(qh, qs []byte, n, i int) byte {
	return blockNibble(qs, n, i) | (qh[i/8]>>(i%8)&1)<<4
}

// ---- q8_0

func q8_0Encode(dst []byte, src []float32) {
	dst = dst[:2+len(src)]
	if len(src) == BlockSize {
		if d, ok := q8_0EncodeVec(dst[2:], src); ok {
			binary.LittleEndian.PutUint16(dst, F32ToF16(d))
			return
		}
	}
	var amax float32
	for _, v := range src {
		if a := blockAbs(v); !(amax > a) { // C's MAX(amax, a)
			amax = a
		}
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	qs := dst[2:]
	for i, v := range src {
		qs[i] = byte(int8(q8_0Round(v * id)))
	}
}

// q8_0Round is C's roundf (halfway cases away from zero), clamped to ±127 (NaN gives −127; C
// leaves it undefined).
func q8_0Round(v float32) int32 {
	t := float64(v) // t ± 0.5 is exact in float64, so truncating it rounds correctly
	r := int32(t + math.Copysign(0.5, t))
	if r > 127 {
		r = 127
	}
	if r < -127 {
		r = -127
	}
	return r
}

func q8_0Decode(dst []float32, blk []byte) {
	d := blockF16(blk, 0)
	qs := blk[2 : 2+len(dst)]
	// float32(int8(b)) by lookup: the conversion instruction's false dependency on its
	// destination register chained the iterations.
	t := q8Tab
	for i, b := range qs {
		dst[i] = t[b] * d
	}
}

// ---- q4_0

func q4_0Encode(dst []byte, src []float32) {
	mx, _ := blockSignedMax(src)
	d := mx / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	var codes [BlockSize]byte
	for i, v := range src {
		codes[i] = blockClamp(float32(v*id)+8.5, 15)
	}
	blockPackNibbles(dst[2:], codes[:len(src)])
}

func q4_0Decode(dst []float32, blk []byte) {
	d := blockF16(blk, 0)
	n := len(dst)
	qs := blk[2 : 2+(n+1)/2]
	for i := range dst {
		dst[i] = float32(int32(blockNibble(qs, n, i))-8) * d
	}
}

// ---- q4_1

func q4_1Encode(dst []byte, src []float32) {
	lo, hi := blockMinMax(src)
	d := (hi - lo) / 15
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	binary.LittleEndian.PutUint16(dst[2:], F32ToF16(lo))
	var codes [BlockSize]byte
	for i, v := range src {
		codes[i] = blockClamp(float32((v-lo)*id)+0.5, 15)
	}
	blockPackNibbles(dst[4:], codes[:len(src)])
}

func q4_1Decode(dst []float32, blk []byte) {
	d, m := blockF16(blk, 0), blockF16(blk, 2)
	n := len(dst)
	qs := blk[4 : 4+(n+1)/2]
	for i := range dst {
		dst[i] = float32(float32(blockNibble(qs, n, i))*d) + m
	}
}

// ---- q5_0

func q5_0Encode(dst []byte, src []float32) {
	mx, _ := blockSignedMax(src)
	d := mx / -16
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	var codes [BlockSize]byte
	for i, v := range src {
		codes[i] = blockClamp(float32(v*id)+16.5, 31)
	}
	n := len(src)
	nh := (n + 7) / 8
	blockPackHigh(dst[2:2+nh], dst[2+nh:], codes[:n])
}

func q5_0Decode(dst []float32, blk []byte) {
	d := blockF16(blk, 0)
	n := len(dst)
	nh := (n + 7) / 8
	qh, qs := blk[2:2+nh], blk[2+nh:2+nh+(n+1)/2]
	for i := range dst {
		dst[i] = float32(int32(blockCode5(qh, qs, n, i))-16) * d
	}
}

// ---- q5_1

func q5_1Encode(dst []byte, src []float32) {
	lo, hi := blockMinMax(src)
	d := (hi - lo) / 31
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	binary.LittleEndian.PutUint16(dst[2:], F32ToF16(lo))
	var codes [BlockSize]byte
	for i, v := range src {
		codes[i] = blockClamp(float32((v-lo)*id)+0.5, 31)
	}
	n := len(src)
	nh := (n + 7) / 8
	blockPackHigh(dst[4:4+nh], dst[4+nh:], codes[:n])
}

func q5_1Decode(dst []float32, blk []byte) {
	d, m := blockF16(blk, 0), blockF16(blk, 2)
	n := len(dst)
	nh := (n + 7) / 8
	qh, qs := blk[4:4+nh], blk[4+nh:4+nh+(n+1)/2]
	for i := range dst {
		dst[i] = float32(float32(blockCode5(qh, qs, n, i))*d) + m
	}
}

var (
	q8_0Kind = &blockKind{f: Q8_0, g: ggml.Q8_0, hdr: 2, encode: q8_0Encode, decode: q8_0Decode}
	q4_0Kind = &blockKind{f: Q4_0, g: ggml.Q4_0, hdr: 2, encode: q4_0Encode, decode: q4_0Decode}
	q4_1Kind = &blockKind{f: Q4_1, g: ggml.Q4_1, hdr: 4, encode: q4_1Encode, decode: q4_1Decode}
	q5_0Kind = &blockKind{f: Q5_0, g: ggml.Q5_0, hdr: 2, encode: q5_0Encode, decode: q5_0Decode}
	q5_1Kind = &blockKind{f: Q5_1, g: ggml.Q5_1, hdr: 4, encode: q5_1Encode, decode: q5_1Decode}
)

func init() {
	codecFactories[Q8_0] = func(d int, _ CodecOptions) (Codec, error) {
		c, err := newBlockCodec(q8_0Kind, d)
		if err != nil {
			return nil, err
		}
		return &q8_0Codec{c}, nil
	}
	codecFactories[Q4_0] = func(d int, _ CodecOptions) (Codec, error) {
		c, err := newBlockCodec(q4_0Kind, d)
		if err != nil {
			return nil, err
		}
		return &q4_0Codec{c}, nil
	}
	codecFactories[Q4_1] = func(d int, _ CodecOptions) (Codec, error) {
		c, err := newBlockCodec(q4_1Kind, d)
		if err != nil {
			return nil, err
		}
		return &q4_1Codec{c}, nil
	}
	codecFactories[Q5_0] = func(d int, _ CodecOptions) (Codec, error) {
		c, err := newBlockCodec(q5_0Kind, d)
		if err != nil {
			return nil, err
		}
		return &q5_0Codec{c}, nil
	}
	codecFactories[Q5_1] = func(d int, _ CodecOptions) (Codec, error) {
		c, err := newBlockCodec(q5_1Kind, d)
		if err != nil {
			return nil, err
		}
		return &q5_1Codec{c}, nil
	}
}
