package model

import (
	"math"

	"github.com/kvlab/kvlab/native/ml"
)

// llama: Llama 1/2/3, Mistral-style and TinyLlama models, and llama2.c exports. GGUF
// converters permute the Q and K rows so that RoPE rotates adjacent pairs.
func init() { register(Arch{Name: "llama", Rope: RopeNorm, Forward: llamaForward}) }

// llamaForward is the llama decoder on any backend (see the package comment for the block's
// math); the biases are nil when the file has none.
func llamaForward(b ml.Backend, m *Model, bt *ml.Batch) {
	hp := m.Hparams
	n := len(bt.Tokens)
	x, h := b.New(n, hp.Embd), b.New(n, hp.Embd)
	q, k, v := b.New(n, hp.Heads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimV)
	a := b.New(n, hp.Heads*hp.HeadDimV)
	gate, up := b.New(n, hp.FFN), b.New(n, hp.FFN)
	scale := float32(1 / math.Sqrt(float64(hp.HeadDimK)))
	rope := m.Rope()
	b.Embed(x, m.embd)
	for l := range m.blocks {
		w := &m.blocks[l]
		b.RMSNorm(h, x, w.AttnNorm, hp.RMSEps)
		b.MatMul(q, w.Wq, h, w.Bq)
		b.MatMul(k, w.Wk, h, w.Bk)
		b.MatMul(v, w.Wv, h, w.Bv)
		b.RoPE(q, hp.Heads, rope)
		b.RoPE(k, hp.KVHeads, rope)
		b.Attention(a, q, k, v, l, scale)
		ml.MatMulAdd(b, x, w.Wo, a, w.Bo, h)
		b.RMSNorm(h, x, w.FFNNorm, hp.RMSEps)
		b.MatMul(gate, w.Gate, h, nil)
		b.MatMul(up, w.Up, h, nil)
		b.SwiGLU(gate, up)
		ml.MatMulAdd(b, x, w.Down, gate, nil, h)
	}
	m.logits(b, bt, x, h)
}
