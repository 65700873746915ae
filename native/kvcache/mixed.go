package kvcache

import (
	"fmt"

	"github.com/kvlab/kvlab/internal/hugemem"
	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// Position-axis mixed KV (Config.Recent > 0): an f16 recent window ⊕ a quantized tail. Unlike
// the overlay (Window), whose f16 copies sit on top of a store that holds every cell, here a
// cell lives in exactly one place:
//
//	cells [0, Sinks)        f16 only (the attention sinks, never quantized)
//	cells [Sinks, q)        the quantized tail: the layer's stores, cell c at row c − Sinks
//	cells [q, written)      f16 only, the window: Recent + kvq.MixedBatch(Recent) slots
//
// The f16 cells of a head share one store: the sinks at rows [0, Sinks), then the window in
// order, cell c at row Sinks + c − q (when a batch leaves, the cells that stay move down to
// row Sinks). So the f16 cells of a read are one run of rows, which the multi-query paths can
// read with one kernel call (the sinks' and the window's outputs or weights gathered around
// it; mixedMerge, off: reading the two parts in place measured faster).
//
// A fresh cell is written in f16 and never encoded in the hot path. When the ring would overflow,
// every cell but the most recent Recent leaves it in one batch: those cells are quantized once
// (from their f16 values, or from the written values for cells of the same write that never
// entered the ring) into the tail. So the most recent Recent cells always read exact f16 and at
// most kvq.MixedBatch(Recent) more wait for their batch; both prefill and decode read the same
// cells (there is no second copy to choose from).
//
// Truncating below q keeps the tail's quantized cells (their f16 values are gone): the window
// refills from the next written cell.

// mixedGeometry is the tail capacity, ring slots and sink cells of a mixed cache.
func mixedGeometry(cfg Config) (tail, ring, sinks int) {
	sinks = min(cfg.Sinks, cfg.MaxCells)
	ring = min(cfg.Recent+kvq.MixedBatch(cfg.Recent), cfg.MaxCells-sinks)
	tail = max(cfg.MaxCells-sinks-cfg.Recent, 0)
	return tail, ring, sinks
}

// mixed is one layer's f16 parts and the tail's boundary.
type mixed struct {
	sinks, recent, ring int
	// fK, fV per head, f16: the sink cells c at row c, the window's cell c at row sinks + c − q
	// (sinks + ring rows).
	fK, fV     []*attn.RowStore
	q          int       // cells [sinks, q) are in the tail
	stK, stV   []float32 // eviction staging, reused
	dk, dv, hn int
}

func newMixed(cfg Config) (*mixed, error) {
	_, ring, sinks := mixedGeometry(cfg)
	m := &mixed{sinks: sinks, recent: cfg.Recent, ring: ring, q: sinks, dk: cfg.HeadDimK, dv: cfg.HeadDimV, hn: cfg.KVHeads}
	ck, err := kvq.NewCodec(kvq.F16, cfg.HeadDimK, kvq.CodecOptions{})
	if err != nil {
		return nil, err
	}
	cv, err := kvq.NewCodec(kvq.F16, cfg.HeadDimV, kvq.CodecOptions{})
	if err != nil {
		return nil, err
	}
	rows := sinks + ring
	for h := 0; h < cfg.KVHeads; h++ {
		m.fK = append(m.fK, attn.NewRowStore(ck, hugemem.Bytes(rows*ck.RowBytes()), rows))
		m.fV = append(m.fV, attn.NewRowStore(cv, hugemem.Bytes(rows*cv.RowBytes()), rows))
	}
	return m, nil
}

func (m *mixed) bytes() int64 {
	var b int64
	for h := range m.fK {
		b += int64(len(m.fK[h].Data) + len(m.fV[h].Data))
	}
	return b
}

// f16Row is cell c's f16 store and row (c must be a sink or in the window).
func (m *mixed) f16Row(c int, isK bool, h int) (*attn.RowStore, int) {
	s := m.fV[h]
	if isK {
		s = m.fK[h]
	}
	if c < m.sinks {
		return s, c
	}
	return s, m.sinks + c - m.q
}

// slide moves the window's cells [q, end) from the rows they hold with the tail ending at
// m.q down to those of a tail ending at q (q ≥ m.q).
func (m *mixed) slide(q, end int) {
	if end <= q || q == m.q {
		return
	}
	for h := 0; h < m.hn; h++ {
		for _, s := range []*attn.RowStore{m.fK[h], m.fV[h]} {
			rb := s.Codec.RowBytes()
			copy(s.Data[m.sinks*rb:], s.Data[(m.sinks+q-m.q)*rb:(m.sinks+end-m.q)*rb])
		}
	}
}

// write stores n cells at pos (k, v cell-major as Cache.Write takes them): sinks and ring
// cells in f16, and the batch leaving the ring quantized into the layer's stores.
func (m *mixed) write(ly *layer, pos int, k, v []float32, n int) {
	end := pos + n
	q := m.q
	if end-q > m.ring {
		q = end - m.recent // every cell but the most recent Recent leaves the ring
	}
	rk, rv := m.hn*m.dk, m.hn*m.dv
	if q > m.q {
		// The batch [m.q, q): from the ring where written before, else from this write.
		cnt := q - m.q
		if cap(m.stK) < cnt*m.dk || cap(m.stV) < cnt*m.dv {
			m.stK, m.stV = make([]float32, cnt*m.dk), make([]float32, cnt*m.dv)
		}
		sk, sv := m.stK[:cnt*m.dk], m.stV[:cnt*m.dv]
		// The batch's cells written before, [m.q, m.q+nr), are the ring's first nr rows (from
		// row sinks on, in order): one conversion each for K and V.
		nr := min(max(pos-m.q, 0), cnt)
		for h := 0; h < m.hn; h++ {
			if nr > 0 {
				fk, fv := m.fK[h], m.fV[h]
				rbK, rbV := fk.Codec.RowBytes(), fv.Codec.RowBytes()
				kvq.F16ToF32s(sk[:nr*m.dk], fk.Data[m.sinks*rbK:(m.sinks+nr)*rbK])
				kvq.F16ToF32s(sv[:nr*m.dv], fv.Data[m.sinks*rbV:(m.sinks+nr)*rbV])
			}
			for i := nr; i < cnt; i++ {
				j := m.q + i - pos
				copy(sk[i*m.dk:(i+1)*m.dk], k[j*rk+h*m.dk:j*rk+(h+1)*m.dk])
				copy(sv[i*m.dv:(i+1)*m.dv], v[j*rv+h*m.dv:j*rv+(h+1)*m.dv])
			}
			ly.k[h].write(m.q-m.sinks, sk, cnt)
			ly.v[h].write(m.q-m.sinks, sv, cnt)
		}
		m.slide(q, pos)
		m.q = q
		for h := 0; h < m.hn; h++ {
			ly.k[h].setLen(q - m.sinks)
			ly.v[h].setLen(q - m.sinks)
		}
	}
	for i := 0; i < n; i++ {
		c := pos + i
		if c >= m.sinks && c < m.q {
			continue // went straight to the tail
		}
		for h := 0; h < m.hn; h++ {
			s, r := m.f16Row(c, true, h)
			encodeF16(s, r, k[i*rk+h*m.dk:i*rk+(h+1)*m.dk])
			s, r = m.f16Row(c, false, h)
			encodeF16(s, r, v[i*rv+h*m.dv:i*rv+(h+1)*m.dv])
		}
	}
}

func encodeF16(s *attn.RowStore, r int, x []float32) {
	rb := s.Codec.RowBytes()
	s.Codec.Encode(s.Data[r*rb:(r+1)*rb], x)
}

// truncate forgets cells ≥ n of the layer's tail and ring.
func (m *mixed) truncate(ly *layer, n int) error {
	if n >= m.q {
		return nil
	}
	q := max(n, m.sinks)
	for h := range ly.k {
		if err := ly.k[h].truncate(q - m.sinks); err != nil {
			return err
		}
		if err := ly.v[h].truncate(q - m.sinks); err != nil {
			return err
		}
	}
	m.q = q
	return nil
}

func (m *mixed) reset() { m.q = m.sinks }

// parts splits cells [lo, hi) into the runs each store reads, in order: the sinks' [lo, s)
// (f16 rows lo …), the tail's [s, t) (its rows from s − sinks) and the window's [t, hi) (f16
// rows from sinks + t − q); any of them may be empty.
func (m *mixed) parts(lo, hi int) (s, t int) {
	s = max(lo, min(hi, m.sinks))
	t = max(s, min(hi, m.q))
	return s, t
}

// mixedKeys reads one head's K of a mixed layer. Its prepared query is the tail store's
// prepared query (bql values) followed by the raw query, which the f16 rows dot against.
type mixedKeys struct {
	ly *layer
	// tail is the layer's store of the head (a contiguous rowStore: a mixed cache is never
	// paged and takes no grouped format), f16 its f16 rows (mixed.fK), bql tail.QueryLen()
	// and ql the prepared query's length, bql + the head's dimension (QueryLen, which Decode
	// asks for several times a call).
	tail    *rowStore
	f16     *attn.RowStore
	bql, ql int
}

func newMixedKeys(ly *layer, h int) *mixedKeys {
	t := ly.k[h].(*rowStore)
	return &mixedKeys{ly: ly, tail: t, f16: ly.mx.fK[h], bql: t.QueryLen(), ql: t.QueryLen() + ly.mx.dk}
}

func (k *mixedKeys) Len() int      { return k.ly.written }
func (k *mixedKeys) QueryLen() int { return k.ql }

func (k *mixedKeys) Prepare(dst, q []float32) []float32 {
	ql := k.ql
	k.tail.Prepare(dst[:k.bql], q)
	copy(dst[k.bql:ql], q)
	return dst[:ql]
}

func (k *mixedKeys) Scores(pq []float32, lo int, out []float32) {
	mx, hi := k.ly.mx, lo+len(out)
	s, t := mx.parts(lo, hi)
	if lo < s {
		k.f16.Scores(pq[k.bql:], lo, out[:s-lo])
	}
	if s < t {
		k.tail.Scores(pq[:k.bql], s-mx.sinks, out[s-lo:t-lo])
	}
	if t < hi {
		k.f16.Scores(pq[k.bql:], mx.sinks+t-mx.q, out[t-lo:])
	}
}

// ScoresMulti is attn.MultiKeys: each store's multi-query path reading its part of the n
// prepared queries in place, at their stride. When the cells take in sinks and window cells
// both (f16Run), the f16 rows are read in one call into staging and its scores put in place.
//
// At kvlab-tiny-64's shape (d 64, two query heads a KV head) the window's reads (here and in
// AccumulateMulti) cost about what q8_0 rows do, so the P2 arms decode at about the uniform
// ones' speed (native/model's TestMixedDecodeSpeed, thread CPU, 24 alternations: q8_0+p64 ÷
// q8_0 median 1.000, range 0.978–1.008; q4_0+p64 ÷ q4_0 1.006, 0.993–1.029). Bounds, six
// alternations each: with both window reads skipped (wrong outputs, timing only) 1.029 and
// 1.032; with the window held as f32 (the same values, the wide kernels' VCVTPH2PS, about half
// their time, left out; twice the window's bytes) 1.011 and 1.012; a kvq.Prefetch of the
// window's rows before the tail's call measured slower (0.981 and 0.966).
func (k *mixedKeys) ScoresMulti(pq []float32, n, lo int, out []float32) {
	mx, bql, ql := k.ly.mx, k.bql, k.ql
	m := len(out) / n
	hi := lo + m
	if ns, nf := mx.f16Run(lo, hi); nf > 0 {
		bp := getGather(nf * n)
		fo := *bp
		k.f16.ScoresMultiStride(pq[bql:], ql, n, lo, fo)
		copy(out[:ns*n], fo[:ns*n])
		copy(out[(mx.q-lo)*n:m*n], fo[ns*n:])
		gathers.Put(bp)
		if mx.q > mx.sinks {
			k.tail.ScoresMultiStride(pq, ql, n, 0, out[ns*n:(mx.q-lo)*n])
		}
		return
	}
	s, t := mx.parts(lo, hi)
	if lo < s {
		k.f16.ScoresMultiStride(pq[bql:], ql, n, lo, out[:(s-lo)*n])
	}
	if s < t {
		k.tail.ScoresMultiStride(pq, ql, n, s-mx.sinks, out[(s-lo)*n:(t-lo)*n])
	}
	if t < hi {
		k.f16.ScoresMultiStride(pq[bql:], ql, n, mx.sinks+t-mx.q, out[(t-lo)*n:m*n])
	}
}

// mixedMerge enables the one-call read of the f16 cells (f16Run); the tests turn it on and off
// to compare it with the reads part by part, which give the same values bit for bit. It is off:
// since the reads take the queries and accumulators in place (ScoresMultiStride,
// AccumulateMultiStride), the one call's staging (a pooled buffer, the window's scores put in
// place, its weights gathered) cost more than the second kernel call it spares
// (TestMixedStepSpeed, kvlab-tiny-64's shape: the P2 arms' attention 0.15–0.3 cpu-µs a step
// faster part by part, the uniform arms level).
var mixedMerge = false

// f16Run reports, for a read of cells [lo, hi) that takes in sink cells and window cells both,
// the sink cells read (ns = sinks − lo, rows [lo, sinks)) and all the f16 cells read (nf = ns
// + hi − q): they are the rows [lo, lo + nf) of the f16 store, in cell order. It reports nf = 0
// when the read does not take in both (the parts are then read one by one, parts).
func (m *mixed) f16Run(lo, hi int) (ns, nf int) {
	if !mixedMerge || lo >= m.sinks || hi <= m.q {
		return 0, 0
	}
	ns = m.sinks - lo
	return ns, ns + hi - m.q
}

// mixedValues reads one head's V of a mixed layer. Its accumulator is the tail store's (bal
// values) followed by a value-domain accumulator for the f16 rows.
type mixedValues struct {
	ly *layer
	// tail is the layer's store of the head, f16 its f16 rows (mixed.fV), bal tail.AccLen()
	// and al the accumulator's length, bal + the head's dimension (AccLen).
	tail    *rowStore
	f16     *attn.RowStore
	bal, al int
}

func newMixedValues(ly *layer, h int) *mixedValues {
	t := ly.v[h].(*rowStore)
	return &mixedValues{ly: ly, tail: t, f16: ly.mx.fV[h], bal: t.AccLen(), al: t.AccLen() + ly.mx.dv}
}

func (v *mixedValues) Len() int    { return v.ly.written }
func (v *mixedValues) AccLen() int { return v.al }

func (v *mixedValues) Accumulate(acc []float32, w []float32, lo int) {
	mx, hi := v.ly.mx, lo+len(w)
	s, t := mx.parts(lo, hi)
	if lo < s {
		v.f16.Accumulate(acc[v.bal:], w[:s-lo], lo)
	}
	if s < t {
		v.tail.Accumulate(acc[:v.bal], w[s-lo:t-lo], s-mx.sinks)
	}
	if t < hi {
		v.f16.Accumulate(acc[v.bal:], w[t-lo:], mx.sinks+t-mx.q)
	}
}

// AccumulateMulti is attn.MultiValues: each store's multi-query path adding into its part of
// the n accumulators in place, at their stride. When the cells take in sinks and window cells
// both (f16Run), their weights are gathered and the f16 rows read in one call: the f16
// accumulators take the sinks and then the window, in the order the part-by-part reads add
// them.
func (v *mixedValues) AccumulateMulti(acc []float32, n int, w []float32, lo int) {
	mx, bal, al := v.ly.mx, v.bal, v.al
	m := len(w) / n
	hi := lo + m
	if ns, nf := mx.f16Run(lo, hi); nf > 0 {
		if mx.q > mx.sinks {
			v.tail.AccumulateMultiStride(acc, al, n, w[ns*n:(mx.q-lo)*n], 0)
		}
		bp := getGather(nf * n)
		wf := *bp
		copy(wf[:ns*n], w[:ns*n])
		copy(wf[ns*n:], w[(mx.q-lo)*n:m*n])
		v.f16.AccumulateMultiStride(acc[bal:], al, n, wf, lo)
		gathers.Put(bp)
		return
	}
	s, t := mx.parts(lo, hi)
	if lo < s {
		v.f16.AccumulateMultiStride(acc[bal:], al, n, w[:(s-lo)*n], lo)
	}
	if s < t {
		v.tail.AccumulateMultiStride(acc, al, n, w[(s-lo)*n:(t-lo)*n], s-mx.sinks)
	}
	if t < hi {
		v.f16.AccumulateMultiStride(acc[bal:], al, n, w[(t-lo)*n:m*n], mx.sinks+t-mx.q)
	}
}

func (v *mixedValues) Finish(dst, acc []float32) {
	v.tail.Finish(dst, acc[:v.bal])
	kvq.AddF32s(dst, acc[v.bal:])
}

// mixedRows is the reference reader of a mixed layer.
type mixedRows struct {
	ly   *layer
	head int
	isK  bool
}

func (r mixedRows) Len() int { return r.ly.written }

func (r mixedRows) Row(dst []float32, i int) {
	m := r.ly.mx
	if i >= m.sinks && i < m.q {
		if r.isK {
			r.ly.k[r.head].Row(dst, i-m.sinks)
		} else {
			r.ly.v[r.head].Row(dst, i-m.sinks)
		}
		return
	}
	s, row := m.f16Row(i, r.isK, r.head)
	s.Row(dst, row)
}

// checkMixed validates the mixed settings of cfg.
func checkMixed(cfg Config) error {
	switch {
	case cfg.Recent < 0:
		return fmt.Errorf("kvcache: recent window %d must not be negative", cfg.Recent)
	case cfg.Recent > 0 && cfg.Window > 0:
		return fmt.Errorf("kvcache: an f16 recent window (%d cells, quantized tail) and an f16 overlay window (%d cells) do not combine: pick one", cfg.Recent, cfg.Window)
	case cfg.Recent > 0 && cfg.Pair.K.Grouped():
		return fmt.Errorf("kvcache: %w: %s with an f16 recent window", kvq.ErrUnsupported, cfg.Pair.K)
	}
	return nil
}
