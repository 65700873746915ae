package web

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/server/api"
)

// LabData is the /lab page.
type LabData struct {
	Page
	Models  []api.ModelStatus
	Default string
	Places  []string
	// Prompt, N and Arms preset the form.
	Prompt string
	N      int
	Arms   []string
	// Formats are the pairs the arm menus offer.
	Formats []string
	// KernelNote is kvq.KernelSummary: the formats without a fast CPU decode kernel here.
	KernelNote string
}

// DefaultArms are the arms the lab starts with.
var DefaultArms = []string{"q8_0", "q4_0"}

// ArmsFromQuery reads the arms of a /lab link: repeated or comma-separated values, each kept
// once; DefaultArms when there are none.
func ArmsFromQuery(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" && !slices.Contains(out, a) && len(out) < api.MaxArms {
				out = append(out, a)
			}
		}
	}
	if len(out) == 0 {
		return DefaultArms
	}
	return out
}

// LabFormats are the pairs offered for an arm: every symmetric format and kvq's useful pairs.
func LabFormats() []string {
	var out []string
	add := func(p kvq.Pair) {
		if s := p.String(); p.Valid() && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, f := range kvq.Formats() {
		if f != kvq.F32 && !f.KOnly() {
			add(kvq.Pair{K: f, V: f})
		}
	}
	for _, p := range kvq.UsefulPairs {
		add(p)
	}
	for _, p := range calc.DefaultPairs() {
		add(p)
	}
	return out
}

// RunsData is the /runs page.
type RunsData struct {
	Page
	Runs []api.Run
	// Where says where the history is kept.
	Where string
}

// RunData is a run's page.
type RunData struct {
	Page
	Run api.Run
}

// palette colours the arms in charts (Okabe–Ito, as the planner's charts).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"}

// ArmColor is the colour of arm i.
func ArmColor(i int) string { return palette[i%len(palette)] }

// Pct writes a fraction as a percentage with one decimal.
func Pct(x float64) string { return calc.FormatFixed(100*x, 1) + " %" }

// KL writes a KL divergence in nats with four significant digits.
func KL(x float64) string {
	if x == 0 {
		return "0"
	}
	return calc.FormatSig(x, 4)
}

// ArmNames lists a run's arms.
func ArmNames(r api.Run) string {
	var n []string
	for _, a := range r.Arms {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}

// KLChart draws the running mean KL of each arm over the compared positions as an SVG line
// chart on a linear scale from 0, as the lab's live chart draws it, with 1–2–5 ticks and the
// axes labelled (KL in nats).
func KLChart(r api.Run) string {
	const w, h, left, right, top, bottom = 720.0, 270.0, 78.0, 16.0, 14.0, 44.0
	n := 0
	hi := 0.0
	series := make([][]float64, len(r.Arms))
	for i, a := range r.Arms {
		run := make([]float64, len(a.KL))
		sum := 0.0
		for j, k := range a.KL {
			sum += k
			run[j] = sum / float64(j+1)
			hi = max(hi, run[j])
		}
		series[i] = run
		n = max(n, len(run))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="kl-chart" viewBox="0 0 %g %g" role="img" aria-label="running mean KL in nats by position">`, w, h)
	if n == 0 || hi == 0 {
		b.WriteString(`<text x="20" y="40" class="axis">no KL to draw (every arm matched the reference exactly)</text></svg>`)
		return b.String()
	}
	step := niceStep(hi, 4)
	top1 := math.Ceil(hi/step-1e-9) * step
	yOf := func(v float64) float64 { return top + (h-top-bottom)*(1-v/top1) }
	xOf := func(i int) float64 {
		if n == 1 {
			return left
		}
		return left + (w-left-right)*float64(i)/float64(n-1)
	}
	fmt.Fprintf(&b, `<rect class="frame" x="%g" y="%g" width="%g" height="%g"/>`, left, top, w-left-right, h-top-bottom)
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	for k := 0; float64(k)*step <= top1+step/1e6; k++ {
		v := float64(k) * step
		y := yOf(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%g" x2="%g" y1="%.1f" y2="%.1f"/><text class="tick" x="%g" y="%.1f" text-anchor="end">%s</text>`,
			left, w-right, y, y, left-6, y+4, strconv.FormatFloat(v, 'f', decimals, 64))
	}
	xs := niceStep(float64(max(n-1, 1)), 6)
	for p := 0.0; p <= float64(n-1)+1e-9; p += xs {
		x := xOf(int(p))
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%g" text-anchor="middle">%d</text>`, x, h-bottom+14, int(p))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%g" y="%g" text-anchor="middle">position (tokens after the prompt)</text>`, (left+w-right)/2, h-8)
	fmt.Fprintf(&b, `<text class="axis" transform="translate(14 %g) rotate(-90)" text-anchor="middle">running mean KL (nats)</text>`, top+(h-top-bottom)/2)
	for i, s := range series {
		if len(s) == 0 {
			continue
		}
		var pts []string
		for j, v := range s {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(j), yOf(v)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>`,
			ArmColor(i), strings.Join(pts, " "), esc(r.Arms[i].Name))
	}
	b.WriteString(`</svg>`)
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

// Needle writes a needle score: "3/4", or "not run" when there were no trials.
func Needle(ok, total int) string {
	if total == 0 {
		return "not run"
	}
	return strconv.Itoa(ok) + "/" + strconv.Itoa(total)
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

func esc(s string) string { return escaper.Replace(s) }

// HasFullLab reports whether a run has the measurements only `kvlab ab` makes (perplexity,
// prompt KL, attention error, needles), so that its page shows those columns.
func HasFullLab(r api.Run) bool {
	for _, a := range r.Arms {
		if a.PPL != 0 || a.PromptKL != 0 || a.AttnErrMean != 0 || a.NeedleTotal != 0 {
			return true
		}
	}
	return false
}
