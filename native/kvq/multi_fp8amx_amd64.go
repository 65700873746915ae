//go:build amd64 && !purego

package kvq

import (
	"math"

	"github.com/kvlab/kvlab/internal/isa"
)

// fp8AMXOn selects fp8's AMX scores kernel (multiScoresFP8AMX, gen_avx512.go's
// fp8ScoresAMXText) on Intel CPUs with AMX-BF16 whose OS grants the tiles (amxPermit), for
// rows of 128 values where fp8F32 runs: the query rounded to bf16 as the bf16 kernels round it
// (ScoresGrid, u = 2⁻⁸), the e4m3 codes exact in bf16 (2⁻¹²⁰ times their values, the query
// 2¹²⁰ times its own: FP8AFF), TDPBF16PS's exact products summed in float32; a subnormal code
// (|x| < 2⁻⁶·scale) reads as zero (TDPBF16PS takes bf16 subnormals as zero: fp8SubSlack in
// the tests) and a NaN code (0x7f, 0xff, which Encode writes only for a NaN input) as
// ±1.875·2⁸ × scale, a finite score where the table decode (and Decode) gives NaN; the values
// likewise (TestFP8AMXNaNCodes). Kept: the decode has no spare operation for a NaN check, and
// a NaN input is the caller's bug either way. On an Intel Xeon (Sapphire/Emerald Rapids class, 2 vCPUs shared), against
// multiScoresFP8F32 (TestFP8F32Speed: 4096 rows of 128, four queries, main's test binary
// alternated twice, load ~21, thread CPU, min) in cache 6.47–6.66 ns a row against
// 10.42–10.70, streamed 13.00–13.28 against 14.30–14.64 (memory-bound at that load); attn's
// decode scores (TestDecodeBreakdown, 131072 cells, three alternations, load 12–15) 11.01–11.35
// against 13.54–14.43. The 32 multiply-adds a row become four TDPBF16PS per 16 rows on the
// tile unit, beside the table decode (9 operations a 64-code half row) and four 64-byte
// stores. The decode (FP8AFF) takes VGF2P8AFFINEQB, so the CPU must show AVX-512 GFNI too
// (hasGFNI512): a VM could pass AMX through and hide GFNI. A variable so that tests can run
// both.
var fp8AMXOn = fp8AMXUsable(intelCPU, isa.AMXBF16, hasFP8BF16, hasGFNI512, amxPermit)

// fp8AMXUsable is fp8AMXOn's gate: an Intel CPU with AMX-BF16, fp8's bf16 kernels' extensions
// (hasFP8BF16) and AVX-512 GFNI, and only then the OS asked for the tiles (permit).
func fp8AMXUsable(intel, amxBF16, fp8BF16, gfni bool, permit func() bool) bool {
	return intel && amxBF16 && fp8BF16 && gfni && permit()
}

// fp8AMXActive reports whether fp8's scores of rows of 128 values go through the AMX kernel:
// fp8AMXOn and fp8F32 selected (tests select others).
func fp8AMXActive() bool { return fp8AMXOn && multiFP8 == fp8F32 }

// scoresAMX is scoresBF16 through multiScoresFP8AMX (d = 128): per four queries (fewer padded
// with zeros) the B tiles packed once (fp8PackAMX) and the offsets as the bf16 kernels take
// them (fp8Offsets), then the rows (amxScratch.rows). rows is resliced to the m rows out
// asks for, as scoresBF16 reslices it, so that a short rows slice panics here instead of the
// kernel reading past its end.
func (c fp8Codec) scoresAMX(q []float32, n int, rows []byte, out, mu []float32) {
	const d, rb = 128, 132
	m := len(out) / n
	q, rows, out = q[:n*d], rows[:m*rb], out[:m*n]
	if m == 0 {
		return
	}
	var a amxScratch
	for h := 0; h < n; h += 4 {
		r := min(4, n-h)
		qh := q[h*d : (h+r)*d]
		if r < 4 {
			var qpad [4 * d]float32
			qh = padQueries(qpad[:], qh, d, r, d)
		}
		a.pack(qh, mu)
		a.rows(rows, m, out, n, h, r, amxPF, amxPF2)
	}
}

// fp8AMXScoresRuns is fp8ScoresRuns through multiScoresFP8AMX (rows of 128 values, n a
// multiple of 4): each four queries packed once, then every run (amxRows), a rotated codec's
// offsets (mu, nil for none) added as scoresAMX adds them. The scores are DotManyMulti's bit
// for bit.
func fp8AMXScoresRuns(q []float32, n int, runs [][]byte, out, mu []float32) bool {
	const d, rb = 128, 132
	m := len(out) / n
	q, out = q[:n*d], out[:m*n]
	var a amxScratch
	for h := 0; h < n; h += 4 {
		a.pack(q[h*d:(h+4)*d], mu)
		base := 0
		for i, r := range runs {
			mr := min(len(r)/rb, m-base)
			if mr <= 0 {
				continue
			}
			pf, pf2 := runsPrefetch(runs, i)
			a.rows(r, mr, out[base*n:], n, h, 4, pf, pf2)
			base += mr
		}
	}
	return true
}

// amxScratch is multiScoresFP8AMX's packed queries, offsets and sums' factor (offs[4]), and
// scratch for one call.
type amxScratch struct {
	bt   [512]uint16
	offs [5]float32
	buf  [8704 + 64]byte
	tmp  [32 * 4]float32
	tail [32 * 132]byte
}

// pack packs the four queries q (128 values each) and their offsets (mu nil: none).
func (a *amxScratch) pack(q, mu []float32) {
	a.offs = [5]float32{4: fp8PackAMX(&a.bt, q)}
	if mu != nil {
		fp8Offsets(&a.offs[0], &q[0], 128, 128, &mu[0])
	}
}

// amxPF and amxPF2 are multiScoresFP8AMX's prefetch distances over contiguous rows: PFDISTZ
// and PFDISTZ2 (gen_avx512.go), as multiScoresFP8F32's.
const amxPF, amxPF2 = 6144, 16896

// rows writes the scores of the r ≤ 4 packed queries over the m rows (132 bytes each) to
// out[j·n + h + i]: the rows in multiples of 32 straight to out where r is 4 (through
// multiScoresFP8AMX2, two streams, where n is 4 and they are twoStreamRows or more), the rest by 32
// through tmp, a last part of fewer than 32 rows through a zero-padded copy (so a row's scores
// do not depend on where the rows are split); multiScoresFP8AMX prefetches pf and pf2 bytes on.
// multiScoresFP8AMX2 takes neither and prefetches amxTwoPF bytes on within its own two streams:
// a paged run (fp8AMXScoresRuns, pf and pf2 runsPrefetch's offsets of the next two runs) of
// twoStreamRows rows or more with n 4 goes through it and does not prefetch the next runs (the
// scores are the same; its cost not measured). Runs of 64-row pages never reach it.
func (a *amxScratch) rows(rows []byte, m int, out []float32, n, h, r, pf, pf2 int) {
	const d, rb = 128, 132
	buf := align64(a.buf[:])
	for j0 := 0; j0 < m; {
		mb := min(32, m-j0)
		if r == 4 && mb == 32 {
			m32 := (m - j0) &^ 31
			if fp8AMXTwoOn && n == 4 && twoStreamCall(m32, 4*n) {
				multiScoresFP8AMX2(&a.bt[0], &rows[j0*rb], rb, m32, &out[j0*n+h], d, &a.offs[0], &buf[0], amxTwoPF)
				j0 += m32
				continue
			}
			multiScoresFP8AMX(&a.bt[0], &rows[j0*rb], rb, m32, &out[j0*n+h], 4*n, d, &a.offs[0], &buf[0], pf, pf2)
			j0 += m32
			continue
		}
		src := rows[j0*rb:]
		if mb < 32 {
			clear(a.tail[:])
			copy(a.tail[:], rows[j0*rb:(j0+mb)*rb])
			src = a.tail[:]
		}
		multiScoresFP8AMX(&a.bt[0], &src[0], rb, 32, &a.tmp[0], 16, d, &a.offs[0], &buf[0], pf, pf2)
		for j := 0; j < mb; j++ {
			o, t := out[(j0+j)*n+h:(j0+j)*n+h+r], a.tmp[4*j:4*j+4]
			for i := range o {
				o[i] = t[i]
			}
		}
		j0 += mb
	}
}

// fp8PackAMX writes multiScoresFP8AMX's B tiles for the four queries q (128 values each):
// each value rounded to bf16 as fp8QueryBF16 rounds it (bf16RoundAVX512), at chunk c (256
// words), pair row p (8 words) and query h the pair of values v(c, 2p), v(c, 2p+1), where
// v(c, j) = 64(c>>1) + 16(j>>3) + 8(c&1) + (j&7) is the value the kernel's decode puts at word
// j of chunk c (fp8AMXSrc). The kernel's codes are 2⁻¹²⁰ times their values (FP8AFF), so each
// finite nonzero word is 2ᵏ times its value (k added to its exponent field, exact), k = 120
// where the largest is below 2⁸ (every |q| < 255.5) and as large as fits otherwise; it returns
// 2¹²⁰⁻ᵏ, the factor that takes the kernel's sums back to the products of the values (exact).
// Zeros, infinities and NaNs stay as they are.
func fp8PackAMX(bt *[512]uint16, q []float32) float32 {
	var qr [4 * 128]float32
	bf16RoundAVX512(&qr[0], &q[0], 4*128)
	maxExp := uint16(0)
	for k, i := range fp8AMXSrc {
		w := uint16(math.Float32bits(qr[i]) >> 16)
		bt[k] = w
		if e := w >> 7 & 0xff; e != 0xff {
			maxExp = max(maxExp, e)
		}
	}
	k := min(120, 254-maxExp)
	for i, w := range bt {
		if e := w >> 7 & 0xff; e != 0 && e != 0xff {
			bt[i] = w + k<<7
		}
	}
	return float32(math.Ldexp(1, int(120-k)))
}

// fp8AMXSrc is, for each word of fp8PackAMX's B tiles, the query value it takes (h·128 + v).
var fp8AMXSrc = func() (src [512]uint16) {
	for c := 0; c < 4; c++ {
		for j := 0; j < 32; j++ {
			v := 64*(c>>1) + 16*(j>>3) + 8*(c&1) + j&7
			for h := 0; h < 4; h++ {
				src[c*128+(j>>1)*8+h*2+j&1] = uint16(h*128 + v)
			}
		}
	}
	return
}()

// fp8AMXTwoOn makes rows take multiScoresFP8AMX2 (two streams of rows; gen_avx512.go's
// fp8ScoresAMX2Text) for calls of twoStreamRows rows or more whose scores are 16 bytes apart
// (four queries a KV head): the same scores bit for bit. A variable so that tests can run
// both.
var fp8AMXTwoOn = true

// amxTwoPF is how far ahead in its own stream multiScoresFP8AMX2 prefetches each row into L1.
const amxTwoPF = 3072

//go:noescape
func multiScoresFP8AMX2(bt *uint16, rows *byte, rb, m int, out *float32, so int, offs *float32, buf *byte, pf int)

//go:noescape
func multiScoresFP8AMX(bt *uint16, rows *byte, rb, m int, out *float32, ostride, so int, offs *float32, buf *byte, pf, pf2 int)

// fp8AMXAccOn selects fp8's AMX values kernel (multiAccFP8AMXA, gen_avx512.go's
// fp8AccAMXAText; multiAccFP8AMX where the weights reach 2⁸) for rows of 128 values where the
// AMX scores kernel runs (fp8AMXActive): each weight w·scale (the float32 product
// multiAccFP8VBMI forms) rounded to bf16 as multiAccFP8BF16 rounds it (AccumulateStep 2⁻⁸),
// the codes exact but the subnormal ones, TDPBF16PS's exact products summed in float32.
// Figures at gen_avx512.go's fp8AccAMX; kvlab bench attn --ctx 131072 --kv f16,fp8 --heads
// 32 --kv-heads 8 --head-dim 128 --threads 1 (Intel Xeon, 2 vCPUs, load ~3.5, alternated
// twice): fp8 26.78 and 26.74 ms (0.67 and 0.69 × f16) against 27.58 and 28.09 (0.76, 0.71)
// with the scores alone on AMX and 32.13 and 33.70 (0.78, 0.80) under KVLAB_NO_AMX.
// KVLAB_ACC16 (isa.Acc16) keeps multiAccFP8VBMI's float32 weights, as it does where
// multiAccFP8BF16 would run (fp8BF16AccOn): AccumulateStep 0 for fp8 under it. isa.Acc16's
// complement, a variable so that tests can run both.
var fp8AMXAccOn = !isa.Acc16

// fp8AMXAccActive reports whether fp8's values of rows of 128 values go through
// multiAccFP8AMXA (multiAccFP8AMX where it gives up).
func fp8AMXAccActive() bool { return fp8AMXAccOn && fp8AMXActive() }

