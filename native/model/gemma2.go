package model

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/ml"
)

// gemma2: Gemma 2 models, as llama.cpp runs them. The llama block with
//
//	x = √Embd · embedding                         (embedding scale)
//	a = attention(q·s, k, v), scores capped       c·tanh(score/c), c = attn_logit_softcapping
//	x = x + RMSNorm(Wo·a)·attn_post_norm
//	x = x + RMSNorm(Wdown·(GELU(Wgate·h) ⊙ Wup·h))·ffn_post_norm
//	logits = f·tanh(Woutput·(RMSNorm(x)·output_norm)/f), f = final_logit_softcapping
//
// RoPE over the two halves of each head, tied embeddings, and interleaved sliding-window
// attention: the even layers attend only their last attention.sliding_window positions (and
// their KV cache is a ring of that many cells, kvcache.Config.Windows), the odd ones the whole
// context. The norm weights are used as stored: llama.cpp's converter folds Gemma's 1 + w into
// them. The query scale s is 1/√query_pre_attn_scalar when the file has
// attention.query_pre_attn_scalar, else, as llama.cpp decides by the layer count, 1/√(Embd/Heads)
// for the 46-layer 27B and 1/√HeadDimK otherwise.
func init() {
	register(Arch{Name: "gemma2", Rope: RopeNeox, Forward: gemma2Forward,
		Layer: func() any { return new(gemma2Layer) }, Check: gemma2Check, Ops: GemmaOps, Supports: supportsGemma})
}

// GemmaOps names the operations beyond ml.Backend the gemma architectures (and phi3's
// window) need: ml.Gemma's.
var GemmaOps = []string{"sliding-window attention", "attention logit soft-capping", "GELU-tanh gated FFN", "scale", "final logit soft-capping"}

func supportsGemma(_ *Model, b ml.Backend) error {
	if _, ok := b.(ml.Gemma); !ok {
		return fmt.Errorf("model: the %T backend lacks the operations gemma needs: %v", b, GemmaOps)
	}
	return nil
}

// gemma2Layer are a layer's norms after attention and after the FFN.
type gemma2Layer struct {
	PostAttn []float32 `gguf:"post_attention_norm.weight"`
	PostFFN  []float32 `gguf:"post_ffw_norm.weight"`
}

// gemma2State are the settings of a gemma2 model beyond Hparams.
type gemma2State struct {
	attnCap, finalCap, qscale float32
	window                    int
}

func gemma2Check(m *Model) error {
	hp, f := m.Hparams, m.file
	for l := range m.blocks {
		ly := m.Layer(l).(*gemma2Layer)
		if len(ly.PostAttn) != hp.Embd || len(ly.PostFFN) != hp.Embd {
			return fmt.Errorf("model: blk.%d.post_attention_norm/post_ffw_norm have %d and %d values, want %d", l, len(ly.PostAttn), len(ly.PostFFN), hp.Embd)
		}
	}
	st := &gemma2State{attnCap: 50, finalCap: 30, window: 4096} // llama.cpp's defaults
	for _, k := range []struct {
		key string
		dst *float32
	}{{"attn_logit_softcapping", &st.attnCap}, {"final_logit_softcapping", &st.finalCap}} {
		if _, set := f.Value("gemma2." + k.key); set {
			v, ok := f.Float("gemma2." + k.key)
			if !ok || !(v > 0) || v > 1e30 {
				return fmt.Errorf("model: gemma2.%s: want a positive number", k.key)
			}
			*k.dst = float32(v)
		}
	}
	if _, set := f.Value("gemma2.attention.sliding_window"); set {
		v, ok := f.Uint("gemma2.attention.sliding_window")
		if !ok || v == 0 || v > math.MaxInt32 {
			return fmt.Errorf("model: gemma2.attention.sliding_window: want a positive integer")
		}
		st.window = int(v)
	}
	var err error
	if st.qscale, err = gemmaQueryScale(f, "gemma2", hp, 46); err != nil {
		return err
	}
	m.state = st
	m.windows = make([]int, hp.Layers)
	for l := 0; l < hp.Layers; l += 2 { // llama.cpp: il % 2 == 0 is sliding
		m.windows[l] = st.window
	}
	return nil
}

func gemma2Forward(b ml.Backend, m *Model, bt *ml.Batch) {
	g := b.(ml.Gemma) // Model.Run checked (supportsGemma)
	hp, st := m.Hparams, m.state.(*gemma2State)
	n := len(bt.Tokens)
	x, h := b.New(n, hp.Embd), b.New(n, hp.Embd)
	q, k, v := b.New(n, hp.Heads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimV)
	a := b.New(n, hp.Heads*hp.HeadDimV)
	gate, up := b.New(n, hp.FFN), b.New(n, hp.FFN)
	rope := m.Rope()
	b.Embed(x, m.embd)
	g.Scale(x, float32(math.Sqrt(float64(hp.Embd))))
	for l := range m.blocks {
		w, ly := &m.blocks[l], m.Layer(l).(*gemma2Layer)
		b.RMSNorm(h, x, w.AttnNorm, hp.RMSEps)
		b.MatMul(q, w.Wq, h, nil)
		b.MatMul(k, w.Wk, h, nil)
		b.MatMul(v, w.Wv, h, nil)
		b.RoPE(q, hp.Heads, rope)
		b.RoPE(k, hp.KVHeads, rope)
		g.AttentionOpts(a, q, k, v, l, st.qscale, ml.AttnOptions{Window: m.windows[l], SoftCap: st.attnCap})
		b.MatMul(h, w.Wo, a, nil)
		b.RMSNorm(h, h, ly.PostAttn, hp.RMSEps)
		b.Add(x, h)
		b.RMSNorm(h, x, w.FFNNorm, hp.RMSEps)
		b.MatMul(gate, w.Gate, h, nil)
		b.MatMul(up, w.Up, h, nil)
		g.GeGLU(gate, up)
		b.MatMul(h, w.Down, gate, nil)
		b.RMSNorm(h, h, ly.PostFFN, hp.RMSEps)
		b.Add(x, h)
	}
	m.logits(b, bt, x, h)
	if len(bt.Out) > 0 {
		g.SoftCapOut(st.finalCap)
	}
}

// gemmaQueryScale is a gemma file's attention query scale: 1/√query_pre_attn_scalar when the
// file has it, else 1/√head_dim, or 1/√(embd/heads) for the model of bigLayers layers (the 27B
// gemma2, 62-layer gemma3), as llama.cpp sets it.
func gemmaQueryScale(f *gguf.File, arch string, hp Hparams, bigLayers int) (float32, error) {
	key := arch + ".attention.query_pre_attn_scalar"
	if _, set := f.Value(key); set {
		v, ok := f.Float(key)
		if !ok || !(v > 0) || v > 1e30 {
			return 0, fmt.Errorf("model: %s: want a positive number", key)
		}
		return float32(1 / math.Sqrt(v)), nil
	}
	if hp.Layers == bigLayers {
		return float32(1 / math.Sqrt(float64(hp.Embd/hp.Heads))), nil
	}
	return float32(1 / math.Sqrt(float64(hp.HeadDimK))), nil
}
