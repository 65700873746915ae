//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/isa"
)

// intAcc8Cases are the nibble and 5-bit formats' VBMI kernels with int16 weights and with 8-bit
// weights (q5_0's and q5_1's need AVX-512 BITALG too), q the 8-bit kernel's rounding (127:
// signed weights, 255: unsigned, q5_0's and q5_1's).
var intAcc8Cases = []struct {
	f          Format
	int16, w8  accKernel
	z4         accKernel // w8's flavour prefetching into L2 (zen4Stream), or nil
	cur        **multiKernels
	off, shift int
	q          float32
}{
	{Q4_0, multiAccQ40VINT, multiAccQ40V8INT, multiAccQ40V8Z4INT, &intAccQ4_0, 8, 3, 127},
	{Q4_1, multiAccQ41VINT, multiAccQ41V8INT, multiAccQ41V8Z4INT, &intAccQ4_1, 8, 3, 127},
	{IQ4_NL, multiAccIQ4NLVINT, multiAccIQ4NLV8INT, multiAccIQ4NLV8Z4INT, &intAccIQ4NL, 128, 7, 127},
	{Q5_0, pickIntel(multiAccQ50VINT, multiAccQ50VIINT), multiAccQ50V8INT, multiAccQ50V8Z4INT, &intAccQ5_0, 16, 4, 255},
	{Q5_1, multiAccQ51VINT, multiAccQ51V8INT, multiAccQ51V8Z4INT, &intAccQ5_1, 16, 4, 255},
}

// intAcc8Intel are the kernels with 8-bit weights that Intel CPUs take in place of intAcc8Cases'
// w8 (q51X), by format: the same sums bit for bit.
var intAcc8Intel = map[Format]accKernel{Q5_1: multiAccQ51V8XINT}

