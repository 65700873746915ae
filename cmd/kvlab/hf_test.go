package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
)

// TestRunHFFolder: `kvlab run` takes a Hugging Face folder and writes its documented story;
// --json lists the prompt's and the generated ids.
func TestRunHFFolder(t *testing.T) {
	dir := fixtures.Path(t, "TinyStories-656K")
	out, _, err := execute(t, "run", "--model", dir, "--temp", "0", "--n", "40", "--threads", "1")
	if err != nil {
		t.Fatal(err)
	}
	const want = "Once upon a time, there was a little girl named Lily. She had a toy car"
	if !strings.HasPrefix(out, want) {
		t.Fatalf("stdout %q, want it to start %q", out, want)
	}
	out, _, err = execute(t, "run", "--model", dir, "--temp", "0", "--n", "12", "--threads", "1", "--prompt", "Once upon a time", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res runResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.PromptIDs) != res.PromptTokens || res.PromptIDs[0] != 1 || len(res.IDs) != res.Tokens || res.Tokens != 12 {
		t.Fatalf("ids: prompt %v (%d tokens), generated %v (%d)", res.PromptIDs, res.PromptTokens, res.IDs, res.Tokens)
	}
}

// TestInspectHFFolderAndArchs: inspect reads a folder, says "runs" for it, and --archs names
// what is missing for the architectures the engine does not run.
func TestInspectHFFolderAndArchs(t *testing.T) {
	out, err := run(t, "inspect", "--model", fixtures.Path(t, "TinyStories-656K"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r inspectReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Supported || r.Engine != "runs" || r.Format != "Hugging Face folder" || r.Hparams.HeadDimK != 16 || r.Tokenizer == nil || r.Tokenizer.VocabSize != 2048 {
		t.Fatalf("report %+v", r)
	}
	out, err = run(t, "inspect", "--archs")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"llama         runs", "gemma2        runs", "gemma3        runs", "mamba         needs a recurrent state-space"} {
		if !strings.Contains(out, s) {
			t.Errorf("--archs lacks %q:\n%s", s, out)
		}
	}
	out, err = run(t, "plan", "--model", fixtures.Path(t, "TinyStories-656K"), "--ctx", "512")
	if err != nil || !strings.Contains(out, "TinyStories-656K") {
		t.Errorf("plan --model DIR: %v\n%s", err, out)
	}
}
