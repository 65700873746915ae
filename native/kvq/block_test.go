package kvq

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// ggmlRowFormats are the formats whose codecs live in plain.go, block.go and iq4nl.go.
var ggmlRowFormats = []Format{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL}

// ggmlBlockFormats are the 32-value block formats among them.
var ggmlBlockFormats = []Format{Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL}

// ggmlTestDims covers short-only rows (8, 16, 24), full blocks plus a short one (40, 80) and
// whole blocks (64, 96, 128, 256).
var ggmlTestDims = []int{8, 16, 24, 40, 64, 80, 96, 128, 256}

func mustCodec(t testing.TB, f Format, d int) Codec {
	t.Helper()
	c, err := NewCodec(f, d, CodecOptions{})
	if err != nil {
		t.Fatalf("NewCodec(%s, %d): %v", f, d, err)
	}
	if c.Format() != f || c.Dim() != d || c.RowBytes() != f.RowBytes(d) {
		t.Fatalf("%s/%d: codec says %s/%d/%d bytes, want %d bytes", f, d, c.Format(), c.Dim(), c.RowBytes(), f.RowBytes(d))
	}
	return c
}

func kindOf(t testing.TB, f Format) *blockKind {
	t.Helper()
	for _, k := range []*blockKind{q8_0Kind, q4_0Kind, q4_1Kind, q5_0Kind, q5_1Kind, iq4nlKind} {
		if k.f == f {
			return k
		}
	}
	t.Fatalf("%s is not a block format", f)
	return nil
}

// gaussianRows returns n rows of d values drawn from N(0, σ²).
func gaussianRows(rng *rand.Rand, n, d int, sigma float64) []float32 {
	x := make([]float32, n*d)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * sigma)
	}
	return x
}

// outlierRows returns n rows of d N(0, 1) values in which three fixed channels carry 5×, 20×
// and 75× the scale, the shape of K caches with outlier channels.
func outlierRows(rng *rand.Rand, n, d int) []float32 {
	x := gaussianRows(rng, n, d, 1)
	for r := 0; r < n; r++ {
		row := x[r*d : (r+1)*d]
		row[1] *= 5
		row[d/3] *= 20
		row[d-3] *= 75
	}
	return x
}

type testData struct {
	name string
	gen  func(rng *rand.Rand, n, d int) []float32
}

var ggmlTestData = []testData{
	{"gaussian", func(rng *rand.Rand, n, d int) []float32 { return gaussianRows(rng, n, d, 1) }},
	{"outliers", outlierRows},
	{"sparse", sparseRows},
}

// sparseRows returns n rows of d values that are mostly exactly zero, one in eight N(0, 10²):
// the blocks where offset codes (q5_0's 16, q4_1's min) cancel most.
func sparseRows(rng *rand.Rand, n, d int) []float32 {
	x := make([]float32, n*d)
	for i := range x {
		if rng.IntN(8) == 0 {
			x[i] = float32(rng.NormFloat64() * 10)
		}
	}
	return x
}

// goldenSplitmix is splitmix64, for test inputs that must not depend on math/rand's algorithms.
func goldenSplitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// goldenGauss is a bell-shaped value with σ ≈ 1.15 computed with integer arithmetic and an exact
// power-of-two scaling, so it is the same float32 on every platform: the sum of four 16-bit
// uniforms, centred, over 2^15.
func goldenGauss(s *uint64) float32 {
	r := goldenSplitmix(s)
	sum := int64(r&0xffff) + int64(r>>16&0xffff) + int64(r>>32&0xffff) + int64(r>>48)
	return float32(sum-131070) / 32768
}

// ggmlVectorInput is 256 values in 8 blocks of 32, each a case for the quantizers: a ramp
// 0..31, bell-shaped values, bell-shaped values with 24× outliers, zeros, values around 2^-20
// (the scale underflows f16), bell-shaped values with a negative maximum, a constant, and
// values around 4096.
func ggmlVectorInput() []float32 {
	var s uint64 = 20240601
	x := make([]float32, 256)
	for i := 0; i < 32; i++ {
		x[i] = float32(i)
	}
	for i := 32; i < 64; i++ {
		x[i] = goldenGauss(&s)
	}
	for i := 64; i < 96; i++ {
		x[i] = goldenGauss(&s)
		if i%7 == 3 {
			x[i] *= 24
		}
	}
	for i := 128; i < 160; i++ {
		x[i] = goldenGauss(&s) * (1.0 / (1 << 20))
	}
	for i := 160; i < 192; i++ {
		x[i] = goldenGauss(&s)
	}
	x[170] = -9.5
	for i := 192; i < 224; i++ {
		x[i] = 3
	}
	for i := 224; i < 256; i++ {
		x[i] = goldenGauss(&s) * 4096
	}
	return x
}

