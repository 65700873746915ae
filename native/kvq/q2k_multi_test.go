package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ2KScoresRangeMulti checks ScoresRangeMulti against the decoded cells (float64 sums)
// within its stated bound, (d/4 + 9)·2⁻²⁴·Σ_c |q_c·k̂_c|, for head dimensions with and without
// the kernel, query counts around the four-query groups, and ranges that start and end inside
// groups, including the last, partial one.
func TestQ2KScoresRangeMulti(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, d := range []int{8, 32, 64, 100, 128, 256, 288} {
		const cells = 77
		h := newQ2K(t, d, 1.1)
		h.Append(q2kCells(uint64(d), cells, d, true))
		for _, n := range []int{1, 3, 4, 5, 8} {
			for _, r := range [][2]int{{0, cells}, {5, 70}, {33, 1}, {64, 13}} {
				t.Run(fmt.Sprintf("d%d/n%d/%d+%d", d, n, r[0], r[1]), func(t *testing.T) {
					q := gaussianRows(rng, n, d, 1)
					out := make([]float32, r[1]*n)
					for i := range out {
						out[i] = float32(math.NaN())
					}
					h.ScoresRangeMulti(q, n, r[0], out)
					k := make([]float32, d)
					for j := 0; j < r[1]; j++ {
						h.Decode(k, r[0]+j)
						for i := 0; i < n; i++ {
							var s, mag float64
							for c, x := range k {
								p := float64(q[i*d+c]) * float64(x)
								s += p
								mag += math.Abs(p)
							}
							bound := float64(d/4+9) * 0x1p-24 * mag
							if e := math.Abs(float64(out[j*n+i]) - s); !(e <= bound) {
								t.Fatalf("cell %d query %d: %g, want %g: error %g > %g", r[0]+j, i, out[j*n+i], s, e, bound)
							}
						}
					}
				})
			}
		}
	}
}
