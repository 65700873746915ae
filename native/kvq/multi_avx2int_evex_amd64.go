//go:build amd64 && !purego && kvlabevex

package kvq

// The kvlabevex build adds the AVX2 integer scores kernels' AVX-VNNI forms with VPDPBUSD and
// VPDPWSSD in their EVEX encoding (multi_avx2int_evex_amd64.s, gen_avx2int.go): instruction
// for instruction the kernels that AVX-VNNI CPUs run, but runnable on AVX-512 VNNI CPUs without
// AVX-VNNI (AMD Zen 4), so that multi_avx2int_evex_amd64_test.go can check and time them there.
// avx2ScoresQ80S16EVEX is q8_0's former AVX-VNNI kernel (the s16 route), the timings' baseline.

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
func avx2ScoresQ80S16EVEX(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresIQ4NLEVEX(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresQ40Base(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresQ41Base(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresQ50Base(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresQ51Base(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresQ80Base(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

//go:noescape
func avx2ScoresIQ4NLBase(bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32)

// avx2Twins selects avx2IntTwin's kernels: 0 none (avx2IntKernel runs its own), 1 the EVEX
// twins, 2 the twins with avx2ScoresQ80S16EVEX for q8_0, which reads the s16 layout (the
// caller keeps avxVNNI false), 3 the plain kernels' baseline (avx2Scores*Base: gen_avx2int.go's
// base; the caller keeps avxVNNI false).
var avx2Twins int

// avx2IntTwin runs avx2IntKernel's AVX-VNNI branch through the EVEX twins (or the plain
// kernels' baseline) where avx2Twins selects them, and reports whether it did. It calls each
// kernel directly, not through a table of function values: an indirect call would make every
// argument escape, so the driver's stack buffers would move to the heap and a decode step
// would allocate under this build tag.
func avx2IntTwin(kind int, bq *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int, off *float32) bool {
	if avx2Twins == 0 {
		return false
	}
	base := avx2Twins == 3
	switch {
	case kind == vnniQ4_0 && base:
		avx2ScoresQ40Base(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ4_0:
		avx2ScoresQ40EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ4_1 && base:
		avx2ScoresQ41Base(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ4_1:
		avx2ScoresQ41EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ5_0 && base:
		avx2ScoresQ50Base(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ5_0:
		avx2ScoresQ50EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ5_1 && base:
		avx2ScoresQ51Base(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ5_1:
		avx2ScoresQ51EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ8_0 && base:
		avx2ScoresQ80Base(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ8_0 && avx2Twins == 2:
		avx2ScoresQ80S16EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniQ8_0:
		avx2ScoresQ80EVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniIQ4NL && base:
		avx2ScoresIQ4NLBase(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	case kind == vnniIQ4NL:
		avx2ScoresIQ4NLEVEX(bq, aux, stage, nb, rows, rb, m, out, ostride, off)
	default:
		return false
	}
	return true
}

// avx2TwinsOn reports whether avx2IntTwin runs the kernels (the runs flavours then stand aside).
func avx2TwinsOn() bool { return avx2Twins != 0 }
