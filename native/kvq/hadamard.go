package kvq

import (
	"math"
	"math/bits"
)

// fwht applies the unnormalized Walsh–Hadamard transform H (Sylvester order, H symmetric and
// H·H = n·I) to x in place. len(x) must be a power of two. It costs n·log2(n) additions.
func fwht(x []float32) {
	n := len(x)
	h := 1
	if n >= 4 {
		// The first two stages at once, in the same operation order as stage by stage.
		for i := 0; i+4 <= n; i += 4 {
			v := (*[4]float32)(x[i:])
			a0, a1, a2, a3 := v[0]+v[1], v[0]-v[1], v[2]+v[3], v[2]-v[3]
			v[0], v[1], v[2], v[3] = a0+a2, a1+a3, a0-a2, a1-a3
		}
		h = 4
	}
	for ; h < n; h <<= 1 {
		for i := 0; i < n; i += 2 * h {
			a, b := x[i:i+h], x[i+h:i+2*h]
			for j := range a {
				u, v := a[j], b[j]
				a[j], b[j] = u+v, u-v
			}
		}
	}
}

// rotation is a randomized Hadamard rotation of R^d: R = blockdiag(H_k·D_k/√n_k), the blocks
// being the powers of two in d's binary expansion from the largest down (128 = 128,
// 80 = 64 + 16, 96 = 64 + 32, 100 = 64 + 32 + 4), each D_k a diagonal of ±1 signs; R·x is
// computed as H(D·x/√n) by the fast transform. R is orthogonal, so ‖R·x‖ = ‖x‖ and
// (R·q)·(R·x) = q·x, up to float32 rounding (1/√n is exact for n a power of 4 and rounded to
// float32 otherwise; RᵀR·x returns x within about log2(n)·2^-23 relative). A block mixes only
// its own coordinates, so small trailing blocks (odd or tiny head dimensions) spread outliers
// less. The signs are part of the TQ4 format: stored rows decode only with the same rotation.
type rotation struct {
	d      int
	chunks []int     // block sizes, largest first, summing to d
	sc     []float32 // sc[i] = sign_i/√(n of i's block): the diagonal of D/√n
}

// newRotation draws the signs of D from splitmix64 seeded with
// seed ⊕ mix64(uint32(layer)<<32 | uint32(head)): element i takes bit i%64 of output i/64
// (1 = negative). The draw is a pure function of (seed, layer, head, d).
func newRotation(d int, seed uint64, layer, head int) *rotation {
	r := &rotation{d: d, sc: make([]float32, d)}
	for rest := d; rest > 0; {
		n := 1 << (bits.Len(uint(rest)) - 1)
		r.chunks = append(r.chunks, n)
		rest -= n
	}
	state := seed ^ mix64(uint64(uint32(layer))<<32|uint64(uint32(head)))
	var word uint64
	i := 0
	for _, n := range r.chunks {
		inv := float32(1 / math.Sqrt(float64(n)))
		for k := 0; k < n; k, i = k+1, i+1 {
			if i%64 == 0 {
				state += 0x9e3779b97f4a7c15
				word = mix64(state)
			}
			if word>>(i%64)&1 != 0 {
				r.sc[i] = -inv
			} else {
				r.sc[i] = inv
			}
		}
	}
	return r
}

// apply writes dst = R·src (dst and src may be the same slice).
func (r *rotation) apply(dst, src []float32) {
	if rotRowVec(r, dst, src, nil, nil) {
		return
	}
	dst, src = dst[:r.d], src[:r.d]
	for i, s := range r.sc {
		dst[i] = src[i] * s
	}
	off := 0
	for _, n := range r.chunks {
		fwht(dst[off : off+n])
		off += n
	}
}

// applyT writes dst = Rᵀ·src (dst and src may be the same slice).
func (r *rotation) applyT(dst, src []float32) {
	if rotRowTVec(r, dst, src) {
		return
	}
	dst = dst[:r.d]
	copy(dst, src[:r.d])
	off := 0
	for _, n := range r.chunks {
		fwht(dst[off : off+n])
		off += n
	}
	for i, s := range r.sc {
		dst[i] *= s
	}
}

// rotZeros and rotOnes stand in for a codec without offsets or scales in rotRowVec (rotate_amd64.go).
var (
	rotZeros [128]float32
	rotOnes  = func() (o [128]float32) {
		for i := range o {
			o[i] = 1
		}
		return
	}()
)

// mix64 is the splitmix64 output finalizer (Stafford's mix13).
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
