// Package planview is the planner page's logic shared by the server and the browser: it turns
// the page's form fields into a calc.Request, runs the planner, and writes the results as an
// HTML fragment with SVG charts drawn in Go. The server renders the first view with it; the
// WebAssembly calculator renders every later one with the same code, so both agree.
//
// It imports only the standard library, native/kvq and plan/calc, and avoids html/template and
// reflection-heavy packages to keep calc.wasm small; every string from outside (a GGUF file's
// model name, a form value) is escaped by esc.
package planview

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
)

// The form's field names. Empty values take the defaults of `kvlab plan`.
const (
	FieldPreset      = "preset"          // model preset key, CustomPreset, or a dropped file's key
	FieldLayers      = "layers"          // custom shape
	FieldKVHeads     = "kv_heads"        // custom shape
	FieldHeadDim     = "head_dim"        // custom shape
	FieldHeadDimV    = "head_dim_v"      // custom shape
	FieldParamsB     = "params_b"        // custom shape, billions
	FieldActiveB     = "active_params_b" // custom shape, billions
	FieldSWA         = "sliding_window"  // custom shape
	FieldGlobalEvery = "global_every"    // custom shape
	FieldWeights     = "weights"         // weight quantization key
	FieldWeightsGiB  = "weights_gib"
	FieldGPU         = "gpu"
	FieldVRAMGiB     = "vram_gib"
	FieldMemGBps     = "mem_gbps"
	FieldLinkGBps    = "link_gbps"
	FieldGPUs        = "gpus"
	FieldCtx         = "ctx"
	FieldSessions    = "sessions"
	FieldBudgetGiB   = "budget_gib"
	FieldTargetMiB   = "target_mib"
	FieldResidentMiB = "resident_mib"
	FieldReserveGiB  = "reserve_gib"
	FieldFormats     = "formats" // repeated, or one comma-separated list
	FieldKV          = "kv"      // a chosen pair, empty for auto
	FieldWindow      = "window"
	FieldSinks       = "sinks"
	FieldOverheadMs  = "overhead_ms"
	FieldPoints      = "points" // measurements to fit, one per line
)

// CustomPreset is FieldPreset's value for a shape given by the custom fields.
const CustomPreset = "custom"

// Defaults of the page, the same as `kvlab plan`'s.
const (
	DefaultPreset = "qwen2.5-14b-1m"
	DefaultGPU    = "rtx-3090"
)

var knownFields = map[string]bool{}

func init() {
	for _, f := range []string{FieldPreset, FieldLayers, FieldKVHeads, FieldHeadDim, FieldHeadDimV, FieldParamsB,
		FieldActiveB, FieldSWA, FieldGlobalEvery, FieldWeights, FieldWeightsGiB, FieldGPU, FieldVRAMGiB, FieldMemGBps,
		FieldLinkGBps, FieldGPUs, FieldCtx, FieldSessions, FieldBudgetGiB, FieldTargetMiB, FieldResidentMiB,
		FieldReserveGiB, FieldFormats, FieldKV, FieldWindow, FieldSinks, FieldOverheadMs, FieldPoints} {
		knownFields[f] = true
	}
}

// Result is one computed view: the report and, when measurements were given, the fit that set
// the spill parameters.
type Result struct {
	Report calc.Report
	Fit    *calc.FitResult
	// Request is what the report answers; Preset the preset key it was made for ("" for a
	// custom shape or a dropped file).
	Request calc.Request
	Preset  string
}

// Values are form fields by name, as url.Values holds them (a url.Values converts without a
// copy). The package takes this plain map so that calc.wasm need not link net/url.
type Values = map[string][]string

// form reads typed values from the fields, keeping the first error, which names the field.
type form struct {
	v   Values
	err error
}

func (f *form) str(name string) string {
	if vs := f.v[name]; len(vs) > 0 {
		return strings.TrimSpace(vs[0])
	}
	return ""
}

func (f *form) fail(name string, err error) {
	if f.err == nil {
		f.err = fmt.Errorf("%s: %w", name, err)
	}
}

