//go:build amd64 && !purego

package kvq

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/kvlab/kvlab/internal/cputime"
)

// q2kGridScore is the score the VNNI kernel gives query q and cell (ok where q2kVNNI(Dim())),
// formed independently: q' = q·scale per channel (float32), each block of q2kGridBlock()
// channels quantized by q2kQuant (this CPU's kernels' rounding) to s·Q, and Σ_b s·Σ_c Q_c·turboInts2[code_c]·turboUnit2 in float64 over exact
// integers. mag is Σ_b |s|·Σ_c |Q_c·turboInts2[code_c]|·turboUnit2, the scale of the kernel's float
// rounding; grid is the bound (1 + 2⁻⁶)/254·Σ_b max_{c∈b}|q'_c|·Σ_{c∈b}|L_c| of the grid's
// departure from q·k̂ (with the rounding of q' itself, 2⁻²⁴ of Σ|q·k̂|, left to the caller's
// 1e-5·Σ|q·k̂|).
func q2kGridScore(h *Q2KHead, q []float32, cell int) (score, mag, grid float64, ok bool) {
	d := h.Dim()
	if !q2kVNNI(d) {
		return 0, 0, 0, false
	}
	gb := int(Q2KGroupBytes(d))
	g, j := cell/GroupCells, cell%GroupCells
	grp := h.Groups()[g*gb : (g+1)*gb]
	code := func(c int) int {
		k := j*d + c
		return int(grp[2*d+k/4] >> (2 * (k % 4)) & 3)
	}
	u := float64(turboUnit2)
	qs := make([]float32, d)
	for c := range qs {
		qs[c] = q[c] * F16ToF32(binary.LittleEndian.Uint16(grp[2*c:]))
	}
	bs := q2kGridBlock()
	Q := make([]int32, bs)
	for b := 0; b < d/bs; b++ {
		s := q2kQuant(qs[bs*b:bs*(b+1)], Q)
		var dot, abs int64
		var m, l1 float64
		for i, v := range Q {
			L := int64(turboInts2[code(bs*b+i)])
			dot += int64(v) * L
			abs += int64(math.Abs(float64(int64(v) * L)))
			m = max(m, math.Abs(float64(qs[bs*b+i])))
			l1 += math.Abs(float64(L)) * u
		}
		score += float64(s) * float64(dot) * u
		mag += math.Abs(float64(s)) * float64(abs) * u
		grid += (1 + 0x1p-6) / 254 * m * l1
	}
	return score, mag, grid, true
}

// TestQ2KScoresRangeMultiFloat runs TestQ2KScoresRangeMulti with the VNNI kernels off, so the
// float kernels stay tested on CPUs that have VNNI.
func TestQ2KScoresRangeMultiFloat(t *testing.T) { withoutVNNI(func() { checkQ2KScoresRangeMulti(t) }) }

// q2kDigits64 is vnniDigits(dig, aux, qs, d, d/32, 1) with the grid per 64 channels, as
// q2kDigitsAVX512 writes it: each 64-channel block quantized by q2kQuantUniFMA, its digits where
// vnniDigits puts them, and aux words 0..3 (s·turboUnit2) and 12..15 (−128·ΣQ over the 64 channels) of
// both its 32-channel blocks the 64-channel block's. The other aux words stay 0.
func q2kDigits64(dig []byte, aux []uint32, qs []float32, d int) {
	clear(aux)
	var Q [64]int32
	for h := 0; h < 4; h++ {
		for b := 0; b < d/64; b++ {
			s := q2kQuantUniFMA(qs[h*d+64*b:h*d+64*b+64], Q[:])
			var sum int32
			for i, v := range Q {
				blk := 2*b + i/32
				dig[blk*vnniBlockBytes/2+h*32+i%32] = byte(int8(v))
				sum += v
			}
			for _, blk := range []int{2 * b, 2*b + 1} {
				aux[blk*vnniAuxWords+h] = math.Float32bits(s * turboUnit2)
				aux[blk*vnniAuxWords+12+h] = uint32(-128 * sum)
			}
		}
	}
}

