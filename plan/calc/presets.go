package calc

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
)

// ModelPreset is a named model shape with the weight quantization it is usually served at.
type ModelPreset struct {
	// Key is the name used on the command line and in the page ("qwen2.5-14b-1m").
	Key string `json:"key"`
	// Shape is the model's layers and parameter counts.
	Shape Shape `json:"shape"`
	// Quant is the default weight quantization (a WeightQuant key).
	Quant string `json:"quant"`
	// Source says where the shape comes from.
	Source string `json:"source"`
}

// WeightQuant is a weight quantization: the average storage cost of one weight.
type WeightQuant struct {
	// Key is the llama.cpp name ("q8_0", "q4_k_m").
	Key string `json:"key"`
	// BitsPerWeight is the average storage per weight, scales included.
	BitsPerWeight float64 `json:"bits_per_weight"`
	// Note says where the figure comes from.
	Note string `json:"note"`
}

// kquantBits is the bits per weight of a ggml k-quant super-block of 256 weights stored in
// bytes bytes.
func kquantBits(bytes int) float64 { return float64(8*bytes) / 256 }

// mixBits is the average bits per weight of a llama.cpp quantization mix measured as the file
// size of Llama-3-8B (8.03 B weights) in GiB, as llama.cpp's quantize tool lists it.
func mixBits(gibFor8B float64) float64 { return gibFor8B * float64(GiB) * 8 / 8.03e9 }

// WeightQuants lists the weight quantizations the planner knows, largest first. Block formats
// that are also KV formats take their size from kvq; k-quants from their super-block layout;
// the _m mixes from llama.cpp's published Llama-3-8B file sizes.
func WeightQuants() []WeightQuant {
	return []WeightQuant{
		{"f16", kvq.F16.BitsPerValue(kvq.BlockSize), "16-bit floats"},
		{"bf16", kvq.BF16.BitsPerValue(kvq.BlockSize), "bfloat16"},
		{"q8_0", kvq.Q8_0.BitsPerValue(kvq.BlockSize), "ggml block_q8_0: 34 bytes per 32 weights"},
		{"q6_k", kquantBits(210), "ggml block_q6_K: 210 bytes per 256 weights"},
		{"q5_k_m", mixBits(5.33), "llama.cpp Q5_K_M mix (5.33 GiB for Llama-3-8B)"},
		{"q4_k_m", mixBits(4.58), "llama.cpp Q4_K_M mix (4.58 GiB for Llama-3-8B)"},
		{"q4_0", kvq.Q4_0.BitsPerValue(kvq.BlockSize), "ggml block_q4_0: 18 bytes per 32 weights"},
	}
}

// LookupQuant returns the weight quantization with the given key.
func LookupQuant(key string) (WeightQuant, error) {
	k := strings.ToLower(strings.TrimSpace(key))
	var names []string
	for _, q := range WeightQuants() {
		if q.Key == k {
			return q, nil
		}
		names = append(names, q.Key)
	}
	return WeightQuant{}, fmt.Errorf("%w: weight quantization %q (valid: %s)", ErrUnknownPreset, key, strings.Join(names, ", "))
}

// WeightBytesAt is the size of the model's weights at quantization q: the exact WeightBytes
// when the shape has it, else Params × q.BitsPerWeight / 8.
func (s Shape) WeightBytesAt(q WeightQuant) int64 {
	if s.WeightBytes > 0 {
		return s.WeightBytes
	}
	return int64(float64(s.Params) * q.BitsPerWeight / 8)
}

// ActiveWeightBytesAt is the weight bytes read to decode one token at quantization q: all
// weights for a dense model, the active experts' share for a mixture of experts.
func (s Shape) ActiveWeightBytesAt(q WeightQuant) int64 {
	if s.ActiveWeightBytes > 0 {
		return s.ActiveWeightBytes
	}
	if s.WeightBytes > 0 && s.ActiveParams > 0 && s.Params > 0 {
		return int64(float64(s.WeightBytes) * float64(s.ActiveParams) / float64(s.Params))
	}
	if s.WeightBytes > 0 {
		return s.WeightBytes
	}
	n := s.ActiveParams
	if n == 0 {
		n = s.Params
	}
	return int64(float64(n) * q.BitsPerWeight / 8)
}

// dense builds the layers of a model whose every layer is full attention with the same shape.
func dense(layers, kvHeads, headDim int) []LayerGroup {
	return []LayerGroup{{Count: layers, Kind: Full, KVHeads: kvHeads, HeadDimK: headDim, HeadDimV: headDim}}
}

