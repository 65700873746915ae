//go:build !amd64 || purego

package kvq

// intAcc is false: the integer accumulate kernels are amd64 assembly.
func intAcc() bool { return false }

// intAccQ4_0 and intAccQ8_0 are nil: no integer accumulate kernels here.
var intAccQ4_0, intAccQ8_0 *multiKernels
