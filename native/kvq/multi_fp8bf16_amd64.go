//go:build amd64 && !purego

package kvq

import (
	"unsafe"

	"github.com/kvlab/kvlab/internal/isa"
)

// hasFP8BF16 reports fp8's bf16 scores kernel (multi_avx512x_amd64.s, gen_avx512.go's
// fp8BF16): AVX-512 BW, VBMI (VPERMI2B), BF16 (VDPBF16PS, VCVTNEPS2BF16) and VL (the values
// kernel's 256-bit VCVTNEPS2BF16), as on AMD Zen 4 and later and Intel Sapphire Rapids and later.
var hasFP8BF16 = hasFP8VBMI && isa.AVX512BF16 && hasAVX512VL

// fp8 scores through bf16. Each query's values are rounded to bf16 (to nearest even,
// VCVTNEPS2BF16; a value below 2⁻¹²⁶ in magnitude becomes 0), so |q − q̃| ≤ 2⁻⁸·|q| per
// value; each e4m3 code maps exactly to a bf16 by table (fp8BF16Hi, fp8BF16Lo), and
// VDPBF16PS adds 32 exact products per operation into 16 float32 lanes (the kernel's only
// roundings are those sums', the pairwise reduction's and the product with the row scale, as
// for the float kernels). So DotManyMulti agrees with Dot(q̃) within the float bound, and with
// Dot(q) within 2⁻⁸·Σ|q[i]·x[i]| more (ScoresGrid, u = 2⁻⁸). Against the f16 kernel it
// replaces, a 32-value group costs 2.5 decode operations instead of 7 and two dot products
// per query instead of four multiply-adds.

// fp8BF16Active reports whether fp8 scores run through the bf16 kernel: the CPU has it and
// the VBMI kernels are selected (tests select others).
func fp8BF16Active() bool { return hasFP8BF16 && multiFP8 == fp8VBMI }

// fp8 values through bf16 (multiAccFP8BF16, gen_avx512.go's fp8AccBF16), where the bf16
// scores run (fp8BF16Active) and KVLAB_ACC16 is not set (isa.Acc16: multiAccFP8VBMI's float32
// weights instead). Each weight w·scale (the float32 product multiAccFP8VBMI forms) is rounded
// to bf16 (to nearest even, VCVTNEPS2BF16), so it is off by at most 2⁻⁸ of itself, or by all
// of it where its magnitude is below 2⁻¹²⁶ (flushed to 0): AccumulateStep 2⁻⁸, a per-weight
// bound tighter than the integer kernels' 2⁻¹⁶ of a tile's largest wherever a tile's weights
// span more than 2⁸. The e4m3 codes are bf16 exactly, each product of two bf16 is exact in
// float32, and VDPBF16PS adds two of them per lane per operation, the row pair's: the
// roundings are those sums' (two per pair at most, as two FMAs'), and a sum below 2⁻¹²⁶ in
// magnitude becomes 0 (VDPBF16PS flushes subnormal results and takes subnormal inputs as 0).
// VDPBF16PS at 512 bits issues at one a cycle on AMD Zen 4, as an FMA does, so a row pair's
// 32 operations replace 64 FMAs: a row of 128 values for four accumulators takes 6.3 ns in
// cache instead of 10.6, 8.3 streamed past the caches instead of 12.9 (Zen 4, thread CPU
// time, best of 300 and of 10 passes, the two kernels alternated: TestFP8AccBF16Speed);
// 5.5 ns of the 6.3 are the VDPBF16PS alone (the decode left out).
var fp8AccBF16 = &multiKernels{scores: multiScoresFP8AVX512, acc: multiAccFP8BF16}

// fp8BF16AccOn is isa.Acc16's complement, a variable so that tests can run both kernels.
var fp8BF16AccOn = !isa.Acc16

// fp8BF16AccActive reports whether fp8 values accumulate through multiAccFP8BF16.
func fp8BF16AccActive() bool { return fp8BF16AccOn && fp8BF16Active() }

// fp8AccKernels is the kernels AccumulateManyMulti runs fp8's values through.
func fp8AccKernels() *multiKernels {
	if fp8BF16AccActive() {
		return fp8AccBF16
	}
	return multiFP8
}

// fp8BF16ScoresH selects multiScoresFP8BF16H, the bf16 scores kernel with a row pair in one
// vector's halves (gen_avx512.go's fp8ScoresBF16H, ~5% less time for fp8's whole decode on AMD
// Zen 4), over multiScoresFP8BF16: the same products, summed in another order (so within the
// same bound); KVLAB_ACC16 (isa.Acc16) keeps multiScoresFP8BF16 as it keeps multiAccFP8VBMI,
// so that the switch gives fp8 the previous kernels' sums bit for bit. A variable so that tests
// can run both.
var fp8BF16ScoresH = !isa.Acc16

// fp8BF16ScoresZ4 selects multiScoresFP8BF16HZ4 where multiScoresFP8BF16H runs: the same
// scores bit for bit, its loop over four rows keeping the sums that wait for their reduction
// in registers and loading each query vector once for both row pairs (gen_avx512.go's
// fp8ScoresBF16Quad). AMD Zen 4 only (zen4Stream; Intel not measured); a variable so that
// tests can run both.
var fp8BF16ScoresZ4 = zen4Stream

//go:noescape
func multiScoresFP8BF16HZ4(q *uint16, nv int, rows *byte, rb, m int, out *float32, ostride, so int, off *float32)

//go:noescape
func fp8QueryBF16H(dst *uint16, q *float32, d, nv int)

//go:noescape
func multiScoresFP8BF16H(q *uint16, nv int, rows *byte, rb, m int, out *float32, ostride, so int, off *float32)

