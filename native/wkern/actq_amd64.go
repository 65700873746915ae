//go:build amd64 && !purego

package wkern

// quantSumsAVX2 is quantSumsGo in assembly (actq_amd64.s) for a block of len(x) values, a
// multiple of 16; ok is false for a block it leaves to quantSumsGo (all zeros, a NaN or an
// infinity).
//
//go:noescape
func quantSumsAVX2(x *float32, q *int8, n int, gs *int32) (d float32, ok bool)

func quantSumsAsm(q []int8, x []float32, g []int32) float32 {
	n := len(x)
	_, _ = q[n-1], g[n/16-1]
	if d, ok := quantSumsAVX2(&x[0], &q[0], n, &g[0]); ok {
		return d
	}
	return quantSumsGo(q, x, g)
}

func init() {
	if hasAVX2 {
		quantSums = quantSumsAsm
	}
}
