package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/backend/cpu"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// fixtureRunner loads a fixture on the CPU backend and returns a runner of ctx cells with
// sched (nil: Serial).
func fixtureRunner(t *testing.T, name string, ctx int, mk func(m backend.Model, vocab int) Scheduler) (*Runner, *tokenizer.Tokenizer) {
	t.Helper()
	m, err := model.Load(fixtures.Path(t, name), model.Options{Threads: 2})
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
	cfg := Config{Cache: m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, ctx), Vocab: m.Hparams.Vocab, Keep: 16, Device: "cpu"}
	if mk != nil {
		cfg.Scheduler = mk(dm, m.Hparams.Vocab)
	}
	r, err := New(dm, tok, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r, tok
}

var batchPrompts = []string{
	"Once upon a time",
	"Tom had a big red ball. He liked to play with it every day. His friend Sam came over and they played in the park. They ran and ran until the sun went down, and then they went home.",
	"Lily saw a cat",
	"The sun was warm and the birds sang in the trees.",
	"One day, a little boy named Tim went to the store with his mom. He wanted to buy a toy car.",
	"Sue",
	"There was a big dog. The dog was very happy. He liked to run and jump in the grass with his friends.",
	"Ben and Mia",
}

// TestBatchingMatchesAlone: 8 concurrent greedy generations through a Batching scheduler (with
// small prefill chunks, so the long prompts run in chunks between the others' decode steps)
// each give the text, token for token, of the same request run alone (one generation at a
// time on a runner of the same scheduler: the CPU's batched pass is batch-invariant), on both
// fixtures; the passes held several sequences; no goroutine is left.
func TestBatchingMatchesAlone(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "kvlab-tiny-64.gguf"} {
		t.Run(name, func(t *testing.T) {
			alone, tok := fixtureRunner(t, name, 256, func(m backend.Model, vocab int) Scheduler {
				return NewBatching(m, vocab, BatchConfig{MaxSeqs: 8, PrefillChunk: 8, PrefillTokens: 16})
			})
			var bs *Batching
			batched, _ := fixtureRunner(t, name, 256, func(m backend.Model, vocab int) Scheduler {
				bs = NewBatching(m, vocab, BatchConfig{MaxSeqs: 8, PrefillChunk: 8, PrefillTokens: 16})
				return bs
			})
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			want := make([]string, len(batchPrompts))
			params := make([]Params, len(batchPrompts))
			for i, p := range batchPrompts {
				params[i] = Params{Prompt: tok.Encode(p, true, false), MaxTokens: 48}
				res, err := alone.Generate(context.Background(), params[i], func(Event) error { return nil })
				if err != nil {
					t.Fatal(err)
				}
				want[i] = fmt.Sprint(res.Text, res.Generated)
			}
			got := make([]string, len(batchPrompts))
			var wg sync.WaitGroup
			errs := make([]error, len(batchPrompts))
			for i := range params {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := batched.Generate(context.Background(), params[i], func(Event) error { return nil })
					got[i], errs[i] = fmt.Sprint(res.Text, res.Generated), err
				}()
			}
			wg.Wait()
			for i := range got {
				if errs[i] != nil {
					t.Fatalf("generation %d: %v", i, errs[i])
				}
				if got[i] != want[i] {
					t.Errorf("generation %d: batched %q\nalone %q", i, got[i], want[i])
				}
			}
			st := bs.Stats()
			t.Logf("%d passes, %d tokens, largest pass %d sequences", st.Passes, st.Tokens, st.Max)
			if st.Max < 2 {
				t.Errorf("no pass held more than one sequence (largest %d)", st.Max)
			}
		})
	}
}

