package main

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/lab"
	"github.com/spf13/cobra"
)

// cudaGatePairs are the pairs `kvlab gate --device cuda` checks by default.
func cudaGatePairs() []kvq.Pair {
	ps, _ := kvq.ParsePairs("f16,q8_0,q4_0,q8_0/q4_0,q5_1/q4_0,fp8,q2k,tq4")
	return ps
}

// cudaGateRow is one format pair's verdict over every case.
type cudaGateRow struct {
	Pair       string  `json:"pair"`
	KBytesDiff int     `json:"k_bytes_diff"`
	VBytesDiff int     `json:"v_bytes_diff"`
	Decode     float64 `json:"decode_vs_cpu"`         // worst over the cases without overlay
	Overlay    float64 `json:"overlay_decode_vs_cpu"` // worst with the FP16 window + sinks
	Prefill    float64 `json:"prefill_vs_cpu"`        // worst prefill
	VsF32      float64 `json:"err_vs_f32"`            // the format's own error, worst case
	OK         bool    `json:"ok"`
}

// runGateCUDA runs lab.RunDeviceGate for every pair × head dimension × dataset (with a prefill),
// plus one overlay case per pair and head dimension, and prints one row per pair.
func runGateCUDA(cmd *cobra.Command, pairs []kvq.Pair, dims []int, data []lab.GateData, cells, queries int, asJSON bool) error {
	for _, p := range pairs {
		for _, d := range dims {
			if err := engine.CheckPair(p, d); err != nil {
				return err
			}
		}
	}
	e, err := engine.Open(0)
	if err != nil {
		return err
	}
	defer e.Close()
	var cases []lab.DeviceGateCase
	for _, p := range pairs {
		for _, d := range dims {
			for _, dd := range data {
				cases = append(cases, lab.DeviceGateCase{Pair: p, HeadDim: d, Cells: cells, Heads: queries, KVHeads: 1,
					Prefill: min(64, cells), Data: dd, Seed: 2026})
			}
			cases = append(cases, lab.DeviceGateCase{Pair: p, HeadDim: d, Cells: cells, Heads: 2 * queries, KVHeads: 2,
				Window: min(256, cells/2), Sinks: min(8, cells/4), Data: data[len(data)-1], Seed: 2027})
		}
	}
	prog := newProgress(cmd.ErrOrStderr(), len(cases), "gate (cuda)")
	rows := map[string]*cudaGateRow{}
	var order []string
	var results []lab.DeviceGateResult
	for _, gc := range cases {
		r, err := lab.RunDeviceGate(cudaGate(e), gc)
		if err != nil {
			prog.Finish()
			return fmt.Errorf("gate %s: %w", gc, err)
		}
		prog.Add(1)
		results = append(results, r)
		row, ok := rows[r.Pair]
		if !ok {
			row = &cudaGateRow{Pair: r.Pair, OK: true}
			rows[r.Pair] = row
			order = append(order, r.Pair)
		}
		row.KBytesDiff += r.KBytesDiff
		row.VBytesDiff += r.VBytesDiff
		if gc.Window > 0 || gc.Sinks > 0 {
			row.Overlay = worst(row.Overlay, r.Decode)
		} else {
			row.Decode = worst(row.Decode, r.Decode)
		}
		if r.Prefill >= 0 {
			row.Prefill = worst(row.Prefill, r.Prefill)
		}
		row.VsF32 = worst(row.VsF32, r.VsF32)
		row.OK = row.OK && r.OK
	}
	prog.Finish()
	bad := 0
	var out []cudaGateRow
	for _, p := range order {
		out = append(out, *rows[p])
		if !rows[p].OK {
			bad++
		}
	}
	info := e.Info()
	if asJSON {
		if err := writeJSON(cmd.OutOrStdout(), map[string]any{
			"device": info.Name, "arch": info.Arch(), "nvrtc": e.Compiler().Version(), "cells": cells, "queries": queries,
			"attn_bound": lab.DeviceAttnBound, "pairs": out, "cases": results, "failures": bad,
		}); err != nil {
			return err
		}
	} else {
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "GPU kernels against the CPU on %s (%s, NVRTC %s): codec bytes vs native/kvq, attention vs native/attn's reference (relative RMS, bound %g)\n\n",
			info.Name, info.Arch(), e.Compiler().Version(), lab.DeviceAttnBound)
		t := &table{header: []string{"pair", "K codec", "V codec", "decode", "overlay decode", "prefill", "error vs f32", "status"}}
		codec := func(n int) string {
			if n == 0 {
				return "bit-exact"
			}
			return fmt.Sprintf("%d bytes differ", n)
		}
		for _, r := range out {
			status := "ok"
			if !r.OK {
				status = "FAIL"
			}
			t.add(r.Pair, codec(r.KBytesDiff), codec(r.VBytesDiff), fmt.Sprintf("%.1e", r.Decode), fmt.Sprintf("%.1e", r.Overlay),
				fmt.Sprintf("%.1e", r.Prefill), fmt.Sprintf("%.3f%%", 100*r.VsF32), status)
		}
		t.write(w)
	}
	if bad > 0 {
		return fmt.Errorf("gate: %d of %d format pairs failed on the GPU", bad, len(out))
	}
	return nil
}

// worst keeps the larger error, and NaN over anything.
func worst(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return max(a, b)
}

// cudaGate is the CUDA engine as the device gate's backend.
func cudaGate(e *engine.Engine) lab.GateBackend {
	return lab.GateBackendFunc(func(cfg kvcache.Config) (lab.GateCache, error) {
		c, err := e.NewCache(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	})
}
