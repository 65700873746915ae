package ggml

import "testing"

// TestTable: the convertible types are exactly the engine's, every valid type's name parses
// back, and K-quant blocks hold 256 values.
func TestTable(t *testing.T) {
	want := map[Type]bool{F32: true, F16: true, BF16: true, F64: true, Q4_0: true, Q4_1: true, Q5_0: true, Q5_1: true,
		Q8_0: true, Q8_1: true, Q2_K: true, Q3_K: true, Q4_K: true, Q5_K: true, Q6_K: true, Q8_K: true, IQ4_NL: true}
	for i := range len(typeTable) {
		ty := Type(i)
		if ty.CanConvert() != want[ty] {
			t.Errorf("%s: CanConvert %v, want %v", ty, ty.CanConvert(), want[ty])
		}
		if !ty.Valid() {
			continue
		}
		if got, ok := ParseType(ty.String()); !ok || got != ty {
			t.Errorf("ParseType(%q) = %v, %v", ty, got, ok)
		}
	}
	for _, ty := range []Type{Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K} {
		if ty.BlockSize() != 256 {
			t.Errorf("%s: block of %d values", ty, ty.BlockSize())
		}
	}
	if Type(999).CanConvert() || Type(999).Valid() {
		t.Error("type 999 is valid")
	}
}

// TestScaleMinK4 checks the unpacking against ggml's get_scale_min_k4 on one packed vector.
func TestScaleMinK4(t *testing.T) {
	q := []byte{0x41, 0x82, 0xc3, 0x04, 0x45, 0x86, 0xc7, 0x08, 0x9a, 0xbc, 0xde, 0xf1}
	for j := range 8 {
		var sc, m uint8
		if j < 4 {
			sc, m = q[j]&63, q[j+4]&63
		} else {
			sc, m = (q[j+4]&0xf)|((q[j-4]>>6)<<4), (q[j+4]>>4)|((q[j]>>6)<<4)
		}
		if gs, gm := ScaleMinK4(j, q); gs != sc || gm != m {
			t.Errorf("j %d: %d, %d; want %d, %d", j, gs, gm, sc, m)
		}
	}
}
