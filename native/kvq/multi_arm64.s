//go:build arm64 && !purego

#include "textflag.h"

// NEON (Advanced SIMD) kernels of the MultiQuery fast path on arm64: the contracts of
// multiKernels, four float32 lanes a register, baseline ARMv8.0 instructions only (no FP16
// arithmetic, no dot product). A decoder turns 32 values (a block, or 64 bytes of f16) into
// eight vectors V0..V7 of four floats with the block scale applied (q4_0 as (c − 8)·d, the codes
// made signed bytes first, then widened and converted; exact, as c·d − 8·d is on amd64).
// tq4's 16 code bytes of a 32-value group are looked up in tq4Planes (TBL per byte of the
// float32 levels, interleaved back with ZIP) and multiplied by the row's f32 scale. turbo3's and
// turbo2's bit-stream codes are spread to a byte per value first (turbo3Consts, turbo2Consts),
// then looked up the same way in their planes, unscaled: the row scale multiplies the row's
// reduced sums (SCORESF's finisher) or its weights (the accumulate decoders).
//
// Register use. Scores: V0..V7 the decoded block, V8..V11 decode temporaries, V12..V15 a query's
// 16 values at a time (while decoding: a scale, the nibble constants, the level planes), V16..V31
// four accumulators per query (query h in V16+4h..V19+4h; value i of a row goes to lane i mod 16).
// Accumulate: V0..V3 16 decoded values, V4 a row's four weights, V5 the nibble shift (q4_0,
// tq4), V6..V15 decode temporaries and constants, V16..V31 the four accumulators' 16 values.
//
// Go's assembler has no mnemonics for the floating-point vector arithmetic and the signed
// widening used here; they are encoded with WORD below (operands are register numbers, the
// destination last as in Go's syntax); go tool objdump decodes each to the instruction its
// comment names, and TestNEONKernels and the reference tests check the results.

// FCVTL Vd.4S, Vn.4H: the low four halves of Vn widened to float32.
#define FCVTL(n, d) WORD $(0x0E217800 | (n)<<5 | (d))
// FCVTL2 Vd.4S, Vn.8H: the high four halves of Vn widened to float32.
#define FCVTL2(n, d) WORD $(0x4E217800 | (n)<<5 | (d))
// SCVTF Vd.4S, Vn.4S: signed int32 lanes to float32.
#define SCVTF4S(n, d) WORD $(0x4E21D800 | (n)<<5 | (d))
// FMUL Vd.4S, Vn.4S, Vm.4S.
#define FMUL4S(m, n, d) WORD $(0x6E20DC00 | (m)<<16 | (n)<<5 | (d))
// FADD Vd.4S, Vn.4S, Vm.4S.
#define FADD4S(m, n, d) WORD $(0x4E20D400 | (m)<<16 | (n)<<5 | (d))
// FADDP Vd.4S, Vn.4S, Vm.4S: [n0+n1, n2+n3, m0+m1, m2+m3].
#define FADDP4S(m, n, d) WORD $(0x6E20D400 | (m)<<16 | (n)<<5 | (d))
// SXTL Vd.8H, Vn.8B (SSHLL #0): the low eight signed bytes widened to int16.
#define SXTL8H(n, d) WORD $(0x0F08A400 | (n)<<5 | (d))
// SXTL2 Vd.8H, Vn.16B (SSHLL2 #0): the high eight signed bytes widened to int16.
#define SXTL28H(n, d) WORD $(0x4F08A400 | (n)<<5 | (d))
// SXTL Vd.4S, Vn.4H (SSHLL #0).
#define SXTL4S(n, d) WORD $(0x0F10A400 | (n)<<5 | (d))
// SXTL2 Vd.4S, Vn.8H (SSHLL2 #0).
#define SXTL24S(n, d) WORD $(0x4F10A400 | (n)<<5 | (d))
// FMLA Vd.4S, Vn.4S, Vm.S[i]: Vd += Vn·(lane i of Vm), fused.
#define FMLAE(m, i, n, d) WORD $(0x4F801000 | ((i)&1)<<21 | (m)<<16 | ((i)>>1)<<11 | (n)<<5 | (d))
// USHL Vd.16B, Vn.16B, Vm.16B: each byte shifted by the signed byte of Vm (negative: right).
#define USHL16B(m, n, d) WORD $(0x6E204400 | (m)<<16 | (n)<<5 | (d))
// USHL Vd.8H, Vn.8H, Vm.8H: each halfword shifted by the signed low byte of Vm's (positive: left).
#define USHL8H(m, n, d) WORD $(0x6E604400 | (m)<<16 | (n)<<5 | (d))
// SHLL Vd.4S, Vn.4H, #16 and SHLL2 Vd.4S, Vn.8H, #16: halves to the high halves of words (bf16
// to float32, exactly).
#define SHLL16(n, d) WORD $(0x2E613800 | (n)<<5 | (d))
#define SHLL216(n, d) WORD $(0x6E613800 | (n)<<5 | (d))

// The scores decoders: the block at R11 (advanced past it) into V0..V7; R20 is f16Table.
#define SDEC_F16 \
	VLD1.P 64(R11), [V8.H8, V9.H8, V10.H8, V11.H8]; \
	FCVTL(8, 0); FCVTL2(8, 1); FCVTL(9, 2); FCVTL2(9, 3); \
	FCVTL(10, 4); FCVTL2(10, 5); FCVTL(11, 6); FCVTL2(11, 7)

// WIDEN8 widens the signed bytes of four H8 registers' sources: int16 vectors a..d (values
// 0..7, 8..15, 16..23, 24..31) to int32 V0..V7, converts them and scales them by V12.
#define WIDEN8(a, b, c, d) \
	SXTL4S(a, 0); SXTL24S(a, 1); SXTL4S(b, 2); SXTL24S(b, 3); \
	SXTL4S(c, 4); SXTL24S(c, 5); SXTL4S(d, 6); SXTL24S(d, 7); \
	SCVTF4S(0, 0); SCVTF4S(1, 1); SCVTF4S(2, 2); SCVTF4S(3, 3); \
	SCVTF4S(4, 4); SCVTF4S(5, 5); SCVTF4S(6, 6); SCVTF4S(7, 7); \
	FMUL4S(12, 0, 0); FMUL4S(12, 1, 1); FMUL4S(12, 2, 2); FMUL4S(12, 3, 3); \
	FMUL4S(12, 4, 4); FMUL4S(12, 5, 5); FMUL4S(12, 6, 6); FMUL4S(12, 7, 7)

