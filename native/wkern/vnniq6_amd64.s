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

// q6shl and q6shr are the per-word shifts of the high bits of a 64-byte Q6_K chunk pair: qh
// left by 4 (first 32 codes) and 2 (next 32), right by 0 and 2.
DATA q6shl<>+0(SB)/8, $0x0004000400040004
DATA q6shl<>+8(SB)/8, $0x0004000400040004
DATA q6shl<>+16(SB)/8, $0x0004000400040004
DATA q6shl<>+24(SB)/8, $0x0004000400040004
DATA q6shl<>+32(SB)/8, $0x0002000200020002
DATA q6shl<>+40(SB)/8, $0x0002000200020002
DATA q6shl<>+48(SB)/8, $0x0002000200020002
DATA q6shl<>+56(SB)/8, $0x0002000200020002
GLOBL q6shl<>(SB), RODATA|NOPTR, $64
DATA q6shr<>+0(SB)/8, $0
DATA q6shr<>+8(SB)/8, $0
DATA q6shr<>+16(SB)/8, $0
DATA q6shr<>+24(SB)/8, $0
DATA q6shr<>+32(SB)/8, $0x0002000200020002
DATA q6shr<>+40(SB)/8, $0x0002000200020002
DATA q6shr<>+48(SB)/8, $0x0002000200020002
DATA q6shr<>+56(SB)/8, $0x0002000200020002
GLOBL q6shr<>(SB), RODATA|NOPTR, $64

// Q6CODES unpacks 64 bytes of ql at QL and 32 of qh at QH into the two code pairs A (low
// nibbles, qh shifted left by 4 and 2) and B (high nibbles, qh shifted right by 0 and 2); each
// pair's two high bits are merged by one VPTERNLOGD (0xf8: A | qh' & 0x30).
#define Q6CODES(QL, QH, A, B) \
	VMOVDQU64 QL, Z5; \
	VBROADCASTI64X4 QH, Z6; \
	VPANDD Z14, Z5, A; \
	VPSRLW $4, Z5, Z5; \
	VPANDD Z14, Z5, B; \
	VPSLLVW Z20, Z6, Z7; \
	VPTERNLOGD $0xf8, Z13, Z7, A; \
	VPSRLVW Z21, Z6, Z7; \
	VPTERNLOGD $0xf8, Z13, Z7, B

// Q6TOK adds token Q's 256 codes times the unpacked super-block (Z22, Z23, Z26, Z27 with the
// scale vectors Z24, Z25, Z28, Z29) to the dword lanes of ACC (T a temporary).
#define Q6TOK(Q, ACC, T) \
	VPMADDUBSW 0 Q, Z22, T; \
	VPDPWSSD Z24, T, ACC; \
	VPMADDUBSW 64 Q, Z23, T; \
	VPDPWSSD Z25, T, ACC; \
	VPMADDUBSW 128 Q, Z26, T; \
	VPDPWSSD Z28, T, ACC; \
	VPMADDUBSW 192 Q, Z27, T; \
	VPDPWSSD Z29, T, ACC

// Q6INIT sets ACC's low 8 dwords to −32·Σ sc·bs (the token's 16-value code sums at BS), as
// rowsQ6_KVNNI512 starts its sums (upper dwords 0).
#define Q6INIT(BS, ACC, Y) \
	VPMADDWD BS, Y4, Y; \
	VPSLLD $5, Y, Y; \
	VPSUBD Y, Y31, Y

// Q6FIN folds ACC's halves, converts, and adds them times d·d_t (d in X6, d_t at DT) to the
// token's float lanes F.
#define Q6FIN(ACC, Y, DT, F) \
	VEXTRACTI64X4 $1, ACC, Y5; \
	VPADDD Y5, Y, Y; \
	VCVTDQ2PS Y, Y; \
	VMULSS DT, X6, X7; \
	VBROADCASTSS X7, Y7; \
	VFMADD231PS Y7, Y, F

// Q6RED sums F's lanes into X (dotQ6_KAVX2's reduction); Q6SUM also stores the sum at OUT.
#define Q6RED(F, X) \
	VEXTRACTF128 $1, F, X4; \
	VADDPS X4, X, X; \
	VHADDPS X, X, X; \
	VHADDPS X, X, X

#define Q6SUM(F, X, OUT) \
	Q6RED(F, X); \
	VMOVSS X, OUT

// Q6SETUP loads the Q6_K kernels' constants: the masks Z14 (0x0f) and Z13 (0x30), the scale
// index vectors Z16…Z19, qh's shifts Z20, Z21, and zero in Z31.
#define Q6SETUP \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z14; \
	MOVL $0x30303030, AX; \
	VPBROADCASTD AX, Z13; \
	VMOVDQU16 q6idx<>+0(SB), Z16; \
	VMOVDQU16 q6idx<>+64(SB), Z17; \
	VMOVDQU16 q6idx<>+128(SB), Z18; \
	VMOVDQU16 q6idx<>+192(SB), Z19; \
	VMOVDQU16 q6shl<>+0(SB), Z20; \
	VMOVDQU16 q6shr<>+0(SB), Z21; \
	VPXORD Z31, Z31, Z31

// Q6UNPACK unpacks the super-block at SI: its scales (Y4), codes (Z22, Z23, Z26, Z27) and each
// chunk pair's scale vector (Z24, Z25, Z28, Z29).
#define Q6UNPACK \
	VPMOVSXBW 192(SI), Y4; \
	Q6CODES(0(SI), 128(SI), Z22, Z23); \
	Q6CODES(64(SI), 160(SI), Z26, Z27); \
	VPERMW Z4, Z16, Z24; \
	VPERMW Z4, Z17, Z25; \
	VPERMW Z4, Z18, Z28; \
	VPERMW Z4, Z19, Z29

