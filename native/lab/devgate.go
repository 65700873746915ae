package lab

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// DeviceAttnBound is the largest relative RMS difference between a backend's attention output
// and the CPU reference over the same stored cache that the device gate accepts (for a
// backend that rounds its queries as this CPU's kernels do, QueryGrid, the gate adds the
// integer accumulation's weight rounding to it: DeviceGateResult.Bound). Both compute the same
// formula on the same stored values; they differ in float32 summation order and in the
// GPU's exp2f (≤ 2 ulp), about 1e-6 relative.
const DeviceAttnBound = 1e-4

// GateBackend is a compute backend as the device gate drives it: it holds a cache of kvcache's
// configuration in its own memory, and runs decode and prefill attention over it.
type GateBackend interface {
	NewGateCache(cfg kvcache.Config) (GateCache, error)
}

// GateCache is a backend's KV cache as the device gate drives it (native/cuda/engine's Cache
// has these methods). DecodeHost and PrefillHost take host queries, heads × head dim per
// position, and return the attention outputs in the same layout.
type GateCache interface {
	Write(layer int, k, v []float32, n int) error
	Commit(n int) error
	DecodeHost(layer int, q []float32, heads int, scale float32) ([]float32, error)
	PrefillHost(layer int, q []float32, nq, p0, window, heads int, scale float32) ([]float32, error)
	Free()
}

// StoredRows is implemented by a GateCache whose stored bytes the gate compares with
// native/kvq's encoders: one head's rows of one layer, cell-major, as kvq encodes them.
type StoredRows interface {
	Rows(layer, head int, isK bool) ([]byte, error)
}

// QueryGrid is implemented by a GateCache whose decode and prefill score the cells of its K
// codec with each query rounded to the integer grid that codec's multi-query scores use on
// this CPU (kvq.ScoresGrid: the AVX-512 VNNI kernels round a query to one signed byte a value
// per 32-value block; for turbo2 and turbo3 on AMD Zen 4 per query, one scale for all its whole
// 32-value blocks; for q2k per 64 channels with AVX-512, 32 on the AVX2 path), the FP16
// overlay's exact cells with the query as it is. Where RoundsQueries
// reports true the gate's reference rounds the same way (gridReference), so that
// DeviceAttnBound stays a check of float rounding and not of the grid's own effect (a few 1e-3
// of the output for a one-byte grid, a format cost that RunGate's FastVsRef accounts for).
type QueryGrid interface {
	RoundsQueries() bool
}

// GateBackendFunc adapts a constructor to GateBackend.
type GateBackendFunc func(cfg kvcache.Config) (GateCache, error)

// NewGateCache calls f.
func (f GateBackendFunc) NewGateCache(cfg kvcache.Config) (GateCache, error) { return f(cfg) }

// DeviceGateCase is one cache the device gate checks: a format pair at one shape, with
// synthetic K/V drawn from a distribution of the gate (Gaussian, Outlier5, Outlier75).
type DeviceGateCase struct {
	Pair           kvq.Pair
	HeadDim        int
	Cells          int
	Heads, KVHeads int
	Window, Sinks  int // the FP16 overlay (0, 0: none)
	Prefill        int // query positions of the prefill check (0: skip)
	Data           GateData
	Seed           uint64
}

// DeviceGateResult is the device gate's verdict on one case.
type DeviceGateResult struct {
	Pair    string   `json:"pair"`
	Data    GateData `json:"data"`
	HeadDim int      `json:"head_dim"`
	Cells   int      `json:"cells"`
	Window  int      `json:"window"`
	Sinks   int      `json:"sinks"`
	// KBytesDiff and VBytesDiff count the stored bytes that differ from native/kvq's
	// encoders on the same input (0: bit-exact; 0 too when the cache is not StoredRows).
	KBytesDiff int `json:"k_bytes_diff"`
	VBytesDiff int `json:"v_bytes_diff"`
	// Decode is ‖o_gpu − o_ref‖/‖o_ref‖ for one decode step, o_ref being attn.DecodeReference
	// over the CPU cache (kvcache) holding the same bytes, overlay included (with the queries
	// rounded as the backend's scores round them where QueryGrid is set).
	Decode float64 `json:"decode_vs_cpu"`
	// QueryGrid reports that the backend rounds its queries to its K codec's integer grid
	// (QueryGrid, kvq.ScoresGrid) and that Decode and Prefill compare it with a reference that
	// rounds them the same way.
	QueryGrid bool `json:"query_grid,omitempty"`
	// Prefill is the same for the prefill of the last Prefill positions (−1: not run).
	Prefill float64 `json:"prefill_vs_cpu"`
	// VsF32 is the format's own cost: the CPU reference over the stored cache against the
	// exact f32 cache (the seed-003 gate's number), for context.
	VsF32 float64 `json:"err_vs_f32"`
	// Bound is the largest Decode and Prefill the gate accepts: DeviceAttnBound, plus, where
	// the backend computes as this CPU's fast paths do (QueryGrid: the CPU backend), the
	// AccumulateBound steps of the weights' rounding that RunGate allows where the values
	// accumulate with integer weights (kvq.AccumulateStep of the V codec), which the reference
	// does not model.
	Bound float64 `json:"bound"`
	OK    bool    `json:"ok"`
}

// deviceGateData draws cells × kvHeads rows of K and V with per-channel outliers as lab's gate does
// (drawGateChannels: channel RMS around 1, a few channels up to the dataset's spread, K with a
// per-channel bias), and queries scaled so the scaled scores have a standard deviation near 2.5.
func deviceGateData(gc DeviceGateCase, rows int) (k, v, q []float32) {
	r := rand.New(rand.NewPCG(gc.Seed, uint64(gc.HeadDim)*31+uint64(gc.Cells)))
	d, hn := gc.HeadDim, gc.KVHeads
	ch := drawGateChannels(r, gc.Data, d)
	k = make([]float32, gc.Cells*hn*d)
	v = make([]float32, gc.Cells*hn*d)
	ch.rows(r, k, v)
	// Query scale: the scores' spread over K, estimated from the channel statistics.
	var varK float64
	for c := 0; c < d; c++ {
		varK += ch.kRMS[c] * ch.kRMS[c]
	}
	qs := 2.5 * math.Sqrt(float64(d)) / math.Sqrt(varK)
	q = make([]float32, rows*d)
	for i := range q {
		q[i] = float32(qs * r.NormFloat64())
	}
	return k, v, q
}

