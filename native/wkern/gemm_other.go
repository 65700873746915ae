//go:build !amd64 || purego

package wkern

import "github.com/kvlab/kvlab/native/gguf"

func gemmMicro6(ap *[gemmKC * gemmMR]float32, x []float32, xstride, kc int, y []float32, ystride int, first bool) {
	microGo(ap, x, xstride, kc, gemmNR, y, ystride, first)
}

func gemmMicro1(ap *[gemmKC * gemmMR]float32, x []float32, kc int, y []float32, first bool) {
	microGo(ap, x, 0, kc, 1, y, 0, first)
}

func packAsm(ap []float32, typ gguf.Type, w []byte, rowBytes, kc int) {
	panic("wkern: no assembly packer")
}
