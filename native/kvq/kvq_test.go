package kvq

import (
	"errors"
	"strings"
	"testing"
)

func TestBytesPerCellMatchesGGML(t *testing.T) {
	// ggml block sizes: q8_0 34, q4_0 18, q4_1 20, q5_0 22, q5_1 24, iq4_nl 18 bytes per 32.
	for _, tc := range []struct {
		f    Format
		want int
	}{
		{F32, 128}, {F16, 64}, {BF16, 64}, {Q8_0, 34}, {Q4_0, 18}, {Q4_1, 20},
		{Q5_0, 22}, {Q5_1, 24}, {IQ4_NL, 18}, {FP8, 36}, {TQ4, 20}, {Q2K, 10},
	} {
		if got := tc.f.RowBytes(32); got != tc.want {
			t.Errorf("%s.RowBytes(32) = %d, want %d", tc.f, got, tc.want)
		}
	}
	// Seed 000 §1: 192 / 102 / 78 / 66 / 54 KiB per token on 48 layers × 8 heads × 128.
	for _, tc := range []struct {
		pair string
		kib  float64
	}{
		{"f16", 192}, {"q8_0", 102}, {"q8_0/q4_0", 78}, {"q5_0", 66}, {"q4_0", 54},
	} {
		p, err := ParsePair(tc.pair)
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(48*p.BytesPerCell(128, 128, 8)) / 1024; got != tc.kib {
			t.Errorf("%s: %g KiB/token, want %g", tc.pair, got, tc.kib)
		}
	}
	// Seed 003: q2k is 448 B/cell on 2 KV heads × 256 dims; q4_0 576; f16 2048.
	for _, tc := range []struct {
		pair string
		want int
	}{{"q2k", 448}, {"q4_0", 576}, {"f16", 2048}} {
		p, _ := ParsePair(tc.pair)
		if got := p.BytesPerCell(256, 256, 2); got != tc.want {
			t.Errorf("%s: %d B/cell, want %d", tc.pair, got, tc.want)
		}
	}
}

func TestShortBlocks(t *testing.T) {
	for _, tc := range []struct {
		f    Format
		d    int
		want int
	}{
		{Q8_0, 8, 10}, {Q4_0, 8, 6}, {Q4_1, 8, 8}, {Q5_0, 8, 7}, {Q5_1, 8, 9}, {IQ4_NL, 8, 6},
		{Q8_0, 16, 18}, {Q4_0, 16, 10}, {Q8_0, 40, 34 + 10}, {Q5_0, 80, 44 + 2 + 2 + 8},
		{FP8, 8, 12}, {TQ4, 8, 8}, {F16, 8, 16},
	} {
		if got := tc.f.RowBytes(tc.d); got != tc.want {
			t.Errorf("%s.RowBytes(%d) = %d, want %d", tc.f, tc.d, got, tc.want)
		}
	}
}

func TestQ2KGroupArithmetic(t *testing.T) {
	// head_dim 8, 1 head: a group is 8 scales × 2 B + 32×8 codes × 2 bits = 16 + 64 = 80 B.
	if got := Q2K.Bytes(1, 8, 1); got != 80 {
		t.Errorf("one cell reserves a whole group: %d, want 80", got)
	}
	if got := Q2K.Bytes(33, 8, 1); got != 160 {
		t.Errorf("33 cells: %d, want 160", got)
	}
	if got := Q2K.BytesPerToken(8, 1); got != 2.5 {
		t.Errorf("BytesPerToken = %g, want 2.5", got)
	}
	if got := Q2K.BytesPerCell(8, 1); got != 3 {
		t.Errorf("BytesPerCell rounds up: %d, want 3", got)
	}
}

func TestParsePair(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Pair
		str  string
	}{
		{"f16", Pair{K: F16, V: F16}, "f16"},
		{"q8_0/q4_0", Pair{K: Q8_0, V: Q4_0}, "q8_0/q4_0"},
		{" Q8_0 / q4_0 ", Pair{K: Q8_0, V: Q4_0}, "q8_0/q4_0"},
		{"q2k", Pair{K: Q2K, V: Q4_0}, "q2k"},
		{"q2k/q8_0", Pair{K: Q2K, V: Q8_0}, "q2k/q8_0"},
		{"fp16", Pair{K: F16, V: F16}, "f16"},
		{"q4_0-r", Pair{K: Q4_0, V: Q4_0, KRaw: true, VRaw: true}, "q4_0-r"},
		{"q8_0-r/q4_0-r", Pair{K: Q8_0, V: Q4_0, KRaw: true, VRaw: true}, "q8_0-r/q4_0-r"},
		{"q8_0/Q4_0-R", Pair{K: Q8_0, V: Q4_0, VRaw: true}, "q8_0/q4_0-r"},
		{"q2k/q4_0-r", Pair{K: Q2K, V: Q4_0, VRaw: true}, "q2k/q4_0-r"},
		{"q2k-r", Pair{K: Q2K, V: Q4_0, KRaw: true, VRaw: true}, "q2k-r"},
		{"q2k-r/q4_0", Pair{K: Q2K, V: Q4_0, KRaw: true}, "q2k-r/q4_0"},
		{"turbo4", Pair{K: Turbo4, V: Turbo4}, "turbo4"},
		{"q8_0/turbo3", Pair{K: Q8_0, V: Turbo3}, "q8_0/turbo3"},
	} {
		got, err := ParsePair(tc.in)
		if err != nil {
			t.Fatalf("ParsePair(%q): %v", tc.in, err)
		}
		if got != tc.want || got.String() != tc.str {
			t.Errorf("ParsePair(%q) = %v (%s), want %v (%s)", tc.in, got, got, tc.want, tc.str)
		}
	}
	for _, bad := range []string{"q3_0", "", "f16/", "q4_0/q2k", "/q4_0", "f16-r", "tq4-r", "turbo3-r", "-r"} {
		_, err := ParsePair(bad)
		if err == nil {
			t.Errorf("ParsePair(%q) succeeded", bad)
			continue
		}
		if !errors.Is(err, ErrUnknownFormat) && !errors.Is(err, ErrUnsupported) {
			t.Errorf("ParsePair(%q): %v is not a sentinel", bad, err)
		}
	}
	_, err := ParsePair("q3_0")
	if !strings.Contains(err.Error(), "q8_0") || !strings.Contains(err.Error(), "iq4_nl") {
		t.Errorf("error does not list the valid names: %v", err)
	}
}