// SCALE loads the f16 block scale at R11 (advancing it by 2) into every lane of V12.
#define SCALE \
	MOVHU.P 2(R11), R19; \
	ADD R19<<2, R20, R19; \
	VLD1R (R19), [V12.S4]

#define SDEC_Q80 \
	SCALE; \
	VLD1.P 32(R11), [V8.B16, V9.B16]; \
	SXTL8H(8, 10); SXTL28H(8, 11); SXTL8H(9, 8); SXTL28H(9, 9); \
	WIDEN8(10, 11, 8, 9)

#define SDEC_Q40 \
	SCALE; \
	VLD1.P 16(R11), [V8.B16]; \
	VMOVI $15, V13.B16; \
	VMOVI $8, V14.B16; \
	VAND V13.B16, V8.B16, V9.B16; \
	VUSHR $4, V8.B16, V8.B16; \
	VSUB V14.B16, V9.B16, V9.B16; \
	VSUB V14.B16, V8.B16, V8.B16; \
	SXTL8H(9, 10); SXTL28H(9, 11); SXTL8H(8, 9); SXTL28H(8, 8); \
	WIDEN8(10, 11, 9, 8)

#define SDEC_BF16 \
	VLD1.P 64(R11), [V8.H8, V9.H8, V10.H8, V11.H8]; \
	SHLL16(8, 0); SHLL216(8, 1); SHLL16(9, 2); SHLL216(9, 3); \
	SHLL16(10, 4); SHLL216(10, 5); SHLL16(11, 6); SHLL216(11, 7)

// SDEC_IQ4NL is SDEC_Q40 with the nibbles looked up in iq4nlValues (address in R22) instead of
// less 8.
#define SDEC_IQ4NL \
	SCALE; \
	VLD1.P 16(R11), [V8.B16]; \
	VMOVI $15, V13.B16; \
	VLD1 (R22), [V14.B16]; \
	VAND V13.B16, V8.B16, V9.B16; \
	VUSHR $4, V8.B16, V8.B16; \
	VTBL V9.B16, [V14.B16], V9.B16; \
	VTBL V8.B16, [V14.B16], V8.B16; \
	SXTL8H(9, 10); SXTL28H(9, 11); SXTL8H(8, 9); SXTL28H(8, 8); \
	WIDEN8(10, 11, 9, 8)

// SDEC_Q41 decodes a q4_1 block (f16 d, f16 m, 16 bytes of unsigned nibbles) as c·d + m: the
// product exact, one rounding in the add, as q4_1Decode's float32(c·d) + m.
#define SDEC_Q41 \
	SCALE; \
	MOVHU.P 2(R11), R19; \
	ADD R19<<2, R20, R19; \
	VLD1R (R19), [V13.S4]; \
	VLD1.P 16(R11), [V8.B16]; \
	VMOVI $15, V14.B16; \
	VAND V14.B16, V8.B16, V9.B16; \
	VUSHR $4, V8.B16, V8.B16; \
	SXTL8H(9, 10); SXTL28H(9, 11); SXTL8H(8, 9); SXTL28H(8, 8); \
	WIDEN8(10, 11, 9, 8); \
	FADD4S(13, 0, 0); FADD4S(13, 1, 1); FADD4S(13, 2, 2); FADD4S(13, 3, 3); \
	FADD4S(13, 4, 4); FADD4S(13, 5, 5); FADD4S(13, 6, 6); FADD4S(13, 7, 7)

// Q5HI ORs the fifth bits (qh, the 32-bit word at R11, advanced past it) into the nibble codes
// V9 (values 0..15) and V8 (16..31) as 16s, through q5Consts (address in R23): V4, V5 the byte
// indices, V6 the bit masks, V7 16 in every byte (left there for q5_0's subtraction).
#define Q5HI \
	VLD1 (R23), [V4.B16, V5.B16, V6.B16]; \
	VMOVI $16, V7.B16; \
	VLD1R.P 4(R11), [V3.S4]; \
	VTBL V4.B16, [V3.B16], V0.B16; \
	VTBL V5.B16, [V3.B16], V1.B16; \
	VCMTST V6.B16, V0.B16, V0.B16; \
	VCMTST V6.B16, V1.B16, V1.B16; \
	VAND V7.B16, V0.B16, V0.B16; \
	VAND V7.B16, V1.B16, V1.B16

// SDEC_Q50 decodes a q5_0 block (f16 d, 32 fifth bits, 16 bytes of nibbles) as (c − 16)·d.
#define SDEC_Q50 \
	SCALE; \
	Q5HI; \
	VLD1.P 16(R11), [V8.B16]; \
	VMOVI $15, V14.B16; \
	VAND V14.B16, V8.B16, V9.B16; \
	VUSHR $4, V8.B16, V8.B16; \
	VORR V0.B16, V9.B16, V9.B16; \
	VORR V1.B16, V8.B16, V8.B16; \
	VSUB V7.B16, V9.B16, V9.B16; \
	VSUB V7.B16, V8.B16, V8.B16; \
	SXTL8H(9, 10); SXTL28H(9, 11); SXTL8H(8, 9); SXTL28H(8, 8); \
	WIDEN8(10, 11, 9, 8)

// SDEC_Q51 decodes a q5_1 block (f16 d, f16 m, 32 fifth bits, 16 bytes of nibbles) as c·d + m.
#define SDEC_Q51 \
	SCALE; \
	MOVHU.P 2(R11), R19; \
	ADD R19<<2, R20, R19; \
	VLD1R (R19), [V13.S4]; \
	Q5HI; \
	VLD1.P 16(R11), [V8.B16]; \
	VMOVI $15, V14.B16; \
	VAND V14.B16, V8.B16, V9.B16; \
	VUSHR $4, V8.B16, V8.B16; \
	VORR V0.B16, V9.B16, V9.B16; \
	VORR V1.B16, V8.B16, V8.B16; \
	SXTL8H(9, 10); SXTL28H(9, 11); SXTL8H(8, 9); SXTL28H(8, 8); \
	WIDEN8(10, 11, 9, 8); \
	FADD4S(13, 0, 0); FADD4S(13, 1, 1); FADD4S(13, 2, 2); FADD4S(13, 3, 3); \
	FADD4S(13, 4, 4); FADD4S(13, 5, 5); FADD4S(13, 6, 6); FADD4S(13, 7, 7)