// ggmlVectors are the bytes ggml's quantize_row_*_ref writes for ggmlVectorInput, and the
// SHA-256 of the little-endian float32 bits dequantize_row_* reads back from them. They were
// produced by ggml-org/ggml at d99724f (src/ggml-quants.c) built with gcc -O2 for x86-64, not
// by this package. For iq4_nl, block 3 (all zeros) holds code 0 everywhere as llama.cpp's
// quantize_row_iq4_nl_impl writes it (it clears the codes of a block below GROUP_MAX_EPS); that
// ggml revision left them uninitialized.
var ggmlVectors = map[Format]struct{ enc, decSHA string }{
	Q8_0: {
		"d0330004080c1014191d2125292d3135393d42464a4e52565a5e62666b6f73777b7f8724f04bc519948b030240aa29c6ea17d6c675f293119f7fd79b4fe21113" +
			"fefbfd0d522f02f91aeffe02fdfe0324fcf212090dfdf70ffff103fc05240502fd0bfeff81ff0000000000000000000000000000000000000000000000000000" +
			"00000000000000000000af2de22e0a3316f4f3f5b4047f69f1672406da1df5cdfaccb4ab11e0f3343ebcca2cfe0904ef1a1513fbfd02811207fd0c0007fc120e" +
			"ecf2fc0b0df102fe210014fd0c267f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7fad56e69bbff8e7e8f1f10ee91f0663c5ea10" +
			"1c4fd60315f7a0de03313d26d7810508",
		"cc9e74a0bdba66af701eb9baab6f5f8f90492035033ba2f975ee7cf32a1b35b9",
	},
	Q4_0: {
		"c0c3484837373737262626261515151504047eb41993fc76ef0fb8e834ad757c89878b7c443f78988a77888888a8888a88978989098800808888888888888888" +
			"888888888888888805806d85aa6597b587b9d9d97da8905149c2c03c888998977a79899898788089a888998800b6000000000000000000000000000000009f66" +
			"a6d254889676276789b7caa85e048799",
		"cf2103bd39143ee3b947695a7f0acc2fa5976c72ce5d8073f243c03dffedabc7",
	},
	Q4_1: {
		"2240000080809191a2a2b3b3c4c4d5d5e6e6f7f79a3422c0e66c148911f05717cb528a8476797584f83c44cbbcdbceaacbbccbfbcccfbbdacdcc0dcb00000000" +
			"000000000000000000000000000000000400198090693489572a6825150571465fada51d633ac0c8dccdecdaaebecedbdcbcc0cefdccedcc0000004200000000" +
			"0000000000000000000000004a669ff2a7e26498a787276799c7cab96f049799",
		"b8038b36fce32a1bd2ff82393961f2f6111c8c030b3fc863c1d29d4d6b169364",
	},
	Q5_0: {
		"c0bf01000000807f7f6e6e5d5d4c4c3b3b2a2a1919087eb0f5dad6721227e7edce0f50d0684bebe7031d05e7443bf5f7d6bff02f03ee00f010501005001e0201" +
			"02000080ffffffff0000000000000000000000000000000002808547f49bcafa54ca1f6a1d71a2b1ea4f20938293c03877fbcdfd10f1212ed3e3021f20e00002" +
			"4100220000b200000000000000000000000000000000000000009f62009d1bcf4da3b80f3dfd4ece026d8451bc091d12",
		"946dc1b43556e14853251331518085e06e4d22cafbbf9a4adbaeadb53cad6c15",
	},
	Q5_1: {
		"003c00000000ffff00112233445566778899aabbccddeeff743022c00a25298dedd8171231f0af2f97b41417fce2ea17cf3844cbffffffbf69b78d55987898f8" +
			"999f87a58c8a0b88000000000000000000000000000000000000000000000000020019806ab0096020d37813be54c05b1a0bf18daf4c5a2b2e36c0c8fffbffff" +
			"a88ac9b55e6d8cb8b869908cfa98cb8900000042000000000000000000000000000000000000000016629ff2089d3bcf5ec4c8204e0e4fdf238ea672cf092e34",
		"b86b82a933451afa85c52a413c3a48f3f5c3e957ebad78a454241a1f72898d66",
	},
	IQ4_NL: {
		"c8b33838372726262615151515141404030369a40992fc66ef0fb8f823ae656c8a868b7c512f78978a76888888b8888b889789890988" +
			"000000000000000000000000000000000000" + // block 3: see the comment above
			"00805e74ba5497c486c9d9e96db8904139d1c82c888998966a7a8a9798788089b988a9880ca6000000000000000000000000000000009956" +
			"a6e14387a676175789c6cab85e038699",
		"", // block 3 differs from that ggml revision, so only the bytes are compared
	},
}

func TestEncodeMatchesGGML(t *testing.T) {
	x := ggmlVectorInput()
	for _, f := range ggmlBlockFormats {
		t.Run(f.String(), func(t *testing.T) {
			want, err := hex.DecodeString(ggmlVectors[f].enc)
			if err != nil {
				t.Fatal(err)
			}
			c := mustCodec(t, f, len(x))
			got := make([]byte, c.RowBytes())
			c.Encode(got, x)
			if len(want) != len(got) {
				t.Fatalf("vector has %d bytes, row has %d", len(want), len(got))
			}
			fb := f.RowBytes(BlockSize)
			for b := 0; b < len(x)/BlockSize; b++ {
				if g, w := got[b*fb:(b+1)*fb], want[b*fb:(b+1)*fb]; string(g) != string(w) {
					t.Errorf("block %d: got  %x\n want %x", b, g, w)
				}
			}
			if ws := ggmlVectors[f].decSHA; ws != "" {
				dec := make([]float32, len(x))
				c.Decode(dec, want)
				h := sha256.New()
				for _, v := range dec {
					binary.Write(h, binary.LittleEndian, math.Float32bits(v))
				}
				if gs := hex.EncodeToString(h.Sum(nil)); gs != ws {
					t.Errorf("decoding ggml's bytes: sha256 %s, ggml's dequantize gives %s", gs, ws)
				}
			}
		})
	}
}

// ggmlBulkInput is 256 blocks of 32 bell-shaped values at scales 2⁻⁸ … 2⁷, every fifth block
// with one outlier channel 5× … 75× the rest.
func ggmlBulkInput() []float32 {
	var s uint64 = 77
	x := make([]float32, 256*BlockSize)
	for b := 0; b < 256; b++ {
		scale := float32(1) / 256 * float32(int(1)<<(b%16))
		for i := 0; i < BlockSize; i++ {
			v := goldenGauss(&s) * scale
			if b%5 == 2 && i == (b*7)%BlockSize {
				v *= float32(5 + b%71)
			}
			x[b*BlockSize+i] = v
		}
	}
	return x
}

// ggmlBulkSHA are the SHA-256 of the bytes ggml writes for ggmlBulkInput as one row (its
// quantize_row_*_ref, and GGML_FP32_TO_FP16 / GGML_FP32_TO_BF16 per value), and of the float32
// bits its dequantize_row_* reads back, from the same ggml build as ggmlVectors.
var ggmlBulkSHA = map[Format]struct{ enc, dec string }{
	F16:    {"ffc63b1f62e5e1a84b4f0bd3389f6231dd015a93eac97b89ba9109907705b1c1", ""},
	BF16:   {"30e75d86193ae8e9f0b1e475fb5856cc03fcf0ce21b48389f3682b78e5ceabf0", ""},
	Q8_0:   {"b7db9a3170db5f82afc5febc8cc5975c791d1f52493ba06dcb96e90bd89fa1e2", "3177a1f3f83f697de314a970814c8f198cd734b1c6ec3049028c13780bd689b7"},
	Q4_0:   {"591d7a2ebb0b6f5e60c29c99e6c441cb7bc8773c79fcb1f9c97e7bfe1e12c581", "94494c9c8d4662c72bce9da13793064e3c5fb991788958c4af35b79cc1cd5a1a"},
	Q4_1:   {"ada06b32e2a1b17caf7a4d950d3c5498956346146a694864c2b5830f95c00e5a", "59db29daf68ed21718c8efa3247d5ed22fd7b0a3c7244f9939b80c63ca4d5d0d"},
	Q5_0:   {"ceccfae014319543bea3b63a06ee1a5fa5242929c1c6a9817d6c2d034d73748a", "f9a5c61d14727c7306abaf1c57570d25648f1b00b853a666c1aba3b258a4ddab"},
	Q5_1:   {"cf7047eed3b7c90a2c1b978e9bb4ee59b11ba0af6c9756a191ca56419d187956", "163c6ce29a34071b9cb4f23c8dde1de1d4a7cffc45d3ce6c2c675936695d1a0d"},
	IQ4_NL: {"a77c8bb5371ebc88083a2606fde571e27530d961cf1d1b239b11c0aee32fb2d6", "95b9aa79a25b964b3dfecbbd01152dac79ad61f771326281f519721fbb9a968a"},
}