// Q6D converts the super-block's f16 scale d into X6.
#define Q6D \
	MOVWLZX   208(SI), AX; \
	VMOVD     AX, X6; \
	VCVTPH2PS X6, X6

// func rowsQ6_KVNNI512(w unsafe.Pointer, rowBytes, rows int, q, d, bs unsafe.Pointer, nb int, y *float32)
// y[r] = the Q6_K row at w + r·rowBytes dotted with the activation (codes q, scales d, 16-code
// sums bs), for r < rows, in one loop (no call per row, the constants set up once): dotQ6_KAVX2
// on 64-byte vectors. Each zmm holds two 32-code chunks (the 64 low or high nibbles of 64
// bytes of ql, with qh's bits shifted per half by VPSLLVW or VPSRLVW), so one VPMADDUBSW, one
// VPERMW (each chunk's scale vector from index vectors kept in registers, instead of VPERMD +
// VPSHUFB + an index add) and one VPDPWSSD or VPMADDWD (instead of VPMADDWD + VPADDD) cover 64
// values, into two accumulators (half the dependency chain). The accumulators and the two
// halves of the dword sums are added before the conversion: lane j then holds the AVX2
// kernel's lane j (exact integers), and d·d_a is the same product, so the result is the same
// bits (TestQ6_KAVX512Bits).
TEXT ·rowsQ6_KVNNI512(SB), NOSPLIT, $0-64
	MOVQ rows+16(FP), R14
	TESTQ R14, R14
	JE   q6rdone
	MOVQ nb+48(FP), CX
	TESTQ CX, CX
	JE   q6rdone
	MOVQ w+0(FP), R15
	MOVQ rowBytes+8(FP), R13
	MOVQ y+56(FP), BX
	Q6SETUP

q6rrow:
	MOVQ  R15, SI
	MOVQ  q+24(FP), DI
	MOVQ  d+32(FP), R8
	MOVQ  bs+40(FP), R9
	MOVQ  nb+48(FP), CX
	VXORPS Y0, Y0, Y0

q6rblock:
	PREFETCHT0 16384(SI)
	PREFETCHT0 16448(SI)
	PREFETCHT0 16512(SI)
	PREFETCHT0 16576(SI)
	Q6UNPACK
	Q6INIT((R9), Z8, Y8)
	VPMADDUBSW 0(DI), Z22, Z7
	VPDPWSSD   Z24, Z7, Z8
	VPMADDUBSW 64(DI), Z23, Z9
	VPMADDWD   Z25, Z9, Z10
	VPMADDUBSW 128(DI), Z26, Z7
	VPDPWSSD   Z28, Z7, Z8
	VPMADDUBSW 192(DI), Z27, Z9
	VPDPWSSD   Z29, Z9, Z10
	VPADDD     Z10, Z8, Z8
	// Y7 = d·d_a in every lane.
	VPBROADCASTW 208(SI), X6
	VCVTPH2PS    X6, Y6
	VBROADCASTSS (R8), Y7
	VMULPS       Y7, Y6, Y7
	VEXTRACTI64X4 $1, Z8, Y5
	VPADDD        Y5, Y8, Y8
	VCVTDQ2PS     Y8, Y8
	VFMADD231PS   Y7, Y8, Y0
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JNE  q6rblock

	Q6RED(Y0, X0)
	MOVSS X0, (BX)
	ADDQ  $4, BX
	ADDQ  R13, R15
	DECQ  R14
	JNE   q6rrow

q6rdone:
	VZEROUPPER
	RET

// func dotQ6_Kx4VNNI512(w, q, d, bs unsafe.Pointer, nb, qstride, dstride, bstride int, out *[4]float32)
// rowsQ6_KVNNI512 for four tokens (token t's codes at q + t·qstride, scales at d + t·dstride,
// code sums at bs + t·bstride), each super-block unpacked once for the four: every token's
// result is the bits rowsQ6_KVNNI512 returns for it alone, so with it this is an invariant pair.
TEXT ·dotQ6_Kx4VNNI512(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bs+24(FP), R9
	MOVQ nb+32(FP), CX
	MOVQ qstride+40(FP), R10
	LEAQ (R10)(R10*2), R13
	MOVQ dstride+48(FP), R11
	LEAQ (R11)(R11*2), BX
	MOVQ bstride+56(FP), R12
	LEAQ (R12)(R12*2), DX
	Q6SETUP
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

q6x4block:
	TESTQ CX, CX
	JE    q6x4done
	Q6UNPACK
	Q6INIT((R9), Z8, Y8)
	Q6INIT((R9)(R12*1), Z9, Y9)
	Q6INIT((R9)(R12*2), Z10, Y10)
	Q6INIT((R9)(DX*1), Z11, Y11)
	Q6TOK((DI), Z8, Z7)
	Q6TOK((DI)(R10*1), Z9, Z12)
	Q6TOK((DI)(R10*2), Z10, Z15)
	Q6TOK((DI)(R13*1), Z11, Z30)
	Q6D
	Q6FIN(Z8, Y8, (R8), Y0)
	Q6FIN(Z9, Y9, (R8)(R11*1), Y1)
	Q6FIN(Z10, Y10, (R8)(R11*2), Y2)
	Q6FIN(Z11, Y11, (R8)(BX*1), Y3)
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JMP  q6x4block

q6x4done:
	MOVQ out+64(FP), DX
	Q6SUM(Y0, X0, 0(DX))
	Q6SUM(Y1, X1, 4(DX))
	Q6SUM(Y2, X2, 8(DX))
	Q6SUM(Y3, X3, 12(DX))
	VZEROUPPER
	RET
