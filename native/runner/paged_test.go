package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
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
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/ggufshape"
)

// pagedRunner loads a fixture on the CPU backend: a runner of ctx cells in pair with a
// Batching scheduler of batch sequences, paged over budget bytes (0: contiguous caches).
func pagedRunner(t *testing.T, name string, pair kvq.Pair, ctx, batch int, budget int64) (*Runner, *tokenizer.Tokenizer, *model.Model) {
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
	cfg := Config{Cache: m.CacheConfig(pair, ctx), Vocab: m.Hparams.Vocab, Keep: 16, Device: "cpu", Batch: batch, KVBudget: budget}
	r, err := New(dm, tok, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r, tok, m
}

// TestPagedRunnerMatchesContiguous: concurrent greedy generations on paged caches (batched)
// give the text and tokens of the same requests run alone on contiguous caches, for several
// formats on both fixtures. Then three later requests whose prompts extend earlier ones run at
// once, two of them sharing one earlier sequence's pages: each gives what a contiguous cache
// continuing that earlier sequence gives (the prefix's codec state — calibration, rotation
// choice — is the earlier sequence's in both). No reservation is left with nothing running,
// every page comes back when the runner closes, and no goroutine is left.
func TestPagedRunnerMatchesContiguous(t *testing.T) {
	prompts := append([]string{}, batchPrompts...)
	// Prompts that start like others (index: the one they extend).
	later := map[int]int{8: 1, 9: 4, 10: 1}
	prompts = append(prompts, batchPrompts[1]+" The next day Tom", batchPrompts[4]+" His mom said no.", batchPrompts[1]+" Sam")
	for _, name := range []string{"stories260K.gguf", "kvlab-tiny-64.gguf"} {
		for _, ps := range []string{"f16", "q8_0/q4_0", "q4_0", "turbo3", "q2k"} {
			t.Run(name+"/"+ps, func(t *testing.T) {
				pair, err := kvq.ParsePair(ps)
				if err != nil {
					t.Fatal(err)
				}
				// The same scheduler in both: its passes are batch-invariant (Serial's are not
				// the same sums).
				alone, tok, _ := pagedRunner(t, name, pair, 256, 8, 0)
				paged, _, _ := pagedRunner(t, name, pair, 256, 8, 64<<20)
				refs := map[int]*Runner{}
				for i := range later {
					if pair.K != kvq.Q2K {
						refs[i], _, _ = pagedRunner(t, name, pair, 256, 8, 0)
					}
				}
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				params := make([]Params, len(prompts))
				want := make([]string, len(prompts))
				gen := func(r *Runner, p Params) Result {
					t.Helper()
					res, err := r.Generate(context.Background(), p, func(Event) error { return nil })
					if err != nil {
						t.Fatal(err)
					}
					return res
				}
				for i, p := range prompts {
					params[i] = Params{Prompt: tok.Encode(p, true, false), MaxTokens: 40}
				}
				for i := range prompts {
					if src, ok := later[i]; ok && pair.K != kvq.Q2K {
						// A contiguous cache continuing the earlier sequence: a runner of its own
						// that ran the earlier request, then this one.
						ref := refs[i]
						gen(ref, params[src])
						res := gen(ref, params[i])
						if res.CachedTokens == 0 {
							t.Fatalf("the contiguous reference of generation %d reused no prefix", i)
						}
						want[i] = fmt.Sprint(res.Text, res.Generated)
						ref.Close()
						continue
					}
					// q2k's K groups are not shared: its later requests prefill from scratch.
					alone.Pool().Close() // nothing to reuse
					res := gen(alone, params[i])
					want[i] = fmt.Sprint(res.Text, res.Generated)
				}
				run := func(idx []int) []Result {
					out := make([]Result, len(idx))
					errs := make([]error, len(idx))
					var wg sync.WaitGroup
					for j, i := range idx {
						wg.Go(func() {
							out[j], errs[j] = paged.Generate(context.Background(), params[i], func(Event) error { return nil })
						})
					}
					wg.Wait()
					for j, i := range idx {
						if errs[j] != nil {
							t.Fatalf("generation %d: %v", i, errs[j])
						}
						if got := fmt.Sprint(out[j].Text, out[j].Generated); got != want[i] {
							t.Errorf("generation %d: paged %q\ncontiguous %q", i, got, want[i])
						}
					}
					return out
				}
				run([]int{0, 1, 2, 3, 4, 5, 6, 7})
				used := paged.Pages().Stats().Used
				res := run([]int{8, 9, 10})
				st := paged.Pages().Stats()
				if pair.K != kvq.Q2K {
					for j, r := range res {
						if r.CachedTokens == 0 {
							t.Errorf("later generation %d reused no prefix", 8+j)
						}
					}
					// Each later sequence holds its shared prefix pages once: fewer new pages
					// than its cells.
					fresh := 0
					for _, r := range res {
						fresh += kvcache.PagesFor(r.CtxUsed)
					}
					if st.Used-used >= fresh {
						t.Errorf("the later sequences took %d new pages, as many as %d unshared ones", st.Used-used, fresh)
					}
					t.Logf("later sequences: %d new pages for %d cells (%d pages unshared)", st.Used-used, res[0].CtxUsed+res[1].CtxUsed+res[2].CtxUsed, fresh)
				}
				if st.ReservedBytes != 0 {
					t.Errorf("%d bytes still reserved with nothing running", st.ReservedBytes)
				}
				paged.Close()
				if st := paged.Pages().Stats(); st.Used != 0 || st.FixedBytes != 0 || st.ReservedBytes != 0 {
					t.Errorf("after Close: %+v", st)
				}
			})
		}
	}
}

// TestAdmissionMatchesPlan: with a KV budget and pair, the runner admits as many full-context
// generations at once as `kvlab plan` counts sessions for the same shape, budget and pair; the
// others wait for pages and start when one ends; a request larger than the whole budget fails
// at once; every page comes back.
func TestAdmissionMatchesPlan(t *testing.T) {
	for _, tc := range []struct {
		name, pair string
		budget     int64
	}{
		{"stories260K.gguf", "f16", 1<<20 + 123457},
		{"stories260K.gguf", "q8_0/q4_0", 1 << 20},
		{"kvlab-tiny-64.gguf", "q4_0", 1<<20 + 99},
	} {
		t.Run(tc.name+"/"+tc.pair, func(t *testing.T) {
			const ctx = 256
			pair, err := kvq.ParsePair(tc.pair)
			if err != nil {
				t.Fatal(err)
			}
			r, tok, m := pagedRunner(t, tc.name, pair, ctx, 16, tc.budget)
			shape, err := ggufshape.FromFile(m.File())
			if err != nil {
				t.Fatal(err)
			}
			hw, err := calc.LookupHardware("rtx-3090")
			if err != nil {
				t.Fatal(err)
			}
			req := calc.NewRequest(shape, "as given", hw)
			req.Ctx, req.BudgetBytes, req.Pairs = ctx, tc.budget, []kvq.Pair{pair}
			rep, err := calc.Plan(req)
			if err != nil {
				t.Fatal(err)
			}
			sessions := int(rep.Rows[0].Sessions)
			if sessions < 2 {
				t.Fatalf("plan gives %d sessions: pick a larger budget", sessions)
			}
			t.Logf("budget %d bytes, %s, ctx %d: plan says %d sessions (%d bytes each); a page is %d bytes",
				tc.budget, tc.pair, ctx, sessions, rep.Rows[0].KVBytes, r.Pages().PageBytes())
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

			n := sessions + 2
			ctxs := make([]context.CancelFunc, n)
			started := make(chan int, n)
			done := make(chan int, n)
			// Every generation ends before the subtest does, a failed check included (its
			// message is then reported, not lost to a later failure of a generation).
			var gens sync.WaitGroup
			defer func() {
				for _, cancel := range ctxs {
					if cancel != nil {
						cancel()
					}
				}
				gens.Wait()
			}()
			for i := 0; i < n; i++ {
				c, cancel := context.WithCancel(context.Background())
				ctxs[i] = cancel
				gens.Add(1)
				go func() {
					defer gens.Done()
					first := true
					// MaxTokens 0: every generation may fill the whole context.
					_, err := r.Generate(c, Params{Prompt: tok.Encode(fmt.Sprintf("Once upon a time %d", i), true, false)}, func(Event) error {
						if first {
							first = false
							started <- i
							<-c.Done() // hold the sequence until cancelled
						}
						return c.Err()
					})
					if err != nil && !errors.Is(err, context.Canceled) {
						t.Errorf("generation %d: %v", i, err)
					}
					done <- i
				}()
			}
			settle := func(running, waiting, starts int) map[int]bool {
				t.Helper()
				in := map[int]bool{}
				deadline := time.Now().Add(60 * time.Second)
				for {
					inUse, _, w := r.Pool().Stats()
					if inUse == running && w == waiting && len(in) >= starts {
						return in
					}
					select {
					case i := <-started:
						in[i] = true
					case <-time.After(5 * time.Millisecond):
					}
					if time.Now().After(deadline) {
						t.Fatalf("admission did not settle: %d in use, %d waiting, %d started; want %d running, %d waiting", inUse, w, len(in), running, waiting)
					}
				}
			}
			in := settle(sessions, 2, sessions)
			if len(in) != sessions {
				t.Fatalf("%d generations started, plan says %d sessions", len(in), sessions)
			}
			st := r.Pages().Stats()
			t.Logf("admitted %d = plan's %d sessions, 2 waiting; pages used %d, free %d of %d", len(in), sessions, st.Used, st.Free, st.Total)
			// The generations waiting for pages have withdrawn their batching announcement
			// (Batching.Expect): no arrival gather waits for them meanwhile.
			if b, ok := r.Scheduler().(*Batching); ok {
				coming := -1
				for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
					b.mu.Lock()
					coming = b.coming
					b.mu.Unlock()
					if coming == 0 {
						break
					}
				}
				if coming != 0 {
					t.Errorf("%d generations still announced to the batching scheduler while they wait for pages", coming)
				}
			}
			// One ends: a waiting one takes its pages.
			for i := range in {
				ctxs[i]()
				<-done
				break
			}
			more := settle(sessions, 1, 1)
			if len(more) != 1 {
				t.Fatalf("after one ended %d more started, want 1", len(more))
			}
			// Larger than the whole budget: refused at once.
			big := int(tc.budget/r.Pages().PageBytes()+1) * kvcache.PageCells
			if _, err := r.Pool().Get(context.Background(), []int32{1}, big); !errors.Is(err, ErrKVBudget) {
				t.Fatalf("a request of %d cells: %v, want ErrKVBudget", big, err)
			}
			for _, cancel := range ctxs {
				cancel()
			}
			for i := 1; i < n; i++ {
				<-done
			}
			r.Close()
			if st := r.Pages().Stats(); st.Used != 0 || st.ReservedBytes != 0 || st.FixedBytes != 0 {
				t.Fatalf("after every generation ended and Close: %+v", st)
			}
		})
	}
}

