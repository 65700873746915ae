package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
)

// TestAccumulateMultiStrideMatches: RowStore.AccumulateMultiStride adds the sums of the codec's
// own calls on contiguous accumulators (strideReference), bit for bit, into accumulators at a
// stride past AccLen, and writes nothing between them, from starts inside a 64-row tile (where
// the integer kernels split their calls), for runs that end inside the first tile, for a codec
// without multi-query kernels (f32), and for stores made by NewRowStore (which keeps the codec's
// path) and as a literal (which asks at each call). A split that did not align the tiles with
// the store's rows, or an accumulator addressed by AccLen, fails it.
func TestAccumulateMultiStrideMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	const rows, d = 200, 64
	for _, f := range []kvq.Format{kvq.Q4_0, kvq.Q8_0, kvq.F16, kvq.F32} {
		c, err := kvq.NewCodec(f, d, kvq.CodecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		src := randStore(r, rows, d, 1)
		buf := make([]byte, rows*c.RowBytes())
		for j := 0; j < rows; j++ {
			c.Encode(buf[j*c.RowBytes():(j+1)*c.RowBytes()], src.data[j*d:(j+1)*d])
		}
		for si, s := range []*RowStore{NewRowStore(c, buf, rows), {Codec: c, Data: buf, N: rows}} {
			for _, n := range []int{1, 2, 4} {
				for _, lo := range []int{0, 5, 63, 64, 100} {
					for _, m := range []int{rows - lo - 3, 7} {
						t.Run(fmt.Sprintf("%s/store%d/n%d/lo%d/m%d", f, si, n, lo, m), func(t *testing.T) {
							w := make([]float32, m*n)
							for i := range w {
								w[i] = r.Float32()
							}
							stride := 2*d + 3
							want := randStore(r, n, d, 1).data
							got := make([]float32, (n-1)*stride+d+4)
							for i := range got {
								got[i] = -7
							}
							for h := 0; h < n; h++ {
								copy(got[h*stride:h*stride+d], want[h*d:(h+1)*d])
							}
							s.AccumulateMultiStride(got, stride, n, w, lo)
							strideReference(s, want, n, w, lo)
							for i, x := range got {
								h, k := i/stride, i%stride
								switch {
								case h < n && k < d:
									if math.Float32bits(x) != math.Float32bits(want[h*d+k]) {
										t.Fatalf("acc %d[%d] = %v, want %v", h, k, x, want[h*d+k])
									}
								case x != -7:
									t.Fatalf("wrote %v at %d, between the accumulators", x, i)
								}
							}
						})
					}
				}
			}
		}
	}
}

// strideReference is what RowStore.AccumulateMulti adds into n contiguous accumulators, from
// the codec's calls: kvq.MultiQuery's, split where a 64-row tile of the store starts when the
// weights round per tile (kvq.AccumulateStep), else AccumulateMany per accumulator.
func strideReference(s *RowStore, acc []float32, n int, w []float32, lo int) {
	rb, d := s.Codec.RowBytes(), s.Codec.Dim()
	m := len(w) / n
	rows := s.Data[lo*rb : (lo+m)*rb]
	mq, ok := s.Codec.(kvq.MultiQuery)
	if !ok {
		t := make([]float32, m)
		for h := 0; h < n; h++ {
			for j := range t {
				t[j] = w[j*n+h]
			}
			s.Codec.AccumulateMany(acc[h*d:(h+1)*d], t, rows)
		}
		return
	}
	j := 0
	if kvq.AccumulateStep(s.Codec) > 0 {
		j = min(m, (kvq.AccumulateTile-lo%kvq.AccumulateTile)%kvq.AccumulateTile)
	}
	if j > 0 {
		mq.AccumulateManyMulti(acc, n, w[:j*n], rows[:j*rb])
	}
	if j < m {
		mq.AccumulateManyMulti(acc, n, w[j*n:], rows[j*rb:])
	}
}

// TestScoresMultiStrideMatches: RowStore.ScoresMultiStride gives ScoresMulti's scores, bit for
// bit, for queries at a stride past QueryLen (the gaps hold values that would swamp a score),
// with the codecs' multi-query kernels and without them (f32).
func TestScoresMultiStrideMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 2))
	const rows, d = 90, 64
	for _, f := range []kvq.Format{kvq.Q4_0, kvq.Q8_0, kvq.F16, kvq.F32} {
		c, err := kvq.NewCodec(f, d, kvq.CodecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		src := randStore(r, rows, d, 1)
		buf := make([]byte, rows*c.RowBytes())
		for j := 0; j < rows; j++ {
			c.Encode(buf[j*c.RowBytes():(j+1)*c.RowBytes()], src.data[j*d:(j+1)*d])
		}
		s := NewRowStore(c, buf, rows)
		for _, n := range []int{1, 2, 4} {
			stride := 2*d + 3
			qc := randStore(r, n, d, 1).data
			qs := make([]float32, (n-1)*stride+d)
			for i := range qs {
				qs[i] = 1e6
			}
			for h := 0; h < n; h++ {
				copy(qs[h*stride:h*stride+d], qc[h*d:(h+1)*d])
			}
			lo, m := 7, rows-9
			got, want := make([]float32, m*n), make([]float32, m*n)
			s.ScoresMultiStride(qs, stride, n, lo, got)
			s.ScoresMulti(qc, n, lo, want)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d: score %d = %v, want %v", f, n, i, got[i], want[i])
				}
			}
		}
	}
}
