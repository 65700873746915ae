package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/kvlab/kvlab/internal/hugemem"
)

// Q2K group layout (the K half of seed 003's q2k; V is plain q4_0). One layer-head's K pool is a
// sequence of groups of GroupCells = 32 cells; group g holds cells [32g, 32g+32). A group of
// head dimension d is Q2KGroupBytes(d) = 10·d bytes:
//
//	[0, 2d)        d fp16 scales, little-endian, one per channel c (the gained scale B·s_c)
//	[2d, 10d)      32·d 2-bit codes, cell-major: the code of cell j (0..31 within the group),
//	               channel c is code number k = j·d + c, stored in byte 2d + k/4 at bits
//	               2·(k mod 4) (so for d a multiple of 4 each cell is d/4 whole bytes, channel
//	               4i in the low two bits of its byte i)
//
// Code v ∈ 0..3 reconstructs to q2kLevels[v] × scale_c, q2kLevels being turbo2's levels:
// whole multiples of one unit (±27 and ±90 units of 0.01678167). Codes of cells not yet written
// are 0.
//
// Scale rule (seed 003). For a group with n of its 32 cells present, ss_c the sum of squares of
// channel c over those cells, and prev_c the previous group's un-gained scale:
//
//	n = 32:                     s_c = sqrt(ss_c/32)                        (the channel's RMS)
//	n < 32, a previous group:   s_c = sqrt((ss_c + (32−n)·prev_c²)/32)   (shrink toward prev)
//	n < 32, the first group:    s_c = sqrt(ss_c/n)
//
// computed in float64 from the exact float32 values, cells in order, and rounded to float32.
// The codes are chosen against the un-gained s_c: the code of x is the number of the thresholds
// −T, 0, T that x reaches (x ≥ threshold), T = s_c·0.98172766 (float32) being the outer
// threshold, 58.5 units. That is the nearest level of x/s_c, a value on a threshold taking the
// upper level (so a channel with s_c = 0, which holds zeros, codes 3; NaN codes 0). The stored
// scale is F32ToF16(B·s_c) with B the K gain, clamped to the largest finite fp16 (65504), so the
// gain enlarges the reconstruction without moving any value to another level.
//
// Error: at B = 1, for a channel whose values in a complete group are Gaussian-like, the
// expected relative L2 error is √0.1175 ≈ 0.343 (the 4-level Lloyd–Max distortion, which the
// levels' rounding to whole units raises by 1e-7; a group's own RMS as the scale measures ≈
// 0.33). The bound holds channel by channel, so a channel 75× the median RMS costs the other
// channels nothing. A value beyond the outer level reconstructs to ±1.5104·s_c, so one cell far
// above its channel's RMS keeps a large absolute error; fp16 adds at
// most 2^-11 relative to the scale. A partial group's scale follows the rule, not the present
// cells' RMS, until the group is complete; then it is re-encoded as above.

// q2kLevels is the 4-level quantizer for N(0,1), ascending: code v reconstructs to
// q2kLevels[v]. They are turbo2's levels, turboInts2·turboUnit2 = {−90, −27, 27, 90} units: the
// Lloyd–Max levels (±0.45278, ±1.51042; MSE 0.1174818) rounded to whole multiples of the unit
// that serves them best (MSE 0.1174819), so that q2k's VNNI scores kernel sums Σ q'·level
// exactly in integers (q2k_amd64.go). TestQ2KCodebook re-derives them. (Until then q2k stored
// the Lloyd–Max levels themselves; q2k caches are never saved, so no stored cache holds them.)
var q2kLevels = turboLevels2

// q2kThreshold is the outer decision threshold of q2kLevels (the inner one is 0): the midpoint
// of 27 and 90 units, 58.5·turboUnit2 = 0.98172766 in float32.
const q2kThreshold = 58.5 * turboUnit2

// q2kMaxDim bounds the head dimension so that every size computation stays far from overflow.
const q2kMaxDim = 1 << 20

// Q2KGroupBytes is the bytes of one group of GroupCells cells of one layer-head at head
// dimension d: d fp16 scales and 32·d 2-bit codes, 10·d bytes.
func Q2KGroupBytes(d int) int64 { return q2kGroupBytes(d) }

