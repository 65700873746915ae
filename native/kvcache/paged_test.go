package kvcache

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// pagedPairs is every format as K and V (a K-only format with q4_0 V), rotated and not, and
// two mixed pairs.
func pagedPairs(t *testing.T) []kvq.Pair {
	var out []kvq.Pair
	for _, f := range kvq.Formats() {
		p := kvq.Pair{K: f, V: f}
		if f.KOnly() {
			p.V = kvq.Q4_0
		}
		if p.Valid() {
			out = append(out, p)
		}
		if raw := (kvq.Pair{K: p.K, V: p.V, KRaw: true, VRaw: true}); raw.Valid() && p.K.Rotatable() {
			out = append(out, raw)
		}
	}
	return append(out, mustPair(t, "q8_0/q4_0"), mustPair(t, "q4_0/turbo4"))
}

// attendAll runs decode attention at the end of every layer and prefill attention over the
// last m positions, returning all outputs.
func attendAll(t *testing.T, c *Cache, r *rand.Rand, m int) []float32 {
	t.Helper()
	cfg := c.Config()
	d := cfg.HeadDimK
	var out []float32
	for _, chunk := range []int{0, 64, 48} {
		s := attn.Shape{Heads: 4, KVHeads: cfg.KVHeads, HeadDimK: d, HeadDimV: cfg.HeadDimV, Scale: float32(1 / math.Sqrt(float64(d))), ChunkSize: chunk, Threads: 2}
		for l := 0; l < cfg.Layers; l++ {
			window := 0
			if l < len(cfg.Windows) {
				window = cfg.Windows[l]
			}
			lo := 0
			if window > 0 {
				lo = max(0, c.Len()-window)
			}
			for _, decode := range []bool{false, true} {
				q := randVec(r, 4*d)
				o := make([]float32, 4*cfg.HeadDimV)
				if err := attn.Decode(o, q, s, c.Keys(l, decode), c.Values(l, decode), lo, c.Len()); err != nil {
					t.Fatal(err)
				}
				out = append(out, o...)
			}
			q := randVec(r, m*4*d)
			o := make([]float32, m*4*cfg.HeadDimV)
			if err := attn.Prefill(o, q, m, c.Len()-m, window, s, c.Keys(l, false), c.Values(l, false)); err != nil {
				t.Fatal(err)
			}
			out = append(out, o...)
			kr, _ := c.Rows(l, true)
			row := make([]float32, d)
			for i := max(lo, 0); i < c.Len(); i += 13 {
				kr[0].Row(row, i)
				out = append(out, row...)
			}
		}
	}
	return out
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(math.IsNaN(float64(a[i])) && math.IsNaN(float64(b[i]))) {
			return false
		}
	}
	return true
}

func newPaged(t *testing.T, cfg Config, budget int64) (*PagePool, *Cache) {
	t.Helper()
	pool, err := NewPagePool(cfg, budget)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pages = pool
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pool, c
}

// TestPagedMatchesContiguous: a paged cache written like a contiguous one reads back the same
// attention, bit for bit, for every format, with the overlay and with a sliding-window layer.
func TestPagedMatchesContiguous(t *testing.T) {
	for _, p := range pagedPairs(t) {
		for _, variant := range []string{"plain", "overlay", "ring", "layered"} {
			if variant == "layered" && p.K.Grouped() {
				continue // a group K format is the whole cache's
			}
			t.Run(p.String()+"/"+variant, func(t *testing.T) {
				cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: p, MaxCells: 300, Seed: 3}
				switch variant {
				case "overlay":
					cfg.Window, cfg.Sinks = 16, 4
				case "ring":
					cfg.Windows = []int{0, 40}
				case "layered":
					cfg.LayerPairs = []kvq.Pair{{}, {K: kvq.Q8_0, V: kvq.Q4_0}}
				}
				flat, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				pool, paged := newPaged(t, cfg, 1<<30)
				fill(t, flat, rand.New(rand.NewPCG(5, 5)), 203, 7)
				fill(t, paged, rand.New(rand.NewPCG(5, 5)), 203, 7)
				a := attendAll(t, flat, rand.New(rand.NewPCG(9, 9)), 9)
				b := attendAll(t, paged, rand.New(rand.NewPCG(9, 9)), 9)
				if !sameBits(a, b) {
					t.Fatalf("paged attention differs from contiguous (rel %.2e)", relRMS(b, a))
				}
				if got, want := pool.Stats().Used, PagesFor(203); got != want {
					t.Fatalf("%d pages used, want %d", got, want)
				}
				paged.Release()
				if st := pool.Stats(); st.Used != 0 || st.FixedBytes != 0 || st.ReservedBytes != 0 {
					t.Fatalf("after Release: %+v", st)
				}
			})
		}
	}
}

// TestPagedScoreBatches: a paged read whose chunk spans more pages than one
// kvq.DotManyMultiRuns call takes (runBatch), from a cell inside a page, gives the contiguous
// cache's attention bit for bit, for formats whose scores kernels round the queries (q4_0, q8_0,
// turbo2 and turbo3 with VNNI), one that does not (f16), and group sizes of one, four and
// five query heads per KV head (a padded group).
func TestPagedScoreBatches(t *testing.T) {
	const cells = (runBatch+3)*PageCells + 9
	for _, name := range []string{"q4_0", "q8_0", "turbo2", "turbo3", "f16"} {
		cfg := Config{Layers: 1, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, name), MaxCells: cells, Seed: 3}
		flat, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, paged := newPaged(t, cfg, 1<<30)
		fill(t, flat, rand.New(rand.NewPCG(6, 6)), cells, 1000)
		fill(t, paged, rand.New(rand.NewPCG(6, 6)), cells, 1000)
		for _, group := range []int{1, 4, 5} {
			s := attn.Shape{Heads: 2 * group, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Scale: 0.125, ChunkSize: cells, Threads: 1}
			q := randVec(rand.New(rand.NewPCG(7, 7)), s.Heads*64)
			a, b := make([]float32, s.Heads*64), make([]float32, s.Heads*64)
			for _, lo := range []int{0, 37} {
				if err := attn.Decode(a, q, s, flat.Keys(0, true), flat.Values(0, true), lo, cells); err != nil {
					t.Fatal(err)
				}
				if err := attn.Decode(b, q, s, paged.Keys(0, true), paged.Values(0, true), lo, cells); err != nil {
					t.Fatal(err)
				}
				if !sameBits(a, b) {
					t.Fatalf("%s, %d query heads a KV head, from cell %d: paged attention differs from contiguous (rel %.2e)", name, group, lo, relRMS(b, a))
				}
			}
		}
	}
}

// TestPagedShareCopyOnWrite: a cache sharing another's prefix and continuing differently reads
// what a contiguous cache of the same cells reads; the source is unchanged; only the partial
// page was copied.
func TestPagedShareCopyOnWrite(t *testing.T) {
	for _, ps := range []string{"q8_0/q4_0", "turbo3", "f16"} {
		t.Run(ps, func(t *testing.T) {
			cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, ps), MaxCells: 300, Seed: 4, Window: 8, Sinks: 2}
			pool, a := newPaged(t, cfg, 1<<30)
			k, v := fill(t, a, rand.New(rand.NewPCG(1, 2)), 150, 50)
			pc := cfg
			pc.Pages = pool
			b, err := New(pc)
			if err != nil {
				t.Fatal(err)
			}
			const shared = 100
			if err := b.ShareFrom(a, shared); err != nil {
				t.Fatal(err)
			}
			if got := pool.Stats().Used; got != 3 {
				t.Fatalf("after sharing: %d pages used, want 3 (shared, not copied)", got)
			}
			if err := b.Reserve(160); err != nil {
				t.Fatal(err)
			}
			kb, vb := fill(t, b, rand.New(rand.NewPCG(7, 7)), 60, 60)
			// Cells 0–63 shared; the partial page 64–127 copied; 128–159 a new page.
			if got := pool.Stats().Used; got != 5 {
				t.Fatalf("after the divergent write: %d pages used, want 5", got)
			}
			want, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			hk, hv := cfg.KVHeads*cfg.HeadDimK, cfg.KVHeads*cfg.HeadDimV
			// The contiguous twin: the first write of a store fixes its codec state, so write the
			// source's first chunk as the source did, then the rest.
			write := func(c *Cache, k, v []float32, n int) {
				for l := 0; l < cfg.Layers; l++ {
					if err := c.Write(l, k, v, n); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.Commit(n); err != nil {
					t.Fatal(err)
				}
			}
			write(want, k[:50*hk], v[:50*hv], 50)
			write(want, k[50*hk:shared*hk], v[50*hv:shared*hv], shared-50)
			write(want, kb, vb, 60)
			if !sameBits(attendAll(t, want, rand.New(rand.NewPCG(3, 3)), 5), attendAll(t, b, rand.New(rand.NewPCG(3, 3)), 5)) {
				t.Fatal("the sharing cache differs from a contiguous one of the same cells")
			}
			src, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			write(src, k[:50*hk], v[:50*hv], 50)
			write(src, k[50*hk:100*hk], v[50*hv:100*hv], 50)
			write(src, k[100*hk:], v[100*hv:], 50)
			if !sameBits(attendAll(t, src, rand.New(rand.NewPCG(3, 3)), 5), attendAll(t, a, rand.New(rand.NewPCG(3, 3)), 5)) {
				t.Fatal("the source changed when the sharer wrote")
			}
			a.Release()
			if got := pool.Stats().Used; got != 3 {
				t.Fatalf("after releasing the source: %d pages used, want 3 (the sharer's)", got)
			}
			b.Release()
			if st := pool.Stats(); st.Used != 0 || st.FixedBytes != 0 || st.ReservedBytes != 0 {
				t.Fatalf("after releasing both: %+v", st)
			}
		})
	}
}

