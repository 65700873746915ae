package engine

import (
	"math"
	"math/bits"

	"github.com/kvlab/kvlab/native/kvq"
)

// Tile is the number of cells per K tile and per q2k group: one warp, one cell per lane.
const Tile = 32

// unit is the width in bytes of the units of the tiled K layout: the largest power of two
// dividing the row bytes rb, at most 16 (common.cuh kv_unit).
func unit(rb int) int { return min(rb&-rb, 16) }

// tiledOffset is the offset of byte k of the row of cell in a tiled K pool head starting at
// headBase (common.cuh kv_tiled_offset): within tile cell/32, byte k of lane cell%32 sits at
// ((k/W)·32 + cell%32)·W + k%W.
func tiledOffset(headBase int64, cell, k, rb int) int64 {
	w := unit(rb)
	return headBase + int64(cell/Tile)*Tile*int64(rb) + (int64(k/w)*Tile+int64(cell%Tile))*int64(w) + int64(k%w)
}

// roundCap rounds a capacity in cells up to whole tiles.
func roundCap(cells int) int { return (cells + Tile - 1) / Tile * Tile }

// poolBytes is the device bytes of one layer's pool of format f for kvHeads heads of d
// values and capacity capCells (a multiple of Tile): whole rows, or whole q2k groups.
func poolBytes(f kvq.Format, d, kvHeads, capCells int) int64 {
	if f == kvq.Q2K {
		return int64(kvHeads) * int64(capCells/Tile) * kvq.Q2KGroupBytes(d)
	}
	return int64(kvHeads) * int64(capCells) * int64(f.RowBytes(d))
}

// Detile converts one head of a tiled K pool (the pool's bytes from headBase) into kvq's row
// layout for cells [0, n): rows of rb bytes laid end to end.
func Detile(pool []byte, headBase int64, n, rb int) []byte {
	out := make([]byte, n*rb)
	for c := 0; c < n; c++ {
		for k := 0; k < rb; k++ {
			out[c*rb+k] = pool[tiledOffset(headBase, c, k, rb)]
		}
	}
	return out
}

// Tiled converts rows (n rows of rb bytes) into the tiled layout of one head (capCells cells).
func Tiled(rows []byte, n, rb, capCells int) []byte {
	out := make([]byte, capCells*rb)
	for c := 0; c < n; c++ {
		for k := 0; k < rb; k++ {
			out[tiledOffset(0, c, k, rb)] = rows[c*rb+k]
		}
	}
	return out
}

// RotationDiag returns the diagonal of kvq's tq4 rotation for (seed, layer, head) at head
// dimension d: sc[i] = ±1/√n of i's power-of-two block, the sign drawn as kvq's newRotation
// draws it (splitmix64 seeded with seed ⊕ mix64(layer<<32 | head), bit i%64 of output i/64).
// R·x is then fwht(sc ⊙ x) per block, and Rᵀ·y is sc ⊙ fwht(y).
func RotationDiag(d int, seed uint64, layer, head int) []float32 {
	sc := make([]float32, d)
	state := seed ^ mix64(uint64(uint32(layer))<<32|uint64(uint32(head)))
	var word uint64
	i := 0
	for rest := d; rest > 0; {
		n := 1 << (bits.Len(uint(rest)) - 1)
		inv := float32(1 / math.Sqrt(float64(n)))
		for k := 0; k < n; k, i = k+1, i+1 {
			if i%64 == 0 {
				state += 0x9e3779b97f4a7c15
				word = mix64(state)
			}
			if word>>(i%64)&1 != 0 {
				sc[i] = -inv
			} else {
				sc[i] = inv
			}
		}
		rest -= n
	}
	return sc
}

func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// rotate applies R (transpose false) or Rᵀ to x in place with the diagonal sc, stage by stage
// as the device's fwht_warp does: the host's model of tq4_rotate, for tests.
func rotate(x, sc []float32, transpose bool) {
	if !transpose {
		for i := range x {
			x[i] *= sc[i]
		}
	}
	off := 0
	for rest := len(x); rest > 0; {
		n := 1 << (bits.Len(uint(rest)) - 1)
		y := x[off : off+n]
		for h := 1; h < n; h <<= 1 {
			for i := 0; i < n; i += 2 * h {
				for j := i; j < i+h; j++ {
					u, v := y[j], y[j+h]
					y[j], y[j+h] = u+v, u-v
				}
			}
		}
		off += n
		rest -= n
	}
	if transpose {
		for i := range x {
			x[i] *= sc[i]
		}
	}
}
