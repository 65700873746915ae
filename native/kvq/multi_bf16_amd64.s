//go:build amd64 && !purego

#include "textflag.h"
#include "accw_amd64.h"

// bf16's AVX-512 MultiQuery kernels: multi_amd64.s's f16 kernels (two rows per scores pass,
// 64-row tiles for accumulate) with bf16's decoder, a widening move and a shift (each value's
// bits << 16), so bf16 runs on the same 16-lane skeleton as f16 on CPUs with AVX-512 F.

#define DEC_BF16(p, lo, hi, t) \
	VPMOVZXWD (p), lo; \
	VPMOVZXWD 32(p), hi; \
	VPSLLD $16, lo, lo; \
	VPSLLD $16, hi, hi

// PFDIST is multi_amd64.s's prefetch distance.
#define PFDIST 6144

// PFDISTZ4L2 and PFDISTZ4L1 are how far ahead the scores kernel's loop for AMD Zen 4
// (zen4Stream) prefetches into L2 (PREFETCHT1) and into L1 (PREFETCHT0).
#define PFDISTZ4L2 24576
#define PFDISTZ4L1 4096

#define CONSTS \
	MOVQ ·f16Table(SB), R14; \
	VMOVUPS ·q4Levels(SB), Z31; \
	VMOVUPS ·reduceOrder(SB), Z29

// func multiScoresBF16AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// Rows go in pairs, a and b (b = a on an odd last row), each query's partial sums in one
// vector per row: Z0..Z3 for a, Z16..Z19 for b. The eight sums are then reduced together.
// Each 32-value group of both rows is prefetched into L1 PFDIST ahead, or on AMD Zen 4
// (zen4Stream; the loop _blkz, chosen once a pair of rows) into L2 PFDISTZ4L2 ahead and into L1
// PFDISTZ4L1 ahead, as the f16 Zen 4 scores kernel does (gen_f16acc.go's scoresZ4). On Zen 4
// with the rows on 2 MiB pages (one thread, 131072 rows, 4 queries, d 128; thread CPU time,
// the old and new kernels alternated, 21 rounds, load 3.6) the scores took 12.36 ns a row
// against 12.81 (median 12.73 against 13.59; 11.6 in cache); L2 12 KiB and L1 3 or 6 KiB
// ahead within ~0.1 of it, L1 3 KiB alone ~0.8 slower (copies of the kernel alternated, 25
// rounds, load 1.8). The same scores bit for bit either way (TestBF16ScoresZen4Matches).
TEXT ·multiScoresBF16AVX512(SB), NOSPLIT, $0-64
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between queries
	LEAQ (DX)(DX*2), R13       // 3 queries
	MOVQ nv+16(FP), R11
	SHRQ $5, R11               // 32-value groups per row
	MOVQ rows+24(FP), DI
	MOVQ rb+32(FP), R8
	MOVQ m+40(FP), R10
	MOVQ out+48(FP), R9
	CONSTS
	TESTQ R10, R10
	JZ   multiScoresBF16AVX512_done
	TESTQ R11, R11
	JZ   multiScoresBF16AVX512_done

multiScoresBF16AVX512_pair:
	CMPQ R10, $1
	JNE  multiScoresBF16AVX512_two
	XORQ R8, R8                // odd last row: b reads a again
multiScoresBF16AVX512_two:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z16, Z16, Z16
	VXORPS Z17, Z17, Z17
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19
	MOVQ DI, BX
	LEAQ (DI)(R8*1), R15
	MOVQ SI, CX
	MOVQ R11, R12

	CMPB ·zen4Stream(SB), $0
	JNE  multiScoresBF16AVX512_blkz

multiScoresBF16AVX512_blk:
	PREFETCHT0 PFDIST(BX)
	PREFETCHT0 PFDIST(R15)
	DEC_BF16(BX, Z4, Z5, Z6)
	DEC_BF16(R15, Z7, Z8, Z9)
	VFMADD231PS (CX), Z4, Z0
	VFMADD231PS 64(CX), Z5, Z0
	VFMADD231PS (CX), Z7, Z16
	VFMADD231PS 64(CX), Z8, Z16
	VFMADD231PS (CX)(DX*1), Z4, Z1
	VFMADD231PS 64(CX)(DX*1), Z5, Z1
	VFMADD231PS (CX)(DX*1), Z7, Z17
	VFMADD231PS 64(CX)(DX*1), Z8, Z17
	VFMADD231PS (CX)(DX*2), Z4, Z2
	VFMADD231PS 64(CX)(DX*2), Z5, Z2
	VFMADD231PS (CX)(DX*2), Z7, Z18
	VFMADD231PS 64(CX)(DX*2), Z8, Z18
	VFMADD231PS (CX)(R13*1), Z4, Z3
	VFMADD231PS 64(CX)(R13*1), Z5, Z3
	VFMADD231PS (CX)(R13*1), Z7, Z19
	VFMADD231PS 64(CX)(R13*1), Z8, Z19
	ADDQ $64, BX
	ADDQ $64, R15
	ADDQ $128, CX
	DECQ R12
	JNZ  multiScoresBF16AVX512_blk
	JMP  multiScoresBF16AVX512_red

multiScoresBF16AVX512_blkz:
	PREFETCHT1 PFDISTZ4L2(BX)
	PREFETCHT1 PFDISTZ4L2(R15)
	PREFETCHT0 PFDISTZ4L1(BX)
	PREFETCHT0 PFDISTZ4L1(R15)
	DEC_BF16(BX, Z4, Z5, Z6)
	DEC_BF16(R15, Z7, Z8, Z9)
	VFMADD231PS (CX), Z4, Z0
	VFMADD231PS 64(CX), Z5, Z0
	VFMADD231PS (CX), Z7, Z16
	VFMADD231PS 64(CX), Z8, Z16
	VFMADD231PS (CX)(DX*1), Z4, Z1
	VFMADD231PS 64(CX)(DX*1), Z5, Z1
	VFMADD231PS (CX)(DX*1), Z7, Z17
	VFMADD231PS 64(CX)(DX*1), Z8, Z17
	VFMADD231PS (CX)(DX*2), Z4, Z2
	VFMADD231PS 64(CX)(DX*2), Z5, Z2
	VFMADD231PS (CX)(DX*2), Z7, Z18
	VFMADD231PS 64(CX)(DX*2), Z8, Z18
	VFMADD231PS (CX)(R13*1), Z4, Z3
	VFMADD231PS 64(CX)(R13*1), Z5, Z3
	VFMADD231PS (CX)(R13*1), Z7, Z19
	VFMADD231PS 64(CX)(R13*1), Z8, Z19
	ADDQ $64, BX
	ADDQ $64, R15
	ADDQ $128, CX
	DECQ R12
	JNZ  multiScoresBF16AVX512_blkz

multiScoresBF16AVX512_red:

	// Sum each vector's 16 lanes: 128-bit lanes first, pairing queries, then within lanes.
	VSHUFF32X4 $0x44, Z1, Z0, Z4
	VSHUFF32X4 $0xEE, Z1, Z0, Z5
	VADDPS Z5, Z4, Z4          // [a0 ×8 | a1 ×8]
	VSHUFF32X4 $0x44, Z3, Z2, Z5
	VSHUFF32X4 $0xEE, Z3, Z2, Z6
	VADDPS Z6, Z5, Z5          // [a2 ×8 | a3 ×8]
	VSHUFF32X4 $0x44, Z17, Z16, Z7
	VSHUFF32X4 $0xEE, Z17, Z16, Z8
	VADDPS Z8, Z7, Z7          // [b0 ×8 | b1 ×8]
	VSHUFF32X4 $0x44, Z19, Z18, Z8
	VSHUFF32X4 $0xEE, Z19, Z18, Z9
	VADDPS Z9, Z8, Z8          // [b2 ×8 | b3 ×8]
	VSHUFF32X4 $0x88, Z5, Z4, Z6
	VSHUFF32X4 $0xDD, Z5, Z4, Z9
	VADDPS Z9, Z6, Z6          // 128-bit lane h: four partial sums of a_h
	VSHUFF32X4 $0x88, Z8, Z7, Z9
	VSHUFF32X4 $0xDD, Z8, Z7, Z10
	VADDPS Z10, Z9, Z9         // the same for b_h
	VSHUFPS $0x88, Z9, Z6, Z10
	VSHUFPS $0xDD, Z9, Z6, Z11
	VADDPS Z11, Z10, Z10
	VSHUFPS $0x88, Z10, Z10, Z11
	VSHUFPS $0xDD, Z10, Z10, Z12
	VADDPS Z12, Z11, Z11       // lane h: [a_h, b_h, a_h, b_h]
	VPERMPS Z11, Z29, Z11      // [a0 a1 a2 a3 b0 b1 b2 b3 …]
	VMOVUPS X11, (R9)
	CMPQ R10, $1
	JEQ  multiScoresBF16AVX512_done
	VEXTRACTF32X4 $1, Z11, X12
	MOVQ ostride+56(FP), AX
	VMOVUPS X12, (R9)(AX*1)

	LEAQ (DI)(R8*2), DI
	LEAQ (R9)(AX*2), R9
	SUBQ $2, R10
	JNZ  multiScoresBF16AVX512_pair

multiScoresBF16AVX512_done:
	VZEROUPPER
	RET

// func multiAccBF16AVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// Rows go in tiles of 64 so a tile stays in L1 while its 32-value groups are read one by one,
// each group's four pairs of accumulator vectors held in registers across the tile, the
// weights taken as the f16 kernel takes them (accw_amd64.h), and the rows prefetched as the
// f16 kernel prefetches them: the next tile into L1, and in the ACC4_BCST loop (Zen 4, Intel)
// the tile three ahead into L2 as well (on Zen 4, rows on 2 MiB pages: 9.70 against 10.96 ns a row
// streamed, thread CPU time, alternated, 15 rounds).
TEXT ·multiAccBF16AVX512(SB), NOSPLIT, $16-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	CONSTS
	TESTQ R10, R10
	JZ   multiAccBF16AVX512_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   multiAccBF16AVX512_done

multiAccBF16AVX512_tile:
	MOVQ R10, AX               // rows in this tile
	CMPQ AX, $64
	JLE  multiAccBF16AVX512_tn
	MOVQ $64, AX
multiAccBF16AVX512_tn:
	MOVQ AX, tn-8(SP)
	MOVQ rb+32(FP), R12
	SHLQ $6, R12
	LEAQ (DI)(R12*1), R15      // the next tile, prefetched 64 bytes a row step: the passes
	                           // over this tile cover it evenly
	LEAQ (R12)(R12*2), R14
	ADDQ DI, R14               // the tile three ahead, into L2 the same way (the Zen 4 loop)
	MOVQ nv+16(FP), R11
	SHRQ $5, R11
	XORQ BX, BX                // byte offset of the group in a row
	MOVQ SI, CX                // accumulators of the group

multiAccBF16AVX512_grp:
	VMOVUPS (CX), Z0
	VMOVUPS 64(CX), Z1
	VMOVUPS (CX)(DX*1), Z2
	VMOVUPS 64(CX)(DX*1), Z3
	VMOVUPS (CX)(DX*2), Z4
	VMOVUPS 64(CX)(DX*2), Z5
	VMOVUPS (CX)(R13*1), Z6
	VMOVUPS 64(CX)(R13*1), Z7
	LEAQ (DI)(BX*1), R12
	MOVQ R9, R8
	MOVQ tn-8(SP), AX
	IMULQ rb+32(FP), AX
	ADDQ R12, AX
	MOVQ AX, end-16(SP)        // past this pass's last row

	CMPB ·accFloatBcst(SB), $0
	JNE  multiAccBF16AVX512_rowz

multiAccBF16AVX512_row:
	PREFETCHT0 (R15)
	ADDQ $64, R15
	DEC_BF16(R12, Z8, Z9, Z10)
	ACC4_REG
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	CMPQ R12, end-16(SP)
	JNE  multiAccBF16AVX512_row
	JMP  multiAccBF16AVX512_store

multiAccBF16AVX512_rowz:
	PREFETCHT0 (R15)
	PREFETCHT1 (R14)
	ADDQ $64, R15
	ADDQ $64, R14
	DEC_BF16(R12, Z8, Z9, Z10)
	ACC4_BCST
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	CMPQ R12, end-16(SP)
	JNE  multiAccBF16AVX512_rowz

multiAccBF16AVX512_store:

	VMOVUPS Z0, (CX)
	VMOVUPS Z1, 64(CX)
	VMOVUPS Z2, (CX)(DX*1)
	VMOVUPS Z3, 64(CX)(DX*1)
	VMOVUPS Z4, (CX)(DX*2)
	VMOVUPS Z5, 64(CX)(DX*2)
	VMOVUPS Z6, (CX)(R13*1)
	VMOVUPS Z7, 64(CX)(R13*1)
	ADDQ $64, BX
	ADDQ $128, CX
	DECQ R11
	JNZ  multiAccBF16AVX512_grp

	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ wstride+56(FP), R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  multiAccBF16AVX512_tile

multiAccBF16AVX512_done:
	VZEROUPPER
	RET
