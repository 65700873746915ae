package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// allValues is metadata with every GGUF value type, arrays of each, and nested arrays.
func allValues() []KV {
	return []KV{
		{"general.architecture", "llama"},
		{"t.u8", uint8(200)},
		{"t.i8", int8(-100)},
		{"t.u16", uint16(60000)},
		{"t.i16", int16(-30000)},
		{"t.u32", uint32(4000000000)},
		{"t.i32", int32(-2000000000)},
		{"t.u64", uint64(math.MaxUint64)},
		{"t.i64", int64(math.MinInt64)},
		{"t.f32", float32(1.5)},
		{"t.f64", -2.25},
		{"t.bool", true},
		{"t.str", "héllo"},
		{"t.empty", ""},
		{"a.u8", []uint8{1, 2, 255}},
		{"a.i8", []int8{-1, 2}},
		{"a.u16", []uint16{1, 65535}},
		{"a.i16", []int16{-32768, 5}},
		{"a.u32", []uint32{7, 1 << 31}},
		{"a.i32", []int32{-7, 3}},
		{"a.u64", []uint64{1 << 63}},
		{"a.i64", []int64{-1 << 62}},
		{"a.f32", []float32{0.5, -1}},
		{"a.f64", []float64{1e300}},
		{"a.bool", []bool{true, false, true}},
		{"a.str", []string{"a", "", "ccc"}},
		{"a.empty", []string{}},
		{"a.nested", []any{[]int32{1, 2}, []string{"x"}, []any{[]bool{true}}, []any{}}},
		{"a.noarrays", []any{}},
	}
}

func writeFile(t *testing.T, w *Writer) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func readBytes(t *testing.T, b []byte) *File {
	t.Helper()
	f, err := Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return f
}

func TestMetadataRoundTrip(t *testing.T) {
	for _, version := range []uint32{2, 3} {
		kvs := allValues()
		f := readBytes(t, writeFile(t, &Writer{Version: version, KV: kvs}))
		if f.Version != version {
			t.Errorf("Version = %d, want %d", f.Version, version)
		}
		if f.Alignment != DefaultAlignment {
			t.Errorf("Alignment = %d, want %d", f.Alignment, DefaultAlignment)
		}
		var keys []string
		for _, kv := range kvs {
			keys = append(keys, kv.Key)
			got, ok := f.Value(kv.Key)
			if !ok {
				t.Errorf("v%d: Value(%q) missing", version, kv.Key)
				continue
			}
			want := kv.Value
			if kv.Key == "a.noarrays" {
				want = []any{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("v%d: Value(%q) = %#v, want %#v", version, kv.Key, got, want)
			}
		}
		if !reflect.DeepEqual(f.Keys(), keys) {
			t.Errorf("Keys() = %v, want %v", f.Keys(), keys)
		}
		if f.Architecture() != "llama" {
			t.Errorf("Architecture() = %q", f.Architecture())
		}
		if len(f.Tensors()) != 0 {
			t.Errorf("Tensors() = %v, want none", f.Tensors())
		}
	}
}

func TestWriterIntValues(t *testing.T) {
	f := readBytes(t, writeFile(t, &Writer{KV: []KV{
		{"small", 5},
		{"big", 1 << 40},
		{"ints", []int{1, -2}},
		{"bigints", []int{1, 1 << 40}},
		{"anyints", []any{1, 2}},
		{"anyf32", []any{float32(1), float32(2)}},
	}}))
	for key, want := range map[string]any{
		"small":   int32(5),
		"big":     int64(1 << 40),
		"ints":    []int32{1, -2},
		"bigints": []int64{1, 1 << 40},
		"anyints": []int32{1, 2},
		"anyf32":  []float32{1, 2},
	} {
		if got, _ := f.Value(key); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", key, got, want)
		}
	}
}

