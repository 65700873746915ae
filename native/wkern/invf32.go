package wkern

// Batch-invariant products. In a batched forward pass the outputs of one sequence must not
// depend on the other sequences sharing the pass, so every (weight row, token) output of the
// functions here is produced by one fixed sequence of float operations, whatever the number
// of tokens multiplied together and however the rows are split across calls or threads: the
// kernels hold a block of rows × tokens of accumulators in registers (each weight block read
// once for all the tokens of the block), and the one-token case runs the same per-output
// sequence with fewer tokens. The integer block sums of the quantized types are exact, so only
// the float steps need a fixed order.

// invRowTile is the bytes of weight rows MulF32/MulF16 keep hot while every token passes them.
const invRowTile = 16 << 10

// MulF32 writes y[t·ystride + r] = Σ_i w[r·cols+i]·x[t·cols+i] for rows lo ≤ r < hi and
// tokens t < n. Each output is the same float32 sum, in the same order, whatever n, lo and hi
// (batch-invariant), so a token's results do not depend on the tokens multiplied with it.
func MulF32(y []float32, ystride int, w []float32, cols int, x []float32, n, lo, hi int) {
	if hi <= lo || n <= 0 {
		return
	}
	_ = w[hi*cols-1]
	_ = x[n*cols-1]
	_ = y[(n-1)*ystride+hi-1]
	if !hasInvF32 {
		for t := 0; t < n; t++ {
			xt := x[t*cols : (t+1)*cols]
			for r := lo; r < hi; r++ {
				y[t*ystride+r] = invDotF32Go(w[r*cols:(r+1)*cols], xt)
			}
		}
		return
	}
	mulF32Asm(y, ystride, w, cols, x, n, lo, hi)
}

// MulF16 is MulF32 for a matrix of IEEE binary16 weights: row r is the 2·cols bytes at
// w[r·rowBytes:].
func MulF16(y []float32, ystride int, w []byte, rowBytes, cols int, x []float32, n, lo, hi int) {
	if hi <= lo || n <= 0 {
		return
	}
	_ = w[(hi-1)*rowBytes+2*cols-1]
	_ = x[n*cols-1]
	_ = y[(n-1)*ystride+hi-1]
	if !hasInvF32 {
		for t := 0; t < n; t++ {
			xt := x[t*cols : (t+1)*cols]
			for r := lo; r < hi; r++ {
				y[t*ystride+r] = invDotF16Go(w[r*rowBytes:r*rowBytes+2*cols], xt)
			}
		}
		return
	}
	mulF16Asm(y, ystride, w, rowBytes, cols, x, n, lo, hi)
}

// invDotF32Go is the portable batch-invariant float32 dot: eight partial sums, reduced in
// the kernels' order, then the tail. One function for every output keeps one order: the
// explicit conversions forbid fusing a multiply into an add.
func invDotF32Go(w, x []float32) float32 {
	x = x[:len(w)]
	var a [8]float32
	i := 0
	for ; i+8 <= len(w); i += 8 {
		for k := range a {
			a[k] += float32(w[i+k] * x[i+k])
		}
	}
	s := float32((a[0]+a[4])+(a[1]+a[5])) + float32((a[2]+a[6])+(a[3]+a[7]))
	return invTailF32(s, w[i:], x[i:])
}

// invDotF16Go is invDotF32Go for a row of f16 weights.
func invDotF16Go(w []byte, x []float32) float32 {
	n := len(w) / 2
	x = x[:n]
	var a [8]float32
	i := 0
	for ; i+8 <= n; i += 8 {
		for k := range a {
			a[k] += float32(f16(w[2*(i+k):]) * x[i+k])
		}
	}
	s := float32((a[0]+a[4])+(a[1]+a[5])) + float32((a[2]+a[6])+(a[3]+a[7]))
	return invTailF16(s, w[2*i:], x[i:])
}

// invTailF32 adds the products of the last cols mod 8 values to s in order.
func invTailF32(s float32, w, x []float32) float32 {
	for i, v := range w {
		s += float32(v * x[i])
	}
	return s
}

// invTailF16 is invTailF32 for f16 weights.
func invTailF16(s float32, w []byte, x []float32) float32 {
	for i := 0; 2*i+1 < len(w); i++ {
		s += float32(f16(w[2*i:]) * x[i])
	}
	return s
}
