package kvq

import "github.com/kvlab/kvlab/native/ggml"

// The half-precision conversions are native/ggml's (one table for the GGUF reader, the weight
// kernels and the KV codecs).

// F32ToF16 converts to IEEE 754 binary16 bits with round-to-nearest-even, as ggml's
// GGML_FP32_TO_FP16 does on hardware with F16C (ggml.F32ToF16).
func F32ToF16(f float32) uint16 { return ggml.F32ToF16(f) }

// F16ToF32 converts IEEE 754 binary16 bits to float32 exactly.
func F16ToF32(h uint16) float32 { return f16Table[h] }

// f16Table is ggml.HalfTable; the assembly kernels read it through this pointer.
var f16Table = ggml.HalfTable

// F16ToF32s writes F16ToF32 of each of the len(dst) binary16 values of src (2·len(dst) bytes,
// little-endian) into dst: f16 rows back to back (the f16 codec's rows) in one call, eight
// values at a time with F16C where the CPU has it. The values are F16ToF32's, and so the f16
// codec's Decode's, for every binary16 but a signalling NaN, which F32ToF16 never writes.
func F16ToF32s(dst []float32, src []byte) { f16ToF32Row(dst, src) }

// F32ToBF16 converts to bfloat16 bits with round-to-nearest-even (NaN stays NaN), as ggml does.
func F32ToBF16(f float32) uint16 { return ggml.F32ToBF16(f) }

// BF16ToF32 converts bfloat16 bits to float32 exactly.
func BF16ToF32(h uint16) float32 { return ggml.BF16ToF32(h) }
