package hf_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/ggml"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/hf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// tinyStoriesStart is the documented start of TinyStories-656K's greedy story from BOS
// (../shared/models/README.md).
const tinyStoriesStart = "Once upon a time, there was a little girl named Lily. She had a toy car"

func greedy(t *testing.T, m *model.Model, prompt []int32, n int) []int32 {
	t.Helper()
	pair, _ := kvq.ParsePair("f16")
	c, err := kvcache.New(m.CacheConfig(pair, len(prompt)+n))
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.Hparams.Vocab)
	if err := m.Forward(prompt, c, logits); err != nil {
		t.Fatal(err)
	}
	var out []int32
	for len(out) < n {
		next := sample.Argmax(logits)
		out = append(out, next)
		if err := m.Forward([]int32{next}, c, logits); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestTinyStoriesGreedy loads the Hugging Face folder and generates its documented story.
func TestTinyStoriesGreedy(t *testing.T) {
	dir := fixtures.Path(t, "TinyStories-656K")
	m, err := model.Load(dir, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	hp := m.Hparams
	if hp.Arch != "llama" || hp.Layers != 2 || hp.Embd != 128 || hp.Heads != 8 || hp.KVHeads != 4 || hp.HeadDimK != 16 ||
		hp.Vocab != 2048 || hp.Context != 512 || hp.RMSEps != 1e-6 {
		t.Fatalf("hparams %+v", hp)
	}
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	ids := greedy(t, m, []int32{tok.BOS()}, 40)
	text := strings.TrimPrefix(tok.Detokenize(ids, tokenizer.DecodeOptions{}), " ")
	if !strings.HasPrefix(text, tinyStoriesStart) {
		t.Fatalf("greedy from BOS: %q, want it to start %q", text, tinyStoriesStart)
	}
}

// hfTensor is one tensor for writeSafetensors: row-major data, outermost dim first.
type hfTensor struct {
	name  string
	dtype string
	shape []uint64
	data  []byte
}

// writeSafetensors writes tensors as a safetensors file.
func writeSafetensors(t *testing.T, path string, ts []hfTensor) {
	t.Helper()
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for _, x := range ts {
		hdr[x.name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{off, off + len(x.data)}}
		off += len(x.data)
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(h)))
	buf.Write(h)
	for _, x := range ts {
		buf.Write(x.data)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// toHF converts a GGUF llama's tensors to Hugging Face names and layout in dtype (F32, F16 or
// BF16): Q and K rows un-permuted to rotate-half. It also returns the GGUF tensors with the
// same rounding, for the reference.
func toHF(t *testing.T, f *gguf.File, dtype string) ([]hfTensor, []gguf.WriteTensor) {
	t.Helper()
	arch := f.Architecture()
	heads, _ := f.Uint(arch + ".attention.head_count")
	kvHeads, _ := f.Uint(arch + ".attention.head_count_kv")
	names := map[string]string{"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
		"output.weight": "lm_head.weight"}
	per := map[string]string{"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
		"attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
		"attn_output.weight": "self_attn.o_proj.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
		"ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight",
		"attn_q.bias": "self_attn.q_proj.bias", "attn_k.bias": "self_attn.k_proj.bias", "attn_v.bias": "self_attn.v_proj.bias"}
	var hts []hfTensor
	var gts []gguf.WriteTensor
	for _, ti := range f.Tensors() {
		raw, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]float32, ti.Elements())
		if err := gguf.DequantizeRow(ti.Type, raw, vals); err != nil {
			t.Fatal(err)
		}
		// Round once to the dtype; both files hold the same values.
		typ, es := ggml.F32, 4
		switch dtype {
		case "F16":
			typ, es = ggml.F16, 2
		case "BF16":
			typ, es = ggml.BF16, 2
		}
		enc := make([]byte, es*len(vals))
		for i, v := range vals {
			switch typ {
			case ggml.F32:
				binary.LittleEndian.PutUint32(enc[4*i:], math.Float32bits(v))
			case ggml.F16:
				binary.LittleEndian.PutUint16(enc[2*i:], ggml.F32ToF16(v))
			case ggml.BF16:
				binary.LittleEndian.PutUint16(enc[2*i:], ggml.F32ToBF16(v))
			}
		}
		gts = append(gts, gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: typ, Data: enc})
		name := names[ti.Name]
		hfData := enc
		if name == "" {
			var l int
			var rest string
			fmt.Sscanf(ti.Name, "blk.%d.", &l)
			rest = ti.Name[strings.Index(ti.Name[4:], ".")+5:]
			name = fmt.Sprintf("model.layers.%d.%s", l, per[rest])
			h := 0
			switch rest {
			case "attn_q.weight":
				h = int(heads)
			case "attn_k.weight":
				h = int(kvHeads)
			}
			if arch != "llama" {
				h = 0 // qwen2 keeps the rotate-half layout in GGUF too
			}
			if h > 0 { // GGUF interleaved → HF rotate-half: HF row h·d + s·d/2 + i = GGUF row h·d + 2i + s
				rows := int(ti.Dims[1])
				rb := len(enc) / rows
				d := rows / h
				hfData = make([]byte, len(enc))
				for hh := 0; hh < h; hh++ {
					for i := 0; i < d/2; i++ {
						for s := 0; s < 2; s++ {
							src, dst := hh*d+2*i+s, hh*d+s*d/2+i
							copy(hfData[dst*rb:(dst+1)*rb], enc[src*rb:(src+1)*rb])
						}
					}
				}
			}
		}
		shape := slices.Clone(ti.Dims)
		slices.Reverse(shape)
		hts = append(hts, hfTensor{name: name, dtype: dtype, shape: shape, data: hfData})
	}
	return hts, gts
}

// TestRoundTripStories converts stories260K.gguf to a Hugging Face folder (one file and two
// shards, F32, F16 and BF16) and checks that the folder's logits equal the GGUF's bit for bit:
// names, layouts, the Q/K permutation and the metadata all undo the conversion.
func TestRoundTripStories(t *testing.T) {
	src, err := gguf.Open(fixtures.Path(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	u := func(k string) int { v, _ := src.Uint("llama." + k); return int(v) }
	eps, _ := src.Float("llama.attention.layer_norm_rms_epsilon")
	cfg := map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": u("embedding_length"), "num_hidden_layers": u("block_count"), "intermediate_size": u("feed_forward_length"),
		"num_attention_heads": u("attention.head_count"), "num_key_value_heads": u("attention.head_count_kv"),
		"rms_norm_eps": eps, "rope_theta": 10000.0, "max_position_embeddings": u("context_length"),
		"tie_word_embeddings": false, "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2}
	prompt := []int32{1, 403, 407, 261, 378, 434, 285, 266}
	for _, dtype := range []string{"F32", "F16", "BF16"} {
		for _, shards := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%dshards", dtype, shards), func(t *testing.T) {
				hts, gts := toHF(t, src, dtype)
				dir := t.TempDir()
				cb, _ := json.Marshal(cfg)
				os.WriteFile(filepath.Join(dir, "config.json"), cb, 0o600)
				if shards == 1 {
					writeSafetensors(t, filepath.Join(dir, "model.safetensors"), hts)
				} else {
					sort.Slice(hts, func(i, j int) bool { return hts[i].name < hts[j].name })
					half := len(hts) / 2
					wm := map[string]string{}
					for i, x := range hts {
						wm[x.name] = fmt.Sprintf("model-%05d-of-00002.safetensors", 1+i/half)
						if i >= 2*half {
							wm[x.name] = "model-00002-of-00002.safetensors"
						}
					}
					writeSafetensors(t, filepath.Join(dir, "model-00001-of-00002.safetensors"), hts[:half])
					writeSafetensors(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), hts[half:])
					ib, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": wm})
					os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), ib, 0o600)
				}
				var w gguf.Writer
				for _, k := range src.Keys() {
					if strings.HasPrefix(k, "llama.") || k == "general.architecture" {
						v, _ := src.Value(k)
						w.AddKV(k, v)
					}
				}
				w.Tensors = gts
				var buf bytes.Buffer
				if _, err := w.WriteTo(&buf); err != nil {
					t.Fatal(err)
				}
				ref := filepath.Join(t.TempDir(), "ref.gguf")
				os.WriteFile(ref, buf.Bytes(), 0o600)

				want := lastLogits(t, ref, prompt)
				got := lastLogits(t, dir, prompt)
				if !slices.Equal(got, want) {
					d := 0.0
					for i := range got {
						d = max(d, math.Abs(float64(got[i]-want[i])))
					}
					t.Fatalf("logits differ from the GGUF's: max |Δ| %g", d)
				}
			})
		}
	}
}

func lastLogits(t *testing.T, path string, prompt []int32) []float32 {
	t.Helper()
	m, err := model.Load(path, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pair, _ := kvq.ParsePair("f32")
	c, err := kvcache.New(m.CacheConfig(pair, 64))
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.Hparams.Vocab)
	if err := m.Forward(prompt, c, logits); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := m.Forward([]int32{sample.Argmax(logits)}, c, logits); err != nil {
			t.Fatal(err)
		}
	}
	return logits
}

