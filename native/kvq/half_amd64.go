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
