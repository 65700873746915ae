package lab

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/tokenizer"
)

func TestParseArm(t *testing.T) {
	def := ArmDefaults{Window: 64, Sinks: 8, KGain: 1}
	for _, tc := range []struct {
		spec string
		want Arm
		str  string
	}{
		{"q4_0", Arm{Pair: kvq.Pair{K: kvq.Q4_0, V: kvq.Q4_0}, Window: 64, Sinks: 8, KGain: 1}, "q4_0+w64+s8"},
		{"q2k+g1.1", Arm{Pair: kvq.Pair{K: kvq.Q2K, V: kvq.Q4_0}, Window: 64, Sinks: 8, KGain: 1.1}, "q2k+w64+s8+g1.1"},
		{"q8_0/q4_0+w0+s0", Arm{Pair: kvq.Pair{K: kvq.Q8_0, V: kvq.Q4_0}, KGain: 1}, "q8_0/q4_0"},
		{" f16 +w32", Arm{Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}, Window: 32, Sinks: 8, KGain: 1}, "f16+w32+s8"},
		{"q4_0+p256", Arm{Pair: kvq.Pair{K: kvq.Q4_0, V: kvq.Q4_0}, Recent: 256, Sinks: 8, KGain: 1}, "q4_0+p256+s8"},
		{"q4_0+p64+s0", Arm{Pair: kvq.Pair{K: kvq.Q4_0, V: kvq.Q4_0}, Recent: 64, KGain: 1}, "q4_0+p64"},
		{"turbo3+w0+s0+l0-1=turbo4/turbo3+l3=q4_0", Arm{Pair: kvq.Pair{K: kvq.Turbo3, V: kvq.Turbo3}, KGain: 1, Layers: []LayerPair{
			{From: 0, To: 1, Pair: kvq.Pair{K: kvq.Turbo4, V: kvq.Turbo3}}, {From: 3, To: 3, Pair: kvq.Pair{K: kvq.Q4_0, V: kvq.Q4_0}}}},
			"turbo3+l0-1=turbo4/turbo3+l3=q4_0"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			a, err := ParseArm(tc.spec, def)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, tc.want) || a.String() != tc.str {
				t.Errorf("ParseArm = %+v (%s), want %+v (%s)", a, a, tc.want, tc.str)
			}
			back, err := ParseArm(a.String(), ArmDefaults{})
			if err != nil || back.String() != a.String() {
				t.Errorf("%s does not read back: %+v, %v", a, back, err)
			}
		})
	}
	for _, bad := range []string{"q9_0", "q4_0+x3", "q4_0+w", "q4_0+w-1", "q4_0+w8+p8", "q4_0+p-3", "q4_0+p", "q4_0+gabc", "q4_0/q2k", "q4_0+g-1",
		"q4_0+l", "q4_0+l0", "q4_0+l1-0=q8_0", "q4_0+l-1=q8_0", "q4_0+lx=q8_0", "q4_0+l0=q9_0", "q4_0+l0-=q8_0", "q4_0+l5000=q8_0"} {
		if _, err := ParseArm(bad, ArmDefaults{}); err == nil {
			t.Errorf("ParseArm(%q) accepted", bad)
		}
	}
	arms, err := ParseArms(DefaultArms, ArmDefaults{})
	if err != nil || len(arms) != 9 {
		t.Fatalf("DefaultArms: %v, %v", arms, err)
	}
	if _, err := ParseArms(" , ", ArmDefaults{}); err == nil {
		t.Error("an empty list was accepted")
	}
}

