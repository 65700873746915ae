//go:build ignore

// gen_invq6 writes invq6tile_amd64.s: the batch-invariant Q6_K tiles for CPUs with AVX-512
// VNNI (contract in invq6tile_amd64.go). 16 weight rows, one per zmm lane, read straight from
// the memory-mapped matrix (no repacking): per super-block each row's 210 bytes are loaded 16 at
// a time and transposed in registers (lane i of a register holds four bytes of row i), and the
// 6-bit codes are formed in place, four per dword lane, as unsigned bytes 0…63 (register (G, j)
// holds values 16G + 4j … 16G + 4j + 3 of sub-block G). Then per token t and sub-block G
//
//	i_G = −32·Σq_G + Σ_j VPDPBUSD(codes_Gj, q_t[16G + 4j …])     (exact: Σ (code − 32)·q)
//	I   = Σ_G sc_G·i_G                                          (VPMULLD, exact int32)
//
// and once per super-block acc = fma(float32(I)·d_t, dw, acc), one accumulator per token and
// row. The integer sums are exact (|I| ≤ 16·16·32·127·128 < 2³¹), so the order in which a
// kernel forms them changes nothing; the float operations are the same per token in every
// kernel, so each output is the same bits whatever the tile.
//
// The one-token kernel forms each quarter's codes and feeds them straight into its four
// sub-block chains. The multi-token kernels unpack the super-block once into a scratch block
// (per sub-block G: four code vectors and sc_G as int32; then dw) and run their tokens in
// groups of up to eight against it, eight independent VPDPBUSD chains in flight (VPDPBUSD's
// latency is 4–5 cycles; AMD Zen 5 issues two a cycle, Intel cores one on port 0), each
// group's token accumulators kept in the scratch between super-blocks.
//
// Costs (AMD Zen 5, thread CPU time): a step of the group loop (one sub-block, eight tokens)
// issues 45 vector loads (32 activation broadcasts, 8 chain starts, 4 code vectors, the scale)
// against 40 multiplier µops (32 VPDPBUSD, 8 VPMULLD); at two vector loads a cycle the loads
// bound it, and it runs within ~10 % of that bound in the L2 cache. Two changes that cut or
// hid work measured no faster and were dropped: chains started by zeroing (codes − 32 against
// the activations + 128 as unsigned bytes, the weights' offset added once per super-block: 37
// loads a step) and the sub-block steps software-pipelined (each set's multiplies issued after
// the next set's first VPDPBUSD). On Intel cores with AVX-512 (not measured; instruction
// tables) 512-bit VPDPBUSD and VPMULLD (two µops) share port 0: 96 port-0 µops per token, 16
// rows and super-block, against 128 for the VPMADDUBSW + VPDPWSSD kernels (vnniq6_amd64.s).
//
// Run with `go generate ./native/wkern` (with gen_ktile.go, the parts shared with gen_invq4k.go).
package main

// The super-block's bytes (gen_ktile.go).
const blockBytes = 210

// loadDW loads the 16 rows' f16 super-block scales (bytes 208, 209, the top of the 16 bytes at
// 194: reading at 208 would pass the row's end) into dst as float32.
func loadDW(dst int, tmp [6]int) {
	a0, a1, a2, a3, u0, u1 := tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5]
	load4(194, 0, a0)
	load4(194, 1, a1)
	load4(194, 2, a2)
	load4(194, 3, a3)
	p("VPUNPCKHDQ %s, %s, %s", z(a1), z(a0), z(u0))
	p("VPUNPCKHDQ %s, %s, %s", z(a3), z(a2), z(u1))
	p("VPUNPCKHQDQ %s, %s, %s", z(u1), z(u0), z(dst))
	p("VPSRLD $16, %s, %s", z(dst), z(dst))
	p("VPMOVDW %s, Y%d", z(dst), dst)
	p("VCVTPH2PS Y%d, %s", dst, z(dst))
}

// quarter forms the codes of quarter (n, h) of the super-block: sub-blocks G = 8n + h + 2s for
// s = 0…3, four code vectors each (j = 0…3). ql bytes 64n + 16h + 4j … (low nibbles: G for s = 0,
// high: s = 2) and 64n + 32 + 16h + 4j … (s = 1, 3), qh bytes 128 + 32n + 16h + 4j … (bits 0-1,
// 2-3, 4-5, 6-7 for s = 0…3). use(s, j, r) consumes code vector (G, j) in register r before the
// next j's codes are formed (it may not write r's inputs).
type regs struct {
	qa, qb, h     [4]int
	tmp           [6]int
	x, y, zz, w   int
	m0f, m33, mcc int
}

