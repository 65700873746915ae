package kvcache

import "os"

// noHugePages is KVLAB_NO_HUGEPAGES (any value), read at start: hugeBytes advises nothing, and
// the row buffers stay on the system's default pages (on Linux; elsewhere none is advised).
var noHugePages = os.Getenv("KVLAB_NO_HUGEPAGES") != ""

// hugePage is the size of an x86-64 (and arm64 with 4 KiB base pages) transparent huge page.
const hugePage = 2 << 20

// hugeRange is the part [lo, hi) of the n bytes at address p made of whole hugePage-aligned
// pages: lo the offset of the first page boundary at or after p, hi−lo a multiple of
// hugePage, as long as fits; 0, 0 where no whole page fits.
func hugeRange(p uintptr, n int) (lo, hi int) {
	off := int(-p & (hugePage - 1))
	if off+hugePage > n {
		return 0, 0
	}
	return off, off + (n-off)&^(hugePage-1)
}
