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

// ScaleF32s multiplies every value of dst by s, dst[i] *= s: the vector kernels over the whole
// vectors (scaleF32Vec), a Go loop over the rest, each product the loop's bit for bit.
// attn.Decode normalizes a head's output with it.
func ScaleF32s(dst []float32, s float32) {
	i := scaleF32Vec(dst, s)
	for ; i < len(dst); i++ {
		dst[i] *= s
	}
}

// addF32Kernel is one vector width's kernels of AddF32s (f) and ScaleF32s (scale), and the
// width in values (the tests call each).
type addF32Kernel struct {
	f     func(dst, x *float32, n int)
	scale func(dst *float32, s float32, n int)
	w     int
}
