//go:build amd64 && !purego

package kvq

// f16Short reports whether this CPU runs the short-row f16 kernels (AVX2, FMA and F16C).
var f16Short = hasAVX2

// The short-row f16 kernels serve f16 rows of d values, d a positive multiple of 8 below 32
// (the rows the 32-value multi kernels leave whole to the generic path). They take one query
// or accumulator and m rows rows[j·rb:]:
//
//	f16ScoresShortAVX2: out[j·ostride/4] = Σ_i q[i]·x_j[i], eight lanes per 8-value chunk
//	  fused-multiply-added over the chunks, the lanes reduced ((a0+a1)+(a2+a3)) +
//	  ((a4+a5)+(a6+a7)) whatever j: |error| ≤ (d/8 + 3)·2⁻²⁴·Σ|q[i]·x[i]|.
//	f16AccShortAVX2: acc[i] += Σ_j w[j·wstride/4]·x_j[i], the rows fused-multiply-added in
//	  four running sums (the first starting from acc; rows past the last whole four all into
//	  the first) added at the end: inside the block formats' AccumulateMany bound (2m + 8)·2⁻²⁴·(|acc₀[i]| + Σ|w_j·x_j[i]|).
//
//go:noescape
func f16ScoresShortAVX2(q *float32, d int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func f16AccShortAVX2(acc *float32, d int, rows *byte, rb, m int, w *float32, wstride int)

func f16ScoresShort(q *float32, d int, rows *byte, rb, m int, out *float32, ostride int) {
	f16ScoresShortAVX2(q, d, rows, rb, m, out, ostride)
}

func f16AccShort(acc *float32, d int, rows *byte, rb, m int, w *float32, wstride int) {
	f16AccShortAVX2(acc, d, rows, rb, m, w, wstride)
}
