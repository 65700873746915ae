package kvq

import (
	"encoding/binary"
	"math"

	"github.com/kvlab/kvlab/native/ggml"
)

// iq4nlValues is ggml's kvalues_iq4nl: the 16 levels of the iq4_nl codebook, in units of the
// block scale d, sorted ascending.
var iq4nlValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// iq4nlEps is ggml's GROUP_MAX_EPS: a block whose largest magnitude is below it stores d = 0 and
// code 0 everywhere.
const iq4nlEps = 1e-15

// iq4nlEncode quantizes one block of 1..32 values into dst (2 + ⌈n/2⌉ bytes).
//
// The encoder is bit-identical to ggml's quantize_row_iq4_nl_ref (quantize_row_iq4_nl_impl with
// no importance weights and ntry = -1, the path ggml's CPU backend takes when it converts f32 to
// iq4_nl, for instance when writing a KV cache): with max the value of largest magnitude (the
// first on ties) and d₀ = max/−127, each code is the codebook level nearest x/d₀ (ties to the
// upper level); the stored scale is the least-squares scale with weights x²,
// d = Σ x²·v_c·x / Σ x²·v_c², computed with ggml's float32 operation order. It does not run the
// ±7-step scale search that llama-quantize's quantize_iq4_nl (ntry = 7) adds for model weights;
// bytes from that path decode with the same layout but were chosen differently.
func iq4nlEncode(dst []byte, src []float32) {
	n := len(src)
	dst = dst[:2+(n+1)/2]
	clear(dst)
	mx, amax := blockSignedMax(src)
	if amax < iq4nlEps {
		return // d = +0 and every code 0, as ggml's reference stores an all-zero block
	}
	d := mx / -127
	id := 1 / d
	var codes [BlockSize]byte
	var sumqx, sumq2 float32
	for i, x := range src {
		l := iq4nlNearest(id * x)
		codes[i] = l
		q := float32(iq4nlValues[l])
		w := float32(x * x)
		wq := float32(w * q)
		sumqx += float32(wq * x)
		sumq2 += float32(wq * q)
	}
	d = 0
	if sumq2 > 0 {
		d = sumqx / sumq2
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	blockPackNibbles(dst[2:], codes[:n])
}

// iq4nlNearest returns the index of the codebook level nearest v, the upper one when v is
// exactly halfway (ggml's best_index_int8). It compares 2v with the sums of neighbouring levels,
// which is exact, in a four-step binary search that reads each comparison from the sign of the
// difference (exact, +0 when equal) instead of branching on it. NaN gives some index in 0..15.
func iq4nlNearest(v float32) byte {
	v2 := v + v
	m := &iq4nlMid2
	i := uint32(0)
	i += 8 * (1 - math.Float32bits(v2-m[8])>>31)
	i += 4 * (1 - math.Float32bits(v2-m[(i+4)&15])>>31)
	i += 2 * (1 - math.Float32bits(v2-m[(i+2)&15])>>31)
	i += 1 - math.Float32bits(v2-m[(i+1)&15])>>31
	return byte(i)
}

// iq4nlMid2[j] = kvalues[j−1] + kvalues[j] for j ≥ 1: twice the midpoint between levels j−1 and
// j, the threshold from which level j is the nearest.
var iq4nlMid2 = func() (m [16]float32) {
	for j := 1; j < 16; j++ {
		m[j] = float32(int32(iq4nlValues[j-1]) + int32(iq4nlValues[j]))
	}
	return m
}()

func iq4nlDecode(dst []float32, blk []byte) {
	d := blockF16(blk, 0)
	n := len(dst)
	qs := blk[2 : 2+(n+1)/2]
	for i := range dst {
		dst[i] = float32(iq4nlValues[blockNibble(qs, n, i)]) * d
	}
}

var iq4nlKind = &blockKind{f: IQ4_NL, g: ggml.IQ4_NL, hdr: 2, encode: iq4nlEncode, decode: iq4nlDecode}

func init() {
	codecFactories[IQ4_NL] = func(d int, _ CodecOptions) (Codec, error) {
		c, err := newBlockCodec(iq4nlKind, d)
		if err != nil {
			return nil, err
		}
		return &iq4nlCodec{c}, nil
	}
}
