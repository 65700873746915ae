//go:build amd64 && !purego

#include "textflag.h"
#include "accw_amd64.h"

// AVX-512 kernels of the MultiQuery fast path (multi.go): four queries per pass over the rows.
// The contracts are multiKernels'. Every kernel reads whole groups of 32 values: a block of a
// block format (scale, payload) or 64 bytes of an f16 row.
//
// A decoder turns the 32 values at p into two vectors of 16 floats, lo (values 0..15) and hi
// (values 16..31), the block scale applied. Block scales are widened by a lookup in f16Table
// (its address in R14) rather than with VCVTPH2PS, which keeps them off the vector ports
// (q4_0 reads it as the embedded broadcast of the multiply that scales its level table);
// t is a scratch vector and AX a scratch register. q4_0 scales its level table (·q4Levels,
// Z31) by the block scale and looks the nibbles up with VPERMPS, which reads only an index's
// low four bits: no masking. The products d·c are exact in float32 for every format here.

#define DEC_F16(p, lo, hi, t) \
	VCVTPH2PS (p), lo; \
	VCVTPH2PS 32(p), hi

#define DEC_Q80(p, lo, hi, t) \
	MOVWLZX (p), AX; \
	VBROADCASTSS (R14)(AX*4), t; \
	VPMOVSXBD 2(p), lo; \
	VPMOVSXBD 18(p), hi; \
	VCVTDQ2PS lo, lo; \
	VCVTDQ2PS hi, hi; \
	VMULPS t, lo, lo; \
	VMULPS t, hi, hi

#define DEC_Q40(p, lo, hi, t) \
	MOVWLZX (p), AX; \
	VMULPS.BCST (R14)(AX*4), Z31, t; \
	VPMOVZXBD 2(p), lo; \
	VPSRLD $4, lo, hi; \
	VPERMPS t, lo, lo; \
	VPERMPS t, hi, hi

// PFDIST is how far ahead of a row the scores kernels prefetch, in bytes: far enough to cover
// the memory latency, and across the 4 KiB page boundaries where hardware prefetchers stop.
// One thread streaming ~24 GB/s against ~130 ns of DRAM latency needs ~3 KiB in flight
// (Little's law); 2048 was short of it: on a 2-core AMD EPYC (AVX-512) 6144 took 11 of 12
// interleaved format timings at 131072 cells lower than 2048 (a loaded machine; see the note).
#define PFDIST 6144

// CONSTS loads the f16 table's address, the q4_0 levels and the reduction's lane order.
#define CONSTS \
	MOVQ ·f16Table(SB), R14; \
	VMOVUPS ·q4Levels(SB), Z31; \
	VMOVUPS ·reduceOrder(SB), Z29

// func multiScoresF16AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// Rows go in pairs, a and b (b = a on an odd last row), each query's partial sums in one
// vector per row: Z0..Z3 for a, Z16..Z19 for b. The eight sums are then reduced together.
// The group's eight query vectors are loaded once into Z10..Z15, Z20, Z21 and serve both
// rows, as in the q8_0 kernel: half the loads of memory-operand FMAs, no indexed FMA operands
// to unlaminate.
//
// When the scores of four rows fill one 64-byte line (ostride 16, out 64-byte aligned), the
// rows go by fours, the first pair's scores kept in Z22 until the second's join them, and each
// line is written with one non-temporal store, R14 counting the rows left to write so. Ordinary
// stores into lines that have left L1 (decode's score buffer is 64 KiB a 4096-cell chunk, and
// the chunk's 2 MiB of rows pass through L1 and L2 between its writes) held the row stream
// back: on AMD Zen 5, with the rows streaming from DRAM, such a pass took ~25% longer than one
// storing into a few lines that stay in L1, and as long with the lines prefetched for writing
// first; with the non-temporal stores, which go around the caches, it took no longer. The
// caller reads the scores back once (from memory: 4 KiB more read per 64 KiB of f16 rows). An
// SFENCE before the return orders the stores before the caller's reads on any core.
//
// AMD Zen 4 runs multiScoresF16Z4 instead (multi_f16acc_amd64.go): this kernel in 256-bit
// operations, its scores bit for bit, stored with ordinary stores (on Zen 4 the softmax read
// non-temporally stored scores back from DRAM: ~0.3 ns a row more, gen_f16acc.go).
TEXT ·multiScoresF16AVX512(SB), NOSPLIT, $0-64
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
	VMOVUPS ·reduceOrder(SB), Z29
	TESTQ R10, R10
	JZ   multiScoresF16AVX512_done
	TESTQ R11, R11
	JZ   multiScoresF16AVX512_done
	XORQ R14, R14              // rows left for whole-line non-temporal stores
	CMPQ ostride+56(FP), $16
	JNE  multiScoresF16AVX512_pair
	TESTQ $63, R9
	JNZ  multiScoresF16AVX512_pair
	MOVQ R10, R14
	ANDQ $-4, R14

