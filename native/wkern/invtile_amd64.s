//go:build amd64 && !purego

#include "textflag.h"

// The batch-invariant Q4_0 and Q8_0 tiles for CPUs with AVX-512 VNNI (invtile_amd64.go): 16
// weight rows, one per zmm lane, times 8, 4, 2 or 1 tokens. Per block the rows' 32 codes are
// loaded straight from the matrix and transposed in registers (rows 4k+m of the four 128-bit
// loads A_m land in lane 4k+m of Z16…Z23, register g holding codes 4g…4g+3 as unsigned bytes:
// Q4_0's nibbles, Q8_0's codes + 128); the 16 block scales come by one gather. Then per token
//
//	i   = c_t + Σ_g VPDPBUSD(codes_g, q_t[4g…4g+3])   (exact; c_t = −off·Σq_t)
//	acc = fma(float32(i)·d_t, dw, acc)
//
// in block order, one accumulator per token: the same operations whatever the number of tokens
// in the tile. Tokens are at q + t·qstride; the x8/x4/x2 kernels read d_t at ds[16b + t] and c_t
// at ds[16b + 8 + t], the x1 kernel d at d[b] and Σq at qs[b]. y[t·ystride + i] = acc_t lane i.

// LOAD4 loads lane k of Z from row 4k+m's 16 bytes (the four addresses).
#define LOAD4(A0, A1, A2, A3, Z, X) \
	VMOVDQU32 A0, X; \
	VINSERTI32X4 $1, A1, Z, Z; \
	VINSERTI32X4 $2, A2, Z, Z; \
	VINSERTI32X4 $3, A3, Z, Z

// TRANS transposes the dwords of each 128-bit lane of A0…A3 into T0…T3 (A0, A1, U0, U1 are
// clobbered).
#define TRANS(A0, A1, A2, A3, T0, T1, T2, T3, U0, U1) \
	VPUNPCKLDQ A1, A0, U0; \
	VPUNPCKHDQ A1, A0, U1; \
	VPUNPCKLDQ A3, A2, A0; \
	VPUNPCKHDQ A3, A2, A1; \
	VPUNPCKLQDQ A0, U0, T0; \
	VPUNPCKHQDQ A0, U0, T1; \
	VPUNPCKLQDQ A1, U1, T2; \
	VPUNPCKHQDQ A1, U1, T3

// SCALES gathers the 16 rows' f16 block scales (row i at SI + Z12[i]) into Z24 as float32.
#define SCALES \
	KXNORW K1, K1, K1; \
	VPGATHERDD (SI)(Z12*1), K1, Z24; \
	VPMOVDW Z24, Y24; \
	VCVTPH2PS Y24, Z24

// PREFQ4 and PREFQ8 prefetch the next 16-row group (contiguous, from R14) a block's share
// per block: 16 interleaved row streams are more than the hardware prefetchers follow, the
// next group is one sequential stream.
#define PREFQ4 \
	PREFETCHT0 0(R14); \
	PREFETCHT0 64(R14); \
	PREFETCHT0 128(R14); \
	PREFETCHT0 192(R14); \
	PREFETCHT0 256(R14); \
	ADDQ $288, R14

#define PREFQ8 \
	PREFETCHT0 0(R14); \
	PREFETCHT0 64(R14); \
	PREFETCHT0 128(R14); \
	PREFETCHT0 192(R14); \
	PREFETCHT0 256(R14); \
	PREFETCHT0 320(R14); \
	PREFETCHT0 384(R14); \
	PREFETCHT0 448(R14); \
	PREFETCHT0 512(R14); \
	ADDQ $544, R14

