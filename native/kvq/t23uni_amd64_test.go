//go:build amd64 && !purego

package kvq

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
)

// TestT23UniScores checks the uniform-scale turbo2 and turbo3 kernels (multiScoresT2PUVNNI,
// multiScoresT3PUVNNI) bit for bit against the dot they state: per row and query the exact
// int32 Σ Q·level of vnniDigitsUni's digits, converted, times the query's scale, times the
// row's f16 scale times the unit (offsets zero), and within two roundings of that plus an
// offset; for every d the paired kernels take (rb ≤ 48 and 52) and d up to 512 for the general
// ones (multiScoresT2UVNNI, multiScoresT3UVNNI), 32 rows (two groups of sixteen) at a
// strided output with sentinels between the scores, queries with an outlier and an all-zero
// one, codes from random bytes (every code, the row scales random f16 of either sign).
func TestT23UniScores(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	rng := rand.New(rand.NewPCG(23, 3))
	type kcase struct {
		name  string
		bits  int
		ints  []int8
		unit  float32
		ds    []int
		kern  vnniScoresKern
		perm  func(dig *byte, n int)
		chunk int // values a kernel step
	}
	for _, k := range []kcase{
		{"turbo2", 2, turboInts2[:], turboUnit2, []int{64, 128}, multiScoresT2PUVNNI, t2DigitsPermute, 64},
		{"turbo3", 3, turboInts3[:], turboUnit3, []int{32, 64, 96, 128}, multiScoresT3PUVNNI, t3DigitsPermute, 32},
		{"turbo2 general", 2, turboInts2[:], turboUnit2, []int{64, 128, 192, 256, 512}, multiScoresT2UVNNI, t2DigitsPermute, 64},
		{"turbo3 general", 3, turboInts3[:], turboUnit3, []int{32, 96, 160, 256, 512}, multiScoresT3UVNNI, t3DigitsPermute, 32},
	} {
		for _, d := range k.ds {
			nb := d / 32
			rb := k.bits*d/8 + 2
			const m = 32
			rows := make([]byte, m*rb+64) // the kernels' masked loads stay within rows
			for i := range rows {
				rows[i] = byte(rng.Uint32())
			}
			for j := 0; j < m; j++ {
				s := float32(rng.NormFloat64())
				binary.LittleEndian.PutUint16(rows[j*rb+rb-2:], F32ToF16(s))
			}
			q := gaussianRows(rng, 4, d, 1)
			q[1*d+5] = 40 // an outlier
			clear(q[2*d : 3*d])
			for _, withOff := range []bool{false, true} {
				dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
				var off [16]float32
				vnniDigitsUni(dig, aux, q, d, nb, &off)
				var Q [4][]int32
				var s [4]float32
				for h := range Q {
					Q[h] = make([]int32, d)
					s[h] = vnniQuantUni(q[h*d:(h+1)*d], Q[h])
					if off[8+h] != s[h] {
						t.Fatalf("query %d: scale %g, vnniQuantUni %g", h, off[8+h], s[h])
					}
				}
				k.perm(&dig[0], nb*vnniBlockBytes/2/64)
				off[4] = k.unit
				if withOff {
					off[0], off[1], off[2] = 0.5, -3, 1e-3
				}
				const ostride = 24 // bytes: six floats a row, the last two sentinels
				out := make([]float32, 6*m)
				for i := range out {
					out[i] = -7
				}
				var stage [16]uint32
				k.kern(&dig[0], &aux[0], d/k.chunk, &rows[0], rb, m, &out[0], ostride, &off[0], &stage[0])
				for j := 0; j < m; j++ {
					row := rows[j*rb : (j+1)*rb]
					z := F16ToF32(binary.LittleEndian.Uint16(row[rb-2:])) * k.unit
					for h := 0; h < 4; h++ {
						var dot int32
						for i := 0; i < d; i++ {
							bit := k.bits * i
							code := int(binary.LittleEndian.Uint16(row[bit/8:])>>(bit%8)) & (1<<k.bits - 1)
							dot += Q[h][i] * int32(k.ints[code])
						}
						want := float32(float32(dot)*s[h]*z) + off[h] // the kernel's FMA adds a +0 offset too
						got := out[6*j+h]
						if !withOff {
							if math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s d %d row %d query %d: %g, want %g", k.name, d, j, h, got, want)
							}
							continue
						}
						if e := math.Abs(float64(got - want)); e > 0x1p-22*(math.Abs(float64(want))+math.Abs(float64(off[h]))) {
							t.Fatalf("%s d %d row %d query %d with offsets: %g, want %g", k.name, d, j, h, got, want)
						}
					}
					if out[6*j+4] != -7 || out[6*j+5] != -7 {
						t.Fatalf("%s d %d row %d: sentinels overwritten", k.name, d, j)
					}
				}
			}
		}
	}
}

