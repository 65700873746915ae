//go:build linux

package attn

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// benchRowMemory is the bench stores' row memory: as kvcache's row stores take it (its hugeBytes),
// the whole 2 MiB pages inside advised MADV_HUGEPAGE, unless KVLAB_NO_HUGEPAGES is set; so the
// speed tests here stream rows from the pages the bench command's caches are on. A buffer
// freed by an earlier format's stores keeps its pages and its advice when Go hands its memory
// out again: for the cleanest A/B (KVLAB_NO_HUGEPAGES set or not), one format a process.
// TestDecodeBreakdown, Zen 4, load 3.4, ns a row, min, 4 KiB pages → huge pages: f16 26.6 →
// 24.8 (scores 13.0 → 10.8), q4_0 11.1 → 10.9, turbo4 9.9 → 9.7, q8_0 16.8 → 15.4 (values
// 8.1 → 7.1).
func benchRowMemory(n int) []byte {
	b := make([]byte, n)
	if os.Getenv("KVLAB_NO_HUGEPAGES") != "" || n == 0 {
		return b
	}
	const huge = 2 << 20
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := int(-p & (huge - 1))
	if hi := lo + (n-lo)&^(huge-1); lo+huge <= n {
		_ = unix.Madvise(b[lo:hi], unix.MADV_HUGEPAGE)
	}
	return b
}
