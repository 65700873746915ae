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
	VEXTRACTF32X8 $1, Z0, Y1
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
