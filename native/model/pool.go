package model

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs parallel loops on a fixed set of worker goroutines started once and reused by
// every call. A worker that has finished a loop keeps watching for the next one for a short
// while (spinWait) before it parks, so the products of a decode step, which follow each other
// within microseconds, hand their chunks over through a few atomic operations instead of a
// goroutine wake-up each: the workers stay awake for the whole step and park between requests.
// A loop allocates nothing (ForRange; For allocates only what its closure does).
//
// A Pool is safe for concurrent use: one loop at a time runs on the workers, and a loop started
// while another runs (from another goroutine, or a loop body) runs on its caller alone. A nil
// *Pool, or one of a single thread, runs every loop on the caller's goroutine.
type Pool struct {
	threads int
	// busy is held by the caller of the loop that runs on the workers.
	busy sync.Mutex
	// gen numbers the loops: odd while the caller writes the next loop's fields, even once they
	// are published. A worker runs loop gen once.
	gen atomic.Uint64
	// active counts the workers inside a loop; the caller rewrites the fields only at 0.
	active atomic.Int32
	// The published loop: its body (fn or r), n indexes in chunks of step; next hands chunks
	// out, done counts those finished.
	fn         func(lo, hi int)
	r          Ranger
	n, step    int
	chunks     int64
	next, done atomic.Int64
	// waiting is 1 while the caller is parked on finished (the last chunk's worker sends), 2
	// once that worker has claimed the send.
	waiting  atomic.Int32
	finished chan struct{}
	workers  []*poolWorker
	closed   atomic.Bool
	once     sync.Once
}

// poolWorker is one worker's parking state: asleep is true while it is parked (or about to
// park) on wake; whoever flips it back sends the one wake-up.
type poolWorker struct {
	asleep atomic.Bool
	wake   chan struct{}
}

// spinWait is how long an idle worker watches for the next loop before parking: longer than
// the gap between the products of a decode step, short enough that an idle model burns no
// CPU. waitSpin is how long a caller that has run out of chunks watches for the workers' last
// ones before parking (about a chunk of a decode product; more only burns a core that a
// descheduled worker does not use when the machine is oversubscribed).
const (
	spinWait = 100 * time.Microsecond
	waitSpin = 30 * time.Microsecond
)

// NewPool starts threads−1 worker goroutines (the caller of For is the last thread). threads
// below 1 means 1.
func NewPool(threads int) *Pool {
	threads = max(threads, 1)
	p := &Pool{threads: threads, finished: make(chan struct{}, 1)}
	for range threads - 1 {
		w := &poolWorker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go p.worker(w)
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
		p.busy.Lock()
		p.gen.Add(2) // a loop of no chunks: spinning workers look at closed
		p.wakeAll()
		p.busy.Unlock()
	})
}

// wakeAll wakes the parked workers.
func (p *Pool) wakeAll() {
	for _, w := range p.workers {
		if w.asleep.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
}

func (p *Pool) worker(w *poolWorker) {
	seen := p.gen.Load() &^ 1
	for {
		g := p.gen.Load()
		if g == seen || g&1 == 1 {
			if p.closed.Load() {
				return
			}
			if !p.idle(w, seen) {
				return
			}
			continue
		}
		p.active.Add(1)
		if p.gen.Load() != g { // the caller is writing another loop: look again
			p.active.Add(-1)
			continue
		}
		seen = g
		p.run()
		p.active.Add(-1)
	}
}

// idle waits until gen moves past seen: spinning for spinWait, then parked. It reports false
// when the pool is closed.
func (p *Pool) idle(w *poolWorker, seen uint64) bool {
	start := time.Now()
	for i := 0; ; i++ {
		if g := p.gen.Load(); g != seen && g&1 == 0 {
			return true
		}
		if i&63 != 63 {
			continue
		}
		runtime.Gosched()
		if time.Since(start) < spinWait {
			continue
		}
		w.asleep.Store(true)
		if g := p.gen.Load(); (g != seen && g&1 == 0) || p.closed.Load() {
			if !w.asleep.CompareAndSwap(true, false) {
				<-w.wake // a caller flipped it and sends
			}
		} else {
			<-w.wake
		}
		return !p.closed.Load()
	}
}

// run takes chunks of the published loop until none is left.
func (p *Pool) run() {
	for {
		c := p.next.Add(1) - 1
		if c >= p.chunks {
			return
		}
		lo := int(c) * p.step
		hi := min(lo+p.step, p.n)
		if p.r != nil {
			p.r.Range(lo, hi)
		} else {
			p.fn(lo, hi)
		}
		if p.done.Add(1) == p.chunks && p.waiting.CompareAndSwap(1, 2) {
			p.finished <- struct{}{}
		}
	}
}

// For calls fn(lo, hi) over disjoint ranges covering [0, n) and returns when every call has
// returned. Ranges are at least grain long (the last may be shorter) and there are at most
// four per thread. The calls run concurrently on the pool's threads; with one thread, when
// n ≤ grain, or while another loop runs on the workers, fn(0, n) runs on the caller.
func (p *Pool) For(n, grain int, fn func(lo, hi int)) { p.loop(n, grain, fn, nil) }

// Ranger is a loop body: Range(lo, hi) handles indexes lo ≤ i < hi.
type Ranger interface{ Range(lo, hi int) }

// ForRange is For with the body as a Ranger (which, unlike a closure, need not allocate).
func (p *Pool) ForRange(n, grain int, r Ranger) { p.loop(n, grain, nil, r) }

func (p *Pool) loop(n, grain int, fn func(lo, hi int), r Ranger) {
	if n <= 0 {
		return
	}
	call := func(lo, hi int) {
		if r != nil {
			r.Range(lo, hi)
		} else {
			fn(lo, hi)
		}
	}
	t := p.Threads()
	if t == 1 || n <= grain || !p.busy.TryLock() {
		call(0, n)
		return
	}
	defer p.busy.Unlock()
	step := max(grain, 1, (n+4*t-1)/(4*t))
	// Unpublish the last loop and wait for the workers still inside it (they find no chunk
	// left), then publish this one.
	p.gen.Add(1)
	for i := 0; p.active.Load() != 0; i++ {
		if i&63 == 63 {
			runtime.Gosched()
		}
	}
	p.fn, p.r, p.n, p.step = fn, r, n, step
	p.chunks = int64((n + step - 1) / step)
	p.next.Store(0)
	p.done.Store(0)
	p.waiting.Store(0)
	p.gen.Add(1)
	p.wakeAll()
	p.run()
	p.wait()
	p.fn, p.r = nil, nil
}

// wait returns when every chunk of the published loop is done: spinning for waitSpin (a
// worker finishing its chunk), then parked until the last chunk's worker sends.
func (p *Pool) wait() {
	start := time.Now()
	for i := 0; p.done.Load() != p.chunks; i++ {
		if i&63 != 63 {
			continue
		}
		runtime.Gosched()
		if time.Since(start) < waitSpin {
			continue
		}
		p.waiting.Store(1)
		if p.done.Load() == p.chunks && p.waiting.CompareAndSwap(1, 0) {
			return
		}
		<-p.finished
		return
	}
}
