// Package ml is the seam between an architecture's forward pass and the device it runs on: a
// small set of operations on backend-resident activations (Tensor) that a transformer block
// needs. An architecture (native/model's llama.go, qwen2.go, qwen3.go) is written once against
// Backend; the CPU (native/model's cpuBackend) and CUDA (native/cuda/engine) implement it.
//
// A forward pass is one Batch of tokens. The batch carries each token's position and sequence
// (an index into its caches), so a pass may one day hold tokens of several sequences; today's
// backends run one sequence per pass and fail clearly on more.
//
// Operations record the first error and do nothing after it (Err reports it), so an
// architecture reads as the math it computes. Work is dispatched per operation and layer,
// never per element. Kernels a backend fuses are optional interfaces found by type
// assertion (MatMulAdder); the helpers of this package fall back to the plain operations.
package ml

import (
	"math"

	"github.com/kvlab/kvlab/native/kvcache"
)

// Tensor is an activation on a backend: Rows() × Cols() float32 values, row-major, one row per
// token of the batch (or per head of a token after Reshape). A Tensor is valid until the
// backend's next Begin.
type Tensor interface {
	Rows() int
	Cols() int
}

// Matrix is a weight matrix bound from the model file (native/model.Matrix: rows × cols
// values of a GGUF type, read in place). A backend holds its own copy of each, found by this
// handle.
type Matrix interface {
	Dims() (rows, cols int)
}

// Vector is a bound float32 weight vector (a norm's weights, a bias) as the host holds it; nil
// is absent. A backend that keeps its own copy finds it by the address of the first value.
type Vector = []float32

// Cache is one sequence's KV cache on a backend.
type Cache interface {
	// Config is the cache's geometry and formats.
	Config() kvcache.Config
	// Len is the number of committed cells; Cap the capacity.
	Len() int
	Cap() int
	// Commit makes the cells written since the last commit part of the sequence.
	Commit(n int) error
}

// Batch is the input of one forward pass.
type Batch struct {
	// Tokens are the token ids, one per row of the pass's activations.
	Tokens []int32
	// Pos is each token's position in its sequence.
	Pos []int32
	// Seq is each token's sequence: an index into Caches.
	Seq []int32
	// Caches are the sequences' caches; Attention writes each token's K and V into its own.
	Caches []Cache
	// Out receives logits (see Logits): empty for none, one row (each sequence's last token)
	// or a row per token when All is set.
	Out []float32
	All bool
}

// Single fills b for n tokens of one sequence at positions p0… of cache c (reusing b's slices).
func (b *Batch) Single(tokens []int32, c Cache, p0 int) {
	b.Tokens = tokens
	b.Pos, b.Seq = b.Pos[:0], b.Seq[:0]
	for i := range tokens {
		b.Pos = append(b.Pos, int32(p0+i))
		b.Seq = append(b.Seq, 0)
	}
	b.Caches = append(b.Caches[:0], c)
}

// RopeStyle is how rotary position embedding pairs the dimensions of a head.
type RopeStyle int

const (
	// RopeNorm rotates adjacent pairs (x[2i], x[2i+1]) (llama.cpp's NORM).
	RopeNorm RopeStyle = iota
	// RopeNeox rotates the pairs (x[i], x[i+dims/2]) (llama.cpp's NEOX, "rotate half").
	RopeNeox
)

// Rope is a model's rotary position embedding, its frequencies computed once in Go: the first
// Dims values of every head rotate in Dims/2 pairs, pair j by the angle (pos/Scale)·Freq[j],
// both rotated values multiplied by MScale.
type Rope struct {
	Style  RopeStyle
	Dims   int
	Freq   []float32
	Scale  float32
	MScale float32
}

// Backend is the operations of a forward pass on one device. A Backend value serves one pass
// at a time: Begin, then the operations, then Err.
type Backend interface {
	// Begin starts a pass over b (its tokens are on the device after it). Tensors of the
	// previous pass are invalid from here.
	Begin(b *Batch) error
	// New is a scratch tensor of rows × cols values for this pass (its values undefined).
	New(rows, cols int) Tensor
	// View is rows [row0, row0+rows) of x.
	View(x Tensor, row0, rows int) Tensor
	// Reshape is x's values as rows × cols (rows·cols = x's size).
	Reshape(x Tensor, rows, cols int) Tensor

	// Embed writes row t of dst = row Tokens[t] of table (dequantized).
	Embed(dst Tensor, table Matrix)
	// MatMul writes dst[t] = W·x[t] (+ bias) for every row t of x, for any GGUF type of W.
	MatMul(dst Tensor, w Matrix, x Tensor, bias Vector)
	// RMSNorm writes dst[r] = w ⊙ x[r]/√(mean(x[r]²) + eps) for every row r (dst may be x).
	RMSNorm(dst, x Tensor, w Vector, eps float32)
	// RoPE rotates the heads of every row of x (heads × Cols()/heads values) at its token's
	// position.
	RoPE(x Tensor, heads int, r *Rope)
	// SwiGLU writes gate = SiLU(gate) ⊙ up.
	SwiGLU(gate, up Tensor)
	// Add writes x += y.
	Add(x, y Tensor)
	// Attention writes each token's k and v rows into its sequence's cache at its position for
	// layer, then attends its query heads in q causally over its sequence's cells (grouped
	// query heads; a single token per sequence decodes over the cache's decode readers, with
	// the f16 window and sinks overlay where configured) into out, scale being the softmax
	// scale. The cells stay uncommitted.
	Attention(out, q, k, v Tensor, layer int, scale float32)
	// Logits copies W·x[r] of every row of x into the batch's Out (x has one row per output
	// row).
	Logits(x Tensor, w Matrix)
	// Err is the first error of the pass, nil when none.
	Err() error
}