// Q2KStagingBytes is the host memory a Q2KHead keeps beside its groups, at head dimension d:
// the raw float32 values of the last group's 32 cells, three float32 per-channel vectors
// (scales, thresholds, the previous group's scales) and one float64 vector (sums of squares),
// 4·d·(GroupCells+5) bytes. It is working state, not part of the stored format.
func Q2KStagingBytes(d int) int64 { return 4 * int64(d) * (GroupCells + 5) }

// Q2KHead is one layer-head's K pool in the q2k format: the stored groups plus the staging
// state that makes appends exact. Appending cells in any chunking (1, 3, 32, 100 at a time)
// yields byte-identical groups, because the last group is re-encoded from its exact raw values
// on every append: its scales follow the partial-group rule for the cells present, and all its
// present cells' codes are re-chosen against them.
//
// A Q2KHead is not safe for concurrent mutation; Scores, ScoresRange, Decode, Len and the size
// methods may run concurrently with each other (for example several query heads of one KV
// head), but not with Append or Truncate.
type Q2KHead struct {
	d    int
	gain float32
	n    int    // cells stored
	data []byte // whole groups, group g at [g·gb, (g+1)·gb)

	rawFrom int       // first cell whose raw values are staged: the start of the last group, or n
	stage   []float32 // raw values of cells [rawFrom, n), cell-major, d per cell, room for 32
	ss      []float64 // per channel, Σ x² over the staged cells, added in cell order
	scales  []float32 // un-gained rule scales of the group holding cell n−1 (when n > 0)
	thr     []float32 // scales[c]·q2kThreshold: the outer decision thresholds
	prev    []float32 // un-gained rule scales of the group before that one (when it exists)
}

// NewQ2KHead returns an empty K pool for rows of d values with K gain gain (1 = no gain; seed
// 003 recommends 1.10 with an FP16 window). It fails with ErrUnsupported for d below MinDim or
// above 2^20, or a gain that is not finite and positive.
func NewQ2KHead(d int, gain float32) (*Q2KHead, error) {
	if d < MinDim || d > q2kMaxDim {
		return nil, fmt.Errorf("%w: q2k: head dimension %d is outside [%d, %d]", ErrUnsupported, d, MinDim, q2kMaxDim)
	}
	if !(gain > 0) || math.IsInf(float64(gain), 0) {
		return nil, fmt.Errorf("%w: q2k: K gain %g must be finite and positive", ErrUnsupported, gain)
	}
	return &Q2KHead{
		d:      d,
		gain:   gain,
		stage:  make([]float32, GroupCells*d),
		ss:     make([]float64, d),
		scales: make([]float32, d),
		thr:    make([]float32, d),
		prev:   make([]float32, d),
	}, nil
}

// Dim is the head dimension.
func (h *Q2KHead) Dim() int { return h.d }

// Gain is the K reconstruction gain B.
func (h *Q2KHead) Gain() float32 { return h.gain }

// Len is the number of cells stored.
func (h *Q2KHead) Len() int { return h.n }

// Bytes is the exact stored size: whole groups, Q2K.Bytes(Len(), Dim(), 1).
func (h *Q2KHead) Bytes() int64 { return int64(len(h.data)) }

// StagingBytes is the working state kept beside the groups: Q2KStagingBytes(Dim()).
func (h *Q2KHead) StagingBytes() int64 { return Q2KStagingBytes(h.d) }

// Groups returns the stored groups, laid end to end (Bytes() bytes; the last group may be
// partial, holding Len() mod 32 cells, or 32). The slice aliases the pool: callers must not
// modify it, and it is invalidated by the next Append or Truncate.
func (h *Q2KHead) Groups() []byte { return h.data }

// Grow makes room for cells more cells without reallocating the group storage. The storage
// comes from hugemem.Bytes, as the row formats' stores do: a large pool sits on 2 MiB pages
// where Linux grants them (on the Go heap's 4 KiB pages, q2k's K at 131072 cells decoded
// slower than its V of q4_0 beside it, which was on huge pages).
func (h *Q2KHead) Grow(cells int) {
	if cells <= 0 {
		return
	}
	need := int(Q2K.Bytes(int64(h.n+cells), h.d, 1))
	if need > cap(h.data) {
		nd := hugemem.Bytes(need)[:len(h.data)]
		copy(nd, h.data)
		h.data = nd
	}
}

