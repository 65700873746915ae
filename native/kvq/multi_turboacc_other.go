//go:build !amd64 || purego

package kvq

// turboIntAcc is false: the integer accumulate kernels are amd64 assembly.
func turboIntAcc(bits, d int) bool { return false }

// tq4IntAcc is false likewise.
func tq4IntAcc(d int) bool { return false }

// The integer accumulate kernels are nil here.
var intAccT2, intAccT3, intAccT4, intAccT4F *multiKernels

// turboAccPick is k.
func turboAccPick(k *multiKernels) *multiKernels { return k }
