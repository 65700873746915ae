package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/ggufshape"
	"github.com/kvlab/kvlab/server/chattemplate"
)

// ForwardFunc is the engine's forward pass (model.Model.Forward's signature): tests wrap it to
// count or slow the calls.
type ForwardFunc func(tokens []int32, cache *kvcache.Cache, logits []float32) error

// DefaultCtx is the context, in cells per sequence, that a model gets when --ctx is not given:
// its trained context, capped at this.
const DefaultCtx = 4096

// prefillChunk is how many prompt tokens one prefill pass takes: progress is reported and
// cancellation checked between passes.
const prefillChunk = 128

// Sentinel errors of generation, mapped to HTTP statuses by the handlers.
var (
	// ErrContextFull: the prompt does not fit in the model's context.
	ErrContextFull = errors.New("the prompt does not fit in the context")
	// ErrEmptyPrompt: the prompt has no tokens and the vocabulary no BOS to start from.
	ErrEmptyPrompt = errors.New("the prompt is empty")
)

// Engine is one loaded model ready to generate: its weights, tokenizer, chat format, the KV
// format chosen for it and a pool of caches. It is safe for concurrent use; each generation
// takes a cache of its own.
type Engine struct {
	Info     discover.Model
	Model    *model.Model
	Tok      *tokenizer.Tokenizer
	Template chattemplate.Kind
	// Shape is the planner's view of the model, from its GGUF header.
	Shape calc.Shape
	// Pair is the KV format every cache of this engine uses; Decision is why (the auto
	// KV-tier policy's choice, or the user's pair checked against the budget).
	Pair kvq.Pair
	// KVWarning is kvq.KernelWarning for Pair on the CPU engine ("" with fast kernels or CUDA).
	KVWarning string
	Decision  calc.Decision
	// Memory is the free memory the policy was given.
	Memory MemInfo
	// Ctx is the capacity of each cache in cells: the longest prompt + reply.
	Ctx      int
	LoadedAt time.Time
	LoadTime time.Duration
	// Device is where the forward pass runs: "cpu", or "cuda: " and the GPU's name.
	Device string

	forward ForwardFunc
	// dev and devModel are the CUDA engine and the model's weights on it (--device cuda);
	// nil on the CPU.
	dev      *device
	devModel *engine.Model
	pool     *cachePool
	turns    turnLog
	metrics  *metrics
	running  atomic.Int64
}

