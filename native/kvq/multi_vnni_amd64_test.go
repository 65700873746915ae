//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"testing"
)

// withoutVNNI runs f with the VNNI scores kernels switched off, so the float kernels it
// replaces stay tested on CPUs that have it.
func withoutVNNI(f func()) {
	v, vb, i, ib, a := hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int
	hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int = false, false, false, false, false
	defer func() { hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int = v, vb, i, ib, a }()
	f()
}

// TestMultiQueryAVX512FloatQ4 runs the q4_0 and iq4_nl reference checks through the AVX-512
// float scores kernels, which the VNNI kernels replace where the CPU has both.
func TestMultiQueryAVX512FloatQ4(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	withoutVNNI(func() {
		for _, f := range []Format{Q4_0, IQ4_NL, Q4_1, Q5_0, Q5_1} {
			for _, d := range []int{40, 128, 200} {
				for _, n := range []int{1, 4, 5} {
					for _, rows := range []int{1, 7, 130} {
						t.Run(fmt.Sprintf("%s/d%d/n%d/rows%d", f, d, n, rows), func(t *testing.T) {
							checkMulti(t, rng, f, d, n, rows)
						})
					}
				}
			}
		}
	})
}

// TestVNNIBound checks the VNNI kernels' stated bound (multi_vnni_amd64.go) on the queries
// that stress it: one large value per block against a zero code (x = 0), the rest tiny, so the
// quantization term, not the float rounding, carries the error. It also checks the kernel is
// the one under test, that a row's score does not depend on the rows around it (groups of 16,
// a zero-padded last group), and that zero and non-finite queries give 0 and NaN.
func TestVNNIBound(t *testing.T) {
	if !intScores {
		t.Skip("no integer scores kernels")
	}
	rng := rand.New(rand.NewPCG(33, 34))
	for _, f := range []Format{Q4_0, Q8_0, IQ4_NL, Q4_1, Q5_0, Q5_1} {
		if f != Q4_0 && f != Q8_0 && f != Q4_1 && !intScoresBW {
			continue
		}
		for _, d := range []int{32, 128, 200, 1024} {
			checkVNNIBound(t, rng, f, d)
		}
	}
	if hasVNNIBW {
		for _, f := range []Format{Q4_1, Q5_1} { // the reference checks, for the kernels off by default
			for _, d := range []int{32, 40, 128} {
				checkMulti(t, rng, f, d, 5, 37)
			}
		}
	}
}

func checkVNNIBound(t *testing.T, rng *rand.Rand, f Format, d int) {
	{
		c := mustCodec(t, f, d)
		if rc, ok := c.(*rotCodec); ok {
			c = rc.inner // the kernels see the prepared query and the inner rows
		}
		mq := c.(MultiQuery)
		nd, _ := scoresDigits(c)
		if nd == 0 {
			t.Fatalf("%s d%d: DotManyMulti does not take the VNNI kernel", f, d)
		}
		qmax := vnniQMax1
		if nd == 2 {
			qmax = vnniQMax2
		}
		full := d / BlockSize
		rb, rows := c.RowBytes(), 37
		src := outlierRows(rng, rows, d)
		for r := 0; r < rows; r++ { // zero one value per block: the code 8 the queries aim at
			for b := 0; b*32 < d; b++ {
				src[r*d+b*32+5] = 0
			}
		}
		enc := make([]byte, rows*rb)
		for r := 0; r < rows; r++ {
			c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
		}
		// Each block of each query: a spike m at the zeroed value, the rest just short of
		// halfway between two steps of the kernel's grid (s = m/qmax), signed as row 0's
		// values, so the quantization errors add up on row 0 to almost the bound.
		const n = 4
		x := make([]float32, d)
		c.Decode(x, enc[:rb])
		q := make([]float32, n*d)
		for h := 0; h < n; h++ {
			for b := 0; b*32 < d; b++ {
				m := float32(math.Ldexp(1+rng.Float64(), 3*h))
				s := m / float32(qmax)
				for i := b * 32; i < min(b*32+32, d); i++ {
					v := (float32(rng.IntN(qmax/8)) + 0.49) * s
					if x[i] < 0 {
						v = -v
					}
					q[h*d+i] = v
				}
				q[h*d+b*32+5] = m
			}
		}
		out := make([]float32, rows*n)
		mq.DotManyMulti(q, n, enc, out)
		worst := 0.0
		for j := 0; j < rows; j++ {
			c.Decode(x, enc[j*rb:(j+1)*rb])
			for h := 0; h < n; h++ {
				qh := q[h*d : (h+1)*d]
				var quant, float float64
				for b := 0; b < full; b++ {
					var m, sx float64
					for i := 32 * b; i < 32*b+32; i++ {
						m = math.Max(m, math.Abs(float64(qh[i])))
						sx += math.Abs(float64(x[i]))
					}
					quant += m * sx
				}
				for i := range x {
					float += math.Abs(float64(qh[i]) * float64(x[i]))
				}
				bound := (1+0x1p-6)/float64(2*qmax)*quant + 1e-5*float
				ref := c.Dot(qh, enc[j*rb:(j+1)*rb])
				e := math.Abs(float64(out[j*n+h]) - float64(ref))
				if !(e <= bound) {
					t.Fatalf("%s d%d row %d query %d: %g, Dot %g: error %g > %g", f, d, j, h, out[j*n+h], ref, e, bound)
				}
				worst = max(worst, e/bound)
			}
		}
		if worst < 0.1 {
			t.Errorf("%s d%d: the worst error is %.3g of the bound: the test does not reach it", f, d, worst)
		}
		// A row's score is the same alone, in a whole group of 16 and in a padded group.
		for j := 0; j < rows; j++ {
			one := make([]float32, n)
			mq.DotManyMulti(q, n, enc[j*rb:(j+1)*rb], one)
			for h := range one {
				if math.Float32bits(one[h]) != math.Float32bits(out[j*n+h]) {
					t.Fatalf("%s d%d row %d query %d: %g alone, %g among %d rows", f, d, j, h, one[h], out[j*n+h], rows)
				}
			}
		}
		// Zero queries score 0; a NaN or infinite value makes its query's scores NaN.
		z := make([]float32, n*d)
		z[d+3] = float32(math.NaN())
		z[2*d+7] = float32(math.Inf(-1))
		mq.DotManyMulti(z, n, enc, out)
		for j := 0; j < rows; j++ {
			if out[j*n] != 0 || out[j*n+3] != 0 || !math.IsNaN(float64(out[j*n+1])) || !math.IsNaN(float64(out[j*n+2])) {
				t.Fatalf("%s d%d row %d: zero/NaN/Inf/zero queries scored %v", f, d, j, out[j*n:j*n+n])
			}
		}
	}
}

// TestVNNIDigitsAVX512 checks the vector digit preparations (vnniDigitsAVX512 and AVX2's
// avx2Digits) against vnniDigits byte for byte: Gaussian queries, blocks of zeros, tiny
// (subnormal) and huge values, exact halfway points of the grid, and that a NaN or an infinity
// is refused (the caller then uses vnniDigits).
func TestVNNIDigitsAVX512(t *testing.T) {
	impls := []struct {
		name string
		ok   bool
		f    func(dig *byte, aux *uint32, q *float32, d, nb, nd int) bool
	}{{"AVX-512", hasAVX512, vnniDigitsAVX512}, {"AVX2", hasAVX2, avx2Digits}}
	for _, im := range impls {
		if !im.ok {
			continue
		}
		t.Run(im.name, func(t *testing.T) { checkDigits(t, im.f) })
	}
}

func checkDigits(t *testing.T, digits func(dig *byte, aux *uint32, q *float32, d, nb, nd int) bool) {
	rng := rand.New(rand.NewPCG(35, 36))
	for trial := 0; trial < 200; trial++ {
		d := 32 * (1 + rng.IntN(8))
		if trial%3 == 0 {
			d += 8 // a short block the digits leave alone
		}
		nb := d / 32
		q := make([]float32, 4*d)
		for i := range q {
			q[i] = float32(rng.NormFloat64() * math.Exp(rng.NormFloat64()*3))
		}
		switch trial % 5 {
		case 1: // a zero block, a subnormal block, a block about where s stops being normal
			clear(q[d : d+32])
			for i := 2 * d; i < 2*d+32; i++ {
				q[i] = math.Float32frombits(uint32(rng.IntN(1 << 20)))
			}
			for i := 3 * d; i < 3*d+32; i++ {
				q[i] = float32(rng.NormFloat64() * 0x1p-119)
			}
		case 2: // values exactly halfway between two steps of the grid
			for h := 0; h < 4; h++ {
				m := float32(3)
				q[h*d] = m
				for i := 1; i < 32; i++ {
					q[h*d+i] = (float32(rng.IntN(100)) + 0.5) * (m / vnniQMax1)
				}
			}
		case 3: // huge values
			for i := range q {
				q[i] *= 1e30
			}
		}
		nd := 1 + trial%2
		want, wantAux := make([]byte, nb*vnniBlockBytes), make([]uint32, nb*vnniAuxWords)
		got, gotAux := make([]byte, nb*vnniBlockBytes), make([]uint32, nb*vnniAuxWords)
		for i := range got { // the digits must not write past their nd·128 bytes a block
			got[i], want[i] = 0x5a, 0x5a
		}
		vnniDigits(want, wantAux, q, d, nb, nd)
		if !digits(&got[0], &gotAux[0], &q[0], d, nb, nd) {
			t.Fatalf("trial %d: finite queries refused", trial)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("trial %d (d%d, %d digits): digit byte %d = %d, want %d", trial, d, nd, i, int8(got[i]), int8(want[i]))
			}
		}
		for i := range wantAux {
			if gotAux[i] != wantAux[i] {
				t.Fatalf("trial %d (d%d, %d digits): aux %d = %#x, want %#x", trial, d, nd, i, gotAux[i], wantAux[i])
			}
		}
		q[rng.IntN(4)*d+rng.IntN(nb*32)] = float32([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}[trial%3])
		if digits(&got[0], &gotAux[0], &q[0], d, nb, nd) {
			t.Fatalf("trial %d: a non-finite query accepted", trial)
		}
	}
}

