// Package hugemem allocates large byte buffers that stream memory (KV cache row stores, the
// bandwidth yardstick's buffer) so that Linux can back them with 2 MiB transparent huge pages.
//
// Linux distributions commonly run transparent huge pages in "madvise" mode, where only
// ranges advised MADV_HUGEPAGE get huge pages, and the Go heap does not advise its memory: a
// buffer from make sits on 4 KiB pages, so a pass over it takes a TLB miss every 4 KiB and the
// hardware prefetchers stop at each page boundary. Bytes over-allocates such a buffer by
// 2 MiB, slices it at a 2 MiB boundary and advises the aligned span; elsewhere (other systems,
// small buffers, KVLAB_NO_HUGEPAGES=1) it is a plain make.
//
// The KV cache's row stores and `bench attn`'s bandwidth yardstick both come from here, so the
// yardstick reads memory under the same page policy as the decode it is compared with. Zen 4
// (2 shared vCPUs, THP "madvise", load 2–3), `kvlab bench attn --ctx 131072 --heads 32
// --kv-heads 8 --head-dim 128 --threads 1`, three runs each way alternated, 4 KiB pages → huge
// pages: f16 27.0–27.1 → 23.5–23.7 ms, q4_0 11.6–12.1 → 11.4–11.5, q8_0 16.9–17.4 → 15.9–16.1,
// fp8 17.7–18.3 → 17.5–17.7, turbo2 7.9–8.2 → 7.8, turbo4 10.1–10.5 → 9.8–9.9; the one-thread
// read yardstick 20.5–21.3 → 32.1–33.1 GB/s (a 4 KiB page stops the hardware prefetchers), so
// f16 reads at 68–71 % of it, not 93–97 %.
//
// Cost: under 4 MiB of address space a buffer (the Go heap counts it toward its GC goal), of
// which at most the 2 MiB page holding the buffer's end is resident beyond the buffer itself.
package hugemem

import (
	"os"
	"sync"
)

const (
	// Align is the huge page size the buffers are aligned to (x86-64 and arm64 with 4 KiB
	// base pages).
	Align = 2 << 20
	// Threshold is the smallest buffer that gets huge pages: below it the 2 MiB of padding
	// costs more than the TLB misses saved.
	Threshold = 4 << 20
)

// Off is KVLAB_NO_HUGEPAGES set (read at start; tests may set it): every buffer a plain make
// (to compare, or where huge pages cost memory a machine lacks).
var Off = os.Getenv("KVLAB_NO_HUGEPAGES") != ""

// Bytes returns a zeroed buffer of n bytes (len and cap n). Where huge pages apply (Linux,
// n >= Threshold, not Off) the buffer starts at a 2 MiB boundary and its span, rounded up
// to 2 MiB, is advised MADV_HUGEPAGE, so that the kernel backs it with huge pages as it is
// first touched; the padding (under 4 MiB) stays reachable only through the buffer and is
// freed with it. The advice is a hint: where it fails the buffer works as any other.
func Bytes(n int) []byte {
	if Off || n < Threshold || !supported {
		return make([]byte, n)
	}
	span := roundUp(n, Align)
	raw := make([]byte, span+Align)
	off := alignOffset(raw)
	advise(raw[off : off+span])
	return raw[off : off+n : off+n]
}

// Huge reports whether Bytes's large buffers get 2 MiB pages here, as Pages says: Linux,
// KVLAB_NO_HUGEPAGES not set (Off, read at each call), transparent huge pages not "never".
// Kernels whose best form differs between huge and 4 KiB pages choose by it.
func Huge() bool { return supported && !Off && !thpNever() }

// thpNever reports the system's transparent huge pages set to "never" (readTHPNever), read
// once: Huge and Pages answer from the same reading.
var thpNever = sync.OnceValue(readTHPNever)

// roundUp is n rounded up to a multiple of a (a power of two).
func roundUp(n, a int) int { return (n + a - 1) &^ (a - 1) }

// Pages names the pages Bytes's large buffers get here, for reports that compare memory speeds
// (bench attn's bandwidth yardstick and caches): "2 MiB pages (MADV_HUGEPAGE)" where they are
// advised and the system's transparent huge pages are not "never", else the default pages and
// why.
func Pages() string {
	switch {
	case !supported:
		return "the system's default pages"
	case Off:
		return "the system's default pages (KVLAB_NO_HUGEPAGES)"
	case thpNever():
		return "the system's default pages (transparent huge pages are off)"
	}
	return "2 MiB pages (MADV_HUGEPAGE)"
}

// Coverage is how much of a set of buffers the system backs with transparent huge pages:
// Huge bytes of Bytes, the length of those buffers that Bytes would advise (a capacity of
// Threshold bytes or more; smaller ones never get huge pages in "madvise" mode and are not
// counted).
type Coverage struct {
	Huge, Bytes int64
}

// Fraction is Huge / Bytes, 1 for no bytes (nothing was to be on huge pages).
func (c Coverage) Fraction() float64 {
	if c.Bytes == 0 {
		return 1
	}
	return float64(c.Huge) / float64(c.Bytes)
}

// CoverageOf reports how many bytes of bufs (those whose capacity is Threshold bytes or more)
// lie on transparent huge pages now, as the system accounts them per mapping (Linux:
// AnonHugePages in /proc/self/smaps, given to the buffers of a mapping in address order, each
// at most its overlap with the mapping), so that reports can show whether a cache got the
// pages Bytes asked for. A buffer is judged by its capacity and counted by its length, so
// that the part in use of a large buffer of Bytes (a prefix of it) counts, however short, and
// its untouched rest does not. Elsewhere, or where smaps cannot be read, Huge is 0. Reading smaps walks the process's page tables:
// call it once per report, not per decode step, and not under a lock the decode takes.
func CoverageOf(bufs ...[]byte) Coverage {
	var c Coverage
	big := bufs[:0:0]
	for _, b := range bufs {
		if cap(b) >= Threshold {
			c.Bytes += int64(len(b))
			big = append(big, b)
		}
	}
	if c.Bytes > 0 && supported {
		c.Huge = hugeBytes(big)
	}
	return c
}
