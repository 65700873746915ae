package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/runner"
)

// TestBatchLoad measures continuous batching on the CPU: 16 concurrent streaming greedy chats
// over /ws/chat against one stream alone, on servers of --batch 16 and --batch 1 (each
// generation its own passes) in the same process, rounds interleaved. It logs, per server and
// round, the aggregate tokens/s of the 16 streams over one stream's alone, and the p99 time to
// first token of the 16 over the alone one's; every stream's text must equal its prompt's reply
// alone. The model is KVLAB_LOAD_MODEL (a fixture name, default kvlab-tiny-64.gguf, or an
// absolute path: a `kvlab bench model` synthetic file), the tokens per stream KVLAB_LOAD_TOKENS
// (default 128), the rounds KVLAB_LOAD_ROUNDS (default 3). It runs only with KVLAB_LOAD=1 (it
// takes every core).
func TestBatchLoad(t *testing.T) {
	if os.Getenv("KVLAB_LOAD") != "1" {
		t.Skip("load test: set KVLAB_LOAD=1 to run it")
	}
	name := os.Getenv("KVLAB_LOAD_MODEL")
	if name == "" {
		name = "kvlab-tiny-64.gguf"
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("KVLAB_LOAD_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	const streams = 16
	tokens := 128
	if n, err := strconv.Atoi(os.Getenv("KVLAB_LOAD_TOKENS")); err == nil && n > 0 {
		tokens = n
	}
	path := name
	if !filepath.IsAbs(name) {
		path = fixtures.Path(t, name)
	}
	info, err := discover.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	info.Name = storiesName // chatStream's model name
	servers := map[int]*httptest.Server{}
	var batched *Server
	for _, b := range []int{1, 16} {
		s := mustNew(t, Config{Models: []discover.Model{info}, Memory: fakeMemory, MaxConcurrent: streams, Batch: b, KV: "f16"})
		servers[b] = testServer(t, s)
		if b > 1 {
			batched = s
		}
	}
	stats := func() runner.BatchStats {
		e, err := batched.models.get(storiesName)
		if err != nil {
			t.Fatal(err)
		}
		return e.runner.Scheduler().(*runner.Batching).Stats()
	}
	prompts := []string{"Once upon a time", "The little dog", "Tom and Sue went to the park", "One day, a bird"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	// Each prompt's reply alone (the first call also loads the model).
	want := map[int]map[string]string{}
	for b, ts := range servers {
		want[b] = map[string]string{}
		for _, p := range prompts {
			r, err := ts.Client().Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(
				fmt.Sprintf(`{"model":%q,"temperature":0,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, storiesName, tokens, p)))
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				Choices []struct{ Message struct{ Content string } }
			}
			decode(t, r, &res)
			want[b][p] = res.Choices[0].Message.Content
		}
	}
	for b := range servers {
		for _, p := range prompts {
			if want[b][p] != want[1][p] {
				t.Logf("--batch %d: %q replies %q; --batch 1 %q (rounding of another kernel)", b, p, want[b][p], want[1][p])
			}
		}
	}

	type figures struct{ aloneTPS, aloneTTFT, aggTPS, p99 float64 }
	for round := 1; round <= rounds; round++ {
		for _, b := range []int{1, 16} {
			ts := servers[b]
			var f figures
			// One stream alone.
			start := time.Now()
			r := chatStream(ctx, ts.URL, prompts[0], tokens, want[b][prompts[0]])
			if r.err != nil {
				t.Fatalf("--batch %d alone: %v", b, r.err)
			}
			f.aloneTPS, f.aloneTTFT = float64(r.tokens)/time.Since(start).Seconds(), r.ttft.Seconds()
			// Sixteen at once.
			var before runner.BatchStats
			if b > 1 {
				before = stats()
			}
			results := make([]struct {
				ttft   time.Duration
				tokens int
				err    error
			}, streams)
			var wg sync.WaitGroup
			start = time.Now()
			for i := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := prompts[i%len(prompts)]
					results[i] = chatStream(ctx, ts.URL, p, tokens, want[b][p])
				}()
			}
			wg.Wait()
			wall := time.Since(start)
			var ttfts []float64
			total := 0
			for i, r := range results {
				if r.err != nil {
					t.Fatalf("--batch %d stream %d: %v", b, i, r.err)
				}
				ttfts = append(ttfts, r.ttft.Seconds())
				total += r.tokens
			}
			slices.Sort(ttfts)
			f.aggTPS, f.p99 = float64(total)/wall.Seconds(), ttfts[min(len(ttfts)-1, int(0.99*float64(len(ttfts))))]
			line := fmt.Sprintf("round %d --batch %2d: alone %.0f tokens/s, TTFT %.1f ms; %d streams %.0f tokens/s aggregate (%.2f×), TTFT p99 %.1f ms (%.2f×)",
				round, b, f.aloneTPS, 1e3*f.aloneTTFT, streams, f.aggTPS, f.aggTPS/f.aloneTPS, 1e3*f.p99, f.p99/f.aloneTTFT)
			if b > 1 {
				after := stats()
				line += fmt.Sprintf("; %.1f sequences per pass", float64(after.Tokens-before.Tokens)/float64(max(after.Passes-before.Passes, 1)))
			}
			t.Log(line)
		}
	}
}
