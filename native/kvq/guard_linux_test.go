//go:build linux && !purego

package kvq

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// guardedBytes returns n bytes whose last one is followed by an inaccessible page (end), or
// whose first one follows such a page (start): a kernel that reads or writes past either end of
// the slice it was given faults instead of reading the neighbour's bytes unseen. free unmaps.
func guardedBytes(t testing.TB, n int, atStart bool) (b []byte, free func()) {
	t.Helper()
	pg := syscall.Getpagesize()
	size := (n+pg-1)/pg*pg + 2*pg
	m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(m[:pg], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(m[size-pg:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if atStart {
		b = m[pg : pg+n : pg+n]
	} else {
		b = m[size-pg-n : size-pg : size-pg]
	}
	return b, func() { syscall.Munmap(m) }
}

// guardedF32 is guardedBytes for n float32s holding src's values (or zeros for nil).
func guardedF32(t testing.TB, n int, src []float32, atStart bool) ([]float32, func()) {
	b, free := guardedBytes(t, 4*n, atStart)
	var f []float32
	if n > 0 {
		f = unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	copy(f, src)
	return f, free
}

// TestMultiQueryGuardPages runs DotManyMulti, DotManyMultiStride, AccumulateManyMulti and
// AccumulateManyMultiStride of every multi-query format with rows, queries, scores, weights and
// accumulators each ending at (then starting at) an inaccessible page, over dims, query counts
// and row counts around the kernels' steps (8, 16, row pairs, 64-row tiles), and checks the
// results against the same calls on ordinary slices. A kernel's load or store past a slice's
// end (a 32-byte load near the end of the last row, a store of four scores for a row that has
// fewer) faults here, where within the Go heap it would go unseen.
func TestMultiQueryGuardPages(t *testing.T) {
	rng := rand.New(rand.NewPCG(97, 98))
	for _, f := range multiFormats {
		for _, d := range guardDims {
			guardMulti(t, rng, f, d)
		}
	}
}

// guardMulti is TestMultiQueryGuardPages for format f at d.
func guardMulti(t *testing.T, rng *rand.Rand, f Format, d int) {
	c := mustCodec(t, f, d)
	if rc, ok := c.(*rotCodec); ok {
		c = rc.inner
	}
	mq := c.(MultiQuery)
	rb := c.RowBytes()
	for _, n := range []int{1, 2, 4, 5} {
		for _, rows := range []int{1, 2, 7, 8, 9, 16, 17, 64, 65} {
			for _, atStart := range []bool{false, true} {
				name := fmt.Sprintf("%s/d%d/n%d/rows%d/start%v", f, d, n, rows, atStart)
				src := outlierRows(rng, rows, d)
				enc := make([]byte, rows*rb)
				for r := 0; r < rows; r++ {
					c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
				}
				q := gaussianRows(rng, n, d, 1)
				w := make([]float32, rows*n)
				for i := range w {
					w[i] = float32(rng.Float64())
				}
				acc0 := gaussianRows(rng, n, d, 1)

				want := make([]float32, rows*n)
				mq.DotManyMulti(q, n, enc, want)
				wantAcc := append([]float32(nil), acc0...)
				mq.AccumulateManyMulti(wantAcc, n, w, enc)

				gr, f1 := guardedBytes(t, len(enc), atStart)
				copy(gr, enc)
				gq, f2 := guardedF32(t, len(q), q, atStart)
				gout, f3 := guardedF32(t, len(want), nil, atStart)
				gw, f4 := guardedF32(t, len(w), w, atStart)
				gacc, f5 := guardedF32(t, len(acc0), acc0, atStart)
				mq.DotManyMulti(gq, n, gr, gout)
				mq.AccumulateManyMulti(gacc, n, gw, gr)
				checkBits(t, name+": score", gout, want)
				checkBits(t, name+": acc", gacc, wantAcc)
				// Strided: queries and accumulators d+3 apart, the last one ending the page.
				s := d + 3
				qs := make([]float32, (n-1)*s+d)
				as := make([]float32, (n-1)*s+d)
				for h := 0; h < n; h++ {
					copy(qs[h*s:], q[h*d:(h+1)*d])
					copy(as[h*s:], acc0[h*d:(h+1)*d])
				}
				wantS := make([]float32, rows*n)
				DotManyMultiStride(c, qs, s, n, enc, wantS)
				wantAS := append([]float32(nil), as...)
				AccumulateManyMultiStride(c, wantAS, s, n, w, enc)
				gqs, f6 := guardedF32(t, len(qs), qs, atStart)
				gouts, f7 := guardedF32(t, len(wantS), nil, atStart)
				gas, f8 := guardedF32(t, len(as), as, atStart)
				DotManyMultiStride(c, gqs, s, n, gr, gouts)
				AccumulateManyMultiStride(c, gas, s, n, gw, gr)
				checkBits(t, name+": strided score", gouts, wantS)
				checkBits(t, name+": strided acc", gas, wantAS)
				for _, free := range []func(){f1, f2, f3, f4, f5, f6, f7, f8} {
					free()
				}
			}
		}
	}
}

// TestQ2KGuardPages runs ScoresRangeMulti with the cells' groups, the queries and the scores
// each ending at (then starting at) an inaccessible page, over ranges that start and end inside
// groups and row counts around the kernels' steps, against the same calls on ordinary slices.
func TestQ2KGuardPages(t *testing.T) {
	rng := rand.New(rand.NewPCG(99, 100))
	for _, d := range []int{32, 64, 96, 128, 192, 256} { // 192: the paired group kernel at its 48-byte row limit
		for _, cells := range []int{1, 7, 8, 9, 17, 31, 32, 33, 70} {
			h := newQ2K(t, d, 1.1)
			h.Append(q2kCells(uint64(d+cells), cells, d, true))
			gb := int(q2kGroupBytes(d))
			data := h.data[:(cells+GroupCells-1)/GroupCells*gb]
			for _, n := range []int{1, 3, 4, 5} {
				for _, first := range []int{0, cells / 3} {
					for _, atStart := range []bool{false, true} {
						m := cells - first
						q := gaussianRows(rng, n, d, 1)
						want := make([]float32, m*n)
						h.data = data
						h.ScoresRangeMulti(q, n, first, want)
						gd, f1 := guardedBytes(t, len(data), atStart)
						copy(gd, data)
						gq, f2 := guardedF32(t, len(q), q, atStart)
						gout, f3 := guardedF32(t, len(want), nil, atStart)
						h.data = gd
						h.ScoresRangeMulti(gq, n, first, gout)
						h.data = data
						checkBits(t, fmt.Sprintf("d%d cells%d n%d first%d: score", d, cells, n, first), gout, want)
						f1()
						f2()
						f3()
					}
				}
			}
		}
	}
}

// guardDims are the dims TestMultiQueryGuardPages covers: multiples of 32 (the integer
// kernels' groups), of 16 but not 32 (the AVX2 turbo accumulate kernels' steps), and others.
var guardDims = []int{16, 32, 40, 48, 64, 128, 200, 256}
