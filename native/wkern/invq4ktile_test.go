package wkern

import (
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// q4kTileOrder is a Q4_K row times token tok of a in the order the tile kernels state
// (invq4ktile_amd64.go): per super-block the exact SQ = Σ_j sc_j·Σ_{i∈j} code_i·q_i and
// SM = Σ_j m_j·Σ_{i∈j} q_i, then x = fma(−float32(SM), dmin, float32(SQ)·dw) and
// acc = fma(x, d_t, acc), each fused multiply-add rounded once.
func q4kTileOrder(row []byte, a *Act, tok int) float32 {
	nb := a.Cols / 256
	var acc float32
	for b := 0; b < nb; b++ {
		blk := row[b*q4_KBytes : (b+1)*q4_KBytes]
		q := a.Q[tok*a.Cols+256*b : tok*a.Cols+256*b+256]
		var sq, sm int64
		for j := 0; j < 8; j++ {
			sc, m := scaleMinK4(j, blk[4:16])
			var i, s int64
			for v := 32 * j; v < 32*j+32; v++ {
				c := blk[16+32*(j/2)+v%32]
				if j%2 == 1 {
					c >>= 4
				}
				i += int64(c&15) * int64(q[v])
				s += int64(q[v])
			}
			sq += int64(sc) * i
			sm += int64(m) * s
		}
		if sq != int64(int32(sq)) || sm != int64(int32(sm)) {
			panic("q4kTileOrder: a sum overflows int32")
		}
		x := fma32(-float32(sm), f16(blk[2:]), float32(sq)*f16(blk))
		acc = fma32(x, a.D[tok*nb+b], acc)
	}
	return acc
}

// TestInvTileOrderQ4K: the Q4_K tile kernels compute, bit for bit, the operations their
// comment states (q4kTileOrder), for 1–27 tokens (every kernel: one token, groups of eight
// with each rest 0…7, a second tile of 1…11 tokens) over 37 rows (a short last row group) and
// on the largest integer sums the format allows; every output is the same bits whatever the
// tokens multiplied together (1–27) and the split of the rows; and each is within the kernels'
// error bound of the float64 product of the dequantized weights. A wrong sub-block scale or
// min (a nibble or high bits from the wrong byte), the min term dropped, a code's nibble from
// the wrong half, a token's chain fed another token's codes or operands, all change some
// output's bits.
func TestInvTileOrderQ4K(t *testing.T) {
	// The largest sums: codes 15 (or 0 in every third super-block), scales and mins 63, every
	// activation code ±127: |SQ| = 8·63·32·15·127, |SM| = 8·63·32·127, exact in int32.
	ext := make([]byte, 16*2*q4_KBytes)
	for i := 0; i < len(ext); i += q4_KBytes {
		blk := ext[i : i+q4_KBytes]
		c := byte(0xff)
		if i/q4_KBytes%3 == 1 {
			c = 0
		}
		for j := 16; j < q4_KBytes; j++ {
			blk[j] = c
		}
		for j := 4; j < 16; j++ {
			blk[j] = 0xff // every sc_j and m_j 63
		}
		blk[0], blk[1] = 0x00, 0x3c // d 1.0
		blk[2], blk[3] = 0x00, 0x38 // dmin 0.5
	}
	checkKTileOrder(t, gguf.Q4_K, 4, q4kTileOrder, ext)
}
