//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/isa"
)

// TestFP8AMXAcc checks multiAccFP8AMXA, or multiAccFP8AMX where its weights reach 2⁸ (through
// fp8's AccumulateManyMulti where the CPU has AMX-BF16), against the float64 sum of the bf16 weights bf16(w·scale) times the codes, within
// the float32 sums' bound (a dropped or misplaced tile operation misses it by far), and against
// the float32 kernel (multiAccFP8VBMI) within the bf16 weights' bound (AccumulateStep), for row
// counts around its 64-row tiles and 128-row super-blocks and for 1 to 8 accumulators.
func TestFP8AMXAcc(t *testing.T) {
	if !fp8AMXOn {
		t.Skip("no AMX-BF16")
	}
	defer func(a *multiKernels, b bool) { multiFP8, fp8AMXAccOn = a, b }(multiFP8, fp8AMXAccOn)
	const d, rb = 128, 132
	c := mustCodec(t, FP8, d).(fp8Codec)
	rng := rand.New(rand.NewSource(7))
	for _, m := range []int{64, 128, 192, 256, 320, 37, 100, 200, 1000} {
		rows := make([]byte, m*rb)
		x := make([]float32, d)
		for j := 0; j < m; j++ {
			s := float32(math.Exp(rng.NormFloat64()))
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * s
			}
			if j%17 == 3 {
				x[j%d] *= 50 // an outlier
			}
			c.Encode(rows[j*rb:(j+1)*rb], x)
		}
		for _, n := range []int{4, 8, 1, 3} {
			w := make([]float32, m*n)
			for i := range w {
				w[i] = float32(math.Exp(4 * rng.NormFloat64()))
			}
			acc0 := make([]float32, n*d)
			for i := range acc0 {
				acc0[i] = float32(rng.NormFloat64())
			}
			multiFP8, fp8AMXAccOn = fp8F32, true
			got := append([]float32(nil), acc0...)
			c.AccumulateManyMulti(got, n, w, rows)
			fp8AMXAccOn = false
			f32 := append([]float32(nil), acc0...)
			c.AccumulateManyMulti(f32, n, w, rows)
			for h := 0; h < n; h++ {
				for i := 0; i < d; i++ {
					ref, abs, refF, absF := float64(acc0[h*d+i]), math.Abs(float64(acc0[h*d+i])), 0.0, 0.0
					for j := 0; j < m; j++ {
						row := rows[j*rb : (j+1)*rb]
						ws := w[j*n+h] * c.scale(row)
						if j >= m&^63 { // the rows past the last 64 take float32 weights
							refF += float64(ws) * float64(FP8E4M3ToF32(row[i]))
							absF += math.Abs(float64(ws) * float64(FP8E4M3ToF32(row[i])))
							continue
						}
						b := math.Float32frombits(math.Float32bits(bf16RoundNearest(ws)))
						ref += float64(b) * float64(FP8E4M3ToF32(row[i]))
						abs += math.Abs(float64(b) * float64(FP8E4M3ToF32(row[i])))
					}
					ref += refF
					abs += absF
					sub := 0.0 // the subnormal codes the tiles read as zero
					for j := 0; j < m&^63; j++ {
						sub += math.Abs(float64(w[j*n+h])) * fp8SubSlack(c, rows[j*rb:], i, true) * (1 + 0x1p-8)
					}
					g := float64(got[h*d+i])
					if tol := float64(m+4)*0x1p-24*abs + sub; math.Abs(g-ref) > tol {
						t.Fatalf("m %d n %d acc %d value %d: %g, bf16-weights sum %g (tolerance %g)", m, n, h, i, g, ref, tol)
					}
					if tol := float64(m+4)*0x1p-23*abs + 0x1p-8*abs + sub; math.Abs(g-float64(f32[h*d+i])) > tol {
						t.Fatalf("m %d n %d acc %d value %d: %g, float32 kernel %g (tolerance %g)", m, n, h, i, g, f32[h*d+i], tol)
					}
				}
			}
		}
	}
}

