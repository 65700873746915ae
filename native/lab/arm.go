package lab

import (
	"fmt"
	"github.com/kvlab/kvlab/internal/limits"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// Arm is one KV-cache configuration an A/B run measures against the f16 reference: a format
// pair, and either the FP16 window + sinks overlay (Window: f16 copies over a cache that holds
// every cell quantized) or the position-axis mixed cache (Recent: the most recent cells and the
// sinks only in f16, the tail only in the pair), and q2k's K gain.
type Arm struct {
	Pair   kvq.Pair `json:"-"`
	Window int      `json:"window,omitempty"`
	Recent int      `json:"recent,omitempty"`
	Sinks  int      `json:"sinks,omitempty"`
	// KGain is q2k's K reconstruction gain B; 0 and 1 both mean none.
	KGain float32 `json:"k_gain,omitempty"`
	// Layers are per-layer bit allocations ("+l0-1=turbo4/turbo3"): layers From … To store
	// Pair instead of the arm's pair. Later entries win where ranges overlap.
	Layers []LayerPair `json:"layers,omitempty"`
}

// LayerPair gives layers From … To (inclusive, counted from 0) their own pair.
type LayerPair struct {
	From, To int
	Pair     kvq.Pair
}

// String writes the option's spec without its "+l": "0=q4_0/turbo3", "0-1=turbo4/turbo3".
func (lp LayerPair) String() string {
	s := strconv.Itoa(lp.From)
	if lp.To != lp.From {
		s += "-" + strconv.Itoa(lp.To)
	}
	return s + "=" + lp.Pair.String()
}

// parseLayerPair reads "A=PAIR" or "A-B=PAIR".
func parseLayerPair(v string) (LayerPair, error) {
	r, pair, ok := strings.Cut(v, "=")
	if !ok {
		return LayerPair{}, fmt.Errorf("want +lN=PAIR or +lA-B=PAIR")
	}
	a, b, isRange := strings.Cut(r, "-")
	from, err := strconv.Atoi(a)
	if err != nil {
		return LayerPair{}, fmt.Errorf("layer %q: want a number", limits.Clip(a, 16))
	}
	to := from
	if isRange {
		if to, err = strconv.Atoi(b); err != nil {
			return LayerPair{}, fmt.Errorf("layer %q: want a number", limits.Clip(b, 16))
		}
	}
	if from < 0 || to < from || to >= maxArmLayer {
		return LayerPair{}, fmt.Errorf("layers %d-%d: want 0 ≤ first ≤ last < %d", from, to, maxArmLayer)
	}
	p, err := kvq.ParsePair(pair)
	if err != nil {
		return LayerPair{}, err
	}
	return LayerPair{From: from, To: to, Pair: p}, nil
}

// LayerPairs is the per-layer pairs of the arm for a cache (kvcache.Config.LayerPairs), nil
// when it has none.
func (a Arm) LayerPairs() []kvq.Pair {
	if len(a.Layers) == 0 {
		return nil
	}
	n := 0
	for _, lp := range a.Layers {
		n = max(n, lp.To+1)
	}
	out := make([]kvq.Pair, n)
	for _, lp := range a.Layers {
		for l := lp.From; l <= lp.To; l++ {
			out[l] = lp.Pair
		}
	}
	return out
}

// ArmDefaults are the overlay and gain an arm gets when its spec does not name them.
type ArmDefaults struct {
	Window, Sinks int
	KGain         float32
}

// String is the arm's spec, which ParseArm reads back: the pair, then "+w" window or "+p"
// recent window, "+s" sinks and "+g" gain when set ("q2k+w64+s8+g1.1", "q4_0+p256+s8").
func (a Arm) String() string {
	s := a.Pair.String()
	if a.Window > 0 {
		s += "+w" + strconv.Itoa(a.Window)
	}
	if a.Recent > 0 {
		s += "+p" + strconv.Itoa(a.Recent)
	}
	if a.Sinks > 0 {
		s += "+s" + strconv.Itoa(a.Sinks)
	}
	if a.KGain != 0 && a.KGain != 1 {
		s += "+g" + strconv.FormatFloat(float64(a.KGain), 'g', -1, 32)
	}
	for _, lp := range a.Layers {
		s += "+l" + lp.String()
	}
	return s
}

// plain reports whether the arm has no overlay, no gain and no per-layer pairs.
func (a Arm) plain() bool {
	return a.Window == 0 && a.Recent == 0 && a.Sinks == 0 && (a.KGain == 0 || a.KGain == 1) && len(a.Layers) == 0
}

// cacheConfig applies the arm to a cache configuration of the model's geometry.
func (a Arm) cacheConfig(base kvcache.Config, cells int, seed uint64) kvcache.Config {
	cfg := base
	cfg.Pair, cfg.MaxCells = a.Pair, cells
	cfg.Window, cfg.Recent, cfg.Sinks, cfg.KGain, cfg.Seed = a.Window, a.Recent, a.Sinks, a.KGain, seed
	cfg.LayerPairs = a.LayerPairs()
	return cfg
}

// ParseArm reads one arm spec: a pair ("q8_0", "q8_0/q4_0", "q2k") optionally followed by
// "+wN" (overlay window cells) or "+pN" (recent f16 cells over a quantized tail), "+sN" (sink
// cells), "+gB" (K gain) and "+lA-B=PAIR" (layers A … B store PAIR: per-layer bit
// allocation, repeatable); options left out take def. A "+pN" arm drops the default overlay
// window (the two do not combine).
func ParseArm(spec string, def ArmDefaults) (Arm, error) {
	parts := strings.Split(strings.TrimSpace(spec), "+")
	p, err := kvq.ParsePair(parts[0])
	if err != nil {
		return Arm{}, fmt.Errorf("arm %q: %w", limits.Clip(spec, 64), err)
	}
	a := Arm{Pair: p, Window: def.Window, Sinks: def.Sinks, KGain: def.KGain}
	window := false // the spec names +w
	for _, opt := range parts[1:] {
		if len(opt) < 2 {
			return Arm{}, fmt.Errorf("arm %q: option %q: want +wN, +pN, +sN, +gB or +lN=PAIR", limits.Clip(spec, 64), limits.Clip(opt, 32))
		}
		v := opt[1:]
		switch opt[0] {
		case 'w':
			a.Window, err = strconv.Atoi(v)
			window = true
		case 'p':
			a.Recent, err = strconv.Atoi(v)
		case 's':
			a.Sinks, err = strconv.Atoi(v)
		case 'g':
			var g float64
			g, err = strconv.ParseFloat(v, 32)
			a.KGain = float32(g)
		case 'l':
			var lp LayerPair
			if lp, err = parseLayerPair(v); err == nil {
				if len(a.Layers) >= maxLayerOptions {
					err = fmt.Errorf("more than %d per-layer pairs", maxLayerOptions)
				}
				a.Layers = append(a.Layers, lp)
			}
		default:
			err = fmt.Errorf("unknown option (want +wN, +pN, +sN, +gB or +lN=PAIR)")
		}
		if err != nil {
			return Arm{}, fmt.Errorf("arm %q: option %q: %w", limits.Clip(spec, 64), limits.Clip(opt, 32), err)
		}
	}
	if a.Recent > 0 && !window {
		a.Window = 0
	}
	if a.Recent > 0 && a.Window > 0 {
		return Arm{}, fmt.Errorf("arm %q: +w (f16 copies over the quantized cache) and +p (recent cells only in f16) do not combine", limits.Clip(spec, 64))
	}
	if err := limits.Int("recent window", int64(a.Recent), 0, limits.MaxCtx, ""); err != nil {
		return Arm{}, fmt.Errorf("arm %q: %w", limits.Clip(spec, 64), err)
	}
	// The context bounds window and sinks further (limits.Overlay, where it is known).
	if err := limits.Int("window", int64(a.Window), 0, limits.MaxCtx, ""); err != nil {
		return Arm{}, fmt.Errorf("arm %q: %w", limits.Clip(spec, 64), err)
	}
	if err := limits.Int("sinks", int64(a.Sinks), 0, limits.MaxCtx, ""); err != nil {
		return Arm{}, fmt.Errorf("arm %q: %w", limits.Clip(spec, 64), err)
	}
	if a.KGain != 0 {
		if err := limits.Float("K gain", float64(a.KGain), 1e-3, limits.MaxKGain, ""); err != nil {
			return Arm{}, fmt.Errorf("arm %q: %w", limits.Clip(spec, 64), err)
		}
	}
	return a, nil
}

// maxLayerOptions bounds the "+l" options of one arm, maxArmLayer the layers they name.
const maxLayerOptions, maxArmLayer = 64, 1 << 12

// ParseArms reads a comma-separated list of arm specs.
func ParseArms(list string, def ArmDefaults) ([]Arm, error) {
	var out []Arm
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		a, err := ParseArm(s, def)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no arms in %q", list)
	}
	return out, nil
}

// DefaultArms is the arm list `kvlab ab` measures when none is given.
const DefaultArms = "f16,q8_0,q8_0/q4_0,q4_0,q4_0-r,q2k,tq4,turbo4,turbo3"
