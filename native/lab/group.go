package lab

import (
	"fmt"

	"github.com/kvlab/kvlab/native/kvq"
)

// newGroupStore builds a store for a group format (q2k K) with gain 1. Its fast path is the
// pool's table-driven ScoresRange, its single-row path decodes each cell and dots in float32.
func newGroupStore(f kvq.Format, d, n int, data []float32) (store, error) {
	if f != kvq.Q2K {
		return store{}, fmt.Errorf("%w: %s has no group store", kvq.ErrUnsupported, f)
	}
	h, err := kvq.NewQ2KHead(d, 1)
	if err != nil {
		return store{}, err
	}
	h.Append(data[:n*d])
	g := q2kKeys{h}
	return store{rows: g, fast: g, ops: q2kOps{g}}, nil
}

type q2kKeys struct{ h *kvq.Q2KHead }

func (g q2kKeys) Len() int                                   { return g.h.Len() }
func (g q2kKeys) QueryLen() int                              { return g.h.Dim() }
func (g q2kKeys) Prepare(dst, q []float32) []float32         { copy(dst, q); return dst[:g.h.Dim()] }
func (g q2kKeys) Scores(pq []float32, lo int, out []float32) { g.h.ScoresRange(pq, lo, out) }
func (g q2kKeys) Row(dst []float32, i int)                   { g.h.Decode(dst, i) }
func (g q2kKeys) AccLen() int                                { return g.h.Dim() }
func (g q2kKeys) Accumulate([]float32, []float32, int)       { panic("lab: q2k stores K only") }
func (g q2kKeys) Finish([]float32, []float32)                { panic("lab: q2k stores K only") }

// q2kOps scores by decoding each cell and dotting in float32.
type q2kOps struct{ q2kKeys }

func (g q2kOps) Scores(pq []float32, lo int, out []float32) {
	row := make([]float32, g.h.Dim())
	for j := range out {
		g.h.Decode(row, lo+j)
		var s float32
		for i, x := range row {
			s += pq[i] * x
		}
		out[j] = s
	}
}