// fma32 is a·b + c rounded once to float32 (as VFMADD231PS).
func fma32(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

// intAccRef is the integer accumulate kernels' computation in Go (multi_intacc_amd64.go), with
// the weights rounded by intAccRound to at most q (32767: int16, 127: 8-bit): four accumulators
// (n = 4) from acc0, nv values of d, the rows' tiles of 64 from the first.
func intAccRef(c Codec, q float32, acc []float32, d, nv, m int, w []float32, rows []byte) {
	intAccRefOf(c, q, false, acc, d, nv, m, w, rows)
}

// intAccRefMin is the offset and min term Σ_j w_j·(m_j + o·d_j) of one tile (its rows' weights
// w and blocks blk) as the kernels with a min form it: where rl as q4_1's kernels with 8-bit
// weights and four accumulators do (gen_intacc.go's rlPipeMin: e_j = m_j + o·d_j rounded once,
// four fma chains by row index mod 4, joined as (c₀ + c₂) + (c₁ + c₃)), else as the others
// (Σ w·d and Σ w·m in two chains each by row parity, then o·Σ w·d + Σ w·m by one fma).
func intAccRefMin(rl bool, o float32, w []float32, blk [][]byte) float32 {
	if rl {
		var ch [4]float32
		for j := range w {
			e := blockF16(blk[j], 2) + o*blockF16(blk[j], 0) // o·d is exact (o = 8), so one rounding
			ch[j%4] = fma32(w[j], e, ch[j%4])
		}
		return (ch[0] + ch[2]) + (ch[1] + ch[3])
	}
	var ch [2][2]float32
	for j := range w {
		ch[j&1][0] += w[j] * blockF16(blk[j], 0)
		ch[j&1][1] = fma32(w[j], blockF16(blk[j], 2), ch[j&1][1])
	}
	return fma32(o, ch[0][0]+ch[1][0], ch[0][1]+ch[1][1])
}

// intAccRefOf is intAccRef with the offset and min term formed as intAccRefMin's rl says.
func intAccRefOf(c Codec, q float32, rl bool, acc []float32, d, nv, m int, w []float32, rows []byte) {
	bc, code, _ := intAccCodes(c)
	rb := c.RowBytes()
	hasMin := centre(c) != 0
	o := float32(centre(c))
	wd := make([]float32, 64)
	W := make([]int32, 64)
	for t0 := 0; t0 < m; t0 += 64 {
		t1 := min(t0+64, m)
		for b := 0; b < nv/BlockSize; b++ {
			for h := 0; h < 4; h++ {
				var tw []float32
				var tb [][]byte
				for j := t0; j < t1; j++ {
					blk := rows[j*rb+b*bc.fullBytes:]
					wj := w[4*j+h]
					wd[j-t0] = wj * blockF16(blk, 0)
					tw, tb = append(tw, wj), append(tb, blk)
				}
				var mt float32
				if hasMin {
					mt = intAccRefMin(rl, o, tw, tb)
				}
				T := intAccRound(wd[:t1-t0], q, W)
				for i := 0; i < BlockSize; i++ {
					var s int32
					for j := t0; j < t1; j++ {
						s += W[j-t0] * int32(code(rows[j*rb+b*bc.fullBytes:], i))
					}
					a := &acc[h*d+b*BlockSize+i]
					if hasMin {
						*a += mt
					}
					*a = fma32(float32(s), T, *a)
				}
			}
		}
	}
}

// TestIntAcc8Matches checks the kernels with 8-bit weights (intAcc8) against the Go reference
// of their computation (intAccRef with q = 127, or 255; q5's flavours for Zen 4 too) bit for bit, and the reference itself with
// q = 32767 against the int16 kernels, bit for bit: softmax-like weights with some exactly 0,
// one large per tile and some negative scales; the dims one block, partial and whole quads of
// blocks (the first prepass in the row loops where a row is one quad) and a short tail block;
// the row counts every remainder of a row quad around the 64-row tiles; the weights 16 bytes a
// row and 20 (a fifth weight between rows). Sentinels past each accumulator's nv values check
// that nothing is written there.
func TestIntAcc8Matches(t *testing.T) {
	if !intAcc() || !hasVBMI {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	for _, tc := range intAcc8Cases {
		for _, d := range []int{32, 64, 96, 128, 200, 256} {
			for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 61, 62, 63, 64, 65, 66, 67, 127, 130, 200} {
				t.Run(fmt.Sprintf("%s/d%d/rows%d", tc.f, d, rows), func(t *testing.T) {
					if (tc.f == Q5_0 || tc.f == Q5_1) && !hasBITALG {
						t.Skip("q5's kernels with 8-bit weights need AVX-512 BITALG")
					}
					c := Unwrap(mustCodec(t, tc.f, d))
					bc := intAccBlocks(c)
					nv, rb := bc.full*BlockSize, c.RowBytes()
					src := outlierRows(rng, rows, d)
					if rows%5 == 1 {
						for i := range src {
							src[i] = -src[i]
						}
					}
					enc := make([]byte, rows*rb)
					for r := 0; r < rows; r++ {
						c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
					}
					w := make([]float32, 4*rows)
					for j := 0; j < rows; j++ {
						for h := 0; h < 4; h++ {
							x := float32(math.Exp(-8 * rng.Float64()))
							switch {
							case rng.IntN(7) == 0:
								x = 0
							case j%64 == h:
								x = 1
							case rows%3 == 2 && rng.IntN(5) == 0:
								x = -x // a negative weight (q5_1's second pass)
							}
							w[4*j+h] = x
						}
					}
					const sentinel = 12345.5
					init := make([]float32, 4*d)
					for h := 0; h < 4; h++ {
						for i := 0; i < d; i++ {
							init[h*d+i] = float32(rng.NormFloat64())
							if i >= nv {
								init[h*d+i] = sentinel
							}
						}
					}
					for _, k := range []struct {
						name string
						q    float32
						acc  accKernel
					}{{"int16", 32767, tc.int16}, {"8-bit", tc.q, tc.w8}, {"8-bit Zen 4", tc.q, tc.z4}, {"8-bit Intel", tc.q, intAcc8Intel[tc.f]}} {
						if k.acc == nil || tc.f == Q5_1 && k.name != "int16" && k.name != "8-bit" && !hasGFNI512 {
							continue
						}
						got, want := slices.Clone(init), slices.Clone(init)
						k.acc(&got[0], d, nv, &enc[0], rb, rows, &w[0], 16)
						// q4_1's 8-bit kernels form the min term as rlPipeMin does, q5_1's Zen 4 one too (q51Z4RL).
						rl := tc.f == Q4_1 && k.name != "int16" || tc.f == Q5_1 && k.name == "8-bit Zen 4" && q51Z4RL
						intAccRefOf(c, k.q, rl, want, d, nv, rows, w, enc)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s kernel: accumulator %d [%d] = %g, the reference %g", k.name, i/d, i%d, got[i], want[i])
							}
						}
						// The same weights with a fifth, huge one between rows (wstride 20).
						w5 := make([]float32, 5*rows)
						for j := 0; j < rows; j++ {
							copy(w5[5*j:5*j+4], w[4*j:4*j+4])
							w5[5*j+4] = 1e30
						}
						got = slices.Clone(init)
						k.acc(&got[0], d, nv, &enc[0], rb, rows, &w5[0], 20)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s kernel, wstride 20: accumulator %d [%d] = %g, the reference %g", k.name, i/d, i%d, got[i], want[i])
							}
						}
					}
				})
			}
		}
	}
}

