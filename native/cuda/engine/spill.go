package engine

import (
	"fmt"

	"github.com/kvlab/kvlab/internal/limits"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// The host-spill tail. A spill cache keeps its first Resident cells in the device pools, as
// any cache does; the cells past them, the tail, are cut into chunks of Chunk cells. The
// newest chunk, the one being written, stays on the device; when it is full and the next
// cell arrives it is copied once into page-locked host memory (one asynchronous copy) and
// the device chunk starts over. Each decode step then reads the whole context exactly once:
// the device pools and the newest chunk in place, and every host chunk after a copy into a
// staging buffer on the device (one copy per chunk, on the cache's stream, before the
// launch that reads it). Every chunk, device or host, is its own launch of the decode
// kernel the device pools use, with its own splits; their partial results (the
// unnormalized output, the running maximum and the sum of exponentials of each split) join
// the device pools' partials, and kv_combine merges them exactly as it merges any splits:
//
//	m = max_s m_s,  out = Σ_s 2^(m_s−m)·o_s / Σ_s 2^(m_s−m)·l_s
//
// so a spill cache attends to the same stored bytes as the all-device cache and differs
// only in where the split boundaries fall (the float32 summation order).
//
// Why streaming and not partial attention on the host: both read every tail byte once per
// token, so the tail costs its bytes over the slowest path either way. Streaming moves them
// over the host link with the copy engines (PCIe 5 ×16 about 50 GB/s; a GH200's C2C link
// several times that) and runs the same kernels on the same format bytes (every pair the
// device stores, q2k and tq4 included), with no host thread in the decode loop. Attention on
// the host would send only the query and a partial (a few KiB per layer) over the link but
// read the tail at the host's attention speed, with a device-to-host-to-device round trip
// per layer on the critical path; it only wins where the link is far slower than host
// memory and cores (a 3090 on PCIe 3 at ~6.5 GB/s). The merge would be the same.
//
// Costs per decode step: tail bytes / link bandwidth for the copies, one copy and one
// launch per host chunk per layer (a few µs each, which is why chunks are large), and the
// copies do not overlap the kernels (one stream). Prompt positions past the device pools run
// one query at a time through the decode path (each streams the tail written so far).
// Limits: no FP16 overlay and no sliding window with a tail.

// DefaultSpillChunk is the tail's chunk in cells when SpillOptions.Chunk is 0: at 8 KV heads
// of 128 f16 values about 4 MiB per layer and chunk, a copy long enough (~80 µs at 50 GB/s)
// that its fixed cost is small.
const DefaultSpillChunk = 1024

// SpillOptions shape a host-spill tail (NewSpillCache).
type SpillOptions struct {
	// Resident is the cells kept in the device pools, rounded up to a whole tile (32 cells);
	// cells past it live in the tail. It must be at least 1.
	Resident int `json:"resident_cells"`
	// Chunk is the tail's chunk in cells, a multiple of 32 (0: DefaultSpillChunk). One chunk
	// per layer stays on the device (the newest); the others live in host memory.
	Chunk int `json:"chunk_cells"`
}

// DeviceCells is the cells of device memory a cache of maxCells with these options holds:
// with a tail, the resident cells (rounded up to a tile) and the newest chunk, whole (so it
// may pass maxCells); without one (HasTail false: NewSpillCache makes a plain cache),
// maxCells.
func (o SpillOptions) DeviceCells(maxCells int) int {
	if !o.HasTail(maxCells) {
		return maxCells
	}
	return o.ResidentCells() + o.chunk()
}

// ResidentCells is the device cells a tail's cache keeps before it spills: Resident rounded
// up to a tile.
func (o SpillOptions) ResidentCells() int { return roundCap(o.Resident) }

// chunk is the tail's chunk cells: Chunk, or DefaultSpillChunk where it is 0.
func (o SpillOptions) chunk() int {
	if o.Chunk == 0 {
		return DefaultSpillChunk
	}
	return o.Chunk
}

// ResidentThatFits is the largest Resident (a multiple of Tile) whose device part (DeviceCells,
// one chunk of chunk cells included; 0: DefaultSpillChunk) of sessions caches of cfg fits avail
// bytes, estimated by kvcache.EstimateBytes; 0 when not even one tile does.
func ResidentThatFits(cfg kvcache.Config, chunk, sessions int, avail int64) int {
	device := func(resident int) int64 {
		c := cfg
		c.MaxCells = SpillOptions{Resident: resident, Chunk: chunk}.DeviceCells(cfg.MaxCells)
		return limits.Mul(kvcache.EstimateBytes(c), int64(max(sessions, 1)))
	}
	lo, hi := 0, max(cfg.MaxCells/Tile, 0) // in tiles: lo fits (or is 0), hi+1 does not
	for lo < hi {
		if mid := (lo + hi + 1) / 2; device(mid*Tile) <= avail {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo * Tile
}

// HasTail is whether NewSpillCache makes a cache of maxCells with a tail (else a plain one).
func (o SpillOptions) HasTail(maxCells int) bool {
	return o.Resident >= 1 && roundCap(o.Resident) < roundCap(maxCells)
}

// spill is a cache's tail (see the top of this file).
type spill struct {
	resident int // == Cache.cap: the device pools' cells
	chunk    int
	// kBytes and vBytes are one chunk's K and V (all heads, pools of chunk cells); a chunk is
	// its K then its V, in host memory and on the device.
	kBytes, vBytes int64
	maxChunks      int                // host chunks the capacity can need per layer
	host           []*cuda.HostBuffer // per layer: maxChunks chunks end to end
	hot            []*cuda.Buffer     // per layer: the newest chunk
	flushed        []int              // per layer: chunks in host memory
}

// NewSpillCache reserves a device cache whose cells past opts.Resident live in pinned host
// memory and are streamed to the device each step (see spill.go). With Resident ≥ MaxCells it
// is NewCache. The FP16 overlay (Window, Sinks) and sliding-window layers are refused.
func (e *Engine) NewSpillCache(cfg kvcache.Config, opts SpillOptions) (*Cache, error) {
	if opts.Resident < 1 {
		return nil, fmt.Errorf("engine: spill: %d resident cells: need at least 1", opts.Resident)
	}
	if cfg.MaxCells > 0 && !opts.HasTail(cfg.MaxCells) {
		return e.NewCache(cfg)
	}
	return e.newCache(cfg, &opts)
}

// planSpill checks the options and sizes the tail; allocSpill allocates it once the
// device pools exist.
func (c *Cache) planSpill(o SpillOptions) error {
	cfg := c.cfg
	if cfg.Window > 0 || cfg.Sinks > 0 {
		return fmt.Errorf("%w: a host-spill tail with the FP16 overlay (window %d, sinks %d)", ErrUnsupported, cfg.Window, cfg.Sinks)
	}
	if cfg.Recent > 0 || cfg.Sliding() {
		return fmt.Errorf("%w: a host-spill tail on a mixed or sliding-window cache", ErrUnsupported)
	}
	o.Chunk = o.chunk()
	if o.Chunk < Tile || o.Chunk%Tile != 0 || o.Chunk > 1<<20 {
		return fmt.Errorf("engine: spill chunk of %d cells: want a multiple of %d up to %d", o.Chunk, Tile, 1<<20)
	}
	d, hn := cfg.HeadDimK, cfg.KVHeads
	sp := &spill{resident: roundCap(o.Resident), chunk: o.Chunk}
	sp.kBytes = poolBytes(cfg.Pair.K, d, hn, o.Chunk)
	sp.vBytes = poolBytes(cfg.Pair.V, d, hn, o.Chunk)
	tail := roundCap(cfg.MaxCells) - sp.resident
	sp.maxChunks = (tail + o.Chunk - 1) / o.Chunk
	if sp.maxChunks+1 > maxSplits {
		return fmt.Errorf("engine: spill: a tail of %d cells is %d chunks of %d, more than %d: use larger chunks", tail, sp.maxChunks, o.Chunk, maxSplits-1)
	}
	c.cap, c.sp = sp.resident, sp
	return nil
}

func (c *Cache) allocSpill() error {
	sp := c.sp
	for l := range c.layers {
		hot, err := c.e.ctx.Alloc(sp.kBytes + sp.vBytes)
		if err != nil {
			return fmt.Errorf("engine: spill chunk of layer %d: %w", l, err)
		}
		sp.hot = append(sp.hot, hot)
		if err := hot.Memset(0); err != nil {
			return err
		}
		h, err := c.e.ctx.AllocHost(int64(sp.maxChunks) * (sp.kBytes + sp.vBytes))
		if err != nil {
			return fmt.Errorf("engine: host tail of layer %d (%d bytes): %w", l, int64(sp.maxChunks)*(sp.kBytes+sp.vBytes), err)
		}
		sp.host = append(sp.host, h)
		sp.flushed = append(sp.flushed, 0)
	}
	return nil
}

func (sp *spill) deviceBytes() int64 {
	if sp == nil {
		return 0
	}
	var b int64
	for _, h := range sp.hot {
		b += h.Size()
	}
	return b
}

func (sp *spill) free() {
	if sp == nil {
		return
	}
	for _, h := range sp.hot {
		h.Free()
	}
	for _, h := range sp.host {
		h.Free()
	}
	sp.hot, sp.host = nil, nil
}

// Spill reports the cache's tail: its options (Chunk defaulted) and whether it has one.
func (c *Cache) Spill() (SpillOptions, bool) {
	if c.sp == nil {
		return SpillOptions{}, false
	}
	return SpillOptions{Resident: c.sp.resident, Chunk: c.sp.chunk}, true
}

// HostCells is the number of committed cells that live in host memory and are copied to the
// device at every decode step (0 without a tail).
func (c *Cache) HostCells() int {
	if c.sp == nil || len(c.sp.flushed) == 0 {
		return 0
	}
	return min(c.sp.flushed[0]*c.sp.chunk, max(c.n-c.sp.resident, 0))
}

// HostBytes is the page-locked host memory the tail holds.
func (c *Cache) HostBytes() int64 {
	if c.sp == nil {
		return 0
	}
	var b int64
	for _, h := range c.sp.host {
		b += h.Size()
	}
	return b
}

// shift is a pool address moved back by the per-head bytes of cell0 cells (a multiple of
// Tile): kernels that address pool + head·stride + f(cell) then reach the chunk that starts at
// cell0 with global cell numbers, so q2k's group rule sees the group's true position.
func shift(b *cuda.Buffer, off int64, f kvq.Format, d, cell0 int) cuda.Arg {
	return cuda.Arg{Kind: cuda.KindPtr, Bits: b.Addr(off) - uint64(poolBytes(f, d, 1, cell0))}
}

// writeSpill is WriteDevice's quantize-on-write for a spill cache: the cells below the
// device pools' end go there, the others into the newest chunk, which is first copied to the
// host and cleared when a cell of the next chunk arrives.
func (c *Cache) writeSpill(layer int, k, v *cuda.Buffer, pos, n int) error {
	cfg, ly, sp := c.cfg, c.layers[layer], c.sp
	d := cfg.HeadDimK
	for done := 0; done < n; {
		p := pos + done
		if p < sp.resident {
			take := min(n-done, sp.resident-p)
			if err := c.writePool(ly, cfg.Pair.K, cuda.Ptr(ly.k), c.cap, k, done, p, take, true); err != nil {
				return fmt.Errorf("engine: write K: %w", err)
			}
			if err := c.writePool(ly, cfg.Pair.V, cuda.Ptr(ly.v), c.cap, v, done, p, take, false); err != nil {
				return fmt.Errorf("engine: write V: %w", err)
			}
			done += take
			continue
		}
		j := (p - sp.resident) / sp.chunk
		if j > sp.flushed[layer] {
			// The newest chunk is full: it moves to the host.
			if err := c.flush(layer); err != nil {
				return err
			}
		}
		cell0 := sp.resident + j*sp.chunk
		take := min(n-done, cell0+sp.chunk-p)
		hot := sp.hot[layer]
		if err := c.writePool(ly, cfg.Pair.K, shift(hot, 0, cfg.Pair.K, d, cell0), sp.chunk, k, done, p, take, true); err != nil {
			return fmt.Errorf("engine: write K: %w", err)
		}
		if err := c.writePool(ly, cfg.Pair.V, shift(hot, sp.kBytes, cfg.Pair.V, d, cell0), sp.chunk, v, done, p, take, false); err != nil {
			return fmt.Errorf("engine: write V: %w", err)
		}
		done += take
	}
	return nil
}

// flush copies layer's newest chunk to its place in host memory and clears it.
func (c *Cache) flush(layer int) error {
	sp := c.sp
	j := sp.flushed[layer]
	if j >= sp.maxChunks {
		return fmt.Errorf("%w: the host tail holds %d chunks", kvcache.ErrKVFull, sp.maxChunks)
	}
	cb := sp.kBytes + sp.vBytes
	if err := sp.host[layer].CopyFromDeviceAsync(sp.hot[layer], 0, int64(j)*cb, cb, c.stream); err != nil {
		return fmt.Errorf("engine: spill chunk %d of layer %d to the host: %w", j, layer, err)
	}
	if err := sp.hot[layer].Memset(0); err != nil {
		return err
	}
	sp.flushed[layer] = j + 1
	return nil
}

// tailSplits plans the tail's splits of a decode over the first n cells: it returns their
// number and the cells per split (a whole number of tiles, the same for every chunk, so that
// a full chunk has the same splits wherever it is).
func (sp *spill) tailSplits(n, kvHeads, blocks int) (splits, cps int) {
	tail := n - sp.resident
	if tail <= 0 {
		return 0, 0
	}
	chunks := (tail + sp.chunk - 1) / sp.chunk
	cps, per := planSplits(sp.chunk, kvHeads, blocks)
	if chunks*per > maxSplits {
		per = max(maxSplits/chunks, 1)
		cps = max((sp.chunk+per-1)/per, minCellsPerSplit)
		cps = (cps + Tile - 1) / Tile * Tile
	}
	for j := 0; j < chunks; j++ {
		cells := min(sp.chunk, tail-j*sp.chunk)
		splits += (cells + cps - 1) / cps
	}
	return splits, cps
}

// decodeTail launches the decode kernel k over every chunk of the tail within the first n
// cells, writing partials split0 … of nsplit: a host chunk is first copied into the
// engine's staging buffer, the newest chunk is read where it is.
func (c *Cache) decodeTail(layer int, k *kernel, shared int, q, po, pml *cuda.Buffer, n, cps, split0, nsplit int, qs float32) error {
	sp, hn := c.sp, c.cfg.KVHeads
	tail := n - sp.resident
	cb := sp.kBytes + sp.vBytes
	var stage *cuda.Buffer
	for j := 0; j*sp.chunk < tail; j++ {
		cells := min(sp.chunk, tail-j*sp.chunk)
		src := sp.hot[layer]
		if j < sp.flushed[layer] {
			if stage == nil {
				var err error
				if stage, err = c.e.buffer("spill.stage", cb); err != nil {
					return err
				}
			}
			if err := stage.CopyFromHostAsync(sp.host[layer], int64(j)*cb, 0, cb, c.stream); err != nil {
				return fmt.Errorf("engine: spill chunk %d of layer %d to the device: %w", j, layer, err)
			}
			src = stage
		}
		ns := (cells + cps - 1) / cps
		err := k.launch(cuda.D2(ns, hn), cuda.D1(attnThreads), shared, c.stream,
			cuda.Ptr(q), cuda.Ptr(src), cuda.PtrAt(src, sp.kBytes), cuda.Ptr(nil), cuda.Int(0), cuda.Int(0),
			cuda.Ptr(po), cuda.Ptr(pml), cuda.Int(cells), cuda.Int(cells), cuda.Int(sp.chunk), cuda.Int(cps), cuda.Int(nsplit),
			cuda.Int(split0), cuda.Int(0), cuda.F32(qs), cuda.Int(0), cuda.F32(0))
		if err != nil {
			return err
		}
		split0 += ns
	}
	return nil
}

// prefillSpill is Prefill when some query positions reach past the device pools: those
// below run the prefill kernel, each other one a decode over the cells up to it.
func (c *Cache) prefillSpill(layer int, q, out *cuda.Buffer, nq, p0, window, heads int, scale float32) error {
	if window > 0 {
		return fmt.Errorf("%w: a sliding-window prefill over a host-spill tail", ErrUnsupported)
	}
	first := max(min(nq, c.cap-p0), 0)
	if first > 0 {
		if err := c.Prefill(layer, q, out, first, p0, 0, heads, scale); err != nil {
			return err
		}
	}
	row := int64(heads) * int64(c.cfg.HeadDimK) * 4
	sq, err := c.e.buffer("spill.q", row)
	if err != nil {
		return err
	}
	so, err := c.e.buffer("spill.out", row)
	if err != nil {
		return err
	}
	for i := first; i < nq; i++ {
		if err := sq.CopyFromAsync(q, int64(i)*row, 0, row, c.stream); err != nil {
			return err
		}
		if err := c.decode(layer, sq, so, heads, scale, p0+i+1, attnOpts{}); err != nil {
			return err
		}
		if err := out.CopyFromAsync(so, 0, int64(i)*row, row, c.stream); err != nil {
			return err
		}
	}
	return nil
}

// spillRows is Rows for a spill cache: the device pools' cells, then each chunk's.
func (c *Cache) spillRows(layer, head int, isK bool) ([]byte, error) {
	ly, sp := c.layers[layer], c.sp
	f, pool, off := c.cfg.Pair.V, ly.v, sp.kBytes
	if isK {
		f, pool, off = c.cfg.Pair.K, ly.k, 0
	}
	if c.stream != nil {
		if err := c.stream.Synchronize(); err != nil {
			return nil, err
		}
	}
	if err := c.e.ctx.Synchronize(); err != nil {
		return nil, err
	}
	d, n := c.cfg.HeadDimK, ly.written
	// rows reads cells [0, cells) of one head from a pool image of capacity capCells.
	rows := func(img []byte, capCells, cells int) []byte {
		if f == kvq.Q2K {
			gb := kvq.Q2KGroupBytes(d)
			base := int64(head) * int64(capCells/Tile) * gb
			return img[base : base+int64((cells+Tile-1)/Tile)*gb]
		}
		rb := f.RowBytes(d)
		base := int64(head) * int64(capCells) * int64(rb)
		if isK {
			return Detile(img[base:base+int64(capCells)*int64(rb)], 0, cells, rb)
		}
		return img[base : base+int64(cells)*int64(rb)]
	}
	img := make([]byte, poolBytes(f, d, c.cfg.KVHeads, c.cap))
	if err := pool.Read(img); err != nil {
		return nil, err
	}
	out := append([]byte(nil), rows(img, c.cap, min(n, c.cap))...)
	cb := sp.kBytes + sp.vBytes
	chunk := make([]byte, cb)
	for j := 0; sp.resident+j*sp.chunk < n; j++ {
		cells := min(sp.chunk, n-sp.resident-j*sp.chunk)
		if j < sp.flushed[layer] {
			copy(chunk, sp.host[layer].Bytes()[int64(j)*cb:int64(j+1)*cb])
		} else if err := sp.hot[layer].Read(chunk); err != nil {
			return nil, err
		}
		out = append(out, rows(chunk[off:], sp.chunk, cells)...)
	}
	return out, nil
}

// StreamBytes is what a decode step over the committed cells copies from host memory to the
// device: every host chunk of every layer, K and V.
func (c *Cache) StreamBytes() int64 {
	if c.sp == nil {
		return 0
	}
	var b int64
	for _, j := range c.sp.flushed {
		b += int64(j) * (c.sp.kBytes + c.sp.vBytes)
	}
	return b
}
