package runner

import (
	"math"
	"slices"

	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// Constraint restricts what a generation may sample (Params.Constrain).
type Constraint interface {
	// Allow reports whether token may come next.
	Allow(token int32) bool
	// Accept records the sampled token.
	Accept(token int32)
	// Done reports that the output is complete: the generation ends there.
	Done() bool
	// Close returns text that completes the output when the generation stops short of Done.
	Close() string
}

// sampleWithin samples the next token under constraint c: the sampler's own draw when c allows
// it (the common case, no cost), else a draw from the logits with every token c forbids
// masked out. ok is false when c allows no token at all.
func sampleWithin(smp *sample.Sampler, logits []float32, scratch *[]float32, c Constraint) (next int32, ok bool) {
	next = smp.Sample(logits)
	if c == nil || c.Allow(next) {
		return next, true
	}
	masked := append((*scratch)[:0], logits...)
	*scratch = masked
	any := false
	for i := range masked {
		if c.Allow(int32(i)) {
			any = true
		} else {
			masked[i] = float32(math.Inf(-1))
		}
	}
	if !any {
		return 0, false
	}
	next = smp.Sample(masked)
	return next, c.Allow(next)
}

// TokenLogprob is a generated token's log probability under the model (temperature 1, before
// any filter or constraint) and the most likely alternatives at its position.
type TokenLogprob struct {
	Token   int32
	Text    string
	Logprob float64
	Top     []TopLogprob
}

// TopLogprob is one alternative at a position.
type TopLogprob struct {
	Token   int32
	Text    string
	Logprob float64
}

// logprobOf returns the log probability of token next under logits and the top most likely
// tokens (top may be 0).
func logprobOf(tok *tokenizer.Tokenizer, logits []float32, next int32, top int) *TokenLogprob {
	m := float32(math.Inf(-1))
	for _, x := range logits {
		if x > m {
			m = x
		}
	}
	var sum float64
	for _, x := range logits {
		if x == x && !math.IsInf(float64(x), -1) {
			sum += math.Exp(float64(x - m))
		}
	}
	lse := float64(m) + math.Log(sum)
	lp := &TokenLogprob{Token: next, Text: tok.Piece(next, false), Logprob: float64(logits[next]) - lse}
	if top <= 0 {
		return lp
	}
	idx := make([]int32, 0, top+1)
	for i, x := range logits {
		if x != x {
			continue
		}
		if len(idx) == top && x <= logits[idx[top-1]] {
			continue
		}
		at, _ := slices.BinarySearchFunc(idx, x, func(id int32, v float32) int {
			if logits[id] > v {
				return -1
			}
			return 1
		})
		idx = slices.Insert(idx, at, int32(i))
		if len(idx) > top {
			idx = idx[:top]
		}
	}
	for _, id := range idx {
		lp.Top = append(lp.Top, TopLogprob{Token: id, Text: tok.Piece(id, false), Logprob: float64(logits[id]) - lse})
	}
	return lp
}