// TestIntAcc8Choice checks which kernels the codecs take: the 8-bit ones (and AccumulateStep
// 2⁻⁸; q5_1's unsigned ones 2⁻⁹, with BITALG too, and q5_0's where q5W8 chooses them) where the integer kernels and VBMI run, unless KVLAB_ACC16 (isa.Acc16), which keeps the
// int16 ones (AccumulateStep 2⁻¹⁶) as they were.
func TestIntAcc8Choice(t *testing.T) {
	if !intAcc() {
		t.Skip("no AVX-512 integer accumulate kernels here")
	}
	for _, tc := range intAcc8Cases {
		c := Unwrap(mustCodec(t, tc.f, 128))
		want, step := tc.int16, 0x1p-16
		if hasVBMI && !isa.Acc16 && tc.f != Q5_0 && tc.f != Q5_1 {
			want, step = tc.w8, 0x1p-8
			if (zen4Stream || intelCPU && tc.f == Q4_1) && tc.z4 != nil {
				want = tc.z4 // pickZen4, or pickFar for q4_1
			}
		}
		if hasVBMI && !isa.Acc16 && hasBITALG && (tc.f == Q5_1 && q51W8 || tc.f == Q5_0 && q5W8) {
			want, step = pickZen4(tc.w8, tc.z4), 0x1p-9
			if tc.f == Q5_1 {
				want = pickQ51(tc.w8, tc.z4, intAcc8Intel[Q5_1])
			}
		}
		if !hasVBMI {
			continue // the non-VBMI int16 kernels: not this test's
		}
		if reflect.ValueOf((*tc.cur).acc).Pointer() != reflect.ValueOf(want).Pointer() {
			t.Errorf("%s: another kernel than expected (Acc16 %v)", tc.f, isa.Acc16)
		}
		if got := AccumulateStep(c); got != step {
			t.Errorf("%s: AccumulateStep %g, want %g", tc.f, got, step)
		}
	}
}

