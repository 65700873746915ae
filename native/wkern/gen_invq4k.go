//go:build ignore

// gen_invq4k writes invq4ktile_amd64.s: the batch-invariant Q4_K tiles for CPUs with AVX-512
// VNNI (contract in invq4ktile_amd64.go), built as gen_invq6.go builds Q6_K's. 16 weight rows,
// one per zmm lane, read straight from the memory-mapped matrix (no repacking): per super-block
// each row's 144 bytes are loaded 16 at a time and transposed in registers (lane i of a
// register holds four bytes of row i). The 16 header bytes give per lane the f16 scales d and
// dmin and the twelve bytes of 6-bit sub-block scales and mins, unpacked in place (sc_j and m_j
// for the eight sub-blocks of 32 values); the nibbles give the 4-bit codes, four per dword
// lane, as unsigned bytes 0…15 (code vector c of sub-block j holds values 32j + 4c … 32j + 4c + 3).
// Then per token t
//
//	SQ = Σ_j sc_j·Σ_c VPDPBUSD(codes_jc, q_t[32j + 4c …])   (VPMULLD per sub-block, exact int32)
//	SM = Σ_j m_j·s_j                                       (four VPDPWSSD on word pairs of m_j
//	                                                        and the token's 32-code sums s_j)
//
// and once per super-block x = fnmadd(float32(SM), dmin, float32(SQ)·dw),
// acc = fma(x, d_t, acc), one accumulator per token and row. The integer sums are exact
// (|SQ| ≤ 8·63·32·15·127 < 2³¹, |SM| ≤ 8·63·32·127), so the order in which a kernel forms them
// changes nothing; the float operations are the same per token in every kernel, so each output
// is the same bits whatever the tile.
//
// The one-token kernel forms each pair of sub-blocks' codes and feeds them straight into four
// chains (two per sub-block, summed before the scale). The multi-token kernels unpack the
// super-block once into a scratch block (the 32 transposed nibble vectors, sc_j as int32, the
// mins' word pairs, dw and dmin) and run their tokens in groups of up to eight against it, a
// pair of sub-blocks a step: each nibble vector loaded once and split into its two code
// vectors (three operations shared by the group's tokens), sixteen independent VPDPBUSD
// chains in flight, each group's token accumulators kept in the scratch between super-blocks.
//
// Costs (AMD Zen 5, thread CPU time, 2048×2048): the one-token kernel takes about 0.6 of the
// row pairs' one-token time it replaces (and less than MulRows' one-token kernel); the
// multi-token kernels add about 0.15 of that per token, on top of an unpacking that costs
// less than the one-token kernel. A step of the group loop (a pair of sub-blocks, eight
// tokens) issues 138 vector loads (128 activation broadcasts, 8 nibble vectors, 2 scales)
// against 144 multiplier µops (128 VPDPBUSD, 16 VPMULLD). Storing the nibbles rather than the
// codes (the split moved into the group loop) halves the unpacking's stores and the loop's
// code loads: 16 tokens' products ~8 % faster, 2 tokens' ~20 %. One change measured no faster
// and was dropped: two VPDPBUSD chains per token and sub-block (even and odd code vectors,
// halving each chain's latency), so the loop is not bound by the chains' latency. On Intel
// cores with AVX-512 (not measured; instruction tables) 512-bit VPDPBUSD, VPDPWSSD and VPMULLD
// (two µops) share port 0: 84 port-0 µops per token, 16 rows and super-block, against 144 for
// the row kernels' VPMADDUBSW + VPMADDWD/VPDPWSSD (dot_amd64.s, rowsQ4_KAVX512).
//
// Run with `go generate ./native/wkern` (with gen_ktile.go, the parts shared with gen_invq6.go).
package main

// The super-block's bytes (gen_ktile.go).
const blockBytes = 144

// masks are the constants: 0x0f, 0x3f, 0xc0 in every byte and 0x00ff in every word.
type masks struct{ m0f, m3f, mc0, mff int }

func setMasks(m masks) {
	for _, c := range []struct {
		v   string
		reg int
	}{{"0x0f0f0f0f", m.m0f}, {"0x3f3f3f3f", m.m3f}, {"0xc0c0c0c0", m.mc0}, {"0x00ff00ff", m.mff}} {
		p("MOVL $%s, R8", c.v)
		p("VPBROADCASTD R8, %s", z(c.reg))
	}
}

