// Package kvcache stores a model's keys and values per layer and KV head in any kvq format
// pair, quantized once on write, with the FP16 window + attention-sinks overlay of seed 003.
//
// Cells are written layer by layer: during one forward pass every layer writes the same n new
// cells (Write), attention reads them back (Keys, Values), and Commit then advances the
// committed length. Storage is reserved for MaxCells cells up front, so Bytes is the exact
// memory the cache holds and a context past MaxCells fails with ErrKVFull instead of growing.
package kvcache

import (
	"errors"
	"fmt"

	"github.com/kvlab/kvlab/internal/hugemem"
	"github.com/kvlab/kvlab/internal/limits"
	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// ErrKVFull is returned when a write would go past the cache's capacity.
var ErrKVFull = errors.New("kvcache: KV cache is full")

// Config describes a cache.
type Config struct {
	Layers   int
	KVHeads  int
	HeadDimK int
	HeadDimV int
	Pair     kvq.Pair
	MaxCells int
	// Window and Sinks size the FP16 overlay: the most recent Window cells and the first Sinks
	// cells are also kept as exact f16 copies and read from there at decode. Zero disables it.
	Window, Sinks int
	// Recent, when positive, makes the cache position-axis mixed (mixed.go) instead: the most
	// recent Recent cells and the first Sinks cells are held only in f16, and the rest, the
	// tail, only in Pair, quantized once in batches as cells leave the window. It excludes
	// Window.
	Recent int
	// KGain is q2k's K reconstruction gain B (stored scale = B × the rule's scale); 0 means 1.
	KGain float32
	// Seed picks the rotations of tq4, the turbo tiers and the rotated formats (deterministic per
	// seed, layer and head).
	Seed uint64
	// Windows, when set, has one entry per layer: a positive entry makes that layer a
	// sliding-window layer that holds only its last Windows[l] cells, in a ring (ring.go); 0
	// keeps the whole context. Window, Sinks and Recent apply to the other layers only.
	Windows []int
	// LayerPairs, when set, gives layers their own pair (per-layer bit allocation): a valid
	// entry l replaces Pair for layer l, a zero entry keeps Pair. It has at most one entry per
	// layer; neither Pair nor an entry may be a group format (q2k), and a cache with entries
	// takes no snapshots (their header names one pair).
	LayerPairs []kvq.Pair
	// Pages, when set, makes the cache paged (paged.go): the rows of its full-context layers
	// live in pages of this pool, taken as the cache grows, and the cache's other memory is
	// charged to the pool's budget. The configuration must be the pool's (its Pages aside).
	Pages *PagePool
}

// LayerPair is the pair layer l stores: its LayerPairs entry when it has one, else Pair.
func (cfg Config) LayerPair(l int) kvq.Pair {
	if l >= 0 && l < len(cfg.LayerPairs) && cfg.LayerPairs[l] != (kvq.Pair{}) {
		return cfg.LayerPairs[l]
	}
	return cfg.Pair
}

// layered reports whether some layer stores a pair of its own.
func (cfg Config) layered() bool {
	for _, p := range cfg.LayerPairs {
		if p != (kvq.Pair{}) && p != cfg.Pair {
			return true
		}
	}
	return false
}

// checkLayerPairs validates LayerPairs against the layer count and the pair.
func checkLayerPairs(cfg Config) error {
	if len(cfg.LayerPairs) > cfg.Layers {
		last := len(cfg.LayerPairs) - 1
		for last > 0 && cfg.LayerPairs[last] == (kvq.Pair{}) {
			last--
		}
		if last >= cfg.Layers {
			return fmt.Errorf("kvcache: a pair is given for layer %d of a %d-layer model (layers count from 0)", last, cfg.Layers)
		}
	}
	for l, p := range cfg.LayerPairs {
		switch {
		case p == (kvq.Pair{}):
		case !p.Valid():
			return fmt.Errorf("kvcache: layer %d: %w: pair %s", l, kvq.ErrUnsupported, p)
		case p.K.Grouped() || (cfg.Pair.K.Grouped() && p != cfg.Pair):
			return fmt.Errorf("kvcache: layer %d: %w: %s keeps per-group state shared by the whole cache; it cannot be one layer's format", l, kvq.ErrUnsupported, kvq.Q2K)
		}
	}
	return nil
}

// BytesPerToken is the exact average bytes of K and V of one cell over every layer, each
// layer in its own pair (LayerPair).
func (cfg Config) BytesPerToken() float64 {
	var b float64
	for l := 0; l < cfg.Layers; l++ {
		b += cfg.LayerPair(l).BytesPerToken(cfg.HeadDimK, cfg.HeadDimV, cfg.KVHeads)
	}
	return b
}

// Cache is the KV cache of one sequence. It is not safe for concurrent writes; reads of a
// layer (attention over Keys and Values) may run concurrently once its Write returned.
type Cache struct {
	cfg    Config
	layers []*layer
	n      int        // committed cells
	pt     *pageTable // nil unless paged

	rowsK, rowsV []float32 // Write's per-head staging, reused
}

type layer struct {
	k, v    []store
	written int
	ov      *overlay // nil without a window or sinks
	mx      *mixed   // nil unless Recent > 0 (then ov is nil)

	// The readers Keys and Values hand out, built once: the stores themselves for prefill and
	// overlay wrappers (which read written live) for decode.
	keysPre, keysDec []attn.Keys
	valsPre, valsDec []attn.Values
}

// store is one KV head's K or V: the attention readers plus writing.
type store interface {
	attn.Keys
	attn.Values
	attn.Rows
	// write stores rows (n × dim values) at cells pos … pos+n−1.
	write(pos int, rows []float32, n int)
	// truncate forgets cells ≥ n.
	truncate(n int) error
	// reset forgets every cell.
	reset()
	// setLen makes cells [0, n) readable.
	setLen(n int)
	// bytes is the exact storage held.
	bytes() int64
}

// checked is cfg checked, with its defaults filled in (KGain 1).
func (cfg Config) checked() (Config, error) {
	switch {
	case cfg.Layers <= 0 || cfg.KVHeads <= 0:
		return cfg, fmt.Errorf("kvcache: %d layers × %d KV heads: both must be positive", cfg.Layers, cfg.KVHeads)
	case cfg.HeadDimK < kvq.MinDim || cfg.HeadDimV < kvq.MinDim:
		return cfg, fmt.Errorf("kvcache: head dims K %d, V %d: both must be at least %d", cfg.HeadDimK, cfg.HeadDimV, kvq.MinDim)
	case cfg.MaxCells <= 0 || cfg.MaxCells > limits.MaxCtx:
		return cfg, fmt.Errorf("kvcache: capacity %d cells: want 1 to %d", cfg.MaxCells, limits.MaxCtx)
	case !cfg.Pair.Valid():
		return cfg, fmt.Errorf("kvcache: %w: pair %s", kvq.ErrUnsupported, cfg.Pair)
	case cfg.Window < 0 || cfg.Sinks < 0:
		return cfg, fmt.Errorf("kvcache: window %d and sinks %d must not be negative", cfg.Window, cfg.Sinks)
	}
	if err := checkMixed(cfg); err != nil {
		return cfg, err
	}
	if err := checkWindows(cfg); err != nil {
		return cfg, err
	}
	if err := checkLayerPairs(cfg); err != nil {
		return cfg, err
	}
	if cfg.KGain == 0 {
		cfg.KGain = 1
	}
	if cfg.KGain < 0 {
		return cfg, fmt.Errorf("kvcache: K gain %g must be positive", cfg.KGain)
	}
	return cfg, nil
}

// New reserves a cache.
func New(cfg Config) (*Cache, error) {
	cfg, err := cfg.checked()
	if err != nil {
		return nil, err
	}
	c := &Cache{cfg: cfg}
	if cfg.Pages != nil {
		if err := cfg.Pages.compatible(cfg); err != nil {
			return nil, err
		}
		if c.pt, err = newPageTable(cfg.Pages); err != nil {
			return nil, err
		}
	}
	// No cell lies past MaxCells, so a longer window or more sinks would only hold memory.
	ocfg := cfg
	ocfg.Window, ocfg.Sinks = min(cfg.Window, cfg.MaxCells), min(cfg.Sinks, cfg.MaxCells)
	cells := cfg.MaxCells
	if cfg.Recent > 0 {
		cells, _, _ = mixedGeometry(cfg)
	}
	if err := c.build(ocfg, cells); err != nil {
		c.Release()
		return nil, err
	}
	return c, nil
}

// build makes the layers' stores: cells cells each (the tail's of a mixed cache), or pages.
func (c *Cache) build(ocfg Config, cells int) error {
	cfg := c.cfg
	for l := 0; l < cfg.Layers; l++ {
		ly := &layer{}
		ring := cfg.layerWindow(l)
		for h := 0; h < cfg.KVHeads; h++ {
			var ks, vs store
			var err error
			switch {
			case ring > 0:
				ks, vs, err = newRingStores(cfg, ring, l, h)
			case c.pt != nil:
				ks, vs, err = c.newPagedStores(l, h)
			default:
				lp := cfg.LayerPair(l)
				ks, err = newStore(lp.K, cfg.HeadDimK, cfg, cells, l, h, true)
				if err != nil {
					return fmt.Errorf("kvcache: K: %w", err)
				}
				vs, err = newStore(lp.V, cfg.HeadDimV, cfg, cells, l, h, false)
			}
			if err != nil {
				return fmt.Errorf("kvcache: V: %w", err)
			}
			ly.k, ly.v = append(ly.k, ks), append(ly.v, vs)
		}
		switch {
		case ring > 0:
		case cfg.Recent > 0:
			var err error
			if ly.mx, err = newMixed(cfg); err != nil {
				return fmt.Errorf("kvcache: f16 window: %w", err)
			}
		case cfg.Window > 0 || cfg.Sinks > 0:
			var err error
			if ly.ov, err = newOverlay(ocfg); err != nil {
				return fmt.Errorf("kvcache: f16 overlay: %w", err)
			}
		}
		for h := range ly.k {
			switch {
			case ly.mx != nil:
				ly.keysPre, ly.valsPre = append(ly.keysPre, newMixedKeys(ly, h)), append(ly.valsPre, newMixedValues(ly, h))
			default:
				ly.keysPre, ly.valsPre = append(ly.keysPre, ly.k[h]), append(ly.valsPre, ly.v[h])
			}
			if ly.ov != nil {
				ly.keysDec = append(ly.keysDec, &overlayKeys{base: ly.k[h], ov: ly.ov, head: h, ly: ly})
				ly.valsDec = append(ly.valsDec, &overlayValues{base: ly.v[h], ov: ly.ov, head: h, ly: ly})
			}
		}
		if ly.ov == nil {
			ly.keysDec, ly.valsDec = ly.keysPre, ly.valsPre
		}
		c.layers = append(c.layers, ly)
	}
	return nil
}

// newPagedStores makes one head's K and V stores of a paged layer l: rows in the pool's pages
// (a group K format keeps its own pool at the full context).
func (c *Cache) newPagedStores(l, h int) (k, v store, err error) {
	cfg, p, lp := c.cfg, c.pt.pool, c.cfg.LayerPair(l)
	rbK, rbV := p.rbK[l], p.rbV[l]
	lo := p.layerOff[l] + h*PageCells*(rbK+rbV)
	if p.kPaged {
		rs, err := newStore(lp.K, cfg.HeadDimK, cfg, 0, l, h, true)
		if err != nil {
			return nil, nil, fmt.Errorf("K: %w", err)
		}
		k = &pagedStore{rowStore: rs.(*rowStore), pt: c.pt, sp: span{lo, PageCells * rbK}}
	} else if k, err = newStore(lp.K, cfg.HeadDimK, cfg, cfg.MaxCells, l, h, true); err != nil {
		return nil, nil, fmt.Errorf("K: %w", err)
	}
	rs, err := newStore(lp.V, cfg.HeadDimV, cfg, 0, l, h, false)
	if err != nil {
		return nil, nil, err
	}
	return k, &pagedStore{rowStore: rs.(*rowStore), pt: c.pt, sp: span{lo + PageCells*rbK, PageCells * rbV}}, nil
}

// newStore makes one head's K or V store of cells cells.
func newStore(f kvq.Format, d int, cfg Config, cells, l, h int, isK bool) (store, error) {
	if f.Grouped() {
		if !isK {
			return nil, fmt.Errorf("%w: %s stores K only", kvq.ErrUnsupported, f)
		}
		return newGroupStore(f, d, cfg, l, h)
	}
	rot := cfg.LayerPair(l).VRotated()
	if isK {
		rot = cfg.LayerPair(l).KRotated()
	}
	c, err := kvq.NewCodec(f, d, kvq.CodecOptions{Seed: cfg.Seed, Layer: l, Head: h, Rotate: rot})
	if err != nil {
		return nil, err
	}
	s := &rowStore{RowStore: attn.NewRowStore(c, hugemem.Bytes(cells*c.RowBytes()), 0)}
	if cal, ok := c.(kvq.Calibrator); ok && isK {
		s.cal = cal
	}
	if ch, ok := c.(kvq.RotationChooser); ok && !isK {
		s.choose = ch
	}
	return s, nil
}

// Config returns the configuration the cache was built with (KGain defaulted to 1).
func (c *Cache) Config() Config { return c.cfg }

// Pair is the cache's format pair.
func (c *Cache) Pair() kvq.Pair { return c.cfg.Pair }

// Len is the number of committed cells.
func (c *Cache) Len() int { return c.n }

// Cap is the capacity in cells.
func (c *Cache) Cap() int { return c.cfg.MaxCells }

// Write stores n new cells of one layer at positions Len() … Len()+n−1. k holds n cells of
// KVHeads×HeadDimK values (cell-major, then head, then dimension) and v the same with
// HeadDimV. A layer may be written again before Commit only by first truncating.
func (c *Cache) Write(layer int, k, v []float32, n int) error {
	if layer < 0 || layer >= len(c.layers) {
		return fmt.Errorf("kvcache: layer %d out of range [0, %d)", layer, len(c.layers))
	}
	cfg := c.cfg
	if len(k) != n*cfg.KVHeads*cfg.HeadDimK || len(v) != n*cfg.KVHeads*cfg.HeadDimV {
		return fmt.Errorf("kvcache: %d cells need %d K and %d V values, have %d and %d",
			n, n*cfg.KVHeads*cfg.HeadDimK, n*cfg.KVHeads*cfg.HeadDimV, len(k), len(v))
	}
	ly := c.layers[layer]
	pos := ly.written
	if pos+n > cfg.MaxCells {
		return fmt.Errorf("%w: %d cells + %d new > capacity %d", ErrKVFull, pos, n, cfg.MaxCells)
	}
	dk, dv, hn := cfg.HeadDimK, cfg.HeadDimV, cfg.KVHeads
	if cap(c.rowsK) < n*dk || cap(c.rowsV) < n*dv {
		c.rowsK, c.rowsV = make([]float32, n*dk), make([]float32, n*dv)
	}
	if ly.mx != nil {
		ly.mx.write(ly, pos, k, v, n)
		ly.written = pos + n
		return nil
	}
	if c.pt != nil {
		if err := c.pt.ensure(pos, pos+n); err != nil {
			return err
		}
	}
	rowsK, rowsV := c.rowsK[:n*dk], c.rowsV[:n*dv]
	for h := 0; h < hn; h++ {
		for i := 0; i < n; i++ {
			copy(rowsK[i*dk:(i+1)*dk], k[(i*hn+h)*dk:(i*hn+h+1)*dk])
			copy(rowsV[i*dv:(i+1)*dv], v[(i*hn+h)*dv:(i*hn+h+1)*dv])
		}
		ly.k[h].write(pos, rowsK, n)
		ly.v[h].write(pos, rowsV, n)
	}
	if ly.ov != nil {
		ly.ov.write(pos, k, v, n)
	}
	ly.written = pos + n
	for h := 0; h < hn; h++ {
		ly.k[h].setLen(ly.written)
		ly.v[h].setLen(ly.written)
	}
	return nil
}

// Commit advances the committed length by n cells; every layer must have written them.
func (c *Cache) Commit(n int) error {
	for l, ly := range c.layers {
		if ly.written != c.n+n {
			return fmt.Errorf("kvcache: commit of %d cells: layer %d holds %d, want %d", n, l, ly.written, c.n+n)
		}
	}
	c.n += n
	return nil
}

// Keys returns one reader per KV head over every cell written to the layer. With decode set
// and an overlay configured, the sink and window cells read their exact f16 copies; without
// it every cell reads the quantized store (prefill, as seed 003's engine does). A mixed cache
// (Recent) reads its f16 cells in both cases: they are nowhere else. The readers
// are owned by the cache: valid until the next Write, Truncate or Reset, and not to be
// modified.
func (c *Cache) Keys(layer int, decode bool) []attn.Keys {
	if decode {
		return c.layers[layer].keysDec
	}
	return c.layers[layer].keysPre
}

// Values is Keys for V.
func (c *Cache) Values(layer int, decode bool) []attn.Values {
	if decode {
		return c.layers[layer].valsDec
	}
	return c.layers[layer].valsPre
}

// KCodec returns the codec of layer's K store of KV head h, nil where that store is not one
// codec's rows (a group format such as q2k, or a layer with a Recent mixed tier). It is for
// checks that compute what the codec's kernels compute (native/lab's device gate rounds its
// reference's queries as the codec's scores round them, kvq.ScoresGrid).
func (c *Cache) KCodec(layer, h int) kvq.Codec {
	ly := c.layers[layer]
	if ly.mx != nil {
		return nil
	}
	switch s := ly.k[h].(type) {
	case *rowStore:
		return s.Codec
	case *pagedStore:
		return s.Codec
	}
	return nil
}

// Q2KPool returns layer's q2k K pool of KV head h and its rotation (nil where the K is stored as
// it comes, "q2k-r"); a nil pool where that store is not q2k. Like KCodec, for checks that
// compute what the pool's kernels compute (native/lab's device gate).
func (c *Cache) Q2KPool(layer, h int) (*kvq.Q2KHead, *kvq.Q2KRot) {
	if s, ok := c.layers[layer].k[h].(*groupStore); ok {
		return s.h, s.rot
	}
	return nil, nil
}

// Rows returns the reference readers (one per KV head) for K and V of a layer: every cell
// reconstructed in the value domain, overlay cells exact when decode is set.
func (c *Cache) Rows(layer int, decode bool) (k, v []attn.Rows) {
	ly := c.layers[layer]
	for h := range ly.k {
		var kr, vr attn.Rows = ly.k[h], ly.v[h]
		if ly.mx != nil {
			kr, vr = mixedRows{ly: ly, head: h, isK: true}, mixedRows{ly: ly, head: h}
		}
		if decode && ly.ov != nil {
			kr = overlayRows{base: kr, ov: ly.ov, head: h, ly: ly, isK: true}
			vr = overlayRows{base: vr, ov: ly.ov, head: h, ly: ly}
		}
		k, v = append(k, kr), append(v, vr)
	}
	return k, v
}

// Truncate forgets every cell at position ≥ n (committed or not), for reusing a prefix. The
// quantized cells below n are untouched. Overlay copies of cells below n that a forgotten cell
// had overwritten in the window ring are lost: those cells read the quantized store until the
// window moves past them (the sinks are never overwritten).
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.cfg.MaxCells {
		return fmt.Errorf("kvcache: truncate to %d cells: out of range [0, %d]", n, c.cfg.MaxCells)
	}
	if c.cfg.Pair.K.Grouped() {
		// A group pool can only drop cells of its last group (the only one whose raw values it
		// keeps): check every layer before changing any.
		for _, ly := range c.layers {
			if n < ly.written && ly.written > 0 && n < (ly.written-1)/kvq.GroupCells*kvq.GroupCells {
				return fmt.Errorf("kvcache: %w: %s can truncate %d cells back to %d at the earliest, not %d",
					kvq.ErrUnsupported, c.cfg.Pair.K, ly.written, (ly.written-1)/kvq.GroupCells*kvq.GroupCells, n)
			}
		}
	}
	for l, ly := range c.layers {
		if w := c.cfg.layerWindow(l); w > 0 {
			if err := ringTruncatable(ly.written, n, w); err != nil {
				return err
			}
		}
	}
	for _, ly := range c.layers {
		if n >= ly.written {
			continue
		}
		if ly.mx != nil {
			if err := ly.mx.truncate(ly, n); err != nil {
				return err
			}
			ly.written = n
			continue
		}
		for h := range ly.k {
			if err := ly.k[h].truncate(n); err != nil {
				return err
			}
			if err := ly.v[h].truncate(n); err != nil {
				return err
			}
		}
		if ly.ov != nil {
			ly.ov.truncate(n)
		}
		ly.written = n
	}
	c.n = min(c.n, n)
	if c.pt != nil {
		written := 0
		for _, ly := range c.layers {
			written = max(written, ly.written)
		}
		c.pt.truncate(written)
	}
	return nil
}

// Reset empties the cache, keeping its storage. Unlike Truncate(0) it works for every format,
// group formats included.
func (c *Cache) Reset() {
	for _, ly := range c.layers {
		for h := range ly.k {
			ly.k[h].reset()
			ly.v[h].reset()
		}
		if ly.ov != nil {
			ly.ov.truncate(0)
		}
		if ly.mx != nil {
			ly.mx.reset()
		}
		ly.written = 0
	}
	c.n = 0
	if c.pt != nil {
		c.pt.truncate(0)
	}
}

// Bytes is the exact memory the cache holds for K, V, the overlay and any staging buffers.
func (c *Cache) Bytes() int64 {
	var b int64
	for _, ly := range c.layers {
		for h := range ly.k {
			b += ly.k[h].bytes() + ly.v[h].bytes()
		}
		if ly.ov != nil {
			b += ly.ov.bytes()
		}
		if ly.mx != nil {
			b += ly.mx.bytes()
		}
	}
	return b
}

// HugePages is how much of the memory of the cache's own K and V rows lies on transparent huge
// pages now (hugemem.CoverageOf; Linux only): the row stores' and the q2k group pools' whole
// capacity, and a mixed cache's f16 tier; not the f16 overlay, nor a paged cache's pages
// (those are its pool's: PagePool.HugePages). It reads /proc/self/smaps: for reports, not for
// the decode path.
func (c *Cache) HugePages() hugemem.Coverage {
	var bufs [][]byte
	for _, ly := range c.layers {
		for h := range ly.k {
			bufs = append(bufs, storeMem(ly.k[h]), storeMem(ly.v[h]))
		}
		if ly.mx != nil {
			for h := range ly.mx.fK {
				bufs = append(bufs, ly.mx.fK[h].Data, ly.mx.fV[h].Data)
			}
		}
	}
	return hugemem.CoverageOf(bufs...)
}

