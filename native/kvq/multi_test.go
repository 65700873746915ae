package kvq

import (
	"fmt"
	"github.com/kvlab/kvlab/internal/cputime"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// multiFormats are the formats whose codecs implement MultiQuery.
var multiFormats = []Format{F16, Q8_0, Q4_0, TQ4, BF16, Q4_1, Q5_0, Q5_1, IQ4_NL, FP8, Turbo4, Turbo3, Turbo2}

// TestMultiQueryMatchesReference checks DotManyMulti against Dot and AccumulateManyMulti
// against a loop of AccumulateScaled, query by query, within the bounds multi.go states: the
// codec's DotMany bound (1e-5·Σ|q[i]|·(|x[i]| + o_b)) and the block formats' AccumulateMany
// bound ((2n + 8)·2⁻²⁴·(|acc₀[i]| + Σ_j |w_j|·|x_j[i]|)). Query counts that are not a multiple
// of four exercise the padded group; row counts past 64 cross the kernels' row tiles.
func TestMultiQueryMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, f := range multiFormats {
		for _, d := range []int{8, 40, 64, 75, 128, 200, 1024} {
			for _, n := range []int{1, 2, 3, 4, 5, 8} {
				for _, rows := range []int{1, 7, 130} {
					t.Run(fmt.Sprintf("%s/d%d/n%d/rows%d", f, d, n, rows), func(t *testing.T) {
						checkMulti(t, rng, f, d, n, rows)
					})
				}
			}
		}
	}
}

func checkMulti(t *testing.T, rng *rand.Rand, f Format, d, n, rows int) {
	c := mustCodec(t, f, d)
	if rc, ok := c.(*rotCodec); ok {
		c = rc.inner // a turbo tier's kernels work in the rotated domain, under the rotation
	}
	mq, ok := c.(MultiQuery)
	if !ok {
		t.Fatalf("%s does not implement MultiQuery", f)
	}
	rb := c.RowBytes()
	src := outlierRows(rng, rows, d)
	enc := make([]byte, rows*rb)
	for r := 0; r < rows; r++ {
		c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
	}
	q := gaussianRows(rng, n, d, 1)
	out := make([]float32, rows*n)
	for i := range out {
		out[i] = float32(math.NaN()) // every score must be written
	}
	mq.DotManyMulti(q, n, enc, out)
	x := make([]float32, d)
	domain := c.Decode // the codec domain's values: rotated for tq4
	if tc, ok := c.(*tq4Codec); ok {
		domain = tc.rotatedDecode
	}
	// Integer kernels score the query rounded per block (grid, |q − q̃| ≤ u·max|q_b|): within
	// the float bound of Dot(q̃), and within u·Σ_b max|q_b|·Σ_b(|x| + o_b) more of Dot(q).
	grid := make([]float32, n*d)
	u := ScoresGrid(c, grid, q, n)
	for j := 0; j < rows; j++ {
		row := enc[j*rb : (j+1)*rb]
		domain(x, row)
		for h := 0; h < n; h++ {
			qh, gh := q[h*d:(h+1)*d], grid[h*d:(h+1)*d]
			var scale, gscale, quant, subQ, subG float64
			gb := scoresGridBlock(Unwrap(c)) // the values under one scale
			for b := 0; b < d; b += gb {
				var m, sx float64
				for i := b; i < min(b+gb, d); i++ {
					ax := math.Abs(float64(x[i])) + blockOffset(c, row, i)
					scale += math.Abs(float64(qh[i])) * ax
					gscale += math.Abs(float64(gh[i])) * ax
					m = math.Max(m, math.Abs(float64(qh[i])))
					sx += ax
					sub := fp8SubSlack(c, row, i, false)
					subQ += math.Abs(float64(qh[i])) * sub
					subG += math.Abs(float64(gh[i])) * sub
				}
				quant += m * sx
			}
			bound := u*quant + 1e-5*scale + subQ
			ref := c.Dot(qh, row)
			if e := math.Abs(float64(out[j*n+h]) - float64(ref)); !(e <= bound) {
				t.Fatalf("row %d query %d: DotManyMulti = %g, Dot = %g: error %g > %g", j, h, out[j*n+h], ref, e, bound)
			}
			if u == 0 {
				continue
			}
			gref := c.Dot(gh, row)
			if e := math.Abs(float64(out[j*n+h]) - float64(gref)); !(e <= 1e-5*gscale+subG) {
				t.Fatalf("row %d query %d: DotManyMulti = %g, Dot(grid) = %g: error %g > %g", j, h, out[j*n+h], gref, e, 1e-5*gscale+subG)
			}
		}
	}

	w := make([]float32, rows*n)
	for i := range w {
		w[i] = float32(rng.Float64())
		if i%5 == 0 {
			w[i] = -w[i]
		}
	}
	acc0 := gaussianRows(rng, n, d, 1)
	fast := append([]float32(nil), acc0...)
	mq.AccumulateManyMulti(fast, n, w, enc)
	tol := float64(2*rows+8) * math.Ldexp(1, -24)
	slack := intAccSlack(c, n, w, enc) // the integer kernels' weight quantization, or nil
	for h := 0; h < n; h++ {
		ref := append([]float32(nil), acc0[h*d:(h+1)*d]...)
		scale := make([]float64, d)
		for i := range scale {
			scale[i] = math.Abs(float64(ref[i]))
		}
		for j := 0; j < rows; j++ {
			row := enc[j*rb : (j+1)*rb]
			wj := w[j*n+h]
			c.AccumulateScaled(ref, wj, row)
			domain(x, row)
			for i := range scale {
				scale[i] += math.Abs(float64(wj)) * (math.Abs(float64(x[i])) + blockOffset(c, row, i))
			}
		}
		for i := range ref {
			got := fast[h*d+i]
			bound := tol * scale[i]
			if slack != nil {
				bound += slack[h*d+i]
			}
			if e := math.Abs(float64(got) - float64(ref[i])); !(e <= bound) {
				t.Fatalf("acc %d [%d]: AccumulateManyMulti = %g, loop = %g: error %g > %g", h, i, got, ref[i], e, bound)
			}
		}
	}
}

// blockOffset is the offset term o_b of value i's block in the block formats' bounds
// (block_fast.go): |m̂| for q4_1 and q5_1, 16·|d̂| for q5_0, 0 otherwise.
func blockOffset(c Codec, row []byte, i int) float64 {
	var bc *blockCodec
	switch c := c.(type) {
	case *q4_1Codec:
		bc = &c.blockCodec
	case *q5_1Codec:
		bc = &c.blockCodec
	case *q5_0Codec:
		blk := row[i/BlockSize*c.fullBytes:]
		return 16 * math.Abs(float64(blockF16(blk, 0)))
	default:
		return 0
	}
	blk := row[i/BlockSize*bc.fullBytes:]
	return math.Abs(float64(blockF16(blk, 2)))
}

// TestMultiQueryIndependentOfGrouping checks that a query's scores and sums do not depend on
// how many queries share the call or where it sits among them: runs stay deterministic
// whatever the model's grouping.
func TestMultiQueryIndependentOfGrouping(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const d, rows = 96, 70
	for _, f := range multiFormats {
		t.Run(f.String(), func(t *testing.T) {
			c := mustCodec(t, f, d)
			mq := c.(MultiQuery)
			rb := c.RowBytes()
			src := gaussianRows(rng, rows, d, 1)
			enc := make([]byte, rows*rb)
			for r := 0; r < rows; r++ {
				c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
			}
			q := gaussianRows(rng, 6, d, 1)
			all := make([]float32, rows*6)
			mq.DotManyMulti(q, 6, enc, all)
			w := gaussianRows(rng, rows, 6, 1)
			accAll := make([]float32, 6*d)
			mq.AccumulateManyMulti(accAll, 6, w, enc)
			for h := 0; h < 6; h++ {
				one := make([]float32, rows)
				mq.DotManyMulti(q[h*d:(h+1)*d], 1, enc, one)
				wh := make([]float32, rows)
				for j := range wh {
					wh[j] = w[j*6+h]
				}
				accOne := make([]float32, d)
				mq.AccumulateManyMulti(accOne, 1, wh, enc)
				for j := 0; j < rows; j++ {
					if one[j] != all[j*6+h] {
						t.Fatalf("query %d row %d: alone %g, among six %g", h, j, one[j], all[j*6+h])
					}
				}
				for i := 0; i < d; i++ {
					if accOne[i] != accAll[h*d+i] {
						t.Fatalf("accumulator %d [%d]: alone %g, among six %g", h, i, accOne[i], accAll[h*d+i])
					}
				}
			}
		})
	}
}

// TestMultiQueryF16ScoreLines checks the f16 scores of four queries written into a 64-byte
// aligned output, where each line of four rows' scores is one store (the AVX-512 kernel's
// non-temporal line stores), against the same scores written one row at a time into an output
// 16 bytes off the line: bit for bit, since only the stores differ, and both within the
// MultiQuery bound of Dot (multi.go). Row counts around the four-row lines check the rows past
// the last whole line, and the sentinels after each output that nothing is written past it.
func TestMultiQueryF16ScoreLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	const n, sentinel = 4, float32(-7.5)
	for _, d := range []int{32, 128, 200} {
		c := mustCodec(t, F16, d)
		mq := c.(MultiQuery)
		rb := c.RowBytes()
		for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 64, 130} {
			src := outlierRows(rng, rows, d)
			enc := make([]byte, rows*rb)
			for r := 0; r < rows; r++ {
				c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
			}
			q := gaussianRows(rng, n, d, 1)
			// One buffer, two outputs: at a 64-byte boundary and 16 bytes past one.
			buf := make([]float32, 2*(rows*n+64)+32)
			off := int((64 - uintptr(unsafe.Pointer(&buf[0]))%64) % 64 / 4)
			lines := buf[off : off+rows*n+16]
			rowwise := buf[off+rows*n+64+4 : off+2*rows*n+64+4+16]
			for _, o := range [][]float32{lines, rowwise} {
				for i := range o {
					o[i] = float32(math.NaN()) // every score must be written
				}
				for i := rows * n; i < len(o); i++ {
					o[i] = sentinel
				}
			}
			mq.DotManyMulti(q, n, enc, lines[:rows*n])
			mq.DotManyMulti(q, n, enc, rowwise[:rows*n])
			for i := rows * n; i < rows*n+16; i++ {
				if lines[i] != sentinel || rowwise[i] != sentinel {
					t.Fatalf("d%d rows %d: value %d past the output written", d, rows, i-rows*n)
				}
			}
			for j := 0; j < rows; j++ {
				row := enc[j*rb : (j+1)*rb]
				x := make([]float32, d)
				c.Decode(x, row)
				for h := 0; h < n; h++ {
					a, b := lines[j*n+h], rowwise[j*n+h]
					if math.Float32bits(a) != math.Float32bits(b) {
						t.Fatalf("d%d rows %d: row %d query %d: %g in whole lines, %g row by row", d, rows, j, h, a, b)
					}
					qh := q[h*d : (h+1)*d]
					var scale float64
					for i := range qh {
						scale += math.Abs(float64(qh[i]) * float64(x[i]))
					}
					bound := (float64(d)/8 + 6) * scale / (1 << 24)
					if e := math.Abs(float64(a) - float64(c.Dot(qh, row))); !(e <= bound) {
						t.Fatalf("d%d rows %d: row %d query %d: %g, Dot %g: error %g > %g", d, rows, j, h, a, c.Dot(qh, row), e, bound)
					}
				}
			}
		}
	}
}

// BenchmarkMultiQuery scores four queries against, and accumulates four weight vectors over,
// 4096 rows of 128 values: one KV head's work for a group of four query heads.
func BenchmarkMultiQuery(b *testing.B) {
	for _, f := range multiFormats {
		c := mustCodec(b, f, benchDim)
		mq := c.(MultiQuery)
		enc, _ := benchRowsOf(c)
		q := gaussianRows(rand.New(rand.NewPCG(11, 12)), 4, benchDim, 1)
		b.Run("dot/"+f.String(), func(b *testing.B) {
			out := make([]float32, 4*benchRows)
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				mq.DotManyMulti(q, 4, enc, out)
			}
			reportPerValue(b)
		})
		b.Run("acc/"+f.String(), func(b *testing.B) {
			w := make([]float32, 4*benchRows)
			for i := range w {
				w[i] = 1.0 / benchRows
			}
			acc := make([]float32, 4*benchDim)
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				mq.AccumulateManyMulti(acc, 4, w, enc)
			}
			reportPerValue(b)
		})
	}
}

// TestMultiQuerySpeed prints the best thread-CPU time of each kernel over many repetitions
// (KVLAB_SPEED_REPORT set), next to the single-query DotMany and AccumulateMany: a steadier
// signal than wall-clock benchmarks on a shared machine.
func TestMultiQuerySpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := func(f func()) time.Duration {
		b := time.Hour
		for r := 0; r < 200; r++ {
			t0 := cputime.Thread()
			f()
			b = min(b, cputime.Thread()-t0)
		}
		return b
	}
	for _, f := range multiFormats {
		c := mustCodec(t, f, benchDim)
		mq := c.(MultiQuery)
		enc, _ := benchRowsOf(c)
		q, out, w, acc := benchQueries()
		perRow := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / benchRows }
		dot := best(func() { mq.DotManyMulti(q, 4, enc, out) })
		accT := best(func() { mq.AccumulateManyMulti(acc, 4, w, enc) })
		dot2 := best(func() { mq.DotManyMulti(q[:2*benchDim], 2, enc, out[:2*benchRows]) })
		acc2 := best(func() { mq.AccumulateManyMulti(acc[:2*benchDim], 2, w[:2*benchRows], enc) })
		dotL := best(func() { mq.DotManyMulti(q[:benchDim], 1, enc, out[:benchRows]) })
		accL := best(func() { mq.AccumulateManyMulti(acc[:benchDim], 1, w[:benchRows], enc) })
		dot1 := best(func() { c.DotMany(q[:benchDim], enc, out[:benchRows]) })
		acc1 := best(func() { c.AccumulateMany(acc[:benchDim], w[:benchRows], enc) })
		t.Logf("%-5s per row of %d values: 4 queries dot %.1f ns, acc %.1f ns; 2 queries dot %.1f ns, acc %.1f ns; 1 query dot %.1f ns, acc %.1f ns; DotMany %.1f ns, AccumulateMany %.1f ns",
			f, benchDim, perRow(dot), perRow(accT), perRow(dot2), perRow(acc2), perRow(dotL), perRow(accL), perRow(dot1), perRow(acc1))
	}
}

