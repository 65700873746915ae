//go:build amd64 && !purego

#include "textflag.h"

// func prefetchT1(p *byte, n int)
// PREFETCHT1 of every 64-byte line that holds one of the n > 0 bytes at p.
TEXT ·prefetchT1(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -1(SI)(CX*1), CX      // the last byte
	ANDQ $-64, SI              // the first line
loop:
	PREFETCHT1 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JLE  loop
	RET
