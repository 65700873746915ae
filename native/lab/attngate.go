package lab

import (
	"math"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvcache"
)

// The attention gate on real K/V (seed 003's probe on a dumped KV cache): the reference run's
// own keys and values, stored once in the arm's cache and once in f16, are read by the same
// queries, and the arm's error is the relative RMS of softmax(q·Kᵀ/√d)·V against the f16
// result, per layer over every query head.
//
// The queries are the reference run's when the model reports them (QueryTapper): up to
// maxTapped decode steps, each attending to its causal prefix, with the arm's cache built the
// way the engine builds it (the prompt in one write, then one cell per step, so the overlay
// window and q2k's partial groups are as at decode). Without them the gate uses a key proxy:
// query head h of KV group g at set s is the key of head g at continuation cell P + (s·G + h
// mod G) mod N — a real post-RoPE vector with the channel structure of this layer's keys —
// scaled so its scaled scores over the prompt have a standard deviation of 2.5 (a moderately
// sharp softmax, as the synthetic gate uses), attending to the prompt cells [0, P).

// proxySets is the number of key-proxy query sets per layer.
const proxySets = 8

// gateData is the reference run's K/V and the gate's queries.
type gateData struct {
	k, v    [][]float32 // per layer: cells × KVHeads × HeadDimK (HeadDimV)
	queries [][]float32 // per layer: sets × Heads × HeadDimK
	his     []int       // per set: the cells [0, hi) it attends to
	refOut  [][]float32 // per layer: sets × Heads × HeadDimV, the f16 outputs
	tapped  bool
}

func (r *abRunner) shape() attn.Shape {
	hp := r.m.Hparams
	return attn.Shape{Heads: hp.Heads, KVHeads: hp.KVHeads, HeadDimK: hp.HeadDimK, HeadDimV: hp.HeadDimV,
		Scale: float32(1 / math.Sqrt(float64(hp.HeadDimK))), Threads: r.m.Threads()}
}

// prepareGate reads the reference cache's K/V back and builds the queries and the f16 outputs.
func (r *abRunner) prepareGate() *gateData {
	hp := r.m.Hparams
	kv, dk, dv := hp.KVHeads, hp.HeadDimK, hp.HeadDimV
	cells, p := r.cells, len(r.prompt)
	g := &gateData{}
	for l := 0; l < hp.Layers; l++ {
		kr, vr := r.ref.cache.Rows(l, false)
		k, v := make([]float32, cells*kv*dk), make([]float32, cells*kv*dv)
		for i := 0; i < cells; i++ {
			for h := 0; h < kv; h++ {
				kr[h].Row(k[(i*kv+h)*dk:(i*kv+h+1)*dk], i)
				vr[h].Row(v[(i*kv+h)*dv:(i*kv+h+1)*dv], i)
			}
		}
		g.k, g.v = append(g.k, k), append(g.v, v)
	}
	if r.ref.queries != nil {
		g.tapped, g.queries = true, r.ref.queries
		for _, pos := range r.ref.qPos {
			g.his = append(g.his, pos+1)
		}
	} else {
		group, n := hp.Heads/kv, r.cfg.N
		scale := 1 / math.Sqrt(float64(dk))
		for l := 0; l < hp.Layers; l++ {
			q := make([]float32, proxySets*hp.Heads*dk)
			for s := 0; s < proxySets; s++ {
				for h := 0; h < hp.Heads; h++ {
					kh := h / group
					cell := p + (s*group+h%group)%n
					dst := q[(s*hp.Heads+h)*dk : (s*hp.Heads+h+1)*dk]
					copy(dst, g.k[l][(cell*kv+kh)*dk:(cell*kv+kh+1)*dk])
					var s1, s2 float64
					for j := 0; j < p; j++ {
						var d float64
						for i, x := range dst {
							d += float64(x) * float64(g.k[l][(j*kv+kh)*dk+i])
						}
						d *= scale
						s1, s2 = s1+d, s2+d*d
					}
					std := math.Sqrt(max(s2/float64(p)-(s1/float64(p))*(s1/float64(p)), 1e-12))
					for i := range dst {
						dst[i] *= float32(2.5 / std)
					}
				}
			}
			g.queries = append(g.queries, q)
		}
		for s := 0; s < proxySets; s++ {
			g.his = append(g.his, p)
		}
	}
	sh := r.shape()
	nq, no := hp.Heads*dk, hp.Heads*dv
	for l := 0; l < hp.Layers; l++ {
		out := make([]float32, len(g.his)*no)
		keys, vals := r.ref.cache.Keys(l, false), r.ref.cache.Values(l, false)
		for s, hi := range g.his {
			// The reference cache holds every cell; reading [0, hi) is the f16 attention at
			// that step. An error here would be a programmer bug (shapes come from the model).
			if err := attn.Decode(out[s*no:(s+1)*no], g.queries[l][s*nq:(s+1)*nq], sh, keys, vals, 0, hi); err != nil {
				panic(err)
			}
		}
		g.refOut = append(g.refOut, out)
	}
	return g
}

// attentionErrors is the gate for one arm: per layer, the relative RMS error of the arm's
// attention outputs against the f16 outputs.
func (r *abRunner) attentionErrors(a Arm) ([]float64, error) {
	hp := r.m.Hparams
	g := r.gate
	kv, dk, dv := hp.KVHeads, hp.HeadDimK, hp.HeadDimV
	cache, err := kvcache.New(a.cacheConfig(r.base, r.cells, r.cfg.Seed))
	if err != nil {
		return nil, err
	}
	num, den := make([]float64, hp.Layers), make([]float64, hp.Layers)
	sh := r.shape()
	nq, no := hp.Heads*dk, hp.Heads*dv
	out := make([]float32, no)
	write := func(lo, hi int) error {
		for l := 0; l < hp.Layers; l++ {
			if err := cache.Write(l, g.k[l][lo*kv*dk:hi*kv*dk], g.v[l][lo*kv*dv:hi*kv*dv], hi-lo); err != nil {
				return err
			}
		}
		return cache.Commit(hi - lo)
	}
	eval := func(s int) error {
		for l := 0; l < hp.Layers; l++ {
			if err := attn.Decode(out, g.queries[l][s*nq:(s+1)*nq], sh, cache.Keys(l, true), cache.Values(l, true), 0, g.his[s]); err != nil {
				return err
			}
			ref := g.refOut[l][s*no : (s+1)*no]
			for i, x := range out {
				e := float64(x) - float64(ref[i])
				num[l] += e * e
				den[l] += float64(ref[i]) * float64(ref[i])
			}
		}
		return nil
	}
	p := len(r.prompt)
	if err := write(0, p); err != nil {
		return nil, err
	}
	next := 0 // the next query set to evaluate, in order of his
	for next < len(g.his) && g.his[next] <= p {
		if err := eval(next); err != nil {
			return nil, err
		}
		next++
	}
	for c := p; c < r.cells && next < len(g.his); c++ {
		if err := write(c, c+1); err != nil {
			return nil, err
		}
		for next < len(g.his) && g.his[next] <= c+1 {
			if err := eval(next); err != nil {
				return nil, err
			}
			next++
		}
	}
	errs := make([]float64, hp.Layers)
	for l := range errs {
		if den[l] > 0 {
			errs[l] = math.Sqrt(num[l] / den[l])
		}
	}
	return errs, r.ctx.Err()
}
