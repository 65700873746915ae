// Package ggml is the one table of ggml's tensor types: for every type its name, block size
// (values), block bytes and, for the types the engine reads, the reference conversion of a
// block to float32 (ToFloat, bit-identical to ggml's dequantize_row_*), plus the binary16
// conversions. The GGUF reader (native/gguf), the weight kernels (native/model, native/wkern)
// and the KV block codecs (native/kvq) all take their block layouts from it. It imports
// nothing of kvlab and builds everywhere, js/wasm included.
package ggml

import "strconv"

// Type is a ggml tensor type id as stored in a GGUF tensor info. The ids are ggml's
// (ggml.h, enum ggml_type); ids that ggml retired (4, 5, 31–33, 36–38) are not valid types.
type Type uint32

// The ggml tensor types.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
	NVFP4   Type = 40
	Q1_0    Type = 41
)

// qkK is the number of values in a K-quant super-block (Q2_K … Q8_K and most IQ types).
const qkK = 256

type typeTraits struct {
	name      string
	blockSize int // values per block
	typeSize  int // bytes per block
}

// typeTable holds ggml's block size and type size for every valid type (ggml-common.h,
// gguf-py GGML_QUANT_SIZES). A zero blockSize marks an id that is not a valid type.
var typeTable = [...]typeTraits{
	F32:     {"f32", 1, 4},
	F16:     {"f16", 1, 2},
	Q4_0:    {"q4_0", 32, 2 + 16},
	Q4_1:    {"q4_1", 32, 2 + 2 + 16},
	Q5_0:    {"q5_0", 32, 2 + 4 + 16},
	Q5_1:    {"q5_1", 32, 2 + 2 + 4 + 16},
	Q8_0:    {"q8_0", 32, 2 + 32},
	Q8_1:    {"q8_1", 32, 4 + 32},
	Q2_K:    {"q2_K", qkK, qkK/16 + qkK/4 + 2 + 2},
	Q3_K:    {"q3_K", qkK, qkK/8 + qkK/4 + 12 + 2},
	Q4_K:    {"q4_K", qkK, 2 + 2 + 12 + qkK/2},
	Q5_K:    {"q5_K", qkK, 2 + 2 + 12 + qkK/8 + qkK/2},
	Q6_K:    {"q6_K", qkK, qkK/2 + qkK/4 + qkK/16 + 2},
	Q8_K:    {"q8_K", qkK, 4 + qkK + qkK/16*2},
	IQ2_XXS: {"iq2_xxs", qkK, 2 + qkK/4},
	IQ2_XS:  {"iq2_xs", qkK, 2 + qkK/4 + qkK/32},
	IQ3_XXS: {"iq3_xxs", qkK, 2 + qkK/4 + qkK/8},
	IQ1_S:   {"iq1_s", qkK, 2 + qkK/8 + qkK/16},
	IQ4_NL:  {"iq4_nl", 32, 2 + 16},
	IQ3_S:   {"iq3_s", qkK, 2 + qkK/4 + qkK/8 + qkK/32 + 4},
	IQ2_S:   {"iq2_s", qkK, 2 + qkK/4 + qkK/16},
	IQ4_XS:  {"iq4_xs", qkK, 2 + 2 + qkK/2 + qkK/64},
	I8:      {"i8", 1, 1},
	I16:     {"i16", 1, 2},
	I32:     {"i32", 1, 4},
	I64:     {"i64", 1, 8},
	F64:     {"f64", 1, 8},
	IQ1_M:   {"iq1_m", qkK, qkK/8 + qkK/16 + qkK/32},
	BF16:    {"bf16", 1, 2},
	TQ1_0:   {"tq1_0", qkK, 2 + 4*13},
	TQ2_0:   {"tq2_0", qkK, 2 + 64},
	MXFP4:   {"mxfp4", 32, 1 + 16},
	NVFP4:   {"nvfp4", 64, 4 + 32},
	Q1_0:    {"q1_0", 128, 2 + 16},
}

func (t Type) traits() typeTraits {
	if uint64(t) < uint64(len(typeTable)) {
		return typeTable[t]
	}
	return typeTraits{}
}

// Valid reports whether t is a tensor type this package knows the block layout of.
func (t Type) Valid() bool { return t.traits().blockSize != 0 }

// String returns ggml's name for the type ("f32", "q8_0", "q4_K", …), or "type(N)" for an id
// that is not a valid type.
func (t Type) String() string {
	if tr := t.traits(); tr.blockSize != 0 {
		return tr.name
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// BlockSize returns the number of values in one block of the type (1 for the plain float and
// integer types, 32 for Q8_0, 256 for the K-quants), or 0 for an invalid type.
func (t Type) BlockSize() int { return t.traits().blockSize }

// TypeSize returns the number of bytes in one block of the type, or 0 for an invalid type.
func (t Type) TypeSize() int { return t.traits().typeSize }

// RowBytes returns the bytes that n consecutive values of the type occupy:
// TypeSize × n / BlockSize. It returns 0 for an invalid type, for n that is not a multiple of
// BlockSize, and when the result does not fit in a uint64.
func (t Type) RowBytes(n uint64) uint64 {
	tr := t.traits()
	if tr.blockSize == 0 || n%uint64(tr.blockSize) != 0 {
		return 0
	}
	blocks := n / uint64(tr.blockSize)
	if blocks > ^uint64(0)/uint64(tr.typeSize) {
		return 0
	}
	return blocks * uint64(tr.typeSize)
}

// ParseType returns the type whose String is name (case-sensitive, ggml's spelling).
func ParseType(name string) (Type, bool) {
	for i, tr := range typeTable {
		if tr.blockSize != 0 && tr.name == name {
			return Type(i), true
		}
	}
	return 0, false
}
