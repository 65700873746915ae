package model

// qwen2: Qwen2 and Qwen2.5 models: the llama block (llama.go) with biases on Q, K and V and RoPE
// over the two halves of each head (the Hugging Face layout, kept as is by the converters).
// qwen2moe: the same attention (its Q/K/V biases optional, as llama.cpp loads them) with a
// mixture-of-experts FFN: router softmax, the top expert_used_count experts at their softmax
// weights (not renormalized), experts expert_feed_forward_length wide, plus a shared expert
// every token runs, scaled by σ(ffn_gate_inp_shexp·h).
func init() {
	register(Arch{Name: "qwen2", Rope: RopeNeox, QKVBias: true, Forward: llamaForward})
	register(Arch{Name: "qwen2moe", Rope: RopeNeox, MoE: true, QwenMoE: true, Shared: true, Forward: llamaForward, Supports: supportsMoE})
}
