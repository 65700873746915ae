package model

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kvlab/kvlab/internal/cputime"
	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/gguf"
)

// TestDecodeSpeed prints (KVLAB_SPEED_REPORT set) where the time of a one-token decode goes —
// the path of Forward with one token, as `kvlab bench model --prompt 1` decodes — as the best
// thread-CPU time on one thread over KVLAB_SPEED_ROUNDS rounds (10): the whole pass at 30
// cells of context, then every weight matrix's one-token product (MatVec) in the pass's order,
// summed by weight type with the GB/s it reads its bytes at, and a plain read of the same bytes
// (attn.ReadBandwidth: one thread summing them) for scale. A model larger than the caches streams
// its weights from memory, as a decode does. KVLAB_SPEED_MODEL is the model (a fixture name or
// an absolute path, default kvlab-tiny-64.gguf):
//
//	KVLAB_SPEED_REPORT=1 KVLAB_SPEED_MODEL=/tmp/kvlab-bench/tinyllama-1.1b-q4_k_m-seed1.gguf go test -run DecodeSpeed -v ./native/model/
func TestDecodeSpeed(t *testing.T) {
	m, rounds := speedModel(t, 10, 1)
	const ctx = 30
	c := newCache(t, m, "f16", 64)
	if err := m.Forward(benchTokens(m.Hparams.Vocab, ctx), c, nil); err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.Hparams.Vocab)
	next := []int32{5}
	// The products in the pass's order: the blocks' matrices, then the output matrix.
	all := m.weightMatrices(false)
	mats := append(all[1:len(all):len(all)], all[0])
	x := make([]float32, maxCols(mats))
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	y := make([]float32, maxRows(mats))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pass, read := time.Hour, time.Hour
	types := map[gguf.Type]time.Duration{}
	bytes := map[gguf.Type]int{}
	total := 0
	for _, w := range mats {
		bytes[w.Type] += len(w.Data)
		total += len(w.Data)
	}
	for range rounds {
		t0 := cputime.Thread()
		if err := m.Forward(next, c, logits); err != nil {
			t.Fatal(err)
		}
		pass = min(pass, cputime.Thread()-t0)
		if err := c.Truncate(ctx); err != nil {
			t.Fatal(err)
		}
		per := map[gguf.Type]time.Duration{}
		for _, w := range mats {
			t0 := cputime.Thread()
			w.MatVec(y[:w.Rows], x[:w.Cols], m.pool)
			per[w.Type] += cputime.Thread() - t0
		}
		for typ, d := range per {
			if b, ok := types[typ]; !ok || d < b {
				types[typ] = d
			}
		}
		t0 = cputime.Thread()
		for _, w := range mats {
			attn.ReadBandwidth(w.Data)
		}
		read = min(read, cputime.Thread()-t0)
	}
	var products time.Duration
	line := ""
	for _, typ := range slices.Sorted(maps.Keys(types)) {
		d := types[typ]
		line += fmt.Sprintf(" %s %v (%.1f MB, %.1f GB/s)", typ, d.Round(10*time.Microsecond), float64(bytes[typ])/1e6, float64(bytes[typ])/float64(d.Nanoseconds()))
		products += d
	}
	t.Logf("one-token decode: pass %v; products%s; the rest %v", pass.Round(10*time.Microsecond), line, (pass - products).Round(10*time.Microsecond))
	t.Logf("plain read of the %.1f MB of weights: %v (%.1f GB/s); products %.1f GB/s", float64(total)/1e6, read.Round(10*time.Microsecond),
		float64(total)/float64(read.Nanoseconds()), float64(total)/float64(products.Nanoseconds()))
}
