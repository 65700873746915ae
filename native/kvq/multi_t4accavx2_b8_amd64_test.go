//go:build linux && amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
)

// TestT4AccB8AVX2Match checks the AVX2 accumulate kernels with 8-bit weights of turbo4, tq4,
// turbo3 and turbo2 (multiAccT4B8AVX2I, multiAccT4FB8AVX2I, multiAccT3B8AVX2I,
// multiAccT2B8AVX2I) against the Go reference (turboAccRef, weights rounded to at most 127
// against the largest of each tile: 32 rows for turbo4 and tq4, 64 for turbo3 and turbo2) bit
// for bit. The rows end at an inaccessible page (a kernel reading past the last row faults)
// and carry every code (outlier rows, and random bytes with random finite scales); the row
// counts cover quads with one to three rows left and several tiles with short last ones; the
// weights are softmax-like with some exactly 0 and one large per 64 rows, contiguous and
// strided; signed: some weights and scales negative (the second pass); nv below d leaves the
// values past it alone, and values past the last accumulator must stay as they were.
func TestT4AccB8AVX2Match(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(91, 92))
	for _, tc := range []struct {
		f          Format
		k          accKernel
		unit       float32
		scaleBytes int
		sub        int // rows a tile
	}{{Turbo4, multiAccT4B8AVX2I, tq4Unit, 2, 32}, {TQ4, multiAccT4FB8AVX2I, tq4Unit, 4, 32},
		{Turbo3, multiAccT3B8AVX2I, turboUnit3, 2, 64}, {Turbo2, multiAccT2B8AVX2I, turboUnit2, 2, 64}} {
		for _, d := range []int{16, 48, 64, 128, 256} {
			for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 63, 64, 65, 66, 67, 68, 130, 131, 257} {
				for _, signed := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/d%d/rows%d/signed=%v", tc.f, d, rows, signed), func(t *testing.T) {
						c := Unwrap(mustCodec(t, tc.f, d))
						rb := c.RowBytes()
						enc := turboAccTestRows(t, rng, c, rows, tc.scaleBytes, signed)
						scale, level := turboAccLevels(c)
						for _, ws := range []int{4, 7} {
							w := turboAccTestWeights(rng, rows, ws, signed)
							for _, nv := range []int{d, d - 16} {
								if nv == 0 {
									continue
								}
								const pad = 5
								got := make([]float32, 4*d+pad)
								for i := range got {
									got[i] = float32(rng.NormFloat64())
								}
								want := append([]float32(nil), got...)
								tc.k(&got[0], d, nv, &enc[0], rb, rows, &w[0], 4*ws)
								turboAccRef(want, d, nv, enc, rb, rows, w, ws, 127, tc.unit, tc.sub, scale, level)
								checkBits(t, fmt.Sprintf("wstride %d nv %d", 4*ws, nv), got, want)
							}
						}
					})
				}
			}
		}
	}
}

// TestT4AccB8AVX2Pick checks which AVX2 kernels the turbo tiers and tq4 take where the AVX2
// integer kernels run (no AVX-512) and the CPU lacks AVX-VNNI: the 8-bit ones, and
// AccumulateStep 2⁻⁸, where avx2B8Turbo (turbo3, turbo2) or avx2B8T4 (turbo4, tq4) is on and
// KVLAB_ACC16 (isa.Acc16) is unset; else the 16-bit ones and 2⁻¹⁶. Both settings of each.
func TestT4AccB8AVX2Pick(t *testing.T) {
	if !tq4AVX2Int || hasAVXVNNI {
		t.Skip("the AVX2 integer kernels without AVX-VNNI do not run here")
	}
	acc16 := os.Getenv("KVLAB_ACC16") != ""
	defer func(a, b bool) { avx2B8Turbo, avx2B8T4 = a, b }(avx2B8Turbo, avx2B8T4)
	for _, on := range []bool{false, true} {
		avx2B8Turbo, avx2B8T4 = on, on
		for _, f := range []Format{Turbo4, TQ4, Turbo3, Turbo2} {
			c := Unwrap(mustCodec(t, f, 128))
			k := turboAccKernels(c)
			b8 := on && !acc16
			if k == nil || (k.w8step > 0) != b8 {
				t.Fatalf("%s: kernel %v, want 8-bit %v", f, k, b8)
			}
			want := 0x1p-16
			if b8 {
				want = 0x1p-8
			}
			if s := AccumulateStep(c); s != want {
				t.Errorf("%s (on %v): AccumulateStep %g, want %g", f, on, s, want)
			}
		}
	}
}

// TestT4AccB8AVX2Speed reports, per row of 128 values and four accumulators, the thread CPU
// time of turbo4's and tq4's AVX2 accumulate kernels with 16-bit and 8-bit weights,
// alternated (min and median of 7 rounds), in cache (256 rows) and streamed (2²⁰ rows on huge
// pages, calls of 4096 rows). It runs only when KVLAB_SPEED_REPORT is set.
func TestT4AccB8AVX2Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const d = 128
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		f       Format
		k16, k8 accKernel
	}{{Turbo4, multiAccT4AVX2I, multiAccT4B8AVX2I}, {TQ4, multiAccT4FAVX2I, multiAccT4FB8AVX2I},
		{Turbo3, multiAccT3AVX2I, multiAccT3B8AVX2I}, {Turbo2, multiAccT2AVX2I, multiAccT2B8AVX2I}} {
		c := Unwrap(mustCodec(t, tc.f, d))
		rb := c.RowBytes()
		for _, total := range []int{256, 1 << 20} {
			call := min(total, 4096)
			enc := hugemem.Bytes(total * rb)
			src := gaussianRows(rng, 256, d, 1)
			for r := 0; r < 256; r++ {
				c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
			}
			for r := 256; r < total; r += 256 {
				copy(enc[r*rb:(r+256)*rb], enc[:256*rb])
			}
			w := make([]float32, 4*call)
			for i := range w {
				w[i] = float32(math.Exp(-4 * rng.Float64()))
			}
			acc := make([]float32, 4*d)
			reps := max(1, 400*256/total)
			var ts [2][]float64
			for round := 0; round < 7; round++ {
				for i, k := range []accKernel{tc.k16, tc.k8} {
					t0 := cputime.Thread()
					for r := 0; r < reps; r++ {
						for j0 := 0; j0 < total; j0 += call {
							k(&acc[0], d, d, &enc[j0*rb], rb, call, &w[0], 16)
						}
					}
					ts[i] = append(ts[i], float64((cputime.Thread()-t0).Nanoseconds())/float64(reps*total))
				}
			}
			a0, a1 := minMedianF(ts[0])
			b0, b1 := minMedianF(ts[1])
			t.Logf("%-6s rows %7d: 16-bit %.2f / %.2f ns a row (min / median), 8-bit %.2f / %.2f (%.2f×)",
				tc.f, total, a0, a1, b0, b1, b0/a0)
		}
	}
}

// minMedianF is the least and the median of x.
func minMedianF(x []float64) (float64, float64) {
	y := append([]float64(nil), x...)
	sort.Float64s(y)
	return y[0], y[len(y)/2]
}

// TestMultiQueryT4B8AVX2 runs the reference checks (checkMulti: values within the integer
// accumulation's slack, intAccSlack, for AccumulateStep's 2⁻⁸) through turbo4's and tq4's 8-bit
// kernels, which avx2B8T4 keeps off by default, with it on, across d, query counts and row
// counts around quads and tiles.
func TestMultiQueryT4B8AVX2(t *testing.T) {
	if !tq4AVX2Int || hasAVXVNNI || os.Getenv("KVLAB_ACC16") != "" {
		t.Skip("the AVX2 8-bit kernels do not run here")
	}
	defer func(a bool) { avx2B8T4 = a }(avx2B8T4)
	avx2B8T4 = true
	rng := rand.New(rand.NewPCG(93, 94))
	for _, f := range []Format{TQ4, Turbo4} {
		for _, d := range []int{32, 48, 64, 128, 256} {
			for _, n := range []int{1, 4, 5} {
				for _, rows := range []int{1, 3, 9, 16, 23, 130} {
					t.Run(fmt.Sprintf("%s/d%d/n%d/rows%d", f, d, n, rows), func(t *testing.T) {
						if AccumulateStep(Unwrap(mustCodec(t, f, d))) != 0x1p-8 {
							t.Fatalf("AccumulateStep %g, want 2⁻⁸", AccumulateStep(Unwrap(mustCodec(t, f, d))))
						}
						checkMulti(t, rng, f, d, n, rows)
					})
				}
			}
		}
	}
}
