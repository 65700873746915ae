package calc

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/kvlab/kvlab/native/kvq"
)

// AutoResident is Request.ResidentBytes's value that means "the weights on one GPU".
const AutoResident int64 = -1

// DefaultCtx is the context a request plans for when none is given, in tokens.
const DefaultCtx int64 = 32768

// DefaultPairs are the format pairs the ladder shows when none are asked for: seed 000 §1's
// rows, plus the policy ladder's floor q5_1/q4_0, in decreasing size.
func DefaultPairs() []kvq.Pair {
	return []kvq.Pair{
		{K: kvq.F16, V: kvq.F16},
		{K: kvq.Q8_0, V: kvq.Q8_0},
		{K: kvq.Q8_0, V: kvq.Q4_0},
		{K: kvq.Q5_0, V: kvq.Q5_0},
		{K: kvq.Q5_1, V: kvq.Q4_0},
		{K: kvq.Q4_0, V: kvq.Q4_0},
	}
}

// Request is one planning question. Build it with NewRequest, which fills the defaults.
type Request struct {
	// Model is the model's shape.
	Model Shape
	// Quant is the weight quantization key (see WeightQuants).
	Quant string
	// GPU is the accelerator; GPUs how many of them split the model by tensor parallelism.
	GPU  Hardware
	GPUs int
	// Ctx is the context of each session, in tokens; Sessions how many are resident at once.
	Ctx      int64
	Sessions int
	// BudgetBytes, when positive, is the KV budget per GPU stated directly; otherwise it is
	// derived from the GPU's memory, TargetBytes, ResidentBytes and ReserveBytes.
	BudgetBytes int64
	// TargetBytes, when positive, caps the memory used per GPU (seed 000's --vram-target).
	TargetBytes int64
	// ResidentBytes is the memory per GPU already taken before the KV cache, AutoResident for
	// the weights' share.
	ResidentBytes int64
	// ReserveBytes is the compute reserve per GPU.
	ReserveBytes int64
	// Pairs are the format pairs of the ladder.
	Pairs []kvq.Pair
	// Overlay is the FP16 window + sinks overlay.
	Overlay Overlay
	// Mixed, when enabled, adds a row of the position-axis mixed cache for every quantized pair.
	Mixed Mixed
	// User, when valid, is the pair the user chose for the policy to respect.
	User kvq.Pair
	// Spill are the spill model's parameters.
	Spill SpillParams
	// ChartMaxCtx, when positive, is the spill chart's right edge in tokens.
	ChartMaxCtx int64
}

// NewRequest returns a request for model on one gpu with the defaults: DefaultCtx, one session,
// the model's weights resident, DefaultReserveBytes, DefaultPairs, nominal spill parameters.
func NewRequest(model Shape, quant string, gpu Hardware) Request {
	return Request{
		Model: model, Quant: quant, GPU: gpu, GPUs: 1, Ctx: DefaultCtx, Sessions: 1,
		ResidentBytes: AutoResident, ReserveBytes: DefaultReserveBytes,
		Pairs: DefaultPairs(), Spill: DefaultSpillParams(gpu),
	}
}

// Row is one format pair of the size ladder. Bytes are per GPU.
type Row struct {
	// Pair is the format pair; Format writes it as kvq does ("q8_0", "q8_0/q4_0"), followed for
	// a mixed row by its window and sinks ("q4_0+p256+s8").
	Pair   kvq.Pair `json:"-"`
	Format string   `json:"format"`
	// Kind is "mixed" for a row of the position-axis mixed cache (KVBytes then holds its f16
	// cells too, and the overlay does not apply), "" for the pair's uniform cache.
	Kind string `json:"kind,omitempty"`
	// KiBPerToken is the cache growth per token of context of one session, in KiB.
	KiBPerToken float64 `json:"kib_per_token"`
	// VsF16 is KiBPerToken relative to f16/f16.
	VsF16 float64 `json:"vs_f16"`
	// KVBytes is one session's cache at the context, overlay excluded; KVGiB the same in GiB.
	KVBytes int64   `json:"kv_bytes"`
	KVGiB   float64 `json:"kv_gib"`
	// OverlayBytes is one session's FP16 window + sinks overlay.
	OverlayBytes int64 `json:"overlay_bytes"`
	// MaxResidentCtx is the longest context of which the requested number of sessions fit the
	// budget, in tokens, or Unbounded (−1).
	MaxResidentCtx int64 `json:"max_resident_ctx"`
	// Sessions is how many sessions at the context fit the budget.
	Sessions int64 `json:"sessions"`
	// TotalBytes is weights + the requested sessions' caches + reserve; TotalGiB the same in GiB.
	TotalBytes int64   `json:"total_bytes"`
	TotalGiB   float64 `json:"total_gib"`
	// Fits reports that the requested sessions at the context fit the budget.
	Fits bool `json:"fits"`
	// SpillBytes is the requested sessions' cache beyond the budget.
	SpillBytes int64 `json:"spill_bytes"`
	// DecodeTPS is the spill model's decode speed of one session at the context, with its
	// share of the budget resident and the rest streamed from host memory.
	DecodeTPS float64 `json:"decode_tps"`
}

