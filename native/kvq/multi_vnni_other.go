//go:build !amd64 || purego

package kvq

// hasVNNI is false: the VNNI kernel is amd64 assembly.
const hasVNNI, hasVNNIBW = false, false

// intScores and intScoresBW are false: the integer scores kernels are amd64 assembly.
const intScores, intScoresBW = false, false

func (c *q4_0Codec) q4ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	panic("kvq: no VNNI kernel on this platform")
}

func (c *q8_0Codec) q8ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	panic("kvq: no VNNI kernel on this platform")
}

func (c *q4_1Codec) q41ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	panic("kvq: no VNNI kernel on this platform")
}

func (c *q5_0Codec) q50ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	panic("kvq: no VNNI kernel on this platform")
}

func (c *q5_1Codec) q51ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	panic("kvq: no VNNI kernel on this platform")
}

func (c *iq4nlCodec) iq4ScoresVNNI(q []float32, n int, rows []byte, out, mu []float32) {
	panic("kvq: no VNNI kernel on this platform")
}

// scoresDigits is 0: every DotManyMulti here takes the query as it is.
func scoresDigits(c Codec) (nd, nb int) { return 0, 0 }

func vnniGrid(dst, q []float32, d, nb, nd int) { copy(dst, q) }

func vnniGridUni(dst, q []float32, d, nb int, qmax float32) { copy(dst, q) }

// scoresGridQMax is 127: no rounding of the query here.
func scoresGridQMax(c Codec) float32 { return 127 }

// scoresGridBlock is BlockSize: no rounding of the query here.
func scoresGridBlock(c Codec) int { return BlockSize }

// tq4VNNI is false: the tq4, turbo4 and turbo2 VNNI kernels are amd64 assembly.
func tq4VNNI(d int) bool { return false }

func t2VNNI(d int) bool { return false }

func t3VNNI(d int) bool { return false }

const vnniTQ4, vnniT4, vnniT2, vnniT3 = 0, 1, 2, 3

func tq4ScoresVNNI(kind int, d, rb int, q []float32, n int, rows []byte, out, mu []float32) {
	panic("kvq: no VNNI kernel on this platform")
}

// vnniRuns is false: no VNNI kernels here.
func vnniRuns(c Codec, q []float32, n int, runs [][]byte, out []float32) bool { return false }

// vnniStride is false: no VNNI kernels here.
func vnniStride(c Codec, q []float32, qs, n int, rows []byte, out, mu []float32) bool {
	return false
}
