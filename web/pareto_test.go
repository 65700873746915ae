package web

import (
	"strings"
	"testing"

	"github.com/kvlab/kvlab/report"
	"github.com/kvlab/kvlab/server/api"
)

func paretoRun(id, model string, arms map[string]float64) api.Run {
	rep := &report.ABReport{Model: report.ModelInfo{HeadDimK: 64, HeadDimV: 64}}
	for a, kl := range arms {
		rep.Arms = append(rep.Arms, report.ArmResult{Arm: a, Pair: a, Prompt: report.Series{KLMean: kl}})
	}
	return api.Run{ID: id, Model: model, Status: "complete", Report: rep}
}

// TestParetoPoints: bits from the pair (per-layer arms: from their bytes), the newest run wins, zero KL and window arms left out,
// and the front is each model's arms that no smaller arm beats.
func TestParetoPoints(t *testing.T) {
	runs := []api.Run{
		paretoRun("3", "tiny", map[string]float64{"q4_0": 0.01, "f16": 0, "q8_0/q4_0": 0.02}),
		paretoRun("2", "tiny", map[string]float64{"q4_0": 0.5, "turbo3": 0.05, "q5_0": 0.003}),
		paretoRun("1", "other", map[string]float64{"q4_0": 0.03}),
	}
	runs[0].Report.Arms = append(runs[0].Report.Arms, report.ArmResult{Arm: "q2k+w64", Pair: "q2k", Window: 64, Prompt: report.Series{KLMean: 1e-4}})
	// Per-layer pairs: placed at the arm's exact bytes (224 per cell over 4 layers of one KV
	// head = 3.5 bits), not at its base pair's.
	runs[0].Report.Model.Layers, runs[0].Report.Model.KVHeads = 4, 1
	runs[0].Report.Arms = append(runs[0].Report.Arms, report.ArmResult{Arm: "turbo3+l0-1=turbo4/turbo3", Pair: "turbo3", BytesPerToken: 224, Prompt: report.Series{KLMean: 0.02}})
	pts, metric := ParetoPoints(runs)
	if metric != "prompt" {
		t.Errorf("metric %q", metric)
	}
	got := map[string]ParetoPoint{}
	for _, p := range pts {
		got[p.Model+" "+p.Arm] = p
	}
	if len(pts) != 6 {
		t.Fatalf("%d points: %+v", len(pts), pts)
	}
	for key, want := range map[string]struct {
		bits, kl float64
		front    bool
	}{
		"tiny q4_0":                      {4.5, 0.01, true},
		"tiny turbo3":                    {3.25, 0.05, true},
		"tiny q5_0":                      {5.5, 0.003, true},
		"tiny q8_0/q4_0":                 {6.5, 0.02, false},
		"other q4_0":                     {4.5, 0.03, true},
		"tiny turbo3+l0-1=turbo4/turbo3": {3.5, 0.02, true},
	} {
		p, ok := got[key]
		if !ok || p.Bits != want.bits || p.KL != want.kl || p.Front != want.front {
			t.Errorf("%s: %+v, want %+v", key, p, want)
		}
	}
	svg := ParetoChart(runs)
	if strings.Count(svg, "<circle") != 6 || !strings.Contains(svg, "mean prompt KL") || strings.Count(svg, "<polyline") != 2 {
		t.Errorf("chart: %s", svg)
	}
	if s := ParetoChart(nil); !strings.Contains(s, "no arm") {
		t.Errorf("empty chart: %s", s)
	}
}