// TestQ2KDigits checks q2kDigitsAVX512, and its two halves in turn, against q2kDigits64 of the
// scaled queries in the turbo2 kernel's order (t2DigitsOrder), bit for bit
// (the digits and the aux words the kernel reads: the scales and −128·ΣQ), on groups with
// outlier channels, a block of zero scales, a query block of zeros and subnormal products,
// values whose float32 product q'·inv lands on a half (q2kPlantHalves: the digits' one
// rounding), and that a non-finite scaled query reports false.
func TestQ2KDigits(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, d := range []int{64, 128, 192, 256} {
		h := newQ2K(t, d, 1.1)
		h.Append(q2kCells(uint64(d)+9, 40, d, true))
		grp := append([]byte(nil), h.Groups()[:Q2KGroupBytes(d)]...)
		for c := 32; c < 64; c++ { // a block of zero scales
			binary.LittleEndian.PutUint16(grp[2*c:], 0)
		}
		q := gaussianRows(rng, 4, d, 1)
		clear(q[d : d+32])                   // query 1's first block
		for c := 2*d + 64; c < 2*d+96; c++ { // query 2's third block: products far below 2⁻¹²⁶·127
			q[c] = 0x1p-120
		}
		if n := q2kPlantHalves(q, grp, d); n == 0 {
			t.Fatalf("d %d: no query value planted on a float32 half", d)
		}
		qs := make([]float32, 4*d)
		for i := range qs {
			qs[i] = q[i] * F16ToF32(binary.LittleEndian.Uint16(grp[2*(i%d):]))
		}
		nb := d / 32
		want, wantAux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
		q2kDigits64(want, wantAux, qs, d)
		want = t2DigitsOrder(want) // the turbo2 kernel's order (gen_tq4vnni.go)
		var scratch [4 * q2kMultiMaxDim]float32
		dig := unsafe.Slice((*byte)(unsafe.Pointer(&scratch[0])), len(want))
		aux := unsafe.Slice((*uint32)(unsafe.Add(unsafe.Pointer(&scratch[0]), q2kDigBytes)), len(wantAux))
		if !q2kDigitsAVX512(&q[0], d, &grp[0], &dig[0], &aux[0]) {
			t.Fatalf("d %d: false on finite queries", d)
		}
		for i := range want {
			if dig[i] != want[i] {
				t.Fatalf("d %d: digit byte %d = %d, q2kDigits64 %d", d, i, int8(dig[i]), int8(want[i]))
			}
		}
		for b := 0; b < nb; b++ {
			for _, w := range []int{0, 1, 2, 3, 12, 13, 14, 15} {
				if g, x := aux[b*vnniAuxWords+w], wantAux[b*vnniAuxWords+w]; g != x {
					t.Fatalf("d %d: block %d aux word %d = %#x, q2kDigits64 %#x", d, b, w, g, x)
				}
			}
		}
		// the two halves in turn (q2kPrep, then q2kScoresInt's second half) write the same
		var scratch2 [4 * q2kMultiMaxDim]float32
		dig2 := unsafe.Slice((*byte)(unsafe.Pointer(&scratch2[0])), len(want))
		aux2 := unsafe.Slice((*uint32)(unsafe.Add(unsafe.Pointer(&scratch2[0]), q2kDigBytes)), len(wantAux))
		if !q2kDigitsAAVX512(&q[0], d, &grp[0], &dig2[0], &aux2[0]) {
			t.Fatalf("d %d: first half false on finite queries", d)
		}
		q2kDigitsBAVX512(&q[0], d, &grp[0], &dig2[0], &aux2[0])
		for i := range want {
			if dig2[i] != want[i] {
				t.Fatalf("d %d: halves: digit byte %d = %d, q2kDigits64 %d", d, i, int8(dig2[i]), int8(want[i]))
			}
		}
		for b := 0; b < nb; b++ {
			for _, w := range []int{0, 1, 2, 3, 12, 13, 14, 15} {
				if g, x := aux2[b*vnniAuxWords+w], wantAux[b*vnniAuxWords+w]; g != x {
					t.Fatalf("d %d: halves: block %d aux word %d = %#x, q2kDigits64 %#x", d, b, w, g, x)
				}
			}
		}
		// Not finite: a q' overflowing to ±Inf, and a scale ±Inf or NaN, with the query value
		// there 0 (q' NaN) or not, in the first and the last block (the queries finite, as the
		// functions require).
		for _, c := range []int{0, 17, d - 1} {
			for _, bad := range []struct {
				q     float32
				scale uint16
			}{{3e38, 0x7BFF}, {-3e38, 0x7BFF}, {1, 0x7C00}, {0, 0x7C00}, {0, 0xFC00}, {1, 0x7E00}, {0, 0x7E01}} {
				qb, gb := append([]float32(nil), q...), append([]byte(nil), grp...)
				qb[3*d+c] = bad.q
				binary.LittleEndian.PutUint16(gb[2*c:], bad.scale)
				if q2kDigitsAVX512(&qb[0], d, &gb[0], &dig[0], &aux[0]) {
					t.Errorf("d %d channel %d: true with a query value %g times scale %#04x", d, c, bad.q, bad.scale)
				}
				if q2kDigitsAAVX512(&qb[0], d, &gb[0], &dig[0], &aux[0]) {
					t.Errorf("d %d channel %d: first half true with a query value %g times scale %#04x", d, c, bad.q, bad.scale)
				}
			}
		}
		// q2kQueriesFinite: any of the 4·d values NaN or ±Inf makes it false.
		if !q2kQueriesFinite(&q[0], d) {
			t.Errorf("d %d: q2kQueriesFinite false on finite queries", d)
		}
		for _, i := range []int{0, 63, 64, 2*d + 5, 4*d - 1} {
			for _, bad := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
				qb := append([]float32(nil), q...)
				qb[i] = bad
				if q2kQueriesFinite(&qb[0], d) {
					t.Errorf("d %d: q2kQueriesFinite true with value %d %g", d, i, bad)
				}
			}
		}
	}
}

