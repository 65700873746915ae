package server

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/lab"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/kvlab/kvlab/server/api"
)

// abPlan is a validated A/B request.
type abPlan struct {
	req  api.ABRequest
	arms []lab.Arm
	eng  *Engine
	// prompt is the prompt's tokens, BOS first; forced, in text mode, the tokens fed after it
	// (N of them).
	prompt []int32
	forced []int32
}

// checkAB validates an A/B request and resolves its model; errors are apiErrors.
func (s *Server) checkAB(req api.ABRequest) (abPlan, error) {
	p := abPlan{req: req}
	if len(req.Arms) == 0 {
		return p, badRequest("arms", "arms: give at least one KV format to compare with the f16 reference")
	}
	if len(req.Arms) > api.MaxArms {
		return p, badRequest("arms", "arms: %d arms, at most %d", len(req.Arms), api.MaxArms)
	}
	if req.Window < 0 || req.Sinks < 0 {
		return p, badRequest("window", "window and sinks must not be negative")
	}
	if req.KGain < 0 || math.IsNaN(float64(req.KGain)) || math.IsInf(float64(req.KGain), 0) {
		return p, badRequest("k_gain", "k_gain %g: must be positive", req.KGain)
	}
	def := lab.ArmDefaults{Window: req.Window, Sinks: req.Sinks, KGain: req.KGain}
	for _, spec := range req.Arms {
		a, err := lab.ParseArm(spec, def)
		if err != nil {
			return p, badRequest("arms", "arms: %v", err)
		}
		p.arms = append(p.arms, a)
	}
	if p.req.N == 0 {
		p.req.N = api.DefaultN
	}
	if p.req.N < 1 || p.req.N > api.MaxN {
		return p, badRequest("n", "n %d: compare between 1 and %d positions", req.N, api.MaxN)
	}
	eng, err := s.models.get(req.Model)
	if err != nil {
		return p, err
	}
	p.eng = eng
	text := req.Prompt
	if req.Text != "" {
		if req.Prompt != "" {
			return p, badRequest("text", "give a prompt or a text, not both")
		}
		text = req.Text
	}
	p.prompt = eng.Tok.Encode(text, true, false)
	if len(p.prompt) == 0 || p.prompt[0] != eng.Tok.BOS() {
		if eng.Tok.BOS() == tokenizer.NoToken {
			if len(p.prompt) == 0 {
				return p, badRequest("prompt", "the prompt is empty and the vocabulary has no BOS token to start from")
			}
		} else {
			p.prompt = append([]int32{eng.Tok.BOS()}, p.prompt...)
		}
	}
	if req.Text != "" {
		if len(p.prompt) < p.req.N+2 {
			return p, badRequest("text", "the text is %d tokens; comparing %d positions needs at least %d", len(p.prompt), p.req.N, p.req.N+2)
		}
		cut := len(p.prompt) - p.req.N
		p.prompt, p.forced = p.prompt[:cut], p.prompt[cut:]
	}
	if len(p.prompt)+p.req.N > eng.Ctx {
		return p, &apiError{Status: 400, Type: typeInvalid, Code: "context_length_exceeded", Param: "n",
			Message: fmt.Sprintf("the prompt (%d tokens) and n (%d) need %d cells, more than the context of %d", len(p.prompt), p.req.N, len(p.prompt)+p.req.N, eng.Ctx)}
	}
	return p, nil
}

// abEvents receives a run's progress.
type abEvents struct {
	start   func(arms []api.ABArmInfo, promptTokens int) error
	prefill func(done, total int) error
	step    func(api.ABStep) error
}

// abArm is one cache under comparison.
type abArm struct {
	name    string
	cache   *kvcache.Cache
	logits  []float32
	logp    []float64
	kls     []float64
	agrees  []bool
	agree   int
	text    strings.Builder
	prefill time.Duration
	decode  time.Duration
}

