package lab

import (
	"math"
	"testing"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestPerplexityConvention recomputes llama.cpp's convention independently: every chunk fed one
// token at a time through the decode path, BOS first, log-likelihoods of the second half summed.
func TestPerplexityConvention(t *testing.T) {
	m, tok := loadModel(t, "stories260K.gguf")
	tokens := tok.Encode("Once upon a time, there was a little dog named Max. Max liked to run in the park with his friend Sue. "+
		"One day, it was very hot and Max was thirsty. Sue gave him some water and they sat under a big tree.", true, false)
	const ctx = 24
	cache, err := kvcache.New(m.CacheConfig(kvq.Pair{K: kvq.F32, V: kvq.F32}, ctx))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Perplexity(cpuRun{cache, m.Forward}, m.Hparams.Vocab, tokens, ctx, tok.BOS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	chunks := len(tokens) / ctx
	if got.Chunks != chunks || got.Scored != chunks*(ctx-ctx/2-1) || len(got.PerChunk) != chunks {
		t.Fatalf("chunks %d, scored %d, per-chunk %d; want %d, %d, %d", got.Chunks, got.Scored, len(got.PerChunk), chunks, chunks*(ctx-ctx/2-1), chunks)
	}
	var nll float64
	logits := make([]float32, m.Hparams.Vocab)
	for c := 0; c < chunks; c++ {
		cache.Reset()
		chunk := append([]int32(nil), tokens[c*ctx:(c+1)*ctx]...)
		chunk[0] = tok.BOS()
		for j := 0; j < ctx-1; j++ {
			if err := m.Forward(chunk[j:j+1], cache, logits); err != nil {
				t.Fatal(err)
			}
			if j >= ctx/2 {
				nll -= logSoftmaxAt(logits, chunk[j+1])
			}
		}
	}
	if math.Abs(nll-got.NLL) > 1e-3*math.Abs(nll) {
		t.Errorf("NLL %.6f, token-by-token reference %.6f", got.NLL, nll)
	}
	if want := math.Exp(nll / float64(got.Scored)); math.Abs(got.PPL-want) > 1e-3*want {
		t.Errorf("PPL %.4f, reference %.4f", got.PPL, want)
	}
}

func TestPerplexityNeedsAChunk(t *testing.T) {
	m, _ := loadModel(t, "stories260K.gguf")
	cache, _ := kvcache.New(m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 64))
	if _, err := Perplexity(cpuRun{cache, m.Forward}, m.Hparams.Vocab, []int32{1, 2, 3}, 64, 1, nil); err == nil {
		t.Error("3 tokens with a 64-token chunk: no error")
	}
	if _, err := Perplexity(cpuRun{cache, m.Forward}, m.Hparams.Vocab, make([]int32, 200), 128, 1, nil); err == nil {
		t.Error("a chunk larger than the cache: no error")
	}
}