// Row pointers: SI, R11, R12, R13 rows 0, 4, 8, 12 at the current block; BX rowBytes, AX 3·rowBytes.
#define PACKQ4 \
	PREFQ4; \
	LOAD4(2(SI), 2(R11), 2(R12), 2(R13), Z25, X25); \
	LOAD4(2(SI)(BX*1), 2(R11)(BX*1), 2(R12)(BX*1), 2(R13)(BX*1), Z26, X26); \
	LOAD4(2(SI)(BX*2), 2(R11)(BX*2), 2(R12)(BX*2), 2(R13)(BX*2), Z27, X27); \
	LOAD4(2(SI)(AX*1), 2(R11)(AX*1), 2(R12)(AX*1), 2(R13)(AX*1), Z28, X28); \
	TRANS(Z25, Z26, Z27, Z28, Z16, Z17, Z18, Z19, Z29, Z30); \
	VPSRLD $4, Z16, Z20; \
	VPSRLD $4, Z17, Z21; \
	VPSRLD $4, Z18, Z22; \
	VPSRLD $4, Z19, Z23; \
	VPANDD Z13, Z16, Z16; \
	VPANDD Z13, Z17, Z17; \
	VPANDD Z13, Z18, Z18; \
	VPANDD Z13, Z19, Z19; \
	VPANDD Z13, Z20, Z20; \
	VPANDD Z13, Z21, Z21; \
	VPANDD Z13, Z22, Z22; \
	VPANDD Z13, Z23, Z23; \
	SCALES; \
	ADDQ $18, SI; \
	ADDQ $18, R11; \
	ADDQ $18, R12; \
	ADDQ $18, R13

#define PACKQ8 \
	PREFQ8; \
	LOAD4(2(SI), 2(R11), 2(R12), 2(R13), Z25, X25); \
	LOAD4(2(SI)(BX*1), 2(R11)(BX*1), 2(R12)(BX*1), 2(R13)(BX*1), Z26, X26); \
	LOAD4(2(SI)(BX*2), 2(R11)(BX*2), 2(R12)(BX*2), 2(R13)(BX*2), Z27, X27); \
	LOAD4(2(SI)(AX*1), 2(R11)(AX*1), 2(R12)(AX*1), 2(R13)(AX*1), Z28, X28); \
	TRANS(Z25, Z26, Z27, Z28, Z16, Z17, Z18, Z19, Z29, Z30); \
	LOAD4(18(SI), 18(R11), 18(R12), 18(R13), Z25, X25); \
	LOAD4(18(SI)(BX*1), 18(R11)(BX*1), 18(R12)(BX*1), 18(R13)(BX*1), Z26, X26); \
	LOAD4(18(SI)(BX*2), 18(R11)(BX*2), 18(R12)(BX*2), 18(R13)(BX*2), Z27, X27); \
	LOAD4(18(SI)(AX*1), 18(R11)(AX*1), 18(R12)(AX*1), 18(R13)(AX*1), Z28, X28); \
	TRANS(Z25, Z26, Z27, Z28, Z20, Z21, Z22, Z23, Z29, Z30); \
	VPXORD Z13, Z16, Z16; \
	VPXORD Z13, Z17, Z17; \
	VPXORD Z13, Z18, Z18; \
	VPXORD Z13, Z19, Z19; \
	VPXORD Z13, Z20, Z20; \
	VPXORD Z13, Z21, Z21; \
	VPXORD Z13, Z22, Z22; \
	VPXORD Z13, Z23, Z23; \
	SCALES; \
	ADDQ $34, SI; \
	ADDQ $34, R11; \
	ADDQ $34, R12; \
	ADDQ $34, R13

// DOT adds token Q's 32 codes times the packed block to the dwords of ZT.
#define DOT(Q, ZT) \
	VPDPBUSD.BCST 0 Q, Z16, ZT; \
	VPDPBUSD.BCST 4 Q, Z17, ZT; \
	VPDPBUSD.BCST 8 Q, Z18, ZT; \
	VPDPBUSD.BCST 12 Q, Z19, ZT; \
	VPDPBUSD.BCST 16 Q, Z20, ZT; \
	VPDPBUSD.BCST 20 Q, Z21, ZT; \
	VPDPBUSD.BCST 24 Q, Z22, ZT; \
	VPDPBUSD.BCST 28 Q, Z23, ZT