// runAB runs the teacher-forced comparison of seed 003: the f16 reference and every arm prefill
// the prompt; at each of N positions the reference's greedy token is compared with each arm's
// distribution (KL(ref ‖ arm) over the full vocabulary, top-1 agreement) and then fed to every
// cache, so that every arm sees the reference's tokens. ctx is checked before every forward
// pass; a cancelled run returns what it measured with Stopped set.
func (s *Server) runAB(ctx context.Context, p abPlan, ev abEvents) (api.Run, error) {
	eng := p.eng
	cells := len(p.prompt) + p.req.N + 1
	newArm := func(name string, a lab.Arm) (*abArm, error) {
		cfg := eng.Model.CacheConfig(a.Pair, cells)
		cfg.Window, cfg.Sinks, cfg.KGain = a.Window, a.Sinks, a.KGain
		c, err := kvcache.New(cfg)
		if err != nil {
			return nil, badRequest("arms", "arm %s: %v", name, err)
		}
		v := eng.Model.Hparams.Vocab
		return &abArm{name: name, cache: c, logits: make([]float32, v), logp: make([]float64, v)}, nil
	}
	start := time.Now()
	ref, err := newArm("f16 reference", lab.Arm{Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}})
	if err != nil {
		return api.Run{}, err
	}
	arms := make([]*abArm, len(p.arms))
	info := make([]api.ABArmInfo, len(p.arms))
	for i, a := range p.arms {
		if arms[i], err = newArm(a.String(), a); err != nil {
			return api.Run{}, err
		}
		info[i] = api.ABArmInfo{Name: arms[i].name, KVBytes: arms[i].cache.Bytes(), BytesPerToken: eng.Shape.BytesPerToken(a.Pair, 1)}
	}
	mode, prompt := "continue", p.req.Prompt
	if p.forced != nil {
		mode, prompt = "text", eng.Tok.Decode(p.prompt)
	}
	run := api.Run{Kind: "ab", Source: "server", Created: start.UTC().Format(time.RFC3339Nano), Status: "complete", Model: eng.Info.Name, ModelPath: eng.Info.Path, Prompt: prompt, Mode: mode,
		PromptTokens: len(p.prompt), N: p.req.N, Window: p.req.Window, Sinks: p.req.Sinks, KGain: p.req.KGain,
		Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuName())}
	summarize := func() api.Run {
		hp := eng.Model.Hparams
		rep := &lab.ABReport{
			Model: lab.ModelInfo{Arch: hp.Arch, Layers: hp.Layers, Heads: hp.Heads, KVHeads: hp.KVHeads, HeadDimK: hp.HeadDimK,
				HeadDimV: hp.HeadDimV, Embd: hp.Embd, Vocab: hp.Vocab, Context: hp.Context, WeightType: eng.Model.WeightType().String(),
				Threads: eng.Model.Threads()},
			Settings: lab.ABSettings{Ctx: cells, N: run.Tokens, PromptTokens: len(p.prompt), TextTokens: len(p.prompt) + len(p.forced)},
			Ref:      lab.RefResult{PrefillTPS: tps(len(p.prompt), ref.prefill), DecodeTPS: tps(run.Tokens-1, ref.decode)},
			Elapsed:  time.Since(start).Seconds(),
		}
		run.Arms = make([]api.RunArm, len(arms))
		for i, a := range arms {
			series := labSeries(a.kls, a.agrees)
			ra := api.RunArm{Name: a.name, KVBytes: info[i].KVBytes, BytesPerToken: info[i].BytesPerToken, Text: a.text.String(), KL: a.kls,
				MeanKL: series.KLMean, P99KL: series.KLP99, MaxKL: series.KLMax, Top1: series.Top1,
				PrefillTPS: tps(len(p.prompt), a.prefill), DecodeTPS: tps(run.Tokens-1, a.decode)}
			run.Arms[i] = ra
			arm := p.arms[i]
			rep.Settings.Arms = append(rep.Settings.Arms, a.name)
			rep.Arms = append(rep.Arms, lab.ArmResult{Arm: a.name, Pair: arm.Pair.String(), Window: arm.Window, Sinks: arm.Sinks,
				KGain: arm.KGain, Decode: series, PrefillTPS: ra.PrefillTPS, DecodeTPS: ra.DecodeTPS, KVBytes: ra.KVBytes,
				BytesPerToken: ra.BytesPerToken})
			if arm.Pair == (kvq.Pair{K: kvq.F16, V: kvq.F16}) && arm.Window == 0 && arm.Sinks == 0 && rep.Determ.Rows == 0 {
				// A plain f16 arm is the second f16 run seed 003 asks for: it must score KL 0.
				rep.Determ = lab.Determinism{Identical: series.KLMax == 0 && series.Top1 == 1, MaxKL: series.KLMax, Rows: series.Positions}
			}
		}
		run.Report = rep
		return run
	}
	stopped := func(err error) (api.Run, error) {
		run.Stopped = true
		return summarize(), err
	}
	if err := ev.start(info, len(p.prompt)); err != nil {
		return stopped(err)
	}

	// Prefill every cache, in passes, reporting progress over all of them.
	all := append([]*abArm{ref}, arms...)
	total := len(p.prompt) * len(all)
	done := 0
	for _, a := range all {
		for at := 0; at < len(p.prompt); {
			if err := ctx.Err(); err != nil {
				return stopped(err)
			}
			n := min(prefillChunk, len(p.prompt)-at)
			out := a.logits[:0]
			if at+n == len(p.prompt) {
				out = a.logits
			}
			t0 := time.Now()
			if err := eng.forward(p.prompt[at:at+n], a.cache, out); err != nil {
				return stopped(err)
			}
			a.prefill += time.Since(t0)
			at += n
			done += n
			if err := ev.prefill(done, total); err != nil {
				return stopped(err)
			}
		}
	}
	eng.metrics.promptTokens(eng.Info.Name, total)

	// fed and ref stream the text of the fed tokens and of the reference's own top-1.
	fed, refOwn := eng.Tok.NewStream(false), eng.Tok.NewStream(false)
	var fedText, refText strings.Builder
	finish := func() {
		fedText.WriteString(fed.Flush())
		refText.WriteString(refOwn.Flush())
		run.Text, run.RefText = fedText.String(), refText.String()
	}
	for i := 0; i < p.req.N; i++ {
		top := sample.Argmax(ref.logits)
		tok := top
		if p.forced != nil {
			tok = p.forced[i]
		}
		logSoftmax(ref.logp, ref.logits)
		piece := fed.Add(tok)
		fedText.WriteString(piece)
		refPiece := piece
		if tok != top || p.forced != nil {
			refPiece = refOwn.Add(top)
		} else {
			refOwn.Add(top)
		}
		refText.WriteString(refPiece)
		step := api.ABStep{I: i, Token: tok, Text: piece, RefToken: top, RefText: refPiece, Arms: make([]api.ABArmStep, len(arms))}
		for j, a := range arms {
			logSoftmax(a.logp, a.logits)
			k := klDiv(ref.logp, a.logp)
			armTop := sample.Argmax(a.logits)
			a.kls = append(a.kls, k)
			a.agrees = append(a.agrees, armTop == top)
			text := refPiece
			if armTop == top {
				a.agree++
			} else {
				text = eng.Tok.Piece(armTop, false)
			}
			a.text.WriteString(text)
			st := api.ABArmStep{Token: armTop, Text: text, Top1: armTop == top, KL: k,
				MeanKL: mean(a.kls), Top1Rate: float64(a.agree) / float64(len(a.kls))}
			if a.decode > 0 {
				st.TPS = float64(i) / a.decode.Seconds()
			}
			step.Arms[j] = st
		}
		run.Tokens = i + 1
		s.metrics.abTokens.Inc()
		if err := ev.step(step); err != nil {
			finish()
			return stopped(err)
		}
		if i == p.req.N-1 || (p.forced == nil && eng.Tok.IsEOG(tok)) {
			break
		}
		for _, a := range all {
			if err := ctx.Err(); err != nil {
				finish()
				return stopped(err)
			}
			t0 := time.Now()
			if err := eng.forward([]int32{tok}, a.cache, a.logits); err != nil {
				return stopped(err)
			}
			a.decode += time.Since(t0)
		}
	}
	finish()
	return summarize(), nil
}

