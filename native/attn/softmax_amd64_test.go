//go:build amd64 && !purego

package attn

import (
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