// RunDeviceGate stores the case's cache in the backend and in native/kvcache, compares the
// stored bytes head by head (when the backend's cache is StoredRows), and compares one decode
// step (and a prefill) with the CPU reference.
func RunDeviceGate(b GateBackend, gc DeviceGateCase) (DeviceGateResult, error) {
	res := DeviceGateResult{Pair: gc.Pair.String(), Data: gc.Data, HeadDim: gc.HeadDim, Cells: gc.Cells,
		Window: gc.Window, Sinks: gc.Sinks, Prefill: -1}
	d, hn, heads := gc.HeadDim, gc.KVHeads, gc.Heads
	cfg := kvcache.Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: gc.Pair, MaxCells: gc.Cells,
		Window: gc.Window, Sinks: gc.Sinks, KGain: 1, Seed: gc.Seed}
	k, v, q := deviceGateData(gc, heads*(1+gc.Prefill))
	qd, qp := q[:heads*d], q[heads*d:]
	gpu, err := b.NewGateCache(cfg)
	if err != nil {
		return res, err
	}
	defer gpu.Free()
	// A backend may store another variant of the pair (the CUDA cache stores rotated halves
	// unrotated): the CPU reference holds what the backend holds.
	if c, ok := gpu.(interface{ Config() kvcache.Config }); ok {
		cfg.Pair = c.Config().Pair
	}
	cpu, err := kvcache.New(cfg)
	if err != nil {
		return res, err
	}
	// Irregular chunks exercise partial q2k groups, tile boundaries and the overlay ring.
	row := hn * d
	for pos, step := 0, 1; pos < gc.Cells; step = step*3 + 1 {
		n := min(step%509+1, gc.Cells-pos)
		kc, vc := k[pos*row:(pos+n)*row], v[pos*row:(pos+n)*row]
		if err := cpu.Write(0, kc, vc, n); err != nil {
			return res, err
		}
		if err := gpu.Write(0, kc, vc, n); err != nil {
			return res, err
		}
		if err := cpu.Commit(n); err != nil {
			return res, err
		}
		if err := gpu.Commit(n); err != nil {
			return res, err
		}
		pos += n
	}
	stored, _ := gpu.(StoredRows)
	for h := 0; h < hn && stored != nil; h++ {
		for _, isK := range []bool{true, false} {
			f := cfg.Pair.V
			if isK {
				f = cfg.Pair.K
			}
			want, err := kvqBytes(f, d, gc.Seed, h, cfg.KGain, k, v, isK, gc.Cells, hn)
			if err != nil {
				return res, err
			}
			got, err := stored.Rows(0, h, isK)
			if err != nil {
				return res, err
			}
			diff := bytesDiff(got, want)
			if isK {
				res.KBytesDiff += diff
			} else {
				res.VBytesDiff += diff
			}
		}
	}
	scale := float32(1 / math.Sqrt(float64(d)))
	shape := attn.Shape{Heads: heads, KVHeads: hn, HeadDimK: d, HeadDimV: d, Scale: scale}
	kr, vr := cpu.Rows(0, true)
	ref := make([]float32, heads*d)
	if err := attn.DecodeReference(ref, qd, shape, kr, vr, 0, gc.Cells); err != nil {
		return res, err
	}
	// The reference the backend's output is held to: ref, or where the backend rounds its
	// queries (QueryGrid) and the K codec has a grid, the same formula on the rounded queries.
	var grid []kvq.Codec
	var q2kGrid []q2kPool
	g, rounds := gpu.(QueryGrid)
	rounds = rounds && g.RoundsQueries()
	if rounds {
		grid = gridCodecs(cpu, d, hn)
		if cfg.Pair.K == kvq.Q2K {
			q2kGrid = q2kGridHeads(cpu, d, hn)
		}
	}
	// reference is the output of query q over cells [0, hi) that the backend is held to (exact:
	// the cells that score the query as it is, nil for none).
	reference := func(out, q []float32, keys, vals []attn.Rows, hi int, exact func(int) bool) error {
		switch {
		case grid != nil:
			return gridReference(out, q, shape, grid, keys, vals, hi, exact)
		case q2kGrid != nil:
			return q2kGridReference(out, q, shape, q2kGrid, keys, vals, hi, exact)
		}
		return attn.DecodeReference(out, q, shape, keys, vals, 0, hi)
	}
	decodeRef := ref
	res.QueryGrid = grid != nil || q2kGrid != nil
	if res.QueryGrid {
		// The overlay's exact cells, as kvcache keeps them for cells written in order: the
		// first Sinks and the last Window.
		overlay := func(c int) bool { return c < gc.Sinks || c >= gc.Cells-gc.Window }
		decodeRef = make([]float32, heads*d)
		if err := reference(decodeRef, qd, kr, vr, gc.Cells, overlay); err != nil {
			return res, err
		}
	}
	out, err := gpu.DecodeHost(0, qd, heads, scale)
	if err != nil {
		return res, err
	}
	res.Decode = RelRMS(out, decodeRef)
	exact := make([]float32, heads*d)
	fk, fv := f32Heads(k, hn, d), f32Heads(v, hn, d)
	if err := attn.DecodeReference(exact, qd, shape, fk, fv, 0, gc.Cells); err != nil {
		return res, err
	}
	res.VsF32 = RelRMS(ref, exact)
	if gc.Prefill > 0 {
		p0 := gc.Cells - gc.Prefill
		pout, err := gpu.PrefillHost(0, qp, gc.Prefill, p0, 0, heads, scale)
		if err != nil {
			return res, err
		}
		kb, vb := cpu.Rows(0, false)
		pref := make([]float32, len(qp))
		errs := make([]error, gc.Prefill)
		var wg sync.WaitGroup
		next := make(chan int, gc.Prefill)
		for i := 0; i < gc.Prefill; i++ {
			next <- i
		}
		close(next)
		for w := 0; w < min(runtime.GOMAXPROCS(0), gc.Prefill); w++ {
			wg.Go(func() {
				for i := range next {
					o, qi := pref[i*heads*d:(i+1)*heads*d], qp[i*heads*d:(i+1)*heads*d]
					errs[i] = reference(o, qi, kb, vb, p0+i+1, nil)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return res, err
		}
		res.Prefill = RelRMS(pout, pref)
	}
	res.Bound = DeviceAttnBound
	if rounds {
		vc, err := kvq.NewCodec(cfg.Pair.V, d, kvq.CodecOptions{Seed: gc.Seed})
		if err != nil {
			return res, err
		}
		res.Bound += AccumulateBound * kvq.AccumulateStep(vc)
	}
	res.OK = res.KBytesDiff == 0 && res.VBytesDiff == 0 && res.Decode <= res.Bound && res.Prefill <= res.Bound &&
		!math.IsNaN(res.Decode) && !math.IsNaN(res.Prefill)
	return res, nil
}

// gridCodecs returns the K codecs of the cache's hn KV heads (layer 0) where their
// multi-query scores round the query to a grid on this CPU (kvq.ScoresGrid) and
// FinishAccumulate inverts PrepareQuery, so that gridReference can map the rounded query back
// to the value domain: a plain copy, or an orthogonal rotation (tq4). Otherwise nil, and the
// reference takes the query as it is: a K store that is not one codec's rows (q2k, whose scores
// take the query as it is), or a calibrated rotated K (per-channel scales; its two-byte q8_0
// grid stays within DeviceAttnBound of the exact query).
func gridCodecs(cpu *kvcache.Cache, d, hn int) []kvq.Codec {
	cs := make([]kvq.Codec, hn)
	probe, pq, back := make([]float32, d), make([]float32, d), make([]float32, d)
	for i := range probe {
		probe[i] = float32(i%7) - 2.5
	}
	for h := range cs {
		c := cpu.KCodec(0, h)
		if c == nil || kvq.ScoresGrid(c, pq, probe, 1) == 0 {
			return nil
		}
		c.PrepareQuery(pq, probe)
		c.FinishAccumulate(back, pq)
		if RelRMS(back, probe) > 1e-5 {
			return nil
		}
		cs[h] = c
	}
	return cs
}

// gridReference is attn.DecodeReference over cells [0, hi) with each query head's query
// rounded as its KV head's codec (codecs[g], gridCodecs) scores it: prepared (PrepareQuery),
// rounded to the codec's grid (kvq.ScoresGrid) and mapped back to the value domain by
// FinishAccumulate (checked again, to 1e-5 relative, on the query itself). Cells for which exact (nil: none) holds
// score the query as it is. It runs DecodeReference at twice the key dimension: queries
// [q̃, q], keys [k, 0] for the codec's cells and [0, k] for the exact ones, so every score is
// still one float64 dot of one query with one decoded row.
func gridReference(out, q []float32, s attn.Shape, codecs []kvq.Codec, keys, vals []attn.Rows, hi int, exact func(int) bool) error {
	d, group := s.HeadDimK, s.Heads/s.KVHeads
	q2 := make([]float32, 2*len(q))
	pq, back := make([]float32, d), make([]float32, d)
	for h := 0; h < s.Heads; h++ {
		c, qh := codecs[h/group], q[h*d:(h+1)*d]
		c.PrepareQuery(pq, qh)
		c.FinishAccumulate(back, pq)
		var e2, n2 float64
		for i, x := range qh {
			e := float64(back[i]) - float64(x)
			e2, n2 = e2+e*e, n2+float64(x)*float64(x)
		}
		if e2 > 1e-10*n2 {
			return fmt.Errorf("gate: %s's FinishAccumulate does not invert its PrepareQuery (relative error %.2g): no reference for its query grid", c.Format(), math.Sqrt(e2/n2))
		}
		kvq.ScoresGrid(c, pq, pq, 1)
		c.FinishAccumulate(q2[2*h*d:(2*h+1)*d], pq)
		copy(q2[(2*h+1)*d:(2*h+2)*d], qh)
	}
	k2 := make([]attn.Rows, len(keys))
	for g := range keys {
		k2[g] = splitRows{keys[g], d, exact}
	}
	s.HeadDimK = 2 * d
	return attn.DecodeReference(out, q2, s, k2, vals, 0, hi)
}

// q2kPool is one KV head's q2k K pool as the cache holds it: its groups and its rotation (nil
// where the K is stored as it comes).
type q2kPool struct {
	h   *kvq.Q2KHead
	rot *kvq.Q2KRot
}

// q2kGridHeads returns the q2k K pools of the cache's hn KV heads where q2k's multi-query
// scores round the query on this CPU (kvq.Q2KHead.ScoresGrid); otherwise nil.
func q2kGridHeads(c *kvcache.Cache, d, hn int) []q2kPool {
	ps := make([]q2kPool, hn)
	probe := make([]float32, d)
	for h := range ps {
		head, rot := c.Q2KPool(0, h)
		if head == nil || head.Len() == 0 || !head.ScoresGrid(probe, probe, 0) {
			return nil
		}
		ps[h] = q2kPool{head, rot}
	}
	return ps
}

// q2kGridReference is attn.DecodeReference over cells [0, hi) with each query head's query
// rounded as its KV head's q2k scores round it, afresh for every 32-cell group
// (kvq.Q2KHead.ScoresGrid), on the query as the pool takes it (rotated and scaled where the pool
// is rotated, kvq.Q2KRot, plus its offset q·μ); cells for which exact (nil: none) holds score the
// query as it is. It runs DecodeReference at G + 1 times the key dimension plus one (G the
// groups below hi): queries [q̃_0, …, q̃_{G−1}, q, q·μ], keys [the pool's row of the cell in its
// group's slot, 1 last] ([the exact row in slot G, 0 last] for the exact ones), so every score
// is still one float64 dot of one query with one row.
func q2kGridReference(out, q []float32, s attn.Shape, pools []q2kPool, keys, vals []attn.Rows, hi int, exact func(int) bool) error {
	d, group := s.HeadDimK, s.Heads/s.KVHeads
	g := (hi + kvq.GroupCells - 1) / kvq.GroupCells
	wide := (g+1)*d + 1
	q2 := make([]float32, s.Heads*wide)
	pq := make([]float32, d)
	for h := 0; h < s.Heads; h++ {
		p := pools[h/group]
		qh, row := q[h*d:(h+1)*d], q2[h*wide:(h+1)*wide]
		copy(pq, qh)
		var off [1]float32
		if p.rot != nil {
			p.rot.PrepareQuery(pq, qh)
			p.rot.AddOffsets(pq, 1, off[:])
		}
		for j := 0; j < g; j++ {
			p.h.ScoresGrid(row[j*d:(j+1)*d], pq, j)
		}
		copy(row[g*d:], qh)
		row[wide-1] = off[0]
	}
	k2 := make([]attn.Rows, len(keys))
	for i := range keys {
		k2[i] = groupSlotRows{keys[i], pools[i].h, d, g, exact}
	}
	s.HeadDimK = wide
	return attn.DecodeReference(out, q2, s, k2, vals, 0, hi)
}

// groupSlotRows is a key reader at (groups + 1)·d + 1 values: cell i's row as its q2k pool holds
// it (Q2KHead.Decode: rotated where the pool is) in slot i/32 and 1 last, or its exact row
// (base) in slot groups and 0 last where exact holds; zeros elsewhere.
type groupSlotRows struct {
	base      attn.Rows
	pool      *kvq.Q2KHead
	d, groups int
	exact     func(int) bool
}

func (r groupSlotRows) Len() int { return r.base.Len() }

func (r groupSlotRows) Row(dst []float32, i int) {
	clear(dst)
	if r.exact != nil && r.exact(i) {
		r.base.Row(dst[r.groups*r.d:(r.groups+1)*r.d], i)
		return
	}
	slot := i / kvq.GroupCells
	r.pool.Decode(dst[slot*r.d:(slot+1)*r.d], i)
	dst[len(dst)-1] = 1
}

// splitRows is a key reader at twice the dimension: [k, 0] for the cells whose score takes
// the rounded query, [0, k] for the exact ones.
type splitRows struct {
	base  attn.Rows
	d     int
	exact func(int) bool
}

func (r splitRows) Len() int { return r.base.Len() }

func (r splitRows) Row(dst []float32, i int) {
	lo, hi := dst[:r.d], dst[r.d:2*r.d]
	if r.exact != nil && r.exact(i) {
		lo, hi = hi, lo
	}
	r.base.Row(lo, i)
	clear(hi)
}

// kvqBytes encodes one head's rows with native/kvq, as kvcache stores them.
func kvqBytes(f kvq.Format, d int, seed uint64, head int, gain float32, k, v []float32, isK bool, cells, hn int) ([]byte, error) {
	src := v
	if isK {
		src = k
	}
	rowsOf := func(c int) []float32 { return src[(c*hn+head)*d : (c*hn+head+1)*d] }
	if f == kvq.Q2K {
		h, err := kvq.NewQ2KHead(d, gain)
		if err != nil {
			return nil, err
		}
		for c := 0; c < cells; c++ {
			h.Append(rowsOf(c))
		}
		return append([]byte(nil), h.Groups()...), nil
	}
	codec, err := kvq.NewCodec(f, d, kvq.CodecOptions{Seed: seed, Layer: 0, Head: head})
	if err != nil {
		return nil, err
	}
	rb := codec.RowBytes()
	out := make([]byte, cells*rb)
	for c := 0; c < cells; c++ {
		codec.Encode(out[c*rb:(c+1)*rb], rowsOf(c))
	}
	return out, nil
}

func bytesDiff(a, b []byte) int {
	n := 0
	if len(a) != len(b) {
		n = max(len(a), len(b)) - min(len(a), len(b))
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// f32Heads returns exact per-head readers over cell-major data.
func f32Heads(x []float32, hn, d int) []attn.Rows {
	out := make([]attn.Rows, hn)
	for h := range out {
		out[h] = headRows{x: x, hn: hn, d: d, h: h}
	}
	return out
}

type headRows struct {
	x        []float32
	hn, d, h int
}

func (r headRows) Len() int { return len(r.x) / (r.hn * r.d) }
func (r headRows) Row(dst []float32, i int) {
	copy(dst, r.x[(i*r.hn+r.h)*r.d:(i*r.hn+r.h+1)*r.d])
}

// String is one line describing the case, for errors and progress.
func (gc DeviceGateCase) String() string {
	return fmt.Sprintf("%s d%d %s %d cells, %d/%d heads, window %d sinks %d", gc.Pair, gc.HeadDim, gc.Data, gc.Cells, gc.Heads, gc.KVHeads, gc.Window, gc.Sinks)
}

// CPUGate is the CPU backend for the device gate: native/kvcache's cache read through
// native/attn's fast decode and prefill paths, against the reference over the same cache.
var CPUGate GateBackend = GateBackendFunc(func(cfg kvcache.Config) (GateCache, error) {
	c, err := kvcache.New(cfg)
	if err != nil {
		return nil, err
	}
	return cpuGateCache{c}, nil
})

type cpuGateCache struct{ *kvcache.Cache }

func (c cpuGateCache) shape(heads int, scale float32) attn.Shape {
	cfg := c.Config()
	return attn.Shape{Heads: heads, KVHeads: cfg.KVHeads, HeadDimK: cfg.HeadDimK, HeadDimV: cfg.HeadDimV, Scale: scale}
}

func (c cpuGateCache) DecodeHost(layer int, q []float32, heads int, scale float32) ([]float32, error) {
	out := make([]float32, heads*c.Config().HeadDimV)
	err := attn.Decode(out, q, c.shape(heads, scale), c.Keys(layer, true), c.Values(layer, true), 0, c.Len())
	return out, err
}

func (c cpuGateCache) PrefillHost(layer int, q []float32, nq, p0, window, heads int, scale float32) ([]float32, error) {
	out := make([]float32, nq*heads*c.Config().HeadDimV)
	err := attn.Prefill(out, q, nq, p0, window, c.shape(heads, scale), c.Keys(layer, false), c.Values(layer, false))
	return out, err
}

func (cpuGateCache) Free() {}

// RoundsQueries is QueryGrid: the CPU's integer scores kernels round the query
// (kvq.ScoresGrid).
func (cpuGateCache) RoundsQueries() bool { return true }
