package kvq

import "sync"

// MultiQuery is an optional fast path of a Codec for grouped-query attention: n prepared
// queries scored against, or n weight vectors accumulated over, the same rows in one pass, so
// each stored row is read once for every query head that shares its KV head. Callers check for
// it with a type assertion and fall back to DotMany and AccumulateMany per query.
//
// Layouts (Dim = the codec's Dim, m = the number of rows):
//
//	q    n × Dim     query h at q[h·Dim:(h+1)·Dim]
//	out  m × n       out[j·n+h] = the score of row j for query h
//	acc  n × Dim     accumulator h at acc[h·Dim:(h+1)·Dim]
//	w    m × n       w[j·n+h] = the weight of row j for accumulator h
//
// Reference semantics and bounds: DotManyMulti(q, n, rows, out)[j·n+h] agrees with
// Dot(q_h, row j) within the codec's DotMany bound (1e-5·Σ|q[i]|·(|x[i]| + o_b) for the block
// formats, tq4 included with x its rotated values), and AccumulateManyMulti with a loop of
// AccumulateScaled within the block formats' AccumulateMany bound (block_fast.go), for f16
// too, which is not bit-identical here. The SIMD kernels (every format but f32 with AVX-512 or
// AVX2 + FMA + F16C, fp8's AVX-512 one with AVX-512 BW too; every format but f32
// with arm64 NEON, multi_arm64.go; see multi_more.go for the formats
// beyond f16, q8_0, q4_0 and tq4, whose offset terms o_b enter both bounds) apply the block or
// row scale to the codes first (exact
// for f16 scales times 4- and 8-bit codes; one rounding for tq4's f32 scale; tq4's and the
// turbo tiers' AVX-512 kernels, multi_turbo_amd64.go, and turbo3's and turbo2's NEON ones
// instead multiply a row's reduced sums, or its weights, by its scale: one rounding too), fuse each multiply with its add, and sum a row's products in 16 (AVX2: 8) lanes reduced pairwise:
// |DotManyMulti − Dot| ≤ (d/8 + 6)·2⁻²⁴·Σ|q[i]·x[i]|, inside the DotMany bounds for rows of up
// to 1024 values. On CPUs with AVX-512 VNNI, q4_0, q4_1, q5_0, q5_1, q8_0 and iq4_nl scores go
// through integer kernels instead (multi_vnni_amd64.go; on AVX2 CPUs without AVX-512 their
// AVX2 ports, multi_avx2int_amd64.go, same bound, same scores), and so do tq4's and turbo4's (with
// AVX-512 VBMI too, turbo3's and turbo2's; multi_tq4vnni_amd64.go) for d a multiple of 32
// (turbo2: 64), their levels being integer multiples of one unit (on CPUs with AVX2 but not
// AVX-512, those four formats' through AVX2 kernels, multi_tq4avx2_amd64.go): the query is
// rounded to integers per 32-value block (ScoresGrid; one byte, two for q8_0), or per query, all
// its whole 32-value blocks under one scale (scoresGridBlock), for turbo2 and turbo3 on AMD
// Zen 4 (t23Uni), tq4 there where it takes its two-chunk kernels (tq4Uni), and turbo2, turbo3
// and turbo4 through their plain AVX2 kernels (t2UniAVX2, t3UniAVX2, t4UniAVX2; turbo3's digits
// to |Q| ≤ 93, turbo4's to 78), adding at most u·Σ_b max_{i∈b}|q[i]|·Σ_{i∈b}|x[i]| to that
// bound, u = (1 + 2⁻⁶)/254, (1 + 2⁻⁶)/186 and (1 + 2⁻⁶)/156 (turbo3's and turbo4's uniform
// AVX2 grids) or (1 + 2⁻⁶)/65278,
// b running over blocks of scoresGridBlock values (the whole query where it is one block);
// DotManyMulti(q) agrees with Dot of the rounded query within the float bound. On CPUs with
// AVX-512 VBMI and BF16 too, fp8 scores go through bf16 (multi_fp8bf16_amd64.go): the query
// rounded to bf16 (ScoresGrid, u = 2⁻⁸, every value within 2⁻⁸ of itself), the codes exact;
// on Intel CPUs they stay float32 (multi_fp8f32_amd64.go: the float bound alone).
// Without kernels
// (another architecture, the purego tag, an older CPU) both are exactly DotMany and
// AccumulateMany per query. A query's results never depend on n or on
// its place among the queries, so runs are deterministic whatever the grouping.
type MultiQuery interface {
	DotManyMulti(q []float32, n int, rows []byte, out []float32)
	AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte)
}

