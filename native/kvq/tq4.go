package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
)

// TQ4 row layout (seed 004, "rotated-int4 + Lloyd-Max"): a row of d values is stored rotated,
// y = R·x with R the randomized Hadamard rotation of the codec (see rotation: block-diagonal
// over the powers of two in d when d is not one), as ceil(d/2) code bytes followed by one
// float32 scale s, little-endian. Byte j holds the 4-bit code of y[2j] in its low nibble and of
// y[2j+1] in its high nibble; for odd d the last high nibble is 0. The stored rotated value is
// ŷ[i] = s·tq4Levels[code_i] and the stored value is x̂ = Rᵀ·ŷ.
//
// Encoding: s = ‖x‖/√d (computed in float64, rounded to float32), so that y/s has unit mean
// square, which a random rotation makes close to N(0,1) per coordinate; code_i is the level
// nearest y[i]/s: the number of scaled decision thresholds float32(s·tq4Thresholds[k]) that y[i]
// reaches (a value on a threshold takes the upper level). A row with s = 0 (including one whose
// s underflows float32) stores zero bytes. Non-finite inputs give meaningless but harmless codes.
//
// Error: for rows whose rotated coordinates are close to Gaussian (random rows; rotation spreads
// a channel outlier across the block) the expected relative L2 error ‖x̂−x‖/‖x‖ is
// √0.0095 ≈ 0.0975, the Lloyd–Max distortion (measured: 0.096 on Gaussian rows at d = 128);
// coordinates beyond the outer threshold (|y[i]| > 2.4008·s) reconstruct to ±2.7326·s, so no
// per-element bound holds in general.
//
// Attention never reconstructs x̂: PrepareQuery rotates the query once, Dot is
// s·Σ q'[i]·tq4Levels[code_i] in the rotated domain, AccumulateScaled accumulates w·ŷ there, and
// FinishAccumulate rotates the sum back. Since R is orthogonal these equal q·x̂ and Σ w·x̂ up to
// float32 rounding.

// tq4Levels is the 16-level quantizer of N(0,1) that tq4 and turbo4 store, ascending: code k
// reconstructs to tq4Levels[k] = tq4Ints[k]·tq4Unit. The levels are the Lloyd–Max levels
// (MSE 0.009501) rounded to integer multiples of one unit, the unit chosen to minimise the
// rounded quantizer's MSE with |tq4Ints| ≤ 127: 0.0095062, 0.05 % above Lloyd–Max (the
// relative L2 error √MSE ≈ 0.0975 either way). Integer levels let the VNNI kernels
// (multi_tq4vnni_amd64.go) look the codes up as signed bytes and compute Σ Q·tq4Ints exactly,
// so they agree with Dot on the same query grid; TestTQ4Codebook re-derives the levels by Lloyd
// iteration and checks the rounding.
var tq4Levels = func() (l [16]float32) {
	for k, v := range tq4Ints {
		l[k] = float32(v) * tq4Unit
	}
	return l
}()

// tq4Ints are tq4's levels in units of tq4Unit.
var tq4Ints = [16]int8{-104, -79, -62, -48, -36, -25, -15, -5, 5, 15, 25, 36, 48, 62, 79, 104}

// tq4Unit is the value of one step of tq4Ints.
const tq4Unit = float32(0.02621692)

// tq4Thresholds are the decision thresholds between consecutive levels (their midpoints).
var tq4Thresholds = func() (t [15]float32) {
	for k := range t {
		t[k] = float32(int32(tq4Ints[k])+int32(tq4Ints[k+1])) * (tq4Unit / 2)
	}
	return t
}()

// tq4Pairs maps a code byte to its two levels (low nibble, high nibble).
var tq4Pairs = func() *[256][2]float32 {
	var t [256][2]float32
	for b := range t {
		t[b] = [2]float32{tq4Levels[b&15], tq4Levels[b>>4]}
	}
	return &t
}()

// tq4StackDim is the largest head dimension whose Encode scratch lives on the stack.
const tq4StackDim = 1024

type tq4Codec struct {
	d   int
	rot *rotation
}

func init() {
	codecFactories[TQ4] = func(d int, opt CodecOptions) (Codec, error) {
		if d < MinDim {
			return nil, fmt.Errorf("%w: tq4: head dimension %d is below the minimum %d", ErrUnsupported, d, MinDim)
		}
		return &tq4Codec{d: d, rot: newRotation(d, opt.Seed, opt.Layer, opt.Head)}, nil
	}
}

func (c *tq4Codec) Format() Format { return TQ4 }
func (c *tq4Codec) Dim() int       { return c.d }
func (c *tq4Codec) RowBytes() int  { return (c.d+1)/2 + 4 }

// Encode stores src (Dim values) as one TQ4 row in dst (RowBytes bytes); see the TQ4 layout.
func (c *tq4Codec) Encode(dst []byte, src []float32) {
	d, nb := c.d, (c.d+1)/2
	dst, src = dst[:nb+4], src[:d]
	var ss float64
	for _, x := range src {
		ss += float64(x) * float64(x)
	}
	s := float32(math.Sqrt(ss / float64(d)))
	if s == 0 {
		clear(dst)
		return
	}
	var buf [tq4StackDim]float32
	var y []float32
	if d <= tq4StackDim {
		y = buf[:d]
	} else {
		y = make([]float32, d)
	}
	c.rot.apply(y, src)
	var st [16]float32
	for k, t := range tq4Thresholds {
		st[k] = s * t
	}
	st[15] = float32(math.Inf(1))
	inv := 1 / s
	for i, v := range y {
		// The code is the number of st[k] ≤ v (k < 15). A grid over v/s ∈ [−3, 3) in steps of
		// 1/8, none holding two thresholds, guesses it from v·inv; one comparison settles it,
		// and two rarely taken checks fall back to counting when rounding put the guess off,
		// so the result never depends on the guess.
		f := v*inv*8 + 24
		g := 0
		if f >= 0 {
			g = int(min(f, 47))
		}
		k := tq4Guess[g]
		k += b2u(v >= st[k&15])
		if (k < 15 && v >= st[k&15]) || (k > 0 && v < st[(k-1)&15]) {
			k = tq4CodeExact(v, &st)
		}
		if i&1 == 0 {
			dst[i>>1] = k
		} else {
			dst[i>>1] |= k << 4
		}
	}
	binary.LittleEndian.PutUint32(dst[nb:], math.Float32bits(s))
}

// tq4CodeExact counts the scaled thresholds st[k] ≤ v, k < 15, one by one (NaN reaches none):
// the definition of a TQ4 code, which Encode's fast path must match.
func tq4CodeExact(v float32, st *[16]float32) uint8 {
	var k uint8
	for _, t := range st[:15] {
		k += b2u(v >= t)
	}
	return k
}

// tq4Guess[i] is the number of tq4Thresholds at or below −3 + i/8, the lower edge of grid step i.
var tq4Guess = func() *[48]uint8 {
	var g [48]uint8
	for i := range g {
		edge := -3 + float64(i)/8
		for _, t := range tq4Thresholds {
			if float64(t) <= edge {
				g[i]++
			}
		}
	}
	return &g
}()

// b2u is 1 for true and 0 for false; the compiler makes it a flag-setting instruction.
func b2u(b bool) uint8 {
	var x uint8
	if b {
		x = 1
	}
	return x
}

func (c *tq4Codec) scale(row []byte) float32 {
	nb := (c.d + 1) / 2
	return math.Float32frombits(binary.LittleEndian.Uint32(row[nb : nb+4]))
}

// rotatedDecode writes ŷ = s·levels (the rotated domain) into dst.
func (c *tq4Codec) rotatedDecode(dst []float32, row []byte) {
	d := c.d
	s := c.scale(row)
	dst = dst[:d]
	for j, b := range row[:d/2] {
		p := &tq4Pairs[b]
		dst[2*j] = s * p[0]
		dst[2*j+1] = s * p[1]
	}
	if d%2 == 1 {
		dst[d-1] = s * tq4Levels[row[d/2]&15]
	}
}

