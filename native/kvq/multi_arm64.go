//go:build arm64 && !purego

package kvq

// The NEON kernels (multi_arm64.s) serve f16, q8_0 and q4_0 on every arm64 CPU: they use only
// baseline ARMv8.0 Advanced SIMD (FCVTL for f16, no FP16 arithmetic, no dot product), which
// every arm64 target Go supports has. They keep the amd64 kernels' precision contract
// (MultiQuery): codes times the block scale first, exact; one fused multiply-add per product;
// a row's products summed in 16 lanes (value i in lane i mod 16), reduced pairwise. tq4 and the
// formats of multi_more.go have no NEON kernels yet and run DotMany and AccumulateMany per
// query.
var (
	multiF16  = &multiKernels{multiScoresF16NEON, multiAccF16NEON}
	multiQ8_0 = &multiKernels{multiScoresQ80NEON, multiAccQ80NEON}
	multiQ4_0 = &multiKernels{multiScoresQ40NEON, multiAccQ40NEON}
	multiTQ4  *multiKernels
)

// The kernels' contracts are multiKernels'. Implemented in multi_arm64.s.

//go:noescape
func multiScoresF16NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccF16NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ80NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ80NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)

//go:noescape
func multiScoresQ40NEON(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccQ40NEON(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
