//go:build amd64 && !purego

#include "textflag.h"

// PFDIST2 is how far ahead of a row the scores kernel prefetches, in bytes: multi_amd64.s's
// PFDIST.
#define PFDIST2 6144

// AVX-512 f16 kernels over two queries or accumulators (multi_two_amd64.go): the last group of
// two that the four-query kernels (multi_amd64.s) would pad to four, so that grouped-query
// attention with two query heads per KV head does half the work. A query's sums are those of
// the four-query kernels bit for bit: the same fused multiply-adds in the same order, the same
// reduction tree (multi.go: a query's results never depend on its grouping).

// func multiScoresF16TwoAVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// Rows go in fours, a b c e (missing ones on the last step read a again, their sums dropped),
// each query's partial sums in one vector per row: Z0, Z1 (a), Z2, Z3 (b), Z16, Z17 (c),
// Z18, Z19 (e). These are the four-query kernel's eight sums with rows a and c in the places of
// its rows and queries (a0 a1 b0 b1) in the places of its four queries, so its reduction,
// copied here, gives [a0 a1 b0 b1 c0 c1 e0 e1]. The two queries' vectors are loaded once per
// 32-value group into Z10..Z13 and serve the four rows.
TEXT ·multiScoresF16TwoAVX512(SB), NOSPLIT, $0-64
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between queries
	MOVQ nv+16(FP), R11
	SHRQ $5, R11               // 32-value groups per row
	MOVQ rows+24(FP), DI
	MOVQ rb+32(FP), R8
	MOVQ m+40(FP), R10
	MOVQ out+48(FP), R9
	MOVQ ostride+56(FP), R14
	VMOVUPS ·reduceOrder(SB), Z29
	TESTQ R10, R10
	JZ   two_scores_done
	TESTQ R11, R11
	JZ   two_scores_done

two_scores_quad:
	MOVQ DI, BX                // a
	MOVQ DI, R15               // b
	MOVQ DI, AX                // c
	MOVQ DI, R13               // e
	CMPQ R10, $2
	JLT  two_scores_rows
	ADDQ R8, R15
	CMPQ R10, $3
	JLT  two_scores_rows
	LEAQ (DI)(R8*2), AX
	CMPQ R10, $4
	JLT  two_scores_rows
	LEAQ (AX)(R8*1), R13
two_scores_rows:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z16, Z16, Z16
	VXORPS Z17, Z17, Z17
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19
	MOVQ SI, CX
	MOVQ R11, R12

two_scores_blk:
	PREFETCHT0 PFDIST2(BX)
	PREFETCHT0 PFDIST2(R15)
	PREFETCHT0 PFDIST2(AX)
	PREFETCHT0 PFDIST2(R13)
	VMOVUPS (CX), Z10
	VMOVUPS 64(CX), Z11
	VMOVUPS (CX)(DX*1), Z12
	VMOVUPS 64(CX)(DX*1), Z13
	VCVTPH2PS (BX), Z4
	VCVTPH2PS 32(BX), Z5
	VCVTPH2PS (R15), Z6
	VCVTPH2PS 32(R15), Z7
	VCVTPH2PS (AX), Z8
	VCVTPH2PS 32(AX), Z9
	VCVTPH2PS (R13), Z14
	VCVTPH2PS 32(R13), Z15
	VFMADD231PS Z10, Z4, Z0
	VFMADD231PS Z12, Z4, Z1
	VFMADD231PS Z10, Z6, Z2
	VFMADD231PS Z12, Z6, Z3
	VFMADD231PS Z10, Z8, Z16
	VFMADD231PS Z12, Z8, Z17
	VFMADD231PS Z10, Z14, Z18
	VFMADD231PS Z12, Z14, Z19
	VFMADD231PS Z11, Z5, Z0
	VFMADD231PS Z13, Z5, Z1
	VFMADD231PS Z11, Z7, Z2
	VFMADD231PS Z13, Z7, Z3
	VFMADD231PS Z11, Z9, Z16
	VFMADD231PS Z13, Z9, Z17
	VFMADD231PS Z11, Z15, Z18
	VFMADD231PS Z13, Z15, Z19
	ADDQ $64, BX
	ADDQ $64, R15
	ADDQ $64, AX
	ADDQ $64, R13
	ADDQ $128, CX
	DECQ R12
	JNZ  two_scores_blk

	// The four-query kernel's reduction (multi_amd64.s), operand for operand.
	VSHUFF32X4 $0x44, Z1, Z0, Z4
	VSHUFF32X4 $0xEE, Z1, Z0, Z5
	VADDPS Z5, Z4, Z4
	VSHUFF32X4 $0x44, Z3, Z2, Z5
	VSHUFF32X4 $0xEE, Z3, Z2, Z6
	VADDPS Z6, Z5, Z5
	VSHUFF32X4 $0x44, Z17, Z16, Z7
	VSHUFF32X4 $0xEE, Z17, Z16, Z8
	VADDPS Z8, Z7, Z7
	VSHUFF32X4 $0x44, Z19, Z18, Z8
	VSHUFF32X4 $0xEE, Z19, Z18, Z9
	VADDPS Z9, Z8, Z8
	VSHUFF32X4 $0x88, Z5, Z4, Z6
	VSHUFF32X4 $0xDD, Z5, Z4, Z9
	VADDPS Z9, Z6, Z6
	VSHUFF32X4 $0x88, Z8, Z7, Z9
	VSHUFF32X4 $0xDD, Z8, Z7, Z10
	VADDPS Z10, Z9, Z9
	VSHUFPS $0x88, Z9, Z6, Z10
	VSHUFPS $0xDD, Z9, Z6, Z11
	VADDPS Z11, Z10, Z10
	VSHUFPS $0x88, Z10, Z10, Z11
	VSHUFPS $0xDD, Z10, Z10, Z12
	VADDPS Z12, Z11, Z11
	VPERMPS Z11, Z29, Z11      // [a0 a1 b0 b1 c0 c1 e0 e1 …]
	VEXTRACTF32X4 $1, Z11, X12
	VMOVLPS X11, (R9)
	CMPQ R10, $1
	JEQ  two_scores_done
	VMOVHPS X11, (R9)(R14*1)
	CMPQ R10, $2
	JEQ  two_scores_done
	LEAQ (R9)(R14*2), R9
	VMOVLPS X12, (R9)
	CMPQ R10, $3
	JEQ  two_scores_done
	VMOVHPS X12, (R9)(R14*1)
	LEAQ (R9)(R14*2), R9
	LEAQ (DI)(R8*4), DI
	SUBQ $4, R10
	JNZ  two_scores_quad

