//go:build amd64 && linux && !purego

package kvq

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
)

// TestScoresTQ4PairMatch checks the two-chunk tq4 and turbo4 VNNI scores kernels
// (multiScoresTQ4B2VNNI, multiScoresT4B2VNNI) against the one-chunk ones bit for bit, on
// random code bytes (and all-zero and all-one codes), finite row scales of every size (zero,
// subnormal, the largest), rows at their own size apart and with a gap, the last row ending at
// an inaccessible page, scores stored contiguously and strided with nothing written between
// rows or past the last.
func TestScoresTQ4PairMatch(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	rng := rand.New(rand.NewPCG(131, 132))
	sentinel := math.Float32frombits(0x7fc0dead)
	type kern = vnniScoresKern
	for _, tc := range []struct {
		name     string
		f32      bool // tq4's f32 row scale, else turbo4's f16
		one, two kern
	}{{"tq4", true, multiScoresTQ4BVNNI, multiScoresTQ4B2VNNI}, {"turbo4", false, multiScoresT4BVNNI, multiScoresT4B2VNNI}} {
		for _, d := range []int{64, 128, 192, 256} {
			for _, gap := range []int{0, 5, 30} {
				for _, fill := range []int{-1, 0x00, 0xff} {
					sb := 2
					if tc.f32 {
						sb = 4
					}
					rb, nb, m := d/2+sb+gap, d/32, 48
					rows, free := guardedBytes(t, m*rb-gap, false)
					for i := range rows {
						rows[i] = byte(fill)
						if fill < 0 {
							rows[i] = byte(rng.Uint32())
						}
					}
					for j := 0; j < m; j++ {
						x := float32(rng.NormFloat64())
						switch j % 8 {
						case 1:
							x = 0
						case 2:
							x = 1e-7 // subnormal as an f16
						case 3:
							x = -65504
						case 4:
							x = 3e4
						}
						if tc.f32 {
							binary.LittleEndian.PutUint32(rows[j*rb+d/2:], math.Float32bits(x))
						} else {
							binary.LittleEndian.PutUint16(rows[j*rb+d/2:], F32ToF16(x))
						}
					}
					q := gaussianRows(rng, 4, d, 1)
					for i := 0; i < 4*d; i += 37 {
						q[i] *= 1e3 // a few large values: the groups' scales differ
					}
					dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
					vnniDigits(dig, aux, q, d, nb, 1)
					off := [5]float32{0.5, -1, 2, 0, tq4Unit}
					var stage [16]uint32
					for _, ostride := range []int{16, 24} {
						w := ostride / 4
						want, got := make([]float32, m*w+8), make([]float32, m*w+8)
						for i := range got {
							want[i], got[i] = sentinel, sentinel
						}
						tc.one(&dig[0], &aux[0], nb, &rows[0], rb, m, &want[0], ostride, &off[0], &stage[0])
						tc.two(&dig[0], &aux[0], nb, &rows[0], rb, m, &got[0], ostride, &off[0], &stage[0])
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s d %d rb %d fill %d ostride %d: float %d (row %d, %d): %g, one-chunk kernel %g",
									tc.name, d, rb, fill, ostride, i, i/w, i%w, got[i], want[i])
							}
						}
					}
					free()
				}
			}
		}
	}
}

