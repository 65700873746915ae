package lab

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/kvlab/kvlab/report"
)

// DefaultText is a TinyStories-style text (written for kvlab) that `kvlab ab` reads when it is
// given none: about 1,400 tokens of the fixtures' vocabulary.
//
//go:embed stories.txt
var DefaultText string

// Defaults of ABConfig's zero fields.
const (
	// DefaultN is the number of teacher-forced decode positions.
	DefaultN = 64
	// DefaultCtx caps the context of a run when the model's trained context is longer.
	DefaultCtx = 512
)

// ABConfig configures an A/B run: every arm against an f16 reference on the same tokens.
type ABConfig struct {
	// Arms are measured in order.
	Arms []Arm
	// Text is the document the decode KL, prompt KL and perplexity read (BOS is prepended).
	Text string
	// Ctx is the context of a run in cells: the prompt and the teacher-forced continuation fit
	// in it, and perplexity is computed over chunks of Ctx tokens. 0 picks the model's trained
	// context capped at DefaultCtx.
	Ctx int
	// N is the number of teacher-forced decode positions; 0 picks DefaultN, fewer when the
	// text is short.
	N int
	// Needle configures the buried-fact probe.
	Needle NeedleConfig
	// Seed picks the KV rotations (tq4, the turbo tiers, the rotated formats) and the needles'
	// numbers.
	Seed uint64
	// Tap, when set, supplies the attention gate's queries instead of the model (see
	// QueryTapper); by default the model's own, when it reports them.
	Tap QueryTapper
	// Progress, when set, is called as work completes with the work units done and the total,
	// and what is running ("prefill" after each cache's prefill, "decode" after each position).
	Progress func(done, total int, stage string)

	// Tokens, when set, is the document instead of Text, already tokenized (BOS included
	// when wanted): the last N+1 tokens within Ctx are the continuation, the ones before the
	// prompt.
	Tokens []int32
	// Greedy feeds the reference's own top-1 at each position instead of the document's next
	// token: the document (Text or Tokens) is the prompt and its last token, and the decode ends
	// early after an end-of-generation token.
	Greedy bool
	// Forward, when set, replaces the model's forward pass for the prefill and decode of the
	// compared runs (the reference's tapped steps, the perplexity, needles and gate excepted).
	Forward func(tokens []int32, cache *kvcache.Cache, logits []float32) error
	// Backend, when set, is the device the compared runs (every arm's prefill and decode, the
	// determinism run, and every perplexity) compute on, in caches of its own; the f16
	// reference's decode, the needles and the attention gate stay on the CPU (they read its
	// cache and queries).
	Backend backend.Model
	// SkipPPL leaves out the perplexity (PPL 0) and SkipGate the attention errors (AttnErr
	// nil); Needle.Skip leaves out the needles.
	SkipPPL, SkipGate bool
	// OnStart, when set, is called once every cache exists, before the first forward pass,
	// with the resolved settings and each arm's cache bytes (KVBytes).
	OnStart func(s ABSettings, kvBytes []int64)
	// OnStep, when set, is called as each decode position completes: every arm and the
	// reference have read it (they decode in lockstep). ev and its Arms are valid during the
	// call only.
	OnStep func(ev StepEvent)
	// SpeedRounds, above 1, times the decode that many times: after the compared decode, the
	// reference and every arm prefill the prompt again into a fresh cache and decode the same
	// continuation, SpeedRounds − 1 more times, interleaved position by position. A position's
	// time is then its fastest round's, and DecodeTPS is N over the sum of those. The work
	// of a step is the same in every round (a mixed cache's batch quantization falls on the same
	// positions), so the fastest round drops what another process's time slices added to
	// whichever run was decoding on a shared machine, and nothing of the run's own. 0 or 1
	// times the compared decode alone, the sum of its steps.
	SpeedRounds int
}

// StepEvent is one compared decode position.
type StepEvent struct {
	// Pos is the position's index among the N compared (0-based). Token is the token scored
	// there and fed next (the document's, or with Greedy the reference's pick); RefTop1 the
	// reference's most likely token.
	Pos     int
	Token   int32
	RefTop1 int32
	// Arms are cfg.Arms at this position, in order.
	Arms []ArmStep
}

