// Package cuda is the CUDA backend: native/cuda/engine's forward pass, the weights uploaded once
// and every cache on the card. An engine's work is serialized (models on one engine share its
// scratch buffers), so every call into it holds the backend's lock.
package cuda

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
)

// Backend is one GPU's engine.
type Backend struct {
	eng *engine.Engine
	mu  sync.Mutex
}

// Open opens GPU ordinal. Without a driver the error is the one-line "no CUDA driver found: …"
// (cuda.ErrNoCUDA).
func Open(ordinal int) (*Backend, error) {
	e, err := engine.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return &Backend{eng: e}, nil
}

// Engine is the backend's engine, for the commands that drive kernels directly (bench, gate).
func (b *Backend) Engine() *engine.Engine { return b.eng }

// Name is "cuda: " and the GPU's name.
func (b *Backend) Name() string { return "cuda: " + b.eng.Info().Name }

// Check is engine.CheckModel.
func (b *Backend) Check(hp model.Hparams) error { return engine.CheckModel(hp) }

// WeightBytes is the device memory of m's weights as the loader uploads them: the types the
// kernels read in place (engine.WeightTypes) at their file size, every other matrix widened to
// f16, and the vectors (norms, biases, RoPE frequencies) as float32.
func (b *Backend) WeightBytes(m *model.Model) int64 { return HeldBytes(m.Weights()) }

// HeldBytes is WeightBytes of bound weights.
func HeldBytes(w model.Weights) int64 {
	mat := func(x *model.Matrix) int64 {
		if x == nil { // a mixture-of-experts block's dense FFN: the device refuses such models
			return 0
		}
		if slices.Contains(engine.WeightTypes, x.Type) {
			return int64(len(x.Data))
		}
		return int64(x.Rows) * int64(gguf.F16.RowBytes(uint64(x.Cols)))
	}
	n := mat(w.Embd) + 4*int64(len(w.Norm)+len(w.RopeFreq))
	if w.Output != w.Embd {
		n += mat(w.Output)
	}
	for _, b := range w.Blocks {
		for _, x := range []*model.Matrix{b.Wq, b.Wk, b.Wv, b.Wo, b.Gate, b.Up, b.Down} {
			n += mat(x)
		}
		n += 4 * int64(len(b.AttnNorm)+len(b.FFNNorm)+len(b.Bq)+len(b.Bk)+len(b.Bv)+len(b.Bo))
	}
	return n
}

// Memory is the device's free and total memory (cuMemGetInfo).
func (b *Backend) Memory() (backend.MemInfo, error) {
	free, total, err := b.eng.Context().MemInfo()
	if err != nil {
		return backend.MemInfo{}, err
	}
	return backend.MemInfo{TotalBytes: int64(total), FreeBytes: int64(free), Source: "cuMemGetInfo (" + b.eng.Info().Name + ")"}, nil
}

// Load uploads m's weights (engine.LoadModel). With opts.KVResident every cache the Model
// makes keeps that many cells on the device and the rest in a host-spill tail.
func (b *Backend) Load(m *model.Model, opts backend.LoadOptions) (backend.Model, error) {
	if opts.KVResident < 0 || opts.KVSpillChunk < 0 {
		return nil, fmt.Errorf("cuda: %d resident KV cells and a spill chunk of %d: must not be negative", opts.KVResident, opts.KVSpillChunk)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	dm, err := b.eng.LoadModel(m, engine.ModelOptions{Progress: opts.Progress})
	if err != nil {
		return nil, err
	}
	return &Model{b: b, dm: dm, spill: engine.SpillOptions{Resident: opts.KVResident, Chunk: opts.KVSpillChunk}}, nil
}

// Close releases the engine.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eng.Close()
}

// Model is a model's weights on the device.
type Model struct {
	b  *Backend
	dm *engine.Model
	// spill is LoadOptions.KVResident and KVSpillChunk: a cache's host-spill tail (Resident 0:
	// none, every cell on the device).
	spill engine.SpillOptions
}

// NewCache allocates a device cache (with a host-spill tail past LoadOptions.KVResident cells).
func (m *Model) NewCache(cfg kvcache.Config) (backend.Cache, error) {
	if cfg.Recent > 0 {
		return nil, fmt.Errorf("cuda: %w: the f16 recent window over a quantized tail runs on the CPU only", kvq.ErrUnsupported)
	}
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	c, err := m.newCache(cfg)
	if err != nil {
		return nil, err
	}
	return &Cache{m: m, cfg: cfg, c: c}, nil
}

// newCache is the engine's cache of cfg, with a host-spill tail past m.spill.Resident cells when
// it is set (engine.NewSpillCache: all on the device when cfg.MaxCells ≤ the resident
// cells). The backend's lock is held.
func (m *Model) newCache(cfg kvcache.Config) (*engine.Cache, error) {
	if m.spill.Resident > 0 {
		return m.b.eng.NewSpillCache(cfg, m.spill)
	}
	return m.b.eng.NewCache(cfg)
}

// Describe is "weights " and the upload's summary.
func (m *Model) Describe() string { return "weights " + m.dm.Upload().String() }

// Close frees the weights.
func (m *Model) Close() error {
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	return m.dm.Close()
}

// errNoTruncate: the device cache has no rollback yet.
var errNoTruncate = errors.New("the device KV cache cannot truncate")

// Cache is a device cache with the shared device model.
type Cache struct {
	m   *Model
	cfg kvcache.Config
	c   *engine.Cache
}

// Forward runs the device model over the cache.
func (c *Cache) Forward(tokens []int32, logits []float32) error {
	c.m.b.mu.Lock()
	defer c.m.b.mu.Unlock()
	return c.m.dm.Forward(tokens, c.c, logits)
}

func (c *Cache) Len() int { return c.c.Len() }
func (c *Cache) Cap() int { return c.c.Cap() }

// Truncate succeeds only when nothing is dropped: the device cache (engine.Cache) has no
// rollback yet, so prefix reuse on the GPU is limited to prompts that extend a cache's whole
// contents (the next turn of a chat); the runner's pool resets the cache for any other prompt.
func (c *Cache) Truncate(n int) error {
	if n == c.c.Len() {
		return nil
	}
	return fmt.Errorf("%w (%d cells to %d)", errNoTruncate, c.c.Len(), n)
}

// Reset empties the cache by replacing it with a fresh one (the device cache has no reset).
func (c *Cache) Reset() error {
	c.m.b.mu.Lock()
	defer c.m.b.mu.Unlock()
	c.c.Free()
	nc, err := c.m.newCache(c.cfg)
	if err != nil {
		return err
	}
	c.c = nc
	return nil
}

// Bytes is the device memory the cache holds (a host-spill tail's is HostBytes).
func (c *Cache) Bytes() int64 { return c.c.Bytes() }

func (c *Cache) Free() {
	c.m.b.mu.Lock()
	defer c.m.b.mu.Unlock()
	c.c.Free()
}
