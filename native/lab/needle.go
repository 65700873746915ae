package lab

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// NeedleConfig configures the buried-fact probe: a four-digit number stated once inside a story
// and asked for at the end, in the retrieval format of the fixtures' README:
//
//	… story … The secret number is NNNN. … story …
//	What is the secret number? The secret number is
//
// answered greedily and scored exact (the answer's first non-space characters are the four
// digits). Only models trained for it (kvlab-tiny-64) retrieve; the f16 reference's score says
// whether a model does.
type NeedleConfig struct {
	// Skip turns the probe off.
	Skip bool `json:"skip,omitempty"`
	// Depths are where the fact sits, as fractions of the story's sentences; default 0.1, 0.5
	// and 0.9.
	Depths []float64 `json:"depths,omitempty"`
	// Trials is the number of prompts per depth (different numbers and stories); default 3.
	Trials int `json:"trials,omitempty"`
	// Tokens is the prompt length to aim for; default min(200, the context − 16), which keeps
	// kvlab-tiny-64 within its 256-token trained context.
	Tokens int `json:"tokens,omitempty"`
}

const (
	needleQuestion = "\nWhat is the secret number? The secret number is"
	needleAnswer   = 6 // greedy tokens decoded: "▁", four digits, "."
)

func (c NeedleConfig) withDefaults(limit int) NeedleConfig {
	if len(c.Depths) == 0 {
		c.Depths = []float64{0.1, 0.5, 0.9}
	}
	if c.Trials <= 0 {
		c.Trials = 3
	}
	if c.Tokens <= 0 {
		c.Tokens = min(200, limit-16)
	}
	return c
}

// needlePrompt is one prepared trial.
type needlePrompt struct {
	tokens []int32
	trial  NeedleTrial
}

// needleSentences are the haystack's sentences: the built-in stories, split at sentence ends.
func needleSentences() []string {
	var out []string
	for _, para := range strings.Split(DefaultText, "\n") {
		rest := strings.TrimSpace(para)
		for rest != "" {
			i := strings.IndexAny(rest, ".!?")
			if i < 0 {
				out = append(out, rest)
				break
			}
			// Keep a closing quote with its sentence.
			j := i + 1
			for j < len(rest) && rest[j] == '"' {
				j++
			}
			out = append(out, strings.TrimSpace(rest[:j]))
			rest = strings.TrimSpace(rest[j:])
		}
	}
	return out
}

// buildNeedles prepares the probe's prompts: for each depth and trial, sentences from a
// rotating start until the prompt reaches the target length, the fact inserted before the
// sentence at that depth.
func buildNeedles(tok *tokenizer.Tokenizer, c NeedleConfig, limit int, seed uint64) ([]needlePrompt, error) {
	if c.Skip {
		return nil, nil
	}
	c = c.withDefaults(limit)
	if c.Tokens < 32 {
		return nil, fmt.Errorf("lab: needle prompts of %d tokens are too short (context %d)", c.Tokens, limit)
	}
	for _, d := range c.Depths {
		if !(d >= 0 && d <= 1) {
			return nil, fmt.Errorf("lab: needle depth %g is outside [0, 1]", d)
		}
	}
	sents := needleSentences()
	rng := rand.New(rand.NewPCG(seed, 0x6e6565646c65))
	var out []needlePrompt
	for di, depth := range c.Depths {
		for t := 0; t < c.Trials; t++ {
			num := fmt.Sprintf("%04d", 1000+rng.IntN(9000))
			fact := "The secret number is " + num + "."
			startAt := (di*c.Trials + t) * 7 % len(sents)
			var hay []string
			var toks []int32
			for k := 0; len(hay) < len(sents); k++ {
				hay = append(hay, sents[(startAt+k)%len(sents)])
				toks = encodeWithBOS(tok, needleText(tok, hay, fact, depth))
				if len(toks) >= c.Tokens {
					break
				}
			}
			for len(toks) > c.Tokens && len(hay) > 1 {
				hay = hay[:len(hay)-1]
				toks = encodeWithBOS(tok, needleText(tok, hay, fact, depth))
			}
			if len(toks)+needleAnswer > limit {
				return nil, fmt.Errorf("lab: a needle prompt of %d tokens does not fit a context of %d (skip the probe, or give more context)", len(toks), limit)
			}
			k := needleIndex(tok, hay, depth)
			pos := len(encodeWithBOS(tok, strings.Join(hay[:k], " ")))
			out = append(out, needlePrompt{tokens: toks,
				trial: NeedleTrial{Depth: depth, Pos: pos, Tokens: len(toks), Want: num}})
		}
	}
	return out, nil
}

// needleIndex is the sentence before which the fact goes: the boundary whose token offset is
// nearest to depth × the haystack's tokens.
func needleIndex(tok *tokenizer.Tokenizer, hay []string, depth float64) int {
	total := float64(len(tok.Encode(strings.Join(hay, " "), false, false)))
	best, bestD := 0, math.Inf(1)
	for k := 0; k <= len(hay); k++ {
		n := float64(len(tok.Encode(strings.Join(hay[:k], " "), false, false)))
		if d := math.Abs(n - depth*total); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// needleText is the haystack with the fact at depth, and the question.
func needleText(tok *tokenizer.Tokenizer, hay []string, fact string, depth float64) string {
	k := needleIndex(tok, hay, depth)
	parts := append(append(append([]string{}, hay[:k]...), fact), hay[k:]...)
	return strings.Join(parts, " ") + needleQuestion
}

// needle runs the probe through arm's cache.
func (r *abRunner) needle(a Arm) (NeedleResult, error) {
	var res NeedleResult
	if len(r.needles) == 0 {
		return res, nil
	}
	cache, err := kvcache.New(a.cacheConfig(r.base, r.limit(), r.cfg.Seed))
	if err != nil {
		return res, err
	}
	logits := make([]float32, r.vocab)
	for _, np := range r.needles {
		cache.Reset()
		if err := r.ctx.Err(); err != nil {
			return res, err
		}
		if err := r.m.Forward(np.tokens, cache, logits); err != nil {
			return res, err
		}
		var ans []int32
		for i := 0; i < needleAnswer; i++ {
			next := int32(argmax(logits))
			if r.tok.IsEOG(next) {
				break
			}
			ans = append(ans, next)
			if i == needleAnswer-1 {
				break
			}
			if err := r.m.Forward([]int32{next}, cache, logits); err != nil {
				return res, err
			}
		}
		tr := np.trial
		tr.Got = strings.TrimSpace(r.tok.Decode(ans))
		tr.OK = strings.HasPrefix(tr.Got, tr.Want) && (len(tr.Got) == len(tr.Want) || tr.Got[len(tr.Want)] < '0' || tr.Got[len(tr.Want)] > '9')
		if tr.OK {
			res.OK++
		}
		res.Total++
		res.Trials = append(res.Trials, tr)
		r.step("needle", 1)
	}
	return res, nil
}