// Append stores the cells of k, laid end to end (len(k) must be a multiple of Dim()); it panics
// otherwise, a caller bug. Each call re-encodes the group it ends in from that group's staged
// values, O(32·d) work on top of the cells appended.
func (h *Q2KHead) Append(k []float32) {
	d := h.d
	if len(k)%d != 0 {
		panic(fmt.Sprintf("kvq: q2k: Append of %d values is not a whole number of %d-value cells", len(k), d))
	}
	gb := int(q2kGroupBytes(d))
	for len(k) > 0 {
		m := h.n - h.rawFrom
		if h.n%GroupCells == 0 { // the last group is complete (or there is none): start one
			if h.n > 0 {
				copy(h.prev, h.scales)
			}
			h.rawFrom, m = h.n, 0
			clear(h.ss)
			h.data = slices.Grow(h.data, gb)[:len(h.data)+gb] // encodeLast writes all of it
		}
		take := min(GroupCells-m, len(k)/d)
		copy(h.stage[m*d:], k[:take*d])
		h.addSquares(k[:take*d])
		k = k[take*d:]
		h.n += take
		h.encodeLast()
	}
}

// Reset drops every cell, keeping the allocated group storage for reuse.
func (h *Q2KHead) Reset() {
	h.n, h.rawFrom = 0, 0
	h.data = h.data[:0]
}

// Truncate drops the cells from n on, so that Len() = n, exactly as if they had never been
// appended: later appends give the same bytes as without the dropped cells. It can only reach
// back to the start of the last group (whose raw values are staged); further back it fails with
// ErrUnsupported and changes nothing. n > Len() is ErrUnsupported too.
func (h *Q2KHead) Truncate(n int) error {
	switch {
	case n == h.n:
		return nil
	case n < 0 || n > h.n:
		return fmt.Errorf("%w: q2k: truncate to %d cells of %d", ErrUnsupported, n, h.n)
	case n < h.rawFrom:
		return fmt.Errorf("%w: q2k: truncate to %d cells reaches before the last group (cell %d), whose raw values are gone", ErrUnsupported, n, h.rawFrom)
	}
	gb := int(q2kGroupBytes(h.d))
	h.n = n
	h.data = h.data[:int((int64(n)+GroupCells-1)/GroupCells)*gb]
	if n == h.rawFrom { // the last group is gone; the one before it is now last and complete
		copy(h.scales, h.prev)
		return nil
	}
	clear(h.ss)
	h.addSquares(h.stage[:(n-h.rawFrom)*h.d])
	h.encodeLast()
	return nil
}

// addSquares adds the squares of the cells of k, in cell order, to the channel sums.
func (h *Q2KHead) addSquares(k []float32) {
	ss := h.ss
	for len(k) > 0 {
		for c, x := range k[:len(ss)] {
			ss[c] += float64(x) * float64(x)
		}
		k = k[len(ss):]
	}
}

// encodeLast re-encodes the group holding cell n−1 from the staged raw values.
func (h *Q2KHead) encodeLast() {
	d := h.d
	g := h.rawFrom / GroupCells
	m := h.n - h.rawFrom
	gb := int(q2kGroupBytes(d))
	grp := h.data[g*gb : (g+1)*gb]
	for c, ss := range h.ss {
		var r float64
		switch {
		case m == GroupCells:
			r = ss / GroupCells
		case g > 0:
			p := float64(h.prev[c])
			r = (ss + float64(GroupCells-m)*(p*p)) / GroupCells
		default:
			r = ss / float64(m)
		}
		s := float32(math.Sqrt(r))
		h.scales[c] = s
		h.thr[c] = s * q2kThreshold
		binary.LittleEndian.PutUint16(grp[2*c:], F32ToF16(min(h.gain*s, 65504)))
	}
	codes := grp[2*d:]
	clear(codes)
	if d%4 == 0 {
		for j := 0; j < m; j++ {
			x, out := h.stage[j*d:(j+1)*d], codes[j*d/4:(j+1)*d/4]
			thr := h.thr[:len(x)]
			for i := range out {
				v, t := (*[4]float32)(x[4*i:]), (*[4]float32)(thr[4*i:])
				out[i] = q2kCodeT(v[0], t[0]) | q2kCodeT(v[1], t[1])<<2 | q2kCodeT(v[2], t[2])<<4 | q2kCodeT(v[3], t[3])<<6
			}
		}
		return
	}
	k := 0
	for j := 0; j < m; j++ {
		for c, x := range h.stage[j*d : (j+1)*d] {
			codes[k>>2] |= q2kCodeT(x, h.thr[c]) << (2 * (k & 3))
			k++
		}
	}
}

