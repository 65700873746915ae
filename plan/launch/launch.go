// Package launch turns a plan into the command line of another inference engine: llama.cpp's
// llama-server or vLLM's `vllm serve`, with the plan's context, sessions, GPUs and KV format,
// and says plainly what that engine cannot express (a KV format it lacks, a K/V pair, the FP16
// window overlay, a cache that spills to host memory).
//
// The flags are the engines' documented ones: llama-server -m, -c, -ctk, -ctv, -fa, -ngl,
// --parallel; vllm serve --max-model-len, --kv-cache-dtype, --gpu-memory-utilization,
// --tensor-parallel-size, --max-num-seqs, --tokenizer. It imports only the standard library,
// native/kvq and plan/calc so that the browser's calculator can use it too.
package launch

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
)

// Engine is an inference engine a plan can be written for.
type Engine uint8

const (
	// LlamaCpp is llama.cpp's llama-server.
	LlamaCpp Engine = iota + 1
	// VLLM is vLLM's OpenAI-compatible server, `vllm serve`.
	VLLM
)

// Engines lists the engines, in display order.
func Engines() []Engine { return []Engine{LlamaCpp, VLLM} }

func (e Engine) String() string {
	switch e {
	case LlamaCpp:
		return "llama.cpp"
	case VLLM:
		return "vllm"
	}
	return "unknown"
}

// ParseEngine reads an engine name: llama.cpp (also llamacpp, llama-server) or vllm.
func ParseEngine(s string) (Engine, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "llama.cpp", "llamacpp", "llama-cpp", "llama-server":
		return LlamaCpp, nil
	case "vllm":
		return VLLM, nil
	}
	return 0, fmt.Errorf("%w: engine %q (valid: llama.cpp, vllm)", calc.ErrBadInput, s)
}

// Model names the model for the command line: the GGUF file when the plan was made from one,
// and the Hugging Face repository of the original weights when it is known.
type Model struct {
	// File is the GGUF file's path, or "" when the plan came from a preset or a shape.
	File string
	// Repo is the Hugging Face repository of the model ("meta-llama/Llama-3.1-8B-Instruct").
	Repo string
}

// presetRepos are the Hugging Face repositories of the presets' instruct weights.
var presetRepos = map[string]string{
	"qwen2.5-14b-1m":   "Qwen/Qwen2.5-14B-Instruct-1M",
	"llama-3.1-8b":     "meta-llama/Llama-3.1-8B-Instruct",
	"llama-3.1-70b":    "meta-llama/Llama-3.1-70B-Instruct",
	"qwen2.5-7b":       "Qwen/Qwen2.5-7B-Instruct",
	"qwen3-4b":         "Qwen/Qwen3-4B",
	"mistral-7b":       "mistralai/Mistral-7B-Instruct-v0.3",
	"deepseek-v2-lite": "deepseek-ai/DeepSeek-V2-Lite-Chat",
}

// PresetModel returns the Model of a preset key (no file; the repository when known).
func PresetModel(key string) Model { return Model{Repo: presetRepos[strings.ToLower(key)]} }

// Command is one engine's command line for a plan.
type Command struct {
	// Engine is the engine's name; Program its executable.
	Engine  string `json:"engine"`
	Program string `json:"program"`
	// Args are the arguments after Program; Line is the whole command, quoted for a POSIX shell.
	Args []string `json:"args"`
	Line string   `json:"command"`
	// KV is the K/V pair the engine will store, in kvlab's names (it may differ from the plan's).
	KV string `json:"kv"`
	// KVBytes is the KV of all sessions at the context on one GPU in that pair; Fits reports
	// that it stays within the plan's KV budget.
	KVBytes int64 `json:"kv_bytes"`
	Fits    bool  `json:"fits"`
	// Notes say what the engine cannot express or does differently, one sentence each.
	Notes []string `json:"notes"`
}

