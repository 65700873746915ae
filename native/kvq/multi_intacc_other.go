//go:build !amd64 || purego

package kvq

// intAcc is false: the integer accumulate kernels are amd64 assembly.
func intAcc() bool { return false }

// The integer accumulate kernels are nil here.
var intAccQ4_0, intAccQ8_0, intAccQ4_1, intAccQ5_0, intAccQ5_1, intAccIQ4NL *multiKernels
