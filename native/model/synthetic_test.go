package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/wkern"
)

// synth describes a small random model written to a GGUF file for tests.
type synth struct {
	arch                          string
	typ                           gguf.Type // type of every weight matrix
	embd, ffn, heads, kvHeads, hd int
	layers, vocab                 int
	bias, tied                    bool
	qkNorm                        bool   // per-head Q and K norms (qwen3)
	drop                          string // a tensor to leave out
	metaHD                        int    // key_length/value_length written instead of hd, when set
	ropeBase                      float32
	window                        int            // gemma2: attention.sliding_window
	experts, used                 int            // a mixture-of-experts FFN (llama.expert_count, expert_used_count)
	attnCap, finalCap             float32        // gemma2 soft-capping (default 50, 30)
	vocabMeta                     bool           // write a llama (SPM) tokenizer of vocab tokens, for llama.cpp
	ropeBaseSWA                   float32        // gemma3: rope.freq_base_swa, when set
	pattern                       int            // gemma3: attention.sliding_window_pattern, when set
	expFFN, shFFN                 int            // qwen2moe/qwen3moe: expert_feed_forward_length, expert_shared_feed_forward_length (a shared expert)
	ropeFreqs                     []float32      // a rope_freqs tensor (llama-3 frequency scaling), when set
	keys                          map[string]any // more metadata, each key prefixed with the architecture
}

