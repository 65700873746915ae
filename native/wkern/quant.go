package wkern

import (
	"encoding/binary"
	"math"

	"github.com/kvlab/kvlab/native/gguf"
)

// The weight quantizers below follow ggml's reference quantizers (quantize_row_*_ref in
// ggml-quants.c) step for step in float32, so their blocks are byte-identical to ggml's
// reference output (checked on golden blocks in quant_test.go). They exist for synthetic
// benchmark models and tests: kvlab never re-quantizes a model it loads.

// Quantizable reports whether Quantize supports type t.
func Quantizable(t gguf.Type) bool {
	switch t {
	case gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q6_K:
		return true
	}
	return false
}

// Quantize encodes x as len(x) values of type t (len(x) a multiple of t's block size) and
// appends them to dst. It panics on a type Quantizable rejects.
func Quantize(dst []byte, t gguf.Type, x []float32) []byte {
	bs := t.BlockSize()
	if !Quantizable(t) || len(x)%bs != 0 {
		panic("wkern: Quantize: unsupported type or partial block")
	}
	n := int(t.RowBytes(uint64(len(x))))
	off := len(dst)
	dst = append(dst, make([]byte, n)...)
	out := dst[off:]
	switch t {
	case gguf.F32:
		for i, v := range x {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case gguf.F16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(out[2*i:], toF16(v))
		}
	case gguf.Q8_0:
		for b := 0; b < len(x)/32; b++ {
			quantQ8_0Block(out[b*q8_0Bytes:(b+1)*q8_0Bytes], x[32*b:32*b+32])
		}
	case gguf.Q4_0:
		for b := 0; b < len(x)/32; b++ {
			quantQ4_0Block(out[b*q4_0Bytes:(b+1)*q4_0Bytes], x[32*b:32*b+32])
		}
	case gguf.Q4_K:
		for b := 0; b < len(x)/256; b++ {
			quantQ4_KBlock(out[b*q4_KBytes:(b+1)*q4_KBytes], x[256*b:256*b+256])
		}
	case gguf.Q6_K:
		for b := 0; b < len(x)/256; b++ {
			quantQ6_KBlock(out[b*q6_KBytes:(b+1)*q6_KBytes], x[256*b:256*b+256])
		}
	}
	return dst
}

// toF16 converts f to IEEE binary16, rounding to nearest even (as F16C and ggml do).
func toF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	switch {
	case exp == 0xff: // inf, nan
		h := sign | 0x7c00
		if man != 0 {
			h |= 0x200 | uint16(man>>13)
		}
		return h
	case exp-127 > 15:
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e <= 0 { // subnormal or zero in f16
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		halfway := uint32(1) << (shift - 1)
		if rem > halfway || rem == halfway && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent, up to inf: correct
	}
	return sign | uint16(h)
}

// nearestInt is ggml's nearest_int: round half to even.
func nearestInt(f float32) int { return int(math.RoundToEven(float64(f))) }

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, toF16(f)) }

func quantQ8_0Block(out []byte, x []float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(out, d)
	for j, v := range x {
		out[2+j] = byte(int8(math.Round(float64(float32(v * id)))))
	}
}

func quantQ4_0Block(out []byte, x []float32) {
	var amax, mx float32
	for _, v := range x {
		if amax < abs32(v) {
			amax, mx = abs32(v), v
		}
	}
	d := mx / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(out, d)
	for j := 0; j < 16; j++ {
		x0 := float32(x[j] * id)
		x1 := float32(x[16+j] * id)
		q0 := min(15, int8(float32(x0+8.5)))
		q1 := min(15, int8(float32(x1+8.5)))
		out[2+j] = byte(q0) | byte(q1)<<4
	}
}

// makeQKX2 is ggml's make_qkx2_quants: codes L in [0, nmax] and (scale, −min) minimizing the
// weighted error, searched over nstep+1 candidate scales.
func makeQKX2(nmax int, x, weights []float32, L, laux []uint8, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	n := len(x)
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		mn = min(mn, x[i])
		mx = max(mx, x[i])
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		for i := range L[:n] {
			L[i] = 0
		}
		return 0, -mn
	}
	fn := float32(nmax)
	iscale := fn / (mx - mn)
	scale = 1 / iscale
	var bestMad float32
	for i := 0; i < n; i++ {
		l := nearestInt(float32(iscale * float32(x[i]-mn)))
		L[i] = uint8(max(0, min(nmax, l)))
		diff := float32(float32(float32(scale*float32(L[i]))+mn) - x[i])
		bestMad += float32(weights[i] * float32(diff*diff))
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+fn) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := 0; i < n; i++ {
			l := nearestInt(float32(iscale * float32(x[i]-mn)))
			l = max(0, min(nmax, l))
			laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var mad float32
			for i := 0; i < n; i++ {
				diff := float32(float32(float32(thisScale*float32(laux[i]))+thisMin) - x[i])
				mad += float32(weights[i] * float32(diff*diff))
			}
			if mad < bestMad {
				copy(L[:n], laux[:n])
				bestMad, scale, mn = mad, thisScale, thisMin
			}
		}
	}
	return scale, -mn
}

