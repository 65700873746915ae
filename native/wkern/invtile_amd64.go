//go:build amd64 && !purego

package wkern

import (
	"math"
	"unsafe"

	"github.com/kvlab/kvlab/internal/keep"
	"github.com/kvlab/kvlab/native/gguf"
)

// The tile kernels (invtile_amd64.s): 16 rows × 16, 8, 4, 2 or 1 tokens of Q4_0 or Q8_0
// weights. The x16 kernels read d_t and c_t = −off·Σq_t from ds16 (32 values per block: 16 d,
// 16 c), the x8/x4/x2 kernels from ds (16 values per block: 8 d, 8 c);
// the x1 kernels read token 0's d from ds and its Σq from qstride (an address there).

//go:noescape
func invQ4_0x8(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

//go:noescape
func invQ4_0x4(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

//go:noescape
func invQ4_0x2(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

//go:noescape
func invQ4_0x1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride unsafe.Pointer, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

//go:noescape
func invQ4_0x16(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

//go:noescape
func invQ8_0x16(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

//go:noescape
func invQ8_0x8(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

//go:noescape
func invQ8_0x4(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

//go:noescape
func invQ8_0x2(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

//go:noescape
func invQ8_0x1(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride unsafe.Pointer, ds unsafe.Pointer, nb int, y unsafe.Pointer, ystride int)

// hasInvTile selects the tile kernels (unless KVLAB_NO_AVX512 asks for the AVX2 pairs).
var hasInvTile = hasVNNI512 && !noVNNI()

// invTiled reports whether weight type t runs MulInvariant through the tile kernels.
func invTiled(t gguf.Type) bool {
	return hasInvTile && (t == gguf.Q4_0 || t == gguf.Q8_0 || t == gguf.Q6_K || t == gguf.Q4_K)
}

// invTileScratch is a padded copy of a short row group and its outputs.
type invTileScratch struct {
	rows []byte
	y    [16 * invTileRows]float32
}

var invTileScratches keep.Pool[invTileScratch]

// mulInvTile is MulInvariant through the tile kernels: rows [lo, hi) in groups of 16 (a short
// last group runs on a copy whose missing rows repeat its last row, their outputs dropped), the
// tokens of each group in tiles of 16, then 8, 4, 2, 1. Every output is the same float32 value
// whichever tile computes it, so the product is batch-invariant.
func mulInvTile(typ gguf.Type, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	if typ == gguf.Q6_K { // invq6tile_amd64.go
		mulInvTileK(&q6Tile, y, ystride, w, rowBytes, a, lo, hi)
		return
	}
	if typ == gguf.Q4_K { // invq4ktile_amd64.go
		mulInvTileK(&q4kTile, y, ystride, w, rowBytes, a, lo, hi)
		return
	}
	if hi <= lo || a.N <= 0 {
		return
	}
	nb := a.Cols / 32
	shift := 3 // Q4_0: off = 8
	if typ == gguf.Q8_0 {
		shift = 7
	}
	_ = w[hi*rowBytes-1]
	_ = a.Q[a.N*a.Cols-1]
	_ = a.D[a.N*nb-1]
	_ = a.QS[a.N*nb-1]
	_ = y[(a.N-1)*ystride+hi-1]
	sc := invTileScratches.Get()
	defer invTileScratches.Put(sc)
	var ds, ds16 []float32
	if a.N%16 > 1 { // the tiles of 8, 4 or 2 tokens read ds
		ds = a.invTileScales(shift, 8)
	}
	if a.N >= 16 { // the 16-token tiles read ds16
		ds16 = a.invTileScales(shift, 16)
	}
	for r0 := lo; r0 < hi; r0 += invTileRows {
		mr := min(invTileRows, hi-r0)
		wp := tileRows(&sc.rows, w, rowBytes, r0, mr)
		for t := 0; t < a.N; {
			tn := 16
			for tn > a.N-t {
				tn /= 2
			}
			q := unsafe.Pointer(&a.Q[t*a.Cols])
			yp, ys := unsafe.Pointer(&y[t*ystride+r0]), ystride
			if mr < invTileRows {
				yp, ys = unsafe.Pointer(&sc.y[0]), invTileRows
			}
			invTile(typ, tn, wp, rowBytes, q, a.Cols, ds, ds16, a, t, nb, yp, ys)
			if mr < invTileRows {
				tileOut(y, ystride, &sc.y, t, tn, r0, mr)
			}
			t += tn
		}
	}
}

// tileRows returns the address of row group r0's 16 rows of w (mr of them before the range's
// end): in place, or for a short group (mr < 16) a copy in *buf (grown) whose missing rows
// repeat its last row.
func tileRows(buf *[]byte, w []byte, rowBytes, r0, mr int) unsafe.Pointer {
	if mr == invTileRows {
		return unsafe.Pointer(&w[r0*rowBytes])
	}
	rows := grow(*buf, invTileRows*rowBytes)
	*buf = rows
	for i := 0; i < invTileRows; i++ {
		copy(rows[i*rowBytes:(i+1)*rowBytes], w[(r0+min(i, mr-1))*rowBytes:])
	}
	return unsafe.Pointer(&rows[0])
}

// tileOut copies a short row group's outputs (mr rows from r0, tokens [t, t+tn)) from the
// tile's padded outputs sy (16 a token) into y, dropping the padding rows'.
func tileOut(y []float32, ystride int, sy *[16 * invTileRows]float32, t, tn, r0, mr int) {
	for j := 0; j < tn; j++ {
		copy(y[(t+j)*ystride+r0:(t+j)*ystride+r0+mr], sy[j*invTileRows:])
	}
}

// kTile is a K-quant's tile kernels (16 rows of 256-value super-blocks read in place, times
// one token or up to 16): x1 the one-token kernel; xr[r] the kernel of groups·8 + r tokens,
// which unpacks each super-block once into a 64-byte aligned scratch; ops writes the kernels'
// token operands, opsPer int32 values per token and super-block, for every tile of tokens as
// kTileTokens cuts them (tile [t, t+tn) at opsPer·nb·t).
type kTile struct {
	x1     func(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, ops unsafe.Pointer, nb int, y unsafe.Pointer)
	xr     *[8]func(w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ops unsafe.Pointer, nb int, y unsafe.Pointer, ystride int, s unsafe.Pointer, groups int)
	opsPer int
	ops    func(ops []int32, a *Act, nb int) []int32
}

// kTileTokens returns the size of the token tile starting at t of n tokens: 16, or the rest.
func kTileTokens(t, n int) int { return min(16, n-t) }

// kTileScratch is the K-quant multi-token kernels' super-block scratch (Q6_K's 6208 bytes or
// Q4_K's 3968, 64-byte aligned within buf) and invTileScratch's padded row group and outputs.
type kTileScratch struct {
	buf [max(q6TileScratchBytes, q4kTileScratchBytes) + 64]byte
	invTileScratch
}

var kTileScratches keep.Pool[kTileScratch]

// mulInvTileK is mulInvTile for the K-quant tiles k: rows [lo, hi) in groups of 16 (a short
// last group runs on a copy whose missing rows repeat its last row, their outputs dropped), the
// tokens of each group in tiles of 16 and the rest.
func mulInvTileK(k *kTile, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	if hi <= lo || a.N <= 0 {
		return
	}
	nb := a.Cols / 256
	_ = w[hi*rowBytes-1]
	_ = a.Q[a.N*a.Cols-1]
	_ = a.D[a.N*nb-1]
	_ = y[(a.N-1)*ystride+hi-1]
	sc := kTileScratches.Get()
	defer kTileScratches.Put(sc)
	kops := a.kTileOps(k)
	s := unsafe.Pointer(&sc.buf[(64-uintptr(unsafe.Pointer(&sc.buf[0]))%64)%64])
	for r0 := lo; r0 < hi; r0 += invTileRows {
		mr := min(invTileRows, hi-r0)
		wp := tileRows(&sc.rows, w, rowBytes, r0, mr)
		for t := 0; t < a.N; {
			tn := kTileTokens(t, a.N)
			q := unsafe.Pointer(&a.Q[t*a.Cols])
			ops := unsafe.Pointer(&kops[k.opsPer*nb*t])
			yp, ys := unsafe.Pointer(&y[t*ystride+r0]), ystride
			if mr < invTileRows {
				yp, ys = unsafe.Pointer(&sc.y[0]), invTileRows
			}
			if tn == 1 {
				k.x1(wp, rowBytes, q, ops, nb, yp)
			} else {
				k.xr[tn%8](wp, rowBytes, q, a.Cols, ops, nb, yp, ys, s, tn/8)
			}
			if mr < invTileRows {
				tileOut(y, ystride, &sc.y, t, tn, r0, mr)
			}
			t += tn
		}
	}
}

// invTileScales returns the tile kernels' token operands of a's tokens in groups of g (8 or 16;
// tileScales) with c_t = −Σq_t << shift, built by the first product after Prepare that needs
// them (or another shift) and shared by the product's row ranges. A two-thread pass cuts a
// product into eight ranges, and each building its own took 3–5 % of a 16-token Q4_0 product's
// time (TestInvTileSpeed, weights streamed), a fifth of a 64-row one's; half of that built the
// 8-token groups' operands, which 16 tokens never read.
func (a *Act) invTileScales(shift, g int) []float32 {
	ts := &a.gemm
	i := g/8 - 1
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if !ts.tileOK[i] || ts.tileShift[i] != shift {
		n := a.N
		if g == 16 {
			n &^= 15
		}
		ts.tile[i] = tileScales(ts.tile[i], a, a.Cols/32, shift, g, n)
		ts.tileOK[i], ts.tileShift[i] = true, shift
	}
	return ts.tile[i]
}

// kTileOps returns k's token operands of a's tokens (k.ops), built by the first product after
// Prepare that needs them (or another K-quant's) and shared by the product's row ranges, as
// invTileScales does the Q4_0 and Q8_0 tiles' scales: each 64-row range of a 16-token Q6_K
// product building its own took ~10–20 % of the product's time (Q4_K 0–10 %; AMD Zen 5,
// thread CPU time, 2048 and 5632 columns).
func (a *Act) kTileOps(k *kTile) []int32 {
	ts := &a.gemm
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.kOps != k {
		ts.kVals = k.ops(ts.kVals, a, a.Cols/256)
		ts.kOps = k
	}
	return ts.kVals
}

// tileScales returns ds (grown) holding the tile kernels' token operands of tokens t < n in
// groups of g: per group and block b, 2g values, d_t at [2g·b + t%g] and c_t = −off·Σq_t (off =
// 2^shift) at [2g·b + g + t%g].
func tileScales(ds []float32, a *Act, nb, shift, g, n int) []float32 {
	ds = grow(ds, (n+g-1)/g*nb*2*g)
	for t := 0; t < n; t++ {
		d, qs := a.D[t*nb:(t+1)*nb], a.QS[t*nb:(t+1)*nb]
		o := ds[t/g*nb*2*g+t%g:]
		for b := range nb {
			o[2*g*b] = d[b]
			o[2*g*b+g] = math.Float32frombits(uint32(-(qs[b] << shift)))
		}
	}
	return ds
}

// invTile calls the kernel of tn tokens (16, 8, 4, 2 or 1) starting at token t (a multiple of
// 16 for 16 tokens).
func invTile(typ gguf.Type, tn int, w unsafe.Pointer, rowBytes int, q unsafe.Pointer, qstride int, ds, ds16 []float32, a *Act, t, nb int, y unsafe.Pointer, ystride int) {
	if tn == 16 {
		dp := unsafe.Pointer(&ds16[t/16*nb*32])
		if typ == gguf.Q4_0 {
			invQ4_0x16(w, rowBytes, q, qstride, dp, nb, y, ystride)
		} else {
			invQ8_0x16(w, rowBytes, q, qstride, dp, nb, y, ystride)
		}
		return
	}
	if tn == 1 {
		d, qs := unsafe.Pointer(&a.D[t*nb]), unsafe.Pointer(&a.QS[t*nb])
		if typ == gguf.Q4_0 {
			invQ4_0x1(w, rowBytes, q, qs, d, nb, y, ystride)
		} else {
			invQ8_0x1(w, rowBytes, q, qs, d, nb, y, ystride)
		}
		return
	}
	dp := unsafe.Pointer(&ds[t/8*nb*16+t%8])
	switch {
	case typ == gguf.Q4_0 && tn == 8:
		invQ4_0x8(w, rowBytes, q, qstride, dp, nb, y, ystride)
	case typ == gguf.Q4_0 && tn == 4:
		invQ4_0x4(w, rowBytes, q, qstride, dp, nb, y, ystride)
	case typ == gguf.Q4_0:
		invQ4_0x2(w, rowBytes, q, qstride, dp, nb, y, ystride)
	case tn == 8:
		invQ8_0x8(w, rowBytes, q, qstride, dp, nb, y, ystride)
	case tn == 4:
		invQ8_0x4(w, rowBytes, q, qstride, dp, nb, y, ystride)
	default:
		invQ8_0x2(w, rowBytes, q, qstride, dp, nb, y, ystride)
	}
}

// The VNNI GEMM's packs of 16 whole rows (invtile_amd64.s; vnnigemm_amd64.go's packVNNIAsm).

//go:noescape
func packQ4_0x16(pk unsafe.Pointer, w unsafe.Pointer, rowBytes int, idx *[16]int32, nb int, off float32)

//go:noescape
func packQ8_0x16(pk unsafe.Pointer, w unsafe.Pointer, rowBytes int, idx *[16]int32, nb int, off float32)

//go:noescape
func packQ4_Kx16(pk unsafe.Pointer, w unsafe.Pointer, rowBytes int, idx *[16]int32, nb int, off float32)

//go:noescape
func packQ6_Kx16(pk unsafe.Pointer, w unsafe.Pointer, rowBytes int, idx *[16]int32, nb int, off float32)
