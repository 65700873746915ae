//go:build amd64 && !purego

#include "textflag.h"

// swiglu holds swiGLUAVX2's constants, each in four (or eight) lanes: the float64 ones of Go's
// math.Exp (math/exp_amd64.s, its FMA path), the clamp [-110, 100], the exponent bias, and the
// float32 1 and sign mask.
DATA swiglu<>+0(SB)/8, $0x3ff71547652b82fe
DATA swiglu<>+8(SB)/8, $0x3ff71547652b82fe
DATA swiglu<>+16(SB)/8, $0x3ff71547652b82fe
DATA swiglu<>+24(SB)/8, $0x3ff71547652b82fe
DATA swiglu<>+32(SB)/8, $0x3fe62e42fefa3000
DATA swiglu<>+40(SB)/8, $0x3fe62e42fefa3000
DATA swiglu<>+48(SB)/8, $0x3fe62e42fefa3000
DATA swiglu<>+56(SB)/8, $0x3fe62e42fefa3000
DATA swiglu<>+64(SB)/8, $0x3d53de6af278ece6
DATA swiglu<>+72(SB)/8, $0x3d53de6af278ece6
DATA swiglu<>+80(SB)/8, $0x3d53de6af278ece6
DATA swiglu<>+88(SB)/8, $0x3d53de6af278ece6
DATA swiglu<>+96(SB)/8, $0x3fb0000000000000
DATA swiglu<>+104(SB)/8, $0x3fb0000000000000
DATA swiglu<>+112(SB)/8, $0x3fb0000000000000
DATA swiglu<>+120(SB)/8, $0x3fb0000000000000
DATA swiglu<>+128(SB)/8, $0x3efa01a01a01a01a
DATA swiglu<>+136(SB)/8, $0x3efa01a01a01a01a
DATA swiglu<>+144(SB)/8, $0x3efa01a01a01a01a
DATA swiglu<>+152(SB)/8, $0x3efa01a01a01a01a
DATA swiglu<>+160(SB)/8, $0x3f2a01a01a01a01a
DATA swiglu<>+168(SB)/8, $0x3f2a01a01a01a01a
DATA swiglu<>+176(SB)/8, $0x3f2a01a01a01a01a
DATA swiglu<>+184(SB)/8, $0x3f2a01a01a01a01a
DATA swiglu<>+192(SB)/8, $0x3f56c16c16c16c17
DATA swiglu<>+200(SB)/8, $0x3f56c16c16c16c17
DATA swiglu<>+208(SB)/8, $0x3f56c16c16c16c17
DATA swiglu<>+216(SB)/8, $0x3f56c16c16c16c17
DATA swiglu<>+224(SB)/8, $0x3f81111111111111
DATA swiglu<>+232(SB)/8, $0x3f81111111111111
DATA swiglu<>+240(SB)/8, $0x3f81111111111111
DATA swiglu<>+248(SB)/8, $0x3f81111111111111
DATA swiglu<>+256(SB)/8, $0x3fa5555555555555
DATA swiglu<>+264(SB)/8, $0x3fa5555555555555
DATA swiglu<>+272(SB)/8, $0x3fa5555555555555
DATA swiglu<>+280(SB)/8, $0x3fa5555555555555
DATA swiglu<>+288(SB)/8, $0x3fc5555555555555
DATA swiglu<>+296(SB)/8, $0x3fc5555555555555
DATA swiglu<>+304(SB)/8, $0x3fc5555555555555
DATA swiglu<>+312(SB)/8, $0x3fc5555555555555
DATA swiglu<>+320(SB)/8, $0x3fe0000000000000
DATA swiglu<>+328(SB)/8, $0x3fe0000000000000
DATA swiglu<>+336(SB)/8, $0x3fe0000000000000
DATA swiglu<>+344(SB)/8, $0x3fe0000000000000
DATA swiglu<>+352(SB)/8, $0x3ff0000000000000
DATA swiglu<>+360(SB)/8, $0x3ff0000000000000
DATA swiglu<>+368(SB)/8, $0x3ff0000000000000
DATA swiglu<>+376(SB)/8, $0x3ff0000000000000
DATA swiglu<>+384(SB)/8, $0x4000000000000000
DATA swiglu<>+392(SB)/8, $0x4000000000000000
DATA swiglu<>+400(SB)/8, $0x4000000000000000
DATA swiglu<>+408(SB)/8, $0x4000000000000000
DATA swiglu<>+416(SB)/8, $0x4059000000000000
DATA swiglu<>+424(SB)/8, $0x4059000000000000
DATA swiglu<>+432(SB)/8, $0x4059000000000000
DATA swiglu<>+440(SB)/8, $0x4059000000000000
DATA swiglu<>+448(SB)/8, $0xc05b800000000000
DATA swiglu<>+456(SB)/8, $0xc05b800000000000
DATA swiglu<>+464(SB)/8, $0xc05b800000000000
DATA swiglu<>+472(SB)/8, $0xc05b800000000000
DATA swiglu<>+480(SB)/8, $0x00000000000003ff
DATA swiglu<>+488(SB)/8, $0x00000000000003ff
DATA swiglu<>+496(SB)/8, $0x00000000000003ff
DATA swiglu<>+504(SB)/8, $0x00000000000003ff
DATA swiglu<>+512(SB)/8, $0x3f8000003f800000
DATA swiglu<>+520(SB)/8, $0x3f8000003f800000
DATA swiglu<>+528(SB)/8, $0x3f8000003f800000
DATA swiglu<>+536(SB)/8, $0x3f8000003f800000
DATA swiglu<>+544(SB)/8, $0x8000000080000000
DATA swiglu<>+552(SB)/8, $0x8000000080000000
DATA swiglu<>+560(SB)/8, $0x8000000080000000
DATA swiglu<>+568(SB)/8, $0x8000000080000000
GLOBL swiglu<>(SB), RODATA|NOPTR, $576