// multiKernels are one format's SIMD kernels over four queries at once. They read the first nv
// values of each row (nv a positive multiple of 32: the whole 32-value blocks of a block
// format, or of a plain or tq4 row) and leave the rest of the row to the caller.
//
//	scores(q, d, nv, rows, rb, m, out, ostride): for the four queries q[h·d:], h < 4, and the m
//	  rows rows[j·rb:], writes out[j·ostride/4 + h] = Σ_{i<nv} q_h[i]·x_j[i] (ostride in bytes).
//	acc(acc, d, nv, rows, rb, m, w, wstride): for the four accumulators acc[h·d:], adds
//	  Σ_j w[j·wstride/4 + h]·x_j[i] to acc_h[i] for i < nv (wstride in bytes).
type multiKernels struct {
	scores func(q *float32, d, nv int, rows *byte, rb, m int, out *float32, ostride int)
	acc    func(acc *float32, d, nv int, rows *byte, rb, m int, w *float32, wstride int)
	// w8step is the half-step (AccumulateStep) of an integer acc kernel with 8-bit weights:
	// 2⁻⁸ (signed) or 2⁻⁹ (unsigned); 0 for the others.
	w8step float64
}

// multiBatch is the number of rows the generic paths stage at a time on the stack.
const multiBatch = 64

// multiScratchDim is the largest Dim whose padded queries and accumulators are staged in a
// multiScratch.
const multiScratchDim = 256

// multiScratch is the staging of a last group of fewer than four queries or accumulators,
// pooled: an array on the stack escapes through the kernel calls (a heap allocation per call).
type multiScratch struct {
	pad [4 * multiScratchDim]float32
	w   [multiBatch * 4]float32
}

var multiScratches = sync.Pool{New: func() any { return new(multiScratch) }}

// multiDot is DotManyMulti for codec c: the kernels over groups of four queries (a last
// group of two through k's two-query variant where it has one, multiTwo, a last one padded to
// two there; any other last group padded with zero queries to four), then tail(q_h, row) added for the values past nv. Without
// kernels (k nil or nv 0) it is DotMany per query.
func multiDot(c Codec, k *multiKernels, nv int, tail func(q []float32, row []byte) float32,
	q []float32, n int, rows []byte, out []float32) {
	multiDotStride(c, k, nv, tail, q, c.Dim(), n, rows, out)
}

// multiDotStride is multiDot with query h at q[h·qs : h·qs+Dim] (qs ≥ Dim): the kernels take
// the queries' stride as they take Dim, so the scores are multiDot's bit for bit.
func multiDotStride(c Codec, k *multiKernels, nv int, tail func(q []float32, row []byte) float32,
	q []float32, qs, n int, rows []byte, out []float32) {
	d, rb := c.Dim(), c.RowBytes()
	if n <= 0 {
		return
	}
	m := len(out) / n
	q, rows, out = q[:(n-1)*qs+d], rows[:m*rb], out[:m*n]
	if m == 0 {
		return
	}
	if k == nil || nv == 0 {
		dotManyPerQuery(c, q, qs, n, rows, out)
		return
	}
	h := 0
	for ; h+4 <= n; h += 4 {
		k.scores(&q[h*qs], qs, nv, &rows[0], rb, m, &out[h], 4*n)
	}
	if k2 := multiTwo(k); n-h == 2 && k2 != nil {
		k2.scores(&q[h*qs], qs, nv, &rows[0], rb, m, &out[h], 4*n)
	} else if r := n - h; r > 0 {
		kp, g := k, 4 // a lone query padded to two where the two-query variant exists
		if r == 1 && k2 != nil {
			kp, g = k2, 2
		}
		sc := multiScratches.Get().(*multiScratch)
		defer multiScratches.Put(sc)
		qp := padQueries(sc.pad[:], q[h*qs:], qs, r, d)
		tmp := &sc.w
		for j0 := 0; j0 < m; j0 += multiBatch {
			mb := min(multiBatch, m-j0)
			kp.scores(&qp[0], d, nv, &rows[j0*rb], rb, mb, &tmp[0], 4*g)
			// Element by element: a copy of r < 4 values per row is a memmove call per row,
			// which cost as much as the kernel at a few hundred rows of 64 values.
			for j := 0; j < mb; j++ {
				o, t := out[(j0+j)*n+h:(j0+j)*n+n], tmp[g*j:g*j+g]
				for i := range o {
					o[i] = t[i]
				}
			}
		}
	}
	if nv < d {
		for j := 0; j < m; j++ {
			row := rows[j*rb : (j+1)*rb]
			for h := 0; h < n; h++ {
				out[j*n+h] += tail(q[h*qs:h*qs+d], row)
			}
		}
	}
}

