//go:build !amd64 || purego

package wkern

import "github.com/kvlab/kvlab/native/gguf"

// gemm512 and hasAVX512F are false: there is no AVX-512 micro-kernel.
var gemm512, hasAVX512F = false, false

func gemmMicro6p(ap *[gemmKC * gemmMR]float32, xp []float32, kc int, y []float32, ystride int, first bool) {
	microGo(ap, xp, kc, gemmNR, y, ystride, first)
}

func gemmMicro12p(ap *[gemmKC * gemmMR]float32, xp []float32, kc int, y []float32, ystride int, first bool) {
	microGo(ap, xp, kc, gemmNR512, y, ystride, first)
}

func gemmMicro12x2p(ap, ap2 *[gemmKC * gemmMR]float32, xp []float32, kc int, y []float32, ystride int, first bool) {
	microGo(ap, xp, kc, gemmNR512, y, ystride, first)
	microGo(ap2, xp, kc, gemmNR512, y[gemmMR:], ystride, first)
}

func packAsm(ap []float32, typ gguf.Type, w []byte, rowBytes, kc int) {
	panic("wkern: no assembly packer")
}

func prefetchRow(row []byte, off, n int) {}

var gemmH = false

func mulF16(y []float32, ystride int, w []byte, rowBytes int, xp []float32, n, cols, lo, hi int) {
	panic("wkern: no f16 AVX-512 path")
}
