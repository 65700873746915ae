//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/kvlab/kvlab/internal/cputime"
)

// TestMultiQueryFP8BF16 runs the reference checks on fp8 through each AVX-512 kernel set the
// CPU can run: the bf16 accumulate kernel with the bf16 scores of a row pair in halves (the
// accumulate within the bf16 weights' bound, fp8AccSlack), KVLAB_ACC16's (the VBMI accumulate
// kernel, the bf16 scores with eight accumulators a pair), the VBMI accumulate kernel with the f16 scores, and the
// f16 kernels of CPUs without AVX-512 VBMI (BW only), over head dimensions with and without a
// last half chunk and a scalar tail, query counts with a padded last group, and row counts
// around the row pairs, the 16-row batches and the 64-row tiles.
func TestMultiQueryFP8BF16(t *testing.T) {
	if !hasAVX512BW {
		t.Skip("no AVX-512 BW")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	savedK, savedB := multiFP8, hasFP8BF16
	defer func() { multiFP8, hasFP8BF16 = savedK, savedB }()
	sets := []struct {
		name string
		k    *multiKernels
		bf16 bool
	}{{"vbmi+bf16", fp8VBMI, true}, {"vbmi", fp8VBMI, false}, {"f32", fp8F32, false}, {"bw", fp8AVX512, false}}
	savedAcc, savedH := fp8BF16AccOn, fp8BF16ScoresH
	defer func() { fp8BF16AccOn, fp8BF16ScoresH = savedAcc, savedH }()
	sets = append(sets[:1], append([]struct {
		name string
		k    *multiKernels
		bf16 bool
	}{{"vbmi+bf16+acc16", fp8VBMI, true}}, sets[1:]...)...)
	for _, set := range sets {
		if (set.k == fp8VBMI || set.k == fp8F32) && !hasFP8VBMI || set.bf16 && !savedB {
			continue
		}
		multiFP8, hasFP8BF16 = set.k, set.bf16
		// KVLAB_ACC16's kernels: float32 weights, eight accumulators a row pair's scores.
		fp8BF16AccOn = set.name != "vbmi+bf16+acc16"
		fp8BF16ScoresH = fp8BF16AccOn
		for _, d := range []int{32, 40, 64, 96, 128, 200, 320} {
			for _, n := range []int{1, 3, 4, 5, 8} {
				for _, rows := range []int{1, 2, 7, 17, 130} {
					t.Run(fmt.Sprintf("%s/d%d/n%d/rows%d", set.name, d, n, rows), func(t *testing.T) {
						checkMulti(t, rng, FP8, d, n, rows)
					})
				}
			}
		}
	}
}

// TestFP8QueryBF16 checks that the kernel's query packing and fp8Grid round as bf16Round says (ties,
// subnormals, NaN, infinities, the largest floats) and lays the values out as the kernel reads
// them, the half chunk's missing values zero.
func TestFP8QueryBF16(t *testing.T) {
	if !hasFP8BF16 {
		t.Skip("no AVX-512 VBMI and BF16")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1 + 0x1p-8, 1 + 0x1p-8 + 0x1p-23, 1 + 3*0x1p-8,
		0x1p-126, 0x1p-127, -0x1p-149, math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)),
		float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xff812345)}
	for _, d := range []int{32, 40, 64, 96, 128, 200} {
		nv := d &^ 31
		q := make([]float32, 4*d)
		for i := range q {
			q[i] = float32(rng.NormFloat64() * math.Exp(8*rng.NormFloat64()))
			if i%7 == 0 {
				q[i] = special[(i/7)%len(special)]
			}
		}
		grid := make([]float32, 4*d)
		fp8Grid(grid, q, 4, d)
		for i, x := range q {
			want := x
			if i%d < nv {
				want = bf16Round(x)
			}
			if math.Float32bits(grid[i]) != math.Float32bits(want) {
				t.Fatalf("d%d value %d (%g): grid %g, want %g", d, i, x, grid[i], want)
			}
		}
		chunks := (nv + 63) / 64
		pack := make([]uint16, chunks*4*64)
		for i := range pack {
			pack[i] = 0xdead
		}
		fp8QueryBF16(&pack[0], &q[0], d, nv)
		for c := 0; c < chunks; c++ {
			for h := 0; h < 4; h++ {
				for k := 0; k < 64; k++ {
					// word k of the pair: lane k/8 of the first vector (k < 32) or of the second
					lane, half := (k%32)/8, k/32
					i := c*64 + 16*lane + 8*half + k%8
					var want uint16
					if i < nv {
						want = uint16(math.Float32bits(bf16Round(q[h*d+i])) >> 16)
					}
					if got := pack[(4*c+h)*64+k]; got != want {
						t.Fatalf("d%d query %d value %d (%g): packed %#04x, want %#04x", d, h, i, q[h*d+i], got, want)
					}
				}
			}
		}
		// fp8QueryBF16H: per 32-value chunk and query, the words of values 0–7, 16–23, 0–7,
		// 16–23, then 8–15, 24–31, 8–15, 24–31; a sentinel past the last chunk.
		packH := make([]uint16, nv*8+1)
		for i := range packH {
			packH[i] = 0xdead
		}
		fp8QueryBF16H(&packH[0], &q[0], d, nv)
		if packH[nv*8] != 0xdead {
			t.Fatalf("d%d: fp8QueryBF16H wrote past its %d words", d, nv*8)
		}
		for c := 0; c < nv/32; c++ {
			for h := 0; h < 4; h++ {
				for k := 0; k < 64; k++ {
					lane, vec := (k%32)/8, k/32
					i := c*32 + 16*(lane%2) + 8*vec + k%8
					want := uint16(math.Float32bits(bf16Round(q[h*d+i])) >> 16)
					if got := packH[(4*c+h)*64+k]; got != want {
						t.Fatalf("d%d query %d value %d (%g): packed (halves) %#04x, want %#04x", d, h, i, q[h*d+i], got, want)
					}
				}
			}
		}
	}
}

