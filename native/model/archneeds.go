package model

import (
	"sort"
	"strings"

	"github.com/kvlab/kvlab/native/gguf"
)

// archNeeds names, for architectures llama.cpp runs and this engine does not (yet), what the
// engine lacks for each. An architecture that registers itself is no longer listed.
var archNeeds = map[string]string{
	"gemma":      "GELU-tanh gated FFN, embedding scale",
	"gemma2":     "logit soft-capping (attention and final), sliding-window attention, GELU-tanh gated FFN, post-attention and post-FFN norms, embedding scale",
	"gemma3":     "sliding-window attention, per-head q/k norms, a separate RoPE base for local layers, GELU-tanh gated FFN, post-attention and post-FFN norms, embedding scale",
	"gemma3n":    "sliding-window attention, per-layer embeddings, AltUp, GELU-tanh gated FFN",
	"qwen3":      "per-head q/k norms (attn_q_norm, attn_k_norm)",
	"qwen3moe":   "per-head q/k norms, a mixture-of-experts FFN (router top-k)",
	"qwen2moe":   "a mixture-of-experts FFN with a shared expert",
	"qwen3next":  "gated DeltaNet recurrent layers, sigmoid-gated attention output, a mixture-of-experts FFN with a gated shared expert",
	"qwen35":     "gated DeltaNet recurrent layers, sigmoid-gated attention output, interleaved multi-axis RoPE",
	"qwen35moe":  "gated DeltaNet recurrent layers, sigmoid-gated attention output, interleaved multi-axis RoPE, a mixture-of-experts FFN with a gated shared expert",
	"phi2":       "LayerNorm, GELU FFN, parallel attention and FFN, partial RoPE",
	"phi3":       "fused QKV and gate-up tensors, LongRoPE scaling (rope_factors_long/short)",
	"phimoe":     "fused QKV tensors, a mixture-of-experts FFN, LongRoPE scaling",
	"deepseek":   "a mixture-of-experts FFN with shared experts",
	"deepseek2":  "multi-head latent attention, a mixture-of-experts FFN with shared experts",
	"mistral3":   "position-dependent query temperature scaling (attention.temperature_scale)",
	"falcon":     "LayerNorm, parallel attention and FFN, GELU FFN",
	"gpt2":       "LayerNorm, learned positions, GELU FFN, fused QKV",
	"gptneox":    "LayerNorm, parallel attention and FFN, GELU FFN, partial neox RoPE",
	"starcoder":  "LayerNorm, learned positions, GELU FFN",
	"starcoder2": "LayerNorm, GELU FFN, biases, sliding-window attention",
	"command-r":  "LayerNorm, parallel attention and FFN, logit scale",
	"cohere2":    "LayerNorm, parallel attention and FFN, interleaved sliding-window attention, logit scale",
	"olmo2":      "post-attention and post-FFN norms, q/k norms",
	"granite":    "embedding, attention, residual and logit multipliers",
	"gpt-oss":    "a mixture-of-experts FFN over MXFP4 weights, attention sinks, sliding-window attention",
	"mamba":      "a recurrent state-space (Mamba) layer",
	"mamba2":     "a recurrent state-space (Mamba-2) layer",
	"jamba":      "recurrent Mamba layers, a mixture-of-experts FFN",
	"rwkv6":      "RWKV recurrent time-mix layers",
	"rwkv7":      "RWKV recurrent time-mix layers",
	"bert":       "an encoder (bidirectional attention, LayerNorm, learned positions): not a text generator",
	"t5":         "an encoder-decoder",
}

// ArchNeeds says what the engine lacks to run the architecture called name: the mechanisms
// for the architectures llama.cpp runs that it does not; "" for one it runs and for names it
// does not know.
func ArchNeeds(name string) string {
	if _, ok := archs[name]; ok {
		return ""
	}
	return archNeeds[name]
}

// KnownArchs returns every architecture ArchNeeds describes, runnable or not, sorted.
func KnownArchs() []string {
	seen := map[string]bool{}
	for n := range archs {
		seen[n] = true
	}
	for n := range archNeeds {
		seen[n] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FileNeeds is ArchNeeds for a file, which also notices a registered architecture used with
// tensors the engine has no kernel for (a llama file with experts, as mixtral is written).
func FileNeeds(f *gguf.File) string {
	a := f.Architecture()
	if ar, ok := archs[a]; !ok {
		return ArchNeeds(a)
	} else if ar.MoE {
		return ""
	}
	var needs []string
	for _, t := range f.Tensors() {
		if strings.HasPrefix(t.Name, "blk.0.") && strings.Contains(t.Name, "_exps.") {
			needs = append(needs, "a mixture-of-experts FFN (router top-k over the expert tensors)")
			break
		}
	}
	return strings.Join(needs, ", ")
}
