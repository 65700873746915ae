package attn

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/kvlab/kvlab/native/kvq"
)

// Shape is the attention geometry of one layer.
type Shape struct {
	Heads    int // query heads
	KVHeads  int // KV heads; Heads must be a multiple of it
	HeadDimK int // values per query and key row
	HeadDimV int // values per value row and per output head
	Scale    float32
	// SoftCap, when positive, caps every scaled score x as SoftCap·tanh(x/SoftCap) before the
	// softmax (gemma2's attention logit soft-capping).
	SoftCap   float32
	ChunkSize int // cells per work item on the fast path; 0 picks one (defaultChunk)
	Threads   int // goroutines on the fast path; ≤ 1 runs on the caller's goroutine
}

// DefaultChunk is the number of cells one work item of the fast path covers, unless the
// context is long enough for defaultChunk to take more.
const DefaultChunk = 4096

// minItems is the fewest work items defaultChunk leaves a decode when it takes chunks longer
// than DefaultChunk: 4 for each of 16 threads.
const minItems = 64

// defaultChunk is the chunk of a decode over n cells of kvHeads KV heads: DefaultChunk, doubled
// (up to 4 times it) while the decode keeps at least minItems work items. Every work item
// restarts the kernels' streams over its rows (and their calls' setup, 0.2–0.4 µs each); at the
// bench shape (131072 cells, 8 KV heads: 16384-cell chunks, 64 items) it measured on Zen 4
// (thread CPU, one thread, 9 alternations, min ms) q4_0 13.85 → 13.41, turbo2 9.54 → 9.17,
// turbo4 12.47 → 11.81, f16 35.9 → 34.8 against 4096-cell chunks. It depends on the context
// and the KV heads only, so the result still does not depend on the threads.
func defaultChunk(n, kvHeads int) int {
	c := DefaultChunk
	for c < 4*DefaultChunk && kvHeads*((n+2*c-1)/(2*c)) >= minItems {
		c *= 2
	}
	return c
}

func (s Shape) check(q, out []float32, nk, nv int) error {
	switch {
	case s.Heads <= 0 || s.KVHeads <= 0 || s.Heads%s.KVHeads != 0:
		return fmt.Errorf("attn: %d query heads do not group onto %d KV heads", s.Heads, s.KVHeads)
	case nk != s.KVHeads || nv != s.KVHeads:
		return fmt.Errorf("attn: %d key and %d value heads given, shape has %d", nk, nv, s.KVHeads)
	case len(q) != s.Heads*s.HeadDimK:
		return fmt.Errorf("attn: query has %d values, want %d heads × %d", len(q), s.Heads, s.HeadDimK)
	case len(out) != s.Heads*s.HeadDimV:
		return fmt.Errorf("attn: output has %d values, want %d heads × %d", len(out), s.Heads, s.HeadDimV)
	}
	return nil
}

// DecodeReference computes attention for one query position over cells [lo, hi) by
// reconstructing every row and evaluating the formula in float64. It is the oracle for every
// faster path. Cells outside [lo, hi) are ignored; an empty range yields zeros.
func DecodeReference(out, q []float32, s Shape, keys, vals []Rows, lo, hi int) error {
	if err := s.check(q, out, len(keys), len(vals)); err != nil {
		return err
	}
	group := s.Heads / s.KVHeads
	k := make([]float32, s.HeadDimK)
	v := make([]float32, s.HeadDimV)
	scores := make([]float64, max(hi-lo, 0))
	acc := make([]float64, s.HeadDimV)
	for h := 0; h < s.Heads; h++ {
		g := h / group
		qh := q[h*s.HeadDimK : (h+1)*s.HeadDimK]
		m := math.Inf(-1)
		for j := lo; j < hi; j++ {
			keys[g].Row(k, j)
			var d float64
			for i, x := range qh {
				d += float64(x) * float64(k[i])
			}
			scores[j-lo] = float64(s.Scale) * d
			if c := float64(s.SoftCap); c > 0 {
				scores[j-lo] = c * math.Tanh(scores[j-lo]/c)
			}
			m = math.Max(m, scores[j-lo])
		}
		var sum float64
		clear(acc)
		for j := lo; j < hi; j++ {
			p := math.Exp(scores[j-lo] - m)
			sum += p
			vals[g].Row(v, j)
			for i, x := range v {
				acc[i] += p * float64(x)
			}
		}
		o := out[h*s.HeadDimV : (h+1)*s.HeadDimV]
		for i := range o {
			if sum > 0 {
				o[i] = float32(acc[i] / sum)
			} else {
				o[i] = 0
			}
		}
	}
	return nil
}

