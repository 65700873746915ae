//go:build amd64 && !purego

#include "textflag.h"

// The q4_0, q4_1, q5_0, q5_1, iq4_nl and q8_0 scores kernels for CPUs with AVX-512 VNNI (iq4_nl also
// with VBMI), and the query digits
// they take (multi_vnni_amd64.go states the contract and bound). Sixteen rows go at a time, one row per
// 32-bit lane, so a score needs no horizontal sum: lane 4m+g of every vector holds row 4g+m of
// the sixteen. The q4_0 kernel is described here; multiScoresQ80VNNI's comment says how the
// q8_0 one differs.
//
// Per 32-value block, the rows' sixteen payloads are loaded four to a vector and transposed so
// vector k holds payload dword k of every row; its low nibbles are the codes of values 4k..4k+3
// and its high nibbles those of values 16+4k..16+4k+3 (C0..C7 below, as unsigned bytes).
// VPDPBUSD multiplies four codes by four query bytes (Q, one digit) and adds the products to a
// lane: two chains per query, one for C0..C3 started at −8·ΣQ and one for C4..C7, so their sum
// is Σ Q·(c − 8) exactly in int32. The block's exact integer dot, converted to float32, is
// multiplied by the query's block scale and the row's block scale and added to the score.

// PFGROUPS is how many groups of sixteen rows ahead the kernels prefetch: 64 rows, 4.6 KiB
// (q4_0) to 8.5 KiB (q8_0) of 128 values, ahead of the memory latency at any of their rates.
// Four, not eight: on AMD Zen 4 (4096 rows of 128 values, 4 queries, streamed past the caches,
// thread CPU time, interleaved, median of 15) q4_0's scores took ~3% less time, q4_1's ~4%,
// q5_0's ~6%, q5_1's ~12%, iq4_nl's ~8%, q8_0's ~15–20%; in cache the same. In the one-thread
// decode of 131072 cells on Zen 4 (native/attn's TestDecodeBreakdown, builds alternated five
// or six times, load 8–11 on 2 vCPUs, scores ns a cell, medians; q8_0 there runs its
// PREFETCHT1 flavour) 2, 3, 6 and 8 groups scored within noise of 4 or slower (q8_0 10.0 at 8
// against 8.3); no prefetch slower (q4_0 5.7 against 5.1, q8_0 11.6 against 8.1); a second
// level, PREFETCHT1 4 or 8 KiB beyond these (the f16 Zen 4 kernel's scheme), slower still
// (q4_0 6.2–6.4 against 5.1–5.2, q4_1 7.0–7.1 against 5.7, iq4_nl 6.7–7.1 against 5.6, q8_0
// 10.1–10.3 against 8.1–8.3, q5_0 7.6–7.9 against 6.6–7.0; at load 3, PREFETCHT1 8 KiB beyond:
// q4_0 5.7 against 5.0, q8_0 8.9 against 7.9). With the rows on 2 MiB pages (internal/hugemem)
// the header-register kernels' Zen 4 flavours do take a second level, 32 KiB beyond these
// (HDRFAR).
#define PFGROUPS 4

// The queue of a chunk's block scales in the frame of q4_0's Z4 header-register kernel
// (HDRK18Z4): HDRSTASH18 stores Z22, Z23 (blocks 0, 1 and 2, 3: 32 bytes a block) and
// HDRCVT18 converts the block at R13 (0, 32, 64, 96) into Z24. Defined before any function:
// they address the frame by the hardware SP.
#define HDRSTASH18 \
	VMOVDQU64 Z22, (SP); \
	VMOVDQU64 Z23, 64(SP)

#define HDRCVT18 \
	VCVTPH2PS (SP)(R13*1), Z24

// CHAIN1 adds code vector c times the four query bytes at offset off of each of the four
// queries' digit rows (query h at h·32) into accumulators a0..a3.
#define CHAIN1(c, off, a0, a1, a2, a3) \
	VPDPBUSD.BCST off(SI), c, a0; \
	VPDPBUSD.BCST off+32(SI), c, a1; \
	VPDPBUSD.BCST off+64(SI), c, a2; \
	VPDPBUSD.BCST off+96(SI), c, a3

// CHAINS1 runs the block's eight code vectors Z0..Z7 through CHAIN1: C0..C3 into Z12..Z15,
// C4..C7 into Z16..Z19.
#define CHAINS1 \
	CHAIN1(Z0, 0, Z12, Z13, Z14, Z15); \
	CHAIN1(Z4, 16, Z16, Z17, Z18, Z19); \
	CHAIN1(Z1, 4, Z12, Z13, Z14, Z15); \
	CHAIN1(Z5, 20, Z16, Z17, Z18, Z19); \
	CHAIN1(Z2, 8, Z12, Z13, Z14, Z15); \
	CHAIN1(Z6, 24, Z16, Z17, Z18, Z19); \
	CHAIN1(Z3, 12, Z12, Z13, Z14, Z15); \
	CHAIN1(Z7, 28, Z16, Z17, Z18, Z19)

// FINISH1 adds query h's two chains (a, b) into one exact int32 dot, converts it and adds it,
// times the query's block scale (4h(DX)) and the rows' block scales (Z24), to acc.
#define FINISH1(a, b, h, acc) \
	VPADDD b, a, a; \
	VCVTDQ2PS a, a; \
	VMULPS.BCST (4*h)(DX), Z24, b; \
	VFMADD231PS b, a, acc

// CHAINQ1 adds code vector c times the four query bytes at offset off of each of the four
// queries' digit rows (query h at h·32) into query h's one chain, Z12+h.
#define CHAINQ1(c, off) \
	VPDPBUSD.BCST off(SI), c, Z12; \
	VPDPBUSD.BCST off+32(SI), c, Z13; \
	VPDPBUSD.BCST off+64(SI), c, Z14; \
	VPDPBUSD.BCST off+96(SI), c, Z15

// FINISHQ1 converts query h's one chain a (its exact int32 dot) and adds it, times the query's
// block scale (4h(DX)) and the rows' block scales (Z24), to acc; b is scratch.
#define FINISHQ1(a, b, h, acc) \
	VCVTDQ2PS a, a; \
	VMULPS.BCST (4*h)(DX), Z24, b; \
	VFMADD231PS b, a, acc

// FINISHES1 finishes the four queries of a one-digit block into the scores Z8..Z11.
#define FINISHES1 \
	VCVTPH2PS (R13), Z24; \
	FINISH1(Z12, Z16, 0, Z8); \
	FINISH1(Z13, Z17, 1, Z9); \
	FINISH1(Z14, Z18, 2, Z10); \
	FINISH1(Z15, Z19, 3, Z11)

// STAGE copies the f16 block scales of the four rows at p, p+rb, p+2rb, p+3rb (R8 = rb,
// R12 = 3rb) to lanes g, 4+g, 8+g, 12+g of the sixteen halves at SI (lane offsets in bytes
// 2g, 8+2g, 16+2g, 24+2g).
#define STAGE(p, g) \
	MOVWLZX (p), AX; \
	MOVW AX, (2*g)(SI); \
	MOVWLZX (p)(R8*1), AX; \
	MOVW AX, (8+2*g)(SI); \
	MOVWLZX (p)(R8*2), AX; \
	MOVW AX, (16+2*g)(SI); \
	MOVWLZX (p)(R12*1), AX; \
	MOVW AX, (24+2*g)(SI)

// STAGEN is STAGE for the next group's rows at their codes (p, p+rb, p+2rb, p+3rb; each scale
// 2 bytes before) into the other buffer of the stage, at (R13)(R11*1), through DI.
#define STAGEN(p, g) \
	MOVWLZX -2(p), DI; \
	MOVW DI, (2*g)(R13)(R11*1); \
	MOVWLZX -2(p)(R8*1), DI; \
	MOVW DI, (8+2*g)(R13)(R11*1); \
	MOVWLZX -2(p)(R8*2), DI; \
	MOVW DI, (16+2*g)(R13)(R11*1); \
	MOVWLZX -2(p)(R12*1), DI; \
	MOVW DI, (24+2*g)(R13)(R11*1)

// LOAD4 loads the 16-byte payloads of rows p, p+rb, p+2rb, p+3rb into the four 128-bit lanes
// of z.
#define LOAD4(p, z, x) \
	VMOVDQU32 (p), x; \
	VINSERTI32X4 $1, (p)(R8*1), z, z; \
	VINSERTI32X4 $2, (p)(R8*2), z, z; \
	VINSERTI32X4 $3, (p)(R12*1), z, z

// LOAD4O is LOAD4 at byte offset off of each row.
#define LOAD4O(off, p, z, x) \
	VMOVDQU32 off(p), x; \
	VINSERTI32X4 $1, off(p)(R8*1), z, z; \
	VINSERTI32X4 $2, off(p)(R8*2), z, z; \
	VINSERTI32X4 $3, off(p)(R12*1), z, z

// TRANSPOSE4 transposes the dwords of Z24..Z27 within 128-bit lanes: V0..V3 (Z25..Z28) lane
// (m, g) = dword k of row 4g+m. Clobbers Z24, Z29, Z30.
#define TRANSPOSE4 \
	VPUNPCKLDQ Z25, Z24, Z28; \
	VPUNPCKHDQ Z25, Z24, Z29; \
	VPUNPCKLDQ Z27, Z26, Z30; \
	VPUNPCKHDQ Z27, Z26, Z24; \
	VPUNPCKLQDQ Z30, Z28, Z25; \
	VPUNPCKHQDQ Z30, Z28, Z26; \
	VPUNPCKLQDQ Z24, Z29, Z27; \
	VPUNPCKHQDQ Z24, Z29, Z28

// FINISHES41 finishes the four queries of a q4_1 or q5_1 block into the scores Z8..Z11: query
// h's two chains (Z12+h, Z16+h) added into one exact int32 dot Σ Q·c and converted, times the
// rows' block scales (Z24), plus the rows' minima (Z25) times the float32 ΣQ (80+4h(DX),
// exact: |ΣQ| ≤ 32·127), the sum times the query's block scale (4h(DX)) added to the score:
// s·(d·Σ Q·c + m·ΣQ), three roundings (five operations a query; forming s·d and s·m apart
// took six, and on Zen 5 ~4% (q4_1) and ~3% (q5_1) more time in cache, 4–8% streamed past
// the caches: thread CPU time, interleaved). The queries go side by side, each step's four
// independent. On Intel (instruction tables) it is one FMA-port µop fewer a query.
#define FINISHES41 \
	VPADDD Z16, Z12, Z12; \
	VPADDD Z17, Z13, Z13; \
	VPADDD Z18, Z14, Z14; \
	VPADDD Z19, Z15, Z15; \
	VCVTDQ2PS Z12, Z12; \
	VCVTDQ2PS Z13, Z13; \
	VCVTDQ2PS Z14, Z14; \
	VCVTDQ2PS Z15, Z15; \
	VMULPS Z24, Z12, Z12; \
	VMULPS Z24, Z13, Z13; \
	VMULPS Z24, Z14, Z14; \
	VMULPS Z24, Z15, Z15; \
	VFMADD231PS.BCST 80(DX), Z25, Z12; \
	VFMADD231PS.BCST 84(DX), Z25, Z13; \
	VFMADD231PS.BCST 88(DX), Z25, Z14; \
	VFMADD231PS.BCST 92(DX), Z25, Z15; \
	VFMADD231PS.BCST (DX), Z12, Z8; \
	VFMADD231PS.BCST 4(DX), Z13, Z9; \
	VFMADD231PS.BCST 8(DX), Z14, Z10; \
	VFMADD231PS.BCST 12(DX), Z15, Z11

// CHAIN2 adds code vector c times the four digit bytes at offset off of each of the eight
// digit rows (query h, digit t at (h·2 + t)·32) into accumulators Z12..Z15 (hi, query h in
// Z12+h) and Z16..Z19 (lo).
#define CHAIN2(c, off) \
	VPDPBUSD.BCST off(SI), c, Z12; \
	VPDPBUSD.BCST off+32(SI), c, Z16; \
	VPDPBUSD.BCST off+64(SI), c, Z13; \
	VPDPBUSD.BCST off+96(SI), c, Z17; \
	VPDPBUSD.BCST off+128(SI), c, Z14; \
	VPDPBUSD.BCST off+160(SI), c, Z18; \
	VPDPBUSD.BCST off+192(SI), c, Z15; \
	VPDPBUSD.BCST off+224(SI), c, Z19

// FINISH2 folds query h's two digit chains (a hi, b lo) into one exact int32 dot, 2⁸·a + b,
// converts it and adds it, times the query's block scale (4h(DX)) and the rows' block scales
// (Z24), to acc.
#define FINISH2(a, b, h, acc) \
	VPSLLD $8, a, a; \
	VPADDD b, a, a; \
	VCVTDQ2PS a, a; \
	VMULPS.BCST (4*h)(DX), Z24, b; \
	VFMADD231PS b, a, acc

// SCORES_T transposes the four score vectors Z8..Z11 (query h, one row per lane) within
// 128-bit lanes: Wg (Z4+g) lane m holds the four scores of row 4g+m.
#define SCORES_T \
	VUNPCKLPS Z9, Z8, Z0; \
	VUNPCKHPS Z9, Z8, Z1; \
	VUNPCKLPS Z11, Z10, Z2; \
	VUNPCKHPS Z11, Z10, Z3; \
	VUNPCKLPD Z2, Z0, Z4; \
	VUNPCKHPD Z2, Z0, Z5; \
	VUNPCKLPD Z3, Z1, Z6; \
	VUNPCKHPD Z3, Z1, Z7

// SCORES_CONTIG stores W0..W3 as sixteen rows of four scores at R9 (out stride 16 bytes).
#define SCORES_CONTIG \
	VMOVUPS Z4, (R9); \
	VMOVUPS Z5, 64(R9); \
	VMOVUPS Z6, 128(R9); \
	VMOVUPS Z7, 192(R9)

// SCORES_ROW4 stores the four 128-bit lanes of z at BX, BX+AX, BX+2AX, BX+3AX (R11 = 3AX).
#define SCORES_ROW4(z, x) \
	VMOVUPS x, (BX); \
	VEXTRACTF32X4 $1, z, (BX)(AX*1); \
	VEXTRACTF32X4 $2, z, (BX)(AX*2); \
	VEXTRACTF32X4 $3, z, (BX)(R11*1)

// SCORES_STRIDED stores W0..W3 at R9 with AX bytes between rows (clobbers R11 and BX).
#define SCORES_STRIDED \
	LEAQ (AX)(AX*2), R11; \
	MOVQ R9, BX; \
	SCORES_ROW4(Z4, X4); \
	LEAQ (BX)(AX*4), BX; \
	SCORES_ROW4(Z5, X5); \
	LEAQ (BX)(AX*4), BX; \
	SCORES_ROW4(Z6, X6); \
	LEAQ (BX)(AX*4), BX; \
	SCORES_ROW4(Z7, X7)

// func multiScoresQ40VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
TEXT ·multiScoresQ40VNNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   vnniQ40_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31

vnniQ40_group:
	// Row-group pointers: CX rows 0..3, BX rows 4..7, R14 rows 8..11, R15 rows 12..15.
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15

	// Stage every block's sixteen scales (32 bytes per block) before the arithmetic needs them.
	MOVQ stage+16(FP), SI
	MOVQ nb+24(FP), R11
vnniQ40_stage:
	STAGE(CX, 0)
	STAGE(BX, 1)
	STAGE(R14, 2)
	STAGE(R15, 3)
	ADDQ $18, CX
	ADDQ $18, BX
	ADDQ $18, R14
	ADDQ $18, R15
	ADDQ $32, SI
	DECQ R11
	JNZ  vnniQ40_stage

	LEAQ 2(DI), CX             // payloads of block 0
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ stage+16(FP), R13
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 320 bytes
	SHLQ $4, AX                // per block (a group is 16·18 = 288 bytes per block)
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

vnniQ40_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	ADDQ $320, AX
	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
	VPANDD Z31, Z25, Z0
	VPSRLD $4, Z25, Z4
	VPANDD Z31, Z4, Z4
	VPANDD Z31, Z26, Z1
	VPSRLD $4, Z26, Z5
	VPANDD Z31, Z5, Z5
	VPANDD Z31, Z27, Z2
	VPSRLD $4, Z27, Z6
	VPANDD Z31, Z6, Z6
	VPANDD Z31, Z28, Z3
	VPSRLD $4, Z28, Z7
	VPANDD Z31, Z7, Z7

	VPBROADCASTD 16(DX), Z12   // −8·ΣQ: the codes' offset
	VPBROADCASTD 20(DX), Z13
	VPBROADCASTD 24(DX), Z14
	VPBROADCASTD 28(DX), Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CHAINS1
	FINISHES1

	ADDQ $18, CX
	ADDQ $18, BX
	ADDQ $18, R14
	ADDQ $18, R15
	ADDQ $128, SI
	ADDQ $96, DX
	ADDQ $32, R13
	DECQ R11
	JNZ  vnniQ40_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  vnniQ40_strided
	SCORES_CONTIG
	JMP  vnniQ40_next

vnniQ40_strided:
	SCORES_STRIDED

vnniQ40_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  vnniQ40_group

vnniQ40_done:
	VZEROUPPER
	RET

// STAGEQH copies the dwords at byte offset off of the four rows at p, p+rb, p+2rb, p+3rb to
// lanes g, 4+g, 8+g, 12+g of the sixteen dwords at SI.
#define STAGEQH(off, p, g) \
	MOVL off(p), AX; \
	MOVL AX, (4*g)(SI); \
	MOVL off(p)(R8*1), AX; \
	MOVL AX, (16+4*g)(SI); \
	MOVL off(p)(R8*2), AX; \
	MOVL AX, (32+4*g)(SI); \
	MOVL off(p)(R12*1), AX; \
	MOVL AX, (48+4*g)(SI)

// func multiScoresQ41VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// The q4_1 scores kernel: multiScoresQ40VNNI's loads, nibble split and one-digit chains for
// q4_1's 20-byte blocks (scale d, minimum m, codes c: x = d·c + m), the chains started at 0,
// and per block s·(d·Σ Q·c + m·ΣQ) added to the score (ΣQ as float32 from aux; FINISHES41). The stage holds
// a block's sixteen 4-byte headers (d, m; 64 bytes a block), split by VPMOVDW.
TEXT ·multiScoresQ41VNNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   vnniQ41_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31

vnniQ41_group:
	// Row-group pointers: CX rows 0..3, BX rows 4..7, R14 rows 8..11, R15 rows 12..15.
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15

	// Stage every block's sixteen 4-byte headers (d, m; 64 bytes per block), row 4g+m's at
	// lane 4m+g, before the arithmetic needs them: one load and one store a row.
	MOVQ stage+16(FP), SI
	MOVQ nb+24(FP), R11
vnniQ41_stage:
	STAGEQH(0, CX, 0)
	STAGEQH(0, BX, 1)
	STAGEQH(0, R14, 2)
	STAGEQH(0, R15, 3)
	ADDQ $20, CX
	ADDQ $20, BX
	ADDQ $20, R14
	ADDQ $20, R15
	ADDQ $64, SI
	DECQ R11
	JNZ  vnniQ41_stage

	LEAQ 4(DI), CX             // payloads of block 0
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ stage+16(FP), R13
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 384 bytes
	SHLQ $4, AX                // per block (a group is 16·20 = 320 bytes per block)
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

vnniQ41_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	ADDQ $384, AX
	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
	VPANDD Z31, Z25, Z0
	VPSRLD $4, Z25, Z4
	VPANDD Z31, Z4, Z4
	VPANDD Z31, Z26, Z1
	VPSRLD $4, Z26, Z5
	VPANDD Z31, Z5, Z5
	VPANDD Z31, Z27, Z2
	VPSRLD $4, Z27, Z6
	VPANDD Z31, Z6, Z6
	VPANDD Z31, Z28, Z3
	VPSRLD $4, Z28, Z7
	VPANDD Z31, Z7, Z7

	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CHAINS1
	VMOVDQU32 (R13), Z25       // the rows' headers: block scales (low words)
	VPMOVDW Z25, Y24
	VPSRLD $16, Z25, Z25       // and minima (high words)
	VPMOVDW Z25, Y25
	VCVTPH2PS Y24, Z24
	VCVTPH2PS Y25, Z25
	FINISHES41

	ADDQ $20, CX
	ADDQ $20, BX
	ADDQ $20, R14
	ADDQ $20, R15
	ADDQ $128, SI
	ADDQ $96, DX
	ADDQ $64, R13
	DECQ R11
	JNZ  vnniQ41_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  vnniQ41_strided
	SCORES_CONTIG
	JMP  vnniQ41_next

vnniQ41_strided:
	SCORES_STRIDED

vnniQ41_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  vnniQ41_group

vnniQ41_done:
	VZEROUPPER
	RET

// STAGEO is STAGE for the halves at byte offset off of each row.
#define STAGEO(off, p, g) \
	MOVWLZX off(p), AX; \
	MOVW AX, (2*g)(SI); \
	MOVWLZX off(p)(R8*1), AX; \
	MOVW AX, (8+2*g)(SI); \
	MOVWLZX off(p)(R8*2), AX; \
	MOVW AX, (16+2*g)(SI); \
	MOVWLZX off(p)(R12*1), AX; \
	MOVW AX, (24+2*g)(SI)

