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
// 15.3, 4.99) and PREFETCHT2 PREFETCHT1's (4.79, 7.30, 13.5, 4.15). Intel Xeon (2 vCPUs,
// KVM, family 6 model 167), kvcache TestPagedBreakdown (one thread, 32768 cells, 8 KV heads
// of 128, 4 queries, thread CPU, 2 alternations, load ~12), the run-by-run calls' Prefetch of
// each next run: over contiguous rows in runs of 64 (flatRunsKeys), where the kernels'
// prefetches past each run reach the next, it cost f16's scores 7.0–7.2 ms against 4.0–4.4
// without it (contiguous 3.8: 256 PREFETCHT1 at once hold the loop back); over a paged
// cache's runs it paid (without it: q8_0's scores 5.1–5.5 → 6.2–6.5 ms, q4_0's 3.0 → 3.4–3.6,
// f16's 9.3–9.6 → 8.6–8.8 the one gain), and so did the whole run over the first 6 KiB or
// 2 KiB of it alone (q8_0's scores 5.6–6.5 ms, q4_0's 3.0–3.4). Where a runs flavour aims the
// kernel's own prefetches at the next pages (multi_runs_amd64.go: runsIntel, f16ScoresRuns,
// bf16RunsZ4, fp8F32ScoresRuns) Intel, as Zen 4, takes those in place of the Prefetch of the next
// run (some with a Prefetch of a run further on: runsFar, accRunsLoop). Nor did Prefetch pay
// to move part of the next work item's key stream into a decode's compute-bound values phase
// (native/attn's Decode, q5_0 and q5_1 on the Intel Xeon: the values called in pieces of 1024
// or 4096 rows, each after a Prefetch of 15–60 % of the next chunk's keys in proportion): the
// whole decode +1 to +3 ns a row, against +0 for the pieces alone.
func Prefetch(b []byte) {
	if len(b) > 0 {
		prefetchT1(&b[0], len(b))
	}
}