// multiAcc is AccumulateManyMulti for codec c: the kernels over groups of four accumulators
// (a last group of two through the two-query variant where there is one, a last one padded to
// two there, any other padded with zero weights to four), then tail(acc_h, w, row) for the values past nv.
// Without kernels it is AccumulateMany per accumulator.
func multiAcc(c Codec, k *multiKernels, nv int, tail func(acc []float32, w float32, row []byte),
	acc []float32, n int, w []float32, rows []byte) {
	multiAccStride(c, k, nv, tail, acc, c.Dim(), n, w, rows)
}

// multiAccStride is multiAcc with accumulator h at acc[h·as : h·as+Dim] (as ≥ Dim): the
// kernels take the accumulators' stride as they take Dim, so the sums are multiAcc's bit for
// bit wherever the accumulators lie.
func multiAccStride(c Codec, k *multiKernels, nv int, tail func(acc []float32, w float32, row []byte),
	acc []float32, as, n int, w []float32, rows []byte) {
	d, rb := c.Dim(), c.RowBytes()
	if n <= 0 {
		return
	}
	m := len(w) / n
	acc, w, rows = acc[:(n-1)*as+d], w[:m*n], rows[:m*rb]
	if m == 0 {
		return
	}
	if k == nil || nv == 0 {
		accumulateManyPerQuery(c, acc, as, n, w, rows)
		return
	}
	h := 0
	for ; h+4 <= n; h += 4 {
		k.acc(&acc[h*as], as, nv, &rows[0], rb, m, &w[h], 4*n)
	}
	if k2 := multiTwo(k); n-h == 2 && k2 != nil {
		k2.acc(&acc[h*as], as, nv, &rows[0], rb, m, &w[h], 4*n)
	} else if r := n - h; r > 0 {
		kp, g := k, 4 // a lone accumulator padded to two where the two-query variant exists
		if r == 1 && k2 != nil {
			kp, g = k2, 2
		}
		sc := multiScratches.Get().(*multiScratch)
		defer multiScratches.Put(sc)
		ap := padQueries(sc.pad[:], acc[h*as:], as, r, d)
		wt := &sc.w
		for j0 := 0; j0 < m; j0 += multiBatch {
			mb := min(multiBatch, m-j0)
			// Each row's r weights and g − r zeros, element by element (see multiDot).
			for j := 0; j < mb; j++ {
				t, s := wt[g*j:g*j+g], w[(j0+j)*n+h:(j0+j)*n+n]
				for i := range t {
					if i < len(s) {
						t[i] = s[i]
					} else {
						t[i] = 0
					}
				}
			}
			kp.acc(&ap[0], d, nv, &rows[j0*rb], rb, mb, &wt[0], 4*g)
		}
		for i := 0; i < r; i++ {
			copy(acc[(h+i)*as:(h+i)*as+nv], ap[i*d:i*d+nv])
		}
	}
	if nv < d {
		for j := 0; j < m; j++ {
			row := rows[j*rb : (j+1)*rb]
			for h := 0; h < n; h++ {
				tail(acc[h*as:h*as+d], w[j*n+h], row)
			}
		}
	}
}

// padQueries copies r ≤ 4 queries of d values, query i at q[i·qs : i·qs+d] (qs ≥ d), into
// four contiguous ones, the rest zero: into buf when it holds 4·d values, else into a new slice.
func padQueries(buf, q []float32, qs, r, d int) []float32 {
	if len(buf) < 4*d {
		buf = make([]float32, 4*d)
	}
	qp := buf[:4*d]
	for i := 0; i < r; i++ {
		copy(qp[i*d:(i+1)*d], q[i*qs:i*qs+d])
	}
	clear(qp[r*d:])
	return qp
}

// dotManyPerQuery is DotManyMulti as DotMany per query: one call per query over all the rows,
// into a pooled buffer (a stack buffer would escape through the interface call); query h at
// q[h·qs:] (qs ≥ Dim).
func dotManyPerQuery(c Codec, q []float32, qs, n int, rows []byte, out []float32) {
	d := c.Dim()
	m := len(out) / n
	if n == 1 {
		c.DotMany(q[:d], rows, out[:m])
		return
	}
	bp := getPerQuery(m)
	tmp := (*bp)[:m]
	for h := 0; h < n; h++ {
		c.DotMany(q[h*qs:h*qs+d], rows, tmp)
		for j, x := range tmp {
			out[j*n+h] = x
		}
	}
	perQueryBufs.Put(bp)
}

