package model

import "math"

// rope is rotary position embedding for one model: the first dims values of every head are
// rotated in dims/2 pairs, pair j by the angle pos/scale · freq[j].
type rope struct {
	style RopeStyle
	dims  int
	freq  []float32 // dims/2 inverse frequencies: base^(−2j/dims), divided by rope_freqs factors
	scale float32   // position divisor (linear RoPE scaling); 1 for none
}

// newRope computes the frequencies as llama2.c and llama.cpp do: freq_j = 1/base^(2j/dims),
// each divided by factors[j] when the model has a rope_freqs tensor (Llama 3.1 style).
func newRope(hp Hparams, style RopeStyle, factors []float32) rope {
	r := rope{style: style, dims: hp.RopeDims, freq: make([]float32, hp.RopeDims/2), scale: hp.RopeScale}
	for j := range r.freq {
		f := float32(1 / math.Pow(float64(hp.RopeBase), float64(2*j)/float64(hp.RopeDims)))
		if factors != nil {
			f /= factors[j]
		}
		r.freq[j] = f
	}
	return r
}

// angles writes cos and sin (dims/2 values each) of the rotation at position pos.
func (r *rope) angles(cos, sin []float32, pos int) {
	p := float32(pos)
	if r.scale != 1 {
		p /= r.scale
	}
	for j, f := range r.freq {
		s, c := math.Sincos(float64(p * f))
		cos[j], sin[j] = float32(c), float32(s)
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
