// Package ggufshape turns a GGUF file's header into the planner's model shape: the layers (full
// attention, sliding window, recurrent state, latent attention), their KV heads and head dims,
// and the exact weight bytes from the tensor infos. It reads only the header, so it works on a
// prefix of the file; it compiles to js/wasm, where the page hands it a dropped file's slices.
package ggufshape

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/plan/calc"
)

// ErrUnsupported reports a GGUF file whose architecture the planner cannot size.
var ErrUnsupported = errors.New("ggufshape: unsupported model layout")

// Read parses the GGUF header from r (size is the whole file's length) and returns the shape.
func Read(r io.ReaderAt, size int64) (calc.Shape, error) {
	f, err := gguf.Read(r, size)
	if err != nil {
		return calc.Shape{}, err
	}
	return FromFile(f)
}

// swaPatterns are the architectures whose sliding-window layout llama.cpp fixes in code rather
// than in metadata: layer il slides when il mod n < n − 1 (every n-th layer is global).
var swaPatterns = map[string]int{"gemma2": 2, "gemma3": 6, "cohere2": 4}

// header wraps a parsed file with per-architecture key lookups.
type header struct {
	f    *gguf.File
	arch string
}

func (h header) key(k string) string { return h.arch + "." + k }

// maxValue bounds the integers the planner reads from a header (layer counts, head counts,
// dimensions, state sizes): a larger value is treated as missing, so no product overflows.
const maxValue = 1 << 40

// uint reads a non-negative integer scalar.
func (h header) uint(k string) (int64, bool) {
	v, ok := h.f.Uint(h.key(k))
	if !ok || v > maxValue {
		return 0, false
	}
	return int64(v), true
}

// perLayer reads a key that is either one scalar for every layer or an array with one value per
// layer (llama.cpp writes head_count_kv per layer for models whose layers differ, and the
// sliding-window pattern as one bool per layer). Booleans read as 0 and 1.
func (h header) perLayer(k string, n int) ([]int64, bool, error) {
	v, ok := h.f.Value(h.key(k))
	if !ok {
		return nil, false, nil
	}
	var out []int64
	switch a := v.(type) {
	case []int32:
		out = widen(a)
	case []uint32:
		out = widen(a)
	case []int64:
		out = widen(a)
	case []uint64:
		out = make([]int64, len(a))
		for i, x := range a {
			out[i] = int64(min(x, maxValue+1))
		}
	case []int16:
		out = widen(a)
	case []uint16:
		out = widen(a)
	case []int8:
		out = widen(a)
	case []uint8:
		out = widen(a)
	case []bool:
		out = make([]int64, len(a))
		for i, x := range a {
			if x {
				out[i] = 1
			}
		}
	case bool:
		out = make([]int64, n)
		if a {
			for i := range out {
				out[i] = 1
			}
		}
	default:
		x, ok := h.f.Int(h.key(k))
		if !ok {
			return nil, false, fmt.Errorf("%s: a %T is neither a number nor an array of numbers", h.key(k), v)
		}
		out = make([]int64, n)
		for i := range out {
			out[i] = x
		}
	}
	if len(out) != n {
		return nil, false, fmt.Errorf("%s: %d values for %d layers", h.key(k), len(out), n)
	}
	for i, x := range out {
		if x < 0 || x > maxValue {
			return nil, false, fmt.Errorf("%s: layer %d: value %d out of range", h.key(k), i, x)
		}
	}
	return out, true, nil
}

// widen converts an array of integers to int64.
func widen[T int8 | uint8 | int16 | uint16 | int32 | uint32 | int64](a []T) []int64 {
	out := make([]int64, len(a))
	for i, x := range a {
		out[i] = int64(x)
	}
	return out
}

// FromFile maps a parsed GGUF header to the planner's shape.
func FromFile(f *gguf.File) (calc.Shape, error) {
	arch := f.Architecture()
	if arch == "" {
		return calc.Shape{}, fmt.Errorf("%w: no general.architecture key", ErrUnsupported)
	}
	h := header{f: f, arch: arch}
	fail := func(format string, a ...any) (calc.Shape, error) {
		return calc.Shape{}, fmt.Errorf("%w: %s: %s", ErrUnsupported, arch, fmt.Sprintf(format, a...))
	}
	nl, ok := h.uint("block_count")
	if !ok || nl < 1 || nl > 1<<16 {
		return fail("%s missing or out of range", h.key("block_count"))
	}
	n := int(nl)
	s := calc.Shape{Name: arch}
	if name, ok := f.String("general.name"); ok && strings.TrimSpace(name) != "" {
		s.Name = strings.TrimSpace(name)
	}
	if ctx, ok := h.uint("context_length"); ok {
		s.NativeContext = ctx
	}

	kvHeads, hasKV, err := h.perLayer("attention.head_count_kv", n)
	if err != nil {
		return fail("%v", err)
	}
	heads, hasHeads, err := h.perLayer("attention.head_count", n)
	if err != nil {
		return fail("%v", err)
	}
	if !hasKV {
		if !hasHeads {
			return fail("neither %s nor %s", h.key("attention.head_count_kv"), h.key("attention.head_count"))
		}
		kvHeads = heads // no GQA key: one KV head per query head
	}
	embd, _ := h.uint("embedding_length")
	defaultDim := func(il int) int64 {
		if hasHeads && heads[il] > 0 && embd > 0 {
			return embd / heads[il]
		}
		return 0
	}
	keyLen, hasK := h.uint("attention.key_length")
	valLen, hasV := h.uint("attention.value_length")
	keyLenSWA, hasKS := h.uint("attention.key_length_swa")
	valLenSWA, hasVS := h.uint("attention.value_length_swa")

	// Latent attention (DeepSeek-V2/V3, Kimi): one row of kv_lora_rank + rope dims per cell.
	if rank, ok := h.uint("attention.kv_lora_rank"); ok && rank > 0 {
		rope, _ := h.uint("rope.dimension_count")
		s.Groups = []calc.LayerGroup{{Count: n, Kind: calc.Latent, LatentDim: int(rank + rope)}}
		return finish(f, h, s)
	}

	// Which layers slide.
	sliding := make([]bool, n)
	window, hasWindow := h.uint("attention.sliding_window")
	pattern, hasPattern, err := h.perLayer("attention.sliding_window_pattern", n)
	if err != nil {
		return fail("%v", err)
	}
	if arch == "gemma2" && !hasWindow {
		window, hasWindow = 4096, true // llama.cpp's default for gemma2
	}
	switch {
	case arch == "gemma3" && (!hasWindow || window == 0):
		// llama.cpp runs a gemma3 file without a window with full attention on every layer
		// (model/gemma3.go the same).
	case hasPattern && isArray(f, h.key("attention.sliding_window_pattern")):
		for il := range sliding {
			sliding[il] = pattern[il] != 0
		}
	case hasPattern && pattern[0] > 0:
		p := pattern[0]
		for il := range sliding {
			sliding[il] = int64(il)%p < p-1
		}
	case swaPatterns[arch] > 0:
		p := int64(swaPatterns[arch])
		for il := range sliding {
			sliding[il] = int64(il)%p < p-1
		}
	case arch == "phi3":
		// llama.cpp masks every phi3 layer to its window, defaulting it for the Phi-3 files
		// written without the key (model/phi3.go runs the same).
		if !hasWindow {
			ctx, _ := h.uint("context_length")
			kvh, _ := h.uint("attention.head_count_kv")
			switch {
			case (n == 32 || n == 40) && ctx == 4096:
				window, hasWindow = 2047, true
			case n == 32 && kvh == 32 && ctx == 131072:
				window, hasWindow = 262144, true
			case n == 40 && ctx == 131072:
				window, hasWindow = 131072, true
			}
		}
		for il := range sliding {
			sliding[il] = hasWindow && window > 0
		}
	case hasWindow:
		s.Notes = append(s.Notes, fmt.Sprintf("%s = %d ignored: llama.cpp runs %s with full attention", h.key("attention.sliding_window"), window, arch))
	}
	anySliding := slices.Contains(sliding, true)
	if anySliding && (!hasWindow || window < 1) {
		return fail("sliding-window layers without %s", h.key("attention.sliding_window"))
	}

	// Which layers are recurrent: those attention.recurrent_layers marks (one bool per layer),
	// else the hybrids with a full-attention interval (Qwen3-Next, Qwen3.5: llama.cpp takes 4
	// when the key is absent), layers without KV heads in models that carry SSM sizes (Jamba,
	// Granite hybrid, Nemotron-H), or every layer of a pure SSM (Mamba).
	recurrent := make([]bool, n)
	state, hasState, err := ssmStateBytes(h)
	if err != nil {
		return fail("%v", err)
	}
	flags, hasFlags, err := h.perLayer("attention.recurrent_layers", n)
	if err != nil {
		return fail("%v", err)
	}
	interval, hasInterval := h.uint("full_attention_interval")
	if !hasInterval && hasState && intervalHybrids[arch] {
		interval, hasInterval = 4, true
	}
	if hasFlags {
		if !hasState {
			return fail("%s without SSM state sizes", h.key("attention.recurrent_layers"))
		}
		for il := range recurrent {
			recurrent[il] = flags[il] != 0
		}
	} else if hasInterval && interval > 0 {
		if !hasState {
			return fail("%s without SSM state sizes", h.key("full_attention_interval"))
		}
		for il := range recurrent {
			recurrent[il] = (int64(il)+1)%interval != 0
		}
	} else if hasState {
		for il := range recurrent {
			recurrent[il] = kvHeads[il] == 0
		}
	}

	// The hybrids' multi-token-prediction blocks (nextn_predict_layers, appended after the
	// trunk) hold neither KV nor state in llama.cpp's main context: its qwen3.5 memory filters
	// keep only the trunk's layers.
	trunk := n
	if nextn, ok := h.uint("nextn_predict_layers"); ok && intervalHybrids[arch] && hasState {
		if nextn >= int64(n) {
			return fail("%s = %d, not below %s = %d", h.key("nextn_predict_layers"), nextn, h.key("block_count"), n)
		}
		trunk = n - int(nextn)
	}
	layers := make([]calc.LayerGroup, 0, n)
	for il := 0; il < trunk; il++ {
		if recurrent[il] {
			layers = append(layers, calc.LayerGroup{Count: 1, Kind: calc.Recurrent, StateBytes: state})
			continue
		}
		if kvHeads[il] == 0 {
			return fail("layer %d has no KV heads and the file has no SSM state sizes", il)
		}
		dk, dv := keyLen, valLen
		if !hasK {
			dk = defaultDim(il)
		}
		if !hasV {
			dv = dk
		}
		g := calc.LayerGroup{Count: 1, Kind: calc.Full, KVHeads: int(kvHeads[il])}
		if sliding[il] {
			g.Kind, g.Window = calc.Sliding, int(window)
			if hasKS {
				dk = keyLenSWA
			}
			if hasVS {
				dv = valLenSWA
			} else if hasKS {
				dv = dk
			}
		}
		if dk <= 0 || dv <= 0 {
			return fail("layer %d: no head dimension (%s missing and no %s / head_count)", il, h.key("attention.key_length"), h.key("embedding_length"))
		}
		g.HeadDimK, g.HeadDimV = int(dk), int(dv)
		layers = append(layers, g)
	}
	s.Groups = merge(layers)
	return finish(f, h, s)
}

