//go:build amd64 && !purego

package kvq

// bf16AVX512 is bf16's AVX-512 kernels (multi_bf16_amd64.s; on Intel CPUs, intelCPU, the
// scores through bf16ScoresSplit, multi_f16acc_amd64.go); multiBF16 uses them on CPUs with
// AVX-512 F and the AVX2 ones elsewhere.
var bf16AVX512 = &multiKernels{scores: bf16Scores4, acc: multiAccBF16AVX512}

// bf16Scores4 is bf16's four-query AVX-512 scores kernel: bf16ScoresSplit on Intel CPUs, else
// multiScoresBF16AVX512.
var bf16Scores4 = func() func(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int) {
	if intelCPU {
		return bf16ScoresSplit
	}
	return multiScoresBF16AVX512
}()

//go:noescape
func multiScoresBF16AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccBF16AVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
