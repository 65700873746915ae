package kvq

// q2kMultiMaxDim is the largest head dimension ScoresRangeMulti's kernel stages on the stack.
const q2kMultiMaxDim = 256

// Q2KFastPath reports whether ScoresRangeMulti runs a SIMD kernel at head dimension d (on this
// CPU and build): d a multiple of 32 up to 256, on amd64 with AVX2, FMA and F16C (AVX-512 F
// and BW run a 512-bit kernel) and on every arm64 CPU (NEON), outside purego builds.
func Q2KFastPath(d int) bool { return hasQ2KKernel && d%32 == 0 && d <= q2kMultiMaxDim }

// q2kScratch is ScoresRangeMulti's two scratch buffers of four queries' preparation, which
// q2kScoresGroups also takes whole as one (q2kScratchBytes).
type q2kScratch = [2][4 * q2kMultiMaxDim]float32

// ScoresRangeMulti writes out[j·n+h] = q_h·k̂_{first+j} for the n queries q[h·d:(h+1)·d] and the
// cells [first, first+len(out)/n), which must lie within [0, Len()). Where Q2KFastPath(d) it
// reads each cell once for four queries at a time: per group q_h[c]·scale_c is formed once
// (one rounding), then per cell fused multiply-adds over the levels, reduced pairwise (amd64:
// 8 lanes in two partial sums per query; arm64: 16 lanes, four vectors of four, per query):
// within (d/16 + 9)·2⁻²⁴·Σ_c |q_c·k̂_c| of the exact score; with AVX-512 and d a multiple of
// 64, sixteen cells a pass, one per lane, four chains of d/4 products a query summed pairwise
// (q2kScores): within (d/4 + 4)·2⁻²⁴·Σ_c |q_c·k̂_c|; with AVX-512 VNNI and VBMI too and d a
// multiple of 64, integer dots of the codes with q_c·scale_c rounded per group and 64-channel
// block (32 on CPUs without AVX-512) to one signed byte (q2kScoresInt, which states the bound). Elsewhere it is
// ScoresRange per query. For finite queries and scales a query's scores do not depend on n or
// its place among them; where a query of a batch of four is not finite, or a group's q' overflows,
// the whole batch takes the float kernel for that group.
func (h *Q2KHead) ScoresRangeMulti(q []float32, n, first int, out []float32) {
	if n <= 0 {
		return
	}
	d := h.d
	m := len(out) / n
	q, out = q[:n*d], out[:m*n]
	if m == 0 {
		return
	}
	if !Q2KFastPath(d) {
		bp := getPerQuery(m)
		tmp := (*bp)[:m]
		for i := 0; i < n; i++ {
			h.ScoresRange(q[i*d:(i+1)*d], first, tmp)
			for j, x := range tmp {
				out[j*n+i] = x
			}
		}
		perQueryBufs.Put(bp)
		return
	}
	if first < 0 || first+m > h.n {
		panic("kvq: q2k: scores of cells out of range")
	}
	gb := int(q2kGroupBytes(d))
	// Two scratch buffers: the current group's and the next one's, whose preparation q2kPrep
	// starts before the current group's cells (where the kernel has one to start).
	var qs q2kScratch
	var qp [4 * q2kMultiMaxDim]float32
	var tmp [GroupCells * 4]float32
	for i := 0; i < n; i += 4 {
		r := min(4, n-i)
		qq := q[i*d:]
		if r < 4 {
			clear(qp[:4*d])
			copy(qp[:r*d], q[i*d:n*d])
			qq = qp[:]
		}
		// Whether the four queries are finite: the AVX-512 VNNI preparation takes them so
		// (q2kQueriesFinite; true where no kernel needs it).
		fin := q2kQueriesFinite(&qq[0], d)
		cur, prepped := 0, false
		for cell := first; cell < first+m; {
			g, j0 := cell/GroupCells, cell%GroupCells
			if ng := (first + m - cell) / GroupCells; r == 4 && j0 == 0 && ng > 0 && fin {
				// Whole groups, where the kernel takes them in one go (qs its scratch).
				grp := h.data[g*gb : (g+ng)*gb]
				done := q2kScoresGroups(&qq[0], d, &grp[0], ng, &qs[0][0], &out[(cell-first)*n+i], 4*n)
				cur, prepped = 0, false // qs holds the groups' preparation now
				if done > 0 {
					cell += done * GroupCells
					continue
				}
			}
			k := min(GroupCells-j0, first+m-cell)
			grp := h.data[g*gb : (g+1)*gb]
			nextPrepped := false
			if cell+k < first+m {
				next := h.data[(g+1)*gb : (g+2)*gb]
				nextPrepped = q2kPrep(&qq[0], d, &next[0], &qs[1-cur][0], fin)
			}
			o := out[(cell-first)*n+i:]
			if r == 4 {
				q2kScores(&qq[0], d, &grp[0], j0, k, &qs[cur][0], &o[0], 4*n, prepped, fin)
			} else {
				q2kScores(&qq[0], d, &grp[0], j0, k, &qs[cur][0], &tmp[0], 16, prepped, fin)
				for j := 0; j < k; j++ {
					copy(o[j*n:j*n+r], tmp[4*j:4*j+r])
				}
			}
			cur, prepped = 1-cur, nextPrepped
			cell += k
		}
	}
}
