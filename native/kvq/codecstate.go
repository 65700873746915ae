package kvq

import (
	"fmt"
	"math"
	"slices"
)

// CodecState is a codec's state outside its rows, which a store sets on its first write: the
// rotation ChooseRotation picked and the per-channel K scales λ and offsets μ Calibrate set. A
// KV snapshot saves it with the rows (StateOf) and restores it (SetState), so that the reloaded
// store encodes and decodes exactly as the one that saved it. Codec changes that add per-store
// state add it here.
type CodecState struct {
	// Rotation is the rotation in use: 0 the one of (Seed, Layer, Head), k+1 its k-th
	// alternate, −1 the identity (rows stored unrotated).
	Rotation int
	// Scales and Means are λ and μ (nil when none).
	Scales, Means []float32
}

// StateOf returns c's state (the zero state for a codec without any).
func StateOf(c Codec) CodecState {
	r, ok := c.(*rotCodec)
	if !ok {
		return CodecState{}
	}
	st := CodecState{Rotation: r.alt, Scales: r.lam, Means: r.mu}
	if r.ident {
		st.Rotation = -1
	}
	return st
}

// SetState restores a state StateOf returned. Scales must be Dim powers of two in [1, 2^20],
// Means Dim finite values and Rotation in [−1, 7], as the codecs set them; anything else is
// ErrCorrupt and leaves the codec unchanged. A codec without state accepts only the zero state.
func SetState(c Codec, st CodecState) error {
	r, ok := c.(*rotCodec)
	lam, mu := st.Scales, st.Means
	if !ok {
		if lam != nil || mu != nil || st.Rotation != 0 {
			return fmt.Errorf("%w: %s keeps no rotation choice or per-channel calibration", ErrCorrupt, c.Format())
		}
		return nil
	}
	if st.Rotation < -1 || st.Rotation > chooseAlts || (st.Rotation != 0 && !r.inner.Format().Rotatable()) {
		return fmt.Errorf("%w: rotation %d of %s", ErrCorrupt, st.Rotation, r.inner.Format())
	}
	if lam != nil {
		if len(lam) != r.d {
			return fmt.Errorf("%w: %d channel scales for %d channels", ErrCorrupt, len(lam), r.d)
		}
		for i, l := range lam {
			f, e := math.Frexp(float64(l))
			if f != 0.5 || e < 1 || e > 21 {
				return fmt.Errorf("%w: channel %d scale %g is not a power of two in [1, 2^20]", ErrCorrupt, i, l)
			}
		}
	}
	if mu != nil {
		if len(mu) != r.d {
			return fmt.Errorf("%w: %d channel offsets for %d channels", ErrCorrupt, len(mu), r.d)
		}
		for i, m := range mu {
			if math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
				return fmt.Errorf("%w: channel %d offset %g is not finite", ErrCorrupt, i, m)
			}
		}
	}
	r.rot, r.alt, r.ident = r.base, 0, st.Rotation == -1
	if st.Rotation > 0 {
		r.rot, r.alt = altRotation(r.d, r.opt, st.Rotation-1), st.Rotation
	}
	r.lam, r.ilam, r.mu = nil, nil, nil
	if lam != nil {
		r.lam, r.ilam = slices.Clone(lam), make([]float32, r.d)
		for i, l := range lam {
			r.ilam[i] = 1 / l
		}
	}
	if mu != nil {
		r.mu = slices.Clone(mu)
	}
	r.setMuR()
	return nil
}
