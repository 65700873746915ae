package attn

import (
	"fmt"
	"math"
	"sync"
)

// Shape is the attention geometry of one layer.
type Shape struct {
	Heads     int // query heads
	KVHeads   int // KV heads; Heads must be a multiple of it
	HeadDimK  int // values per query and key row
	HeadDimV  int // values per value row and per output head
	Scale     float32
	ChunkSize int // cells per work item on the fast path; 0 picks a default
	Threads   int // goroutines on the fast path; ≤ 1 runs on the caller's goroutine
}

// DefaultChunk is the number of cells one work item of the fast path covers.
const DefaultChunk = 1024

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
// through Keys.Scores and Values.Accumulate, the context split into chunks that run on up to
// s.Threads goroutines, and the chunks merged with the exact online-softmax combine
// (m = max m_i, sum = Σ sum_i·e^(m_i−m), acc = Σ acc_i·e^(m_i−m)). It agrees with the
// reference within float32 rounding of the sums involved.
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
		chunk = DefaultChunk
	}
	nChunks := (hi - lo + chunk - 1) / chunk
	group := s.Heads / s.KVHeads
	parts := make([]part, s.Heads*nChunks)
	items := s.Heads * nChunks
	accLen := vals[0].AccLen()
	accs := make([]float32, items*accLen)
	run := func(item int, sc *scratch) {
		h, c := item/nChunks, item%nChunks
		g := h / group
		a, b := lo+c*chunk, min(lo+(c+1)*chunk, hi)
		pq := keys[g].Prepare(sc.query(keys[g].QueryLen()), q[h*s.HeadDimK:(h+1)*s.HeadDimK])
		sco := sc.scores(b - a)
		keys[g].Scores(pq, a, sco)
		m := float32(math.Inf(-1))
		scale := s.Scale
		for i, x := range sco {
			x *= scale
			sco[i] = x
			if x > m {
				m = x
			}
		}
		var sum float32
		for i, x := range sco {
			// e^(x−m), x−m ≤ 0: 2^y = 2^n·2^f, n = ⌈y−½⌉, f ∈ [−½, ½], degree-6 polynomial.
			y := (x - m) * 1.4426950408889634
			var e float32
			if y > -126 {
				n := int32(y - 0.5)
				f := y - float32(n)
				p := float32(1.5403530393381606e-4)
				p = p*f + 1.3333558146428443e-3
				p = p*f + 9.6181291076284772e-3
				p = p*f + 5.5504108664821580e-2
				p = p*f + 2.4022650695910071e-1
				p = p*f + 6.9314718055994531e-1
				p = p*f + 1
				e = p * math.Float32frombits(uint32(n+127)<<23)
			}
			sco[i] = e
			sum += e
		}
		acc := accs[item*accLen : (item+1)*accLen]
		vals[g].Accumulate(acc, sco, a)
		parts[item] = part{max: m, sum: sum, acc: acc}
	}
	threads := min(max(s.Threads, 1), items)
	if threads == 1 {
		var sc scratch
		for it := 0; it < items; it++ {
			run(it, &sc)
		}
	} else {
		var wg sync.WaitGroup
		var next = make(chan int, items)
		for it := 0; it < items; it++ {
			next <- it
		}
		close(next)
		for t := 0; t < threads; t++ {
			wg.Go(func() {
				var sc scratch
				for it := range next {
					run(it, &sc)
				}
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
			f := float32(math.Exp(float64(p.max - m)))
			sum += p.sum * f
			if i == 0 {
				for j := range acc {
					acc[j] *= f
				}
				continue
			}
			for j, x := range p.acc {
				acc[j] += x * f
			}
		}
		o := out[h*s.HeadDimV : (h+1)*s.HeadDimV]
		vals[g].Finish(o, acc)
		inv := 1 / sum
		for i := range o {
			o[i] *= inv
		}
	}
	return nil
}

// scratch holds one goroutine's reusable buffers.
type scratch struct{ q, s []float32 }

func (sc *scratch) query(n int) []float32 {
	if cap(sc.q) < n {
		sc.q = make([]float32, n)
	}
	return sc.q[:n]
}

func (sc *scratch) scores(n int) []float32 {
	if cap(sc.s) < n {
		sc.s = make([]float32, n)
	}
	return sc.s[:n]
}
