//go:build amd64 && !purego

package kvq

import (
	"math"

	"golang.org/x/sys/cpu"
)

// hasVNNI reports the AVX-512 VNNI q4_0 and q8_0 scores kernels (multi_vnni_amd64.s), which
// also use AVX-512 DQ (every CPU with VNNI so far has it; checked all the same).
var hasVNNI = hasAVX512 && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512DQ

// hasVNNIBW reports the iq4_nl VNNI kernel, which also looks its levels up with the AVX-512 BW
// VPSHUFB.
var hasVNNIBW = hasVNNI && cpu.X86.HasAVX512BW

// q4_0, q8_0 and iq4_nl scores through VNNI. Each query's block of 32 values is quantized to integers
// Q = round(q/s), s = max|q over the block| / vnniQMax, written as three signed 7-bit digits
// (Q = hi·2¹⁴ + mid·2⁷ + lo); the kernels form the digits' dots with the codes exactly in int32
// (VPDPBUSD, one row per lane), combine them into Σ Q·x/d (in int32 for q4_0's 4-bit codes, in
// float32 for q8_0's 8-bit ones, whose sum needs 34 bits) and add s·d·Σ to the score (d the
// row's block scale). The only departure from the float kernels is the query's quantization,
// |q − s·Q| ≤ s/2:
//
//	|DotManyMulti − Dot| ≤ 2⁻²¹·Σ_b max_{i∈b}|q[i]|·Σ_{i∈b}|x[i]| + 1e-5·Σ_i |q[i]·x[i]|,
//
// the first term the quantization (s/2 ≤ 2⁻²¹·max|q| per value), the second the float
// rounding of the converted block dots, their scaling and the sum over blocks, as for the
// float kernels. A row's score depends only on its own bytes and the query: rows run sixteen
// at a time, one per lane, and a short last group is padded with zero rows.

// vnniQMax is the largest |Q|: 127·2¹⁴ + 63·2⁷ + 63, so every digit fits a signed byte and
// Σ over a block of Q·c (c ≤ 15, q4_0) stays below 2³¹.
const vnniQMax = 127<<14 + 63<<7 + 63

// vnniBlockBytes is one block's digits: four queries × three digits × 32 bytes;
// vnniAuxWords its scales and offsets (vnniDigits).
const (
	vnniBlockBytes = 4 * 3 * 32
	vnniAuxWords   = 20
)

// vnniTwo7 and vnniTwo14 are the q8_0 kernel's digit weights.
var vnniTwo7, vnniTwo14 float32 = 1 << 7, 1 << 14

// vnniMaxBlocks is the largest row (in 32-value blocks) whose buffers live on the stack.
const vnniMaxBlocks = 8

//go:noescape
func vnniDigitsAVX512(dig *byte, aux *uint32, q *float32, d, nb int) bool

//go:noescape
func multiScoresQ40VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiScoresIQ4NLVNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int)

//go:noescape
func multiScoresQ80VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int)

// vnniDigits prepares four queries of d values (q[h·d:]) for the kernels over nb whole blocks:
// dig[b·384 + (h·3+t)·32 + i] is digit t (hi, mid, lo) of value 32b+i of query h; aux holds
// vnniAuxWords words a block: [h] the bits of s, [4+h] the int32 −8·ΣQ (q4_0's offset), and
// [8+3h+t] −128·Σ of digit t (where q8_0's chains start).
func vnniDigits(dig []byte, aux []uint32, q []float32, d, nb int) {
	for b := 0; b < nb; b++ {
		for h := 0; h < 4; h++ {
			qb := (*[32]float32)(q[h*d+32*b:])
			var m float32
			finite := true
			for _, x := range qb {
				a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
				if a > m {
					m = a
				}
				finite = finite && a <= math.MaxFloat32
			}
			dd := (*[96]byte)(dig[b*vnniBlockBytes+h*96:])
			var sum int32
			s := m / vnniQMax
			if !finite || !(s > 0) {
				// A non-finite value makes every score of the query NaN; a block too small
				// for s to be a normal number contributes nothing (below 2⁻¹⁰⁵ of the scale).
				clear(dd[:])
				s = 0
				if !finite {
					s = float32(math.NaN())
				}
			} else {
				// In float32, |x·inv − x/s| ≤ 2⁻²⁴·vnniQMax < ⅛, so |q − s·Q| < ⅝·s ≤ 2⁻²¹·m.
				inv := vnniQMax / m
				for i, x := range qb {
					v := x * inv
					Q := int32(math.RoundToEven(float64(v)))
					Q = min(max(Q, -vnniQMax), vnniQMax)
					sum += Q
					lo := (Q+64)&127 - 64
					r := (Q - lo) >> 7
					mid := (r+64)&127 - 64
					dd[i], dd[32+i], dd[64+i] = byte(int8((r-mid)>>7)), byte(int8(mid)), byte(int8(lo))
				}
			}
			a := aux[b*vnniAuxWords : (b+1)*vnniAuxWords]
			a[h] = math.Float32bits(s)
			a[4+h] = uint32(-8 * sum)
			for t := 0; t < 3; t++ {
				var ds int32
				for _, v := range dd[32*t : 32*t+32] {
					ds += int32(int8(v))
				}
				a[8+3*h+t] = uint32(-128 * ds)
			}
		}
	}
}