//go:noescape
func multiAccFP8BF16(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func fp8QueryBF16(dst *uint16, q *float32, d, nv int)

//go:noescape
func multiScoresFP8BF16(q *uint16, nv int, rows *byte, rb, m int, out *float32, ostride, so int, off *float32)

//go:noescape
func fp8Offsets(off, q *float32, d, nv int, mu *float32)

// scoresBF16 is DotManyMulti through the bf16 kernel (fp8BF16Active): groups of four queries
// packed by fp8QueryBF16 (a short last group padded with zero queries), the values past the
// last whole 32 added by tail in float32. With mu (d values; nil for none) every score of
// query h starts from q̃_h·mu (q̃_h as ScoresGrid rounds it), which the kernel adds.
func (c fp8Codec) scoresBF16(q []float32, n int, rows []byte, out, mu []float32) {
	if c.d == 128 && fp8AMXActive() {
		c.scoresAMX(q, n, rows, out, mu)
		return
	}
	d, rb := c.d, c.d+4
	m := len(out) / n
	q, rows, out = q[:n*d], rows[:m*rb], out[:m*n]
	if m == 0 {
		return
	}
	nv := d &^ 31
	hv := fp8BF16ScoresH
	words := (nv + 63) &^ 63 * 4
	if hv {
		words = nv * 8
	}
	// The packed queries start at a 64-byte boundary (align64), so that the kernels' 64-byte
	// loads of them take one cache line each. On the stack unaligned, they sat 24 or 40 bytes
	// past one depending on the caller's depth, and the scores took two lines a load: on AMD
	// Zen 4 (native/attn's TestDecodeBreakdown, fp8, 131072 cells, one thread, thread CPU time,
	// four alternations, min) the scores timed apart 7.03–7.15 ns a row against 6.78–6.80
	// aligned, the whole decode 14.07–14.23 against 14.02–14.19; kvlab bench attn (131072
	// cells, 32 heads, 8 KV heads, three alternations, best of 20 rounds) fp8 14.89–14.96 ms
	// against 14.61–14.88.
	var packStack [8*multiScratchDim + 32]uint16
	pack := align64(packStack[:])
	if words > len(pack) {
		pack = align64(make([]uint16, words+32))
	}
	var tmp [16 * 4]float32
	for h := 0; h < n; h += 4 {
		r := min(4, n-h)
		qh := q[h*d : (h+r)*d]
		if r < 4 {
			var qpad [4 * multiScratchDim]float32 // zeroed where declared: only when used
			qh = padQueries(qpad[:], qh, d, r, d)
		}
		if hv {
			fp8QueryBF16H(&pack[0], &qh[0], d, nv)
		} else {
			fp8QueryBF16(&pack[0], &qh[0], d, nv)
		}
		var offs [4]float32
		if mu != nil {
			fp8Offsets(&offs[0], &qh[0], d, nv, &mu[0])
			for i := range offs {
				offs[i] += lmDot(qh[i*d+nv:(i+1)*d], mu[nv:d])
			}
		}
		if r == 4 {
			if hv && fp8BF16ScoresZ4 {
				multiScoresFP8BF16HZ4(&pack[0], nv, &rows[0], rb, m, &out[h], 4*n, d, &offs[0])
			} else if hv {
				multiScoresFP8BF16H(&pack[0], nv, &rows[0], rb, m, &out[h], 4*n, d, &offs[0])
			} else {
				multiScoresFP8BF16(&pack[0], nv, &rows[0], rb, m, &out[h], 4*n, d, &offs[0])
			}
			continue
		}
		for j0 := 0; j0 < m; j0 += 16 {
			mb := min(16, m-j0)
			if hv {
				multiScoresFP8BF16H(&pack[0], nv, &rows[j0*rb], rb, mb, &tmp[0], 16, d, &offs[0])
			} else {
				multiScoresFP8BF16(&pack[0], nv, &rows[j0*rb], rb, mb, &tmp[0], 16, d, &offs[0])
			}
			for j := 0; j < mb; j++ {
				o, t := out[(j0+j)*n+h:(j0+j)*n+h+r], tmp[4*j:4*j+4] // element by element: no memmove call per row
				for i := range o {
					o[i] = t[i]
				}
			}
		}
	}
	if nv < d {
		for j := 0; j < m; j++ {
			row := rows[j*rb : (j+1)*rb]
			for h := 0; h < n; h++ {
				out[j*n+h] += c.tail(q[h*d:(h+1)*d], row)
			}
		}
	}
}

//go:noescape
func bf16RoundAVX512(dst, src *float32, n int)

// fp8Grid writes into dst the n queries q (d values each) as the bf16 kernel scores them: the
// first d &^ 31 values of each rounded to bf16 as fp8QueryBF16 rounds them, the rest as they
// are.
func fp8Grid(dst, q []float32, n, d int) {
	nv := d &^ 31
	dst, q = dst[:n*d], q[:n*d]
	for h := 0; h < n; h++ {
		bf16RoundAVX512(&dst[h*d], &q[h*d], nv)
		copy(dst[h*d+nv:(h+1)*d], q[h*d+nv:(h+1)*d])
	}
}

// align64 is p from its first element at a 64-byte boundary on, 64 bytes shorter (the callers
// give p 64 bytes more than they need: 32 words, 16 floats).
func align64[T byte | uint16 | float32](p []T) []T {
	size := int(unsafe.Sizeof(p[0]))
	o := int(-uintptr(unsafe.Pointer(&p[0])) & 63 / uintptr(size))
	return p[o : len(p)-64/size+o]
}
