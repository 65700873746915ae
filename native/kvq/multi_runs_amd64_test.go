//go:build amd64 && !purego

package kvq

import "testing"

// TestAccRunsKernel: where the CPU has the AVX-512 or the AVX2 f16 kernels, f16 runs of up to a tile with
// four accumulators take AccumulateManyMultiRuns's kernel path (accRuns), which
// TestAccumulateManyMultiRuns checks bit for bit.
func TestAccRunsKernel(t *testing.T) {
	c := mustCodec(t, F16, 128)
	if multiF16 != avx512Kernels[0] && multiF16 != f16AVX2 {
		t.Skip("no AVX-512 or AVX2 f16 kernels")
	}
	rb := c.RowBytes()
	if !accRuns(c, make([]float32, 4*128), 4, make([]float32, 4*64), [][]byte{make([]byte, 64*rb)}) {
		t.Error("f16: AccumulateManyMultiRuns does not take the f16 kernel")
	}
}
