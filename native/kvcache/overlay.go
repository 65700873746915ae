package kvcache

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// overlay is seed 003's FP16 window + attention sinks for one layer: exact f16 copies of K and
// V for the first Sinks cells and a ring of the most recent Window cells. At decode, a cell
// reads its copy when it is a sink or among the last Window cells written and its slot still
// holds it (a truncation can leave a slot holding a later cell; that cell then reads the
// quantized store, as every cell outside the overlay does).
type overlay struct {
	sinks, window int
	hn, dk, dv    int
	slots         int
	k, v          []uint16 // hn × slots × d: one head's slots are consecutive f16 rows
	owner         []int    // the cell each slot holds, −1 when empty
	// fk and fv are the f16 codecs that write the rows and read runs of consecutive slots of
	// one head as a row store (their multi-query kernels).
	fk, fv f16Rows
}

// f16Rows is the f16 codec: its rows and its multi-query kernels.
type f16Rows interface {
	kvq.Codec
	kvq.MultiQuery
}

func newOverlay(cfg Config) (*overlay, error) {
	slots := cfg.Sinks + cfg.Window
	o := &overlay{sinks: cfg.Sinks, window: cfg.Window, hn: cfg.KVHeads, dk: cfg.HeadDimK, dv: cfg.HeadDimV,
		slots: slots,
		k:     make([]uint16, slots*cfg.KVHeads*cfg.HeadDimK), v: make([]uint16, slots*cfg.KVHeads*cfg.HeadDimV),
		owner: make([]int, slots)}
	for i := range o.owner {
		o.owner[i] = -1
	}
	var err error
	if o.fk, err = newF16Rows(cfg.HeadDimK); err != nil {
		return nil, err
	}
	if o.fv, err = newF16Rows(cfg.HeadDimV); err != nil {
		return nil, err
	}
	return o, nil
}

// newF16Rows is the f16 codec of d values.
func newF16Rows(d int) (f16Rows, error) {
	c, err := kvq.NewCodec(kvq.F16, d, kvq.CodecOptions{})
	if err != nil {
		return nil, err
	}
	f, ok := c.(f16Rows)
	if !ok {
		return nil, fmt.Errorf("the f16 codec has no multi-query kernels")
	}
	return f, nil
}

// slot is where cell lives in the overlay, or −1 for a cell no slot is assigned to.
func (o *overlay) slot(cell int) int {
	if cell < o.sinks {
		return cell
	}
	if o.window == 0 {
		return -1
	}
	return o.sinks + cell%o.window
}

// exact reports whether cell reads its f16 copy when n cells are written, and its slot.
func (o *overlay) exact(cell, n int) (int, bool) {
	if cell >= n || (cell >= o.sinks && cell < n-o.window) {
		return -1, false
	}
	s := o.slot(cell)
	return s, s >= 0 && o.owner[s] == cell
}

func (o *overlay) write(pos int, k, v []float32, n int) {
	rk, rv := o.hn*o.dk, o.hn*o.dv
	for i := 0; i < n; i++ {
		cell := pos + i
		s := o.slot(cell)
		if s < 0 {
			continue
		}
		for h := 0; h < o.hn; h++ {
			o.fk.Encode(rowBytes(o.k, h, o.slots, o.dk, s, s+1), k[i*rk+h*o.dk:i*rk+(h+1)*o.dk])
			o.fv.Encode(rowBytes(o.v, h, o.slots, o.dv, s, s+1), v[i*rv+h*o.dv:i*rv+(h+1)*o.dv])
		}
		o.owner[s] = cell
	}
}

func (o *overlay) truncate(n int) {
	for s, c := range o.owner {
		if c >= n {
			o.owner[s] = -1
		}
	}
}

func (o *overlay) bytes() int64 {
	return kvq.OverlayBytes(int64(len(o.owner)), o.dk, o.dv, o.hn)
}

// rowK returns head h's exact K row in slot s.
func (o *overlay) rowK(s, h int) []uint16 { return o.k[(h*o.slots+s)*o.dk : (h*o.slots+s+1)*o.dk] }
func (o *overlay) rowV(s, h int) []uint16 { return o.v[(h*o.slots+s)*o.dv : (h*o.slots+s+1)*o.dv] }

