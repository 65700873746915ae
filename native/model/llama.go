package model

// llama: Llama 1/2/3, Mistral-style and TinyLlama models, and llama2.c exports. GGUF
// converters permute the Q and K rows so that RoPE rotates adjacent pairs.
func init() { register(Arch{Name: "llama", Rope: RopeNorm}) }
