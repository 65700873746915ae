//go:build amd64 && !purego

package wkern

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/kvlab/kvlab/internal/keep"
	"github.com/kvlab/kvlab/native/gguf"
)

//go:noescape
func vnniGemm16x8(pk, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, first bool)

//go:noescape
func vnniGemm16x8h(pk, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, first bool)

// vnniKC is the number of columns of a packed VNNI sliver: 16 rows of 1024 values are 20 KiB
// (blocks of 32) or 24 KiB (blocks of 16) of codes and scales, L1-resident while eight tokens
// at a time stream past.
const vnniKC = 1024

// vnniScratch is mulVNNIGEMM's packed sliver, recycled across products.
type vnniScratch struct {
	pk [vnniKC / 16 * 96]uint32
	// tmp is a short tile's outputs (in the scratch: the kernels are called through a func
	// value, through which a stack array escapes).
	tmp [8 * 16]float32
}

var vnniScratches keep.Pool[vnniScratch]

// vnniLayout is how a weight type enters the VNNI GEMM: bv values share one pair of row
// scales (a block: 32 values, or 16 for Q6_K), and pack repacks blocks b0 … b0+nb−1 of rows
// r0 … r0+mr−1 into the kernel's sliver (rows past mr zero): per block bv/4 groups of 16
// words, byte j of word pk[16g + i] the unsigned code of the block's value 4g+j in row i,
// then the 16 rows' scales dw and offsets ow as float32 bits, such that the row's block dot with token codes c
// is dw·Σ code·c + ow·Σ c.
type vnniLayout struct {
	bv   int
	pack func(pk []uint32, w []byte, rowBytes, r0, mr, b0, nb int)
	// small is the product of fewer than eight tokens (nil: the row dots).
	small func(k Kernel, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int)
}

// vnniLayouts holds the weight types the VNNI GEMM takes (vnni_amd64.go's init wires them).
var vnniLayouts = map[gguf.Type]vnniLayout{
	gguf.Q8_0: {bv: 32, pack: packVNNIQ8_0, small: mulQ8_0GEMM},
	gguf.Q4_0: {bv: 32, pack: packVNNIQ4_0, small: mulQ4_0GEMM},
	gguf.Q4_K: {bv: 32, pack: packVNNIQ4_K},
	gguf.Q6_K: {bv: 16, pack: packVNNIQ6_K},
}

// mulVNNIGEMM is MulRows for the types of vnniLayouts and at least eight tokens on AVX-512
// VNNI (fewer go to the layout's small product or the row dots): an integer blocked product
// of 16-row slivers repacked with unsigned codes (the types' offsets and mins applied
// through the tokens' d·Σc) by 8 tokens at a time (vnniGemm16x8, vnniGemm16x8h for blocks of
// 16): per block and token, the 16 rows' exact integer sums Σ code·c, then y += dw·(d_t·Σ) +
// ow·(d_t·Σc) in float32. So only the float32 order of the block accumulation differs from
// the row dots. The tokens past the last multiple of eight run as one more group, padded with
// zero tokens whose outputs are dropped (one more pass over the packed sliver instead of a
// row dot per token over the weights).
func mulVNNIGEMM(k Kernel, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	l := vnniLayouts[k.typ]
	if a.N < 8 {
		if l.small != nil {
			l.small(k, y, ystride, w, rowBytes, a, lo, hi)
		} else {
			k.mulRowDots(y, ystride, w, rowBytes, a, lo, hi)
		}
		return
	}
	cols, bv := a.Cols, l.bv
	nbt := cols / bv
	bw := 4*bv + 32 // 32-bit words per packed block
	kern := vnniGemm16x8
	if bv == 16 {
		kern = vnniGemm16x8h
	}
	n8 := a.N &^ 7
	sc := vnniScratches.Get()
	defer vnniScratches.Put(sc)
	ds := a.gemmScales(bv)
	var pad []int8
	if n8 < a.N {
		pad = a.gemmPad()
	}
	tmp := &sc.tmp
	for k0 := 0; k0 < cols; k0 += vnniKC {
		kc := min(vnniKC, cols-k0)
		nb, b0 := kc/bv, k0/bv
		first := k0 == 0
		for r0 := lo; r0 < hi; r0 += 16 {
			mr := min(16, hi-r0)
			l.pack(sc.pk[:nb*bw], w, rowBytes, r0, mr, b0, nb)
			pk := unsafe.Pointer(&sc.pk[0])
			for t0 := 0; t0 < a.N; t0 += 8 {
				var q unsafe.Pointer
				if t0 < n8 {
					_ = a.Q[(t0+7)*cols+k0+kc-1]
					q = unsafe.Pointer(&a.Q[t0*cols+k0])
				} else {
					_ = pad[7*cols+k0+kc-1]
					q = unsafe.Pointer(&pad[k0])
				}
				dsp := unsafe.Pointer(&ds[(t0/8*nbt+b0)*16])
				if mr == 16 && t0 < n8 {
					_ = y[(t0+7)*ystride+r0+15]
					kern(pk, q, cols, dsp, nb, unsafe.Pointer(&y[t0*ystride+r0]), ystride, first)
					continue
				}
				kern(pk, q, cols, dsp, nb, unsafe.Pointer(&tmp[0]), 16, true)
				addTile(y, ystride, t0, r0, min(8, a.N-t0), mr, tmp[:], 16, first)
			}
		}
	}
}

