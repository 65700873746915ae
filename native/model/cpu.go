package model

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/ml"
	"github.com/kvlab/kvlab/native/wkern"
)

// Dims is the matrix's rows and columns (ml.Matrix).
func (m *Matrix) Dims() (rows, cols int) { return m.Rows, m.Cols }

// cpuSeq is one sequence of a pass: rows [lo, hi) of the batch, at positions p0… of cache.
type cpuSeq struct {
	cache  *kvcache.Cache
	lo, hi int
	p0     int
}

// cpuTensor is an activation in host memory: a view of rows × cols float32 values.
type cpuTensor struct {
	d          []float32
	rows, cols int
}

func (t *cpuTensor) Rows() int { return t.rows }
func (t *cpuTensor) Cols() int { return t.cols }

// cpuBackend is native/ml on the CPU: thin wrappers over the model's kernels (Matrix's
// products on the model's Pool, ops.go, rope.go), attn and a kvcache.Cache, on tensors that
// are views of scratch slices reused from pass to pass. One serves one Forward call at a time
// (the model pools them).
type cpuBackend struct {
	m  *Model
	bt *ml.Batch
	// seqs are the pass's sequences in the order of Batch.Caches: each one's contiguous rows
	// of the batch and its cache (its first row at the cache's length).
	seqs []cpuSeq
	// slots are the scratch values, the i-th New of a pass taking slots[i]; tensors are the
	// tensor headers handed out this pass (reused from pass to pass).
	slots   [][]float32
	nslot   int
	tensors []*cpuTensor
	nt      int
	// cos, sin hold the angles of the pass's positions for angled (RoPE computes them once a
	// pass).
	cos, sin []float32
	angled   *ml.Rope
	tap      func(layer, pos0, n int, q []float32)
	err      error
	// invariant makes the pass batch-invariant (mul).
	invariant bool
	// multi and out are ForwardBatch's batch and logits, reused from pass to pass.
	multi ml.Batch
	out   []float32
	// moe is MoEFFN's scratch, reused from layer to layer and pass to pass.
	moe moeScratch
	// attn is attendAcross's loop body, reused from layer to layer and pass to pass.
	attn attnAcross
}

// moeScratch are the buffers of one MoEFFN call: the router's logits, each token's picks and
// their weights, the softmax, the rows an expert serves and the gathered activations.
type moeScratch struct {
	logits, weights, xs, g, u, y []float32
	p                            []float64
	picks, rows                  []int
}

// cpu returns a CPU backend from the model's states (give it back with putCPU).
func (m *Model) cpu() *cpuBackend {
	b := m.states.Get()
	b.m = m
	return b
}

// putCPU gives b back to the model's states.
func (m *Model) putCPU(b *cpuBackend) { m.states.Put(b) }

func (c *cpuBackend) Begin(b *ml.Batch) error {
	c.bt, c.nslot, c.nt, c.angled, c.err = b, 0, 0, nil, nil
	c.seqs = c.seqs[:0]
	if len(b.Caches) == 0 || len(b.Pos) != len(b.Tokens) || len(b.Seq) != len(b.Tokens) {
		return fmt.Errorf("model: a pass of %d tokens, %d positions, %d sequence indices over %d caches",
			len(b.Tokens), len(b.Pos), len(b.Seq), len(b.Caches))
	}
	for i, cc := range b.Caches {
		kc, ok := cc.(*kvcache.Cache)
		if !ok {
			return fmt.Errorf("model: the CPU backend runs over a kvcache.Cache, not %T", cc)
		}
		for _, s := range c.seqs {
			if s.cache == kc {
				return fmt.Errorf("model: sequence %d of the pass is another's cache", i)
			}
		}
		c.seqs = append(c.seqs, cpuSeq{cache: kc, lo: -1, p0: kc.Len()})
	}
	// Each sequence's tokens are one contiguous run of rows, at consecutive positions from its
	// cache's length.
	for i := range b.Tokens {
		s := int(b.Seq[i])
		if s < 0 || s >= len(c.seqs) {
			return fmt.Errorf("model: token %d of the pass is of sequence %d, not one of the %d", i, s, len(c.seqs))
		}
		q := &c.seqs[s]
		switch {
		case q.lo < 0:
			q.lo, q.hi = i, i
		case q.hi != i:
			return fmt.Errorf("model: the tokens of sequence %d are not contiguous in the pass (token %d)", s, i)
		}
		if int(b.Pos[i]) != q.p0+i-q.lo {
			return fmt.Errorf("model: token %d of the pass is at sequence %d position %d: the CPU runs consecutive positions of a sequence from its cache's length %d",
				i, s, b.Pos[i], q.p0)
		}
		q.hi = i + 1
	}
	for i, q := range c.seqs {
		if q.lo < 0 {
			return fmt.Errorf("model: sequence %d of the pass has no tokens", i)
		}
	}
	return nil
}