// loadEngine loads a model and runs the KV policy for it: kv is "auto" or a pair, sessions the
// number of caches that may be live at once.
func loadEngine(info discover.Model, cfg *Config, sessions int, m *metrics, log *slog.Logger) (*Engine, error) {
	start := time.Now()
	mdl, err := model.Load(info.Path, model.Options{Threads: cfg.Threads})
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", info.Name, err)
	}
	e := &Engine{Info: info, Model: mdl, forward: finiteForward(mdl.Forward), metrics: m, LoadedAt: time.Now(), Device: DeviceCPU, dev: cfg.dev}
	fail := func(err error) (*Engine, error) {
		if e.devModel != nil {
			e.dev.closeModel(e.devModel)
		}
		mdl.Close()
		return nil, fmt.Errorf("model %s: %w", info.Name, err)
	}
	if e.dev != nil {
		// A shape the GPU forward pass does not cover is refused (the model reports the
		// error on /system and its requests fail); there is no silent CPU fallback.
		if err := engine.CheckModel(mdl.Hparams); err != nil {
			return fail(fmt.Errorf("--device cuda: %w; serve it with --device cpu", err))
		}
		e.Device = e.dev.name()
	}
	if e.Tok, err = tokenizer.FromGGUF(mdl.File()); err != nil {
		return fail(err)
	}
	tmpl, _ := mdl.File().String("tokenizer.chat_template")
	e.Template = chattemplate.Detect(tmpl)
	if e.Shape, err = ggufshape.FromFile(mdl.File()); err != nil {
		return fail(err)
	}
	if e.Shape.Name == "" {
		e.Shape.Name = info.Name
	}
	e.Ctx = cfg.Ctx
	if e.Ctx <= 0 {
		e.Ctx = DefaultCtx
		if tc := mdl.Hparams.Context; tc > 0 && tc < e.Ctx {
			e.Ctx = tc
		}
	}
	if tc := mdl.Hparams.Context; tc > 0 && e.Ctx > tc {
		log.Warn("the context is longer than the model was trained for", "model", info.Name, "ctx", e.Ctx, "trained", tc)
	}
	mem, memErr := cfg.Memory()
	e.Memory = mem
	e.Pair, e.Decision, err = choosePair(cfg.userPair, e.Shape, e.Ctx, sessions, mdl.WeightBytes(), mem, memErr)
	if err != nil {
		return fail(err)
	}
	if cfg.ForwardHook != nil {
		e.forward = cfg.ForwardHook(e.forward)
	}
	ccfg := mdl.CacheConfig(e.Pair, e.Ctx)
	if err := checkCacheBudget(ccfg, sessions, mem, memErr); err != nil {
		return fail(err)
	}
	newSlot := func() (forwarder, error) {
		c, err := kvcache.New(ccfg)
		if err != nil {
			return nil, err
		}
		return &cpuSlot{forward: e.forward, cache: c}, nil
	}
	if e.dev != nil {
		// One device model shared by every slot, one device cache per slot. ForwardHook
		// wraps the CPU pass only.
		if e.devModel, err = e.dev.loadModel(mdl); err != nil {
			return fail(fmt.Errorf("--device cuda: %w", err))
		}
		newSlot = func() (forwarder, error) { return e.dev.newSlot(e.devModel, ccfg) }
	}
	if e.dev == nil {
		if e.KVWarning = kvq.KernelWarning(e.Pair, ccfg.HeadDimK, ccfg.HeadDimV); e.KVWarning != "" {
			log.Warn(e.KVWarning, "model", info.Name)
		}
	}
	probe, err := newSlot() // fail at load, not at the first request
	if err != nil {
		return fail(err)
	}
	e.pool = &cachePool{newSlot: newSlot, keep: sessions, per: probe.Bytes()}
	e.pool.idle = []*cacheSlot{{cache: probe, used: time.Now()}}
	e.LoadTime = time.Since(start)
	attrs := []any{"model", info.Name, "arch", mdl.Hparams.Arch, "device", e.Device, "ctx", e.Ctx, "kv", calc.PairName(e.Pair),
		"reason", e.Decision.Reason, "template", string(e.Template), "load", e.LoadTime.Round(time.Millisecond)}
	switch {
	case e.Decision.UserChosen:
		log.Info("model loaded; KV format set by --kv", attrs...)
	case memErr != nil:
		log.Warn("model loaded; KV auto-tier: free memory unknown, staying f16 (set --kv to choose)", append(attrs, "err", memErr)...)
	default:
		attrs = append(attrs, "free", calc.FormatFixed(calc.ToMiB(mem.FreeBytes), 0)+" MiB", "memory", mem.Source)
		msg := "model loaded; KV auto-tier chose " + e.Decision.Format + " (set --kv to override)"
		if e.Pair == (kvq.Pair{K: kvq.F16, V: kvq.F16}) {
			log.Info(msg, attrs...)
		} else {
			log.Warn(msg, attrs...)
		}
	}
	return e, nil
}

// choosePair runs seed 000 P1's policy for one model: the user's pair when given (reported
// against the budget), else the least-compressing rung of the ladder whose caches — one per
// concurrent generation, at the full context — fit the free memory less the weights and the
// compute reserve. Without a reading of free memory it stays f16.
func choosePair(user kvq.Pair, shape calc.Shape, ctx, sessions int, weights int64, mem MemInfo, memErr error) (kvq.Pair, calc.Decision, error) {
	in := calc.PolicyInput{Shape: shape, Ctx: int64(ctx), Sessions: max(sessions, 1), TP: 1, User: user,
		Budget: calc.NewBudget(mem.FreeBytes, 0, weights, calc.DefaultReserveBytes)}
	if memErr != nil && !user.Valid() {
		f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
		in.User = f16
		d, err := calc.Decide(in)
		if err != nil {
			return kvq.Pair{}, d, err
		}
		d.UserChosen = false
		d.Reason = "f16: free memory unknown (" + memErr.Error() + ")"
		return f16, d, nil
	}
	d, err := calc.Decide(in)
	if err != nil {
		return kvq.Pair{}, d, err
	}
	return d.Choice, d, nil
}