// TestPlaceholderVocab reads back AddPlaceholderVocab's tokenizer: the special and byte
// tokens where llama.cpp looks for them, one score and type per token.
func TestPlaceholderVocab(t *testing.T) {
	w := &Writer{}
	w.AddPlaceholderVocab(300)
	f := readBytes(t, writeFile(t, w))
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(toks) != 300 {
		t.Fatalf("tokens: %d (%v), want 300", len(toks), ok)
	}
	for i, want := range map[int]string{0: "<unk>", 1: "<s>", 2: "</s>", 3: "<0x00>", 258: "<0xFF>", 259: "▁t259"} {
		if toks[i] != want {
			t.Errorf("token %d = %q, want %q", i, toks[i], want)
		}
	}
	scores, _ := f.Value("tokenizer.ggml.scores")
	types, _ := f.Value("tokenizer.ggml.token_type")
	if s, ok := scores.([]float32); !ok || len(s) != 300 || s[299] != -299 {
		t.Errorf("scores = %T of %d", scores, len(toks))
	}
	if ty, ok := types.([]int32); !ok || len(ty) != 300 || ty[1] != 3 || ty[3] != 6 || ty[299] != 1 {
		t.Errorf("token types = %v", types)
	}
	if m, _ := f.String("tokenizer.ggml.model"); m != "llama" {
		t.Errorf("tokenizer model %q", m)
	}
}

