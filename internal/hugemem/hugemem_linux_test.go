//go:build linux

package hugemem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// smapsOf returns the VmFlags and the AnonHugePages (KiB) of the mapping that holds addr, from
// /proc/self/smaps.
func smapsOf(t *testing.T, addr uintptr) (flags string, hugeKiB int, found bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			if in {
				return flags, hugeKiB, true
			}
			lo, hi, _ := strings.Cut(fields[0], "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(l) <= addr && addr < uintptr(h)
			continue
		}
		if !in {
			continue
		}
		switch fields[0] {
		case "AnonHugePages:":
			hugeKiB, _ = strconv.Atoi(fields[1])
		case "VmFlags:":
			flags = strings.Join(fields[1:], " ")
		}
	}
	return flags, hugeKiB, in
}

// TestHugePagesTakeEffect checks in /proc/self/smaps that a large buffer's mapping carries the
// advice (VmFlags "hg") and, where the kernel found free huge pages, is backed by them
// (AnonHugePages, logged: compaction may fail on a fragmented machine).
func TestHugePagesTakeEffect(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("transparent huge pages off")
	}
	if Off {
		t.Skip("KVLAB_NO_HUGEPAGES set")
	}
	b := Bytes(16 << 20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	flags, huge, ok := smapsOf(t, uintptr(unsafe.Pointer(&b[0])))
	if !ok {
		t.Fatal("buffer's mapping not in /proc/self/smaps")
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("VmFlags %q: no hg (MADV_HUGEPAGE did not take)", flags)
	}
	t.Logf("THP %s; mapping VmFlags %q, AnonHugePages %d KiB of 16384", strings.TrimSpace(string(mode)), flags, huge)
	if huge == 0 {
		t.Log("no huge pages backed it (fragmented memory?)")
	}
}

// TestCoverageOf checks CoverageOf against smaps: a large buffer of Bytes, touched, counts in
// full and (where the kernel granted huge pages, as TestHugePagesTakeEffect logs) on huge
// pages; a buffer below Threshold is not counted.
func TestCoverageOf(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") || Off {
		t.Skip("no huge pages here")
	}
	const n = 16<<20 + 4096
	b := Bytes(n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	c := CoverageOf(b, make([]byte, Threshold-1))
	if c.Bytes != n || c.Huge < 0 || c.Huge > n {
		t.Fatalf("CoverageOf(Bytes(%d), small) = %+v", n, c)
	}
	_, smapsHuge, _ := smapsOf(t, uintptr(unsafe.Pointer(&b[0])))
	if want := min(int64(smapsHuge)<<10, n); c.Huge != want {
		t.Errorf("CoverageOf(Bytes(%d)).Huge = %d, smaps says %d", n, c.Huge, want)
	}
	if f := CoverageOf(make([]byte, 100)).Fraction(); f != 1 {
		t.Errorf("Fraction of no large buffers = %g, want 1", f)
	}
	t.Logf("THP %s: Bytes(%d) %.0f %% on huge pages", strings.TrimSpace(string(mode)), n, 100*c.Fraction())
}

// TestAdviseTouched checks that advise puts memory already mapped on 4 KiB pages (as the Go
// heap hands back reused memory, zeroed) on huge pages at once, and keeps it zero: the case
// that left some of bench attn's caches on 4 KiB pages. MADV_COLLAPSE is Linux 6.1's.
func TestAdviseTouched(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("transparent huge pages off")
	}
	var u syscall.Utsname
	if syscall.Uname(&u) != nil || !atLeast61(u.Release[:]) {
		t.Skip("no MADV_COLLAPSE before Linux 6.1")
	}
	// Whether this machine collapses touched memory at all now: fragmented memory, a cgroup's
	// limit or a huge page size set to "never" can refuse it, which is the machine's state, not
	// a fault of advise's.
	touched := func() []byte {
		raw := make([]byte, 3*Align)
		off := alignOffset(raw)
		b := raw[off : off+2*Align]
		for i := 0; i < len(b); i += 4096 {
			b[i] = 0 // a write maps the page: 4 KiB pages, not advised yet
		}
		return b
	}
	if err := syscall.Madvise(touched(), madvCollapse); err != nil {
		t.Skipf("MADV_COLLAPSE of touched memory fails here (%v): no huge pages to collapse into", err)
	}
	b := touched()
	before := CoverageOf(b).Huge
	advise(b)
	if c := CoverageOf(b); c.Huge != c.Bytes {
		t.Errorf("after advise, %d of %d bytes on huge pages (%d before)", c.Huge, c.Bytes, before)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("b[%d] = %d after advise, want 0", i, v)
		}
	}
}

// atLeast61 reports a uname release of Linux 6.1 or later.
func atLeast61(rel []int8) bool {
	var s []byte
	for _, c := range rel {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	maj, rest, _ := strings.Cut(string(s), ".")
	min, _, _ := strings.Cut(rest, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	return err1 == nil && err2 == nil && (a > 6 || a == 6 && b >= 1)
}