// TestFP8AMXAccShortGroup checks a short last group of accumulators (n not a multiple of
// four): its weights go through the kernel 128 rows at a time from a stack buffer, so its sums
// are those of a full group of four over the same rows bit for bit, and a call allocates
// nothing.
func TestFP8AMXAccShortGroup(t *testing.T) {
	if !fp8AMXOn {
		t.Skip("no AMX-BF16")
	}
	defer func(a *multiKernels, b bool) { multiFP8, fp8AMXAccOn = a, b }(multiFP8, fp8AMXAccOn)
	multiFP8, fp8AMXAccOn = fp8F32, true
	const d, rb = 128, 132
	c := mustCodec(t, FP8, d).(fp8Codec)
	rng := rand.New(rand.NewSource(11))
	for _, m := range []int{64, 130, 300, 1000} {
		rows := make([]byte, m*rb)
		x := make([]float32, d)
		for j := 0; j < m; j++ {
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			c.Encode(rows[j*rb:(j+1)*rb], x)
		}
		const n = 5
		w := make([]float32, m*n)
		w4 := make([]float32, m*4) // the fifth accumulator's weights as the first of four
		for j := 0; j < m; j++ {
			for h := 0; h < n; h++ {
				w[j*n+h] = float32(math.Exp(rng.NormFloat64()))
			}
			w4[j*4] = w[j*n+4]
		}
		got := make([]float32, n*d)
		c.AccumulateManyMulti(got, n, w, rows)
		want := make([]float32, 4*d)
		c.AccumulateManyMulti(want, 4, w4, rows)
		checkBits(t, fmt.Sprintf("m %d: the short group's (the full group's) value", m), got[4*d:], want[:d])
		if a := testing.AllocsPerRun(5, func() { c.AccumulateManyMulti(got, n, w, rows) }); a > 0 {
			t.Errorf("m %d: a call with %d accumulators allocates %.1f times", m, n, a)
		}
	}
}

// bf16RoundNearest is v rounded to bf16 (nearest even; below 2⁻¹²⁶ in magnitude 0), as
// VCVTNEPS2BF16 rounds it.
func bf16RoundNearest(v float32) float32 {
	if math.Abs(float64(v)) < 0x1p-126 {
		return 0
	}
	u := math.Float32bits(v)
	u += 0x7fff + (u>>16)&1
	return math.Float32frombits(u &^ 0xffff)
}

// TestFP8AMXScoresShortRows checks that fp8's AMX scores panic on a rows slice shorter than
// out asks for (one row short, its capacity too), as the bf16 kernels' scores do, instead of
// the kernel reading past its end.
func TestFP8AMXScoresShortRows(t *testing.T) {
	if !fp8AMXOn {
		t.Skip("no AMX-BF16")
	}
	defer func(a *multiKernels) { multiFP8 = a }(multiFP8)
	multiFP8 = fp8F32
	const d, rb, n = 128, 132, 4
	c := mustCodec(t, FP8, d).(fp8Codec)
	for _, m := range []int{32, 64, 37} {
		q := make([]float32, n*d)
		out := make([]float32, m*n)
		rows := make([]byte, (m-1)*rb)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("m %d: rows of %d rows did not panic", m, m-1)
				}
			}()
			c.DotManyMulti(q, n, rows, out)
		}()
	}
}

// TestFP8AMXAccChoice checks that fp8's values of rows of 128 take multiAccFP8AMX's bf16
// weights (AccumulateStep 2⁻⁸) where the AMX scores run unless KVLAB_ACC16 (isa.Acc16) is
// set, and keep float32 weights under it (AccumulateStep 0), with the kernels as chosen at start.
func TestFP8AMXAccChoice(t *testing.T) {
	if fp8AMXAccOn != !isa.Acc16 {
		t.Fatalf("fp8AMXAccOn %v under Acc16 %v", fp8AMXAccOn, isa.Acc16)
	}
	if !fp8AMXActive() {
		t.Skip("fp8's AMX scores do not run here")
	}
	want := 0x1p-8
	if isa.Acc16 {
		want = 0
	}
	if got := AccumulateStep(mustCodec(t, FP8, 128)); got != want {
		t.Errorf("fp8 d 128: AccumulateStep %g, want %g (Acc16 %v)", got, want, isa.Acc16)
	}
}

