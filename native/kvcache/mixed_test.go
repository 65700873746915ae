package kvcache

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
				if e := relRMS(fast, multiReference(t, c, decode, q, s)); e > 1e-4+valuesSlack(t, cfg.Pair, tc.d) {
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

// TestMixedMergedReadsMatchParts: the multi-query reads that take the sinks and the window in
// one f16 call (f16Run) give the scores, the accumulators and the attention of the reads part
// by part (sinks, tail, window), bit for bit, over ranges that start and end inside each part
// (chunks of the decode, sub-ranges), with and without a tail, after truncations into the tail
// and into the window. A gather that puts the window's scores or weights one cell off, or
// accumulates the window before the sinks, differs here.
func TestMixedMergedReadsMatchParts(t *testing.T) {
	for _, tc := range []struct {
		pair                string
		d, recent, sinks, n int
	}{
		{"q4_0", 64, 16, 4, 150}, {"q8_0", 64, 64, 8, 232}, {"q8_0/q4_0", 32, 8, 3, 60}, {"f16", 32, 8, 2, 90},
		{"q4_0", 64, 16, 4, 18}, // no tail yet: sinks and window adjacent
	} {
		cfg := Config{Layers: 1, KVHeads: 2, HeadDimK: tc.d, HeadDimV: tc.d, Pair: mustPair(t, tc.pair),
			MaxCells: 300, Recent: tc.recent, Sinks: tc.sinks, Seed: 5}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(8, uint64(tc.n)))
		fill(t, c, r, tc.n, 5)
		for step := 0; step < 4; step++ {
			switch step {
			case 1:
				fill(t, c, r, 1, 1)
			case 2:
				if err := c.Truncate(c.Len() - 3); err != nil { // inside the window
					t.Fatal(err)
				}
				fill(t, c, r, 7, 2)
			case 3:
				if err := c.Truncate(max(c.layers[0].mx.q-2, 1)); err != nil { // into the tail
					t.Fatal(err)
				}
				fill(t, c, r, 2*tc.recent, 3)
			}
			n := c.Len()
			const heads = 4
			q := randVec(r, heads*tc.d)
			read := func(merge bool) (outs [][]float32) {
				was := mixedMerge
				mixedMerge = merge
				defer func() { mixedMerge = was }()
				wr := rand.New(rand.NewPCG(9, uint64(step)))
				for _, chunk := range []int{0, 5, tc.sinks + 1, 64} {
					s := attn.Shape{Heads: heads, KVHeads: 2, HeadDimK: tc.d, HeadDimV: tc.d, Scale: 0.2, ChunkSize: chunk, Threads: 1}
					out := make([]float32, heads*tc.d)
					if err := attn.Decode(out, q, s, c.Keys(0, true), c.Values(0, true), 0, n); err != nil {
						t.Fatal(err)
					}
					outs = append(outs, out)
				}
				for _, rg := range [][2]int{{0, n}, {1, n}, {0, n - 1}, {min(tc.sinks, n-1), n}, {0, min(tc.sinks+2, n)}} {
					lo, hi := rg[0], rg[1]
					if hi <= lo {
						continue
					}
					for h := 0; h < 2; h++ {
						mk := c.Keys(0, true)[h].(*mixedKeys)
						mv := c.Values(0, true)[h].(*mixedValues)
						ql := mk.QueryLen()
						pq := make([]float32, 2*ql)
						for i := 0; i < 2; i++ {
							mk.Prepare(pq[i*ql:(i+1)*ql], q[i*tc.d:(i+1)*tc.d])
						}
						sco := make([]float32, 2*(hi-lo))
						mk.ScoresMulti(pq, 2, lo, sco)
						acc := make([]float32, 2*mv.AccLen())
						w := make([]float32, 2*(hi-lo))
						for i := range w {
							w[i] = float32(wr.Float64())
						}
						mv.AccumulateMulti(acc, 2, w, lo)
						outs = append(outs, sco, acc)
					}
				}
				return outs
			}
			merged, parts := read(true), read(false)
			for i := range merged {
				for j := range merged[i] {
					if math.Float32bits(merged[i][j]) != math.Float32bits(parts[i][j]) {
						t.Fatalf("%s d=%d step %d (%d cells, tail to %d): read %d value %d: merged %v, parts %v",
							tc.pair, tc.d, step, n, c.layers[0].mx.q, i, j, merged[i][j], parts[i][j])
					}
				}
			}
		}
	}
}

// TestMixedContentGolden pins what mixed caches hold, cell by cell (the snapshot payload: the
// tail stores' rows, then every sink and window cell's f16 row in cell order), after writes in
// chunks of 1 to 300 cells, a truncation inside the window and one into the tail, for several
// pairs, windows and sinks. The hash is the one the cache gave before its f16 cells moved into
// one store with the window kept in order (cells in a ring of slots before): the layout changed,
// the content did not.
func TestMixedContentGolden(t *testing.T) {
	h := sha256.New()
	for _, tc := range []struct {
		pair             string
		recent, sinks, d int
	}{{"q4_0", 64, 8, 64}, {"q8_0", 16, 4, 64}, {"q4_0/q8_0", 8, 0, 32}, {"f16", 8, 2, 32}} {
		for _, chunk := range []int{1, 5, 40, 300} {
			cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: tc.d, HeadDimV: tc.d, Pair: mustPair(t, tc.pair),
				MaxCells: 400, Recent: tc.recent, Sinks: tc.sinks, Seed: 3}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, uint64(chunk)))
			dump := func() {
				for l := 0; l < 2; l++ {
					var b bytes.Buffer
					c.layerPayload(&b, l)
					h.Write(b.Bytes())
				}
			}
			fill(t, c, r, 250, chunk)
			dump()
			if err := c.Truncate(c.Len() - 5); err != nil {
				t.Fatal(err)
			}
			fill(t, c, r, 9, 2)
			dump()
			if err := c.Truncate(100); err != nil {
				t.Fatal(err)
			}
			fill(t, c, r, 60, chunk)
			dump()
		}
	}
	const want = "5611c0b9bb411fd1d3d7e0afe52738ab8ec4b75df5ee79786b24fe6ddd1bb860"
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != want {
		t.Errorf("mixed cache content hash %s, want %s", got, want)
	}
}

// TestAddTo: the f16 part's sums (kvq.AddF32s) are the element-by-element loop's, bit for bit, for lengths with and
// without a remainder past the groups of eight, and it leaves dst's elements past len(f) alone.
func TestAddTo(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for n := 0; n <= 27; n++ {
		dst, f := randVec(r, n+3), randVec(r, n)
		want := slices.Clone(dst)
		for i, x := range f {
			want[i] += x
		}
		kvq.AddF32s(dst, f)
		for i := range dst {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: dst[%d] = %v, want %v", n, i, dst[i], want[i])
			}
		}
	}
}