// bf16Round is x rounded as VCVTNEPS2BF16 rounds it, widened back: to nearest even, NaN
// quieted, a subnormal (or zero) x to zero of its sign.
func bf16Round(x float32) float32 {
	b := math.Float32bits(x)
	switch {
	case b&0x7f800000 == 0:
		b &= 0x80000000
	case b&0x7fffffff > 0x7f800000:
		b |= 0x00400000
		b &= 0xffff0000
	default:
		b += 0x7fff + (b >> 16 & 1)
		b &= 0xffff0000
	}
	return math.Float32frombits(b)
}

// TestFP8AccBF16Speed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// accumulators, the thread-CPU time of fp8's AccumulateManyMulti through multiAccFP8BF16 and
// through multiAccFP8VBMI (KVLAB_ACC16's), the two alternated: on benchRows rows in cache (best
// and median of 300 calls) and streamed past the caches (64 MiB of those rows in chunks of
// benchRows, KVLAB_SPEED_ROUNDS passes, default 10).
func TestFP8AccBF16Speed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasFP8BF16 || multiFP8 != fp8VBMI {
		t.Skip("no AVX-512 VBMI and BF16")
	}
	saved := fp8BF16AccOn
	defer func() { fp8BF16AccOn = saved }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := mustCodec(t, FP8, benchDim)
	mq := c.(MultiQuery)
	tile, vals := benchStreamRows(c)
	_, _, w, acc := benchQueries()
	var cache, stream [2][]time.Duration // float32 weights, bf16 weights
	for r := 0; r < 300; r++ {
		for i := range cache {
			fp8BF16AccOn = i == 1
			t0 := cputime.Thread()
			mq.AccumulateManyMulti(acc, 4, w, tile)
			cache[i] = append(cache[i], cputime.Thread()-t0)
		}
	}
	chunks := len(vals) / len(tile)
	for r := 0; r < speedRounds(10); r++ {
		for i := range stream {
			fp8BF16AccOn = i == 1
			var d time.Duration
			for k := 0; k < chunks; k++ {
				t0 := cputime.Thread()
				mq.AccumulateManyMulti(acc, 4, w, vals[k*len(tile):(k+1)*len(tile)])
				d += cputime.Thread() - t0
			}
			stream[i] = append(stream[i], d)
		}
	}
	t.Logf("fp8 values per row of %d values, 4 accumulators, ns min/median: in cache float32 weights %s, bf16 %s; streamed float32 %s, bf16 %s",
		benchDim, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
		minMedian(stream[0], chunks*benchRows), minMedian(stream[1], chunks*benchRows))
}

