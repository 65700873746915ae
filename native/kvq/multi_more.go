package kvq

// MultiQuery for bf16, q4_1, q5_0, q5_1, iq4_nl and fp8: the AVX2 kernels where the CPU has
// them (multi_avx2x_amd64.go; on arm64 NEON ones, multi_arm64.go) over the
// whole 32-value groups of a row, the values past them (a block format's short block, the last
// d mod 32 values of a bf16 or fp8 row) added by the scalar tails; without kernels, DotMany and
// AccumulateMany per query.
//
// The kernels apply the block scale (and min) to the codes first, as the f16, q8_0 and q4_0
// kernels do (q4_1 and q5_1 as one fused c·d + m, q5_0 as c·d − 16·d), bf16 exactly, fp8 as the
// e4m3 value / 256 (exact, through f16) with the row scale × 256 applied to each row's sums
// (scores) or to the decoded values (accumulate), tq4's levels looked up exactly and its row
// scale applied the same way. Their errors are inside MultiQuery's bounds with the codecs'
// offset terms (|m̂| for q4_1 and q5_1, 16·|d̂| for q5_0).

// bf16Tail is Σ q[i]·x[i] over the values of a bf16 row past its last whole 32 values.
func bf16Tail(q []float32, row []byte) float32 {
	var s float32
	for i := len(q) &^ 31; i < len(q); i++ {
		s += q[i] * bf16At(row, i)
	}
	return s
}

// bf16TailAcc adds w·x[i] to acc[i] over the values of a bf16 row past its last whole 32.
func bf16TailAcc(acc []float32, w float32, row []byte) {
	for i := len(acc) &^ 31; i < len(acc); i++ {
		acc[i] += float32(w * bf16At(row, i))
	}
}

// DotManyMulti scores n queries against every row within the MultiQuery bounds.
func (c *bf16Codec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	multiDot(c, multiBF16, c.d&^31, bf16Tail, q, n, rows, out)
}

// AccumulateManyMulti adds n weighted sums of the rows within the MultiQuery bounds.
func (c *bf16Codec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	multiAcc(c, multiBF16, c.d&^31, bf16TailAcc, acc, n, w, rows)
}

// fp8Tail is Σ q[i]·x[i] over the values of an fp8 row past its last whole 32 values.
func (c fp8Codec) tail(q []float32, row []byte) float32 {
	s := c.scale(row)
	var sum float32
	for i := len(q) &^ 31; i < len(q); i++ {
		sum += q[i] * (fp8E4M3Table[row[i]] * s)
	}
	return sum
}

// tailAcc adds w·x[i] to acc[i] over the values of an fp8 row past its last whole 32.
func (c fp8Codec) tailAcc(acc []float32, w float32, row []byte) {
	s := c.scale(row)
	for i := len(acc) &^ 31; i < len(acc); i++ {
		acc[i] += float32(w * (fp8E4M3Table[row[i]] * s))
	}
}

// bf16Scores reports whether the codec's multi-query scores go through the bf16 kernel (the
// CPU has it and a row has a whole 32-value group) or the AMX one (rows of 128 values);
// ScoresGrid rounds the query to match.
func (c fp8Codec) bf16Scores() bool {
	return fp8BF16Active() && c.d >= 32 || fp8AMXActive() && c.d == 128
}

// DotManyMulti scores n queries against every row within the MultiQuery bounds.
func (c fp8Codec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if c.bf16Scores() && n > 0 {
		c.scoresBF16(q, n, rows, out, nil)
		return
	}
	multiDot(c, multiFP8, c.d&^31, c.tail, q, n, rows, out)
}

// dotManyMultiMu is muScorer: DotManyMulti plus q_h·mu for every score of query h, with q_h
// as the scores round it (ScoresGrid); the bf16 kernel adds it as it writes the scores.
func (c fp8Codec) dotManyMultiMu(q []float32, n int, rows []byte, out, mu []float32) {
	if c.bf16Scores() && n > 0 {
		c.scoresBF16(q, n, rows, out, mu[:c.d])
		return
	}
	c.DotManyMulti(q, n, rows, out)
	addOffsets(c.d, q, n, out, mu)
}

// AccumulateManyMulti adds n weighted sums of the rows within the MultiQuery bounds.
func (c fp8Codec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	if c.d == 128 && fp8AMXAccActive() {
		fp8AMXAcc(acc, n, w, rows)
		return
	}
	multiAcc(c, fp8AccKernels(), c.d&^31, c.tailAcc, acc, n, w, rows)
}

// blockDotMulti and blockAccMulti are MultiQuery for a block format without a short-row
// kernel: k over the whole blocks, the short block through tails; rows of one short block
// (d < 32) go per query.
func (c *blockCodec) blockDotMulti(self Codec, k *multiKernels, q []float32, n int, rows []byte, out []float32) {
	if c.full == 0 {
		k = nil
	}
	td, _ := c.tails()
	multiDot(self, k, c.full*BlockSize, td, q, n, rows, out)
}

