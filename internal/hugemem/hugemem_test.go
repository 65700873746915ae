package hugemem

import (
	"testing"
	"unsafe"
)

func TestRoundUp(t *testing.T) {
	for _, c := range []struct{ n, want int }{{0, 0}, {1, Align}, {Align, Align}, {Align + 1, 2 * Align}, {5 << 20, 6 << 20}} {
		if got := roundUp(c.n, Align); got != c.want {
			t.Errorf("roundUp(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// TestBytes checks the length, capacity and zeroing for sizes either side of the threshold and
// of a huge page, the alignment where huge pages apply, and that the buffer is writable end to
// end.
func TestBytes(t *testing.T) {
	for _, n := range []int{0, 1, 4095, Threshold - 1, Threshold, Threshold + 1, 5<<20 + 3, 3 * Align, 16<<20 - 1} {
		b := Bytes(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Bytes(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i := 0; i < n; i += 4093 {
			if b[i] != 0 {
				t.Fatalf("Bytes(%d)[%d] = %d, want 0", n, i, b[i])
			}
			b[i] = 1
		}
		if n > 0 {
			b[n-1] = 1
		}
		if supported && !Off && n >= Threshold {
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%Align != 0 {
				t.Errorf("Bytes(%d) at %#x: not 2 MiB-aligned", n, p)
			}
		}
	}
}

func TestAlignOffset(t *testing.T) {
	if !supported {
		t.Skip("no huge pages here")
	}
	raw := make([]byte, 3*Align)
	for s := 0; s < Align; s += 4097 {
		off := alignOffset(raw[s:])
		if off < 0 || off >= Align {
			t.Fatalf("alignOffset at %d = %d", s, off)
		}
		if p := uintptr(unsafe.Pointer(&raw[s+off])); p%Align != 0 {
			t.Fatalf("alignOffset at %d = %d: %#x not aligned", s, off, p)
		}
	}
}

// TestPages checks the page report against the switch: the default pages named with the
// switch where it is set, 2 MiB pages only where Bytes advises them and the system can grant them.
func TestPages(t *testing.T) {
	defer func(o bool) { Off = o }(Off)
	Off = true
	if got := Pages(); got != "the system's default pages (KVLAB_NO_HUGEPAGES)" && supported {
		t.Errorf("Off: Pages() = %q", got)
	}
	Off = false
	got := Pages()
	if want := supported && !thpNever(); (got == "2 MiB pages (MADV_HUGEPAGE)") != want {
		t.Errorf("Pages() = %q with supported %v, THP never %v", got, supported, thpNever())
	}
}
