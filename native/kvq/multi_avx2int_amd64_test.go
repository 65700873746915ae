//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/cpu"
)

// avx2IntFormats are the formats the AVX2 integer scores kernels serve.
var avx2IntFormats = []Format{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL}

// withAVX2Int runs f with the AVX2 integer scores kernels selected in place of the VNNI ones,
// whatever the CPU prefers.
// With vnni, their AVX-VNNI forms (the caller checks the CPU has it).
func withAVX2Int(vnni bool, f func()) {
	v, vb, i, ib, a, x := hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int, avxVNNI
	hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int, avxVNNI = false, false, true, true, true, vnni
	defer func() { hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int, avxVNNI = v, vb, i, ib, a, x }()
	f()
}

// vnniReference reports that this CPU runs the AVX-512 VNNI scores and accumulate kernels,
// whatever KVLAB_NO_AVX512VNNI and KVLAB_NO_AVX512VBMI hide from the dispatch: the reference
// the AVX2 integer kernels are checked against.
var vnniReference = hasAVX512 && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ &&
	cpu.X86.HasAVX512VL

// withVNNIScores runs f with the AVX-512 VNNI scores kernels selected (vnniReference).
func withVNNIScores(f func()) {
	v, vb, i, ib, a, x := hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int, avxVNNI
	hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int, avxVNNI = true, true, true, true, false, false
	defer func() { hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int, avxVNNI = v, vb, i, ib, a, x }()
	f()
}

// avx2IntForms are the kernel forms this CPU runs: plain AVX2, and AVX-VNNI where it has it.
func avx2IntForms() []bool {
	if cpu.X86.HasAVXVNNI {
		return []bool{false, true}
	}
	return []bool{false}
}

// avx2IntRows returns rows of c: encoded outlier rows, then rows whose payload bytes are
// random (every code, q8_0's −128 included) under their encoded scales.
func avx2IntRows(rng *rand.Rand, c Codec, rows int) []byte {
	d, rb := c.Dim(), c.RowBytes()
	src := outlierRows(rng, rows, d)
	enc := make([]byte, rows*rb)
	bc := intAccBlocks(c)
	hdr := bc.k.hdr
	for r := 0; r < rows; r++ {
		row := enc[r*rb : (r+1)*rb]
		c.Encode(row, src[r*d:(r+1)*d])
		if r%2 == 1 {
			for b := 0; b < bc.full; b++ {
				blk := row[b*bc.fullBytes : (b+1)*bc.fullBytes]
				for i := hdr; i < len(blk); i++ {
					blk[i] = byte(rng.Uint32())
				}
			}
		}
	}
	return enc
}

