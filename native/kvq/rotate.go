package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvlab/kvlab/internal/keep"
)

// Rotated formats. Every quantized row format (Rotatable) is stored by default through the
// codec's randomized Hadamard rotation R (rotation, hadamard.go, drawn per (Seed, Layer, Head)):
// a K or V row x is stored as the format's bytes of y = R·x, PrepareQuery maps a query to R·q so
// that scores are unchanged in exact arithmetic ((R·q)·(R·x) = q·x, R orthogonal), V rows are
// accumulated rotated and FinishAccumulate maps the sum back with Rᵀ once per query. The bytes
// per row are those of the format: rotation costs no storage, only O(d·log d) additions per row
// written and per query.
//
// Rotation spreads a channel outlier over its Hadamard block, so a block's scale no longer
// follows one large value; it does not remove the outlier's energy. For K the rotated codec is
// also calibrated once, from the cells of a cache's first write into an empty store (Calibrate:
// a prompt's prefill), and then stores y = R·((x−μ)/λ):
//
//   - per-channel K scales λ_c ≥ 1, powers of two (exact): channels whose RMS over those cells
//     is within kvChannelThreshold× the median keep λ_c = 1; above it λ_c is the power of two
//     nearest RMS_c/median. The query is prepared as R·(λ⊙q), so q·k is unchanged.
//   - per-channel K offsets μ_c: the channel's mean where it is stable over the calibration
//     cells (ChannelMeans). Scores add q·μ once per query and call (exact bookkeeping, not an
//     approximation: q·x̂ = (R·(λ⊙q))·ŷ + q·μ), Decode adds μ back, and the offset no longer
//     takes up the codes' range.
//
// Both are state of the codec, not of the rows: 2·Dim floats per K head and layer, outside
// RowBytes. A codec is calibrated only while its store holds no cells; uncalibrated it stores
// R·x.
//
// The rotated q4_0 and q5_0 encoders also pick each block's scale by a small search minimising
// the block's squared error (searchSymBlock) instead of ggml's max/−8 (max/−16): the layout is
// ggml's, so every decoder and kernel reads the bytes unchanged, but the bytes are not what
// ggml's quantizer writes. The unrotated variants ("q4_0-r", RawSuffix) are byte-identical to
// ggml's reference quantizers, as before.

// RawSuffix is the name suffix of a format's unrotated variant: "q4_0-r".
const RawSuffix = "-r"

// Rotatable reports whether the format is a quantized format that is rotated by default and
// has an unrotated "-r" variant: the quantized row formats and q2k's K (Q2KRot). Plain formats
// (f32, f16, bf16) are never rotated; tq4 and the turbo tiers are always rotated (the rotation
// is part of their format).
func (f Format) Rotatable() bool {
	switch f {
	case Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, FP8, Q2K:
		return true
	}
	return false
}

// KRotated reports whether the pair's K rows are stored rotated.
func (p Pair) KRotated() bool { return p.K.Rotatable() && !p.KRaw }

// VRotated reports whether the pair's V rows are stored rotated.
func (p Pair) VRotated() bool { return p.V.Rotatable() && !p.VRaw }

// KName is the K half's name with the "-r" suffix when it is stored unrotated.
func (p Pair) KName() string { return halfName(p.K, p.KRaw) }

// VName is the V half's name with the "-r" suffix when it is stored unrotated.
func (p Pair) VName() string { return halfName(p.V, p.VRaw) }

func halfName(f Format, raw bool) string {
	if raw && f.Rotatable() {
		return f.String() + RawSuffix
	}
	return f.String()
}

// Unrotated returns p with every rotatable half marked raw ("q4_0" → "q4_0-r"), for backends
// that store formats only unrotated.
func (p Pair) Unrotated() Pair {
	p.KRaw, p.VRaw = p.K.Rotatable(), p.V.Rotatable()
	return p
}

// parseHalf reads one half of a pair: a format name, optionally with the "-r" suffix.
func parseHalf(name string) (Format, bool, error) {
	n := strings.TrimSpace(name)
	raw := false
	if len(n) > len(RawSuffix) && strings.EqualFold(n[len(n)-len(RawSuffix):], RawSuffix) {
		n, raw = n[:len(n)-len(RawSuffix)], true
	}
	f, err := Parse(n)
	if err != nil {
		return Invalid, false, err
	}
	if raw && !f.Rotatable() {
		how := "it is never rotated"
		if f == TQ4 || f.turbo() {
			how = "its rotation is part of the format"
		}
		return Invalid, false, fmt.Errorf("%w: %s has no unrotated %q variant: %s", ErrUnsupported, f, RawSuffix, how)
	}
	return f, raw, nil
}

// kvChannelThreshold is the channel RMS, relative to the median channel's, above which a K
// channel gets its own power-of-two scale in the rotated codecs.
const kvChannelThreshold = 2

