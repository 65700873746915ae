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

// q2kShuf512 is the AVX-512 kernel's two shuffle controls (64 bytes each): every dword of
// 128-bit lane L takes code byte L (first control: channels 0..15 of a 32-channel chunk) or
// byte 4+L (second: channels 16..31) of the 8 code bytes VPBROADCASTQ placed in every lane.
DATA ·q2kShuf512+0(SB)/8, $0x0000000000000000
DATA ·q2kShuf512+8(SB)/8, $0x0000000000000000
DATA ·q2kShuf512+16(SB)/8, $0x0101010101010101
DATA ·q2kShuf512+24(SB)/8, $0x0101010101010101
DATA ·q2kShuf512+32(SB)/8, $0x0202020202020202
DATA ·q2kShuf512+40(SB)/8, $0x0202020202020202
DATA ·q2kShuf512+48(SB)/8, $0x0303030303030303
DATA ·q2kShuf512+56(SB)/8, $0x0303030303030303
DATA ·q2kShuf512+64(SB)/8, $0x0404040404040404
DATA ·q2kShuf512+72(SB)/8, $0x0404040404040404
DATA ·q2kShuf512+80(SB)/8, $0x0505050505050505
DATA ·q2kShuf512+88(SB)/8, $0x0505050505050505
DATA ·q2kShuf512+96(SB)/8, $0x0606060606060606
DATA ·q2kShuf512+104(SB)/8, $0x0606060606060606
DATA ·q2kShuf512+112(SB)/8, $0x0707070707070707
DATA ·q2kShuf512+120(SB)/8, $0x0707070707070707
GLOBL ·q2kShuf512(SB), RODATA|NOPTR, $128

// func q2kScoresAVX512(q *float32, d int, grp *byte, j0, m int, qs *float32, out *float32, ostride int)
// q2kScoresAVX2's contract, 16 channels a vector (AVX-512 F and BW): per 32-channel chunk of a
// cell, its 8 code bytes go to every 128-bit lane, two VPSHUFB give each dword its byte, the
// shifts of q2kShift (repeated per lane) its code, VPERMPS the level from the four levels four
// times over; two partial sums per query (channels 16k..16k+15 of even and odd k), reduced as
// the AVX2 kernel reduces its own after folding each vector's halves.
TEXT ·q2kScoresAVX512(SB), NOSPLIT, $0-64
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
q2k5_qs:
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
	JLT  q2k5_qs

	VBROADCASTF32X4 ·q2kLevels(SB), Z14
	VBROADCASTI32X4 ·q2kShift(SB), Z15
	VMOVDQU64 ·q2kShuf512+0(SB), Z16
	VMOVDQU64 ·q2kShuf512+64(SB), Z17
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
	JZ   q2k5_done

q2k5_cell:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	MOVQ R8, CX
	MOVQ R11, BX
	MOVQ DI, AX

q2k5_chunk:
	VPBROADCASTQ (AX), Z4
	VPSHUFB Z16, Z4, Z5
	VPSHUFB Z17, Z4, Z6
	VPSRLVD Z15, Z5, Z5
	VPSRLVD Z15, Z6, Z6
	VPERMPS Z14, Z5, Z5
	VPERMPS Z14, Z6, Z6
	VFMADD231PS (CX), Z5, Z0
	VFMADD231PS 64(CX), Z6, Z10
	VFMADD231PS (CX)(R13*1), Z5, Z1
	VFMADD231PS 64(CX)(R13*1), Z6, Z11
	VFMADD231PS (CX)(R13*2), Z5, Z2
	VFMADD231PS 64(CX)(R13*2), Z6, Z12
	VFMADD231PS (CX)(R14*1), Z5, Z3
	VFMADD231PS 64(CX)(R14*1), Z6, Z13
	ADDQ $8, AX
	ADDQ $128, CX
	DECQ BX
	JNZ  q2k5_chunk

	VADDPS Z10, Z0, Z0
	VADDPS Z11, Z1, Z1
	VADDPS Z12, Z2, Z2
	VADDPS Z13, Z3, Z3
	VEXTRACTF64X4 $1, Z0, Y4
	VADDPS Y4, Y0, Y0
	VEXTRACTF64X4 $1, Z1, Y5
	VADDPS Y5, Y1, Y1
	VEXTRACTF64X4 $1, Z2, Y6
	VADDPS Y6, Y2, Y2
	VEXTRACTF64X4 $1, Z3, Y7
	VADDPS Y7, Y3, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVUPS X0, (R9)
	ADDQ R12, DI
	ADDQ R15, R9
	DECQ R10
	JNZ  q2k5_cell

q2k5_done:
	VZEROUPPER
	RET
