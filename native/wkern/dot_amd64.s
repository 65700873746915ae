//go:build amd64 && !purego

#include "textflag.h"

// Register use in every kernel: SI the weight row, DI the activation codes, R8 the activation
// scales, R9 the 16-code sums (K-quants), CX the block count; Y0/Y1 the float accumulators.

// func dotQ8_0AVX2(w, q, d unsafe.Pointer, nb int) float32
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ nb+24(FP), CX
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15
	VXORPS   Y0, Y0, Y0
	VXORPS   Y1, Y1, Y1

Q8_0loop2:
	CMPQ CX, $2
	JL   Q8_0tail

	// Prefetch 16 KiB ahead: the hardware prefetcher alone leaves one core's row stream well under
	// the memory bandwidth on Intel Xeon (1.1B decode, 1 thread, 4 KiB ahead: +20-60 %); rows are
	// consecutive, so past a row's end it fetches the next rows' blocks (a prefetch never faults).
	// On an AMD Zen 5 VM 4 KiB ahead did not help (loaded, weights in 4 KiB pages), and 16 KiB
	// ahead against 4 KiB (quiet, weights in 2 MiB page-cache folios, 3-8 interleaved rounds of
	// 1-thread decode) gave Q8_0 +8-14 %, Q4_0 +1-26 %, Q4_K_M +4 % and Q6_K +5 % on average.
	PREFETCHT0 16384(SI)
	VMOVDQU     2(SI), Y2
	VMOVDQU     0(DI), Y4
	VPSIGNB     Y2, Y2, Y3
	VPSIGNB     Y2, Y4, Y4
	VPMADDUBSW  Y4, Y3, Y5
	VPMADDWD    Y15, Y5, Y5
	VCVTDQ2PS   Y5, Y5
	MOVWLZX     0(SI), AX
	VMOVD       AX, X6
	VCVTPH2PS   X6, X6
	VMULSS      0(R8), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y6, Y5, Y0

	VMOVDQU     36(SI), Y2
	VMOVDQU     32(DI), Y4
	VPSIGNB     Y2, Y2, Y3
	VPSIGNB     Y2, Y4, Y4
	VPMADDUBSW  Y4, Y3, Y5
	VPMADDWD    Y15, Y5, Y5
	VCVTDQ2PS   Y5, Y5
	MOVWLZX     34(SI), AX
	VMOVD       AX, X6
	VCVTPH2PS   X6, X6
	VMULSS      4(R8), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y6, Y5, Y1

	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $8, R8
	SUBQ $2, CX
	JMP  Q8_0loop2

Q8_0tail:
	TESTQ CX, CX
	JE    Q8_0done

	VMOVDQU     2(SI), Y2
	VMOVDQU     0(DI), Y4
	VPSIGNB     Y2, Y2, Y3
	VPSIGNB     Y2, Y4, Y4
	VPMADDUBSW  Y4, Y3, Y5
	VPMADDWD    Y15, Y5, Y5
	VCVTDQ2PS   Y5, Y5
	MOVWLZX     0(SI), AX
	VMOVD       AX, X6
	VCVTPH2PS   X6, X6
	VMULSS      0(R8), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y6, Y5, Y0


Q8_0done:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+32(FP)
	RET


// K4SCALAR unpacks the 12 bytes of 6-bit scales and mins of the Q4_K super-block at P into
// X7 = [scales 0..7, mins 0..7] as bytes (X6 and the registers A, B, C, D clobbered). Byte
// j < 4 holds scale j in its low six bits, byte 4 + j min j, and byte 8 + j the low four bits
// of scale 4 + j (low nibble) and of min 4 + j (high nibble), whose top two bits are the top
// two bits of bytes j and 4 + j. In 64-bit registers: A = bytes 0..7 & 3f = [sc0..3,
// mn0..3]; B = their top two bits moved to bits 4, 5 (>> 2 & 30); C = [low nibbles, high
// nibbles] of bytes 8..11 | B = [sc4..7, mn4..7]; one dword interleave orders the halves.
// (15 operations where the dword-at-a-time unpack took 24.)
#define K4SCALAR(P, A, B, C, D) \
	MOVQ  4(P), A; \
	MOVL  12(P), C; \
	MOVQ  A, B; \
	SHRQ  $2, B; \
	MOVQ  $0x3030303030303030, D; \
	ANDQ  D, B; \
	MOVQ  $0x3f3f3f3f3f3f3f3f, D; \
	ANDQ  D, A; \
	MOVL  C, D; \
	SHRL  $4, D; \
	ANDL  $0x0f0f0f0f, C; \
	ANDL  $0x0f0f0f0f, D; \
	SHLQ  $32, D; \
	ORQ   D, C; \
	ORQ   B, C; \
	VMOVQ A, X7; \
	VMOVQ C, X6; \
	VPUNPCKLDQ X6, X7, X7

// K4VEC unpacks the 6-bit scales and mins of the Q4_K super-block at P into every 128-bit
// lane of Z as bytes [scales 0..3, mins 0..3, scales 4..7, mins 4..7] (T, U clobbered; Z27…Z29
// hold k4vec's controls and mask, Z30 0x3f bytes). With b the 12 bytes at P + 4: the low
// qword of a lane is b0..b7 (scale j and min j in the low six bits of b_j and b_4+j); the high
// qword's bytes are the nibbles of b8..b11 (VPMULTISHIFTQB picks each byte's nibble to bits
// 0–3), merged by VPTERNLOGD with the top two bits of b0..b7 moved to bits 4–5 (the same from a
// broadcast of b0..b7), then masked to six bits: K4SCALAR's bytes, the scales' and mins' halves
// in the other order.
#define K4VEC(P, Z, T, U) \
	VBROADCASTI32X4 4(P), T; \
	VPBROADCASTQ    4(P), U; \
	VPMULTISHIFTQB  T, Z27, T; \
	VPMULTISHIFTQB  U, Z28, U; \
	VPTERNLOGD      $0xd8, Z29, U, T; \
	VPANDD          Z30, T, Z