// speedRounds is KVLAB_SPEED_ROUNDS where it is a positive count, else def: the rounds a
// speed test streams.
func speedRounds(def int) int {
	if n, err := strconv.Atoi(os.Getenv("KVLAB_SPEED_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return def
}

// benchQueries is the speed tests' four queries of benchDim values (q), room for their scores
// of benchRows rows (out), four weight vectors of 1/benchRows over those rows (w) and four
// accumulators (acc).
func benchQueries() (q, out, w, acc []float32) {
	q = gaussianRows(rand.New(rand.NewPCG(11, 12)), 4, benchDim, 1)
	w = make([]float32, 4*benchRows)
	for i := range w {
		w[i] = 1.0 / benchRows
	}
	return q, make([]float32, 4*benchRows), w, make([]float32, 4*benchDim)
}

// benchStreamRows is c's benchRows rows (benchRowsOf) and 64 MiB of copies of them: what the
// speed tests score in cache and streamed past the caches.
func benchStreamRows(c Codec) (tile, big []byte) {
	tile, _ = benchRowsOf(c)
	big = make([]byte, (64<<20)/len(tile)*len(tile))
	for o := 0; o < len(big); o += len(tile) {
		copy(big[o:], tile)
	}
	return tile, big
}

// scoreSpeeds times DotManyMulti of four queries on rows of benchDim values of format f
// under each of modes (each runs its argument with some kernels selected), the modes
// interleaved, on a locked thread: 200 calls on benchRows rows in cache, then
// KVLAB_SPEED_ROUNDS passes (speedRounds, default 10) over 64 MiB of those rows in chunks of
// benchRows (benchStreamRows). It returns each mode's thread-CPU times, a
// call's in cache and a pass's streamed, and the rows a pass covers.
func scoreSpeeds(t *testing.T, f Format, modes []func(func())) (cache, stream [][]time.Duration, passRows int) {
	rounds := speedRounds(10)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := mustCodec(t, f, benchDim)
	mq := c.(MultiQuery)
	tile, keys := benchStreamRows(c)
	q, out, _, _ := benchQueries()
	cache, stream = make([][]time.Duration, len(modes)), make([][]time.Duration, len(modes))
	for r := 0; r < 200; r++ {
		for i, mode := range modes {
			mode(func() {
				t0 := cputime.Thread()
				mq.DotManyMulti(q, 4, tile, out)
				cache[i] = append(cache[i], cputime.Thread()-t0)
			})
		}
	}
	chunks := len(keys) / len(tile)
	for r := 0; r < rounds; r++ {
		for i, mode := range modes {
			mode(func() {
				var d time.Duration
				for k := 0; k < chunks; k++ {
					t0 := cputime.Thread()
					mq.DotManyMulti(q, 4, keys[k*len(tile):(k+1)*len(tile)], out)
					d += cputime.Thread() - t0
				}
				stream[i] = append(stream[i], d)
			})
		}
	}
	return cache, stream, chunks * benchRows
}

// minMedian is the least and the median of ds, in ns a row of rows.
func minMedian(ds []time.Duration, rows int) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%.2f/%.2f", float64(s[0].Nanoseconds())/float64(rows), float64(s[len(s)/2].Nanoseconds())/float64(rows))
}

// TestMultiQueryStreamSpeed prints (KVLAB_SPEED_REPORT set), per row of benchDim values and
// four queries, the best thread-CPU time of DotManyMulti and AccumulateManyMulti in cache (the
// benchRows rows, again and again) and streamed past the caches (keys and values 64 MiB each of
// those rows, in chunks of benchRows rows taken as attention's Decode takes them: a chunk's
// scores, then its values), so that a kernel's memory stall can be told from its arithmetic.
// KVLAB_SPEED_FORMATS picks the formats (comma-separated; default f16, q4_0, q5_0, q5_1, fp8),
// KVLAB_SPEED_ROUNDS the rounds (default 10).
func TestMultiQueryStreamSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	formats := []Format{F16, Q4_0, Q5_0, Q5_1, FP8}
	if list := os.Getenv("KVLAB_SPEED_FORMATS"); list != "" {
		formats = nil
		for _, name := range strings.Split(list, ",") {
			f, err := Parse(strings.TrimSpace(name))
			if err != nil {
				t.Fatal(err)
			}
			formats = append(formats, f)
		}
	}
	rounds := speedRounds(10)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, f := range formats {
		c := mustCodec(t, f, benchDim)
		mq := c.(MultiQuery)
		tile, keys := benchStreamRows(c)
		vals := append([]byte(nil), keys...)
		q, out, w, acc := benchQueries()
		// best: scores and values in cache, then streamed.
		best := [4]time.Duration{time.Hour, time.Hour, time.Hour, time.Hour}
		chunks := len(keys) / len(tile)
		for r := 0; r < rounds; r++ {
			var d [4]time.Duration
			for k := 0; k < chunks; k++ {
				t0 := cputime.Thread()
				mq.DotManyMulti(q, 4, tile, out)
				t1 := cputime.Thread()
				mq.AccumulateManyMulti(acc, 4, w, tile)
				t2 := cputime.Thread()
				mq.DotManyMulti(q, 4, keys[k*len(tile):(k+1)*len(tile)], out)
				t3 := cputime.Thread()
				mq.AccumulateManyMulti(acc, 4, w, vals[k*len(tile):(k+1)*len(tile)])
				t4 := cputime.Thread()
				d[0], d[1], d[2], d[3] = d[0]+t1-t0, d[1]+t2-t1, d[2]+t3-t2, d[3]+t4-t3
			}
			for i := range best {
				best[i] = min(best[i], d[i])
			}
		}
		perRow := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(chunks*benchRows) }
		t.Logf("%-5s per row of %d values, 4 queries: scores %.2f ns in cache, %.2f ns streamed; values %.2f ns in cache, %.2f ns streamed",
			f, benchDim, perRow(best[0]), perRow(best[2]), perRow(best[1]), perRow(best[3]))
	}
}

