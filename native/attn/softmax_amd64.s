//go:build amd64 && !purego

#include "textflag.h"

// func maxMinAVX512(x *float32, n int, mx, mn *[16]float32)
// mx[l] and mn[l] = the largest and the smallest x[i] with i ≡ l mod 16, for i < n (n a
// multiple of 16; NaNs are passed over: VMAXPS's and VMINPS's operands ordered so that a NaN
// never takes the running maximum or minimum); x is only read. The pass reads the scores from
// L2 (0.18 ns a cell of 4 queries on Zen 4, the same as the maximum alone): the minimum costs
// nothing here and lets softmaxVec pick expSumAVX512U, whose exponential skips the floor test.
TEXT ·maxMinAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ mx+16(FP), DI
	MOVQ mn+24(FP), DX
	MOVL $0xff800000, AX       // −Inf
	VPBROADCASTD AX, Z0
	VMOVAPS Z0, Z2
	MOVL $0x7f800000, AX       // +Inf
	VPBROADCASTD AX, Z4
	VMOVAPS Z4, Z6
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   mx_done
	TESTQ $1, CX
	JZ   mx_pairs
	VMOVUPS (SI), Z1
	VMAXPS Z0, Z1, Z0
	VMINPS Z4, Z1, Z4
	ADDQ $64, SI
	DECQ CX
	JZ   mx_done

mx_pairs:
	VMOVUPS (SI), Z1
	VMOVUPS 64(SI), Z3
	VMAXPS Z0, Z1, Z0
	VMINPS Z4, Z1, Z4
	VMAXPS Z2, Z3, Z2
	VMINPS Z6, Z3, Z6
	ADDQ $128, SI
	SUBQ $2, CX
	JNZ  mx_pairs

mx_done:
	VMAXPS Z2, Z0, Z0
	VMINPS Z6, Z4, Z4
	VMOVUPS Z0, (DI)
	VMOVUPS Z4, (DX)
	VZEROUPPER
	RET

// func expSumAVX512(x *float32, n int, c float32, m *[16]float32, sum *[16]float32)
// x[i] = 2^(x[i]·c − m[i mod 16]·log₂e) for i < n (n a multiple of 16), and sum[l] = the sum of
// the new x[i] with i ≡ l mod 16: with c = scale·log₂e and m the maxima of the scaled scores,
// e^(scale·x − m); 0 where y ≤ expFloor (or is NaN), as expNeg. Every exponent y ≤ 0 (up to
// its rounding) is split as y = n + j/32 + r, n + j/32 = ⌊32y⌋/32 (y + 1.5·2¹⁸ rounded down,
// whose last 5 mantissa bits then hold j), r ∈ [0, 1/32) (VREDUCEPS, exact); 2^y = 2^n ·
// 2^(j/32) · (1 + r·p(r)), 2^(j/32) from the 32-entry table exp32Table (VPERMI2PS), p = c1 +
// c2·r fitted to 2^r's relative error on [0, 1/32) (below 2⁻²³·⁸; with the table's and the
// arithmetic's roundings within 2⁻²¹, expNeg's bound), and 2^n applied by VSCALEFPS, which
// takes ⌊y⌋ = n. The pass is bound by the FP pipes' throughput: on Zen 4 a zmm FMA, add,
// VPERMI2PS or VCMPPS issues one a cycle, VREDUCEPS and VSCALEFPS one every 2 cycles. Against
// the 16-entry table with y rounded to nearest (its degree-3 polynomial, two subtractions for
// r and n + j/16: 12 operations a vector, against 10 here and 9 in expSumAVX512U), over
// 16384 cells × 4 queries (256 KiB, in L2), thread CPU on Zen 4: this pass 0.57 → 0.50 ns a
// cell (expSumAVX512U 0.48); softmaxRows 0.71 → 0.62; inside the decode (TestDecodeBreakdown,
// q4_0, turbo2) 0.77–0.82 → 0.65–0.71. Tried and no faster: 2^n added to the exponent bits
// with integer operations (a table less j·2¹⁸, VPSLLD + VPADDD) instead of VSCALEFPS, r by two
// subtractions instead of VREDUCEPS, PREFETCHT0 1 KiB ahead.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS c+16(FP), Z20          // scale·log₂e
	MOVQ m+24(FP), DX
	MOVQ sum+32(FP), DI
	VBROADCASTSS ·expConst+0(SB), Z19   // log₂e
	VMULPS (DX), Z19, Z21               // m·log₂e
	VBROADCASTSS ·exp32Const+0(SB), Z22 // 1.5·2¹⁸
	VBROADCASTSS ·exp32Const+4(SB), Z25 // c2
	VBROADCASTSS ·exp32Const+8(SB), Z26 // c1
	VMOVUPS ·exp32Table+0(SB), Z23      // 2^(j/32), j < 16
	VMOVUPS ·exp32Table+64(SB), Z24     // 2^(j/32), 16 ≤ j < 32
	VBROADCASTSS ·expConst+4(SB), Z29  // expFloor
	VXORPS Z0, Z0, Z0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   es_done