multiScoresF16AVX512_pair:
	CMPQ R10, $1
	JNE  multiScoresF16AVX512_two
	XORQ R8, R8                // odd last row: b reads a again
multiScoresF16AVX512_two:
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

multiScoresF16AVX512_blk:
	PREFETCHT0 PFDIST(BX)
	PREFETCHT0 PFDIST(R15)
	DEC_F16(BX, Z4, Z5, Z6)
	DEC_F16(R15, Z7, Z8, Z9)
	VMOVUPS (CX), Z10
	VMOVUPS 64(CX), Z11
	VMOVUPS (CX)(DX*1), Z12
	VMOVUPS 64(CX)(DX*1), Z13
	VMOVUPS (CX)(DX*2), Z14
	VMOVUPS 64(CX)(DX*2), Z15
	VMOVUPS (CX)(R13*1), Z20
	VMOVUPS 64(CX)(R13*1), Z21
	VFMADD231PS Z10, Z4, Z0
	VFMADD231PS Z11, Z5, Z0
	VFMADD231PS Z10, Z7, Z16
	VFMADD231PS Z11, Z8, Z16
	VFMADD231PS Z12, Z4, Z1
	VFMADD231PS Z13, Z5, Z1
	VFMADD231PS Z12, Z7, Z17
	VFMADD231PS Z13, Z8, Z17
	VFMADD231PS Z14, Z4, Z2
	VFMADD231PS Z15, Z5, Z2
	VFMADD231PS Z14, Z7, Z18
	VFMADD231PS Z15, Z8, Z18
	VFMADD231PS Z20, Z4, Z3
	VFMADD231PS Z21, Z5, Z3
	VFMADD231PS Z20, Z7, Z19
	VFMADD231PS Z21, Z8, Z19
	ADDQ $64, BX
	ADDQ $64, R15
	ADDQ $128, CX
	DECQ R12
	JNZ  multiScoresF16AVX512_blk

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
	TESTQ R14, R14
	JZ   multiScoresF16AVX512_store
	SUBQ $2, R14
	TESTQ $2, R14
	JZ   multiScoresF16AVX512_line
	VMOVAPS Z11, Z22           // the first pair of four rows: held for the second
	JMP  multiScoresF16AVX512_next
multiScoresF16AVX512_line:
	VSHUFF32X4 $0x44, Z11, Z22, Z11 // [first pair's 8 scores | second pair's 8]
	VMOVNTPS Z11, (R9)
	ADDQ $64, R9
	JMP  multiScoresF16AVX512_next

multiScoresF16AVX512_store:
	VMOVUPS X11, (R9)
	CMPQ R10, $1
	JEQ  multiScoresF16AVX512_done
	VEXTRACTF32X4 $1, Z11, X12
	MOVQ ostride+56(FP), AX
	VMOVUPS X12, (R9)(AX*1)
	LEAQ (R9)(AX*2), R9

multiScoresF16AVX512_next:
	LEAQ (DI)(R8*2), DI
	SUBQ $2, R10
	JNZ  multiScoresF16AVX512_pair

multiScoresF16AVX512_done:
	SFENCE
	VZEROUPPER
	RET

