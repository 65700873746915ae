//go:build amd64 && !purego

package kvq

import (
	"cmp"
	"unsafe"

	"github.com/kvlab/kvlab/internal/isa"
)

// accRuns is AccumulateManyMultiRuns's kernel path: f16 rows of a multiple of 32 values on the
// AVX-512 or the AVX2 f16 kernels, four accumulators a call (n a multiple of 4), runs of at
// most AccumulateTile rows. Each run goes to multiAccF16AVX512PF, its prefetches aimed at the
// next run (into L1) and the run three on (into L2) where multiAccF16AVX512 aims them at the
// 16 KiB and 48 KiB that follow the run in memory (in a paged cache another head's rows, which
// cost a read from DRAM each and crowd L1), or to multiAccF16AVX2TPF (the next run and the one
// after, as multiAccF16AVX2T the next two tiles). The sums are those kernels', bit for bit. It
// reports false, doing nothing, where it does not apply. Zen 4, kvcache TestPagedDecodeSpeed
// (one thread, 32768 cells, 32/8 heads of 128, thread CPU, min of 3 runs of 12 rounds), paged
// f16 decode a page a call with Prefetch -> through here: 12.4 -> 7.7 ms (contiguous 5.3; the
// values alone 11.5 -> 3.2 ms against 2.4), KVLAB_NO_AVX512=1 18.2 -> 9.6 ms (contiguous 5.7).
// Intel, through here with accFloatBcst's loop: paged f16 values 5.48–5.53 ms (contiguous
// 3.9–4.5; figures at accFloatBcst); run by run there not measured.
func accRuns(c Codec, acc []float32, n int, w []float32, runs [][]byte) bool {
	if accIntRuns(c, acc, n, w, runs) || accBF16Runs(c, acc, n, w, runs) || accFP8Runs(c, acc, n, w, runs) {
		return true
	}
	f, ok := c.(*f16Codec)
	avx2 := multiF16 == f16AVX2
	if !ok || (multiF16 != avx512Kernels[0] && !avx2) || f.short() || f.d%32 != 0 || n%4 != 0 {
		return false
	}
	k := runsF16
	if avx2 {
		k = runsF16AVX2
	}
	return accFloatRuns(k, nil, acc, n, f.d, f.rb, w, runs)
}

// Float values kernels over runs (accFloatRuns): each prefetches the next run into L1, and into
// L2 the run after it (the AVX2 ones and fp8's) or the third on (f16's and bf16's AVX-512 ones).
const (
	runsF16      = iota // multiAccF16AVX512PF
	runsF16AVX2         // multiAccF16AVX2TPF
	runsBF16            // multiAccBF16RunsAVX512
	runsBF16AVX2        // multiAccBF16AVX2TPF
	runsFP8             // multiAccFP8BF16RunsAVX512
	runsFP8AVX2         // multiAccFP8AVX2TPF
	runsFP8VBMI         // multiAccFP8VBMIRunsAVX512
)

// accFloatRuns is accRuns's, accBF16Runs's and accFP8Runs's loop: each run of rows (rb bytes a
// row, d values) to kernel k, four accumulators a call, with the offsets of the runs its
// prefetches aim at (the last run's own rows where there are none: prefetching them again costs
// nothing), and where rot is set its offsets added after each run's sums, as its
// AccumulateManyMulti adds them; false, doing nothing, where a run is longer than
// AccumulateTile rows. The calls are direct (a func value would make acc's and w's slices
// escape). Not kept on Intel: f16's and bf16's AVX-512 flavours' L2 prefetches two or five
// runs on in place of three (kvcache TestPagedBreakdown, Intel Xeon, 2 alternations, load
// ~3: paged values f16 5.62–5.75 ms with three, 5.51–5.80 with two, 5.73–5.75 with five;
// bf16 5.81–5.84, 5.57–5.71, 5.60–5.76; contiguous 4.6–5.3).
func accFloatRuns(k int, rot *rotCodec, acc []float32, n, d, rb int, w []float32, runs [][]byte) bool {
	for _, r := range runs {
		if len(r) > AccumulateTile*rb {
			return false
		}
	}
	far := 3
	if k == runsF16AVX2 || k == runsBF16AVX2 || k == runsFP8 || k == runsFP8AVX2 || k == runsFP8VBMI {
		far = 2
	}
	acc = acc[:n*d]
	base, total := 0, len(w)/n
	for i, r := range runs {
		m := min(len(r)/rb, total-base)
		if m <= 0 {
			continue
		}
		pf1, pf2 := 0, 0
		if i+1 < len(runs) {
			pf1 = runOffset(r, runs[i+1])
			pf2 = runOffset(r, runs[min(i+far, len(runs)-1)])
		}
		ws := w[base*n : (base+m)*n]
		for h := 0; h < n; h += 4 {
			switch k {
			case runsF16:
				multiAccF16AVX512PF(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf1, pf2, accFloatBcst)
			case runsF16AVX2:
				multiAccF16AVX2TPF(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf1, pf2)
			case runsBF16:
				multiAccBF16RunsAVX512(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf1, pf2)
			case runsBF16AVX2:
				multiAccBF16AVX2TPF(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf1, pf2)
			case runsFP8AVX2:
				multiAccFP8AVX2TPF(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf1, pf2)
			case runsFP8VBMI:
				multiAccFP8VBMIRunsAVX512(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf1, pf2)
			default:
				multiAccFP8BF16RunsAVX512(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf1, pf2)
			}
		}
		if rot != nil {
			rot.accOffsets(acc, d, n, ws)
		}
		base += m
	}
	return true
}

// bf16RunsZ4 is whether bf16's values (multiAccBF16AVX512) and scores (multiScoresBF16AVX512,
// its Zen 4 loop) over runs take their runs flavours, multiAccBF16RunsAVX512 (accBF16Runs)
// and multiScoresBF16RunsAVX512 (scoresRuns), as f16's do: Zen 4 and Intel (intelCPU; other
// CPUs, Zen 5 among them, keep the Prefetch of each next run whole). The scores' flavour takes
// the kernel's Zen 4 loop on both (the L2 prefetches at the next run's rows, the L1 ones 4 KiB
// on in the run and the next taken as one); the values' its ACC4_REG loop on Intel (the L1
// prefetches at the next run). Intel Xeon (2 vCPUs, KVM, family 6 model 167), kvcache
// TestPagedBreakdown as below (2 alternations, load ~10): paged bf16 scores 7.73–8.24 →
// 6.39–6.42 ms, values 10.01–10.17 → 6.46–6.47 (contiguous 4.08 and 3.91). Zen 4, kvcache TestPagedBreakdown (one
// thread, 32768 cells, 8 KV heads of 128, 4 queries, thread CPU, 2 alternations, load ~2),
// paged bf16: values 6.96–7.77 → 2.67–2.72 ms (contiguous 2.49–2.62), scores 5.80–6.22 →
// 4.02–4.11 (contiguous 3.18–3.38; a Prefetch of the run two, three or four on besides:
// 4.66–5.09, slower).
var bf16RunsZ4 = zen4Stream || intelCPU

// accBF16Runs is accRuns for bf16 rows of a multiple of 32 values on the AVX-512 kernel
// (bf16RunsZ4), four accumulators a call (n a multiple of 4), runs of at most AccumulateTile
// rows: each run to multiAccBF16RunsAVX512, prefetching the next run into L1 and the third on
// into L2 where multiAccBF16AVX512 prefetches the 16 KiB and 48 KiB that follow the run (in a
// paged cache another head's rows). The sums are multiAccBF16AVX512's bit for bit. On the
// AVX2 kernels (every CPU that runs them, as f16's multiAccF16AVX2TPF) each run goes to
// multiAccBF16AVX2TPF, the next run into L1 and the one after into L2: Zen 4 with
// KVLAB_NO_AVX512=1, kvcache TestPagedBreakdown (as at bf16RunsZ4), paged bf16 values
// 11.51–11.88 → 3.25–3.27 ms (contiguous 3.06–3.10, 2 alternations). It reports false, doing nothing, where it does not
// apply.
func accBF16Runs(c Codec, acc []float32, n int, w []float32, runs [][]byte) bool {
	b, ok := c.(*bf16Codec)
	avx2 := multiBF16 == bf16AVX2
	if !ok || !(bf16RunsZ4 && multiBF16 == bf16AVX512 || avx2) || b.d%32 != 0 || n%4 != 0 {
		return false
	}
	k := runsBF16
	if avx2 {
		k = runsBF16AVX2
	}
	return accFloatRuns(k, nil, acc, n, b.d, b.rb, w, runs)
}

// accFP8Runs is accRuns for fp8 rows of a multiple of 32 values on the AVX2 kernel
// (multiAccFP8AVX2T, fp8AccKernels; every CPU that runs it), four accumulators a call: each run
// to multiAccFP8AVX2TPF, the next run into L1 and the one after into L2 as multiAccBF16AVX2TPF
// does bf16's (Zen 4 with KVLAB_NO_AVX512=1, kvcache TestPagedBreakdown as at
// avx2FloatScoresRuns, 4 runs: paged fp8 values 5.00–5.15 → 3.44–3.66 ms, contiguous
// 3.27–3.49); and for those whose values take
// multiAccFP8BF16 (fp8AccKernels; fp8RunsZ4), four accumulators a call (n a multiple of 4),
// runs of at most AccumulateTile rows: each run to multiAccFP8BF16RunsAVX512, prefetching the
// next run into L1 and the run after next into L2 where multiAccFP8BF16 prefetches the 64 and
// 128 rows that follow the run's first (in a paged cache the memory past the page's rows:
// another head's). A rotated codec's offsets are added after each run's sums, as its
// AccumulateManyMulti adds them. The sums are multiAccFP8BF16's bit for bit. On Intel's
// float32 kernels (fp8F32) each run goes likewise to multiAccFP8VBMIRunsAVX512, the next run
// into L1 and the one after into L2 where multiAccFP8VBMI's prefetches run past the run's end
// (and DotManyMultiRuns's loop prefetched each next run whole): kvcache TestPagedBreakdown
// (fp8, Intel Xeon family 6 model 167, 2 vCPUs, test binaries alternated three times, load
// 3.8–4.1) paged values 2.90–3.13 ms against 4.22–4.43 (contiguous 3.8–4.0), but only while
// the scores' stray prefetches had brought the page's V rows in: with fp8F32ScoresRuns
// 4.49–4.77 against 3.51–3.69 (see there). It reports false, doing nothing, where it does not
// apply.
func accFP8Runs(c Codec, acc []float32, n int, w []float32, runs [][]byte) bool {
	rot, _ := c.(*rotCodec)
	if rot != nil {
		c = rot.inner
	}
	f, ok := c.(fp8Codec)
	if !ok || f.d%32 != 0 || n%4 != 0 {
		return false
	}
	if f.d == 128 && fp8AMXAccActive() {
		return fp8AMXAccRuns(rot, acc, n, w, runs)
	}
	if fp8AccKernels() == fp8AVX2 {
		return accFloatRuns(runsFP8AVX2, rot, acc, n, f.d, f.d+4, w, runs)
	}
	if fp8AccKernels() == fp8F32 {
		return accFloatRuns(runsFP8VBMI, rot, acc, n, f.d, f.d+4, w, runs)
	}
	if !fp8RunsZ4 || !fp8BF16AccActive() {
		return false
	}
	return accFloatRuns(runsFP8, rot, acc, n, f.d, f.d+4, w, runs)
}