two_scores_done:
	VZEROUPPER
	RET

// func multiAccF16TwoAVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// The four-accumulator kernel's loops (multi_amd64.s) for two: rows in tiles of 64, each
// 32-value group's two pairs of accumulator vectors held in Z0..Z3 across the tile, the rows
// fused-multiply-added into them in order.
TEXT ·multiAccF16TwoAVX512(SB), NOSPLIT, $8-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	MOVQ rb+32(FP), R13
	MOVQ wstride+56(FP), R14
	TESTQ R10, R10
	JZ   two_acc_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   two_acc_done

two_acc_tile:
	MOVQ R10, AX               // rows in this tile
	CMPQ AX, $64
	JLE  two_acc_tn
	MOVQ $64, AX
two_acc_tn:
	MOVQ AX, tn-8(SP)
	MOVQ R13, R12
	SHLQ $6, R12
	LEAQ (DI)(R12*1), R15      // the next tile, prefetched 64 bytes a row step
	MOVQ nv+16(FP), R11
	SHRQ $5, R11
	XORQ BX, BX                // byte offset of the group in a row
	MOVQ SI, CX                // accumulators of the group

two_acc_grp:
	VMOVUPS (CX), Z0
	VMOVUPS 64(CX), Z1
	VMOVUPS (CX)(DX*1), Z2
	VMOVUPS 64(CX)(DX*1), Z3
	LEAQ (DI)(BX*1), R12
	MOVQ R9, R8
	MOVQ tn-8(SP), AX
	IMULQ R13, AX
	ADDQ R12, AX               // past this pass's last row

two_acc_row:
	PREFETCHT0 (R15)
	ADDQ $64, R15
	VCVTPH2PS (R12), Z8
	VCVTPH2PS 32(R12), Z9
	VBROADCASTSS (R8), Z11
	VFMADD231PS Z11, Z8, Z0
	VFMADD231PS Z11, Z9, Z1
	VBROADCASTSS 4(R8), Z12
	VFMADD231PS Z12, Z8, Z2
	VFMADD231PS Z12, Z9, Z3
	ADDQ R13, R12
	ADDQ R14, R8
	CMPQ R12, AX
	JNE  two_acc_row

	VMOVUPS Z0, (CX)
	VMOVUPS Z1, 64(CX)
	VMOVUPS Z2, (CX)(DX*1)
	VMOVUPS Z3, 64(CX)(DX*1)
	ADDQ $64, BX
	ADDQ $128, CX
	DECQ R11
	JNZ  two_acc_grp

	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ R13, R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ R14, R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  two_acc_tile

two_acc_done:
	VZEROUPPER
	RET
