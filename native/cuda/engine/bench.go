package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/kvcache"
)

// timeIt runs fn once to warm up, then iters times between two events on the default
// stream, and returns the device time per run.
func (e *Engine) timeIt(iters int, fn func() error) (time.Duration, error) {
	if err := fn(); err != nil {
		return 0, err
	}
	start, err := e.ctx.NewEvent()
	if err != nil {
		return 0, err
	}
	defer start.Close()
	end, err := e.ctx.NewEvent()
	if err != nil {
		return 0, err
	}
	defer end.Close()
	if err := start.Record(nil); err != nil {
		return 0, err
	}
	for i := 0; i < iters; i++ {
		if err := fn(); err != nil {
			return 0, err
		}
	}
	if err := end.Record(nil); err != nil {
		return 0, err
	}
	if err := end.Synchronize(); err != nil {
		return 0, err
	}
	d, err := end.Since(start)
	if err != nil {
		return 0, err
	}
	return d / time.Duration(iters), nil
}

// CopyBandwidth measures the device-to-device copy rate (cuMemcpyDtoDAsync of bytes bytes,
// iters times) and returns bytes moved per second counting both the read and the write
// (2·bytes per copy), the convention of bandwidth tests: the yardstick a decode kernel's
// read rate is compared with.
func (e *Engine) CopyBandwidth(bytes int64, iters int) (float64, error) {
	src, err := e.ctx.Alloc(bytes)
	if err != nil {
		return 0, err
	}
	defer src.Free()
	dst, err := e.ctx.Alloc(bytes)
	if err != nil {
		return 0, err
	}
	defer dst.Free()
	if err := src.Memset(1); err != nil {
		return 0, err
	}
	d, err := e.timeIt(iters, func() error { return dst.CopyFromAsync(src, 0, 0, bytes, nil) })
	if err != nil {
		return 0, err
	}
	return 2 * float64(bytes) / d.Seconds(), nil
}

// ReadBandwidth measures a streaming read of bytes bytes (the mem_read kernel) and returns
// bytes read per second.
func (e *Engine) ReadBandwidth(bytes int64, iters int) (float64, error) {
	bytes = bytes / 16 * 16
	src, err := e.ctx.Alloc(bytes)
	if err != nil {
		return 0, err
	}
	defer src.Free()
	if err := src.Memset(3); err != nil {
		return 0, err
	}
	k, err := e.kernel("mem_read")
	if err != nil {
		return 0, err
	}
	blocks := max(e.info.SMs, 1) * 8
	sink, err := e.buffer("bench.sink", int64(blocks)*4)
	if err != nil {
		return 0, err
	}
	d, err := e.timeIt(iters, func() error {
		return k.launch(cuda.D1(blocks), cuda.D1(256), 0, nil, cuda.Ptr(sink), cuda.Ptr(src), cuda.U64(uint64(bytes/16)))
	})
	if err != nil {
		return 0, err
	}
	return float64(bytes) / d.Seconds(), nil
}

// DecodeBench is one decode-attention measurement on the device.
type DecodeBench struct {
	Cells   int
	Time    time.Duration // device time of one Decode (all its launches)
	KVBytes int64         // bytes of K and V the step reads: kvq's size of the cells
}

// BenchDecode fills a one-layer device cache of cfg (cfg.Layers is set to 1) with cells
// synthetic cells and times Decode of one query position of heads heads, iters times.
func (e *Engine) BenchDecode(cfg kvcache.Config, cells, heads, iters int) (DecodeBench, error) {
	cfg.Layers, cfg.MaxCells = 1, cells
	c, err := e.NewCache(cfg)
	if err != nil {
		return DecodeBench{}, err
	}
	defer c.Free()
	d, hn := cfg.HeadDimK, cfg.KVHeads
	const chunk = 4096
	k := make([]float32, chunk*hn*d)
	v := make([]float32, chunk*hn*d)
	seed := uint32(12345)
	rnd := func() float32 { // xorshift: values in (−2, 2), cheap enough for 10⁸ of them
		seed ^= seed << 13
		seed ^= seed >> 17
		seed ^= seed << 5
		return float32(int32(seed)) * (2.0 / (1 << 31))
	}
	for pos := 0; pos < cells; pos += chunk {
		n := min(chunk, cells-pos)
		for i := range k[:n*hn*d] {
			k[i], v[i] = rnd(), rnd()
		}
		if err := c.Write(0, k[:n*hn*d], v[:n*hn*d], n); err != nil {
			return DecodeBench{}, err
		}
	}
	if err := c.Commit(cells); err != nil {
		return DecodeBench{}, err
	}
	q := make([]float32, heads*d)
	for i := range q {
		q[i] = rnd()
	}
	qb, err := e.buffer("bench.q", int64(len(q))*4)
	if err != nil {
		return DecodeBench{}, err
	}
	ob, err := e.buffer("bench.out", int64(len(q))*4)
	if err != nil {
		return DecodeBench{}, err
	}
	if err := qb.Write(cuda.Bytes(q)); err != nil {
		return DecodeBench{}, err
	}
	scale := float32(1 / math.Sqrt(float64(d)))
	t, err := e.timeIt(iters, func() error { return c.Decode(0, qb, ob, heads, scale) })
	if err != nil {
		return DecodeBench{}, fmt.Errorf("decode %s at %d cells: %w", cfg.Pair, cells, err)
	}
	out := make([]float32, len(q))
	if err := ob.Read(cuda.Bytes(out)); err != nil {
		return DecodeBench{}, err
	}
	for _, x := range out {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return DecodeBench{}, fmt.Errorf("decode %s at %d cells: non-finite output", cfg.Pair, cells)
		}
	}
	return DecodeBench{Cells: cells, Time: t, KVBytes: cfg.Pair.Bytes(int64(cells), d, d, hn)}, nil
}
