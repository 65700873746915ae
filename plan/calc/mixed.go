package calc

import (
	"strconv"

	"github.com/kvlab/kvlab/native/kvq"
)

// Mixed describes the position-axis mixed cache (seed 000's P2; native/kvcache Config.Recent):
// the most recent Window cells and the first Sinks cells of every attention layer held only in
// f16, every other cell only in the pair, quantized once as it leaves the window. The zero
// value means none.
type Mixed struct {
	Window int `json:"window"`
	Sinks  int `json:"sinks"`
}

// Enabled reports whether the request asks for mixed rows.
func (m Mixed) Enabled() bool { return m.Window > 0 }

// Spec is the rows' name suffix, as `kvlab ab` writes the arm: "+p256+s8".
func (m Mixed) Spec() string {
	s := "+p" + strconv.Itoa(m.Window)
	if m.Sinks > 0 {
		s += "+s" + strconv.Itoa(m.Sinks)
	}
	return s
}

// mixedCells splits a layer of n cells into its f16 cells and its tail.
func (m Mixed) mixedCells(n int64) (f16, tail int64) {
	s := min(int64(m.Sinks), n)
	ring := min(int64(m.Window+kvq.MixedBatch(m.Window)), n-s)
	return s + ring, max(n-s-int64(m.Window), 0)
}

// MixedBytes is one sequence's mixed cache of ctx tokens in pair p on one GPU of a tp-way group:
// per Full or Sliding layer the f16 cells (the sinks, the window and its batch) and the tail in
// p, per Latent layer the same of the latent row, recurrent states as KVBytes counts them.
func (s Shape) MixedBytes(m Mixed, p kvq.Pair, ctx int64, tp int) int64 {
	ctx = max(ctx, 0)
	var total int64
	for _, g := range s.Groups {
		var per int64
		switch g.Kind {
		case Full, Sliding:
			f16, tail := m.mixedCells(g.layerCells(ctx))
			h := headsPerGPU(g.KVHeads, tp)
			per = p.Bytes(tail, g.HeadDimK, g.HeadDimV, h) + kvq.OverlayBytes(f16, g.HeadDimK, g.HeadDimV, h)
		case Latent:
			f16, tail := m.mixedCells(ctx)
			per = p.K.Bytes(tail, g.LatentDim, 1) + kvq.OverlayBytes(f16, g.LatentDim, 0, 1)
		case Recurrent:
			per = g.StateBytes
			if tp > 1 {
				per = ceilDiv(per, int64(tp))
			}
		}
		total += per * int64(g.Count)
	}
	return total
}

// MaxResidentCtxMixed is MaxResidentCtx for the mixed cache.
func (s Shape) MaxResidentCtxMixed(m Mixed, p kvq.Pair, budget int64, sessions, tp int) int64 {
	n := int64(max(sessions, 1))
	return s.maxFitting(func(ctx int64) bool { return n*s.MixedBytes(m, p, ctx, tp) <= budget }, p, budget, n, tp)
}

// SpillMixed is Spill for the mixed cache: the f16 cells stay on the device, the tail past the
// resident context streams from host memory in p.
func SpillMixed(s Shape, m Mixed, p kvq.Pair, ctx, residentLimit, activeWeights int64, tp int, params SpillParams) SpillPoint {
	resident := ctx
	if residentLimit != Unbounded && residentLimit < ctx {
		resident = max(residentLimit, 0)
	}
	dev := activeWeights + s.MixedBytes(m, p, resident, tp)
	tail := s.KVBytes(p, ctx, tp) - s.KVBytes(p, resident, tp)
	return SpillPoint{Ctx: ctx, ResidentCells: resident, DeviceBytes: dev, TailBytes: tail, TPS: params.TokensPerSecond(dev, tail)}
}
