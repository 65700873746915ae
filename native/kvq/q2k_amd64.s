//go:build amd64 && !purego

#include "textflag.h"

// q2k's AVX2 scores kernel. Cell j's four scores are Σ_c qs_h[c]·level(code_jc), qs_h[c] =
// q_h[c]·scale_c formed once per group; 8 channels at a time: their two code bytes spread to
// the lanes (VPSHUFB), shifted to each lane's code (VPSRLVD), the level looked up by VPERMPS in
// a table of the four levels twice over (so the bit above the code does not matter).

// Shuffle controls: dwords 0..3 take byte 2t, dwords 4..7 byte 2t+1, of the 8 code bytes that
// VPBROADCASTQ placed in both 128-bit halves.
DATA ·q2kShuf+0(SB)/8, $0x0000000000000000
DATA ·q2kShuf+8(SB)/8, $0x0000000000000000
DATA ·q2kShuf+16(SB)/8, $0x0101010101010101
DATA ·q2kShuf+24(SB)/8, $0x0101010101010101
DATA ·q2kShuf+32(SB)/8, $0x0202020202020202
DATA ·q2kShuf+40(SB)/8, $0x0202020202020202
DATA ·q2kShuf+48(SB)/8, $0x0303030303030303
DATA ·q2kShuf+56(SB)/8, $0x0303030303030303
DATA ·q2kShuf+64(SB)/8, $0x0404040404040404
DATA ·q2kShuf+72(SB)/8, $0x0404040404040404
DATA ·q2kShuf+80(SB)/8, $0x0505050505050505
DATA ·q2kShuf+88(SB)/8, $0x0505050505050505
DATA ·q2kShuf+96(SB)/8, $0x0606060606060606
DATA ·q2kShuf+104(SB)/8, $0x0606060606060606
DATA ·q2kShuf+112(SB)/8, $0x0707070707070707
DATA ·q2kShuf+120(SB)/8, $0x0707070707070707
GLOBL ·q2kShuf(SB), RODATA|NOPTR, $128

// Per-lane shifts: channel 4i + k sits at bits 2k of its byte.
DATA ·q2kShift+0(SB)/8, $0x0000000200000000
DATA ·q2kShift+8(SB)/8, $0x0000000600000004
DATA ·q2kShift+16(SB)/8, $0x0000000200000000
DATA ·q2kShift+24(SB)/8, $0x0000000600000004
GLOBL ·q2kShift(SB), RODATA|NOPTR, $32

// func q2kScoresAVX2(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int)
// For the four queries q[h·d:] (d a multiple of 32) and the cells j0 … j0+m−1 of the group at
// grp: out[j·ostride/4 + h] = Σ_c q_h[c]·scale_c·level(code_{j0+j, c}). qs is scratch of 4·d
// floats.
TEXT ·q2kScoresAVX2(SB), NOSPLIT, $0-64
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ grp+16(FP), DI
	MOVQ qs+40(FP), R8
	MOVQ out+48(FP), R9
	MOVQ ostride+56(FP), R15
	MOVQ DX, R13
	SHLQ $2, R13               // bytes between queries
	LEAQ (R13)(R13*2), R14     // 3 queries

	// qs_h[c] = q_h[c]·scale_c.
	XORQ CX, CX
q2k_qs:
	VCVTPH2PS (DI)(CX*2), Y0
	LEAQ (SI)(CX*4), AX
	LEAQ (R8)(CX*4), BX
	VMULPS (AX), Y0, Y1
	VMULPS (AX)(R13*1), Y0, Y2
	VMULPS (AX)(R13*2), Y0, Y3
	VMULPS (AX)(R14*1), Y0, Y4
	VMOVUPS Y1, (BX)
	VMOVUPS Y2, (BX)(R13*1)
	VMOVUPS Y3, (BX)(R13*2)
	VMOVUPS Y4, (BX)(R14*1)
	ADDQ $8, CX
	CMPQ CX, DX
	JLT  q2k_qs

	VBROADCASTF128 ·q2kLevels(SB), Y14
	VMOVDQU ·q2kShift(SB), Y15
	MOVQ DX, R12
	SHRQ $2, R12               // code bytes per cell
	MOVQ j0+24(FP), AX
	IMULQ R12, AX
	LEAQ (DI)(DX*2), DI        // the codes
	ADDQ AX, DI                // cell j0's
	MOVQ m+32(FP), R10
	MOVQ DX, R11
	SHRQ $5, R11               // 32-channel chunks per cell
	TESTQ R10, R10
	JZ   q2k_done

