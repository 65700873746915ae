//go:build amd64 && !purego

package kvq

//go:noescape
func prefetchT1(p *byte, n int)

// Prefetch asks the memory system for the lines of b ahead of a read of them that is about to
// follow, as the kernels' own prefetches do a fixed distance ahead of their rows: for rows that
// are not next in memory (the next page of a paged cache), which those run past. It is a hint
// (PREFETCHT1 per 64-byte line: into L2, not L1; on other architectures and with purego,
// nothing) and never faults.
//
// Into L2 rather than L1: a page's run of rows (up to 16 KiB of f16 rows of 128 values) would
// crowd out of the 32 KiB L1 the rows the kernel reads meanwhile. Zen 4, paged decode at 32768
// cells (kvcache TestPagedDecodeSpeed: one thread, 32/8 heads of 128, thread CPU, best of 12
// rounds, min of 3 runs), PREFETCHNTA -> PREFETCHT1: q4_0 5.71 -> 4.53 ms, q8_0 9.05 -> 7.13,
// f16 15.5 -> 12.4, tq4 5.25 -> 4.12; PREFETCHT0 was PREFETCHNTA's within noise (5.67, 8.94,
// 15.3, 4.99) and PREFETCHT2 PREFETCHT1's (4.79, 7.30, 13.5, 4.15). Intel not measured:
// there PREFETCHT1 also fills L2 and not L1.
func Prefetch(b []byte) {
	if len(b) > 0 {
		prefetchT1(&b[0], len(b))
	}
}
