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

// SCALES loads the 16 rows' f16 block scales (the first two bytes of each row's block) into
// Z24 as float32: the first 16 bytes of each row loaded as LOAD4 does and only dword 0 of each
// transposed (Z25…Z30 clobbered). A VPGATHERDD of the 16 dwords is simpler, but it cost a
// one-token tile ~40 % of its time on AMD Zen 5 (and gathers are slower still on Intel cores
// with the gather-data-sampling microcode).
#define SCALES \
	LOAD4(0(SI), 0(R11), 0(R12), 0(R13), Z25, X25); \
	LOAD4(0(SI)(BX*1), 0(R11)(BX*1), 0(R12)(BX*1), 0(R13)(BX*1), Z26, X26); \
	LOAD4(0(SI)(BX*2), 0(R11)(BX*2), 0(R12)(BX*2), 0(R13)(BX*2), Z27, X27); \
	LOAD4(0(SI)(AX*1), 0(R11)(AX*1), 0(R12)(AX*1), 0(R13)(AX*1), Z28, X28); \
	VPUNPCKLDQ Z26, Z25, Z29; \
	VPUNPCKLDQ Z28, Z27, Z30; \
	VPUNPCKLQDQ Z30, Z29, Z24; \
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
	PACKQ4B(Z13)

// PACKQ4B is PACKQ4 without the prefetch, the nibble mask in M.
#define PACKQ4B(M) \
	LOAD4(2(SI), 2(R11), 2(R12), 2(R13), Z25, X25); \
	LOAD4(2(SI)(BX*1), 2(R11)(BX*1), 2(R12)(BX*1), 2(R13)(BX*1), Z26, X26); \
	LOAD4(2(SI)(BX*2), 2(R11)(BX*2), 2(R12)(BX*2), 2(R13)(BX*2), Z27, X27); \
	LOAD4(2(SI)(AX*1), 2(R11)(AX*1), 2(R12)(AX*1), 2(R13)(AX*1), Z28, X28); \
	TRANS(Z25, Z26, Z27, Z28, Z16, Z17, Z18, Z19, Z29, Z30); \
	VPSRLD $4, Z16, Z20; \
	VPSRLD $4, Z17, Z21; \
	VPSRLD $4, Z18, Z22; \
	VPSRLD $4, Z19, Z23; \
	VPANDD M, Z16, Z16; \
	VPANDD M, Z17, Z17; \
	VPANDD M, Z18, Z18; \
	VPANDD M, Z19, Z19; \
	VPANDD M, Z20, Z20; \
	VPANDD M, Z21, Z21; \
	VPANDD M, Z22, Z22; \
	VPANDD M, Z23, Z23; \
	SCALES; \
	ADDQ $18, SI; \
	ADDQ $18, R11; \
	ADDQ $18, R12; \
	ADDQ $18, R13

#define PACKQ8 \
	PREFQ8; \
	PACKQ8B(Z13)

// PACKQ8B is PACKQ8 without the prefetch, the bias constant in M.
#define PACKQ8B(M) \
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
	VPXORD M, Z16, Z16; \
	VPXORD M, Z17, Z17; \
	VPXORD M, Z18, Z18; \
	VPXORD M, Z19, Z19; \
	VPXORD M, Z20, Z20; \
	VPXORD M, Z21, Z21; \
	VPXORD M, Z22, Z22; \
	VPXORD M, Z23, Z23; \
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

// SETUP loads the arguments shared by every kernel (w, rowBytes, q, qstride, ds, nb) and
// the byte constant MASK into Z13.
#define SETUP(MASK) \
	MOVQ w+0(FP), SI; \
	MOVQ rowBytes+8(FP), BX; \
	LEAQ (BX)(BX*2), AX; \
	LEAQ (SI)(BX*4), R11; \
	LEAQ (R11)(BX*4), R12; \
	LEAQ (R12)(BX*4), R13; \
	LEAQ (R13)(BX*4), R14; \
	MOVL MASK, CX; \
	VPBROADCASTD CX, Z13; \
	MOVQ q+16(FP), DI; \
	MOVQ qstride+24(FP), R8; \
	LEAQ (DI)(R8*2), R9; \
	ADDQ R8, R9; \
	LEAQ (R9)(R8*2), R10; \
	ADDQ R8, R10; \
	MOVQ ds+32(FP), DX; \
	MOVQ nb+40(FP), CX

// Token addresses: t0 (DI), t1 (DI)(R8*1), t2 (DI)(R8*2), t3 (R9), t4 (DI)(R8*4),
// t5 (R9)(R8*2), t6 (R10), t7 (R10)(R8*1).
#define ADVQ \
	ADDQ $32, DI; \
	ADDQ $32, R9; \
	ADDQ $32, R10; \
	ADDQ $64, DX

#define YSETUP \
	MOVQ y+48(FP), DI; \
	MOVQ ystride+56(FP), R8; \
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

// PKSETUP loads a pack's arguments: the sliver DI, rows SI, R11, R12, R13 (0, 4, 8, 12),
// BX rowBytes, AX 3·rowBytes, the byte constant MASK in Z13, the
// offset factor in Z14 and the block count CX.
#define PKSETUP(MASK) \
	MOVQ pk+0(FP), DI; \
	MOVQ w+8(FP), SI; \
	MOVQ rowBytes+16(FP), BX; \
	LEAQ (BX)(BX*2), AX; \
	LEAQ (SI)(BX*4), R11; \
	LEAQ (R11)(BX*4), R12; \
	LEAQ (R12)(BX*4), R13; \
	MOVL MASK, CX; \
	VPBROADCASTD CX, Z13; \
	VBROADCASTSS off+40(FP), Z14; \
	MOVQ nb+32(FP), CX

// PKSTORE writes one packed block (codes Z16…Z23, scales Z24, offsets Z24·Z14) and advances DI.
#define PKSTORE \
	VMOVDQU32 Z16, 0(DI); \
	VMOVDQU32 Z17, 64(DI); \
	VMOVDQU32 Z18, 128(DI); \
	VMOVDQU32 Z19, 192(DI); \
	VMOVDQU32 Z20, 256(DI); \
	VMOVDQU32 Z21, 320(DI); \
	VMOVDQU32 Z22, 384(DI); \
	VMOVDQU32 Z23, 448(DI); \
	VMOVUPS Z24, 512(DI); \
	VMULPS Z14, Z24, Z24; \
	VMOVUPS Z24, 576(DI); \
	ADDQ $640, DI

// LOADT loads 16 bytes at OFF of each of the 16 rows at SI, R11, R12, R13 (rows 0, 4, 8, 12;
// BX rowBytes, AX 3·rowBytes) and transposes them: dword g of row i lands in lane i of Tg
// (Z28…Z31, Z10 and Z11 are clobbered).
#define LOADT(OFF, T0, T1, T2, T3) \
	LOAD4(OFF(SI), OFF(R11), OFF(R12), OFF(R13), Z28, X28); \
	LOAD4(OFF(SI)(BX*1), OFF(R11)(BX*1), OFF(R12)(BX*1), OFF(R13)(BX*1), Z29, X29); \
	LOAD4(OFF(SI)(BX*2), OFF(R11)(BX*2), OFF(R12)(BX*2), OFF(R13)(BX*2), Z30, X30); \
	LOAD4(OFF(SI)(AX*1), OFF(R11)(AX*1), OFF(R12)(AX*1), OFF(R13)(AX*1), Z31, X31); \
	TRANS(Z28, Z29, Z30, Z31, T0, T1, T2, T3, Z10, Z11)

// NIB stores T's low nibbles (Z13 = 0x0f0f0f0f) at LO(DI) and its high nibbles at HI(DI).
#define NIB(T, LO, HI) \
	VPSRLD $4, T, Z8; \
	VPANDD Z13, T, T; \
	VPANDD Z13, Z8, Z8; \
	VMOVDQU32 T, LO(DI); \
	VMOVDQU32 Z8, HI(DI)

// Q4KQS packs the 32 bytes of qs at OFF (64 values: low nibbles sub-block 2k, high 2k+1) into
// the blocks at B(DI) (low) and B+640(DI) (high).
#define Q4KQS(OFF, OFF2, B0, B1, B2, B3, B4, B5, B6, B7, H0, H1, H2, H3, H4, H5, H6, H7) \
	LOADT(OFF, Z16, Z17, Z18, Z19); \
	LOADT(OFF2, Z20, Z21, Z22, Z23); \
	NIB(Z16, B0, H0); \
	NIB(Z17, B1, H1); \
	NIB(Z18, B2, H2); \
	NIB(Z19, B3, H3); \
	NIB(Z20, B4, H4); \
	NIB(Z21, B5, H5); \
	NIB(Z22, B6, H6); \
	NIB(Z23, B7, H7)

// Q4KST converts the scale codes Z24 and min codes Z25 of one sub-block and stores dw = d·sc
// (d in Z21) at DW(DI) and ow = −dmin·m (−dmin in Z22) at OW(DI).
#define Q4KST(DW, OW) \
	VCVTDQ2PS Z24, Z24; \
	VMULPS Z21, Z24, Z24; \
	VMOVUPS Z24, DW(DI); \
	VCVTDQ2PS Z25, Z25; \
	VMULPS Z22, Z25, Z25; \
	VMOVUPS Z25, OW(DI)