func TestAccessors(t *testing.T) {
	f := readBytes(t, writeFile(t, &Writer{KV: []KV{
		{"u8", uint8(7)},
		{"i32neg", int32(-5)},
		{"u64max", uint64(math.MaxUint64)},
		{"f32", float32(0.25)},
		{"str", "s"},
		{"b", false},
		{"strs", []string{"a", "b"}},
		{"f32s", []float32{1, 2}},
		{"f64s", []float64{0.5}},
		{"i32s", []int32{-1, 6}},
		{"u8s", []uint8{3, 4}},
		{"u32s.fit", []uint32{1, math.MaxInt32}},
		{"u32s.big", []uint32{1, math.MaxInt32 + 1}},
		{"i64s.big", []int64{math.MinInt32 - 1}},
	}}))
	type result struct {
		v  any
		ok bool
	}
	r := func(v any, ok bool) result { return result{v, ok} }
	tests := []struct {
		name string
		got  result
		want result
	}{
		{"Uint(u8)", r(f.Uint("u8")), result{uint64(7), true}},
		{"Uint(i32neg)", r(f.Uint("i32neg")), result{uint64(0), false}},
		{"Uint(u64max)", r(f.Uint("u64max")), result{uint64(math.MaxUint64), true}},
		{"Uint(str)", r(f.Uint("str")), result{uint64(0), false}},
		{"Uint(missing)", r(f.Uint("missing")), result{uint64(0), false}},
		{"Int(i32neg)", r(f.Int("i32neg")), result{int64(-5), true}},
		{"Int(u8)", r(f.Int("u8")), result{int64(7), true}},
		{"Int(u64max)", r(f.Int("u64max")), result{int64(0), false}},
		{"Float(f32)", r(f.Float("f32")), result{0.25, true}},
		{"Float(i32neg)", r(f.Float("i32neg")), result{-5.0, true}},
		{"Float(u64max)", r(f.Float("u64max")), result{float64(math.MaxUint64), true}},
		{"Float(str)", r(f.Float("str")), result{0.0, false}},
		{"String(str)", r(f.String("str")), result{"s", true}},
		{"String(u8)", r(f.String("u8")), result{"", false}},
		{"Bool(b)", r(f.Bool("b")), result{false, true}},
		{"Bool(u8)", r(f.Bool("u8")), result{false, false}},
		{"Strings(strs)", r(f.Strings("strs")), result{[]string{"a", "b"}, true}},
		{"Strings(f32s)", r(f.Strings("f32s")), result{[]string(nil), false}},
		{"Float32s(f32s)", r(f.Float32s("f32s")), result{[]float32{1, 2}, true}},
		{"Float32s(f64s)", r(f.Float32s("f64s")), result{[]float32{0.5}, true}},
		{"Float32s(i32s)", r(f.Float32s("i32s")), result{[]float32{-1, 6}, true}},
		{"Float32s(strs)", r(f.Float32s("strs")), result{[]float32(nil), false}},
		{"Int32s(i32s)", r(f.Int32s("i32s")), result{[]int32{-1, 6}, true}},
		{"Int32s(u8s)", r(f.Int32s("u8s")), result{[]int32{3, 4}, true}},
		{"Int32s(u32s.fit)", r(f.Int32s("u32s.fit")), result{[]int32{1, math.MaxInt32}, true}},
		{"Int32s(u32s.big)", r(f.Int32s("u32s.big")), result{[]int32(nil), false}},
		{"Int32s(i64s.big)", r(f.Int32s("i64s.big")), result{[]int32(nil), false}},
		{"Int32s(f32s)", r(f.Int32s("f32s")), result{[]int32(nil), false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}
	if f.Architecture() != "" {
		t.Errorf("Architecture() = %q without general.architecture, want empty", f.Architecture())
	}
}

// testTensors returns tensors of several types and shapes with distinct data.
func testTensors() []WriteTensor {
	mk := func(name string, typ Type, dims ...uint64) WriteTensor {
		t := WriteTensor{Name: name, Dims: dims, Type: typ}
		t.Data = make([]byte, t.Info().Bytes())
		for i := range t.Data {
			t.Data[i] = byte(len(name) + i*7)
		}
		return t
	}
	return []WriteTensor{
		mk("token_embd.weight", F32, 8, 3),
		mk("blk.0.attn_norm.weight", F32, 7),
		mk("blk.0.attn_q.weight", Q8_0, 64, 2),
		mk("blk.0.ffn_down.weight", Q4_K, 256, 1, 2),
		mk("blk.0.ffn_up.weight", Q6_K, 512),
		mk("half", F16, 3, 1, 1, 1),
		mk("scalar", F32),
		mk("empty", F32, 0, 5),
	}
}

func TestTensorRoundTrip(t *testing.T) {
	for _, align := range []int{0, 1, 64, 4096} {
		tensors := testTensors()
		b := writeFile(t, &Writer{Alignment: align, KV: []KV{{"general.architecture", "llama"}}, Tensors: tensors})
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatalf("align %d: Open: %v", align, err)
		}
		wantAlign := int64(align)
		if align == 0 {
			wantAlign = DefaultAlignment
		}
		if f.Alignment != wantAlign {
			t.Errorf("align %d: Alignment = %d", align, f.Alignment)
		}
		if f.DataOffset%wantAlign != 0 {
			t.Errorf("align %d: DataOffset %d not aligned", align, f.DataOffset)
		}
		if a, ok := f.Uint("general.alignment"); ok != (wantAlign != DefaultAlignment) || (ok && int64(a) != wantAlign) {
			t.Errorf("align %d: general.alignment = %d, %v", align, a, ok)
		}
		infos := f.Tensors()
		if len(infos) != len(tensors) {
			t.Fatalf("align %d: %d tensors, want %d", align, len(infos), len(tensors))
		}
		for i, wt := range tensors {
			info := infos[i]
			if info.Name != wt.Name || info.Type != wt.Type || !slices.Equal(info.Dims, wt.Dims) {
				t.Errorf("tensor %d = %+v, want %+v", i, info, wt.Info())
			}
			if info.Offset%uint64(wantAlign) != 0 {
				t.Errorf("tensor %q: offset %d not aligned to %d", wt.Name, info.Offset, wantAlign)
			}
			if byName, ok := f.Tensor(wt.Name); !ok || !reflect.DeepEqual(byName, info) {
				t.Errorf("Tensor(%q) = %+v, %v", wt.Name, byName, ok)
			}
			data, err := f.TensorData(wt.Name)
			if err != nil {
				t.Fatalf("TensorData(%q): %v", wt.Name, err)
			}
			if !bytes.Equal(data, wt.Data) {
				t.Errorf("TensorData(%q) differs from what was written", wt.Name)
			}
		}
		if _, ok := f.Tensor("nope"); ok {
			t.Error("Tensor(nope) found")
		}
		if _, err := f.TensorData("nope"); err == nil {
			t.Error("TensorData(nope) succeeded")
		}
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := f.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := f.TensorData("token_embd.weight"); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("TensorData after Close: %v, want a closed-file error", err)
		}
	}
}

