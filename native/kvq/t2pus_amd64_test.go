//go:build amd64 && !purego

package kvq

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
)

// TestT2PUSplit checks multiScoresT2PUSVNNI against multiScoresT2PUVNNI bit for bit (scores 16
// bytes apart, as it takes them), for the d the paired kernel takes (64, 128) and 16 to 304
// rows (one group to several blocks of eight groups and a short last block), queries with an
// outlier and an all-zero one, with and without offsets, codes from random bytes and random f16
// row scales, some of them 0 and ±Inf; and the 64 floats past the scores untouched.
func TestT2PUSplit(t *testing.T) {
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	rng := rand.New(rand.NewPCG(23, 17))
	for _, d := range []int{64, 128} {
		nb := d / 32
		rb := d/4 + 2
		for groups := 1; groups <= 19; groups++ {
			m := 16 * groups
			rows := make([]byte, m*rb+64) // the kernels' masked loads stay within rows
			for i := range rows {
				rows[i] = byte(rng.Uint32())
			}
			for j := 0; j < m; j++ {
				s := F32ToF16(float32(rng.NormFloat64()))
				switch rng.IntN(16) {
				case 0:
					s = 0
				case 1:
					s = 0x7c00 // +Inf
				case 2:
					s = 0xfc00 // −Inf
				}
				binary.LittleEndian.PutUint16(rows[j*rb+rb-2:], s)
			}
			q := gaussianRows(rng, 4, d, 1)
			q[1*d+5] = 40 // an outlier
			clear(q[2*d : 3*d])
			for _, withOff := range []bool{false, true} {
				dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
				var off [16]float32
				vnniDigitsUni(dig, aux, q, d, nb, &off)
				t2DigitsPermute(&dig[0], nb*vnniBlockBytes/2/64)
				off[4] = turboUnit2
				if withOff {
					off[0], off[1], off[2], off[3] = 0.5, -3, 1e-3, 7
				}
				var outs [2][]float32
				for i, kern := range []vnniScoresKern{multiScoresT2PUVNNI, multiScoresT2PUSVNNI} {
					out := make([]float32, 4*m+64)
					for i := range out {
						out[i] = -7
					}
					var stage [16]uint32
					kern(&dig[0], &aux[0], d/64, &rows[0], rb, m, &out[0], 16, &off[0], &stage[0])
					outs[i] = out
				}
				for i := range outs[0] {
					a, b := outs[0][i], outs[1][i]
					if math.Float32bits(a) != math.Float32bits(b) && !(a != a && b != b) {
						t.Fatalf("d %d, %d rows, offsets %v: score %d (row %d, query %d) %g, want %g", d, m, withOff, i, i/4, i%4, b, a)
					}
				}
				for i := 4 * m; i < len(outs[1]); i++ {
					if outs[1][i] != -7 {
						t.Fatalf("d %d, %d rows: float %d past the scores overwritten", d, m, i-4*m)
					}
				}
			}
		}
	}
}

// TestT2PUSplitSpeed reports (KVLAB_SPEED_REPORT set) the thread-CPU time per row of d 128, four
// queries, of multiScoresT2PUVNNI and multiScoresT2PUSVNNI alternated, 4096-row calls in cache
// and over 96 MiB of rows from hugemem.Bytes in 4096-, 16384- and 64-row calls (streamed), min and
// median of KVLAB_SPEED_ROUNDS rounds (default 9).
func TestT2PUSplitSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX512VNNIVBMI() {
		t.Skip("no AVX-512 VNNI + VBMI")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rounds := speedRounds(9)
	const d = 128
	c := mustCodec(t, Turbo2, d)
	rb := c.RowBytes()
	src := outlierRows(rand.New(rand.NewPCG(9, 10)), benchRows, d)
	tile := make([]byte, benchRows*rb)
	for r := 0; r < benchRows; r++ {
		c.Encode(tile[r*rb:(r+1)*rb], src[r*d:(r+1)*d])
	}
	big := hugemem.Bytes((96 << 20) / len(tile) * len(tile))
	for o := 0; o < len(big); o += len(tile) {
		copy(big[o:], tile)
	}
	nb := d / 32
	q := gaussianRows(rand.New(rand.NewPCG(7, 8)), 4, d, 1)
	dig, aux := make([]byte, nb*vnniBlockBytes/2), make([]uint32, nb*vnniAuxWords)
	var off [16]float32
	vnniDigitsUni(dig, aux, q, d, nb, &off)
	t2DigitsPermute(&dig[0], nb*vnniBlockBytes/2/64)
	off[4] = turboUnit2
	var stage [16]uint32
	out := make([]float32, 4*4*benchRows)
	chunks := len(big) / len(tile)
	var ns [2][4][]time.Duration
	for r := 0; r < rounds; r++ {
		for i, kern := range []vnniScoresKern{multiScoresT2PUVNNI, multiScoresT2PUSVNNI} {
			var dc time.Duration
			for j := 0; j < 50; j++ {
				t0 := cputime.Thread()
				kern(&dig[0], &aux[0], d/64, &tile[0], rb, benchRows, &out[0], 16, &off[0], &stage[0])
				dc += cputime.Thread() - t0
			}
			t1 := cputime.Thread()
			for j := 0; j < chunks; j++ {
				kern(&dig[0], &aux[0], d/64, &big[j*len(tile)], rb, benchRows, &out[0], 16, &off[0], &stage[0])
			}
			t2 := cputime.Thread()
			for j := 0; j+4 <= chunks; j += 4 {
				kern(&dig[0], &aux[0], d/64, &big[j*len(tile)], rb, 4*benchRows, &out[0], 16, &off[0], &stage[0])
			}
			t3 := cputime.Thread()
			for j := 0; j < chunks; j++ { // a paged cache's pages: 64-row calls
				for o := 0; o < benchRows; o += 64 {
					kern(&dig[0], &aux[0], d/64, &big[j*len(tile)+o*rb], rb, 64, &out[0], 16, &off[0], &stage[0])
				}
			}
			ns[i][3] = append(ns[i][3], cputime.Thread()-t3)
			ns[i][0] = append(ns[i][0], dc)
			ns[i][1] = append(ns[i][1], t2-t1)
			ns[i][2] = append(ns[i][2], t3-t2)
		}
	}
	t.Logf("turbo2 scores per row of %d values, 4 queries, ns min/median: in cache %s, split %s; streamed %s, split %s; streamed in 4x calls %s, split %s; streamed in 64-row calls %s, split %s",
		d, minMedian(ns[0][0], 50*benchRows), minMedian(ns[1][0], 50*benchRows),
		minMedian(ns[0][1], chunks*benchRows), minMedian(ns[1][1], chunks*benchRows),
		minMedian(ns[0][2], chunks/4*4*benchRows), minMedian(ns[1][2], chunks/4*4*benchRows),
		minMedian(ns[0][3], chunks*benchRows), minMedian(ns[1][3], chunks*benchRows))
}
