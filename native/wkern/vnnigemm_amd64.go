//go:build amd64 && !purego

package wkern

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/kvlab/kvlab/native/gguf"
)

//go:noescape
func vnniGemm16x8(pk, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, first bool)

// vnniKC is the number of columns of a packed VNNI sliver: 16 rows of 1024 values are 20 KiB
// of codes and scales, L1-resident while eight tokens at a time stream past.
const vnniKC = 1024

// vnniScratch is mulVNNIGEMM's packed sliver and token scales, recycled across products.
type vnniScratch struct {
	pk [vnniKC / 32 * 640]byte
	ds []float32
}

var vnniScratches = sync.Pool{New: func() any { return new(vnniScratch) }}

// mulVNNIGEMM is MulRows for Q8_0 and Q4_0 weights and at least four tokens on AVX-512 VNNI (fewer than eight go to the AVX2 kernels):
// an integer blocked product of 16-row slivers (packVNNI: the codes made unsigned, Q8_0's by
// +128 and Q4_0's nibbles as stored, the offset applied through the tokens' d·Σq) by 8 tokens
// at a time (vnniGemm16x8). The integer block sums are exact, as in the row dots; only the
// float32 order of the block accumulation differs. Tokens past a multiple of eight take the
// row dots.
func mulVNNIGEMM(k Kernel, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	if a.N < 8 {
		if k.typ == gguf.Q4_0 {
			mulQ4_0GEMM(k, y, ystride, w, rowBytes, a, lo, hi)
		} else {
			mulQ8_0GEMM(k, y, ystride, w, rowBytes, a, lo, hi)
		}
		return
	}
	cols := a.Cols
	nbt := cols / 32
	n8 := a.N &^ 7
	sc := vnniScratches.Get().(*vnniScratch)
	defer vnniScratches.Put(sc)
	if need := n8 / 8 * nbt * 16; cap(sc.ds) < need {
		sc.ds = make([]float32, need)
	}
	ds := sc.ds[:n8/8*nbt*16]
	for g := 0; g < n8/8; g++ {
		for j := 0; j < 8; j++ {
			t := 8*g + j
			d, s := a.D[t*nbt:(t+1)*nbt], a.S[t*nbt:(t+1)*nbt]
			for b := range nbt {
				ds[(g*nbt+b)*16+j] = d[b]
				ds[(g*nbt+b)*16+8+j] = s[b]
			}
		}
	}
	var tmp [8 * 16]float32
	for k0 := 0; k0 < cols; k0 += vnniKC {
		kc := min(vnniKC, cols-k0)
		nb, b0 := kc/32, k0/32
		first := k0 == 0
		for r0 := lo; r0 < hi; r0 += 16 {
			mr := min(16, hi-r0)
			packVNNI(sc.pk[:nb*640], k.typ, w, rowBytes, r0, mr, b0, nb)
			for t0 := 0; t0 < n8; t0 += 8 {
				_ = a.Q[(t0+7)*cols+k0+kc-1]
				q := unsafe.Pointer(&a.Q[t0*cols+k0])
				dsp := unsafe.Pointer(&ds[(t0/8*nbt+b0)*16])
				if mr == 16 {
					_ = y[(t0+7)*ystride+r0+15]
					vnniGemm16x8(unsafe.Pointer(&sc.pk[0]), q, cols, dsp, nb, unsafe.Pointer(&y[t0*ystride+r0]), ystride, first)
					continue
				}
				vnniGemm16x8(unsafe.Pointer(&sc.pk[0]), q, cols, dsp, nb, unsafe.Pointer(&tmp[0]), 16, true)
				addTile(y, ystride, t0, r0, 8, mr, tmp[:], 16, first)
			}
		}
	}
	mulRowsTail(k, y, ystride, w, rowBytes, a, n8, lo, hi)
}

// packVNNI repacks blocks b0 … b0+nb−1 of rows r0 … r0+mr−1 of Q8_0 or Q4_0 weights (rows past
// mr zero) for vnniGemm16x8: per block 640 bytes, pk[640b + 64g + 4i + j] the unsigned code of
// value 4g+j of row i (Q8_0: code+128, Q4_0: the nibble), then the 16 rows' scales d and the
// 16 values −off·d (off 128 or 8) as float32.
func packVNNI(pk []byte, typ gguf.Type, w []byte, rowBytes, r0, mr, b0, nb int) {
	bb, off := q8_0Bytes, float32(128)
	if typ == gguf.Q4_0 {
		bb, off = q4_0Bytes, 8
	}
	for i := 0; i < 16; i++ {
		if i >= mr {
			for b := 0; b < nb; b++ {
				p := pk[640*b : 640*b+640]
				for g := 0; g < 8; g++ {
					binary.LittleEndian.PutUint32(p[64*g+4*i:], 0)
				}
				binary.LittleEndian.PutUint32(p[512+4*i:], 0)
				binary.LittleEndian.PutUint32(p[576+4*i:], 0)
			}
			continue
		}
		row := w[(r0+i)*rowBytes+b0*bb : (r0+i)*rowBytes+(b0+nb)*bb]
		for b := 0; b < nb; b++ {
			blk := row[b*bb : (b+1)*bb]
			d := f16(blk)
			p := pk[640*b : 640*b+640]
			if typ == gguf.Q4_0 {
				for g := 0; g < 4; g++ {
					u := binary.LittleEndian.Uint32(blk[2+4*g:])
					binary.LittleEndian.PutUint32(p[64*g+4*i:], u&0x0f0f0f0f)
					binary.LittleEndian.PutUint32(p[64*(g+4)+4*i:], u>>4&0x0f0f0f0f)
				}
			} else {
				for g := 0; g < 8; g++ {
					binary.LittleEndian.PutUint32(p[64*g+4*i:], binary.LittleEndian.Uint32(blk[2+4*g:])^0x80808080)
				}
			}
			binary.LittleEndian.PutUint32(p[512+4*i:], math.Float32bits(d))
			binary.LittleEndian.PutUint32(p[576+4*i:], math.Float32bits(-off*d))
		}
	}
}
