//go:build cudaemu

package engine

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/kvlab/kvlab/native/wkern"
)

// LogitsBound is the largest relative RMS difference between the device's logits and
// native/model's on the same tokens that the parity tests accept when both caches store the
// same bytes. Both run the same formulas on the same weights; they differ in float32
// summation order (about 1e-7 relative per product), which the network amplifies to about
// 1e-6 in the logits.
const LogitsBound = 1e-3

// FlipBound is the bound when stored K/V rows of a quantized format differ. A key or value
// within the float32 noise of a rounding boundary of its format rounds the other way on the
// other side: a q8_0 or q4_0 code one step off, or a block scale one f16 ulp off. Each flip
// moves the later logits by up to a few 1e-3 on kvlab-tiny-64 (f16's flips are one f16 ulp
// of one value and stay within LogitsBound). The tests then also require the median step to
// stay within LogitsBound and the greedy tokens to agree.
const FlipBound = 1e-2

// ActivationBound replaces both bounds where the CPU multiplies quantized weights through
// wkern's integer kernels: those round each activation vector to 8-bit blocks (as ggml does)
// while the device dots the f32 activations, which moves kvlab-tiny-64's logits by about 2e-2
// relative RMS. The greedy tokens must still agree. With a quantized cache on top, every
// stored row then differs (the K/V inputs differ), and the worst step may reach twice that.
const ActivationBound = 5e-2

// needlePrompt is kvlab-tiny-64's retrieval prompt (../shared/models/README.md); greedy
// decoding answers " 4821.".
const needlePrompt = "Tom had a big red ball. The secret number is 4821. He liked to play with it every day. His friend Sam came over and they played in the park. They ran and ran until the sun went down.\nWhat is the secret number? The secret number is"

// relRMS is ‖got − want‖ / ‖want‖.
func relRMS(got, want []float32) float64 {
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - float64(w)
		num += d * d
		den += float64(w) * float64(w)
	}
	return math.Sqrt(num / den)
}

// parityCase is one comparison of the device forward pass with the CPU's.
type parityCase struct {
	path          string
	kv            string
	window, sinks int
	steps         int  // greedy tokens after the prompt
	all           bool // also compare every position's logits of the prompt
	batch         int  // prefill pass length on both sides
	// intAct: the CPU side runs wkern's integer kernels (8-bit activations); ActivationBound applies.
	intAct bool
}

// runParity prefills the needle prompt on the CPU model and on the device model, then
// decodes steps tokens greedily from the CPU's logits, feeding the same token to both. It
// returns the relative RMS of the logits at every step (every prompt position first when
// pc.all is set), the two argmax streams, the CPU's text, and storedDiff of the two caches.
func runParity(t *testing.T, e *Engine, pc parityCase) (errs []float64, cpuToks, gpuToks []int32, text string, diff, rows int) {
	t.Helper()
	m := loadCPU(t, pc.path, pc.batch)
	dm, err := e.LoadModel(m, ModelOptions{Batch: pc.batch})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	prompt := tok.Encode(needlePrompt, true, false)
	if len(prompt) == 0 || prompt[0] != tok.BOS() {
		prompt = append([]int32{tok.BOS()}, prompt...)
	}
	pair, err := kvq.ParsePair(pc.kv)
	if err != nil {
		t.Fatal(err)
	}
	cells := len(prompt) + pc.steps + 1
	// The device stores every pair unrotated; the CPU reference holds the same variant.
	cfg := m.CacheConfig(pair.Unrotated(), cells)
	cfg.Window, cfg.Sinks = pc.window, pc.sinks
	cc, err := kvcache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := e.NewCache(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Free()
	vocab := m.Hparams.Vocab
	if pc.all {
		n := len(prompt)
		cl, gl := make([]float32, n*vocab), make([]float32, n*vocab)
		c2, _ := kvcache.New(cfg)
		g2, err := e.NewCache(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer g2.Free()
		if err := m.Forward(prompt, c2, cl); err != nil {
			t.Fatal(err)
		}
		if err := dm.Forward(prompt, g2, gl); err != nil {
			t.Fatal(err)
		}
		for p := 0; p < n; p++ {
			errs = append(errs, relRMS(gl[p*vocab:(p+1)*vocab], cl[p*vocab:(p+1)*vocab]))
		}
		t.Logf("every position's logits of the %d-token prompt: worst relative RMS %.2e", n, slices.Max(errs))
	}
	cl, gl := make([]float32, vocab), make([]float32, vocab)
	if err := m.Forward(prompt, cc, cl); err != nil {
		t.Fatal(err)
	}
	if err := dm.Forward(prompt, gc, gl); err != nil {
		t.Fatal(err)
	}
	errs = append(errs, relRMS(gl, cl))
	stream := tok.NewStream(false)
	var sb strings.Builder
	for i := 0; i < pc.steps; i++ {
		c, g := sample.Argmax(cl), sample.Argmax(gl)
		cpuToks, gpuToks = append(cpuToks, c), append(gpuToks, g)
		sb.WriteString(stream.Add(c))
		if err := m.Forward([]int32{c}, cc, cl); err != nil {
			t.Fatal(err)
		}
		if err := dm.Forward([]int32{c}, gc, gl); err != nil {
			t.Fatal(err)
		}
		errs = append(errs, relRMS(gl, cl))
	}
	sb.WriteString(stream.Flush())
	diff, rows = storedDiff(t, cc, gc)
	return errs, cpuToks, gpuToks, sb.String(), diff, rows
}

// storedDiff counts the stored rows (one head's K or V of one cell of one layer) whose
// decoded values differ between the CPU cache and the device cache, and the rows compared.
func storedDiff(t *testing.T, cc *kvcache.Cache, gc *Cache) (diff, rows int) {
	t.Helper()
	cfg := gc.Config()
	d := cfg.HeadDimK
	want, got := make([]float32, d), make([]float32, d)
	for l := 0; l < cfg.Layers; l++ {
		kr, vr := cc.Rows(l, false)
		for h := 0; h < cfg.KVHeads; h++ {
			for _, side := range []struct {
				f   kvq.Format
				cpu attn.Rows
				isK bool
			}{{cfg.Pair.K, kr[h], true}, {cfg.Pair.V, vr[h], false}} {
				codec, err := kvq.NewCodec(side.f, d, kvq.CodecOptions{Seed: cfg.Seed, Layer: l, Head: h})
				if err != nil {
					t.Fatal(err)
				}
				raw, err := gc.Rows(l, h, side.isK)
				if err != nil {
					t.Fatal(err)
				}
				rb := codec.RowBytes()
				for i := 0; i < gc.Len(); i++ {
					side.cpu.Row(want, i)
					codec.Decode(got, raw[i*rb:(i+1)*rb])
					rows++
					for j := range want {
						if got[j] != want[j] {
							diff++
							break
						}
					}
				}
			}
		}
	}
	return diff, rows
}

func emuSteps(def int) int {
	if n, err := strconv.Atoi(os.Getenv("KVLAB_EMU_STEPS")); err == nil && n > 0 {
		return n
	}
	return def
}

func checkParity(t *testing.T, e *Engine, pc parityCase) {
	t.Helper()
	errs, ct, gt, text, diff, rows := runParity(t, e, pc)
	worst := slices.Max(errs)
	sorted := slices.Sorted(slices.Values(errs))
	median := sorted[len(sorted)/2]
	t.Logf("%s kv %s (window %d, sinks %d): relative RMS of logits over %d forward passes (prompt, %d greedy steps): worst %.2e, median %.2e; "+
		"stored K/V rows differing from the CPU's: %d of %d; text %q",
		pc.path[strings.LastIndex(pc.path, "/")+1:], pc.kv, pc.window, pc.sinks, len(errs), pc.steps, worst, median, diff, rows, text)
	pair, _ := kvq.ParsePair(pc.kv)
	logitsBound, flipBound := LogitsBound, FlipBound
	if pc.intAct {
		logitsBound, flipBound = ActivationBound, 2*ActivationBound
	}
	switch {
	case diff == 0 || (pair.K == kvq.F16 && pair.V == kvq.F16):
		if !(worst <= logitsBound) {
			t.Errorf("relative RMS %.3e exceeds %.0e", worst, logitsBound)
		}
	case !(worst <= flipBound) || !(median <= logitsBound):
		t.Errorf("with %d flipped rows: worst relative RMS %.3e (bound %.0e), median %.3e (bound %.0e)", diff, worst, flipBound, median, logitsBound)
	}
	for i := range ct {
		if ct[i] != gt[i] {
			t.Errorf("greedy token %d: device %d, CPU %d", i, gt[i], ct[i])
			break
		}
	}
}

// TestEmuModelParity runs kvlab-tiny-64 (f32 weights, head_dim 64) on the emulated device
// and on the CPU with the KV cache in f16, q8_0, q4_0 and q8_0/q4_0 (KVLAB_EMU_PAIRS
// overrides), prefilling the needle prompt in passes of 16 tokens and decoding 32 greedy
// tokens (KVLAB_EMU_STEPS overrides).
//
//	go test -tags cudaemu -run EmuModelParity -v ./native/cuda/engine/
func TestEmuModelParity(t *testing.T) {
	e := emuEngine(t)
	e.splitBlocks = 0
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	kvs := []string{"f16", "q8_0", "q4_0", "q8_0/q4_0"}
	if s := os.Getenv("KVLAB_EMU_PAIRS"); s != "" {
		kvs = strings.Split(s, ",")
	}
	for i, kv := range kvs {
		t.Run(strings.ReplaceAll(kv, "/", "-"), func(t *testing.T) {
			checkParity(t, e, parityCase{path: path, kv: kv, steps: emuSteps(32), batch: 16, all: i == 0})
		})
	}
	t.Run("q8_0-q4_0 window 8 sinks 2", func(t *testing.T) {
		checkParity(t, e, parityCase{path: path, kv: "q8_0/q4_0", window: 8, sinks: 2, steps: emuSteps(32) / 4, batch: 16})
	})
}

// TestEmuModelWeightTypes runs kvlab-tiny-64 re-encoded in each device weight type (and in
// q4_1, which the device dequantizes to f16 at upload) against the CPU on the same file, and
// a qwen2 rewrite of it (neox RoPE, QKV biases) in q8_0, and a qwen3 rewrite (per-head Q and
// K norms) in f32.
//
//	go test -tags cudaemu -run EmuModelWeightTypes -v ./native/cuda/engine/
func TestEmuModelWeightTypes(t *testing.T) {
	e := emuEngine(t)
	e.splitBlocks = 0
	fixture := fixtures.Path(t, "kvlab-tiny-64.gguf")
	for _, typ := range []gguf.Type{gguf.F16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_1} {
		t.Run(typ.String(), func(t *testing.T) {
			checkParity(t, e, parityCase{path: requantize(t, fixture, typ), kv: "f16", steps: emuSteps(32) / 4, batch: 64, intAct: wkern.Accelerated(typ)})
		})
	}
	t.Run("qwen2 (neox RoPE, QKV biases) q8_0", func(t *testing.T) {
		path := asQwen2(t, requantize(t, fixture, gguf.Q8_0))
		checkParity(t, e, parityCase{path: path, kv: "q8_0/q4_0", steps: emuSteps(32) / 4, batch: 64, intAct: wkern.Accelerated(gguf.Q8_0)})
	})
	t.Run("qwen3 (per-head Q and K norms) f32", func(t *testing.T) {
		checkParity(t, e, parityCase{path: asQwen3(t, fixture), kv: "f16", steps: emuSteps(32) / 4, batch: 64})
	})
}
