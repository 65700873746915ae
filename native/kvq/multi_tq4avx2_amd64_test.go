//go:build amd64 && !purego

package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// withAVX2Int runs f with the AVX2 integer scores kernels of tq4 and turbo4 selected (the
// AVX-512 VNNI ones off), in the AVX-VNNI flavour or the plain one.
func withTurboAVX2Int(vnni bool, f func()) {
	v, i := hasAVXVNNI, tq4AVX2Int
	hasAVXVNNI, tq4AVX2Int = vnni && tq4AVXVNNICPU, true
	defer func() { hasAVXVNNI, tq4AVX2Int = v, i }()
	withoutVNNI(f)
}

// TestMultiQueryTQ4AVX2Int runs the reference checks of tq4 and turbo4 (scores within the VNNI
// bounds of ScoresGrid's rounding, values within the integer accumulation's slack) through both
// flavours of the AVX2 integer kernels, across d (scores: multiples of 32; values: of 16; 200
// through the float kernels), query counts, and row counts around the scores' groups of eight
// and sixteen rows and the values' tiles of 64 and row pairs; and through the AVX2 float
// kernels the integer ones replace.
func TestMultiQueryTQ4AVX2Int(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	run := func(name string) {
		for _, f := range []Format{TQ4, Turbo4, Turbo3, Turbo2} {
			for _, d := range []int{32, 48, 64, 96, 128, 200, 256} {
				for _, n := range []int{1, 4, 5} {
					for _, rows := range []int{1, 8, 9, 16, 23, 130} {
						t.Run(fmt.Sprintf("%s/%s/d%d/n%d/rows%d", name, f, d, n, rows), func(t *testing.T) {
							checkMulti(t, rng, f, d, n, rows)
						})
					}
				}
			}
		}
	}
	if cpuHasAVXVNNI() {
		withTurboAVX2Int(true, func() { run("avxvnni") })
		withTurboAVX2Int(true, func() { // turbo3's, turbo2's and turbo4's per-group AVX-VNNI kernels
			defer func(v, w, x int) { t3UniVNNIMode, t2UniVNNIMode, t4UniVNNIMode = v, w, x }(t3UniVNNIMode, t2UniVNNIMode, t4UniVNNIMode)
			t3UniVNNIMode, t2UniVNNIMode, t4UniVNNIMode = -1, -1, -1
			run("avxvnnipergroup")
		})
	}
	withTurboAVX2Int(false, func() { run("avx2") })
	withTurboAVX2Int(false, func() { // turbo3's, turbo2's and turbo4's per-group plain kernels
		defer func(v, w, x int) { t3UniAVX2Mode, t2UniAVX2Mode, t4UniAVX2Mode = v, w, x }(t3UniAVX2Mode, t2UniAVX2Mode, t4UniAVX2Mode)
		t3UniAVX2Mode, t2UniAVX2Mode, t4UniAVX2Mode = -1, -1, -1
		run("avx2pergroup")
	})
	withAVX2Kernels(func() {
		i := tq4AVX2Int
		tq4AVX2Int = false
		defer func() { tq4AVX2Int = i }()
		run("float")
	})
}

// cpuHasAVXVNNI reports the CPU's AVX-VNNI, whatever KVLAB_NO_AVXVNNI says.
func cpuHasAVXVNNI() bool { return tq4AVXVNNICPU }

// TestTQ4AVX2ScoresMatch checks that the AVX2 integer kernels' scores (tq4, turbo4, turbo3, turbo2)
// are the AVX-512 VNNI kernels' bit for bit (where the CPU has those), and the two AVX2
// flavours' each other's, on random rows and queries and on the ones at the plain flavour's
// saturation edge (every digit ±127 against the extreme codes, pair sums of ±2·127·104 for
// tq4's levels), with contiguous and strided outputs, over 48 rows and over 1040 (where tq4's
// and turbo4's AVX-VNNI kernels take two streams of rows, twoStreams).
func TestTQ4AVX2ScoresMatch(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	type kern = vnniScoresKern
	for _, kind := range []int{vnniTQ4, vnniT4, vnniT3, vnniT2} {
		for _, d := range []int{32, 64, 128, 160, 256} {
			if kind == vnniT2 && d%64 != 0 {
				continue
			}
			for _, ce := range []struct {
				m    int
				edge bool
			}{{48, false}, {48, true}, {1040, false}} { // 1040 rows: the AVX-VNNI kernels' two streams
				m, edge := ce.m, ce.edge
				nb := d / 32
				nc := d / 2 // code bytes
				rb := nc + 4
				switch kind {
				case vnniT4:
					rb = nc + 2
				case vnniT3:
					nc = 3 * d / 8
					rb = nc + 2
				case vnniT2:
					nc = d / 4
					rb = nc + 2
				}
				rows := make([]byte, m*rb)
				for j := 0; j < m; j++ {
					row := rows[j*rb : (j+1)*rb]
					for i := range row[:nc] {
						row[i] = byte(rng.Uint32())
						if edge {
							row[i] = []byte{0x00, 0xFF}[j%2]
						}
					}
					s := float32(rng.ExpFloat64()) + 0.01
					if kind == vnniTQ4 {
						binary.LittleEndian.PutUint32(row[nc:], math.Float32bits(s))
					} else {
						binary.LittleEndian.PutUint16(row[nc:], F32ToF16(s))
					}
				}
				q := gaussianRows(rng, 4, d, 1)
				if edge {
					for i := range q {
						q[i] = float32(1 - 2*int(rng.IntN(2)))
					}
				}
				// The digits of the queries as the kernels read them: turbo3's AVX2 kernels in
				// t3AVX2PermPlain's order, the AVX-512 one in the values'.
				digits := func(q []float32) ([]byte, []uint32) {
					dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
					vnniDigits(dig, aux, q, d, nb, 1)
					return dig, aux
				}
				dig, aux := digits(q)
				dig512, aux512 := dig, aux
				if kind == vnniT2 && hasVNNIBW && hasVBMI { // the AVX-512 kernel's order
					dig512 = append([]byte(nil), dig...)
					t2DigitsPermute(&dig512[0], len(dig512)/64)
				}
				if kind == vnniT3 && hasVNNIBW && hasVBMI {
					dig512 = append([]byte(nil), dig...)
					t3DigitsPermute(&dig512[0], len(dig512)/64)
				}
				digVNNI := dig // the AVX-VNNI kernels' digits: turbo2's in t2AVX2Perm's order
				if kind == vnniT2 {
					qp := make([]float32, len(q))
					avx2Permute(&t2AVX2Perm, qp, q, 4, d)
					dig, aux = digits(qp)
					digVNNI = dig
				}
				if kind == vnniT3 { // both turbo3 kernels' order
					qp := make([]float32, len(q))
					avx2Permute(&t3AVX2PermPlain, qp, q, 4, d)
					dig, aux = digits(qp)
					digVNNI = dig
				}
				digWide := dig // the plain turbo2 kernel's widened digits
				if kind == vnniT2 {
					digWide = make([]byte, 9*len(dig))
					t2AVX2Widen(&dig[0], &aux[0], &digWide[0], nb)
				}
				kb := nb // the kernels' chunks: turbo2's of 64 values
				if kind == vnniT2 {
					kb = nb / 2
				}
				offs := [5]float32{0.5, -1, 0, 2, tq4Unit}
				var stage [40]uint32 // the AVX2 kernels align their stage words within it
				type named struct {
					k      kern
					avx512 bool
					wide   bool // reads digWide
					vnni   bool // reads digVNNI
				}
				score := func(k named, ostride int) []float32 {
					out := make([]float32, m*ostride/4)
					for i := range out {
						out[i] = float32(math.NaN())
					}
					dg, ax := dig, aux
					if k.avx512 {
						dg, ax = dig512, aux512
					}
					if k.vnni {
						dg = digVNNI
					}
					if k.wide {
						dg = digWide
					}
					k.k(&dg[0], &ax[0], kb, &rows[0], rb, m, &out[0], ostride, &offs[0], &stage[0])
					return out
				}
				pick := func(tq4, t4, t3, t2 kern) kern {
					return map[int]kern{vnniTQ4: tq4, vnniT4: t4, vnniT3: t3, vnniT2: t2}[kind]
				}
				kernels := map[string]named{"avx2": {pick(multiScoresTQ4AVX2I, multiScoresT4AVX2I, multiScoresT3AVX2I, multiScoresT2AVX2I), false, kind == vnniT2, false}}
				if cpuHasAVXVNNI() {
					kernels["avxvnni"] = named{pick(multiScoresTQ4AVXVNNI, multiScoresT4AVXVNNI, multiScoresT3AVXVNNI, multiScoresT2AVXVNNI), false, false, true}
				}
				if hasVNNIBW && (kind == vnniTQ4 || kind == vnniT4 || hasVBMI) {
					kernels["avx512"] = named{pick(multiScoresTQ4VNNI, multiScoresT4VNNI, multiScoresT3VNNI, multiScoresT2VNNI), true, false, false}
				}
				for _, ostride := range []int{16, 24} {
					want := score(kernels["avx2"], ostride)
					for j := 0; j < m; j++ {
						for h := 0; h < 4; h++ {
							if v := want[j*ostride/4+h]; math.IsNaN(float64(v)) || v == 0 {
								t.Fatalf("kind %d d%d row %d query %d: avx2 score %g", kind, d, j, h, v)
							}
						}
					}
					for name, k := range kernels {
						got := score(k, ostride)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("kind %d d%d edge %v ostride %d [%d]: %s %g, avx2 %g", kind, d, edge, ostride, i, name, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestT4AccAVX2Match checks that the AVX2 integer accumulate kernels of turbo4, tq4, turbo3 and turbo2
// give the AVX-512 integer kernels' accumulators bit for bit (where the CPU has those), and the
// two AVX2 flavours each other's, over tiles of 64 rows with a short last one and a lone last
// row, contiguous and strided weights, softmax-like weights (some exactly 0) and a tile of
// zeros.
func TestT4AccAVX2Match(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(45, 46))
	type kern = func(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
	for _, kind := range []string{"turbo4", "tq4", "turbo3", "turbo2"} {
		for _, d := range []int{16, 48, 64, 128, 256} {
			for _, m := range []int{1, 2, 63, 64, 65, 130, 200} {
				nc := d / 2 // code bytes
				switch kind {
				case "turbo3":
					nc = 3 * d / 8
				case "turbo2":
					nc = d / 4
				}
				rb := nc + 2
				if kind == "tq4" {
					rb = nc + 4
				}
				rows := make([]byte, m*rb)
				for j := 0; j < m; j++ {
					row := rows[j*rb : (j+1)*rb]
					for i := range row[:nc] {
						row[i] = byte(rng.Uint32())
					}
					s := float32(rng.ExpFloat64()) + 0.01
					if kind == "tq4" {
						binary.LittleEndian.PutUint32(row[nc:], math.Float32bits(s))
					} else {
						binary.LittleEndian.PutUint16(row[nc:], F32ToF16(s))
					}
				}
				const n = 4
				for _, ws := range []int{4, 6} { // weights a row, in floats
					w := make([]float32, m*ws)
					for j := 0; j < m; j++ {
						for h := 0; h < n; h++ {
							x := math.Exp(3*rng.NormFloat64() - 6)
							if rng.IntN(7) == 0 || (j >= 64 && j < 128) {
								x = 0 // the second tile all zeros
							}
							w[j*ws+h] = float32(x)
						}
					}
					acc0 := gaussianRows(rng, n, d, 1)
					run := func(k kern) []float32 {
						acc := append([]float32(nil), acc0...)
						k(&acc[0], d, d, &rows[0], rb, m, &w[0], 4*ws)
						return acc
					}
					pick := func(t4, tq4, t3, t2 kern) kern {
						return map[string]kern{"turbo4": t4, "tq4": tq4, "turbo3": t3, "turbo2": t2}[kind]
					}
					kernels := map[string]kern{"avx2": pick(multiAccT4AVX2I, multiAccT4FAVX2I, multiAccT3AVX2I, multiAccT2AVX2I)}
					if tq4AVXVNNICPU {
						kernels["avxvnni"] = pick(multiAccT4AVXVNNI, multiAccT4FAVXVNNI, multiAccT3AVXVNNI, multiAccT2AVXVNNI)
					}
					if turboIntAcc(4, d) {
						kernels["avx512"] = pick(multiAccT4INT, multiAccT4FINT, multiAccT3INT, multiAccT2INT)
					}
					want := run(kernels["avx2"])
					changed := false
					for i := range want {
						changed = changed || want[i] != acc0[i]
					}
					if !changed {
						t.Fatalf("%s d%d m%d: the avx2 kernel left the accumulators as they were", kind, d, m)
					}
					for name, k := range kernels {
						got := run(k)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s d%d m%d wstride %d: acc %d [%d]: %s %g, avx2 %g", kind, d, m, 4*ws, i/d, i%d, name, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestQ2KScoresRangeMultiAVX2Int runs TestQ2KScoresRangeMulti's checks (the grid query's exact
// score, ScoresGrid, the bound; partial groups of cells, d not a multiple of 64 through the
// float kernel) through q2k's AVX2 integer kernels, both flavours.
func TestQ2KScoresRangeMultiAVX2Int(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	run := func() {
		bw := hasAVX512BW
		hasAVX512BW = false
		defer func() { hasAVX512BW = bw }()
		checkQ2KScoresRangeMulti(t)
	}
	if tq4AVXVNNICPU {
		withTurboAVX2Int(true, run)
	}
	withTurboAVX2Int(false, run)
}

// TestQ2KDigitsAVX2 checks q2kDigitsAVX2 against vnniDigits of the scaled queries, bit for bit
// (the digits in t2AVX2Perm's order, and the aux words the kernels read: the scales and
// −90·ΣQ and −128·ΣQ), on groups with a block of zero scales, negative scales, a query block
// of zeros and subnormal products, and that a non-finite scaled query (∞·0 included) reports
// false; and that q2kScoresInt's scores without avx512 (the plain AVX2 kernel, and where the
// CPU has AVX-VNNI that one too) are q2kAVX2Model's bit for bit.
func TestQ2KDigitsAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, d := range []int{64, 128, 192, 256} {
		h := newQ2K(t, d, 1.1)
		h.Append(q2kCells(uint64(d)+9, 40, d, true))
		grp := append([]byte(nil), h.Groups()[:Q2KGroupBytes(d)]...)
		for c := 32; c < 64; c++ { // a block of zero scales
			binary.LittleEndian.PutUint16(grp[2*c:], 0)
		}
		for c := 0; c < 16; c++ { // negative scales
			binary.LittleEndian.PutUint16(grp[2*c:], binary.LittleEndian.Uint16(grp[2*c:])|0x8000)
		}
		q := gaussianRows(rng, 4, d, 1)
		clear(q[d : d+32])                   // query 1's first block
		for c := 2*d + 64; c < 2*d+96; c++ { // query 2's third block: products far below 2⁻¹²⁶·127
			q[c] = 0x1p-120
		}
		qs := make([]float32, 4*d)
		for i := range qs {
			qs[i] = q[i] * F16ToF32(binary.LittleEndian.Uint16(grp[2*(i%d):]))
		}
		nb := d / 32
		want, wantAux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
		vnniDigits(want, wantAux, qs, d, nb, 1)
		var scratch [4 * q2kMultiMaxDim]float32
		dig := unsafe.Slice((*byte)(unsafe.Pointer(&scratch[0])), len(want))
		aux := unsafe.Slice((*uint32)(unsafe.Add(unsafe.Pointer(&scratch[0]), q2kDigBytes)), len(wantAux))
		if !q2kDigitsAVX2(&q[0], d, &grp[0], &dig[0], &aux[0]) {
			t.Fatalf("d %d: false on finite queries", d)
		}
		for i := range want {
			p := i % 32
			if g, x := dig[i], want[i-p+int(t2AVX2Perm[p])]; g != x {
				t.Fatalf("d %d: digit byte %d = %d, vnniDigits %d", d, i, int8(g), int8(x))
			}
		}
		for b := 0; b < nb; b++ {
			for _, w := range []int{0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15} {
				x := wantAux[b*vnniAuxWords+w]
				if w >= 8 && w < 12 { // −90·ΣQ (the plain flavour's) from −128·ΣQ
					x = uint32(int32(wantAux[b*vnniAuxWords+w+4]) / -128 * -90)
				}
				if g := aux[b*vnniAuxWords+w]; g != x {
					t.Fatalf("d %d: block %d aux word %d = %#x, vnniDigits %#x", d, b, w, g, x)
				}
			}
		}
		// Non-finite queries of either sign, and ∞ against a zero scale (∞·0: a NaN with its
		// sign bit set).
		for _, bad := range []struct {
			i int
			v float32
		}{{4*d - 1, float32(math.Inf(1))}, {4*d - 1, float32(math.Inf(-1))}, {4*d - 1, float32(math.NaN())},
			{d + 5, -float32(math.NaN())}, {3*d + 40, float32(math.Inf(1))}, {2*d + 33, float32(math.Inf(-1))}} {
			qb := append([]float32(nil), q...)
			qb[bad.i] = bad.v
			if q2kDigitsAVX2(&qb[0], d, &grp[0], &dig[0], &aux[0]) {
				t.Errorf("d %d: true with query value %d %g", d, bad.i, bad.v)
			}
		}
		// The AVX2 kernels, with and without AVX-VNNI, give q2kAVX2Model's scores (the
		// 32-channel grid and the kernels' float steps) bit for bit. (The AVX-512 kernel's grid
		// is per 64 channels, q2kGridBlock: its scores differ.)
		grp = h.Groups()[:Q2KGroupBytes(d)]
		for _, m := range []int{32, 13} {
			cells := &grp[2*d]
			want := q2kAVX2Model(q, d, grp, m)
			vnnis := []bool{false}
			if tq4AVXVNNICPU {
				vnnis = append(vnnis, true)
			}
			for _, vnni := range vnnis {
				got := make([]float32, 4*m)
				var s2 [4 * q2kMultiMaxDim]float32
				sv := hasAVXVNNI
				hasAVXVNNI = vnni
				ok := q2kScoresInt(false, &q[0], d, &grp[0], cells, m, &s2[0], &got[0], 16, false)
				hasAVXVNNI = sv
				if !ok {
					t.Fatal("q2kScoresInt (AVX2): false")
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("d %d m %d avxvnni %v cell %d query %d: %g, the 32-channel model %g", d, m, vnni, i/4, i%4, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestQ2KAVX2Extremes checks q2k's plain AVX2 kernel (q2kScoresInt without avx512) where its
// int16 sums are largest: cells of the extreme levels only (l + 10 = 20 on every value, or 0)
// against queries whose every digit is +127 or −127 (constant per block), so that a half
// group's int16 sum reaches ±4·2·20·127 = ±20320 and S = Σ (l + 10)·Q ±32·20·127, with mixed
// and random cells and queries beside them; the scores must equal the exact integer dots' (within
// the float rounding, 1e-5 of their magnitude); and, where the CPU has the AVX-512 VNNI kernel,
// its scores likewise against its exact dots (its grid per 64 channels).
func TestQ2KAVX2Extremes(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, d := range []int{64, 128, 192, 256} {
		gb := int(Q2KGroupBytes(d))
		grp := make([]byte, gb)
		for c := 0; c < d; c++ {
			binary.LittleEndian.PutUint16(grp[2*c:], 0x3C00) // scale 1
		}
		rb := d / 4
		for j := 0; j < GroupCells; j++ {
			cell := grp[2*d+j*rb : 2*d+(j+1)*rb]
			for i := range cell {
				switch j % 4 {
				case 0:
					cell[i] = 0xFF // code 3 everywhere: l + 10 = 20
				case 1:
					cell[i] = 0x00 // code 0: l + 10 = 0
				case 2:
					cell[i] = byte(0xFF * (i % 2)) // 20 and 0 by turns
				default:
					cell[i] = byte(rng.Uint32())
				}
			}
		}
		q := make([]float32, 4*d)
		for c := 0; c < d; c++ {
			q[c], q[d+c] = 1, -1 // every digit +127, −127
			q[2*d+c] = float32(1 - 2*(c/32%2))
			q[3*d+c] = float32(rng.NormFloat64())
		}
		code := func(j, c int) int { return int(grp[2*d+j*rb+c/4] >> (2 * (c % 4)) & 3) }
		for _, m := range []int{32, 13} {
			got := make([]float32, 4*m)
			var s [4 * q2kMultiMaxDim]float32
			if !q2kScoresInt(false, &q[0], d, &grp[0], &grp[2*d], m, &s[0], &got[0], 16, false) {
				t.Fatal("q2kScoresInt (AVX2): false")
			}
			for j := 0; j < m; j++ {
				for h := 0; h < 4; h++ {
					var score, mag float64
					for b := 0; b < d/32; b++ {
						sc, Q := vnniQuant((*[32]float32)(q[h*d+32*b:]), 1)
						var dot, abs int64
						for i, v := range Q {
							p := int64(v) * int64(turboInts2[code(j, 32*b+i)])
							dot += p
							abs += max(p, -p)
						}
						score += float64(sc) * float64(dot) * float64(turboUnit2)
						mag += float64(sc) * float64(abs) * float64(turboUnit2)
					}
					if g := float64(got[4*j+h]); math.Abs(g-score) > 1e-5*mag {
						t.Fatalf("d %d cell %d query %d: %g, exact %g", d, j, h, g, score)
					}
				}
			}
			if !hasVNNIBW || !hasVBMI {
				continue
			}
			// The AVX-512 kernel (its grid per 64 channels, q2kGridBlock) against its exact
			// integer dots: a 64-value chain reaches ±64·127·90 (Σ Q·l).
			want := make([]float32, 4*m)
			if !q2kScoresInt(true, &q[0], d, &grp[0], &grp[2*d], m, &s[0], &want[0], 16, false) {
				t.Fatal("q2kScoresInt (AVX-512): false")
			}
			var Q [64]int32
			for j := 0; j < m; j++ {
				for h := 0; h < 4; h++ {
					var score, mag float64
					for b := 0; b < d/64; b++ {
						sc := q2kQuantUniFMA(q[h*d+64*b:h*d+64*b+64], Q[:])
						var dot, abs int64
						for i, v := range Q {
							p := int64(v) * int64(turboInts2[code(j, 64*b+i)])
							dot += p
							abs += max(p, -p)
						}
						score += float64(sc) * float64(dot) * float64(turboUnit2)
						mag += float64(sc) * float64(abs) * float64(turboUnit2)
					}
					if g := float64(want[4*j+h]); math.Abs(g-score) > 1e-5*mag {
						t.Fatalf("AVX-512: d %d cell %d query %d: %g, exact %g", d, j, h, g, score)
					}
				}
			}
		}
	}
}

// q2kAVX2Model is what q2kScoresInt(false, …) writes for the four queries q[h·d:] and the first
// m cells of the group grp (out[4j + h]: cell j, query h), formed in Go: q'_c = q_c·scale_c
// (float32), each 32-channel block quantized by vnniQuantUni (vnniQuant's arithmetic) to s_b·Q, the
// exact int32 dot Σ_c Q_c·turboInts2[code_c] per block, converted, and the kernels' float steps:
// acc = fma(dot_b, s_b, acc) over the blocks in order from 0, then fma(acc, 1·turboUnit2, 0).
func q2kAVX2Model(q []float32, d int, grp []byte, m int) []float32 {
	out := make([]float32, 4*m)
	nb := d / 32
	Q := make([]int32, d)
	s := make([]float32, nb)
	qs := make([]float32, d)
	for h := 0; h < 4; h++ {
		for c := range qs {
			qs[c] = q[h*d+c] * F16ToF32(binary.LittleEndian.Uint16(grp[2*c:]))
		}
		for b := 0; b < nb; b++ {
			s[b] = vnniQuantUni(qs[32*b:32*(b+1)], Q[32*b:32*(b+1)])
		}
		for j := 0; j < m; j++ {
			var acc float32
			for b := 0; b < nb; b++ {
				var dot int32
				for c := 32 * b; c < 32*(b+1); c++ {
					k := j*d + c
					dot += Q[c] * int32(turboInts2[grp[2*d+k/4]>>(2*(k%4))&3])
				}
				acc = fma32(float32(dot), s[b], acc)
			}
			out[4*j+h] = fma32(acc, turboUnit2, 0)
		}
	}
	return out
}
