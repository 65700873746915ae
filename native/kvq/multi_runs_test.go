package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDotManyMultiRuns checks DotManyMultiRuns against DotManyMulti over each run alone, bit
// for bit (the rounding of the queries, where the kernels round them, is the same for every
// run, so nothing may differ): every format with rows, plain and rotated, the rotated ones
// with and without channel offsets (which the VNNI kernels start the scores from), one to two
// groups of four queries and a padded group, rows with and without a tail past the whole
// blocks, and runs of lengths around the kernels' 16-row groups, one of them empty. Where the
// CPU has the VNNI kernels, q4_0 and turbo2 must take them.
func TestDotManyMultiRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	lens := []int{64, 17, 0, 16, 3, 64, 1, 31}
	runsCodecs(rng, []int{128, 80}, func(name string, c Codec) {
		t.Run(name, func(t *testing.T) { checkRuns(t, rng, c, lens, false) })
	})
	for f, vnni := range map[Format]bool{Q4_0: hasVNNI, Turbo2: t2VNNI(128)} {
		if vnni {
			c := mustCodec(t, f, 128)
			out := make([]float32, 4)
			if !vnniRuns(c, make([]float32, 4*128), 4, [][]byte{make([]byte, c.RowBytes())}, out) {
				t.Errorf("%s: DotManyMultiRuns does not take the VNNI kernels", f)
			}
		}
	}
}

// runsCodecs calls fn with every format's codec that has rows (not grouped) at each of dims
// values: plain, rotated where the format rotates, and rotated with channel offsets (rotCodec's
// muR, from rng), named format/dD/rot=R/offsets=O for a subtest.
func runsCodecs(rng *rand.Rand, dims []int, fn func(name string, c Codec)) {
	for _, f := range Formats() {
		if f.Grouped() {
			continue
		}
		for _, d := range dims {
			for _, rot := range []bool{false, true} {
				if rot && !f.Rotatable() {
					continue // the same codec as without
				}
				for _, offsets := range []bool{false, true} {
					c, err := NewCodec(f, d, CodecOptions{Seed: 3, Head: 1, Rotate: rot})
					if err != nil {
						continue
					}
					rc, isRot := c.(*rotCodec)
					if offsets {
						if !isRot {
							continue
						}
						rc.muR = gaussianRows(rng, 1, d, 0.5)
					}
					fn(fmt.Sprintf("%s/d%d/rot=%v/offsets=%v", f, d, isRot, offsets), c)
				}
			}
		}
	}
}

// makeRuns is runs of lens rows of c's encoding of outlier rows, each its own allocation (as
// pages of a cache in buffers of their own), or with adjacent one after another in one buffer,
// each with the capacity of the rest of it (as a cache's pages cut one after another from a
// slab), and their rows in all.
func makeRuns(rng *rand.Rand, c Codec, lens []int, adjacent bool) ([][]byte, int) {
	d, rb := c.Dim(), c.RowBytes()
	var runs [][]byte
	total, gaps := 0, 0
	for _, m := range lens {
		if m < 0 {
			gaps -= m
			continue
		}
		total += m
	}
	buf := make([]byte, total*rb, (total+gaps)*rb)
	o := 0
	for _, m := range lens {
		if m < 0 { // adjacent: -m rows of the buffer between runs, not read
			if adjacent {
				buf = append(buf, make([]byte, -m*rb)...)
				o -= m
			}
			continue
		}
		run := make([]byte, m*rb)
		if adjacent {
			run = buf[o*rb : (o+m)*rb]
		}
		src := outlierRows(rng, m, d)
		for j := 0; j < m; j++ {
			c.Encode(run[j*rb:(j+1)*rb], src[j*d:(j+1)*d])
		}
		runs = append(runs, run)
		o += m
	}
	return runs, total
}

