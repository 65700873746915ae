//go:build amd64 && !purego

package kvq

//go:generate go run gen_q8enc.go

// q8_0EncodeVec writes the 32 codes of a full q8_0 block of src into qs and returns its scale d
// (the caller stores its f16), by the AVX-512 (else AVX2) kernel of q8enc_amd64.s (generated
// by gen_q8enc.go); it reports false, writing nothing, for a block holding a NaN (whose scale
// follows C's MAX order) or on a CPU with neither: q8_0Encode then runs its Go loops. The
// codes and d are the Go loops' exactly (TestQ80EncodeVec): the same float32 division,
// multiplication and round-half-away-from-zero, clamped into ±127.
func q8_0EncodeVec(qs []byte, src []float32) (float32, bool) {
	if !q8EncVecOn {
		return 0, false
	}
	qs, src = qs[:BlockSize], src[:BlockSize]
	switch {
	case hasAVX512:
		return q8_0EncodeAVX512(&qs[0], &src[0])
	case hasAVX2:
		return q8_0EncodeAVX2(&qs[0], &src[0])
	}
	return 0, false
}

// q8EncVecOn lets the tests run the Go loops on a CPU with the kernel.
var q8EncVecOn = true

func setQ8EncVec(on bool) { q8EncVecOn = on }

func hasQ8EncVec() bool { return hasAVX512 || hasAVX2 }

// q8EncKernels are the kernels this CPU can run, for the tests.
func q8EncKernels() map[string]func(qs *byte, src *float32) (float32, bool) {
	k := map[string]func(qs *byte, src *float32) (float32, bool){}
	if hasAVX512 {
		k["avx512"] = q8_0EncodeAVX512
	}
	if hasAVX2 {
		k["avx2"] = q8_0EncodeAVX2
	}
	return k
}

//go:noescape
func q8_0EncodeAVX512(qs *byte, src *float32) (d float32, ok bool)

//go:noescape
func q8_0EncodeAVX2(qs *byte, src *float32) (d float32, ok bool)
