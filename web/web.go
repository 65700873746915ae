// Package web holds kvlab's page components, written in templ. The generated *_templ.go files
// are committed; `go generate ./web` (go tool templ generate) rebuilds them.
package web

//go:generate go tool templ generate

import (
	"net/url"
	"slices"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/planview"
)

// PlanData is what the /plan page shows on first load, before the calculator takes over.
type PlanData struct {
	// Values are the form fields of the request (its query string).
	Values url.Values
	// Results is the server-rendered results fragment (planview.Render or RenderError).
	Results string
	// Calibration is the rendered calibration example of the spill model.
	Calibration string
	// Quality is what the user measured per KV format on their own models (the run history).
	Quality Quality
	// WasmURL is where the page loads calc.wasm from; WasmBytes its size.
	WasmURL   string
	WasmBytes int64
	// AssetBase is the URL prefix of the static files ("/assets/").
	AssetBase string
	// KernelNote is kvq.KernelSummary: the formats without a fast CPU decode kernel here.
	KernelNote string
}

// Quality is the measured quality of KV formats on the user's models, from the run history:
// the latest measurement of each format on each model.
type Quality struct {
	// Models are the models measured or offered, in order; Formats the formats shown.
	Models  []string
	Formats []string
	// Cells holds the measurement of Formats[i] on Models[j] at Cells[i][j] (Run "" when none).
	Cells [][]QualityCell
}

// QualityCell is one format measured on one model.
type QualityCell struct {
	Run          string
	MeanKL, Top1 float64
}

// MeasureLink is the lab page set to measure format on model.
func MeasureLink(model, format string) string {
	return "/lab?" + url.Values{"model": {model}, "arms": {format}}.Encode()
}

// Measured reports whether the cell holds a measurement.
func (c QualityCell) Measured() bool { return c.Run != "" }

// Get returns the form value of a field.
func (d PlanData) Get(field string) string { return d.Values.Get(field) }

// Preset is the selected model preset key.
func (d PlanData) Preset() string {
	if p := d.Get(planview.FieldPreset); p != "" {
		return p
	}
	return planview.DefaultPreset
}

// GPU is the selected GPU preset key.
func (d PlanData) GPU() string {
	if g := d.Get(planview.FieldGPU); g != "" {
		return g
	}
	return planview.DefaultGPU
}

// Presets are the model presets.
func (d PlanData) Presets() []calc.ModelPreset { return calc.Presets() }

// GPUs are the hardware presets.
func (d PlanData) GPUs() []calc.Hardware { return calc.HardwarePresets() }

// Quants are the weight quantizations.
func (d PlanData) Quants() []calc.WeightQuant { return calc.WeightQuants() }

// FormatChoices are the pairs the page offers: the ladder's defaults, the other symmetric
// formats, and kvq's useful asymmetric pairs, each once.
func (d PlanData) FormatChoices() []string {
	var out []string
	add := func(p kvq.Pair) {
		if s := p.String(); p.Valid() && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, p := range calc.DefaultPairs() {
		add(p)
	}
	for _, f := range kvq.Formats() {
		if f != kvq.F32 && !f.KOnly() {
			add(kvq.Pair{K: f, V: f})
		}
	}
	for _, p := range kvq.UsefulPairs {
		add(p)
	}
	return out
}

// FormatChecked reports whether a pair is in the ladder: the request's formats, or the
// defaults when it names none.
func (d PlanData) FormatChecked(name string) bool {
	list := strings.Join(d.Values[planview.FieldFormats], ",")
	if strings.Trim(list, ", ") == "" {
		for _, p := range calc.DefaultPairs() {
			if p.String() == name {
				return true
			}
		}
		return false
	}
	want, err := kvq.ParsePair(name)
	if err != nil {
		return false
	}
	pairs, err := kvq.ParsePairs(list)
	return err == nil && slices.Contains(pairs, want)
}

// WasmKiB is the calculator's size in KiB, for the status line.
func (d PlanData) WasmKiB() string { return calc.FormatFixed(float64(d.WasmBytes)/1024, 0) }

// LabURL is the link that sends the planner's formats to the lab as an A/B arm set: the checked
// formats (the policy's pick is moved first by plan.js once the page computes it).
func (d PlanData) LabURL() string {
	var arms []string
	for _, f := range d.FormatChoices() {
		if d.FormatChecked(f) {
			arms = append(arms, f)
		}
	}
	return LabLink(arms)
}

// LabLink is the /lab URL preset with an arm set.
func LabLink(arms []string) string {
	if len(arms) == 0 {
		return "/lab"
	}
	return "/lab?" + url.Values{"arms": {strings.Join(arms, ",")}}.Encode()
}