// TestFP8ScoresBF16HSpeed reports (KVLAB_SPEED_REPORT set), per row of benchDim values and
// four queries, the thread-CPU time of fp8's DotManyMulti through multiScoresFP8BF16H and
// through multiScoresFP8BF16 (KVLAB_ACC16's), alternated (scoreSpeeds): in cache and streamed,
// ns min/median.
func TestFP8ScoresBF16HSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !fp8BF16Active() {
		t.Skip("no AVX-512 VBMI and BF16")
	}
	saved := fp8BF16ScoresH
	defer func() { fp8BF16ScoresH = saved }()
	modes := []func(func()){
		func(f func()) { fp8BF16ScoresH = false; f() },
		func(f func()) { fp8BF16ScoresH = true; f() },
	}
	cache, stream, passRows := scoreSpeeds(t, FP8, modes)
	t.Logf("fp8 scores per row of %d values, 4 queries, ns min/median: in cache eight accumulators a pair %s, halves %s; streamed %s, halves %s",
		benchDim, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
		minMedian(stream[0], passRows), minMedian(stream[1], passRows))
}

// TestFP8ScoresBF16HStores checks the stores of multiScoresFP8BF16H's loop over four rows: with
// a row's four scores adjacent to the next row's (ostride 16: one 64-byte store for four rows)
// and apart (ostride 32: four 16-byte stores), the same scores bit for bit, nothing written
// between the rows' scores or past the last row's; and a row's scores independent of its
// place among the four (the rows of each four rotated), the offsets included.
func TestFP8ScoresBF16HStores(t *testing.T) {
	if !fp8BF16Active() {
		t.Skip("no AVX-512 VBMI and BF16")
	}
	rng := rand.New(rand.NewPCG(45, 46))
	const d = 128
	c := mustCodec(t, FP8, d)
	rb := c.RowBytes()
	sentinel := math.Float32frombits(0x7fc0dead)
	for _, m := range []int{4, 5, 7, 8, 9, 12, 13} {
		src := outlierRows(rng, m, d)
		enc := make([]byte, m*rb)
		for r := 0; r < m; r++ {
			c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
		}
		q := gaussianRows(rng, 4, d, 1)
		pack := make([]uint16, d*8)
		fp8QueryBF16H(&pack[0], &q[0], d, d)
		off := [4]float32{0.5, -1.25, 3, -0.125}
		run := func(rows []byte, ostride int) []float32 {
			w := ostride / 4
			out := make([]float32, m*w+16)
			for i := range out {
				out[i] = sentinel
			}
			multiScoresFP8BF16H(&pack[0], d, &rows[0], rb, m, &out[0], ostride, d, &off[0])
			res := make([]float32, 4*m)
			for i, x := range out {
				j, k := i/w, i%w
				if j < m && k < 4 {
					res[4*j+k] = x
					continue
				}
				if math.Float32bits(x) != math.Float32bits(sentinel) {
					t.Fatalf("m%d ostride %d: float %d (row %d, %d) written: %g", m, ostride, i, j, k, x)
				}
			}
			return res
		}
		a, b := run(enc, 16), run(enc, 32)
		checkBits(t, fmt.Sprintf("m%d: score (4·row + query) with ostride 16 (with 32)", m), a, b)
		// Rotate the rows of each whole four: row j takes row from(j)'s codes.
		quads := m &^ 3
		from := func(j int) int {
			if j >= quads {
				return j
			}
			return j&^3 | (j+1)&3
		}
		rot := make([]byte, len(enc))
		for j := 0; j < m; j++ {
			copy(rot[j*rb:(j+1)*rb], enc[from(j)*rb:(from(j)+1)*rb])
		}
		r := run(rot, 16)
		for j := 0; j < m; j++ {
			for h := 0; h < 4; h++ {
				if got, want := r[4*j+h], a[4*from(j)+h]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("m%d: row %d query %d in place %d: %g, in place %d: %g", m, from(j), h, j%4, got, from(j)%4, want)
				}
			}
		}
	}
}

// fp8ScoresBF16HGolden is the FNV-1a hash of every score fp8ScoresBF16HHash writes, as
// multiScoresFP8BF16H computed them before its loop over four rows deferred the reduction of
// their sums into the next four rows: a kernel change that keeps the products and the order of
// their sums must keep it.
const fp8ScoresBF16HGolden = 0x5c1bb0082d6089f9

