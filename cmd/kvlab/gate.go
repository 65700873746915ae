package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/lab"
	"github.com/spf13/cobra"
)

func newGateCmd() *cobra.Command {
	var (
		asJSON   bool
		formats  string
		dims     string
		cells    int
		queries  int
		datasets string
		device   string
	)
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Attention-output error of every KV format pair against an f32 cache",
		Long: `The attention-output gate, on the CPU. For every format pair it stores a synthetic
K/V cache in that pair, computes softmax(q·Kᵀ/√d)·V for a set of query heads, and reports the
relative RMS error of the output against the same attention over the exact f32 cache.

The caches have realistic structure: per-channel outliers whose RMS reaches 5× and 75× the
median channel (the spread measured on real layers, with V channels to 8× and 14×),
plus plain Gaussian data. Queries are scaled so the softmax is moderately sharp.

Every pair is computed three ways: the reference (decode every row, float64), the codecs'
single-row Dot/AccumulateScaled, and the fast path (batched packed reads, chunked online
softmax). The command exits non-zero if a fast path disagrees with its reference by more than
the stated bound.

With --device cuda it checks the GPU kernels against the CPU instead, one row per format pair
(default: the pairs the GPU stores: f16, q8_0, q4_0, q8_0/q4_0, q5_1/q4_0, fp8, q2k, tq4): the
bytes the device's quantize-on-write kernels store against native/kvq's encoders (bit-exact),
and one decode step, with and without the FP16 window + sinks overlay, and a 64-position
prefill, against native/attn's reference over the CPU cache holding the same bytes (relative
error at most 1e-4). It exits non-zero on any failure.`,
		Example: "  kvlab gate\n  kvlab gate --formats q8_0,q4_0,q8_0/q4_0 --head-dims 128 --json\n  kvlab gate --device cuda",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if device != "cpu" && device != "cuda" {
				return fmt.Errorf("--device %q: want cpu or cuda", device)
			}
			pairs := lab.GatePairs()
			if device == "cuda" {
				pairs = cudaGatePairs()
			}
			if formats != "" {
				var err error
				if pairs, err = kvq.ParsePairs(formats); err != nil {
					return err
				}
			}
			headDims, err := parseInts(dims, "--head-dims", kvq.MinDim)
			if err != nil {
				return err
			}
			if cells < 1 || queries < 1 {
				return fmt.Errorf("--cells %d and --queries %d must be positive", cells, queries)
			}
			var data []lab.GateData
			for _, s := range strings.Split(datasets, ",") {
				dd := lab.GateData(strings.TrimSpace(s))
				if !containsData(lab.GateDatasets, dd) {
					return fmt.Errorf("--data %q: unknown dataset (valid: gaussian, outlier5x, outlier75x)", s)
				}
				data = append(data, dd)
			}
			if device == "cuda" {
				return runGateCUDA(cmd, pairs, headDims, data, cells, queries, asJSON)
			}
			type job struct {
				p  kvq.Pair
				d  int
				dd lab.GateData
			}
			var jobs []job
			for _, p := range pairs {
				for _, d := range headDims {
					for _, dd := range data {
						jobs = append(jobs, job{p, d, dd})
					}
				}
			}
			results := make([]lab.GateResult, len(jobs))
			prog := newProgress(cmd.ErrOrStderr(), len(jobs), "gate")
			err = parallel(len(jobs), runtime.GOMAXPROCS(0), func(i int) error {
				j := jobs[i]
				r, err := lab.RunGate(j.p, lab.GateCase{Data: j.dd, HeadDim: j.d, Cells: cells, Queries: queries, Seed: 2026})
				results[i] = r
				prog.Add(1)
				return err
			})
			if err != nil {
				return err
			}
			bad := 0
			for _, r := range results {
				if !r.FastOK {
					bad++
				}
			}
			prog.Finish()
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), map[string]any{
					"cells": cells, "queries": queries, "fast_path_bound": lab.FastPathBound,
					"results": results, "fast_path_failures": bad,
				}); err != nil {
					return err
				}
			} else {
				writeGateTable(cmd, results, pairs, headDims, data)
			}
			if bad > 0 {
				return fmt.Errorf("gate: %d fast path(s) disagree with their reference by more than their bound (%g; more where the values accumulate with integer weights)", bad, lab.FastPathBound)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	cmd.Flags().StringVar(&formats, "formats", "", "comma-separated format pairs (default: every format and the useful pairs)")
	cmd.Flags().StringVar(&dims, "head-dims", "64,128", "comma-separated head dimensions")
	cmd.Flags().IntVar(&cells, "cells", 4096, "cells (tokens) in the cache")
	cmd.Flags().IntVar(&queries, "queries", 8, "query heads attending to the one KV head")
	cmd.Flags().StringVar(&datasets, "data", "gaussian,outlier5x,outlier75x", "K/V distributions")
	cmd.Flags().StringVar(&device, "device", "cpu", "cpu (the CPU fast paths) or cuda (the GPU kernels against the CPU)")
	return cmd
}

func writeGateTable(cmd *cobra.Command, results []lab.GateResult, pairs []kvq.Pair, dims []int, data []lab.GateData) {
	header := []string{"pair", "B/cell/head"}
	for _, d := range dims {
		for _, dd := range data {
			header = append(header, fmt.Sprintf("d%d %s", d, dd))
		}
	}
	header = append(header, "fast path")
	t := &table{header: header}
	i := 0
	for _, p := range pairs {
		row := []string{p.String(), strconv.FormatFloat(p.BytesPerToken(dims[len(dims)-1], dims[len(dims)-1], 1), 'g', -1, 64)}
		ok, worst := true, 0.0
		for range dims {
			for range data {
				r := results[i]
				i++
				row = append(row, fmt.Sprintf("%.3f%%", 100*r.RelErr))
				ok = ok && r.FastOK
				worst = max(worst, r.FastVsRef, r.OpsVsRef)
			}
		}
		status := fmt.Sprintf("ok (%.1e)", worst)
		if !ok {
			status = fmt.Sprintf("FAIL (%.1e)", worst)
		}
		t.add(append(row, status)...)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "attention-output error vs an f32 cache (relative RMS), B/cell/head at head_dim %d\n\n", dims[len(dims)-1])
	t.write(w)
}

func containsData(list []lab.GateData, d lab.GateData) bool {
	for _, x := range list {
		if x == d {
			return true
		}
	}
	return false
}

// parseInts parses a comma-separated list of integers, each at least lo.
func parseInts(s, flag string, lo int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", flag, f)
		}
		if n < lo {
			return nil, fmt.Errorf("%s: %d is below the minimum %d", flag, n, lo)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty list", flag)
	}
	return out, nil
}
