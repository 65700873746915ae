//go:build amd64 && !purego

package kvq

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:generate go run gen_half.go

// hasF16C reports the F16C conversions (with AVX: every CPU the vector kernels run on).
var hasF16C = cpu.X86.HasF16C && cpu.X86.HasAVX

// f32ToF16Row writes the binary16 bits of src into dst (2·len(src) bytes, little-endian), as
// F32ToF16 does value by value: VCVTPS2PH with its immediate rounding (round to nearest even)
// gives the same bits for every float32 (overflow to ±Inf, subnormals, NaN quieted with the
// top ten mantissa bits kept), eight values at a time (half_amd64.s), the rest in Go.
func f32ToF16Row(dst []byte, src []float32) {
	n := len(src) &^ 7
	if hasF16C && n > 0 {
		_ = dst[2*len(src)-1]
		f32ToF16F16C((*uint16)(unsafe.Pointer(&dst[0])), &src[0], n)
	} else {
		n = 0
	}
	f32ToF16Go(dst[2*n:], src[n:])
}

//go:noescape
func f32ToF16F16C(dst *uint16, src *float32, n int)

// f16ToF32Row writes the float32 of every binary16 of src (2·len(dst) bytes, little-endian) into
// dst, as F16ToF32 does value by value, eight values at a time with VCVTPH2PS (half_amd64.s),
// the rest in Go. The conversion is exact, so the bits are F16ToF32's for every binary16 but a
// signalling NaN, which VCVTPH2PS returns quieted (the float32's top mantissa bit set, the
// payload kept); F32ToF16, and so the f16 codec's Encode, never writes one.
func f16ToF32Row(dst []float32, src []byte) {
	n := len(dst) &^ 7
	if hasF16C && n > 0 {
		_ = src[2*len(dst)-1]
		f16ToF32F16C(&dst[0], (*uint16)(unsafe.Pointer(&src[0])), n)
	} else {
		n = 0
	}
	f16ToF32Go(dst[n:], src[2*n:])
}

//go:noescape
func f16ToF32F16C(dst *float32, src *uint16, n int)
