package kvq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAccumulateStrideMatches checks AccumulateManyMultiStride against AccumulateManyMulti (or
// AccumulateMany per accumulator) on contiguous accumulators: the same sums bit for bit, at
// strides past Dim, and nothing written between the accumulators. Kernels that addressed an
// accumulator by Dim instead of the stride, read a weight of the wrong row or query, or wrote
// past an accumulator's Dim values fail it. It takes the formats that hand the stride to their
// kernels (f16, q4_0, q8_0, rotated q4_0 with channel offsets) and two that copy (q5_1, bf16),
// rows of one to two tiles and a half (the integer kernels' 64-row tiles), dims with a tail
// past the last whole 32 and short f16 rows, one to five accumulators (the four- and
// two-accumulator kernels and the padded last groups).
func TestAccumulateStrideMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 7))
	type tc struct {
		f   Format
		d   int
		rot bool
	}
	cases := []tc{{F16, 64, false}, {F16, 128, false}, {F16, 80, false}, {F16, 16, false},
		{Q4_0, 64, false}, {Q4_0, 128, false}, {Q4_0, 48, false}, {Q8_0, 64, false}, {Q8_0, 96, false},
		{Q4_0, 64, true}, {Q8_0, 128, true}, {Q5_1, 64, false}, {BF16, 64, false}}
	for _, c := range cases {
		codec, err := NewCodec(c.f, c.d, CodecOptions{Seed: 2, Rotate: c.rot})
		if err != nil {
			t.Fatal(err)
		}
		d, rb := c.d, codec.RowBytes()
		const maxRows = 160
		vals := make([]float32, maxRows*d)
		for i := range vals {
			vals[i] = float32(r.NormFloat64()) + 0.3*float32(i%d%5)
		}
		if cal, ok := codec.(Calibrator); ok && c.rot {
			cal.Calibrate(vals, maxRows) // channel offsets: the rotated path adds them per accumulator
		}
		rows := make([]byte, maxRows*rb)
		for j := 0; j < maxRows; j++ {
			codec.Encode(rows[j*rb:(j+1)*rb], vals[j*d:(j+1)*d])
		}
		for _, n := range []int{1, 2, 3, 4, 5} {
			for _, m := range []int{1, 7, 64, 100, maxRows} {
				for _, stride := range []int{d, d + 7, 2 * d} {
					w := make([]float32, m*n)
					for i := range w {
						w[i] = float32(r.Float64())
					}
					want := make([]float32, n*d)
					for i := range want {
						want[i] = float32(r.NormFloat64())
					}
					sentinel := float32(math.Pi)
					got := make([]float32, (n-1)*stride+d+5)
					for i := range got {
						got[i] = sentinel
					}
					for h := 0; h < n; h++ {
						copy(got[h*stride:h*stride+d], want[h*d:(h+1)*d])
					}
					AccumulateManyMultiStride(codec, got, stride, n, w, rows[:m*rb])
					accumulateManyMulti(codec, want, n, w, rows[:m*rb])
					for i, x := range got {
						h, k := i/stride, i%stride
						if h < n && k < d {
							if math.Float32bits(x) != math.Float32bits(want[h*d+k]) {
								t.Fatalf("%v d=%d rot=%v n=%d m=%d stride=%d: acc %d[%d] = %v, want %v",
									c.f, d, c.rot, n, m, stride, h, k, x, want[h*d+k])
							}
						} else if x != sentinel {
							t.Fatalf("%v d=%d rot=%v n=%d m=%d stride=%d: wrote %v at %d, between accumulators",
								c.f, d, c.rot, n, m, stride, x, i)
						}
					}
				}
			}
		}
	}
}

// TestDotStrideMatches checks DotManyMultiStride against DotManyMulti (or DotMany per query) on
// contiguous queries: the same scores bit for bit at strides past Dim, for the formats and
// shapes of TestAccumulateStrideMatches (q4_0's and q8_0's integer kernels, rotated q4_0's with
// the offsets they start from, the float kernels, the copying formats), one to five queries.
// Kernels that took a query by Dim instead of the stride, or a tail read of the wrong query,
// fail it.
func TestDotStrideMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	type tc struct {
		f   Format
		d   int
		rot bool
	}
	cases := []tc{{F16, 64, false}, {F16, 128, false}, {F16, 80, false}, {F16, 16, false},
		{Q4_0, 64, false}, {Q4_0, 128, false}, {Q4_0, 48, false}, {Q8_0, 64, false}, {Q8_0, 96, false},
		{Q4_0, 64, true}, {Q8_0, 128, true}, {Q5_1, 64, false}, {BF16, 64, false}}
	for _, c := range cases {
		codec, err := NewCodec(c.f, c.d, CodecOptions{Seed: 2, Rotate: c.rot})
		if err != nil {
			t.Fatal(err)
		}
		d, rb := c.d, codec.RowBytes()
		const maxRows = 100
		vals := make([]float32, maxRows*d)
		for i := range vals {
			vals[i] = float32(r.NormFloat64()) + 0.3*float32(i%d%5)
		}
		if cal, ok := codec.(Calibrator); ok && c.rot {
			cal.Calibrate(vals, maxRows)
		}
		rows := make([]byte, maxRows*rb)
		for j := 0; j < maxRows; j++ {
			codec.Encode(rows[j*rb:(j+1)*rb], vals[j*d:(j+1)*d])
		}
		for _, n := range []int{1, 2, 3, 4, 5} {
			for _, m := range []int{1, 15, 16, 33, maxRows} {
				for _, stride := range []int{d, d + 7, 2 * d} {
					qc := make([]float32, n*d)
					for i := range qc {
						qc[i] = float32(r.NormFloat64())
					}
					qs := make([]float32, (n-1)*stride+d)
					for i := range qs {
						qs[i] = 1e6 // between the queries: read, it would swamp a score
					}
					for h := 0; h < n; h++ {
						copy(qs[h*stride:h*stride+d], qc[h*d:(h+1)*d])
					}
					got, want := make([]float32, m*n), make([]float32, m*n)
					DotManyMultiStride(codec, qs, stride, n, rows[:m*rb], got)
					dotManyMulti(codec, qc, n, rows[:m*rb], want)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v d=%d rot=%v n=%d m=%d stride=%d: score %d = %v, want %v",
								c.f, d, c.rot, n, m, stride, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
