package model

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/gguf"
)

// TestBatchPassSpeed prints (KVLAB_SPEED_REPORT set) where the time of a batched pass of one
// token per sequence goes — the first pass of 16 chats whose prompts are cached but for their
// last token, against one chat alone — as the best thread-CPU time on one thread, the passes
// of 1 and 16 sequences interleaved round by round: the whole ForwardBatch at 30 cells of
// context, and the batch-invariant products of its weight matrices alone, by weight type (the
// rest, the pass less the products timed alone, is attention, norms, RoPE, activations and
// the cache writes). KVLAB_SPEED_MODEL is the model (a fixture name or an absolute path,
// default kvlab-tiny-64.gguf), KVLAB_SPEED_ROUNDS the rounds (20):
//
//	KVLAB_SPEED_REPORT=1 KVLAB_SPEED_MODEL=/tmp/kvlab-bench/tinyllama-1.1b-q4_0-seed1.gguf go test -run BatchPassSpeed -v ./native/model/
func TestBatchPassSpeed(t *testing.T) {
	m, rounds := speedModel(t, 20, 1)
	const ctx, seqs = 30, 16
	steps := decodeSteps(t, m, ctx, seqs)
	mats := m.weightMatrices(false)
	x := make([]float32, seqs*maxCols(mats))
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	y := make([]float32, seqs*maxRows(mats))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	type figure struct {
		pass  time.Duration
		types map[gguf.Type]time.Duration
	}
	best := map[int]*figure{}
	for _, n := range []int{1, seqs} {
		best[n] = &figure{pass: time.Hour, types: map[gguf.Type]time.Duration{}}
	}
	for range rounds {
		for _, n := range []int{1, seqs} {
			f := best[n]
			t0 := cputime.Thread()
			if err := m.ForwardBatch(steps[:n]); err != nil {
				t.Fatal(err)
			}
			f.pass = min(f.pass, cputime.Thread()-t0)
			for _, st := range steps[:n] {
				if err := st.Cache.Truncate(ctx); err != nil {
					t.Fatal(err)
				}
			}
			per := map[gguf.Type]time.Duration{}
			for _, w := range mats {
				t0 := cputime.Thread()
				w.mulRowwise(y, x[:n*w.Cols], n, m.pool)
				per[w.Type] += cputime.Thread() - t0
			}
			for typ, d := range per {
				if b, ok := f.types[typ]; !ok || d < b {
					f.types[typ] = d
				}
			}
		}
	}
	for _, n := range []int{1, seqs} {
		f := best[n]
		line := ""
		var products time.Duration
		for _, typ := range slices.Sorted(maps.Keys(f.types)) {
			d := f.types[typ]
			line += " " + typ.String() + " " + d.Round(10*time.Microsecond).String()
			products += d
		}
		t.Logf("%2d sequences: pass %v; products%s; the rest %v", n, f.pass.Round(10*time.Microsecond), line, (f.pass - products).Round(10*time.Microsecond))
	}
	t.Logf("16 sequences over 1: %.2f×", float64(best[seqs].pass)/float64(best[1].pass))
}

func maxCols(ms []*Matrix) (n int) {
	for _, w := range ms {
		n = max(n, w.Cols)
	}
	return n
}

func maxRows(ms []*Matrix) (n int) {
	for _, w := range ms {
		n = max(n, w.Rows)
	}
	return n
}

// decodeSteps is seqs sequences' next decode step (one token each) after ctx cells of prompt
// each, in f16 caches of 64 cells: the batched passes the speed reports time.
func decodeSteps(t *testing.T, m *Model, ctx, seqs int) []SeqStep {
	t.Helper()
	steps := make([]SeqStep, seqs)
	for i := range steps {
		c := newCache(t, m, "f16", 64)
		if err := m.Forward(benchTokens(m.Hparams.Vocab, ctx), c, nil); err != nil {
			t.Fatal(err)
		}
		steps[i] = SeqStep{Cache: c, Tokens: []int32{int32(5 + i)}, Logits: make([]float32, m.Hparams.Vocab)}
	}
	return steps
}

// speedModel is the speed reports' setup: it skips the test unless KVLAB_SPEED_REPORT is set,
// and returns the model KVLAB_SPEED_MODEL names (a fixture name or an absolute path, default
// kvlab-tiny-64.gguf) loaded for threads threads, and KVLAB_SPEED_ROUNDS (rounds where unset).
func speedModel(t *testing.T, rounds, threads int) (*Model, int) {
	t.Helper()
	if os.Getenv("KVLAB_SPEED_REPORT") == "" {
		t.Skip("set KVLAB_SPEED_REPORT=1 to measure")
	}
	name := os.Getenv("KVLAB_SPEED_MODEL")
	if name == "" {
		name = "kvlab-tiny-64.gguf"
	}
	var m *Model
	if filepath.IsAbs(name) {
		var err error
		if m, err = Load(name, Options{Threads: threads}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
	} else {
		m, _ = load(t, name, threads)
	}
	if n, err := strconv.Atoi(os.Getenv("KVLAB_SPEED_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	return m, rounds
}

// TestAttendAcrossSpeed prints (KVLAB_SPEED_REPORT set) a 16-sequence batched pass of one
// token each on 2 threads with its attention across the pool by sequence (attendAcross) and
// on the caller (attendSerial), alternated pass by pass: the wall time, the calling thread's
// CPU time and the process's, min and median over the rounds. The context is 40 cells (a decode
// of 32 cells or more splits its attention over goroutines of its own on the serial path).
//
//	KVLAB_SPEED_REPORT=1 KVLAB_SPEED_MODEL=/tmp/kvlab-bench/tinyllama-1.1b-q4_0-seed1.gguf go test -run AttendAcrossSpeed -v ./native/model/
func TestAttendAcrossSpeed(t *testing.T) {
	m, rounds := speedModel(t, 20, 2)
	const ctx, seqs = 40, 16
	steps := decodeSteps(t, m, ctx, seqs)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() { attendSerial = false }()
	type figs struct{ wall, thread, proc []time.Duration }
	res := map[bool]*figs{false: {}, true: {}}
	for range rounds {
		for _, serial := range []bool{true, false} {
			attendSerial = serial
			w0, t0, p0 := time.Now(), cputime.Thread(), cputime.Process()
			if err := m.ForwardBatch(steps); err != nil {
				t.Fatal(err)
			}
			f := res[serial]
			f.wall = append(f.wall, time.Since(w0))
			f.thread = append(f.thread, cputime.Thread()-t0)
			f.proc = append(f.proc, cputime.Process()-p0)
			for _, st := range steps {
				if err := st.Cache.Truncate(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	mm := func(d []time.Duration) string {
		slices.Sort(d)
		return fmt.Sprintf("min %v med %v", d[0].Round(10*time.Microsecond), d[len(d)/2].Round(10*time.Microsecond))
	}
	for _, serial := range []bool{true, false} {
		f, what := res[serial], "across"
		if serial {
			what = "serial"
		}
		t.Logf("attention %s: wall %s; calling thread %s; process %s", what, mm(f.wall), mm(f.thread), mm(f.proc))
	}
}
