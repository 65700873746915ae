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
func dotQ4_0AVX2(w, q, d unsafe.Pointer, nb int) float32

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
	q, d, _ := a.q8(t)
	_ = row[len(d)*q4_0Bytes-1]
	return dotQ4_0AVX2(unsafe.Pointer(&row[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), len(d))
}

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
	}
}