// accumulateManyPerQuery is AccumulateManyMulti as AccumulateMany per accumulator, one call
// per accumulator over all the rows, accumulator h at acc[h·as:] (as ≥ Dim).
func accumulateManyPerQuery(c Codec, acc []float32, as, n int, w []float32, rows []byte) {
	d := c.Dim()
	m := len(w) / n
	if n == 1 {
		c.AccumulateMany(acc[:d], w[:m], rows)
		return
	}
	bp := getPerQuery(m)
	tmp := (*bp)[:m]
	for h := 0; h < n; h++ {
		for j := range tmp {
			tmp[j] = w[j*n+h]
		}
		c.AccumulateMany(acc[h*as:h*as+d], tmp, rows)
	}
	perQueryBufs.Put(bp)
}

var perQueryBufs sync.Pool // *[]float32

// getPerQuery returns a pooled buffer of at least m floats.
func getPerQuery(m int) *[]float32 {
	bp, _ := perQueryBufs.Get().(*[]float32)
	if bp == nil {
		bp = new([]float32)
	}
	if cap(*bp) < m {
		*bp = make([]float32, m)
	}
	return bp
}

// f16Tail is Σ q[i]·x[i] over the values of an f16 row past its last whole 32 values.
func f16Tail(q []float32, row []byte) float32 {
	var s float32
	for i := len(q) &^ 31; i < len(q); i++ {
		s += q[i] * f16At(row, i)
	}
	return s
}

// f16TailAcc adds w·x[i] to acc[i] over the values of an f16 row past its last whole 32.
func f16TailAcc(acc []float32, w float32, row []byte) {
	for i := len(acc) &^ 31; i < len(acc); i++ {
		acc[i] += float32(w * f16At(row, i))
	}
}

// short reports whether c's rows go to the short-row f16 kernels: d a multiple of 8 below 32,
// on a CPU that has them (multi_short_amd64.go states their bounds, inside MultiQuery's).
func (c *f16Codec) short() bool { return f16Short && c.d < 32 && c.d%8 == 0 }

// DotManyMulti scores n queries against every row within the MultiQuery bounds.
func (c *f16Codec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if c.short() && n > 0 {
		d, rb := c.d, c.rb
		m := len(out) / n
		if m == 0 {
			return
		}
		q, rows, out = q[:n*d], rows[:m*rb], out[:m*n]
		for h := 0; h < n; h++ {
			f16ScoresShort(&q[h*d], d, &rows[0], rb, m, &out[h], 4*n)
		}
		return
	}
	c.dotMulti(q, c.d, n, rows, out)
}

// dotMulti is DotManyMulti for rows of 32 values or more, query h at q[h·qs:] (qs ≥ Dim): for
// two queries over rows of 64 values, a short run of at least eight rows goes through the wide
// scores kernel (multi_f16acc_amd64.go), whose scores multiDotStride's two-query kernel's are
// bit for bit, in whole steps of eight rows, the last step over the run's last eight rows;
// anything else through multiDotStride.
func (c *f16Codec) dotMulti(q []float32, qs, n int, rows []byte, out []float32) {
	if m := len(out) / 2; n == 2 {
		if k := f16ScoresWide(c, m); k != nil {
			rb, whole := c.rb, m&^7
			q, rows = q[:qs+c.d], rows[:m*rb]
			k(&q[0], qs, &rows[0], rb, whole, &out[0])
			if whole == m {
				return
			}
			// The rows past the last whole step: the kernel again over the last eight rows
			// (m ≥ 8). A row's scores depend only on its bytes and the queries, so the rows
			// of the last whole step among them get their scores again, the same bits. One
			// more step of the kernel costs less than the two-query kernel's call for the
			// few rows (a mixed cache's f16 window is 64 to 72 rows).
			k(&q[0], qs, &rows[(m-8)*rb], rb, 8, &out[2*(m-8)])
			return
		}
	}
	multiDotStride(c, multiF16, c.d&^31, f16Tail, q, qs, n, rows, out)
}

// AccumulateManyMulti adds n weighted sums of the rows within the MultiQuery bounds.
func (c *f16Codec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	if c.short() && n > 0 {
		d, rb := c.d, c.rb
		m := len(w) / n
		if m == 0 {
			return
		}
		acc, w, rows = acc[:n*d], w[:m*n], rows[:m*rb]
		for h := 0; h < n; h++ {
			f16AccShort(&acc[h*d], d, &rows[0], rb, m, &w[h], 4*n)
		}
		return
	}
	c.accMulti(acc, c.d, n, w, rows)
}

