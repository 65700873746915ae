//go:build !amd64 || purego

package kvq

// avx2IntAccFor is nil: there are no AVX2 kernels here.
func avx2IntAccFor(*multiKernels) *multiKernels { return nil }