// gemmScales returns the kernels' token operands of a's tokens for blocks of bv (32 or 16)
// values, in groups of eight, the last group padded with zeros (vnniTokenScales), built by the
// first caller after Prepare and shared by the workers of one product.
func (a *Act) gemmScales(bv int) []float32 {
	g, i := &a.gemm, bv/16-1
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.ok[i] {
		n8 := (a.N + 7) &^ 7
		g.vals[i] = grow(g.vals[i], n8/8*(a.Cols/bv)*16)
		vnniTokenScales(g.vals[i], a, bv, n8)
		g.ok[i] = true
	}
	return g.vals[i]
}

// gemmPad returns the codes of a's tokens past its last whole group of eight followed by zero
// codes, eight tokens in all: the last group's operand of the blocked kernels, whose padding
// tokens (scale 0) then add nothing and are not written out. Built once per Prepare, shared.
func (a *Act) gemmPad() []int8 {
	g := &a.gemm
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.padOK {
		g.pad = grow(g.pad, 8*a.Cols)
		n := copy(g.pad, a.Q[(a.N&^7)*a.Cols:a.N*a.Cols])
		clear(g.pad[n:])
		g.padOK = true
	}
	return g.pad
}

// vnniTokenScales writes the kernels' token operands of tokens t < n8 (a multiple of 8) for
// blocks of bv values: ds[(g·nb + b)·16 + j] = d and ds[(g·nb + b)·16 + 8 + j] = d·Σc of
// token 8g+j's block b (nb = a.Cols/bv; d the scale of the activation block holding it), and 0
// for the tokens past a.N.
func vnniTokenScales(ds []float32, a *Act, bv, n8 int) {
	nb := a.Cols / bv
	_ = ds[n8/8*nb*16-1]
	for t := 0; t < n8; t++ {
		o := ds[t/8*nb*16+t%8:]
		if t >= a.N {
			for b := range nb {
				o[16*b], o[16*b+8] = 0, 0
			}
			continue
		}
		if a.Format == Q8 {
			d, s := a.D[t*nb:(t+1)*nb], a.S[t*nb:(t+1)*nb]
			for b := range nb {
				o[16*b], o[16*b+8] = d[b], s[b]
			}
			continue
		}
		d, bs := a.D[t*a.Cols/256:(t+1)*a.Cols/256], a.BS[t*a.Cols/16:(t+1)*a.Cols/16]
		per := bv / 16
		for b := range nb {
			db := d[b*bv/256]
			sum := 0
			for _, v := range bs[b*per : (b+1)*per] {
				sum += int(v)
			}
			o[16*b], o[16*b+8] = db, db*float32(sum)
		}
	}
}

// vnniZeroRows clears rows mr … 15 of nb blocks of bv values (pk in 32-bit words: a block is
// 4·bv + 32 of them).
func vnniZeroRows(pk []uint32, bv, mr, nb int) {
	bw := 4*bv + 32
	for b := 0; b < nb; b++ {
		p := pk[bw*b : bw*(b+1)]
		for i := mr; i < 16; i++ {
			for k := i; k < bw; k += 16 {
				p[k] = 0
			}
		}
	}
}

// packVNNIQ8_0 is Q8_0's pack: codes +128, ow = −128·d.
func packVNNIQ8_0(pk []uint32, w []byte, rowBytes, r0, mr, b0, nb int) {
	if packVNNIAsm(gguf.Q8_0, pk, w, rowBytes, r0, mr, b0, nb, 32, 1, q8_0Bytes, -128) {
		return
	}
	vnniZeroRows(pk, 32, mr, nb)
	for i := 0; i < mr; i++ {
		row := w[(r0+i)*rowBytes+b0*q8_0Bytes : (r0+i)*rowBytes+(b0+nb)*q8_0Bytes]
		for b := 0; b < nb; b++ {
			blk := row[b*q8_0Bytes : (b+1)*q8_0Bytes]
			p := pk[160*b : 160*b+160]
			for g := 0; g < 8; g++ {
				p[16*g+i] = binary.LittleEndian.Uint32(blk[2+4*g:]) ^ 0x80808080
			}
			d := f16(blk)
			p[128+i], p[144+i] = math.Float32bits(d), math.Float32bits(-128*d)
		}
	}
}

// packVNNIAsm runs the AVX-512 pack kernel of typ (invtile_amd64.s: the rows transposed in registers
// as the tile kernels load them) for a sliver of 16 whole rows of nb blocks of bv values from
// block b0, per super-blocks of per blocks and sb bytes (one block of 18 or 34 bytes for Q4_0
// and Q8_0), with offset factor off, and reports whether it did: a short sliver, a CPU without
// the tile kernels or rows too far apart for the kernels' 32-bit gather offsets take the Go pack.
func packVNNIAsm(typ gguf.Type, pk []uint32, w []byte, rowBytes, r0, mr, b0, nb, bv, per, sb int, off float32) bool {
	if mr != 16 || nb <= 0 || !hasInvTile || 15*rowBytes > math.MaxInt32 {
		return false
	}
	_ = pk[nb*(4*bv+32)-1]
	_ = w[(r0+15)*rowBytes+(b0+nb)/per*sb-1]
	var idx [16]int32
	for i := range idx {
		idx[i] = int32(i * rowBytes)
	}
	// Called directly, not through a func value, so that idx stays on the stack.
	p, src := unsafe.Pointer(&pk[0]), unsafe.Pointer(&w[r0*rowBytes+b0/per*sb])
	switch typ {
	case gguf.Q4_0:
		packQ4_0x16(p, src, rowBytes, &idx, nb/per, off)
	case gguf.Q8_0:
		packQ8_0x16(p, src, rowBytes, &idx, nb/per, off)
	case gguf.Q4_K:
		packQ4_Kx16(p, src, rowBytes, &idx, nb/per, off)
	case gguf.Q6_K:
		packQ6_Kx16(p, src, rowBytes, &idx, nb/per, off)
	}
	return true
}

// packVNNIQ4_0 is Q4_0's pack: the nibbles as stored, ow = −8·d.
func packVNNIQ4_0(pk []uint32, w []byte, rowBytes, r0, mr, b0, nb int) {
	if packVNNIAsm(gguf.Q4_0, pk, w, rowBytes, r0, mr, b0, nb, 32, 1, q4_0Bytes, -8) {
		return
	}
	vnniZeroRows(pk, 32, mr, nb)
	for i := 0; i < mr; i++ {
		row := w[(r0+i)*rowBytes+b0*q4_0Bytes : (r0+i)*rowBytes+(b0+nb)*q4_0Bytes]
		for b := 0; b < nb; b++ {
			blk := row[b*q4_0Bytes : (b+1)*q4_0Bytes]
			p := pk[160*b : 160*b+160]
			for g := 0; g < 4; g++ {
				u := binary.LittleEndian.Uint32(blk[2+4*g:])
				p[16*g+i], p[16*(g+4)+i] = u&0x0f0f0f0f, u>>4&0x0f0f0f0f
			}
			d := f16(blk)
			p[128+i], p[144+i] = math.Float32bits(d), math.Float32bits(-8*d)
		}
	}
}