// q2kCodeT returns the index of the level nearest x/s given the outer threshold t = s·q2kThreshold
// (see the scale rule for the tie rule), without branches: the number of the thresholds −t, 0,
// t that x reaches (0 for NaN).
func q2kCodeT(x, t float32) byte {
	return b2u(x >= -t) + b2u(x >= 0) + b2u(x >= t)
}

// Decode writes the stored K of cell (0 ≤ cell < Len()) into dst (Dim() values):
// dst[c] = scale_c·q2kLevels[code], scale_c being the stored (gained) fp16 scale.
func (h *Q2KHead) Decode(dst []float32, cell int) {
	if cell < 0 || cell >= h.n {
		panic(fmt.Sprintf("kvq: q2k: Decode of cell %d of %d", cell, h.n))
	}
	d := h.d
	gb := int(q2kGroupBytes(d))
	g, j := cell/GroupCells, cell%GroupCells
	q2kDecodeCells(dst[:d], h.data[g*gb:(g+1)*gb], d, j, 1)
}

// q2kDecodeCells decodes cells [j0, j0+n) of one group into dst (n·d values).
func q2kDecodeCells(dst []float32, grp []byte, d, j0, n int) {
	codes := grp[2*d:]
	for c := 0; c < d; c++ {
		s := F16ToF32(binary.LittleEndian.Uint16(grp[2*c:]))
		for j := 0; j < n; j++ {
			k := (j0+j)*d + c
			dst[j*d+c] = s * q2kLevels[codes[k>>2]>>(2*(k&3))&3]
		}
	}
}

// Scores writes out[j] = q·k̂_j for the cells j < len(out) (len(out) ≤ Len()), k̂ being the
// decoded K of Decode. See ScoresRange for the arithmetic and its bound.
func (h *Q2KHead) Scores(q []float32, out []float32) { h.ScoresRange(q, 0, out) }

// ScoresRange writes out[j] = q·k̂_{first+j} for the cells [first, first+len(out)), which must lie
// within [0, Len()). Per group it precomputes q_c·scale_c once and, for each pair of channels, the
// 16 sums of their two possible products, so each cell costs one table lookup and one float32
// addition per two channels. The result differs from Σ_c q_c·Decode(cell)[c] by float32 rounding
// only: at most about (d/2 + 3)·2^-24·Σ_c |q_c·k̂_c|.
func (h *Q2KHead) ScoresRange(q []float32, first int, out []float32) {
	if first < 0 || first+len(out) > h.n {
		panic(fmt.Sprintf("kvq: q2k: scores of cells [%d, %d) of %d", first, first+len(out), h.n))
	}
	d := h.d
	q = q[:d]
	gb := int(q2kGroupBytes(d))
	var buf [4096]float32
	var tab []float32
	if need := 8 * (d + 1); need <= len(buf) {
		tab = buf[:need]
	} else {
		tab = make([]float32, need)
	}
	for cell := first; cell < first+len(out); {
		g, j0 := cell/GroupCells, cell%GroupCells
		n := min(GroupCells-j0, first+len(out)-cell)
		grp := h.data[g*gb : (g+1)*gb]
		q2kScoresGroup(out[cell-first:cell-first+n], q, grp, d, j0, tab)
		cell += n
	}
}

