//go:build ignore

// gen_ktile holds what the K-quant tile generators share; each runs with it (`go run
// gen_invq6.go gen_ktile.go`, `go run gen_invq4k.go gen_ktile.go`). It writes the 16-row loads
// and their transpose, the row pointers' setup, advance and prefetch for super-blocks of
// blockBytes bytes (a constant each generator defines: 210 for Q6_K, 144 for Q4_K), the
// multi-token kernels' frame around a generator's unpacking and token groups (xr), and the
// file. Each generator also defines sAcc, the scratch offset of the token accumulators.
package main

import (
	"fmt"
	"os"
	"strings"
)

var b strings.Builder

func p(format string, a ...any) { fmt.Fprintf(&b, "\t"+format+"\n", a...) }

func z(i int) string { return fmt.Sprintf("Z%d", i) }

const sel = "$0xd8" // VPTERNLOGD: dst = src3 ? src2 : dst, bitwise

// Row addressing: SI, R11, R12, R13 rows 0, 4, 8, 12 at the current super-block; BX rowBytes,
// AX 3·rowBytes.
var rowBase = [4]string{"SI", "R11", "R12", "R13"}
var rowIdx = [4]string{"", "(BX*1)", "(BX*2)", "(AX*1)"}

// load4 loads lane k of Z from row 4k+m's 16 bytes at off.
func load4(off, m int, zr int) {
	for k := 0; k < 4; k++ {
		a := fmt.Sprintf("%d(%s)%s", off, rowBase[k], rowIdx[m])
		if k == 0 {
			p("VMOVDQU32 %s, X%d", a, zr)
		} else {
			p("VINSERTI32X4 $%d, %s, %s, %s", k, a, z(zr), z(zr))
		}
	}
}

// loadT loads 16 bytes at off of each of the 16 rows and transposes them: dword g of row i
// lands in lane i of out[g]. tmp holds six scratch registers.
func loadT(off int, out [4]int, tmp [6]int) {
	a0, a1, a2, a3, u0, u1 := tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5]
	load4(off, 0, a0)
	load4(off, 1, a1)
	load4(off, 2, a2)
	load4(off, 3, a3)
	p("VPUNPCKLDQ %s, %s, %s", z(a1), z(a0), z(u0))
	p("VPUNPCKHDQ %s, %s, %s", z(a1), z(a0), z(u1))
	p("VPUNPCKLDQ %s, %s, %s", z(a3), z(a2), z(a0))
	p("VPUNPCKHDQ %s, %s, %s", z(a3), z(a2), z(a1))
	p("VPUNPCKLQDQ %s, %s, %s", z(a0), z(u0), z(out[0]))
	p("VPUNPCKHQDQ %s, %s, %s", z(a0), z(u0), z(out[1]))
	p("VPUNPCKLQDQ %s, %s, %s", z(a1), z(u1), z(out[2]))
	p("VPUNPCKHQDQ %s, %s, %s", z(a1), z(u1), z(out[3]))
}

// prefetch issues the prefetches of lines [l0, l1) of the next 16-row group's super-block
// (R14, 16·blockBytes bytes a super-block): 16 interleaved row streams are more than the
// hardware prefetchers follow, the next group is one sequential stream.
func prefetch(l0, l1 int) {
	for l := l0; l < l1; l++ {
		p("PREFETCHT0 %d(R14)", 64*l)
	}
}

// prefLines is the number of lines of 16 super-blocks (the last one partly).
const prefLines = (16*blockBytes + 63) / 64

// prefetchPart issues part i of parts of the next row group's super-block prefetches (lines
// [i·prefLines/parts, (i+1)·prefLines/parts)), spread through a super-block's work.
func prefetchPart(i, parts int) {
	prefetch(i*prefLines/parts, (i+1)*prefLines/parts)
}

func advanceRows() {
	for _, r := range rowBase {
		p("ADDQ $%d, %s", blockBytes, r)
	}
	p("ADDQ $%d, R14", 16*blockBytes)
}

func setupRows(wArg, rbArg string) {
	p("MOVQ %s, SI", wArg)
	p("MOVQ %s, BX", rbArg)
	p("LEAQ (BX)(BX*2), AX")
	p("LEAQ (SI)(BX*4), R11")
	p("LEAQ (R11)(BX*4), R12")
	p("LEAQ (R12)(BX*4), R13")
	p("LEAQ (R13)(BX*4), R14")
}

// Token addresses of a group (R9 its first token's codes at the current sub-block, R8 the
// token stride, R10 = R9 + 3·R8, R15 = R9 + 6·R8).
var tokAddr = [8]string{"(R9)", "(R9)(R8*1)", "(R9)(R8*2)", "(R10)", "(R9)(R8*4)", "(R10)(R8*2)", "(R15)", "(R15)(R8*1)"}

// setTokAddr sets R10 and R15 for tokAddr from R9 and R8.
func setTokAddr() {
	p("LEAQ (R9)(R8*2), R10")
	p("ADDQ R8, R10")
	p("LEAQ (R10)(R8*2), R15")
	p("ADDQ R8, R15")
}

// multi is a format's part of the multi-token kernels: fn their name less r, label their
// labels' prefix; ops holds per super-block each token's integer operands (1<<opsShift bytes a
// token) then their d values. unpack sets the masks and unpacks the super-block (row pointers
// set as setupRows sets them) into the scratch at DI; group(name, k) runs k tokens against it
// with R9 the group's first token's codes at the super-block, DX its integer operands, CX its
// d values, R13 its accumulators, and leaves R9 advanced by 256, DX by dxGroup and CX as it was.
type multi struct {
	fn, label string
	opsShift  int
	dxGroup   int
	unpack    func()
	group     func(name string, k int)
}