// func multiAccF16AVX512PF(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf1, pf3 int, bcst bool)
// Rows go in tiles of 64 so a tile stays in L1 while its 32-value groups are read one by one,
// each group's four pairs of accumulator vectors held in registers across the tile. The
// weights reach the FMAs through ACC4_REG, or ACC4_BCST where bcst is set (accFloatBcst:
// AMD Zen 4 and Intel; accw_amd64.h).
//
// Each row step prefetches 64 bytes of the memory pf1 bytes past the tile's first row into L1
// (PREFETCHT0, R15); the ACC4_BCST loop (AMD Zen 4, Intel) also prefetches 64 bytes of the memory pf3
// bytes past it into L2 (PREFETCHT1, R14). multiAccF16AVX512 aims them at the next tile and the
// tile three ahead (48 KiB ahead at 128 values); AccumulateManyMultiRuns at the next runs of a
// paged store, which are elsewhere in memory. The passes read a tile a column of lines at a time, so the
// hardware prefetchers do not cover it and the L1 prefetch alone, one tile ahead, still left
// the last lines of a tile in flight when its first pass began. On Zen 4 with the rows on
// 2 MiB pages (one thread, 131072 rows, 4 queries, d 128; thread CPU time, old and new
// alternated, 15 rounds, load 1.5) the values phase streamed took 9.34 ns a row against 10.99
// (median 9.45 against 11.20), the same as with the rows in cache (9.6): the whole decode 21.4
// against 23.3 ms. Also tried: PREFETCHT1 one tile ahead alone ~10.3-11.6, PREFETCHT1 two or
// three tiles ahead alone ~10.1-11.0, PREFETCHT0 two tiles ahead alone slower than one, both
// levels with the far one two or four tiles ahead within ~0.2 of three, no prefetch twice the
// time (the column order defeats the hardware prefetchers).
TEXT ·multiAccF16AVX512PF(SB), NOSPLIT, $16-81
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	CONSTS
	TESTQ R10, R10
	JZ   multiAccF16AVX512PF_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   multiAccF16AVX512PF_done

multiAccF16AVX512PF_tile:
	MOVQ R10, AX               // rows in this tile
	CMPQ AX, $64
	JLE  multiAccF16AVX512PF_tn
	MOVQ $64, AX
multiAccF16AVX512PF_tn:
	MOVQ AX, tn-8(SP)
	MOVQ pf1+64(FP), R15
	ADDQ DI, R15               // the next run, prefetched 64 bytes a row step
	MOVQ pf3+72(FP), R14
	ADDQ DI, R14               // the run three ahead, into L2 the same way (the Zen 4 loop)
	MOVQ nv+16(FP), R11
	SHRQ $5, R11
	XORQ BX, BX                // byte offset of the group in a row
	MOVQ SI, CX                // accumulators of the group

multiAccF16AVX512PF_grp:
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

	CMPB bcst+80(FP), $0
	JNE  multiAccF16AVX512PF_rowz

multiAccF16AVX512PF_row:
	PREFETCHT0 (R15)
	ADDQ $64, R15
	DEC_F16(R12, Z8, Z9, Z10)
	ACC4_REG
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	CMPQ R12, end-16(SP)
	JNE  multiAccF16AVX512PF_row
	JMP  multiAccF16AVX512PF_store

multiAccF16AVX512PF_rowz:
	PREFETCHT0 (R15)
	PREFETCHT1 (R14)
	ADDQ $64, R15
	ADDQ $64, R14
	DEC_F16(R12, Z8, Z9, Z10)
	ACC4_BCST
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	CMPQ R12, end-16(SP)
	JNE  multiAccF16AVX512PF_rowz

multiAccF16AVX512PF_store:

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
	JNZ  multiAccF16AVX512PF_grp

	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ wstride+56(FP), R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  multiAccF16AVX512PF_tile

multiAccF16AVX512PF_done:
	VZEROUPPER
	RET

// func multiScoresQ80AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// Rows go in pairs, a and b (b = a on an odd last row), each query's partial sums in one
// vector per row: Z0..Z3 for a, Z16..Z19 for b. The eight sums are then reduced together.
// The group's eight query vectors are loaded once into Z10..Z15, Z20, Z21 and serve both
// rows: half the loads of memory-operand FMAs, and no indexed FMA operands to unlaminate.
TEXT ·multiScoresQ80AVX512(SB), NOSPLIT, $0-64
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
	JZ   multiScoresQ80AVX512_done
	TESTQ R11, R11
	JZ   multiScoresQ80AVX512_done

multiScoresQ80AVX512_pair:
	CMPQ R10, $1
	JNE  multiScoresQ80AVX512_two
	XORQ R8, R8                // odd last row: b reads a again
multiScoresQ80AVX512_two:
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

multiScoresQ80AVX512_blk:
	PREFETCHT0 PFDIST(BX)
	PREFETCHT0 PFDIST(R15)
	DEC_Q80(BX, Z4, Z5, Z6)
	DEC_Q80(R15, Z7, Z8, Z9)
	VMOVUPS (CX), Z10
	VMOVUPS 64(CX), Z11
	VMOVUPS (CX)(DX*1), Z12
	VMOVUPS 64(CX)(DX*1), Z13
	VMOVUPS (CX)(DX*2), Z14
	VMOVUPS 64(CX)(DX*2), Z15
	VMOVUPS (CX)(R13*1), Z20
	VMOVUPS 64(CX)(R13*1), Z21
	VFMADD231PS Z10, Z4, Z0
	VFMADD231PS Z11, Z5, Z0
	VFMADD231PS Z10, Z7, Z16
	VFMADD231PS Z11, Z8, Z16
	VFMADD231PS Z12, Z4, Z1
	VFMADD231PS Z13, Z5, Z1
	VFMADD231PS Z12, Z7, Z17
	VFMADD231PS Z13, Z8, Z17
	VFMADD231PS Z14, Z4, Z2
	VFMADD231PS Z15, Z5, Z2
	VFMADD231PS Z14, Z7, Z18
	VFMADD231PS Z15, Z8, Z18
	VFMADD231PS Z20, Z4, Z3
	VFMADD231PS Z21, Z5, Z3
	VFMADD231PS Z20, Z7, Z19
	VFMADD231PS Z21, Z8, Z19
	ADDQ $34, BX
	ADDQ $34, R15
	ADDQ $128, CX
	DECQ R12
	JNZ  multiScoresQ80AVX512_blk

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
	JEQ  multiScoresQ80AVX512_done
	VEXTRACTF32X4 $1, Z11, X12
	MOVQ ostride+56(FP), AX
	VMOVUPS X12, (R9)(AX*1)

	LEAQ (DI)(R8*2), DI
	LEAQ (R9)(AX*2), R9
	SUBQ $2, R10
	JNZ  multiScoresQ80AVX512_pair

multiScoresQ80AVX512_done:
	VZEROUPPER
	RET

// func multiAccQ80AVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// Rows go in tiles of 64 so a tile stays in L1 while its 32-value groups are read one by one,
// each group's four pairs of accumulator vectors held in registers across the tile.
TEXT ·multiAccQ80AVX512(SB), NOSPLIT, $16-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	CONSTS
	TESTQ R10, R10
	JZ   multiAccQ80AVX512_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   multiAccQ80AVX512_done

multiAccQ80AVX512_tile:
	MOVQ R10, AX               // rows in this tile
	CMPQ AX, $64
	JLE  multiAccQ80AVX512_tn
	MOVQ $64, AX
multiAccQ80AVX512_tn:
	MOVQ AX, tn-8(SP)
	MOVQ rb+32(FP), R12
	SHLQ $6, R12
	LEAQ (DI)(R12*1), R15      // the next tile, prefetched 34 bytes a row step: the passes
	                           // over this tile cover it evenly
	MOVQ nv+16(FP), R11
	SHRQ $5, R11
	XORQ BX, BX                // byte offset of the group in a row
	MOVQ SI, CX                // accumulators of the group

multiAccQ80AVX512_grp:
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

