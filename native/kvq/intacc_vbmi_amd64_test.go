//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestIntAccVBMIMatches checks the AVX-512 VBMI flavour of each nibble format's integer
// accumulate kernels (four accumulators and, where there is one, two) against the other
// flavour bit for bit: both decode a row pair into the same words, so every sum must agree.
// Whichever flavour the codecs take on this CPU, the reference checks test it; this test runs
// the one they do not. The weights are softmax-like with some exactly 0 and one large per
// tile; the dims cover one block, a partial and a whole quad of blocks, two quads and a short
// tail block; the row counts a lone last row, odd pairs and the 64-row tiles; the rows carry
// every code (outlier rows) and random bytes. q5_0's Intel flavour (multiAccQ50VIINT) is
// checked against the same plain kernel, on every CPU with AVX-512 VBMI and GFNI; its Zen 4
// flavour (multiAccQ50VZ4INT, q50Z4) against multiAccQ50VINT, which it replaces there.
func TestIntAccVBMIMatches(t *testing.T) {
	if !intAcc() || !hasVBMI {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	rng := rand.New(rand.NewPCG(71, 72))
	keep := map[Format]int{Q4_0: 2, Q4_1: 4, Q5_0: 2, Q5_1: 4, IQ4_NL: 2} // a block's f16 bytes
	for _, tc := range []struct {
		f                 Format
		plain, vbmi       accKernel
		plainTwo, vbmiTwo accKernel
	}{
		{Q4_0, multiAccQ40INT, multiAccQ40VINT, multiAccQ40TwoINT, multiAccQ40VTwoINT},
		{Q4_1, multiAccQ41INT, multiAccQ41VINT, multiAccQ41TwoINT, multiAccQ41VTwoINT},
		{Q5_0, multiAccQ50INT, multiAccQ50VINT, nil, nil},
		{Q5_0, multiAccQ50INT, multiAccQ50VIINT, nil, nil},   // Intel's flavour (pickIntel; GFNI too)
		{Q5_0, multiAccQ50VINT, multiAccQ50VZ4INT, nil, nil}, // Zen 4's (q50Z4) against the kernel it replaces
		{Q5_1, multiAccQ51INT, multiAccQ51VINT, nil, nil},
		{IQ4_NL, multiAccIQ4NLINT, multiAccIQ4NLVINT, multiAccIQ4NLTwoINT, multiAccIQ4NLVTwoINT},
	} {
		if reflect.ValueOf(tc.vbmi).Pointer() == reflect.ValueOf(multiAccQ50VIINT).Pointer() && !hasGFNI512 {
			continue
		}
		for _, d := range []int{32, 64, 96, 128, 200, 256} {
			for _, rows := range []int{1, 2, 3, 5, 63, 64, 65, 130} {
				t.Run(fmt.Sprintf("%s/d%d/rows%d", tc.f, d, rows), func(t *testing.T) {
					c := Unwrap(mustCodec(t, tc.f, d))
					bc := intAccBlocks(c)
					nv, rb := bc.full*BlockSize, c.RowBytes()
					src := outlierRows(rng, rows, d)
					enc := make([]byte, rows*rb)
					for r := 0; r < rows; r++ {
						c.Encode(enc[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
						if r%3 == 2 { // random codes (and fifth bits), the encoded f16 scale (and minimum)
							row := enc[r*rb : (r+1)*rb]
							for b := 0; b < bc.full; b++ {
								blk := row[b*bc.fullBytes : (b+1)*bc.fullBytes]
								for i := keep[tc.f]; i < len(blk); i++ {
									blk[i] = byte(rng.Uint32())
								}
							}
						}
					}
					w := make([]float32, 4*rows)
					for j := 0; j < rows; j++ {
						for h := 0; h < 4; h++ {
							x := float32(math.Exp(-8 * rng.Float64()))
							switch {
							case rng.IntN(7) == 0:
								x = 0
							case j%64 == h:
								x = 1
							}
							w[4*j+h] = x
						}
					}
					init := make([]float32, 4*d)
					for i := range init {
						init[i] = float32(rng.NormFloat64())
					}
					check := func(name string, plain, vbmi accKernel, n int) {
						a, b := append([]float32(nil), init[:n*d]...), append([]float32(nil), init[:n*d]...)
						wn := make([]float32, n*rows)
						for j := 0; j < rows; j++ {
							copy(wn[n*j:n*j+n], w[4*j:4*j+n])
						}
						plain(&a[0], d, nv, &enc[0], rb, rows, &wn[0], 4*n)
						vbmi(&b[0], d, nv, &enc[0], rb, rows, &wn[0], 4*n)
						for i := range a {
							if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
								t.Fatalf("%s: accumulator %d [%d]: VBMI kernel %g, the other %g", name, i/d, i%d, b[i], a[i])
							}
						}
					}
					check("four accumulators", tc.plain, tc.vbmi, 4)
					if tc.plainTwo != nil {
						check("two accumulators", tc.plainTwo, tc.vbmiTwo, 2)
					}
				})
			}
		}
	}
}

// TestT2MaskedMatches checks turbo2's integer kernel for rows at most 48 bytes apart
// (multiAccT2MINT: a pair's rows in one masked load) against the general one (multiAccT2INT)
// bit for bit: both decode a row pair into the same words. The rows are random bytes (every
// code; the f16 scales random finite values) at their own size apart and with a gap, the last
// row ending the buffer (the masked load must neither read nor fault past it); the row counts
// cover a lone last row, odd pairs and the 64-row tiles; the weights are softmax-like with some
// exactly 0.
func TestT2MaskedMatches(t *testing.T) {
	if !turboIntAcc(2, 64) {
		t.Skip("no AVX-512 VBMI integer accumulate kernels here")
	}
	rng := rand.New(rand.NewPCG(73, 74))
	for _, d := range []int{64, 128} {
		for _, gap := range []int{0, 5, 48 - (d/4 + 2)} {
			for _, rows := range []int{1, 2, 3, 5, 63, 64, 65, 130} {
				rb := d/4 + 2 + gap
				nv := d
				enc := make([]byte, rows*rb-gap)
				for i := range enc {
					enc[i] = byte(rng.Uint32())
				}
				for j := 0; j < rows; j++ {
					s := F32ToF16(float32(rng.NormFloat64()))
					enc[j*rb+d/4], enc[j*rb+d/4+1] = byte(s), byte(s>>8)
				}
				w := make([]float32, 4*rows)
				for i := range w {
					if rng.IntN(7) != 0 {
						w[i] = float32(math.Exp(-8 * rng.Float64()))
					}
				}
				a := make([]float32, 4*d)
				for i := range a {
					a[i] = float32(rng.NormFloat64())
				}
				b := append([]float32(nil), a...)
				multiAccT2INT(&a[0], d, nv, &enc[0], rb, rows, &w[0], 16)
				multiAccT2MINT(&b[0], d, nv, &enc[0], rb, rows, &w[0], 16)
				for i := range a {
					if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
						t.Fatalf("d %d rb %d rows %d: accumulator %d [%d]: masked %g, general %g", d, rb, rows, i/d, i%d, b[i], a[i])
					}
				}
			}
		}
	}
}
