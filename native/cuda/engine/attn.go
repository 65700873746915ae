package engine

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/kvq"
)

// Geometry of the attention kernels (kv_attn.cuh).
const (
	attnWarps   = 4
	attnThreads = 32 * attnWarps
	prefillRows = 8 // query rows per warp in prefill
	// minCellsPerSplit keeps every warp of a decode block at least one tile busy.
	minCellsPerSplit = Tile * attnWarps
	// overlaySplitCells is the number of overlay slots one overlay split covers.
	overlaySplitCells = 256
	// maxSplits bounds the bulk splits of one decode (and the combine's shared memory).
	maxSplits = 4096
)

// tileBytes is the bytes of one 32-cell tile of format f at head dimension d.
func tileBytes(f kvq.Format, d int) int {
	if f == kvq.Q2K {
		return int(kvq.Q2KGroupBytes(d))
	}
	return Tile * f.RowBytes(d)
}

// attnShared returns the dynamic shared memory in bytes of a decode block (prefill false;
// r = query heads per KV head) or a prefill block (r = rows per warp, 8), and the number of
// staging buffers: exactly kv_attn.cuh's Smem arithmetic, which the kernels check.
func attnShared(kf, vf kvq.Format, d, r int, prefill bool) (bytes, stages int) {
	copies := 1
	if prefill {
		copies = attnWarps
	}
	rp := (r + 3) / 4 * 4
	q := r * copies * d
	qsum := (r*copies*(d/32) + 3) / 4 * 4
	p := attnWarps * 32 * rp
	q2 := 0
	if kf == kvq.Q2K {
		q2 = attnWarps * r * d
	}
	floats := (q + qsum + 16 + p + q2 + 3) / 4 * 4
	stage := tileBytes(kf, d) + Tile*vf.RowBytes(d)
	if prefill {
		stages = 1
		if 2*stage <= 64<<10 {
			stages = 2
		}
		return floats*4 + stages*stage, stages
	}
	stages = 1
	if attnWarps*2*stage <= 96<<10 {
		stages = 2
	}
	// The staging area also holds the warps' merge at the end.
	area := max(attnWarps*stages*stage, attnWarps*r*(d+2)*4)
	return floats*4 + area, stages
}

// planSplits divides n cells of kvHeads heads into splits for blocks blocks in flight (the
// device's SMs × resident blocks per SM): as many splits as fill one wave without a partial
// second one, each a whole number of tiles of at least minCellsPerSplit cells. It returns
// the cells per split and the number of splits.
func planSplits(n, kvHeads, blocks int) (cps, splits int) {
	if n <= 0 {
		return minCellsPerSplit, 0
	}
	want := max(blocks/kvHeads, 1)
	want = min(want, maxSplits)
	cps = (n + want - 1) / want
	cps = max((cps+Tile-1)/Tile*Tile, minCellsPerSplit)
	return cps, (n + cps - 1) / cps
}

// QScale is the factor the kernels multiply queries by: the softmax scale times log2(e),
// since they exponentiate in base 2.
func QScale(scale float32) float32 { return float32(float64(scale) * math.Log2E) }

// Decode computes one query position's attention over every written cell of a layer, with
// the overlay's exact copies where configured, into out: q and out hold heads × HeadDim
// float32 (query head h uses KV head h / (heads / KVHeads)). It is attn.Decode's math:
// out_h = softmax(scale · q_h·K_g)·V_g. Launches: tq4_rotate of q when K is tq4; the decode
// kernel over the bulk (grid (splits, KV heads)); the f16 decode kernel over the overlay
// slots; tq4_rotate of the bulk partials when V is tq4; kv_combine (grid heads).
//
// With a host-spill tail (NewSpillCache) the bulk launch covers the device pools and each
// chunk of the tail adds its own launch of the same kernel — a host chunk after its copy
// into the staging buffer — whose partials join the bulk's before kv_combine (spill.go).
func (c *Cache) Decode(layer int, q, out *cuda.Buffer, heads int, scale float32) error {
	return c.DecodeOpts(layer, q, out, heads, scale, 0, 0)
}

