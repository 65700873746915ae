package kvq

import (
	"fmt"
	"math"
)

// SetCalibration restores a calibrated codec's per-channel K scales λ and offsets μ, as
// ChannelScalesOf and ChannelMeansOf returned them (nil for none), so that a cache reloaded
// from disk encodes and decodes exactly as the one that saved it. lam must hold Dim powers of
// two in [1, 2^20] and mu Dim finite values, as Calibrate sets them; anything else is
// ErrCorrupt and leaves the codec unchanged. A codec that is not calibrated (every format but
// the rotated ones) accepts only nil, nil.
func SetCalibration(c Codec, lam, mu []float32) error {
	r, ok := c.(*rotCodec)
	if !ok {
		if lam != nil || mu != nil {
			return fmt.Errorf("%w: %s keeps no per-channel calibration", ErrCorrupt, c.Format())
		}
		return nil
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
	r.lam, r.ilam, r.mu, r.muR = nil, nil, nil, nil
	if lam != nil {
		r.lam, r.ilam = append([]float32(nil), lam...), make([]float32, r.d)
		for i, l := range lam {
			r.ilam[i] = 1 / l
		}
	}
	if mu != nil {
		r.mu, r.muR = append([]float32(nil), mu...), make([]float32, r.d)
		copy(r.muR, mu)
		if r.ilam != nil {
			for i, l := range r.ilam {
				r.muR[i] *= l
			}
		}
		r.rot.apply(r.muR, r.muR)
	}
	return nil
}
