package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kvlab/kvlab/internal/discover"
	"github.com/kvlab/kvlab/internal/limits"
	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/runner"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/ggufshape"
	"github.com/kvlab/kvlab/server/chattemplate"
)

// ForwardFunc is the CPU forward pass (model.Model.Forward's signature): tests wrap it to
// count or slow the calls.
type ForwardFunc = backend.ForwardFunc

// Devices of Config.Device.
const (
	DeviceCPU  = backend.CPU
	DeviceCUDA = backend.CUDA
)

// DefaultCtx is the context, in cells per sequence, that a model gets when --ctx is not given:
// its trained context, capped at this.
const DefaultCtx = 4096

// prefillChunk is how many prompt tokens one prefill pass takes: progress is reported and
// cancellation checked between passes.
const prefillChunk = 128

// Sentinel errors of generation, mapped to HTTP statuses by the handlers.
var (
	// ErrContextFull: the prompt does not fit in the model's context.
	ErrContextFull = runner.ErrContextFull
	// ErrEmptyPrompt: the prompt has no tokens and the vocabulary no BOS to start from.
	ErrEmptyPrompt = runner.ErrEmptyPrompt
)

// Engine is one loaded model ready to generate: its weights, tokenizer, chat format, the KV
// format chosen for it, and the runner (native/runner) that owns its sequences. It is safe for
// concurrent use; each generation takes a cache of its own.
type Engine struct {
	Info  discover.Model
	Model *model.Model
	Tok   *tokenizer.Tokenizer
	// Template is the chat format: the file's Jinja template, compiled, or when it has none (or
	// one that cannot be used) the built-in format its markers name.
	Template chattemplate.Format
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
	// Backend is the device the server runs on; Weights the model's weights on it.
	Backend backend.Backend
	Weights backend.Model
	// WeightBytes are the weights' bytes as the backend holds them (what the KV policy set
	// aside).
	WeightBytes int64
	// KVPageBudget is the bytes of the page pool the caches take their cells from (Config.KVBudget,
	// or its default); 0 when each cache holds its whole context.
	KVPageBudget int64

	// spill is Config.KVResident and KVSpillChunk: the caches' host-spill tail on the GPU
	// (Resident 0: none).
	spill engine.SpillOptions
	// hook wraps the CPU forward pass (Config.ForwardHook).
	hook    func(ForwardFunc) ForwardFunc
	runner  *runner.Runner
	turns   turnLog
	kv      *kvPersist // nil without Config.DataDir or off the CPU
	metrics *metrics
	running atomic.Int64
}

