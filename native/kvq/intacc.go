package kvq

// AccumulateTile is the rows of the integer kernels' tiles: the weights of one tile share
// their int16 scale. Callers that must read the same values whatever their layout (paged or
// contiguous caches, split calls) start their calls on multiples of it (attn.RowStore does).
const AccumulateTile = 64

// AccumulateStep is the relative rounding of the weights in c's multi-query accumulation
// (MultiQuery.AccumulateManyMulti) on this CPU, the half-step of the weights' integer grid as a
// power of two (the exact half-step, M/(2q) for the largest weight M of a tile rounded to at
// most q, is up to 1.008 times it; the tests check the exact one):
//   - 2⁻¹⁶ where the values accumulate through the int16-weight integer kernels (each w·d off by
//     about 2⁻¹⁶ of the largest in its 64-row tile and block: multi_intacc_amd64.go, on AVX2
//     CPUs multi_avx2intacc_amd64.go; a turbo tier's or tq4's w·s: multi_turboacc_amd64.go, on
//     AVX2 CPUs with AVX-VNNI, and for turbo4 and tq4 on the others under isa.Acc16,
//     multi_t4accavx2_amd64.go; and every integer kernel under isa.Acc16);
//   - 2⁻⁹ where the turbo tiers' and tq4's AVX-512 kernels take unsigned 8-bit weights (M/510,
//     multi_turboacc_amd64.go), and q5_1's on AVX-512 VBMI and BITALG CPUs (intAcc8q51 in
//     multi_intacc_amd64.go; q5_0's there too where q5W8 chooses them, intAcc8q51) and on AVX2
//     CPUs (avx2U8Q51, multi_avx2intacc_amd64.go);
//   - 2⁻⁸ where q4_0's, q4_1's and iq4_nl's take signed 8-bit weights (M/254: intAcc8 in
//     multi_intacc_amd64.go; q4_0's and q4_1's VPMADDUBSW kernels on AVX2 CPUs,
//     multi_avx2intacc_amd64.go; turbo2's and turbo3's on AVX2 CPUs without AVX-VNNI, and
//     turbo4's and tq4's where avx2B8T4 chooses them, but for a softmax peak's tiles, which
//     keep int16 weights, multi_t4accavx2_amd64.go; q5_0's on AVX2 CPUs without AVX-VNNI,
//     whose peaks' tiles keep int16 weights too, avx2A8Q50 in multi_avx2intacc_amd64.go, and
//     iq4_nl's there the same way, avx2A8IQ4, and
//     q8_0's where avx2A8Q80 is set, unsigned, 0..127), and where fp8's accumulate with bf16
//     weights (each w·scale off by at most 2⁻⁸ of itself, multi_fp8bf16_amd64.go; on Intel
//     CPUs with AMX-BF16 for rows of 128 values, multiAccFP8AMXA in multi_fp8amx_amd64.go,
//     whose subnormal codes read as zero besides, and whose NaN codes, 0x7f and 0xff, which
//     only a NaN input encodes to, as a finite ±1.875·2⁸ × scale instead of NaN);
//   - 0 where they accumulate in float32.
//
// Tests of code built on the codecs widen their float32 tolerances by it.
func AccumulateStep(c Codec) float64 {
	c = Unwrap(c)
	if fc, ok := c.(fp8Codec); ok && (fc.d >= 32 && fp8BF16AccActive() || fc.d == 128 && fp8AMXAccActive()) {
		return 0x1p-8
	}
	if k := turboAccKernels(c); k != nil {
		return intAccStep(k)
	}
	if bc := intAccBlocks(c); bc != nil && bc.full > 0 {
		if k := blockIntAccKernel(c); k != nil {
			return intAccStep(k)
		}
	}
	return 0
}

// intAccStep is AccumulateStep's figure for the integer accumulate kernel k: its w8step where it
// takes 8-bit weights, else 2⁻¹⁶ (int16 weights).
func intAccStep(k *multiKernels) float64 {
	if k.w8step > 0 {
		return k.w8step
	}
	return 0x1p-16
}

// blockIntAccKernel is the integer kernel a block format's values accumulate through on this CPU
// (intAccOr's choice, as AccumulateManyMulti makes it), nil where they accumulate in float.
func blockIntAccKernel(c Codec) *multiKernels {
	var i *multiKernels
	switch c.(type) {
	case *q4_0Codec:
		i = intAccQ4_0
	case *q8_0Codec:
		i = intAccQ8_0
	case *q4_1Codec:
		i = intAccQ4_1
	case *q5_0Codec:
		i = intAccQ5_0
	case *q5_1Codec:
		i = intAccQ5_1
	case *iq4nlCodec:
		i = intAccIQ4NL
	}
	return intAccOr(nil, i)
}

// turboAccKernels is the integer accumulate kernel of a turbo tier's or tq4's rows on this CPU
// (multi_turboacc_amd64.go), nil where their values accumulate in float: the one place that
// decides, for AccumulateManyMulti and AccumulateStep alike.
func turboAccKernels(c Codec) *multiKernels {
	switch c := c.(type) {
	case *lmCodec:
		if turboIntAcc(c.bits, c.d) {
			switch c.bits {
			case 2:
				return turboAccPick(intAccT2)
			case 3:
				return turboAccPick(intAccT3)
			case 4:
				return turboAccPick(intAccT4)
			}
		}
		return turboAccAVX2(c.bits, c.d, false) // AVX2 (multi_t4accavx2_amd64.go), nil for none
	case *tq4Codec:
		if tq4IntAcc(c.d) {
			return turboAccPick(intAccT4F)
		}
		return turboAccAVX2(4, c.d, true)
	}
	return nil
}

// intAccBlocks is the block layout of a codec whose values the integer kernels accumulate
// (q4_0, q8_0, q4_1, q5_0, q5_1, iq4_nl), nil for the others.
func intAccBlocks(c Codec) *blockCodec {
	switch c := c.(type) {
	case *q4_0Codec:
		return &c.blockCodec
	case *q8_0Codec:
		return &c.blockCodec
	case *q4_1Codec:
		return &c.blockCodec
	case *q5_0Codec:
		return &c.blockCodec
	case *q5_1Codec:
		return &c.blockCodec
	case *iq4nlCodec:
		return &c.blockCodec
	}
	return nil
}

// intAccOr is k, or i where the integer accumulate kernels run, or i's AVX2 integer kernel
// where those run (multi_avx2intacc_amd64.go).
func intAccOr(k, i *multiKernels) *multiKernels {
	if i != nil && intAcc() {
		return i
	}
	if a := avx2IntAccFor(i); a != nil {
		return a
	}
	return k
}