// q2kPlantHalves sets some of query 0's values in its last 64-channel block (which keeps its
// largest |q'|) so that q'·inv rounded to float32 is an integer and a half while the exact
// product is not, where q2kQuantUniFMA's one rounding and a float32 product rounded again
// (vnniQuantUni's) give digits one apart; it returns how many it set.
func q2kPlantHalves(q []float32, grp []byte, d int) int {
	b0 := d - 64
	scale := func(c int) float32 { return F16ToF32(binary.LittleEndian.Uint16(grp[2*c:])) }
	var m float32
	top := -1
	for c := b0; c < d; c++ {
		if a := float32(math.Abs(float64(q[c] * scale(c)))); a > m {
			m, top = a, c
		}
	}
	if !(m/vnniQMax1 >= 0x1p-126) {
		return 0
	}
	inv := vnniQMax1 / m
	n := 0
	for c := b0; c < d && n < 8; c++ {
		s := scale(c)
		if c == top || s == 0 {
			continue
		}
	search:
		for k := 1; k < 120; k += 2 { // k odd: a float32 tie at k + 1/2 rounds up, the exact product down
			x := float32((float64(k) + 0.5) / float64(inv) / float64(s))
			for i := -64; i <= 64; i++ {
				qv := math.Float32frombits(uint32(int32(math.Float32bits(x)) + int32(i)))
				v := qv * s
				if p := v * inv; p == float32(k)+0.5 && float64(v)*float64(inv) < float64(k)+0.5 && float32(math.Abs(float64(v))) < m {
					q[c] = qv
					n++
					break search
				}
			}
		}
	}
	return n
}

// TestQ2KScoresNonFinite checks that ScoresRangeMulti scores a four-query batch whose queries
// are not all finite, and a group whose scales are not, with the float kernels (NaN where they
// give NaN), the other groups as the integer kernel does, for four and three queries.
func TestQ2KScoresNonFinite(t *testing.T) {
	const d, cells = 128, 5 * GroupCells
	h := newQ2K(t, d, 1.1)
	h.Append(q2kCells(91, cells, d, true))
	good := newQ2K(t, d, 1.1)
	good.Append(q2kCells(91, cells, d, true))
	gb := int(q2kGroupBytes(d))
	rng := rand.New(rand.NewPCG(92, 93))
	same := func(a, b float32) bool {
		return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
	}
	for _, n := range []int{4, 3} {
		// A group with a non-finite scale: group 2, channel 9 (NaN) or 70 (+Inf where the
		// queries are 0).
		for _, bad := range []struct {
			c     int
			scale uint16
		}{{9, 0x7E00}, {70, 0x7C00}, {127, 0xFC00}} {
			binary.LittleEndian.PutUint16(h.data[2*gb+2*bad.c:], bad.scale)
			q := gaussianRows(rng, n, d, 1)
			if bad.scale != 0x7E00 {
				for i := 0; i < n; i++ {
					q[i*d+bad.c] = 0
				}
			}
			got, gotGood, float := make([]float32, n*cells), make([]float32, n*cells), make([]float32, n*cells)
			h.ScoresRangeMulti(q, n, 0, got)
			good.ScoresRangeMulti(q, n, 0, gotGood)
			withoutVNNI(func() { h.ScoresRangeMulti(q, n, 0, float) })
			for i := range got {
				want := gotGood[i]
				if i/n/GroupCells == 2 {
					want = float[i]
				}
				if !same(got[i], want) {
					t.Fatalf("n %d scale %#04x at %d: score %d = %g, want %g", n, bad.scale, bad.c, i, got[i], want)
				}
			}
			copy(h.data[2*gb+2*bad.c:2*gb+2*bad.c+2], good.data[2*gb+2*bad.c:])
		}
		// Queries not all finite: every group in float.
		for _, v := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
			q := gaussianRows(rng, n, d, 1)
			q[(n-1)*d+40] = v
			got, float := make([]float32, n*cells), make([]float32, n*cells)
			h.ScoresRangeMulti(q, n, 3, got[:n*(cells-3)])
			withoutVNNI(func() { h.ScoresRangeMulti(q, n, 3, float[:n*(cells-3)]) })
			for i := range got {
				if !same(got[i], float[i]) {
					t.Fatalf("n %d query value %g: score %d = %g, the float kernel's %g", n, v, i, got[i], float[i])
				}
			}
		}
	}
}

// TestQ2KScoresSpeed reports, per cell at head dimension 128 (4096 cells, in cache), the thread
// CPU time of ScoresRangeMulti for four queries through the VNNI kernel and through the float
// kernel it replaces, interleaved in one run (best of 300 each). It runs only when
// KVLAB_SPEED_REPORT is set.
func TestQ2KScoresSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const d, cells = 128, 4096
	h := newQ2K(t, d, 1.1)
	h.Append(q2kCells(3, cells, d, true))
	q := gaussianRows(rand.New(rand.NewPCG(7, 8)), 4, d, 1)
	out := make([]float32, 4*cells)
	vb := hasVNNIBW
	defer func() { hasVNNIBW = vb }()
	best := [2]time.Duration{time.Hour, time.Hour} // float, integer
	for r := 0; r < 300; r++ {
		for i := range best {
			hasVNNIBW = vb && i == 1
			t0 := cputime.Thread()
			h.ScoresRangeMulti(q, 4, 0, out)
			best[i] = min(best[i], cputime.Thread()-t0)
		}
	}
	perCell := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / cells }
	t.Logf("q2k scores per cell of %d values, 4 queries: integer %.2f ns, float %.2f ns (%.2f×; integer kernel: %v)",
		d, perCell(best[1]), perCell(best[0]), float64(best[1])/float64(best[0]), q2kVNNI(d))
}