// loadEngine loads a model and runs the KV policy for it: kv is "auto" or a pair, sessions the
// number of caches that may be live at once.
func loadEngine(info discover.Model, cfg *Config, sessions int, m *metrics, log *slog.Logger) (*Engine, error) {
	start := time.Now()
	mdl, err := model.Load(info.Path, model.Options{Threads: cfg.Threads})
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", info.Name, err)
	}
	be := cfg.backend
	// The CPU pass fails on non-finite logits; Config.ForwardHook wraps that.
	hook := func(f ForwardFunc) ForwardFunc {
		f = finiteForward(f)
		if cfg.ForwardHook != nil {
			f = cfg.ForwardHook(f)
		}
		return f
	}
	e := &Engine{Info: info, Model: mdl, metrics: m, LoadedAt: time.Now(), Device: be.Name(), Backend: be, hook: hook}
	fail := func(err error) (*Engine, error) {
		if e.Weights != nil {
			e.Weights.Close()
		}
		mdl.Close()
		return nil, fmt.Errorf("model %s: %w", info.Name, err)
	}
	// A shape the backend does not cover is refused (the model reports the error on /system
	// and its requests fail); there is no silent CPU fallback.
	if err := be.Check(mdl.Hparams); err != nil {
		return fail(fmt.Errorf("--device %s: %w; serve it with --device cpu", cfg.Device, err))
	}
	if e.Tok, err = tokenizer.FromGGUF(mdl.File()); err != nil {
		return fail(err)
	}
	tmpl, _ := mdl.File().String("tokenizer.chat_template")
	var tmplErr error
	if e.Template, tmplErr = chatFormat(e.Tok, tmpl); tmplErr != nil {
		log.Warn("the model's chat template is not used; its conversations use the built-in format its markers name",
			"model", info.Name, "format", e.Template.Name(), "err", tmplErr)
	}
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
	// The policy budgets with the backend's own view of the weights: the CUDA loader widens
	// K-quants to f16, so the card holds more than the file's bytes.
	mem, memErr := cfg.Memory()
	e.Memory = mem
	e.WeightBytes = be.WeightBytes(mdl)
	// With a host-spill tail (Config.KVResident) the GPU holds each cache's resident cells and
	// one chunk: the policy and the memory check budget those.
	spill := engine.SpillOptions{Resident: cfg.KVResident, Chunk: cfg.KVSpillChunk}
	tail, devCells := spill.HasTail(e.Ctx), spill.DeviceCells(e.Ctx)
	e.spill = spill
	e.Pair, e.Decision, err = choosePair(cfg.userPair, e.Shape, devCells, sessions, e.WeightBytes, mem, memErr)
	if err != nil {
		return fail(err)
	}
	ccfg := mdl.CacheConfig(e.Pair, e.Ctx)
	if cfg.KVWindow < 0 || cfg.KVSinks < 0 {
		return fail(fmt.Errorf("--kv-window %d --kv-sink %d: must not be negative", cfg.KVWindow, cfg.KVSinks))
	}
	ccfg.Window, ccfg.Sinks = cfg.KVWindow, cfg.KVSinks
	// hint adds to a CUDA cache's failure to fit, without a tail, the --kv-resident that fits.
	hint := func(err error) error {
		if cfg.Device != DeviceCUDA || tail {
			return err
		}
		return fmt.Errorf("%w; %s", err, kvResidentHint(ccfg, spill.Chunk, sessions, mem.FreeBytes-e.WeightBytes-calc.DefaultReserveBytes))
	}
	if tail {
		if err := CheckKVResident(cfg.KVResident, cfg.Device, ccfg, info.Name); err != nil {
			return fail(err)
		}
	}
	dcfg := ccfg
	dcfg.MaxCells = devCells
	if err := checkCacheBudget(dcfg, sessions, mem, memErr); err != nil {
		return fail(hint(err))
	}
	if cfg.Device == DeviceCPU {
		if e.KVWarning = kvq.KernelWarning(e.Pair, ccfg.HeadDimK, ccfg.HeadDimV); e.KVWarning != "" {
			log.Warn(e.KVWarning, "model", info.Name)
		}
	}
	opts := backend.LoadOptions{Hook: e.hook, KVResident: cfg.KVResident, KVSpillChunk: cfg.KVSpillChunk}
	if cfg.ForwardHook == nil {
		// The batched pass, checked as the single one (a ForwardHook sees every pass: the CPU
		// then runs no batched pass).
		opts.BatchHook = finiteBatch
	}
	if e.Weights, err = be.Load(mdl, opts); err != nil {
		return fail(fmt.Errorf("--device %s: %w", cfg.Device, err))
	}
	var check func([]float32) error
	if cfg.Device != DeviceCPU {
		check = model.CheckLogits // the CPU pass checks its own (hook)
	}
	rcfg := runner.Config{Cache: ccfg, Vocab: mdl.Hparams.Vocab, Keep: sessions, Device: e.Device, CheckLogits: check, Batch: cfg.Batch,
		Arrival: cfg.BatchGather, OnPool: func() { m.kvBytes(e) }, OnPass: m.passes(info.Name)}
	switch {
	case cfg.KVBudget > 0:
		if cfg.Device != DeviceCPU {
			return fail(fmt.Errorf("--kv-budget pages the CPU backend's caches; --device %s keeps its own", cfg.Device))
		}
		rcfg.KVBudget = cfg.KVBudget
	case cfg.KVBudget == 0 && cfg.Device == DeviceCPU:
		var why error
		if rcfg.KVBudget, why = defaultKVBudget(ccfg, sessions, e.Decision, memErr); why != nil {
			log.Info("KV caches not paged: each generation gets its whole context up front", "model", info.Name, "reason", why)
		}
	}
	e.KVPageBudget = rcfg.KVBudget
	if e.runner, err = runner.New(e.Weights, e.Tok, rcfg); err != nil { // fail at load, not at the first request
		if errors.Is(err, cuda.ErrOutOfMemory) {
			err = hint(err)
		}
		return fail(err)
	}
	m.watch(info.Name, e.runner)
	if cfg.DataDir != "" && cfg.Device == DeviceCPU {
		if e.kv, err = newKVPersist(cfg.DataDir, runner.ModelIdentity(mdl, info.Path), cfg.SessionBytes, log); err != nil {
			log.Warn("chat turns will not persist", "model", info.Name, "err", err)
			e.kv = nil
		} else if t, k := e.kv.restore(e.runner, &e.turns, sessions); t > 0 {
			log.Info("chat turns restored", "model", info.Name, "turns", t, "kv_snapshots", k)
		}
	}
	e.LoadTime = time.Since(start)
	attrs := []any{"model", info.Name, "arch", mdl.Hparams.Arch, "device", e.Device, "ctx", e.Ctx, "kv", calc.PairName(e.Pair),
		"reason", e.Decision.Reason, "template", e.Template.Name(), "load", e.LoadTime.Round(time.Millisecond)}
	if tail {
		attrs = append(attrs, "kv_resident", cfg.KVResident, "kv_gpu_cells", devCells)
	}
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

