package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"

	"github.com/kvlab/kvlab/native/kvq"
)

// The decode benchmarks run the shape of `kvlab bench attn`: 32 query heads over 8 KV heads of
// 128 dimensions, one thread. KVLAB_BENCH_CELLS (comma-separated) overrides the context
// lengths; the default keeps the run short. KVLAB_BENCH_FORMATS (comma-separated names, q2k
// among them) overrides BenchmarkDecode's formats.
const benchHeads, benchKVHeads, benchDim = 32, 8, 128

func benchCells() []int {
	s := os.Getenv("KVLAB_BENCH_CELLS")
	if s == "" {
		return []int{4096}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// benchFormats is KVLAB_BENCH_FORMATS (comma-separated format names) or def.
func benchFormats(tb testing.TB, def []kvq.Format) []kvq.Format {
	list := os.Getenv("KVLAB_BENCH_FORMATS")
	if list == "" {
		return def
	}
	var out []kvq.Format
	for _, name := range strings.Split(list, ",") {
		f, err := kvq.Parse(strings.TrimSpace(name))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// benchBytes is the packed K and V bytes of benchStores(f, cells).
func benchBytes(f kvq.Format, cells int) int64 {
	p := kvq.Pair{K: f, V: f}
	if f == kvq.Q2K {
		p.V = kvq.Q4_0
	}
	return p.Bytes(int64(cells), benchDim, benchDim, benchKVHeads)
}

// q2kKeys is a q2k K pool read by the fast path (kvcache's group store, without the cache).
type q2kKeys struct{ h *kvq.Q2KHead }

func (k q2kKeys) Len() int                           { return k.h.Len() }
func (k q2kKeys) QueryLen() int                      { return k.h.Dim() }
func (k q2kKeys) Prepare(dst, q []float32) []float32 { copy(dst, q); return dst[:k.h.Dim()] }
func (k q2kKeys) Scores(pq []float32, lo int, out []float32) {
	k.h.ScoresRange(pq, lo, out)
}
func (k q2kKeys) ScoresMulti(pq []float32, n, lo int, out []float32) {
	k.h.ScoresRangeMulti(pq, n, lo, out)
}

// benchStores encodes cells rows per KV head by tiling 1024 distinct encoded rows (so building
// a 128k-cell cache is a copy, not an encode), for K and V. q2k (K only) pairs with q4_0 values,
// as the q2k scheme does; its K pool tiles 1024 distinct cells' groups the same way.
func benchStores(b *testing.B, f kvq.Format, cells int) ([]Keys, []Values) {
	b.Helper()
	if f == kvq.Q2K {
		_, vs := benchStores(b, kvq.Q4_0, cells)
		rng := rand.New(rand.NewPCG(5, 6))
		var ks []Keys
		for h := 0; h < benchKVHeads; h++ {
			kh, err := kvq.NewQ2KHead(benchDim, 1)
			if err != nil {
				b.Fatal(err)
			}
			kh.Grow(cells)
			const distinct = 1024
			k := make([]float32, min(distinct, cells)*benchDim)
			for i := range k {
				k[i] = float32(rng.NormFloat64())
			}
			for n := 0; n < cells; n += len(k) / benchDim {
				kh.Append(k[:min(len(k), (cells-n)*benchDim)])
			}
			ks = append(ks, q2kKeys{kh})
		}
		return ks, vs
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var ks []Keys
	var vs []Values
	for h := 0; h < benchKVHeads; h++ {
		for side := 0; side < 2; side++ {
			c, err := kvq.NewCodec(f, benchDim, kvq.CodecOptions{Seed: 1, Head: h})
			if err != nil {
				b.Fatal(err)
			}
			rb := c.RowBytes()
			const distinct = 1024
			tile := make([]byte, distinct*rb)
			row := make([]float32, benchDim)
			for j := 0; j < distinct; j++ {
				for i := range row {
					row[i] = float32(rng.NormFloat64())
				}
				c.Encode(tile[j*rb:(j+1)*rb], row)
			}
			data := hugemem.Bytes(cells * rb)
			for off := 0; off < len(data); off += len(tile) {
				copy(data[off:], tile)
			}
			s := NewRowStore(c, data, cells)
			if side == 0 {
				ks = append(ks, s)
			} else {
				vs = append(vs, s)
			}
		}
	}
	return ks, vs
}

// BenchmarkDecode is one decode step's attention (every query head over every cell); bytes
// are the packed K and V bytes read.
func BenchmarkDecode(b *testing.B) {
	for _, cells := range benchCells() {
		for _, f := range benchFormats(b, []kvq.Format{kvq.F16, kvq.Q8_0, kvq.Q4_0}) {
			b.Run(fmt.Sprintf("%s/%d", f, cells), func(b *testing.B) {
				ks, vs := benchStores(b, f, cells)
				rng := rand.New(rand.NewPCG(9, 10))
				q := make([]float32, benchHeads*benchDim)
				for i := range q {
					q[i] = float32(rng.NormFloat64())
				}
				out := make([]float32, benchHeads*benchDim)
				s := Shape{Heads: benchHeads, KVHeads: benchKVHeads, HeadDimK: benchDim, HeadDimV: benchDim,
					Scale: float32(1 / math.Sqrt(benchDim)), Threads: 1}
				b.SetBytes(benchBytes(f, cells))
				b.ResetTimer()
				for b.Loop() {
					if err := Decode(out, q, s, ks, vs, 0, cells); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkReadBandwidth sums a 512 MiB buffer: the machine's one-thread read bandwidth, the
// ceiling a bandwidth-bound decode reaches.
func BenchmarkReadBandwidth(b *testing.B) {
	buf := make([]uint64, 64<<20)
	for i := range buf {
		buf[i] = uint64(i)
	}
	b.SetBytes(int64(len(buf) * 8))
	var sink uint64
	for b.Loop() {
		var s0, s1, s2, s3 uint64
		for i := 0; i+4 <= len(buf); i += 4 {
			s0 += buf[i]
			s1 += buf[i+1]
			s2 += buf[i+2]
			s3 += buf[i+3]
		}
		sink += s0 + s1 + s2 + s3
	}
	if sink == 1 {
		b.Log(sink)
	}
}

// perQuery hides a store's MultiKeys and MultiValues, so Decode reads it one query head at a
// time through the codecs' single-query DotMany and AccumulateMany: the kernels attention ran
// on before the multi-query fast path.
type perQuery struct {
	Keys
	Values
}

func (p perQuery) Len() int { return p.Keys.Len() }

// TestDecodeSpeedReport prints one-thread decode times at the bench shape for f16, q8_0, q4_0
// and tq4, each the best thread-CPU time of KVLAB_SPEED_ROUNDS rounds (default 5) run in turn,
// with the fast path and with the single-query kernels (perQuery), the ratios to f16 within
// each, and the machine's read bandwidth measured the same way in the same rounds. It runs
// only when KVLAB_SPEED_REPORT is set (KVLAB_BENCH_CELLS picks the contexts,
// KVLAB_SPEED_FORMATS the formats, comma-separated, first the f16 they are compared with;
// KVLAB_SPEED_BEFORE=0 skips the single-query rows, which take seconds each at 128k).
func TestDecodeSpeedReport(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("KVLAB_SPEED_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	before := os.Getenv("KVLAB_SPEED_BEFORE") != "0"
	formats := []kvq.Format{kvq.F16, kvq.Q8_0, kvq.Q4_0, kvq.TQ4}
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
	bw := make([]byte, 1<<30)
	for i := 0; i < len(bw); i += 4096 {
		bw[i] = 1
	}
	for _, cells := range benchCells() {
		var b testing.B
		type arm struct {
			ks       []Keys
			vs       []Values
			old      bool
			best     time.Duration
			fmt      kvq.Format
			bytesPer float64
		}
		var arms []*arm
		for _, f := range formats {
			ks, vs := benchStores(&b, f, cells)
			bytes := float64(benchBytes(f, cells))
			arms = append(arms, &arm{ks: ks, vs: vs, best: time.Hour, fmt: f, bytesPer: bytes})
			if before {
				var oks []Keys
				var ovs []Values
				for g := range ks {
					oks, ovs = append(oks, perQuery{Keys: ks[g]}), append(ovs, perQuery{Values: vs[g]})
				}
				arms = append(arms, &arm{ks: oks, vs: ovs, old: true, best: time.Hour, fmt: f, bytesPer: bytes})
			}
		}
		bestBW := 0.0
		runtime.LockOSThread()
		for r := 0; r < rounds; r++ {
			for _, a := range arms {
				if a.old && r >= 2 {
					continue // slow: two rounds are enough
				}
				t0 := cputime.Thread()
				if err := Decode(out, q, s, a.ks, a.vs, 0, cells); err != nil {
					t.Fatal(err)
				}
				a.best = min(a.best, cputime.Thread()-t0)
			}
			t0 := cputime.Thread()
			readSum(bw)
			bestBW = max(bestBW, float64(len(bw))/(cputime.Thread()-t0).Seconds())
		}
		runtime.UnlockOSThread()
		t.Logf("cells %d, one thread, %d heads / %d KV heads / d%d; read bandwidth %.1f GB/s (best of %d)",
			cells, benchHeads, benchKVHeads, benchDim, bestBW/1e9, rounds)
		var f16, f16old time.Duration
		for _, a := range arms {
			if a.fmt == kvq.F16 && !a.old {
				f16 = a.best
			} else if a.fmt == kvq.F16 {
				f16old = a.best
			}
		}
		for _, a := range arms {
			ref, what := f16, "fast path   "
			if a.old {
				ref, what = f16old, "single-query"
			}
			gbs := a.bytesPer / a.best.Seconds()
			t.Logf("  %-5s %s %9.2f ms  %6.2f GB/s  %4.0f%% of bandwidth  %.2f× f16",
				a.fmt, what, float64(a.best.Microseconds())/1e3, gbs/1e9, 100*gbs/bestBW, a.best.Seconds()/ref.Seconds())
		}
	}
}
