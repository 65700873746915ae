package server

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kvlab/kvlab/internal/limits"
	"github.com/kvlab/kvlab/native/lab"
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
	if req.KGain < 0 || math.IsNaN(float64(req.KGain)) || math.IsInf(float64(req.KGain), 0) || req.KGain > limits.MaxKGain {
		return p, badRequest("k_gain", "k_gain %g: must be positive, at most %g", req.KGain, limits.MaxKGain)
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
	if err := checkArmBounds(p.arms, eng.Ctx); err != nil {
		return p, err
	}
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
	if err := eng.checkABSpill(p.arms, len(p.prompt)+p.req.N); err != nil {
		return p, err
	}
	if err := s.checkABMemory(p, len(p.prompt)+p.req.N); err != nil {
		return p, err
	}
	return p, nil
}

// checkABSpill refuses, on a server whose GPU caches keep a host-spill tail (serve
// --kv-resident), an arm with the FP16 overlay (+w, +s, window, sinks) or an f16 recent window
// (+p) whose caches of cells cells would take a tail, which takes neither: the error names the
// arm, the conflict and the flag, before any run (the device's own refusal came after the
// reference's).
func (e *Engine) checkABSpill(arms []lab.Arm, cells int) error {
	if !e.spill.HasTail(cells) {
		return nil
	}
	for _, a := range arms {
		var what string
		switch {
		case a.Window > 0 || a.Sinks > 0:
			what = fmt.Sprintf("FP16 overlay (window %d, sinks %d)", a.Window, a.Sinks)
		case a.Recent > 0:
			what = fmt.Sprintf("f16 recent window (+p%d)", a.Recent)
		default:
			continue
		}
		return badRequest("arms", "arms: %s: this server keeps the cells of a cache past the first %d in host memory (serve --kv-resident %d), and that host-spill tail takes no %s: compare it on a server without --kv-resident, or with a prompt and n of at most %d tokens",
			a, e.spill.Resident, e.spill.Resident, what, e.spill.Resident)
	}
	return nil
}

// abEvents receives a run's progress.
type abEvents struct {
	start   func(arms []api.ABArmInfo, promptTokens int) error
	prefill func(done, total int) error
	step    func(api.ABStep) error
}

