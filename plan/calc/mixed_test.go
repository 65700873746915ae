package calc

import (
	"testing"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestMixedBytesMatchesTheCache: the planner's mixed cache is the bytes native/kvcache
// reserves, and its rows come after the uniform ones.
func TestMixedBytesMatchesTheCache(t *testing.T) {
	s := Shape{Name: "t", Groups: []LayerGroup{{Count: 3, Kind: Full, KVHeads: 4, HeadDimK: 128, HeadDimV: 64}}}
	for _, m := range []Mixed{{Window: 256, Sinks: 8}, {Window: 8}, {Window: 5000, Sinks: 2}} {
		for _, pair := range []string{"q4_0", "q8_0/q4_0", "turbo3"} {
			p, _ := kvq.ParsePair(pair)
			for _, ctx := range []int64{1, 100, 4096} {
				cfg := kvcache.Config{Layers: 3, KVHeads: 4, HeadDimK: 128, HeadDimV: 64, Pair: p, MaxCells: int(ctx), Recent: m.Window, Sinks: m.Sinks}
				if got, want := s.MixedBytes(m, p, ctx, 1), kvcache.EstimateBytes(cfg); got != want {
					t.Errorf("%s%s at %d: planner %d bytes, cache %d", pair, m.Spec(), ctx, got, want)
				}
			}
		}
	}
	gpu, _ := LookupHardware("rtx-4090")
	r := NewRequest(s, "q4_k_m", gpu)
	r.Mixed = Mixed{Window: 256, Sinks: 8}
	rep, err := Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	var uniform, mixed int
	for i, row := range rep.Rows {
		if row.Kind == "mixed" {
			mixed++
			if uniform != len(r.Pairs) {
				t.Errorf("mixed row %d %s before the uniform rows end", i, row.Format)
			}
			if row.Pair.K == kvq.F16 {
				t.Errorf("a mixed row for %s", row.Format)
			}
			continue
		}
		uniform++
	}
	if mixed == 0 {
		t.Fatal("no mixed rows")
	}
}
