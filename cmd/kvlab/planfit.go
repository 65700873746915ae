package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/planview"
)

// maxFitFile bounds --fit's file before it is read.
const maxFitFile = 16 << 20

// planFit is `kvlab plan --fit FILE`: the measurements, the bench document they came from
// (nil for CSV), and after the request the spill model before and after the fit.
type planFit struct {
	path   string
	pts    []calc.Measurement
	doc    *benchSpillReport
	before calc.SpillParams
	res    *calc.FitResult
	// heldDevice: the fit kept the GPU's device bandwidth (one context measured).
	heldDevice bool
}

// contexts is the number of distinct contexts measured.
func (p *planFit) contexts() int {
	seen := map[int64]bool{}
	for _, m := range p.pts {
		seen[m.Ctx] = true
	}
	return len(seen)
}

// readFit reads --fit's file: a `kvlab bench spill --json` document (it starts with '{') or
// the CSV of calc.ParseMeasurements.
func readFit(path string) (*planFit, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--fit: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxFitFile+1))
	if err != nil {
		return nil, fmt.Errorf("--fit: %w", err)
	}
	if len(b) > maxFitFile {
		return nil, fmt.Errorf("--fit %s: larger than %d MiB", path, maxFitFile>>20)
	}
	p := &planFit{path: path}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		doc, pts, err := parseBenchSpill(t)
		if err != nil {
			return nil, fmt.Errorf("--fit %s: %w", path, err)
		}
		p.doc, p.pts = doc, pts
		return p, nil
	}
	if p.pts, err = calc.ParseMeasurements(string(b)); err != nil {
		return nil, fmt.Errorf("--fit %s: %w", path, err)
	}
	return p, nil
}

// parseBenchSpill reads a bench spill document into measurements: one per point, at the
// point's context with its device-resident cells (0, all of them, when nothing was in host
// memory).
func parseBenchSpill(b []byte) (*benchSpillReport, []calc.Measurement, error) {
	var doc benchSpillReport
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("%w: not a bench spill document: %v", calc.ErrFit, err)
	}
	if doc.Kind != benchSpillKind {
		return nil, nil, fmt.Errorf("%w: a JSON document of kind %q, want %q (kvlab bench spill --json)", calc.ErrFit, doc.Kind, benchSpillKind)
	}
	pair, err := kvq.ParsePair(doc.KV)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: kv %q: %w", calc.ErrFit, doc.KV, err)
	}
	if len(doc.Points) == 0 || len(doc.Points) > 10000 {
		return nil, nil, fmt.Errorf("%w: %d points", calc.ErrFit, len(doc.Points))
	}
	if doc.WeightBytes < 0 {
		return nil, nil, fmt.Errorf("%w: weight bytes %d", calc.ErrFit, doc.WeightBytes)
	}
	var pts []calc.Measurement
	for i, p := range doc.Points {
		if p.HostCells < 0 || p.Ctx < 1 || p.HostCells >= p.Ctx {
			return nil, nil, fmt.Errorf("%w: point %d: %d cells in host memory of a %d-cell context", calc.ErrFit, i+1, p.HostCells, p.Ctx)
		}
		res := int64(0)
		if p.HostCells > 0 {
			res = int64(p.Ctx - p.HostCells)
		}
		pts = append(pts, calc.Measurement{Pair: pair, Format: calc.PairName(pair), Ctx: int64(p.Ctx), ResidentCells: res, TPS: p.TPS})
	}
	return &doc, pts, nil
}

// benchShape is the measured model's shape from the document's own figures, for when its
// model file is not on this machine (ok false when it is: the file's header is exact).
func (p *planFit) benchShape() (calc.Shape, bool) {
	d := p.doc
	if _, err := os.Stat(d.Model); err == nil {
		return calc.Shape{}, false
	}
	if d.Layers < 1 || d.Layers > 1<<12 || d.KVHeads < 1 || d.KVHeads > 1<<12 || d.HeadDim < 1 || d.HeadDim > 1<<14 {
		return calc.Shape{}, false
	}
	s := calc.Shape{Name: fmt.Sprintf("%s (measured, %d×%d×%d)", d.Arch, d.Layers, d.KVHeads, d.HeadDim), WeightBytes: d.WeightBytes}
	s.Groups = planview.CustomGroups(d.Layers, d.KVHeads, d.HeadDim, d.HeadDim, 0, 0)
	return s, true
}

// planFitJSON is the fit in plan's --json.
type planFitJSON struct {
	File string `json:"file"`
	// Source describes the measurements (bench spill: model, device, pair; "" for CSV).
	Source   string `json:"source,omitempty"`
	Emulated bool   `json:"emulated,omitempty"`
	// HeldDeviceGBps: the device bandwidth was held at the GPU's figure (one context).
	HeldDeviceGBps bool             `json:"held_device_gbps,omitempty"`
	Before         calc.SpillParams `json:"before"`
	calc.FitResult
	// BeforeTPS is the unfitted model's prediction of each point, in Points' order.
	BeforeTPS []float64 `json:"before_tps"`
}

func (p *planFit) summary() *planFitJSON {
	if p == nil || p.res == nil {
		return nil
	}
	s := &planFitJSON{File: p.path, Before: p.before, FitResult: *p.res, HeldDeviceGBps: p.heldDevice}
	if p.doc != nil {
		s.Source = fmt.Sprintf("kvlab bench spill: %s on %s, kv %s", p.doc.Model, p.doc.DeviceName, p.doc.KV)
		s.Emulated = p.doc.Emulated
	}
	for _, pt := range p.res.Points {
		s.BeforeTPS = append(s.BeforeTPS, p.before.TokensPerSecond(pt.DeviceBytes, pt.TailBytes))
	}
	return s
}

// write prints the fit after the plan: the parameters before and after, and each point's
// measured speed against both predictions.
func (p *planFit) write(w io.Writer) error {
	s := p.summary()
	if s == nil {
		return nil
	}
	fmt.Fprintf(w, "\nSpill model fitted to %s", s.File)
	if s.Source != "" {
		fmt.Fprintf(w, " (%s)", s.Source)
	}
	fmt.Fprintln(w)
	if s.Emulated {
		fmt.Fprintln(w, "warning: the measurements come from kvlab's CPU emulator: the fitted figures describe it, not a GPU")
	}
	par := func(x calc.SpillParams) string {
		gb := func(v float64) string {
			if v == 0 {
				return "free"
			}
			return calc.FormatSig(v, 4) + " GB/s"
		}
		return fmt.Sprintf("device %s, link %s, overhead %s ms/token", gb(x.DeviceGBps), gb(x.LinkGBps), calc.FormatSig(x.OverheadMs, 4))
	}
	fmt.Fprintf(w, "  before: %s\n  after:  %s\n", par(s.Before), par(s.Params))
	fmt.Fprintf(w, "  fit: %d points, RMS log error %s, worst factor %s×\n", s.Fitted, calc.FormatSig(s.RMSLogErr, 3), calc.FormatFixed(s.MaxRatio, 2))
	if s.HeldDeviceGBps {
		fmt.Fprintln(w, "  (one context measured: the device bandwidth is held at the GPU's figure; measure two contexts to fit it)")
	}
	t := &table{header: []string{"format", "ctx", "resident cells", "tail MiB", "measured tok/s", "before tok/s", "after tok/s", "after/measured"}}
	for i, pt := range s.Points {
		res := "all"
		if pt.ResidentCells > 0 {
			res = strconv.FormatInt(pt.ResidentCells, 10)
		}
		t.add(pt.Format, strconv.FormatInt(pt.Ctx, 10), res, calc.FormatFixed(calc.ToMiB(pt.TailBytes), 1),
			calc.FormatSig(pt.TPS, 4), calc.FormatSig(s.BeforeTPS[i], 4), calc.FormatSig(pt.PredictedTPS, 4), calc.FormatFixed(pt.Ratio, 2)+"×")
	}
	return t.write(w)
}
