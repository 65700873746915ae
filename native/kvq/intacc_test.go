package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// intAccCodes returns, for a codec the integer accumulate kernels serve, its block layout and a
// reader of value i's code minus the format's offset in a full block; ok false otherwise
// (another format, or no kernels on this CPU).
func intAccCodes(c Codec) (bc *blockCodec, code func(blk []byte, i int) int, ok bool) {
	if blockIntAccKernel(c) == nil {
		return nil, nil, false
	}
	nib := func(qs []byte, i int) int {
		if i < 16 {
			return int(qs[i] & 15)
		}
		return int(qs[i-16] >> 4)
	}
	switch c.(type) {
	case *q4_0Codec:
		code = func(blk []byte, i int) int { return nib(blk[2:], i) - 8 }
	case *q8_0Codec:
		code = func(blk []byte, i int) int { return int(int8(blk[2+i])) }
	case *q4_1Codec:
		code = func(blk []byte, i int) int { return nib(blk[4:], i) - 8 }
	case *q5_0Codec:
		code = func(blk []byte, i int) int { return int(blockCode5(blk[2:6], blk[6:22], BlockSize, i)) - 16 }
	case *q5_1Codec:
		code = func(blk []byte, i int) int { return int(blockCode5(blk[4:8], blk[8:24], BlockSize, i)) - 16 }
	case *iq4nlCodec:
		code = func(blk []byte, i int) int { return int(iq4nlValues[nib(blk[2:], i)]) }
	default:
		return nil, nil, false
	}
	bc = intAccBlocks(c)
	return bc, code, bc.full > 0
}

// centre is the code offset o the integer kernels take off q4_1's and q5_1's codes (folded into
// their float term), 0 for the other formats.
func centre(c Codec) int {
	switch c.(type) {
	case *q4_1Codec:
		return 8
	case *q5_1Codec:
		return 16
	}
	return 0
}

// intAccSlack is the weight-quantization term of the integer kernels' bound
// (multi_intacc_amd64.go) for AccumulateManyMulti(acc, n, w, rows) of codec c, per accumulator
// value (slack[h·d+i]); nil where the integer kernels do not run. It recomputes each tile's
// scale T as the kernels do, in float32 (q/M with q = 32767, or 127 for the 8-bit weights).
func intAccSlack(c Codec, n int, w []float32, rows []byte) []float64 {
	if lc, ok := c.(*lmCodec); ok {
		return turboAccSlack(lc, n, w, rows)
	}
	if tc, ok := c.(*tq4Codec); ok {
		return tq4AccSlack(tc, n, w, rows)
	}
	if fc, ok := c.(fp8Codec); ok {
		return fp8AccSlack(fc, n, w, rows)
	}
	bc, code, ok := intAccCodes(c)
	if !ok {
		return nil
	}
	d, rb := c.Dim(), c.RowBytes()
	m := len(rows) / rb
	q := float32(32767) // the weights' largest integer: int16, or 127 (255) where AccumulateStep says 2⁻⁸ (2⁻⁹)
	switch AccumulateStep(c) {
	case 0x1p-8:
		q = 127
	case 0x1p-9:
		q = 255
	}
	slack := make([]float64, n*d)
	for h := 0; h < n; h++ {
		for t0 := 0; t0 < m; t0 += 64 {
			t1 := min(t0+64, m)
			for b := 0; b < bc.full; b++ {
				var mx float32
				for j := t0; j < t1; j++ {
					wd := w[j*n+h] * blockF16(rows[j*rb+b*bc.fullBytes:], 0)
					mx = max(mx, float32(math.Abs(float64(wd))))
				}
				if mx == 0 {
					continue
				}
				inv := min(q/mx, float32(0x1p100))
				T := float64(1 / inv)
				for j := t0; j < t1; j++ {
					blk := rows[j*rb+b*bc.fullBytes:]
					wd := float64(w[j*n+h] * blockF16(blk, 0))
					e := T/2 + math.Ldexp(math.Abs(wd), -22)
					// q4_1's and q5_1's float term Σ w·m + o·Σ w·d: its rounding on o·|w·d|.
					fl := float64(2*m+8) * math.Ldexp(1, -24) * float64(centre(c)) * math.Abs(wd)
					for i := 0; i < BlockSize; i++ {
						slack[h*d+b*BlockSize+i] += e*math.Abs(float64(code(blk, i))) + fl
					}
				}
			}
		}
	}
	return slack
}

// TestIntAccBound checks the integer accumulate kernels (the block formats' and the turbo
// tiers') and fp8's with bf16 weights (multiAccFP8BF16) against the float64 sum of the decoded rows, within the stated bound, on softmax-like weights (a few large, most small, some exactly
// 0) and on a tile whose one large weight leaves the rest near the quantization step; and that
// all-zero weights leave the accumulators unchanged.
func TestIntAccBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, f := range []Format{Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Turbo2, Turbo3, Turbo4, TQ4, FP8} {
		for _, d := range []int{32, 64, 128, 200, 256} {
			for _, rows := range []int{1, 2, 63, 64, 65, 200} {
				t.Run(fmt.Sprintf("%s/d%d/rows%d", f, d, rows), func(t *testing.T) {
					c := mustCodec(t, f, d)
					if rc, ok := c.(*rotCodec); ok {
						c = rc.inner
					}
					if AccumulateStep(c) == 0 {
						t.Skip("no integer accumulate kernels here")
					}
					checkIntAccBound(t, rng, c, rows)
				})
			}
		}
	}
}

func checkIntAccBound(t *testing.T, rng *rand.Rand, c Codec, rows int) {
	d, rb := c.Dim(), c.RowBytes()
	const n = 4
	src := outlierRows(rng, rows, d)
	enc := make([]byte, rows*rb)
	for r := 0; r < rows; r++ {
		c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
	}
	for _, shape := range []string{"softmax", "spike", "zero"} {
		w := make([]float32, rows*n)
		for j := 0; j < rows; j++ {
			for h := 0; h < n; h++ {
				var x float64
				switch shape {
				case "softmax":
					x = math.Exp(3*rng.NormFloat64() - 6)
					if rng.IntN(7) == 0 {
						x = 0
					}
				case "spike":
					x = 1e-5 * rng.Float64()
					if j%64 == 5 {
						x = 1
					}
				}
				w[j*n+h] = float32(x)
			}
		}
		acc := gaussianRows(rng, n, d, 1)
		acc0 := append([]float32(nil), acc...)
		c.(MultiQuery).AccumulateManyMulti(acc, n, w, enc)
		if shape == "zero" {
			for i := range acc {
				if acc[i] != acc0[i] {
					t.Fatalf("zero weights: acc[%d] %g → %g", i, acc0[i], acc[i])
				}
			}
			continue
		}
		slack := intAccSlack(c, n, w, enc)
		x := make([]float32, d)
		ref := make([]float64, n*d)
		scale := make([]float64, n*d)
		for i := range ref {
			ref[i], scale[i] = float64(acc0[i]), math.Abs(float64(acc0[i]))
		}
		decode := c.Decode
		if tc, ok := c.(*tq4Codec); ok {
			decode = tc.rotatedDecode // tq4's AccumulateManyMulti sums in the rotated domain
		}
		for j := 0; j < rows; j++ {
			row := enc[j*rb : (j+1)*rb]
			decode(x, row)
			for h := 0; h < n; h++ {
				wj := float64(w[j*n+h])
				for i, v := range x {
					ref[h*d+i] += wj * float64(v)
					scale[h*d+i] += math.Abs(wj) * (math.Abs(float64(v)) + blockOffset(c, row, i))
				}
			}
		}
		var worst float64 // the largest error as a share of its bound
		for i := range ref {
			bound := slack[i] + float64(2*rows+8)*math.Ldexp(1, -24)*scale[i]
			e := math.Abs(float64(acc[i]) - ref[i])
			if !(e <= bound) {
				t.Fatalf("%s: acc %d [%d] = %g, float64 %g: error %g > bound %g (quantization %g)",
					shape, i/d, i%d, acc[i], ref[i], e, bound, slack[i])
			}
			if bound > 0 {
				worst = max(worst, e/bound)
			}
		}
		t.Logf("%s: worst error %.3f of the bound", shape, worst)
	}
}

