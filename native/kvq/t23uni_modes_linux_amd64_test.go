//go:build linux && amd64 && !purego

package kvq

import (
	"math/rand/v2"
	"testing"
)

// TestMultiQueryGuardPagesT23Modes is TestMultiQueryGuardPages for turbo2 and turbo3 through
// both scores paths (t23Modes), each with its rows, queries, scores, weights and accumulators
// against inaccessible pages.
func TestMultiQueryGuardPagesT23Modes(t *testing.T) {
	rng := rand.New(rand.NewPCG(173, 174))
	t23Modes(t, func(t *testing.T, uni bool) {
		for _, f := range []Format{Turbo2, Turbo3} {
			for _, d := range append(guardDims[:len(guardDims):len(guardDims)], 512) {
				checkT23Path(t, f, d, uni)
				guardMulti(t, rng, f, d)
			}
		}
	})
}
