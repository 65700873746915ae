// The body of the q8_0 scores kernels (multi_vnni_amd64.s: multiScoresQ80VNNI and its Zen 4
// flavour multiScoresQ80Z4VNNI), included once for each with Q80PF the prefetch instruction;
// with Q80ONE defined, the one-digit kernels (multiScoresQ80OneVNNI, multiScoresQ80OneZ4VNNI),
// and with Q80ONE1 as well (multiScoresQ80OneZ4VNNI) one chain a query in place of two.
// With Q80RUNS defined (multiScoresQ80OneZ4RunsVNNI), the prefetches go pf bytes (an argument
// at 80(FP)) past each group's rows, in place of PFGROUPS groups on; with Q80PFGROUPS defined
// (multiScoresQ80OneIntelVNNI), Q80PFGROUPS groups on.
// With Q80TWO defined as well (multiScoresQ80OneIntelTwoVNNI), the groups come from the call's
// two halves in turn (two streams): a group stages the scales of the group after it in that
// order, the other stream's (sd), and moves on to it; the scores go to their rows' places (od).
// With Q80SHLD defined (multiScoresQ80Z4VNNI), each query's two digits go through one chain
// (CHAINH, VPSHLDD, CHAINL, FINISHS) in place of two (CHAIN2, FINISH2).
// The TEXT line gives the frame $48: five locals, cnt (blocks left of the group), grp (groups
// left), outp (the group's scores), dlt (the offset of the stage buffer the group writes from
// the one it reads) and rbase (the buffer it reads); $80 with Q80TWO: sd, sd2, od, od2 too.
//
// Not kept (AMD Zen 4, shared 2 vCPUs at load ~15–20, thread CPU time, alternated): the high
// digit's chains started at zero (VPXORD) and the low digit's at −128·ΣQ (aux[4+h], rewritten
// by the driver as 2⁸·aux[12+2h] + aux[13+2h]), four offset broadcasts a block fewer, the same
// sums: 4096 rows of 128 values, four queries, in cache 6.44–6.68 → 6.36–6.51 ns a row (min,
// six runs; lower in four), but native/attn TestDecodeBreakdown at the bench shape (131072
// cells, streamed, ten alternations) scores median of mins 6.90 → 7.12, higher in eight of ten.
// The Zen 4 flavour's prefetches (PREFETCHT1) 6, 8, 12 or 16 groups ahead in place of 4, with
// the rows on 2 MiB pages (the same decode test, 6 and 10 alternations, scores min/median of
// the runs' minima): 6.82/7.18 → 6.69/6.86, 6.67/6.78, 6.69/6.90 (first round); 6.67/6.79 →
// 6.62/6.75 at 8 and 6.67/6.78 at 16 (second): within noise (with the keys in cache first,
// KVLAB_TOUCH=kv, 6.57–6.89: it no longer waits on memory), kept at PFGROUPS.

	MOVQ rows+32(FP), R9       // the group's first row
	MOVQ rb+40(FP), R8
	LEAQ (R8)(R8*2), R12       // 3 rows
	MOVQ out+56(FP), AX
	MOVQ AX, outp-24(SP)
	MOVQ m+48(FP), R10
	SHRQ $4, R10               // groups of sixteen rows
	JZ   vnniQ80_done
	MOVQ R10, grp-16(SP)
#ifdef Q80TWO
	// Two streams (Q80TWO): the first ⌈groups/2⌉ groups and the rest, one group of each in
	// turn; sd (od) is what the next group's rows (scores) are past this group's next ones, sd2
	// (od2) the same for the group after, swapped a group.
	INCQ R10
	SHRQ $1, R10               // H, the first stream's groups
	MOVQ R8, AX
	SHLQ $4, AX                // a group's rows
	MOVQ R10, BX
	IMULQ AX, BX
	NEGQ BX
	MOVQ BX, sd2-56(SP)        // −H groups
	ADDQ AX, BX
	NEGQ BX
	MOVQ BX, sd-48(SP)         // H − 1 groups
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX                // a group's scores
	MOVQ R10, BX
	IMULQ AX, BX
	NEGQ BX
	MOVQ BX, od2-72(SP)
	ADDQ AX, BX
	NEGQ BX
	MOVQ BX, od-64(SP)
#endif
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z31

	// Stage group 0's scales (32 bytes a block) into the first buffer of the stage; each group
	// stages the next one's into the other buffer during its blocks (STAGEN).
	MOVQ R9, CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ stage+16(FP), SI
	MOVQ SI, rbase-40(SP)
	MOVQ nb+24(FP), R11
	SHLQ $5, R11
	MOVQ R11, dlt-32(SP)       // +32·nb, then −32·nb, +32·nb, ...
	MOVQ nb+24(FP), R11
