package server

import (
	"slices"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/web"
)

// qualityRuns is how many recent runs /plan reads for its quality table.
const qualityRuns = 200

// quality is /plan's table of measured quality: for the planner's default formats (and any
// other measured), the latest run's mean decode KL and top-1 on each model the user measured
// or serves.
func (s *Server) quality() web.Quality {
	var q web.Quality
	norm := func(f string) string {
		if p, err := kvq.ParsePair(f); err == nil {
			return p.String()
		}
		return f
	}
	for _, p := range calc.DefaultPairs() {
		if p != (kvq.Pair{K: kvq.F16, V: kvq.F16}) {
			q.Formats = append(q.Formats, p.String())
		}
	}
	type key struct{ format, model string }
	latest := map[key]web.QualityCell{}
	runs, _ := s.history.store.list(qualityRuns) // newest first
	for _, r := range runs {
		if r.Status != "" && r.Status != "complete" {
			continue
		}
		model := strings.TrimSuffix(r.Model, ".gguf")
		for _, a := range r.Arms {
			if a.Name == "f16" || len(a.Name) == 0 {
				continue
			}
			k := key{norm(a.Name), model}
			if _, ok := latest[k]; ok {
				continue
			}
			latest[k] = web.QualityCell{Run: r.ID, MeanKL: a.MeanKL, Top1: a.Top1}
			if !slices.Contains(q.Models, model) {
				q.Models = append(q.Models, model)
			}
			if !slices.Contains(q.Formats, k.format) {
				q.Formats = append(q.Formats, k.format)
			}
		}
	}
	for _, m := range s.models.list() {
		if supported(m) && !slices.Contains(q.Models, m.Name) {
			q.Models = append(q.Models, m.Name)
		}
	}
	if len(q.Models) > 4 {
		q.Models = q.Models[:4]
	}
	q.Cells = make([][]web.QualityCell, len(q.Formats))
	for i, f := range q.Formats {
		q.Cells[i] = make([]web.QualityCell, len(q.Models))
		for j, m := range q.Models {
			q.Cells[i][j] = latest[key{f, m}]
		}
	}
	return q
}