// accMulti is AccumulateManyMulti for rows of 32 values or more, accumulator h at acc[h·as:]
// (as ≥ Dim).
func (c *f16Codec) accMulti(acc []float32, as, n int, w []float32, rows []byte) {
	if m := len(w) / 2; n == 2 && m > 0 {
		// Two accumulators over a short run of rows of 64 or 128 values: each row once, both
		// accumulators in registers (multi_f16acc_amd64.go), the two-query kernel's sums.
		if k := f16AccWide(c, m); k != nil {
			d, rb := c.d, c.rb
			acc, w, rows = acc[:as+d], w[:2*m], rows[:m*rb]
			k(&acc[0], as, d, &rows[0], rb, m, &w[0], 8)
			return
		}
	}
	multiAccStride(c, multiF16, c.d&^31, f16TailAcc, acc, as, n, w, rows)
}

// tails returns the tail functions of a block codec: its short block, read after the full
// blocks, decoded into one scratch buffer per call (nil functions when rows have none).
func (c *blockCodec) tails() (func(q []float32, row []byte) float32, func(acc []float32, w float32, row []byte)) {
	if c.tail == 0 {
		return nil, nil
	}
	off, nv := c.full*c.fullBytes, c.full*BlockSize
	x := c.tailScratch()
	return func(q []float32, row []byte) float32 { return c.tailDot(q[nv:], row[off:], x) },
		func(acc []float32, w float32, row []byte) { c.tailAccumulate(acc[nv:], w, row[off:], x) }
}

// shortBatch decodes rows j0 … j0+mb−1 of rows (each one short block of c.tail values, q8_0
// or q4_0) into x, row j at x[(j−j0)·c.tail:], exactly as q8_0Decode and q4_0Decode do (the
// same products of the same float32 codes and scale).
func (c *blockCodec) shortBatch(x *[multiBatch * BlockSize]float32, rows []byte, j0, mb int) {
	d, rb := c.tail, c.rb
	switch {
	case c.k == q8_0Kind && d == 8:
		// Unrolled: the loop and the calls cost more than the arithmetic at eight values.
		for j := 0; j < mb; j++ {
			blk := (*[10]byte)(rows[(j0+j)*rb:])
			s, xj := f16Table[uint16(blk[0])|uint16(blk[1])<<8], (*[8]float32)(x[8*j:])
			xj[0], xj[1], xj[2], xj[3] = q8Tab[blk[2]]*s, q8Tab[blk[3]]*s, q8Tab[blk[4]]*s, q8Tab[blk[5]]*s
			xj[4], xj[5], xj[6], xj[7] = q8Tab[blk[6]]*s, q8Tab[blk[7]]*s, q8Tab[blk[8]]*s, q8Tab[blk[9]]*s
		}
	case c.k == q4_0Kind && d == 8:
		// Values 0..3 are the low nibbles of payload bytes 0..3, values 4..7 their high ones.
		for j := 0; j < mb; j++ {
			blk := (*[6]byte)(rows[(j0+j)*rb:])
			s, xj := f16Table[uint16(blk[0])|uint16(blk[1])<<8], (*[8]float32)(x[8*j:])
			for i := 0; i < 4; i++ {
				v := q4SignedTab[blk[2+i]]
				xj[i], xj[4+i] = v[0]*s, v[1]*s
			}
		}
	case c.k == q8_0Kind:
		for j := 0; j < mb; j++ {
			q8_0Decode(x[j*d:(j+1)*d], rows[(j0+j)*rb:(j0+j+1)*rb])
		}
	case c.k == q4_0Kind:
		for j := 0; j < mb; j++ {
			q4_0Decode(x[j*d:(j+1)*d], rows[(j0+j)*rb:(j0+j+1)*rb])
		}
	default:
		panic("kvq: shortBatch: " + c.k.f.String())
	}
}

// shortDotMulti is DotManyMulti for q8_0 or q4_0 rows of one short block (d < 32): the rows
// decoded a batch at a time, each score summed as tailDot sums it, so bit-identical to DotMany
// per query, without allocating.
func (c *blockCodec) shortDotMulti(q []float32, n int, rows []byte, out []float32) {
	d, rb := c.d, c.rb
	if n <= 0 {
		return
	}
	m := len(out) / n
	q, rows, out = q[:n*d], rows[:m*rb], out[:m*n]
	var x [multiBatch * BlockSize]float32
	for j0 := 0; j0 < m; j0 += multiBatch {
		mb := min(multiBatch, m-j0)
		c.shortBatch(&x, rows, j0, mb)
		if d == 8 {
			dot8Rows(q, n, x[:mb*8], out[j0*n:(j0+mb)*n])
			continue
		}
		for j := 0; j < mb; j++ {
			xs := x[j*d : (j+1)*d]
			o := out[(j0+j)*n : (j0+j+1)*n]
			for h := range o {
				qh := q[h*d : (h+1)*d]
				qh = qh[:len(xs)]
				var s0, s1 float32
				i := 0
				for ; i+2 <= len(xs); i += 2 {
					s0 += qh[i] * xs[i]
					s1 += qh[i+1] * xs[i+1]
				}
				if i < len(xs) {
					s0 += qh[i] * xs[i]
				}
				o[h] = s0 + s1
			}
		}
	}
}

