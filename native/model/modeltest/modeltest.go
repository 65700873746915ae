// Package modeltest writes small random models as GGUF files for the tests of the packages that
// run them (native/model, the CUDA engine): one writer, so the architectures' tensor layouts
// are written in one place.
package modeltest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/wkern"
)

// Synth describes a small random model written to a GGUF file for tests: every architecture
// kvlab runs, weights scaled like a trained model's (1/√cols), so activations stay sane.
type Synth struct {
	Arch                               string
	Typ                                gguf.Type // type of every weight matrix
	Embd, FFN, Heads, KVHeads, HeadDim int
	Layers, Vocab                      int
	Bias, Tied                         bool
	QKNorm                             bool   // per-head Q and K norms (qwen3)
	Drop                               string // a tensor to leave out
	MetaHD                             int    // key_length/value_length written instead of hd, when set
	RopeBase                           float32
	Window                             int            // gemma2: attention.sliding_window
	Experts, Used                      int            // a mixture-of-experts FFN (llama.expert_count, expert_used_count)
	AttnCap, FinalCap                  float32        // gemma2 soft-capping (default 50, 30)
	VocabMeta                          bool           // write a llama (SPM) tokenizer of vocab tokens, for llama.cpp
	RopeBaseSWA                        float32        // gemma3: rope.freq_base_swa, when set
	Pattern                            int            // gemma3: attention.sliding_window_pattern, when set
	ExpFFN, ShFFN                      int            // qwen2moe/qwen3moe: expert_feed_forward_length, expert_shared_feed_forward_length (a shared expert)
	RopeFreqs                          []float32      // a rope_freqs tensor (llama-3 frequency scaling), when set
	Keys                               map[string]any // more metadata, each key prefixed with the architecture
	ExpType                            gguf.Type      // the expert tensors' type when not Typ's (F16 or Q8_0; zero: Typ)
}

