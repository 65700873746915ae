package cuda

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kvlab/kvlab/native/cuda/internal/cu"
)

// Stream is a CUDA stream created with default flags, so it synchronizes with the legacy
// default stream: a synchronous copy after a launch on it sees the launch's results. A nil
// *Stream stands for the default stream everywhere a stream is taken.
type Stream struct {
	c      *Context
	h      cu.Stream
	closed atomic.Bool
}

func (s *Stream) handle() cu.Stream {
	if s == nil {
		return 0
	}
	return s.h
}

// NewStream creates a stream (cuStreamCreate, flags 0).
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{c: c}
	if err := c.do(func() error { return c.x.check("cuStreamCreate", c.drv.StreamCreate(&s.h, 0)) }); err != nil {
		return nil, err
	}
	if err := c.track(func() { c.streams[s] = struct{}{} }); err != nil {
		return nil, err
	}
	return s, nil
}

// Synchronize waits for the stream's work (cuStreamSynchronize).
func (s *Stream) Synchronize() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.c.do(func() error { return s.c.x.check("cuStreamSynchronize", s.c.drv.StreamSync(s.h)) })
}

// Close destroys the stream. It is idempotent.
func (s *Stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.c.untrack(func() { delete(s.c.streams, s) })
	return s.c.do(func() error { return s.c.x.check("cuStreamDestroy_v2", s.c.drv.StreamDestroy(s.h)) })
}

// Event is a CUDA event with timing enabled, for measuring device time between two points
// of a stream.
type Event struct {
	c      *Context
	h      cu.Event
	closed atomic.Bool
}

// NewEvent creates an event (cuEventCreate, default flags: timing on).
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{c: c}
	if err := c.do(func() error { return c.x.check("cuEventCreate", c.drv.EventCreate(&e.h, 0)) }); err != nil {
		return nil, err
	}
	if err := c.track(func() { c.events[e] = struct{}{} }); err != nil {
		return nil, err
	}
	return e, nil
}

// Record records the event on stream s (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	if e.closed.Load() {
		return ErrClosed
	}
	return e.c.do(func() error { return e.c.x.check("cuEventRecord", e.c.drv.EventRecord(e.h, s.handle())) })
}

// Synchronize waits until the event has happened.
func (e *Event) Synchronize() error {
	if e.closed.Load() {
		return ErrClosed
	}
	return e.c.do(func() error { return e.c.x.check("cuEventSynchronize", e.c.drv.EventSync(e.h)) })
}

// Since returns the device time from start to e, both recorded and completed
// (cuEventElapsedTime; resolution about 0.5 µs).
func (e *Event) Since(start *Event) (time.Duration, error) {
	if e.closed.Load() || start.closed.Load() {
		return 0, ErrClosed
	}
	var ms float32
	err := e.c.do(func() error { return e.c.x.check("cuEventElapsedTime", e.c.drv.EventElapsed(&ms, start.h, e.h)) })
	if err != nil {
		return 0, err
	}
	if ms < 0 {
		return 0, fmt.Errorf("cuda: negative elapsed time %g ms", ms)
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close destroys the event. It is idempotent.
func (e *Event) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.c.untrack(func() { delete(e.c.events, e) })
	return e.c.do(func() error { return e.c.x.check("cuEventDestroy_v2", e.c.drv.EventDestroy(e.h)) })
}