// write builds the model's GGUF file in dir and returns its path and the metadata/tensors.
func (s synth) write(t *testing.T, seed uint64) string {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 99))
	w := &gguf.Writer{}
	a := s.arch
	w.AddKV("general.architecture", a)
	w.AddKV(a+".embedding_length", uint32(s.embd))
	w.AddKV(a+".block_count", uint32(s.layers))
	w.AddKV(a+".feed_forward_length", uint32(s.ffn))
	w.AddKV(a+".attention.head_count", uint32(s.heads))
	w.AddKV(a+".attention.head_count_kv", uint32(s.kvHeads))
	mhd := s.hd
	if s.metaHD != 0 {
		mhd = s.metaHD
	}
	w.AddKV(a+".attention.key_length", uint32(mhd))
	w.AddKV(a+".attention.value_length", uint32(mhd))
	w.AddKV(a+".attention.layer_norm_rms_epsilon", float32(1e-5))
	w.AddKV(a+".rope.freq_base", s.ropeBase)
	w.AddKV(a+".rope.dimension_count", uint32(mhd))
	w.AddKV(a+".context_length", uint32(128))
	if a == "phi3" && s.window > 0 {
		w.AddKV(a+".attention.sliding_window", uint32(s.window))
	}
	if a == "gemma2" {
		w.AddKV(a+".attention.sliding_window", uint32(s.window))
		ac, fc := s.attnCap, s.finalCap
		if ac == 0 {
			ac, fc = 50, 30
		}
		w.AddKV(a+".attn_logit_softcapping", ac)
		w.AddKV(a+".final_logit_softcapping", fc)
	}
	if a == "gemma3" {
		if s.window > 0 {
			w.AddKV(a+".attention.sliding_window", uint32(s.window))
		}
		if s.finalCap > 0 {
			w.AddKV(a+".final_logit_softcapping", s.finalCap)
		}
		if s.ropeBaseSWA > 0 {
			w.AddKV(a+".rope.freq_base_swa", s.ropeBaseSWA)
		}
		if s.pattern > 0 {
			w.AddKV(a+".attention.sliding_window_pattern", uint32(s.pattern))
		}
	}
	for k, v := range s.keys {
		w.AddKV(a+"."+k, v)
	}
	if s.vocabMeta {
		addSPMVocab(w, s.vocab)
	}
	if s.experts > 0 {
		w.AddKV(a+".expert_count", uint32(s.experts))
		w.AddKV(a+".expert_used_count", uint32(s.used))
	}
	ef := s.ffn // each expert's width
	if (a == "qwen2moe" || a == "qwen3moe") && s.used > 0 {
		ef = s.ffn / s.used // llama.cpp's default without the key
	}
	if s.expFFN > 0 {
		ef = s.expFFN
		w.AddKV(a+".expert_feed_forward_length", uint32(s.expFFN))
	}
	if s.shFFN > 0 {
		w.AddKV(a+".expert_shared_feed_forward_length", uint32(s.shFFN))
	}
	mat := func(name string, rows, cols int, scale float64) {
		if name == s.drop {
			return
		}
		data := randomWeights(r, s.typ, rows, cols)
		if s.typ != gguf.F32 && s.typ != gguf.F16 && wkern.Quantizable(s.typ) {
			// Quantize trained-like weights (1/√cols) with the reference quantizers, so the
			// model's activations stay sane and the bound below means something.
			v := make([]float32, rows*cols)
			for i := range v {
				v[i] = float32(r.NormFloat64() * scale / math.Sqrt(float64(cols)))
			}
			data = wkern.Quantize(nil, s.typ, v)
		}
		if s.typ == gguf.F32 || s.typ == gguf.F16 {
			// Scale plain weights like a trained model's (1/√cols) so activations stay sane.
			for i := 0; i < rows*cols; i++ {
				v := float32(r.NormFloat64() * scale / math.Sqrt(float64(cols)))
				if s.typ == gguf.F32 {
					binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
				} else {
					binary.LittleEndian.PutUint16(data[2*i:], kvq.F32ToF16(v))
				}
			}
		}
		w.AddTensor(name, s.typ, []uint64{uint64(cols), uint64(rows)}, data)
	}
	// exps writes s.experts matrices of rows × cols as one 3-D tensor (float types only).
	exps := func(name string, rows, cols int, scale float64) {
		var data []byte
		for e := 0; e < s.experts; e++ {
			for i := 0; i < rows*cols; i++ {
				v := float32(r.NormFloat64() * scale / math.Sqrt(float64(cols)))
				if s.typ == gguf.F16 {
					data = binary.LittleEndian.AppendUint16(data, kvq.F32ToF16(v))
				} else {
					data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
				}
			}
		}
		w.AddTensor(name, s.typ, []uint64{uint64(cols), uint64(rows), uint64(s.experts)}, data)
	}
	vec := func(name string, n int, mean, sd float64) {
		if name == s.drop {
			return
		}
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(mean+sd*r.NormFloat64())))
		}
		w.AddTensor(name, gguf.F32, []uint64{uint64(n)}, b)
	}
	nq, nk := s.heads*s.hd, s.kvHeads*s.hd
	if s.ropeFreqs != nil {
		b := make([]byte, 4*len(s.ropeFreqs))
		for i, v := range s.ropeFreqs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		w.AddTensor("rope_freqs.weight", gguf.F32, []uint64{uint64(len(s.ropeFreqs))}, b)
	}
	mat("token_embd.weight", s.vocab, s.embd, 1)
	vec("output_norm.weight", s.embd, 1, 0.1)
	if !s.tied {
		mat("output.weight", s.vocab, s.embd, 1)
	}
	for l := 0; l < s.layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", s.embd, 1, 0.1)
		if a == "phi3" { // fused: Q, K, V in one tensor, gate and up in one
			mat(p+"attn_qkv.weight", nq+2*nk, s.embd, 1)
		} else {
			mat(p+"attn_q.weight", nq, s.embd, 1)
			mat(p+"attn_k.weight", nk, s.embd, 1)
			mat(p+"attn_v.weight", nk, s.embd, 1)
		}
		if s.bias {
			vec(p+"attn_q.bias", nq, 0, 0.1)
			vec(p+"attn_k.bias", nk, 0, 0.1)
			vec(p+"attn_v.bias", nk, 0, 0.1)
		}
		if s.qkNorm || a == "gemma3" {
			vec(p+"attn_q_norm.weight", s.hd, 1, 0.2)
			vec(p+"attn_k_norm.weight", s.hd, 1, 0.2)
		}
		mat(p+"attn_output.weight", s.embd, nq, 0.5)
		vec(p+"ffn_norm.weight", s.embd, 1, 0.1)
		if a == "phi3" {
			mat(p+"ffn_up.weight", 2*s.ffn, s.embd, 1)
			mat(p+"ffn_down.weight", s.embd, s.ffn, 0.5)
		} else if s.experts > 0 {
			mat(p+"ffn_gate_inp.weight", s.experts, s.embd, 3)
			exps(p+"ffn_gate_exps.weight", ef, s.embd, 1)
			exps(p+"ffn_up_exps.weight", ef, s.embd, 1)
			exps(p+"ffn_down_exps.weight", s.embd, ef, 0.5)
			if s.shFFN > 0 {
				vec(p+"ffn_gate_inp_shexp.weight", s.embd, 0, 1)
				mat(p+"ffn_gate_shexp.weight", s.shFFN, s.embd, 1)
				mat(p+"ffn_up_shexp.weight", s.shFFN, s.embd, 1)
				mat(p+"ffn_down_shexp.weight", s.embd, s.shFFN, 0.5)
			}
		} else {
			mat(p+"ffn_gate.weight", s.ffn, s.embd, 1)
			mat(p+"ffn_up.weight", s.ffn, s.embd, 1)
			mat(p+"ffn_down.weight", s.embd, s.ffn, 0.5)
		}
		if a == "gemma2" || a == "gemma3" {
			vec(p+"post_attention_norm.weight", s.embd, 1, 0.1)
			vec(p+"post_ffw_norm.weight", s.embd, 1, 0.1)
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

// addSPMVocab writes a llama (SPM) tokenizer of n tokens (n ≥ 259): unk, bos, eos, the 256
// byte tokens and plain words, as llama.cpp needs to load a file.
func addSPMVocab(w *gguf.Writer, n int) {
	toks, scores, types := make([]string, n), make([]float32, n), make([]int32, n)
	for i := range toks {
		switch {
		case i == 0:
			toks[i], types[i] = "<unk>", 2
		case i == 1:
			toks[i], types[i] = "<s>", 3
		case i == 2:
			toks[i], types[i] = "</s>", 3
		case i < 3+256:
			toks[i], types[i] = fmt.Sprintf("<0x%02X>", i-3), 6
		default:
			toks[i], types[i] = fmt.Sprintf("▁t%d", i), 1
			scores[i] = -float32(i)
		}
	}
	w.AddKV("tokenizer.ggml.model", "llama")
	w.AddKV("tokenizer.ggml.tokens", toks)
	w.AddKV("tokenizer.ggml.scores", scores)
	w.AddKV("tokenizer.ggml.token_type", types)
	w.AddKV("tokenizer.ggml.bos_token_id", uint32(1))
	w.AddKV("tokenizer.ggml.eos_token_id", uint32(2))
}

// refForward is the plain float64 forward pass of the package doc comment, written
// independently of the package's code: weights dequantized with gguf.DequantizeRow, exact
// causal softmax attention over every position, RoPE from its definition. It returns every
// position's logits.
func refForward(t *testing.T, path string, arch Arch, tokens []int32) [][]float64 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := arch.Name
	u := func(k string) int { v, _ := f.Uint(a + "." + k); return int(v) }
	embd, layers, heads, kvh, hd := u("embedding_length"), u("block_count"), u("attention.head_count"), u("attention.head_count_kv"), u("attention.key_length")
	base, _ := f.Float(a + ".rope.freq_base")
	tensor := func(name string) ([]float64, []uint64) {
		info, ok := f.Tensor(name)
		if !ok {
			return nil, nil
		}
		data, err := f.TensorData(name)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, info.Elements())
		if err := gguf.DequantizeRow(info.Type, data, v); err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out, info.Dims
	}
	matvec := func(w []float64, dims []uint64, x []float64) []float64 {
		cols, rows := int(dims[0]), int(dims[1])
		y := make([]float64, rows)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				y[r] += w[r*cols+c] * x[c]
			}
		}
		return y
	}
	norm := func(x, w []float64) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(len(x))+1e-5)
		y := make([]float64, len(x))
		for i := range x {
			y[i] = w[i] * x[i] * s
		}
		return y
	}
	rot := func(v []float64, pos int) {
		for j := 0; j < hd/2; j++ {
			theta := float64(pos) * math.Pow(base, -2*float64(j)/float64(hd))
			c, s := math.Cos(theta), math.Sin(theta)
			i0, i1 := 2*j, 2*j+1
			if arch.Rope == RopeNeox {
				i0, i1 = j, j+hd/2
			}
			v[i0], v[i1] = v[i0]*c-v[i1]*s, v[i0]*s+v[i1]*c
		}
	}
	emb, edims := tensor("token_embd.weight")
	out, odims := tensor("output.weight")
	if out == nil {
		out, odims = emb, edims
	}
	onorm, _ := tensor("output_norm.weight")
	n := len(tokens)
	x := make([][]float64, n)
	for i, tok := range tokens {
		x[i] = append([]float64(nil), emb[int(tok)*embd:(int(tok)+1)*embd]...)
	}
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		w := func(name string) ([]float64, []uint64) { return tensor(p + name) }
		an, _ := w("attn_norm.weight")
		wq, dq := w("attn_q.weight")
		wk, dk := w("attn_k.weight")
		wv, dv := w("attn_v.weight")
		if qkv, dqkv := w("attn_qkv.weight"); qkv != nil { // phi3: rows Q, then K, then V
			c := int(dqkv[0])
			nq, nk := heads*hd, kvh*hd
			wq, dq = qkv[:nq*c], []uint64{dqkv[0], uint64(nq)}
			wk, dk = qkv[nq*c:(nq+nk)*c], []uint64{dqkv[0], uint64(nk)}
			wv, dv = qkv[(nq+nk)*c:], []uint64{dqkv[0], uint64(nk)}
		}
		bq, _ := w("attn_q.bias")
		bk, _ := w("attn_k.bias")
		bv, _ := w("attn_v.bias")
		qn, _ := w("attn_q_norm.weight")
		kn, _ := w("attn_k_norm.weight")
		wo, do := w("attn_output.weight")
		fn, _ := w("ffn_norm.weight")
		wg, dg := w("ffn_gate.weight")
		wu, du := w("ffn_up.weight")
		wd, dd := w("ffn_down.weight")
		if wg == nil && du != nil { // phi3: ffn_up is gate then up
			c, ff := int(du[0]), int(du[1])/2
			wg, dg = wu[:ff*c], []uint64{du[0], uint64(ff)}
			wu, du = wu[ff*c:], []uint64{du[0], uint64(ff)}
		}
		wr, dr := w("ffn_gate_inp.weight")
		eg, deg := w("ffn_gate_exps.weight")
		eu, _ := w("ffn_up_exps.weight")
		ed, ded := w("ffn_down_exps.weight")
		used, _ := f.Uint(a + ".expert_used_count")
		sgi, _ := w("ffn_gate_inp_shexp.weight")
		sg, dsg := w("ffn_gate_shexp.weight")
		su, dsu := w("ffn_up_shexp.weight")
		sd, dsd := w("ffn_down_shexp.weight")
		q, k, v := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for i := 0; i < n; i++ {
			h := norm(x[i], an)
			q[i], k[i], v[i] = matvec(wq, dq, h), matvec(wk, dk, h), matvec(wv, dv, h)
			for j := range bq {
				q[i][j] += bq[j]
			}
			for j := range bk {
				k[i][j] += bk[j]
				v[i][j] += bv[j]
			}
			for hh := 0; hh < heads; hh++ {
				if qn != nil {
					copy(q[i][hh*hd:], norm(q[i][hh*hd:(hh+1)*hd], qn))
				}
				rot(q[i][hh*hd:(hh+1)*hd], i)
			}
			for hh := 0; hh < kvh; hh++ {
				if kn != nil {
					copy(k[i][hh*hd:], norm(k[i][hh*hd:(hh+1)*hd], kn))
				}
				rot(k[i][hh*hd:(hh+1)*hd], i)
			}
		}
		for i := 0; i < n; i++ {
			att := make([]float64, heads*hd)
			lo := 0
			if win, ok := f.Uint(a + ".attention.sliding_window"); ok && a == "phi3" {
				lo = max(0, i-int(win)+1)
			}
			for hh := 0; hh < heads; hh++ {
				g := hh / (heads / kvh)
				sc := make([]float64, i+1)
				m := math.Inf(-1)
				for j := lo; j <= i; j++ {
					for d := 0; d < hd; d++ {
						sc[j] += q[i][hh*hd+d] * k[j][g*hd+d]
					}
					sc[j] /= math.Sqrt(float64(hd))
					m = math.Max(m, sc[j])
				}
				var sum float64
				for j := lo; j <= i; j++ {
					sc[j] = math.Exp(sc[j] - m)
					sum += sc[j]
				}
				for j := lo; j <= i; j++ {
					for d := 0; d < hd; d++ {
						att[hh*hd+d] += sc[j] / sum * v[j][g*hd+d]
					}
				}
			}
			o := matvec(wo, do, att)
			for j := range o {
				x[i][j] += o[j]
			}
			h := norm(x[i], fn)
			ffn := func(wg []float64, dg []uint64, wu []float64, du []uint64, wd []float64, dd []uint64) []float64 {
				gt, up := matvec(wg, dg, h), matvec(wu, du, h)
				for j := range gt {
					gt[j] = gt[j] / (1 + math.Exp(-gt[j])) * up[j]
				}
				return matvec(wd, dd, gt)
			}
			if wr == nil {
				dn := ffn(wg, dg, wu, du, wd, dd)
				for j := range dn {
					x[i][j] += dn[j]
				}
				continue
			}
			// Mixture of experts: softmax over the router, the top `used`, renormalized (not in
			// qwen2moe), plus qwen2moe's shared expert scaled by σ(gate·h).
			if sgi != nil {
				var z float64
				for j := range sgi {
					z += sgi[j] * h[j]
				}
				dn := ffn(sg, dsg, su, dsu, sd, dsd)
				for j := range dn {
					x[i][j] += dn[j] / (1 + math.Exp(-z))
				}
			}
			rl := matvec(wr, dr, h)
			mx := math.Inf(-1)
			for _, v := range rl {
				mx = math.Max(mx, v)
			}
			var sum float64
			for e := range rl {
				rl[e] = math.Exp(rl[e] - mx)
				sum += rl[e]
			}
			type pick struct {
				e int
				p float64
			}
			var picks []pick
			for range int(used) {
				best := -1
				for e := range rl {
					if rl[e] >= 0 && (best < 0 || rl[e] > rl[best]) {
						best = e
					}
				}
				picks = append(picks, pick{best, rl[best] / sum})
				rl[best] = -1
			}
			var top float64
			for _, pk := range picks {
				top += pk.p
			}
			if a == "qwen2moe" {
				top = 1
			}
			ne, nf := int(deg[1]*deg[0]), int(ded[1]*ded[0])
			for _, pk := range picks {
				e := pk.e
				d2 := []uint64{deg[0], deg[1]}
				d3 := []uint64{ded[0], ded[1]}
				dn := ffn(eg[e*ne:(e+1)*ne], d2, eu[e*ne:(e+1)*ne], d2, ed[e*nf:(e+1)*nf], d3)
				for j := range dn {
					x[i][j] += pk.p / top * dn[j]
				}
			}
		}
	}
	logits := make([][]float64, n)
	for i := range x {
		logits[i] = matvec(out, odims, norm(x[i], onorm))
	}
	return logits
}

