//go:build unix

package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/gguf"
)

// TestHostileFlags: the review's crashing flags are one-line errors, at once, before any cache
// is made.
func TestHostileFlags(t *testing.T) {
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	fifo := filepath.Join(t.TempDir(), "model.gguf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ctx 1e10", []string{"run", "--model", path, "--ctx", "10000000000"}, "--ctx 10000000000: out of range"},
		{"ctx 2^31", []string{"run", "--model", path, "--ctx", "2147483648"}, "--ctx 2147483648: out of range"},
		{"ctx 1e8", []string{"run", "--model", path, "--ctx", "100000000"}, "--ctx 100000000: out of range"},
		{"window 1e9", []string{"run", "--model", path, "--kv-window", "1000000000"}, "--kv-window 1000000000: out of range"},
		{"sink 1e11", []string{"run", "--model", path, "--kv-sink", "99999999999"}, "--kv-sink 99999999999: out of range"},
		{"window past the context", []string{"run", "--model", path, "--n", "4", "--kv-window", "100000"}, "--kv-window 100000: out of range, want 0 to 256"},
		{"threads", []string{"run", "--model", path, "--threads", "1000000"}, "--threads"},
		{"n", []string{"run", "--model", path, "--n", "1000000000"}, "--n"},
		{"temp NaN", []string{"run", "--model", path, "--temp", "NaN"}, "--temp"},
		{"fifo model", []string{"run", "--model", fifo}, "named pipe"},
		{"fifo inspect", []string{"inspect", fifo}, "named pipe"},
		{"ab window", []string{"ab", "--model", path, "--no-save", "--arms", "q4_0+w1000000000"}, "window 1000000000: out of range"},
		{"ab sinks", []string{"ab", "--model", path, "--no-save", "--arms", "q4_0+s9223372036854775807"}, "sinks 9223372036854775807: out of range"},
		{"ab ctx", []string{"ab", "--model", path, "--no-save", "--ctx", "10000000000"}, "--ctx"},
		{"serve ctx", []string{"serve", "--model", path, "--no-discover", "--addr", "127.0.0.1:0", "--ctx", "10000000000"}, "--ctx 10000000000: out of range"},
		{"serve weak key", []string{"serve", "--no-discover", "--addr", "0.0.0.0:0", "--api-key", " "}, "whitespace"},
		{"serve short key", []string{"serve", "--no-discover", "--addr", "0.0.0.0:0", "--api-key", "a"}, "too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, _, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") || len(err.Error()) > 400 {
				t.Errorf("not one short line: %q", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// rewriteModel copies a GGUF fixture, replacing metadata values and, with nanTensor, filling
// that f32 tensor with NaN.
func rewriteModel(t *testing.T, src string, set map[string]any, nanTensor string) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &gguf.Writer{}
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		if nv, ok := set[k]; ok {
			v = nv
		}
		w.AddKV(k, v)
	}
	for _, ti := range f.Tensors() {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if ti.Name == nanTensor && ti.Type == gguf.F32 {
			data = bytes.Clone(data)
			for i := 0; i+4 <= len(data); i += 4 {
				binary.LittleEndian.PutUint32(data[i:], math.Float32bits(float32(math.NaN())))
			}
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

// TestBadModels: NaN weights are an error, not an empty answer; inspect says the engine runs a
// file only when run would.
func TestBadModels(t *testing.T) {
	src := fixtures.Path(t, "kvlab-tiny-64.gguf")
	nan := rewriteModel(t, src, nil, "output_norm.weight")
	if _, _, err := execute(t, "run", "--model", nan, "--n", "4", "--temp", "0"); err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("NaN weights: %v", err)
	}
	bad := rewriteModel(t, src, map[string]any{"tokenizer.ggml.bos_token_id": uint32(1_000_000_000)}, "")
	if _, _, err := execute(t, "run", "--model", bad, "--n", "4"); err == nil || !strings.Contains(err.Error(), "bos_token_id") {
		t.Errorf("bos 1e9: run: %v", err)
	}
	out, _, err := execute(t, "inspect", bad)
	if err != nil || strings.Contains(out, "runs it") || !strings.Contains(out, "bos_token_id") {
		t.Errorf("bos 1e9: inspect says %q (%v)", out, err)
	}
	out, _, err = execute(t, "inspect", src)
	if err != nil || !strings.Contains(out, "runs it") {
		t.Errorf("the fixture: inspect says %q (%v)", out, err)
	}
}
