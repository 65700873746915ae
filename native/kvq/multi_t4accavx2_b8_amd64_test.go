//go:build linux && amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
)

// TestT4AccB8AVX2Match checks the AVX2 accumulate kernels with 8-bit weights of turbo4, tq4,
// turbo3 and turbo2 (multiAccT4B8AVX2I, multiAccT4FB8AVX2I, multiAccT3B8AVX2I,
// multiAccT2B8AVX2I) against the Go reference (turboAccRef, weights rounded to at most 127
// against the largest of each 64-row tile; turbo4's and tq4's adapting, t4AccAdaptRef) bit
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
		vnni       bool
	}{{Turbo4, multiAccT4B8AVX2I, tq4Unit, 2, 64, false}, {TQ4, multiAccT4FB8AVX2I, tq4Unit, 4, 64, false},
		{Turbo3, multiAccT3B8AVX2I, turboUnit3, 2, 64, false}, {Turbo2, multiAccT2B8AVX2I, turboUnit2, 2, 64, false},
		{Turbo4, multiAccT4B8AVXVNNI, tq4Unit, 2, 64, true}, {TQ4, multiAccT4FB8AVXVNNI, tq4Unit, 4, 64, true},
		{Turbo3, multiAccT3B8AVXVNNI, turboUnit3, 2, 64, true}, {Turbo2, multiAccT2B8AVXVNNI, turboUnit2, 2, 64, true}} {
		if tc.vnni && !tq4AVXVNNICPU {
			continue // the CPU lacks AVX-VNNI
		}
		tiles, tiles16 := 0, 0 // turbo4's and tq4's: both kinds of tile must be checked
		for _, d := range []int{16, 48, 64, 128, 256} {
			for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 63, 64, 65, 66, 67, 68, 130, 131, 257} {
				for _, signed := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/vnni=%v/d%d/rows%d/signed=%v", tc.f, tc.vnni, d, rows, signed), func(t *testing.T) {
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
								if tc.f == Turbo4 || tc.f == TQ4 {
									a, b := t4AccAdaptRef(want, d, nv, enc, rb, rows, w, ws, tc.unit, tc.sub, scale, level)
									tiles += a
									tiles16 += b
								} else {
									turboAccRef(want, d, nv, enc, rb, rows, w, ws, 127, tc.unit, tc.sub, scale, level)
								}
								checkBits(t, fmt.Sprintf("wstride %d nv %d", 4*ws, nv), got, want)
							}
						}
					})
				}
			}
		}
		if (tc.f == Turbo4 || tc.f == TQ4) && (tiles16 == 0 || tiles16 >= 4*tiles) {
			t.Errorf("%s: %d of %d tiles' accumulators with 16-bit weights: both kinds must be checked", tc.f, tiles16, 4*tiles)
		}
	}
}

// t4AccAdaptRef is the Go reference of turbo4's and tq4's adaptive 8-bit kernels
// (multiAccT4B8AVX2I, multiAccT4FB8AVX2I): turboAccRef with, per tile of sub rows, the weights of
// each accumulator rounded to at most 127 or, where intAccAdaptQ chooses it (t4a8Ratio times its
// largest |w·s| above their sum), to at most 32767.
func t4AccAdaptRef(acc []float32, d, nv int, rows []byte, rb, m int, w []float32, ws int, unit float32,
	sub int, scale func([]byte) float32, level func([]byte, int) int32) (tiles, tiles16 int) {
	W := make([]int32, sub) // tiles: the tiles, tiles16 the accumulators' tiles with 16-bit weights
	wd := make([][]float32, 4)
	for t0 := 0; t0 < m; t0 += sub {
		t1 := min(t0+sub, m)
		for h := range wd {
			wd[h] = make([]float32, t1-t0)
			for j := t0; j < t1; j++ {
				wd[h][j-t0] = w[j*ws+h] * scale(rows[j*rb:(j+1)*rb])
			}
		}
		tiles++
		for h := range wd {
			q := intAccAdaptQ(wd[h], t4a8Ratio, 127)
			if q != 127 {
				tiles16++ // counted per accumulator
			}
			tu := intAccRound(wd[h], q, W) * unit
			for i := 0; i < nv; i++ {
				var s int32
				for j := t0; j < t1; j++ {
					s += W[j-t0] * level(rows[j*rb:(j+1)*rb], i)
				}
				a := &acc[h*d+i]
				*a = float32(math.FMA(float64(float32(s)), float64(tu), float64(*a)))
			}
		}
	}
	return tiles, tiles16
}

// TestT4AccB8AVX2Pick checks which AVX2 kernels the turbo tiers and tq4 take where the AVX2
// integer kernels run (no AVX-512), with AVX-VNNI or without: the 8-bit ones, and
// AccumulateStep 2⁻⁸, where avx2B8Turbo (turbo3, turbo2) or avx2B8T4 (turbo4, tq4) is on and
// KVLAB_ACC16 (isa.Acc16) is unset; else the 16-bit ones and 2⁻¹⁶. Both settings of each.
func TestT4AccB8AVX2Pick(t *testing.T) {
	if !tq4AVX2Int {
		t.Skip("the AVX2 integer kernels do not run here")
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
		vnni    bool
	}{{Turbo4, multiAccT4AVX2I, multiAccT4B8AVX2I, false}, {TQ4, multiAccT4FAVX2I, multiAccT4FB8AVX2I, false},
		{Turbo3, multiAccT3AVX2I, multiAccT3B8AVX2I, false}, {Turbo2, multiAccT2AVX2I, multiAccT2B8AVX2I, false},
		{Turbo4, multiAccT4AVXVNNI, multiAccT4B8AVXVNNI, true}, {TQ4, multiAccT4FAVXVNNI, multiAccT4FB8AVXVNNI, true},
		{Turbo3, multiAccT3AVXVNNI, multiAccT3B8AVXVNNI, true}, {Turbo2, multiAccT2AVXVNNI, multiAccT2B8AVXVNNI, true}} {
		if tc.vnni && !tq4AVXVNNICPU {
			continue
		}
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
			// peaky: one weight of each accumulator in 64 rows 64 times the others' largest, so
			// that turbo4's and tq4's adaptive kernels take every tile through the 16-bit work.
			peaky := append([]float32(nil), w...)
			for j := 0; j < call; j += 64 {
				for h := 0; h < 4; h++ {
					peaky[4*(j+rng.IntN(64))+h] = 64
				}
			}
			acc := make([]float32, 4*d)
			reps := max(1, 400*256/total)
			var ts [3][]float64
			for round := 0; round < 7; round++ {
				for i, k := range []accKernel{tc.k16, tc.k8, tc.k8} {
					wk := w
					if i == 2 {
						wk = peaky
					}
					t0 := cputime.Thread()
					for r := 0; r < reps; r++ {
						for j0 := 0; j0 < total; j0 += call {
							k(&acc[0], d, d, &enc[j0*rb], rb, call, &wk[0], 16)
						}
					}
					ts[i] = append(ts[i], float64((cputime.Thread()-t0).Nanoseconds())/float64(reps*total))
				}
			}
			a0, a1 := minMedianF(ts[0])
			b0, b1 := minMedianF(ts[1])
			c0, c1 := minMedianF(ts[2])
			t.Logf("%-6s vnni=%-5v rows %7d: 16-bit %.2f / %.2f ns a row (min / median), 8-bit %.2f / %.2f (%.2f×), peaky weights %.2f / %.2f (%.2f×)",
				tc.f, tc.vnni, total, a0, a1, b0, b1, b0/a0, c0, c1, c0/a0)
		}
	}
}

// TestMultiQueryT4B8AVX2 runs the reference checks (checkMulti: values within the integer
// accumulation's slack, intAccSlack, for AccumulateStep's 2⁻⁸) through turbo4's and tq4's 8-bit
// kernels, with avx2B8T4 on, across d, query counts and row
// counts around quads and tiles.
func TestMultiQueryT4B8AVX2(t *testing.T) {
	if !tq4AVX2Int || os.Getenv("KVLAB_ACC16") != "" {
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
