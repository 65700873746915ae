//go:build amd64 && !purego

package kvq

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/isa"
)

// withSKXKernels runs f with the kernels an AVX-512 CPU without VNNI (Skylake-SP/X) may run:
// the 512-bit float kernels (integer false) or the plain AVX2 integer kernels (no AVX-VNNI:
// Skylake has none) for the formats that have them, the 512-bit float ones for the others.
func withSKXKernels(integer bool, f func()) {
	v, vb, is, isb, a, x, on, av, t4, vbmi := hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int, avxVNNI, avx2IntAccOn, hasAVXVNNI, tq4AVX2Int, hasVBMI
	defer func() {
		hasVNNI, hasVNNIBW, intScores, intScoresBW, avx2Int, avxVNNI, avx2IntAccOn, hasAVXVNNI, tq4AVX2Int, hasVBMI = v, vb, is, isb, a, x, on, av, t4, vbmi
	}()
	hasVNNI, hasVNNIBW, hasVBMI, avxVNNI, hasAVXVNNI = false, false, false, false, false
	intScores, intScoresBW, avx2Int, avx2IntAccOn, tq4AVX2Int = integer, integer, integer, integer, integer
	f()
}

// TestSKXDispatch checks what an AVX-512 CPU without VNNI (KVLAB_NO_AVX512VNNI set on one
// with it) runs: the AVX2 integer scores and accumulate kernels of the block formats, plain
// (no AVX-VNNI), and the 512-bit float kernels of tq4 and the turbo tiers.
func TestSKXDispatch(t *testing.T) {
	if !hasAVX512 || !hasAVX2 || isa.AVX512VNNI {
		t.Skip("not an AVX-512 CPU without VNNI (set KVLAB_NO_AVX512VNNI on one with it)")
	}
	if hasVNNI || hasVNNIBW || hasVBMI || intAcc() || hasFP8VBMI || hasFP8BF16 {
		t.Fatal("an AVX-512 VNNI, VBMI or BF16 kernel is selected")
	}
	if !avx2Int || !intScores || !intScoresBW || avxVNNI || hasAVXVNNI {
		t.Fatalf("scores: avx2Int %v intScores %v intScoresBW %v avxVNNI %v", avx2Int, intScores, intScoresBW, avxVNNI)
	}
	if !isa.NoAVX2IntAcc && !avx2IntAccOn {
		t.Fatal("the AVX2 integer accumulate kernels are off")
	}
	if tq4AVX2Int || multiTQ4 != tq4Z || multiTurbo4 != t4Z || multiTurbo3 != t3Z || multiTurbo2 != t2Z {
		t.Fatal("tq4 or a turbo tier left its 512-bit float kernels")
	}
	if multiF16 != avx512Kernels[0] || multiQ8_0 != avx512Kernels[1] || multiBF16 != bf16AVX512 {
		t.Fatal("f16, q8_0 or bf16 left its 512-bit float kernels")
	}
}

// skxSpeedFormats are the formats whose kernels on an AVX-512 CPU without VNNI differ between
// the two choices of withSKXKernels.
var skxSpeedFormats = []Format{Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, TQ4, Turbo4, Turbo3, Turbo2}

// TestSKXKernelISA checks that an AVX-512 CPU without VNNI (or one run with
// KVLAB_NO_AVX512VNNI) names the AVX2 integer kernels it runs for the block formats.
func TestSKXKernelISA(t *testing.T) {
	if got := KernelISA(); hasAVX512 && hasAVX2 && !isa.AVX512VNNI && got != "AVX-512 + AVX2 integer" {
		t.Fatalf("AVX-512 without VNNI, KernelISA %q", got)
	}
}

// TestSKXIntSpeed reports (KVLAB_SPEED_REPORT set, on an AVX-512 CPU), per row of benchDim
// values and four queries, the thread CPU time of DotManyMulti and of AccumulateManyMulti
// (four accumulators) through the 512-bit float kernels and through the plain AVX2 integer
// kernels (withSKXKernels), and where the CPU has AVX-512 VNNI through the kernels it
// dispatches to (KVLAB_NO_AVX512VBMI set: Cascade Lake's), alternated: in cache (benchRows rows,
// best of 20 calls an alternation) and streamed past the caches (64 MiB of those rows in
// chunks of benchRows, one pass an alternation). KVLAB_SPEED_ROUNDS sets the alternations
// (default 7); min and median over them, and each mode's median over the float kernels'.
func TestSKXIntSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	if !hasAVX512 || !hasAVX2 {
		t.Skip("measures an AVX-512 CPU")
	}
	names := []string{"float512", "avx2 int"}
	modes := []func(func()){func(f func()) { withSKXKernels(false, f) }, func(f func()) { withSKXKernels(true, f) }}
	if hasVNNIBW {
		names, modes = append(names, "dispatched"), append(modes, func(f func()) { f() })
	}
	rounds := 7
	if n, err := fmt.Sscan(os.Getenv("KVLAB_SPEED_ROUNDS"), &rounds); n != 1 || err != nil || rounds < 1 {
		rounds = 7
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, f := range skxSpeedFormats {
		c := mustCodec(t, f, benchDim)
		mq := c.(MultiQuery)
		tile, big := benchStreamRows(c)
		chunks := len(big) / len(tile)
		q, out, w, acc := benchQueries()
		ops := []func(rows []byte){
			func(rows []byte) { mq.DotManyMulti(q, 4, rows, out) },
			func(rows []byte) { mq.AccumulateManyMulti(acc, 4, w, rows) },
		}
		// samples[op][mode][place]: per alternation, ns a row.
		var samples [2][3][2][]float64
		for r := 0; r < rounds; r++ {
			for mode := range modes {
				modes[mode](func() {
					for op, run := range ops {
						best := time.Hour
						for k := 0; k < 20; k++ {
							t0 := cputime.Thread()
							run(tile)
							best = min(best, cputime.Thread()-t0)
						}
						samples[op][mode][0] = append(samples[op][mode][0], float64(best.Nanoseconds())/benchRows)
						var s time.Duration
						for k := 0; k < chunks; k++ {
							t0 := cputime.Thread()
							run(big[k*len(tile) : (k+1)*len(tile)])
							s += cputime.Thread() - t0
						}
						samples[op][mode][1] = append(samples[op][mode][1], float64(s.Nanoseconds())/float64(chunks*benchRows))
					}
				})
			}
		}
		stat := func(x []float64) (float64, float64) {
			x = slices.Clone(x)
			slices.Sort(x)
			return x[0], x[len(x)/2]
		}
		for op, name := range []string{"scores", "acc"} {
			line := fmt.Sprintf("%-6s %-6s ns/row min/median:", f, name)
			for place, pn := range []string{"in cache", "streamed"} {
				line += " " + pn
				_, fd := stat(samples[op][0][place])
				for mode, mn := range names {
					m, d := stat(samples[op][mode][place])
					line += fmt.Sprintf(" %s %.2f/%.2f (%.2f×)", mn, m, d, d/fd)
				}
				line += ";"
			}
			t.Log(line)
		}
	}
}
