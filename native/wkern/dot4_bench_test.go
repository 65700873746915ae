package wkern

import (
	"math/rand/v2"
	"testing"

	"github.com/kvlab/kvlab/internal/cputime"
)

// BenchmarkDotRaw compares one-token and four-token kernels on one cache-resident row, in
// multiply-adds per nanosecond of process CPU time (steadier than wall time on a busy machine).
func BenchmarkDotRaw(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const cols = 2048
	for _, typ := range intTypes {
		k, _ := KernelOf(typ)
		if k.dot4 == nil {
			continue
		}
		row := randomRows(r, typ, 1, cols)
		x := randomVec(r, 4*cols)
		var a Act
		a.Quantize(k.Format(), x, 4, cols)
		var out [4]float32
		b.Run(typ.String()+"/x1", func(b *testing.B) {
			c0 := cputime.Process()
			for b.Loop() {
				for t := 0; t < 4; t++ {
					out[t] = k.dot(row, &a, t)
				}
			}
			b.ReportMetric(float64(4*cols)*float64(b.N)/float64((cputime.Process()-c0).Nanoseconds()), "cpuGMAC/s")
		})
		b.Run(typ.String()+"/x4", func(b *testing.B) {
			c0 := cputime.Process()
			for b.Loop() {
				k.dot4(row, &a, 0, &out)
			}
			b.ReportMetric(float64(4*cols)*float64(b.N)/float64((cputime.Process()-c0).Nanoseconds()), "cpuGMAC/s")
		})
	}
}
