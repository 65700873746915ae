package gguf

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Half-precision bit patterns used below.
const (
	h1       = 0x3c00 // 1
	hHalf    = 0x3800 // 0.5
	hQuarter = 0x3400 // 0.25
	h2       = 0x4000 // 2
	hMinus1  = 0xbc00 // -1
	hTenth   = 0x2e66 // 0.0999755859375
)

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func dequant(t *testing.T, typ Type, src []byte, n int) []float32 {
	t.Helper()
	dst := make([]float32, n)
	if err := DequantizeRow(typ, src, dst); err != nil {
		t.Fatalf("DequantizeRow(%v): %v", typ, err)
	}
	return dst
}

func expectExact(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad < 8 {
				t.Errorf("value %d = %v, want %v", i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d values differ", bad, len(want))
	}
}

func TestHalfToFloat(t *testing.T) {
	tests := []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0},
		{0x3c00, 1},
		{0xc000, -2},
		{0x3555, 0.333251953125},
		{0x7bff, 65504},
		{0x0400, 1.0 / 16384},           // smallest normal, 2^-14
		{0x0001, 1.0 / 16777216},        // smallest subnormal, 2^-24
		{0x03ff, 1023.0 / 16777216},     // largest subnormal
		{0x8001, -1.0 / 16777216},       // negative subnormal
		{0x7c00, float32(math.Inf(1))},  // +Inf
		{0xfc00, float32(math.Inf(-1))}, // -Inf
	}
	for _, tt := range tests {
		if got := halfToFloat(tt.h); got != tt.want {
			t.Errorf("halfToFloat(%#04x) = %v, want %v", tt.h, got, tt.want)
		}
	}
	if got := halfToFloat(0x8000); math.Float32bits(got) != 0x80000000 {
		t.Errorf("halfToFloat(0x8000) = %v, want -0", got)
	}
	if got := halfToFloat(0x7e01); !math.IsNaN(float64(got)) {
		t.Errorf("halfToFloat(0x7e01) = %v, want NaN", got)
	}
	// Every finite half converts exactly: converting back through float64 arithmetic gives the
	// same value as the definition sign × 2^(e−15) × (1 + m/1024), or m × 2^−24 when e = 0.
	for h := range 1 << 16 {
		e, m := h>>10&0x1f, h&0x3ff
		if e == 0x1f {
			continue
		}
		v := float64(m) * math.Pow(2, -24)
		if e != 0 {
			v = math.Pow(2, float64(e-15)) * (1 + float64(m)/1024)
		}
		if h&0x8000 != 0 {
			v = -v
		}
		if got := halfToFloat(uint16(h)); float64(got) != v {
			t.Fatalf("halfToFloat(%#04x) = %v, want %v", h, got, v)
		}
	}
}

func TestDequantizeFloats(t *testing.T) {
	f32 := binary.LittleEndian.AppendUint32(nil, math.Float32bits(-3.5))
	f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(1e-30))
	expectExact(t, dequant(t, F32, f32, 2), []float32{-3.5, 1e-30})

	expectExact(t, dequant(t, F16, cat(le16(h1), le16(0xc000), le16(0x7bff)), 3), []float32{1, -2, 65504})

	bf := cat(le16(0x3f80), le16(0xc040), le16(0x4049)) // 1, -3, 3.140625
	expectExact(t, dequant(t, BF16, bf, 3), []float32{1, -3, 3.140625})

	f64 := binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.1))
	expectExact(t, dequant(t, F64, f64, 1), []float32{float32(0.1)})
}

func TestDequantizeQ8_0(t *testing.T) {
	b := le16(hHalf)
	want := make([]float32, 32)
	for j := range 32 {
		q := int8(j*9 - 128) // -128 … 151 wraps; covers both signs
		b = append(b, byte(q))
		want[j] = float32(q) * 0.5
	}
	expectExact(t, dequant(t, Q8_0, b, 32), want)

	// Q8_1 is the same with a second half (the block sum) before the quants.
	b1 := cat(le16(hHalf), le16(0x1234), b[2:])
	expectExact(t, dequant(t, Q8_1, b1, 32), want)
}

