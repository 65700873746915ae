package runner

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kvlab/kvlab/native/kvq"
)

// TestMixedPromptsTTFT measures the time to first token of short prompts arriving just after
// long ones on a Batching runner: 2 prompts of 960 tokens, then 8 of 8 tokens; it logs the
// short ones' TTFT p50 and p99 and the long ones'. KVLAB_LOAD_MODEL and KVLAB_LOAD_ROUNDS
// (default 3) as TestBatchingThroughput; it runs only with KVLAB_LOAD=1.
func TestMixedPromptsTTFT(t *testing.T) {
	lm := loadModel(t, 3)
	m, tok, dm, rounds := lm.m, lm.tok, lm.dm, lm.rounds
	r, err := New(dm, tok, Config{Cache: m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 1024), Vocab: m.Hparams.Vocab, Keep: 16, Batch: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for round := 1; round <= rounds; round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var short, long []float64
		gen := func(i, n int, out *[]float64) {
			wg.Go(func() {
				p := make([]int32, n)
				for j := range p {
					p[j] = int32(13 + (j*7+i*131+round*17)%200)
				}
				p[0] = 1
				res, err := r.Generate(context.Background(), Params{Prompt: p, MaxTokens: 16, PrefillChunk: 128}, func(Event) error { return nil })
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				*out = append(*out, res.TTFT.Seconds()*1e3)
				mu.Unlock()
			})
		}
		for i := range 2 {
			gen(i, 960, &long)
		}
		time.Sleep(5 * time.Millisecond)
		for i := range 8 {
			gen(10+i, 8, &short)
		}
		wg.Wait()
		slices.Sort(short)
		slices.Sort(long)
		t.Logf("round %d: short prompts TTFT p50 %.1f ms p99 %.1f ms; long prompts TTFT %.1f / %.1f ms", round, short[len(short)/2], short[len(short)-1], long[0], long[1])
	}
}