func quarter(n, h int, r regs, use func(s, j, reg int)) {
	loadT(64*n+16*h, r.qa, r.tmp)
	loadT(64*n+32+16*h, r.qb, r.tmp)
	loadT(128+32*n+16*h, r.h, r.tmp)
	for j := 0; j < 4; j++ {
		qa, qb, hh := z(r.qa[j]), z(r.qb[j]), z(r.h[j])
		x, y, zz, w := z(r.x), z(r.y), z(r.zz), z(r.w)
		p("VPANDD %s, %s, %s", z(r.m33), hh, x)  // x = qh & 0x33: bits 0-1 (s = 0) and 4-5 (s = 2)
		p("VPANDD %s, %s, %s", z(r.mcc), hh, hh) // qh & 0xcc: bits 2-3 (s = 1) and 6-7 (s = 3)
		p("VPSLLD $4, %s, %s", x, y)
		p("VPTERNLOGD %s, %s, %s, %s", sel, z(r.m0f), qa, y) // s = 0: ql & 15 | (qh & 3) << 4
		use(0, j, r.y)
		p("VPSLLD $2, %s, %s", hh, w)
		p("VPTERNLOGD %s, %s, %s, %s", sel, z(r.m0f), qb, w) // s = 1: ql' & 15 | (qh >> 2 & 3) << 4
		use(1, j, r.w)
		p("VPSRLD $4, %s, %s", qa, zz)
		p("VPTERNLOGD %s, %s, %s, %s", sel, z(r.m0f), zz, x) // s = 2: ql >> 4 | (qh >> 4 & 3) << 4
		use(2, j, r.x)
		p("VPSRLD $2, %s, %s", hh, hh)
		p("VPSRLD $4, %s, %s", qb, zz)
		p("VPTERNLOGD %s, %s, %s, %s", sel, z(r.m0f), zz, hh) // s = 3: ql' >> 4 | (qh >> 6) << 4
		use(3, j, r.h[j])
	}
}

// scale writes sub-block G's int8 scale, sign-extended, from byte G%4 of s[G/4] into dst.
func scale(s [4]int, g, dst int) {
	if sh := 24 - 8*(g%4); sh > 0 {
		p("VPSLLD $%d, %s, %s", sh, z(s[g/4]), z(dst))
		p("VPSRAD $24, %s, %s", z(dst), z(dst))
	} else {
		p("VPSRAD $24, %s, %s", z(s[g/4]), z(dst))
	}
}

// masks sets the code masks: 0x0f, 0x33, 0xcc in every byte.
func masks(m0f, m33, mcc int) {
	p("MOVL $0x0f0f0f0f, R8")
	p("VPBROADCASTD R8, %s", z(m0f))
	p("MOVL $0x33333333, R8")
	p("VPBROADCASTD R8, %s", z(m33))
	p("MOVL $0xcccccccc, R8")
	p("VPBROADCASTD R8, %s", z(mcc))
}

// x1 is the one-token kernel. Z0 acc, Z1 I, Z2…Z5 the scale dwords, Z6 dw, Z7…Z9 masks, Z10…Z21
// the quarter's ql/qh dwords, Z22…Z25 the four sub-block chains, Z26…Z29 code temporaries, Z30
// a scale; the transposes' temporaries Z22…Z27 (free while the quarter loads).
func x1() {
	b.WriteString(`
// func invQ6_Kx1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, ops unsafe.Pointer, nb int, y unsafe.Pointer)
// 16 rows × 1 token: ops holds per super-block c_G = −32·Σq_G (16 int32) then d_t (68 bytes);
// y[i] = row i's product.
TEXT ·invQ6_Kx1(SB), NOSPLIT, $0-48
`)
	setupRows("w+0(FP)", "rowBytes+8(FP)")
	p("MOVQ q+16(FP), DI")
	p("MOVQ ops+24(FP), DX")
	p("MOVQ nb+32(FP), CX")
	masks(7, 8, 9)
	p("VPXORD Z0, Z0, Z0")
	b.WriteString("q6x1loop:\n")
	tmp := [6]int{22, 23, 24, 25, 26, 27}
	p("VPXORD Z1, Z1, Z1")
	loadT(192, [4]int{2, 3, 4, 5}, tmp)
	loadDW(6, tmp)
	r := regs{qa: [4]int{10, 11, 12, 13}, qb: [4]int{14, 15, 16, 17}, h: [4]int{18, 19, 20, 21},
		tmp: tmp, x: 26, y: 27, zz: 28, w: 29, m0f: 7, m33: 8, mcc: 9}
	for n := 0; n < 2; n++ {
		for h := 0; h < 2; h++ {
			prefetchPart(2*n+h, 4)
			// The chains start after the loads (their registers are the transposes' temporaries).
			started := [4]bool{}
			quarter(n, h, r, func(s, j, reg int) {
				g := 8*n + h + 2*s
				if !started[s] {
					started[s] = true
					p("VPBROADCASTD %d(DX), %s", 4*g, z(22+s))
				}
				p("VPDPBUSD.BCST %d(DI), %s, %s", 16*g+4*j, z(reg), z(22+s))
			})
			for s := 0; s < 4; s++ {
				g := 8*n + h + 2*s
				scale([4]int{2, 3, 4, 5}, g, 30)
				p("VPMULLD Z30, %s, %s", z(22+s), z(22+s))
				p("VPADDD %s, Z1, Z1", z(22+s))
			}
		}
	}
	p("VCVTDQ2PS Z1, Z1")
	p("VMULPS.BCST 64(DX), Z1, Z1")
	p("VFMADD231PS Z6, Z1, Z0")
	advanceRows()
	p("ADDQ $256, DI")
	p("ADDQ $68, DX")
	p("DECQ CX")
	p("JNZ q6x1loop")
	p("MOVQ y+40(FP), DI")
	p("VMOVUPS Z0, (DI)")
	p("VZEROUPPER")
	p("RET")
}