// Close releases the model. No generation may run.
func (e *Engine) Close() error {
	e.pool.close()
	if e.devModel != nil {
		e.dev.closeModel(e.devModel)
	}
	return e.Model.Close()
}

// KVBytes is the memory held by the engine's caches, in use and kept for reuse.
func (e *Engine) KVBytes() int64 { return e.pool.bytes() }

// Running is the number of generations running on the engine.
func (e *Engine) Running() int64 { return e.running.Load() }

// BytesPerCell is the KV cost of one token in the engine's format.
func (e *Engine) BytesPerCell() float64 { return e.Shape.BytesPerToken(e.Pair, 1) }

// RenderChat renders a conversation with the model's chat format and tokenizes it.
func (e *Engine) RenderChat(msgs []chattemplate.Message) ([]int32, error) {
	ids, _, err := e.RenderChatText(msgs)
	return ids, err
}

// RenderChatText is RenderChat that also returns the prompt's text and layout. When
// the conversation continues one this engine generated, the earlier turns keep their tokens and
// only the new text is tokenized, so the cache holds the whole earlier conversation. Message
// content is never parsed for special tokens (encodeChat).
func (e *Engine) RenderChatText(msgs []chattemplate.Message) ([]int32, ChatPrompt, error) {
	segs, err := chattemplate.RenderSegments(e.Template, msgs)
	if err != nil {
		return nil, ChatPrompt{}, err
	}
	var b strings.Builder
	for _, sg := range segs {
		b.WriteString(sg.Text)
	}
	text := b.String()
	cp := ChatPrompt{Text: text, Layout: segmentLayout(segs, len(text))}
	layout := func(n int) []int { return segmentLayout(segs, n) }
	if prefix, at, ok := e.turns.match(text, layout); ok {
		var parts []tokenizer.Part
		for _, sg := range segs {
			if at >= len(sg.Text) {
				at -= len(sg.Text)
				continue
			}
			parts = append(parts, tokenizer.Part{Text: sg.Text[at:], Special: sg.Template})
			at = 0
		}
		return append(prefix, e.Tok.EncodePartsContinuation(parts)...), cp, nil
	}
	ids, err := encodeChat(e.Tok, e.Template, msgs)
	return ids, cp, err
}

// ChatPrompt is a rendered conversation's text and where its template segments are
// (GenParams.PromptText and PromptLayout).
type ChatPrompt struct {
	Text   string
	Layout []int
}

// Encode tokenizes a prompt with BOS prepended when the vocabulary asks for it; special tokens
// written as text (a chat format's markers) are parsed when special is set.
func (e *Engine) Encode(text string, special bool) ([]int32, error) {
	ids := e.Tok.Encode(text, true, special)
	if len(ids) == 0 {
		if e.Tok.BOS() == tokenizer.NoToken {
			return nil, ErrEmptyPrompt
		}
		ids = []int32{e.Tok.BOS()}
	}
	return ids, nil
}

// GenParams is one generation request.
type GenParams struct {
	Prompt []int32
	// MaxTokens caps the reply; 0 means until the context is full.
	MaxTokens int
	Sampler   sample.Config
	// Stops end the reply when the text contains one (the stop string is not returned).
	Stops []string
	// TrimLeading drops whitespace at the start of the reply (chat replies).
	TrimLeading bool
	// PromptText and PromptLayout are the chat prompt's text and template layout
	// (RenderChatText): the finished generation is then remembered so that the conversation's
	// next turn reuses its tokens.
	PromptText   string
	PromptLayout []int
	// Constrain, when set, restricts the tokens sampled (JSON mode); the reply ends when it is
	// done, and is completed by its Close text when it stops short.
	Constrain Constraint
	// Logprobs asks for each token's log probability in its Event, with TopLogprobs
	// alternatives.
	Logprobs    bool
	TopLogprobs int
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
	// Logprob is the token's log probability when GenParams.Logprobs asked for it.
	Logprob *TokenLogprob
}

