package gguf

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
)

var update = flag.Bool("update", false, "rewrite the committed seed corpus under testdata/fuzz/FuzzRead")

// seedFiles returns small valid GGUF files covering every value type, nested arrays, several
// tensor types, a non-default alignment, v2, and a vocab-only file.
func seedFiles(t testing.TB) map[string][]byte {
	seeds := map[string]*Writer{
		"metadata-all-types": {KV: allValues()},
		"tensors": {KV: []KV{{"general.architecture", "llama"}, {"llama.block_count", uint32(1)}},
			Tensors: []WriteTensor{
				{Name: "token_embd.weight", Dims: []uint64{4, 3}, Type: F32},
				{Name: "blk.0.attn_q.weight", Dims: []uint64{32, 2}, Type: Q8_0},
				{Name: "blk.0.ffn_up.weight", Dims: []uint64{256}, Type: Q4_K},
				{Name: "norm", Dims: []uint64{2}, Type: F16},
			}},
		"align-64-v2": {Version: 2, Alignment: 64, KV: []KV{{"k", []string{"a", "bb"}}},
			Tensors: []WriteTensor{{Name: "a", Dims: []uint64{1}, Type: F32}, {Name: "b", Dims: []uint64{3}, Type: BF16}}},
		"vocab-only": {KV: []KV{
			{"tokenizer.ggml.model", "llama"},
			{"tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>", "▁a"}},
			{"tokenizer.ggml.scores", []float32{0, 0, 0, -1}},
			{"tokenizer.ggml.token_type", []int32{2, 3, 3, 1}},
		}},
	}
	out := make(map[string][]byte, len(seeds))
	for name, w := range seeds {
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatalf("seed %s: %v", name, err)
		}
		out[name] = buf.Bytes()
	}
	return out
}

// TestUpdateFuzzCorpus rewrites testdata/fuzz/FuzzRead from seedFiles when run with -update.
func TestUpdateFuzzCorpus(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRead")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seedFiles(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzRead feeds arbitrary bytes to Read. Read must not panic and must bound its allocations by
// the input (the fuzzer's memory limit catches violations). When Read accepts an input, the
// File must be self-consistent, and writing its metadata and tensor infos back out must give a
// file that reads back the same.
func FuzzRead(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
	}
	// The first few KB of the real fixtures, read at test time (they are not committed).
	for _, name := range []string{"stories260K.gguf", "kvlab-tiny-64.gguf", "vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf"} {
		if b := fixturePrefix(name, 4096); b != nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if file != nil {
				t.Fatal("Read returned a File and an error")
			}
			return
		}
		checkInvariants(t, file)
		roundTrip(t, file)
	})
}

// fixturePrefix returns the first n bytes of a fixture, or nil when it is missing.
func fixturePrefix(name string, n int) []byte {
	dir := os.Getenv(fixtures.EnvDir)
	if dir == "" {
		root, err := fixtures.RepoRoot()
		if err != nil {
			return nil
		}
		dir = filepath.Join(root, "..", "shared", "models")
	}
	fd, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return nil
	}
	defer fd.Close()
	b := make([]byte, n)
	got, _ := io.ReadFull(fd, b)
	return b[:got]
}

func checkInvariants(t *testing.T, f *File) {
	t.Helper()
	if f.Version != 2 && f.Version != 3 {
		t.Fatalf("Version %d", f.Version)
	}
	if f.Alignment <= 0 || f.Alignment&(f.Alignment-1) != 0 || f.DataOffset%f.Alignment != 0 {
		t.Fatalf("Alignment %d, DataOffset %d", f.Alignment, f.DataOffset)
	}
	keys := f.Keys()
	if len(keys) != len(f.kv) {
		t.Fatalf("%d keys, %d values", len(keys), len(f.kv))
	}
	for _, k := range keys {
		if _, ok := f.Value(k); !ok {
			t.Fatalf("key %q has no value", k)
		}
	}
	for _, ti := range f.Tensors() {
		if !ti.Type.Valid() || len(ti.Dims) > MaxDims {
			t.Fatalf("tensor %q: type %v, dims %v", ti.Name, ti.Type, ti.Dims)
		}
		if ti.Offset%uint64(f.Alignment) != 0 {
			t.Fatalf("tensor %q: offset %d unaligned", ti.Name, ti.Offset)
		}
		if n := ti.Bytes(); n > 0 && uint64(f.DataOffset)+ti.Offset+n > uint64(f.Size()) {
			t.Fatalf("tensor %q: data past end", ti.Name)
		}
		if got, ok := f.Tensor(ti.Name); !ok || got.Offset != ti.Offset {
			t.Fatalf("Tensor(%q) lookup disagrees", ti.Name)
		}
		if _, err := f.TensorData(ti.Name); err == nil && ti.Bytes() > 0 {
			t.Fatalf("TensorData(%q) succeeded on a File from Read", ti.Name)
		}
	}
}

// roundTrip writes f's metadata and tensors (with zero data) and reads the result back.
func roundTrip(t *testing.T, f *File) {
	t.Helper()
	if f.Alignment > 1<<16 && len(f.tensors) > 0 {
		return // valid, but padding to it would make a needlessly large file
	}
	w := &Writer{Version: f.Version, Alignment: int(f.Alignment)}
	if _, ok := f.Value("general.alignment"); ok {
		w.Alignment = 0
	}
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		w.AddKV(k, v)
	}
	for _, ti := range f.Tensors() {
		w.AddTensor(ti.Name, ti.Type, ti.Dims, nil)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatalf("writing back an accepted file: %v", err)
	}
	g, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatalf("reading back a rewritten file: %v", err)
	}
	if !slices.Equal(f.Keys(), g.Keys()) || g.Alignment != f.Alignment || g.Version != f.Version {
		t.Fatalf("rewritten file differs: keys %v vs %v, alignment %d vs %d", f.Keys(), g.Keys(), f.Alignment, g.Alignment)
	}
	for _, k := range f.Keys() {
		a, _ := f.Value(k)
		b, _ := g.Value(k)
		if fmt.Sprintf("%#v", a) != fmt.Sprintf("%#v", b) {
			t.Fatalf("key %q: %#v became %#v", k, a, b)
		}
	}
	ft, gt := f.Tensors(), g.Tensors()
	if len(ft) != len(gt) {
		t.Fatalf("%d tensors became %d", len(ft), len(gt))
	}
	for i := range ft {
		if ft[i].Name != gt[i].Name || ft[i].Type != gt[i].Type || !slices.Equal(ft[i].Dims, gt[i].Dims) {
			t.Fatalf("tensor %d: %+v became %+v", i, ft[i], gt[i])
		}
	}
}