// Write writes the model's GGUF file into a temporary directory of t and returns its path;
// the weights follow from seed alone.
func (s Synth) Write(t testing.TB, seed uint64) string {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 99))
	w := &gguf.Writer{}
	a := s.Arch
	w.AddKV("general.architecture", a)
	w.AddKV(a+".embedding_length", uint32(s.Embd))
	w.AddKV(a+".block_count", uint32(s.Layers))
	w.AddKV(a+".feed_forward_length", uint32(s.FFN))
	w.AddKV(a+".attention.head_count", uint32(s.Heads))
	w.AddKV(a+".attention.head_count_kv", uint32(s.KVHeads))
	mhd := s.HeadDim
	if s.MetaHD != 0 {
		mhd = s.MetaHD
	}
	w.AddKV(a+".attention.key_length", uint32(mhd))
	w.AddKV(a+".attention.value_length", uint32(mhd))
	w.AddKV(a+".attention.layer_norm_rms_epsilon", float32(1e-5))
	w.AddKV(a+".rope.freq_base", s.RopeBase)
	w.AddKV(a+".rope.dimension_count", uint32(mhd))
	w.AddKV(a+".context_length", uint32(128))
	if a == "phi3" && s.Window > 0 {
		w.AddKV(a+".attention.sliding_window", uint32(s.Window))
	}
	if a == "gemma2" {
		w.AddKV(a+".attention.sliding_window", uint32(s.Window))
		ac, fc := s.AttnCap, s.FinalCap
		if ac == 0 {
			ac, fc = 50, 30
		}
		w.AddKV(a+".attn_logit_softcapping", ac)
		w.AddKV(a+".final_logit_softcapping", fc)
	}
	if a == "gemma3" {
		if s.Window > 0 {
			w.AddKV(a+".attention.sliding_window", uint32(s.Window))
		}
		if s.FinalCap > 0 {
			w.AddKV(a+".final_logit_softcapping", s.FinalCap)
		}
		if s.RopeBaseSWA > 0 {
			w.AddKV(a+".rope.freq_base_swa", s.RopeBaseSWA)
		}
		if s.Pattern > 0 {
			w.AddKV(a+".attention.sliding_window_pattern", uint32(s.Pattern))
		}
	}
	for k, v := range s.Keys {
		w.AddKV(a+"."+k, v)
	}
	if s.VocabMeta {
		w.AddPlaceholderVocab(s.Vocab)
	}
	if s.Experts > 0 {
		w.AddKV(a+".expert_count", uint32(s.Experts))
		w.AddKV(a+".expert_used_count", uint32(s.Used))
	}
	ef := s.FFN // each expert's width
	if (a == "qwen2moe" || a == "qwen3moe") && s.Used > 0 {
		ef = s.FFN / s.Used // llama.cpp's default without the key
	}
	if s.ExpFFN > 0 {
		ef = s.ExpFFN
		w.AddKV(a+".expert_feed_forward_length", uint32(s.ExpFFN))
	}
	if s.ShFFN > 0 {
		w.AddKV(a+".expert_shared_feed_forward_length", uint32(s.ShFFN))
	}
	// draw is n trained-like weights of a matrix of cols columns (scaled by 1/√cols, so the
	// model's activations stay sane and the tests' bounds mean something).
	draw := func(n, cols int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale / math.Sqrt(float64(cols)))
		}
		return v
	}
	// encode writes v as typ: F32, F16, else through the reference quantizers.
	encode := func(typ gguf.Type, v []float32) []byte {
		var b []byte
		switch typ {
		case gguf.F32:
			for _, x := range v {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
			}
		case gguf.F16:
			for _, x := range v {
				b = binary.LittleEndian.AppendUint16(b, kvq.F32ToF16(x))
			}
		default:
			b = wkern.Quantize(nil, typ, v)
		}
		return b
	}
	mat := func(name string, rows, cols int, scale float64) {
		if name == s.Drop {
			return
		}
		data := RandomWeights(r, s.Typ, rows, cols) // drawn for every type: each seed's weights stay as they were
		if s.Typ == gguf.F32 || s.Typ == gguf.F16 || wkern.Quantizable(s.Typ) {
			data = encode(s.Typ, draw(rows*cols, cols, scale))
		}
		w.AddTensor(name, s.Typ, []uint64{uint64(cols), uint64(rows)}, data)
	}
	// exps writes s.Experts matrices of rows × cols as one 3-D tensor of type ExpType (else Typ;
	// float types or Q8_0).
	exps := func(name string, rows, cols int, scale float64) {
		typ := s.Typ
		if s.ExpType != 0 {
			typ = s.ExpType
		}
		w.AddTensor(name, typ, []uint64{uint64(cols), uint64(rows), uint64(s.Experts)}, encode(typ, draw(rows*cols*s.Experts, cols, scale)))
	}
	vec := func(name string, n int, mean, sd float64) {
		if name == s.Drop {
			return
		}
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(mean+sd*r.NormFloat64())))
		}
		w.AddTensor(name, gguf.F32, []uint64{uint64(n)}, b)
	}
	nq, nk := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	if s.RopeFreqs != nil {
		b := make([]byte, 4*len(s.RopeFreqs))
		for i, v := range s.RopeFreqs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		w.AddTensor("rope_freqs.weight", gguf.F32, []uint64{uint64(len(s.RopeFreqs))}, b)
	}
	mat("token_embd.weight", s.Vocab, s.Embd, 1)
	vec("output_norm.weight", s.Embd, 1, 0.1)
	if !s.Tied {
		mat("output.weight", s.Vocab, s.Embd, 1)
	}
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", s.Embd, 1, 0.1)
		if a == "phi3" { // fused: Q, K, V in one tensor, gate and up in one
			mat(p+"attn_qkv.weight", nq+2*nk, s.Embd, 1)
		} else {
			mat(p+"attn_q.weight", nq, s.Embd, 1)
			mat(p+"attn_k.weight", nk, s.Embd, 1)
			mat(p+"attn_v.weight", nk, s.Embd, 1)
		}
		if s.Bias {
			vec(p+"attn_q.bias", nq, 0, 0.1)
			vec(p+"attn_k.bias", nk, 0, 0.1)
			vec(p+"attn_v.bias", nk, 0, 0.1)
		}
		if s.QKNorm || a == "gemma3" {
			vec(p+"attn_q_norm.weight", s.HeadDim, 1, 0.2)
			vec(p+"attn_k_norm.weight", s.HeadDim, 1, 0.2)
		}
		mat(p+"attn_output.weight", s.Embd, nq, 0.5)
		vec(p+"ffn_norm.weight", s.Embd, 1, 0.1)
		if a == "phi3" {
			mat(p+"ffn_up.weight", 2*s.FFN, s.Embd, 1)
			mat(p+"ffn_down.weight", s.Embd, s.FFN, 0.5)
		} else if s.Experts > 0 {
			mat(p+"ffn_gate_inp.weight", s.Experts, s.Embd, 3)
			exps(p+"ffn_gate_exps.weight", ef, s.Embd, 1)
			exps(p+"ffn_up_exps.weight", ef, s.Embd, 1)
			exps(p+"ffn_down_exps.weight", s.Embd, ef, 0.5)
			if s.ShFFN > 0 {
				vec(p+"ffn_gate_inp_shexp.weight", s.Embd, 0, 1)
				mat(p+"ffn_gate_shexp.weight", s.ShFFN, s.Embd, 1)
				mat(p+"ffn_up_shexp.weight", s.ShFFN, s.Embd, 1)
				mat(p+"ffn_down_shexp.weight", s.Embd, s.ShFFN, 0.5)
			}
		} else {
			mat(p+"ffn_gate.weight", s.FFN, s.Embd, 1)
			mat(p+"ffn_up.weight", s.FFN, s.Embd, 1)
			mat(p+"ffn_down.weight", s.Embd, s.FFN, 0.5)
		}
		if a == "gemma2" || a == "gemma3" {
			vec(p+"post_attention_norm.weight", s.Embd, 1, 0.1)
			vec(p+"post_ffw_norm.weight", s.Embd, 1, 0.1)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "synth.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// RandomWeights returns rows×cols weights of type t with random codes and sane scales: every
// code byte is random (so every bit pattern of every field is exercised), and the f16/f32
// scale fields hold random values of moderate size so that products stay finite.
func RandomWeights(r *rand.Rand, t gguf.Type, rows, cols int) []byte {
	rb := int(t.RowBytes(uint64(cols)))
	data := make([]byte, rows*rb)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	h := func(b []byte, scale float64) {
		binary.LittleEndian.PutUint16(b, kvq.F32ToF16(float32(scale*(r.Float64()+0.05))))
	}
	bs, ts := t.BlockSize(), t.TypeSize()
	for blk := 0; blk < rows*cols/bs; blk++ {
		b := data[blk*ts : (blk+1)*ts]
		switch t {
		case gguf.F32:
			binary.LittleEndian.PutUint32(b, math.Float32bits(float32(r.NormFloat64())))
		case gguf.F16:
			binary.LittleEndian.PutUint16(b, kvq.F32ToF16(float32(r.NormFloat64())))
		case gguf.BF16:
			binary.LittleEndian.PutUint16(b, kvq.F32ToBF16(float32(r.NormFloat64())))
		case gguf.Q8_0, gguf.Q4_0, gguf.Q5_0:
			h(b, 0.1)
		case gguf.Q4_1, gguf.Q5_1:
			h(b, 0.1)
			h(b[2:], -0.5)
		case gguf.Q4_K, gguf.Q5_K:
			h(b, 0.01)
			h(b[2:], 0.01)
		case gguf.Q6_K:
			h(b[208:], 0.01)
		}
	}
	return data
}
