package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/wkern"
	"github.com/spf13/cobra"
)

// benchShape is a model geometry the synthetic benchmark files take.
type benchShape struct {
	arch                                  string
	embd, layers, heads, kvHeads, hd, ffn int
	vocab                                 int
	ropeBase                              float32
	tied, bias                            bool
}

var benchShapes = map[string]benchShape{
	"tinyllama-1.1b": {arch: "llama", embd: 2048, layers: 22, heads: 32, kvHeads: 4, hd: 64, ffn: 5632, vocab: 32000, ropeBase: 10000},
	"llama-3.2-1b":   {arch: "llama", embd: 2048, layers: 16, heads: 32, kvHeads: 8, hd: 64, ffn: 8192, vocab: 128256, ropeBase: 500000, tied: true},
	"qwen2.5-0.5b":   {arch: "qwen2", embd: 896, layers: 24, heads: 14, kvHeads: 2, hd: 64, ffn: 4864, vocab: 151936, ropeBase: 1e6, tied: true, bias: true},
	"llama-3.1-8b":   {arch: "llama", embd: 4096, layers: 32, heads: 32, kvHeads: 8, hd: 128, ffn: 14336, vocab: 128256, ropeBase: 500000},
	"tiny":           {arch: "llama", embd: 256, layers: 2, heads: 4, kvHeads: 2, hd: 64, ffn: 512, vocab: 512, ropeBase: 10000},
}

// benchWeightSets are the --weights names: the type of every weight matrix by tensor, as
// llama.cpp's quantizer picks them for that file type.
var benchWeightSets = []string{"f32", "f16", "q8_0", "q4_0", "q4_k_m", "q6_k"}

// weightType returns the type of tensor kind ("attn_v", "ffn_down", "output", "token_embd", …)
// in layer l of n for weight set w, for a tensor of cols values per row. K-quants need rows of
// whole 256-value super-blocks; other rows fall back to q8_0, as llama.cpp does.
func weightType(w, kind string, l, n, cols int) gguf.Type {
	moreBits := l < n/8 || l >= 7*n/8 || (l-n/8)%3 == 2
	var t gguf.Type
	switch w {
	case "f32":
		t = gguf.F32
	case "f16":
		t = gguf.F16
	case "q8_0":
		t = gguf.Q8_0
	case "q4_0":
		t = gguf.Q4_0
		if kind == "output" {
			t = gguf.Q6_K
		}
	case "q6_k":
		t = gguf.Q6_K
	case "q4_k_m":
		t = gguf.Q4_K
		if kind == "output" || (kind == "attn_v" || kind == "ffn_down") && moreBits {
			t = gguf.Q6_K
		}
	}
	if t.BlockSize() == 256 && cols%256 != 0 {
		t = gguf.Q8_0
	}
	return t
}

// synthTensor is one tensor of a synthetic file: its info and how to fill it.
type synthTensor struct {
	name       string
	typ        gguf.Type
	rows, cols int
	norm       bool // an RMS-norm weight (values near 1) or a bias
}

func (s benchShape) tensors(w string) []synthTensor {
	var ts []synthTensor
	add := func(name, kind string, l, rows, cols int) {
		ts = append(ts, synthTensor{name: name, typ: weightType(w, kind, l, s.layers, cols), rows: rows, cols: cols})
	}
	vec := func(name string, n int) {
		ts = append(ts, synthTensor{name: name, typ: gguf.F32, rows: 1, cols: n, norm: true})
	}
	nq, nk := s.heads*s.hd, s.kvHeads*s.hd
	embKind := "token_embd"
	if s.tied {
		embKind = "output"
	}
	add("token_embd.weight", embKind, 0, s.vocab, s.embd)
	vec("output_norm.weight", s.embd)
	if !s.tied {
		add("output.weight", "output", 0, s.vocab, s.embd)
	}
	for l := 0; l < s.layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", s.embd)
		add(p+"attn_q.weight", "attn_q", l, nq, s.embd)
		add(p+"attn_k.weight", "attn_k", l, nk, s.embd)
		add(p+"attn_v.weight", "attn_v", l, nk, s.embd)
		if s.bias {
			vec(p+"attn_q.bias", nq)
			vec(p+"attn_k.bias", nk)
			vec(p+"attn_v.bias", nk)
		}
		add(p+"attn_output.weight", "attn_output", l, s.embd, nq)
		vec(p+"ffn_norm.weight", s.embd)
		add(p+"ffn_gate.weight", "ffn_gate", l, s.ffn, s.embd)
		add(p+"ffn_up.weight", "ffn_up", l, s.ffn, s.embd)
		add(p+"ffn_down.weight", "ffn_down", l, s.embd, s.ffn)
	}
	return ts
}

