package engine

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// Cache is a KV cache on the device: per layer, a K pool and a V pool in the configured
// format pair, quantized once on write by the kv_write_* kernels, and the FP16 window +
// sinks overlay of seed 003. It follows kvcache.Cache's contract (Write per layer, then
// Commit; capacity fixed up front; ErrKVFull past it) and stores byte for byte what kvcache
// stores, in a device layout: K pools tiled (layout.go), V pools and q2k groups as kvq lays
// them out. A Cache is not safe for concurrent use.
type Cache struct {
	e      *Engine
	cfg    kvcache.Config
	cap    int // capacity in cells, a multiple of Tile
	layers []*layer
	n      int
	stream *cuda.Stream
	sp     *spill // the host-spill tail (spill.go), or nil
}

type layer struct {
	k, v    *cuda.Buffer
	written int
	// q2k K: the last group's raw values, its rule scales and the previous group's (per head).
	stage, scales, prev *cuda.Buffer
	// tq4: the rotation diagonals of K and V (KV heads × d floats).
	scK, scV *cuda.Buffer
	// overlay: f16 copies (K tiled, V rows) of sinks + window slots and each slot's owner.
	ovK, ovV *cuda.Buffer
	owner    []int32
	ownerBuf *cuda.Buffer
}

// NewCache reserves a device cache. The pair must be one the GPU stores (CheckPair) with
// HeadDimK = HeadDimV. The device kernels store every format unrotated: a pair with rotated
// halves (the CPU's default, kvq's rotate.go) is stored as its "-r" variant, Pair.Unrotated.
// Sliding-window layers (cfg.Windows) are not kept as rings: every layer holds MaxCells cells,
// and the window is a mask of the attention (AttentionOpts), so such a cache takes the
// memory of a full-attention one, more than the CPU's and the planner's sliding-window figure.
func (e *Engine) NewCache(cfg kvcache.Config) (*Cache, error) { return e.newCache(cfg, nil) }

// newCache is NewCache, with a host-spill tail when sp is not nil (NewSpillCache).
func (e *Engine) newCache(cfg kvcache.Config, sp *SpillOptions) (*Cache, error) {
	cfg.Pair = cfg.Pair.Unrotated()
	switch {
	case cfg.Layers <= 0 || cfg.KVHeads <= 0 || cfg.MaxCells <= 0:
		return nil, fmt.Errorf("engine: cache of %d layers × %d KV heads × %d cells: all must be positive", cfg.Layers, cfg.KVHeads, cfg.MaxCells)
	case cfg.HeadDimK != cfg.HeadDimV:
		return nil, fmt.Errorf("%w: K head dimension %d ≠ V head dimension %d", ErrUnsupported, cfg.HeadDimK, cfg.HeadDimV)
	case cfg.Window < 0 || cfg.Sinks < 0:
		return nil, fmt.Errorf("engine: window %d and sinks %d must not be negative", cfg.Window, cfg.Sinks)
	case !cfg.Pair.Valid():
		return nil, fmt.Errorf("%w: pair %s", kvq.ErrUnsupported, cfg.Pair)
	}
	if err := CheckPair(cfg.Pair, cfg.HeadDimK); err != nil {
		return nil, err
	}
	if cfg.KGain == 0 {
		cfg.KGain = 1
	}
	if !(cfg.KGain > 0) || math.IsInf(float64(cfg.KGain), 0) {
		return nil, fmt.Errorf("engine: K gain %g must be finite and positive", cfg.KGain)
	}
	c := &Cache{e: e, cfg: cfg, cap: roundCap(cfg.MaxCells)}
	if sp != nil {
		if err := c.planSpill(*sp); err != nil {
			return nil, err
		}
	}
	d, hn := cfg.HeadDimK, cfg.KVHeads
	for l := 0; l < cfg.Layers; l++ {
		ly := &layer{}
		c.layers = append(c.layers, ly)
		var err error
		if ly.k, err = e.ctx.Alloc(poolBytes(cfg.Pair.K, d, hn, c.cap)); err != nil {
			c.Free()
			return nil, fmt.Errorf("engine: K pool of layer %d: %w", l, err)
		}
		if ly.v, err = e.ctx.Alloc(poolBytes(cfg.Pair.V, d, hn, c.cap)); err != nil {
			c.Free()
			return nil, fmt.Errorf("engine: V pool of layer %d: %w", l, err)
		}
		if err := c.initLayer(l, ly); err != nil {
			c.Free()
			return nil, err
		}
	}
	if c.sp != nil {
		if err := c.allocSpill(); err != nil {
			c.Free()
			return nil, err
		}
	}
	return c, nil
}

