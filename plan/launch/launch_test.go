package launch

import (
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
)

func plan(t *testing.T, preset, gpu string, ctx int64, sessions, gpus int, user string) (calc.Request, calc.Report) {
	t.Helper()
	p, err := calc.LookupPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	h, err := calc.LookupHardware(gpu)
	if err != nil {
		t.Fatal(err)
	}
	r := calc.NewRequest(p.Shape, p.Quant, h)
	r.Ctx, r.Sessions, r.GPUs = ctx, sessions, gpus
	if user != "" {
		if r.User, err = kvq.ParsePair(user); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := calc.Plan(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, rep
}

// flagValue returns the word after flag in args.
func flagValue(t *testing.T, args []string, flag string) string {
	t.Helper()
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	t.Fatalf("no %s in %q", flag, args)
	return ""
}

func TestVLLMLlama8BOn4090(t *testing.T) {
	r, rep := plan(t, "llama-3.1-8b", "rtx-4090", 131072, 1, 1, "")
	c, err := Emit(VLLM, r, rep, PresetModel("llama-3.1-8b"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Line, "vllm serve ") {
		t.Fatalf("line %q", c.Line)
	}
	if got := flagValue(t, c.Args, "--max-model-len"); got != "131072" {
		t.Errorf("--max-model-len %s", got)
	}
	if got := flagValue(t, c.Args, "--tensor-parallel-size"); got != "1" {
		t.Errorf("--tensor-parallel-size %s", got)
	}
	if got := flagValue(t, c.Args, "--tokenizer"); got != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("--tokenizer %s", got)
	}
	// f16 KV fits a 4090 with q4_k_m weights: the model's own dtype.
	if got := flagValue(t, c.Args, "--kv-cache-dtype"); got != "auto" {
		t.Errorf("--kv-cache-dtype %s, plan picked %s", got, rep.Policy.Format)
	}
	u := flagValue(t, c.Args, "--gpu-memory-utilization")
	if u < "0.50" || u > "0.95" || len(u) != 4 {
		t.Errorf("--gpu-memory-utilization %s", u)
	}
	if !c.Fits {
		t.Errorf("does not fit: %v", c.Notes)
	}
	// Only flags vllm serve documents.
	known := map[string]bool{"--tokenizer": true, "--max-model-len": true, "--kv-cache-dtype": true,
		"--gpu-memory-utilization": true, "--tensor-parallel-size": true, "--max-num-seqs": true}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--") && !known[a] {
			t.Errorf("unknown flag %s", a)
		}
	}
}

func TestVLLMHasNoFourBitKV(t *testing.T) {
	r, rep := plan(t, "llama-3.1-8b", "rtx-4090", 131072, 1, 1, "q4_0")
	c, err := Emit(VLLM, r, rep, PresetModel("llama-3.1-8b"))
	if err != nil {
		t.Fatal(err)
	}
	if got := flagValue(t, c.Args, "--kv-cache-dtype"); got != "fp8" {
		t.Errorf("--kv-cache-dtype %s", got)
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "no KV format below 8 bits") {
		t.Errorf("notes do not say vLLM has no 4-bit KV: %q", c.Notes)
	}
}

func TestVLLMTooLongSaysWhatFits(t *testing.T) {
	r, rep := plan(t, "qwen2.5-14b-1m", "rtx-3090", 1<<20, 1, 1, "")
	c, err := Emit(VLLM, r, rep, PresetModel("qwen2.5-14b-1m"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Fits {
		t.Fatal("1M tokens of a 14B model fit a 3090 in vLLM?")
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "--max-model-len ") {
		t.Errorf("notes do not give a context that fits: %q", c.Notes)
	}
	if got := flagValue(t, c.Args, "--gpu-memory-utilization"); got != "0.95" {
		t.Errorf("--gpu-memory-utilization %s", got)
	}
}

func TestLlamaCpp(t *testing.T) {
	r, rep := plan(t, "llama-3.1-70b", "h100", 131072, 4, 2, "q8_0/q4_0")
	c, err := Emit(LlamaCpp, r, rep, Model{File: "/models/my model.gguf"})
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"-m": "/models/my model.gguf", "-c": "524288", "-ctk": "q8_0", "-ctv": "q4_0",
		"-fa": "on", "-ngl": "999", "--parallel": "4"} {
		if got := flagValue(t, c.Args, flag); got != want {
			t.Errorf("%s %s, want %s", flag, got, want)
		}
	}
	if !strings.Contains(c.Line, `-m '/models/my model.gguf'`) {
		t.Errorf("file not quoted: %s", c.Line)
	}
	if c.KV != "q8_0/q4_0" {
		t.Errorf("kv %s", c.KV)
	}
}

func TestLlamaCppNearestFormats(t *testing.T) {
	for _, tc := range []struct{ user, k, v, note string }{
		{"fp8", "q8_0", "q8_0", "no fp8"},
		{"tq4", "iq4_nl", "iq4_nl", "no tq4"},
		{"q2k", "q4_0", "q4_0", "below 4 bits"},
		{"q5_1/q4_0", "q5_1", "q4_0", ""},
	} {
		r, rep := plan(t, "llama-3.1-8b", "rtx-4090", 32768, 1, 1, tc.user)
		c, err := Emit(LlamaCpp, r, rep, Model{})
		if err != nil {
			t.Fatal(err)
		}
		if k, v := flagValue(t, c.Args, "-ctk"), flagValue(t, c.Args, "-ctv"); k != tc.k || v != tc.v {
			t.Errorf("%s: -ctk %s -ctv %s, want %s %s", tc.user, k, v, tc.k, tc.v)
		}
		if tc.note != "" && !strings.Contains(strings.Join(c.Notes, "\n"), tc.note) {
			t.Errorf("%s: notes %q lack %q", tc.user, c.Notes, tc.note)
		}
		if flagValue(t, c.Args, "-m") != "Llama-3.1-8B-Q4_K_M.gguf" {
			t.Errorf("placeholder %q", c.Args)
		}
	}
}

func TestParseEngine(t *testing.T) {
	for s, want := range map[string]Engine{"llama.cpp": LlamaCpp, "llama-server": LlamaCpp, "VLLM": VLLM} {
		if e, err := ParseEngine(s); err != nil || e != want {
			t.Errorf("%s: %v %v", s, e, err)
		}
	}
	if _, err := ParseEngine("tgi"); err == nil {
		t.Error("tgi accepted")
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"a/b.gguf": "a/b.gguf", "a b": "'a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := shellQuote(in); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}