// TestQ2KScoresVNNIAttention measures what the VNNI kernel's query grid does to attention on
// the q2k tests' outlier data (every 16th channel 5× to 75× the others' RMS): the relative RMS
// difference of softmax(q·k̂/√d)·V between its scores and exact float64 scores of the same
// stored cells, queries scaled so the scaled scores spread with a standard deviation of 2.5
// (a moderately sharp softmax, as the gate's). Measured: 4.0 % of the output's norm with the
// AVX-512 kernel's 64-channel grid (3.4 % with a 32-channel one), where the q2k codes
// themselves move it by 95 % (logged beside it; in quadrature the grid adds under 0.1 % to
// that); it must stay below 5 %. Every 32 channels here hold a 5×–75× channel, whose scale
// sets the block's grid for its other channels: the worst case for a per-block grid.
func TestQ2KScoresVNNIAttention(t *testing.T) {
	const d, cells, nq = 128, 1024, 8
	if !q2kVNNI(d) {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	k := q2kCells(41, cells, d, true)
	h := newQ2K(t, d, 1)
	h.Append(k)
	rng := rand.New(rand.NewPCG(43, 44))
	v := gaussianRows(rng, cells, d, 1)
	q := gaussianRows(rng, nq, d, 1)
	dec := make([]float32, cells*d)
	for j := 0; j < cells; j++ {
		h.Decode(dec[j*d:(j+1)*d], j)
	}
	scale := 1 / math.Sqrt(d)
	// Scale each query so that its exact scaled scores have a standard deviation of 2.5.
	for i := 0; i < nq; i++ {
		qi := q[i*d : (i+1)*d]
		var s1, s2 float64
		for j := 0; j < cells; j++ {
			x := dot64(qi, dec[j*d:(j+1)*d]) * scale
			s1, s2 = s1+x, s2+x*x
		}
		sd := math.Sqrt(s2/cells - (s1/cells)*(s1/cells))
		for c := range qi {
			qi[c] *= float32(2.5 / sd)
		}
	}
	attend := func(score func(i, j int) float64) []float64 {
		out := make([]float64, nq*d)
		for i := 0; i < nq; i++ {
			s := make([]float64, cells)
			m := math.Inf(-1)
			for j := range s {
				s[j] = score(i, j) * scale
				m = max(m, s[j])
			}
			var z float64
			for j := range s {
				s[j] = math.Exp(s[j] - m)
				z += s[j]
			}
			for j := range s {
				for c := 0; c < d; c++ {
					out[i*d+c] += s[j] / z * float64(v[j*d+c])
				}
			}
		}
		return out
	}
	fast := make([]float32, cells*nq)
	h.ScoresRangeMulti(q, nq, 0, fast)
	got := attend(func(i, j int) float64 { return float64(fast[j*nq+i]) })
	ref := attend(func(i, j int) float64 { return dot64(q[i*d:(i+1)*d], dec[j*d:(j+1)*d]) })
	exact := attend(func(i, j int) float64 { return dot64(q[i*d:(i+1)*d], k[j*d:(j+1)*d]) })
	rel := func(a, b []float64) float64 {
		var num, den float64
		for i := range a {
			num += (a[i] - b[i]) * (a[i] - b[i])
			den += b[i] * b[i]
		}
		return math.Sqrt(num / den)
	}
	grid, codes := rel(got, ref), rel(ref, exact)
	t.Logf("attention output: the query grid moves it by %.4f of its norm; the q2k codes by %.4f", grid, codes)
	if grid > 0.05 {
		t.Errorf("the VNNI kernel's query grid moves the attention output by %.4f of its norm, > 0.05", grid)
	}
}

// t2DigitsOrder is t2DigitsPermute in Go, on a copy: each 16-byte run of digits transposed as
// a 4×4 matrix of bytes.
func t2DigitsOrder(dig []byte) []byte {
	out := make([]byte, len(dig))
	for i := range out {
		out[i] = dig[i&^15+4*(i%4)+i%16/4]
	}
	return out
}

// hasAVX512VNNIVBMI reports the AVX-512 VNNI, BW and VBMI that the tests calling the AVX-512
// turbo2 and q2k kernels directly need. q2kVNNI and t2VNNI are no such guard: they are true on
// AVX2 CPUs too (the AVX2 integer kernels), where those kernels would fault.
func hasAVX512VNNIVBMI() bool { return hasVNNIBW && hasVBMI }

// TestT2DigitsPermute checks t2DigitsPermute against t2DigitsOrder.
func TestT2DigitsPermute(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	dig := make([]byte, 5*64+1)
	for i := range dig {
		dig[i] = byte(7*i + 3)
	}
	want, last := t2DigitsOrder(dig[:5*64]), dig[5*64]
	t2DigitsPermute(&dig[0], 5)
	for i := range want {
		if dig[i] != want[i] {
			t.Fatalf("byte %d = %d, want %d", i, dig[i], want[i])
		}
	}
	if dig[5*64] != last {
		t.Fatal("wrote past n·64 bytes")
	}
}

// TestT3DigitsPermute checks t3DigitsPermute against the order it documents: byte 8c + j of
// the result from byte 8c + 2(j%4) + j/4 (each 8-byte run as its bytes 0, 2, 4, 6, 1, 3, 5, 7).
func TestT3DigitsPermute(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	dig := make([]byte, 5*64+1)
	for i := range dig {
		dig[i] = byte(7*i + 3)
	}
	want := make([]byte, 5*64)
	for c := 0; c < len(want)/8; c++ {
		for j, src := range []int{0, 2, 4, 6, 1, 3, 5, 7} {
			want[8*c+j] = dig[8*c+src]
		}
	}
	last := dig[5*64]
	t3DigitsPermute(&dig[0], 5)
	for i := range want {
		if dig[i] != want[i] {
			t.Fatalf("byte %d = %d, want %d", i, dig[i], want[i])
		}
	}
	if dig[5*64] != last {
		t.Fatal("wrote past n·64 bytes")
	}
}

// vnniScoresKern is the signature of the VNNI scores kernels of tq4, the turbo tiers and q2k
// (multiScores*VNNI), which the tests compare with each other.
type vnniScoresKern = func(dig *byte, aux *uint32, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32, stage *uint32)

// TestScoresPairLoadMatches checks the turbo2 and q2k VNNI scores kernels for rows at most 48
// bytes apart (multiScoresT2PVNNI, multiScoresQ2KPVNNI: a row and the next in one masked load)
// and turbo3's for rows at most 52 bytes apart (multiScoresT3PVNNI) against the general ones
// bit for bit, on random code bytes and scales, rows at their own size apart and with gaps up
// to the largest distance, the last row ending the buffer.
func TestScoresPairLoadMatches(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	rng := rand.New(rand.NewPCG(75, 76))
	type kern = vnniScoresKern
	for _, tc := range []struct {
		name        string
		bits        int // code bits a value
		scale       int // bytes of row scale after the codes
		maxRB       int // the largest distance between rows the pair kernel takes
		chunks      int // the kernels' nb: 32-value groups a chunk (turbo3's 1, turbo2's 2)
		unit        float32
		general, pr kern
	}{{"turbo2", 2, 2, 48, 2, turboUnit2, multiScoresT2VNNI, multiScoresT2PVNNI},
		{"q2k", 2, 0, 48, 2, turboUnit2, multiScoresQ2KVNNI, multiScoresQ2KPVNNI},
		{"turbo3", 3, 2, 52, 1, turboUnit3, multiScoresT3VNNI, multiScoresT3PVNNI}} {
		for _, d := range []int{32, 64, 96, 128} {
			cb := d * tc.bits / 8 // code bytes a row
			if d%(32*tc.chunks) != 0 || cb+tc.scale > tc.maxRB {
				continue
			}
			for _, gap := range []int{0, 1, 3, tc.maxRB - (cb + tc.scale)} {
				rb, nb, m := cb+tc.scale+gap, d/32, 48
				if rb > tc.maxRB {
					continue
				}
				rows := make([]byte, m*rb-gap)
				for i := range rows {
					rows[i] = byte(rng.Uint32())
				}
				if tc.scale > 0 {
					for j := 0; j < m; j++ {
						s := F32ToF16(float32(rng.NormFloat64()))
						rows[j*rb+cb], rows[j*rb+cb+1] = byte(s), byte(s>>8)
					}
				}
				q := gaussianRows(rng, 4, d, 1)
				dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
				vnniDigits(dig, aux, q, d, nb, 1)
				off := [5]float32{0.5, -1, 2, 0, tc.unit}
				var stage [16]uint32
				want, got := make([]float32, 4*m), make([]float32, 4*m)
				tc.general(&dig[0], &aux[0], nb/tc.chunks, &rows[0], rb, m, &want[0], 16, &off[0], &stage[0])
				tc.pr(&dig[0], &aux[0], nb/tc.chunks, &rows[0], rb, m, &got[0], 16, &off[0], &stage[0])
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s d %d rb %d: row %d query %d: %g, general kernel %g", tc.name, d, rb, i/4, i%4, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestScoresVBMINibblesMatch checks the tq4 and turbo4 VNNI scores kernels for CPUs with VBMI
// (multiScoresTQ4BVNNI, multiScoresT4BVNNI: the nibbles looked up by VPERMB) against the general
// ones bit for bit, on random code bytes and finite row scales, rows at their own size apart and
// with a gap, the last row ending the buffer.
func TestScoresVBMINibblesMatch(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	rng := rand.New(rand.NewPCG(79, 80))
	type kern = vnniScoresKern
	for _, tc := range []struct {
		name        string
		f32         bool // tq4's f32 row scale, else turbo4's f16
		general, vb kern
	}{{"tq4", true, multiScoresTQ4VNNI, multiScoresTQ4BVNNI}, {"turbo4", false, multiScoresT4VNNI, multiScoresT4BVNNI}} {
		for _, d := range []int{32, 64, 96, 128, 256} {
			for _, gap := range []int{0, 5} {
				sb := 2
				if tc.f32 {
					sb = 4
				}
				rb, nb, m := d/2+sb+gap, d/32, 48
				rows := make([]byte, m*rb-gap)
				for i := range rows {
					rows[i] = byte(rng.Uint32())
				}
				for j := 0; j < m; j++ {
					x := float32(rng.NormFloat64())
					if tc.f32 {
						binary.LittleEndian.PutUint32(rows[j*rb+d/2:], math.Float32bits(x))
					} else {
						binary.LittleEndian.PutUint16(rows[j*rb+d/2:], F32ToF16(x))
					}
				}
				q := gaussianRows(rng, 4, d, 1)
				dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
				vnniDigits(dig, aux, q, d, nb, 1)
				off := [5]float32{0.5, -1, 2, 0, tq4Unit}
				var stage [16]uint32
				want, got := make([]float32, 4*m), make([]float32, 4*m)
				tc.general(&dig[0], &aux[0], nb, &rows[0], rb, m, &want[0], 16, &off[0], &stage[0])
				tc.vb(&dig[0], &aux[0], nb, &rows[0], rb, m, &got[0], 16, &off[0], &stage[0])
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s d %d rb %d: row %d query %d: %g, general kernel %g", tc.name, d, rb, i/4, i%4, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestT3PairSpeed reports, per row of benchDim values and four queries, the thread CPU time of
// turbo3's VNNI scores kernel for rows at most 52 bytes apart (multiScoresT3PVNNI) and of the
// general one (multiScoresT3VNNI), alternated in one run: 4096-row calls in cache and over a
// 64 MiB buffer (streamed), the best and the median of nine rounds each. It runs only when
// KVLAB_SPEED_REPORT is set.
func TestT3PairSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := mustCodec(t, Turbo3, benchDim)
	tile, _ := benchRowsOf(c)
	rb := c.RowBytes()
	big := make([]byte, (64<<20)/len(tile)*len(tile))
	for o := 0; o < len(big); o += len(tile) {
		copy(big[o:], tile)
	}
	d, nb := benchDim, benchDim/32
	q := gaussianRows(rand.New(rand.NewPCG(7, 8)), 4, d, 1)
	dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
	vnniDigits(dig, aux, q, d, nb, 1)
	off := [5]float32{0.5, -1, 2, 0, turboUnit3}
	var stage [16]uint32
	out := make([]float32, 4*benchRows)
	type kern = vnniScoresKern
	chunks := len(big) / len(tile)
	var ns [2][2][]float64 // kernel (general, pair), in cache / streamed
	for r := 0; r < 9; r++ {
		for i, k := range []kern{multiScoresT3VNNI, multiScoresT3PVNNI} {
			var dc, ds time.Duration
			for j := 0; j < chunks; j++ {
				t0 := cputime.Thread()
				k(&dig[0], &aux[0], nb, &tile[0], rb, benchRows, &out[0], 16, &off[0], &stage[0])
				t1 := cputime.Thread()
				k(&dig[0], &aux[0], nb, &big[j*len(tile)], rb, benchRows, &out[0], 16, &off[0], &stage[0])
				t2 := cputime.Thread()
				dc, ds = dc+t1-t0, ds+t2-t1
			}
			rows := float64(chunks * benchRows)
			ns[i][0] = append(ns[i][0], float64(dc.Nanoseconds())/rows)
			ns[i][1] = append(ns[i][1], float64(ds.Nanoseconds())/rows)
		}
	}
	st := func(x []float64) string {
		slices.Sort(x)
		return fmt.Sprintf("%.2f/%.2f", x[0], x[len(x)/2])
	}
	t.Logf("turbo3 scores per row of %d values, 4 queries, best/median ns: in cache general %s, pair %s; streamed general %s, pair %s",
		d, st(ns[0][0]), st(ns[1][0]), st(ns[0][1]), st(ns[1][1]))
}

// TestQ2KScoresPipelined checks that ScoresRangeMulti over many groups, which prepares each
// next group's queries ahead (q2kPrep) in a second buffer, scores every cell bit for bit as calls
// of one group each do, on a range starting and ending inside groups, for four queries and
// three, with a group whose q·scale overflows (the float kernels' group, between VNNI ones).
func TestQ2KScoresPipelined(t *testing.T) {
	const d, cells = 128, 6 * GroupCells
	h := newQ2K(t, d, 1.1)
	h.Append(q2kCells(77, cells, d, true))
	gb := int(q2kGroupBytes(d))
	binary.LittleEndian.PutUint16(h.data[3*gb+2*5:], 0x7BFF) // group 3, channel 5: the largest f16
	rng := rand.New(rand.NewPCG(78, 79))
	for _, n := range []int{4, 3} {
		q := gaussianRows(rng, n, d, 1)
		for i := 0; i < n; i++ {
			q[i*d+5] = 1e36 // times 65504: +Inf in group 3 only (its other scales are small)
		}
		first, m := 7, cells-7-9
		got := make([]float32, n*m)
		h.ScoresRangeMulti(q, n, first, got)
		for cell := first; cell < first+m; {
			k := min(GroupCells-cell%GroupCells, first+m-cell)
			want := make([]float32, n*k)
			h.ScoresRangeMulti(q, n, cell, want)
			for i, w := range want {
				if g := got[(cell-first)*n+i]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("n %d cell %d query %d: %g over the range, %g over its group alone", n, cell+i/n, i%n, g, w)
				}
			}
			cell += k
		}
	}
}

// TestQ2KScoresGroups checks ScoresRangeMulti, which scores runs of whole groups in batches
// (q2kScoresGroups), against q2kScores group by group (each group's preparation and cells in
// separate calls), bit for bit: head dimensions 64 to 256 (batches of 18 to 4 groups), ranges
// that start and end inside groups and span several batches, query counts 4, 3 and 8 with a
// group in the middle of a batch whose q' overflows (scored in float, the batch resumed after
// it), and four queries without it (whose scores every digit moves), with sentinels past the
// range's scores; with the kernels that prefetch into L2 too
// (q2kFar: multiScoresQ2KGZ4VNNI, multiScoresQ2KGPZ4VNNI; with q2kSparse too, Intel's
// multiScoresQ2KGXVNNI, multiScoresQ2KGPXVNNI) and without, on any CPU. Under
// KVLAB_NO_AVX512 it checks the AVX2 loop (q2kScoresGroupsAVX2) so.
func TestQ2KScoresGroups(t *testing.T) {
	defer func(z, x bool) { q2kFar, q2kSparse = z, x }(q2kFar, q2kSparse)
	for _, k := range [][2]bool{{false, false}, {true, false}, {true, true}} {
		q2kFar, q2kSparse = k[0], k[1]
		t.Run(fmt.Sprint("q2kFar=", k[0], ",q2kSparse=", k[1]), testQ2KScoresGroups)
	}
}

func testQ2KScoresGroups(t *testing.T) {
	for _, d := range []int{64, 128, 192, 256} {
		const groups = 23
		cells := groups*GroupCells + 7
		h := newQ2K(t, d, 1.1)
		h.Append(q2kCells(uint64(d)+40, cells, d, true))
		gb := int(q2kGroupBytes(d))
		binary.LittleEndian.PutUint16(h.data[6*gb+2*5:], 0x7BFF) // group 6, channel 5: the largest f16
		rng := rand.New(rand.NewPCG(uint64(d), 41))
		for _, n := range []int{4, 3, 8, -4} {
			// n −4: four queries without the overflow, whose scores every digit moves (1e36
			// swamps all but the first block's channel 5).
			big := n > 0
			n = max(n, -n)
			q := gaussianRows(rng, n, d, 1)
			for i := 0; big && i < n; i++ {
				q[i*d+5] = 1e36 // times 65504: +Inf in group 6 only
			}
			for _, r := range [][2]int{{0, cells}, {7, cells - 7 - 3}, {3 * GroupCells, 12 * GroupCells}, {GroupCells, 1}} {
				got := make([]float32, r[1]*n+4)
				for i := range got {
					got[i] = -7
				}
				h.ScoresRangeMulti(q, n, r[0], got[:r[1]*n])
				for i := r[1] * n; i < len(got); i++ {
					if got[i] != -7 {
						t.Fatalf("d %d n %d range %v: sentinel %d overwritten", d, n, r, i)
					}
				}
				for i := 0; i < n; i += 4 {
					qq := make([]float32, 4*d)
					copy(qq, q[i*d:min(i+4, n)*d])
					fin := q2kQueriesFinite(&qq[0], d)
					var scratch [4 * q2kMultiMaxDim]float32
					var want [4 * GroupCells]float32
					for cell := r[0]; cell < r[0]+r[1]; {
						g, j0 := cell/GroupCells, cell%GroupCells
						k := min(GroupCells-j0, r[0]+r[1]-cell)
						q2kScores(&qq[0], d, &h.data[g*gb], j0, k, &scratch[0], &want[0], 16, false, fin)
						for j := 0; j < k; j++ {
							for x := 0; x < min(4, n-i); x++ {
								w, g := want[4*j+x], got[(cell-r[0]+j)*n+i+x]
								if math.Float32bits(w) != math.Float32bits(g) {
									t.Fatalf("d %d n %d range %v cell %d query %d: %g, group by group %g", d, n, r, cell+j, i+x, g, w)
								}
							}
						}
						cell += k
					}
				}
			}
		}
	}
}
