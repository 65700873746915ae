package model

import (
	"sync"
	"sync/atomic"
)

// Pool runs parallel loops on a fixed set of goroutines started once and reused by every call,
// so a matrix product costs a few channel operations, not a goroutine per row. A Pool is safe
// for concurrent use; a nil *Pool, or one of a single thread, runs every loop on the caller's
// goroutine. A loop body must not start another loop on the same Pool.
type Pool struct {
	threads int
	jobs    chan *job
	quit    chan struct{}
	closed  atomic.Bool
	once    sync.Once
}

// job is one parallel loop: chunks of [0, n) handed out one at a time through next to the
// caller and to every worker that picks the job up; wg counts the chunks not yet finished.
type job struct {
	fn      func(lo, hi int)
	n, step int
	next    atomic.Int64
	wg      sync.WaitGroup
}

// NewPool starts threads−1 worker goroutines (the caller of For is the last thread). threads
// below 1 means 1.
func NewPool(threads int) *Pool {
	threads = max(threads, 1)
	p := &Pool{threads: threads, jobs: make(chan *job, 4*threads), quit: make(chan struct{})}
	for range threads - 1 {
		go p.worker()
	}
	return p
}

// Threads is the number of goroutines a loop runs on, the caller included.
func (p *Pool) Threads() int {
	if p == nil || p.closed.Load() {
		return 1
	}
	return p.threads
}

// Close stops the workers. Loops started after Close run on the caller's goroutine only.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		p.closed.Store(true)
		close(p.quit)
	})
}

func (p *Pool) worker() {
	for {
		select {
		case j := <-p.jobs:
			j.run()
		case <-p.quit:
			return
		}
	}
}

func (j *job) run() {
	for {
		c := int(j.next.Add(1) - 1)
		lo := c * j.step
		if lo >= j.n {
			return
		}
		j.fn(lo, min(lo+j.step, j.n))
		j.wg.Done()
	}
}

// For calls fn(lo, hi) over disjoint ranges covering [0, n) and returns when every call has
// returned. Ranges are at least grain long (the last may be shorter) and there are at most
// four per thread. The calls run concurrently on the pool's threads; with one thread, or when
// n ≤ grain, fn(0, n) runs on the caller.
func (p *Pool) For(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	t := p.Threads()
	if t == 1 || n <= grain {
		fn(0, n)
		return
	}
	step := max(grain, 1, (n+4*t-1)/(4*t))
	chunks := (n + step - 1) / step
	j := &job{fn: fn, n: n, step: step}
	j.wg.Add(chunks)
	for range min(t-1, chunks-1) {
		select {
		case p.jobs <- j:
		default: // every worker is busy: the caller takes the chunks
		}
	}
	j.run()
	j.wg.Wait()
}

// Ranger is a loop body: Range(lo, hi) handles indexes lo ≤ i < hi.
type Ranger interface{ Range(lo, hi int) }

// ForRange is For with the body as a Ranger.
func (p *Pool) ForRange(n, grain int, r Ranger) { p.For(n, grain, r.Range) }