// TestVNNIGridUni checks that vnniGridUni rounds as vnniDigitsUni (q̃ = s·Q) and within the
// stated bound, |q − q̃| ≤ (1 + 2⁻⁶)/254·max|q| over the query's whole blocks.
func TestVNNIGridUni(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, d := range []int{64, 96, 128, 160} {
		nb := d / 32
		q := gaussianRows(rng, 4, d, 1)
		q[2*d+7] = -1e3
		grid := make([]float32, 4*d)
		vnniGridUni(grid, q, d, nb, vnniQMax1)
		dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
		var off [16]float32
		vnniDigitsUni(dig, aux, q, d, nb, &off)
		for h := 0; h < 4; h++ {
			var m float64
			for _, v := range q[h*d : (h+1)*d] {
				m = math.Max(m, math.Abs(float64(v)))
			}
			var total int32
			for i := 0; i < d; i++ {
				Q := int32(int8(dig[i/32*128+h*32+i%32]))
				total += Q
				if g := off[8+h] * float32(Q); grid[h*d+i] != g {
					t.Fatalf("d %d query %d value %d: grid %g, digits %g", d, h, i, grid[h*d+i], g)
				}
				if e := math.Abs(float64(q[h*d+i] - grid[h*d+i])); e > (1+0x1p-6)/254*m {
					t.Fatalf("d %d query %d value %d: |q − q̃| = %g > bound", d, h, i, e)
				}
				if math.Float32frombits(aux[i/32*vnniAuxWords+h]) != off[8+h] {
					t.Fatalf("d %d query %d: block scale differs", d, h)
				}
			}
			if int32(math.Float32bits(off[12+h])) != -128*total {
				t.Fatalf("d %d query %d: offset %d, want %d", d, h, int32(math.Float32bits(off[12+h])), -128*total)
			}
		}
	}
}

// TestT23UniSpeed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the thread-CPU time of turbo2's and turbo3's DotManyMulti through the per-group
// kernels (T2P, T3P) and the uniform-scale ones (t23Uni), alternated (scoreSpeedsHuge, the
// query preparation included): in cache and streamed from 2 MiB pages, ns min/median.
func TestT23UniSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	defer func(v int) { t23UniMode = v }(t23UniMode)
	modes := []func(func()){
		func(f func()) { t23UniMode = -1; f() },
		func(f func()) { t23UniMode = 1; f() },
	}
	for _, f := range []Format{Turbo2, Turbo3} {
		cache, stream, passRows := scoreSpeedsHuge(t, f, modes)
		t.Logf("%v scores per row of %d values, 4 queries, ns min/median: in cache %s, uniform %s; streamed %s, uniform %s",
			f, benchDim, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
			minMedian(stream[0], passRows), minMedian(stream[1], passRows))
	}
}