// dot8Rows is shortDotMulti's inner loops for d = 8, unrolled: out[j·n+h] = the score of row j
// (x[8j:8j+8]) for query h, summed in the same order as there.
func dot8Rows(q []float32, n int, x, out []float32) {
	for j := 0; j < len(x)/8; j++ {
		xj := (*[8]float32)(x[8*j:])
		for h := 0; h < n; h++ {
			qh := (*[8]float32)(q[8*h:])
			var s0, s1 float32
			s0 += qh[0] * xj[0]
			s1 += qh[1] * xj[1]
			s0 += qh[2] * xj[2]
			s1 += qh[3] * xj[3]
			s0 += qh[4] * xj[4]
			s1 += qh[5] * xj[5]
			s0 += qh[6] * xj[6]
			s1 += qh[7] * xj[7]
			out[j*n+h] = s0 + s1
		}
	}
}

// shortAccMulti is AccumulateManyMulti for q8_0 or q4_0 rows of one short block (d < 32): the
// rows decoded a batch at a time, then per accumulator eight values at a time held in
// registers across the batch, acc_h[i] += w·x[i] in row order as tailAccumulate adds, so
// bit-identical to AccumulateMany per accumulator, without allocating.
func (c *blockCodec) shortAccMulti(acc []float32, n int, w []float32, rows []byte) {
	d, rb := c.d, c.rb
	if n <= 0 {
		return
	}
	m := len(w) / n
	acc, w, rows = acc[:n*d], w[:m*n], rows[:m*rb]
	var x [multiBatch * BlockSize]float32
	for j0 := 0; j0 < m; j0 += multiBatch {
		mb := min(multiBatch, m-j0)
		c.shortBatch(&x, rows, j0, mb)
		xb := x[:mb*d]
		for h := 0; h < n; h++ {
			a, wh := acc[h*d:(h+1)*d], w[j0*n+h:]
			i := 0
			for ; i+8 <= d; i += 8 {
				accumulate8((*[8]float32)(a[i:]), xb[i:], d, wh, n, mb)
			}
			for ; i < d; i++ {
				s := a[i]
				for j := 0; j < mb; j++ {
					s += float32(wh[j*n] * xb[j*d+i])
				}
				a[i] = s
			}
		}
	}
}

// accumulate8 adds w[j·n]·x[j·d+k] to a[k] for k < 8 over the rows j < m, in row order, the
// eight sums in registers.
func accumulate8(a *[8]float32, x []float32, d int, w []float32, n, m int) {
	a0, a1, a2, a3, a4, a5, a6, a7 := a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
	for j := 0; j < m; j++ {
		wj := w[j*n]
		xj := (*[8]float32)(x[j*d:])
		a0 += float32(wj * xj[0])
		a1 += float32(wj * xj[1])
		a2 += float32(wj * xj[2])
		a3 += float32(wj * xj[3])
		a4 += float32(wj * xj[4])
		a5 += float32(wj * xj[5])
		a6 += float32(wj * xj[6])
		a7 += float32(wj * xj[7])
	}
	a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7] = a0, a1, a2, a3, a4, a5, a6, a7
}

// DotManyMulti scores n queries against every row within the MultiQuery bounds.
func (c *q8_0Codec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if c.full == 0 {
		c.shortDotMulti(q, n, rows, out)
		return
	}
	if intScores && n > 0 {
		c.q8ScoresVNNI(q, n, rows, out, nil)
		return
	}
	td, _ := c.tails()
	multiDot(c, multiQ8_0, c.full*BlockSize, td, q, n, rows, out)
}

// dotManyMultiMu is DotManyMulti for rows whose every value i is offset by mu[i] (a rotated
// codec's channel offsets): q̃_h·mu is added to query h's scores, q̃ the query as the scores
// round it (ScoresGrid), so the sum is Dot(q̃) of the offset rows. The VNNI kernel starts each
// score from it, sparing a pass over the scores.
func (c *q8_0Codec) dotManyMultiMu(q []float32, n int, rows []byte, out, mu []float32) {
	if intScores && c.full > 0 && n > 0 {
		c.q8ScoresVNNI(q, n, rows, out, mu)
		return
	}
	c.DotManyMulti(q, n, rows, out)
	addOffsets(c.d, q, n, out, mu)
}

