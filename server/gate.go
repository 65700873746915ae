package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrBusy is returned when every generation slot is taken and the queue is full (or the wait
// in the queue ran out); handlers answer it with 503 and a "busy" JSON error.
var ErrBusy = errors.New("server busy")

// ErrDraining is returned for new work while the server shuts down.
var ErrDraining = errors.New("the server is shutting down")

// busyError says how busy the server was.
type busyError struct {
	running, queued, maxQueue int
	waited                    time.Duration
}

func (e *busyError) Error() string {
	if e.waited > 0 {
		return fmt.Sprintf("server busy: waited %s in the queue for one of %d generation slots; retry later", e.waited.Round(time.Second), e.running)
	}
	return fmt.Sprintf("server busy: %d generations running and %d queued (the most allowed); retry later", e.running, e.queued)
}

func (e *busyError) Unwrap() error { return ErrBusy }

// gate admits at most slots generations at once and lets up to maxQueue more wait, each for at
// most wait; past that it refuses at once with ErrBusy.
type gate struct {
	slots    chan struct{}
	maxQueue int
	wait     time.Duration
	queued   atomic.Int64
	draining atomic.Bool
	m        *metrics
}

func newGate(slots, maxQueue int, wait time.Duration, m *metrics) *gate {
	return &gate{slots: make(chan struct{}, slots), maxQueue: maxQueue, wait: wait, m: m}
}

// acquire takes a slot, queueing when none is free; release gives it back.
func (g *gate) acquire(ctx context.Context) (release func(), err error) {
	if g.draining.Load() {
		return nil, ErrDraining
	}
	release = func() {
		<-g.slots
		g.m.active.Dec()
	}
	select {
	case g.slots <- struct{}{}:
		g.m.active.Inc()
		return release, nil
	default:
	}
	if q := g.queued.Add(1); q > int64(g.maxQueue) {
		g.queued.Add(-1)
		g.m.busy.Inc()
		return nil, &busyError{running: cap(g.slots), queued: int(q - 1), maxQueue: g.maxQueue}
	}
	g.m.queue.Inc()
	defer func() {
		g.queued.Add(-1)
		g.m.queue.Dec()
	}()
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		g.m.active.Inc()
		return release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		g.m.busy.Inc()
		return nil, &busyError{running: cap(g.slots), waited: g.wait}
	}
}

// running is the number of slots taken.
func (g *gate) running() int { return len(g.slots) }