// rowBytes is head h's f16 rows of slots [s0, s1) of x (d values a row) as the f16 codec's
// packed rows (little-endian halves, which every target of this package stores them as).
func rowBytes(x []uint16, h, slots, d, s0, s1 int) []byte {
	r := x[(h*slots+s0)*d : (h*slots+s1)*d]
	if len(r) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&r[0])), 2*len(r))
}

// slotRuns calls fn for the maximal runs of cells in [a, b) (every one exact when n cells are
// written) whose slots are consecutive: cells c0 … c1−1 in slots s0 … s0+c1−c0−1.
func (o *overlay) slotRuns(a, b, n int, fn func(c0, c1, s0 int)) {
	for c := a; c < b; {
		s0, _ := o.exact(c, n)
		e := c + 1
		for e < b {
			if s, _ := o.exact(e, n); s != s0+e-c {
				break
			}
			e++
		}
		fn(c, e, s0)
		c = e
	}
}

// runs splits [lo, hi) into maximal runs of cells that read exact (exact true) and cells that
// read the quantized store, in order, when n cells are written. Only the sink and window ranges
// are checked cell by cell; the cells between them are one run.
func (o *overlay) runs(lo, hi, n int, fn func(a, b int, exact bool)) {
	w0 := max(o.sinks, n-o.window) // [0, sinks) and [w0, n) may read exact
	start, cur := lo, false
	flush := func(end int) {
		if end > start {
			fn(start, end, cur)
		}
		start = end
	}
	for c := lo; c < hi; {
		if c >= min(o.sinks, n) && c < w0 {
			// The middle: every cell reads the store.
			end := min(hi, w0)
			if cur {
				flush(c)
				cur = false
			}
			c = end
			continue
		}
		_, ok := o.exact(c, n)
		if ok != cur {
			flush(c)
			cur = ok
		}
		c++
	}
	flush(hi)
}

// overlayKeys reads K with the overlay. Its prepared query is the base store's prepared query
// followed by the raw query, which the exact cells dot against.
type overlayKeys struct {
	base store
	ov   *overlay
	head int
	ly   *layer
}

func (k *overlayKeys) Len() int      { return k.ly.written }
func (k *overlayKeys) QueryLen() int { return k.base.QueryLen() + k.ov.dk }

func (k *overlayKeys) Prepare(dst, q []float32) []float32 {
	ql := k.base.QueryLen()
	k.base.Prepare(dst[:ql], q)
	copy(dst[ql:ql+k.ov.dk], q)
	return dst[:ql+k.ov.dk]
}

// exactDot is q·(the exact K row of slot s).
func (k *overlayKeys) exactDot(q []float32, s int) float32 {
	var dot float32
	for i, h := range k.ov.rowK(s, k.head) {
		dot += q[i] * kvq.F16ToF32(h)
	}
	return dot
}

func (k *overlayKeys) Scores(pq []float32, lo int, out []float32) {
	ql := k.base.QueryLen()
	q := pq[ql:]
	k.ov.runs(lo, lo+len(out), k.ly.written, func(a, b int, exact bool) {
		if !exact {
			k.base.Scores(pq[:ql], a, out[a-lo:b-lo])
			return
		}
		for c := a; c < b; c++ {
			s, _ := k.ov.exact(c, k.ly.written)
			out[c-lo] = k.exactDot(q, s)
		}
	})
}

// ScoresMulti is attn.MultiKeys: the base store's multi-query path over the cells that read
// it (its n prepared queries gathered contiguous), exact dots for the overlay cells.
func (k *overlayKeys) ScoresMulti(pq []float32, n, lo int, out []float32) {
	bql, ql, dk := k.base.QueryLen(), k.QueryLen(), k.ov.dk
	bp := getGather(n * ql)
	defer gathers.Put(bp)
	// The base store's prepared queries, then the raw ones the f16 kernels read.
	bq, eq := (*bp)[:n*bql], (*bp)[n*bql:]
	for h := 0; h < n; h++ {
		copy(bq[h*bql:(h+1)*bql], pq[h*ql:h*ql+bql])
		copy(eq[h*dk:(h+1)*dk], pq[h*ql+bql:(h+1)*ql])
	}
	m := len(out) / n
	k.ov.runs(lo, lo+m, k.ly.written, func(a, b int, exact bool) {
		if !exact {
			attn.MultiScores(k.base, bq, n, a, out[(a-lo)*n:(b-lo)*n])
			return
		}
		k.ov.slotRuns(a, b, k.ly.written, func(c0, c1, s0 int) {
			rows := rowBytes(k.ov.k, k.head, k.ov.slots, dk, s0, s0+c1-c0)
			k.ov.fk.DotManyMulti(eq, n, rows, out[(c0-lo)*n:(c1-lo)*n])
		})
	})
}