// TestDotManyMultiTQ4Pair checks tq4's and turbo4's DotManyMulti with the two-chunk kernels
// chosen (tq4PairMode 1), and with the one-chunk ones' Intel flavours (tq4X), against the
// one-chunk ones (−1) bit for bit, for query counts and row
// counts around the kernels' four queries and sixteen rows, dims with an even and an odd number
// of chunks (the odd ones take the one-chunk kernels either way), tq4's queries on the
// per-chunk grid (tq4UniMode −1).
func TestDotManyMultiTQ4Pair(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI: both modes run the same kernels")
	}
	saved, savedUni, savedX := tq4PairMode, tq4UniMode, tq4X
	defer func() { tq4PairMode, tq4UniMode, tq4X = saved, savedUni, savedX }()
	defer func(r int) { twoStreamRows = r }(twoStreamRows)
	twoStreamRows = 0 // tq4X's flavours over the few rows here (tq4XRows)

	tq4UniMode = -1 // the per-chunk query grid both ways (tq4Uni's kernels: TestTQ4UniScores)
	rng := rand.New(rand.NewPCG(133, 134))
	for _, f := range []Format{TQ4, Turbo4} {
		for _, d := range []int{64, 96, 128, 256} {
			c := mustCodec(t, f, d)
			mq := c.(MultiQuery)
			rb := c.RowBytes()
			for _, rows := range []int{1, 15, 16, 17, 33, 48, 100, 176} {
				src := outlierRows(rng, rows, d)
				enc := make([]byte, rows*rb)
				for r := 0; r < rows; r++ {
					c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
				}
				for _, n := range []int{1, 3, 4, 5, 8} {
					q := gaussianRows(rng, n, d, 1)
					want, got := make([]float32, rows*n), make([]float32, rows*n)
					tq4PairMode, tq4X = -1, false
					mq.DotManyMulti(q, n, enc, want)
					tq4PairMode = 1
					mq.DotManyMulti(q, n, enc, got)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s d %d rows %d n %d: row %d query %d: %g two chunks a step, %g one", f, d, rows, n, i/n, i%n, got[i], want[i])
						}
					}
					tq4PairMode, tq4X = -1, true
					mq.DotManyMulti(q, n, enc, got)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s d %d rows %d n %d: row %d query %d: %g Intel's one-chunk flavour, %g one", f, d, rows, n, i/n, i%n, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestTQ4XRows checks tq4X's row gate: its two-stream flavours take calls of twoStreamRows rows
// or more with scores at least 16 apart, never a paged cache's 64-row pages.
func TestTQ4XRows(t *testing.T) {
	defer func(x bool) { tq4X = x }(tq4X)
	tq4X = true
	for _, c := range []struct {
		m, ostride int
		want       bool
	}{{64, 16, false}, {16, 16, false}, {twoStreamRows - 1, 16, false}, {twoStreamRows, 16, true},
		{4096, 32, true}, {4096, 8, false}} {
		if got := tq4XRows(c.m, c.ostride); got != c.want {
			t.Errorf("m %d ostride %d: %v, want %v", c.m, c.ostride, got, c.want)
		}
	}
	tq4X = false
	if tq4XRows(4096, 16) {
		t.Error("on with tq4X off")
	}
}

// TestTQ4PairSpeed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the thread-CPU time of tq4's and turbo4's (KVLAB_SPEED_FORMATS: any formats)
// DotManyMulti through the one-chunk kernels (tq4PairMode −1) and the two-chunk ones (1),
// alternated pass by pass: 4096-row calls in cache (100 each), and passes over 128 MiB of keys
// and of values from hugemem.Bytes (KVLAB_NO_HUGEPAGES=1: 4 KiB pages) in 16384-row chunks,
// each chunk's scores then its values (AccumulateManyMulti, timed apart) as attention's Decode
// takes them (KVLAB_SPEED_ROUNDS passes, default 7); ns min/median.
func TestTQ4PairSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	formats := []Format{TQ4, Turbo4}
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
	saved := tq4PairMode
	defer func() { tq4PairMode = saved }()
	modes := []int{-1, 1}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, f := range formats {
		c := mustCodec(t, f, benchDim)
		mq := c.(MultiQuery)
		tile, _ := benchRowsOf(c)
		const chunkRows = 16384
		rb := c.RowBytes()
		chunk := chunkRows * rb
		n := (128 << 20) / chunk * chunk
		keys, vals := hugemem.Bytes(n), hugemem.Bytes(n)
		for o := 0; o < n; o += len(tile) {
			copy(keys[o:], tile)
			copy(vals[o:], tile)
		}
		q, _, _, acc := benchQueries()
		out := make([]float32, 4*chunkRows)
		w := make([]float32, 4*chunkRows)
		for i := range w {
			w[i] = 1.0 / chunkRows
		}
		var cache, ks, vs [2][]time.Duration
		for r := 0; r < 100; r++ {
			for i, m := range modes {
				tq4PairMode = m
				t0 := cputime.Thread()
				mq.DotManyMulti(q, 4, tile, out[:4*benchRows])
				cache[i] = append(cache[i], cputime.Thread()-t0)
			}
		}
		for r := 0; r < speedRounds(7); r++ {
			for i, m := range modes {
				tq4PairMode = m
				var dk, dv time.Duration
				for o := 0; o < n; o += chunk {
					t0 := cputime.Thread()
					mq.DotManyMulti(q, 4, keys[o:o+chunk], out)
					t1 := cputime.Thread()
					mq.AccumulateManyMulti(acc, 4, w, vals[o:o+chunk])
					t2 := cputime.Thread()
					dk, dv = dk+t1-t0, dv+t2-t1
				}
				ks[i], vs[i] = append(ks[i], dk), append(vs[i], dv)
			}
		}
		t.Logf("%-6s scores per row of %d values, 4 queries, ns min/median (%s): in cache one chunk a step %s, two %s; streamed %s, %s (values streamed %s, %s)",
			f, benchDim, hugemem.Pages(), minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
			minMedian(ks[0], n/rb), minMedian(ks[1], n/rb), minMedian(vs[0], n/rb), minMedian(vs[1], n/rb))
	}
}
