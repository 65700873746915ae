//go:build !amd64 || purego

package kvq

// turboAccAVX2 is nil: the AVX2 integer accumulate kernels are amd64 assembly.
func turboAccAVX2(bits, d int, f32 bool) *multiKernels { return nil }