// Curve is the spill model's decode speed against context for one pair.
type Curve struct {
	Format string `json:"format"`
	// MaxResidentCtx is where the tail starts to spill (Unbounded: never).
	MaxResidentCtx int64 `json:"max_resident_ctx"`
	// Points are (context, tokens/s) samples in increasing context.
	Points []SpillPoint `json:"points"`
}

// SpillRow is the spill model at one context for every pair, in the order of the ladder.
type SpillRow struct {
	Ctx    int64        `json:"ctx"`
	Points []SpillPoint `json:"points"`
}

// Report is the planner's answer to a Request. Bytes are per GPU.
type Report struct {
	Model         string `json:"model"`
	Class         string `json:"class"`
	Layers        int    `json:"layers"`
	NativeContext int64  `json:"native_context,omitempty"`
	GPU           string `json:"gpu"`
	GPUs          int    `json:"gpus"`
	VRAMBytes     int64  `json:"vram_bytes"`
	Ctx           int64  `json:"ctx"`
	Sessions      int    `json:"sessions_requested"`
	Quant         string `json:"weights_quant"`
	// WeightBytes is the weights' share per GPU; ActiveWeightBytes what one token reads.
	WeightBytes       int64       `json:"weight_bytes"`
	ActiveWeightBytes int64       `json:"active_weight_bytes"`
	Budget            Budget      `json:"budget"`
	Overlay           Overlay     `json:"overlay"`
	Mixed             Mixed       `json:"mixed"`
	Rows              []Row       `json:"ladder"`
	Spill             SpillParams `json:"spill_params"`
	Curves            []Curve     `json:"spill_curves"`
	SpillRows         []SpillRow  `json:"spill_table"`
	ChartMaxCtx       int64       `json:"chart_max_ctx"`
	Policy            Decision    `json:"policy"`
	Warnings          []string    `json:"warnings,omitempty"`
}

// Validate reports the first request value the planner cannot use, naming it.
func (r Request) Validate() error {
	if err := r.Model.Validate(); err != nil {
		return err
	}
	if _, err := LookupQuant(r.Quant); err != nil && r.Model.WeightBytes == 0 {
		return err
	}
	if err := r.GPU.Validate(); err != nil {
		return err
	}
	switch {
	case r.GPUs < 1:
		return fmt.Errorf("%w: %d GPUs: need at least 1", ErrBadInput, r.GPUs)
	case r.Ctx < 1:
		return fmt.Errorf("%w: context %d tokens: must be at least 1", ErrBadInput, r.Ctx)
	case r.Ctx > MaxContext:
		return fmt.Errorf("%w: context %d tokens: more than the planner's limit of %d", ErrBadInput, r.Ctx, MaxContext)
	case r.Sessions < 1:
		return fmt.Errorf("%w: %d sessions: need at least 1", ErrBadInput, r.Sessions)
	case r.BudgetBytes < 0:
		return fmt.Errorf("%w: KV budget %d bytes is negative", ErrBadInput, r.BudgetBytes)
	case r.TargetBytes < 0:
		return fmt.Errorf("%w: memory target %d bytes is negative", ErrBadInput, r.TargetBytes)
	case r.ResidentBytes < 0 && r.ResidentBytes != AutoResident:
		return fmt.Errorf("%w: resident memory %d bytes is negative", ErrBadInput, r.ResidentBytes)
	case r.ReserveBytes < 0:
		return fmt.Errorf("%w: compute reserve %d bytes is negative", ErrBadInput, r.ReserveBytes)
	case r.Mixed.Window < 0 || r.Mixed.Sinks < 0 || int64(r.Mixed.Window) > MaxContext || int64(r.Mixed.Sinks) > MaxContext:
		return fmt.Errorf("%w: mixed window %d / sinks %d: out of range", ErrBadInput, r.Mixed.Window, r.Mixed.Sinks)
	case r.Overlay.Window < 0 || r.Overlay.Sinks < 0:
		return fmt.Errorf("%w: overlay window %d / sinks %d: must not be negative", ErrBadInput, r.Overlay.Window, r.Overlay.Sinks)
	case r.ChartMaxCtx < 0 || r.ChartMaxCtx > MaxContext:
		return fmt.Errorf("%w: chart range %d tokens out of range", ErrBadInput, r.ChartMaxCtx)
	case len(r.Pairs) == 0:
		return fmt.Errorf("%w: no KV formats to compare", ErrBadInput)
	}
	for _, p := range r.Pairs {
		if !p.Valid() {
			return fmt.Errorf("%w: KV pair %s/%s is not valid", ErrBadInput, p.K, p.V)
		}
	}
	if r.User != (kvq.Pair{}) && !r.User.Valid() {
		return fmt.Errorf("%w: chosen KV pair %s/%s is not valid", ErrBadInput, r.User.K, r.User.V)
	}
	return r.Spill.Validate()
}

