//go:build amd64 && !purego

package wkern

import (
	"unsafe"

	"github.com/kvlab/kvlab/native/gguf"
)

// The GEMM's assembly (gemm_amd64.s): AVX2 + FMA micro-kernels and F16C/AVX2 packers.

//go:noescape
func gemmMicro6AVX2(ap, x unsafe.Pointer, xstride, kc int, y unsafe.Pointer, ystride int, first bool)

//go:noescape
func gemmMicro1AVX2(ap, x unsafe.Pointer, kc int, y unsafe.Pointer, first bool)

//go:noescape
func packF16x8AVX2(dst, src unsafe.Pointer, rowBytes, k8 int)

//go:noescape
func packF32x8AVX2(dst, src unsafe.Pointer, rowBytes, k8 int)

//go:noescape
func packBF16x8AVX2(dst, src unsafe.Pointer, rowBytes, k8 int)

//go:noescape
func packQ8_0x8AVX2(dst, src unsafe.Pointer, rowBytes, nblk int)

//go:noescape
func packQ4_0x8AVX2(dst, src unsafe.Pointer, rowBytes, nblk int)

// gemmMicro6 is the six-token micro-kernel; x must hold 5·xstride+kc values, y 5·ystride+16.
func gemmMicro6(ap *[gemmKC * gemmMR]float32, x []float32, xstride, kc int, y []float32, ystride int, first bool) {
	_ = x[5*xstride+kc-1]
	_ = y[5*ystride+gemmMR-1]
	gemmMicro6AVX2(unsafe.Pointer(ap), unsafe.Pointer(&x[0]), xstride, kc, unsafe.Pointer(&y[0]), ystride, first)
}

// gemmMicro1 is the one-token micro-kernel; x must hold kc values, y 16.
func gemmMicro1(ap *[gemmKC * gemmMR]float32, x []float32, kc int, y []float32, first bool) {
	_ = x[kc-1]
	_ = y[gemmMR-1]
	gemmMicro1AVX2(unsafe.Pointer(ap), unsafe.Pointer(&x[0]), kc, unsafe.Pointer(&y[0]), first)
}

// packAsm packs columns 0 … kc−1 of the 16 rows at w (row i at w[i·rowBytes:]): kc a positive
// multiple of 8 for the float types, of 32 for the block types.
func packAsm(ap []float32, typ gguf.Type, w []byte, rowBytes, kc int) {
	var f func(dst, src unsafe.Pointer, rowBytes, n int)
	n, span := kc, 2*kc
	switch typ {
	case gguf.F16:
		f = packF16x8AVX2
	case gguf.F32:
		f, span = packF32x8AVX2, 4*kc
	case gguf.BF16:
		f = packBF16x8AVX2
	case gguf.Q8_0:
		f, n, span = packQ8_0x8AVX2, kc/32, kc/32*34
	case gguf.Q4_0:
		f, n, span = packQ4_0x8AVX2, kc/32, kc/32*18
	}
	_ = ap[kc*gemmMR-1]
	_ = w[15*rowBytes+span-1]
	src := unsafe.Pointer(&w[0])
	f(unsafe.Pointer(&ap[0]), src, rowBytes, n)
	f(unsafe.Pointer(&ap[8]), unsafe.Add(src, 8*rowBytes), rowBytes, n)
}
