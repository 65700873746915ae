package kvcache

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// flatRunsKeys and flatRunsValues read a contiguous store through kvq.DotManyMultiRuns and
// kvq.AccumulateManyMultiRuns, a run of PageCells rows a page as a paged store calls them
// but the runs one after another in memory: the calls of a paged store without its layout.
// Each run's capacity ends with its rows, so that kvq takes them apart (the runs kernels), not
// as one stretch (as it takes a paged store's pages that follow one another in a slab).
type (
	flatRunsKeys struct {
		*rowStore
		buf *[][]byte
	}
	flatRunsValues struct {
		*rowStore
		buf *[][]byte
	}
)

// flatRuns is the m rows of s from lo as runs of up to PageCells rows, in buf.
func flatRuns(s *rowStore, lo, m int, buf *[][]byte) [][]byte {
	rb := s.Codec.RowBytes()
	runs := (*buf)[:0]
	for o := lo; o < lo+m; o += PageCells {
		end := min(o+PageCells, lo+m) * rb
		runs = append(runs, s.Data[o*rb:end:end])
	}
	*buf = runs
	return runs
}

func (k flatRunsKeys) ScoresMulti(pq []float32, n, lo int, out []float32) {
	kvq.DotManyMultiRuns(k.Codec, pq[:n*k.Codec.Dim()], n, flatRuns(k.rowStore, lo, len(out)/n, k.buf), out)
}

func (v flatRunsValues) AccumulateMulti(acc []float32, n int, w []float32, lo int) {
	kvq.AccumulateManyMultiRuns(v.Codec, acc, n, w, flatRuns(v.rowStore, lo, len(w)/n, v.buf))
}

// TestPagedBreakdown prints (KVLAB_SPEED_REPORT set) the best thread-CPU time of the scores
// and of the values of a decode step's attention at 32768 cells, 8 KV heads of 128 values, 4
// queries a KV head, a head's 4096-cell chunks in order as attn.Decode takes them (the scores
// of a chunk, then its values; weights fixed, no softmax), for a contiguous cache, the same
// read through the paged stores' kvq calls a page of rows a call (flatRunsKeys,
// flatRunsValues: the calls without the layout) and a paged cache: where a paged decode's time
// goes. KVLAB_SPEED_FORMATS (comma-separated) picks the formats (default q8_0).
func TestPagedBreakdown(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	const d, hn, nq, ctx, chunk, rounds = 128, 8, 4, 32768, 4096, 12
	formats := []string{"q8_0"}
	if list := os.Getenv("KVLAB_SPEED_FORMATS"); list != "" {
		formats = strings.Split(list, ",")
	}
	type arm struct {
		name   string
		ks     []attn.MultiKeys
		vs     []attn.MultiValues
		bs, bv time.Duration
	}
	var arms []*arm
	r := rand.New(rand.NewPCG(1, 1))
	k, v := randVec(r, 2048*hn*d), randVec(r, 2048*hn*d)
	fill := func(c *Cache) {
		for pos := 0; pos < ctx; pos += 2048 {
			if err := c.Write(0, k, v, 2048); err != nil {
				t.Fatal(err)
			}
			if err := c.Commit(2048); err != nil {
				t.Fatal(err)
			}
		}
	}
	buf := make([][]byte, 0, ctx/PageCells)
	for _, f := range formats {
		cfg := Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, f), MaxCells: ctx, Seed: 1}
		flat, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		flat2, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, paged := newPaged(t, cfg, 1<<32)
		for _, c := range []*Cache{flat, flat2, paged} {
			fill(c)
		}
		a1 := &arm{name: f + " contiguous", bs: time.Hour, bv: time.Hour}
		a2 := &arm{name: f + " contiguous in runs", bs: time.Hour, bv: time.Hour}
		a3 := &arm{name: f + " paged", bs: time.Hour, bv: time.Hour}
		for g := range hn {
			ks, vs := flat2.Keys(0, true)[g].(*rowStore), flat2.Values(0, true)[g].(*rowStore)
			a1.ks = append(a1.ks, flat.Keys(0, true)[g].(attn.MultiKeys))
			a1.vs = append(a1.vs, flat.Values(0, true)[g].(attn.MultiValues))
			a2.ks = append(a2.ks, flatRunsKeys{ks, &buf})
			a2.vs = append(a2.vs, flatRunsValues{vs, &buf})
			a3.ks = append(a3.ks, paged.Keys(0, true)[g].(attn.MultiKeys))
			a3.vs = append(a3.vs, paged.Values(0, true)[g].(attn.MultiValues))
		}
		arms = append(arms, a1, a2, a3)
	}
	q := randVec(r, nq*d)
	out := make([]float32, chunk*nq)
	w := make([]float32, chunk*nq)
	for i := range w {
		w[i] = r.Float32()
	}
	acc := make([]float32, nq*d)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range rounds {
		for _, i := range r.Perm(len(arms)) {
			a := arms[i]
			var ts, tv time.Duration
			for g := range hn {
				for c0 := 0; c0 < ctx; c0 += chunk {
					t0 := cputime.Thread()
					a.ks[g].ScoresMulti(q, nq, c0, out)
					t1 := cputime.Thread()
					a.vs[g].AccumulateMulti(acc, nq, w, c0)
					ts, tv = ts+t1-t0, tv+cputime.Thread()-t1
				}
			}
			a.bs, a.bv = min(a.bs, ts), min(a.bv, tv)
		}
	}
	for _, a := range arms {
		t.Logf("%-26s scores %6.3f ms  values %6.3f ms", a.name, float64(a.bs.Microseconds())/1e3, float64(a.bv.Microseconds())/1e3)
	}
}