// Plan answers a request: the size ladder, the spill curves and the policy's pick.
func Plan(r Request) (Report, error) {
	if err := r.Validate(); err != nil {
		return Report{}, err
	}
	q, err := LookupQuant(r.Quant)
	if err != nil || r.Model.WeightBytes > 0 { // the shape carries its weight bytes
		q = WeightQuant{Key: "as given"}
	}
	tp := r.GPUs
	weights := ceilDiv(r.Model.WeightBytesAt(q), int64(tp))
	active := ceilDiv(r.Model.ActiveWeightBytesAt(q), int64(tp))
	rep := Report{
		Model: r.Model.Name, Class: r.Model.Class().String(), Layers: r.Model.Layers(),
		NativeContext: r.Model.NativeContext, GPU: r.GPU.Name, GPUs: tp, VRAMBytes: r.GPU.VRAMBytes,
		Ctx: r.Ctx, Sessions: r.Sessions, Quant: q.Key, WeightBytes: weights, ActiveWeightBytes: active,
		Overlay: r.Overlay, Mixed: r.Mixed, Spill: r.Spill,
	}
	if r.BudgetBytes > 0 {
		rep.Budget = GivenBudget(r.BudgetBytes)
	} else {
		resident := r.ResidentBytes
		if resident == AutoResident {
			resident = weights
		}
		rep.Budget = NewBudget(r.GPU.VRAMBytes, r.TargetBytes, resident, r.ReserveBytes)
	}
	budget := rep.Budget.KVBytes
	rep.Warnings = r.warnings(rep)

	f16 := r.Model.BytesPerToken(kvq.Pair{K: kvq.F16, V: kvq.F16}, tp)
	for _, p := range r.Pairs {
		kv := r.Model.KVBytes(p, r.Ctx, tp)
		row := r.row(Row{Pair: p, Format: p.String(), KVBytes: kv, OverlayBytes: r.Model.OverlayBytes(r.Overlay, p, tp),
			MaxResidentCtx: r.Model.MaxResidentCtx(p, r.Overlay, budget, r.Sessions, tp)}, f16, weights, budget, tp)
		row.DecodeTPS = Spill(r.Model, p, r.Overlay, r.Ctx, row.MaxResidentCtx, active, tp, r.Spill).TPS
		rep.Rows = append(rep.Rows, row)
	}
	for _, p := range r.Pairs {
		if !r.Mixed.Enabled() || (exactFormat(p.K) && exactFormat(p.V)) {
			continue
		}
		row := r.row(Row{Pair: p, Format: p.String() + r.Mixed.Spec(), Kind: "mixed",
			KVBytes:        r.Model.MixedBytes(r.Mixed, p, r.Ctx, tp),
			MaxResidentCtx: r.Model.MaxResidentCtxMixed(r.Mixed, p, budget, r.Sessions, tp)}, f16, weights, budget, tp)
		row.DecodeTPS = r.spill(row, r.Ctx, active).TPS
		rep.Rows = append(rep.Rows, row)
	}
	rep.ChartMaxCtx = r.chartMax(rep.Rows)
	for _, row := range rep.Rows {
		rep.Curves = append(rep.Curves, r.curve(row, rep.ChartMaxCtx, active))
	}
	for _, x := range spillContexts(r.Ctx, rep.ChartMaxCtx) {
		sr := SpillRow{Ctx: x}
		for _, row := range rep.Rows {
			sr.Points = append(sr.Points, r.spill(row, x, active))
		}
		rep.SpillRows = append(rep.SpillRows, sr)
	}
	rep.Policy, err = Decide(PolicyInput{
		Shape: r.Model, Ctx: r.Ctx, Sessions: r.Sessions, TP: tp, Overlay: r.Overlay,
		Budget: rep.Budget, User: r.User,
	})
	if err != nil {
		return Report{}, err
	}
	return rep, nil
}