// ArmStep is one arm at one decode position.
type ArmStep struct {
	// Top1 is the arm's most likely token; Agree reports it is the reference's.
	Top1  int32
	Agree bool
	// KL is KL(f16 ‖ arm) here in nats; MeanKL and Top1Rate run over the positions so far.
	KL, MeanKL, Top1Rate float64
	// DecodeTPS is the arm's decode speed so far, tokens per second.
	DecodeTPS float64
}

// abRunner holds one run's resolved inputs and the reference's results.
type abRunner struct {
	ctx     context.Context
	m       *model.Model
	tok     *tokenizer.Tokenizer
	cfg     ABConfig
	base    kvcache.Config
	vocab   int
	tokens  []int32 // the text, BOS first
	prompt  []int32 // tokens[:P]
	cont    []int32 // tokens[P : P+N+1]: N fed, N targets
	cells   int     // P + N
	pplToks []int32
	bos     int32
	needles []needlePrompt
	cmp     *rowCompare

	ref  *forced
	gate *gateData

	done, total int
}

// RunAB measures every arm of cfg against an f16 reference on model m (see ABConfig and
// ArmResult for what is measured). It checks determinism with a second f16 run: the plain
// f16 arm when cfg has one, else an extra run. The reference, every arm and that run decode
// in lockstep, position by position (cfg.OnStep sees each position as it completes); the
// perplexity, needle and attention measurements follow, arm by arm. ctx is checked before
// every forward pass: when it ends after the decode has started, RunAB returns the report of
// what was measured (the decode series over the positions compared) with ctx's error.
func RunAB(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, cfg ABConfig) (*ABReport, error) {
	start := time.Now()
	r, err := newABRunner(ctx, m, tok, cfg)
	if err != nil {
		return nil, err
	}
	rep := &ABReport{Model: modelInfo(m), Settings: r.settings()}
	refArm := Arm{Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}}
	r.progress("f16 reference")
	det := -1 // the arm whose run is the determinism check, or len(arms) for an extra run
	for i, a := range cfg.Arms {
		if a.Pair == refArm.Pair && a.plain() {
			det = i
			break
		}
	}
	extra := det < 0
	if extra {
		det = len(cfg.Arms)
	}
	runs, err := r.decodeAll(det, extra)
	if runs == nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	defer func() {
		for _, f := range runs {
			f.run.Free()
		}
	}()
	if err == nil {
		if err = r.speedRounds(runs[:1+len(cfg.Arms)]); err != nil {
			err = fmt.Errorf("lab: speed rounds: %w", err)
		}
	}
	rep.Settings = r.settings()
	rep.QuerySource = "key-proxy"
	if r.ref.queries != nil {
		rep.QuerySource = "model"
	}
	rep.Ref.DecodePPL = r.ref.decodePPL
	rep.Ref.PrefillTPS, rep.Ref.DecodeTPS = r.ref.prefillTPS(), r.ref.decodeTPS()
	for i, a := range cfg.Arms {
		rep.Arms = append(rep.Arms, r.decodeResult(a, runs[1+i]))
	}
	if err == nil && r.cfg.N > 0 {
		rep.Determ = r.determinism(runs[1+det])
	}
	partial := func(err error) (*ABReport, error) {
		rep.Elapsed = time.Since(start).Seconds()
		return rep, err
	}
	if err != nil {
		return partial(err)
	}
	for _, f := range runs[2:] {
		f.prompt, f.decode = nil, nil // only the reference's rows are read from here on
	}
	if rep.Ref.PPL, err = r.perplexity(refArm); err != nil {
		return partial(fmt.Errorf("lab: f16 reference: %w", err))
	}
	if rep.Ref.Needle, err = r.needle(refArm); err != nil {
		return partial(fmt.Errorf("lab: f16 reference: %w", err))
	}
	if !cfg.SkipGate {
		r.gate = r.prepareGate()
	}
	for i, a := range cfg.Arms {
		r.progress(a.String())
		if err := r.measure(a, &rep.Arms[i]); err != nil {
			return partial(fmt.Errorf("lab: arm %s: %w", a, err))
		}
	}
	return partial(nil)
}

