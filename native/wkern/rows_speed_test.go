//go:build amd64 && !purego

package wkern

import (
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/gguf"
)

// TestRowsSpeed reports the one-token row loops' thread CPU time per 256 weights, best of many
// passes (KVLAB_SPEED_REPORT set; KVLAB_NO_AVX512 for the AVX2 loops): 64 rows of 2048 values
// that stay in the L2 cache (the kernel's own cost), 5632 rows (the TinyLlama FFN's shape, 6–9
// MiB: in a large L3 cache) and 57344 rows (64–94 MiB, streamed from memory as a decode's
// weights are). A steadier A/B signal than wall-clock benchmarks on a shared machine. Where the
// Q4_K loop reads the activation's regrouped codes, the loop on its plain codes is timed in the
// same passes.
func TestRowsSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewPCG(5, 6))
	const cols = 2048
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q6_K} {
		k, _ := KernelOf(typ)
		x := randomVec(r, cols)
		var a, plain Act
		a.Quantize(k.Format(), x, 1, cols)
		// The Q4_K loop on the activation's plain codes (rowsQ4_KAVX512), timed in the same
		// passes as the one on its regrouped codes (rowsQ4_KAVX512P).
		acts, names := []*Act{&a}, []string{""}
		if len(a.QK) > 0 {
			plain.Quantize(k.Format(), x, 1, cols)
			plain.QK = plain.QK[:0]
			acts, names = append(acts, &plain), append(names, " (plain codes)")
		}
		rb := int(typ.RowBytes(cols))
		for _, rows := range []int{64, 5632, 57344} {
			data := randomRows(r, typ, rows, cols)
			y := make([]float32, rows)
			reps := max(1, 5632/rows) // a timed span of ~30 µs or more
			best := []time.Duration{time.Hour, time.Hour}
			passes := 200
			if rows > 5632 {
				passes = 20
			}
			for range passes {
				for i, a := range acts {
					t0 := cputime.Thread()
					for range reps {
						k.MulRows(y, rows, data, rb, a, 0, rows)
					}
					best[i] = min(best[i], cputime.Thread()-t0)
				}
			}
			for i := range acts {
				t.Logf("%-4s %5d rows: %.2f ns per super-block%s", typ, rows, float64(best[i].Nanoseconds())/float64(reps*rows*cols/256), names[i])
			}
		}
	}
}
