package calc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
)

// Errors that callers match with errors.Is.
var (
	// ErrBadShape reports a model shape the planner cannot size (no layers, a zero head count,
	// a window on a full-attention layer, …).
	ErrBadShape = errors.New("bad model shape")
	// ErrBadInput reports a request value out of range (negative context, zero GPUs, …).
	ErrBadInput = errors.New("bad planner input")
	// ErrUnknownPreset reports a model or hardware preset name that does not exist.
	ErrUnknownPreset = errors.New("unknown preset")
)

// LayerKind says how a layer's cache grows with the context.
type LayerKind uint8

// The layer kinds. The zero value is invalid so that an unset kind is caught.
const (
	_ LayerKind = iota
	// Full attention keeps K and V for every cell of the context.
	Full
	// Sliding attention keeps K and V for the last Window cells only: its cache stops growing
	// once the context passes the window.
	Sliding
	// Recurrent layers (Mamba, Gated DeltaNet, …) keep a constant-size state per sequence,
	// independent of the context and of the KV format.
	Recurrent
	// Latent layers (multi-head latent attention, MLA) keep one compressed row of LatentDim
	// values per cell, shared by all heads, stored in the K format of the pair.
	Latent
)

var kindNames = [...]string{Full: "full", Sliding: "sliding", Recurrent: "recurrent", Latent: "latent"}

// String returns the kind's name ("full", "sliding", "recurrent", "latent").
func (k LayerKind) String() string {
	if k == 0 || int(k) >= len(kindNames) {
		return "invalid"
	}
	return kindNames[k]
}

