// Package lab measures what KV formats cost, the ways seed 003 does: the attention-output gate
// on synthetic K/V (RunGate) and, on a real model (RunAB), teacher-forced decode KL and top-1
// agreement against an f16 cache, prompt KL, perplexity, the attention gate on the model's own
// K/V, buried-fact retrieval, and prefill and decode speed.
package lab

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// GateData names a synthetic K/V distribution of the gate.
type GateData string

const (
	// Gaussian is K and V with i.i.d. N(0,1) channels: no channel structure.
	Gaussian GateData = "gaussian"
	// Outlier5 has K channels whose RMS spreads to 5× the median (seed 003's layer 3) and V
	// channels to 8×.
	Outlier5 GateData = "outlier5x"
	// Outlier75 has K channels whose RMS spreads to 75× the median (seed 003's layer 47) and
	// V channels to 14×.
	Outlier75 GateData = "outlier75x"
)

// GateDatasets are the distributions the gate runs by default.
var GateDatasets = []GateData{Gaussian, Outlier5, Outlier75}

// GateCase is one cache the gate measures: a distribution at one head dimension.
type GateCase struct {
	Data    GateData
	HeadDim int
	Cells   int
	Queries int // query heads sharing the one KV head
	Seed    uint64
}

// GateResult is the gate's measurement of one format pair on one case.
type GateResult struct {
	Pair    string   `json:"pair"`
	Data    GateData `json:"data"`
	HeadDim int      `json:"head_dim"`
	// RelErr is ‖o_arm − o_f32‖ / ‖o_f32‖ over every query head's output, where o_arm is
	// computed by the reference path over the arm's stored K/V and o_f32 over the exact cache.
	RelErr float64 `json:"rel_err"`
	// FastVsRef is the same norm between the fast path (batched packed reads, chunked online
	// softmax) and the reference path over the same stored K/V. Where the fast path's scores
	// round the query to an integer grid (kvq.ScoresGrid: the ggml block formats' keys on CPUs
	// with AVX-512 VNNI), its reference is the single-row ops scoring the same rounded query;
	// the rounding's own effect is a few 1e-3 of the output for q4_0, far below RelErr.
	FastVsRef float64 `json:"fast_vs_ref"`
	// OpsVsRef is the norm between attention through the codecs' single-row Dot and
	// AccumulateScaled and the reference (decode every row, float64).
	OpsVsRef float64 `json:"ops_vs_ref"`
	// FastBound is the largest FastVsRef the gate accepts for this pair: FastPathBound, plus
	// AccumulateBound steps of the weights' rounding where the fast path accumulates the values
	// with integer weights (kvq.AccumulateStep of the V codec).
	FastBound float64 `json:"fast_bound"`
	// FastOK reports FastVsRef within FastBound and OpsVsRef within FastPathBound.
	FastOK bool `json:"fast_ok"`
}

// FastPathBound is the largest relative RMS difference between a fast path and its reference
// that the gate accepts where both compute in float32: summation-order noise is ~1e-6 relative.
const FastPathBound = 1e-4

// AccumulateBound is how many steps of the integer accumulation's weight rounding
// (kvq.AccumulateStep, 2⁻¹⁶ of a 64-row tile's largest weight per weight) a fast path's
// relative RMS may add: the kernels' own bound is one half step per weight, against the tile's
// largest; measured on the gate's outlier data it reads 4.4–6.6 steps (softmax weights far
// below their tile's largest carry the same absolute error).
const AccumulateBound = 16

// gateCache is a synthetic single-KV-head cache with its attention queries.
type gateCache struct {
	k, v, q []float32 // cells×d, cells×d, queries×d
}