// TestForwardMatchesReference runs small random llama and qwen2 models, with weights of
// several types, through Forward (a batched prefill, then single-token decodes) and compares
// every position's logits with refForward. The bound is 2e-3 of the logits' RMS: float32
// arithmetic and f32 KV against float64.
func TestForwardMatchesReference(t *testing.T) {
	for _, s := range []synth{
		{arch: "llama", typ: gguf.F32, embd: 64, ffn: 96, heads: 4, kvHeads: 2, hd: 16, layers: 2, vocab: 40, tied: true, ropeBase: 10000},
		{arch: "qwen2", typ: gguf.F32, embd: 64, ffn: 96, heads: 4, kvHeads: 1, hd: 16, layers: 2, vocab: 40, bias: true, ropeBase: 1e6},
		{arch: "llama", typ: gguf.F16, embd: 64, ffn: 96, heads: 2, kvHeads: 2, hd: 32, layers: 2, vocab: 40, ropeBase: 10000},
		{arch: "qwen2", typ: gguf.Q8_0, embd: 64, ffn: 96, heads: 4, kvHeads: 2, hd: 16, layers: 2, vocab: 40, bias: true, ropeBase: 1e6},
		{arch: "llama", typ: gguf.Q4_K, embd: 256, ffn: 256, heads: 4, kvHeads: 2, hd: 64, layers: 1, vocab: 16, ropeBase: 10000},
		{arch: "qwen2", typ: gguf.Q6_K, embd: 256, ffn: 512, heads: 4, kvHeads: 4, hd: 64, layers: 1, vocab: 16, bias: true, tied: true, ropeBase: 1e6},
		{arch: "qwen3", typ: gguf.F32, embd: 64, ffn: 96, heads: 4, kvHeads: 2, hd: 32, layers: 2, vocab: 40, qkNorm: true, tied: true, ropeBase: 1e6},
		{arch: "qwen3", typ: gguf.Q8_0, embd: 64, ffn: 96, heads: 2, kvHeads: 1, hd: 32, layers: 2, vocab: 40, qkNorm: true, ropeBase: 1e6},
		{arch: "llama", typ: gguf.F32, embd: 64, ffn: 48, heads: 4, kvHeads: 2, hd: 16, layers: 2, vocab: 40, ropeBase: 10000, experts: 4, used: 2},
		{arch: "phi3", typ: gguf.F32, embd: 64, ffn: 96, heads: 4, kvHeads: 2, hd: 16, layers: 2, vocab: 40, ropeBase: 10000, window: 3},
		{arch: "phi3", typ: gguf.Q8_0, embd: 64, ffn: 96, heads: 4, kvHeads: 4, hd: 16, layers: 2, vocab: 40, ropeBase: 10000},
		{arch: "llama", typ: gguf.F16, embd: 64, ffn: 32, heads: 4, kvHeads: 1, hd: 16, layers: 2, vocab: 40, tied: true, ropeBase: 10000, experts: 8, used: 3},
		{arch: "qwen3moe", typ: gguf.F32, embd: 64, ffn: 96, heads: 4, kvHeads: 2, hd: 32, layers: 2, vocab: 40, qkNorm: true, ropeBase: 1e6, experts: 8, used: 3},
		{arch: "qwen3moe", typ: gguf.F16, embd: 64, ffn: 96, heads: 2, kvHeads: 1, hd: 32, layers: 2, vocab: 40, qkNorm: true, tied: true, ropeBase: 1e6, experts: 6, used: 2, expFFN: 40},
		{arch: "qwen2moe", typ: gguf.F32, embd: 64, ffn: 96, heads: 4, kvHeads: 2, hd: 16, layers: 2, vocab: 40, bias: true, ropeBase: 1e6, experts: 8, used: 2, expFFN: 24, shFFN: 80},
		{arch: "qwen2moe", typ: gguf.F16, embd: 64, ffn: 64, heads: 4, kvHeads: 4, hd: 16, layers: 2, vocab: 40, tied: true, ropeBase: 1e6, experts: 4, used: 4, shFFN: 64},
	} {
		t.Run(fmt.Sprintf("%s/%s/experts%d", s.arch, s.typ, s.experts), func(t *testing.T) {
			path := s.write(t, uint64(s.embd*31+int(s.typ)))
			m, err := Load(path, Options{Threads: 2, Batch: 5})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			tokens := []int32{1, 7, 3, 3, 9, 0, 12, 5, 2, 11}
			ref := refForward(t, path, m.Arch, tokens)
			c, err := kvcache.New(m.CacheConfig(kvq.Pair{K: kvq.F32, V: kvq.F32}, 32))
			if err != nil {
				t.Fatal(err)
			}
			vocab := m.Hparams.Vocab
			pre := 7 // prefill in passes of Batch = 5 tokens, then decode
			got := make([]float32, pre*vocab)
			if err := m.Forward(tokens[:pre], c, got); err != nil {
				t.Fatal(err)
			}
			one := make([]float32, vocab)
			for _, tok := range tokens[pre:] {
				if err := m.Forward([]int32{tok}, c, one); err != nil {
					t.Fatal(err)
				}
				got = append(got, one...)
			}
			var rms float64
			for _, row := range ref {
				for _, v := range row {
					rms += v * v
				}
			}
			rms = math.Sqrt(rms / float64(len(ref)*vocab))
			worst, se := 0.0, 0.0
			for i, row := range ref {
				for j, want := range row {
					d := float64(got[i*vocab+j]) - want
					worst = max(worst, math.Abs(d)/rms)
					se += d * d
				}
			}
			t.Logf("worst |Δ|/rms %.2e, rms Δ/rms %.2e", worst, math.Sqrt(se/float64(len(ref)*vocab))/rms)
			// Float weights: float32 arithmetic against float64, |Δ| ≤ 2e-3·RMS. Integer kernels
			// also round every activation vector to 8 bits per block (|error| ≤ d/2, d =
			// max|x|/127) before each product; that costs about 1% of a product's RMS per
			// product, 2% over these models (measured: RMS 1.9e-2, worst 5.8e-2), so the bound
			// is |Δ| ≤ 0.1·RMS and RMS(Δ) ≤ 3e-2·RMS.
			lim, rmsLim := 2e-3, 2e-3
			if m.blocks[0].Wq.intK {
				lim, rmsLim = 0.1, 3e-2
			}
			if worst > lim || math.Sqrt(se/float64(len(ref)*vocab))/rms > rmsLim {
				t.Fatalf("logits off the reference: worst |Δ| %.3g·RMS (bound %g), RMS(Δ) %.3g·RMS (bound %g)",
					worst, lim, math.Sqrt(se/float64(len(ref)*vocab))/rms, rmsLim)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	base := synth{arch: "llama", typ: gguf.F32, embd: 32, ffn: 48, heads: 2, kvHeads: 1, hd: 16, layers: 1, vocab: 8, ropeBase: 10000}
	for _, tc := range []struct {
		name string
		s    func(s synth) synth
		want string
	}{
		{"unsupported architecture", func(s synth) synth { s.arch = "mamba"; return s },
			`model: architecture "mamba" is not supported (supported: gemma2, gemma3, llama, phi3, qwen2, qwen2moe, qwen3, qwen3moe); it needs a recurrent state-space (Mamba) layer`},
		{"missing tensor", func(s synth) synth { s.drop = "blk.0.ffn_up.weight"; return s }, `tensor "blk.0.ffn_up.weight" is missing`},
		{"missing qwen2 bias", func(s synth) synth { s.arch = "qwen2"; return s }, `tensor "blk.0.attn_q.bias" is missing`},
		{"missing output norm", func(s synth) synth { s.drop = "output_norm.weight"; return s }, `"output_norm.weight" is missing`},
		{"heads do not group", func(s synth) synth { s.heads, s.kvHeads = 3, 2; return s }, "do not group"},
		{"wrong shape", func(s synth) synth { s.metaHD = 8; return s }, `tensor "blk.0.attn_q.weight" is 32×32 (ne0 32, ne1 32), want ne0 32, ne1 16`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.s(base).write(t, 1)
			m, err := Load(path, Options{Threads: 1})
			if err == nil {
				m.Close()
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
			if tc.name == "unsupported architecture" && !errors.Is(err, ErrUnsupportedArch) {
				t.Fatalf("error %v does not wrap ErrUnsupportedArch", err)
			}
		})
	}
}

// TestLoadProgress checks that Options.Progress reports monotonically up to the weight bytes.
func TestLoadProgress(t *testing.T) {
	s := synth{arch: "llama", typ: gguf.Q8_0, embd: 64, ffn: 96, heads: 2, kvHeads: 1, hd: 32, layers: 2, vocab: 8, ropeBase: 10000}
	var calls [][2]int64
	m, err := Load(s.write(t, 3), Options{Threads: 1, Progress: func(done, total int64) {
		calls = append(calls, [2]int64{done, total})
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(calls) < 2 {
		t.Fatalf("%d progress calls", len(calls))
	}
	last := calls[len(calls)-1]
	if last[0] != last[1] || last[1] != m.WeightBytes() {
		t.Fatalf("last call %v, want done = total = %d", last, m.WeightBytes())
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] {
			t.Fatalf("progress went back: %v", calls)
		}
	}
}
