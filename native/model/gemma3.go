package model

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/ml"
)

// gemma3: Gemma 3 text models, as llama.cpp runs them. gemma2's block (√Embd embedding scale,
// post-attention and post-FFN norms, GELU-tanh gated FFN, tied embeddings, neox RoPE) without
// attention soft-capping, with an RMSNorm over every query and key head before RoPE (as qwen3),
// and interleaved sliding-window attention: when the file has attention.sliding_window, layer l
// slides unless l mod p = p − 1, p = attention.sliding_window_pattern (default 6: five local
// layers, then a global one); a per-layer array of the key says it layer by layer instead.
// The local layers rotate with their own base, rope.freq_base_swa (default 10000), and without
// the file's RoPE scaling; the global ones with rope.freq_base and the scaling. Their KV lives
// in a ring of min(window, context) cells (kvcache.Config.Windows). The query scale is
// 1/√HeadDimK, 1/√(Embd/Heads) for the 62-layer 27B (llama.cpp; query_pre_attn_scalar is not
// written by its converter and is used when a file has it). Final logit soft-capping applies
// only when the file sets final_logit_softcapping.
func init() {
	register(Arch{Name: "gemma3", Rope: RopeNeox, Forward: gemma3Forward,
		Layer: func() any { return new(gemma3Layer) }, Check: gemma3Check, Ops: GemmaOps, Supports: supportsGemma})
}

// gemma3Layer are a layer's per-head Q/K norms and its norms after attention and the FFN.
type gemma3Layer struct {
	QNorm    []float32 `gguf:"attn_q_norm.weight"`
	KNorm    []float32 `gguf:"attn_k_norm.weight"`
	PostAttn []float32 `gguf:"post_attention_norm.weight"`
	PostFFN  []float32 `gguf:"post_ffw_norm.weight"`
}

// gemma3State are the settings of a gemma3 model beyond Hparams.
type gemma3State struct {
	finalCap, qscale float32
	// local is the RoPE of the sliding layers (their own base, no scaling).
	local ml.Rope
}

// gemma3Pattern returns which of n layers slide for a file with a sliding window: the
// attention.sliding_window_pattern period p (layer l slides when l mod p < p − 1; p = 0 makes
// every layer slide, as llama.cpp's set_swa_pattern), or the key's per-layer array.
func gemma3Pattern(f *gguf.File, n int) ([]bool, error) {
	const key = "gemma3.attention.sliding_window_pattern"
	sliding := make([]bool, n)
	v, set := f.Value(key)
	p := uint64(6)
	if set {
		if u, ok := f.Uint(key); ok {
			p = u
		} else if arr, ok := v.([]bool); ok && len(arr) == n {
			copy(sliding, arr)
			return sliding, nil
		} else {
			return nil, fmt.Errorf("model: %s: want a period or a boolean per layer (%d)", key, n)
		}
	}
	for l := range sliding {
		sliding[l] = p == 0 || uint64(l)%p < p-1
	}
	return sliding, nil
}