// TestIQ4NLScoresVBMI checks iq4_nl's two VNNI scores kernels against each other bit for bit:
// the VBMI one (VPERMB lookups) where the CPU has it, the other (masks and VPSHUFB), over
// every code (random payload bytes under encoded scales), several dims (a short tail block
// too), a query count with a padded last group, row counts around the 16-row groups and
// queries with blocks of zeros. Whichever the codec takes, the bound checks test it; this
// runs the other as well.
func TestIQ4NLScoresVBMI(t *testing.T) {
	if !hasVNNIBW || !hasVBMI {
		t.Skip("no AVX-512 VNNI, BW and VBMI")
	}
	defer func(v bool) { iq4ScoresVBMI = v }(iq4ScoresVBMI)
	rng := rand.New(rand.NewPCG(81, 82))
	for _, d := range []int{32, 128, 200, 256} {
		for _, rows := range []int{1, 15, 16, 17, 64, 100} {
			// Keep the f16 scale, any codes.
			mq, enc := payloadRows(t, rng, IQ4_NL, d, rows, 2, 18)
			for _, n := range []int{4, 6} {
				checkSwitchScores(t, mq, n, enc, rows, &iq4ScoresVBMI, rng,
					fmt.Sprintf("d%d rows%d n%d", d, rows, n), [2]string{"VBMI kernel", "the other"})
			}
		}
	}
}

// TestVNNIScoresInPlace checks the VNNI scores of one to three queries, which the kernels
// write in place with each row's four-score store spilling into the next row: every query's
// scores equal its scores alone bit for bit (a query's digits do not depend on the others),
// over one run and over runs that end on whole groups of sixteen rows, and nothing past the
// output is written (the last row's spill).
func TestVNNIScoresInPlace(t *testing.T) {
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	const d = 128
	for _, f := range []Format{Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, IQ4_NL} {
		for _, rot := range []bool{false, true} {
			c, err := NewCodec(f, d, CodecOptions{Seed: 5, Head: 2, Rotate: rot})
			if err != nil {
				t.Fatal(err)
			}
			if rc, ok := c.(*rotCodec); ok {
				rc.muR = gaussianRows(rng, 1, d, 0.5)
			}
			rb := c.RowBytes()
			for _, lens := range [][]int{{16}, {17}, {32}, {47}, {16, 16}, {32, 5}, {16, 0}} {
				var runs [][]byte
				total := 0
				for _, m := range lens {
					run := make([]byte, m*rb)
					src := outlierRows(rng, m, d)
					for j := 0; j < m; j++ {
						c.Encode(run[j*rb:(j+1)*rb], src[j*d:(j+1)*d])
					}
					runs, total = append(runs, run), total+m
				}
				for _, n := range []int{1, 2, 3} {
					q := gaussianRows(rng, n, d, 1)
					buf := make([]float32, total*n+4)
					for i := range buf {
						buf[i] = float32(math.NaN())
					}
					got := buf[:total*n]
					DotManyMultiRuns(c, q, n, runs, got)
					for i, x := range buf[total*n:] {
						if !math.IsNaN(float64(x)) {
							t.Fatalf("%s rot=%v runs %v n %d: wrote %g at %d past the scores", f, rot, lens, n, x, i)
						}
					}
					for h := 0; h < n; h++ {
						one := make([]float32, total)
						DotManyMultiRuns(c, q[h*d:(h+1)*d], 1, runs, one)
						for j, w := range one {
							if g := got[j*n+h]; math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("%s rot=%v runs %v n %d: row %d query %d: %g, alone %g", f, rot, lens, n, j, h, g, w)
							}
						}
					}
				}
			}
		}
	}
}

