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
)

// turboAccRef is the Go reference of the turbo tiers' and tq4's integer accumulate kernels
// (multi_turboacc_amd64.go) for four accumulators at acc[h·d:], weights w[j·ws + h]: per tile of
// AccumulateTile rows and accumulator, w·s rounded by intAccRoundSub (groups of sub rows: 64,
// or turboAcc8Rows for the 8-bit kernels) to integers of magnitude at most qmax, the levels summed exactly in int32 and added as float32(Σ W·L)·(T·unit) with one
// fused multiply-add.
func turboAccRef(acc []float32, d, nv int, rows []byte, rb, m int, w []float32, ws int, qmax, unit float32,
	sub int, scale func([]byte) float32, level func([]byte, int) int32) {
	W := make([]int32, AccumulateTile)
	wsv := make([]float32, AccumulateTile)
	T := make([]float32, AccumulateTile)
	for t0 := 0; t0 < m; t0 += AccumulateTile {
		t1 := min(t0+AccumulateTile, m)
		for h := 0; h < 4; h++ {
			for j := t0; j < t1; j++ {
				wsv[j-t0] = w[j*ws+h] * scale(rows[j*rb:(j+1)*rb])
			}
			intAccRoundSub(wsv[:t1-t0], qmax, sub, W, T)
			for g0 := t0; g0 < t1; g0 += sub {
				g1 := min(g0+sub, t1)
				tu := T[(g0-t0)/sub] * unit
				for i := 0; i < nv; i++ {
					var s int32
					for j := g0; j < g1; j++ {
						s += W[j-t0] * level(rows[j*rb:(j+1)*rb], i)
					}
					a := &acc[h*d+i]
					*a = float32(math.FMA(float64(float32(s)), float64(tu), float64(*a)))
				}
			}
		}
	}
}

// turboAccCase is one turbo tier's (or tq4's) integer kernels and what the reference needs.
type turboAccCase struct {
	f          Format
	k16, k8    accKernel
	unit       float32
	scaleBytes int // 2 (f16) or 4 (f32), after the codes
}

func turboAccCases() []turboAccCase {
	return []turboAccCase{
		{Turbo4, multiAccT4INT, multiAccT4BINT, tq4Unit, 2},
		{Turbo2, multiAccT2, multiAccT2BINT, turboUnit2, 2},
		{Turbo2, multiAccT2, multiAccT2B, turboUnit2, 2}, // multiAccT2BMINT where d ≤ 184
		{Turbo3, multiAccT3INT, multiAccT3BINT, turboUnit3, 2},
		{TQ4, multiAccT4FINT, multiAccT4FBINT, tq4Unit, 4},
	}
}

// turboAccLevels is the codec's scale and integer level readers.
func turboAccLevels(c Codec) (scale func([]byte) float32, level func([]byte, int) int32) {
	switch c := c.(type) {
	case *lmCodec:
		ints := map[int][]int8{2: turboInts2[:], 3: turboInts3[:], 4: tq4Ints[:]}[c.bits]
		return c.scale, func(row []byte, i int) int32 { return int32(ints[c.codeAt(row, i)]) }
	case *tq4Codec:
		return c.scale, func(row []byte, i int) int32 { return int32(tq4Ints[row[i/2]>>(4*(i%2))&15]) }
	}
	panic("not a turbo codec")
}

// TestTurboAccMatchesRef checks the turbo tiers' and tq4's integer accumulate kernels, 16-bit
// (qmax 32767) and 8-bit weights (127), against the Go reference bit for bit. The rows end at
// an inaccessible page (a kernel reading past the last row faults) and carry every code
// (outlier rows, and random bytes with random finite scales); the row counts cover quads with
// one to three rows left, lone last rows and the 64-row tiles (more than 128 rows: the
// accumulators kept in the lanes' order, gen_turboacc.go's laneOrder); the weights are softmax-like
// with some exactly 0 and one large per tile; signed: some weights and scales negative (the
// 8-bit kernels' second pass); values past the last accumulator must stay as they were.
func TestTurboAccMatchesRef(t *testing.T) {
	if !turboIntAcc(4, 64) {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	for _, tc := range turboAccCases() {
		for _, d := range []int{64, 128, 192, 256} {
			for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 63, 64, 65, 66, 67, 68, 128, 129, 130, 131, 200, 257} {
				for _, signed := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/d%d/rows%d/signed=%v", tc.f, d, rows, signed), func(t *testing.T) {
						c := Unwrap(mustCodec(t, tc.f, d))
						rb := c.RowBytes()
						enc := turboAccTestRows(t, rng, c, rows, tc.scaleBytes, signed)
						w := turboAccTestWeights(rng, rows, 4, signed)
						scale, level := turboAccLevels(c)
						for _, k := range []struct {
							name string
							fn   accKernel
							qmax float32
							sub  int
						}{{"16-bit", tc.k16, 32767, AccumulateTile}, {"8-bit", tc.k8, 255, turboAcc8Rows}} {
							const pad = 5
							got := make([]float32, 4*d+pad)
							for i := range got {
								got[i] = float32(rng.NormFloat64())
							}
							want := append([]float32(nil), got...)
							k.fn(&got[0], d, d, &enc[0], rb, rows, &w[0], 16)
							turboAccRef(want, d, d, enc, rb, rows, w, 4, k.qmax, tc.unit, k.sub, scale, level)
							checkBits(t, k.name, got, want)
						}
					})
				}
			}
		}
	}
}

