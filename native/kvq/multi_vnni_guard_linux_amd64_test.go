//go:build linux && amd64 && !purego

package kvq

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

// TestVNNIHeaderRegsGuard runs the header-register kernels (iq4_nl's with and without VBMI; with
// and without the far prefetches, vnniHdrZ4; their Intel flavours, hdrIntel) over rows that end where an unreadable page starts and over rows that start where one ends:
// their masked header and payload loads must read no byte past the last row or before the
// first (a fault otherwise), and the scores match the staged kernels'.
func TestVNNIHeaderRegsGuard(t *testing.T) {
	if !hasVNNI {
		t.Skip("no AVX-512 VNNI")
	}
	defer func(v, i, z, x bool) { vnniStaged, iq4ScoresVBMI, vnniHdrZ4, hdrIntel = v, i, z, x }(vnniStaged, iq4ScoresVBMI, vnniHdrZ4, hdrIntel)
	defer func(r int) { twoStreamRows = r }(twoStreamRows)
	twoStreamRows = 0 // the Intel flavours over the few rows here
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 3*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[:page], unix.PROT_NONE); err != nil {
		t.Skip(err)
	}
	if err := unix.Mprotect(mem[2*page:], unix.PROT_NONE); err != nil {
		t.Skip(err)
	}
	rng := rand.New(rand.NewPCG(87, 88))
	formats := []Format{Q4_0, Q4_1}
	if hasVNNIBW {
		formats = append(formats, IQ4_NL)
	}
	vbmi := []bool{false}
	if hasVBMI {
		vbmi = append(vbmi, true)
	}
	for _, g := range vbmi {
		iq4ScoresVBMI = g
		for _, f := range formats {
			for _, d := range []int{32, 64, 96, 128, 160} {
				const rows, n = 16, 4
				mq, enc := headerRows(t, rng, f, d, rows)
				for _, at := range []int{2*page - len(enc), page} {
					rowsAt := mem[at : at+len(enc)]
					copy(rowsAt, enc)
					q := gaussianRows(rng, n, d, 1)
					var out [4][rows * n]float32
					for i, mode := range []struct{ staged, z4, intel bool }{{true, false, false}, {false, false, false}, {false, true, false}, {false, false, true}} {
						vnniStaged, vnniHdrZ4, hdrIntel = mode.staged, mode.z4, mode.intel
						mq.DotManyMulti(q, n, rowsAt, out[i][:])
					}
					for z := 1; z < len(out); z++ {
						for i := range out[0] {
							if math.Float32bits(out[0][i]) != math.Float32bits(out[z][i]) {
								t.Fatalf("%v d%d VBMI %v Z4 %v Intel %v at %d: score %d: registers %g, staged %g", f, d, g, z == 2, z == 3, at-page, i, out[z][i], out[0][i])
							}
						}
					}
				}
			}
		}
	}
}

// TestQ5ScoresZ4Guard runs q5_0's and q5_1's scores kernels, GFNI and their Zen 4 flavours
// (q5ScoresZ4), and their Intel flavours (q51ScoresX, q50ScoresX), over rows that end where an unreadable page starts and over rows that start
// where one ends: their header and payload loads must read no byte past the last row or
// before the first (a fault otherwise), and all agree bit for bit.
func TestQ5ScoresZ4Guard(t *testing.T) {
	if !q5ScoresGFNI {
		t.Skip("no AVX-512 VNNI, BW, BITALG and GFNI")
	}
	defer func(z, x, x0 bool) { q5ScoresZ4, q51ScoresX, q50ScoresX = z, x, x0 }(q5ScoresZ4, q51ScoresX, q50ScoresX)
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 3*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[:page], unix.PROT_NONE); err != nil {
		t.Skip(err)
	}
	if err := unix.Mprotect(mem[2*page:], unix.PROT_NONE); err != nil {
		t.Skip(err)
	}
	rng := rand.New(rand.NewPCG(89, 90))
	for _, f := range []Format{Q5_0, Q5_1} {
		hdr, bs := 2, 22
		if f == Q5_1 {
			hdr, bs = 4, 24
		}
		for _, d := range []int{32, 64, 96, 128, 160} {
			const rows, n = 32, 4
			mq, enc := payloadRows(t, rng, f, d, rows, hdr, bs)
			for _, at := range []int{2*page - len(enc), page} {
				rowsAt := mem[at : at+len(enc)]
				copy(rowsAt, enc)
				q := gaussianRows(rng, n, d, 1)
				var out [3][rows * n]float32 // GFNI, Z4, the Intel flavours (q51ScoresX, q50ScoresX)
				for i, z := range [][2]bool{{false, false}, {true, false}, {false, true}} {
					q5ScoresZ4, q51ScoresX, q50ScoresX = z[0], z[1], z[1]
					mq.DotManyMulti(q, n, rowsAt, out[i][:])
				}
				for k := 1; k < len(out); k++ {
					for i := range out[0] {
						if math.Float32bits(out[0][i]) != math.Float32bits(out[k][i]) {
							t.Fatalf("%v d%d at %d: score %d: flavour %d %g, GFNI %g", f, d, at-page, i, k, out[k][i], out[0][i])
						}
					}
				}
			}
		}
	}
}

// TestVNNIQ8Guard runs q8_0's scores kernels (both prefetch flavours, one and two digits) over
// rows that end where an unreadable page starts: staging the next group's scales during a
// group must read no row past the last (a fault otherwise), and the scores match q8Model.
// Rows of one to four groups: the last group stages nothing.
func TestVNNIQ8Guard(t *testing.T) {
	if !hasVNNI || avx2Int {
		t.Skip("no AVX-512 VNNI kernels here")
	}
	defer func(o, z bool) { vnniQ8One, zen4Stream = o, z }(vnniQ8One, zen4Stream)
	page := unix.Getpagesize()
	const readable = 4 // pages before the unreadable one: 64 rows of 160 values
	mem, err := unix.Mmap(-1, 0, (readable+1)*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[readable*page:], unix.PROT_NONE); err != nil {
		t.Skip(err)
	}
	rng := rand.New(rand.NewPCG(95, 96))
	for _, nd := range []int{1, 2} {
		vnniQ8One = nd == 1
		for _, z4 := range []bool{false, true} {
			zen4Stream = z4
			for _, d := range []int{32, 64, 96, 128, 160} {
				c := mustCodec(t, Q8_0, d).(*q8_0Codec)
				rb := c.RowBytes()
				for _, rows := range []int{16, 32, 48, 64} {
					const n = 4
					enc := q8RandRows(rng, rows, d, rb)
					rowsAt := mem[readable*page-len(enc) : readable*page]
					copy(rowsAt, enc)
					q := gaussianRows(rng, n, d, 1)
					out := make([]float32, rows*n)
					c.DotManyMulti(q, n, rowsAt, out)
					want := make([]float32, rows*n)
					q8Model(c, nd, q, n, enc, want)
					for i := range want {
						if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
							t.Fatalf("digits %d Zen 4 flavour %v d%d rows%d: score %d: %g, model %g", nd, z4, d, rows, i, out[i], want[i])
						}
					}
				}
			}
		}
	}
}
