package wkern

// permQ8 says whether a one-token Q8 activation also gets the regrouped copy of its codes
// that the 16-block kernels read, and a one-token Q8K activation the one that the Q4_K row
// kernel reads (vnni_amd64.go sets it where they run).
var permQ8 bool

// permuteQ8 fills P, PD and PS from a one-token Q8 activation, for every whole group of 16
// blocks (512 values; a tail of fewer blocks is left to the plain kernels). Within a group,
// each run of 4 blocks b0…b3 becomes their first 16 codes (b0[0:16] b1[0:16] b2[0:16]
// b3[0:16]) then their last 16, the halves that a 64-byte vector of the 4 blocks' low and
// high nibbles multiplies; the group's 16 scales and d·Σq go in the order j → block
// 4·(j mod 4) + j/4, the order in which the kernel's reduction leaves the 16 block sums.
func (a *Act) permuteQ8() {
	groups := a.Cols / 512
	a.P = grow(a.P, groups*512)
	a.PD = grow(a.PD, groups*16)
	a.PS = grow(a.PS, groups*16)
	for g := 0; g < groups; g++ {
		q, p := a.Q[512*g:512*g+512], a.P[512*g:512*g+512]
		for k := 0; k < 4; k++ {
			for l := 0; l < 4; l++ {
				b := 4*k + l
				copy(p[128*k+16*l:128*k+16*l+16], q[32*b:32*b+16])
				copy(p[128*k+64+16*l:128*k+64+16*l+16], q[32*b+16:32*b+32])
			}
		}
		for j := 0; j < 16; j++ {
			b := 16*g + 4*(j%4) + j/4
			a.PD[16*g+j], a.PS[16*g+j] = a.D[b], a.S[b]
		}
	}
}

// permuteQ8K fills QK from a one-token Q8K activation: within every 128 codes, the 32-code
// sub-blocks in the order 0, 2, 1, 3, so that the Q4_K row kernel multiplies 64 bytes of
// nibbles (two 32-byte groups, each the low nibbles of one sub-block and the high nibbles of the
// next) by 64 contiguous codes: the low nibbles by sub-blocks 0 and 2, the high by 1 and 3.
func (a *Act) permuteQ8K() {
	a.QK = grow(a.QK, a.Cols)
	for o := 0; o+128 <= a.Cols; o += 128 {
		q, p := a.Q[o:o+128], a.QK[o:o+128]
		copy(p[0:32], q[0:32])
		copy(p[32:64], q[64:96])
		copy(p[64:96], q[32:64])
		copy(p[96:128], q[96:128])
	}
}