func TestCompareRows(t *testing.T) {
	rc := newRowCompare(4)
	for _, tc := range []struct {
		name     string
		ref, arm []float32
		kl       float64
		top1     bool
	}{
		{"identical", []float32{1, 2, 3, 4}, []float32{1, 2, 3, 4}, 0, true},
		{"shifted logits are the same distribution", []float32{1, 2, 3, 4}, []float32{11, 12, 13, 14}, 0, true},
		// p = (½, ½, 0, 0) vs q = (¼, ¼, ¼, ¼): KL = log 2.
		{"half vs quarter", []float32{0, 0, -1e30, -1e30}, []float32{0, 0, 0, 0}, math.Ln2, true},
		{"top-1 moves", []float32{0, 5, 0, 0}, []float32{5, 0, 0, 0}, math.NaN(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kl, top1, _ := rc.compare(tc.ref, tc.arm, -1)
			if top1 != tc.top1 {
				t.Errorf("top-1 agreement %v, want %v", top1, tc.top1)
			}
			if !math.IsNaN(tc.kl) && math.Abs(kl-tc.kl) > 1e-12 {
				t.Errorf("KL %g, want %g", kl, tc.kl)
			}
			if kl < 0 {
				t.Errorf("negative KL %g", kl)
			}
		})
	}
	if _, _, nll := rc.compare([]float32{0, 0, 0, 0}, []float32{0, 0, 0, 0}, 2); math.Abs(nll-math.Log(4)) > 1e-12 {
		t.Errorf("−log p of a uniform row: %g, want log 4", nll)
	}
}

func TestSummarize(t *testing.T) {
	kl := make([]float64, 200)
	agree := make([]bool, 200)
	for i := range kl {
		kl[i] = float64(i)
		agree[i] = i%4 != 0
	}
	s := summarize(kl, agree)
	if s.KLMean != 99.5 || s.KLP99 != 197 || s.KLMax != 199 || s.Top1 != 0.75 || s.Positions != 200 {
		t.Errorf("summary %+v", s)
	}
	if p := percentile([]float64{3, 1, 2}, 0.99); p != 3 {
		t.Errorf("p99 of three values: %g", p)
	}
	if s := summarize(nil, nil); s.Positions != 0 || s.KLMean != 0 {
		t.Errorf("empty summary %+v", s)
	}
}

func TestNeedlePromptsFollowTheRetrievalFormat(t *testing.T) {
	tok := loadTokenizer(t, "kvlab-tiny-64.gguf")
	ns, err := buildNeedles(tok, NeedleConfig{Trials: 2}, 256, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 6 {
		t.Fatalf("%d prompts, want 3 depths × 2", len(ns))
	}
	for _, n := range ns {
		text := tok.Decode(n.tokens)
		if !strings.HasSuffix(text, needleQuestion) || !strings.Contains(text, "The secret number is "+n.trial.Want+".") {
			t.Errorf("prompt %q does not hold the fact %s and end with the question", text, n.trial.Want)
		}
		if len(n.tokens) > 200 || len(n.tokens) < 150 {
			t.Errorf("prompt of %d tokens, want about 200", len(n.tokens))
		}
		hay := len(n.tokens) - len(tok.Encode(needleQuestion, false, false)) - len(tok.Encode(" The secret number is "+n.trial.Want+".", false, false))
		if frac := float64(n.trial.Pos) / float64(hay); math.Abs(frac-n.trial.Depth) > 0.12 {
			t.Errorf("fact at token %d of a %d-token haystack, want depth %g", n.trial.Pos, hay, n.trial.Depth)
		}
	}
	if _, err := buildNeedles(tok, NeedleConfig{Depths: []float64{1.5}}, 256, 7); err == nil {
		t.Error("depth 1.5 accepted")
	}
	if ns, err := buildNeedles(tok, NeedleConfig{Skip: true}, 256, 7); err != nil || ns != nil {
		t.Errorf("Skip built %d prompts, %v", len(ns), err)
	}
}

var (
	modelsMu sync.Mutex
	models   = map[string]*model.Model{}
)

// loadModel loads a fixture once per test binary, with one thread so results do not depend on
// the machine.
func loadModel(t *testing.T, name string) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	path := fixtures.Path(t, name)
	modelsMu.Lock()
	defer modelsMu.Unlock()
	m, ok := models[name]
	if !ok {
		var err error
		if m, err = model.Load(path, model.Options{Threads: 1}); err != nil {
			t.Fatal(err)
		}
		models[name] = m
	}
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	return m, tok
}

