package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/gguf"
)

// runStdin executes the CLI in-process with stdin and returns stdout and the error.
func runStdin(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// writeGGUF writes a tensor-less GGUF file with the given metadata and returns its path.
func writeGGUF(t *testing.T, kv ...gguf.KV) string {
	t.Helper()
	var b bytes.Buffer
	if err := gguf.Write(&b, kv, nil, 0); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "vocab.gguf")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyVocab is a vocab-only GGUF: a byte-level BPE with three merges.
func tinyVocab(t *testing.T) string {
	return writeGGUF(t,
		gguf.KV{Key: "general.architecture", Value: "gpt2"},
		gguf.KV{Key: "tokenizer.ggml.model", Value: "gpt2"},
		gguf.KV{Key: "tokenizer.ggml.pre", Value: "gpt-2"},
		gguf.KV{Key: "tokenizer.ggml.tokens", Value: []string{"h", "i", "Ġ", "hi", "Ġhi", "<|endoftext|>"}},
		gguf.KV{Key: "tokenizer.ggml.token_type", Value: []int32{1, 1, 1, 1, 1, 3}},
		gguf.KV{Key: "tokenizer.ggml.merges", Value: []string{"h i", "Ġ hi"}},
		gguf.KV{Key: "tokenizer.ggml.eos_token_id", Value: uint32(5)},
	)
}

func TestTokenizeCmd(t *testing.T) {
	vocab := tinyVocab(t)
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"ids", "hi hi", []string{"--ids"}, "3 4\n"},
		{"special parsed", "hi<|endoftext|>", []string{"--ids", "--special"}, "3 5\n"},
		{"special as text", "hi<|endoftext|>", []string{"--ids"}, "3\n"}, // "<", "|", … are not in the vocabulary
		{"empty input", "", []string{"--ids"}, "\n"},
		{"table", "hi hi", nil, "id  token  bytes\n3   hi         2\n4   Ġhi        3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runStdin(t, tt.stdin, append([]string{"tokenize", "--model", vocab}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, tt.want) {
				t.Errorf("output:\n%s\nwant it to start with:\n%s", out, tt.want)
			}
		})
	}
}

func TestTokenizeCmdJSON(t *testing.T) {
	out, err := runStdin(t, " hi", "tokenize", "--model", tinyVocab(t), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tokenizer string     `json:"tokenizer"`
		Count     int        `json:"count"`
		IDs       []int32    `json:"ids"`
		Tokens    []tokenRow `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in:\n%s", err, out)
	}
	if doc.Tokenizer != "BPE" || doc.Count != 1 || len(doc.Tokens) != 1 || doc.Tokens[0].Piece != " hi" || doc.Tokens[0].Text != "Ġhi" {
		t.Errorf("got %+v", doc)
	}
}

func TestTokenizeCmdErrors(t *testing.T) {
	noTok := writeGGUF(t, gguf.KV{Key: "general.architecture", Value: "llama"})
	badPre := writeGGUF(t,
		gguf.KV{Key: "tokenizer.ggml.model", Value: "gpt2"},
		gguf.KV{Key: "tokenizer.ggml.pre", Value: "chameleon"},
		gguf.KV{Key: "tokenizer.ggml.tokens", Value: []string{"a"}},
		gguf.KV{Key: "tokenizer.ggml.merges", Value: []string{}},
	)
	tests := []struct {
		name    string
		args    []string
		mention string
	}{
		{"no model flag", []string{"tokenize"}, "--model"},
		{"missing file", []string{"tokenize", "--model", filepath.Join(t.TempDir(), "nope.gguf")}, "nope.gguf"},
		{"no tokenizer", []string{"tokenize", "--model", noTok}, "has no tokenizer"},
		{"unsupported pre-tokenizer", []string{"tokenize", "--model", badPre}, `"chameleon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runStdin(t, "x", tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("err = %v, want it to mention %q", err, tt.mention)
			}
		})
	}
}

func TestTokenizeCmdStories(t *testing.T) {
	model := fixtures.Path(t, "stories260K.gguf")
	out, err := runStdin(t, "Once upon a time", "tokenize", "--model", model, "--ids")
	if err != nil {
		t.Fatal(err)
	}
	if out != "1 403 407 261 378\n" {
		t.Errorf("ids = %q, want BOS then ▁Once ▁upon ▁a ▁time", out)
	}
}
