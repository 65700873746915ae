//go:build cudaemu

package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model/modeltest"
	"github.com/kvlab/kvlab/native/sample"
)

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
	base := modeltest.Synth{Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 64, Layers: 2, Vocab: 96, Tied: true, RopeBase: 10000}
	cases := []struct {
		name string
		mod  func(s *modeltest.Synth)
		kv   string
		// intAct: the CPU multiplies q8_0 weights with wkern's integer kernels (8-bit
		// activations, as ggml): ActivationBound applies in place of LogitsBound.
		intAct bool
	}{
		{"gemma2", func(s *modeltest.Synth) { s.Arch, s.Window, s.AttnCap, s.FinalCap = "gemma2", 5, 0.5, 3 }, "f16", false},
		{"gemma2/q8_0", func(s *modeltest.Synth) { s.Arch, s.Window, s.AttnCap, s.FinalCap = "gemma2", 5, 0.5, 3 }, "q8_0", false},
		{"gemma3", func(s *modeltest.Synth) { s.Arch, s.Window, s.Layers = "gemma3", 6, 3 }, "f16", false},
		{"gemma3/q4_0", func(s *modeltest.Synth) { s.Arch, s.Window, s.Layers = "gemma3", 6, 3 }, "q4_0", false},
		{"qwen3moe", func(s *modeltest.Synth) { s.Arch, s.Experts, s.Used, s.ExpFFN, s.QKNorm = "qwen3moe", 4, 2, 32, true }, "f16", false},
		{"qwen2moe", func(s *modeltest.Synth) { s.Arch, s.Experts, s.Used, s.ExpFFN, s.ShFFN = "qwen2moe", 4, 2, 32, 48 }, "f16", false},
		{"qwen3", func(s *modeltest.Synth) { s.Arch, s.QKNorm = "qwen3", true }, "f16", false},
		{"phi3", func(s *modeltest.Synth) { s.Arch, s.Window = "phi3", 5 }, "f16", false},
		{"qwen3moe/f16-experts", func(s *modeltest.Synth) {
			s.Arch, s.Experts, s.Used, s.ExpFFN, s.QKNorm, s.ExpType = "qwen3moe", 4, 2, 32, true, gguf.F16
		}, "q8_0", false},
		{"llama-moe/q8_0-experts", func(s *modeltest.Synth) { s.Arch, s.Experts, s.Used, s.ExpType = "llama", 4, 2, gguf.Q8_0 }, "f16", true},
		{"llama-moe", func(s *modeltest.Synth) { s.Arch, s.Experts, s.Used = "llama", 4, 2 }, "f16", false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.mod(&s)
			path := s.Write(t, uint64(40+i))
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

// TestEmuGemmaKernels checks nn.cu's geglu and mul_scalar against native/model's formulas
// (geGLU, Scale) on random values, an odd count of them. (The final soft-cap runs on the host.)
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
}
