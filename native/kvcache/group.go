package kvcache

import (
	"fmt"

	"github.com/kvlab/kvlab/native/kvq"
)

// groupStore is a q2k K pool: groups of 32 cells with per-channel scales (kvq.Q2KHead). Cells
// are append-only; it holds no values.
type groupStore struct {
	h   *kvq.Q2KHead
	max int
}

func newGroupStore(f kvq.Format, d int, cfg Config) (store, error) {
	if f != kvq.Q2K {
		return nil, fmt.Errorf("%w: %s has no group store", kvq.ErrUnsupported, f)
	}
	h, err := kvq.NewQ2KHead(d, cfg.KGain)
	if err != nil {
		return nil, err
	}
	h.Grow(cfg.MaxCells)
	return &groupStore{h: h, max: cfg.MaxCells}, nil
}

func (s *groupStore) Len() int                           { return s.h.Len() }
func (s *groupStore) QueryLen() int                      { return s.h.Dim() }
func (s *groupStore) Prepare(dst, q []float32) []float32 { copy(dst, q); return dst[:s.h.Dim()] }
func (s *groupStore) Scores(pq []float32, lo int, out []float32) {
	s.h.ScoresRange(pq, lo, out)
}
func (s *groupStore) Row(dst []float32, i int) { s.h.Decode(dst, i) }

// ScoresMulti is attn.MultiKeys: every cell read once for all n queries (kvq's q2k kernel
// where it has one).
func (s *groupStore) ScoresMulti(pq []float32, n, lo int, out []float32) {
	s.h.ScoresRangeMulti(pq, n, lo, out)
}

// The value readers are never used: New rejects a group format for V.
func (s *groupStore) AccLen() int                          { return s.h.Dim() }
func (s *groupStore) Accumulate([]float32, []float32, int) { panic("kvcache: q2k stores K only") }
func (s *groupStore) Finish([]float32, []float32)          { panic("kvcache: q2k stores K only") }

func (s *groupStore) write(pos int, rows []float32, n int) {
	if pos != s.h.Len() {
		panic(fmt.Sprintf("kvcache: q2k append at cell %d, pool holds %d", pos, s.h.Len()))
	}
	s.h.Append(rows[:n*s.h.Dim()])
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