// FP8H widens eight e4m3 codes (USH: VUSHLL of the low eight bytes of src, VUSHLL2 of the high
// eight) to the f16 bits of their value / 256 in dst, as the amd64 kernels do: x = b << 7, the
// sign moved from bit 14 to 15 by adding x & 0x4000, the NaN codes (x & 0x3f80 = 0x3f80) made
// f16 NaNs by 0x7c00 (V13, V14, V15 hold 0x4000, 0x3f80, 0x7c00; V11 is clobbered).
#define FP8H(USH, src, dst) \
	USH $7, src, dst.H8; \
	VAND V13.B16, dst.B16, V11.B16; \
	VADD V11.H8, dst.H8, dst.H8; \
	VAND V14.B16, dst.B16, V11.B16; \
	VCMEQ V14.H8, V11.H8, V11.H8; \
	VAND V15.B16, V11.B16, V11.B16; \
	VORR V11.B16, dst.B16, dst.B16

// FP8CONSTS loads fp8Consts: 256 in every lane of V12, FP8H's constants in V13..V15.
#define FP8CONSTS \
	MOVD $·fp8Consts(SB), R19; \
	VLD1 (R19), [V12.B16, V13.B16, V14.B16, V15.B16]

// SDEC_FP8 decodes 32 fp8 codes (at R11) into V0..V7 as e4m3 value / 256 (exact, through f16)
// times the row's f32 scale (at R24) × 256: the product rounded once, the codec's Decode value.
#define SDEC_FP8 \
	FP8CONSTS; \
	VLD1.P 32(R11), [V8.B16, V9.B16]; \
	FP8H(VUSHLL, V8.B8, V10); FCVTL(10, 0); FCVTL2(10, 1); \
	FP8H(VUSHLL2, V8.B16, V10); FCVTL(10, 2); FCVTL2(10, 3); \
	FP8H(VUSHLL, V9.B8, V10); FCVTL(10, 4); FCVTL2(10, 5); \
	FP8H(VUSHLL2, V9.B16, V10); FCVTL(10, 6); FCVTL2(10, 7); \
	VLD1R (R24), [V11.S4]; \
	FMUL4S(12, 11, 12); \
	FMUL4S(12, 0, 0); FMUL4S(12, 1, 1); FMUL4S(12, 2, 2); FMUL4S(12, 3, 3); \
	FMUL4S(12, 4, 4); FMUL4S(12, 5, 5); FMUL4S(12, 6, 6); FMUL4S(12, 7, 7)

// TQ4LOOK looks up the 16 tq4 levels of the nibbles in idx (bytes 0..15) through the byte
// planes in V12..V15 (tq4Planes) and interleaves the four bytes of each level into float32
// vectors o0..o3 (values 0..3, …, 12..15), through t0..t5.
#define TQ4LOOK(idx, t0, t1, t2, t3, t4, t5, o0, o1, o2, o3) \
	VTBL idx.B16, [V12.B16], t0.B16; \
	VTBL idx.B16, [V13.B16], t1.B16; \
	VTBL idx.B16, [V14.B16], t2.B16; \
	VTBL idx.B16, [V15.B16], t3.B16; \
	VZIP1 t1.B16, t0.B16, t4.B16; \
	VZIP2 t1.B16, t0.B16, t5.B16; \
	VZIP1 t3.B16, t2.B16, t0.B16; \
	VZIP2 t3.B16, t2.B16, t1.B16; \
	VZIP1 t0.H8, t4.H8, o0.H8; \
	VZIP2 t0.H8, t4.H8, o1.H8; \
	VZIP1 t1.H8, t5.H8, o2.H8; \
	VZIP2 t1.H8, t5.H8, o3.H8

// SDEC_TQ4 decodes a 32-value tq4 group (16 code bytes at R11; low nibbles the even values,
// high the odd, as the permuted queries) into V0..V7 scaled by the row's f32 scale at R24; R25
// is tq4Planes.
#define SDEC_TQ4 SDEC_TQ4S(TQ4SCALE)
#define SDEC_T4 SDEC_TQ4S(T4SCALE)

// TQ4SCALE and T4SCALE load the row's scale into V12: tq4's f32 at R24 (the row's last four
// bytes), turbo4's f16 at R24+2 (its last two).
#define TQ4SCALE VLD1R (R24), [V12.S4]
#define T4SCALE \
	MOVHU 2(R24), R19; \
	ADD R19<<2, R20, R19; \
	VLD1R (R19), [V12.S4]

#define SDEC_TQ4S(LOADSCALE) \
	VLD1 (R25), [V12.B16, V13.B16, V14.B16, V15.B16]; \
	VLD1.P 16(R11), [V8.B16]; \
	VMOVI $15, V9.B16; \
	VAND V9.B16, V8.B16, V9.B16; \
	VUSHR $4, V8.B16, V8.B16; \
	TQ4LOOK(V9, V4, V5, V6, V7, V10, V11, V0, V1, V2, V3); \
	TQ4LOOK(V8, V9, V10, V11, V4, V5, V7, V4, V5, V6, V7); \
	LOADSCALE; \
	FMUL4S(12, 0, 0); FMUL4S(12, 1, 1); FMUL4S(12, 2, 2); FMUL4S(12, 3, 3); \
	FMUL4S(12, 4, 4); FMUL4S(12, 5, 5); FMUL4S(12, 6, 6); FMUL4S(12, 7, 7)

// TLOOKS looks up the 32 codes in V10 (values 0..15) and V11 (16..31), one a byte, in the
// planes at R19 (loaded into V12..V15) into V0..V7, unscaled.
#define TLOOKS \
	VLD1 (R19), [V12.B16, V13.B16, V14.B16, V15.B16]; \
	TQ4LOOK(V10, V4, V5, V6, V7, V8, V9, V0, V1, V2, V3); \
	TQ4LOOK(V11, V8, V9, V10, V4, V5, V7, V4, V5, V6, V7)

// SDEC_T2 decodes a 32-value turbo2 group (8 code bytes at R11) into its levels in V0..V7: each
// code byte copied to its four values' bytes (TBL), shifted left to put the value's code in
// bits 6..7 (USHL) and shifted down (USHR).
#define SDEC_T2 \
	MOVD $·turbo2Consts(SB), R19; \
	VLD1 (R19), [V4.B16, V5.B16, V6.B16]; \
	VLD1.P 8(R11), [V8.B8]; \
	VTBL V4.B16, [V8.B16], V10.B16; \
	VTBL V5.B16, [V8.B16], V11.B16; \
	USHL16B(6, 10, 10); USHL16B(6, 11, 11); \
	VUSHR $6, V10.B16, V10.B16; \
	VUSHR $6, V11.B16, V11.B16; \
	MOVD $·turbo2Planes(SB), R19; \
	TLOOKS