// TestQ5ScoresGFNI checks q5_0's and q5_1's scores kernels with AVX-512 BITALG and GFNI
// against the VNNI ones bit for bit, as TestIQ4NLScoresVBMI does iq4_nl's: every code and
// fifth bit (random qh and payload bytes under encoded scales and minima), several dims (a
// short tail block too), a padded last group of queries, row counts around the 16-row groups,
// a zero query block, and a strided output.
func TestQ5ScoresGFNI(t *testing.T) {
	if !q5ScoresGFNI {
		t.Skip("no AVX-512 VNNI, BW, BITALG and GFNI")
	}
	defer func(v, z, x, x0 bool) {
		q5ScoresGFNI, q5ScoresZ4, q51ScoresX, q50ScoresX = v, z, x, x0
	}(q5ScoresGFNI, q5ScoresZ4, q51ScoresX, q50ScoresX)
	// TestQ5ScoresZ4 checks the Zen 4 and Intel flavours against these; q5_0's GFNI kernel is
	// checked on Intel too.
	q5ScoresZ4, q51ScoresX, q50ScoresX = false, false, false
	rng := rand.New(rand.NewPCG(83, 84))
	for _, f := range []Format{Q5_0, Q5_1} {
		hdr, bs := 2, 22 // the bytes after the scale (and minimum) are random
		if f == Q5_1 {
			hdr, bs = 4, 24
		}
		for _, d := range []int{32, 128, 200, 256} {
			for _, rows := range []int{1, 15, 16, 17, 64, 100} {
				mq, enc := payloadRows(t, rng, f, d, rows, hdr, bs)
				for _, n := range []int{4, 6} {
					checkSwitchScores(t, mq, n, enc, rows, &q5ScoresGFNI, rng,
						fmt.Sprintf("%v d%d rows%d n%d", f, d, rows, n), [2]string{"GFNI kernel", "VNNI"})
				}
			}
		}
	}
}

// TestQ5ScoresZ4 checks q5_0's and q5_1's Zen 4 scores kernels (q5ScoresZ4) and q5_1's Intel
// one (q51ScoresX) against the GFNI ones bit for bit, on TestQ5ScoresGFNI's rows (every code and fifth bit, row counts around
// the 16-row groups, a short tail block, a padded last group of queries, a zero query block,
// a strided output), and that nothing is written past the scores. It runs wherever the GFNI
// kernels do, Zen 4 or not.
func TestQ5ScoresZ4(t *testing.T) {
	if !q5ScoresGFNI {
		t.Skip("no AVX-512 VNNI, BW, BITALG and GFNI")
	}
	defer func(z, x, x0, s0, s1 bool) {
		q5ScoresZ4, q51ScoresX, q50ScoresX, q50Split, q51Split = z, x, x0, s0, s1
	}(q5ScoresZ4, q51ScoresX, q50ScoresX, q50Split, q51Split)
	defer func(r int) { twoStreamRows = r }(twoStreamRows)
	twoStreamRows = 0 // the two-stream flavours (q50Split, q51Split) over the few rows here
	rng := rand.New(rand.NewPCG(87, 88))
	const sentinel = float32(-7777.25)
	for _, f := range []Format{Q5_0, Q5_1} {
		hdr, bs := 2, 22
		if f == Q5_1 {
			hdr, bs = 4, 24
		}
		for _, d := range []int{32, 64, 128, 200, 256} {
			for _, rows := range []int{1, 15, 16, 17, 33, 48, 64, 100, 176} {
				mq, enc := payloadRows(t, rng, f, d, rows, hdr, bs)
				for _, n := range []int{1, 4, 6} {
					q := gaussianRows(rng, n, d, 1)
					if n > 1 {
						for i := 0; i < min(32, d); i++ {
							q[d+i] = 0
						}
					}
					// Z4, GFNI, and the Intel flavours (q51ScoresX, q50ScoresX without q5ScoresZ4),
					// over one stream of rows and over two (q50Split, q51Split).
					modes := [][3]bool{{true, false, false}, {false, false, false}, {false, true, false}, {false, true, true}}
					out := make([][]float32, len(modes))
					for k, v := range modes {
						q5ScoresZ4, q51ScoresX, q50ScoresX, q50Split, q51Split = v[0], v[1], v[1], v[2], v[2]
						out[k] = make([]float32, rows*n+16)
						for i := range out[k] {
							out[k][i] = sentinel
						}
						mq.DotManyMulti(q, n, enc, out[k][:rows*n])
					}
					what := fmt.Sprintf("%v d%d rows%d n%d", f, d, rows, n)
					for k, name := range []string{"Z4", "GFNI", "Intel", "Intel split"}[:len(modes)] {
						for i := range out[k] {
							if i >= rows*n {
								if out[k][i] != sentinel {
									t.Fatalf("%s: %s kernel wrote past the scores at %d", what, name, i)
								}
								continue
							}
							if math.Float32bits(out[k][i]) != math.Float32bits(out[1][i]) {
								t.Fatalf("%s: score %d (row %d, query %d): %s %g, GFNI %g", what, i, i/n, i%n, name, out[k][i], out[1][i])
							}
						}
					}
				}
			}
		}
	}
}

// payloadRows encodes rows outlier rows of d values in format f (blocks of bs bytes) and
// replaces each whole block's bytes past its first hdr (the scale, and minimum) with random
// ones: every code, under encoded scales.
func payloadRows(t *testing.T, rng *rand.Rand, f Format, d, rows, hdr, bs int) (MultiQuery, []byte) {
	t.Helper()
	c := mustCodec(t, f, d)
	rb := c.RowBytes()
	src := outlierRows(rng, rows, d)
	enc := make([]byte, rows*rb)
	for r := 0; r < rows; r++ {
		row := enc[r*rb : (r+1)*rb]
		c.Encode(row, src[r*d:(r+1)*d])
		for b := 0; b < d/32; b++ {
			for i := b*bs + hdr; i < (b+1)*bs; i++ {
				row[i] = byte(rng.Uint32())
			}
		}
	}
	return c.(MultiQuery), enc
}

// checkSwitchScores scores n random queries (query 1's first block zero) over rows rows of enc
// with *sw true and then false, and fails t unless the two agree bit for bit; what and names
// (the kernels under true and false) label a failure.
func checkSwitchScores(t *testing.T, mq MultiQuery, n int, enc []byte, rows int, sw *bool, rng *rand.Rand, what string, names [2]string) {
	t.Helper()
	d := mq.(Codec).Dim()
	q := gaussianRows(rng, n, d, 1)
	for i := 0; i < min(32, d); i++ {
		q[d+i] = 0
	}
	var out [2][]float32
	for k, v := range []bool{true, false} {
		*sw = v
		out[k] = make([]float32, rows*n)
		mq.DotManyMulti(q, n, enc, out[k])
	}
	for i := range out[0] {
		if math.Float32bits(out[0][i]) != math.Float32bits(out[1][i]) {
			t.Fatalf("%s: score %d (row %d, query %d): %s %g, %s %g", what, i, i/n, i%n, names[0], out[0][i], names[1], out[1][i])
		}
	}
}

// TestQ5ScoresGFNISpeed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the thread-CPU time of q5_0's and q5_1's DotManyMulti through the VNNI kernels and
// the GFNI ones (q5ScoresGFNI), alternated (scoreSpeeds): in cache and streamed, ns min/median.
func TestQ5ScoresGFNISpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !q5ScoresGFNI {
		t.Skip("no AVX-512 VNNI, BW, BITALG and GFNI")
	}
	defer func(v bool) { q5ScoresGFNI = v }(q5ScoresGFNI)
	modes := []func(func()){
		func(f func()) { q5ScoresGFNI = false; f() },
		func(f func()) { q5ScoresGFNI = true; f() },
	}
	for _, f := range []Format{Q5_0, Q5_1} {
		cache, stream, passRows := scoreSpeeds(t, f, modes)
		t.Logf("%v scores per row of %d values, 4 queries, ns min/median: in cache VNNI %s, GFNI %s; streamed VNNI %s, GFNI %s",
			f, benchDim, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
			minMedian(stream[0], passRows), minMedian(stream[1], passRows))
	}
}

// headerRows encodes rows of f (d values) from outlier data, then overwrites every block's
// header words (scale, and q4_1's minimum) with random finite halves, so each row and block
// has its own header and a header taken from the wrong row or block changes the scores.
func headerRows(t *testing.T, rng *rand.Rand, f Format, d, rows int) (MultiQuery, []byte) {
	c := mustCodec(t, f, d)
	rb := c.RowBytes()
	bs, hw := 18, 1
	if f == Q4_1 {
		bs, hw = 20, 2
	}
	src := outlierRows(rng, rows, d)
	enc := make([]byte, rows*rb)
	for r := 0; r < rows; r++ {
		row := enc[r*rb : (r+1)*rb]
		c.Encode(row, src[r*d:(r+1)*d])
		for b := 0; b < d/32; b++ {
			for w := 0; w < hw; w++ {
				h := uint16(rng.Uint32())&^(0x1f<<10) | uint16(1+rng.IntN(29))<<10 // finite
				row[b*bs+2*w], row[b*bs+2*w+1] = byte(h), byte(h>>8)
			}
		}
	}
	return c.(MultiQuery), enc
}

// TestVNNIHeaderRegs checks the q4_0, q4_1 and iq4_nl (both) VNNI scores kernels that read the
// rows' headers into registers, with and without the far prefetches (vnniHdrZ4), their Intel flavours (hdrIntel), against the
// ones that stage them (vnniStaged) bit for bit: rows
// of 1 to 9 whole blocks (short last chunks of headers), a tail past them, groups of 16 rows
// whole, short and padded, 2 to 6 queries, and that nothing is written past the scores.
func TestVNNIHeaderRegs(t *testing.T) {
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI")
	}
	defer func(v, i, z, x bool) { vnniStaged, iq4ScoresVBMI, vnniHdrZ4, hdrIntel = v, i, z, x }(vnniStaged, iq4ScoresVBMI, vnniHdrZ4, hdrIntel)
	defer func(r int) { twoStreamRows = r }(twoStreamRows)
	twoStreamRows = 0 // the Intel flavours over the few rows here
	rng := rand.New(rand.NewPCG(85, 86))
	const sentinel = float32(-7777.25)
	type kind struct {
		f    Format
		vbmi bool
	}
	kinds := []kind{{Q4_0, false}, {Q4_1, false}}
	if hasVNNIBW {
		kinds = append(kinds, kind{IQ4_NL, false})
		if hasVBMI {
			kinds = append(kinds, kind{IQ4_NL, true})
		}
	}
	for _, k := range kinds {
		iq4ScoresVBMI = k.vbmi
		for _, d := range []int{32, 64, 96, 128, 160, 200, 224, 256, 288} {
			for _, rows := range []int{1, 15, 16, 17, 33, 50, 64, 100} {
				mq, enc := headerRows(t, rng, k.f, d, rows)
				for _, n := range []int{2, 3, 4, 6} {
					q := gaussianRows(rng, n, d, 1)
					var out [4][]float32
					for i, mode := range []struct{ staged, z4, intel bool }{{true, false, false}, {false, false, false}, {false, true, false}, {false, false, true}} {
						vnniStaged, vnniHdrZ4, hdrIntel = mode.staged, mode.z4, mode.intel
						staged := mode.staged
						buf := make([]float32, rows*n+16)
						for j := range buf {
							buf[j] = sentinel
						}
						mq.DotManyMulti(q, n, enc, buf[:rows*n])
						for j := rows * n; j < len(buf); j++ {
							if buf[j] != sentinel {
								t.Fatalf("%v d%d rows%d n%d staged %v: out[%d] written past the scores", k.f, d, rows, n, staged, j)
							}
						}
						out[i] = buf[:rows*n]
					}
					for z := 1; z < len(out); z++ {
						for i := range out[0] {
							if math.Float32bits(out[0][i]) != math.Float32bits(out[z][i]) {
								t.Fatalf("%v (VBMI %v, Z4 %v, Intel %v) d%d rows%d n%d: score %d (row %d, query %d): registers %g, staged %g",
									k.f, k.vbmi, z == 2, z == 3, d, rows, n, i, i/n, i%n, out[z][i], out[0][i])
							}
						}
					}
				}
			}
		}
	}
}

// TestVNNIHeaderRegsSpeed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the thread-CPU time of q4_0's, q4_1's and iq4_nl's DotManyMulti through the kernels
// that stage the rows' headers (vnniStaged) and those that read them into registers, alternated
// (scoreSpeeds): in cache and streamed, ns min/median.
func TestVNNIHeaderRegsSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasVNNIBW {
		t.Skip("no AVX-512 VNNI and BW")
	}
	defer func(v bool) { vnniStaged = v }(vnniStaged)
	modes := []func(func()){
		func(f func()) { vnniStaged = true; f() },
		func(f func()) { vnniStaged = false; f() },
	}
	for _, f := range []Format{Q4_0, Q4_1, IQ4_NL} {
		cache, stream, passRows := scoreSpeeds(t, f, modes)
		t.Logf("%v scores per row of %d values, 4 queries, ns min/median: in cache staged %s, registers %s; streamed staged %s, registers %s",
			f, benchDim, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
			minMedian(stream[0], passRows), minMedian(stream[1], passRows))
	}
}

// q8OneModel is the one-digit q8_0 kernel's arithmetic in Go (vnniQ8One): q8Model at one digit.
func q8OneModel(c *q8_0Codec, q []float32, n int, rows []byte, out []float32) {
	q8Model(c, 1, q, n, rows, out)
}

// q8Model is the q8_0 scores kernels' arithmetic in Go at nd digits a query value (two:
// multiScoresQ80VNNI, multiScoresQ80Z4VNNI; one: vnniQ8One): per query h and whole block b, Q
// and s from vnniQuant, the exact int32 Σ Q·c (the two digits' dots, 2⁸·hi + lo, are that sum
// exactly) converted to float32, times float32(s·d) (one rounding), added to the score by a
// fused multiply-add (one rounding, through big.Float), then the tail's dot added as
// vnniScoresRunsStride adds it.
func q8Model(c *q8_0Codec, nd int, q []float32, n int, rows []byte, out []float32) {
	d, rb, nb := c.d, c.rb, c.full
	td, _ := c.tails()
	m := len(out) / n
	for j := 0; j < m; j++ {
		row := rows[j*rb : (j+1)*rb]
		for h := 0; h < n; h++ {
			qh := q[h*d : (h+1)*d]
			var acc float32
			for b := 0; b < nb; b++ {
				s, Q := vnniQuant((*[32]float32)(qh[32*b:]), nd)
				blk := row[34*b : 34*b+34]
				var dot int32
				for i, v := range Q {
					dot += v * int32(int8(blk[2+i]))
				}
				sd := s * F16ToF32(uint16(blk[0])|uint16(blk[1])<<8)
				x := new(big.Float).SetPrec(256).SetFloat64(float64(float32(dot)))
				x.Mul(x, new(big.Float).SetFloat64(float64(sd)))
				x.Add(x, new(big.Float).SetFloat64(float64(acc)))
				acc, _ = x.Float32()
			}
			if td != nil {
				acc += td(qh, row)
			}
			out[j*n+h] = acc
		}
	}
}

