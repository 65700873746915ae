//go:build !amd64 || purego

package kvq

// blockIntAcc is false: the integer accumulate kernels are amd64 assembly.
func blockIntAcc() bool { return false }

// avx2IntAccFor is nil: there are no AVX2 kernels here.
func avx2IntAccFor(*multiKernels) *multiKernels { return nil }