func (c *blockCodec) blockAccMulti(self Codec, k *multiKernels, acc []float32, n int, w []float32, rows []byte) {
	if c.full == 0 {
		k = nil
	}
	_, ta := c.tails()
	multiAcc(self, k, c.full*BlockSize, ta, acc, n, w, rows)
}

// DotManyMulti scores n queries against every row within the MultiQuery bounds.
func (c *q4_1Codec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if intScores && c.full > 0 && n > 0 {
		c.q41ScoresVNNI(q, n, rows, out, nil)
		return
	}
	c.blockDotMulti(c, multiQ4_1, q, n, rows, out)
}

// dotManyMultiMu is q8_0Codec.dotManyMultiMu for q4_1.
func (c *q4_1Codec) dotManyMultiMu(q []float32, n int, rows []byte, out, mu []float32) {
	if intScores && c.full > 0 && n > 0 {
		c.q41ScoresVNNI(q, n, rows, out, mu)
		return
	}
	c.DotManyMulti(q, n, rows, out)
	addOffsets(c.d, q, n, out, mu)
}

// AccumulateManyMulti adds n weighted sums of the rows within the MultiQuery bounds.
func (c *q4_1Codec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	c.blockAccMulti(c, intAccOr(multiQ4_1, intAccQ4_1), acc, n, w, rows)
}

// DotManyMulti scores n queries against every row within the MultiQuery bounds.
func (c *q5_0Codec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if intScoresBW && c.full > 0 && n > 0 {
		c.q50ScoresVNNI(q, n, rows, out, nil)
		return
	}
	c.blockDotMulti(c, multiQ5_0, q, n, rows, out)
}

// dotManyMultiMu is q8_0Codec.dotManyMultiMu for q5_0.
func (c *q5_0Codec) dotManyMultiMu(q []float32, n int, rows []byte, out, mu []float32) {
	if intScoresBW && c.full > 0 && n > 0 {
		c.q50ScoresVNNI(q, n, rows, out, mu)
		return
	}
	c.DotManyMulti(q, n, rows, out)
	addOffsets(c.d, q, n, out, mu)
}

// AccumulateManyMulti adds n weighted sums of the rows within the MultiQuery bounds.
func (c *q5_0Codec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	c.blockAccMulti(c, intAccOr(multiQ5_0, intAccQ5_0), acc, n, w, rows)
}

// DotManyMulti scores n queries against every row within the MultiQuery bounds.
func (c *q5_1Codec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if intScoresBW && c.full > 0 && n > 0 {
		c.q51ScoresVNNI(q, n, rows, out, nil)
		return
	}
	c.blockDotMulti(c, multiQ5_1, q, n, rows, out)
}

// dotManyMultiMu is q8_0Codec.dotManyMultiMu for q5_1.
func (c *q5_1Codec) dotManyMultiMu(q []float32, n int, rows []byte, out, mu []float32) {
	if intScoresBW && c.full > 0 && n > 0 {
		c.q51ScoresVNNI(q, n, rows, out, mu)
		return
	}
	c.DotManyMulti(q, n, rows, out)
	addOffsets(c.d, q, n, out, mu)
}

// AccumulateManyMulti adds n weighted sums of the rows within the MultiQuery bounds.
func (c *q5_1Codec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	c.blockAccMulti(c, intAccOr(multiQ5_1, intAccQ5_1), acc, n, w, rows)
}

// DotManyMulti scores n queries against every row within the MultiQuery bounds.
func (c *iq4nlCodec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if intScoresBW && c.full > 0 && n > 0 {
		c.iq4ScoresVNNI(q, n, rows, out, nil)
		return
	}
	c.blockDotMulti(c, multiIQ4NL, q, n, rows, out)
}

// dotManyMultiMu is q8_0Codec.dotManyMultiMu for iq4_nl.
func (c *iq4nlCodec) dotManyMultiMu(q []float32, n int, rows []byte, out, mu []float32) {
	if intScoresBW && c.full > 0 && n > 0 {
		c.iq4ScoresVNNI(q, n, rows, out, mu)
		return
	}
	c.DotManyMulti(q, n, rows, out)
	addOffsets(c.d, q, n, out, mu)
}

// AccumulateManyMulti adds n weighted sums of the rows within the MultiQuery bounds.
func (c *iq4nlCodec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	c.blockAccMulti(c, intAccOr(multiIQ4NL, intAccIQ4NL), acc, n, w, rows)
}

