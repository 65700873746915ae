package server

import (
	"context"
	"encoding/json"
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

	"github.com/coder/websocket"
	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/runner"
	"go.uber.org/goleak"
)

// TestBatchLoad measures continuous batching on the CPU: 16 concurrent streaming greedy chats
// over /ws/chat against one stream alone, on servers of --batch 16 and --batch 1 (each
// generation its own passes) in the same process, rounds interleaved. It logs, per server and
// round, the aggregate tokens/s of the 16 streams over one stream's alone, and the p99 time to
// first token of the 16 over the median of the prompts run alone, one after another; every
// stream's text must equal its prompt's reply alone. The model is KVLAB_LOAD_MODEL (a fixture
// name, default kvlab-tiny-64.gguf, or an absolute path: a `kvlab bench model` synthetic file),
// the tokens per stream KVLAB_LOAD_TOKENS (default 128), the rounds KVLAB_LOAD_ROUNDS (default
// 3), and KVLAB_LOAD_KV_BUDGET, when set, the servers' --kv-budget in MiB (-1: contiguous
// caches; unset: the default pool). KVLAB_LOAD_GATHER, a comma-separated list of durations,
// replaces the two servers by --batch 16 servers of each --batch-gather (0: no arrival
// gather), so that arrival gathers compare in one process. The servers run in turn each round,
// a different one first each round. It runs only with KVLAB_LOAD=1 (it takes every core).
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
	var budget int64
	if n, err := strconv.Atoi(os.Getenv("KVLAB_LOAD_KV_BUDGET")); err == nil && n > 0 {
		budget = int64(n) << 20
	} else if err == nil && n < 0 {
		budget = KVBudgetOff
	}
	// arm is one server: its flags, for the log lines.
	type arm struct {
		name   string
		batch  int
		gather time.Duration
		srv    *Server
		ts     *httptest.Server
	}
	arms := []*arm{{name: "--batch  1", batch: 1}, {name: "--batch 16", batch: 16}}
	if g := os.Getenv("KVLAB_LOAD_GATHER"); g != "" {
		arms = nil
		for _, f := range strings.Split(g, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("KVLAB_LOAD_GATHER: %v", err)
			}
			a := &arm{name: "--batch 16 --batch-gather " + d.String(), batch: 16, gather: d}
			if d == 0 {
				a.gather = -1 // Config: negative is no wait
			}
			arms = append(arms, a)
		}
	}
	for _, a := range arms {
		a.srv = mustNew(t, Config{Models: []discover.Model{info}, Memory: fakeMemory, MaxConcurrent: streams, Batch: a.batch, BatchGather: a.gather, KV: "f16", KVBudget: budget})
		a.ts = testServer(t, a.srv)
	}
	stats := func(a *arm) runner.BatchStats {
		e, err := a.srv.models.get(storiesName)
		if err != nil {
			t.Fatal(err)
		}
		return e.runner.Scheduler().(*runner.Batching).Stats()
	}
	prompts := storiesPrompts
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	// Each prompt's reply alone (the first call also loads the model).
	want := map[*arm]map[string]string{}
	for _, a := range arms {
		ts := a.ts
		want[a] = map[string]string{}
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
			want[a][p] = res.Choices[0].Message.Content
		}
	}
	for _, a := range arms[1:] {
		for _, p := range prompts {
			if want[a][p] != want[arms[0]][p] {
				t.Logf("%s: %q replies %q; %s %q (rounding of another kernel)", a.name, p, want[a][p], arms[0].name, want[arms[0]][p])
			}
		}
	}

	type figures struct{ aloneTPS, aloneTTFT, aggTPS, p50, p99 float64 }
	for round := 1; round <= rounds; round++ {
		for i := range arms {
			// The arms take turns to go first: none always runs after the same other.
			a := arms[(i+round-1)%len(arms)]
			ts, b := a.ts, a.batch
			var f figures
			// One stream alone, each prompt in turn: the alone figures are the median TTFT and
			// the tokens per second over them, so a cache state that favours one prompt (a
			// prefix reused from an earlier round) does not make the baseline.
			var aloneTTFTs, alonePass []float64
			aloneTokens, aloneTime := 0, time.Duration(0)
			for _, p := range prompts {
				start := time.Now()
				r := chatStream(ctx, ts.URL, p, tokens, want[a][p])
				aloneTime += time.Since(start)
				if b > 1 {
					alonePass = append(alonePass, stats(a).PromptPass.Run.Seconds())
				}
				if r.err != nil {
					t.Errorf("%s alone: %v", a.name, r.err)
					if r.tokens == 0 {
						t.FailNow()
					}
				}
				aloneTokens += r.tokens
				aloneTTFTs = append(aloneTTFTs, r.ttft.Seconds())
			}
			slices.Sort(aloneTTFTs)
			f.aloneTPS, f.aloneTTFT = float64(aloneTokens)/aloneTime.Seconds(), aloneTTFTs[len(aloneTTFTs)/2]
			// Sixteen at once.
			var before runner.BatchStats
			if b > 1 {
				before = stats(a)
			}
			// Each stream opens its connection, then all send at once (the alone stream too
			// sends on an open connection): the first to send does not wait for the others'
			// connection set-up in the server's arrival gather. The wall time still counts the
			// set-up, as the alone figure's does.
			results := make([]chatResult, streams)
			var wg, dialed sync.WaitGroup
			send := make(chan struct{})
			ready := func() { dialed.Done(); <-send }
			dialed.Add(streams)
			start := time.Now()
			for i := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := prompts[i%len(prompts)]
					results[i] = chatStreamAt(ctx, ts.URL, p, tokens, want[a][p], ready)
				}()
			}
			dialed.Wait()
			close(send)
			wg.Wait()
			wall := time.Since(start)
			var ttfts []float64
			total := 0
			for i, r := range results {
				if r.err != nil {
					// A text that differs is an error, but the stream's figures still count.
					t.Errorf("%s stream %d: %v", a.name, i, r.err)
					if r.tokens == 0 {
						continue
					}
				}
				ttfts = append(ttfts, r.ttft.Seconds())
				total += r.tokens
			}
			if len(ttfts) == 0 {
				t.Fatalf("%s: no stream produced a token", a.name)
			}
			slices.Sort(ttfts)
			f.aggTPS, f.p50, f.p99 = float64(total)/wall.Seconds(), ttfts[len(ttfts)/2], ttfts[min(len(ttfts)-1, int(0.99*float64(len(ttfts))))]
			// The runner's own TTFT (its first pass's start to the first token) of the stream
			// with the slowest first token: the rest of that stream's wait came before the model.
			slowest := 0
			for i, r := range results {
				if r.ttft > results[slowest].ttft {
					slowest = i
				}
			}
			line := fmt.Sprintf("round %d %s: alone %.1f tokens/s, TTFT %.1f ms (median of %d prompts, %.1f–%.1f); %d streams %.1f tokens/s aggregate (%.2f×), TTFT p50 %.1f ms, p99 %.1f ms (%.2f×)",
				round, a.name, f.aloneTPS, 1e3*f.aloneTTFT, len(aloneTTFTs), 1e3*aloneTTFTs[0], 1e3*aloneTTFTs[len(aloneTTFTs)-1], streams, f.aggTPS, f.aggTPS/f.aloneTPS, 1e3*f.p50, 1e3*f.p99, f.p99/f.aloneTTFT)
			line += fmt.Sprintf("; slowest first token %.1f ms, %.1f ms of it in the runner",
				1e3*results[slowest].ttft.Seconds(), 1e3*results[slowest].runTTFT.Seconds())
			if b > 1 {
				after := stats(a)
				line += fmt.Sprintf("; %.1f sequences per pass", float64(after.Tokens-before.Tokens)/float64(max(after.Passes-before.Passes, 1)))
				// The pass that gave the last prompt its first logits against a prompt's alone
				// (median): what of the TTFT ratio is the pass itself (the batched product's cost
				// and the machine's load while it ran) and what the wait before it.
				slices.Sort(alonePass)
				pp, alone := after.PromptPass, alonePass[len(alonePass)/2]
				line += fmt.Sprintf("; last prompt pass %.1f ms (%d sequences, %d prompt tokens, after an arrival gather of %.1f ms) over alone's %.1f ms: %.2f×",
					1e3*pp.Run.Seconds(), pp.Seqs, pp.PromptTokens, 1e3*pp.Arrival.Seconds(), 1e3*alone, pp.Run.Seconds()/alone)
			}
			t.Log(line)
		}
	}
}

// storiesPrompts are the load tests' chat prompts (each stream takes one in turn).
var storiesPrompts = []string{"Once upon a time", "The little dog", "Tom and Sue went to the park", "One day, a bird"}

// pagedStories is the load tests' server: stories260K, f16 KV through a 1 MiB page budget
// (a few long generations at once), maxConcurrent generations admitted (0: the default).
func pagedStories(t *testing.T, maxConcurrent int) Config {
	t.Helper()
	cfg := storiesConfig(t)
	if maxConcurrent > 0 {
		cfg.MaxConcurrent = maxConcurrent
	}
	cfg.KV = "f16"
	cfg.KVBudget = 1 << 20
	return cfg
}

// TestBatchLoadLeaves runs 16 concurrent streaming chats through a batching server whose KV
// budget holds only some of them at once, three times: every stream to its end (each text
// equal to its prompt's reply alone), every stream stopped after a few tokens, and every
// client gone after a few tokens. After each round no generation holds a sequence, waits for
// pages or keeps a reservation, and no goroutine is left; at the end, with the idle sequences
// kept for prefix reuse freed, the pool holds no page, as before the first request.
func TestBatchLoadLeaves(t *testing.T) {
	const streams, tokens, long = 16, 60, 400
	s := mustNew(t, pagedStories(t, streams))
	ts := testServer(t, s)
	e, err := s.models.get(storiesName)
	if err != nil {
		t.Fatal(err)
	}
	pool, pages := e.runner.Pool(), e.runner.Pages()
	start := pages.Stats()
	if start.Used != 0 || start.ReservedBytes != 0 {
		t.Fatalf("a pool no generation has used: %+v", start)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	prompts := storiesPrompts
	want := map[string]string{}
	for _, p := range prompts {
		r := chatStream(ctx, ts.URL, p, tokens, "")
		if r.err != nil && !strings.HasPrefix(r.err.Error(), "text ") {
			t.Fatal(r.err)
		}
		want[p] = chatAlone(t, ts.URL, p, tokens)
	}
	if per := pages.SessionBytes(long); 2*per > pages.Budget() || 16*per <= pages.Budget() {
		t.Fatalf("budget %d bytes for generations of %d: the test wants a few at once, not all 16", pages.Budget(), per)
	}
	leaks := goleak.IgnoreCurrent()

	settled := func(round string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			inUse, _, waiting := pool.Stats()
			if inUse == 0 && waiting == 0 && e.Running() == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d sequences in use, %d generations waiting for pages, %d running", round, inUse, waiting, e.Running())
			}
		}
		st := pages.Stats()
		if st.ReservedBytes != 0 || st.Used > st.Total || st.Free < 0 {
			t.Errorf("%s: %+v; want nothing reserved, within the budget", round, st)
		}
		if err := goleak.Find(leaks); err != nil {
			t.Errorf("%s: %v", round, err)
		}
		t.Logf("%s: %+v", round, st)
	}
	run := func(round string, f func(i int, p string) error) {
		t.Helper()
		errs := make([]error, streams)
		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() { errs[i] = f(i, prompts[i%len(prompts)]) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s: stream %d: %v", round, i, err)
			}
		}
		settled(round)
	}

	run("to the end", func(_ int, p string) error { return chatStream(ctx, ts.URL, p, tokens, want[p]).err })
	run("stopped", func(i int, p string) error {
		text, err := chatCut(ctx, ts.URL, p, long, 1+i%5, true)
		if err == nil && !strings.HasPrefix(want[p], text) {
			err = fmt.Errorf("stopped with %q, not the start of the reply alone %q", text, want[p])
		}
		return err
	})
	run("client gone", func(i int, p string) error {
		_, err := chatCut(ctx, ts.URL, p, long, 1+i%5, false)
		return err
	})

	pool.Trim()
	if st := pages.Stats(); st.Used != start.Used || st.FixedBytes != start.FixedBytes || st.ReservedBytes != 0 {
		t.Errorf("with the idle sequences freed the pool is %+v; before the first request %+v", st, start)
	}
}

// chatCut streams a greedy chat reply of up to maxTokens to prompt over /ws/chat and, after
// after tokens, sends stop (then reads to the turn's end: a "done" cancelled, or at length
// when the reply ended first) or closes the connection. It returns the reply's text so far.
func chatCut(ctx context.Context, base, prompt string, maxTokens, after int, stop bool) (string, error) {
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws/chat", nil)
	if err != nil {
		return "", err
	}
	defer c.CloseNow()
	msg, _ := json.Marshal(map[string]any{"type": "chat", "model": storiesName, "temperature": 0, "max_tokens": maxTokens,
		"messages": []map[string]string{{"role": "user", "content": prompt}}})
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		return "", err
	}
	var text strings.Builder
	n := 0
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return text.String(), err
		}
		var m serverMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return text.String(), err
		}
		switch m.Type {
		case "token":
			if n++; n == after {
				if !stop {
					return text.String(), c.CloseNow()
				}
				if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"stop"}`)); err != nil {
					return text.String(), err
				}
			}
			if n <= after {
				text.WriteString(m.Text)
			}
		case "done":
			if m.Result.Stop != StopCancelled && m.Result.Stop != StopLength {
				return text.String(), fmt.Errorf("after stop: done with %q", m.Result.Stop)
			}
			return text.String(), c.Close(websocket.StatusNormalClosure, "")
		case "error":
			return text.String(), fmt.Errorf("error: %s", m.Error)
		}
	}
}
