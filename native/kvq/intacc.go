package kvq

// AccumulateStep is the relative rounding of the weights in c's multi-query accumulation
// (MultiQuery.AccumulateManyMulti) on this CPU: 2⁻¹⁶ where the values accumulate through the
// integer kernels (each weight w·d off by at most 2⁻¹⁶ of the largest in its 64-row tile and
// block, multi_intacc_amd64.go), 0 where they accumulate in float32. Tests of code built on the
// codecs widen their float32 tolerances by it.
func AccumulateStep(c Codec) float64 {
	if rc, ok := c.(*rotCodec); ok {
		c = rc.inner
	}
	if !intAcc() {
		return 0
	}
	switch c := c.(type) {
	case *q4_0Codec:
		if c.full > 0 {
			return 0x1p-16
		}
	case *q8_0Codec:
		if c.full > 0 {
			return 0x1p-16
		}
	}
	return 0
}
