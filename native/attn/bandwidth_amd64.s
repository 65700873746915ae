//go:build amd64 && !purego

#include "textflag.h"

// func readSumAVX2(buf []byte) uint64
TEXT ·readSumAVX2(SB), NOSPLIT, $0-32
	MOVQ buf_base+0(FP), SI
	MOVQ buf_len+8(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

loop:
	CMPQ CX, $128
	JL   done
	VPADDQ (SI), Y0, Y0
	VPADDQ 32(SI), Y1, Y1
	VPADDQ 64(SI), Y2, Y2
	VPADDQ 96(SI), Y3, Y3
	ADDQ $128, SI
	SUBQ $128, CX
	JMP  loop

done:
	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPEXTRQ $0, X0, AX
	VPEXTRQ $1, X0, BX
	ADDQ BX, AX
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET
