//go:build !amd64 || purego

package wkern

// hasInvF32 selects assembly batch-invariant float kernels (none here).
const hasInvF32 = false

func mulF32Asm(y []float32, ystride int, w []float32, cols int, x []float32, n, lo, hi int) {
	panic("wkern: no assembly float kernels")
}

func mulF16Asm(y []float32, ystride int, w []byte, rowBytes, cols int, x []float32, n, lo, hi int) {
	panic("wkern: no assembly float kernels")
}

// q4Pairs are Q4_0's assembly invariant pairs (none here).
var q4Pairs []invPair