// FIFTH ORs the fifth bits (bit 4 of each code byte) into the code vectors lo and hi, the
// codes of values 8j'..8j'+3 and 8j'+4..8j'+7 of the block for j' = j (low nibbles, j = 0, 1)
// or 16 + … (high nibbles, j = 2, 3): ctrl broadcasts byte j of each lane's qh dword (Z23) to
// the lane's four bytes; byte i of lo takes bit i, byte i of hi bit 4+i (Z20, Z21), and where
// it is set 16 is added (Z22). Clobbers Z29, K1, K2.
#define FIFTH(ctrl, lo, hi) \
	VPSHUFB ctrl, Z23, Z29; \
	VPTESTMB Z20, Z29, K1; \
	VPTESTMB Z21, Z29, K2; \
	VPADDB Z22, lo, K1, lo; \
	VPADDB Z22, hi, K2, hi

// vnniQHByte0..3 are FIFTH's controls (64 bytes): in every dword, byte j of that dword four times.
DATA ·vnniQHByte0+0(SB)/8, $0x0404040400000000
DATA ·vnniQHByte0+8(SB)/8, $0x0c0c0c0c08080808
DATA ·vnniQHByte0+16(SB)/8, $0x0404040400000000
DATA ·vnniQHByte0+24(SB)/8, $0x0c0c0c0c08080808
DATA ·vnniQHByte0+32(SB)/8, $0x0404040400000000
DATA ·vnniQHByte0+40(SB)/8, $0x0c0c0c0c08080808
DATA ·vnniQHByte0+48(SB)/8, $0x0404040400000000
DATA ·vnniQHByte0+56(SB)/8, $0x0c0c0c0c08080808
GLOBL ·vnniQHByte0(SB), RODATA|NOPTR, $64
DATA ·vnniQHByte1+0(SB)/8, $0x0505050501010101
DATA ·vnniQHByte1+8(SB)/8, $0x0d0d0d0d09090909
DATA ·vnniQHByte1+16(SB)/8, $0x0505050501010101
DATA ·vnniQHByte1+24(SB)/8, $0x0d0d0d0d09090909
DATA ·vnniQHByte1+32(SB)/8, $0x0505050501010101
DATA ·vnniQHByte1+40(SB)/8, $0x0d0d0d0d09090909
DATA ·vnniQHByte1+48(SB)/8, $0x0505050501010101
DATA ·vnniQHByte1+56(SB)/8, $0x0d0d0d0d09090909
GLOBL ·vnniQHByte1(SB), RODATA|NOPTR, $64
DATA ·vnniQHByte2+0(SB)/8, $0x0606060602020202
DATA ·vnniQHByte2+8(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA ·vnniQHByte2+16(SB)/8, $0x0606060602020202
DATA ·vnniQHByte2+24(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA ·vnniQHByte2+32(SB)/8, $0x0606060602020202
DATA ·vnniQHByte2+40(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA ·vnniQHByte2+48(SB)/8, $0x0606060602020202
DATA ·vnniQHByte2+56(SB)/8, $0x0e0e0e0e0a0a0a0a
GLOBL ·vnniQHByte2(SB), RODATA|NOPTR, $64
DATA ·vnniQHByte3+0(SB)/8, $0x0707070703030303
DATA ·vnniQHByte3+8(SB)/8, $0x0f0f0f0f0b0b0b0b
DATA ·vnniQHByte3+16(SB)/8, $0x0707070703030303
DATA ·vnniQHByte3+24(SB)/8, $0x0f0f0f0f0b0b0b0b
DATA ·vnniQHByte3+32(SB)/8, $0x0707070703030303
DATA ·vnniQHByte3+40(SB)/8, $0x0f0f0f0f0b0b0b0b
DATA ·vnniQHByte3+48(SB)/8, $0x0707070703030303
DATA ·vnniQHByte3+56(SB)/8, $0x0f0f0f0f0b0b0b0b
GLOBL ·vnniQHByte3(SB), RODATA|NOPTR, $64

// HDRI loads the 8-byte headers at off from the sixteen rows' block pointers into Z29 (lanes
// 0..7) and Z30 (8..15), row 4g+m's at lane 4m+g (as the other kernels stage them): two rows an xmm
// (a load and an insert), put together by inserts. Clobbers Z12..Z14.
#define HDRI(off) \
	VMOVQ off(CX), X29; \
	VPINSRQ $1, off(BX), X29, X29; \
	VMOVQ off(R14), X12; \
	VPINSRQ $1, off(R15), X12, X12; \
	VINSERTI64X2 $1, X12, Y29, Y29; \
	VMOVQ off(CX)(R8*1), X13; \
	VPINSRQ $1, off(BX)(R8*1), X13, X13; \
	VMOVQ off(R14)(R8*1), X14; \
	VPINSRQ $1, off(R15)(R8*1), X14, X14; \
	VINSERTI64X2 $1, X14, Y13, Y13; \
	VINSERTI64X4 $1, Y13, Z29, Z29; \
	VMOVQ off(CX)(R8*2), X30; \
	VPINSRQ $1, off(BX)(R8*2), X30, X30; \
	VMOVQ off(R14)(R8*2), X12; \
	VPINSRQ $1, off(R15)(R8*2), X12, X12; \
	VINSERTI64X2 $1, X12, Y30, Y30; \
	VMOVQ off(CX)(R12*1), X13; \
	VPINSRQ $1, off(BX)(R12*1), X13, X13; \
	VMOVQ off(R14)(R12*1), X14; \
	VPINSRQ $1, off(R15)(R12*1), X14, X14; \
	VINSERTI64X2 $1, X14, Y13, Y13; \
	VINSERTI64X4 $1, Y13, Z30, Z30

// vnniHdr50QH selects words 1 and 2 (qh) of each of sixteen staged q5_0 headers into a dword
// (VPERMI2W over two vectors of eight qwords); vnniHdr50D word 0 (d) of each, then zeros.
DATA ·vnniHdr50QH+0(SB)/8, $0x0006000500020001
DATA ·vnniHdr50QH+8(SB)/8, $0x000e000d000a0009
DATA ·vnniHdr50QH+16(SB)/8, $0x0016001500120011
DATA ·vnniHdr50QH+24(SB)/8, $0x001e001d001a0019
DATA ·vnniHdr50QH+32(SB)/8, $0x0026002500220021
DATA ·vnniHdr50QH+40(SB)/8, $0x002e002d002a0029
DATA ·vnniHdr50QH+48(SB)/8, $0x0036003500320031
DATA ·vnniHdr50QH+56(SB)/8, $0x003e003d003a0039
GLOBL ·vnniHdr50QH(SB), RODATA|NOPTR, $64
DATA ·vnniHdr50D+0(SB)/8, $0x000c000800040000
DATA ·vnniHdr50D+8(SB)/8, $0x001c001800140010
DATA ·vnniHdr50D+16(SB)/8, $0x002c002800240020
DATA ·vnniHdr50D+24(SB)/8, $0x003c003800340030
DATA ·vnniHdr50D+32(SB)/8, $0x0000000000000000
DATA ·vnniHdr50D+40(SB)/8, $0x0000000000000000
DATA ·vnniHdr50D+48(SB)/8, $0x0000000000000000
DATA ·vnniHdr50D+56(SB)/8, $0x0000000000000000
GLOBL ·vnniHdr50D(SB), RODATA|NOPTR, $64

// func multiScoresQ50VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// The q5_0 scores kernel: multiScoresQ40VNNI's method for q5_0's 22-byte blocks (scale d, the
// 32 fifth bits qh, the low nibbles: x = d·(c − 16)). HDRI loads the first 8 bytes of each of
// a block's sixteen rows into two registers, unpacked by two permutes; each code vector gets
// its fifth bits (FIFTH) before the chains, the first of which starts at −16·ΣQ. The stage is
// not used: staging the headers through memory (a scalar load and store a row and block, in a
// pass before the blocks) took ~0.6 ns of the ~6.2 a row of 128 values (AMD Zen 4, 4 queries,
// in cache, thread CPU time, TestQ5ScoresGFNISpeed's medians before and after; q5_1 6.5 → 6.05).
// Staging each next group's headers during this group's block loop instead (as the AVX2
// kernels stage their scales: the stores retire long before the loads) took q5_0's GFNI kernel
// 5.25 → 4.89 ns a row in cache but 6.2 → 8.9 streamed past the caches (its scalar loads of
// the next group's rows waiting on memory), and was not kept.
// Not measured on Intel: there (instruction tables, Ice Lake to Sapphire Rapids) HDRI's eight
// inserting loads and six inserts are port-5 µops beside the block's ~30 other shuffles, where
// the stage took sixteen scalar stores on the store ports, so it may gain less or cost there.
TEXT ·multiScoresQ50VNNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   vnniQ50_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVL $0x08040201, AX       // FIFTH's bit masks and 16
	VPBROADCASTD AX, Z20
	MOVL $0x80402010, AX
	VPBROADCASTD AX, Z21
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z22

vnniQ50_group:
	// Row-group pointers to block 0's payloads: CX rows 0..3, BX rows 4..7, R14 rows 8..11,
	// R15 rows 12..15.
	LEAQ 6(DI), CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 448 bytes
	SHLQ $4, AX                // per block (a group is 16·22 = 352 bytes per block)
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

vnniQ50_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 384(AX)
	ADDQ $448, AX
	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
	VPANDD Z31, Z25, Z0
	VPSRLD $4, Z25, Z4
	VPANDD Z31, Z4, Z4
	VPANDD Z31, Z26, Z1
	VPSRLD $4, Z26, Z5
	VPANDD Z31, Z5, Z5
	VPANDD Z31, Z27, Z2
	VPSRLD $4, Z27, Z6
	VPANDD Z31, Z6, Z6
	VPANDD Z31, Z28, Z3
	VPSRLD $4, Z28, Z7
	VPANDD Z31, Z7, Z7

	HDRI(-6)                   // the rows' headers (Z29, Z30)
	VMOVDQU64 ·vnniHdr50QH(SB), Z23 // the rows' high-bit dwords: words 1 and 2 of each header
	VPERMI2W Z30, Z29, Z23
	VMOVDQU64 ·vnniHdr50D(SB), Z24 // the rows' block scales: word 0 of each header
	VPERMI2W Z30, Z29, Z24
	VCVTPH2PS Y24, Z24
	FIFTH(·vnniQHByte0(SB), Z0, Z1)
	FIFTH(·vnniQHByte1(SB), Z2, Z3)
	FIFTH(·vnniQHByte2(SB), Z4, Z5)
	FIFTH(·vnniQHByte3(SB), Z6, Z7)
	VPBROADCASTD 32(DX), Z12   // −16·ΣQ: the codes' offset
	VPBROADCASTD 36(DX), Z13
	VPBROADCASTD 40(DX), Z14
	VPBROADCASTD 44(DX), Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CHAINS1
	FINISH1(Z12, Z16, 0, Z8)
	FINISH1(Z13, Z17, 1, Z9)
	FINISH1(Z14, Z18, 2, Z10)
	FINISH1(Z15, Z19, 3, Z11)

	ADDQ $22, CX
	ADDQ $22, BX
	ADDQ $22, R14
	ADDQ $22, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  vnniQ50_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  vnniQ50_strided
	SCORES_CONTIG
	JMP  vnniQ50_next

vnniQ50_strided:
	SCORES_STRIDED

vnniQ50_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  vnniQ50_group

vnniQ50_done:
	VZEROUPPER
	RET


// vnniHdrQH selects dword 1 (qh) of each of sixteen staged headers (VPERMI2D over two vectors
// of eight); vnniHdrDM words 0 (d) of the sixteen, then words 1 (m) (VPERMI2W).
DATA ·vnniHdrQH+0(SB)/8, $0x0000000300000001
DATA ·vnniHdrQH+8(SB)/8, $0x0000000700000005
DATA ·vnniHdrQH+16(SB)/8, $0x0000000b00000009
DATA ·vnniHdrQH+24(SB)/8, $0x0000000f0000000d
DATA ·vnniHdrQH+32(SB)/8, $0x0000001300000011
DATA ·vnniHdrQH+40(SB)/8, $0x0000001700000015
DATA ·vnniHdrQH+48(SB)/8, $0x0000001b00000019
DATA ·vnniHdrQH+56(SB)/8, $0x0000001f0000001d
GLOBL ·vnniHdrQH(SB), RODATA|NOPTR, $64
DATA ·vnniHdrDM+0(SB)/8, $0x000c000800040000
DATA ·vnniHdrDM+8(SB)/8, $0x001c001800140010
DATA ·vnniHdrDM+16(SB)/8, $0x002c002800240020
DATA ·vnniHdrDM+24(SB)/8, $0x003c003800340030
DATA ·vnniHdrDM+32(SB)/8, $0x000d000900050001
DATA ·vnniHdrDM+40(SB)/8, $0x001d001900150011
DATA ·vnniHdrDM+48(SB)/8, $0x002d002900250021
DATA ·vnniHdrDM+56(SB)/8, $0x003d003900350031
GLOBL ·vnniHdrDM(SB), RODATA|NOPTR, $64

// func multiScoresQ51VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// The q5_1 scores kernel: the q5_0 kernel's codes for q5_1's 24-byte blocks (scale d, minimum m,
// qh, nibbles: x = d·c + m), with the q4_1 kernel's chains and finish; HDRI loads the rows'
// 8-byte headers, which the block loop unpacks with two permutes (the stage is not used).
TEXT ·multiScoresQ51VNNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   vnniQ51_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVL $0x08040201, AX       // FIFTH's bit masks and 16
	VPBROADCASTD AX, Z20
	MOVL $0x80402010, AX
	VPBROADCASTD AX, Z21
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z22

vnniQ51_group:
	// Row-group pointers to block 0's payloads: CX rows 0..3, BX rows 4..7, R14 rows 8..11,
	// R15 rows 12..15.
	LEAQ 8(DI), CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 448 bytes
	SHLQ $4, AX                // per block (a group is 16·24 = 384 bytes per block)
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

vnniQ51_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 384(AX)
	ADDQ $448, AX
	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
	VPANDD Z31, Z25, Z0
	VPSRLD $4, Z25, Z4
	VPANDD Z31, Z4, Z4
	VPANDD Z31, Z26, Z1
	VPSRLD $4, Z26, Z5
	VPANDD Z31, Z5, Z5
	VPANDD Z31, Z27, Z2
	VPSRLD $4, Z27, Z6
	VPANDD Z31, Z6, Z6
	VPANDD Z31, Z28, Z3
	VPSRLD $4, Z28, Z7
	VPANDD Z31, Z7, Z7

	HDRI(-8)                   // the rows' headers (Z29, Z30)
	VMOVDQU64 ·vnniHdrQH(SB), Z23 // the rows' high-bit dwords: dword 1 of each header
	VPERMI2D Z30, Z29, Z23
	VMOVDQU64 ·vnniHdrDM(SB), Z24 // the rows' block scales (words 0..15) and minima (16..31):
	VPERMI2W Z30, Z29, Z24       // words 0 and 1 of each header
	VEXTRACTI64X4 $1, Z24, Y25
	VCVTPH2PS Y24, Z24
	VCVTPH2PS Y25, Z25
	FIFTH(·vnniQHByte0(SB), Z0, Z1)
	FIFTH(·vnniQHByte1(SB), Z2, Z3)
	FIFTH(·vnniQHByte2(SB), Z4, Z5)
	FIFTH(·vnniQHByte3(SB), Z6, Z7)
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CHAINS1
	FINISHES41

	ADDQ $24, CX
	ADDQ $24, BX
	ADDQ $24, R14
	ADDQ $24, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  vnniQ51_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  vnniQ51_strided
	SCORES_CONTIG
	JMP  vnniQ51_next

vnniQ51_strided:
	SCORES_STRIDED

vnniQ51_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  vnniQ51_group

vnniQ51_done:
	VZEROUPPER
	RET


// iq4_nl's levels + 128 as unsigned bytes: 1 24 45 63 79 93 106 118 129 141 153 166 181 197 217 241.
DATA ·vnniIQ4NLU8+0(SB)/8, $0x766a5d4f3f2d1801
DATA ·vnniIQ4NLU8+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL ·vnniIQ4NLU8(SB), RODATA|NOPTR, $16

// func multiScoresIQ4NLVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// The iq4_nl scores kernel: multiScoresQ40VNNI's loads, nibble split and one-digit chains, each
// nibble looked up with VPSHUFB in iq4_nl's levels + 128 (unsigned bytes 1..241,
// ·vnniIQ4NLU8) before them; the first chain starts at −128·ΣQ, so the two hold Σ Q·level
// exactly.
TEXT ·multiScoresIQ4NLVNNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   vnniIQ4_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31

vnniIQ4_group:
	// Row-group pointers: CX rows 0..3, BX rows 4..7, R14 rows 8..11, R15 rows 12..15.
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15

	// Stage every block's sixteen scales (32 bytes per block) before the arithmetic needs them.
	MOVQ stage+16(FP), SI
	MOVQ nb+24(FP), R11
vnniIQ4_stage:
	STAGE(CX, 0)
	STAGE(BX, 1)
	STAGE(R14, 2)
	STAGE(R15, 3)
	ADDQ $18, CX
	ADDQ $18, BX
	ADDQ $18, R14
	ADDQ $18, R15
	ADDQ $32, SI
	DECQ R11
	JNZ  vnniIQ4_stage

	LEAQ 2(DI), CX             // payloads of block 0
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ stage+16(FP), R13
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 320 bytes
	SHLQ $4, AX                // per block (a group is 16·18 = 288 bytes per block)
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

vnniIQ4_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	ADDQ $320, AX
	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
	VPANDD Z31, Z25, Z0
	VPSRLD $4, Z25, Z4
	VPANDD Z31, Z4, Z4
	VPANDD Z31, Z26, Z1
	VPSRLD $4, Z26, Z5
	VPANDD Z31, Z5, Z5
	VPANDD Z31, Z27, Z2
	VPSRLD $4, Z27, Z6
	VPANDD Z31, Z6, Z6
	VPANDD Z31, Z28, Z3
	VPSRLD $4, Z28, Z7
	VPANDD Z31, Z7, Z7
	VBROADCASTI32X4 ·vnniIQ4NLU8(SB), Z30
	VPSHUFB Z0, Z30, Z0
	VPSHUFB Z1, Z30, Z1
	VPSHUFB Z2, Z30, Z2
	VPSHUFB Z3, Z30, Z3
	VPSHUFB Z4, Z30, Z4
	VPSHUFB Z5, Z30, Z5
	VPSHUFB Z6, Z30, Z6
	VPSHUFB Z7, Z30, Z7

	VPBROADCASTD 48(DX), Z12   // −128·ΣQ: the levels' offset
	VPBROADCASTD 52(DX), Z13
	VPBROADCASTD 56(DX), Z14
	VPBROADCASTD 60(DX), Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CHAINS1
	FINISHES1

	ADDQ $18, CX
	ADDQ $18, BX
	ADDQ $18, R14
	ADDQ $18, R15
	ADDQ $128, SI
	ADDQ $96, DX
	ADDQ $32, R13
	DECQ R11
	JNZ  vnniIQ4_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  vnniIQ4_strided
	SCORES_CONTIG
	JMP  vnniIQ4_next

vnniIQ4_strided:
	SCORES_STRIDED

vnniIQ4_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  vnniIQ4_group

vnniIQ4_done:
	VZEROUPPER
	RET

// func multiScoresIQ4NLVBMI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresIQ4NLVNNI for CPUs with AVX-512 VBMI too: each code vector looked up with VPERMB
// in a 64-byte table of the levels + 128, the 16 four times over (Z20), so only a byte's low
// four bits choose (VPERMB reads six) and neither nibble needs a mask first: the low nibbles
// straight from the transposed payload dwords, the high ones after a shift (bits 4 and 5 of
// each shifted byte, the next byte's low bits, choose nothing). The same bytes as the other
// kernel's, so the same scores bit for bit, with q4_0's count of operations a block (a permute
// where q4_0 masks) and 8 fewer than VPSHUFB's: on Zen 5 ~3% less time in cache (thread CPU
// time, interleaved); on Intel (instruction tables, Ice Lake and Sapphire Rapids) VPERMB is one
// port-5 µop as VPSHUFB is, and the 8 masks it saves ran on ports 0 and 5.
TEXT ·multiScoresIQ4NLVBMI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   vbmiIQ4_done
	VBROADCASTI32X4 ·vnniIQ4NLU8(SB), Z20 // the levels + 128, four times over

vbmiIQ4_group:
	// Row-group pointers: CX rows 0..3, BX rows 4..7, R14 rows 8..11, R15 rows 12..15.
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15

	// Stage every block's sixteen scales (32 bytes per block) before the arithmetic needs them.
	MOVQ stage+16(FP), SI
	MOVQ nb+24(FP), R11
vbmiIQ4_stage:
	STAGE(CX, 0)
	STAGE(BX, 1)
	STAGE(R14, 2)
	STAGE(R15, 3)
	ADDQ $18, CX
	ADDQ $18, BX
	ADDQ $18, R14
	ADDQ $18, R15
	ADDQ $32, SI
	DECQ R11
	JNZ  vbmiIQ4_stage

	LEAQ 2(DI), CX             // payloads of block 0
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ stage+16(FP), R13
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 320 bytes
	SHLQ $4, AX                // per block (a group is 16·18 = 288 bytes per block)
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

vbmiIQ4_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	ADDQ $320, AX
	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
	VPERMB Z20, Z25, Z0
	VPSRLD $4, Z25, Z4
	VPERMB Z20, Z4, Z4
	VPERMB Z20, Z26, Z1
	VPSRLD $4, Z26, Z5
	VPERMB Z20, Z5, Z5
	VPERMB Z20, Z27, Z2
	VPSRLD $4, Z27, Z6
	VPERMB Z20, Z6, Z6
	VPERMB Z20, Z28, Z3
	VPSRLD $4, Z28, Z7
	VPERMB Z20, Z7, Z7

	VPBROADCASTD 48(DX), Z12   // −128·ΣQ: the levels' offset
	VPBROADCASTD 52(DX), Z13
	VPBROADCASTD 56(DX), Z14
	VPBROADCASTD 60(DX), Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CHAINS1
	FINISHES1

	ADDQ $18, CX
	ADDQ $18, BX
	ADDQ $18, R14
	ADDQ $18, R15
	ADDQ $128, SI
	ADDQ $96, DX
	ADDQ $32, R13
	DECQ R11
	JNZ  vbmiIQ4_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  vbmiIQ4_strided
	SCORES_CONTIG
	JMP  vbmiIQ4_next

vbmiIQ4_strided:
	SCORES_STRIDED

vbmiIQ4_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  vbmiIQ4_group

vbmiIQ4_done:
	VZEROUPPER
	RET

// CHAINH adds code vector c times the high digit's four bytes at offset off of each query
// (query h's at off + 64h(SI)) into the query's one chain (Z12+h); CHAINL the low digit's
// (off + 32 + 64h). FINISHS converts a query's chain a (the exact int32 dot) and adds it, times
// the query's block scale (4h(DX)) and the rows' block scales (Z24), to acc (b a temporary).
#define CHAINH(c, off) \
	VPDPBUSD.BCST off(SI), c, Z12; \
	VPDPBUSD.BCST off+64(SI), c, Z13; \
	VPDPBUSD.BCST off+128(SI), c, Z14; \
	VPDPBUSD.BCST off+192(SI), c, Z15

#define CHAINL(c, off) \
	VPDPBUSD.BCST off+32(SI), c, Z12; \
	VPDPBUSD.BCST off+96(SI), c, Z13; \
	VPDPBUSD.BCST off+160(SI), c, Z14; \
	VPDPBUSD.BCST off+224(SI), c, Z15

#define FINISHS(a, b, h, acc) \
	VCVTDQ2PS a, a; \
	VMULPS.BCST (4*h)(DX), Z24, b; \
	VFMADD231PS b, a, acc

// func multiScoresQ80VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// The q8_0 scores kernel: multiScoresQ40VNNI's method for 8-bit codes and a two-digit query
// (Q = 2⁸·hi + lo). A block's 32 codes are eight payload dwords, transposed in two halves;
// VPDPBUSD takes them as unsigned bytes c + 128, so each digit's chain starts at −128·Σ(its
// digits) (aux) and holds that digit's exact dot with the codes; 2⁸·hi + lo (at most 2²⁷ in
// magnitude) is formed in int32 and scaled as in the q4_0 kernel.
//
// The rows' block scales reach the blocks through the stage (32 bytes a block, row 4g+m's at
// lane 4m+g, as VCVTPH2PS takes them), written a group ahead: a pass stages the first group's
// before its blocks, and each group's blocks stage the next group's (STAGEN: a scalar load and
// a 2-byte store a row and block) into the stage's other buffer, so no block waits on stores
// just made, and the next group's rows come into L1 before its blocks; the last group stages
// nothing and reads no row past its own (TestVNNIQ8Guard). The same scales in the same lanes,
// so the same scores bit for bit (TestVNNIQ8Scores: q8Model, which the kernels staging each
// group in a pass before its blocks matched too).
//
// On AMD Zen 4 (EPYC Genoa, ~3.45 GHz, shared), the Zen 4 flavour against those kernels, ns a
// row of 128 values: 4096 rows, four queries, thread CPU time, alternated, 7–9 rounds,
// min/median: in cache 7.32/7.37 → 6.36/6.48, streamed past the caches (64 MiB) 8.00/8.06 →
// 6.92/6.98. The one-thread decode at the bench shape (native/attn, 131072 cells, q8_0 keys
// and values, min of 7, 5 alternations, load ~13): whole 20.0–21.6 → 18.1–19.9, its scores
// alone 8.4–8.7 → 7.1–8.0 (TestDecodeBreakdown, 15 alternations, median of the mins: scores
// 8.43 → 6.81). The pass had cost ~1 ns a row in cache (scales left stale, for the measurement
// only: 7.33 → 6.35) and had pulled the group's rows into L1, which the blocks, prefetching
// only into L2, need streamed (10.2 without it). Not kept: the pass kept and the next group
// prefetched into L1 (PREFETCHT0 one or two groups ahead): streamed 7.9 → 8.5–8.7; staging
// two groups ahead (four buffers): streamed 6.7 → 7.6 (8.0 with PFGROUPS 6 or 8); the staging
// after the block's VPDPBUSD: in cache 0.1–0.2 less, streamed 10–12.6; PFGROUPS 3, 5, 6, 8:
// streamed 7.4, 6.9, 7.1, 7.6 against 6.9 at 4; each row's 32 codes loaded whole, two rows a
// vector (VINSERTI64X4), split by VSHUFI64X2 before the transposes: in cache the same,
// streamed 6.8 → 7.8; masked VBROADCASTI32X4 loads for the inserts, or s·d formed before the
// VPDPBUSD: no faster. What is left is the vector pipes': the 64 VPDPBUSD of a block of
// sixteen rows hold both multiply pipes 64 cycles (61 measured alone: 4.4 ns a row), the
// block ~87 (without its 24 inserts, wrong scores, 0.8 ns a row less).
// Not measured on Intel (Ice Lake to Sapphire Rapids): the staging's loads and stores take the
// load and store ports as the pass's did, no shuffle is added, and the scale load no longer
// waits on stores, so it should not cost there.
TEXT ·multiScoresQ80VNNI(SB), NOSPLIT, $48-80
#define Q80PF PREFETCHT0
#include "multi_vnni_q80_amd64.h"
#undef Q80PF

// func multiScoresQ80Z4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ80VNNI prefetching into L2 (PREFETCHT1), not L1, for AMD Zen 4 (zen4Stream,
// cpuid_amd64.go, has the measurements).
TEXT ·multiScoresQ80Z4VNNI(SB), NOSPLIT, $48-80
#define Q80PF PREFETCHT1
#define Q80SHLD
#include "multi_vnni_q80_amd64.h"
#undef Q80SHLD
#undef Q80PF

// func multiScoresQ80OneVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ80VNNI with a one-digit query (vnniQ8One): the codes as there (c + 128), each
// query's two chains as in the q4_0 kernel, the first started at −128·ΣQ, so their sum is
// Σ Q·c exactly in int32 (at most 32·127·128 = 520192 in magnitude, exact in float32 too):
// eight VPDPBUSD a query and block, not sixteen.
TEXT ·multiScoresQ80OneVNNI(SB), NOSPLIT, $48-80
#define Q80PF PREFETCHT0
#define Q80ONE
#include "multi_vnni_q80_amd64.h"
#undef Q80ONE
#undef Q80PF

// func multiScoresQ80OneIntelVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ80OneVNNI prefetching (PREFETCHT0) two groups of sixteen rows past each group's
// rows (Q80PFGROUPS; 4352 bytes at 128 values a row) in place of four (PFGROUPS), for Intel CPUs
// (intelCPU): the same code but the prefetch pointer, so the same scores bit for bit. The
// distance goes in groups: a group's nine prefetches a block reach the group that many on, and
// the lines of the nearest prefetched group are first read when that group starts. 4352 bytes
// at 256 values a row (one group ahead) took 35.1–39.4 ns a row against 24.7–25.6 with four;
// two groups 24.7–24.8 (at 64 values a row 5.25–5.30 against 5.42–5.60 with four, 4352 bytes;
// same harness, 10 passes, load 11–24, two runs). Measured on an Intel Xeon
// (Sapphire Rapids class, KVM, 2 shared vCPUs at load 5–13; thread CPU time, alternated in one
// process or test binaries alternated): kvq TestQ80IntelSpeed (decode's order: chunks of 16384
// rows, scores then values, 128 MiB each on 2 MiB pages; 128 values a row; ns a row
// min/median) 12.23/12.72 → 10.90/11.20; over the distances (same harness, 12–14 passes, min;
// scratch flavours with the distance in bytes): 2720 bytes 12.8, 3264
// 12.1–12.5, 3808 10.7–11.4, 4352 10.2–11.0, 4896 10.4–11.2, 5440 11.5–11.8, 6528 12.6–13.5,
// 8704 (PFGROUPS, this kernel's) 12.6–13.1, 17408 13.7, the current group's rows 14.0–14.9;
// PREFETCHT1 at 3264, 4352 and 5440 13.1, 11.8–12.4, 11.7; PREFETCHNTA at 8704 20.1; a second
// level beside PREFETCHT0 at 4352 (PREFETCHT1 at 8704, 13056 or 17408, PREFETCHT2 at 13056)
// 10.1–10.5 against 10.2: no gain. native/attn TestDecodeBreakdown (q8_0, 131072 cells, six
// alternations of the test binaries, load 12–13, ns a cell min): scores 12.22–12.46 →
// 10.35–10.89, whole 23.07–24.01 → 21.43–22.02. In cache it is the other kernel (4.8 ns a row):
// the kernel waits on memory, at ~13 GB/s where a plain read streams at 15.5–16.5 here: with
// its VPDPBUSD chains taken out (wrong scores, the same loads and prefetches) it streamed in the
// same time (scores alone, no values between: 9.97/10.31 against 9.96/10.33; without the
// transposes too 9.61/10.21), in cache 3.5 and 3.1 ns a row against 4.8. Not kept either: the
// 35 prefetches of a group's lines at its start in place of nine a block (2176, 4352, 6528 and
// 8704 bytes ahead: 12.0, 11.5, 13.3 and 13.5 against ~10.0).
TEXT ·multiScoresQ80OneIntelVNNI(SB), NOSPLIT, $48-80
#define Q80PF PREFETCHT0
#define Q80PFGROUPS 2
#define Q80ONE
#include "multi_vnni_q80_amd64.h"
#undef Q80ONE
#undef Q80PFGROUPS
#undef Q80PF

// func multiScoresQ80OneIntelTwoVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ80OneIntelVNNI taking the call's groups of sixteen rows from its two halves in
// turn (Q80TWO), each half read in order, its prefetches two groups on in the group's own half,
// for Intel CPUs where the out stride is 16 bytes or more (q80IntelTwo): the same code a row,
// so the same scores bit for bit (TestQ80IntelMatches). Measurements: q80IntelTwo.
TEXT ·multiScoresQ80OneIntelTwoVNNI(SB), NOSPLIT, $80-80
#define Q80PF PREFETCHT0
#define Q80PFGROUPS 2
#define Q80ONE
#define Q80TWO
#include "multi_vnni_q80_amd64.h"
#undef Q80TWO
#undef Q80ONE
#undef Q80PFGROUPS
#undef Q80PF

// func multiScoresQ80OneZ4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ80OneVNNI prefetching into L2 (PREFETCHT1), as multiScoresQ80Z4VNNI, with one
// chain a query (Q80ONE1: CHAINQ1, FINISHQ1), started at −128·ΣQ and eight VPDPBUSD deep, in
// place of two (four VPXORD and four VPADDD a block fewer, the same int32 sums, so the same
// scores bit for bit). Four chains of latency 4 still issue one VPDPBUSD a cycle on Zen 4.
// Measured on AMD Zen 4 (shared 2 vCPUs, load ~3.5–4.5, thread CPU time, alternated),
// two chains → one: TestVNNIQ8OneSpeed (4096 rows of 128 values, 4 queries, ns a row, min,
// 8 runs) in cache 4.36–4.45 → 4.25–4.31 (lower in all 8), streamed 6.65–8.39 → 5.94–7.33
// (lower in 7); native/attn TestDecodeBreakdown (q8_0, 131072 cells on 2 MiB pages, 25
// alternations, scores ns a cell, min/median of the runs' minima) 5.14/5.35 → 5.01/5.25,
// lower in 15 of 25 (median difference −0.06). multiScoresQ80OneVNNI keeps two chains: on
// Intel (VPDPBUSD zmm measured on a Sapphire Rapids class Xeon: latency 5–6, two a cycle on
// ports 0 and 5, multi_intacc_amd64.go's intAcc) four chains would issue at most ~0.7 a cycle;
// the kernel not measured there. Not kept (same harness, against
// this kernel): LOAD4's inserts by LOAD4Y's route (two 256-bit inserts and a 512-bit one, as
// q4_0's Z4 flavours), in cache 4.26–4.40 → 4.21–4.34 (lower in 4 of 4), streamed 6.19–7.35
// → 5.83–6.86, but the decode's scores (load ~3.5, 32 alternations) min/median of the runs'
// minima 5.20/6.38 → 5.37/6.43, lower in 17 of 32: within noise.
TEXT ·multiScoresQ80OneZ4VNNI(SB), NOSPLIT, $48-80
#define Q80PF PREFETCHT1
#define Q80ONE
#define Q80ONE1
#include "multi_vnni_q80_amd64.h"
#undef Q80ONE1
#undef Q80ONE
#undef Q80PF

// func multiScoresQ80OneZ4RunsVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf int)
// multiScoresQ80OneZ4VNNI for one run of a paged cache's rows (vnniScoresRunsStride), its
// prefetches (Q80RUNS) pf bytes past each group's rows, pf the offset of the next run from
// this one, where multiScoresQ80OneZ4VNNI's go 64 rows on: a page of 64 rows ahead either
// way, but at the next page's rows rather than at the memory that follows this page's (in a
// paged cache the same head's V rows). The same scores, bit for bit (measurements: runsPF,
// multi_runs_amd64.go).
TEXT ·multiScoresQ80OneZ4RunsVNNI(SB), NOSPLIT, $48-88
#define Q80PF PREFETCHT1
#define Q80ONE
#define Q80ONE1
#define Q80RUNS
#include "multi_vnni_q80_amd64.h"
#undef Q80RUNS
#undef Q80ONE1
#undef Q80ONE
#undef Q80PF

// DIGITS2 writes the two digit rows of sixteen integers z (Q) at off(DI) and off+32(DI):
// lo = ((Q+128)&255)−128, hi = (Q−lo)>>8, each packed to bytes (Z20 = 128, Z21 = 255), and adds
// them to Z26 (hi) and Z27 (lo). Clobbers Z16, Z17.
#define DIGITS2(z, off) \
	VPADDD Z20, z, Z16; \
	VPANDD Z21, Z16, Z16; \
	VPSUBD Z20, Z16, Z16; \
	VPSUBD Z16, z, Z17; \
	VPSRAD $8, Z17, Z17; \
	VPMOVDB Z17, off(DI); \
	VPMOVDB Z16, off+32(DI); \
	VPADDD Z17, Z26, Z26; \
	VPADDD Z16, Z27, Z27

// SUMD leaves in AX the sum of z's sixteen dwords (y: z's low half; clobbers Z29, Z30).
#define SUMD(z, y) \
	VEXTRACTI32X8 $1, z, Y29; \
	VPADDD Y29, y, Y29; \
	VEXTRACTI32X4 $1, Y29, X30; \
	VPADDD X30, X29, X29; \
	VPSHUFD $0x4E, X29, X30; \
	VPADDD X30, X29, X29; \
	VPSHUFD $0xB1, X29, X30; \
	VPADDD X30, X29, X29; \
	VMOVD X29, AX

// func vnniDigitsAVX512(dig *byte, aux *uint32, q *float32, d, nb, nd int) bool
// vnniDigits (multi_vnni_amd64.go) for finite queries, bit for bit; false, with nothing
// defined written, when a block holds a NaN or an infinity.
TEXT ·vnniDigitsAVX512(SB), NOSPLIT, $0-49
	MOVQ dig+0(FP), DI
	MOVQ aux+8(FP), DX
	MOVQ q+16(FP), SI
	MOVQ d+24(FP), R8
	SHLQ $2, R8                // bytes between queries
	MOVQ nb+32(FP), R9
	MOVQ nd+40(FP), R12
	MOVQ R12, R13
	SHLQ $5, R13               // bytes of one query's digits in a block
	MOVL $0x7FFFFFFF, AX
	VPBROADCASTD AX, Z22       // |x|
	MOVL $128, AX
	VPBROADCASTD AX, Z20
	MOVL $255, AX
	VPBROADCASTD AX, Z21
	MOVL $127, AX              // qmax: vnniQMax1 or vnniQMax2
	CMPQ R12, $1
	JEQ  digits_qmax
	MOVL $32639, AX
digits_qmax:
	VPBROADCASTD AX, Z23
	VPXORD Z24, Z24, Z24
	VPSUBD Z23, Z24, Z24       // −qmax
	VCVTDQ2PS Z23, Z25         // qmax as float32 (exact)
	MOVL $0x00800000, AX       // 2⁻¹²⁶, the smallest normal float32
	VMOVD AX, X31
digits_blk:
	VPXORD Z6, Z6, Z6          // aux words a query leaves alone are 0
	VMOVDQU32 Z6, (DX)
	VMOVDQU32 Y6, 64(DX)
	XORQ R10, R10              // query
	MOVQ SI, BX
digits_q:
	VMOVUPS (BX), Z0
	VMOVUPS 64(BX), Z1
	VFPCLASSPSZ $0x99, Z0, K1   // QNaN, SNaN, ±Inf
	VFPCLASSPSZ $0x99, Z1, K2
	KORW K1, K2, K1
	KORTESTW K1, K1
	JNZ  digits_nonfinite
	VPANDD Z22, Z0, Z2
	VPANDD Z22, Z1, Z3
	VMAXPS Z3, Z2, Z2
	VEXTRACTF32X8 $1, Z2, Y3
	VMAXPS Y3, Y2, Y2
	VEXTRACTF128 $1, Y2, X3
	VMAXPS X3, X2, X2
	VPERMILPS $0x4E, X2, X3
	VMAXPS X3, X2, X2
	VPERMILPS $0xB1, X2, X3
	VMAXPS X3, X2, X2          // m in every lane
	VDIVSS X25, X2, X4         // s = m / qmax
	VUCOMISS X31, X4
	JAE  digits_scaled         // s is a normal number
	// s is 0 or not normal: no digits, and the aux words stay 0.
	VPXORD Z6, Z6, Z6
	VMOVDQU32 Y6, (DI)
	CMPQ R12, $1
	JEQ  digits_next
	VMOVDQU32 Y6, 32(DI)
	JMP  digits_next
digits_scaled:
	VMOVSS X4, (DX)(R10*4)
	VDIVSS X2, X25, X5         // inv = qmax / m
	VBROADCASTSS X5, Z5
	VMULPS Z5, Z0, Z0
	VMULPS Z5, Z1, Z1
	VCVTPS2DQ Z0, Z0           // round to nearest even
	VCVTPS2DQ Z1, Z1
	VPMINSD Z23, Z0, Z0
	VPMINSD Z23, Z1, Z1
	VPMAXSD Z24, Z0, Z0
	VPMAXSD Z24, Z1, Z1
	VPADDD Z1, Z0, Z6          // ΣQ
	SUMD(Z6, Y6)
	VMOVD AX, X7
	VCVTDQ2PS X7, X7
	VMOVSS X7, 80(DX)(R10*4)   // float32(ΣQ)
	MOVL AX, CX
	IMULL $-8, CX
	MOVL CX, 16(DX)(R10*4)
	MOVL AX, CX
	IMULL $-16, CX
	MOVL CX, 32(DX)(R10*4)
	CMPQ R12, $1
	JNE  digits_two
	VPMOVDB Z0, (DI)
	VPMOVDB Z1, 16(DI)
	IMULL $-128, AX
	MOVL AX, 48(DX)(R10*4)
	JMP  digits_next
digits_two:
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	DIGITS2(Z0, 0)
	DIGITS2(Z1, 16)
	SUMD(Z26, Y26)
	IMULL $-128, AX
	MOVL AX, 48(DX)(R10*8)
	SUMD(Z27, Y27)
	IMULL $-128, AX
	MOVL AX, 52(DX)(R10*8)
digits_next:
	ADDQ R13, DI
	ADDQ R8, BX
	INCQ R10
	CMPQ R10, $4
	JLT  digits_q
	ADDQ $128, SI              // next block of every query
	ADDQ $96, DX
	DECQ R9
	JNZ  digits_blk
	MOVB $1, ret+48(FP)
	VZEROUPPER
	RET
digits_nonfinite:
	MOVB $0, ret+48(FP)
	VZEROUPPER
	RET

// NIBBLESG splits V0..V3 (Z25..Z28) into the code vectors Z0..Z7 as the q5 kernels' twelve
// operations do: the low nibbles by a mask (Z31), the high ones moved down by one GF(2) affine
// byte transform (Z20: out bits 0..3 = bits 4..7, the rest 0) in place of a shift and a mask.
#define NIBBLESG \
	VPANDD Z31, Z25, Z0; \
	VGF2P8AFFINEQB $0, Z20, Z25, Z4; \
	VPANDD Z31, Z26, Z1; \
	VGF2P8AFFINEQB $0, Z20, Z26, Z5; \
	VPANDD Z31, Z27, Z2; \
	VGF2P8AFFINEQB $0, Z20, Z27, Z6; \
	VPANDD Z31, Z28, Z3; \
	VGF2P8AFFINEQB $0, Z20, Z28, Z7

// FIFTHG adds 16 (Z22) to the bytes of code vector c (values 4k..4k+3 of each lane) whose
// fifth bit is set: VPSHUFBITQMB picks, for byte i of lane L, bit 32·(L mod 2) + 4k + i of
// the lanes' qh dwords (Z23, two lanes a qword) into mask bit 4L + i (·vnniQ5Bit, 64 bytes a
// k): one mask operation a vector where FIFTH takes a shuffle and two tests a pair.
#define FIFTHG(k, c, m) \
	VPSHUFBITQMB ·vnniQ5Bit+(64*k)(SB), Z23, m; \
	VPADDB Z22, c, m, c

// FIFTHSG is FIFTHG over the eight code vectors Z0..Z7 (values 4k.. in Zk).
#define FIFTHSG \
	FIFTHG(0, Z0, K1); \
	FIFTHG(1, Z1, K2); \
	FIFTHG(2, Z2, K3); \
	FIFTHG(3, Z3, K4); \
	FIFTHG(4, Z4, K1); \
	FIFTHG(5, Z5, K2); \
	FIFTHG(6, Z6, K3); \
	FIFTHG(7, Z7, K4)

// vnniQ5Bit: FIFTHG's bit indices, 64 bytes for each k = 0..7; every qword (lanes 2j and
// 2j+1) reads 4k+i (i = 0..3) for the even lane's bytes and 32+4k+i for the odd lane's.
DATA ·vnniQ5Bit+0(SB)/8, $0x2322212003020100
DATA ·vnniQ5Bit+8(SB)/8, $0x2322212003020100
DATA ·vnniQ5Bit+16(SB)/8, $0x2322212003020100
DATA ·vnniQ5Bit+24(SB)/8, $0x2322212003020100
DATA ·vnniQ5Bit+32(SB)/8, $0x2322212003020100
DATA ·vnniQ5Bit+40(SB)/8, $0x2322212003020100
DATA ·vnniQ5Bit+48(SB)/8, $0x2322212003020100
DATA ·vnniQ5Bit+56(SB)/8, $0x2322212003020100
DATA ·vnniQ5Bit+64(SB)/8, $0x2726252407060504
DATA ·vnniQ5Bit+72(SB)/8, $0x2726252407060504
DATA ·vnniQ5Bit+80(SB)/8, $0x2726252407060504
DATA ·vnniQ5Bit+88(SB)/8, $0x2726252407060504
DATA ·vnniQ5Bit+96(SB)/8, $0x2726252407060504
DATA ·vnniQ5Bit+104(SB)/8, $0x2726252407060504
DATA ·vnniQ5Bit+112(SB)/8, $0x2726252407060504
DATA ·vnniQ5Bit+120(SB)/8, $0x2726252407060504
DATA ·vnniQ5Bit+128(SB)/8, $0x2b2a29280b0a0908
DATA ·vnniQ5Bit+136(SB)/8, $0x2b2a29280b0a0908
DATA ·vnniQ5Bit+144(SB)/8, $0x2b2a29280b0a0908
DATA ·vnniQ5Bit+152(SB)/8, $0x2b2a29280b0a0908
DATA ·vnniQ5Bit+160(SB)/8, $0x2b2a29280b0a0908
DATA ·vnniQ5Bit+168(SB)/8, $0x2b2a29280b0a0908
DATA ·vnniQ5Bit+176(SB)/8, $0x2b2a29280b0a0908
DATA ·vnniQ5Bit+184(SB)/8, $0x2b2a29280b0a0908
DATA ·vnniQ5Bit+192(SB)/8, $0x2f2e2d2c0f0e0d0c
DATA ·vnniQ5Bit+200(SB)/8, $0x2f2e2d2c0f0e0d0c
DATA ·vnniQ5Bit+208(SB)/8, $0x2f2e2d2c0f0e0d0c
DATA ·vnniQ5Bit+216(SB)/8, $0x2f2e2d2c0f0e0d0c
DATA ·vnniQ5Bit+224(SB)/8, $0x2f2e2d2c0f0e0d0c
DATA ·vnniQ5Bit+232(SB)/8, $0x2f2e2d2c0f0e0d0c
DATA ·vnniQ5Bit+240(SB)/8, $0x2f2e2d2c0f0e0d0c
DATA ·vnniQ5Bit+248(SB)/8, $0x2f2e2d2c0f0e0d0c
DATA ·vnniQ5Bit+256(SB)/8, $0x3332313013121110
DATA ·vnniQ5Bit+264(SB)/8, $0x3332313013121110
DATA ·vnniQ5Bit+272(SB)/8, $0x3332313013121110
DATA ·vnniQ5Bit+280(SB)/8, $0x3332313013121110
DATA ·vnniQ5Bit+288(SB)/8, $0x3332313013121110
DATA ·vnniQ5Bit+296(SB)/8, $0x3332313013121110
DATA ·vnniQ5Bit+304(SB)/8, $0x3332313013121110
DATA ·vnniQ5Bit+312(SB)/8, $0x3332313013121110
DATA ·vnniQ5Bit+320(SB)/8, $0x3736353417161514
DATA ·vnniQ5Bit+328(SB)/8, $0x3736353417161514
DATA ·vnniQ5Bit+336(SB)/8, $0x3736353417161514
DATA ·vnniQ5Bit+344(SB)/8, $0x3736353417161514
DATA ·vnniQ5Bit+352(SB)/8, $0x3736353417161514
DATA ·vnniQ5Bit+360(SB)/8, $0x3736353417161514
DATA ·vnniQ5Bit+368(SB)/8, $0x3736353417161514
DATA ·vnniQ5Bit+376(SB)/8, $0x3736353417161514
DATA ·vnniQ5Bit+384(SB)/8, $0x3b3a39381b1a1918
DATA ·vnniQ5Bit+392(SB)/8, $0x3b3a39381b1a1918
DATA ·vnniQ5Bit+400(SB)/8, $0x3b3a39381b1a1918
DATA ·vnniQ5Bit+408(SB)/8, $0x3b3a39381b1a1918
DATA ·vnniQ5Bit+416(SB)/8, $0x3b3a39381b1a1918
DATA ·vnniQ5Bit+424(SB)/8, $0x3b3a39381b1a1918
DATA ·vnniQ5Bit+432(SB)/8, $0x3b3a39381b1a1918
DATA ·vnniQ5Bit+440(SB)/8, $0x3b3a39381b1a1918
DATA ·vnniQ5Bit+448(SB)/8, $0x3f3e3d3c1f1e1d1c
DATA ·vnniQ5Bit+456(SB)/8, $0x3f3e3d3c1f1e1d1c
DATA ·vnniQ5Bit+464(SB)/8, $0x3f3e3d3c1f1e1d1c
DATA ·vnniQ5Bit+472(SB)/8, $0x3f3e3d3c1f1e1d1c
DATA ·vnniQ5Bit+480(SB)/8, $0x3f3e3d3c1f1e1d1c
DATA ·vnniQ5Bit+488(SB)/8, $0x3f3e3d3c1f1e1d1c
DATA ·vnniQ5Bit+496(SB)/8, $0x3f3e3d3c1f1e1d1c
DATA ·vnniQ5Bit+504(SB)/8, $0x3f3e3d3c1f1e1d1c
GLOBL ·vnniQ5Bit(SB), RODATA|NOPTR, $512

// func multiScoresQ50GFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ50GFNI and multiScoresQ51GFNI are multiScoresQ50VNNI and multiScoresQ51VNNI with
// the codes formed by NIBBLESG and FIFTHSG (AVX-512 GFNI and BITALG): the same code vectors,
// so the same scores bit for bit, in 24 vector operations a block and sixteen rows where the
// others take 32 (8 of them mask tests; multi_vnni_amd64.go's q5ScoresGFNI has the
// measurements).
TEXT ·multiScoresQ50GFNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   gfniQ50_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x1020408000000000, AX // NIBBLESG's matrix: bits 4..7 to 0..3
	VPBROADCASTQ AX, Z20
	MOVL $0x10101010, AX       // FIFTHSG's 16
	VPBROADCASTD AX, Z22

gfniQ50_group:
	// Row-group pointers to block 0's payloads: CX rows 0..3, BX rows 4..7, R14 rows 8..11,
	// R15 rows 12..15.
	LEAQ 6(DI), CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 448 bytes
	SHLQ $4, AX                // per block (a group is 16·22 = 352 bytes per block)
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

gfniQ50_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 384(AX)
	ADDQ $448, AX
	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
	NIBBLESG

	HDRI(-6)                   // the rows' headers (Z29, Z30)
	VMOVDQU64 ·vnniHdr50QH(SB), Z23 // the rows' high-bit dwords: words 1 and 2 of each header
	VPERMI2W Z30, Z29, Z23
	FIFTHSG
	VPBROADCASTD 32(DX), Z12   // −16·ΣQ: the codes' offset
	VPBROADCASTD 36(DX), Z13
	VPBROADCASTD 40(DX), Z14
	VPBROADCASTD 44(DX), Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CHAINS1
	VMOVDQU64 ·vnniHdr50D(SB), Z24 // the rows' block scales: word 0 of each header
	VPERMI2W Z30, Z29, Z24
	VCVTPH2PS Y24, Z24
	FINISH1(Z12, Z16, 0, Z8)
	FINISH1(Z13, Z17, 1, Z9)
	FINISH1(Z14, Z18, 2, Z10)
	FINISH1(Z15, Z19, 3, Z11)

	ADDQ $22, CX
	ADDQ $22, BX
	ADDQ $22, R14
	ADDQ $22, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  gfniQ50_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  gfniQ50_strided
	SCORES_CONTIG
	JMP  gfniQ50_next

gfniQ50_strided:
	SCORES_STRIDED

gfniQ50_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  gfniQ50_group

gfniQ50_done:
	VZEROUPPER
	RET

// func multiScoresQ51GFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
TEXT ·multiScoresQ51GFNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   gfniQ51_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x1020408000000000, AX // NIBBLESG's matrix: bits 4..7 to 0..3
	VPBROADCASTQ AX, Z20
	MOVL $0x10101010, AX       // FIFTHSG's 16
	VPBROADCASTD AX, Z22

gfniQ51_group:
	// Row-group pointers to block 0's payloads: CX rows 0..3, BX rows 4..7, R14 rows 8..11,
	// R15 rows 12..15.
	LEAQ 8(DI), CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead, 448 bytes
	SHLQ $4, AX                // per block (a group is 16·24 = 384 bytes per block)
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

gfniQ51_blk:
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 384(AX)
	ADDQ $448, AX
	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
	NIBBLESG

	HDRI(-8)                   // the rows' headers (Z29, Z30)
	VMOVDQU64 ·vnniHdrQH(SB), Z23 // the rows' high-bit dwords: dword 1 of each header
	VPERMI2D Z30, Z29, Z23
	VMOVDQU64 ·vnniHdrDM(SB), Z24 // the rows' block scales (words 0..15) and minima (16..31):
	VPERMI2W Z30, Z29, Z24       // words 0 and 1 of each header
	VEXTRACTI64X4 $1, Z24, Y25
	VCVTPH2PS Y24, Z24
	VCVTPH2PS Y25, Z25
	FIFTHSG
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CHAINS1
	FINISHES41

	ADDQ $24, CX
	ADDQ $24, BX
	ADDQ $24, R14
	ADDQ $24, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  gfniQ51_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  gfniQ51_strided
	SCORES_CONTIG
	JMP  gfniQ51_next

gfniQ51_strided:
	SCORES_STRIDED

gfniQ51_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  gfniQ51_group

gfniQ51_done:
	VZEROUPPER
	RET

// The header-register kernels (multiScoresQ40HdrVNNI, multiScoresQ41HdrVNNI,
// multiScoresIQ4NLHdrVNNI and multiScoresIQ4NLHdrVBMI) are the kernels above with the rows'
// block headers read into registers at the start of each chunk of four blocks in place of the
// stage: one masked 64-byte load of each row from the chunk's first block holds every header
// of the chunk (K3 masks it to the chunk's last header: K1 for a whole chunk, K2 for the row's
// last one, short or whole; no byte past a row is read), VPERMT2W gathers two rows' headers
// into one vector, inserts put four rows together, and VPERMI2W puts them in the stage's order
// (row 4g+m's at lane 4m+g), from which each block takes its own and moves the next ones down
// (NEXT18, NEXT20). The same headers in the same lanes, so the same scores bit for bit
// (TestVNNIHeaderRegs). The stage took, per row and block, a scalar load and a 2- or 4-byte
// store in a pass before the blocks, and each block's 32- or 64-byte load of it waited for
// those stores; this takes per row and chunk one load, and per chunk 10 (q4_0, iq4_nl) or 16
// (q4_1) word permutes and 6 or 4 inserts, no store. AMD Zen 4 (multi_vnni_amd64.go,
// vnniStaged, has the measurements).
//
// Not kept: staging with these loads and permutes through 64-byte stores, the block loops as
// they were: in cache as fast, streamed slower (q8_0 8.1 → 12.5 ns a row, q4_0's gain 0.15 of
// its 0.47 in cache); and q8_0 in registers (two blocks a chunk, 34-byte blocks): in cache
// 7.5 → 7.4, streamed 8.6 → 12.7 (9.8 with the stage pass's row reads kept as loads: the pass
// had pulled the group's lines into L1 ahead of its block loop, which prefetches into L2 only
// on Zen 4), so q8_0 keeps its stage, now written a group ahead (multiScoresQ80VNNI).
//
// The block loop of these kernels, per block of the sixteen rows: the payloads by one load and
// three merge-masked loads a vector of four rows (LOAD4M) in place of three 128-bit inserts;
// one VPDPBUSD chain a query (CHAINSM) in place of two summed by a VPADDD (so four zeroed
// accumulators fewer); q4_1's scales and minima split once a chunk (HDRR20) in place of two
// VPMOVDW and a shift a block. q4_0's loop is per block 32 VPDPBUSD, 16 payload loads (12 of
// them masked), 8 unpacks, 12 nibble operations, 4 offset broadcasts, 13 to finish, 2 to move
// the headers down and ~9 (35 a chunk) to read them, and 5 prefetches: ~101, 25 a row of 128
// values, where it was ~109. All exact: the same int32 sums and the same float operations, so
// the same scores bit for bit (TestVNNIHeaderRegs). The merge-masked loads start 16L bytes
// before lane L's row (masked-off bytes are neither read nor faulted on). AMD Zen 4 (4096 rows
// of 128 values, 4 queries, thread CPU time, old and new alternated 20 times, three runs, ns a
// row, min): q4_0 4.30 → 4.02 in cache, 4.69–4.87 → 4.54–4.87 streamed past the caches; q4_1
// 4.77 → 4.25, 5.00–5.41 → 4.72–5.49; iq4_nl (VBMI) 4.87 → 4.22, 5.17–5.37 → 4.70–5.29. In the
// one-thread decode at the bench shape (native/attn TestDecodeBreakdown, 131072 cells, old and
// new alternated 8 times, load ~7 on 2 vCPUs), the scores phase, ns a cell, min: q4_0 4.81 →
// 4.30, q4_1 4.99 → 4.64, iq4_nl 5.00 → 4.65; with the keys in cache (KVLAB_TOUCH=k) 4.34 →
// 4.03, 4.78 → 4.20, 4.94 → 4.19. Not kept: a 128-bit VBROADCASTI32X4 merge-masked in place of each masked load (q4_0 4.16 in
// cache, no faster than the inserts); the high nibbles by one GF(2) affine transform each
// (NIBBLESG's; four operations a block fewer): q4_0 4.00 against 4.02, q4_1 4.33 against 4.25
// (it likely shares the multiply pipes with the VPDPBUSD on Zen 4, where the shift and mask do
// not); each block's sixteen headers by one VPGATHERDD (row 4g+m's dword at lane 4m+g) and a
// VPMOVDW in place of the chunk's loads and permutes: 4.78 in cache, streamed ~0.6 slower; the
// chunk's headers stored once to the stack and each block's converted from there in place of
// NEXT18's two shuffles: 4.03–4.06, no faster. Where q4_0's 4.02 goes (each piece taken out alone, wrong scores, timing only, in
// cache): the 32 VPDPBUSD 1.29 ns a row, reading the headers 0.35, the four queries' finish
// (conversion, scale product, FMA) 0.22 over plain adds, the transpose 0.13, the nibble split
// 0.13: every vector operation a block costs ~0.04 ns a row (~0.16 a row's), so what is left
// to cut is operations, not one dear piece.
//
// On Intel (instruction tables, Ice Lake to Sapphire Rapids; not measured) the permutes and
// inserts are port-5 µops (a zmm VPERMT2W/VPERMI2W two of them): ~8 a block (q4_0) and ~9
// (q4_1) beside the block's other port-5 µops (8 unpacks, 2 header-queue moves, and the
// masked loads' 12 blends on port 0 or 5, where the inserts were 12 port-5 shuffles) and the
// 32 VPDPBUSD on port 0, where the stage took 16 stores a block on the store ports in a pass
// of its own; expect less gain there than on Zen 4, or none where port 5 then bounds the
// block loop.

// CHAINSM runs the block's eight code vectors Z0..Z7 through CHAIN1 into one accumulator a
// query (Z12..Z15), where CHAINS1 keeps two (C0..C3 and C4..C7) and FINISH1 adds them: the same
// exact int32 sum, one VPADDD a query and block fewer and no second chain to clear. Each
// query's chain is eight VPDPBUSD deep in place of four; the next block's chains, started from
// their own offsets, do not wait on it.
#define CHAINSM \
	CHAIN1(Z0, 0, Z12, Z13, Z14, Z15); \
	CHAIN1(Z4, 16, Z12, Z13, Z14, Z15); \
	CHAIN1(Z1, 4, Z12, Z13, Z14, Z15); \
	CHAIN1(Z5, 20, Z12, Z13, Z14, Z15); \
	CHAIN1(Z2, 8, Z12, Z13, Z14, Z15); \
	CHAIN1(Z6, 24, Z12, Z13, Z14, Z15); \
	CHAIN1(Z3, 12, Z12, Z13, Z14, Z15); \
	CHAIN1(Z7, 28, Z12, Z13, Z14, Z15)

// FINISHM is FINISH1 for CHAINSM's one accumulator a query (a; t a temporary).
#define FINISHM(a, t, h, acc) \
	VCVTDQ2PS a, a; \
	VMULPS.BCST (4*h)(DX), Z24, t; \
	VFMADD231PS t, a, acc

// FINISHES41M is FINISHES41 for CHAINSM's one accumulator a query: the same operations less
// the four VPADDD.
#define FINISHES41M \
	VCVTDQ2PS Z12, Z12; \
	VCVTDQ2PS Z13, Z13; \
	VCVTDQ2PS Z14, Z14; \
	VCVTDQ2PS Z15, Z15; \
	VMULPS Z24, Z12, Z12; \
	VMULPS Z24, Z13, Z13; \
	VMULPS Z24, Z14, Z14; \
	VMULPS Z24, Z15, Z15; \
	VFMADD231PS.BCST 80(DX), Z25, Z12; \
	VFMADD231PS.BCST 84(DX), Z25, Z13; \
	VFMADD231PS.BCST 88(DX), Z25, Z14; \
	VFMADD231PS.BCST 92(DX), Z25, Z15; \
	VFMADD231PS.BCST (DX), Z12, Z8; \
	VFMADD231PS.BCST 4(DX), Z13, Z9; \
	VFMADD231PS.BCST 8(DX), Z14, Z10; \
	VFMADD231PS.BCST 12(DX), Z15, Z11

// LANEMASKS sets LOAD4M's lane masks: K4 dwords 4..7, K5 8..11, K6 12..15. Clobbers AX.
#define LANEMASKS \
	MOVL $0x00F0, AX; \
	KMOVW AX, K4; \
	MOVL $0x0F00, AX; \
	KMOVW AX, K5; \
	MOVL $0xF000, AX; \
	KMOVW AX, K6

// LOAD4M is LOAD4 by merge-masked loads in place of inserts: lane L of z from row p+L·rb by a
// 64-byte load at p+L·rb−16L masked to dwords 4L..4L+3 (K4, K5, K6; masked-off bytes are not
// read, so nothing before or past the rows faults). On Intel (instruction tables, not
// measured) each is a load µop and a port-0 or port-5 blend µop, where an insert with a memory
// operand is a load and a port-5 shuffle.
#define LOAD4M(p, z, x) \
	VMOVDQU32 (p), x; \
	VMOVDQU32 -16(p)(R8*1), K4, z; \
	VMOVDQU32 -32(p)(R8*2), K5, z; \
	VMOVDQU32 -48(p)(R12*1), K6, z

// LOAD4MT is LOAD4M with LOAD4Y's arguments (the temporaries unused).
#define LOAD4MT(p, z, x, y, tx, ty) \
	LOAD4M(p, z, x)

// LOAD4Y is LOAD4M for AMD Zen 4 (q5_0's and q5_1's Z4 flavours; q4_0's and q4_1's took it before LOAD4Q): rows p and p+rb into y by a
// 128-bit load and a 256-bit insert from memory, rows p+2rb and p+3rb likewise into ty, and ty
// into the high half of z (tx, ty a temporary): lane L of z from row p+L·rb as LOAD4M's, 16
// bytes a row read. Two 256-bit inserts and one 512-bit one in place of three merge-masked
// 512-bit loads: measurements at vnniHdrZ4 (multi_vnni_amd64.go). iq4_nl's, whose lookups
// share the shuffle pipes with the inserts, took longer with it and keep LOAD4M. On Intel
// (instruction tables, not measured) three port-5 shuffles in place of three blends (port 0
// or 5): the other flavours keep LOAD4M.
#define LOAD4Y(p, z, x, y, tx, ty) \
	VMOVDQU32 (p), x; \
	VINSERTI32X4 $1, (p)(R8*1), y, y; \
	VMOVDQU32 (p)(R8*2), tx; \
	VINSERTI32X4 $1, (p)(R12*1), ty, ty; \
	VINSERTI64X4 $1, ty, z, z

// LOAD4YO is LOAD4Y at byte offset off of each row.
#define LOAD4YO(off, p, z, x, y, tx, ty) \
	VMOVDQU32 off(p), x; \
	VINSERTI32X4 $1, off(p)(R8*1), y, y; \
	VMOVDQU32 off(p)(R8*2), tx; \
	VINSERTI32X4 $1, off(p)(R12*1), ty, ty; \
	VINSERTI64X4 $1, ty, z, z

// LOAD4Q is LOAD4Y for the Zen 4 flavours of q4_0, q4_1 and iq4_nl (VBMI): row p by a 128-bit load into x and row p+rb
// by a 256-bit load at p+rb−16 masked to its high lane (K4, dwords 4..7; the masked-off bytes
// are not read) into y, rows p+2rb and p+3rb likewise into tx, ty, and ty into the high half
// of z by one insert: lane L of z from row p+L·rb as LOAD4M's. One shuffle in place of
// LOAD4Y's three (its inserts share the shuffle pipes with iq4_nl's VPERMB lookups) and two
// 256-bit masked loads in place of LOAD4M's three 512-bit ones, which cost most of the
// block's loads. Measurements at multiScoresIQ4NLHdrZ4VBMI; q4_0's and q4_1's (AMD Zen 4,
// thread CPU, 4096 rows × 128 values, 4 queries, old and new alternated in one process, p10 in
// cache / min streamed over 2 MiB pages, ns a row): q4_0 3.90 → 3.76 / 4.61 → 4.41–4.56,
// q4_1 4.17 → 4.05 / 4.70 → 4.55.
#define LOAD4Q(p, z, x, y, tx, ty) \
	VMOVDQU32 (p), x; \
	VMOVDQU32 -16(p)(R8*1), K4, y; \
	VMOVDQU32 (p)(R8*2), tx; \
	VMOVDQU32 -16(p)(R12*1), K4, ty; \
	VINSERTI64X4 $1, ty, z, z

// NIBBLES4S splits V0..V3 (Z25..Z28) into the code vectors Z0..Z7: the low nibbles by a mask
// (Z31), the high ones by a shift and the mask (twelve operations).
#define NIBBLES4S \
	VPANDD Z31, Z25, Z0; \
	VPSRLD $4, Z25, Z4; \
	VPANDD Z31, Z4, Z4; \
	VPANDD Z31, Z26, Z1; \
	VPSRLD $4, Z26, Z5; \
	VPANDD Z31, Z5, Z5; \
	VPANDD Z31, Z27, Z2; \
	VPSRLD $4, Z27, Z6; \
	VPANDD Z31, Z6, Z6; \
	VPANDD Z31, Z28, Z3; \
	VPSRLD $4, Z28, Z7; \
	VPANDD Z31, Z7, Z7

// HQ18 gathers the four block scales of the chunk at off of the rows at p, p+rb, p+2rb, p+3rb
// (18-byte blocks: q4_0, iq4_nl) into the low 16 words of za (row m's block k at word 4m+k),
// Z28 = vnniHdr18Pair. Clobbers zb, zc, zd.
#define HQ18(off, p, za, zb, zc, zd, xc, ya) \
	VMOVDQU8.Z off(p), K3, za; \
	VMOVDQU8.Z off(p)(R8*1), K3, zb; \
	VPERMT2W zb, Z28, za; \
	VMOVDQU8.Z off(p)(R8*2), K3, zc; \
	VMOVDQU8.Z off(p)(R12*1), K3, zd; \
	VPERMT2W zd, Z28, zc; \
	VINSERTI32X4 $1, xc, ya, ya

// HDRR18 reads the scales of a chunk of up to four 18-byte blocks of the sixteen rows (CX, BX,
// R14, R15 at the chunk's first block, off the header's offset from them) into Z22 (blocks 0
// and 1 of the chunk, 16 halves each) and Z23 (2, 3). Clobbers Z0..Z7, Z12..Z15, Z28.
#define HDRR18(off) \
	VMOVDQU64 ·vnniHdr18Pair(SB), Z28; \
	HQ18(off, CX, Z0, Z1, Z2, Z3, X2, Y0); \
	HQ18(off, BX, Z4, Z5, Z6, Z7, X6, Y4); \
	VINSERTI64X4 $1, Y4, Z0, Z0; \
	HQ18(off, R14, Z4, Z5, Z6, Z7, X6, Y4); \
	HQ18(off, R15, Z12, Z13, Z14, Z15, X14, Y12); \
	VINSERTI64X4 $1, Y12, Z4, Z4; \
	VMOVDQU64 ·vnniHdr18Out0(SB), Z22; \
	VPERMI2W Z4, Z0, Z22; \
	VMOVDQU64 ·vnniHdr18Out1(SB), Z23; \
	VPERMI2W Z4, Z0, Z23

// HQ18U and HDRR18U are HQ18 and HDRR18 by plain 64-byte loads, for a whole chunk (four
// blocks, 72 bytes from its first header: the loads read none past it); the permutes take
// only the header words, so the other bytes loaded do not matter, and the scales come out as
// HDRR18's. The Z4 flavours take them for whole chunks, HDRR18 for a row's short last one.
#define HQ18U(off, p, za, zb, zc, zd, xc, ya) \
	VMOVDQU64 off(p), za; \
	VMOVDQU64 off(p)(R8*1), zb; \
	VPERMT2W zb, Z28, za; \
	VMOVDQU64 off(p)(R8*2), zc; \
	VMOVDQU64 off(p)(R12*1), zd; \
	VPERMT2W zd, Z28, zc; \
	VINSERTI32X4 $1, xc, ya, ya

#define HDRR18U(off) \
	VMOVDQU64 ·vnniHdr18Pair(SB), Z28; \
	HQ18U(off, CX, Z0, Z1, Z2, Z3, X2, Y0); \
	HQ18U(off, BX, Z4, Z5, Z6, Z7, X6, Y4); \
	VINSERTI64X4 $1, Y4, Z0, Z0; \
	HQ18U(off, R14, Z4, Z5, Z6, Z7, X6, Y4); \
	HQ18U(off, R15, Z12, Z13, Z14, Z15, X14, Y12); \
	VINSERTI64X4 $1, Y12, Z4, Z4; \
	VMOVDQU64 ·vnniHdr18Out0(SB), Z22; \
	VPERMI2W Z4, Z0, Z22; \
	VMOVDQU64 ·vnniHdr18Out1(SB), Z23; \
	VPERMI2W Z4, Z0, Z23

// NEXT18 moves the next block's scales into Y22 (Z22, Z23 as one 128-byte queue).
#define NEXT18 \
	VALIGNQ $4, Z22, Z23, Z22; \
	VEXTRACTI64X4 $1, Z23, Y23

// HQ20 is HQ18 for q4_1's 20-byte blocks: the four headers (d, m) of the chunk into the 32 words
// of za (row m's block k at words 8m+2k, 8m+2k+1), Z28 = vnniHdr20Pair.
#define HQ20(off, p, za, zb, zc, zd, yc) \
	VMOVDQU8.Z off(p), K3, za; \
	VMOVDQU8.Z off(p)(R8*1), K3, zb; \
	VPERMT2W zb, Z28, za; \
	VMOVDQU8.Z off(p)(R8*2), K3, zc; \
	VMOVDQU8.Z off(p)(R12*1), K3, zd; \
	VPERMT2W zd, Z28, zc; \
	VINSERTI64X4 $1, yc, za, za

// HDRR20 is HDRR18 for q4_1's 20-byte blocks and 4-byte headers: Z20..Z23 each one block's
// sixteen headers, the scales d in words 0..15 and the minima m in words 16..31 (lane 4m+g's
// at word 4m+g and 16+4m+g), so the block loop converts the low half and the extracted high
// half (one shuffle, where splitting the stage's (d, m) dwords took two VPMOVDW and a shift).
// The four rows' vectors of each half of the group are split by blocks 0, 1 and 2, 3
// (vnniHdr20Half0/1), and each block's headers taken from the two halves (vnniHdr20Out0/1).
// Clobbers Z0..Z7, Z12..Z15, Z28.
#define HDRR20(off) \
	VMOVDQU64 ·vnniHdr20Pair(SB), Z28; \
	HQ20(off, CX, Z0, Z1, Z2, Z3, Y2); \
	HQ20(off, BX, Z4, Z5, Z6, Z7, Y6); \
	VMOVDQU64 ·vnniHdr20Half0(SB), Z12; \
	VPERMI2W Z4, Z0, Z12; \
	VMOVDQU64 ·vnniHdr20Half1(SB), Z13; \
	VPERMI2W Z4, Z0, Z13; \
	HQ20(off, R14, Z0, Z1, Z2, Z3, Y2); \
	HQ20(off, R15, Z4, Z5, Z6, Z7, Y6); \
	VMOVDQU64 ·vnniHdr20Half0(SB), Z14; \
	VPERMI2W Z4, Z0, Z14; \
	VMOVDQU64 ·vnniHdr20Half1(SB), Z15; \
	VPERMI2W Z4, Z0, Z15; \
	VMOVDQU64 ·vnniHdr20Out0(SB), Z20; \
	VPERMI2W Z14, Z12, Z20; \
	VMOVDQU64 ·vnniHdr20Out1(SB), Z21; \
	VPERMI2W Z14, Z12, Z21; \
	VMOVDQU64 ·vnniHdr20Out0(SB), Z22; \
	VPERMI2W Z15, Z13, Z22; \
	VMOVDQU64 ·vnniHdr20Out1(SB), Z23; \
	VPERMI2W Z15, Z13, Z23

// HQ20U and HDRR20U are HQ20 and HDRR20 by plain 64-byte loads, for a whole chunk (80 bytes from
// its first header), as HQ18U and HDRR18U.
#define HQ20U(off, p, za, zb, zc, zd, yc) \
	VMOVDQU64 off(p), za; \
	VMOVDQU64 off(p)(R8*1), zb; \
	VPERMT2W zb, Z28, za; \
	VMOVDQU64 off(p)(R8*2), zc; \
	VMOVDQU64 off(p)(R12*1), zd; \
	VPERMT2W zd, Z28, zc; \
	VINSERTI64X4 $1, yc, za, za

#define HDRR20U(off) \
	VMOVDQU64 ·vnniHdr20Pair(SB), Z28; \
	HQ20U(off, CX, Z0, Z1, Z2, Z3, Y2); \
	HQ20U(off, BX, Z4, Z5, Z6, Z7, Y6); \
	VMOVDQU64 ·vnniHdr20Half0(SB), Z12; \
	VPERMI2W Z4, Z0, Z12; \
	VMOVDQU64 ·vnniHdr20Half1(SB), Z13; \
	VPERMI2W Z4, Z0, Z13; \
	HQ20U(off, R14, Z0, Z1, Z2, Z3, Y2); \
	HQ20U(off, R15, Z4, Z5, Z6, Z7, Y6); \
	VMOVDQU64 ·vnniHdr20Half0(SB), Z14; \
	VPERMI2W Z4, Z0, Z14; \
	VMOVDQU64 ·vnniHdr20Half1(SB), Z15; \
	VPERMI2W Z4, Z0, Z15; \
	VMOVDQU64 ·vnniHdr20Out0(SB), Z20; \
	VPERMI2W Z14, Z12, Z20; \
	VMOVDQU64 ·vnniHdr20Out1(SB), Z21; \
	VPERMI2W Z14, Z12, Z21; \
	VMOVDQU64 ·vnniHdr20Out0(SB), Z22; \
	VPERMI2W Z15, Z13, Z22; \
	VMOVDQU64 ·vnniHdr20Out1(SB), Z23; \
	VPERMI2W Z15, Z13, Z23

// HDRR20P is HDRR20U in sixteen two-table word permutes where HDRR20U takes twenty (eight
// VPERMT2W, four inserts, eight VPERMI2W), for q4_1's Zen 4 flavour: each row quad's four plain
// 64-byte loads gathered by two VPERMI2W of ·vnniHdr20Quad merged under K5 and K6 (rows 0, 1
// and 2, 3) into one vector of the quad's headers (Z12..Z15, block b's (d, m) of row r at words
// 8b + r and 8b + 4 + r), then each block's sixteen headers from those four by two VPERMI2W of
// its ·vnniHdr20Blk (row quads 0, 1 and 2, 3, the same masks: lane 4m+g's at word 4m+g, the
// minima 16 on): the same words as HDRR20U's, so the same scores bit for bit
// (TestVNNIHeaderRegs). K5 = 0x33333333, K6 its complement (HDRK20Z4 sets them; LOAD4Q takes
// K4 alone). Clobbers Z0..Z7, Z12..Z15. AMD Zen 4 (EPYC Genoa, 2 shared vCPUs at load 11–15;
// TestVNNIHdrZ4Speed's shape, 4096 rows of 128 values, 4 queries, alternated with the kernel
// before in one process, 200 calls in cache and 6 passes over 96 MiB on 2 MiB pages, four runs,
// ns a row min/median): in cache 4.03–4.05/4.16–4.21 → 3.98–4.00/4.11–4.17, lower in four of
// four; streamed within the noise (4.67–8.5 either way). The headers cost ~0.45 of q4_1's ~4.0
// here (wrong scores, timing only, three runs: the gather taken out 3.55–3.56; its sixteen
// loads kept, the permutes out, 3.79–3.85): ~0.25 the 64-byte loads (three rows of four start
// off a 64-byte line: 80-byte rows), ~0.2 the permutes (four fewer took 0.05). Not kept (not
// measurable at load 15–19): PF20Z4's five lines a block in place of six (its 384 bytes a block
// cover 1536 where a group's rows are 1280).
// On Intel (instruction tables) a zmm VPERMI2W is three µops, two on port 5, and an insert
// one; measured, this flavour runs faster there all the same (vnniHdrZ4 has the figures), and
// Intel CPUs take it too.
#define HQ20P(off, p, a, b, c, d, g) \
	VMOVDQU64 off(p), a; \
	VMOVDQU64 off(p)(R8*1), b; \
	VMOVDQU64 off(p)(R8*2), c; \
	VMOVDQU64 off(p)(R12*1), d; \
	VMOVDQU64 ·vnniHdr20Quad(SB), g; \
	VPERMI2W b, a, K5, g; \
	VPERMI2W d, c, K6, g

#define HB20P(o, z) \
	VMOVDQU64 ·vnniHdr20Blk+o(SB), z; \
	VPERMI2W Z13, Z12, K5, z; \
	VPERMI2W Z15, Z14, K6, z

#define HDRR20P(off) \
	HQ20P(off, CX, Z0, Z1, Z2, Z3, Z12); \
	HQ20P(off, BX, Z4, Z5, Z6, Z7, Z13); \
	HQ20P(off, R14, Z0, Z1, Z2, Z3, Z14); \
	HQ20P(off, R15, Z4, Z5, Z6, Z7, Z15); \
	HB20P(0, Z20); \
	HB20P(64, Z21); \
	HB20P(128, Z22); \
	HB20P(192, Z23)

// NEXT20 moves the next block's headers into Z20.
#define NEXT20 \
	VMOVDQA64 Z21, Z20; \
	VMOVDQA64 Z22, Z21; \
	VMOVDQA64 Z23, Z22

// HDRMASKS sets K1 (a whole chunk of c blocks) and K2 (the row's last chunk) from the table at
// tab (vnniHdrNMask: the bytes to load of each row for a chunk of 1, 2, ... blocks). Clobbers
// AX, R13.
#define HDRMASKS(tab, c) \
	LEAQ tab, R13; \
	KMOVQ (8*(c-1))(R13), K1; \
	MOVQ nb+24(FP), AX; \
	DECQ AX; \
	ANDQ $(c-1), AX; \
	KMOVQ (R13)(AX*8), K2

// Tables of the header-register kernels. vnniHdrNPair: VPERMT2W's words of two rows' chunk
// headers (N-byte blocks); vnniHdrNOut*, vnniHdr20Half*: the permutes into the stage's order;
// vnniHdrNMask: the bytes to load of each row for a chunk of 1, 2, ... blocks.
DATA ·vnniHdr18Pair+0(SB)/8, $0x001b001200090000
DATA ·vnniHdr18Pair+8(SB)/8, $0x003b003200290020
DATA ·vnniHdr18Pair+16(SB)/8, $0x0000000000000000
DATA ·vnniHdr18Pair+24(SB)/8, $0x0000000000000000
DATA ·vnniHdr18Pair+32(SB)/8, $0x0000000000000000
DATA ·vnniHdr18Pair+40(SB)/8, $0x0000000000000000
DATA ·vnniHdr18Pair+48(SB)/8, $0x0000000000000000
DATA ·vnniHdr18Pair+56(SB)/8, $0x0000000000000000
GLOBL ·vnniHdr18Pair(SB), RODATA|NOPTR, $64

DATA ·vnniHdr18Out0+0(SB)/8, $0x0030002000100000
DATA ·vnniHdr18Out0+8(SB)/8, $0x0034002400140004
DATA ·vnniHdr18Out0+16(SB)/8, $0x0038002800180008
DATA ·vnniHdr18Out0+24(SB)/8, $0x003c002c001c000c
DATA ·vnniHdr18Out0+32(SB)/8, $0x0031002100110001
DATA ·vnniHdr18Out0+40(SB)/8, $0x0035002500150005
DATA ·vnniHdr18Out0+48(SB)/8, $0x0039002900190009
DATA ·vnniHdr18Out0+56(SB)/8, $0x003d002d001d000d
GLOBL ·vnniHdr18Out0(SB), RODATA|NOPTR, $64

DATA ·vnniHdr18Out1+0(SB)/8, $0x0032002200120002
DATA ·vnniHdr18Out1+8(SB)/8, $0x0036002600160006
DATA ·vnniHdr18Out1+16(SB)/8, $0x003a002a001a000a
DATA ·vnniHdr18Out1+24(SB)/8, $0x003e002e001e000e
DATA ·vnniHdr18Out1+32(SB)/8, $0x0033002300130003
DATA ·vnniHdr18Out1+40(SB)/8, $0x0037002700170007
DATA ·vnniHdr18Out1+48(SB)/8, $0x003b002b001b000b
DATA ·vnniHdr18Out1+56(SB)/8, $0x003f002f001f000f
GLOBL ·vnniHdr18Out1(SB), RODATA|NOPTR, $64

DATA ·vnniHdr18Mask+0(SB)/8, $0x0000000000000003
DATA ·vnniHdr18Mask+8(SB)/8, $0x00000000000fffff
DATA ·vnniHdr18Mask+16(SB)/8, $0x0000003fffffffff
DATA ·vnniHdr18Mask+24(SB)/8, $0x00ffffffffffffff
GLOBL ·vnniHdr18Mask(SB), RODATA|NOPTR, $32

DATA ·vnniHdr20Pair+0(SB)/8, $0x000b000a00010000
DATA ·vnniHdr20Pair+8(SB)/8, $0x001f001e00150014
DATA ·vnniHdr20Pair+16(SB)/8, $0x002b002a00210020
DATA ·vnniHdr20Pair+24(SB)/8, $0x003f003e00350034
DATA ·vnniHdr20Pair+32(SB)/8, $0x0000000000000000
DATA ·vnniHdr20Pair+40(SB)/8, $0x0000000000000000
DATA ·vnniHdr20Pair+48(SB)/8, $0x0000000000000000
DATA ·vnniHdr20Pair+56(SB)/8, $0x0000000000000000
GLOBL ·vnniHdr20Pair(SB), RODATA|NOPTR, $64

DATA ·vnniHdr20Half0+0(SB)/8, $0x0009000800010000
DATA ·vnniHdr20Half0+8(SB)/8, $0x0019001800110010
DATA ·vnniHdr20Half0+16(SB)/8, $0x0029002800210020
DATA ·vnniHdr20Half0+24(SB)/8, $0x0039003800310030
DATA ·vnniHdr20Half0+32(SB)/8, $0x000b000a00030002
DATA ·vnniHdr20Half0+40(SB)/8, $0x001b001a00130012
DATA ·vnniHdr20Half0+48(SB)/8, $0x002b002a00230022
DATA ·vnniHdr20Half0+56(SB)/8, $0x003b003a00330032
GLOBL ·vnniHdr20Half0(SB), RODATA|NOPTR, $64

DATA ·vnniHdr20Half1+0(SB)/8, $0x000d000c00050004
DATA ·vnniHdr20Half1+8(SB)/8, $0x001d001c00150014
DATA ·vnniHdr20Half1+16(SB)/8, $0x002d002c00250024
DATA ·vnniHdr20Half1+24(SB)/8, $0x003d003c00350034
DATA ·vnniHdr20Half1+32(SB)/8, $0x000f000e00070006
DATA ·vnniHdr20Half1+40(SB)/8, $0x001f001e00170016
DATA ·vnniHdr20Half1+48(SB)/8, $0x002f002e00270026
DATA ·vnniHdr20Half1+56(SB)/8, $0x003f003e00370036
GLOBL ·vnniHdr20Half1(SB), RODATA|NOPTR, $64

DATA ·vnniHdr20Out0+0(SB)/8, $0x0028002000080000
DATA ·vnniHdr20Out0+8(SB)/8, $0x002a0022000a0002
DATA ·vnniHdr20Out0+16(SB)/8, $0x002c0024000c0004
DATA ·vnniHdr20Out0+24(SB)/8, $0x002e0026000e0006
DATA ·vnniHdr20Out0+32(SB)/8, $0x0029002100090001
DATA ·vnniHdr20Out0+40(SB)/8, $0x002b0023000b0003
DATA ·vnniHdr20Out0+48(SB)/8, $0x002d0025000d0005
DATA ·vnniHdr20Out0+56(SB)/8, $0x002f0027000f0007
GLOBL ·vnniHdr20Out0(SB), RODATA|NOPTR, $64

DATA ·vnniHdr20Out1+0(SB)/8, $0x0038003000180010
DATA ·vnniHdr20Out1+8(SB)/8, $0x003a0032001a0012
DATA ·vnniHdr20Out1+16(SB)/8, $0x003c0034001c0014
DATA ·vnniHdr20Out1+24(SB)/8, $0x003e0036001e0016
DATA ·vnniHdr20Out1+32(SB)/8, $0x0039003100190011
DATA ·vnniHdr20Out1+40(SB)/8, $0x003b0033001b0013
DATA ·vnniHdr20Out1+48(SB)/8, $0x003d0035001d0015
DATA ·vnniHdr20Out1+56(SB)/8, $0x003f0037001f0017
GLOBL ·vnniHdr20Out1(SB), RODATA|NOPTR, $64

// vnniHdr20Quad and vnniHdr20Blk (four blocks' tables, 64 bytes each): HDRR20P's permutes.
DATA ·vnniHdr20Quad+0(SB)/8, $0x0020000000200000
DATA ·vnniHdr20Quad+8(SB)/8, $0x0021000100210001
DATA ·vnniHdr20Quad+16(SB)/8, $0x002a000a002a000a
DATA ·vnniHdr20Quad+24(SB)/8, $0x002b000b002b000b
DATA ·vnniHdr20Quad+32(SB)/8, $0x0034001400340014
DATA ·vnniHdr20Quad+40(SB)/8, $0x0035001500350015
DATA ·vnniHdr20Quad+48(SB)/8, $0x003e001e003e001e
DATA ·vnniHdr20Quad+56(SB)/8, $0x003f001f003f001f
GLOBL ·vnniHdr20Quad(SB), RODATA|NOPTR, $64

DATA ·vnniHdr20Blk+0(SB)/8, $0x0020000000200000
DATA ·vnniHdr20Blk+8(SB)/8, $0x0021000100210001
DATA ·vnniHdr20Blk+16(SB)/8, $0x0022000200220002
DATA ·vnniHdr20Blk+24(SB)/8, $0x0023000300230003
DATA ·vnniHdr20Blk+32(SB)/8, $0x0024000400240004
DATA ·vnniHdr20Blk+40(SB)/8, $0x0025000500250005
DATA ·vnniHdr20Blk+48(SB)/8, $0x0026000600260006
DATA ·vnniHdr20Blk+56(SB)/8, $0x0027000700270007
DATA ·vnniHdr20Blk+64(SB)/8, $0x0028000800280008
DATA ·vnniHdr20Blk+72(SB)/8, $0x0029000900290009
DATA ·vnniHdr20Blk+80(SB)/8, $0x002a000a002a000a
DATA ·vnniHdr20Blk+88(SB)/8, $0x002b000b002b000b
DATA ·vnniHdr20Blk+96(SB)/8, $0x002c000c002c000c
DATA ·vnniHdr20Blk+104(SB)/8, $0x002d000d002d000d
DATA ·vnniHdr20Blk+112(SB)/8, $0x002e000e002e000e
DATA ·vnniHdr20Blk+120(SB)/8, $0x002f000f002f000f
DATA ·vnniHdr20Blk+128(SB)/8, $0x0030001000300010
DATA ·vnniHdr20Blk+136(SB)/8, $0x0031001100310011
DATA ·vnniHdr20Blk+144(SB)/8, $0x0032001200320012
DATA ·vnniHdr20Blk+152(SB)/8, $0x0033001300330013
DATA ·vnniHdr20Blk+160(SB)/8, $0x0034001400340014
DATA ·vnniHdr20Blk+168(SB)/8, $0x0035001500350015
DATA ·vnniHdr20Blk+176(SB)/8, $0x0036001600360016
DATA ·vnniHdr20Blk+184(SB)/8, $0x0037001700370017
DATA ·vnniHdr20Blk+192(SB)/8, $0x0038001800380018
DATA ·vnniHdr20Blk+200(SB)/8, $0x0039001900390019
DATA ·vnniHdr20Blk+208(SB)/8, $0x003a001a003a001a
DATA ·vnniHdr20Blk+216(SB)/8, $0x003b001b003b001b
DATA ·vnniHdr20Blk+224(SB)/8, $0x003c001c003c001c
DATA ·vnniHdr20Blk+232(SB)/8, $0x003d001d003d001d
DATA ·vnniHdr20Blk+240(SB)/8, $0x003e001e003e001e
DATA ·vnniHdr20Blk+248(SB)/8, $0x003f001f003f001f
GLOBL ·vnniHdr20Blk(SB), RODATA|NOPTR, $256

DATA ·vnniHdr20Mask+0(SB)/8, $0x000000000000000f
DATA ·vnniHdr20Mask+8(SB)/8, $0x0000000000ffffff
DATA ·vnniHdr20Mask+16(SB)/8, $0x00000fffffffffff
DATA ·vnniHdr20Mask+24(SB)/8, $0xffffffffffffffff
GLOBL ·vnniHdr20Mask(SB), RODATA|NOPTR, $32

// HDRFAR is how far past the near prefetches (PFGROUPS groups ahead, PREFETCHT0) the Zen 4
// flavours of the header-register kernels (Z4, zen4Stream) prefetch into L2 (PREFETCHT1),
// every line once: 32 KiB, the values kernels' distance (gen_intacc.go's pfFar).
// Measurements: multi_vnni_amd64.go's vnniHdrZ4.
#define HDRFAR 32768

// PF18 prefetches (PREFETCHT0) the 320 bytes at AX, a block's of a group of 18-byte-block
// rows PFGROUPS groups ahead, and moves AX on; PF18Z4 also the 320 bytes HDRFAR on into L2.
#define PF18 \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	PREFETCHT0 128(AX); \
	PREFETCHT0 192(AX); \
	PREFETCHT0 256(AX); \
	ADDQ $320, AX

#define PF18Z4 \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	PREFETCHT0 128(AX); \
	PREFETCHT0 192(AX); \
	PREFETCHT0 256(AX); \
	PREFETCHT1 (HDRFAR)(AX); \
	PREFETCHT1 (HDRFAR+64)(AX); \
	PREFETCHT1 (HDRFAR+128)(AX); \
	PREFETCHT1 (HDRFAR+192)(AX); \
	PREFETCHT1 (HDRFAR+256)(AX); \
	ADDQ $320, AX

// PF20 and PF20Z4 are PF18 and PF18Z4 for 20-byte blocks: 384 bytes a block.
#define PF20 \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	PREFETCHT0 128(AX); \
	PREFETCHT0 192(AX); \
	PREFETCHT0 256(AX); \
	PREFETCHT0 320(AX); \
	ADDQ $384, AX

#define PF20Z4 \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	PREFETCHT0 128(AX); \
	PREFETCHT0 192(AX); \
	PREFETCHT0 256(AX); \
	PREFETCHT0 320(AX); \
	PREFETCHT1 (HDRFAR)(AX); \
	PREFETCHT1 (HDRFAR+64)(AX); \
	PREFETCHT1 (HDRFAR+128)(AX); \
	PREFETCHT1 (HDRFAR+192)(AX); \
	PREFETCHT1 (HDRFAR+256)(AX); \
	PREFETCHT1 (HDRFAR+320)(AX); \
	ADDQ $384, AX

// INITQ4 sets the nibble mask Z31 (q4_0, q4_1, iq4_nl without VBMI); INITIQ4V the levels + 128,
// four times over, in Z20 (iq4_nl with VBMI).
#define INITQ4 \
	MOVL $0x0F0F0F0F, AX; \
	VPBROADCASTD AX, Z31

#define INITIQ4V \
	VBROADCASTI32X4 ·vnniIQ4NLU8(SB), Z20

// DECIQ4S is NIBBLES4S with the codes mapped to iq4_nl's levels + 128 (VPSHUFB); DECIQ4V the
// same by VBMI byte permutes of the unmasked bytes (VPERMB takes six index bits, and the table
// repeats every 16 bytes).
#define DECIQ4S \
	NIBBLES4S; \
	VBROADCASTI32X4 ·vnniIQ4NLU8(SB), Z30; \
	VPSHUFB Z0, Z30, Z0; \
	VPSHUFB Z1, Z30, Z1; \
	VPSHUFB Z2, Z30, Z2; \
	VPSHUFB Z3, Z30, Z3; \
	VPSHUFB Z4, Z30, Z4; \
	VPSHUFB Z5, Z30, Z5; \
	VPSHUFB Z6, Z30, Z6; \
	VPSHUFB Z7, Z30, Z7

#define DECIQ4V \
	VPERMB Z20, Z25, Z0; \
	VPSRLD $4, Z25, Z4; \
	VPERMB Z20, Z4, Z4; \
	VPERMB Z20, Z26, Z1; \
	VPSRLD $4, Z26, Z5; \
	VPERMB Z20, Z5, Z5; \
	VPERMB Z20, Z27, Z2; \
	VPSRLD $4, Z27, Z6; \
	VPERMB Z20, Z6, Z6; \
	VPERMB Z20, Z28, Z3; \
	VPSRLD $4, Z28, Z7; \
	VPERMB Z20, Z7, Z7

// HDRPF sets the prefetch pointer AX of a group of sixteen rows at DI (HDRGROUP): PFGROUPS
// groups of rows ahead (multiScoresQ40HdrZ4RunsVNNI's is pf bytes on).
#define HDRPF \
	MOVQ R8, AX; \
	SHLQ $4, AX; \
	IMULQ $PFGROUPS, AX; \
	ADDQ DI, AX

// HDRGROUP starts a group of sixteen rows of hdr-byte headers: the row-group pointers at the
// payloads of block 0 (CX rows 0..3, BX rows 4..7, R14 rows 8..11, R15 rows 12..15), the
// digits, the block count, the scores at the queries' offsets and the prefetch pointer AX
// (HDRPF).
#define HDRGROUP(hdr) \
	LEAQ hdr(DI), CX; \
	LEAQ (CX)(R8*4), BX; \
	LEAQ (BX)(R8*4), R14; \
	LEAQ (R14)(R8*4), R15; \
	MOVQ dig+0(FP), SI; \
	MOVQ aux+8(FP), DX; \
	XORL R13, R13; \
	MOVQ nb+24(FP), R11; \
	MOVQ off+72(FP), AX; \
	VBROADCASTSS (AX), Z8; \
	VBROADCASTSS 4(AX), Z9; \
	VBROADCASTSS 8(AX), Z10; \
	VBROADCASTSS 12(AX), Z11; \
	HDRPF

// HDREND stores the group's scores and moves out and the rows to the next group.
#define HDREND \
	SCORES_T; \
	MOVQ ostride+64(FP), AX; \
	CMPQ AX, $16; \
	JNE  strided; \
	SCORES_CONTIG; \
	JMP  next; \
strided: \
	SCORES_STRIDED; \
next: \
	MOVQ ostride+64(FP), AX; \
	SHLQ $4, AX; \
	ADDQ AX, R9; \
	MOVQ R8, AX; \
	SHLQ $4, AX; \
	ADDQ AX, DI; \
	DECQ R10; \
	JNZ  group

// HDRK18 is the body of the 18-byte-block header-register kernels (q4_0, iq4_nl): init sets
// the constants, dec splits the transposed payloads Z25..Z28 into the code vectors Z0..Z7,
// offs is the aux offset of the chains' starting values (−8·ΣQ, −128·ΣQ), pf the block's
// prefetches (PF18). A chunk's first block reads the chunk's headers (HDRR18: K3 = K1 for a
// whole chunk of four, K2 for the row's last, short one); R13 counts the blocks left of the
// chunk.
#define HDRK18(init, dec, offs, pf) \
	MOVQ rows+32(FP), DI; \
	MOVQ rb+40(FP), R8; \
	LEAQ (R8)(R8*2), R12; \
	MOVQ out+56(FP), R9; \
	MOVQ m+48(FP), R10; \
	SHRQ $4, R10; \
	JZ   done; \
	init; \
	HDRMASKS(·vnniHdr18Mask(SB), 4); \
	LANEMASKS; \
group: \
	HDRGROUP(2); \
blk: \
	TESTQ R13, R13; \
	JNZ  have; \
	MOVQ $4, R13; \
	KMOVQ K1, K3; \
	CMPQ R11, R13; \
	JGE  whole; \
	KMOVQ K2, K3; \
whole: \
	HDRR18(-2); \
have: \
	pf; \
	LOAD4M(CX, Z24, X24); \
	LOAD4M(BX, Z25, X25); \
	LOAD4M(R14, Z26, X26); \
	LOAD4M(R15, Z27, X27); \
	TRANSPOSE4; \
	dec; \
	VPBROADCASTD offs(DX), Z12; \
	VPBROADCASTD offs+4(DX), Z13; \
	VPBROADCASTD offs+8(DX), Z14; \
	VPBROADCASTD offs+12(DX), Z15; \
	CHAINSM; \
	VCVTPH2PS Y22, Z24; \
	FINISHM(Z12, Z16, 0, Z8); \
	FINISHM(Z13, Z17, 1, Z9); \
	FINISHM(Z14, Z18, 2, Z10); \
	FINISHM(Z15, Z19, 3, Z11); \
	ADDQ $18, CX; \
	ADDQ $18, BX; \
	ADDQ $18, R14; \
	ADDQ $18, R15; \
	ADDQ $128, SI; \
	ADDQ $96, DX; \
	NEXT18; \
	DECQ R13; \
	DECQ R11; \
	JNZ  blk; \
	HDREND; \
done: \
	VZEROUPPER; \
	RET

// HDRK18Z4 is HDRK18 for AMD Zen 4 (the Z4 flavours, a 128-byte frame): the far prefetches
// (PF18Z4), the payloads by ld (LOAD4Q for q4_0 and for iq4_nl with VBMI), a whole chunk's headers by
// HDRR18U, and the chunk's scales stored to the frame (HDRSTASH18) and each block's converted
// from there (HDRCVT18), R13 the block's offset in it, in place of NEXT18's two shuffles a
// block.
#define HDRK18Z4(init, dec, offs, ld) \
	MOVQ rows+32(FP), DI; \
	MOVQ rb+40(FP), R8; \
	LEAQ (R8)(R8*2), R12; \
	MOVQ out+56(FP), R9; \
	MOVQ m+48(FP), R10; \
	SHRQ $4, R10; \
	JZ   done; \
	init; \
	HDRMASKS(·vnniHdr18Mask(SB), 4); \
	LANEMASKS; \
group: \
	HDRGROUP(2); \
	MOVQ $(4*32), R13; \
blk: \
	CMPQ R13, $(4*32); \
	JNE  have; \
	XORL R13, R13; \
	CMPQ R11, $4; \
	JL   short; \
	HDRR18U(-2); \
	JMP  stash; \
short: \
	KMOVQ K2, K3; \
	HDRR18(-2); \
stash: \
	HDRSTASH18; \
have: \
	PF18Z4; \
	ld(CX, Z24, X24, Y24, X0, Y0); \
	ld(BX, Z25, X25, Y25, X1, Y1); \
	ld(R14, Z26, X26, Y26, X2, Y2); \
	ld(R15, Z27, X27, Y27, X3, Y3); \
	TRANSPOSE4; \
	dec; \
	VPBROADCASTD offs(DX), Z12; \
	VPBROADCASTD offs+4(DX), Z13; \
	VPBROADCASTD offs+8(DX), Z14; \
	VPBROADCASTD offs+12(DX), Z15; \
	CHAINSM; \
	HDRCVT18; \
	FINISHM(Z12, Z16, 0, Z8); \
	FINISHM(Z13, Z17, 1, Z9); \
	FINISHM(Z14, Z18, 2, Z10); \
	FINISHM(Z15, Z19, 3, Z11); \
	ADDQ $18, CX; \
	ADDQ $18, BX; \
	ADDQ $18, R14; \
	ADDQ $18, R15; \
	ADDQ $128, SI; \
	ADDQ $96, DX; \
	ADDQ $32, R13; \
	DECQ R11; \
	JNZ  blk; \
	HDREND; \
done: \
	VZEROUPPER; \
	RET

// HDRK18Z4R is HDRK18Z4 with HDRK18's queue of the chunk's scales in Z22, Z23 (NEXT18), for
// iq4_nl without VBMI, where the frame's queue did not pay (with LOAD4M's payloads).
#define HDRK18Z4R(init, dec, offs, ld) \
	MOVQ rows+32(FP), DI; \
	MOVQ rb+40(FP), R8; \
	LEAQ (R8)(R8*2), R12; \
	MOVQ out+56(FP), R9; \
	MOVQ m+48(FP), R10; \
	SHRQ $4, R10; \
	JZ   done; \
	init; \
	HDRMASKS(·vnniHdr18Mask(SB), 4); \
	LANEMASKS; \
group: \
	HDRGROUP(2); \
blk: \
	TESTQ R13, R13; \
	JNZ  have; \
	MOVQ $4, R13; \
	CMPQ R11, R13; \
	JL   short; \
	HDRR18U(-2); \
	JMP  have; \
short: \
	KMOVQ K2, K3; \
	HDRR18(-2); \
have: \
	PF18Z4; \
	ld(CX, Z24, X24, Y24, X0, Y0); \
	ld(BX, Z25, X25, Y25, X1, Y1); \
	ld(R14, Z26, X26, Y26, X2, Y2); \
	ld(R15, Z27, X27, Y27, X3, Y3); \
	TRANSPOSE4; \
	dec; \
	VPBROADCASTD offs(DX), Z12; \
	VPBROADCASTD offs+4(DX), Z13; \
	VPBROADCASTD offs+8(DX), Z14; \
	VPBROADCASTD offs+12(DX), Z15; \
	CHAINSM; \
	VCVTPH2PS Y22, Z24; \
	FINISHM(Z12, Z16, 0, Z8); \
	FINISHM(Z13, Z17, 1, Z9); \
	FINISHM(Z14, Z18, 2, Z10); \
	FINISHM(Z15, Z19, 3, Z11); \
	ADDQ $18, CX; \
	ADDQ $18, BX; \
	ADDQ $18, R14; \
	ADDQ $18, R15; \
	ADDQ $128, SI; \
	ADDQ $96, DX; \
	NEXT18; \
	DECQ R13; \
	DECQ R11; \
	JNZ  blk; \
	HDREND; \
done: \
	VZEROUPPER; \
	RET

// HDRK20 is HDRK18 for q4_1's 20-byte blocks (HDRR20): chains from zero, the scales and
// minima of each block converted apart (FINISHES41M); pf PF20.
#define HDRK20(pf) \
	MOVQ rows+32(FP), DI; \
	MOVQ rb+40(FP), R8; \
	LEAQ (R8)(R8*2), R12; \
	MOVQ out+56(FP), R9; \
	MOVQ m+48(FP), R10; \
	SHRQ $4, R10; \
	JZ   done; \
	INITQ4; \
	HDRMASKS(·vnniHdr20Mask(SB), 4); \
	LANEMASKS; \
group: \
	HDRGROUP(4); \
blk: \
	TESTQ R13, R13; \
	JNZ  have; \
	MOVQ $4, R13; \
	KMOVQ K1, K3; \
	CMPQ R11, R13; \
	JGE  whole; \
	KMOVQ K2, K3; \
whole: \
	HDRR20(-4); \
have: \
	pf; \
	LOAD4M(CX, Z24, X24); \
	LOAD4M(BX, Z25, X25); \
	LOAD4M(R14, Z26, X26); \
	LOAD4M(R15, Z27, X27); \
	TRANSPOSE4; \
	NIBBLES4S; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	CHAINSM; \
	VCVTPH2PS Y20, Z24; \
	VEXTRACTI64X4 $1, Z20, Y25; \
	VCVTPH2PS Y25, Z25; \
	FINISHES41M; \
	ADDQ $20, CX; \
	ADDQ $20, BX; \
	ADDQ $20, R14; \
	ADDQ $20, R15; \
	ADDQ $128, SI; \
	ADDQ $96, DX; \
	NEXT20; \
	DECQ R13; \
	DECQ R11; \
	JNZ  blk; \
	HDREND; \
done: \
	VZEROUPPER; \
	RET

// HDRK20Z4 is HDRK20 for AMD Zen 4 (PF20Z4, LOAD4Q, HDRR20P for whole chunks), the headers
// moved down a block at a time as HDRK20's (a stack queue as HDRK18Z4's did not pay here).
#define HDRK20Z4 \
	MOVQ rows+32(FP), DI; \
	MOVQ rb+40(FP), R8; \
	LEAQ (R8)(R8*2), R12; \
	MOVQ out+56(FP), R9; \
	MOVQ m+48(FP), R10; \
	SHRQ $4, R10; \
	JZ   done; \
	INITQ4; \
	HDRMASKS(·vnniHdr20Mask(SB), 4); \
	LANEMASKS; \
	MOVL $0x33333333, AX; \
	KMOVD AX, K5; \
	KNOTD K5, K6; \
group: \
	HDRGROUP(4); \
blk: \
	TESTQ R13, R13; \
	JNZ  have; \
	MOVQ $4, R13; \
	CMPQ R11, R13; \
	JL   short; \
	HDRR20P(-4); \
	JMP  have; \
short: \
	KMOVQ K2, K3; \
	HDRR20(-4); \
have: \
	PF20Z4; \
	LOAD4Q(CX, Z24, X24, Y24, X0, Y0); \
	LOAD4Q(BX, Z25, X25, Y25, X1, Y1); \
	LOAD4Q(R14, Z26, X26, Y26, X2, Y2); \
	LOAD4Q(R15, Z27, X27, Y27, X3, Y3); \
	TRANSPOSE4; \
	NIBBLES4S; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	CHAINSM; \
	VCVTPH2PS Y20, Z24; \
	VEXTRACTI64X4 $1, Z20, Y25; \
	VCVTPH2PS Y25, Z25; \
	FINISHES41M; \
	ADDQ $20, CX; \
	ADDQ $20, BX; \
	ADDQ $20, R14; \
	ADDQ $20, R15; \
	ADDQ $128, SI; \
	ADDQ $96, DX; \
	NEXT20; \
	DECQ R13; \
	DECQ R11; \
	JNZ  blk; \
	HDREND; \
done: \
	VZEROUPPER; \
	RET

// func multiScoresQ40HdrVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ40VNNI with the headers in registers (HDRR18); the stage is not used.
TEXT ·multiScoresQ40HdrVNNI(SB), NOSPLIT, $0-80
	HDRK18(INITQ4, NIBBLES4S, 16, PF18)

// func multiScoresQ40HdrZ4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ40HdrVNNI for AMD Zen 4 (zen4Stream): prefetching HDRFAR further into L2 as
// well, the payloads by LOAD4Q and whole chunks' headers by HDRR18U.
TEXT ·multiScoresQ40HdrZ4VNNI(SB), NOSPLIT, $128-80
	HDRK18Z4(INITQ4, NIBBLES4S, 16, LOAD4Q)

// func multiScoresQ40HdrZ4RunsVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf int)
// multiScoresQ40HdrZ4VNNI for one run of a paged cache's rows (vnniScoresRunsStride): its
// near prefetches (PREFETCHT0) pf bytes past each group's rows, pf the offset of the next run,
// where multiScoresQ40HdrZ4VNNI's go 64 rows on (a page on either way, but at the next page's
// rows, not the memory after this one's), and its far ones (PREFETCHT1) at the same lines (no
// offset left to aim them a few pages on: HDRFAR is 0 here). The same scores, bit for bit
// (measurements: runsPF, multi_runs_amd64.go).
#include "multi_vnni_runs_amd64.h"
TEXT ·multiScoresQ40HdrZ4RunsVNNI(SB), NOSPLIT, $128-88
	HDRK18Z4(INITQ4, NIBBLES4S, 16, LOAD4Q)
#undef HDRFAR
#define HDRFAR 32768
#undef HDRPF
#define HDRPF \
	MOVQ R8, AX; \
	SHLQ $4, AX; \
	IMULQ $PFGROUPS, AX; \
	ADDQ DI, AX

// func multiScoresIQ4NLHdrVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresIQ4NLVNNI with the headers in registers (HDRR18); the stage is not used.
TEXT ·multiScoresIQ4NLHdrVNNI(SB), NOSPLIT, $0-80
	HDRK18(INITQ4, DECIQ4S, 48, PF18)

// iq4_nl's Z4 flavours, variants measured and not kept (AMD Zen 4, TestVNNIHdrZ4Speed's
// shape: 4096 rows of 128 values, 4 queries, thread CPU time, alternated with the kept VBMI
// kernel in one process, 200 calls in cache and 10 passes over 96 MiB on 2 MiB pages; ns a
// row, min/median; all but the last gave the same scores bit for bit):
//   - TRANSPOSE4's first stage by VPROLQ $32 and VPBLENDMD under odd/even dword masks (four
//     shuffles fewer, four operations more): in cache 4.19 → 4.54 (median), streamed
//     4.36/4.40 → 4.71/4.73.
//   - that stage by merge-masked loads (each pair of quads' two vectors from eight loads
//     masked to the even or odd dwords of lanes 0..L, the odd rows 4 bytes down or the even
//     ones 4 up; four unpacks fewer, sixteen masked loads more): 5.13/5.45 → 6.62/7.28 in
//     cache, 4.45/5.68 → 6.49/7.55 streamed (a loaded hour): a masked load costs more here
//     than the unpack it saves.
//   - LOAD4M's masked loads as VBROADCASTI32X4 and VPBLENDMD: 4.15/4.20 → 4.76/4.88 in
//     cache, 4.52/4.85 → 5.11/5.24 streamed.
//   - q4_0's HDRK18Z4 (LOAD4Y, the scales from the frame) with the VPERMB lookups: 4.18 →
//     4.52 (median) in cache, 4.45 → 4.70 streamed; with the VPSHUFB ones (DECIQ4S) 4.66,
//     4.83.
//   - the low nibbles by VPERMB and the high ones by shift, mask and VPSHUFB, or the low by
//     mask and VPSHUFB and the high by shift and VPERMB: 4.14/4.18 → 4.21/4.26 and 4.23/4.28
//     in cache, 4.35/4.44 → 4.46/4.52 and 4.48/4.60 streamed.
//   - the lookups dropped (q4_0's NIBBLES4S in their place, wrong scores, timing only):
//     4.16/4.21 → 4.07/4.10 in cache, 4.38/4.43 → 4.30/4.37 streamed. The lookups cost
//     ~0.1 ns a row in this kernel, and one 64-byte VPERMB per 64 codes is the fewest any
//     byte lookup takes (one index vector of both nibbles would need 128 output bytes); the
//     rest of iq4_nl's gap to q4_0 is what LOAD4Y and the frame's scales take off q4_0, and
//     here they share the shuffle pipes with the lookups (above).
//   - later, with LOAD4Q and the frame's scales (multiScoresIQ4NLHdrZ4VBMI), in whole decodes
//     (native/attn TestDecodeBreakdown, 131072 cells, 32/8 heads, d 128; test binaries
//     alternated five times, load 2–10; the values kernel's lookups dropped too, gen_intacc.go
//     has its side): the scores phase 3.78–3.85 → 3.61–3.66 ns a row without the lookups
//     (VPANDD in place of each VPERMB, wrong scores, timing only), q4_0's 3.65–3.77 in the same
//     hour. The lookups are ~0.2 ns of the scores; the 8 VPERMB and 4 shifts a block are the
//     fewest (a byte lookup takes the code in the index's low bits, and 64 code bytes hold 128
//     codes), and a permute that moves bytes cannot look them up too (the codes are its table,
//     not its index).
//   - later still, against multiScoresIQ4NLHdrZ4VBMI (the same shape; six alternated rounds of
//     200 calls in cache and 10 passes streamed, ns a row min/median; all three gave the same
//     scores bit for bit): each query's digit dword by VPBROADCASTD into a register and the
//     VPDPBUSD from there, in place of the embedded broadcast, in cache 3.82–3.84/3.87–3.89 →
//     4.01–4.03/4.04–4.07, streamed 4.00–4.13/4.03–4.20 → 4.17–4.32/4.22–4.40; LOAD4Q's masked
//     256-bit loads as plain ones and a register VPBLENDMD each, in cache 3.82–3.85/3.87–3.91 →
//     3.87–3.92/3.92–3.96, streamed 3.97–4.02/4.02–4.09 → 4.04–4.08/4.08–4.15; a quad's lanes
//     1–3 by VPBLENDMD from 512-bit memory operands at p+L·rb−16L (no masked load, no insert),
//     in cache 3.81–3.84 → 4.14–4.17 (min), streamed 3.99–4.03 → 4.35–4.43. Every operation
//     added a block costs here; the block is at its fewest (32 VPDPBUSD, 4 inserts, 8 unpacks,
//     8 VPERMB and 4 shifts, 4 chain starts, 12 for the finish, a conversion of the scales).
// func multiScoresIQ4NLHdrZ4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresIQ4NLHdrVNNI for AMD Zen 4: prefetching HDRFAR further into L2 as well, whole
// chunks' headers by HDRR18U (the payloads by LOAD4M).
TEXT ·multiScoresIQ4NLHdrZ4VNNI(SB), NOSPLIT, $0-80
	HDRK18Z4R(INITQ4, DECIQ4S, 48, LOAD4MT)

// func multiScoresIQ4NLHdrVBMI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresIQ4NLVBMI with the headers in registers (HDRR18); the stage is not used.
TEXT ·multiScoresIQ4NLHdrVBMI(SB), NOSPLIT, $0-80
	HDRK18(INITIQ4V, DECIQ4V, 48, PF18)

// func multiScoresIQ4NLHdrZ4VBMI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresIQ4NLHdrVBMI for AMD Zen 4: q4_0's HDRK18Z4 (the far prefetches, whole chunks'
// headers by HDRR18U, the scales from the frame) with the payloads by LOAD4Q. Measured on AMD
// Zen 4 (EPYC Genoa, 2 shared vCPUs, load 2–11; 4096 rows of 128 values, 4 queries, thread CPU
// time; kernels alternated in one process, 3000 calls each in cache, ns a row, p10 of the
// calls, a robuster figure than the min on this shared machine; streamed: 10 passes over
// 96 MiB on 2 MiB pages, min):
//   - against the kernel before (HDRK18Z4R with LOAD4M, the scales queued in registers): in
//     cache 4.25 → 3.94, 4.23 → 3.95; streamed 5.00 → 4.65, 4.92 → 4.66, 5.01 → 4.65. LOAD4Q
//     alone (the scales still queued) 4.25 → 4.12, streamed 5.00 → 4.80: the frame's queue
//     pays once the masked 512-bit loads are gone.
//   - what the kernel's parts cost before (each taken out, wrong scores, timing only, in
//     cache 4.26): the payloads' 16 loads a block 0.82 (plain 128-bit loads, uncombined, in
//     place of LOAD4M 0.62: it is LOAD4M's three merge-masked 512-bit loads a quad), the
//     header loads 0.32, the finish 0.32, the lookups and shifts 0.25, the transpose 0.24,
//     the prefetches none in cache; the chains alone 2.52. After: the lookups and shifts
//     0.49, the payloads 0.44, the finish 0.38, the transpose 0.23, the headers 0.20.
//   - not kept: LOAD4 (three 512-bit inserts from memory) 4.97; lane 1 by a masked 256-bit
//     load, lanes 2 and 3 by LOAD4M's 512-bit ones (LOAD4C) 4.12, with the frame 4.09;
//     LOAD4Y with the frame 4.43; the high nibbles moved down by VPMULHUW by 2¹², by
//     VGF2P8AFFINEQB or by VPMULTISHIFTQB in place of VPSRLD (the same bytes in the low
//     nibbles) 4.20 against 4.22 before LOAD4Q, 4.06–4.07 against 4.00 with it; VPSHUFB
//     lookups (DECIQ4S) with LOAD4Q and the frame 4.19 against 4.00.
// On Intel (instruction tables) a masked 256-bit load is a load and a blend (port 0 or 5) and
// the insert a port-5 shuffle, yet measured on a Sapphire Rapids class Xeon this flavour paid
// there too and Intel CPUs take it (vnniHdrZ4 has the figures); Zen 5 keeps the kernels
// without Z4.
TEXT ·multiScoresIQ4NLHdrZ4VBMI(SB), NOSPLIT, $128-80
	HDRK18Z4(INITIQ4V, DECIQ4V, 48, LOAD4Q)

// func multiScoresQ41HdrVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ41VNNI with the headers in registers (HDRR20); the stage is not used.
TEXT ·multiScoresQ41HdrVNNI(SB), NOSPLIT, $0-80
	HDRK20(PF20)

// func multiScoresQ41HdrZ4VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ41HdrVNNI for AMD Zen 4 as multiScoresQ40HdrZ4VNNI (HDRR20U).
TEXT ·multiScoresQ41HdrZ4VNNI(SB), NOSPLIT, $0-80
	HDRK20Z4

// PF22Z4 is PF18Z4 for q5_0's 22-byte blocks: the 352 bytes of a block of a group PFGROUPS
// groups ahead (six lines) into L1 and HDRFAR on into L2.
#define PF22Z4 \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	PREFETCHT0 128(AX); \
	PREFETCHT0 192(AX); \
	PREFETCHT0 256(AX); \
	PREFETCHT0 320(AX); \
	PREFETCHT1 (HDRFAR)(AX); \
	PREFETCHT1 (HDRFAR+64)(AX); \
	PREFETCHT1 (HDRFAR+128)(AX); \
	PREFETCHT1 (HDRFAR+192)(AX); \
	PREFETCHT1 (HDRFAR+256)(AX); \
	PREFETCHT1 (HDRFAR+320)(AX); \
	ADDQ $352, AX

// func multiScoresQ50Z4GFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ50GFNI for AMD Zen 4 (q5ScoresZ4): the far prefetches of the q4 Z4 flavours
// (PF22Z4), the payloads by LOAD4Y, and one chain a query (CHAINSM, FINISHM): the same int32
// sums and float operations, so the same scores bit for bit.
TEXT ·multiScoresQ50Z4GFNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   z4Q50_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x1020408000000000, AX // NIBBLESG's matrix: bits 4..7 to 0..3
	VPBROADCASTQ AX, Z20
	MOVL $0x10101010, AX       // FIFTHSG's 16
	VPBROADCASTD AX, Z22

z4Q50_group:
	LEAQ 6(DI), CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead
	SHLQ $4, AX
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

z4Q50_blk:
	PF22Z4
	LOAD4Y(CX, Z24, X24, Y24, X0, Y0)
	LOAD4Y(BX, Z25, X25, Y25, X1, Y1)
	LOAD4Y(R14, Z26, X26, Y26, X2, Y2)
	LOAD4Y(R15, Z27, X27, Y27, X3, Y3)
	TRANSPOSE4
	NIBBLESG

	HDRI(-6)                   // the rows' headers (Z29, Z30)
	VMOVDQU64 ·vnniHdr50QH(SB), Z23 // the rows' high-bit dwords: words 1 and 2 of each header
	VPERMI2W Z30, Z29, Z23
	FIFTHSG
	VPBROADCASTD 32(DX), Z12   // −16·ΣQ: the codes' offset
	VPBROADCASTD 36(DX), Z13
	VPBROADCASTD 40(DX), Z14
	VPBROADCASTD 44(DX), Z15
	CHAINSM
	VMOVDQU64 ·vnniHdr50D(SB), Z24 // the rows' block scales: word 0 of each header
	VPERMI2W Z30, Z29, Z24
	VCVTPH2PS Y24, Z24
	FINISHM(Z12, Z16, 0, Z8)
	FINISHM(Z13, Z17, 1, Z9)
	FINISHM(Z14, Z18, 2, Z10)
	FINISHM(Z15, Z19, 3, Z11)

	ADDQ $22, CX
	ADDQ $22, BX
	ADDQ $22, R14
	ADDQ $22, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  z4Q50_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  z4Q50_strided
	SCORES_CONTIG
	JMP  z4Q50_next

z4Q50_strided:
	SCORES_STRIDED

z4Q50_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  z4Q50_group

z4Q50_done:
	VZEROUPPER
	RET

// func multiScoresQ51Z4GFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ51GFNI for AMD Zen 4 as multiScoresQ50Z4GFNI (PF20Z4: 24-byte blocks, 384
// bytes a block of a group; FINISHES41M).
TEXT ·multiScoresQ51Z4GFNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   z4Q51_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x1020408000000000, AX // NIBBLESG's matrix: bits 4..7 to 0..3
	VPBROADCASTQ AX, Z20
	MOVL $0x10101010, AX       // FIFTHSG's 16
	VPBROADCASTD AX, Z22

z4Q51_group:
	LEAQ 8(DI), CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead
	SHLQ $4, AX
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

z4Q51_blk:
	PF20Z4
	LOAD4Y(CX, Z24, X24, Y24, X0, Y0)
	LOAD4Y(BX, Z25, X25, Y25, X1, Y1)
	LOAD4Y(R14, Z26, X26, Y26, X2, Y2)
	LOAD4Y(R15, Z27, X27, Y27, X3, Y3)
	TRANSPOSE4
	NIBBLESG

	HDRI(-8)                   // the rows' headers (Z29, Z30)
	VMOVDQU64 ·vnniHdrQH(SB), Z23 // the rows' high-bit dwords: dword 1 of each header
	VPERMI2D Z30, Z29, Z23
	FIFTHSG
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	CHAINSM
	VMOVDQU64 ·vnniHdrDM(SB), Z24 // the rows' block scales (words 0..15) and minima (16..31):
	VPERMI2W Z30, Z29, Z24       // words 0 and 1 of each header
	VEXTRACTI64X4 $1, Z24, Y25
	VCVTPH2PS Y24, Z24
	VCVTPH2PS Y25, Z25
	FINISHES41M

	ADDQ $24, CX
	ADDQ $24, BX
	ADDQ $24, R14
	ADDQ $24, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  z4Q51_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  z4Q51_strided
	SCORES_CONTIG
	JMP  z4Q51_next

z4Q51_strided:
	SCORES_STRIDED

z4Q51_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  z4Q51_group

z4Q51_done:
	VZEROUPPER
	RET

// HDRT loads the first 16 bytes of each of a block's sixteen rows at CX, BX, R14, R15 (LOAD4YO,
// as the payloads) and transposes their first two dwords as TRANSPOSE4 transposes the
// payloads' (four unpacks): dword 0 of each row into Z29, dword 1 into Z23, row 4g+m at lane
// 4m+g as the code vectors hold it. For multiScoresQ51XGFNI and multiScoresQ50XGFNI (Intel),
// in place of HDRI's eight inserting loads and six inserts and a two-table word or dword
// permute: Z29 holds q5_1's d and m (words 0 and 1), Z23 its qh; q5_0's d and qh's low half,
// and qh's high half. Clobbers Z24..Z28, Z30 (after NIBBLESG). Tried and not kept on the Intel
// Xeon (family 6 model 167, 2 shared vCPUs, load ~10): the two dwords of the sixteen rows taken
// by two VPGATHERDD (the rows' offsets in HDRT's lane order set once a call; for q5_0 the dwords
// at 0 and 2, so without its VPSHRDD), bit for bit, seventeen port-0/5 operations a block fewer:
// in multiScoresQ50XSGFNI, switched in one binary, kvq's scoreSpeeds (4096 rows, 200 calls in
// cache) 4.58–4.71 against 4.59–4.72 ns a row min; native/attn TestDecodeBreakdown at the bench
// shape (twelve runs each, medians of the runs' minima) scores 6.89 → 6.81 streamed, 5.77 → 5.67
// with the keys in cache, whole 17.00 → 16.95: within the noise, and gathers are several times
// slower on the Intel parts under the Gather Data Sampling mitigation (Skylake-SP to Ice Lake).
// In multiScoresQ51XSGFNI (dwords at 0 and 4, test binaries alternated, eight runs each): in
// cache 5.78 → 5.9, streamed 7.15 → 7.39.
#define HDRT \
	LOAD4YO(0, CX, Z24, X24, Y24, X28, Y28); \
	LOAD4YO(0, BX, Z25, X25, Y25, X28, Y28); \
	LOAD4YO(0, R14, Z26, X26, Y26, X28, Y28); \
	LOAD4YO(0, R15, Z27, X27, Y27, X28, Y28); \
	VPUNPCKLDQ Z25, Z24, Z28; \
	VPUNPCKLDQ Z27, Z26, Z30; \
	VPUNPCKLQDQ Z30, Z28, Z29; \
	VPUNPCKHQDQ Z30, Z28, Z23

// vnniDMWords picks, from sixteen dwords (HDRT's Z29), their low words then their high words
// (VPERMW): q5_1's sixteen block scales d, then its sixteen minima m; q5_0's d first.
DATA ·vnniDMWords+0(SB)/8, $0x0006000400020000
DATA ·vnniDMWords+8(SB)/8, $0x000e000c000a0008
DATA ·vnniDMWords+16(SB)/8, $0x0016001400120010
DATA ·vnniDMWords+24(SB)/8, $0x001e001c001a0018
DATA ·vnniDMWords+32(SB)/8, $0x0007000500030001
DATA ·vnniDMWords+40(SB)/8, $0x000f000d000b0009
DATA ·vnniDMWords+48(SB)/8, $0x0017001500130011
DATA ·vnniDMWords+56(SB)/8, $0x001f001d001b0019
GLOBL ·vnniDMWords(SB), RODATA|NOPTR, $64

// FIFTHX is FIFTH (multiScoresQ51VNNI's) for multiScoresQ51XGFNI: its bit masks in Z16 and Z17,
// its scratch Z18 (Z20 and Z29 hold other things there).
#define FIFTHX(ctrl, lo, hi) \
	VPSHUFB ctrl, Z23, Z18; \
	VPTESTMB Z16, Z18, K1; \
	VPTESTMB Z17, Z18, K2; \
	VPADDB Z22, lo, K1, lo; \
	VPADDB Z22, hi, K2, hi

// PF20X is PF22X for multiScoresQ51XGFNI's 24-byte blocks (Intel): PF20Z4's six lines into
// L1, two lines 192 bytes apart HDRFAR on into L2 in place of six. Measurements:
// multi_vnni_amd64.go's multiScoresQ51XGFNI.
#define PF20X \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	PREFETCHT0 128(AX); \
	PREFETCHT0 192(AX); \
	PREFETCHT0 256(AX); \
	PREFETCHT0 320(AX); \
	PREFETCHT1 (HDRFAR)(AX); \
	PREFETCHT1 (HDRFAR+192)(AX); \
	ADDQ $384, AX

// func multiScoresQ51XGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ51Z4GFNI for Intel CPUs (multi_vnni_amd64.go's q51ScoresX): the fifth bits by
// FIFTH's shuffle and two mask tests a pair of code vectors (FIFTHX) in place of FIFTHSG's
// VPSHUFBITQMB a vector, two far prefetches a block in place of six (PF20X), and the headers
// by HDRT (its d and m words by one VPERMW) in place of HDRI. The same code vectors and
// headers, so the same scores bit for bit.
TEXT ·multiScoresQ51XGFNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   xQ51_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x1020408000000000, AX // NIBBLESG's matrix: bits 4..7 to 0..3
	VPBROADCASTQ AX, Z20
	MOVL $0x10101010, AX       // FIFTHX's 16
	VPBROADCASTD AX, Z22
	MOVL $0x08040201, AX       // FIFTHX's bit masks
	VPBROADCASTD AX, Z16
	MOVL $0x80402010, AX
	VPBROADCASTD AX, Z17
	VMOVDQU64 ·vnniDMWords(SB), Z21

xQ51_group:
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead
	SHLQ $4, AX
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

xQ51_blk:
	PF20X
	LOAD4YO(8, CX, Z24, X24, Y24, X0, Y0)
	LOAD4YO(8, BX, Z25, X25, Y25, X1, Y1)
	LOAD4YO(8, R14, Z26, X26, Y26, X2, Y2)
	LOAD4YO(8, R15, Z27, X27, Y27, X3, Y3)
	TRANSPOSE4
	NIBBLESG

	HDRT                       // the rows' d and m (Z29) and high-bit dwords (Z23)
	FIFTHX(·vnniQHByte0(SB), Z0, Z1)
	FIFTHX(·vnniQHByte1(SB), Z2, Z3)
	FIFTHX(·vnniQHByte2(SB), Z4, Z5)
	FIFTHX(·vnniQHByte3(SB), Z6, Z7)
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	CHAINSM
	VPERMW Z29, Z21, Z24       // the rows' block scales (words 0..15) and minima (16..31)
	VEXTRACTI64X4 $1, Z24, Y25
	VCVTPH2PS Y24, Z24
	VCVTPH2PS Y25, Z25
	FINISHES41M

	ADDQ $24, CX
	ADDQ $24, BX
	ADDQ $24, R14
	ADDQ $24, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  xQ51_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  xQ51_strided
	SCORES_CONTIG
	JMP  xQ51_next

xQ51_strided:
	SCORES_STRIDED

xQ51_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  xQ51_group

xQ51_done:
	VZEROUPPER
	RET

// PF22X is PF22Z4 for multiScoresQ50XGFNI (Intel): the six lines into L1 as PF22Z4's, and
// two lines 176 bytes apart HDRFAR on into L2 in place of six, one a 176 bytes of the rows:
// the L2's own prefetchers bring the rest. Measurements: multi_vnni_amd64.go's q50ScoresX.
#define PF22X \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	PREFETCHT0 128(AX); \
	PREFETCHT0 192(AX); \
	PREFETCHT0 256(AX); \
	PREFETCHT0 320(AX); \
	PREFETCHT1 (HDRFAR)(AX); \
	PREFETCHT1 (HDRFAR+176)(AX); \
	ADDQ $352, AX

// func multiScoresQ50XGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ50Z4GFNI for Intel CPUs (multi_vnni_amd64.go's q50ScoresX), as
// multiScoresQ51XGFNI is q5_1's: the fifth bits by FIFTHX in place of FIFTHSG, FINISHM's
// temporaries in Z25..Z28, two far prefetches a block in place of six (PF22X), the headers by
// HDRT (qh by one VPSHRDD of its two halves, d by one VPERMW) in place of HDRI. The same code
// vectors and float operations, so the same scores bit for bit.
TEXT ·multiScoresQ50XGFNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   xQ50_done
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x1020408000000000, AX // NIBBLESG's matrix: bits 4..7 to 0..3
	VPBROADCASTQ AX, Z20
	MOVL $0x10101010, AX       // FIFTHX's 16
	VPBROADCASTD AX, Z22
	MOVL $0x08040201, AX       // FIFTHX's bit masks
	VPBROADCASTD AX, Z16
	MOVL $0x80402010, AX
	VPBROADCASTD AX, Z17
	VMOVDQU64 ·vnniDMWords(SB), Z21

xQ50_group:
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead
	SHLQ $4, AX
	IMULQ $PFGROUPS, AX
	ADDQ DI, AX

xQ50_blk:
	PF22X
	LOAD4YO(6, CX, Z24, X24, Y24, X0, Y0)
	LOAD4YO(6, BX, Z25, X25, Y25, X1, Y1)
	LOAD4YO(6, R14, Z26, X26, Y26, X2, Y2)
	LOAD4YO(6, R15, Z27, X27, Y27, X3, Y3)
	TRANSPOSE4
	NIBBLESG

	HDRT                       // the rows' d and qh's low half (Z29), qh's high half (Z23)
	VPSHRDD $16, Z23, Z29, Z23 // the rows' high-bit dwords
	FIFTHX(·vnniQHByte0(SB), Z0, Z1)
	FIFTHX(·vnniQHByte1(SB), Z2, Z3)
	FIFTHX(·vnniQHByte2(SB), Z4, Z5)
	FIFTHX(·vnniQHByte3(SB), Z6, Z7)
	VPBROADCASTD 32(DX), Z12   // −16·ΣQ: the codes' offset
	VPBROADCASTD 36(DX), Z13
	VPBROADCASTD 40(DX), Z14
	VPBROADCASTD 44(DX), Z15
	CHAINSM
	VPERMW Z29, Z21, Z24       // the rows' block scales (words 0..15)
	VCVTPH2PS Y24, Z24
	FINISHM(Z12, Z25, 0, Z8)   // temporaries Z25..Z28: FIFTHX's masks stay in Z16, Z17
	FINISHM(Z13, Z26, 1, Z9)
	FINISHM(Z14, Z27, 2, Z10)
	FINISHM(Z15, Z28, 3, Z11)

	ADDQ $22, CX
	ADDQ $22, BX
	ADDQ $22, R14
	ADDQ $22, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  xQ50_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  xQ50_strided
	SCORES_CONTIG
	JMP  xQ50_next

xQ50_strided:
	SCORES_STRIDED

xQ50_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	DECQ R10
	JNZ  xQ50_group

xQ50_done:
	VZEROUPPER
	RET

// The header-register kernels' Intel flavours (hdrIntel): HDRK18I and HDRK20I are HDRK18Z4
// and HDRK20Z4 taking the call's groups of sixteen rows from two streams, the first half's
// groups and the second half's (TWOINIT: the second's rows and scores pointers, ⌈groups/2⌉
// groups on, in the frame at slot), one group of each in turn (HDRENDI swaps the two), with the
// near prefetches alone (PF18, PF20: PREFETCHT0, no PREFETCHT1 HDRFAR on) two groups on in the
// group's own stream (HDRGROUPI's HDRPFI) in place of PFGROUPS (four). Each row's score is the
// same code's, so the same scores bit for bit. The scores must not overlap (out stride 16 bytes
// or more: hdrIntel's callers check), since the groups are not stored in row order. Their macros
// take names of their own: gen_runs.go copies this file's macros ahead of the runs flavours.
#define HDRPFI \
	MOVQ R8, AX; \
	SHLQ $5, AX; \
	ADDQ DI, AX

// TWOINIT stores the second stream's rows and scores pointers to slot(SP) and slot+8(SP): the
// rows (DI) and scores (R9) of group ⌈R10/2⌉, R10 the call's groups (so the first stream takes
// one group more where they are odd).
#define TWOINIT(slot) \
	MOVQ R10, AX; \
	INCQ AX; \
	SHRQ $1, AX; \
	MOVQ AX, BX; \
	IMULQ R8, AX; \
	SHLQ $4, AX; \
	ADDQ DI, AX; \
	MOVQ AX, slot(SP); \
	MOVQ ostride+64(FP), CX; \
	IMULQ CX, BX; \
	SHLQ $4, BX; \
	ADDQ R9, BX; \
	MOVQ BX, (slot+8)(SP)

#define HDRGROUPI(hdr) \
	LEAQ hdr(DI), CX; \
	LEAQ (CX)(R8*4), BX; \
	LEAQ (BX)(R8*4), R14; \
	LEAQ (R14)(R8*4), R15; \
	MOVQ dig+0(FP), SI; \
	MOVQ aux+8(FP), DX; \
	XORL R13, R13; \
	MOVQ nb+24(FP), R11; \
	MOVQ off+72(FP), AX; \
	VBROADCASTSS (AX), Z8; \
	VBROADCASTSS 4(AX), Z9; \
	VBROADCASTSS 8(AX), Z10; \
	VBROADCASTSS 12(AX), Z11; \
	HDRPFI

#define HDRENDI(slot) \
	SCORES_T; \
	MOVQ ostride+64(FP), AX; \
	CMPQ AX, $16; \
	JNE  strided; \
	SCORES_CONTIG; \
	JMP  next; \
strided: \
	SCORES_STRIDED; \
next: \
	MOVQ ostride+64(FP), AX; \
	SHLQ $4, AX; \
	ADDQ AX, R9; \
	MOVQ R8, AX; \
	SHLQ $4, AX; \
	ADDQ AX, DI; \
	MOVQ slot(SP), AX; \
	MOVQ DI, slot(SP); \
	MOVQ AX, DI; \
	MOVQ (slot+8)(SP), AX; \
	MOVQ R9, (slot+8)(SP); \
	MOVQ AX, R9; \
	DECQ R10; \
	JNZ  group

#define HDRK18I(init, dec, offs, ld, slot) \
	MOVQ rows+32(FP), DI; \
	MOVQ rb+40(FP), R8; \
	LEAQ (R8)(R8*2), R12; \
	MOVQ out+56(FP), R9; \
	MOVQ m+48(FP), R10; \
	SHRQ $4, R10; \
	JZ   done; \
	init; \
	TWOINIT(slot); \
	HDRMASKS(·vnniHdr18Mask(SB), 4); \
	LANEMASKS; \
group: \
	HDRGROUPI(2); \
	MOVQ $(4*32), R13; \
blk: \
	CMPQ R13, $(4*32); \
	JNE  have; \
	XORL R13, R13; \
	CMPQ R11, $4; \
	JL   short; \
	HDRR18U(-2); \
	JMP  stash; \
short: \
	KMOVQ K2, K3; \
	HDRR18(-2); \
stash: \
	HDRSTASH18; \
have: \
	PF18; \
	ld(CX, Z24, X24, Y24, X0, Y0); \
	ld(BX, Z25, X25, Y25, X1, Y1); \
	ld(R14, Z26, X26, Y26, X2, Y2); \
	ld(R15, Z27, X27, Y27, X3, Y3); \
	TRANSPOSE4; \
	dec; \
	VPBROADCASTD offs(DX), Z12; \
	VPBROADCASTD offs+4(DX), Z13; \
	VPBROADCASTD offs+8(DX), Z14; \
	VPBROADCASTD offs+12(DX), Z15; \
	CHAINSM; \
	HDRCVT18; \
	FINISHM(Z12, Z16, 0, Z8); \
	FINISHM(Z13, Z17, 1, Z9); \
	FINISHM(Z14, Z18, 2, Z10); \
	FINISHM(Z15, Z19, 3, Z11); \
	ADDQ $18, CX; \
	ADDQ $18, BX; \
	ADDQ $18, R14; \
	ADDQ $18, R15; \
	ADDQ $128, SI; \
	ADDQ $96, DX; \
	ADDQ $32, R13; \
	DECQ R11; \
	JNZ  blk; \
	HDRENDI(slot); \
done: \
	VZEROUPPER; \
	RET

#define HDRK20I(slot) \
	MOVQ rows+32(FP), DI; \
	MOVQ rb+40(FP), R8; \
	LEAQ (R8)(R8*2), R12; \
	MOVQ out+56(FP), R9; \
	MOVQ m+48(FP), R10; \
	SHRQ $4, R10; \
	JZ   done; \
	INITQ4; \
	TWOINIT(slot); \
	HDRMASKS(·vnniHdr20Mask(SB), 4); \
	LANEMASKS; \
	MOVL $0x33333333, AX; \
	KMOVD AX, K5; \
	KNOTD K5, K6; \
group: \
	HDRGROUPI(4); \
blk: \
	TESTQ R13, R13; \
	JNZ  have; \
	MOVQ $4, R13; \
	CMPQ R11, R13; \
	JL   short; \
	HDRR20P(-4); \
	JMP  have; \
short: \
	KMOVQ K2, K3; \
	HDRR20(-4); \
have: \
	PF20; \
	LOAD4Q(CX, Z24, X24, Y24, X0, Y0); \
	LOAD4Q(BX, Z25, X25, Y25, X1, Y1); \
	LOAD4Q(R14, Z26, X26, Y26, X2, Y2); \
	LOAD4Q(R15, Z27, X27, Y27, X3, Y3); \
	TRANSPOSE4; \
	NIBBLES4S; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	CHAINSM; \
	VCVTPH2PS Y20, Z24; \
	VEXTRACTI64X4 $1, Z20, Y25; \
	VCVTPH2PS Y25, Z25; \
	FINISHES41M; \
	ADDQ $20, CX; \
	ADDQ $20, BX; \
	ADDQ $20, R14; \
	ADDQ $20, R15; \
	ADDQ $128, SI; \
	ADDQ $96, DX; \
	NEXT20; \
	DECQ R13; \
	DECQ R11; \
	JNZ  blk; \
	HDRENDI(slot); \
done: \
	VZEROUPPER; \
	RET

// func multiScoresQ40HdrIntelVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// HDRK18Z4's 128-byte queue of scales at 0(SP), the streams' pointers above it.
TEXT ·multiScoresQ40HdrIntelVNNI(SB), NOSPLIT, $144-80
	HDRK18I(INITQ4, NIBBLES4S, 16, LOAD4Q, 128)

// func multiScoresIQ4NLHdrIntelVBMI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
TEXT ·multiScoresIQ4NLHdrIntelVBMI(SB), NOSPLIT, $144-80
	HDRK18I(INITIQ4V, DECIQ4V, 48, LOAD4Q, 128)

// func multiScoresQ41HdrIntelVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
TEXT ·multiScoresQ41HdrIntelVNNI(SB), NOSPLIT, $16-80
	HDRK20I(0)
// PFGROUPSS is how many of its own stream's groups of sixteen rows ahead the two-stream Intel
// q5 scores kernels (multiScoresQ50XSGFNI, multiScoresQ51XSGFNI) prefetch into L1.
#define PFGROUPSS 2

// PF22XS and PF20XS are PF22X and PF20X without the far prefetches: the two-stream kernels'.
#define PF22XS \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	PREFETCHT0 128(AX); \
	PREFETCHT0 192(AX); \
	PREFETCHT0 256(AX); \
	PREFETCHT0 320(AX); \
	ADDQ $352, AX

#define PF20XS \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	PREFETCHT0 128(AX); \
	PREFETCHT0 192(AX); \
	PREFETCHT0 256(AX); \
	PREFETCHT0 320(AX); \
	ADDQ $384, AX

// func multiScoresQ51XSGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ51XGFNI over two streams of rows (multi_vnni_amd64.go's q50Split, q51Split): the
// groups of sixteen rows taken alternately from the call's first ⌈groups/2⌉ groups and from the
// rest, each stream's lines read in order, its PREFETCHT0 PFGROUPSS of its own groups on and no
// far prefetches (PF20XS). Each group's scores are multiScoresQ51XGFNI's bit for bit;
// ostride must be at least 16 (a group's stores stay in its rows').
TEXT ·multiScoresQ51XSGFNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   xQ51S_done
	MOVQ R10, AX               // two streams: the first ⌈groups/2⌉ groups (DI, R9) and the rest
	INCQ AX
	SHRQ $1, AX
	MOVQ R8, R13
	SHLQ $4, R13
	IMULQ AX, R13
	ADDQ DI, R13               // the second stream's rows
	IMULQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ R9, AX
	MOVQ AX, m+48(FP)          // the second stream's scores (the stream not in DI and R9)
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x1020408000000000, AX // NIBBLESG's matrix: bits 4..7 to 0..3
	VPBROADCASTQ AX, Z20
	MOVL $0x10101010, AX       // FIFTHX's 16
	VPBROADCASTD AX, Z22
	MOVL $0x08040201, AX       // FIFTHX's bit masks
	VPBROADCASTD AX, Z16
	MOVL $0x80402010, AX
	VPBROADCASTD AX, Z17
	VMOVDQU64 ·vnniDMWords(SB), Z21

xQ51S_group:
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead
	SHLQ $4, AX
	IMULQ $PFGROUPSS, AX
	ADDQ DI, AX

xQ51S_blk:
	PF20XS
	LOAD4YO(8, CX, Z24, X24, Y24, X0, Y0)
	LOAD4YO(8, BX, Z25, X25, Y25, X1, Y1)
	LOAD4YO(8, R14, Z26, X26, Y26, X2, Y2)
	LOAD4YO(8, R15, Z27, X27, Y27, X3, Y3)
	TRANSPOSE4
	NIBBLESG

	HDRT                       // the rows' d and m (Z29) and high-bit dwords (Z23)
	FIFTHX(·vnniQHByte0(SB), Z0, Z1)
	FIFTHX(·vnniQHByte1(SB), Z2, Z3)
	FIFTHX(·vnniQHByte2(SB), Z4, Z5)
	FIFTHX(·vnniQHByte3(SB), Z6, Z7)
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	CHAINSM
	VPERMW Z29, Z21, Z24       // the rows' block scales (words 0..15) and minima (16..31)
	VEXTRACTI64X4 $1, Z24, Y25
	VCVTPH2PS Y24, Z24
	VCVTPH2PS Y25, Z25
	FINISHES41M

	ADDQ $24, CX
	ADDQ $24, BX
	ADDQ $24, R14
	ADDQ $24, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  xQ51S_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  xQ51S_strided
	SCORES_CONTIG
	JMP  xQ51S_next

xQ51S_strided:
	SCORES_STRIDED

xQ51S_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	XCHGQ DI, R13              // the other stream's next group
	MOVQ m+48(FP), AX
	MOVQ R9, m+48(FP)
	MOVQ AX, R9
	DECQ R10
	JNZ  xQ51S_group

xQ51S_done:
	VZEROUPPER
	RET

// func multiScoresQ50XSGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)
// multiScoresQ50XGFNI over two streams of rows (multi_vnni_amd64.go's q50Split, q51Split): the
// groups of sixteen rows taken alternately from the call's first ⌈groups/2⌉ groups and from the
// rest, each stream's lines read in order, its PREFETCHT0 PFGROUPSS of its own groups on and no
// far prefetches (PF22XS). Each group's scores are multiScoresQ50XGFNI's bit for bit;
// ostride must be at least 16 (a group's stores stay in its rows').
TEXT ·multiScoresQ50XSGFNI(SB), NOSPLIT, $0-80
	MOVQ rows+32(FP), DI
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), R9
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   xQ50S_done
	MOVQ R10, AX               // two streams: the first ⌈groups/2⌉ groups (DI, R9) and the rest
	INCQ AX
	SHRQ $1, AX
	MOVQ R8, R13
	SHLQ $4, R13
	IMULQ AX, R13
	ADDQ DI, R13               // the second stream's rows
	IMULQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ R9, AX
	MOVQ AX, m+48(FP)          // the second stream's scores (the stream not in DI and R9)
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x1020408000000000, AX // NIBBLESG's matrix: bits 4..7 to 0..3
	VPBROADCASTQ AX, Z20
	MOVL $0x10101010, AX       // FIFTHX's 16
	VPBROADCASTD AX, Z22
	MOVL $0x08040201, AX       // FIFTHX's bit masks
	VPBROADCASTD AX, Z16
	MOVL $0x80402010, AX
	VPBROADCASTD AX, Z17
	VMOVDQU64 ·vnniDMWords(SB), Z21

xQ50S_group:
	MOVQ DI, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ nb+24(FP), R11
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
	MOVQ R8, AX                // prefetch pointer: PFGROUPS groups of rows ahead
	SHLQ $4, AX
	IMULQ $PFGROUPSS, AX
	ADDQ DI, AX

xQ50S_blk:
	PF22XS
	LOAD4YO(6, CX, Z24, X24, Y24, X0, Y0)
	LOAD4YO(6, BX, Z25, X25, Y25, X1, Y1)
	LOAD4YO(6, R14, Z26, X26, Y26, X2, Y2)
	LOAD4YO(6, R15, Z27, X27, Y27, X3, Y3)
	TRANSPOSE4
	NIBBLESG

	HDRT                       // the rows' d and qh's low half (Z29), qh's high half (Z23)
	VPSHRDD $16, Z23, Z29, Z23 // the rows' high-bit dwords
	FIFTHX(·vnniQHByte0(SB), Z0, Z1)
	FIFTHX(·vnniQHByte1(SB), Z2, Z3)
	FIFTHX(·vnniQHByte2(SB), Z4, Z5)
	FIFTHX(·vnniQHByte3(SB), Z6, Z7)
	VPBROADCASTD 32(DX), Z12   // −16·ΣQ: the codes' offset
	VPBROADCASTD 36(DX), Z13
	VPBROADCASTD 40(DX), Z14
	VPBROADCASTD 44(DX), Z15
	CHAINSM
	VPERMW Z29, Z21, Z24       // the rows' block scales (words 0..15)
	VCVTPH2PS Y24, Z24
	FINISHM(Z12, Z25, 0, Z8)   // temporaries Z25..Z28: FIFTHX's masks stay in Z16, Z17
	FINISHM(Z13, Z26, 1, Z9)
	FINISHM(Z14, Z27, 2, Z10)
	FINISHM(Z15, Z28, 3, Z11)

	ADDQ $22, CX
	ADDQ $22, BX
	ADDQ $22, R14
	ADDQ $22, R15
	ADDQ $128, SI
	ADDQ $96, DX
	DECQ R11
	JNZ  xQ50S_blk

	SCORES_T
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  xQ50S_strided
	SCORES_CONTIG
	JMP  xQ50S_next

xQ50S_strided:
	SCORES_STRIDED

xQ50S_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, DI
	XCHGQ DI, R13              // the other stream's next group
	MOVQ m+48(FP), AX
	MOVQ R9, m+48(FP)
	MOVQ AX, R9
	DECQ R10
	JNZ  xQ50S_group

xQ50S_done:
	VZEROUPPER
	RET
