// Package hugemem allocates the large buffers that decode streams (the KV cache's row stores,
// and the memory-bandwidth yardstick `kvlab bench attn` compares them with) with transparent huge
// pages advised on Linux, so that both stream from the same kind of page.
package hugemem

import "os"

// Off is KVLAB_NO_HUGEPAGES (any value), read at start: Bytes advises nothing, and the buffers
// stay on the system's default pages (on Linux; elsewhere none is advised). Tests may set it.
var Off = os.Getenv("KVLAB_NO_HUGEPAGES") != ""

// Page is the size of an x86-64 (and arm64 with 4 KiB base pages) transparent huge page.
const Page = 2 << 20

// Range is the part [lo, hi) of the n bytes at address p made of whole Page-aligned
// pages: lo the offset of the first page boundary at or after p, hi−lo a multiple of
// Page, as long as fits; 0, 0 where no whole page fits.
func Range(p uintptr, n int) (lo, hi int) {
	off := int(-p & (Page - 1))
	if off+Page > n {
		return 0, 0
	}
	return off, off + (n-off)&^(Page-1)
}
