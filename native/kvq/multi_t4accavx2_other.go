//go:build !amd64 || purego

package kvq

// t4AccAVX2 is nil: the AVX2 integer accumulate kernels are amd64 assembly.
func t4AccAVX2(d int, f32 bool) *multiKernels { return nil }
