// Package model runs decoder architectures (llama with optional MoE, qwen2, qwen2moe, qwen3, qwen3moe, gemma2, gemma3, phi3) on the CPU: weights bound by name
// from a GGUF file and read in place in their stored type, a forward pass that prefills a batch
// of tokens at once or decodes one, and a KV cache in any kvq format pair (native/kvcache).
//
// One block, for the residual stream x (Embd values per token):
//
//	h = RMSNorm(x)·attn_norm
//	q, k, v = Wq·h (+bq), Wk·h (+bk), Wv·h (+bv)     Heads×HeadDimK, KVHeads×HeadDimK, KVHeads×HeadDimV
//	q, k = RoPE(q, pos), RoPE(k, pos)                norm or neox pairing per architecture
//	cache ← k, v;  a = attention(q, cache)           causal, grouped-query, scale 1/√HeadDimK
//	x = x + Wo·a (+bo)
//	h = RMSNorm(x)·ffn_norm
//	x = x + Wdown·(SiLU(Wgate·h) ⊙ Wup·h)
//
// then logits = Woutput·(RMSNorm(x)·output_norm), with Woutput = token_embd when the file has
// no output tensor (tied embeddings).
package model

import (
	"fmt"
	"runtime"

	"github.com/kvlab/kvlab/internal/keep"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/hf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/ml"
)

// Options configure Load.
type Options struct {
	// Threads is the number of goroutines the matrix products and attention use; 0 means
	// runtime.NumCPU().
	Threads int
	// Batch is the most tokens one prefill pass processes at once; longer inputs run in passes
	// of Batch tokens. 0 means 512.
	Batch int
	// Progress, when set, is called as the weights are bound with the bytes done so far and the
	// total. Load then reads every page of the weights (so the call tracks the disk read of a
	// memory-mapped file instead of leaving it to the first tokens).
	Progress func(done, total int64)
}

// Model is a loaded model. Its methods are safe for concurrent use, each Forward call on its
// own cache.
type Model struct {
	Hparams Hparams
	Arch    Arch

	file   *gguf.File
	embd   *Matrix // token_embd: Vocab × Embd
	output *Matrix // output (or token_embd when tied): Vocab × Embd
	norm   []float32
	blocks []Block
	layers []any // Arch.Layer's weights per layer; nil without
	// windows are the layers' sliding windows (0: the whole context), nil when none has one;
	// state is the architecture's own settings (both set by Arch.Check).
	windows []int
	state   any
	rope    rope
	mlRope  ml.Rope // rope, as the backends take it
	pool    *Pool
	batch   int
	// states holds the pass states between passes (a few strongly: a pass after an idle spell,
	// a server's next burst, finds its scratch allocated and resident).
	states keep.Pool[cpuBackend]
}

// Block is one decoder layer's weights, bound from "blk.N." + the tag's name. The biases are
// nil when the file has none; every vector has the length its matrix implies.
type Block struct {
	AttnNorm []float32 `gguf:"attn_norm.weight"`
	Wq       *Matrix   `gguf:"attn_q.weight,unfused"`
	Bq       []float32 `gguf:"attn_q.bias,qkvbias"`
	Wk       *Matrix   `gguf:"attn_k.weight,unfused"`
	Bk       []float32 `gguf:"attn_k.bias,qkvbias"`
	Wv       *Matrix   `gguf:"attn_v.weight,unfused"`
	Bv       []float32 `gguf:"attn_v.bias,qkvbias"`
	Wo       *Matrix   `gguf:"attn_output.weight"`
	Bo       []float32 `gguf:"attn_output.bias,optional"`
	FFNNorm  []float32 `gguf:"ffn_norm.weight"`
	// Gate, Up and Down are the dense FFN, nil in a mixture-of-experts model, which has
	// instead a router (Experts × Embd) and the experts' FFNs (Hparams.Experts each).
	Gate     *Matrix   `gguf:"ffn_gate.weight,dense"`
	Up       *Matrix   `gguf:"ffn_up.weight,dense"`
	Down     *Matrix   `gguf:"ffn_down.weight,dense"`
	Router   *Matrix   `gguf:"ffn_gate_inp.weight,experts"`
	GateExps []*Matrix `gguf:"ffn_gate_exps.weight,experts"`
	UpExps   []*Matrix `gguf:"ffn_up_exps.weight,experts"`
	DownExps []*Matrix `gguf:"ffn_down_exps.weight,experts"`
	// ShGate, ShUp, ShDown and ShGateInp are a shared expert beside the routed ones (qwen2moe,
	// Arch.Shared): a SwiGLU FFN every token runs, scaled by σ(ShGateInp·h); nil without.
	ShGate    *Matrix   `gguf:"ffn_gate_shexp.weight,shared"`
	ShUp      *Matrix   `gguf:"ffn_up_shexp.weight,shared"`
	ShDown    *Matrix   `gguf:"ffn_down_shexp.weight,shared"`
	ShGateInp []float32 `gguf:"ffn_gate_inp_shexp.weight,shared"`

	// gateE, upE and downE are the experts as the backends take them, set once at load (a
	// forward pass builds no slices); shared likewise.
	gateE, upE, downE []ml.Matrix
	shared            *ml.SharedExpert
}

