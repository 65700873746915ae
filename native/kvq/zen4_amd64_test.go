//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ80Zen4Matches checks the q8_0 kernels' Zen 4 flavours (zen4Stream: the same code
// prefetching into L2) against the others bit for bit, whichever of the two the codecs take
// here. Scores: dims of one to eight blocks, one group of sixteen rows to ten (past the
// prefetch distance of both), outputs contiguous and strided with sentinels after the last
// score. Values: four and two accumulators, dims of one block to a partial quad, a lone last
// row, odd pairs and several 64-row tiles. The rows are random bytes (every code) with random
// finite f16 scales.
func TestQ80Zen4Matches(t *testing.T) {
	if !hasVNNI || !intAcc() {
		t.Skip("no AVX-512 VNNI kernels here")
	}
	if !q80Z4Scores {
		t.Skip("no AVX-512 VBMI2 (multiScoresQ80Z4VNNI's VPSHLDD)")
	}
	rng := rand.New(rand.NewPCG(91, 92))
	randRows := func(rows, nb int) []byte {
		rb := 34 * nb
		enc := make([]byte, rows*rb)
		for i := range enc {
			enc[i] = byte(rng.Uint32())
		}
		for j := 0; j < rows; j++ {
			for b := 0; b < nb; b++ {
				s := F32ToF16(float32(rng.NormFloat64()) * 0.01)
				enc[j*rb+34*b], enc[j*rb+34*b+1] = byte(s), byte(s>>8)
			}
		}
		return enc
	}
	const sentinel = float32(-12345.5)
	for _, nb := range []int{1, 2, 3, 4, 5, 8} {
		d := 32 * nb
		for _, m := range []int{16, 32, 48, 160} {
			for _, ostride := range []int{16, 20} {
				t.Run(fmt.Sprintf("scores/d%d/rows%d/stride%d", d, m, ostride), func(t *testing.T) {
					enc := randRows(m, nb)
					q := gaussianRows(rng, 4, d, 1)
					dig := make([]byte, nb*vnniBlockBytes)
					aux := make([]uint32, nb*vnniAuxWords)
					stage := make([]uint16, nb*64)
					vnniDigits(dig, aux, q, d, nb, 2)
					q80ShldAux(aux, nb)
					offs := [4]float32{float32(rng.NormFloat64()), 0, float32(rng.NormFloat64()), -1}
					n := (m-1)*ostride/4 + 4
					a, b := make([]float32, n+8), make([]float32, n+8)
					for i := range a {
						a[i], b[i] = sentinel, sentinel
					}
					multiScoresQ80VNNI(&dig[0], &aux[0], &stage[0], nb, &enc[0], 34*nb, m, &a[0], ostride, &offs[0])
					multiScoresQ80Z4VNNI(&dig[0], &aux[0], &stage[0], nb, &enc[0], 34*nb, m, &b[0], ostride, &offs[0])
					for i := range a {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
							t.Fatalf("[%d]: Zen 4 kernel %g, the other %g", i, b[i], a[i])
						}
						if (i >= n || i%(ostride/4) >= 4) && a[i] != sentinel {
							t.Fatalf("[%d] written past the scores: %g", i, a[i])
						}
					}
				})
			}
		}
		if nb > 5 {
			continue
		}
		for _, rows := range []int{1, 2, 3, 5, 63, 64, 65, 130, 200} {
			t.Run(fmt.Sprintf("values/d%d/rows%d", d, rows), func(t *testing.T) {
				enc := randRows(rows, nb)
				for _, n := range []int{4, 2} {
					w := make([]float32, n*rows)
					for i := range w {
						w[i] = float32(math.Exp(-8 * rng.Float64()))
						if i >= n && rng.IntN(7) == 0 {
							w[i] = 0 // the first row's weights nonzero
						}
					}
					init := make([]float32, n*d)
					for i := range init {
						init[i] = float32(rng.NormFloat64())
					}
					a, b := append([]float32(nil), init...), append([]float32(nil), init...)
					k, z4 := multiAccQ80INT, multiAccQ80Z4INT
					if n == 2 {
						k, z4 = multiAccQ80TwoINT, multiAccQ80Z4TwoINT
					}
					k(&a[0], d, d, &enc[0], 34*nb, rows, &w[0], 4*n)
					z4(&b[0], d, d, &enc[0], 34*nb, rows, &w[0], 4*n)
					for i := range a {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
							t.Fatalf("%d accumulators: [%d][%d]: Zen 4 kernel %g, the other %g", n, i/d, i%d, b[i], a[i])
						}
					}
					if a[0] == init[0] && a[1] == init[1] && a[d-1] == init[d-1] {
						t.Fatalf("%d accumulators: nothing added", n)
					}
				}
			})
		}
	}
}

// TestBF16ScoresZen4Matches checks that the bf16 AVX-512 scores kernel gives the same scores bit
// for bit through its loop for AMD Zen 4 (zen4Stream: the same code prefetching into L2 as
// well) and the other, over dims with and without a tail past the last 32-value group, row
// counts odd and even, short and past both prefetch distances, outputs contiguous and strided
// with sentinels after the last score, and rows with outliers.
func TestBF16ScoresZen4Matches(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	saved := zen4Stream
	defer func() { zen4Stream = saved }()
	rng := rand.New(rand.NewPCG(93, 94))
	const sentinel = float32(-12345.5)
	for _, d := range []int{32, 64, 100, 128, 256} {
		c := mustCodec(t, BF16, d)
		rb, nv := c.RowBytes(), d&^31
		for _, m := range []int{1, 2, 3, 7, 64, 65, 200} {
			for _, ostride := range []int{16, 20} {
				t.Run(fmt.Sprintf("d%d/rows%d/stride%d", d, m, ostride), func(t *testing.T) {
					rows := make([]byte, m*rb)
					EncodeRows(c, rows, outlierRows(rng, m, d), m)
					q := gaussianRows(rng, 4, d, 1)
					n := (m-1)*ostride/4 + 4
					var got [2][]float32
					for i, z4 := range []bool{false, true} {
						zen4Stream = z4
						out := make([]float32, n+8)
						for j := range out {
							out[j] = sentinel
						}
						multiScoresBF16AVX512(&q[0], d, nv, &rows[0], rb, m, &out[0], ostride)
						for j := range out {
							if (j >= n || j%(ostride/4) >= 4) && out[j] != sentinel {
								t.Fatalf("zen4Stream %v: [%d] written past the scores: %g", z4, j, out[j])
							}
						}
						got[i] = out
					}
					for j := range got[0] {
						if math.Float32bits(got[0][j]) != math.Float32bits(got[1][j]) {
							t.Fatalf("[%d]: Zen 4 loop %g, the other %g", j, got[1][j], got[0][j])
						}
					}
				})
			}
		}
	}
}
