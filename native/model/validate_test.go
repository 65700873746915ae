package model

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/gguf"
)

// rewrite copies a GGUF fixture with some metadata values replaced (or added).
func rewrite(t *testing.T, src string, set map[string]any) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &gguf.Writer{}
	done := map[string]bool{}
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		if nv, ok := set[k]; ok {
			v, done[k] = nv, true
		}
		w.AddKV(k, v)
	}
	for k, v := range set {
		if !done[k] {
			w.AddKV(k, v)
		}
	}
	for _, ti := range f.Tensors() {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		w.AddTensor(ti.Name, ti.Type, ti.Dims, data)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadMetadata: unusable metadata values are load errors naming the key, not defaults.
func TestBadMetadata(t *testing.T) {
	src := fixtures.Path(t, "kvlab-tiny-64.gguf")
	for _, tc := range []struct {
		key string
		v   any
	}{
		{"tokenizer.ggml.bos_token_id", uint32(1_000_000_000)},
		{"tokenizer.ggml.eos_token_id", int32(-5)},
		{"tokenizer.ggml.unknown_token_id", uint32(512)},
		{"llama.rope.freq_base", float32(0)},
		{"llama.rope.freq_base", float32(math.NaN())},
		{"llama.attention.layer_norm_rms_epsilon", float32(math.NaN())},
		{"llama.attention.layer_norm_rms_epsilon", float32(-1)},
		{"llama.attention.head_count_kv", uint32(0)},
		{"llama.attention.head_count_kv", uint32(3)},
	} {
		path := rewrite(t, src, map[string]any{tc.key: tc.v})
		m, err := Load(path, Options{Threads: 1})
		if err == nil {
			m.Close()
			t.Errorf("%s = %v: loaded", tc.key, tc.v)
			continue
		}
		if !strings.Contains(err.Error(), tc.key) || len(err.Error()) > 300 {
			t.Errorf("%s = %v: error %q does not name the key", tc.key, tc.v, err)
		}
	}
	// The fixture itself loads.
	m, err := Load(src, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}

func TestCheckLogits(t *testing.T) {
	if CheckLogits([]float32{1, -2, 3}) != nil || CheckLogits([]float32{1, float32(math.NaN())}) == nil ||
		CheckLogits([]float32{float32(math.Inf(-1))}) == nil {
		t.Error("CheckLogits")
	}
}