// fp8AMXRows encodes m Gaussian rows of 128 values with one outlier a row (75 times), so that
// some codes are subnormal, and returns them with a copy whose subnormal codes are zeros (the
// sign kept) and the count of those.
func fp8AMXRows(t *testing.T, rng *rand.Rand, m int) (rows, flushed []byte, subs int) {
	const d, rb = 128, 132
	c := mustCodec(t, FP8, d).(fp8Codec)
	rows = make([]byte, m*rb)
	x := make([]float32, d)
	for j := 0; j < m; j++ {
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		x[j%d] *= 75
		c.Encode(rows[j*rb:(j+1)*rb], x)
	}
	flushed = append([]byte(nil), rows...)
	for j := 0; j < m; j++ {
		for i := 0; i < d; i++ {
			if b := flushed[j*rb+i]; b&0x78 == 0 && b&7 != 0 {
				flushed[j*rb+i] = b & 0x80
				subs++
			}
		}
	}
	return rows, flushed, subs
}

// TestFP8AMXSubnormals checks the AMX kernels' one rounding change (FP8AFF): a subnormal code
// reads as zero, and nothing else moves. Scores and values (weights below 1, so that
// multiAccFP8AMXA keeps them) over rows with subnormal codes equal, bit for bit, those over
// the same rows with those codes zeroed; and multiAccFP8AMXA's sums over the zeroed rows equal
// multiAccFP8AMX's (the table decode) bit for bit.
func TestFP8AMXSubnormals(t *testing.T) {
	if !fp8AMXOn {
		t.Skip("no AMX-BF16")
	}
	defer func(a *multiKernels, b bool) { multiFP8, fp8AMXAccOn = a, b }(multiFP8, fp8AMXAccOn)
	multiFP8, fp8AMXAccOn = fp8F32, true
	const d, rb, n = 128, 132, 4
	c := mustCodec(t, FP8, d).(fp8Codec)
	rng := rand.New(rand.NewSource(5))
	for _, m := range []int{64, 256, 320} {
		rows, flushed, subs := fp8AMXRows(t, rng, m)
		if subs == 0 {
			t.Fatalf("m %d: no subnormal codes", m)
		}
		q := make([]float32, n*d)
		for i := range q {
			q[i] = float32(rng.NormFloat64())
		}
		a, b := make([]float32, m*n), make([]float32, m*n)
		c.DotManyMulti(q, n, rows, a)
		c.DotManyMulti(q, n, flushed, b)
		checkBits(t, fmt.Sprintf("m %d: score (rows with the subnormal codes zeroed)", m), a, b)
		w := make([]float32, m*n)
		for i := range w {
			w[i] = float32(math.Exp(-4 * rng.Float64()))
		}
		acc0 := make([]float32, n*d)
		for i := range acc0 {
			acc0[i] = float32(rng.NormFloat64())
		}
		var buf [amxAccScratch + 64]byte
		scr := align64(buf[:])
		x, y, z := append([]float32(nil), acc0...), append([]float32(nil), acc0...), append([]float32(nil), acc0...)
		if multiAccFP8AMXA(&x[0], d, &rows[0], rb, m, &w[0], 4*n, &scr[0], 0, 0) ||
			multiAccFP8AMXA(&y[0], d, &flushed[0], rb, m, &w[0], 4*n, &scr[0], 0, 0) {
			t.Fatalf("m %d: multiAccFP8AMXA gave up on weights below 1", m)
		}
		multiAccFP8AMX(&z[0], d, &flushed[0], rb, m, &w[0], 4*n, &scr[0], 0, 0)
		checkBits(t, fmt.Sprintf("m %d: value (subnormal codes zeroed)", m), x, y)
		checkBits(t, fmt.Sprintf("m %d: value with subnormal codes zeroed (the table decode)", m), y, z)
	}
}