func (c *cpuBackend) Err() error { return c.err }

func (c *cpuBackend) tensor(d []float32, rows, cols int) *cpuTensor {
	if c.nt == len(c.tensors) {
		c.tensors = append(c.tensors, new(cpuTensor))
	}
	t := c.tensors[c.nt]
	c.nt++
	t.d, t.rows, t.cols = d[:rows*cols], rows, cols
	return t
}

func (c *cpuBackend) New(rows, cols int) ml.Tensor {
	if c.nslot == len(c.slots) {
		c.slots = append(c.slots, nil)
	}
	s := c.slots[c.nslot]
	if cap(s) < rows*cols {
		s = make([]float32, rows*cols)
		c.slots[c.nslot] = s
	}
	c.nslot++
	return c.tensor(s, rows, cols)
}

func (c *cpuBackend) View(x ml.Tensor, row0, rows int) ml.Tensor {
	t := x.(*cpuTensor)
	return c.tensor(t.d[row0*t.cols:], rows, t.cols)
}

func (c *cpuBackend) Reshape(x ml.Tensor, rows, cols int) ml.Tensor {
	t := x.(*cpuTensor)
	if rows*cols != len(t.d) {
		c.fail(fmt.Errorf("model: reshape of %d×%d to %d×%d", t.rows, t.cols, rows, cols))
		return t
	}
	return c.tensor(t.d, rows, cols)
}

func (c *cpuBackend) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

func (c *cpuBackend) Embed(dst ml.Tensor, table ml.Matrix) {
	if c.err != nil {
		return
	}
	x, w := dst.(*cpuTensor), table.(*Matrix)
	for t, tok := range c.bt.Tokens {
		w.DequantRow(x.d[t*x.cols:(t+1)*x.cols], int(tok))
	}
}

func (c *cpuBackend) MatMul(dst ml.Tensor, w ml.Matrix, x ml.Tensor, bias ml.Vector) {
	if c.err != nil {
		return
	}
	y, in := dst.(*cpuTensor), x.(*cpuTensor)
	c.mul(w.(*Matrix), y.d, in.d, in.rows)
	addBias(y.d, bias, in.rows)
}

func (c *cpuBackend) RMSNorm(dst, x ml.Tensor, w ml.Vector, eps float32) {
	if c.err != nil {
		return
	}
	out, in := dst.(*cpuTensor), x.(*cpuTensor)
	e := in.cols
	if !c.split(in.rows, e) {
		rmsNormRows(out.d, in.d, w, eps, e, 0, in.rows)
		return
	}
	c.m.pool.For(in.rows, max(1, elemGrain/e), func(lo, hi int) { rmsNormRows(out.d, in.d, w, eps, e, lo, hi) })
}

// rmsNormRows normalizes rows [lo, hi) of x (rows of e values) into out.
func rmsNormRows(out, x, w []float32, eps float32, e, lo, hi int) {
	for t := lo; t < hi; t++ {
		rmsNorm(out[t*e:(t+1)*e], x[t*e:(t+1)*e], w, eps)
	}
}

func (c *cpuBackend) RoPE(x ml.Tensor, heads int, r *ml.Rope) {
	if c.err != nil {
		return
	}
	rp := rope{style: RopeStyle(r.Style), dims: r.Dims, freq: r.Freq, scale: r.Scale, mscale: r.MScale}
	half := r.Dims / 2
	t := x.(*cpuTensor)
	if c.angled != r {
		n := t.rows * max(half, 1)
		if cap(c.cos) < n {
			c.cos, c.sin = make([]float32, n), make([]float32, n)
		}
		for i := 0; i < t.rows; i++ {
			rp.angles(c.cos[i*half:(i+1)*half], c.sin[i*half:(i+1)*half], int(c.bt.Pos[i]))
		}
		c.angled = r
	}
	if !c.split(t.rows, t.cols) {
		ropeRows(&rp, t, heads, c.cos, c.sin, 0, t.rows)
		return
	}
	split := rp // only the split pass's closure holds a copy: a decode step allocates nothing
	c.m.pool.For(t.rows, max(1, elemGrain/t.cols), func(lo, hi int) { ropeRows(&split, t, heads, c.cos, c.sin, lo, hi) })
}

