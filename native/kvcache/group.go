package kvcache

import (
	"fmt"
	"slices"

	"github.com/kvlab/kvlab/native/kvq"
)

// groupStore is a q2k K pool: groups of 32 cells with per-channel scales (kvq.Q2KHead), of K
// rotated and calibrated from the first write (kvq.Q2KRot) unless the pair's K is "q2k-r".
// Cells are append-only; it holds no values.
type groupStore struct {
	h   *kvq.Q2KHead
	rot *kvq.Q2KRot // nil: K stored as it comes
	buf []float32   // write's rotated rows, a group's at most
	max int
}

// newGroupStore makes the K pool of head hd of layer l.
func newGroupStore(f kvq.Format, d int, cfg Config, l, hd int) (store, error) {
	if f != kvq.Q2K {
		return nil, fmt.Errorf("%w: %s has no group store", kvq.ErrUnsupported, f)
	}
	h, err := kvq.NewQ2KHead(d, cfg.KGain)
	if err != nil {
		return nil, err
	}
	h.Grow(cfg.MaxCells)
	s := &groupStore{h: h, max: cfg.MaxCells}
	if cfg.LayerPair(l).KRotated() {
		s.rot = kvq.NewQ2KRot(d, cfg.Seed, l, hd)
	}
	return s, nil
}

func (s *groupStore) Len() int      { return s.h.Len() }
func (s *groupStore) QueryLen() int { return s.h.Dim() }

// Prepare writes the query as the pool scores it: R·(λ⊙q) where rotated.
func (s *groupStore) Prepare(dst, q []float32) []float32 {
	dst = dst[:s.h.Dim()]
	if s.rot != nil {
		s.rot.PrepareQuery(dst, q)
		return dst
	}
	copy(dst, q)
	return dst
}

// Scores writes the cells' scores; where the store is rotated, each less the query's offset q·μ
// (ScoreOffsets), the same for every cell.
func (s *groupStore) Scores(pq []float32, lo int, out []float32) {
	s.h.ScoresRange(pq, lo, out)
}

// ScoreOffsets is offsetKeys: the rotated store's offsets q_h·μ (kvq.Q2KRot.Offsets).
func (s *groupStore) ScoreOffsets(pq []float32, n int, off []float32) bool {
	return s.rot != nil && s.rot.Offsets(pq, n, off)
}

// Row decodes cell i in the value domain.
func (s *groupStore) Row(dst []float32, i int) {
	s.h.Decode(dst, i)
	if s.rot != nil {
		s.rot.ToValue(dst)
	}
}

// ScoresMulti is attn.MultiKeys: every cell read once for all n queries (kvq's q2k kernel
// where it has one), each score less its query's offset as Scores.
func (s *groupStore) ScoresMulti(pq []float32, n, lo int, out []float32) {
	s.h.ScoresRangeMulti(pq, n, lo, out)
}

// offsetKeys is a store whose scores leave out an offset per query (groupStore where rotated:
// q·μ), the same for every cell it holds: softmax over its cells takes no notice, but cells
// scored elsewhere (overlayKeys' exact cells) take it off theirs, so that all of a query's
// scores leave out the same.
type offsetKeys interface {
	// ScoreOffsets writes the offsets of the n prepared queries pq into off and reports
	// whether there are any (false, writing nothing, where all are 0).
	ScoreOffsets(pq []float32, n int, off []float32) bool
}

// The value readers are never used: New rejects a group format for V.
func (s *groupStore) AccLen() int                          { return s.h.Dim() }
func (s *groupStore) Accumulate([]float32, []float32, int) { panic("kvcache: q2k stores K only") }
func (s *groupStore) Finish([]float32, []float32)          { panic("kvcache: q2k stores K only") }

func (s *groupStore) write(pos int, rows []float32, n int) {
	if pos != s.h.Len() {
		panic(fmt.Sprintf("kvcache: q2k append at cell %d, pool holds %d", pos, s.h.Len()))
	}
	d := s.h.Dim()
	if s.rot == nil {
		s.h.Append(rows[:n*d])
		return
	}
	if pos == 0 {
		s.rot.Calibrate(rows[:n*d], n)
	}
	// A group's cells at a time (Append encodes a group at a time anyway), so that the scratch
	// stays one group's rows however long the write.
	for i := 0; i < n; i += kvq.GroupCells {
		m := min(kvq.GroupCells, n-i)
		s.buf = slices.Grow(s.buf[:0], m*d)[:m*d]
		s.rot.Rows(s.buf, rows[i*d:], m)
		s.h.Append(s.buf)
	}
}

func (s *groupStore) setLen(int) {}

func (s *groupStore) truncate(n int) error { return s.h.Truncate(n) }

func (s *groupStore) reset() { s.h.Reset() }

// bytes is the reserved groups for the capacity plus the staging state that keeps appends exact.
func (s *groupStore) bytes() int64 { return groupKBytes(s.max, s.h.Dim(), 1) }

// groupKBytes is what heads heads of the group K format hold for a capacity of cells: the
// whole groups and, per head, the staging state that keeps appends exact.
func groupKBytes(cells, d, heads int) int64 {
	return kvq.Q2K.Bytes(int64(cells), d, heads) + int64(heads)*kvq.Q2KStagingBytes(d)
}
