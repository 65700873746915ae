package kvq

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// TestF32ToF16Row: the row conversion (F16C where the CPU has it) writes F32ToF16's bits for
// every sign and float32 exponent (normal, subnormal and overflowing halves, ±0, ±Inf, NaNs with
// payloads in the kept and in the dropped mantissa bits), with mantissas at and around every
// rounding boundary (the dropped bits just below, at and above one half, with the kept bits
// even and odd), and for row lengths that leave a tail to the Go loop. Rounding half away from
// zero, or truncating, or a NaN rule that drops the quiet bit, differs here.
func TestF32ToF16Row(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	var vals []float32
	for sign := uint32(0); sign < 2; sign++ {
		for exp := uint32(0); exp < 256; exp++ {
			for _, rest := range []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff} {
				for _, kept := range []uint32{0, 1, 2, 0x3fe, 0x3ff, r.Uint32() & 0x3ff} {
					vals = append(vals, math.Float32frombits(sign<<31|exp<<23|kept<<13|rest))
				}
				// subnormal halves keep fewer bits: boundaries at every shift
				for sh := uint32(13); sh < 24; sh++ {
					half := uint32(1) << (sh - 1)
					for _, d := range []int32{-1, 0, 1} {
						m := (r.Uint32()&0x7fffff)&^(1<<sh-1) | uint32(int32(half)+d)
						vals = append(vals, math.Float32frombits(sign<<31|exp<<23|m&0x7fffff))
					}
				}
			}
			for i := 0; i < 64; i++ {
				vals = append(vals, math.Float32frombits(sign<<31|exp<<23|r.Uint32()&0x7fffff))
			}
		}
	}
	for _, n := range []int{len(vals), 1, 7, 8, 9, 64, 67} {
		src := vals[len(vals)-n:]
		dst := make([]byte, 2*n+2)
		dst[2*n], dst[2*n+1] = 0xaa, 0x55
		f32ToF16Row(dst[:2*n], src)
		for i, v := range src {
			if got, want := binary.LittleEndian.Uint16(dst[2*i:]), F32ToF16(v); got != want {
				t.Fatalf("n %d: value %d (%#08x): %#04x, want %#04x", n, i, math.Float32bits(v), got, want)
			}
		}
		if dst[2*n] != 0xaa || dst[2*n+1] != 0x55 {
			t.Fatalf("n %d: wrote past the row", n)
		}
	}
}

// TestF16ToF32Row: the row conversion (F16C where the CPU has it) gives F16ToF32's bits for
// every one of the 65536 binary16 values (normal, subnormal, ±0, ±Inf, quiet NaNs), except that
// a signalling NaN may come back quieted (its payload kept, the quiet bit set); for row
// lengths that leave a tail to the Go loop, never writing past the row. A conversion that
// flushed subnormals, or read the wrong half of the source, differs here.
func TestF16ToF32Row(t *testing.T) {
	src := make([]byte, 2*65536)
	for h := 0; h < 65536; h++ {
		binary.LittleEndian.PutUint16(src[2*h:], uint16(h))
	}
	for _, n := range []int{65536, 1, 7, 8, 9, 64, 67} {
		row := src[2*(65536-n):]
		dst := make([]float32, n+1)
		dst[n] = 12345
		f16ToF32Row(dst[:n], row)
		for i := 0; i < n; i++ {
			h := binary.LittleEndian.Uint16(row[2*i:])
			want := math.Float32bits(F16ToF32(h))
			got := math.Float32bits(dst[i])
			if h&0x7c00 == 0x7c00 && h&0x3ff != 0 && h&0x200 == 0 && got == want|1<<22 {
				continue // a signalling NaN, quieted (F16C) rather than kept (Go)
			}
			if got != want {
				t.Fatalf("n %d: binary16 %#04x: %#08x, want %#08x", n, h, got, want)
			}
		}
		if dst[n] != 12345 {
			t.Fatalf("n %d: wrote past the row", n)
		}
	}
}

// TestF16ToF32sDecodesRows: F16ToF32s over f16 rows back to back gives what the f16 codec's
// Decode gives row by row, bit for bit (the mixed cache reads a batch of its f16 window so), at
// row lengths with and without a tail past the last eight values.
func TestF16ToF32sDecodesRows(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, d := range []int{64, 36} {
		c := mustCodec(t, F16, d)
		rb, rows := c.RowBytes(), 5
		enc := make([]byte, rows*rb)
		for i := 0; i < rows; i++ {
			c.Encode(enc[i*rb:(i+1)*rb], outlierRows(r, 1, d))
		}
		got := make([]float32, rows*d+1)
		got[rows*d] = -777
		F16ToF32s(got[:rows*d], enc)
		want := make([]float32, d)
		for i := 0; i < rows; i++ {
			c.Decode(want, enc[i*rb:(i+1)*rb])
			for j, w := range want {
				if g := got[i*d+j]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("d %d: row %d [%d]: %g, Decode %g", d, i, j, g, w)
				}
			}
		}
		if got[rows*d] != -777 {
			t.Fatalf("d %d: wrote past the rows", d)
		}
	}
}