// DotManyMulti scores n prepared queries against every row (rotated domain) within the
// MultiQuery bounds: through the VNNI kernels where the CPU has them (vnniKind,
// multi_tq4vnni_amd64.go), else turbo4 through tq4's float kernels with its f16 row scale (the
// codes and levels are tq4's), turbo3 and turbo2 through their own (bit-stream codes shifted out
// of dwords), without kernels in Go, dotManyMultiGo.
func (c *lmCodec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if k, ok := c.vnniKind(); ok && n > 0 {
		tq4ScoresVNNI(k, c.d, c.nb+2, q, n, rows, out, nil)
		return
	}
	nv := c.d &^ 31
	if k := c.streamKernels(); k != nil && nv > 0 && n > 0 {
		multiDot(c, k, nv, c.tailStream, q, n, rows, out)
		return
	}
	if c.bits != 4 || multiTurbo4 == nil || nv == 0 || n <= 0 {
		c.dotManyMultiGo(q, n, rows, out)
		return
	}
	bp := tq4Scratch(n, c.d)
	defer perQueryBufs.Put(bp)
	qp := *bp
	tq4Permute(qp, q[:n*c.d], n, c.d)
	tail := func(q []float32, row []byte) float32 {
		return tq4Dot(q[nv:], row[nv/2:c.nb]) * c.scale(row)
	}
	multiDot(c, multiTurbo4, nv, tail, qp, n, rows, out)
}

// vnniKind is the VNNI scores kernel of c's rows on this CPU (turbo4's, turbo3's, turbo2's),
// false for none.
func (c *lmCodec) vnniKind() (int, bool) {
	switch {
	case c.bits == 4 && tq4VNNI(c.d):
		return vnniT4, true
	case c.bits == 2 && t2VNNI(c.d):
		return vnniT2, true
	case c.bits == 3 && t3VNNI(c.d):
		return vnniT3, true
	}
	return 0, false
}

// dotManyMultiMu is muScorer: DotManyMulti plus q̃_h·mu for every score of query h (q̃_h as
// the scores round it, ScoresGrid); the VNNI kernels start each score from it.
func (c *lmCodec) dotManyMultiMu(q []float32, n int, rows []byte, out, mu []float32) {
	if k, ok := c.vnniKind(); ok && n > 0 {
		tq4ScoresVNNI(k, c.d, c.nb+2, q, n, rows, out, mu[:c.d])
		return
	}
	c.DotManyMulti(q, n, rows, out)
	addOffsets(c.d, q, n, out, mu)
}

// AccumulateManyMulti adds n weighted sums of the rows (rotated domain) within the MultiQuery
// bounds: through the integer kernels where the CPU has them and d is a multiple of 64
// (turboIntAcc, multi_turboacc_amd64.go, within that bound), else through the float kernels as
// DotManyMulti.
func (c *lmCodec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	if k := turboAccKernels(c); k != nil && n > 0 {
		multiAcc(c, k, c.d, nil, acc, n, w, rows)
		return
	}
	nv := c.d &^ 31
	if k := c.streamKernels(); k != nil && nv > 0 && n > 0 {
		multiAcc(c, k, nv, c.tailAccStream, acc, n, w, rows)
		return
	}
	if c.bits != 4 || multiTurbo4 == nil || nv == 0 || n <= 0 {
		c.accumulateManyMultiGo(acc, n, w, rows)
		return
	}
	bp := tq4Scratch(n, c.d)
	defer perQueryBufs.Put(bp)
	ap := *bp
	tq4Permute(ap, acc[:n*c.d], n, c.d)
	tail := func(acc []float32, w float32, row []byte) {
		tq4Axpy(acc[nv:], w*c.scale(row), row[nv/2:c.nb])
	}
	multiAcc(c, multiTurbo4, nv, tail, ap, n, w, rows)
	tq4Unpermute(acc[:n*c.d], ap, n, c.d)
}

// streamKernels is turbo3's or turbo2's kernels (bit-stream codes), nil for turbo4 or none.
func (c *lmCodec) streamKernels() *multiKernels {
	switch c.bits {
	case 2:
		return multiTurbo2
	case 3:
		return multiTurbo3
	}
	return nil
}

// codeAt is code i of a turbo2 or turbo3 row (bits b·i … b·i+b−1 of the little-endian stream;
// the second byte read may be the scale's, inside the row).
func (c *lmCodec) codeAt(row []byte, i int) int {
	b := c.bits * i
	return int(uint16(row[b>>3])|uint16(row[b>>3+1])<<8) >> (b & 7) & (1<<c.bits - 1)
}

// tailStream is Σ q[i]·ŷ[i] over a turbo2 or turbo3 row's values past its last whole 32.
func (c *lmCodec) tailStream(q []float32, row []byte) float32 {
	var s float32
	for i := c.d &^ 31; i < c.d; i++ {
		s += q[i] * c.levels[c.codeAt(row, i)]
	}
	return s * c.scale(row)
}

// tailAccStream adds w·ŷ[i] to acc[i] over a turbo2 or turbo3 row's values past its last
// whole 32.
func (c *lmCodec) tailAccStream(acc []float32, w float32, row []byte) {
	ws := w * c.scale(row)
	for i := c.d &^ 31; i < c.d; i++ {
		acc[i] += ws * c.levels[c.codeAt(row, i)]
	}
}