// Calibrator is implemented by codecs that fix per-channel scales from the first rows a cache
// writes (the rotated codecs, for K). Calibrate replaces the scales from the n rows (n × Dim
// values); rows encoded before are not re-encoded, so a store calls it only when it holds no
// cells. It must not run concurrently with other calls on the codec.
type Calibrator interface {
	Calibrate(rows []float32, n int)
}

// ChannelScales returns the per-channel K scales λ for the n rows (n × d values): 1 for every
// channel whose RMS is at most kvChannelThreshold × the median channel RMS, else the power of
// two nearest RMS_c/median (on the log scale), capped at 2^20. It returns nil when every λ is 1.
func ChannelScales(rows []float32, n, d int) []float32 {
	if n <= 0 || d <= 0 {
		return nil
	}
	rms := make([]float64, d)
	for i := 0; i < n; i++ {
		for c, v := range rows[i*d : (i+1)*d] {
			if !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v)) {
				rms[c] += float64(v) * float64(v)
			}
		}
	}
	sorted := slices.Clone(rms)
	slices.Sort(sorted)
	med := sorted[d/2]
	if !(med > 0) {
		return nil
	}
	var out []float32
	for c, ss := range rms {
		r := math.Sqrt(ss / med) // RMS_c / median RMS (the n cancels)
		if !(r > kvChannelThreshold) {
			continue
		}
		if out == nil {
			out = make([]float32, d)
			for i := range out {
				out[i] = 1
			}
		}
		e := min(math.Round(math.Log2(r)), 20)
		out[c] = float32(math.Ldexp(1, int(e)))
	}
	return out
}

// kvStableMean bounds how far a channel's mean over the first half of the calibration rows may
// lie from its mean over the second half, relative to the whole mean, for ChannelMeans to keep it.
const kvStableMean = 0.5

// ChannelMeans returns the per-channel K offsets μ for the n rows (n × d values; non-finite
// values count as 0): each channel's mean, or 0 where it is not stable across the rows. With at
// least 8 rows a channel whose means over the first and the second half differ by more than
// kvStableMean × its mean gets 0: after RoPE a pair's mean turns with the position, so an
// unstable mean would not hold for the cells written later. It returns nil for no rows.
func ChannelMeans(rows []float32, n, d int) []float32 {
	if n <= 0 || d <= 0 {
		return nil
	}
	sum := make([]float64, d)
	for i := 0; i < n; i++ {
		for c, v := range rows[i*d : (i+1)*d] {
			if !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v)) {
				sum[c] += float64(v)
			}
		}
	}
	out := make([]float32, d)
	for c, s := range sum {
		out[c] = float32(s / float64(n))
	}
	if n >= 8 {
		h := n / 2
		for c := range out {
			var a, b float64
			for i := 0; i < h; i++ {
				a += float64(rows[i*d+c])
			}
			for i := h; i < n; i++ {
				b += float64(rows[i*d+c])
			}
			a /= float64(h)
			b /= float64(n - h)
			if math.Abs(a-b) > kvStableMean*math.Abs(float64(out[c])) {
				out[c] = 0
			}
		}
	}
	return out
}

// rotCodec is a Rotatable format (or a turbo tier) stored through the rotation: see the rotated
// formats above. inner is the format's own codec, which sees only rotated rows.
type rotCodec struct {
	inner Codec
	rot   *rotation
	d     int
	// enc, when set, replaces inner.Encode on the rotated row (the scale-searched q4_0 and
	// q5_0 encoders); it writes the same layout.
	enc func(dst []byte, y []float32)
	// The calibration (Calibrate; all nil when none): lam the per-channel scales λ, ilam their
	// inverses (exact: powers of two), mu the per-channel offsets μ (value domain) and muR the
	// offset as stored rows see it, R·(μ/λ).
	lam, ilam, mu, muR []float32
	// ident, set by ChooseRotation, stores the rows unrotated (R = I): the identity measured
	// better than every rotation on the rows it chose from.
	ident bool
	// base is the rotation of (Seed, Layer, Head); ChooseRotation may replace rot by one of its
	// alternates (altRotation), drawn from opt: alt is 0 for base, k+1 for the k-th alternate.
	base *rotation
	alt  int
	opt  CodecOptions
}

// fwd writes dst = R·src (src when the codec chose the identity; dst may alias src).
func (c *rotCodec) fwd(dst, src []float32) {
	if c.ident {
		copy(dst[:c.d], src[:c.d])
		return
	}
	c.rot.apply(dst, src)
}

// back maps v to Rᵀ·v in place.
func (c *rotCodec) back(v []float32) {
	if !c.ident {
		c.rot.applyT(v, v)
	}
}

// newRotCodec wraps the codec inner of a Rotatable format in the rotation of opt.
func newRotCodec(inner Codec, opt CodecOptions) *rotCodec {
	d := inner.Dim()
	c := &rotCodec{inner: inner, rot: newRotation(d, opt.Seed, opt.Layer, opt.Head), d: d, opt: opt}
	c.base = c.rot
	switch inner.Format() {
	case Q4_0:
		c.enc = func(dst []byte, y []float32) { searchedBlockRow(dst, y, 2, 8, 7) }
	case Q5_0:
		c.enc = func(dst []byte, y []float32) { searchedBlockRow(dst, y, 2, 16, 15) }
	}
	return c
}

