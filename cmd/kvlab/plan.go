package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/kvlab/kvlab/native/hf"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/ggufshape"
	"github.com/kvlab/kvlab/plan/launch"
	"github.com/kvlab/kvlab/plan/planview"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// planFlags are the flags of `kvlab plan`.
type planFlags struct {
	preset, model                      string
	layers, kvHeads, headDim, headDimV int
	swaWindow, globalEvery             int
	paramsB, activeB                   float64
	quant                              string
	weightsGiB                         float64

	gpu                        string
	vramGiB, memGBps, linkGBps float64
	gpus                       int
	ctx                        tokens
	sessions                   int
	budgetGiB, reserveGiB      float64
	targetMiB, residentMiB     float64
	formats, kv                string
	window, sinks              int
	recent, recentSinks        int
	overheadMs                 float64
	fitFile                    string
	fit                        *planFit // --fit's measurements and, after request, the fit
	chartMax                   tokens
	asJSON, listPresets, calib bool
	emit                       string
}

// tokens is a token count flag that accepts k (×1024) and M (×1024²) suffixes: 32k = 32768.
type tokens int64

func (t *tokens) String() string { return strconv.FormatInt(int64(*t), 10) }
func (t *tokens) Type() string   { return "tokens" }
func (t *tokens) Set(s string) error {
	n, err := calc.ParseTokens(s)
	if err != nil {
		return err
	}
	*t = tokens(n)
	return nil
}

var _ pflag.Value = (*tokens)(nil)