// Q4KLO is sub-block j < 4's scales: sc = byte j of q[0…3] (Z16) & 63, m = byte j of q[4…7]
// (Z17) & 63 (Z14 = 63); SH = 8j.
#define Q4KLO(SH, DW, OW) \
	VPSRLD $SH, Z16, Z24; \
	VPANDD Z14, Z24, Z24; \
	VPSRLD $SH, Z17, Z25; \
	VPANDD Z14, Z25, Z25; \
	Q4KST(DW, OW)

// Q4KHI is sub-block 4 + j's scales: sc = (byte j of q[8…11] (Z18) & 15) | (byte j of q[0…3]
// >> 6) << 4, m = (byte j of q[8…11] >> 4) | (byte j of q[4…7] >> 6) << 4 (Z9 = 15, Z15 = 3);
// SH = 8j, SH4 = 8j + 4, SH6 = 8j + 6.
#define Q4KHI(SH, SH4, SH6, DW, OW) \
	VPSRLD $SH, Z18, Z24; \
	VPANDD Z9, Z24, Z24; \
	VPSRLD $SH6, Z16, Z26; \
	VPANDD Z15, Z26, Z26; \
	VPSLLD $4, Z26, Z26; \
	VPORD Z26, Z24, Z24; \
	VPSRLD $SH4, Z18, Z25; \
	VPANDD Z9, Z25, Z25; \
	VPSRLD $SH6, Z17, Z26; \
	VPANDD Z15, Z26, Z26; \
	VPSLLD $4, Z26, Z26; \
	VPORD Z26, Z25, Z25; \
	Q4KST(DW, OW)

// Q6KV stores one 6-bit code word (16 rows): (L >> LS) & 0x0f0f0f0f | ((HB >> HS) & 0x03030303) << 4
// at OUT(DI) (Z13, Z14 the masks).
#define Q6KV(L, LS, HB, HS, OUT) \
	VPSRLD $HS, HB, Z0; \
	VPANDD Z14, Z0, Z0; \
	VPSLLD $4, Z0, Z0; \
	VPSRLD $LS, L, Z1; \
	VPANDD Z13, Z1, Z1; \
	VPORD Z0, Z1, Z1; \
	VMOVDQU32 Z1, OUT(DI)

// Q6KG is dword g of a (n, h) quarter: the four blocks 8n+h, +2, +4, +6 (B0…B3 their byte
// offsets plus 64g).
#define Q6KG(L0, L1, HB, B0, B1, B2, B3) \
	Q6KV(L0, 0, HB, 0, B0); \
	Q6KV(L1, 0, HB, 2, B1); \
	Q6KV(L0, 4, HB, 4, B2); \
	Q6KV(L1, 4, HB, 6, B3)

// Q6KQ packs the quarter (n, h) of a super-block: ql at OL0 and OL1 = OL0 + 32, qh at OH;
// block 8n+h at byte B (blocks of 384 bytes).
#define Q6KQ(OL0, OL1, OH, B00, B01, B02, B03, B10, B11, B12, B13, B20, B21, B22, B23, B30, B31, B32, B33) \
	LOADT(OL0, Z16, Z17, Z18, Z19); \
	LOADT(OL1, Z20, Z21, Z22, Z23); \
	LOADT(OH, Z24, Z25, Z26, Z27); \
	Q6KG(Z16, Z20, Z24, B00, B01, B02, B03); \
	Q6KG(Z17, Z21, Z25, B10, B11, B12, B13); \
	Q6KG(Z18, Z22, Z26, B20, B21, B22, B23); \
	Q6KG(Z19, Z23, Z27, B30, B31, B32, B33)

// Q6KS stores block k's dw = d·sc_k (d in Z2; the int8 scale byte at bit SH of S, SL = 24 − SH)
// and ow = −32·dw (Z3 = −32).
#define Q6KS(S, SL, DW, OW) \
	VPSLLD $SL, S, Z0; \
	VPSRAD $24, Z0, Z0; \
	VCVTDQ2PS Z0, Z0; \
	VMULPS Z2, Z0, Z0; \
	VMOVUPS Z0, DW(DI); \
	VMULPS Z3, Z0, Z0; \
	VMOVUPS Z0, OW(DI)

// KSETUP loads a K-quant pack's arguments (PKSETUP without the offset factor and mask).
#define KSETUP \
	MOVQ pk+0(FP), DI; \
	MOVQ w+8(FP), SI; \
	MOVQ rowBytes+16(FP), BX; \
	LEAQ (BX)(BX*2), AX; \
	LEAQ (SI)(BX*4), R11; \
	LEAQ (R11)(BX*4), R12; \
	LEAQ (R12)(BX*4), R13; \
	MOVQ idx+24(FP), CX; \
	VMOVDQU32 (CX), Z12; \
	MOVL $0x0f0f0f0f, CX; \
	VPBROADCASTD CX, Z13; \
	MOVQ nb+32(FP), CX