// The VNNI scores kernels vnniScores runs.
const (
	vnniQ4_0 = iota
	vnniQ8_0
	vnniIQ4NL
)

// vnniScores is DotManyMulti through the VNNI kernel of kind (vnniQ4_0, vnniQ8_0, vnniIQ4NL)
// over the nb whole blocks of each row, then tail (nil for none) for the values past them.
func vnniScores(kind int, d, rb, nb int, tail func(q []float32, row []byte) float32, q []float32, n int, rows []byte, out []float32) {
	m := len(out) / n
	q, rows, out = q[:n*d], rows[:m*rb], out[:m*n]
	if m == 0 {
		return
	}
	var digStack [vnniMaxBlocks * vnniBlockBytes]byte
	var auxStack [vnniMaxBlocks * vnniAuxWords]uint32
	var stageStack [vnniMaxBlocks * 16]uint16
	dig, aux, stage := digStack[:], auxStack[:], stageStack[:]
	if nb > vnniMaxBlocks {
		dig, aux, stage = make([]byte, nb*vnniBlockBytes), make([]uint32, nb*vnniAuxWords), make([]uint16, nb*16)
	}
	kernel := func(rows *byte, m int, out *float32, ostride int) {
		switch kind {
		case vnniQ8_0:
			multiScoresQ80VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride)
		case vnniIQ4NL:
			multiScoresIQ4NLVNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride)
		default:
			multiScoresQ40VNNI(&dig[0], &aux[0], &stage[0], nb, rows, rb, m, out, ostride)
		}
	}
	var padStack [16 * vnniMaxBlocks * 34]byte
	var tmp [16 * 4]float32
	var qpad [4 * multiScratchDim]float32 // a short last group of queries, padded to 4
	whole := m &^ 15
	for h := 0; h < n; h += 4 {
		r := min(4, n-h)
		qh := q[h*d : (h+r)*d]
		if r < 4 {
			qh = padQueries(qpad[:], qh, d)
		}
		if !vnniDigitsAVX512(&dig[0], &aux[0], &qh[0], d, nb) {
			vnniDigits(dig, aux, qh, d, nb) // a non-finite value: the reference says what to do
		}
		if whole > 0 {
			if r == 4 {
				kernel(&rows[0], whole, &out[h], 4*n)
			} else {
				for j0 := 0; j0 < whole; j0 += 16 {
					kernel(&rows[j0*rb], 16, &tmp[0], 16)
					for j := 0; j < 16; j++ {
						copy(out[(j0+j)*n+h:(j0+j)*n+h+r], tmp[4*j:4*j+r])
					}
				}
			}
		}
		if rest := m - whole; rest > 0 {
			pad := padStack[:]
			if 16*rb > len(pad) {
				pad = make([]byte, 16*rb)
			}
			pad = pad[:16*rb]
			clear(pad[copy(pad, rows[whole*rb:]):])
			kernel(&pad[0], 16, &tmp[0], 16)
			for j := 0; j < rest; j++ {
				copy(out[(whole+j)*n+h:(whole+j)*n+h+r], tmp[4*j:4*j+r])
			}
		}
	}
	if tail != nil {
		for j := 0; j < m; j++ {
			row := rows[j*rb : (j+1)*rb]
			for h := 0; h < n; h++ {
				out[j*n+h] += tail(q[h*d:(h+1)*d], row)
			}
		}
	}
}

// q4ScoresVNNI is DotManyMulti for q4_0 rows through the VNNI kernel.
func (c *q4_0Codec) q4ScoresVNNI(q []float32, n int, rows []byte, out []float32) {
	td, _ := c.tails()
	vnniScores(vnniQ4_0, c.d, c.rb, c.full, td, q, n, rows, out)
}

// q8ScoresVNNI is DotManyMulti for q8_0 rows through the VNNI kernel.
func (c *q8_0Codec) q8ScoresVNNI(q []float32, n int, rows []byte, out []float32) {
	td, _ := c.tails()
	vnniScores(vnniQ8_0, c.d, c.rb, c.full, td, q, n, rows, out)
}

// iq4ScoresVNNI is DotManyMulti for iq4_nl rows through the VNNI kernel.
func (c *iq4nlCodec) iq4ScoresVNNI(q []float32, n int, rows []byte, out []float32) {
	td, _ := c.tails()
	vnniScores(vnniIQ4NL, c.d, c.rb, c.full, td, q, n, rows, out)
}