// TestFP8AMXScoresLargeQueries checks the packer's exponent shift where the queries reach 2⁸
// (k below 120, the sums' factor above 1): scores of q·2¹² are 2¹² times those of q, bit for
// bit, and of q·2⁻¹² 2⁻¹² times (no offsets: fp8 unrotated).
func TestFP8AMXScoresLargeQueries(t *testing.T) {
	if !fp8AMXOn {
		t.Skip("no AMX-BF16")
	}
	defer func(a *multiKernels) { multiFP8 = a }(multiFP8)
	multiFP8 = fp8F32
	const d, n, m = 128, 4, 96
	c := mustCodec(t, FP8, d).(fp8Codec)
	rng := rand.New(rand.NewSource(6))
	rows, _, _ := fp8AMXRows(t, rng, m)
	q := make([]float32, n*d)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	want := make([]float32, m*n)
	c.DotManyMulti(q, n, rows, want)
	for _, e := range []int{12, -12, 100} {
		qs := make([]float32, len(q))
		for i := range q {
			qs[i] = float32(math.Ldexp(float64(q[i]), e))
		}
		got, scaled := make([]float32, m*n), make([]float32, m*n)
		c.DotManyMulti(qs, n, rows, got)
		for i := range want {
			scaled[i] = float32(math.Ldexp(float64(want[i]), e))
		}
		checkBits(t, fmt.Sprintf("2^%d: score", e), got, scaled)
	}
}

// TestFP8AMXAccOver checks multiAccFP8AMXA's way out: where one super-block's weights times
// scales reach 2⁸ it leaves the accumulators as they were and reports it, and fp8's values
// then equal multiAccFP8AMX's (the table decode, float32 products of bf16 weights) bit for bit.
func TestFP8AMXAccOver(t *testing.T) {
	if !fp8AMXOn {
		t.Skip("no AMX-BF16")
	}
	const d, rb, n, m = 128, 132, 4, 256
	rng := rand.New(rand.NewSource(8))
	rows, _, _ := fp8AMXRows(t, rng, m)
	c := mustCodec(t, FP8, d).(fp8Codec)
	for _, big := range []float32{300, float32(math.Inf(1)), float32(math.NaN())} {
		w := make([]float32, m*n)
		for i := range w {
			w[i] = float32(rng.Float64())
		}
		w[200*n+2] = big / c.scale(rows[200*rb:]) // the fourth super-block's
		acc0 := make([]float32, n*d)
		var buf [amxAccScratch + 64]byte
		scr := align64(buf[:])
		x, z := append([]float32(nil), acc0...), append([]float32(nil), acc0...)
		if !multiAccFP8AMXA(&x[0], d, &rows[0], rb, m, &w[0], 4*n, &scr[0], 0, 0) {
			t.Fatalf("weight·scale %g: multiAccFP8AMXA did not give up", big)
		}
		checkBits(t, fmt.Sprintf("weight·scale %g: multiAccFP8AMXA gave up but wrote value", big), x, acc0)
		amxAcc4(x, rows, m, w, 4*n, scr, 0, 0)
		multiAccFP8AMX(&z[0], d, &rows[0], rb, m, &w[0], 4*n, &scr[0], 0, 0)
		checkBits(t, fmt.Sprintf("weight·scale %g: value (multiAccFP8AMX's)", big), x, z)
	}
}

