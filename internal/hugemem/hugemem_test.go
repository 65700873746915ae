package hugemem

import "testing"

func TestHugeRange(t *testing.T) {
	for _, c := range []struct {
		p      uintptr
		n      int
		lo, hi int
	}{
		{0, 0, 0, 0},
		{0, Page - 1, 0, 0},
		{0, Page, 0, Page},
		{0, 3*Page + 5, 0, 3 * Page},
		{1, 2 * Page, Page - 1, 2*Page - 1},
		{1, 2*Page - 1, Page - 1, 2*Page - 1},
		{1, 2*Page - 2, 0, 0},
		{8192, 2*Page - 8192, Page - 8192, 2*Page - 8192},
		{8192, 2*Page - 8193, 0, 0},
		{5*Page + 4096, 7 * Page, Page - 4096, 7*Page - 4096},
	} {
		lo, hi := Range(c.p, c.n)
		if lo != c.lo || hi != c.hi {
			t.Errorf("Range(%#x, %d) = %d, %d, want %d, %d", c.p, c.n, lo, hi, c.lo, c.hi)
		}
	}
	// Every case: inside the buffer, aligned, whole pages, and no further whole page left out.
	for _, p := range []uintptr{0, 1, 4096, 8192, Page - 1, Page + 8192} {
		for _, n := range []int{0, 1, 4096, Page - 1, Page, Page + 1, 2*Page + 4096, 5*Page - 1} {
			lo, hi := Range(p, n)
			if lo == 0 && hi == 0 {
				if off := int(-p & (Page - 1)); off+Page <= n {
					t.Errorf("Range(%#x, %d): no page, but [%d, %d) fits", p, n, off, off+Page)
				}
				continue
			}
			if lo < 0 || hi > n || (p+uintptr(lo))%Page != 0 || (hi-lo)%Page != 0 || n-hi >= Page || lo >= Page {
				t.Errorf("Range(%#x, %d) = %d, %d", p, n, lo, hi)
			}
		}
	}
}
