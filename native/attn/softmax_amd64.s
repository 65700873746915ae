//go:build amd64 && !purego

#include "textflag.h"

// func maxAVX512(x *float32, n int, mx *[16]float32)
// mx[l] = the largest x[i] with i ≡ l mod 16, for i < n (n a multiple of 16); x is only read.
TEXT ·maxAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ mx+16(FP), DI
	MOVL $0xff800000, AX       // −Inf
	VPBROADCASTD AX, Z0
	VMOVAPS Z0, Z2
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   mx_done
	TESTQ $1, CX
	JZ   mx_pairs
	VMAXPS (SI), Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JZ   mx_done

mx_pairs:
	VMAXPS (SI), Z0, Z0
	VMAXPS 64(SI), Z2, Z2
	ADDQ $128, SI
	SUBQ $2, CX
	JNZ  mx_pairs

mx_done:
	VMAXPS Z2, Z0, Z0
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET

// func expSumAVX512(x *float32, n int, c float32, m *[16]float32, sum *[16]float32)
// x[i] = 2^(x[i]·c − m[i mod 16]·log₂e) for i < n (n a multiple of 16), and sum[l] = the sum of
// the new x[i] with i ≡ l mod 16: with c = scale·log₂e and m the maxima of the scaled scores,
// e^(scale·x − m). Every exponent y ≤ 0 (up to its rounding) is split as y = n + j/16 + r,
// n + j/16 = y rounded to a multiple of 1/16 (by adding 1.5·2¹⁹, whose last 4 mantissa bits
// then hold j and the bits above them n), |r| ≤ 1/32; 2^y = 2^n · 2^(j/16) · (1 + r·p(r)),
// 2^(j/16) from the 16-entry table expTable (VPERMPS), p the degree-2 rest of 2^r's Taylor
// series (its error below 2⁻²⁶ of the result at |r| = 1/32; with the table's and the
// arithmetic's roundings the result is within 2⁻²¹, expNeg's bound), and 2^n applied by
// VSCALEFPS, which takes ⌊n + j/16⌋. 0 where y ≤ expFloor (or is NaN), as expNeg. Against
// expNeg's degree-6 polynomial, with the scores scaled in a pass of their own, this is 13
// vector operations a vector instead of 15 plus the scaling pass's store: softmaxRows over
// 4096 cells × 4 queries (in L2) 0.83 → 0.70 ns a cell, thread CPU on Zen 4; inside a
// decode (right after the scores kernel, q4_0 and turbo2, 131072 cells) 0.92 → 0.86–0.92.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS c+16(FP), Z20          // scale·log₂e
	MOVQ m+24(FP), DX
	MOVQ sum+32(FP), DI
	VBROADCASTSS ·expConst+0(SB), Z19   // log₂e
	VMULPS (DX), Z19, Z21               // m·log₂e
	VBROADCASTSS ·expTabConst+0(SB), Z22   // 1.5·2¹⁹
	VBROADCASTSS ·expTabConst+4(SB), Z24   // ln³2/6
	VBROADCASTSS ·expTabConst+8(SB), Z25   // ln²2/2
	VBROADCASTSS ·expTabConst+12(SB), Z26  // ln 2
	VMOVUPS ·expTable(SB), Z23          // 2^(j/16), j < 16
	VBROADCASTSS ·expConst+32(SB), Z29  // expFloor
	VXORPS Z0, Z0, Z0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   es_done

es_loop:
	VMOVUPS (SI), Z1
	VFMSUB213PS Z21, Z20, Z1      // y = x·c − m·log₂e
	VCMPPS $0x1E, Z29, Z1, K1     // y > expFloor
	VADDPS Z22, Z1, Z2            // z = y + 1.5·2¹⁹: y to a multiple of 1/16
	VSUBPS Z22, Z2, Z3            // n + j/16
	VSUBPS Z3, Z1, Z1             // r = y − n − j/16 (exact)
	VPERMPS Z23, Z2, Z4           // T = 2^(j/16)
	VMOVAPS Z24, Z5
	VFMADD213PS Z25, Z1, Z5       // p = ln³2/6·r + ln²2/2
	VFMADD213PS Z26, Z1, Z5       // p = p·r + ln 2
	VMULPS Z4, Z1, Z6             // r·T
	VFMADD213PS Z4, Z6, Z5        // T·(1 + r·p)
	VSCALEFPS.Z Z3, Z5, K1, Z5    // ·2^⌊n + j/16⌋ = ·2^n, 0 at or below the floor
	VMOVUPS Z5, (SI)
	VADDPS Z5, Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JNZ  es_loop

es_done:
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET

// func scaleMaxAVX2(x *float32, n int, scale float32, mx *[16]float32)
// x[i] *= scale for i < n (n a multiple of 8); mx[l] for l < 8 the largest x[i] with i ≡ l mod 8.
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
// x[i] = e^(x[i] − m[i mod 8]) for i < n (n a multiple of 8, every x[i] ≤ its m), and sum[l]
// for l < 8 the sum of the new x[i] with i ≡ l mod 8 (AVX2 + FMA). e^t = 2^y, y = t·log₂e, is
// p(y − r)·2^r, r = y rounded to nearest, p the degree-6 polynomial of expNeg; the power 2^r
// is built from r's bits ((r + 127) << 23), exact for the r that pass the floor; 0 where
// y ≤ expFloor (or is NaN), as expNeg.
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

