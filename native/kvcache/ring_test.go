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
// same values from both (bit for bit, or within the integer accumulation's rounding), for a
// row and a group format; its memory is 5 cells'.
func TestRingMatchesFull(t *testing.T) {
	for _, kv := range []string{"q8_0", "f16/q4_0", "tq4", "q2k/q8_0"} {
		p, err := kvq.ParsePair(kv)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Layers: 2, KVHeads: 2, HeadDimK: 32, HeadDimV: 32, Pair: p, MaxCells: 40, Seed: 1, Windows: []int{5, 0}}
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
		vc, err := kvq.NewCodec(p.V, 32, kvq.CodecOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		step := kvq.AccumulateStep(vc) // bit for bit where the values accumulate in float32
		for pos := 0; pos < 23; pos++ {
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
			if step > 0 {
				// The ring's calls split the window where it wraps, so its values' 64-row
				// tiles, and their rounded weights, differ from the full cache's.
				if d := relRMS(a, b); d > 16*step {
					t.Fatalf("%s position %d: the ring reads %.3g relative RMS from the full cache (bound %.3g)", kv, pos, d, 16*step)
				}
				continue
			}
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%s position %d: the ring reads %g, the full cache %g", kv, pos, a[i], b[i])
				}
			}
		}
		if want := p.Bytes(5, 32, 32, 2) + p.Bytes(40, 32, 32, 2); !p.K.Grouped() && ring.Bytes() != want {
			t.Errorf("%s: %d bytes, want %d", kv, ring.Bytes(), want)
		}
		if est := EstimateBytes(cfg); est != ring.Bytes() {
			t.Errorf("%s: EstimateBytes %d, New holds %d", kv, est, ring.Bytes())
		}
		if err := ring.Truncate(20); !errors.Is(err, kvq.ErrUnsupported) || !strings.Contains(err.Error(), "sliding-window") {
			t.Errorf("%s: truncating a wrapped ring: %v", kv, err)
		}
		if err := ring.Truncate(22); err != nil && !p.K.Grouped() {
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
