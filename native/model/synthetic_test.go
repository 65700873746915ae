package model

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model/modeltest"
)

// synth is the tests' small random model (modeltest.Synth), written with write.
type synth = modeltest.Synth

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
		{Arch: "llama", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 2, Vocab: 40, Tied: true, RopeBase: 10000},
		{Arch: "qwen2", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 1, HeadDim: 16, Layers: 2, Vocab: 40, Bias: true, RopeBase: 1e6},
		{Arch: "llama", Typ: gguf.F16, Embd: 64, FFN: 96, Heads: 2, KVHeads: 2, HeadDim: 32, Layers: 2, Vocab: 40, RopeBase: 10000},
		{Arch: "qwen2", Typ: gguf.Q8_0, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 2, Vocab: 40, Bias: true, RopeBase: 1e6},
		{Arch: "llama", Typ: gguf.Q4_K, Embd: 256, FFN: 256, Heads: 4, KVHeads: 2, HeadDim: 64, Layers: 1, Vocab: 16, RopeBase: 10000},
		{Arch: "qwen2", Typ: gguf.Q6_K, Embd: 256, FFN: 512, Heads: 4, KVHeads: 4, HeadDim: 64, Layers: 1, Vocab: 16, Bias: true, Tied: true, RopeBase: 1e6},
		{Arch: "qwen3", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 32, Layers: 2, Vocab: 40, QKNorm: true, Tied: true, RopeBase: 1e6},
		{Arch: "qwen3", Typ: gguf.Q8_0, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, QKNorm: true, RopeBase: 1e6},
		{Arch: "llama", Typ: gguf.F32, Embd: 64, FFN: 48, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 2, Vocab: 40, RopeBase: 10000, Experts: 4, Used: 2},
		{Arch: "phi3", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 2, Vocab: 40, RopeBase: 10000, Window: 3},
		{Arch: "phi3", Typ: gguf.Q8_0, Embd: 64, FFN: 96, Heads: 4, KVHeads: 4, HeadDim: 16, Layers: 2, Vocab: 40, RopeBase: 10000},
		{Arch: "llama", Typ: gguf.F16, Embd: 64, FFN: 32, Heads: 4, KVHeads: 1, HeadDim: 16, Layers: 2, Vocab: 40, Tied: true, RopeBase: 10000, Experts: 8, Used: 3},
		{Arch: "qwen3moe", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 32, Layers: 2, Vocab: 40, QKNorm: true, RopeBase: 1e6, Experts: 8, Used: 3},
		{Arch: "qwen3moe", Typ: gguf.F16, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, QKNorm: true, Tied: true, RopeBase: 1e6, Experts: 6, Used: 2, ExpFFN: 40},
		{Arch: "qwen2moe", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 2, Vocab: 40, Bias: true, RopeBase: 1e6, Experts: 8, Used: 2, ExpFFN: 24, ShFFN: 80},
		{Arch: "qwen2moe", Typ: gguf.F16, Embd: 64, FFN: 64, Heads: 4, KVHeads: 4, HeadDim: 16, Layers: 2, Vocab: 40, Tied: true, RopeBase: 1e6, Experts: 4, Used: 4, ShFFN: 64},
	} {
		t.Run(fmt.Sprintf("%s/%s/experts%d", s.Arch, s.Typ, s.Experts), func(t *testing.T) {
			path := s.Write(t, uint64(s.Embd*31+int(s.Typ)))
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
	base := synth{Arch: "llama", Typ: gguf.F32, Embd: 32, FFN: 48, Heads: 2, KVHeads: 1, HeadDim: 16, Layers: 1, Vocab: 8, RopeBase: 10000}
	for _, tc := range []struct {
		name string
		s    func(s synth) synth
		want string
	}{
		{"unsupported architecture", func(s synth) synth { s.Arch = "mamba"; return s },
			`model: architecture "mamba" is not supported (supported: gemma2, gemma3, llama, phi3, qwen2, qwen2moe, qwen3, qwen3moe); it needs a recurrent state-space (Mamba) layer`},
		{"missing tensor", func(s synth) synth { s.Drop = "blk.0.ffn_up.weight"; return s }, `tensor "blk.0.ffn_up.weight" is missing`},
		{"missing qwen2 bias", func(s synth) synth { s.Arch = "qwen2"; return s }, `tensor "blk.0.attn_q.bias" is missing`},
		{"missing output norm", func(s synth) synth { s.Drop = "output_norm.weight"; return s }, `"output_norm.weight" is missing`},
		{"heads do not group", func(s synth) synth { s.Heads, s.KVHeads = 3, 2; return s }, "do not group"},
		{"wrong shape", func(s synth) synth { s.MetaHD = 8; return s }, `tensor "blk.0.attn_q.weight" is 32×32 (ne0 32, ne1 32), want ne0 32, ne1 16`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.s(base).Write(t, 1)
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
	s := synth{Arch: "llama", Typ: gguf.Q8_0, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 8, RopeBase: 10000}
	var calls [][2]int64
	m, err := Load(s.Write(t, 3), Options{Threads: 1, Progress: func(done, total int64) {
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