func TestElementsAndBytes(t *testing.T) {
	tests := []struct {
		info          TensorInfo
		elems, nbytes uint64
	}{
		{TensorInfo{Dims: []uint64{64, 512}, Type: F32}, 32768, 131072},
		{TensorInfo{Dims: []uint64{4096, 4096}, Type: Q4_K}, 1 << 24, 4096 / 256 * 144 * 4096},
		{TensorInfo{Dims: []uint64{4096, 32000}, Type: Q6_K}, 4096 * 32000, 4096 / 256 * 210 * 32000},
		{TensorInfo{Dims: []uint64{64}, Type: Q8_0}, 64, 68},
		{TensorInfo{Dims: []uint64{128, 2, 3}, Type: BF16}, 768, 1536},
		{TensorInfo{Type: F32}, 1, 4},
		{TensorInfo{Dims: []uint64{0, 7}, Type: F16}, 0, 0},
		{TensorInfo{Dims: []uint64{33}, Type: Q8_0}, 33, 0},
		{TensorInfo{Dims: []uint64{4}, Type: 4}, 4, 0},
	}
	for _, tt := range tests {
		if got := tt.info.Elements(); got != tt.elems {
			t.Errorf("%v %v: Elements = %d, want %d", tt.info.Type, tt.info.Dims, got, tt.elems)
		}
		if got := tt.info.Bytes(); got != tt.nbytes {
			t.Errorf("%v %v: Bytes = %d, want %d", tt.info.Type, tt.info.Dims, got, tt.nbytes)
		}
	}
}

func TestTypeTraits(t *testing.T) {
	tests := []struct {
		t       Type
		name    string
		bs, ts  int
		row256  uint64
		dequant bool
	}{
		{F32, "f32", 1, 4, 1024, true},
		{F16, "f16", 1, 2, 512, true},
		{Q4_0, "q4_0", 32, 18, 144, true},
		{Q4_1, "q4_1", 32, 20, 160, true},
		{Q5_0, "q5_0", 32, 22, 176, true},
		{Q5_1, "q5_1", 32, 24, 192, true},
		{Q8_0, "q8_0", 32, 34, 272, true},
		{Q8_1, "q8_1", 32, 36, 288, true},
		{Q2_K, "q2_K", 256, 84, 84, true},
		{Q3_K, "q3_K", 256, 110, 110, true},
		{Q4_K, "q4_K", 256, 144, 144, true},
		{Q5_K, "q5_K", 256, 176, 176, true},
		{Q6_K, "q6_K", 256, 210, 210, true},
		{Q8_K, "q8_K", 256, 292, 292, true},
		{IQ2_XXS, "iq2_xxs", 256, 66, 66, false},
		{IQ2_XS, "iq2_xs", 256, 74, 74, false},
		{IQ3_XXS, "iq3_xxs", 256, 98, 98, false},
		{IQ1_S, "iq1_s", 256, 50, 50, false},
		{IQ4_NL, "iq4_nl", 32, 18, 144, true},
		{IQ3_S, "iq3_s", 256, 110, 110, false},
		{IQ2_S, "iq2_s", 256, 82, 82, false},
		{IQ4_XS, "iq4_xs", 256, 136, 136, false},
		{I8, "i8", 1, 1, 256, false},
		{I16, "i16", 1, 2, 512, false},
		{I32, "i32", 1, 4, 1024, false},
		{I64, "i64", 1, 8, 2048, false},
		{F64, "f64", 1, 8, 2048, true},
		{IQ1_M, "iq1_m", 256, 56, 56, false},
		{BF16, "bf16", 1, 2, 512, true},
		{TQ1_0, "tq1_0", 256, 54, 54, false},
		{TQ2_0, "tq2_0", 256, 66, 66, false},
		{MXFP4, "mxfp4", 32, 17, 136, false},
		{NVFP4, "nvfp4", 64, 36, 144, false},
		{Q1_0, "q1_0", 128, 18, 36, false},
		{4, "type(4)", 0, 0, 0, false},
		{31, "type(31)", 0, 0, 0, false},
		{1 << 31, "type(2147483648)", 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.t.String(); got != tt.name {
				t.Errorf("String = %q", got)
			}
			if got := tt.t.BlockSize(); got != tt.bs {
				t.Errorf("BlockSize = %d, want %d", got, tt.bs)
			}
			if got := tt.t.TypeSize(); got != tt.ts {
				t.Errorf("TypeSize = %d, want %d", got, tt.ts)
			}
			if got := tt.t.RowBytes(256); got != tt.row256 {
				t.Errorf("RowBytes(256) = %d, want %d", got, tt.row256)
			}
			if got := tt.t.Valid(); got != (tt.bs != 0) {
				t.Errorf("Valid = %v", got)
			}
			if got := tt.t.CanConvert(); got != tt.dequant {
				t.Errorf("CanConvert = %v, want %v", got, tt.dequant)
			}
			if tt.bs != 0 {
				if p, ok := ParseType(tt.name); !ok || p != tt.t {
					t.Errorf("ParseType(%q) = %v, %v", tt.name, p, ok)
				}
			}
		})
	}
	if got := Q4_K.RowBytes(255); got != 0 {
		t.Errorf("Q4_K.RowBytes(255) = %d, want 0 (not whole blocks)", got)
	}
	if got := F64.RowBytes(math.MaxUint64); got != 0 {
		t.Errorf("F64.RowBytes(MaxUint64) = %d, want 0 (overflow)", got)
	}
}

// raw builds GGUF bytes field by field, for files the Writer refuses to produce.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func (r *raw) bytes(b ...byte) *raw {
	r.Write(b)
	return r
}

// header starts a v3 file with the given counts.
func header(tensors, kvs uint64) *raw {
	r := &raw{}
	r.WriteString("GGUF")
	return r.u32(3).u64(tensors).u64(kvs)
}

// tensorFile builds a file whose one tensor info is given raw, with data padded to 32.
func tensorFile(name string, dims []uint64, typ uint32, off uint64, dataBytes int) []byte {
	r := header(1, 0).str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	r.u32(typ).u64(off)
	for r.Len()%32 != 0 {
		r.WriteByte(0)
	}
	r.Write(make([]byte, dataBytes))
	return r.Bytes()
}

func TestReadRejects(t *testing.T) {
	valid := writeFile(t, &Writer{KV: []KV{{"k", "v"}}, Tensors: []WriteTensor{
		{Name: "blk.0.attn_q.weight", Dims: []uint64{64, 4}, Type: F32},
	}})
	twoTensors := func(off2 uint64) []byte {
		r := header(2, 0)
		r.str("a").u32(1).u64(16).u32(uint32(F32)).u64(0)
		r.str("b").u32(1).u64(16).u32(uint32(F32)).u64(off2)
		for r.Len()%32 != 0 {
			r.WriteByte(0)
		}
		r.Write(make([]byte, 256))
		return r.Bytes()
	}
	nested := header(0, 1).str("deep").u32(uint32(valArray))
	for range maxNesting + 1 {
		nested.u32(uint32(valArray)).u64(1)
	}
	nested.u32(uint32(valUint8)).u64(0)

	tests := []struct {
		name     string
		data     []byte
		size     int64 // 0: len(data)
		sentinel error
		msg      string
	}{
		{"empty", nil, 0, ErrNotGGUF, "too short"},
		{"magic prefix", []byte("GG"), 0, ErrTruncated, "inside the magic"},
		{"bad magic", []byte("GGML\x03\x00\x00\x00"), 0, ErrNotGGUF, `magic "GGML"`},
		{"swapped magic", []byte("FUGG\x00\x00\x00\x03"), 0, ErrNotGGUF, "big-endian"},
		{"version 1", (&raw{}).bytes('G', 'G', 'U', 'F').u32(1).u32(0).u32(0).Bytes(), 0, ErrUnsupportedVersion, "version 1"},
		{"version 4", (&raw{}).bytes('G', 'G', 'U', 'F').u32(4).u64(0).u64(0).Bytes(), 0, ErrUnsupportedVersion, "version 4"},
		{"big-endian v3", (&raw{}).bytes('G', 'G', 'U', 'F', 0, 0, 0, 3).u64(0).u64(0).Bytes(), 0, ErrUnsupportedVersion, "big-endian"},
		{"cut in counts", []byte("GGUF\x03\x00\x00\x00\x01"), 0, ErrTruncated, "tensor count"},
		{"huge kv count", header(0, 1<<62).Bytes(), 0, ErrTruncated, "metadata count"},
		{"huge tensor count", header(1<<60, 0).Bytes(), 0, ErrTruncated, "tensor count"},
		{"huge key length", header(0, 1).u64(1 << 50).u32(0).bytes(0).Bytes(), 0, ErrTruncated, "key: length"},
		{"huge string", header(0, 1).str("k").u32(uint32(valString)).u64(math.MaxUint64).Bytes(), 0, ErrTruncated, `"k": length`},
		{"huge array", header(0, 1).str("k").u32(uint32(valArray)).u32(uint32(valUint32)).u64(1 << 61).Bytes(), 0, ErrTruncated, "array of"},
		{"huge string array", header(0, 1).str("k").u32(uint32(valArray)).u32(uint32(valString)).u64(1 << 40).Bytes(), 0, ErrTruncated, "array of"},
		{"cut string element", header(0, 1).str("k").u32(uint32(valArray)).u32(uint32(valString)).u64(2).str("a").u64(100).bytes(1, 2, 3).Bytes(), 0, ErrTruncated, "element 1 of"},
		{"too deep", nested.Bytes(), 0, nil, "nested more than"},
		{"unknown value type", header(0, 1).str("k").u32(13).u64(0).Bytes(), 0, nil, "unknown value type 13"},
		{"unknown element type", header(0, 1).str("k").u32(uint32(valArray)).u32(99).u64(0).Bytes(), 0, nil, "unknown value type 99"},
		{"bad bool", header(0, 1).str("k").u32(uint32(valBool)).bytes(2).Bytes(), 0, nil, "bool byte is 2"},
		{"bad bool element", header(0, 1).str("k").u32(uint32(valArray)).u32(uint32(valBool)).u64(2).bytes(1, 9).Bytes(), 0, nil, "element 1: bool byte is 9"},
		{"duplicate key", header(0, 2).str("k").u32(uint32(valUint8)).bytes(1).str("k").u32(uint32(valUint8)).bytes(2).Bytes(), 0, nil, "duplicate key"},
		{"alignment not a power of two", header(0, 1).str("general.alignment").u32(uint32(valUint32)).u32(48).Bytes(), 0, nil, "48 is not a power of two"},
		{"alignment zero", header(0, 1).str("general.alignment").u32(uint32(valUint32)).u32(0).Bytes(), 0, nil, "0 is not a power of two"},
		{"alignment huge", header(0, 1).str("general.alignment").u32(uint32(valUint64)).u64(1 << 40).Bytes(), 0, nil, "not a power of two in"},
		{"alignment string", header(0, 1).str("general.alignment").u32(uint32(valString)).str("32").Bytes(), 0, nil, "not a non-negative integer"},
		{"too many dims", tensorFile("t", []uint64{1, 1, 1, 1, 1}, 0, 0, 4), 0, nil, `tensor "t": 5 dimensions`},
		{"unknown tensor type", tensorFile("t", []uint64{4}, 4, 0, 16), 0, nil, `tensor "t": unknown tensor type 4`},
		{"huge tensor type", tensorFile("t", []uint64{4}, 1<<31, 0, 16), 0, nil, "unknown tensor type 2147483648"},
		{"dims overflow", tensorFile("t", []uint64{1 << 32, 1 << 32}, 0, 0, 0), 0, nil, "element count overflows"},
		{"dim above int64", tensorFile("t", []uint64{1 << 63}, 0, 0, 0), 0, nil, "element count overflows"},
		{"bytes overflow", tensorFile("t", []uint64{1 << 31, 1 << 31}, uint32(F64), 0, 0), 0, nil, "data size overflows"},
		{"partial block", tensorFile("t", []uint64{33}, uint32(Q8_0), 0, 64), 0, nil, "ne[0] = 33 is not a multiple of the q8_0 block size 32"},
		{"unaligned offset", tensorFile("t", []uint64{4}, 0, 4, 64), 0, nil, "offset 4 is not a multiple of the alignment 32"},
		{"offset past end", tensorFile("t", []uint64{4}, 0, 1<<62, 16), 0, ErrTruncated, "extends past end of file"},
		{"data past end", tensorFile("blk.0.attn_q.weight", []uint64{64, 64}, 0, 0, 100), 0, ErrTruncated,
			`tensor "blk.0.attn_q.weight": data [96, 16480) extends past end of file (size 196)`},
		{"overlap", twoTensors(32), 0, nil, "overlap"},
		{"duplicate tensor", func() []byte {
			r := header(2, 0).str("a").u32(1).u64(4).u32(0).u64(0).str("a").u32(1).u64(4).u32(0).u64(32)
			return r.Bytes()
		}(), 0, nil, "duplicate tensor name"},
		{"truncated data", valid[:len(valid)-1], 0, ErrTruncated, "extends past end of file"},
		{"reader shorter than size", valid[:40], int64(len(valid)), ErrTruncated, "shorter than its size"},
		{"cut in header", valid[:40], 0, ErrTruncated, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := tt.size
			if size == 0 {
				size = int64(len(tt.data))
			}
			f, err := Read(bytes.NewReader(tt.data), size)
			if err == nil {
				t.Fatalf("Read succeeded: %+v", f)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error %q does not wrap %v", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "gguf: ") {
				t.Errorf("error %q does not start with gguf:", err)
			}
		})
	}
}

