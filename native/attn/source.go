// Package attn computes attention over a KV cache stored in any kvq format: a pure-Go reference
// that decodes every row and evaluates the formula in float64 (the oracle), and a fast path
// that reads packed rows directly, splits long contexts across threads and combines the parts
// with an exact online softmax.
//
// The formula, for one query head h over cells [lo, hi) of its KV head g:
//
//	out_h = Σ_j p_j · v_j,   p = softmax_j(scale · q_h·k_j)
//
// Query heads map onto KV heads in contiguous groups (grouped-query attention):
// g = h / (nHead / nKVHead).
package attn

import "github.com/kvlab/kvlab/native/kvq"

// Keys is one KV head's stored keys, read by the fast path.
type Keys interface {
	// Len is the number of stored cells.
	Len() int
	// QueryLen is the length of the prepared-query buffer Prepare needs.
	QueryLen() int
	// Prepare maps a raw query (head_dim values) into whatever Scores reads, using dst
	// (QueryLen values) as storage, and returns it.
	Prepare(dst, q []float32) []float32
	// Scores writes out[j] = q·k_{lo+j} (unscaled) for j < len(out), for a prepared query.
	Scores(pq []float32, lo int, out []float32)
}

// Values is one KV head's stored values, read by the fast path.
type Values interface {
	// Len is the number of stored cells.
	Len() int
	// AccLen is the length of the accumulator Accumulate adds into.
	AccLen() int
	// Accumulate adds Σ_j w[j]·v_{lo+j} to acc (AccLen values, in the store's own domain).
	Accumulate(acc []float32, w []float32, lo int)
	// Finish maps an accumulator to the value domain, writing dst (head_dim values).
	Finish(dst, acc []float32)
}

// Rows is the reference reader: it reconstructs single cells in the value domain.
type Rows interface {
	Len() int
	// Row writes cell i's values into dst.
	Row(dst []float32, i int)
}

// RowStore is one KV head's rows in a row format: cell i occupies
// Data[i·RowBytes : (i+1)·RowBytes]. It implements Keys, Values and Rows.
type RowStore struct {
	Codec kvq.Codec
	Data  []byte
	N     int
}

// NewRowStore wraps n packed rows of codec c.
func NewRowStore(c kvq.Codec, data []byte, n int) *RowStore {
	return &RowStore{Codec: c, Data: data, N: n}
}

func (s *RowStore) Len() int      { return s.N }
func (s *RowStore) QueryLen() int { return s.Codec.Dim() }
func (s *RowStore) AccLen() int   { return s.Codec.Dim() }

func (s *RowStore) Prepare(dst, q []float32) []float32 {
	s.Codec.PrepareQuery(dst[:s.Codec.Dim()], q)
	return dst[:s.Codec.Dim()]
}

func (s *RowStore) Scores(pq []float32, lo int, out []float32) {
	rb := s.Codec.RowBytes()
	s.Codec.DotMany(pq, s.Data[lo*rb:(lo+len(out))*rb], out)
}

func (s *RowStore) Accumulate(acc []float32, w []float32, lo int) {
	rb := s.Codec.RowBytes()
	s.Codec.AccumulateMany(acc, w, s.Data[lo*rb:(lo+len(w))*rb])
}

func (s *RowStore) Finish(dst, acc []float32) { s.Codec.FinishAccumulate(dst, acc) }

func (s *RowStore) Row(dst []float32, i int) {
	rb := s.Codec.RowBytes()
	s.Codec.Decode(dst, s.Data[i*rb:(i+1)*rb])
}

// Reference is a RowStore read one row at a time through the codec's reference operations
// (Dot and AccumulateScaled), for checking the codecs' batched fast paths inside attention.
type Reference struct{ *RowStore }

func (s Reference) Scores(pq []float32, lo int, out []float32) {
	rb := s.Codec.RowBytes()
	for j := range out {
		out[j] = s.Codec.Dot(pq, s.Data[(lo+j)*rb:(lo+j+1)*rb])
	}
}

func (s Reference) Accumulate(acc []float32, w []float32, lo int) {
	rb := s.Codec.RowBytes()
	for j, wj := range w {
		s.Codec.AccumulateScaled(acc, wj, s.Data[(lo+j)*rb:(lo+j+1)*rb])
	}
}
