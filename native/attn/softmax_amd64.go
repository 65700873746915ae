//go:build amd64 && !purego

package attn

import "golang.org/x/sys/cpu"

// hasAVX512 selects softmaxRows' vector kernels (softmax_amd64.s).
var hasAVX512 = cpu.X86.HasAVX512F

//go:noescape
func scaleMaxAVX512(x *float32, n int, scale float32, mx *[16]float32)

//go:noescape
func expSumAVX512(x *float32, n int, m *[16]float32, sum *[16]float32)

// softmaxVec is softmaxRows' vector path for n query columns with n dividing 16 (a lane of a
// 16-float vector then always holds the same query), over the whole vectors of sco; it
// reports false, touching nothing, when it does not apply. The caller finishes the entries
// past the last whole vector.
func softmaxVec(sco []float32, n int, scale float32, mx, sums []float32) (done int, ok bool) {
	if !hasAVX512 || 16%n != 0 || len(sco) < 16 {
		return 0, false
	}
	nv := len(sco) &^ 15
	var lane [16]float32
	scaleMaxAVX512(&sco[0], nv, scale, &lane)
	for i := range mx {
		mx[i] = lane[i]
		for l := i + n; l < 16; l += n {
			mx[i] = max(mx[i], lane[l])
		}
	}
	for j := nv; j < len(sco); j++ {
		sco[j] *= scale
		mx[j%n] = max(mx[j%n], sco[j])
	}
	for l := range lane {
		lane[l] = mx[l%n]
	}
	var sum [16]float32
	expSumAVX512(&sco[0], nv, &lane, &sum)
	for i := range sums {
		sums[i] = 0
		for l := i; l < 16; l += n {
			sums[i] += sum[l]
		}
	}
	return nv, true
}

// expConst holds log₂e, expNeg's polynomial coefficients, highest degree first, and
// expFloor, for expSumAVX512.
var expConst = [9]float32{1.4426950408889634, 1.5403530393381606e-4, 1.3333558146428443e-3,
	9.6181291076284772e-3, 5.5504108664821580e-2, 2.4022650695910071e-1, 6.9314718055994531e-1, 1,
	expFloor}
