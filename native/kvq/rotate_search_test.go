package kvq

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/kvlab/kvlab/internal/cputime"
	"testing"
)

// TestSearchSymBlockMatchesReference: searchSymBlock (its stage 1 in symSearchFast for ordinary
// blocks) picks the same scale and codes, bit for bit, as the plain loop it replaced
// (searchSymBlockRef below, the encoder as first written), on Gaussian blocks at many
// magnitudes, blocks of ties and exact half-steps (where symCode's rounding and clamping
// decide), short blocks, and the blocks the fast stage refuses (NaN, ±Inf, tiny magnitudes).
// A change of the fast stage's rounding (to nearest-even, or in float32), its clamp, its
// offset or the order of its sums changes some block's bytes here.
func TestSearchSymBlockMatchesReference(t *testing.T) {
	blocks := searchTestBlocks()
	for _, tc := range []struct{ lo, hi int32 }{{8, 7}, {16, 15}} {
		for i, x := range blocks {
			got, want := make([]byte, len(x)), make([]byte, len(x))
			dg, dw := searchSymBlock(x, tc.lo, tc.hi, got), searchSymBlockRef(x, tc.lo, tc.hi, want)
			if dg != dw || string(got) != string(want) {
				t.Fatalf("lo %d block %d (%v): scale %#04x codes %v, want %#04x %v", tc.lo, i, x, dg, got, dw, want)
			}
		}
	}
}

// TestSymSearchKernels: every stage-1 kernel this CPU runs (AVX-512, AVX2; symSearchVec picks
// one) and the Go loop write the reference loop's sums, bit for bit, for every block
// symSearchFast takes, at every candidate scale of both formats. A kernel that rounds the
// product v·id in float64 instead of float32, rounds to nearest instead of down, clamps at
// lo+hi−1, or adds a lane's values in another order differs on the boundary blocks here.
func TestSymSearchKernels(t *testing.T) {
	kernels := symSearchKernels()
	if kernels == nil {
		kernels = map[string]func(x *float32, n int, id *[16]float32, off, lo, top float64, sxc, scc *[16]float64){}
	}
	kernels["go"] = func(x *float32, n int, id *[16]float32, off, lo, top float64, sxc, scc *[16]float64) {
		l := int32(lo)
		symSearchGo(unsafe.Slice(x, n), id, l, int32(top)-l, sxc, scc)
	}
	t.Logf("kernels: %d", len(kernels))
	for _, tc := range []struct{ lo, hi int32 }{{8, 7}, {16, 15}} {
		for i, x := range searchTestBlocks() {
			mx, amax := blockSignedMax(x)
			if !(amax >= symSearchFastMin) || math.IsInf(float64(amax), 0) || slices.ContainsFunc(x, func(v float32) bool { return v != v }) {
				continue
			}
			var id [16]float32
			for k, t := range searchStepsArr {
				id[2*k] = 1 / (mx / (-float32(tc.lo) * t))
				id[2*k+1] = 1 / (mx / (float32(tc.hi) * t))
			}
			var wx, wc [16]float64
			for k, ik := range id {
				for _, v := range x {
					q := float64(int32(symCode(v*ik, tc.lo, tc.hi)) - tc.lo)
					wx[k] += float64(v) * q
					wc[k] += q * q
				}
			}
			for name, fn := range kernels {
				var sx, sc [16]float64
				fn(&x[0], len(x), &id, float64(tc.lo)+0.5, float64(tc.lo), float64(tc.lo+tc.hi), &sx, &sc)
				for k := range sx {
					if math.Float64bits(sx[k]) != math.Float64bits(wx[k]) || sc[k] != wc[k] {
						t.Fatalf("%s lo %d block %d candidate %d: Σxq %v Σq² %v, want %v %v", name, tc.lo, i, k, sx[k], sc[k], wx[k], wc[k])
					}
				}
			}
		}
	}
}

// searchTestBlocks are the blocks the scale search tests run on.
func searchTestBlocks() [][]float32 {
	r := rand.New(rand.NewPCG(21, 22))
	var blocks [][]float32
	for i, row := range gaussRows(9, 3000, BlockSize) {
		scale := float32(math.Ldexp(1, i%60-30))
		x := row[:BlockSize-i%4*5]
		for j := range x {
			x[j] *= scale
		}
		blocks = append(blocks, x)
	}
	for i := 0; i < 2000; i++ { // values on a coarse grid: ties, exact half-steps, clamped maxima
		x := make([]float32, BlockSize)
		for j := range x {
			x[j] = float32(r.IntN(33)-16) / 4
		}
		blocks = append(blocks, x)
	}
	for _, lo := range []int32{8, 16} { // values a hair from a rounding boundary of some candidate
		for i := 0; i < 2000; i++ {
			x := make([]float32, BlockSize)
			mx := float32(math.Ldexp(1+r.Float64(), r.IntN(20)-10))
			if r.IntN(2) == 0 {
				mx = -mx
			}
			x[0] = mx
			for j := 1; j < len(x); j++ {
				t := searchStepsArr[r.IntN(len(searchStepsArr))]
				d := mx / (-float32(lo) * t)
				if r.IntN(2) == 0 {
					d = mx / (float32(lo-1) * t)
				}
				n := float64(r.IntN(int(2*lo)) - int(lo))
				delta := []float64{0, 0x1p-24, -0x1p-24, 0x1p-23, -0x1p-23, 0x1p-21}[r.IntN(6)]
				v := float32((n + 0.5 + delta) * float64(d))
				if blockAbs(v) > blockAbs(mx) {
					v = mx / 2
				}
				x[j] = v
			}
			blocks = append(blocks, x)
		}
	}
	for _, special := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-31, -1e-38, 1e-44, 0} {
		x := make([]float32, BlockSize)
		for j := range x {
			x[j] = float32(r.NormFloat64()) * 1e-32
		}
		x[r.IntN(BlockSize)] = special
		blocks = append(blocks, x, []float32{special})
	}
	return blocks
}