// ffnMatrices are the block's FFN weights, dense or every expert's.
func (b *Block) ffnMatrices() []*Matrix {
	if b.Router == nil {
		return []*Matrix{b.Gate, b.Up, b.Down}
	}
	out := []*Matrix{b.Router}
	out = append(out, b.GateExps...)
	out = append(out, b.UpExps...)
	out = append(out, b.DownExps...)
	if b.ShGate != nil {
		out = append(out, b.ShGate, b.ShUp, b.ShDown)
	}
	return out
}

// bindExperts fills the backend views of the experts (gateE, upE, downE, shared).
func (b *Block) bindExperts() {
	if b.Router == nil {
		return
	}
	b.gateE, b.upE, b.downE = make([]ml.Matrix, len(b.GateExps)), make([]ml.Matrix, len(b.UpExps)), make([]ml.Matrix, len(b.DownExps))
	for e := range b.gateE {
		b.gateE[e], b.upE[e], b.downE[e] = b.GateExps[e], b.UpExps[e], b.DownExps[e]
	}
	if b.ShGate != nil {
		b.shared = &ml.SharedExpert{Gate: b.ShGate, Up: b.ShUp, Down: b.ShDown, GateInp: b.ShGateInp}
	}
}

// globals are the weights outside the blocks.
type globals struct {
	Embd     *Matrix   `gguf:"token_embd.weight"`
	Norm     []float32 `gguf:"output_norm.weight"`
	Output   *Matrix   `gguf:"output.weight,optional"`
	RopeFreq []float32 `gguf:"rope_freqs.weight,optional"`
}