// TOK runs one token of a multi-token tile: c_t at COFF(DX), d_t at DOFF(DX).
#define TOK(Q, DOFF, COFF, ZT, ZA) \
	VPBROADCASTD COFF(DX), ZT; \
	DOT(Q, ZT); \
	VCVTDQ2PS ZT, ZT; \
	VMULPS.BCST DOFF(DX), ZT, ZT; \
	VFMADD231PS Z24, ZT, ZA

// SETUP loads the arguments shared by every kernel (w, rowBytes, idx, q, qstride, nb) and
// the byte constant MASK into Z13.
#define SETUP(MASK) \
	MOVQ w+0(FP), SI; \
	MOVQ rowBytes+8(FP), BX; \
	LEAQ (BX)(BX*2), AX; \
	LEAQ (SI)(BX*4), R11; \
	LEAQ (R11)(BX*4), R12; \
	LEAQ (R12)(BX*4), R13; \
	LEAQ (R13)(BX*4), R14; \
	MOVQ idx+16(FP), CX; \
	VMOVDQU32 (CX), Z12; \
	MOVL MASK, CX; \
	VPBROADCASTD CX, Z13; \
	MOVQ q+24(FP), DI; \
	MOVQ qstride+32(FP), R8; \
	LEAQ (DI)(R8*2), R9; \
	ADDQ R8, R9; \
	LEAQ (R9)(R8*2), R10; \
	ADDQ R8, R10; \
	MOVQ ds+40(FP), DX; \
	MOVQ nb+48(FP), CX

// Token addresses: t0 (DI), t1 (DI)(R8*1), t2 (DI)(R8*2), t3 (R9), t4 (DI)(R8*4),
// t5 (R9)(R8*2), t6 (R10), t7 (R10)(R8*1).
#define ADVQ \
	ADDQ $32, DI; \
	ADDQ $32, R9; \
	ADDQ $32, R10; \
	ADDQ $64, DX

#define YSETUP \
	MOVQ y+56(FP), DI; \
	MOVQ ystride+64(FP), R8; \
	SHLQ $2, R8

#define ST(Z) \
	VMOVUPS Z, (DI); \
	ADDQ R8, DI

#define TOKS8 \
	TOK((DI), 0, 32, Z8, Z0); \
	TOK((DI)(R8*1), 4, 36, Z9, Z1); \
	TOK((DI)(R8*2), 8, 40, Z10, Z2); \
	TOK((R9), 12, 44, Z11, Z3); \
	TOK((DI)(R8*4), 16, 48, Z8, Z4); \
	TOK((R9)(R8*2), 20, 52, Z9, Z5); \
	TOK((R10), 24, 56, Z10, Z6); \
	TOK((R10)(R8*1), 28, 60, Z11, Z7)

#define TOKS4 \
	TOK((DI), 0, 32, Z8, Z0); \
	TOK((DI)(R8*1), 4, 36, Z9, Z1); \
	TOK((DI)(R8*2), 8, 40, Z10, Z2); \
	TOK((R9), 12, 44, Z11, Z3)

#define TOKS2 \
	TOK((DI), 0, 32, Z8, Z0); \
	TOK((DI)(R8*1), 4, 36, Z9, Z1)

#define ZERO8 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7

// func invQ4_0x8(w unsafe.Pointer, rowBytes int, idx *[16]int32, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ4_0x8(SB), NOSPLIT, $0-72
	SETUP($0x0f0f0f0f)
	ZERO8
q4x8loop:
	PACKQ4
	TOKS8
	ADVQ
	DECQ CX
	JNZ q4x8loop
	YSETUP
	ST(Z0)
	ST(Z1)
	ST(Z2)
	ST(Z3)
	ST(Z4)
	ST(Z5)
	ST(Z6)
	ST(Z7)
	VZEROUPPER
	RET

// func invQ4_0x4(w unsafe.Pointer, rowBytes int, idx *[16]int32, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ4_0x4(SB), NOSPLIT, $0-72
	SETUP($0x0f0f0f0f)
	ZERO8
q4x4loop:
	PACKQ4
	TOKS4
	ADVQ
	DECQ CX
	JNZ q4x4loop
	YSETUP
	ST(Z0)
	ST(Z1)
	ST(Z2)
	ST(Z3)
	VZEROUPPER
	RET

// func invQ4_0x2(w unsafe.Pointer, rowBytes int, idx *[16]int32, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ4_0x2(SB), NOSPLIT, $0-72
	SETUP($0x0f0f0f0f)
	ZERO8
q4x2loop:
	PACKQ4
	TOKS2
	ADVQ
	DECQ CX
	JNZ q4x2loop
	YSETUP
	ST(Z0)
	ST(Z1)
	VZEROUPPER
	RET

// func invQ8_0x8(w unsafe.Pointer, rowBytes int, idx *[16]int32, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ8_0x8(SB), NOSPLIT, $0-72
	SETUP($0x80808080)
	ZERO8
q8x8loop:
	PACKQ8
	TOKS8
	ADVQ
	DECQ CX
	JNZ q8x8loop
	YSETUP
	ST(Z0)
	ST(Z1)
	ST(Z2)
	ST(Z3)
	ST(Z4)
	ST(Z5)
	ST(Z6)
	ST(Z7)
	VZEROUPPER
	RET

// func invQ8_0x4(w unsafe.Pointer, rowBytes int, idx *[16]int32, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ8_0x4(SB), NOSPLIT, $0-72
	SETUP($0x80808080)
	ZERO8
q8x4loop:
	PACKQ8
	TOKS4
	ADVQ
	DECQ CX
	JNZ q8x4loop
	YSETUP
	ST(Z0)
	ST(Z1)
	ST(Z2)
	ST(Z3)
	VZEROUPPER
	RET

// func invQ8_0x2(w unsafe.Pointer, rowBytes int, idx *[16]int32, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ8_0x2(SB), NOSPLIT, $0-72
	SETUP($0x80808080)
	ZERO8
q8x2loop:
	PACKQ8
	TOKS2
	ADVQ
	DECQ CX
	JNZ q8x2loop
	YSETUP
	ST(Z0)
	ST(Z1)
	VZEROUPPER
	RET

// TOK1 is TOK for the one-token kernels: d at (DX), Σq at (R9), c = −(Σq << SH) (off = 2^SH).
#define TOK1(SH) \
	VPBROADCASTD (R9), Z8; \
	VPSLLD SH, Z8, Z8; \
	VPSUBD Z8, Z31, Z8; \
	DOT((DI), Z8); \
	VCVTDQ2PS Z8, Z8; \
	VMULPS.BCST (DX), Z8, Z8; \
	VFMADD231PS Z24, Z8, Z0; \
	ADDQ $32, DI; \
	ADDQ $4, DX; \
	ADDQ $4, R9

// SETUP1 is SETUP for the one-token kernels (ds holds d, qstride is the address of Σq).
#define SETUP1(MASK) \
	SETUP(MASK); \
	MOVQ qstride+32(FP), R9; \
	VPXORD Z31, Z31, Z31; \
	VPXORD Z0, Z0, Z0

// func invQ4_0x1(w unsafe.Pointer, rowBytes int, idx *[16]int32, q unsafe.Pointer, qs unsafe.Pointer, d unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ4_0x1(SB), NOSPLIT, $0-72
	SETUP1($0x0f0f0f0f)
q4x1loop:
	PACKQ4
	TOK1($3)
	DECQ CX
	JNZ q4x1loop
	MOVQ y+56(FP), DI
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET

// func invQ8_0x1(w unsafe.Pointer, rowBytes int, idx *[16]int32, q unsafe.Pointer, qs unsafe.Pointer, d unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ8_0x1(SB), NOSPLIT, $0-72
	SETUP1($0x80808080)
q8x1loop:
	PACKQ8
	TOK1($7)
	DECQ CX
	JNZ q8x1loop
	MOVQ y+56(FP), DI
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET
