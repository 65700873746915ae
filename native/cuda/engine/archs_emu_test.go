//go:build cudaemu

package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/wkern"
)

// archSynth is a tiny random model of one architecture written as a GGUF file (float32
// weights scaled like a trained model's), for the device-versus-CPU parity of the
// architectures that need ml.Gemma or ml.MoE.
type archSynth struct {
	arch                          string
	embd, ffn, heads, kvHeads, hd int
	layers, vocab                 int
	window                        int // gemma2/gemma3: attention.sliding_window
	attnCap, finalCap             float32
	experts, used                 int
	expFFN, shFFN                 int // qwen*moe: expert width; qwen2moe: shared expert width
	qkNorm                        bool
	expType                       gguf.Type // the expert tensors' type: F32 (zero), F16 or Q8_0
}

func (s archSynth) write(t *testing.T, seed uint64) string {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	w := &gguf.Writer{}
	a := s.arch
	u := func(k string, v int) { w.AddKV(a+"."+k, uint32(v)) }
	w.AddKV("general.architecture", a)
	u("embedding_length", s.embd)
	u("block_count", s.layers)
	u("feed_forward_length", s.ffn)
	u("attention.head_count", s.heads)
	u("attention.head_count_kv", s.kvHeads)
	u("attention.key_length", s.hd)
	u("attention.value_length", s.hd)
	u("rope.dimension_count", s.hd)
	u("context_length", 256)
	w.AddKV(a+".attention.layer_norm_rms_epsilon", float32(1e-5))
	w.AddKV(a+".rope.freq_base", float32(10000))
	if s.window > 0 {
		u("attention.sliding_window", s.window)
	}
	if s.attnCap > 0 {
		w.AddKV(a+".attn_logit_softcapping", s.attnCap)
	}
	if s.finalCap > 0 {
		w.AddKV(a+".final_logit_softcapping", s.finalCap)
	}
	if s.experts > 0 {
		u("expert_count", s.experts)
		u("expert_used_count", s.used)
	}
	ef := s.ffn
	if s.expFFN > 0 {
		ef = s.expFFN
		u("expert_feed_forward_length", s.expFFN)
	}
	if s.shFFN > 0 {
		u("expert_shared_feed_forward_length", s.shFFN)
	}
	f32 := func(n int, f func(i int) float64) []byte {
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(f(i))))
		}
		return b
	}
	tensor := func(name string, shape []uint64, n int, f func(i int) float64) {
		w.AddTensor(name, gguf.F32, shape, f32(n, f))
	}
	mat := func(name string, rows, cols int, scale float64) {
		tensor(name, []uint64{uint64(cols), uint64(rows)}, rows*cols, func(int) float64 { return r.NormFloat64() * scale / math.Sqrt(float64(cols)) })
	}
	exps := func(name string, rows, cols int, scale float64) {
		n := rows * cols * s.experts
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale / math.Sqrt(float64(cols)))
		}
		shape := []uint64{uint64(cols), uint64(rows), uint64(s.experts)}
		switch s.expType {
		case gguf.F16:
			b := make([]byte, 2*n)
			for i, x := range v {
				binary.LittleEndian.PutUint16(b[2*i:], kvq.F32ToF16(x))
			}
			w.AddTensor(name, gguf.F16, shape, b)
		case gguf.Q8_0:
			w.AddTensor(name, gguf.Q8_0, shape, wkern.Quantize(nil, gguf.Q8_0, v))
		default:
			tensor(name, shape, n, func(i int) float64 { return float64(v[i]) })
		}
	}
	vec := func(name string, n int, mean, sd float64) {
		tensor(name, []uint64{uint64(n)}, n, func(int) float64 { return mean + sd*r.NormFloat64() })
	}
	nq, nk := s.heads*s.hd, s.kvHeads*s.hd
	mat("token_embd.weight", s.vocab, s.embd, 1)
	vec("output_norm.weight", s.embd, 1, 0.1)
	for l := 0; l < s.layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", s.embd, 1, 0.1)
		if a == "phi3" { // fused: Q, K and V in one tensor, gate and up in one
			mat(p+"attn_qkv.weight", nq+2*nk, s.embd, 1)
		} else {
			mat(p+"attn_q.weight", nq, s.embd, 1)
			mat(p+"attn_k.weight", nk, s.embd, 1)
			mat(p+"attn_v.weight", nk, s.embd, 1)
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
	path := filepath.Join(t.TempDir(), a+".gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEmuArchParity runs tiny random gemma2, gemma3, qwen3, phi3 (fused tensors, a sliding
// window), qwen3moe, qwen2moe and MoE-llama files
// on the device and on the CPU engine: a prompt longer than the sliding window (prefilled in
// passes of 4 tokens, so later passes attend across the window's edge), then greedy decoding
// fed the CPU's tokens. The CPU's window layers keep a ring of window cells, the device's the
// whole context; every step's logits must agree within LogitsBound relative RMS
// (ActivationBound where the CPU runs q8_0 experts with 8-bit activations) and the greedy
// tokens must be equal.
func TestEmuArchParity(t *testing.T) {
	e := emuEngine(t)
	base := archSynth{embd: 64, ffn: 96, heads: 2, kvHeads: 1, hd: 64, layers: 2, vocab: 96}
	cases := []struct {
		name string
		mod  func(s *archSynth)
		kv   string
		// intAct: the CPU multiplies q8_0 weights with wkern's integer kernels (8-bit
		// activations, as ggml): ActivationBound applies in place of LogitsBound.
		intAct bool
	}{
		{"gemma2", func(s *archSynth) { s.arch, s.window, s.attnCap, s.finalCap = "gemma2", 5, 0.5, 3 }, "f16", false},
		{"gemma2/q8_0", func(s *archSynth) { s.arch, s.window, s.attnCap, s.finalCap = "gemma2", 5, 0.5, 3 }, "q8_0", false},
		{"gemma3", func(s *archSynth) { s.arch, s.window, s.layers = "gemma3", 6, 3 }, "f16", false},
		{"gemma3/q4_0", func(s *archSynth) { s.arch, s.window, s.layers = "gemma3", 6, 3 }, "q4_0", false},
		{"qwen3moe", func(s *archSynth) { s.arch, s.experts, s.used, s.expFFN, s.qkNorm = "qwen3moe", 4, 2, 32, true }, "f16", false},
		{"qwen2moe", func(s *archSynth) { s.arch, s.experts, s.used, s.expFFN, s.shFFN = "qwen2moe", 4, 2, 32, 48 }, "f16", false},
		{"qwen3", func(s *archSynth) { s.arch, s.qkNorm = "qwen3", true }, "f16", false},
		{"phi3", func(s *archSynth) { s.arch, s.window = "phi3", 5 }, "f16", false},
		{"qwen3moe/f16-experts", func(s *archSynth) {
			s.arch, s.experts, s.used, s.expFFN, s.qkNorm, s.expType = "qwen3moe", 4, 2, 32, true, gguf.F16
		}, "q8_0", false},
		{"llama-moe/q8_0-experts", func(s *archSynth) { s.arch, s.experts, s.used, s.expType = "llama", 4, 2, gguf.Q8_0 }, "f16", true},
		{"llama-moe", func(s *archSynth) { s.arch, s.experts, s.used = "llama", 4, 2 }, "f16", false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.mod(&s)
			path := s.write(t, uint64(40+i))
			const batch = 4
			m := loadCPU(t, path, batch)
			dm, err := e.LoadModel(m, ModelOptions{Batch: batch})
			if err != nil {
				t.Fatal(err)
			}
			defer dm.Close()
			pair, _ := kvq.ParsePair(tc.kv)
			pair = pair.Unrotated()
			prompt := []int32{1, 17, 42, 5, 77, 3, 60, 9, 31, 88, 12}
			const steps = 6
			cells := len(prompt) + steps + 1
			cc, err := kvcache.New(m.CacheConfig(pair, cells))
			if err != nil {
				t.Fatal(err)
			}
			// The device cache gets the host's configuration, sliding windows included, as
			// kvlab run --device cuda gives it (it keeps the whole context: NewCache).
			gc, err := e.NewCache(m.CacheConfig(pair, cells))
			if err != nil {
				t.Fatal(err)
			}
			defer gc.Free()
			vocab := m.Hparams.Vocab
			cl, gl := make([]float32, vocab), make([]float32, vocab)
			if err := m.Forward(prompt, cc, cl); err != nil {
				t.Fatal(err)
			}
			if err := dm.Forward(prompt, gc, gl); err != nil {
				t.Fatal(err)
			}
			bound := LogitsBound
			if tc.intAct {
				bound = ActivationBound
			}
			worst := 0.0
			for step := 0; ; step++ {
				d := relRMS(gl, cl)
				worst = max(worst, d)
				if d > bound {
					t.Errorf("step %d: logits differ by %.2g relative RMS (bound %g)", step, d, bound)
				}
				ct, gt := sample.Argmax(cl), sample.Argmax(gl)
				if ct != gt {
					t.Errorf("step %d: greedy token %d on the CPU, %d on the device", step, ct, gt)
				}
				if step == steps {
					break
				}
				if err := m.Forward([]int32{ct}, cc, cl); err != nil {
					t.Fatal(err)
				}
				if err := dm.Forward([]int32{ct}, gc, gl); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%s kv %s: %d prompt + %d decode steps, worst logits relative RMS %.3g", tc.name, tc.kv, len(prompt), steps, worst)
		})
	}
}

// TestEmuAttentionOpts checks the device's sliding-window, soft-capped attention against
// native/attn's reference on random rows: prefill (windows shorter than the sequence, across
// pass boundaries) and decode (the FP16 overlay included), for several KV formats.
func TestEmuAttentionOpts(t *testing.T) {
	e := emuEngine(t)
	for _, tc := range []struct {
		pair           string
		d, heads, kvh  int
		cells, prefill int
		window         int
		softCap        float32
		ovWindow       int
	}{
		{"f16", 64, 4, 2, 70, 40, 9, 0.7, 0},
		{"q8_0", 64, 2, 2, 50, 20, 33, 1.5, 0},
		{"q4_0/q8_0", 128, 3, 1, 45, 45, 17, 0, 0},
		{"f16", 64, 2, 1, 60, 30, 0, 0.5, 0},
		{"q8_0", 64, 4, 1, 70, 35, 21, 0.9, 16},
		{"tq4", 64, 2, 1, 50, 25, 11, 0.8, 0},
	} {
		name := fmt.Sprintf("%s/d%d/h%d-%d/w%d/cap%g/ov%d", tc.pair, tc.d, tc.heads, tc.kvh, tc.window, tc.softCap, tc.ovWindow)
		t.Run(name, func(t *testing.T) {
			pair, err := kvq.ParsePair(tc.pair)
			if err != nil {
				t.Fatal(err)
			}
			pair = pair.Unrotated()
			cfg := kvcache.Config{Layers: 1, KVHeads: tc.kvh, HeadDimK: tc.d, HeadDimV: tc.d, Pair: pair, MaxCells: tc.cells, Window: tc.ovWindow}
			cc, err := kvcache.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			gc, err := e.NewCache(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer gc.Free()
			r := rand.New(rand.NewPCG(uint64(tc.cells), 3))
			rnd := func(n int) []float32 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				return x
			}
			kvRow, qRow := tc.kvh*tc.d, tc.heads*tc.d
			shape := attn.Shape{Heads: tc.heads, KVHeads: tc.kvh, HeadDimK: tc.d, HeadDimV: tc.d, Scale: 0.3, SoftCap: tc.softCap, Threads: 1}
			ctx := e.Context()
			up := func(x []float32) *cuda.Buffer {
				b, err := ctx.Alloc(int64(len(x)) * 4)
				if err != nil {
					t.Fatal(err)
				}
				if err := b.Write(cuda.Bytes(x)); err != nil {
					t.Fatal(err)
				}
				return b
			}
			check := func(what string, got, want []float32) {
				t.Helper()
				if d := relRMS(got, want); d > 2e-3 || math.IsNaN(d) {
					t.Errorf("%s: relative RMS %.3g", what, d)
				}
			}
			// Prefill the first rows in two passes, the second across the window's edge.
			for _, pass := range [][2]int{{0, tc.prefill / 2}, {tc.prefill / 2, tc.prefill}} {
				p0, nq := pass[0], pass[1]-pass[0]
				k, v, q := rnd(nq*kvRow), rnd(nq*kvRow), rnd(nq*qRow)
				if err := cc.Write(0, k, v, nq); err != nil {
					t.Fatal(err)
				}
				kb, vb, qb, ob := up(k), up(v), up(q), up(make([]float32, nq*qRow))
				if err := gc.WriteDevice(0, kb, vb, nq); err != nil {
					t.Fatal(err)
				}
				want := make([]float32, nq*qRow)
				if err := attn.Prefill(want, q, nq, p0, tc.window, shape, cc.Keys(0, false), cc.Values(0, false)); err != nil {
					t.Fatal(err)
				}
				if err := gc.PrefillOpts(0, qb, ob, nq, p0, tc.window, tc.heads, shape.Scale, tc.softCap); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, nq*qRow)
				ob.Read(cuda.Bytes(got))
				check(fmt.Sprintf("prefill [%d, %d)", p0, p0+nq), got, want)
				for _, b := range []*cuda.Buffer{kb, vb, qb, ob} {
					b.Free()
				}
				if err := cc.Commit(nq); err != nil {
					t.Fatal(err)
				}
				if err := gc.Commit(nq); err != nil {
					t.Fatal(err)
				}
			}
			// Decode the rest one token at a time.
			for p := tc.prefill; p < tc.cells; p++ {
				k, v, q := rnd(kvRow), rnd(kvRow), rnd(qRow)
				if err := cc.Write(0, k, v, 1); err != nil {
					t.Fatal(err)
				}
				kb, vb, qb, ob := up(k), up(v), up(q), up(make([]float32, qRow))
				if err := gc.WriteDevice(0, kb, vb, 1); err != nil {
					t.Fatal(err)
				}
				lo := 0
				if tc.window > 0 {
					lo = max(0, p+1-tc.window)
				}
				want := make([]float32, qRow)
				if err := attn.Decode(want, q, shape, cc.Keys(0, true), cc.Values(0, true), lo, p+1); err != nil {
					t.Fatal(err)
				}
				if err := gc.DecodeOpts(0, qb, ob, tc.heads, shape.Scale, tc.window, tc.softCap); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, qRow)
				ob.Read(cuda.Bytes(got))
				check(fmt.Sprintf("decode at %d", p), got, want)
				for _, b := range []*cuda.Buffer{kb, vb, qb, ob} {
					b.Free()
				}
				if err := cc.Commit(1); err != nil {
					t.Fatal(err)
				}
				if err := gc.Commit(1); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestEmuGemmaKernels checks nn.cu's geglu, mul_scalar and softcap against native/model's
// formulas (geGLU, Scale, softCapAll) on random values, an odd count of them.
func TestEmuGemmaKernels(t *testing.T) {
	e := emuEngine(t)
	ctx := e.Context()
	const n = 333
	r := rand.New(rand.NewPCG(5, 5))
	g, u := make([]float32, n), make([]float32, n)
	for i := range g {
		g[i], u[i] = float32(r.NormFloat64()*3), float32(r.NormFloat64())
	}
	run := func(name string, x []float32, args ...cuda.Arg) []float32 {
		t.Helper()
		b, err := ctx.Alloc(int64(len(x)) * 4)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Free()
		b.Write(cuda.Bytes(x))
		k, err := e.kernel(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.launch(cuda.D1((n+255)/256), cuda.D1(256), 0, nil, append([]cuda.Arg{cuda.Ptr(b)}, args...)...); err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(x))
		b.Read(cuda.Bytes(out))
		return out
	}
	ub, err := ctx.Alloc(n * 4)
	if err != nil {
		t.Fatal(err)
	}
	defer ub.Free()
	ub.Write(cuda.Bytes(u))
	near := func(what string, i int, got, want float32) {
		t.Helper()
		if math.Abs(float64(got-want)) > 1e-6*math.Abs(float64(want))+1e-7 {
			t.Fatalf("%s[%d] = %g, want %g", what, i, got, want)
		}
	}
	got := run("geglu", g, cuda.Ptr(ub), cuda.Int(n))
	for i, z := range g {
		x := float64(z)
		near("geglu", i, got[i], float32(0.5*x*(1+math.Tanh(0.7978845608028654*x*(1+0.044715*x*x))))*u[i])
	}
	got = run("mul_scalar", g, cuda.F32(0.37), cuda.Int(n))
	for i, z := range g {
		near("mul_scalar", i, got[i], z*0.37)
	}
	const c = 2.5
	got = run("softcap", g, cuda.F32(c), cuda.Int(n))
	for i, z := range g {
		near("softcap", i, got[i], c*float32(math.Tanh(float64(z/c))))
	}
}