// fp8F32ScoresRuns is fp8ScoresRuns on Intel's float32 kernels (fp8F32; rows of d values, d a
// multiple of 32 up to multiScratchDim, n a multiple of 4): each four queries packed once
// (fp8PackF32), each run to multiScoresFP8F32RunsAVX512 with the offsets of the next run (L1)
// and the run after next (L2), where DotManyMultiRuns's loop prefetched each next run whole
// and multiScoresFP8F32's prefetches ran past the run (in a paged cache into the page's V
// rows and other heads'); a rotated codec's offsets (mu, nil for none) added after, as
// dotManyMultiMu adds them. The scores are DotManyMulti's bit for bit. Intel Xeon (family 6
// model 167, 2 vCPUs), kvcache TestPagedBreakdown fp8 (test binaries alternated three times,
// load 3.7–4.1): paged scores 4.53–4.87 ms against 7.71–8.23 (contiguous 4.3–4.8; in runs
// of a contiguous cache 4.51–4.72 against 5.88–6.12), values 4.49–4.77 against 3.51–3.69
// (those stray prefetches had been reading the page's V rows for them); TestPagedDecodeSpeed
// (four alternations, load 2.1–2.3) paged decode 9.00–9.94 ms against 10.97–12.13.
func fp8F32ScoresRuns(d int, q []float32, n int, runs [][]byte, out, mu []float32) bool {
	rb := d + 4
	m := len(out) / n
	q, out = q[:n*d], out[:m*n]
	var stack [8*multiScratchDim + 16]float32
	pack := align64(stack[:])
	for h := 0; h < n; h += 4 {
		fp8PackF32(&pack[0], &q[h*d], d, d)
		base := 0
		for i, r := range runs {
			mr := min(len(r)/rb, m-base)
			if mr <= 0 {
				continue
			}
			pf, pf2 := runsPrefetch(runs, i)
			multiScoresFP8F32RunsAVX512(&pack[0], d, &r[0], rb, mr, &out[base*n+h], 4*n, d, pf, pf2)
			base += mr
		}
	}
	if mu != nil {
		addOffsets(d, q, n, out, mu)
	}
	return true
}

// multiScoresFP8F32RunsAVX512 is multiScoresFP8F32 whose loop of four rows prefetches into L1
// PFDISTZ bytes on in this run's rows and the next run's (pf bytes past each row) taken as
// one, and pf2 bytes past each row into L2 in place of PFDISTZ2 (gen_runs.go,
// multi_runs_avx512x_amd64.s).
//
//go:noescape
func multiScoresFP8F32RunsAVX512(q *float32, nv int, rows *byte, rb, m int, out *float32, ostride, so int, pf, pf2 int)

// multiAccFP8VBMIRunsAVX512 is multiAccFP8VBMI over one run of at most AccumulateTile rows whose
// row loop prefetches pf1 bytes past each row (the next run) into L1 and pf2 bytes past it
// (the run after next) into L2, where multiAccFP8VBMI prefetches the next tile and the one
// after (gen_runs.go, multi_runs_avx512x_amd64.s). The sums are multiAccFP8VBMI's bit for bit.
//
//go:noescape
func multiAccFP8VBMIRunsAVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf1, pf2 int)

// multiScoresFP8BF16HRunsAVX512 is multiScoresFP8BF16H whose loop of four rows prefetches
// into L1 PFDISTZ bytes on in this run's rows and the next run's (pf bytes past each row) taken
// as one, and pf2 bytes past each row into L2 in place of PFDISTZ2; cur is scratch, its
// value not used (gen_runs.go, multi_runs_avx512x_amd64.s).
//
//go:noescape
func multiScoresFP8BF16HRunsAVX512(q *uint16, nv int, rows *byte, rb, m int, out *float32, ostride, so int, off *float32, pf, pf2, cur int)

// multiScoresFP8BF16HZ4RunsAVX512 is multiScoresFP8BF16HZ4 (fp8BF16ScoresZ4, Zen 4) as
// multiScoresFP8BF16HRunsAVX512 is multiScoresFP8BF16H (gen_runs.go's fp8HScoresRuns): the
// same scores bit for bit.
//
//go:noescape
func multiScoresFP8BF16HZ4RunsAVX512(q *uint16, nv int, rows *byte, rb, m int, out *float32, ostride, so int, off *float32, pf, pf2, cur int)

// multiAccFP8BF16RunsAVX512 is multiAccFP8BF16 prefetching pf1 bytes past each row pair into
// L1 and pf2 bytes past it into L2 (gen_runs.go, multi_runs_avx512x_amd64.s).
//
//go:noescape
func multiAccFP8BF16RunsAVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf1, pf2 int)

// multiAccFP8AVX2TPF is multiAccFP8AVX2T over at most one tile prefetching the rows pf1
// (into L1) and pf2 bytes on (into L2) (gen_runs.go, multi_runs_amd64.s).
//
//go:noescape
func multiAccFP8AVX2TPF(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf1, pf2 int)

// multiAccBF16AVX2TPF is multiAccBF16AVX2T over at most one tile prefetching the rows pf1
// (into L1) and pf2 bytes on (into L2), as multiAccF16AVX2TPF is f16's (gen_runs.go,
// multi_runs_amd64.s).
//
//go:noescape
func multiAccBF16AVX2TPF(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf1, pf2 int)

// multiAccBF16RunsAVX512 is multiAccBF16AVX512 prefetching pf1 bytes past each tile's first
// row into L1 and pf3 bytes past it into L2 (gen_runs.go, multi_runs_amd64.s).
//
//go:noescape
func multiAccBF16RunsAVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf1, pf3 int)

// multiScoresBF16RunsAVX512 is multiScoresBF16AVX512 whose Zen 4 loop prefetches into L2 pf
// bytes past each row in place of PFDISTZ4L2, and into L1 PFDISTZ4L1 (16 rows) on in this run
// and the next taken as one (per row pair: PFDISTZ4L1 on while that is in the run, else into
// the next run, as multiScoresFP8BF16HRunsAVX512's), where the kernel's L1 prefetches of a
// run's last 16 rows read the memory past the run (in a paged cache another head's rows) and
// the next run's first 16 rows came in without them (gen_runs.go, multi_runs_amd64.s). Zen 4,
// kvcache TestPagedBreakdown (3 alternations, load ~8), the 8 heads' paged bf16 scores
// 3.78–3.92 → 3.50–3.58 ms (contiguous 3.20–3.27, the values 2.70–2.74 against 2.75–2.77); the
// whole paged bf16 decode (TestPagedDecodeSpeed, 4 alternations) 6.79–7.00 → 6.45–6.72 ms,
// contiguous 5.78–5.94 (1.16–1.20× → 1.10–1.15×).
//
//go:noescape
func multiScoresBF16RunsAVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int, pf int)

// multiScoresQ50Z4RunsGFNI and multiScoresQ51Z4RunsGFNI are multiScoresQ50Z4GFNI and
// multiScoresQ51Z4GFNI prefetching into L1 pf bytes past each group of rows in place of 64
// rows on, without their far prefetches (gen_runs.go, multi_runs_vnni_amd64.s).
//
//go:noescape
func multiScoresQ50Z4RunsGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf int)

//go:noescape
func multiScoresQ51Z4RunsGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf int)

// runsIntel is whether an Intel CPU takes the runs flavours of the Zen 4 integer kernels over a
// paged cache's runs, as Zen 4 does: q8_0's one-digit scores (multiScoresQ80OneZ4RunsVNNI,
// q80OneRuns) and values (multiAccQ80Z4ListINT, accRunsQ80), q4_0's and q4_1's scores
// (multiScoresQ40HdrZ4RunsVNNI, multiScoresQ41HdrZ4RunsVNNI: hdrRuns) and 8-bit values
// (accRunsQ40), tq4's and the turbo tiers' scores and values (scoresRunsTQ4, accRunsTQ4). Their
// scores and sums are those of the kernels these CPUs run over contiguous rows bit for bit
// (TestDotManyMultiRuns, TestAccumulateManyMultiRuns); only the prefetches differ (PREFETCHT1,
// aimed at the runs to come). It asks for the AVX-512 extensions every Zen 4 has and those
// kernels may use (VNNI, VBMI, VBMI2, BITALG, GFNI, VL), so that an Intel CPU without them
// (or one told to act as one: KVLAB_NO_AVX512VBMI) keeps the run-by-run calls. Intel Xeon (2
// vCPUs, KVM, family 6 model 167), kvcache TestPagedBreakdown (one thread, 32768 cells, 8 KV
// heads of 128, 4 queries, thread CPU, 2 alternations, load 12–16), paged scores and values:
// q8_0 5.30–5.57 and 4.70–4.89 → 3.33–3.37 and 2.94–3.06 ms (contiguous 3.09–3.20 and
// 2.64–2.86), q4_0 2.95–3.21 and 2.60–2.82 → 1.99–2.10 and 1.78–1.83 (contiguous 2.38–2.69 and
// 1.90–2.00), q4_1 3.42–3.51 and 3.00–3.05 → 2.63–2.75 and 1.94–2.00 (contiguous 2.28–2.78 and
// 2.10–2.20), turbo4 2.55–2.81 and 3.69–3.91 → 2.52–3.26 and 1.67–1.75 (contiguous 2.10–2.41
// and 1.58–1.80). The scores' and the values' flavours go together: either alone left the
// other half reading cold the rows the run-by-run kernels' prefetches past each page had
// brought in (the values' flavours alone: q8_0's values 2.05–2.23 ms but its scores
// 6.40–6.49; the scores' alone: its scores 3.40–3.48 but its values 5.83–6.07). Before them,
// on Intel, the run-by-run calls' Prefetch of each next run whole (256 PREFETCHT1 of f16 rows
// at once) cost more than it saved where the kernels' prefetches reach the next run (over
// contiguous rows in runs, f16 scores 7.0–7.2 ms with it, 4.0–4.4 without; contiguous 3.8)
// but paid over a paged cache's runs (paged q8_0 scores 5.1–5.5 with it, 6.2–6.5 without).
var runsIntel = intelCPU && hasVNNIBW && hasVBMI && q80Z4Scores && hasBITALG && hasGFNI512 && hasAVX512VL

