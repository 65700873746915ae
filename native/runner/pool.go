package runner

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/kvlab/kvlab/native/backend"
)

// Sequence is one generation's state: a KV cache and the tokens it holds (its committed
// cells, in order).
type Sequence struct {
	cache  backend.Cache
	tokens []int32
	used   time.Time
}

// Len is the number of cells the sequence holds.
func (s *Sequence) Len() int { return s.cache.Len() }

// Tokens are the tokens the sequence holds; valid until the next forward pass.
func (s *Sequence) Tokens() []int32 { return s.tokens }

// Step is one sequence's share of a forward pass: Tokens run at its next positions and its
// logits are written to Logits (one row, a row per token, or none; backend.Cache.Forward's
// contract).
type Step struct {
	Seq    *Sequence
	Tokens []int32
	Logits []float32
}

// Scheduler runs forward passes: it decides which of the steps it is given share one pass of
// the backend. A batch may hold several sequences (at most one step each); Forward returns
// when every step has run or one failed, and a sequence's tokens grow by its step's on success.
type Scheduler interface {
	Forward(ctx context.Context, batch []Step) error
}

// Serial runs each step as a forward pass of its own, in order: one sequence per pass.
type Serial struct{}

// Forward runs the steps one after the other.
func (Serial) Forward(_ context.Context, batch []Step) error {
	for _, st := range batch {
		if err := st.Seq.cache.Forward(st.Tokens, st.Logits); err != nil {
			return err
		}
		st.Seq.tokens = append(st.Seq.tokens, st.Tokens...)
	}
	return nil
}

// Pool hands out sequences, keeping up to keep idle ones with their contents so that a
// generation whose prompt starts like an earlier one (the next turn of a chat) reuses the
// cached prefix instead of prefilling it again.
type Pool struct {
	newCache func() (backend.Cache, error)
	keep     int
	// per is the memory of one cache.
	per int64

	mu     sync.Mutex
	idle   []*Sequence
	inUse  int
	closed bool
}

// NewPool makes a pool of caches from newCache, one of which it allocates at once (and keeps
// idle) to learn a cache's memory.
func NewPool(newCache func() (backend.Cache, error), keep int) (*Pool, error) {
	probe, err := newCache()
	if err != nil {
		return nil, err
	}
	return &Pool{newCache: newCache, keep: keep, per: probe.Bytes(), idle: []*Sequence{{cache: probe, used: time.Now()}}}, nil
}

// Get returns the idle sequence sharing the longest prefix with prompt (the least recently
// used on a tie), truncated to that prefix — at most len(prompt)−1 cells, so the last prompt
// token is always run to produce logits — or a new sequence.
func (p *Pool) Get(prompt []int32) (*Sequence, error) {
	p.mu.Lock()
	best, bestLen := -1, -1
	for i, s := range p.idle {
		n := commonPrefix(s.tokens, prompt)
		if n > bestLen || (n == bestLen && s.used.Before(p.idle[best].used)) {
			best, bestLen = i, n
		}
	}
	var s *Sequence
	if best >= 0 && (bestLen > 0 || len(p.idle)+p.inUse >= p.keep) {
		s = p.idle[best]
		p.idle = append(p.idle[:best], p.idle[best+1:]...)
	}
	p.inUse++
	p.mu.Unlock()
	release := func(err error) (*Sequence, error) {
		p.mu.Lock()
		p.inUse--
		p.mu.Unlock()
		return nil, err
	}
	if s == nil {
		c, err := p.newCache()
		if err != nil {
			return release(err)
		}
		return &Sequence{cache: c}, nil
	}
	keep := min(bestLen, len(prompt)-1)
	if keep < s.cache.Len() {
		// A cache that cannot truncate (the device cache, for now) is reset and the prompt
		// prefilled again.
		if keep == 0 || s.cache.Truncate(keep) != nil {
			if err := s.cache.Reset(); err != nil {
				s.cache.Free()
				return release(err)
			}
			keep = 0
		}
	}
	s.tokens = s.tokens[:keep]
	return s, nil
}

// Put returns a sequence to the pool, dropping the least recently used idle one past keep.
func (p *Pool) Put(s *Sequence) {
	s.used = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inUse--
	if p.closed || s.cache.Len() != len(s.tokens) {
		s.cache.Free()
		return
	}
	p.idle = append(p.idle, s)
	for len(p.idle) > 0 && len(p.idle)+p.inUse > p.keep {
		oldest := 0
		for i, x := range p.idle {
			if x.used.Before(p.idle[oldest].used) {
				oldest = i
			}
		}
		p.idle[oldest].cache.Free()
		p.idle = append(p.idle[:oldest], p.idle[oldest+1:]...)
	}
}

// Bytes is the memory of the caches in use and kept.
func (p *Pool) Bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.per * int64(len(p.idle)+p.inUse)
}

// PerCache is the memory of one cache.
func (p *Pool) PerCache() int64 { return p.per }

// Close drops the idle caches and keeps no more.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.idle {
		s.cache.Free()
	}
	p.closed, p.idle = true, nil
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// stopper finds stop strings in streamed text, holding back a tail that may be the start of
// one so that no part of a stop string is ever emitted.
type stopper struct {
	stops   []string
	pending string
}

func newStopper(stops []string) *stopper {
	var s []string
	for _, x := range stops {
		if x != "" {
			s = append(s, x)
		}
	}
	return &stopper{stops: s}
}

// add appends text and returns what can be emitted; hit reports a stop string, after which the
// returned text is everything before it.
func (s *stopper) add(text string) (out string, hit bool) {
	if len(s.stops) == 0 {
		return text, false
	}
	s.pending += text
	first := -1
	for _, x := range s.stops {
		if i := strings.Index(s.pending, x); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first >= 0 {
		out, s.pending = s.pending[:first], ""
		return out, true
	}
	hold := 0
	for _, x := range s.stops {
		for k := min(len(x)-1, len(s.pending)); k > hold; k-- {
			if strings.HasSuffix(s.pending, x[:k]) {
				hold = k
				break
			}
		}
	}
	out, s.pending = s.pending[:len(s.pending)-hold], s.pending[len(s.pending)-hold:]
	return out, false
}

// flush returns the held-back text at the end of a generation.
func (s *stopper) flush() string {
	out := s.pending
	s.pending = ""
	return out
}