// writeSynthetic writes a GGUF model of shape s with random weights of set w to path: the
// header and a zero data section through gguf.Writer, then each tensor's random values,
// quantized with wkern's reference quantizers, written in place (one tensor in memory per
// thread). The file carries a llama-style tokenizer of placeholder tokens so other engines load
// it too.
// errUnknownShape names the shapes --shape takes.
func errUnknownShape(shape string) error {
	return fmt.Errorf("--shape %q: want one of %s", shape, strings.Join(slices.Sorted(mapKeys(benchShapes)), ", "))
}

// syntheticModel is the path of the synthetic model of shape, weights and seed in dir, written
// (with a line on errw) when it is not there yet.
func syntheticModel(dir, shape, weights string, seed uint64, errw io.Writer) (string, error) {
	s, ok := benchShapes[shape]
	if !ok {
		return "", errUnknownShape(shape)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, fmt.Sprintf("%s-%s-seed%d.gguf", shape, weights, seed))
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	fmt.Fprintf(errw, "writing %s ...\n", p)
	t0 := time.Now()
	if err := writeSynthetic(p, s, weights, seed, runtime.NumCPU()); err != nil {
		return "", fmt.Errorf("writing %s: %w", p, err)
	}
	fmt.Fprintf(errw, "wrote %s in %.1fs\n", p, time.Since(t0).Seconds())
	return p, nil
}