// TestPagePoolBudget: reservations and pages draw from one budget; a cache that cannot get a
// page fails with ErrNoPages (an ErrKVFull), and truncating gives pages back.
func TestPagePoolBudget(t *testing.T) {
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, "q8_0/q4_0"), MaxCells: 256}
	probe, err := NewPagePool(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A page: 64 cells × 2 layers × 2 heads × (q8_0 68 + q4_0 36 bytes per row of 64).
	if got, want := probe.PageBytes(), int64(64*2*2*(68+36)); got != want {
		t.Fatalf("page bytes %d, want %d", got, want)
	}
	if got, want := probe.SessionBytes(256), 2*cfg.Pair.Bytes(256, 64, 64, 2); got != want {
		t.Fatalf("a full session draws %d bytes, the cache of 256 cells is %d", got, want)
	}
	pool, err := NewPagePool(cfg, 2*probe.SessionBytes(256)+probe.PageBytes()-1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pages = pool
	var caches []*Cache
	for i := 0; i < 3; i++ {
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		caches = append(caches, c)
	}
	if err := caches[0].Reserve(256); err != nil {
		t.Fatal(err)
	}
	if err := caches[1].Reserve(256); err != nil {
		t.Fatal(err)
	}
	if err := caches[2].Reserve(1); !errors.Is(err, ErrNoPages) || !errors.Is(err, ErrKVFull) {
		t.Fatalf("a third reservation: %v, want ErrNoPages", err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	fill(t, caches[0], r, 256, 64)
	if err := caches[2].Write(0, randVec(r, 128), randVec(r, 128), 1); !errors.Is(err, ErrNoPages) {
		t.Fatalf("a write with no page free: %v, want ErrNoPages", err)
	}
	if st := pool.Stats(); st.Used != 4 || st.Free != 0 || st.Total != 8 {
		t.Fatalf("stats %+v, want 4 used, 0 free, 8 in all", st)
	}
	if err := caches[0].Truncate(64); err != nil {
		t.Fatal(err)
	}
	if st := pool.Stats(); st.Used != 1 {
		t.Fatalf("after truncating to one page: %d used", st.Used)
	}
	for _, c := range caches {
		c.Release()
	}
	if st := pool.Stats(); st.Used != 0 || st.Free != st.Total || st.ReservedBytes != 0 || st.FixedBytes != 0 {
		t.Fatalf("after releasing every cache: %+v", st)
	}
	if _, err := NewPagePool(Config{Layers: 1, KVHeads: 1, HeadDimK: 64, HeadDimV: 64, Pair: cfg.Pair, MaxCells: 64, Recent: 16}, 1<<20); err == nil {
		t.Fatal("a mixed cache got a page pool")
	}
}

// TestPagePoolKeepAhead: a pool keeping pages ahead holds them before any cache takes one,
// without drawing on the budget; once caches have taken half of them, refills them when a
// cache gives pages back, not while caches take them; never holds more than MaxPages; and its
// caches read back what they wrote, as a contiguous cache does. Caches
// taking and giving back pages while it refills (run it with -race) leave it within MaxPages.
func TestPagePoolKeepAhead(t *testing.T) {
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, "q8_0/q4_0"), MaxCells: 10 * PageCells, Seed: 3}
	probe, err := NewPagePool(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewPagePool(cfg, probe.FixedBytes()+10*probe.PageBytes()+probe.PageBytes()/2)
	if err != nil {
		t.Fatal(err)
	}
	if got := pool.MaxPages(); got != 10 {
		t.Fatalf("MaxPages %d, want 10", got)
	}
	// settle waits for the pool to hold allocated pages.
	settle := func(what string, allocated int) PageStats {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			st := pool.Stats()
			if st.Allocated > pool.MaxPages() {
				t.Fatalf("%s: %+v holds more than %d pages", what, st, pool.MaxPages())
			}
			if st.Allocated == allocated {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v, want %d pages allocated", what, st, allocated)
			}
		}
	}
	if st := pool.Stats(); st.Allocated != 0 {
		t.Fatalf("a new pool holds %d pages", st.Allocated)
	}
	pool.KeepAhead(4)
	if st := settle("kept ahead", 4); st.Used != 0 || st.Free != st.Total || st.Total != 10 {
		t.Fatalf("pages taken ahead: %+v, want none used and all 10 free", st)
	}

	paged := cfg
	paged.Pages = pool
	c, err := New(paged)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, c, rand.New(rand.NewPCG(5, 5)), 3*PageCells, 50) // 3 of the 4: one left, under half
	other, err := New(paged)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, other, rand.New(rand.NewPCG(7, 7)), 1, 1) // the last one
	if st := pool.Stats(); st.Allocated != 4 || st.Used != 4 {
		t.Fatalf("caches took the 4 pages kept ahead: %+v, want them used and no more allocated", st)
	}
	other.Release()
	if st := settle("refilled", 7); st.Used != 3 {
		t.Fatalf("after a cache gave its page back: %+v", st)
	}
	pool.KeepAhead(100)
	settle("capped", 10)
	flat, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, flat, rand.New(rand.NewPCG(5, 5)), 3*PageCells, 50)
	r := rand.New(rand.NewPCG(6, 6))
	fill(t, c, r, 7*PageCells-1, 64)
	fill(t, flat, rand.New(rand.NewPCG(6, 6)), 7*PageCells-1, 64)
	if a, b := attendAll(t, flat, rand.New(rand.NewPCG(9, 9)), 9), attendAll(t, c, rand.New(rand.NewPCG(9, 9)), 9); !sameBits(a, b) {
		t.Fatalf("a cache of pages taken ahead reads other attention than a contiguous one (rel %.2e)", relRMS(b, a))
	}
	if st := pool.Stats(); st.Used != 10 || st.Allocated != 10 {
		t.Fatalf("a cache of 10 pages: %+v, want 10 used of 10 allocated", st)
	}
	c.Release()

	t.Run("concurrent", func(t *testing.T) {
		cfg.MaxCells = 4 * PageCells
		pool, err := NewPagePool(cfg, 4*probe.SessionBytes(cfg.MaxCells))
		if err != nil {
			t.Fatal(err)
		}
		pool.KeepAhead(6)
		cfg.Pages = pool
		errs := make(chan error, 4)
		for g := range 4 {
			go func() {
				r := rand.New(rand.NewPCG(uint64(g), 1))
				var err error
				for i := 0; i < 8 && err == nil; i++ {
					var c *Cache
					if c, err = New(cfg); err != nil {
						break
					}
					if err = c.Reserve(cfg.MaxCells); err == nil {
						for n := 0; n < cfg.MaxCells && err == nil; n += 32 {
							for l := 0; l < cfg.Layers && err == nil; l++ {
								err = c.Write(l, randVec(r, 32*2*64), randVec(r, 32*2*64), 32)
							}
							if err == nil {
								err = c.Commit(32)
							}
						}
					}
					c.Release()
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if st := pool.Stats(); st.Used != 0 || st.Allocated > pool.MaxPages() || st.FixedBytes != 0 || st.ReservedBytes != 0 {
			t.Fatalf("after every cache is released: %+v (at most %d pages)", st, pool.MaxPages())
		}
	})
}

// TestPagedSnapshotRoundTrip: a paged cache's snapshot is a contiguous cache's, both ways.
func TestPagedSnapshotRoundTrip(t *testing.T) {
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, "q4_0"), MaxCells: 300, Seed: 2}
	flat, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pool, paged := newPaged(t, cfg, 1<<30)
	fill(t, flat, rand.New(rand.NewPCG(8, 8)), 130, 40)
	fill(t, paged, rand.New(rand.NewPCG(8, 8)), 130, 40)
	tokens := make([]int32, 130)
	var id Identity
	var a, b bytes.Buffer
	if err := WriteSnapshot(&a, flat, id, tokens); err != nil {
		t.Fatal(err)
	}
	if err := WriteSnapshot(&b, paged, id, tokens); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the paged cache's snapshot differs from the contiguous one's")
	}
	pc := cfg
	pc.Pages = pool
	loaded, err := New(pc)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadSnapshot(bytes.NewReader(a.Bytes()), loaded, id); err != nil {
		t.Fatal(err)
	}
	if !sameBits(attendAll(t, flat, rand.New(rand.NewPCG(1, 3)), 4), attendAll(t, loaded, rand.New(rand.NewPCG(1, 3)), 4)) {
		t.Fatal("a snapshot loaded into a paged cache reads differently")
	}
	if got := loaded.PagesHeld(); got != PagesFor(130) {
		t.Fatalf("loaded cache holds %d pages, want %d", got, PagesFor(130))
	}
}

