//go:build linux

package hugemem

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// thpEligible reads /proc/self/smaps for the mapping holding address a: its THPeligible flag.
func thpEligible(t *testing.T, a uintptr) bool {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		l := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(l, "%x-%x", &lo, &hi); n == 2 && strings.Contains(l, " ") {
			in = lo <= a && a < hi
			continue
		}
		if in && strings.HasPrefix(l, "THPeligible:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "THPeligible:")) == "1"
		}
	}
	t.Skipf("no THPeligible line for %#x in /proc/self/smaps", a)
	return false
}

// TestHugeBytes checks Bytes's buffers (zeroed, of the asked length) and, where the system
// gives huge pages on request only (transparent_hugepage "madvise"), that Advise makes the
// whole 2 MiB pages inside a buffer, and nothing around them, eligible for huge pages. The
// buffer is fresh anonymous memory: Go's heap may hand out memory an earlier buffer advised.
func TestHugeBytes(t *testing.T) {
	for _, n := range []int{0, 1, 4095, Page + 1, 3*Page + 12345} {
		b := Bytes(n)
		if len(b) != n {
			t.Fatalf("Bytes(%d) has %d bytes", n, len(b))
		}
		for i, x := range b {
			if x != 0 {
				t.Fatalf("Bytes(%d)[%d] = %d", n, i, x)
			}
		}
		for i := range b {
			b[i] = byte(i)
		}
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		t.Skipf("transparent_hugepage is not \"madvise\" here (%q, %v)", mode, err)
	}
	if Off {
		t.Skip("KVLAB_NO_HUGEPAGES is set")
	}
	m, err := unix.Mmap(-1, 0, 8*Page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Munmap(m)
	// From a page past the start to one short of the end: the advised part starts at the first
	// 2 MiB boundary inside and ends at the last.
	b := m[4096 : len(m)-4096]
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo, hi := Range(p, len(b))
	if lo == hi {
		t.Fatalf("no whole huge page in %d bytes", len(b))
	}
	if thpEligible(t, p+uintptr(lo)) {
		t.Skip("fresh anonymous memory is eligible for huge pages before any advice")
	}
	Advise(b)
	if !thpEligible(t, p+uintptr(lo)) || !thpEligible(t, p+uintptr(hi)-1) {
		t.Errorf("Advise: [%d, %d) of %d bytes not advised for huge pages", lo, hi, len(b))
	}
	if thpEligible(t, p+uintptr(lo)-1) || thpEligible(t, p+uintptr(hi)) {
		t.Errorf("Advise: bytes outside [%d, %d) of %d advised too", lo, hi, len(b))
	}
}
