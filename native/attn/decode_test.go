package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/native/kvq"
)

// plain is an exact float32 store implementing Keys, Values and Rows, so the combine logic is
// tested independently of any codec.
type plain struct {
	data []float32
	d    int
}

func (p plain) Len() int                           { return len(p.data) / p.d }
func (p plain) QueryLen() int                      { return p.d }
func (p plain) AccLen() int                        { return p.d }
func (p plain) Prepare(dst, q []float32) []float32 { copy(dst, q); return dst[:p.d] }
func (p plain) Row(dst []float32, i int)           { copy(dst, p.data[i*p.d:(i+1)*p.d]) }
func (p plain) Finish(dst, acc []float32)          { copy(dst, acc) }
func (p plain) Scores(q []float32, lo int, out []float32) {
	for j := range out {
		var s float32
		for i, x := range q {
			s += x * p.data[(lo+j)*p.d+i]
		}
		out[j] = s
	}
}
func (p plain) Accumulate(acc []float32, w []float32, lo int) {
	for j, wj := range w {
		for i := range acc {
			acc[i] += wj * p.data[(lo+j)*p.d+i]
		}
	}
}

func randStore(r *rand.Rand, n, d int, scale float64) plain {
	p := plain{data: make([]float32, n*d), d: d}
	for i := range p.data {
		p.data[i] = float32(scale * r.NormFloat64())
	}
	return p
}

func relRMS(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		e := float64(a[i] - b[i])
		num += e * e
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / den)
}

func TestDecodeMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		heads, kv, dk, dv, n  int
		lo, hi, chunk, thread int
	}{
		{"mha one chunk", 4, 4, 8, 8, 100, 0, 100, 0, 1},
		{"gqa many chunks", 8, 2, 16, 16, 1000, 0, 1000, 64, 1},
		{"gqa threads", 8, 2, 64, 64, 3000, 0, 3000, 256, 4},
		{"window range", 4, 1, 32, 32, 500, 200, 450, 37, 3},
		{"k and v dims differ", 4, 2, 24, 40, 300, 0, 300, 50, 2},
		{"single cell", 2, 1, 8, 8, 1, 0, 1, 0, 1},
		// defaultChunk takes 16384-cell chunks here, the last one 100 cells.
		{"long context default chunk", 64, 32, 8, 8, 32868, 0, 32868, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var ks, vs []plain
			for g := 0; g < tc.kv; g++ {
				ks = append(ks, randStore(r, tc.n, tc.dk, 1))
				vs = append(vs, randStore(r, tc.n, tc.dv, 1))
			}
			q := randStore(r, tc.heads, tc.dk, 1).data
			s := Shape{Heads: tc.heads, KVHeads: tc.kv, HeadDimK: tc.dk, HeadDimV: tc.dv,
				Scale: float32(1 / math.Sqrt(float64(tc.dk))), ChunkSize: tc.chunk, Threads: tc.thread}
			ref := make([]float32, tc.heads*tc.dv)
			fast := make([]float32, tc.heads*tc.dv)
			var kr, vr []Rows
			var kk []Keys
			var vv []Values
			for g := range ks {
				kr, vr, kk, vv = append(kr, ks[g]), append(vr, vs[g]), append(kk, ks[g]), append(vv, vs[g])
			}
			if err := DecodeReference(ref, q, s, kr, vr, tc.lo, tc.hi); err != nil {
				t.Fatal(err)
			}
			if err := Decode(fast, q, s, kk, vv, tc.lo, tc.hi); err != nil {
				t.Fatal(err)
			}
			if e := relRMS(fast, ref); e > 1e-5 {
				t.Errorf("fast path differs from the reference by %.2e (bound 1e-5)", e)
			}
		})
	}
}

// TestDefaultChunk checks defaultChunk's doubling: up to 4 × DefaultChunk while 64 work items
// remain, and whole tiles of the values kernels.
func TestDefaultChunk(t *testing.T) {
	for _, tc := range []struct{ n, kv, want int }{
		{0, 8, 4096}, {100, 8, 4096}, {32768, 8, 4096}, {65536, 8, 8192}, {65537, 8, 8192},
		{131072, 8, 16384}, {1 << 20, 8, 16384}, {1 << 20, 1, 16384}, {262144, 1, 4096}, {524288, 1, 8192},
		{32868, 32, 16384}, {131072, 4, 8192},
	} {
		c := defaultChunk(tc.n, tc.kv)
		if c != tc.want || c%kvq.AccumulateTile != 0 {
			t.Errorf("defaultChunk(%d, %d) = %d, want %d", tc.n, tc.kv, c, tc.want)
		}
	}
}

func TestDecodeGroupsQueryHeads(t *testing.T) {
	// Two KV heads whose values are constant 1 and 2: every query head in group g must read
	// exactly g+1, whatever the scores.
	r := rand.New(rand.NewPCG(3, 4))
	d, n := 8, 50
	ks := []Keys{randStore(r, n, d, 1), randStore(r, n, d, 1)}
	v0, v1 := plain{make([]float32, n*d), d}, plain{make([]float32, n*d), d}
	for i := range v0.data {
		v0.data[i], v1.data[i] = 1, 2
	}
	q := randStore(r, 4, d, 1).data
	out := make([]float32, 4*d)
	s := Shape{Heads: 4, KVHeads: 2, HeadDimK: d, HeadDimV: d, Scale: 1}
	if err := Decode(out, q, s, ks, []Values{v0, v1}, 0, n); err != nil {
		t.Fatal(err)
	}
	for h := 0; h < 4; h++ {
		want := float32(h/2 + 1)
		for _, x := range out[h*d : (h+1)*d] {
			if math.Abs(float64(x-want)) > 1e-6 {
				t.Fatalf("head %d read %g, want %g", h, x, want)
			}
		}
	}
}

func TestDecodeRejectsBadShapes(t *testing.T) {
	k := plain{make([]float32, 8), 8}
	for _, tc := range []struct {
		name string
		s    Shape
		q    int
		out  int
	}{
		{"heads not a multiple", Shape{Heads: 3, KVHeads: 2, HeadDimK: 8, HeadDimV: 8}, 24, 24},
		{"query length", Shape{Heads: 1, KVHeads: 1, HeadDimK: 8, HeadDimV: 8}, 7, 8},
		{"output length", Shape{Heads: 1, KVHeads: 1, HeadDimK: 8, HeadDimV: 8}, 8, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode(make([]float32, tc.out), make([]float32, tc.q), tc.s, []Keys{k}, []Values{k}, 0, 1)
			if err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestDecodeEmptyRange(t *testing.T) {
	k := plain{make([]float32, 8), 8}
	out := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	if err := Decode(out, make([]float32, 8), Shape{Heads: 1, KVHeads: 1, HeadDimK: 8, HeadDimV: 8, Scale: 1}, []Keys{k}, []Values{k}, 0, 0); err != nil {
		t.Fatal(err)
	}
	for _, x := range out {
		if x != 0 {
			t.Fatal("empty range must give zeros")
		}
	}
}

func TestPrefillIsCausal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	heads, kv, d, n := 4, 2, 16, 40
	var kk []Keys
	var vv []Values
	var kr, vr []Rows
	for g := 0; g < kv; g++ {
		k, v := randStore(r, n, d, 1), randStore(r, n, d, 1)
		kk, vv, kr, vr = append(kk, k), append(vv, v), append(kr, k), append(vr, v)
	}
	q := randStore(r, n, heads*d, 1).data
	s := Shape{Heads: heads, KVHeads: kv, HeadDimK: d, HeadDimV: d, Scale: 0.25, Threads: 3}
	for _, window := range []int{0, 7} {
		out := make([]float32, n*heads*d)
		if err := Prefill(out, q, n, 0, window, s, kk, vv); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			lo := 0
			if window > 0 {
				lo = max(0, i+1-window)
			}
			ref := make([]float32, heads*d)
			if err := DecodeReference(ref, q[i*heads*d:(i+1)*heads*d], s, kr, vr, lo, i+1); err != nil {
				t.Fatal(err)
			}
			if e := relRMS(out[i*heads*d:(i+1)*heads*d], ref); e > 1e-5 {
				t.Fatalf("window %d position %d: differs from the reference by %.2e", window, i, e)
			}
		}
	}
}

// TestDecodeMultiQueryMatchesReference runs Decode over codec-backed stores, which take the
// codecs' MultiQuery kernels, against DecodeReference over the same stored rows, for several
// query groupings and head dimensions: within 1e-5 (float32 rounding), widened where the
// kernels round the query (kvq.ScoresGrid) or the weights (kvq.AccumulateStep). Through
// attn.Reference, which never takes the kernels, too.
func TestDecodeMultiQueryMatchesReference(t *testing.T) {
	for _, f := range []kvq.Format{kvq.F16, kvq.Q8_0, kvq.Q4_0, kvq.Q4_1} {
		for _, d := range []int{40, 64, 128, 256} {
			for _, group := range []int{1, 3, 4, 8} {
				t.Run(fmt.Sprintf("%s/d%d/group%d", f, d, group), func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(d), uint64(group)))
					const kv, n = 2, 300
					var kr, vr []Rows
					var kk, kref []Keys
					var vv, vref []Values
					for g := 0; g < kv; g++ {
						for side := 0; side < 2; side++ {
							c, err := kvq.NewCodec(f, d, kvq.CodecOptions{})
							if err != nil {
								t.Fatal(err)
							}
							src := randStore(r, n, d, 1)
							buf := make([]byte, n*c.RowBytes())
							for j := 0; j < n; j++ {
								c.Encode(buf[j*c.RowBytes():(j+1)*c.RowBytes()], src.data[j*d:(j+1)*d])
							}
							s := NewRowStore(c, buf, n)
							if side == 0 {
								kr, kk, kref = append(kr, s), append(kk, s), append(kref, Reference{s})
							} else {
								vr, vv, vref = append(vr, s), append(vv, s), append(vref, Reference{s})
							}
						}
					}
					heads := kv * group
					q := randStore(r, heads, d, 1).data
					s := Shape{Heads: heads, KVHeads: kv, HeadDimK: d, HeadDimV: d,
						Scale: float32(1 / math.Sqrt(float64(d))), ChunkSize: 128, Threads: 2}
					ref := make([]float32, heads*d)
					if err := DecodeReference(ref, q, s, kr, vr, 0, n); err != nil {
						t.Fatal(err)
					}
					const bound = 1e-5
					fast := make([]float32, heads*d)
					if err := Decode(fast, q, s, kk, vv, 0, n); err != nil {
						t.Fatal(err)
					}
					// Where the codec's multi-query scores round the prepared query to an
					// integer grid (kvq.ScoresGrid), the fast path is checked against the
					// single-row path scoring the same rounded query; kvq's tests check the
					// rounding against its stated bound.
					against, what := ref, "the reference"
					if u := kvq.ScoresGrid(kr[0].(*RowStore).Codec, make([]float32, d), q[:d], 1); u > 0 {
						kg := make([]Keys, kv)
						for g := range kg {
							kg[g] = gridKeys{kref[g].(Reference)}
						}
						against, what = make([]float32, heads*d), "the single-row path on the rounded query"
						if err := Decode(against, q, s, kg, vref, 0, n); err != nil {
							t.Fatal(err)
						}
					}
					// Where the values accumulate with rounded weights (kvq.AccumulateStep u:
					// each weight within u of its tile's largest, checked against the stated
					// bound in kvq), the tolerance widens by 8u.
					tol := bound + 8*kvq.AccumulateStep(vr[0].(*RowStore).Codec)
					if e := relRMS(fast, against); e > tol {
						t.Errorf("fast path differs from %s by %.2e (bound %g)", what, e, tol)
					}
					if err := Decode(fast, q, s, kref, vref, 0, n); err != nil {
						t.Fatal(err)
					}
					if e := relRMS(fast, ref); e > 1e-5 {
						t.Errorf("single-row path differs from the reference by %.2e (bound 1e-5)", e)
					}
				})
			}
		}
	}
}

// gridKeys is a Reference whose prepared queries are rounded as the codec's multi-query scores
// round them (kvq.ScoresGrid).
type gridKeys struct{ Reference }

func (g gridKeys) Prepare(dst, q []float32) []float32 {
	pq := g.Reference.Prepare(dst, q)
	kvq.ScoresGrid(g.Codec, pq, pq, 1)
	return pq
}
