//go:build amd64 && !purego

#include "textflag.h"

// ROWS5 defines name(w, rowBytes, rows, q, d, s, nb, y): y[r] = kernel(w + r·rowBytes, q, d,
// s, nb) for r < rows, kernel one of the five-argument row dots (w, q, d, s or bs, nb) →
// float32 at 40(FP). The loop calls the kernel directly (no Go frame per row); its state
// lives in the argument slots, as the kernel clobbers every register.
#define ROWS5(name, kernel) \
TEXT name(SB), NOSPLIT, $48-64 \
loop: \
	MOVQ  rows+16(FP), CX \
	TESTQ CX, CX \
	JE    done \
	MOVQ  w+0(FP), AX \
	MOVQ  AX, 0(SP) \
	MOVQ  q+24(FP), AX \
	MOVQ  AX, 8(SP) \
	MOVQ  d+32(FP), AX \
	MOVQ  AX, 16(SP) \
	MOVQ  s+40(FP), AX \
	MOVQ  AX, 24(SP) \
	MOVQ  nb+48(FP), AX \
	MOVQ  AX, 32(SP) \
	CALL  kernel(SB) \
	MOVL  40(SP), AX \
	MOVQ  y+56(FP), BX \
	MOVL  AX, (BX) \
	ADDQ  $4, BX \
	MOVQ  BX, y+56(FP) \
	MOVQ  w+0(FP), AX \
	ADDQ  rowBytes+8(FP), AX \
	MOVQ  AX, w+0(FP) \
	DECQ  rows+16(FP) \
	JMP   loop \
done: \
	RET

// func rowsQ6_KAVX2(w unsafe.Pointer, rowBytes, rows int, q, d, s unsafe.Pointer, nb int, y *float32)
ROWS5(·rowsQ6_KAVX2, ·dotQ6_KAVX2)

// func rowsQ4_0uAVX2(w unsafe.Pointer, rowBytes, rows int, q, d, s unsafe.Pointer, nb int, y *float32)
ROWS5(·rowsQ4_0uAVX2, ·dotQ4_0uAVX2)

// func rowsQ4_0VNNI(w unsafe.Pointer, rowBytes, rows int, q, d, s unsafe.Pointer, nb int, y *float32)
ROWS5(·rowsQ4_0VNNI, ·dotQ4_0VNNI)

// ROWS4 is ROWS5 for the four-argument row dots (w, q, d, nb) → float32 at 32(FP).
#define ROWS4(name, kernel) \
TEXT name(SB), NOSPLIT, $40-56 \
loop: \
	MOVQ  rows+16(FP), CX \
	TESTQ CX, CX \
	JE    done \
	MOVQ  w+0(FP), AX \
	MOVQ  AX, 0(SP) \
	MOVQ  q+24(FP), AX \
	MOVQ  AX, 8(SP) \
	MOVQ  d+32(FP), AX \
	MOVQ  AX, 16(SP) \
	MOVQ  nb+40(FP), AX \
	MOVQ  AX, 24(SP) \
	CALL  kernel(SB) \
	MOVL  32(SP), AX \
	MOVQ  y+48(FP), BX \
	MOVL  AX, (BX) \
	ADDQ  $4, BX \
	MOVQ  BX, y+48(FP) \
	MOVQ  w+0(FP), AX \
	ADDQ  rowBytes+8(FP), AX \
	MOVQ  AX, w+0(FP) \
	DECQ  rows+16(FP) \
	JMP   loop \
done: \
	RET

// func rowsQ8_0AVX2(w unsafe.Pointer, rowBytes, rows int, q, d unsafe.Pointer, nb int, y *float32)
ROWS4(·rowsQ8_0AVX2, ·dotQ8_0AVX2)
