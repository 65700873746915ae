//go:build !amd64 || purego

package kvq

// Without the assembly kernels short f16 rows run DotMany and AccumulateMany per query.
var f16Short = false

func f16ScoresShort(q *float32, d int, rows *byte, rb, m int, out *float32, ostride int) {
	panic("kvq: no short-row f16 kernels")
}

func f16AccShort(acc *float32, d int, rows *byte, rb, m int, w *float32, wstride int) {
	panic("kvq: no short-row f16 kernels")
}