// Stop reasons of GenResult.
const (
	StopEOS       = "eos"       // the model ended its turn
	StopLength    = "length"    // max tokens reached or the context is full
	StopString    = "stop"      // a stop string appeared
	StopCancelled = "cancelled" // the caller cancelled
)

// GenResult is a finished generation.
type GenResult struct {
	Text         string        `json:"text"`
	PromptTokens int           `json:"prompt_tokens"`
	CachedTokens int           `json:"cached_tokens"`
	Tokens       int           `json:"tokens"`
	Stop         string        `json:"stop"`
	PromptTPS    float64       `json:"prompt_tps"`
	DecodeTPS    float64       `json:"decode_tps"`
	TTFT         time.Duration `json:"-"`
	TTFTMs       float64       `json:"ttft_ms"`
	KVFormat     string        `json:"kv_format"`
	KVBytes      int64         `json:"kv_bytes"`
	Device       string        `json:"device,omitempty"`
	CtxUsed      int           `json:"ctx_used"`
	Ctx          int           `json:"ctx"`
}

// Generate runs one generation on a cache from the pool: it prefills the prompt (reusing the
// longest cached prefix of a previous generation), then samples and decodes token by token,
// calling emit after each prefill pass and each token. It checks ctx before every forward pass,
// so a cancelled generation stops within one token; it then returns the partial result with
// Stop = StopCancelled and ctx's error. An error from emit (a client gone) stops it the same way.
func (e *Engine) Generate(ctx context.Context, p GenParams, emit func(Event) error) (GenResult, error) {
	res := GenResult{PromptTokens: len(p.Prompt), KVFormat: calc.PairName(e.Pair), Ctx: e.Ctx, Stop: StopLength, Device: e.Device}
	if len(p.Prompt) == 0 {
		return res, ErrEmptyPrompt
	}
	if len(p.Prompt) > e.Ctx {
		return res, fmt.Errorf("%w: the prompt is %d tokens, the context %d", ErrContextFull, len(p.Prompt), e.Ctx)
	}
	smp, err := sample.New(p.Sampler)
	if err != nil {
		return res, err
	}
	e.running.Add(1)
	defer e.running.Add(-1)
	slot, err := e.pool.get(p.Prompt)
	if err != nil {
		return res, err
	}
	e.metrics.kvBytes(e)
	defer func() {
		e.pool.put(slot)
		e.metrics.kvBytes(e)
	}()
	cache := slot.cache
	res.KVBytes = cache.Bytes()
	var text strings.Builder
	var decodeTime time.Duration
	decoded := 0
	cancelled := func(err error) (GenResult, error) {
		e.finish(&res, &text, decoded, decodeTime, cache)
		res.Stop = StopCancelled
		return res, err
	}

	// Prefill what the cache does not hold yet.
	start := time.Now()
	res.CachedTokens = cache.Len()
	logits := make([]float32, e.Model.Hparams.Vocab)
	rest := p.Prompt[cache.Len():]
	total := len(rest)
	for done := 0; done < total; {
		if err := ctx.Err(); err != nil {
			return cancelled(err)
		}
		n := min(prefillChunk, total-done)
		out := logits[:0]
		if done+n == total {
			out = logits
		}
		if err := cache.Forward(rest[done:done+n], out); err != nil {
			return res, err
		}
		slot.tokens = append(slot.tokens, rest[done:done+n]...)
		done += n
		if err := emit(Event{Kind: EventPrefill, Done: done, Total: total, CtxUsed: cache.Len()}); err != nil {
			return cancelled(err)
		}
	}
	if total > 0 {
		res.PromptTPS = float64(total) / time.Since(start).Seconds()
	}
	e.metrics.promptTokens(e.Info.Name, total)

	maxTokens := p.MaxTokens
	if maxTokens <= 0 || maxTokens > e.Ctx-len(p.Prompt)+1 {
		maxTokens = e.Ctx - len(p.Prompt) + 1
	}
	stream := e.Tok.NewStream(false)
	stop := newStopper(p.Stops)
	trim := p.TrimLeading
	out := func(s string) string {
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
	var generated []int32
	for {
		if p.Constrain != nil && p.Constrain.Done() {
			res.Stop = StopEOS
			break
		}
		next, ok := sampleWithin(smp, logits, &masked, p.Constrain)
		if !ok || e.Tok.IsEOG(next) {
			res.Stop = StopEOS
			break
		}
		var lp *TokenLogprob
		if p.Logprobs {
			lp = logprobOf(e.Tok, logits, next, p.TopLogprobs)
		}
		if p.Constrain != nil {
			p.Constrain.Accept(next)
		}
		generated = append(generated, next)
		res.Tokens++
		if res.Tokens == 1 {
			res.TTFT = time.Since(start)
		}
		piece, hit := stop.add(stream.Add(next))
		if err := emit(Event{Kind: EventToken, Token: next, Text: out(piece), N: res.Tokens, Elapsed: decodeTime, CtxUsed: cache.Len(), Logprob: lp}); err != nil {
			return cancelled(err)
		}
		if hit {
			res.Stop = StopString
			break
		}
		if res.Tokens >= maxTokens {
			break
		}
		if err := ctx.Err(); err != nil {
			return cancelled(err)
		}
		t0 := time.Now()
		err := cache.Forward([]int32{next}, logits)
		decodeTime += time.Since(t0)
		if errors.Is(err, kvcache.ErrKVFull) {
			break
		}
		if err != nil {
			return res, err
		}
		slot.tokens = append(slot.tokens, next)
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
			if err := emit(Event{Kind: EventToken, Token: -1, Text: out(tail), N: res.Tokens, Elapsed: decodeTime, CtxUsed: cache.Len()}); err != nil {
				return cancelled(err)
			}
		}
	}
	if p.PromptText != "" && (res.Stop == StopEOS || res.Stop == StopLength) && (p.Constrain == nil || p.Constrain.Done()) {
		e.turns.add(turn{layout: p.PromptLayout, prompt: p.PromptText, promptTokens: p.Prompt, reply: text.String(), replyTokens: generated})
	}
	if p.Constrain != nil && !p.Constrain.Done() {
		if tail := p.Constrain.Close(); tail != "" {
			if err := emit(Event{Kind: EventToken, Token: -1, Text: out(tail), N: res.Tokens, Elapsed: decodeTime, CtxUsed: cache.Len()}); err != nil {
				return cancelled(err)
			}
		}
	}
	e.finish(&res, &text, decoded, decodeTime, cache)
	return res, nil
}

