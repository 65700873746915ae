package kvq

// Q2KRot is the rotation and K calibration around one head's q2k K pool (Q2KHead) in the
// default q2k ("q2k-r" stores K as it comes): the pool holds y = R·((x − μ)/λ), R the head's
// rotation as the rotated formats draw it (Seed, Layer, Head), λ and μ the per-channel scales
// and offsets fixed from the pool's first write (ChannelScales, ChannelMeans), as the rotated
// formats' K codecs fix theirs. A query enters as q' = R·(λ⊙q), and q'·ŷ + q'·R·(μ/λ) = q·x̂:
// the pool's scores plus AddOffsets are scores in the value domain, as the unrotated pool's.
//
// q2k's 2-bit codes are per channel over 32-cell groups; rotated, each channel mixes the whole
// head, so a group's scale follows the row's energy rather than one channel's. On kvlab-tiny-64
// (kvlab ab --ctx 128, rotation seeds 1–8) that halved q2k's KL: decode 0.80 → 0.40, prompt 0.43
// → 0.21, perplexity 15.6 → 11.8 (f16: 9.2); on the outlier fixture (kvlab fixture outlier)
// decode 0.80 → 0.37, prompt 0.43 → 0.23. Without λ the rotation spreads an outlier channel over
// the whole row and the 2-bit grid keeps little else: decode KL 4.9 and perplexity 606 there. μ
// took the prompt KL from 0.33 to 0.27 on both (seed 1).
type Q2KRot struct {
	rot *rotation
	d   int
	// lam, ilam and mu are the calibration (nil where none: λ = 1, μ = 0), muR the offset as
	// the pool's rows see it, R·(μ/λ).
	lam, ilam, mu, muR []float32
}

// NewQ2KRot is the rotation of head head of layer layer (d values) under seed, uncalibrated.
func NewQ2KRot(d int, seed uint64, layer, head int) *Q2KRot {
	return &Q2KRot{rot: newRotation(d, seed, layer, head), d: d}
}

// Calibrate fixes λ and μ from n rows (n × d values). Rows stored before keep the calibration
// they were stored with, so a pool calls it only when it holds no cells.
func (r *Q2KRot) Calibrate(rows []float32, n int) {
	r.lam, r.ilam, r.mu = calibration(rows, n, r.d)
	r.muR = rotatedOffset(r.mu, r.ilam, r.rot.apply)
}

// Rows writes the n rows of src (n × d values) as the pool stores them, R·((x − μ)/λ), into dst
// (n × d values, not overlapping src).
func (r *Q2KRot) Rows(dst, src []float32, n int) {
	d := r.d
	for i := 0; i < n; i++ {
		y, x := dst[i*d:(i+1)*d], src[i*d:(i+1)*d]
		if rotRowVec(r.rot, y, x, r.mu, r.ilam) {
			continue
		}
		copy(y, x)
		for c, m := range r.mu {
			y[c] -= m
		}
		for c, l := range r.ilam {
			y[c] *= l
		}
		r.rot.apply(y, y)
	}
}

// PrepareQuery writes R·(λ⊙q) into dst (d values; dst may alias q).
func (r *Q2KRot) PrepareQuery(dst, q []float32) {
	dst = dst[:r.d]
	copy(dst, q[:r.d])
	for c, l := range r.lam {
		dst[c] *= l
	}
	r.rot.apply(dst, dst)
}

// AddOffsets adds q_h·μ, the offset's part of every score, to the scores of query h in out
// (cells × n, row-major, as ScoresRangeMulti writes them) for the n prepared queries q (n × d),
// as the rotated codecs add theirs (addOffsets): the pool's scores are then q·x̂ in the value
// domain. Nothing to add where μ is 0.
func (r *Q2KRot) AddOffsets(q []float32, n int, out []float32) {
	if r.muR != nil {
		addOffsets(r.d, q, n, out, r.muR)
	}
}

// ToValue maps a row the pool decodes (Q2KHead.Decode) to the value domain in place: λ⊙Rᵀ·ŷ + μ.
func (r *Q2KRot) ToValue(v []float32) {
	v = v[:r.d]
	r.rot.applyT(v, v)
	for c, l := range r.lam {
		v[c] *= l
	}
	for c, m := range r.mu {
		v[c] += m
	}
}
