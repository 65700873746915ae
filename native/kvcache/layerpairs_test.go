package kvcache

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
)

// TestLayerPairs: layers with a pair of their own store it (their codecs' formats and row
// bytes), the cache's bytes are the per-layer sum EstimateBytes and BytesPerToken report, the
// other layers keep Pair, and bad entries and snapshots are refused with reasons.
func TestLayerPairs(t *testing.T) {
	base := mustPair(t, "turbo3")
	hi := mustPair(t, "turbo4/turbo3")
	cfg := Config{Layers: 4, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: base, MaxCells: 50,
		LayerPairs: []kvq.Pair{hi, {}, mustPair(t, "q4_0-r")}}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []kvq.Pair{hi, base, mustPair(t, "q4_0-r"), base}
	var bytes int64
	var perCell float64
	for l, p := range want {
		if got := cfg.LayerPair(l); got != p {
			t.Errorf("layer %d: pair %s, want %s", l, got, p)
		}
		k := c.layers[l].k[0].(*rowStore)
		if f := k.Codec.Format(); f != p.K {
			t.Errorf("layer %d: K stored as %s, want %s", l, f, p.K)
		}
		if rot := kvq.Unwrap(k.Codec) != k.Codec; rot != !p.KRaw {
			t.Errorf("layer %d: K rotated %v for %s", l, rot, p)
		}
		bytes += p.Bytes(50, 64, 64, 2)
		perCell += p.BytesPerToken(64, 64, 2)
	}
	if got := c.Bytes(); got != bytes {
		t.Errorf("Bytes = %d, want %d", got, bytes)
	}
	if got := EstimateBytes(cfg); got != bytes {
		t.Errorf("EstimateBytes = %d, want %d", got, bytes)
	}
	if got := cfg.BytesPerToken(); got != perCell {
		t.Errorf("BytesPerToken = %g, want %g", got, perCell)
	}
	k, v := make([]float32, 2*64), make([]float32, 2*64)
	for i := range k {
		k[i], v[i] = float32(i%7)-3, float32(i%5)-2
	}
	for l := 0; l < 4; l++ {
		if err := c.Write(l, k, v, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Commit(1); err != nil {
		t.Fatal(err)
	}
	if err := WriteSnapshot(io.Discard, c, Identity{}, []int32{1}); !errors.Is(err, ErrSnapshotUnsupported) {
		t.Errorf("snapshot of per-layer pairs: %v, want ErrSnapshotUnsupported", err)
	}
	for _, tc := range []struct {
		pairs []kvq.Pair
		pair  kvq.Pair
		want  string
	}{
		{[]kvq.Pair{{}, {}, {}, {}, hi}, base, "layer 4 of a 4-layer model"},
		{[]kvq.Pair{{K: kvq.Q4_0, V: kvq.Q2K}}, base, "layer 0"},
		{[]kvq.Pair{mustPair(t, "q2k")}, base, "q2k"},
		{[]kvq.Pair{hi}, mustPair(t, "q2k"), "q2k"},
	} {
		bad := cfg
		bad.Pair, bad.LayerPairs = tc.pair, tc.pairs
		if _, err := New(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LayerPairs %v over %s: %v, want an error naming %q", tc.pairs, tc.pair, err, tc.want)
		}
	}
	// Trailing zero entries past the last layer are not an error.
	ok := cfg
	ok.LayerPairs = []kvq.Pair{hi, {}, {}, {}, {}}
	if _, err := New(ok); err != nil {
		t.Errorf("trailing zero entries: %v", err)
	}
}
