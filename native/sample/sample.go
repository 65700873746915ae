// Package sample picks the next token from a model's logits: greedy, or a random draw after
// temperature, top-k, top-p (nucleus) and min-p filtering, deterministic for a seed.
package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Config selects the sampling rule. The zero value is greedy decoding.
type Config struct {
	// Temp is the softmax temperature. Temp ≤ 0 is greedy: the highest logit wins, the lowest
	// token id on ties, and the other fields are ignored.
	Temp float32
	// TopK keeps the K highest logits; 0 (or ≥ the vocabulary) keeps all.
	TopK int
	// TopP keeps the smallest set of most probable tokens whose probabilities sum to at least
	// TopP; 0 or ≥ 1 keeps all.
	TopP float32
	// MinP drops tokens whose probability is below MinP times the most probable token's; 0
	// keeps all.
	MinP float32
	// Seed seeds the random draw: the same seed, config and logits give the same tokens.
	Seed uint64
}

// Validate reports a configuration outside the ranges above.
func (c Config) Validate() error {
	switch {
	case math.IsNaN(float64(c.Temp)) || math.IsInf(float64(c.Temp), 0):
		return fmt.Errorf("sample: temperature %g is not a number", c.Temp)
	case c.TopK < 0:
		return fmt.Errorf("sample: top-k %d is negative", c.TopK)
	case !(c.TopP >= 0 && c.TopP <= 1):
		return fmt.Errorf("sample: top-p %g is outside [0, 1]", c.TopP)
	case !(c.MinP >= 0 && c.MinP <= 1):
		return fmt.Errorf("sample: min-p %g is outside [0, 1]", c.MinP)
	}
	return nil
}

// Greedy reports whether the configuration is greedy decoding.
func (c Config) Greedy() bool { return c.Temp <= 0 }

// Sampler draws tokens by one Config. It keeps its random state and scratch buffers between
// calls, so it is not safe for concurrent use.
type Sampler struct {
	cfg  Config
	rng  *rand.Rand
	cand []cand
}

type cand struct {
	id    int32
	logit float32
	p     float32 // probability at temperature 1 among the candidates
}

// New returns a sampler for cfg; an invalid cfg is an error.
func New(cfg Config) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Sampler{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}, nil
}

// Argmax returns the index of the largest logit, the lowest index on ties; NaN logits never
// win. It returns 0 for an empty slice.
func Argmax(logits []float32) int32 {
	best := 0
	for i, x := range logits {
		if x > logits[best] || (logits[best] != logits[best] && x == x) {
			best = i
		}
	}
	return int32(best)
}

// Sample returns the next token for one position's logits (one value per vocabulary entry).
// The filters apply in llama.cpp's order: top-k, top-p and min-p on the temperature-1
// distribution, then the temperature, then a draw from the survivors renormalized.
func (s *Sampler) Sample(logits []float32) int32 {
	if s.cfg.Greedy() || len(logits) == 0 {
		return Argmax(logits)
	}
	c := s.cand[:0]
	for i, x := range logits {
		if x == x && !math.IsInf(float64(x), -1) {
			c = append(c, cand{id: int32(i), logit: x})
		}
	}
	s.cand = c
	if len(c) == 0 {
		return Argmax(logits)
	}
	byLogit := func(a, b cand) int {
		switch {
		case a.logit > b.logit:
			return -1
		case a.logit < b.logit:
			return 1
		}
		return int(a.id - b.id)
	}
	if k := s.cfg.TopK; k > 0 && k < len(c) {
		selectTop(c, k, byLogit)
		c = c[:k]
	}
	slices.SortFunc(c, byLogit)
	softmax(c)
	if p := s.cfg.TopP; p > 0 && p < 1 {
		var cum float32
		for i := range c {
			cum += c[i].p
			if cum >= p {
				c = c[:i+1]
				break
			}
		}
	}
	if mp := s.cfg.MinP; mp > 0 {
		keep := 1
		for keep < len(c) && c[keep].p >= mp*c[0].p {
			keep++
		}
		c = c[:keep]
	}
	// The draw: weights exp((logit_i − logit_max)/T) over the survivors.
	t := float64(s.cfg.Temp)
	var sum float64
	for i := range c {
		w := math.Exp(float64(c[i].logit-c[0].logit) / t)
		c[i].p = float32(w)
		sum += w
	}
	u := s.rng.Float64() * sum
	for _, x := range c {
		u -= float64(x.p)
		if u < 0 {
			return x.id
		}
	}
	return c[len(c)-1].id
}

// softmax sets the probabilities of c (sorted, highest logit first) at temperature 1.
func softmax(c []cand) {
	m := c[0].logit
	var sum float64
	for i := range c {
		e := math.Exp(float64(c[i].logit - m))
		c[i].p = float32(e)
		sum += e
	}
	for i := range c {
		c[i].p = float32(float64(c[i].p) / sum)
	}
}

// selectTop partially orders c so that its first k elements are the k first by cmp (in no
// particular order): quickselect, expected O(len(c)).
func selectTop(c []cand, k int, cmp func(a, b cand) int) {
	lo, hi := 0, len(c)-1
	for lo < hi {
		// Median of three as pivot.
		mid := lo + (hi-lo)/2
		if cmp(c[mid], c[lo]) < 0 {
			c[mid], c[lo] = c[lo], c[mid]
		}
		if cmp(c[hi], c[lo]) < 0 {
			c[hi], c[lo] = c[lo], c[hi]
		}
		if cmp(c[hi], c[mid]) < 0 {
			c[hi], c[mid] = c[mid], c[hi]
		}
		pivot := c[mid]
		i, j := lo, hi
		for i <= j {
			for cmp(c[i], pivot) < 0 {
				i++
			}
			for cmp(pivot, c[j]) < 0 {
				j--
			}
			if i <= j {
				c[i], c[j] = c[j], c[i]
				i++
				j--
			}
		}
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
}
