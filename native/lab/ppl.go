package lab

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/backend"
)

// PPLResult is the result of a perplexity run.
type PPLResult struct {
	// PPL is exp(NLL / Scored).
	PPL float64 `json:"ppl"`
	// NLL is the summed negative log-likelihood of the scored tokens, in nats.
	NLL float64 `json:"nll"`
	// Scored is the number of tokens scored; Chunks the number of chunks evaluated.
	Scored int `json:"scored"`
	Chunks int `json:"chunks"`
	// PerChunk is the running perplexity after each chunk, as llama.cpp prints it.
	PerChunk []float64 `json:"per_chunk"`
}

// Perplexity scores tokens with llama.cpp's convention (tools/perplexity): the tokens are cut
// into len(tokens)/ctx chunks of ctx tokens; each chunk's first token is replaced by bos (when
// bos ≥ 0), the chunk is evaluated from an empty cache, and only its second half is scored —
// the logits at positions ctx/2 … ctx−2 predict tokens ctx/2+1 … ctx−1, so a chunk scores
// ctx − ctx/2 − 1 tokens. Tokens past the last whole chunk are ignored. The cache must hold at
// least ctx cells; it is reset before every chunk, and its forward pass gives vocab logits per
// position (any backend's). progress, when not nil, is called after each chunk.
func Perplexity(cache backend.Cache, vocab int, tokens []int32, ctx int, bos int32, progress func(done, total int, ppl float64)) (PPLResult, error) {
	if ctx < 4 {
		return PPLResult{}, fmt.Errorf("lab: perplexity context %d is too short (at least 4)", ctx)
	}
	if cache.Cap() < ctx {
		return PPLResult{}, fmt.Errorf("lab: perplexity context %d exceeds the cache's %d cells", ctx, cache.Cap())
	}
	chunks := len(tokens) / ctx
	if chunks == 0 {
		return PPLResult{}, fmt.Errorf("lab: perplexity needs at least %d tokens (one chunk), the text has %d", ctx, len(tokens))
	}
	logits := make([]float32, ctx*vocab)
	chunk := make([]int32, ctx)
	var res PPLResult
	first := ctx / 2
	for c := 0; c < chunks; c++ {
		copy(chunk, tokens[c*ctx:(c+1)*ctx])
		if bos >= 0 {
			chunk[0] = bos
		}
		if err := cache.Reset(); err != nil {
			return res, err
		}
		if err := cache.Forward(chunk, logits); err != nil {
			return res, fmt.Errorf("lab: perplexity chunk %d: %w", c, err)
		}
		for j := first; j < ctx-1; j++ {
			res.NLL -= logSoftmaxAt(logits[j*vocab:(j+1)*vocab], chunk[j+1])
			res.Scored++
		}
		res.Chunks++
		res.PPL = math.Exp(res.NLL / float64(res.Scored))
		res.PerChunk = append(res.PerChunk, res.PPL)
		if progress != nil {
			progress(c+1, chunks, res.PPL)
		}
	}
	return res, nil
}

// logSoftmaxAt returns log softmax(logits)[tok], computed in float64 with the max subtracted.
func logSoftmaxAt(logits []float32, tok int32) float64 {
	mx := float64(logits[0])
	for _, x := range logits {
		mx = math.Max(mx, float64(x))
	}
	var sum float64
	for _, x := range logits {
		sum += math.Exp(float64(x) - mx)
	}
	return float64(logits[tok]) - mx - math.Log(sum)
}
