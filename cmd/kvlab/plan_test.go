package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// runKvlab runs the kvlab command line in-process and returns its output and error.
func runKvlab(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

type planDoc struct {
	Ladder []struct {
		Format         string  `json:"format"`
		KiBPerToken    float64 `json:"kib_per_token"`
		KVGiB          float64 `json:"kv_gib"`
		MaxResidentCtx int64   `json:"max_resident_ctx"`
		Sessions       int64   `json:"sessions"`
		Fits           bool    `json:"fits"`
	} `json:"ladder"`
	Choice string `json:"choice"`
	Reason string `json:"reason"`
}

func planJSONOf(t *testing.T, args ...string) planDoc {
	t.Helper()
	out, err := runKvlab(t, append([]string{"plan", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("kvlab plan %v: %v\n%s", args, err, out)
	}
	var d planDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	return d
}

// TestPlanSeed000SizeLadder is the acceptance: seed 000 §1's KiB per token and the
// longest resident context at an 8 GiB and an 80 GiB KV budget.
func TestPlanSeed000SizeLadder(t *testing.T) {
	formats := "f16,q8_0,q8_0/q4_0,q5_0,q4_0"
	kib := []float64{192, 102, 78, 66, 54}
	for _, tc := range []struct {
		budget string
		ctx    []int64
		short  []string // as the table prints them
	}{
		{"8", []int64{43690, 82241, 107546, 127100, 155344}, []string{"43.7k", "82.2k", "108k", "127k", "155k"}},
		{"80", []int64{436906, 822412, 1075462, 1271001, 1553445}, []string{"437k", "822k", "1.08M", "1.27M", "1.55M"}},
	} {
		t.Run(tc.budget+"GiB", func(t *testing.T) {
			d := planJSONOf(t, "--preset", "qwen2.5-14b-1m", "--budget-gib", tc.budget, "--formats", formats)
			if len(d.Ladder) != len(kib) {
				t.Fatalf("%d rows", len(d.Ladder))
			}
			for i, r := range d.Ladder {
				if r.KiBPerToken != kib[i] || r.MaxResidentCtx != tc.ctx[i] {
					t.Errorf("%s: %g KiB/token, max ctx %d; want %g, %d", r.Format, r.KiBPerToken, r.MaxResidentCtx, kib[i], tc.ctx[i])
				}
			}
			out, err := runKvlab(t, "plan", "--preset", "qwen2.5-14b-1m", "--budget-gib", tc.budget, "--formats", formats)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.ctx {
				if want := tc.short[i] + " ("; !strings.Contains(out, want) {
					t.Errorf("table lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestPlanSeed000Policy: at -c 32768 the policy picks q8_0/q8_0, q8_0/q4_0 and q5_1/q4_0 as
// the budget tightens to 3328, 2728 and 2128 MiB — given directly, or derived as seed 000 P1
// derives it from a --vram-target and the memory already resident.
func TestPlanSeed000Policy(t *testing.T) {
	for _, tc := range []struct {
		budgetGiB, targetMiB string
		choice, reason       string
	}{
		{"3.25", "20000", "q8_0/q8_0", "q8_0/q8_0: KV 3264 MiB fits budget 3328 MiB"},
		{"2.6640625", "19400", "q8_0/q4_0", "q8_0/q4_0: KV 2496 MiB fits budget 2728 MiB"},
		{"2.078125", "18800", "q5_1/q4_0", "q5_1/q4_0: KV 2016 MiB fits budget 2128 MiB"},
	} {
		t.Run(tc.choice, func(t *testing.T) {
			for _, args := range [][]string{
				{"--preset", "qwen2.5-14b-1m", "--ctx", "32768", "--budget-gib", tc.budgetGiB},
				{"--preset", "qwen2.5-14b-1m", "--gpu", "rtx-6000-blackwell", "--ctx", "32k", "--vram-target-mib", tc.targetMiB, "--resident-mib", "15136"},
			} {
				d := planJSONOf(t, args...)
				if d.Choice != tc.choice || d.Reason != tc.reason {
					t.Errorf("%v: %s %q, want %s %q", args, d.Choice, d.Reason, tc.choice, tc.reason)
				}
			}
		})
	}
}

func TestPlanOutputs(t *testing.T) {
	out, err := runKvlab(t, "plan", "--preset", "gemma-4-26b-a4b", "--gpu", "rtx-4090", "--ctx", "128k", "--window", "256", "--sinks", "8")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sliding window (iSWA)", "FP16 overlay: window 256 + sinks 8", "spill model", "policy (auto KV tier): f16/f16", "stays f16"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runKvlab(t, "plan", "--list-presets")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"qwen2.5-14b-1m", "gemma-4-26b-a4b", "qwen3.6-35b-a3b", "llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen3-4b", "mistral-7b",
		"rtx-3090", "rtx-4090", "rtx-6000-blackwell", "h100", "h200", "apple-m4-max-128", "q4_k_m"} {
		if !strings.Contains(out, key) {
			t.Errorf("--list-presets lacks %s", key)
		}
	}
	out, err = runKvlab(t, "plan", "--calibrate")
	if err != nil || !strings.Contains(out, "RMS log error") || !strings.Contains(out, "10368") {
		t.Errorf("--calibrate: %v\n%s", err, out)
	}
	// A custom shape on two GPUs: 8 KV heads split 4 per GPU, so half the KiB per token.
	d := planJSONOf(t, "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--params-b", "8", "--vram-gib", "24", "--gpus", "2", "--formats", "f16")
	if d.Ladder[0].KiBPerToken != 64 {
		t.Errorf("custom tp=2: %g KiB/token, want 64", d.Ladder[0].KiBPerToken)
	}
	d = planJSONOf(t, "--preset", "llama-3.1-8b", "--kv", "q4_0", "--ctx", "8k")
	if d.Choice != "q4_0/q4_0" || !strings.Contains(d.Reason, "user-chosen") {
		t.Errorf("--kv q4_0: %s %q", d.Choice, d.Reason)
	}
}

func TestPlanModelFileAndFit(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	err := gguf.Write(&buf, []gguf.KV{
		{Key: "general.architecture", Value: "qwen3"}, {Key: "general.name", Value: "Tiny Qwen"},
		{Key: "qwen3.block_count", Value: uint32(36)}, {Key: "qwen3.attention.head_count", Value: uint32(32)},
		{Key: "qwen3.attention.head_count_kv", Value: uint32(8)}, {Key: "qwen3.attention.key_length", Value: uint32(128)},
		{Key: "qwen3.attention.value_length", Value: uint32(128)}, {Key: "qwen3.context_length", Value: uint32(40960)},
	}, []gguf.WriteTensor{{Name: "token_embd.weight", Dims: []uint64{256, 64}, Type: gguf.Q8_0}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "tiny.gguf")
	if err := os.WriteFile(model, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d := planJSONOf(t, "--model", model, "--formats", "f16,q8_0", "--budget-gib", "1")
	if d.Ladder[0].KiBPerToken != 144 || d.Ladder[0].MaxResidentCtx != 7281 {
		t.Errorf("gguf model: %+v", d.Ladder[0])
	}
	csv := filepath.Join(dir, "points.csv")
	if err := os.WriteFile(csv, []byte("format,ctx,resident_cells,tokens_per_s\n# two runs\nf16,32k,0,60\nf16,64k,0,50\nq8_0,64k,0,55\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runKvlab(t, "plan", "--preset", "qwen3-4b", "--fit", csv); err != nil {
		t.Errorf("--fit: %v", err)
	}
}

func TestPlanBadInputs(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "notes.gguf")
	if err := os.WriteFile(notGGUF, []byte("hello, this is not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "cut.gguf")
	if err := os.WriteFile(truncated, []byte("GGUF\x03\x00\x00\x00\x05"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--ctx", "-5"}, "--ctx -5"},
		{[]string{"--ctx", "lots"}, "not a token count"},
		{[]string{"--gpus", "0"}, "--gpus 0"},
		{[]string{"--sessions", "0"}, "--sessions 0"},
		{[]string{"--preset", "gpt-9"}, `unknown preset: model "gpt-9"`},
		{[]string{"--gpu", "voodoo2"}, `unknown preset: GPU "voodoo2"`},
		{[]string{"--formats", "f16,q9_9"}, `unknown KV format "q9_9"`},
		{[]string{"--kv", "q4_0/q2k"}, "K only"},
		{[]string{"--weights", "q1"}, `weight quantization "q1"`},
		{[]string{"--budget-gib", "-1"}, "--budget-gib -1"},
		{[]string{"--vram-gib", "0"}, "--vram-gib 0"},
		{[]string{"--preset", "qwen3-4b", "--layers", "4"}, "choose one model"},
		{[]string{"--layers", "4"}, "needs --layers, --kv-heads and --head-dim"},
		{[]string{"--model", notGGUF}, "not a GGUF file"},
		{[]string{"--model", truncated}, "truncated"},
		{[]string{"--model", filepath.Join(dir, "missing.gguf")}, "no such file"},
		{[]string{"--window", "-1"}, "--window -1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runKvlab(t, append([]string{"plan"}, tc.args...)...)
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
}

// TestPlanEmit checks that --emit prints one pasteable command line, then only # comments.
func TestPlanEmit(t *testing.T) {
	for _, tc := range []struct{ engine, prefix string }{
		{"vllm", "vllm serve "},
		{"llama.cpp", "llama-server -m "},
	} {
		out, err := runKvlab(t, "plan", "--preset", "llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "131072", "--emit", tc.engine)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.engine, err, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if !strings.HasPrefix(lines[0], tc.prefix) {
			t.Errorf("%s: first line %q", tc.engine, lines[0])
		}
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, "# ") {
				t.Errorf("%s: line %q is neither the command nor a comment", tc.engine, l)
			}
		}
		if tc.engine == "vllm" && !strings.Contains(lines[0], "--max-model-len 131072") {
			t.Errorf("vllm line %q", lines[0])
		}
		if tc.engine == "llama.cpp" && !strings.Contains(lines[0], "-c 131072") {
			t.Errorf("llama.cpp line %q", lines[0])
		}
	}
	if _, err := runKvlab(t, "plan", "--emit", "tgi"); err == nil || !strings.Contains(err.Error(), "--emit") {
		t.Errorf("--emit tgi: %v", err)
	}
	out, err := runKvlab(t, "plan", "--preset", "llama-3.1-8b", "--emit", "vllm", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Command string   `json:"command"`
		Notes   []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || !strings.HasPrefix(doc.Command, "vllm serve") {
		t.Errorf("--json: %v %q", err, out)
	}
}
