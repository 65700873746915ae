package main

import "sync"

// parallel runs fn(0) … fn(n−1) on up to workers goroutines and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for w := 0; w < min(max(workers, 1), n); w++ {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}