// TestFP8AMXNaNCodes pins what the AMX kernels make of e4m3's NaN codes (0x7f, 0xff; the
// encoder writes them only for a NaN input): FP8AFF decodes them as ±1.875·2⁸, so a score,
// or a value in a 64-row tile with weights below 1 (multiAccFP8AMXA), is finite, ±480 ×
// scale times the query (weight) where the table decode (multiScoresFP8F32, multiAccFP8VBMI)
// gives NaN. Checked against the float64 sums of the bf16 query (bf16 weight times scale)
// times the codes, a NaN code read as ±480, within the float32 sums' bound.
func TestFP8AMXNaNCodes(t *testing.T) {
	if !fp8AMXOn {
		t.Skip("no AMX-BF16")
	}
	defer func(a *multiKernels, on, acc bool) { multiFP8, fp8AMXOn, fp8AMXAccOn = a, on, acc }(multiFP8, fp8AMXOn, fp8AMXAccOn)
	multiFP8, fp8AMXAccOn = fp8F32, true
	const d, rb, n, m = 128, 132, 4, 128
	c := mustCodec(t, FP8, d).(fp8Codec)
	rng := rand.New(rand.NewSource(11))
	_, rows, _ := fp8AMXRows(t, rng, m) // no subnormal codes: those read as zero here
	for j := 0; j < m; j += 3 {
		rows[j*rb+(j*7)%d] = 0x7f | uint8(j&1)<<7
	}
	val := func(b byte) float64 {
		if b&0x7f == 0x7f {
			return float64(1-int(b>>7)*2) * 480
		}
		return float64(fp8E4M3Table[b])
	}
	q := make([]float32, n*d)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	got := make([]float32, m*n)
	c.DotManyMulti(q, n, rows, got)
	fp8AMXOn = false
	tab := make([]float32, m*n)
	c.DotManyMulti(q, n, rows, tab)
	fp8AMXOn = true
	for j := 0; j < m; j++ {
		row := rows[j*rb : (j+1)*rb]
		for h := 0; h < n; h++ {
			var ref, abs float64
			for i := 0; i < d; i++ {
				p := float64(BF16ToF32(F32ToBF16(q[h*d+i]))) * val(row[i])
				ref, abs = ref+p, abs+math.Abs(p)
			}
			s := float64(c.scale(row))
			ref, abs = ref*s, abs*s
			g := float64(got[j*n+h])
			if math.IsNaN(g) || math.Abs(g-ref) > abs*0x1p-16+1e-30 {
				t.Fatalf("row %d query %d: AMX score %g, want %g (a NaN code as ±480)", j, h, g, ref)
			}
			if nan := j%3 == 0; nan != math.IsNaN(float64(tab[j*n+h])) {
				t.Fatalf("row %d query %d: table decode %g, NaN code %v", j, h, tab[j*n+h], nan)
			}
		}
	}
	w := make([]float32, m*n)
	for i := range w {
		w[i] = float32(math.Exp(-4 * rng.Float64()))
	}
	acc := make([]float32, n*d)
	c.AccumulateManyMulti(acc, n, w, rows)
	fp8AMXAccOn = false
	accT := make([]float32, n*d)
	c.AccumulateManyMulti(accT, n, w, rows)
	for h := 0; h < n; h++ {
		for i := 0; i < d; i++ {
			var ref, abs, nan float64
			for j := 0; j < m; j++ {
				row := rows[j*rb:]
				ws := float64(BF16ToF32(F32ToBF16(w[j*n+h] * c.scale(row))))
				p := ws * val(row[i])
				ref, abs = ref+p, abs+math.Abs(p)
				if row[i]&0x7f == 0x7f {
					nan++
				}
			}
			g := float64(acc[h*d+i])
			if math.IsNaN(g) || math.Abs(g-ref) > abs*0x1p-16+1e-30 {
				t.Fatalf("accumulator %d value %d: AMX %g, want %g (a NaN code as ±480)", h, i, g, ref)
			}
			if (nan > 0) != math.IsNaN(float64(accT[h*d+i])) {
				t.Fatalf("accumulator %d value %d: table decode %g, %g NaN codes", h, i, accT[h*d+i], nan)
			}
		}
	}
}

