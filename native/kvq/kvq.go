// Package kvq defines the KV-cache storage formats of kvlab: their names, their exact size
// arithmetic, and codecs that encode rows, decode rows, and compute attention's two inner
// products (q·k and Σ w·v) directly on packed bytes.
//
// A row is one head's vector of one cell: Dim values (the head dimension). Every format except
// the per-channel K of q2k stores rows independently, so a cell of H KV heads is H rows laid
// end to end and BytesPerCell(d, H) = H × RowBytes(d).
//
// Block formats (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl) split a row into blocks of 32 values,
// bit-compatible with ggml's blocks of the same name. When the head dimension is not a multiple
// of 32 (head_dim 8, 16, 24, 40, 80, …) the row ends with one short block of m = d mod 32 values:
// the same header (scale, and min or high bits where the format has them) followed by the
// payload laid out as ggml lays out a block, but for m values instead of 32. Blocks never cross a
// head boundary, so every head can be read alone and the arithmetic stays exact.
//
// The package imports nothing that cannot compile to js/wasm: the planner in the browser uses
// the same size arithmetic as the engine.
package kvq

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Format identifies one storage format for one of K or V.
type Format uint8

// The formats. The zero value is invalid so that an unset Format is caught.
const (
	Invalid Format = iota
	F32
	F16
	BF16
	Q8_0
	Q4_0
	Q4_1
	Q5_0
	Q5_1
	IQ4_NL
	FP8
	TQ4
	// Q2K is the K half of the q2k scheme of seed 003: 2 bits per value with one fp16 scale per
	// channel per GroupCells-cell group. It is valid only as a K format; the name "q2k" alone
	// means the pair q2k/q4_0.
	Q2K
	// Turbo2, Turbo3 and Turbo4 are the rotated Lloyd–Max tiers (turbo.go): b-bit codes of the
	// rotated row and one f16 per-row scale with norm correction.
	Turbo2
	Turbo3
	Turbo4
	numFormats
)

// GroupCells is the number of cells that share one per-channel scale in group formats (Q2K).
const GroupCells = 32

// BlockSize is the number of values per block in the ggml block formats.
const BlockSize = 32

// Errors that callers handle.
var (
	// ErrUnknownFormat is returned by Parse and ParsePair for a name that is not a format.
	ErrUnknownFormat = errors.New("unknown KV format")
	// ErrUnsupported is returned when a format cannot be used the way it was asked for (q2k as
	// V, a codec not built for this format, a head dimension below MinDim).
	ErrUnsupported = errors.New("unsupported KV format use")
	// ErrCorrupt is returned when stored bytes cannot be decoded (wrong length).
	ErrCorrupt = errors.New("corrupt KV data")
)

// MinDim is the smallest head dimension every format accepts.
const MinDim = 8

type formatInfo struct {
	name  string
	desc  string
	kOnly bool
}

var infos = [numFormats]formatInfo{
	F32:    {"f32", "32-bit IEEE float, exact", false},
	F16:    {"f16", "16-bit IEEE half float", false},
	BF16:   {"bf16", "bfloat16: 8-bit exponent, 7-bit mantissa", false},
	Q8_0:   {"q8_0", "8-bit ints, one fp16 scale per 32 values (ggml block_q8_0)", false},
	Q4_0:   {"q4_0", "4-bit ints, one fp16 scale per 32 values (ggml block_q4_0)", false},
	Q4_1:   {"q4_1", "4-bit ints, fp16 scale and min per 32 values (ggml block_q4_1)", false},
	Q5_0:   {"q5_0", "5-bit ints, one fp16 scale per 32 values (ggml block_q5_0)", false},
	Q5_1:   {"q5_1", "5-bit ints, fp16 scale and min per 32 values (ggml block_q5_1)", false},
	IQ4_NL: {"iq4_nl", "4-bit non-linear codebook, one fp16 scale per 32 values (ggml block_iq4_nl)", false},
	FP8:    {"fp8", "fp8 e4m3, one f32 scale per row (amax/448, round to nearest even)", false},
	TQ4:    {"tq4", "randomized Hadamard rotation + 16-level Lloyd-Max codebook, one f32 scale per row", false},
	Q2K:    {"q2k", "K only: 2-bit 4-level Lloyd-Max codes, one fp16 scale per (rotated) channel per 32 cells", true},
	Turbo2: {"turbo2", "randomized Hadamard rotation + 4-level Lloyd-Max codes, one fp16 norm-corrected scale per row", false},
	Turbo3: {"turbo3", "randomized Hadamard rotation + 8-level Lloyd-Max codes, one fp16 norm-corrected scale per row", false},
	Turbo4: {"turbo4", "randomized Hadamard rotation + 16-level Lloyd-Max codes, one fp16 norm-corrected scale per row", false},
}

// Formats lists every format in a stable order.
func Formats() []Format {
	out := make([]Format, 0, numFormats-1)
	for f := F32; f < numFormats; f++ {
		out = append(out, f)
	}
	return out
}

// Valid reports whether f is one of the defined formats.
func (f Format) Valid() bool { return f > Invalid && f < numFormats }

// String returns the format's name ("q8_0"), or "invalid".
func (f Format) String() string {
	if !f.Valid() {
		return "invalid"
	}
	return infos[f].name
}

// Description is one line saying what the format stores.
func (f Format) Description() string {
	if !f.Valid() {
		return ""
	}
	return infos[f].desc
}

// KOnly reports whether the format can only hold K (it needs a whole group of cells per scale).
func (f Format) KOnly() bool { return f.Valid() && infos[f].kOnly }

// Grouped reports whether the format stores cells in groups of GroupCells that share scales, so
// a pool of it is sized and moved in whole groups.
func (f Format) Grouped() bool { return f == Q2K }

// Names returns the valid format names, sorted, for error messages and help text.
func Names() []string {
	var out []string
	for _, f := range Formats() {
		out = append(out, f.String())
	}
	sort.Strings(out)
	return out
}

// Parse returns the format with the given name (case-insensitive; "fp16" is accepted for f16).
func Parse(name string) (Format, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "fp16" {
		n = "f16"
	}
	for _, f := range Formats() {
		if infos[f].name == n {
			return f, nil
		}
	}
	return Invalid, fmt.Errorf("%w %q (valid: %s)", ErrUnknownFormat, name, strings.Join(Names(), ", "))
}

// RowBytes is the exact number of bytes one row of d values takes. For Q2K, whose unit is a
// group of cells, it is the bytes of one row amortized over a whole group, rounded up; use
// Bytes for exact pool sizes.
func (f Format) RowBytes(d int) int {
	if d <= 0 {
		return 0
	}
	full, m := d/BlockSize, d%BlockSize
	block := func(header int, payload func(m int) int) int {
		n := full * (header + payload(BlockSize))
		if m > 0 {
			n += header + payload(m)
		}
		return n
	}
	nib := func(m int) int { return (m + 1) / 2 }
	switch f {
	case F32:
		return 4 * d
	case F16, BF16:
		return 2 * d
	case Q8_0:
		return block(2, func(m int) int { return m })
	case Q4_0, IQ4_NL:
		return block(2, nib)
	case Q4_1:
		return block(4, nib)
	case Q5_0:
		return block(2, func(m int) int { return (m+7)/8 + nib(m) })
	case Q5_1:
		return block(4, func(m int) int { return (m+7)/8 + nib(m) })
	case FP8:
		return d + 4
	case TQ4:
		return nib(d) + 4
	case Q2K:
		return int((q2kGroupBytes(d) + GroupCells - 1) / GroupCells)
	case Turbo2, Turbo3, Turbo4:
		return turboRowBytes(f.turboBits(), d)
	}
	return 0
}

// q2kGroupBytes is one head's storage for one group of GroupCells cells: d fp16 scales and
// GroupCells×d 2-bit codes.
func q2kGroupBytes(d int) int64 { return int64(2*d) + int64(GroupCells*d*2/8) }

// BytesPerCell is the bytes one cell takes in one layer for one of K or V: nKVHeads rows of
// headDim values. It is exact for every format except Q2K at shapes where 5·headDim·nKVHeads/16
// is not a whole number (head_dim 8 with an odd head count), where it is rounded up; Bytes is
// exact everywhere.
func (f Format) BytesPerCell(headDim, nKVHeads int) int {
	if f == Q2K {
		g := q2kGroupBytes(headDim) * int64(nKVHeads)
		return int((g + GroupCells - 1) / GroupCells)
	}
	return nKVHeads * f.RowBytes(headDim)
}

// BytesPerToken is the exact average bytes per cell for one layer and one of K or V, as a
// fraction where the format stores whole groups.
func (f Format) BytesPerToken(headDim, nKVHeads int) float64 {
	if f == Q2K {
		return float64(q2kGroupBytes(headDim)*int64(nKVHeads)) / GroupCells
	}
	return float64(f.BytesPerCell(headDim, nKVHeads))
}

// Bytes is the exact storage of a pool of cells cells in one layer for one of K or V. Group
// formats are sized in whole groups.
func (f Format) Bytes(cells int64, headDim, nKVHeads int) int64 {
	if cells <= 0 {
		return 0
	}
	if f == Q2K {
		groups := (cells + GroupCells - 1) / GroupCells
		return groups * q2kGroupBytes(headDim) * int64(nKVHeads)
	}
	return cells * int64(f.BytesPerCell(headDim, nKVHeads))
}

// BitsPerValue is the storage cost per value for a row of d values, side-band included.
func (f Format) BitsPerValue(d int) float64 {
	if d <= 0 {
		return 0
	}
	return 8 * f.BytesPerToken(d, 1) / float64(d)
}

// Pair is a K format and a V format: the unit the cache, the planner and the lab work in.
type Pair struct {
	K, V Format
	// KRaw and VRaw mark a Rotatable half stored unrotated, the "-r" variant ("q4_0-r"). The
	// zero value rotates every Rotatable half: the default (see rotate.go).
	KRaw, VRaw bool
}

// String writes the pair as "K/V", or as one name when K and V are the same. The q2k scheme's
// default pair (q2k/q4_0) is written "q2k", and "q2k-r" with both halves unrotated.
// Unrotated halves carry the "-r" suffix.
func (p Pair) String() string {
	k, v := p.KName(), p.VName()
	if k == v || (p.K == Q2K && p.V == Q4_0 && p.KRaw == p.VRaw) {
		return k
	}
	return k + "/" + v
}

// Valid reports whether both halves are formats, V is not a K-only format, and only Rotatable
// halves are marked raw.
func (p Pair) Valid() bool {
	return p.K.Valid() && p.V.Valid() && !p.V.KOnly() &&
		(!p.KRaw || p.K.Rotatable()) && (!p.VRaw || p.V.Rotatable())
}

// ParsePair parses "K/V" or a single name meaning both ("q8_0"); "q2k" alone means q2k/q4_0
// ("q2k-r": q2k-r/q4_0-r). A half written with the "-r" suffix ("q4_0-r", "q8_0-r/q4_0-r") is
// stored unrotated.
func ParsePair(s string) (Pair, error) {
	s = strings.TrimSpace(s)
	if k, v, ok := strings.Cut(s, "/"); ok {
		kf, kr, err := parseHalf(k)
		if err != nil {
			return Pair{}, err
		}
		vf, vr, err := parseHalf(v)
		if err != nil {
			return Pair{}, err
		}
		if vf.KOnly() {
			return Pair{}, fmt.Errorf("%w: %s stores K only; it cannot hold V (try %s/q4_0)", ErrUnsupported, vf, vf)
		}
		return Pair{K: kf, V: vf, KRaw: kr, VRaw: vr}, nil
	}
	f, raw, err := parseHalf(s)
	if err != nil {
		return Pair{}, err
	}
	if f == Q2K {
		return Pair{K: Q2K, V: Q4_0, KRaw: raw, VRaw: raw}, nil
	}
	return Pair{K: f, V: f, KRaw: raw, VRaw: raw}, nil
}

// ParsePairs parses a comma-separated list of pairs ("f16,q8_0,q8_0/q4_0").
func ParsePairs(list string) ([]Pair, error) {
	var out []Pair
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		p, err := ParsePair(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty format list", ErrUnknownFormat)
	}
	return out, nil
}

// BytesPerCell is the bytes of K and V of one cell in one layer, with K rows of headDimK values
// and V rows of headDimV values.
func (p Pair) BytesPerCell(headDimK, headDimV, nKVHeads int) int {
	return p.K.BytesPerCell(headDimK, nKVHeads) + p.V.BytesPerCell(headDimV, nKVHeads)
}

// BytesPerToken is BytesPerCell as an exact average (fractional for group formats).
func (p Pair) BytesPerToken(headDimK, headDimV, nKVHeads int) float64 {
	return p.K.BytesPerToken(headDimK, nKVHeads) + p.V.BytesPerToken(headDimV, nKVHeads)
}

// Bytes is the exact storage of K and V for cells cells in one layer.
func (p Pair) Bytes(cells int64, headDimK, headDimV, nKVHeads int) int64 {
	return p.K.Bytes(cells, headDimK, nKVHeads) + p.V.Bytes(cells, headDimV, nKVHeads)
}

// OverlayBytes is the memory of the FP16 window + sinks overlay of seed 003 for one layer:
// cells exact f16 copies of K and V. The overlay is format-agnostic.
func OverlayBytes(cells int64, headDimK, headDimV, nKVHeads int) int64 {
	if cells <= 0 {
		return 0
	}
	return cells * int64(nKVHeads) * int64(2*headDimK+2*headDimV)
}

// MixedBatch is how many cells past the f16 window of a position-axis mixed cache (the most
// recent cells only in f16, the tail only in the pair) wait in f16 to be quantized together:
// window/8, at least 1 and at most 32. It is kept small so that the ring's slack (MixedBatch f16
// cells) costs less than the window's cells would in the quantized format, which is what the
// overlay spends on top of its f16 copies. The cache (native/kvcache) and the planner both size
// the ring with it.
func MixedBatch(window int) int {
	if window <= 0 {
		return 0
	}
	return min(max(window/8, 1), 32)
}

// UsefulPairs are the pairs `kvlab formats` lists after the symmetric ones: the asymmetric
// recipes of the seeds (high-precision K, cheap V).
var UsefulPairs = []Pair{
	{K: F16, V: Q4_0}, {K: F16, V: Q8_0}, {K: Q8_0, V: Q4_0}, {K: Q8_0, V: Q5_0}, {K: Q5_1, V: Q4_0},
	{K: Q8_0, V: IQ4_NL}, {K: FP8, V: Q4_0}, {K: Q2K, V: Q4_0},
	{K: Q8_0, V: Turbo4}, {K: Q8_0, V: Turbo3}, {K: Turbo4, V: Turbo3}, {K: Q5_0, V: Turbo3}, {K: Turbo4, V: Turbo2},
}