// header unpacks the 16 rows' first 16 bytes (d, dmin, the 12 scale bytes): dw and dmin as
// float32, scLo the bytes sc_0…sc_3, scHi sc_4…sc_7 (each 0…63), mw[k] the mins as word pairs
// (m0, m2), (m1, m3), (m4, m6), (m5, m7). tmp holds six scratch registers, t4 four more.
func header(m masks, dw, dmin, scLo, scHi int, mw [4]int, tmp [6]int, t4 [4]int) {
	h0, h1, h2, h3 := t4[0], t4[1], t4[2], t4[3]
	loadT(0, [4]int{h0, h1, h2, h3}, tmp)
	p("VPMOVDW %s, Y%d", z(h0), dw)
	p("VCVTPH2PS Y%d, %s", dw, z(dw))
	p("VPSRLD $16, %s, %s", z(h0), z(h0))
	p("VPMOVDW %s, Y%d", z(h0), dmin)
	p("VCVTPH2PS Y%d, %s", dmin, z(dmin))
	// sc_j = s[j] & 63 (j < 4); s[j+4] & 15 | (s[j−4] >> 6) << 4 (j ≥ 4).
	p("VPANDD %s, %s, %s", z(m.m3f), z(h1), z(scLo))
	p("VPANDD %s, %s, %s", z(m.mc0), z(h1), z(scHi))
	p("VPSRLD $2, %s, %s", z(scHi), z(scHi))
	p("VPTERNLOGD %s, %s, %s, %s", sel, z(m.m0f), z(h3), z(scHi))
	// m_j = s[j+4] & 63 (j < 4); s[j+4] >> 4 | (s[j] >> 6) << 4 (j ≥ 4).
	lo, hi, t := tmp[0], tmp[1], tmp[2]
	p("VPANDD %s, %s, %s", z(m.m3f), z(h2), z(lo))
	p("VPANDD %s, %s, %s", z(m.mc0), z(h2), z(hi))
	p("VPSRLD $2, %s, %s", z(hi), z(hi))
	p("VPSRLD $4, %s, %s", z(h3), z(t))
	p("VPTERNLOGD %s, %s, %s, %s", sel, z(m.m0f), z(t), z(hi))
	p("VPANDD %s, %s, %s", z(m.mff), z(lo), z(mw[0]))
	p("VPSRLD $8, %s, %s", z(lo), z(mw[1]))
	p("VPANDD %s, %s, %s", z(m.mff), z(mw[1]), z(mw[1]))
	p("VPANDD %s, %s, %s", z(m.mff), z(hi), z(mw[2]))
	p("VPSRLD $8, %s, %s", z(hi), z(mw[3]))
	p("VPANDD %s, %s, %s", z(m.mff), z(mw[3]), z(mw[3]))
}

// scale writes sub-block j's scale (byte j%4 of scLo or scHi) as int32 into dst.
func scale(scLo, scHi, j, dst int) {
	src := scLo
	if j >= 4 {
		src = scHi
	}
	if sh := 24 - 8*(j%4); sh > 0 {
		p("VPSLLD $%d, %s, %s", sh, z(src), z(dst))
		p("VPSRLD $24, %s, %s", z(dst), z(dst))
	} else {
		p("VPSRLD $24, %s, %s", z(src), z(dst))
	}
}

// codes forms the codes of the 16 nibble bytes at 16 + 32p + 16h: lo(c, reg) gets code vector
// c = 4h + g of sub-block 2p (low nibbles), hi(c, reg) that of sub-block 2p+1 (high nibbles).
func codes(pp, h int, m masks, out [4]int, tmp [6]int, x, y int, lo, hi func(c, reg int)) {
	loadT(16+32*pp+16*h, out, tmp)
	for g := 0; g < 4; g++ {
		p("VPANDD %s, %s, %s", z(m.m0f), z(out[g]), z(x))
		lo(4*h+g, x)
		p("VPSRLD $4, %s, %s", z(out[g]), z(y))
		p("VPANDD %s, %s, %s", z(m.m0f), z(y), z(y))
		hi(4*h+g, y)
	}
}