func TestBulkMatchesGGML(t *testing.T) {
	x := ggmlBulkInput()
	for _, f := range ggmlRowFormats {
		want, ok := ggmlBulkSHA[f]
		if !ok {
			continue
		}
		t.Run(f.String(), func(t *testing.T) {
			c := mustCodec(t, f, len(x))
			enc := make([]byte, c.RowBytes())
			c.Encode(enc, x)
			if got := fmt.Sprintf("%x", sha256.Sum256(enc)); got != want.enc {
				t.Errorf("encoding: sha256 %s, ggml's is %s", got, want.enc)
			}
			if want.dec == "" {
				return
			}
			dec := make([]float32, len(x))
			c.Decode(dec, enc)
			h := sha256.New()
			for _, v := range dec {
				binary.Write(h, binary.LittleEndian, math.Float32bits(v))
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != want.dec {
				t.Errorf("decoding: sha256 %s, ggml's is %s", got, want.dec)
			}
		})
	}
}

// TestQ8_0HandDerived checks one q8_0 block worked out by hand from ggml's algorithm: for the
// values 0, 1, …, 31, amax = 31 and d = 31/127 = 0.244094…, which is 1.952756×2⁻³; its f16 has
// exponent field 12 and mantissa round(0.952756×1024) = 976 = 0x3d0, so the header is 0x33d0,
// bytes d0 33. Value i stores round(i·127/31): 0, 4 (4.097), 8 (8.194), 12, 16, 20 (20.48),
// 25 (24.58), …, 127.
func TestQ8_0HandDerived(t *testing.T) {
	x := make([]float32, 32)
	want := []byte{0xd0, 0x33}
	for i := range x {
		x[i] = float32(i)
		want = append(want, byte(math.Round(float64(i)*127/31)))
	}
	if want[2+6] != 25 || want[2+5] != 20 || want[2+31] != 127 {
		t.Fatalf("hand derivation slipped: %v", want)
	}
	c := mustCodec(t, Q8_0, 32)
	got := make([]byte, c.RowBytes())
	c.Encode(got, x)
	if string(got) != string(want) {
		t.Errorf("got  %x\nwant %x", got, want)
	}
	dec := make([]float32, 32)
	c.Decode(dec, got)
	d := F16ToF32(0x33d0)
	for i, v := range dec {
		if w := float32(int8(want[2+i])) * d; v != w {
			t.Errorf("value %d decodes to %g, want %g", i, v, w)
		}
	}
}

// TestIQ4NLNearest checks the branch-free level search against a linear scan, on a sweep of
// values and on every midpoint between levels and its float32 neighbours (ties go to the upper
// level, as ggml's best_index_int8 does).
func TestIQ4NLNearest(t *testing.T) {
	scan := func(v float32) byte {
		best := byte(0)
		for j := range iq4nlValues {
			dj := math.Abs(float64(v) - float64(iq4nlValues[j]))
			db := math.Abs(float64(v) - float64(iq4nlValues[best]))
			if dj <= db {
				best = byte(j)
			}
		}
		return best
	}
	var vs []float32
	for v := float32(-140); v <= 140; v += 0.125 {
		vs = append(vs, v)
	}
	for j := 1; j < len(iq4nlValues); j++ {
		mid := float32(int32(iq4nlValues[j-1])+int32(iq4nlValues[j])) / 2
		vs = append(vs, mid, math.Nextafter32(mid, -200), math.Nextafter32(mid, 200))
	}
	vs = append(vs, 1e-30, -1e-30, 0, 1e6, -1e6)
	for _, v := range vs {
		if got, want := iq4nlNearest(v), scan(v); got != want {
			t.Errorf("iq4nlNearest(%g) = %d, want %d", v, got, want)
		}
	}
	if lo, hi := iq4nlNearest(float32(math.Inf(-1))), iq4nlNearest(float32(math.Inf(1))); lo != 0 || hi != 15 {
		t.Errorf("iq4nlNearest(−Inf, +Inf) = %d, %d, want 0, 15", lo, hi)
	}
	if got := iq4nlNearest(float32(math.NaN())); got > 15 {
		t.Errorf("iq4nlNearest(NaN) = %d, out of range", got)
	}
}

// TestShortBlockMatchesPaddedBlock checks the short-block rule against ggml's full block: a
// block of m < 32 values decodes to the same values, bit for bit, as ggml's 32-value block of
// those values padded with values that leave the scale unchanged (zeros, or copies of the first
// value for the formats with a min), and stores the same header.
func TestShortBlockMatchesPaddedBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range ggmlBlockFormats {
		t.Run(f.String(), func(t *testing.T) {
			k := kindOf(t, f)
			for m := 1; m < BlockSize; m++ {
				for _, data := range ggmlTestData {
					src := data.gen(rng, 1, BlockSize)[:m]
					pad := make([]float32, BlockSize)
					copy(pad, src)
					if k.hdr == 4 {
						for i := m; i < BlockSize; i++ {
							pad[i] = src[0]
						}
					}
					short := make([]byte, f.RowBytes(m))
					full := make([]byte, f.RowBytes(BlockSize))
					k.encode(short, src)
					k.encode(full, pad)
					if string(short[:k.hdr]) != string(full[:k.hdr]) {
						t.Fatalf("m=%d %s: header %x, padded block's %x", m, data.name, short[:k.hdr], full[:k.hdr])
					}
					got := make([]float32, m)
					want := make([]float32, BlockSize)
					k.decode(got, short)
					k.decode(want, full)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("m=%d %s: value %d decodes to %g, padded block gives %g", m, data.name, i, got[i], want[i])
						}
					}
				}
			}
		})
	}
}

// TestShortBlockLayout pins the short-block payload layout on a q4_0 block of 5 values and a
// q5_1 block of 9: low nibbles hold the first ⌈m/2⌉ codes, high nibbles the rest, and bit i of
// the qh bytes holds bit 4 of code i.
func TestShortBlockLayout(t *testing.T) {
	// q4_0, m = 5: max = -8 so d = 1 and code = x + 8.
	src := []float32{-8, -7, 0, 5, 7}
	got := make([]byte, Q4_0.RowBytes(5))
	q4_0Kind.encode(got, src)
	// codes 0, 1, 8, 13, 15: bytes (0 | 13<<4), (1 | 15<<4), (8 | 0<<4).
	want := []byte{0x00, 0x3c, 0xd0, 0xf1, 0x08}
	if string(got) != string(want) {
		t.Errorf("q4_0 m=5: got %x, want %x", got, want)
	}
	// q5_1, m = 9: min = 0, max = 31 so d = 1, m = 0 and code = x.
	src = []float32{0, 31, 16, 1, 17, 2, 18, 3, 19}
	got = make([]byte, Q5_1.RowBytes(9))
	q5_1Kind.encode(got, src)
	// qh: codes ≥ 16 are values 1, 2, 4, 6, 8: bits 0b01010110 = 0x56 and 0x01.
	// nibbles (h = 5): (0 | 2<<4), (15 | 18&15<<4), (0 | 3<<4), (1 | 19&15<<4), (1 | 0).
	want = []byte{0x00, 0x3c, 0x00, 0x00, 0x56, 0x01, 0x20, 0x2f, 0x30, 0x31, 0x01}
	if string(got) != string(want) {
		t.Errorf("q5_1 m=9: got %x, want %x", got, want)
	}
}

// blockRef returns, for one stored row, each value's block reference scale d₀ computed from the
// source as ggml does, the stored scale d̂, and the stored min m̂ with its source min.
type blockStat struct {
	d0, dh     float64 // unrounded and stored scale
	min, minh  float64 // source min and stored min (formats with a min)
	maxv, amax float64 // signed value of largest magnitude, and its magnitude
}

func blockStats(f Format, src []float32, blk []byte) blockStat {
	var st blockStat
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range src {
		x := float64(v)
		lo, hi = math.Min(lo, x), math.Max(hi, x)
		if math.Abs(x) > st.amax {
			st.amax, st.maxv = math.Abs(x), x
		}
	}
	st.dh = float64(F16ToF32(binary.LittleEndian.Uint16(blk)))
	switch f {
	case Q8_0:
		st.d0 = st.amax / 127
	case Q4_0:
		st.d0 = st.maxv / -8
	case Q5_0:
		st.d0 = st.maxv / -16
	case IQ4_NL:
		st.d0 = st.maxv / -127
	case Q4_1, Q5_1:
		levels := 15.0
		if f == Q5_1 {
			levels = 31
		}
		st.d0 = (hi - lo) / levels
		st.min, st.minh = lo, float64(F16ToF32(binary.LittleEndian.Uint16(blk[2:])))
	}
	return st
}

