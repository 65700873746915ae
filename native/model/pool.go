package model

import (
	"sync"
	"sync/atomic"
)

// Pool runs parallel loops on a fixed set of goroutines started once and reused by every call,
// so a matrix product costs a few channel operations, not a goroutine per row, and no
// allocation: the loop state lives in the Pool. A Pool is safe for concurrent use (a loop
// started while another runs on the same Pool runs on its caller's goroutine alone); a nil
// *Pool, or one of a single thread, runs every loop on the caller's goroutine. A loop body must
// not start another loop on the same Pool.
type Pool struct {
	threads int
	jobs    chan *job
	quit    chan struct{}
	closed  atomic.Bool
	once    sync.Once
	busy    sync.Mutex // held by the loop that owns j
	j       job
}

// Ranger is a loop body: Range(lo, hi) handles indexes lo ≤ i < hi.
type Ranger interface{ Range(lo, hi int) }

// rangeFunc adapts a function to Ranger.
type rangeFunc func(lo, hi int)

func (f rangeFunc) Range(lo, hi int) { f(lo, hi) }

// job is one parallel loop: chunks of [0, n) handed out one at a time through next to the
// caller and to every worker that picks the job up; wg counts the workers still in run.
type job struct {
	r       Ranger
	n, step int
	next    atomic.Int64
	wg      sync.WaitGroup
}

// NewPool starts threads−1 worker goroutines (the caller of For is the last thread). threads
// below 1 means 1.
func NewPool(threads int) *Pool {
	threads = max(threads, 1)
	p := &Pool{threads: threads, jobs: make(chan *job, threads), quit: make(chan struct{})}
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
			j.wg.Done()
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
		j.r.Range(lo, min(lo+j.step, j.n))
	}
}

// For calls fn(lo, hi) over disjoint ranges covering [0, n) and returns when every call has
// returned. Ranges are at least grain long (the last may be shorter) and there are at most
// four per thread. The calls run concurrently on the pool's threads; with one thread, or when
// n ≤ grain, fn(0, n) runs on the caller.
func (p *Pool) For(n, grain int, fn func(lo, hi int)) { p.ForRange(n, grain, rangeFunc(fn)) }

// ForRange is For with the body as a Ranger: a caller that keeps its Ranger (a pointer to a
// reused struct) runs the loop without allocating.
func (p *Pool) ForRange(n, grain int, r Ranger) {
	if n <= 0 {
		return
	}
	t := p.Threads()
	if t == 1 || n <= grain || !p.busy.TryLock() {
		r.Range(0, n)
		return
	}
	defer p.busy.Unlock()
	step := max(grain, 1, (n+4*t-1)/(4*t))
	chunks := (n + step - 1) / step
	j := &p.j
	j.r, j.n, j.step = r, n, step
	j.next.Store(0)
	for range min(t-1, chunks-1) {
		j.wg.Add(1)
		select {
		case p.jobs <- j:
		default: // cannot happen while busy is held (the workers are idle); run it here
			j.wg.Done()
		}
	}
	j.run()
	j.wg.Wait()
	j.r = nil
}
