package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/kvcache"
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
	// Prefill marks prompt tokens: BatchConfig.OnPass counts them as prefill whatever their
	// number (after a reused prefix, a prompt's last token is a step of one).
	Prefill bool
	// Expected marks a generation's first step after Batching.Expect: queueing it (or its
	// refusal) ends the expectation.
	Expected bool
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
//
// A paged pool (NewPagedPool) also admits sequences: Get reserves the pages a sequence may
// grow to, evicting idle sequences (least recently used first) when the budget is short and
// waiting for running ones to end when that is not enough; a new sequence shares the pages of
// the idle one with the longest common prefix instead of taking it (kvcache.Cache.ShareFrom).
type Pool struct {
	newCache func() (backend.Cache, error)
	keep     int
	// per is the memory of one cache (a full-context sequence's draw on a paged pool).
	per   int64
	pages *kvcache.PagePool // nil: contiguous caches, one per sequence

	mu      sync.Mutex
	idle    []*Sequence
	inUse   int
	waiting int
	closed  bool
	// idled is closed and replaced (under mu) whenever a sequence becomes idle or the pool
	// closes: a paged Get waiting for room may now evict that sequence (or must fail), and the
	// page pool's Changed does not tell it so when no bytes came back (a sequence that took
	// every page it reserved).
	idled chan struct{}
}

// ErrKVBudget: a request needs more KV memory than the whole budget holds.
var ErrKVBudget = errors.New("the request needs more KV memory than the KV budget holds")

// NewPool makes a pool of caches from newCache, one of which it allocates at once (and keeps
// idle) to learn a cache's memory.
func NewPool(newCache func() (backend.Cache, error), keep int) (*Pool, error) {
	probe, err := newCache()
	if err != nil {
		return nil, err
	}
	return &Pool{newCache: newCache, keep: keep, per: probe.Bytes(), idle: []*Sequence{{cache: probe, used: time.Now()}}}, nil
}

// NewPagedPool makes a pool of paged caches from newCache, whose caches must take their
// pages from pages (the CPU backend's, made with kvcache.Config.Pages); ctx is a full
// sequence's cells.
func NewPagedPool(newCache func() (backend.Cache, error), keep int, pages *kvcache.PagePool, ctx int) (*Pool, error) {
	probe, err := newCache()
	if err != nil {
		return nil, err
	}
	defer probe.Free()
	if kv, ok := probe.(backend.KVHolder); !ok || kv.KVCache().Pool() != pages {
		return nil, fmt.Errorf("runner: the backend's caches (%T) do not take pages from the pool", probe)
	}
	return &Pool{newCache: newCache, keep: keep, per: pages.SessionBytes(ctx), pages: pages, idled: make(chan struct{})}, nil
}

// Get returns a sequence for a generation of prompt that may grow to cells cells, holding the
// longest prefix of prompt an idle sequence shares — at most len(prompt)−1 cells, so the last
// prompt token is always run to produce logits — or nothing. A contiguous pool takes that idle
// sequence (the least recently used on a tie), truncated; a paged one shares its pages, and
// waits (until ctx is done) while the budget has no room for cells cells, failing at once
// with ErrKVBudget when the whole budget has not.
func (p *Pool) Get(ctx context.Context, prompt []int32, cells int) (*Sequence, error) {
	return p.get(ctx, prompt, cells, nil)
}