// TestIntAcc8Speed reports, per row of benchDim values and four accumulators, the thread CPU
// time of the nibble formats' values kernels with int16 weights (the VBMI flavour) and with
// 8-bit weights, alternated call by call: in cache (benchRows rows, 41 calls each) and streamed
// (passes over 64 MiB of rows in chunks of benchRows, KVLAB_SPEED_ROUNDS passes each, default
// 5): min and median. It runs only when KVLAB_SPEED_REPORT is set.
func TestIntAcc8Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !intAcc() || !hasVBMI {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	rounds := speedRounds(5)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, tc := range intAcc8Cases {
		if (tc.f == Q5_0 || tc.f == Q5_1) && !hasBITALG {
			continue
		}
		c := Unwrap(mustCodec(t, tc.f, benchDim))
		rb := c.RowBytes()
		tile, big := benchStreamRows(c)
		_, _, w, acc := benchQueries()
		ks := [2]accKernel{tc.int16, tc.w8}
		var cache, stream [2][]float64
		for r := 0; r < 41; r++ {
			for i, k := range ks {
				t0 := cputime.Thread()
				k(&acc[0], benchDim, benchDim, &tile[0], rb, benchRows, &w[0], 16)
				cache[i] = append(cache[i], float64((cputime.Thread()-t0).Nanoseconds())/benchRows)
			}
		}
		chunks := len(big) / len(tile)
		for r := 0; r < rounds; r++ {
			for i, k := range ks {
				var d time.Duration
				for ch := 0; ch < chunks; ch++ {
					t0 := cputime.Thread()
					k(&acc[0], benchDim, benchDim, &big[ch*len(tile)], rb, benchRows, &w[0], 16)
					d += cputime.Thread() - t0
				}
				stream[i] = append(stream[i], float64(d.Nanoseconds())/float64(chunks*benchRows))
			}
		}
		mm := func(x []float64) string {
			slices.Sort(x)
			return fmt.Sprintf("%.2f/%.2f", x[0], x[len(x)/2])
		}
		t.Logf("%-6s values per row of %d, 4 accumulators, ns min/median: in cache int16 %s, 8-bit %s; streamed int16 %s, 8-bit %s",
			tc.f, benchDim, mm(cache[0]), mm(cache[1]), mm(stream[0]), mm(stream[1]))
		// Two accumulators (grouped-query attention with two query heads per KV head): the
		// int16 two-accumulator kernel against the 8-bit one with two zero weights a row.
		two := map[Format]*multiKernels{Q4_0: intAccTwoQ4_0, Q4_1: intAccTwoQ4_1, IQ4_NL: intAccTwoIQ4NL}[tc.f]
		if two == nil {
			continue
		}
		w4 := slices.Clone(w)
		for j := 0; j < benchRows; j++ {
			w4[4*j+2], w4[4*j+3] = 0, 0
		}
		w2 := make([]float32, 2*benchRows)
		for i := range w2 {
			w2[i] = 1.0 / benchRows
		}
		mq := c.(MultiQuery)
		var c2 [3][]float64
		for r := 0; r < 41; r++ {
			for i := range 3 {
				t0 := cputime.Thread()
				switch i {
				case 0:
					two.acc(&acc[0], benchDim, benchDim, &tile[0], rb, benchRows, &w2[0], 8)
				case 1:
					tc.w8(&acc[0], benchDim, benchDim, &tile[0], rb, benchRows, &w4[0], 16)
				case 2:
					mq.AccumulateManyMulti(acc[:2*benchDim], 2, w2, tile) // as the codec runs it
				}
				c2[i] = append(c2[i], float64((cputime.Thread()-t0).Nanoseconds())/benchRows)
			}
		}
		t.Logf("%-6s two accumulators, in cache, ns min/median: int16 two-accumulator kernel %s, 8-bit kernel (two zero weights) %s, AccumulateManyMulti %s",
			tc.f, mm(c2[0]), mm(c2[1]), mm(c2[2]))
	}
}

// TestQ50IntelSpeed reports, per row of benchDim values and four accumulators, the thread CPU
// time of q5_0's VBMI kernel (multiAccQ50VINT) and its Intel flavour (multiAccQ50VIINT),
// alternated call by call as TestIntAcc8Speed alternates its kernels, in cache and streamed: min
// and median. It runs only when KVLAB_SPEED_REPORT is set.
func TestQ50IntelSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !intAcc() || !hasVBMI {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	q50Speed(t, [2]string{"VINT", "VIINT"}, [2]accKernel{multiAccQ50VINT, multiAccQ50VIINT})
}

// TestQ50Z4Speed is TestQ50IntelSpeed for q5_0's Zen 4 flavour (multiAccQ50VZ4INT, q50Z4)
// against multiAccQ50VINT: run on any CPU with AVX-512 VBMI (elsewhere than a Zen 4 a proxy
// only). It runs only when KVLAB_SPEED_REPORT is set.
func TestQ50Z4Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !intAcc() || !hasVBMI {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	q50Speed(t, [2]string{"VINT", "VZ4INT"}, [2]accKernel{multiAccQ50VINT, multiAccQ50VZ4INT})
}