// TestAVX2IntScores checks the AVX2 integer scores kernels against the AVX-512 VNNI ones bit
// for bit (their contract, multi_avx2int_amd64.go): encoded and random payloads, row counts
// around the kernels' groups of eight and the driver's sixteen and past the AVX-VNNI kernels'
// two streams' threshold (gen_avx2int.go's twoMin), one to eight queries (the
// driver pads and gathers short groups), rows of one to 32 blocks (the heap buffers past
// vnniMaxBlocks) with a short last block, and scores started from channel offsets; q8_0 also
// with one-digit queries (vnniQ8One; its AVX-VNNI kernel avx2ScoresQ80OneVNNI); q8_0 and
// iq4_nl through both their high-byte (avx2HB) and s16 kernels.
//
// The reference runs wherever the CPU has the VNNI kernels (vnniReference), so the check keeps
// its meaning under KVLAB_NO_AVX512VNNI and KVLAB_NO_AVX512VBMI, which only hide them from the
// dispatch.
func TestAVX2IntScores(t *testing.T) {
	if !vnniReference || !hasAVX2 {
		t.Skip("needs AVX-512 VNNI and BW for the reference kernels")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	defer func(o bool) { vnniQ8One = o }(vnniQ8One)
	for _, one := range []bool{false, true} {
		for _, f := range avx2IntFormats {
			if one && f != Q8_0 {
				continue
			}
			vnniQ8One = one
			for _, d := range []int{32, 64, 128, 200, 1024} {
				for _, n := range []int{1, 3, 4, 5, 8} {
					rowCounts := []int{1, 8, 16, 37, 130}
					if d <= 128 {
						// At least twoMin groups of eight: the AVX-VNNI kernels' two streams.
						rowCounts = append(rowCounts, 1040, 2061)
					}
					for _, rows := range rowCounts {
						t.Run(fmt.Sprintf("%s/one%v/d%d/n%d/rows%d", f, one, d, n, rows), func(t *testing.T) {
							c := mustCodec(t, f, d)
							if rc, ok := c.(*rotCodec); ok {
								c = rc.inner
							}
							enc := avx2IntRows(rng, c, rows)
							q := gaussianRows(rng, n, d, 1)
							for i := range q { // a spread of block scales
								q[i] *= float32(math.Ldexp(1, i/32%7-3))
							}
							var mu []float32
							if rows%2 == 1 {
								mu = gaussianRows(rng, 1, d, 1)
							}
							mq := c.(muScorer)
							want := make([]float32, rows*n)
							withVNNIScores(func() { mq.dotManyMultiMu(q, n, enc, want, mu) })
							got := make([]float32, rows*n)
							for i := range got {
								got[i] = float32(math.NaN())
							}
							for _, vnni := range avx2IntForms() {
								for _, hb := range []bool{true, false} {
									if !hb && (vnni || f != Q8_0 && f != IQ4_NL) {
										continue // the s16 kernels the high-byte route replaced
									}
									avx2HB = hb
									withAVX2Int(vnni, func() { mq.dotManyMultiMu(q, n, enc, got, mu) })
									avx2HB = true
									for i := range got {
										if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
											t.Fatalf("AVX-VNNI %v, high-byte route %v: row %d query %d: AVX2 %g, AVX-512 VNNI %g", vnni, hb, i/n, i%n, got[i], want[i])
										}
									}
									clear(got)
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestAVX2IntReference runs the reference checks (the MultiQuery bound, the VNNI bound on the
// queries that stress it, a row's score independent of its neighbours, zero and non-finite
// queries) through the AVX2 integer kernels, so they run on AVX-512 machines too.
func TestAVX2IntReference(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(63, 64))
	for _, vnni := range avx2IntForms() {
		withAVX2Int(vnni, func() {
			for _, f := range avx2IntFormats {
				for _, d := range []int{32, 40, 64, 128, 200} {
					for _, n := range []int{1, 3, 4, 5} {
						for _, rows := range []int{1, 7, 130} {
							t.Run(fmt.Sprintf("vnni%v/%s/d%d/n%d/rows%d", vnni, f, d, n, rows), func(t *testing.T) {
								checkMulti(t, rng, f, d, n, rows)
							})
						}
					}
				}
				for _, d := range []int{32, 128, 200, 1024} {
					checkVNNIBound(t, rng, f, d)
				}
			}
		})
	}
}

// TestAVX2IntSpeed prints (KVLAB_SPEED_REPORT set), per row of benchDim values and four
// queries, the best thread-CPU time of DotManyMulti through the AVX2 float kernels (the VNNI
// and integer kernels off) and through the AVX2 integer kernels, plain and (where the CPU has
// it) AVX-VNNI, the three interleaved: in cache
// (benchRows rows again and again) and streamed past the caches (64 MiB of those rows in
// chunks of benchRows). KVLAB_SPEED_ROUNDS sets the streamed rounds (default 10).
func TestAVX2IntSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	float := func(f func()) { withAVX2Kernels(f) }
	integer := func(f func()) { withAVX2Kernels(func() { withAVX2Int(false, f) }) }
	vnniInt := func(f func()) { withAVX2Kernels(func() { withAVX2Int(cpu.X86.HasAVXVNNI, f) }) }
	modes := []func(func()){float, integer, vnniInt}
	for _, f := range avx2IntFormats {
		cache, stream, passRows := scoreSpeeds(t, f, modes)
		ns := func(ds []time.Duration, rows int) float64 {
			return float64(slices.Min(ds).Nanoseconds()) / float64(rows)
		}
		t.Logf("%-6s scores per row of %d values, 4 queries: in cache float %.2f ns, integer %.2f ns, AVX-VNNI %.2f ns; streamed float %.2f ns, integer %.2f ns, AVX-VNNI %.2f ns",
			f, benchDim, ns(cache[0], benchRows), ns(cache[1], benchRows), ns(cache[2], benchRows),
			ns(stream[0], passRows), ns(stream[1], passRows), ns(stream[2], passRows))
	}
}

// avx2ExpandRef is avx2Expand in Go: the layout the kernels read.
func avx2ExpandRef(bq, dig []byte, aux []uint32, nb, nd, kind int) {
	if n := avx2BQBytes(kind); n != 2048 {
		for b := 0; b < nb; b++ {
			src := dig[b*128*nd : (b+1)*128*nd]
			dst := bq[b*n : (b+1)*n]
			for w := 0; w < 32*nd; w++ {
				v := uint32(src[4*w]) | uint32(src[4*w+1])<<8 | uint32(src[4*w+2])<<16 | uint32(src[4*w+3])<<24
				o := dst[w*32 : w*32+32]
				for r := 0; r < 32; r += 4 {
					o[r], o[r+1], o[r+2], o[r+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
				}
			}
			if n == 2176 {
				for h := 0; h < 4; h++ {
					hi, lo := int32(aux[b*vnniAuxWords+12+2*h]), int32(aux[b*vnniAuxWords+13+2*h])
					v := uint32(hi*256 + lo)
					for r := 0; r < 8; r++ {
						o := dst[2048+32*h+4*r:]
						o[0], o[1], o[2], o[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
					}
				}
			}
		}
		return
	}
	for b := 0; b < nb; b++ {
		dst := bq[b*2048 : b*2048+2048]
		for h := 0; h < 4; h++ {
			var Q [32]int16
			src := dig[b*128*nd+h*nd*32:]
			for i := range Q {
				if nd == 1 {
					Q[i] = int16(int8(src[i]))
				} else {
					Q[i] = int16(int8(src[i]))<<8 + int16(int8(src[32+i]))
				}
			}
			for k := 0; k < 8; k++ {
				o := dst[(k*4+h)*64 : (k*4+h)*64+64]
				for r := 0; r < 8; r++ {
					put16(o[4*r:], Q[4*k])
					put16(o[4*r+2:], Q[4*k+2])
					put16(o[32+4*r:], Q[4*k+1])
					put16(o[32+4*r+2:], Q[4*k+3])
				}
			}
		}
	}
}

func put16(b []byte, v int16) { b[0], b[1] = byte(v), byte(uint16(v)>>8) }

// TestAVX2Expand checks the kernels' digit broadcast (avx2Expand) against avx2ExpandRef byte
// for byte, for both layouts (with and without the AVX-VNNI q8_0 kernel's), one and two digits, over every digit byte and rows of one to
// nine blocks, and that it writes nothing past its blocks.
func TestAVX2Expand(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(65, 66))
	x, one := avxVNNI, vnniQ8One
	defer func() { avxVNNI, vnniQ8One = x, one }()
	for i := 0; i < 24; i++ {
		kind := []int{vnniQ4_0, vnniQ4_1, vnniQ5_0, vnniQ5_1, vnniQ8_0, vnniIQ4NL}[i%6]
		avxVNNI = i%12 >= 6 // the AVX-VNNI q8_0 kernel's layout (avx2BQBytes)
		vnniQ8One = i < 12  // q8_0's one-digit queries (the s16 or u8 layout), then two
		nd := vnniND(kind)  // the AVX-VNNI q8_0 kernels: one digit (avx2ScoresQ80OneVNNI), or two
		for nb := 1; nb <= 9; nb++ {
			dig := make([]byte, nb*128*nd)
			for i := range dig {
				dig[i] = byte(rng.Uint32())
			}
			if nd == 2 { // the high digits of two-digit values are within −127..127
				for i := range dig {
					if i%64 < 32 && dig[i] == 0x80 {
						dig[i] = 0x81
					}
				}
			}
			n := nb * avx2BQBytes(kind)
			got, want := make([]byte, n+64), make([]byte, n+64)
			for i := n; i < n+64; i++ {
				got[i], want[i] = 0x5a, 0x5a
			}
			aux := make([]uint32, nb*vnniAuxWords)
			for i := range aux {
				aux[i] = rng.Uint32()
			}
			avx2Expand(got, dig, aux, nb, nd, kind)
			avx2ExpandRef(want, dig, aux, nb, nd, kind)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("kind %d (AVX-VNNI %v), %d blocks: byte %d = %#x, want %#x", kind, avxVNNI, nb, i, got[i], want[i])
				}
			}
		}
	}
}

// TestAVX2IntScoresSaturationEdge scores rows at the u8 route's int16 edge (gen_avx2int.go):
// every payload byte 0xFF (q4_0, q4_1, iq4_nl: code 15; q5_0, q5_1: 31 with every fifth bit
// set), 0x80 (q8_0: −128, the high-byte route's edge, 2·128·127 = 32512 a pair) or 0x00 (iq4_nl:
// level −127, 2·127·127 a pair), unit scales, against queries whose every digit is +127 (even
// queries) or −127 (odd ones), so that a chain's products all add (8·2·15·127 = 30480 for the
// nibble formats, 4·2·31·127 = 31496 for each of q5's two chains) and the blocks' integers do
// not cancel, through whatever scores kernels run here (the AVX2 ones under KVLAB_NO_AVX512,
// both flavours otherwise through withAVX2Int). A chain that wrapped or saturated would be off
// by 2¹⁶ units in a block's integer; the scores must be Dot of the grid query within the float
// bound. (TestAVX2IntScores' random rows do not reach the edge: q5's two chains merged into one
// of eight products, which wraps, passed it and TestAVX2IntReference.)
func TestAVX2IntScoresSaturationEdge(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2, FMA and F16C")
	}
	const d, rows, n = 128, 32, 4
	for _, f := range avx2IntFormats {
		c := Unwrap(mustCodec(t, f, d))
		rb := c.RowBytes()
		bc := intAccBlocks(c)
		enc := make([]byte, rows*rb)
		for r := 0; r < rows; r++ {
			for b := 0; b < bc.full; b++ {
				blk := enc[r*rb+b*bc.fullBytes : r*rb+(b+1)*bc.fullBytes]
				fill := []byte{0xFF, 0x00}[r/8%2]
				if f == Q8_0 && fill == 0xFF {
					fill = 0x80 // −128: the high-byte route's pairs at 2·128·127 = 32512
				}
				for i := range blk {
					blk[i] = fill
				}
				blk[0], blk[1] = 0x00, 0x3C // d = 1 (f16)
				if bc.k.hdr >= 4 {
					blk[2], blk[3] = 0x00, 0x00 // q4_1, q5_1: m = 0
				}
			}
		}
		q := make([]float32, n*d)
		for h := 0; h < n; h++ {
			for i := 0; i < d; i++ {
				sign := float32(1)
				if h%2 == 1 {
					sign = -1
				}
				q[h*d+i] = sign
			}
		}
		check := func(name string) {
			out := make([]float32, rows*n)
			c.(MultiQuery).DotManyMulti(q, n, enc, out)
			grid := make([]float32, n*d)
			ScoresGrid(c, grid, q, n)
			x := make([]float32, d)
			for j := 0; j < rows; j++ {
				row := enc[j*rb : (j+1)*rb]
				c.Decode(x, row)
				for h := 0; h < n; h++ {
					var scale float64
					for i := range x {
						scale += math.Abs(float64(grid[h*d+i]) * (math.Abs(float64(x[i])) + blockOffset(c, row, i)))
					}
					ref := c.Dot(grid[h*d:(h+1)*d], row)
					if e := math.Abs(float64(out[j*n+h]) - float64(ref)); !(e <= 1e-5*scale) {
						t.Fatalf("%s %s: row %d query %d: %g, Dot(grid) %g", name, f, j, h, out[j*n+h], ref)
					}
				}
			}
		}
		if avx2Int {
			check("this CPU's")
			continue
		}
		for _, vnni := range avx2IntForms() {
			withAVX2Int(vnni, func() { check(fmt.Sprintf("AVX-VNNI %v", vnni)) })
		}
	}
}

// TestAVX2HBSpeed prints (KVLAB_SPEED_REPORT set) the thread-CPU time a row of the plain AVX2
// q8_0 (one-byte digits) and iq4_nl scores kernels, the s16 route (avx2HB off) and the high-byte
// route, interleaved, in cache and streamed from 2 MiB pages (scoreSpeedsHuge); min and median
// of the rounds.
func TestAVX2HBSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	route := func(sign bool) func(func()) {
		return func(f func()) {
			withAVX2Kernels(func() {
				withAVX2Int(false, func() {
					avx2HB = sign
					defer func() { avx2HB = true }()
					f()
				})
			})
		}
	}
	for _, f := range []Format{Q8_0, IQ4_NL} {
		cache, stream, passRows := scoreSpeedsHuge(t, f, []func(func()){route(false), route(true)})
		t.Logf("%-6s ns a row (min/median), in cache: s16 %s, high-byte %s; streamed: s16 %s, high-byte %s",
			f, minMedian(cache[0], benchRows), minMedian(cache[1], benchRows),
			minMedian(stream[0], passRows), minMedian(stream[1], passRows))
	}
}