// func swiGLUAVX2(x, y *float32, n int)
// g_i = z·(1/(1+float32(exp(−z))))·u_i, z = g_i, for n values (a multiple of 8): swiGLU's
// float32 steps in its order, and exp(−z) computed in float64 as math.Exp does on a CPU with
// FMA — the same operations in the same order, four lanes at a time — so the results are
// bit-identical. The argument is first clamped to [−110, 100]: outside it float32(exp) is 0
// or +Inf either way, and inside it math.Exp takes its normal path (no overflow, underflow or
// denormal step).
TEXT ·swiGLUAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done
loop:
	VMOVUPS (DI), Y0
	VXORPS swiglu<>+544(SB), Y0, Y1
	VEXTRACTF128 $1, Y1, X2
	VCVTPS2PD X1, Y1
	VCVTPS2PD X2, Y2
	VMINPD swiglu<>+416(SB), Y1, Y1
	VMAXPD swiglu<>+448(SB), Y1, Y1
	VMULPD swiglu<>+0(SB), Y1, Y3
	VCVTPD2DQY Y3, X4
	VCVTDQ2PD X4, Y3
	VFNMADD231PD swiglu<>+32(SB), Y3, Y1
	VFNMADD231PD swiglu<>+64(SB), Y3, Y1
	VMULPD swiglu<>+96(SB), Y1, Y1
	VMOVUPD swiglu<>+128(SB), Y5
	VFMADD213PD swiglu<>+160(SB), Y1, Y5
	VFMADD213PD swiglu<>+192(SB), Y1, Y5
	VFMADD213PD swiglu<>+224(SB), Y1, Y5
	VFMADD213PD swiglu<>+256(SB), Y1, Y5
	VFMADD213PD swiglu<>+288(SB), Y1, Y5
	VFMADD213PD swiglu<>+320(SB), Y1, Y5
	VFMADD213PD swiglu<>+352(SB), Y1, Y5
	VMULPD Y5, Y1, Y1
	VADDPD swiglu<>+384(SB), Y1, Y5
	VMULPD Y5, Y1, Y1
	VADDPD swiglu<>+384(SB), Y1, Y5
	VMULPD Y5, Y1, Y1
	VADDPD swiglu<>+384(SB), Y1, Y5
	VMULPD Y5, Y1, Y1
	VADDPD swiglu<>+384(SB), Y1, Y5
	VFMADD213PD swiglu<>+352(SB), Y5, Y1
	VPMOVSXDQ X4, Y6
	VPADDQ swiglu<>+480(SB), Y6, Y6
	VPSLLQ $52, Y6, Y6
	VMULPD Y6, Y1, Y1
	VMINPD swiglu<>+416(SB), Y2, Y2
	VMAXPD swiglu<>+448(SB), Y2, Y2
	VMULPD swiglu<>+0(SB), Y2, Y7
	VCVTPD2DQY Y7, X8
	VCVTDQ2PD X8, Y7
	VFNMADD231PD swiglu<>+32(SB), Y7, Y2
	VFNMADD231PD swiglu<>+64(SB), Y7, Y2
	VMULPD swiglu<>+96(SB), Y2, Y2
	VMOVUPD swiglu<>+128(SB), Y9
	VFMADD213PD swiglu<>+160(SB), Y2, Y9
	VFMADD213PD swiglu<>+192(SB), Y2, Y9
	VFMADD213PD swiglu<>+224(SB), Y2, Y9
	VFMADD213PD swiglu<>+256(SB), Y2, Y9
	VFMADD213PD swiglu<>+288(SB), Y2, Y9
	VFMADD213PD swiglu<>+320(SB), Y2, Y9
	VFMADD213PD swiglu<>+352(SB), Y2, Y9
	VMULPD Y9, Y2, Y2
	VADDPD swiglu<>+384(SB), Y2, Y9
	VMULPD Y9, Y2, Y2
	VADDPD swiglu<>+384(SB), Y2, Y9
	VMULPD Y9, Y2, Y2
	VADDPD swiglu<>+384(SB), Y2, Y9
	VMULPD Y9, Y2, Y2
	VADDPD swiglu<>+384(SB), Y2, Y9
	VFMADD213PD swiglu<>+352(SB), Y9, Y2
	VPMOVSXDQ X8, Y10
	VPADDQ swiglu<>+480(SB), Y10, Y10
	VPSLLQ $52, Y10, Y10
	VMULPD Y10, Y2, Y2
	VCVTPD2PSY Y1, X1
	VCVTPD2PSY Y2, X2
	VINSERTF128 $1, X2, Y1, Y1
	VMOVUPS swiglu<>+512(SB), Y11
	VADDPS Y11, Y1, Y1
	VDIVPS Y1, Y11, Y1
	VMULPS Y1, Y0, Y1
	VMULPS (SI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET
