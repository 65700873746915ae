//go:build amd64 && !purego

package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestTQ4UniScores checks tq4's uniform-scale kernel (multiScoresTQ4B2UVNNI) and its runs
// flavour (multiScoresTQ4B2URunsVNNI) bit for bit against the dot they state: per row and
// query the exact int32 Σ Q·tq4Ints of vnniDigitsUni's digits (value i < 16 of chunk b the low
// nibble of the row's byte 16b + i, value 16 + i its high nibble), converted, times the query's
// scale, times the row's float32 scale times the unit (offsets zero), and within two roundings
// of that plus an offset; for every even number of chunks to d 512, 48 rows (three groups of
// sixteen) at a strided output with sentinels between the scores, queries with an outlier and
// an all-zero one, codes from random bytes (every code), row scales random of either sign.
func TestTQ4UniScores(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	rng := rand.New(rand.NewPCG(41, 4))
	for _, runs := range []bool{false, true} {
		for _, d := range []int{64, 128, 192, 256, 512} {
			nb := d / 32
			rb := 16*nb + 4
			const m = 48
			rows := make([]byte, m*rb)
			for i := range rows {
				rows[i] = byte(rng.Uint32())
			}
			for j := 0; j < m; j++ {
				binary.LittleEndian.PutUint32(rows[j*rb+16*nb:], math.Float32bits(float32(rng.NormFloat64())))
			}
			q := gaussianRows(rng, 4, d, 1)
			q[3*d+7] = -55 // an outlier
			clear(q[1*d : 2*d])
			for _, withOff := range []bool{false, true} {
				dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
				var off [16]float32
				vnniDigitsUni(dig, aux, q, d, nb, &off)
				var Q [4][]int32
				var s [4]float32
				for h := range Q {
					Q[h] = make([]int32, d)
					s[h] = vnniQuantUni(q[h*d:(h+1)*d], Q[h])
				}
				off[4] = tq4Unit
				if withOff {
					off[0], off[1], off[2], off[3] = 0.5, -3, 1e-3, 7
				}
				const ostride = 24 // bytes: six floats a row, the last two sentinels
				out := make([]float32, 6*m)
				for i := range out {
					out[i] = -7
				}
				var stage [16]uint32
				if runs {
					multiScoresTQ4B2URunsVNNI(&dig[0], &aux[0], nb, &rows[0], rb, m, &out[0], ostride, &off[0], &stage[0], 0)
				} else {
					multiScoresTQ4B2UVNNI(&dig[0], &aux[0], nb, &rows[0], rb, m, &out[0], ostride, &off[0], &stage[0])
				}
				for j := 0; j < m; j++ {
					row := rows[j*rb : (j+1)*rb]
					z := math.Float32frombits(binary.LittleEndian.Uint32(row[16*nb:])) * tq4Unit
					for h := 0; h < 4; h++ {
						var dot int32
						for b := 0; b < nb; b++ {
							for i := 0; i < 32; i++ {
								code := row[16*b+i%16] >> (4 * (i / 16)) & 15
								dot += Q[h][32*b+i] * int32(tq4Ints[code])
							}
						}
						want := float32(float32(dot)*s[h]*z) + off[h]
						got := out[6*j+h]
						if !withOff {
							if math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("runs %v d %d row %d query %d: %g, want %g", runs, d, j, h, got, want)
							}
							continue
						}
						if e := math.Abs(float64(got - want)); e > 0x1p-22*(math.Abs(float64(want))+math.Abs(float64(off[h]))) {
							t.Fatalf("runs %v d %d row %d query %d with offsets: %g, want %g", runs, d, j, h, got, want)
						}
					}
					if out[6*j+4] != -7 || out[6*j+5] != -7 {
						t.Fatalf("runs %v d %d row %d: sentinels overwritten", runs, d, j)
					}
				}
			}
		}
	}
}

// TestMultiQueryTQ4Modes runs the reference checks (checkMulti: DotManyMulti against Dot within
// the scoresGridBlock bound and against Dot of ScoresGrid's query within the float bound,
// AccumulateManyMulti against AccumulateScaled) for tq4 with the two-chunk kernels (tq4PairMode
// 1) on the per-chunk grid (tq4UniMode −1) and the uniform one (1, where it can run), and
// checks that scoresGridBlock follows tq4Uni.
func TestMultiQueryTQ4Modes(t *testing.T) {
	defer func(p, u int) { tq4PairMode, tq4UniMode = p, u }(tq4PairMode, tq4UniMode)
	tq4PairMode = 1
	rng := rand.New(rand.NewPCG(173, 174))
	for _, mode := range []int{-1, 1} {
		uni := mode > 0
		t.Run(fmt.Sprintf("uni%v", uni), func(t *testing.T) {
			if uni && !hasAVX512VNNIVBMI() {
				t.Skip("the uniform-scale kernel does not run here")
			}
			tq4UniMode = mode
			for _, d := range []int{32, 64, 96, 128, 256, 512, 1024} {
				want := uni && d%64 == 0 && d <= 512
				if got := scoresGridBlock(Unwrap(mustCodec(t, TQ4, d))) > BlockSize; got != want {
					t.Fatalf("tq4 d%d: uniform grid %v, want %v", d, got, want)
				}
				for _, n := range []int{1, 4, 5} {
					for _, rows := range []int{1, 7, 17, 130} {
						t.Run(fmt.Sprintf("d%d/n%d/rows%d", d, n, rows), func(t *testing.T) {
							checkMulti(t, rng, TQ4, d, n, rows)
						})
					}
				}
			}
		})
	}
}
