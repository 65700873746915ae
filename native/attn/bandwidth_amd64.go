//go:build amd64 && !purego

package attn

// readSum returns readSumGo's sum of buf's whole 64-byte lines, in 256-bit lanes (AVX2, which
// every amd64 CPU this package's other kernels need has; readSumGo otherwise). Each line is
// prefetched 2 KiB ahead into L1 (PREFETCHT0), as the decode kernels prefetch their rows: the
// hardware prefetchers alone, which stop at each 4 KiB page, read slower than a decode streams.
// Intel Xeon (2 vCPUs, KVM, family 6 model 167; 1 GiB on 2 MiB pages, thread CPU time, the
// loops alternated, 7 rounds, two runs, load ~11): 15.6–15.8 GB/s (median; best 15.8–16.3)
// with the old loop, two 128-byte steps' loads and no prefetch, where the f16 decode streams
// 17.1 GB/s quiet; 17.6–17.8 (best 18.0–18.4) so; 2 KiB ahead as good as 3 KiB, 1 or 4 KiB
// ~0.5–0.8 less; two lines a step 16.6–17.4; 512-bit loads 16.5–17.5; two or four streams
// (the buffer's halves or quarters, prefetched 0.5–2 KiB ahead) 15.0–17.5; PREFETCHNTA
// 6.2–6.3 (a third: not for streaming here).
func readSum(buf []byte) uint64 {
	if !hasAVX2 {
		return readSumGo(buf)
	}
	return readSumAVX2(buf)
}

//go:noescape
func readSumAVX2(buf []byte) uint64