// packVNNIQ4_K is Q4_K's pack, a block per 32-value sub-block j of a super-block: the nibbles
// as stored, dw = d·sc_j, ow = −dmin·m_j (both exact in float32). b0 and nb are multiples of 8.
func packVNNIQ4_K(pk []uint32, w []byte, rowBytes, r0, mr, b0, nb int) {
	if packVNNIAsm(gguf.Q4_K, pk, w, rowBytes, r0, mr, b0, nb, 32, 8, q4_KBytes, 0) {
		return
	}
	vnniZeroRows(pk, 32, mr, nb)
	s0, ns := b0/8, nb/8
	for i := 0; i < mr; i++ {
		row := w[(r0+i)*rowBytes+s0*q4_KBytes : (r0+i)*rowBytes+(s0+ns)*q4_KBytes]
		for s := 0; s < ns; s++ {
			blk := row[s*q4_KBytes : (s+1)*q4_KBytes]
			d, dmin := f16(blk), f16(blk[2:])
			scales := blk[4:16]
			for j2 := 0; j2 < 4; j2++ {
				qs := blk[16+32*j2 : 16+32*j2+32]
				lo := pk[160*(8*s+2*j2) : 160*(8*s+2*j2+1)]
				hi := pk[160*(8*s+2*j2+1) : 160*(8*s+2*j2+2)]
				for g := 0; g < 8; g += 2 {
					u := binary.LittleEndian.Uint64(qs[4*g:])
					l, h := u&0x0f0f0f0f0f0f0f0f, u>>4&0x0f0f0f0f0f0f0f0f
					lo[16*g+i], lo[16*g+16+i] = uint32(l), uint32(l>>32)
					hi[16*g+i], hi[16*g+16+i] = uint32(h), uint32(h>>32)
				}
				sc, m := scaleMinK4(2*j2, scales)
				lo[128+i], lo[144+i] = math.Float32bits(d*float32(sc)), math.Float32bits(-dmin*float32(m))
				sc, m = scaleMinK4(2*j2+1, scales)
				hi[128+i], hi[144+i] = math.Float32bits(d*float32(sc)), math.Float32bits(-dmin*float32(m))
			}
		}
	}
}

// packVNNIQ6_K is Q6_K's pack, a block per 16 values G of a super-block (the span of one
// int8 scale): the 6-bit codes as stored (0…63), dw = d·sc_G, ow = −32·d·sc_G (exact). b0 and
// nb are multiples of 16.
func packVNNIQ6_K(pk []uint32, w []byte, rowBytes, r0, mr, b0, nb int) {
	if packVNNIAsm(gguf.Q6_K, pk, w, rowBytes, r0, mr, b0, nb, 16, 16, q6_KBytes, 0) {
		return
	}
	vnniZeroRows(pk, 16, mr, nb)
	s0, ns := b0/16, nb/16
	for i := 0; i < mr; i++ {
		row := w[(r0+i)*rowBytes+s0*q6_KBytes : (r0+i)*rowBytes+(s0+ns)*q6_KBytes]
		for s := 0; s < ns; s++ {
			blk := row[s*q6_KBytes : (s+1)*q6_KBytes]
			d := f16(blk[208:])
			for n := 0; n < 2; n++ {
				ql, qh := blk[64*n:64*n+64], blk[128+32*n:128+32*n+32]
				// Values 128n + 32k + l (l < 32): the low nibble of ql[l + 32(k&1)] shifted by
				// 4(k>>1), the high bits qh[l] >> 2k & 3; the block (scale index) 8n + 2k + l/16.
				for h := 0; h < 2; h++ {
					g0 := 16*s + 8*n + h
					p0 := pk[96*g0 : 96*g0+96]
					p1 := pk[96*(g0+2) : 96*(g0+2)+96]
					p2 := pk[96*(g0+4) : 96*(g0+4)+96]
					p3 := pk[96*(g0+6) : 96*(g0+6)+96]
					for g := 0; g < 4; g += 2 {
						o := 16*h + 4*g
						l0 := binary.LittleEndian.Uint64(ql[o:])
						l1 := binary.LittleEndian.Uint64(ql[32+o:])
						hb := binary.LittleEndian.Uint64(qh[o:])
						const m4, m2 = 0x0f0f0f0f0f0f0f0f, 0x0303030303030303
						v0 := l0&m4 | (hb&m2)<<4
						v1 := l1&m4 | (hb>>2&m2)<<4
						v2 := l0>>4&m4 | (hb>>4&m2)<<4
						v3 := l1>>4&m4 | (hb>>6&m2)<<4
						p0[16*g+i], p0[16*g+16+i] = uint32(v0), uint32(v0>>32)
						p1[16*g+i], p1[16*g+16+i] = uint32(v1), uint32(v1>>32)
						p2[16*g+i], p2[16*g+16+i] = uint32(v2), uint32(v2>>32)
						p3[16*g+i], p3[16*g+16+i] = uint32(v3), uint32(v3>>32)
					}
					for k, p := range [4][]uint32{p0, p1, p2, p3} {
						dw := d * float32(int8(blk[192+8*n+2*k+h]))
						p[64+i], p[80+i] = math.Float32bits(dw), math.Float32bits(-32*dw)
					}
				}
			}
		}
	}
}
