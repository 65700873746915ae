//go:build amd64 && !purego && kvlabevex

package kvq

// The kvlabevex build adds the AVX2 integer scores kernels' AVX-VNNI forms with VPDPBUSD and
// VPDPWSSD in their EVEX encoding (multi_avx2int_evex_amd64.s, gen_avx2int.go): instruction
// for instruction the kernels that AVX-VNNI CPUs run, but runnable on AVX-512 VNNI CPUs without
// AVX-VNNI (AMD Zen 4), so that multi_avx2int_evex_amd64_test.go can check and time them there.

//go:noescape
func avx2ScoresQ40EVEX(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresQ41EVEX(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresQ50EVEX(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresQ51EVEX(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresQ80EVEX(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresIQ4NLEVEX(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// avx2Twins selects avx2IntTwin's kernels: false, avx2IntKernel runs its own.
var avx2Twins bool

// avx2IntTwin runs avx2IntKernel's AVX-VNNI branch through the EVEX twins where avx2Twins
// selects them, and reports whether it did.
func avx2IntTwin(kind int, bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32) bool {
	if !avx2Twins {
		return false
	}
	switch kind {
	case vnniQ8_0:
		avx2ScoresQ80EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case vnniQ4_1:
		avx2ScoresQ41EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case vnniIQ4NL:
		avx2ScoresIQ4NLEVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case vnniQ5_0:
		avx2ScoresQ50EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case vnniQ5_1:
		avx2ScoresQ51EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	default:
		avx2ScoresQ40EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	}
	return true
}
