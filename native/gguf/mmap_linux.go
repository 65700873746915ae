//go:build linux

package gguf

import "syscall"

// adviseHuge asks the kernel to back the mapping with transparent huge pages (MADV_HUGEPAGE).
// For a file mapping it makes the pages a pass reads from disk arrive as 2 MiB folios (on file
// systems with large folios), which later mappings of the file, by kvlab or any other program,
// map with one TLB entry per 2 MiB instead of 512: a decode step streams every weight once, so
// with 4 KiB pages it takes a TLB miss every 4 KiB. Pages already cached keep their size. The
// advice is a hint; where the kernel has no transparent huge pages it fails and nothing changes.
func adviseHuge(m []byte) { _ = syscall.Madvise(m, syscall.MADV_HUGEPAGE) }