func loadTokenizer(t *testing.T, name string) *tokenizer.Tokenizer {
	_, tok := loadModel(t, name)
	return tok
}

// TestRunABOnTinyModel runs a short A/B on the head_dim-64 fixture: the f16 arm scores KL
// exactly 0 and is bit-identical (determinism), q8_0 costs less than q4_0, perplexity is
// model.Perplexity's, the reference retrieves its needles, and the attention gate is 0 for
// f16 and grows as the format shrinks.
func TestRunABOnTinyModel(t *testing.T) {
	m, tok := loadModel(t, "kvlab-tiny-64.gguf")
	arms, err := ParseArms("f16,q8_0,q4_0,q2k+w32+s4+g1.1", ArmDefaults{})
	if err != nil {
		t.Fatal(err)
	}
	var calls, last, total int
	text := DefaultText[:2000]
	rep, err := RunAB(context.Background(), m, tok, ABConfig{Arms: arms, N: 12, Ctx: 128, Text: text,
		Needle: NeedleConfig{Trials: 1, Depths: []float64{0.5}},
		Progress: func(done, tot int, _ string) {
			calls++
			if done < last || done > tot {
				t.Errorf("progress %d of %d after %d", done, tot, last)
			}
			last, total = done, tot
		}})
	if err != nil {
		t.Fatal(err)
	}
	if last != total || calls == 0 {
		t.Errorf("progress ended at %d of %d", last, total)
	}
	if !rep.Determ.Identical || rep.Determ.MaxKL != 0 || rep.Determ.Rows != 128 {
		t.Errorf("determinism %+v, want identical over 128 rows", rep.Determ)
	}
	if rep.Settings.PromptTokens != 116 || rep.Settings.N != 12 || rep.Settings.Ctx != 128 {
		t.Errorf("settings %+v", rep.Settings)
	}
	byArm := map[string]ArmResult{}
	for _, a := range rep.Arms {
		byArm[a.Arm] = a
	}
	f16, q8, q4, q2 := byArm["f16"], byArm["q8_0"], byArm["q4_0"], byArm["q2k+w32+s4+g1.1"]
	if f16.Decode.KLMean != 0 || f16.Prompt.KLMean != 0 || f16.Decode.Top1 != 1 || f16.AttnErrMean != 0 {
		t.Errorf("f16 arm: %+v %+v attn %g; want exactly 0 KL, 100%% top-1, 0 attention error", f16.Decode, f16.Prompt, f16.AttnErrMean)
	}
	if !(q8.Decode.KLMean < q4.Decode.KLMean && q8.Prompt.KLMean < q4.Prompt.KLMean && q8.AttnErrMean < q4.AttnErrMean) {
		t.Errorf("q8_0 (decode %g, prompt %g, attn %g) should cost less than q4_0 (%g, %g, %g)",
			q8.Decode.KLMean, q8.Prompt.KLMean, q8.AttnErrMean, q4.Decode.KLMean, q4.Prompt.KLMean, q4.AttnErrMean)
	}
	if len(q2.AttnErr) != m.Hparams.Layers || q2.Window != 32 || q2.Sinks != 4 || q2.KGain != 1.1 {
		t.Errorf("q2k arm %+v", q2)
	}
	if rep.Ref.Needle.Total != 1 || rep.Ref.Needle.OK != 1 {
		t.Errorf("the f16 reference missed its needle: %+v", rep.Ref.Needle)
	}
	// Perplexity is lab.Perplexity's, so `kvlab ppl` prints the same number.
	cache, err := kvcache.New(m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 128))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Perplexity(cpuRun{cache, m.Forward}, m.Hparams.Vocab, encodeWithBOS(tok, text), 128, tok.BOS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ref.PPL != p.PPL || f16.PPL != p.PPL {
		t.Errorf("perplexity %g (reference) and %g (f16 arm), Perplexity %g", rep.Ref.PPL, f16.PPL, p.PPL)
	}
	if q4.PPL <= p.PPL*0.99 || q2.BytesPerToken >= q4.BytesPerToken || q4.BytesPerToken >= q8.BytesPerToken {
		t.Errorf("q4_0 PPL %g vs f16 %g; bytes per token q2k %g, q4_0 %g, q8_0 %g", q4.PPL, p.PPL, q2.BytesPerToken, q4.BytesPerToken, q8.BytesPerToken)
	}
	if len(f16.Decode.KL) != 12 || len(f16.Prompt.KL) != 116 {
		t.Errorf("series lengths %d and %d", len(f16.Decode.KL), len(f16.Prompt.KL))
	}
}

// TestRunABWithoutF16Arm checks the determinism run happens when no arm is plain f16, and that
// a run is cancelled between forward passes.
func TestRunABWithoutF16Arm(t *testing.T) {
	m, tok := loadModel(t, "stories260K.gguf")
	arms, _ := ParseArms("q8_0", ArmDefaults{})
	rep, err := RunAB(context.Background(), m, tok, ABConfig{Arms: arms, N: 4, Ctx: 64, Needle: NeedleConfig{Skip: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Determ.Identical || rep.Determ.Rows != 64 || len(rep.Arms) != 1 || rep.Ref.Needle.Total != 0 {
		t.Errorf("report %+v", rep)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunAB(ctx, m, tok, ABConfig{Arms: arms, N: 4, Ctx: 64, Needle: NeedleConfig{Skip: true}}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled run returned %v", err)
	}
}

func TestRunABRejectsBadConfigs(t *testing.T) {
	m, tok := loadModel(t, "stories260K.gguf")
	arms, _ := ParseArms("q8_0", ArmDefaults{})
	for _, tc := range []struct {
		name string
		cfg  ABConfig
	}{
		{"no arms", ABConfig{}},
		{"n fills the context", ABConfig{Arms: arms, Ctx: 10, N: 9}},
		{"text too short", ABConfig{Arms: arms, Text: "Hi.", N: 8}},
		{"negative n", ABConfig{Arms: arms, N: -1}},
		{"group format as V", ABConfig{Arms: []Arm{{Pair: kvq.Pair{K: kvq.Q4_0, V: kvq.Q2K}}}}},
		{"needle does not fit", ABConfig{Arms: arms, Ctx: 64, N: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := RunAB(context.Background(), m, tok, tc.cfg); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// keyTap is a QueryTapper for tests: after each forward pass it reports, as every query head's
// query, the key its KV head just stored (scaled up for a sharper softmax).
type keyTap struct {
	m     *model.Model
	calls int
}

func (k *keyTap) ForwardTap(tokens []int32, cache *kvcache.Cache, logits []float32, tap func(layer, pos0, n int, q []float32)) error {
	pos := cache.Len()
	if err := k.m.Forward(tokens, cache, logits); err != nil {
		return err
	}
	k.calls++
	hp := k.m.Hparams
	q := make([]float32, len(tokens)*hp.Heads*hp.HeadDimK)
	row := make([]float32, hp.HeadDimK)
	for l := 0; l < hp.Layers; l++ {
		kr, _ := cache.Rows(l, false)
		for i := range tokens {
			for h := 0; h < hp.Heads; h++ {
				kr[h/(hp.Heads/hp.KVHeads)].Row(row, pos+i)
				for j, x := range row {
					q[(i*hp.Heads+h)*hp.HeadDimK+j] = 3 * x
				}
			}
		}
		tap(l, pos, len(tokens), q)
	}
	return nil
}

// TestRunABWithTappedQueries runs the attention gate on queries a QueryTapper reports, the
// path a model that exposes its queries takes: the arm caches are built as at decode and read
// at each tapped step's position.
func TestRunABWithTappedQueries(t *testing.T) {
	m, tok := loadModel(t, "kvlab-tiny-64.gguf")
	arms, _ := ParseArms("f16,q8_0,q4_0,q4_0+w8+s2", ArmDefaults{})
	tap := &keyTap{m: m}
	rep, err := RunAB(context.Background(), m, tok, ABConfig{Arms: arms, N: 20, Ctx: 96, Text: DefaultText[:1000], Tap: tap,
		Needle: NeedleConfig{Skip: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.QuerySource != "model" || tap.calls != 10 {
		t.Fatalf("query source %q after %d tapped steps, want model and 10 (every other step)", rep.QuerySource, tap.calls)
	}
	e := map[string]float64{}
	for _, a := range rep.Arms {
		e[a.Arm] = a.AttnErrMean
	}
	if e["f16"] != 0 || !(e["q8_0"] > 0 && e["q8_0"] < e["q4_0"]) || !(e["q4_0+w8+s2"] < e["q4_0"]) {
		t.Errorf("attention errors %v: want f16 0 < q8_0 < q4_0, and the window lowering q4_0's", e)
	}
}

// TestRunABOnStep: OnStep streams every position with every arm, its running values agree with
// the report's series, and cancelling inside OnStep stops the run within one position with a
// partial report.
func TestRunABOnStep(t *testing.T) {
	m, tok := loadModel(t, "stories260K.gguf")
	arms, _ := ParseArms("f16,q4_0", ArmDefaults{})
	var evs []StepEvent
	cfg := ABConfig{Arms: arms, N: 8, Ctx: 64, Needle: NeedleConfig{Skip: true}, OnStep: func(ev StepEvent) {
		ev.Arms = append([]ArmStep(nil), ev.Arms...)
		evs = append(evs, ev)
	}}
	rep, err := RunAB(context.Background(), m, tok, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 8 || len(evs[7].Arms) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	for i, ev := range evs {
		q := ev.Arms[1]
		if ev.Pos != i || q.KL != rep.Arms[1].Decode.KL[i] || q.Agree != rep.Arms[1].Decode.Agree[i] || ev.Arms[0].KL != 0 {
			t.Errorf("event %d %+v", i, ev)
		}
	}
	if last := evs[7].Arms[1]; math.Abs(last.MeanKL-rep.Arms[1].Decode.KLMean) > 1e-12 || last.Top1Rate != rep.Arms[1].Decode.Top1 {
		t.Errorf("running %+v, report %+v", last, rep.Arms[1].Decode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg.OnStep = func(ev StepEvent) {
		if ev.Pos == 2 {
			cancel()
		}
	}
	rep, err = RunAB(ctx, m, tok, cfg)
	if !errors.Is(err, context.Canceled) || rep == nil || rep.Arms[1].Decode.Positions != 3 || rep.Settings.N != 3 {
		t.Fatalf("cancelled: %v %+v", err, rep)
	}
}

// TestRunABSpeedRounds: extra timing rounds change no measured value but the speeds, which
// stay positive; the report records the rounds, and the progress reaches its total.
func TestRunABSpeedRounds(t *testing.T) {
	m, tok := loadModel(t, "stories260K.gguf")
	arms, _ := ParseArms("q4_0,q4_0+p8+s2", ArmDefaults{})
	cfg := ABConfig{Arms: arms, N: 12, Ctx: 64, Needle: NeedleConfig{Skip: true}, SkipPPL: true, SkipGate: true}
	one, err := RunAB(context.Background(), m, tok, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var done, total int
	cfg.SpeedRounds = 3
	cfg.Progress = func(d, tot int, stage string) { done, total = d, tot }
	three, err := RunAB(context.Background(), m, tok, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if three.Settings.SpeedRounds != 3 || one.Settings.SpeedRounds != 0 || done != total || !three.Determ.Identical {
		t.Errorf("settings %+v, progress %d of %d, determinism %+v", three.Settings, done, total, three.Determ)
	}
	if !(three.Ref.DecodeTPS > 0) {
		t.Errorf("reference decode %g tokens/s", three.Ref.DecodeTPS)
	}
	for i, a := range three.Arms {
		if !slices.Equal(a.Decode.KL, one.Arms[i].Decode.KL) || !(a.DecodeTPS > 0) {
			t.Errorf("arm %s: KL %v (one round %v), %g tokens/s", a.Arm, a.Decode.KL, one.Arms[i].Decode.KL, a.DecodeTPS)
		}
	}
}
