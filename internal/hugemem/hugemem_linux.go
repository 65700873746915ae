//go:build linux

package hugemem

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Bytes is make([]byte, n) with the whole 2 MiB pages inside it advised MADV_HUGEPAGE, so
// that the kernel backs them with transparent huge pages when they are first written (where
// /sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise"; nothing changes where
// it is "never", or for memory written before the advice, which Go's heap may hand out again).
// Under "madvise", the common default, Go's heap is on 4 KiB pages: a decode at the bench
// shape (131072 cells, 8 KV heads of 128) then enters a new page every 16 f16 rows (57 q4_0
// ones) of each stream, each a TLB miss (on a virtual machine a nested page walk) and a restart
// for the hardware stream prefetchers, which stop at 4 KiB boundaries. A plain read loop over
// 512 MiB measures it alone: 13.4–15.1 GB/s on 4 KiB pages, 15.8–20.8 on huge pages (best of
// 8 passes alternated, 3 tries, load 7). On huge pages, one-thread
// decode at that shape, thread CPU, ns a cell of one KV head, min of 7 rounds, each format in
// a fresh process (TestHugeDecodeSpeed, Zen 4 VM, 2 vCPUs shared, load 7): f16 26.5 → 22.9,
// q8_0 18.1 → 15.6, q4_0 12.2 → 11.0, q4_1 13.3 → 12.3, turbo4 10.3 → 9.7, turbo2 8.1 → 7.9
// (its 4.7 MB stores hold two whole huge pages of their 2.4). `kvlab bench attn` at that shape
// (wall clock, best round, best of 3 runs alternated with the binary before, load 5–8): f16
// 24.3 → 23.6 ms, q4_0 12.3 → 11.2, q4_1 13.1 → 12.5, iq4_nl 12.3 → 11.9, q8_0 17.8 → 16.3,
// turbo2 8.0 → 8.0, turbo3 9.7 → 9.4, turbo4 10.5 → 9.9, q2k 12.7 → 11.9 (its values; its
// keys' groups, kvq's, on huge pages too took nothing more), q8_0/q4_0 15.2 → 14.5.
//
// Memory: a cell's first write faults in its whole 2 MiB page, so a store's resident memory
// grows in 2 MiB steps up to what it reserves (which the cache counts in full already).
func Bytes(n int) []byte {
	b := make([]byte, n)
	Advise(b)
	return b
}

// Advise advises the whole 2 MiB pages inside b MADV_HUGEPAGE (Bytes), unless
// KVLAB_NO_HUGEPAGES is set: for memory allocated elsewhere and not yet written.
func Advise(b []byte) {
	if Off || len(b) == 0 {
		return
	}
	if lo, hi := Range(uintptr(unsafe.Pointer(unsafe.SliceData(b))), len(b)); lo < hi {
		_ = unix.Madvise(b[lo:hi], unix.MADV_HUGEPAGE) // a hint: without it, 4 KiB pages
	}
}
