package wkern

import (
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/gguf"
)

// BenchmarkMulFloat times the float GEMM on a 512-token batch against one 2048² f16 matrix,
// in multiply-adds per nanosecond of process CPU time.
func BenchmarkMulFloat(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	const rows, cols, n = 2048, 2048, 512
	w := randomFloatRows(r, gguf.F16, rows, cols, 2*cols)
	x := randomVec(r, n*cols)
	y := make([]float32, n*rows)
	c0 := cputime.Process()
	for b.Loop() {
		MulFloat(y, rows, gguf.F16, w, 2*cols, x, n, cols, 0, rows)
	}
	b.ReportMetric(float64(rows*cols*n)*float64(b.N)/float64((cputime.Process()-c0).Nanoseconds()), "cpuGMAC/s")
}
