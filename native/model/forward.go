package model

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvcache"
)

// state is one forward pass's scratch, sized for up to n tokens and reused across calls.
type state struct {
	n                int
	x, h, q, k, v, a []float32 // n × Embd, Embd, Heads·HeadDimK, KV·HeadDimK, KV·HeadDimV, Heads·HeadDimV
	gate, up         []float32 // n × FFN
	cos, sin         []float32 // n × RopeDims/2
}

func (m *Model) getState(n int) *state {
	if s, ok := m.states.Get().(*state); ok && s.n >= n {
		return s
	}
	hp := m.Hparams
	return &state{
		n:    n,
		x:    make([]float32, n*hp.Embd),
		h:    make([]float32, n*hp.Embd),
		q:    make([]float32, n*hp.Heads*hp.HeadDimK),
		k:    make([]float32, n*hp.KVHeads*hp.HeadDimK),
		v:    make([]float32, n*hp.KVHeads*hp.HeadDimV),
		a:    make([]float32, n*hp.Heads*hp.HeadDimV),
		gate: make([]float32, n*hp.FFN),
		up:   make([]float32, n*hp.FFN),
		cos:  make([]float32, n*max(hp.RopeDims/2, 1)),
		sin:  make([]float32, n*max(hp.RopeDims/2, 1)),
	}
}

// Forward runs tokens through the model at positions cache.Len() … cache.Len()+len(tokens)−1,
// stores their keys and values in cache, commits them, and writes logits:
//
//	len(logits) == 0               no logits (a prefill whose output is not needed)
//	len(logits) == Vocab           the last position's logits
//	len(logits) == len(tokens)·Vocab  every position's logits, position-major
//
// One token decodes: attention reads the cache through its decode readers (the f16 window and
// sinks overlay when configured) with attn.Decode. Several tokens prefill: all positions of a
// pass (up to Options.Batch tokens) go through each matrix product together and attend
// causally with attn.Prefill over the cache's prefill readers.
//
// The cache must have the model's geometry. When the tokens do not fit in the cache, Forward
// computes nothing and returns an error wrapping kvcache.ErrKVFull; on any error the cache is
// left as it was (uncommitted cells are dropped).
func (m *Model) Forward(tokens []int32, cache *kvcache.Cache, logits []float32) error {
	return m.ForwardTap(tokens, cache, logits, nil)
}

// ForwardTap is Forward that also reports the attention queries: when tap is not nil it is
// called for every layer of every pass with the post-RoPE queries of positions pos0 … pos0+n−1
// (n × Heads × HeadDimK values, position-major; valid only during the call). The lab uses it
// to measure attention-output error with the model's own queries.
func (m *Model) ForwardTap(tokens []int32, cache *kvcache.Cache, logits []float32, tap func(layer, pos0, n int, q []float32)) error {
	hp := m.Hparams
	n := len(tokens)
	if n == 0 {
		return fmt.Errorf("model: forward of no tokens")
	}
	if l := len(logits); l != 0 && l != hp.Vocab && l != n*hp.Vocab {
		return fmt.Errorf("model: logits buffer of %d values: want 0, %d (last position) or %d (%d positions × %d)",
			l, hp.Vocab, n*hp.Vocab, n, hp.Vocab)
	}
	cfg := cache.Config()
	if cfg.Layers != hp.Layers || cfg.KVHeads != hp.KVHeads || cfg.HeadDimK != hp.HeadDimK || cfg.HeadDimV != hp.HeadDimV {
		return fmt.Errorf("model: cache of %d layers × %d KV heads × %d/%d dims does not fit the model's %d × %d × %d/%d",
			cfg.Layers, cfg.KVHeads, cfg.HeadDimK, cfg.HeadDimV, hp.Layers, hp.KVHeads, hp.HeadDimK, hp.HeadDimV)
	}
	if p0 := cache.Len(); p0+n > cache.Cap() {
		return fmt.Errorf("model: %d tokens at position %d: %w (capacity %d cells)", n, p0, kvcache.ErrKVFull, cache.Cap())
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= hp.Vocab {
			return fmt.Errorf("model: token %d at index %d is outside the vocabulary [0, %d)", t, i, hp.Vocab)
		}
	}
	st := m.getState(min(n, m.batch))
	defer m.states.Put(st)
	for lo := 0; lo < n; lo += m.batch {
		hi := min(lo+m.batch, n)
		var out []float32
		all := len(logits) == n*hp.Vocab && n > 1
		switch {
		case all:
			out = logits[lo*hp.Vocab : hi*hp.Vocab]
		case len(logits) > 0 && hi == n:
			out = logits
		}
		if err := m.pass(st, tokens[lo:hi], cache, out, all, tap); err != nil {
			if terr := cache.Truncate(cache.Len()); terr != nil {
				return fmt.Errorf("%w (and dropping the uncommitted cells failed: %v)", err, terr)
			}
			return err
		}
	}
	return nil
}

