//go:build linux

package hugemem

import (
	"os"
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

// advise asks for huge pages over b (2 MiB-aligned, a multiple of 2 MiB). With THP in
// "madvise" mode (and defrag "madvise", the default) the kernel then maps 2 MiB pages on first
// touch; pages already touched (memory the Go heap reused and zeroed) are left to khugepaged.
func advise(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }

// readTHPNever reports the system's transparent huge pages set to "never" (or unreadable as
// enabled: no advice takes effect then).
func readTHPNever() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err != nil || strings.Contains(string(b), "[never]")
}