// func dotQ4_KAVX2(w, q, d, bs unsafe.Pointer, nb int) float32
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bs+24(FP), R9
	MOVQ nb+32(FP), CX
	LEAQ shufK4<>(SB), R12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

q4kblock:
	TESTQ CX, CX
	JE    q4kdone
	// Prefetch 16 KiB ahead, as dotQ8_0AVX2 does (why: beside it).
	PREFETCHT0 16384(SI)
	PREFETCHT0 16448(SI)
	PREFETCHT0 16512(SI)
	MOVL      (SI), AX
	VMOVD     AX, X2
	VCVTPH2PS X2, X2
	VBROADCASTSS (R8), X3
	VMULPS    X3, X2, X2

	K4SCALAR(SI, AX, BX, DX, R10)
	VPMOVZXBW    X7, Y6
	VPERM2I128   $0x00, Y6, Y6, Y4
	VEXTRACTI128 $1, Y6, X5

	// mins: dmin·d_a·Σ_j m_j·(sum of sub-block j's codes)
	VMOVDQU      (R9), Y6
	VEXTRACTI128 $1, Y6, X7
	VPHADDW      X7, X6, X6
	VPMADDWD     X6, X5, X5
	VCVTDQ2PS    X5, X5
	VPSHUFD      $0x55, X2, X7
	VFMADD231PS  X7, X5, X1

	VPXOR Y8, Y8, Y8

	VMOVDQU    16(SI), Y9
	VPSRLW     $4, Y9, Y10
	VPAND      Y14, Y9, Y9
	VPAND      Y14, Y10, Y10
	VPMADDUBSW 0(DI), Y9, Y9
	VPMADDUBSW 32(DI), Y10, Y10
	VPSHUFB    0(R12), Y4, Y11
	VPSHUFB    32(R12), Y4, Y12
	VPMADDWD   Y11, Y9, Y9
	VPMADDWD   Y12, Y10, Y10
	VPADDD     Y9, Y8, Y8
	VPADDD     Y10, Y8, Y8

	VMOVDQU    48(SI), Y9
	VPSRLW     $4, Y9, Y10
	VPAND      Y14, Y9, Y9
	VPAND      Y14, Y10, Y10
	VPMADDUBSW 64(DI), Y9, Y9
	VPMADDUBSW 96(DI), Y10, Y10
	VPSHUFB    64(R12), Y4, Y11
	VPSHUFB    96(R12), Y4, Y12
	VPMADDWD   Y11, Y9, Y9
	VPMADDWD   Y12, Y10, Y10
	VPADDD     Y9, Y8, Y8
	VPADDD     Y10, Y8, Y8

	VMOVDQU    80(SI), Y9
	VPSRLW     $4, Y9, Y10
	VPAND      Y14, Y9, Y9
	VPAND      Y14, Y10, Y10
	VPMADDUBSW 128(DI), Y9, Y9
	VPMADDUBSW 160(DI), Y10, Y10
	VPSHUFB    128(R12), Y4, Y11
	VPSHUFB    160(R12), Y4, Y12
	VPMADDWD   Y11, Y9, Y9
	VPMADDWD   Y12, Y10, Y10
	VPADDD     Y9, Y8, Y8
	VPADDD     Y10, Y8, Y8

	VMOVDQU    112(SI), Y9
	VPSRLW     $4, Y9, Y10
	VPAND      Y14, Y9, Y9
	VPAND      Y14, Y10, Y10
	VPMADDUBSW 192(DI), Y9, Y9
	VPMADDUBSW 224(DI), Y10, Y10
	VPSHUFB    192(R12), Y4, Y11
	VPSHUFB    224(R12), Y4, Y12
	VPMADDWD   Y11, Y9, Y9
	VPMADDWD   Y12, Y10, Y10
	VPADDD     Y9, Y8, Y8
	VPADDD     Y10, Y8, Y8

	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS X2, Y9
	VFMADD231PS  Y9, Y8, Y0
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JMP  q4kblock

q4kdone:
	VEXTRACTF128 $1, Y0, X2
	VADDPS       X2, X0, X0
	VSUBPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+40(FP)
	RET

// func rowsQ4_KAVX2(w unsafe.Pointer, rowBytes, rows int, q, d, s32 unsafe.Pointer, nb int, y *float32)
// y[r] = dotQ4_KAVX2 of the Q4_K row at w + r·rowBytes, for r < rows (s32 the activation's
// 32-code sums), in one loop: no call per row, the mins' products in one VPMADDWD against the
// 32-code sums (instead of a load, an extract and a VPHADDW of the 16-code ones), and the
// scaled sums in two accumulators started by their first VPMADDWD (no zeroing, half the
// chain). Same integer lanes, same float steps: dotQ4_KAVX2's bits (TestRowLoops).
TEXT ·rowsQ4_KAVX2(SB), NOSPLIT, $0-64
	MOVQ rows+16(FP), R14
	TESTQ R14, R14
	JE   q4k2rdone
	MOVQ nb+48(FP), CX
	TESTQ CX, CX
	JE   q4k2rdone
	MOVQ w+0(FP), R15
	MOVQ rowBytes+8(FP), R13
	MOVQ y+56(FP), BX
	LEAQ shufK4<>(SB), R12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

q4k2rrow:
	MOVQ  R15, SI
	MOVQ  q+24(FP), DI
	MOVQ  d+32(FP), R8
	MOVQ  s32+40(FP), R9
	MOVQ  nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

q4k2rblock:
	// Prefetch 16 KiB ahead, as dotQ8_0AVX2 does (why: beside it).
	PREFETCHT0 16384(SI)
	PREFETCHT0 16448(SI)
	PREFETCHT0 16512(SI)
	VMOVD        (SI), X2
	VCVTPH2PS    X2, X2
	VBROADCASTSS (R8), X3
	VMULPS       X3, X2, X2

	K4SCALAR(SI, AX, DX, R10, R11)
	VPMOVZXBW    X7, Y6
	VPERM2I128   $0x00, Y6, Y6, Y4
	VEXTRACTI128 $1, Y6, X5

	// mins: dmin·d_a·Σ_j m_j·(sum of sub-block j's codes)
	VPMADDWD     (R9), X5, X5
	VCVTDQ2PS    X5, X5
	VPSHUFD      $0x55, X2, X7
	VFMADD231PS  X7, X5, X1

	VMOVDQU    16(SI), Y9
	VPSRLW     $4, Y9, Y10
	VPAND      Y14, Y9, Y9
	VPAND      Y14, Y10, Y10
	VPMADDUBSW 0(DI), Y9, Y9
	VPMADDUBSW 32(DI), Y10, Y10
	VPSHUFB    0(R12), Y4, Y11
	VPSHUFB    32(R12), Y4, Y12
	VPMADDWD   Y11, Y9, Y8
	VPMADDWD   Y12, Y10, Y13

	VMOVDQU    48(SI), Y9
	VPSRLW     $4, Y9, Y10
	VPAND      Y14, Y9, Y9
	VPAND      Y14, Y10, Y10
	VPMADDUBSW 64(DI), Y9, Y9
	VPMADDUBSW 96(DI), Y10, Y10
	VPSHUFB    64(R12), Y4, Y11
	VPSHUFB    96(R12), Y4, Y12
	VPMADDWD   Y11, Y9, Y9
	VPMADDWD   Y12, Y10, Y10
	VPADDD     Y9, Y8, Y8
	VPADDD     Y10, Y13, Y13

	VMOVDQU    80(SI), Y9
	VPSRLW     $4, Y9, Y10
	VPAND      Y14, Y9, Y9
	VPAND      Y14, Y10, Y10
	VPMADDUBSW 128(DI), Y9, Y9
	VPMADDUBSW 160(DI), Y10, Y10
	VPSHUFB    128(R12), Y4, Y11
	VPSHUFB    160(R12), Y4, Y12
	VPMADDWD   Y11, Y9, Y9
	VPMADDWD   Y12, Y10, Y10
	VPADDD     Y9, Y8, Y8
	VPADDD     Y10, Y13, Y13

	VMOVDQU    112(SI), Y9
	VPSRLW     $4, Y9, Y10
	VPAND      Y14, Y9, Y9
	VPAND      Y14, Y10, Y10
	VPMADDUBSW 192(DI), Y9, Y9
	VPMADDUBSW 224(DI), Y10, Y10
	VPSHUFB    192(R12), Y4, Y11
	VPSHUFB    224(R12), Y4, Y12
	VPMADDWD   Y11, Y9, Y9
	VPMADDWD   Y12, Y10, Y10
	VPADDD     Y9, Y8, Y8
	VPADDD     Y10, Y13, Y13

	VPADDD       Y13, Y8, Y8
	VCVTDQ2PS    Y8, Y8
	VBROADCASTSS X2, Y9
	VFMADD231PS  Y9, Y8, Y0
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $16, R9
	DECQ CX
	JNE  q4k2rblock

	VEXTRACTF128 $1, Y0, X2
	VADDPS       X2, X0, X0
	VSUBPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	MOVSS        X0, (BX)
	ADDQ  $4, BX
	ADDQ  R13, R15
	DECQ  R14
	JNE   q4k2rrow

q4k2rdone:
	VZEROUPPER
	RET

// func rowsQ4_KAVX512(w unsafe.Pointer, rowBytes, rows int, q, d, s32 unsafe.Pointer, nb int, y *float32)
// y[r] = the Q4_K row at w + r·rowBytes dotted with the activation (codes q, scales d, sums of
// every 32 codes s32), for r < rows: dotQ4_KAVX2's sum, bit for bit, in about half its vector
// operations per super-block:
//   - the scales and mins unpacked in the general registers (K4SCALAR: their ALUs are
//     otherwise idle here), the scale bytes spread as zero-extended words by one VPSHUFB per
//     64 codes (tables held in Z16…Z19);
//   - each 32-byte group of nibbles broadcast to both halves of a register, the low half
//     keeping the low nibbles and the high half the high ones (VPSRLVW by 0 and 4), so one
//     VPMADDUBSW covers both 32-value sub-blocks against the activation's 64 contiguous codes and
//     one VPMADDWD/VPDPWSSD applies both sub-blocks' scales; two accumulators halve the chain;
//   - the mins' products m_j·Σ_{32} q in one VPMADDWD against the activation's 32-code sums;
//   - the eight scaled code sums and the four min products in one vector (lanes 0–7, 8–11),
//     converted and multiplied-added into Z0 by [d·d_a ×8, dmin·d_a ×4] in one VFMADD231PS.
// The integer sums are exact and land in the AVX2 kernel's lanes (lane k: every sub-block's
// values 4k…4k+3 times its scale; min lane i: m_2i·S_2i + m_2i+1·S_2i+1), and each lane's float
// steps are its own, so the result is the AVX2 kernel's bits (TestQ4_KAVX512Bits).
TEXT ·rowsQ4_KAVX512(SB), NOSPLIT, $0-64
	MOVQ rows+16(FP), R14
	TESTQ R14, R14
	JE   q4krdone
	MOVQ nb+48(FP), CX
	TESTQ CX, CX
	JE   q4krdone
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 shiftK4<>(SB), Z15
	VMOVDQU64 shufK4b<>+0(SB), Z16
	VMOVDQU64 shufK4b<>+64(SB), Z17
	VMOVDQU64 shufK4b<>+128(SB), Z18
	VMOVDQU64 shufK4b<>+192(SB), Z19
	VMOVDQU64 k4min<>(SB), X25
	VMOVDQU64 permK4<>(SB), Z26

q4krrow:
	MOVQ  SI, AX
	MOVQ  q+24(FP), DI
	MOVQ  d+32(FP), R8
	MOVQ  s32+40(FP), R9
	MOVQ  nb+48(FP), CX
	VPXORD Z0, Z0, Z0

q4krblock:
	// Prefetch 16 KiB ahead, as dotQ8_0AVX2 does (why: beside it).
	PREFETCHT0 16384(AX)
	PREFETCHT0 16448(AX)
	PREFETCHT0 16512(AX)
	// Z2 = [d·d_a ×8, dmin·d_a ×8]
	VMOVD        (AX), X2
	VCVTPH2PS    X2, X2
	VBROADCASTSS (R8), X3
	VMULPS       X3, X2, X2
	VPERMPS      Z2, Z26, Z2

	K4SCALAR(AX, R10, R11, R12, BX)
	VSHUFI32X4 $0, Z7, Z7, Z4
	// The min words (VPSHUFB zero-extends through X25), times the 32-code sums: min lanes.
	VPSHUFB   X25, X7, X5
	VPMADDWD  (R9), X5, X5

	VBROADCASTI64X4 16(AX), Z9
	VPSRLVW         Z15, Z9, Z9
	VPANDD          Z14, Z9, Z9
	VPMADDUBSW      0(DI), Z9, Z9
	VPSHUFB         Z16, Z4, Z11
	VPMADDWD        Z11, Z9, Z8

	VBROADCASTI64X4 48(AX), Z10
	VPSRLVW         Z15, Z10, Z10
	VPANDD          Z14, Z10, Z10
	VPMADDUBSW      64(DI), Z10, Z10
	VPSHUFB         Z17, Z4, Z12
	VPMADDWD        Z12, Z10, Z13

	VBROADCASTI64X4 80(AX), Z9
	VPSRLVW         Z15, Z9, Z9
	VPANDD          Z14, Z9, Z9
	VPMADDUBSW      128(DI), Z9, Z9
	VPSHUFB         Z18, Z4, Z11
	VPDPWSSD        Z11, Z9, Z8

	VBROADCASTI64X4 112(AX), Z10
	VPSRLVW         Z15, Z10, Z10
	VPANDD          Z14, Z10, Z10
	VPMADDUBSW      192(DI), Z10, Z10
	VPSHUFB         Z19, Z4, Z12
	VPDPWSSD        Z12, Z10, Z13

	VPADDD        Z13, Z8, Z8
	VEXTRACTI64X4 $1, Z8, Y9
	VPADDD        Y9, Y8, Y8
	VINSERTI64X4  $1, Y5, Z8, Z8
	VCVTDQ2PS     Z8, Z8
	VFMADD231PS   Z2, Z8, Z0

	ADDQ $144, AX
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $16, R9
	DECQ CX
	JNE  q4krblock

	// dotQ4_KAVX2's reduction: the eight sums' halves added, minus the four min sums, two
	// horizontal adds.
	VEXTRACTF32X4 $2, Z0, X1
	VEXTRACTF128  $1, Y0, X2
	VADDPS        X2, X0, X0
	VSUBPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	MOVQ          y+56(FP), BX
	MOVSS         X0, (BX)
	ADDQ          $4, BX
	MOVQ          BX, y+56(FP)
	ADDQ R13, SI
	DECQ R14
	JNE  q4krrow

q4krdone:
	VZEROUPPER
	RET

// func rowsQ4_KAVX512P(w unsafe.Pointer, rowBytes, rows int, qp, d, s32 unsafe.Pointer, nb int, y *float32)
// rowsQ4_KAVX512 with the activation's codes regrouped (qp: Act.QK, permuteQ8K), its result
// bit for bit in fewer vector operations per super-block:
//   - each 64 bytes of nibbles is loaded once: its low nibbles are sub-blocks 4i and 4i + 2,
//     its high nibbles 4i + 1 and 4i + 3 (one VPANDD, or one VPSRLW and one VPANDD), against
//     qp's codes of those sub-blocks (64 contiguous bytes each), where rowsQ4_KAVX512 broadcasts
//     each 32 bytes and shifts them by VPSRLVW;
//   - the scales and mins unpacked in vector registers (K4VEC: six operations, two of them
//     loads, already in every 128-bit lane), where K4SCALAR takes 16 general-register
//     operations and two transfers to vector registers;
//   - [d, dmin] spread before the product with d_a, which comes from a broadcast operand of
//     the multiply (the same products, one load less);
//   - the sums' halves added and the min products put beside them in one VSHUFI64X2 and one
//     masked VPADDD, where an extract, an add and an insert did it.
// Each integer lane sums the same products as rowsQ4_KAVX512's (lane k: every sub-block's
// values 4k…4k+3 times its scale, exact), and the float steps are the same, so the result is
// the same bits (TestQ4_KAVX512Bits, TestRowLoops). About 11 % less thread CPU time per
// super-block in the L2 cache on AMD Zen 5 (3.34–3.39 → 2.99–3.03 ns); neither half alone
// gains there (the vector unpack alone is 3 % slower, the regrouped codes alone even). On
// Intel (Ice Lake and later) VPMULTISHIFTQB and VPTERNLOGD are one µop each, so the unpack is
// four vector µops where K4SCALAR was 16 integer ones, two transfers and two shuffles.
TEXT ·rowsQ4_KAVX512P(SB), NOSPLIT, $0-64
	MOVQ rows+16(FP), R14
	TESTQ R14, R14
	JE   q4kpdone
	MOVQ nb+48(FP), CX
	TESTQ CX, CX
	JE   q4kpdone
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 shiftK4<>(SB), Z15
	VMOVDQU64 shufK4p<>+0(SB), Z16
	VMOVDQU64 shufK4p<>+64(SB), Z17
	VMOVDQU64 shufK4p<>+128(SB), Z18
	VMOVDQU64 shufK4p<>+192(SB), Z19
	VMOVDQU64 k4minp<>(SB), X25
	VMOVDQU64 permK4<>(SB), Z26
	MOVL $0xff, AX
	KMOVW AX, K1
	VBROADCASTI32X4 k4vec<>+0(SB), Z27
	VBROADCASTI32X4 k4vec<>+16(SB), Z28
	VBROADCASTI32X4 k4vec<>+32(SB), Z29
	MOVL $0x3f3f3f3f, AX
	VPBROADCASTD AX, Z30

