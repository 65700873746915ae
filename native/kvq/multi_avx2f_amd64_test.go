//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// avx2FloatRows are row counts around the float kernels' steps: three streams of ⌈m/3⌉ rows
// (m mod 3 = 0, 1, 2; b's or c's stream shorter or empty), the accumulate kernels' 64-row
// tiles, and long calls (256 rows and more, where the scores were once stored non-temporally).
var avx2FloatRows = []int{1, 2, 3, 4, 5, 6, 7, 8, 63, 64, 65, 130, 131, 256, 301}

// avx2FloatKernels are the AVX2 float kernels of each format.
var avx2FloatKernels = map[Format]*multiKernels{F16: f16AVX2, BF16: bf16AVX2, FP8: fp8AVX2}

// TestAVX2FloatKernels checks the f16, bf16 and fp8 AVX2 kernels against the references
// within the MultiQuery bounds (checkMulti), for row lengths with and without a tail past the
// last 32 values, every query count up to a padded group and two groups, and avx2FloatRows.
func TestAVX2FloatKernels(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	withAVX2Kernels(func() {
		rng := rand.New(rand.NewPCG(41, 42))
		for _, f := range []Format{F16, BF16, FP8} {
			for _, d := range []int{32, 64, 96, 128, 200, 256} {
				for _, n := range []int{1, 2, 3, 4, 5, 8} {
					for _, rows := range avx2FloatRows {
						t.Run(fmt.Sprintf("%s/d%d/n%d/rows%d", f, d, n, rows), func(t *testing.T) {
							checkMulti(t, rng, f, d, n, rows)
						})
					}
				}
			}
		}
	})
}

// TestAVX2FloatScoresPerRow checks that every row's four scores from the kernels over m rows
// are, bit for bit, those of the kernel over that row alone: the three streams and the short
// last steps read and store the right rows (a row swapped, skipped or stored twice fails).
func TestAVX2FloatScoresPerRow(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	for _, f := range []Format{F16, BF16, FP8} {
		k := avx2FloatKernels[f]
		for _, d := range []int{64, 128} {
			c := mustCodec(t, f, d)
			rb := c.RowBytes()
			for _, m := range avx2FloatRows {
				enc := make([]byte, m*rb)
				EncodeRows(c, enc, outlierRows(rng, m, d), m)
				q := gaussianRows(rng, 4, d, 1)
				for _, ostride := range []int{16, 20} { // 16: four rows' scores a 64-byte line
					all := make([]float32, m*ostride/4+4)
					for i := range all {
						all[i] = float32(math.NaN())
					}
					k.scores(&q[0], d, d, &enc[0], rb, m, &all[0], ostride)
					for j := 0; j < m; j++ {
						var one [4]float32
						k.scores(&q[0], d, d, &enc[j*rb], rb, 1, &one[0], 16)
						for h := 0; h < 4; h++ {
							if got := all[j*ostride/4+h]; math.Float32bits(got) != math.Float32bits(one[h]) {
								t.Fatalf("%s d%d m%d ostride %d row %d query %d: %g among the rows, %g alone", f, d, m, ostride, j, h, got, one[h])
							}
						}
						for i := j*ostride/4 + 4; i < (j+1)*ostride/4 && j+1 < m; i++ {
							if !math.IsNaN(float64(all[i])) {
								t.Fatalf("%s d%d m%d ostride %d: wrote out[%d] between rows", f, d, m, ostride, i)
							}
						}
					}
					for i := (m-1)*ostride/4 + 4; i < len(all); i++ {
						if !math.IsNaN(float64(all[i])) {
							t.Fatalf("%s d%d m%d ostride %d: wrote out[%d] past the last row", f, d, m, ostride, i)
						}
					}
				}
			}
		}
	}
}

// TestAVX2FloatAccPerRow checks that the accumulate kernels over m rows add, bit for bit, what
// m calls of one row each add: one fused multiply-add per row in row order, whatever the tiles
// (a row skipped, repeated or weighted with another row's weight or scale fails). Rows of an
// odd and an even count of 32-value groups: fp8's kernel widens a whole next tile's first group
// into either scratch (accFP8).
func TestAVX2FloatAccPerRow(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(45, 46))
	for _, f := range []Format{F16, BF16, FP8} {
		k := avx2FloatKernels[f]
		for _, d := range []int{32, 64, 96, 128} {
			c := mustCodec(t, f, d)
			rb := c.RowBytes()
			for _, m := range avx2FloatRows {
				enc := make([]byte, m*rb)
				EncodeRows(c, enc, outlierRows(rng, m, d), m)
				w := gaussianRows(rng, m, 5, 1) // wstride 20: a fifth weight between rows
				acc0 := gaussianRows(rng, 4, d, 1)
				all := append([]float32(nil), acc0...)
				k.acc(&all[0], d, d, &enc[0], rb, m, &w[0], 20)
				one := append([]float32(nil), acc0...)
				for j := 0; j < m; j++ {
					k.acc(&one[0], d, d, &enc[j*rb], rb, 1, &w[5*j], 20)
				}
				for i := range all {
					if math.Float32bits(all[i]) != math.Float32bits(one[i]) {
						t.Fatalf("%s d%d m%d acc %d [%d]: %g over the rows, %g row by row", f, d, m, i/d, i%d, all[i], one[i])
					}
				}
			}
		}
	}
}

// TestFP8ScoresAhead checks that multiScoresFP8AVX2TW, which widens each group's codes a group
// ahead of its FMAs, gives multiScoresFP8AVX2T's scores bit for bit (so does its runs flavour),
// for one to eight groups a row and avx2FloatRows, rows with outliers and every NaN and
// subnormal code among them, and writes nothing else.
func TestFP8ScoresAhead(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(47, 48))
	for _, d := range []int{32, 64, 96, 128, 256} {
		c := mustCodec(t, FP8, d)
		rb := c.RowBytes()
		for _, m := range avx2FloatRows {
			enc := make([]byte, m*rb)
			EncodeRows(c, enc, outlierRows(rng, m, d), m)
			for j := 0; j < m; j += 3 { // NaN and subnormal codes, both signs
				enc[j*rb+j%d] = []byte{0x7f, 0xff, 0x01, 0x87}[j%4]
			}
			q := gaussianRows(rng, 4, d, 1)
			const ostride = 20
			want := make([]float32, m*ostride/4+4)
			got := make([]float32, len(want))
			for i := range want {
				want[i], got[i] = float32(math.Inf(1)), float32(math.Inf(1))
			}
			multiScoresFP8AVX2T(&q[0], d, d, &enc[0], rb, m, &want[0], ostride)
			multiScoresFP8AVX2TW(&q[0], d, d, &enc[0], rb, m, &got[0], ostride)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("d%d m%d out[%d]: %g, multiScoresFP8AVX2T %g", d, m, i, got[i], want[i])
				}
			}
		}
	}
}
