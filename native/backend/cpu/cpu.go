// Package cpu is the CPU backend: native/model's forward pass over native/kvcache caches in
// host memory, the weights read in place from the file's mapping.
package cpu

import (
	"fmt"
	"sync"

	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/model"
)

// Backend is the CPU. Its zero value is ready.
type Backend struct{}

// New returns the CPU backend.
func New() Backend { return Backend{} }

// Name is "cpu".
func (Backend) Name() string { return backend.CPU }

// Check accepts every shape native/model loads.
func (Backend) Check(model.Hparams) error { return nil }

// WeightBytes is the file's weight bytes: the CPU reads them in place.
func (Backend) WeightBytes(m *model.Model) int64 { return m.WeightBytes() }

// Memory has no report of its own: the host's memory is the caller's to read.
func (Backend) Memory() (backend.MemInfo, error) { return backend.MemInfo{}, backend.ErrNoMemoryReport }

// Load binds m's forward pass (wrapped by opts.Hook when set) and its batched pass (wrapped by
// opts.BatchHook; absent when only a Hook is set).
func (Backend) Load(m *model.Model, opts backend.LoadOptions) (backend.Model, error) {
	fwd := backend.ForwardFunc(m.Forward)
	if opts.Hook != nil {
		fwd = opts.Hook(fwd)
	}
	var batch backend.BatchForwardFunc
	if opts.Hook == nil || opts.BatchHook != nil {
		batch = m.ForwardBatch
		if opts.BatchHook != nil {
			batch = opts.BatchHook(batch)
		}
	}
	if batch == nil {
		return &Model{m: m, forward: fwd}, nil
	}
	return &BatchModel{Model{m: m, forward: fwd, batch: batch}}, nil
}

// Close does nothing.
func (Backend) Close() error { return nil }

// Model is a CPU model: native/model's, with its (possibly hooked) forward pass.
type Model struct {
	m       *model.Model
	forward backend.ForwardFunc
	batch   backend.BatchForwardFunc
	steps   sync.Pool // *[]model.SeqStep
}

// BatchModel is a CPU model that runs batched passes (backend.Batcher).
type BatchModel struct{ Model }

// ForwardBatch runs the steps, caches of this model, in one pass (model.Model.ForwardBatch).
func (m *BatchModel) ForwardBatch(steps []backend.BatchStep) error {
	sp, _ := m.steps.Get().(*[]model.SeqStep)
	if sp == nil {
		sp = new([]model.SeqStep)
	}
	defer func() { clear(*sp); m.steps.Put(sp) }()
	ss := (*sp)[:0]
	for i, st := range steps {
		c, ok := st.Cache.(*Cache)
		if !ok {
			return fmt.Errorf("cpu: step %d of the batch is over a %T, not a CPU cache", i, st.Cache)
		}
		ss = append(ss, model.SeqStep{Cache: c.KV, Tokens: st.Tokens, Logits: st.Logits})
	}
	*sp = ss
	return m.batch(ss)
}

// NewCache allocates a kvcache.Cache.
func (m *Model) NewCache(cfg kvcache.Config) (backend.Cache, error) {
	c, err := kvcache.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Cache{forward: m.forward, KV: c}, nil
}

// Describe is "": the weights are the file's.
func (m *Model) Describe() string { return "" }

// Close does nothing: the native/model model is its owner's to close.
func (m *Model) Close() error { return nil }

// Cache is a kvcache.Cache with the forward pass that fills it.
type Cache struct {
	forward backend.ForwardFunc
	// KV is the cache itself (measurements read its rows).
	KV *kvcache.Cache
}

// Forward runs the model over the cache.
func (c *Cache) Forward(tokens []int32, logits []float32) error {
	return c.forward(tokens, c.KV, logits)
}

func (c *Cache) Len() int             { return c.KV.Len() }
func (c *Cache) Cap() int             { return c.KV.Cap() }
func (c *Cache) Truncate(n int) error { return c.KV.Truncate(n) }
func (c *Cache) Reset() error         { c.KV.Reset(); return nil }
func (c *Cache) Bytes() int64         { return c.KV.Bytes() }
func (c *Cache) Free()                { c.KV.Release() }

// KVCache is backend.KVHolder.
func (c *Cache) KVCache() *kvcache.Cache { return c.KV }