q4kprow:
	MOVQ  SI, AX
	MOVQ  qp+24(FP), DI
	MOVQ  d+32(FP), R8
	MOVQ  s32+40(FP), R9
	MOVQ  nb+48(FP), CX
	VPXORD Z0, Z0, Z0

q4kpblock:
	// Prefetch 32 KiB ahead (why ahead: beside dotQ8_0AVX2). Over the Q4_K matrices of a 1.1B
	// Q4_K_M file, in 2 MiB pages on an AMD Zen 5 VM, 32 KiB streamed 3–5 % faster than 16 KiB
	// (4 of 4 interleaved rounds, thread CPU); 64 KiB was between them; adding L2 prefetches
	// 48 KiB ahead, or prefetching one line a super-block, was slower.
	PREFETCHT0 32768(AX)
	PREFETCHT0 32832(AX)
	PREFETCHT0 32896(AX)
	// Z2 = [d·d_a ×8, dmin·d_a ×8]
	VMOVD        (AX), X2
	VCVTPH2PS    X2, X2
	VPERMPS      Z2, Z26, Z2
	VMULPS.BCST  (R8), Z2, Z2

	K4VEC(AX, Z4, Z5, Z6)
	// The min words (VPSHUFB zero-extends through X25), times the 32-code sums: min lanes.
	VPSHUFB   X25, X4, X5
	VPMADDWD  (R9), X5, X5

	VPANDD          16(AX), Z14, Z9
	VPMADDUBSW      0(DI), Z9, Z9
	VPSHUFB         Z16, Z4, Z11
	VPMADDWD        Z11, Z9, Z8

	VPSRLW          $4, 16(AX), Z10
	VPANDD          Z14, Z10, Z10
	VPMADDUBSW      64(DI), Z10, Z10
	VPSHUFB         Z17, Z4, Z12
	VPMADDWD        Z12, Z10, Z13

	VPANDD          80(AX), Z14, Z9
	VPMADDUBSW      128(DI), Z9, Z9
	VPSHUFB         Z18, Z4, Z11
	VPDPWSSD        Z11, Z9, Z8

	VPSRLW          $4, 80(AX), Z10
	VPANDD          Z14, Z10, Z10
	VPMADDUBSW      192(DI), Z10, Z10
	VPSHUFB         Z19, Z4, Z12
	VPDPWSSD        Z12, Z10, Z13

	// [high half of the sums, min products] (VSHUFI64X2), plus the low half in lanes 0–7
	// (merge-masked by K1): the eight sums' halves added and the mins beside them.
	VPADDD        Z13, Z8, Z8
	VSHUFI64X2    $0x4e, Z5, Z8, Z9
	VPADDD        Z8, Z9, K1, Z9
	VCVTDQ2PS     Z9, Z8
	VFMADD231PS   Z2, Z8, Z0

	ADDQ $144, AX
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $16, R9
	DECQ CX
	JNE  q4kpblock

	// dotQ4_KAVX2's reduction: the eight sums' halves added, minus the four min sums, two
	// horizontal adds.
	VEXTRACTF32X4 $2, Z0, X1
	VEXTRACTF128  $1, Y0, X2
	VADDPS        X2, X0, X0
	VSUBPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	MOVQ          y+56(FP), BX
	MOVSS         X0, (BX)
	ADDQ          $4, BX
	MOVQ          BX, y+56(FP)
	ADDQ R13, SI
	DECQ R14
	JNE  q4kprow

q4kpdone:
	VZEROUPPER
	RET

// func dotQ6_KAVX2(w, q, d, bs unsafe.Pointer, nb int) float32
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bs+24(FP), R9
	MOVQ nb+32(FP), CX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x30303030, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU shufQ6<>(SB), Y12
	VPCMPEQD Y2, Y2, Y2
	VPSRLD   $31, Y2, Y2
	VXORPS Y0, Y0, Y0