// TestPagedDecodeAllocs: reading across pages allocates nothing more than a contiguous read
// (four query heads per KV head: kvq's multi-query kernels allocate per call for other group
// sizes, and a paged read makes a call per page).
func TestPagedDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts mean nothing")
	}
	cfg := Config{Layers: 1, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, "q8_0/q4_0"), MaxCells: 300}
	flat, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, paged := newPaged(t, cfg, 1<<30)
	fill(t, flat, rand.New(rand.NewPCG(1, 1)), 250, 50)
	fill(t, paged, rand.New(rand.NewPCG(1, 1)), 250, 50)
	s := attn.Shape{Heads: 8, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Scale: 0.125, Threads: 1}
	q, out := randVec(rand.New(rand.NewPCG(2, 2)), 512), make([]float32, 512)
	allocs := func(c *Cache) float64 {
		return testing.AllocsPerRun(20, func() {
			if err := attn.Decode(out, q, s, c.Keys(0, true), c.Values(0, true), 0, c.Len()); err != nil {
				t.Fatal(err)
			}
		})
	}
	if a, b := allocs(flat), allocs(paged); b > a {
		t.Fatalf("a paged decode allocates %.0f objects, a contiguous one %.0f", b, a)
	}
}

// TestPagePoolGeometry: the pool's page size and fixed bytes, worked out from the formats
// without allocating a cache, are what the caches hold — a contiguous cache of a whole number
// of pages is the fixed bytes plus its pages, and an empty paged cache holds exactly the fixed
// bytes — for every pair, with sliding-window layers, the FP16 overlay and per-layer pairs.
func TestPagePoolGeometry(t *testing.T) {
	type variant struct {
		name string
		edit func(*Config)
	}
	variants := []variant{
		{"plain", func(*Config) {}},
		{"sliding layer", func(c *Config) { c.Windows = []int{0, 100, 0} }},
		{"overlay", func(c *Config) { c.Window, c.Sinks = 32, 4 }},
		{"layer pair", func(c *Config) { c.LayerPairs = []kvq.Pair{{}, {K: kvq.F16, V: kvq.F16}} }},
	}
	for _, pair := range pagedPairs(t) {
		for _, v := range variants {
			t.Run(pair.String()+"/"+v.name, func(t *testing.T) {
				cfg := Config{Layers: 3, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: pair, MaxCells: 4 * PageCells}
				v.edit(&cfg)
				if pair.K.Grouped() && len(cfg.LayerPairs) > 0 {
					t.Skip("a group K format with another layer pair")
				}
				whole, err := New(cfg)
				if err != nil {
					t.Skip(err) // a combination New refuses
				}
				pool, err := NewPagePool(cfg, 1<<30)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := pool.FixedBytes()+4*pool.PageBytes(), whole.Bytes(); got != want {
					t.Errorf("fixed %d + 4 pages of %d = %d bytes; a contiguous cache of 4 pages' cells holds %d",
						pool.FixedBytes(), pool.PageBytes(), got, want)
				}
				cfg.Pages = pool
				empty, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer empty.Release()
				if got := empty.Bytes(); got != pool.FixedBytes() {
					t.Errorf("an empty paged cache holds %d bytes, the pool's fixed bytes are %d", got, pool.FixedBytes())
				}
			})
		}
	}
}

// TestPagePoolAllocatesNoContext: making the pool of a long context allocates no cells (a
// whole-context cache of this shape would be 4 GiB).
func TestPagePoolAllocatesNoContext(t *testing.T) {
	cfg := Config{Layers: 32, KVHeads: 8, HeadDimK: 128, HeadDimV: 128, Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}, MaxCells: 32768}
	// The least of three tries: another goroutine of the test binary may allocate meanwhile.
	least := uint64(math.MaxUint64)
	var pool *PagePool
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := NewPagePool(cfg, 1<<30)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		pool, least = p, min(least, after.TotalAlloc-before.TotalAlloc)
	}
	if least > 1<<20 {
		t.Errorf("NewPagePool allocated %d bytes for pages of %d bytes", least, pool.PageBytes())
	}
}

// TestDrawBytes: a cache sharing a prefix draws the pages past its shared full pages (a shared
// partial page is copied), which is what Reserve takes.
func TestDrawBytes(t *testing.T) {
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: kvq.Pair{K: kvq.Q8_0, V: kvq.Q8_0}, MaxCells: 512}
	pool, err := NewPagePool(cfg, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pages = pool
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Release()
	fill(t, src, rand.New(rand.NewPCG(1, 2)), 200, 50)
	for _, shared := range []int{0, 63, 64, 130, 200} {
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		before := pool.Stats()
		if err := c.ShareFrom(src, shared); err != nil {
			t.Fatal(err)
		}
		if err := c.Reserve(300); err != nil {
			t.Fatal(err)
		}
		after := pool.Stats()
		drawn := pool.FixedBytes() + after.ReservedBytes - before.ReservedBytes + int64(after.Used-before.Used)*pool.PageBytes()
		if want := pool.DrawBytes(300, shared); drawn != want {
			t.Errorf("sharing %d cells, growing to 300 drew %d bytes; DrawBytes says %d", shared, drawn, want)
		}
		c.Release()
	}
	if pool.DrawBytes(300, 0) != pool.SessionBytes(300) {
		t.Error("DrawBytes with nothing shared is not SessionBytes")
	}
}

// TestPagedScoresNoQueries: a paged store asked for the scores of no queries writes nothing and
// returns, for codecs with and without multi-query kernels.
func TestPagedScoresNoQueries(t *testing.T) {
	multi := 0
	for _, name := range []string{"q4_0", "f16"} {
		cfg := Config{Layers: 1, KVHeads: 1, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, name), MaxCells: 2 * PageCells, Seed: 3}
		_, paged := newPaged(t, cfg, 1<<30)
		fill(t, paged, rand.New(rand.NewPCG(6, 6)), PageCells+5, 1000)
		mk, ok := paged.Keys(0, true)[0].(attn.MultiKeys)
		if !ok {
			continue
		}
		multi++
		mk.ScoresMulti(make([]float32, 64), 0, 0, nil)
	}
	if multi == 0 {
		t.Fatal("no paged store offers multi-query scores: the test checks nothing")
	}
}

// TestPagePoolSlabs: the pages a pool allocates are cut from slabs one after another, zeroed
// and apart, each store's rows of a page right after its rows of the page before in the slab
// (one run in memory); a slab holds at most slabPagesMax pages and never more
// pages than the budget lets the pool allocate; and every page of a slab is allocated
// (Allocated × PageBytes is the slabs' memory), never more than MaxPages.
func TestPagePoolSlabs(t *testing.T) {
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, "q8_0/q4_0"), MaxCells: 1 << 20}
	probe, err := NewPagePool(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	pb := probe.PageBytes()
	perSlab := probe.slabPagesMax()
	for _, pages := range []int{1, 3, perSlab - 1, perSlab + 5, 2*perSlab + 1} {
		pool, err := NewPagePool(cfg, probe.FixedBytes()+int64(pages)*pb+pb/2)
		if err != nil {
			t.Fatal(err)
		}
		if got := pool.MaxPages(); got != pages {
			t.Fatalf("MaxPages %d, want %d", got, pages)
		}
		var sum int64
		for i, sp := range pool.spans {
			if i > 0 && sp.off != pool.spans[i-1].off+pool.spans[i-1].n {
				t.Fatalf("span %d at %d, the one before ends at %d", i, sp.off, pool.spans[i-1].off+pool.spans[i-1].n)
			}
			sum += int64(sp.n)
		}
		if sum != pb {
			t.Fatalf("the spans hold %d bytes of a page of %d", sum, pb)
		}
		pt, err := newPageTable(pool)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int32
		pool.mu.Lock()
		for i := range pages {
			prev := int32(-1)
			if i > 0 {
				prev = ids[i-1]
			}
			id, err := pt.allocLocked(prev)
			ids = append(ids, id)
			if err != nil {
				pool.mu.Unlock()
				t.Fatalf("%d pages: page %d: %v", pages, i, err)
			}
			page := pool.data[id]
			for _, sp := range pool.spans {
				if b := page.span(sp); !bytes.Equal(b, make([]byte, sp.n)) {
					t.Fatalf("%d pages: page %d is not zeroed", pages, i)
				}
			}
			var slabs int64
			for _, s := range pool.slabs {
				if int64(len(s)) > int64(perSlab)*pb {
					t.Fatalf("%d pages: a slab of %d bytes, more than %d pages", pages, len(s), perSlab)
				}
				slabs += int64(len(s))
			}
			if len(pool.data) > pages || slabs != int64(len(pool.data))*pb {
				t.Fatalf("%d pages: after page %d the pool holds %d pages and slabs of %d bytes (%d pages)", pages, i, len(pool.data), slabs, slabs/pb)
			}
			for _, sp := range pool.spans {
				b := page.span(sp)
				b[0], b[sp.n-1] = 1, 1 // pages apart: no write shows in another page
			}
			if i > 0 {
				prev := pool.data[id-1]
				for _, sp := range pool.spans {
					b, pr := page.span(sp), prev.span(sp)
					if pr[sp.n-1] != 1 || pr[0] != 1 {
						t.Fatalf("%d pages: page %d overlaps page %d", pages, i, i-1)
					}
					if i%perSlab != 0 && uintptr(unsafe.Pointer(&pr[0]))+uintptr(sp.n) != uintptr(unsafe.Pointer(&b[0])) {
						t.Fatalf("%d pages: page %d's rows at %d do not follow page %d's in its slab", pages, i, sp.off, i-1)
					}
				}
			}
		}
		pool.mu.Unlock()
		if st := pool.Stats(); st.Allocated != pages || st.Used != pages || st.Free != 0 {
			t.Fatalf("%d pages: stats %+v", pages, st)
		}
		pool.mu.Lock()
		for _, id := range ids {
			pool.decrefLocked(id)
		}
		pool.mu.Unlock()
		pt.release()
		if st := pool.Stats(); st.Allocated != pages || st.Used != 0 || st.Free != pages {
			t.Fatalf("%d pages, all given back: stats %+v", pages, st)
		}
	}
}

// TestPagePoolFreeOrder: a cache that grows from free pages takes them in memory order
// (pageMem), its rows of one page right after those of the page before, whatever order they
// were given back in.
func TestPagePoolFreeOrder(t *testing.T) {
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, "f16"), MaxCells: 1 << 16}
	pool, err := NewPagePool(cfg, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := newPageTable(pool)
	if err != nil {
		t.Fatal(err)
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	var ids []int32
	for i := range 6 {
		prev := int32(-1)
		if i > 0 {
			prev = ids[i-1]
		}
		id, err := pt.allocLocked(prev)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, i := range []int{3, 1, 5, 0, 4, 2} {
		pool.decrefLocked(ids[i])
	}
	prev := int32(-1)
	for i := range 6 {
		id, err := pt.allocLocked(prev)
		prev = id
		if err != nil {
			t.Fatal(err)
		}
		if id != ids[i] {
			t.Fatalf("free page %d taken %dth, want page %d", id, i, ids[i])
		}
		if i > 0 {
			sp := pool.spans[0]
			prev, b := pool.data[ids[i-1]].span(sp), pool.data[id].span(sp)
			if uintptr(unsafe.Pointer(&prev[0]))+uintptr(sp.n) != uintptr(unsafe.Pointer(&b[0])) {
				t.Fatalf("page %d's rows do not follow page %d's", id, ids[i-1])
			}
		}
	}
}

// TestPagePoolTurns: caches that grow in turn, a page each, take their pages in runs one
// after another in a slab (takeFreeLocked), not every other page: two caches half a slab
// each, four a quarter; and a cache that grows alone after them takes the pages the others
// gave back in one run.
func TestPagePoolTurns(t *testing.T) {
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, "f16"), MaxCells: 1 << 20}
	for _, caches := range []int{1, 2, 4} {
		pool, err := NewPagePool(cfg, 1<<34)
		if err != nil {
			t.Fatal(err)
		}
		per := pool.slabPagesMax()
		if per%caches != 0 {
			t.Fatalf("slabs of %d pages do not split into %d runs", per, caches)
		}
		pts := make([]*pageTable, caches)
		ids := make([][]int32, caches)
		for i := range pts {
			if pts[i], err = newPageTable(pool); err != nil {
				t.Fatal(err)
			}
		}
		alone, err := newPageTable(pool)
		if err != nil {
			t.Fatal(err)
		}
		pool.mu.Lock()
		for range 2 * per / caches {
			for i, pt := range pts {
				prev := int32(-1)
				if n := len(ids[i]); n > 0 {
					prev = ids[i][n-1]
				}
				id, err := pt.allocLocked(prev)
				if err != nil {
					pool.mu.Unlock()
					t.Fatal(err)
				}
				ids[i] = append(ids[i], id)
			}
		}
		for i := range ids {
			runs := 1
			for j := 1; j < len(ids[i]); j++ {
				if a, b := pool.data[ids[i][j-1]], pool.data[ids[i][j]]; &a.slab[0] != &b.slab[0] || b.idx != a.idx+1 {
					runs++
				}
			}
			if runs != 2 {
				pool.mu.Unlock()
				t.Fatalf("%d caches growing in turn: cache %d took %d pages in %d runs, want 2 (%v)", caches, i, len(ids[i]), runs, ids[i])
			}
		}
		for _, id := range ids[0] {
			pool.decrefLocked(id)
		}
		prev := int32(-1)
		for j := range len(ids[0]) / 2 {
			id, err := alone.allocLocked(prev)
			if err != nil {
				pool.mu.Unlock()
				t.Fatal(err)
			}
			if j > 0 && id != prev+1 {
				pool.mu.Unlock()
				t.Fatalf("%d caches: a cache growing from the pages one gave back took page %d after %d", caches, id, prev)
			}
			prev = id
		}
		pool.mu.Unlock()
	}
}

// checkPoolMemory checks, under the pool's lock, that every page whose memory the pool's slabs
// hold is an allocated page: the slabs' bytes (whole, capacity included: a slab's pages are
// spread over all of it, pageMem, so a write into one touches it all) are Allocated ×
// PageBytes, each page's slab is whole, and Allocated is within MaxPages and is the pages used,
// free and being touched ahead.
func checkPoolMemory(pool *PagePool) error {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	var slabs int64
	for _, s := range pool.slabs {
		slabs += int64(cap(s))
	}
	if got, want := slabs, int64(len(pool.data))*pool.pageBytes; got != want {
		return fmt.Errorf("slabs of %d bytes hold %d allocated pages of %d bytes (%d bytes)", got, len(pool.data), pool.pageBytes, want)
	}
	if len(pool.data) > pool.MaxPages() {
		return fmt.Errorf("%d pages allocated, MaxPages %d", len(pool.data), pool.MaxPages())
	}
	for id, m := range pool.data {
		if int64(cap(m.slab)) != int64(m.n)*pool.pageBytes {
			return fmt.Errorf("page %d: a slab of %d pages in %d bytes", id, m.n, cap(m.slab))
		}
	}
	if held := pool.pagesUsed + pool.nfree + pool.pending; held != len(pool.data) {
		return fmt.Errorf("%d used + %d free + %d being touched, %d allocated", pool.pagesUsed, pool.nfree, pool.pending, len(pool.data))
	}
	return nil
}

// TestPagePoolMemoryCounted: with KeepAhead running and caches growing, truncating and being
// released, the memory of every slab the pool made is its allocated pages' (checkPoolMemory)
// and never more than MaxPages. One page written into a pool of 40 pages kept 8 ahead once
// held 9 pages counted and a slab of 39 more touched, uncounted.
func TestPagePoolMemoryCounted(t *testing.T) {
	cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, "q8_0/q4_0"), MaxCells: 12 * PageCells, Seed: 3}
	probe, err := NewPagePool(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewPagePool(cfg, 4*probe.FixedBytes()+40*probe.PageBytes())
	if err != nil {
		t.Fatal(err)
	}
	paged := cfg
	paged.Pages = pool
	c, err := New(paged)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, c, rand.New(rand.NewPCG(1, 1)), 1, 1)
	if err := checkPoolMemory(pool); err != nil {
		t.Fatalf("one page written: %v", err)
	}
	pool.KeepAhead(8)
	for range 100 {
		if err := checkPoolMemory(pool); err != nil {
			t.Fatalf("one page written, 8 kept ahead: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	c.Release()

	stop := make(chan struct{})
	checked := make(chan error, 1)
	go func() {
		for {
			if err := checkPoolMemory(pool); err != nil {
				checked <- err
				return
			}
			select {
			case <-stop:
				checked <- nil
				return
			default:
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	errs := make(chan error, 3)
	for g := range 3 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			var err error
			for i := 0; i < 12 && err == nil; i++ {
				var c *Cache
				if c, err = New(paged); err != nil {
					break
				}
				cells := 1 + r.IntN(cfg.MaxCells)
				for n := 0; n < cells && err == nil; n += 16 {
					for l := 0; l < cfg.Layers && err == nil; l++ {
						err = c.Write(l, randVec(r, 16*2*64), randVec(r, 16*2*64), 16)
					}
					if err == nil {
						err = c.Commit(16)
					}
				}
				if err == nil && i%3 == 0 {
					err = c.Truncate(cells / 2)
				}
				if i%4 == 0 {
					pool.KeepAhead(r.IntN(16))
				}
				c.Release()
			}
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-checked; err != nil {
		t.Fatal(err)
	}
	if err := checkPoolMemory(pool); err != nil {
		t.Fatal(err)
	}
	if st := pool.Stats(); st.Used != 0 || st.Allocated > pool.MaxPages() {
		t.Fatalf("after every cache is released: %+v", st)
	}
}

// TestPagePoolSlabAhead: with KeepAhead on, once the pool holds slabBytes' pages, its fill
// makes the next slab (slabPagesLocked) while the caches are idle, as soon as the free pages are
// fewer than half of it, within MaxPages and the budget (roomLocked); a cache on those pages
// reads what a contiguous one does, and KeepAhead(0) ends the goroutine.
func TestPagePoolSlabAhead(t *testing.T) {
	cfg := Config{Layers: 8, KVHeads: 4, HeadDimK: 128, HeadDimV: 128, Pair: mustPair(t, "f16"), MaxCells: 256 * PageCells, Seed: 4}
	probe, err := NewPagePool(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	minPages := int(slabBytes / probe.PageBytes())
	maxPages := 2*(minPages+2) + 10
	pool, err := NewPagePool(cfg, probe.FixedBytes()+int64(maxPages)*probe.PageBytes()+probe.PageBytes()/2)
	if err != nil {
		t.Fatal(err)
	}
	settle := func(what string, allocated int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
			st := pool.Stats()
			if st.Allocated > pool.MaxPages() {
				t.Fatalf("%s: %+v holds more than %d pages", what, st, pool.MaxPages())
			}
			if st.Allocated == allocated {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v, want %d pages allocated", what, st, allocated)
			}
		}
	}
	// idle waits for the pool's fill to end, and returns its next slab's pages and its free
	// pages.
	idle := func() (next, free int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
			pool.mu.Lock()
			filling, next, free := pool.filling, pool.slabPagesLocked(), pool.nfree+pool.pending+pool.inflight
			pool.mu.Unlock()
			if !filling {
				return next, free
			}
			if time.Now().After(deadline) {
				t.Fatal("fill runs for 20 s")
			}
		}
	}
	pool.KeepAhead(2)
	settle("kept ahead", 2)
	paged := cfg
	paged.Pages = pool
	c, err := New(paged)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc, rf := rand.New(rand.NewPCG(4, 4)), rand.New(rand.NewPCG(4, 4))
	// The pool holds fewer than slabBytes' pages: the cache's third page makes a slab (growLocked).
	fill(t, c, rc, 3*PageCells, PageCells)
	fill(t, flat, rf, 3*PageCells, PageCells)
	if st := pool.Stats(); st.Allocated < 2+minPages {
		t.Fatalf("after the cache's third page: %+v, want %d pages or more allocated", st, 2+minPages)
	}
	for _, want := range []int{-1, maxPages} {
		next, free := idle()
		allocated := pool.Stats().Allocated
		for ; 2*free >= next; free-- { // the cache takes a free page a write
			fill(t, c, rc, PageCells, PageCells)
			fill(t, flat, rf, PageCells, PageCells)
		}
		if want < 0 {
			want = allocated + next // a whole slab
		}
		settle("a slab made ahead while the cache is idle", want)
	}
	for c.PagesHeld() < maxPages {
		fill(t, c, rc, PageCells, PageCells)
		fill(t, flat, rf, PageCells, PageCells)
	}
	if st := pool.Stats(); st.Allocated != maxPages || st.Used != maxPages {
		t.Fatalf("a cache of every page: %+v, want %d used of %d allocated", st, maxPages, maxPages)
	}
	if a, b := attendAll(t, flat, rand.New(rand.NewPCG(9, 9)), 4), attendAll(t, c, rand.New(rand.NewPCG(9, 9)), 4); !sameBits(a, b) {
		t.Fatalf("a cache of slabs made ahead reads other attention than a contiguous one (rel %.2e)", relRMS(b, a))
	}
	c.Release()
	pool.KeepAhead(0)
	idle()
}

// TestPagePoolSlabAheadReserved: where a cache holds a reservation (as the runner's do), the
// slab fill makes ahead counts it as room and comes whole, so the pool's slabs stay few and
// long, not one page each (fillWantLocked).
func TestPagePoolSlabAheadReserved(t *testing.T) {
	cfg := Config{Layers: 8, KVHeads: 4, HeadDimK: 128, HeadDimV: 128, Pair: mustPair(t, "f16"), MaxCells: 480 * PageCells, Seed: 5}
	probe, err := NewPagePool(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewPagePool(cfg, probe.FixedBytes()+500*probe.PageBytes()+probe.PageBytes()/2)
	if err != nil {
		t.Fatal(err)
	}
	pool.KeepAhead(4)
	defer pool.KeepAhead(0)
	paged := cfg
	paged.Pages = pool
	c, err := New(paged)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if err := c.Reserve(cfg.MaxCells); err != nil {
		t.Fatal(err)
	}
	fill(t, c, rand.New(rand.NewPCG(5, 5)), 470*PageCells, PageCells)
	if err := checkPoolMemory(pool); err != nil {
		t.Fatal(err)
	}
	pool.mu.Lock()
	var sizes []int
	small := 0
	for _, sl := range pool.slabs {
		n := len(sl) / int(pool.pageBytes)
		sizes = append(sizes, n)
		if n < 4 {
			small++
		}
	}
	pool.mu.Unlock()
	if len(sizes) > 12 || small > 2 {
		t.Fatalf("a reserved cache of 470 pages took them from %d slabs (%v), %d of them under 4 pages", len(sizes), sizes, small)
	}
	t.Logf("slabs of %v pages", sizes)
}

// TestPagePoolStopAhead: StopAhead returns once the pool's fill has ended, even while it is
// making pages ahead, and the pool allocates nothing after it.
func TestPagePoolStopAhead(t *testing.T) {
	cfg := Config{Layers: 8, KVHeads: 4, HeadDimK: 128, HeadDimV: 128, Pair: mustPair(t, "f16"), MaxCells: 400 * PageCells, Seed: 6}
	probe, err := NewPagePool(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewPagePool(cfg, probe.FixedBytes()+400*probe.PageBytes()+probe.PageBytes()/2)
	if err != nil {
		t.Fatal(err)
	}
	pool.KeepAhead(400) // fill makes and touches up to 400 pages of 1 MiB: it runs a while
	pool.StopAhead()
	pool.mu.Lock()
	filling := pool.filling
	pool.mu.Unlock()
	if filling {
		t.Fatal("StopAhead returned with the fill goroutine running")
	}
	st := pool.Stats()
	time.Sleep(20 * time.Millisecond)
	if st2 := pool.Stats(); st2.Allocated != st.Allocated {
		t.Fatalf("%d pages allocated after StopAhead, then %d", st.Allocated, st2.Allocated)
	}
	if st.Allocated > 400 {
		t.Fatalf("%d pages allocated, at most 400", st.Allocated)
	}
	if err := checkPoolMemory(pool); err != nil {
		t.Fatal(err)
	}
}