q2k_cell:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	MOVQ R8, CX
	MOVQ R11, BX
	MOVQ DI, AX

q2k_chunk:
	VPBROADCASTQ (AX), Y4
	VPSHUFB ·q2kShuf+0(SB), Y4, Y5
	VPSHUFB ·q2kShuf+32(SB), Y4, Y6
	VPSHUFB ·q2kShuf+64(SB), Y4, Y7
	VPSHUFB ·q2kShuf+96(SB), Y4, Y8
	VPSRLVD Y15, Y5, Y5
	VPSRLVD Y15, Y6, Y6
	VPSRLVD Y15, Y7, Y7
	VPSRLVD Y15, Y8, Y8
	VPERMPS Y14, Y5, Y5
	VPERMPS Y14, Y6, Y6
	VPERMPS Y14, Y7, Y7
	VPERMPS Y14, Y8, Y8
	VFMADD231PS (CX), Y5, Y0
	VFMADD231PS 32(CX), Y6, Y10
	VFMADD231PS 64(CX), Y7, Y0
	VFMADD231PS 96(CX), Y8, Y10
	VFMADD231PS (CX)(R13*1), Y5, Y1
	VFMADD231PS 32(CX)(R13*1), Y6, Y11
	VFMADD231PS 64(CX)(R13*1), Y7, Y1
	VFMADD231PS 96(CX)(R13*1), Y8, Y11
	VFMADD231PS (CX)(R13*2), Y5, Y2
	VFMADD231PS 32(CX)(R13*2), Y6, Y12
	VFMADD231PS 64(CX)(R13*2), Y7, Y2
	VFMADD231PS 96(CX)(R13*2), Y8, Y12
	VFMADD231PS (CX)(R14*1), Y5, Y3
	VFMADD231PS 32(CX)(R14*1), Y6, Y13
	VFMADD231PS 64(CX)(R14*1), Y7, Y3
	VFMADD231PS 96(CX)(R14*1), Y8, Y13
	ADDQ $8, AX
	ADDQ $128, CX
	DECQ BX
	JNZ  q2k_chunk

	VADDPS Y10, Y0, Y0
	VADDPS Y11, Y1, Y1
	VADDPS Y12, Y2, Y2
	VADDPS Y13, Y3, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVUPS X0, (R9)
	ADDQ R12, DI
	ADDQ R15, R9
	DECQ R10
	JNZ  q2k_cell

q2k_done:
	VZEROUPPER
	RET

// func q2kScaleAVX512(q *float32, d int, grp *byte, qs *float32)
// qs_h[c] = q_h[c]·scale_c for the four queries q[h·d:] (d a multiple of 32) and the channel
// scales (f16) that open the group at grp: the queries that multiScoresQ2KZ
// (multi_turbo_amd64.s) scores the group's cells with.
TEXT ·q2kScaleAVX512(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ grp+16(FP), DI
	MOVQ qs+24(FP), R8
	MOVQ DX, R13
	SHLQ $2, R13               // bytes between queries
	LEAQ (R13)(R13*2), R14     // 3 queries
	XORQ CX, CX
q2ks_loop:
	VCVTPH2PS (DI)(CX*2), Z0
	LEAQ (SI)(CX*4), AX
	LEAQ (R8)(CX*4), BX
	VMULPS (AX), Z0, Z1
	VMULPS (AX)(R13*1), Z0, Z2
	VMULPS (AX)(R13*2), Z0, Z3
	VMULPS (AX)(R14*1), Z0, Z4
	VMOVUPS Z1, (BX)
	VMOVUPS Z2, (BX)(R13*1)
	VMOVUPS Z3, (BX)(R13*2)
	VMOVUPS Z4, (BX)(R14*1)
	ADDQ $16, CX
	CMPQ CX, DX
	JLT  q2ks_loop
	VZEROUPPER
	RET