// TestBlockErrorBounds checks every stored value against its format's bound, stated per block
// from d₀ (the scale ggml computes before rounding: amax/127 for q8_0, max/−8 for q4_0, max/−16
// for q5_0, (max−min)/15 and /31 for q4_1 and q5_1, max is the value of largest magnitude) and
// the stored f16 scale d̂ and min m̂:
//
//	q8_0  |x̂−x| ≤ |d₀|/2 + 127·|d̂−d₀|
//	q4_0  |x̂−x| ≤ |d₀|/2 + 8·|d̂−d₀|, or |d₀| + 8·|d̂−d₀| for x/d₀ > 7.5 (past the top code)
//	q5_0  |x̂−x| ≤ |d₀|/2 + 16·|d̂−d₀|, or |d₀| + 16·|d̂−d₀| for x/d₀ > 15.5
//	q4_1  |x̂−x| ≤ d₀/2 + 15·|d̂−d₀| + |m̂−min|
//	q5_1  |x̂−x| ≤ d₀/2 + 31·|d̂−d₀| + |m̂−min|
//	iq4_nl  the code is the level nearest x/d₀ (d₀ = max/−127), and |x̂−x| ≤ 14·|d₀| + 127·|d̂−d₀|
//
// each plus 2⁻²⁰·amax for float32 rounding; and the plain formats: f32 exact, f16 within 2⁻¹¹
// relative (2⁻²⁵ absolute below 2⁻¹⁴), bf16 within 2⁻⁸ relative. It also bounds the RMS error
// over all values relative to the data's RMS, with the margins measured at d = 128.
func TestBlockErrorBounds(t *testing.T) {
	// rmsMax is the largest allowed RMS error / RMS of the data on Gaussian rows at d = 128, about
	// 20% above what 1024 such rows measure: f16 2.07e-4, bf16 1.67e-3, q8_0 5.36e-3, q4_0 0.0860,
	// q4_1 0.0784, q5_0 0.0427, q5_1 0.0379, iq4_nl 0.0788.
	rmsMax := map[Format]float64{
		F32: 0, F16: 2.5e-4, BF16: 2e-3, Q8_0: 0.0065, Q4_0: 0.1, Q4_1: 0.095, Q5_0: 0.052, Q5_1: 0.046, IQ4_NL: 0.095,
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const rows = 64
	for _, f := range ggmlRowFormats {
		for _, d := range []int{8, 16, 24, 40, 64, 128, 256} {
			for _, data := range ggmlTestData {
				t.Run(fmt.Sprintf("%s/d%d/%s", f, d, data.name), func(t *testing.T) {
					c := mustCodec(t, f, d)
					src := data.gen(rng, rows, d)
					enc := make([]byte, rows*c.RowBytes())
					dec := make([]float32, rows*d)
					for r := 0; r < rows; r++ {
						c.Encode(enc[r*c.RowBytes():(r+1)*c.RowBytes()], src[r*d:(r+1)*d])
					}
					if err := DecodeRows(c, dec, enc); err != nil {
						t.Fatal(err)
					}
					var se, ss float64
					for i := range src {
						e := float64(dec[i]) - float64(src[i])
						se += e * e
						ss += float64(src[i]) * float64(src[i])
					}
					if rel := math.Sqrt(se / ss); data.name == "gaussian" && d == 128 && rel > rmsMax[f] {
						t.Errorf("RMS error %.4g of RMS, want ≤ %g", rel, rmsMax[f])
					}
					for r := 0; r < rows; r++ {
						checkRowBound(t, c, src[r*d:(r+1)*d], dec[r*d:(r+1)*d], enc[r*c.RowBytes():(r+1)*c.RowBytes()])
					}
				})
			}
		}
	}
}

func checkRowBound(t *testing.T, c Codec, src, dec []float32, row []byte) {
	t.Helper()
	f := c.Format()
	switch f {
	case F32:
		for i := range src {
			if math.Float32bits(src[i]) != math.Float32bits(dec[i]) {
				t.Fatalf("value %d: %g came back as %g", i, src[i], dec[i])
			}
		}
		return
	case F16, BF16:
		rel := math.Ldexp(1, -11)
		if f == BF16 {
			rel = math.Ldexp(1, -8)
		}
		for i := range src {
			x := float64(src[i])
			bound := rel * math.Abs(x)
			if f == F16 && math.Abs(x) < math.Ldexp(1, -14) {
				bound = math.Ldexp(1, -25)
			}
			if e := math.Abs(float64(dec[i]) - x); e > bound {
				t.Fatalf("value %d: %g came back as %g, error %g > %g", i, x, dec[i], e, bound)
			}
		}
		return
	}
	fb := f.RowBytes(BlockSize)
	for b := 0; b*BlockSize < len(src); b++ {
		lo, hi := b*BlockSize, min(len(src), (b+1)*BlockSize)
		st := blockStats(f, src[lo:hi], row[b*fb:])
		slack := math.Ldexp(st.amax, -20)
		dd := math.Abs(st.dh - st.d0)
		for i := lo; i < hi; i++ {
			x, xh := float64(src[i]), float64(dec[i])
			var bound float64
			switch f {
			case Q8_0:
				bound = st.d0/2 + 127*dd
			case Q4_0, Q5_0:
				top, half := 7.5, 8.0
				if f == Q5_0 {
					top, half = 15.5, 16
				}
				bound = math.Abs(st.d0)/2 + half*dd
				if st.d0 != 0 && x/st.d0 > top {
					bound += math.Abs(st.d0) / 2
				}
			case Q4_1:
				bound = st.d0/2 + 15*dd + math.Abs(st.minh-st.min)
			case Q5_1:
				bound = st.d0/2 + 31*dd + math.Abs(st.minh-st.min)
			case IQ4_NL:
				bound = 14*math.Abs(st.d0) + 127*dd
				if st.amax >= iq4nlEps {
					code := blockNibble(row[b*fb+2:], hi-lo, i-lo)
					a := x / st.d0
					got := math.Abs(a - float64(iq4nlValues[code]))
					for _, v := range iq4nlValues {
						if e := math.Abs(a - float64(v)); e < got-1e-4 {
							t.Fatalf("block %d value %d: x/d₀ = %g stored level %d, but %d is nearer", b, i-lo, a, iq4nlValues[code], v)
						}
					}
				}
			}
			if e := math.Abs(xh - x); e > bound+slack {
				t.Fatalf("block %d value %d: %g came back as %g, error %g > bound %g (d₀ %g, d̂ %g)", b, i-lo, x, xh, e, bound+slack, st.d0, st.dh)
			}
		}
	}
}

// rowOffsets returns, per value of a stored row, the offset term o_b of the DotMany bound in
// block_fast.go: |m̂| of its block for q4_1 and q5_1, 16·|d̂| of a full block for q5_0, 0
// otherwise.
func rowOffsets(f Format, d int, row []byte) []float64 {
	out := make([]float64, d)
	fb := f.RowBytes(BlockSize)
	for i := range out {
		b := i / BlockSize
		switch {
		case f == Q4_1 || f == Q5_1:
			out[i] = math.Abs(float64(F16ToF32(binary.LittleEndian.Uint16(row[b*fb+2:]))))
		case f == Q5_0 && (b+1)*BlockSize <= d:
			out[i] = 16 * math.Abs(float64(F16ToF32(binary.LittleEndian.Uint16(row[b*fb:]))))
		}
	}
	return out
}

// rowMins returns, per value of a stored row, |m̂| of its block (0 for formats without a min):
// the offset term of the AccumulateMany bound.
func rowMins(f Format, d int, row []byte) []float64 {
	if f != Q4_1 && f != Q5_1 {
		return make([]float64, d)
	}
	return rowOffsets(f, d, row)
}

// TestFastPathsMatchReference checks DotMany against Dot and AccumulateMany against a loop of
// AccumulateScaled on random and outlier rows, within the bounds plain.go and block_fast.go
// state: |DotMany − Dot| ≤ 1e-5·Σ|q[i]|·(|x[i]| + o_b), and, after n rows,
// |AccumulateMany − loop| ≤ (2n + 8)·2⁻²⁴·(|acc₀[i]| + Σ_j |w_j|·(|x_j[i]| + |m_j|)), which the
// plain formats meet with equality (they are bit-identical there).
func TestFastPathsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows = 64
	for _, f := range ggmlRowFormats {
		for _, d := range append(ggmlTestDims, 1024) {
			for _, data := range ggmlTestData {
				t.Run(fmt.Sprintf("%s/d%d/%s", f, d, data.name), func(t *testing.T) {
					c := mustCodec(t, f, d)
					rb := c.RowBytes()
					src := data.gen(rng, rows, d)
					enc := make([]byte, rows*rb)
					for r := 0; r < rows; r++ {
						c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
					}
					q := gaussianRows(rng, 1, d, 1)
					pq := make([]float32, d)
					c.PrepareQuery(pq, q)
					x := make([]float32, d)

					out := make([]float32, rows)
					c.DotMany(pq, enc, out)
					for r := 0; r < rows; r++ {
						row := enc[r*rb : (r+1)*rb]
						c.Decode(x, row)
						offs := rowOffsets(f, d, row)
						var exact, scale float64
						for i := range x {
							exact += float64(pq[i]) * float64(x[i])
							scale += math.Abs(float64(pq[i])) * (math.Abs(float64(x[i])) + offs[i])
						}
						ref := c.Dot(pq, row)
						if ref != float32(exact) {
							t.Fatalf("row %d: Dot = %g, Σ q·Decode = %g", r, ref, exact)
						}
						if e := math.Abs(float64(out[r]) - float64(ref)); e > 1e-5*scale {
							t.Fatalf("row %d: DotMany = %g, Dot = %g: error %g > 1e-5·%g", r, out[r], ref, e, scale)
						}
					}

					w := make([]float32, rows)
					for j := range w {
						w[j] = float32(rng.Float64())
						if j%5 == 0 {
							w[j] = -w[j]
						}
					}
					acc0 := gaussianRows(rng, 1, d, 1)
					fast := append([]float32(nil), acc0...)
					ref := append([]float32(nil), acc0...)
					c.AccumulateMany(fast, w, enc)
					scale := make([]float64, d)
					for i := range scale {
						scale[i] = math.Abs(float64(acc0[i]))
					}
					for j, wj := range w {
						row := enc[j*rb : (j+1)*rb]
						c.AccumulateScaled(ref, wj, row)
						c.Decode(x, row)
						mins := rowMins(f, d, row)
						for i := range scale {
							scale[i] += math.Abs(float64(wj)) * (math.Abs(float64(x[i])) + mins[i])
						}
					}
					tol := float64(2*rows+8) * math.Ldexp(1, -24)
					plain := f == F32 || f == F16 || f == BF16
					for i := range fast {
						e := math.Abs(float64(fast[i]) - float64(ref[i]))
						if plain && e != 0 {
							t.Fatalf("acc[%d]: AccumulateMany = %g, loop of AccumulateScaled = %g; want bit-identical", i, fast[i], ref[i])
						}
						if e > tol*scale[i] {
							t.Fatalf("acc[%d]: AccumulateMany = %g, loop = %g: error %g > %g", i, fast[i], ref[i], e, tol*scale[i])
						}
					}
					fin := make([]float32, d)
					c.FinishAccumulate(fin, fast)
					for i := range fin {
						if fin[i] != fast[i] {
							t.Fatalf("FinishAccumulate changed acc[%d]", i)
						}
					}
					// Empty batches touch nothing.
					c.DotMany(pq, nil, nil)
					c.AccumulateMany(fast, nil, nil)
				})
			}
		}
	}
}

// TestEveryHeadDim encodes and decodes one row at every head dimension from 8 to 300, which
// exercises every short-block length with and without full blocks before it.
func TestEveryHeadDim(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, f := range ggmlRowFormats {
		t.Run(f.String(), func(t *testing.T) {
			for d := MinDim; d <= 300; d++ {
				c := mustCodec(t, f, d)
				src := gaussianRows(rng, 1, d, 1)
				row := make([]byte, c.RowBytes()+1)
				row[c.RowBytes()] = 0xa5 // canary: Encode must fill exactly RowBytes
				c.Encode(row[:c.RowBytes()], src)
				if row[c.RowBytes()] != 0xa5 {
					t.Fatalf("d=%d: Encode wrote past RowBytes", d)
				}
				dec := make([]float32, d)
				c.Decode(dec, row[:c.RowBytes()])
				checkRowBound(t, c, src, dec, row)
			}
		})
	}
	if _, err := NewCodec(Q4_0, MinDim-1, CodecOptions{}); err == nil {
		t.Error("NewCodec accepted a head dimension below MinDim")
	}
}

// TestGolden pins the encoded bytes of each format for a fixed deterministic input at a
// short-only, a mixed and a whole-block head dimension.
func TestGolden(t *testing.T) {
	for _, f := range ggmlRowFormats {
		for _, d := range []int{8, 40, 128} {
			name := fmt.Sprintf("%s_d%d.hex", f, d)
			t.Run(strings.TrimSuffix(name, ".hex"), func(t *testing.T) {
				c := mustCodec(t, f, d)
				var s uint64 = uint64(d)*1000 + uint64(f)
				const rows = 4
				enc := make([]byte, rows*c.RowBytes())
				src := make([]float32, d)
				for r := 0; r < rows; r++ {
					for i := range src {
						src[i] = goldenGauss(&s)
						if r == 1 && i%9 == 4 {
							src[i] *= 32 // outlier channels
						}
						if r == 2 {
							src[i] = float32(i%11) - 5 // small integers: exact ties
						}
					}
					if r == 3 {
						clear(src)
						src[d/2] = -1.5 // a single non-zero value
					}
					c.Encode(enc[r*c.RowBytes():(r+1)*c.RowBytes()], src)
				}
				checkGolden(t, name, enc)
			})
		}
	}
}

