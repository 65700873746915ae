package attn

import (
	"fmt"
	"sync"
)

// Prefill computes causal attention for n query positions p0, p0+1, …, p0+n−1: query i attends
// to cells [lo_i, p0+i+1), where lo_i = max(0, p0+i+1−window) for a sliding window (window > 0)
// and 0 otherwise. q holds n rows of Heads×HeadDimK values and out n rows of Heads×HeadDimV.
// Every query is the same computation as Decode (one chunk per query head when the range is
// short); the work is spread over s.Threads goroutines by query position.
func Prefill(out, q []float32, n, p0, window int, s Shape, keys []Keys, vals []Values) error {
	qn, on := s.Heads*s.HeadDimK, s.Heads*s.HeadDimV
	if n < 0 || len(q) != n*qn || len(out) != n*on {
		return fmt.Errorf("attn: prefill of %d positions needs %d query and %d output values, have %d and %d",
			n, n*qn, n*on, len(q), len(out))
	}
	one := s
	one.Threads = 1
	do := func(i int) error {
		hi := p0 + i + 1
		lo := 0
		if window > 0 {
			lo = max(0, hi-window)
		}
		return Decode(out[i*on:(i+1)*on], q[i*qn:(i+1)*qn], one, keys, vals, lo, hi)
	}
	threads := min(max(s.Threads, 1), n)
	if threads <= 1 {
		for i := 0; i < n; i++ {
			if err := do(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int, n)
	for i := n - 1; i >= 0; i-- { // longest ranges first balances the threads
		next <- i
	}
	close(next)
	for t := 0; t < threads; t++ {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}
