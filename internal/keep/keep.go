// Package keep holds scratch objects between uses the way a sync.Pool does, with a few of them
// held strongly: a sync.Pool may be emptied by any two garbage collections, and then the next
// use allocates the scratch again and faults its memory pages in — inside a forward pass,
// where a server's first token after an idle spell waits for it.
package keep

import (
	"sync"
	"sync/atomic"
)

// Spares is the number of objects a Pool holds strongly.
const Spares = 4

// Pool is a sync.Pool of *T whose first Spares objects given back are held strongly. The zero
// Pool is ready to use; Get returns a new(T) when it holds none.
type Pool[T any] struct {
	spare [Spares]atomic.Pointer[T]
	pool  sync.Pool
}

// Get returns a held object (a strongly held one first) or a new one.
func (p *Pool[T]) Get() *T {
	for i := range p.spare {
		if v := p.spare[i].Swap(nil); v != nil {
			return v
		}
	}
	if v, ok := p.pool.Get().(*T); ok {
		return v
	}
	return new(T)
}

// Put gives v back: held strongly where a spare slot is free, else to the sync.Pool.
func (p *Pool[T]) Put(v *T) {
	for i := range p.spare {
		if p.spare[i].CompareAndSwap(nil, v) {
			return
		}
	}
	p.pool.Put(v)
}
