package kvcache

import (
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/internal/hugemem"
	"github.com/kvlab/kvlab/native/attn"
)

// TestHugeDecodeSpeed prints (KVLAB_SPEED_REPORT set) the best and median thread-CPU time of a
// one-thread decode step's attention at 131072 cells, 32 query heads over 8 KV heads of 128
// values, over a cache built with KVLAB_NO_HUGEPAGES's effect (4 KiB pages) and one built
// without it (transparent huge pages, hugemem.Bytes), alternated for 7 rounds, with the process's
// memory in huge pages after each cache is built. Run one format a process
// (KVLAB_SPEED_FORMATS=f16, …): memory a freed cache leaves behind keeps its advice, so a later
// format's 4 KiB arm could land on advised memory.
func TestHugeDecodeSpeed(t *testing.T) {
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	const d, hn, heads, ctx, rounds = 128, 8, 32, 131072, 7
	formats := []string{"f16", "q4_0", "turbo4"}
	if list := os.Getenv("KVLAB_SPEED_FORMATS"); list != "" {
		formats = strings.Split(list, ",")
	}
	type arm struct {
		name string
		ks   []attn.Keys
		vs   []attn.Values
		ts   []time.Duration
	}
	r := rand.New(rand.NewPCG(1, 1))
	k, v := randVec(r, 2048*hn*d), randVec(r, 2048*hn*d)
	q := randVec(r, heads*d)
	out := make([]float32, heads*d)
	s := attn.Shape{Heads: heads, KVHeads: hn, HeadDimK: d, HeadDimV: d, Scale: 0.088, Threads: 1}
	defer func(o bool) { hugemem.Off = o }(hugemem.Off)
	for _, f := range formats {
		var arms []*arm
		for _, off := range []bool{true, false} {
			hugemem.Off = off
			c, err := New(Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: mustPair(t, f), MaxCells: ctx, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for pos := 0; pos < ctx; pos += 2048 {
				if err := c.Write(0, k, v, 2048); err != nil {
					t.Fatal(err)
				}
				if err := c.Commit(2048); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%s, KVLAB_NO_HUGEPAGES %v: %s", f, off, anonHuge())
			name := f + " thp"
			if off {
				name = f + " 4k"
			}
			arms = append(arms, &arm{name: name, ks: c.Keys(0, true), vs: c.Values(0, true)})
		}
		runtime.LockOSThread()
		for range rounds {
			for _, a := range arms {
				t0 := cputime.Thread()
				if err := attn.Decode(out, q, s, a.ks, a.vs, 0, ctx); err != nil {
					t.Fatal(err)
				}
				a.ts = append(a.ts, cputime.Thread()-t0)
			}
		}
		runtime.UnlockOSThread()
		for _, a := range arms {
			slices.Sort(a.ts)
			t.Logf("%-14s min %6.2f med %6.2f ns a cell of one KV head", a.name,
				float64(a.ts[0].Nanoseconds())/ctx/hn, float64(a.ts[len(a.ts)/2].Nanoseconds())/ctx/hn)
		}
	}
}

// anonHuge is /proc/self/smaps_rollup's AnonHugePages line: the process's memory in
// transparent huge pages.
func anonHuge() string {
	b, _ := os.ReadFile("/proc/self/smaps_rollup")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "AnonHuge") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	return "no AnonHugePages"
}
