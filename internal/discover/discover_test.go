package discover

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/gguf"
)

// writeGGUF writes a header-only GGUF file of architecture arch at path.
func writeGGUF(t *testing.T, path, arch string) {
	t.Helper()
	var buf bytes.Buffer
	if err := gguf.Write(&buf, []gguf.KV{{Key: "general.architecture", Value: arch}, {Key: "general.name", Value: "T " + arch}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	home := t.TempDir()
	p := Places{
		Kvlab:       filepath.Join(home, "kvlab"),
		HuggingFace: filepath.Join(home, "hf"),
		Ollama:      filepath.Join(home, "ollama"),
		LMStudio:    []string{filepath.Join(home, "lms"), filepath.Join(home, "missing")},
	}
	writeGGUF(t, filepath.Join(p.Kvlab, "tiny.gguf"), "llama")
	writeGGUF(t, filepath.Join(p.Kvlab, "sub", "other.gguf"), "qwen2")
	if err := os.WriteFile(filepath.Join(p.Kvlab, "notes.gguf"), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeGGUF(t, filepath.Join(p.Kvlab, "mmproj-vision.gguf"), "clip")

	// Hugging Face: a snapshot file is a symlink to a blob.
	repo := filepath.Join(p.HuggingFace, "models--org--Model-GGUF")
	blob := filepath.Join(repo, "blobs", "abc")
	writeGGUF(t, blob, "llama")
	snap := filepath.Join(repo, "snapshots", "rev1", "model-q4.gguf")
	if err := os.MkdirAll(filepath.Dir(snap), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(blob, snap); err != nil {
		t.Fatal(err)
	}

	// Ollama: a manifest names its model blob by digest.
	digest := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	writeGGUF(t, filepath.Join(p.Ollama, "blobs", "sha256-"+digest), "llama")
	manifest := `{"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:` + digest + `"},` +
		`{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:ffff"}]}`
	writeFile(t, filepath.Join(p.Ollama, "manifests", "registry.ollama.ai", "library", "tiny", "latest"), manifest)
	writeFile(t, filepath.Join(p.Ollama, "manifests", "registry.ollama.ai", "someone", "tiny", "q4"), manifest)
	writeFile(t, filepath.Join(p.Ollama, "manifests", "registry.ollama.ai", "library", "evil", "latest"),
		`{"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:../../../etc/passwd"}]}`)

	writeGGUF(t, filepath.Join(p.LMStudio[0], "pub", "repo", "tiny.gguf"), "llama")

	got := Find(p)
	var names []string
	for _, m := range got {
		names = append(names, string(m.Source)+" "+m.Name+" "+m.Arch)
	}
	want := []string{
		"kvlab sub/other qwen2",
		"kvlab tiny llama",
		"huggingface org/Model-GGUF/model-q4 llama",
		"ollama tiny:latest llama",
		"lmstudio pub/repo/tiny llama",
	}
	if !slices.Equal(names, want) {
		t.Errorf("found\n%q\nwant\n%q", names, want)
	}
	for _, m := range got {
		if m.Size <= 0 || m.Path == "" {
			t.Errorf("%s: size %d path %q", m.Name, m.Size, m.Path)
		}
	}
}

func TestFindNothing(t *testing.T) {
	if got := Find(DefaultPlaces(t.TempDir())); len(got) != 0 {
		t.Errorf("an empty home has models: %v", got)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFindHFFolders: Hugging Face safetensors folders in the hub cache and in kvlab's folder
// are listed, named by repo (hub) or folder path.
func TestFindHFFolders(t *testing.T) {
	src := fixtures.Path(t, "TinyStories-656K")
	home := t.TempDir()
	p := DefaultPlaces(home)
	p.HuggingFace = filepath.Join(home, "hub")
	link := func(dir string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
			if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	link(filepath.Join(p.HuggingFace, "models--org--tiny", "snapshots", "abc"))
	link(filepath.Join(p.Kvlab, "stories", "tiny-hf"))
	got := Find(p)
	var names []string
	for _, m := range got {
		names = append(names, m.Name+" "+m.Arch+" "+string(m.Source))
	}
	want := []string{"stories/tiny-hf llama kvlab", "org/tiny llama huggingface"}
	if !slices.Equal(names, want) {
		t.Fatalf("found %q, want %q", names, want)
	}
}