// turboAccSlack is intAccSlack for the turbo tiers (multi_turboacc_amd64.go): per tile and
// accumulator, each row's weight times its scale w' off by T/2 + 2⁻²²·|w'|, times |u·L| of each
// value; nil where the integer kernels (AVX-512 or AVX2, turboAccKernels) do not run.
func turboAccSlack(c *lmCodec, n int, w []float32, rows []byte) []float64 {
	if turboAccKernels(c) == nil {
		return nil
	}
	return scaledLevelSlack(c.d, c.nb+2, n, w, rows, accQMax(c), c.scale, func(row []byte, i int) float32 { return c.levels[c.codeAt(row, i)] })
}

// tq4AccSlack is turboAccSlack for tq4 (tq4IntAcc: turbo4's kernel with tq4's f32 row scale);
// nil where the integer kernel (AVX-512 or AVX2) does not run.
func tq4AccSlack(c *tq4Codec, n int, w []float32, rows []byte) []float64 {
	if turboAccKernels(c) == nil {
		return nil
	}
	return scaledLevelSlack(c.d, c.RowBytes(), n, w, rows, accQMax(c), c.scale, func(row []byte, i int) float32 { return tq4Levels[row[i/2]>>(4*(i%2))&15] })
}

// accQMax is the largest integer weight of c's integer accumulate kernel on this CPU: 255
// where it runs with 8-bit weights (AccumulateStep 2⁻⁹), 127 with 7-bit ones (2⁻⁸: the turbo
// tiers' and tq4's AVX2 8-bit kernels, multi_t4accavx2_amd64.go), else 32767.
func accQMax(c Codec) float32 {
	switch AccumulateStep(c) {
	case 0x1p-9:
		return 255
	case 0x1p-8:
		return 127
	}
	return 32767
}

// scaledLevelSlack is the integer accumulate's slack for rows of rb bytes whose value i is
// scale(row)·level(row, i): per 64-row tile and accumulator, each row's w·s rounded to the
// tile's grid T = M/qmax (off by T/2 + 2⁻²²·|w·s|), times |level| of each value.
func scaledLevelSlack(d, rb, n int, w []float32, rows []byte, qmax float32, scale func([]byte) float32, level func([]byte, int) float32) []float64 {
	m := len(rows) / rb
	slack := make([]float64, n*d)
	for h := 0; h < n; h++ {
		for t0 := 0; t0 < m; t0 += AccumulateTile {
			t1 := min(t0+AccumulateTile, m)
			var mx float32
			for j := t0; j < t1; j++ {
				mx = max(mx, float32(math.Abs(float64(w[j*n+h]*scale(rows[j*rb:])))))
			}
			if mx == 0 {
				continue
			}
			inv := min(qmax/mx, float32(0x1p100))
			T := float64(1 / inv)
			for j := t0; j < t1; j++ {
				row := rows[j*rb : (j+1)*rb]
				e := T/2 + math.Ldexp(math.Abs(float64(w[j*n+h]*scale(row))), -22)
				for i := 0; i < d; i++ {
					slack[h*d+i] += e * math.Abs(float64(level(row, i)))
				}
			}
		}
	}
	return slack
}