// attnOpts are the gemma extensions of the attention kernels: cells below lo are not attended
// (a decode's sliding window; prefill takes its window per row), and a positive softCap caps
// every scaled score x as softCap·tanh(x/softCap).
type attnOpts struct {
	lo      int
	softCap float32
}

// cap2 is the kernels' soft-cap argument: the cap in base-2 score units (0 for none).
func (o attnOpts) cap2() float32 {
	if o.softCap <= 0 {
		return 0
	}
	return float32(float64(o.softCap) * math.Log2E)
}

// DecodeOpts is Decode attending only the cells of the last window positions (window > 0;
// the overlay's exact copies included) with every scaled score x capped as softCap·tanh(x/softCap)
// when softCap > 0: ml.Gemma's AttentionOpts for one token. A host-spill cache takes neither.
func (c *Cache) DecodeOpts(layer int, q, out *cuda.Buffer, heads int, scale float32, window int, softCap float32) error {
	if layer < 0 || layer >= len(c.layers) {
		return fmt.Errorf("engine: layer %d out of range [0, %d)", layer, len(c.layers))
	}
	n := c.layers[layer].written
	o := attnOpts{softCap: softCap}
	if window > 0 {
		o.lo = max(0, n-window)
	}
	if c.sp != nil && (o.lo > 0 || softCap > 0) {
		return fmt.Errorf("%w: a sliding window or soft-capping over a host-spill cache", ErrUnsupported)
	}
	return c.decode(layer, q, out, heads, scale, n, o)
}

// decode is Decode over the first n written cells.
func (c *Cache) decode(layer int, q, out *cuda.Buffer, heads int, scale float32, n int, o attnOpts) error {
	cfg, ly := c.cfg, c.layers[layer]
	d, hn := cfg.HeadDimK, cfg.KVHeads
	if heads <= 0 || heads%hn != 0 || heads/hn > MaxGroup {
		return fmt.Errorf("%w: %d query heads on %d KV heads (1 to %d per KV head)", ErrUnsupported, heads, hn, MaxGroup)
	}
	g := heads / hn
	vecBytes := int64(heads) * int64(d) * 4
	if q.Size() < vecBytes || out.Size() < vecBytes {
		return fmt.Errorf("engine: decode of %d heads × %d needs %d-byte q and out, have %d and %d", heads, d, vecBytes, q.Size(), out.Size())
	}
	if n == 0 {
		return out.Memset(0)
	}
	rawQ := q // the overlay holds exact f16 K: it dots the raw query
	if cfg.Pair.K == kvq.TQ4 {
		qr, err := c.e.buffer("decode.qrot", vecBytes)
		if err != nil {
			return err
		}
		if err := c.rotate(qr, q, ly.scK, 1, 1, heads, g, heads, false); err != nil {
			return err
		}
		q = qr
	}
	bulk, err := c.e.kernel(DecodeKernel(cfg.Pair.K, cfg.Pair.V, d, g))
	if err != nil {
		return err
	}
	shared, _ := attnShared(cfg.Pair.K, cfg.Pair.V, d, g, false)
	perSM, err := bulk.occupancy(attnThreads, shared)
	if err != nil {
		return err
	}
	blocks := max(perSM, 1) * c.e.info.SMs
	if c.e.splitBlocks > 0 {
		blocks = c.e.splitBlocks
	}
	nDev, nt, tcps := n, 0, 0
	if c.sp != nil {
		nDev = min(n, c.cap)
		nt, tcps = c.sp.tailSplits(n, hn, blocks)
	}
	cps, nb := planSplits(nDev, hn, blocks)
	slots := len(ly.owner)
	no := 0
	if slots > 0 {
		no = (slots + overlaySplitCells - 1) / overlaySplitCells
	}
	nsplit := nb + nt + no
	po, err := c.e.buffer("decode.part_o", int64(heads)*int64(nsplit)*int64(d)*4)
	if err != nil {
		return err
	}
	pml, err := c.e.buffer("decode.part_ml", int64(heads)*int64(nsplit)*2*4)
	if err != nil {
		return err
	}
	qs := QScale(scale)
	var owner *cuda.Buffer
	if slots > 0 {
		owner = ly.ownerBuf
	}
	err = bulk.launch(cuda.D2(nb, hn), cuda.D1(attnThreads), shared, c.stream,
		cuda.Ptr(q), cuda.Ptr(ly.k), cuda.Ptr(ly.v), cuda.Ptr(owner), cuda.Int(cfg.Sinks), cuda.Int(cfg.Window),
		cuda.Ptr(po), cuda.Ptr(pml), cuda.Int(n), cuda.Int(nDev), cuda.Int(c.cap), cuda.Int(cps), cuda.Int(nsplit),
		cuda.Int(0), cuda.Int(0), cuda.F32(qs), cuda.Int(o.lo), cuda.F32(o.cap2()))
	if err != nil {
		return err
	}
	if nt > 0 {
		if err := c.decodeTail(layer, bulk, shared, q, po, pml, n, tcps, nb, nsplit, qs); err != nil {
			return err
		}
	}
	if cfg.Pair.V == kvq.TQ4 {
		// The bulk accumulated rotated values; bring its partials back before the overlay's
		// value-domain partials join them (Rᵀ is linear, so it commutes with the combine).
		if err := c.rotate(po, po, ly.scV, nb+nt, nsplit, heads, g, heads*(nb+nt), true); err != nil {
			return err
		}
	}
	if no > 0 {
		ov, err := c.e.kernel(DecodeKernel(kvq.F16, kvq.F16, d, g))
		if err != nil {
			return err
		}
		osh, _ := attnShared(kvq.F16, kvq.F16, d, g, false)
		err = ov.launch(cuda.D2(no, hn), cuda.D1(attnThreads), osh, c.stream,
			cuda.Ptr(rawQ), cuda.Ptr(ly.ovK), cuda.Ptr(ly.ovV), cuda.Ptr(ly.ownerBuf), cuda.Int(cfg.Sinks), cuda.Int(cfg.Window),
			cuda.Ptr(po), cuda.Ptr(pml), cuda.Int(n), cuda.Int(slots), cuda.Int(roundCap(slots)), cuda.Int(overlaySplitCells),
			cuda.Int(nsplit), cuda.Int(nb+nt), cuda.Int(1), cuda.F32(qs), cuda.Int(o.lo), cuda.F32(o.cap2()))
		if err != nil {
			return err
		}
	}
	comb, err := c.e.kernel("kv_combine")
	if err != nil {
		return err
	}
	return comb.launch(cuda.D1(heads), cuda.D1(128), 4*nsplit, c.stream,
		cuda.Ptr(out), cuda.Ptr(po), cuda.Ptr(pml), cuda.Int(nsplit), cuda.Int(d))
}

