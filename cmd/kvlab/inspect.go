package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/hf"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/ggufshape"
	"github.com/spf13/cobra"
)

// inspectReport is what `kvlab inspect --json` prints.
type inspectReport struct {
	File         string          `json:"file"`
	SizeBytes    int64           `json:"size_bytes"`
	GGUFVersion  uint32          `json:"gguf_version"`
	Format       string          `json:"format,omitempty"`
	Architecture string          `json:"architecture"`
	Name         string          `json:"name,omitempty"`
	Supported    bool            `json:"supported"`
	Unsupported  string          `json:"unsupported_reason,omitempty"`
	Engine       string          `json:"engine"`            // "runs", or "needs …"
	Missing      string          `json:"missing,omitempty"` // what the engine lacks for this file
	CUDA         string          `json:"cuda,omitempty"`    // --device cuda: "runs", or why not (when the CPU runs it)
	Tensors      int             `json:"tensors"`
	WeightTypes  map[string]int  `json:"weight_types"`
	WeightBytes  int64           `json:"weight_bytes"`
	Shape        *calc.Shape     `json:"shape,omitempty"`
	Class        string          `json:"class,omitempty"`
	ShapeError   string          `json:"shape_error,omitempty"`
	Tokenizer    *inspectTok     `json:"tokenizer,omitempty"`
	TokError     string          `json:"tokenizer_error,omitempty"`
	KV           []inspectKVRow  `json:"kv_per_token,omitempty"`
	Metadata     map[string]any  `json:"metadata,omitempty"`
	Hparams      *model.Hparams  `json:"hparams,omitempty"`
	TensorList   []inspectTensor `json:"tensor_list,omitempty"`
	RopeFreqs    bool            `json:"rope_freqs,omitempty"` // a rope_freqs tensor (llama-3 scaling)
	extraNotes   []string
}

type inspectTok struct {
	Model     string `json:"model"`
	Pre       string `json:"pre,omitempty"`
	VocabSize int    `json:"vocab_size"`
	BOS       int32  `json:"bos"`
	EOS       int32  `json:"eos"`
}

type inspectKVRow struct {
	Format       string  `json:"format"`
	KiBPerTok    float64 `json:"kib_per_token"`
	BytesAtTrain int64   `json:"bytes_at_native_context,omitempty"`
}

type inspectTensor struct {
	Name string   `json:"name"`
	Type string   `json:"type"`
	Dims []uint64 `json:"dims"`
}

func newInspectCmd() *cobra.Command {
	var asJSON, tensors, metadata, listArchs bool
	var modelPath string
	cmd := &cobra.Command{
		Use:   "inspect --model FILE.gguf|DIR",
		Short: "Show a GGUF model's architecture, shapes, weight types, tokenizer and KV size per format",
		Long: `Read a GGUF file's header and print what kvlab knows about the model: its architecture and
whether the engine runs it, layer shapes, weight types, the tokenizer, and the KV-cache size per
token for each format pair (computed by the same planner code as 'kvlab plan').

Only the header is parsed; tensor data is not read. A Hugging Face model folder (config.json,
*.safetensors, tokenizer.json) is read as the GGUF file a converter would make of it. --archs
lists the architectures the engine runs and, for the others, what it needs.`,
		Example: "  kvlab inspect --model ../shared/models/stories260K.gguf\n  kvlab inspect model.gguf --json --tensors\n  kvlab inspect --archs",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if listArchs {
				return writeArchs(cmd.OutOrStdout(), asJSON)
			}
			path := modelPath
			switch {
			case len(args) == 1 && path != "" && args[0] != path:
				return fmt.Errorf("two files: --model %s and %s; give one", path, args[0])
			case len(args) == 1:
				path = args[0]
			case path == "":
				return errors.New("which file? kvlab inspect --model FILE.gguf")
			}
			rep, err := inspect(path, tensors, metadata)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return writeInspect(cmd.OutOrStdout(), rep)
		},
	}
	cmd.Flags().StringVar(&modelPath, "model", "", "the GGUF `FILE` to read (a positional FILE works too)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	cmd.Flags().BoolVar(&tensors, "tensors", false, "list every tensor")
	cmd.Flags().BoolVar(&metadata, "metadata", false, "list every metadata key (long arrays abbreviated)")
	cmd.Flags().BoolVar(&listArchs, "archs", false, "list the architectures: the ones the engine runs, and what it needs for the others")
	return cmd
}

