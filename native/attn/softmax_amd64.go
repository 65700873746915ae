//go:build amd64 && !purego

package attn

import (
	"math"

	"github.com/kvlab/kvlab/internal/isa"
	"golang.org/x/sys/cpu"
)

// hasAVX512 and hasFMA select softmaxRows' vector kernels (softmax_amd64.s): 16 lanes with
// AVX-512 (F and DQ: VREDUCEPS), else 8 with AVX2 + FMA; KVLAB_NO_AVX512 set selects the 8-lane
// ones.
var (
	hasAVX512 = isa.AVX512F && cpu.X86.HasAVX512DQ
	hasFMA    = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

//go:noescape
func maxMinAVX512(x *float32, n int, mx, mn *[16]float32)

//go:noescape
func expSumAVX512(x *float32, n int, c float32, m *[16]float32, sum *[16]float32)

//go:noescape
func expSumAVX512U(x *float32, n int, c float32, m *[16]float32, sum *[16]float32)

//go:noescape
func maxMinAVX2(x *float32, n int, mx, mn *[16]float32)

//go:noescape
func expSumAVX2(x *float32, n int, c float32, m *[16]float32, sum *[16]float32)

//go:noescape
func expSumAVX2U(x *float32, n int, c float32, m *[16]float32, sum *[16]float32)

// softmaxVec is softmaxRows' vector path for n query columns with n dividing the vector's
// lanes (16 with AVX-512, 8 with AVX2 + FMA: a lane then always holds the same query) and
// scale > 0, over the whole vectors of sco; it reports false, touching nothing, when it does
// not apply. The caller finishes the entries past the last whole vector. The scores stay
// unscaled (the exponential kernels fold the scale in): with scale > 0, the largest scaled
// score is the largest score scaled.
func softmaxVec(sco []float32, n int, scale float32, mx, sums []float32) (done int, ok bool) {
	lanes := 16
	if !hasAVX512 {
		lanes = 8
		if !hasFMA {
			return 0, false
		}
	}
	if lanes%n != 0 || len(sco) < lanes || !(scale > 0) {
		return 0, false
	}
	nv := len(sco) &^ (lanes - 1)
	var lane, low [16]float32
	// Direct calls (not through function values), so lane and sum stay on the stack.
	if lanes == 16 {
		maxMinAVX512(&sco[0], nv, &lane, &low)
	} else {
		maxMinAVX2(&sco[0], nv, &lane, &low)
	}
	for l := range lane {
		lane[l] *= scale
	}
	// The comparisons pass NaNs over, as softmaxRows' loop does (Go's max would return them):
	// the kernel's lanes hold none, but a NaN score past the last whole vector must not become
	// its column's maximum.
	for i := range mx {
		mx[i] = lane[i]
		for l := i + n; l < lanes; l += n {
			if x := lane[l]; x > mx[i] {
				mx[i] = x
			}
		}
	}
	for j := nv; j < len(sco); j++ {
		sco[j] *= scale
		if x := sco[j]; x > mx[j%n] {
			mx[j%n] = x
		}
	}
	for l := range lane {
		lane[l] = mx[l%n]
	}
	var sum [16]float32
	// Every exponent above the floor (a margin of 1 for the kernel's roundings; an infinite
	// score or maximum fails the test): the kernel without the floor test.
	c := scale * 1.4426950408889634 // the scale the kernels fold in
	above := true
	for l := range lanes {
		ml := float64(float32(lane[l] * 1.4426950408889634))
		above = above && float64(low[l])*float64(c)-ml > expFloor+1
	}
	switch {
	case lanes == 16 && above:
		expSumAVX512U(&sco[0], nv, c, &lane, &sum)
	case lanes == 16:
		expSumAVX512(&sco[0], nv, c, &lane, &sum)
	case above:
		expSumAVX2U(&sco[0], nv, c, &lane, &sum)
	default:
		expSumAVX2(&sco[0], nv, c, &lane, &sum)
	}
	if above {
		if s := sum[0] + sum[1] + sum[2] + sum[3] + sum[4] + sum[5] + sum[6] + sum[7] + sum[8] +
			sum[9] + sum[10] + sum[11] + sum[12] + sum[13] + sum[14] + sum[15]; s != s {
			zeroNaNs(sco[:nv], lanes, &sum)
		}
	}
	for i := range sums {
		sums[i] = 0
		for l := i; l < lanes; l += n {
			sums[i] += sum[l]
		}
	}
	return nv, true
}

// expConst holds log₂e and expFloor, for the exponential kernels.
var expConst = [2]float32{1.4426950408889634, expFloor}

// exp8Const holds the shift that rounds to a multiple of 1/8 (1.5·2²⁰) and the coefficients
// c3, c2, c1 of expSumAVX2's 2^r ≈ 1 + r·(c1 + c2·r + c3·r²) on [−1/16, 1/16] (fitted to the
// relative error, below 2⁻²⁵·²); exp8Table holds the bits of 2^(j/8) less j·2²⁰ for j < 8
// (adding z's bits shifted by 20, (8n + j)·2²⁰, makes them 2^(n + j/8)'s).
var exp8Const = [4]float32{0x1.8p20, 0.05549622222495455, 0.24025763627963698, 0.6931472142709922}

var exp8Table = func() (t [8]uint32) {
	for j := range t {
		t[j] = math.Float32bits(float32(math.Exp2(float64(j)/8))) - uint32(j)<<20
	}
	return t
}()

// zeroNaNs sets the NaN weights of x (a NaN score's, from expSumAVX512U or expSumAVX2U) to
// 0, as the kernels with the floor test leave them, and sums the lanes again in their order.
func zeroNaNs(x []float32, lanes int, sum *[16]float32) {
	*sum = [16]float32{}
	for i, w := range x {
		if w != w {
			x[i], w = 0, 0
		}
		sum[i%lanes] += w
	}
}

// exp32Const holds the shift that rounds to a multiple of 1/32 (1.5·2¹⁸) and the coefficients
// c2, c1 of expSumAVX512's 2^r ≈ 1 + r·(c1 + c2·r) on [0, 1/32) (fitted to the relative
// error, below 2⁻²³·⁸); exp32Table holds 2^(j/32) for j < 32.
var exp32Const = [3]float32{0x1.8p18, 0.24265276427757185, 0.6931237302541635}

var exp32Table = func() (t [32]float32) {
	for j := range t {
		t[j] = float32(math.Exp2(float64(j) / 32))
	}
	return t
}()
