package kvcache

import (
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
	k, v          []uint16 // slots × hn × d
	owner         []int    // the cell each slot holds, −1 when empty
}

func newOverlay(cfg Config) *overlay {
	slots := cfg.Sinks + cfg.Window
	o := &overlay{sinks: cfg.Sinks, window: cfg.Window, hn: cfg.KVHeads, dk: cfg.HeadDimK, dv: cfg.HeadDimV,
		k: make([]uint16, slots*cfg.KVHeads*cfg.HeadDimK), v: make([]uint16, slots*cfg.KVHeads*cfg.HeadDimV),
		owner: make([]int, slots)}
	for i := range o.owner {
		o.owner[i] = -1
	}
	return o
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
		for j, x := range k[i*rk : (i+1)*rk] {
			o.k[s*rk+j] = kvq.F32ToF16(x)
		}
		for j, x := range v[i*rv : (i+1)*rv] {
			o.v[s*rv+j] = kvq.F32ToF16(x)
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
func (o *overlay) rowK(s, h int) []uint16 { return o.k[(s*o.hn+h)*o.dk : (s*o.hn+h+1)*o.dk] }
func (o *overlay) rowV(s, h int) []uint16 { return o.v[(s*o.hn+h)*o.dv : (s*o.hn+h+1)*o.dv] }

// each calls fn for every overlay cell in [lo, hi) that reads exact, with its slot.
func (o *overlay) each(lo, hi, n int, fn func(cell, slot int)) {
	visit := func(a, b int) {
		for c := max(a, lo); c < min(b, hi); c++ {
			if s, ok := o.exact(c, n); ok {
				fn(c, s)
			}
		}
	}
	w0 := max(o.sinks, n-o.window)
	visit(0, min(o.sinks, n))
	visit(w0, n)
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

func (k *overlayKeys) Scores(pq []float32, lo int, out []float32) {
	ql := k.base.QueryLen()
	k.base.Scores(pq[:ql], lo, out)
	q := pq[ql:]
	k.ov.each(lo, lo+len(out), k.ly.written, func(cell, s int) {
		var dot float32
		for i, h := range k.ov.rowK(s, k.head) {
			dot += q[i] * kvq.F16ToF32(h)
		}
		out[cell-lo] = dot
	})
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

func (v *overlayValues) Accumulate(acc []float32, w []float32, lo int) {
	al := v.base.AccLen()
	exact := acc[al:]
	// The overlay cells' weights go to the exact accumulator; the bulk sees zero for them.
	// Saved weights are restored so w is unchanged on return.
	var saved []struct {
		i int
		w float32
	}
	v.ov.each(lo, lo+len(w), v.ly.written, func(cell, s int) {
		wi := w[cell-lo]
		for i, h := range v.ov.rowV(s, v.head) {
			exact[i] += wi * kvq.F16ToF32(h)
		}
		saved = append(saved, struct {
			i int
			w float32
		}{cell - lo, wi})
		w[cell-lo] = 0
	})
	v.base.Accumulate(acc[:al], w, lo)
	for _, sv := range saved {
		w[sv.i] = sv.w
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