// TestBatchingPromptPass: a generation alone from an idle scheduler leaves, in Stats, its
// prompt's pass (the whole prompt in one pass): one step, a prompt step of every prompt token,
// after an arrival gather of at least ArrivalGap; the decode passes after it do not replace
// it.
func TestBatchingPromptPass(t *testing.T) {
	var bs *Batching
	r, tok := fixtureRunner(t, "stories260K.gguf", 256, func(m backend.Model, vocab int) Scheduler {
		bs = NewBatching(m, vocab, BatchConfig{MaxSeqs: 4, PrefillChunk: 256})
		return bs
	})
	prompt := tok.Encode(batchPrompts[0], true, false)
	res, err := r.Generate(context.Background(), Params{Prompt: prompt, MaxTokens: 8}, func(Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	st := bs.Stats()
	pp := st.PromptPass
	if res.Tokens < 2 || st.Passes < 2 {
		t.Fatalf("%d tokens in %d passes: the test wants decode passes after the prompt's", res.Tokens, st.Passes)
	}
	if pp.Seqs != 1 || pp.Prompts != 1 || pp.PromptTokens != len(prompt) || pp.Arrival < DefaultArrivalGap || pp.Run <= 0 {
		t.Errorf("prompt pass %+v; want 1 step, a prompt step of %d tokens, an arrival gather of at least %v, a run time", pp, len(prompt), DefaultArrivalGap)
	}
}

// TestBatchingLeave: of four concurrent generations, one is cancelled by its context and one
// by its client (emit fails) after a few tokens; both return at once with StopCancelled and
// compute no more, the other two finish as alone, and no goroutine is left.
func TestBatchingLeave(t *testing.T) {
	alone, tok := fixtureRunner(t, "stories260K.gguf", 256, func(m backend.Model, vocab int) Scheduler {
		return NewBatching(m, vocab, BatchConfig{MaxSeqs: 4, PrefillChunk: 8})
	})
	var bs *Batching
	batched, _ := fixtureRunner(t, "stories260K.gguf", 256, func(m backend.Model, vocab int) Scheduler {
		bs = NewBatching(m, vocab, BatchConfig{MaxSeqs: 4, PrefillChunk: 8})
		return bs
	})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	params := make([]Params, 4)
	want := make([]string, 4)
	for i := range params {
		params[i] = Params{Prompt: tok.Encode(batchPrompts[i], true, false), MaxTokens: 64}
		res, err := alone.Generate(context.Background(), params[i], func(Event) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res.Text
	}
	gone := errors.New("client gone")
	results := make([]Result, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range params {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			results[i], errs[i] = batched.Generate(ctx, params[i], func(e Event) error {
				switch {
				case i == 0 && e.Kind == EventToken && e.N == 5:
					cancel()
				case i == 1 && e.Kind == EventToken && e.N == 3:
					return gone
				}
				return nil
			})
		}()
	}
	wg.Wait()
	if !errors.Is(errs[0], context.Canceled) || results[0].Stop != StopCancelled || results[0].Tokens > 6 {
		t.Errorf("cancelled generation: %v, stop %q, %d tokens", errs[0], results[0].Stop, results[0].Tokens)
	}
	if !errors.Is(errs[1], gone) || results[1].Stop != StopCancelled || results[1].Tokens != 3 {
		t.Errorf("disconnected generation: %v, stop %q, %d tokens", errs[1], results[1].Stop, results[1].Tokens)
	}
	for i := 2; i < 4; i++ {
		if errs[i] != nil || results[i].Text != want[i] {
			t.Errorf("generation %d: %v, %q; alone %q", i, errs[i], results[i].Text, want[i])
		}
	}
	if st := bs.Stats(); st.Queue != 0 {
		t.Errorf("%d steps still queued", st.Queue)
	}
}

// TestBatchingCancelWhileQueued: a step whose context ends while it waits for a pass is dropped
// at once and changes nothing.
func TestBatchingCancelWhileQueued(t *testing.T) {
	r, tok := fixtureRunner(t, "stories260K.gguf", 256, func(m backend.Model, vocab int) Scheduler {
		return NewBatching(m, vocab, BatchConfig{MaxSeqs: 2})
	})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := r.Generate(ctx, Params{Prompt: tok.Encode("Once", true, false)}, func(Event) error { return nil })
	if !errors.Is(err, context.Canceled) || res.Stop != StopCancelled || res.Prefilled != 0 {
		t.Fatalf("%v, stop %q, prefilled %d", err, res.Stop, res.Prefilled)
	}
}

// TestBatchingEmptyStep: a step of no tokens is an error, not a pass.
func TestBatchingEmptyStep(t *testing.T) {
	b := NewBatching(nil, 8, BatchConfig{})
	if err := b.Forward(context.Background(), []Step{{Seq: &Sequence{}}}); err == nil {
		t.Fatal("no error")
	}
	if err := b.Forward(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// cancelInPass is a scheduler that, at its nth pass, cancels the generation while the pass runs
// and returns the context's error, as Batching does for a step cancelled inside a pass.
type cancelInPass struct {
	n, calls int
	cancel   context.CancelFunc
}

func (s *cancelInPass) Forward(ctx context.Context, batch []Step) error {
	if s.calls++; s.calls == s.n {
		s.cancel()
		return ctx.Err()
	}
	return Serial{}.Forward(ctx, batch)
}

// TestCancelledInPass: a generation cancelled while its prefill or decode pass runs ends as
// cancelled (StopCancelled and the context's error), not as a failed generation.
func TestCancelledInPass(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"prefill", 1}, {"decode", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			sched := &cancelInPass{n: tc.n}
			r, tok := fixtureRunner(t, "stories260K.gguf", 128, func(backend.Model, int) Scheduler { return sched })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sched.cancel = cancel
			res, err := r.Generate(ctx, Params{Prompt: tok.Encode("Once upon a time", true, false), MaxTokens: 20}, func(Event) error { return nil })
			if !errors.Is(err, context.Canceled) || res.Stop != StopCancelled {
				t.Fatalf("stop %q, err %v; want %q and context.Canceled", res.Stop, err, StopCancelled)
			}
		})
	}
}

// passModel is a backend.Batcher whose passes the test runs one at a time: each pass is sent
// on passes (the tokens of each step, by cache) and waits for release.
type passModel struct {
	passes  chan map[backend.Cache]int
	release chan struct{}
}

func (m *passModel) NewCache(kvcache.Config) (backend.Cache, error) { return nil, errors.New("unused") }
func (m *passModel) Describe() string                               { return "" }
func (m *passModel) Close() error                                   { return nil }
func (m *passModel) ForwardBatch(steps []backend.BatchStep) error {
	p := map[backend.Cache]int{}
	for _, st := range steps {
		p[st.Cache] = len(st.Tokens)
		st.Cache.Forward(st.Tokens, nil)
	}
	m.passes <- p
	<-m.release
	return nil
}

// TestBatchingShortPromptFirst: a short prompt queued behind two long ones starts at the next
// pass (the oldest prompt's chunk, then the fewest tokens left), not after the long prompts.
func TestBatchingShortPromptFirst(t *testing.T) {
	m := &passModel{passes: make(chan map[backend.Cache]int), release: make(chan struct{})}
	b := NewBatching(m, 10, BatchConfig{MaxSeqs: 8, PrefillChunk: 64, PrefillTokens: 128})
	var resets, frees int
	seq := func() *Sequence { return &Sequence{cache: &rigidCache{resets: &resets, frees: &frees}} }
	long1, long2, short := seq(), seq(), seq()
	ctx := context.Background()
	var wg sync.WaitGroup
	forward := func(s *Sequence, n int) {
		wg.Go(func() {
			if err := b.Forward(ctx, []Step{{Seq: s, Tokens: make([]int32, n), Prefill: true}}); err != nil {
				t.Error(err)
			}
		})
	}
	queued := func(n int) {
		for b.Stats().Queue != n {
			runtime.Gosched()
		}
	}
	forward(long1, 640)
	first := <-m.passes // long1 alone, its first chunk
	if first[long1.cache] != 64 {
		t.Fatalf("first pass %v", first)
	}
	forward(long2, 640)
	queued(1)
	forward(short, 8)
	queued(2)
	m.release <- struct{}{}
	next := <-m.passes
	if next[long1.cache] != 64 || next[short.cache] != 8 || next[long2.cache] != 0 {
		t.Errorf("the pass after the short prompt arrived ran %v chunks (long1, short, long2: %d %d %d); want 64, 8, 0",
			next, next[long1.cache], next[short.cache], next[long2.cache])
	}
	go func() {
		for range m.passes {
			m.release <- struct{}{}
		}
	}()
	m.release <- struct{}{}
	wg.Wait()
	close(m.passes)
	for _, s := range []*Sequence{long1, long2, short} {
		if len(s.tokens) != s.cache.Len() {
			t.Errorf("a sequence holds %d tokens in %d cells", len(s.tokens), s.cache.Len())
		}
	}
}

// TestBatchingArrival: a prompt pass started from idle waits (BatchConfig.Arrival) for more
// prompts until they fill a pass, so prompts sent together share one pass; without the wait,
// or once no prompt has arrived for ArrivalGap, the first prompt runs alone; a decode step
// never waits; a step cancelled during the wait leaves at once, the waiting caller's too, and
// no pass runs.
func TestBatchingArrival(t *testing.T) {
	// Each case forwards prompts steps of tokens each, one after another (while the first
	// waits, or, with alone, once the first's pass runs), and wants the first pass to hold
	// first of them.
	for _, tc := range []struct {
		name            string
		cfg             BatchConfig
		prompts, tokens int
		prefill, alone  bool
		first           int
	}{
		{"share a pass up to MaxSeqs", BatchConfig{MaxSeqs: 3, Arrival: time.Hour, ArrivalGap: time.Hour}, 3, 4, true, false, 3},
		{"share a pass up to PrefillTokens", BatchConfig{MaxSeqs: 8, PrefillChunk: 8, PrefillTokens: 16, Arrival: time.Hour, ArrivalGap: time.Hour}, 2, 8, true, false, 2},
		{"no wait", BatchConfig{MaxSeqs: 3, Arrival: -1}, 3, 4, true, true, 1},
		{"no arrival for ArrivalGap", BatchConfig{MaxSeqs: 3, Arrival: time.Hour, ArrivalGap: time.Millisecond}, 3, 4, true, true, 1},
		{"a decode step does not wait", BatchConfig{MaxSeqs: 3, Arrival: time.Hour, ArrivalGap: time.Hour}, 3, 1, false, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			m := &passModel{passes: make(chan map[backend.Cache]int), release: make(chan struct{})}
			b := NewBatching(m, 10, tc.cfg)
			var resets, frees int
			var wg sync.WaitGroup
			var first map[backend.Cache]int
			next := func() map[backend.Cache]int {
				select {
				case p := <-m.passes:
					return p
				case <-time.After(time.Minute):
					t.Fatal("no pass within a minute")
					return nil
				}
			}
			for i := range tc.prompts {
				s := &Sequence{cache: &rigidCache{resets: &resets, frees: &frees}}
				wg.Go(func() {
					if err := b.Forward(context.Background(), []Step{{Seq: s, Tokens: make([]int32, tc.tokens), Prefill: tc.prefill}}); err != nil {
						t.Error(err)
					}
				})
				switch {
				case tc.alone && i == 0:
					first = next()
				case !tc.alone && i+1 < tc.first: // the first waits: the others queue in turn
					for b.Stats().Queue != i+1 {
						runtime.Gosched()
					}
				}
			}
			if first == nil {
				first = next()
			}
			if len(first) != tc.first {
				t.Errorf("the first pass ran %d steps; want %d", len(first), tc.first)
			}
			go func() {
				for range m.passes {
					m.release <- struct{}{}
				}
			}()
			m.release <- struct{}{}
			wg.Wait()
			close(m.passes)
			if st := b.Stats(); st.Tokens != int64(tc.prompts*tc.tokens) {
				t.Errorf("%d tokens run; want %d", st.Tokens, tc.prompts*tc.tokens)
			}
		})
	}

	t.Run("cancelled while waiting", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		m := &passModel{passes: make(chan map[backend.Cache]int), release: make(chan struct{})}
		b := NewBatching(m, 10, BatchConfig{MaxSeqs: 4, Arrival: time.Hour, ArrivalGap: time.Hour})
		var resets, frees int
		forward := func(ctx context.Context) chan error {
			done := make(chan error, 1)
			s := &Sequence{cache: &rigidCache{resets: &resets, frees: &frees}}
			go func() { done <- b.Forward(ctx, []Step{{Seq: s, Tokens: make([]int32, 4), Prefill: true}}) }()
			return done
		}
		waiter, cancelWaiter := context.WithCancel(context.Background())
		defer cancelWaiter()
		queued, cancelQueued := context.WithCancel(context.Background())
		defer cancelQueued()
		first := forward(waiter)
		for b.Stats().Queue != 1 {
			runtime.Gosched()
		}
		second := forward(queued)
		for b.Stats().Queue != 2 {
			runtime.Gosched()
		}
		cancelQueued()
		if err := <-second; !errors.Is(err, context.Canceled) {
			t.Errorf("the queued step cancelled during the wait: %v", err)
		}
		cancelWaiter()
		if err := <-first; !errors.Is(err, context.Canceled) {
			t.Errorf("the waiting step cancelled: %v", err)
		}
		if st := b.Stats(); st.Queue != 0 || st.Passes != 0 {
			t.Errorf("after both left: %d steps queued, %d passes run; want none", st.Queue, st.Passes)
		}
	})
}

// TestBatchingExpect: an arrival gather waits for the first step of a generation announced by
// Expect even past ArrivalGap, so it shares the first pass; once the expectation is withdrawn
// (the generation ended before its first step, or Forward refused that step) the gap ends the
// wait as before.
func TestBatchingExpect(t *testing.T) {
	next := func(t *testing.T, m *passModel) map[backend.Cache]int {
		t.Helper()
		select {
		case p := <-m.passes:
			return p
		case <-time.After(time.Minute):
			t.Fatal("no pass within a minute")
			return nil
		}
	}
	drain := func(m *passModel) {
		go func() {
			for range m.passes {
				m.release <- struct{}{}
			}
		}()
		m.release <- struct{}{}
	}
	cfg := BatchConfig{MaxSeqs: 3, Arrival: time.Hour, ArrivalGap: time.Millisecond}

	t.Run("waits past the gap", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		m := &passModel{passes: make(chan map[backend.Cache]int), release: make(chan struct{})}
		b := NewBatching(m, 10, cfg)
		var resets, frees int
		var wg sync.WaitGroup
		b.Expect()
		b.Expect()
		for i := range 2 {
			s := &Sequence{cache: &rigidCache{resets: &resets, frees: &frees}}
			wg.Go(func() {
				if err := b.Forward(context.Background(), []Step{{Seq: s, Tokens: make([]int32, 4), Prefill: true, Expected: true}}); err != nil {
					t.Error(err)
				}
			})
			if i == 0 {
				for b.Stats().Queue != 1 {
					runtime.Gosched()
				}
				time.Sleep(20 * cfg.ArrivalGap) // many gaps: without the expectation the first runs alone
			}
		}
		if first := next(t, m); len(first) != 2 {
			t.Errorf("the first pass ran %d steps; want both expected generations", len(first))
		}
		drain(m)
		wg.Wait()
		close(m.passes)
	})

	for _, how := range []string{"withdrawn", "refused"} {
		t.Run(how, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			m := &passModel{passes: make(chan map[backend.Cache]int), release: make(chan struct{})}
			b := NewBatching(m, 10, cfg)
			var resets, frees int
			b.Expect()
			withdraw := b.Expect()
			done := make(chan error, 1)
			s := &Sequence{cache: &rigidCache{resets: &resets, frees: &frees}}
			go func() {
				done <- b.Forward(context.Background(), []Step{{Seq: s, Tokens: make([]int32, 4), Prefill: true, Expected: true}})
			}()
			for b.Stats().Queue != 1 {
				runtime.Gosched()
			}
			if how == "withdrawn" {
				withdraw()
			} else {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				o := &Sequence{cache: &rigidCache{resets: &resets, frees: &frees}}
				if err := b.Forward(ctx, []Step{{Seq: o, Tokens: make([]int32, 4), Prefill: true, Expected: true}}); !errors.Is(err, context.Canceled) {
					t.Errorf("a cancelled expected step: %v", err)
				}
			}
			if first := next(t, m); len(first) != 1 { // within a minute: the gap, not the hour
				t.Errorf("the first pass ran %d steps; want the one", len(first))
			}
			drain(m)
			if err := <-done; err != nil {
				t.Error(err)
			}
			close(m.passes)
		})
	}
}
