// Package runner owns generation for every caller (the server's chat and OpenAI API, `kvlab
// run`): a Runner holds one loaded model on a backend, a pool of sequences — each a KV cache
// and the tokens it holds, reused by prefix — and a Scheduler that decides which sequences run
// in each forward pass. Generate is the sample / stop-string / streaming-detokenizer loop.
package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// Sentinel errors of generation.
var (
	// ErrContextFull: the prompt does not fit in the context.
	ErrContextFull = errors.New("the prompt does not fit in the context")
	// ErrEmptyPrompt: the prompt has no tokens.
	ErrEmptyPrompt = errors.New("the prompt is empty")
)

// Config configures a Runner.
type Config struct {
	// Cache is every sequence's cache configuration; its MaxCells is the context (the longest
	// prompt + reply).
	Cache kvcache.Config
	// Vocab is the number of logits per position.
	Vocab int
	// Keep is the number of sequences the pool keeps (idle ones with their contents, for
	// prefix reuse); at least 1.
	Keep int
	// Scheduler runs the forward passes; nil is Serial when Batch ≤ 1, else a Batching
	// scheduler of Batch sequences per pass.
	Scheduler Scheduler
	// Batch is the most sequences one forward pass runs (continuous batching) when Scheduler
	// is nil and the model is a backend.Batcher; 0 or 1 runs each generation's passes on its
	// own.
	Batch int
	// Device names the backend in results ("cpu", "cuda: …").
	Device string
	// CheckLogits, when set, checks every forward pass's logits (non-finite values are an
	// error: model.CheckLogits).
	CheckLogits func(logits []float32) error
	// OnPool, when set, is called after a sequence is taken from or returned to the pool.
	OnPool func()
	// OnPass, when set, is the Batching scheduler's BatchConfig.OnPass (Scheduler nil).
	OnPass func(decode, prefill int)
	// Arrival is the Batching scheduler's BatchConfig.Arrival (Scheduler nil): how long a
	// prompt pass started from idle waits for more prompts (0: DefaultArrival; negative: none).
	Arrival time.Duration
	// KVBudget, when positive, pages the caches (kvcache.PagePool): every sequence's cells
	// come from one pool of this many bytes, and a generation waits for room in it (Pool.Get).
	// The backend must page its caches (the CPU's does); 0 gives each sequence a contiguous
	// cache of the whole context. The page pool holds two pages per kept sequence (Keep)
	// allocated and touched ahead of need (kvcache.PagePool.KeepAhead), from start-up on: a
	// burst of Keep new generations takes a page each in its first pass (the copy of a shared
	// prompt's last page, or its first) from memory already resident.
	KVBudget int64
}

// Runner generates with one model on one backend. It is safe for concurrent use; each
// generation takes a sequence of its own.
type Runner struct {
	model backend.Model
	tok   *tokenizer.Tokenizer
	cfg   Config
	pool  *Pool
	sched Scheduler

	// bufs holds the logits buffers of ended generations for the next ones: a fresh buffer's
	// memory pages fault in inside the first pass that writes it (16 new streams: 2 MiB of a
	// 32000-token vocabulary, ~500 faults, a first-token delay on a VM where a fault costs tens
	// of µs).
	bufMu sync.Mutex
	bufs  [][]float32
}

// logitsBuf returns a zeroed buffer of Vocab logits, one an ended generation gave back when
// there is one.
func (r *Runner) logitsBuf() []float32 {
	r.bufMu.Lock()
	defer r.bufMu.Unlock()
	if n := len(r.bufs); n > 0 {
		b := r.bufs[n-1]
		r.bufs = r.bufs[:n-1]
		clear(b)
		return b
	}
	return make([]float32, r.cfg.Vocab)
}

// putLogits keeps b for the next generation, up to as many buffers as generations may run
// at once. The caller no longer uses b (a scheduler's Forward returns only once its passes
// have written their logits).
func (r *Runner) putLogits(b []float32) {
	r.bufMu.Lock()
	defer r.bufMu.Unlock()
	if len(r.bufs) < max(r.cfg.Keep, r.cfg.Batch, 1) {
		r.bufs = append(r.bufs, b)
	}
}