// q50Speed times q5_0's values kernels ks (named names) as TestQ50IntelSpeed says.
func q50Speed(t *testing.T, names [2]string, ks [2]accKernel) {
	rounds := speedRounds(5)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := Unwrap(mustCodec(t, Q5_0, benchDim))
	rb := c.RowBytes()
	tile, big := benchStreamRows(c)
	_, _, w, acc := benchQueries()
	var cache, stream [2][]float64
	for r := 0; r < 101; r++ {
		for i, k := range ks {
			t0 := cputime.Thread()
			k(&acc[0], benchDim, benchDim, &tile[0], rb, benchRows, &w[0], 16)
			cache[i] = append(cache[i], float64((cputime.Thread()-t0).Nanoseconds())/benchRows)
		}
	}
	chunks := len(big) / len(tile)
	for r := 0; r < rounds; r++ {
		for i, k := range ks {
			var d time.Duration
			for ch := 0; ch < chunks; ch++ {
				t0 := cputime.Thread()
				k(&acc[0], benchDim, benchDim, &big[ch*len(tile)], rb, benchRows, &w[0], 16)
				d += cputime.Thread() - t0
			}
			stream[i] = append(stream[i], float64(d.Nanoseconds())/float64(chunks*benchRows))
		}
	}
	mm := func(x []float64) string {
		slices.Sort(x)
		return fmt.Sprintf("%.2f/%.2f", x[0], x[len(x)/2])
	}
	t.Logf("q5_0 values per row of %d, 4 accumulators, ns min/median: in cache %s %s, %s %s; streamed %s %s, %s %s",
		benchDim, names[0], mm(cache[0]), names[1], mm(cache[1]), names[0], mm(stream[0]), names[1], mm(stream[1]))
}

// TestIntAccMinBound checks the bound of q4_1's offset and min term as its kernels with 8-bit
// weights and four accumulators form it (intAccRefMin with rl, bit for bit those kernels' by
// TestIntAcc8Matches and TestIntAccTwoMatchesFour): within 20·2⁻²⁴·Σ_j |w_j|·(|m_j| + 8·|d_j|)
// of the exact sum (19 roundings on any term's path: e, at most 16 fma, two adds), and so
// within 2⁻¹⁸ of that of the other kernels' order (at most 35 roundings), as
// multi_intacc_amd64.go states. Tiles of every length to 64 rows, softmax-like weights (some
// 0, some tiny), scales and mins of either sign and mixed magnitudes.
func TestIntAccMinBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	const u = 0x1p-24
	worst := 0.0
	for it := 0; it < 4000; it++ {
		n := 1 + it%64
		w := make([]float32, n)
		blk := make([][]byte, n)
		for j := range w {
			w[j] = float32(math.Exp(-12 * rng.Float64()))
			if rng.IntN(9) == 0 {
				w[j] = 0
			}
			b := make([]byte, 4)
			d := float32(rng.NormFloat64() * math.Exp(4*rng.Float64()-2))
			m := float32(rng.NormFloat64() * math.Exp(6*rng.Float64()-3))
			f32ToF16Go(b, []float32{d, m})
			blk[j] = b
		}
		var exact, mag float64
		for j := range w {
			d, m := float64(blockF16(blk[j], 0)), float64(blockF16(blk[j], 2))
			exact += float64(w[j]) * (m + 8*d)
			mag += math.Abs(float64(w[j])) * (math.Abs(m) + 8*math.Abs(d))
		}
		got := float64(intAccRefMin(true, 8, w, blk))
		old := float64(intAccRefMin(false, 8, w, blk))
		if e := math.Abs(got - exact); e > 20*u*mag {
			t.Fatalf("tile of %d rows: the min term %g, exact %g: off by %g > 20·2⁻²⁴·%g", n, got, exact, e, mag)
		}
		if e := math.Abs(got - old); e > 0x1p-18*mag {
			t.Fatalf("tile of %d rows: the min term %g, the other order's %g: off by %g > 2⁻¹⁸·%g", n, got, old, e, mag)
		}
		if mag > 0 {
			worst = max(worst, math.Abs(got-exact)/(u*mag))
		}
	}
	t.Logf("worst error of the min term: %.2f·2⁻²⁴·Σ|w|(|m| + 8|d|)", worst)
}
