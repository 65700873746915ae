//go:build !amd64 || purego

package kvq

// blockIntAcc is false: the integer accumulate kernels are amd64 assembly.
func blockIntAcc() bool { return false }

// avx2IntAccFor is nil: there are no AVX2 kernels here.
func avx2IntAccFor(*multiKernels) *multiKernels { return nil }

// avx2AccStep8 is 0: there are no 8-bit-weight AVX2 kernels here.
func avx2AccStep8(Codec) float64 { return 0 }