// SDEC_Q2K is SDEC_T2 with q2k's levels (q2kPlanes).
#define SDEC_Q2K \
	MOVD $·turbo2Consts(SB), R19; \
	VLD1 (R19), [V4.B16, V5.B16, V6.B16]; \
	VLD1.P 8(R11), [V8.B8]; \
	VTBL V4.B16, [V8.B16], V10.B16; \
	VTBL V5.B16, [V8.B16], V11.B16; \
	USHL16B(6, 10, 10); USHL16B(6, 11, 11); \
	VUSHR $6, V10.B16, V10.B16; \
	VUSHR $6, V11.B16, V11.B16; \
	MOVD $·q2kPlanes(SB), R19; \
	TLOOKS

// SDEC_T3 decodes a 32-value turbo3 group (12 code bytes at R11) into its levels in V0..V7: the
// group's bytes 0..7 and 6..13 loaded into V8 (the two bytes past the group are inside the row:
// more codes or the scale), each value's byte pair gathered into a halfword (TBL), shifted left
// to put its code in bits 13..15 (USHL), the high bytes kept (UZP2) and shifted down (USHR).
#define SDEC_T3 \
	MOVD $·turbo3Consts(SB), R19; \
	VLD1.P 64(R19), [V4.B16, V5.B16, V6.B16, V7.B16]; \
	VLD1 (R19), [V9.B16]; \
	VLD1 (R11), [V8.D1]; \
	ADD $6, R11, R19; \
	VLD1 (R19), V8.D[1]; \
	ADD $12, R11, R11; \
	VTBL V4.B16, [V8.B16], V4.B16; \
	VTBL V5.B16, [V8.B16], V5.B16; \
	VTBL V6.B16, [V8.B16], V6.B16; \
	VTBL V7.B16, [V8.B16], V7.B16; \
	USHL8H(9, 4, 4); USHL8H(9, 5, 5); USHL8H(9, 6, 6); USHL8H(9, 7, 7); \
	VUZP2 V5.B16, V4.B16, V10.B16; \
	VUZP2 V7.B16, V6.B16, V11.B16; \
	VUSHR $5, V10.B16, V10.B16; \
	VUSHR $5, V11.B16, V11.B16; \
	MOVD $·turbo3Planes(SB), R19; \
	TLOOKS

// SQUERY adds query h's products with V0..V7 (its 32 values at qp, advanced past them) to its
// accumulators a0..a3.
#define SQUERY(qp, a0, a1, a2, a3) \
	VLD1.P 64(qp), [V12.S4, V13.S4, V14.S4, V15.S4]; \
	VFMLA V12.S4, V0.S4, a0.S4; \
	VFMLA V13.S4, V1.S4, a1.S4; \
	VFMLA V14.S4, V2.S4, a2.S4; \
	VFMLA V15.S4, V3.S4, a3.S4; \
	VLD1.P 64(qp), [V12.S4, V13.S4, V14.S4, V15.S4]; \
	VFMLA V12.S4, V4.S4, a0.S4; \
	VFMLA V13.S4, V5.S4, a1.S4; \
	VFMLA V14.S4, V6.S4, a2.S4; \
	VFMLA V15.S4, V7.S4, a3.S4

// SREDUCE sums query h's accumulators a0..a3 into a0 (a0+a1)+(a2+a3).
#define SREDUCE(a0, a1, a2, a3) \
	FADD4S(a1, a0, a0); FADD4S(a3, a2, a2); FADD4S(a2, a0, a0)

// SCORES is the body of a scores kernel with decoder DEC.
#define SCORES(DEC) SCORESF(DEC, NOFIN)
#define NOFIN

// TSCALE is SCORESF's finisher for turbo3 and turbo2: the row's four sums in V16 multiplied by
// its f16 scale (the row's last two bytes, at R24+2).
#define TSCALE \
	MOVHU 2(R24), R19; \
	ADD R19<<2, R20, R19; \
	VLD1R (R19), [V12.S4]; \
	FMUL4S(12, 16, 16)

// SCORESF is SCORES with FIN run on each row's four reduced sums in V16 before they are stored.
// R0 q, R1 d·4, R2 nv/32, R3 the row, R4 rb, R5 m, R6 out, R7 ostride; R8..R10 queries 1..3;
// R24 the row's last four bytes.
#define SCORESF(DEC, FIN) \
	MOVD q+0(FP), R0; \
	MOVD d+8(FP), R1; \
	LSL $2, R1; \
	MOVD nv+16(FP), R2; \
	LSR $5, R2; \
	MOVD rows+24(FP), R3; \
	MOVD rb+32(FP), R4; \
	MOVD m+40(FP), R5; \
	MOVD out+48(FP), R6; \
	MOVD ostride+56(FP), R7; \
	MOVD ·f16Table(SB), R20; \
	MOVD $·tq4Planes(SB), R25; \
	MOVD $·iq4nlValues(SB), R22; \
	MOVD $·q5Consts(SB), R23; \
	ADD R1, R0, R8; \
	ADD R1, R8, R9; \
	ADD R1, R9, R10; \
	CBZ R5, done; \
	CBZ R2, done; \
row: \
	VEOR V16.B16, V16.B16, V16.B16; VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; VEOR V19.B16, V19.B16, V19.B16; \
	VEOR V20.B16, V20.B16, V20.B16; VEOR V21.B16, V21.B16, V21.B16; \
	VEOR V22.B16, V22.B16, V22.B16; VEOR V23.B16, V23.B16, V23.B16; \
	VEOR V24.B16, V24.B16, V24.B16; VEOR V25.B16, V25.B16, V25.B16; \
	VEOR V26.B16, V26.B16, V26.B16; VEOR V27.B16, V27.B16, V27.B16; \
	VEOR V28.B16, V28.B16, V28.B16; VEOR V29.B16, V29.B16, V29.B16; \
	VEOR V30.B16, V30.B16, V30.B16; VEOR V31.B16, V31.B16, V31.B16; \
	MOVD R3, R11; \
	ADD R4, R3, R24; \
	SUB $4, R24, R24; \
	MOVD R0, R12; \
	MOVD R8, R13; \
	MOVD R9, R14; \
	MOVD R10, R15; \
	MOVD R2, R21; \
