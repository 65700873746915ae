package kvcache

import (
	"testing"

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
