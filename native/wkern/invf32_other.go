//go:build !amd64 || purego

package wkern

import "github.com/kvlab/kvlab/native/gguf"

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

// hasInvTile selects tile kernels (none here).
var hasInvTile = false

// invTiled reports whether weight type t runs MulInvariant through tile kernels (none here).
func invTiled(gguf.Type) bool { return false }

func mulInvTile(typ gguf.Type, y []float32, ystride int, w []byte, rowBytes int, a *Act, lo, hi int) {
	panic("wkern: no invariant tile kernels")
}