// q80OneRuns and hdrRuns are whether q8_0's one-digit scores (multiScoresQ80OneZ4RunsVNNI)
// and q4_0's and q4_1's header-frame scores (multiScoresQ40HdrZ4RunsVNNI,
// multiScoresQ41HdrZ4RunsVNNI) over runs take their runs flavours (runsPF): on Zen 4, whose
// kernels over contiguous rows they are (zen4Stream, vnniHdrZ4), and on Intel (runsIntel),
// whose kernels over contiguous rows (multiScoresQ80OneIntelVNNI, multiScoresQ40HdrZ4VNNI,
// multiScoresQ41HdrZ4VNNI) give the same scores bit for bit. Not vnniHdrZ4 on Intel: an Intel
// CPU without runsIntel's extensions (KVLAB_NO_AVX512VBMI) keeps its values run by run
// (accRunsQ40), and its scores must too (runsIntel's comment: the two halves go together).
// iq4_nl's scores (runsPF) likewise.
var (
	q80OneRuns = zen4Stream || runsIntel
	hdrRuns    = zen4Stream || runsIntel
)

// runsPF is the pf argument of the scores kernel of kind at nd digits (avx2: the AVX2 kernels)
// for the run rows followed by the runs next (vnniScoresRunsStride): the byte offset of the
// first non-empty one from rows where that kernel prefetches the next run's rows itself
// (multiScoresQ80OneZ4RunsVNNI), else 0 (the caller prefetches the next run whole, Prefetch).
// The one-digit q8_0 kernel on Zen 4 prefetches 64 rows past each group of sixteen: one page
// of a paged cache on, but at the memory that follows the run (the same head's V rows), with
// the next page's 8.5 KiB left to Prefetch's burst of PREFETCHT1 at the run's start. Zen 4,
// kvcache TestPagedDecodeSpeed's shape (one thread, 32768 cells, 32/8 heads of 128, 4 queries
// a KV head, thread CPU, best of 12 rounds, 3 alternated runs, min), the scores of the 8
// heads alone: paged 3.41–3.91 → 1.74–2.20 ms (contiguous 1.50–1.94); the values then read
// their rows from memory rather than where the scores' prefetches had left them (2.85–3.10 →
// 3.02–3.15 ms) until accIntRuns (whose figures are both's). q4_0's Zen 4 kernel
// (multiScoresQ40HdrZ4RunsVNNI) likewise, its far prefetches (HDRFAR, 32 KiB on) at the near
// ones' lines: the scores of the 8 heads 2.53–2.76 → 1.64–1.85 ms (contiguous 1.57–2.01).
// tq4's pair kernel alone so (multiScoresTQ4B2VNNI prefetching the run after next, without its
// far prefetches) made the scores faster (kvcache TestPagedBreakdown, 3 alternations, 2.03–2.44
// → 1.72–2.17 ms) but the values slower (1.86–2.18 → 2.24–2.64), which no longer found their V
// rows where the scores' prefetches past each page had left them: tq4 takes runs flavours of
// both (scoresRunsTQ4, accIntRuns).
func runsPF(kind, nd int, avx2 bool, rows []byte, next [][]byte) int {
	switch {
	case len(rows) == 0:
		return 0
	case avx2:
		if kind != vnniQ8_0 || nd != 1 || !(avx2HBRoute(kind) || avxVNNI) || avx2TwinsOn() {
			return 0
		}
	case kind == vnniQ8_0 && nd == 1 && q80OneRuns:
	case kind == vnniQ4_0 && hdrRuns && !vnniStaged:
	case kind == vnniQ4_1 && hdrRuns && !vnniStaged:
	case kind == vnniIQ4NL && iq4ScoresVBMI && hdrRuns && !vnniStaged:
	case (kind == vnniQ5_0 || kind == vnniQ5_1) && q5ScoresGFNI && q5ScoresZ4:
	case (kind == vnniQ5_0 || kind == vnniQ5_1) && q5RunsIntel:
	default:
		return 0
	}
	for _, r := range next {
		if len(r) > 0 {
			if pf := runOffset(rows, r); pf != 0 {
				return pf
			}
			return 1 // the same rows again (a prefetch of them costs nothing)
		}
	}
	return 0
}

// scoresRunsFar is how many runs on DotManyMultiRuns's run-by-run loop prefetches (Prefetch,
// into L2) before each run besides the next one, 0 for none: f16's and bf16's AVX2 scores
// kernels (multiScoresF16AVX2T, multiScoresBF16AVX2T), three, where their runs flavours do not
// apply (avx2FloatScoresRuns: rows of a multiple of 32 values, queries four at a time). Their three row streams a call
// read a 64-row run as three of 21–22 rows, which the hardware prefetchers do not follow, and
// their L1 prefetches 3 KiB on run past each stream. Zen 4 with KVLAB_NO_AVX512=1, kvcache
// TestPagedBreakdown (one thread, 32768 cells, 8 KV heads of 128, 4 queries, thread CPU, 2
// runs each, load ~2–4), paged f16 scores: 7.03–7.16 ms without, 4.94–5.55 with the run three
// on (no Prefetch at all 6.87–7.01, the run two on in place of the next 6.54–6.73, three on in
// place of it 7.02–7.04, the next and the run four on 5.29–5.32; contiguous 2.9); bf16's
// 6.8 → 6.0–6.1 (contiguous 3.3). Not kept: the same for q8_0's and q4_0's AVX2 integer scores
// (vnniScoresRunsStride's run-by-run Prefetch; 2 runs): q8_0's scores 4.66–4.75 → 3.92–4.33 ms
// but its values 3.22–3.25 → 3.34–3.79 (their V rows no longer where the scores' prefetches
// past each page left them), q4_0's scores 2.31–2.52 → 2.22–2.46, within noise. Nor for fp8
// on Intel's float32 kernels (fp8F32): the whole paged fp8 decode (TestPagedDecodeSpeed, 3
// alternations, load ~22 on 2 vCPUs of a Xeon) 13.85–14.77 ms with the run three on against
// 13.34–15.08 without (contiguous 8.2–8.6 both).
func scoresRunsFar(c Codec) int {
	switch c.(type) {
	case *f16Codec:
		if multiF16 == f16AVX2 {
			return 3
		}
	case *bf16Codec:
		if multiBF16 == bf16AVX2 {
			return 3
		}
	}
	return 0
}

// runsFar is how many runs on vnniScoresRunsStride prefetches (Prefetch, into L2) before each
// run where the kernel of kind prefetches the next run itself (runsPF), 0 for none: the q5
// kernels' runs flavours, three (their far prefetches, HDRFAR on, dropped). Zen 4, kvcache
// TestPagedBreakdown (one thread, 32768 cells, 8 KV heads of 128, 4 queries, thread CPU, 2
// alternations, load ~2), the scores of a paged cache: q5_0 2.18–2.39 ms without, 1.72–1.85
// with the run three on (two on 1.79–1.93, four 1.75–1.82), q5_1 2.46–2.49 → 1.87–1.99
// (contiguous 1.9–2.1, the q5 scores before their runs flavours 5.8–6.4). The same for bf16's
// scores (whose runs flavour prefetches the next run into L2 itself) was slower: 4.15–4.21 →
// 4.66–4.97 ms; and for q8_0's one-digit scores (multiScoresQ80OneZ4RunsVNNI): 1.72–1.79 →
// 1.96–2.04 (two on 2.04–2.06), q8_0's values with accRunsLoop's far Prefetch (the run four
// on) 2.07–2.12 → 2.64–2.67 (contiguous 1.45–1.52 and 1.75–1.81). On Intel (intelCPU) q4_1's
// and iq4_nl's take none, as q4_0's: the burst of PREFETCHT1 a run cost more there than it
// saved (Intel Xeon, family 6 model 167, 2 vCPUs, kvcache TestPagedDecodeSpeed, 3
// alternations, load 9–14: paged q4_1 6.25–6.59 → 5.40–5.92 ms, iq4_nl 5.72–6.08 →
// 4.96–5.52; paged ÷ contiguous q4_1 0.98–1.25 → 0.94–1.08, iq4_nl 1.07–1.12 → 0.93–1.05).
func runsFar(kind int) int {
	switch kind {
	case vnniQ4_1, vnniIQ4NL:
		if intelCPU {
			return 0
		}
		return 3
	case vnniQ5_0, vnniQ5_1:
		if q5RunsIntel {
			return 0 // their kernels' far prefetches (q5FarRuns)
		}
		return 3
	}
	return 0
}

// q5RunsIntel is whether q5_0's and q5_1's scores and values over runs take the runs flavours of
// their Intel kernels (q50ScoresX, q51ScoresX; multiAccQ50VIINT, multiAccQ51V8XINT):
// multiScoresQ50XRunsGFNI and multiScoresQ51XRunsGFNI, their L1 prefetches at the next run and
// their far ones (two lines a block into L2) q5FarRuns runs on, where the kernels' go 64 rows and
// 32 KiB further on (past a page's K rows into its V rows and other heads'), and
// multiAccQ50VIRunsINT and multiAccQ51V8XRunsINT (accIntRuns), their prefetches at the run after
// next without the far ones. The scores and sums are the kernels' bit for bit. runsIntel's CPUs
// where those kernels run (q5ScoresGFNI, not q5ScoresZ4; q5_1's values on 8-bit weights).
var q5RunsIntel = runsIntel && q5ScoresGFNI && q50ScoresX && q51ScoresX && !q5ScoresZ4 && !isa.Acc16 && q51W8 && !q5W8

// q5FarRuns is how many runs on q5RunsIntel's scores flavours aim their far prefetches. Two or
// seven in place of four were within noise (kvcache TestPagedDecodeSpeed, Intel Xeon, 2
// alternations, load 20–27: paged q5_0 5.54–5.98 and 5.82–5.97 ms against 5.72–6.05, q5_1
// 7.57–7.76 and 7.88–8.02 against 7.19–8.22).
var q5FarRuns = 4

//go:noescape
func multiScoresQ50XRunsGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf, far int)

//go:noescape
func multiScoresQ51XRunsGFNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf, far int)

//go:noescape
func multiAccQ50VIRunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccQ51V8XRunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