// storeMem is the memory a store holds its rows in, nil for a paged store (its pool's pages).
func storeMem(s store) []byte {
	switch s := s.(type) {
	case *rowStore:
		return s.Data
	case *ringStore:
		return s.Data
	case *groupStore:
		g := s.h.Groups()
		return g[:cap(g)]
	}
	return nil
}

// rowStore is a row format's store: cell i at Data[i·RowBytes:].
type rowStore struct {
	*attn.RowStore
	// cal, for K stores of rotated formats, fixes the per-channel K scales from the cells of
	// the first write into an empty store.
	cal kvq.Calibrator
	// choose, for V stores of rotated formats, keeps the rotation or the identity, whichever
	// encodes the cells of the first write into an empty store with less error.
	choose kvq.RotationChooser
}

// firstWrite fixes the store's codec state (K calibration, V rotation) from the cells of the
// first write into an empty store; later writes leave it as it is.
func (s *rowStore) firstWrite(pos int, rows []float32, n int) {
	if pos != 0 || n == 0 {
		return
	}
	d := s.Codec.Dim()
	if s.cal != nil {
		s.cal.Calibrate(rows[:n*d], n)
	}
	if s.choose != nil {
		s.choose.ChooseRotation(rows[:n*d], n)
	}
}

func (s *rowStore) write(pos int, rows []float32, n int) {
	rb, d := s.Codec.RowBytes(), s.Codec.Dim()
	s.firstWrite(pos, rows, n)
	kvq.EncodeRows(s.Codec, s.Data[pos*rb:(pos+n)*rb], rows[:n*d], n)
}

func (s *rowStore) setLen(n int)         { s.N = n }
func (s *rowStore) truncate(n int) error { s.N = min(s.N, n); return nil }
func (s *rowStore) reset()               { s.N = 0 }
func (s *rowStore) bytes() int64         { return int64(len(s.Data)) }
