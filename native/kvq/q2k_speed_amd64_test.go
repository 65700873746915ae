//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/kvlab/kvlab/internal/cputime"
)

// TestQ2KDecodeSplit reports where a q2k decode step's time goes at head dimension 128, four
// queries (one KV head of the judged 32/8 shape), per cell in thread CPU time, on the kernels
// this CPU and the KVLAB_NO_* switches select: the scores
// (ScoresRangeMulti over 4096-cell calls, as attn.Decode's chunks), their per-group query
// preparation alone (both halves, per cell: a group's work over its 32 cells) and the cells'
// kernel alone, and q4_0's values (AccumulateManyMulti, q2k's V), each in cache (4096 cells)
// and streamed (2²⁰ cells, ~40 MiB of K and ~72 MiB of V). Min and median of
// KVLAB_SPEED_ROUNDS rounds (default 7), the parts alternated in each. It runs only when
// KVLAB_SPEED_REPORT is set.
func TestQ2KDecodeSplit(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const d, chunk, small, big = 128, 4096, 4096, 1 << 20
	rounds := speedRounds(7)
	h := newQ2K(t, d, 1.1)
	rng := rand.New(rand.NewPCG(3, 4))
	kv := gaussianRows(rng, 1<<15, d, 1)
	for n := 0; n < big; n += 1 << 15 {
		h.Append(kv)
	}
	q := gaussianRows(rng, 4, d, 1)
	vc := mustCodec(t, Q4_0, d)
	rb := vc.RowBytes()
	venc := make([]byte, big*rb)
	EncodeRows(vc, venc[:(1<<15)*rb], kv, 1<<15)
	for i := 1 << 15; i < big; i += 1 << 15 {
		copy(venc[i*rb:], venc[:(1<<15)*rb])
	}
	mq := vc.(MultiQuery)
	w := make([]float32, 4*chunk)
	for i := range w {
		w[i] = 1.0 / chunk
	}
	acc := make([]float32, 4*d)
	out := make([]float32, 4*chunk)
	gb := int(Q2KGroupBytes(d))
	var scratch [4 * q2kMultiMaxDim]float32
	type part struct {
		name string
		run  func(cells int) // over the first cells cells (chunk at a time)
		ts   [2][]time.Duration
	}
	scores := func(cells int) {
		for c := 0; c < cells; c += chunk {
			h.ScoresRangeMulti(q, 4, c, out)
		}
	}
	prep := func(cells int) {
		for g := 0; g < cells/GroupCells; g++ {
			grp := h.Groups()[g*gb:]
			if q2kPrep(&q[0], d, &grp[0], &scratch[0], true) {
				q2kDigitsBAVX512(&q[0], d, &grp[0], (*byte)(unsafe.Pointer(&scratch[0])), (*uint32)(unsafe.Add(unsafe.Pointer(&scratch[0]), q2kDigBytes)))
			} else {
				q2kDigitsAVX2(&q[0], d, &grp[0], (*byte)(unsafe.Pointer(&scratch[0])), (*uint32)(unsafe.Add(unsafe.Pointer(&scratch[0]), q2kDigBytes)))
			}
		}
	}
	values := func(cells int) {
		for c := 0; c < cells; c += chunk {
			mq.AccumulateManyMulti(acc, 4, w, venc[c*rb:(c+chunk)*rb])
		}
	}
	parts := []*part{{name: "scores", run: scores}, {name: "  prep", run: prep}, {name: "values (q4_0)", run: values}}
	if q2kVNNI(d) {
		prep(GroupCells) // the digits of group 0 for the kernel's timing (its sums do not depend on them)
		off := [5]float32{4: turboUnit2}
		dig, aux := (*byte)(unsafe.Pointer(&scratch[0])), (*uint32)(unsafe.Add(unsafe.Pointer(&scratch[0]), q2kDigBytes))
		var stage [32]uint32
		kern := func(cells int) {
			for g := 0; g < cells/GroupCells; g++ {
				rows := &h.Groups()[g*gb+2*d]
				if hasAVX512BW {
					multiScoresQ2KPVNNI(dig, aux, d/64, rows, d/4, GroupCells, &out[0], 16, &off[0], nil)
				} else {
					q2kCellsAVX2(dig, aux, d/64, rows, d/4, GroupCells, &out[0], 16, &off[0], &stage)
				}
			}
		}
		parts = slices.Insert(parts, 2, &part{name: "  cells", run: kern})
	}
	for r := 0; r < rounds; r++ {
		for _, p := range parts {
			for i, n := range []int{small, big} {
				if n == small {
					p.run(n) // bring the cells into the cache
				}
				t0 := cputime.Thread()
				p.run(n)
				p.ts[i] = append(p.ts[i], cputime.Thread()-t0)
			}
		}
	}
	for _, p := range parts {
		var s [2]string
		for i, n := range []int{small, big} {
			slices.Sort(p.ts[i])
			s[i] = fmt.Sprintf("%.2f/%.2f", float64(p.ts[i][0].Nanoseconds())/float64(n), float64(p.ts[i][len(p.ts[i])/2].Nanoseconds())/float64(n))
		}
		t.Logf("%-14s ns a cell (min/median): in cache %s, streamed %s", p.name, s[0], s[1])
	}
}
