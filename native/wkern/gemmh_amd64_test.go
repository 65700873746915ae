//go:build amd64 && !purego

package wkern

import "testing"

// BenchmarkGemmMicroH times the f16 two-sliver micro-kernel on L1-resident slivers of gemmKCH
// columns (two sum blocks), in multiply-adds per nanosecond (BenchmarkGemmMicro/12x2p is the
// float32 kernel).
func BenchmarkGemmMicroH(b *testing.B) {
	if !gemmAsm || !gemm512 {
		b.Skip("no AVX-512 micro-kernel on this CPU")
	}
	var ap, ap2 [gemmKCH * gemmMR]uint16
	var tile [gemmNR512 * 2 * gemmMR]float32
	xp := make([]float32, gemmNR512*gemmKCH)
	y := make([]float32, gemmNR512*2*gemmMR)
	for b.Loop() {
		gemmMicroH12x2p(ap[:], ap2[:], xp, gemmKCH, y, 2*gemmMR, true, &tile)
	}
	b.ReportMetric(float64(gemmKCH*gemmNR512*2*gemmMR)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GMAC/s")
}
