package server

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/model"
)

// Devices of Config.Device.
const (
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
)

// forwarder is one generation slot's KV cache and the forward pass that fills it: the CPU
// model with a kvcache.Cache, or the device model with a device cache. Generate and the cache
// pool see only this.
type forwarder interface {
	// Forward runs tokens at positions Len()… and writes logits (native/model's contract).
	Forward(tokens []int32, logits []float32) error
	// Len is the number of committed cells.
	Len() int
	// Truncate keeps the first n cells; it fails where the cache cannot roll back.
	Truncate(n int) error
	// Reset empties the cache.
	Reset() error
	// Bytes is the memory the cache holds.
	Bytes() int64
	// Free releases the cache's memory; the slot is not used again.
	Free()
}

// cpuSlot is the CPU engine's slot: the (possibly hooked) forward pass over a kvcache.Cache.
type cpuSlot struct {
	forward ForwardFunc
	cache   *kvcache.Cache
}

func (s *cpuSlot) Forward(tokens []int32, logits []float32) error {
	return s.forward(tokens, s.cache, logits)
}
func (s *cpuSlot) Len() int             { return s.cache.Len() }
func (s *cpuSlot) Truncate(n int) error { return s.cache.Truncate(n) }
func (s *cpuSlot) Reset() error         { s.cache.Reset(); return nil }
func (s *cpuSlot) Bytes() int64         { return s.cache.Bytes() }
func (s *cpuSlot) Free()                {}

// device is the CUDA engine the server opened at start, shared by every model on it. An
// engine's work must be serialized (models on one engine share its scratch buffers), so every
// call into it — forward passes, cache allocation and release — holds mu.
type device struct {
	eng *engine.Engine
	mu  sync.Mutex
}

// name describes the device for /system and the generation stats.
func (d *device) name() string { return "cuda: " + d.eng.Info().Name }

// memory is the device's free and total memory: what the KV policy budgets against with
// --device cuda (the caches and the weights live on the card).
func (d *device) memory() (MemInfo, error) {
	free, total, err := d.eng.Context().MemInfo()
	if err != nil {
		return MemInfo{}, err
	}
	return MemInfo{TotalBytes: int64(total), FreeBytes: int64(free), Source: "cuMemGetInfo (" + d.eng.Info().Name + ")"}, nil
}

// close releases the engine.
func (d *device) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.eng.Close()
}

// loadModel uploads a CPU model's weights to the device.
func (d *device) loadModel(m *model.Model) (*engine.Model, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.eng.LoadModel(m, engine.ModelOptions{})
}

// closeModel frees a device model.
func (d *device) closeModel(m *engine.Model) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return m.Close()
}

// newSlot allocates a device cache for m.
func (d *device) newSlot(m *engine.Model, cfg kvcache.Config) (*deviceSlot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.eng.NewCache(cfg)
	if err != nil {
		return nil, err
	}
	return &deviceSlot{dev: d, model: m, cfg: cfg, cache: c}, nil
}

// errNoTruncate: the device cache has no rollback yet.
var errNoTruncate = errors.New("the device KV cache cannot truncate")

// deviceSlot is a device engine's slot: the shared device model over a device cache of its own.
type deviceSlot struct {
	dev   *device
	model *engine.Model
	cfg   kvcache.Config
	cache *engine.Cache
}

func (s *deviceSlot) Forward(tokens []int32, logits []float32) error {
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	return s.model.Forward(tokens, s.cache, logits)
}

func (s *deviceSlot) Len() int { return s.cache.Len() }

// Truncate succeeds only when nothing is dropped: the device cache (native/cuda/engine.Cache)
// has no rollback yet, so prefix reuse on the GPU is limited to prompts that extend a cache's
// whole contents (the next turn of a chat); any other prompt resets the cache and prefills
// again (cachePool.get).
func (s *deviceSlot) Truncate(n int) error {
	if n == s.cache.Len() {
		return nil
	}
	return fmt.Errorf("%w (%d cells to %d)", errNoTruncate, s.cache.Len(), n)
}

// Reset empties the cache by replacing it with a fresh one (the device cache has no reset).
func (s *deviceSlot) Reset() error {
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	s.cache.Free()
	c, err := s.dev.eng.NewCache(s.cfg)
	if err != nil {
		return err
	}
	s.cache = c
	return nil
}

func (s *deviceSlot) Bytes() int64 { return s.cache.Bytes() }

func (s *deviceSlot) Free() {
	s.dev.mu.Lock()
	defer s.dev.mu.Unlock()
	s.cache.Free()
}
