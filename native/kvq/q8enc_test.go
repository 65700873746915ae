package kvq

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQ80EncodeVec: q8_0Encode with its vector kernel, and each kernel this CPU runs, write the Go loops' bytes (the kernel
// off) for every block, exactly (no error bound: the same float32 operations): Gaussian blocks
// at scales from subnormal to near the float32 top, blocks whose scale is 1 (largest magnitude
// 127) holding the halfway cases ±k.5 and the values just below them (C's roundf moves a half
// away from zero; float32 t + ½ would round 0.49999997 up), ±0, all-zero blocks, subnormal
// blocks whose 1/d overflows to +Inf (0·Inf gives NaN and −127), ±Inf, and a NaN (the kernel
// declines, the Go loops run). A mutated kernel (halves rounded to even or toward zero, no
// clamp, a lane's block max missed, the bytes of the two halves swapped) differs here.
func TestQ80EncodeVec(t *testing.T) {
	if !hasQ8EncVec() {
		t.Skip("no q8_0 encode kernel on this CPU or build")
	}
	defer setQ8EncVec(true)
	rng := rand.New(rand.NewPCG(51, 52))
	halves := []float32{0.5, -0.5, 1.5, -2.5, 126.5, -126.5, 0.49999997, -0.49999997, 2.4999998, 63.5, float32(math.Copysign(0, -1))}
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-44, 3e38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	ks := q8EncKernels()
	check := func(trial int, src []float32) {
		want, got := make([]byte, 34), make([]byte, 34)
		setQ8EncVec(false)
		q8_0Encode(want, src)
		setQ8EncVec(true)
		q8_0Encode(got, src)
		if !bytes.Equal(got, want) {
			t.Fatalf("trial %d: block %v\nkernel  %v\nGo path %v", trial, src, got, want)
		}
		for name, k := range ks {
			clear(got)
			d, ok := k(&got[2], &src[0])
			if !ok {
				if !slices.ContainsFunc(src, func(v float32) bool { return v != v }) {
					t.Fatalf("%s trial %d: declined a block without NaN", name, trial)
				}
				continue
			}
			binary.LittleEndian.PutUint16(got, F32ToF16(d))
			if !bytes.Equal(got, want) {
				t.Fatalf("%s trial %d: block %v\nkernel  %v\nGo path %v", name, trial, src, got, want)
			}
		}
	}
	src := make([]float32, BlockSize)
	for trial := 0; trial < 3000; trial++ {
		scale := float32(math.Ldexp(1, rng.IntN(250)-140))
		for i := range src {
			src[i] = float32(rng.NormFloat64()) * scale
		}
		switch trial % 5 {
		case 1: // scale 1: the halfway cases and their neighbours
			for i := range src {
				if rng.IntN(2) == 0 {
					src[i] = halves[rng.IntN(len(halves))]
				} else {
					src[i] = float32(rng.IntN(255)-127) + float32(rng.IntN(3)-1)*0.5
				}
			}
			src[rng.IntN(BlockSize)] = 127
		case 2:
			for j := 0; j < 2; j++ {
				src[rng.IntN(BlockSize)] = specials[rng.IntN(len(specials))]
			}
		case 3:
			clear(src)
			if trial%10 == 3 {
				src[rng.IntN(BlockSize)] = specials[rng.IntN(3)]
			}
		}
		check(trial, src)
	}
}
