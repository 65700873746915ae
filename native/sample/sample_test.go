package sample

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestArgmax(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"single", []float32{3}, 0},
		{"middle", []float32{1, 5, 2}, 1},
		{"tie takes lowest id", []float32{1, 5, 5}, 1},
		{"negative", []float32{-3, -1, -2}, 1},
		{"leading NaN", []float32{nan, -1, 2}, 2},
		{"NaN later", []float32{0, nan, -1}, 0},
		{"empty", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Argmax(tc.logits); got != tc.want {
				t.Fatalf("Argmax(%v) = %d, want %d", tc.logits, got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero is greedy", Config{}, true},
		{"full", Config{Temp: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 1}, true},
		{"negative top-k", Config{Temp: 1, TopK: -1}, false},
		{"top-p above 1", Config{Temp: 1, TopP: 1.5}, false},
		{"min-p negative", Config{Temp: 1, MinP: -0.1}, false},
		{"NaN temperature", Config{Temp: float32(math.NaN())}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("New(%+v) error = %v, want ok=%v", tc.cfg, err, tc.ok)
			}
		})
	}
}

// counts draws n tokens from fixed logits and returns how often each id came up.
func counts(t *testing.T, cfg Config, logits []float32, n int) []int {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := make([]int, len(logits))
	for range n {
		c[s.Sample(logits)]++
	}
	return c
}

func TestSampleFilters(t *testing.T) {
	// Probabilities at temperature 1: 0.5, 0.25, 0.125, 0.0625, 0.0625.
	l2 := float32(math.Ln2)
	logits := []float32{4 * l2, 3 * l2, 2 * l2, l2, l2}
	for _, tc := range []struct {
		name    string
		cfg     Config
		allowed []bool
	}{
		{"greedy", Config{}, []bool{true, false, false, false, false}},
		{"top-k 2", Config{Temp: 1, TopK: 2}, []bool{true, true, false, false, false}},
		{"top-p 0.7 keeps 0.5+0.25", Config{Temp: 1, TopP: 0.7}, []bool{true, true, false, false, false}},
		{"top-p 0.8 keeps three", Config{Temp: 1, TopP: 0.8}, []bool{true, true, true, false, false}},
		{"min-p 0.2 drops below 0.1", Config{Temp: 1, MinP: 0.2}, []bool{true, true, true, false, false}},
		{"min-p 0.6 keeps the top", Config{Temp: 1, MinP: 0.6}, []bool{true, false, false, false, false}},
		{"no filter", Config{Temp: 1}, []bool{true, true, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := counts(t, tc.cfg, logits, 4000)
			for id, n := range c {
				if n > 0 != tc.allowed[id] {
					t.Fatalf("token %d drawn %d times; allowed=%v (counts %v)", id, n, tc.allowed[id], c)
				}
			}
		})
	}
}

// TestSampleDistribution checks the draw against softmax(logits/T) within 5 standard errors.
func TestSampleDistribution(t *testing.T) {
	logits := []float32{2, 1, 0.5, -1}
	for _, temp := range []float32{1, 0.5, 2} {
		const n = 40000
		c := counts(t, Config{Temp: temp, Seed: 42}, logits, n)
		var z float64
		w := make([]float64, len(logits))
		for i, l := range logits {
			w[i] = math.Exp(float64(l / temp))
			z += w[i]
		}
		for i := range w {
			p := w[i] / z
			got := float64(c[i]) / n
			if se := math.Sqrt(p * (1 - p) / n); math.Abs(got-p) > 5*se {
				t.Errorf("T=%g token %d: frequency %.4f, want %.4f ± %.4f", temp, i, got, p, 5*se)
			}
		}
	}
}

func TestSampleDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	cfg := Config{Temp: 0.9, TopK: 50, TopP: 0.9, MinP: 0.01, Seed: 7}
	draw := func(cfg Config) []int32 {
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int32, 64)
		for i := range out {
			out[i] = s.Sample(logits)
		}
		return out
	}
	a, b := draw(cfg), draw(cfg)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed differs at draw %d: %d vs %d", i, a[i], b[i])
		}
	}
	cfg.Seed = 8
	c := draw(cfg)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same == len(a) {
		t.Fatal("a different seed drew the same 64 tokens")
	}
}

// TestSelectTop checks the quickselect against a full sort on random data with ties.
func TestSelectTop(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(300)
		k := 1 + r.IntN(n)
		c := make([]cand, n)
		for i := range c {
			c[i] = cand{id: int32(i), logit: float32(r.IntN(20))}
		}
		cmp := func(a, b cand) int {
			switch {
			case a.logit > b.logit:
				return -1
			case a.logit < b.logit:
				return 1
			}
			return int(a.id - b.id)
		}
		sorted := append([]cand(nil), c...)
		slicesSort(sorted, cmp)
		selectTop(c, k, cmp)
		want := map[int32]bool{}
		for _, x := range sorted[:k] {
			want[x.id] = true
		}
		for _, x := range c[:k] {
			if !want[x.id] {
				t.Fatalf("n=%d k=%d: id %d selected but not in the top k", n, k, x.id)
			}
		}
	}
}

func slicesSort(c []cand, cmp func(a, b cand) int) {
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && cmp(c[j], c[j-1]) < 0; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}
