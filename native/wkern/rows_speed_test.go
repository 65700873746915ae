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
// weights are). A steadier A/B signal than wall-clock benchmarks on a shared machine.
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
		var a Act
		a.Quantize(k.Format(), randomVec(r, cols), 1, cols)
		rb := int(typ.RowBytes(cols))
		for _, rows := range []int{64, 5632, 57344} {
			data := randomRows(r, typ, rows, cols)
			y := make([]float32, rows)
			reps := max(1, 5632/rows) // a timed span of ~30 µs or more
			b := time.Hour
			passes := 200
			if rows > 5632 {
				passes = 20
			}
			for range passes {
				t0 := cputime.Thread()
				for range reps {
					k.MulRows(y, rows, data, rb, &a, 0, rows)
				}
				b = min(b, cputime.Thread()-t0)
			}
			t.Logf("%-4s %5d rows: %.2f ns per super-block", typ, rows, float64(b.Nanoseconds())/float64(reps*rows*cols/256))
		}
	}
}
