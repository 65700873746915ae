//go:build !amd64 || purego

package kvq

// f16AccWide is nil here: the wide f16 accumulate kernels are amd64 assembly
// (multi_f16acc_amd64.go).
func f16AccWide(c *f16Codec, m int) func(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int) {
	return nil
}

// f16ScoresWide is nil here: the wide f16 scores kernel is amd64 assembly
// (multi_f16acc_amd64.go).
func f16ScoresWide(c *f16Codec, m int) func(q *float32, qs int, rows *byte, rb, m int, out *float32) {
	return nil
}