// row completes a ladder row from its pair, format, kind, KV and overlay bytes and resident
// context: per-token size, totals, fit, sessions and spill for the request's sessions. f16 is
// f16's bytes per token (the VsF16 base), weights the resident weights, budget the KV budget.
func (r Request) row(row Row, f16 float64, weights, budget int64, tp int) Row {
	per := row.KVBytes + row.OverlayBytes
	n := int64(r.Sessions)
	bpt := r.Model.BytesPerToken(row.Pair, tp)
	row.KiBPerToken = ToKiB(bpt)
	row.KVGiB = ToGiB(row.KVBytes)
	row.TotalBytes = weights + n*per + r.ReserveBytes
	row.TotalGiB = ToGiB(row.TotalBytes)
	row.Fits = n*per <= budget
	if f16 > 0 {
		row.VsF16 = bpt / f16
	}
	if budget > 0 && per > 0 {
		row.Sessions = budget / per
	}
	if !row.Fits {
		row.SpillBytes = n*per - max(budget, 0)
	}
	return row
}

// warnings lists what the user should know about a valid request.
func (r Request) warnings(rep Report) []string {
	var w []string
	if r.Model.NativeContext > 0 && r.Ctx > r.Model.NativeContext {
		w = append(w, fmt.Sprintf("context %d tokens is past the %d the model was trained on: the plan sizes the memory, the model is not assured to work there", r.Ctx, r.Model.NativeContext))
	}
	if rep.Budget.KVBytes <= 0 {
		if rep.Budget.Given {
			w = append(w, "the KV budget is zero")
		} else {
			w = append(w, fmt.Sprintf("weights %s GiB + reserve %s GiB leave no memory for KV on %s GiB",
				FormatFixed(ToGiB(rep.Budget.ResidentBytes), 2), FormatFixed(ToGiB(rep.Budget.ReserveBytes), 2),
				FormatFixed(ToGiB(min(rep.Budget.FreeBytes, positiveOr(rep.Budget.TargetBytes, rep.Budget.FreeBytes))), 2)))
		}
	}
	if r.GPUs > 1 {
		for _, g := range r.Model.Groups {
			if (g.Kind == Full || g.Kind == Sliding) && g.KVHeads%r.GPUs != 0 {
				w = append(w, fmt.Sprintf("%d KV heads do not split evenly over %d GPUs: each GPU holds %d",
					g.KVHeads, r.GPUs, headsPerGPU(g.KVHeads, r.GPUs)))
				break
			}
		}
	}
	return w
}

func positiveOr(x, alt int64) int64 {
	if x > 0 {
		return x
	}
	return alt
}

// chartMax is the spill chart's right edge: the request's, or 1.25 × the largest of the
// context and every finite resident limit, at least 4096 tokens.
func (r Request) chartMax(rows []Row) int64 {
	if r.ChartMaxCtx > 0 {
		return r.ChartMaxCtx
	}
	m := r.Ctx
	for _, row := range rows {
		if row.MaxResidentCtx > m {
			m = row.MaxResidentCtx
		}
	}
	return min(max(int64(math.Ceil(float64(m)*1.25)), 4096), MaxContext)
}

// spillContexts are the rows of the spill table: powers of two from 4096 tokens to xmax (every
// other one when there are more than eight) and the requested context, increasing.
func spillContexts(ctx, xmax int64) []int64 {
	var xs []int64
	for x := int64(4096); x <= xmax; x *= 2 {
		xs = append(xs, x)
	}
	for len(xs) > 8 {
		var half []int64
		for i := len(xs) - 1; i >= 0; i -= 2 {
			half = append(half, xs[i])
		}
		xs = half
	}
	if !slices.Contains(xs, ctx) {
		xs = append(xs, ctx)
	}
	slices.Sort(xs)
	return xs
}

