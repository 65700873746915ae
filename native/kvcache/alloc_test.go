package kvcache

import "testing"

func TestHugeRange(t *testing.T) {
	for _, c := range []struct {
		p      uintptr
		n      int
		lo, hi int
	}{
		{0, 0, 0, 0},
		{0, hugePage - 1, 0, 0},
		{0, hugePage, 0, hugePage},
		{0, 3*hugePage + 5, 0, 3 * hugePage},
		{1, 2 * hugePage, hugePage - 1, 2*hugePage - 1},
		{1, 2*hugePage - 1, hugePage - 1, 2*hugePage - 1},
		{1, 2*hugePage - 2, 0, 0},
		{8192, 2*hugePage - 8192, hugePage - 8192, 2*hugePage - 8192},
		{8192, 2*hugePage - 8193, 0, 0},
		{5*hugePage + 4096, 7 * hugePage, hugePage - 4096, 7*hugePage - 4096},
	} {
		lo, hi := hugeRange(c.p, c.n)
		if lo != c.lo || hi != c.hi {
			t.Errorf("hugeRange(%#x, %d) = %d, %d, want %d, %d", c.p, c.n, lo, hi, c.lo, c.hi)
		}
	}
	// Every case: inside the buffer, aligned, whole pages, and no further whole page left out.
	for _, p := range []uintptr{0, 1, 4096, 8192, hugePage - 1, hugePage + 8192} {
		for _, n := range []int{0, 1, 4096, hugePage - 1, hugePage, hugePage + 1, 2*hugePage + 4096, 5*hugePage - 1} {
			lo, hi := hugeRange(p, n)
			if lo == 0 && hi == 0 {
				if off := int(-p & (hugePage - 1)); off+hugePage <= n {
					t.Errorf("hugeRange(%#x, %d): no page, but [%d, %d) fits", p, n, off, off+hugePage)
				}
				continue
			}
			if lo < 0 || hi > n || (p+uintptr(lo))%hugePage != 0 || (hi-lo)%hugePage != 0 || n-hi >= hugePage || lo >= hugePage {
				t.Errorf("hugeRange(%#x, %d) = %d, %d", p, n, lo, hi)
			}
		}
	}
}
