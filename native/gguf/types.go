package gguf

import (
	"strconv"

	"github.com/kvlab/kvlab/native/ggml"
)

// Type is a ggml tensor type id as stored in a GGUF tensor info: native/ggml's, whose one table
// gives every type's block size, bytes and conversion to float (shared with native/model's
// kernels and native/kvq's block codecs).
type Type = ggml.Type

// The ggml tensor types.
const (
	F32     = ggml.F32
	F16     = ggml.F16
	Q4_0    = ggml.Q4_0
	Q4_1    = ggml.Q4_1
	Q5_0    = ggml.Q5_0
	Q5_1    = ggml.Q5_1
	Q8_0    = ggml.Q8_0
	Q8_1    = ggml.Q8_1
	Q2_K    = ggml.Q2_K
	Q3_K    = ggml.Q3_K
	Q4_K    = ggml.Q4_K
	Q5_K    = ggml.Q5_K
	Q6_K    = ggml.Q6_K
	Q8_K    = ggml.Q8_K
	IQ2_XXS = ggml.IQ2_XXS
	IQ2_XS  = ggml.IQ2_XS
	IQ3_XXS = ggml.IQ3_XXS
	IQ1_S   = ggml.IQ1_S
	IQ4_NL  = ggml.IQ4_NL
	IQ3_S   = ggml.IQ3_S
	IQ2_S   = ggml.IQ2_S
	IQ4_XS  = ggml.IQ4_XS
	I8      = ggml.I8
	I16     = ggml.I16
	I32     = ggml.I32
	I64     = ggml.I64
	F64     = ggml.F64
	IQ1_M   = ggml.IQ1_M
	BF16    = ggml.BF16
	TQ1_0   = ggml.TQ1_0
	TQ2_0   = ggml.TQ2_0
	MXFP4   = ggml.MXFP4
	NVFP4   = ggml.NVFP4
	Q1_0    = ggml.Q1_0
)

// qkK is the number of values in a K-quant super-block (Q2_K … Q8_K and most IQ types).
const qkK = 256

// ParseType returns the type whose String is name (case-sensitive, ggml's spelling).
func ParseType(name string) (Type, bool) { return ggml.ParseType(name) }

// valueType is the type tag of a GGUF metadata value (gguf.h, enum gguf_type).
type valueType uint32

const (
	valUint8   valueType = 0
	valInt8    valueType = 1
	valUint16  valueType = 2
	valInt16   valueType = 3
	valUint32  valueType = 4
	valInt32   valueType = 5
	valFloat32 valueType = 6
	valBool    valueType = 7
	valString  valueType = 8
	valArray   valueType = 9
	valUint64  valueType = 10
	valInt64   valueType = 11
	valFloat64 valueType = 12
)

var valueTypeNames = [...]string{
	valUint8: "uint8", valInt8: "int8", valUint16: "uint16", valInt16: "int16",
	valUint32: "uint32", valInt32: "int32", valFloat32: "float32", valBool: "bool",
	valString: "string", valArray: "array", valUint64: "uint64", valInt64: "int64",
	valFloat64: "float64",
}

func (v valueType) String() string {
	if uint64(v) < uint64(len(valueTypeNames)) {
		return valueTypeNames[v]
	}
	return "value type " + strconv.FormatUint(uint64(v), 10)
}

// fixedSize returns the encoded size of a scalar of type v, 0 for string and array, and -1 for
// an unknown type.
func (v valueType) fixedSize() int {
	switch v {
	case valUint8, valInt8, valBool:
		return 1
	case valUint16, valInt16:
		return 2
	case valUint32, valInt32, valFloat32:
		return 4
	case valUint64, valInt64, valFloat64:
		return 8
	case valString, valArray:
		return 0
	}
	return -1
}
