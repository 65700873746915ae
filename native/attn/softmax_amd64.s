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

// func scaleMaxAVX2(x *float32, n int, scale float32, mx *[16]float32)
// scaleMaxAVX512 eight lanes wide (AVX2): n a multiple of 8; mx[l] for l < 8 the largest x[i]
// with i ≡ l mod 8.
TEXT ·scaleMaxAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y1
	MOVQ mx+24(FP), DI
	MOVL $0xff800000, AX       // −Inf
	MOVQ AX, X0
	VPBROADCASTD X0, Y0
	VMOVAPS Y0, Y2
	SHRQ $3, CX
	TESTQ CX, CX
	JZ   sm2_done
	TESTQ $1, CX
	JZ   sm2_pairs
	VMULPS (SI), Y1, Y3
	VMOVUPS Y3, (SI)
	VMAXPS Y3, Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JZ   sm2_done

sm2_pairs:
	VMULPS (SI), Y1, Y3
	VMULPS 32(SI), Y1, Y4
	VMOVUPS Y3, (SI)
	VMOVUPS Y4, 32(SI)
	VMAXPS Y3, Y0, Y0
	VMAXPS Y4, Y2, Y2
	ADDQ $64, SI
	SUBQ $2, CX
	JNZ  sm2_pairs

sm2_done:
	VMAXPS Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET

// func expSumAVX2(x *float32, n int, m *[16]float32, sum *[16]float32)
// expSumAVX512 eight lanes wide (AVX2 + FMA): n a multiple of 8, m and sum per lane l < 8. The
// power 2^r is built from r's bits ((r + 127) << 23), exact for the r that pass the floor.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ m+16(FP), DX
	MOVQ sum+24(FP), DI
	VBROADCASTSS ·expConst+0(SB), Y8    // log₂e
	VMULPS (DX), Y8, Y9                 // m·log₂e
	VBROADCASTSS ·expConst+4(SB), Y10   // c6
	VBROADCASTSS ·expConst+8(SB), Y11   // c5
	VBROADCASTSS ·expConst+12(SB), Y12  // c4
	VBROADCASTSS ·expConst+16(SB), Y13  // c3
	VBROADCASTSS ·expConst+20(SB), Y14  // c2
	VBROADCASTSS ·expConst+24(SB), Y15  // c1
	VBROADCASTSS ·expConst+28(SB), Y6   // c0 = 1
	VBROADCASTSS ·expConst+32(SB), Y7   // expFloor
	MOVL $127, AX
	MOVQ AX, X5
	VPBROADCASTD X5, Y5
	VXORPS Y0, Y0, Y0
	SHRQ $3, CX
	TESTQ CX, CX
	JZ   es2_done

es2_loop:
	VMOVUPS (SI), Y1
	VFMSUB213PS Y9, Y8, Y1        // y = x·log₂e − m·log₂e
	VCMPPS $0x1E, Y7, Y1, Y4      // y > expFloor
	VROUNDPS $0, Y1, Y2           // r = round(y)
	VSUBPS Y2, Y1, Y1             // f = y − r
	VMOVAPS Y10, Y3
	VFMADD213PS Y11, Y1, Y3       // p = p·f + c
	VFMADD213PS Y12, Y1, Y3
	VFMADD213PS Y13, Y1, Y3
	VFMADD213PS Y14, Y1, Y3
	VFMADD213PS Y15, Y1, Y3
	VFMADD213PS Y6, Y1, Y3
	VANDPS Y4, Y2, Y2             // r = 0 where masked (keeps the bits below finite)
	VCVTPS2DQ Y2, Y2
	VPADDD Y5, Y2, Y2
	VPSLLD $23, Y2, Y2            // 2^r
	VMULPS Y2, Y3, Y3
	VANDPS Y4, Y3, Y3             // 0 at or below the floor
	VMOVUPS Y3, (SI)
	VADDPS Y3, Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ  es2_loop

es2_done:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET
