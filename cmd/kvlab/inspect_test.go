package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
)

func TestInspectModel(t *testing.T) {
	out, err := run(t, "inspect", fixtures.Path(t, "stories260K.gguf"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r inspectReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Supported || r.Hparams.Vocab != 512 || r.Hparams.HeadDimK != 8 || r.Tokenizer == nil || r.Tokenizer.VocabSize != 512 {
		t.Errorf("report: supported %v, hparams %+v, tokenizer %+v", r.Supported, r.Hparams, r.Tokenizer)
	}
	// 5 layers × 4 KV heads × 8 dims × (K+V) × 2 bytes = 640 B = 0.625 KiB per token in f16.
	if len(r.KV) == 0 || r.KV[0].Format != "f16" || r.KV[0].KiBPerTok != 0.625 {
		t.Errorf("KV rows: %+v", r.KV)
	}
}

func TestInspectVocabOnlyAndGarbage(t *testing.T) {
	out, err := run(t, "inspect", fixtures.Path(t, "vocab/ggml-vocab-gpt-2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"not supported", "vocabulary-only", "50257 tokens"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(bad, []byte("this is not a model"), 0o644)
	if _, err := run(t, "inspect", bad); err == nil || !strings.Contains(err.Error(), "not a GGUF file") {
		t.Errorf("garbage file: %v", err)
	}
}

func TestPplRuns(t *testing.T) {
	text := filepath.Join(t.TempDir(), "story.txt")
	os.WriteFile(text, []byte(strings.Repeat("Once upon a time, there was a little girl named Lily. She liked to play in the park with her dog. ", 6)), 0o644)
	model := fixtures.Path(t, "stories260K.gguf")
	out, err := run(t, "ppl", "--model", model, "--file", text, "--ctx", "64", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r pplResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Chunks < 2 || r.PPL < 1 || r.PPL > 50 {
		t.Errorf("ppl %g over %d chunks", r.PPL, r.Chunks)
	}
	if _, err := run(t, "ppl", "--model", model, "--file", text, "--kv", "q9"); err == nil {
		t.Error("unknown --kv accepted")
	}
}