// SETUP16 is SETUP for the 16-token kernels: the byte constant MASK in Z31 (reloaded per block
// from q4tilemask or q8tilebias, TOKS16 using Z31), token bases DI
// (t0), R9 (t3), R10 (t6), R15 (t8) and R14 (t13) at stride R8, ds (32 values per block: 16 d,
// 16 c) in DX, the block count at cnt-8(SP) and the address of the row group after next in CX.
#define SETUP16(MASK) \
	MOVQ w+0(FP), SI; \
	MOVQ rowBytes+8(FP), BX; \
	LEAQ (BX)(BX*2), AX; \
	LEAQ (SI)(BX*4), R11; \
	LEAQ (R11)(BX*4), R12; \
	LEAQ (R12)(BX*4), R13; \
	MOVL MASK, CX; \
	VPBROADCASTD CX, Z31; \
	MOVQ q+16(FP), DI; \
	MOVQ qstride+24(FP), R8; \
	LEAQ (DI)(R8*2), R9; \
	ADDQ R8, R9; \
	LEAQ (R9)(R8*2), R10; \
	ADDQ R8, R10; \
	LEAQ (DI)(R8*8), R15; \
	LEAQ (R10)(R8*4), R14; \
	ADDQ R8, R14; \
	ADDQ R8, R14; \
	ADDQ R8, R14; \
	MOVQ ds+32(FP), DX; \
	MOVQ nb+40(FP), CX; \
	MOVQ CX, cnt-8(SP); \
	LEAQ (R13)(BX*4), CX; \
	LEAQ (CX)(BX*8), CX; \
	LEAQ (CX)(BX*8), CX

// PREF16 prefetches the 16-row group after next (contiguous, from CX) a block's share (BB bytes)
// per block, as PREFQ4 and PREFQ8 do the next one: 16 interleaved row streams are more than the
// hardware prefetchers follow. Two groups ahead, a 16-token tile's weights arrive from memory in
// time (one group ahead left the tile ~8 % slower on weights streamed from memory than on weights
// in L2). (The block count lives at cnt-8(SP): every register holds a token.)
#define PREF16(BB) \
	PREFETCHT0 0(CX); \
	PREFETCHT0 64(CX); \
	PREFETCHT0 128(CX); \
	PREFETCHT0 192(CX); \
	PREFETCHT0 256(CX); \
	ADDQ $BB, CX

// PREF16Q8 is PREF16 for Q8_0's 544 bytes a block.
#define PREF16Q8 \
	PREFETCHT0 320(CX); \
	PREFETCHT0 384(CX); \
	PREFETCHT0 448(CX); \
	PREFETCHT0 512(CX); \
	PREF16(544)

// Token addresses of the 16-token kernels: t0 (DI), t1 (DI)(R8*1), t2 (DI)(R8*2), t3 (R9),
// t4 (DI)(R8*4), t5 (R9)(R8*2), t6 (R10), t7 (R10)(R8*1), t8 (R15), t9 (R15)(R8*1),
// t10 (R15)(R8*2), t11 (R9)(R8*8), t12 (R15)(R8*4), t13 (R14), t14 (R14)(R8*1), t15 (R14)(R8*2).
// The 16-token tiles run their tokens in three groups of 7, 7 and 2 (Z25…Z31 the integer sums,
// Z31 free once the block is unpacked), the instructions of a group's tokens interleaved: 7
// independent VPDPBUSD chains in flight instead of the one chain of 8 dependent ones that TOK
// issues at a time (VPDPBUSD's latency is 4 cycles and the out-of-order window does not reach
// far enough into the next token's chain to fill two VNNI ports). Each token's own operations
// are TOK's, in TOK's order, so every output is the same bits.
#define TINIT(Q, C, T) VPBROADCASTD C(DX), T
#define TDOT(O, ZG, Q, T) VPDPBUSD.BCST O Q, ZG, T
#define TFIN(D, T, A) \
	VCVTDQ2PS T, T; \
	VMULPS.BCST D(DX), T, T; \
	VFMADD231PS Z24, T, A

