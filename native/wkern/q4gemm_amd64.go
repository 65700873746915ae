//go:build amd64 && !purego

package wkern

import (
	"encoding/binary"
	"unsafe"
)

//go:noescape
func q8gemm8x4AVX2(pk, sc, q unsafe.Pointer, qstride int, d unsafe.Pointer, dstride, nb int, y unsafe.Pointer, ystride int, first bool)

//go:noescape
func q4gemm8x4AVX2(pk, scm, q unsafe.Pointer, qstride int, d, s unsafe.Pointer, dstride, nb int, y unsafe.Pointer, ystride int, first bool)

// q4KC is the number of columns of a packed Q4_0 sliver: 8 rows of 2048 values are 16 KiB of
// nibble bytes and 4 KiB of scales, L1-resident while four tokens at a time stream past.
const q4KC = 2048

// mulQ4_0GEMM is MulRows for Q4_0 weights and at least four tokens: an integer blocked
// product. Slivers of 8 rows are repacked (one byte per nibble, the 8 rows' 4-value groups
// interleaved, so a vector holds one group of every row) and multiplied by 4 tokens at a
// time with VPMADDUBSW (nibbles unsigned, codes signed), the 16-bit sums of a block's 8
// groups added before one VPMADDWD, and each row's lane scaled by its block scale; the
// nibbles' offset of 8 is applied through the tokens' block sums. Tokens past a multiple of
// four take the row dots.
func mulQ4_0GEMM(k Kernel, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	cols := a.Cols
	nbt := cols / 32
	n4 := a.N &^ 3
	var pk [q4KC / 32 * 256]byte
	var scm [q4KC / 32 * 16]float32
	var tmp [4 * 8]float32
	for k0 := 0; k0 < cols; k0 += q4KC {
		kc := min(q4KC, cols-k0)
		nb, b0 := kc/32, k0/32
		first := k0 == 0
		for r0 := lo; r0 < hi; r0 += 8 {
			mr := min(8, hi-r0)
			packQ4_0(pk[:nb*256], scm[:nb*16], w, rowBytes, r0, mr, b0, nb)
			for t0 := 0; t0 < n4; t0 += 4 {
				_ = a.Q[(t0+3)*cols+k0+kc-1]
				_ = a.D[(t0+3)*nbt+b0+nb-1]
				_ = a.S[(t0+3)*nbt+b0+nb-1]
				q := unsafe.Pointer(&a.Q[t0*cols+k0])
				d := unsafe.Pointer(&a.D[t0*nbt+b0])
				s := unsafe.Pointer(&a.S[t0*nbt+b0])
				if mr == 8 {
					_ = y[(t0+3)*ystride+r0+7]
					q4gemm8x4AVX2(unsafe.Pointer(&pk[0]), unsafe.Pointer(&scm[0]), q, cols, d, s, 4*nbt, nb,
						unsafe.Pointer(&y[t0*ystride+r0]), ystride, first)
					continue
				}
				q4gemm8x4AVX2(unsafe.Pointer(&pk[0]), unsafe.Pointer(&scm[0]), q, cols, d, s, 4*nbt, nb,
					unsafe.Pointer(&tmp[0]), 8, true)
				addTile(y, ystride, t0, r0, 4, mr, tmp[:], 8, first)
			}
		}
	}
	mulRowsTail(k, y, ystride, w, rowBytes, a, n4, lo, hi)
}

// packQ4_0 repacks blocks b0 … b0+nb−1 of rows r0 … r0+mr−1 (rows past mr zero): pk[256b +
// 32g + 4i + j] is nibble value 4g+j of row i's block b, scm[16b + i] its scale d and
// scm[16b + 8 + i] = −8·d.
func packQ4_0(pk []byte, scm []float32, w []byte, rowBytes, r0, mr, b0, nb int) {
	for i := 0; i < 8; i++ {
		if i >= mr {
			for b := 0; b < nb; b++ {
				for g := 0; g < 8; g++ {
					binary.LittleEndian.PutUint32(pk[256*b+32*g+4*i:], 0)
				}
				scm[16*b+i], scm[16*b+8+i] = 0, 0
			}
			continue
		}
		row := w[(r0+i)*rowBytes+b0*q4_0Bytes : (r0+i)*rowBytes+(b0+nb)*q4_0Bytes]
		for b := 0; b < nb; b++ {
			blk := row[b*q4_0Bytes : (b+1)*q4_0Bytes]
			d := f16(blk)
			scm[16*b+i], scm[16*b+8+i] = d, -8*d
			p := pk[256*b : 256*b+256]
			for g := 0; g < 4; g++ {
				u := binary.LittleEndian.Uint32(blk[2+4*g:])
				binary.LittleEndian.PutUint32(p[32*g+4*i:], u&0x0f0f0f0f)
				binary.LittleEndian.PutUint32(p[32*(g+4)+4*i:], u>>4&0x0f0f0f0f)
			}
		}
	}
}

// mulQ8_0GEMM is MulRows for Q8_0 weights and at least four tokens: mulQ4_0GEMM's blocked
// product with the codes signed (the sign moved onto the token's codes, VPSIGNB) and 32-bit
// sums per group.
func mulQ8_0GEMM(k Kernel, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	cols := a.Cols
	nbt := cols / 32
	n4 := a.N &^ 3
	var pk [q4KC / 32 * 256]byte
	var sc [q4KC / 32 * 8]float32
	var tmp [4 * 8]float32
	for k0 := 0; k0 < cols; k0 += q4KC {
		kc := min(q4KC, cols-k0)
		nb, b0 := kc/32, k0/32
		first := k0 == 0
		for r0 := lo; r0 < hi; r0 += 8 {
			mr := min(8, hi-r0)
			packQ8_0(pk[:nb*256], sc[:nb*8], w, rowBytes, r0, mr, b0, nb)
			for t0 := 0; t0 < n4; t0 += 4 {
				_ = a.Q[(t0+3)*cols+k0+kc-1]
				_ = a.D[(t0+3)*nbt+b0+nb-1]
				q := unsafe.Pointer(&a.Q[t0*cols+k0])
				d := unsafe.Pointer(&a.D[t0*nbt+b0])
				if mr == 8 {
					_ = y[(t0+3)*ystride+r0+7]
					q8gemm8x4AVX2(unsafe.Pointer(&pk[0]), unsafe.Pointer(&sc[0]), q, cols, d, 4*nbt, nb,
						unsafe.Pointer(&y[t0*ystride+r0]), ystride, first)
					continue
				}
				q8gemm8x4AVX2(unsafe.Pointer(&pk[0]), unsafe.Pointer(&sc[0]), q, cols, d, 4*nbt, nb,
					unsafe.Pointer(&tmp[0]), 8, true)
				addTile(y, ystride, t0, r0, 4, mr, tmp[:], 8, first)
			}
		}
	}
	mulRowsTail(k, y, ystride, w, rowBytes, a, n4, lo, hi)
}

// packQ8_0 repacks blocks b0 … b0+nb−1 of rows r0 … r0+mr−1 (rows past mr zero): pk[256b +
// 32g + 4i + j] is code 4g+j of row i's block b and sc[8b + i] its scale.
func packQ8_0(pk []byte, sc []float32, w []byte, rowBytes, r0, mr, b0, nb int) {
	for i := 0; i < 8; i++ {
		if i >= mr {
			for b := 0; b < nb; b++ {
				for g := 0; g < 8; g++ {
					binary.LittleEndian.PutUint32(pk[256*b+32*g+4*i:], 0)
				}
				sc[8*b+i] = 0
			}
			continue
		}
		row := w[(r0+i)*rowBytes+b0*q8_0Bytes : (r0+i)*rowBytes+(b0+nb)*q8_0Bytes]
		for b := 0; b < nb; b++ {
			blk := row[b*q8_0Bytes : (b+1)*q8_0Bytes]
			sc[8*b+i] = f16(blk)
			p := pk[256*b : 256*b+256]
			for g := 0; g < 8; g++ {
				binary.LittleEndian.PutUint32(p[32*g+4*i:], binary.LittleEndian.Uint32(blk[2+4*g:]))
			}
		}
	}
}