// intervalHybrids are the architectures whose layers alternate recurrent and full attention
// by full_attention_interval, which llama.cpp defaults to 4 (every fourth layer full).
var intervalHybrids = map[string]bool{"qwen3next": true, "qwen35": true, "qwen35moe": true}

// isArray reports whether the metadata value of key is an array.
func isArray(f *gguf.File, key string) bool {
	v, _ := f.Value(key)
	switch v.(type) {
	case []bool, []int32, []uint32, []int64, []uint64, []int16, []uint16, []int8, []uint8:
		return true
	}
	return false
}

// ssmStateBytes is the f32 recurrent state of one SSM layer as llama.cpp allocates it: the
// causal-conv tail (d_conv − 1) × (d_inner + 2 · n_group · d_state) plus the SSM state
// d_state × d_inner.
func ssmStateBytes(h header) (int64, bool, error) {
	inner, ok := h.uint("ssm.inner_size")
	if !ok {
		return 0, false, nil
	}
	conv, ok1 := h.uint("ssm.conv_kernel")
	st, ok2 := h.uint("ssm.state_size")
	if !ok1 || !ok2 || conv < 1 {
		return 0, false, fmt.Errorf("%s without %s and %s", h.key("ssm.inner_size"), h.key("ssm.conv_kernel"), h.key("ssm.state_size"))
	}
	groups, _ := h.uint("ssm.group_count")
	const f32 = 4
	size := func(c, i, g, s int64) float64 {
		return f32 * (float64(c-1)*(float64(i)+2*float64(g)*float64(s)) + float64(s)*float64(i))
	}
	if size(conv, inner, groups, st) > float64(calc.MaxStateBytes) {
		return 0, false, fmt.Errorf("SSM sizes (conv %d, inner %d, state %d, groups %d) give a state beyond %d bytes", conv, inner, st, groups, calc.MaxStateBytes)
	}
	return f32 * ((conv-1)*(inner+2*groups*st) + st*inner), true, nil
}

// merge collapses identical layers into groups, keeping first-seen order.
func merge(layers []calc.LayerGroup) []calc.LayerGroup {
	var out []calc.LayerGroup
	for _, l := range layers {
		found := false
		for i := range out {
			o := out[i]
			o.Count = l.Count
			if o == l {
				out[i].Count += l.Count
				found = true
				break
			}
		}
		if !found {
			out = append(out, l)
		}
	}
	return out
}

// finish adds the weights from the tensor infos and validates the shape. Expert tensors
// (names containing "_exps") count toward the bytes read per token in proportion
// expert_used_count / expert_count.
func finish(f *gguf.File, h header, s calc.Shape) (calc.Shape, error) {
	experts, _ := h.uint("expert_count")
	used, _ := h.uint("expert_used_count")
	var total, active, params int64
	for _, t := range f.Tensors() {
		b := int64(t.Bytes())
		total += b
		params += int64(t.Elements())
		if experts > 0 && used > 0 && used <= experts && strings.Contains(t.Name, "_exps") {
			active += b * used / experts
		} else {
			active += b
		}
	}
	s.WeightBytes, s.ActiveWeightBytes, s.Params = total, active, params
	if total == 0 {
		s.Notes = append(s.Notes, "the header lists no tensors: weights count as 0 bytes")
	}
	if err := s.Validate(); err != nil {
		return calc.Shape{}, fmt.Errorf("%w: %s: %w", ErrUnsupported, h.arch, err)
	}
	return s, nil
}