func inspect(path string, withTensors, withMetadata bool) (*inspectReport, error) {
	f, err := hf.OpenHeader(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, format := f.Size(), ""
	if hf.IsFolder(path) {
		format = "Hugging Face folder" // read as the GGUF file the converter would write
	}
	rep := &inspectReport{File: path, SizeBytes: size, GGUFVersion: f.Version, Architecture: f.Architecture(),
		WeightTypes: map[string]int{}, Format: format}
	rep.Name, _ = f.String("general.name")
	for _, t := range f.Tensors() {
		rep.Tensors++
		rep.WeightTypes[t.Type.String()]++
		rep.WeightBytes += int64(t.Bytes())
		if withTensors {
			rep.TensorList = append(rep.TensorList, inspectTensor{Name: t.Name, Type: t.Type.String(), Dims: t.Dims})
		}
	}
	rep.Missing = model.FileNeeds(f)
	_, rep.RopeFreqs = f.Tensor("rope_freqs.weight")
	if hp, err := model.ReadHparams(f); err == nil && rep.Missing == "" {
		// "runs it" only when run would: the same load and checks.
		if err := runnable(path); err != nil {
			rep.Unsupported = err.Error()
		} else {
			rep.Supported, rep.Hparams = true, &hp
		}
	} else if err != nil {
		rep.Unsupported = err.Error()
	} else {
		rep.Unsupported = fmt.Sprintf("the engine runs %s files, but this one needs %s", rep.Architecture, rep.Missing)
	}
	switch {
	case rep.Supported:
		rep.Engine = "runs"
		rep.CUDA = "runs"
		if err := engine.CheckModel(*rep.Hparams); err != nil {
			rep.CUDA = "does not run: " + err.Error()
		}
	case rep.Missing != "":
		rep.Engine = "needs " + rep.Missing
	default:
		rep.Engine = "does not run"
	}
	if rep.Tensors > 0 {
		if shape, err := ggufshape.FromFile(f); err == nil {
			rep.Shape, rep.Class = &shape, shape.Class().String()
			for _, p := range calc.DefaultPairs() {
				row := inspectKVRow{Format: p.String(), KiBPerTok: shape.BytesPerToken(p, 1) / 1024}
				if shape.NativeContext > 0 {
					row.BytesAtTrain = shape.KVBytes(p, shape.NativeContext, 1)
				}
				rep.KV = append(rep.KV, row)
			}
		} else {
			rep.ShapeError = err.Error()
		}
	}
	if tok, err := tokenizer.FromGGUF(f); err == nil {
		rep.Tokenizer = &inspectTok{Model: tok.Kind().String(), Pre: tok.Pre(), VocabSize: tok.VocabSize(), BOS: tok.BOS(), EOS: tok.EOS()}
	} else if !errors.Is(err, tokenizer.ErrNoTokenizer) {
		rep.TokError = err.Error()
	}
	if withMetadata {
		rep.Metadata = map[string]any{}
		for _, k := range f.Keys() {
			v, _ := f.Value(k)
			rep.Metadata[k] = abbreviate(v)
		}
	}
	return rep, nil
}

// archRow is one line of `kvlab inspect --archs`.
type archRow struct {
	Architecture string `json:"architecture"`
	Engine       string `json:"engine"` // "runs" or "needs …"
	// CUDA is --device cuda for an architecture the engine runs: "runs" (for files whose
	// head dimension and grouping the kernels take) or the operations the device lacks.
	CUDA string `json:"cuda,omitempty"`
}

// writeArchs lists every architecture kvlab knows: "runs", or what the engine needs for it.
func writeArchs(w io.Writer, asJSON bool) error {
	var rows []archRow
	for _, a := range model.KnownArchs() {
		e, c := "runs", "runs (head dimension 64, 128 or 256)"
		if n := model.ArchNeeds(a); n != "" {
			e, c = "needs "+n, ""
		} else if ops := engine.MissingOps(a); len(ops) > 0 {
			c = "needs " + strings.Join(ops, ", ")
		}
		rows = append(rows, archRow{a, e, c})
	}
	if asJSON {
		return writeJSON(w, rows)
	}
	t := &table{header: []string{"architecture", "engine", "cuda"}, left: map[int]bool{0: true, 1: true, 2: true}}
	for _, r := range rows {
		t.add(r.Architecture, r.Engine, r.CUDA)
	}
	return t.write(w)
}

// abbreviate shortens long arrays (token lists) to their length and first few items.
func abbreviate(v any) any {
	switch a := v.(type) {
	case []string:
		if len(a) > 8 {
			return fmt.Sprintf("[%d strings: %q …]", len(a), a[:4])
		}
	case []float32:
		if len(a) > 8 {
			return fmt.Sprintf("[%d floats: %v …]", len(a), a[:4])
		}
	case []int32:
		if len(a) > 8 {
			return fmt.Sprintf("[%d ints: %v …]", len(a), a[:4])
		}
	}
	return v
}

func writeInspect(w io.Writer, r *inspectReport) error {
	if r.Format != "" {
		fmt.Fprintf(w, "%s (%s, %s)\n", r.File, calc.FormatBytes(r.SizeBytes), r.Format)
	} else {
		fmt.Fprintf(w, "%s (%s, GGUF v%d)\n", r.File, calc.FormatBytes(r.SizeBytes), r.GGUFVersion)
	}
	name := r.Architecture
	if r.Name != "" && r.Name != r.Architecture {
		name = fmt.Sprintf("%s (%s)", r.Name, r.Architecture)
	}
	fmt.Fprintf(w, "model:      %s\n", name)
	if r.Supported {
		hp := r.Hparams
		fmt.Fprintf(w, "engine:     runs it (kvlab run)\n")
		fmt.Fprintf(w, "cuda:       %s\n", r.CUDA)
		fmt.Fprintf(w, "shape:      %d layers, embd %d, ffn %d, %d heads / %d KV heads, head dim K %d V %d, vocab %d\n",
			hp.Layers, hp.Embd, hp.FFN, hp.Heads, hp.KVHeads, hp.HeadDimK, hp.HeadDimV, hp.Vocab)
		scaling := fmt.Sprintf("scale %g", hp.RopeScale)
		if hp.RopeScaling == "yarn" {
			scaling = fmt.Sprintf("YaRN ×%g from %d (beta fast %g, slow %g, ext %g)", hp.RopeFactor, hp.RopeOrigCtx,
				hp.YarnBetaFast, hp.YarnBetaSlow, hp.YarnExtFactor)
		}
		if r.RopeFreqs {
			scaling += ", frequency factors (rope_freqs)"
		}
		fmt.Fprintf(w, "rope:       base %g, %d dims, %s; rms eps %g; trained context %d\n",
			hp.RopeBase, hp.RopeDims, scaling, hp.RMSEps, hp.Context)
	} else if r.Missing != "" {
		fmt.Fprintf(w, "engine:     does not run it: %s is not supported; it needs %s\n", r.Architecture, r.Missing)
	} else if r.Architecture != "" || r.Tensors > 0 {
		fmt.Fprintf(w, "engine:     does not run it: %s\n", r.Unsupported)
	}
	if r.Tensors > 0 {
		var types []string
		for t, n := range r.WeightTypes {
			types = append(types, fmt.Sprintf("%s×%d", t, n))
		}
		sort.Strings(types)
		fmt.Fprintf(w, "weights:    %d tensors, %s (%s)\n", r.Tensors, calc.FormatBytes(r.WeightBytes), strings.Join(types, ", "))
	} else {
		fmt.Fprintf(w, "weights:    none (vocabulary-only file)\n")
	}
	if r.Tokenizer != nil {
		pre := ""
		if r.Tokenizer.Pre != "" {
			pre = ", pre-tokenizer " + r.Tokenizer.Pre
		}
		fmt.Fprintf(w, "tokenizer:  %s, %d tokens%s, BOS %d, EOS %d\n", r.Tokenizer.Model, r.Tokenizer.VocabSize, pre, r.Tokenizer.BOS, r.Tokenizer.EOS)
	} else if r.TokError != "" {
		fmt.Fprintf(w, "tokenizer:  unusable: %s\n", r.TokError)
	}
	if r.ShapeError != "" {
		fmt.Fprintf(w, "kv:         cannot size: %s\n", r.ShapeError)
	}
	if len(r.KV) > 0 {
		fmt.Fprintf(w, "\nKV cache per token (%s):\n", r.Class)
		t := &table{header: []string{"format", "KiB/token"}}
		if r.Shape.NativeContext > 0 {
			t.header = append(t.header, fmt.Sprintf("KV at %d tokens", r.Shape.NativeContext))
		}
		for _, k := range r.KV {
			row := []string{k.Format, fmt.Sprintf("%.3f", k.KiBPerTok)}
			if r.Shape.NativeContext > 0 {
				row = append(row, calc.FormatBytes(k.BytesAtTrain))
			}
			t.add(row...)
		}
		if err := t.write(w); err != nil {
			return err
		}
	}
	if len(r.TensorList) > 0 {
		fmt.Fprintln(w)
		t := &table{header: []string{"tensor", "type", "dims"}, left: map[int]bool{1: true, 2: true}}
		for _, x := range r.TensorList {
			t.add(x.Name, x.Type, fmt.Sprint(x.Dims))
		}
		t.write(w)
	}
	if len(r.Metadata) > 0 {
		fmt.Fprintln(w)
		keys := make([]string, 0, len(r.Metadata))
		for k := range r.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%s = %v\n", k, r.Metadata[k])
		}
	}
	return nil
}