// get is Get that calls blocked(true) before each wait for pages and blocked(false) after it
// (blocked nil: none): the runner withdraws its batching announcement (Batching.Expect) while
// the generation waits for room, so no arrival gather waits for it meanwhile.
func (p *Pool) get(ctx context.Context, prompt []int32, cells int, blocked func(bool)) (*Sequence, error) {
	if p.pages == nil {
		return p.getContiguous(prompt)
	}
	if need, budget := p.pages.SessionBytes(cells), p.pages.Budget(); need > budget {
		return nil, fmt.Errorf("%w: %d cells draw %d KiB (%d pages of %d KiB and %d KiB per sequence outside them), the budget is %d KiB",
			ErrKVBudget, cells, need>>10, kvcache.PagesFor(cells), p.pages.PageBytes()>>10, p.pages.FixedBytes()>>10, budget>>10)
	}
	waited := false
	defer func() {
		if waited {
			p.mu.Lock()
			p.waiting--
			p.mu.Unlock()
		}
	}()
	for {
		// Both taken before the try: whatever frees room after the try has begun closes one.
		changed := p.pages.Changed()
		s, idled, err := p.tryPaged(prompt, cells)
		if s != nil || err != nil {
			return s, err
		}
		if !waited {
			waited = true
			p.mu.Lock()
			p.waiting++
			p.mu.Unlock()
		}
		if blocked != nil {
			blocked(true)
		}
		select {
		case <-changed:
		case <-idled:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if blocked != nil {
			blocked(false)
		}
	}
}

// getContiguous is Get for a contiguous pool.
func (p *Pool) getContiguous(prompt []int32) (*Sequence, error) {
	p.mu.Lock()
	best, bestLen := p.longestPrefixLocked(prompt)
	var s *Sequence
	if best >= 0 && (bestLen > 0 || len(p.idle)+p.inUse >= p.keep) {
		s = p.takeLocked(best)
	}
	p.inUse++
	p.mu.Unlock()
	if s == nil {
		c, err := p.newCache()
		if err != nil {
			return p.release(err)
		}
		return &Sequence{cache: c}, nil
	}
	keep := max(min(bestLen, len(prompt)-1), 0)
	if keep < s.cache.Len() {
		// A cache that cannot truncate (the device cache, for now) is reset and the prompt
		// prefilled again.
		if keep == 0 || s.cache.Truncate(keep) != nil {
			if err := s.cache.Reset(); err != nil {
				s.cache.Free()
				return p.release(err)
			}
			keep = 0
		}
	}
	s.tokens = s.tokens[:keep]
	return s, nil
}

// tryPaged is one attempt of a paged Get: the sequence, or nil and no error when the budget
// has no room now; then idled is closed once a sequence becomes idle after the attempt.
func (p *Pool) tryPaged(prompt []int32, cells int) (_ *Sequence, idled <-chan struct{}, _ error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idled = p.idled
	if p.closed {
		return nil, nil, errors.New("runner: the pool is closed")
	}
	best, n := p.longestPrefixLocked(prompt)
	n = max(min(n, len(prompt)-1), 0)
	var src *Sequence
	if best >= 0 && n > 0 && p.pages.Shares() {
		src = p.idle[best]
	} else {
		n = 0
	}
	// Checked before a cache is made: making one and freeing it wakes every waiting Get.
	for !p.pages.Fits(p.pages.DrawBytes(cells, n)) {
		if !p.dropOldestLocked(src) {
			if src == nil {
				return nil, idled, nil
			}
			src, n = nil, 0 // the prefix's own pages are what the budget lacks
		}
	}
	c, err := p.newCache()
	if errors.Is(err, kvcache.ErrNoPages) {
		return nil, idled, nil
	}
	if err != nil {
		return nil, nil, err
	}
	kv := c.(backend.KVHolder).KVCache()
	seq := &Sequence{cache: c}
	if src != nil {
		if err := kv.ShareFrom(src.cache.(backend.KVHolder).KVCache(), n); err == nil {
			seq.tokens = append(seq.tokens, src.tokens[:n]...)
		} else {
			// A ring past its window cannot share: the sequence prefills from scratch and needs
			// every page, the idle prefix of no use; idle sequences make room (so that a next
			// try, with them gone, waits rather than failing here again).
			for !p.pages.Fits(p.pages.DrawBytes(cells, 0)-p.pages.FixedBytes()) && p.dropOldestLocked(nil) {
			}
		}
	}
	if err := kv.Reserve(cells); err != nil {
		c.Free()
		if errors.Is(err, kvcache.ErrNoPages) {
			return nil, idled, nil
		}
		return nil, nil, err
	}
	p.inUse++
	return seq, nil, nil
}

func (p *Pool) release(err error) (*Sequence, error) {
	p.mu.Lock()
	p.inUse--
	p.mu.Unlock()
	return nil, err
}

// longestPrefixLocked is the idle sequence sharing the longest prefix with prompt (the least
// recently used on a tie) and that length; −1 when none is idle.
func (p *Pool) longestPrefixLocked(prompt []int32) (best, bestLen int) {
	best, bestLen = -1, -1
	for i, s := range p.idle {
		n := commonPrefix(s.tokens, prompt)
		if n > bestLen || (n == bestLen && s.used.Before(p.idle[best].used)) {
			best, bestLen = i, n
		}
	}
	return best, bestLen
}

// takeLocked removes idle sequence i from the idle list.
func (p *Pool) takeLocked(i int) *Sequence {
	s := p.idle[i]
	p.idle = append(p.idle[:i], p.idle[i+1:]...)
	return s
}

// dropOldestLocked frees the least recently used idle sequence other than except; false when
// there is none.
func (p *Pool) dropOldestLocked(except *Sequence) bool {
	oldest := -1
	for i, x := range p.idle {
		if x != except && (oldest < 0 || x.used.Before(p.idle[oldest].used)) {
			oldest = i
		}
	}
	if oldest < 0 {
		return false
	}
	p.takeLocked(oldest).cache.Free()
	return true
}

// Put returns a sequence to the pool, dropping the least recently used idle one past keep. A
// paged sequence gives back the reservation it did not use and wakes the Gets waiting for
// room, which may evict it now.
//
// The reservation goes back under the pool's lock, with the sequence made idle: a waiting Get
// woken by it (the page pool's Changed) and trying in between would find neither the room nor
// the sequence to evict, and wait again for a change that may never come.
func (p *Pool) Put(s *Sequence) {
	s.used = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if kv, ok := s.cache.(backend.KVHolder); ok && p.pages != nil {
		kv.KVCache().Unreserve()
	}
	p.inUse--
	if p.closed || s.cache.Len() != len(s.tokens) {
		s.cache.Free()
		return
	}
	p.idle = append(p.idle, s)
	for len(p.idle) > 0 && len(p.idle)+p.inUse > p.keep {
		p.dropOldestLocked(nil)
	}
	p.wakeLocked()
}

// wakeLocked wakes the paged Gets waiting for room (p.mu held).
func (p *Pool) wakeLocked() {
	if p.idled != nil {
		close(p.idled)
		p.idled = make(chan struct{})
	}
}

// Bytes is the memory of the caches in use and kept (a paged pool's: the budget drawn, pages
// and the caches' fixed bytes).
func (p *Pool) Bytes() int64 {
	if p.pages != nil {
		st := p.pages.Stats()
		return int64(st.Used)*st.PageBytes + st.FixedBytes
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.per * int64(len(p.idle)+p.inUse)
}

// PerCache is the memory of one cache (a paged pool's: what a full-context sequence draws).
func (p *Pool) PerCache() int64 { return p.per }

// Pages is a paged pool's page pool, else nil.
func (p *Pool) Pages() *kvcache.PagePool { return p.pages }

// Stats is the number of sequences in use, idle and waiting for pages.
func (p *Pool) Stats() (inUse, idle, waiting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inUse, len(p.idle), p.waiting
}

// Trim frees the idle sequences (the caches, or a paged pool's pages, kept for prefix reuse);
// the pool keeps idle ones again afterwards.
func (p *Pool) Trim() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.idle {
		s.cache.Free()
	}
	p.idle = nil
}

// Close drops the idle caches and keeps no more.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.idle {
		s.cache.Free()
	}
	p.closed, p.idle = true, nil
	p.wakeLocked() // a waiting Get fails now
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