// CheckKVResident refuses a host-spill tail past resident cells (run's and serve's
// --kv-resident; 0 asks for none) where it cannot be kept: off the GPU (device), with the FP16
// overlay (cfg.Window, cfg.Sinks: --kv-window, --kv-sink) or the f16 recent window (cfg.Recent:
// --kv-recent), or for a model with sliding-window layers (cfg.Sliding; model names it). Before
// a model is loaded cfg holds the flags' settings alone. The errors name the flags; the device
// cache's own check (native/cuda/engine's NewSpillCache) is the same.
func CheckKVResident(resident int, device string, cfg kvcache.Config, model string) error {
	switch {
	case resident == 0:
		return nil
	case resident < 0:
		return fmt.Errorf("--kv-resident %d: must not be negative", resident)
	case device != DeviceCUDA:
		return fmt.Errorf("--kv-resident %d: --device %s keeps the KV cache in host memory already; the host-spill tail is for --device cuda", resident, device)
	case cfg.Window > 0 || cfg.Sinks > 0:
		return fmt.Errorf("--kv-resident %d: the host-spill tail takes no FP16 overlay (--kv-window %d, --kv-sink %d)", resident, cfg.Window, cfg.Sinks)
	case cfg.Recent > 0:
		return fmt.Errorf("--kv-resident %d: the host-spill tail takes no --kv-recent", resident)
	case cfg.Sliding():
		return fmt.Errorf("--kv-resident %d: %s has sliding-window layers, which the host-spill tail does not take; use it without --kv-resident", resident, model)
	}
	return nil
}

// kvResidentHint is the advice for CUDA caches that do not fit the card: --kv-resident, with
// the largest value (a multiple of 32) whose GPU part of sessions caches of ccfg (the resident
// cells and a chunk each) fits avail bytes, the free memory less the weights and the reserve.
func kvResidentHint(ccfg kvcache.Config, chunk, sessions int, avail int64) string {
	n := engine.ResidentThatFits(ccfg, chunk, sessions, avail)
	const what = "--kv-resident N keeps only the first N cells of each cache on the GPU, the rest in pinned host memory"
	if n == 0 {
		return what + ", but not even a small GPU part of each fits beside the weights: lower --ctx or --max-concurrent"
	}
	return fmt.Sprintf("%s (N = %d fits beside the weights and a %s reserve)", what, n, limits.Bytes(calc.DefaultReserveBytes))
}

// defaultKVBudget is the page pool's budget when --kv-budget is not given: room for sessions
// generations of the whole context (what contiguous caches would hold, so paging never admits
// fewer), capped at the KV policy's budget (the free memory less the weights and the compute
// reserve) when it is known, and never less than one whole context. It is 0, with the reason,
// when the format pair or the cache layout cannot be paged (a mixed f16-window cache, every
// layer a sliding window).
func defaultKVBudget(ccfg kvcache.Config, sessions int, d calc.Decision, memErr error) (int64, error) {
	probe, err := kvcache.NewPagePool(ccfg, 0) // allocates nothing
	if err != nil {
		return 0, err
	}
	per := probe.SessionBytes(ccfg.MaxCells)
	b := limits.Mul(per, int64(max(sessions, 1)))
	if memErr == nil && d.BudgetBytes > 0 {
		b = min(b, d.BudgetBytes)
	}
	return max(b, per), nil
}

// chatFormat compiles a model's chat template, or returns the built-in format its markers
// name (and why the template was not used) when it has none or one that cannot be used.
func chatFormat(tok *tokenizer.Tokenizer, tmpl string) (chattemplate.Format, error) {
	kind := chattemplate.Detect(tmpl)
	if tmpl == "" {
		return kind, nil
	}
	// TokenText is "" for an absent (NoToken) BOS or EOS.
	j, err := chattemplate.Compile(tmpl, chattemplate.Options{BOS: tok.TokenText(tok.BOS()), EOS: tok.TokenText(tok.EOS()), AddBOS: tok.AddBOS()})
	if err != nil {
		return kind, err
	}
	return j, nil
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
	e.metrics.watch(e.Info.Name, nil)
	e.runner.Close()
	e.Weights.Close()
	return e.Model.Close()
}

