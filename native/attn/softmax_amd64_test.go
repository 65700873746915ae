//go:build amd64 && !purego

package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
)

// TestExpSumUnmasked checks that the kernels without the floor test (expSumAVX512U,
// expSumAVX2U) give their masked twins' weights and sums bit for bit on exponents above the
// floor, and that softmaxVec picks them only there: with a score 100 nats below the rest the
// weight must still be exactly 0.
func TestExpSumUnmasked(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	for _, lanes := range []int{16, 8} {
		if lanes == 16 && !hasAVX512 || lanes == 8 && !hasFMA {
			continue
		}
		for _, nv := range []int{lanes, 3 * lanes, 1024} {
			x := make([]float32, nv+16)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 8)
			}
			x[nv+3] = 12345 // past the end: untouched
			var m [16]float32
			for l := range m {
				m[l] = float32(-math.MaxFloat32)
				for i := l % lanes; i < nv; i += lanes {
					m[l] = max(m[l], x[i]*0.5)
				}
			}
			a, b := append([]float32(nil), x...), append([]float32(nil), x...)
			var sa, sb [16]float32
			c := float32(0.5) * 1.4426950408889634
			if lanes == 16 {
				expSumAVX512(&a[0], nv, c, &m, &sa)
				expSumAVX512U(&b[0], nv, c, &m, &sb)
			} else {
				expSumAVX2(&a[0], nv, c, &m, &sa)
				expSumAVX2U(&b[0], nv, c, &m, &sb)
			}
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("lanes %d nv %d: x[%d] %g and %g", lanes, nv, i, a[i], b[i])
				}
			}
			if sa != sb {
				t.Fatalf("lanes %d nv %d: sums %v and %v", lanes, nv, sa, sb)
			}
			if a[nv+3] != 12345 {
				t.Fatalf("lanes %d nv %d: wrote past the end", lanes, nv)
			}
		}
	}
	// One score 100 nats (scaled) below its column's others: softmaxVec must take the kernel
	// with the floor test, which gives −Inf and NaN scores weight 0 too.
	const n = 4
	sco := make([]float32, n*64)
	for i := range sco {
		sco[i] = float32(rng.NormFloat64())
	}
	sco[9] = -100 / 0.5
	sco[13] = float32(math.Inf(-1))
	sco[22] = float32(math.NaN())
	mx, sums := make([]float32, n), make([]float32, n)
	softmaxRows(sco, n, 0.5, mx, sums)
	for _, i := range []int{9, 13, 22} {
		if sco[i] != 0 {
			t.Fatalf("score %d: weight %g, want 0", i, sco[i])
		}
	}
}

// TestSoftmaxSpeed times softmaxRows and its AVX-512 passes over the decode's scores buffer at
// the bench shape (16384 cells × 4 queries, 256 KiB: in L2), thread CPU, ns a cell (min and
// median of 15 rounds of 20 calls, the buffer refilled before each call). Runs only with
// KVLAB_SPEED_REPORT set.
//
// Zen 4 (shared, load 2.5): softmaxRows 0.62, maxMinAVX512 0.175, expSumAVX512 0.50,
// expSumAVX512U 0.48 (the 16-entry-table kernel before: softmaxRows 0.71, exp pass 0.57); with
// KVLAB_NO_AVX512=1 softmaxRows 0.74 (expNeg's polynomial before: 1.06), scaleMaxMinAVX2
// 0.20, expSumAVX2 0.72, expSumAVX2U 0.58. Intel Xeon (Sapphire Rapids class, load 3) with
// KVLAB_NO_AVX512=1: softmaxRows 0.76–0.81, maxMinAVX2 0.18, expSumAVX2 0.70, expSumAVX2U
// 0.57 (scaleMaxMinAVX2's pass before, which stored the scaled scores: 0.28–0.30, softmaxRows
// 0.84–0.92).
func TestSoftmaxSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	const n, cells = 4, 16384
	rng := rand.New(rand.NewPCG(1, 2))
	orig := make([]float32, n*cells)
	for i := range orig {
		orig[i] = float32(rng.NormFloat64() * 3)
	}
	buf := make([]float32, n*cells)
	mx, sums := make([]float32, n), make([]float32, n)
	var lane, low, sum [16]float32
	for l := range lane {
		lane[l] = 12
	}
	c := float32(0.75) * 1.4426950408889634
	fns := []struct {
		name string
		f    func()
	}{
		{"softmaxRows", func() { softmaxRows(buf, n, 0.75, mx, sums) }},
	}
	if hasFMA {
		fns = append(fns, []struct {
			name string
			f    func()
		}{
			{"maxMinAVX2", func() { maxMinAVX2(&buf[0], len(buf), &lane, &low) }},
			{"expSumAVX2", func() { expSumAVX2(&buf[0], len(buf), c, &lane, &sum) }},
			{"expSumAVX2U", func() { expSumAVX2U(&buf[0], len(buf), c, &lane, &sum) }},
		}...)
	}
	if hasAVX512 {
		fns = append(fns, []struct {
			name string
			f    func()
		}{
			{"maxMinAVX512", func() { maxMinAVX512(&buf[0], len(buf), &lane, &low) }},
			{"expSumAVX512", func() { expSumAVX512(&buf[0], len(buf), c, &lane, &sum) }},
			{"expSumAVX512U", func() { expSumAVX512U(&buf[0], len(buf), c, &lane, &sum) }},
		}...)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := make([][]time.Duration, len(fns))
	for r := 0; r < 15; r++ {
		for i, fn := range fns {
			var d time.Duration
			for k := 0; k < 20; k++ {
				copy(buf, orig)
				t0 := cputime.Thread()
				fn.f()
				d += cputime.Thread() - t0
			}
			res[i] = append(res[i], d)
		}
	}
	for i, fn := range fns {
		y := res[i]
		sort.Slice(y, func(a, b int) bool { return y[a] < y[b] })
		per := float64(20 * cells)
		t.Logf("%-15s ns/cell min %.3f med %.3f", fn.name, float64(y[0].Nanoseconds())/per,
			float64(y[len(y)/2].Nanoseconds())/per)
	}
}

// softmaxRowsRef is softmaxRows' scalar path: the Go reference the vector paths must match.
func softmaxRowsRef(sco []float32, n int, scale float32, mx, sums []float32) {
	for i := range mx {
		mx[i] = float32(math.Inf(-1))
		sums[i] = 0
	}
	for j, x := range sco {
		x *= scale
		sco[j] = x
		if x > mx[j%n] {
			mx[j%n] = x
		}
	}
	for j, x := range sco {
		e := expNeg(x - mx[j%n])
		sco[j] = e
		sums[j%n] += e
	}
}

// TestSoftmaxRowsScale checks softmaxRows over the scales it may get, with the 16-lane and the
// 8-lane kernels (hasAVX512 switched off: the path KVLAB_NO_AVX512=1 takes), against
// softmaxRowsRef. With scale > 0 the maxima are the reference's exactly (rounding keeps the
// order) and the weights within TestSoftmaxRowsFloor's bound (the vector path rounds x·c and
// max·log₂e apart, c = scale·log₂e, where the reference rounds x·scale first); with a power of
// two the vector path gives softmaxRows of the scores scaled beforehand with scale 1 bit for
// bit (x·scale and c are then exact). A scale of 0, below 0 or NaN must take the scalar path:
// the reference bit for bit.
func TestSoftmaxRowsScale(t *testing.T) {
	cpuAVX512 := hasAVX512
	defer func() { hasAVX512 = cpuAVX512 }()
	rng := rand.New(rand.NewPCG(47, 48))
	scales := []struct {
		name  string
		scale float32
		pow2  bool
	}{
		{"0.75", 0.75, false},
		{"0.125", 0.125, true},
		{"1/sqrt8", float32(1 / math.Sqrt(8)), false},
		{"0", 0, false},
		{"-0.5", -0.5, false},
		{"NaN", float32(math.NaN()), false},
	}
	for _, avx512 := range []bool{true, false} {
		for _, sc := range scales {
			for _, n := range []int{1, 4, 8} {
				name := fmt.Sprintf("avx512=%v/scale=%s/n=%d", avx512, sc.name, n)
				t.Run(name, func(t *testing.T) {
					if avx512 && !cpuAVX512 {
						t.Skip("no AVX-512 (or KVLAB_NO_AVX512 set)")
					}
					hasAVX512 = avx512
					defer func() { hasAVX512 = cpuAVX512 }()
					const m = 333 // a tail past the last whole vector
					orig := make([]float32, n*m)
					for i := range orig {
						orig[i] = float32(rng.NormFloat64() * 4)
					}
					sco := append([]float32(nil), orig...)
					mx, sums := make([]float32, n), make([]float32, n)
					softmaxRows(sco, n, sc.scale, mx, sums)
					ref := append([]float32(nil), orig...)
					rmx, rsums := make([]float32, n), make([]float32, n)
					softmaxRowsRef(ref, n, sc.scale, rmx, rsums)
					if !(sc.scale > 0) {
						sameBits(t, "weights", sco, ref)
						sameBits(t, "maxima", mx, rmx)
						sameBits(t, "sums", sums, rsums)
						return
					}
					sameBits(t, "maxima", mx, rmx)
					for k, got := range sco {
						x := float64(orig[k]*sc.scale) - float64(mx[k%n])
						want := math.Exp(x)
						tol := want * (0x1p-21 + 0x1p-22*(math.Abs(float64(orig[k]*sc.scale))+math.Abs(float64(mx[k%n]))))
						if e := math.Abs(float64(got) - want); !(e <= tol) {
							t.Fatalf("score %d: e^%g = %g, want %g", k, x, got, want)
						}
					}
					for i := range sums {
						var sum float64
						for k := i; k < len(sco); k += n {
							sum += float64(sco[k])
						}
						if !(math.Abs(float64(sums[i])-sum) <= 1e-6*sum) {
							t.Fatalf("column %d: sum %g, weights add to %g", i, sums[i], sum)
						}
					}
					if sc.pow2 {
						pre := make([]float32, len(orig))
						for i, x := range orig {
							pre[i] = x * sc.scale
						}
						pmx, psums := make([]float32, n), make([]float32, n)
						softmaxRows(pre, n, 1, pmx, psums)
						sameBits(t, "weights (scaled first)", sco, pre)
						sameBits(t, "maxima (scaled first)", mx, pmx)
						sameBits(t, "sums (scaled first)", sums, psums)
					}
				})
			}
		}
	}
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %g, want %g", what, i, got[i], want[i])
		}
	}
}
