package kvq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
)

// TestQ2KCodebook: q2k's levels are the 4-level Lloyd–Max levels of N(0,1) rounded to whole
// multiples of the best unit (turbo2's, checkIntCodebook), its outer threshold their midpoint,
// and each level within half a unit (0.0084) of the Lloyd–Max level the seed's q2k names.
func TestQ2KCodebook(t *testing.T) {
	levels, thresholds, mse := lloydMaxGaussian(4)
	if math.Abs(mse-0.11748) > 1e-5 {
		t.Errorf("4-level Lloyd–Max MSE = %.6f, the documented value is 0.11748", mse)
	}
	checkIntCodebook(t, levels, turboInts2[:], turboUnit2, q2kLevels[:], 0.1174819)
	if want := (q2kLevels[1] + q2kLevels[2]) / 2; want != 0 {
		t.Errorf("inner threshold %g, want 0", want)
	}
	if mid := (q2kLevels[2] + q2kLevels[3]) / 2; float32(q2kThreshold) != mid || -mid != (q2kLevels[0]+q2kLevels[1])/2 {
		t.Errorf("outer threshold %.9g, the levels' midpoints are %.9g and %.9g", float32(q2kThreshold), mid, (q2kLevels[0]+q2kLevels[1])/2)
	}
	if math.Abs(thresholds[2]-float64(q2kThreshold)) > 0.5*float64(turboUnit2) {
		t.Errorf("outer threshold %g, Lloyd–Max's %g", q2kThreshold, thresholds[2])
	}
	// The seed's 4-digit values.
	for i, want := range []float64{-1.5104, -0.4528, 0.4528, 1.5104} {
		if math.Abs(float64(q2kLevels[i])-want) > float64(turboUnit2)/2 {
			t.Errorf("q2kLevels[%d] = %g, seed 003 says %g", i, q2kLevels[i], want)
		}
	}
}