vnniQ80_stage:
	STAGE(CX, 0)
	STAGE(BX, 1)
	STAGE(R14, 2)
	STAGE(R15, 3)
	ADDQ $34, CX
	ADDQ $34, BX
	ADDQ $34, R14
	ADDQ $34, R15
	ADDQ $32, SI
	DECQ R11
	JNZ  vnniQ80_stage

vnniQ80_group:
	// Row-group pointers at the codes of block 0: CX rows 0..3, BX rows 4..7, R14 rows 8..11,
	// R15 rows 12..15.
	LEAQ 2(R9), CX
	LEAQ (CX)(R8*4), BX
	LEAQ (BX)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	MOVQ dig+0(FP), SI
	MOVQ aux+8(FP), DX
	MOVQ rbase-40(SP), R13
	MOVQ dlt-32(SP), R11
	MOVQ nb+24(FP), AX
	MOVQ AX, cnt-8(SP)
	MOVQ off+72(FP), AX        // the scores start at the queries' offsets
	VBROADCASTSS (AX), Z8
	VBROADCASTSS 4(AX), Z9
	VBROADCASTSS 8(AX), Z10
	VBROADCASTSS 12(AX), Z11
#ifdef Q80RUNS
	MOVQ pf+80(FP), AX         // prefetch pointer: the same rows of the next run, pf bytes on
	ADDQ R9, AX
#else
	MOVQ R8, AX                // prefetch pointer: PFGROUPS (Q80PFGROUPS) groups of rows ahead,
	SHLQ $4, AX                // 576 bytes per block (a group is 16·34 = 544 bytes per block)
#ifdef Q80PFGROUPS
	IMULQ $Q80PFGROUPS, AX
#else
	IMULQ $PFGROUPS, AX
#endif
	ADDQ R9, AX
#endif

vnniQ80_blk:
	Q80PF (AX)
	Q80PF 64(AX)
	Q80PF 128(AX)
	Q80PF 192(AX)
	Q80PF 256(AX)
	Q80PF 320(AX)
	Q80PF 384(AX)
	Q80PF 448(AX)
	Q80PF 512(AX)
	ADDQ $576, AX
	CMPQ grp-16(SP), $1
	JEQ  vnniQ80_staged        // the last group: no next one to stage
	LEAQ (R15)(R8*4), R10      // the next group's rows 0..3 at this block's codes
#ifdef Q80TWO
	ADDQ sd-48(SP), R10
#endif
	STAGEN(R10, 0)
	LEAQ (R10)(R8*4), R10
	STAGEN(R10, 1)
	LEAQ (R10)(R8*4), R10
	STAGEN(R10, 2)
	LEAQ (R10)(R8*4), R10
	STAGEN(R10, 3)
vnniQ80_staged:
	LOAD4(CX, Z24, X24)
	LOAD4(BX, Z25, X25)
	LOAD4(R14, Z26, X26)
	LOAD4(R15, Z27, X27)
	TRANSPOSE4
	VPXORD Z31, Z25, Z0        // codes + 128: unsigned bytes
	VPXORD Z31, Z26, Z1
	VPXORD Z31, Z27, Z2
	VPXORD Z31, Z28, Z3
	LOAD4O(16, CX, Z24, X24)
	LOAD4O(16, BX, Z25, X25)
	LOAD4O(16, R14, Z26, X26)
	LOAD4O(16, R15, Z27, X27)
	TRANSPOSE4
	VPXORD Z31, Z25, Z4
	VPXORD Z31, Z26, Z5
	VPXORD Z31, Z27, Z6
	VPXORD Z31, Z28, Z7

#ifdef Q80ONE
#ifdef Q80ONE1
	// One chain a query (Q80ONE1): started at −128·ΣQ, eight VPDPBUSD deep.
	VPBROADCASTD 48(DX), Z12
	VPBROADCASTD 52(DX), Z13
	VPBROADCASTD 56(DX), Z14
	VPBROADCASTD 60(DX), Z15
	CHAINQ1(Z0, 0)
	CHAINQ1(Z1, 4)
	CHAINQ1(Z2, 8)
	CHAINQ1(Z3, 12)
	CHAINQ1(Z4, 16)
	CHAINQ1(Z5, 20)
	CHAINQ1(Z6, 24)
	CHAINQ1(Z7, 28)
	VCVTPH2PS (R13), Z24       // the rows' block scales
	FINISHQ1(Z12, Z16, 0, Z8)
	FINISHQ1(Z13, Z17, 1, Z9)
	FINISHQ1(Z14, Z18, 2, Z10)
	FINISHQ1(Z15, Z19, 3, Z11)
#else
	VPBROADCASTD 48(DX), Z12   // −128·ΣQ: the codes' offset (one digit: aux[12+h])
	VPBROADCASTD 52(DX), Z13
	VPBROADCASTD 56(DX), Z14
	VPBROADCASTD 60(DX), Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	CHAINS1
	VCVTPH2PS (R13), Z24       // the rows' block scales
	FINISH1(Z12, Z16, 0, Z8)
	FINISH1(Z13, Z17, 1, Z9)
	FINISH1(Z14, Z18, 2, Z10)
	FINISH1(Z15, Z19, 3, Z11)
