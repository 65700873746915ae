package kvcache

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestRingMatchesFull writes cells one at a time into a cache whose layer 0 is a ring of 5
// cells and into a full one, and checks that attention over the last 5 positions reads the
// same values from both, bit for bit (the integer accumulation's weight tiles included: past
// position 64 the window straddles a tile boundary as well as the ring's wrap), for row and
// group formats; its memory is 5 cells'.
func TestRingMatchesFull(t *testing.T) {
	const maxCells = 80
	for _, kv := range []string{"q8_0", "f16/q4_0", "q5_1", "tq4", "q2k/q8_0"} {
		p, err := kvq.ParsePair(kv)
		if err != nil {
			t.Fatal(err)
		}
		cells := 70
		if p.K.Grouped() {
			cells = 23 // q2k truncates no further back than its last whole group of 64
		}
		cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 32, HeadDimV: 32, Pair: p, MaxCells: maxCells, Seed: 1, Windows: []int{5, 0}}
		ring, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		full := cfg
		full.Windows = nil
		fc, _ := New(full)
		r := rand.New(rand.NewPCG(1, 2))
		row := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			return v
		}
		shape := attn.Shape{Heads: 2, KVHeads: 2, HeadDimK: 32, HeadDimV: 32, Scale: 0.2, Threads: 1}
		for pos := 0; pos < cells; pos++ {
			k, v := row(64), row(64)
			for _, c := range []*Cache{ring, fc} {
				for l := 0; l < 2; l++ {
					if err := c.Write(l, k, v, 1); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.Commit(1); err != nil {
					t.Fatal(err)
				}
			}
			q := row(64)
			a, b := make([]float32, 64), make([]float32, 64)
			lo := max(0, pos-4)
			if err := attn.Decode(a, q, shape, ring.Keys(0, true), ring.Values(0, true), lo, pos+1); err != nil {
				t.Fatal(err)
			}
			if err := attn.Decode(b, q, shape, fc.Keys(0, true), fc.Values(0, true), lo, pos+1); err != nil {
				t.Fatal(err)
			}
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%s position %d: the ring reads %g, the full cache %g", kv, pos, a[i], b[i])
				}
			}
		}
		if want := p.Bytes(5, 32, 32, 2) + p.Bytes(maxCells, 32, 32, 2); !p.K.Grouped() && ring.Bytes() != want {
			t.Errorf("%s: %d bytes, want %d", kv, ring.Bytes(), want)
		}
		if est := EstimateBytes(cfg); est != ring.Bytes() {
			t.Errorf("%s: EstimateBytes %d, New holds %d", kv, est, ring.Bytes())
		}
		if err := ring.Truncate(20); !errors.Is(err, kvq.ErrUnsupported) || !strings.Contains(err.Error(), "sliding-window") {
			t.Errorf("%s: truncating a wrapped ring: %v", kv, err)
		}
		if err := ring.Truncate(cells - 1); err != nil && !p.K.Grouped() {
			t.Errorf("%s: dropping the last cell of a wrapped ring: %v", kv, err)
		}
		if err := ring.Truncate(0); err != nil {
			t.Errorf("%s: truncating a wrapped ring to 0: %v", kv, err)
		}
	}
	if _, err := New(Config{Layers: 2, KVHeads: 1, HeadDimK: 32, HeadDimV: 32, Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}, MaxCells: 8, Windows: []int{4}}); err == nil {
		t.Error("one window for two layers: no error")
	}
}

// TestRingTilesMatchFull checks that rings of several windows (below one 64-row tile, one
// tile, and a wider one that is no multiple of it, so the wrap falls inside a tile) read the
// same attention as a full cache, bit for bit, at every position of a context several
// windows long, for formats whose values accumulate with per-tile rounded weights.
func TestRingTilesMatchFull(t *testing.T) {
	const cells, d = 400, 32
	for _, kv := range []string{"q5_1", "q8_0/q4_1"} {
		p, err := kvq.ParsePair(kv)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{5, 64, 150} {
			cfg := Config{Layers: 1, KVHeads: 1, HeadDimK: d, HeadDimV: d, Pair: p, MaxCells: cells, Seed: 1, Windows: []int{w}}
			ring, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			full := cfg
			full.Windows = nil
			fc, err := New(full)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(w), 3))
			row := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(r.NormFloat64())
				}
				return v
			}
			shape := attn.Shape{Heads: 4, KVHeads: 1, HeadDimK: d, HeadDimV: d, Scale: 0.2, Threads: 1, ChunkSize: 100}
			for pos := 0; pos < cells; pos++ {
				k, v := row(d), row(d)
				for _, c := range []*Cache{ring, fc} {
					if err := c.Write(0, k, v, 1); err != nil {
						t.Fatal(err)
					}
					if err := c.Commit(1); err != nil {
						t.Fatal(err)
					}
				}
				q := row(4 * d)
				a, b := make([]float32, 4*d), make([]float32, 4*d)
				lo := max(0, pos-w+1)
				if err := attn.Decode(a, q, shape, ring.Keys(0, true), ring.Values(0, true), lo, pos+1); err != nil {
					t.Fatal(err)
				}
				if err := attn.Decode(b, q, shape, fc.Keys(0, true), fc.Values(0, true), lo, pos+1); err != nil {
					t.Fatal(err)
				}
				for i := range a {
					if a[i] != b[i] {
						t.Fatalf("%s window %d position %d: the ring reads %g, the full cache %g", kv, w, pos, a[i], b[i])
					}
				}
			}
		}
	}
}
