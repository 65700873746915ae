package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvlab/kvlab/native/runner"
)

// scrape reads /metrics into a map from series (name and labels, as written) to value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	r, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetricsUnderLoad: the batching and paging series move under a small load of concurrent
// streaming chats through a KV budget — the per-pass histograms of decode and prompt tokens
// count every token run, and the page gauges add up to the budget.
func TestMetricsUnderLoad(t *testing.T) {
	const streams, tokens = 8, 40
	s := mustNew(t, pagedStories(t, streams))
	ts := testServer(t, s)
	prompts := storiesPrompts
	want := map[string]string{}
	for _, p := range prompts {
		want[p] = chatAlone(t, ts.URL, p, tokens)
	}
	series := func(name string) string { return name + `{model="stories260K"}` }
	before := scrape(t, ts.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	errs := make([]error, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			p := prompts[i%len(prompts)]
			errs[i] = chatStream(ctx, ts.URL, p, tokens, want[p]).err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	after := scrape(t, ts.URL)
	grew := func(name string) float64 { return after[series(name)] - before[series(name)] }
	// Each stream runs its reply's tokens but the last as decode steps, and at least its last
	// prompt token (the rest may be a shared prefix).
	if d := grew("kvlab_batch_decode_tokens_sum"); d != streams*(tokens-1) {
		t.Errorf("decode tokens per pass summed to %v over the load, want %d", d, streams*(tokens-1))
	}
	if d := grew("kvlab_batch_prefill_tokens_sum"); d < streams {
		t.Errorf("prompt tokens per pass summed to %v over the load, want at least %d", d, streams)
	}
	passes := grew("kvlab_batch_passes_total")
	if n := grew("kvlab_batch_decode_tokens_count"); n != passes || n == 0 {
		t.Errorf("the decode histogram counted %v passes, the counter %v", n, passes)
	}
	t.Logf("%v passes, %.1f decode tokens per pass", passes, grew("kvlab_batch_decode_tokens_sum")/passes)

	e, err := s.models.get(storiesName)
	if err != nil {
		t.Fatal(err)
	}
	pages := e.runner.Pages()
	page := func(state string) float64 { return after[`kvlab_kv_pages{model="stories260K",state="`+state+`"}`] }
	if tot := page("total"); tot != float64(pages.Budget()/pages.PageBytes()) {
		t.Errorf("kvlab_kv_pages total %v, the budget holds %d pages", tot, pages.Budget()/pages.PageBytes())
	}
	if page("used") == 0 || page("used")+page("free") > page("total") {
		t.Errorf("kvlab_kv_pages used %v free %v of %v: the idle sequences hold pages, within the budget", page("used"), page("free"), page("total"))
	}
	if a := page("allocated"); a < page("used") || a > page("total") {
		t.Errorf("kvlab_kv_pages allocated %v: want at least the %v used, at most the %v the budget holds", a, page("used"), page("total"))
	}
	if f, ok := after[series("kvlab_kv_pages_huge_fraction")]; !ok || f < 0 || f > 1 {
		t.Errorf("kvlab_kv_pages_huge_fraction %v (present %v), want a fraction", f, ok)
	}
	if r := after[series("kvlab_kv_reserved_bytes")]; r != 0 {
		t.Errorf("%v bytes reserved after every generation ended", r)
	}
}

// TestMetricsPromptPass: the last pass that ran prompt tokens (runner.BatchStats.PromptPass)
// shows on the kvlab_batch_prompt_pass_* gauges, each the scheduler's own figure, and not
// before such a pass has run.
func TestMetricsPromptPass(t *testing.T) {
	s := mustNew(t, storiesConfig(t))
	ts := testServer(t, s)
	e, err := s.models.get(storiesName)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := e.runner.Scheduler().(*runner.Batching)
	if !ok {
		t.Fatalf("scheduler %T, want *runner.Batching", e.runner.Scheduler())
	}
	series := func(name string) string { return name + `{model="stories260K"}` }
	if _, ok := scrape(t, ts.URL)[series("kvlab_batch_prompt_pass_steps")]; ok {
		t.Error("a prompt pass reported before any ran")
	}
	chatAlone(t, ts.URL, storiesPrompts[0], 4)
	got, pp := scrape(t, ts.URL), b.Stats().PromptPass
	if pp.Seqs < 1 || pp.Prompts < 1 || pp.PromptTokens < 1 || pp.Run <= 0 {
		t.Fatalf("PromptPass %+v after a generation", pp)
	}
	for name, want := range map[string]float64{
		"kvlab_batch_prompt_pass_steps":          float64(pp.Seqs),
		"kvlab_batch_prompt_pass_prompts":        float64(pp.Prompts),
		"kvlab_batch_prompt_pass_prompt_tokens":  float64(pp.PromptTokens),
		"kvlab_batch_prompt_pass_gather_seconds": pp.Arrival.Seconds(),
		"kvlab_batch_prompt_pass_run_seconds":    pp.Run.Seconds(),
	} {
		if v, ok := got[series(name)]; !ok || v != want {
			t.Errorf("%s = %v (reported %v), want %v", name, v, ok, want)
		}
	}
}

// TestMetricsKVWaiting: a generation waiting for KV pages shows on kvlab_kv_waiting until its
// client leaves.
func TestMetricsKVWaiting(t *testing.T) {
	s := mustNew(t, pagedStories(t, 0))
	ts := testServer(t, s)
	e, err := s.models.get(storiesName) // loaded, no sequence idle yet
	if err != nil {
		t.Fatal(err)
	}
	pages := e.runner.Pages()
	series := func(name string) string { return name + `{model="stories260K"}` }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Hold sequences of 512 cells until no other fits: a chat that may grow as long waits.
	const long = 512
	var held []*runner.Sequence
	defer func() {
		for _, q := range held {
			e.runner.Pool().Put(q)
		}
	}()
	for pages.Fits(pages.SessionBytes(long)) {
		q, err := e.runner.Pool().Get(ctx, []int32{1}, long)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, q)
	}
	wctx, leave := context.WithCancel(ctx)
	defer leave()
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(wctx, http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(
			fmt.Sprintf(`{"model":"stories260K","temperature":0,"max_tokens":%d,"messages":[{"role":"user","content":"Once"}]}`, long)))
		req.Header.Set("Content-Type", "application/json")
		r, err := ts.Client().Do(req)
		if err == nil {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			err = fmt.Errorf("finished: %d %.200s", r.StatusCode, b)
		}
		done <- err
	}()
	waitMetric := func(name string, v float64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			got := scrape(t, ts.URL)[series(name)]
			if got == v {
				return
			}
			select {
			case err := <-done:
				t.Fatalf("%s is %v, want %v; the request: %v", name, got, v, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s stayed %v, want %v", name, got, v)
			}
		}
	}
	waitMetric("kvlab_kv_waiting", 1)
	leave()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiting request: %v; want it cancelled (its client left)", err)
	}
	waitMetric("kvlab_kv_waiting", 0)
}

// chatAlone is a greedy non-streamed chat reply of tokens tokens to prompt.
func chatAlone(t *testing.T, base, prompt string, tokens int) string {
	t.Helper()
	r, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(
		fmt.Sprintf(`{"model":%q,"temperature":0,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, storiesName, tokens, prompt)))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Choices []struct{ Message struct{ Content string } }
	}
	decode(t, r, &res)
	if len(res.Choices) == 0 {
		t.Fatalf("%q: no reply", prompt)
	}
	return res.Choices[0].Message.Content
}