// fp8AccSlack is the bf16 weights' term of fp8's bound (multi_fp8bf16_amd64.go) where its values
// accumulate through multiAccFP8BF16, nil elsewhere: per row, w·scale (float32, as the kernel
// forms it) off by 2⁻⁸ of itself (all of it below 2⁻¹²⁶) times |e4m3(code)|, over the values of
// the whole 32-value groups, and 2⁻¹²⁶ per row for a sum the kernel flushes to 0.
func fp8AccSlack(c fp8Codec, n int, w []float32, rows []byte) []float64 {
	if AccumulateStep(c) == 0 {
		return nil
	}
	d, rb := c.d, c.RowBytes()
	nv := d &^ 31
	m := len(rows) / rb
	slack := make([]float64, n*d)
	for j := 0; j < m; j++ {
		row := rows[j*rb : (j+1)*rb]
		s := c.scale(row)
		for h := 0; h < n; h++ {
			ws := math.Abs(float64(w[j*n+h] * s))
			e := math.Ldexp(ws, -8)
			if ws < 0x1p-126 {
				e = ws
			}
			for i := 0; i < nv; i++ {
				slack[h*d+i] += e*math.Abs(float64(fp8E4M3Table[row[i]])) + 0x1p-126
				if sub := fp8SubSlack(c, row, i, true); sub != 0 {
					slack[h*d+i] += math.Abs(float64(w[j*n+h])) * sub * (1 + 0x1p-8)
				}
			}
		}
	}
	return slack
}

// intAccRound is the integer kernels' rounding of one tile's weights w'_j = w_j·d_j (float32) of
// one block and accumulator to integers of at most q in magnitude (q = 32767: int16 weights;
// 127: the 8-bit weights of intAcc8), as their prepass does it in float32: M = max |w'_j|,
// inv = min(q/M, 2¹⁰⁰), T = 1/inv (both 0 where M = 0), W_j = round-to-even(w'_j·inv). It
// returns T and writes W to out. The Go reference the kernels' tests compare with, bit for bit
// (the turbo tiers' and tq4's too, w'_j = w_j·s_j and q = 255 for their 8-bit weights). The
// kernels then add float32(Σ_j W_j·L_j[i])·(T·unit) per tile with one fused multiply-add.
func intAccRound(wd []float32, q float32, out []int32) (T float32) {
	var m float32
	for _, v := range wd {
		m = max(m, float32(math.Abs(float64(v))))
	}
	if m == 0 {
		clear(out[:len(wd)])
		return 0
	}
	inv := min(q/m, float32(0x1p100))
	for j, v := range wd {
		out[j] = int32(math.RoundToEven(float64(v * inv)))
	}
	return 1 / inv
}

// intAccAdaptQ is the 8-bit kernels' choice, per tile and accumulator, between 8-bit and 16-bit
// weights where they adapt (turbo4's and tq4's on AVX2, multi_t4accavx2_amd64.go): wd the
// tile's w'_j of one accumulator, it returns 32767 where ratio·M > Σ_j |w'_j| (M the largest
// |w'_j|; the sum taken in row order, all in float32, as the kernels take it), else q8; the
// tile's W are then intAccRound's with that q.
func intAccAdaptQ(wd []float32, ratio, q8 float32) float32 {
	var m, sum float32
	for _, v := range wd {
		a := float32(math.Abs(float64(v)))
		m = max(m, a)
		sum += a
	}
	if ratio*m > sum {
		return 32767
	}
	return q8
}

// intAccRoundSub is intAccRound over consecutive groups of sub weights (sub-tiles; the last one
// may be shorter), each with its own M: group g's W to out, its T to T[g]. The Go reference of
// kernels that round against a sub-tile's largest weight rather than the whole tile's.
func intAccRoundSub(wd []float32, q float32, sub int, out []int32, T []float32) {
	for g, j := 0, 0; j < len(wd); g, j = g+1, j+sub {
		e := min(j+sub, len(wd))
		T[g] = intAccRound(wd[j:e], q, out[j:e])
	}
}
