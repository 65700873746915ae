package wkern

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// goldenInput is 1024 test values from a fixed LCG: four 256-value super-blocks, the second
// scaled by 1/64, the third with zero runs, the fourth with outliers and positive-only groups.
func goldenInput() []float32 {
	x := make([]float32, 1024)
	s := uint32(12345)
	for i := range x {
		s = s*1664525 + 1013904223
		k := int32(s>>9&0x7fffff) - 1<<22
		v := float32(k) / float32(1<<22)
		switch blk := i / 256; {
		case blk == 1:
			v *= 1.0 / 64
		case blk == 2 && i%32 < 8:
			v = 0
		}
		if i/256 == 3 && i%97 == 0 {
			v *= 16
		}
		if i/256 == 3 && (i/16)%5 == 0 {
			v = v * v
		}
		x[i] = v
	}
	return x
}

// goldenSHA256 holds the SHA-256 of ggml's reference quantizers' output
// (quantize_row_<type>_ref from ggml-quants.c, built with gcc -O2 on x86-64 after ggml_init,
// llama.cpp c392e5094) for goldenInput, one digest per type; goldenFirst the first block in hex.
var goldenSHA256 = map[gguf.Type]string{
	gguf.Q8_0: "992c917192608ce88d0f5c133778cd7615810dfb50892ef15f795e68bb7b1c2c",
	gguf.Q4_0: "f41524eb42aa378c2d4153f241eba477049ba2977a2548e79439130716cf3d86",
	gguf.Q4_K: "e9b959c59c002e77b9d583b0525d520fe793ec2e244e6ec3d1173c04d9f08b81",
	gguf.Q6_K: "c089f6ce0f34ec3801cce436951cdbc9bba35e4e3bf788545c8aeb6f83a9e224",
}

var goldenFirst = map[gguf.Type]string{
	gguf.Q8_0: "f61f85840b23699cff0c19498a3f789233f6e576e8747f2aec00c9ec2da7965bd081",
	gguf.Q4_0: "e6afaf1fa716015e9887b6935fe4f02fb5f9",
	gguf.Q4_K: "3b180e24fdfbf2febcfcf2fcf5ef5ffd704098fa0ec15758f99cb0abaf21fbc776cf56bf9fca763874b68ae261fdc5204bc5b55d2d41d066cfbc18b3d68f3ee56e3ba8cffa0fa50d5e108aeaf0495fe05e319b0915d44fec1a5686073424cf3500599a66adb020199829661648c44980d485daaac1b9fe70d205bc1de5289592e23a9acce425359e71579e8ab3945955",
	gguf.Q6_K: "f04043899b560083f63331b07ff4ad5d7723e633611695b08de57586daaa3ceffe52257e80f2d3845e131b2aa85aacf1632f5dc01afc64e69383fe6428c0ae5bc5651109856a00ae1673814158aa6228302a1e9ccd52712966eb1c2dd6b44b71641c659107e7d0ea6607c3318e7a315f209586c80ccf97b537d789f411a211c224d4da7e330cc656fefb28cbdbb03edd8ad05a0414c16ace8af655133b90823fe4a3d991f29ec47cf1268a02e212acb230d65a052be8e042ba924551666dd6a878827a966094698089607f7985837b9b1c0c",
}

func TestQuantizeGolden(t *testing.T) {
	x := goldenInput()
	for typ, want := range goldenSHA256 {
		got := Quantize(nil, typ, x)
		sum := sha256.Sum256(got)
		if h := hex.EncodeToString(sum[:]); h != want {
			bs := typ.TypeSize()
			t.Errorf("%s: digest %s, want %s; first block %x, want %s", typ, h, want, got[:bs], goldenFirst[typ])
		}
	}
}

// TestQuantizeRoundTrip checks the quantizers' error: each value within the block's step of
// its dequantized code (step d for the legacy types, d·sc for the K-quants, plus the min).
func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, tc := range []struct {
		typ gguf.Type
		rel float64 // RMS error bound relative to RMS(x)
	}{{gguf.F16, 1e-3}, {gguf.Q8_0, 0.01}, {gguf.Q4_0, 0.15}, {gguf.Q4_K, 0.12}, {gguf.Q6_K, 0.03}} {
		b := Quantize(nil, tc.typ, x)
		y := make([]float32, len(x))
		if err := gguf.DequantizeRow(tc.typ, b, y); err != nil {
			t.Fatal(err)
		}
		var e, s float64
		for i := range x {
			e += math.Pow(float64(x[i]-y[i]), 2)
			s += float64(x[i]) * float64(x[i])
		}
		if rel := math.Sqrt(e / s); rel > tc.rel {
			t.Errorf("%s: relative RMS error %.4f > %.4f", tc.typ, rel, tc.rel)
		} else {
			t.Logf("%s: relative RMS error %.4f", tc.typ, rel)
		}
	}
}

func TestToF16(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := half(uint16(h))
		if f != f {
			continue
		}
		if got := toF16(f); got != uint16(h) {
			t.Fatalf("toF16(half(%#04x) = %g) = %#04x", h, f, got)
		}
	}
	for _, tc := range []struct {
		f float32
		h uint16
	}{{65520, 0x7c00}, {65519, 0x7bff}, {1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {5.960464477539063e-08 / 2, 0}, {5.960464477539063e-08 * 0.75, 1}} {
		if got := toF16(tc.f); got != tc.h {
			t.Errorf("toF16(%g) = %#04x, want %#04x", tc.f, got, tc.h)
		}
	}
}

func FuzzQuantize(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, ti uint8) {
		types := []gguf.Type{gguf.F16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K}
		typ := types[int(ti)%len(types)]
		x := make([]float32, 256)
		for i := range x {
			if len(raw) >= 2 {
				x[i] = float32(int16(uint16(raw[(2*i)%len(raw)])|uint16(raw[(2*i+1)%len(raw)])<<8)) / 1024
			}
		}
		b := Quantize(nil, typ, x)
		if len(b) != int(typ.RowBytes(256)) {
			t.Fatalf("%s: %d bytes", typ, len(b))
		}
		y := make([]float32, 256)
		if err := gguf.DequantizeRow(typ, b, y); err != nil {
			t.Fatal(err)
		}
	})
}
