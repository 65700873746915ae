package gguf

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
)

func TestFixtureModels(t *testing.T) {
	tests := []struct {
		file    string
		tensors int
		hparams map[string]uint64
	}{
		{"stories260K.gguf", 48, map[string]uint64{
			"llama.embedding_length":        64,
			"llama.block_count":             5,
			"llama.attention.head_count":    8,
			"llama.attention.head_count_kv": 4,
			"llama.feed_forward_length":     172,
			"llama.rope.dimension_count":    8,
		}},
		{"kvlab-tiny-64.gguf", 39, map[string]uint64{
			"llama.embedding_length":        128,
			"llama.block_count":             4,
			"llama.attention.head_count":    2,
			"llama.attention.head_count_kv": 1,
			"llama.feed_forward_length":     384,
			"llama.context_length":          256,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := Open(fixtures.Path(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Version != 3 || f.Alignment != 32 {
				t.Errorf("Version %d, Alignment %d; want 3, 32", f.Version, f.Alignment)
			}
			if got := f.Architecture(); got != "llama" {
				t.Errorf("Architecture() = %q, want llama", got)
			}
			for key, want := range tt.hparams {
				if got, ok := f.Uint(key); !ok || got != want {
					t.Errorf("%s = %d, %v; want %d", key, got, ok, want)
				}
			}
			if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || float32(eps) != 1e-5 {
				t.Errorf("rms epsilon = %v, %v; want 1e-5", eps, ok)
			}
			tokens, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok || len(tokens) != 512 || tokens[1] != "<s>" || tokens[2] != "</s>" {
				t.Errorf("tokenizer.ggml.tokens: %d tokens, ok %v", len(tokens), ok)
			}
			if types, ok := f.Int32s("tokenizer.ggml.token_type"); !ok || len(types) != 512 {
				t.Errorf("tokenizer.ggml.token_type: %d, %v", len(types), ok)
			}
			if scores, ok := f.Float32s("tokenizer.ggml.scores"); !ok || len(scores) != 512 {
				t.Errorf("tokenizer.ggml.scores: %d, %v", len(scores), ok)
			}
			if bos, ok := f.Uint("tokenizer.ggml.bos_token_id"); !ok || bos != 1 {
				t.Errorf("bos = %d, %v", bos, ok)
			}
			ts := f.Tensors()
			if len(ts) != tt.tensors {
				t.Errorf("%d tensors, want %d", len(ts), tt.tensors)
			}
			dim := tt.hparams["llama.embedding_length"]
			for _, ti := range ts {
				if ti.Type != F32 {
					t.Errorf("%s: type %v, want f32", ti.Name, ti.Type)
				}
				data, err := f.TensorData(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				if uint64(len(data)) != ti.Elements()*4 {
					t.Errorf("%s: %d bytes for %d elements", ti.Name, len(data), ti.Elements())
				}
			}
			emb, ok := f.Tensor("token_embd.weight")
			if !ok || len(emb.Dims) != 2 || emb.Dims[0] != dim || emb.Dims[1] != 512 {
				t.Fatalf("token_embd.weight = %+v, %v; want dims [%d 512]", emb, ok, dim)
			}
			// The F32 rows dequantize to the raw little-endian floats, and are finite.
			data, _ := f.TensorData("token_embd.weight")
			row := make([]float32, dim)
			if err := DequantizeRow(F32, data[:F32.RowBytes(dim)], row); err != nil {
				t.Fatal(err)
			}
			for i, v := range row {
				if bits := binary.LittleEndian.Uint32(data[4*i:]); math.Float32bits(v) != bits || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("token_embd row 0 value %d = %v", i, v)
				}
			}
		})
	}
}

func TestFixtureStoriesTiedOutput(t *testing.T) {
	f, err := Open(fixtures.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	emb, err := f.TensorData("token_embd.weight")
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.TensorData("output.weight")
	if err != nil {
		t.Fatal(err)
	}
	if string(emb) != string(out) {
		t.Error("output.weight differs from token_embd.weight; the fixture README says they are equal")
	}
}

func TestFixtureVocabs(t *testing.T) {
	tests := []struct {
		file   string
		arch   string
		model  string
		tokens int
		merges bool
	}{
		{"vocab/ggml-vocab-llama-spm.gguf", "llama", "llama", 32000, false},
		{"vocab/ggml-vocab-gpt-2.gguf", "gpt2", "gpt2", 50257, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := fixtures.Path(t, tt.file)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if got := f.Architecture(); got != tt.arch {
				t.Errorf("Architecture() = %q, want %q", got, tt.arch)
			}
			if got, _ := f.String("tokenizer.ggml.model"); got != tt.model {
				t.Errorf("tokenizer.ggml.model = %q, want %q", got, tt.model)
			}
			tokens, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok || len(tokens) != tt.tokens {
				t.Errorf("%d tokens, ok %v; want %d", len(tokens), ok, tt.tokens)
			}
			if types, ok := f.Int32s("tokenizer.ggml.token_type"); !ok || len(types) != tt.tokens {
				t.Errorf("%d token types, ok %v", len(types), ok)
			}
			if merges, ok := f.Strings("tokenizer.ggml.merges"); ok != tt.merges || (ok && len(merges) == 0) {
				t.Errorf("merges: %d, %v; want present = %v", len(merges), ok, tt.merges)
			}
			if n := len(f.Tensors()); n != 0 {
				t.Errorf("%d tensors in a vocab-only file", n)
			}
			// A vocab-only file ends right after its metadata, without padding.
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Size() != st.Size() || f.DataOffset < f.Size() {
				t.Errorf("Size %d, DataOffset %d, file %d bytes", f.Size(), f.DataOffset, st.Size())
			}
		})
	}
}
