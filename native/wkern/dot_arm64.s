//go:build arm64 && !purego

#include "textflag.h"

// One-token Q8_0 and Q4_0 row dots (dot_arm64.go). Per 32-value block: the exact integer
// products summed into four int32 lanes (V16), converted to float32 and fused into the float
// accumulators V0 (even blocks) or V1 (odd blocks) times the block's scale f16(w)·d[b] held
// in lane 0 of V2; at the end V0+V1 reduced pairwise. R0 the row, R1 the codes, R2 the scales,
// R3 blocks left, R4 halfTable.
//
// Go's assembler lacks these mnemonics; WORD encodings (register numbers, destination last),
// each checked with go tool objdump and by TestKernelsAgainstReference under an emulator.

// SDOT Vd.4S, Vn.16B, Vm.16B (ARMv8.2 dot product): Vd += four-byte dot products.
#define SDOT(m, n, d) WORD $(0x4E809400 | (m)<<16 | (n)<<5 | (d))
// SMULL Vd.8H, Vn.8B, Vm.8B.
#define SMULL(m, n, d) WORD $(0x0E20C000 | (m)<<16 | (n)<<5 | (d))
// SMLAL2 Vd.8H, Vn.16B, Vm.16B.
#define SMLAL2(m, n, d) WORD $(0x4E208000 | (m)<<16 | (n)<<5 | (d))
// SADALP Vd.4S, Vn.8H: Vd += pairwise sums of the int16 lanes.
#define SADALP(n, d) WORD $(0x4E606800 | (n)<<5 | (d))
// SCVTF Vd.4S, Vn.4S.
#define SCVTF4S(n, d) WORD $(0x4E21D800 | (n)<<5 | (d))
// FMLA Vd.4S, Vn.4S, Vm.S[0].
#define FMLAE0(m, n, d) WORD $(0x4F801000 | (m)<<16 | (n)<<5 | (d))
// FADD Vd.4S, Vn.4S, Vm.4S; FADDP Vd.4S, Vn.4S, Vm.4S.
#define FADD4S(m, n, d) WORD $(0x4E20D400 | (m)<<16 | (n)<<5 | (d))
#define FADDP4S(m, n, d) WORD $(0x6E20D400 | (m)<<16 | (n)<<5 | (d))

// BSCALE puts f16(w)·d[b] into lane 0 of V2 (F2): the weight scale at R0 (advanced by 2), the
// activation scale at R2 (advanced by 4).
#define BSCALE \
	MOVHU.P 2(R0), R5; \
	ADD R5<<2, R4, R5; \
	FMOVS (R5), F2; \
	FMOVS.P 4(R2), F3; \
	FMULS F3, F2, F2

// IDOT_SDOT and IDOT_NEON sum the products of the weight bytes V4, V5 (signed) with the codes
// V6, V7 into V16's four int32 lanes (V16 zeroed first).
#define IDOT_SDOT \
	VEOR V16.B16, V16.B16, V16.B16; \
	SDOT(6, 4, 16); \
	SDOT(7, 5, 16)

#define IDOT_NEON \
	VEOR V16.B16, V16.B16, V16.B16; \
	SMULL(6, 4, 17); \
	SMLAL2(6, 4, 17); \
	SMULL(7, 5, 18); \
	SMLAL2(7, 5, 18); \
	SADALP(17, 16); \
	SADALP(18, 16)

// Q8W and Q4W load a block's weights (after its scale) into V4 (values 0..15), V5 (16..31) as
// signed bytes; Q4W needs V20 = 0x0F and V21 = 8 in every byte.
#define Q8W \
	VLD1.P 32(R0), [V4.B16, V5.B16]

#define Q4W \
	VLD1.P 16(R0), [V4.B16]; \
	VUSHR $4, V4.B16, V5.B16; \
	VAND V20.B16, V4.B16, V4.B16; \
	VSUB V21.B16, V4.B16, V4.B16; \
	VSUB V21.B16, V5.B16, V5.B16

// BLOCK adds block b's sum to acc (V0 or V1).
#define BLOCK(W, IDOT, acc) \
	BSCALE; \
	W; \
	VLD1.P 32(R1), [V6.B16, V7.B16]; \
	IDOT; \
	SCVTF4S(16, 16); \
	FMLAE0(2, 16, acc)

#define DOT(W, IDOT) \
	MOVD w+0(FP), R0; \
	MOVD q+8(FP), R1; \
	MOVD d+16(FP), R2; \
	MOVD nb+24(FP), R3; \
	MOVD ·halfTable(SB), R4; \
	VMOVI $15, V20.B16; \
	VMOVI $8, V21.B16; \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	CMP $2, R3; \
	BLT tail; \
pair: \
	BLOCK(W, IDOT, 0); \
	BLOCK(W, IDOT, 1); \
	SUB $2, R3, R3; \
	CMP $2, R3; \
	BGE pair; \
tail: \
	CBZ R3, done; \
	BLOCK(W, IDOT, 0); \
done: \
	FADD4S(1, 0, 0); \
	FADDP4S(0, 0, 0); \
	FADDP4S(0, 0, 0); \
	FMOVS F0, ret+32(FP); \
	RET

// func dotQ8_0SDOT(w, q, d unsafe.Pointer, nb int) float32
TEXT ·dotQ8_0SDOT(SB), NOSPLIT, $0-36
	DOT(Q8W, IDOT_SDOT)

// func dotQ8_0NEON(w, q, d unsafe.Pointer, nb int) float32
TEXT ·dotQ8_0NEON(SB), NOSPLIT, $0-36
	DOT(Q8W, IDOT_NEON)

// func dotQ4_0SDOT(w, q, d unsafe.Pointer, nb int) float32
TEXT ·dotQ4_0SDOT(SB), NOSPLIT, $0-36
	DOT(Q4W, IDOT_SDOT)

// func dotQ4_0NEON(w, q, d unsafe.Pointer, nb int) float32
TEXT ·dotQ4_0NEON(SB), NOSPLIT, $0-36
	DOT(Q4W, IDOT_NEON)