// TGROUP1 is tokens 0…6.
#define TGROUP1 \
	TINIT((DI), 64, Z25); \
	TINIT((DI)(R8*1), 68, Z26); \
	TINIT((DI)(R8*2), 72, Z27); \
	TINIT((R9), 76, Z28); \
	TINIT((DI)(R8*4), 80, Z29); \
	TINIT((R9)(R8*2), 84, Z30); \
	TINIT((R10), 88, Z31); \
	TDOT(0, Z16, (DI), Z25); TDOT(0, Z16, (DI)(R8*1), Z26); TDOT(0, Z16, (DI)(R8*2), Z27); TDOT(0, Z16, (R9), Z28); TDOT(0, Z16, (DI)(R8*4), Z29); TDOT(0, Z16, (R9)(R8*2), Z30); TDOT(0, Z16, (R10), Z31); \
	TDOT(4, Z17, (DI), Z25); TDOT(4, Z17, (DI)(R8*1), Z26); TDOT(4, Z17, (DI)(R8*2), Z27); TDOT(4, Z17, (R9), Z28); TDOT(4, Z17, (DI)(R8*4), Z29); TDOT(4, Z17, (R9)(R8*2), Z30); TDOT(4, Z17, (R10), Z31); \
	TDOT(8, Z18, (DI), Z25); TDOT(8, Z18, (DI)(R8*1), Z26); TDOT(8, Z18, (DI)(R8*2), Z27); TDOT(8, Z18, (R9), Z28); TDOT(8, Z18, (DI)(R8*4), Z29); TDOT(8, Z18, (R9)(R8*2), Z30); TDOT(8, Z18, (R10), Z31); \
	TDOT(12, Z19, (DI), Z25); TDOT(12, Z19, (DI)(R8*1), Z26); TDOT(12, Z19, (DI)(R8*2), Z27); TDOT(12, Z19, (R9), Z28); TDOT(12, Z19, (DI)(R8*4), Z29); TDOT(12, Z19, (R9)(R8*2), Z30); TDOT(12, Z19, (R10), Z31); \
	TDOT(16, Z20, (DI), Z25); TDOT(16, Z20, (DI)(R8*1), Z26); TDOT(16, Z20, (DI)(R8*2), Z27); TDOT(16, Z20, (R9), Z28); TDOT(16, Z20, (DI)(R8*4), Z29); TDOT(16, Z20, (R9)(R8*2), Z30); TDOT(16, Z20, (R10), Z31); \
	TDOT(20, Z21, (DI), Z25); TDOT(20, Z21, (DI)(R8*1), Z26); TDOT(20, Z21, (DI)(R8*2), Z27); TDOT(20, Z21, (R9), Z28); TDOT(20, Z21, (DI)(R8*4), Z29); TDOT(20, Z21, (R9)(R8*2), Z30); TDOT(20, Z21, (R10), Z31); \
	TDOT(24, Z22, (DI), Z25); TDOT(24, Z22, (DI)(R8*1), Z26); TDOT(24, Z22, (DI)(R8*2), Z27); TDOT(24, Z22, (R9), Z28); TDOT(24, Z22, (DI)(R8*4), Z29); TDOT(24, Z22, (R9)(R8*2), Z30); TDOT(24, Z22, (R10), Z31); \
	TDOT(28, Z23, (DI), Z25); TDOT(28, Z23, (DI)(R8*1), Z26); TDOT(28, Z23, (DI)(R8*2), Z27); TDOT(28, Z23, (R9), Z28); TDOT(28, Z23, (DI)(R8*4), Z29); TDOT(28, Z23, (R9)(R8*2), Z30); TDOT(28, Z23, (R10), Z31); \
	TFIN(0, Z25, Z0); \
	TFIN(4, Z26, Z1); \
	TFIN(8, Z27, Z2); \
	TFIN(12, Z28, Z3); \
	TFIN(16, Z29, Z4); \
	TFIN(20, Z30, Z5); \
	TFIN(24, Z31, Z6)