// ropeRows rotates the heads of rows [lo, hi) of t with the pass's angles.
func ropeRows(rp *rope, t *cpuTensor, heads int, cos, sin []float32, lo, hi int) {
	half, hd := rp.dims/2, t.cols/heads
	for i := lo; i < hi; i++ {
		rp.apply(t.d[i*t.cols:(i+1)*t.cols], heads, hd, cos[i*half:(i+1)*half], sin[i*half:(i+1)*half])
	}
}

func (c *cpuBackend) SwiGLU(gate, up ml.Tensor) {
	if c.err != nil {
		return
	}
	g, u := gate.(*cpuTensor).d, up.(*cpuTensor).d
	if len(g) < 2*elemGrain || c.m.pool.Threads() == 1 {
		swiGLU(g, u)
		return
	}
	c.m.pool.For(len(g), elemGrain, func(lo, hi int) { swiGLU(g[lo:hi], u[lo:hi]) })
}

// elemGrain is the number of values below which an elementwise pass (SwiGLU, RMSNorm, RoPE)
// is not split across the pool: a prefill batch's passes are, a decode step's are not.
const elemGrain = 1 << 14

// split reports whether a rows×cols elementwise pass is large enough to spread across the pool
// (else it runs on the caller, with no closure made). Every row's result is the same either way.
func (c *cpuBackend) split(rows, cols int) bool {
	return rows >= 2 && rows*cols >= 2*elemGrain && c.m.pool.Threads() > 1
}

func (c *cpuBackend) Add(x, y ml.Tensor) {
	if c.err != nil {
		return
	}
	add(x.(*cpuTensor).d, y.(*cpuTensor).d)
}

func (c *cpuBackend) Attention(out, q, k, v ml.Tensor, layer int, scale float32) {
	c.AttentionOpts(out, q, k, v, layer, scale, ml.AttnOptions{})
}

// AttentionOpts is ml.Gemma's: Attention with a sliding window and soft-capping. On a layer
// whose cache is a ring (kvcache.Config.Windows), the tokens of a pass that would overwrite
// cells an earlier token of the same pass still reads are written and attended one at a time.
func (c *cpuBackend) AttentionOpts(out, q, k, v ml.Tensor, layer int, scale float32, o ml.AttnOptions) {
	if c.err != nil {
		return
	}
	a, qt, kt, vt := out.(*cpuTensor), q.(*cpuTensor), k.(*cpuTensor), v.(*cpuTensor)
	if c.attendAcross(a, qt, kt, vt, layer, scale, o) {
		return
	}
	for i := range c.seqs {
		s := &c.seqs[i]
		n, p0, cfg := s.hi-s.lo, s.p0, s.cache.Config()
		qd := qt.d[s.lo*qt.cols : s.hi*qt.cols]
		if c.tap != nil {
			c.tap(layer, p0, n, qd)
		}
		ring := 0
		if layer < len(cfg.Windows) && cfg.Windows[layer] > 0 {
			ring = min(cfg.Windows[layer], cfg.MaxCells)
			if o.Window <= 0 || o.Window > cfg.Windows[layer] {
				c.fail(fmt.Errorf("model: layer %d: the cache keeps a sliding window of %d cells, the layer attends %d", layer, cfg.Windows[layer], o.Window))
				return
			}
		}
		shape := seqShape(cfg, qt.cols, scale, o)
		// Attention work in multiply-adds: spread it over threads only when it pays.
		if attnWork(n, p0, shape.Heads, shape.HeadDimK, shape.HeadDimV, o.Window) >= 1<<17 {
			shape.Threads = c.m.pool.Threads()
		}
		// whole tokens [0, whole) are written and attended together; with a ring, only those
		// below its first wrap.
		whole := n
		if ring > 0 {
			whole = min(n, max(ring-p0, 1))
		}
		ko, vo, qo, ao := kt.cols, vt.cols, qt.cols, a.cols
		for t0 := 0; t0 < n; {
			m := 1
			if t0 == 0 {
				m = whole
			}
			r0 := s.lo + t0
			if err := s.cache.Write(layer, kt.d[r0*ko:(r0+m)*ko], vt.d[r0*vo:(r0+m)*vo], m); err != nil {
				c.fail(fmt.Errorf("model: layer %d: %w", layer, err))
				return
			}
			ad, qm := a.d[r0*ao:(r0+m)*ao], qt.d[r0*qo:(r0+m)*qo]
			if err := attendRows(ad, qm, m, p0+t0, o.Window, shape, s.cache, layer, n == 1); err != nil {
				c.fail(fmt.Errorf("model: layer %d attention: %w", layer, err))
				return
			}
			t0 += m
		}
	}
}