// gathers pools the buffers the multi-query paths gather the base store's queries and
// accumulators into (a stack buffer would escape through the interface calls).
var gathers sync.Pool // *[]float32

func getGather(n int) *[]float32 {
	bp, _ := gathers.Get().(*[]float32)
	if bp == nil {
		bp = new([]float32)
	}
	if cap(*bp) < n {
		*bp = make([]float32, n)
	}
	*bp = (*bp)[:n]
	return bp
}

// overlayValues reads V with the overlay. Its accumulator is the base store's followed by an
// exact value-domain accumulator for the overlay cells.
type overlayValues struct {
	base store
	ov   *overlay
	head int
	ly   *layer
}

func (v *overlayValues) Len() int    { return v.ly.written }
func (v *overlayValues) AccLen() int { return v.base.AccLen() + v.ov.dv }

// exactAdd adds w·(the exact V row of slot s) to acc.
func (v *overlayValues) exactAdd(acc []float32, w float32, s int) {
	for i, h := range v.ov.rowV(s, v.head) {
		acc[i] += w * kvq.F16ToF32(h)
	}
}

func (v *overlayValues) Accumulate(acc []float32, w []float32, lo int) {
	al := v.base.AccLen()
	v.ov.runs(lo, lo+len(w), v.ly.written, func(a, b int, exact bool) {
		if !exact {
			v.base.Accumulate(acc[:al], w[a-lo:b-lo], a)
			return
		}
		for c := a; c < b; c++ {
			s, _ := v.ov.exact(c, v.ly.written)
			v.exactAdd(acc[al:], w[c-lo], s)
		}
	})
}

// AccumulateMulti is attn.MultiValues: the base store's multi-query path over the cells that
// read it (its n accumulators gathered contiguous, then put back), exact rows for the overlay
// cells into each accumulator's exact part.
func (v *overlayValues) AccumulateMulti(acc []float32, n int, w []float32, lo int) {
	bal, al, dv := v.base.AccLen(), v.AccLen(), v.ov.dv
	bp := getGather(n * al)
	defer gathers.Put(bp)
	// The base store's accumulators, then the exact ones the f16 kernels add to.
	ba, ea := (*bp)[:n*bal], (*bp)[n*bal:]
	for h := 0; h < n; h++ {
		copy(ba[h*bal:(h+1)*bal], acc[h*al:h*al+bal])
		copy(ea[h*dv:(h+1)*dv], acc[h*al+bal:(h+1)*al])
	}
	m := len(w) / n
	v.ov.runs(lo, lo+m, v.ly.written, func(a, b int, exact bool) {
		if !exact {
			attn.MultiAccumulate(v.base, ba, n, w[(a-lo)*n:(b-lo)*n], a)
			return
		}
		v.ov.slotRuns(a, b, v.ly.written, func(c0, c1, s0 int) {
			rows := rowBytes(v.ov.v, v.head, v.ov.slots, dv, s0, s0+c1-c0)
			v.ov.fv.AccumulateManyMulti(ea, n, w[(c0-lo)*n:(c1-lo)*n], rows)
		})
	})
	for h := 0; h < n; h++ {
		copy(acc[h*al:h*al+bal], ba[h*bal:(h+1)*bal])
		copy(acc[h*al+bal:(h+1)*al], ea[h*dv:(h+1)*dv])
	}
}

func (v *overlayValues) Finish(dst, acc []float32) {
	al := v.base.AccLen()
	v.base.Finish(dst, acc[:al])
	for i, x := range acc[al:] {
		dst[i] += x
	}
}

// overlayRows is the reference reader with the overlay.
type overlayRows struct {
	base attn.Rows
	ov   *overlay
	head int
	ly   *layer
	isK  bool
}

func (r overlayRows) Len() int { return r.ly.written }

func (r overlayRows) Row(dst []float32, i int) {
	s, ok := r.ov.exact(i, r.ly.written)
	if !ok {
		r.base.Row(dst, i)
		return
	}
	row := r.ov.rowV(s, r.head)
	if r.isK {
		row = r.ov.rowK(s, r.head)
	}
	for j, h := range row {
		dst[j] = kvq.F16ToF32(h)
	}
}
