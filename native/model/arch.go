package model

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/ml"
)

// ErrUnsupportedArch is returned by Load for a model whose general.architecture is not one of
// the llama-family architectures this package runs.
var ErrUnsupportedArch = errors.New("architecture is not supported")

// RopeStyle is how rotary position embedding pairs the dimensions of a head.
type RopeStyle int

const (
	// RopeNorm rotates adjacent pairs (x[2i], x[2i+1]): llama.cpp's LLAMA_ROPE_TYPE_NORM, used
	// by llama GGUF files (the converters permute Q and K rows into this layout).
	RopeNorm RopeStyle = iota
	// RopeNeox rotates the pairs (x[i], x[i+n/2]) of the two halves of the rotated dimensions:
	// llama.cpp's LLAMA_ROPE_TYPE_NEOX, the Hugging Face "rotate half" layout (qwen2).
	RopeNeox
)

// String returns "norm" or "neox".
func (s RopeStyle) String() string {
	if s == RopeNeox {
		return "neox"
	}
	return "norm"
}

// Arch is one llama-family architecture: the GGUF name of its metadata prefix and the variant
// of the shared decoder block it runs. Each architecture registers itself from its own file.
type Arch struct {
	// Name is general.architecture and the prefix of the hyperparameter keys ("llama").
	Name string
	// Rope is the RoPE pairing.
	Rope RopeStyle
	// QKVBias makes the attn_q/k/v biases required (they are optional otherwise).
	QKVBias bool
	// MoE: a file with expert_count runs a mixture-of-experts FFN (ml.MoE) in place of the
	// dense one; without it, such a file is refused.
	MoE bool
	// QwenMoE: the experts are expert_feed_forward_length wide (default feed_forward_length /
	// expert_used_count, as llama.cpp's qwen2moe/qwen3moe; mixtral's are feed_forward_length)
	// and NormTopK renormalizes the picked experts' weights (mixtral renormalizes always).
	QwenMoE, NormTopK bool
	// Shared: every MoE layer has a shared expert (Block.ShGate…, qwen2moe) of
	// expert_shared_feed_forward_length (default feed_forward_length).
	Shared bool
	// Fused: the architecture's files may hold Q, K and V as one attn_qkv tensor and the FFN's
	// gate and up as one ffn_up of twice the rows; the separate tensors are then optional and
	// Check fills them in from the fused ones (row ranges of the same data).
	Fused bool
	// Forward is the architecture's forward pass over one batch, written once against
	// native/ml for every backend (see llama.go).
	Forward func(b ml.Backend, m *Model, bt *ml.Batch)
	// Layer, when set, returns a pointer to a new per-layer struct of weights beyond Block,
	// bound by its gguf tags with the "blk.N." prefix; Model.Layer(l) returns it.
	Layer func() any
	// Check, when set, checks the shapes of the Layer weights against the hyperparameters (and
	// may set the model's per-layer sliding windows and the architecture's own settings, or
	// fill Block's matrices from fused ones); it runs before the shape checks of Block.
	Check func(m *Model) error
	// Ops names the operations beyond ml.Backend that Forward needs (a device backend without
	// them names them in its error); Supports, when set, checks that a backend has them.
	Ops      []string
	Supports func(m *Model, b ml.Backend) error
}

// maxExperts bounds expert_count before anything is sized by it.
const maxExperts = 1024

// ArchOps returns the operations beyond ml.Backend that architecture name needs (Arch.Ops),
// nil for one that needs none or is not registered.
func ArchOps(name string) []string { return archs[name].Ops }

var archs = map[string]Arch{}

func register(a Arch) { archs[a.Name] = a }

// Archs returns the names of the supported architectures, sorted.
func Archs() []string {
	var out []string
	for n := range archs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// UnsupportedArchError names an architecture Load does not run; it matches ErrUnsupportedArch
// with errors.Is.
type UnsupportedArchError struct{ Name string }

// Error says which architecture is not supported and lists the supported ones.
func (e *UnsupportedArchError) Error() string {
	msg := fmt.Sprintf("model: architecture %q is not supported (supported: %s)", e.Name, strings.Join(Archs(), ", "))
	if n := ArchNeeds(e.Name); n != "" {
		msg += "; it needs " + n
	}
	return msg
}

// Unwrap returns ErrUnsupportedArch.
func (e *UnsupportedArchError) Unwrap() error { return ErrUnsupportedArch }

func lookupArch(name string) (Arch, error) {
	a, ok := archs[name]
	if !ok {
		return Arch{}, &UnsupportedArchError{Name: name}
	}
	return a, nil
}

// Hparams are a model's hyperparameters, read from "{arch}.*" metadata keys.
type Hparams struct {
	Arch     string
	Embd     int // embedding_length: the residual stream width
	Layers   int // block_count
	FFN      int // feed_forward_length
	Heads    int // attention.head_count
	KVHeads  int // attention.head_count_kv (default Heads)
	HeadDimK int // attention.key_length (default Embd/Heads)
	HeadDimV int // attention.value_length (default Embd/Heads)
	Vocab    int // rows of token_embd
	Context  int // context_length: the trained context in tokens (0 when absent)
	// Experts and ExpertsUsed are expert_count and expert_used_count: a mixture-of-experts FFN
	// of Experts expert FFNs of which a router picks ExpertsUsed per token (0: a dense FFN).
	Experts, ExpertsUsed int
	// ExpertFFN is each expert's FFN width (see Arch.QwenMoE), SharedFFN the shared expert's
	// (Arch.Shared); 0 without.
	ExpertFFN, SharedFFN int
	RMSEps               float32
	RopeBase             float32 // rope.freq_base (default 10000)
	RopeDims             int     // rope.dimension_count (default HeadDimK): the leading dims of a head rotated
	// RopeScale divides positions before rotation: rope.scaling.factor when rope.scaling.type is
	// "linear" or absent (1 otherwise).
	RopeScale float32
	// RopeScaling is rope.scaling.type: "none", "linear" or "yarn" ("" when the file has no
	// scaling). llama-3 frequency scaling has no type: it is the rope_freqs tensor.
	RopeScaling string
	// RopeFactor is rope.scaling.factor (1 when absent): the context extension.
	RopeFactor float32
	// RopeOrigCtx is rope.scaling.original_context_length, the context the model was trained
	// at before the extension (default Context).
	RopeOrigCtx int
	// RopeAttnFactor is rope.scaling.attn_factor (default 1), a magnitude on every rotation.
	RopeAttnFactor float32
	// YaRN: rope.scaling.yarn_ext_factor (default 1 for yarn, else 0), yarn_attn_factor
	// (default 1), yarn_beta_fast (32), yarn_beta_slow (1), yarn_log_multiplier (0).
	YarnExtFactor, YarnAttnFactor, YarnBetaFast, YarnBetaSlow, YarnLogMul float32
}

// readHparams reads the hyperparameters of architecture a from f.
func readHparams(f *gguf.File, a Arch) (Hparams, error) {
	h := Hparams{Arch: a.Name}
	key := func(k string) string { return a.Name + "." + k }
	var missing []string
	req := func(k string) int {
		v, ok := f.Uint(key(k))
		if !ok || v == 0 || v > math.MaxInt32 {
			missing = append(missing, key(k))
			return 0
		}
		return int(v)
	}
	opt := func(k string, def int) int {
		if v, ok := f.Uint(key(k)); ok && v > 0 && v <= math.MaxInt32 {
			return int(v)
		}
		return def
	}
	h.Embd = req("embedding_length")
	h.Layers = req("block_count")
	h.FFN = req("feed_forward_length")
	h.Heads = req("attention.head_count")
	if len(missing) > 0 {
		return h, fmt.Errorf("model: %s: missing or invalid hyperparameters: %s", a.Name, strings.Join(missing, ", "))
	}
	h.KVHeads = opt("attention.head_count_kv", h.Heads)
	h.HeadDimK = opt("attention.key_length", h.Embd/h.Heads)
	h.HeadDimV = opt("attention.value_length", h.Embd/h.Heads)
	h.Context = opt("context_length", 0)
	h.Experts = opt("expert_count", 0)
	h.ExpertsUsed = opt("expert_used_count", 0)
	if h.Experts > 0 && !a.MoE {
		return h, fmt.Errorf("model: %s has %s %d: the engine runs %s with a dense FFN only", a.Name, key("expert_count"), h.Experts, a.Name)
	}
	if h.Experts > 0 && (h.ExpertsUsed < 1 || h.ExpertsUsed > h.Experts || h.Experts > maxExperts) {
		return h, fmt.Errorf("model: %s %d and %s %d: want 1 to %d experts, 1 to all of them used per token",
			key("expert_count"), h.Experts, key("expert_used_count"), h.ExpertsUsed, maxExperts)
	}
	if h.Experts > 0 {
		h.ExpertFFN = h.FFN
		if a.QwenMoE {
			h.ExpertFFN = opt("expert_feed_forward_length", max(1, h.FFN/h.ExpertsUsed))
		}
		if a.Shared {
			h.SharedFFN = opt("expert_shared_feed_forward_length", h.FFN)
		}
	}
	h.RopeDims = opt("rope.dimension_count", h.HeadDimK)
	h.RMSEps = 1e-5
	if v, ok := f.Float(key("attention.layer_norm_rms_epsilon")); ok && v > 0 {
		h.RMSEps = float32(v)
	}
	h.RopeBase = 10000
	if v, ok := f.Float(key("rope.freq_base")); ok && v > 0 {
		h.RopeBase = float32(v)
	}
	if err := readRopeScaling(f, &h, key); err != nil {
		return h, err
	}
	switch {
	case h.Heads%h.KVHeads != 0:
		return h, fmt.Errorf("model: %s %d attention heads do not group onto %s %d KV heads", key("attention.head_count"), h.Heads, key("attention.head_count_kv"), h.KVHeads)
	case h.HeadDimK < 2 || h.HeadDimV < 1:
		return h, fmt.Errorf("model: head dimensions K %d, V %d are too small", h.HeadDimK, h.HeadDimV)
	case h.RopeDims%2 != 0 || h.RopeDims > h.HeadDimK:
		if _, set := f.Value(key("rope.dimension_count")); !set {
			return h, fmt.Errorf("model: the head dimension %d (%s, or %s / %s) is odd: RoPE needs an even one", h.HeadDimK,
				key("attention.key_length"), key("embedding_length"), key("attention.head_count"))
		}
		return h, fmt.Errorf("model: %s %d must be even and at most the head dimension %d", key("rope.dimension_count"), h.RopeDims, h.HeadDimK)
	}
	return h, nil
}

// readRopeScaling reads the rope.scaling.* keys as llama.cpp does: a factor without a type
// is linear, "none" disables the factor, "yarn" blends interpolated and extrapolated angles.
// Present values that are not finite and positive are errors naming their key.
func readRopeScaling(f *gguf.File, h *Hparams, key func(string) string) error {
	num := func(k string, def float32, positive bool) (float32, error) {
		v, ok := f.Value(key(k))
		if !ok {
			return def, nil
		}
		x, isNum := f.Float(key(k))
		if !isNum || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || (positive && x == 0) || x > math.MaxFloat32 {
			return 0, fmt.Errorf("model: %s = %v: want a finite number >= 0", key(k), clipValue(v))
		}
		return float32(x), nil
	}
	var err error
	h.RopeScale, h.RopeFactor = 1, 1
	t, hasType := f.String(key("rope.scaling.type"))
	if _, set := f.Value(key("rope.scaling.type")); set && !hasType {
		return fmt.Errorf("model: %s is not a string", key("rope.scaling.type"))
	}
	factor, err := num("rope.scaling.factor", 0, false)
	if err != nil {
		return err
	}
	if factor == 0 { // llama.cpp: 0 means no scaling
		factor = 1
	}
	switch {
	case !hasType && factor == 1:
	case !hasType || t == "linear":
		h.RopeScaling, h.RopeScale, h.RopeFactor = "linear", factor, factor
	case t == "none":
		h.RopeScaling = "none"
	case t == "yarn":
		h.RopeScaling, h.RopeFactor = "yarn", factor
	default:
		return fmt.Errorf("model: %s = %q is not supported (supported: none, linear, yarn; llama-3 scaling is the rope_freqs tensor)",
			key("rope.scaling.type"), clipValue(t))
	}
	h.RopeOrigCtx = h.Context
	if v, ok := f.Uint(key("rope.scaling.original_context_length")); ok && v > 0 && v <= math.MaxInt32 {
		h.RopeOrigCtx = int(v)
	} else if _, set := f.Value(key("rope.scaling.original_context_length")); set {
		return fmt.Errorf("model: %s: want a positive integer", key("rope.scaling.original_context_length"))
	}
	if h.RopeAttnFactor, err = num("rope.scaling.attn_factor", 1, true); err != nil {
		return err
	}
	if h.YarnAttnFactor, err = num("rope.scaling.yarn_attn_factor", 1, true); err != nil {
		return err
	}
	h.YarnExtFactor = 0
	if h.RopeScaling == "yarn" {
		h.YarnExtFactor = 1
	}
	if v, set := f.Value(key("rope.scaling.yarn_ext_factor")); set {
		x, isNum := f.Float(key("rope.scaling.yarn_ext_factor"))
		switch {
		case !isNum || math.IsNaN(x) || x > 1:
			return fmt.Errorf("model: %s = %v: want 0 to 1 (negative: the default)", key("rope.scaling.yarn_ext_factor"), clipValue(v))
		case x >= 0: // negative is llama.cpp's "unset"
			h.YarnExtFactor = float32(x)
		}
	}
	if h.YarnBetaFast, err = num("rope.scaling.yarn_beta_fast", 32, true); err != nil {
		return err
	}
	if h.YarnBetaSlow, err = num("rope.scaling.yarn_beta_slow", 1, true); err != nil {
		return err
	}
	if h.YarnLogMul, err = num("rope.scaling.yarn_log_multiplier", 0, false); err != nil {
		return err
	}
	if h.RopeScaling == "yarn" && h.RopeOrigCtx <= 0 {
		return fmt.Errorf("model: %s is yarn, but neither %s nor %s is set", key("rope.scaling.type"),
			key("rope.scaling.original_context_length"), key("context_length"))
	}
	return nil
}

// binder fills weight structs from a GGUF file by their field tags: `gguf:"name"` binds the
// tensor of that name (prefixed with "blk.N." inside a block); the option after a comma is
// "optional" (absent is allowed) or "qkvbias" (required when the architecture has QKV bias,
// optional otherwise). A *Matrix field binds a 2-D tensor in place; a []float32 field binds a
// 1-D tensor converted to float32.
type binder struct {
	f    *gguf.File
	arch Arch
	// moe makes the "dense" tensors optional and the "experts" ones required.
	moe bool
}

// bind fills the tagged fields of the struct that dst points to.
func (b binder) bind(dst any, prefix string) error {
	v := reflect.ValueOf(dst).Elem()
	for i := 0; i < v.NumField(); i++ {
		tag, ok := v.Type().Field(i).Tag.Lookup("gguf")
		if !ok {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		name = prefix + name
		optional := opts == "optional" || (opts == "qkvbias" && !b.arch.QKVBias) || (opts == "dense" && (b.moe || b.arch.Fused)) || (opts == "experts" && !b.moe) ||
			(opts == "unfused" && b.arch.Fused) || (opts == "shared" && !(b.moe && b.arch.Shared))
		info, ok := b.f.Tensor(name)
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("model: %s: tensor %q is missing", b.arch.Name, name)
		}
		data, err := b.f.TensorData(name)
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		switch fv := v.Field(i); fv.Interface().(type) {
		case []*Matrix:
			// A 3-D tensor of experts: ne2 matrices of ne1 rows × ne0 columns, one after another.
			if len(info.Dims) != 3 || info.Dims[2] == 0 || info.Dims[2] > maxExperts {
				return fmt.Errorf("model: tensor %q has dims %v, want 3 (columns, rows, 1 to %d experts)", name, info.Dims, maxExperts)
			}
			ne := int(info.Dims[2])
			per := len(data) / ne
			if per*ne != len(data) {
				return fmt.Errorf("model: tensor %q: %d bytes do not split into %d experts", name, len(data), ne)
			}
			ms := make([]*Matrix, ne)
			for e := range ms {
				m, err := NewMatrix(fmt.Sprintf("%s[%d]", name, e), info.Type, int(info.Dims[1]), int(info.Dims[0]), data[e*per:(e+1)*per])
				if err != nil {
					return err
				}
				ms[e] = m
			}
			fv.Set(reflect.ValueOf(ms))
		case *Matrix:
			if len(info.Dims) != 2 {
				return fmt.Errorf("model: tensor %q has %d dims, want 2", name, len(info.Dims))
			}
			m, err := NewMatrix(name, info.Type, int(info.Dims[1]), int(info.Dims[0]), data)
			if err != nil {
				return err
			}
			fv.Set(reflect.ValueOf(m))
		case []float32:
			if len(info.Dims) != 1 && (len(info.Dims) != 2 || info.Dims[1] != 1) { // n × 1: a vector too
				return fmt.Errorf("model: tensor %q has %d dims, want 1", name, len(info.Dims))
			}
			vec := make([]float32, info.Dims[0])
			if err := gguf.DequantizeRow(info.Type, data, vec); err != nil {
				return fmt.Errorf("model: tensor %q: %w", name, err)
			}
			fv.Set(reflect.ValueOf(vec))
		}
	}
	return nil
}

// ReadHparams reads the hyperparameters of a file's architecture from its header alone (no
// tensor data), failing with ErrUnsupportedArch for an architecture the engine does not run.
func ReadHparams(f *gguf.File) (Hparams, error) {
	a, err := lookupArch(f.Architecture())
	if err != nil {
		return Hparams{}, err
	}
	hp, err := readHparams(f, a)
	if err != nil {
		return hp, err
	}
	if t, ok := f.Tensor("token_embd.weight"); ok && len(t.Dims) == 2 {
		hp.Vocab = int(t.Dims[1])
	}
	return hp, nil
}