func newABRunner(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, cfg ABConfig) (*abRunner, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(cfg.Arms) == 0 {
		return nil, errors.New("lab: no arms to measure")
	}
	hp := m.Hparams
	if cfg.Ctx < 0 || cfg.N < 0 {
		return nil, fmt.Errorf("lab: context %d and n %d must not be negative", cfg.Ctx, cfg.N)
	}
	if cfg.Ctx == 0 {
		cfg.Ctx = DefaultCtx
		if hp.Context > 0 {
			cfg.Ctx = min(cfg.Ctx, hp.Context)
		}
	}
	if cfg.Text == "" {
		cfg.Text = DefaultText
	}
	r := &abRunner{ctx: ctx, m: m, tok: tok, cfg: cfg, vocab: hp.Vocab,
		base: m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, cfg.Ctx), bos: -1}
	if tok.AddBOS() {
		r.bos = tok.BOS()
	}
	if cfg.Tokens != nil {
		r.tokens = slices.Clone(cfg.Tokens)
	} else {
		r.tokens = encodeWithBOS(tok, cfg.Text)
	}
	n := cfg.N
	if cfg.Greedy {
		// The document is the prompt; the reference writes the continuation as it decodes.
		if len(r.tokens) == 0 {
			return nil, errors.New("lab: greedy decoding needs at least one token to start from")
		}
		if n == 0 {
			n = min(DefaultN, cfg.Ctx/2)
		}
		if n < 1 || len(r.tokens)+n-1 > cfg.Ctx {
			return nil, fmt.Errorf("lab: %d prompt tokens and %d decode positions need %d cells, more than the context of %d", len(r.tokens), n, len(r.tokens)+n-1, cfg.Ctx)
		}
		r.tokens = append(r.tokens, make([]int32, n)...)
		p := len(r.tokens) - n - 1
		r.cfg.N = n
		r.prompt, r.cont, r.cells = r.tokens[:p], r.tokens[p:p+n+1], p+n
	} else {
		if n == 0 {
			n = min(DefaultN, cfg.Ctx/2, len(r.tokens)/2-1)
		}
		if n < 1 || cfg.Ctx < n+2 {
			return nil, fmt.Errorf("lab: a context of %d cells with %d decode positions leaves no prompt", cfg.Ctx, n)
		}
		p := min(cfg.Ctx-n, len(r.tokens)-n-1)
		if p < 1 {
			return nil, fmt.Errorf("lab: the text is %d tokens; %d decode positions need at least %d", len(r.tokens), n, n+2)
		}
		r.cfg.N = n
		r.prompt, r.cont, r.cells = r.tokens[:p], r.tokens[p:p+n+1], p+n
	}
	for _, a := range cfg.Arms {
		if _, err := kvcache.New(a.cacheConfig(r.base, 1, cfg.Seed)); err != nil {
			return nil, fmt.Errorf("lab: arm %s: %w", a, err)
		}
	}
	var err error
	if r.needles, err = buildNeedles(tok, cfg.Needle, r.limit(), cfg.Seed); err != nil {
		return nil, err
	}
	r.cmp = newRowCompare(r.vocab)
	r.setPPL()
	runs := 1 + len(cfg.Arms)
	if !hasPlainF16(cfg.Arms) {
		runs++
	}
	per := n + 1 + r.pplChunks() + len(r.needles)
	r.total = runs*per + len(cfg.Arms) // + one gate unit per arm
	if cfg.SpeedRounds > 1 {
		r.total += (cfg.SpeedRounds - 1) * (1 + len(cfg.Arms)) * (n + 1)
	}
	return r, nil
}

// setPPL picks the perplexity's tokens: the document, when it fills a chunk of Ctx. With
// Greedy the document ends with the reference's continuation, so it is set again once that is
// written.
func (r *abRunner) setPPL() {
	r.pplToks = nil
	if !r.cfg.SkipPPL && len(r.tokens) >= r.cfg.Ctx && r.cfg.Ctx >= 4 {
		r.pplToks = r.tokens
	}
}

func hasPlainF16(arms []Arm) bool {
	for _, a := range arms {
		if a.Pair.K == kvq.F16 && a.Pair.V == kvq.F16 && a.plain() {
			return true
		}
	}
	return false
}

// limit is the longest prompt a needle may use: the run's context within the model's.
func (r *abRunner) limit() int {
	l := r.cfg.Ctx
	if c := r.m.Hparams.Context; c > 0 {
		l = min(l, c)
	}
	return l
}

func (r *abRunner) pplChunks() int {
	if r.pplToks == nil {
		return 0
	}
	return len(r.pplToks) / r.cfg.Ctx
}