// searchSymBlockRef is searchSymBlock as first written: every candidate scale's codes and sums in
// one plain loop with symCode.
func searchSymBlockRef(x []float32, lo, hi int32, codes []byte) uint16 {
	mx, amax := blockSignedMax(x)
	for i := range codes {
		codes[i] = byte(lo)
	}
	if !(amax > 0) || math.IsInf(float64(amax), 0) {
		return 0
	}
	var best, cand [BlockSize]byte
	bestErr := math.Inf(1)
	var bestD uint16
	// ggml's own block first (its scale max/−lo, its codes and rounding, no refit), so that the
	// search keeps ggml's bytes unless a candidate is strictly better: the block's error is
	// never above ggml's.
	if d := mx / -float32(lo); d != 0 {
		id := 1 / d
		ds := F16ToF32(F32ToF16(d))
		var e float64
		for i, v := range x {
			c := blockClamp(float32(v*id)+float32(lo)+0.5, lo+hi)
			cand[i] = c
			r := float64(v) - float64(int32(c)-lo)*float64(ds)
			e += r * r
		}
		bestErr, bestD, best = e, F32ToF16(d), cand
	}
	// Stage 1: each candidate scale's codes and their least-squares refit s = Σxq/Σq², whose
	// error Σx² − (Σxq)²/Σq² is exact before s is rounded to f16: rank the candidates by it.
	var sxx float64
	for _, v := range x {
		sxx += float64(v) * float64(v)
	}
	type refit struct {
		s, e float64
	}
	top := [2]refit{{e: math.Inf(1)}, {e: math.Inf(1)}}
	for _, t := range searchSteps {
		for _, d := range [2]float32{mx / (-float32(lo) * t), mx / (float32(hi) * t)} {
			if d == 0 || math.IsInf(float64(d), 0) || math.IsNaN(float64(d)) {
				continue
			}
			id := 1 / d
			var sxc, scc float64
			for _, v := range x {
				q := float64(int32(symCode(v*id, lo, hi)) - lo)
				sxc += float64(v) * q
				scc += q * q
			}
			if scc == 0 {
				continue
			}
			r := refit{s: sxc / scc, e: sxx - sxc*sxc/scc}
			if r.e < top[0].e {
				top[0], top[1] = r, top[0]
			} else if r.e < top[1].e && r.s != top[0].s {
				top[1] = r
			}
		}
	}
	// Stage 2: the two best refits rounded to f16, the codes nearest each, their exact error.
	for _, r := range top {
		if math.IsInf(r.e, 1) {
			continue
		}
		h := F32ToF16(float32(r.s))
		ds := F16ToF32(h)
		if ds == 0 || math.IsInf(float64(ds), 0) {
			continue
		}
		id := 1 / ds
		var e float64
		for i, v := range x {
			c := symCode(v*id, lo, hi)
			cand[i] = c
			d := float64(v) - float64(int32(c)-lo)*float64(ds)
			e += d * d
		}
		if e < bestErr {
			bestErr, bestD, best = e, h, cand
		}
	}
	copy(codes, best[:len(codes)])
	return bestD
}

// TestSearchSymBlockSpeed prints (KVLAB_SPEED_REPORT set) the best thread-CPU time of the scale
// search over a 128-value row: searchSymBlockRef, searchSymBlock with stage 1 in Go
// (symSearchGo) and with the vector kernel this CPU runs, interleaved.
func TestSearchSymBlockSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rows := gaussRows(3, 64, 128)
	var codes [BlockSize]byte
	vec := hasSymSearchVec()
	for _, tc := range []struct{ lo, hi int32 }{{8, 7}, {16, 15}} {
		names := []string{"reference", "go", "vector"}
		best := []time.Duration{time.Hour, time.Hour, time.Hour}
		for r := 0; r < 300; r++ {
			for k := range names {
				setSymSearchVec(k == 2 && vec)
				t0 := cputime.Thread()
				for _, y := range rows {
					for off := 0; off < len(y); off += BlockSize {
						if k == 0 {
							searchSymBlockRef(y[off:off+BlockSize], tc.lo, tc.hi, codes[:])
						} else {
							searchSymBlock(y[off:off+BlockSize], tc.lo, tc.hi, codes[:])
						}
					}
				}
				best[k] = min(best[k], cputime.Thread()-t0)
			}
		}
		setSymSearchVec(vec)
		ns := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(len(rows)) }
		t.Logf("lo %d: scale search per 128-value row: reference %.0f ns, Go stage 1 %.0f ns (%.1f×), vector stage 1 %.0f ns (%.1f×)",
			tc.lo, ns(best[0]), ns(best[1]), float64(best[0])/float64(best[1]), ns(best[2]), float64(best[0])/float64(best[2]))
	}
}