// Emit writes the command line of engine e for the plan rep of request r, with the plan's
// policy pick as the KV format.
func Emit(e Engine, r calc.Request, rep calc.Report, m Model) (Command, error) {
	pair := rep.Policy.Choice
	if r.GPU.VRAMBytes <= 0 {
		return Command{}, fmt.Errorf("%w: the plan has no GPU memory size", calc.ErrBadInput)
	}
	if !pair.Valid() {
		return Command{}, fmt.Errorf("%w: the plan has no KV format to launch", calc.ErrBadInput)
	}
	switch e {
	case LlamaCpp:
		return llamaCpp(r, rep, pair, m), nil
	case VLLM:
		return vllm(r, rep, pair, m), nil
	}
	return Command{}, fmt.Errorf("%w: unknown engine %d", calc.ErrBadInput, e)
}

// llamaTypes are the KV cache types llama-server accepts for -ctk and -ctv.
var llamaTypes = map[kvq.Format]bool{
	kvq.F32: true, kvq.F16: true, kvq.BF16: true, kvq.Q8_0: true, kvq.Q4_0: true, kvq.Q4_1: true,
	kvq.IQ4_NL: true, kvq.Q5_0: true, kvq.Q5_1: true,
}

// llamaNearest is the llama.cpp KV type nearest to a format it lacks, and why.
func llamaNearest(f kvq.Format) (kvq.Format, string) {
	switch f {
	case kvq.FP8:
		return kvq.Q8_0, "llama.cpp has no fp8 KV cache; q8_0 is its 8-bit format (block scales, 8.5 bits per value)."
	case kvq.TQ4:
		return kvq.IQ4_NL, "llama.cpp has no tq4 KV (rotated 4-bit codebook); iq4_nl is its nearest (a fixed non-uniform 4-bit codebook, no rotation)."
	case kvq.Q2K:
		return kvq.Q4_0, "llama.cpp has no KV format below 4 bits; q2k's K is stored as q4_0, about twice the size."
	}
	return f, ""
}

func llamaCpp(r calc.Request, rep calc.Report, want kvq.Pair, m Model) Command {
	c := Command{Engine: LlamaCpp.String(), Program: "llama-server"}
	pair := want
	for _, x := range []*kvq.Format{&pair.K, &pair.V} {
		if llamaTypes[*x] {
			continue
		}
		near, why := llamaNearest(*x)
		if !contains(c.Notes, why) {
			c.Notes = append(c.Notes, why)
		}
		*x = near
	}
	file := m.File
	if file == "" {
		file = placeholderFile(rep)
		c.Notes = append(c.Notes, "-m "+file+" stands for your GGUF file of "+rep.Model+" at "+weightsLabel(rep)+".")
	}
	total := rep.Ctx * int64(rep.Sessions)
	c.Args = []string{"-m", file, "-c", strconv.FormatInt(total, 10),
		"-ctk", pair.K.String(), "-ctv", pair.V.String(), "-fa", "on", "-ngl", "999",
		"--parallel", strconv.Itoa(rep.Sessions)}
	if rep.Sessions > 1 {
		c.Notes = append(c.Notes, fmt.Sprintf("-c is the context of all %d slots together: each holds %d tokens.", rep.Sessions, rep.Ctx))
	}
	if pair.V != kvq.F16 && pair.V != kvq.BF16 && pair.V != kvq.F32 {
		c.Notes = append(c.Notes, "-fa on (flash attention) is required for a quantized V cache; builds older than mid-2025 take a bare -fa.")
	}
	if d := quantDimIssue(r.Model, pair); d > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("llama.cpp's block KV formats need a head dimension that is a multiple of 32; this model's is %d, so it will refuse %s.", d, pair))
	}
	if r.GPUs > 1 {
		c.Notes = append(c.Notes, fmt.Sprintf("llama.cpp splits the model across the %d GPUs by layers (--split-mode layer), not by KV heads; the memory per GPU is about the same.", r.GPUs))
	}
	c.finish(r, rep, pair)
	if !c.Fits {
		c.Notes = append(c.Notes, fmt.Sprintf("the cache (%s GiB per GPU) does not fit the KV budget (%s GiB): llama.cpp cannot keep part of it in host memory; it keeps all of it there with --no-kv-offload (slow), or lower -c.",
			gib(c.KVBytes), gib(max(rep.Budget.KVBytes, 0))))
	}
	c.commonNotes(r, rep)
	c.Line = shellLine(c.Program, c.Args)
	return c
}

