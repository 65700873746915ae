package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
)

// This file measures PolarQuant (recursive polar coordinates after a random rotation, one
// codebook of angles per level, the radii of the last level kept in fp16) against the formats
// kvlab stores, on the rows attention sees after a rotation: Gaussian coordinates. It decides
// whether PolarQuant earns a place on the bits-against-error curve; it is a measurement in a
// test, not a format (TestPolarQuantDominated asserts the answer it gave).

// polarConfig is one PolarQuant shape: levels of the recursion (1 … log2 d), bits of the
// first level's angles (in [0, 2π)) and of every higher level's (in [0, π/2]).
type polarConfig struct {
	levels, b1, bh int
}

// bitsPerValue counts the angles' codes and the fp16 radii left after the last level.
func (c polarConfig) bitsPerValue(d int) float64 {
	bits, n := 0, d
	for l := 1; l <= c.levels; l++ {
		n /= 2
		if l == 1 {
			bits += n * c.b1
		} else {
			bits += n * c.bh
		}
	}
	return float64(bits+16*n) / float64(d)
}

// polarAngles turns x (a power-of-two length) into its per-level angles and the radii after
// `levels` levels.
func polarAngles(x []float64, levels int) (angles [][]float64, radii []float64) {
	r := x
	for l := 1; l <= levels; l++ {
		n := len(r) / 2
		a, nr := make([]float64, n), make([]float64, n)
		for j := 0; j < n; j++ {
			u, v := r[2*j], r[2*j+1]
			nr[j] = math.Hypot(u, v)
			if l == 1 {
				a[j] = math.Atan2(v, u)
				if a[j] < 0 {
					a[j] += 2 * math.Pi
				}
			} else {
				a[j] = math.Atan2(v, u) // both radii ≥ 0: in [0, π/2]
			}
		}
		angles, r = append(angles, a), nr
	}
	return angles, r
}

// polarRebuild inverts polarAngles.
func polarRebuild(angles [][]float64, radii []float64) []float64 {
	r := radii
	for l := len(angles) - 1; l >= 0; l-- {
		nr := make([]float64, 2*len(r))
		for j, a := range angles[l] {
			nr[2*j], nr[2*j+1] = r[j]*math.Cos(a), r[j]*math.Sin(a)
		}
		r = nr
	}
	return r
}

// lloyd1D is a Lloyd–Max codebook of k levels for the samples (sorted in place).
func lloyd1D(s []float64, k int) []float64 {
	sort.Float64s(s)
	c := make([]float64, k)
	for i := range c {
		c[i] = s[(2*i+1)*len(s)/(2*k)]
	}
	for it := 0; it < 60; it++ {
		sum, cnt := make([]float64, k), make([]float64, k)
		b := 0
		for _, v := range s {
			for b+1 < k && v > (c[b]+c[b+1])/2 {
				b++
			}
			sum[b] += v
			cnt[b]++
		}
		for i := range c {
			if cnt[i] > 0 {
				c[i] = sum[i] / cnt[i]
			}
		}
		sort.Float64s(c)
	}
	return c
}

func polarNearest(c []float64, v float64) float64 {
	i := sort.SearchFloat64s(c, v)
	switch {
	case i == 0:
		return c[0]
	case i == len(c):
		return c[len(c)-1]
	case v-c[i-1] <= c[i]-v:
		return c[i-1]
	}
	return c[i]
}

// polarSamples holds rows of d Gaussian values taken apart by polarAngles down to one radius:
// each level's angles and radii, for every shape to share.
type polarSamples struct {
	x      [][]float64   // the rows
	angles [][][]float64 // [row][level-1][pair]
	radii  [][][]float64 // [row][level-1]: the radii after that level
}

func newPolarSamples(d, rows int, rng *rand.Rand) *polarSamples {
	levels := 0
	for n := d; n > 1; n /= 2 {
		levels++
	}
	p := &polarSamples{}
	for range rows {
		x := make([]float64, d)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		a, _ := polarAngles(x, levels)
		rs := make([][]float64, levels)
		for l := range rs {
			_, rs[l] = polarAngles(x, l+1)
		}
		p.x, p.angles, p.radii = append(p.x, x), append(p.angles, a), append(p.radii, rs)
	}
	return p
}

// polarCodebooks trains each level's angle codebook of 2^b levels on train's angles (level 1:
// uniform on [0, 2π), so the uniform grid's midpoints): books[level-1][b].
func polarCodebooks(train *polarSamples, maxBits int) [][][]float64 {
	levels := len(train.angles[0])
	books := make([][][]float64, levels)
	for l := range books {
		books[l] = make([][]float64, maxBits+1)
		var s []float64
		for _, a := range train.angles {
			s = append(s, a[l]...)
		}
		for b := 1; b <= maxBits; b++ {
			k := 1 << b
			if l == 0 {
				for i := 0; i < k; i++ {
					books[l][b] = append(books[l][b], (float64(i)+0.5)*2*math.Pi/float64(k))
				}
				continue
			}
			books[l][b] = lloyd1D(s, k)
		}
	}
	return books
}

// polarRelMSE is Σ‖x − x̂‖² / Σ‖x‖² of PolarQuant shape cfg over test's rows (the radii
// rounded to fp16, the first level's angles circularly).
func polarRelMSE(cfg polarConfig, books [][][]float64, test *polarSamples) float64 {
	var num, den float64
	for r, x := range test.x {
		a := make([][]float64, cfg.levels)
		for l := range a {
			b := cfg.bh
			if l == 0 {
				b = cfg.b1
			}
			c := books[l][b]
			a[l] = make([]float64, len(test.angles[r][l]))
			for j, v := range test.angles[r][l] {
				q := polarNearest(c, v)
				if l == 0 { // circular: the last level's distance across 2π
					if w := c[0] + 2*math.Pi; math.Abs(v-w) < math.Abs(v-q) {
						q = w
					}
				}
				a[l][j] = q
			}
		}
		rad := append([]float64(nil), test.radii[r][cfg.levels-1]...)
		for j := range rad {
			rad[j] = float64(F16ToF32(F32ToF16(float32(rad[j]))))
		}
		y := polarRebuild(a, rad)
		for i := range x {
			num += (x[i] - y[i]) * (x[i] - y[i])
			den += x[i] * x[i]
		}
	}
	return num / den
}

// codecRelMSE is the same figure for one of kvlab's formats through its codec (rotated where
// the format is).
func codecRelMSE(t *testing.T, f Format, d int, rng *rand.Rand) float64 {
	t.Helper()
	c, err := NewCodec(f, d, CodecOptions{Seed: 7, Rotate: true})
	if err != nil {
		t.Fatal(err)
	}
	row := make([]byte, c.RowBytes())
	x, y := make([]float32, d), make([]float32, d)
	var num, den float64
	for range 2000 {
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		c.Encode(row, x)
		c.Decode(y, row)
		for i := range x {
			e := float64(x[i] - y[i])
			num += e * e
			den += float64(x[i]) * float64(x[i])
		}
	}
	return num / den
}

// TestPolarQuantDominated: on rotated rows (Gaussian coordinates), at d 64 and 128, every
// PolarQuant shape between 2 and 5 bits a value (2 … log2 d levels, 2–6 bits for the first
// level's angles, 1–6 for the others') has a larger error than kvlab's Lloyd–Max tiers
// (turbo2/3/4, one fp16 norm-corrected scale a row) interpolated to its bits (log error linear
// in bits between neighbouring tiers, extrapolated past turbo4 at turbo3–turbo4's slope). So
// PolarQuant is not offered as a format: measured (3000 training and 2000 test rows a size),
// its best shapes come within 2–7 % of the tiers' error at equal bits (d 128: L7 3/1 2.12
// bits 1.07×, L7 4/2 3.11 bits 1.06×, L7 5/3 4.10 bits 1.04×, L7 5/4 4.59 bits 1.02×), never
// below, and attention on its codes would take a cosine and sine product a value, where the
// tiers' codes are one codebook entry. Set KVLAB_CURVE_REPORT=1 for the whole table.
func TestPolarQuantDominated(t *testing.T) {
	if testing.Short() {
		t.Skip("trains codebooks over a few hundred thousand angles")
	}
	report := os.Getenv("KVLAB_CURVE_REPORT") != ""
	for _, d := range []int{64, 128} {
		rng := rand.New(rand.NewPCG(1, uint64(d)))
		type point struct {
			name       string
			bits, rmse float64
		}
		var tiers []point
		for _, f := range []Format{Turbo2, Turbo3, Turbo4} {
			tiers = append(tiers, point{f.String(), f.BitsPerValue(d), codecRelMSE(t, f, d, rng)})
		}
		var others []point
		for _, f := range []Format{Q4_0, Q4_1, Q5_0, Q8_0, TQ4} {
			others = append(others, point{f.String(), f.BitsPerValue(d), codecRelMSE(t, f, d, rng)})
		}
		// interp is the tiers' log error at b bits (extrapolated past the ends at the
		// neighbouring pair's slope).
		interp := func(b float64) float64 {
			i := 0
			for i < len(tiers)-2 && b > tiers[i+1].bits {
				i++
			}
			p, q := tiers[i], tiers[i+1]
			return math.Log(p.rmse) + (b-p.bits)*(math.Log(q.rmse)-math.Log(p.rmse))/(q.bits-p.bits)
		}
		const maxBits = 6
		train, test := newPolarSamples(d, 3000, rng), newPolarSamples(d, 2000, rng)
		books := polarCodebooks(train, maxBits)
		maxLevels := len(train.angles[0])
		var polar []point
		for levels := 2; levels <= maxLevels; levels++ {
			for b1 := 2; b1 <= maxBits; b1++ {
				for bh := 1; bh <= maxBits; bh++ {
					cfg := polarConfig{levels, b1, bh}
					bits := cfg.bitsPerValue(d)
					if bits < 2 || bits > 5 {
						continue
					}
					e := polarRelMSE(cfg, books, test)
					name := fmt.Sprintf("polar L%d %d/%d", levels, b1, bh)
					polar = append(polar, point{name, bits, e})
					if e < math.Exp(interp(bits)) {
						t.Errorf("d %d: %s at %.3f bits/value: relative MSE %.5f below the Lloyd–Max tiers' %.5f",
							d, name, bits, e, math.Exp(interp(bits)))
					}
				}
			}
		}
		if len(polar) == 0 {
			t.Fatalf("d %d: no PolarQuant shape between 2 and 5 bits", d)
		}
		if report {
			all := append(append(tiers, others...), polar...)
			sort.Slice(all, func(i, j int) bool { return all[i].bits < all[j].bits })
			t.Logf("d %d: relative MSE of rows of Gaussian values (bits a value, MSE, MSE / the Lloyd–Max tiers' at those bits)", d)
			for _, p := range all {
				t.Logf("  %-18s %.3f bits  %.5f  %.2f×", p.name, p.bits, p.rmse, p.rmse/math.Exp(interp(p.bits)))
			}
		}
	}
}
