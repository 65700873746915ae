package kvcache

import (
	"math"
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
)

// TestEstimateBytes: the estimate is what New reserves, and it never wraps.
func TestEstimateBytes(t *testing.T) {
	for _, tc := range []struct {
		pair           string
		cells, w, s, d int
	}{
		{"f16", 100, 0, 0, 64}, {"q8_0/q4_0", 77, 8, 2, 64}, {"q2k", 100, 16, 4, 64}, {"tq4", 40, 1000, 1000, 32}, {"q4_0", 64, 0, 99999999, 48},
	} {
		p, err := kvq.ParsePair(tc.pair)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: tc.d, HeadDimV: tc.d, Pair: p, MaxCells: tc.cells, Window: tc.w, Sinks: tc.s}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := EstimateBytes(cfg), c.Bytes(); got != want {
			t.Errorf("%+v: estimate %d, New holds %d", tc, got, want)
		}
	}
	huge := Config{Layers: 1 << 20, KVHeads: 1 << 10, HeadDimK: 1 << 12, HeadDimV: 1 << 12, Pair: kvq.Pair{K: kvq.F32, V: kvq.F32}, MaxCells: math.MaxInt32}
	if got := EstimateBytes(huge); got != math.MaxInt64 {
		t.Errorf("huge estimate %d", got)
	}
}
