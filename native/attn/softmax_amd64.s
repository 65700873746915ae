//go:build amd64 && !purego

#include "textflag.h"

// func scaleMaxAVX512(x *float32, n int, scale float32, mx *[16]float32)
// x[i] *= scale for i < n (n a multiple of 16); mx[l] = the largest x[i] with i ≡ l mod 16.
TEXT ·scaleMaxAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS scale+16(FP), Z1
	MOVQ mx+24(FP), DI
	MOVL $0xff800000, AX       // −Inf
	VPBROADCASTD AX, Z0
	VMOVAPS Z0, Z2
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   sm_done
	TESTQ $1, CX
	JZ   sm_pairs
	VMULPS (SI), Z1, Z3
	VMOVUPS Z3, (SI)
	VMAXPS Z3, Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JZ   sm_done

sm_pairs:
	VMULPS (SI), Z1, Z3
	VMULPS 64(SI), Z1, Z4
	VMOVUPS Z3, (SI)
	VMOVUPS Z4, 64(SI)
	VMAXPS Z3, Z0, Z0
	VMAXPS Z4, Z2, Z2
	ADDQ $128, SI
	SUBQ $2, CX
	JNZ  sm_pairs

sm_done:
	VMAXPS Z2, Z0, Z0
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET

// func expSumAVX512(x *float32, n int, m *[16]float32, sum *[16]float32)
// x[i] = e^(x[i] − m[i mod 16]) for i < n (n a multiple of 16, every x[i] ≤ its m), and
// sum[l] = the sum of the new x[i] with i ≡ l mod 16. e^t = 2^y, y = t·log₂e, is p(y − r)·2^r,
// r = y rounded to nearest, p the degree-6 polynomial of expNeg, scaled by VSCALEFPS; 0 where
// y ≤ expFloor (or is NaN), as expNeg.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ m+16(FP), DX
	MOVQ sum+24(FP), DI
	VBROADCASTSS ·expConst+0(SB), Z20   // log₂e
	VMULPS (DX), Z20, Z21               // m·log₂e
	VBROADCASTSS ·expConst+4(SB), Z22   // c6
	VBROADCASTSS ·expConst+8(SB), Z23   // c5
	VBROADCASTSS ·expConst+12(SB), Z24  // c4
	VBROADCASTSS ·expConst+16(SB), Z25  // c3
	VBROADCASTSS ·expConst+20(SB), Z26  // c2
	VBROADCASTSS ·expConst+24(SB), Z27  // c1
	VBROADCASTSS ·expConst+28(SB), Z28  // c0 = 1
	VBROADCASTSS ·expConst+32(SB), Z29  // expFloor
	VXORPS Z0, Z0, Z0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   es_done

es_loop:
	VMOVUPS (SI), Z1
	VFMSUB213PS Z21, Z20, Z1      // y = x·log₂e − m·log₂e
	VCMPPS $0x1E, Z29, Z1, K1     // y > expFloor
	VRNDSCALEPS $0, Z1, Z2        // r = round(y)
	VSUBPS Z2, Z1, Z1             // f = y − r
	VMOVAPS Z22, Z3
	VFMADD213PS Z23, Z1, Z3       // p = p·f + c
	VFMADD213PS Z24, Z1, Z3
	VFMADD213PS Z25, Z1, Z3
	VFMADD213PS Z26, Z1, Z3
	VFMADD213PS Z27, Z1, Z3
	VFMADD213PS Z28, Z1, Z3
	VSCALEFPS.Z Z2, Z3, K1, Z3    // p·2^r, 0 at or below the floor
	VMOVUPS Z3, (SI)
	VADDPS Z3, Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JNZ  es_loop

es_done:
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET
