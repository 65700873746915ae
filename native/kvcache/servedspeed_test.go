package kvcache

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
)

// stretchesOf is the lengths in cells of the runs of c's pages that lie one after another in
// a slab (pageMem: page idx+1 of the slab of page idx), in position order: how a paged store's
// rows reach kvq (its stretches, which Intel reads in one call when long enough).
func stretchesOf(c *Cache) []int {
	var out []int
	d := c.pt.data
	for i := 0; i < len(d); {
		j := i + 1
		for j < len(d) && &d[j].slab[0] == &d[j-1].slab[0] && d[j].idx == d[j-1].idx+1 {
			j++
		}
		out = append(out, (j-i)*PageCells)
		i = j
	}
	return out
}

// stretchSummary is the count, mean and longest of stretches (cells) and the share of cells
// in stretches of at least 2048 cells (kvq's mergeMin on Intel).
func stretchSummary(s []int) string {
	total, long, most := 0, 0, 0
	for _, n := range s {
		total += n
		most = max(most, n)
		if n >= 2048 {
			long += n
		}
	}
	if len(s) == 0 {
		return "no pages"
	}
	return fmt.Sprintf("%d stretches, mean %d cells, longest %d, %.0f %% of cells in stretches ≥ 2048", len(s), total/len(s), most, 100*float64(long)/float64(total))
}

// TestServedPagedSpeed prints (KVLAB_SPEED_REPORT set) the best thread-CPU time of one layer's
// one-thread decode attention (32 query heads over 8 KV heads of 128 values) over the caches of
// a served model's pool, 32 layers × 8 KV heads, against a contiguous cache of the same rows:
// one session grown alone, and the first of two (KVLAB_SERVED_SESSIONS, default "1,2")
// sessions grown in turn a page at a time (as sessions decoding together take their pages).
// Only layer 0 is written (Cache.Write, no Commit), so the pool's memory holds the rows a
// served model's layer 0 has where a served model has them, and the other layers' memory is
// never touched. It prints each paged cache's stretches (stretchesOf). KVLAB_SPEED_FORMATS
// picks the formats (default q8_0,q4_0,fp8,tq4), KVLAB_SERVED_CTX the cells (default 32768).
// Run one format and size a process where memory is short: a pool's slabs are not reused.
func TestServedPagedSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	const d, hn, heads, layers, rounds = 128, 8, 32, 32, 10
	ctx := 32768
	if s := os.Getenv("KVLAB_SERVED_CTX"); s != "" {
		var err error
		if ctx, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	formats := []string{"q8_0", "q4_0", "fp8", "tq4"}
	if list := os.Getenv("KVLAB_SPEED_FORMATS"); list != "" {
		formats = strings.Split(list, ",")
	}
	sessions := []int{1, 2}
	if list := os.Getenv("KVLAB_SERVED_SESSIONS"); list != "" {
		sessions = nil
		for _, s := range strings.Split(list, ",") {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatal(err)
			}
			sessions = append(sessions, n)
		}
	}
	var arms []*speedArm
	r := rand.New(rand.NewPCG(1, 1))
	k, v := randVec(r, PageCells*hn*d), randVec(r, PageCells*hn*d)
	write := func(c *Cache) {
		if err := c.Write(0, k, v, PageCells); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range formats {
		flat, err := New(Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, f), MaxCells: ctx, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for range ctx / PageCells {
			write(flat)
		}
		arms = append(arms, &speedArm{f + " contiguous", flat.Keys(0, true), flat.Values(0, true), time.Hour})
		for _, ns := range sessions {
			cfg := Config{Layers: layers, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, f), MaxCells: ctx, Seed: 1}
			pool, err := NewPagePool(cfg, 1<<40)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Pages = pool
			cs := make([]*Cache, ns)
			for i := range cs {
				if cs[i], err = New(cfg); err != nil {
					t.Fatal(err)
				}
			}
			t0 := time.Now()
			for range ctx / PageCells {
				for _, c := range cs {
					write(c)
				}
			}
			st := pool.Stats()
			t.Logf("%s, %d session(s) of %d cells: page %.2f MiB, %d pages allocated in slabs of %s, %.1f s to write; session 1: %s",
				f, ns, ctx, float64(pool.PageBytes())/(1<<20), st.Allocated, slabPages(pool), time.Since(t0).Seconds(), stretchSummary(stretchesOf(cs[0])))
			arms = append(arms, &speedArm{fmt.Sprintf("%s paged, %d session(s)", f, ns), cs[0].Keys(0, true), cs[0].Values(0, true), time.Hour})
		}
	}
	bestDecodes(t, r, arms, rounds, heads, hn, d, ctx)
	base := time.Hour
	for _, a := range arms {
		if strings.HasSuffix(a.name, " contiguous") {
			base = a.best
		}
		t.Logf("%-30s %8.3f ms  %6.2f ns a row of a head  %.3f × contiguous", a.name, float64(a.best.Microseconds())/1e3,
			float64(a.best.Nanoseconds())/float64(ctx*hn), float64(a.best)/float64(base))
	}
}

