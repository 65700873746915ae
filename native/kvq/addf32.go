package kvq

// AddF32s adds x into dst element by element, dst[i] += x[i] for i < len(x) (len(dst) ≥
// len(x); dst's values past len(x) are left alone): the vector kernels over the whole vectors
// (addF32Vec), a Go loop over the rest. Each element is one float32 addition, so the sums are
// the loop's bit for bit. kvcache's mixed cache adds a head's f16 part of the output to the
// tail's with it, once a head per step.
func AddF32s(dst, x []float32) {
	dst = dst[:len(x)]
	i := addF32Vec(dst, x)
	for ; i < len(x); i++ {
		dst[i] += x[i]
	}
}

// addF32Kernel is one vector kernel of AddF32s and its width in values (the tests call each).
type addF32Kernel struct {
	f func(dst, x *float32, n int)
	w int
}