// TestMultiQueryShortF16 checks the short-row f16 paths (d a multiple of 8 below 32: the
// short-row kernels where the CPU has them) against the references within the MultiQuery
// bounds, across row counts around the kernels' 8-row and 4-row tiles, and that a row's score
// does not depend on how many rows the call covers.
func TestMultiQueryShortF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, d := range []int{8, 16, 24} {
		for _, n := range []int{1, 2, 3, 4, 8} {
			for _, rows := range []int{1, 3, 4, 7, 8, 9, 17, 256} {
				t.Run(fmt.Sprintf("d%d/n%d/rows%d", d, n, rows), func(t *testing.T) {
					checkMulti(t, rng, F16, d, n, rows)
				})
			}
		}
		c := mustCodec(t, F16, d).(*f16Codec)
		rb, n, rows := c.RowBytes(), 2, 19
		enc := make([]byte, rows*rb)
		src := outlierRows(rng, rows, d)
		for r := 0; r < rows; r++ {
			c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
		}
		q := gaussianRows(rng, n, d, 1)
		all := make([]float32, rows*n)
		c.DotManyMulti(q, n, enc, all)
		for j := 0; j < rows; j++ {
			one := make([]float32, n)
			c.DotManyMulti(q, n, enc[j*rb:(j+1)*rb], one)
			for h := range one {
				if math.Float32bits(one[h]) != math.Float32bits(all[j*n+h]) {
					t.Fatalf("d%d row %d query %d: %g alone, %g among %d rows", d, j, h, one[h], all[j*n+h], rows)
				}
			}
		}
	}
}

// TestMultiQueryShortBlocks checks that q8_0 and q4_0 rows of one short block (d < 32) score
// and accumulate bit for bit as DotMany and AccumulateMany do query by query, as multi.go
// says, for the unrolled d = 8 paths and the general ones, across the 64-row batches.
func TestMultiQueryShortBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, f := range []Format{Q8_0, Q4_0} {
		for _, d := range []int{8, 13, 16, 24, 31} {
			c := mustCodec(t, f, d)
			mq := c.(MultiQuery)
			rb, n, rows := c.RowBytes(), 3, 150
			src := outlierRows(rng, rows, d)
			enc := make([]byte, rows*rb)
			for r := 0; r < rows; r++ {
				c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
			}
			q := gaussianRows(rng, n, d, 1)
			all := make([]float32, rows*n)
			mq.DotManyMulti(q, n, enc, all)
			w := gaussianRows(rng, rows, n, 1)
			acc := gaussianRows(rng, n, d, 1)
			accAll := append([]float32(nil), acc...)
			mq.AccumulateManyMulti(accAll, n, w, enc)
			for h := 0; h < n; h++ {
				one := make([]float32, rows)
				c.DotMany(q[h*d:(h+1)*d], enc, one)
				wh := make([]float32, rows)
				for j := range wh {
					wh[j] = w[j*n+h]
				}
				accOne := append([]float32(nil), acc[h*d:(h+1)*d]...)
				c.AccumulateMany(accOne, wh, enc)
				for j := range one {
					if math.Float32bits(one[j]) != math.Float32bits(all[j*n+h]) {
						t.Fatalf("%s d%d query %d row %d: DotMany %g, DotManyMulti %g", f, d, h, j, one[j], all[j*n+h])
					}
				}
				for i := range accOne {
					if math.Float32bits(accOne[i]) != math.Float32bits(accAll[h*d+i]) {
						t.Fatalf("%s d%d accumulator %d [%d]: AccumulateMany %g, AccumulateManyMulti %g", f, d, h, i, accOne[i], accAll[h*d+i])
					}
				}
			}
		}
	}
}

// checkBits fails t unless got holds want's values bit for bit; what names them ("q4_0:
// score") in the message.
func checkBits(t testing.TB, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s %d = %g, want %g", what, i, got[i], want[i])
		}
	}
}