// fp8AMXAcc is AccumulateManyMulti through multiAccFP8AMXA (d = 128): per four accumulators
// (a short last group padded with zeros) the rows in multiples of 64 (so that a row's
// products and their order depend only on where it sits in its 64-row tile: AccumulateTile),
// the rest through multiAccFP8VBMI (float32 weights, within the same bound).
func fp8AMXAcc(acc []float32, n int, w []float32, rows []byte) {
	const d, rb = 128, 132
	if n <= 0 {
		return
	}
	m := len(w) / n
	acc, w, rows = acc[:n*d], w[:m*n], rows[:m*rb]
	if m == 0 {
		return
	}
	var buf [amxAccScratch + 64]byte
	scr := align64(buf[:])
	for h := 0; h < n; h += 4 {
		r := min(4, n-h)
		if r == 4 {
			amxAcc4(acc[h*d:], rows, m, w[h:], 4*n, scr, amxAccPF, amxAccPF2)
			continue
		}
		var pad [4 * d]float32
		a := padQueries(pad[:], acc[h*d:], d, r, d)
		// The short group's weights padded to four a row, 128 rows at a time on the stack (a
		// decode step must not allocate): a row's sums do not depend on the kernel's
		// super-blocks, so the rows take the same products, and the same tail, as in one call.
		var wp [4 * 128]float32
		for j0 := 0; j0 < m; j0 += 128 {
			mb := min(128, m-j0)
			clear(wp[:])
			for j := 0; j < mb; j++ {
				copy(wp[4*j:4*j+r], w[(j0+j)*n+h:(j0+j)*n+h+r])
			}
			amxAcc4(a, rows[j0*rb:], mb, wp[:], 16, scr, amxAccPF, amxAccPF2)
		}
		for i := 0; i < r; i++ {
			copy(acc[(h+i)*d:(h+i+1)*d], a[i*d:(i+1)*d])
		}
	}
}

// amxAcc4 adds the m rows' values weighted by w (wstride bytes a row) to the four
// accumulators at a (128 floats apart): the rows in multiples of 64 through multiAccFP8AMXA
// (prefetching pf and pf2 bytes on; through multiAccFP8AMX where it gives up, the weights
// reaching 2⁸), the rest through multiAccFP8VBMI.
func amxAcc4(a []float32, rows []byte, m int, w []float32, wstride int, scr []byte, pf, pf2 int) {
	const d, rb = 128, 132
	m64 := m &^ 63
	if m64 > 0 && multiAccFP8AMXA(&a[0], d, &rows[0], rb, m64, &w[0], wstride, &scr[0], pf, pf2) {
		multiAccFP8AMX(&a[0], d, &rows[0], rb, m64, &w[0], wstride, &scr[0], pf, pf2)
	}
	if m64 < m {
		multiAccFP8VBMI(&a[0], d, d, &rows[m64*rb], rb, m-m64, &w[m64*wstride/4], wstride)
	}
}

// fp8AMXAccRuns is accFP8Runs through multiAccFP8AMX (rows of 128 values, n a multiple of 4,
// runs of at most AccumulateTile rows: false, doing nothing, otherwise): each run as
// fp8AMXAcc takes it (a whole 64-row run through the tiles, a shorter one through
// multiAccFP8VBMI), prefetching the next run into L1 and the run after next into L2, and where
// rot is set its offsets added after each run's sums, as accFloatRuns adds them. The sums are
// a call per run's bit for bit.
func fp8AMXAccRuns(rot *rotCodec, acc []float32, n int, w []float32, runs [][]byte) bool {
	const d, rb = 128, 132
	for _, r := range runs {
		if len(r) > AccumulateTile*rb {
			return false
		}
	}
	var buf [amxAccScratch + 64]byte
	scr := align64(buf[:])
	acc = acc[:n*d]
	base, total := 0, len(w)/n
	for i, r := range runs {
		m := min(len(r)/rb, total-base)
		if m <= 0 {
			continue
		}
		pf, pf2 := runsPrefetch(runs, i)
		ws := w[base*n : (base+m)*n]
		for h := 0; h < n; h += 4 {
			amxAcc4(acc[h*d:], r, m, ws[h:], 4*n, scr, pf, pf2)
		}
		if rot != nil {
			rot.accOffsets(acc, d, n, ws)
		}
		base += m
	}
	return true
}

// amxAccPF and amxAccPF2 are multiAccFP8AMXA's prefetch distances over contiguous rows: a
// super-block of 64 rows on into L1 (two lines a row), four on into L2 (one line a row;
// fp8AccAMXAText's sweep).
const amxAccPF, amxAccPF2 = 64 * 132, 256 * 132

// amxAccScratch is the scratch bytes multiAccFP8AMXA takes (multiAccFP8AMX takes fewer): the
// callers' buffers hold it and 64 more for align64.
const amxAccScratch = 19456

//go:noescape
func multiAccFP8AMX(acc *float32, as int, rows *byte, rb, m int, w *float32, wstride int, buf *byte, pf, pf2 int)

//go:noescape
func multiAccFP8AMXA(acc *float32, as int, rows *byte, rb, m int, w *float32, wstride int, buf *byte, pf, pf2 int) (over bool)
