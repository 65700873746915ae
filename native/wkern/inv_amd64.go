//go:build amd64 && !purego

package wkern

import (
	"unsafe"

	"github.com/kvlab/kvlab/native/gguf"
)

//go:noescape
func dotQ8_0x1AVX2(w, q, d unsafe.Pointer, nb, qstride, dstride int, out *[4]float32)

//go:noescape
func dotQ4_0x1AVX2(w, q, d unsafe.Pointer, nb, qstride, dstride int, out *[4]float32)

//go:noescape
func dotQ4_Kx1AVX2(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32)

//go:noescape
func dotQ6_Kx1AVX2(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32)

// dot1Q8 runs a legacy one-token kernel (dot4_amd64.s) on token t.
func dot1Q8(f func(w, q, d unsafe.Pointer, nb, qstride, dstride int, out *[4]float32), bsz int) rowDot4 {
	return func(row []byte, a *Act, t int, out *[4]float32) {
		nb := a.Cols / 32
		_ = row[nb*bsz-1]
		_ = a.Q[(t+1)*a.Cols-1]
		_ = a.D[(t+1)*nb-1]
		f(unsafe.Pointer(&row[0]), unsafe.Pointer(&a.Q[t*a.Cols]), unsafe.Pointer(&a.D[t*nb]), nb, 0, 0, out)
	}
}

// dot1Q8K runs a K-quant one-token kernel (dot4_amd64.s) on token t.
func dot1Q8K(f func(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32), bsz int) rowDot4 {
	return func(row []byte, a *Act, t int, out *[4]float32) {
		nb := a.Cols / 256
		_ = row[nb*bsz-1]
		_ = a.Q[(t+1)*a.Cols-1]
		_ = a.D[(t+1)*nb-1]
		_ = a.BS[(t+1)*a.Cols/16-1]
		f(unsafe.Pointer(&row[0]), unsafe.Pointer(&a.Q[t*a.Cols]), unsafe.Pointer(&a.D[t*nb]), unsafe.Pointer(&a.BS[t*a.Cols/16]),
			nb, 0, 0, 0, out)
	}
}

// asmInvDots are the one-token partners of asmDots4.
var asmInvDots = map[gguf.Type]rowDot4{
	gguf.Q8_0: dot1Q8(dotQ8_0x1AVX2, q8_0Bytes),
	gguf.Q4_0: dot1Q8(dotQ4_0x1AVX2, q4_0Bytes),
	gguf.Q4_K: dot1Q8K(dotQ4_Kx1AVX2, q4_KBytes),
	gguf.Q6_K: dot1Q8K(dotQ6_Kx1AVX2, q6_KBytes),
}
