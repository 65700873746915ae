package kvcache

import (
	"fmt"
	"sync"

	"github.com/kvlab/kvlab/native/kvq"
)

// A sliding-window layer (Config.Windows) keeps only its last window cells: each KV head's
// rows lie in a ring of min(window, MaxCells) cells, position p in slot p mod window, so the
// layer's memory is the planner's sliding-window figure (plan/calc's Sliding kind) however long
// the context. Readers take positions, as for any layer; a range of cells that wraps is read
// as its two runs of slots (the values' integer accumulation in position-aligned tiles, so a
// ring reads what a full cache of the same cells reads, bit for bit). Attention over the layer must not reach further back than the
// window (the model's sliding-window mask): older positions read newer cells. A ring layer
// has no FP16 overlay or mixed f16 window (its cells are few and all recent); a group K format
// (q2k), whose groups are quantized in place, keeps the full context on the layer.

// ringStore is one KV head's K or V of a sliding-window layer in a row format.
type ringStore struct {
	*rowStore
	w int // slots
	n int // positions written
}

func newRingStore(s *rowStore, w int) *ringStore { return &ringStore{rowStore: s, w: w} }

// Len is the number of positions written (the ring holds the last min(Len, w)).
func (s *ringStore) Len() int { return s.n }

// runs calls f for each run of consecutive slots of the m cells from position lo: the run's
// first slot, its offset among the m cells and its length.
func (s *ringStore) runs(lo, m int, f func(slot, off, n int)) {
	for off := 0; off < m; {
		slot := (lo + off) % s.w
		n := min(m-off, s.w-slot)
		f(slot, off, n)
		off += n
	}
}

func (s *ringStore) Scores(pq []float32, lo int, out []float32) {
	s.runs(lo, len(out), func(slot, off, n int) { s.RowStore.Scores(pq, slot, out[off:off+n]) })
}

func (s *ringStore) ScoresMulti(pq []float32, n, lo int, out []float32) {
	s.runs(lo, len(out)/n, func(slot, off, m int) { s.RowStore.ScoresMulti(pq, n, slot, out[off*n:(off+m)*n]) })
}

func (s *ringStore) Accumulate(acc []float32, w []float32, lo int) {
	s.runs(lo, len(w), func(slot, off, n int) { s.RowStore.Accumulate(acc, w[off:off+n], slot) })
}

// AccumulateMulti adds the weighted rows of positions lo … lo+m−1. Where the codec's kernels
// round the weights per tile of rows (kvq.AccumulateStep > 0), the tiles follow the positions,
// not the slots: every call covers the cells of one kvq.AccumulateTile-aligned run of positions,
// as a full cache's store splits them (attn.RowStore.AccumulateMulti), a run whose slots wrap
// staged contiguous first. So the layer reads exactly what a full cache of the same cells reads.
func (s *ringStore) AccumulateMulti(acc []float32, n int, w []float32, lo int) {
	mq, ok := s.Codec.(kvq.MultiQuery)
	if !ok || kvq.AccumulateStep(s.Codec) == 0 {
		s.runs(lo, len(w)/n, func(slot, off, m int) { s.RowStore.AccumulateMulti(acc, n, w[off*n:(off+m)*n], slot) })
		return
	}
	const tile = kvq.AccumulateTile
	rb, d := s.Codec.RowBytes(), s.Codec.Dim()
	m := len(w) / n
	for off := 0; off < m; {
		p := lo + off
		k := min(m-off, tile-p%tile)
		slot := p % s.w
		if slot+k <= s.w {
			// A call from a tile's first position runs on over the following whole tiles
			// while their slots stay contiguous (the kernels tile every 64 rows from the
			// call's first), so an unwrapped window is one or two calls, not one a tile.
			for p%tile == 0 && off+k < m {
				next := min(m-off-k, tile)
				if slot+k+next > s.w {
					break
				}
				k += next
			}
			wk := w[off*n : (off+k)*n]
			mq.AccumulateManyMulti(acc[:n*d], n, wk, s.Data[slot*rb:(slot+k)*rb])
		} else {
			wk := w[off*n : (off+k)*n]
			bp := ringStages.Get().(*[tile * ringStageRow]byte)
			stage := bp[:]
			if k*rb > len(stage) {
				stage = make([]byte, k*rb)
			}
			stage = stage[:k*rb]
			first := (s.w - slot) * rb
			copy(stage, s.Data[slot*rb:s.w*rb])
			copy(stage[first:], s.Data[:k*rb-first])
			mq.AccumulateManyMulti(acc[:n*d], n, wk, stage)
			ringStages.Put(bp)
		}
		off += k
	}
}

// ringStageRow is the row size (bytes) up to which a wrapping tile is staged in a pooled
// buffer (larger rows allocate one).
const ringStageRow = 1024

var ringStages = sync.Pool{New: func() any { return new([kvq.AccumulateTile * ringStageRow]byte) }}

func (s *ringStore) Row(dst []float32, i int) { s.RowStore.Row(dst, i%s.w) }

// write encodes the cells at positions pos … pos+n−1 into their slots (of a write longer than
// the ring, only the last w cells stay). A first write into the empty ring calibrates the
// rotated formats on all its cells, as a plain store does.
func (s *ringStore) write(pos int, rows []float32, n int) {
	rb, d := s.Codec.RowBytes(), s.Codec.Dim()
	s.firstWrite(pos, rows, n)
	for i := max(0, n-s.w); i < n; i++ {
		slot := (pos + i) % s.w
		s.Codec.Encode(s.Data[slot*rb:(slot+1)*rb], rows[i*d:(i+1)*d])
	}
}

func (s *ringStore) setLen(n int) { s.n, s.N = n, min(n, s.w) }

// truncate forgets the positions ≥ n. It fails when the ring has wrapped and cells would be
// needed that the forgotten ones overwrote.
func (s *ringStore) truncate(n int) error {
	if n >= s.n {
		return nil
	}
	if err := ringTruncatable(s.n, n, s.w); err != nil {
		return err
	}
	s.setLen(n)
	return nil
}

func (s *ringStore) reset() { s.setLen(0) }

// ringTruncatable says whether a ring of w slots holding written positions can go back to n:
// the next query, at position n, reads positions n−w+1 … n−1, and the ring still holds those
// at or after written − w.
func ringTruncatable(written, n, w int) error {
	if n >= written || n == 0 || max(0, n-w+1) >= written-w {
		return nil
	}
	return fmt.Errorf("kvcache: %w: a sliding-window layer of %d cells holding %d positions cannot go back to %d (its ring overwrote the cells needed)",
		kvq.ErrUnsupported, w, written, n)
}

// layerWindow is the ring of layer l's row stores: its window capped at MaxCells, 0 for a
// layer that keeps the whole context.
func (cfg Config) layerWindow(l int) int {
	if l >= len(cfg.Windows) || cfg.Windows[l] <= 0 {
		return 0
	}
	return min(cfg.Windows[l], cfg.MaxCells)
}

// Sliding reports whether cfg has sliding-window layers (a positive Windows entry: a layer
// that keeps only its last cells, in a ring); an entry of 0 keeps the whole context.
func (cfg Config) Sliding() bool {
	for _, w := range cfg.Windows {
		if w > 0 {
			return true
		}
	}
	return false
}

// checkWindows checks Config.Windows.
func checkWindows(cfg Config) error {
	if len(cfg.Windows) != 0 && len(cfg.Windows) != cfg.Layers {
		return fmt.Errorf("kvcache: %d sliding windows for %d layers: give one per layer or none", len(cfg.Windows), cfg.Layers)
	}
	for l, w := range cfg.Windows {
		if w < 0 {
			return fmt.Errorf("kvcache: layer %d: sliding window %d must not be negative", l, w)
		}
	}
	return nil
}

// newRingStores makes one head's K and V stores of a sliding-window layer of ring slots.
func newRingStores(cfg Config, ring, l, h int) (k, v store, err error) {
	lp := cfg.LayerPair(l)
	if lp.K.Grouped() {
		k, err = newStore(lp.K, cfg.HeadDimK, cfg, cfg.MaxCells, l, h, true)
	} else {
		k, err = newStore(lp.K, cfg.HeadDimK, cfg, ring, l, h, true)
		if err == nil {
			k = newRingStore(k.(*rowStore), ring)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("K: %w", err)
	}
	if v, err = newStore(lp.V, cfg.HeadDimV, cfg, ring, l, h, false); err != nil {
		return nil, nil, err
	}
	return k, newRingStore(v.(*rowStore), ring), nil
}
