//go:build amd64 && !purego

package kvq

// Two-accumulator variants of the integer accumulate kernels (multi_intacc2_amd64.s, generated
// by gen_intacc.go): grouped-query attention with two query heads per KV head (and one head,
// padded to two) accumulates through them instead of staging each row's two weights with two
// zeros for the four-accumulator kernels and summing two accumulators of zero weights. They
// keep multiKernels' acc contract for two accumulators (acc[h·d:], w[j·wstride/4 + h], h < 2)
// and read each row's two weights from w in place (wstride 8 where the call's n is 2).
//
// Each accumulator's lanes of the four-accumulator kernels (weights w·d, their largest
// magnitude per tile and block, the int16 weights, the int32 sums, the scaling) depend only on
// that accumulator's weights and the rows: the variants compute the same lanes with the same
// instructions, so their sums are the four-accumulator kernels' bit for bit and the bound of
// multi_intacc_amd64.go holds unchanged. The variant loads a row's two weights with one 64-bit
// broadcast (VBROADCASTF32X2, AVX-512 DQ, which intAcc's CPUs have) where the four-accumulator
// kernel broadcasts 128 bits, and its row loop issues four VPDPWSSD a row pair instead of
// eight. On Intel cores with AVX-512 (not measured; from published instruction tables, Ice Lake
// and Sapphire Rapids) the 64-bit broadcast from memory is a load and a port-5 shuffle µop
// where the 128-bit one is a load alone: one more µop a row in the prepass, against four fewer
// VPDPWSSD a row pair (on port 0 alone by those tables, the row loop's bottleneck there; on
// ports 0 and 5 as measured on a Sapphire Rapids class Xeon, multi_intacc_amd64.go's intAcc).
//
// Like the four-accumulator kernels, q4_0's, q4_1's and iq4_nl's have an AVX-512 VBMI flavour
// (intAccVBMI), their sums the same bit for bit.
var (
	intAccTwoQ4_0  = intAccVBMI(multiAccQ40TwoINT, multiAccQ40VTwoINT)
	intAccTwoQ8_0  = &multiKernels{acc: pickZen4(multiAccQ80TwoINT, multiAccQ80Z4TwoINT)}
	intAccTwoQ4_1  = intAccVBMI(multiAccQ41TwoINT, multiAccQ41VTwoINT)
	intAccTwoIQ4NL = intAccVBMI(multiAccIQ4NLTwoINT, multiAccIQ4NLVTwoINT)
)

// The two-accumulator variants of the kernels with 8-bit weights (intAcc8): the
// four-accumulator 8-bit kernels' lanes, computed alike, so their sums are those kernels' bit
// for bit (TestIntAccTwoMatchesFour) and the bound of intAcc8 holds. Measured on AMD Zen 4
// (TestIntAcc8Speed): see intAcc8. Where zen4Stream they take their flavours prefetching with
// PREFETCHT1 32 KiB past the tile after next (V8Z4Two, as the four-accumulator kernels'
// V8Z4): the same sums bit for bit. On AMD Zen 4 (4096 rows of 128 values, two accumulators,
// wstride 8, thread CPU time, 201 calls in cache and 7 passes over 96 MiB on 2 MiB pages
// streamed, alternated with the PREFETCHT0 kernels, three runs, a machine at load ~20 on 2
// CPUs, min ns a row streamed): q4_0 6.89–7.01 → 4.05–4.27, q4_1 7.93–8.36 → 4.87–6.10, iq4_nl
// 6.28–6.58 → 4.25–4.49; in cache alike (q4_0 3.73–3.76 and 3.75–3.76).
var (
	intAccTwo8Q4_0  = &multiKernels{acc: pickZen4(multiAccQ40V8TwoINT, multiAccQ40V8Z4TwoINT)}
	intAccTwo8Q4_1  = &multiKernels{acc: pickZen4(multiAccQ41V8TwoINT, multiAccQ41V8Z4TwoINT)}
	intAccTwo8IQ4NL = &multiKernels{acc: pickZen4(multiAccIQ4NLV8TwoINT, multiAccIQ4NLV8Z4TwoINT)}
)

// intAccTwo is the two-accumulator variant of integer accumulate kernels k (AVX2's too,
// avx2IntAccTwo), nil for none.
//
// The kernels with 8-bit weights (intAcc8) have their own (intAccTwo8; q5_1's has none: its
// four-accumulator kernel runs with zero weights, as before it took 8-bit ones), so that an
// accumulator's result does not depend on how the queries are grouped
// (TestMultiQueryIndependentOfGrouping): the four-accumulator 8-bit kernel with two zero
// weights a row, called by AccumulateManyMulti 64 rows at a time, took ~1.9× the int16
// variant's time (AMD Zen 4, TestIntAcc8Speed, in cache: q4_0 9.8 against 5.2 ns a row).
func intAccTwo(k *multiKernels) *multiKernels {
	if k != nil && k.w8step > 0 {
		switch k {
		case intAccQ4_0:
			return intAccTwo8Q4_0
		case intAccQ4_1:
			return intAccTwo8Q4_1
		case intAccIQ4NL:
			return intAccTwo8IQ4NL
		}
		return avx2IntAccTwo(k) // the AVX2 ones
	}
	switch k {
	case intAccQ4_0:
		return intAccTwoQ4_0
	case intAccQ8_0:
		return intAccTwoQ8_0
	case intAccQ4_1:
		return intAccTwoQ4_1
	case intAccIQ4NL:
		return intAccTwoIQ4NL
	}
	return avx2IntAccTwo(k)
}

//go:noescape
func multiAccQ40TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccQ80TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

// multiAccQ80Z4TwoINT is multiAccQ80TwoINT prefetching with PREFETCHT1 (zen4Stream).
//
//go:noescape
func multiAccQ80Z4TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccQ41TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccIQ4NLTwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccQ40VTwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccQ41VTwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccIQ4NLVTwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccQ40V8TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccQ41V8TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccIQ4NLV8TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

// multiAccQ40V8Z4TwoINT, multiAccQ41V8Z4TwoINT and multiAccIQ4NLV8Z4TwoINT are the kernels
// above prefetching with PREFETCHT1 (zen4Stream), 32 KiB further ahead.

//go:noescape
func multiAccQ40V8Z4TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccQ41V8Z4TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiAccIQ4NLV8Z4TwoINT(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
