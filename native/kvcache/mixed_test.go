package kvcache

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestMixedCellsLiveOnce checks the layout of a mixed cache as it grows in writes of several
// sizes: the sinks and the most recent Recent cells read exact f16, at most MixedBatch more
// wait in the ring, the rest read quantized, and the bytes are New's estimate.
func TestMixedCellsLiveOnce(t *testing.T) {
	const d, recent, sinks = 64, 16, 4
	for _, chunk := range []int{1, 5, 40, 300} {
		cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, "q4_0"),
			MaxCells: 320, Recent: recent, Sinks: sinks, Seed: 9}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.Bytes(), EstimateBytes(cfg); got != want {
			t.Errorf("chunk %d: Bytes %d, EstimateBytes %d", chunk, got, want)
		}
		r := rand.New(rand.NewPCG(1, uint64(chunk)))
		var k, v []float32
		for c.Len() < 300 {
			kk, vv := fill(t, c, r, min(chunk, 300-c.Len()), chunk)
			k, v = append(k, kk...), append(v, vv...)
			mx := c.layers[1].mx
			n := c.Len()
			if ring := n - mx.q; n > sinks && (ring < min(recent, n-sinks) || ring > recent+kvq.MixedBatch(recent)) {
				t.Fatalf("chunk %d, %d cells: %d cells in the f16 ring, want [%d, %d]", chunk, n, ring, min(recent, n-sinks), recent+kvq.MixedBatch(recent))
			}
		}
		mx := c.layers[1].mx
		kr, vr := c.Rows(1, true)
		row := make([]float32, d)
		for cell := 0; cell < c.Len(); cell++ {
			for h := 0; h < 2; h++ {
				off := (cell*2 + h) * d
				kr[h].Row(row, cell)
				exact := cell < sinks || cell >= mx.q
				e := relRMS(row, k[off:off+d])
				if exact && e > 1e-3 {
					t.Fatalf("chunk %d: cell %d head %d: f16 cell off by %.2e", chunk, cell, h, e)
				}
				if !exact && (e < 1e-3 || e > 0.2) {
					t.Fatalf("chunk %d: cell %d head %d: quantized cell off by %.2e, want a 4-bit error", chunk, cell, h, e)
				}
				vr[h].Row(row, cell)
				if e := relRMS(row, v[off:off+d]); exact && e > 1e-3 {
					t.Fatalf("chunk %d: cell %d head %d V: f16 cell off by %.2e", chunk, cell, h, e)
				}
			}
		}
		if got, want := c.Bytes(), EstimateBytes(cfg); got != want {
			t.Errorf("chunk %d: Bytes %d after writes, EstimateBytes %d", chunk, got, want)
		}
	}
}

// TestMixedBytes: the tail holds the pair for every cell but the window and sinks, which are f16.
func TestMixedBytes(t *testing.T) {
	p := mustPair(t, "q4_0")
	cfg := Config{Layers: 3, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: p, MaxCells: 1000, Recent: 64, Sinks: 8}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := 3 * (p.Bytes(1000-64-8, 64, 64, 2) + kvq.OverlayBytes(int64(64+kvq.MixedBatch(64)+8), 64, 64, 2))
	if c.Bytes() != want {
		t.Errorf("Bytes %d, want %d", c.Bytes(), want)
	}
	uniform := 3 * p.Bytes(1000, 64, 64, 2)
	overlay := uniform + 3*kvq.OverlayBytes(64+8, 64, 64, 2)
	if !(c.Bytes() < overlay) {
		t.Errorf("mixed %d bytes, not below the overlay's %d", c.Bytes(), overlay)
	}
}

func TestMixedAttentionMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		pair          string
		d             int
		recent, sinks int
	}{
		{"q4_0", 64, 32, 4}, {"q8_0/q4_0", 8, 8, 0}, {"tq4", 64, 16, 2}, {"f16", 32, 8, 1}, {"turbo3", 64, 24, 0}, {"q4_0-r", 40, 50, 3},
	} {
		t.Run(tc.pair, func(t *testing.T) {
			cfg := Config{Layers: 1, KVHeads: 2, HeadDimK: tc.d, HeadDimV: tc.d, Pair: mustPair(t, tc.pair),
				MaxCells: 300, Recent: tc.recent, Sinks: tc.sinks, Seed: 7}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(2, uint64(tc.d)))
			fill(t, c, r, 250, 7)
			if err := c.Truncate(200); err != nil { // into the tail: the window refills
				t.Fatal(err)
			}
			fill(t, c, r, 37, 3)
			s := attn.Shape{Heads: 8, KVHeads: 2, HeadDimK: tc.d, HeadDimV: tc.d, Scale: float32(1 / math.Sqrt(float64(tc.d))), ChunkSize: 64, Threads: 2}
			q := randVec(r, 8*tc.d)
			for _, decode := range []bool{false, true} {
				kr, vr := c.Rows(0, decode)
				ref := make([]float32, 8*tc.d)
				if err := attn.DecodeReference(ref, q, s, kr, vr, 0, c.Len()); err != nil {
					t.Fatal(err)
				}
				keys, vals := c.Keys(0, decode), c.Values(0, decode)
				fast := make([]float32, 8*tc.d)
				if err := attn.Decode(fast, q, s, keys, vals, 0, c.Len()); err != nil {
					t.Fatal(err)
				}
				if e := relRMS(fast, multiReference(t, c, decode, q, s)); e > 1e-4 {
					t.Errorf("decode=%v: fast differs from reference by %.2e", decode, e)
				}
				var sk []attn.Keys
				var sv []attn.Values
				for g := range keys {
					sk, sv = append(sk, struct{ attn.Keys }{keys[g]}), append(sv, struct{ attn.Values }{vals[g]})
				}
				single := make([]float32, 8*tc.d)
				if err := attn.Decode(single, q, s, sk, sv, 0, c.Len()); err != nil {
					t.Fatal(err)
				}
				if e := relRMS(single, ref); e > 1e-4 {
					t.Errorf("decode=%v: single-query readers differ from reference by %.2e", decode, e)
				}
			}
		})
	}
}

// TestMixedF16EqualsUniform: with an f16 tail a mixed cache holds every cell exactly, so its
// attention equals the uniform f16 cache's.
func TestMixedF16EqualsUniform(t *testing.T) {
	const d = 32
	base := Config{Layers: 1, KVHeads: 1, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, "f16"), MaxCells: 200}
	mcfg := base
	mcfg.Recent, mcfg.Sinks = 8, 2
	u, _ := New(base)
	m, err := New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, u, rand.New(rand.NewPCG(3, 3)), 150, 11)
	fill(t, m, rand.New(rand.NewPCG(3, 3)), 150, 11)
	s := attn.Shape{Heads: 2, KVHeads: 1, HeadDimK: d, HeadDimV: d, Scale: 0.2, Threads: 1}
	q := randVec(rand.New(rand.NewPCG(4, 4)), 2*d)
	a, b := make([]float32, 2*d), make([]float32, 2*d)
	if err := attn.Decode(a, q, s, u.Keys(0, true), u.Values(0, true), 0, u.Len()); err != nil {
		t.Fatal(err)
	}
	if err := attn.Decode(b, q, s, m.Keys(0, true), m.Values(0, true), 0, m.Len()); err != nil {
		t.Fatal(err)
	}
	if e := relRMS(b, a); e > 1e-6 {
		t.Errorf("mixed f16 differs from uniform f16 by %.2e", e)
	}
}

func TestMixedRejects(t *testing.T) {
	ok := Config{Layers: 1, KVHeads: 1, HeadDimK: 64, HeadDimV: 64, Pair: mustPair(t, "q4_0"), MaxCells: 100}
	for name, mut := range map[string]func(*Config){
		"negative":    func(c *Config) { c.Recent = -1 },
		"with window": func(c *Config) { c.Recent, c.Window = 8, 8 },
		"q2k":         func(c *Config) { c.Recent, c.Pair = 8, mustPair(t, "q2k") },
	} {
		cfg := ok
		mut(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	// A window longer than the context holds every cell in f16.
	cfg := ok
	cfg.Recent = 500
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, c, rand.New(rand.NewPCG(1, 1)), 100, 30)
	if c.layers[0].mx.q != 0 {
		t.Errorf("a window past the context quantized %d cells", c.layers[0].mx.q)
	}
}
