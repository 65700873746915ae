package keep

import (
	"runtime"
	"sync"
	"testing"
)

// TestPoolKeepsSparesThroughCollections: the objects given back are the next ones returned,
// the first Spares of them even after collections; more than that still come back (from the
// sync.Pool) or are new; concurrent use hands no object to two users at once.
func TestPoolKeepsSparesThroughCollections(t *testing.T) {
	var p Pool[[64]byte]
	held := make([]*[64]byte, Spares)
	for i := range held {
		held[i] = p.Get()
	}
	for _, v := range held {
		p.Put(v)
	}
	runtime.GC()
	runtime.GC()
	seen := map[*[64]byte]bool{}
	for range Spares {
		seen[p.Get()] = true
	}
	for i, v := range held {
		if !seen[v] {
			t.Fatalf("spare %d was not returned after two collections", i)
		}
	}
	if v := p.Get(); v == nil || seen[v] {
		t.Fatal("a Get with no spare left returned nil or a spare already handed out")
	}

	var q Pool[int]
	var mu sync.Mutex
	inUse := map[*int]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				v := q.Get()
				mu.Lock()
				if inUse[v] {
					mu.Unlock()
					t.Error("one object handed to two users")
					return
				}
				inUse[v] = true
				mu.Unlock()
				mu.Lock()
				delete(inUse, v)
				mu.Unlock()
				q.Put(v)
			}
		})
	}
	wg.Wait()
}