// pass runs one batch of n ≤ st.n tokens; out receives the last position's logits (all=false)
// or every position's (all=true), or nothing when empty.
func (m *Model) pass(st *state, tokens []int32, cache *kvcache.Cache, out []float32, all bool, tap func(layer, pos0, n int, q []float32)) error {
	hp := m.Hparams
	n, p0 := len(tokens), cache.Len()
	e, nq, nk, nv, na := hp.Embd, hp.Heads*hp.HeadDimK, hp.KVHeads*hp.HeadDimK, hp.KVHeads*hp.HeadDimV, hp.Heads*hp.HeadDimV
	x, h := st.x[:n*e], st.h[:n*e]
	q, k, v, a := st.q[:n*nq], st.k[:n*nk], st.v[:n*nv], st.a[:n*na]
	gate, up := st.gate[:n*hp.FFN], st.up[:n*hp.FFN]
	half := hp.RopeDims / 2
	for t, tok := range tokens {
		m.embd.DequantRow(x[t*e:(t+1)*e], int(tok))
		m.rope.angles(st.cos[t*half:(t+1)*half], st.sin[t*half:(t+1)*half], p0+t)
	}
	shape := attn.Shape{Heads: hp.Heads, KVHeads: hp.KVHeads, HeadDimK: hp.HeadDimK, HeadDimV: hp.HeadDimV,
		Scale: float32(1 / math.Sqrt(float64(hp.HeadDimK))), Threads: 1}
	// Attention work in multiply-adds: spread it over threads only when it pays.
	if work := n * (p0 + n) * hp.Heads * (hp.HeadDimK + hp.HeadDimV); work >= 1<<17 {
		shape.Threads = m.pool.Threads()
	}
	decode := n == 1
	for l := range m.blocks {
		b := &m.blocks[l]
		for t := 0; t < n; t++ {
			rmsNorm(h[t*e:(t+1)*e], x[t*e:(t+1)*e], b.AttnNorm, hp.RMSEps)
		}
		b.Wq.MatMul(q, h, n, m.pool)
		b.Wk.MatMul(k, h, n, m.pool)
		b.Wv.MatMul(v, h, n, m.pool)
		addBias(q, b.Bq, n)
		addBias(k, b.Bk, n)
		addBias(v, b.Bv, n)
		for t := 0; t < n; t++ {
			cos, sin := st.cos[t*half:(t+1)*half], st.sin[t*half:(t+1)*half]
			m.rope.apply(q[t*nq:(t+1)*nq], hp.Heads, hp.HeadDimK, cos, sin)
			m.rope.apply(k[t*nk:(t+1)*nk], hp.KVHeads, hp.HeadDimK, cos, sin)
		}
		if tap != nil {
			tap(l, p0, n, q)
		}
		if err := cache.Write(l, k, v, n); err != nil {
			return fmt.Errorf("model: layer %d: %w", l, err)
		}
		var err error
		if decode {
			err = attn.Decode(a, q, shape, cache.Keys(l, true), cache.Values(l, true), 0, p0+1)
		} else {
			err = attn.Prefill(a, q, n, p0, 0, shape, cache.Keys(l, false), cache.Values(l, false))
		}
		if err != nil {
			return fmt.Errorf("model: layer %d attention: %w", l, err)
		}
		b.Wo.MatMul(h, a, n, m.pool)
		addBias(h, b.Bo, n)
		add(x, h)
		for t := 0; t < n; t++ {
			rmsNorm(h[t*e:(t+1)*e], x[t*e:(t+1)*e], b.FFNNorm, hp.RMSEps)
		}
		b.Gate.MatMul(gate, h, n, m.pool)
		b.Up.MatMul(up, h, n, m.pool)
		swiGLU(gate, up)
		b.Down.MatMul(h, gate, n, m.pool)
		add(x, h)
	}
	if err := cache.Commit(n); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	switch {
	case len(out) == 0:
	case all:
		for t := 0; t < n; t++ {
			rmsNorm(h[t*e:(t+1)*e], x[t*e:(t+1)*e], m.norm, hp.RMSEps)
		}
		m.output.MatMul(out, h, n, m.pool)
	default:
		last := h[:e]
		rmsNorm(last, x[(n-1)*e:n*e], m.norm, hp.RMSEps)
		m.output.MatVec(out, last, m.pool)
	}
	return nil
}