blk: \
	DEC; \
	SQUERY(R12, V16, V17, V18, V19); \
	SQUERY(R13, V20, V21, V22, V23); \
	SQUERY(R14, V24, V25, V26, V27); \
	SQUERY(R15, V28, V29, V30, V31); \
	SUBS $1, R21, R21; \
	BNE blk; \
	SREDUCE(16, 17, 18, 19); \
	SREDUCE(20, 21, 22, 23); \
	SREDUCE(24, 25, 26, 27); \
	SREDUCE(28, 29, 30, 31); \
	FADDP4S(20, 16, 16); \
	FADDP4S(28, 24, 24); \
	FADDP4S(24, 16, 16); \
	FIN; \
	VST1 [V16.S4], (R6); \
	ADD R4, R3, R3; \
	ADD R7, R6, R6; \
	SUBS $1, R5, R5; \
	BNE row; \
done: \
	RET

// The accumulate decoders: 16 values of the row at R11 into V0..V3. R22 is the chunk's byte
// offset in the row (f16) or its block's offset (q8_0, q4_0), R23 the codes' offset past the
// block's start (q8_0: 2 or 18; q4_0: 2), V5 q4_0's nibble shift (0 or −4 in every byte).
#define ADEC_F16 \
	ADD R22, R11, R19; \
	VLD1 (R19), [V8.H8, V9.H8]; \
	FCVTL(8, 0); FCVTL2(8, 1); FCVTL(9, 2); FCVTL2(9, 3)

// ASCALE loads the f16 scale of the block at R11+R22 into V12 and leaves the block's address
// in R19.
#define ASCALE \
	ADD R22, R11, R19; \
	MOVHU (R19), R24; \
	ADD R24<<2, R20, R24; \
	VLD1R (R24), [V12.S4]

// AWIDEN4 widens int16 vectors a (values 0..7) and b (8..15) to V0..V3, converts and scales
// them by V12.
#define AWIDEN4(a, b) \
	SXTL4S(a, 0); SXTL24S(a, 1); SXTL4S(b, 2); SXTL24S(b, 3); \
	SCVTF4S(0, 0); SCVTF4S(1, 1); SCVTF4S(2, 2); SCVTF4S(3, 3); \
	FMUL4S(12, 0, 0); FMUL4S(12, 1, 1); FMUL4S(12, 2, 2); FMUL4S(12, 3, 3)

#define ADEC_Q80 \
	ASCALE; \
	ADD R23, R19, R19; \
	VLD1 (R19), [V8.B16]; \
	SXTL8H(8, 9); SXTL28H(8, 10); \
	AWIDEN4(9, 10)

#define ADEC_Q40 \
	ASCALE; \
	ADD R23, R19, R19; \
	VLD1 (R19), [V8.B16]; \
	USHL16B(5, 8, 8); \
	VAND V13.B16, V8.B16, V8.B16; \
	VSUB V14.B16, V8.B16, V8.B16; \
	SXTL8H(8, 9); SXTL28H(8, 10); \
	AWIDEN4(9, 10)

#define ADEC_BF16 \
	ADD R22, R11, R19; \
	VLD1 (R19), [V8.H8, V9.H8]; \
	SHLL16(8, 0); SHLL216(8, 1); SHLL16(9, 2); SHLL216(9, 3)

// ADEC_IQ4NL is ADEC_Q40 with the nibbles looked up in iq4nlValues (V14) instead of less 8.
#define ADEC_IQ4NL \
	ASCALE; \
	ADD R23, R19, R19; \
	VLD1 (R19), [V8.B16]; \
	USHL16B(5, 8, 8); \
	VAND V13.B16, V8.B16, V8.B16; \
	VTBL V8.B16, [V14.B16], V8.B16; \
	SXTL8H(8, 9); SXTL28H(8, 10); \
	AWIDEN4(9, 10)

// ADEC_Q41 is ADEC_Q40 for q4_1: codes unsigned, c·d + m with m (at the block's byte 2) in V15.
#define ADEC_Q41 \
	ASCALE; \
	MOVHU 2(R19), R24; \
	ADD R24<<2, R20, R24; \
	VLD1R (R24), [V15.S4]; \
	ADD R23, R19, R19; \
	VLD1 (R19), [V8.B16]; \
	USHL16B(5, 8, 8); \
	VAND V13.B16, V8.B16, V8.B16; \
	SXTL8H(8, 9); SXTL28H(8, 10); \
	AWIDEN4(9, 10); \
	FADD4S(15, 0, 0); FADD4S(15, 1, 1); FADD4S(15, 2, 2); FADD4S(15, 3, 3)

// AQ5HI loads the chunk's 16 fifth bits (the word at R19+hdr) as 16s into V9, through V6 (the
// chunk's byte indices), V7 (bit masks) and V14 (16s).
#define AQ5HI(hdr) \
	ADD $hdr, R19, R24; \
	VLD1R (R24), [V9.S4]; \
	VTBL V6.B16, [V9.B16], V9.B16; \
	VCMTST V7.B16, V9.B16, V9.B16; \
	VAND V14.B16, V9.B16, V9.B16

// ADEC_Q50 and ADEC_Q51 are ADEC_Q40 and ADEC_Q41 with the fifth bits.
#define ADEC_Q50 \
	ASCALE; \
	AQ5HI(2); \
	ADD R23, R19, R19; \
	VLD1 (R19), [V8.B16]; \
	USHL16B(5, 8, 8); \
	VAND V13.B16, V8.B16, V8.B16; \
	VORR V9.B16, V8.B16, V8.B16; \
	VSUB V14.B16, V8.B16, V8.B16; \
	SXTL8H(8, 9); SXTL28H(8, 10); \
	AWIDEN4(9, 10)

#define ADEC_Q51 \
	ASCALE; \
	MOVHU 2(R19), R24; \
	ADD R24<<2, R20, R24; \
	VLD1R (R24), [V15.S4]; \
	AQ5HI(4); \
	ADD R23, R19, R19; \
	VLD1 (R19), [V8.B16]; \
	USHL16B(5, 8, 8); \
	VAND V13.B16, V8.B16, V8.B16; \
	VORR V9.B16, V8.B16, V8.B16; \
	SXTL8H(8, 9); SXTL28H(8, 10); \
	AWIDEN4(9, 10); \
	FADD4S(15, 0, 0); FADD4S(15, 1, 1); FADD4S(15, 2, 2); FADD4S(15, 3, 3)

