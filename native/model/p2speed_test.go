package model

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestMixedDecodeSpeed prints (KVLAB_SPEED_REPORT set) the best thread-CPU time per decoded
// token of uniform, overlay (+w) and mixed (+p) caches on the fixtures: `kvlab ab`'s shape (a
// 192-token prompt, 64 decoded tokens, 256 cells), one thread, the arms interleaved round by
// round so that the machine's swings fall on all of them alike. KVLAB_MIXED_ARM and
// KVLAB_MIXED_MODEL keep one arm or fixture, KVLAB_MIXED_ROUNDS sets the rounds (30); the
// decode steps carry the pprof label phase=decode, for profiles of them alone:
//
//	KVLAB_SPEED_REPORT=1 KVLAB_MIXED_ARM=q4_0+p64+s8 go test -run MixedDecodeSpeed -cpuprofile cpu.out ./native/model/
//	go tool pprof -tagfocus=phase=decode -top cpu.out
func TestMixedDecodeSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	type arm struct {
		name           string
		pair           string
		window, recent int
	}
	arms := []arm{{"q4_0", "q4_0", 0, 0}, {"q4_0+p64+s8", "q4_0", 0, 64}, {"q4_0+w64+s8", "q4_0", 64, 0},
		{"q8_0", "q8_0", 0, 0}, {"q8_0+p64+s8", "q8_0", 0, 64}}
	const prompt, steps, cells = 192, 64, 256
	if only := os.Getenv("KVLAB_MIXED_ARM"); only != "" { // profiling one arm
		arms = slices.DeleteFunc(arms, func(a arm) bool { return a.name != only })
	}
	for _, name := range benchModels {
		if only := os.Getenv("KVLAB_MIXED_MODEL"); only != "" && only != name {
			continue
		}
		m, _ := load(t, name, 1)
		ids := benchTokens(m.Hparams.Vocab, prompt+steps)
		logits := make([]float32, m.Hparams.Vocab)
		best := make([]time.Duration, len(arms))
		for i := range best {
			best[i] = time.Hour
		}
		caches := make([]*kvcache.Cache, len(arms))
		for i, a := range arms {
			p, err := kvq.ParsePair(a.pair)
			if err != nil {
				t.Fatal(err)
			}
			cfg := m.CacheConfig(p, cells)
			cfg.Window, cfg.Recent, cfg.Sinks, cfg.Seed = a.window, a.recent, 8, 1
			if a.window == 0 && a.recent == 0 {
				cfg.Sinks = 0
			}
			if caches[i], err = kvcache.New(cfg); err != nil {
				t.Fatal(err)
			}
		}
		rounds := 30
		if r, err := strconv.Atoi(os.Getenv("KVLAB_MIXED_ROUNDS")); err == nil {
			rounds = r
		}
		for r := 0; r < rounds; r++ {
			for i := range arms {
				c := caches[i]
				c.Reset()
				if err := m.Forward(ids[:prompt], c, nil); err != nil {
					t.Fatal(err)
				}
				var d time.Duration
				pprof.Do(context.Background(), pprof.Labels("phase", "decode"), func(context.Context) {
					t0 := cputime.Thread()
					for s := 0; s < steps; s++ {
						if err := m.Forward(ids[prompt+s:prompt+s+1], c, logits); err != nil {
							t.Fatal(err)
						}
					}
					d = cputime.Thread() - t0
				})
				best[i] = min(best[i], d)
			}
		}
		for i, a := range arms {
			us := float64(best[i].Microseconds()) / steps
			t.Logf("%-20s %-14s %7.1f cpu-µs/token  %6.0f tok/s  (%.2f× %s)", name, a.name, us, 1e6/us,
				float64(best[0])/float64(best[i]), arms[0].name)
		}
	}
}
