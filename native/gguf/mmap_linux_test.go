//go:build linux

package gguf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestMapDataAdvisesHugePages checks that a mapped file carries the huge-page advice: the
// mapping's VmFlags in /proc/self/smaps include "hg" (skipped where the kernel has no
// transparent huge pages).
func TestMapDataAdvisesHugePages(t *testing.T) {
	probe, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Skip(err)
	}
	if err := syscall.Madvise(probe, syscall.MADV_HUGEPAGE); err != nil {
		syscall.Munmap(probe)
		t.Skipf("no transparent huge pages here: %v", err)
	}
	syscall.Munmap(probe)

	path := filepath.Join(t.TempDir(), "w.bin")
	if err := os.WriteFile(path, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, unmap, err := mapData(f, 0, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&data[0])))
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		if strings.HasPrefix(line, start) {
			in = true
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			if !strings.Contains(line, " hg") {
				t.Fatalf("mapping %s has no huge-page advice: %s", start, line)
			}
			return
		}
	}
	t.Fatalf("mapping at %s not found in /proc/self/smaps", start)
}
