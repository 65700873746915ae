package model

import "math"

// rope is rotary position embedding for one model: the first dims values of every head are
// rotated in dims/2 pairs, pair j by the angle pos/scale · freq[j], and both rotated values are
// multiplied by mscale (1 except under YaRN).
type rope struct {
	style  RopeStyle
	dims   int
	freq   []float32 // dims/2 frequencies: see RopeFrequencies
	scale  float32   // position divisor (linear RoPE scaling); 1 for none
	mscale float32   // magnitude of the rotation (YaRN's attention factor); 1 for none
}

// newRope computes the frequencies once (RopeFrequencies) for the CPU and GPU engines alike.
func newRope(hp Hparams, style RopeStyle, factors []float32) rope {
	freq, mscale := RopeFrequencies(hp, factors)
	return rope{style: style, dims: hp.RopeDims, freq: freq, scale: hp.RopeScale, mscale: mscale}
}

// RopeFrequencies returns the RopeDims/2 frequencies of a model's RoPE and the magnitude every
// rotated pair is multiplied by. Pair j turns by the angle (pos / hp.RopeScale)·freq[j].
//
// Without scaling freq[j] = RopeBase^(−2j/RopeDims) (as llama2.c and llama.cpp), divided by
// factors[j] when the file has a rope_freqs tensor (llama-3 frequency scaling: the converter
// computes those factors from the training context). Linear scaling leaves freq alone and
// divides the position (hp.RopeScale). YaRN (hp.RopeScaling == "yarn") folds its blend of the
// interpolated and the extrapolated angle into freq, as ggml's rope_yarn computes it:
//
//	low, high = corr_dim(BetaFast), corr_dim(BetaSlow)      floor / ceil, clamped to [0, dims−1]
//	corr_dim(b) = dims · ln(OrigCtx / (2π·b)) / (2 ln base)
//	ramp_j = (1 − clamp((j − low) / max(0.001, high − low), 0, 1)) · ExtFactor
//	freq[j] = f_j · ((1 − ramp_j) / factor + ramp_j)
//
// The magnitude is llama.cpp's: under YaRN with ExtFactor ≠ 0, get_mscale(factor, 1) =
// 1 + 0.1·ln(factor) (1 for factor ≤ 1), divided by get_mscale(factor, YarnLogMul) when the
// file sets rope.scaling.yarn_log_multiplier; otherwise rope.scaling.yarn_attn_factor
// (default 1). Either is multiplied by rope.scaling.attn_factor (default 1).
func RopeFrequencies(hp Hparams, factors []float32) ([]float32, float32) {
	n := hp.RopeDims / 2
	freq := make([]float32, n)
	for j := range freq {
		f := float32(1 / math.Pow(float64(hp.RopeBase), float64(2*j)/float64(hp.RopeDims)))
		if j < len(factors) && factors[j] != 0 {
			f /= factors[j]
		}
		freq[j] = f
	}
	attn := float64(1)
	if hp.RopeAttnFactor > 0 {
		attn = float64(hp.RopeAttnFactor)
	}
	yarnAttn := float64(1)
	if hp.YarnAttnFactor > 0 {
		yarnAttn = float64(hp.YarnAttnFactor)
	}
	ext := float64(hp.YarnExtFactor)
	if hp.RopeScaling != "yarn" || hp.RopeFactor <= 0 {
		return freq, float32(yarnAttn * attn)
	}
	factor := float64(hp.RopeFactor)
	lo, hi := yarnCorrDims(hp.RopeDims, hp.RopeOrigCtx, float64(hp.RopeBase), float64(hp.YarnBetaFast), float64(hp.YarnBetaSlow))
	for j := range freq {
		mix := yarnRamp(lo, hi, j) * ext
		freq[j] = float32(float64(freq[j]) * ((1-mix)/factor + mix))
	}
	if ext == 0 { // plain interpolation: every angle divided by factor
		return freq, float32(yarnAttn * attn)
	}
	m := yarnMScale(factor, 1)
	if hp.YarnLogMul != 0 {
		m /= yarnMScale(factor, float64(hp.YarnLogMul))
	}
	return freq, float32(m * attn)
}

// yarnMScale is YaRN's magnitude for a context extended factor times (get_mscale).
func yarnMScale(factor, mscale float64) float64 {
	if factor <= 1 {
		return 1
	}
	return 0.1*mscale*math.Log(factor) + 1
}

// yarnCorrDim is the dimension at which a rotation of base makes nRot full turns over origCtx
// positions (ggml_rope_yarn_corr_dim).
func yarnCorrDim(dims, origCtx int, nRot, base float64) float64 {
	return float64(dims) * math.Log(float64(origCtx)/(nRot*2*math.Pi)) / (2 * math.Log(base))
}

// yarnCorrDims returns YaRN's correction range [low, high] of pair indices
// (ggml_rope_yarn_corr_dims).
func yarnCorrDims(dims, origCtx int, base, betaFast, betaSlow float64) (float64, float64) {
	lo := math.Floor(yarnCorrDim(dims, origCtx, betaFast, base))
	hi := math.Ceil(yarnCorrDim(dims, origCtx, betaSlow, base))
	return max(0, lo), min(float64(dims-1), hi)
}

// yarnRamp is 1 for pairs below low (kept extrapolated), 0 above high (interpolated), linear
// between.
func yarnRamp(lo, hi float64, j int) float64 {
	y := (float64(j) - lo) / max(0.001, hi-lo)
	return 1 - min(1, max(0, y))
}

// angles writes cos and sin (dims/2 values each) of the rotation at position pos, times the
// magnitude mscale.
func (r *rope) angles(cos, sin []float32, pos int) {
	p := float32(pos)
	if r.scale != 1 {
		p /= r.scale
	}
	for j, f := range r.freq {
		s, c := math.Sincos(float64(p * f))
		cos[j], sin[j] = float32(c), float32(s)
		if r.mscale != 1 && r.mscale != 0 {
			cos[j] *= r.mscale
			sin[j] *= r.mscale
		}
	}
}

// apply rotates every head of x (heads × hd values, one token) by the angles of one position.
func (r *rope) apply(x []float32, heads, hd int, cos, sin []float32) {
	half := r.dims / 2
	cos, sin = cos[:half], sin[:half]
	for h := 0; h < heads; h++ {
		v := x[h*hd : h*hd+r.dims]
		if r.style == RopeNeox {
			a, b := v[:half], v[half:r.dims]
			for j := range cos {
				x0, x1 := a[j], b[j]
				a[j] = x0*cos[j] - x1*sin[j]
				b[j] = x0*sin[j] + x1*cos[j]
			}
			continue
		}
		for j := range cos {
			x0, x1 := v[2*j], v[2*j+1]
			v[2*j] = x0*cos[j] - x1*sin[j]
			v[2*j+1] = x0*sin[j] + x1*cos[j]
		}
	}
}