// makeGateCache draws K, V and queries. Channel c's RMS is 1 for most channels; a few outlier
// channels reach the dataset's spread, log-spaced so the spread has a realistic tail. Queries
// are scaled so the scaled scores over the cache have a standard deviation of 2.5 (a
// moderately sharp softmax, as on real layers), whatever the outliers.
func makeGateCache(gc GateCase) gateCache {
	r := rand.New(rand.NewPCG(gc.Seed, uint64(gc.HeadDim)))
	d, n := gc.HeadDim, gc.Cells
	ch := drawGateChannels(r, gc.Data, d)
	g := gateCache{k: make([]float32, n*d), v: make([]float32, n*d), q: make([]float32, gc.Queries*d)}
	ch.rows(r, g.k, g.v)
	scale := 1 / math.Sqrt(float64(d))
	for h := 0; h < gc.Queries; h++ {
		q := g.q[h*d : (h+1)*d]
		for c := range q {
			q[c] = float32(r.NormFloat64())
		}
		var s1, s2 float64
		for j := 0; j < n; j++ {
			var dot float64
			for c, x := range q {
				dot += float64(x) * float64(g.k[j*d+c])
			}
			dot *= scale
			s1 += dot
			s2 += dot * dot
		}
		std := math.Sqrt(max(s2/float64(n)-(s1/float64(n))*(s1/float64(n)), 1e-12))
		for c := range q {
			q[c] *= float32(2.5 / std)
		}
	}
	return g
}

// gateChannels are the per-channel statistics of a gate data set: K's and V's channel RMS and
// K's channel bias.
type gateChannels struct {
	kRMS, vRMS, kBias []float64
}

// drawGateChannels draws data's channel statistics for d channels from r: an RMS around 1 for
// most channels, a few outlier channels reaching the data set's spread (K 5, V 8 for
// Outlier5; K 75, V 14 for Outlier75), log-spaced so the spread has a realistic tail, and a K
// bias per channel, as real post-RoPE K carries.
func drawGateChannels(r *rand.Rand, data GateData, d int) gateChannels {
	kSpread, vSpread := 1.0, 1.0
	switch data {
	case Outlier5:
		kSpread, vSpread = 5, 8
	case Outlier75:
		kSpread, vSpread = 75, 14
	}
	channelRMS := func(spread float64) []float64 {
		s := make([]float64, d)
		for c := range s {
			s[c] = 0.7 + 0.6*r.Float64() // bulk around 1
		}
		if spread > 1 {
			nOut := max(d/32, 2) // a few outlier channels
			for i := 0; i < nOut; i++ {
				c := r.IntN(d)
				s[c] = math.Pow(spread, float64(i+1)/float64(nOut))
			}
		}
		return s
	}
	ch := gateChannels{kRMS: channelRMS(kSpread), vRMS: channelRMS(vSpread), kBias: make([]float64, d)}
	for c := range ch.kBias {
		ch.kBias[c] = 0.3 * ch.kRMS[c] * r.NormFloat64()
	}
	return ch
}

// rows fills k and v (rows of len(kBias) values, as many as k holds) from r: each value its
// channel's bias (K) plus its RMS times a standard normal draw, K's and V's of a row in turn.
func (ch gateChannels) rows(r *rand.Rand, k, v []float32) {
	d := len(ch.kBias)
	for j := 0; j < len(k)/d; j++ {
		for c := 0; c < d; c++ {
			k[j*d+c] = float32(ch.kBias[c] + ch.kRMS[c]*r.NormFloat64())
			v[j*d+c] = float32(ch.vRMS[c] * r.NormFloat64())
		}
	}
}

// store is one half (K or V) of an arm's cache in the three readers the gate compares.
type store struct {
	rows attn.Rows
	fast interface {
		attn.Keys
		attn.Values
	}
	ops interface {
		attn.Keys
		attn.Values
	}
}

// newStore encodes n rows of d values in format f. KOnly group formats are built by
// newGroupStore.
func newStore(f kvq.Format, d, n int, data []float32) (store, error) {
	if f.Grouped() {
		return newGroupStore(f, d, n, data)
	}
	c, err := kvq.NewCodec(f, d, kvq.CodecOptions{Seed: 1})
	if err != nil {
		return store{}, err
	}
	rb := c.RowBytes()
	buf := make([]byte, n*rb)
	for j := 0; j < n; j++ {
		c.Encode(buf[j*rb:(j+1)*rb], data[j*d:(j+1)*d])
	}
	rs := attn.NewRowStore(c, buf, n)
	return store{rows: rs, fast: rs, ops: attn.Reference{RowStore: rs}}, nil
}

// gridKeys is single-row K ops whose prepared queries are rounded as the codec's multi-query
// scores round them (kvq.ScoresGrid).
type gridKeys struct {
	attn.Keys
	codec kvq.Codec
}

func (g gridKeys) Prepare(dst, q []float32) []float32 {
	pq := g.Keys.Prepare(dst, q)
	kvq.ScoresGrid(g.codec, pq, pq, 1)
	return pq
}

