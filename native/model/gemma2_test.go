package model

import (
	"fmt"
	"math"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/ggufshape"
)

// refGemma2 is gemma2's forward pass (gemma2.go's comment) in float64, written independently
// of the package's code: every position's logits. With gemma3 files it is gemma3's
// (gemma3.go's comment): per-head Q/K norms, no attention capping, five local layers of six
// (or sliding_window_pattern's period) rotating with rope.freq_base_swa (default 10000).
func refGemma2(t *testing.T, path string, tokens []int32) [][]float64 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := f.Architecture()
	u := func(k string) int { v, _ := f.Uint(a + "." + k); return int(v) }
	embd, layers, heads, kvh, hd := u("embedding_length"), u("block_count"), u("attention.head_count"), u("attention.head_count_kv"), u("attention.key_length")
	window := u("attention.sliding_window")
	base, _ := f.Float(a + ".rope.freq_base")
	acap, _ := f.Float(a + ".attn_logit_softcapping")
	fcap, _ := f.Float(a + ".final_logit_softcapping")
	slides := func(l int) bool { return l%2 == 0 }
	localBase := base
	if a == "gemma3" {
		period := 6
		if _, ok := f.Value(a + ".attention.sliding_window_pattern"); ok {
			period = u("attention.sliding_window_pattern")
		}
		slides = func(l int) bool { return window > 0 && l%period < period-1 }
		localBase = 10000
		if v, ok := f.Float(a + ".rope.freq_base_swa"); ok {
			localBase = v
		}
	}
	tensor := func(name string) []float64 {
		info, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("no tensor %s", name)
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
		return out
	}
	matvec := func(w []float64, x []float64) []float64 {
		cols := len(x)
		y := make([]float64, len(w)/cols)
		for r := range y {
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
	rot := func(v []float64, pos int, base float64) { // neox: pairs (j, j+hd/2)
		for j := 0; j < hd/2; j++ {
			theta := float64(pos) * math.Pow(base, -2*float64(j)/float64(hd))
			c, s := math.Cos(theta), math.Sin(theta)
			v[j], v[j+hd/2] = v[j]*c-v[j+hd/2]*s, v[j]*s+v[j+hd/2]*c
		}
	}
	emb := tensor("token_embd.weight")
	n := len(tokens)
	x := make([][]float64, n)
	for i, tok := range tokens {
		x[i] = make([]float64, embd)
		for j := range x[i] {
			x[i][j] = emb[int(tok)*embd+j] * math.Sqrt(float64(embd))
		}
	}
	for l := 0; l < layers; l++ {
		w := func(name string) []float64 { return tensor(fmt.Sprintf("blk.%d.%s", l, name)) }
		an, wq, wk, wv, wo := w("attn_norm.weight"), w("attn_q.weight"), w("attn_k.weight"), w("attn_v.weight"), w("attn_output.weight")
		pan, fn, pfn := w("post_attention_norm.weight"), w("ffn_norm.weight"), w("post_ffw_norm.weight")
		wg, wu, wd := w("ffn_gate.weight"), w("ffn_up.weight"), w("ffn_down.weight")
		b := base
		if slides(l) {
			b = localBase
		}
		var qn, kn []float64
		if a == "gemma3" {
			qn, kn = w("attn_q_norm.weight"), w("attn_k_norm.weight")
		}
		q, k, v := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for i := 0; i < n; i++ {
			h := norm(x[i], an)
			q[i], k[i], v[i] = matvec(wq, h), matvec(wk, h), matvec(wv, h)
			for hh := 0; hh < heads; hh++ {
				if qn != nil {
					copy(q[i][hh*hd:], norm(q[i][hh*hd:(hh+1)*hd], qn))
				}
				rot(q[i][hh*hd:(hh+1)*hd], i, b)
			}
			for hh := 0; hh < kvh; hh++ {
				if kn != nil {
					copy(k[i][hh*hd:], norm(k[i][hh*hd:(hh+1)*hd], kn))
				}
				rot(k[i][hh*hd:(hh+1)*hd], i, b)
			}
		}
		for i := 0; i < n; i++ {
			lo := 0
			if slides(l) {
				lo = max(0, i-window+1)
			}
			att := make([]float64, heads*hd)
			for hh := 0; hh < heads; hh++ {
				g := hh / (heads / kvh)
				sc := make([]float64, i+1)
				m := math.Inf(-1)
				for j := lo; j <= i; j++ {
					for d := 0; d < hd; d++ {
						sc[j] += q[i][hh*hd+d] * k[j][g*hd+d]
					}
					sc[j] /= math.Sqrt(float64(hd))
					if acap > 0 {
						sc[j] = acap * math.Tanh(sc[j]/acap)
					}
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
			o := norm(matvec(wo, att), pan)
			for j := range o {
				x[i][j] += o[j]
			}
			h := norm(x[i], fn)
			gt, up := matvec(wg, h), matvec(wu, h)
			for j, z := range gt {
				gt[j] = 0.5 * z * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(z+0.044715*z*z*z))) * up[j]
			}
			dn := norm(matvec(wd, gt), pfn)
			for j := range dn {
				x[i][j] += dn[j]
			}
		}
	}
	onorm := tensor("output_norm.weight")
	logits := make([][]float64, n)
	for i := range x {
		logits[i] = matvec(emb, norm(x[i], onorm))
		for j, z := range logits[i] {
			if fcap > 0 {
				logits[i][j] = fcap * math.Tanh(z/fcap)
			}
		}
	}
	return logits
}

// relRMS is RMS(got − want)/RMS(want) over rows of vocab logits.
func relRMS(got []float32, want [][]float64, vocab int) float64 {
	var se, ss float64
	for i, row := range want {
		for j, w := range row {
			d := float64(got[i*vocab+j]) - w
			se += d * d
			ss += w * w
		}
	}
	return math.Sqrt(se / ss)
}

// TestGemma2MatchesReference runs small random gemma2 models, with a sliding window shorter
// than the input, through Forward (a prefill in passes, then decodes) on a cache whose window
// layers are rings, and compares every position's logits with refGemma2.
func TestGemma2MatchesReference(t *testing.T) {
	for _, s := range []synth{
		{Arch: "gemma2", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 4, Vocab: 40, Tied: true, RopeBase: 10000, Window: 4},
		{Arch: "gemma2", Typ: gguf.F16, Embd: 64, FFN: 128, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 3, Vocab: 40, Tied: true, RopeBase: 10000, Window: 5, AttnCap: 0.5, FinalCap: 2},
		// gemma3: five local layers then a global one (7 layers: the 7th local again), the local
		// base 10000 against a global 1e6; a period-3 pattern with its own local base and a cap;
		// no window at all (every layer global).
		{Arch: "gemma3", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 7, Vocab: 40, Tied: true, RopeBase: 1e6, Window: 4},
		{Arch: "gemma3", Typ: gguf.F16, Embd: 64, FFN: 128, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 4, Vocab: 40, Tied: true, RopeBase: 1e6, Window: 5, Pattern: 3, RopeBaseSWA: 500, FinalCap: 2},
		{Arch: "gemma3", Typ: gguf.F32, Embd: 32, FFN: 64, Heads: 2, KVHeads: 2, HeadDim: 16, Layers: 2, Vocab: 40, Tied: true, RopeBase: 1e6},
	} {
		t.Run(fmt.Sprintf("%s-%s/w%d", s.Arch, s.Typ, s.Window), func(t *testing.T) {
			path := s.Write(t, uint64(s.Embd*17+s.Window))
			m, err := Load(path, Options{Threads: 2, Batch: 6})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			tokens := []int32{1, 7, 3, 3, 9, 0, 12, 5, 2, 11, 30, 4, 4, 8}
			ref := refGemma2(t, path, tokens)
			c, err := kvcache.New(m.CacheConfig(kvq.Pair{K: kvq.F32, V: kvq.F32}, 32))
			if err != nil {
				t.Fatal(err)
			}
			vocab := m.Hparams.Vocab
			pre := 9
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
			r := relRMS(got, ref, vocab)
			t.Logf("relative RMS vs float64 %.2e", r)
			if r > 2e-4 {
				t.Fatalf("logits off the reference: relative RMS %.3g", r)
			}
		})
	}
}

// TestWindowMemory checks that a gemma2 (or phi3) cache's window layers hold window cells, not
// the context: the memory kvcache reserves (and EstimateBytes predicts) equals the planner's
// sliding-window figure (plan/calc's Shape.KVBytes of the file's ggufshape) for every format.
func TestWindowMemory(t *testing.T) {
	for _, s := range []synth{
		{Arch: "gemma2", Typ: gguf.F32, Embd: 64, FFN: 64, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 4, Vocab: 16, Tied: true, RopeBase: 10000, Window: 40},
		{Arch: "phi3", Typ: gguf.F32, Embd: 64, FFN: 64, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 3, Vocab: 16, RopeBase: 10000, Window: 40},
		{Arch: "gemma3", Typ: gguf.F32, Embd: 64, FFN: 64, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 8, Vocab: 16, Tied: true, RopeBase: 1e6, Window: 40},
		// TestGemma3MatchesLlamaCpp's shapes: windows of 8 and 5 cells, patterns 6 and 3.
		{Arch: "gemma3", Typ: gguf.F32, Embd: 64, FFN: 128, Heads: 4, KVHeads: 2, HeadDim: 16, Layers: 8, Vocab: 320, Tied: true, RopeBase: 1e6, Window: 8},
		{Arch: "gemma3", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 6, Vocab: 300, Tied: true, RopeBase: 1e6, RopeBaseSWA: 5000, Window: 5, Pattern: 3, FinalCap: 3},
	} {
		t.Run(fmt.Sprintf("%s-l%d-w%d", s.Arch, s.Layers, s.Window), func(t *testing.T) { windowMemory(t, s) })
	}
}

func windowMemory(t *testing.T, s synth) {
	path := s.Write(t, 5)
	m, err := Load(path, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	shape, err := ggufshape.FromFile(m.File())
	if err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []int{24, 40, 200} {
		for _, kv := range []string{"f32", "f16", "q8_0", "q4_0", "tq4", "q8_0/q4_0", "fp8"} {
			p, err := kvq.ParsePair(kv)
			if err != nil {
				t.Fatal(err)
			}
			cfg := m.CacheConfig(p, ctx)
			c, err := kvcache.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := shape.KVBytes(p, int64(ctx), 1)
			if c.Bytes() != want || kvcache.EstimateBytes(cfg) != want {
				t.Errorf("%s at %d cells: the cache holds %d bytes (estimate %d), the planner says %d", kv, ctx, c.Bytes(), kvcache.EstimateBytes(cfg), want)
			}
			full := cfg
			full.Windows = nil
			if ctx > s.Window {
				fc, _ := kvcache.New(full)
				t.Logf("%-9s %3d cells: %6d bytes (a full cache: %6d)", kv, ctx, c.Bytes(), fc.Bytes())
			}
		}
	}
}

// TestGemma2EveryKVFormat runs greedy generation past the window on every format pair: the
// ring layers must read back what a full cache reads (the same formats without rings).
func TestGemma2EveryKVFormat(t *testing.T) {
	everyKVFormatRing(t, synth{Arch: "gemma2", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, Tied: true, RopeBase: 10000, Window: 6})
}

// TestGemma3EveryKVFormat is TestGemma2EveryKVFormat for gemma3 (a period-2 pattern: a ring
// layer, then a full one).
func TestGemma3EveryKVFormat(t *testing.T) {
	everyKVFormatRing(t, synth{Arch: "gemma3", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, Tied: true, RopeBase: 1e6, Window: 6, Pattern: 2})
}

func everyKVFormatRing(t *testing.T, s synth) {
	m, err := Load(s.Write(t, 9), Options{Threads: 2, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// A group format (q2k) requantizes its open group as cells arrive, so its readouts depend
	// on how the cells were written: it is fed one token at a time in both runs.
	run := func(cfg kvcache.Config) []float32 {
		c, err := kvcache.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, m.Hparams.Vocab)
		var all []float32
		prompt := []int32{1, 5, 9, 2, 7, 3, 3, 8, 1, 6}
		step := len(prompt)
		if cfg.Pair.K.Grouped() {
			step = 1
		}
		for i := 0; i < len(prompt); i += step {
			if err := m.Forward(prompt[i:i+step], c, out); err != nil {
				t.Fatal(err)
			}
		}
		for range 10 {
			best := 0
			for j, v := range out {
				if v > out[best] {
					best = j
				}
			}
			if err := m.Forward([]int32{int32(best)}, c, out); err != nil {
				t.Fatal(err)
			}
			all = append(all, out...)
		}
		return all
	}
	for _, kv := range []string{"f32", "f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl", "q8_0/q4_0", "fp8", "tq4", "q2k", "q2k/q8_0", "turbo3"} {
		p, err := kvq.ParsePair(kv)
		if err != nil {
			t.Fatal(err)
		}
		cfg := m.CacheConfig(p, 64)
		cfg.Seed = 3
		ring := run(cfg)
		full := cfg
		full.Windows = nil
		want := run(full)
		var d float64
		for i := range want {
			d = max(d, math.Abs(float64(ring[i]-want[i])))
		}
		// Both caches hold the same bytes per cell and read them in the same order through the
		// same kernels, the integer accumulation's weight tiles included (a ring's follow the
		// positions as a full cache's do, kvcache's ringStore.AccumulateMulti), so the logits
		// agree exactly here: greedy decoding cannot diverge on a rounding difference. The
		// tolerance only leaves float32 summation-order noise (~1e-6 of the logits) to kernels
		// that might split their sums at a call's start; a ring that read a wrong or stale
		// cell moves the logits by orders of magnitude more.
		const tol = 1e-4
		if d > tol {
			t.Errorf("%s: the ring cache's logits differ from a full cache's by %.3g (bound %.3g)", kv, d, tol)
		}
	}
}

// TestGemma2Overlays runs gemma2 past its window with the FP16 window + sinks overlay and with
// a position-axis mixed cache: they apply to the full-attention layers (the ring layers hold
// their few cells in the pair's format) and the logits stay near the plain cache's.
func TestGemma2Overlays(t *testing.T) {
	s := synth{Arch: "gemma2", Typ: gguf.F32, Embd: 64, FFN: 96, Heads: 2, KVHeads: 1, HeadDim: 32, Layers: 2, Vocab: 40, Tied: true, RopeBase: 10000, Window: 6}
	m, err := Load(s.Write(t, 11), Options{Threads: 2, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt := []int32{1, 5, 9, 2, 7, 3, 3, 8, 1, 6, 4, 4, 9, 12, 13, 2, 5}
	run := func(mod func(*kvcache.Config)) []float32 {
		cfg := m.CacheConfig(kvq.Pair{K: kvq.Q8_0, V: kvq.Q8_0}, 64)
		mod(&cfg)
		c, err := kvcache.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, m.Hparams.Vocab)
		for _, tok := range prompt {
			if err := m.Forward([]int32{tok}, c, out); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	plain := run(func(*kvcache.Config) {})
	for name, mod := range map[string]func(*kvcache.Config){
		"overlay": func(c *kvcache.Config) { c.Window, c.Sinks = 4, 2 },
		"mixed":   func(c *kvcache.Config) { c.Recent, c.Sinks = 8, 2 },
	} {
		got := run(mod)
		var d float64
		for i := range got {
			d = max(d, math.Abs(float64(got[i]-plain[i])))
		}
		t.Logf("%s: max |Δ logit| vs the plain q8_0 cache %.3g", name, d)
		if d > 0.5 {
			t.Errorf("%s: logits %.3g off the plain cache's", name, d)
		}
	}
}
