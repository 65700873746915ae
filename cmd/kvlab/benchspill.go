package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/lab"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/spf13/cobra"
)

// benchSpillKind names the JSON document of `kvlab bench spill`, which `kvlab plan --fit` reads.
const benchSpillKind = "kvlab bench spill"

// benchSpillPoint is one tail size's measurement.
type benchSpillPoint struct {
	// BaseCtx is the cells in the cache before the timed tokens; SpilledCells the tail asked
	// for: cells of BaseCtx in host memory.
	BaseCtx      int `json:"base_ctx"`
	SpilledCells int `json:"spilled_cells"`
	// Ctx is the context at the middle of the timed tokens; ResidentCells the cells of it
	// read from device memory (Ctx − HostCells); HostCells those copied from host memory
	// every token.
	Ctx           int `json:"ctx"`
	ResidentCells int `json:"resident_cells"`
	HostCells     int `json:"host_cells"`
	// TailBytes is what one token copies from host memory (every layer's host chunks);
	// DeviceKVBytes the KV it reads from device memory.
	TailBytes     int64 `json:"tail_bytes"`
	DeviceKVBytes int64 `json:"device_kv_bytes"`
	// Seconds is the best round's time per token, MedianSeconds the median round's.
	Seconds       float64 `json:"seconds_per_token"`
	MedianSeconds float64 `json:"median_seconds_per_token"`
	TPS           float64 `json:"tps"`
	// RatioResident is TPS / the all-resident point's TPS at the same BaseCtx (0 without
	// one).
	RatioResident float64 `json:"ratio_to_resident,omitempty"`
	// LinkGBps is TailBytes / (Seconds − that point's Seconds): the host link rate the
	// tail's extra time implies (0 without a resident point or extra time).
	// LogitsRelRMS is the largest relative RMS difference of this point's logits from the
	// all-resident point's at the same BaseCtx (the caches hold the same cells and see the
	// same tokens), over the first and the last timed step; Argmax is whether their argmax
	// agreed at both.
	LogitsRelRMS float64 `json:"logits_rel_rms_vs_resident,omitempty"`
	ArgmaxAgrees *bool   `json:"argmax_agrees,omitempty"`
	LinkGBps     float64 `json:"implied_link_gbps,omitempty"`
}

// benchSpillReport is the whole command's output.
type benchSpillReport struct {
	Kind       string `json:"kind"`
	Device     string `json:"device"`
	DeviceName string `json:"device_name"`
	// Emulated is set when the device is kvlab's CPU emulator: the times are not a GPU's.
	Emulated bool   `json:"emulated"`
	Model    string `json:"model"`
	Arch     string `json:"arch"`
	Layers   int    `json:"layers"`
	KVHeads  int    `json:"kv_heads"`
	HeadDim  int    `json:"head_dim"`
	// WeightBytes is the device memory of the weights (what a token reads, dense models).
	WeightBytes int64             `json:"weight_bytes"`
	KV          string            `json:"kv"`
	ChunkCells  int               `json:"chunk_cells"`
	Contexts    []int             `json:"contexts"`
	Tokens      int               `json:"tokens_per_round"`
	Rounds      int               `json:"rounds"`
	Load        string            `json:"load_before"`
	Note        string            `json:"note,omitempty"`
	Points      []benchSpillPoint `json:"points"`
}

// benchSpillOptions are the flags of `kvlab bench spill`.
type benchSpillOptions struct {
	model, shape, weights, dir string
	seed                       uint64
	kv, spill, device, ctx     string
	chunk, tokens, rounds      int
	asJSON, check              bool
}

// spillCheckBound is --check's bound on the relative RMS of a spilled point's logits against
// the all-resident point's: both attend to the same stored bytes and differ only in float32
// summation order (about 1e-6 under the emulator).
const spillCheckBound = 1e-3