// multiScoresQ41HdrZ4RunsVNNI and multiScoresIQ4NLHdrZ4RunsVBMI are multiScoresQ41HdrZ4VNNI
// and multiScoresIQ4NLHdrZ4VBMI as multiScoresQ40HdrZ4RunsVNNI is multiScoresQ40HdrZ4VNNI
// (gen_runs.go, multi_runs_vnni_amd64.s).
//
//go:noescape
func multiScoresQ41HdrZ4RunsVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf int)

//go:noescape
func multiScoresIQ4NLHdrZ4RunsVBMI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf int)

// multiScoresQ40HdrZ4RunsVNNI and multiScoresQ80OneZ4RunsVNNI are multiScoresQ40HdrZ4VNNI and
// multiScoresQ80OneZ4VNNI prefetching pf bytes past each group of rows (the next run's rows) in
// place of 64 rows on (multi_vnni_amd64.s).
// Not kept: q8_0's one-digit scores over a list of runs in one call (as multiAccQ80Z4ListINT
// takes the values: entries of rows, row count and prefetch offset; the group that ends a run
// staging the next run's first group's scales, where a call a run stages its first group alone
// at its start), bit for bit the same scores. In cache (4096 rows in runs of 64, thread CPU)
// 4.92 → 4.68 ns a row, but a paged cache's scores (kvcache TestPagedBreakdown, Zen 4, 3–5
// alternations, the 8 heads' scores) 1.62–1.79 ms → 2.14–2.44 with up to 64 runs a call,
// 2.14–2.23 with one; with its bookkeeping stripped down to the rows and prefetch offset read
// from the list (one run a call), the rows in runs of 64 contiguous, 1.61–1.64 → 1.76–1.81.
// Why those few scalar instructions cost so much there was not found.
//
//go:noescape
func multiScoresQ40HdrZ4RunsVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf int)

//go:noescape
func multiScoresQ80OneZ4RunsVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf int)

// accRunsQ80 and accRunsQ40 are whether q8_0's values take multiAccQ80Z4INT and q4_0's
// multiAccQ40V8Z4INT (intAccQ8_0's and intAccQ4_0's choice at start, on Zen 4), whose runs
// flavours accIntRuns calls.
var (
	accRunsQ80 = zen4Stream || runsIntel
	// accRunsQ40 also stands for q4_1's and iq4_nl's values on their 8-bit Zen 4 kernels
	// (multiAccQ41V8Z4INT, multiAccIQ4NLV8Z4INT: intAcc8's choice, as q4_0's), whose runs
	// flavours accIntRuns calls since their scores take runs flavours too (runsPF): measurements
	// at runsFar.
	accRunsQ40 = (zen4Stream || runsIntel) && hasVBMI && !isa.Acc16
	// accRunsQ50 and accRunsQ51: q5_0's values on multiAccQ50VINT (16-bit weights: q5W8) and
	// q5_1's on multiAccQ51V8Z4INT (intAccQ5_0's and intAccQ5_1's choices on Zen 4) take their
	// runs flavours (accIntRuns). Without them the values of a paged q5 cache once found their
	// V rows in cache where the scores' kernels had prefetched them, 64 rows past each page's
	// K rows; the scores' runs flavours (multiScoresQ50Z4RunsGFNI, runsPF) prefetch the next
	// page instead, and the values then read theirs cold: measurements at runsPF.
	accRunsQ50 = zen4Stream && hasVBMI && !(hasBITALG && !isa.Acc16 && q5W8)
	accRunsQ51 = zen4Stream && hasGFNI512 && hasVBMI && hasBITALG && !isa.Acc16 && q51W8
	// accRunsTQ4: the values of tq4 and the turbo tiers on their 8-bit kernels
	// (multiAccT4FBINT, multiAccT4BINT, multiAccT3BINT, multiAccT2B) take their runs flavours
	// on Zen 4 and Intel (runsIntel; scoresRunsTQ4 has the measurements). On Intel, before
	// turbo3's and turbo2's scores had runs flavours there (intelTQ4Runs), the split that Zen
	// 4's figures show as a loss in their scores still paid: kvcache TestPagedDecodeSpeed,
	// paged ÷ contiguous decode, the values run by run → their runs flavours, turbo3 1.62–1.64
	// → 1.37–1.39, turbo2 1.40–1.43 → 1.32–1.38.
	accRunsTQ4 = zen4Stream || runsIntel
)

// accIntRuns is accRuns for q8_0 and q4_0 rows (rotated or not) of whole blocks where their
// values accumulate through multiAccQ80Z4INT and multiAccQ40V8Z4INT (Zen 4), four accumulators
// a call (n a multiple of 4), runs of at most AccumulateTile rows: each run goes to the
// kernel's runs flavour, whose prefetches go to the run after next (the kernel's own go to the
// tile after next, 128 rows on: in a paged cache another head's rows). One call a run and
// four accumulators, as AccumulateManyMulti over each run calls the kernel, so the sums are
// its bit for bit. It reports false, doing nothing, where it does not apply. Zen 4,
// TestPagedDecodeSpeed's shape as in runsPF, q8_0's values of the
// 8 heads alone: paged 2.75–3.15 → 2.07–2.14 ms (contiguous 1.77–1.88). The whole paged q8_0
// decode with both (kvcache TestPagedDecodeSpeed, min of 3 alternated runs): 7.24 → 4.25 ms,
// contiguous 3.33 (2.17× → 1.28×). q4_0's (multiAccQ40V8Z4RunsINT, 8-bit weights, without
// the kernel's prefetches 32 KiB further): the values 1.64–2.00 (after the scores' runs
// flavour 1.87–2.14) → 1.48 ms; the whole paged q4_0 decode with its scores' flavour 4.69 →
// 3.36 ms (contiguous 3.26–4.12 in the same runs, load ~16). Intel (runsIntel, with the scores'
// flavours; figures there): paged q8_0 values 4.70–4.89 → 2.94–3.06 ms, q4_0 2.60–2.82 →
// 1.78–1.83.
func accIntRuns(c Codec, acc []float32, n int, w []float32, runs [][]byte) bool {
	ok := false
	rot, _ := c.(*rotCodec) // a rotated codec: its offsets added after each run's sums, as its AccumulateManyMulti does
	if rot != nil {
		c = rot.inner
	}
	var kernel func(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)
	var b *blockCodec
	switch q := c.(type) {
	case *q8_0Codec:
		kernel, b = multiAccQ80Z4RunsINT, &q.blockCodec
		ok = accRunsQ80
		// q8_0's values on the AVX2 int16 kernel (multiAccQ80AVX2INT, the plain AVX2 CPUs'):
		// multiAccQ80AVX2RunsINT (accQ80AVX2Runs), its prefetches at the next run in place of
		// the next tile, with the run after next into L2. Zen 4 with KVLAB_NO_AVX512=1,
		// TestPagedBreakdown (2 alternations, load ~8): paged q8_0 values 3.16–3.20 ms run by
		// run, 4.78–5.10 after the scores' runs flavour (avx2ScoresQ80OneRuns no longer
		// prefetches the V rows past each page), 3.14–3.25 through here with no Prefetch,
		// 2.94–2.98 with a Prefetch of the run after next before each run (three on 2.97–3.01;
		// contiguous 2.70; the kernel's own L2 prefetches: accQ80AVX2Runs). The whole
		// paged q8_0 decode (kvcache TestPagedDecodeSpeed as at avx2FloatScoresRuns, both
		// flavours): 8.10–8.58 → 6.27–6.42 ms (contiguous 5.31–5.42: 1.50–1.58× → 1.18–1.20×).
		// On AVX-VNNI CPUs its VPDPWSSD form (multiAccQ80VNNIINT) likewise takes
		// multiAccQ80VNNIRunsINT, with the scores' avx2ScoresQ80OneVNNIRuns (runsPF).
		if k := avx2IntAccFor(intAccQ8_0); !intAcc() && (k == avx2IntAcc[1] || k == avx2VNNIAcc[1]) {
			if q.full == 0 || q.full*BlockSize != q.d || n%4 != 0 {
				return false
			}
			return accQ80AVX2Runs(rot, q.d, q.rb, acc, n, w, runs, k == avx2VNNIAcc[1])
		}
	case *q4_0Codec:
		kernel, b = multiAccQ40V8Z4RunsINT, &q.blockCodec
		ok = accRunsQ40
	case *q4_1Codec:
		kernel, b = multiAccQ41V8Z4RunsINT, &q.blockCodec
		ok = accRunsQ40
	case *iq4nlCodec:
		kernel, b = multiAccIQ4NLV8Z4RunsINT, &q.blockCodec
		ok = accRunsQ40
	case *q5_0Codec:
		kernel, b = multiAccQ50VRunsINT, &q.blockCodec
		ok = accRunsQ50
		if q5RunsIntel && hasGFNI512 {
			kernel, ok = multiAccQ50VIRunsINT, true
		}
	case *q5_1Codec:
		kernel, b = multiAccQ51V8Z4RunsINT, &q.blockCodec
		ok = accRunsQ51
		if q5RunsIntel && hasGFNI512 && hasBITALG {
			kernel, ok = multiAccQ51V8XRunsINT, true
		}
	case *tq4Codec:
		// tq4's values through multiAccT4FBINT (turboAccKernels; d a multiple of 64, no tail).
		if !accRunsTQ4 || turboAccKernels(q) != intAccT4FB || n%4 != 0 {
			return false
		}
		kernel = multiAccT4FBRunsINT
		return accRunsLoop(kernel, rot, q.d, q.RowBytes(), acc, n, w, runs, !intelCPU) // Intel: no far Prefetch (intelTQ4Runs)
	case *lmCodec:
		// The turbo tiers' values through their 8-bit kernels (turboAccKernels).
		if !accRunsTQ4 || n%4 != 0 {
			return false
		}
		switch turboAccKernels(q) {
		case intAccT4B:
			kernel = multiAccT4BRunsINT
		case intAccT3B:
			kernel = multiAccT3BRunsINT
		case intAccT2B:
			kernel = multiAccT2BRuns
		default:
			return false
		}
		return accRunsLoop(kernel, rot, q.d, q.RowBytes(), acc, n, w, runs, !intelCPU) // Intel: no far Prefetch (intelTQ4Runs)
	}
	if !ok || !intAcc() || b.full == 0 || b.full*BlockSize != b.d || n%4 != 0 {
		return false
	}
	if _, q8 := c.(*q8_0Codec); q8 && (rot == nil || rot.muR == nil) {
		return accQ80List(b.d, b.rb, acc, n, w, runs)
	}
	return accRunsLoop(kernel, rot, b.d, b.rb, acc, n, w, runs, false)
}

// runEntry is an entry of multiAccQ80Z4ListINT's list: a run's rows, its row count and the
// offset of the rows its prefetches aim at.
type runEntry struct {
	rows  unsafe.Pointer
	m, pf uintptr
}

// listRuns is how many runs accQ80List hands multiAccQ80Z4ListINT a call at most.
const listRuns = 64

// accQ80List is accRunsLoop for q8_0's Zen 4 values kernel without a rotated codec's offsets
// (which accRunsLoop adds after each run's sums): up to listRuns runs a call of
// multiAccQ80Z4ListINT, a tile each, whose prefetches go to the run after next and whose next
// tile's prepass, pipelined into the tile's row loops as over contiguous rows, reads the next
// run's rows, where a call a run (multiAccQ80Z4RunsINT) formed each run's prepass alone at its
// start. The sums are multiAccQ80Z4INT's over each run, bit for bit. False, doing nothing,
// where a run holds more than AccumulateTile rows. Zen 4, kvcache TestPagedBreakdown (2
// alternations, load ~7): the values of the 8 heads paged 2.03–2.07 → 1.88–1.91 ms, over
// contiguous rows a run a call 2.00–2.02 → 1.82 (contiguous 1.71–1.76); the whole paged q8_0
// decode (TestPagedDecodeSpeed, 3 alternations) 3.90–4.46 → 3.70–3.86 ms, contiguous
// 3.24–3.26 (1.20–1.37× → 1.14–1.18×).
func accQ80List(d, rb int, acc []float32, n int, w []float32, runs [][]byte) bool {
	for _, r := range runs {
		if len(r) > AccumulateTile*rb {
			return false
		}
	}
	acc = acc[:n*d]
	if len(runs) > 1 {
		Prefetch(runs[1]) // the first run's prefetches reach the third
	}
	var list [listRuns + 1]runEntry
	base, total := 0, len(w)/n
	for i := 0; i < len(runs) && base < total; {
		k, first := 0, base
		var rows *byte
		for ; i < len(runs) && k < listRuns && base < total; i++ {
			r := runs[i]
			m := min(len(r)/rb, total-base)
			if m <= 0 {
				continue
			}
			if k == 0 {
				rows = &r[0]
			}
			list[k] = runEntry{unsafe.Pointer(&r[0]), uintptr(m), uintptr(runsAfterNext(runs, i))}
			k++
			base += m
		}
		if k == 0 {
			break
		}
		list[k] = list[k-1] // read past the last run, not used
		ws := w[first*n : base*n]
		for h := 0; h < n; h += 4 {
			multiAccQ80Z4ListINT(&acc[h*d], d, d, rows, rb, base-first, &ws[h], 4*n, &list[0])
		}
	}
	return true
}

// multiAccQ80Z4ListINT is multiAccQ80Z4INT over the runs of list, a tile each (gen_runs.go,
// multi_runs_amd64.s).
//
//go:noescape
func multiAccQ80Z4ListINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, list *runEntry)

// accRunsLoop is accIntRuns's loop: each run to kernel, four accumulators a call, prefetching
// the run after next, and with far the run four on into L2 (Prefetch) before each run's calls
// (in place of the L2 prefetches the tq4 kernel aims 32 KiB past its near ones); false, doing
// nothing, where a run holds more than AccumulateTile rows.
func accRunsLoop(kernel func(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int),
	rot *rotCodec, d, rb int, acc []float32, n int, w []float32, runs [][]byte, far bool) bool {
	for _, r := range runs {
		if len(r) > AccumulateTile*rb {
			return false
		}
	}
	acc = acc[:n*d]
	if len(runs) > 1 {
		Prefetch(runs[1]) // the first run's prefetches reach the third
	}
	base, total := 0, len(w)/n
	for i, r := range runs {
		m := min(len(r)/rb, total-base)
		if m <= 0 {
			continue
		}
		pf := runsAfterNext(runs, i) // the last two runs prefetch their own rows again
		if j := i + 4; far && j < len(runs) {
			Prefetch(runs[j])
		}
		ws := w[base*n : (base+m)*n]
		for h := 0; h < n; h += 4 {
			kernel(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf)
		}
		if rot != nil {
			rot.accOffsets(acc, d, n, ws)
		}
		base += m
	}
	return true
}

// multiAccQ40V8Z4RunsINT and multiAccQ80Z4RunsINT are multiAccQ40V8Z4INT and multiAccQ80Z4INT
// prefetching pf bytes past each tile's first row in place of 128 rows on (and for q4_0 32 KiB
// further: gen_intacc.go's pfFar) (gen_runs.go, multi_runs_amd64.s).
//
//go:noescape
func multiAccQ40V8Z4RunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

// multiAccT2BRuns is multiAccT2B's runs flavour: multiAccT2BMRunsINT for rows at most 48 bytes
// apart, else multiAccT2BRunsINT.
func multiAccT2BRuns(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int) {
	if rb <= 48 {
		multiAccT2BMRunsINT(acc, d, nv, rows, rb, m, w, wstride, pf)
		return
	}
	multiAccT2BRunsINT(acc, d, nv, rows, rb, m, w, wstride, pf)
}

//go:noescape
func multiAccQ41V8Z4RunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccIQ4NLV8Z4RunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccQ50VRunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccQ51V8Z4RunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccT4BRunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccT3BRunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccT2BRunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccT2BMRunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccT4FBRunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

//go:noescape
func multiAccQ80Z4RunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf int)

// f16ScoresRuns is whether f16's four-query scores over runs take multiScoresF16Z4's runs
// flavour (scoresRuns): on Zen 4, where f16Scores4 takes multiScoresF16Z4 over contiguous rows,
// and on Intel (intelCPU), where it takes f16ScoresSplit, whose scores (multiScoresF16AVX512's,
// TestScoresSplitMatches) multiScoresF16Z4's are bit for bit (TestF16ScoresZ4Matches). Intel Xeon (2 vCPUs, KVM, family 6 model 167),
// kvcache TestPagedBreakdown (one thread, 32768 cells, 8 KV heads of 128, 4 queries, thread
// CPU, 4 alternations, load 12–25): paged f16 scores 9.65–9.90 → 6.58–6.98 ms, its values
// 4.96–5.27 → 6.48–6.65 (contiguous 3.65–3.96 and 3.72–4.04; the values no longer find the
// rows the run-by-run scores' prefetches past each page left in L2). Not kept on Intel: the
// L2 prefetches of f16's and bf16's scores flavours at the run after next in place of the next
// (kvcache TestPagedBreakdown, 2 alternations, load 25–28: paged f16 scores 7.38–7.68 →
// 7.79–7.79 ms, bf16 6.81–7.32 → 6.94–7.76; contiguous 4.5–6.2). Nor a runs flavour of Intel's
// own loop (multiScoresF16AVX512 with its PREFETCHT0 6 KiB on in the run and the next taken as
// one, as multiScoresBF16RunsAVX512's L1 prefetches; built with gen_runs.go and dropped): f16
// scores of 8 heads × 32768 rows over runs of 64 rows 256 KiB apart 6.6–7.0 ms against
// 6.3–7.0 with this flavour (a scratch harness, 3 alternations, load ~13), over runs one after
// another 4.6–5.3 against 5.4–5.8 (kvcache TestPagedBreakdown's contiguous cache in runs, 3
// alternations, load ~5), which runStretches now takes in one call of multiScoresF16AVX512. The
// runs' layout, not their prefetches, held paged f16 back (kvcache's pageMem).
var f16ScoresRuns = (zen4Stream || intelCPU) && hasAVX512VL

// scoresRuns is DotManyMultiRuns's kernel path for f16 rows of a multiple of 32 values where
// the four-query scores run multiScoresF16Z4 (Zen 4), n a multiple of 4: each run goes to
// multiScoresF16Z4Runs, whose L2 prefetches (PREFETCHT1) go to the same rows of the next run,
// where multiScoresF16Z4's go 12 KiB on (past a 16 KiB page's run of rows of 128 values, into
// the memory that follows it: in a paged cache the same head's V rows), and which leaves out
// the kernel's L1 prefetches (PREFETCHT0, 3 KiB on; see below). The scores are multiScoresF16Z4's, bit for bit. It
// reports false, doing nothing, where it does not apply. Zen 4, kvcache TestPagedDecodeSpeed
// (as in runsPF, min of 3 alternated runs): paged f16 8.00 → 6.87 ms, contiguous 5.34 (1.50×
// → 1.29×); the scores of the 8 heads alone 4.93–5.24 → 3.57–3.75 ms (contiguous 2.72–2.80).
// Not kept: the L2 prefetches at the run after next (3.60–3.78 ms, within noise); each run's
// last 12 rows in a second call after a PREFETCHT0 of the next run's first 3 KiB, so that
// the L1 prefetches reach the next run too (kvcache TestPagedBreakdown, 3 alternations: 3.42–
// 3.68 against 3.60–3.68 ms, within noise). The L1 prefetches, 3 KiB on, missed the next run's
// first 12 rows and read the memory past the run instead (in a paged cache another head's
// rows): the flavour leaves them out, the L2 prefetches of the next run and the hardware's
// L1 prefetcher within each run feeding the loads (kvcache TestPagedBreakdown, 2 alternations,
// load ~15: the scores of the 8 heads 3.69–3.88 → 2.84–2.99 ms, contiguous 2.70–2.83; the
// values 2.73–2.89 → 2.81–3.02, within noise; the L1 prefetches aimed at the next run's rows
// in place of both: 5.51–5.57); the whole paged f16 decode (kvcache TestPagedDecodeSpeed, 3
// alternations, load ~12) 6.56–6.74 → 5.68–5.81 ms, contiguous 5.29–5.36 (1.24–1.27× →
// 1.07–1.09×). Zen 4 and Intel run it (f16ScoresRuns; other CPUs keep multiScoresF16AVX512).
func scoresRuns(c Codec, q []float32, n int, runs [][]byte, out []float32) bool {
	if fp8ScoresRuns(c, q, n, runs, out) || avx2FloatScoresRuns(c, q, n, runs, out) {
		return true
	}
	var d, rb int
	kernel := multiScoresF16Z4Runs
	switch f := c.(type) {
	case *f16Codec:
		if !f16ScoresRuns || multiF16 != avx512Kernels[0] || f.short() {
			return false
		}
		d, rb = f.d, f.rb
	case *bf16Codec:
		if !bf16RunsZ4 || multiBF16 != bf16AVX512 {
			return false
		}
		d, rb, kernel = f.d, f.rb, multiScoresBF16RunsAVX512
	default:
		return false
	}
	if d%32 != 0 || n%4 != 0 {
		return false
	}
	floatScoresRuns(kernel, q, n, d, rb, runs, out)
	return true
}

