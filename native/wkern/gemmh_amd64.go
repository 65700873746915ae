//go:build amd64 && !purego

package wkern

import (
	"encoding/binary"
	"unsafe"
)

// The F16 product on AVX-512 (gemmh_amd64.s): the weight slivers are packed as f16, not float32
// (a transposing copy), and converted by the micro-kernel as it loads them. A sliver pair of
// gemmKCH columns is then as large in the L1 cache as a float32 pair of gemmKC columns, so each
// micro-kernel call covers two of the gemmKC sum blocks and reads and writes its 12×32 output
// tile once for both (the running sums wait in an L1 tile between the blocks): half the traffic
// to the output, which for a 512-token prefill is several times the weights' size and is read
// from memory. Each output is still Σ over blocks of gemmKC (in order) of the block's sequential
// fused sum of products: the same bits as the float32 path.

const gemmKCH = 2 * gemmKC // columns per f16 sliver

//go:noescape
func gemmMicroH12x2pAVX512(ap, ap2, xp unsafe.Pointer, kc int, y unsafe.Pointer, ystride int, first bool, tile unsafe.Pointer)

//go:noescape
func packH16x8AVX2(dst, src unsafe.Pointer, rowBytes, k16 int)

// gemmH selects the f16 path for F16 weights where the AVX-512 pair kernel runs (a variable so
// tests can compare it with the float32 path).
var gemmH = true

// gemmMicroH12x2p is gemmMicroH12x2pAVX512 with its bounds checked: ap and ap2 hold 16·kc f16
// values, xp 12·kc, y 11·ystride+2·gemmMR.
func gemmMicroH12x2p(ap, ap2 []uint16, xp []float32, kc int, y []float32, ystride int, first bool, tile *[gemmNR512 * 2 * gemmMR]float32) {
	_ = ap[gemmMR*kc-1]
	_ = ap2[gemmMR*kc-1]
	_ = xp[gemmNR512*kc-1]
	_ = y[11*ystride+2*gemmMR-1]
	gemmMicroH12x2pAVX512(unsafe.Pointer(&ap[0]), unsafe.Pointer(&ap2[0]), unsafe.Pointer(&xp[0]), kc, unsafe.Pointer(&y[0]), ystride, first, unsafe.Pointer(tile))
}

// packH writes the f16 bits of rows r0 … r0+mr−1, columns k0 … k0+kc−1 of the F16 matrix w to
// ap: ap[k·gemmMR + i] = W_{r0+i}[k0+k], rows past mr zero.
func packH(ap []uint16, w []byte, rowBytes, r0, mr, k0, kc int) {
	_ = ap[kc*gemmMR-1]
	done := 0
	if mr == gemmMR {
		done = kc &^ 15
		if done > 0 {
			_ = w[(r0+15)*rowBytes+2*(k0+done)-1]
			src := unsafe.Pointer(&w[r0*rowBytes+2*k0])
			packH16x8AVX2(unsafe.Pointer(&ap[0]), src, rowBytes, done)
			packH16x8AVX2(unsafe.Pointer(&ap[8]), unsafe.Add(src, 8*rowBytes), rowBytes, done)
		}
	}
	for i := 0; i < gemmMR; i++ {
		if i >= mr {
			for k := done; k < kc; k++ {
				ap[k*gemmMR+i] = 0
			}
			continue
		}
		row := w[(r0+i)*rowBytes+2*k0 : (r0+i)*rowBytes+2*(k0+kc)]
		for k := done; k < kc; k++ {
			ap[k*gemmMR+i] = binary.LittleEndian.Uint16(row[2*k:])
		}
	}
}

// mulF16 is MulFloatPacked for F16 weights with gemmNR512-token groups on AVX-512.
func mulF16(y []float32, ystride int, w []byte, rowBytes int, xp []float32, n, cols, lo, hi int) {
	const nr = gemmNR512
	groups := TokenGroups(n)
	var ap, ap2 [gemmKCH * gemmMR]uint16
	var tile, tmp [gemmNR512 * 2 * gemmMR]float32
	for k0 := 0; k0 < cols; k0 += gemmKCH {
		kc := min(gemmKCH, cols-k0)
		first := k0 == 0
		for r0 := lo; r0 < hi; r0 += 2 * gemmMR {
			mr, mr2 := min(gemmMR, hi-r0), min(gemmMR, max(0, hi-r0-gemmMR))
			packH(ap[:kc*gemmMR], w, rowBytes, r0, mr, k0, kc)
			packH(ap2[:kc*gemmMR], w, rowBytes, r0+gemmMR, mr2, k0, kc)
			// The next pair's rows are fetched while this one is multiplied, a row per token
			// group (the rest with the last group).
			nr0, nk0 := r0+2*gemmMR, k0
			if nr0 >= hi {
				nr0, nk0 = lo, k0+gemmKCH
			}
			nmr, nkb, noff := 0, 0, 0
			if nk0 < cols {
				nmr, nkb, noff = min(2*gemmMR, hi-nr0), 2*min(gemmKCH, cols-nk0), 2*nk0
			}
			for g := 0; g < groups; g++ {
				for i := g; i < nmr && (i == g || g == groups-1); i++ {
					prefetchRow(w, (nr0+i)*rowBytes+noff, nkb)
				}
				t0 := g * nr
				nt := min(nr, n-t0)
				xs := xp[t0*cols+k0*nr : t0*cols+(k0+kc)*nr]
				if mr2 == gemmMR && nt == nr {
					gemmMicroH12x2p(ap[:], ap2[:], xs, kc, y[t0*ystride+r0:], ystride, first, &tile)
					continue
				}
				// A short pair (the last rows) or group (the last tokens): each sum block into
				// tmp, the kept rows and tokens added to y in block order.
				for b0 := 0; b0 < kc; b0 += gemmKC {
					bk := min(gemmKC, kc-b0)
					gemmMicroH12x2p(ap[b0*gemmMR:], ap2[b0*gemmMR:], xs[b0*nr:], bk, tmp[:], 2*gemmMR, true, &tile)
					addTile(y, ystride, t0, r0, nt, mr, tmp[:], 2*gemmMR, first && b0 == 0)
					if mr2 > 0 {
						addTile(y, ystride, t0, r0+gemmMR, nt, mr2, tmp[gemmMR:], 2*gemmMR, first && b0 == 0)
					}
				}
			}
		}
	}
}
