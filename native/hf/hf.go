// Package hf reads a Hugging Face model folder — config.json, the weights in *.safetensors
// (one file, or shards listed by model.safetensors.index.json) and tokenizer.json — as the GGUF
// file llama.cpp's converter would make of it, so that every part of kvlab that takes a GGUF
// file takes the folder too.
//
// Nothing is written: Open returns a *gguf.File assembled in memory whose metadata keys are the
// converter's ("llama.embedding_length", "tokenizer.ggml.tokens", …) and whose tensors have the
// GGUF names (blk.N.attn_q.weight, …) and read in place from the mapped safetensors files (F32,
// F16 and BF16). For the llama architecture the rows of the Q and K projections are permuted
// from the Hugging Face rotate-half layout to the interleaved pairs of GGUF's llama RoPE, as the
// converter does; those two tensors per layer are the only ones copied. (Keeping the rotate-half
// layout and running neox RoPE instead would give the same outputs, but then the file would not
// be the GGUF a user compares with, and every engine would need to be told the layout: the
// permutation is exact, a reordering of rows, and keeps everything downstream unchanged.)
//
// Every size read from the folder is bounded before it is used: the JSON files by MaxJSON, the
// safetensors header by MaxHeader, and each tensor's byte range by its file, dtype and shape.
package hf

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/internal/limits"
	"github.com/kvlab/kvlab/native/gguf"
)

// MaxJSON bounds config.json, tokenizer_config.json and the shard index; tokenizer.json may be
// MaxTokenizerJSON.
const (
	MaxJSON          = 16 << 20
	MaxTokenizerJSON = 256 << 20
	maxShards        = 4096
)

// IsFolder reports whether path is a directory holding a config.json: a Hugging Face model
// folder for Open.
func IsFolder(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return false
	}
	st, err = os.Stat(filepath.Join(path, "config.json"))
	return err == nil && st.Mode().IsRegular()
}

// OpenModel opens path as a model: a Hugging Face folder (Open) or a GGUF file (gguf.Open).
func OpenModel(path string) (*gguf.File, error) {
	if IsFolder(path) {
		return Open(path)
	}
	return gguf.Open(path)
}

// OpenHeader reads the model at path for its description: a Hugging Face folder (Open, the
// safetensors mapped, not read) or only the header of a GGUF file (gguf.Read: the File has no
// tensor data). path must be a model path (limits.ModelPath): a FIFO or device is refused
// before it is opened, so it cannot block. Close the File when done.
func OpenHeader(path string) (*gguf.File, error) {
	if err := limits.ModelPath(path); err != nil {
		return nil, err
	}
	if IsFolder(path) {
		return Open(path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() { // replaced since the check
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	f, err := gguf.Read(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// readJSON reads a small file of the folder, at most limit bytes; a missing file is (nil, nil)
// when optional.
func readJSON(dir, name string, limit int64, optional bool) ([]byte, error) {
	p := filepath.Join(dir, name)
	st, err := os.Stat(p)
	if err != nil {
		if optional && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("hf: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("hf: %s: not a regular file", p)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("hf: %s is %d bytes, more than the %d allowed", p, st.Size(), limit)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("hf: %s: %w", p, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("hf: %s is more than the %d bytes allowed", p, limit)
	}
	return b, nil
}

// shard is one mapped safetensors file.
type shard struct {
	name    string
	data    []byte // the data section (after the header)
	tensors []stTensor
}

// Open reads the Hugging Face model folder dir (see the package comment). The File maps the
// safetensors files until Close.
func Open(dir string) (*gguf.File, error) {
	cb, err := readJSON(dir, "config.json", MaxJSON, false)
	if err != nil {
		return nil, err
	}
	cfg, arch, err := parseConfig(cb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	files, err := shardFiles(dir)
	if err != nil {
		return nil, err
	}
	var releases []func() error
	release := func() error {
		var first error
		for _, r := range releases {
			if r != nil {
				if err := r(); err != nil && first == nil {
					first = err
				}
			}
		}
		releases = nil
		return first
	}
	ok := false
	defer func() {
		if !ok {
			release()
		}
	}()
	var shards []shard
	var size int64
	for _, name := range files {
		b, rel, err := gguf.MapFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("hf: %w", err)
		}
		releases = append(releases, rel)
		size += int64(len(b))
		sh, err := parseShard(name, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
		shards = append(shards, sh)
	}
	tensors, err := convertTensors(cfg, arch, shards)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	name := filepath.Base(filepath.Clean(dir))
	kv, factors, err := cfg.metadata(arch, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if factors != nil {
		b := make([]byte, 4*len(factors))
		for i, f := range factors {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		tensors = append(tensors, gguf.Tensor{TensorInfo: gguf.TensorInfo{Name: "rope_freqs.weight", Dims: []uint64{uint64(len(factors))}, Type: gguf.F32}, Data: b})
	}
	vocabRows := 0
	for _, t := range tensors {
		if t.Name == "token_embd.weight" && len(t.Dims) == 2 {
			vocabRows = int(t.Dims[1])
		}
	}
	tj, err := readJSON(dir, "tokenizer.json", MaxTokenizerJSON, true)
	if err != nil {
		return nil, err
	}
	if tj != nil {
		tc, err := readJSON(dir, "tokenizer_config.json", MaxJSON, true)
		if err != nil {
			return nil, err
		}
		tkv, err := tokenizerMetadata(tj, tc, cfg, vocabRows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		kv = append(kv, tkv...)
	}
	f, err := gguf.Assemble(kv, tensors, size, release)
	if err != nil {
		return nil, fmt.Errorf("hf: %s: %w", dir, err)
	}
	ok = true
	return f, nil
}

// shardFiles lists the safetensors files: those model.safetensors.index.json maps tensors to,
// or model.safetensors, or every *.safetensors file of dir.
func shardFiles(dir string) ([]string, error) {
	ib, err := readJSON(dir, "model.safetensors.index.json", MaxJSON, true)
	if err != nil {
		return nil, err
	}
	if ib != nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(ib, &idx); err != nil {
			return nil, fmt.Errorf("hf: %s: %v", filepath.Join(dir, "model.safetensors.index.json"), err)
		}
		seen := map[string]bool{}
		var out []string
		for _, f := range idx.WeightMap {
			if seen[f] {
				continue
			}
			if f == "" || f != filepath.Base(f) || f == "." || f == ".." || strings.ContainsAny(f, `/\`) {
				return nil, fmt.Errorf("hf: model.safetensors.index.json names the shard %q, not a file of the folder", clip(f))
			}
			seen[f] = true
			out = append(out, f)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("hf: %s: model.safetensors.index.json maps no tensors", dir)
		}
		if len(out) > maxShards {
			return nil, fmt.Errorf("hf: %s: %d shards, more than %d", dir, len(out), maxShards)
		}
		sort.Strings(out)
		return out, nil
	}
	if st, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil && st.Mode().IsRegular() {
		return []string{"model.safetensors"}, nil
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	var out []string
	for _, p := range m {
		out = append(out, filepath.Base(p))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("hf: %s has a config.json but no *.safetensors weights", dir)
	}
	if len(out) > maxShards {
		return nil, fmt.Errorf("hf: %s: %d safetensors files, more than %d", dir, len(out), maxShards)
	}
	return out, nil
}

// parseShard parses the header of one mapped safetensors file.
func parseShard(name string, b []byte) (shard, error) {
	n, err := headerLen(b, int64(len(b)))
	if err != nil {
		return shard{}, err
	}
	data := b[8+n:]
	ts, _, err := parseHeader(b[8:8+n], uint64(len(data)))
	if err != nil {
		return shard{}, err
	}
	return shard{name: name, data: data, tensors: ts}, nil
}

var layerName = regexp.MustCompile(`^model\.layers\.(\d{1,6})\.(.+)$`)

// ggufNames maps the Hugging Face tensor names of the llama family to GGUF's (within a layer,
// after "model.layers.N.").
var ggufNames = map[string]string{
	"input_layernorm.weight":          "attn_norm.weight",
	"self_attn.q_proj.weight":         "attn_q.weight",
	"self_attn.q_proj.bias":           "attn_q.bias",
	"self_attn.k_proj.weight":         "attn_k.weight",
	"self_attn.k_proj.bias":           "attn_k.bias",
	"self_attn.v_proj.weight":         "attn_v.weight",
	"self_attn.v_proj.bias":           "attn_v.bias",
	"self_attn.o_proj.weight":         "attn_output.weight",
	"self_attn.o_proj.bias":           "attn_output.bias",
	"self_attn.q_norm.weight":         "attn_q_norm.weight",
	"self_attn.k_norm.weight":         "attn_k_norm.weight",
	"post_attention_layernorm.weight": "ffn_norm.weight",
	"mlp.gate_proj.weight":            "ffn_gate.weight",
	"mlp.up_proj.weight":              "ffn_up.weight",
	"mlp.down_proj.weight":            "ffn_down.weight",
}

var globalNames = map[string]string{
	"model.embed_tokens.weight": "token_embd.weight",
	"model.norm.weight":         "output_norm.weight",
	"lm_head.weight":            "output.weight",
}

// ggufName returns the GGUF name of a Hugging Face tensor, "" for one the converter drops
// (rotary inverse frequencies), or an error for one it does not know.
func ggufName(name string, layers int) (string, error) {
	if strings.HasSuffix(name, "rotary_emb.inv_freq") {
		return "", nil
	}
	if g, ok := globalNames[name]; ok {
		return g, nil
	}
	if m := layerName.FindStringSubmatch(name); m != nil {
		l, _ := strconv.Atoi(m[1])
		if l >= layers {
			return "", fmt.Errorf("hf: tensor %q: layer %d, but config.json num_hidden_layers is %d", clip(name), l, layers)
		}
		if g, ok := ggufNames[m[2]]; ok {
			return "blk." + strconv.Itoa(l) + "." + g, nil
		}
	}
	return "", fmt.Errorf("hf: tensor %q has no GGUF name (not a llama-family weight kvlab converts)", clip(name))
}

// ggufType maps a safetensors dtype to the ggml type kept as is.
func ggufType(name, dtype string) (gguf.Type, error) {
	switch dtype {
	case "F32":
		return gguf.F32, nil
	case "F16":
		return gguf.F16, nil
	case "BF16":
		return gguf.BF16, nil
	}
	return 0, fmt.Errorf("hf: tensor %q: dtype %s is not supported (F32, F16 and BF16 are)", clip(name), dtype)
}

// convertTensors names, types and (for Q and K of llama) permutes the tensors of all shards.
func convertTensors(cfg *config, arch archInfo, shards []shard) ([]gguf.Tensor, error) {
	var out []gguf.Tensor
	seen := map[string]string{}
	for _, sh := range shards {
		for _, t := range sh.tensors {
			g, err := ggufName(t.Name, cfg.Layers)
			if err != nil {
				return nil, err
			}
			if g == "" {
				continue
			}
			if prev, dup := seen[g]; dup {
				return nil, fmt.Errorf("hf: tensor %q is in both %s and %s", clip(t.Name), prev, sh.name)
			}
			seen[g] = sh.name
			typ, err := ggufType(t.Name, t.Dtype)
			if err != nil {
				return nil, err
			}
			if len(t.Shape) == 0 || len(t.Shape) > gguf.MaxDims {
				return nil, fmt.Errorf("hf: tensor %q has %d dims, want 1 to %d", clip(t.Name), len(t.Shape), gguf.MaxDims)
			}
			dims := make([]uint64, len(t.Shape))
			for i, d := range t.Shape {
				if d == 0 {
					return nil, fmt.Errorf("hf: tensor %q has an empty shape %v", clip(t.Name), t.Shape)
				}
				dims[len(dims)-1-i] = d // safetensors is outermost first, GGUF ne[0] first
			}
			data := sh.data[t.Begin:t.End:t.End]
			if arch.permute {
				heads := 0
				switch {
				case strings.HasSuffix(g, ".attn_q.weight"), strings.HasSuffix(g, ".attn_q.bias"):
					heads = cfg.Heads
				case strings.HasSuffix(g, ".attn_k.weight"), strings.HasSuffix(g, ".attn_k.bias"):
					heads = cfg.KVHeads
				}
				if heads > 0 {
					if data, err = permuteRows(t.Name, data, dims, heads); err != nil {
						return nil, err
					}
				}
			}
			out = append(out, gguf.Tensor{TensorInfo: gguf.TensorInfo{Name: g, Dims: dims, Type: typ}, Data: data})
		}
	}
	if _, ok := seen["token_embd.weight"]; !ok {
		// Tied embeddings saved once, under lm_head.weight (safetensors drops the alias).
		i := slices.IndexFunc(out, func(t gguf.Tensor) bool { return t.Name == "output.weight" })
		if i < 0 || (cfg.TieEmbeddings != nil && !*cfg.TieEmbeddings) {
			return nil, errors.New("hf: no model.embed_tokens.weight tensor")
		}
		out[i].Name = "token_embd.weight"
		seen["token_embd.weight"] = seen["output.weight"]
		delete(seen, "output.weight")
	}
	if _, ok := seen["output.weight"]; !ok && cfg.TieEmbeddings != nil && !*cfg.TieEmbeddings {
		return nil, errors.New("hf: config.json says tie_word_embeddings is false, but there is no lm_head.weight")
	}
	return out, nil
}

// permuteRows reorders the rows of a Q or K projection (or its bias) from the rotate-half
// layout, where head h pairs rows i and i + d/2, to the interleaved one, where it pairs rows
// 2i and 2i+1: new row h·d + 2i + s = old row h·d + s·d/2 + i, as llama.cpp's converter
// permutes them. It returns a new slice.
func permuteRows(name string, data []byte, dims []uint64, heads int) ([]byte, error) {
	rows := dims[len(dims)-1]
	if len(dims) > 2 || rows%uint64(2*heads) != 0 {
		return nil, fmt.Errorf("hf: tensor %q: %d rows do not split into %d heads of pairs", clip(name), rows, heads)
	}
	rowBytes := uint64(len(data)) / rows
	d := int(rows) / heads
	half := d / 2
	out := make([]byte, len(data))
	rb := int(rowBytes)
	for h := 0; h < heads; h++ {
		for i := 0; i < half; i++ {
			for s := 0; s < 2; s++ {
				dst := h*d + 2*i + s
				src := h*d + s*half + i
				copy(out[dst*rb:(dst+1)*rb], data[src*rb:(src+1)*rb])
			}
		}
	}
	return out, nil
}