// Presets lists the model presets, in display order.
func Presets() []ModelPreset {
	return []ModelPreset{
		{
			Key: "qwen2.5-14b-1m",
			Shape: Shape{
				Name: "Qwen2.5-14B-Instruct-1M", Groups: dense(48, 8, 128),
				Params: 14_770_000_000, NativeContext: 1_010_000,
			},
			Quant:  "q8_0",
			Source: "config.json: 48 layers, 8 KV heads, head_dim 128; 14.8 B weights (model card)",
		},
		{
			Key: "gemma-4-26b-a4b",
			Shape: Shape{
				Name: "Gemma-4 26B-A4B (iSWA)",
				Groups: []LayerGroup{
					// Every 6th layer is global: 2 KV heads × 512 (K and V cached separately).
					{Count: 5, Kind: Full, KVHeads: 2, HeadDimK: 512, HeadDimV: 512},
					// The other 25 slide over 1024 cells: 8 KV heads × 256.
					{Count: 25, Kind: Sliding, KVHeads: 8, HeadDimK: 256, HeadDimV: 256, Window: 1024},
				},
				Params: 25_200_000_000, ActiveParams: 3_800_000_000, NativeContext: 262_144,
			},
			Quant: "q4_k_m",
			Source: "5/30 global layers, ~20 KiB/token; model card: 30 layers, " +
				"window 1024, 8 KV heads × 256 local, 2 × 512 global, 25.2 B total / 3.8 B active",
		},
		{
			Key: "qwen3.6-35b-a3b",
			Shape: Shape{
				Name: "Qwen3.6-35B-A3B (hybrid DeltaNet)",
				Groups: []LayerGroup{
					// Every 4th layer is full attention: 2 KV heads × 256.
					{Count: 10, Kind: Full, KVHeads: 2, HeadDimK: 256, HeadDimV: 256},
					// The other 30 are Gated DeltaNet with 16 key heads and 32 value heads of 128:
					// f32 conv state (4−1) × (2·16·128 + 32·128) plus f32 state 32 × 128 × 128.
					{Count: 30, Kind: Recurrent, StateBytes: deltaNetStateBytes(4, 16, 32, 128, 128)},
				},
				Params: 35_000_000_000, ActiveParams: 3_000_000_000, NativeContext: 262_144,
			},
			Quant: "q6_k",
			Source: "~20 KiB/token; Qwen3.5/3.6-35B-A3B config: 40 layers, " +
				"full attention every 4th, 2 KV heads × 256, DeltaNet 16 K / 32 V heads × 128",
		},
		{
			Key:    "llama-3.1-8b",
			Shape:  Shape{Name: "Llama-3.1-8B", Groups: dense(32, 8, 128), Params: 8_030_000_000, NativeContext: 131_072},
			Quant:  "q4_k_m",
			Source: "config.json: 32 layers, 32 heads, 8 KV heads, head_dim 128",
		},
		{
			Key:    "llama-3.1-70b",
			Shape:  Shape{Name: "Llama-3.1-70B", Groups: dense(80, 8, 128), Params: 70_550_000_000, NativeContext: 131_072},
			Quant:  "q4_k_m",
			Source: "config.json: 80 layers, 64 heads, 8 KV heads, head_dim 128",
		},
		{
			Key:    "qwen2.5-7b",
			Shape:  Shape{Name: "Qwen2.5-7B", Groups: dense(28, 4, 128), Params: 7_620_000_000, NativeContext: 32_768},
			Quant:  "q4_k_m",
			Source: "config.json: 28 layers, 28 heads, 4 KV heads, head_dim 128 (32k native, 128k with YaRN)",
		},
		{
			Key:    "qwen3-4b",
			Shape:  Shape{Name: "Qwen3-4B", Groups: dense(36, 8, 128), Params: 4_020_000_000, NativeContext: 32_768},
			Quant:  "q4_k_m",
			Source: "config.json: 36 layers, 32 heads, 8 KV heads, head_dim 128 (32k native, 128k with YaRN)",
		},
		{
			Key:    "mistral-7b",
			Shape:  Shape{Name: "Mistral-7B-v0.3", Groups: dense(32, 8, 128), Params: 7_250_000_000, NativeContext: 32_768},
			Quant:  "q4_k_m",
			Source: "config.json (v0.3, no sliding window): 32 layers, 32 heads, 8 KV heads, head_dim 128",
		},
		{
			Key: "deepseek-v2-lite",
			Shape: Shape{
				Name: "DeepSeek-V2-Lite (MLA)",
				// One latent row per cell: kv_lora_rank 512 + rope dims 64.
				Groups: []LayerGroup{{Count: 27, Kind: Latent, LatentDim: 512 + 64}},
				Params: 15_700_000_000, ActiveParams: 2_400_000_000, NativeContext: 163_840,
			},
			Quant:  "q4_k_m",
			Source: "config.json: 27 layers, kv_lora_rank 512, qk_rope_head_dim 64; 15.7 B total / 2.4 B active",
		},
	}
}

// deltaNetStateBytes is one Gated DeltaNet layer's f32 recurrent state: the causal-conv tail of
// (convKernel − 1) steps over the q, k and v channels, plus the kHeadDim × vHeadDim state of each
// value head.
func deltaNetStateBytes(convKernel, kHeads, vHeads, kHeadDim, vHeadDim int) int64 {
	const f32 = 4
	conv := int64(convKernel-1) * int64(2*kHeads*kHeadDim+vHeads*vHeadDim)
	state := int64(vHeads) * int64(kHeadDim) * int64(vHeadDim)
	return f32 * (conv + state)
}

// LookupPreset returns the model preset with the given key (case-insensitive).
func LookupPreset(key string) (ModelPreset, error) {
	k := strings.ToLower(strings.TrimSpace(key))
	var names []string
	for _, p := range Presets() {
		if p.Key == k {
			return p, nil
		}
		names = append(names, p.Key)
	}
	sort.Strings(names)
	return ModelPreset{}, fmt.Errorf("%w: model %q (valid: %s)", ErrUnknownPreset, key, strings.Join(names, ", "))
}
