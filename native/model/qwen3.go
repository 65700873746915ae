package model

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/ml"
)

// qwen3: Qwen3 dense models: the llama block without biases, RoPE over the two halves of each
// head, and an RMSNorm over every query and key head (its own HeadDimK weights) before RoPE.
// qwen3moe: the same attention with a mixture-of-experts FFN in every layer (router softmax,
// top expert_used_count, their weights renormalized, experts expert_feed_forward_length wide).
func init() {
	register(Arch{Name: "qwen3", Rope: RopeNeox, Forward: qwen3Forward,
		Layer: func() any { return new(qwen3Layer) }, Check: qwen3Check})
	register(Arch{Name: "qwen3moe", Rope: RopeNeox, MoE: true, QwenMoE: true, NormTopK: true, Forward: qwen3Forward,
		Layer: func() any { return new(qwen3Layer) }, Check: qwen3Check, Supports: supportsMoE})
}

// qwen3Layer are the per-head norms of one layer.
type qwen3Layer struct {
	QNorm []float32 `gguf:"attn_q_norm.weight"`
	KNorm []float32 `gguf:"attn_k_norm.weight"`
}

func qwen3Check(m *Model) error {
	for l := range m.blocks {
		ly := m.Layer(l).(*qwen3Layer)
		if len(ly.QNorm) != m.Hparams.HeadDimK || len(ly.KNorm) != m.Hparams.HeadDimK {
			return fmt.Errorf("model: blk.%d.attn_q_norm/attn_k_norm have %d and %d values, want the head dimension %d",
				l, len(ly.QNorm), len(ly.KNorm), m.Hparams.HeadDimK)
		}
	}
	return nil
}

func qwen3Forward(b ml.Backend, m *Model, bt *ml.Batch) {
	hp := m.Hparams
	n := len(bt.Tokens)
	x, h := b.New(n, hp.Embd), b.New(n, hp.Embd)
	q, k, v := b.New(n, hp.Heads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimV)
	qh, kh := b.Reshape(q, n*hp.Heads, hp.HeadDimK), b.Reshape(k, n*hp.KVHeads, hp.HeadDimK) // a row per head
	a := b.New(n, hp.Heads*hp.HeadDimV)
	var gate, up, a2 ml.Tensor
	if hp.Experts > 0 {
		a2 = b.New(n, hp.Embd)
	} else {
		gate, up = b.New(n, hp.FFN), b.New(n, hp.FFN)
	}
	scale := float32(1 / math.Sqrt(float64(hp.HeadDimK)))
	rope := m.Rope()
	b.Embed(x, m.embd)
	for l := range m.blocks {
		w, ly := &m.blocks[l], m.Layer(l).(*qwen3Layer)
		b.RMSNorm(h, x, w.AttnNorm, hp.RMSEps)
		b.MatMul(q, w.Wq, h, nil)
		b.MatMul(k, w.Wk, h, nil)
		b.MatMul(v, w.Wv, h, nil)
		b.RMSNorm(qh, qh, ly.QNorm, hp.RMSEps)
		b.RMSNorm(kh, kh, ly.KNorm, hp.RMSEps)
		b.RoPE(q, hp.Heads, rope)
		b.RoPE(k, hp.KVHeads, rope)
		b.Attention(a, q, k, v, l, scale)
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
