//go:build amd64 && !purego

package kvq

import (
	"math"

	"golang.org/x/sys/cpu"
)

// hasVNNI reports the AVX-512 VNNI q4_0 scores kernel (multi_vnni_amd64.s).
var hasVNNI = hasAVX512 && cpu.X86.HasAVX512VNNI

// q4_0 scores through VNNI. Each query's block of 32 values is quantized to integers
// Q = round(q/s), s = max|q over the block| / vnniQMax, written as three signed 7-bit digits
// (Q = hi·2¹⁴ + mid·2⁷ + lo); the kernel forms Σ Q·(c − 8) exactly in int32 from the 4-bit
// codes c and adds s·d·Σ to the score (d the row's block scale), so the only departure from
// the float kernels is the query's quantization, |q − s·Q| ≤ s/2:
//
//	|DotManyMulti − Dot| ≤ 2⁻²¹·Σ_b max_{i∈b}|q[i]|·Σ_{i∈b}|x[i]| + 1e-5·Σ_i |q[i]·x[i]|,
//
// the first term the quantization (s/2 ≤ 2⁻²¹·max|q| per value), the second the float
// rounding of the converted block dots, their scaling and the sum over blocks, as for the
// float kernels. A row's score depends only on its own bytes and the query: rows run sixteen
// at a time, one per lane, and a short last group is padded with zero rows.

// vnniQMax is the largest |Q|: 127·2¹⁴ + 63·2⁷ + 63, so every digit fits a signed byte and
// Σ over a block of Q·c (c ≤ 15) stays below 2³¹.
const vnniQMax = 127<<14 + 63<<7 + 63

// vnniBlockBytes is one block's digits: four queries × three digits × 32 bytes.
const vnniBlockBytes = 4 * 3 * 32

// vnniMaxBlocks is the largest row (in 32-value blocks) whose buffers live on the stack.
const vnniMaxBlocks = 8

//go:noescape
func vnniDigitsAVX512(dig *byte, aux *uint32, q *float32, d, nb int) bool

//go:noescape
func multiScoresQ40VNNI(dig *byte, aux *uint32, stage *uint16, nb int, rows *byte, rb, m int, out *float32, ostride int)

// vnniDigits prepares four queries of d values (q[h·d:]) for the kernel over nb whole blocks:
// dig[b·384 + (h·3+t)·32 + i] is digit t (hi, mid, lo) of value 32b+i of query h;
// aux[b·8 + h] the bits of s, aux[b·8 + 4 + h] the int32 −8·ΣQ.
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
			aux[b*8+h] = math.Float32bits(s)
			aux[b*8+4+h] = uint32(-8 * sum)
		}
	}
}

// q4ScoresVNNI is DotManyMulti for q4_0 rows through the VNNI kernel over the c.full whole
// blocks of each row, then the short block's tail.
func (c *q4_0Codec) q4ScoresVNNI(q []float32, n int, rows []byte, out []float32) {
	d, rb, nb := c.d, c.rb, c.full
	m := len(out) / n
	q, rows, out = q[:n*d], rows[:m*rb], out[:m*n]
	if m == 0 {
		return
	}
	var digStack [vnniMaxBlocks * vnniBlockBytes]byte
	var auxStack [vnniMaxBlocks * 8]uint32
	var stageStack [vnniMaxBlocks * 16]uint16
	dig, aux, stage := digStack[:], auxStack[:], stageStack[:]
	if nb > vnniMaxBlocks {
		dig, aux, stage = make([]byte, nb*vnniBlockBytes), make([]uint32, nb*8), make([]uint16, nb*16)
	}
	var padStack [16 * vnniMaxBlocks * 18]byte
	var tmp [16 * 4]float32
	whole := m &^ 15
	for h := 0; h < n; h += 4 {
		r := min(4, n-h)
		qh := q[h*d : (h+r)*d]
		if r < 4 {
			qh = padQueries(qh, d)
		}
		if !vnniDigitsAVX512(&dig[0], &aux[0], &qh[0], d, nb) {
			vnniDigits(dig, aux, qh, d, nb) // a non-finite value: the reference says what to do
		}
		if whole > 0 {
			if r == 4 {
				multiScoresQ40VNNI(&dig[0], &aux[0], &stage[0], nb, &rows[0], rb, whole, &out[h], 4*n)
			} else {
				for j0 := 0; j0 < whole; j0 += 16 {
					multiScoresQ40VNNI(&dig[0], &aux[0], &stage[0], nb, &rows[j0*rb], rb, 16, &tmp[0], 16)
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
			multiScoresQ40VNNI(&dig[0], &aux[0], &stage[0], nb, &pad[0], rb, 16, &tmp[0], 16)
			for j := 0; j < rest; j++ {
				copy(out[(whole+j)*n+h:(whole+j)*n+h+r], tmp[4*j:4*j+r])
			}
		}
	}
	if td, _ := c.tails(); td != nil {
		for j := 0; j < m; j++ {
			row := rows[j*rb : (j+1)*rb]
			for h := 0; h < n; h++ {
				out[j*n+h] += td(q[h*d:(h+1)*d], row)
			}
		}
	}
}
