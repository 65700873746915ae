//go:build amd64 && !purego

package attn

// readSum returns a sum of buf's whole 128-byte lines in 256-bit lanes (AVX2, which every
// amd64 CPU this package's other kernels need has; readSumGo otherwise).
func readSum(buf []byte) uint64 {
	if !hasAVX2 {
		return readSumGo(buf)
	}
	return readSumAVX2(buf)
}

//go:noescape
func readSumAVX2(buf []byte) uint64
