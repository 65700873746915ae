package kvq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ2KRot checks the rotated q2k pool's algebra on rows with an outlier channel and channel
// offsets: the calibration finds both, ToValue inverts Rows, a prepared query's dot with a stored
// row plus AddOffsets is the query's dot with the row, and a Q2KHead fed the rotated rows scores
// (plus the offsets) as q · the value-domain decode.
func TestQ2KRot(t *testing.T) {
	const d, n, outlier = 64, 96, 5
	r := rand.New(rand.NewPCG(3, 4))
	x := gaussianRows(r, n, d, 1)
	for i := 0; i < n; i++ {
		x[i*d+outlier] *= 32
		x[i*d+9] += 3 // a stable offset
	}
	rot := NewQ2KRot(d, 1, 2, 1)
	rot.Calibrate(x, n)
	if rot.lam == nil || rot.lam[outlier] < 16 || rot.lam[outlier] != float32(math.Ldexp(1, int(math.Log2(float64(rot.lam[outlier]))))) {
		t.Fatalf("λ of the outlier channel = %v, want a power of two ≥ 16", rot.lam)
	}
	if rot.mu == nil || math.Abs(float64(rot.mu[9])-3) > 0.5 || rot.muR == nil {
		t.Fatalf("μ[9] = %v, want ~3 (muR %v)", rot.mu, rot.muR)
	}
	y := make([]float32, n*d)
	rot.Rows(y, x, n)
	back := make([]float32, d)
	for i := 0; i < n; i++ {
		copy(back, y[i*d:(i+1)*d])
		rot.ToValue(back)
		for c := range back {
			if e := math.Abs(float64(back[c] - x[i*d+c])); e > 1e-4*(1+math.Abs(float64(x[i*d+c]))) {
				t.Fatalf("row %d channel %d: ToValue(Rows(x)) = %v, x = %v", i, c, back[c], x[i*d+c])
			}
		}
	}
	q := gaussianRows(r, 2, d, 1)
	pq := make([]float32, 2*d)
	rot.PrepareQuery(pq[:d], q[:d])
	rot.PrepareQuery(pq[d:], q[d:])
	out := make([]float32, 2*n)
	for i := 0; i < n; i++ {
		for h := 0; h < 2; h++ {
			out[i*2+h] = float32(dot64(pq[h*d:(h+1)*d], y[i*d:(i+1)*d]))
		}
	}
	rot.AddOffsets(pq, 2, out)
	for i := 0; i < n; i++ {
		for h := 0; h < 2; h++ {
			want := dot64(q[h*d:(h+1)*d], x[i*d:(i+1)*d])
			if e := math.Abs(float64(out[i*2+h]) - want); e > 1e-3*(1+math.Abs(want)) {
				t.Fatalf("cell %d query %d: q'·y + q·μ = %v, q·x = %v", i, h, out[i*2+h], want)
			}
		}
	}

	// Through the pool: its scores plus the offsets are q · the decoded cell.
	head, err := NewQ2KHead(d, 1)
	if err != nil {
		t.Fatal(err)
	}
	head.Append(y)
	dec := make([]float32, d)
	for h := 0; h < 2; h++ {
		got := make([]float32, n)
		head.ScoresRange(pq[h*d:(h+1)*d], 0, got)
		rot.AddOffsets(pq[h*d:(h+1)*d], 1, got)
		for i := 0; i < n; i++ {
			head.Decode(dec, i)
			rot.ToValue(dec)
			want := dot64(q[h*d:(h+1)*d], dec)
			if e := math.Abs(float64(got[i]) - want); e > 1e-3*(1+math.Abs(want)) {
				t.Fatalf("cell %d query %d: pool score %v, q · decoded cell %v", i, h, got[i], want)
			}
		}
	}
}

// TestQ2KRotAddOffsets checks AddOffsets's vector adds against a loop over every score, bit for
// bit, for query counts that do and do not divide its 256-value pattern, and out lengths around
// it.
func TestQ2KRotAddOffsets(t *testing.T) {
	const d = 32
	r := rand.New(rand.NewPCG(7, 8))
	x := gaussianRows(r, 40, d, 1)
	for i := 0; i < 40; i++ {
		x[i*d+3] += 2
	}
	rot := NewQ2KRot(d, 1, 0, 0)
	rot.Calibrate(x, 40)
	if rot.muR == nil {
		t.Fatal("no offsets to add")
	}
	for _, n := range []int{1, 2, 3, 4, 5, 8, 64, 65} {
		q := gaussianRows(r, n, d, 1)
		for _, cells := range []int{0, 1, 63, 64, 65, 200, 1000} {
			out := gaussianRows(r, cells, n, 1)
			want := append([]float32(nil), out...)
			for c := 0; c < cells; c++ {
				for h := 0; h < n; h++ {
					want[c*n+h] += lmDot(q[h*d:(h+1)*d], rot.muR)
				}
			}
			if n > 1 {
				out = append(out, 7) // a partial row past the whole ones: left alone
				want = append(want, 7)
			}
			rot.AddOffsets(q, n, out)
			for i := range out {
				if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d, %d cells: score %d = %v, want %v", n, cells, i, out[i], want[i])
				}
			}
		}
	}
}
