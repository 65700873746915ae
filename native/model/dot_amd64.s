//go:build amd64 && !purego

#include "textflag.h"

// func dotAVX2(a, b []float32) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loop32:
	CMPQ CX, $32
	JL   loop8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  loop32

loop8:
	CMPQ CX, $8
	JL   reduce
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8

reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

tail:
	TESTQ CX, CX
	JE    done
	VMOVSS (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func dot4AVX2(a, b []float32, stride int, out *[4]float32)
// out[k] = Σ_{i<len(a)} a[i]·b[k·stride+i] for k < 4; len(a) is a multiple of 8.
TEXT ·dot4AVX2(SB), NOSPLIT, $0-64
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	MOVQ stride+48(FP), DX
	SHLQ $2, DX
	LEAQ (DI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R10
	MOVQ out+56(FP), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

loop16:
	CMPQ CX, $16
	JL   loop8
	VMOVUPS (SI), Y8
	VMOVUPS 32(SI), Y9
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS (R8), Y8, Y1
	VFMADD231PS (R9), Y8, Y2
	VFMADD231PS (R10), Y8, Y3
	VFMADD231PS 32(DI), Y9, Y4
	VFMADD231PS 32(R8), Y9, Y5
	VFMADD231PS 32(R9), Y9, Y6
	VFMADD231PS 32(R10), Y9, Y7
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	SUBQ $16, CX
	JMP  loop16

loop8:
	CMPQ CX, $8
	JL   reduce
	VMOVUPS (SI), Y8
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS (R8), Y8, Y1
	VFMADD231PS (R9), Y8, Y2
	VFMADD231PS (R10), Y8, Y3 // len(a) is a multiple of 8: at most one pass here

reduce:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VEXTRACTF128 $1, Y0, X8
	VADDPS X8, X0, X0
	VEXTRACTF128 $1, Y1, X8
	VADDPS X8, X1, X1
	VEXTRACTF128 $1, Y2, X8
	VADDPS X8, X2, X2
	VEXTRACTF128 $1, Y3, X8
	VADDPS X8, X3, X3
	VHADDPS X1, X0, X0
	VHADDPS X3, X2, X2
	VHADDPS X2, X0, X0
	VMOVUPS X0, (R11)
	VZEROUPPER
	RET

// func dotF16AVX2(x []float32, w []byte) float32
// Σ_i x[i]·f16(w[2i:2i+2]) for i < len(x); len(x) is a multiple of 8.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-52
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

f16loop16:
	CMPQ CX, $16
	JL   f16loop8
	// Prefetch 4 KiB ahead, as wkern's dotQ8_0AVX2 does (why: beside it).
	PREFETCHT0 4096(SI)
	VCVTPH2PS (SI), Y4
	VCVTPH2PS 16(SI), Y5
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  f16loop16

f16loop8:
	CMPQ CX, $8
	JL   f16reduce
	VCVTPH2PS (SI), Y4
	VFMADD231PS (DI), Y4, Y0

f16reduce:
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func rowsF16AVX2(x *float32, n int, w unsafe.Pointer, rowBytes, rows int, y *float32)
// y[r] = dotF16AVX2(x[:n], w + r·rowBytes) for r < rows (n a multiple of 8): the row loop in
// assembly, its state in the argument slots (the kernel clobbers every register it uses).
TEXT ·rowsF16AVX2(SB), NOSPLIT, $56-48
rowsf16loop:
	MOVQ  rows+32(FP), CX
	TESTQ CX, CX
	JE    rowsf16done
	MOVQ  x+0(FP), AX
	MOVQ  AX, 0(SP)
	MOVQ  n+8(FP), AX
	MOVQ  AX, 8(SP)
	MOVQ  AX, 16(SP)
	SHLQ  $1, AX
	MOVQ  w+16(FP), BX
	MOVQ  BX, 24(SP)
	MOVQ  AX, 32(SP)
	MOVQ  AX, 40(SP)
	CALL  ·dotF16AVX2(SB)
	MOVL  48(SP), AX
	MOVQ  y+40(FP), BX
	MOVL  AX, (BX)
	ADDQ  $4, BX
	MOVQ  BX, y+40(FP)
	MOVQ  w+16(FP), AX
	ADDQ  rowBytes+24(FP), AX
	MOVQ  AX, w+16(FP)
	DECQ  rows+32(FP)
	JMP   rowsf16loop

rowsf16done:
	RET

// func rowsF16AVX512(x *float32, n int, w unsafe.Pointer, rowBytes, rows int, y *float32)
// y[r] = Σ_i x[i]·f16(w + r·rowBytes + 2i) for r < rows (n a multiple of 8): 64 halves a step
// in four 16-lane sums, so each step's four multiply-adds are independent and the loads run
// far ahead of them; every 64-byte line of the weights is prefetched F16PF bytes ahead once
// (across rows, which lie in separate 4 KiB pages the hardware prefetchers do not cross; 16 KiB
// streamed the model's matrices 4–10 % faster than 4 KiB on an AMD Zen 5 VM, 2 KiB 10 % slower).
#define F16PF 16384
TEXT ·rowsF16AVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ w+16(FP), SI
	MOVQ rowBytes+24(FP), R8
	MOVQ rows+32(FP), R9
	MOVQ y+40(FP), R10

h5row:
	TESTQ R9, R9
	JE    h5done
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	MOVQ   DI, AX
	MOVQ   SI, BX
	MOVQ   CX, DX

h5loop64:
	CMPQ        DX, $64
	JL          h5loop16
	PREFETCHT0  F16PF(BX)
	PREFETCHT0  F16PF+64(BX)
	VCVTPH2PS   (BX), Z4
	VCVTPH2PS   32(BX), Z5
	VCVTPH2PS   64(BX), Z6
	VCVTPH2PS   96(BX), Z7
	VFMADD231PS (AX), Z4, Z0
	VFMADD231PS 64(AX), Z5, Z1
	VFMADD231PS 128(AX), Z6, Z2
	VFMADD231PS 192(AX), Z7, Z3
	ADDQ        $128, BX
	ADDQ        $256, AX
	SUBQ        $64, DX
	JMP         h5loop64

h5loop16:
	CMPQ        DX, $16
	JL          h5loop8
	VCVTPH2PS   (BX), Z4
	VFMADD231PS (AX), Z4, Z0
	ADDQ        $32, BX
	ADDQ        $64, AX
	SUBQ        $16, DX
	JMP         h5loop16

h5loop8:
	CMPQ      DX, $8
	JL        h5reduce
	VCVTPH2PS (BX), Y4
	VMULPS    (AX), Y4, Y5 // a VEX write: Z5's upper half is zero
	VADDPS    Z5, Z1, Z1

h5reduce:
	VADDPS        Z1, Z0, Z0
	VADDPS        Z3, Z2, Z2
	VADDPS        Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	MOVSS         X0, (R10)
	ADDQ          $4, R10
	ADDQ          R8, SI
	DECQ          R9
	JMP           h5row

h5done:
	VZEROUPPER
	RET

// func rowsF16x4AVX512(x *float32, n int, w unsafe.Pointer, rowBytes, q int, y *float32)
// y[r+g·q] = Σ_i x[i]·f16(w + (r+g·q)·rowBytes + 2i) for r < q, g < 4 (n a multiple of 8): four
// rows a pass, q apart (a quarter of the range each), sharing each load of x. Each row's sums are
// rowsF16AVX512's, operation for operation (the same four 16-lane sums over 64-value steps, the
// same tails and reduction), so the outputs are equal bit for bit. The four rows are four
// sequential streams from memory, which one thread reads faster than one stream (the hardware
// prefetchers run ahead on each: on an AMD Zen 5 VM a 1.1B model's f16 matrices streamed about
// 20 % faster than through rowsF16AVX512, and faster than a plain one-stream read of the same
// bytes; two streams gained half as much, eight were slower than four, and software prefetches
// on top of the four slowed them by 10 %). Stream g's sums are in
// Z(16+4g)…Z(19+4g); x's loads go to Z8–Z11, the weights' to Z0–Z7, so the 8-value tail's VEX
// instructions use low registers only.
TEXT ·rowsF16x4AVX512(SB), NOSPLIT, $0-48
	MOVQ  x+0(FP), DI
	MOVQ  n+8(FP), CX
	MOVQ  w+16(FP), SI
	MOVQ  rowBytes+24(FP), R8
	MOVQ  q+32(FP), R9
	MOVQ  y+40(FP), R10
	MOVQ  R9, R12
	IMULQ R8, R12 // q·rowBytes: the offset of stream g is g times it
	LEAQ  (R12)(R12*2), R14
	LEAQ  (R9*4), R13 // q·4: the offset of stream g's outputs is g times it
	LEAQ  (R13)(R13*2), R15

q5row:
	TESTQ  R9, R9
	JE     q5done
	VXORPS Z16, Z16, Z16
	VXORPS Z17, Z17, Z17
	VXORPS Z18, Z18, Z18
	VXORPS Z19, Z19, Z19
	VXORPS Z20, Z20, Z20
	VXORPS Z21, Z21, Z21
	VXORPS Z22, Z22, Z22
	VXORPS Z23, Z23, Z23
	VXORPS Z24, Z24, Z24
	VXORPS Z25, Z25, Z25
	VXORPS Z26, Z26, Z26
	VXORPS Z27, Z27, Z27
	VXORPS Z28, Z28, Z28
	VXORPS Z29, Z29, Z29
	VXORPS Z30, Z30, Z30
	VXORPS Z31, Z31, Z31
	MOVQ   DI, AX
	MOVQ   SI, BX
	MOVQ   CX, DX

q5loop64:
	CMPQ        DX, $64
	JL          q5loop16
	VMOVUPS     0(AX), Z8
	VMOVUPS     64(AX), Z9
	VMOVUPS     128(AX), Z10
	VMOVUPS     192(AX), Z11
	VCVTPH2PS   (BX), Z0
	VCVTPH2PS   32(BX), Z1
	VCVTPH2PS   64(BX), Z2
	VCVTPH2PS   96(BX), Z3
	VFMADD231PS Z8, Z0, Z16
	VFMADD231PS Z9, Z1, Z17
	VFMADD231PS Z10, Z2, Z18
	VFMADD231PS Z11, Z3, Z19
	VCVTPH2PS   (BX)(R12*1), Z4
	VCVTPH2PS   32(BX)(R12*1), Z5
	VCVTPH2PS   64(BX)(R12*1), Z6
	VCVTPH2PS   96(BX)(R12*1), Z7
	VFMADD231PS Z8, Z4, Z20
	VFMADD231PS Z9, Z5, Z21
	VFMADD231PS Z10, Z6, Z22
	VFMADD231PS Z11, Z7, Z23
	VCVTPH2PS   (BX)(R12*2), Z0
	VCVTPH2PS   32(BX)(R12*2), Z1
	VCVTPH2PS   64(BX)(R12*2), Z2
	VCVTPH2PS   96(BX)(R12*2), Z3
	VFMADD231PS Z8, Z0, Z24
	VFMADD231PS Z9, Z1, Z25
	VFMADD231PS Z10, Z2, Z26
	VFMADD231PS Z11, Z3, Z27
	VCVTPH2PS   (BX)(R14*1), Z4
	VCVTPH2PS   32(BX)(R14*1), Z5
	VCVTPH2PS   64(BX)(R14*1), Z6
	VCVTPH2PS   96(BX)(R14*1), Z7
	VFMADD231PS Z8, Z4, Z28
	VFMADD231PS Z9, Z5, Z29
	VFMADD231PS Z10, Z6, Z30
	VFMADD231PS Z11, Z7, Z31
	ADDQ        $128, BX
	ADDQ        $256, AX
	SUBQ        $64, DX
	JMP         q5loop64

q5loop16:
	CMPQ        DX, $16
	JL          q5loop8
	VMOVUPS     (AX), Z8
	VCVTPH2PS   (BX), Z0
	VCVTPH2PS   (BX)(R12*1), Z1
	VCVTPH2PS   (BX)(R12*2), Z2
	VCVTPH2PS   (BX)(R14*1), Z3
	VFMADD231PS Z8, Z0, Z16
	VFMADD231PS Z8, Z1, Z20
	VFMADD231PS Z8, Z2, Z24
	VFMADD231PS Z8, Z3, Z28
	ADDQ        $32, BX
	ADDQ        $64, AX
	SUBQ        $16, DX
	JMP         q5loop16

q5loop8:
	CMPQ      DX, $8
	JL        q5reduce
	VMOVUPS   (AX), Y8
	VCVTPH2PS (BX), Y0
	VMULPS    Y8, Y0, Y1 // a VEX write: Z1's upper half is zero
	VADDPS    Z1, Z17, Z17
	VCVTPH2PS (BX)(R12*1), Y2
	VMULPS    Y8, Y2, Y3 // a VEX write: Z3's upper half is zero
	VADDPS    Z3, Z21, Z21
	VCVTPH2PS (BX)(R12*2), Y4
	VMULPS    Y8, Y4, Y5 // a VEX write: Z5's upper half is zero
	VADDPS    Z5, Z25, Z25
	VCVTPH2PS (BX)(R14*1), Y6
	VMULPS    Y8, Y6, Y7 // a VEX write: Z7's upper half is zero
	VADDPS    Z7, Z29, Z29

q5reduce:
	VADDPS        Z17, Z16, Z0
	VADDPS        Z19, Z18, Z1
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	MOVSS         X0, (R10)
	VADDPS        Z21, Z20, Z0
	VADDPS        Z23, Z22, Z1
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	MOVSS         X0, (R10)(R13*1)
	VADDPS        Z25, Z24, Z0
	VADDPS        Z27, Z26, Z1
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	MOVSS         X0, (R10)(R13*2)
	VADDPS        Z29, Z28, Z0
	VADDPS        Z31, Z30, Z1
	VADDPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	MOVSS         X0, (R10)(R15*1)
	ADDQ          $4, R10
	ADDQ          R8, SI
	DECQ          R9
	JMP           q5row

q5done:
	VZEROUPPER
	RET

// func rowsF16x4AVX2(x *float32, n int, w unsafe.Pointer, rowBytes, q int, y *float32)
// rowsF16x4AVX512 on 32-byte vectors: each row's sums are dotF16AVX2's, operation for operation
// (two 8-lane sums over 16-value steps, the 8-value tail into the first), so the outputs equal
// rowsF16AVX2's bit for bit; stream g's sums are in Y(2g) and Y(2g+1).
TEXT ·rowsF16x4AVX2(SB), NOSPLIT, $0-48
	MOVQ  x+0(FP), DI
	MOVQ  n+8(FP), CX
	MOVQ  w+16(FP), SI
	MOVQ  rowBytes+24(FP), R8
	MOVQ  q+32(FP), R9
	MOVQ  y+40(FP), R10
	MOVQ  R9, R12
	IMULQ R8, R12 // q·rowBytes: the offset of stream g is g times it
	LEAQ  (R12)(R12*2), R14
	LEAQ  (R9*4), R13 // q·4: the offset of stream g's outputs is g times it
	LEAQ  (R13)(R13*2), R15

q2row:
	TESTQ  R9, R9
	JE     q2done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DI, AX
	MOVQ   SI, BX
	MOVQ   CX, DX

q2loop16:
	CMPQ        DX, $16
	JL          q2loop8
	VMOVUPS     (AX), Y8
	VMOVUPS     32(AX), Y9
	VCVTPH2PS   (BX), Y10
	VCVTPH2PS   16(BX), Y11
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y11, Y1
	VCVTPH2PS   (BX)(R12*1), Y12
	VCVTPH2PS   16(BX)(R12*1), Y13
	VFMADD231PS Y8, Y12, Y2
	VFMADD231PS Y9, Y13, Y3
	VCVTPH2PS   (BX)(R12*2), Y10
	VCVTPH2PS   16(BX)(R12*2), Y11
	VFMADD231PS Y8, Y10, Y4
	VFMADD231PS Y9, Y11, Y5
	VCVTPH2PS   (BX)(R14*1), Y12
	VCVTPH2PS   16(BX)(R14*1), Y13
	VFMADD231PS Y8, Y12, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ        $32, BX
	ADDQ        $64, AX
	SUBQ        $16, DX
	JMP         q2loop16

q2loop8:
	CMPQ        DX, $8
	JL          q2reduce
	VMOVUPS     (AX), Y8
	VCVTPH2PS   (BX), Y10
	VFMADD231PS Y8, Y10, Y0
	VCVTPH2PS   (BX)(R12*1), Y12
	VFMADD231PS Y8, Y12, Y2
	VCVTPH2PS   (BX)(R12*2), Y10
	VFMADD231PS Y8, Y10, Y4
	VCVTPH2PS   (BX)(R14*1), Y12
	VFMADD231PS Y8, Y12, Y6

q2reduce:
	VADDPS       Y1, Y0, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS       X13, X12, X12
	VHADDPS      X12, X12, X12
	VHADDPS      X12, X12, X12
	MOVSS        X12, (R10)
	VADDPS       Y3, Y2, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS       X13, X12, X12
	VHADDPS      X12, X12, X12
	VHADDPS      X12, X12, X12
	MOVSS        X12, (R10)(R13*1)
	VADDPS       Y5, Y4, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS       X13, X12, X12
	VHADDPS      X12, X12, X12
	VHADDPS      X12, X12, X12
	MOVSS        X12, (R10)(R13*2)
	VADDPS       Y7, Y6, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS       X13, X12, X12
	VHADDPS      X12, X12, X12
	VHADDPS      X12, X12, X12
	MOVSS        X12, (R10)(R15*1)
	ADDQ         $4, R10
	ADDQ         R8, SI
	DECQ         R9
	JMP          q2row

q2done:
	VZEROUPPER
	RET