// New makes a runner for m and allocates one cache at once, so that a configuration the
// backend cannot hold fails here and not at the first generation.
func New(m backend.Model, tok *tokenizer.Tokenizer, cfg Config) (*Runner, error) {
	if cfg.Vocab <= 0 || cfg.Cache.MaxCells <= 0 {
		return nil, fmt.Errorf("runner: vocabulary %d and context %d must be positive", cfg.Vocab, cfg.Cache.MaxCells)
	}
	r := &Runner{model: m, tok: tok, cfg: cfg, sched: cfg.Scheduler}
	if r.sched == nil {
		r.sched = Serial{}
		if _, ok := m.(backend.Batcher); ok && cfg.Batch > 1 {
			r.sched = NewBatching(m, cfg.Vocab, BatchConfig{MaxSeqs: cfg.Batch, OnPass: cfg.OnPass, Arrival: cfg.Arrival})
		}
	}
	var err error
	if cfg.KVBudget > 0 {
		pages, err := kvcache.NewPagePool(cfg.Cache, cfg.KVBudget)
		if err != nil {
			return nil, fmt.Errorf("runner: KV budget: %w", err)
		}
		ccfg := cfg.Cache
		ccfg.Pages = pages
		if r.pool, err = NewPagedPool(func() (backend.Cache, error) { return m.NewCache(ccfg) }, max(cfg.Keep, 1), pages, ccfg.MaxCells); err != nil {
			return nil, err
		}
		pages.KeepAhead(2 * max(cfg.Keep, 1))
		return r, nil
	}
	if r.pool, err = NewPool(func() (backend.Cache, error) { return m.NewCache(cfg.Cache) }, max(cfg.Keep, 1)); err != nil {
		return nil, err
	}
	return r, nil
}

// Ctx is the capacity of each sequence in cells.
func (r *Runner) Ctx() int { return r.cfg.Cache.MaxCells }

// Scheduler is the runner's scheduler.
func (r *Runner) Scheduler() Scheduler { return r.sched }

// Pool is the runner's sequence pool.
func (r *Runner) Pool() *Pool { return r.pool }

// Pages is the runner's page pool when its caches are paged (Config.KVBudget), else nil.
func (r *Runner) Pages() *kvcache.PagePool { return r.pool.Pages() }

// Close drops the pool's idle caches and takes no more pages ahead, waiting for a slab being
// made ahead (PagePool.StopAhead); no generation may run.
func (r *Runner) Close() {
	if p := r.pool.Pages(); p != nil {
		p.StopAhead()
	}
	r.pool.Close()
}

// Params is one generation request.
type Params struct {
	Prompt []int32
	// MaxTokens caps the reply; 0 means until the context is full.
	MaxTokens int
	Sampler   sample.Config
	// Stops end the reply when the text contains one (the stop string is not returned).
	Stops []string
	// TrimLeading drops whitespace at the start of the reply (chat replies).
	TrimLeading bool
	// DropPrefixSpace drops one leading space of the reply's first text, the SentencePiece
	// dummy prefix (as llama2.c prints the first piece after BOS).
	DropPrefixSpace bool
	// Constrain, when set, restricts the tokens sampled (JSON mode); the reply ends when it is
	// done, and is completed by its Close text when it stops short.
	Constrain Constraint
	// Logprobs asks for each token's log probability in its Event, with TopLogprobs
	// alternatives.
	Logprobs    bool
	TopLogprobs int
	// PrefillChunk is how many prompt tokens one prefill pass takes (progress is reported and
	// cancellation checked between passes); 0 prefills the prompt in one pass.
	PrefillChunk int
	// KeepLast runs the reply's last token through the cache too (one more forward pass, when
	// it fits), so that the sequence holds the prompt and the whole reply: a snapshot of it then
	// continues exactly as the generation would have.
	KeepLast bool
}

// EventKind is the kind of a generation event.
type EventKind int

const (
	// EventPrefill reports prompt processing: Done of Total prompt tokens.
	EventPrefill EventKind = iota + 1
	// EventToken reports one generated token and the text it completed (possibly "").
	EventToken
)

// Event is a generation's progress, delivered in order on the generating goroutine.
type Event struct {
	Kind        EventKind
	Done, Total int
	Token       int32
	Text        string
	// N is the number of tokens generated so far; Elapsed the decode time so far.
	N       int
	Elapsed time.Duration
	// CtxUsed is the number of cells of the cache in use.
	CtxUsed int
	// Logprob is the token's log probability when Params.Logprobs asked for it.
	Logprob *TokenLogprob
}

// Stop reasons of Result.
const (
	StopEOS       = "eos"       // the model ended its turn
	StopLength    = "length"    // MaxTokens reached
	StopContext   = "context"   // the context is full
	StopString    = "stop"      // a stop string appeared
	StopCancelled = "cancelled" // the caller cancelled
)

// Result is a finished generation.
type Result struct {
	Text         string
	PromptTokens int
	// CachedTokens are the prompt tokens the sequence already held (prefix reuse);
	// Prefilled the ones this generation ran (0 when it stopped before the prefill ended).
	CachedTokens int
	Prefilled    int
	Tokens       int
	// Generated are the tokens sampled, in order (an end-of-generation token excluded).
	Generated []int32
	Stop      string
	PromptTPS float64
	DecodeTPS float64
	TTFT      time.Duration
	KVBytes   int64
	Device    string
	CtxUsed   int
	Ctx       int
}

// Generate runs one generation on a sequence from the pool: it prefills the prompt (reusing the
// longest cached prefix of a previous generation), then samples and decodes token by token,
// calling emit after each prefill pass and each token. It checks ctx before every forward pass,
// so a cancelled generation stops within one token; it then returns the partial result with
// Stop = StopCancelled and ctx's error. An error from emit (a client gone) stops it the same way.
func (r *Runner) Generate(ctx context.Context, p Params, emit func(Event) error) (Result, error) {
	cells := r.Ctx()
	res := Result{PromptTokens: len(p.Prompt), Ctx: cells, Stop: StopLength, Device: r.cfg.Device}
	if len(p.Prompt) == 0 {
		return res, ErrEmptyPrompt
	}
	if len(p.Prompt) > cells {
		return res, fmt.Errorf("%w: the prompt is %d tokens, the context %d", ErrContextFull, len(p.Prompt), cells)
	}
	smp, err := sample.New(p.Sampler)
	if err != nil {
		return res, err
	}
	// The cells the generation may fill: the prompt and every reply token but the last (the
	// last too with KeepLast), within the context.
	grow := cells
	if p.MaxTokens > 0 {
		grow = min(cells, len(p.Prompt)+p.MaxTokens)
	}
	// A batching scheduler waits for this generation's first step while the pool hands out
	// its sequence (an arrival gather of a burst, Batching.Expect).
	// While the pool makes it wait for pages (admission), the announcement is withdrawn and
	// made again once it wakes.
	expected := false
	var blocked func(bool)
	if e, ok := r.sched.(interface{ Expect() func() }); ok {
		withdraw := e.Expect()
		expected = true
		defer func() {
			if expected {
				withdraw()
			}
		}()
		blocked = func(wait bool) {
			if wait && expected {
				withdraw()
				expected = false
			} else if !wait && !expected {
				withdraw = e.Expect()
				expected = true
			}
		}
	}
	seq, err := r.pool.get(ctx, p.Prompt, grow, blocked)
	if err != nil {
		if ctx.Err() != nil {
			res.Stop = StopCancelled
		}
		return res, err
	}
	if r.cfg.OnPool != nil {
		r.cfg.OnPool()
	}
	if l, ok := r.sched.(interface{ Leave(*Sequence) }); ok {
		defer l.Leave(seq)
	}
	defer func() {
		r.pool.Put(seq)
		if r.cfg.OnPool != nil {
			r.cfg.OnPool()
		}
	}()
	var text strings.Builder
	var decodeTime time.Duration
	decoded := 0
	finish := func() {
		res.Text = text.String()
		if decoded > 0 && decodeTime > 0 {
			res.DecodeTPS = float64(decoded) / decodeTime.Seconds()
		}
		res.CtxUsed = seq.Len()
		res.KVBytes = seq.cache.Bytes()
	}
	cancelled := func(err error) (Result, error) {
		finish()
		res.Stop = StopCancelled
		return res, err
	}
	step := func(tokens []int32, logits []float32, prefill bool) error {
		st := Step{Seq: seq, Tokens: tokens, Logits: logits, Prefill: prefill, Expected: expected}
		expected = false // Forward ends the expectation, whatever it returns
		if err := r.sched.Forward(ctx, []Step{st}); err != nil {
			return err
		}
		if r.cfg.CheckLogits != nil && len(logits) > 0 {
			return r.cfg.CheckLogits(logits)
		}
		return nil
	}

	// Prefill what the cache does not hold yet.
	start := time.Now()
	res.CachedTokens = seq.Len()
	logits := r.logitsBuf()
	defer r.putLogits(logits)
	rest := p.Prompt[seq.Len():]
	total := len(rest)
	chunk := p.PrefillChunk
	if chunk <= 0 {
		chunk = total
	}
	for done := 0; done < total; {
		if err := ctx.Err(); err != nil {
			return cancelled(err)
		}
		n := min(chunk, total-done)
		out := logits[:0]
		if done+n == total {
			out = logits
		}
		if err := step(rest[done:done+n], out, true); err != nil {
			if ctx.Err() != nil {
				return cancelled(err) // cancelled during the pass
			}
			return res, err
		}
		done += n
		if err := emit(Event{Kind: EventPrefill, Done: done, Total: total, CtxUsed: seq.Len()}); err != nil {
			return cancelled(err)
		}
	}
	res.Prefilled = total
	if total > 0 {
		res.PromptTPS = float64(total) / time.Since(start).Seconds()
	}

	// The reply fills the context at most: every token but the last is run.
	maxTokens, room := p.MaxTokens, cells-len(p.Prompt)+1
	full := maxTokens <= 0 || maxTokens > room
	if full {
		maxTokens = room
	}
	stream := r.tok.NewStream(false)
	stop := newStopper(p.Stops)
	trim, strip := p.TrimLeading, p.DropPrefixSpace
	out := func(s string) string {
		if strip && s != "" {
			s, strip = strings.TrimPrefix(s, " "), false
		}
		if trim {
			s = strings.TrimLeftFunc(s, unicode.IsSpace)
			if s != "" {
				trim = false
			}
		}
		text.WriteString(s)
		return s
	}
	var masked []float32
	unfed := int32(-1) // a sampled token not yet run
	defer func() {
		if p.KeepLast && unfed >= 0 && seq.Len() < cells && ctx.Err() == nil {
			step([]int32{unfed}, logits[:0], false) // on failure the sequence holds the reply but its last token

		}
	}()
	for {
		if p.Constrain != nil && p.Constrain.Done() {
			res.Stop = StopEOS
			break
		}
		next, ok := sampleWithin(smp, logits, &masked, p.Constrain)
		if !ok || r.tok.IsEOG(next) {
			res.Stop = StopEOS
			break
		}
		var lp *TokenLogprob
		if p.Logprobs {
			lp = logprobOf(r.tok, logits, next, p.TopLogprobs)
		}
		if p.Constrain != nil {
			p.Constrain.Accept(next)
		}
		res.Generated = append(res.Generated, next)
		unfed = next
		res.Tokens++
		if res.Tokens == 1 {
			res.TTFT = time.Since(start)
		}
		piece, hit := stop.add(stream.Add(next))
		if err := emit(Event{Kind: EventToken, Token: next, Text: out(piece), N: res.Tokens, Elapsed: decodeTime, CtxUsed: seq.Len(), Logprob: lp}); err != nil {
			return cancelled(err)
		}
		if hit {
			res.Stop = StopString
			break
		}
		if res.Tokens >= maxTokens {
			if full {
				res.Stop = StopContext
			}
			break
		}
		if err := ctx.Err(); err != nil {
			return cancelled(err)
		}
		t0 := time.Now()
		err := step([]int32{next}, logits, false)
		decodeTime += time.Since(t0)
		if errors.Is(err, kvcache.ErrKVFull) {
			res.Stop = StopContext
			break
		}
		if err != nil && ctx.Err() != nil {
			return cancelled(err) // cancelled during the pass
		}
		if err != nil {
			return res, err
		}
		unfed = -1
		decoded++
		// Let other goroutines run between tokens: with every core busy decoding, a request
		// that just arrived otherwise waits for the scheduler's 10 ms time slices.
		runtime.Gosched()
	}
	if res.Stop != StopString {
		tail, hit := stop.add(stream.Flush())
		if hit {
			res.Stop = StopString
		} else {
			tail += stop.flush()
		}
		if tail != "" {
			if err := emit(Event{Kind: EventToken, Token: -1, Text: out(tail), N: res.Tokens, Elapsed: decodeTime, CtxUsed: seq.Len()}); err != nil {
				return cancelled(err)
			}
		}
	}
	if p.Constrain != nil && !p.Constrain.Done() {
		if tail := p.Constrain.Close(); tail != "" {
			if err := emit(Event{Kind: EventToken, Token: -1, Text: out(tail), N: res.Tokens, Elapsed: decodeTime, CtxUsed: seq.Len()}); err != nil {
				return cancelled(err)
			}
		}
	}
	finish()
	return res, nil
}
