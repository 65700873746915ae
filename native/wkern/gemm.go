package wkern

import (
	"github.com/kvlab/kvlab/internal/keep"
	"github.com/kvlab/kvlab/native/gguf"
)

// The float matrix product of a batch of tokens with a weight matrix whose rows are converted
// to float32 as they are used (F32, F16, BF16 weights): a blocked GEMM. The weight rows are
// taken in slivers of gemmMR rows and gemmKC columns, converted and transposed once into a
// packed sliver (column k holds the gemmMR rows' values, contiguous), which stays in the L1
// cache while every token streams past it. The tokens are packed once per product too, in
// groups of nr (tokenTile) interleaved by column (PackTokens), so the micro-kernel reads one
// contiguous stream of token values: read in place, nr tokens whose rows lie a multiple of
// 4 KiB apart fall into one L1 cache set and evict each other. The micro-kernel multiplies the
// sliver by the nr tokens of a group, each token value broadcast against the rows, into
// gemmMR×nr float32 accumulators, and adds them to the output. So each weight value is read
// from memory and converted once per product, each token value once per sliver.
//
// With AVX-512 the micro-kernel takes gemmNR512 tokens, each sliver column one 16-wide load
// and the token values broadcast operands of the FMAs: a third of the AVX2 kernel's
// instructions per multiply-add (on AMD Zen 4, which splits a 512-bit FMA in two, the FMA
// throughput is the same as with 256-bit ones; the win is the instructions), twice the
// multiply-adds per instruction where the core has full-width units (Intel).
//
// F16 weights on AVX-512 take a variant (mulF16, gemmh_amd64.go): slivers packed as f16 and
// converted in the micro-kernel, two column blocks per call.
//
// Every output value is Σ over column blocks of gemmKC (in order) of that block's sequential
// fused sum of products, whichever kernel runs: the same for any split of rows across threads
// and any batch size.
const (
	gemmMR    = 16  // weight rows per sliver (two 8-wide vectors)
	gemmNR    = 6   // tokens per AVX2 (and portable) micro-kernel call
	gemmNR512 = 12  // tokens per AVX-512 micro-kernel call
	gemmKC    = 256 // columns per sliver: 16 KiB of packed float32, L1-resident
)

// gemmAsm selects the assembly micro-kernels and packers (a variable so tests can compare the
// portable ones).
var gemmAsm = hasAVX2

// GEMMAccelerated reports whether MulFloat runs in assembly on this CPU (elsewhere it is
// portable Go, no faster than a float32 dot loop).
func GEMMAccelerated() bool { return gemmAsm }

// FloatGEMM reports whether MulFloat handles weight type t: the float types, and Q8_0 and
// Q4_0, whose blocks convert to float32 exactly (an f16 scale times a small integer) and then
// multiply faster as floats in a blocked product than the integer kernels manage.
func FloatGEMM(t gguf.Type) bool {
	switch t {
	case gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0:
		return true
	}
	return false
}

// tokenTile is the tokens per micro-kernel call of a product of n tokens: gemmNR512 with the
// AVX-512 kernel once n is large enough that the last group's padding costs little.
func tokenTile(n int) int {
	if gemmAsm && gemm512 && n >= 4*gemmNR512 {
		return gemmNR512
	}
	return gemmNR
}

// TokenGroups is the number of token groups PackTokens packs for n tokens.
func TokenGroups(n int) int { nr := tokenTile(n); return (n + nr - 1) / nr }

// PackedTokensLen is the float32 values PackTokens writes for n tokens of cols values.
func PackedTokensLen(n, cols int) int { return TokenGroups(n) * tokenTile(n) * cols }

// PackTokens packs token groups lo ≤ g < hi (TokenGroups) of the n×cols token-major x into xp
// (PackedTokensLen values) for MulFloatPacked: with nr = tokenTile(n), xp[g·nr·cols + k·nr + j]
// = x[(g·nr + j)·cols + k], zero for tokens past n.
func PackTokens(xp, x []float32, n, cols, lo, hi int) {
	nr := tokenTile(n)
	_ = xp[hi*nr*cols-1]
	// Columns go in chunks of 16 (a cache line of each token), so the chunk's nr×16 packed
	// values stay in the L1 cache while the nr tokens' lines are read.
	const kb = 16
	for g := lo; g < hi; g++ {
		dst := xp[g*nr*cols : (g+1)*nr*cols]
		for k0 := 0; k0 < cols; k0 += kb {
			k1 := min(k0+kb, cols)
			d := dst[k0*nr : k1*nr]
			for j := 0; j < nr; j++ {
				t := g*nr + j
				if t >= n {
					for k := j; k < len(d); k += nr {
						d[k] = 0
					}
					continue
				}
				for i, v := range x[t*cols+k0 : t*cols+k1] {
					d[i*nr+j] = v
				}
			}
		}
	}
}

