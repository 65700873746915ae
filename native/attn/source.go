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

// MultiKeys is an optional fast path of Keys for grouped-query attention: the n query heads that
// share this KV head scored in one pass, so each stored key is read once for all of them. It
// must agree with n calls of Scores within the bound the store's codec states.
type MultiKeys interface {
	Keys
	// ScoresMulti writes out[j·n+h] = pq_h·k_{lo+j} (unscaled) for h < n and j < len(out)/n,
	// where pq holds n prepared queries of QueryLen values each, query h at pq[h·QueryLen:].
	ScoresMulti(pq []float32, n, lo int, out []float32)
}

// MultiValues is the optional fast path of Values that goes with MultiKeys: n weighted sums
// over the same cells in one pass.
type MultiValues interface {
	Values
	// AccumulateMulti adds Σ_j w[j·n+h]·v_{lo+j} to acc[h·AccLen:(h+1)·AccLen] for h < n, over
	// the len(w)/n cells from lo.
	AccumulateMulti(acc []float32, n int, w []float32, lo int)
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
	// acc is how AccumulateMultiStride reads the codec, fixed by NewRowStore (accAsk in a
	// RowStore built as a literal: asked at each call). A copy of a store keeps it.
	acc accPath
}

// accPath is how a RowStore's multi-query accumulation calls its codec.
type accPath uint8

const (
	accAsk      accPath = iota // not known: accPathOf at each call
	accPerQuery                // no kvq.MultiQuery kernels: AccumulateMany per accumulator
	accOneCall                 // kernels that round no weights (kvq.AccumulateStep 0): one call
	accTiled                   // kernels that round the weights per tile: calls split at a tile's start
)

// accPathOf is c's accPath. Its checks (a type assertion, 2.8 ns, and kvq.AccumulateStep's,
// 5.5 ns, thread CPU on Zen 4) are most of what AccumulateMultiStride added to the kernel's call
// for a mixed cache's f16 window before NewRowStore kept the answer (d 64, two queries, 70
// rows: 228 ns a call, now 223; the kernel called directly 221).
func accPathOf(c kvq.Codec) accPath {
	_, ok := c.(kvq.MultiQuery)
	switch {
	case !ok:
		return accPerQuery
	case kvq.AccumulateStep(c) == 0:
		return accOneCall
	}
	return accTiled
}

// NewRowStore wraps n packed rows of codec c.
func NewRowStore(c kvq.Codec, data []byte, n int) *RowStore {
	return &RowStore{Codec: c, Data: data, N: n, acc: accPathOf(c)}
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

// ScoresMulti is MultiKeys: the codec's kvq.MultiQuery kernels when it has them, else DotMany
// per query.
func (s *RowStore) ScoresMulti(pq []float32, n, lo int, out []float32) {
	rb, d := s.Codec.RowBytes(), s.Codec.Dim()
	m := len(out) / n
	rows := s.Data[lo*rb : (lo+m)*rb]
	if mq, ok := s.Codec.(kvq.MultiQuery); ok {
		mq.DotManyMulti(pq[:n*d], n, rows, out[:m*n])
		return
	}
	var buf [stageRows]float32
	for j0 := 0; j0 < m; j0 += stageRows {
		t := buf[:min(stageRows, m-j0)]
		for h := 0; h < n; h++ {
			s.Codec.DotMany(pq[h*d:(h+1)*d], rows[j0*rb:(j0+len(t))*rb], t)
			for j, x := range t {
				out[(j0+j)*n+h] = x
			}
		}
	}
}

// ScoresMultiStride is ScoresMulti with query h at pq[h·stride:] (stride ≥ QueryLen) instead
// of pq[h·QueryLen:], through kvq.DotManyMultiStride: the same scores, bit for bit, for a
// caller whose prepared queries interleave with others.
func (s *RowStore) ScoresMultiStride(pq []float32, stride, n, lo int, out []float32) {
	if stride == s.Codec.Dim() {
		s.ScoresMulti(pq, n, lo, out)
		return
	}
	rb := s.Codec.RowBytes()
	m := len(out) / n
	kvq.DotManyMultiStride(s.Codec, pq, stride, n, s.Data[lo*rb:(lo+m)*rb], out[:m*n])
}

// AccumulateMulti is MultiValues: the codec's kvq.MultiQuery kernels when it has them, else
// AccumulateMany per accumulator. Where the kernels round the weights per tile of rows
// (kvq.AccumulateStep > 0), the calls start on multiples of kvq.AccumulateTile rows of the
// store, so a row's tile, and so the result, does not depend on where a caller splits the range
// (a page of a paged cache holds whole tiles).
func (s *RowStore) AccumulateMulti(acc []float32, n int, w []float32, lo int) {
	s.AccumulateMultiStride(acc, s.Codec.Dim(), n, w, lo)
}

// AccumulateMultiStride is AccumulateMulti with accumulator h at acc[h·stride:] (stride ≥
// AccLen) instead of acc[h·AccLen:], through kvq.AccumulateManyMultiStride: the same sums, bit
// for bit, for a caller whose accumulators interleave with others.
func (s *RowStore) AccumulateMultiStride(acc []float32, stride, n int, w []float32, lo int) {
	rb, d := s.Codec.RowBytes(), s.Codec.Dim()
	m := len(w) / n
	rows := s.Data[lo*rb : (lo+m)*rb]
	p := s.acc
	if p == accAsk {
		p = accPathOf(s.Codec)
	}
	if p != accPerQuery {
		acc = acc[:(n-1)*stride+d]
		// The kernels tile every 64 rows from a call's first: where they round the weights
		// per tile, one split aligns them all.
		if j := (kvq.AccumulateTile - lo%kvq.AccumulateTile) % kvq.AccumulateTile; p == accTiled && j > 0 && j < m {
			kvq.AccumulateManyMultiStride(s.Codec, acc, stride, n, w[:j*n], rows[:j*rb])
			w, rows, m = w[j*n:], rows[j*rb:], m-j
		}
		kvq.AccumulateManyMultiStride(s.Codec, acc, stride, n, w[:m*n], rows)
		return
	}
	var buf [stageRows]float32
	for j0 := 0; j0 < m; j0 += stageRows {
		t := buf[:min(stageRows, m-j0)]
		for h := 0; h < n; h++ {
			for j := range t {
				t[j] = w[(j0+j)*n+h]
			}
			s.Codec.AccumulateMany(acc[h*stride:h*stride+d], t, rows[j0*rb:(j0+len(t))*rb])
		}
	}
}

// stageRows is how many cells the per-query fallbacks stage at a time, on the stack.
const stageRows = 256

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

// ScoresMulti calls Scores per query, so the reference never takes the codecs' multi-query
// kernels.
func (s Reference) ScoresMulti(pq []float32, n, lo int, out []float32) {
	d, m := s.Codec.Dim(), len(out)/n
	t := make([]float32, m)
	for h := 0; h < n; h++ {
		s.Scores(pq[h*d:(h+1)*d], lo, t)
		for j, x := range t {
			out[j*n+h] = x
		}
	}
}

// AccumulateMulti calls Accumulate per accumulator.
func (s Reference) AccumulateMulti(acc []float32, n int, w []float32, lo int) {
	d, m := s.Codec.Dim(), len(w)/n
	t := make([]float32, m)
	for h := 0; h < n; h++ {
		for j := range t {
			t[j] = w[j*n+h]
		}
		s.Accumulate(acc[h*d:(h+1)*d], t, lo)
	}
}

func (s Reference) Accumulate(acc []float32, w []float32, lo int) {
	rb := s.Codec.RowBytes()
	for j, wj := range w {
		s.Codec.AccumulateScaled(acc, wj, s.Data[(lo+j)*rb:(lo+j+1)*rb])
	}
}
