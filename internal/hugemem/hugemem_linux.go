//go:build linux

package hugemem

import (
	"bufio"
	"bytes"
	"cmp"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

const supported = true

// alignOffset is the offset of the first 2 MiB boundary in b.
func alignOffset(b []byte) int {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return int((Align - p%Align) % Align)
}

// advise asks for huge pages over b (2 MiB-aligned, a multiple of 2 MiB, zeroed). With THP in
// "madvise" mode (and defrag "madvise", the default) the kernel then maps 2 MiB pages on first
// touch. Memory the Go heap reused was touched already, when the runtime zeroed it before
// Bytes could advise it, and sits on 4 KiB pages that the advice alone leaves to khugepaged
// (16 MiB per 10 s by default: a cache stays on 4 KiB pages for the whole of a run). So where
// any page of b is resident and transparent huge pages are not "never", advise collapses b
// into huge pages now (MADV_COLLAPSE, Linux 6.1), or where the kernel could not get the huge
// pages this time (EAGAIN, ENOMEM), drops b's pages (MADV_DONTNEED: b reads as zeros still),
// which kernels that free the emptied page tables (6.14's CONFIG_PT_RECLAIM) then fault in as
// huge pages. Where the kernel does not know MADV_COLLAPSE (EINVAL: before 6.1) dropping the
// pages does not help: b stays as it is.
//
// The collapse copies b's resident pages under the caller's locks: a page pool makes a new
// slab (kvcache's growLocked) under its mutex, so that making one may collapse up to the
// slab (64 MiB, growing with the pool to 8192 cells' pages, at most 1 GiB) while the pool's
// other callers wait; a pool keeping pages ahead (KeepAhead, as the runner's are) makes its
// slabs outside the lock (fill).
//
// bench attn, which holds every pair's cache at once, built some caches in the holes that
// earlier pairs' fill buffers left, a different set each run: before this, main's full judged
// tables had 1–6 pairs with 25–94 % of their cache on huge pages (turbo2 25 %, q5_1 75 %,
// turbo3 81 %, tq4 94 %); after it, every pair 100 %.
func advise(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	if thpNever() || !resident(b) {
		return // MADV_COLLAPSE ignores the system's "never"
	}
	if err := syscall.Madvise(b, madvCollapse); err == syscall.EAGAIN || err == syscall.ENOMEM {
		_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
	}
}

// madvCollapse is MADV_COLLAPSE (Linux 6.1), which package syscall does not name.
const madvCollapse = 25

// resident reports any page of b (page-aligned) mapped now (mincore); true where it cannot tell.
func resident(b []byte) bool {
	vec := make([]byte, (len(b)+os.Getpagesize()-1)/os.Getpagesize())
	_, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if e != 0 {
		return true
	}
	for _, v := range vec {
		if v&1 != 0 {
			return true
		}
	}
	return false
}

// readTHPNever reports the system's transparent huge pages set to "never" (or unreadable as
// enabled: no advice takes effect then).
func readTHPNever() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err != nil || strings.Contains(string(b), "[never]")
}

// span is a buffer's address range [lo, hi).
type span struct{ lo, hi uintptr }

// hugeBytes is CoverageOf's Huge from /proc/self/smaps; 0 where it cannot be read.
func hugeBytes(bufs [][]byte) int64 {
	var spans []span
	for _, b := range bufs {
		if len(b) > 0 {
			p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			spans = append(spans, span{p, p + uintptr(len(b))})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0
	}
	defer f.Close()
	// smaps lists the mappings in address order, and spans is sorted: one merge pass over
	// both. first is the first span that may overlap this mapping or a later one (those before
	// it end at or below this mapping's start); once no span is left, the rest of smaps is not
	// read.
	var huge int64
	var vma span
	first := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if rng, _, ok := bytes.Cut(line, []byte(" ")); ok && bytes.IndexByte(rng, '-') > 0 && !bytes.HasSuffix(rng, []byte(":")) {
			lo, hi, _ := bytes.Cut(rng, []byte("-"))
			l, err1 := strconv.ParseUint(string(lo), 16, 64)
			h, err2 := strconv.ParseUint(string(hi), 16, 64)
			if err1 == nil && err2 == nil {
				vma = span{uintptr(l), uintptr(h)}
				for first < len(spans) && spans[first].hi <= vma.lo {
					first++
				}
				if first == len(spans) {
					break
				}
				continue
			}
		}
		if first == len(spans) || spans[first].lo >= vma.hi {
			continue // no span in this mapping
		}
		rest, ok := bytes.CutPrefix(line, []byte("AnonHugePages:"))
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		if err != nil || kib == 0 {
			continue
		}
		left := kib << 10
		for _, s := range spans[first:] {
			if s.lo >= vma.hi || left == 0 {
				break
			}
			if s.hi <= vma.lo {
				continue // overlapping spans: one of an earlier buffer ends before this mapping
			}
			take := min(int64(min(s.hi, vma.hi)-max(s.lo, vma.lo)), left)
			huge, left = huge+take, left-take
		}
	}
	return huge
}