// TestT23UniKernelSpeed reports (KVLAB_SPEED_REPORT set) the kernels alone, without the query
// preparation: per row and four queries, T2P against T2PU and T3P against T3PU (d 128), T2
// against T2U and T3 against T3U (d 256), alternated, 4096-row calls in cache and over 96 MiB of 2 MiB pages, ns min/median of
// KVLAB_SPEED_ROUNDS rounds.
func TestT23UniKernelSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rounds := speedRounds(9)
	for _, k := range []struct {
		f        Format
		d        int
		old, uni vnniScoresKern

		perm  func(*byte, int)
		chunk int
		unit  float32
	}{
		{Turbo2, 128, multiScoresT2PVNNI, multiScoresT2PUVNNI, t2DigitsPermute, 64, turboUnit2},
		{Turbo3, 128, multiScoresT3PVNNI, multiScoresT3PUVNNI, t3DigitsPermute, 32, turboUnit3},
		{Turbo2, 256, multiScoresT2VNNI, multiScoresT2UVNNI, t2DigitsPermute, 64, turboUnit2},
		{Turbo3, 256, multiScoresT3VNNI, multiScoresT3UVNNI, t3DigitsPermute, 32, turboUnit3},
	} {
		c := mustCodec(t, k.f, k.d)
		rb := c.RowBytes()
		src := outlierRows(rand.New(rand.NewPCG(9, 10)), benchRows, k.d)
		tile := make([]byte, benchRows*rb)
		for r := 0; r < benchRows; r++ {
			c.Encode(tile[r*rb:(r+1)*rb], src[r*k.d:(r+1)*k.d])
		}
		big := hugemem.Bytes((96 << 20) / len(tile) * len(tile))
		for o := 0; o < len(big); o += len(tile) {
			copy(big[o:], tile)
		}
		d, nb := k.d, k.d/32
		q := gaussianRows(rand.New(rand.NewPCG(7, 8)), 4, d, 1)
		dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
		digU, auxU := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
		vnniDigits(dig, aux, q, d, nb, 1)
		k.perm(&dig[0], nb*vnniBlockBytes/2/64)
		var off [16]float32
		vnniDigitsUni(digU, auxU, q, d, nb, &off)
		k.perm(&digU[0], nb*vnniBlockBytes/2/64)
		off[4] = k.unit
		var stage [16]uint32
		out := make([]float32, 4*benchRows)
		chunks := len(big) / len(tile)
		var ns [2][2][]time.Duration
		for r := 0; r < rounds; r++ {
			for i, kern := range []vnniScoresKern{k.old, k.uni} {
				dg, ax := dig, aux
				if i == 1 {
					dg, ax = digU, auxU
				}
				var dc time.Duration
				for j := 0; j < 50; j++ {
					t0 := cputime.Thread()
					kern(&dg[0], &ax[0], d/k.chunk, &tile[0], rb, benchRows, &out[0], 16, &off[0], &stage[0])
					dc += cputime.Thread() - t0
				}
				t1 := cputime.Thread()
				for j := 0; j < chunks; j++ {
					kern(&dg[0], &ax[0], d/k.chunk, &big[j*len(tile)], rb, benchRows, &out[0], 16, &off[0], &stage[0])
				}
				ns[i][0] = append(ns[i][0], dc)
				ns[i][1] = append(ns[i][1], cputime.Thread()-t1)
			}
		}
		t.Logf("%v kernels per row of %d values, 4 queries, ns min/median: in cache %s, uniform %s; streamed %s, uniform %s",
			k.f, d, minMedian(ns[0][0], 50*benchRows), minMedian(ns[1][0], 50*benchRows),
			minMedian(ns[0][1], chunks*benchRows), minMedian(ns[1][1], chunks*benchRows))
	}
}

// TestVNNIDigitsUniAVX512 checks vnniDigitsUniAVX512 against vnniDigitsUni bit for bit (the
// digits, the blocks' scale words, off[8..15]) and the bytes past the digits untouched, on
// Gaussian queries with an outlier, an all-zero query, one below the normal range (s 0), one
// near the largest float32 and ties (values at half-integer multiples of s); and false for a
// query holding ±Inf or NaN.
func TestVNNIDigitsUniAVX512(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, d := range []int{32, 64, 96, 128, 256, 320} {
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
					q[i] = float32(rng.IntN(255)-127) * 0.5 / 127 // ties of x·inv at .5
				}
				q[0] = 1
			}
			want, got := make([]byte, nb*128+16), make([]byte, nb*128+16)
			for i := range got {
				got[i] = 0x5A
			}
			copy(want[nb*128:], got[nb*128:])
			wa, ga := make([]uint32, nb*vnniAuxWords), make([]uint32, nb*vnniAuxWords)
			var wo, gO [16]float32
			vnniDigitsUni(want, wa, q, d, nb, &wo)
			bad := trial >= 4
			if bad {
				q[rng.IntN(4*d)] = []float32{float32(math.Inf(-1)), float32(math.NaN())}[trial-4]
			}
			if ok := vnniDigitsUniAVX512(&got[0], &ga[0], &q[0], d, nb, &gO[0]); ok == bad {
				t.Fatalf("d %d trial %d: returned %v", d, trial, ok)
			}
			if bad {
				continue
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("d %d trial %d: byte %d = %#x, want %#x", d, trial, i, got[i], want[i])
				}
			}
			for b := 0; b < nb; b++ {
				for h := 0; h < 4; h++ {
					if ga[b*vnniAuxWords+h] != wa[b*vnniAuxWords+h] {
						t.Fatalf("d %d trial %d: block %d scale %d differs", d, trial, b, h)
					}
				}
			}
			for i := 8; i < 16; i++ {
				if math.Float32bits(gO[i]) != math.Float32bits(wo[i]) {
					t.Fatalf("d %d trial %d: off[%d] = %#x, want %#x", d, trial, i, math.Float32bits(gO[i]), math.Float32bits(wo[i]))
				}
			}
		}
	}
}
