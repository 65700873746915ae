package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestDecodeBreakdown splits the one-thread decode at the bench shape (131072 cells unless
// KVLAB_BENCH_CELLS says otherwise; f16, q4_0, turbo2, turbo4 unless KVLAB_SPEED_FORMATS does)
// into its phases, each work item's timed apart (thread CPU, one clock read's cost taken off
// each): the scores kernel, the softmax, the values kernel, the queries' Prepare, beside the
// whole Decode call, in ns a cell of one KV head (min and median of 5 rounds); "rest" is the
// whole less the phases (the merges, the bookkeeping; negative where the phases timed apart run
// slower than inside Decode). KVLAB_CHUNK sets the chunk; KVLAB_TOUCH=1 (or v) reads each chunk's
// value rows before its values kernel (the read is counted in the softmax), which times the
// kernel with its rows in cache; KVLAB_TOUCH=k reads the chunk's key rows before its scores
// kernel (counted in no phase), kv both: the scores or values time streamed less the time in
// cache is the kernel's wait on memory. Runs only with KVLAB_SPEED_REPORT set.
//
// Zen 4 (shared, 2 vCPUs, load 3), ns a cell, medians: q4_0 whole 13.5, scores 5.3, softmax
// 0.78, values 7.7 (5.9 with KVLAB_TOUCH: 1.8–2.7 of it waits on memory); turbo2 9.0, 4.0,
// 0.77, 4.5 (3.5); turbo4 11.8, 4.9, 0.80, 6.3 (3.9); f16 36.8, 21.1, 1.31, 15.6 (9.5). The
// scores streamed and with KVLAB_TOUCH=k (load 1.5; chunks of 16384 rows, so the touched keys,
// 1.1–2.1 MiB, sit in L2 and L3): q4_0 5.0 and 4.8, q4_1 5.5 and 5.5, iq4_nl 5.4 and 5.3,
// q8_0 7.8 and 7.6, q5_0 6.5 and 6.4, fp8 9.6 and 7.6, tq4 4.6 and 4.3, turbo2 3.7 and 3.5,
// turbo3 4.4 and 4.2, turbo4 4.8 and 4.4, q2k 5.4 and 5.5: only fp8's kernel waits much.
func TestDecodeBreakdown(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	cells := 131072
	if c := benchCells(); os.Getenv("KVLAB_BENCH_CELLS") != "" {
		cells = c[0]
	}
	formats := []kvq.Format{kvq.F16, kvq.Q4_0, kvq.Turbo2, kvq.Turbo4}
	if list := os.Getenv("KVLAB_SPEED_FORMATS"); list != "" {
		formats = nil
		for _, name := range strings.Split(list, ",") {
			f, err := kvq.Parse(strings.TrimSpace(name))
			if err != nil {
				t.Fatal(err)
			}
			formats = append(formats, f)
		}
	}
	s := Shape{Heads: benchHeads, KVHeads: benchKVHeads, HeadDimK: benchDim, HeadDimV: benchDim,
		Scale: float32(1 / math.Sqrt(benchDim)), Threads: 1}
	rng := rand.New(rand.NewPCG(9, 10))
	q := make([]float32, benchHeads*benchDim)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, benchHeads*benchDim)
	var b testing.B
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// One clock read's cost, taken off each phase's time.
	t0 := cputime.Thread()
	for i := 0; i < 1000; i++ {
		cputime.Thread()
	}
	tick := (cputime.Thread() - t0) / 1000
	t.Logf("clock read %v", tick)
	touch := os.Getenv("KVLAB_TOUCH")
	touchK := strings.Contains(touch, "k")
	touchV := touch == "1" || strings.Contains(touch, "v")
	for _, f := range formats {
		ks, vs := benchStores(&b, f, cells)
		var whole, sco, smx, val, prep []time.Duration
		for r := 0; r < 5; r++ {
			t0 := cputime.Thread()
			Decode(out, q, s, ks, vs, 0, cells)
			whole = append(whole, cputime.Thread()-t0)
			// The phases, as decodeJob.run runs them, each timed apart.
			chunk := defaultChunk(cells, s.KVHeads)
			if c, err := strconv.Atoi(os.Getenv("KVLAB_CHUNK")); err == nil {
				chunk = c
				s.ChunkSize = c
			}
			group := s.Heads / s.KVHeads
			nChunks := (cells + chunk - 1) / chunk
			accLen := vs[0].AccLen()
			accs := make([]float32, s.KVHeads*nChunks*group*accLen)
			sc := getScratch()
			var dS, dM, dV, dP time.Duration
			t0 = cputime.Thread()
			pq := make([]float32, s.Heads*ks[0].QueryLen())
			for h := 0; h < s.Heads; h++ {
				g := h / group
				ql := ks[g].QueryLen()
				ks[g].Prepare(pq[h*ql:(h+1)*ql], q[h*s.HeadDimK:(h+1)*s.HeadDimK])
			}
			dP = cputime.Thread() - t0
			for it := 0; it < s.KVHeads*nChunks; it++ {
				g, c := it/nChunks, it%nChunks
				a, bb := c*chunk, min((c+1)*chunk, cells)
				m := bb - a
				ql := ks[g].QueryLen()
				p := pq[g*group*ql : (g+1)*group*ql]
				buf := sc.scores(group * m)
				if touchK {
					touchRows(ks[g], a, bb)
				}
				t1 := cputime.Thread()
				scoresMulti(ks[g], p, group, ql, a, buf, sc)
				t2 := cputime.Thread()
				mx, sums := sc.heads(group)
				softmaxRows(buf, group, s.Scale, mx, sums)
				t3 := cputime.Thread()
				acc := accs[it*group*accLen : (it+1)*group*accLen]
				if touchV {
					touchRows(vs[g], a, bb)
				}
				t3 = cputime.Thread()
				accumulateMulti(vs[g], acc, group, accLen, buf, a, sc)
				t4 := cputime.Thread()
				dS += t2 - t1 - tick
				dM += t3 - t2 - tick
				dV += t4 - t3 - tick
			}
			sco, smx, val, prep = append(sco, dS), append(smx, dM), append(val, dV), append(prep, dP)
		}
		med := func(x []time.Duration) float64 {
			y := append([]time.Duration(nil), x...)
			sort.Slice(y, func(i, j int) bool { return y[i] < y[j] })
			return float64(y[len(y)/2].Nanoseconds()) / float64(cells*s.KVHeads)
		}
		mn := func(x []time.Duration) float64 {
			y := x[0]
			for _, v := range x {
				y = min(y, v)
			}
			return float64(y.Nanoseconds()) / float64(cells*s.KVHeads)
		}
		t.Logf("%-7s ns/row (min/med): whole %.2f/%.2f  scores %.2f/%.2f  softmax %.2f/%.2f  values %.2f/%.2f  prepare %.3f  rest %.2f",
			f, mn(whole), med(whole), mn(sco), med(sco), mn(smx), med(smx), mn(val), med(val), mn(prep),
			med(whole)-med(sco)-med(smx)-med(val)-med(prep))
	}
}

// touchRows reads one byte of every 64 of cells [a, b) of store s (a RowStore, or
// benchStores' q2k keys: the part of its groups in proportion), bringing them into cache.
func touchRows(s any, a, b int) {
	var d []byte
	switch s := s.(type) {
	case *RowStore:
		d = s.Data[a*s.Codec.RowBytes() : b*s.Codec.RowBytes()]
	case q2kKeys:
		g, n := s.h.Groups(), s.h.Len()
		d = g[len(g)*a/n : len(g)*b/n]
	default:
		panic(fmt.Sprintf("touchRows: no rows to read in a %T", s))
	}
	var x byte
	for i := 0; i < len(d); i += 64 {
		x += d[i]
	}
	bsink += int(x)
}

var bsink int
