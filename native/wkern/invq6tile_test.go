package wkern

import (
	"testing"

	"github.com/kvlab/kvlab/native/gguf"
)

// q6TileOrder is a Q6_K row times token tok of a in the order the tile kernels state
// (invq6tile_amd64.go): per super-block the exact I = Σ_G sc_G·Σ_{i∈G} (code_i − 32)·q_i, then
// acc = fma(float32(I)·d_t, dw, acc), the fused multiply-add rounded once.
func q6TileOrder(row []byte, a *Act, tok int) float32 {
	nb := a.Cols / 256
	var acc float32
	for b := 0; b < nb; b++ {
		blk := row[b*q6_KBytes : (b+1)*q6_KBytes]
		q := a.Q[tok*a.Cols+256*b : tok*a.Cols+256*b+256]
		var sum int64
		for g := 0; g < 16; g++ {
			var i int64
			for v := 16 * g; v < 16*g+16; v++ {
				n, r := v/128, v%128 // half, value within it
				l, s := r%32, r/32   // position, quarter-plane
				ql := blk[64*n+l+32*(s&1)]
				if s >= 2 {
					ql >>= 4
				}
				code := int64(ql&15) | int64(blk[128+32*n+l]>>(2*s)&3)<<4
				i += (code - 32) * int64(q[v])
			}
			sum += int64(int8(blk[192+g])) * i
		}
		if sum != int64(int32(sum)) {
			panic("q6TileOrder: I overflows int32")
		}
		x := float32(sum) * a.D[tok*nb+b]
		acc = fma32(x, f16(blk[208:]), acc)
	}
	return acc
}

// TestInvTileOrderQ6: the Q6_K tile kernels compute, bit for bit, the operations their comment
// states (q6TileOrder), for 1–27 tokens (every kernel: one token, groups of eight with each rest
// 0…7, a second tile of 1…11 tokens) over 37 rows (a short last row group) and on the largest
// integer sums the format allows; every output is the same bits whatever the tokens multiplied
// together (1–27) and the split of the rows; and each is within the kernels' error bound of the
// float64 product of the dequantized weights. A wrong
// sub-block scale, a code's high bits from the wrong position, a token's chain fed another
// token's codes or operands, all change some output's bits.
func TestInvTileOrderQ6(t *testing.T) {
	// The largest sums: codes 0 (−32) and 63 (+31), scales −128 and 127, every activation code
	// ±127: |I| = 16·16·32·127·128, exact in int32.
	ext := make([]byte, 16*2*q6_KBytes)
	for i := 0; i < len(ext); i += q6_KBytes {
		blk := ext[i : i+q6_KBytes]
		hi := byte(0)
		if i/q6_KBytes%3 == 1 {
			hi = 0xff // codes 63
		}
		for j := 0; j < 192; j++ {
			blk[j] = hi
		}
		for g := 0; g < 16; g++ {
			blk[192+g] = 0x80 // −128
			if i/q6_KBytes%5 == 2 {
				blk[192+g] = 127
			}
		}
		blk[208], blk[209] = 0x00, 0x3c // 1.0
	}
	checkKTileOrder(t, gguf.Q6_K, 6, q6TileOrder, ext)
}