// part is one work item's online-softmax state: the running max of the scaled scores, the sum
// of exp(score − max), and Σ exp(score − max)·v in the value store's accumulator domain.
type part struct {
	max, sum float32
	acc      []float32
}

// Decode computes the same attention as DecodeReference with the fast path: packed reads
// through Keys.Scores and Values.Accumulate (or, where the stores offer them, MultiKeys and
// MultiValues, which read each cell once for all the query heads of its KV head), the context
// split into chunks that run on up to s.Threads goroutines, and the chunks merged with the
// exact online-softmax combine (m = max m_i, sum = Σ sum_i·e^(m_i−m), acc = Σ acc_i·e^(m_i−m)).
// It agrees with the reference within float32 rounding of the sums involved. The result does
// not depend on s.Threads: the chunks are fixed by s.ChunkSize (or defaultChunk, from the
// context's length and the KV heads) and merged in order.
func Decode(out, q []float32, s Shape, keys []Keys, vals []Values, lo, hi int) error {
	if err := s.check(q, out, len(keys), len(vals)); err != nil {
		return err
	}
	if hi <= lo {
		clear(out)
		return nil
	}
	chunk := s.ChunkSize
	if chunk <= 0 {
		chunk = defaultChunk(hi-lo, s.KVHeads)
	}
	nChunks := (hi - lo + chunk - 1) / chunk
	group := s.Heads / s.KVHeads
	items := s.KVHeads * nChunks
	accLen := vals[0].AccLen()
	buf := getDecodeBuf(s.Heads*nChunks, s.Heads*nChunks*accLen)
	defer putDecodeBuf(buf)
	parts, accs := buf.parts, buf.accs
	clear(accs)
	// Every query head is prepared once here, not once per chunk: a rotated store's Prepare
	// is a Hadamard transform, which a work item per chunk of 4096 cells would repeat
	// (~7% of a 131072-cell turbo2 decode). Prepare maps a query alone, so the prepared
	// queries, and every score, are the ones a per-chunk Prepare gives.
	pqOff := buf.offsets(s.KVHeads + 1)
	for g := range s.KVHeads {
		pqOff[g+1] = pqOff[g] + group*keys[g].QueryLen()
	}
	pq := buf.queries(pqOff[s.KVHeads])
	for h := 0; h < s.Heads; h++ {
		g, i := h/group, h%group
		ql := keys[g].QueryLen()
		o := pqOff[g] + i*ql
		keys[g].Prepare(pq[o:o+ql], q[h*s.HeadDimK:(h+1)*s.HeadDimK])
	}
	// The work item's state lives in the pooled buffer, so the one-thread path allocates
	// nothing (a closure over it would escape through the goroutines of the other path).
	buf.job = decodeJob{s: s, keys: keys, vals: vals, lo: lo, hi: hi, chunk: chunk,
		nChunks: nChunks, group: group, accLen: accLen, parts: parts, accs: accs, pq: pq, pqOff: pqOff}
	job := &buf.job
	threads := min(max(s.Threads, 1), items)
	if threads == 1 {
		sc := getScratch()
		for it := 0; it < items; it++ {
			job.run(it, sc)
		}
		scratches.Put(sc)
	} else {
		var wg sync.WaitGroup
		var next atomic.Int64
		for t := 0; t < threads; t++ {
			wg.Go(func() {
				sc := getScratch()
				for it := int(next.Add(1) - 1); it < items; it = int(next.Add(1) - 1) {
					job.run(it, sc)
				}
				scratches.Put(sc)
			})
		}
		wg.Wait()
	}
	for h := 0; h < s.Heads; h++ {
		g := h / group
		ps := parts[h*nChunks : (h+1)*nChunks]
		m := float32(math.Inf(-1))
		for _, p := range ps {
			m = max(m, p.max)
		}
		acc := ps[0].acc
		var sum float32
		for i, p := range ps {
			// The part holding the maximum (every part of a one-chunk decode) has f = e⁰ = 1:
			// neither the exponential nor the multiplications by it, which leave every value as
			// it is, are taken (AccLen values a head: twice the head's for a mixed cache).
			f := float32(1)
			if d := p.max - m; d != 0 {
				f = float32(math.Exp(float64(d)))
			}
			sum += p.sum * f
			if i == 0 {
				if f != 1 {
					kvq.ScaleF32s(acc, f)
				}
				continue
			}
			for j, x := range p.acc {
				acc[j] += x * f
			}
		}
		o := out[h*s.HeadDimV : (h+1)*s.HeadDimV]
		vals[g].Finish(o, acc)
		// In vector registers: the loop's products, and Finish's vector stores (a rotated
		// store's transform, a mixed cache's sum of its two parts) reach its loads whole, where
		// one load an element stalled on them.
		kvq.ScaleF32s(o, 1/sum)
	}
	return nil
}

// softmaxRows scales the n interleaved score columns of sco (sco[j·n+i] is cell j's score for
// query i) by scale, and replaces each by e^(x − mx[i]), mx[i] the column's maximum, with
// sums[i] the column's sum of those terms. On CPUs with AVX-512 and n dividing 16 (AVX2 + FMA
// and n dividing 8), with scale > 0, the whole vectors go through softmaxVec (the sums taken in
// 16 or 8 lanes; table-driven exponentials within expNeg's bound, the scale folded into their
// argument; without the floor test where the columns' minima allow); otherwise everything runs
// here, the sums added in cell order.
func softmaxRows(sco []float32, n int, scale float32, mx, sums []float32) {
	if done, ok := softmaxVec(sco, n, scale, mx, sums); ok {
		for j := done; j < len(sco); j++ {
			e := expNeg(sco[j] - mx[j%n])
			sco[j] = e
			sums[j%n] += e
		}
		return
	}
	for i := range mx {
		mx[i] = float32(math.Inf(-1))
		sums[i] = 0
	}
	for j := 0; j+n <= len(sco); j += n {
		row := sco[j : j+n]
		for i, x := range row {
			x *= scale
			row[i] = x
			if x > mx[i] {
				mx[i] = x
			}
		}
	}
	for j := 0; j+n <= len(sco); j += n {
		row := sco[j : j+n]
		for i, x := range row {
			e := expNeg(x - mx[i])
			row[i] = e
			sums[i] += e
		}
	}
}

// expFloor is the base-2 exponent at or below which a softmax weight is 0. The largest weight
// is 1, so with up to 2²⁰ cells the weights dropped add at most 2⁻⁴⁴ of the output, far below
// float32's resolution; kept, they reach the subnormal range, where every multiply-add that
// touches them takes a microcode assist (~100× slower: a decode over a sharp softmax ran 5–9×
// slower than over a flat one).
const expFloor = -64