// floatScratch is MulFloatPacked's two packed slivers and a short tile's outputs.
type floatScratch struct {
	ap, ap2 [gemmKC * gemmMR]float32
	tmp     [gemmNR512 * gemmMR]float32
}

var floatScratches keep.Pool[floatScratch]

// MulFloat writes y[t·ystride + r] = Σ_k W_r[k]·x[t·cols + k] for rows lo ≤ r < hi and tokens
// t < n, where W_r is the cols values of type typ (FloatGEMM) stored at w[r·rowBytes:]. The
// weights are converted exactly as gguf.DequantizeRow does; the activations stay float32. y
// must hold (n−1)·ystride + hi values and x n·cols. It packs the tokens itself; a caller that
// splits one product across threads packs them once (PackTokens) and calls MulFloatPacked.
func MulFloat(y []float32, ystride int, typ gguf.Type, w []byte, rowBytes int, x []float32, n, cols, lo, hi int) {
	if n <= 0 || lo >= hi {
		return
	}
	_ = x[n*cols-1]
	xp := make([]float32, PackedTokensLen(n, cols))
	PackTokens(xp, x, n, cols, 0, TokenGroups(n))
	MulFloatPacked(y, ystride, typ, w, rowBytes, xp, n, cols, lo, hi)
}

// MulFloatPacked is MulFloat of the tokens packed by PackTokens into xp.
func MulFloatPacked(y []float32, ystride int, typ gguf.Type, w []byte, rowBytes int, xp []float32, n, cols, lo, hi int) {
	if !FloatGEMM(typ) {
		panic("wkern: MulFloat of a type without a float packer")
	}
	if n <= 0 || lo >= hi {
		return
	}
	nr, groups := tokenTile(n), TokenGroups(n)
	_ = y[(n-1)*ystride+hi-1]
	_ = xp[groups*nr*cols-1]
	_ = w[hi*rowBytes-1]
	pairs := gemmAsm && nr == gemmNR512 // the two-sliver AVX-512 micro-kernel
	if pairs && gemmH && typ == gguf.F16 {
		mulF16(y, ystride, w, rowBytes, xp, n, cols, lo, hi)
		return
	}
	// The packed slivers and a short tile's outputs come from a pool: on the stack they
	// escape through the packers' func values (a 32 KiB allocation per call).
	sc := floatScratches.Get()
	defer floatScratches.Put(sc)
	ap, ap2, tmp := &sc.ap, &sc.ap2, &sc.tmp
	for k0 := 0; k0 < cols; k0 += gemmKC {
		kc := min(gemmKC, cols-k0)
		first := k0 == 0
		for r0 := lo; r0 < hi; r0 += gemmMR {
			mr := min(gemmMR, hi-r0)
			pack(ap[:kc*gemmMR], typ, w, rowBytes, r0, mr, k0, kc)
			// Two whole slivers run together (each token value broadcast once for both).
			pair := pairs && r0+2*gemmMR <= hi
			if pair {
				pack(ap2[:kc*gemmMR], typ, w, rowBytes, r0+gemmMR, gemmMR, k0, kc)
			}
			// The next sliver's rows (both slivers' where pairs run) are fetched while this
			// one is multiplied, a row per token group (the rest with the last group).
			nr0, nk0 := r0+gemmMR, k0
			if pair {
				nr0 += gemmMR
			}
			if nr0 >= hi {
				nr0, nk0 = lo, k0+gemmKC
			}
			nmr, nkb, noff := 0, 0, 0
			if nk0 < cols {
				nmr, nkb = min(gemmMR, hi-nr0), int(typ.RowBytes(uint64(min(gemmKC, cols-nk0))))
				if pairs {
					nmr = min(2*gemmMR, hi-nr0)
				}
				noff = int(typ.RowBytes(uint64(nk0)))
			}
			for g := 0; g < groups; g++ {
				for i := g; i < nmr && (i == g || g == groups-1); i++ {
					prefetchRow(w, (nr0+i)*rowBytes+noff, nkb)
				}
				t0 := g * nr
				nt := min(nr, n-t0)
				xs := xp[t0*cols+k0*nr : t0*cols+(k0+kc)*nr]
				if pair && nt == nr {
					gemmMicro12x2p(ap, ap2, xs, kc, y[t0*ystride+r0:], ystride, first)
					continue
				}
				if mr == gemmMR && nt == nr {
					micro(ap, xs, kc, nr, y[t0*ystride+r0:], ystride, first)
					continue
				}
				// A short sliver (the last rows) or group (the last tokens): compute all into
				// tmp, keep mr rows of nt tokens.
				micro(ap, xs, kc, nr, tmp[:], gemmMR, true)
				addTile(y, ystride, t0, r0, nt, mr, tmp[:], gemmMR, first)
				if pair {
					micro(ap2, xs, kc, nr, tmp[:], gemmMR, true)
					addTile(y, ystride, t0, r0+gemmMR, nt, gemmMR, tmp[:], gemmMR, first)
				}
			}
			if pair {
				r0 += gemmMR
			}
		}
	}
}

