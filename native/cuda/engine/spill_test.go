package engine

import (
	"errors"
	"testing"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

func TestSpillOptions(t *testing.T) {
	e, _ := fakeEngine(t)
	p, _ := kvq.ParsePair("q8_0/q4_0")
	base := kvcache.Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: p, MaxCells: 1000}
	for name, tc := range map[string]struct {
		cfg  kvcache.Config
		opts SpillOptions
		want error
	}{
		"no resident cells": {base, SpillOptions{Resident: 0}, nil},
		"odd chunk":         {base, SpillOptions{Resident: 64, Chunk: 48}, nil},
		"overlay":           {func() kvcache.Config { c := base; c.Window, c.Sinks = 16, 4; return c }(), SpillOptions{Resident: 64}, ErrUnsupported},
		"mixed":             {func() kvcache.Config { c := base; c.Recent = 32; return c }(), SpillOptions{Resident: 64}, ErrUnsupported},
		"sliding":           {func() kvcache.Config { c := base; c.Windows = []int{0, 64}; return c }(), SpillOptions{Resident: 64}, ErrUnsupported},
		"too many chunks":   {func() kvcache.Config { c := base; c.MaxCells = 1 << 18; return c }(), SpillOptions{Resident: 64, Chunk: 32}, nil},
	} {
		c, err := e.NewSpillCache(tc.cfg, tc.opts)
		if err == nil {
			c.Free()
			t.Errorf("%s: accepted", name)
			continue
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// Windows of 0 keep every layer's whole context: a tail takes them.
	full := base
	full.Windows = []int{0, 0}
	c, err := e.NewSpillCache(full, SpillOptions{Resident: 64})
	if err != nil {
		t.Fatalf("windows of 0: %v", err)
	}
	c.Free()
	c, err = e.NewSpillCache(base, SpillOptions{Resident: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Spill(); ok || c.HostBytes() != 0 {
		t.Error("a resident budget covering the capacity made a tail")
	}
	c.Free()
}

// TestSpillDeviceCells checks SpillOptions.HasTail and DeviceCells (what the commands budget
// the card with) against the caches NewSpillCache makes: a tail exactly when HasTail says so,
// and device pools of DeviceCells cells.
func TestSpillDeviceCells(t *testing.T) {
	e, _ := fakeEngine(t)
	p, _ := kvq.ParsePair("f16")
	for _, tc := range []struct {
		maxCells int
		o        SpillOptions
		want     int
	}{
		{1000, SpillOptions{Resident: 64}, 64 + DefaultSpillChunk},
		{1000, SpillOptions{Resident: 100, Chunk: 64}, 128 + 64},
		{1000, SpillOptions{Resident: 993, Chunk: 32}, 1000},
		{1000, SpillOptions{Resident: 992, Chunk: 32}, 992 + 32},
		{1000, SpillOptions{Resident: 5000}, 1000},
		{1000, SpillOptions{}, 1000},
	} {
		cfg := kvcache.Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: p, MaxCells: tc.maxCells}
		if got := tc.o.DeviceCells(tc.maxCells); got != tc.want {
			t.Errorf("%+v: DeviceCells(%d) = %d, want %d", tc.o, tc.maxCells, got, tc.want)
		}
		if tc.o.Resident < 1 {
			if tc.o.HasTail(tc.maxCells) {
				t.Errorf("%+v: a tail without resident cells", tc.o)
			}
			continue
		}
		c, err := e.NewSpillCache(cfg, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Spill(); ok != tc.o.HasTail(tc.maxCells) {
			t.Errorf("%+v: the cache has a tail: %v, HasTail %v", tc.o, ok, !ok)
		}
		if want := int64(cfg.Layers) * 2 * poolBytes(kvq.F16, 64, 2, roundCap(tc.want)); c.Bytes() != want {
			t.Errorf("%+v: %d device bytes, want %d", tc.o, c.Bytes(), want)
		}
		c.Free()
	}
}

// TestSpillLaunchPlan checks the work of one decode step over a tail: one host-to-device
// copy per host chunk (of the chunk's K and V), one decode launch for the device pools and
// one per chunk, the newest included, and the partials' count in kv_combine.
func TestSpillLaunchPlan(t *testing.T) {
	e, f := fakeEngine(t)
	p, _ := kvq.ParsePair("f16")
	cfg := kvcache.Config{Layers: 1, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: p, MaxCells: 2000}
	c, err := e.NewSpillCache(cfg, SpillOptions{Resident: 100, Chunk: 256})
	if err != nil {
		t.Fatal(err)
	}
	o, _ := c.Spill()
	if o.Resident != 128 || o.Chunk != 256 {
		t.Fatalf("options %+v", o)
	}
	// 128 device cells, 3 host chunks, 40 cells in the newest chunk.
	const n = 128 + 3*256 + 40
	w := n * cfg.KVHeads * cfg.HeadDimK
	if err := c.Write(0, make([]float32, w), make([]float32, w), n); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(n); err != nil {
		t.Fatal(err)
	}
	if c.HostCells() != 768 {
		t.Errorf("%d cells in host memory, want 768", c.HostCells())
	}
	chunkBytes := 2 * poolBytes(kvq.F16, 64, 2, 256)
	if c.HostBytes() != 8*chunkBytes { // (2016 − 128) / 256 rounded up
		t.Errorf("host tail of %d bytes, want %d", c.HostBytes(), 8*chunkBytes)
	}
	if got := f.Calls["cuMemcpyDtoHAsync_v2"]; got != 3 {
		t.Errorf("%d chunk copies to the host, want 3", got)
	}
	f.Launches = nil
	before := f.Calls["cuMemcpyHtoDAsync_v2"]
	if _, err := c.DecodeHost(0, make([]float32, 4*64), 4, 0.125); err != nil {
		t.Fatal(err)
	}
	if got := f.Calls["cuMemcpyHtoDAsync_v2"] - before; got != 3 {
		t.Errorf("%d chunk copies to the device per step, want 3", got)
	}
	dec := f.LaunchesOf(DecodeKernel(kvq.F16, kvq.F16, 64, 2))
	if len(dec) != 5 {
		t.Fatalf("%d decode launches, want 5 (device pools, 3 host chunks, the newest)", len(dec))
	}
	comb := f.LaunchesOf("kv_combine")
	if len(comb) != 1 {
		t.Fatalf("%d combines", len(comb))
	}
	total := 0
	for _, l := range dec {
		total += int(l.Grid[0])
	}
	if nsplit := int(int32(comb[0].Args[3])); nsplit != total {
		t.Errorf("kv_combine merges %d partials, the launches write %d", nsplit, total)
	}
	c.Free()
	if f.LiveHostAllocs() != 0 {
		t.Errorf("%d host allocations after Free", f.LiveHostAllocs())
	}
}