// q2kScoresGroup scores cells [j0, j0+len(out)) of one group; tab is scratch of 8·(d+1) floats.
func q2kScoresGroup(out, q []float32, grp []byte, d, j0 int, tab []float32) {
	codes := grp[2*d:]
	if d%4 != 0 {
		// General layout: cells do not start on byte boundaries. tab[4c+v] = q_c·s_c·level v.
		for c := 0; c < d; c++ {
			qs := q[c] * F16ToF32(binary.LittleEndian.Uint16(grp[2*c:]))
			for v, l := range q2kLevels {
				tab[4*c+v] = qs * l
			}
		}
		for j := range out {
			var sum float32
			k := (j0 + j) * d
			for c := 0; c < d; c, k = c+1, k+1 {
				sum += tab[4*c+int(codes[k>>2]>>(2*(k&3))&3)]
			}
			out[j] = sum
		}
		return
	}
	// d a multiple of 4: pair p of channels (2p, 2p+1) is one nibble; tab[16p+a+4b] is
	// q_{2p}·s_{2p}·level a + q_{2p+1}·s_{2p+1}·level b.
	var lo, hi [4]float32
	for p := 0; p < d/2; p++ {
		qa := q[2*p] * F16ToF32(binary.LittleEndian.Uint16(grp[4*p:]))
		qb := q[2*p+1] * F16ToF32(binary.LittleEndian.Uint16(grp[4*p+2:]))
		for v, l := range q2kLevels {
			lo[v], hi[v] = qa*l, qb*l
		}
		t := tab[16*p : 16*p+16]
		for b := 0; b < 4; b++ {
			for a := 0; a < 4; a++ {
				t[a+4*b] = lo[a] + hi[b]
			}
		}
	}
	nb := d / 4
	tab = tab[:16*(d/2)]
	for j := range out {
		row := codes[(j0+j)*nb : (j0+j+1)*nb]
		var s0, s1, s2, s3 float32
		t := tab
		for len(row) >= 2 {
			b0, b1 := row[0], row[1]
			u := (*[64]float32)(t)
			s0 += u[b0&15]
			s1 += u[16+b0>>4]
			s2 += u[32+b1&15]
			s3 += u[48+b1>>4]
			row, t = row[2:], t[64:]
		}
		if len(row) == 1 {
			u := (*[32]float32)(t)
			s0 += u[row[0]&15]
			s1 += u[16+row[0]>>4]
		}
		out[j] = (s0 + s1) + (s2 + s3)
	}
}

// ScoresGrid reports whether ScoresRangeMulti rounds the queries on this CPU (its integer
// kernel: AVX-512 VNNI and VBMI, Dim() a multiple of 64), and where it does writes into dst
// (Dim() values) the query q as it scores the cells of group g (g < ⌈Len()/32⌉): with q' =
// q·scale rounded per block of 64 channels (32 on CPUs without AVX-512) to s·Q, dst[c] =
// s·Q_c/scale_c (0 where scale_c is 0),
// so that dst·Decode(cell) is that kernel's score of the cell to float rounding (a group whose
// q' has a non-finite value is scored in float: dst = q). The kernel takes four queries at a
// time and scores a group in float for all four where any of their q' is not finite there;
// dst, which knows only q, is then the rounded query all the same.
func (h *Q2KHead) ScoresGrid(dst, q []float32, g int) bool {
	d := h.d
	gb := int(q2kGroupBytes(d))
	return q2kGridQuery(dst[:d], q[:d], h.data[g*gb:(g+1)*gb], d)
}

// DecodeQ2KGroup decodes the first nCells cells of one stored group of untrusted bytes into dst
// (nCells·d values, cell-major): the entry point for groups read from disk or the network. It
// checks d (MinDim ≤ d ≤ 2^20, else ErrUnsupported), 0 ≤ nCells ≤ 32, len(group) =
// Q2KGroupBytes(d) and len(dst) = nCells·d (else ErrCorrupt), and never panics. Non-finite
// stored scales decode to non-finite values.
func DecodeQ2KGroup(dst []float32, group []byte, d, nCells int) error {
	if d < MinDim || d > q2kMaxDim {
		return fmt.Errorf("%w: q2k: head dimension %d is outside [%d, %d]", ErrUnsupported, d, MinDim, q2kMaxDim)
	}
	if nCells < 0 || nCells > GroupCells {
		return fmt.Errorf("%w: q2k: a group holds 0 to %d cells, not %d", ErrCorrupt, GroupCells, nCells)
	}
	if int64(len(group)) != q2kGroupBytes(d) {
		return fmt.Errorf("%w: q2k: group of %d bytes, want %d for head dimension %d", ErrCorrupt, len(group), q2kGroupBytes(d), d)
	}
	if len(dst) != nCells*d {
		return fmt.Errorf("%w: q2k: %d cells need %d values, have room for %d", ErrCorrupt, nCells, nCells*d, len(dst))
	}
	q2kDecodeCells(dst, group, d, 0, nCells)
	return nil
}