// ADEC_TQ4 decodes the 16 values of chunk R21 (R22 its group's byte offset; V5 the nibble
// shift) through the planes in V6, V7, V13, V14 (mask V15), scaled by the f32 at R11+R23.
#define ADEC_TQ4 ADEC_TQ4S(ATQ4SCALE)
#define ADEC_T4 ADEC_TQ4S(AT4SCALE)

// ATQ4SCALE and AT4SCALE load the scale at R19 into V12: an f32 (tq4) or an f16 (turbo4).
#define ATQ4SCALE VLD1R (R19), [V12.S4]
#define AT4SCALE \
	MOVHU (R19), R19; \
	ADD R19<<2, R20, R19; \
	VLD1R (R19), [V12.S4]

// ADEC_TQ4S is ADEC_TQ4 with LOADSCALE loading the scale at R19 into V12.
#define ADEC_TQ4S(LOADSCALE) \
	ADD R22, R11, R19; \
	VLD1 (R19), [V8.B16]; \
	USHL16B(5, 8, 8); \
	VAND V15.B16, V8.B16, V8.B16; \
	VTBL V8.B16, [V6.B16], V9.B16; \
	VTBL V8.B16, [V7.B16], V10.B16; \
	VTBL V8.B16, [V13.B16], V11.B16; \
	VTBL V8.B16, [V14.B16], V8.B16; \
	VZIP1 V10.B16, V9.B16, V0.B16; \
	VZIP2 V10.B16, V9.B16, V1.B16; \
	VZIP1 V8.B16, V11.B16, V2.B16; \
	VZIP2 V8.B16, V11.B16, V3.B16; \
	VZIP1 V2.H8, V0.H8, V9.H8; \
	VZIP2 V2.H8, V0.H8, V10.H8; \
	VZIP1 V3.H8, V1.H8, V11.H8; \
	VZIP2 V3.H8, V1.H8, V8.H8; \
	ADD R23, R11, R19; \
	LOADSCALE; \
	FMUL4S(12, 9, 0); FMUL4S(12, 10, 1); FMUL4S(12, 11, 2); FMUL4S(12, 8, 3)

// ADEC_FP8 decodes the 16 fp8 codes of the chunk (at R11+R22) into V0..V3 as SDEC_FP8 does,
// the scale at R11+R23.
#define ADEC_FP8 \
	ADD R22, R11, R19; \
	VLD1 (R19), [V8.B16]; \
	FP8H(VUSHLL, V8.B8, V10); FCVTL(10, 0); FCVTL2(10, 1); \
	FP8H(VUSHLL2, V8.B16, V10); FCVTL(10, 2); FCVTL2(10, 3); \
	ADD R23, R11, R19; \
	VLD1R (R19), [V9.S4]; \
	FMUL4S(12, 9, 9); \
	FMUL4S(9, 0, 0); FMUL4S(9, 1, 1); FMUL4S(9, 2, 2); FMUL4S(9, 3, 3)

// TLOOKA looks up the 16 codes in V8, one a byte, in the planes in V6, V7, V13, V14 into
// V0..V3 (through V8..V11), unscaled.
#define TLOOKA \
	VTBL V8.B16, [V6.B16], V0.B16; \
	VTBL V8.B16, [V7.B16], V1.B16; \
	VTBL V8.B16, [V13.B16], V2.B16; \
	VTBL V8.B16, [V14.B16], V3.B16; \
	VZIP1 V1.B16, V0.B16, V8.B16; \
	VZIP2 V1.B16, V0.B16, V9.B16; \
	VZIP1 V3.B16, V2.B16, V10.B16; \
	VZIP2 V3.B16, V2.B16, V11.B16; \
	VZIP1 V10.H8, V8.H8, V0.H8; \
	VZIP2 V10.H8, V8.H8, V1.H8; \
	VZIP1 V11.H8, V9.H8, V2.H8; \
	VZIP2 V11.H8, V9.H8, V3.H8

// AWSCALE multiplies the row's four weights (V4) by its f16 scale at R11+R23.
#define AWSCALE \
	ADD R23, R11, R19; \
	MOVHU (R19), R19; \
	ADD R19<<2, R20, R19; \
	VLD1R (R19), [V8.S4]; \
	FMUL4S(8, 4, 4)

// ADEC_T2 decodes the 16 turbo2 codes of the chunk (4 bytes at R11+R22) as SDEC_T2 does, with
// the byte indices in V5 and the shifts in V12.
#define ADEC_T2 \
	ADD R22, R11, R19; \
	VLD1R (R19), [V8.S4]; \
	VTBL V5.B16, [V8.B16], V8.B16; \
	USHL16B(12, 8, 8); \
	VUSHR $6, V8.B16, V8.B16; \
	TLOOKA; \
	AWSCALE

// ADEC_T3 decodes the 16 turbo3 codes of the chunk (6 bytes at R11+R22; 8 read, the two past
// the chunk inside the row) as SDEC_T3 does, with the byte-pair indices in V5 and V12 and the
// shifts in V15.
#define ADEC_T3 \
	ADD R22, R11, R19; \
	VLD1 (R19), [V8.D1]; \
	VTBL V5.B16, [V8.B16], V0.B16; \
	VTBL V12.B16, [V8.B16], V1.B16; \
	USHL8H(15, 0, 0); USHL8H(15, 1, 1); \
	VUZP2 V1.B16, V0.B16, V8.B16; \
	VUSHR $5, V8.B16, V8.B16; \
	TLOOKA; \
	AWSCALE

// ACHUNK sets R22, R23 and V5 for the 16-value chunk R21 of a row.
#define ACHUNK_F16 \
	LSL $5, R21, R22

#define ACHUNK_Q80 \
	LSR $1, R21, R22; \
	MOVD $34, R23; \
	MUL R23, R22, R22; \
	AND $1, R21, R23; \
	LSL $4, R23, R23; \
	ADD $2, R23, R23

#define ACHUNK_Q40 \
	LSR $1, R21, R22; \
	MOVD $18, R23; \
	MUL R23, R22, R22; \
	AND $1, R21, R23; \
	LSL $2, R23, R23; \
	NEG R23, R23; \
	VDUP R23, V5.B16; \
	MOVD $2, R23; \
	VMOVI $15, V13.B16; \
	VMOVI $8, V14.B16

