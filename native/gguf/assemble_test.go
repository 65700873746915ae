package gguf

import (
	"strings"
	"testing"
)

func TestAssemble(t *testing.T) {
	data := make([]byte, 4*6)
	data[4] = 1
	f, err := Assemble([]KV{{"general.architecture", "llama"}, {"llama.block_count", 2}, {"ids", []int{1, 2}}},
		[]Tensor{{TensorInfo{Name: "w", Dims: []uint64{3, 2}, Type: F32}, data}}, 123, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Architecture() != "llama" || f.Size() != 123 {
		t.Fatalf("arch %q size %d", f.Architecture(), f.Size())
	}
	if n, ok := f.Uint("llama.block_count"); !ok || n != 2 {
		t.Errorf("block_count %d %v", n, ok)
	}
	if ids, ok := f.Int32s("ids"); !ok || len(ids) != 2 || ids[1] != 2 {
		t.Errorf("ids %v %v", ids, ok)
	}
	got, err := f.TensorData("w")
	if err != nil || len(got) != 24 || got[4] != 1 {
		t.Fatalf("data %v %v", got, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.TensorData("w"); err == nil {
		t.Error("data after Close")
	}

	for _, tc := range []struct {
		kv  []KV
		ts  []Tensor
		err string
	}{
		{kv: []KV{{"a", 1}, {"a", 2}}, err: "duplicate metadata"},
		{kv: []KV{{"a", struct{}{}}}, err: "unsupported value"},
		{ts: []Tensor{{TensorInfo{Name: "w", Dims: []uint64{3}, Type: F32}, data}}, err: "bytes of data"},
		{ts: []Tensor{{TensorInfo{Name: "w", Dims: []uint64{}, Type: F32}, data}}, err: "dims"},
		{ts: []Tensor{{TensorInfo{Name: "w", Dims: []uint64{6, 0}, Type: F32}, data}}, err: "empty"},
		{ts: []Tensor{{TensorInfo{Name: "w", Dims: []uint64{6}, Type: Q4_0}, data}}, err: "cannot hold"},
		{ts: []Tensor{{TensorInfo{Name: "w", Dims: []uint64{6}, Type: F32}, data}, {TensorInfo{Name: "w", Dims: []uint64{6}, Type: F32}, data}}, err: "duplicate tensor"},
	} {
		if _, err := Assemble(tc.kv, tc.ts, 0, nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v %v: error %v, want %q", tc.kv, tc.ts, err, tc.err)
		}
	}
}
