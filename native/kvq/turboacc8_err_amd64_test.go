//go:build linux && amd64 && !purego

package kvq

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// TestTurboAcc8ErrorReport reports the relative RMS error of the turbo tiers' integer
// accumulation (the Go reference, turboAccRef) against the exact sum Σ w·s·L·u, for the 16-bit
// weights and the 8-bit ones rounded per 64, 32 and 16 rows, with softmax weights of logits
// N(0, σ²) and one dominant row per 64 (logit +δ). It runs only when KVLAB_SPEED_REPORT is set.
func TestTurboAcc8ErrorReport(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to report")
	}
	const d, m = 128, 1024
	rng := rand.New(rand.NewPCG(5, 6))
	c := Unwrap(mustCodec(t, Turbo4, d))
	rb := c.RowBytes()
	enc := make([]byte, m*rb)
	src := gaussianRows(rng, m, d, 1)
	for r := 0; r < m; r++ {
		c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
	}
	scale, level := turboAccLevels(c)
	for _, sh := range []struct{ sigma, delta float64 }{{1, 0}, {2, 0}, {2, 4}, {3, 6}} {
		var num [4]float64
		var den float64
		for trial := 0; trial < 20; trial++ {
			w := make([]float32, 4*m)
			for h := 0; h < 4; h++ {
				var z float64
				lg := make([]float64, m)
				for j := range lg {
					lg[j] = rng.NormFloat64() * sh.sigma
					if j%64 == rng.IntN(64) {
						lg[j] += sh.delta
					}
					lg[j] = math.Exp(lg[j])
					z += lg[j]
				}
				for j := range lg {
					w[4*j+h] = float32(lg[j] / z)
				}
			}
			exact := make([]float64, 4*d)
			for h := 0; h < 4; h++ {
				for j := 0; j < m; j++ {
					row := enc[j*rb : (j+1)*rb]
					ws := float64(w[4*j+h] * scale(row))
					for i := 0; i < d; i++ {
						exact[h*d+i] += ws * float64(level(row, i)) * float64(tq4Unit)
					}
				}
			}
			for _, x := range exact {
				den += x * x
			}
			for v, k := range []struct {
				q   float32
				sub int
			}{{32767, 64}, {255, 64}, {255, 32}, {255, 16}} {
				got := make([]float32, 4*d)
				turboAccRef(got, d, d, enc, rb, m, w, 4, k.q, tq4Unit, k.sub, scale, level)
				for i := range got {
					e := float64(got[i]) - exact[i]
					num[v] += e * e
				}
			}
		}
		t.Logf("σ %.0f, δ %.0f: relative RMS error 16-bit %.2e, 8-bit per 64 rows %.2e, per 32 %.2e, per 16 %.2e",
			sh.sigma, sh.delta, math.Sqrt(num[0]/den), math.Sqrt(num[1]/den), math.Sqrt(num[2]/den), math.Sqrt(num[3]/den))
	}
}
