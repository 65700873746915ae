package kvq

// AccumulateManyMultiStride is c's AccumulateManyMulti (MultiQuery, or AccumulateMany per
// accumulator where c has no multi-query path) with accumulator h at acc[h·stride :
// h·stride+Dim] for h < n instead of acc[h·Dim:], stride ≥ Dim: for a caller whose
// accumulators interleave with others (kvcache's mixed cache: each query head's accumulator
// for the quantized tail followed by the one for its f16 rows). The sums are
// AccumulateManyMulti's bit for bit: f16, q4_0, q8_0 and the rotated formats over them hand the
// stride to their kernels, which address the accumulators by it and read the same values in
// the same order; any other codec, or rows too short for the kernels, accumulates into a
// contiguous copy that is put back.
func AccumulateManyMultiStride(c Codec, acc []float32, stride, n int, w []float32, rows []byte) {
	d := c.Dim()
	if n <= 0 {
		return
	}
	if stride == d || n == 1 {
		accumulateManyMulti(c, acc, n, w, rows)
		return
	}
	switch c := c.(type) {
	case *f16Codec:
		if !c.short() && c.d >= 32 {
			c.accMulti(acc, stride, n, w, rows)
			return
		}
	case *q4_0Codec:
		if c.full > 0 {
			c.accMulti(acc, stride, n, w, rows)
			return
		}
	case *q8_0Codec:
		if c.full > 0 {
			c.accMulti(acc, stride, n, w, rows)
			return
		}
	case *rotCodec:
		AccumulateManyMultiStride(c.inner, acc, stride, n, w, rows)
		c.accOffsets(acc, stride, n, w)
		return
	}
	bp := getPerQuery(n * d)
	t := (*bp)[:n*d]
	for h := 0; h < n; h++ {
		copy(t[h*d:(h+1)*d], acc[h*stride:h*stride+d])
	}
	accumulateManyMulti(c, t, n, w, rows)
	for h := 0; h < n; h++ {
		copy(acc[h*stride:h*stride+d], t[h*d:(h+1)*d])
	}
	perQueryBufs.Put(bp)
}

// accumulateManyMulti is c's MultiQuery path, or AccumulateMany per accumulator.
func accumulateManyMulti(c Codec, acc []float32, n int, w []float32, rows []byte) {
	if mq, ok := c.(MultiQuery); ok {
		mq.AccumulateManyMulti(acc, n, w, rows)
		return
	}
	accumulateManyPerQuery(c, acc, c.Dim(), n, w, rows)
}

// DotManyMultiStride is c's DotManyMulti (MultiQuery, or DotMany per query where c has no
// multi-query path) with query h at q[h·stride : h·stride+Dim] for h < n instead of
// q[h·Dim:], stride ≥ Dim: for a caller whose prepared queries interleave with others
// (kvcache's mixed cache: each query head's query for the quantized tail followed by its raw
// query for the f16 rows). The scores are DotManyMulti's bit for bit: f16's float kernels (wide or not) and
// q4_0's and q8_0's (VNNI or float; rotated, with their offsets) take the stride, or gather a
// group of four queries where they gather one anyway to round it; any other codec scores a
// contiguous copy.
func DotManyMultiStride(c Codec, q []float32, stride, n int, rows []byte, out []float32) {
	d := c.Dim()
	if n <= 0 {
		return
	}
	if stride == d || n == 1 {
		dotManyMulti(c, q, n, rows, out)
		return
	}
	switch c := c.(type) {
	case *f16Codec:
		if !c.short() {
			c.dotMulti(q, stride, n, rows, out)
			return
		}
	case *q4_0Codec:
		if c.full > 0 {
			if !vnniStride(c, q, stride, n, rows, out, nil) {
				td, _ := c.tails()
				multiDotStride(c, multiQ4_0, c.full*BlockSize, td, q, stride, n, rows, out)
			}
			return
		}
	case *q8_0Codec:
		if c.full > 0 {
			if !vnniStride(c, q, stride, n, rows, out, nil) {
				td, _ := c.tails()
				multiDotStride(c, multiQ8_0, c.full*BlockSize, td, q, stride, n, rows, out)
			}
			return
		}
	case *rotCodec:
		if c.muR == nil {
			DotManyMultiStride(c.inner, q, stride, n, rows, out)
			return
		}
		if vnniStride(c.inner, q, stride, n, rows, out, c.muR) {
			return
		}
	}
	bp := getPerQuery(n * d)
	t := (*bp)[:n*d]
	for h := 0; h < n; h++ {
		copy(t[h*d:(h+1)*d], q[h*stride:h*stride+d])
	}
	dotManyMulti(c, t, n, rows, out)
	perQueryBufs.Put(bp)
}

// dotManyMulti is c's MultiQuery path, or DotMany per query.
func dotManyMulti(c Codec, q []float32, n int, rows []byte, out []float32) {
	if mq, ok := c.(MultiQuery); ok {
		mq.DotManyMulti(q, n, rows, out)
		return
	}
	dotManyPerQuery(c, q, c.Dim(), n, rows, out)
}
