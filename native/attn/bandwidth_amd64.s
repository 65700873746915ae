//go:build amd64 && !purego

#include "textflag.h"

// func readSumAVX2(buf []byte) uint64
// One 64-byte line a loop step, its halves added into Y0 and Y1, the line 2 KiB on prefetched
// into L1 (bandwidth_amd64.go says why).
TEXT ·readSumAVX2(SB), NOSPLIT, $0-32
	MOVQ buf_base+0(FP), SI
	MOVQ buf_len+8(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

loop:
	CMPQ CX, $64
	JL   done
	PREFETCHT0 2048(SI)
	VPADDQ (SI), Y0, Y0
	VPADDQ 32(SI), Y1, Y1
	ADDQ $64, SI
	SUBQ $64, CX
	JMP  loop

done:
	VPADDQ Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPEXTRQ $0, X0, AX
	VPEXTRQ $1, X0, BX
	ADDQ BX, AX
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET
