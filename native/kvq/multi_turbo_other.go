//go:build !amd64 || purego

package kvq

// tq4PermuteFast has no kernels here: tq4Permute and tq4Unpermute run their Go loops.
func tq4PermuteFast(dst, src []float32, n, d int, inverse bool) bool { return false }