// FuzzDecodeBlockRows feeds arbitrary bytes to DecodeRows and, for whole rows, to Dot, DotMany,
// AccumulateScaled and AccumulateMany of every plain and block format: none may panic.
func FuzzDecodeBlockRows(f *testing.F) {
	f.Add([]byte{}, byte(0), uint8(0))
	f.Add(make([]byte, 18), byte(4), uint8(24))
	f.Add([]byte{0xff, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8}, byte(3), uint8(0))
	f.Add([]byte{0x00, 0x7c, 0x00, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff}, byte(6), uint8(0))
	f.Add(make([]byte, 72), byte(7), uint8(120))
	f.Fuzz(func(t *testing.T, data []byte, format byte, dim uint8) {
		fm := ggmlRowFormats[int(format)%len(ggmlRowFormats)]
		d := MinDim + int(dim)
		c, err := NewCodec(fm, d, CodecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rb := c.RowBytes()
		n := len(data) / rb
		dst := make([]float32, n*d)
		err = DecodeRows(c, dst, data)
		if (len(data)%rb == 0) != (err == nil) {
			t.Fatalf("%d bytes of %d-byte rows: DecodeRows error %v", len(data), rb, err)
		}
		if n == 0 {
			return
		}
		whole := data[:n*rb]
		q := make([]float32, d)
		for i := range q {
			q[i] = 1
		}
		out := make([]float32, n)
		c.DotMany(q, whole, out)
		_ = c.Dot(q, whole[:rb])
		acc := make([]float32, d)
		w := make([]float32, n)
		c.AccumulateMany(acc, w, whole)
		c.AccumulateScaled(acc, 1, whole[:rb])
	})
}

// FuzzEncodeBlockRows encodes arbitrary float32 bits (NaN and Inf included) with every plain
// and block format: Encode must not panic, and for finite input of magnitude ≤ 1e4 every
// decoded value must be finite and within twice the input's largest magnitude.
func FuzzEncodeBlockRows(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x7f, 0, 0, 0xc0, 0x7f}, byte(3), uint8(0))
	f.Add(make([]byte, 4*40), byte(8), uint8(32))
	f.Fuzz(func(t *testing.T, data []byte, format byte, dim uint8) {
		fm := ggmlRowFormats[int(format)%len(ggmlRowFormats)]
		d := MinDim + int(dim)%64
		c, err := NewCodec(fm, d, CodecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		src := make([]float32, d)
		for i := range src {
			if 4*i+4 <= len(data) {
				src[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
		}
		row := make([]byte, c.RowBytes())
		c.Encode(row, src)
		dec := make([]float32, d)
		c.Decode(dec, row)
		var amax float64
		for _, v := range src {
			a := math.Abs(float64(v))
			if !(a <= 1e4) {
				return
			}
			amax = math.Max(amax, a)
		}
		for i, v := range dec {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 2*amax+1e-6 {
				t.Fatalf("%s: value %d: %g decoded to %g (amax %g)", fm, i, src[i], v, amax)
			}
		}
	})
}

// benchFormats are the formats with a row codec at head dimension d.
func benchFormats(d int) []Codec {
	var out []Codec
	for _, f := range Formats() {
		if c, err := NewCodec(f, d, CodecOptions{}); err == nil && !f.Grouped() {
			out = append(out, c)
		}
	}
	return out
}

const benchDim, benchRows = 128, 4096

func benchRowsOf(c Codec) ([]byte, []float32) {
	rng := rand.New(rand.NewPCG(9, 10))
	src := outlierRows(rng, benchRows, benchDim)
	enc := make([]byte, benchRows*c.RowBytes())
	for r := 0; r < benchRows; r++ {
		c.Encode(enc[r*c.RowBytes():(r+1)*c.RowBytes()], src[r*benchDim:(r+1)*benchDim])
	}
	return enc, src
}

func reportPerValue(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(benchRows*benchDim), "ns/value")
}

// BenchmarkEncode encodes 4096 rows of 128 values; bytes are the packed bytes written.
func BenchmarkEncode(b *testing.B) {
	for _, c := range benchFormats(benchDim) {
		b.Run(c.Format().String(), func(b *testing.B) {
			enc, src := benchRowsOf(c)
			rb := c.RowBytes()
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				for r := 0; r < benchRows; r++ {
					c.Encode(enc[r*rb:(r+1)*rb], src[r*benchDim:(r+1)*benchDim])
				}
			}
			reportPerValue(b)
		})
	}
}

// BenchmarkDotMany scores one query against 4096 rows of 128 values; bytes are packed bytes read.
func BenchmarkDotMany(b *testing.B) {
	for _, c := range benchFormats(benchDim) {
		b.Run(c.Format().String(), func(b *testing.B) {
			enc, _ := benchRowsOf(c)
			q := gaussianRows(rand.New(rand.NewPCG(11, 12)), 1, benchDim, 1)
			pq := make([]float32, benchDim)
			c.PrepareQuery(pq, q)
			out := make([]float32, benchRows)
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				c.DotMany(pq, enc, out)
			}
			reportPerValue(b)
		})
	}
}

// BenchmarkAccumulateMany adds 4096 weighted rows of 128 values into one accumulator; bytes are
// packed bytes read.
func BenchmarkAccumulateMany(b *testing.B) {
	for _, c := range benchFormats(benchDim) {
		b.Run(c.Format().String(), func(b *testing.B) {
			enc, _ := benchRowsOf(c)
			w := make([]float32, benchRows)
			for i := range w {
				w[i] = 1.0 / benchRows
			}
			acc := make([]float32, benchDim)
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				c.AccumulateMany(acc, w, enc)
			}
			reportPerValue(b)
		})
	}
}