func newQ2K(t testing.TB, d int, gain float32) *Q2KHead {
	t.Helper()
	h, err := NewQ2KHead(d, gain)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// q2kCells returns n cells of d Gaussian values, flat; with outliers, every 16th channel's RMS
// is 5, 10, 20, 40 or 75 times the others' (seed 003: max/median 5.8× to 74.9× on real layers).
func q2kCells(seed uint64, n, d int, outliers bool) []float32 {
	r := &seedRand{seed}
	k := make([]float32, n*d)
	for i := range k {
		k[i] = float32(r.norm())
		if c := i % d; outliers && c%16 == 5 {
			k[i] *= []float32{5, 10, 20, 40, 75}[(c/16)%5]
		}
	}
	return k
}

// appendChunks appends k to a new head chunk cells at a time.
func appendChunks(t testing.TB, d int, gain float32, k []float32, chunk int) *Q2KHead {
	h := newQ2K(t, d, gain)
	for len(k) > 0 {
		n := min(chunk*d, len(k))
		h.Append(k[:n])
		k = k[n:]
	}
	return h
}

func TestQ2KChunkInvariance(t *testing.T) {
	for _, d := range []int{64, 10} { // 10: cells do not start on byte boundaries
		for _, cells := range []int{1, 31, 32, 33, 100, 165} {
			t.Run(fmt.Sprintf("d=%d/cells=%d", d, cells), func(t *testing.T) {
				k := q2kCells(uint64(cells), cells, d, true)
				want := appendChunks(t, d, 1.1, k, cells)
				if want.Len() != cells || want.Bytes() != Q2K.Bytes(int64(cells), d, 1) || int64(len(want.Groups())) != want.Bytes() {
					t.Fatalf("Len %d Bytes %d, want %d and %d", want.Len(), want.Bytes(), cells, Q2K.Bytes(int64(cells), d, 1))
				}
				for _, chunk := range []int{1, 3, 5, 32, 100} {
					got := appendChunks(t, d, 1.1, k, chunk)
					if !bytes.Equal(got.Groups(), want.Groups()) {
						t.Errorf("%d cells at a time: bytes differ from one append", chunk)
					}
				}
			})
		}
	}
}

// q2kRuleScales is the partial-group scale rule of seed 003, written out independently: the
// un-gained scales of every group of k (n cells, the last group partial when n mod 32 ≠ 0).
func q2kRuleScales(k []float32, d int) [][]float64 {
	n := len(k) / d
	var out [][]float64
	for g := 0; g*GroupCells < n; g++ {
		m := min(GroupCells, n-g*GroupCells)
		s := make([]float64, d)
		for c := range s {
			var ss float64
			for j := 0; j < m; j++ {
				x := float64(k[(g*GroupCells+j)*d+c])
				ss += x * x
			}
			switch {
			case m == GroupCells:
				s[c] = math.Sqrt(ss / 32)
			case g == 0:
				s[c] = math.Sqrt(ss / float64(m))
			default:
				p := out[g-1][c]
				s[c] = math.Sqrt((ss + float64(32-m)*p*p) / 32)
			}
			s[c] = float64(float32(s[c]))
		}
		out = append(out, s)
	}
	return out
}

func TestQ2KScaleRuleAndGain(t *testing.T) {
	const d = 32
	for _, cells := range []int{5, 32, 40, 64, 90} {
		t.Run(fmt.Sprint("cells=", cells), func(t *testing.T) {
			k := q2kCells(uint64(cells)+50, cells, d, true)
			rule := q2kRuleScales(k, d)
			plain := appendChunks(t, d, 1, k, 3)
			gb := int(Q2KGroupBytes(d))
			for _, gain := range []float32{1, 1.1, 0.9} {
				h := appendChunks(t, d, gain, k, 7)
				for g := range rule {
					grp := h.Groups()[g*gb : (g+1)*gb]
					for c := 0; c < d; c++ {
						got := binary.LittleEndian.Uint16(grp[2*c:])
						if want := F32ToF16(gain * float32(rule[g][c])); got != want {
							t.Fatalf("gain %g, group %d channel %d: stored scale %#04x, want F32ToF16(B·rule) = %#04x", gain, g, c, got, want)
						}
					}
					if !bytes.Equal(grp[2*d:], plain.Groups()[g*gb+2*d:(g+1)*gb]) {
						t.Fatalf("gain %g, group %d: codes differ from the B = 1 codes", gain, g)
					}
				}
			}
		})
	}
	t.Run("first group uses RMS of the cells present", func(t *testing.T) {
		h := newQ2K(t, d, 1)
		k := q2kCells(3, 2, d, false)
		h.Append(k)
		for c := 0; c < d; c++ {
			want := math.Sqrt((float64(k[c])*float64(k[c]) + float64(k[d+c])*float64(k[d+c])) / 2)
			if got := F16ToF32(binary.LittleEndian.Uint16(h.Groups()[2*c:])); got != F16ToF32(F32ToF16(float32(want))) {
				t.Fatalf("channel %d: scale %g, want fp16(%g)", c, got, want)
			}
		}
	})
	t.Run("codes are the nearest level against the un-gained scale", func(t *testing.T) {
		k := q2kCells(4, 40, d, false)
		h := appendChunks(t, d, 1.25, k, 40)
		rule := q2kRuleScales(k, d)
		dec := make([]float32, d)
		for cell := 0; cell < 40; cell++ {
			h.Decode(dec, cell)
			g := cell / GroupCells
			for c := 0; c < d; c++ {
				u := float64(k[cell*d+c]) / rule[g][c]
				best := 0
				for v := range q2kLevels {
					if math.Abs(u-float64(q2kLevels[v])) < math.Abs(u-float64(q2kLevels[best])) {
						best = v
					}
				}
				scale := F16ToF32(binary.LittleEndian.Uint16(h.Groups()[g*int(Q2KGroupBytes(d))+2*c:]))
				if dec[c] != scale*q2kLevels[best] {
					t.Fatalf("cell %d channel %d: x/s = %g decodes to %g, want level %d × %g", cell, c, u, dec[c], best, scale)
				}
			}
		}
	})
}

func TestQ2KErrorBounds(t *testing.T) {
	const d, cells = 128, 32 * 24
	for _, tc := range []struct {
		name     string
		outliers bool
		total    float64 // bound on the relative L2 error over all values
		channel  float64 // bound on every channel's relative L2 error
	}{
		{"gaussian", false, 0.36, 0.42},
		{"channel outliers 5x-75x", true, 0.36, 0.42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := q2kCells(77, cells, d, tc.outliers)
			h := appendChunks(t, d, 1, k, 5)
			got := make([]float32, cells*d)
			for cell := 0; cell < cells; cell++ {
				h.Decode(got[cell*d:(cell+1)*d], cell)
			}
			if rel := relL2(got, k); rel > tc.total {
				t.Errorf("relative L2 error %.4f > %.2f", rel, tc.total)
			} else {
				t.Logf("relative L2 error %.4f (Lloyd–Max 0.343)", rel)
			}
			worst := 0.0
			for c := 0; c < d; c++ {
				var num, den float64
				for cell := 0; cell < cells; cell++ {
					e := float64(got[cell*d+c] - k[cell*d+c])
					num += e * e
					den += float64(k[cell*d+c]) * float64(k[cell*d+c])
				}
				worst = max(worst, math.Sqrt(num/den))
			}
			if worst > tc.channel {
				t.Errorf("worst channel relative L2 error %.4f > %.2f", worst, tc.channel)
			}
		})
	}
}

