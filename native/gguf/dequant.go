package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/ggml"
)

// DequantizeRow converts len(dst) values of type t from src to float32. len(dst) must be a
// multiple of t.BlockSize() and len(src) must be exactly t.RowBytes(len(dst)); any number of
// whole blocks may be converted at once (a row, several rows, a whole tensor).
//
// The supported types are F32, F16, BF16, F64, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, Q8_K and IQ4_NL (see Type.CanConvert); others return ErrUnsupportedType. Each
// value is computed as ggml's reference C code (dequantize_row_* in ggml-quants.c) computes it,
// in float32 with every multiply and add rounded separately (no fused multiply-add): the
// results are bit-identical to that code compiled without floating-point contraction.
func DequantizeRow(t Type, src []byte, dst []float32) error {
	if !t.CanConvert() {
		return fmt.Errorf("gguf: dequantize %s: %w", t, ErrUnsupportedType)
	}
	bs := t.BlockSize()
	if len(dst)%bs != 0 {
		return fmt.Errorf("gguf: dequantize %s: %d values is not a multiple of the block size %d", t, len(dst), bs)
	}
	if want := t.RowBytes(uint64(len(dst))); uint64(len(src)) != want {
		return fmt.Errorf("gguf: dequantize %s: %d source bytes for %d values, want %d", t, len(src), len(dst), want)
	}
	le := binary.LittleEndian
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = halfToFloat(le.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(le.Uint16(src[2*i:])) << 16)
		}
	case F64:
		for i := range dst {
			dst[i] = float32(math.Float64frombits(le.Uint64(src[8*i:])))
		}
	default:
		dequantBlocks(t, src, dst)
	}
	return nil
}

// dequantBlocks converts whole blocks through native/ggml's table; DequantizeRow has checked
// the lengths.
func dequantBlocks(t Type, src []byte, dst []float32) {
	bs, ts := t.BlockSize(), t.TypeSize()
	for i := range len(dst) / bs {
		t.ToFloat(src[i*ts:(i+1)*ts:(i+1)*ts], dst[i*bs:(i+1)*bs:(i+1)*bs])
	}
}

// halfToFloat converts IEEE 754 binary16 bits to float32 exactly, through the one conversion
// table the engine shares (native/ggml).
func halfToFloat(h uint16) float32 { return ggml.HalfTable[h] }