func checkRuns(t *testing.T, rng *rand.Rand, c Codec, lens []int, adjacent bool) {
	d, rb := c.Dim(), c.RowBytes()
	runs, total := makeRuns(rng, c, lens, adjacent)
	for _, n := range []int{1, 3, 4, 8} {
		q := gaussianRows(rng, n, d, 1)
		want := make([]float32, total*n)
		base := 0
		for _, run := range runs {
			m := len(run) / rb
			if mq, ok := c.(MultiQuery); ok {
				mq.DotManyMulti(q, n, run, want[base*n:(base+m)*n])
			} else {
				dotManyPerQuery(c, q, c.Dim(), n, run, want[base*n:(base+m)*n])
			}
			base += m
		}
		// Then with a run past the scored rows (a later call's page: prefetched only) and a
		// sentinel past out.
		const sentinel = 12345.5
		for _, extra := range [][]byte{nil, append([]byte(nil), runs[0]...)} {
			got := make([]float32, total*n+1)
			for i := range got {
				got[i] = float32(math.NaN()) // every score must be written
			}
			got[total*n] = sentinel
			rs := runs
			if extra != nil {
				rs = append(runs[:len(runs):len(runs)], extra)
			}
			DotManyMultiRuns(c, q, n, rs, got[:total*n])
			if got[total*n] != sentinel {
				t.Fatalf("n %d, extra run %v: wrote past out", n, extra != nil)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d: row %d query %d: %g over the runs, %g over its run alone", n, i/n, i%n, got[i], want[i])
				}
			}
		}
	}
}

// TestAccumulateManyMultiRuns checks AccumulateManyMultiRuns against AccumulateManyMulti over
// each run in turn, bit for bit, and that it writes nothing past the n accumulators: every
// format with rows (f16 at 128, 64 and 96 values, and rows of 80 and 16), one to three groups
// of four accumulators and counts that are not a multiple of four, runs of lengths around the
// kernels' tiles (one empty, one longer than a tile: the per-run path). (TestAccRunsKernel: f16 takes the
// kernel path where it exists.)
func TestAccumulateManyMultiRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, f := range Formats() {
		if f.Grouped() {
			continue
		}
		dims := []int{128, 80}
		if f == F16 {
			dims = []int{128, 64, 96, 80, 16}
		}
		for _, d := range dims {
			for _, rot := range []bool{false, true} {
				if rot && !f.Rotatable() {
					continue // the same codec as without
				}
				c, err := NewCodec(f, d, CodecOptions{Seed: 3, Head: 1, Rotate: rot})
				if err != nil {
					continue
				}
				if rc, ok := c.(*rotCodec); ok {
					rc.muR = gaussianRows(rng, 1, d, 0.5) // value offsets, added per run
				}
				for _, lens := range [][]int{{64, 17, 0, 16, 3, 64, 1, 31}, {64, 64, 64, 64, 64}, {5}, {64, 65, 2}} {
					t.Run(fmt.Sprintf("%s/d%d/rot=%v/%v", f, d, rot, lens), func(t *testing.T) { checkAccRuns(t, rng, c, lens, false) })
				}
			}
		}
	}
}

func checkAccRuns(t *testing.T, rng *rand.Rand, c Codec, lens []int, adjacent bool) {
	d, rb := c.Dim(), c.RowBytes()
	runs, total := makeRuns(rng, c, lens, adjacent)
	for _, n := range []int{1, 3, 4, 8, 12} {
		w := gaussianRows(rng, total, n, 0.1)
		start := gaussianRows(rng, n, d, 1)
		const sentinel = 12345.5
		want := append(append([]float32(nil), start...), sentinel)
		got := append(append([]float32(nil), start...), sentinel)
		base := 0
		for _, run := range runs {
			m := len(run) / rb
			if m > 0 {
				accumulateManyMulti(c, want[:n*d], n, w[base*n:(base+m)*n], run)
			}
			base += m
		}
		// A run past the weighted rows (a later call's page) is prefetched only.
		AccumulateManyMultiRuns(c, got[:n*d], n, w, append(runs[:len(runs):len(runs)], runs[0]))
		if got[n*d] != sentinel {
			t.Fatalf("n=%d: wrote past the accumulators", n)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: acc[%d] = %v, per run %v", n, i, got[i], want[i])
			}
		}
	}
}

