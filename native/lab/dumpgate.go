package lab

import (
	"fmt"
	"math"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvcache"
)

// DumpGateResult is the attention-output gate of one arm on a real KV dump: per layer, the
// relative RMS error of softmax(q·Kᵀ/√d)·V over the arm's cache (decode readers: the overlay or
// the f16 recent window act) against the same attention over the dump's values.
type DumpGateResult struct {
	Arm     string    `json:"arm"`
	Layers  []float64 `json:"attn_err"`
	Mean    float64   `json:"attn_err_mean"`
	Max     float64   `json:"attn_err_max"`
	KVBytes int64     `json:"kv_bytes"`
}

// dumpScoreStd is the standard deviation of the proxy queries' scaled scores.
const dumpScoreStd = 2.5

// RunDumpGate runs the gate on a cache loaded from a KV snapshot (a real model's K/V): every
// arm stores the same cells (one write per layer, as a prefill writes them) and is compared with
// the dump's own values. The queries are a key proxy, as `kvlab ab` uses for models that do not
// report theirs: for each query head, the key of one of the last cells of its KV head, scaled
// so that its scaled scores over the cache have a standard deviation of 2.5. heads is the
// model's query heads (a multiple of the KV heads).
func RunDumpGate(dump *kvcache.Cache, heads int, arms []Arm, seed uint64) ([]DumpGateResult, error) {
	base := dump.Config()
	n, hn, dk, dv := dump.Len(), base.KVHeads, base.HeadDimK, base.HeadDimV
	if n < 2 {
		return nil, fmt.Errorf("gate: the dump holds %d cells; it needs at least 2", n)
	}
	if heads <= 0 || heads%hn != 0 {
		return nil, fmt.Errorf("gate: %d query heads over %d KV heads", heads, hn)
	}
	group := heads / hn
	shape := attn.Shape{Heads: heads, KVHeads: hn, HeadDimK: dk, HeadDimV: dv, Scale: float32(1 / math.Sqrt(float64(dk))), Threads: 1}
	// The dump's values and the exact outputs, per layer.
	type layerData struct {
		k, v, q, exact []float32
	}
	var data []layerData
	for l := 0; l < base.Layers; l++ {
		kr, vr := dump.Rows(l, true)
		ld := layerData{k: make([]float32, n*hn*dk), v: make([]float32, n*hn*dv), q: make([]float32, heads*dk), exact: make([]float32, heads*dv)}
		for i := 0; i < n; i++ {
			for h := 0; h < hn; h++ {
				kr[h].Row(ld.k[(i*hn+h)*dk:(i*hn+h+1)*dk], i)
				vr[h].Row(ld.v[(i*hn+h)*dv:(i*hn+h+1)*dv], i)
			}
		}
		for qh := 0; qh < heads; qh++ {
			g, j := qh/group, qh%group
			cell := n - 1 - j%n
			q := ld.q[qh*dk : (qh+1)*dk]
			copy(q, ld.k[(cell*hn+g)*dk:(cell*hn+g+1)*dk])
			var s1, s2 float64
			for i := 0; i < n; i++ {
				var dot float64
				for c, x := range q {
					dot += float64(x) * float64(ld.k[(i*hn+g)*dk+c])
				}
				dot *= float64(shape.Scale)
				s1, s2 = s1+dot, s2+dot*dot
			}
			std := math.Sqrt(max(s2/float64(n)-(s1/float64(n))*(s1/float64(n)), 1e-12))
			for c := range q {
				q[c] *= float32(dumpScoreStd / std)
			}
		}
		if err := attn.DecodeReference(ld.exact, ld.q, shape, kr, vr, 0, n); err != nil {
			return nil, err
		}
		data = append(data, ld)
	}
	var out []DumpGateResult
	got := make([]float32, heads*dv)
	for _, a := range arms {
		cfg := a.cacheConfig(base, n, seed)
		c, err := kvcache.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("gate: arm %s: %w", a, err)
		}
		res := DumpGateResult{Arm: a.String(), KVBytes: c.Bytes()}
		for l, ld := range data {
			if err := c.Write(l, ld.k, ld.v, n); err != nil {
				return nil, fmt.Errorf("gate: arm %s: %w", a, err)
			}
		}
		if err := c.Commit(n); err != nil {
			return nil, err
		}
		for l, ld := range data {
			if err := attn.Decode(got, ld.q, shape, c.Keys(l, true), c.Values(l, true), 0, n); err != nil {
				return nil, fmt.Errorf("gate: arm %s layer %d: %w", a, l, err)
			}
			e := RelRMS(got, ld.exact)
			res.Layers = append(res.Layers, e)
			res.Mean += e / float64(len(data))
			res.Max = max(res.Max, e)
		}
		out = append(out, res)
	}
	return out, nil
}
