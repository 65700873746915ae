//go:build amd64 && !purego

#include "textflag.h"

// func quantSumsAVX2(x *float32, q *int8, n int, gs *int32) (d float32, ok bool)
// quantSumsGo for n values (a multiple of 16) with the same float32 operations, so the same
// codes: amax as the largest |x| bit pattern (NaN and ±Inf above every finite value),
// d = amax/127, id = 127/amax, q = trunc(x·id + copysign(0.5, x)) clamped to ±127, and the
// sum of every 16 codes in g. A block of all zeros or with a NaN or an infinity returns
// ok = false untouched (the caller quantizes it in Go).
TEXT ·quantSumsAVX2(SB), NOSPLIT, $0-37
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ gs+24(FP), R8
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VPXOR Y0, Y0, Y0
	MOVQ SI, R9
	MOVQ CX, R10

qsamax:
	VPAND   (R9), Y15, Y1
	VPMAXUD Y1, Y0, Y0
	ADDQ    $32, R9
	SUBQ    $8, R10
	JNZ     qsamax
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPMAXUD X1, X0, X0
	VMOVD   X0, AX
	TESTL   AX, AX
	JZ      qsspecial
	CMPL    AX, $0x7f800000
	JAE     qsspecial

	MOVL $0x42fe0000, BX // 127.0
	VMOVD BX, X2
	VDIVSS X2, X0, X12 // d = amax/127
	VDIVSS X0, X2, X4  // id = 127/amax
	VBROADCASTSS X4, Y4
	MOVL $0x80000000, BX
	VMOVD BX, X5
	VPBROADCASTD X5, Y5
	MOVL $0x3f000000, BX // 0.5
	VMOVD BX, X6
	VPBROADCASTD X6, Y6
	MOVL $127, BX
	VMOVD BX, X7
	VPBROADCASTD X7, Y7
	MOVL $-127, BX
	VMOVD BX, X8
	VPBROADCASTD X8, Y8

qscodes:
	VMOVUPS    (SI), Y0
	VMOVUPS    32(SI), Y1
	VMULPS     Y4, Y0, Y2
	VANDPS     Y5, Y0, Y9
	VORPS      Y6, Y9, Y9
	VADDPS     Y9, Y2, Y2
	VCVTTPS2DQ Y2, Y2
	VMULPS     Y4, Y1, Y3
	VANDPS     Y5, Y1, Y9
	VORPS      Y6, Y9, Y9
	VADDPS     Y9, Y3, Y3
	VCVTTPS2DQ Y3, Y3
	VPMINSD    Y7, Y2, Y2
	VPMAXSD    Y8, Y2, Y2
	VPMINSD    Y7, Y3, Y3
	VPMAXSD    Y8, Y3, Y3

	VPADDD       Y3, Y2, Y10
	VEXTRACTI128 $1, Y10, X11
	VPADDD       X11, X10, X10
	VPSHUFD      $0x4e, X10, X11
	VPADDD       X11, X10, X10
	VPSHUFD      $0xb1, X10, X11
	VPADDD       X11, X10, X10
	VMOVD        X10, (R8)

	VPACKSSDW    Y3, Y2, Y2
	VPERMQ       $0xd8, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPACKSSWB    X3, X2, X2
	VMOVDQU      X2, (DI)

	ADDQ $64, SI
	ADDQ $16, DI
	ADDQ $4, R8
	SUBQ $16, CX
	JNZ  qscodes

	VZEROUPPER
	MOVSS X12, d+32(FP)
	MOVB  $1, ok+36(FP)
	RET

qsspecial:
	VZEROUPPER
	MOVB $0, ok+36(FP)
	RET