// TGROUP2 is tokens 7…13.
#define TGROUP2 \
	TINIT((R10)(R8*1), 92, Z25); \
	TINIT((R15), 96, Z26); \
	TINIT((R15)(R8*1), 100, Z27); \
	TINIT((R15)(R8*2), 104, Z28); \
	TINIT((R9)(R8*8), 108, Z29); \
	TINIT((R15)(R8*4), 112, Z30); \
	TINIT((R14), 116, Z31); \
	TDOT(0, Z16, (R10)(R8*1), Z25); TDOT(0, Z16, (R15), Z26); TDOT(0, Z16, (R15)(R8*1), Z27); TDOT(0, Z16, (R15)(R8*2), Z28); TDOT(0, Z16, (R9)(R8*8), Z29); TDOT(0, Z16, (R15)(R8*4), Z30); TDOT(0, Z16, (R14), Z31); \
	TDOT(4, Z17, (R10)(R8*1), Z25); TDOT(4, Z17, (R15), Z26); TDOT(4, Z17, (R15)(R8*1), Z27); TDOT(4, Z17, (R15)(R8*2), Z28); TDOT(4, Z17, (R9)(R8*8), Z29); TDOT(4, Z17, (R15)(R8*4), Z30); TDOT(4, Z17, (R14), Z31); \
	TDOT(8, Z18, (R10)(R8*1), Z25); TDOT(8, Z18, (R15), Z26); TDOT(8, Z18, (R15)(R8*1), Z27); TDOT(8, Z18, (R15)(R8*2), Z28); TDOT(8, Z18, (R9)(R8*8), Z29); TDOT(8, Z18, (R15)(R8*4), Z30); TDOT(8, Z18, (R14), Z31); \
	TDOT(12, Z19, (R10)(R8*1), Z25); TDOT(12, Z19, (R15), Z26); TDOT(12, Z19, (R15)(R8*1), Z27); TDOT(12, Z19, (R15)(R8*2), Z28); TDOT(12, Z19, (R9)(R8*8), Z29); TDOT(12, Z19, (R15)(R8*4), Z30); TDOT(12, Z19, (R14), Z31); \
	TDOT(16, Z20, (R10)(R8*1), Z25); TDOT(16, Z20, (R15), Z26); TDOT(16, Z20, (R15)(R8*1), Z27); TDOT(16, Z20, (R15)(R8*2), Z28); TDOT(16, Z20, (R9)(R8*8), Z29); TDOT(16, Z20, (R15)(R8*4), Z30); TDOT(16, Z20, (R14), Z31); \
	TDOT(20, Z21, (R10)(R8*1), Z25); TDOT(20, Z21, (R15), Z26); TDOT(20, Z21, (R15)(R8*1), Z27); TDOT(20, Z21, (R15)(R8*2), Z28); TDOT(20, Z21, (R9)(R8*8), Z29); TDOT(20, Z21, (R15)(R8*4), Z30); TDOT(20, Z21, (R14), Z31); \
	TDOT(24, Z22, (R10)(R8*1), Z25); TDOT(24, Z22, (R15), Z26); TDOT(24, Z22, (R15)(R8*1), Z27); TDOT(24, Z22, (R15)(R8*2), Z28); TDOT(24, Z22, (R9)(R8*8), Z29); TDOT(24, Z22, (R15)(R8*4), Z30); TDOT(24, Z22, (R14), Z31); \
	TDOT(28, Z23, (R10)(R8*1), Z25); TDOT(28, Z23, (R15), Z26); TDOT(28, Z23, (R15)(R8*1), Z27); TDOT(28, Z23, (R15)(R8*2), Z28); TDOT(28, Z23, (R9)(R8*8), Z29); TDOT(28, Z23, (R15)(R8*4), Z30); TDOT(28, Z23, (R14), Z31); \
	TFIN(28, Z25, Z7); \
	TFIN(32, Z26, Z8); \
	TFIN(36, Z27, Z9); \
	TFIN(40, Z28, Z10); \
	TFIN(44, Z29, Z11); \
	TFIN(48, Z30, Z12); \
	TFIN(52, Z31, Z13)

// TGROUP3 is tokens 14…15.
#define TGROUP3 \
	TINIT((R14)(R8*1), 120, Z25); \
	TINIT((R14)(R8*2), 124, Z26); \
	TDOT(0, Z16, (R14)(R8*1), Z25); TDOT(0, Z16, (R14)(R8*2), Z26); \
	TDOT(4, Z17, (R14)(R8*1), Z25); TDOT(4, Z17, (R14)(R8*2), Z26); \
	TDOT(8, Z18, (R14)(R8*1), Z25); TDOT(8, Z18, (R14)(R8*2), Z26); \
	TDOT(12, Z19, (R14)(R8*1), Z25); TDOT(12, Z19, (R14)(R8*2), Z26); \
	TDOT(16, Z20, (R14)(R8*1), Z25); TDOT(16, Z20, (R14)(R8*2), Z26); \
	TDOT(20, Z21, (R14)(R8*1), Z25); TDOT(20, Z21, (R14)(R8*2), Z26); \
	TDOT(24, Z22, (R14)(R8*1), Z25); TDOT(24, Z22, (R14)(R8*2), Z26); \
	TDOT(28, Z23, (R14)(R8*1), Z25); TDOT(28, Z23, (R14)(R8*2), Z26); \
	TFIN(56, Z25, Z14); \
	TFIN(60, Z26, Z15)

#define TOKS16 \
	TGROUP1; \
	TGROUP2; \
	TGROUP3


#define ADVQ16 \
	ADDQ $32, DI; \
	ADDQ $32, R9; \
	ADDQ $32, R10; \
	ADDQ $32, R14; \
	ADDQ $32, R15; \
	ADDQ $128, DX

#define ZERO16 \
	ZERO8; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15

#define STORE16 \
	YSETUP; \
	ST(Z0); ST(Z1); ST(Z2); ST(Z3); ST(Z4); ST(Z5); ST(Z6); ST(Z7); \
	ST(Z8); ST(Z9); ST(Z10); ST(Z11); ST(Z12); ST(Z13); ST(Z14); ST(Z15)

// func invQ4_0x16(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
// The 16-token tile: each block's codes unpacked once for 16 tokens (the 8-token tile's
// per-token operations, so the same bits); ds holds 32 values per block (d_t at 4t, c_t at
// 64 + 4t).
TEXT ·invQ4_0x16(SB), NOSPLIT, $8-64
	SETUP16($0x0f0f0f0f)
	ZERO16
q4x16loop:
	PREF16(288)
	VPBROADCASTD q4tilemask<>(SB), Z31 // TOKS16 takes Z31 as a token sum
	PACKQ4B(Z31)
	TOKS16
	ADVQ16
	DECQ cnt-8(SP)
	JNZ q4x16loop
	STORE16
	VZEROUPPER
	RET

// func invQ8_0x16(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ8_0x16(SB), NOSPLIT, $8-64
	SETUP16($0x80808080)
	ZERO16
q8x16loop:
	PREF16Q8
	VPBROADCASTD q8tilebias<>(SB), Z31 // TOKS16 takes Z31 as a token sum
	PACKQ8B(Z31)
	TOKS16
	ADVQ16
	DECQ cnt-8(SP)
	JNZ q8x16loop
	STORE16
	VZEROUPPER
	RET

// func invQ4_0x8(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ4_0x8(SB), NOSPLIT, $0-64
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

// func invQ4_0x4(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ4_0x4(SB), NOSPLIT, $0-64
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

// func invQ4_0x2(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ4_0x2(SB), NOSPLIT, $0-64
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

// func invQ8_0x8(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ8_0x8(SB), NOSPLIT, $0-64
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

// func invQ8_0x4(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ8_0x4(SB), NOSPLIT, $0-64
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

// func invQ8_0x2(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ8_0x2(SB), NOSPLIT, $0-64
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
	MOVQ qstride+24(FP), R9; \
	VPXORD Z31, Z31, Z31; \
	VPXORD Z0, Z0, Z0

// func invQ4_0x1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qs unsafe.Pointer, d unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ4_0x1(SB), NOSPLIT, $0-64
	SETUP1($0x0f0f0f0f)
q4x1loop:
	PACKQ4
	TOK1($3)
	DECQ CX
	JNZ q4x1loop
	MOVQ y+48(FP), DI
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET

// func invQ8_0x1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qs unsafe.Pointer, d unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)
TEXT ·invQ8_0x1(SB), NOSPLIT, $0-64
	SETUP1($0x80808080)
q8x1loop:
	PACKQ8
	TOK1($7)
	DECQ CX
	JNZ q8x1loop
	MOVQ y+48(FP), DI
	VMOVUPS Z0, (DI)
	VZEROUPPER
	RET

// func packQ4_0x16(pk unsafe.Pointer, w unsafe.Pointer, rowBytes int, idx *[16]int32, nb int, off float32)
// The VNNI GEMM's pack (vnnigemm_amd64.go) of nb Q4_0 blocks of 16 whole rows (row i at
// w + idx[i]): per block the nibbles as stored (low nibbles codes 0…15, high 16…31, four per
// word, row i in word 16g + i), the scales d and off·d.
TEXT ·packQ4_0x16(SB), NOSPLIT, $0-44
	PKSETUP($0x0f0f0f0f)
pq4loop:
	PACKQ4B(Z13)
	PKSTORE
	DECQ CX
	JNZ pq4loop
	VZEROUPPER
	RET

// func packQ8_0x16(pk unsafe.Pointer, w unsafe.Pointer, rowBytes int, idx *[16]int32, nb int, off float32)
// packQ4_0x16 for Q8_0: the codes + 128 (as unsigned bytes).
TEXT ·packQ8_0x16(SB), NOSPLIT, $0-44
	PKSETUP($0x80808080)
pq8loop:
	PACKQ8B(Z13)
	PKSTORE
	DECQ CX
	JNZ pq8loop
	VZEROUPPER
	RET

// func packQ4_Kx16(pk unsafe.Pointer, w unsafe.Pointer, rowBytes int, idx *[16]int32, nb int, off float32)
// The VNNI GEMM's pack of nb Q4_K super-blocks of 16 whole rows (row i at w + idx[i]; off is
// unused): per 32-value sub-block j a block of the nibbles as stored, four per word (row i in
// word 16g + i), then dw = d·sc_j and ow = −dmin·m_j.
TEXT ·packQ4_Kx16(SB), NOSPLIT, $0-44
	KSETUP
	MOVL $63, DX
	VPBROADCASTD DX, Z14
	MOVL $3, DX
	VPBROADCASTD DX, Z15
	MOVL $15, DX
	VPBROADCASTD DX, Z9
	MOVL $0x80000000, DX
	VPBROADCASTD DX, Z7
