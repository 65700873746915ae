package cuda

import (
	"runtime"
	"sync"
)

// executor runs closures on one goroutine locked to one OS thread, the thread on which a
// context is current. Every driver call of a Context goes through its executor, so the
// context is current wherever the driver runs, and no caller's thread ever has it pushed.
//
// do must not be called from inside a closure that do is running (it would deadlock); the
// typed API never does.
type executor struct {
	work   chan func()
	mu     sync.Mutex // guards closed against the send in do
	stop   chan struct{}
	done   chan struct{}
	closed bool
}

// newExecutor starts the goroutine, locks it to its thread and runs setup there; if setup
// fails the goroutine exits and the error is returned.
func newExecutor(setup func() error) (*executor, error) {
	e := &executor{work: make(chan func()), stop: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(e.done)
		runtime.LockOSThread()
		// The thread stays locked: it carries a current CUDA context and is discarded when
		// the goroutine exits.
		if err := setup(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for {
			select {
			case fn := <-e.work:
				fn()
			case <-e.stop:
				return
			}
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return e, nil
}

// do runs fn on the executor's thread and returns its error; after close it returns
// ErrClosed without running fn.
func (e *executor) do(fn func() error) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	res := make(chan error, 1)
	e.work <- func() { res <- fn() }
	e.mu.Unlock()
	return <-res
}

// close runs last on the executor's thread, then stops the goroutine; later calls of do
// return ErrClosed. It is idempotent and returns last's error the first time.
func (e *executor) close(last func() error) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	res := make(chan error, 1)
	e.work <- func() { res <- last() }
	err := <-res
	e.closed = true
	close(e.stop)
	e.mu.Unlock()
	<-e.done
	return err
}