func gemma3Check(m *Model) error {
	hp, f := m.Hparams, m.file
	for l := range m.blocks {
		ly := m.Layer(l).(*gemma3Layer)
		if len(ly.QNorm) != hp.HeadDimK || len(ly.KNorm) != hp.HeadDimK {
			return fmt.Errorf("model: blk.%d.attn_q_norm/attn_k_norm have %d and %d values, want the head dimension %d",
				l, len(ly.QNorm), len(ly.KNorm), hp.HeadDimK)
		}
		if len(ly.PostAttn) != hp.Embd || len(ly.PostFFN) != hp.Embd {
			return fmt.Errorf("model: blk.%d.post_attention_norm/post_ffw_norm have %d and %d values, want %d", l, len(ly.PostAttn), len(ly.PostFFN), hp.Embd)
		}
	}
	st := &gemma3State{}
	if _, set := f.Value("gemma3.final_logit_softcapping"); set {
		v, ok := f.Float("gemma3.final_logit_softcapping")
		if !ok || v < 0 || v > 1e30 || math.IsNaN(v) {
			return fmt.Errorf("model: gemma3.final_logit_softcapping: want a number >= 0")
		}
		st.finalCap = float32(v)
	}
	var err error
	if st.qscale, err = gemmaQueryScale(f, "gemma3", hp, 62); err != nil {
		return err
	}
	localBase := float32(10000)
	if _, set := f.Value("gemma3.rope.freq_base_swa"); set {
		v, ok := f.Float("gemma3.rope.freq_base_swa")
		if !ok || !(v > 0) || v > math.MaxFloat32 {
			return fmt.Errorf("model: gemma3.rope.freq_base_swa: want a positive number")
		}
		localBase = float32(v)
	}
	lh := hp
	lh.RopeBase, lh.RopeScale, lh.RopeScaling, lh.RopeFactor = localBase, 1, "", 1
	lh.RopeAttnFactor, lh.YarnAttnFactor, lh.YarnExtFactor = 1, 1, 0
	freq, _ := RopeFrequencies(lh, nil)
	st.local = ml.Rope{Style: ml.RopeNeox, Dims: hp.RopeDims, Freq: freq, Scale: 1, MScale: 1}
	m.state = st
	if _, set := f.Value("gemma3.attention.sliding_window"); !set {
		return nil // llama.cpp: no window, every layer global
	}
	w, ok := f.Uint("gemma3.attention.sliding_window")
	if !ok || w > math.MaxInt32 {
		return fmt.Errorf("model: gemma3.attention.sliding_window: want an integer")
	}
	if w == 0 {
		return nil
	}
	sliding, err := gemma3Pattern(f, hp.Layers)
	if err != nil {
		return err
	}
	m.windows = make([]int, hp.Layers)
	for l, s := range sliding {
		if s {
			m.windows[l] = int(w)
		}
	}
	return nil
}

func gemma3Forward(b ml.Backend, m *Model, bt *ml.Batch) {
	g := b.(ml.Gemma) // Model.Run checked (supportsGemma)
	hp, st := m.Hparams, m.state.(*gemma3State)
	n := len(bt.Tokens)
	x, h := b.New(n, hp.Embd), b.New(n, hp.Embd)
	q, k, v := b.New(n, hp.Heads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimK), b.New(n, hp.KVHeads*hp.HeadDimV)
	qh, kh := b.Reshape(q, n*hp.Heads, hp.HeadDimK), b.Reshape(k, n*hp.KVHeads, hp.HeadDimK) // a row per head
	a := b.New(n, hp.Heads*hp.HeadDimV)
	gate, up := b.New(n, hp.FFN), b.New(n, hp.FFN)
	b.Embed(x, m.embd)
	g.Scale(x, float32(math.Sqrt(float64(hp.Embd))))
	for l := range m.blocks {
		w, ly := &m.blocks[l], m.Layer(l).(*gemma3Layer)
		window := 0
		rope := m.Rope()
		if m.windows != nil && m.windows[l] > 0 {
			window, rope = m.windows[l], &st.local
		}
		b.RMSNorm(h, x, w.AttnNorm, hp.RMSEps)
		b.MatMul(q, w.Wq, h, nil)
		b.MatMul(k, w.Wk, h, nil)
		b.MatMul(v, w.Wv, h, nil)
		b.RMSNorm(qh, qh, ly.QNorm, hp.RMSEps)
		b.RMSNorm(kh, kh, ly.KNorm, hp.RMSEps)
		b.RoPE(q, hp.Heads, rope)
		b.RoPE(k, hp.KVHeads, rope)
		g.AttentionOpts(a, q, k, v, l, st.qscale, ml.AttnOptions{Window: window}) // 0: full attention
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
	if len(bt.Out) > 0 && st.finalCap > 0 {
		g.SoftCapOut(st.finalCap)
	}
}