// finish fills the totals of a result.
func (e *Engine) finish(res *GenResult, text *strings.Builder, decoded int, decodeTime time.Duration, cache forwarder) {
	res.Text = text.String()
	if decoded > 0 && decodeTime > 0 {
		res.DecodeTPS = float64(decoded) / decodeTime.Seconds()
	}
	res.TTFTMs = float64(res.TTFT.Microseconds()) / 1000
	res.CtxUsed = cache.Len()
	e.metrics.generated(e.Info.Name, res.Tokens, res.DecodeTPS)
}

// stopper finds stop strings in streamed text, holding back a tail that may be the start of
// one so that no part of a stop string is ever emitted.
type stopper struct {
	stops   []string
	pending string
}

func newStopper(stops []string) *stopper {
	var s []string
	for _, x := range stops {
		if x != "" {
			s = append(s, x)
		}
	}
	return &stopper{stops: s}
}

// add appends text and returns what can be emitted; hit reports a stop string, after which the
// returned text is everything before it.
func (s *stopper) add(text string) (out string, hit bool) {
	if len(s.stops) == 0 {
		return text, false
	}
	s.pending += text
	first := -1
	for _, x := range s.stops {
		if i := strings.Index(s.pending, x); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first >= 0 {
		out, s.pending = s.pending[:first], ""
		return out, true
	}
	hold := 0
	for _, x := range s.stops {
		for k := min(len(x)-1, len(s.pending)); k > hold; k-- {
			if strings.HasSuffix(s.pending, x[:k]) {
				hold = k
				break
			}
		}
	}
	out, s.pending = s.pending[:len(s.pending)-hold], s.pending[len(s.pending)-hold:]
	return out, false
}

// flush returns the held-back text at the end of a generation.
func (s *stopper) flush() string {
	out := s.pending
	s.pending = ""
	return out
}

// cacheSlot is a cache and the tokens it holds (its committed cells, in order).
type cacheSlot struct {
	cache  forwarder
	tokens []int32
	used   time.Time
}

// cachePool hands out caches, keeping up to keep idle ones with their contents so that a
// generation whose prompt starts like an earlier one (the next turn of a chat) reuses the
// cached prefix instead of prefilling it again.
type cachePool struct {
	// newSlot makes an empty cache (on the CPU or the device).
	newSlot func() (forwarder, error)
	keep    int
	// per is the memory of one cache.
	per int64

	mu     sync.Mutex
	idle   []*cacheSlot
	inUse  int
	closed bool
}

// get returns the idle cache sharing the longest prefix with prompt (the least recently used
// on a tie), truncated to that prefix — at most len(prompt)−1 cells, so the last prompt token
// is always run to produce logits — or a new cache.
func (p *cachePool) get(prompt []int32) (*cacheSlot, error) {
	p.mu.Lock()
	best, bestLen := -1, -1
	for i, s := range p.idle {
		n := commonPrefix(s.tokens, prompt)
		if n > bestLen || (n == bestLen && s.used.Before(p.idle[best].used)) {
			best, bestLen = i, n
		}
	}
	var s *cacheSlot
	if best >= 0 && (bestLen > 0 || len(p.idle)+p.inUse >= p.keep) {
		s = p.idle[best]
		p.idle = append(p.idle[:best], p.idle[best+1:]...)
	}
	p.inUse++
	p.mu.Unlock()
	release := func(err error) (*cacheSlot, error) {
		p.mu.Lock()
		p.inUse--
		p.mu.Unlock()
		return nil, err
	}
	if s == nil {
		c, err := p.newSlot()
		if err != nil {
			return release(err)
		}
		return &cacheSlot{cache: c}, nil
	}
	keep := min(bestLen, len(prompt)-1)
	if keep < s.cache.Len() {
		// A cache that cannot truncate (the device cache, for now) is reset and the prompt
		// prefilled again.
		if keep == 0 || s.cache.Truncate(keep) != nil {
			if err := s.cache.Reset(); err != nil {
				s.cache.Free()
				return release(err)
			}
			keep = 0
		}
	}
	s.tokens = s.tokens[:keep]
	return s, nil
}

// put returns a cache to the pool, dropping the least recently used idle one past keep.
func (p *cachePool) put(s *cacheSlot) {
	s.used = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inUse--
	if p.closed || s.cache.Len() != len(s.tokens) {
		s.cache.Free()
		return
	}
	p.idle = append(p.idle, s)
	for len(p.idle) > 0 && len(p.idle)+p.inUse > p.keep {
		oldest := 0
		for i, x := range p.idle {
			if x.used.Before(p.idle[oldest].used) {
				oldest = i
			}
		}
		p.idle[oldest].cache.Free()
		p.idle = append(p.idle[:oldest], p.idle[oldest+1:]...)
	}
}

// bytes is the memory of the caches in use and kept.
func (p *cachePool) bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.per * int64(len(p.idle)+p.inUse)
}

// close drops the idle caches and keeps no more.
func (p *cachePool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.idle {
		s.cache.Free()
	}
	p.closed, p.idle = true, nil
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
