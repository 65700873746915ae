//go:build amd64 && !purego

package wkern

import (
	"unsafe"

	"github.com/kvlab/kvlab/internal/isa"
	"github.com/kvlab/kvlab/native/gguf"
	"golang.org/x/sys/cpu"
)

// hasVNNI selects the AVX-512 one-token kernels (vnni_amd64.s): VPDPBUSD on 64-byte vectors,
// VPERMI2B/VPERMI2W (VBMI, BW) to gather 4 blocks' nibbles and 16 blocks' scales. On a core
// that splits 512-bit operations in two (AMD Zen 4) they still issue about half the
// operations per block of the AVX2 kernel (one multiply-accumulate instead of VPMADDUBSW +
// VPMADDWD, the scales applied once per 16 blocks instead of per block).
var hasVNNI = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL &&
	isa.AVX512VNNI && isa.AVX512VBMI

//go:noescape
func dotQ4_0VNNI(w, q, d, s unsafe.Pointer, groups int) float32

// dotQ4_0Asm512 is the Q4_0 row dot of a one-token activation through the 16-block VNNI
// kernel, the tail of fewer than 16 blocks through the AVX2 one; other activations (several
// tokens, no regrouped copy) go to the AVX2 kernel whole.
func dotQ4_0Asm512(row []byte, a *Act, t int) float32 {
	nb := a.Cols / 32
	groups := nb / 16
	if t != 0 || a.N != 1 || len(a.P) != 512*groups || groups == 0 {
		return dotQ4_0Asm(row, a, t)
	}
	_ = row[nb*q4_0Bytes-1]
	s := dotQ4_0VNNI(unsafe.Pointer(&row[0]), unsafe.Pointer(&a.P[0]), unsafe.Pointer(&a.PD[0]), unsafe.Pointer(&a.PS[0]), groups)
	if rest := nb - 16*groups; rest > 0 {
		q, d, ss := a.q8(0)
		b := 16 * groups
		s += dotQ4_0uAVX2(unsafe.Pointer(&row[b*q4_0Bytes]), unsafe.Pointer(&q[32*b]), unsafe.Pointer(&d[b]), unsafe.Pointer(&ss[b]), rest)
	}
	return s
}

// dotQ4_KAsm512 is the Q4_K row dot through the 64-byte kernel (rowsQ4_KAVX512 on one row):
// dotQ4_KAsm's sums bit for bit, in fewer operations (one VPMADDUBSW and one VPMADDWD or
// VPDPWSSD per 64 values, the mins in one VPMADDWD against the 32-code sums).
//
// A one-token activation with its regrouped codes (Act.QK) goes through rowsQ4_KAVX512P, the
// same bits in fewer operations.
func dotQ4_KAsm512(row []byte, a *Act, t int) float32 {
	q, d, s32 := a.q8k32(t)
	_ = row[len(d)*q4_KBytes-1]
	var y float32
	if t == 0 && len(a.QK) == a.Cols {
		rowsQ4_KAVX512P(unsafe.Pointer(&row[0]), 0, 1, unsafe.Pointer(&a.QK[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&s32[0]), len(d), &y)
		return y
	}
	rowsQ4_KAVX512(unsafe.Pointer(&row[0]), 0, 1, unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&s32[0]), len(d), &y)
	return y
}

// dotQ6_KAsm512 is the Q6_K row dot through the 64-byte kernel (rowsQ6_KVNNI512 on one row):
// the AVX2 kernel's sums bit for bit, in fewer vector operations (TestQ6_KAVX512Bits).
func dotQ6_KAsm512(row []byte, a *Act, t int) float32 {
	q, d, bs := a.q8k(t)
	_ = row[len(d)*q6_KBytes-1]
	var y float32
	rowsQ6_KVNNI512(unsafe.Pointer(&row[0]), 0, 1, unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), len(d), &y)
	return y
}

//go:noescape
func dotQ4_Kx4AVX512(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32)

// dotQ4_Kx1Asm512 is dotQ4_KAsm512 as the one-token half of an invariant pair.
func dotQ4_Kx1Asm512(row []byte, a *Act, t int, out *[4]float32) { out[0] = dotQ4_KAsm512(row, a, t) }

//go:noescape
func dotQ6_Kx4VNNI512(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32)

// dotQ6_Kx1Asm512 is dotQ6_KAsm512 as the one-token half of an invariant pair.
func dotQ6_Kx1Asm512(row []byte, a *Act, t int, out *[4]float32) { out[0] = dotQ6_KAsm512(row, a, t) }

func init() {
	if hasVNNI && !noVNNI() {
		permQ8 = true
		dots[gguf.Q4_0] = dotQ4_0Asm512
		dots[gguf.Q4_K] = dotQ4_KAsm512
		dots[gguf.Q6_K] = dotQ6_KAsm512
		// Four tokens per unpacked super-block, each the bits of the one-token kernel: the row
		// dots' four-token kernels and invariant pairs (a batched pass's products).
		dots4[gguf.Q6_K] = dot4Q8K(dotQ6_Kx4VNNI512, q6_KBytes)
		invDots[gguf.Q6_K] = invPair{x4: dots4[gguf.Q6_K], x1: dotQ6_Kx1Asm512}
		dots4[gguf.Q4_K] = dot4Q8K(dotQ4_Kx4AVX512, q4_KBytes)
		invDots[gguf.Q4_K] = invPair{x4: dots4[gguf.Q4_K], x1: dotQ4_Kx1Asm512}
		for t := range vnniLayouts {
			gemms[t] = mulVNNIGEMM
		}
	}
}

// noVNNI reports whether KVLAB_NO_AVX512 asks for the AVX2 kernels on a CPU that has the
// AVX-512 ones (to compare them on one machine).
func noVNNI() bool { return isa.NoAVX512 }