// TestVNNIQ8One checks the one-digit q8_0 scores kernels (vnniQ8One; the L1- and the L2-
// prefetching flavour) against q8OneModel bit for bit: random code bytes (−128 included) under
// random finite scales, rows of 1 to 9 whole blocks and a tail past them, groups of 16 rows
// whole, short and padded, 1 to 6 queries, a zero block and a block too small to quantize (s =
// 0), and that nothing is written past the scores.
func TestVNNIQ8One(t *testing.T) {
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI")
	}
	defer func(o, z bool) { vnniQ8One, zen4Stream = o, z }(vnniQ8One, zen4Stream)
	vnniQ8One = true
	rng := rand.New(rand.NewPCG(87, 88))
	const sentinel = float32(-7777.25)
	for _, z4 := range []bool{false, true} {
		zen4Stream = z4
		for _, d := range []int{32, 64, 96, 128, 160, 200, 224, 256, 288} {
			c := mustCodec(t, Q8_0, d).(*q8_0Codec)
			if nd, _ := scoresDigits(c); nd != 1 {
				t.Fatalf("d%d: q8_0 takes %d digits under vnniQ8One", d, nd)
			}
			rb := c.RowBytes()
			for _, rows := range []int{1, 15, 16, 17, 33, 64, 100} {
				enc := make([]byte, rows*rb)
				for i := range enc {
					enc[i] = byte(rng.Uint32())
				}
				for r := 0; r < rows; r++ {
					for b := 0; b*32 < d; b++ {
						h := uint16(rng.Uint32())&^(0x1f<<10) | uint16(1+rng.IntN(29))<<10 // finite
						enc[r*rb+34*b], enc[r*rb+34*b+1] = byte(h), byte(h>>8)
					}
				}
				for _, n := range []int{1, 2, 3, 4, 5, 6} {
					q := gaussianRows(rng, n, d, 1)
					if d >= 64 {
						clear(q[32:64]) // a zero block
						for i := 0; i < 32; i++ {
							q[(n-1)*d+i] *= 0x1p-120 // max|q| < 127·2⁻¹²⁶: s = 0
						}
					}
					buf := make([]float32, rows*n+16)
					for j := range buf {
						buf[j] = sentinel
					}
					c.DotManyMulti(q, n, enc, buf[:rows*n])
					for j := rows * n; j < len(buf); j++ {
						if buf[j] != sentinel {
							t.Fatalf("d%d rows%d n%d: out[%d] written past the scores", d, rows, n, j)
						}
					}
					want := make([]float32, rows*n)
					q8OneModel(c, q, n, enc, want)
					for i := range want {
						if math.Float32bits(buf[i]) != math.Float32bits(want[i]) {
							t.Fatalf("Zen 4 flavour %v d%d rows%d n%d: score %d (row %d, query %d): %g, model %g",
								z4, d, rows, n, i, i/n, i%n, buf[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestVNNIQ8Scores checks q8_0's two-digit scores kernels (the L1- and the L2-prefetching
// flavour; their stage of the rows' scales is written one group ahead, during the group
// before, so rows of several groups are what tries it) against q8Model bit for bit: random
// code bytes (−128 included) under random finite scales, rows of 1 to 9 whole blocks and a
// tail past them, groups of 16 rows whole, short and padded, 1 to 6 queries (contiguous and
// strided scores), a zero block and a block too small to quantize (s = 0), and that nothing
// is written past the scores.
func TestVNNIQ8Scores(t *testing.T) {
	if !hasVNNI || avx2Int {
		t.Skip("no AVX-512 VNNI kernels here")
	}
	defer func(o, z bool) { vnniQ8One, zen4Stream = o, z }(vnniQ8One, zen4Stream)
	vnniQ8One = false
	rng := rand.New(rand.NewPCG(93, 94))
	const sentinel = float32(-7777.25)
	for _, z4 := range []bool{false, true} {
		zen4Stream = z4
		for _, d := range []int{32, 64, 96, 128, 160, 200, 224, 256, 288} {
			c := mustCodec(t, Q8_0, d).(*q8_0Codec)
			if nd, _ := scoresDigits(c); nd != 2 {
				t.Fatalf("d%d: q8_0 takes %d digits", d, nd)
			}
			rb := c.RowBytes()
			for _, rows := range []int{1, 16, 17, 32, 33, 48, 64, 100} {
				enc := q8RandRows(rng, rows, d, rb)
				for _, n := range []int{1, 2, 3, 4, 5, 6} {
					q := gaussianRows(rng, n, d, 1)
					if d >= 64 {
						clear(q[32:64]) // a zero block
						for i := 0; i < 32; i++ {
							q[(n-1)*d+i] *= 0x1p-120 // max|q| < vnniQMax2·2⁻¹²⁶: s = 0
						}
					}
					buf := make([]float32, rows*n+16)
					for j := range buf {
						buf[j] = sentinel
					}
					c.DotManyMulti(q, n, enc, buf[:rows*n])
					for j := rows * n; j < len(buf); j++ {
						if buf[j] != sentinel {
							t.Fatalf("d%d rows%d n%d: out[%d] written past the scores", d, rows, n, j)
						}
					}
					want := make([]float32, rows*n)
					q8Model(c, 2, q, n, enc, want)
					for i := range want {
						if math.Float32bits(buf[i]) != math.Float32bits(want[i]) {
							t.Fatalf("Zen 4 flavour %v d%d rows%d n%d: score %d (row %d, query %d): %g, model %g",
								z4, d, rows, n, i, i/n, i%n, buf[i], want[i])
						}
					}
				}
			}
		}
	}
}

// q8RandRows is rows of q8_0 of d values (rb bytes a row): random bytes, every block's scale a
// random finite f16.
func q8RandRows(rng *rand.Rand, rows, d, rb int) []byte {
	enc := make([]byte, rows*rb)
	for i := range enc {
		enc[i] = byte(rng.Uint32())
	}
	for r := 0; r < rows; r++ {
		for b := 0; b*32 < d; b++ {
			h := uint16(rng.Uint32())&^(0x1f<<10) | uint16(1+rng.IntN(29))<<10 // finite
			enc[r*rb+34*b], enc[r*rb+34*b+1] = byte(h), byte(h>>8)
		}
	}
	return enc
}

// TestVNNIBoundQ8One is TestVNNIBound's check of q8_0 with a one-digit query (vnniQ8One:
// qmax 127; on AVX2 without AVX-VNNI too).
func TestVNNIBoundQ8One(t *testing.T) {
	if !intScores {
		t.Skip("no integer scores kernels")
	}
	defer func(o bool) { vnniQ8One = o }(vnniQ8One)
	vnniQ8One = true
	rng := rand.New(rand.NewPCG(89, 90))
	for _, d := range []int{32, 128, 200, 1024} {
		checkVNNIBound(t, rng, Q8_0, d)
	}
}

// TestVNNIQ8OneSpeed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the thread-CPU time of q8_0's DotManyMulti through the two-digit kernel and the
// one-digit one (vnniQ8One), alternated (scoreSpeeds): in cache and streamed, ns min/median.
func TestVNNIQ8OneSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI")
	}
	defer func(o bool) { vnniQ8One = o }(vnniQ8One)
	modes := []func(func()){
		func(f func()) { vnniQ8One = false; f() },
		func(f func()) { vnniQ8One = true; f() },
	}
	cache, stream, passRows := scoreSpeeds(t, Q8_0, modes)
	t.Logf("q8_0 scores per row of %d values, 4 queries, ns min/median: in cache two digits %s, one %s; streamed two digits %s, one %s",
		benchDim, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
		minMedian(stream[0], passRows), minMedian(stream[1], passRows))
}
