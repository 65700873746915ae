//go:build linux && amd64 && !purego

package kvq

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

// TestVNNIHeaderRegsGuard runs the header-register kernels over rows that end where an
// unreadable page starts: their masked header loads must read no byte past the last row (a
// fault otherwise), and the scores match the staged kernels'.
func TestVNNIHeaderRegsGuard(t *testing.T) {
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI")
	}
	defer func(v bool) { vnniStaged = v }(vnniStaged)
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Skip(err)
	}
	rng := rand.New(rand.NewPCG(87, 88))
	formats := []Format{Q4_0, Q4_1}
	if hasVNNIBW {
		formats = append(formats, IQ4_NL)
	}
	for _, f := range formats {
		for _, d := range []int{32, 64, 96, 128, 160} {
			const rows, n = 16, 4
			mq, enc := headerRows(t, rng, f, d, rows)
			rowsAt := mem[page-len(enc) : page]
			copy(rowsAt, enc)
			q := gaussianRows(rng, n, d, 1)
			var out [2][rows * n]float32
			for i, staged := range []bool{false, true} {
				vnniStaged = staged
				mq.DotManyMulti(q, n, rowsAt, out[i][:])
			}
			for i := range out[0] {
				if math.Float32bits(out[0][i]) != math.Float32bits(out[1][i]) {
					t.Fatalf("%v d%d: score %d: registers %g, staged %g", f, d, i, out[0][i], out[1][i])
				}
			}
		}
	}
}