// attendAcross is AttentionOpts over the pool by sequence, when that pays and is simple: a
// pass of several sequences, no tap, no sliding-window ring on the layer, and no sequence with
// more than a thread's share of the attention work (a long prompt chunk keeps its own split,
// by query position and context chunk, on the path of AttentionOpts). Every sequence's cells
// are written first, on the caller (the caches' page pool is not shared across threads), then
// each sequence attends on one thread (attn.Shape.Threads 1: the same operations, so the
// same bits, as on the caller alone). It reports whether it ran the layer.
//
// The serial loop leaves the other threads idle through every sequence's attention (~5 ms of a
// 16-sequence pass's ~117 ms on one thread, 1.1B shape, Q4_0, 30 cells), and a sequence whose
// attention reaches 1<<17 multiply-adds (32 cells there) splits its few work items over
// goroutines started per call. Measured with TestAttendAcrossSpeed (16 sequences of one token
// at 40 cells, 2 threads, alternated pass by pass, 30–40 rounds, three runs on a shared 2-vCPU
// machine at load 6–8): the pass's process CPU time min 142.6–143.3 ms → 135.9–138.0 ms,
// median 149.6–161.4 ms → 140.0–150.6 ms (3–9 % less); a pass of one sequence is unchanged.
func (c *cpuBackend) attendAcross(a, qt, kt, vt *cpuTensor, layer int, scale float32, o ml.AttnOptions) bool {
	threads := c.m.pool.Threads()
	if len(c.seqs) < 2 || threads < 2 || c.tap != nil || attendSerial {
		return false
	}
	total, most := 0, 0
	for i := range c.seqs {
		s := &c.seqs[i]
		cfg := s.cache.Config()
		if layer < len(cfg.Windows) && cfg.Windows[layer] > 0 {
			return false
		}
		w := attnWork(s.hi-s.lo, s.p0, qt.cols/cfg.HeadDimK, cfg.HeadDimK, cfg.HeadDimV, o.Window)
		total += w
		most = max(most, w)
	}
	if most*threads > total {
		return false
	}
	ko, vo := kt.cols, vt.cols
	for i := range c.seqs {
		s := &c.seqs[i]
		if err := s.cache.Write(layer, kt.d[s.lo*ko:s.hi*ko], vt.d[s.lo*vo:s.hi*vo], s.hi-s.lo); err != nil {
			c.fail(fmt.Errorf("model: layer %d: %w", layer, err))
			return true
		}
	}
	j := &c.attn
	j.c, j.a, j.q, j.layer, j.scale, j.o = c, a, qt, layer, scale, o
	if cap(j.errs) < len(c.seqs) {
		j.errs = make([]error, len(c.seqs))
	}
	j.errs = j.errs[:len(c.seqs)]
	c.m.pool.ForRange(len(c.seqs), 1, j)
	for _, err := range j.errs {
		if err != nil {
			c.fail(fmt.Errorf("model: layer %d attention: %w", layer, err))
			break
		}
	}
	j.c, j.a, j.q = nil, nil, nil
	clear(j.errs)
	return true
}

// attendSerial turns attendAcross off (AttentionOpts's loop runs every layer): the speed
// report's comparison (TestAttendAcrossSpeed).
var attendSerial bool

// attnWork is a sequence's attention work in multiply-adds: n query tokens from position p0,
// heads query heads of dk + dv, each over its span of context (window cells at most when
// positive).
func attnWork(n, p0, heads, dk, dv, window int) int {
	span := p0 + n
	if window > 0 {
		span = min(span, window+n)
	}
	return n * span * heads * (dk + dv)
}

// attnAcross is attendAcross's loop body over sequences (a Ranger, kept in the backend, so the
// pool takes it without allocating). Each sequence's cells are already written.
type attnAcross struct {
	c     *cpuBackend
	a, q  *cpuTensor
	layer int
	scale float32
	o     ml.AttnOptions
	errs  []error
}

func (j *attnAcross) Range(lo, hi int) {
	for i := lo; i < hi; i++ {
		s := &j.c.seqs[i]
		shape := seqShape(s.cache.Config(), j.q.cols, j.scale, j.o)
		ad, qm := j.a.d[s.lo*j.a.cols:s.hi*j.a.cols], j.q.d[s.lo*j.q.cols:s.hi*j.q.cols]
		j.errs[i] = attendRows(ad, qm, s.hi-s.lo, s.p0, j.o.Window, shape, s.cache, j.layer, true)
	}
}

