//go:build amd64 && !purego

package wkern

import (
	"unsafe"

	"github.com/kvlab/kvlab/internal/isa"
	"github.com/kvlab/kvlab/native/gguf"
	"golang.org/x/sys/cpu"
)

//go:noescape
func dotQ8_0x1AVX2(w, q, d unsafe.Pointer, nb, qstride, dstride int, out *[4]float32)

//go:noescape
func dotQ4_0ux4AVX2(w, q, d, s unsafe.Pointer, nb, qstride, dstride int, out *[4]float32)

//go:noescape
func dotQ4_0ux1AVX2(w, q, d, s unsafe.Pointer, nb, qstride, dstride int, out *[4]float32)

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

// dotQ4_0u runs an unsigned-nibble Q4_0 kernel (invq4_amd64.s) on tokens t… (four for the
// four-token kernel, one for the other).
func dotQ4_0u(f func(w, q, d, s unsafe.Pointer, nb, qstride, dstride int, out *[4]float32), tokens int) rowDot4 {
	return func(row []byte, a *Act, t int, out *[4]float32) {
		nb := a.Cols / 32
		_ = row[nb*q4_0Bytes-1]
		_ = a.Q[(t+tokens)*a.Cols-1]
		_ = a.D[(t+tokens)*nb-1]
		_ = a.S[(t+tokens)*nb-1]
		f(unsafe.Pointer(&row[0]), unsafe.Pointer(&a.Q[t*a.Cols]), unsafe.Pointer(&a.D[t*nb]), unsafe.Pointer(&a.S[t*nb]),
			nb, a.Cols, 4*nb, out)
	}
}

// asmInvDots are the invariant pairs: the four-token kernels of dot4_amd64.s with their
// one-token cuts, and Q4_0's unsigned-nibble pair (AVX-512 VNNI where the CPU has it).
var asmInvDots = map[gguf.Type]invPair{
	gguf.Q8_0: {x4: asmDots4[gguf.Q8_0], x1: dot1Q8(dotQ8_0x1AVX2, q8_0Bytes)},
	gguf.Q4_0: q4Pairs[0],
	gguf.Q4_K: {x4: asmDots4[gguf.Q4_K], x1: dot1Q8K(dotQ4_Kx1AVX2, q4_KBytes)},
	gguf.Q6_K: {x4: asmDots4[gguf.Q6_K], x1: dot1Q8K(dotQ6_Kx1AVX2, q6_KBytes)},
}

//go:noescape
func dotQ4_0zx4VNNI(w, q, d, s unsafe.Pointer, nb, qstride, dstride int, out *[4]float32)

//go:noescape
func dotQ4_0zx1VNNI(w, q, d, s unsafe.Pointer, nb, qstride, dstride int, out *[4]float32)

// hasVNNI512 selects Q4_0's AVX-512 VNNI invariant pair (invq4z_amd64.s).
var hasVNNI512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && isa.AVX512VNNI

// q4Pairs are Q4_0's invariant pairs this CPU runs, the one in use first (the tests try each):
// the AVX2 one alone where KVLAB_NO_AVX512 asks for the AVX2 kernels.
var q4Pairs = func() []invPair {
	avx2 := invPair{x4: dotQ4_0u(dotQ4_0ux4AVX2, 4), x1: dotQ4_0u(dotQ4_0ux1AVX2, 1)}
	if hasVNNI512 && !noVNNI() {
		return []invPair{{x4: dotQ4_0u(dotQ4_0zx4VNNI, 4), x1: dotQ4_0u(dotQ4_0zx1VNNI, 1)}, avx2}
	}
	return []invPair{avx2}
}()
