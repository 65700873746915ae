// Package backend is the seam between the code that generates (native/runner, native/lab,
// the server and the commands) and the devices a forward pass runs on. A Backend places a
// model's weights (Load) and reports the memory it has; a loaded Model makes KV caches; a
// Cache runs the forward pass over its own cells. The CPU backend (native/backend/cpu) and the
// CUDA backend (native/backend/cuda) implement it; native/backends opens one by name.
package backend

import (
	"errors"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/model"
)

// Device names of Open (native/backends).
const (
	CPU  = "cpu"
	CUDA = "cuda"
)

// ErrNoMemoryReport: the backend cannot say how much memory it has (the caller budgets with
// another source, the host's).
var ErrNoMemoryReport = errors.New("backend: no memory report")

// MemInfo is the memory a backend holds its caches and weights in.
type MemInfo struct {
	// TotalBytes and FreeBytes are the memory's size and what is free now.
	TotalBytes, FreeBytes int64
	// Source says where the numbers come from ("cuMemGetInfo (NVIDIA H200)").
	Source string
}

// ForwardFunc is the CPU forward pass (model.Model.Forward's signature).
type ForwardFunc func(tokens []int32, cache *kvcache.Cache, logits []float32) error

// LoadOptions configure Backend.Load.
type LoadOptions struct {
	// Progress, when set, is told the weight bytes placed so far and the total.
	Progress func(done, total int64)
	// Hook, when set, wraps the CPU forward pass (instrumentation, tests that count or slow
	// the passes); backends that do not run it ignore it.
	Hook func(ForwardFunc) ForwardFunc
	// BatchHook, when set, wraps the CPU batched pass (Batcher). With a Hook and no BatchHook
	// the CPU model runs no batched pass (it is no Batcher), so the Hook sees every pass.
	BatchHook func(BatchForwardFunc) BatchForwardFunc
	// KVResident, when positive, keeps the first KVResident cells of every cache the Model
	// makes in device memory and the cells past them in a host-spill tail, read from host
	// memory at every step (the CUDA backend: engine.NewSpillCache); a cache of no more cells
	// is wholly on the device. Backends whose caches live in host memory (the CPU's) ignore it.
	KVResident int
	// KVSpillChunk is the host-spill tail's chunk in cells, a multiple of 32 (0: the engine's
	// default, engine.DefaultSpillChunk).
	KVSpillChunk int
}

// BatchForwardFunc is the CPU batched pass (model.Model.ForwardBatch's signature).
type BatchForwardFunc func(steps []model.SeqStep) error

// BatchStep is one sequence's share of a batched forward pass: Tokens run at its cache's next
// positions, Logits as in Cache.Forward.
type BatchStep struct {
	Cache  Cache
	Tokens []int32
	Logits []float32
}

// Batcher is a Model that runs the steps of several of its caches (one step each) in one
// forward pass, each weight read once for all of them; on an error no cache changes.
type Batcher interface {
	ForwardBatch(steps []BatchStep) error
}

// Backend is a device the forward pass runs on. Its methods are safe for concurrent use.
type Backend interface {
	// Name says where it computes: "cpu", or "cuda: " and the GPU's name.
	Name() string
	// Check reports, before any weight is read, a model shape the backend does not run.
	Check(hp model.Hparams) error
	// WeightBytes is the memory m's weights will take as Load places them (the CUDA loader
	// widens the K-quants to f16): what the KV policy sets aside before the caches.
	WeightBytes(m *model.Model) int64
	// Memory is the backend's memory now; ErrNoMemoryReport when it has no report of its own.
	Memory() (MemInfo, error)
	// Load places m's weights on the backend. m must outlive the returned Model.
	Load(m *model.Model, opts LoadOptions) (Model, error)
	// Close releases the device; no Model may be in use.
	Close() error
}

// Model is a model's weights on a backend.
type Model interface {
	// NewCache allocates an empty KV cache of cfg (model.Model.CacheConfig's geometry).
	NewCache(cfg kvcache.Config) (Cache, error)
	// Describe is one line on how the weights are held ("" when they are the file's, in place).
	Describe() string
	// Close frees the weights.
	Close() error
}

// Cache is one sequence's KV cache on a backend and the forward pass that fills it.
type Cache interface {
	// Forward runs tokens at positions Len()… and writes logits: one row (the last
	// position's) when len(logits) is the vocabulary, a row per token when it is
	// len(tokens)×vocabulary, none when empty. It fails with kvcache.ErrKVFull when the cells
	// do not fit.
	Forward(tokens []int32, logits []float32) error
	// Len is the number of committed cells; Cap the capacity.
	Len() int
	Cap() int
	// Truncate keeps the first n cells; it fails where the cache cannot roll back.
	Truncate(n int) error
	// Reset empties the cache.
	Reset() error
	// Bytes is the memory the cache holds.
	Bytes() int64
	// Free releases the cache's memory; it is not used again.
	Free()
}

// KVHolder is implemented by caches whose cells are a kvcache.Cache in host memory (the CPU
// backend's): KV snapshots read and write it. A cache without it cannot be saved.
type KVHolder interface {
	KVCache() *kvcache.Cache
}