// mergeRuns is whether DotManyMultiRuns and AccumulateManyMultiRuns take runs that lie one
// after another in memory in one call of the codec's kernels a stretch (runStretches): Intel
// (intelCPU), every format (f16's and bf16's first, where all of a call's runs were one
// stretch). Intel Xeon (family 6 model 167, 2 vCPUs), kvcache TestPagedDecodeSpeed (one thread,
// 32768 cells, 32/8 heads of 128, thread CPU, best of 12 rounds; old and new test binaries
// alternated three times, load 8–12), paged ms (paged ÷ contiguous) before → after: q8_0
// 6.83–7.04 (1.06–1.19) → 5.58–6.31 (1.04–1.08), q4_0 4.32–4.55 (1.11–1.12) → 3.67–3.88
// (0.97–0.98), iq4_nl 4.25–4.50 (1.04–1.08) → 3.52–3.95 (0.93–0.99), fp8 7.33–7.72
// (1.19–1.23) → 6.00–6.42 (1.03–1.04), tq4 4.03–4.25 (1.20–1.23) → 3.12–3.50 (0.96–1.03),
// turbo4 4.00–4.29 (1.10–1.13) → 3.27–3.40 (0.90–0.92), q5_0 5.10–5.49 → 4.38–4.79, q5_1
// 5.36–5.74 → 4.69–5.01; KVLAB_NO_AVX512=1 (2 alternations): q4_0 1.14–1.20 → 0.99–1.00,
// iq4_nl 1.23–1.24 → 0.99–1.01, q5_0 1.25–1.26 → 0.99–1.02; the rest, bf16, turbo2
// and f16 within noise. Shorter stretches among runs apart (two caches of one pool growing S
// pages in turn, a scratch test; 2 alternations, load 6–10), the whole decode with every
// stretch in one call against the runs kernels: S 8 (512 rows) q8_0 8.42–8.54 ms against
// 7.18–7.27, fp8 9.79–9.92 against 7.95–8.16, tq4 5.40–5.51 against 4.27–4.44; S 16 7.36–7.46
// against 7.01–7.11, 8.24–8.32 against 7.88–7.90, 4.42–4.61 against 4.27; S 32 6.54–6.92
// against 6.96–7.02, 7.34–7.62 against 7.67–7.83, 3.84–3.90 against 4.21–4.23; S 64 6.35–6.43
// against 6.90–7.10, 6.69–6.92 against 7.58–7.61, 3.46–3.73 against 4.14–4.16. Hence
// mergeMin. Each stretch restarts the kernels' streams cold (~1 µs a stretch more than the
// runs kernels, which prefetch the next run as they go); prefetching the next stretch's
// middle rows (where the two-stream scores kernels start their second stream) besides its
// first 4 KiB (prefetchStretch) took 0–5 % off S 8–32, 8 KiB in place of 4 nothing. A pool of
// many layers has few pages in a 64 MiB slab (15 pages of 32 layers × 8 KV heads of q8_0 at 128
// values, 960 rows, under mergeMin), so kvcache's slabs grow with the pool to 8192 cells
// (slabCells), where a long cache's stretches reach it.
var mergeRuns = intelCPU

// mergeCodec is whether runStretches may take c's runs a stretch a call: not q8_0 on the AVX2
// kernels (intAcc off: multiAccQ80AVX2INT or its VNNI form, whose runs flavours
// accQ80AVX2Runs and avx2ScoresQ80OneRuns stream a paged cache as fast) nor fp8 on them
// (multiFP8 fp8AVX2: avx2FloatScoresRuns, multiAccFP8AVX2TPF). Intel Xeon with
// KVLAB_NO_AVX512=1 KVLAB_NO_AVXVNNI=1 (the plain AVX2 kernels), kvcache TestPagedDecodeSpeed (4
// alternations, load 4.8–6.8), paged ms with their stretches in one call against run by run:
// q8_0 7.91–8.30 against 7.66–8.38 (paged ÷ contiguous 1.06–1.10 against 1.00–1.05), fp8
// 10.01–10.44 against 9.85–10.57 (1.04–1.06 against 0.98–1.02); with KVLAB_NO_AVX512=1
// alone (AVX-VNNI) within noise (q8_0 1.03–1.12 against 1.03–1.14, fp8 1.03–1.06 against
// 1.02–1.03), while q4_0 went 1.09–1.10 → 0.89–0.93, q5_0 1.13–1.15 → 0.96–0.99, tq4 1.00–1.04
// → 0.92–0.99 on the plain AVX2 kernels.
func mergeCodec(c Codec) bool {
	if r, ok := c.(*rotCodec); ok {
		c = r.inner
	}
	switch c.(type) {
	case *q8_0Codec:
		return intAcc()
	case fp8Codec:
		return multiFP8 != fp8AVX2
	}
	return true
}

// floatScoresRuns runs kernel, the runs flavour of a float scores kernel (four queries a
// call, n a multiple of 4, d values a row, rb bytes a row), over each run in turn, its
// prefetches at the next non-empty run, and returns how many rows it scored.
func floatScoresRuns(kernel func(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int, pf int),
	q []float32, n, d, rb int, runs [][]byte, out []float32) int {
	q = q[:n*d]
	base, total := 0, len(out)/n
	for i, r := range runs {
		m := min(len(r)/rb, total-base)
		if m <= 0 {
			continue
		}
		pf := nextRunOffset(runs, i)
		o := out[base*n : (base+m)*n]
		for h := 0; h < n; h += 4 {
			kernel(&q[h*d], d, d, &r[0], rb, m, &o[h], 4*n, pf)
		}
		base += m
	}
	return base
}

// fp8RunsZ4 is whether fp8's bf16 scores over runs go through fp8ScoresRuns and its bf16
// values (multiAccFP8BF16) through their runs flavour, multiAccFP8BF16RunsAVX512 (accFP8Runs):
// Zen 4 only (other CPUs with those kernels, Zen 5 among them, keep DotManyMultiRuns's
// run-by-run calls). Intel runs fp8's float32 kernels (fp8F32), whose runs flavours are
// fp8F32ScoresRuns and multiAccFP8VBMIRunsAVX512. Before fp8F32, the bf16 flavours measured on
// an Intel Xeon (2 vCPUs, KVM, family 6 model 167), kvcache TestPagedBreakdown (one thread,
// 32768 cells, 8 KV heads of 128, 4 queries, thread CPU, 2 alternations, load ~10): paged fp8
// scores 6.77–6.92 → 4.51–4.63 ms (multiScoresFP8BF16HRunsAVX512), values 6.30–6.46 → 5.11–5.16
// (contiguous 3.94 and 4.52).
var fp8RunsZ4 = zen4Stream

// fp8ScoresRuns is DotManyMultiRuns for fp8 rows of a multiple of 32 values through the bf16
// kernels (scoresBF16's choice: fp8BF16Active, fp8BF16ScoresH), n a multiple of 4, plain or
// rotated (the channel offsets, mu, start the scores as scoresBF16 has them do): each group of
// four queries is packed to bf16 (and its offsets summed) once for all the runs, not once a
// run, and each run's rows go to the kernel scoresBF16 calls with the next run prefetched
// (Prefetch) as it starts. The kernel's arguments are scoresBF16's, so the scores are its bit
// for bit. It reports false, doing nothing, where it does not apply. The kernel is
// multiScoresFP8BF16H's runs flavour (multiScoresFP8BF16HRunsAVX512), its L1 prefetches
// PFDISTZ on in the run and the next taken as one and its L2 prefetches at the run after next. Zen 4, kvcache
// TestPagedBreakdown (one thread, 32768 cells, 8 KV heads of 128, 4 queries, thread CPU, 2
// alternations, load ~2), fp8's scores: paged 4.24–5.04 ms, 4.60–4.63 with the queries
// packed once a batch (contiguous in runs 3.09–3.19 → 2.33), 3.62–3.93 with the runs flavour
// (L1 at the next run), 2.64–2.75 with the run three on into L2 besides (the run two on
// 2.71–3.16, four on 2.86–2.92, the run after next in L1 with the run three or four on
// 2.86–3.03; contiguous 1.92–2.00). The run three on prefetched by the kernel into L2 as
// it goes, the same rows as its L1 prefetches' (pf2), in place of the Prefetch before each run
// (TestPagedBreakdown, 2 alternations, load ~6): 2.49–2.57 → 2.40–2.43 ms (the run after next
// 2.40–2.43; contiguous 1.90–1.93; the calls a run each over contiguous rows 2.45–2.51 →
// 2.26–2.32), the whole paged fp8 decode within noise (TestPagedDecodeSpeed, 4 alternations:
// 4.63–4.76 ms before, 4.67–4.71 after). Its L1 prefetches at the same rows of the next run
// were 64 rows (8.25 KiB) ahead where the kernel's go PFDISTZ (6 KiB) ahead: streamed over
// contiguous rows (kvq, 2^20 rows in calls of 64, thread CPU, 3 runs) the runs flavour took
// 0.5–0.9 ns a row more than the kernel, the L2 prefetches three runs on 0.3 of it. Aimed
// PFDISTZ on in this run and the next taken as one (per four rows: PFDISTZ on while that is
// in the run, else into the next run), with the L2 prefetches at the run after next, the
// flavour took the kernel's time (8.17 against 8.21, 8.03 against 8.04 ns a row); paged scores
// (TestPagedBreakdown, 3 alternations) 2.50–2.57 → 2.07–2.17 ms (the run three on in L2
// 2.09–2.13; contiguous 1.89–1.96), the whole paged fp8 decode (TestPagedDecodeSpeed, 4
// alternations) 4.68–4.75 → 4.08–4.20 ms, contiguous 3.70–3.78 (1.24–1.28× → 1.08–1.11×).
// Its values through multiAccFP8BF16RunsAVX512
// (accFP8Runs): 3.75–4.12 → 1.84–2.04 ms (contiguous 1.73–1.81). On Zen 4 (fp8BF16ScoresZ4)
// the runs flavour is multiScoresFP8BF16HZ4's, as over contiguous rows (the same scores bit for
// bit). Measured first against the Z4 kernel before it loaded each query vector once for both
// row pairs: within noise (TestPagedDecodeSpeed, 5 alternations, paged 4.15–4.27 → 4.18–4.29
// ms); against that kernel (which multiScoresFP8BF16H's runs flavour does not follow): the
// whole paged fp8 decode (5 alternations, load ~8) 4.14–4.30 → 3.95–4.10 ms, contiguous
// 3.50–3.56 (1.17–1.22× → 1.11–1.17×), the 8 heads' scores (TestPagedBreakdown) 2.07 → 1.92
// paged, 1.96 → 1.79 over contiguous rows in runs (contiguous 1.68–1.70).
func fp8ScoresRuns(c Codec, q []float32, n int, runs [][]byte, out []float32) bool {
	var mu []float32
	if r, ok := c.(*rotCodec); ok {
		c, mu = r.inner, r.muR
	}
	f, ok := c.(fp8Codec)
	if ok && f.d == 128 && fp8AMXActive() && n%4 == 0 {
		if mu != nil {
			mu = mu[:128]
		}
		return fp8AMXScoresRuns(q, n, runs, out, mu)
	}
	if ok && multiFP8 == fp8F32 && !f.bf16Scores() && f.d%32 == 0 && n%4 == 0 && f.d <= multiScratchDim {
		return fp8F32ScoresRuns(f.d, q, n, runs, out, mu)
	}
	if !ok || !fp8RunsZ4 || !f.bf16Scores() || f.d%32 != 0 || n%4 != 0 || f.d > multiScratchDim {
		return false
	}
	d, rb := f.d, f.d+4
	if mu != nil {
		mu = mu[:d]
	}
	m := len(out) / n
	q, out = q[:n*d], out[:m*n]
	hv := fp8BF16ScoresH
	var packStack [8*multiScratchDim + 32]uint16
	pack := align64(packStack[:]) // as scoresBF16 aligns it
	for h := 0; h < n; h += 4 {
		qh := q[h*d : (h+4)*d]
		if hv {
			fp8QueryBF16H(&pack[0], &qh[0], d, d)
		} else {
			fp8QueryBF16(&pack[0], &qh[0], d, d)
		}
		var offs [4]float32
		if mu != nil {
			fp8Offsets(&offs[0], &qh[0], d, d, &mu[0])
			for i := range offs {
				offs[i] += lmDot(qh[(i+1)*d:(i+1)*d], mu[d:]) // no values past the whole 32s: as scoresBF16 adds them
			}
		}
		base := 0
		for i, r := range runs {
			mr := min(len(r)/rb, m-base)
			if mr <= 0 {
				continue
			}
			if hv {
				pf, pf2 := runsPrefetch(runs, i) // pf2 into L2 ahead of the L1 prefetches
				if fp8BF16ScoresZ4 {
					multiScoresFP8BF16HZ4RunsAVX512(&pack[0], d, &r[0], rb, mr, &out[base*n+h], 4*n, d, &offs[0], pf, pf2, 0)
				} else {
					multiScoresFP8BF16HRunsAVX512(&pack[0], d, &r[0], rb, mr, &out[base*n+h], 4*n, d, &offs[0], pf, pf2, 0)
				}
			} else {
				if i+1 < len(runs) {
					Prefetch(runs[i+1]) // the kernel's prefetches run past this run's end
				}
				multiScoresFP8BF16(&pack[0], d, &r[0], rb, mr, &out[base*n+h], 4*n, d, &offs[0])
			}
			base += mr
		}
	}
	return true
}