multiAccQ80AVX512_row:
	PREFETCHT0 (R15)
	ADDQ $34, R15
	DEC_Q80(R12, Z8, Z9, Z10)
	VBROADCASTSS (R8), Z11
	VFMADD231PS Z11, Z8, Z0
	VFMADD231PS Z11, Z9, Z1
	VBROADCASTSS 4(R8), Z12
	VFMADD231PS Z12, Z8, Z2
	VFMADD231PS Z12, Z9, Z3
	VBROADCASTSS 8(R8), Z13
	VFMADD231PS Z13, Z8, Z4
	VFMADD231PS Z13, Z9, Z5
	VBROADCASTSS 12(R8), Z14
	VFMADD231PS Z14, Z8, Z6
	VFMADD231PS Z14, Z9, Z7
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	CMPQ R12, end-16(SP)
	JNE  multiAccQ80AVX512_row

	VMOVUPS Z0, (CX)
	VMOVUPS Z1, 64(CX)
	VMOVUPS Z2, (CX)(DX*1)
	VMOVUPS Z3, 64(CX)(DX*1)
	VMOVUPS Z4, (CX)(DX*2)
	VMOVUPS Z5, 64(CX)(DX*2)
	VMOVUPS Z6, (CX)(R13*1)
	VMOVUPS Z7, 64(CX)(R13*1)
	ADDQ $34, BX
	ADDQ $128, CX
	DECQ R11
	JNZ  multiAccQ80AVX512_grp

	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ wstride+56(FP), R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  multiAccQ80AVX512_tile

multiAccQ80AVX512_done:
	VZEROUPPER
	RET

// func multiScoresQ40AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// Rows go in pairs, a and b (b = a on an odd last row), each query's partial sums in one
// vector per row: Z0..Z3 for a, Z16..Z19 for b. The eight sums are then reduced together.
// The group's eight query vectors are loaded once into Z10..Z15, Z20, Z21 and serve both
// rows: half the loads of memory-operand FMAs, and no indexed FMA operands to unlaminate.
TEXT ·multiScoresQ40AVX512(SB), NOSPLIT, $0-64
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
	JZ   multiScoresQ40AVX512_done
	TESTQ R11, R11
	JZ   multiScoresQ40AVX512_done

multiScoresQ40AVX512_pair:
	CMPQ R10, $1
	JNE  multiScoresQ40AVX512_two
	XORQ R8, R8                // odd last row: b reads a again
multiScoresQ40AVX512_two:
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

multiScoresQ40AVX512_blk:
	PREFETCHT0 PFDIST(BX)
	PREFETCHT0 PFDIST(R15)
	DEC_Q40(BX, Z4, Z5, Z6)
	DEC_Q40(R15, Z7, Z8, Z9)
	VMOVUPS (CX), Z10
	VMOVUPS 64(CX), Z11
	VMOVUPS (CX)(DX*1), Z12
	VMOVUPS 64(CX)(DX*1), Z13
	VMOVUPS (CX)(DX*2), Z14
	VMOVUPS 64(CX)(DX*2), Z15
	VMOVUPS (CX)(R13*1), Z20
	VMOVUPS 64(CX)(R13*1), Z21
	VFMADD231PS Z10, Z4, Z0
	VFMADD231PS Z11, Z5, Z0
	VFMADD231PS Z10, Z7, Z16
	VFMADD231PS Z11, Z8, Z16
	VFMADD231PS Z12, Z4, Z1
	VFMADD231PS Z13, Z5, Z1
	VFMADD231PS Z12, Z7, Z17
	VFMADD231PS Z13, Z8, Z17
	VFMADD231PS Z14, Z4, Z2
	VFMADD231PS Z15, Z5, Z2
	VFMADD231PS Z14, Z7, Z18
	VFMADD231PS Z15, Z8, Z18
	VFMADD231PS Z20, Z4, Z3
	VFMADD231PS Z21, Z5, Z3
	VFMADD231PS Z20, Z7, Z19
	VFMADD231PS Z21, Z8, Z19
	ADDQ $18, BX
	ADDQ $18, R15
	ADDQ $128, CX
	DECQ R12
	JNZ  multiScoresQ40AVX512_blk

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
	JEQ  multiScoresQ40AVX512_done
	VEXTRACTF32X4 $1, Z11, X12
	MOVQ ostride+56(FP), AX
	VMOVUPS X12, (R9)(AX*1)

	LEAQ (DI)(R8*2), DI
	LEAQ (R9)(AX*2), R9
	SUBQ $2, R10
	JNZ  multiScoresQ40AVX512_pair

multiScoresQ40AVX512_done:
	VZEROUPPER
	RET

// func multiAccQ40AVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
// Rows go in tiles of 64 so a tile stays in L1 while its 32-value groups are read one by one,
// each group's four pairs of accumulator vectors held in registers across the tile.
TEXT ·multiAccQ40AVX512(SB), NOSPLIT, $16-64
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), DX
	SHLQ $2, DX                // bytes between accumulators
	LEAQ (DX)(DX*2), R13
	MOVQ rows+24(FP), DI
	MOVQ m+40(FP), R10
	MOVQ w+48(FP), R9
	CONSTS
	TESTQ R10, R10
	JZ   multiAccQ40AVX512_done
	MOVQ nv+16(FP), AX
	SHRQ $5, AX
	TESTQ AX, AX
	JZ   multiAccQ40AVX512_done

multiAccQ40AVX512_tile:
	MOVQ R10, AX               // rows in this tile
	CMPQ AX, $64
	JLE  multiAccQ40AVX512_tn
	MOVQ $64, AX
multiAccQ40AVX512_tn:
	MOVQ AX, tn-8(SP)
	MOVQ rb+32(FP), R12
	SHLQ $6, R12
	LEAQ (DI)(R12*1), R15      // the next tile, prefetched 18 bytes a row step: the four
	                           // passes over this tile cover it evenly
	MOVQ nv+16(FP), R11
	SHRQ $5, R11
	XORQ BX, BX                // byte offset of the group in a row
	MOVQ SI, CX                // accumulators of the group

multiAccQ40AVX512_grp:
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

multiAccQ40AVX512_row:
	PREFETCHT0 (R15)
	ADDQ $18, R15
	DEC_Q40(R12, Z8, Z9, Z10)
	VBROADCASTSS (R8), Z11
	VFMADD231PS Z11, Z8, Z0
	VFMADD231PS Z11, Z9, Z1
	VBROADCASTSS 4(R8), Z12
	VFMADD231PS Z12, Z8, Z2
	VFMADD231PS Z12, Z9, Z3
	VBROADCASTSS 8(R8), Z13
	VFMADD231PS Z13, Z8, Z4
	VFMADD231PS Z13, Z9, Z5
	VBROADCASTSS 12(R8), Z14
	VFMADD231PS Z14, Z8, Z6
	VFMADD231PS Z14, Z9, Z7
	ADDQ rb+32(FP), R12
	ADDQ wstride+56(FP), R8
	CMPQ R12, end-16(SP)
	JNE  multiAccQ40AVX512_row

	VMOVUPS Z0, (CX)
	VMOVUPS Z1, 64(CX)
	VMOVUPS Z2, (CX)(DX*1)
	VMOVUPS Z3, 64(CX)(DX*1)
	VMOVUPS Z4, (CX)(DX*2)
	VMOVUPS Z5, 64(CX)(DX*2)
	VMOVUPS Z6, (CX)(R13*1)
	VMOVUPS Z7, 64(CX)(R13*1)
	ADDQ $18, BX
	ADDQ $128, CX
	DECQ R11
	JNZ  multiAccQ40AVX512_grp

	MOVQ tn-8(SP), AX
	MOVQ AX, R12
	IMULQ rb+32(FP), R12
	ADDQ R12, DI
	MOVQ AX, R12
	IMULQ wstride+56(FP), R12
	ADDQ R12, R9
	SUBQ AX, R10
	JNZ  multiAccQ40AVX512_tile

multiAccQ40AVX512_done:
	VZEROUPPER
	RET