func vllm(r calc.Request, rep calc.Report, want kvq.Pair, m Model) Command {
	c := Command{Engine: VLLM.String(), Program: "vllm"}
	// vLLM stores K and V in one dtype: the model's own (auto) or fp8.
	dtype, pair := "auto", kvq.Pair{K: kvq.F16, V: kvq.F16}
	sixteen := func(f kvq.Format) bool { return f == kvq.F16 || f == kvq.BF16 || f == kvq.F32 }
	switch {
	case sixteen(want.K) && sixteen(want.V):
		if want.K == kvq.F32 || want.V == kvq.F32 {
			c.Notes = append(c.Notes, "vLLM stores the KV in the model's dtype (auto); an f32 cache would need --dtype float32 for the whole model.")
		}
	default:
		dtype, pair = "fp8", kvq.Pair{K: kvq.FP8, V: kvq.FP8}
		low := want.K.BitsPerValue(kvq.BlockSize) < 8 || want.V.BitsPerValue(kvq.BlockSize) < 8
		switch {
		case low:
			c.Notes = append(c.Notes, fmt.Sprintf("vLLM has no KV format below 8 bits (no q4/q5, no tq4 or q2k): %s becomes fp8, a larger cache.", want))
		case want.K != kvq.FP8 || want.V != kvq.FP8:
			c.Notes = append(c.Notes, fmt.Sprintf("vLLM's only 8-bit KV is fp8 (e4m3 with per-tensor scales), not %s: the same size class, its own quality; measure it.", want))
		}
		if sixteen(want.K) || sixteen(want.V) {
			c.Notes = append(c.Notes, "vLLM uses one dtype for K and V: the 16-bit half of the pair becomes fp8 too.")
		}
	}
	tp := max(r.GPUs, 1)
	modelArg, tokenizer := vllmModel(rep, m)
	c.Args = []string{"serve", modelArg}
	if tokenizer != "" {
		c.Args = append(c.Args, "--tokenizer", tokenizer)
	}
	c.finish(r, rep, pair)
	need := float64(rep.WeightBytes+c.KVBytes+r.ReserveBytes) / float64(r.GPU.VRAMBytes)
	util := math.Ceil(need*100) / 100
	const maxUtil = 0.95
	if util > maxUtil {
		free := int64(maxUtil*float64(r.GPU.VRAMBytes)) - rep.WeightBytes - r.ReserveBytes
		fit := r.Model.MaxResidentCtx(pair, calc.Overlay{}, free, rep.Sessions, tp)
		msg := fmt.Sprintf("at --max-model-len %d the weights, %s GiB of %s KV and the reserve need %.0f %% of each GPU's memory; vLLM will refuse to start above about 95 %%", rep.Ctx, gib(c.KVBytes), dtype, need*100)
		if fit > 0 {
			msg += fmt.Sprintf(": --max-model-len %d fits, or add GPUs.", fit)
		} else {
			msg += ": the weights alone do not fit; add GPUs."
		}
		c.Notes = append(c.Notes, msg)
		util = maxUtil
		c.Fits = false
	} else {
		c.Fits = true
	}
	util = max(util, 0.1)
	c.Args = append(c.Args, "--max-model-len", strconv.FormatInt(rep.Ctx, 10), "--kv-cache-dtype", dtype,
		"--gpu-memory-utilization", strconv.FormatFloat(util, 'f', 2, 64), "--tensor-parallel-size", strconv.Itoa(tp))
	if rep.Sessions > 1 {
		c.Args = append(c.Args, "--max-num-seqs", strconv.Itoa(rep.Sessions))
	}
	if !c.Fits && rep.Policy.SpillBytes > 0 {
		c.Notes = append(c.Notes, "vLLM cannot keep part of one sequence's KV in host memory, as the plan's spill does.")
	}
	c.commonNotes(r, rep)
	c.Line = shellLine(c.Program, c.Args)
	return c
}

// vllmModel is vllm serve's model argument (and --tokenizer): the repository for 16-bit weights,
// else the GGUF file with the repository's tokenizer.
func vllmModel(rep calc.Report, m Model) (model, tokenizer string) {
	sixteen := rep.Quant == "f16" || rep.Quant == "bf16"
	switch {
	case sixteen && m.Repo != "" && m.File == "":
		return m.Repo, ""
	case m.File != "":
		return m.File, m.Repo
	}
	return "./" + placeholderFile(rep), m.Repo
}

// finish sets the command's KV pair and size and whether it fits the plan's budget.
func (c *Command) finish(r calc.Request, rep calc.Report, pair kvq.Pair) {
	tp := max(r.GPUs, 1)
	c.KV = pair.String()
	c.KVBytes = int64(rep.Sessions) * r.Model.SessionBytes(pair, calc.Overlay{}, rep.Ctx, tp)
	c.Fits = c.KVBytes <= rep.Budget.KVBytes
}

// commonNotes are what neither engine expresses.
func (c *Command) commonNotes(r calc.Request, rep calc.Report) {
	if c.Engine == VLLM.String() {
		if strings.HasSuffix(c.Args[1], ".gguf") {
			c.Notes = append(c.Notes, "vLLM reads a GGUF file through vllm-gguf-plugin (pip install vllm-gguf-plugin); a 4-bit AWQ or GPTQ checkpoint of the model is the usual vLLM way to the same weight size.")
			if c.Args[1] == "./"+placeholderFile(rep) {
				c.Notes = append(c.Notes, c.Args[1]+" stands for your GGUF file of "+rep.Model+" at "+weightsLabel(rep)+".")
			}
		}
		if strings.HasSuffix(c.Args[1], ".gguf") && (len(c.Args) < 3 || c.Args[2] != "--tokenizer") {
			c.Notes = append(c.Notes, "add --tokenizer with the model's Hugging Face repository: vLLM's conversion of a GGUF tokenizer is slow and unreliable.")
		}
	}
	if r.Overlay.Enabled() {
		c.Notes = append(c.Notes, fmt.Sprintf("%s has no FP16 window over a compressed cache: the overlay (window %d, sinks %d) is dropped.", c.Engine, r.Overlay.Window, r.Overlay.Sinks))
	}
	if rep.NativeContext > 0 && rep.Ctx > rep.NativeContext {
		c.Notes = append(c.Notes, fmt.Sprintf("the context is past the model's trained %d tokens: the command sets no RoPE scaling, so quality past that point is not assured.", rep.NativeContext))
	}
}

// quantDimIssue returns a head dimension of the model that llama.cpp's block formats reject
// for pair (not a multiple of 32), or 0.
func quantDimIssue(s calc.Shape, p kvq.Pair) int {
	block := func(f kvq.Format) bool { return f != kvq.F32 && f != kvq.F16 && f != kvq.BF16 }
	for _, g := range s.Groups {
		if g.Kind != calc.Full && g.Kind != calc.Sliding {
			continue
		}
		if block(p.K) && g.HeadDimK%32 != 0 {
			return g.HeadDimK
		}
		if block(p.V) && g.HeadDimV%32 != 0 {
			return g.HeadDimV
		}
	}
	return 0
}

// placeholderFile is a GGUF file name for the plan's model and weights
// ("Llama-3.1-8B-Q4_K_M.gguf").
func placeholderFile(rep calc.Report) string {
	name := rep.Model
	if i := strings.IndexAny(name, " ("); i > 0 {
		name = name[:i]
	}
	name = strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, name)
	if name == "" || strings.HasPrefix(name, "custom") {
		name = "MODEL"
	}
	if q := rep.Quant; q != "" && q != "as given" {
		name += "-" + strings.ToUpper(q)
	}
	return name + ".gguf"
}

func weightsLabel(rep calc.Report) string {
	if rep.Quant == "" || rep.Quant == "as given" {
		return "its own weights"
	}
	return rep.Quant + " weights"
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func gib(b int64) string { return calc.FormatFixed(calc.ToGiB(b), 2) }

// shellLine joins a command for a POSIX shell, single-quoting the words that need it.
func shellLine(program string, args []string) string {
	words := append([]string{program}, args...)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=+,@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
