//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMultiQueryFP8BF16 runs the reference checks on fp8 through each AVX-512 kernel set the
// CPU can run: the VBMI accumulate kernel with the bf16 scores and with the f16 ones, and the
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
	}{{"vbmi+bf16", fp8VBMI, true}, {"vbmi", fp8VBMI, false}, {"bw", fp8AVX512, false}}
	for _, set := range sets {
		if set.k == fp8VBMI && !hasFP8VBMI || set.bf16 && !savedB {
			continue
		}
		multiFP8, hasFP8BF16 = set.k, set.bf16
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
