package model

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/ml"
)

// llama: Llama 1/2/3, Mistral-style and TinyLlama models, and llama2.c exports. GGUF
// converters permute the Q and K rows so that RoPE rotates adjacent pairs.
// A llama file with expert_count (mixtral) has a mixture-of-experts FFN (ml.MoE).
func init() {
	register(Arch{Name: "llama", Rope: RopeNorm, MoE: true, NormTopK: true, Forward: llamaForward, Supports: supportsMoE})
}

// supportsMoE checks that b has the mixture-of-experts FFN when the model has experts.
func supportsMoE(m *Model, b ml.Backend) error {
	if _, ok := b.(ml.MoE); m.Hparams.Experts > 0 && !ok {
		return fmt.Errorf("model: the %T backend has no mixture-of-experts FFN (%d experts)", b, m.Hparams.Experts)
	}
	return nil
}

// moeFFN runs block w's mixture-of-experts FFN of h into x (x += FFN(h)), out a scratch of x's
// shape.
func moeFFN(b ml.Backend, m *Model, w *Block, x, h, out ml.Tensor) {
	b.(ml.MoE).MoEFFN(out, h, w.Router, w.gateE, w.upE, w.downE,
		ml.MoEOptions{Used: m.Hparams.ExpertsUsed, NormTopK: m.Arch.NormTopK, Shared: w.shared})
	b.Add(x, out)
}

// attention is layer l's attention: over its sliding window when the model has one for the
// layer (phi3; the architecture's Supports checked the backend runs windows), else causal over
// every cell.
func attention(b ml.Backend, m *Model, a, q, k, v ml.Tensor, l int, scale float32) {
	if m.windows != nil && m.windows[l] > 0 {
		b.(ml.Gemma).AttentionOpts(a, q, k, v, l, scale, ml.AttnOptions{Window: m.windows[l]})
		return
	}
	b.Attention(a, q, k, v, l, scale)
}

// llamaForward is the llama decoder on any backend (see the package comment for the block's
// math); the biases are nil when the file has none.
func llamaForward(b ml.Backend, m *Model, bt *ml.Batch) {
	hp := m.Hparams
	n := len(bt.Tokens)
	x, h := b.New(n, hp.Embd), b.New(n, hp.Embd)
	q, k, v := b.New(n, hp.Heads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimV)
	a := b.New(n, hp.Heads*hp.HeadDimV)
	gate, up := b.New(n, hp.FFN), b.New(n, hp.FFN)
	var a2 ml.Tensor
	if hp.Experts > 0 {
		a2 = b.New(n, hp.Embd)
	}
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
		attention(b, m, a, q, k, v, l, scale)
		ml.MatMulAdd(b, x, w.Wo, a, w.Bo, h)
		b.RMSNorm(h, x, w.FFNNorm, hp.RMSEps)
		if w.Router != nil {
			moeFFN(b, m, w, x, h, a2)
			continue
		}
		b.MatMul(gate, w.Gate, h, nil)
		b.MatMul(up, w.Up, h, nil)
		b.SwiGLU(gate, up)
		ml.MatMulAdd(b, x, w.Down, gate, nil, h)
	}
	m.logits(b, bt, x, h)
}
