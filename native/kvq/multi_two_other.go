//go:build !amd64 || purego

package kvq

// multiTwo is the two-query variant of kernels k: none here (multi_two_amd64.go).
func multiTwo(k *multiKernels) *multiKernels { return nil }