func newPlanCmd() *cobra.Command {
	f := planFlags{ctx: tokens(calc.DefaultCtx)}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Size ladder, spill cliff and auto KV-tier pick for a model on a GPU",
		Long: `Plan a long-context deployment: for a model, a GPU (or several splitting the KV heads by
tensor parallelism) and a context length, print

  the size ladder   for each K/V format pair: KiB of KV per token of context, the KV of one
                    session at --ctx, the longest context that stays resident in the KV budget,
                    how many sessions of --ctx fit, and the total (weights + KV + reserve);
  the spill table   predicted decode tokens/s against context: past the resident limit the KV
                    tail lives in host memory and streams over the host link every token
                    (seconds/token = device bytes / device GB/s + tail bytes / link GB/s + overhead);
  the policy pick   the auto KV tier: the least compression of f16 → q8_0 → q8_0/q4_0 →
                    q5_1/q4_0 whose whole cache fits, the floor if none does, a --kv choice kept.

The model is a preset (--list-presets), a GGUF file (--model, only its header is read), or a
custom shape (--layers, --kv-heads, --head-dim, …). The KV budget per GPU is --budget-gib when
given, else min(VRAM, --vram-target-mib) − resident (the weights) − reserve (1.5 GiB).

Sizes: KiB, MiB and GiB are binary (1024-based); bandwidths are GB/s (1e9 bytes per second).
Context counts accept k and M suffixes (32k = 32768, 1M = 1048576).`,
		Example: `  kvlab plan --preset qwen2.5-14b-1m --budget-gib 8
  kvlab plan --preset qwen2.5-14b-1m --gpu rtx-6000-blackwell --ctx 32768 --vram-target-mib 19400 --resident-mib 15136
  kvlab plan --preset llama-3.1-70b --gpu h100 --gpus 2 --ctx 128k --sessions 4 --json
  kvlab plan --model ./Qwen3-4B-Q4_K_M.gguf --gpu rtx-4090 --ctx 64k --window 256 --sinks 8
  kvlab plan --preset qwen2.5-14b-1m --gpu rtx-3090 --ctx 131072 --recent 256 --recent-sinks 8
  kvlab plan --layers 32 --kv-heads 8 --head-dim 128 --params-b 8 --vram-gib 24 --ctx 100000
  kvlab plan --preset llama-3.1-8b --gpu rtx-4090 --ctx 131072 --emit vllm
  kvlab plan --calibrate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if f.listPresets {
				return listPresets(out, f.asJSON)
			}
			if f.calib {
				return printCalibration(out, f.asJSON)
			}
			req, err := f.request(cmd.Flags())
			if err != nil {
				return err
			}
			rep, err := calc.Plan(req)
			if err != nil {
				return err
			}
			if f.emit != "" {
				return f.writeLaunch(out, req, rep)
			}
			if f.asJSON {
				return writeJSON(out, planJSON{Report: rep, Choice: rep.Policy.Format, Reason: rep.Policy.Reason, Fit: f.fit.summary()})
			}
			if err := writePlan(out, rep); err != nil {
				return err
			}
			return f.fit.write(out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.preset, "preset", "", "model preset `NAME` (see --list-presets; default qwen2.5-14b-1m)")
	fl.StringVar(&f.model, "model", "", "plan for the model in this GGUF `FILE` (reads only its header)")
	fl.IntVar(&f.layers, "layers", 0, "custom shape: number of layers")
	fl.IntVar(&f.kvHeads, "kv-heads", 0, "custom shape: KV heads per layer")
	fl.IntVar(&f.headDim, "head-dim", 0, "custom shape: values per K head (and V head unless --head-dim-v)")
	fl.IntVar(&f.headDimV, "head-dim-v", 0, "custom shape: values per V head (default --head-dim)")
	fl.IntVar(&f.swaWindow, "sliding-window", 0, "custom shape: sliding-window length in tokens for the local layers")
	fl.IntVar(&f.globalEvery, "global-every", 0, "custom shape with --sliding-window: every N-th layer is full attention (0: none)")
	fl.Float64Var(&f.paramsB, "params-b", 0, "custom shape: total weights in billions")
	fl.Float64Var(&f.activeB, "active-params-b", 0, "custom shape: weights read per token in billions (mixture of experts)")
	fl.StringVar(&f.quant, "weights", "", "weight quantization `QUANT`: f16, bf16, q8_0, q6_k, q5_k_m, q4_k_m, q4_0 (default: the preset's)")
	fl.Float64Var(&f.weightsGiB, "weights-gib", 0, "weights size in GiB, overriding parameters × bits per weight")
	fl.StringVar(&f.gpu, "gpu", "", "GPU preset `NAME` (see --list-presets; default rtx-3090)")
	fl.Float64Var(&f.vramGiB, "vram-gib", 0, "memory per GPU in GiB (overrides the preset's)")
	fl.Float64Var(&f.memGBps, "mem-gbps", 0, "device memory bandwidth in GB/s (overrides the preset's)")
	fl.Float64Var(&f.linkGBps, "link-gbps", 0, "host-link bandwidth in GB/s (overrides the preset's)")
	fl.IntVar(&f.gpus, "gpus", 1, "GPUs splitting the KV heads and weights by tensor parallelism")
	fl.Var(&f.ctx, "ctx", "context per session in tokens (32768, 32k, 1M)")
	fl.IntVar(&f.sessions, "sessions", 1, "sessions resident at once, each at --ctx")
	fl.Float64Var(&f.budgetGiB, "budget-gib", 0, "KV budget per GPU in GiB (default: derived from VRAM, weights and reserve)")
	fl.Float64Var(&f.targetMiB, "vram-target-mib", 0, "cap on the memory used per GPU in MiB (a server's memory target)")
	fl.Float64Var(&f.residentMiB, "resident-mib", -1, "memory per GPU already taken before the KV cache, in MiB (default: the weights)")
	fl.Float64Var(&f.reserveGiB, "reserve-gib", calc.ToGiB(calc.DefaultReserveBytes), "compute reserve per GPU in GiB")
	fl.StringVar(&f.formats, "formats", "", "comma-separated `LIST` of K/V pairs for the ladder (default f16,q8_0,q8_0/q4_0,q5_0,q5_1/q4_0,q4_0)")
	fl.StringVar(&f.kv, "kv", "", "a `K/V` pair you chose: the policy keeps it and reports whether it fits")
	fl.IntVar(&f.window, "window", 0, "FP16 overlay: most recent cells kept exact (kvlab run --kv-window)")
	fl.IntVar(&f.sinks, "sinks", 0, "FP16 overlay: first cells kept exact (attention sinks)")
	fl.IntVar(&f.recent, "recent", 0, "also a mixed row per quantized pair: the most recent N cells only in f16, the rest in the pair (kvlab run --kv-recent)")
	fl.IntVar(&f.recentSinks, "recent-sinks", 0, "the mixed rows' f16 sink cells")
	fl.Float64Var(&f.overheadMs, "overhead-ms", 0, "spill model: fixed cost per decoded token in ms")
	fl.StringVar(&f.fitFile, "fit", "", "fit the spill model to the measurements in `FILE`: the JSON of kvlab bench spill --json (its model is the plan's unless another is given), or CSV lines format,ctx,resident_cells,tokens_per_s")
	fl.Var(&f.chartMax, "chart-max", "spill table: right edge in tokens (default: 1.25 × the largest resident limit)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document")
	fl.BoolVar(&f.listPresets, "list-presets", false, "list the model, GPU and weight presets and exit")
	fl.StringVar(&f.emit, "emit", "", "print the plan as another engine's command line instead: `ENGINE` llama.cpp (llama-server) or vllm (vllm serve), with what it cannot express as # comments")
	fl.BoolVar(&f.calib, "calibrate", false, "fit the spill model to a measured spill cliff (a 14B model on a 96 GB card limited to 24 GB) and show how close it lands")
	return cmd
}

// planJSON is the --json document: the report with the policy's choice and reason on top.
type planJSON struct {
	calc.Report
	Choice string `json:"choice"`
	Reason string `json:"reason"`
	// Fit is --fit's calibration: the spill model before and after, point by point.
	Fit *planFitJSON `json:"spill_fit,omitempty"`
}

// request builds the planner request from the flags, naming the flag at fault in errors.
func (f *planFlags) request(fl *pflag.FlagSet) (calc.Request, error) {
	if f.fitFile != "" {
		fit, err := readFit(f.fitFile)
		if err != nil {
			return calc.Request{}, err
		}
		f.fit = fit
	}
	shape, quant, err := f.shape(fl)
	if err != nil {
		return calc.Request{}, err
	}
	hw, err := f.hardware(fl)
	if err != nil {
		return calc.Request{}, err
	}
	r := calc.NewRequest(shape, quant, hw)
	if f.gpus < 1 {
		return r, fmt.Errorf("--gpus %d: need at least 1 GPU", f.gpus)
	}
	r.GPUs = f.gpus
	if f.ctx < 1 {
		return r, fmt.Errorf("--ctx %d: the context must be at least 1 token", f.ctx)
	}
	r.Ctx = int64(f.ctx)
	if f.sessions < 1 {
		return r, fmt.Errorf("--sessions %d: need at least 1", f.sessions)
	}
	r.Sessions = f.sessions
	if fl.Changed("budget-gib") {
		if f.budgetGiB <= 0 {
			return r, fmt.Errorf("--budget-gib %g: must be positive", f.budgetGiB)
		}
		r.BudgetBytes = calc.GiBBytes(f.budgetGiB)
	}
	if f.targetMiB < 0 {
		return r, fmt.Errorf("--vram-target-mib %g: must not be negative", f.targetMiB)
	}
	r.TargetBytes = calc.MiBBytes(f.targetMiB)
	if fl.Changed("resident-mib") {
		if f.residentMiB < 0 {
			return r, fmt.Errorf("--resident-mib %g: must not be negative", f.residentMiB)
		}
		r.ResidentBytes = calc.MiBBytes(f.residentMiB)
	}
	if f.reserveGiB < 0 {
		return r, fmt.Errorf("--reserve-gib %g: must not be negative", f.reserveGiB)
	}
	r.ReserveBytes = calc.GiBBytes(f.reserveGiB)
	if f.formats != "" {
		if r.Pairs, err = kvq.ParsePairs(f.formats); err != nil {
			return r, fmt.Errorf("--formats: %w", err)
		}
	}
	if f.kv != "" {
		if r.User, err = kvq.ParsePair(f.kv); err != nil {
			return r, fmt.Errorf("--kv: %w", err)
		}
	}
	if f.window < 0 || f.sinks < 0 {
		return r, fmt.Errorf("--window %d --sinks %d: must not be negative", f.window, f.sinks)
	}
	r.Overlay = calc.Overlay{Window: f.window, Sinks: f.sinks}
	if f.recent < 0 || f.recentSinks < 0 {
		return r, fmt.Errorf("--recent %d --recent-sinks %d: must not be negative", f.recent, f.recentSinks)
	}
	r.Mixed = calc.Mixed{Window: f.recent, Sinks: f.recentSinks}
	r.Spill.OverheadMs = f.overheadMs
	r.ChartMaxCtx = int64(f.chartMax)
	if f.fit != nil {
		q, _ := calc.LookupQuant(quant)
		active := shape.ActiveWeightBytesAt(q)
		if f.fit.doc != nil && f.fit.doc.WeightBytes > 0 {
			active = f.fit.doc.WeightBytes // what the measured device held
		}
		// One context cannot tell device bandwidth from the fixed cost per token (both are
		// the same at every point): hold the bandwidth at the GPU's figure then.
		var opt calc.FitOptions
		if f.fit.contexts() < 2 {
			opt.DeviceGBps, f.fit.heldDevice = hw.MemGBps, true
		}
		res, err := calc.Fit(shape, active, f.fit.pts, opt)
		if err != nil {
			return r, fmt.Errorf("--fit %s: %w", f.fitFile, err)
		}
		f.fit.before, f.fit.res = r.Spill, &res
		r.Spill = res.Params
	}
	return r, nil
}

// shape resolves the model from --model, the custom-shape flags or --preset.
func (f *planFlags) shape(fl *pflag.FlagSet) (calc.Shape, string, error) {
	custom := fl.Changed("layers") || fl.Changed("kv-heads") || fl.Changed("head-dim")
	sources := 0
	for _, on := range []bool{f.preset != "", f.model != "", custom} {
		if on {
			sources++
		}
	}
	if sources > 1 {
		return calc.Shape{}, "", errors.New("choose one model: --preset, --model or the custom shape flags (--layers, --kv-heads, --head-dim)")
	}
	quant := f.quant
	var s calc.Shape
	if sources == 0 && f.fit != nil && f.fit.doc != nil {
		if bs, ok := f.fit.benchShape(); ok {
			s = bs
			if quant == "" {
				quant = "q8_0" // unused: the measured weight bytes are exact
			}
			return s, quant, nil
		}
		f.model = f.fit.doc.Model
	}
	switch {
	case f.model != "":
		hff, err := hf.OpenHeader(f.model)
		if err != nil {
			return s, "", fmt.Errorf("--model: %w", err)
		}
		s, err = ggufshape.FromFile(hff)
		hff.Close()
		if err != nil {
			return s, "", fmt.Errorf("--model %s: %w", f.model, err)
		}
		if quant == "" {
			quant = "q8_0" // unused: the file's tensor sizes are exact
		}
	case custom:
		if f.layers < 1 || f.kvHeads < 1 || f.headDim < 1 {
			return s, "", fmt.Errorf("a custom shape needs --layers, --kv-heads and --head-dim ≥ 1 (got %d, %d, %d)", f.layers, f.kvHeads, f.headDim)
		}
		dv := f.headDimV
		if dv == 0 {
			dv = f.headDim
		}
		s = calc.Shape{Name: fmt.Sprintf("custom %d×%d×%d", f.layers, f.kvHeads, f.headDim),
			Params: int64(f.paramsB * 1e9), ActiveParams: int64(f.activeB * 1e9)}
		s.Groups = planview.CustomGroups(f.layers, f.kvHeads, f.headDim, dv, f.swaWindow, f.globalEvery)
		if quant == "" {
			quant = "q4_k_m"
		}
	default:
		key := f.preset
		if key == "" {
			key = "qwen2.5-14b-1m"
		}
		p, err := calc.LookupPreset(key)
		if err != nil {
			return s, "", fmt.Errorf("--preset: %w", err)
		}
		s = p.Shape
		if quant == "" {
			quant = p.Quant
		}
	}
	if _, err := calc.LookupQuant(quant); err != nil {
		return s, "", fmt.Errorf("--weights: %w", err)
	}
	if f.weightsGiB < 0 {
		return s, "", fmt.Errorf("--weights-gib %g: must not be negative", f.weightsGiB)
	}
	if f.weightsGiB > 0 {
		s.WeightBytes = calc.GiBBytes(f.weightsGiB)
		s.ActiveWeightBytes = 0
	}
	return s, quant, nil
}

// hardware resolves the GPU from --gpu and the override flags.
func (f *planFlags) hardware(fl *pflag.FlagSet) (calc.Hardware, error) {
	key := f.gpu
	if key == "" {
		key = "rtx-3090"
	}
	h, err := calc.LookupHardware(key)
	if err != nil {
		return h, fmt.Errorf("--gpu: %w", err)
	}
	for _, o := range []struct {
		name string
		v    float64
		set  func(float64)
	}{
		{"vram-gib", f.vramGiB, func(x float64) { h.VRAMBytes = calc.GiBBytes(x) }},
		{"mem-gbps", f.memGBps, func(x float64) { h.MemGBps = x }},
		{"link-gbps", f.linkGBps, func(x float64) { h.LinkGBps = x }},
	} {
		if !fl.Changed(o.name) {
			continue
		}
		if o.v <= 0 {
			return h, fmt.Errorf("--%s %g: must be positive", o.name, o.v)
		}
		o.set(o.v)
		if f.gpu == "" {
			h.Key, h.Name = "custom", "custom GPU"
		}
	}
	return h, nil
}

// writeLaunch prints the plan as an engine's command line, followed by what the engine cannot
// express as shell comments, so that the whole output can be pasted.
func (f *planFlags) writeLaunch(w io.Writer, req calc.Request, rep calc.Report) error {
	e, err := launch.ParseEngine(f.emit)
	if err != nil {
		return fmt.Errorf("--emit: %w", err)
	}
	m := launch.PresetModel(f.preset)
	if f.preset == "" && f.model == "" && req.Model.Name == "Qwen2.5-14B-Instruct-1M" {
		m = launch.PresetModel("qwen2.5-14b-1m")
	}
	if f.model != "" {
		m = launch.Model{File: f.model}
	}
	c, err := launch.Emit(e, req, rep, m)
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(w, c)
	}
	fmt.Fprintln(w, c.Line)
	for _, n := range c.Notes {
		fmt.Fprintln(w, "# "+n)
	}
	return nil
}

// writePlan prints the report as tables.
func writePlan(w io.Writer, rep calc.Report) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	gpus := rep.GPU
	if rep.GPUs > 1 {
		gpus = fmt.Sprintf("%d × %s (tensor parallel)", rep.GPUs, rep.GPU)
	}
	p("%s (%s, %d layers) on %s\n", rep.Model, rep.Class, rep.Layers, gpus)
	p("weights %s: %s GiB per GPU; context %d tokens × %d session(s)\n", rep.Quant, gib(rep.WeightBytes), rep.Ctx, rep.Sessions)
	b := rep.Budget
	if b.Given {
		p("KV budget per GPU: %s GiB (given)\n", gib(b.KVBytes))
	} else {
		limit := fmt.Sprintf("%s GiB", gib(b.FreeBytes))
		if b.TargetBytes > 0 && b.TargetBytes < b.FreeBytes {
			limit = fmt.Sprintf("target %s MiB", calc.FormatFixed(calc.ToMiB(b.TargetBytes), 0))
		}
		p("KV budget per GPU: %s GiB = %s − %s GiB resident − %s GiB reserve\n", gib(b.KVBytes), limit, gib(b.ResidentBytes), gib(b.ReserveBytes))
	}
	if rep.Overlay.Enabled() {
		p("FP16 overlay: window %d + sinks %d + %d slack cells per layer\n", rep.Overlay.Window, rep.Overlay.Sinks, calc.OverlaySlackCells)
	}
	if rep.Mixed.Enabled() {
		p("mixed rows (+p): the most recent %d cells + %d waiting to be quantized + %d sinks only in f16, the rest in the pair; KV GiB includes the f16 cells\n",
			rep.Mixed.Window, kvq.MixedBatch(rep.Mixed.Window), rep.Mixed.Sinks)
	}
	for _, warn := range rep.Warnings {
		p("warning: %s\n", warn)
	}
	p("\n")
	t := &table{header: []string{"format", "KiB/token", "vs f16", "KV GiB @" + strconv.FormatInt(rep.Ctx, 10), "overlay MiB", "max resident ctx", "sessions", "total GiB", "fits", "decode tok/s"}}
	for _, r := range rep.Rows {
		x := r.Text()
		t.add(x.Format, x.KiBPerToken, x.VsF16, x.KVGiB, x.OverlayMiB, x.MaxResident, x.Sessions, x.TotalGiB, x.Fits, x.DecodeTPS)
	}
	if err := t.write(w); err != nil {
		return err
	}

	p("\nspill model: decode tokens/s by context (device %s GB/s, link %s GB/s, overhead %s ms; * = tail in host memory)\n\n",
		calc.FormatSig(rep.Spill.DeviceGBps, 4), calc.FormatSig(rep.Spill.LinkGBps, 4), calc.FormatSig(rep.Spill.OverheadMs, 3))
	head := []string{"ctx"}
	for _, r := range rep.Rows {
		head = append(head, r.Format)
	}
	st := &table{header: head}
	for _, sr := range rep.SpillRows {
		cells := []string{strconv.FormatInt(sr.Ctx, 10)}
		for _, pt := range sr.Points {
			mark := ""
			if pt.TailBytes > 0 {
				mark = "*"
			}
			cells = append(cells, calc.FormatSig(pt.TPS, 3)+mark)
		}
		st.add(cells...)
	}
	if err := st.write(w); err != nil {
		return err
	}
	p("\npolicy (auto KV tier): %s\n  %s\n", rep.Policy.Format, rep.Policy.Reason)
	return nil
}

func gib(b int64) string { return calc.FormatFixed(calc.ToGiB(b), 2) }

// listPresets prints the model, GPU and weight presets.
func listPresets(w io.Writer, asJSON bool) error {
	if asJSON {
		return writeJSON(w, map[string]any{
			"models": calc.Presets(), "gpus": calc.HardwarePresets(), "weights": calc.WeightQuants(),
		})
	}
	t := &table{header: []string{"model", "name", "layers", "class", "f16 KiB/token", "params", "weights", "source"}, left: map[int]bool{1: true, 3: true, 7: true}}
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	for _, m := range calc.Presets() {
		params := calc.FormatSig(float64(m.Shape.Params)/1e9, 3) + " B"
		if m.Shape.ActiveParams > 0 {
			params += fmt.Sprintf(" (%s B active)", calc.FormatSig(float64(m.Shape.ActiveParams)/1e9, 2))
		}
		t.add(m.Key, m.Shape.Name, strconv.Itoa(m.Shape.Layers()), m.Shape.Class().String(),
			calc.FormatSig(calc.ToKiB(m.Shape.BytesPerToken(f16, 1)), 4), params, m.Quant, m.Source)
	}
	if err := t.write(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	g := &table{header: []string{"gpu", "name", "memory GiB", "mem GB/s", "link GB/s", "source"}, left: map[int]bool{1: true, 5: true}}
	for _, h := range calc.HardwarePresets() {
		g.add(h.Key, h.Name, calc.FormatFixed(calc.ToGiB(h.VRAMBytes), 2), calc.FormatSig(h.MemGBps, 4), calc.FormatSig(h.LinkGBps, 3), h.Source)
	}
	if err := g.write(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	q := &table{header: []string{"weights", "bits/weight", "source"}, left: map[int]bool{2: true}}
	for _, x := range calc.WeightQuants() {
		q.add(x.Key, calc.FormatFixed(x.BitsPerWeight, 3), x.Note)
	}
	return q.write(w)
}

// printCalibration fits the spill model to the calibration measurements and prints how close it lands.
func printCalibration(w io.Writer, asJSON bool) error {
	cal := calc.Seed000Calibration()
	res, err := calc.FitCalibration(cal)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, map[string]any{"calibration": cal, "fit": res})
	}
	fmt.Fprintf(w, "%s\n%s\n\n", cal.Name, cal.Source)
	t := &table{header: []string{"format", "ctx", "resident cells", "tail MiB", "measured tok/s", "model tok/s", "model/measured", "note"}, left: map[int]bool{7: true}}
	for _, p := range res.Points {
		res := "all"
		if p.ResidentCells > 0 {
			res = strconv.FormatInt(p.ResidentCells, 10)
		}
		note := p.Excluded
		if note != "" {
			note = "not fitted: " + note
		}
		t.add(p.Format, strconv.FormatInt(p.Ctx, 10), res, calc.FormatFixed(calc.ToMiB(p.TailBytes), 0),
			calc.FormatSig(p.TPS, 3), calc.FormatSig(p.PredictedTPS, 3), calc.FormatFixed(p.Ratio, 2)+"×", note)
	}
	if err := t.write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfit over %d points (device bandwidth held at %s GB/s): link %s GB/s, overhead %s ms\n",
		res.Fitted, calc.FormatSig(res.Params.DeviceGBps, 4), calc.FormatSig(res.Params.LinkGBps, 4), calc.FormatSig(res.Params.OverheadMs, 3))
	fmt.Fprintf(w, "RMS log error %.3f; worst point off by %.2f×\n", res.RMSLogErr, res.MaxRatio)
	return nil
}
