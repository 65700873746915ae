//go:build amd64 && !purego

package kvq

//go:generate go run gen_addf32.go

// addF32Vec adds x's values into dst's over the longest prefix of whole vectors (16 values on
// AVX-512, else 8 on AVX2; AddF32s adds the rest) and returns its length, 0 on a CPU with
// neither. Every sum is one VADDPS lane, dst[i] + x[i] rounded as Go's float32 addition rounds
// it: the Go loop's values bit for bit (TestAddF32s).
func addF32Vec(dst, x []float32) int {
	if !addF32VecOn {
		return 0
	}
	switch {
	case hasAVX512:
		if n := len(x) &^ 15; n > 0 {
			addF32AVX512(&dst[0], &x[0], n)
			return n
		}
	case hasAVX2:
		if n := len(x) &^ 7; n > 0 {
			addF32AVX2(&dst[0], &x[0], n)
			return n
		}
	}
	return 0
}

// scaleF32Vec multiplies dst's values by s over the longest prefix of whole vectors, as
// addF32Vec adds (ScaleF32s multiplies the rest), and returns its length: each product one
// VMULPS lane, dst[i]·s rounded as Go's float32 multiplication rounds it.
func scaleF32Vec(dst []float32, s float32) int {
	if !addF32VecOn {
		return 0
	}
	switch {
	case hasAVX512:
		if n := len(dst) &^ 15; n > 0 {
			scaleF32AVX512(&dst[0], s, n)
			return n
		}
	case hasAVX2:
		if n := len(dst) &^ 7; n > 0 {
			scaleF32AVX2(&dst[0], s, n)
			return n
		}
	}
	return 0
}

// addF32VecOn lets the tests run the Go loop on a CPU with the kernels.
var addF32VecOn = true

// addF32Kernels are the add and scale kernels this CPU can run, for the tests.
func addF32Kernels() map[string]addF32Kernel {
	k := map[string]addF32Kernel{}
	if hasAVX512 {
		k["avx512"] = addF32Kernel{addF32AVX512, scaleF32AVX512, 16}
	}
	if hasAVX2 {
		k["avx2"] = addF32Kernel{addF32AVX2, scaleF32AVX2, 8}
	}
	return k
}

//go:noescape
func addF32AVX512(dst, x *float32, n int)

//go:noescape
func addF32AVX2(dst, x *float32, n int)

//go:noescape
func scaleF32AVX512(dst *float32, s float32, n int)

//go:noescape
func scaleF32AVX2(dst *float32, s float32, n int)
