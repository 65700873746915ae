package kvcache

import (
	"math"

	"github.com/kvlab/kvlab/native/kvq"
)

// EstimateBytes is the memory New(cfg) reserves (the stores and the FP16 overlay), computed
// without allocating, so that callers can check it against the memory budget first. It
// saturates at math.MaxInt64 instead of overflowing.
func EstimateBytes(cfg Config) int64 {
	if cfg.Layers <= 0 || cfg.KVHeads <= 0 || cfg.MaxCells <= 0 || !cfg.Pair.Valid() {
		return 0
	}
	if cfg.layered() && len(cfg.LayerPairs) <= cfg.Layers && (len(cfg.Windows) == 0 || len(cfg.Windows) == cfg.Layers) {
		return estimateLayers(cfg)
	}
	if len(cfg.Windows) > 0 {
		return estimateWindows(cfg)
	}
	if cfg.Recent > 0 {
		tail, ring, sinks := mixedGeometry(cfg)
		perLayer := float64(cfg.Pair.Bytes(int64(tail), cfg.HeadDimK, cfg.HeadDimV, cfg.KVHeads)) +
			float64(kvq.OverlayBytes(int64(ring+sinks), cfg.HeadDimK, cfg.HeadDimV, cfg.KVHeads))
		return saturate(perLayer * float64(cfg.Layers))
	}
	perLayer := float64(cfg.Pair.Bytes(int64(cfg.MaxCells), cfg.HeadDimK, cfg.HeadDimV, cfg.KVHeads))
	if cfg.Pair.K.Grouped() {
		perLayer += float64(cfg.KVHeads) * float64(kvq.Q2KStagingBytes(cfg.HeadDimK))
	}
	slots := min(int64(max(cfg.Sinks, 0)), int64(cfg.MaxCells)) + min(int64(max(cfg.Window, 0)), int64(cfg.MaxCells))
	perLayer += float64(kvq.OverlayBytes(1, cfg.HeadDimK, cfg.HeadDimV, cfg.KVHeads)) * float64(slots)
	return saturate(perLayer * float64(cfg.Layers))
}

func saturate(total float64) int64 {
	if total >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Ceil(total))
}

// estimateWindows is EstimateBytes of a cache with sliding-window layers: each layer as a cache
// of its own.
func estimateWindows(cfg Config) int64 {
	var total float64
	one := cfg
	one.Layers, one.Windows = 1, nil
	for l := 0; l < cfg.Layers; l++ {
		w := cfg.layerWindow(l)
		if w == 0 {
			total += float64(EstimateBytes(one))
			continue
		}
		k := cfg.Pair.K.Bytes(int64(w), cfg.HeadDimK, cfg.KVHeads)
		if cfg.Pair.K.Grouped() {
			k = groupKBytes(cfg.MaxCells, cfg.HeadDimK, cfg.KVHeads)
		}
		total += float64(k) + float64(cfg.Pair.V.Bytes(int64(w), cfg.HeadDimV, cfg.KVHeads))
	}
	return saturate(total)
}

// estimateLayers is EstimateBytes of a cache whose layers store pairs of their own: each layer
// as a one-layer cache of its pair (and its sliding window, if any).
func estimateLayers(cfg Config) int64 {
	var total float64
	one := cfg
	one.Layers, one.LayerPairs, one.Windows = 1, nil, nil
	for l := 0; l < cfg.Layers; l++ {
		one.Pair = cfg.LayerPair(l)
		if len(cfg.Windows) > 0 {
			one.Windows = cfg.Windows[l : l+1]
		}
		total += float64(EstimateBytes(one))
	}
	return saturate(total)
}