// ACHUNK_IQ4NL is ACHUNK_Q40 with iq4nlValues in V14.
#define ACHUNK_IQ4NL \
	ACHUNK_Q40; \
	MOVD $·iq4nlValues(SB), R24; \
	VLD1 (R24), [V14.B16]

// ACHUNK_Q41 is ACHUNK_Q40 for q4_1's 20-byte blocks, codes at byte 4.
#define ACHUNK_Q41 \
	LSR $1, R21, R22; \
	MOVD $20, R23; \
	MUL R23, R22, R22; \
	AND $1, R21, R23; \
	LSL $2, R23, R23; \
	NEG R23, R23; \
	VDUP R23, V5.B16; \
	MOVD $4, R23; \
	VMOVI $15, V13.B16

// ACHUNK_Q5 is ACHUNK_Q41 for q5_0 and q5_1 (blocks of bb bytes, codes at byte cb), with the
// chunk's half of q5Consts' byte indices in V6, the bit masks in V7 and 16s in V14.
#define ACHUNK_Q5(bb, cb) \
	LSR $1, R21, R22; \
	MOVD $bb, R23; \
	MUL R23, R22, R22; \
	AND $1, R21, R23; \
	LSL $2, R23, R23; \
	NEG R23, R23; \
	VDUP R23, V5.B16; \
	MOVD $·q5Consts(SB), R24; \
	AND $1, R21, R23; \
	ADD R23<<4, R24, R23; \
	VLD1 (R23), [V6.B16]; \
	ADD $32, R24, R24; \
	VLD1 (R24), [V7.B16]; \
	MOVD $cb, R23; \
	VMOVI $15, V13.B16; \
	VMOVI $16, V14.B16

#define ACHUNK_Q50 ACHUNK_Q5(22, 6)
#define ACHUNK_Q51 ACHUNK_Q5(24, 8)

// ACHUNK_TQ4 also loads tq4Planes into V6, V7, V13, V14 and the nibble mask into V15; R23 is
// the scale's offset in the row, rb − 4.
#define ACHUNK_TQ4 ACHUNK_TQ4S(4)
#define ACHUNK_T4 ACHUNK_TQ4S(2)

// ACHUNK_TQ4S is ACHUNK_TQ4 for a scale of sb bytes at the row's end.
#define ACHUNK_TQ4S(sb) \
	LSR $1, R21, R22; \
	LSL $4, R22, R22; \
	AND $1, R21, R23; \
	LSL $2, R23, R23; \
	NEG R23, R23; \
	VDUP R23, V5.B16; \
	SUB $sb, R4, R23; \
	MOVD $·tq4Planes(SB), R24; \
	VLD1 (R24), [V6.B16, V7.B16]; \
	ADD $32, R24, R24; \
	VLD1 (R24), [V13.B16, V14.B16]; \
	VMOVI $15, V15.B16

// TPLANES loads the planes at R24 into V6, V7, V13 and V14.
#define TPLANES \
	VLD1 (R24), [V6.B16, V7.B16]; \
	ADD $32, R24, R24; \
	VLD1 (R24), [V13.B16, V14.B16]

// ACHUNK_T2 sets the chunk's byte offset (4 bytes per 16 values), the scale's offset (rb − 2),
// turbo2Consts' first byte indices in V5, its shifts in V12 and turbo2Planes.
#define ACHUNK_T2 \
	LSL $2, R21, R22; \
	SUB $2, R4, R23; \
	MOVD $·turbo2Consts(SB), R24; \
	VLD1 (R24), [V5.B16]; \
	ADD $32, R24, R24; \
	VLD1 (R24), [V12.B16]; \
	MOVD $·turbo2Planes(SB), R24; \
	TPLANES

// ACHUNK_T3 sets the chunk's byte offset (6 bytes per 16 values), the scale's offset (rb − 2),
// turbo3Consts' first two gathers in V5 and V12, its shifts in V15 and turbo3Planes.
#define ACHUNK_T3 \
	MOVD $6, R22; \
	MUL R21, R22, R22; \
	SUB $2, R4, R23; \
	MOVD $·turbo3Consts(SB), R24; \
	VLD1 (R24), [V5.B16]; \
	ADD $16, R24, R24; \
	VLD1 (R24), [V12.B16]; \
	ADD $48, R24, R24; \
	VLD1 (R24), [V15.B16]; \
	MOVD $·turbo3Planes(SB), R24; \
	TPLANES

// ACHUNK_FP8 sets the chunk's byte offset (16 codes of a byte), the scale's offset (rb − 4)
// and fp8Consts in V12..V15.
#define ACHUNK_FP8 \
	LSL $4, R21, R22; \
	SUB $4, R4, R23; \
	FP8CONSTS

// ALOAD and ASTORE move the four accumulators' chunk (16 values each at R12..R15) into and out
// of V16..V31.
#define ALOAD \
	VLD1 (R12), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	VLD1 (R13), [V20.S4, V21.S4, V22.S4, V23.S4]; \
	VLD1 (R14), [V24.S4, V25.S4, V26.S4, V27.S4]; \
	VLD1 (R15), [V28.S4, V29.S4, V30.S4, V31.S4]

#define ASTORE \
	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R12); \
	VST1 [V20.S4, V21.S4, V22.S4, V23.S4], (R13); \
	VST1 [V24.S4, V25.S4, V26.S4, V27.S4], (R14); \
	VST1 [V28.S4, V29.S4, V30.S4, V31.S4], (R15)

// AROW adds w_h·x to accumulator h's chunk for the decoded values V0..V3, V4 the weights.
#define AROW \
	FMLAE(4, 0, 0, 16); FMLAE(4, 0, 1, 17); FMLAE(4, 0, 2, 18); FMLAE(4, 0, 3, 19); \
	FMLAE(4, 1, 0, 20); FMLAE(4, 1, 1, 21); FMLAE(4, 1, 2, 22); FMLAE(4, 1, 3, 23); \
	FMLAE(4, 2, 0, 24); FMLAE(4, 2, 1, 25); FMLAE(4, 2, 2, 26); FMLAE(4, 2, 3, 27); \
	FMLAE(4, 3, 0, 28); FMLAE(4, 3, 1, 29); FMLAE(4, 3, 2, 30); FMLAE(4, 3, 3, 31)