// rotate launches tq4_rotate over rows launch rows (see kv_attn.cu).
func (c *Cache) rotate(dst, src, sc *cuda.Buffer, count, nsplit, heads, group, rows int, transpose bool) error {
	k, err := c.e.kernel("tq4_rotate")
	if err != nil {
		return err
	}
	t := 0
	if transpose {
		t = 1
	}
	return k.launch(cuda.D1(rows), cuda.D1(32), 0, c.stream, cuda.Ptr(dst), cuda.Ptr(src), cuda.Ptr(sc),
		cuda.Int(count), cuda.Int(nsplit), cuda.Int(heads), cuda.Int(group), cuda.Int(c.cfg.HeadDimK), cuda.Int(t))
}

// Prefill computes causal attention for nq query positions p0 … p0+nq−1 over the bulk pools
// (no overlay, as kvcache's Keys(layer, false)): query i attends to cells [lo_i, p0+i+1),
// lo_i = max(0, p0+i+1−window) for window > 0, else 0. q and out hold nq × heads × HeadDim
// float32; every cell up to p0+nq must be written. It is attn.Prefill's math. Launches:
// tq4_rotate of q when K is tq4, the prefill kernel (grid (⌈nq·group/32⌉, KV heads)), and
// tq4_rotate of out when V is tq4.
func (c *Cache) Prefill(layer int, q, out *cuda.Buffer, nq, p0, window, heads int, scale float32) error {
	return c.PrefillOpts(layer, q, out, nq, p0, window, heads, scale, 0)
}