// TestPagedIdleWakesWaiter: a generation waiting for pages starts when a running one ends and
// its sequence becomes idle, even when that sequence filled every page it reserved (so no
// reservation comes back, only an idle sequence the waiter may evict): returning a sequence to
// the pool wakes the waiters. The waiter's context deadline only bounds the test when that
// wake-up is lost (it would wait forever).
func TestPagedIdleWakesWaiter(t *testing.T) {
	const ctx = kvcache.PageCells
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	probe, tok, _ := pagedRunner(t, "stories260K.gguf", f16, ctx, 4, 1<<30)
	// Room for one sequence of the whole context, not two.
	budget := probe.Pages().SessionBytes(ctx) + probe.Pages().PageBytes()/2
	r, _, _ := pagedRunner(t, "stories260K.gguf", f16, ctx, 4, budget)
	held, release := make(chan struct{}), make(chan struct{})
	first := make(chan Result, 1)
	go func() {
		once := true
		// MaxTokens 0: the reply fills the context, every reserved cell.
		res, err := r.Generate(context.Background(), Params{Prompt: tok.Encode("Once upon a time", true, false)}, func(Event) error {
			if once {
				once = false
				close(held)
				<-release
			}
			return nil
		})
		if err != nil {
			t.Errorf("first generation: %v", err)
		}
		first <- res
	}()
	<-held
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second := make(chan error, 1)
	go func() {
		_, err := r.Generate(c, Params{Prompt: tok.Encode("Tom had a big red ball", true, false), MaxTokens: 4}, func(Event) error { return nil })
		second <- err
	}()
	for {
		if _, _, waiting := r.Pool().Stats(); waiting == 1 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	if res := <-first; res.Stop != StopContext || res.CtxUsed != ctx {
		t.Fatalf("first generation: stop %q after %d cells, want %q after %d (all its reserved cells)", res.Stop, res.CtxUsed, StopContext, ctx)
	}
	if err := <-second; err != nil {
		t.Fatalf("the waiting generation: %v (not woken when the first one's sequence became idle)", err)
	}
	if inUse, idle, waiting := r.Pool().Stats(); inUse != 0 || waiting != 0 || idle != 1 {
		t.Fatalf("after both: %d in use, %d idle, %d waiting; want 0, 1 (the second's), 0", inUse, idle, waiting)
	}
}

// TestPagedUnsharableWaits: a generation whose prompt starts like an idle sequence's, on a pool
// whose pages cannot be shared (q2k K groups) and whose budget would hold it only if the
// prefix's pages were shared, evicts the idle sequence and runs; it does not spin on the prefix
// it cannot use.
func TestPagedUnsharableWaits(t *testing.T) {
	const ctx = 256
	pair := kvq.Pair{K: kvq.Q2K, V: kvq.Q4_0}
	probe, tok, _ := pagedRunner(t, "stories260K.gguf", pair, ctx, 4, 1<<30)
	pages := probe.Pages()
	prompt := tok.Encode(strings.Repeat("Once upon a time there was a little girl named Lily. ", 12), true, false)
	if len(prompt) < 2*kvcache.PageCells+1 || len(prompt) > ctx-8 {
		t.Fatalf("a prompt of %d tokens: the test wants two full pages of prefix", len(prompt))
	}
	// The idle sequence holds a whole context; sharing two pages would leave room, not sharing does not.
	budget := pages.SessionBytes(ctx) + pages.FixedBytes() + int64(kvcache.PagesFor(ctx)-1)*pages.PageBytes()
	r, _, _ := pagedRunner(t, "stories260K.gguf", pair, ctx, 4, budget)
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 {
		res, err := r.Generate(c, Params{Prompt: prompt, MaxTokens: ctx - len(prompt)}, func(Event) error { return nil })
		if err != nil {
			t.Fatalf("generation %d: %v (after %d tokens)", i, err, res.Tokens)
		}
		if res.CachedTokens != 0 {
			t.Errorf("generation %d reused %d cells of a q2k cache", i, res.CachedTokens)
		}
	}
}

// TestPagedRunnerKeepsPagesAhead: a paged runner holds two pages per kept sequence ahead of
// its first generation, none of them used, and no more than its budget holds.
func TestPagedRunnerKeepsPagesAhead(t *testing.T) {
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	r, _, _ := pagedRunner(t, "stories260K.gguf", f16, 256, 8, 64<<20)
	p := r.Pages()
	// A budget of 10 pages: fewer than the 32 kept ahead.
	small, _, _ := pagedRunner(t, "stories260K.gguf", f16, 256, 8, p.FixedBytes()+10*p.PageBytes())
	for _, pages := range []*kvcache.PagePool{p, small.Pages()} {
		want := min(2*16, pages.MaxPages())
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			st := pages.Stats()
			if st.Allocated > pages.MaxPages() || st.Used != 0 {
				t.Fatalf("budget %d bytes: %+v, want no page used and at most %d allocated", pages.Budget(), st, pages.MaxPages())
			}
			if st.Allocated == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("budget %d bytes: %+v, want %d pages allocated ahead", pages.Budget(), st, want)
			}
		}
	}
	if got := small.Pages().MaxPages(); got != 10 {
		t.Fatalf("a budget of 10 pages lets caches hold %d", got)
	}
}

// TestRunnerReusesLogits: a generation takes the logits buffer an ended one gave back (no
// new buffer while one is kept), at most as many are kept as generations may run at once, and
// a generation on a reused buffer gives what the first one gave.
func TestRunnerReusesLogits(t *testing.T) {
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	r, tok, _ := pagedRunner(t, "stories260K.gguf", f16, 256, 8, 0)
	p := Params{Prompt: tok.Encode("Once upon a time", true, false), MaxTokens: 24}
	first, err := r.Generate(context.Background(), p, func(Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.bufs) != 1 {
		t.Fatalf("%d logits buffers kept after one generation, want 1", len(r.bufs))
	}
	kept := &r.bufs[0][0]
	var during []int
	again, err := r.Generate(context.Background(), p, func(Event) error {
		r.bufMu.Lock()
		during = append(during, len(r.bufs))
		r.bufMu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(during) == 0 || slices.Max(during) != 0 {
		t.Fatalf("buffers kept while the second generation ran: %v, want 0 (it took the kept one)", during)
	}
	if len(r.bufs) != 1 || &r.bufs[0][0] != kept {
		t.Fatalf("the second generation did not give back the buffer it took")
	}
	if again.Text != first.Text || !slices.Equal(again.Generated, first.Generated) {
		t.Fatalf("on a reused buffer: %q, first %q", again.Text, first.Text)
	}
	for range 20 {
		r.putLogits(make([]float32, r.cfg.Vocab))
	}
	if n, limit := len(r.bufs), max(r.cfg.Keep, r.cfg.Batch, 1); n != limit {
		t.Fatalf("%d logits buffers kept, want the limit %d", n, limit)
	}
}