// TestManyMultiRunsAdjacent checks DotManyMultiRuns and AccumulateManyMultiRuns over runs that
// lie one after another in one buffer (a paged cache's pages cut one after another from a
// slab), which they take a stretch at a time where mergeRuns is set (runStretches), against the
// codec's calls run by run, bit for bit: every format with rows, plain and rotated (with
// channel offsets, which the sums keep run by run), stretches of whole tiles and a last partial
// one (a call's rows all one stretch, or stretches of mergeMin rows with short ones between
// them), an empty run, a first partial run and a partial run between whole ones (which end a
// stretch), and stretches apart in memory (a negative length: rows between them).
func TestManyMultiRunsAdjacent(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	tiles := func(k int, tail ...int) []int {
		l := make([]int, k, k+len(tail))
		for i := range l {
			l[i] = 64
		}
		return append(l, tail...)
	}
	L := mergeMin / AccumulateTile // the tiles of the shortest stretch taken in one call
	cat := func(parts ...[]int) []int { return slices.Concat(parts...) }
	lensList := [][]int{
		{64, 64, 64, 17}, {64, 0, 64}, {17, 64, 64}, {64, 17, 64}, {200}, tiles(12, 17),
		cat(tiles(L, -3), tiles(3, -1), tiles(L, 33)), cat([]int{31}, tiles(L, 0, 64)),
		cat(tiles(2, -1), tiles(L, -5), tiles(2)),
	}
	runsCodecs(rng, []int{128, 64, 96}, func(name string, c Codec) {
		for _, lens := range lensList {
			t.Run(fmt.Sprintf("%s/%v", name, lens), func(t *testing.T) {
				checkRuns(t, rng, c, lens, true)
				checkAccRuns(t, rng, c, lens, true)
			})
		}
	})
	c := mustCodec(t, F16, 128)
	for _, tc := range []struct {
		lens []int
		one  bool
	}{{tiles(3, 17), true}, {cat(tiles(2, 0), tiles(2)), false}, {cat([]int{17}, tiles(4)), false},
		{cat([]int{17}, tiles(L)), true}, {cat(tiles(2, 17), tiles(2)), false},
		{cat(tiles(2, -1), tiles(2)), false}, {cat(tiles(2, -1), tiles(L)), true}, {cat(tiles(L-1, -1), tiles(L-1)), false}} {
		runs, total := makeRuns(rng, c, tc.lens, true)
		if one := wholeStretch(t, c, runs, total); one != (tc.one && mergeRuns) {
			t.Errorf("runs %v: a stretch in one call %v, want %v", tc.lens, one, tc.one && mergeRuns)
		}
		runs, total = makeRuns(rng, c, tc.lens, false)
		if wholeStretch(t, c, runs, total) {
			t.Errorf("runs %v apart: a stretch of them taken in one call", tc.lens)
		}
	}
}

// wholeStretch is whether DotManyMultiRuns takes some stretch of c's runs (total rows) in one
// call of the codec's kernels (runStretches), and fails the test where its calls do not take
// each of the rows once, in order.
func wholeStretch(t *testing.T, c Codec, runs [][]byte, total int) bool {
	t.Helper()
	one, next := false, 0
	runStretches(c, runs, total, false,
		func(apart [][]byte, from, to int) {
			if from != next || to <= from {
				t.Errorf("runs apart take rows %d..%d after %d", from, to, next)
			}
			next = to
		},
		func(rows []byte, from, to int) {
			if from != next || len(rows) != (to-from)*c.RowBytes() {
				t.Errorf("a stretch of %d bytes takes rows %d..%d after %d", len(rows), from, to, next)
			}
			one, next = true, to
		})
	if next != total {
		t.Errorf("the calls take %d rows of %d", next, total)
	}
	return one
}
