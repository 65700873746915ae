package wkern

// permQ8 says whether a one-token Q8 activation also gets the regrouped copy of its codes
// that the 16-block kernels read (vnni_amd64.go sets it where they run).
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
