package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kvlab/kvlab/native/backend"
	"github.com/kvlab/kvlab/native/backend/cpu"
	"github.com/kvlab/kvlab/native/backends"
	"github.com/kvlab/kvlab/native/cuda/engine"
	"github.com/kvlab/kvlab/native/hf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/runner"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
	"github.com/spf13/cobra"
)

// progressMin is the model file size from which `kvlab run` shows a load progress bar.
const progressMin = 64 << 20

// runOptions are the flags of `kvlab run`.
type runOptions struct {
	model   string
	prompt  string
	n       int
	kv      string
	window  int
	recent  int
	sinks   int
	saveKV  string
	loadKV  string
	kGain   float32
	sampler sample.Config
	seed    int64
	threads int
	ctx     int
	device  string
	asJSON  bool
	// resident is --kv-resident: the CUDA cache's cells on the GPU, the rest in a host-spill
	// tail (0: every cell on the GPU).
	resident int
}

// runResult is what `kvlab run --json` prints.
type runResult struct {
	Text         string  `json:"text"`
	Tokens       int     `json:"tokens"`
	PromptTokens int     `json:"prompt_tokens"`
	PromptTPS    float64 `json:"prompt_tps"`
	DecodeTPS    float64 `json:"decode_tps"`
	KVBytes      int64   `json:"kv_bytes"`
	KVFormat     string  `json:"kv_format"`
	Context      int     `json:"ctx"`
	Stop         string  `json:"stop"` // "eos", "length" or "context"
	Seed         uint64  `json:"seed,omitempty"`
	Threads      int     `json:"threads"`
	Device       string  `json:"device"` // "cpu", or "cuda: " and the GPU's name
	// PromptIDs are the prompt's token ids (BOS included) and IDs the generated ones (an
	// end-of-generation token excluded), to compare with other engines token for token.
	PromptIDs []int32 `json:"prompt_ids"`
	IDs       []int32 `json:"ids"`
	// LoadedCells are the cells a --load-kv snapshot gave (not computed again).
	LoadedCells int `json:"loaded_cells,omitempty"`
	// KVResident is --kv-resident: the cache's cells on the GPU, the rest in host memory.
	KVResident int `json:"kv_resident,omitempty"`
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --model FILE.gguf|DIR [--prompt TEXT]",
		Short: "Generate text from a GGUF model with the KV cache in a chosen format",
		Long: `Load a GGUF model (an architecture 'kvlab inspect --archs' lists as running) or a
Hugging Face model folder (config.json, *.safetensors, tokenizer.json), prefill the prompt, and generate up to --n
tokens with the KV cache stored in --kv (any format or K/V pair of 'kvlab formats'). The
generated text streams to stdout as it comes (the prompt is not echoed); at the end the prompt
and decode speed, the KV cache's bytes and its format go to stderr. With --json nothing streams
and one JSON document is printed instead, with the prompt's and the generated token ids
(prompt_ids, ids).

The prompt is tokenized with BOS prepended (and the SentencePiece dummy-prefix space), as
llama.cpp does. --temp 0 is greedy decoding; otherwise top-k, top-p and min-p filter the
distribution before a draw seeded by --seed. Generation stops at an end-of-generation token,
after --n tokens, or when the context (--ctx cells, default prompt + n) is full.

--device cuda runs the whole forward pass on the GPU (native/cuda/engine): the weights are
uploaded once (f32, f16, q8_0 and q4_0 as stored; other types dequantized to f16), the KV cache
lives on the card in --kv, and only the logits come back for sampling. It needs a model whose
head dimension the attention kernels take (64, 128 or 256), and says so otherwise.

` + kvResidentHelp + `

--save-kv FILE writes the cache at the end (the prompt and the whole reply) to a versioned
snapshot file, atomically; --load-kv FILE starts from one: its tokens are the prompt (followed
by --prompt's text, without BOS, when given) and its cells are not computed again, so greedy
decoding continues exactly where the saved run stopped. A snapshot of another KV format or an
older version is re-encoded into --kv as it loads (the file is left as it is); one of another
model or shape, or a truncated or corrupt file, is reported and the run starts clean.
--kv-recent N keeps the most recent N cells only in f16 and quantizes each cell once as it
leaves them (position-axis mixed KV; the sinks, --kv-sink, stay f16 too).`,
		Example: `  kvlab run --model stories260K.gguf --temp 0 --n 200
  kvlab run --model model.gguf --prompt "Once upon a time" --kv q8_0/q4_0 --n 64
  kvlab run --model model.gguf --kv q2k --kv-window 128 --kv-sink 4 --json
  kvlab run --model model.gguf --device cuda --kv q8_0/q4_0 --temp 0 --n 64
  kvlab run --model model.gguf --device cuda --ctx 131072 --kv-resident 32768 --prompt "$(cat long.txt)"
  kvlab run --model model.gguf --kv q4_0 --kv-recent 64 --kv-sink 4 --temp 0 --n 64
  kvlab run --model model.gguf --temp 0 --n 64 --ctx 512 --save-kv story.kv
  kvlab run --model model.gguf --temp 0 --n 64 --ctx 512 --load-kv story.kv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.model == "" {
				return errors.New("--model is required")
			}
			if o.device != "cpu" && o.device != "cuda" {
				return fmt.Errorf("--device %q: want cpu or cuda", o.device)
			}
			o.sampler.Seed = uint64(o.seed)
			if o.seed < 0 {
				o.sampler.Seed = uint64(time.Now().UnixNano())
			}
			var onLoad func(done, total int64)
			if st, err := os.Stat(o.model); err == nil && st.Size() >= progressMin {
				var bar *progress
				last := int64(0)
				onLoad = func(done, total int64) {
					if bar == nil {
						bar = newProgress(cmd.ErrOrStderr(), int(total>>20), "loading weights (MiB)")
					}
					bar.Add(int(done>>20 - last))
					last = done >> 20
					if done == total {
						bar.Finish()
					}
				}
			}
			out := cmd.OutOrStdout()
			if o.asJSON {
				out = io.Discard
			}
			res, err := runModel(cmd.Context(), o, out, cmd.ErrOrStderr(), onLoad)
			if err != nil {
				return err
			}
			if o.asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			if !strings.HasSuffix(res.Text, "\n") {
				fmt.Fprintln(out)
			}
			w := cmd.ErrOrStderr()
			fmt.Fprintf(w, "\nprompt: %d tokens, %.1f tokens/s\n", res.PromptTokens, res.PromptTPS)
			where := fmt.Sprintf("%d threads", res.Threads)
			if o.device == "cuda" {
				where = res.Device
			}
			fmt.Fprintf(w, "decode: %d tokens, %.1f tokens/s (%s, stop: %s)\n", res.Tokens, res.DecodeTPS, where, res.Stop)
			fmt.Fprintf(w, "KV cache: %s, %d bytes for %d cells\n", res.KVFormat, res.KVBytes, res.Context)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "", "GGUF model file, or Hugging Face model folder (llama or qwen2 architecture)")
	f.StringVar(&o.prompt, "prompt", "", "text to continue (BOS is prepended)")
	f.IntVarP(&o.n, "n", "n", 128, "tokens to generate at most")
	f.StringVar(&o.kv, "kv", "f16", "KV format, or K/V pair (see 'kvlab formats')")
	f.IntVar(&o.window, "kv-window", 0, "most recent cells kept exact in f16 (the FP16 window overlay)")
	f.IntVar(&o.sinks, "kv-sink", 0, "first cells kept exact in f16 (attention sinks)")
	f.IntVar(&o.recent, "kv-recent", 0, "most recent cells held only in f16, the rest quantized as they leave (position-axis mixed KV)")
	f.StringVar(&o.saveKV, "save-kv", "", "write the KV cache and its tokens to this snapshot `file` at the end")
	f.StringVar(&o.loadKV, "load-kv", "", "continue from this KV snapshot `file` (its tokens are the prompt)")
	f.Float32Var(&o.kGain, "k-gain", 1, "q2k K reconstruction gain B")
	f.Float32Var(&o.sampler.Temp, "temp", 0.8, "temperature; 0 is greedy")
	f.IntVar(&o.sampler.TopK, "top-k", 40, "keep the K most likely tokens; 0 keeps all")
	f.Float32Var(&o.sampler.TopP, "top-p", 0.95, "keep the most likely tokens up to this probability mass; 1 keeps all")
	f.Float32Var(&o.sampler.MinP, "min-p", 0.05, "drop tokens below this fraction of the top probability; 0 keeps all")
	f.Int64Var(&o.seed, "seed", -1, "sampling seed; -1 picks one from the clock")
	f.IntVar(&o.threads, "threads", 0, "threads for the forward pass; 0 uses every CPU")
	f.IntVar(&o.ctx, "ctx", 0, "KV cache capacity in cells; 0 means prompt tokens + n")
	f.StringVar(&o.device, "device", "cpu", "where the forward pass runs: cpu or cuda")
	f.IntVar(&o.resident, "kv-resident", 0, kvResidentUsage)
	f.BoolVar(&o.asJSON, "json", false, "print one JSON document instead of streaming text")
	return cmd
}

// runModel loads the model, prefills the prompt and generates, streaming text to out. progress,
// when set, receives the load progress.
func runModel(ctx context.Context, o runOptions, out, errw io.Writer, progress func(done, total int64)) (runResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.n < 1 {
		return runResult{}, fmt.Errorf("--n %d: must be at least 1", o.n)
	}
	if o.ctx < 0 || o.threads < 0 || o.window < 0 || o.sinks < 0 || o.recent < 0 {
		return runResult{}, fmt.Errorf("--ctx, --threads, --kv-window, --kv-recent and --kv-sink must not be negative")
	}
	if (o.saveKV != "" || o.loadKV != "") && o.device != "cpu" {
		return runResult{}, fmt.Errorf("--save-kv and --load-kv: %w: the %s KV cache is not in host memory", kvcache.ErrSnapshotUnsupported, o.device)
	}
	if !(o.kGain > 0) {
		return runResult{}, fmt.Errorf("--k-gain %g: must be positive", o.kGain)
	}
	if err := checkRunFlags(o); err != nil {
		return runResult{}, err
	}
	if err := checkKVResident(o.resident, o.device, o.window, o.sinks, o.recent); err != nil {
		return runResult{}, err
	}
	pair, err := kvq.ParsePair(o.kv)
	if err != nil {
		return runResult{}, fmt.Errorf("--kv: %w", err)
	}
	if _, err := sample.New(o.sampler); err != nil {
		return runResult{}, err
	}
	var be backend.Backend = cpu.New()
	if o.device == "cuda" {
		// The model's shape first (from its header): an unsupported one is refused before the
		// driver is loaded or the weights are read.
		if err := checkCUDAModel(o.model); err != nil {
			return runResult{}, err
		}
		if be, err = backends.Open(o.device); err != nil {
			return runResult{}, err
		}
		if raw := pair.Unrotated(); raw != pair {
			fmt.Fprintf(errw, "cuda: the GPU stores KV unrotated: %s runs as %s\n", pair, raw)
			pair = raw
		}
	}
	defer be.Close()
	m, tok, err := loadModel(o.model, model.Options{Threads: o.threads, Progress: progress})
	if err != nil {
		return runResult{}, err
	}
	defer m.Close()
	prompt := tok.Encode(o.prompt, true, false)
	if len(prompt) == 0 || prompt[0] != tok.BOS() {
		if tok.BOS() < 0 {
			if len(prompt) == 0 {
				return runResult{}, errors.New("the prompt is empty and the vocabulary has no BOS token to start from")
			}
		} else {
			prompt = append([]int32{tok.BOS()}, prompt...)
		}
	}
	loaded := 0 // cells of the --load-kv snapshot, from its header (to size the cache)
	if o.loadKV != "" {
		n, err := kvcache.SnapshotCells(o.loadKV)
		switch {
		case err == nil:
			loaded = n
		case kvcache.IsSnapshotError(err):
			fmt.Fprintf(errw, "kvlab: --load-kv %s: %v; starting clean\n", o.loadKV, err)
		default:
			return runResult{}, fmt.Errorf("--load-kv: %w", err)
		}
	}
	cells := o.ctx
	if cells == 0 {
		cells = loaded + len(prompt) + o.n
	}
	if len(prompt) > cells {
		return runResult{}, fmt.Errorf("the prompt is %d tokens, longer than the context of %d cells (--ctx)", len(prompt), cells)
	}
	cfg := m.CacheConfig(pair, cells)
	cfg.Window, cfg.Recent, cfg.Sinks, cfg.KGain = o.window, o.recent, o.sinks, o.kGain
	if err := checkRunCache(cfg, m.Hparams.Context); err != nil {
		return runResult{}, err
	}
	if err := checkKVResidentModel(o.resident, cfg, filepath.Base(o.model)); err != nil {
		return runResult{}, err
	}
	if tc := m.Hparams.Context; tc > 0 && len(prompt)+o.n > tc {
		fmt.Fprintf(errw, "warning: the prompt (%d tokens) and --n %d reach %d tokens, past the %d the model was trained on: what it writes past that is not assured\n",
			len(prompt), o.n, len(prompt)+o.n, tc)
	}
	res := runResult{PromptTokens: len(prompt), KVFormat: pair.String(), Context: cells, Threads: m.Threads(), Stop: "length", Device: "cpu"}
	if o.device == "cpu" {
		if w := kvq.KernelWarning(pair, cfg.HeadDimK, cfg.HeadDimV); w != "" {
			fmt.Fprintln(errw, "kvlab: warning:", w)
		}
	}
	var upload func(done, total int64)
	if o.device == "cuda" && progress != nil && !o.asJSON {
		upload = mibBar(errw, "uploading weights (MiB)")
	}
	dm, err := be.Load(m, backend.LoadOptions{Progress: upload, KVResident: o.resident, KVSpillChunk: spillChunk})
	if err != nil {
		return runResult{}, fmt.Errorf("--device %s: %w", o.device, err)
	}
	defer dm.Close()
	if o.device == "cuda" {
		// The weights are on the card: a cache that cannot fit what is left is refused here,
		// with the --kv-resident value that fits, before it is allocated.
		if mem, err := be.Memory(); err == nil {
			if err := deviceKVFit(cfg, o.resident, spillChunk, mem.FreeBytes, mem.Source); err != nil {
				return runResult{}, err
			}
		}
	}
	r, err := runner.New(dm, tok, runner.Config{Cache: cfg, Vocab: m.Hparams.Vocab, Keep: 1, Device: be.Name(), CheckLogits: model.CheckLogits})
	if err != nil {
		return runResult{}, fmt.Errorf("--device %s: %w", o.device, oomHint(err, o.resident))
	}
	defer r.Close()
	if o.device == "cuda" {
		res.Device, res.Threads = be.Name(), 0
		if !o.asJSON {
			fmt.Fprintf(errw, "%s: %s\n", be.Name(), dm.Describe())
		}
		if hasTail(cfg, o.resident) {
			res.KVResident = o.resident
			if !o.asJSON {
				fmt.Fprintf(errw, "%s: KV cells past %d in pinned host memory, copied to the GPU every token (host-spill tail)\n", be.Name(), engine.SpillOptions{Resident: o.resident}.ResidentCells())
			}
		}
	}
	if !o.sampler.Greedy() {
		res.Seed = o.sampler.Seed
	}
	id := runner.ModelIdentity(m, o.model)
	drop := o.prompt == "" && tok.Kind() == tokenizer.SPM
	if o.loadKV != "" && loaded > 0 {
		toks, info, err := r.LoadSnapshot(o.loadKV, id)
		switch {
		case err == nil && len(toks)+len(prompt)-1 > cells:
			return runResult{}, fmt.Errorf("the snapshot's %d cells and the prompt reach %d tokens, past the context of %d cells (--ctx)", len(toks), len(toks)+len(prompt)-1, cells)
		case err == nil:
			if info.Upgraded {
				fmt.Fprintf(errw, "kvlab: --load-kv %s: %d cells re-encoded from %s into %s (the file is unchanged until saved again)\n",
					o.loadKV, info.Cells, info.From, pair)
			}
			extra := []int32{}
			if o.prompt != "" {
				extra = tok.Encode(o.prompt, false, false)
			}
			prompt, drop, res.LoadedCells = append(toks, extra...), false, len(toks)
			res.PromptTokens = len(prompt)
		case kvcache.IsSnapshotError(err):
			fmt.Fprintf(errw, "kvlab: --load-kv %s: %v; starting clean\n", o.loadKV, err)
		default:
			return runResult{}, fmt.Errorf("--load-kv: %w", err)
		}
	}
	// With no prompt text the first piece's dummy-prefix space is dropped, as llama2.c prints
	// the first piece after BOS and llama.cpp's detokenizer does.
	p := runner.Params{Prompt: prompt, MaxTokens: o.n, Sampler: o.sampler, DropPrefixSpace: drop, KeepLast: o.saveKV != ""}
	gen, err := r.Generate(ctx, p, func(ev runner.Event) error {
		if ev.Kind != runner.EventToken {
			return nil
		}
		_, err := io.WriteString(out, ev.Text)
		return err
	})
	res.Tokens, res.Text, res.PromptTPS, res.DecodeTPS, res.KVBytes = gen.Tokens, gen.Text, gen.PromptTPS, gen.DecodeTPS, gen.KVBytes
	res.PromptIDs, res.IDs = slices.Clone(prompt), slices.Clone(gen.Generated)
	if res.IDs == nil {
		res.IDs = []int32{}
	}
	if err != nil {
		return res, err
	}
	if o.saveKV != "" {
		all := append(slices.Clone(prompt), gen.Generated...)
		if len(all) > cells {
			all = all[:cells] // the context filled: the last token was not run
		}
		if err := r.SaveSnapshot(o.saveKV, id, all); err != nil {
			return res, fmt.Errorf("--save-kv: %w", err)
		}
	}
	res.Stop = gen.Stop
	if gen.Stop == runner.StopContext {
		fmt.Fprintf(errw, "\nkvlab: the context of %d cells is full (--ctx); stopping\n", cells)
	}
	return res, nil
}

// mibBar returns a progress callback that draws a bar in MiB on w, created at the first call.
func mibBar(w io.Writer, label string) func(done, total int64) {
	var bar *progress
	last := int64(0)
	return func(done, total int64) {
		if bar == nil {
			bar = newProgress(w, int(total>>20), label)
		}
		bar.Add(int(done>>20 - last))
		last = done >> 20
		if done == total {
			bar.Finish()
		}
	}
}

// checkCUDAModel reads the model's hyperparameters from its header and reports, in one
// line, a shape the GPU forward pass does not cover (engine.CheckModel).
func checkCUDAModel(path string) error {
	f, err := hf.OpenModel(path)
	if err != nil {
		return err
	}
	hp, err := model.ReadHparams(f)
	f.Close()
	if err != nil {
		return err
	}
	if err := engine.CheckModel(hp); err != nil {
		return fmt.Errorf("--device cuda: %s: %w; run it with --device cpu", filepath.Base(path), err)
	}
	return nil
}
