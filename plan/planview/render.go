package planview

import (
	"math"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/launch"
)

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// esc escapes text for HTML and SVG text and attribute values.
func esc(s string) string { return escaper.Replace(s) }

// num writes x exactly (shortest round-trip form) for data-value attributes.
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func i64(x int64) string { return strconv.FormatInt(x, 10) }

// palette is the Okabe–Ito colour-blind-safe palette without its yellow.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}

func color(i int) string { return palette[i%len(palette)] }

// RenderError writes an error as the results fragment.
func RenderError(err error) string {
	return `<div class="error" id="plan-error" role="alert"><strong>Cannot plan:</strong> ` + esc(err.Error()) + `</div>`
}

// Render writes a computed view as an HTML fragment: the policy's pick, the ladder table, the
// KiB/token bar chart, the spill-cliff chart and table, and the fit when there is one. Elements
// carry ids and data-value attributes with the exact numbers, for scripts and tests.
func Render(res Result) string {
	rep := res.Report
	var b strings.Builder
	w := b.WriteString

	w(Answer(rep))
	w(MemoryBars(rep))
	w(Launch(res))

	w(`<section class="summary" id="summary"><p><strong>`)
	w(esc(rep.Model))
	w(`</strong> (`)
	w(esc(rep.Class))
	w(", " + strconv.Itoa(rep.Layers) + " layers) on ")
	if rep.GPUs > 1 {
		w(strconv.Itoa(rep.GPUs) + " × ")
	}
	w(esc(rep.GPU))
	w(`; weights `)
	w(esc(rep.Quant))
	w(` <span data-value="` + i64(rep.WeightBytes) + `" id="weights-gib">` + gib(rep.WeightBytes) + `</span> GiB per GPU.</p><p>KV budget per GPU: <strong id="budget-gib" data-value="` + i64(rep.Budget.KVBytes) + `">` + gib(rep.Budget.KVBytes) + ` GiB</strong>`)
	bud := rep.Budget
	if bud.Given {
		w(` (given)`)
	} else {
		limit := gib(bud.FreeBytes) + " GiB"
		if bud.TargetBytes > 0 && bud.TargetBytes < bud.FreeBytes {
			limit = "target " + calc.FormatFixed(calc.ToMiB(bud.TargetBytes), 0) + " MiB"
		}
		w(` = ` + limit + ` − ` + gib(bud.ResidentBytes) + ` GiB resident − ` + gib(bud.ReserveBytes) + ` GiB reserve`)
	}
	w(`; context <span id="ctx" data-value="` + i64(rep.Ctx) + `">` + i64(rep.Ctx) + `</span> tokens × ` + strconv.Itoa(rep.Sessions) + ` session(s).`)
	if rep.Overlay.Enabled() {
		w(` FP16 overlay: window ` + strconv.Itoa(rep.Overlay.Window) + ` + sinks ` + strconv.Itoa(rep.Overlay.Sinks) + ` + ` + strconv.Itoa(calc.OverlaySlackCells) + ` slack cells per layer.`)
	}
	w(`</p>`)
	if len(rep.Warnings) > 0 {
		w(`<ul class="warnings">`)
		for _, m := range rep.Warnings {
			w(`<li>` + esc(m) + `</li>`)
		}
		w(`</ul>`)
	}
	w(`</section>`)

	overlay := rep.Overlay.Enabled()
	w(`<section id="ladder-section"><h2>Size ladder</h2><table id="ladder"><thead><tr><th>format</th><th>KiB/token</th><th>vs f16</th><th>KV GiB at ` + calc.ShortCount(rep.Ctx) + `</th>`)
	if overlay {
		w(`<th>overlay MiB</th>`)
	}
	w(`<th>max resident context</th><th>sessions at ` + calc.ShortCount(rep.Ctx) + `</th><th>total GiB</th><th>fits</th><th>decode tok/s</th></tr></thead><tbody>`)
	for _, r := range rep.Rows {
		t := r.Text()
		cls := ""
		if r.Format == rep.Policy.Choice.String() {
			cls = ` class="chosen"`
		}
		w(`<tr data-format="` + esc(r.Format) + `"` + cls + `>`)
		w(`<th scope="row">` + esc(t.Format) + `</th>`)
		cell := func(key, value, text, title string) {
			if title != "" {
				title = ` title="` + esc(title) + `"`
			}
			w(`<td data-k="` + key + `" data-value="` + value + `"` + title + `>` + esc(text) + `</td>`)
		}
		cell("kib_per_token", num(r.KiBPerToken), t.KiBPerToken, "")
		cell("vs_f16", num(r.VsF16), t.VsF16, "")
		kv := t.KVGiB
		if r.KVGiB > 0 && r.KVGiB < 0.01 {
			kv = calc.FormatSig(r.KVGiB, 2)
		}
		cell("kv_gib", num(r.KVGiB), kv, "")
		if overlay {
			cell("overlay_bytes", i64(r.OverlayBytes), t.OverlayMiB, "")
		}
		maxCtx, title := t.MaxResidentCtx, t.MaxResidentExact
		if title != "" {
			title += " tokens"
		}
		if n := rep.NativeContext; n > 0 && (r.MaxResidentCtx == calc.Unbounded || r.MaxResidentCtx > n) {
			maxCtx += " ⚠"
			title += "; past the model's trained context of " + i64(n) + " tokens"
		}
		cell("max_resident_ctx", i64(r.MaxResidentCtx), maxCtx, strings.TrimPrefix(title, "; "))
		cell("sessions", i64(r.Sessions), t.Sessions, "")
		cell("total_gib", num(r.TotalGiB), t.TotalGiB, "")
		fits, fitsText := "false", "no: "+gib(r.SpillBytes)+" GiB spills"
		if r.Fits {
			fits, fitsText = "true", "yes"
		}
		cell("fits", fits, fitsText, "")
		cell("decode_tps", num(r.DecodeTPS), t.DecodeTPS, "")
		w(`</tr>`)
	}
	w(`</tbody></table></section>`)

	w(`<section id="charts"><figure id="kib-chart"><figcaption>KV growth per token of context (KiB)</figcaption>`)
	w(BarChart(rep))
	w(`</figure><figure id="spill-chart"><figcaption>Spill cliff: predicted decode tokens/s against context; dashed lines mark each format's resident limit</figcaption>`)
	w(SpillChart(rep))
	w(`</figure></section>`)

	w(`<section id="spill-section"><h2>Spill model</h2><p>seconds/token = device bytes / <span id="spill-device">` + calc.FormatSig(rep.Spill.DeviceGBps, 4) + `</span> GB/s + host tail / <span id="spill-link">` + calc.FormatSig(rep.Spill.LinkGBps, 4) + `</span> GB/s + <span id="spill-overhead">` + calc.FormatSig(rep.Spill.OverheadMs, 3) + `</span> ms. * = tail in host memory.</p>`)
	w(`<table id="spill-table"><thead><tr><th>ctx</th>`)
	for _, r := range rep.Rows {
		w(`<th>` + esc(r.Format) + `</th>`)
	}
	w(`</tr></thead><tbody>`)
	for _, sr := range rep.SpillRows {
		w(`<tr><th scope="row">` + i64(sr.Ctx) + `</th>`)
		for _, p := range sr.Points {
			mark := ""
			if p.TailBytes > 0 {
				mark = "*"
			}
			w(`<td data-value="` + num(p.TPS) + `">` + calc.FormatSig(p.TPS, 3) + mark + `</td>`)
		}
		w(`</tr>`)
	}
	w(`</tbody></table>`)
	if res.Fit != nil {
		w(`<h3>Fitted to your measurements</h3>`)
		w(FitTable(*res.Fit))
	}
	w(`</section>`)
	return b.String()
}