// PrefillOpts is Prefill with every scaled score x capped as softCap·tanh(x/softCap) when
// softCap > 0 (not over a host-spill cache's tail).
func (c *Cache) PrefillOpts(layer int, q, out *cuda.Buffer, nq, p0, window, heads int, scale, softCap float32) error {
	if layer < 0 || layer >= len(c.layers) {
		return fmt.Errorf("engine: layer %d out of range [0, %d)", layer, len(c.layers))
	}
	cfg, ly := c.cfg, c.layers[layer]
	d, hn := cfg.HeadDimK, cfg.KVHeads
	if heads <= 0 || heads%hn != 0 {
		return fmt.Errorf("%w: %d query heads on %d KV heads", ErrUnsupported, heads, hn)
	}
	if nq <= 0 || p0 < 0 || p0+nq > ly.written || window < 0 {
		return fmt.Errorf("engine: prefill of %d positions from %d (window %d) over %d written cells", nq, p0, window, ly.written)
	}
	g := heads / hn
	bytes := int64(nq) * int64(heads) * int64(d) * 4
	if q.Size() < bytes || out.Size() < bytes {
		return fmt.Errorf("engine: prefill needs %d-byte q and out, have %d and %d", bytes, q.Size(), out.Size())
	}
	if c.sp != nil && p0+nq > c.cap {
		if softCap > 0 {
			return fmt.Errorf("%w: soft-capping over a host-spill cache", ErrUnsupported)
		}
		return c.prefillSpill(layer, q, out, nq, p0, window, heads, scale)
	}
	if cfg.Pair.K == kvq.TQ4 {
		qr, err := c.e.buffer("prefill.qrot", bytes)
		if err != nil {
			return err
		}
		if err := c.rotate(qr, q, ly.scK, 1, 1, heads, g, nq*heads, false); err != nil {
			return err
		}
		q = qr
	}
	k, err := c.e.kernel(PrefillKernel(cfg.Pair.K, cfg.Pair.V, d))
	if err != nil {
		return err
	}
	shared, _ := attnShared(cfg.Pair.K, cfg.Pair.V, d, prefillRows, true)
	rows := nq * g
	err = k.launch(cuda.D2((rows+31)/32, hn), cuda.D1(attnThreads), shared, c.stream,
		cuda.Ptr(out), cuda.Ptr(q), cuda.Ptr(ly.k), cuda.Ptr(ly.v), cuda.Int(nq), cuda.Int(p0), cuda.Int(window),
		cuda.Int(heads), cuda.Int(hn), cuda.Int(c.cap), cuda.F32(QScale(scale)), cuda.F32(attnOpts{softCap: softCap}.cap2()))
	if err != nil {
		return err
	}
	if cfg.Pair.V == kvq.TQ4 {
		return c.rotate(out, out, ly.scV, 1, 1, heads, g, nq*heads, true)
	}
	return nil
}

// DecodeHost is Decode with the query and output in host memory.
func (c *Cache) DecodeHost(layer int, q []float32, heads int, scale float32) ([]float32, error) {
	qb, err := c.e.buffer("host.q", int64(len(q))*4)
	if err != nil {
		return nil, err
	}
	ob, err := c.e.buffer("host.out", int64(len(q))*4)
	if err != nil {
		return nil, err
	}
	if err := qb.Write(cuda.Bytes(q)); err != nil {
		return nil, err
	}
	if err := c.Decode(layer, qb, ob, heads, scale); err != nil {
		return nil, err
	}
	out := make([]float32, len(q))
	return out, ob.Read(cuda.Bytes(out))
}

// PrefillHost is Prefill with q and the output in host memory.
func (c *Cache) PrefillHost(layer int, q []float32, nq, p0, window, heads int, scale float32) ([]float32, error) {
	qb, err := c.e.buffer("host.pq", int64(len(q))*4)
	if err != nil {
		return nil, err
	}
	ob, err := c.e.buffer("host.pout", int64(len(q))*4)
	if err != nil {
		return nil, err
	}
	if err := qb.Write(cuda.Bytes(q)); err != nil {
		return nil, err
	}
	if err := c.Prefill(layer, qb, ob, nq, p0, window, heads, scale); err != nil {
		return nil, err
	}
	out := make([]float32, len(q))
	return out, ob.Read(cuda.Bytes(out))
}