// TestTurboAccPick checks which kernels the turbo codecs take: the 8-bit ones, and
// AccumulateStep 2⁻⁹, unless KVLAB_ACC16 (isa.Acc16) is set; the 16-bit ones and 2⁻¹⁶ under it.
func TestTurboAccPick(t *testing.T) {
	if !turboIntAcc(4, 64) {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	acc16 := os.Getenv("KVLAB_ACC16") != ""
	for _, f := range []Format{Turbo2, Turbo3, Turbo4, TQ4} {
		c := Unwrap(mustCodec(t, f, 128))
		k := turboAccKernels(c)
		if (k.w8step > 0) == acc16 {
			t.Errorf("%s: 8-bit kernel %v with KVLAB_ACC16 %v", f, k.w8step > 0, acc16)
		}
		want := 0x1p-9
		if acc16 {
			want = 0x1p-16
		}
		if s := AccumulateStep(c); s != want {
			t.Errorf("%s: AccumulateStep %g, want %g", f, s, want)
		}
	}
}

// TestTurboAcc8Speed reports, per row of d values and four accumulators, the thread CPU time
// of the turbo tiers' and tq4's 16-bit and 8-bit integer kernels, interleaved (best and median
// of 7 rounds of 200 calls each), in cache (256 rows) and streamed (131072 rows, calls of 4096
// rows). It runs only when KVLAB_SPEED_REPORT is set.
func TestTurboAcc8Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !turboIntAcc(4, 64) {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const d = 128
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range turboAccCases() {
		c := Unwrap(mustCodec(t, tc.f, d))
		rb := c.RowBytes()
		for _, total := range []int{256, 131072} {
			call := min(total, 4096)
			enc := make([]byte, total*rb)
			src := gaussianRows(rng, 256, d, 1)
			for r := 0; r < total; r++ {
				c.Encode(enc[r*rb:(r+1)*rb], src[(r%256)*d:(r%256+1)*d])
			}
			w := make([]float32, 4*call)
			for i := range w {
				w[i] = float32(math.Exp(-4 * rng.Float64()))
			}
			acc := make([]float32, 4*d)
			reps := max(1, 200*256/total)
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
			stat := func(x []float64) (float64, float64) {
				y := append([]float64(nil), x...)
				for i := range y {
					for j := i + 1; j < len(y); j++ {
						if y[j] < y[i] {
							y[i], y[j] = y[j], y[i]
						}
					}
				}
				return y[0], y[len(y)/2]
			}
			a0, a1 := stat(ts[0])
			b0, b1 := stat(ts[1])
			t.Logf("%-6s rows %6d: 16-bit %.2f / %.2f ns a row (min / median), 8-bit %.2f / %.2f (%.2f×)",
				tc.f, total, a0, a1, b0, b1, b0/a0)
		}
	}
}

// TestIntAccRoundSub checks intAccRoundSub: each group of sub weights (the last one shorter)
// rounded as intAccRound rounds it alone, its largest |W| exactly q where it has a nonzero weight.
func TestIntAccRoundSub(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sub := range []int{16, 32, 64} {
		for n := 1; n <= 130; n++ {
			wd := make([]float32, n)
			for j := range wd {
				wd[j] = float32(rng.NormFloat64() * math.Exp(4*rng.NormFloat64()))
				if rng.IntN(9) == 0 {
					wd[j] = 0
				}
			}
			out := make([]int32, n)
			T := make([]float32, (n+sub-1)/sub)
			intAccRoundSub(wd, 255, sub, out, T)
			for g := range T {
				j0, j1 := g*sub, min(g*sub+sub, n)
				want := make([]int32, j1-j0)
				if wt := intAccRound(wd[j0:j1], 255, want); wt != T[g] {
					t.Fatalf("sub %d n %d group %d: T %g, want %g", sub, n, g, T[g], wt)
				}
				var big int32
				for j := j0; j < j1; j++ {
					if out[j] != want[j-j0] {
						t.Fatalf("sub %d n %d: W[%d] %d, want %d", sub, n, j, out[j], want[j-j0])
					}
					big = max(big, out[j], -out[j])
				}
				if T[g] != 0 && big != 255 {
					t.Fatalf("sub %d n %d group %d: largest |W| %d, want 255", sub, n, g, big)
				}
			}
		}
	}
}

// TestTurboAccWStride checks that the turbo tiers' and tq4's integer kernels read weights laid
// out wstride bytes apart (20: a fifth weight between rows; the first prepass's general path)
// as they read them packed 16 bytes apart: bit for bit, odd row counts included.
func TestTurboAccWStride(t *testing.T) {
	if !turboIntAcc(4, 64) {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	rng := rand.New(rand.NewPCG(83, 84))
	for _, tc := range turboAccCases() {
		const d = 128
		c := Unwrap(mustCodec(t, tc.f, d))
		rb := c.RowBytes()
		for _, rows := range []int{1, 3, 5, 17, 64, 67, 130, 259} {
			enc := make([]byte, rows*rb)
			EncodeRows(c, enc, outlierRows(rng, rows, d), rows)
			w16 := make([]float32, 4*rows)
			w20 := make([]float32, 5*rows)
			for j := 0; j < rows; j++ {
				for h := 0; h < 4; h++ {
					x := float32(math.Exp(-8 * rng.Float64()))
					if rng.IntN(6) == 0 {
						x = -x
					}
					w16[4*j+h], w20[5*j+h] = x, x
				}
				w20[5*j+4] = float32(rng.NormFloat64() * 1e6)
			}
			for _, k := range []accKernel{tc.k16, tc.k8} {
				acc0 := gaussianRows(rng, 1, 4*d, 1)
				a16 := append([]float32(nil), acc0...)
				a20 := append([]float32(nil), acc0...)
				k(&a16[0], d, d, &enc[0], rb, rows, &w16[0], 16)
				k(&a20[0], d, d, &enc[0], rb, rows, &w20[0], 20)
				checkBits(t, fmt.Sprintf("%s rows %d", tc.f, rows), a20, a16)
			}
		}
	}
}

// turboAccTestRows encodes rows random rows of c into a buffer that ends at an inaccessible
// page (freed when t ends), every third row's codes and row scale (scaleBytes: an f16 or an
// f32) replaced by random ones, the scale negative at random where signed.
func turboAccTestRows(t *testing.T, rng *rand.Rand, c Codec, rows, scaleBytes int, signed bool) []byte {
	d, rb := c.Dim(), c.RowBytes()
	enc, free := guardedBytes(t, rows*rb, false)
	t.Cleanup(free)
	src := outlierRows(rng, rows, d)
	for r := 0; r < rows; r++ {
		row := enc[r*rb : (r+1)*rb]
		c.Encode(row, src[r*d:(r+1)*d])
		if r%3 == 2 {
			nc := rb - scaleBytes
			for i := 0; i < nc; i++ {
				row[i] = byte(rng.Uint32())
			}
			x := float32(rng.NormFloat64() * 4)
			if !signed {
				x = float32(math.Abs(float64(x)))
			}
			if scaleBytes == 2 {
				s := F32ToF16(x)
				row[nc], row[nc+1] = byte(s), byte(s>>8)
			} else {
				b := math.Float32bits(x)
				row[nc], row[nc+1], row[nc+2], row[nc+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
			}
		}
	}
	return enc
}

// turboAccTestWeights is rows × 4 softmax weights, ws apart: e^(−8u), some exactly 0, one 1
// per tile and accumulator, some negated where signed.
func turboAccTestWeights(rng *rand.Rand, rows, ws int, signed bool) []float32 {
	w := make([]float32, ws*rows)
	for j := 0; j < rows; j++ {
		for h := 0; h < 4; h++ {
			x := float32(math.Exp(-8 * rng.Float64()))
			switch {
			case rng.IntN(7) == 0:
				x = 0
			case j%64 == 3*h:
				x = 1
			case signed && rng.IntN(5) == 0:
				x = -x
			}
			w[ws*j+h] = x
		}
	}
	return w
}
