package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
)

// storiesGreedy is llama2.c's greedy output for stories260K from BOS, 200 tokens
// (../shared/models/README.md).
const storiesGreedy = `Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.
Lily's mom said, "Lily, let's go to the park." Lily was sad and didn't know what to do. She said, "I want to play with your ball, but I can't find it."
Lily was sad and didn't know what to do. She said, "I'm sorry, Lily. I didn't know what to do."
Lily didn't want to help her mom, so she`

func execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errb.String(), err
}

func TestRunStoriesOracle(t *testing.T) {
	path := fixtures.Path(t, "stories260K.gguf")
	out, errOut, err := execute(t, "run", "--model", path, "--temp", "0", "--n", "200", "--threads", "1")
	if err != nil {
		t.Fatal(err)
	}
	if out != storiesGreedy+"\n" {
		t.Fatalf("stdout differs from llama2.c:\n%s", out)
	}
	for _, want := range []string{"prompt: 1 tokens", "decode: 200 tokens", "KV cache: f16"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestRunJSON(t *testing.T) {
	path := fixtures.Path(t, "stories260K.gguf")
	out, _, err := execute(t, "run", "--model", path, "--prompt", "Once upon a time", "--n", "20",
		"--kv", "q8_0/q4_0", "--kv-window", "8", "--kv-sink", "2", "--temp", "0.7", "--top-k", "20", "--seed", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res runResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	if res.Tokens < 1 || res.Tokens > 20 || res.Text == "" || res.KVFormat != "q8_0/q4_0" || res.KVBytes <= 0 ||
		res.PromptTokens != 5 || res.PromptTPS <= 0 || res.Seed != 3 {
		t.Fatalf("unexpected result %+v", res)
	}
	again, _, err := execute(t, "run", "--model", path, "--prompt", "Once upon a time", "--n", "20",
		"--kv", "q8_0/q4_0", "--kv-window", "8", "--kv-sink", "2", "--temp", "0.7", "--top-k", "20", "--seed", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res2 runResult
	if err := json.Unmarshal([]byte(again), &res2); err != nil {
		t.Fatal(err)
	}
	if res2.Text != res.Text {
		t.Fatalf("the same seed gave different text:\n%q\n%q", res.Text, res2.Text)
	}
}

func TestRunContextFull(t *testing.T) {
	path := fixtures.Path(t, "stories260K.gguf")
	out, errOut, err := execute(t, "run", "--model", path, "--temp", "0", "--n", "50", "--ctx", "10", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res runResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Stop != "context" || res.Tokens != 10 {
		t.Fatalf("stop %q after %d tokens, want context after 10 (stderr %q)", res.Stop, res.Tokens, errOut)
	}
}

func TestRunErrors(t *testing.T) {
	path := fixtures.Path(t, "stories260K.gguf")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"run"}, "--model is required"},
		{"bad format", []string{"run", "--model", path, "--kv", "q3"}, "unknown KV format"},
		{"q2k as V", []string{"run", "--model", path, "--kv", "f16/q2k"}, "cannot hold V"},
		{"bad top-p", []string{"run", "--model", path, "--top-p", "2"}, "top-p"},
		{"missing file", []string{"run", "--model", "/nonexistent.gguf"}, "nonexistent.gguf"},
		{"prompt longer than ctx", []string{"run", "--model", path, "--prompt", "Once upon a time there was", "--ctx", "3"}, "longer than the context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