func newBenchSpillCmd() *cobra.Command {
	var o benchSpillOptions
	cmd := &cobra.Command{
		Use:   "spill",
		Short: "Decode tokens/s of a model on the GPU against the size of a KV tail spilled to host memory",
		Long: `Fills a device KV cache of --ctx cells (synthetic K/V: decode speed does not depend on the
values) with the cells past a device budget in pinned host memory, then times decode steps of
the model; once per --ctx context and --spill tail size, in interleaved rounds (best round
kept, the median too). Each step reads the device-resident cells in place and copies every host chunk of the
tail to the device (one copy per chunk and layer) before the same attention kernel reads it;
the partial results are merged exactly. The all-resident point (tail 0) is the baseline: each
row shows its speed against it and the host-link rate its extra time implies.

The JSON (--json) is what "kvlab plan --fit FILE" takes to calibrate the planner's spill model.
Give two contexts or more (--ctx 16k,64k) so that the fit can tell device bandwidth from the
fixed cost per token; with one, plan --fit holds the device bandwidth at the GPU's figure.

The model is a GGUF file (--model) or a synthetic one with random weights (--shape and
--weights, written into --dir and reused, as "kvlab bench model" writes them).

Only the CUDA backend has a device budget to spill past: --device cpu is refused (the CPU
backend keeps every cell in host memory already).`,
		Example: "  kvlab bench spill --model model.gguf --ctx 16k,32k --spill 0,4k,8k,12k --json > spill.json\n" +
			"  kvlab bench spill --shape tinyllama-1.1b --weights q8_0 --kv q8_0/q4_0 --ctx 64k\n" +
			"  kvlab plan --fit spill.json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := benchSpill(o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if o.asJSON {
				err = writeJSON(cmd.OutOrStdout(), rep)
			} else {
				err = writeBenchSpillTable(cmd.OutOrStdout(), rep)
			}
			if err != nil || !o.check {
				return err
			}
			return checkSpill(rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "", "GGUF model `FILE` (default: a synthetic model of --shape)")
	f.StringVar(&o.shape, "shape", "tinyllama-1.1b", "synthetic model geometry: tinyllama-1.1b, llama-3.2-1b, qwen2.5-0.5b, llama-3.1-8b, tiny")
	f.StringVar(&o.weights, "weights", "q8_0", "the synthetic model's weight set: f32, f16, q8_0, q4_0, q4_k_m, q6_k")
	f.StringVar(&o.dir, "dir", filepath.Join(os.TempDir(), "kvlab-bench"), "where synthetic models are written and reused")
	f.Uint64Var(&o.seed, "seed", 1, "random seed of the synthetic weights")
	f.StringVar(&o.kv, "kv", "f16", "KV format pair `K/V`")
	f.StringVar(&o.ctx, "ctx", "8192", "comma-separated cells in the cache before the timed tokens (32k = 32768; rounded up to whole chunks, at least two)")
	f.StringVar(&o.spill, "spill", "", "comma-separated tail sizes in cells (k suffix; rounded up to whole chunks, at most a context less one chunk; default 0, 1/8, 1/4, 1/2 and 3/4 of each context)")
	f.IntVar(&o.chunk, "chunk", engine.DefaultSpillChunk, "cells per chunk of the tail (a multiple of 32): one copy per chunk and layer per token")
	f.IntVar(&o.tokens, "tokens", 32, "decode steps timed per point and round")
	f.IntVar(&o.rounds, "rounds", 3, "interleaved rounds (every point once per round)")
	f.StringVar(&o.device, "device", "cuda", "cuda (the CPU backend has no device budget)")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON document")
	f.BoolVar(&o.check, "check", false, fmt.Sprintf("fail unless every spilled point's logits match the all-resident point's at its context (relative RMS ≤ %g, same argmax)", spillCheckBound))
	return cmd
}

// checkSpill is --check: every spilled point against the resident one of its context.
func checkSpill(rep benchSpillReport) error {
	var bad []string
	for _, p := range rep.Points {
		if p.HostCells == 0 {
			continue
		}
		switch {
		case p.ArgmaxAgrees == nil:
			bad = append(bad, fmt.Sprintf("context %d, %d spilled: no all-resident point to compare with", p.BaseCtx, p.HostCells))
		case !*p.ArgmaxAgrees || !(p.LogitsRelRMS <= spillCheckBound):
			bad = append(bad, fmt.Sprintf("context %d, %d spilled: logits relative RMS %.3g, argmax agrees %v", p.BaseCtx, p.HostCells, p.LogitsRelRMS, *p.ArgmaxAgrees))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("--check: %s", strings.Join(bad, "; "))
	}
	return nil
}

// maxSpillCtx bounds --ctx before anything is allocated.
const maxSpillCtx = 1 << 24

// spillSizes parses --spill (or picks the default sweep) and rounds each size up to whole
// chunks, at most ctx − chunk (one chunk stays on the device): sorted, without repeats.
func spillSizes(list string, ctx, chunk int) ([]int, error) {
	var raw []int
	if strings.TrimSpace(list) == "" {
		raw = []int{0, ctx / 8, ctx / 4, ctx / 2, 3 * ctx / 4}
	} else {
		for _, s := range strings.Split(list, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			n, err := calc.ParseTokens(s)
			if err != nil {
				return nil, fmt.Errorf("--spill: %w", err)
			}
			if n > maxSpillCtx {
				return nil, fmt.Errorf("--spill %d: more than %d cells", n, maxSpillCtx)
			}
			raw = append(raw, int(n))
		}
	}
	var out []int
	for _, n := range raw {
		n = (n + chunk - 1) / chunk * chunk
		out = append(out, min(n, ctx-chunk))
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, errors.New("--spill: empty list")
	}
	return out, nil
}

func benchSpill(o benchSpillOptions, errw io.Writer) (benchSpillReport, error) {
	rep := benchSpillReport{Kind: benchSpillKind, Device: o.device, ChunkCells: o.chunk, Tokens: o.tokens, Rounds: o.rounds}
	switch o.device {
	case "cuda":
	case "cpu":
		return rep, errors.New("bench spill --device cpu: the CPU backend keeps every KV cell in host memory already, so there is no device budget to spill past; host spill is a CUDA cache feature (--device cuda)")
	default:
		return rep, fmt.Errorf("--device %q: want cuda", o.device)
	}
	pair, err := kvq.ParsePair(o.kv)
	if err != nil {
		return rep, fmt.Errorf("--kv: %w", err)
	}
	switch {
	case o.chunk < 32 || o.chunk%32 != 0 || o.chunk > 1<<20:
		return rep, fmt.Errorf("--chunk %d: want a multiple of 32 up to %d", o.chunk, 1<<20)
	case o.tokens < 1 || o.rounds < 1:
		return rep, fmt.Errorf("--tokens %d and --rounds %d must be positive", o.tokens, o.rounds)
	case o.tokens*o.rounds+1 >= o.chunk:
		return rep, fmt.Errorf("--tokens %d × --rounds %d must stay below --chunk %d, so that the tail keeps its size while it is timed", o.tokens, o.rounds, o.chunk)
	}
	var ctxs []int
	for _, s := range strings.Split(o.ctx, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := calc.ParseTokens(s)
		if err != nil || n < 1 || n > maxSpillCtx {
			return rep, fmt.Errorf("--ctx %q: want 1 to %d cells", s, maxSpillCtx)
		}
		ctxs = append(ctxs, max((int(n)+o.chunk-1)/o.chunk*o.chunk, 2*o.chunk))
	}
	slices.Sort(ctxs)
	ctxs = slices.Compact(ctxs)
	if len(ctxs) == 0 {
		return rep, errors.New("--ctx: empty list")
	}
	type plan struct{ ctx, spill int }
	var plans []plan
	for _, ctx := range ctxs {
		sizes, err := spillSizes(o.spill, ctx, o.chunk)
		if err != nil {
			return rep, err
		}
		for _, s := range sizes {
			plans = append(plans, plan{ctx, s})
		}
	}
	rep.KV, rep.Contexts, rep.Load = pair.Unrotated().String(), ctxs, loadAvg()
	path := o.model
	if path == "" {
		if _, ok := benchShapes[o.shape]; !ok {
			return rep, errUnknownShape(o.shape)
		}
		if !slices.Contains(benchWeightSets, o.weights) {
			return rep, fmt.Errorf("--weights %q: want one of %s", o.weights, strings.Join(benchWeightSets, ", "))
		}
		if path, err = syntheticModel(o.dir, o.shape, o.weights, o.seed, errw); err != nil {
			return rep, err
		}
	}
	rep.Model = path
	e, err := engine.Open(0)
	if err != nil {
		return rep, err
	}
	defer e.Close()
	rep.DeviceName = e.Info().Name
	rep.Emulated = strings.Contains(strings.ToLower(rep.DeviceName), "emulator")
	if rep.Emulated {
		rep.Note = "the device is kvlab's CPU emulator: the times are host wall-clock of emulated kernels, not a GPU's speed"
	}
	m, err := model.Load(path, model.Options{Threads: runtime.NumCPU()})
	if err != nil {
		return rep, err
	}
	defer m.Close()
	hp := m.Hparams
	if err := engine.CheckModel(hp); err != nil {
		return rep, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	rep.Arch, rep.Layers, rep.KVHeads, rep.HeadDim = hp.Arch, hp.Layers, hp.KVHeads, hp.HeadDimK
	dm, err := e.LoadModel(m, engine.ModelOptions{})
	if err != nil {
		return rep, err
	}
	defer dm.Close()
	rep.WeightBytes = dm.Upload().Bytes

	prog := newProgress(errw, len(plans)*(o.rounds+1), "bench spill")
	defer prog.Finish()
	type point struct {
		c           *engine.Cache
		times       []float64
		first, last []float32 // logits of the first and the last step
	}
	var pts []point
	defer func() {
		for _, p := range pts {
			p.c.Free()
		}
	}()
	vocab := hp.Vocab
	logits := make([]float32, vocab)
	for _, pl := range plans {
		ctx, s := pl.ctx, pl.spill
		cfg := dm.CacheConfig(pair, ctx+o.tokens*o.rounds+2)
		var c *engine.Cache
		if s == 0 {
			c, err = e.NewCache(cfg)
		} else {
			c, err = e.NewSpillCache(cfg, engine.SpillOptions{Resident: ctx - s, Chunk: o.chunk})
		}
		if err != nil {
			return rep, fmt.Errorf("a cache of %d cells with %d in host memory: %w", cfg.MaxCells, s, err)
		}
		pts = append(pts, point{c: c})
		// The same cells at every point of a context, so that their logits compare.
		if err := fillRandom(c, cfg.Layers, ctx, cfg.KVHeads*cfg.HeadDimK, rand.New(rand.NewPCG(o.seed, uint64(ctx)))); err != nil {
			return rep, err
		}
		// One step first: it moves the full newest chunk to the host, so the tail is s cells.
		if err := dm.Forward([]int32{1}, c, logits); err != nil {
			return rep, err
		}
		pts[len(pts)-1].first = slices.Clone(logits)
		if c.HostCells() != s {
			return rep, fmt.Errorf("internal: %d cells in host memory, want %d", c.HostCells(), s)
		}
		prog.Add(1)
	}
	for round := 0; round < o.rounds; round++ {
		for i := range pts {
			tok := []int32{int32(3 + round%max(vocab-3, 1))}
			t0 := time.Now()
			for k := 0; k < o.tokens; k++ {
				if err := dm.Forward(tok, pts[i].c, logits); err != nil {
					return rep, err
				}
				tok[0] = int32(3 + (k*977)%max(vocab-3, 1))
			}
			pts[i].times = append(pts[i].times, time.Since(t0).Seconds()/float64(o.tokens))
			pts[i].last = slices.Clone(logits)
			prog.Add(1)
		}
	}
	perCell := float64(hp.Layers) * pair.Unrotated().BytesPerToken(hp.HeadDimK, hp.HeadDimV, hp.KVHeads)
	for i, p := range pts {
		sorted := slices.Sorted(slices.Values(p.times))
		host := p.c.HostCells()
		mid := plans[i].ctx + 1 + o.tokens*o.rounds/2
		pt := benchSpillPoint{BaseCtx: plans[i].ctx, SpilledCells: plans[i].spill, Ctx: mid, ResidentCells: mid - host, HostCells: host,
			TailBytes: p.c.StreamBytes(), DeviceKVBytes: int64(float64(mid-host) * perCell),
			Seconds: sorted[0], MedianSeconds: sorted[len(sorted)/2], TPS: 1 / sorted[0]}
		rep.Points = append(rep.Points, pt)
	}
	for i := range rep.Points {
		p := &rep.Points[i]
		j := slices.IndexFunc(rep.Points, func(b benchSpillPoint) bool { return b.BaseCtx == p.BaseCtx && b.HostCells == 0 })
		if j >= 0 {
			base := rep.Points[j]
			p.RatioResident = p.TPS / base.TPS
			if extra := p.Seconds - base.Seconds; p.TailBytes > 0 && extra > 0 {
				p.LinkGBps = float64(p.TailBytes) / extra / 1e9
			}
			if p.HostCells > 0 {
				a, b := pts[i], pts[j]
				p.LogitsRelRMS = max(lab.RelRMS(a.first, b.first), lab.RelRMS(a.last, b.last))
				agree := sample.Argmax(a.first) == sample.Argmax(b.first) && sample.Argmax(a.last) == sample.Argmax(b.last)
				p.ArgmaxAgrees = &agree
			}
		}
	}
	return rep, nil
}

func writeBenchSpillTable(w io.Writer, rep benchSpillReport) error {
	fmt.Fprintf(w, "%s (%s, %d layers, %d KV heads × %d) on %s; KV %s; %d timed tokens after the context; chunks of %d cells; %d rounds of %d tokens\n",
		filepath.Base(rep.Model), rep.Arch, rep.Layers, rep.KVHeads, rep.HeadDim, rep.DeviceName, rep.KV,
		rep.Tokens*rep.Rounds, rep.ChunkCells, rep.Rounds, rep.Tokens)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "context\tspilled cells\tresident cells\thost MiB/token\ttok/s (best)\ttok/s (median)\tvs resident\timplied link GB/s\tlogits vs resident\t\n")
	for _, p := range rep.Points {
		ratio, link := "", ""
		if p.RatioResident > 0 {
			ratio = fmt.Sprintf("%.3f×", p.RatioResident)
		}
		if p.LinkGBps > 0 {
			link = calc.FormatSig(p.LinkGBps, 3)
		}
		par := ""
		if p.ArgmaxAgrees != nil {
			par = fmt.Sprintf("%.2g", p.LogitsRelRMS)
			if !*p.ArgmaxAgrees {
				par += " (argmax differs)"
			}
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f\t%.4g\t%.4g\t%s\t%s\t%s\t\n", p.BaseCtx, p.HostCells, p.ResidentCells, float64(p.TailBytes)/(1<<20),
			p.TPS, 1/p.MedianSeconds, ratio, link, par)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Note != "" {
		fmt.Fprintf(w, "note: %s\n", rep.Note)
	}
	_, err := fmt.Fprintf(w, "load average before: %s\n", rep.Load)
	return err
}