// MatMulAdder is a backend with a fused dst += W·x (+ bias).
type MatMulAdder interface {
	MatMulAdd(dst Tensor, w Matrix, x Tensor, bias Vector)
}

// MatMulAdd writes dst += W·x (+ bias): the fused kernel when b has one, otherwise MatMul into
// tmp (dst's shape) and Add.
func MatMulAdd(b Backend, dst Tensor, w Matrix, x Tensor, bias Vector, tmp Tensor) {
	if f, ok := b.(MatMulAdder); ok {
		f.MatMulAdd(dst, w, x, bias)
		return
	}
	b.MatMul(tmp, w, x, bias)
	b.Add(dst, tmp)
}

// AttnOptions extend Attention for the gemma architectures.
type AttnOptions struct {
	// Window, when positive, is a sliding window: a query at position p attends only the cells
	// at positions p−Window+1 … p (llama.cpp's SWA mask, p − pos < Window).
	Window int
	// SoftCap, when positive, caps every scaled score x as SoftCap·tanh(x/SoftCap) before the
	// softmax (attention logit soft-capping).
	SoftCap float32
}

// Gemma is the operations the gemma architectures need beyond Backend; an architecture that
// uses them names the backend's lack of them as its error (see native/model's Arch.Ops).
type Gemma interface {
	// AttentionOpts is Attention with a sliding window and soft-capping.
	AttentionOpts(out, q, k, v Tensor, layer int, scale float32, o AttnOptions)
	// GeGLU writes gate = GELU(gate) ⊙ up, GELU's tanh approximation
	// ½z(1 + tanh(√(2/π)(z + 0.044715z³))).
	GeGLU(gate, up Tensor)
	// Scale writes x *= s.
	Scale(x Tensor, s float32)
	// SoftCapOut caps every value v of the batch's Out as c·tanh(v/c) (final logit
	// soft-capping; after Logits).
	SoftCapOut(c float32)
}

// MoE is a backend with a mixture-of-experts FFN.
type MoE interface {
	// MoEFFN writes dst[t] = Σ_e w_te · down_e·(SiLU(gate_e·x[t]) ⊙ up_e·x[t]) over the o.Used
	// experts e of token t: the highest of the router's softmax over router·x[t], their weights
	// w its values, renormalized to sum to 1 when o.NormTopK (mixtral, qwen3moe: llama.cpp's
	// norm_w), plus, when o.Shared is set, σ(Shared.GateInp·x[t]) · Shared's SwiGLU FFN of x[t]
	// (qwen2moe's shared expert). Only the experts some token of the pass uses are read.
	MoEFFN(dst, x Tensor, router Matrix, gate, up, down []Matrix, o MoEOptions)
}

// MoEOptions are a mixture-of-experts FFN's routing settings (see MoE).
type MoEOptions struct {
	Used     int
	NormTopK bool
	Shared   *SharedExpert
}

// SharedExpert is a dense SwiGLU FFN every token runs beside its routed experts, scaled by the
// sigmoid of a gate (GateInp: one weight per input value).
type SharedExpert struct {
	Gate, Up, Down Matrix
	GateInp        Vector
}

// RouteTopK picks each of n tokens' used experts from logits (n × ne router outputs) into
// picks and weights (n × used each): the experts of highest softmax probability in order,
// their weights those probabilities, renormalized to sum to 1 over the picks when norm is set.
// p is scratch, grown to ne values when shorter and returned for the next call. Every backend
// routes through it, so a token picks the same experts at the same weights on every device.
func RouteTopK(logits []float32, n, ne, used int, norm bool, picks []int, weights []float32, p []float64) []float64 {
	if cap(p) < ne {
		p = make([]float64, ne)
	}
	p = p[:ne]
	for t := 0; t < n; t++ {
		row := logits[t*ne : (t+1)*ne]
		mx := row[0]
		for _, v := range row {
			mx = max(mx, v)
		}
		var sum float64
		for e, v := range row {
			p[e] = math.Exp(float64(v - mx))
			sum += p[e]
		}
		var top float64
		for i := 0; i < used; i++ {
			best := -1
			for e := range p {
				if p[e] >= 0 && (best < 0 || p[e] > p[best]) {
					best = e
				}
			}
			picks[t*used+i], weights[t*used+i] = best, float32(p[best]/sum)
			top += p[best] / sum
			p[best] = -1
		}
		if norm {
			for i := 0; i < used; i++ {
				weights[t*used+i] = float32(float64(weights[t*used+i]) / top)
			}
		}
	}
	return p
}