// ACC is the body of an accumulate kernel with chunk set-up CHUNK and decoder DEC: rows in
// tiles of 64 (held in L1 while every chunk passes over them), per 16-value chunk the four
// accumulators' values in V16..V31 across the tile's rows, in row order.
// R0 acc, R1 d·4, R2 nv/16, R3 the tile's first row, R4 rb, R5 rows left, R6 the tile's weights,
// R7 wstride; R8 the tile's rows, R9 the chunk's accumulator offset, R10 the tile's row count.
#define ACC(CHUNK, DEC) \
	MOVD acc+0(FP), R0; \
	MOVD d+8(FP), R1; \
	LSL $2, R1; \
	MOVD nv+16(FP), R2; \
	LSR $4, R2; \
	MOVD rows+24(FP), R3; \
	MOVD rb+32(FP), R4; \
	MOVD m+40(FP), R5; \
	MOVD w+48(FP), R6; \
	MOVD wstride+56(FP), R7; \
	MOVD ·f16Table(SB), R20; \
	CBZ R5, done; \
	CBZ R2, done; \
tile: \
	MOVD $64, R10; \
	CMP R10, R5; \
	CSEL LT, R5, R10, R10; \
	MOVD $0, R21; \
	MOVD R0, R12; \
chunk: \
	ADD R1, R12, R13; \
	ADD R1, R13, R14; \
	ADD R1, R14, R15; \
	CHUNK; \
	ALOAD; \
	MOVD R3, R11; \
	MOVD R6, R9; \
	MOVD R10, R8; \
r: \
	VLD1 (R9), [V4.S4]; \
	DEC; \
	AROW; \
	ADD R4, R11, R11; \
	ADD R7, R9, R9; \
	SUBS $1, R8, R8; \
	BNE r; \
	ASTORE; \
	ADD $64, R12, R12; \
	ADD $1, R21, R21; \
	CMP R2, R21; \
	BNE chunk; \
	MUL R10, R4, R19; \
	ADD R19, R3, R3; \
	MUL R10, R7, R19; \
	ADD R19, R6, R6; \
	SUBS R10, R5, R5; \
	BNE tile; \
done: \
	RET

// func multiScoresF16NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresF16NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_F16)

// func multiScoresQ80NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresQ80NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_Q80)

// func multiScoresQ40NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresQ40NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_Q40)

// func multiScoresTQ4NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresTQ4NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_TQ4)

// func multiScoresBF16NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresBF16NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_BF16)

// func multiScoresIQ4NLNEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresIQ4NLNEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_IQ4NL)

// func multiScoresQ41NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresQ41NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_Q41)

// func multiScoresQ50NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresQ50NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_Q50)

// func multiScoresQ51NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresQ51NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_Q51)

// func multiScoresT4NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresT4NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_T4)

// func multiScoresFP8NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresFP8NEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_FP8)

// func multiAccF16NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccF16NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_F16, ADEC_F16)

// func multiAccQ80NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccQ80NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_Q80, ADEC_Q80)

// func multiAccQ40NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccQ40NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_Q40, ADEC_Q40)

// func multiAccTQ4NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccTQ4NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_TQ4, ADEC_TQ4)

// func multiAccBF16NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccBF16NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_F16, ADEC_BF16)

// func multiAccIQ4NLNEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccIQ4NLNEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_IQ4NL, ADEC_IQ4NL)

// func multiAccQ41NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccQ41NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_Q41, ADEC_Q41)

// func multiAccQ50NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccQ50NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_Q50, ADEC_Q50)

// func multiAccQ51NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccQ51NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_Q51, ADEC_Q51)

// func multiAccT4NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccT4NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_T4, ADEC_T4)

// func multiAccFP8NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccFP8NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_FP8, ADEC_FP8)

// func multiScoresT3NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresT3NEON(SB), NOSPLIT, $0-64
	SCORESF(SDEC_T3, TSCALE)

// func multiAccT3NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccT3NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_T3, ADEC_T3)

// func multiScoresT2NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
TEXT ·multiScoresT2NEON(SB), NOSPLIT, $0-64
	SCORESF(SDEC_T2, TSCALE)

// func multiAccT2NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
TEXT ·multiAccT2NEON(SB), NOSPLIT, $0-64
	ACC(ACHUNK_T2, ADEC_T2)

// func multiScoresQ2KNEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
// q2k's cells are turbo2's bit stream with q2k's levels, without a row scale.
TEXT ·multiScoresQ2KNEON(SB), NOSPLIT, $0-64
	SCORES(SDEC_Q2K)

// func q2kScaleNEON(q *float32, d int, grp *byte, qs *float32)
// qs_h[c] = q_h[c]·scale_c, eight channels a pass.
TEXT ·q2kScaleNEON(SB), NOSPLIT, $0-32
	MOVD q+0(FP), R0
	MOVD d+8(FP), R1
	MOVD grp+16(FP), R2
	MOVD qs+24(FP), R3
	LSL $2, R1, R4
	LSR $3, R1, R5
	CBZ R5, q2ks_done
q2ks_loop:
	VLD1.P 16(R2), [V0.H8]
	FCVTL(0, 1); FCVTL2(0, 2)
	MOVD R0, R6
	MOVD R3, R7
	VLD1 (R6), [V3.S4, V4.S4]
	ADD R4, R6, R6
	VLD1 (R6), [V5.S4, V6.S4]
	ADD R4, R6, R6
	VLD1 (R6), [V7.S4, V8.S4]
	ADD R4, R6, R6
	VLD1 (R6), [V9.S4, V10.S4]
	FMUL4S(1, 3, 3); FMUL4S(2, 4, 4); FMUL4S(1, 5, 5); FMUL4S(2, 6, 6)
	FMUL4S(1, 7, 7); FMUL4S(2, 8, 8); FMUL4S(1, 9, 9); FMUL4S(2, 10, 10)
	VST1 [V3.S4, V4.S4], (R7)
	ADD R4, R7, R7
	VST1 [V5.S4, V6.S4], (R7)
	ADD R4, R7, R7
	VST1 [V7.S4, V8.S4], (R7)
	ADD R4, R7, R7
	VST1 [V9.S4, V10.S4], (R7)
	ADD $32, R0, R0
	ADD $32, R3, R3
	SUBS $1, R5, R5
	BNE q2ks_loop
q2ks_done:
	RET