// multiScoresF16Z4Runs is multiScoresF16Z4 prefetching into L2 pf bytes past each row in
// place of 12 KiB, without its L1 prefetches 3 KiB on (gen_runs.go, multi_runs_amd64.s).
//
//go:noescape
func multiScoresF16Z4Runs(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int, pf int)

// scoresRunsTQ4 is whether tq4's scores over runs take multiScoresTQ4B2RunsVNNI where they
// would take multiScoresTQ4B2VNNI (tq4Pair: Zen 4 with the rows on 2 MiB pages), four queries
// a call (tq4ScoresVNNIRuns), and its values multiAccT4FBRunsINT where they would take
// multiAccT4FBINT (accIntRuns). The scores' L1 prefetches go to the run after next (where the
// kernel's go 8 groups of rows on, past a page into its V rows), and a Prefetch (PREFETCHT1)
// of the run three on before each run stands for the kernel's L2 prefetches 16 KiB further;
// the values' prefetches go to the run after next and a Prefetch takes the run four on (the
// kernel's go 3 KiB past the tile after next and 32 KiB further). Zen 4, kvcache
// TestPagedBreakdown and TestPagedDecodeSpeed (one thread, 32768 cells, 32/8 heads of 128,
// thread CPU, min of 3 runs alternated with the old binary; load ~15): paged tq4 scores
// 1.69–2.95 → 1.45–1.56 ms (contiguous 1.26–1.76), values with the runs flavour and no far
// Prefetch 1.59–1.86, with Prefetch of the run four on 1.29–1.32 (of the run eight on
// 1.31–1.55; contiguous 1.20–1.60); the paged decode 4.20–5.67 → 2.81–4.36 ms (contiguous
// 2.57–3.95, noise of a machine at load ~15). turbo4 likewise (multiScoresT4B2RunsVNNI,
// multiAccT4BRunsINT; 3 alternations): scores 1.82–1.98 → 1.38–1.50, values 1.98–2.13 →
// 1.25–1.32 (contiguous 1.40–1.72, 1.25–1.62), the paged decode 4.12–4.63 → 2.77–2.86
// (contiguous 2.65–3.04). turbo3's and turbo2's values (multiAccT3BRunsINT, multiAccT2BRuns):
// 2.09–2.20 → 1.33–1.37 and 1.39–1.43 → 1.08–1.10, but their scores (kernels without runs
// flavours, a Prefetch of each next run) 1.46–1.51 → 1.84–2.28 and 1.17–1.21 → 1.27–1.59,
// which had found rows where the values' prefetches past each page had left them; the paged
// decode 3.86–3.99 → 3.29–3.61 and 2.79–3.66 → 2.72–3.19. Not kept (3 alternations, load
// ~20): a Prefetch of the run three on besides each next run for turbo3's and turbo2's scores,
// 2.03–2.61 → 1.86–2.13 and 1.60–2.07 → 1.56–1.67 ms, the paged decode within noise (turbo3
// 3.50–4.45 against 3.60–3.78). Their packed kernels' runs flavours (t23ScoresRuns, the
// pair kernels' scheme; 2 alternations, load ~2): turbo2's scores 1.46–1.58 → 1.11–1.12,
// turbo3's 1.98–2.03 → 1.31–1.45 (contiguous 1.03–1.05, 1.18–1.28), the values unchanged.
// Only Zen 4 runs those (t23Uni is Zen 4's choice); other CPUs keep the Prefetch of each next
// run whole for turbo3's and turbo2's scores. Intel takes all four's values' flavours
// (accRunsTQ4) and the runs flavours of the scores kernels it runs (intelTQ4Runs: its tq4 and
// turbo4 kernels are not the pair ones, tq4Pair being Zen 4's).
var scoresRunsTQ4 = zen4Stream || runsIntel

// t23ScoresRuns is whether the scores of turbo3 or turbo2 (kind) rows of d values, rb bytes,
// over runs take the runs flavours of their packed uniform-scale kernels (multiScoresT3PUVNNI,
// multiScoresT2PUVNNI: tq4ScoresVNNI's choice where t23Uni and rb ≤ 52 or 48, with the
// AVX-512 VNNI and VBMI kernels), multiScoresT3PURunsVNNI and multiScoresT2PURunsVNNI, as
// tq4's and turbo4's pair kernels take theirs (scoresRunsTQ4): their L1 prefetches at the run
// after next and a Prefetch of the run three on before each run. Zen 4 only, as t23Uni (its
// packed kernels) is: Intel's turbo3 and turbo2 scores take intelTQ4Runs's flavours.
func t23ScoresRuns(kind, d, rb int) bool {
	if !scoresRunsTQ4 || !hasVNNIBW || !hasVBMI || !t23Uni(kind, d) {
		return false
	}
	switch kind {
	case vnniT3:
		return rb <= 52
	case vnniT2:
		return rb <= 48
	}
	return false
}

// intelTQ4Runs is whether the scores of tq4, turbo4, turbo3 or turbo2 (kind) rows of nb
// 32-value chunks, rb bytes, uniform-scale kernels or not (uni), over runs take the runs
// flavours of the kernels Intel runs over contiguous rows (tq4ScoresVNNIRuns's kernel):
// multiScoresTQ4BRunsVNNI, multiScoresT4BRunsVNNI (the one-chunk kernels: tq4Pair is Zen 4's),
// multiScoresT3PRunsVNNI and multiScoresT2PRunsVNNI (the packed ones: t23Uni is Zen 4's), their
// L1 prefetches at the run after next where the kernels' go PFGROUPS groups (128 rows) on, past
// a page's rows into its V rows and other heads', and a Prefetch of the run three on before each
// run, as the pair kernels' flavours take theirs on Zen 4 (scoresRunsTQ4). Intel only
// (runsIntel), with the values' runs flavours (accRunsTQ4): the two halves go together. The
// scores are the kernels' bit for bit. On Intel neither these scores nor the four formats'
// values (accRunsLoop's far) take the Prefetch of a run further on (three on, four on) that
// Zen 4's take: a burst of PREFETCHT1 over a whole run cost more there than it saved, as
// q4_1's (runsFar). Intel Xeon, kvcache TestPagedDecodeSpeed, 2 alternations, load 12–18,
// with both → without either: paged tq4 4.24–4.61 → 3.79–3.99 ms, turbo2 2.73–2.77 →
// 2.39–2.49, turbo3 3.82–4.01 → 3.26–3.29, turbo4 4.45–4.66 → 3.89–3.92 (contiguous 3.9–4.4,
// 2.5–2.7, 3.1–3.3, 4.2–4.5); the scores' alone or the values' alone took about half of it.
func intelTQ4Runs(kind, nb, rb int, uni bool) bool {
	if !runsIntel || uni {
		return false
	}
	switch kind {
	case vnniTQ4, vnniT4:
		return !tq4Pair(nb)
	case vnniT3:
		return rb <= 52
	case vnniT2:
		return rb <= 48
	}
	return false
}

//go:noescape
func multiScoresTQ4BRunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

//go:noescape
func multiScoresT4BRunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

//go:noescape
func multiScoresT3PRunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

//go:noescape
func multiScoresT2PRunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

//go:noescape
func multiScoresT3PURunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

// multiScoresT2PUSRunsVNNI is multiScoresT2PUSVNNI's runs flavour (multiScoresT2PURunsVNNI's
// prefetches), for scores 16 bytes apart.
//
//go:noescape
func multiScoresT2PUSRunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

//go:noescape
func multiScoresT2PURunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

// nextRunOffset is the byte offset from runs[i] (not empty) to the next non-empty run, 0 (its
// own rows again) where none follows.
func nextRunOffset(runs [][]byte, i int) int {
	for _, nx := range runs[i+1:] {
		if len(nx) > 0 {
			return runOffset(runs[i], nx)
		}
	}
	return 0
}

// runsPrefetch is a runs kernel's two prefetch offsets from runs[i] (not empty): pf the next
// non-empty run (nextRunOffset), pf2 the run after next, the next run where there is none.
func runsPrefetch(runs [][]byte, i int) (pf, pf2 int) {
	pf = nextRunOffset(runs, i)
	return pf, cmp.Or(runsAfterNext(runs, i), pf)
}

// runsAfterNext is the byte offset from runs[i] (not empty) to runs[i+2], 0 (its own rows
// again) where that run is missing or empty.
func runsAfterNext(runs [][]byte, i int) int {
	if j := i + 2; j < len(runs) {
		return runOffset(runs[i], runs[j])
	}
	return 0
}

// runOffset is the byte offset from run from's rows (not empty) to run to's, 0 (from's own
// rows again) where to is empty: the pf argument of the runs kernels.
func runOffset(from, to []byte) int {
	if len(to) == 0 {
		return 0
	}
	return int(uintptr(unsafe.Pointer(&to[0])) - uintptr(unsafe.Pointer(&from[0])))
}

// multiScoresTQ4B2RunsVNNI is multiScoresTQ4B2VNNI prefetching pf bytes past each group of
// rows (the run after next) in place of PFGROUPS groups on, without its L2 prefetches PFFAR
// further (gen_runs.go, multi_runs_amd64.s).
//
//go:noescape
func multiScoresT4B2RunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

//go:noescape
func multiScoresTQ4B2RunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

// multiScoresTQ4B2URunsVNNI is multiScoresTQ4B2UVNNI (tq4Uni) prefetching as
// multiScoresTQ4B2RunsVNNI does (gen_runs.go, multi_runs_amd64.s).
//
//go:noescape
func multiScoresTQ4B2URunsVNNI(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32, pf int)

// avx2FloatScoresRuns is DotManyMultiRuns's kernel path for f16, bf16 and fp8 rows of a
// multiple of 32 values on the AVX2 kernels (multiScoresF16AVX2T, multiScoresBF16AVX2T,
// multiScoresFP8AVX2TW; every CPU that runs them), plain or rotated (its offsets added after, as
// rotCodec.DotManyMulti adds them), n a multiple of 4: each run goes to the kernel's runs
// flavour (gen_runs.go's avx2fScoresRuns), which prefetches the next run's rows into L2 a step
// at a time, where the run-by-run loop prefetched it (and the run three on) whole before each
// run (scoresRunsFar) and the kernel's L1 prefetches ran past the run. The scores are the
// kernels' bit for bit. It reports false, doing nothing, where it does not apply. Zen 4 with
// KVLAB_NO_AVX512=1, kvcache TestPagedDecodeSpeed (one thread, 32768 cells, 32/8 heads of 128,
// thread CPU, best of 12 rounds, 3 runs alternated with the old code, load ~12), with fp8's
// values through multiAccFP8AVX2TPF (accFP8Runs): paged f16 8.14–8.31 → 6.31–6.64 ms
// (contiguous 5.82–5.96: 1.37–1.43× → 1.06–1.13×), bf16 8.87–9.10 → 6.98–7.22 (contiguous
// 6.57–6.70), fp8 11.95–12.43 → 8.44–8.98 (contiguous 7.81–8.10). Intel not measured: the
// same instructions, the prefetches at other addresses. fp8's flavour made of
// multiScoresFP8AVX2TW (each group widened a group ahead of its FMAs) in place of
// multiScoresFP8AVX2T, Intel Xeon, KVLAB_NO_AVX512=1, TestPagedBreakdown and
// TestPagedDecodeSpeed, test binaries alternated, load 4–7, median ms (paged ÷ contiguous in
// the same process): paged scores 5.30 → 5.00 (1.08 → 1.00) in 8 rounds, 5.09 → 4.90 (1.06 →
// 1.03) in 5 with KVLAB_NO_AVXVNNI=1 too; paged decodes 10.59 → 10.51 (1.08 → 1.06) and 10.41
// → 10.03 (1.07 → 1.04).
func avx2FloatScoresRuns(c Codec, q []float32, n int, runs [][]byte, out []float32) bool {
	rot, _ := c.(*rotCodec)
	if rot != nil {
		c = rot.inner
	}
	var d, rb int
	var kernel func(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int, pf int)
	switch f := c.(type) {
	case *f16Codec:
		if multiF16 != f16AVX2 || f.short() {
			return false
		}
		d, rb, kernel = f.d, f.rb, multiScoresF16AVX2TRuns
	case *bf16Codec:
		if multiBF16 != bf16AVX2 {
			return false
		}
		d, rb, kernel = f.d, f.rb, multiScoresBF16AVX2TRuns
	case fp8Codec:
		if multiFP8 != fp8AVX2 {
			return false
		}
		d, rb, kernel = f.d, f.d+4, multiScoresFP8AVX2TRuns
	default:
		return false
	}
	if d%32 != 0 || n%4 != 0 || d == 0 {
		return false
	}
	base := floatScoresRuns(kernel, q, n, d, rb, runs, out)
	if rot != nil && rot.muR != nil {
		addOffsets(d, q, n, out[:base*n], rot.muR)
	}
	return true
}

// multiScoresF16AVX2TRuns, multiScoresBF16AVX2TRuns and multiScoresFP8AVX2TRuns are
// multiScoresF16AVX2T, multiScoresBF16AVX2T and multiScoresFP8AVX2TW prefetching at each step
// the same rows of the next run, pf bytes on (gen_runs.go, multi_runs_amd64.s).
//
//go:noescape
func multiScoresF16AVX2TRuns(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int, pf int)

//go:noescape
func multiScoresBF16AVX2TRuns(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int, pf int)

//go:noescape
func multiScoresFP8AVX2TRuns(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int, pf int)

// runsNext is the byte offset from runs[i] (not empty) to runs[i+1], 0 (its own rows again)
// where that run is missing or empty.
func runsNext(runs [][]byte, i int) int {
	if j := i + 1; j < len(runs) {
		return runOffset(runs[i], runs[j])
	}
	return 0
}

// multiAccQ80AVX2RunsINT is multiAccQ80AVX2INT over at most one tile prefetching into L1 the
// rows pf bytes on (the next run) in place of the next tile, and into L2 those pf2 bytes on
// (gen_runs.go, multi_runs_amd64.s).
//
// multiAccQ80VNNIRunsINT is multiAccQ80VNNIINT (q8_0's AVX-VNNI values) as
// multiAccQ80AVX2RunsINT is multiAccQ80AVX2INT (gen_runs.go, multi_runs_amd64.s).
//
//go:noescape
func multiAccQ80VNNIRunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf, pf2 int)

//go:noescape
func multiAccQ80AVX2RunsINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int, pf, pf2 int)

// avx2ScoresQ80OneRuns is avx2ScoresQ80One (q8_0's AVX2 one-digit scores on the high-byte
// route; runsPF) prefetching into L1 the same rows of the next run, pf bytes on, in place of
// PFGROUPS2 groups on, and into L2 those of the run after next, pf2 bytes on, both for each of
// its two streams (gen_avx2int.go's twoStream), where the kernel prefetches nothing further:
// in a paged cache the kernel's would read the memory past each page (gen_runs.go,
// multi_runs_amd64.s). The figures below are of its one-stream form, which prefetched 64 rows
// on and 8 KiB further. Zen 4 with KVLAB_NO_AVX512=1, kvcache TestPagedBreakdown (2–3
// alternations, load ~8), paged q8_0 scores: 3.99–4.71 ms run by run with Prefetch,
// 3.73–3.93 with the L1 prefetches alone, 2.96–3.18 with a Prefetch of the run two on before
// each run besides (three on 3.23–3.26, four on 3.40–4.08), 2.62–2.68 with the L2 prefetches
// in the kernel in its place (2.78–2.88 in those runs; contiguous 2.35); the whole paged q8_0
// decode (TestPagedDecodeSpeed, 3 alternations, load ~8) 5.98–6.07 → 5.85–5.95 ms
// (contiguous 5.27–5.35).
//
// avx2ScoresQ80OneVNNIRuns is avx2ScoresQ80OneVNNI (q8_0's AVX-VNNI one-digit scores,
// avxVNNI) prefetching as avx2ScoresQ80OneRuns does (gen_runs.go, multi_runs_amd64.s).
//
//go:noescape
func avx2ScoresQ80OneVNNIRuns(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf, pf2 int)

//go:noescape
func avx2ScoresQ80OneRuns(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, pf, pf2 int)

// accQ80AVX2Runs is accIntRuns for q8_0's values on the AVX2 int16 kernel (multiAccQ80AVX2INT,
// the plain AVX2 CPUs'), four accumulators a call, runs of at most AccumulateTile rows: each
// run to multiAccQ80AVX2RunsINT, its L1 prefetches at the next run in place of the next tile
// and its L2 prefetches (added) at the run after next, a rotated codec's offsets after each
// run's sums as accRunsLoop adds them. The sums are multiAccQ80AVX2INT's over each run, bit for
// bit. False, doing nothing, where a run is longer than AccumulateTile rows. Zen 4 with
// KVLAB_NO_AVX512=1, kvcache TestPagedBreakdown (3 alternations, load ~4): the values of the
// 8 heads 3.01–3.05 ms with a Prefetch of the run after next before each run in place of the
// L2 prefetches → 2.63–2.83 (contiguous 2.66–2.83); the whole paged q8_0 decode
// (TestPagedDecodeSpeed, 4 alternations) 5.93–6.03 → 5.54–5.67 ms, contiguous 5.26–5.38
// (1.10–1.13× → 1.05–1.06×).
func accQ80AVX2Runs(rot *rotCodec, d, rb int, acc []float32, n int, w []float32, runs [][]byte, vnni bool) bool {
	for _, r := range runs {
		if len(r) > AccumulateTile*rb {
			return false
		}
	}
	acc = acc[:n*d]
	base, total := 0, len(w)/n
	for i, r := range runs {
		m := min(len(r)/rb, total-base)
		if m <= 0 {
			continue
		}
		pf, pf2 := runsNext(runs, i), runsAfterNext(runs, i)
		if pf2 == 0 {
			pf2 = pf
		}
		ws := w[base*n : (base+m)*n]
		for h := 0; h < n; h += 4 {
			if vnni {
				multiAccQ80VNNIRunsINT(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf, pf2)
				continue
			}
			multiAccQ80AVX2RunsINT(&acc[h*d], d, d, &r[0], rb, m, &ws[h], 4*n, pf, pf2)
		}
		if rot != nil {
			rot.accOffsets(acc, d, n, ws)
		}
		base += m
	}
	return true
}