func (r *abRunner) settings() ABSettings {
	s := ABSettings{Ctx: r.cfg.Ctx, N: r.cfg.N, PromptTokens: len(r.prompt), TextTokens: len(r.tokens),
		PPLChunks: r.pplChunks(), Seed: r.cfg.Seed}
	if r.cfg.SpeedRounds > 1 {
		s.SpeedRounds = r.cfg.SpeedRounds
	}
	for _, a := range r.cfg.Arms {
		s.Arms = append(s.Arms, a.String())
	}
	if len(r.needles) > 0 {
		nc := r.cfg.Needle.withDefaults(r.limit())
		s.NeedleDepths, s.NeedleTrials, s.NeedleTokens = nc.Depths, nc.Trials, nc.Tokens
	}
	return s
}

func (r *abRunner) progress(stage string) {
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.done, r.total, stage)
	}
}

func (r *abRunner) step(stage string, n int) {
	r.done += n
	r.progress(stage)
}

func modelInfo(m *model.Model) ModelInfo {
	hp := m.Hparams
	return ModelInfo{Arch: hp.Arch, Layers: hp.Layers, Heads: hp.Heads, KVHeads: hp.KVHeads,
		HeadDimK: hp.HeadDimK, HeadDimV: hp.HeadDimV, Embd: hp.Embd, Vocab: hp.Vocab, Context: hp.Context,
		WeightType: m.WeightType().String(), Threads: m.Threads()}
}

// encodeWithBOS tokenizes text with BOS first, as `kvlab run` does.
func encodeWithBOS(tok *tokenizer.Tokenizer, text string) []int32 {
	t := tok.Encode(text, true, false)
	if tok.BOS() >= 0 && (len(t) == 0 || t[0] != tok.BOS()) {
		t = append([]int32{tok.BOS()}, t...)
	}
	return t
}

// forced is one teacher-forced run: the prompt's logits, the decode rows, their timings and
// the cache they left.
type forced struct {
	prompt, decode    []float32 // P × vocab, N × vocab
	prefill, decoding time.Duration
	// steps are the decode positions' wall times: the compared decode's, then the fastest of
	// the speed rounds (ABConfig.SpeedRounds).
	steps []time.Duration
	// run is the cache the run computes in; cache is its native/kvcache cache when the run is
	// on the CPU (the reference always is), nil on another backend.
	run       backend.Cache
	cache     *kvcache.Cache
	decodePPL float64
	// queries, with a model that reports them (reference run only), are the decode steps'
	// queries per layer: queries[l] holds len(qPos) rows of Heads × HeadDimK values.
	queries          [][]float32
	qPos             []int
	nPrompt, nDecode int

	// row is the decode scratch row when the rows are not kept; last the latest decode row.
	row, last []float32
	nll       float64 // Σ −log p of the continuation's tokens so far
	// kl and agree are the decode positions' scores against the reference so far.
	kl                         []float64
	agree                      []bool
	hits                       int
	klSum                      float64
	decodeSeries, promptSeries Series
}

func (f *forced) prefillTPS() float64 {
	return float64(f.nPrompt) / max(f.prefill.Seconds(), 1e-9)
}

func (f *forced) decodeTPS() float64 {
	if f.nDecode == 0 {
		return 0
	}
	var d time.Duration
	for _, t := range f.steps[:f.nDecode] {
		d += t
	}
	return float64(f.nDecode) / max(d.Seconds(), 1e-9)
}

// QueryTapper is a forward pass that reports the attention queries: Forward's contract, and tap
// is called for every layer with the post-RoPE queries of positions pos0 … pos0+n−1 (n ×
// Heads × HeadDimK values, valid during the call). *model.Model implements it, so the
// attention gate uses the model's real queries; other forward passes fall back to the key proxy.
type QueryTapper interface {
	ForwardTap(tokens []int32, cache *kvcache.Cache, logits []float32, tap func(layer, pos0, n int, q []float32)) error
}

// maxTapped is the number of decode steps whose queries the reference run keeps.
const maxTapped = 16

// newRun makes a run's cache: on cfg.Backend for a compared run when it is set, else a
// native/kvcache cache read through the run's CPU forward pass.
func (r *abRunner) newRun(compared bool, cfg kvcache.Config) (backend.Cache, *kvcache.Cache, error) {
	if compared && r.cfg.Backend != nil {
		c, err := r.cfg.Backend.NewCache(cfg)
		return c, nil, err
	}
	kv, err := kvcache.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cpuRun{kv, r.forward}, kv, nil
}

// cpuRun is a native/kvcache cache with a CPU forward pass, as a backend.Cache.
type cpuRun struct {
	*kvcache.Cache
	forward func(tokens []int32, cache *kvcache.Cache, logits []float32) error
}

func (c cpuRun) Forward(tokens []int32, logits []float32) error {
	return c.forward(tokens, c.Cache, logits)
}
func (c cpuRun) Reset() error { c.Cache.Reset(); return nil }
func (c cpuRun) Free()        {}

// forward is the run's forward pass: cfg.Forward, else the model's.
func (r *abRunner) forward(tokens []int32, cache *kvcache.Cache, logits []float32) error {
	if r.cfg.Forward != nil {
		return r.cfg.Forward(tokens, cache, logits)
	}
	return r.m.Forward(tokens, cache, logits)
}

// decodeAll runs the teacher-forced comparison in lockstep: the f16 reference (r.ref, runs[0],
// whose queries it taps), every arm (runs[1:1+len(arms)]) and, when extra, a second f16 run
// for the determinism check, each prefill the prompt with every position's logits and are then
// fed the continuation one token at a time; at each position every arm's row is compared with
// the reference's and cfg.OnStep is told. The reference's rows are kept, and those of run
// 1+det (the determinism check); every arm's decode and prompt series are in its forced.
// With cfg.Greedy the continuation is the reference's own top-1 at each position, and the
// decode ends early after an end-of-generation token. On an error after the caches exist it
// returns the runs with the positions completed (r.cfg.N and r.cells shrink to them).
func (r *abRunner) decodeAll(det int, extra bool) ([]*forced, error) {
	arms := r.cfg.Arms
	all := append([]Arm{{Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}}}, arms...)
	if extra {
		all = append(all, all[0])
	}
	v, n, p := r.vocab, r.cfg.N, len(r.prompt)
	runs := make([]*forced, len(all))
	kvBytes := make([]int64, len(arms))
	for i, a := range all {
		run, cache, err := r.newRun(i > 0, a.cacheConfig(r.base, r.cfg.Ctx, r.cfg.Seed))
		if err != nil {
			for _, f := range runs[:i] {
				f.run.Free()
			}
			if i == 0 {
				return nil, fmt.Errorf("f16 reference: %w", err)
			}
			return nil, fmt.Errorf("arm %s: %w", a, err)
		}
		keep := i == 0 || i == 1+det
		f := &forced{run: run, cache: cache, nPrompt: p, row: make([]float32, v), steps: make([]time.Duration, n)}
		if keep {
			f.decode = make([]float32, n*v)
		}
		if p > 0 {
			f.prompt = make([]float32, p*v)
		}
		runs[i] = f
		if i >= 1 && i <= len(arms) {
			kvBytes[i-1] = run.Bytes()
		}
	}
	r.ref = runs[0]
	if r.cfg.OnStart != nil {
		r.cfg.OnStart(r.settings(), kvBytes)
	}
	// cut ends the decode after done positions (an error or an early end).
	cut := func(done int, err error) ([]*forced, error) {
		r.cfg.N, r.cells = done, p+done
		r.cont = r.cont[:done+1]
		if r.cfg.Greedy {
			r.tokens = r.tokens[:p+done+1]
			r.setPPL()
		}
		for i, f := range runs {
			f.nDecode = done
			if f.decode != nil {
				f.decode = f.decode[:done*v]
			}
			if done > 0 {
				f.decodePPL = math.Exp(f.nll / float64(done))
			}
			if i >= 1 {
				f.decodeSeries = summarize(f.kl, f.agree)
			}
		}
		return runs, err
	}
	for i, f := range runs {
		if err := r.ctx.Err(); err != nil {
			return cut(0, err)
		}
		if p > 0 {
			t0 := time.Now()
			if err := f.run.Forward(r.prompt, f.prompt); err != nil {
				return cut(0, err)
			}
			f.prefill = time.Since(t0)
		}
		r.step("prefill", 1)
		if i >= 1 {
			f.promptSeries = r.compareRows(r.ref.prompt, f.prompt)
			if i != 1+det {
				f.prompt = nil
			}
		}
	}
	tapper := r.cfg.Tap
	if tapper == nil {
		tapper, _ = any(r.m).(QueryTapper)
	}
	hp := r.m.Hparams
	every := (n + maxTapped - 1) / maxTapped // tap every so many steps, the last one included
	if tapper != nil {
		r.ref.queries = make([][]float32, hp.Layers)
	}
	lp := make([]float64, v)
	var ev StepEvent
	if r.cfg.OnStep != nil {
		ev.Arms = make([]ArmStep, len(arms))
	}
	for t := 0; t < n; t++ {
		for k := range runs {
			// The reference first (with Greedy it picks the token the others are fed), then
			// the others in an order that rotates by position: none always follows it.
			i := k
			if k > 0 {
				i = 1 + (k-1+t)%(len(runs)-1)
			}
			f := runs[i]
			if err := r.ctx.Err(); err != nil {
				return cut(t, err)
			}
			row := f.row
			if f.decode != nil {
				row = f.decode[t*v : (t+1)*v]
			}
			t0 := time.Now()
			var err error
			if keep := i == 0 && tapper != nil && (n-1-t)%every == 0 && len(f.qPos) < maxTapped; keep {
				pos := f.cache.Len()
				err = tapper.ForwardTap(r.cont[t:t+1], f.cache, row, func(layer, pos0, cnt int, q []float32) {
					f.queries[layer] = append(f.queries[layer], q[:hp.Heads*hp.HeadDimK]...)
				})
				f.qPos = append(f.qPos, pos)
			} else {
				err = f.run.Forward(r.cont[t:t+1], row)
			}
			f.steps[t] = time.Since(t0)
			f.decoding += f.steps[t]
			if err != nil {
				return cut(t, err)
			}
			f.last = row
			if i == 0 && r.cfg.Greedy {
				r.cont[t+1] = int32(argmax(row))
			}
			logSoftmax(lp, row)
			f.nll -= lp[r.cont[t+1]]
		}
		r.step("decode", len(runs))
		for i, f := range runs[1:] {
			kl, agree, _ := r.cmp.compare(r.ref.last, f.last, -1)
			f.kl, f.agree = append(f.kl, kl), append(f.agree, agree)
			if agree {
				f.hits++
			}
			f.klSum += kl
			if ev.Arms != nil && i < len(arms) {
				ev.Arms[i] = ArmStep{Top1: int32(argmax(f.last)), Agree: agree, KL: kl,
					MeanKL: f.klSum / float64(t+1), Top1Rate: float64(f.hits) / float64(t+1),
					DecodeTPS: float64(t+1) / max(f.decoding.Seconds(), 1e-9)}
			}
		}
		if ev.Arms != nil {
			ev.Pos, ev.Token, ev.RefTop1 = t, r.cont[t+1], int32(argmax(r.ref.last))
			r.cfg.OnStep(ev)
		}
		if r.cfg.Greedy && t < n-1 && r.tok.IsEOG(r.cont[t+1]) {
			r.step("decode", (n-1-t)*len(runs)) // the positions left out
			return cut(t+1, nil)
		}
	}
	return cut(n, nil)
}

// speedRounds decodes the continuation ABConfig.SpeedRounds − 1 more times for timing: the
// reference and the arms (runs, in that order) each prefill the prompt into a fresh cache of
// their own, then decode in lockstep, their order rotating by position and round, and every
// position keeps its fastest time in its run's steps.
func (r *abRunner) speedRounds(runs []*forced) error {
	rounds, n := r.cfg.SpeedRounds-1, r.cfg.N
	if rounds <= 0 || n == 0 {
		return nil
	}
	all := append([]Arm{{Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}}}, r.cfg.Arms...)
	caches := make([]backend.Cache, 0, len(runs))
	defer func() {
		for _, c := range caches {
			c.Free()
		}
	}()
	for i := range runs {
		c, _, err := r.newRun(i > 0, all[i].cacheConfig(r.base, r.cfg.Ctx, r.cfg.Seed))
		if err != nil {
			return err
		}
		caches = append(caches, c)
	}
	row := make([]float32, r.vocab)
	for round := 0; round < rounds; round++ {
		for _, c := range caches {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			if err := c.Reset(); err != nil {
				return err
			}
			if len(r.prompt) > 0 {
				if err := c.Forward(r.prompt, nil); err != nil {
					return err
				}
			}
			r.step("speed", 1)
		}
		for t := 0; t < n; t++ {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			for k := range caches {
				i := (k + t + round) % len(caches)
				t0 := time.Now()
				if err := caches[i].Forward(r.cont[t:t+1], row); err != nil {
					return err
				}
				runs[i].steps[t] = min(runs[i].steps[t], time.Since(t0))
			}
			r.step("speed", len(caches))
		}
	}
	return nil
}