// Decode writes x̂ = Rᵀ·(s·levels): the value domain.
func (c *tq4Codec) Decode(dst []float32, row []byte) {
	c.rotatedDecode(dst, row)
	c.rot.applyT(dst, dst)
}

// PrepareQuery writes R·q into dst (dst may alias q).
func (c *tq4Codec) PrepareQuery(dst, q []float32) { c.rot.apply(dst, q) }

// FinishAccumulate writes Rᵀ·acc into dst (dst may alias acc).
func (c *tq4Codec) FinishAccumulate(dst, acc []float32) { c.rot.applyT(dst, acc) }

// Dot returns s·Σ q'[i]·tq4Levels[code_i] for a prepared query q' = R·q: q·x̂ up to float32
// rounding (four interleaved float32 partial sums).
func (c *tq4Codec) Dot(q []float32, row []byte) float32 {
	return tq4Dot(q[:c.d], row[:(c.d+1)/2]) * c.scale(row)
}

func tq4Dot(q []float32, codes []byte) float32 {
	t := tq4Pairs
	d := len(q)
	c, x := codes[:d/2], q[:d&^1]
	var s0, s1, s2, s3 float32
	for len(c) >= 16 {
		cb, xb := (*[16]byte)(c), (*[32]float32)(x)
		for i := 0; i < 8; i++ {
			p0, p1 := &t[cb[2*i]], &t[cb[2*i+1]]
			s0 += xb[4*i] * p0[0]
			s1 += xb[4*i+1] * p0[1]
			s2 += xb[4*i+2] * p1[0]
			s3 += xb[4*i+3] * p1[1]
		}
		c, x = c[16:], x[32:]
	}
	for j, b := range c {
		p := &t[b]
		s0 += x[2*j] * p[0]
		s1 += x[2*j+1] * p[1]
	}
	if d%2 == 1 {
		s2 += q[d-1] * tq4Levels[codes[d/2]&15]
	}
	return (s0 + s1) + (s2 + s3)
}

// DotMany writes out[j] = Dot(q, row j) for the len(out) rows laid end to end in rows.
func (c *tq4Codec) DotMany(q []float32, rows []byte, out []float32) {
	d, nb := c.d, (c.d+1)/2
	rb := nb + 4
	q = q[:d]
	rows = rows[:len(out)*rb]
	for j := range out {
		row := rows[j*rb : (j+1)*rb]
		out[j] = tq4Dot(q, row[:nb]) * math.Float32frombits(binary.LittleEndian.Uint32(row[nb:]))
	}
}

// AccumulateScaled adds (w·s)·tq4Levels[code_i] to acc[i] (the rotated domain).
func (c *tq4Codec) AccumulateScaled(acc []float32, w float32, row []byte) {
	tq4Axpy(acc[:c.d], w*c.scale(row), row[:(c.d+1)/2])
}

func tq4Axpy(acc []float32, ws float32, codes []byte) {
	t := tq4Pairs
	d := len(acc)
	c, a := codes[:d/2], acc[:d&^1]
	for len(c) >= 16 {
		cb, ab := (*[16]byte)(c), (*[32]float32)(a)
		for i := 0; i < 16; i++ {
			p := &t[cb[i]]
			ab[2*i] += ws * p[0]
			ab[2*i+1] += ws * p[1]
		}
		c, a = c[16:], a[32:]
	}
	for j, b := range c {
		p := &t[b]
		a[2*j] += ws * p[0]
		a[2*j+1] += ws * p[1]
	}
	if d%2 == 1 {
		acc[d-1] += ws * tq4Levels[codes[d/2]&15]
	}
}

// AccumulateMany adds Σ_j w[j]·ŷ_j (rotated domain) for the len(w) rows laid end to end in rows.
func (c *tq4Codec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	d, nb := c.d, (c.d+1)/2
	rb := nb + 4
	acc = acc[:d]
	rows = rows[:len(w)*rb]
	for j, wj := range w {
		row := rows[j*rb : (j+1)*rb]
		tq4Axpy(acc, wj*math.Float32frombits(binary.LittleEndian.Uint32(row[nb:])), row[:nb])
	}
}
