//go:build amd64 && !purego

package kvq

// The two-query f16 kernels (multi_two_amd64.s) keep multiKernels' contract for two queries or
// accumulators in place of four (q[h·d:], acc[h·d:], out[j·ostride/4 + h], w[j·wstride/4 + h],
// h < 2). They add and multiply exactly as the four-query AVX-512 kernels do, query for query,
// so their results are those kernels' bit for bit and the MultiQuery bounds (multi.go) hold
// unchanged: |DotManyMulti − Dot| ≤ (d/8 + 6)·2⁻²⁴·Σ|q[i]·x[i]| for the scores, the block
// formats' AccumulateMany bound for the sums.
var f16TwoAVX512 = &multiKernels{scores: multiScoresF16TwoAVX512, acc: multiAccF16TwoAVX512}

// multiTwo is the two-query variant of kernels k, nil for none: the AVX-512 f16 kernels have
// one (a last group of two, as in grouped-query attention with two query heads per KV head,
// runs it instead of four with two zero queries: half the multiplies), and so do the block
// formats' integer accumulate kernels (multi_intacc2_amd64.go).
func multiTwo(k *multiKernels) *multiKernels {
	if k == avx512Kernels[0] {
		return f16TwoAVX512
	}
	return intAccTwo(k)
}

//go:noescape
func multiScoresF16TwoAVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccF16TwoAVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