func (c *Cache) initLayer(l int, ly *layer) error {
	cfg, d, hn := c.cfg, c.cfg.HeadDimK, c.cfg.KVHeads
	alloc := func(dst **cuda.Buffer, bytes int64) error {
		b, err := c.e.ctx.Alloc(bytes)
		if err != nil {
			return fmt.Errorf("engine: layer %d: %w", l, err)
		}
		*dst = b
		return b.Memset(0)
	}
	if err := ly.k.Memset(0); err != nil {
		return err
	}
	if err := ly.v.Memset(0); err != nil {
		return err
	}
	if cfg.Pair.K == kvq.Q2K {
		if err := alloc(&ly.stage, int64(hn)*Tile*int64(d)*4); err != nil {
			return err
		}
		if err := alloc(&ly.scales, int64(hn)*int64(d)*4); err != nil {
			return err
		}
		if err := alloc(&ly.prev, int64(hn)*int64(d)*4); err != nil {
			return err
		}
	}
	diag := func(dst **cuda.Buffer) error {
		sc := make([]float32, 0, hn*d)
		for h := 0; h < hn; h++ {
			sc = append(sc, RotationDiag(d, cfg.Seed, l, h)...)
		}
		if err := alloc(dst, int64(len(sc))*4); err != nil {
			return err
		}
		return (*dst).Write(cuda.Bytes(sc))
	}
	if cfg.Pair.K == kvq.TQ4 {
		if err := diag(&ly.scK); err != nil {
			return err
		}
	}
	if cfg.Pair.V == kvq.TQ4 {
		if err := diag(&ly.scV); err != nil {
			return err
		}
	}
	if slots := cfg.Sinks + cfg.Window; slots > 0 {
		ovCap := roundCap(slots)
		if err := alloc(&ly.ovK, poolBytes(kvq.F16, d, hn, ovCap)); err != nil {
			return err
		}
		if err := alloc(&ly.ovV, poolBytes(kvq.F16, d, hn, ovCap)); err != nil {
			return err
		}
		ly.owner = make([]int32, slots)
		for i := range ly.owner {
			ly.owner[i] = -1
		}
		if err := alloc(&ly.ownerBuf, int64(slots)*4); err != nil {
			return err
		}
		if err := ly.ownerBuf.Write(cuda.Bytes(ly.owner)); err != nil {
			return err
		}
	}
	return nil
}

// Config is the configuration the cache was built with (KGain defaulted to 1).
func (c *Cache) Config() kvcache.Config { return c.cfg }

// Len is the number of committed cells.
func (c *Cache) Len() int { return c.n }

// Cap is the capacity in cells.
func (c *Cache) Cap() int { return c.cfg.MaxCells }

// SetStream makes the cache's kernels run on s (nil: the default stream).
func (c *Cache) SetStream(s *cuda.Stream) { c.stream = s }

// Bytes is the device memory the cache holds: pools, overlay and staging (with a spill tail,
// its device chunks too; HostBytes is the tail's host memory).
func (c *Cache) Bytes() int64 {
	b := c.sp.deviceBytes()
	for _, ly := range c.layers {
		for _, x := range []*cuda.Buffer{ly.k, ly.v, ly.stage, ly.scales, ly.prev, ly.scK, ly.scV, ly.ovK, ly.ovV, ly.ownerBuf} {
			if x != nil {
				b += x.Size()
			}
		}
	}
	return b
}

// Free releases the cache's device memory. It is idempotent.
func (c *Cache) Free() {
	for _, ly := range c.layers {
		for _, x := range []*cuda.Buffer{ly.k, ly.v, ly.stage, ly.scales, ly.prev, ly.scK, ly.scV, ly.ovK, ly.ovV, ly.ownerBuf} {
			if x != nil {
				x.Free()
			}
		}
	}
	c.layers = nil
	c.sp.free()
}