// f32Rows is the exact cache.
type f32Rows struct {
	data []float32
	d    int
}

func (r f32Rows) Len() int                 { return len(r.data) / r.d }
func (r f32Rows) Row(dst []float32, i int) { copy(dst, r.data[i*r.d:(i+1)*r.d]) }

// RunGate measures one pair on one case.
func RunGate(p kvq.Pair, gc GateCase) (GateResult, error) {
	if !p.Valid() {
		return GateResult{}, fmt.Errorf("gate: invalid pair %v", p)
	}
	g := makeGateCache(gc)
	d, n := gc.HeadDim, gc.Cells
	shape := attn.Shape{Heads: gc.Queries, KVHeads: 1, HeadDimK: d, HeadDimV: d,
		Scale: float32(1 / math.Sqrt(float64(d))), ChunkSize: 512}
	exact := make([]float32, gc.Queries*d)
	if err := attn.DecodeReference(exact, g.q, shape, []attn.Rows{f32Rows{g.k, d}}, []attn.Rows{f32Rows{g.v, d}}, 0, n); err != nil {
		return GateResult{}, err
	}
	ks, err := newStore(p.K, d, n, g.k)
	if err != nil {
		return GateResult{}, fmt.Errorf("gate: K %s: %w", p.K, err)
	}
	vs, err := newStore(p.V, d, n, g.v)
	if err != nil {
		return GateResult{}, fmt.Errorf("gate: V %s: %w", p.V, err)
	}
	ref := make([]float32, len(exact))
	if err := attn.DecodeReference(ref, g.q, shape, []attn.Rows{ks.rows}, []attn.Rows{vs.rows}, 0, n); err != nil {
		return GateResult{}, err
	}
	fast := make([]float32, len(exact))
	if err := attn.Decode(fast, g.q, shape, []attn.Keys{ks.fast}, []attn.Values{vs.fast}, 0, n); err != nil {
		return GateResult{}, err
	}
	ops := make([]float32, len(exact))
	if err := attn.Decode(ops, g.q, shape, []attn.Keys{ks.ops}, []attn.Values{vs.ops}, 0, n); err != nil {
		return GateResult{}, err
	}
	fastRef := ref
	if rs, ok := ks.fast.(*attn.RowStore); ok && kvq.ScoresGrid(rs.Codec, make([]float32, d), g.q[:d], 1) > 0 {
		fastRef = make([]float32, len(exact))
		gk := gridKeys{Keys: ks.ops, codec: rs.Codec}
		if err := attn.Decode(fastRef, g.q, shape, []attn.Keys{gk}, []attn.Values{vs.ops}, 0, n); err != nil {
			return GateResult{}, err
		}
	}
	res := GateResult{
		Pair: p.String(), Data: gc.Data, HeadDim: d,
		RelErr:    RelRMS(ref, exact),
		FastVsRef: RelRMS(fast, fastRef),
		OpsVsRef:  RelRMS(ops, ref),
	}
	res.FastBound = FastPathBound
	if rs, ok := vs.fast.(*attn.RowStore); ok {
		res.FastBound += AccumulateBound * kvq.AccumulateStep(rs.Codec)
	}
	res.FastOK = res.FastVsRef <= res.FastBound && res.OpsVsRef <= FastPathBound
	return res, nil
}

// RelRMS is ‖a − b‖ / ‖b‖ (0 when both are zero; +Inf when only b is).
func RelRMS(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		e := float64(a[i]) - float64(b[i])
		num += e * e
		den += float64(b[i]) * float64(b[i])
	}
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Sqrt(num / den)
}

// GatePairs are the pairs `kvlab gate` measures by default: every symmetric format, the seeds'
// asymmetric recipes, and equal-byte K-vs-V swaps that show which side is more sensitive.
func GatePairs() []kvq.Pair {
	var out []kvq.Pair
	for _, f := range kvq.Formats() {
		if f != kvq.F32 && !f.KOnly() {
			out = append(out, kvq.Pair{K: f, V: f})
		}
	}
	out = append(out, kvq.UsefulPairs...)
	out = append(out,
		kvq.Pair{K: kvq.Q4_0, V: kvq.F16},  // vs f16/q4_0: the same bytes, the other side quantized
		kvq.Pair{K: kvq.Q4_0, V: kvq.Q8_0}, // vs q8_0/q4_0
	)
	return out
}
