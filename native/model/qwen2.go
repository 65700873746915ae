package model

// qwen2: Qwen2 and Qwen2.5 models: the llama block (llama.go) with biases on Q, K and V and RoPE
// over the two halves of each head (the Hugging Face layout, kept as is by the converters).
func init() { register(Arch{Name: "qwen2", Rope: RopeNeox, QKVBias: true, Forward: llamaForward}) }