// AccumulateManyMulti adds n weighted sums of the rows within the MultiQuery bounds.
func (c *q8_0Codec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	if c.full == 0 {
		c.shortAccMulti(acc, n, w, rows)
		return
	}
	c.accMulti(acc, c.d, n, w, rows)
}

// accMulti is AccumulateManyMulti for rows of whole blocks and more, accumulator h at
// acc[h·as:] (as ≥ Dim).
func (c *q8_0Codec) accMulti(acc []float32, as, n int, w []float32, rows []byte) {
	_, ta := c.tails()
	multiAccStride(c, intAccOr(multiQ8_0, intAccQ8_0), c.full*BlockSize, ta, acc, as, n, w, rows)
}

// DotManyMulti scores n queries against every row within the MultiQuery bounds.
func (c *q4_0Codec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if c.full == 0 {
		c.shortDotMulti(q, n, rows, out)
		return
	}
	if intScores && n > 0 {
		c.q4ScoresVNNI(q, n, rows, out, nil)
		return
	}
	td, _ := c.tails()
	multiDot(c, multiQ4_0, c.full*BlockSize, td, q, n, rows, out)
}

// dotManyMultiMu is q8_0Codec.dotManyMultiMu for q4_0.
func (c *q4_0Codec) dotManyMultiMu(q []float32, n int, rows []byte, out, mu []float32) {
	if intScores && c.full > 0 && n > 0 {
		c.q4ScoresVNNI(q, n, rows, out, mu)
		return
	}
	c.DotManyMulti(q, n, rows, out)
	addOffsets(c.d, q, n, out, mu)
}

// AccumulateManyMulti adds n weighted sums of the rows within the MultiQuery bounds.
func (c *q4_0Codec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	if c.full == 0 {
		c.shortAccMulti(acc, n, w, rows)
		return
	}
	c.accMulti(acc, c.d, n, w, rows)
}

// accMulti is AccumulateManyMulti for rows of whole blocks and more, accumulator h at
// acc[h·as:] (as ≥ Dim).
func (c *q4_0Codec) accMulti(acc []float32, as, n int, w []float32, rows []byte) {
	_, ta := c.tails()
	multiAccStride(c, intAccOr(multiQ4_0, intAccQ4_0), c.full*BlockSize, ta, acc, as, n, w, rows)
}

// q4Levels are the q4_0 codes as values, c − 8, indexed by the nibble c: the assembly kernels'
// lookup table.
var q4Levels = [16]float32{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}

// tq4 rows keep each pair of values in one byte (low nibble even, high nibble odd), so the
// tq4 kernels read a 32-value group as its 16 even values, then its 16 odd ones: the queries
// and accumulators they take are reordered that way (tq4Permute) within every whole group.

// tq4Permute writes src (n vectors of d values) to dst with every whole 32-value group of each
// vector reordered to its even values, then its odd ones; the values past the last whole group
// keep their places.
func tq4Permute(dst, src []float32, n, d int) {
	if tq4PermuteFast(dst, src, n, d, false) {
		return
	}
	for h := 0; h < n; h++ {
		s, t := src[h*d:(h+1)*d], dst[h*d:(h+1)*d]
		g := 0
		for ; g+32 <= d; g += 32 {
			for i := 0; i < 16; i++ {
				t[g+i], t[g+16+i] = s[g+2*i], s[g+2*i+1]
			}
		}
		copy(t[g:], s[g:])
	}
}

// tq4Unpermute undoes tq4Permute.
func tq4Unpermute(dst, src []float32, n, d int) {
	if tq4PermuteFast(dst, src, n, d, true) {
		return
	}
	for h := 0; h < n; h++ {
		s, t := src[h*d:(h+1)*d], dst[h*d:(h+1)*d]
		g := 0
		for ; g+32 <= d; g += 32 {
			for i := 0; i < 16; i++ {
				t[g+2*i], t[g+2*i+1] = s[g+i], s[g+16+i]
			}
		}
		copy(t[g:], s[g:])
	}
}

// tq4Scratch returns a pooled buffer of n·d floats for the permuted queries or accumulators
// (a stack buffer would escape through multiDot's interface calls); put it back with
// perQueryBufs.Put.
func tq4Scratch(n, d int) *[]float32 {
	bp := getPerQuery(n * d)
	*bp = (*bp)[:n*d]
	return bp
}