// num reads a float field; ok is false when it is empty or bad. It rejects NaN, ±Inf and values
// below min.
func (f *form) num(name string, min float64) (float64, bool) {
	s := f.str(name)
	if s == "" {
		return 0, false
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x != x || x > 1e18 || x < -1e18 {
		f.fail(name, fmt.Errorf("%w: %q is not a number", calc.ErrBadInput, s))
		return 0, false
	}
	if x < min {
		f.fail(name, fmt.Errorf("%w: %s is below %g", calc.ErrBadInput, s, min))
		return 0, false
	}
	return x, true
}

// integer reads an int field in [min, 1<<31).
func (f *form) integer(name string, min int) (int, bool) {
	s := f.str(name)
	if s == "" {
		return 0, false
	}
	x, err := strconv.Atoi(s)
	if err != nil || x >= 1<<31 {
		f.fail(name, fmt.Errorf("%w: %q is not a whole number", calc.ErrBadInput, s))
		return 0, false
	}
	if x < min {
		f.fail(name, fmt.Errorf("%w: %d is below %d", calc.ErrBadInput, x, min))
		return 0, false
	}
	return x, true
}

// Compute parses the form values and runs the planner. files are shapes read from dropped GGUF
// files, by their FieldPreset key. Errors name the field at fault.
func Compute(v Values, files map[string]calc.Shape) (Result, error) {
	for k := range v {
		if !knownFields[k] {
			return Result{}, fmt.Errorf("%w: unknown field %q", calc.ErrBadInput, k)
		}
	}
	f := &form{v: v}
	shape, quant := f.model(files)
	hw := f.hardware()
	if f.err != nil {
		return Result{}, f.err
	}
	r := calc.NewRequest(shape, quant, hw)
	if n, ok := f.integer(FieldGPUs, 1); ok {
		r.GPUs = n
	}
	if s := f.str(FieldCtx); s != "" {
		n, err := calc.ParseTokens(s)
		if err != nil {
			f.fail(FieldCtx, err)
		} else if n < 1 {
			f.fail(FieldCtx, fmt.Errorf("%w: %d tokens: the context must be at least 1 token", calc.ErrBadInput, n))
		}
		r.Ctx = n
	}
	if n, ok := f.integer(FieldSessions, 1); ok {
		r.Sessions = n
	}
	if x, ok := f.num(FieldBudgetGiB, 0); ok && x > 0 {
		r.BudgetBytes = calc.GiBBytes(x)
	}
	if x, ok := f.num(FieldTargetMiB, 0); ok {
		r.TargetBytes = calc.MiBBytes(x)
	}
	if x, ok := f.num(FieldResidentMiB, 0); ok {
		r.ResidentBytes = calc.MiBBytes(x)
	}
	if x, ok := f.num(FieldReserveGiB, 0); ok {
		r.ReserveBytes = calc.GiBBytes(x)
	}
	if list := strings.Join(v[FieldFormats], ","); strings.Trim(list, ", ") != "" {
		pairs, err := parseFormats(list)
		if err != nil {
			f.fail(FieldFormats, err)
		}
		r.Pairs = pairs
	}
	if s := f.str(FieldKV); s != "" && s != "auto" {
		p, err := kvq.ParsePair(s)
		if err != nil {
			f.fail(FieldKV, err)
		}
		r.User = p
	}
	if n, ok := f.integer(FieldWindow, 0); ok {
		r.Overlay.Window = n
	}
	if n, ok := f.integer(FieldSinks, 0); ok {
		r.Overlay.Sinks = n
	}
	if x, ok := f.num(FieldOverheadMs, 0); ok {
		r.Spill.OverheadMs = x
	}
	var fit *calc.FitResult
	if s := f.str(FieldPoints); s != "" && f.err == nil {
		pts, err := calc.ParseMeasurements(s)
		if err != nil {
			f.fail(FieldPoints, err)
		} else {
			q, _ := calc.LookupQuant(quant)
			res, err := calc.Fit(shape, shape.ActiveWeightBytesAt(q), pts, calc.FitOptions{})
			if err != nil {
				f.fail(FieldPoints, err)
			} else {
				fit = &res
				r.Spill = res.Params
			}
		}
	}
	if f.err != nil {
		return Result{}, f.err
	}
	rep, err := calc.Plan(r)
	if err != nil {
		return Result{}, err
	}
	preset := f.str(FieldPreset)
	if preset == "" {
		preset = DefaultPreset
	}
	if _, err := calc.LookupPreset(preset); err != nil {
		preset = ""
	}
	return Result{Report: rep, Fit: fit, Request: r, Preset: preset}, nil
}

// model resolves the shape and weight quantization.
func (f *form) model(files map[string]calc.Shape) (calc.Shape, string) {
	key := f.str(FieldPreset)
	if key == "" {
		key = DefaultPreset
	}
	quant := f.str(FieldWeights)
	var s calc.Shape
	switch {
	case files[key].Layers() > 0:
		s = files[key]
		if quant == "" {
			quant = "q8_0" // unused: a file's weight bytes are exact
		}
	case strings.HasPrefix(key, "file:"):
		f.fail(FieldPreset, errors.New("that model file is no longer loaded: drop it on the page again"))
		return s, quant
	case key == CustomPreset:
		layers, _ := f.integer(FieldLayers, 1)
		heads, _ := f.integer(FieldKVHeads, 1)
		dk, _ := f.integer(FieldHeadDim, 1)
		if f.err == nil && (layers == 0 || heads == 0 || dk == 0) {
			f.fail(FieldLayers, fmt.Errorf("%w: a custom shape needs layers, KV heads and head dim", calc.ErrBadInput))
			return s, quant
		}
		dv, ok := f.integer(FieldHeadDimV, 1)
		if !ok {
			dv = dk
		}
		params, _ := f.num(FieldParamsB, 0)
		active, _ := f.num(FieldActiveB, 0)
		window, _ := f.integer(FieldSWA, 0)
		every, _ := f.integer(FieldGlobalEvery, 0)
		s = calc.Shape{Name: fmt.Sprintf("custom %d×%d×%d", layers, heads, dk),
			Params: int64(params * 1e9), ActiveParams: int64(active * 1e9),
			Groups: CustomGroups(layers, heads, dk, dv, window, every)}
		if quant == "" {
			quant = "q4_k_m"
		}
	default:
		p, err := calc.LookupPreset(key)
		if err != nil {
			f.fail(FieldPreset, err)
			return s, quant
		}
		s = p.Shape
		if quant == "" {
			quant = p.Quant
		}
	}
	if _, err := calc.LookupQuant(quant); err != nil {
		f.fail(FieldWeights, err)
	}
	if x, ok := f.num(FieldWeightsGiB, 0); ok && x > 0 {
		s.WeightBytes, s.ActiveWeightBytes = calc.GiBBytes(x), 0
	}
	return s, quant
}

// CustomGroups lays out a custom shape: all full attention, or sliding-window layers of window
// tokens with every globalEvery-th layer full (none when globalEvery is 0).
func CustomGroups(layers, heads, dk, dv, window, globalEvery int) []calc.LayerGroup {
	if window <= 0 {
		return []calc.LayerGroup{{Count: layers, Kind: calc.Full, KVHeads: heads, HeadDimK: dk, HeadDimV: dv}}
	}
	global := 0
	if globalEvery > 0 {
		global = layers / globalEvery
	}
	var g []calc.LayerGroup
	if global > 0 {
		g = append(g, calc.LayerGroup{Count: global, Kind: calc.Full, KVHeads: heads, HeadDimK: dk, HeadDimV: dv})
	}
	if layers > global {
		g = append(g, calc.LayerGroup{Count: layers - global, Kind: calc.Sliding, KVHeads: heads, HeadDimK: dk, HeadDimV: dv, Window: window})
	}
	return g
}

// hardware resolves the GPU and its overrides.
func (f *form) hardware() calc.Hardware {
	key := f.str(FieldGPU)
	if key == "" {
		key = DefaultGPU
	}
	h, err := calc.LookupHardware(key)
	if err != nil {
		f.fail(FieldGPU, err)
		return h
	}
	if x, ok := f.num(FieldVRAMGiB, 0); ok && x > 0 {
		h.VRAMBytes = calc.GiBBytes(x)
	}
	if x, ok := f.num(FieldMemGBps, 0); ok && x > 0 {
		h.MemGBps = x
	}
	if x, ok := f.num(FieldLinkGBps, 0); ok && x > 0 {
		h.LinkGBps = x
	}
	return h
}

// MaxFormats is the most distinct formats a plan compares: every format and useful pair
// `kvlab formats` lists. Each costs a row of the report, so the list is bounded by it rather
// than by the body size.
var MaxFormats = len(kvq.Formats()) + len(kvq.UsefulPairs)

// parseFormats reads a comma-separated format list, dropping repeats, refusing more than
// MaxFormats distinct formats (and a list far longer than that before parsing it).
func parseFormats(list string) ([]kvq.Pair, error) {
	if n := strings.Count(list, ","); n > 4*MaxFormats {
		return nil, fmt.Errorf("%w: %d formats, at most %d", calc.ErrBadInput, n+1, MaxFormats)
	}
	pairs, err := kvq.ParsePairs(list)
	if err != nil {
		return nil, err
	}
	out := pairs[:0]
	for _, p := range pairs {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) > MaxFormats {
		return nil, fmt.Errorf("%w: %d distinct formats, at most %d", calc.ErrBadInput, len(out), MaxFormats)
	}
	return out, nil
}
