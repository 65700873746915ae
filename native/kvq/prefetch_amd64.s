//go:build amd64 && !purego

#include "textflag.h"

// func prefetchNTA(p *byte, n int)
// PREFETCHNTA of every 64-byte line that holds one of the n > 0 bytes at p.
TEXT ·prefetchNTA(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -1(SI)(CX*1), CX      // the last byte
	ANDQ $-64, SI              // the first line
loop:
	PREFETCHNTA (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JLE  loop
	RET