func sqrt32(v float32) float32 { return float32(math.Sqrt(float64(v))) }

func quantQ4_KBlock(out []byte, x []float32) {
	var L [256]uint8
	var laux [32]uint8
	var weights [32]float32
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		xj := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xj {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / 32)
		for l, v := range xj {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2(15, xj, weights[:], L[32*j:32*j+32], laux[:], -1, 0.1, 20)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := out[4:16]
	for i := range sc {
		sc[i] = 0
	}
	for j := 0; j < 8; j++ {
		ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putF16(out, maxScale/63)
	putF16(out[2:], maxMin/63)
	d, dmin := f16(out), f16(out[2:])
	for j := 0; j < 8; j++ {
		s, m := scaleMinK4(j, sc)
		dj := float32(d * float32(s))
		if dj == 0 {
			continue
		}
		dm := float32(dmin * float32(m))
		for ii := 0; ii < 32; ii++ {
			l := nearestInt(float32(x[32*j+ii]+dm) / dj)
			L[32*j+ii] = uint8(max(0, min(15, l)))
		}
	}
	q := out[16:144]
	for j := 0; j < 256; j += 64 {
		for l := 0; l < 32; l++ {
			q[j/2+l] = L[j+l] | L[j+l+32]<<4
		}
	}
}

// makeQX is ggml's make_qx_quants with rmse_type 1 and no importance weights: codes L in
// [0, 2·nmax) (offset by nmax) and the scale, searched over 19 candidate scales.
func makeQX(nmax int, x []float32, L []int8) float32 {
	var mx, amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, mx = a, v
		}
	}
	if amax < 1e-15 {
		for i := range L[:len(x)] {
			L[i] = 0
		}
		return 0
	}
	fn := float32(nmax)
	iscale := -fn / mx
	var sumLX, sumL2 float32
	for i, v := range x {
		l := nearestInt(float32(iscale * v))
		l = max(-nmax, min(nmax-1, l))
		L[i] = int8(l + nmax)
		w := float32(v * v)
		fl := float32(l)
		sumLX += float32(float32(w*v) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -float32(fn+float32(0.1*float32(is))) / mx
		sumLX, sumL2 = 0, 0
		for _, v := range x {
			l := nearestInt(float32(iscale * v))
			l = max(-nmax, min(nmax-1, l))
			w := float32(v * v)
			fl := float32(l)
			sumLX += float32(float32(w*v) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i, v := range x {
				l := nearestInt(float32(iscale * v))
				L[i] = int8(nmax + max(-nmax, min(nmax-1, l)))
			}
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}

func quantQ6_KBlock(out []byte, x []float32) {
	var L [256]int8
	var scales [16]float32
	var maxScale, maxAbs float32
	for ib := 0; ib < 16; ib++ {
		s := makeQX(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
		scales[ib] = s
		if a := abs32(s); a > maxAbs {
			maxAbs, maxScale = a, s
		}
	}
	for i := range out[:q6_KBytes] {
		out[i] = 0
	}
	if maxAbs < 1e-15 {
		return
	}
	iscale := -128 / maxScale
	putF16(out[208:], 1/iscale)
	sc := out[192:208]
	for ib := range scales {
		sc[ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
	}
	d := f16(out[208:])
	for j := 0; j < 16; j++ {
		dj := float32(d * float32(int8(sc[j])))
		if dj == 0 {
			continue
		}
		for ii := 0; ii < 16; ii++ {
			l := nearestInt(x[16*j+ii] / dj)
			L[16*j+ii] = int8(max(-32, min(31, l)) + 32)
		}
	}
	ql, qh := out[0:128], out[128:192]
	for j := 0; j < 256; j += 128 {
		for l := 0; l < 32; l++ {
			q1, q2, q3, q4 := uint8(L[j+l]), uint8(L[j+l+32]), uint8(L[j+l+64]), uint8(L[j+l+96])
			ql[j/2+l] = q1&0xf | (q3&0xf)<<4
			ql[j/2+l+32] = q2&0xf | (q4&0xf)<<4
			qh[j/4+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}
