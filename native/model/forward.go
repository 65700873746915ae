package model

import (
	"fmt"
	"slices"
	"sync"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/ml"
)

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
	b := m.cpu()
	defer m.putCPU(b)
	b.tap = tap
	err := m.Run(b, cache, tokens, logits, m.batch)
	b.tap = nil
	return err
}

// checkStep checks one sequence's input to a pass (Run's and ForwardBatch's contract): the
// logits buffer's length, the cache's geometry and windows, the architecture's needs of the
// backend, the cache's room (an error wrapping kvcache.ErrKVFull) and the token ids. tokens is
// not empty.
func (m *Model) checkStep(b ml.Backend, c ml.Cache, tokens []int32, logits []float32) error {
	hp := m.Hparams
	n := len(tokens)
	if l := len(logits); l != 0 && l != hp.Vocab && l != n*hp.Vocab {
		return fmt.Errorf("model: logits buffer of %d values: want 0, %d (last position) or %d (%d positions × %d)",
			l, hp.Vocab, n*hp.Vocab, n, hp.Vocab)
	}
	cfg := c.Config()
	if cfg.Layers != hp.Layers || cfg.KVHeads != hp.KVHeads || cfg.HeadDimK != hp.HeadDimK || cfg.HeadDimV != hp.HeadDimV {
		return fmt.Errorf("model: cache of %d layers × %d KV heads × %d/%d dims does not fit the model's %d × %d × %d/%d",
			cfg.Layers, cfg.KVHeads, cfg.HeadDimK, cfg.HeadDimV, hp.Layers, hp.KVHeads, hp.HeadDimK, hp.HeadDimV)
	}
	if err := m.checkWindows(cfg); err != nil {
		return err
	}
	if m.Arch.Supports != nil {
		if err := m.Arch.Supports(m, b); err != nil {
			return err
		}
	}
	if p0 := c.Len(); p0+n > c.Cap() {
		return fmt.Errorf("model: %d tokens at position %d: %w (capacity %d cells)", n, p0, kvcache.ErrKVFull, c.Cap())
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= hp.Vocab {
			return fmt.Errorf("model: token %d at index %d is outside the vocabulary [0, %d)", t, i, hp.Vocab)
		}
	}
	return nil
}

// Run runs tokens through the architecture's forward pass (Arch.Forward) on backend b over
// its cache c, with Forward's contract, in passes of at most batch tokens. Every input is
// checked before any work: an empty input, a logits buffer of another length, a cache of
// another geometry, tokens outside the vocabulary, and tokens past the cache's capacity (an
// error wrapping kvcache.ErrKVFull). On an error midway, a cache that can roll back
// (Truncate) drops its uncommitted cells.
func (m *Model) Run(b ml.Backend, c ml.Cache, tokens []int32, logits []float32, batch int) error {
	hp := m.Hparams
	n := len(tokens)
	if n == 0 {
		return fmt.Errorf("model: forward of no tokens")
	}
	if err := m.checkStep(b, c, tokens, logits); err != nil {
		return err
	}
	if batch <= 0 {
		batch = n
	}
	bt, _ := batches.Get().(*ml.Batch)
	if bt == nil {
		bt = new(ml.Batch)
	}
	defer func() {
		clear(bt.Caches)
		*bt = ml.Batch{Pos: bt.Pos[:0], Seq: bt.Seq[:0], Caches: bt.Caches[:0]}
		batches.Put(bt)
	}()
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		bt.Single(tokens[lo:hi], c, c.Len())
		bt.All = len(logits) == n*hp.Vocab && n > 1
		switch {
		case bt.All:
			bt.Out = logits[lo*hp.Vocab : hi*hp.Vocab]
		case len(logits) > 0 && hi == n:
			bt.Out = logits
		default:
			bt.Out = nil
		}
		if err := m.pass(b, bt); err != nil {
			if t, ok := c.(interface{ Truncate(int) error }); ok {
				if terr := t.Truncate(c.Len()); terr != nil {
					return fmt.Errorf("%w (and dropping the uncommitted cells failed: %v)", err, terr)
				}
			}
			return err
		}
	}
	return nil
}

// checkWindows checks that a cache with sliding-window rings has the model's windows (a cache
// without them holds every layer's whole context, which serves any model).
func (m *Model) checkWindows(cfg kvcache.Config) error {
	if len(cfg.Windows) == 0 || slices.Equal(cfg.Windows, m.windows) {
		return nil
	}
	return fmt.Errorf("model: the cache's sliding windows %v are not the model's %v", cfg.Windows, m.windows)
}

// batches are reused ml.Batch values (Run allocates none once warm).
var batches sync.Pool

// pass runs one batch through the architecture and commits its cells.
func (m *Model) pass(b ml.Backend, bt *ml.Batch) error {
	if err := b.Begin(bt); err != nil {
		return err
	}
	m.Arch.Forward(b, m, bt)
	if err := b.Err(); err != nil {
		return err
	}
	if len(bt.Caches) == 1 {
		if err := bt.Caches[0].Commit(len(bt.Tokens)); err != nil {
			return fmt.Errorf("model: %w", err)
		}
		return nil
	}
	for i, c := range bt.Caches {
		n := 0
		for _, s := range bt.Seq {
			if int(s) == i {
				n++
			}
		}
		if err := c.Commit(n); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	return nil
}

// logits writes the batch's logits from the residual stream x (a row per token) with h (x's
// shape) as scratch: the final RMSNorm and the output matrix over every row (bt.All) or the
// last row of each sequence (in the order of bt.Caches), nothing when bt.Out is empty. Every
// architecture ends with it.
func (m *Model) logits(b ml.Backend, bt *ml.Batch, x, h ml.Tensor) {
	switch n := x.Rows(); {
	case len(bt.Out) == 0:
	case bt.All:
		b.RMSNorm(h, x, m.norm, m.Hparams.RMSEps)
		b.Logits(h, m.output)
	case len(bt.Caches) > 1:
		// Row s of h is sequence s's last token, normalized (h has a row per token, at least
		// one per sequence).
		for s := range bt.Caches {
			last := -1
			for t, q := range bt.Seq {
				if int(q) == s {
					last = t
				}
			}
			if last < 0 {
				last = 0 // a sequence without tokens: the backend's Begin refused the pass
			}
			b.RMSNorm(b.View(h, s, 1), b.View(x, last, 1), m.norm, m.Hparams.RMSEps)
		}
		b.Logits(b.View(h, 0, len(bt.Caches)), m.output)
	default:
		last := b.View(h, 0, 1)
		b.RMSNorm(last, b.View(x, n-1, 1), m.norm, m.Hparams.RMSEps)
		b.Logits(last, m.output)
	}
}