// xr is the kernel of groups·8 + r tokens (r = 0…7): per super-block the unpacking, then
// groups of eight tokens and one of r, the accumulators in the scratch at sAcc.
func xr(m multi, r int) {
	fmt.Fprintf(&b, `
// func %[2]s%[1]d(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)
// 16 rows × groups·8 + %[1]d tokens (token t's codes at q + t·qstride; s the 64-byte aligned
// scratch): y[t·ystride + i] = row i's product with token t.
TEXT ·%[2]s%[1]d(SB), NOSPLIT, $56-80
`, r, m.fn)
	// Locals: qb (codes of the tile's first token at the super-block), opb (its ops), the
	// super-blocks left, the row-0 pointer, the prefetch pointer, the tokens.
	const qb, opb, cnt, row, pf, tn = "qb-8(SP)", "opb-16(SP)", "cnt-24(SP)", "row-32(SP)", "pf-40(SP)", "tn-48(SP)"
	l := func(name string) string { return fmt.Sprintf("%s%d%s", m.label, r, name) }
	p("MOVQ s+64(FP), DI")
	p("MOVQ groups+72(FP), CX")
	p("SHLQ $3, CX")
	if r > 0 {
		p("ADDQ $%d, CX", r)
	}
	p("MOVQ CX, %s", tn)
	p("VPXORD Z0, Z0, Z0")
	p("LEAQ %d(DI), R13", sAcc)
	b.WriteString(l("zero") + ":\n")
	p("VMOVAPS Z0, (R13)")
	p("ADDQ $64, R13")
	p("DECQ CX")
	p("JNZ %s", l("zero"))
	p("MOVQ q+16(FP), R9")
	p("MOVQ R9, %s", qb)
	p("MOVQ ops+32(FP), DX")
	p("MOVQ DX, %s", opb)
	p("MOVQ nb+40(FP), CX")
	p("MOVQ CX, %s", cnt)
	setupRows("w+0(FP)", "rowBytes+8(FP)")
	p("MOVQ SI, %s", row)
	p("MOVQ R14, %s", pf)
	b.WriteString(l("block") + ":\n")
	p("MOVQ %s, SI", row)
	p("MOVQ rowBytes+8(FP), BX")
	p("LEAQ (BX)(BX*2), AX")
	p("LEAQ (SI)(BX*4), R11")
	p("LEAQ (R11)(BX*4), R12")
	p("LEAQ (R12)(BX*4), R13")
	p("MOVQ %s, R14", pf)
	m.unpack()
	advanceRows()
	p("MOVQ SI, %s", row)
	p("MOVQ R14, %s", pf)
	// Groups: R9 codes, DX integer operands, CX d values, R13 accumulators, BX the groups left.
	p("MOVQ qstride+24(FP), R8")
	p("MOVQ %s, R9", qb)
	p("MOVQ %s, DX", opb)
	p("MOVQ %s, AX", tn)
	p("SHLQ $%d, AX", m.opsShift) // the d values' offset
	p("LEAQ (DX)(AX*1), CX")
	p("LEAQ %d(DI), R13", sAcc)
	p("MOVQ groups+72(FP), BX")
	p("TESTQ BX, BX")
	p("JZ %s", l("rest"))
	b.WriteString(l("group") + ":\n")
	m.group(l("sub8"), 8)
	// Next group: codes 256 back and 8 tokens on, integer operands and d values 8 tokens on.
	p("SUBQ $256, R9")
	p("LEAQ (R9)(R8*8), R9")
	p("ADDQ $%d, DX", 8<<m.opsShift-m.dxGroup)
	p("ADDQ $32, CX")
	p("ADDQ $512, R13")
	p("DECQ BX")
	p("JNZ %s", l("group"))
	b.WriteString(l("rest") + ":\n")
	if r > 0 {
		m.group(l("subr"), r)
		p("ADDQ $%d, CX", 4*r)
	}
	// Next super-block: codes 256 on, ops past the d values (CX).
	p("ADDQ $256, %s", qb)
	p("MOVQ CX, %s", opb)
	p("DECQ %s", cnt)
	p("JNZ %s", l("block"))
	// Store the accumulators.
	p("MOVQ y+48(FP), SI")
	p("MOVQ ystride+56(FP), BX")
	p("SHLQ $2, BX")
	p("MOVQ %s, CX", tn)
	p("LEAQ %d(DI), R13", sAcc)
	b.WriteString(l("store") + ":\n")
	p("VMOVAPS (R13), Z0")
	p("VMOVUPS Z0, (SI)")
	p("ADDQ $64, R13")
	p("ADDQ BX, SI")
	p("DECQ CX")
	p("JNZ %s", l("store"))
	p("VZEROUPPER")
	p("RET")
}

// write writes out (generated by gen): the one-token kernel x1, then the kernels of
// groups·8 + r tokens for r = 0…7.
func write(out, gen string, x1 func(), m multi) {
	fmt.Fprintf(&b, `// Code generated by %s; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"
`, gen)
	x1()
	for r := 0; r < 8; r++ {
		xr(m, r)
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		panic(err)
	}
}