// TestFP8AMXGate checks fp8AMXOn's gate: any one of its CPU conditions missing (GFNI hidden
// by a VM, say) keeps the AMX kernels off without asking the OS for the tiles, and where they
// run KernelISA names GFNI and AMX.
func TestFP8AMXGate(t *testing.T) {
	for i := 0; i < 16; i++ {
		asked := false
		permit := func() bool { asked = true; return true }
		all := i == 15
		if got := fp8AMXUsable(i&1 != 0, i&2 != 0, i&4 != 0, i&8 != 0, permit); got != all || asked != all {
			t.Errorf("intel %v, AMX-BF16 %v, fp8 bf16 %v, GFNI %v: on %v (OS asked %v), want %v",
				i&1 != 0, i&2 != 0, i&4 != 0, i&8 != 0, got, asked, all)
		}
	}
	if fp8AMXUsable(true, true, true, true, func() bool { return false }) {
		t.Error("on where the OS refuses the tiles")
	}
	if fp8AMXOn && !hasGFNI512 {
		t.Error("fp8AMXOn without AVX-512 GFNI")
	}
	if s := KernelISA(); fp8AMXActive() && (!strings.Contains(s, "GFNI") || !strings.Contains(s, "AMX")) {
		t.Errorf("fp8's AMX kernels on, KernelISA %q", s)
	}
}

// TestFP8AMXTwoStreams checks that fp8's AMX scores through multiScoresFP8AMX2 (two streams of
// rows, four queries) are multiScoresFP8AMX's bit for bit, for row counts that are and are not
// multiples of 64, rows past the last multiple of 32 included, and that nothing past the
// scores is written. Called directly, for row counts that are multiples of 32 (the kernels'
// contract; 1056 an odd count of 32-row blocks), multiScoresFP8AMX's scores 16 bytes apart (its
// vector scaling, famx_vscale) are its scores 32 bytes apart (its row loop) bit for bit, and
// multiScoresFP8AMX2's are multiScoresFP8AMX's.
func TestFP8AMXTwoStreams(t *testing.T) {
	if !fp8AMXOn {
		t.Skip("no AMX-BF16")
	}
	defer func(a *multiKernels, b bool, r int) { multiFP8, fp8AMXTwoOn, twoStreamRows = a, b, r }(multiFP8, fp8AMXTwoOn, twoStreamRows)
	multiFP8, twoStreamRows = fp8F32, 0
	const d, rb, n = 128, 132, 4
	const sentinel = float32(-7777.25)
	c := mustCodec(t, FP8, d).(fp8Codec)
	rng := rand.New(rand.NewSource(13))
	for _, m := range []int{32, 64, 96, 543, 544, 1000, 4096} {
		rows := make([]byte, m*rb)
		x := make([]float32, d)
		for j := 0; j < m; j++ {
			s := float32(math.Exp(2 * rng.NormFloat64()))
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * s
			}
			c.Encode(rows[j*rb:(j+1)*rb], x)
		}
		q := make([]float32, n*d)
		for i := range q {
			q[i] = float32(rng.NormFloat64())
		}
		var got [2][]float32
		for k, on := range []bool{false, true} {
			fp8AMXTwoOn = on
			out := make([]float32, m*n+16)
			for i := range out {
				out[i] = sentinel
			}
			c.DotManyMulti(q, n, rows, out[:m*n])
			for i, v := range out[m*n:] {
				if v != sentinel {
					t.Fatalf("m %d two streams %v: out[%d] past the scores written", m, on, m*n+i)
				}
			}
			got[k] = out[:m*n]
		}
		checkBits(t, fmt.Sprintf("m %d: score of two streams (one's)", m), got[1], got[0])
	}
	for _, m := range []int{32, 64, 320, 512, 1056} {
		rows, _, _ := fp8AMXRows(t, rng, m)
		q, mu := make([]float32, n*d), make([]float32, d)
		for i := range q {
			q[i] = float32(rng.NormFloat64())
		}
		for i := range mu {
			mu[i] = float32(rng.NormFloat64())
		}
		var a amxScratch
		a.pack(q, mu)
		buf := align64(a.buf[:])
		// out16 and out2 hold scores 16 bytes apart, out32 32 bytes apart (its rows' last four
		// floats untouched); each holds 16 sentinels past the scores.
		out16, out32, out2 := make([]float32, m*4+16), make([]float32, m*8+16), make([]float32, m*4+16)
		for _, o := range [][]float32{out16, out32, out2} {
			for i := range o {
				o[i] = sentinel
			}
		}
		multiScoresFP8AMX(&a.bt[0], &rows[0], rb, m, &out16[0], 16, d, &a.offs[0], &buf[0], amxPF, amxPF2)
		multiScoresFP8AMX(&a.bt[0], &rows[0], rb, m, &out32[0], 32, d, &a.offs[0], &buf[0], amxPF, amxPF2)
		multiScoresFP8AMX2(&a.bt[0], &rows[0], rb, m, &out2[0], d, &a.offs[0], &buf[0], amxTwoPF)
		checkBits(t, fmt.Sprintf("m %d: multiScoresFP8AMX2's (multiScoresFP8AMX's) float", m), out2, out16)
		for j := 0; j < m; j++ {
			for i := 0; i < 4; i++ {
				v, r := out16[4*j+i], out32[8*j+i]
				if math.Float32bits(v) != math.Float32bits(r) || v == sentinel {
					t.Fatalf("m %d row %d query %d: scores 16 bytes apart %g, 32 apart %g", m, j, i, v, r)
				}
				if x := out32[8*j+4+i]; x != sentinel {
					t.Fatalf("m %d row %d: scores 32 bytes apart wrote float %d, past the four scores", m, j, 4+i)
				}
			}
		}
		for i := 0; i < 16; i++ {
			if out16[m*4+i] != sentinel || out32[m*8+i] != sentinel || out2[m*4+i] != sentinel {
				t.Fatalf("m %d: float %d past the scores written", m, i)
			}
		}
	}
}

// TestFP8AMXAccSuperBlocks checks that multiAccFP8AMXA's sums over 1 to 5 super-blocks of 64
// rows in one call (the C tiles kept from one super-block's second pass for the next one's
// first, the passes' order alternating, the A tiles kept for the second pass) are its sums
// fed one super-block a call bit for bit: the accumulators go through memory unrounded
// between calls, so each C tile must take the same products in the same order. Both the
// transposed weights (wstride 16) and the gathered ones (32).
func TestFP8AMXAccSuperBlocks(t *testing.T) {
	if !fp8AMXOn {
		t.Skip("no AMX-BF16")
	}
	const d, rb = 128, 132
	rng := rand.New(rand.NewSource(17))
	var buf [amxAccScratch + 64]byte
	scr := align64(buf[:])
	for _, ws := range []int{16, 32} {
		for sbs := 1; sbs <= 5; sbs++ {
			m := 64 * sbs
			rows, _, _ := fp8AMXRows(t, rng, m)
			w := make([]float32, m*ws/4)
			for i := range w {
				w[i] = float32(rng.Float64())
			}
			acc0 := make([]float32, 4*d)
			for i := range acc0 {
				acc0[i] = float32(rng.NormFloat64())
			}
			one, each := append([]float32(nil), acc0...), append([]float32(nil), acc0...)
			if multiAccFP8AMXA(&one[0], d, &rows[0], rb, m, &w[0], ws, &scr[0], amxAccPF, amxAccPF2) {
				t.Fatalf("wstride %d, %d rows: multiAccFP8AMXA gave up", ws, m)
			}
			for k := 0; k < sbs; k++ {
				if multiAccFP8AMXA(&each[0], d, &rows[64*k*rb], rb, 64, &w[64*k*ws/4], ws, &scr[0], amxAccPF, amxAccPF2) {
					t.Fatalf("wstride %d, super-block %d: multiAccFP8AMXA gave up", ws, k)
				}
			}
			checkBits(t, fmt.Sprintf("wstride %d, %d rows: value of one call (of a call a super-block)", ws, m), one, each)
		}
	}
}
