//go:build amd64 && !purego

#include "textflag.h"

// Short-row f16 kernels (AVX2 + FMA + F16C) for rows whose length d is a positive multiple
// of 8: one VCVTPH2PS widens 8 values. Contracts in multi_short_amd64.go.

// func f16ScoresShortAVX2(q *float32, d int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·f16ScoresShortAVX2(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), CX
	MOVQ rows+16(FP), DI
	MOVQ rb+24(FP), R8
	MOVQ m+32(FP), R9
	MOVQ out+40(FP), DX
	MOVQ ostride+48(FP), R10
	SHRQ $3, CX                // chunks of 8 values
	LEAQ (R8)(R8*2), BX        // 3·rb

rows8:
	CMPQ R9, $8
	JLT  tail
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ DI, R13
	LEAQ (DI)(R8*4), R14
	MOVQ SI, AX
	MOVQ CX, R11

chunk8:
	VMOVUPS     (AX), Y8
	VCVTPH2PS   (R13), Y9
	VCVTPH2PS   (R13)(R8*1), Y10
	VCVTPH2PS   (R13)(R8*2), Y11
	VCVTPH2PS   (R13)(BX*1), Y12
	VFMADD231PS Y9, Y8, Y0
	VFMADD231PS Y10, Y8, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y12, Y8, Y3
	VCVTPH2PS   (R14), Y9
	VCVTPH2PS   (R14)(R8*1), Y10
	VCVTPH2PS   (R14)(R8*2), Y11
	VCVTPH2PS   (R14)(BX*1), Y12
	VFMADD231PS Y9, Y8, Y4
	VFMADD231PS Y10, Y8, Y5
	VFMADD231PS Y11, Y8, Y6
	VFMADD231PS Y12, Y8, Y7
	ADDQ        $16, R13
	ADDQ        $16, R14
	ADDQ        $32, AX
	DECQ        R11
	JNZ         chunk8

	// Row r's lanes a0…a7 sum to ((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7)), as in tail.
	VHADDPS    Y1, Y0, Y0
	VHADDPS    Y3, Y2, Y2
	VHADDPS    Y2, Y0, Y0
	VHADDPS    Y5, Y4, Y4
	VHADDPS    Y7, Y6, Y6
	VHADDPS    Y6, Y4, Y4
	VPERM2F128 $0x20, Y4, Y0, Y1
	VPERM2F128 $0x31, Y4, Y0, Y2
	VADDPS     Y2, Y1, Y1

	VMOVSS       X1, (DX)
	VEXTRACTPS   $1, X1, (DX)(R10*1)
	LEAQ         (DX)(R10*2), R13
	VEXTRACTPS   $2, X1, (R13)
	VEXTRACTPS   $3, X1, (R13)(R10*1)
	VEXTRACTF128 $1, Y1, X2
	LEAQ         (DX)(R10*4), R13
	VMOVSS       X2, (R13)
	VEXTRACTPS   $1, X2, (R13)(R10*1)
	LEAQ         (R13)(R10*2), R14
	VEXTRACTPS   $2, X2, (R14)
	VEXTRACTPS   $3, X2, (R14)(R10*1)
	LEAQ         (R13)(R10*4), DX
	LEAQ         (DI)(R8*8), DI
	SUBQ         $8, R9
	JMP          rows8

tail:
	TESTQ R9, R9
	JZ    done
	VXORPS Y0, Y0, Y0
	MOVQ  DI, R13
	MOVQ  SI, AX
	MOVQ  CX, R11

chunk1:
	VMOVUPS     (AX), Y8
	VCVTPH2PS   (R13), Y9
	VFMADD231PS Y9, Y8, Y0
	ADDQ        $16, R13
	ADDQ        $32, AX
	DECQ        R11
	JNZ         chunk1

	VHADDPS      Y0, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         R10, DX
	ADDQ         R8, DI
	DECQ         R9
	JMP          tail

done:
	VZEROUPPER
	RET

// func f16AccShortAVX2(acc *float32, d int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·f16AccShortAVX2(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), SI
	MOVQ d+8(FP), CX
	MOVQ rows+16(FP), DI
	MOVQ rb+24(FP), R8
	MOVQ m+32(FP), R9
	MOVQ w+40(FP), DX
	MOVQ wstride+48(FP), R10
	SHRQ $3, CX
	LEAQ (R8)(R8*2), BX        // 3·rb
	LEAQ (R10)(R10*2), R12     // 3·wstride

chunk:
	VMOVUPS (SI), Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	MOVQ    DI, R13
	MOVQ    DX, R14
	MOVQ    R9, R11

acc4:
	CMPQ         R11, $4
	JLT          acc1
	VBROADCASTSS (R14), Y4
	VCVTPH2PS    (R13), Y5
	VBROADCASTSS (R14)(R10*1), Y6
	VCVTPH2PS    (R13)(R8*1), Y7
	VBROADCASTSS (R14)(R10*2), Y8
	VCVTPH2PS    (R13)(R8*2), Y9
	VBROADCASTSS (R14)(R12*1), Y10
	VCVTPH2PS    (R13)(BX*1), Y11
	VFMADD231PS  Y5, Y4, Y0
	VFMADD231PS  Y7, Y6, Y1
	VFMADD231PS  Y9, Y8, Y2
	VFMADD231PS  Y11, Y10, Y3
	LEAQ         (R13)(R8*4), R13
	LEAQ         (R14)(R10*4), R14
	SUBQ         $4, R11
	JMP          acc4

acc1:
	TESTQ        R11, R11
	JZ           fin
	VBROADCASTSS (R14), Y4
	VCVTPH2PS    (R13), Y5
	VFMADD231PS  Y5, Y4, Y0
	ADDQ         R8, R13
	ADDQ         R10, R14
	DECQ         R11
	JMP          acc1

fin:
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	ADDQ    $16, DI
	DECQ    CX
	JNZ     chunk
	VZEROUPPER
	RET
