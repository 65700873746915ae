package hf

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kvlab/kvlab/native/gguf"
)

// config is the part of a Hugging Face config.json that the llama-family architectures use.
type config struct {
	Architectures []string `json:"architectures"`
	ModelType     string   `json:"model_type"`
	Name          string   `json:"_name_or_path"`

	HiddenSize    int     `json:"hidden_size"`
	Layers        int     `json:"num_hidden_layers"`
	FFN           int     `json:"intermediate_size"`
	Heads         int     `json:"num_attention_heads"`
	KVHeads       int     `json:"num_key_value_heads"`
	HeadDim       int     `json:"head_dim"`
	RMSEps        float64 `json:"rms_norm_eps"`
	RopeTheta     float64 `json:"rope_theta"`
	MaxPositions  int     `json:"max_position_embeddings"`
	VocabSize     int     `json:"vocab_size"`
	TieEmbeddings *bool   `json:"tie_word_embeddings"`
	HiddenAct     string  `json:"hidden_act"`

	BOS json.RawMessage `json:"bos_token_id"`
	EOS json.RawMessage `json:"eos_token_id"`

	RopeScaling *ropeScaling `json:"rope_scaling"`
}

// ropeScaling is config.json's rope_scaling object.
type ropeScaling struct {
	Type          string  `json:"type"`
	RopeType      string  `json:"rope_type"`
	Factor        float64 `json:"factor"`
	OrigCtx       int     `json:"original_max_position_embeddings"`
	LowFreqFactor float64 `json:"low_freq_factor"`
	HighFreqFact  float64 `json:"high_freq_factor"`
	BetaFast      float64 `json:"beta_fast"`
	BetaSlow      float64 `json:"beta_slow"`
	AttnFactor    float64 `json:"attention_factor"`
}

// maxDim bounds every size config.json gives (widths, counts of layers and heads).
const maxDim = 1 << 20

// archInfo is how one Hugging Face architecture becomes GGUF: its general.architecture and
// whether Q and K rows are permuted from the rotate-half layout to the interleaved one (the
// GGUF "norm" RoPE of llama; qwen2 and qwen3 keep the rotate-half layout and run neox RoPE).
type archInfo struct {
	gguf    string
	permute bool
}

var archMap = map[string]archInfo{
	"LlamaForCausalLM":   {"llama", true},
	"MistralForCausalLM": {"llama", true},
	"Qwen2ForCausalLM":   {"qwen2", false},
	"Qwen3ForCausalLM":   {"qwen3", false},
}

// SupportedArchitectures lists the config.json architectures Open converts, sorted.
func SupportedArchitectures() []string { return slices.Sorted(maps.Keys(archMap)) }

func parseConfig(b []byte) (*config, archInfo, error) {
	var c config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, archInfo{}, fmt.Errorf("hf: config.json: %v", err)
	}
	if len(c.Architectures) == 0 {
		return nil, archInfo{}, fmt.Errorf("hf: config.json names no architectures (model_type %q)", clip(c.ModelType))
	}
	a, ok := archMap[c.Architectures[0]]
	if !ok {
		return nil, archInfo{}, fmt.Errorf("hf: config.json architecture %q is not supported (supported: %s)",
			clip(c.Architectures[0]), strings.Join(SupportedArchitectures(), ", "))
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		return nil, archInfo{}, fmt.Errorf("hf: config.json hidden_act %q is not supported (silu only)", clip(c.HiddenAct))
	}
	pos := func(name string, v int) error {
		if v <= 0 || v > maxDim {
			return fmt.Errorf("hf: config.json %s = %d: want 1 to %d", name, v, maxDim)
		}
		return nil
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.Layers}, {"intermediate_size", c.FFN}, {"num_attention_heads", c.Heads}} {
		if err := pos(f.name, f.v); err != nil {
			return nil, archInfo{}, err
		}
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.HeadDim == 0 {
		if c.HiddenSize%c.Heads != 0 {
			return nil, archInfo{}, fmt.Errorf("hf: config.json hidden_size %d is not a multiple of num_attention_heads %d (and head_dim is absent)", c.HiddenSize, c.Heads)
		}
		c.HeadDim = c.HiddenSize / c.Heads
	}
	if err := pos("num_key_value_heads", c.KVHeads); err != nil {
		return nil, archInfo{}, err
	}
	if err := pos("head_dim", c.HeadDim); err != nil {
		return nil, archInfo{}, err
	}
	if c.KVHeads > c.Heads || c.Heads%c.KVHeads != 0 {
		return nil, archInfo{}, fmt.Errorf("hf: config.json num_attention_heads %d do not group onto num_key_value_heads %d", c.Heads, c.KVHeads)
	}
	if a.permute && c.HeadDim%2 != 0 {
		return nil, archInfo{}, fmt.Errorf("hf: config.json head dimension %d is odd: RoPE needs an even one", c.HeadDim)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"rms_norm_eps", c.RMSEps}, {"rope_theta", c.RopeTheta}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return nil, archInfo{}, fmt.Errorf("hf: config.json %s = %g: want a finite number > 0", f.name, f.v)
		}
	}
	return &c, a, nil
}