// x1 is the one-token kernel. Z0 acc, Z1 SQ, Z2 dw, Z3 dmin, Z4 scLo, Z5 scHi, Z6…Z9 masks,
// Z10 float32(SM), Z11…Z16 the transposes' temporaries, Z17…Z24 a pair's nibble dwords (the
// header's temporaries before), Z25…Z28 the chains, Z29, Z30 codes, Z31 a scale.
func x1() {
	b.WriteString(`
// func invQ4_Kx1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, ops unsafe.Pointer, nb int, y unsafe.Pointer)
// 16 rows × 1 token: ops holds per super-block the token's 32-code sums as word pairs
// (s0, s2), (s1, s3), (s4, s6), (s5, s7), then d_t (20 bytes); y[i] = row i's product.
TEXT ·invQ4_Kx1(SB), NOSPLIT, $0-48
`)
	setupRows("w+0(FP)", "rowBytes+8(FP)")
	p("MOVQ q+16(FP), DI")
	p("MOVQ ops+24(FP), DX")
	p("MOVQ nb+32(FP), CX")
	m := masks{6, 7, 8, 9}
	setMasks(m)
	p("VPXORD Z0, Z0, Z0")
	b.WriteString("q4kx1loop:\n")
	tmp := [6]int{11, 12, 13, 14, 15, 16}
	mw := [4]int{17, 18, 19, 20}
	header(m, 2, 3, 4, 5, mw, tmp, [4]int{21, 22, 23, 24})
	p("VPXORD Z10, Z10, Z10")
	for k := 0; k < 4; k++ {
		p("VPDPWSSD.BCST %d(DX), %s, Z10", 4*k, z(mw[k]))
	}
	p("VCVTDQ2PS Z10, Z10")
	p("VPXORD Z1, Z1, Z1")
	for pp := 0; pp < 4; pp++ {
		prefetchPart(pp, 4)
		// Chains: Z25 + h sub-block 2p, Z27 + h sub-block 2p+1 (started after the loads).
		for h := 0; h < 2; h++ {
			out := [4]int{17 + 4*h, 18 + 4*h, 19 + 4*h, 20 + 4*h}
			started := [2]bool{}
			start := func(s int) {
				if !started[s] {
					started[s] = true
					p("VPXORD %s, %s, %s", z(25+2*s+h), z(25+2*s+h), z(25+2*s+h))
				}
			}
			codes(pp, h, m, out, tmp, 29, 30, func(c, reg int) {
				start(0)
				p("VPDPBUSD.BCST %d(DI), %s, %s", 64*pp+4*c, z(reg), z(25+h))
			}, func(c, reg int) {
				start(1)
				p("VPDPBUSD.BCST %d(DI), %s, %s", 64*pp+32+4*c, z(reg), z(27+h))
			})
		}
		for s := 0; s < 2; s++ {
			c0, c1 := 25+2*s, 26+2*s
			p("VPADDD %s, %s, %s", z(c1), z(c0), z(c0))
			scale(4, 5, 2*pp+s, 31)
			p("VPMULLD Z31, %s, %s", z(c0), z(c0))
			p("VPADDD %s, Z1, Z1", z(c0))
		}
	}
	p("VCVTDQ2PS Z1, Z1")
	p("VMULPS Z2, Z1, Z1")
	p("VFNMADD231PS Z3, Z10, Z1")
	p("VFMADD231PS.BCST 16(DX), Z1, Z0")
	advanceRows()
	p("ADDQ $256, DI")
	p("ADDQ $20, DX")
	p("DECQ CX")
	p("JNZ q4kx1loop")
	p("MOVQ y+40(FP), DI")
	p("VMOVUPS Z0, (DI)")
	p("VZEROUPPER")
	p("RET")
}

// Scratch layout of the multi-token kernels (64-byte aligned): the nibble dwords at 0, vector
// 4h + g of sub-block pair p (bytes 16 + 32p + 16h + 4g … of each row) at 64·(8p + 4h + g);
// sc_j (int32) at 2048 + 64j; the mins' four word-pair vectors at 2560, dw at 2816, dmin at
// 2880; the accumulator of token t at 2944 + 64t.
const (
	sSc   = 2048
	sMW   = 2560
	sDW   = 2816
	sDMin = 2880
	sAcc  = 2944
)

// unpack writes the super-block's nibbles, scales, mins, dw and dmin into the scratch at DI:
// the codes are formed from the nibbles in the group loop, so the unpacking stores half as
// many vectors.
func unpack(m masks) {
	tmp := [6]int{0, 1, 2, 3, 4, 5}
	mw := [4]int{6, 7, 8, 9}
	header(m, 10, 11, 12, 13, mw, tmp, [4]int{14, 15, 16, 17})
	for j := 0; j < 8; j++ {
		scale(12, 13, j, 18+j%4)
		p("VMOVDQA32 %s, %d(DI)", z(18+j%4), sSc+64*j)
	}
	for k := 0; k < 4; k++ {
		p("VMOVDQA32 %s, %d(DI)", z(mw[k]), sMW+64*k)
	}
	p("VMOVAPS Z10, %d(DI)", sDW)
	p("VMOVAPS Z11, %d(DI)", sDMin)
	for pp := 0; pp < 4; pp++ {
		prefetchPart(pp, 4)
		for h := 0; h < 2; h++ {
			out := [4]int{14 + 4*h, 15 + 4*h, 16 + 4*h, 17 + 4*h}
			loadT(16+32*pp+16*h, out, tmp)
			for g := 0; g < 4; g++ {
				p("VMOVDQA32 %s, %d(DI)", z(out[g]), 64*(8*pp+4*h+g))
			}
		}
	}
}

// group runs K tokens against the unpacked super-block, a pair of sub-blocks a step: chains
// Z0…Z(K−1) (sub-block 2p) and Z8…Z(8+K−1) (2p + 1), sums Z16…Z(16+K−1), nibbles Z24, codes
// Z25, Z26, the mask 0x0f Z27, the scales Z28, Z29. Entry: R9 the group's first token's codes
// at the super-block, DX its sums' word pairs (token k's at DX + 16k), CX its d values (token
// k's at CX + 4k), R13 its accumulators. R9 is left advanced by 256.
func group(name string, k int) {
	setTokAddr()
	p("MOVL $0x0f0f0f0f, R12")
	p("VPBROADCASTD R12, Z27")
	for t := 0; t < k; t++ {
		p("VPXORD %s, %s, %s", z(16+t), z(16+t), z(16+t))
	}
	p("MOVQ DI, R11")
	p("LEAQ %d(DI), R14", sSc)
	p("MOVL $4, R12")
	b.WriteString(name + ":\n")
	for t := 0; t < k; t++ {
		p("VPXORD %s, %s, %s", z(t), z(t), z(t))
		p("VPXORD %s, %s, %s", z(8+t), z(8+t), z(8+t))
	}
	for c := 0; c < 8; c++ {
		p("VMOVDQA32 %d(R11), Z24", 64*c)
		p("VPANDD Z27, Z24, Z25")
		p("VPSRLD $4, Z24, Z26")
		p("VPANDD Z27, Z26, Z26")
		for t := 0; t < k; t++ {
			p("VPDPBUSD.BCST %d%s, Z25, %s", 4*c, tokAddr[t], z(t))
		}
		for t := 0; t < k; t++ {
			p("VPDPBUSD.BCST %d%s, Z26, %s", 32+4*c, tokAddr[t], z(8+t))
		}
	}
	p("VMOVDQA32 (R14), Z28")
	p("VMOVDQA32 64(R14), Z29")
	for t := 0; t < k; t++ {
		p("VPMULLD Z28, %s, %s", z(t), z(t))
		p("VPMULLD Z29, %s, %s", z(8+t), z(8+t))
		p("VPADDD %s, %s, %s", z(t), z(16+t), z(16+t))
		p("VPADDD %s, %s, %s", z(8+t), z(16+t), z(16+t))
	}
	p("ADDQ $64, R9")
	p("ADDQ $64, R10")
	p("ADDQ $64, R15")
	p("ADDQ $512, R11")
	p("ADDQ $128, R14")
	p("DECL R12")
	p("JNZ %s", name)
	for kk := 0; kk < 4; kk++ {
		p("VMOVDQA32 %d(DI), %s", sMW+64*kk, z(24+kk))
	}
	p("VMOVAPS %d(DI), Z28", sDW)
	p("VMOVAPS %d(DI), Z29", sDMin)
	for t := 0; t < k; t++ {
		p("VPXORD %s, %s, %s", z(t), z(t), z(t))
		for kk := 0; kk < 4; kk++ {
			p("VPDPWSSD.BCST %d(DX), %s, %s", 16*t+4*kk, z(24+kk), z(t))
		}
		p("VCVTDQ2PS %s, %s", z(t), z(t))
		p("VCVTDQ2PS %s, %s", z(16+t), z(16+t))
		p("VMULPS Z28, %s, %s", z(16+t), z(16+t))
		p("VFNMADD231PS Z29, %s, %s", z(t), z(16+t))
		p("VMOVAPS %d(R13), %s", 64*t, z(30+t%2))
		p("VFMADD231PS.BCST %d(CX), %s, %s", 4*t, z(16+t), z(30+t%2))
		p("VMOVAPS %s, %d(R13)", z(30+t%2), 64*t)
	}
}

func main() {
	write("invq4ktile_amd64.s", "gen_invq4k.go", x1, multi{
		fn: "invQ4_Kx8r", label: "q4kr", opsShift: 4, dxGroup: 0, // sums' word pairs: 16 bytes a token
		unpack: func() {
			m := masks{28, 29, 30, 31}
			setMasks(m)
			unpack(m)
		},
		group: group,
	})
}
