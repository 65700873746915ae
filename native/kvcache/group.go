package kvcache

import (
	"fmt"
	"slices"

	"github.com/kvlab/kvlab/native/kvq"
)

// groupStore is a q2k K pool: groups of 32 cells with per-channel scales (kvq.Q2KHead), of K
// rotated and calibrated (kvq.Q2KRot) unless the pair's K is "q2k-r". Cells are append-only;
// it holds no values.
//
// The calibration (per-channel scales and offsets) comes from the pool's first write, or, while
// its first group is open (fewer than 32 cells), from every cell written so far: each write
// into that group recalibrates from the group's cells (kept in first) and the new ones and
// stores them afresh. A first write of one or two cells (an empty prompt's BOS, a chat's first
// token) would otherwise fix the offsets at that cell and the scales from it alone.
type groupStore struct {
	h     *kvq.Q2KHead
	rot   *kvq.Q2KRot // nil: K stored as it comes
	buf   []float32   // write's rotated rows, a group's at most
	first []float32   // the first group's cells as written, while it is open
	max   int
}

// q2kCalRows is the most cells a recalibration of the first group takes from a write beyond the
// group's own (a whole first write calibrates from all its cells).
const q2kCalRows = 1024

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

// Scores writes the cells' scores q·x̂ (the rotated pool's plus its query's offset).
func (s *groupStore) Scores(pq []float32, lo int, out []float32) {
	s.h.ScoresRange(pq, lo, out)
	if s.rot != nil {
		s.rot.AddOffsets(pq, 1, out)
	}
}

// Row decodes cell i in the value domain.
func (s *groupStore) Row(dst []float32, i int) {
	s.h.Decode(dst, i)
	if s.rot != nil {
		s.rot.ToValue(dst)
	}
}

// ScoresMulti is attn.MultiKeys: every cell read once for all n queries (kvq's q2k kernel
// where it has one), plus the rotated pool's offsets as Scores.
func (s *groupStore) ScoresMulti(pq []float32, n, lo int, out []float32) {
	s.h.ScoresRangeMulti(pq, n, lo, out)
	if s.rot != nil {
		s.rot.AddOffsets(pq, n, out)
	}
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
	if pos >= kvq.GroupCells {
		if n > 0 {
			s.first = nil // a cell past the first group: truncation cannot reach into it now
		}
		s.appendRotated(rows[:n*d], n)
		return
	}
	// The first group is open: calibrate from its cells and this write's, and store them all
	// afresh (Q2KHead keeps only a group's values rotated).
	cal := rows[:n*d]
	if pos > 0 {
		cal = append(s.first[:pos*d:pos*d], rows[:min(n, q2kCalRows)*d]...)
	}
	s.rot.Calibrate(cal, len(cal)/d)
	s.first = append(s.first[:pos*d], rows[:min(n, kvq.GroupCells-pos)*d]...)
	s.h.Reset()
	s.appendRotated(s.first[:pos*d], pos)
	s.appendRotated(rows[:n*d], n)
}

// appendRotated appends the n cells of x (n × d values) rotated, a group's cells or the rest
// of the open group at a time (Append encodes a group at a time anyway), so that the scratch
// stays one group's rows however long the write.
func (s *groupStore) appendRotated(x []float32, n int) {
	d := s.h.Dim()
	for i := 0; i < n; {
		m := min(n-i, kvq.GroupCells-s.h.Len()%kvq.GroupCells)
		s.buf = slices.Grow(s.buf[:0], m*d)[:m*d]
		s.rot.Rows(s.buf, x[i*d:], m)
		s.h.Append(s.buf)
		i += m
	}
}

func (s *groupStore) setLen(int) {}

func (s *groupStore) truncate(n int) error { return s.h.Truncate(n) }

func (s *groupStore) reset() {
	s.h.Reset()
	s.first = s.first[:0]
}

// bytes is the reserved groups for the capacity plus the staging state that keeps appends exact.
func (s *groupStore) bytes() int64 { return groupKBytes(s.max, s.h.Dim(), 1) }

// groupKBytes is what heads heads of the group K format hold for a capacity of cells: the
// whole groups and, per head, the staging state that keeps appends exact.
func groupKBytes(cells, d, heads int) int64 {
	return kvq.Q2K.Bytes(int64(cells), d, heads) + int64(heads)*kvq.Q2KStagingBytes(d)
}
