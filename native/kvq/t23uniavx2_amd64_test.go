//go:build amd64 && !purego

package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestT23UniAVX2Scores checks the uniform-scale AVX2 kernels of turbo3 (multiScoresT3UAVX2I at
// t3UniQMax), turbo2 (multiScoresT2UAVX2I at 127) and turbo4 (multiScoresT4UAVX2I at
// t4UniQMax), and where the CPU has AVX-VNNI their AVX-VNNI kernels at 127
// (multiScoresT3UAVXVNNI, multiScoresT2UAVXVNNI, multiScoresT4UAVXVNNI), bit for bit against
// the dot they state: per row and query the exact int32 Σ Q·L of the query's digits
// (vnniQuantUniQ at that largest |Q|, over the unpermuted query, so the permutation to the
// kernel's order is checked too), converted, times the query's scale, times the row's scale
// (f16) times the unit (offsets zero),
// and within two roundings of that plus an offset; for d from 32 (turbo2: 64) to 2048 (1024),
// 8 and 24 rows (the AVX-VNNI kernels for d ≤ 256 also 1040: turbo4's two streams) at a
// strided output with sentinels between the scores, queries with an outlier,
// an all-zero one and a constant one (every digit the largest), codes from random bytes and
// rows of all-ones bytes (every code the largest level: turbo3's u = 176, the largest
// VPMADDUBSW pair sums, 2·176·93; turbo2's int16 sums of four, 4·2·20·127).
func TestT23UniAVX2Scores(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(93, 88))
	type kcase struct {
		name  string
		bits  int
		ints  []int8
		unit  float32
		qmax  float32
		perm  *[32]uint8
		ds    []int
		chunk int
		kern  func(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)
		lmid  int32
		nib   bool // tq4's nibbles (even values low, odd high a 32-value group), not a bit stream
		f32   bool // an f32 row scale (tq4), not f16
	}
	cases := []kcase{
		{"turbo3", 3, turboInts3[:], turboUnit3, t3UniQMax, &t3AVX2PermPlain, []int{32, 64, 96, 128, 160, 256, 512, 2048}, 32, multiScoresT3UAVX2I, -88, false, false},
		{"turbo2", 2, turboInts2[:], turboUnit2, vnniQMax1, &t2AVX2Perm, []int{64, 128, 192, 256, 512, 1024}, 64, multiScoresT2UAVX2I, -90, false, false},
		{"turbo4", 4, tq4Ints[:], tq4Unit, t4UniQMax, nil, []int{32, 64, 96, 128, 160, 256, 512, 2048}, 32, multiScoresT4UAVX2I, -104, true, false},
	}
	if cpuHasAVXVNNI() { // turbo3's AVX-VNNI kernel: the levels + 128, the AVX-512 uniform digits
		cases = append(cases, kcase{"turbo3vnni", 3, turboInts3[:], turboUnit3, vnniQMax1, &t3AVX2PermPlain, []int{32, 64, 96, 128, 160, 256, 512}, 32, multiScoresT3UAVXVNNI, -128, false, false},
			kcase{"turbo4vnni", 4, tq4Ints[:], tq4Unit, vnniQMax1, nil, []int{32, 64, 96, 128, 160, 256, 512, 1024}, 32, multiScoresT4UAVXVNNI, -128, true, false},
			kcase{"turbo2vnni", 2, turboInts2[:], turboUnit2, vnniQMax1, &t2AVX2Perm, []int{64, 128, 192, 256, 512}, 64, multiScoresT2UAVXVNNI, -128, false, false})
	}
	for _, k := range cases {
		for _, d := range k.ds {
			ms := []int{8, 24}
			if strings.HasSuffix(k.name, "vnni") && d <= 256 {
				ms = append(ms, 1040) // the AVX-VNNI kernels' two streams (twoStreams)
			}
			for _, m := range ms {
				t.Run(fmt.Sprintf("%s/d%d/m%d", k.name, d, m), func(t *testing.T) {
					nb := d / 32
					rb := k.bits*d/8 + 2
					if k.f32 {
						rb += 2
					}
					rows := make([]byte, m*rb)
					for i := range rows {
						rows[i] = byte(rng.Uint32())
					}
					for j := 0; j < m; j++ {
						if j%5 == 3 {
							for i := 0; i < rb-2; i++ {
								rows[j*rb+i] = 0xFF
							}
						}
						s := float32(rng.NormFloat64())
						if k.f32 {
							binary.LittleEndian.PutUint32(rows[j*rb+rb-4:], math.Float32bits(s))
							continue
						}
						binary.LittleEndian.PutUint16(rows[j*rb+rb-2:], F32ToF16(s))
					}
					q := gaussianRows(rng, 4, d, 1)
					q[1*d+5] = 40 // an outlier
					clear(q[2*d : 3*d])
					for i := 0; i < d; i++ {
						q[3*d+i] = 0.75
					}
					if m != 8 {
						q[3*d+7] = -0.75
					}
					qp := make([]float32, 4*d)
					if k.nib {
						tq4Permute(qp, q, 4, d)
					} else {
						avx2Permute(k.perm, qp, q, 4, d)
					}
					for _, withOff := range []bool{false, true} {
						dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
						var off [16]float32
						vnniDigitsUniQ(dig, aux, qp, d, nb, &off, k.qmax)
						var Q [4][]int32
						var s [4]float32
						for h := range Q {
							Q[h] = make([]int32, d)
							s[h] = vnniQuantUniQ(q[h*d:(h+1)*d], Q[h], k.qmax)
							if off[8+h] != s[h] {
								t.Fatalf("query %d: scale %g, vnniQuantUniQ %g", h, off[8+h], s[h])
							}
						}
						wide := make([]byte, 1024*nb+128)
						uniWiden(dig, &off, wide, nb, k.lmid)
						off[4] = k.unit
						if withOff {
							off[0], off[1], off[2], off[3] = 0.5, -3, 1e-3, 7
						}
						const ostride = 24 // bytes: six floats a row, the last two sentinels
						out := make([]float32, 6*m)
						for i := range out {
							out[i] = -7
						}
						var stage [40]uint32 // turbo2's AVX-VNNI kernel aligns 128 bytes within it
						k.kern(&wide[0], &aux[0], d/k.chunk, &rows[0], rb, m, &out[0], ostride, &off[0], &stage[0])
						for j := 0; j < m; j++ {
							row := rows[j*rb : (j+1)*rb]
							z := F16ToF32(binary.LittleEndian.Uint16(row[rb-2:])) * k.unit
							if k.f32 {
								z = math.Float32frombits(binary.LittleEndian.Uint32(row[rb-4:])) * k.unit
							}
							for h := 0; h < 4; h++ {
								var dot int32
								for i := 0; i < d; i++ {
									bit := k.bits * i
									code := int(binary.LittleEndian.Uint16(row[bit/8:])>>(bit%8)) & (1<<k.bits - 1)
									if k.nib {
										code = int(row[16*(i/32)+i%32/2]>>(4*(i%2))) & 15
									}
									dot += Q[h][i] * int32(k.ints[code])
								}
								want := float32(float32(dot)*s[h]*z) + off[h]
								got := out[6*j+h]
								if !withOff {
									if math.Float32bits(got) != math.Float32bits(want) {
										t.Fatalf("row %d query %d: %g, want %g", j, h, got, want)
									}
									continue
								}
								if e := math.Abs(float64(got - want)); e > 0x1p-22*(math.Abs(float64(want))+math.Abs(float64(off[h]))) {
									t.Fatalf("row %d query %d with offsets: %g, want %g", j, h, got, want)
								}
							}
							if out[6*j+4] != -7 || out[6*j+5] != -7 {
								t.Fatalf("row %d: sentinels overwritten", j)
							}
						}
					}
				})
			}
		}
	}
}

