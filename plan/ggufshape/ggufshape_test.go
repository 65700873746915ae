package ggufshape

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/plan/calc"
)

// fixture writes a GGUF file with the given metadata (general.architecture first) and tensors.
func fixture(t testing.TB, arch string, kv []gguf.KV, tensors []gguf.WriteTensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	all := append([]gguf.KV{{Key: "general.architecture", Value: arch}}, kv...)
	if err := gguf.Write(&buf, all, tensors, 0); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func read(t *testing.T, b []byte) (calc.Shape, error) {
	t.Helper()
	return Read(bytes.NewReader(b), int64(len(b)))
}

func TestShapes(t *testing.T) {
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	tensors := []gguf.WriteTensor{
		{Name: "token_embd.weight", Dims: []uint64{64, 10}, Type: gguf.F16},
		{Name: "blk.0.ffn_up_exps.weight", Dims: []uint64{64, 8, 4}, Type: gguf.Q8_0},
	}
	for _, tc := range []struct {
		name    string
		arch    string
		kv      []gguf.KV
		groups  []calc.LayerGroup
		class   calc.Class
		kibTok  float64 // f16 growth per token
		context int64
	}{
		{
			name: "llama full attention", arch: "llama",
			kv: []gguf.KV{{Key: "llama.block_count", Value: uint32(32)}, {Key: "llama.embedding_length", Value: uint32(4096)},
				{Key: "llama.attention.head_count", Value: uint32(32)}, {Key: "llama.attention.head_count_kv", Value: uint32(8)},
				{Key: "llama.context_length", Value: uint32(131072)}},
			groups: []calc.LayerGroup{{Count: 32, Kind: calc.Full, KVHeads: 8, HeadDimK: 128, HeadDimV: 128}},
			class:  calc.ClassFull, kibTok: 128, context: 131072,
		},
		{
			name: "gemma3 fixed pattern", arch: "gemma3",
			kv: []gguf.KV{{Key: "gemma3.block_count", Value: uint32(12)}, {Key: "gemma3.attention.head_count", Value: uint32(8)},
				{Key: "gemma3.attention.head_count_kv", Value: uint32(4)}, {Key: "gemma3.attention.key_length", Value: uint32(256)},
				{Key: "gemma3.attention.value_length", Value: uint32(256)}, {Key: "gemma3.attention.sliding_window", Value: uint32(1024)}},
			groups: []calc.LayerGroup{
				{Count: 10, Kind: calc.Sliding, KVHeads: 4, HeadDimK: 256, HeadDimV: 256, Window: 1024},
				{Count: 2, Kind: calc.Full, KVHeads: 4, HeadDimK: 256, HeadDimV: 256},
			},
			class: calc.ClassSliding, kibTok: 8,
		},
		{
			name: "gemma3 without a window", arch: "gemma3",
			kv: []gguf.KV{{Key: "gemma3.block_count", Value: uint32(12)}, {Key: "gemma3.attention.head_count", Value: uint32(8)},
				{Key: "gemma3.attention.head_count_kv", Value: uint32(4)}, {Key: "gemma3.attention.key_length", Value: uint32(256)},
				{Key: "gemma3.attention.value_length", Value: uint32(256)}},
			groups: []calc.LayerGroup{{Count: 12, Kind: calc.Full, KVHeads: 4, HeadDimK: 256, HeadDimV: 256}},
			class:  calc.ClassFull, kibTok: 48,
		},
		{
			name: "gemma4 per-layer arrays", arch: "gemma4",
			kv: []gguf.KV{{Key: "gemma4.block_count", Value: uint32(6)}, {Key: "gemma4.attention.head_count", Value: uint32(16)},
				{Key: "gemma4.attention.head_count_kv", Value: []int32{8, 8, 8, 8, 8, 2}},
				{Key: "gemma4.attention.sliding_window_pattern", Value: []bool{true, true, true, true, true, false}},
				{Key: "gemma4.attention.key_length", Value: uint32(512)}, {Key: "gemma4.attention.value_length", Value: uint32(512)},
				{Key: "gemma4.attention.key_length_swa", Value: uint32(256)}, {Key: "gemma4.attention.value_length_swa", Value: uint32(256)},
				{Key: "gemma4.attention.sliding_window", Value: uint32(1024)}},
			groups: []calc.LayerGroup{
				{Count: 5, Kind: calc.Sliding, KVHeads: 8, HeadDimK: 256, HeadDimV: 256, Window: 1024},
				{Count: 1, Kind: calc.Full, KVHeads: 2, HeadDimK: 512, HeadDimV: 512},
			},
			class: calc.ClassSliding, kibTok: 4,
		},
		{
			name: "qwen3.5 hybrid", arch: "qwen35moe",
			kv: []gguf.KV{{Key: "qwen35moe.block_count", Value: uint32(8)}, {Key: "qwen35moe.attention.head_count", Value: uint32(16)},
				{Key: "qwen35moe.attention.head_count_kv", Value: uint32(2)}, {Key: "qwen35moe.attention.key_length", Value: uint32(256)},
				{Key: "qwen35moe.full_attention_interval", Value: uint32(4)},
				{Key: "qwen35moe.ssm.conv_kernel", Value: uint32(4)}, {Key: "qwen35moe.ssm.inner_size", Value: uint32(4096)},
				{Key: "qwen35moe.ssm.state_size", Value: uint32(128)}, {Key: "qwen35moe.ssm.group_count", Value: uint32(16)},
				{Key: "qwen35moe.expert_count", Value: uint32(4)}, {Key: "qwen35moe.expert_used_count", Value: uint32(1)}},
			groups: []calc.LayerGroup{
				// (4−1)·(4096 + 2·16·128) + 128·4096 f32 values: the preset's DeltaNet state.
				{Count: 6, Kind: calc.Recurrent, StateBytes: 4 * (3*(4096+2*16*128) + 128*4096)},
				{Count: 2, Kind: calc.Full, KVHeads: 2, HeadDimK: 256, HeadDimV: 256},
			},
			class: calc.ClassHybrid, kibTok: 4,
		},
		{
			// No full_attention_interval: llama.cpp's qwen35 loader takes every fourth layer as
			// full attention.
			name: "qwen3.5 default interval", arch: "qwen35",
			kv: []gguf.KV{{Key: "qwen35.block_count", Value: uint32(8)}, {Key: "qwen35.attention.head_count", Value: uint32(16)},
				{Key: "qwen35.attention.head_count_kv", Value: uint32(2)}, {Key: "qwen35.attention.key_length", Value: uint32(256)},
				{Key: "qwen35.ssm.conv_kernel", Value: uint32(4)}, {Key: "qwen35.ssm.inner_size", Value: uint32(4096)},
				{Key: "qwen35.ssm.state_size", Value: uint32(128)}, {Key: "qwen35.ssm.group_count", Value: uint32(16)}},
			groups: []calc.LayerGroup{
				{Count: 6, Kind: calc.Recurrent, StateBytes: 4 * (3*(4096+2*16*128) + 128*4096)},
				{Count: 2, Kind: calc.Full, KVHeads: 2, HeadDimK: 256, HeadDimV: 256},
			},
			class: calc.ClassHybrid, kibTok: 4,
		},
		{
			// Two multi-token-prediction blocks after 8 trunk layers: llama.cpp gives them no
			// KV and no state (its trunk filter), so they are not planned.
			name: "qwen3.5 nextn", arch: "qwen35",
			kv: []gguf.KV{{Key: "qwen35.block_count", Value: uint32(10)}, {Key: "qwen35.nextn_predict_layers", Value: uint32(2)},
				{Key: "qwen35.attention.head_count", Value: uint32(16)},
				{Key: "qwen35.attention.head_count_kv", Value: uint32(2)}, {Key: "qwen35.attention.key_length", Value: uint32(256)},
				{Key: "qwen35.full_attention_interval", Value: uint32(4)},
				{Key: "qwen35.ssm.conv_kernel", Value: uint32(4)}, {Key: "qwen35.ssm.inner_size", Value: uint32(4096)},
				{Key: "qwen35.ssm.state_size", Value: uint32(128)}, {Key: "qwen35.ssm.group_count", Value: uint32(16)}},
			groups: []calc.LayerGroup{
				{Count: 6, Kind: calc.Recurrent, StateBytes: 4 * (3*(4096+2*16*128) + 128*4096)},
				{Count: 2, Kind: calc.Full, KVHeads: 2, HeadDimK: 256, HeadDimV: 256},
			},
			class: calc.ClassHybrid, kibTok: 4,
		},
		{
			// attention.recurrent_layers, one bool per layer, decides over the interval.
			name: "qwen3.5 recurrent_layers", arch: "qwen35",
			kv: []gguf.KV{{Key: "qwen35.block_count", Value: uint32(4)}, {Key: "qwen35.attention.head_count", Value: uint32(16)},
				{Key: "qwen35.attention.head_count_kv", Value: uint32(2)}, {Key: "qwen35.attention.key_length", Value: uint32(256)},
				{Key: "qwen35.full_attention_interval", Value: uint32(4)},
				{Key: "qwen35.attention.recurrent_layers", Value: []bool{true, false, true, false}},
				{Key: "qwen35.ssm.conv_kernel", Value: uint32(4)}, {Key: "qwen35.ssm.inner_size", Value: uint32(4096)},
				{Key: "qwen35.ssm.state_size", Value: uint32(128)}, {Key: "qwen35.ssm.group_count", Value: uint32(16)}},
			groups: []calc.LayerGroup{
				{Count: 2, Kind: calc.Recurrent, StateBytes: 4 * (3*(4096+2*16*128) + 128*4096)},
				{Count: 2, Kind: calc.Full, KVHeads: 2, HeadDimK: 256, HeadDimV: 256},
			},
			class: calc.ClassHybrid, kibTok: 4,
		},
		{
			name: "deepseek2 latent", arch: "deepseek2",
			kv: []gguf.KV{{Key: "deepseek2.block_count", Value: uint32(27)}, {Key: "deepseek2.attention.head_count", Value: uint32(16)},
				{Key: "deepseek2.attention.kv_lora_rank", Value: uint32(512)}, {Key: "deepseek2.rope.dimension_count", Value: uint32(64)}},
			groups: []calc.LayerGroup{{Count: 27, Kind: calc.Latent, LatentDim: 576}},
			class:  calc.ClassLatent, kibTok: 27 * 576 * 2 / 1024.0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := read(t, fixture(t, tc.arch, tc.kv, tensors))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Groups) != len(tc.groups) {
				t.Fatalf("groups %+v, want %+v", s.Groups, tc.groups)
			}
			for i := range tc.groups {
				if s.Groups[i] != tc.groups[i] {
					t.Errorf("group %d: %+v, want %+v", i, s.Groups[i], tc.groups[i])
				}
			}
			if s.Class() != tc.class {
				t.Errorf("class %v, want %v", s.Class(), tc.class)
			}
			if got := calc.ToKiB(s.BytesPerToken(f16, 1)); got != tc.kibTok {
				t.Errorf("f16 growth %g KiB/token, want %g", got, tc.kibTok)
			}
			if s.NativeContext != tc.context {
				t.Errorf("context %d, want %d", s.NativeContext, tc.context)
			}
			// Weights: 640 f16 values + 2048 q8_0 values (64 blocks of 34 bytes).
			if s.WeightBytes != 640*2+64*34 {
				t.Errorf("weights %d bytes", s.WeightBytes)
			}
			if tc.arch == "qwen35moe" && s.ActiveWeightBytes != 640*2+64*34/4 {
				t.Errorf("active weights %d bytes, want the expert tensor at 1/4", s.ActiveWeightBytes)
			}
		})
	}
}

func TestBadFiles(t *testing.T) {
	good := fixture(t, "llama", []gguf.KV{{Key: "llama.block_count", Value: uint32(2)},
		{Key: "llama.attention.head_count", Value: uint32(4)}, {Key: "llama.embedding_length", Value: uint32(256)}}, nil)
	if _, err := read(t, good); err != nil {
		t.Fatalf("good fixture: %v", err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		is   error
		says string
	}{
		{"not gguf", []byte("PK\x03\x04 this is a zip file, not a model"), gguf.ErrNotGGUF, "not a GGUF"},
		{"empty", nil, nil, ""},
		{"truncated", good[:len(good)/2], gguf.ErrTruncated, "truncated"},
		{"no block count", fixture(t, "llama", []gguf.KV{{Key: "llama.attention.head_count", Value: uint32(4)}}, nil), ErrUnsupported, "block_count"},
		{"no heads", fixture(t, "llama", []gguf.KV{{Key: "llama.block_count", Value: uint32(2)}}, nil), ErrUnsupported, "head_count"},
		{"array length", fixture(t, "llama", []gguf.KV{{Key: "llama.block_count", Value: uint32(2)},
			{Key: "llama.attention.head_count_kv", Value: []int32{1, 2, 3}}, {Key: "llama.attention.key_length", Value: uint32(64)}}, nil), ErrUnsupported, "3 values for 2 layers"},
		{"no head dim", fixture(t, "llama", []gguf.KV{{Key: "llama.block_count", Value: uint32(2)},
			{Key: "llama.attention.head_count_kv", Value: uint32(2)}}, nil), ErrUnsupported, "head dimension"},
		{"sliding without window", fixture(t, "cohere2", []gguf.KV{{Key: "cohere2.block_count", Value: uint32(6)},
			{Key: "cohere2.attention.head_count", Value: uint32(4)}, {Key: "cohere2.attention.key_length", Value: uint32(64)}}, nil), ErrUnsupported, "sliding_window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(t, tc.data)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
}

// TestPrefix reads the header from a reader that serves only the header bytes, as the page does
// with a dropped file's first slices.
func TestPrefix(t *testing.T) {
	b := fixture(t, "llama", []gguf.KV{{Key: "llama.block_count", Value: uint32(2)},
		{Key: "llama.attention.head_count", Value: uint32(4)}, {Key: "llama.embedding_length", Value: uint32(256)}},
		[]gguf.WriteTensor{{Name: "w", Dims: []uint64{32, 1 << 12}, Type: gguf.Q8_0}})
	f, err := gguf.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	prefix := b[:f.DataOffset]
	s, err := Read(bytes.NewReader(prefix), int64(len(b)))
	if err != nil {
		t.Fatalf("header-only read: %v", err)
	}
	if s.WeightBytes != 4096*34 {
		t.Errorf("weights %d", s.WeightBytes)
	}
}

func FuzzRead(f *testing.F) {
	f.Add(fixture(f, "llama", []gguf.KV{{Key: "llama.block_count", Value: uint32(2)},
		{Key: "llama.attention.head_count", Value: uint32(4)}, {Key: "llama.embedding_length", Value: uint32(256)}}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Read(bytes.NewReader(b), int64(len(b)))
		if err == nil {
			if verr := s.Validate(); verr != nil {
				t.Fatalf("accepted an invalid shape: %v", verr)
			}
		}
	})
}