func TestQ2KScores(t *testing.T) {
	for _, d := range []int{128, 64, 10, 12} {
		t.Run(fmt.Sprint("d=", d), func(t *testing.T) {
			const cells = 75
			h := appendChunks(t, d, 1.1, q2kCells(uint64(d), cells, d, true), 9)
			q := gaussRows(uint64(d)+1, 1, d)[0]
			dec := make([]float32, d)
			out := make([]float32, cells)
			h.Scores(q, out)
			for cell := 0; cell < cells; cell++ {
				h.Decode(dec, cell)
				want := dot64(q, dec)
				if e := math.Abs(float64(out[cell]) - want); e > 1e-5*absDot64(q, dec) {
					t.Fatalf("cell %d: Scores %g, q·Decode %g", cell, out[cell], want)
				}
			}
			for _, r := range [][2]int{{0, 0}, {5, 3}, {30, 40}, {64, 11}, {74, 1}} {
				part := make([]float32, r[1])
				h.ScoresRange(q, r[0], part)
				for j := range part {
					if part[j] != out[r[0]+j] {
						t.Fatalf("ScoresRange(%d, %d)[%d] = %g, Scores gives %g", r[0], r[1], j, part[j], out[r[0]+j])
					}
				}
			}
		})
	}
}

func TestQ2KTruncate(t *testing.T) {
	const d = 16
	k := q2kCells(8, 100, d, false)
	ref := func(cells ...[]float32) []byte {
		h := newQ2K(t, d, 1.1)
		for _, c := range cells {
			h.Append(c)
		}
		return h.Groups()
	}
	cell := func(i, j int) []float32 { return k[i*d : j*d] }
	for _, tc := range []struct {
		name           string
		have, keep     int
		err            bool
		then           []float32
		want           []byte
		lenAfterFailed int
	}{
		{"within the partial group", 40, 35, false, cell(80, 90), ref(cell(0, 35), cell(80, 90)), 0},
		{"to the start of the partial group", 40, 32, false, cell(80, 90), ref(cell(0, 32), cell(80, 90)), 0},
		{"within a just-completed group", 64, 50, false, cell(80, 85), ref(cell(0, 50), cell(80, 85)), 0},
		{"drop a whole complete group", 64, 32, false, cell(80, 100), ref(cell(0, 32), cell(80, 100)), 0},
		{"to zero", 20, 0, false, cell(80, 90), ref(cell(80, 90)), 0},
		{"before the last group", 40, 31, true, nil, nil, 40},
		{"beyond the end", 40, 41, true, nil, nil, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newQ2K(t, d, 1.1)
			h.Append(cell(0, tc.have))
			before := bytes.Clone(h.Groups())
			err := h.Truncate(tc.keep)
			if tc.err {
				if !errors.Is(err, ErrUnsupported) || h.Len() != tc.lenAfterFailed || !bytes.Equal(h.Groups(), before) {
					t.Fatalf("err %v, Len %d: want ErrUnsupported and no change", err, h.Len())
				}
				return
			}
			if err != nil || h.Len() != tc.keep || h.Bytes() != Q2K.Bytes(int64(tc.keep), d, 1) {
				t.Fatalf("err %v, Len %d, Bytes %d", err, h.Len(), h.Bytes())
			}
			h.Append(tc.then)
			if !bytes.Equal(h.Groups(), tc.want) {
				t.Error("bytes differ from never having appended the dropped cells")
			}
		})
	}
}

func TestQ2KSizesAndErrors(t *testing.T) {
	h := newQ2K(t, 256, 1)
	if h.StagingBytes() != 4*256*37 || Q2KGroupBytes(256) != 2560 {
		t.Errorf("StagingBytes %d, GroupBytes %d", h.StagingBytes(), Q2KGroupBytes(256))
	}
	h.Grow(100)
	k := q2kCells(1, 100, 256, false)
	for n := 1; n <= 100; n++ {
		h.Append(k[(n-1)*256 : n*256])
		if h.Bytes() != Q2K.Bytes(int64(n), 256, 1) {
			t.Fatalf("%d cells: Bytes %d, want %d", n, h.Bytes(), Q2K.Bytes(int64(n), 256, 1))
		}
	}
	for _, tc := range []struct {
		d    int
		gain float32
	}{{7, 1}, {1 << 21, 1}, {64, 0}, {64, -1}, {64, float32(math.Inf(1))}, {64, float32(math.NaN())}} {
		if _, err := NewQ2KHead(tc.d, tc.gain); !errors.Is(err, ErrUnsupported) {
			t.Errorf("NewQ2KHead(%d, %g): %v, want ErrUnsupported", tc.d, tc.gain, err)
		}
	}
}

func TestDecodeQ2KGroup(t *testing.T) {
	const d = 24
	h := appendChunks(t, d, 1.1, q2kCells(2, 45, d, true), 45)
	gb := int(Q2KGroupBytes(d))
	for g, n := range []int{32, 13} {
		dst := make([]float32, n*d)
		if err := DecodeQ2KGroup(dst, h.Groups()[g*gb:(g+1)*gb], d, n); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, d)
		for j := 0; j < n; j++ {
			h.Decode(want, g*GroupCells+j)
			for c := range want {
				if dst[j*d+c] != want[c] {
					t.Fatalf("group %d cell %d channel %d: %g, Decode gives %g", g, j, c, dst[j*d+c], want[c])
				}
			}
		}
	}
	grp := h.Groups()[:gb]
	for _, tc := range []struct {
		name   string
		dst    int
		group  []byte
		d, n   int
		target error
	}{
		{"short group", 32 * d, grp[:gb-1], d, 32, ErrCorrupt},
		{"long group", 32 * d, append(bytes.Clone(grp), 0), d, 32, ErrCorrupt},
		{"too many cells", 33 * d, grp, d, 33, ErrCorrupt},
		{"negative cells", 0, grp, d, -1, ErrCorrupt},
		{"dst too small", 32*d - 1, grp, d, 32, ErrCorrupt},
		{"dim too small", 32 * 4, grp, 4, 32, ErrUnsupported},
		{"dim huge", 0, grp, math.MaxInt / 4, 0, ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := DecodeQ2KGroup(make([]float32, tc.dst), tc.group, tc.d, tc.n)
			if !errors.Is(err, tc.target) {
				t.Errorf("error %v, want %v", err, tc.target)
			}
		})
	}
}

func FuzzDecodeQ2KGroup(f *testing.F) {
	h := appendChunks(f, 8, 1.1, q2kCells(1, 20, 8, false), 20)
	f.Add(uint16(8), uint8(20), h.Groups())
	f.Add(uint16(12), uint8(32), make([]byte, 120))
	f.Add(uint16(8), uint8(33), make([]byte, 80))
	f.Fuzz(func(t *testing.T, dim uint16, cells uint8, group []byte) {
		d, n := int(dim), int(cells)
		var dst []float32
		if d*n <= 1<<20 {
			dst = make([]float32, d*n)
		}
		err := DecodeQ2KGroup(dst, group, d, n)
		valid := d >= MinDim && n <= GroupCells && int64(len(group)) == Q2KGroupBytes(d) && len(dst) == d*n
		if valid != (err == nil) {
			t.Fatalf("d=%d n=%d len=%d: err %v", d, n, len(group), err)
		}
	})
}

// TestQ2KGolden pins the stored groups at head dimensions 8 and 64, gain 1.1, for 5 cells (a
// partial first group) and 70 cells (two whole groups and a partial third that shrinks toward
// the second's scales), appended 3 cells at a time, with 16× and 64× outlier channels.
func TestQ2KGolden(t *testing.T) {
	for _, d := range []int{8, 64} {
		for _, cells := range []int{5, 70} {
			name := fmt.Sprintf("q2k_d%d_c%d.hex", d, cells)
			t.Run(name, func(t *testing.T) {
				r := &seedRand{uint64(d*100 + cells)}
				k := make([]float32, cells*d)
				for i := range k {
					k[i] = r.exactish()
					switch i % d {
					case 1:
						k[i] *= 16
					case 6:
						k[i] *= 64
					}
				}
				checkGolden(t, name, appendChunks(t, d, 1.1, k, 3).Groups())
			})
		}
	}
}

// BenchmarkQ2K measures one head at d = 128 over 4096 cells: Append of all cells in one call,
// Append one cell at a time (the decode pattern), and Scores of one query against all cells.
// SetBytes is the stored bytes; ns/value is per stored value.
func BenchmarkQ2K(b *testing.B) {
	const d, n = 128, 4096
	k := q2kCells(1, n, d, true)
	perValue := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(n*d), "ns/value")
	}
	h := newQ2K(b, d, 1.1)
	h.Grow(n)
	b.Run("Append", func(b *testing.B) {
		b.SetBytes(Q2K.Bytes(n, d, 1))
		for b.Loop() {
			h.Reset()
			h.Append(k)
		}
		perValue(b)
	})
	b.Run("Append1", func(b *testing.B) {
		b.SetBytes(Q2K.Bytes(n, d, 1))
		for b.Loop() {
			h.Reset()
			for j := 0; j < n; j++ {
				h.Append(k[j*d : (j+1)*d])
			}
		}
		perValue(b)
	})
	b.Run("Scores", func(b *testing.B) {
		h := newQ2K(b, d, 1.1)
		h.Append(k)
		q := gaussRows(2, 1, d)[0]
		out := make([]float32, n)
		b.SetBytes(h.Bytes())
		for b.Loop() {
			h.Scores(q, out)
		}
		perValue(b)
	})
}