// TestServedPageLatency prints (KVLAB_SPEED_REPORT set) what a served model's cache pays for
// its pages as it grows: thread CPU and wall time of writing each page of cells (PageCells
// cells into every layer, 32 layers × 8 KV heads × 128) into a new pool's one cache, each
// write that makes a slab (growLocked: allocating it, and the first write into its pages
// touching all of it, pageMem) apart, the others together, the longest write, up to a write
// into the first slab of slabPagesMax pages. KVLAB_SPEED_FORMATS picks the formats (default
// q8_0). KVLAB_SERVED_KEEPAHEAD=n sets KeepAhead(n) on the pool (kvlab serve: 2 × Keep), whose
// fill makes the next slab ahead of need (slabWantLocked); KVLAB_SERVED_PACE=ms sleeps that
// long between writes (a served session takes a page every PageCells decode steps). Run one
// format a process: a pool's slabs are not reused, and the Go heap's reuse of a dropped pool's
// memory costs more than fresh memory.
func TestServedPageLatency(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	const d, hn, layers = 128, 8, 32
	formats := []string{"q8_0"}
	if list := os.Getenv("KVLAB_SPEED_FORMATS"); list != "" {
		formats = strings.Split(list, ",")
	}
	ahead, _ := strconv.Atoi(os.Getenv("KVLAB_SERVED_KEEPAHEAD"))
	paceMs, _ := strconv.Atoi(os.Getenv("KVLAB_SERVED_PACE"))
	r := rand.New(rand.NewPCG(1, 1))
	k, v := randVec(r, PageCells*hn*d), randVec(r, PageCells*hn*d)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, f := range formats {
		cfg := Config{Layers: layers, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, f), MaxCells: 1 << 20, Seed: 1}
		pool, err := NewPagePool(cfg, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		pool.KeepAhead(ahead)
		cfg.Pages = pool
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// slabs is the pool's slab count, and the pages before its first of slabPagesMax
		// pages (-1: none yet).
		slabs := func() (int, int) {
			pool.mu.Lock()
			defer pool.mu.Unlock()
			before := 0
			for _, sl := range pool.slabs {
				if len(sl)/int(pool.PageBytes()) >= pool.slabPagesMax() {
					return len(pool.slabs), before
				}
				before += len(sl) / int(pool.PageBytes())
			}
			return len(pool.slabs), -1
		}
		var rest, restWall, restMax, longest, longestWall time.Duration
		var grows []string
		writes := 0
		for {
			n0, _ := slabs()
			t0, w0 := cputime.Thread(), time.Now()
			for l := range layers {
				if err := c.Write(l, k, v, PageCells); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Commit(PageCells); err != nil {
				t.Fatal(err)
			}
			dt, dw := cputime.Thread()-t0, time.Since(w0)
			longest, longestWall = max(longest, dt), max(longestWall, dw)
			if ahead > 0 && dw > 20*time.Millisecond {
				grows = append(grows, fmt.Sprintf("page %d %.1f/%.1f ms", c.PagesHeld(), float64(dt.Microseconds())/1e3, float64(dw.Microseconds())/1e3))
			}
			n1, before := slabs()
			if n1 > n0 && ahead == 0 {
				pool.mu.Lock()
				last := len(pool.slabs[len(pool.slabs)-1]) / int(pool.PageBytes())
				pool.mu.Unlock()
				grows = append(grows, fmt.Sprintf("%d pages %.1f/%.1f ms", last, float64(dt.Microseconds())/1e3, float64(dw.Microseconds())/1e3))
			} else {
				rest, restWall, restMax, writes = rest+dt, restWall+dw, max(restMax, dt), writes+1
			}
			if before >= 0 && c.PagesHeld() > before {
				break
			}
			time.Sleep(time.Duration(paceMs) * time.Millisecond)
		}
		st := pool.Stats()
		t.Logf("%s: page %.2f MiB, KeepAhead %d, pace %d ms: %d pages in slabs of %s; writes making a slab (CPU/wall; KeepAhead: writes over 20 ms wall): %s; the other %d writes: CPU mean %.2f ms (max %.2f), wall mean %.2f ms; longest write CPU %.1f ms, wall %.1f ms",
			f, float64(pool.PageBytes())/(1<<20), ahead, paceMs, st.Allocated, slabPages(pool), strings.Join(grows, ", "), writes,
			float64(rest.Microseconds())/1e3/float64(writes), float64(restMax.Microseconds())/1e3, float64(restWall.Microseconds())/1e3/float64(writes),
			float64(longest.Microseconds())/1e3, float64(longestWall.Microseconds())/1e3)
		c.Release()
		pool.KeepAhead(0)
	}
}

// slabPages is the pages of each of pool's slabs, "+" between them.
func slabPages(pool *PagePool) string {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	var sizes []string
	for _, sl := range pool.slabs {
		sizes = append(sizes, strconv.Itoa(len(sl)/int(pool.PageBytes())))
	}
	return strings.Join(sizes, "+")
}