q6kblock:
	TESTQ CX, CX
	JE    q6kdone
	VPMOVSXBW 192(SI), Y4
	VPMADDWD  (R9), Y4, Y5
	VPSLLD    $5, Y5, Y5
	VPXOR     Y8, Y8, Y8
	VPSUBD    Y5, Y8, Y8
	VPXOR     Y3, Y3, Y3

	VMOVDQU 0(SI), Y9
	VMOVDQU 32(SI), Y10
	VMOVDQU 128(SI), Y11

	VPAND Y14, Y9, Y6
	VPSLLW $4, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 0(DI), Y6, Y6
	VPERMD     Y4, Y3, Y15
	VPSHUFB    Y12, Y15, Y15
	VPADDD     Y2, Y3, Y3
	VPMADDWD   Y15, Y6, Y6
	VPADDD     Y6, Y8, Y8

	VPAND Y14, Y10, Y6
	VPSLLW $2, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 32(DI), Y6, Y6
	VPERMD     Y4, Y3, Y15
	VPSHUFB    Y12, Y15, Y15
	VPADDD     Y2, Y3, Y3
	VPMADDWD   Y15, Y6, Y6
	VPADDD     Y6, Y8, Y8

	VPSRLW $4, Y9, Y6
	VPAND  Y14, Y6, Y6
	VPAND  Y13, Y11, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 64(DI), Y6, Y6
	VPERMD     Y4, Y3, Y15
	VPSHUFB    Y12, Y15, Y15
	VPADDD     Y2, Y3, Y3
	VPMADDWD   Y15, Y6, Y6
	VPADDD     Y6, Y8, Y8

	VPSRLW $4, Y10, Y6
	VPAND  Y14, Y6, Y6
	VPSRLW $2, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 96(DI), Y6, Y6
	VPERMD     Y4, Y3, Y15
	VPSHUFB    Y12, Y15, Y15
	VPADDD     Y2, Y3, Y3
	VPMADDWD   Y15, Y6, Y6
	VPADDD     Y6, Y8, Y8

	VMOVDQU 64(SI), Y9
	VMOVDQU 96(SI), Y10
	VMOVDQU 160(SI), Y11

	VPAND Y14, Y9, Y6
	VPSLLW $4, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 128(DI), Y6, Y6
	VPERMD     Y4, Y3, Y15
	VPSHUFB    Y12, Y15, Y15
	VPADDD     Y2, Y3, Y3
	VPMADDWD   Y15, Y6, Y6
	VPADDD     Y6, Y8, Y8

	VPAND Y14, Y10, Y6
	VPSLLW $2, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 160(DI), Y6, Y6
	VPERMD     Y4, Y3, Y15
	VPSHUFB    Y12, Y15, Y15
	VPADDD     Y2, Y3, Y3
	VPMADDWD   Y15, Y6, Y6
	VPADDD     Y6, Y8, Y8

	VPSRLW $4, Y9, Y6
	VPAND  Y14, Y6, Y6
	VPAND  Y13, Y11, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 192(DI), Y6, Y6
	VPERMD     Y4, Y3, Y15
	VPSHUFB    Y12, Y15, Y15
	VPADDD     Y2, Y3, Y3
	VPMADDWD   Y15, Y6, Y6
	VPADDD     Y6, Y8, Y8

	VPSRLW $4, Y10, Y6
	VPAND  Y14, Y6, Y6
	VPSRLW $2, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 224(DI), Y6, Y6
	VPERMD     Y4, Y3, Y15
	VPSHUFB    Y12, Y15, Y15
	VPADDD     Y2, Y3, Y3
	VPMADDWD   Y15, Y6, Y6
	VPADDD     Y6, Y8, Y8

	VCVTDQ2PS    Y8, Y8
	MOVWLZX      208(SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VFMADD231PS  Y5, Y8, Y0
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JMP  q6kblock

q6kdone:
	VEXTRACTF128 $1, Y0, X2
	VADDPS       X2, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+40(FP)
	RET


DATA shufK4<>+0(SB)/8, $0x0100010001000100
DATA shufK4<>+8(SB)/8, $0x0100010001000100
DATA shufK4<>+16(SB)/8, $0x0100010001000100
DATA shufK4<>+24(SB)/8, $0x0100010001000100
DATA shufK4<>+32(SB)/8, $0x0302030203020302
DATA shufK4<>+40(SB)/8, $0x0302030203020302
DATA shufK4<>+48(SB)/8, $0x0302030203020302
DATA shufK4<>+56(SB)/8, $0x0302030203020302
DATA shufK4<>+64(SB)/8, $0x0504050405040504
DATA shufK4<>+72(SB)/8, $0x0504050405040504
DATA shufK4<>+80(SB)/8, $0x0504050405040504
DATA shufK4<>+88(SB)/8, $0x0504050405040504
DATA shufK4<>+96(SB)/8, $0x0706070607060706
DATA shufK4<>+104(SB)/8, $0x0706070607060706
DATA shufK4<>+112(SB)/8, $0x0706070607060706
DATA shufK4<>+120(SB)/8, $0x0706070607060706
DATA shufK4<>+128(SB)/8, $0x0908090809080908
DATA shufK4<>+136(SB)/8, $0x0908090809080908
DATA shufK4<>+144(SB)/8, $0x0908090809080908
DATA shufK4<>+152(SB)/8, $0x0908090809080908
DATA shufK4<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufK4<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufK4<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufK4<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufK4<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufK4<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufK4<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufK4<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufK4<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA shufK4<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA shufK4<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA shufK4<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL shufK4<>(SB), RODATA|NOPTR, $256

// shufK4b is rowsQ4_KAVX512's scale spreads: for 64 codes j (64 bytes each), scale byte 2j as
// words in the low 32 bytes, 2j + 1 in the high 32 (0x80 zeroes the high byte).
DATA shufK4b<>+0(SB)/8, $0x8000800080008000
DATA shufK4b<>+8(SB)/8, $0x8000800080008000
DATA shufK4b<>+16(SB)/8, $0x8000800080008000
DATA shufK4b<>+24(SB)/8, $0x8000800080008000
DATA shufK4b<>+32(SB)/8, $0x8001800180018001
DATA shufK4b<>+40(SB)/8, $0x8001800180018001
DATA shufK4b<>+48(SB)/8, $0x8001800180018001
DATA shufK4b<>+56(SB)/8, $0x8001800180018001
DATA shufK4b<>+64(SB)/8, $0x8002800280028002
DATA shufK4b<>+72(SB)/8, $0x8002800280028002
DATA shufK4b<>+80(SB)/8, $0x8002800280028002
DATA shufK4b<>+88(SB)/8, $0x8002800280028002
DATA shufK4b<>+96(SB)/8, $0x8003800380038003
DATA shufK4b<>+104(SB)/8, $0x8003800380038003
DATA shufK4b<>+112(SB)/8, $0x8003800380038003
DATA shufK4b<>+120(SB)/8, $0x8003800380038003
DATA shufK4b<>+128(SB)/8, $0x8004800480048004
DATA shufK4b<>+136(SB)/8, $0x8004800480048004
DATA shufK4b<>+144(SB)/8, $0x8004800480048004
DATA shufK4b<>+152(SB)/8, $0x8004800480048004
DATA shufK4b<>+160(SB)/8, $0x8005800580058005
DATA shufK4b<>+168(SB)/8, $0x8005800580058005
DATA shufK4b<>+176(SB)/8, $0x8005800580058005
DATA shufK4b<>+184(SB)/8, $0x8005800580058005
DATA shufK4b<>+192(SB)/8, $0x8006800680068006
DATA shufK4b<>+200(SB)/8, $0x8006800680068006
DATA shufK4b<>+208(SB)/8, $0x8006800680068006
DATA shufK4b<>+216(SB)/8, $0x8006800680068006
DATA shufK4b<>+224(SB)/8, $0x8007800780078007
DATA shufK4b<>+232(SB)/8, $0x8007800780078007
DATA shufK4b<>+240(SB)/8, $0x8007800780078007
DATA shufK4b<>+248(SB)/8, $0x8007800780078007
GLOBL shufK4b<>(SB), RODATA|NOPTR, $256

// permK4 is rowsQ4_KAVX512's spread of [d·d_a, dmin·d_a] over 8 + 8 lanes.
DATA permK4<>+0(SB)/8, $0
DATA permK4<>+8(SB)/8, $0
DATA permK4<>+16(SB)/8, $0
DATA permK4<>+24(SB)/8, $0
DATA permK4<>+32(SB)/8, $0x0000000100000001
DATA permK4<>+40(SB)/8, $0x0000000100000001
DATA permK4<>+48(SB)/8, $0x0000000100000001
DATA permK4<>+56(SB)/8, $0x0000000100000001
GLOBL permK4<>(SB), RODATA|NOPTR, $64

// k4min is rowsQ4_KAVX512's zero-extending spread of the min bytes (8..15) as words.
DATA k4min<>+0(SB)/8, $0x800b800a80098008
DATA k4min<>+8(SB)/8, $0x800f800e800d800c
GLOBL k4min<>(SB), RODATA|NOPTR, $16

// k4vec is K4VEC's per-lane constants: the VPMULTISHIFTQB bit offsets of the b-window (low
// qword: the bytes as they are; high qword: the low nibbles of b8..b11, then their high
// nibbles), of the broadcast b0..b7 (each byte's top two bits to bits 4–5), and the VPTERNLOGD
// mask (bits taken from the second: 0x30 in the high qword).
DATA k4vec<>+0(SB)/8, $0x3830282018100800
DATA k4vec<>+8(SB)/8, $0x1c140c0418100800
DATA k4vec<>+16(SB)/8, $0x3a322a221a120a02
DATA k4vec<>+24(SB)/8, $0x3a322a221a120a02
DATA k4vec<>+32(SB)/8, $0
DATA k4vec<>+40(SB)/8, $0x3030303030303030
GLOBL k4vec<>(SB), RODATA|NOPTR, $48

// shufK4p is rowsQ4_KAVX512P's scale spreads from K4VEC's bytes (scale i at byte i for i < 4,
// 4 + i for i ≥ 4): for its 64-code steps, sub-blocks (0, 2), (1, 3), (4, 6), (5, 7) as words in
// the low and high 32 bytes (0x80 zeroes the high byte).
DATA shufK4p<>+0(SB)/8, $0x8000800080008000
DATA shufK4p<>+8(SB)/8, $0x8000800080008000
DATA shufK4p<>+16(SB)/8, $0x8000800080008000
DATA shufK4p<>+24(SB)/8, $0x8000800080008000
DATA shufK4p<>+32(SB)/8, $0x8002800280028002
DATA shufK4p<>+40(SB)/8, $0x8002800280028002
DATA shufK4p<>+48(SB)/8, $0x8002800280028002
DATA shufK4p<>+56(SB)/8, $0x8002800280028002
DATA shufK4p<>+64(SB)/8, $0x8001800180018001
DATA shufK4p<>+72(SB)/8, $0x8001800180018001
DATA shufK4p<>+80(SB)/8, $0x8001800180018001
DATA shufK4p<>+88(SB)/8, $0x8001800180018001
DATA shufK4p<>+96(SB)/8, $0x8003800380038003
DATA shufK4p<>+104(SB)/8, $0x8003800380038003
DATA shufK4p<>+112(SB)/8, $0x8003800380038003
DATA shufK4p<>+120(SB)/8, $0x8003800380038003
DATA shufK4p<>+128(SB)/8, $0x8008800880088008
DATA shufK4p<>+136(SB)/8, $0x8008800880088008
DATA shufK4p<>+144(SB)/8, $0x8008800880088008
DATA shufK4p<>+152(SB)/8, $0x8008800880088008
DATA shufK4p<>+160(SB)/8, $0x800a800a800a800a
DATA shufK4p<>+168(SB)/8, $0x800a800a800a800a
DATA shufK4p<>+176(SB)/8, $0x800a800a800a800a
DATA shufK4p<>+184(SB)/8, $0x800a800a800a800a
DATA shufK4p<>+192(SB)/8, $0x8009800980098009
DATA shufK4p<>+200(SB)/8, $0x8009800980098009
DATA shufK4p<>+208(SB)/8, $0x8009800980098009
DATA shufK4p<>+216(SB)/8, $0x8009800980098009
DATA shufK4p<>+224(SB)/8, $0x800b800b800b800b
DATA shufK4p<>+232(SB)/8, $0x800b800b800b800b
DATA shufK4p<>+240(SB)/8, $0x800b800b800b800b
DATA shufK4p<>+248(SB)/8, $0x800b800b800b800b
GLOBL shufK4p<>(SB), RODATA|NOPTR, $256

// k4minp is rowsQ4_KAVX512P's zero-extending spread of K4VEC's min bytes (4..7, 12..15) as words.
DATA k4minp<>+0(SB)/8, $0x8007800680058004
DATA k4minp<>+8(SB)/8, $0x800f800e800d800c
GLOBL k4minp<>(SB), RODATA|NOPTR, $16

// shiftK4 is the 64-byte Q4_K kernels' VPSRLVW counts: 0 for the 16 low words, 4 for the 16 high ones.
DATA shiftK4<>+0(SB)/8, $0
DATA shiftK4<>+8(SB)/8, $0
DATA shiftK4<>+16(SB)/8, $0
DATA shiftK4<>+24(SB)/8, $0
DATA shiftK4<>+32(SB)/8, $0x0004000400040004
DATA shiftK4<>+40(SB)/8, $0x0004000400040004
DATA shiftK4<>+48(SB)/8, $0x0004000400040004
DATA shiftK4<>+56(SB)/8, $0x0004000400040004
GLOBL shiftK4<>(SB), RODATA|NOPTR, $64

DATA shufQ6<>+0(SB)/8, $0x0100010001000100
DATA shufQ6<>+8(SB)/8, $0x0100010001000100
DATA shufQ6<>+16(SB)/8, $0x0302030203020302
DATA shufQ6<>+24(SB)/8, $0x0302030203020302
GLOBL shufQ6<>(SB), RODATA|NOPTR, $32

// K4TOK runs token t of dotQ4_Kx4AVX512 (DT its d, BS its code sums, Q its codes; F, M, ACC
// its float, min and integer accumulators): the float steps of dotQ4_KAVX2 on the shared
// unpacked super-block (codes Z20…Z23, scale words Z16…Z19, mins X5, d and dmin in X12).
#define K4TOK(DT, BS, Q, F, M, ACC, YACC) \
	VBROADCASTSS DT, X13; \
	VMULPS X13, X12, X6; \
	VMOVDQU BS, Y7; \
	VEXTRACTI128 $1, Y7, X9; \
	VPHADDW X9, X7, X7; \
	VPMADDWD X7, X5, X9; \
	VCVTDQ2PS X9, X9; \
	VPSHUFD $0x55, X6, X10; \
	VFMADD231PS X10, X9, M; \
	VPXORD ACC, ACC, ACC; \
	VPMADDUBSW 0 Q, Z20, Z11; \
	VPDPWSSD Z16, Z11, ACC; \
	VPMADDUBSW 64 Q, Z21, Z11; \
	VPDPWSSD Z17, Z11, ACC; \
	VPMADDUBSW 128 Q, Z22, Z11; \
	VPDPWSSD Z18, Z11, ACC; \
	VPMADDUBSW 192 Q, Z23, Z11; \
	VPDPWSSD Z19, Z11, ACC; \
	VEXTRACTI64X4 $1, ACC, Y9; \
	VPADDD Y9, YACC, YACC; \
	VCVTDQ2PS YACC, YACC; \
	VBROADCASTSS X6, Y9; \
	VFMADD231PS Y9, YACC, F

// K4CODES unpacks the 32 bytes of nibbles at OFF(SI) (both halves: low nibbles, high nibbles)
// into Z, and spreads the scale words of its two sub-blocks (shufK4 at SH(R12)) into S.
#define K4CODES(OFF, SH, Z, S) \
	VBROADCASTI64X4 OFF(SI), Z; \
	VPSRLVW Z15, Z, Z; \
	VPANDD Z14, Z, Z; \
	VPSHUFB SH(R12), Z4, S

// K4SUM stores token t's sum (dotQ4_KAVX2's reduction of F and M) at OUT.
#define K4SUM(F, X, M, OUT) \
	VEXTRACTF128 $1, F, X4; \
	VADDPS X4, X, X; \
	VSUBPS M, X, X; \
	VHADDPS X, X, X; \
	VHADDPS X, X, X; \
	VMOVSS X, OUT

// func dotQ4_Kx4AVX512(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32)
// rowsQ4_KAVX512 for four tokens (token t's codes at q + t·qstride, scales at d + t·dstride,
// code sums at bs + t·bstride), each super-block's codes, scales and mins unpacked once for the
// four: every token's result is the bits rowsQ4_KAVX512 returns for it alone (an invariant pair).
TEXT ·dotQ4_Kx4AVX512(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bs+24(FP), R9
	MOVQ nb+32(FP), CX
	MOVQ qstride+40(FP), R10
	MOVQ dstride+48(FP), R11
	MOVQ bstride+56(FP), R15
	LEAQ shufK4<>(SB), R12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Z14
	VMOVDQU64 shiftK4<>(SB), Z15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y24, Y24, Y24
	VXORPS Y25, Y25, Y25
	VXORPS Y26, Y26, Y26
	VXORPS Y27, Y27, Y27

q4kx4block:
	TESTQ CX, CX
	JE    q4kx4done
	MOVL      (SI), AX
	VMOVD     AX, X12
	VCVTPH2PS X12, X12

	K4SCALAR(SI, AX, BX, R13, R14)
	VPMOVZXBW    X7, Y6
	VSHUFI32X4   $0, Z6, Z6, Z4
	VEXTRACTI128 $1, Y6, X5

	K4CODES(16, 0, Z20, Z16)
	K4CODES(48, 64, Z21, Z17)
	K4CODES(80, 128, Z22, Z18)
	K4CODES(112, 192, Z23, Z19)

	K4TOK((R8), (R9), (DI), Y0, X24, Z28, Y28)
	K4TOK((R8)(R11*1), (R9)(R15*1), (DI)(R10*1), Y1, X25, Z29, Y29)
	K4TOK((R8)(R11*2), (R9)(R15*2), (DI)(R10*2), Y2, X26, Z30, Y30)
	LEAQ (R11)(R11*2), AX
	LEAQ (R15)(R15*2), BX
	LEAQ (R10)(R10*2), DX
	K4TOK((R8)(AX*1), (R9)(BX*1), (DI)(DX*1), Y3, X27, Z31, Y31)
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JMP  q4kx4block

q4kx4done:
	MOVQ out+64(FP), DX
	K4SUM(Y0, X0, X24, 0(DX))
	K4SUM(Y1, X1, X25, 4(DX))
	K4SUM(Y2, X2, X26, 8(DX))
	K4SUM(Y3, X3, X27, 12(DX))
	VZEROUPPER
	RET
