package kvcache

import (
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/hugemem"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestCacheHugePages checks that Cache.HugePages counts every K and V store's whole capacity
// that hugemem would advise (a row store's rows, a q2k group pool), and no more huge bytes
// than that; which of them are on huge pages is the system's to say.
func TestCacheHugePages(t *testing.T) {
	const d, cells = 128, 131072
	for _, c := range []struct {
		pair string
		want int64 // bytes of one head's K and V at cells cells
	}{
		{"q4_0", 2 * cells * 72},
		{"q2k", kvq.Q2K.Bytes(cells, d, 1) + cells*72},
	} {
		t.Run(c.pair, func(t *testing.T) {
			kv, err := New(Config{Layers: 1, KVHeads: 2, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, c.pair), MaxCells: cells})
			if err != nil {
				t.Fatal(err)
			}
			cov := kv.HugePages()
			if cov.Bytes != 2*c.want || cov.Huge < 0 || cov.Huge > cov.Bytes {
				t.Errorf("HugePages() = %+v, want Bytes %d", cov, 2*c.want)
			}
			t.Logf("%s: %.0f %% of %d bytes on huge pages (hugemem: %s)", c.pair, 100*cov.Fraction(), cov.Bytes, hugemem.Pages())
		})
	}
}

// TestPoolHugePagesSmallPages checks that PagePool.HugePages counts the whole slabs of the pages
// a pool has allocated (growLocked's and KeepAhead's), where a page is smaller than hugemem.Threshold
// (as most models' pages are), with KVLAB_NO_HUGEPAGES's semantics (hugemem.Off) and without:
// judged page by page, such pages were never counted, and the pool read as wholly on huge
// pages even when none of it was.
func TestPoolHugePagesSmallPages(t *testing.T) {
	defer func(o bool) { hugemem.Off = o }(hugemem.Off)
	for _, off := range []bool{true, false} {
		hugemem.Off = off
		cfg := Config{Layers: 32, KVHeads: 8, HeadDimK: 128, HeadDimV: 128, Pair: mustPair(t, "q4_0"), MaxCells: 8192}
		pool, err := NewPagePool(cfg, 256<<20)
		if err != nil {
			t.Fatal(err)
		}
		pb := pool.PageBytes()
		if pb >= hugemem.Threshold {
			t.Fatalf("page of %d bytes: the test wants one under hugemem.Threshold", pb)
		}
		tb := &pageTable{pool: pool}
		pool.mu.Lock()
		for range 3 {
			if _, err := tb.allocLocked(-1); err != nil {
				pool.mu.Unlock()
				t.Fatal(err)
			}
		}
		for _, page := range pool.data {
			for _, sp := range pool.spans {
				b := page.span(sp)
				for j := 0; j < len(b); j += 4096 {
					b[j] = 1
				}
			}
		}
		pool.mu.Unlock()
		a := int64(pool.Stats().Allocated) // the first slab's pages, all allocated
		cov := pool.HugePages()
		if a < 3 || cov.Bytes != a*pb || cov.Huge < 0 || cov.Huge > cov.Bytes {
			t.Errorf("off %v: after 3 pages taken, HugePages() = %+v, want Bytes %d (%d pages)", off, cov, a*pb, a)
		}
		pool.KeepAhead(int(a) - 3 + 4) // 4 more than the free ones: a slab of fill's
		for deadline := time.Now().Add(10 * time.Second); int64(pool.Stats().Allocated) < a+4; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("off %v: KeepAhead allocated %d pages in 10 s, want %d", off, pool.Stats().Allocated, a+4)
			}
		}
		cov = pool.HugePages()
		if cov.Bytes != (a+4)*pb || cov.Huge < 0 || cov.Huge > cov.Bytes {
			t.Errorf("off %v: with 4 more pages kept ahead, HugePages() = %+v, want Bytes %d", off, cov, (a+4)*pb)
		}
		t.Logf("off %v: %.0f %% of %d bytes on huge pages (hugemem: %s)", off, 100*cov.Fraction(), cov.Bytes, hugemem.Pages())
	}
}