pq4kloop:
	Q4KQS(16, 32, 0, 64, 128, 192, 256, 320, 384, 448, 640, 704, 768, 832, 896, 960, 1024, 1088)
	Q4KQS(48, 64, 1280, 1344, 1408, 1472, 1536, 1600, 1664, 1728, 1920, 1984, 2048, 2112, 2176, 2240, 2304, 2368)
	Q4KQS(80, 96, 2560, 2624, 2688, 2752, 2816, 2880, 2944, 3008, 3200, 3264, 3328, 3392, 3456, 3520, 3584, 3648)
	Q4KQS(112, 128, 3840, 3904, 3968, 4032, 4096, 4160, 4224, 4288, 4480, 4544, 4608, 4672, 4736, 4800, 4864, 4928)
	LOADT(4, Z16, Z17, Z18, Z19)
	KXNORW K1, K1, K1
	VPGATHERDD (SI)(Z12*1), K1, Z20
	VPMOVDW Z20, Y21
	VCVTPH2PS Y21, Z21
	VPSRLD $16, Z20, Z20
	VPMOVDW Z20, Y22
	VCVTPH2PS Y22, Z22
	VPXORD Z7, Z22, Z22
	Q4KLO(0, 512, 576)
	Q4KLO(8, 1152, 1216)
	Q4KLO(16, 1792, 1856)
	Q4KLO(24, 2432, 2496)
	Q4KHI(0, 4, 6, 3072, 3136)
	Q4KHI(8, 12, 14, 3712, 3776)
	Q4KHI(16, 20, 22, 4352, 4416)
	Q4KHI(24, 28, 30, 4992, 5056)
	ADDQ $144, SI
	ADDQ $144, R11
	ADDQ $144, R12
	ADDQ $144, R13
	ADDQ $5120, DI
	DECQ CX
	JNZ pq4kloop
	VZEROUPPER
	RET

// func packQ6_Kx16(pk unsafe.Pointer, w unsafe.Pointer, rowBytes int, idx *[16]int32, nb int, off float32)
// The VNNI GEMM's pack of nb Q6_K super-blocks of 16 whole rows (row i at w + idx[i]; off is
// unused): per 16 values G (one int8 scale) a block of the 6-bit codes as stored, four per word
// (row i in word 16g + i), then dw = d·sc_G and ow = −32·dw.
TEXT ·packQ6_Kx16(SB), NOSPLIT, $0-44
	KSETUP
	MOVL $0x03030303, DX
	VPBROADCASTD DX, Z14
	MOVL $0xc2000000, DX
	VPBROADCASTD DX, Z3
pq6kloop:
	Q6KQ(0, 32, 128, 0, 768, 1536, 2304, 64, 832, 1600, 2368, 128, 896, 1664, 2432, 192, 960, 1728, 2496)
	Q6KQ(16, 48, 144, 384, 1152, 1920, 2688, 448, 1216, 1984, 2752, 512, 1280, 2048, 2816, 576, 1344, 2112, 2880)
	Q6KQ(64, 96, 160, 3072, 3840, 4608, 5376, 3136, 3904, 4672, 5440, 3200, 3968, 4736, 5504, 3264, 4032, 4800, 5568)
	Q6KQ(80, 112, 176, 3456, 4224, 4992, 5760, 3520, 4288, 5056, 5824, 3584, 4352, 5120, 5888, 3648, 4416, 5184, 5952)
	LOADT(192, Z16, Z17, Z18, Z19)
	KXNORW K1, K1, K1
	VPGATHERDD 206(SI)(Z12*1), K1, Z2
	VPSRLD $16, Z2, Z2
	VPMOVDW Z2, Y2
	VCVTPH2PS Y2, Z2
	Q6KS(Z16, 24, 256, 320)
	Q6KS(Z16, 16, 640, 704)
	Q6KS(Z16, 8, 1024, 1088)
	Q6KS(Z16, 0, 1408, 1472)
	Q6KS(Z17, 24, 1792, 1856)
	Q6KS(Z17, 16, 2176, 2240)
	Q6KS(Z17, 8, 2560, 2624)
	Q6KS(Z17, 0, 2944, 3008)
	Q6KS(Z18, 24, 3328, 3392)
	Q6KS(Z18, 16, 3712, 3776)
	Q6KS(Z18, 8, 4096, 4160)
	Q6KS(Z18, 0, 4480, 4544)
	Q6KS(Z19, 24, 4864, 4928)
	Q6KS(Z19, 16, 5248, 5312)
	Q6KS(Z19, 8, 5632, 5696)
	Q6KS(Z19, 0, 6016, 6080)
	ADDQ $210, SI
	ADDQ $210, R11
	ADDQ $210, R12
	ADDQ $210, R13
	ADDQ $6144, DI
	DECQ CX
	JNZ pq6kloop
	VZEROUPPER
	RET

// The 16-token kernels' byte constants (SETUP16's MASK), reloaded into Z31 every block.
DATA q4tilemask<>+0(SB)/4, $0x0f0f0f0f
GLOBL q4tilemask<>(SB), RODATA|NOPTR, $4
DATA q8tilebias<>+0(SB)/4, $0x80808080
GLOBL q8tilebias<>(SB), RODATA|NOPTR, $4
