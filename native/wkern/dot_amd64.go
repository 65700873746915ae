//go:build amd64 && !purego

package wkern

import (
	"unsafe"

	"github.com/kvlab/kvlab/native/gguf"
	"golang.org/x/sys/cpu"
)

// hasAVX2 selects the assembly kernels (dot_amd64.s): AVX2 integer dots, F16C for the f16
// block scales, FMA for the accumulation.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

//go:noescape
func dotQ8_0AVX2(w, q, d unsafe.Pointer, nb int) float32

//go:noescape
func dotQ4_KAVX2(w, q, d, bs unsafe.Pointer, nb int) float32

//go:noescape
func dotQ6_KAVX2(w, q, d, bs unsafe.Pointer, nb int) float32

func dotQ8_0Asm(row []byte, a *Act, t int) float32 {
	q, d, _ := a.q8(t)
	_ = row[len(d)*q8_0Bytes-1]
	return dotQ8_0AVX2(unsafe.Pointer(&row[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), len(d))
}

func dotQ4_0Asm(row []byte, a *Act, t int) float32 {
	q, d, s := a.q8(t)
	_ = row[len(d)*q4_0Bytes-1]
	_ = s[len(d)-1]
	return dotQ4_0uAVX2(unsafe.Pointer(&row[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&s[0]), len(d))
}

// dotQ4_0uAVX2 is the Q4_0 row dot with unsigned nibbles (q4u_amd64.s).
//
//go:noescape
func dotQ4_0uAVX2(w, q, d, s unsafe.Pointer, nb int) float32

func dotQ4_KAsm(row []byte, a *Act, t int) float32 {
	q, d, bs := a.q8k(t)
	_ = row[len(d)*q4_KBytes-1]
	return dotQ4_KAVX2(unsafe.Pointer(&row[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), len(d))
}

func dotQ6_KAsm(row []byte, a *Act, t int) float32 {
	q, d, bs := a.q8k(t)
	_ = row[len(d)*q6_KBytes-1]
	return dotQ6_KAVX2(unsafe.Pointer(&row[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), len(d))
}

// asmOn reports whether this CPU runs asmDots.
var asmOn = hasAVX2

// asmDots are the assembly kernels, used when the CPU has AVX2, FMA and F16C.
var asmDots = map[gguf.Type]rowDot{
	gguf.Q8_0: dotQ8_0Asm,
	gguf.Q4_0: dotQ4_0Asm,
	gguf.Q4_K: dotQ4_KAsm,
	gguf.Q6_K: dotQ6_KAsm,
}

func init() {
	if hasAVX2 {
		for t, f := range asmDots {
			dots[t] = f
		}
		for t, f := range asmDots4 {
			dots4[t] = f
		}
		for t, f := range asmInvDots {
			invDots[t] = f
		}
		gemms[gguf.Q4_0] = mulQ4_0GEMM
		gemms[gguf.Q8_0] = mulQ8_0GEMM
	}
}

//go:noescape
func dotQ8_0x4AVX2(w, q, d unsafe.Pointer, nb, qstride, dstride int, out *[4]float32)

//go:noescape
func dotQ4_0x4AVX2(w, q, d unsafe.Pointer, nb, qstride, dstride int, out *[4]float32)

//go:noescape
func dotQ4_Kx4AVX2(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32)

//go:noescape
func dotQ6_Kx4AVX2(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32)

// dot4Q8 runs a legacy four-token kernel on tokens t..t+3 (a.N ≥ t+4).
func dot4Q8(f func(w, q, d unsafe.Pointer, nb, qstride, dstride int, out *[4]float32), bsz int) rowDot4 {
	return func(row []byte, a *Act, t int, out *[4]float32) {
		nb := a.Cols / 32
		_ = row[nb*bsz-1]
		_ = a.Q[(t+4)*a.Cols-1]
		_ = a.D[(t+4)*nb-1]
		f(unsafe.Pointer(&row[0]), unsafe.Pointer(&a.Q[t*a.Cols]), unsafe.Pointer(&a.D[t*nb]), nb, a.Cols, 4*nb, out)
	}
}

// dot4Q8K runs a K-quant four-token kernel on tokens t..t+3 (a.N ≥ t+4).
func dot4Q8K(f func(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32), bsz int) rowDot4 {
	return func(row []byte, a *Act, t int, out *[4]float32) {
		nb := a.Cols / 256
		_ = row[nb*bsz-1]
		_ = a.Q[(t+4)*a.Cols-1]
		_ = a.D[(t+4)*nb-1]
		_ = a.BS[(t+4)*a.Cols/16-1]
		f(unsafe.Pointer(&row[0]), unsafe.Pointer(&a.Q[t*a.Cols]), unsafe.Pointer(&a.D[t*nb]), unsafe.Pointer(&a.BS[t*a.Cols/16]),
			nb, a.Cols, 4*nb, a.Cols/16*2, out)
	}
}

var asmDots4 = map[gguf.Type]rowDot4{
	gguf.Q8_0: dot4Q8(dotQ8_0x4AVX2, q8_0Bytes),
	gguf.Q4_0: dot4Q8(dotQ4_0x4AVX2, q4_0Bytes),
	gguf.Q4_K: dot4Q8K(dotQ4_Kx4AVX2, q4_KBytes),
	gguf.Q6_K: dot4Q8K(dotQ6_Kx4AVX2, q6_KBytes),
}
