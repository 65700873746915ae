package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kvlab/kvlab/internal/history"
	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/lab"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/runner"
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/spf13/cobra"
)

// abOptions are the flags of `kvlab ab`; they are stored with the run as its configuration.
type abOptions struct {
	Model        string  `json:"model"`
	Arms         string  `json:"arms"`
	TextFile     string  `json:"text_file,omitempty"`
	Prompt       string  `json:"prompt,omitempty"`
	Ctx          int     `json:"ctx"`
	N            int     `json:"n"`
	Window       int     `json:"kv_window,omitempty"`
	Sinks        int     `json:"kv_sink,omitempty"`
	KGain        float32 `json:"k_gain,omitempty"`
	Threads      int     `json:"threads"`
	NeedleTrials int     `json:"needle_trials,omitempty"`
	NoNeedle     bool    `json:"no_needle,omitempty"`
	SpeedRounds  int     `json:"speed_rounds,omitempty"`
	Seed         uint64  `json:"seed"`
	Device       string  `json:"device,omitempty"`
	asJSON       bool
	kvDump       string
	csvPath      string
	dbPath       string
	noSave       bool
}

// abOutput is what `kvlab ab --json` prints and `kvlab runs show --json` prints again.
type abOutput struct {
	ID       int64           `json:"id,omitempty"`
	DB       string          `json:"db,omitempty"`
	File     string          `json:"file"`
	SHA256   string          `json:"sha256"`
	Status   history.Status  `json:"status,omitempty"`
	Started  time.Time       `json:"started,omitzero"`
	Machine  history.Machine `json:"machine"`
	Settings json.RawMessage `json:"flags,omitempty"`
	*lab.ABReport
}

func newAbCmd() *cobra.Command {
	var o abOptions
	cmd := &cobra.Command{
		Use:   "ab --model FILE.gguf [--arms f16,q8_0,q4_0,…]",
		Short: "What each KV format costs a model: KL, top-1, attention error, needles, speed vs f16",
		Long: `Measure every arm (a KV format or K/V pair, optionally with the FP16 window + sinks
overlay and q2k K gain) against an f16 cache on the same tokens, four ways:

  decode KL   teacher-forced decode: each arm is fed the f16 run's continuation one token at
              a time (--n positions); per position KL(f16 ‖ arm) and top-1 agreement: the mean
              and 99th-percentile KL in nats and the top-1 %. The overlay acts here.
  prompt KL   the same over the prompt's logits (prefill; the overlay does not act there).
  PPL         the text's perplexity with the arm's cache, by llama.cpp's convention (chunks of
              --ctx tokens, second halves scored): the f16 arm's equals 'kvlab ppl'.
  attn err    per layer, the relative RMS error of softmax(q·Kᵀ/√d)·V over the arm's cache
              against the f16 cache, both holding the f16 run's own K/V (the mean is shown).
  needle      four-digit facts buried at 10/50/90 % depth of a story, asked for at the end in
              the fixtures' retrieval format, answered greedily, scored exact.
  speed       prefill and decode tokens/s, KV bytes per token over all layers. --speed-rounds R
              times the decode R times (the extra rounds prefill again, the runs interleaved
              position by position) and sums each position's fastest time: on a busy machine
              another process's time slices then stay out of the comparison.

A second f16 run must reproduce the first bit for bit (KL exactly 0); the command checks it
and fails when it does not. The text is --text FILE, --prompt TEXT, or a built-in
TinyStories-style story. Arms are comma-separated; an arm may carry its own overlay and gain
as +wN (overlay window: f16 copies over the quantized cache), +pN (the most recent N cells
only in f16 over a quantized tail), +sN (sinks), +gB (K gain), e.g. q2k+w64+s8+g1.1 or
q4_0+p64+s8; --kv-window, --kv-sink and --k-gain set them for arms that don't. +lA-B=PAIR
(repeatable) gives layers A … B (from 0) their own pair, a per-layer bit allocation:
turbo3+l0-1=turbo4/turbo3 stores the first two layers' K in turbo4; B/token counts every
layer's bytes.

--kv-dump FILE runs only the attention-output gate (as 'kvlab gate' does on synthetic K/V) on a
real cache: a snapshot of this model written by 'kvlab run --save-kv' (best in f16), read back
in f32. Each arm stores the dump's cells as a prefill would; the table gives, per layer, the
relative error of decode attention over the arm's cache against the dump's own values, with
proxy queries (keys of the last cells, scaled to a score std of 2.5). Every run is stored in the run history (see 'kvlab
runs'); --db or $KVLAB_DB pick the database.`,
		Example: `  kvlab ab --model ../shared/models/kvlab-tiny-64.gguf
  kvlab ab --model model.gguf --arms f16,q8_0,q4_0 --text doc.txt --ctx 1024 --n 128 --json
  kvlab ab --model model.gguf --arms q4_0,q2k,q2k+g1.1 --kv-window 64 --kv-sink 8 --csv ab.csv
  kvlab ab --model model.gguf --arms q4_0,q4_0+w64+s8,q4_0+p64+s8
  kvlab ab --model model.gguf --arms turbo3,turbo3+l0-1=turbo4/turbo3
  kvlab ab --model model.gguf --kv-dump story.kv --arms q8_0,q4_0,q4_0+p64+s4,tq4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAB(cmd, &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Model, "model", "", "GGUF model file (llama or qwen2 architecture)")
	f.StringVar(&o.Arms, "arms", lab.DefaultArms, "arms: KV formats or K/V pairs, each optionally +wN+sN+gB")
	f.StringVar(&o.TextFile, "text", "", "text file to measure on (default: a built-in story)")
	f.StringVar(&o.Prompt, "prompt", "", "text to measure on, given inline")
	f.IntVar(&o.Ctx, "ctx", 0, "cells per run and perplexity chunk length; 0: the trained context, at most 512")
	f.IntVarP(&o.N, "n", "n", 0, "teacher-forced decode positions; 0 means 64")
	f.IntVar(&o.Window, "kv-window", 0, "most recent cells kept exact in f16, for arms without +w")
	f.IntVar(&o.Sinks, "kv-sink", 0, "first cells kept exact in f16, for arms without +s")
	f.Float32Var(&o.KGain, "k-gain", 1, "q2k K reconstruction gain B, for arms without +g")
	f.IntVar(&o.Threads, "threads", 0, "threads for the forward pass; 0 uses every CPU")
	f.IntVar(&o.NeedleTrials, "needle-trials", 3, "needle prompts per depth")
	f.BoolVar(&o.NoNeedle, "no-needle", false, "skip the needle probe")
	f.IntVar(&o.SpeedRounds, "speed-rounds", 1, "times the decode is timed; each position's fastest counts")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the KV rotations (rotated formats, tq4, turbo) and the needles' numbers")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON document")
	f.StringVar(&o.kvDump, "kv-dump", "", "run only the attention-output gate, on the K/V of this snapshot `file` (kvlab run --save-kv) instead of a generation")
	f.StringVar(&o.Device, "device", "cpu", "where the compared runs compute: cpu or cuda (the f16 reference decodes on the CPU)")
	f.StringVar(&o.csvPath, "csv", "", "also write one CSV row per arm to this file")
	f.StringVar(&o.dbPath, "db", "", "run history database (default $KVLAB_DB, else runs.db in the user config dir)")
	f.BoolVar(&o.noSave, "no-save", false, "do not store the run in the history")
	return cmd
}

func runAB(cmd *cobra.Command, o *abOptions) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Model == "" {
		return errors.New("--model is required")
	}
	if o.TextFile != "" && o.Prompt != "" {
		return errors.New("--text and --prompt: give one")
	}
	if o.Ctx < 0 || o.N < 0 || o.Threads < 0 || o.Window < 0 || o.Sinks < 0 || o.NeedleTrials < 0 || o.SpeedRounds < 0 {
		return errors.New("--ctx, --n, --threads, --kv-window, --kv-sink, --needle-trials and --speed-rounds must not be negative")
	}
	if !(o.KGain > 0) {
		return fmt.Errorf("--k-gain %g: must be positive", o.KGain)
	}
	arms, err := lab.ParseArms(o.Arms, lab.ArmDefaults{Window: o.Window, Sinks: o.Sinks, KGain: o.KGain})
	if err != nil {
		return fmt.Errorf("--arms: %w", err)
	}
	if err := checkABFlags(o, arms); err != nil {
		return err
	}
	text := o.Prompt
	if o.TextFile != "" {
		b, err := os.ReadFile(o.TextFile)
		if err != nil {
			return err
		}
		text = string(b)
	}
	if text == "" && (o.TextFile != "" || cmd.Flags().Changed("prompt")) {
		return errors.New("the text is empty")
	}
	sum, size, err := history.HashFile(ctx, o.Model)
	if err != nil {
		return err
	}
	be, err := openDevice(o.Device)
	if err != nil {
		return err
	}
	if be != nil {
		defer be.Close()
	}
	m, tok, err := loadModel(o.Model, model.Options{Threads: o.Threads})
	if err != nil {
		return err
	}
	defer m.Close()
	if o.kvDump != "" {
		return runDumpGate(cmd, o, m, arms)
	}
	abCtx := o.Ctx
	if abCtx == 0 {
		abCtx = lab.DefaultCtx
		if tc := m.Hparams.Context; tc > 0 {
			abCtx = min(abCtx, tc)
		}
	}
	if err := checkABCache(m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, abCtx), arms, abCtx); err != nil {
		return err
	}
	var dm backend.Model
	if be != nil {
		if dm, err = placeModel(be, o.Device, o.Model, m, nil); err != nil {
			return err
		}
		defer dm.Close()
	}
	machine := history.ThisMachine(version)
	abs, _ := filepath.Abs(o.Model)
	flags, _ := json.Marshal(o)

	var db *history.DB
	var id int64
	if !o.noSave {
		path := o.dbPath
		if path == "" {
			if path, err = history.DefaultPath(); err != nil {
				return err
			}
		}
		if db, err = history.Open(ctx, path); err != nil {
			return err
		}
		defer db.Close()
		id, err = db.Begin(ctx, &history.Run{Kind: "ab", Machine: machine, Config: flags,
			Model: history.ModelRef{Path: abs, Name: filepath.Base(o.Model), SHA256: sum, Bytes: size}})
		if err != nil {
			return err
		}
	}

	var bar *progress
	last := 0
	texts := newABTexts(tok, text, len(arms))
	cfg := lab.ABConfig{Arms: arms, Text: text, Ctx: o.Ctx, N: o.N, Seed: o.Seed, Backend: dm, OnStart: texts.start, OnStep: texts.step,
		SpeedRounds: o.SpeedRounds,
		Needle:      lab.NeedleConfig{Skip: o.NoNeedle, Trials: o.NeedleTrials},
		Progress: func(done, total int, stage string) {
			if bar == nil {
				bar = newProgress(cmd.ErrOrStderr(), total, "ab")
			}
			if bar.bar != nil {
				bar.bar.Describe("ab: " + stage)
			}
			bar.Add(done - last)
			last = done
		}}
	rep, err := lab.RunAB(ctx, m, tok, cfg)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		if db != nil {
			// Record the failure with a context that outlives a cancelled run.
			_ = db.Fail(context.WithoutCancel(ctx), id, err)
		}
		return err
	}
	if db != nil {
		if err := db.Finish(ctx, id, rep); err != nil {
			return err
		}
		// The run's texts (the prompt, what was fed after it, each cache's own top-1) go with its
		// flags, so that /runs/ID shows them.
		if cj, err := json.Marshal(abStored{abOptions: *o, abTexts: texts.done()}); err == nil {
			if err := db.SetConfig(ctx, id, cj); err != nil {
				return err
			}
		}
	}
	out := abOutput{File: abs, SHA256: sum, Machine: machine, Settings: flags, ABReport: rep, ID: id}
	if db != nil {
		out.DB = db.Path()
	}
	if o.csvPath != "" {
		if err := writeABCSV(o.csvPath, rep); err != nil {
			return err
		}
	}
	w := cmd.OutOrStdout()
	if o.asJSON {
		if err := writeJSON(w, out); err != nil {
			return err
		}
	} else if err := printAB(w, &out); err != nil {
		return err
	}
	if !rep.Determ.Identical {
		return fmt.Errorf("determinism: a second f16 run differs from the first (max KL %g over %d rows)", rep.Determ.MaxKL, rep.Determ.Rows)
	}
	return nil
}

// abTexts are the texts of a run as the server's run page reads them from its configuration.
type abTexts struct {
	Source   string   `json:"source"` // "cli"
	Mode     string   `json:"mode"`   // "text": the document's own tokens are fed
	Prompt   string   `json:"prompt_text"`
	Text     string   `json:"text"`
	RefText  string   `json:"ref_text"`
	ArmTexts []string `json:"arm_texts"`
}

// abStored is the configuration `kvlab ab` stores: its flags and the run's texts.
type abStored struct {
	abOptions
	abTexts
}

// MarshalJSON writes the flags and the texts side by side, the prompt's text as "prompt_text"
// (the flags' "prompt" is the whole document when --prompt gave one).
func (s abStored) MarshalJSON() ([]byte, error) {
	flags, err := json.Marshal(s.abOptions)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(flags, &m); err != nil {
		return nil, err
	}
	m["source"], m["mode"], m["text"], m["ref_text"], m["arm_texts"] = s.Source, s.Mode, s.Text, s.RefText, s.ArmTexts
	m["prompt_text"] = s.abTexts.Prompt
	return json.Marshal(m)
}

// abTextBuilder collects a run's texts from lab.RunAB's events, as the server's lab does.
type abTextBuilder struct {
	tok      *tokenizer.Tokenizer
	ids      []int32 // the document, BOS first when the vocabulary adds one
	prompt   string
	fed, ref *tokenizer.Stream
	fedText  strings.Builder
	refText  strings.Builder
	arms     []strings.Builder
}

func newABTexts(tok *tokenizer.Tokenizer, text string, arms int) *abTextBuilder {
	if text == "" {
		text = lab.DefaultText
	}
	ids := tok.Encode(text, false, false)
	if tok.BOS() != tokenizer.NoToken {
		ids = append([]int32{tok.BOS()}, ids...)
	}
	return &abTextBuilder{tok: tok, ids: ids, fed: tok.NewStream(false), ref: tok.NewStream(false), arms: make([]strings.Builder, arms)}
}

func (b *abTextBuilder) start(s lab.ABSettings, _ []int64) {
	if n := min(s.PromptTokens, len(b.ids)); n > 0 {
		b.prompt = b.tok.Decode(b.ids[:n])
	}
}

func (b *abTextBuilder) step(e lab.StepEvent) {
	piece := b.fed.Add(e.Token)
	b.fedText.WriteString(piece)
	refPiece := b.ref.Add(e.RefTop1)
	b.refText.WriteString(refPiece)
	for j, a := range e.Arms {
		t := refPiece
		if !a.Agree {
			t = b.tok.Piece(a.Top1, false)
		}
		if j < len(b.arms) {
			b.arms[j].WriteString(t)
		}
	}
}

func (b *abTextBuilder) done() abTexts {
	b.fedText.WriteString(b.fed.Flush())
	b.refText.WriteString(b.ref.Flush())
	t := abTexts{Source: "cli", Mode: "text", Prompt: b.prompt, Text: b.fedText.String(), RefText: b.refText.String()}
	for i := range b.arms {
		t.ArmTexts = append(t.ArmTexts, b.arms[i].String())
	}
	return t
}

// printAB writes the A/B table and its notes.
func printAB(w io.Writer, o *abOutput) error {
	rep := o.ABReport
	mi := rep.Model
	fmt.Fprintf(w, "%s: %s, %d layers, %d/%d heads, head_dim %d, vocab %d, %s weights, %d threads\n",
		filepath.Base(o.File), mi.Arch, mi.Layers, mi.Heads, mi.KVHeads, mi.HeadDimK, mi.Vocab, mi.WeightType, mi.Threads)
	s := rep.Settings
	fmt.Fprintf(w, "ctx %d: prompt %d tokens + %d teacher-forced decode positions; text %d tokens\n\n",
		s.Ctx, s.PromptTokens, s.N, s.TextTokens)
	t := table{header: []string{"arm", "B/token", "KV KiB", "decode KL", "p99", "decode top-1", "prompt KL", "prompt top-1", "PPL",
		"attn err", "needle", "prefill t/s", "decode t/s"}}
	for _, a := range rep.Arms {
		ppl := "-"
		if a.PPL > 0 {
			ppl = fmt.Sprintf("%.3f", a.PPL)
		}
		needle := a.Needle.String()
		t.add(a.Arm, fmt.Sprintf("%.0f", a.BytesPerToken), fmt.Sprintf("%.1f", float64(a.KVBytes)/1024), fmt.Sprintf("%.5f", a.Decode.KLMean),
			fmt.Sprintf("%.4f", a.Decode.KLP99), pct(a.Decode.Top1), fmt.Sprintf("%.5f", a.Prompt.KLMean),
			pct(a.Prompt.Top1), ppl, pct(a.AttnErrMean), needle, fmt.Sprintf("%.0f", a.PrefillTPS),
			fmt.Sprintf("%.0f", a.DecodeTPS))
	}
	if err := t.write(w); err != nil {
		return err
	}
	ref := rep.Ref
	fmt.Fprintln(w)
	refPPL := "- (text shorter than one chunk)"
	if ref.PPL > 0 {
		refPPL = fmt.Sprintf("%.4f over %d chunks of %d", ref.PPL, s.PPLChunks, s.Ctx)
	}
	fmt.Fprintf(w, "f16 reference: PPL %s; decode-path PPL %.4f; needle %s; %.0f prefill / %.0f decode tokens/s\n",
		refPPL, ref.DecodePPL, ref.Needle.String(), ref.PrefillTPS, ref.DecodeTPS)
	d := rep.Determ
	if d.Identical {
		fmt.Fprintf(w, "determinism: a second f16 run is bit-identical to the first (%d rows): KL exactly 0\n", d.Rows)
	} else {
		fmt.Fprintf(w, "determinism: FAILED: a second f16 run differs from the first (max KL %g over %d rows)\n", d.MaxKL, d.Rows)
	}
	q := "the f16 run's own queries"
	if rep.QuerySource != "model" {
		q = "key proxy (the model does not report its queries): continuation keys scaled to a score std of 2.5, over the prompt cells"
	}
	fmt.Fprintf(w, "attn err: mean over layers; queries: %s\n", q)
	fmt.Fprintln(w, "KL in nats per position; B/token: K+V bytes of one cell over all layers in the pair (f16 copies excluded);")
	fmt.Fprintf(w, "KV KiB: the cache's exact memory at %d cells (+w: the pair for every cell and f16 copies; +p: f16 recent cells and sinks, the pair for the rest)\n", s.Ctx)
	if o.ID > 0 {
		fmt.Fprintf(w, "stored as run %d in %s\n", o.ID, o.DB)
	}
	return nil
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// abCSVHeader names the CSV columns of one arm.
var abCSVHeader = []string{"arm", "pair", "window", "sinks", "k_gain", "bytes_per_token", "kv_bytes",
	"decode_kl_mean", "decode_kl_p99", "decode_kl_max", "decode_top1", "prompt_kl_mean", "prompt_kl_p99",
	"prompt_top1", "ppl", "decode_ppl", "attn_err_mean", "attn_err_layers", "needle_ok", "needle_total",
	"prefill_tps", "decode_tps"}

// abCSVRows are a report's arms as CSV rows under abCSVHeader.
func abCSVRows(rep *lab.ABReport) [][]string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 8, 64) }
	var rows [][]string
	for _, a := range rep.Arms {
		var layers []string
		for _, e := range a.AttnErr {
			layers = append(layers, g(e))
		}
		rows = append(rows, []string{a.Arm, a.Pair, strconv.Itoa(a.Window), strconv.Itoa(a.Sinks), g(float64(a.KGain)),
			g(a.BytesPerToken), strconv.FormatInt(a.KVBytes, 10), g(a.Decode.KLMean), g(a.Decode.KLP99),
			g(a.Decode.KLMax), g(a.Decode.Top1), g(a.Prompt.KLMean), g(a.Prompt.KLP99), g(a.Prompt.Top1),
			g(a.PPL), g(a.DecodePPL), g(a.AttnErrMean), strings.Join(layers, ";"), strconv.Itoa(a.Needle.OK),
			strconv.Itoa(a.Needle.Total), g(a.PrefillTPS), g(a.DecodeTPS)})
	}
	return rows
}

func writeABCSV(path string, rep *lab.ABReport) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(abCSVHeader)
	for _, row := range abCSVRows(rep) {
		w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// dumpGateOutput is what `kvlab ab --kv-dump --json` prints.
type dumpGateOutput struct {
	Dump    string               `json:"dump"`
	Cells   int                  `json:"cells"`
	From    string               `json:"from"`
	Queries string               `json:"queries"`
	Arms    []lab.DumpGateResult `json:"arms"`
}

// runDumpGate is `kvlab ab --kv-dump`: the attention-output gate of every arm on the K/V of a
// snapshot of this model, read back in f32.
func runDumpGate(cmd *cobra.Command, o *abOptions, m *model.Model, arms []lab.Arm) error {
	if o.Device != "" && o.Device != "cpu" {
		return fmt.Errorf("--kv-dump runs on the CPU, not --device %s", o.Device)
	}
	cells, err := kvcache.SnapshotCells(o.kvDump)
	if err != nil {
		return fmt.Errorf("--kv-dump: %w", err)
	}
	if cells < 2 {
		return fmt.Errorf("--kv-dump %s: %d cells; the gate needs at least 2", o.kvDump, cells)
	}
	cfg := m.CacheConfig(kvq.Pair{K: kvq.F32, V: kvq.F32}, cells)
	if err := hostFits(fmt.Sprintf("the dump's %d cells in f32", cells), 2*kvcache.EstimateBytes(cfg)); err != nil {
		return err
	}
	dump, err := kvcache.New(cfg)
	if err != nil {
		return err
	}
	_, info, err := kvcache.LoadSnapshot(o.kvDump, dump, runner.ModelIdentity(m, o.Model))
	if err != nil {
		return fmt.Errorf("--kv-dump: %w", err)
	}
	res, err := lab.RunDumpGate(dump, m.Hparams.Heads, arms, o.Seed)
	if err != nil {
		return err
	}
	out := dumpGateOutput{Dump: filepath.Base(o.kvDump), Cells: cells, From: info.Pair,
		Queries: "key proxy: each query head takes a key of the last cells, scaled to a score std of 2.5", Arms: res}
	w := cmd.OutOrStdout()
	if o.asJSON {
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "%s: %d cells stored in %s, read back in f32; %d layers, %d/%d heads\n\n", out.Dump, cells, info.Pair,
		m.Hparams.Layers, m.Hparams.Heads, m.Hparams.KVHeads)
	t := table{header: []string{"arm", "KV KiB", "attn err mean", "max layer", "per layer"}}
	for _, a := range res {
		var per []string
		for _, e := range a.Layers {
			per = append(per, pct(e))
		}
		t.add(a.Arm, fmt.Sprintf("%.1f", float64(a.KVBytes)/1024), pct(a.Mean), pct(a.Max), strings.Join(per, " "))
	}
	if err := t.write(w); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nattn err: ‖o_arm − o_dump‖/‖o_dump‖ of decode attention (window and sinks act); the reference is the dump's own values")
	fmt.Fprintln(w, "queries:", out.Queries)
	return nil
}
