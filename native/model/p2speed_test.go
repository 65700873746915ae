package model

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// TestMixedDecodeSpeed prints (KVLAB_SPEED_REPORT set) the thread-CPU time per decoded token
// of uniform, overlay (+w) and mixed (+p) caches on the fixtures: `kvlab ab`'s shape (a
// 192-token prompt, 64 decoded tokens, 256 cells), one thread, each against the uniform cache
// of its format. As `kvlab ab --speed-rounds` does, every round prefills each arm's cache
// again and decodes the arms in lockstep, their order rotating by position and round, and a
// token's time is the sum over positions of each position's fastest round: the machine's
// swings then fall on all of the arms alike, and a mixed cache's batch quantization stays on
// the positions where it falls. KVLAB_MIXED_ARM and KVLAB_MIXED_MODEL keep one arm (with the
// uniform one of its format) or fixture, KVLAB_MIXED_ROUNDS sets the rounds (30); the decode
// steps carry the pprof labels phase=decode and arm=<arm>, for profiles of them alone and of
// one arm against another (the labels are set before each step's clock starts):
//
//	KVLAB_SPEED_REPORT=1 KVLAB_MIXED_ARM=q4_0+p64+s8 go test -run MixedDecodeSpeed -cpuprofile cpu.out ./native/model/
//	go tool pprof -tagfocus=phase=decode -top cpu.out
//	go tool pprof -tagfocus='arm=^q4_0\+p64\+s8$' -top cpu.out
func TestMixedDecodeSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	type arm struct {
		name                  string
		pair                  string
		window, recent, sinks int
	}
	arms := []arm{{"q4_0", "q4_0", 0, 0, 0}, {"q4_0+p64", "q4_0", 0, 64, 0}, {"q4_0+p64+s8", "q4_0", 0, 64, 8},
		{"q4_0+w64+s8", "q4_0", 64, 0, 8}, {"q8_0", "q8_0", 0, 0, 0}, {"q8_0+p64", "q8_0", 0, 64, 0},
		{"q8_0+p64+s8", "q8_0", 0, 64, 8}}
	const prompt, steps, cells = 192, 64, 256
	if only := os.Getenv("KVLAB_MIXED_ARM"); only != "" { // profiling one arm, with its uniform one
		arms = slices.DeleteFunc(arms, func(a arm) bool { return a.name != only && a.name != a.pair })
		arms = slices.DeleteFunc(arms, func(a arm) bool { return a.name == a.pair && !strings.HasPrefix(only, a.pair) })
	}
	for _, name := range benchModels {
		if only := os.Getenv("KVLAB_MIXED_MODEL"); only != "" && only != name {
			continue
		}
		m, _ := load(t, name, 1)
		ids := benchTokens(m.Hparams.Vocab, prompt+steps)
		logits := make([]float32, m.Hparams.Vocab)
		best := make([][]time.Duration, len(arms)) // per arm, per position
		for i := range best {
			best[i] = make([]time.Duration, steps)
			for s := range best[i] {
				best[i][s] = time.Hour
			}
		}
		caches := make([]*kvcache.Cache, len(arms))
		labels := make([]context.Context, len(arms))
		for i, a := range arms {
			p, err := kvq.ParsePair(a.pair)
			if err != nil {
				t.Fatal(err)
			}
			cfg := m.CacheConfig(p, cells)
			cfg.Window, cfg.Recent, cfg.Sinks, cfg.Seed = a.window, a.recent, a.sinks, 1
			labels[i] = pprof.WithLabels(context.Background(), pprof.Labels("phase", "decode", "arm", a.name))
			if caches[i], err = kvcache.New(cfg); err != nil {
				t.Fatal(err)
			}
		}
		rounds := 30
		if r, err := strconv.Atoi(os.Getenv("KVLAB_MIXED_ROUNDS")); err == nil {
			rounds = r
		}
		for r := 0; r < rounds; r++ {
			for _, c := range caches {
				c.Reset()
				if err := m.Forward(ids[:prompt], c, nil); err != nil {
					t.Fatal(err)
				}
			}
			for s := 0; s < steps; s++ {
				for k := range arms {
					i := (k + s + r) % len(arms)
					pprof.SetGoroutineLabels(labels[i])
					t0 := cputime.Thread()
					err := m.Forward(ids[prompt+s:prompt+s+1], caches[i], logits)
					best[i][s] = min(best[i][s], cputime.Thread()-t0)
					pprof.SetGoroutineLabels(context.Background())
					if err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		total := make([]time.Duration, len(arms))
		for i := range arms {
			for _, d := range best[i] {
				total[i] += d
			}
		}
		for i, a := range arms {
			us := float64(total[i].Nanoseconds()) / 1e3 / steps
			u := slices.IndexFunc(arms, func(b arm) bool { return b.name == a.pair })
			t.Logf("%-20s %-14s %7.2f cpu-µs/token  %6.0f tok/s  (%.4f× %s)", name, a.name, us, 1e6/us,
				float64(total[u])/float64(total[i]), a.pair)
		}
	}
}