// expNeg is e^x for x ≤ 0 (0 at or below 2^expFloor, and for NaN): 2^y = 2^n·2^f,
// y = x·log₂e, n = ⌈y−½⌉, f ∈ [−½, ½], with a degree-6 polynomial for 2^f (relative error
// below 2⁻²²).
func expNeg(x float32) float32 {
	y := x * 1.4426950408889634
	if !(y > expFloor) {
		return 0
	}
	n := int32(y - 0.5)
	f := y - float32(n)
	p := float32(1.5403530393381606e-4)
	p = p*f + 1.3333558146428443e-3
	p = p*f + 9.6181291076284772e-3
	p = p*f + 5.5504108664821580e-2
	p = p*f + 2.4022650695910071e-1
	p = p*f + 6.9314718055994531e-1
	p = p*f + 1
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// MultiScores writes out[j·n+i] = pq_i·k_{lo+j} for the n prepared queries in pq
// (k.QueryLen() values each): k's MultiKeys path when it has one, else Scores query by query.
// Stores that wrap others (kvcache's FP16 overlay) use it for the cells they pass through.
func MultiScores(k Keys, pq []float32, n, lo int, out []float32) {
	sc := getScratch()
	scoresMulti(k, pq, n, k.QueryLen(), lo, out, sc)
	scratches.Put(sc)
}

// MultiAccumulate adds Σ_j w[j·n+i]·v_{lo+j} to acc[i·v.AccLen():] for i < n: v's MultiValues
// path when it has one, else Accumulate weight column by weight column.
func MultiAccumulate(v Values, acc []float32, n int, w []float32, lo int) {
	sc := getScratch()
	accumulateMulti(v, acc, n, v.AccLen(), w, lo, sc)
	scratches.Put(sc)
}

// scoresMulti writes out[j·n+i] = pq_i·k_{lo+j} for the n prepared queries in pq (ql values
// each): through MultiKeys when k offers it, else query by query.
func scoresMulti(k Keys, pq []float32, n, ql, lo int, out []float32, sc *scratch) {
	if mk, ok := k.(MultiKeys); ok {
		mk.ScoresMulti(pq, n, lo, out)
		return
	}
	m := len(out) / n
	if n == 1 {
		k.Scores(pq[:ql], lo, out)
		return
	}
	t := sc.tmp(m)
	for i := 0; i < n; i++ {
		k.Scores(pq[i*ql:(i+1)*ql], lo, t)
		for j, x := range t {
			out[j*n+i] = x
		}
	}
}

// accumulateMulti adds Σ_j w[j·n+i]·v_{lo+j} to acc[i·al:(i+1)·al] for i < n: through
// MultiValues when v offers it, else accumulator by accumulator.
func accumulateMulti(v Values, acc []float32, n, al int, w []float32, lo int, sc *scratch) {
	if mv, ok := v.(MultiValues); ok {
		mv.AccumulateMulti(acc, n, w, lo)
		return
	}
	if n == 1 {
		v.Accumulate(acc[:al], w, lo)
		return
	}
	m := len(w) / n
	t := sc.tmp(m)
	for i := 0; i < n; i++ {
		for j := range t {
			t[j] = w[j*n+i]
		}
		v.Accumulate(acc[i*al:(i+1)*al], t, lo)
	}
}

// decodeBuf is one Decode call's parts, accumulators and work-item state, pooled across calls.
type decodeBuf struct {
	parts []part
	accs  []float32
	pq    []float32
	pqOff []int
	job   decodeJob
}

// queries returns n values of prepared-query storage.
func (b *decodeBuf) queries(n int) []float32 {
	if cap(b.pq) < n {
		b.pq = make([]float32, n)
	}
	return b.pq[:n]
}

// offsets returns n offsets, the first 0.
func (b *decodeBuf) offsets(n int) []int {
	if cap(b.pqOff) < n {
		b.pqOff = make([]int, n)
	}
	b.pqOff = b.pqOff[:n]
	b.pqOff[0] = 0
	return b.pqOff
}

// decodeJob is what a Decode work item needs: the call's arguments and its chunking.
type decodeJob struct {
	s                                     Shape
	keys                                  []Keys
	vals                                  []Values
	lo, hi, chunk, nChunks, group, accLen int
	parts                                 []part
	accs                                  []float32
	// pq holds the prepared queries, KV head g's group at pq[pqOff[g]:pqOff[g+1]].
	pq    []float32
	pqOff []int
}

// run computes work item item (KV head item/nChunks, chunk item%nChunks): its queries'
// scores over the chunk, their softmax, and the weighted sum of the chunk's values, left as
// one part per query head.
//
// Software prefetches around the kernels, to overlap one phase's memory reads with another's
// compute, did not pay on Zen 4 (a VM, 2 vCPUs shared, load 7–9; one-thread decode at 131072
// cells, 8 KV heads, thread CPU, ns a cell of one KV head, min of 5–9 rounds alternated):
//   - the scores in sub-calls of S rows, each followed by a prefetch of every 64-byte line of
//     its rows' values (PREFETCHT0, T1, T2 or NTA): S = 512, turbo4 9.6 → 11.3–11.7, q4_0
//     11.1 → 12.5–12.8, f16 23.8 → 27.3–29.1. The sub-calls alone cost 0.3–0.45 µs each
//     (S = 64: turbo4 9.8 → 14.2 without a prefetch);
//   - the values in sub-calls, each followed by a prefetch of the next work item's key rows
//     in proportion: turbo4 10.6 → 13.2–13.9, q4_0 12.2 → 14.6–14.9, f16 26.4 → 31.7–33.0;
//     with 4096-cell chunks, whose keys and values fit in L2 together, turbo4 11.0 → 13.2.
//     A prefetch from DRAM costs about its line's transfer (2.0–2.3 ns a line alone, every
//     hint, bursts of 8 to 4096 lines) and hides little of it behind work between bursts;
//   - one line a 4 KiB page instead of every line: the values' pages during the scores (two
//     sub-calls a chunk) q4_0 11.3 → 11.0, turbo4 10.1 → 9.9; the next item's key pages during
//     the values f16 25.7 → 24.1, bf16 27.3 → 25.8, q4_0 +3%. What that bought was the TLB
//     miss a page, which huge pages remove: over stores on transparent huge pages (kvcache's
//     row stores) neither pays (turbo4 9.4 → 9.5–9.7, q4_0 10.8 → 10.9–11.1).
//
// Chunks of 4096 or 8192 cells instead of 16384 were slower too (turbo4 10.5 → 11.0 and 10.8).
func (j *decodeJob) run(item int, sc *scratch) {
	s, group, accLen := j.s, j.group, j.accLen
	g, c := item/j.nChunks, item%j.nChunks
	a, b := j.lo+c*j.chunk, min(j.lo+(c+1)*j.chunk, j.hi)
	m := b - a
	ql := j.keys[g].QueryLen()
	pq := j.pq[j.pqOff[g]:j.pqOff[g+1]]
	sco := sc.scores(group * m)
	scoresMulti(j.keys[g], pq, group, ql, a, sco, sc)
	mx, sums := sc.heads(group)
	scale := s.Scale
	if s.SoftCap > 0 {
		softCap(sco, scale, s.SoftCap)
		scale = 1
	}
	softmaxRows(sco, group, scale, mx, sums)
	acc := j.accs[item*group*accLen : (item+1)*group*accLen]
	accumulateMulti(j.vals[g], acc, group, accLen, sco, a, sc)
	for i := 0; i < group; i++ {
		j.parts[(g*group+i)*j.nChunks+c] = part{max: mx[i], sum: sums[i], acc: acc[i*accLen : (i+1)*accLen]}
	}
}

// softCap writes x = c·tanh(scale·x/c) for every score.
func softCap(sco []float32, scale, c float32) {
	k := float64(scale / c)
	for i, x := range sco {
		sco[i] = c * float32(math.Tanh(float64(x)*k))
	}
}

// putDecodeBuf returns b to the pool without the references its job holds.
func putDecodeBuf(b *decodeBuf) {
	b.job = decodeJob{}
	decodeBufs.Put(b)
}

var decodeBufs sync.Pool // *decodeBuf

func getDecodeBuf(nParts, nAcc int) *decodeBuf {
	b, _ := decodeBufs.Get().(*decodeBuf)
	if b == nil {
		b = &decodeBuf{}
	}
	if cap(b.parts) < nParts {
		b.parts = make([]part, nParts)
	}
	if cap(b.accs) < nAcc {
		b.accs = make([]float32, nAcc)
	}
	b.parts, b.accs = b.parts[:nParts], b.accs[:nAcc]
	return b
}

var scratches sync.Pool // *scratch

func getScratch() *scratch {
	if sc, ok := scratches.Get().(*scratch); ok {
		return sc
	}
	return &scratch{}
}

// scratch holds one goroutine's reusable buffers.
type scratch struct{ s, t, mx, sums []float32 }

func (sc *scratch) scores(n int) []float32 {
	if cap(sc.s) < n {
		sc.s = make([]float32, n)
	}
	return sc.s[:n]
}

func (sc *scratch) tmp(n int) []float32 {
	if cap(sc.t) < n {
		sc.t = make([]float32, n)
	}
	return sc.t[:n]
}

// heads returns the per-query maxima and sums of one work item.
func (sc *scratch) heads(n int) (mx, sums []float32) {
	if cap(sc.mx) < n {
		sc.mx, sc.sums = make([]float32, n), make([]float32, n)
	}
	return sc.mx[:n], sc.sums[:n]
}
