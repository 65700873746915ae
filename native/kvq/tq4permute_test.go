package kvq

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTQ4Permute checks tq4Permute (its AVX-512 kernel where the CPU has one and d is a
// multiple of 32) against the order it states, and tq4Unpermute as its inverse, for head
// dimensions with and without a partial last group.
func TestTQ4Permute(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, d := range []int{32, 40, 64, 96, 128, 200, 256} {
		for _, n := range []int{1, 3, 4, 5} {
			t.Run(fmt.Sprintf("d%d/n%d", d, n), func(t *testing.T) {
				src := gaussianRows(rng, n, d, 1)
				got := make([]float32, n*d)
				tq4Permute(got, src, n, d)
				for h := 0; h < n; h++ {
					for i := 0; i < d; i++ {
						want := src[h*d+i]
						if g := i &^ 31; g+32 <= d {
							k := i - g
							want = src[h*d+g+2*(k%16)+k/16]
						}
						if got[h*d+i] != want {
							t.Fatalf("vector %d [%d]: %g, want %g", h, i, got[h*d+i], want)
						}
					}
				}
				back := make([]float32, n*d)
				tq4Unpermute(back, got, n, d)
				for i := range back {
					if back[i] != src[i] {
						t.Fatalf("[%d]: unpermuted %g, want %g", i, back[i], src[i])
					}
				}
			})
		}
	}
}