// Write stores n new cells of one layer from host memory: k holds n cells of
// KVHeads×HeadDimK values (cell-major, then head, then dimension), v the same for V.
func (c *Cache) Write(layer int, k, v []float32, n int) error {
	cfg := c.cfg
	if len(k) != n*cfg.KVHeads*cfg.HeadDimK || len(v) != n*cfg.KVHeads*cfg.HeadDimV {
		return fmt.Errorf("engine: %d cells need %d K and %d V values, have %d and %d",
			n, n*cfg.KVHeads*cfg.HeadDimK, n*cfg.KVHeads*cfg.HeadDimV, len(k), len(v))
	}
	if n == 0 {
		return nil
	}
	kb, err := c.e.buffer("write.k", int64(len(k))*4)
	if err != nil {
		return err
	}
	vb, err := c.e.buffer("write.v", int64(len(v))*4)
	if err != nil {
		return err
	}
	if err := kb.Write(cuda.Bytes(k)); err != nil {
		return err
	}
	if err := vb.Write(cuda.Bytes(v)); err != nil {
		return err
	}
	return c.WriteDevice(layer, kb, vb, n)
}

// WriteDevice is Write from device buffers (n cells × KVHeads × d float32 each, from byte 0).
func (c *Cache) WriteDevice(layer int, k, v *cuda.Buffer, n int) error {
	if layer < 0 || layer >= len(c.layers) {
		return fmt.Errorf("engine: layer %d out of range [0, %d)", layer, len(c.layers))
	}
	cfg, ly := c.cfg, c.layers[layer]
	d, hn := cfg.HeadDimK, cfg.KVHeads
	if need := int64(n) * int64(hn) * int64(d) * 4; k.Size() < need || v.Size() < need {
		return fmt.Errorf("engine: %d cells need %d bytes of K and of V, have %d and %d", n, need, k.Size(), v.Size())
	}
	pos := ly.written
	if pos+n > cfg.MaxCells {
		return fmt.Errorf("%w: %d cells + %d new > capacity %d", kvcache.ErrKVFull, pos, n, cfg.MaxCells)
	}
	if n == 0 {
		return nil
	}
	if c.sp != nil {
		if err := c.writeSpill(layer, k, v, pos, n); err != nil {
			return err
		}
	} else {
		if err := c.writePool(ly, cfg.Pair.K, cuda.Ptr(ly.k), c.cap, k, 0, pos, n, true); err != nil {
			return fmt.Errorf("engine: write K: %w", err)
		}
		if err := c.writePool(ly, cfg.Pair.V, cuda.Ptr(ly.v), c.cap, v, 0, pos, n, false); err != nil {
			return fmt.Errorf("engine: write V: %w", err)
		}
	}
	if ly.owner != nil {
		if err := c.writeOverlay(ly, k, v, pos, n); err != nil {
			return fmt.Errorf("engine: write overlay: %w", err)
		}
	}
	ly.written = pos + n
	return nil
}

// WriteKernel is the name of the quantize-on-write kernel of format f.
func WriteKernel(f kvq.Format) string { return "kv_write_" + f.String() }

// writePool quantizes n cells from src (from cell from on) into the pool at pool, of
// capacity capCells, at cells pos … pos+n−1.
func (c *Cache) writePool(ly *layer, f kvq.Format, pool cuda.Arg, capCells int, src *cuda.Buffer, from, pos, n int, isK bool) error {
	cfg := c.cfg
	d, hn := cfg.HeadDimK, cfg.KVHeads
	k, err := c.e.kernel(WriteKernel(f))
	if err != nil {
		return err
	}
	if f == kvq.Q2K {
		// One launch per group touched: the kernel re-encodes the last group from its raw values.
		for done := 0; done < n; {
			p := pos + done
			take := min(Tile-p%Tile, n-done)
			err := k.launch(cuda.D1(hn), cuda.D1(256), 4*d, c.stream,
				pool, cuda.Ptr(ly.stage), cuda.Ptr(ly.scales), cuda.Ptr(ly.prev),
				cuda.PtrAt(src, int64(from+done)*int64(hn)*int64(d)*4),
				cuda.Int(p), cuda.Int(take), cuda.Int(hn), cuda.Int(d), cuda.Int(capCells), cuda.F32(cfg.KGain))
			if err != nil {
				return err
			}
			done += take
		}
		return nil
	}
	tiled := 0
	if isK {
		tiled = 1
	}
	args := []cuda.Arg{pool, cuda.PtrAt(src, int64(from)*int64(hn)*int64(d)*4), cuda.Int(pos), cuda.Int(n), cuda.Int(hn), cuda.Int(d), cuda.Int(capCells), cuda.Int(tiled)}
	if f == kvq.TQ4 {
		sc := ly.scV
		if isK {
			sc = ly.scK
		}
		args = append(args, cuda.Ptr(sc))
	}
	return k.launch(cuda.D2(n, hn), cuda.D1(32), 0, c.stream, args...)
}

// slot is where cell lives in the overlay (kvcache's overlay.slot), or −1.
func (c *Cache) slot(cell int) int {
	if cell < c.cfg.Sinks {
		return cell
	}
	if c.cfg.Window == 0 {
		return -1
	}
	return c.cfg.Sinks + cell%c.cfg.Window
}

// writeOverlay stores exact f16 copies of the cells that have an overlay slot, one launch
// per run of consecutive slots, and records the slots' owners.
func (c *Cache) writeOverlay(ly *layer, k, v *cuda.Buffer, pos, n int) error {
	cfg := c.cfg
	d, hn := cfg.HeadDimK, cfg.KVHeads
	w, err := c.e.kernel(WriteKernel(kvq.F16))
	if err != nil {
		return err
	}
	ovCap := roundCap(cfg.Sinks + cfg.Window)
	rowBytes := int64(hn) * int64(d) * 4
	for i := 0; i < n; {
		s := c.slot(pos + i)
		if s < 0 {
			i++
			continue
		}
		run := 1
		for i+run < n && c.slot(pos+i+run) == s+run {
			run++
		}
		for j := 0; j < run; j++ {
			ly.owner[s+j] = int32(pos + i + j)
		}
		for _, t := range []struct {
			pool, src *cuda.Buffer
			tiled     int
		}{{ly.ovK, k, 1}, {ly.ovV, v, 0}} {
			err := w.launch(cuda.D2(run, hn), cuda.D1(32), 0, c.stream, cuda.Ptr(t.pool), cuda.PtrAt(t.src, int64(i)*rowBytes),
				cuda.Int(s), cuda.Int(run), cuda.Int(hn), cuda.Int(d), cuda.Int(ovCap), cuda.Int(t.tiled))
			if err != nil {
				return err
			}
		}
		i += run
	}
	return ly.ownerBuf.Write(cuda.Bytes(ly.owner))
}

// Commit advances the committed length by n cells; every layer must have written them.
func (c *Cache) Commit(n int) error {
	for l, ly := range c.layers {
		if ly.written != c.n+n {
			return fmt.Errorf("engine: commit of %d cells: layer %d holds %d, want %d", n, l, ly.written, c.n+n)
		}
	}
	c.n += n
	return nil
}

// Rows reads back the stored K (isK) or V of one head of one layer for the cells written, in
// kvq's layout: rows laid end to end (K detiled), or q2k groups as kvq.Q2KHead.Groups.
func (c *Cache) Rows(layer, head int, isK bool) ([]byte, error) {
	if layer < 0 || layer >= len(c.layers) || head < 0 || head >= c.cfg.KVHeads {
		return nil, fmt.Errorf("engine: layer %d head %d out of range", layer, head)
	}
	if c.sp != nil {
		return c.spillRows(layer, head, isK)
	}
	ly := c.layers[layer]
	f, pool := c.cfg.Pair.V, ly.v
	if isK {
		f, pool = c.cfg.Pair.K, ly.k
	}
	d, n := c.cfg.HeadDimK, ly.written
	if f == kvq.Q2K {
		gb := kvq.Q2KGroupBytes(d)
		out := make([]byte, int64((n+Tile-1)/Tile)*gb)
		return out, pool.ReadAt(out, int64(head)*int64(c.cap/Tile)*gb)
	}
	rb := f.RowBytes(d)
	headBytes := int64(c.cap) * int64(rb)
	raw := make([]byte, headBytes)
	if err := pool.ReadAt(raw, int64(head)*headBytes); err != nil {
		return nil, err
	}
	if isK {
		return Detile(raw, 0, n, rb), nil
	}
	return raw[:n*rb], nil
}