// addTile sets (first) or adds to y[(t0+t)·ystride + r0+i] the kernel output tmp[t·tstride + i]
// for t < nt, i < mr: the part of a full tile that a short sliver (the last rows) or token
// group keeps.
func addTile(y []float32, ystride, t0, r0, nt, mr int, tmp []float32, tstride int, first bool) {
	for t := 0; t < nt; t++ {
		yt := y[(t0+t)*ystride+r0 : (t0+t)*ystride+r0+mr]
		src := tmp[t*tstride : t*tstride+mr]
		if first {
			copy(yt, src)
			continue
		}
		for i, v := range src {
			yt[i] += v
		}
	}
}

// mulRowsTail writes y[t·ystride + r] = the row dot of row r with token t for tokens t0 ≤ t <
// a.N and rows lo ≤ r < hi: the tokens a blocked product leaves past its last whole group.
func mulRowsTail(k Kernel, y []float32, ystride int, w []byte, rowBytes int, a *Act, t0, lo, hi int) {
	for t := t0; t < a.N; t++ {
		yt := y[t*ystride : t*ystride+hi]
		for r := lo; r < hi; r++ {
			yt[r] = k.dot(w[r*rowBytes:(r+1)*rowBytes], a, t)
		}
	}
}

// micro runs the micro-kernel on a group of nr (gemmNR or gemmNR512) packed tokens: y[t·ystride
// + i] (+)= Σ_{k<kc} ap[k·gemmMR + i]·xp[k·nr + t] for i < gemmMR, t < nr (= when first, +=
// otherwise).
func micro(ap *[gemmKC * gemmMR]float32, xp []float32, kc, nr int, y []float32, ystride int, first bool) {
	if gemmAsm {
		if nr == gemmNR512 {
			gemmMicro12p(ap, xp, kc, y, ystride, first)
		} else {
			gemmMicro6p(ap, xp, kc, y, ystride, first)
		}
		return
	}
	microGo(ap, xp, kc, nr, y, ystride, first)
}

// microGo is the portable micro-kernel.
func microGo(ap *[gemmKC * gemmMR]float32, xp []float32, kc, nr int, y []float32, ystride int, first bool) {
	_ = xp[kc*nr-1]
	for t := 0; t < nr; t++ {
		var acc [gemmMR]float32
		for k := 0; k < kc; k++ {
			v := xp[k*nr+t]
			a := ap[k*gemmMR : k*gemmMR+gemmMR : k*gemmMR+gemmMR]
			for i := range acc {
				acc[i] += a[i] * v
			}
		}
		yt := y[t*ystride : t*ystride+gemmMR]
		for i := range yt {
			if first {
				yt[i] = acc[i]
			} else {
				yt[i] += acc[i]
			}
		}
	}
}

// pack converts rows r0 … r0+mr−1, columns k0 … k0+kc−1 of W into ap: ap[k·gemmMR + i] =
// W_{r0+i}[k0+k], rows past mr zero. For the block types k0 and kc are whole blocks (gemmKC
// is a multiple of 32 and the rows are whole blocks).
func pack(ap []float32, typ gguf.Type, w []byte, rowBytes, r0, mr, k0, kc int) {
	bb, bs := typ.TypeSize(), typ.BlockSize()
	done := 0 // columns packed by the assembly
	if gemmAsm && mr == gemmMR {
		if bs == 1 {
			done = kc &^ 7
		} else {
			done = kc
		}
		if done > 0 {
			packAsm(ap, typ, w[r0*rowBytes+k0/bs*bb:], rowBytes, done)
		}
	}
	if done == kc {
		return
	}
	var buf [gemmKC]float32
	vals := buf[:kc-done]
	for i := 0; i < gemmMR; i++ {
		if i >= mr {
			for k := done; k < kc; k++ {
				ap[k*gemmMR+i] = 0
			}
			continue
		}
		row := w[(r0+i)*rowBytes+k0/bs*bb : (r0+i)*rowBytes+(k0+kc)/bs*bb]
		if err := gguf.DequantizeRow(typ, row[done/bs*bb:], vals); err != nil {
			panic("wkern: pack: " + err.Error()) // FloatGEMM types convert whole blocks
		}
		for k, v := range vals {
			ap[(done+k)*gemmMR+i] = v
		}
	}
}