func TestReadAccepts(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		// Tensors laid out out of order, with gaps, and a zero-size tensor inside another's
		// extent: allowed, since no data overlaps.
		{"unordered", func() []byte {
			r := header(3, 0)
			r.str("late").u32(1).u64(8).u32(0).u64(64)
			r.str("early").u32(1).u64(8).u32(0).u64(0)
			r.str("zero").u32(2).u64(8).u64(0).u32(0).u64(64)
			for r.Len()%32 != 0 {
				r.WriteByte(0)
			}
			r.Write(make([]byte, 96))
			return r.Bytes()
		}()},
		{"alignment as uint8", func() []byte {
			r := header(1, 1).str("general.alignment").u32(uint32(valUint8)).bytes(8)
			r.str("t").u32(1).u64(2).u32(0).u64(8)
			for r.Len()%8 != 0 {
				r.WriteByte(0)
			}
			r.Write(make([]byte, 16))
			return r.Bytes()
		}()},
		{"vocab only, no padding", header(0, 1).str("k").u32(uint32(valUint8)).bytes(1).Bytes()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Read(bytes.NewReader(tt.data), int64(len(tt.data))); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// prefixReader serves only the first n bytes of b, as a browser slice of a large file would.
type prefixReader struct {
	b []byte
	n int
}

func (p prefixReader) ReadAt(dst []byte, off int64) (int, error) {
	return bytes.NewReader(p.b[:p.n]).ReadAt(dst, off)
}

func TestReadHeaderFromPrefix(t *testing.T) {
	tensors := []WriteTensor{{Name: "big", Dims: []uint64{1 << 16, 4}, Type: F32}}
	b := writeFile(t, &Writer{KV: []KV{{"general.architecture", "llama"}}, Tensors: tensors})
	full := readBytes(t, b)
	f, err := Read(prefixReader{b, int(full.DataOffset)}, int64(len(b)))
	if err != nil {
		t.Fatalf("Read of the header prefix: %v", err)
	}
	if got, _ := f.Tensor("big"); got.Bytes() != 1<<20 {
		t.Errorf("big: %d bytes", got.Bytes())
	}
	if _, err := f.TensorData("big"); err == nil || !strings.Contains(err.Error(), "use Open") {
		t.Errorf("TensorData on a File from Read: %v, want an error pointing at Open", err)
	}
}

func TestWriterRejects(t *testing.T) {
	tests := []struct {
		name string
		w    Writer
		msg  string
	}{
		{"duplicate key", Writer{KV: []KV{{"a", 1}, {"a", 2}}}, "duplicate key"},
		{"unsupported value", Writer{KV: []KV{{"a", struct{}{}}}}, "unsupported value type struct {}"},
		{"unsupported slice", Writer{KV: []KV{{"a", []complex64{1}}}}, "unsupported value type []complex64"},
		{"mixed array", Writer{KV: []KV{{"a", []any{uint8(1), "x"}}}}, "an array holds one type"},
		{"scalar among arrays", Writer{KV: []KV{{"a", []any{[]uint8{1}, uint8(2)}}}}, "is a scalar"},
		{"bad alignment", Writer{Alignment: 48}, "48 is not a power of two"},
		{"alignment mismatch", Writer{Alignment: 64, KV: []KV{{"general.alignment", uint32(32)}}}, "disagrees"},
		{"bad general.alignment", Writer{KV: []KV{{"general.alignment", "x"}}}, "general.alignment x"},
		{"version", Writer{Version: 1}, "cannot write version 1"},
		{"duplicate tensor", Writer{Tensors: []WriteTensor{{Name: "a", Dims: []uint64{1}}, {Name: "a", Dims: []uint64{1}}}}, "duplicate name"},
		{"bad type", Writer{Tensors: []WriteTensor{{Name: "a", Dims: []uint64{1}, Type: 5}}}, "unknown tensor type 5"},
		{"partial block", Writer{Tensors: []WriteTensor{{Name: "a", Dims: []uint64{16}, Type: Q4_0}}}, "not a multiple"},
		{"wrong data length", Writer{Tensors: []WriteTensor{{Name: "a", Dims: []uint64{4}, Type: F32, Data: make([]byte, 15)}}}, "15 bytes of data, want 16"},
		{"too many dims", Writer{Tensors: []WriteTensor{{Name: "a", Dims: []uint64{1, 1, 1, 1, 1}}}}, "5 dimensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := tt.w.WriteTo(&buf)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("WriteTo error %v, want one mentioning %q", err, tt.msg)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before failing", buf.Len())
			}
		})
	}
}

func TestWriteFunc(t *testing.T) {
	var buf bytes.Buffer
	tensors := []WriteTensor{{Name: "w", Dims: []uint64{32}, Type: Q8_0, Data: make([]byte, 34)}}
	if err := Write(&buf, []KV{{"general.alignment", uint32(128)}}, tensors, 0); err != nil {
		t.Fatal(err)
	}
	f := readBytes(t, buf.Bytes())
	if f.Alignment != 128 || f.DataOffset%128 != 0 {
		t.Errorf("Alignment %d, DataOffset %d", f.Alignment, f.DataOffset)
	}
	// ggml pads the data section to the alignment after every tensor.
	if len(buf.Bytes())%128 != 0 {
		t.Errorf("file size %d not padded to 128", buf.Len())
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want ErrNotExist", err)
	}
	if _, err := Open(dir); err == nil {
		t.Error("Open(directory) succeeded")
	}
	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(bad, []byte("not a gguf file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(bad)
	if !errors.Is(err, ErrNotGGUF) || !strings.Contains(err.Error(), bad) {
		t.Errorf("Open(bad) = %v, want ErrNotGGUF naming the path", err)
	}
}

// TestDataFallback checks that the in-memory path (used on js/wasm, windows, and when mmap
// fails) returns the same bytes as the mapping, and reports a short reader.
func TestDataFallback(t *testing.T) {
	b := writeFile(t, &Writer{Tensors: testTensors()})
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f := readBytes(t, b)
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	mapped, release, err := mapData(fd, f.DataOffset, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	read, _, err := readData(bytes.NewReader(b), f.DataOffset, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mapped, read) || !bytes.Equal(read, b[f.DataOffset:]) {
		t.Error("mapped and read tensor data differ")
	}
	if release != nil {
		if err := release(); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := readData(bytes.NewReader(b[:len(b)-1]), f.DataOffset, int64(len(b))); !errors.Is(err, ErrTruncated) {
		t.Errorf("short reader: %v, want ErrTruncated", err)
	}
}
