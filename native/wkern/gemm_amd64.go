//go:build amd64 && !purego

package wkern

import (
	"unsafe"

	"github.com/kvlab/kvlab/native/gguf"
	"golang.org/x/sys/cpu"
)

// The GEMM's assembly (gemm_amd64.s): AVX2 + FMA micro-kernels and F16C/AVX2 packers.

//go:noescape
func gemmMicro6pAVX2(ap, xp unsafe.Pointer, kc int, y unsafe.Pointer, ystride int, first bool)

//go:noescape
func gemmMicro12pAVX512(ap, xp unsafe.Pointer, kc int, y unsafe.Pointer, ystride int, first bool)

//go:noescape
func gemmMicro12x2pAVX512(ap, ap2, xp unsafe.Pointer, kc int, y unsafe.Pointer, ystride int, first bool)

// hasAVX512F reports AVX-512F beside the AVX2 set.
var hasAVX512F = hasAVX2 && cpu.X86.HasAVX512F

// gemm512 selects the AVX-512 micro-kernel (gemmp_amd64.s) on CPUs with AVX-512F, Intel and
// AMD alike (see gemm.go), unless KVLAB_NO_AVX512 asks for the AVX2 one.
var gemm512 = hasAVX512F && !noVNNI()

//go:noescape
func prefetchLines(p unsafe.Pointer, n int)

// prefetchRow asks for the bytes row[off : off+n] (n > 0) to be brought into the cache.
func prefetchRow(row []byte, off, n int) {
	_ = row[off+n-1]
	prefetchLines(unsafe.Pointer(&row[off]), (n+63)/64)
}

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

// gemmMicro6p is the six-token AVX2 micro-kernel; xp must hold 6·kc values, y 5·ystride+16.
func gemmMicro6p(ap *[gemmKC * gemmMR]float32, xp []float32, kc int, y []float32, ystride int, first bool) {
	_ = xp[6*kc-1]
	_ = y[5*ystride+gemmMR-1]
	gemmMicro6pAVX2(unsafe.Pointer(ap), unsafe.Pointer(&xp[0]), kc, unsafe.Pointer(&y[0]), ystride, first)
}

// gemmMicro12p is the twelve-token AVX-512 micro-kernel; xp must hold 12·kc values, y
// 11·ystride+16.
func gemmMicro12p(ap *[gemmKC * gemmMR]float32, xp []float32, kc int, y []float32, ystride int, first bool) {
	_ = xp[12*kc-1]
	_ = y[11*ystride+gemmMR-1]
	gemmMicro12pAVX512(unsafe.Pointer(ap), unsafe.Pointer(&xp[0]), kc, unsafe.Pointer(&y[0]), ystride, first)
}

// gemmMicro12x2p is gemmMicro12p on two slivers at once, ap's rows at y[i] and ap2's at
// y[gemmMR+i]; xp must hold 12·kc values, y 11·ystride+2·gemmMR.
func gemmMicro12x2p(ap, ap2 *[gemmKC * gemmMR]float32, xp []float32, kc int, y []float32, ystride int, first bool) {
	_ = xp[12*kc-1]
	_ = y[11*ystride+2*gemmMR-1]
	gemmMicro12x2pAVX512(unsafe.Pointer(ap), unsafe.Pointer(ap2), unsafe.Pointer(&xp[0]), kc, unsafe.Pointer(&y[0]), ystride, first)
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