// fp8ScoresBF16HHash runs kernel (multiScoresFP8BF16H or its Zen 4 flavour) over row counts around its loops over four rows
// and pairs, head dimensions with a last half chunk, outputs adjacent and apart (ostride 16
// and 32), rows with outliers, subnormal codes and a zero row, and hashes the scores' bits
// (FNV-1a, 64 bits); it fails if a float between or past the rows' scores is written.
func fp8ScoresBF16HHash(t *testing.T, kernel fp8ScoresKernel) uint64 {
	rng := rand.New(rand.NewPCG(47, 48))
	sentinel := math.Float32frombits(0x7fc0dead)
	h := uint64(14695981039346656037)
	for _, d := range []int{32, 64, 96, 128, 160} {
		c := mustCodec(t, FP8, d)
		rb := c.RowBytes()
		for _, m := range []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 64, 67} {
			src := outlierRows(rng, m, d)
			for i := 0; i < d; i += 5 { // subnormal codes: values far below the row's largest
				src[i] *= 1e-5
			}
			if m > 2 {
				clear(src[2*d : 3*d]) // a zero row: scale 0, codes 0
			}
			enc := make([]byte, m*rb)
			for r := 0; r < m; r++ {
				c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
			}
			q := gaussianRows(rng, 4, d, 1)
			pack := make([]uint16, d*8)
			fp8QueryBF16H(&pack[0], &q[0], d, d)
			off := [4]float32{float32(rng.NormFloat64()), 0, -2.5, 1e-3}
			for _, ostride := range []int{16, 32} {
				w := ostride / 4
				out := make([]float32, m*w+16)
				for i := range out {
					out[i] = sentinel
				}
				kernel(&pack[0], d, &enc[0], rb, m, &out[0], ostride, d, &off[0])
				for i, x := range out {
					if i/w < m && i%w < 4 {
						b := math.Float32bits(x)
						for k := 0; k < 4; k++ {
							h = (h ^ uint64(b>>(8*k)&0xff)) * 1099511628211
						}
						continue
					}
					if math.Float32bits(x) != math.Float32bits(sentinel) {
						t.Fatalf("d %d m %d ostride %d: float %d written: %g", d, m, ostride, i, x)
					}
				}
			}
		}
	}
	return h
}

// TestFP8ScoresBF16HGolden checks the scores of multiScoresFP8BF16H and of
// multiScoresFP8BF16HZ4 bit for bit against those of the kernel they replaced
// (fp8ScoresBF16HGolden), called at several stack depths (the kernels keep partial sums or the
// row scales in their frame).
func TestFP8ScoresBF16HGolden(t *testing.T) {
	if !fp8BF16Active() {
		t.Skip("no AVX-512 VBMI and BF16")
	}
	for _, k := range []struct {
		name   string
		kernel fp8ScoresKernel
	}{{"multiScoresFP8BF16H", multiScoresFP8BF16H}, {"multiScoresFP8BF16HZ4", multiScoresFP8BF16HZ4}} {
		for depth := 0; depth < 9; depth++ {
			if got := fp8GoldenAt(t, k.kernel, depth); got != fp8ScoresBF16HGolden {
				t.Fatalf("%s, stack depth %d: scores hash %#x, want %#x", k.name, depth, got, uint64(fp8ScoresBF16HGolden))
			}
		}
	}
}

// fp8ScoresKernel is multiScoresFP8BF16H's signature.
type fp8ScoresKernel func(q *uint16, nv int, rows *byte, rb, m int, out *float32, ostride, so int, off *float32)

// fp8GoldenAt is fp8ScoresBF16HHash called depth frames deeper (a frame of 8 bytes more each
// time through pad), so that the kernel's frame takes other alignments.
//
//go:noinline
func fp8GoldenAt(t *testing.T, kernel fp8ScoresKernel, depth int) uint64 {
	var pad [1]uint64
	pad[0] = uint64(depth)
	if depth > 0 {
		return fp8GoldenAt(t, kernel, depth-1) + pad[0] - uint64(depth)
	}
	return fp8ScoresBF16HHash(t, kernel)
}

// TestAlign64 checks align64: from each word offset of a buffer, a slice 32 words shorter
// that starts at a 64-byte boundary within the words given.
func TestAlign64(t *testing.T) {
	buf := make([]uint16, 256)
	for o := 0; o < 40; o++ {
		p := buf[o : o+100]
		a := align64(p)
		start := uintptr(unsafe.Pointer(&a[0]))
		if start%64 != 0 || len(a) != len(p)-32 {
			t.Fatalf("offset %d: start %d bytes past a 64-byte boundary, %d words", o, start%64, len(a))
		}
		if w := int(start-uintptr(unsafe.Pointer(&p[0]))) / 2; w < 0 || w+len(a) > len(p) {
			t.Fatalf("offset %d: the aligned words %d..%d lie outside the %d given", o, w, w+len(a), len(p))
		}
	}
}