// seqShape is the one-thread attention shape of a sequence's queries of qcols columns over its
// cache of cfg.
func seqShape(cfg kvcache.Config, qcols int, scale float32, o ml.AttnOptions) attn.Shape {
	return attn.Shape{Heads: qcols / cfg.HeadDimK, KVHeads: cfg.KVHeads, HeadDimK: cfg.HeadDimK, HeadDimV: cfg.HeadDimV,
		Scale: scale, SoftCap: o.SoftCap, Threads: 1}
}

// attendRows is the attention of m written rows of one sequence from position p over cache's
// layer: one row a decode over the window's cells (dec: through the cache's decode-time
// readers), more a prefill.
func attendRows(ad, qm []float32, m, p, window int, shape attn.Shape, cache *kvcache.Cache, layer int, dec bool) error {
	if m == 1 {
		lo := 0
		if window > 0 {
			lo = max(0, p+1-window)
		}
		return attn.Decode(ad, qm, shape, cache.Keys(layer, dec), cache.Values(layer, dec), lo, p+1)
	}
	return attn.Prefill(ad, qm, m, p, window, shape, cache.Keys(layer, false), cache.Values(layer, false))
}

// MoEFFN is ml.MoE's: the router over every row, then each used expert's FFN over the rows of
// the tokens that picked it (gathered), added into their rows with the token's weight; then the
// shared expert over every row, scaled by its gate. Its buffers are the backend's (c.moe).
func (c *cpuBackend) MoEFFN(dst, x ml.Tensor, router ml.Matrix, gate, up, down []ml.Matrix, o ml.MoEOptions) {
	if c.err != nil {
		return
	}
	out, in, r := dst.(*cpuTensor), x.(*cpuTensor), router.(*Matrix)
	n, ne, embd, used := in.rows, r.Rows, in.cols, o.Used
	if used < 1 || used > ne || len(gate) != ne || len(up) != ne || len(down) != ne {
		c.fail(fmt.Errorf("model: %d of %d experts used, %d/%d/%d expert matrices", used, ne, len(gate), len(up), len(down)))
		return
	}
	s := &c.moe
	s.logits = grow(s.logits, n*ne)
	c.mul(r, s.logits, in.d, n)
	// picks[t·used+i] is token t's i-th expert, weights its softmax weight (renormalized over
	// the picks with NormTopK).
	s.picks, s.weights = growInts(s.picks, n*used), grow(s.weights, n*used)
	s.p = ml.RouteTopK(s.logits, n, ne, used, o.NormTopK, s.picks, s.weights, s.p)
	clear(out.d[:n*embd])
	for e := 0; e < ne; e++ {
		s.rows = s.rows[:0]
		for i, pe := range s.picks {
			if pe == e {
				s.rows = append(s.rows, i)
			}
		}
		if len(s.rows) == 0 {
			continue // an expert no token picked is not read
		}
		ge, ue, de := gate[e].(*Matrix), up[e].(*Matrix), down[e].(*Matrix)
		m, ff := len(s.rows), ge.Rows
		s.xs, s.g, s.u, s.y = grow(s.xs, m*embd), grow(s.g, m*ff), grow(s.u, m*ff), grow(s.y, m*embd)
		for j, i := range s.rows {
			t := i / used
			copy(s.xs[j*embd:(j+1)*embd], in.d[t*embd:(t+1)*embd])
		}
		c.mul(ge, s.g, s.xs, m)
		c.mul(ue, s.u, s.xs, m)
		swiGLU(s.g, s.u)
		c.mul(de, s.y, s.g, m)
		for j, i := range s.rows {
			t, w := i/used, s.weights[i]
			dr := out.d[t*embd : (t+1)*embd]
			for k, v := range s.y[j*embd : (j+1)*embd] {
				dr[k] += w * v
			}
		}
	}
	if sh := o.Shared; sh != nil {
		ge, ue, de := sh.Gate.(*Matrix), sh.Up.(*Matrix), sh.Down.(*Matrix)
		ff := ge.Rows
		s.g, s.u, s.y = grow(s.g, n*ff), grow(s.u, n*ff), grow(s.y, n*embd)
		c.mul(ge, s.g, in.d, n)
		c.mul(ue, s.u, in.d, n)
		swiGLU(s.g, s.u)
		c.mul(de, s.y, s.g, n)
		for t := 0; t < n; t++ {
			xt := in.d[t*embd : (t+1)*embd]
			var z float64
			for k, w := range sh.GateInp {
				z += float64(w) * float64(xt[k])
			}
			w := float32(1 / (1 + math.Exp(-z)))
			dr := out.d[t*embd : (t+1)*embd]
			for k, v := range s.y[t*embd : (t+1)*embd] {
				dr[k] += w * v
			}
		}
	}
}

// growInts is grow for ints.
func growInts(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// grow returns s with length n, reallocated when short.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// GeGLU is ml.Gemma's.
func (c *cpuBackend) GeGLU(gate, up ml.Tensor) {
	if c.err != nil {
		return
	}
	geGLU(gate.(*cpuTensor).d, up.(*cpuTensor).d)
}

// Scale is ml.Gemma's.
func (c *cpuBackend) Scale(x ml.Tensor, s float32) {
	if c.err != nil {
		return
	}
	d := x.(*cpuTensor).d
	for i := range d {
		d[i] *= s
	}
}

// SoftCapOut is ml.Gemma's.
func (c *cpuBackend) SoftCapOut(cp float32) {
	if c.err != nil {
		return
	}
	SoftCapAll(c.bt.Out, cp)
}

func (c *cpuBackend) Logits(x ml.Tensor, w ml.Matrix) {
	if c.err != nil {
		return
	}
	h, o := x.(*cpuTensor), w.(*Matrix)
	if h.rows*o.Rows != len(c.bt.Out) {
		c.fail(fmt.Errorf("model: logits of %d rows into %d values", h.rows, len(c.bt.Out)))
		return
	}
	c.mul(o, c.bt.Out, h.d, h.rows)
}

// mul writes y = x·Wᵀ for n rows of x: Matrix.MatMul, or in an invariant pass (ForwardBatch)
// mulRowwise, whose every output is the row-dot kernel's of one weight row and one token, so a
// row's result does not depend on the other rows of the pass: a sequence's logits are the same
// whoever shares its passes.
func (c *cpuBackend) mul(w *Matrix, y, x []float32, n int) {
	if !c.invariant {
		w.MatMul(y, x, n, c.m.pool)
		return
	}
	w.mulRowwise(y, x, n, c.m.pool)
}

// mulRowwise is the batch-invariant product: y = x·Wᵀ for n tokens where every output is
// computed by the same operations in the same order whatever n and however the rows are split
// across the pool (wkern's invariant kernels: register blocks of rows × tokens, each weight
// block read once for the block's tokens, the one-token case the same operations). A token's
// results so do not depend on the other tokens of the pass. The integer kernels quantize each
// token on its own, as they always do. Types without an invariant kernel multiply every token
// with MatVec's row dots over L1-resident row blocks (blocks at multiples of 4 rows, as MatVec
// runs them unsplit).
func (m *Matrix) mulRowwise(y, x []float32, n int, p *Pool) {
	rows, cols := m.Rows, m.Cols
	blk := max(4, (rowBlockBytes/(4*cols))&^3)
	var body func(lo, hi int)
	switch w := f32s(m.Data); {
	case m.intK:
		m.mulInt(y, x, n, p, true) // the kernel's outputs do not depend on the row split
		return
	case m.Type == gguf.F32 && w != nil:
		body = func(lo, hi int) { wkern.MulF32(y, rows, w, cols, x, n, lo*blk, min(hi*blk, rows)) }
	case m.Type == gguf.F16:
		blk = max(4, (rowBlockBytes/(2*cols))&^3)
		body = func(lo, hi int) { wkern.MulF16(y, rows, m.Data, m.RowBytes, cols, x, n, lo*blk, min(hi*blk, rows)) }
	default:
		body = func(lo, hi int) {
			for r0 := lo * blk; r0 < min(hi*blk, rows); r0 += blk {
				r1 := min(r0+blk, rows)
				for t := 0; t < n; t++ {
					m.matVec(y[t*rows:(t+1)*rows], x[t*cols:(t+1)*cols], r0, r1)
				}
			}
		}
	}
	blocks := (rows + blk - 1) / blk
	if p.Threads() == 1 || n*rows*cols <= workGrain {
		body(0, blocks)
		return
	}
	p.For(blocks, max(1, workGrain/(n*cols*blk)), body)
}

// rowBlockBytes is the weight rows mulRowwise keeps hot while the tokens pass them.
const rowBlockBytes = 16 << 10
