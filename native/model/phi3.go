package model

import (
	"fmt"
	"math"
)

// phi3: Phi-3 (and Phi-4) models, as llama.cpp runs them: the llama block with RoPE over the
// two halves of each head, Q, K and V in one attn_qkv tensor (or separate, with biases), the
// FFN's gate and up in one ffn_up tensor of 2·FFN rows (gate first), and every layer attending
// its last attention.sliding_window positions (llama.cpp's defaults for the Phi-3 files without
// the key: 2047 for the 4k-context ones, none when the key is absent otherwise), its KV a ring
// of that many cells. The 128k files' LongRoPE (rope_factors_long/short) is not run.
func init() {
	register(Arch{Name: "phi3", Rope: RopeNeox, Fused: true, Forward: llamaForward,
		Layer: func() any { return new(phi3Layer) }, Check: phi3Check, Ops: GemmaOps[:1], Supports: supportsGemma})
}

// phi3Layer is a layer's fused QKV weights (nil when the file has separate ones).
type phi3Layer struct {
	QKV *Matrix `gguf:"attn_qkv.weight,optional"`
}

// rowsOf returns rows [r0, r0+n) of w as a matrix reading the same data.
func rowsOf(w *Matrix, name string, r0, n int) (*Matrix, error) {
	rb := int(w.Type.RowBytes(uint64(w.Cols)))
	if r0 < 0 || n <= 0 || r0+n > w.Rows {
		return nil, fmt.Errorf("model: tensor %q has %d rows, want at least %d", w.Name, w.Rows, r0+n)
	}
	return NewMatrix(name, w.Type, n, w.Cols, w.Data[r0*rb:(r0+n)*rb])
}

func phi3Check(m *Model) error {
	hp, f := m.Hparams, m.file
	for _, name := range []string{"rope_factors_long.weight", "rope_factors_short.weight"} {
		if _, ok := f.Tensor(name); ok {
			return fmt.Errorf("model: phi3: %s: LongRoPE scaling is not supported", name)
		}
	}
	nq, nk, nv := hp.Heads*hp.HeadDimK, hp.KVHeads*hp.HeadDimK, hp.KVHeads*hp.HeadDimV
	for l := range m.blocks {
		w, ly := &m.blocks[l], m.Layer(l).(*phi3Layer)
		var err error
		switch {
		case ly.QKV != nil:
			if ly.QKV.Rows != nq+nk+nv {
				return fmt.Errorf("model: tensor %q has %d rows, want %d (Q %d + K %d + V %d)", ly.QKV.Name, ly.QKV.Rows, nq+nk+nv, nq, nk, nv)
			}
			if w.Wq, err = rowsOf(ly.QKV, ly.QKV.Name+"[q]", 0, nq); err == nil {
				if w.Wk, err = rowsOf(ly.QKV, ly.QKV.Name+"[k]", nq, nk); err == nil {
					w.Wv, err = rowsOf(ly.QKV, ly.QKV.Name+"[v]", nq+nk, nv)
				}
			}
		case w.Wq == nil || w.Wk == nil || w.Wv == nil:
			return fmt.Errorf("model: phi3: blk.%d has neither attn_qkv nor attn_q, attn_k and attn_v", l)
		}
		if err != nil {
			return err
		}
		if w.Gate == nil && w.Router == nil {
			if w.Up.Rows != 2*hp.FFN {
				return fmt.Errorf("model: tensor %q has %d rows, want 2 × %d (gate and up)", w.Up.Name, w.Up.Rows, hp.FFN)
			}
			up := w.Up
			if w.Gate, err = rowsOf(up, up.Name+"[gate]", 0, hp.FFN); err != nil {
				return err
			}
			if w.Up, err = rowsOf(up, up.Name+"[up]", hp.FFN, hp.FFN); err != nil {
				return err
			}
		}
	}
	window := 0
	switch {
	case (hp.Layers == 32 || hp.Layers == 40) && hp.Context == 4096:
		window = 2047
	case hp.Layers == 32 && hp.KVHeads == 32 && hp.Context == 131072:
		window = 262144
	case hp.Layers == 40 && hp.Context == 131072:
		window = 131072
	}
	if _, set := f.Value("phi3.attention.sliding_window"); set {
		v, ok := f.Uint("phi3.attention.sliding_window")
		if !ok || v > math.MaxInt32 {
			return fmt.Errorf("model: phi3.attention.sliding_window: want an integer")
		}
		window = int(v)
	}
	if window > 0 {
		m.windows = make([]int, hp.Layers)
		for l := range m.windows {
			m.windows[l] = window
		}
	}
	return nil
}