func gib(b int64) string { return calc.FormatFixed(calc.ToGiB(b), 2) }

// Answer writes the plan's answer first: the KV format to use, the context and sessions it
// holds, whether it fits, and the auto KV tier's reason.
func Answer(rep calc.Report) string {
	var b strings.Builder
	w := b.WriteString
	d := rep.Policy
	var row *calc.Row
	for i := range rep.Rows {
		if rep.Rows[i].Pair == d.Choice {
			row = &rep.Rows[i]
		}
	}
	w(`<section class="pick" id="policy"><h2>Answer</h2><p class="choice"><span id="policy-choice">` + esc(d.Format) + `</span></p>`)
	w(`<p class="answer" id="answer">`)
	w(`<strong id="answer-ctx" data-value="` + i64(rep.Ctx) + `">` + calc.ShortCount(rep.Ctx) + `</strong> tokens of context × <strong id="answer-sessions" data-value="` + strconv.Itoa(rep.Sessions) + `">` + strconv.Itoa(rep.Sessions) + `</strong> session(s) on ` + esc(rep.GPU))
	if rep.GPUs > 1 {
		w(` × ` + strconv.Itoa(rep.GPUs))
	}
	if d.Fits {
		w(`: <strong class="fits" id="answer-fits" data-value="true">fits</strong>, KV ` + gib(d.KVBytes) + ` of the ` + gib(max(d.BudgetBytes, 0)) + ` GiB budget per GPU.`)
	} else {
		w(`: <strong class="spills" id="answer-fits" data-value="false">does not fit</strong>: ` + gib(d.SpillBytes) + ` GiB of KV spills to host memory per GPU.`)
	}
	if row != nil {
		lim := "no limit"
		if row.MaxResidentCtx != calc.Unbounded {
			lim = calc.ShortCount(row.MaxResidentCtx) + " tokens"
		}
		w(` Longest resident context: ` + lim + `; sessions at this context: ` + i64(row.Sessions) + `; decode about ` + calc.FormatSig(row.DecodeTPS, 3) + ` tokens/s (spill model).`)
	}
	w(`</p>`)
	if n := rep.NativeContext; n > 0 && rep.Ctx > n {
		w(`<p class="warn" id="answer-trained">The model was trained on ` + i64(n) + ` tokens of context: memory holds ` + calc.ShortCount(rep.Ctx) + `, the model is not assured to work past ` + calc.ShortCount(n) + `.</p>`)
	}
	w(`<p id="policy-reason" class="note">` + esc(d.Reason) + `</p>`)
	w(`<p class="note">Auto KV tier: the least compression of f16 → q8_0 → q8_0/q4_0 → q5_1/q4_0 whose whole cache fits the budget; the floor spills the excess to host memory.</p></section>`)
	return b.String()
}