// TestOpenErrors: a folder kvlab cannot read fails naming what is wrong.
func TestOpenErrors(t *testing.T) {
	write := func(dir, name, s string) { os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600) }
	st := func(hdr string, data int) string {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(len(hdr)))
		return string(b[:]) + hdr + strings.Repeat("\x00", data)
	}
	base := `{"architectures":["LlamaForCausalLM"],"hidden_size":8,"num_hidden_layers":1,"intermediate_size":8,"num_attention_heads":2}`
	for _, tc := range []struct {
		config, st string
		want       string
	}{
		{config: `{"architectures":["GPTNeoXForCausalLM"],"hidden_size":8}`, want: "GPTNeoXForCausalLM"},
		{config: `{"architectures":["LlamaForCausalLM"],"hidden_size":8}`, want: "num_hidden_layers"},
		{config: base, want: "no *.safetensors"},
		{config: base, st: "short", want: "not a safetensors"},
		{config: base, st: "\xff\xff\xff\xff\xff\xff\xff\x7f{}", want: "header length"},
		{config: base, st: "\x02\x00\x00\x00\x00\x00\x00\x00{}", want: "no model.embed_tokens"},
		{config: base, st: st(`{"model.embed_tokens.weight":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, 8), want: "dtype I64"},
		{config: base, st: st(`{"model.layers.0.mlp.experts.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), want: "no GGUF name"},
		{config: base, st: st(`{"model.embed_tokens.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}`, 8), want: "needs 16 bytes"},
		{config: base, st: st(`{"model.embed_tokens.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, 8), want: "outside"},
		{config: base, st: st(`{"model.embed_tokens.weight":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,16]}}`, 16), want: "overflows"},
	} {
		dir := t.TempDir()
		write(dir, "config.json", tc.config)
		if tc.st != "" {
			write(dir, "model.safetensors", tc.st)
		}
		_, err := hf.Open(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %s: error %v, want one naming %q", tc.config, err, tc.want)
		}
	}
}

// TestRoundTripQwen2 does the same for a random-weight qwen2 (Q/K/V biases, grouped KV heads,
// neox RoPE: no permutation), F32 and BF16.
func TestRoundTripQwen2(t *testing.T) {
	const embd, heads, kvHeads, ffn, layers, vocab = 64, 4, 2, 96, 2, 100
	hd := embd / heads
	rnd := uint64(1)
	next := func() float32 {
		rnd = rnd*6364136223846793005 + 1442695040888963407
		return float32(int32(rnd>>33)%2000) / 8000
	}
	f32 := func(n int, one bool) []byte {
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			v := next()
			if one {
				v = 1 + v/4
			}
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	var w gguf.Writer
	for k, v := range map[string]any{"general.architecture": "qwen2", "qwen2.embedding_length": uint32(embd),
		"qwen2.block_count": uint32(layers), "qwen2.feed_forward_length": uint32(ffn), "qwen2.attention.head_count": uint32(heads),
		"qwen2.attention.head_count_kv": uint32(kvHeads), "qwen2.context_length": uint32(256),
		"qwen2.attention.layer_norm_rms_epsilon": float32(1e-6), "qwen2.rope.freq_base": float32(1e6)} {
		w.AddKV(k, v)
	}
	w.AddTensor("token_embd.weight", gguf.F32, []uint64{embd, vocab}, f32(embd*vocab, false))
	w.AddTensor("output_norm.weight", gguf.F32, []uint64{embd}, f32(embd, true))
	w.AddTensor("output.weight", gguf.F32, []uint64{embd, vocab}, f32(embd*vocab, false))
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		w.AddTensor(p+"attn_norm.weight", gguf.F32, []uint64{embd}, f32(embd, true))
		w.AddTensor(p+"attn_q.weight", gguf.F32, []uint64{embd, embd}, f32(embd*embd, false))
		w.AddTensor(p+"attn_q.bias", gguf.F32, []uint64{embd}, f32(embd, false))
		w.AddTensor(p+"attn_k.weight", gguf.F32, []uint64{embd, uint64(kvHeads * hd)}, f32(embd*kvHeads*hd, false))
		w.AddTensor(p+"attn_k.bias", gguf.F32, []uint64{uint64(kvHeads * hd)}, f32(kvHeads*hd, false))
		w.AddTensor(p+"attn_v.weight", gguf.F32, []uint64{embd, uint64(kvHeads * hd)}, f32(embd*kvHeads*hd, false))
		w.AddTensor(p+"attn_v.bias", gguf.F32, []uint64{uint64(kvHeads * hd)}, f32(kvHeads*hd, false))
		w.AddTensor(p+"attn_output.weight", gguf.F32, []uint64{embd, embd}, f32(embd*embd, false))
		w.AddTensor(p+"ffn_norm.weight", gguf.F32, []uint64{embd}, f32(embd, true))
		w.AddTensor(p+"ffn_gate.weight", gguf.F32, []uint64{embd, ffn}, f32(embd*ffn, false))
		w.AddTensor(p+"ffn_up.weight", gguf.F32, []uint64{embd, ffn}, f32(embd*ffn, false))
		w.AddTensor(p+"ffn_down.weight", gguf.F32, []uint64{ffn, embd}, f32(embd*ffn, false))
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	srcPath := filepath.Join(t.TempDir(), "qwen2.gguf")
	os.WriteFile(srcPath, buf.Bytes(), 0o600)
	src, err := gguf.Open(srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	cfg := map[string]any{"architectures": []string{"Qwen2ForCausalLM"}, "hidden_size": embd, "num_hidden_layers": layers,
		"intermediate_size": ffn, "num_attention_heads": heads, "num_key_value_heads": kvHeads, "rms_norm_eps": 1e-6,
		"rope_theta": 1e6, "max_position_embeddings": 256, "tie_word_embeddings": false, "hidden_act": "silu"}
	prompt := []int32{3, 14, 15, 92, 65, 35}
	for _, dtype := range []string{"F32", "BF16"} {
		t.Run(dtype, func(t *testing.T) {
			hts, gts := toHF(t, src, dtype)
			dir := t.TempDir()
			cb, _ := json.Marshal(cfg)
			os.WriteFile(filepath.Join(dir, "config.json"), cb, 0o600)
			writeSafetensors(t, filepath.Join(dir, "model.safetensors"), hts)
			var rw gguf.Writer
			for _, k := range src.Keys() {
				v, _ := src.Value(k)
				rw.AddKV(k, v)
			}
			rw.Tensors = gts
			var rb bytes.Buffer
			if _, err := rw.WriteTo(&rb); err != nil {
				t.Fatal(err)
			}
			ref := filepath.Join(t.TempDir(), "ref.gguf")
			os.WriteFile(ref, rb.Bytes(), 0o600)
			if got, want := lastLogits(t, dir, prompt), lastLogits(t, ref, prompt); !slices.Equal(got, want) {
				t.Fatalf("qwen2 %s: logits differ from the GGUF's", dtype)
			}
		})
	}
}

// TestTinyStoriesRopeScaling loads the folder with rope_scaling set to llama3 and to yarn:
// the frequencies the engines get carry the scaling, and the model still generates.
func TestTinyStoriesRopeScaling(t *testing.T) {
	src := fixtures.Path(t, "TinyStories-656K")
	cb, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	json.Unmarshal(cb, &cfg)
	for _, tc := range []struct {
		scaling map[string]any
		mscale  float32
		check   func(freq []float32) bool
	}{
		// llama3, original context 64: pairs of wavelength > 64 slow down by up to the factor 4.
		{map[string]any{"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
			"original_max_position_embeddings": 64}, 1, func(f []float32) bool { return f[0] == 1 && math.Abs(float64(f[7])*4-math.Pow(1e4, -14.0/16)) < 1e-9 }},
		{map[string]any{"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128}, float32(1 + 0.1*math.Log(4)),
			func(f []float32) bool { return f[0] == 1 && math.Abs(float64(f[7])*4-math.Pow(1e4, -14.0/16)) < 1e-9 }},
	} {
		dir := t.TempDir()
		for _, name := range []string{"model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
			if err := os.Symlink(filepath.Join(src, name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		cfg["rope_scaling"] = tc.scaling
		b, _ := json.Marshal(cfg)
		os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
		m, err := model.Load(dir, model.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		w := m.Weights()
		if math.Abs(float64(w.RopeMScale-tc.mscale)) > 1e-6 || !tc.check(w.RopeFreq) {
			t.Errorf("%v: freq %v mscale %g", tc.scaling, w.RopeFreq, w.RopeMScale)
		}
		if ids := greedy(t, m, []int32{1}, 8); len(ids) != 8 {
			t.Errorf("%v: generated %v", tc.scaling, ids)
		}
		m.Close()
	}
}