// DotManyMulti scores n prepared queries against every row within the MultiQuery bounds.
func (c *tq4Codec) DotManyMulti(q []float32, n int, rows []byte, out []float32) {
	if tq4VNNI(c.d) && n > 0 {
		tq4ScoresVNNI(vnniTQ4, c.d, c.RowBytes(), q, n, rows, out, nil)
		return
	}
	nv := c.d &^ 31
	if multiTQ4 == nil || nv == 0 || n <= 0 {
		multiDot(c, nil, 0, nil, q, n, rows, out)
		return
	}
	bp := tq4Scratch(n, c.d)
	defer perQueryBufs.Put(bp)
	qp := *bp
	tq4Permute(qp, q[:n*c.d], n, c.d)
	nb := (c.d + 1) / 2
	tail := func(q []float32, row []byte) float32 {
		return tq4Dot(q[nv:], row[nv/2:nb]) * c.scale(row)
	}
	multiDot(c, multiTQ4, nv, tail, qp, n, rows, out)
}

// AccumulateManyMulti adds n weighted sums of the rows (rotated domain) within the MultiQuery
// bounds: through turbo4's integer kernel with an f32 scale where the CPU has it and d is a
// multiple of 64 (tq4IntAcc, multi_turboacc_amd64.go, within that bound; it reads the values in
// their natural order, no permutation), else through the float kernels on the permuted
// accumulators.
func (c *tq4Codec) AccumulateManyMulti(acc []float32, n int, w []float32, rows []byte) {
	if k := turboAccKernels(c); k != nil && n > 0 {
		multiAcc(c, k, c.d, nil, acc, n, w, rows)
		return
	}
	nv := c.d &^ 31
	if multiTQ4 == nil || nv == 0 || n <= 0 {
		multiAcc(c, nil, 0, nil, acc, n, w, rows)
		return
	}
	bp := tq4Scratch(n, c.d)
	defer perQueryBufs.Put(bp)
	ap := *bp
	tq4Permute(ap, acc[:n*c.d], n, c.d)
	nb := (c.d + 1) / 2
	tail := func(acc []float32, w float32, row []byte) {
		tq4Axpy(acc[nv:], w*c.scale(row), row[nv/2:nb])
	}
	multiAcc(c, multiTQ4, nv, tail, ap, n, w, rows)
	tq4Unpermute(acc[:n*c.d], ap, n, c.d)
}

// ScoresGrid writes into dst the n prepared queries q (n × Dim values, dst as long) as c's
// DotManyMulti scores them on this CPU, and returns the unit u of that rounding. Where its
// kernels are integer ones (q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, tq4 and turbo4 with AVX-512
// VNNI, turbo3 and turbo2 with VBMI too, multi_tq4vnni_amd64.go; tq4 and the turbo tiers with
// AVX2 and no AVX-512, multi_tq4avx2_amd64.go), every
// whole 32-value block
// b of a query is rounded to q̃ = s·Q, Q integer, |q − q̃| ≤ u·max_{i∈b}|q[i]| (b all the whole
// blocks of the query at once where the per-query kernels above run: scoresGridBlock; the
// turbo tiers' uniform-scale AVX2 digits with |Q| ≤ 127, u = (1 + 2⁻⁶)/254, except on AVX2
// CPUs without AVX-VNNI, where turbo3's take |Q| ≤ 93 and turbo4's ≤ 78, u = (1 + 2⁻⁶)/186
// and (1 + 2⁻⁶)/156: scoresGridQMax), and
// DotManyMulti agrees with Dot(q̃) within the float bound; where fp8's are bf16 ones (AVX-512
// VBMI and BF16; on Intel with AMX-BF16 the AMX kernel, rows of 128 values), every value of
// the whole 32-value blocks is rounded to bf16 (to nearest even, below 2⁻¹²⁶ to 0), u = 2⁻⁸;
// elsewhere dst = q and u = 0.
func ScoresGrid(c Codec, dst, q []float32, n int) (u float64) {
	inner := Unwrap(c)
	d := c.Dim()
	if fc, ok := inner.(fp8Codec); ok && fc.bf16Scores() {
		fp8Grid(dst[:n*d], q[:n*d], n, d)
		return 0x1p-8
	}
	nd, nb := scoresDigits(inner)
	if nd == 0 {
		copy(dst[:n*d], q[:n*d])
		return 0
	}
	qmax := 127.0
	if nd == 2 {
		qmax = 127<<8 + 127
	}
	if qm := scoresGridQMax(inner); scoresGridBlock(inner) > BlockSize || qm != 127 {
		// qm is 93 (turbo3) or 78 (turbo4) for the uniform-scale kernels of AVX2 CPUs without
		// AVX-VNNI (t3UniAVX2, t4UniAVX2), d = 32 included.
		vnniGridUni(dst[:n*d], q[:n*d], d, nb, qm)
		qmax = float64(qm)
	} else {
		vnniGrid(dst[:n*d], q[:n*d], d, nb, nd)
	}
	return (1 + 0x1p-6) / (2 * qmax)
}
