//go:build ignore

// gen_vexlib is the VEX encoder the AVX2 kernel generators share (gen_avx2int.go,
// gen_avx2intacc.go, gen_tq4avx2.go, gen_t4accavx2.go; their go:generate lines name it:
// `go run gen_X.go gen_vexlib.go`). Go's assembler encodes VPDPBUSD and VPDPWSSD on Y
// registers as EVEX, the AVX-512 VL form, which faults on CPUs with AVX-VNNI but not AVX-512,
// so the generators write the VEX form as bytes.
//
// Measured on an Intel Xeon (Sapphire Rapids class, ~3.8 GHz; loops of one instruction on Y
// registers, thread CPU): VEX VPDPBUSD latency 5 cycles, two a cycle (eight independent chains
// reach 1.6 a cycle: latency-bound; four 0.8), as VPMADDUBSW, VFMADD231PS, VPSHUFB, VPUNPCKLBW,
// VPSRLVD and VCVTDQ2PS (two a cycle each); VCVTPH2PS from memory two a cycle but on the FMA
// ports (eight FMAs and two of it take five cycles); VPMOVSXBW X→Y one a cycle; VPBLENDVB
// ~1.3 a cycle; VPSHUFB, VPAND and VPSRLW together three a cycle (three vector ports).
package main

import (
	"fmt"
	"strings"
)

// The AVX-VNNI opcodes, VEX.256.66.0F38.W0 op /r: ymm acc += Σ per dword of the products of
// ymm v and the r/m operand.
const (
	opVPDPBUSD = 0x50 // v's unsigned bytes times r/m's signed bytes, four to a dword
	opVPDPWSSD = 0x52 // signed words, two to a dword
)

// vexName is the mnemonic of opcode op.
func vexName(op byte) string {
	switch op {
	case opVPDPBUSD:
		return "VPDPBUSD"
	case opVPDPWSSD:
		return "VPDPWSSD"
	}
	panic(fmt.Sprintf("vexName: opcode %#x", op))
}

// vexReg is the line (no tab, no newline) of VEX.256.66.0F38.W0 op with ymm operands acc
// (ModRM.reg), v (VEX.vvvv) and s (ModRM.rm): BYTE directives, the instruction in a comment.
func vexReg(op byte, acc, v, s int) string {
	return vexBytes(op, acc, v, s, 0xC0, nil) +
		fmt.Sprintf(" // %s Y%d, Y%d, Y%d (VEX)", vexName(op), s, v, acc)
}

// vexSI is vexReg with the memory operand disp(SI) in place of ymm s.
func vexSI(op byte, acc, v, disp int) string {
	mod, tail := byte(0x80), []byte{byte(disp), byte(disp >> 8), byte(disp >> 16), byte(disp >> 24)}
	switch {
	case disp == 0:
		mod, tail = 0x00, nil
	case disp >= -128 && disp <= 127:
		mod, tail = 0x40, []byte{byte(int8(disp))}
	}
	const si = 6
	return vexBytes(op, acc, v, si, mod, tail) +
		fmt.Sprintf(" // %s %d(SI), Y%d, Y%d (VEX)", vexName(op), disp, v, acc)
}

// vexBytes writes the three-byte VEX (C4) encoding of op with ModRM fields mod, reg and rm
// (register numbers 0..15) and vvvv = v, followed by tail (a displacement), as BYTE directives.
func vexBytes(op byte, reg, v, rm int, mod byte, tail []byte) string {
	b1 := byte(0x40 | 0x02) // X̄, map 0F38
	if reg < 8 {
		b1 |= 0x80 // R̄: inverted bit 3 of ModRM.reg
	}
	if rm < 8 {
		b1 |= 0x20 // B̄: inverted bit 3 of ModRM.rm
	}
	b2 := byte(^v&15)<<3 | 0x04 | 0x01 // W0, v̄vvv, L = 256, pp = 66
	modrm := mod | byte(reg&7)<<3 | byte(rm&7)
	bs := append([]byte{0xC4, b1, b2, op, modrm}, tail...)
	parts := make([]string, len(bs))
	for i, x := range bs {
		parts[i] = fmt.Sprintf("BYTE $0x%02X", x)
	}
	return strings.Join(parts, "; ")
}
