package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kvlab/kvlab/native/backend/cpu"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/lab"
	"github.com/kvlab/kvlab/native/model"
	"github.com/spf13/cobra"
)

// pplResult is what `kvlab ppl --json` prints.
type pplResult struct {
	Model    string `json:"model"`
	File     string `json:"file"`
	KVFormat string `json:"kv_format"`
	Context  int    `json:"ctx"`
	Tokens   int    `json:"tokens"`
	lab.PPLResult
}

func newPplCmd() *cobra.Command {
	var (
		modelPath, file, kv string
		ctx, threads        int
		window, sinks       int
		kGain               float32
		asJSON              bool
		device              string
	)
	cmd := &cobra.Command{
		Use:   "ppl --model FILE.gguf --file TEXT",
		Short: "Perplexity of a text with the KV cache in a chosen format (llama.cpp's convention)",
		Long: `Compute perplexity the way llama.cpp's llama-perplexity does, so the numbers compare: the text
is tokenized (with BOS when the vocabulary adds one) and cut into chunks of --ctx tokens; each
chunk starts with BOS and is evaluated from an empty cache; only the second half of each chunk
is scored. It prints the running perplexity after each chunk and the final estimate.`,
		Example: "  kvlab ppl --model ../shared/models/stories260K.gguf --file story.txt --ctx 128 --kv q8_0",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if modelPath == "" || file == "" {
				return errors.New("--model and --file are required")
			}
			pair, err := kvq.ParsePair(kv)
			if err != nil {
				return fmt.Errorf("--kv: %w", err)
			}
			text, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			be, err := openDevice(device)
			if err != nil {
				return err
			}
			if be == nil {
				be = cpu.New()
			}
			defer be.Close()
			m, tok, err := loadModel(modelPath, model.Options{Threads: threads})
			if err != nil {
				return err
			}
			defer m.Close()
			dm, err := placeModel(be, device, modelPath, m, nil)
			if err != nil {
				return err
			}
			defer dm.Close()
			if ctx <= 0 {
				ctx = 512
				if c := m.Hparams.Context; c > 0 && c < ctx {
					ctx = c
				}
			}
			cfg := m.CacheConfig(pair, ctx)
			cfg.Window, cfg.Sinks, cfg.KGain = window, sinks, kGain
			cache, err := dm.NewCache(cfg)
			if err != nil {
				return err
			}
			defer cache.Free()
			tokens := tok.Encode(string(text), true, false)
			bos := int32(-1)
			if tok.AddBOS() {
				bos = tok.BOS()
			}
			chunks := len(tokens) / ctx
			prog := newProgress(cmd.ErrOrStderr(), max(chunks, 1), "ppl")
			var line strings.Builder
			res, err := lab.Perplexity(cache, m.Hparams.Vocab, tokens, ctx, bos, func(done, total int, ppl float64) {
				prog.Add(1)
				fmt.Fprintf(&line, "[%d]%.4f,", done, ppl)
			})
			prog.Finish()
			if err != nil {
				return err
			}
			out := pplResult{Model: modelPath, File: file, KVFormat: pair.String(), Context: ctx, Tokens: len(tokens), PPLResult: res}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, strings.TrimSuffix(line.String(), ","))
			fmt.Fprintf(w, "perplexity %.4f over %d chunks of %d tokens (%d tokens scored, KV %s)\n",
				res.PPL, res.Chunks, ctx, res.Scored, pair)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&modelPath, "model", "", "GGUF model file")
	f.StringVar(&file, "file", "", "text file to score")
	f.IntVar(&ctx, "ctx", 0, "tokens per chunk (default 512, or the model's trained context when shorter)")
	f.StringVar(&kv, "kv", "f16", "KV format or K/V pair")
	f.IntVar(&window, "kv-window", 0, "FP16 window of recent cells (acts at decode only, so not in perplexity)")
	f.IntVar(&sinks, "kv-sink", 0, "FP16 attention-sink cells")
	f.Float32Var(&kGain, "k-gain", 1, "q2k K reconstruction gain")
	f.IntVar(&threads, "threads", 0, "threads (default: all cores)")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	f.StringVar(&device, "device", "cpu", "where the forward pass runs: cpu or cuda")
	return cmd
}