// Unwrap returns the codec that reads c's stored bytes: the format's own codec under a rotated
// one (whose kernels then see prepared queries and rotated rows), c itself otherwise.
func Unwrap(c Codec) Codec {
	if r, ok := c.(*rotCodec); ok {
		return r.inner
	}
	return c
}

func (c *rotCodec) Format() Format { return c.inner.Format() }
func (c *rotCodec) Dim() int       { return c.d }
func (c *rotCodec) RowBytes() int  { return c.inner.RowBytes() }

// Calibrate sets the per-channel scales (ChannelScales) and offsets (ChannelMeans) from n rows.
func (c *rotCodec) Calibrate(rows []float32, n int) {
	c.lam, c.ilam, c.mu = calibration(rows, n, c.d)
	c.setMuR()
}

// calibration is the per-channel K scales λ (ChannelScales), their inverses (exact: powers of
// two) and the offsets μ (ChannelMeans) of n rows of d values; each nil when there are none.
func calibration(rows []float32, n, d int) (lam, ilam, mu []float32) {
	if lam = ChannelScales(rows, n, d); lam != nil {
		ilam = make([]float32, d)
		for i, l := range lam {
			ilam[i] = 1 / l
		}
	}
	return lam, ilam, ChannelMeans(rows, n, d)
}

// setMuR computes muR = R·(μ/λ) from mu; muR is nil when every offset is 0 (ChannelMeans
// gives 0 for every channel whose mean is not stable, which may be all of them), so that the
// scores and accumulators skip a pass that would add zeros (measured at about 3 ms a token at
// 131072 cells and 32/8 heads where the kernels do not take the offsets).
func (c *rotCodec) setMuR() { c.muR = rotatedOffset(c.mu, c.ilam, c.fwd) }

// rotatedOffset is the offset μ as rotated rows see it, fwd(μ⊙ilam) (ilam nil: all 1), or nil
// where μ is nil or all 0.
func rotatedOffset(mu, ilam []float32, fwd func(dst, src []float32)) []float32 {
	if mu == nil || !slices.ContainsFunc(mu, func(m float32) bool { return m != 0 }) {
		return nil
	}
	r := slices.Clone(mu)
	for i, l := range ilam {
		r[i] *= l
	}
	fwd(r, r)
	return r
}

// RotationChooser is implemented by the rotated codecs of the Rotatable formats, whose
// rotation may be replaced for a store: ChooseRotation encodes the n rows (n × Dim values)
// through each candidate and keeps the one with the smallest total squared error (the earlier
// candidate on ties). The candidates are the rotation of (Seed, Layer, Head), then, when the
// write has at most chooseAltRows rows, chooseAlts alternate sign draws (altRotation), and last
// the identity. Like Calibrate, a store calls it only when it holds no cells, and it must not
// run concurrently with other calls on the codec.
//
// A rotation spreads each row's energy evenly over its blocks, which on average lowers a
// blockwise quantizer's error, but on a given row it may raise it: on kvlab-tiny-64, whose V
// rows are already Gaussian-like, the rotated q4_0 error of the first cell's V (BOS) ranges over
// 0.55–1.8× ggml's across sign draws. With one cell that row is the attention's whole output, and
// the BOS cell keeps a large share of the attention afterwards. Chosen on the first write, the
// default is never worse on those rows than the unrotated searched encoder, which is never worse
// than ggml's on any block (searchSymBlock); the alternates matter only for short first writes
// (a prompt of a few tokens), where one row's draw decides the error.
type RotationChooser interface {
	ChooseRotation(rows []float32, n int)
}

const (
	// chooseRows bounds the rows ChooseRotation encodes per candidate (evenly spaced over a
	// longer write).
	chooseRows = 64
	// chooseAlts alternate rotations are tried for first writes of at most chooseAltRows rows.
	chooseAlts, chooseAltRows = 7, 8
)

// altRotation is the k-th alternate of the rotation of (seed, layer, head): the same blocks with
// the signs drawn from seed ⊕ mix64(0x5eed + k).
func altRotation(d int, opt CodecOptions, k int) *rotation {
	return newRotation(d, opt.Seed^mix64(0x5eed+uint64(k)), opt.Layer, opt.Head)
}

