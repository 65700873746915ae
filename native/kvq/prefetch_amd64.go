//go:build amd64 && !purego

package kvq

//go:noescape
func prefetchNTA(p *byte, n int)

// Prefetch asks the memory system for the lines of b ahead of a read of them that is about to
// follow, as the kernels' own prefetches do a fixed distance ahead of their rows: for rows that
// are not next in memory (the next page of a paged cache), which those run past. It is a hint
// (PREFETCHNTA per 64-byte line: into the nearest cache and out of it soon after the read; on
// other architectures and with purego, nothing) and never faults.
func Prefetch(b []byte) {
	if len(b) > 0 {
		prefetchNTA(&b[0], len(b))
	}
}