es_loop:
	VMOVUPS (SI), Z1
	VFMSUB213PS Z21, Z20, Z1            // y = x·c − m·log₂e
	VCMPPS $0x1E, Z29, Z1, K1          // y > expFloor
	VADDPS.RD_SAE Z22, Z1, Z2           // ⌊32y⌋/32 + 1.5·2¹⁸: j in the low 5 bits
	VREDUCEPS $0x59, Z1, Z3             // r = y − ⌊32y⌋/32 (exact)
	VPERMI2PS Z24, Z23, Z2              // T = 2^(j/32)
	VMULPS Z2, Z3, Z6                   // r·T
	VFMADD213PS Z26, Z25, Z3            // p = c2·r + c1
	VFMADD213PS Z2, Z6, Z3              // T·(1 + r·p)
	VSCALEFPS.Z Z1, Z3, K1, Z3         // ·2^⌊y⌋, 0 at or below the floor
	VMOVUPS Z3, (SI)
	VADDPS Z3, Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JNZ  es_loop

es_done:
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET

// func expSumAVX512U(x *float32, n int, c float32, m *[16]float32, sum *[16]float32)
// expSumAVX512 without the floor test, for scores whose every y is above expFloor (softmaxVec
// checks it on the columns' minima; a NaN score, which the minima miss, gives a NaN weight that
// softmaxVec then sets to 0): bit for bit expSumAVX512's results there.
TEXT ·expSumAVX512U(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS c+16(FP), Z20          // scale·log₂e
	MOVQ m+24(FP), DX
	MOVQ sum+32(FP), DI
	VBROADCASTSS ·expConst+0(SB), Z19   // log₂e
	VMULPS (DX), Z19, Z21               // m·log₂e
	VBROADCASTSS ·exp32Const+0(SB), Z22 // 1.5·2¹⁸
	VBROADCASTSS ·exp32Const+4(SB), Z25 // c2
	VBROADCASTSS ·exp32Const+8(SB), Z26 // c1
	VMOVUPS ·exp32Table+0(SB), Z23      // 2^(j/32), j < 16
	VMOVUPS ·exp32Table+64(SB), Z24     // 2^(j/32), 16 ≤ j < 32
	VXORPS Z0, Z0, Z0
	SHRQ $4, CX
	TESTQ CX, CX
	JZ   eu_done

eu_loop:
	VMOVUPS (SI), Z1
	VFMSUB213PS Z21, Z20, Z1            // y = x·c − m·log₂e
	VADDPS.RD_SAE Z22, Z1, Z2           // ⌊32y⌋/32 + 1.5·2¹⁸: j in the low 5 bits
	VREDUCEPS $0x59, Z1, Z3             // r = y − ⌊32y⌋/32 (exact)
	VPERMI2PS Z24, Z23, Z2              // T = 2^(j/32)
	VMULPS Z2, Z3, Z6                   // r·T
	VFMADD213PS Z26, Z25, Z3            // p = c2·r + c1
	VFMADD213PS Z2, Z6, Z3              // T·(1 + r·p)
	VSCALEFPS Z1, Z3, Z3               // ·2^⌊y⌋
	VMOVUPS Z3, (SI)
	VADDPS Z3, Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JNZ  eu_loop

eu_done:
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET

// func maxMinAVX2(x *float32, n int, mx, mn *[16]float32)
// mx[l] and mn[l] for l < 8 = the largest and the smallest x[i] with i ≡ l mod 8, for i < n (n
// a multiple of 8; NaNs are passed over); x is only read: four maxima and four minima a lane,
// so that the pass does not wait on their latency (the vectors past a multiple of 4 first).
TEXT ·maxMinAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ mx+16(FP), DI
	MOVQ mn+24(FP), DX
	MOVL $0xff800000, AX       // −Inf
	MOVQ AX, X0
	VPBROADCASTD X0, Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	MOVL $0x7f800000, AX       // +Inf
	MOVQ AX, X4
	VPBROADCASTD X4, Y4
	VMOVAPS Y4, Y5
	VMOVAPS Y4, Y6
	VMOVAPS Y4, Y7
	SHRQ $3, CX
	MOVQ CX, BX
	ANDQ $3, BX
	JZ   mm2_quads

mm2_one:
	VMOVUPS (SI), Y8
	VMAXPS Y0, Y8, Y0          // a NaN in Y8 leaves Y0
	VMINPS Y4, Y8, Y4
	ADDQ $32, SI
	DECQ BX
	JNZ  mm2_one

mm2_quads:
	SHRQ $2, CX
	JZ   mm2_done

mm2_loop:
	VMOVUPS (SI), Y8
	VMOVUPS 32(SI), Y9
	VMOVUPS 64(SI), Y10
	VMOVUPS 96(SI), Y11
	VMAXPS Y0, Y8, Y0
	VMINPS Y4, Y8, Y4
	VMAXPS Y1, Y9, Y1
	VMINPS Y5, Y9, Y5
	VMAXPS Y2, Y10, Y2
	VMINPS Y6, Y10, Y6
	VMAXPS Y3, Y11, Y3
	VMINPS Y7, Y11, Y7
	ADDQ $128, SI
	DECQ CX
	JNZ  mm2_loop

mm2_done:
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VMINPS Y5, Y4, Y4
	VMINPS Y7, Y6, Y6
	VMINPS Y6, Y4, Y4
	VMOVUPS Y0, (DI)
	VMOVUPS Y4, (DX)
	VZEROUPPER
	RET

// ES2VEC and EU2VEC take the vector at (SI) through expSumAVX2's and expSumAVX2U's
// exponential, store it there and add it to Y0 (constants in Y7–Y15; Y1–Y6 scratch).
#define EU2BODY \
	VMOVUPS (SI), Y1 \
	VFMSUB213PS Y9, Y15, Y1       /* y = x·c − m·log₂e */ \
	VADDPS Y10, Y1, Y2            /* z = y + 1.5·2²⁰: y to a multiple of 1/8 */ \
	VSUBPS Y10, Y2, Y3            /* n + j/8 */ \
	VSUBPS Y3, Y1, Y3             /* r = y − n − j/8 (exact) */ \
	VPSLLD $20, Y2, Y5            /* (8n + j)·2²⁰ */ \
	VPERMPS Y11, Y2, Y2           /* 2^(j/8) less j·2²⁰ */ \
	VPADDD Y5, Y2, Y2             /* T = 2^(n + j/8) */

#define EU2TAIL \
	VMULPS Y2, Y3, Y6             /* r·T */ \
	VMOVAPS Y12, Y5 \
	VFMADD213PS Y13, Y3, Y5       /* p = c3·r + c2 */ \
	VFMADD213PS Y14, Y3, Y5       /* p = p·r + c1 */ \
	VFMADD213PS Y2, Y6, Y5        /* T·(1 + r·p) */

#define EU2VEC \
	EU2BODY \
	EU2TAIL \
	VMOVUPS Y5, (SI) \
	VADDPS Y5, Y0, Y0

#define ES2VEC \
	EU2BODY \
	VCMPPS $0x1E, Y7, Y1, Y4      /* y > expFloor */ \
	VANDPS Y4, Y2, Y2             /* 0 at or below the floor (no subnormal products) */ \
	EU2TAIL \
	VANDPS Y4, Y5, Y5             /* 0 at or below the floor (and for NaN) */ \
	VMOVUPS Y5, (SI) \
	VADDPS Y5, Y0, Y0

// func expSumAVX2(x *float32, n int, c float32, m *[16]float32, sum *[16]float32)
// x[i] = 2^(x[i]·c − m[i mod 8]·log₂e) for i < n (n a multiple of 8), and sum[l] for l < 8 the
// sum of the new x[i] with i ≡ l mod 8 (AVX2 + FMA): with c = scale·log₂e and m the maxima of
// the scaled scores, e^(scale·x − m), the scale folded in as expSumAVX512 folds it; 0 where
// y ≤ expFloor (or is NaN), as expNeg. y is split as y = n + j/8 + r, n + j/8 = y rounded to a
// multiple of 1/8 (by adding 1.5·2²⁰, whose last 3 mantissa bits then hold j and the bits
// above them n), |r| ≤ 1/16; 2^y = 2^(n + j/8)·(1 + r·p(r)), 2^(n + j/8) built with integer
// operations from the table exp8Table (2^(j/8) with j·2²⁰ taken off its bits, VPERMPS) and
// (8n + j)·2²⁰ (z's bits shifted), p a degree-2 polynomial fitted to 2^r's relative error on
// [−1/16, 1/16] (below 2⁻²⁵·²; within expNeg's 2⁻²¹ with the roundings). 15 vector operations
// a vector (12 in expSumAVX2U), where expNeg's degree-6 polynomial and its 2^n from r took 17:
// over 16384 cells × 4 queries (in L2), thread CPU on Zen 4 with KVLAB_NO_AVX512=1, this pass
// 0.72 ns a cell, expSumAVX2U 0.58, softmaxRows 1.06 → 0.74. On the Intel Xeon (Sapphire
// Rapids class, TestSoftmaxSpeed) the scores scaled in a pass of their own (scaleMaxMinAVX2,
// which stored them: 0.28–0.30 ns a cell) gave way to the read-only maxMinAVX2 (0.18) and the
// scale folded in here: softmaxRows 0.84–0.92 → 0.76–0.81. Tried there and slower: the scale
// kept apart (x·scale rounded, then the FMA, bit for bit with the old pair: expSumAVX2U
// 0.56 → 0.66–0.70, every vector operation more costs ~0.7 cycles: the pass is bound by the
// FMA pipes, ports 0 and 1, which take 6 of its 12 operations); two vectors a loop trip (+0.02).
TEXT ·expSumAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS c+16(FP), Y15          // scale·log₂e
	MOVQ m+24(FP), DX
	MOVQ sum+32(FP), DI
	VBROADCASTSS ·expConst+0(SB), Y8    // log₂e
	VMULPS (DX), Y8, Y9                 // m·log₂e
	VBROADCASTSS ·exp8Const+0(SB), Y10  // 1.5·2²⁰
	VBROADCASTSS ·exp8Const+4(SB), Y12  // c3
	VBROADCASTSS ·exp8Const+8(SB), Y13  // c2
	VBROADCASTSS ·exp8Const+12(SB), Y14 // c1
	VMOVUPS ·exp8Table(SB), Y11         // 2^(j/8) less j·2²⁰, j < 8
	VBROADCASTSS ·expConst+4(SB), Y7    // expFloor
	VXORPS Y0, Y0, Y0
	SHRQ $3, CX
	TESTQ CX, CX
	JZ   es2_done

es2_loop:
	ES2VEC
	ADDQ $32, SI
	DECQ CX
	JNZ  es2_loop

es2_done:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET

// func expSumAVX2U(x *float32, n int, c float32, m *[16]float32, sum *[16]float32)
// expSumAVX2 without the floor test, for scores whose every y is above expFloor (softmaxVec
// checks it on the columns' minima; a NaN score's weight comes out NaN, and softmaxVec then
// sets it to 0): bit for bit expSumAVX2's results there.
TEXT ·expSumAVX2U(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS c+16(FP), Y15          // scale·log₂e
	MOVQ m+24(FP), DX
	MOVQ sum+32(FP), DI
	VBROADCASTSS ·expConst+0(SB), Y8    // log₂e
	VMULPS (DX), Y8, Y9                 // m·log₂e
	VBROADCASTSS ·exp8Const+0(SB), Y10  // 1.5·2²⁰
	VBROADCASTSS ·exp8Const+4(SB), Y12  // c3
	VBROADCASTSS ·exp8Const+8(SB), Y13  // c2
	VBROADCASTSS ·exp8Const+12(SB), Y14 // c1
	VMOVUPS ·exp8Table(SB), Y11         // 2^(j/8) less j·2²⁰, j < 8
	VXORPS Y0, Y0, Y0
	SHRQ $3, CX
	TESTQ CX, CX
	JZ   eu2_done

eu2_loop:
	EU2VEC
	ADDQ $32, SI
	DECQ CX
	JNZ  eu2_loop

eu2_done:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET
