package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/backend/cpu"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// loadedModel is a load test's model: the weights, their tokenizer, the CPU backend's model
// and the rounds to run.
type loadedModel struct {
	m      *model.Model
	tok    *tokenizer.Tokenizer
	dm     backend.Model
	rounds int
}

// loadModel skips unless KVLAB_LOAD=1, then loads KVLAB_LOAD_MODEL (a fixture name or an
// absolute path, default kvlab-tiny-64.gguf) on the CPU backend, closed at the test's end;
// rounds is KVLAB_LOAD_ROUNDS, or defRounds.
func loadModel(t *testing.T, defRounds int) loadedModel {
	t.Helper()
	if os.Getenv("KVLAB_LOAD") != "1" {
		t.Skip("load test: set KVLAB_LOAD=1 to run it")
	}
	name := os.Getenv("KVLAB_LOAD_MODEL")
	if name == "" {
		name = "kvlab-tiny-64.gguf"
	}
	if !filepath.IsAbs(name) {
		name = fixtures.Path(t, name)
	}
	m, err := model.Load(name, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	dm, err := cpu.New().Load(m, backend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rounds := defRounds
	if n, err := strconv.Atoi(os.Getenv("KVLAB_LOAD_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	return loadedModel{m, tok, dm, rounds}
}

// TestBatchingThroughput measures the runner without the server: one greedy generation alone,
// then 16 at once, on a Batching runner and on a Serial one, rounds interleaved; it logs the
// decode tokens/s and the p99 time to first token. KVLAB_LOAD_MODEL is a fixture name or an
// absolute path (a `kvlab bench model` synthetic file: its weights are memory-bound where the
// fixtures are not), KVLAB_LOAD_TOKENS the tokens per generation (default 64),
// KVLAB_LOAD_ROUNDS the rounds (default 2). It runs only with KVLAB_LOAD=1.
func TestBatchingThroughput(t *testing.T) {
	lm := loadModel(t, 2)
	m, tok, dm, rounds := lm.m, lm.tok, lm.dm, lm.rounds
	tokens := 64
	if n, err := strconv.Atoi(os.Getenv("KVLAB_LOAD_TOKENS")); err == nil && n > 0 {
		tokens = n
	}
	const streams = 16
	mk := func(batch int) *Runner {
		r, err := New(dm, tok, Config{Cache: m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 256), Vocab: m.Hparams.Vocab,
			Keep: streams, Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return r
	}
	runners := map[string]*Runner{"serial": mk(1), "batch16": mk(16)}
	prompt := []int32{1, 13, 14, 15, 16, 17, 18, 19}
	gen := func(r *Runner, n int) (tps float64, p99 time.Duration) {
		var wg sync.WaitGroup
		ttft := make([]time.Duration, n)
		start := time.Now()
		total := 0
		var mu sync.Mutex
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := append([]int32(nil), prompt...)
				p[len(p)-1] += int32(i) // distinct prompts, no prefix shared past the BOS
				res, err := r.Generate(context.Background(), Params{Prompt: p, MaxTokens: tokens}, func(Event) error { return nil })
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				ttft[i], total = res.TTFT, total+res.Tokens
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, d := range ttft {
			p99 = max(p99, d)
		}
		return float64(total) / time.Since(start).Seconds(), p99
	}
	for round := 1; round <= rounds; round++ {
		for _, k := range []string{"serial", "batch16"} {
			aTPS, aTTFT := gen(runners[k], 1)
			bTPS, bTTFT := gen(runners[k], streams)
			t.Logf("round %d %-7s: alone %.1f tokens/s, TTFT %v; %d at once %.1f tokens/s (%.2f×), TTFT p99 %v (%.2f×)", round, k,
				aTPS, aTTFT.Round(time.Microsecond), streams, bTPS, bTPS/aTPS, bTTFT.Round(time.Microsecond), float64(bTTFT)/float64(aTTFT))
		}
	}
}
