//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// t23Modes runs f for turbo2's and turbo3's two scores paths in turn: t23UniMode,
// t3UniAVX2Mode, t2UniAVX2Mode, t3UniVNNIMode and t2UniVNNIMode −1 (the per-group kernels, T2P/T3P/T2/T3, as
// Intel and Zen 5 run them, and the per-group AVX2 ones) and t23UniMode 1 (the uniform-scale kernels, T2PU/T3PU/T2U/T3U, as
// Zen 4 runs them; skipped where they cannot run: no AVX-512 VNNI + BW + VBMI, so t23Uni is
// false whatever the mode; the uniform AVX2 kernels, t3UniAVX2, t2UniAVX2, t3UniVNNI and t2UniVNNI, are checked by
// TestMultiQueryTQ4AVX2Int). uni tells f which is on.
func t23Modes(t *testing.T, f func(t *testing.T, uni bool)) {
	defer func(v, a, b, c, e int) {
		t23UniMode, t3UniAVX2Mode, t2UniAVX2Mode, t3UniVNNIMode, t2UniVNNIMode = v, a, b, c, e
	}(t23UniMode, t3UniAVX2Mode, t2UniAVX2Mode, t3UniVNNIMode, t2UniVNNIMode)
	for _, mode := range []int{-1, 1} {
		uni := mode > 0
		t.Run(fmt.Sprintf("uni%v", uni), func(t *testing.T) {
			if uni && !hasAVX512VNNIVBMI() {
				t.Skip("the uniform-scale kernels do not run here")
			}
			t23UniMode, t3UniAVX2Mode, t2UniAVX2Mode, t3UniVNNIMode, t2UniVNNIMode = mode, -1, -1, -1, -1
			f(t, uni)
		})
	}
}

// checkT23Path fails unless turbo2's or turbo3's codec at d takes the path asked for
// (ScoresGrid's block: the whole query where uniform), so the mode tests test what they say.
func checkT23Path(t *testing.T, f Format, d int, uni bool) {
	t.Helper()
	c := Unwrap(mustCodec(t, f, d))
	want := uni && d%32 == 0 && d >= 64 && d <= 512
	if got := scoresGridBlock(c) > BlockSize; got != want {
		t.Fatalf("%s d%d: uniform grid %v, want %v", f, d, got, want)
	}
}

// TestMultiQueryT23Modes runs the reference checks (checkMulti: DotManyMulti against Dot
// within the scoresGridBlock bound and against Dot of ScoresGrid's query within the float
// bound, AccumulateManyMulti against AccumulateScaled) for turbo2 and turbo3 through both
// scores paths on every CPU that can run them, not only the one t23UniMode 0 picks.
func TestMultiQueryT23Modes(t *testing.T) {
	rng := rand.New(rand.NewPCG(171, 172))
	t23Modes(t, func(t *testing.T, uni bool) {
		for _, f := range []Format{Turbo2, Turbo3} {
			for _, d := range []int{64, 128, 200, 256, 512, 1024} {
				checkT23Path(t, f, d, uni)
				for _, n := range []int{1, 4, 5} {
					for _, rows := range []int{1, 7, 17, 130} {
						t.Run(fmt.Sprintf("%s/d%d/n%d/rows%d", f, d, n, rows), func(t *testing.T) {
							checkMulti(t, rng, f, d, n, rows)
						})
					}
				}
			}
		}
	})
}

// TestT23IntelFlavours checks turbo3's and turbo2's DotManyMulti through the per-group
// kernels' Intel flavours (t3X: multiScoresT3PXVNNI; t23Split: multiScoresT3PSVNNI,
// multiScoresT2PSVNNI, here over calls of any length) against the kernels they stand for, bit
// for bit, on every CPU with AVX-512 VNNI + VBMI.
func TestT23IntelFlavours(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI: neither runs")
	}
	defer func(v int, x, s bool, r int) { t23UniMode, t3X, t23Split, twoStreamRows = v, x, s, r }(t23UniMode, t3X, t23Split, twoStreamRows)
	t23UniMode = -1
	twoStreamRows = 0 // t23Split's flavours over the few rows here (t23SplitRows)
	rng := rand.New(rand.NewPCG(173, 174))
	for _, f := range []Format{Turbo3, Turbo2} {
		for _, d := range []int{64, 128, 192, 256} {
			c := mustCodec(t, f, d)
			mq := c.(MultiQuery)
			rb := c.RowBytes()
			for _, rows := range []int{1, 15, 16, 17, 130, 600} {
				src := outlierRows(rng, rows, d)
				enc := make([]byte, rows*rb)
				for r := 0; r < rows; r++ {
					c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
				}
				for _, n := range []int{1, 4, 5} {
					q := gaussianRows(rng, n, d, 1)
					want := make([]float32, rows*n)
					t3X, t23Split = false, false
					mq.DotManyMulti(q, n, enc, want)
					for _, k := range [][2]bool{{true, false}, {false, true}} {
						t3X, t23Split = k[0], k[1]
						got := make([]float32, rows*n)
						mq.DotManyMulti(q, n, enc, got)
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s d %d rows %d n %d t3X %v t23Split %v: row %d query %d: %g Intel's flavour, %g",
									f, d, rows, n, k[0], k[1], i/n, i%n, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}
