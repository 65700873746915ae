package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
)

// kvqOf maps the weight types requantize writes to kvq's ggml-compatible row encoders.
var kvqOf = map[gguf.Type]kvq.Format{
	gguf.F16: kvq.F16, gguf.BF16: kvq.BF16, gguf.Q8_0: kvq.Q8_0, gguf.Q4_0: kvq.Q4_0,
	gguf.Q4_1: kvq.Q4_1, gguf.Q5_0: kvq.Q5_0, gguf.Q5_1: kvq.Q5_1,
}

// requantize writes a copy of the GGUF file src with every 2-D tensor re-encoded as typ
// (kvq's encoders write ggml's block layouts byte for byte), and returns its path.
func requantize(t testing.TB, src string, typ gguf.Type) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &gguf.Writer{Version: f.Version}
	for _, k := range f.Keys() {
		if k == "general.alignment" {
			continue
		}
		v, _ := f.Value(k)
		w.AddKV(k, v)
	}
	for _, ti := range f.Tensors() {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(ti.Dims) != 2 {
			w.AddTensor(ti.Name, ti.Type, ti.Dims, data)
			continue
		}
		cols, rows := int(ti.Dims[0]), int(ti.Dims[1])
		codec, err := kvq.NewCodec(kvqOf[typ], cols, kvq.CodecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in := make([]float32, cols)
		irb := int(ti.Type.RowBytes(uint64(cols)))
		out := make([]byte, rows*codec.RowBytes())
		for r := 0; r < rows; r++ {
			if err := gguf.DequantizeRow(ti.Type, data[r*irb:(r+1)*irb], in); err != nil {
				t.Fatal(err)
			}
			codec.Encode(out[r*codec.RowBytes():(r+1)*codec.RowBytes()], in)
		}
		w.AddTensor(ti.Name, typ, ti.Dims, out)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny-"+typ.String()+".gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// asQwen2 writes a copy of the llama GGUF file src as a qwen2 model: the metadata keys
// renamed, and small deterministic Q, K and V biases added to every block. The result is not
// the trained model's function (qwen2 rotates neox pairs), but a valid qwen2 model that
// exercises the neox RoPE and the biases on both sides of a parity test.
func asQwen2(t testing.TB, src string) string { return asArch(t, src, "qwen2") }

// asQwen3 writes a qwen3 rewrite of the llama GGUF file src: no biases, neox RoPE, and per-head
// Q and K norms of sine-patterned weights near 1.
func asQwen3(t testing.TB, src string) string { return asArch(t, src, "qwen3") }

func asArch(t testing.TB, src, arch string) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &gguf.Writer{Version: f.Version}
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		switch {
		case k == "general.alignment":
			continue
		case k == "general.architecture":
			v = arch
		case strings.HasPrefix(k, "llama."):
			k = arch + "." + strings.TrimPrefix(k, "llama.")
		}
		w.AddKV(k, v)
	}
	for _, ti := range f.Tensors() {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		w.AddTensor(ti.Name, ti.Type, ti.Dims, data)
		if arch == "qwen3" {
			for _, proj := range []string{"q", "k"} {
				if strings.HasSuffix(ti.Name, ".attn_"+proj+".weight") {
					hd, _ := f.Uint("llama.rope.dimension_count")
					if v, ok := f.Uint("llama.attention.key_length"); ok {
						hd = v
					}
					if hd == 0 {
						e, _ := f.Uint("llama.embedding_length")
						h, _ := f.Uint("llama.attention.head_count")
						hd = e / h
					}
					b := make([]byte, 4*hd)
					for i := 0; i < int(hd); i++ {
						binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1+0.2*float32(math.Sin(float64(5*i+len(ti.Name))))))
					}
					w.AddTensor(strings.TrimSuffix(ti.Name, ".weight")+"_norm.weight", gguf.F32, []uint64{hd}, b)
				}
			}
			continue
		}
		for _, proj := range []string{"q", "k", "v"} {
			if strings.HasSuffix(ti.Name, ".attn_"+proj+".weight") {
				n := int(ti.Dims[1])
				b := make([]byte, 4*n)
				for i := 0; i < n; i++ {
					binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(0.05*float32(math.Sin(float64(3*i+len(ti.Name))))))
				}
				w.AddTensor(strings.TrimSuffix(ti.Name, "weight")+"bias", gguf.F32, []uint64{uint64(n)}, b)
			}
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny-"+arch+".gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func loadCPU(t testing.TB, path string, batch int) *model.Model {
	t.Helper()
	m, err := model.Load(path, model.Options{Threads: 2, Batch: batch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestCheckModel(t *testing.T) {
	ok := model.Hparams{Heads: 32, KVHeads: 8, HeadDimK: 128, HeadDimV: 128}
	if err := CheckModel(ok); err != nil {
		t.Fatal(err)
	}
	// The device has ml.Gemma and ml.MoE: these architectures' operations are all there.
	for _, a := range []string{"llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "phi3", "gemma2", "gemma3"} {
		h := ok
		h.Arch = a
		if a == "qwen2moe" || a == "qwen3moe" {
			h.Experts, h.ExpertsUsed = 8, 2
		}
		if err := CheckModel(h); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	for name, tc := range map[string]struct {
		mod  func(h *model.Hparams)
		want string
	}{
		"head_dim 8 (stories260K)": {func(h *model.Hparams) { h.HeadDimK, h.HeadDimV = 8, 8 }, "head dimension 8 (the attention kernels take 64, 128 and 256)"},
		"K ≠ V":                    {func(h *model.Hparams) { h.HeadDimV = 64 }, "K head dimension 128 ≠ V head dimension 64"},
		"group 32":                 {func(h *model.Hparams) { h.KVHeads = 1 }, "32 query heads on 1 KV heads"},
	} {
		t.Run(name, func(t *testing.T) {
			h := ok
			tc.mod(&h)
			err := CheckModel(h)
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%v, want ErrUnsupported naming %q in one line", err, tc.want)
			}
		})
	}
}

// TestConvertRows: a type the kernels do not read is dequantized exactly and rounded to f16
// (or kept as f32); a value beyond f16's range is refused for f16.
func TestConvertRows(t *testing.T) {
	const rows, cols = 5, 64
	vals := make([]float32, rows*cols)
	for i := range vals {
		vals[i] = float32(math.Sin(float64(i))) * 3
	}
	codec, _ := kvq.NewCodec(kvq.Q4_1, cols, kvq.CodecOptions{})
	data := make([]byte, rows*codec.RowBytes())
	for r := 0; r < rows; r++ {
		codec.Encode(data[r*codec.RowBytes():(r+1)*codec.RowBytes()], vals[r*cols:(r+1)*cols])
	}
	src, err := model.NewMatrix("w", gguf.Q4_1, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []gguf.Type{gguf.F16, gguf.F32} {
		dst := make([]byte, (rows-1)*int(typ.RowBytes(cols)))
		if err := convertRows(src, typ, 1, rows, dst); err != nil {
			t.Fatal(err)
		}
		row := make([]float32, cols)
		for r := 1; r < rows; r++ {
			src.DequantRow(row, r)
			for i, v := range row {
				var got float32
				if typ == gguf.F16 {
					got = kvq.F16ToF32(binary.LittleEndian.Uint16(dst[((r-1)*cols+i)*2:]))
					v = kvq.F16ToF32(kvq.F32ToF16(v))
				} else {
					got = math.Float32frombits(binary.LittleEndian.Uint32(dst[((r-1)*cols+i)*4:]))
				}
				if got != v {
					t.Fatalf("%s row %d [%d] = %g, want %g", typ, r, i, got, v)
				}
			}
		}
	}
	big := make([]byte, cols*4)
	binary.LittleEndian.PutUint32(big[8:], math.Float32bits(70000))
	bm, _ := model.NewMatrix("big", gguf.F32, 1, cols, big)
	if err := convertRows(bm, gguf.F16, 0, 1, make([]byte, cols*2)); !errors.Is(err, errF16Range) {
		t.Errorf("70000 as f16: %v", err)
	}
}

// TestModelOnFake uploads kvlab-tiny-64 in every device weight type (and q4_1, dequantized at
// upload) to the fake driver and runs a prefill and a decode step: the weights land byte for
// byte, every launch matches its kernel's C signature, everything runs on one stream, and
// the only transfers of a step are the token ids in and the logits out.
func TestModelOnFake(t *testing.T) {
	fixture := fixtures.Path(t, "kvlab-tiny-64.gguf")
	for _, typ := range []gguf.Type{gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_1} {
		t.Run(typ.String(), func(t *testing.T) {
			e, f := fakeEngine(t)
			path := fixture
			if typ != gguf.F32 {
				path = requantize(t, fixture, typ)
			}
			m := loadCPU(t, path, 0)
			dm, err := e.LoadModel(m, ModelOptions{Batch: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer dm.Close()
			dev := typ
			if !nativeWeight(typ) {
				dev = gguf.F16
			}
			info := dm.Upload()
			hp := m.Hparams
			// 4 layers × 7 matrices, the embedding table and the output matrix.
			if info.Types[dev.String()] != 4*7+2 || len(info.Types) != 1 {
				t.Errorf("upload types %v", info.Types)
			}
			if (typ != dev) != (info.Dequantized[typ.String()] == 30) {
				t.Errorf("dequantized %v", info.Dequantized)
			}
			w := m.Weights()
			for _, x := range []struct {
				dev *weight
				src *model.Matrix
			}{{dm.embd, w.Embd}, {dm.layers[3].down, w.Blocks[3].Down}} {
				want := x.src.Data
				if typ != dev {
					want = make([]byte, x.src.Rows*int(dev.RowBytes(uint64(x.src.Cols))))
					if err := convertRows(x.src, dev, 0, x.src.Rows, want); err != nil {
						t.Fatal(err)
					}
				}
				if got := f.Mem(x.dev.buf.Addr(0), len(want)); !bytes.Equal(got, want) {
					t.Errorf("%s: device bytes differ from the expected layout", x.src.Name)
				}
			}

			c, err := e.NewCache(dm.CacheConfig(kvq.Pair{K: kvq.Q8_0, V: kvq.Q4_0}, 16))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Free()
			logits := make([]float32, hp.Vocab)
			f.Launches = nil
			h2d, d2h := f.Calls["cuMemcpyHtoD_v2"], f.Calls["cuMemcpyDtoH_v2"]
			if err := dm.Forward([]int32{1, 7, 9, 11, 13, 15}, c, logits); err != nil { // passes of 4 and 2
				t.Fatal(err)
			}
			if got := f.Calls["cuMemcpyHtoD_v2"] - h2d; got != 2 {
				t.Errorf("prefill: %d host-to-device copies, want 2 (the token ids of each pass)", got)
			}
			if got := f.Calls["cuMemcpyDtoH_v2"] - d2h; got != 1 {
				t.Errorf("prefill: %d device-to-host copies, want 1 (the logits)", got)
			}
			mv := f.LaunchesOf(MatVecKernel(dev, prefillTokens))
			if len(mv) != 2*4*7 {
				t.Errorf("prefill products %d, want 56", len(mv))
			}
			first := mv[0] // pass 1, layer 0, Wq: 128 rows × 128 cols, 4 tokens
			if first.Grid != [3]uint32{128 / 4, 1, 1} || first.Block != [3]uint32{128, 1, 1} || first.Args[4] != 128 || first.Args[5] != 128 || first.Args[6] != 4 {
				t.Errorf("Wq launch %v %v args %v", first.Grid, first.Block, first.Args)
			}
			if got := f.LaunchesOf(PrefillKernel(kvq.Q8_0, kvq.Q4_0, 64)); len(got) != 8 {
				t.Errorf("prefill attention launches %d, want 8", len(got))
			}
			if got := f.LaunchesOf(MatVecKernel(dev, 1)); len(got) != 1 || got[0].Args[4] != uint64(hp.Vocab) {
				t.Errorf("logits product %+v", got)
			}

			f.Launches = nil
			h2d, d2h = f.Calls["cuMemcpyHtoD_v2"], f.Calls["cuMemcpyDtoH_v2"]
			if err := dm.Forward([]int32{42}, c, logits); err != nil {
				t.Fatal(err)
			}
			if h, d := f.Calls["cuMemcpyHtoD_v2"]-h2d, f.Calls["cuMemcpyDtoH_v2"]-d2h; h != 1 || d != 1 {
				t.Errorf("decode: %d host-to-device and %d device-to-host copies, want 1 and 1", h, d)
			}
			// Per layer: rmsnorm ×2, 7 products, rope ×2, K and V writes, decode + combine, swiglu.
			if got, want := len(f.Launches), 1+4*(2+7+2+2+2+1)+2; got != want {
				t.Errorf("decode step: %d launches, want %d", got, want)
			}
			for _, l := range f.Launches {
				if l.Stream != 0 {
					t.Errorf("%s launched on stream %v, want the default stream", l.Name, l.Stream)
				}
			}
			if got := f.LaunchesOf(DecodeKernel(kvq.Q8_0, kvq.Q4_0, 64, 2)); len(got) != 4 {
				t.Errorf("decode attention launches %d, want 4", len(got))
			}
			if c.Len() != 7 {
				t.Errorf("cache holds %d cells, want 7", c.Len())
			}
		})
	}
}

// TestModelQwen2OnFake: a qwen2 model rotates neox pairs and adds the Q, K and V biases.
func TestModelQwen2OnFake(t *testing.T) {
	e, f := fakeEngine(t)
	m := loadCPU(t, asQwen2(t, fixtures.Path(t, "kvlab-tiny-64.gguf")), 0)
	if m.Hparams.Arch != "qwen2" {
		t.Fatalf("arch %q", m.Hparams.Arch)
	}
	dm, err := e.LoadModel(m, ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	c, err := e.NewCache(dm.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	f.Launches = nil
	if err := dm.Forward([]int32{1}, c, make([]float32, m.Hparams.Vocab)); err != nil {
		t.Fatal(err)
	}
	for _, l := range f.LaunchesOf("rope") {
		if l.Args[6] != 1 {
			t.Errorf("rope neox argument %d, want 1", l.Args[6])
		}
	}
	mv := f.LaunchesOf(MatVecKernel(gguf.F32, 1))
	biased := 0
	for _, l := range mv {
		if l.Args[3] != 0 {
			biased++
		}
	}
	if biased != 3*4 {
		t.Errorf("%d products with a bias, want 12 (Q, K, V × 4 layers)", biased)
	}
}

// TestModelQwen3OnFake: a qwen3 model normalizes every query and key head (two more rmsnorm
// launches a layer, one row per head) through the same architecture file as the CPU.
func TestModelQwen3OnFake(t *testing.T) {
	e, f := fakeEngine(t)
	m := loadCPU(t, asQwen3(t, fixtures.Path(t, "kvlab-tiny-64.gguf")), 0)
	if m.Hparams.Arch != "qwen3" {
		t.Fatalf("arch %q", m.Hparams.Arch)
	}
	dm, err := e.LoadModel(m, ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	c, err := e.NewCache(dm.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	f.Launches = nil
	if err := dm.Forward([]int32{1}, c, make([]float32, m.Hparams.Vocab)); err != nil {
		t.Fatal(err)
	}
	hp := m.Hparams
	norms := f.LaunchesOf("rmsnorm")
	if len(norms) != 4*hp.Layers+1 {
		t.Fatalf("%d rmsnorm launches, want %d", len(norms), 4*hp.Layers+1)
	}
	if g := norms[1].Grid; g != [3]uint32{uint32(hp.Heads), 1, 1} || norms[1].Args[3] != uint64(hp.HeadDimK) {
		t.Errorf("q norm launch grid %v args %v, want a row per head of %d", g, norms[1].Args, hp.HeadDimK)
	}
	for _, l := range f.LaunchesOf(MatVecKernel(gguf.F32, 1)) {
		if l.Args[3] != 0 {
			t.Errorf("a product with a bias in qwen3")
		}
	}
}

// TestModelForwardRejects: bad inputs fail before any device work and leave the cache as it was.
func TestModelForwardRejects(t *testing.T) {
	e, f := fakeEngine(t)
	m := loadCPU(t, fixtures.Path(t, "kvlab-tiny-64.gguf"), 0)
	var calls int
	var last [2]int64
	dm, err := e.LoadModel(m, ModelOptions{Progress: func(done, total int64) { calls, last = calls+1, [2]int64{done, total} }})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	if calls != 1+30 || last[0] != last[1] || last[1] != m.WeightBytes() {
		t.Errorf("upload progress: %d calls, last %v, want 31 ending at %d", calls, last, m.WeightBytes())
	}
	c, err := e.NewCache(dm.CacheConfig(kvq.Pair{K: kvq.F16, V: kvq.F16}, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	other, err := e.NewCache(kvcache.Config{Layers: 2, KVHeads: 1, HeadDimK: 64, HeadDimV: 64, Pair: kvq.Pair{K: kvq.F16, V: kvq.F16}, MaxCells: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Free()
	vocab := m.Hparams.Vocab
	f.Launches = nil
	for name, tc := range map[string]struct {
		tokens []int32
		c      *Cache
		logits int
		is     error
	}{
		"no tokens":      {nil, c, vocab, nil},
		"token range":    {[]int32{1, int32(vocab)}, c, vocab, nil},
		"logits length":  {[]int32{1, 2}, c, 7, nil},
		"cache geometry": {[]int32{1}, other, vocab, nil},
		"capacity":       {[]int32{1, 2, 3, 4, 5}, c, vocab, kvcache.ErrKVFull},
	} {
		err := dm.Forward(tc.tokens, tc.c, make([]float32, tc.logits))
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(f.Launches) != 0 || c.Len() != 0 {
		t.Errorf("rejected calls launched %d kernels; cache holds %d cells", len(f.Launches), c.Len())
	}
	if _, err := e.LoadModel(loadCPU(t, fixtures.Path(t, "stories260K.gguf"), 0), ModelOptions{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("stories260K (head_dim 8): %v", err)
	}
}