// metadata returns the GGUF metadata keys of the architecture, as llama.cpp's converter
// writes them, plus the rope_freqs factors of llama-3 scaling (nil otherwise).
func (c *config) metadata(a archInfo, name string) ([]gguf.KV, []float32, error) {
	p := a.gguf + "."
	kv := []gguf.KV{
		{Key: "general.architecture", Value: a.gguf},
		{Key: "general.name", Value: name},
		{Key: p + "embedding_length", Value: uint32(c.HiddenSize)},
		{Key: p + "block_count", Value: uint32(c.Layers)},
		{Key: p + "feed_forward_length", Value: uint32(c.FFN)},
		{Key: p + "attention.head_count", Value: uint32(c.Heads)},
		{Key: p + "attention.head_count_kv", Value: uint32(c.KVHeads)},
		{Key: p + "rope.dimension_count", Value: uint32(c.HeadDim)},
	}
	if c.HeadDim*c.Heads != c.HiddenSize {
		kv = append(kv, gguf.KV{Key: p + "attention.key_length", Value: uint32(c.HeadDim)},
			gguf.KV{Key: p + "attention.value_length", Value: uint32(c.HeadDim)})
	}
	if c.MaxPositions > 0 && c.MaxPositions <= math.MaxInt32 {
		kv = append(kv, gguf.KV{Key: p + "context_length", Value: uint32(c.MaxPositions)})
	}
	if c.RMSEps > 0 {
		kv = append(kv, gguf.KV{Key: p + "attention.layer_norm_rms_epsilon", Value: float32(c.RMSEps)})
	}
	theta := c.RopeTheta
	if theta == 0 {
		theta = 10000
	}
	kv = append(kv, gguf.KV{Key: p + "rope.freq_base", Value: float32(theta)})
	rs := c.RopeScaling
	if rs == nil {
		return kv, nil, nil
	}
	typ := rs.RopeType
	if typ == "" {
		typ = rs.Type
	}
	bad := func(field string, v float64) error {
		return fmt.Errorf("hf: config.json rope_scaling %s = %g: want a finite number > 0", field, v)
	}
	finitePos := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	switch typ {
	case "", "default":
		return kv, nil, nil
	case "linear":
		if !finitePos(rs.Factor) {
			return nil, nil, bad("factor", rs.Factor)
		}
		kv = append(kv, gguf.KV{Key: p + "rope.scaling.type", Value: "linear"}, gguf.KV{Key: p + "rope.scaling.factor", Value: float32(rs.Factor)})
		return kv, nil, nil
	case "yarn":
		if !finitePos(rs.Factor) {
			return nil, nil, bad("factor", rs.Factor)
		}
		kv = append(kv, gguf.KV{Key: p + "rope.scaling.type", Value: "yarn"}, gguf.KV{Key: p + "rope.scaling.factor", Value: float32(rs.Factor)})
		if rs.OrigCtx > 0 && rs.OrigCtx <= math.MaxInt32 {
			kv = append(kv, gguf.KV{Key: p + "rope.scaling.original_context_length", Value: uint32(rs.OrigCtx)})
		}
		if finitePos(rs.BetaFast) {
			kv = append(kv, gguf.KV{Key: p + "rope.scaling.yarn_beta_fast", Value: float32(rs.BetaFast)})
		}
		if finitePos(rs.BetaSlow) {
			kv = append(kv, gguf.KV{Key: p + "rope.scaling.yarn_beta_slow", Value: float32(rs.BetaSlow)})
		}
		if finitePos(rs.AttnFactor) {
			// HF's attention_factor replaces get_mscale(factor): as a multiplier on top of it.
			m := 1.0
			if rs.Factor > 1 {
				m = 1 + 0.1*math.Log(rs.Factor)
			}
			kv = append(kv, gguf.KV{Key: p + "rope.scaling.attn_factor", Value: float32(rs.AttnFactor / m)})
		}
		return kv, nil, nil
	case "llama3":
		f, err := llama3Factors(c, rs)
		return kv, f, err
	}
	return nil, nil, fmt.Errorf("hf: config.json rope_scaling type %q is not supported (supported: linear, yarn, llama3)", clip(typ))
}

// llama3Factors computes the rope_freqs factors of llama-3 frequency scaling, as llama.cpp's
// converter does: wavelengths shorter than original/high_freq_factor keep their frequency,
// longer than original/low_freq_factor are divided by factor, and the ones between are
// blended smoothly.
func llama3Factors(c *config, rs *ropeScaling) ([]float32, error) {
	factor, lo, hi := rs.Factor, rs.LowFreqFactor, rs.HighFreqFact
	if factor == 0 {
		factor = 8
	}
	if lo == 0 {
		lo = 1
	}
	if hi == 0 {
		hi = 4
	}
	orig := float64(rs.OrigCtx)
	if orig == 0 {
		orig = 8192
	}
	for _, v := range []float64{factor, lo, hi} {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("hf: config.json rope_scaling (llama3) factor %g, low_freq_factor %g, high_freq_factor %g: want finite numbers > 0", factor, lo, hi)
		}
	}
	if hi <= lo {
		return nil, fmt.Errorf("hf: config.json rope_scaling (llama3) high_freq_factor %g must exceed low_freq_factor %g", hi, lo)
	}
	base := c.RopeTheta
	if base == 0 {
		base = 10000
	}
	dim := c.HeadDim
	loWave, hiWave := orig/lo, orig/hi
	out := make([]float32, dim/2)
	for j := range out {
		freq := 1 / math.Pow(base, float64(2*j)/float64(dim))
		wave := 2 * math.Pi / freq
		switch {
		case wave < hiWave:
			out[j] = 1
		case wave > loWave:
			out[j] = float32(factor)
		default:
			smooth := (orig/wave - lo) / (hi - lo)
			out[j] = float32(1 / ((1-smooth)/factor + smooth))
		}
	}
	return out, nil
}
