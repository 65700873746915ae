package engine

import (
	"fmt"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/ml"
	"github.com/kvlab/kvlab/native/model"
)

// The optional operations of native/ml on the device: ml.Gemma (sliding-window and
// soft-capped attention, GeGLU, Scale, final soft-capping) and ml.MoE.
var (
	_ ml.Gemma = (*backend)(nil)
	_ ml.MoE   = (*backend)(nil)
)

// AttentionOpts is ml.Gemma's: Attention whose queries attend only their last o.Window
// positions (when positive) with every scaled score capped as o.SoftCap·tanh(x/o.SoftCap)
// (when positive). One token decodes over the cache's decode readers (the FP16 overlay's exact
// copies included) from cell p−Window+1; several prefill with the window per row. The device
// cache holds a window layer's whole context (no ring of Window cells, as the CPU's
// kvcache.Config.Windows keeps): its memory is the full layer's.
func (b *backend) AttentionOpts(out, q, k, v ml.Tensor, layer int, scale float32, o ml.AttnOptions) {
	if !b.ready() {
		return
	}
	if o.Window < 0 || o.SoftCap < 0 {
		b.fail(fmt.Errorf("engine: layer %d: window %d and soft-cap %g must not be negative", layer, o.Window, o.SoftCap))
		return
	}
	b.attention(out, q, k, v, layer, scale, o)
}

// GeGLU is ml.Gemma's: gate = GELU(gate) ⊙ up (nn.cu's geglu, tanh approximation).
func (b *backend) GeGLU(gate, up ml.Tensor) {
	g := gate.(*tensor)
	n := g.rows * g.cols
	b.launch("geglu", cuda.D1((n+255)/256), cuda.D1(256), g.ptr(), up.(*tensor).ptr(), cuda.Int(n))
}

// Scale is ml.Gemma's: x *= s.
func (b *backend) Scale(x ml.Tensor, s float32) {
	t := x.(*tensor)
	n := t.rows * t.cols
	b.launch("mul_scalar", cuda.D1((n+255)/256), cuda.D1(256), t.ptr(), cuda.F32(s), cuda.Int(n))
}

// SoftCapOut is ml.Gemma's: the batch's Out capped as c·tanh(v/c), on the host over the
// logits copied back.
func (b *backend) SoftCapOut(c float32) {
	if b.ready() {
		model.SoftCapAll(b.bt.Out, c)
	}
}

// MoEFFN is ml.MoE's. The router's product runs on the device and its logits come back to the
// host (one copy per layer, n × experts values), where each token's top o.Used experts and
// weights are chosen with native/model's arithmetic (softmax in double, ties to the lower
// expert, renormalized with o.NormTopK). Then, expert by expert in ascending order, the rows
// of the tokens that picked it are gathered (moe_gather), run through its SwiGLU FFN (three
// products over its matrices as uploaded) and added into their rows with their weights
// (moe_scatter): only the experts some token uses are read. The shared expert runs over every
// row and is added scaled by its sigmoid gate (shexp_gate).
func (b *backend) MoEFFN(dst, x ml.Tensor, router ml.Matrix, gate, up, down []ml.Matrix, o ml.MoEOptions) {
	if !b.ready() {
		return
	}
	out, in := dst.(*tensor), x.(*tensor)
	rw := b.mat(router)
	if !b.ready() {
		return
	}
	n, ne, embd, used := in.rows, rw.rows, in.cols, o.Used
	if used < 1 || used > ne || len(gate) != ne || len(up) != ne || len(down) != ne {
		b.fail(fmt.Errorf("engine: %d of %d experts used, %d/%d/%d expert matrices", used, ne, len(gate), len(up), len(down)))
		return
	}
	e := b.m.e
	lg, err := e.buffer("moe.logits", int64(n*ne)*4)
	if err != nil {
		b.fail(err)
		return
	}
	if err := e.matVecAt(cuda.Ptr(lg), rw, in.ptr(), nil, n, false); err != nil {
		b.fail(err)
		return
	}
	s := &b.moe
	s.logits = grow(s.logits, n*ne)
	if err := lg.Read(cuda.Bytes(s.logits)); err != nil {
		b.fail(err)
		return
	}
	s.route(n, ne, used, o.NormTopK)
	// The experts' row lists, concatenated in ascending expert order: rows (token indices) and
	// weights, one upload each.
	s.rows, s.w = s.rows[:0], s.w[:0]
	s.start = grow(s.start, ne+1)
	for ex := 0; ex < ne; ex++ {
		s.start[ex] = len(s.rows)
		for i, pe := range s.picks {
			if pe == ex {
				s.rows = append(s.rows, int32(i/used))
				s.w = append(s.w, s.weights[i])
			}
		}
	}
	s.start[ne] = len(s.rows)
	b.launch("fill_zero", cuda.D1((n*embd+255)/256), cuda.D1(256), out.ptr(), cuda.Int(n*embd))
	rb, err := e.buffer("moe.rows", int64(len(s.rows))*4)
	if err == nil {
		err = rb.Write(cuda.Bytes(s.rows))
	}
	wb, err2 := e.buffer("moe.w", int64(len(s.w))*4)
	if err == nil && err2 == nil {
		err = wb.Write(cuda.Bytes(s.w))
	}
	if err == nil {
		err = err2
	}
	if err != nil {
		b.fail(err)
		return
	}
	for ex := 0; ex < ne && b.ready(); ex++ {
		r0, m := s.start[ex], s.start[ex+1]-s.start[ex]
		if m == 0 {
			continue // an expert no token picked is not read
		}
		ge, ue, de := b.mat(gate[ex]), b.mat(up[ex]), b.mat(down[ex])
		if !b.ready() {
			return
		}
		xs, g, u, y, ok := b.moeScratch(m, embd, ge.rows)
		if !ok {
			return
		}
		rows, ws := cuda.PtrAt(rb, int64(r0)*4), cuda.PtrAt(wb, int64(r0)*4)
		b.launch("moe_gather", cuda.D1(m), cuda.D1(256), cuda.Ptr(xs), in.ptr(), rows, cuda.Int(embd))
		b.ffn(g, u, y, ge, ue, de, cuda.Ptr(xs), m)
		b.launch("moe_scatter", cuda.D1(m), cuda.D1(256), out.ptr(), cuda.Ptr(y), rows, ws, cuda.Int(embd))
	}
	if sh := o.Shared; sh != nil && b.ready() {
		ge, ue, de, gi := b.mat(sh.Gate), b.mat(sh.Up), b.mat(sh.Down), b.vec(sh.GateInp)
		if !b.ready() {
			return
		}
		_, g, u, y, ok := b.moeScratch(n, embd, ge.rows)
		if !ok {
			return
		}
		b.ffn(g, u, y, ge, ue, de, in.ptr(), n)
		b.launch("shexp_gate", cuda.D1(n), cuda.D1(256), out.ptr(), cuda.Ptr(y), in.ptr(), cuda.Ptr(gi), cuda.Int(embd))
	}
}

// ffn writes y = down·(SiLU(gate·x) ⊙ up·x) for m rows of x, g and u scratch of m × ff.
func (b *backend) ffn(g, u, y *cuda.Buffer, ge, ue, de *weight, x cuda.Arg, m int) {
	e := b.m.e
	for _, st := range []struct {
		dst *cuda.Buffer
		w   *weight
		in  cuda.Arg
	}{{g, ge, x}, {u, ue, x}} {
		if !b.ready() {
			return
		}
		if err := e.matVecAt(cuda.Ptr(st.dst), st.w, st.in, nil, m, false); err != nil {
			b.fail(err)
			return
		}
	}
	nf := m * ge.rows
	b.launch("swiglu", cuda.D1((nf+255)/256), cuda.D1(256), cuda.Ptr(g), cuda.Ptr(u), cuda.Int(nf))
	if !b.ready() {
		return
	}
	if err := e.matVecAt(cuda.Ptr(y), de, cuda.Ptr(g), nil, m, false); err != nil {
		b.fail(err)
	}
}

// moeScratch returns the engine's MoE buffers for m rows: gathered inputs (m × embd), gate
// and up (m × ff) and output (m × embd).
func (b *backend) moeScratch(m, embd, ff int) (xs, g, u, y *cuda.Buffer, ok bool) {
	e := b.m.e
	var err error
	for _, s := range []struct {
		dst   **cuda.Buffer
		name  string
		bytes int
	}{{&xs, "moe.xs", m * embd}, {&g, "moe.g", m * ff}, {&u, "moe.u", m * ff}, {&y, "moe.y", m * embd}} {
		if *s.dst, err = e.buffer(s.name, int64(s.bytes)*4); err != nil {
			b.fail(fmt.Errorf("engine: mixture-of-experts scratch: %w", err))
			return nil, nil, nil, nil, false
		}
	}
	return xs, g, u, y, true
}

// moeHost is MoEFFN's host-side routing state, reused from layer to layer and pass to pass.
type moeHost struct {
	logits, weights, w []float32
	p                  []float64
	picks, start       []int
	rows               []int32
}

// route picks each of n tokens' used experts from s.logits (n × ne) into s.picks and
// s.weights (n × used): ml.RouteTopK, as the CPU backend routes.
func (s *moeHost) route(n, ne, used int, norm bool) {
	s.picks, s.weights = grow(s.picks, n*used), grow(s.weights, n*used)
	s.p = ml.RouteTopK(s.logits, n, ne, used, norm, s.picks, s.weights, s.p)
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// uploadExperts uploads a block's router, experts and shared expert (LoadModel uploads every
// expert: a pass reads only those its tokens pick).
func (m *Model) uploadExperts(b *model.Block) error {
	if b.Router == nil {
		return nil
	}
	ms := []*model.Matrix{b.Router}
	ms = append(ms, b.GateExps...)
	ms = append(ms, b.UpExps...)
	ms = append(ms, b.DownExps...)
	if b.ShGate != nil {
		ms = append(ms, b.ShGate, b.ShUp, b.ShDown)
	}
	for _, w := range ms {
		if _, err := m.matrix(w); err != nil {
			return err
		}
	}
	if _, err := m.vector(b.ShGateInp); err != nil {
		return err
	}
	return nil
}