// decodeResult is an arm's result from its decode run alone.
func (r *abRunner) decodeResult(a Arm, run *forced) ArmResult {
	res := ArmResult{Arm: a.String(), Pair: a.Pair.String(), Window: a.Window, Recent: a.Recent, Sinks: a.Sinks, KGain: a.KGain}
	if res.KGain == 1 {
		res.KGain = 0
	}
	res.Decode, res.Prompt = run.decodeSeries, run.promptSeries
	res.DecodePPL = run.decodePPL
	res.PrefillTPS, res.DecodeTPS = run.prefillTPS(), run.decodeTPS()
	res.KVBytes = run.run.Bytes()
	res.BytesPerToken = a.cacheConfig(r.base, 1, 0).BytesPerToken()
	return res
}

// measure adds an arm's perplexity, needles and attention errors to res.
func (r *abRunner) measure(a Arm, res *ArmResult) error {
	var err error
	if res.PPL, err = r.perplexity(a); err != nil {
		return err
	}
	if res.Needle, err = r.needle(a); err != nil {
		return err
	}
	if r.gate != nil {
		if res.AttnErr, err = r.attentionErrors(a); err != nil {
			return err
		}
		for _, e := range res.AttnErr {
			res.AttnErrMean += e / float64(len(res.AttnErr))
		}
	}
	r.step("attention", 1)
	return nil
}

// compareRows scores an arm's rows against the reference's, row by row.
func (r *abRunner) compareRows(ref, arm []float32) Series {
	v := r.vocab
	n := len(ref) / v
	kl, agree := make([]float64, n), make([]bool, n)
	for i := 0; i < n; i++ {
		kl[i], agree[i], _ = r.cmp.compare(ref[i*v:(i+1)*v], arm[i*v:(i+1)*v], -1)
	}
	return summarize(kl, agree)
}

// determinism compares a second plain f16 run with the reference, bit for bit.
func (r *abRunner) determinism(run *forced) Determinism {
	d := Determinism{Identical: true}
	v := r.vocab
	for _, pair := range [][2][]float32{{r.ref.prompt, run.prompt}, {r.ref.decode, run.decode}} {
		ref, got := pair[0], pair[1]
		for i := 0; i+v <= len(ref); i += v {
			d.Rows++
			for j := i; j < i+v; j++ {
				if math.Float32bits(ref[j]) != math.Float32bits(got[j]) {
					d.Identical = false
					break
				}
			}
			kl, _, _ := r.cmp.compare(ref[i:i+v], got[i:i+v], -1)
			d.MaxKL = max(d.MaxKL, kl)
		}
	}
	return d
}

// perplexity is Perplexity of the text through arm's cache at Ctx, 0 when the text is shorter
// than one chunk: on cfg.Backend when set, else the model's own forward pass on the CPU.
func (r *abRunner) perplexity(a Arm) (float64, error) {
	if r.pplToks == nil {
		return 0, nil
	}
	cfg := a.cacheConfig(r.base, r.cfg.Ctx, r.cfg.Seed)
	var cache backend.Cache
	if r.cfg.Backend != nil {
		c, err := r.cfg.Backend.NewCache(cfg)
		if err != nil {
			return 0, err
		}
		defer c.Free()
		cache = c
	} else {
		kv, err := kvcache.New(cfg)
		if err != nil {
			return 0, err
		}
		cache = cpuRun{kv, r.m.Forward}
	}
	p, err := Perplexity(cache, r.m.Hparams.Vocab, r.pplToks, r.cfg.Ctx, r.bos, func(done, total int, ppl float64) {
		r.step("perplexity", 1)
	})
	if err != nil {
		return 0, err
	}
	return p.PPL, r.ctx.Err()
}

// The report's documents live in package report (which imports no engine code); these names
// keep lab's API.
type (
	ABReport     = report.ABReport
	ModelInfo    = report.ModelInfo
	ABSettings   = report.ABSettings
	RefResult    = report.RefResult
	Determinism  = report.Determinism
	ArmResult    = report.ArmResult
	NeedleResult = report.NeedleResult
	NeedleTrial  = report.NeedleTrial
	Series       = report.Series
)