// ChooseRotation implements RotationChooser. The turbo tiers keep their rotation (their
// codebooks assume rotated rows).
func (c *rotCodec) ChooseRotation(rows []float32, n int) {
	c.ident, c.rot, c.alt = false, c.base, 0
	if n <= 0 || !c.inner.Format().Rotatable() || len(rows) < n*c.d {
		c.setMuR()
		return
	}
	step := max(1, n/chooseRows)
	buf := make([]byte, c.RowBytes())
	dec := make([]float32, c.d)
	sqErr := func() float64 {
		var e float64
		for i := 0; i < n; i += step {
			x := rows[i*c.d : (i+1)*c.d]
			c.Encode(buf, x)
			c.Decode(dec, buf)
			for j, v := range x {
				r := float64(v) - float64(dec[j])
				e += r * r
			}
		}
		return e
	}
	c.setMuR()
	best, bestRot, bestAlt := sqErr(), c.rot, 0
	for k := 0; n <= chooseAltRows && k < chooseAlts; k++ {
		c.rot = altRotation(c.d, c.opt, k)
		c.setMuR()
		if e := sqErr(); e < best {
			best, bestRot, bestAlt = e, c.rot, k+1
		}
	}
	c.rot, c.alt, c.ident = bestRot, bestAlt, true
	c.setMuR()
	if id := sqErr(); !(id < best) {
		c.ident = false
		c.setMuR()
	}
}

// IsIdentityRotation reports whether the codec c stores its rows unrotated: a codec without rotation,
// or a rotated one whose ChooseRotation picked the identity.
func IsIdentityRotation(c Codec) bool {
	r, ok := c.(*rotCodec)
	return !ok || r.ident
}

// ChannelScalesOf returns the codec's per-channel K scales (nil when none are set).
func ChannelScalesOf(c Codec) []float32 {
	if r, ok := c.(*rotCodec); ok {
		return r.lam
	}
	return nil
}

// ChannelMeansOf returns the codec's per-channel K offsets (nil when none are set).
func ChannelMeansOf(c Codec) []float32 {
	if r, ok := c.(*rotCodec); ok {
		return r.mu
	}
	return nil
}

// Encode stores inner's bytes of R·((x−μ)/λ).
func (c *rotCodec) Encode(dst []byte, src []float32) { c.encodeRows(dst, src, 1) }

// encodeRows is Encode of n rows (src n·Dim values, dst n·RowBytes bytes), one scratch row
// for all of them: the same bytes, row by row.
func (c *rotCodec) encodeRows(dst []byte, src []float32, n int) {
	// The rotation's scratch comes from a pool: a stack array would escape through c.fwd, c.enc
	// and the inner codec and cost a 4 KiB allocation (and its clearing) per call.
	var y []float32
	if c.d <= tq4StackDim {
		buf := rotBufs.Get()
		defer rotBufs.Put(buf)
		y = buf[:c.d]
	} else {
		y = make([]float32, c.d)
	}
	rb := c.RowBytes()
	for r := 0; r < n; r++ {
		row := src[r*c.d : (r+1)*c.d]
		if c.ident || !rotRowVec(c.rot, y, row, c.mu, c.ilam) {
			copy(y, row)
			if c.mu != nil {
				for i, m := range c.mu {
					y[i] -= m
				}
			}
			if c.ilam != nil {
				for i, l := range c.ilam {
					y[i] *= l
				}
			}
			c.fwd(y, y)
		}
		if c.enc != nil {
			c.enc(dst[r*rb:(r+1)*rb], y)
			continue
		}
		c.inner.Encode(dst[r*rb:(r+1)*rb], y)
	}
}

// EncodeRows encodes n rows of c (src n·Dim values) into dst (n·RowBytes bytes), each as Encode
// does: the rotated formats, which stage each row rotated, take their scratch once for the n.
func EncodeRows(c Codec, dst []byte, src []float32, n int) {
	if r, ok := c.(*rotCodec); ok {
		r.encodeRows(dst, src, n)
		return
	}
	d, rb := c.Dim(), c.RowBytes()
	for i := 0; i < n; i++ {
		c.Encode(dst[i*rb:(i+1)*rb], src[i*d:(i+1)*d])
	}
}

// rotBufs holds rotCodec.Encode's scratch rows between calls.
var rotBufs keep.Pool[[tq4StackDim]float32]

// toValue maps a rotated-domain vector to the value domain in place: λ⊙Rᵀ·v.
func (c *rotCodec) toValue(v []float32) {
	c.back(v)
	if c.lam != nil {
		for i, l := range c.lam {
			v[i] *= l
		}
	}
}

// Decode writes λ⊙Rᵀ·ŷ + μ: the value domain.
func (c *rotCodec) Decode(dst []float32, row []byte) {
	c.inner.Decode(dst, row)
	c.toValue(dst)
	if c.mu != nil {
		for i, m := range c.mu {
			dst[i] += m
		}
	}
}

// PrepareQuery writes inner's prepared R·(λ⊙q) (dst may alias q).
func (c *rotCodec) PrepareQuery(dst, q []float32) {
	if c.lam != nil {
		for i, l := range c.lam {
			dst[i] = q[i] * l
		}
		q = dst
	}
	c.fwd(dst, q)
	c.inner.PrepareQuery(dst, dst)
}

// FinishAccumulate writes λ⊙Rᵀ·acc (inner's finished accumulator) into dst.
func (c *rotCodec) FinishAccumulate(dst, acc []float32) {
	c.inner.FinishAccumulate(dst, acc)
	c.toValue(dst)
}

// qmu is q'·R·(μ/λ) = q·μ for a prepared query q': the offset's part of every score.
func (c *rotCodec) qmu(q []float32) float32 {
	if c.muR == nil {
		return 0
	}
	return lmDot(q[:c.d], c.muR)
}

func (c *rotCodec) Dot(q []float32, row []byte) float32 { return c.inner.Dot(q, row) + c.qmu(q) }

func (c *rotCodec) DotMany(q []float32, rows []byte, out []float32) {
	c.inner.DotMany(q, rows, out)
	if m := c.qmu(q); m != 0 {
		for j := range out {
			out[j] += m
		}
	}
}

// AccumulateScaled adds w·(ŷ + R·(μ/λ)), so that FinishAccumulate returns Σ w·x̂ with the
// offset included.
func (c *rotCodec) AccumulateScaled(acc []float32, w float32, row []byte) {
	c.inner.AccumulateScaled(acc, w, row)
	c.accOffset(acc[:c.d], w)
}

func (c *rotCodec) accOffset(acc []float32, w float32) {
	if c.muR != nil {
		for i, m := range c.muR {
			acc[i] += w * m
		}
	}
}

func (c *rotCodec) AccumulateMany(acc []float32, w []float32, rows []byte) {
	c.inner.AccumulateMany(acc, w, rows)
	if c.muR != nil {
		var sw float32
		for _, x := range w {
			sw += x
		}
		c.accOffset(acc[:c.d], sw)
	}
}

// DotManyMulti uses inner's multi-query kernels where it has them.
func (c *rotCodec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if c.muR == nil || n <= 0 {
		dotManyMulti(c.inner, q, n, rows, out)
		return
	}
	// The offset's part of query h's scores, q_h·μ, is the same for every row: the integer
	// kernels start each score from it, with q_h as they round it (ScoresGrid), sparing a pass
	// over the scores (~4 ms a token at 131072 cells and 32/8 heads, as much as the q4_0 keys
	// themselves); the others add it after.
	if in, ok := c.inner.(muScorer); ok {
		in.dotManyMultiMu(q, n, rows, out, c.muR)
		return
	}
	dotManyMulti(c.inner, q, n, rows, out)
	addOffsets(c.d, q, n, out, c.muR)
}

// muScorer is a codec whose multi-query scores can start from per-query offsets q_h·μ
// (q4_0, q8_0, iq4_nl, q4_1, q5_0, q5_1 and the turbo tiers: their integer kernels take them,
// their float path adds them after; fp8 adds them after, with the query as its scores round it).
type muScorer interface {
	dotManyMultiMu(q []float32, n int, rows []byte, out, mu []float32)
}

// addOffsets adds q_h·mu to every score of query h in out (rows × n, row-major; q n × d); a
// trailing partial row is left alone. Up to 64 queries the adds run as vector adds (AddF32s) of
// the n offsets repeated over up to 256 values, each score one float32 addition as a loop's:
// over 131072 cells × 4 queries 56 µs against 214 µs for the loop (Intel Xeon).
func addOffsets(d int, q []float32, n int, out, mu []float32) {
	if n <= 0 {
		return
	}
	out = out[:len(out)/n*n]
	if n > 64 {
		off := make([]float32, n)
		for h := range off {
			off[h] = lmDot(q[h*d:(h+1)*d], mu)
		}
		for j := 0; j < len(out); j += n {
			o := out[j : j+n : j+n]
			for h, x := range off {
				o[h] += x
			}
		}
		return
	}
	var pat [256]float32
	p := len(pat) / n * n
	for h := range n {
		pat[h] = lmDot(q[h*d:(h+1)*d], mu)
	}
	for i := n; i < p; i++ {
		pat[i] = pat[i-n]
	}
	j := 0
	for ; j+p <= len(out); j += p {
		AddF32s(out[j:j+p], pat[:p])
	}
	AddF32s(out[j:], pat[:len(out)-j])
}

// AccumulateManyMulti uses inner's multi-query kernels where it has them.
func (c *rotCodec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	accumulateManyMulti(c.inner, acc, n, w, rows)
	if n > 0 {
		c.accOffsets(acc, c.d, n, w)
	}
}

// accOffsets adds, to accumulator h at acc[h·stride:] for h < n, the offset R·(μ/λ) times the
// sum of its weights (w rows × n, row-major): AccumulateManyMulti's part of the offset.
func (c *rotCodec) accOffsets(acc []float32, stride, n int, w []float32) {
	if c.muR == nil {
		return
	}
	for h := 0; h < n; h++ {
		var sw float32
		for j := h; j < len(w); j += n {
			sw += w[j]
		}
		c.accOffset(acc[h*stride:h*stride+c.d], sw)
	}
}

// ---- scale-searched symmetric block encoders (rotated q4_0, q5_0)

// searchedBlockRow encodes a row of a symmetric block format (header hdr bytes: the f16 scale;
// codes n + lo for n ∈ [−lo, hi]) block by block with searchSymBlock, packing each block's codes
// as the format does: nibbles (q4_0, lo 8) or nibbles and high bits (q5_0, lo 16). The packers
// are called directly, not through a func value, so that the codes stay on the stack.
func searchedBlockRow(dst []byte, y []float32, hdr int, lo, hi int32) {
	var codes [BlockSize]byte
	for off := 0; off < len(y); off += BlockSize {
		n := min(BlockSize, len(y)-off)
		d := searchSymBlock(y[off:off+n], lo, hi, codes[:n])
		binary.LittleEndian.PutUint16(dst, d)
		if lo == 16 {
			q5_0Pack(dst[hdr:], codes[:n])
		} else {
			q4_0Pack(dst[hdr:], codes[:n])
		}
		dst = dst[hdr+(n+1)/2+packHigh(lo, n):]
	}
}

// packHigh is the bytes of high bits a block of n values of the format with offset lo carries.
func packHigh(lo int32, n int) int {
	if lo == 16 {
		return (n + 7) / 8
	}
	return 0
}

func q4_0Pack(dst []byte, codes []byte) { blockPackNibbles(dst, codes) }
func q5_0Pack(dst []byte, codes []byte) {
	nh := (len(codes) + 7) / 8
	blockPackHigh(dst[:nh], dst[nh:], codes)
}

// searchSteps are the candidate divisors of the block's largest magnitude, in units of one
// step, relative to the format's full range: the search tries max/(−lo·t) and max/(hi·t) for
// each t. On Gaussian blocks these eight take the MSE to 0.88× ggml's (q4_0; 0.86× for q5_0),
// where {0.9, 1} reached 0.91× (0.89×). On kvlab-tiny-64 (`kvlab ab --ctx 128`, rotation seeds
// 1–5) the default q4_0's prompt KL went from 0.0085 to 0.0070 on average (decode KL 0.0174 to
// 0.0157); four steps {0.8, 0.9, 1, 1.05} reached 0.0073.
var searchSteps = searchStepsArr[:]

var searchStepsArr = [...]float32{0.75, 0.8, 0.85, 0.9, 0.95, 1, 1.05, 1.1}

// symSearchFastMin is the smallest block magnitude symSearchFast takes: every candidate scale
// max/(k·t) is then a normal float32 whose inverse is finite, so that every |v/d| ≤ k·t·(1+2⁻²³)
// lies far inside int32 and the truncation below needs no range checks.
const symSearchFastMin = 1e-30

// symSearchFast is stage 1 of searchSymBlock for a block without NaN or infinities whose
// magnitude is at least symSearchFastMin (searchSymBlock's fast, which the caller checks): for
// every candidate d (ds; 0 to skip) the sums Σ x_i·q_i and Σ q_i² (float64, in element order,
// as the reference loop adds them) of its codes q_i = symCode(x_i/d) − lo, by a vector kernel
// where the CPU has one (symSearchVec), else by symSearchGo.
func symSearchFast(x []float32, ds *[16]float32, lo, hi int32, sxc, scc *[16]float64) {
	var id [16]float32
	for k, d := range ds {
		if d != 0 {
			id[k] = 1 / d
		}
	}
	if !symSearchVec(x, &id, lo, hi, sxc, scc) {
		symSearchGo(x, &id, lo, hi, sxc, scc)
	}
}

// symSearchGo is symSearchFast's loop in Go: the candidates four at a time, so that four sums
// are in flight per value, the code clamped with integer min/max instead of branches. The sums
// are the reference loop's to the bit: x·q is exact in float64 (a float32 times an integer below
// 2⁵), and Σ q² is an integer far below 2⁵³.
func symSearchGo(x []float32, id *[16]float32, lo, hi int32, sxc, scc *[16]float64) {
	off := float64(lo) + 0.5
	top := lo + hi
	for k := 0; k < 16; k += 4 {
		i0, i1, i2, i3 := id[k], id[k+1], id[k+2], id[k+3]
		var s0, s1, s2, s3 float64
		var c0, c1, c2, c3 int32
		for _, v := range x {
			v64 := float64(v)
			q0 := min(max(int32(float64(v*i0)+off), 0), top) - lo
			q1 := min(max(int32(float64(v*i1)+off), 0), top) - lo
			q2 := min(max(int32(float64(v*i2)+off), 0), top) - lo
			q3 := min(max(int32(float64(v*i3)+off), 0), top) - lo
			s0 += v64 * float64(q0)
			s1 += v64 * float64(q1)
			s2 += v64 * float64(q2)
			s3 += v64 * float64(q3)
			c0 += q0 * q0
			c1 += q1 * q1
			c2 += q2 * q2
			c3 += q3 * q3
		}
		sxc[k], sxc[k+1], sxc[k+2], sxc[k+3] = s0, s1, s2, s3
		scc[k], scc[k+1], scc[k+2], scc[k+3] = float64(c0), float64(c1), float64(c2), float64(c3)
	}
}

// searchSymBlock picks the f16 scale d̂ and codes c_i ∈ [0, lo+hi] (value (c_i − lo)·d̂) of one
// block that minimise Σ (x_i − (c_i−lo)·d̂)² over a small candidate set: for each scale
// max/(−lo·t) and max/(hi·t) (t in searchSteps; max the signed value of largest magnitude) the
// nearest codes and their least-squares scale, whose error is known exactly from two sums; the
// two best of those scales are rounded to f16 and the codes nearest each scored exactly. ggml's
// own block (its codes at the
// unrounded scale, then the scale rounded to f16) is the first candidate, kept on ties: the
// block's squared error is never above ggml's. An all-zero (or non-finite) block stores d̂ = 0
// and codes lo.
func searchSymBlock(x []float32, lo, hi int32, codes []byte) uint16 {
	mx, amax := blockSignedMax(x)
	for i := range codes {
		codes[i] = byte(lo)
	}
	if !(amax > 0) || math.IsInf(float64(amax), 0) {
		return 0
	}
	var best, cand [BlockSize]byte
	bestErr := math.Inf(1)
	var bestD uint16
	// ggml's own block first (its scale max/−lo, its codes and rounding, no refit), so that the
	// search keeps ggml's bytes unless a candidate is strictly better: the block's error is
	// never above ggml's.
	// fast: no NaN and a magnitude whose candidate scales are all normal (symSearchFastMin), so
	// that every code's float value lies far inside int32 and the branch-free clamps below give
	// blockClamp's and symCode's codes.
	fast := amax >= symSearchFastMin && !slices.ContainsFunc(x, func(v float32) bool { return v != v })
	top := lo + hi
	if d := mx / -float32(lo); d != 0 {
		id := 1 / d
		ds := F16ToF32(F32ToF16(d))
		var e float64
		for i, v := range x {
			var c byte
			if fast {
				c = byte(min(max(int32(float32(v*id)+float32(lo)+0.5), 0), top))
			} else {
				c = blockClamp(float32(v*id)+float32(lo)+0.5, lo+hi)
			}
			cand[i] = c
			r := float64(v) - float64(int32(c)-lo)*float64(ds)
			e += r * r
		}
		bestErr, bestD, best = e, F32ToF16(d), cand
	}
	// Stage 1: each candidate scale's codes and their least-squares refit s = Σxq/Σq², whose
	// error Σx² − (Σxq)²/Σq² is exact before s is rounded to f16: rank the candidates by it.
	var sxx float64
	for _, v := range x {
		sxx += float64(v) * float64(v)
	}
	// The candidate scales in searchSteps order (max/(−lo·t), then max/(hi·t)); a zero or
	// non-finite one is skipped (d = 0).
	var ds [2 * len(searchStepsArr)]float32
	for i, t := range searchStepsArr {
		for j, d := range [2]float32{mx / (-float32(lo) * t), mx / (float32(hi) * t)} {
			if d == 0 || math.IsInf(float64(d), 0) || math.IsNaN(float64(d)) {
				d = 0
			}
			ds[2*i+j] = d
		}
	}
	var sxc, scc [len(ds)]float64
	if fast {
		symSearchFast(x, &ds, lo, hi, &sxc, &scc)
	} else {
		for k, d := range ds {
			if d == 0 {
				continue
			}
			id := 1 / d
			var xc, cc float64
			for _, v := range x {
				q := float64(int32(symCode(v*id, lo, hi)) - lo)
				xc += float64(v) * q
				cc += q * q
			}
			sxc[k], scc[k] = xc, cc
		}
	}
	type refit struct {
		s, e float64
	}
	top2 := [2]refit{{e: math.Inf(1)}, {e: math.Inf(1)}}
	for k, d := range ds {
		if d == 0 || scc[k] == 0 {
			continue
		}
		r := refit{s: sxc[k] / scc[k], e: sxx - sxc[k]*sxc[k]/scc[k]}
		if r.e < top2[0].e {
			top2[0], top2[1] = r, top2[0]
		} else if r.e < top2[1].e && r.s != top2[0].s {
			top2[1] = r
		}
	}
	// Stage 2: the two best refits rounded to f16, the codes nearest each, their exact error.
	// For a fast block whose two scales keep every |x/d̂| below 2²⁰, both in one pass (two
	// independent error sums, each in element order; codes clamped branch-free), else one by one.
	var hs [2]uint16
	var dss [2]float32
	var ok [2]bool
	for k, r := range top2 {
		if math.IsInf(r.e, 1) {
			continue
		}
		hs[k] = F32ToF16(float32(r.s))
		dss[k] = F16ToF32(hs[k])
		ok[k] = dss[k] != 0 && !math.IsInf(float64(dss[k]), 0)
	}
	var es [2]float64
	var cands [2][BlockSize]byte
	if fast && ok[0] && ok[1] && amax/dss[0] < 1<<20 && amax/dss[1] < 1<<20 {
		id0, id1 := 1/dss[0], 1/dss[1]
		d0, d1 := float64(dss[0]), float64(dss[1])
		off := float64(lo) + 0.5 // float64(v·id) + lo + ½ is exact below 2²⁰: symCode's sum
		var e0, e1 float64
		for i, v := range x {
			c0 := min(max(int32(float64(v*id0)+off), 0), top)
			c1 := min(max(int32(float64(v*id1)+off), 0), top)
			cands[0][i], cands[1][i] = byte(c0), byte(c1)
			r0 := float64(v) - float64(c0-lo)*d0
			r1 := float64(v) - float64(c1-lo)*d1
			e0 += r0 * r0
			e1 += r1 * r1
		}
		es = [2]float64{e0, e1}
	} else {
		for k := range ok {
			if !ok[k] {
				continue
			}
			id := 1 / dss[k]
			var e float64
			for i, v := range x {
				c := symCode(v*id, lo, hi)
				cands[k][i] = c
				d := float64(v) - float64(int32(c)-lo)*float64(dss[k])
				e += d * d
			}
			es[k] = e
		}
	}
	for k := range ok {
		if ok[k] && es[k] < bestErr {
			bestErr, bestD, best = es[k], hs[k], cands[k]
		}
	}
	copy(codes, best[:len(codes)])
	return bestD
}

// symCode is the code of the integer nearest v (halfway up) clamped into [−lo, hi], offset by lo.
func symCode(v float32, lo, hi int32) byte {
	f := float64(v) + float64(lo) + 0.5
	if !(f >= 0) {
		return 0
	}
	if f >= float64(lo+hi) {
		return byte(lo + hi)
	}
	return byte(int32(f))
}

// The format versions: what a stored pair name meant when it was measured. A run history keeps
// the version of every run it records, so that a name measured before a change of meaning is
// shown with the meaning it had.
const (
	// FormatsUnrotated: every name is the unrotated, ggml-identical format ("q4_0" is today's
	// "q4_0-r"; no "-r" suffix and no turbo tiers existed).
	FormatsUnrotated = 1
	// FormatsRotated: the Rotatable formats are rotated by default, "-r" names the unrotated
	// variant; K is calibrated from the first write.
	FormatsRotated = 2
	// FormatsChosenRotation: as FormatsRotated, and a V store chooses its rotation from its
	// first write (RotationChooser); the searched q4_0/q5_0 scale never exceeds ggml's error.
	FormatsChosenRotation = 3
	// FormatsIntegerLevels: as FormatsChosenRotation, and the levels of tq4 and the turbo tiers
	// are whole multiples of one unit per tier (their Lloyd–Max levels rounded; MSE on N(0,1)
	// 0.0095062, 0.0345486 and 0.1174819 against 0.009501, 0.034548 and 0.117480), so the
	// integer score kernels sum them exactly. The same codes decode within half a unit of what
	// they decoded to before (at most 0.0131 of a row's scale for tq4 and turbo4, 0.0122 for
	// turbo3, 0.0084 for turbo2), far inside the codes' own error: a snapshot or run of an
	// earlier version keeps its meaning to that precision and is not upgraded.
	FormatsIntegerLevels = 4
	// FormatsQ2KRotated: as FormatsIntegerLevels, and q2k's K is rotated and calibrated from
	// its pool's first write (Q2KRot); "q2k-r" names the K stored as it comes, what "q2k" was.
	FormatsQ2KRotated = 5
	// FormatVersion is the version this package's formats have.
	FormatVersion = FormatsQ2KRotated
)

// NameAtVersion returns the pair name (as ParsePair reads it) that a pair named name at
// format version v is called today: at FormatsUnrotated every Rotatable half gains the "-r"
// suffix ("q8_0/q4_0" → "q8_0-r/q4_0-r", "q2k" → "q2k-r"); before FormatsQ2KRotated a q2k K
// does ("q2k" → "q2k-r/q4_0"); at later versions, or for a name that does not parse, the name
// is returned unchanged.
func NameAtVersion(name string, v int) string {
	if v >= FormatsQ2KRotated {
		return name
	}
	p, err := ParsePair(name)
	if err != nil {
		return name
	}
	if v < FormatsRotated {
		return p.Unrotated().String()
	}
	if p.K == Q2K {
		p.KRaw = true
	}
	return p.String()
}

// PairBitsPerValue is the pair's storage cost per value, K and V averaged over a cell's
// headDimK + headDimV values.
func (p Pair) PairBitsPerValue(headDimK, headDimV int) float64 {
	if headDimK+headDimV <= 0 {
		return 0
	}
	return 8 * p.BytesPerToken(headDimK, headDimV, 1) / float64(headDimK+headDimV)
}