// tps is n tokens over d, 0 when nothing was timed.
func tps(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// labSeries summarizes per-position KL and agreement as the lab does: mean, nearest-rank 99th
// percentile and largest KL, and the fraction of positions whose top-1 tokens agree.
func labSeries(kl []float64, agree []bool) lab.Series {
	s := lab.Series{Positions: len(kl), KL: kl, Agree: agree}
	if len(kl) == 0 {
		return s
	}
	hits := 0
	for _, a := range agree {
		if a {
			hits++
		}
	}
	sorted := slices.Sorted(slices.Values(kl))
	s.KLMean, s.Top1 = mean(kl), float64(hits)/float64(len(kl))
	s.KLP99, s.KLMax = sorted[min(max(int(math.Ceil(0.99*float64(len(kl))))-1, 0), len(kl)-1)], sorted[len(kl)-1]
	return s
}

// logSoftmax writes log(softmax(x)) into dst, in float64.
func logSoftmax(dst []float64, x []float32) {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = max(mx, float64(v))
	}
	sum := 0.0
	for _, v := range x {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	for i, v := range x {
		dst[i] = float64(v) - lse
	}
}

// klDiv is KL(p ‖ q) = Σ p·(log p − log q) for log-probabilities lp and lq, in nats; never
// negative (rounding is clamped to 0).
func klDiv(lp, lq []float64) float64 {
	k := 0.0
	for i, a := range lp {
		if a > -745 { // exp underflows to 0 below this
			k += math.Exp(a) * (a - lq[i])
		}
	}
	return max(k, 0)
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
