package web

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/server/api"
)

// ParetoPoint is one arm of a stored run on the quality–size plane.
type ParetoPoint struct {
	Model string
	Arm   string
	RunID string
	Bits  float64 // bits per value, K and V averaged (the pair's exact storage)
	KL    float64
	// Front marks the points no other point of the same model beats on both axes.
	Front bool
}

// ParetoPoints gathers, from runs (newest first, as the history lists them), each model's arms
// with a measured KL: the prompt KL where the run measured it (`kvlab ab`), else the running
// mean decode KL when no run measured prompt KL (then metric says "decode"). An arm measured
// by several runs keeps its newest run. Arms with an f16 window, recent cells or sinks are left
// out (their bytes are not the pair's), as are arms with zero KL (f16 itself on a log axis).
// Arms with per-layer pairs ("+l0=…") are placed at their exact bytes over every layer.
func ParetoPoints(runs []api.Run) (pts []ParetoPoint, metric string) {
	prompt := false
	for _, r := range runs {
		if r.Report != nil {
			for _, a := range r.Report.Arms {
				prompt = prompt || a.Prompt.KLMean > 0
			}
		}
	}
	metric = "prompt"
	if !prompt {
		metric = "decode"
	}
	seen := map[[2]string]bool{}
	for _, r := range runs {
		rep := r.Report
		if rep == nil || (r.Status != "" && r.Status != "complete") {
			continue
		}
		for _, a := range rep.Arms {
			if a.Window > 0 || a.Recent > 0 || a.Sinks > 0 {
				continue
			}
			kl := a.Decode.KLMean
			if prompt {
				kl = a.Prompt.KLMean
			}
			if !(kl > 0) || math.IsInf(kl, 0) {
				continue
			}
			name := a.Pair
			if name == "" {
				name, _, _ = strings.Cut(a.Arm, "+")
			}
			p, err := kvq.ParsePair(name)
			if err != nil {
				continue
			}
			arm, bits := p.String(), p.PairBitsPerValue(rep.Model.HeadDimK, rep.Model.HeadDimV)
			if _, opts, _ := strings.Cut(a.Arm, "+"); strings.Contains("+"+opts, "+l") {
				// Per-layer pairs ("+l0=…"): the arm at its exact bytes over every layer.
				m := rep.Model
				arm, bits = a.Arm, 0
				if v := m.Layers * m.KVHeads * (m.HeadDimK + m.HeadDimV); v > 0 {
					bits = 8 * a.BytesPerToken / float64(v)
				}
			}
			key := [2]string{r.Model, arm}
			if seen[key] {
				continue
			}
			seen[key] = true
			if !(bits > 0) {
				continue
			}
			pts = append(pts, ParetoPoint{Model: r.Model, Arm: arm, RunID: r.ID, Bits: bits, KL: kl})
		}
	}
	slices.SortStableFunc(pts, func(a, b ParetoPoint) int {
		if c := strings.Compare(a.Model, b.Model); c != 0 {
			return c
		}
		if a.Bits != b.Bits {
			if a.Bits < b.Bits {
				return -1
			}
			return 1
		}
		if a.KL < b.KL {
			return -1
		}
		if a.KL > b.KL {
			return 1
		}
		return 0
	})
	best, model := math.Inf(1), ""
	for i := range pts {
		if pts[i].Model != model {
			best, model = math.Inf(1), pts[i].Model
		}
		if pts[i].KL < best {
			pts[i].Front, best = true, pts[i].KL
		}
	}
	return pts, metric
}

// ParetoChart draws ParetoPoints as an SVG: KL (log scale) against bits per value, one colour
// per model, each model's front joined by a line and labelled with the arm names.
func ParetoChart(runs []api.Run) string {
	pts, metric := ParetoPoints(runs)
	const w, h, left, right, top, bottom = 720.0, 320.0, 70.0, 120.0, 14.0, 44.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="pareto-chart" viewBox="0 0 %g %g" role="img" aria-label="mean %s KL against bits per value, per model">`, w, h, metric)
	if len(pts) == 0 {
		b.WriteString(`<text x="20" y="40" class="axis">no arm with a measured KL yet</text></svg>`)
		return b.String()
	}
	loKL, hiKL, hiBits := math.Inf(1), 0.0, 0.0
	for _, p := range pts {
		loKL, hiKL, hiBits = min(loKL, p.KL), max(hiKL, p.KL), max(hiBits, p.Bits)
	}
	d0, d1 := math.Floor(math.Log10(loKL)), math.Ceil(math.Log10(hiKL))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	xs := niceStep(hiBits, 6)
	x1 := math.Ceil(hiBits/xs+1e-9) * xs
	xOf := func(v float64) float64 { return left + (w-left-right)*v/x1 }
	yOf := func(v float64) float64 { return top + (h-top-bottom)*(d1-math.Log10(v))/(d1-d0) }
	fmt.Fprintf(&b, `<rect class="frame" x="%g" y="%g" width="%g" height="%g"/>`, left, top, w-left-right, h-top-bottom)
	for e := d0; e <= d1; e++ {
		y := yOf(math.Pow(10, e))
		fmt.Fprintf(&b, `<line class="grid" x1="%g" x2="%g" y1="%.1f" y2="%.1f"/><text class="tick" x="%g" y="%.1f" text-anchor="end">1e%d</text>`,
			left, w-right, y, y, left-6, y+4, int(e))
	}
	for v := 0.0; v <= x1+1e-9; v += xs {
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%g" text-anchor="middle">%s</text>`, xOf(v), h-bottom+14, strconv.FormatFloat(v, 'f', -1, 64))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%g" y="%g" text-anchor="middle">bits per value (K and V averaged)</text>`, (left+w-right)/2, h-8)
	fmt.Fprintf(&b, `<text class="axis" transform="translate(14 %g) rotate(-90)" text-anchor="middle">mean %s KL (nats, log)</text>`, top+(h-top-bottom)/2, metric)
	var models []string
	for _, p := range pts {
		if !slices.Contains(models, p.Model) {
			models = append(models, p.Model)
		}
	}
	for mi, m := range models {
		col := ArmColor(mi)
		var front []string
		for _, p := range pts {
			if p.Model == m && p.Front {
				front = append(front, fmt.Sprintf("%.1f,%.1f", xOf(p.Bits), yOf(p.KL)))
			}
		}
		fmt.Fprintf(&b, `<polyline class="front" fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, col, strings.Join(front, " "))
		for _, p := range pts {
			if p.Model != m {
				continue
			}
			x, y := xOf(p.Bits), yOf(p.KL)
			fill := col
			if !p.Front {
				fill = "none"
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s" stroke="%s" data-arm="%s"><title>%s · %s: %s bits/value, KL %s (run #%s)</title></circle>`,
				x, y, fill, col, esc(p.Arm), esc(m), esc(p.Arm), strconv.FormatFloat(p.Bits, 'f', 3, 64), KL(p.KL), esc(p.RunID))
			if p.Front {
				fmt.Fprintf(&b, `<text class="label" x="%.1f" y="%.1f" font-size="10">%s</text>`, x+6, y-5, esc(p.Arm))
			}
		}
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="10" height="10" fill="%s"/><text class="legend" x="%g" y="%g">%s</text>`,
			w-right+10, top+float64(mi)*16, col, w-right+24, top+9+float64(mi)*16, esc(m))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
