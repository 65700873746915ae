package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLoadPaged runs 16 streaming chats through a KV budget that holds the pages of only a few
// at once: the others wait for pages, every reply equals the same request alone, and when all
// have finished no pages are promised to anyone and the pool holds no more than its budget.
func TestLoadPaged(t *testing.T) {
	const streams, tokens = 16, 120
	cfg := storiesConfig(t)
	cfg.MaxConcurrent = streams
	cfg.KV = "f16"
	cfg.KVBudget = 1 << 20
	s := mustNew(t, cfg)
	ts := testServer(t, s)
	prompts := []string{"Once upon a time", "The little dog", "Tom and Sue went to the park", "One day, a bird"}
	want := map[string]string{}
	for _, p := range prompts {
		r, err := ts.Client().Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(
			fmt.Sprintf(`{"model":"stories260K","temperature":0,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, tokens, p)))
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Choices []struct{ Message struct{ Content string } }
		}
		decode(t, r, &res)
		want[p] = res.Choices[0].Message.Content
	}
	e, err := s.models.get(storiesName)
	if err != nil {
		t.Fatal(err)
	}
	pages := e.runner.Pool().Pages()
	if pages == nil {
		t.Fatal("KVBudget set, but the runner's caches are not paged")
	}
	if per := pages.SessionBytes(tokens + 16); 4*per > pages.Budget() || 16*per <= pages.Budget() {
		t.Fatalf("budget %d bytes for generations of %d bytes: the test wants a few at once, not all 16", pages.Budget(), per)
	}

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
			t.Errorf("stream %d: %v", i, err)
		}
	}
	st := pages.Stats()
	t.Logf("after %d streams: %+v", streams, st)
	if st.ReservedBytes != 0 {
		t.Errorf("%d bytes still reserved after every generation ended", st.ReservedBytes)
	}
	if st.Used > st.Total || st.Free < 0 {
		t.Errorf("pool past its budget: %+v", st)
	}
}

// TestKVBudgetTooSmall: a request that needs more KV memory than the whole budget holds is the
// client's error, named, not a server failure.
func TestKVBudgetTooSmall(t *testing.T) {
	cfg := storiesConfig(t)
	cfg.KV = "f16"
	cfg.KVBudget = 64 << 10 // one page and a half of stories260K's f16 cells
	ts := testServer(t, mustNew(t, cfg))
	r, err := ts.Client().Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"stories260K","temperature":0,"max_tokens":400,"messages":[{"role":"user","content":"Once upon a time"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Error struct{ Code, Message string }
	}
	decode(t, r, &res)
	if r.StatusCode != 400 || res.Error.Code != "kv_budget_exceeded" {
		t.Fatalf("status %d, error %+v; want 400 kv_budget_exceeded", r.StatusCode, res.Error)
	}
}

// TestDefaultPaging: without --kv-budget a CPU model's caches are paged, the pool holding
// --max-concurrent generations of the whole context within the KV policy's budget; KVBudgetOff
// gives each generation a contiguous cache.
func TestDefaultPaging(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int64
		paged  bool
	}{{"default", 0, true}, {"off", KVBudgetOff, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := storiesConfig(t)
			cfg.KV = "f16"
			cfg.KVBudget = tc.budget
			s := mustNew(t, cfg)
			ts := testServer(t, s)
			if got := chatAlone(t, ts.URL, "Once upon a time", 8); got == "" {
				t.Fatal("no reply")
			}
			e, err := s.models.get(storiesName)
			if err != nil {
				t.Fatal(err)
			}
			pages := e.runner.Pages()
			if (pages != nil) != tc.paged {
				t.Fatalf("paged %v, want %v", pages != nil, tc.paged)
			}
			if !tc.paged {
				if e.KVPageBudget != 0 {
					t.Errorf("KVPageBudget %d without paging", e.KVPageBudget)
				}
				return
			}
			per := pages.SessionBytes(e.Ctx)
			want := int64(DefaultMaxConcurrent) * per
			if b := e.Decision.BudgetBytes; b > 0 {
				want = max(min(want, b), per)
			}
			if pages.Budget() != want || e.KVPageBudget != want {
				t.Errorf("pool of %d bytes (engine says %d); want %d: %d generations of %d bytes within the policy's %d",
					pages.Budget(), e.KVPageBudget, want, DefaultMaxConcurrent, per, e.Decision.BudgetBytes)
			}
		})
	}
}