// curveSamples is the number of evenly spaced samples of a spill curve, besides the two that
// pin the cliff at the resident limit.
const curveSamples = 96

// curve samples the spill model for one row from 1/curveSamples of the range to its right edge,
// adding the resident limit and the token after it so the cliff is drawn where it is.
func (r Request) curve(row Row, xmax, active int64) Curve {
	c := Curve{Format: row.Format, MaxResidentCtx: row.MaxResidentCtx}
	var xs []int64
	for i := int64(1); i <= curveSamples; i++ {
		xs = append(xs, xmax*i/curveSamples)
	}
	if lim := row.MaxResidentCtx; lim > 0 && lim < xmax {
		xs = append(xs, lim, lim+1)
	}
	slices.Sort(xs)
	last := int64(-1)
	for _, x := range xs {
		if x <= 0 || x == last {
			continue
		}
		last = x
		c.Points = append(c.Points, r.spill(row, x, active))
	}
	return c
}

// spill is the spill model of a row at ctx: Spill, or SpillMixed for a mixed row.
func (r Request) spill(row Row, ctx, active int64) SpillPoint {
	if row.Kind == "mixed" {
		return SpillMixed(r.Model, r.Mixed, row.Pair, ctx, row.MaxResidentCtx, active, r.GPUs, r.Spill)
	}
	return Spill(r.Model, row.Pair, r.Overlay, ctx, row.MaxResidentCtx, active, r.GPUs, r.Spill)
}

func exactFormat(f kvq.Format) bool { return f == kvq.F16 || f == kvq.F32 }

// FitCalibration fits the spill model to a calibration's measurements, sizing them with the
// calibration's model and weight quantization presets and holding the device bandwidth at the
// calibration GPU's vendor figure (the runs differ too little in device bytes to fit it).
func FitCalibration(c Calibration) (FitResult, error) {
	m, err := LookupPreset(c.Model)
	if err != nil {
		return FitResult{}, err
	}
	q, err := LookupQuant(c.Quant)
	if err != nil {
		return FitResult{}, err
	}
	h, err := LookupHardware(c.GPU)
	if err != nil {
		return FitResult{}, err
	}
	return Fit(m.Shape, m.Shape.ActiveWeightBytesAt(q), c.Points, FitOptions{DeviceGBps: h.MemGBps})
}

// RowText is a ladder row written for people. The CLI's table and the page print these same
// strings, so they agree character for character.
type RowText struct {
	Format, KiBPerToken, VsF16, KVGiB, OverlayMiB string
	// MaxResidentCtx is ShortCount's form ("43.7k", "∞"); MaxResidentExact the whole number
	// (empty when unbounded); MaxResident both, as the tables print it ("43.7k (43690)", "512").
	MaxResidentCtx, MaxResidentExact, MaxResident string
	Sessions, TotalGiB, Fits, DecodeTPS           string
}

// Text formats the row: KiB/token to 4 significant digits, GiB to 2 decimals, tokens/s to 3
// significant digits.
func (r Row) Text() RowText {
	t := RowText{
		Format:         r.Format,
		KiBPerToken:    FormatSig(r.KiBPerToken, 4),
		VsF16:          FormatFixed(100*r.VsF16, 1) + "%",
		KVGiB:          FormatFixed(r.KVGiB, 2),
		OverlayMiB:     FormatFixed(ToMiB(r.OverlayBytes), 2),
		MaxResidentCtx: ShortCount(r.MaxResidentCtx),
		Sessions:       strconv.FormatInt(r.Sessions, 10),
		TotalGiB:       FormatFixed(r.TotalGiB, 2),
		Fits:           "yes",
		DecodeTPS:      FormatSig(r.DecodeTPS, 3),
	}
	t.MaxResident = t.MaxResidentCtx
	if r.MaxResidentCtx != Unbounded {
		t.MaxResidentExact = strconv.FormatInt(r.MaxResidentCtx, 10)
		if t.MaxResidentExact != t.MaxResidentCtx {
			t.MaxResident += " (" + t.MaxResidentExact + ")"
		}
	}
	if !r.Fits {
		t.Fits = "no, " + FormatFixed(ToGiB(r.SpillBytes), 2) + " GiB spills"
	}
	return t
}
