//go:build amd64 && !purego

#include "textflag.h"

// q4nib picks, from a 72-byte window of 4 Q4_0 blocks (a 64-byte register and the next 8
// bytes), each block's 16 nibble bytes into one 128-bit lane.
// q4scA, q4scB pick the f16 scales of 16 blocks (4 windows, 4 blocks each at words 0, 9, 18,
// 27) into the reduction's order j → block 4·(j mod 4) + j/4: A from windows 0 and 1 (j mod 4
// < 2), B from windows 2 and 3.
DATA q4nib<>+0(SB)/8, $0x0908070605040302
DATA q4nib<>+8(SB)/8, $0x11100f0e0d0c0b0a
DATA q4nib<>+16(SB)/8, $0x1b1a191817161514
DATA q4nib<>+24(SB)/8, $0x232221201f1e1d1c
DATA q4nib<>+32(SB)/8, $0x2d2c2b2a29282726
DATA q4nib<>+40(SB)/8, $0x3534333231302f2e
DATA q4nib<>+48(SB)/8, $0x3f3e3d3c3b3a3938
DATA q4nib<>+56(SB)/8, $0x4746454443424140
GLOBL q4nib<>(SB), RODATA|NOPTR, $64
DATA q4scA<>+0(SB)/8, $0x0000000000200000
DATA q4scA<>+8(SB)/8, $0x0000000000290009
DATA q4scA<>+16(SB)/8, $0x0000000000320012
DATA q4scA<>+24(SB)/8, $0x00000000003b001b
DATA q4scA<>+32(SB)/8, $0x0000000000000000
DATA q4scA<>+40(SB)/8, $0x0000000000000000
DATA q4scA<>+48(SB)/8, $0x0000000000000000
DATA q4scA<>+56(SB)/8, $0x0000000000000000
GLOBL q4scA<>(SB), RODATA|NOPTR, $64
DATA q4scB<>+0(SB)/8, $0x0020000000000000
DATA q4scB<>+8(SB)/8, $0x0029000900000000
DATA q4scB<>+16(SB)/8, $0x0032001200000000
DATA q4scB<>+24(SB)/8, $0x003b001b00000000
DATA q4scB<>+32(SB)/8, $0x0000000000000000
DATA q4scB<>+40(SB)/8, $0x0000000000000000
DATA q4scB<>+48(SB)/8, $0x0000000000000000
DATA q4scB<>+56(SB)/8, $0x0000000000000000
GLOBL q4scB<>(SB), RODATA|NOPTR, $64
DATA q4lo<>+0(SB)/4, $0x0f0f0f0f
GLOBL q4lo<>(SB), RODATA|NOPTR, $4
DATA q4eight<>+0(SB)/4, $8.0
GLOBL q4eight<>(SB), RODATA|NOPTR, $4

// q4group multiplies window k's 4 blocks (at SI + 72k) by their regrouped codes (DI + 128k)
// into the dword sums Zacc (4 per block, one 128-bit lane per block), keeping the window in
// Zwin for the scales.
#define q4group(k, Zwin, Zacc) \
	VMOVDQU64 (72*k)(SI), Zwin \
	VMOVQ (72*k+64)(SI), X2 \
	VMOVDQA64 Z20, Z3 \
	VPERMI2B Z2, Zwin, Z3 \
	VPANDD Z21, Z3, Z4 \
	VPSRLW $4, Z3, Z5 \
	VPANDD Z21, Z5, Z5 \
	VPXORD Zacc, Zacc, Zacc \
	VPDPBUSD (128*k)(DI), Z4, Zacc \
	VPDPBUSD (128*k+64)(DI), Z5, Zacc

// func dotQ4_0VNNI(w, q, d, s unsafe.Pointer, groups int) float32
// Σ_b d_w·(d_b·Σ nib·q − 8·s_b) over groups of 16 Q4_0 blocks, q, d and s the token's codes,
// scales and d·Σq regrouped by permuteQ8. Nibbles are taken unsigned (VPDPBUSD), their offset
// of 8 applied through s; each block's integer sum is exact, then scaled in float32.
TEXT ·dotQ4_0VNNI(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ s+24(FP), R9
	MOVQ groups+32(FP), CX
	VMOVDQU64 q4nib<>(SB), Z20
	VPBROADCASTD q4lo<>(SB), Z21
	VBROADCASTSS q4eight<>(SB), Z22
	VMOVDQU64 q4scA<>(SB), Z23
	VMOVDQU64 q4scB<>(SB), Z24
	MOVL $0xcccc, AX
	KMOVW AX, K1
	VXORPS Z0, Z0, Z0
	TESTQ CX, CX
	JZ donevnni
loopvnni:
	// Prefetch 16 KiB ahead, as wkern's dotQ8_0AVX2 does (why: beside it).
	PREFETCHT0 16384(SI)
	PREFETCHT0 16448(SI)
	PREFETCHT0 16512(SI)
	PREFETCHT0 16576(SI)
	PREFETCHT0 16640(SI)
	q4group(0, Z16, Z8)
	q4group(1, Z17, Z9)
	q4group(2, Z18, Z10)
	q4group(3, Z19, Z11)
	// Block scales: words from windows 0/1 and 2/3, merged on the mask of j mod 4 ≥ 2.
	VMOVDQA64 Z23, Z6
	VPERMI2W Z17, Z16, Z6
	VMOVDQA64 Z24, Z7
	VPERMI2W Z19, Z18, Z7
	VPBLENDMW Z7, Z6, K1, Z6
	VCVTPH2PS Y6, Z6
	// Reduce the 4 accumulators to one dword per block: R[4L+k] = block 4k+L.
	VPUNPCKLDQ Z9, Z8, Z12
	VPUNPCKHDQ Z9, Z8, Z13
	VPADDD Z13, Z12, Z12
	VPUNPCKLDQ Z11, Z10, Z13
	VPUNPCKHDQ Z11, Z10, Z14
	VPADDD Z14, Z13, Z13
	VPUNPCKLQDQ Z13, Z12, Z14
	VPUNPCKHQDQ Z13, Z12, Z12
	VPADDD Z14, Z12, Z12
	VCVTDQ2PS Z12, Z12
	VMULPS (R8), Z12, Z12
	VFNMADD231PS (R9), Z22, Z12
	VFMADD231PS Z6, Z12, Z0
	ADDQ $288, SI
	ADDQ $512, DI
	ADDQ $64, R8
	ADDQ $64, R9
	DECQ CX
	JNZ loopvnni
donevnni:
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET
