//go:build amd64 && !purego

#include "textflag.h"

// q6idx holds, for each of the 8 chunks of 32 codes of a Q6_K super-block, the VPERMW indexes
// that spread its two sub-block scales (words 2k and 2k+1 of the sign-extended scales) over
// the chunk's two 128-bit lanes.
DATA q6idx<>+0(SB)/8, $0x0000000000000000
DATA q6idx<>+8(SB)/8, $0x0000000000000000
DATA q6idx<>+16(SB)/8, $0x0001000100010001
DATA q6idx<>+24(SB)/8, $0x0001000100010001
DATA q6idx<>+32(SB)/8, $0x0002000200020002
DATA q6idx<>+40(SB)/8, $0x0002000200020002
DATA q6idx<>+48(SB)/8, $0x0003000300030003
DATA q6idx<>+56(SB)/8, $0x0003000300030003
DATA q6idx<>+64(SB)/8, $0x0004000400040004
DATA q6idx<>+72(SB)/8, $0x0004000400040004
DATA q6idx<>+80(SB)/8, $0x0005000500050005
DATA q6idx<>+88(SB)/8, $0x0005000500050005
DATA q6idx<>+96(SB)/8, $0x0006000600060006
DATA q6idx<>+104(SB)/8, $0x0006000600060006
DATA q6idx<>+112(SB)/8, $0x0007000700070007
DATA q6idx<>+120(SB)/8, $0x0007000700070007
DATA q6idx<>+128(SB)/8, $0x0008000800080008
DATA q6idx<>+136(SB)/8, $0x0008000800080008
DATA q6idx<>+144(SB)/8, $0x0009000900090009
DATA q6idx<>+152(SB)/8, $0x0009000900090009
DATA q6idx<>+160(SB)/8, $0x000a000a000a000a
DATA q6idx<>+168(SB)/8, $0x000a000a000a000a
DATA q6idx<>+176(SB)/8, $0x000b000b000b000b
DATA q6idx<>+184(SB)/8, $0x000b000b000b000b
DATA q6idx<>+192(SB)/8, $0x000c000c000c000c
DATA q6idx<>+200(SB)/8, $0x000c000c000c000c
DATA q6idx<>+208(SB)/8, $0x000d000d000d000d
DATA q6idx<>+216(SB)/8, $0x000d000d000d000d
DATA q6idx<>+224(SB)/8, $0x000e000e000e000e
DATA q6idx<>+232(SB)/8, $0x000e000e000e000e
DATA q6idx<>+240(SB)/8, $0x000f000f000f000f
DATA q6idx<>+248(SB)/8, $0x000f000f000f000f
GLOBL q6idx<>(SB), RODATA|NOPTR, $256

// func dotQ6_KVNNI(w, q, d, bs unsafe.Pointer, nb int) float32
// dotQ6_KAVX2 with each chunk's scale vector taken by one VPERMW from 8 index vectors kept in
// registers (instead of VPERMD + VPSHUFB + an index add) and the scaled pair sums accumulated
// by VPDPWSSD (instead of VPMADDWD + VPADDD): the same integer sums, 256-bit vectors only.
TEXT ·dotQ6_KVNNI(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bs+24(FP), R9
	MOVQ nb+32(FP), CX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x30303030, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU16 q6idx<>+0(SB), Y16
	VMOVDQU16 q6idx<>+32(SB), Y17
	VMOVDQU16 q6idx<>+64(SB), Y18
	VMOVDQU16 q6idx<>+96(SB), Y19
	VMOVDQU16 q6idx<>+128(SB), Y20
	VMOVDQU16 q6idx<>+160(SB), Y21
	VMOVDQU16 q6idx<>+192(SB), Y22
	VMOVDQU16 q6idx<>+224(SB), Y23
	VXORPS Y0, Y0, Y0

q6kvblock:
	TESTQ CX, CX
	JE    q6kvdone
	// Prefetch 4 KiB ahead: the hardware prefetcher alone leaves one core's row stream well under
	// the memory bandwidth on Intel Xeon (1.1B decode, 1 thread: +20-60 %); rows are consecutive,
	// so past a row's end it fetches the next rows' blocks (a prefetch never faults).
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	PREFETCHT0 4288(SI)
	VPMOVSXBW 192(SI), Y4
	VPMADDWD  (R9), Y4, Y5
	VPSLLD    $5, Y5, Y5
	VPXOR     Y8, Y8, Y8
	VPSUBD    Y5, Y8, Y8

	VMOVDQU 0(SI), Y9
	VMOVDQU 32(SI), Y10
	VMOVDQU 128(SI), Y11

	VPAND Y14, Y9, Y6
	VPSLLW $4, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 0(DI), Y6, Y6
	VPERMW     Y4, Y16, Y15
	VPDPWSSD   Y15, Y6, Y8

	VPAND Y14, Y10, Y6
	VPSLLW $2, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 32(DI), Y6, Y6
	VPERMW     Y4, Y17, Y15
	VPDPWSSD   Y15, Y6, Y8

	VPSRLW $4, Y9, Y6
	VPAND  Y14, Y6, Y6
	VPAND  Y13, Y11, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 64(DI), Y6, Y6
	VPERMW     Y4, Y18, Y15
	VPDPWSSD   Y15, Y6, Y8

	VPSRLW $4, Y10, Y6
	VPAND  Y14, Y6, Y6
	VPSRLW $2, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 96(DI), Y6, Y6
	VPERMW     Y4, Y19, Y15
	VPDPWSSD   Y15, Y6, Y8

	VMOVDQU 64(SI), Y9
	VMOVDQU 96(SI), Y10
	VMOVDQU 160(SI), Y11

	VPAND Y14, Y9, Y6
	VPSLLW $4, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 128(DI), Y6, Y6
	VPERMW     Y4, Y20, Y15
	VPDPWSSD   Y15, Y6, Y8

	VPAND Y14, Y10, Y6
	VPSLLW $2, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 160(DI), Y6, Y6
	VPERMW     Y4, Y21, Y15
	VPDPWSSD   Y15, Y6, Y8

	VPSRLW $4, Y9, Y6
	VPAND  Y14, Y6, Y6
	VPAND  Y13, Y11, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 192(DI), Y6, Y6
	VPERMW     Y4, Y22, Y15
	VPDPWSSD   Y15, Y6, Y8

	VPSRLW $4, Y10, Y6
	VPAND  Y14, Y6, Y6
	VPSRLW $2, Y11, Y7
	VPAND  Y13, Y7, Y7
	VPOR       Y7, Y6, Y6
	VPMADDUBSW 224(DI), Y6, Y6
	VPERMW     Y4, Y23, Y15
	VPDPWSSD   Y15, Y6, Y8

	VCVTDQ2PS    Y8, Y8
	MOVWLZX      208(SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VFMADD231PS  Y5, Y8, Y0
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JMP  q6kvblock

q6kvdone:
	VEXTRACTF128 $1, Y0, X2
	VADDPS       X2, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+40(FP)
	RET
