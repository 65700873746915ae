//go:build amd64 && !purego

package kvq

// iq4nlLevels are iq4_nl's levels as floats, indexed by the nibble: the AVX-512 kernels' table.
var iq4nlLevels = func() (l [16]float32) {
	for i, v := range iq4nlValues {
		l[i] = float32(v)
	}
	return l
}()

// iq4nlAVX512 is iq4_nl's AVX-512 kernels (multi_iq4nl_amd64.s); multiIQ4NL uses them on CPUs
// with AVX-512 F and the AVX2 ones elsewhere.
var iq4nlAVX512 = &multiKernels{scores: multiScoresIQ4NLAVX512, acc: multiAccIQ4NLAVX512}

//go:noescape
func multiScoresIQ4NLAVX512(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiAccIQ4NLAVX512(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
