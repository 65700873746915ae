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
)

// perPageKeys and perPageValues read a paged store a page a call, with no prefetch of the next
// page, as paged stores did before kvq.DotManyMultiRuns and kvq.Prefetch: the baseline of
// TestPagedDecodeSpeed.
type (
	perPageKeys   struct{ *pagedStore }
	perPageValues struct{ *pagedStore }
)

func (k perPageKeys) ScoresMulti(pq []float32, n, lo int, out []float32) {
	k.runs(lo, len(out)/n, func(rs attn.RowStore, o, off, m int) { rs.ScoresMulti(pq, n, o, out[off*n:(off+m)*n]) })
}

func (v perPageValues) AccumulateMulti(acc []float32, n int, w []float32, lo int) {
	v.runs(lo, len(w)/n, func(rs attn.RowStore, o, off, m int) { rs.AccumulateMulti(acc, n, w[off*n:(off+m)*n], o) })
}

// TestPagedDecodeSpeed prints (KVLAB_SPEED_REPORT set) the best thread-CPU time of a one-thread
// decode step's attention at 32768 cells, 32 query heads over 8 KV heads of 128 values, for a
// contiguous cache, a paged one, and a paged one read a page a call without prefetches
// (perPageKeys, perPageValues). Every arm has a cache of its own and the arms run in a random
// order each round, so none reads what the one before it left in the caches.
// KVLAB_SPEED_FORMATS (comma-separated) picks the formats.
func TestPagedDecodeSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	const d, hn, heads, ctx, rounds = 128, 8, 32, 32768, 12
	formats := []string{"q4_0", "turbo2", "turbo3"}
	if list := os.Getenv("KVLAB_SPEED_FORMATS"); list != "" {
		formats = strings.Split(list, ",")
	}
	var arms []*speedArm
	r := rand.New(rand.NewPCG(1, 1))
	k, v := randVec(r, 2048*hn*d), randVec(r, 2048*hn*d)
	fillSpeed := func(c *Cache) {
		for pos := 0; pos < ctx; pos += 2048 {
			if err := c.Write(0, k, v, 2048); err != nil {
				t.Fatal(err)
			}
			if err := c.Commit(2048); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range formats {
		cfg := Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, f), MaxCells: ctx, Seed: 1}
		flat, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pp, paged := newPaged(t, cfg, 1<<32)
		op, old := newPaged(t, cfg, 1<<32)
		for _, c := range []*Cache{flat, paged, old} {
			fillSpeed(c)
		}
		t.Logf("%s: on 2 MiB pages: contiguous %.0f %%, the two pools' pages %.0f %%, %.0f %%", f,
			100*flat.HugePages().Fraction(), 100*pp.HugePages().Fraction(), 100*op.HugePages().Fraction())
		var ok []attn.Keys
		var ov []attn.Values
		for g, ks := range old.Keys(0, true) {
			vs := old.Values(0, true)[g]
			if ps, isPaged := ks.(*pagedStore); isPaged {
				ks = perPageKeys{ps}
			}
			if ps, isPaged := vs.(*pagedStore); isPaged {
				vs = perPageValues{ps}
			}
			ok, ov = append(ok, ks), append(ov, vs)
		}
		arms = append(arms,
			&speedArm{f + " contiguous", flat.Keys(0, true), flat.Values(0, true), time.Hour},
			&speedArm{f + " paged", paged.Keys(0, true), paged.Values(0, true), time.Hour},
			&speedArm{f + " paged, a page a call", ok, ov, time.Hour})
	}
	bestDecodes(t, r, arms, rounds, heads, hn, d, ctx)
	for _, a := range arms {
		t.Logf("%-30s %7.3f ms  %6.1f ns a cell", a.name, float64(a.best.Microseconds())/1e3, float64(a.best.Nanoseconds())/ctx)
	}
}

// speedArm is one arm of the decode speed tests: a store's keys and values and the least
// thread CPU time of a decode over them (bestDecodes).
type speedArm struct {
	name string
	ks   []attn.Keys
	vs   []attn.Values
	best time.Duration
}

// bestDecodes decodes one query of heads × d over each arm's first ctx cells (hn KV heads, one
// thread) rounds times, the arms in a random order each round, and keeps each arm's least
// thread CPU time.
func bestDecodes(t *testing.T, r *rand.Rand, arms []*speedArm, rounds, heads, hn, d, ctx int) {
	t.Helper()
	q := randVec(r, heads*d)
	out := make([]float32, heads*d)
	s := attn.Shape{Heads: heads, KVHeads: hn, HeadDimK: d, HeadDimV: d, Scale: 0.088, Threads: 1}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range rounds {
		for _, i := range r.Perm(len(arms)) {
			a := arms[i]
			t0 := cputime.Thread()
			if err := attn.Decode(out, q, s, a.ks, a.vs, 0, ctx); err != nil {
				t.Fatal(err)
			}
			a.best = min(a.best, cputime.Thread()-t0)
		}
	}
}