func writeSynthetic(path string, s benchShape, w string, seed uint64, threads int) error {
	gw := &gguf.Writer{}
	a := s.arch
	gw.AddKV("general.architecture", a)
	gw.AddKV("general.name", "kvlab synthetic "+w)
	gw.AddKV(a+".context_length", uint32(4096))
	gw.AddKV(a+".embedding_length", uint32(s.embd))
	gw.AddKV(a+".block_count", uint32(s.layers))
	gw.AddKV(a+".feed_forward_length", uint32(s.ffn))
	gw.AddKV(a+".attention.head_count", uint32(s.heads))
	gw.AddKV(a+".attention.head_count_kv", uint32(s.kvHeads))
	gw.AddKV(a+".attention.key_length", uint32(s.hd))
	gw.AddKV(a+".attention.value_length", uint32(s.hd))
	gw.AddKV(a+".attention.layer_norm_rms_epsilon", float32(1e-5))
	gw.AddKV(a+".rope.freq_base", s.ropeBase)
	gw.AddKV(a+".rope.dimension_count", uint32(s.hd))
	gw.AddPlaceholderVocab(s.vocab)
	ts := s.tensors(w)
	for _, t := range ts {
		dims := []uint64{uint64(t.cols), uint64(t.rows)}
		if t.rows == 1 {
			dims = dims[:1]
		}
		gw.AddTensor(t.name, t.typ, dims, nil)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if _, err := gw.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	info, err := gguf.Open(tmp)
	if err != nil {
		return err
	}
	offs := make(map[string]int64, len(ts))
	for _, ti := range info.Tensors() {
		offs[ti.Name] = info.DataOffset + int64(ti.Offset)
	}
	info.Close()
	out, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range max(threads, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var vals []float32
			var buf []byte
			for i := range next {
				t := ts[i]
				r := rand.New(rand.NewPCG(seed, uint64(i)))
				vals = slices.Grow(vals[:0], t.rows*t.cols)[:t.rows*t.cols]
				sd := 1 / math.Sqrt(float64(t.cols))
				for j := range vals {
					if t.norm {
						vals[j] = float32(1 + 0.1*r.NormFloat64())
					} else {
						vals[j] = float32(sd * r.NormFloat64())
					}
				}
				buf = wkern.Quantize(buf[:0], t.typ, vals)
				if _, err := out.WriteAt(buf, offs[t.name]); err != nil {
					mu.Lock()
					first = cmp(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range ts {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := out.Close(); first == nil {
		first = err
	}
	if first != nil {
		return first
	}
	return os.Rename(tmp, path)
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// benchModelRow is one measurement: one file at one thread count.
type benchModelRow struct {
	File       string  `json:"file"`
	Weights    string  `json:"weights"`
	Threads    int     `json:"threads"`
	Prompt     int     `json:"prompt"`
	Gen        int     `json:"gen"`
	PrefillTPS float64 `json:"prefill_tok_per_s"` // best round
	DecodeTPS  float64 `json:"decode_tok_per_s"`  // best round
	// PrefillCPU and DecodeCPU are the process CPU seconds per token of the best round's phase
	// (all threads): on a busy machine the steadier figure.
	PrefillCPU float64 `json:"prefill_cpu_s_per_tok,omitempty"`
	DecodeCPU  float64 `json:"decode_cpu_s_per_tok,omitempty"`
	Rounds     int     `json:"rounds"`
	WeightMiB  float64 `json:"weight_mib"`
}

type benchModelReport struct {
	Shape   string          `json:"shape,omitempty"`
	Load    string          `json:"load_before"`
	Results []benchModelRow `json:"results"`
}

func newBenchModelCmd() *cobra.Command {
	var (
		shape, weights, dir, threadList string
		prompt, gen, rounds             int
		asJSON                          bool
		seed                            uint64
		cpuProfile                      string
	)
	cmd := &cobra.Command{
		Use:   "model [FILE.gguf ...]",
		Short: "Prefill and decode tokens/s of a model file, or of a synthetic model with random weights",
		Long: `Times a prefill of --prompt tokens (one batch) and a decode of --gen tokens, one at a time
from an empty cache as llama-bench's tg test does, with f16 KV, for each model and --threads
count, in interleaved rounds (best round kept).

Without FILE it writes synthetic models of --shape with random weights of each --weights set
into --dir (kept there for reuse and for other engines: the file names are printed) through
kvlab's GGUF writer and its reference quantizers (byte-compatible with ggml's). Weight sets:
f32, f16, q8_0, q4_0 (output q6_K, as llama.cpp's quantizer picks), q6_k, q4_k_m (q4_K, with
attn_v and ffn_down in q6_K on llama.cpp's "more bits" layers and the output in q6_K).`,
		Example: "  kvlab bench model --shape tinyllama-1.1b --weights q4_0,q4_k_m --threads 1,2 --prompt 512 --gen 64\n" +
			"  kvlab bench model model.gguf --threads 2 --json",
		RunE: func(cmd *cobra.Command, args []string) error {
			ths, err := parseInts(threadList, "--threads", 1)
			if err != nil {
				return err
			}
			if prompt < 1 || gen < 1 || rounds < 1 {
				return fmt.Errorf("--prompt, --gen and --rounds must be positive")
			}
			type file struct{ path, weights string }
			var files []file
			if len(args) > 0 {
				for _, a := range args {
					files = append(files, file{a, ""})
				}
			} else {
				if _, ok := benchShapes[shape]; !ok {
					return errUnknownShape(shape)
				}
				for _, w := range strings.Split(weights, ",") {
					w = strings.ToLower(strings.TrimSpace(w))
					if !slices.Contains(benchWeightSets, w) {
						return fmt.Errorf("--weights %q: want some of %s", w, strings.Join(benchWeightSets, ", "))
					}
					p, err := syntheticModel(dir, shape, w, seed, cmd.ErrOrStderr())
					if err != nil {
						return err
					}
					files = append(files, file{p, w})
				}
			}
			if cpuProfile != "" {
				pf, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer pf.Close()
				if err := pprof.StartCPUProfile(pf); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			rep := benchModelReport{Load: loadAvg()}
			if len(args) == 0 {
				rep.Shape = shape
			}
			var rows []benchModelRow
			var models []*model.Model
			for _, f := range files {
				for _, th := range ths {
					m, err := model.Load(f.path, model.Options{Threads: th, Batch: prompt})
					if err != nil {
						return err
					}
					defer m.Close()
					models = append(models, m)
					rows = append(rows, benchModelRow{File: f.path, Weights: f.weights, Threads: th, Prompt: prompt, Gen: gen,
						WeightMiB: float64(m.WeightBytes()) / (1 << 20)})
				}
			}
			for r := 0; r < rounds; r++ {
				for i, m := range models {
					pp, tg, ppCPU, tgCPU, err := benchModelRound(m, prompt, gen)
					if err != nil {
						return err
					}
					if pp > rows[i].PrefillTPS {
						rows[i].PrefillTPS, rows[i].PrefillCPU = pp, ppCPU
					}
					if tg > rows[i].DecodeTPS {
						rows[i].DecodeTPS, rows[i].DecodeCPU = tg, tgCPU
					}
					rows[i].Rounds++
					if !asJSON {
						fmt.Fprintf(cmd.ErrOrStderr(), "round %d %s t%d: pp%d %.2f tok/s, tg%d %.2f tok/s\n",
							r+1, filepath.Base(rows[i].File), rows[i].Threads, prompt, pp, gen, tg)
					}
				}
			}
			rep.Results = rows
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return writeBenchModelTable(cmd.OutOrStdout(), rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&shape, "shape", "tinyllama-1.1b", "synthetic model geometry: tinyllama-1.1b, llama-3.2-1b, qwen2.5-0.5b, llama-3.1-8b, tiny")
	f.StringVar(&weights, "weights", "f16,q8_0,q4_0,q4_k_m,q6_k", "comma-separated weight sets of the synthetic models")
	f.StringVar(&dir, "dir", filepath.Join(os.TempDir(), "kvlab-bench"), "where the synthetic models are written and reused")
	f.Uint64Var(&seed, "seed", 1, "random seed of the synthetic weights")
	f.StringVar(&threadList, "threads", fmt.Sprint(runtime.NumCPU()), "comma-separated thread counts")
	f.IntVar(&prompt, "prompt", 512, "prompt tokens of the prefill test")
	f.IntVar(&gen, "gen", 64, "tokens of the decode test")
	f.IntVar(&rounds, "rounds", 3, "interleaved rounds (each model and thread count once per round)")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the timed rounds to this file")
	return cmd
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// benchModelRound times one prefill of prompt tokens (last position's logits) and one decode
// of gen tokens from an empty cache (logits each step), and returns both rates in tokens/s.
func benchModelRound(m *model.Model, prompt, gen int) (pp, tg, ppCPU, tgCPU float64, err error) {
	vocab := m.Hparams.Vocab
	c, err := kvcache.New(m.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, max(prompt, gen)+1))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	toks := make([]int32, prompt)
	for i := range toks {
		toks[i] = int32(3 + (i*131)%(vocab-3))
	}
	logits := make([]float32, vocab)
	t0, c0 := time.Now(), cputime.Process()
	if err := m.Forward(toks, c, logits); err != nil {
		return 0, 0, 0, 0, err
	}
	pp = float64(prompt) / time.Since(t0).Seconds()
	ppCPU = (cputime.Process() - c0).Seconds() / float64(prompt)
	if err := c.Truncate(0); err != nil {
		return 0, 0, 0, 0, err
	}
	next := []int32{1}
	t0, c0 = time.Now(), cputime.Process()
	for i := 0; i < gen; i++ {
		if err := m.Forward(next, c, logits); err != nil {
			return 0, 0, 0, 0, err
		}
		next[0] = int32(3 + (i*977)%(vocab-3))
	}
	tg = float64(gen) / time.Since(t0).Seconds()
	tgCPU = (cputime.Process() - c0).Seconds() / float64(gen)
	return pp, tg, ppCPU, tgCPU, nil
}

func writeBenchModelTable(w io.Writer, rep benchModelReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "file\tweights\tthreads\tweight MiB\tpp%d tok/s\ttg%d tok/s\t\n", rep.Results[0].Prompt, rep.Results[0].Gen)
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.2f\t%.2f\t\n", filepath.Base(r.File), r.Weights, r.Threads, r.WeightMiB, r.PrefillTPS, r.DecodeTPS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "load average before: %s\n", rep.Load)
	return err
}

// loadAvg returns /proc/loadavg's first three fields, or "" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