// TestUniDigitsAVX2 checks uniDigitsAVX2 against vnniDigitsUniQ and uniWiden bit for bit (the
// digits, the widened digits and offsets, the blocks' scale words, off[8..15]) and the bytes
// past them untouched, at turbo3's, turbo4's and turbo2's qmax and offsets, on Gaussian queries with an
// outlier, an all-zero query, one below the normal range (s 0), one near the largest float32
// and ties (values at half-integer multiples of s); and false for a query holding ±Inf or NaN.
func TestUniDigitsAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, k := range []struct{ qmax, lmid int }{{t3UniQMax, -88}, {t4UniQMax, -104}, {vnniQMax1, -90}} {
		for _, d := range []int{32, 64, 96, 128, 256, 320, 2048} {
			nb := d / 32
			for trial := 0; trial < 6; trial++ {
				q := gaussianRows(rng, 4, d+3, 1)[:4*d]
				switch trial {
				case 1:
					q[d+3] = 200
					clear(q[2*d : 3*d])
				case 2:
					for i := range q[:d] {
						q[i] *= 1e-39
					}
					for i := range q[3*d:] {
						q[3*d+i] *= 3e37
					}
				case 3:
					for i := range q {
						q[i] = float32(rng.IntN(2*k.qmax+1)-k.qmax) * 0.5 / float32(k.qmax) // ties of x·inv at .5
					}
					q[0] = 1
				}
				want, got := make([]byte, nb*128+16), make([]byte, nb*128+16)
				ww, gw := make([]byte, nb*1024+128+16), make([]byte, nb*1024+128+16)
				for i := range got {
					got[i] = 0x5A
				}
				for i := range gw {
					gw[i] = 0xA5
				}
				copy(want[nb*128:], got[nb*128:])
				copy(ww[nb*1024+128:], gw[nb*1024+128:])
				wa, ga := make([]uint32, nb*vnniAuxWords), make([]uint32, nb*vnniAuxWords)
				var wo, gO [16]float32
				vnniDigitsUniQ(want, wa, q, d, nb, &wo, float32(k.qmax))
				uniWiden(want, &wo, ww, nb, int32(k.lmid))
				bad := trial >= 4
				if bad {
					q[rng.IntN(4*d)] = []float32{float32(math.Inf(-1)), float32(math.NaN())}[trial-4]
				}
				if ok := uniDigitsAVX2(&got[0], &ga[0], &gw[0], &q[0], d, nb, &gO[0], k.qmax, k.lmid); ok == bad {
					t.Fatalf("qmax %d d %d trial %d: returned %v", k.qmax, d, trial, ok)
				}
				if bad {
					continue
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("qmax %d d %d trial %d: byte %d = %#x, want %#x", k.qmax, d, trial, i, got[i], want[i])
					}
				}
				for i := range ww {
					if gw[i] != ww[i] {
						t.Fatalf("qmax %d d %d trial %d: widened byte %d = %#x, want %#x", k.qmax, d, trial, i, gw[i], ww[i])
					}
				}
				for b := 0; b < nb; b++ {
					for h := 0; h < 4; h++ {
						if ga[b*vnniAuxWords+h] != wa[b*vnniAuxWords+h] {
							t.Fatalf("qmax %d d %d trial %d: block %d scale %d differs", k.qmax, d, trial, b, h)
						}
					}
				}
				for i := 8; i < 16; i++ {
					if math.Float32bits(gO[i]) != math.Float32bits(wo[i]) {
						t.Fatalf("qmax %d d %d trial %d: off[%d] = %#x, want %#x", k.qmax, d, trial, i, math.Float32bits(gO[i]), math.Float32bits(wo[i]))
					}
				}
			}
		}
	}
}