// runAB runs the teacher-forced comparison of seed 003 with lab.RunAB: the f16 reference and
// every arm prefill the prompt and then read the same tokens in lockstep (the reference's
// greedy continuation, or in text mode the text's last N tokens); at each position each arm's
// distribution is compared with the reference's (KL(ref ‖ arm) over the full vocabulary,
// top-1 agreement) and streamed. After the decode the lab adds the prompt KL, a one-chunk
// perplexity of the prompt and continuation and the attention-output errors; the needles
// are left out (they take long prompts and much longer than the decode). ctx is checked before
// every forward pass; a cancelled run returns what it measured with Stopped set.
func (s *Server) runAB(ctx context.Context, p abPlan, ev abEvents) (api.Run, error) {
	eng := p.eng
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var evErr error // the first error of an event handler: it ends the run
	fail := func(err error) {
		if err != nil && evErr == nil {
			evErr = err
			cancel()
		}
	}
	mode, prompt := "continue", p.req.Prompt
	if p.forced != nil {
		mode, prompt = "text", eng.Tok.Decode(p.prompt)
	}
	run := api.Run{Kind: "ab", Source: "server", Created: start.UTC().Format(time.RFC3339Nano), Status: "complete", Model: eng.Info.Name, ModelPath: eng.Info.Path, Prompt: prompt, Mode: mode,
		PromptTokens: len(p.prompt), N: p.req.N, Window: p.req.Window, Sinks: p.req.Sinks, KGain: p.req.KGain,
		Machine: fmt.Sprintf("%s/%s, %d CPUs, %s; on %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuName(), eng.Device), Device: eng.Device}

	info := make([]api.ABArmInfo, len(p.arms))
	texts := make([]strings.Builder, len(p.arms))
	caches := 1 + len(p.arms) // the reference, the arms and the determinism run without an f16 arm
	if !slices.ContainsFunc(p.arms, func(a lab.Arm) bool { return a.String() == "f16" }) {
		caches++
	}
	prefilled := 0
	// fed and refOwn stream the text of the fed tokens and of the reference's own top-1.
	fed, refOwn := eng.Tok.NewStream(false), eng.Tok.NewStream(false)
	var fedText, refText strings.Builder
	tokens := slices.Concat(p.prompt, p.forced)
	cfg := lab.ABConfig{Arms: p.arms, Tokens: tokens, Ctx: len(p.prompt) + p.req.N, N: p.req.N, Greedy: p.forced == nil,
		Needle: lab.NeedleConfig{Skip: true}, Forward: eng.cpuForward(), Backend: eng.abBackend(),
		OnStart: func(_ lab.ABSettings, kvBytes []int64) {
			for i, a := range p.arms {
				info[i] = api.ABArmInfo{Name: a.String(), KVBytes: kvBytes[i], BytesPerToken: eng.Shape.BytesPerToken(a.Pair, 1)}
			}
			fail(ev.start(info, len(p.prompt)))
		},
		Progress: func(_, _ int, stage string) {
			if stage == "prefill" && evErr == nil {
				prefilled++
				fail(ev.prefill(prefilled*len(p.prompt), caches*len(p.prompt)))
			}
		},
		OnStep: func(e lab.StepEvent) {
			if evErr != nil {
				return
			}
			piece := fed.Add(e.Token)
			fedText.WriteString(piece)
			refPiece := piece
			if e.Token != e.RefTop1 || p.forced != nil {
				refPiece = refOwn.Add(e.RefTop1)
			} else {
				refOwn.Add(e.RefTop1)
			}
			refText.WriteString(refPiece)
			step := api.ABStep{I: e.Pos, Token: e.Token, Text: piece, RefToken: e.RefTop1, RefText: refPiece, Arms: make([]api.ABArmStep, len(e.Arms))}
			for j, a := range e.Arms {
				text := refPiece
				if !a.Agree {
					text = eng.Tok.Piece(a.Top1, false)
				}
				texts[j].WriteString(text)
				step.Arms[j] = api.ABArmStep{Token: a.Top1, Text: text, Top1: a.Agree, KL: a.KL, MeanKL: a.MeanKL, Top1Rate: a.Top1Rate, TPS: a.DecodeTPS}
			}
			run.Tokens = e.Pos + 1
			s.metrics.abTokens.Inc()
			fail(ev.step(step))
		},
	}
	rep, err := lab.RunAB(ctx, eng.Model, eng.Tok, cfg)
	if evErr != nil {
		err = evErr
	}
	if rep == nil {
		if err == nil || ctx.Err() != nil {
			run.Stopped = true
			return run, err
		}
		return api.Run{}, badRequest("arms", "%v", err)
	}
	eng.metrics.promptTokens(eng.Info.Name, prefilled*len(p.prompt))
	fedText.WriteString(fed.Flush())
	refText.WriteString(refOwn.Flush())
	run.Text, run.RefText = fedText.String(), refText.String()
	run.Stopped = err != nil
	rep.Settings.Ctx = cfg.Ctx
	run.Arms = make([]api.RunArm, len(rep.Arms))
	for i, a := range rep.Arms {
		run.Arms[i] = api.RunArm{Name: a.Arm, KVBytes: a.KVBytes, BytesPerToken: info[i].BytesPerToken, Text: texts[i].String(),
			KL: a.Decode.KL, MeanKL: a.Decode.KLMean, P99KL: a.Decode.KLP99, MaxKL: a.Decode.KLMax, Top1: a.Decode.Top1,
			PrefillTPS: a.PrefillTPS, DecodeTPS: a.DecodeTPS, PromptKL: a.Prompt.KLMean, PPL: a.PPL, AttnErrMean: a.AttnErrMean,
			NeedleOK: a.Needle.OK, NeedleTotal: a.Needle.Total}
	}
	run.Report = rep
	return run, err
}