// Load opens the GGUF file (or Hugging Face model folder, native/hf) at path and binds a model
// to it. The file stays open (its tensor
// data mapped) until Close. An architecture other than the registered ones fails with
// ErrUnsupportedArch naming it; a missing tensor or one of the wrong shape or type fails naming
// the tensor.
func Load(path string, opts Options) (*Model, error) {
	f, err := hf.OpenModel(path)
	if err != nil {
		return nil, err
	}
	m, err := New(f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	if opts.Progress == nil { // New's prefault has touched them
		m.touchWeights()
	}
	return m, nil
}

// touchWeights takes the page faults of the matrices a forward pass reads whole (all but the
// token embedding, unless the output is the embedding) while the model loads and not during its
// first pass: in a VM they cost the first 512-token F16 prefill 15–20 % of its time. llama.cpp
// maps with MAP_POPULATE to the same end (here that flag alone leaves the first pass as slow:
// the faults are the hypervisor's). prefault does the same with the embedding and a progress bar.
func (m *Model) touchWeights() { touchPages(m.weightMatrices(false), nil) }

// weightMatrices are the model's weight matrices: the output and every block's, and the token
// embedding too when embd (it is the output's when they are one).
func (m *Model) weightMatrices(embd bool) []*Matrix {
	mats := []*Matrix{m.output}
	if embd && m.embd != m.output {
		mats = append(mats, m.embd)
	}
	for i := range m.blocks {
		b := &m.blocks[i]
		mats = append(mats, b.Wq, b.Wk, b.Wv, b.Wo)
		mats = append(mats, b.ffnMatrices()...)
	}
	return mats
}

// touchPages reads one byte of every 4 KiB page of the matrices (nil ones skipped), reporting
// the bytes done when progress is set.
func touchPages(mats []*Matrix, progress func(done, total int64)) {
	var total, done int64
	for _, w := range mats {
		if w != nil {
			total += int64(len(w.Data))
		}
	}
	if progress != nil {
		progress(0, total)
	}
	var sink byte
	for _, w := range mats {
		if w == nil {
			continue
		}
		for i := 0; i < len(w.Data); i += 4096 {
			sink ^= w.Data[i]
		}
		done += int64(len(w.Data))
		if progress != nil {
			progress(done, total)
		}
	}
	runtime.KeepAlive(sink)
}

// New binds a model to an open GGUF file; Close closes the file.
func New(f *gguf.File, opts Options) (*Model, error) {
	a, err := lookupArch(f.Architecture())
	if err != nil {
		return nil, err
	}
	hp, err := readHparams(f, a)
	if err != nil {
		return nil, err
	}
	if err := CheckMetadata(f, hp); err != nil {
		return nil, err
	}
	b := binder{f: f, arch: a, moe: hp.Experts > 0}
	var g globals
	if err := b.bind(&g, ""); err != nil {
		return nil, err
	}
	hp.Vocab = g.Embd.Rows
	m := &Model{Hparams: hp, Arch: a, file: f, embd: g.Embd, output: g.Output, norm: g.Norm}
	if m.output == nil {
		m.output = g.Embd
	}
	m.blocks = make([]Block, hp.Layers)
	for l := range m.blocks {
		if err := b.bind(&m.blocks[l], fmt.Sprintf("blk.%d.", l)); err != nil {
			return nil, err
		}
		if a.Layer != nil {
			ly := a.Layer()
			if err := b.bind(ly, fmt.Sprintf("blk.%d.", l)); err != nil {
				return nil, err
			}
			m.layers = append(m.layers, ly)
		}
	}
	if a.Check != nil {
		if err := a.Check(m); err != nil {
			return nil, err
		}
	}
	if err := m.checkShapes(g.RopeFreq); err != nil {
		return nil, err
	}
	for l := range m.blocks {
		m.blocks[l].bindExperts()
	}
	m.rope = newRope(hp, a.Rope, g.RopeFreq)
	m.mlRope = ml.Rope{Style: ml.RopeStyle(a.Rope), Dims: m.rope.dims, Freq: m.rope.freq, Scale: m.rope.scale, MScale: m.rope.mscale}
	if opts.Progress != nil {
		m.prefault(opts.Progress)
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	m.pool = NewPool(threads)
	m.batch = opts.Batch
	if m.batch <= 0 {
		m.batch = 512
	}
	return m, nil
}

func (m *Model) checkShapes(ropeFreq []float32) error {
	hp := m.Hparams
	nq, nk, nv := hp.Heads*hp.HeadDimK, hp.KVHeads*hp.HeadDimK, hp.KVHeads*hp.HeadDimV
	type want struct {
		m          *Matrix
		rows, cols int
	}
	mats := []want{{m.embd, hp.Vocab, hp.Embd}, {m.output, hp.Vocab, hp.Embd}}
	vecs := map[string][2]int{"output_norm.weight": {len(m.norm), hp.Embd}}
	if ropeFreq != nil {
		vecs["rope_freqs.weight"] = [2]int{len(ropeFreq), hp.RopeDims / 2}
	}
	for l, b := range m.blocks {
		mats = append(mats, want{b.Wq, nq, hp.Embd}, want{b.Wk, nk, hp.Embd}, want{b.Wv, nv, hp.Embd},
			want{b.Wo, hp.Embd, hp.Heads * hp.HeadDimV})
		if b.Router == nil {
			mats = append(mats, want{b.Gate, hp.FFN, hp.Embd}, want{b.Up, hp.FFN, hp.Embd}, want{b.Down, hp.Embd, hp.FFN})
		} else {
			mats = append(mats, want{b.Router, hp.Experts, hp.Embd})
			for _, e := range [][]*Matrix{b.GateExps, b.UpExps, b.DownExps} {
				if len(e) != hp.Experts {
					return fmt.Errorf("model: blk.%d: %d experts in %q, want expert_count %d", l, len(e), e[0].Name, hp.Experts)
				}
			}
			for e := 0; e < hp.Experts; e++ {
				mats = append(mats, want{b.GateExps[e], hp.ExpertFFN, hp.Embd}, want{b.UpExps[e], hp.ExpertFFN, hp.Embd}, want{b.DownExps[e], hp.Embd, hp.ExpertFFN})
			}
			if m.Arch.Shared {
				if b.ShGate == nil || b.ShUp == nil || b.ShDown == nil || b.ShGateInp == nil {
					return fmt.Errorf("model: blk.%d: the shared expert (ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp, ffn_gate_inp_shexp) is incomplete", l)
				}
				mats = append(mats, want{b.ShGate, hp.SharedFFN, hp.Embd}, want{b.ShUp, hp.SharedFFN, hp.Embd}, want{b.ShDown, hp.Embd, hp.SharedFFN})
				vecs[fmt.Sprintf("blk.%d.ffn_gate_inp_shexp.weight", l)] = [2]int{len(b.ShGateInp), hp.Embd}
			}
		}
		p := fmt.Sprintf("blk.%d.", l)
		vecs[p+"attn_norm.weight"] = [2]int{len(b.AttnNorm), hp.Embd}
		vecs[p+"ffn_norm.weight"] = [2]int{len(b.FFNNorm), hp.Embd}
		for _, bias := range []struct {
			name string
			v    []float32
			n    int
		}{{"attn_q.bias", b.Bq, nq}, {"attn_k.bias", b.Bk, nk}, {"attn_v.bias", b.Bv, nv}, {"attn_output.bias", b.Bo, hp.Embd}} {
			if bias.v != nil {
				vecs[p+bias.name] = [2]int{len(bias.v), bias.n}
			}
		}
	}
	for _, w := range mats {
		if w.m.Rows != w.rows || w.m.Cols != w.cols {
			return fmt.Errorf("model: tensor %q is %d×%d (ne0 %d, ne1 %d), want ne0 %d, ne1 %d",
				w.m.Name, w.m.Rows, w.m.Cols, w.m.Cols, w.m.Rows, w.cols, w.rows)
		}
	}
	for name, v := range vecs {
		if v[0] != v[1] {
			return fmt.Errorf("model: tensor %q has %d values, want %d", name, v[0], v[1])
		}
	}
	return nil
}

// prefault reads one byte of every page of every weight matrix, reporting progress.
func (m *Model) prefault(progress func(done, total int64)) {
	touchPages(m.weightMatrices(true), progress)
}

// Close stops the worker goroutines and closes the file; the model must not be used after.
func (m *Model) Close() error {
	m.pool.Close()
	return m.file.Close()
}

// File is the GGUF file the model reads (for its tokenizer and metadata). It is closed by Close.
func (m *Model) File() *gguf.File { return m.file }

// Threads is the number of goroutines the model computes on.
func (m *Model) Threads() int { return m.pool.Threads() }

// WeightBytes is the size of the weight matrices as stored (the memory a forward pass streams).
func (m *Model) WeightBytes() int64 {
	n := int64(len(m.embd.Data))
	if m.output != m.embd {
		n += int64(len(m.output.Data))
	}
	for i := range m.blocks {
		b := &m.blocks[i]
		for _, w := range append([]*Matrix{b.Wq, b.Wk, b.Wv, b.Wo}, b.ffnMatrices()...) {
			n += int64(len(w.Data))
		}
	}
	return n
}

// Weights are a model's bound weights, for a backend that runs the forward pass itself
// (native/cuda/engine). The matrices and vectors are the model's own, shared and read in place:
// callers must not modify them, and they are valid until Close.
type Weights struct {
	Embd   *Matrix   // token_embd: Vocab × Embd
	Output *Matrix   // output: Vocab × Embd; Embd itself when the embeddings are tied
	Norm   []float32 // output_norm: Embd values
	Blocks []Block   // one per layer
	// RopeFreq are the RopeDims/2 inverse frequencies of RoPE: pair j turns by the angle
	// (pos / Hparams.RopeScale)·RopeFreq[j], RopeFreq[j] = RopeBase^(−2j/RopeDims) divided by
	// the rope_freqs factor j when the file has one, with YaRN's blend folded in
	// (RopeFrequencies). Arch.Rope says how the pairs are formed.
	RopeFreq []float32
	// RopeMScale multiplies both values of every rotated pair (YaRN's attention factor; 1
	// without YaRN).
	RopeMScale float32
}

// Layer is layer l's weights beyond Block (Arch.Layer), nil when the architecture has none.
func (m *Model) Layer(l int) any {
	if m.layers == nil {
		return nil
	}
	return m.layers[l]
}

// Rope is the model's rotary position embedding as the backends take it (its Freq are the
// model's own: read only).
func (m *Model) Rope() *ml.Rope { return &m.mlRope }

// Weights returns the model's bound weights (see Weights).
func (m *Model) Weights() Weights {
	return Weights{Embd: m.embd, Output: m.output, Norm: m.norm, Blocks: append([]Block(nil), m.blocks...),
		RopeFreq: append([]float32(nil), m.rope.freq...), RopeMScale: m.rope.mscale}
}

// WeightType is the type of the first block's attention Q weights, the model's usual label
// ("q4_K", "f16").
func (m *Model) WeightType() gguf.Type { return m.blocks[0].Wq.Type }

// CacheConfig returns a kvcache configuration of this model's geometry (layers, KV heads, head
// dimensions) for pair and maxCells cells; the caller sets the overlay, gain and seed.
func (m *Model) CacheConfig(pair kvq.Pair, maxCells int) kvcache.Config {
	hp := m.Hparams
	return kvcache.Config{Layers: hp.Layers, KVHeads: hp.KVHeads, HeadDimK: hp.HeadDimK,
		HeadDimV: hp.HeadDimV, Pair: pair, MaxCells: maxCells, Windows: m.Windows()}
}

// Windows returns each layer's sliding window (0 for a layer that attends the whole context),
// nil for a model without sliding-window layers. A cache of CacheConfig holds only the last
// window cells of those layers.
func (m *Model) Windows() []int { return append([]int(nil), m.windows...) }