// KVBytes is the memory held by the engine's caches, in use and kept for reuse.
func (e *Engine) KVBytes() int64 { return e.runner.Pool().Bytes() }

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
	ids, err := encodeSegments(e.Tok, segs)
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
type EventKind = runner.EventKind

// Generation events.
const (
	EventPrefill = runner.EventPrefill
	EventToken   = runner.EventToken
)

// Event is a generation's progress, delivered in order on the generating goroutine.
type Event = runner.Event

// Constraint restricts what a generation may sample (GenParams.Constrain).
type Constraint = runner.Constraint

// TokenLogprob is a generated token's log probability and its alternatives (Event.Logprob).
type TokenLogprob = runner.TokenLogprob

// Stop reasons of GenResult.
const (
	StopEOS       = runner.StopEOS       // the model ended its turn
	StopLength    = runner.StopLength    // max tokens reached or the context is full
	StopString    = runner.StopString    // a stop string appeared
	StopCancelled = runner.StopCancelled // the caller cancelled
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

// Generate runs one generation through the engine's runner (runner.Runner.Generate): the
// prompt is prefilled in passes of prefillChunk tokens, reusing the longest cached prefix of a
// previous generation. A full context ends the reply with StopLength.
func (e *Engine) Generate(ctx context.Context, p GenParams, emit func(Event) error) (GenResult, error) {
	e.running.Add(1)
	defer e.running.Add(-1)
	r, err := e.runner.Generate(ctx, runner.Params{Prompt: p.Prompt, MaxTokens: p.MaxTokens, Sampler: p.Sampler, Stops: p.Stops,
		TrimLeading: p.TrimLeading, Constrain: p.Constrain, Logprobs: p.Logprobs, TopLogprobs: p.TopLogprobs, PrefillChunk: prefillChunk,
		KeepLast: e.kv != nil && p.PromptText != ""}, emit)
	res := GenResult{Text: r.Text, PromptTokens: r.PromptTokens, CachedTokens: r.CachedTokens, Tokens: r.Tokens, Stop: r.Stop,
		PromptTPS: r.PromptTPS, DecodeTPS: r.DecodeTPS, TTFT: r.TTFT, TTFTMs: float64(r.TTFT.Microseconds()) / 1000,
		KVFormat: calc.PairName(e.Pair), KVBytes: r.KVBytes, Device: r.Device, CtxUsed: r.CtxUsed, Ctx: r.Ctx}
	if res.Stop == runner.StopContext {
		res.Stop = StopLength
	}
	if err == nil && p.PromptText != "" && (res.Stop == StopEOS || res.Stop == StopLength) && (p.Constrain == nil || p.Constrain.Done()) {
		t := turn{layout: p.PromptLayout, prompt: p.PromptText, promptTokens: p.Prompt, reply: r.Text,
			replyTokens: withText(e.Tok, r.Generated)}
		e.turns.add(t)
		if e.kv != nil {
			e.kv.save(e.runner, t, append(slices.Clone(p.Prompt), r.Generated...))
		}
	}
	if r.Prefilled > 0 {
		e.metrics.promptTokens(e.Info.Name, r.Prefilled)
	}
	if err == nil || res.Stop == StopCancelled {
		e.metrics.generated(e.Info.Name, res.Tokens, res.DecodeTPS)
	}
	return res, err
}

// withText returns the generated tokens that have text in a reply: a control token sampled
// mid-turn (<|im_start|> with max_tokens 1) writes nothing, so the next turn's rendering of the
// reply does not hold it, and keeping it would put a token there that the conversation's text
// does not have.
func withText(tok *tokenizer.Tokenizer, ids []int32) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if tok.Piece(id, false) != "" {
			out = append(out, id)
		}
	}
	return out
}

// cpuForward is the CPU forward pass as the engine runs it (Config.ForwardHook applied).
func (e *Engine) cpuForward() ForwardFunc {
	if e.hook != nil {
		return e.hook(e.Model.Forward)
	}
	return e.Model.Forward
}

// abBackend is where a live A/B's compared runs compute: the server's device, nil on the CPU
// (the lab then runs them through cpuForward).
func (e *Engine) abBackend() backend.Model {
	if e.Device == DeviceCPU {
		return nil
	}
	return e.Weights
}
