// Package wkern holds the weight kernels of the CPU forward pass: the integer dot products of
// a quantized weight row with an activation vector quantized once per matrix product into the
// weight type's partner format, as ggml does it:
//
//	weight type                          activation format
//	Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL  Q8 blocks of 32: int8 codes, a float32 scale per block
//	Q4_K, Q5_K, Q6_K                      Q8_K super-blocks of 256: int8 codes, a float32 scale,
//	                                      and the sum of every 16 codes (int16)
//
// Activations round to the nearest of 255 levels per block (d = max|x|/127, q = round(x/d)),
// so a row dot differs from the exact Σ w_i·x_i by at most Σ_i |w_i|·d_{b(i)}/2 plus float32
// rounding of the block sums (see ErrorBound). On amd64 with AVX2 the dots run in assembly
// (VPMADDUBSW/VPMADDWD); elsewhere in Go with the same integer arithmetic, so both give the
// same block sums exactly and differ only in the float32 order of the final accumulation.
//
// The package is a leaf: it knows the GGUF block layouts and nothing of models.
package wkern

import (
	"math"
	"sync"

	"github.com/kvlab/kvlab/native/gguf"
)

// Format is an activation format.
type Format uint8

const (
	// None: the weight type has no integer kernel here.
	None Format = iota
	// Q8: blocks of 32 int8 codes with a float32 scale and the scale times the code sum.
	Q8
	// Q8K: super-blocks of 256 int8 codes with a float32 scale and sums of every 16 codes.
	Q8K
)

// FormatOf returns the activation format of weight type t, None when t has no integer kernel.
func FormatOf(t gguf.Type) Format {
	switch t {
	case gguf.Q8_0, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.IQ4_NL:
		return Q8
	case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		return Q8K
	}
	return None
}

// Supported reports whether weight type t has an integer kernel.
func Supported(t gguf.Type) bool { return FormatOf(t) != None }

// BlockSize is the number of values per scale of format f (0 for None).
func (f Format) BlockSize() int {
	switch f {
	case Q8:
		return 32
	case Q8K:
		return 256
	}
	return 0
}

// Act is a batch of N activation vectors of Cols values quantized in one format. Its slices
// are reused by the next Quantize when large enough, so a matrix product that keeps its Act
// allocates nothing in steady state.
type Act struct {
	Format  Format
	N, Cols int
	Q       []int8    // N × Cols codes
	D       []float32 // N × Cols/BlockSize scales
	S       []float32 // Q8: N × Cols/32 values d·Σq (for the types with a min)
	QS      []int32   // Q8: N × Cols/32 code sums Σq (the invariant tile kernels' offset)
	BS      []int16   // Q8K: N × Cols/16 code sums
	BS32    []int16   // Q8K: N × Cols/32 code sums (the Q4_K/Q5_K mins' sub-blocks)
	// P, PD, PS are a one-token Q8 activation's codes, scales and d·Σq regrouped for the
	// 16-block kernels (permuteQ8), filled only where such a kernel is used; nil otherwise.
	P      []int8
	PD, PS []float32
	// QK is a one-token Q8K activation's codes regrouped for the Q4_K row kernel
	// (permuteQ8K), filled only where that kernel is used; empty otherwise.
	QK []int8
	// gemm is the token scales regrouped for the blocked batch kernels, built once per
	// Prepare by the first product that needs them (gemmScales).
	gemm tokenScales
}

// tokenScales is an Act's regrouped token scales for blocks of 16 (slot 0) and 32 (slot 1)
// values; a product's workers share them.
type tokenScales struct {
	mu   sync.Mutex
	ok   [2]bool
	vals [2][]float32
	// pad is the codes of the tokens past the last whole group of eight, zero-padded to eight
	// tokens (padOK once built).
	pad   []int8
	padOK bool
	// tile is the tile kernels' token operands for groups of 8 (slot 0) and 16 (slot 1) tokens
	// with offsets 2^tileShift (invTileScales); tileOK once built.
	tile      [2][]float32
	tileShift [2]int
	tileOK    [2]bool
	// kVals is the K-quant tile kernels' token operands for the kernels kOps (a *kTile;
	// kTileOps), nil until built.
	kVals []int32
	kOps  any
}

// Quantize fills a with the n vectors of cols values in x (token-major) in format f; cols
// must be a multiple of f's block size.
func (a *Act) Quantize(f Format, x []float32, n, cols int) {
	a.Prepare(f, n, cols)
	a.QuantizeTokens(x, 0, n)
}

// Prepare sizes a for n vectors of cols values in format f (cols a multiple of f's block
// size) without filling it: QuantizeTokens then fills ranges of tokens, possibly concurrently.
func (a *Act) Prepare(f Format, n, cols int) {
	bs := f.BlockSize()
	if bs == 0 || cols%bs != 0 {
		panic("wkern: Quantize: cols is not a whole number of blocks")
	}
	a.Format, a.N, a.Cols = f, n, cols
	a.P, a.PD, a.PS = a.P[:0], a.PD[:0], a.PS[:0]
	a.QK = a.QK[:0]
	a.gemm.ok, a.gemm.padOK, a.gemm.tileOK, a.gemm.kOps = [2]bool{}, false, [2]bool{}, nil
	a.Q = grow(a.Q, n*cols)
	a.D = grow(a.D, n*cols/bs)
	switch f {
	case Q8:
		a.S = grow(a.S, n*cols/32)
		a.QS = grow(a.QS, n*cols/32)
	case Q8K:
		a.BS = grow(a.BS, n*cols/16)
		a.BS32 = grow(a.BS32, n*cols/32)
	}
}

// QuantizeTokens quantizes tokens lo ≤ t < hi of x (token-major, a.Cols values each) into a,
// which Prepare sized. Disjoint ranges may be filled concurrently.
func (a *Act) QuantizeTokens(x []float32, lo, hi int) {
	c := a.Cols
	bs := a.Format.BlockSize()
	xs := x[lo*c : hi*c]
	switch a.Format {
	case Q8:
		quantQ8(a.Q[lo*c:hi*c], a.D[lo*c/bs:hi*c/bs], a.S[lo*c/32:hi*c/32], a.QS[lo*c/32:hi*c/32], xs)
		if a.N == 1 && permQ8 {
			a.permuteQ8()
		}
	case Q8K:
		quantQ8K(a.Q[lo*c:hi*c], a.D[lo*c/bs:hi*c/bs], a.BS[lo*c/16:hi*c/16], a.BS32[lo*c/32:hi*c/32], xs)
		if a.N == 1 && permQ8 {
			a.permuteQ8K()
		}
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// quantBlock writes the codes of one block: d = max|x|/127, q_i = round(x_i/d) (ties away
// from zero), all codes 0 when the block is 0. It returns d and Σq.
func quantBlock(q []int8, x []float32) (float32, int) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	if amax == 0 || amax != amax {
		for i := range q[:len(x)] {
			q[i] = 0
		}
		return 0, 0
	}
	d := amax / 127
	id := 127 / amax
	sum := 0
	q = q[:len(x)]
	for i, v := range x {
		c := int(v*id + copysign(0.5, v)) // round half away from zero
		c = min(max(c, -127), 127)
		q[i] = int8(c)
		sum += c
	}
	return d, sum
}

func copysign(m, s float32) float32 {
	return math.Float32frombits(math.Float32bits(m) | math.Float32bits(s)&(1<<31))
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// quantSums quantizes one block of len(x) values (a multiple of 16) as quantBlock does, writes
// the sum of every 16 codes into g (len(x)/16 values) and returns d: quantSumsGo, or the same
// arithmetic in assembly where the CPU has it (actq_amd64.go).
var quantSums = quantSumsGo

func quantSumsGo(q []int8, x []float32, g []int32) float32 {
	d, _ := quantBlock(q, x)
	for i := range g[:len(x)/16] {
		var s int32
		for _, c := range q[16*i : 16*i+16] {
			s += int32(c)
		}
		g[i] = s
	}
	return d
}

func quantQ8(q []int8, d, s []float32, qs []int32, x []float32) {
	var g [2]int32
	for b := range d {
		db := quantSums(q[32*b:32*b+32], x[32*b:32*b+32], g[:])
		d[b], s[b], qs[b] = db, db*float32(g[0]+g[1]), g[0]+g[1]
	}
}

func quantQ8K(q []int8, d []float32, bs, bs32 []int16, x []float32) {
	var g [16]int32
	for b := range d {
		d[b] = quantSums(q[256*b:256*b+256], x[256*b:256*b+256], g[:])
		for i, v := range g {
			bs[16*b+i] = int16(v)
		}
		for i := range 8 {
			bs32[8*b+i] = int16(g[2*i] + g[2*i+1]) // |Σ| ≤ 32·127
		}
	}
}

// half converts an IEEE 754 binary16 value to float32 exactly.
func half(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: man·2⁻²⁴.
	v := float32(man) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

func f16(b []byte) float32 { return half(uint16(b[0]) | uint16(b[1])<<8) }