#endif
#else
#ifdef Q80SHLD
	// One chain a query: the high digit's products from X (aux[4+h]: q80ShldAux), shifted up
	// by 8 bits with r (aux[8+h]'s top byte) shifted in, then the low digit's added.
	VPBROADCASTD 16(DX), Z12
	VPBROADCASTD 20(DX), Z13
	VPBROADCASTD 24(DX), Z14
	VPBROADCASTD 28(DX), Z15
	CHAINH(Z0, 0)
	CHAINH(Z1, 4)
	CHAINH(Z2, 8)
	CHAINH(Z3, 12)
	CHAINH(Z4, 16)
	CHAINH(Z5, 20)
	CHAINH(Z6, 24)
	CHAINH(Z7, 28)
	VPSHLDD.BCST $8, 32(DX), Z12, Z12
	VPSHLDD.BCST $8, 36(DX), Z13, Z13
	VPSHLDD.BCST $8, 40(DX), Z14, Z14
	VPSHLDD.BCST $8, 44(DX), Z15, Z15
	CHAINL(Z0, 0)
	CHAINL(Z1, 4)
	CHAINL(Z2, 8)
	CHAINL(Z3, 12)
	CHAINL(Z4, 16)
	CHAINL(Z5, 20)
	CHAINL(Z6, 24)
	CHAINL(Z7, 28)
	VCVTPH2PS (R13), Z24       // the rows' block scales
	FINISHS(Z12, Z16, 0, Z8)
	FINISHS(Z13, Z17, 1, Z9)
	FINISHS(Z14, Z18, 2, Z10)
	FINISHS(Z15, Z19, 3, Z11)
#else
	VPBROADCASTD 48(DX), Z12   // −128·Σ(digit): the codes' offset
	VPBROADCASTD 56(DX), Z13
	VPBROADCASTD 64(DX), Z14
	VPBROADCASTD 72(DX), Z15
	VPBROADCASTD 52(DX), Z16
	VPBROADCASTD 60(DX), Z17
	VPBROADCASTD 68(DX), Z18
	VPBROADCASTD 76(DX), Z19
	CHAIN2(Z0, 0)
	CHAIN2(Z1, 4)
	CHAIN2(Z2, 8)
	CHAIN2(Z3, 12)
	CHAIN2(Z4, 16)
	CHAIN2(Z5, 20)
	CHAIN2(Z6, 24)
	CHAIN2(Z7, 28)

	VCVTPH2PS (R13), Z24       // the rows' block scales
	FINISH2(Z12, Z16, 0, Z8)
	FINISH2(Z13, Z17, 1, Z9)
	FINISH2(Z14, Z18, 2, Z10)
	FINISH2(Z15, Z19, 3, Z11)
#endif

#endif

	ADDQ $34, CX
	ADDQ $34, BX
	ADDQ $34, R14
	ADDQ $34, R15
#ifdef Q80ONE
	ADDQ $128, SI
#else
	ADDQ $256, SI
#endif
	ADDQ $96, DX
	ADDQ $32, R13
	DECQ cnt-8(SP)
	JNZ  vnniQ80_blk

	SCORES_T
	MOVQ outp-24(SP), R9
	MOVQ ostride+64(FP), AX
	CMPQ AX, $16
	JNE  vnniQ80_strided
	SCORES_CONTIG
	JMP  vnniQ80_next

vnniQ80_strided:
	SCORES_STRIDED

vnniQ80_next:
	MOVQ ostride+64(FP), AX
	SHLQ $4, AX
	ADDQ AX, R9
#ifdef Q80TWO
	ADDQ od-64(SP), R9
#endif
	MOVQ R9, outp-24(SP)
	MOVQ dlt-32(SP), AX        // the next group reads the buffer this one wrote
	ADDQ AX, rbase-40(SP)
	NEGQ AX
	MOVQ AX, dlt-32(SP)
	MOVQ nb+24(FP), AX         // the next group's first row: CX less 2 and this group's
	IMULQ $34, AX              // blocks, plus sixteen rows
	LEAQ -2(CX), R9
	SUBQ AX, R9
	MOVQ R8, AX
	SHLQ $4, AX
	ADDQ AX, R9
#ifdef Q80TWO
	ADDQ sd-48(SP), R9
	MOVQ sd-48(SP), AX
	MOVQ sd2-56(SP), BX
	MOVQ AX, sd2-56(SP)
	MOVQ BX, sd-48(SP)
	MOVQ od-64(SP), AX
	MOVQ od2-72(SP), BX
	MOVQ AX, od2-72(SP)
	MOVQ BX, od-64(SP)
#endif
	DECQ grp-16(SP)
	JNZ  vnniQ80_group

vnniQ80_done:
	VZEROUPPER
	RET
