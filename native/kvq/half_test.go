package kvq

import (
	"math"
	"testing"
)

func TestF16RoundTripEveryCode(t *testing.T) {
	for i := 0; i < 65536; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		if f != f { // NaN: payload may differ, class must not
			if g := F32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, g)
			}
			continue
		}
		if g := F32ToF16(f); g != h {
			t.Fatalf("f16 %#04x -> %g -> %#04x", h, f, g)
		}
	}
}

func TestF32ToF16RoundsToNearestEven(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00},
		{1 + 1.0/2048, 0x3c00},             // halfway, even stays
		{1 + 3.0/2048, 0x3c02},             // halfway, odd rounds up
		{1 + 1.0/2048 + 1.0/65536, 0x3c01}, // above halfway
		{65504, 0x7bff},
		{65520, 0x7c00}, // rounds to Inf
		{-2, 0xc000},
		{float32(math.Ldexp(1, -24)), 0x0001},   // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000},   // halfway to zero, even
		{float32(math.Ldexp(1.5, -25)), 0x0001}, // above halfway
		{float32(math.Ldexp(1, -14)), 0x0400},   // smallest normal
		{float32(math.Inf(-1)), 0xfc00},
	} {
		if got := F32ToF16(tc.in); got != tc.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
}

func TestBF16(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{math.Float32frombits(0x3f808000), 0x3f80}, // halfway, even
		{math.Float32frombits(0x3f818000), 0x3f82}, // halfway, odd up
		{-0.5, 0xbf00},
	} {
		if got := F32ToBF16(tc.in); got != tc.want {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
		if back := BF16ToF32(tc.want); F32ToBF16(back) != tc.want {
			t.Errorf("bf16 %#04x does not round-trip", tc.want)
		}
	}
}
