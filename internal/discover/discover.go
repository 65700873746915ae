// Package discover finds GGUF model files (and Hugging Face safetensors folders) where people usually keep them: kvlab's own folder
// (~/.cache/kvlab/models), the Hugging Face hub cache, Ollama's model store (whose blobs are GGUF
// files named by its manifests) and LM Studio's models folder. It reads only each file's GGUF
// header, never its tensors.
package discover

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvlab/kvlab/native/hf"
)

// Source names where a model was found.
type Source string

// Sources, in the order Find searches them.
const (
	SourceFlag        Source = "flag"
	SourceKvlab       Source = "kvlab"
	SourceHuggingFace Source = "huggingface"
	SourceOllama      Source = "ollama"
	SourceLMStudio    Source = "lmstudio"
)

// Model is a GGUF file found on disk.
type Model struct {
	// Name is how the model is addressed (the OpenAI API's "model" field): the file name
	// without .gguf for plain files, "repo/file" for the Hugging Face cache, "name:tag" for
	// Ollama.
	Name string `json:"name"`
	// Path is the file (for Ollama and the Hugging Face cache, the blob it resolves to).
	Path string `json:"path"`
	// Source is where it was found.
	Source Source `json:"source"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Arch is general.architecture; Title is general.name ("" when absent).
	Arch  string `json:"arch"`
	Title string `json:"title,omitempty"`
}

// Places are the folders Find searches, one per source. An empty field is skipped.
type Places struct {
	Kvlab       string
	HuggingFace string // the hub cache: the folder holding models--org--name folders
	Ollama      string // the folder holding manifests/ and blobs/
	LMStudio    []string
}

// DefaultPlaces returns the usual folders for home, honouring HF_HUB_CACHE, HF_HOME and
// OLLAMA_MODELS when they are set.
func DefaultPlaces(home string) Places {
	p := Places{Kvlab: filepath.Join(home, ".cache", "kvlab", "models")}
	switch {
	case os.Getenv("HF_HUB_CACHE") != "":
		p.HuggingFace = os.Getenv("HF_HUB_CACHE")
	case os.Getenv("HF_HOME") != "":
		p.HuggingFace = filepath.Join(os.Getenv("HF_HOME"), "hub")
	default:
		p.HuggingFace = filepath.Join(home, ".cache", "huggingface", "hub")
	}
	if d := os.Getenv("OLLAMA_MODELS"); d != "" {
		p.Ollama = d
	} else {
		p.Ollama = filepath.Join(home, ".ollama", "models")
	}
	p.LMStudio = []string{filepath.Join(home, ".lmstudio", "models"), filepath.Join(home, ".cache", "lm-studio", "models")}
	return p
}

// Describe lists the folders in words, for the page that says where to put a model.
func (p Places) Describe() []string {
	var out []string
	add := func(what, dir string) {
		if dir != "" {
			out = append(out, what+": "+dir)
		}
	}
	add("kvlab", p.Kvlab)
	add("Hugging Face cache", p.HuggingFace)
	add("Ollama", p.Ollama)
	for _, d := range p.LMStudio {
		add("LM Studio", d)
	}
	return out
}

// maxDepth bounds how deep Find walks below a folder, so a stray symlink loop or a huge tree
// cannot stall the server's start.
const maxDepth = 6

// Find returns the GGUF models in the places, each file once (by its resolved path), in the
// order of the sources. Files that are not GGUF, or are vision projectors (mmproj), are left
// out. Unreadable folders are skipped: finding nothing is not an error.
func Find(p Places) []Model {
	var out []Model
	seen := map[string]bool{}
	add := func(name, path string, src Source) {
		real, err := filepath.EvalSymlinks(path)
		if err != nil || seen[real] {
			return
		}
		m, err := Inspect(path)
		if err != nil {
			return
		}
		seen[real] = true
		m.Name, m.Source = name, src
		out = append(out, m)
	}
	if p.Kvlab != "" {
		files, folders := walkModels(p.Kvlab, true)
		for _, f := range files {
			add(plainName(p.Kvlab, f), f, SourceKvlab)
		}
		for _, d := range folders {
			add(plainName(p.Kvlab, d), d, SourceKvlab)
		}
	}
	if p.HuggingFace != "" {
		for _, m := range huggingFace(p.HuggingFace) {
			add(m.Name, m.Path, SourceHuggingFace)
		}
	}
	if p.Ollama != "" {
		for _, m := range ollama(p.Ollama) {
			add(m.Name, m.Path, SourceOllama)
		}
	}
	for _, dir := range p.LMStudio {
		files, _ := walkModels(dir, false)
		for _, f := range files {
			add(plainName(dir, f), f, SourceLMStudio)
		}
	}
	return uniqueNames(out)
}

// uniqueNames suffixes repeated names with #2, #3… so each name addresses one file.
func uniqueNames(ms []Model) []Model {
	count := map[string]int{}
	for i := range ms {
		count[ms[i].Name]++
		if n := count[ms[i].Name]; n > 1 {
			ms[i].Name = fmt.Sprintf("%s#%d", ms[i].Name, n)
		}
	}
	return ms
}

// Inspect reads the GGUF header of the file at path (only the header) and describes it; the
// name is the file name without .gguf.
//
// A Hugging Face model folder (config.json + *.safetensors, native/hf) is described from its
// config and safetensors headers; its name is the folder's name and Size the weights' bytes.
func Inspect(path string) (Model, error) {
	f, err := hf.OpenHeader(path)
	if err != nil {
		return Model{}, err
	}
	defer f.Close()
	title, _ := f.String("general.name")
	name := strings.TrimSuffix(filepath.Base(path), ".gguf")
	if hf.IsFolder(path) {
		name = filepath.Base(filepath.Clean(path))
	}
	return Model{Name: name, Path: path, Source: SourceFlag, Size: f.Size(), Arch: f.Architecture(), Title: title}, nil
}

// hasSafetensors reports whether dir is a Hugging Face model folder with safetensors weights.
func hasSafetensors(dir string) bool {
	if !hf.IsFolder(dir) {
		return false
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	return len(m) > 0
}

// isModelFile reports whether a file name is a GGUF model (not a vision projector).
func isModelFile(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasSuffix(lower, ".gguf") && !strings.Contains(lower, "mmproj")
}

// walkModels lists, in one walk of dir at most maxDepth deep, the .gguf files below it
// (following symlinked files but not folders) and, when folders is set, the Hugging Face model
// folders (not inside one another); both sorted.
func walkModels(dir string, folders bool) (files, hfDirs []string) {
	root := filepath.Clean(dir)
	inside := "" // the Hugging Face folder the walk is in, if any
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil
		}
		if !d.IsDir() {
			if isModelFile(d.Name()) {
				files = append(files, path)
			}
			return nil
		}
		if rel, _ := filepath.Rel(root, path); strings.Count(rel, string(filepath.Separator)) >= maxDepth {
			return filepath.SkipDir
		}
		if inside != "" && strings.HasPrefix(path, inside+string(filepath.Separator)) {
			return nil
		}
		inside = ""
		if folders && path != root && hasSafetensors(path) {
			hfDirs = append(hfDirs, path)
			inside = path
		}
		return nil
	})
	slices.Sort(files)
	slices.Sort(hfDirs)
	return files, hfDirs
}

// plainName names a file found under dir: its path below dir without .gguf, slash-separated.
func plainName(dir, path string) string {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		rel = filepath.Base(path)
	}
	return strings.TrimSuffix(filepath.ToSlash(rel), ".gguf")
}

// huggingFace lists the GGUF files of the hub cache: models--org--name/snapshots/<rev>/…, named
// org/name/file (the newest snapshot of each file first, so older revisions get #2).
func huggingFace(hub string) []Model {
	repos, err := os.ReadDir(hub)
	if err != nil {
		return nil
	}
	var out []Model
	for _, r := range repos {
		if !r.IsDir() || !strings.HasPrefix(r.Name(), "models--") {
			continue
		}
		repo := strings.ReplaceAll(strings.TrimPrefix(r.Name(), "models--"), "--", "/")
		snaps := filepath.Join(hub, r.Name(), "snapshots")
		revs, err := os.ReadDir(snaps)
		if err != nil {
			continue
		}
		// The revision refs/main points at goes first.
		main, _ := os.ReadFile(filepath.Join(hub, r.Name(), "refs", "main"))
		slices.SortStableFunc(revs, func(a, b fs.DirEntry) int {
			am, bm := a.Name() == strings.TrimSpace(string(main)), b.Name() == strings.TrimSpace(string(main))
			switch {
			case am && !bm:
				return -1
			case bm && !am:
				return 1
			}
			return strings.Compare(a.Name(), b.Name())
		})
		for _, rev := range revs {
			dir := filepath.Join(snaps, rev.Name())
			files, _ := walkModels(dir, false)
			for _, f := range files {
				out = append(out, Model{Name: repo + "/" + plainName(dir, f), Path: f})
			}
			if hasSafetensors(dir) {
				out = append(out, Model{Name: repo, Path: dir})
			}
		}
	}
	return out
}

// ollamaModelType is the media type of the manifest layer that holds the GGUF weights.
const ollamaModelType = "application/vnd.ollama.image.model"

// ollamaManifest is the part of an Ollama manifest that names the weights.
type ollamaManifest struct {
	Layers []struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
	} `json:"layers"`
}

// ollama lists the models of an Ollama store: every manifest under manifests/<host>/<ns>/<name>/<tag>
// whose model layer is a blob in blobs/ (sha256-<hex>). Models of the default registry and
// namespace are named name:tag, others ns/name:tag or host/ns/name:tag.
func ollama(root string) []Model {
	var out []Model
	manifests := filepath.Join(root, "manifests")
	_ = filepath.WalkDir(manifests, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(manifests, path)
		if err != nil {
			return nil
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 4 {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) > 1<<20 {
			return nil
		}
		var m ollamaManifest
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		for _, l := range m.Layers {
			if l.MediaType != ollamaModelType {
				continue
			}
			blob, err := blobPath(root, l.Digest)
			if err != nil {
				continue
			}
			out = append(out, Model{Name: ollamaName(parts), Path: blob})
		}
		return nil
	})
	return out
}

// ollamaName names a manifest from its host, namespace, model and tag.
func ollamaName(p []string) string {
	switch {
	case p[0] == "registry.ollama.ai" && p[1] == "library":
		return p[2] + ":" + p[3]
	case p[0] == "registry.ollama.ai":
		return p[1] + "/" + p[2] + ":" + p[3]
	}
	return p[0] + "/" + p[1] + "/" + p[2] + ":" + p[3]
}

// blobPath turns a digest "sha256:<hex>" into the blob's file, refusing anything that is not a
// plain hex digest (a manifest must not point outside blobs/).
func blobPath(root, digest string) (string, error) {
	algo, hex, ok := strings.Cut(digest, ":")
	if !ok || algo != "sha256" || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", errors.New("discover: bad digest " + digest)
	}
	return filepath.Join(root, "blobs", "sha256-"+hex), nil
}