func TestDequantizeQ4_0AndQ4_1(t *testing.T) {
	qs := make([]byte, 16)
	for j := range qs {
		qs[j] = byte(j) | byte(15-j)<<4
	}
	// Value j is the low nibble of qs[j]; value j+16 the high nibble.
	want0 := make([]float32, 32)
	want1 := make([]float32, 32)
	for j := range 16 {
		want0[j] = float32(j-8) * 2
		want0[j+16] = float32(15-j-8) * 2
		want1[j] = float32(j)*0.25 - 1
		want1[j+16] = float32(15-j)*0.25 - 1
	}
	two := cat(le16(h2), qs, le16(h2), qs) // two blocks
	expectExact(t, dequant(t, Q4_0, two, 64), append(want0, want0...))
	expectExact(t, dequant(t, Q4_1, cat(le16(hQuarter), le16(hMinus1), qs), 32), want1)
}

func TestDequantizeQ5_0AndQ5_1(t *testing.T) {
	qs := make([]byte, 16)
	for j := range qs {
		qs[j] = byte(j*5)&0xf | byte(j*3)<<4
	}
	qh := uint32(0xa5c3_0f96)
	// Value j has the fifth bit j of qh on top of its nibble.
	nib := func(j int) int {
		if j < 16 {
			return int(qs[j] & 0xf)
		}
		return int(qs[j-16] >> 4)
	}
	want0 := make([]float32, 32)
	want1 := make([]float32, 32)
	for j := range 32 {
		q := nib(j) | int(qh>>j&1)<<4
		want0[j] = float32(q-16) * 0.5
		want1[j] = float32(q)*0.25 - 1
	}
	qhb := binary.LittleEndian.AppendUint32(nil, qh)
	expectExact(t, dequant(t, Q5_0, cat(le16(hHalf), qhb, qs), 32), want0)
	expectExact(t, dequant(t, Q5_1, cat(le16(hQuarter), le16(hMinus1), qhb, qs), 32), want1)
}

func TestDequantizeIQ4_NL(t *testing.T) {
	grid := []float32{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
	qs := make([]byte, 16)
	want := make([]float32, 32)
	for j := range qs {
		qs[j] = byte(j) | byte((j+5)%16)<<4
		want[j] = 2 * grid[j]
		want[j+16] = 2 * grid[(j+5)%16]
	}
	expectExact(t, dequant(t, IQ4_NL, cat(le16(h2), qs), 32), want)
}

func TestDequantizeQ8_K(t *testing.T) {
	b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.125))
	want := make([]float32, 256)
	for j := range 256 {
		b = append(b, byte(j))
		want[j] = float32(int8(j)) * 0.125
	}
	b = append(b, make([]byte, 32)...) // bsums, unused
	expectExact(t, dequant(t, Q8_K, b, 256), want)
}

// packScalesK4 packs eight 6-bit scales and mins as block_q4_K/q5_K store them: for j < 4,
// byte j holds scale j and byte j+4 holds min j in their low 6 bits; for j >= 4, byte j+4 holds
// the low 4 bits of scale j (low nibble) and of min j (high nibble), and the top 2 bits of
// scale j and min j go to the top bits of bytes j-4 and j.
func packScalesK4(sc, mn [8]uint8) []byte {
	var b [12]byte
	for j := range 8 {
		if j < 4 {
			b[j] |= sc[j]
			b[j+4] |= mn[j]
		} else {
			b[j+4] = sc[j]&0xf | (mn[j]&0xf)<<4
			b[j-4] |= sc[j] >> 4 << 6
			b[j] |= mn[j] >> 4 << 6
		}
	}
	return b[:]
}

// The K-quant tests below use scales that exercise all 6 bits and powers of two for d and dmin,
// so every expected value is an exact small integer multiple of a power of two.
var (
	kScales = [8]uint8{1, 17, 33, 63, 5, 48, 31, 62}
	kMins   = [8]uint8{0, 63, 2, 40, 17, 9, 60, 33}
)

func TestDequantizeQ4_KExact(t *testing.T) {
	// Quant of value i: (i*7 + i/64) mod 16.
	quant := func(i int) uint8 { return uint8((i*7 + i/64) % 16) }
	qs := make([]byte, 128)
	for i := range 256 {
		// Each 64 values use 32 bytes: the first 32 values the low nibbles, the next 32 the
		// high nibbles.
		chunk, r := i/64, i%64
		if r < 32 {
			qs[32*chunk+r] |= quant(i)
		} else {
			qs[32*chunk+r-32] |= quant(i) << 4
		}
	}
	block := cat(le16(hHalf), le16(hQuarter), packScalesK4(kScales, kMins), qs)
	want := make([]float32, 256)
	for i := range want {
		s := i / 32
		want[i] = float32(0.5*float64(kScales[s])*float64(quant(i)) - 0.25*float64(kMins[s]))
	}
	expectExact(t, dequant(t, Q4_K, block, 256), want)
}

func TestDequantizeQ5_KExact(t *testing.T) {
	quant := func(i int) uint8 { return uint8((i*11 + i/32) % 32) }
	qs := make([]byte, 128)
	qh := make([]byte, 32)
	for i := range 256 {
		chunk, r := i/64, i%64
		q := quant(i)
		bit := 2 * chunk // the fifth bit of value i lives in qh[i%32], bit 2·chunk (+1 for the high half)
		if r < 32 {
			qs[32*chunk+r] |= q & 0xf
		} else {
			qs[32*chunk+r-32] |= (q & 0xf) << 4
			bit++
		}
		qh[r%32] |= (q >> 4) << bit
	}
	block := cat(le16(hHalf), le16(hQuarter), packScalesK4(kScales, kMins), qh, qs)
	want := make([]float32, 256)
	for i := range want {
		s := i / 32
		want[i] = float32(0.5*float64(kScales[s])*float64(quant(i)) - 0.25*float64(kMins[s]))
	}
	expectExact(t, dequant(t, Q5_K, block, 256), want)
}

func TestDequantizeQ6_KExact(t *testing.T) {
	quant := func(i int) uint8 { return uint8((i*13 + i/16) % 64) }
	scales := [16]int8{1, -1, 127, -128, 5, 0, -64, 33, 2, 3, -7, 100, -100, 9, 64, -2}
	ql := make([]byte, 128)
	qh := make([]byte, 64)
	for i := range 256 {
		// Value i = 128n + 32g + l: low 4 bits in ql[64n + l + 32(g odd)] (high nibble for
		// g >= 2), high 2 bits in qh[32n + l] at bit 2g.
		n, g, l := i/128, i%128/32, i%32
		q := quant(i)
		idx := 64*n + l
		if g%2 == 1 {
			idx += 32
		}
		if g < 2 {
			ql[idx] |= q & 0xf
		} else {
			ql[idx] |= (q & 0xf) << 4
		}
		qh[32*n+l] |= (q >> 4) << (2 * g)
	}
	sc := make([]byte, 16)
	for i, s := range scales {
		sc[i] = byte(s)
	}
	block := cat(ql, qh, sc, le16(hQuarter))
	want := make([]float32, 256)
	for i := range want {
		want[i] = float32(0.25 * float64(scales[i/16]) * float64(int(quant(i))-32))
	}
	expectExact(t, dequant(t, Q6_K, block, 256), want)
}

func TestDequantizeQ2_KExact(t *testing.T) {
	quant := func(i int) uint8 { return uint8((i*3 + i/16) % 4) }
	var scales [16]byte
	for j := range scales {
		scales[j] = byte(j) | byte(15-j)<<4 // scale j, min 15-j
	}
	qs := make([]byte, 64)
	for i := range 256 {
		// Value i = 128n + 32g + l: 2 bits at shift 2g of qs[32n + l].
		n, g, l := i/128, i%128/32, i%32
		qs[32*n+l] |= quant(i) << (2 * g)
	}
	block := cat(scales[:], qs, le16(hHalf), le16(hQuarter))
	want := make([]float32, 256)
	for i := range want {
		s := scales[i/16]
		want[i] = float32(0.5*float64(s&0xf)*float64(quant(i)) - 0.25*float64(s>>4))
	}
	expectExact(t, dequant(t, Q2_K, block, 256), want)
}

func TestDequantizeQ3_KExact(t *testing.T) {
	quant := func(i int) int { return (i*5+i/32)%8 - 4 } // -4 … 3
	var scales [16]int                                   // 6-bit scales minus 32: -32 … 31
	for j := range scales {
		scales[j] = (j*13)%64 - 32
	}
	// Pack: scale j+32 has low 4 bits in byte j (j < 8, low nibble) or byte j-8 (high nibble),
	// high 2 bits in byte 8 + j%4 at bit 2·(j/4).
	sc := make([]byte, 12)
	for j, s := range scales {
		u := byte(s + 32)
		if j < 8 {
			sc[j] |= u & 0xf
		} else {
			sc[j-8] |= (u & 0xf) << 4
		}
		sc[8+j%4] |= (u >> 4) << (2 * (j / 4))
	}
	qs := make([]byte, 64)
	hmask := make([]byte, 32)
	for i := range 256 {
		// Stored quant q+4 in 0..7: low 2 bits as in Q2_K, the third bit in hmask[l] at bit
		// 4n + g (set means "no −4").
		n, g, l := i/128, i%128/32, i%32
		u := uint8(quant(i) + 4)
		qs[32*n+l] |= (u & 3) << (2 * g)
		hmask[l] |= (u >> 2) << (4*n + g)
	}
	block := cat(hmask, qs, sc, le16(h2))
	want := make([]float32, 256)
	for i := range want {
		want[i] = float32(2 * float64(scales[i/16]) * float64(quant(i)))
	}
	expectExact(t, dequant(t, Q3_K, block, 256), want)
}

// TestDequantizeKRounding checks the K-quants with a d that is not a power of two, where the
// order of float32 roundings matters: ggml computes d·sc once per sub-block, then
// (d·sc)·q − dmin·m, rounding after each operation.
func TestDequantizeKRounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	block := make([]byte, 144)
	for i := range block {
		block[i] = byte(rng.Uint32())
	}
	copy(block, cat(le16(hTenth), le16(0x2a66))) // d ≈ 0.1, dmin ≈ 0.05
	got := dequant(t, Q4_K, block, 256)
	d, dmin := halfToFloat(hTenth), halfToFloat(0x2a66)
	for i := range 256 {
		j := i / 32
		var sc, m uint8
		if j < 4 {
			sc, m = block[4+j]&63, block[8+j]&63
		} else {
			sc = block[4+j+4]&0xf | block[4+j-4]>>6<<4
			m = block[4+j+4]>>4 | block[4+j]>>6<<4
		}
		r := i % 64
		q := block[16+32*(i/64)+r%32]
		if r < 32 {
			q &= 0xf
		} else {
			q >>= 4
		}
		ds := float32(d * float32(sc))
		want := float32(ds*float32(q)) - float32(dmin*float32(m))
		if got[i] != want {
			t.Fatalf("value %d = %v, want %v", i, got[i], want)
		}
	}
}

func TestDequantizeRowErrors(t *testing.T) {
	tests := []struct {
		name string
		typ  Type
		src  int
		dst  int
		msg  string
		is   error
	}{
		{"unsupported", IQ2_XXS, 66, 256, "iq2_xxs", ErrUnsupportedType},
		{"invalid type", 99, 0, 0, "type(99)", ErrUnsupportedType},
		{"partial block", Q4_K, 144, 255, "255 values is not a multiple", nil},
		{"short src", Q8_0, 33, 32, "33 source bytes for 32 values, want 34", nil},
		{"long src", F16, 5, 2, "5 source bytes", nil},
		{"nil src", Q6_K, 0, 256, "0 source bytes", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DequantizeRow(tt.typ, make([]byte, tt.src), make([]float32, tt.dst))
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.msg)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
		})
	}
	if err := DequantizeRow(Q4_K, nil, nil); err != nil {
		t.Errorf("zero values: %v", err)
	}
}

// FuzzDequantizeRow checks that no input makes DequantizeRow panic or write past dst.
func FuzzDequantizeRow(f *testing.F) {
	f.Add(uint8(Q4_K), []byte{1, 2, 3}, uint16(256))
	f.Add(uint8(Q6_K), make([]byte, 210), uint16(256))
	f.Add(uint8(Q8_0), make([]byte, 34), uint16(32))
	f.Fuzz(func(t *testing.T, typ uint8, src []byte, n uint16) {
		dst := make([]float32, int(n)+1)
		dst[n] = 42
		_ = DequantizeRow(Type(typ), src, dst[:n])
		if dst[n] != 42 {
			t.Fatal("DequantizeRow wrote past len(dst)")
		}
	})
}
