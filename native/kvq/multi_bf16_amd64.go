//go:build amd64 && !purego

package kvq

// bf16AVX512 is bf16's AVX-512 kernels (multi_bf16_amd64.s); multiBF16 uses them on CPUs with
// AVX-512 F and the AVX2 ones elsewhere.
var bf16AVX512 = &multiKernels{scores: multiScoresBF16AVX512, acc: multiAccBF16AVX512}

//go:noescape
func multiScoresBF16AVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccBF16AVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