// MemoryBars draws each format's use of one GPU's memory as a stacked bar: weights, the KV of
// the requested sessions, the compute reserve, and what is left free (or the KV that spills
// past the memory, hatched).
func MemoryBars(rep calc.Report) string {
	const width, left, right, bar, gap, top = 720, 110, 150, 18, 8, 26
	vram := rep.VRAMBytes
	if rep.Budget.Given || vram <= 0 {
		return ""
	}
	total := vram
	for _, r := range rep.Rows {
		total = max(total, r.TotalBytes)
	}
	n := len(rep.Rows)
	height := top + n*(bar+gap) + 30
	scale := float64(width-left-right) / float64(total)
	f1 := func(x float64) string { return calc.FormatFixed(x, 1) }
	var b strings.Builder
	w := b.WriteString
	w(`<figure id="memory-chart"><figcaption>Memory of one GPU (` + gib(vram) + ` GiB) per format: weights | KV of ` + strconv.Itoa(rep.Sessions) + ` session(s) at ` + calc.ShortCount(rep.Ctx) + ` | compute reserve | free</figcaption>`)
	w(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ` + strconv.Itoa(width) + ` ` + strconv.Itoa(height) + `" role="img" aria-label="GPU memory per format: weights, KV, reserve, free" class="chart">`)
	kinds := []struct{ name, fill string }{{"weights", "#7f7f7f"}, {"KV", "#0072B2"}, {"reserve", "#E69F00"}, {"free", "#e8e8e8"}, {"spill", "#D55E00"}}
	lx := float64(left)
	for _, k := range kinds {
		w(`<rect x="` + f1(lx) + `" y="4" width="11" height="11" fill="` + k.fill + `"/><text x="` + f1(lx+15) + `" y="14" class="legend">` + k.name + `</text>`)
		lx += 30 + 7*float64(len(k.name))
	}
	for i, r := range rep.Rows {
		y := top + i*(bar+gap)
		kv := r.TotalBytes - rep.WeightBytes - rep.Budget.ReserveBytes
		parts := []int64{rep.WeightBytes, min(kv, max(vram-rep.WeightBytes-rep.Budget.ReserveBytes, 0)), rep.Budget.ReserveBytes}
		over := max(r.TotalBytes-vram, 0)
		free := max(vram-r.TotalBytes, 0)
		parts = append(parts, free, over)
		w(`<g class="mem-bar" data-format="` + esc(r.Format) + `" data-free="` + i64(free) + `" data-over="` + i64(over) + `">`)
		w(`<text x="` + strconv.Itoa(left-8) + `" y="` + strconv.Itoa(y+bar-4) + `" text-anchor="end" class="label">` + esc(r.Format) + `</text>`)
		x := float64(left)
		for k, v := range parts {
			if v <= 0 {
				continue
			}
			wd := float64(v) * scale
			w(`<rect x="` + f1(x) + `" y="` + strconv.Itoa(y) + `" width="` + f1(wd) + `" height="` + strconv.Itoa(bar) + `" fill="` + kinds[k].fill + `"><title>` + esc(r.Format) + ` ` + kinds[k].name + `: ` + gib(v) + ` GiB</title></rect>`)
			x += wd
		}
		label := gib(free) + " GiB free"
		if over > 0 {
			label = gib(over) + " GiB over"
		}
		w(`<text x="` + f1(x+6) + `" y="` + strconv.Itoa(y+bar-4) + `" class="value">` + label + `</text></g>`)
	}
	vx := f1(float64(left) + float64(vram)*scale)
	w(`<line x1="` + vx + `" x2="` + vx + `" y1="` + strconv.Itoa(top-4) + `" y2="` + strconv.Itoa(top+n*(bar+gap)) + `" stroke="#000" stroke-dasharray="3 3"/>`)
	w(`<text x="` + vx + `" y="` + strconv.Itoa(top+n*(bar+gap)+14) + `" text-anchor="middle" class="tick">` + gib(vram) + ` GiB</text>`)
	w(`</svg></figure>`)
	return b.String()
}

// Launch writes the plan as llama-server and vllm serve command lines, behind a button that
// shows them, each with a copy button and what that engine cannot express.
func Launch(res Result) string {
	if res.Request.GPU.VRAMBytes <= 0 || len(res.Request.Model.Groups) == 0 {
		return ""
	}
	var b strings.Builder
	w := b.WriteString
	w(`<section id="launch-section"><button type="button" id="launch-toggle" aria-expanded="false" aria-controls="launch">Launch this plan elsewhere: llama.cpp and vLLM commands</button>`)
	w(`<div id="launch" hidden="hidden">`)
	m := launch.PresetModel(res.Preset)
	for _, e := range launch.Engines() {
		c, err := launch.Emit(e, res.Request, res.Report, m)
		id := "launch-" + strings.ReplaceAll(e.String(), ".", "")
		title := "llama-server (llama.cpp)"
		if e == launch.VLLM {
			title = "vllm serve (vLLM)"
		}
		w(`<div class="launch-cmd" id="` + id + `" data-engine="` + esc(e.String()) + `"><h3>` + title + `</h3>`)
		if err != nil {
			w(`<p class="error">` + esc(err.Error()) + `</p></div>`)
			continue
		}
		w(`<pre><code>` + esc(c.Line) + `</code></pre><button type="button" class="copy" data-copy="` + esc(c.Line) + `">copy</button>`)
		if len(c.Notes) > 0 {
			w(`<ul class="launch-notes">`)
			for _, n := range c.Notes {
				w(`<li>` + esc(n) + `</li>`)
			}
			w(`</ul>`)
		}
		w(`</div>`)
	}
	w(`</div></section>`)
	return b.String()
}

// FitTable writes a fit's points with predictions and its quality.
func FitTable(res calc.FitResult) string {
	var b strings.Builder
	w := b.WriteString
	w(`<table class="fit"><thead><tr><th>format</th><th>ctx</th><th>resident cells</th><th>tail MiB</th><th>measured tok/s</th><th>model tok/s</th><th>model/measured</th><th>note</th></tr></thead><tbody>`)
	for _, p := range res.Points {
		resident := "all"
		if p.ResidentCells > 0 {
			resident = i64(p.ResidentCells)
		}
		note := ""
		if p.Excluded != "" {
			note = "not fitted: " + p.Excluded
		}
		w(`<tr><td>` + esc(p.Format) + `</td><td>` + i64(p.Ctx) + `</td><td>` + resident + `</td><td>` +
			calc.FormatFixed(calc.ToMiB(p.TailBytes), 0) + `</td><td>` + calc.FormatSig(p.TPS, 3) + `</td><td>` +
			calc.FormatSig(p.PredictedTPS, 3) + `</td><td>` + calc.FormatFixed(p.Ratio, 2) + `×</td><td>` + esc(note) + `</td></tr>`)
	}
	w(`</tbody></table><p class="fit-quality">Fit over ` + strconv.Itoa(res.Fitted) + ` points: device ` +
		calc.FormatSig(res.Params.DeviceGBps, 4) + ` GB/s, link ` + calc.FormatSig(res.Params.LinkGBps, 4) + ` GB/s, overhead ` +
		calc.FormatSig(res.Params.OverheadMs, 3) + ` ms; RMS log error ` + calc.FormatFixed(res.RMSLogErr, 3) +
		`, worst point off by ` + calc.FormatFixed(res.MaxRatio, 2) + `×. (A bandwidth of 0 costs nothing in the fit.)</p>`)
	return b.String()
}

// Calibration writes the calibration example: the measurements, the fitted model's
// predictions and how close it lands.
func Calibration() string {
	cal := calc.Seed000Calibration()
	res, err := calc.FitCalibration(cal)
	if err != nil {
		return RenderError(err)
	}
	return `<p>` + esc(cal.Source) + `. Device bandwidth held at the card's ` + calc.FormatSig(res.Params.DeviceGBps, 4) +
		` GB/s; link bandwidth and overhead fitted.</p>` + FitTable(res)
}

// BarChart draws KiB per token for each pair as horizontal bars, the policy's pick outlined.
func BarChart(rep calc.Report) string {
	const width, left, right, bar, gap, top = 640, 110, 90, 20, 8, 8
	n := len(rep.Rows)
	height := top + n*(bar+gap) + 4
	maxKiB := 0.0
	for _, r := range rep.Rows {
		maxKiB = math.Max(maxKiB, r.KiBPerToken)
	}
	var b strings.Builder
	w := b.WriteString
	w(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ` + strconv.Itoa(width) + ` ` + strconv.Itoa(height) + `" role="img" aria-label="KiB per token by KV format" class="chart">`)
	for i, r := range rep.Rows {
		y := top + i*(bar+gap)
		bw := 0.0
		if maxKiB > 0 {
			bw = r.KiBPerToken / maxKiB * (width - left - right)
		}
		stroke := ""
		if r.Format == rep.Policy.Choice.String() {
			stroke = ` stroke="#000" stroke-width="2"`
		}
		w(`<text x="` + strconv.Itoa(left-8) + `" y="` + strconv.Itoa(y+bar-5) + `" text-anchor="end" class="label">` + esc(r.Format) + `</text>`)
		w(`<rect x="` + strconv.Itoa(left) + `" y="` + strconv.Itoa(y) + `" width="` + calc.FormatFixed(bw, 1) + `" height="` + strconv.Itoa(bar) + `" fill="` + color(i) + `"` + stroke + `><title>` + esc(r.Format) + `: ` + calc.FormatSig(r.KiBPerToken, 4) + ` KiB/token</title></rect>`)
		w(`<text x="` + calc.FormatFixed(left+bw+6, 1) + `" y="` + strconv.Itoa(y+bar-5) + `" class="value" data-format="` + esc(r.Format) + `">` + calc.FormatSig(r.KiBPerToken, 4) + ` KiB</text>`)
	}
	w(`</svg>`)
	return b.String()
}

// niceStep is the 1–2–5 × 10ᵏ step nearest above span/ticks.
func niceStep(span float64, ticks int) float64 {
	raw := span / float64(ticks)
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// SpillChart draws decode tokens/s against context for each pair on a log scale, with each
// pair's resident limit dashed in its colour and the requested context as a grey line.
func SpillChart(rep calc.Report) string {
	const width, height, ml, mr, mt, mb = 720, 400, 64, 16, 16, 98
	pw, ph := float64(width-ml-mr), float64(height-mt-mb)
	xmax := float64(rep.ChartMaxCtx)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range rep.Curves {
		for _, p := range c.Points {
			if p.TPS > 0 {
				lo, hi = math.Min(lo, p.TPS), math.Max(hi, p.TPS)
			}
		}
	}
	var b strings.Builder
	w := b.WriteString
	w(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ` + strconv.Itoa(width) + ` ` + strconv.Itoa(height) + `" role="img" aria-label="Decode tokens per second against context" class="chart">`)
	if math.IsInf(lo, 1) || xmax <= 0 {
		w(`<text x="20" y="40">The spill model predicts no decode time: set a bandwidth.</text></svg>`)
		return b.String()
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	px := func(x float64) float64 { return ml + x/xmax*pw }
	py := func(tps float64) float64 { return mt + (yhi-math.Log10(tps))/(yhi-ylo)*ph }
	f1 := func(x float64) string { return calc.FormatFixed(x, 1) }

	// Grid and axes.
	for d := ylo; d <= yhi; d++ {
		y := f1(py(math.Pow(10, d)))
		w(`<line x1="` + strconv.Itoa(ml) + `" x2="` + strconv.Itoa(width-mr) + `" y1="` + y + `" y2="` + y + `" class="grid"/>`)
		w(`<text x="` + strconv.Itoa(ml-6) + `" y="` + y + `" dy="4" text-anchor="end" class="tick">` + calc.FormatSig(math.Pow(10, d), 3) + `</text>`)
	}
	step := niceStep(xmax, 6)
	for x := 0.0; x <= xmax+step/1e6; x += step {
		xs := f1(px(x))
		w(`<line x1="` + xs + `" x2="` + xs + `" y1="` + strconv.Itoa(mt) + `" y2="` + f1(mt+ph) + `" class="grid"/>`)
		w(`<text x="` + xs + `" y="` + f1(mt+ph+16) + `" text-anchor="middle" class="tick">` + calc.ShortCount(int64(x)) + `</text>`)
	}
	w(`<rect x="` + strconv.Itoa(ml) + `" y="` + strconv.Itoa(mt) + `" width="` + f1(pw) + `" height="` + f1(ph) + `" class="frame"/>`)
	w(`<text x="` + f1(ml+pw/2) + `" y="` + f1(mt+ph+34) + `" text-anchor="middle" class="axis">context (tokens)</text>`)
	w(`<text transform="translate(14 ` + f1(mt+ph/2) + `) rotate(-90)" text-anchor="middle" class="axis">decode tokens/s (log)</text>`)

	// The requested context.
	if c := float64(rep.Ctx); c <= xmax {
		xs := f1(px(c))
		w(`<line x1="` + xs + `" x2="` + xs + `" y1="` + strconv.Itoa(mt) + `" y2="` + f1(mt+ph) + `" class="ctx-line"/>`)
		w(`<text x="` + xs + `" y="` + strconv.Itoa(mt+12) + `" dx="4" class="ctx-label">ctx ` + i64(rep.Ctx) + `</text>`)
	}
	// Curves and resident limits.
	for i, c := range rep.Curves {
		col := color(i)
		var pts strings.Builder
		for _, p := range c.Points {
			if p.TPS <= 0 {
				continue
			}
			pts.WriteString(f1(px(float64(p.Ctx))) + "," + f1(py(p.TPS)) + " ")
		}
		w(`<polyline fill="none" stroke="` + col + `" stroke-width="2" points="` + strings.TrimSpace(pts.String()) + `" data-format="` + esc(c.Format) + `"><title>` + esc(c.Format) + `</title></polyline>`)
		if lim := c.MaxResidentCtx; lim > 0 && float64(lim) < xmax {
			xs := f1(px(float64(lim)))
			w(`<line x1="` + xs + `" x2="` + xs + `" y1="` + strconv.Itoa(mt) + `" y2="` + f1(mt+ph) + `" stroke="` + col + `" stroke-dasharray="5 4" class="limit" data-format="` + esc(c.Format) + `" data-value="` + i64(lim) + `"><title>` + esc(c.Format) + ` resident limit: ` + i64(lim) + ` tokens</title></line>`)
		}
	}
	// Legend below the plot.
	x, y := float64(ml), mt+ph+46
	for i, c := range rep.Curves {
		label := c.Format + " (" + calc.ShortCount(c.MaxResidentCtx) + ")"
		span := 16 + 7.2*float64(len([]rune(label))) + 14
		if x+span > width-mr && x > ml {
			x, y = ml, y+18
		}
		w(`<rect x="` + f1(x) + `" y="` + f1(y) + `" width="12" height="12" fill="` + color(i) + `"/>`)
		w(`<text x="` + f1(x+16) + `" y="` + f1(y+10) + `" class="legend">` + esc(label) + `</text>`)
		x += span
	}
	w(`</svg>`)
	return b.String()
}