// MarshalText writes the kind's name, so JSON documents read "full", not a number.
func (k LayerKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a kind's name.
func (k *LayerKind) UnmarshalText(b []byte) error {
	v, err := ParseLayerKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// ParseLayerKind returns the kind with the given name.
func ParseLayerKind(s string) (LayerKind, error) {
	for k, n := range kindNames {
		if n != "" && n == strings.ToLower(strings.TrimSpace(s)) {
			return LayerKind(k), nil
		}
	}
	return 0, fmt.Errorf("%w: layer kind %q (valid: full, sliding, recurrent, latent)", ErrBadShape, s)
}

// LayerGroup is Count consecutive-or-not layers of one shape. A model is a list of groups; the
// order of groups does not matter to sizes.
type LayerGroup struct {
	// Count is the number of layers of this shape.
	Count int `json:"count"`
	// Kind is how the layer's cache grows with the context.
	Kind LayerKind `json:"kind"`
	// KVHeads is the number of KV heads (Full and Sliding).
	KVHeads int `json:"kv_heads,omitempty"`
	// HeadDimK and HeadDimV are the values per K row and per V row (Full and Sliding).
	HeadDimK int `json:"head_dim_k,omitempty"`
	HeadDimV int `json:"head_dim_v,omitempty"`
	// Window is the number of cells a Sliding layer keeps.
	Window int `json:"window,omitempty"`
	// StateBytes is a Recurrent layer's state per sequence in bytes (conv + SSM state).
	StateBytes int64 `json:"state_bytes,omitempty"`
	// LatentDim is the width of a Latent layer's per-cell row (kv_lora_rank + rope dims).
	LatentDim int `json:"latent_dim,omitempty"`
}

// Shape is what the planner needs to know about a model: its layers and its weights.
type Shape struct {
	// Name is a display name ("Qwen2.5-14B-Instruct-1M").
	Name string `json:"name"`
	// Groups are the model's layers.
	Groups []LayerGroup `json:"groups"`
	// Params is the total number of weights; ActiveParams the number read per decoded token
	// (smaller than Params for mixture-of-experts models; 0 means Params).
	Params       int64 `json:"params"`
	ActiveParams int64 `json:"active_params,omitempty"`
	// WeightBytes, when positive, is the exact size of the weights (from a GGUF file's tensor
	// infos) and overrides Params × bits per weight; ActiveWeightBytes likewise for the bytes
	// read per token.
	WeightBytes       int64 `json:"weight_bytes,omitempty"`
	ActiveWeightBytes int64 `json:"active_weight_bytes,omitempty"`
	// NativeContext is the context length the model was trained for, in tokens (0 if unknown).
	NativeContext int64 `json:"native_context,omitempty"`
	// Notes are remarks about how the shape was derived (a GGUF key that was missing, …).
	Notes []string `json:"notes,omitempty"`
}

// Class is the architecture class the policy and the quality bar reason about.
type Class uint8

// The classes of seed 000 §3, plus MLA.
const (
	// ClassFull is pure full attention: every layer's KV grows with the context.
	ClassFull Class = iota + 1
	// ClassSliding mixes full (global) layers with sliding-window layers (iSWA).
	ClassSliding
	// ClassHybrid mixes attention layers with recurrent layers (DeltaNet, Mamba).
	ClassHybrid
	// ClassLatent uses multi-head latent attention.
	ClassLatent
)

// String names the class.
func (c Class) String() string {
	switch c {
	case ClassFull:
		return "full attention"
	case ClassSliding:
		return "sliding window (iSWA)"
	case ClassHybrid:
		return "hybrid recurrent"
	case ClassLatent:
		return "latent attention (MLA)"
	}
	return "unknown"
}

// Layers is the total number of layers.
func (s Shape) Layers() int {
	n := 0
	for _, g := range s.Groups {
		n += g.Count
	}
	return n
}

// Class returns the shape's architecture class: hybrid if any layer is recurrent, else sliding
// if any layer is sliding, else latent if any layer is latent, else full.
func (s Shape) Class() Class {
	has := map[LayerKind]bool{}
	for _, g := range s.Groups {
		if g.Count > 0 {
			has[g.Kind] = true
		}
	}
	switch {
	case has[Recurrent]:
		return ClassHybrid
	case has[Sliding]:
		return ClassSliding
	case has[Latent]:
		return ClassLatent
	}
	return ClassFull
}

// Limits that keep every byte count of a valid shape inside int64 at any context up to
// MaxContext.
const (
	// MaxShapeField bounds a group's layer count, KV heads, head dims and latent width.
	MaxShapeField = 1 << 20
	// MaxStateBytes bounds one recurrent layer's state.
	MaxStateBytes = int64(1) << 40
	// MaxBytesPerToken bounds the cache growth per token in the widest format (f32): 64 MiB,
	// a hundred times the largest models'.
	MaxBytesPerToken = int64(1) << 26
	// MaxParams bounds the parameter count (10¹⁵).
	MaxParams = int64(1e15)
)

// Validate reports the first problem that keeps the shape from being sized.
func (s Shape) Validate() error {
	if len(s.Groups) == 0 || s.Layers() == 0 {
		return fmt.Errorf("%w: %s: no layers", ErrBadShape, s.label())
	}
	var perToken float64 // f32 bytes per token of every layer, windows included
	for i, g := range s.Groups {
		where := fmt.Sprintf("%s: layer group %d (%s)", s.label(), i+1, g.Kind)
		if g.Count < 0 {
			return fmt.Errorf("%w: %s: count %d is negative", ErrBadShape, where, g.Count)
		}
		for _, f := range []struct {
			name string
			v    int
		}{{"layer count", g.Count}, {"KV heads", g.KVHeads}, {"K head dim", g.HeadDimK}, {"V head dim", g.HeadDimV}, {"latent width", g.LatentDim}} {
			if f.v > MaxShapeField {
				return fmt.Errorf("%w: %s: %s %d is beyond the planner's limit of %d", ErrBadShape, where, f.name, f.v, MaxShapeField)
			}
		}
		if g.Window < 0 || int64(g.Window) > MaxContext {
			return fmt.Errorf("%w: %s: window %d out of range", ErrBadShape, where, g.Window)
		}
		if g.StateBytes > MaxStateBytes {
			return fmt.Errorf("%w: %s: state of %d bytes is beyond the planner's limit of %d", ErrBadShape, where, g.StateBytes, MaxStateBytes)
		}
		perToken += float64(g.Count) * 4 * (float64(g.KVHeads)*float64(g.HeadDimK+g.HeadDimV) + float64(g.LatentDim))
		switch g.Kind {
		case Full, Sliding:
			if g.KVHeads < 1 {
				return fmt.Errorf("%w: %s: %d KV heads, need at least 1", ErrBadShape, where, g.KVHeads)
			}
			if g.HeadDimK < kvq.MinDim || g.HeadDimV < kvq.MinDim {
				return fmt.Errorf("%w: %s: head dims K %d / V %d, each must be at least %d", ErrBadShape, where, g.HeadDimK, g.HeadDimV, kvq.MinDim)
			}
			if g.Kind == Sliding && g.Window < 1 {
				return fmt.Errorf("%w: %s: window %d, need at least 1 cell", ErrBadShape, where, g.Window)
			}
			if g.Kind == Full && g.Window != 0 {
				return fmt.Errorf("%w: %s: a full-attention layer has no window (got %d); use kind sliding", ErrBadShape, where, g.Window)
			}
		case Recurrent:
			if g.StateBytes < 0 {
				return fmt.Errorf("%w: %s: state of %d bytes is negative", ErrBadShape, where, g.StateBytes)
			}
		case Latent:
			if g.LatentDim < kvq.MinDim {
				return fmt.Errorf("%w: %s: latent width %d, must be at least %d", ErrBadShape, where, g.LatentDim, kvq.MinDim)
			}
		default:
			return fmt.Errorf("%w: %s: unknown layer kind %d", ErrBadShape, where, g.Kind)
		}
	}
	if perToken > float64(MaxBytesPerToken) {
		return fmt.Errorf("%w: %s: the cache would grow by %.0f bytes per token; the planner stops at %d", ErrBadShape, s.label(), perToken, MaxBytesPerToken)
	}
	if s.Params < 0 || s.ActiveParams < 0 || s.WeightBytes < 0 || s.ActiveWeightBytes < 0 {
		return fmt.Errorf("%w: %s: negative parameter or weight count", ErrBadShape, s.label())
	}
	if s.Params > MaxParams || s.ActiveParams > MaxParams || s.WeightBytes > 4*MaxParams || s.ActiveWeightBytes > 4*MaxParams {
		return fmt.Errorf("%w: %s: more than %d parameters", ErrBadShape, s.label(), MaxParams)
	}
	if s.ActiveParams > s.Params && s.Params > 0 {
		return fmt.Errorf("%w: %s: %d active parameters exceed the %d total", ErrBadShape, s.label(), s.ActiveParams, s.Params)
	}
	return nil
}

func (s Shape) label() string {
	if s.Name == "" {
		return "model"
	}
	return s.Name
}

// headsPerGPU is the KV heads one GPU holds when tp GPUs split a layer's heads by tensor
// parallelism: ⌈heads/tp⌉. When tp exceeds heads each GPU holds (a replica of) one head.
func headsPerGPU(heads, tp int) int {
	if tp <= 1 {
		return heads
	}
	return int(ceilDiv(int64(heads), int64(tp)))
}

// layerCells is the number of cells a layer of kind Full, Sliding or Latent holds at a context
// of ctx tokens.
func (g LayerGroup) layerCells(ctx int64) int64 {
	if g.Kind == Sliding && ctx > int64(g.Window) {
		return int64(g.Window)
	}
	return ctx
}

// KVBytes is the exact cache of one sequence of ctx tokens in format pair p on one GPU of a
// tensor-parallel group of tp GPUs: the sum over layers of K and V (Full, Sliding), the latent
// row in p.K (Latent, replicated on every GPU) and the recurrent state (split across GPUs).
func (s Shape) KVBytes(p kvq.Pair, ctx int64, tp int) int64 {
	if ctx < 0 {
		ctx = 0
	}
	var total int64
	for _, g := range s.Groups {
		var per int64
		switch g.Kind {
		case Full, Sliding:
			per = p.Bytes(g.layerCells(ctx), g.HeadDimK, g.HeadDimV, headsPerGPU(g.KVHeads, tp))
		case Latent:
			per = p.K.Bytes(ctx, g.LatentDim, 1)
		case Recurrent:
			per = g.StateBytes
			if tp > 1 {
				per = ceilDiv(per, int64(tp))
			}
		}
		total += per * int64(g.Count)
	}
	return total
}

// BytesPerToken is how much one more token of context adds to one sequence's cache on one GPU,
// once the context is past every sliding window: the exact average over Full and Latent layers
// (fractional for group formats such as q2k). Sliding and recurrent layers add nothing.
func (s Shape) BytesPerToken(p kvq.Pair, tp int) float64 {
	var b float64
	for _, g := range s.Groups {
		switch g.Kind {
		case Full:
			b += float64(g.Count) * p.BytesPerToken(g.HeadDimK, g.HeadDimV, headsPerGPU(g.KVHeads, tp))
		case Latent:
			b += float64(g.Count) * p.K.BytesPerToken(g.LatentDim, 1)
		}
	}
	return b
}

// FixedBytes is the part of one sequence's cache that does not grow with the context once the
// context passes every window: full sliding windows and recurrent states.
func (s Shape) FixedBytes(p kvq.Pair, tp int) int64 {
	var b int64
	for _, g := range s.Groups {
		switch g.Kind {
		case Sliding:
			b += int64(g.Count) * p.Bytes(int64(g.Window), g.HeadDimK, g.HeadDimV, headsPerGPU(g.KVHeads, tp))
		case Recurrent:
			per := g.StateBytes
			if tp > 1 {
				per = ceilDiv(per, int64(tp))
			}
			b += int64(g.Count) * per
		}
	}
	return b
}

// maxWindow is the largest sliding window of the shape, 0 if none.
func (s Shape) maxWindow() int64 {
	var w int64
	for _, g := range s.Groups {
		if g.Kind == Sliding && int64(g.Window) > w {
			w = int64(g.Window)
		}
	}
	return w
}

// OverlaySlackCells is the number of spare cells the FP16 window + sinks overlay of seed 003
// allocates beyond window + sinks (its "16 slack slots": 304 KiB per layer at window 128,
// sinks 8, 2 KV heads × 256 dims).
const OverlaySlackCells = 16

// Overlay describes seed 003's FP16 window + attention sinks overlay: exact f16 copies of the
// first Sinks cells and the most recent Window cells of every attention layer, kept beside the
// quantized bulk. The zero value means no overlay.
type Overlay struct {
	Window int `json:"window"`
	Sinks  int `json:"sinks"`
}

// Enabled reports whether the overlay holds any cells.
func (o Overlay) Enabled() bool { return o.Window > 0 || o.Sinks > 0 }

// Cells is the number of cells the overlay allocates per layer: window + sinks + slack.
func (o Overlay) Cells() int64 {
	if !o.Enabled() {
		return 0
	}
	return int64(o.Window) + int64(o.Sinks) + OverlaySlackCells
}

// AppliesTo reports whether the overlay is allocated for pair p: it is pointless, and so not
// allocated, when both K and V are already stored exactly as f16 or f32.
func (o Overlay) AppliesTo(p kvq.Pair) bool {
	exact := func(f kvq.Format) bool { return f == kvq.F16 || f == kvq.F32 }
	return o.Enabled() && !(exact(p.K) && exact(p.V))
}

// OverlayBytes is the overlay's memory for one sequence on one GPU of a tp-way group: the
// f16 copies (kvq.OverlayBytes) summed over Full, Sliding and Latent layers.
func (s Shape) OverlayBytes(o Overlay, p kvq.Pair, tp int) int64 {
	if !o.AppliesTo(p) {
		return 0
	}
	cells := o.Cells()
	var b int64
	for _, g := range s.Groups {
		switch g.Kind {
		case Full, Sliding:
			b += int64(g.Count) * kvq.OverlayBytes(cells, g.HeadDimK, g.HeadDimV, headsPerGPU(g.KVHeads, tp))
		case Latent:
			b += int64(g.Count) * kvq.OverlayBytes(cells, g.LatentDim, 0, 1)
		}
	}
	return b
}

// SessionBytes is everything one sequence of ctx tokens costs on one GPU: its cache plus the
// overlay.
func (s Shape) SessionBytes(p kvq.Pair, o Overlay, ctx int64, tp int) int64 {
	return s.KVBytes(p, ctx, tp) + s.OverlayBytes(o, p, tp)
}

// MaxContext is the longest context the planner accepts, in tokens (2³⁶ ≈ 68.7 billion): far
// beyond any model, and small enough that no byte count overflows int64.
const MaxContext int64 = 1 << 36

// MaxResidentCtx is the longest context whose sessions sequences fit in budget bytes on one GPU
// (cache and overlay of every sequence), or Unbounded when the cache stops growing below the
// budget. It is 0 when not even an empty context fits (recurrent state or overlay over budget).
func (s Shape) MaxResidentCtx(p kvq.Pair, o Overlay, budget int64, sessions, tp int) int64 {
	if sessions < 1 {
		sessions = 1
	}
	n := int64(sessions)
	return s.maxFitting(func(ctx int64) bool { return n*s.SessionBytes(p, o, ctx, tp) <= budget }, p, budget, n, tp)
}

// maxFitting is the longest context that fits (fits is monotone), for n sessions growing by at
// least p's bytes per token, or Unbounded.
func (s Shape) maxFitting(fits func(int64) bool, p kvq.Pair, budget, n int64, tp int) int64 {
	if budget < 0 || !fits(0) {
		return 0
	}
	// hi is a context that does not fit. Every byte of growth is at least BytesPerToken per
	// token (group formats round up), so past budget/growth nothing fits.
	var hi int64
	if g := float64(n) * s.BytesPerToken(p, tp); g > 0 {
		hi = int64(float64(budget)/g) + 2 // +2 absorbs float rounding
		if hi > MaxContext {
			if fits(MaxContext) {
				return Unbounded
			}
			hi = MaxContext
		}
	} else {
		// Past the largest window nothing grows: the cache is bounded.
		hi = s.maxWindow()
		if fits(hi) {
			return Unbounded
		}
	}
	lo := int64(0)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