// Scratch layout of the multi-token kernels (64-byte aligned): per sub-block G at 320·G its four
// code vectors and sc_G (int32) at +256; dw at 5120; the accumulator of token t at 5184 + 64t.
const (
	sDW  = 5120
	sAcc = 5184
)

// unpack writes the super-block's codes, scales and dw into the scratch at DI.
func unpack() {
	tmp := [6]int{24, 25, 26, 27, 28, 29}
	loadT(192, [4]int{0, 1, 2, 3}, tmp)
	for g := 0; g < 16; g++ {
		scale([4]int{0, 1, 2, 3}, g, 4)
		p("VMOVDQA32 Z4, %d(DI)", 320*g+256)
	}
	loadDW(4, tmp)
	p("VMOVAPS Z4, %d(DI)", sDW)
	r := regs{qa: [4]int{8, 9, 10, 11}, qb: [4]int{12, 13, 14, 15}, h: [4]int{16, 17, 18, 19},
		tmp: tmp, x: 20, y: 21, zz: 22, w: 23, m0f: 5, m33: 6, mcc: 7}
	for n := 0; n < 2; n++ {
		for h := 0; h < 2; h++ {
			prefetchPart(2*n+h, 4)
			quarter(n, h, r, func(s, j, reg int) {
				g := 8*n + h + 2*s
				p("VMOVDQA32 %s, %d(DI)", z(reg), 320*g+64*j)
			})
		}
	}
}

// group runs K tokens against the unpacked super-block: chains Z0…Z(K−1), sums Z8…Z(8+K−1),
// codes Z16…Z19, sc Z20, dw Z21. Entry: R9 the group's first token's codes at the super-block,
// DX its c values (token k's c_G at DX + 64k + 4G), CX its d values (token k's at CX + 4k),
// R13 its accumulators. R9 and DX are left advanced by 256 and 64.
func group(name string, k int) {
	setTokAddr()
	for t := 0; t < k; t++ {
		p("VPXORD %s, %s, %s", z(8+t), z(8+t), z(8+t))
	}
	p("MOVQ DI, R11")
	p("MOVL $16, R12")
	b.WriteString(name + ":\n")
	p("VMOVDQA32 256(R11), Z20")
	for t := 0; t < k; t++ {
		p("VPBROADCASTD %d(DX), %s", 64*t, z(t))
	}
	for j := 0; j < 4; j++ {
		p("VMOVDQA32 %d(R11), %s", 64*j, z(16+j))
		for t := 0; t < k; t++ {
			p("VPDPBUSD.BCST %d%s, %s, %s", 4*j, tokAddr[t], z(16+j), z(t))
		}
	}
	for t := 0; t < k; t++ {
		p("VPMULLD Z20, %s, %s", z(t), z(t))
		p("VPADDD %s, %s, %s", z(t), z(8+t), z(8+t))
	}
	p("ADDQ $16, R9")
	p("ADDQ $16, R10")
	p("ADDQ $16, R15")
	p("ADDQ $4, DX")
	p("ADDQ $320, R11")
	p("DECL R12")
	p("JNZ %s", name)
	p("VMOVAPS %d(DI), Z21", sDW)
	for t := 0; t < k; t++ {
		p("VCVTDQ2PS %s, %s", z(8+t), z(8+t))
		p("VMULPS.BCST %d(CX), %s, %s", 4*t, z(8+t), z(8+t))
		p("VMOVAPS %d(R13), %s", 64*t, z(16+t%4))
		p("VFMADD231PS Z21, %s, %s", z(8+t), z(16+t%4))
		p("VMOVAPS %s, %d(R13)", z(16+t%4), 64*t)
	}
}

func main() {
	write("invq6tile_amd64.s", "gen_invq6.go", x1, multi{
		fn: "invQ6_Kx8r", label: "q6r", opsShift: 6, dxGroup: 64, // c values: 64 bytes a token
		unpack: func() {
			masks(5, 6, 7)
			unpack()
		},
		group: group,
	})
}
