package calc

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kvlab/kvlab/native/kvq"
)

// SpillParams are the spill model's parameters. Decoding one token reads every active weight
// and every resident KV byte from device memory, and streams the whole host-resident KV tail
// over the host link:
//
//	seconds per token = device bytes / (DeviceGBps·1e9) + tail bytes / (LinkGBps·1e9) + OverheadMs/1e3
//
// A bandwidth of 0 means that term costs nothing (a fit that found no cost for it).
type SpillParams struct {
	// DeviceGBps is the effective device-memory read bandwidth in GB/s.
	DeviceGBps float64 `json:"device_gbps"`
	// LinkGBps is the effective host-link bandwidth in GB/s.
	LinkGBps float64 `json:"link_gbps"`
	// OverheadMs is the fixed cost per decoded token in milliseconds (launches, sampling).
	OverheadMs float64 `json:"overhead_ms"`
}

// DefaultSpillParams are the nominal figures of the hardware with no fixed overhead: an
// optimistic bound, to be replaced by fitted parameters where measurements exist.
func DefaultSpillParams(h Hardware) SpillParams {
	return SpillParams{DeviceGBps: h.MemGBps, LinkGBps: h.LinkGBps}
}

// Validate reports a negative or non-finite parameter.
func (p SpillParams) Validate() error {
	for _, v := range []struct {
		name string
		x    float64
	}{{"device bandwidth", p.DeviceGBps}, {"link bandwidth", p.LinkGBps}, {"overhead", p.OverheadMs}} {
		if v.x < 0 || math.IsNaN(v.x) || math.IsInf(v.x, 0) {
			return fmt.Errorf("%w: spill model %s %g must be a finite number ≥ 0", ErrBadInput, v.name, v.x)
		}
	}
	return nil
}

// TokenSeconds is the model's time to decode one token.
func (p SpillParams) TokenSeconds(deviceBytes, tailBytes int64) float64 {
	t := p.OverheadMs / 1e3
	if p.DeviceGBps > 0 {
		t += float64(deviceBytes) / (p.DeviceGBps * GB)
	}
	if p.LinkGBps > 0 {
		t += float64(tailBytes) / (p.LinkGBps * GB)
	}
	return t
}

// TokensPerSecond is 1 / TokenSeconds, or 0 when the model predicts no time at all.
func (p SpillParams) TokensPerSecond(deviceBytes, tailBytes int64) float64 {
	t := p.TokenSeconds(deviceBytes, tailBytes)
	if t <= 0 {
		return 0
	}
	return 1 / t
}

// SpillPoint is the spill model's state for one sequence at one context length.
type SpillPoint struct {
	// Ctx is the context in tokens.
	Ctx int64 `json:"ctx"`
	// ResidentCells is how many cells of the context stay in device memory.
	ResidentCells int64 `json:"resident_cells"`
	// DeviceBytes is what decoding one token reads from device memory: active weights,
	// resident KV and overlay.
	DeviceBytes int64 `json:"device_bytes"`
	// TailBytes is the KV that lives in host memory and streams over the link every token.
	TailBytes int64 `json:"tail_bytes"`
	// TPS is the predicted decode speed in tokens per second.
	TPS float64 `json:"tps"`
}

// Spill evaluates the model for one sequence of shape s in pair p at ctx tokens on one GPU of a
// tp-way group, when at most residentLimit cells stay on the device (Unbounded: all) and
// activeWeights bytes of weights are read per token on that GPU.
func Spill(s Shape, p kvq.Pair, o Overlay, ctx, residentLimit, activeWeights int64, tp int, params SpillParams) SpillPoint {
	resident := ctx
	if residentLimit != Unbounded && residentLimit < ctx {
		resident = max(residentLimit, 0)
	}
	dev := activeWeights + s.KVBytes(p, resident, tp) + s.OverlayBytes(o, p, tp)
	tail := s.KVBytes(p, ctx, tp) - s.KVBytes(p, resident, tp)
	return SpillPoint{
		Ctx: ctx, ResidentCells: resident, DeviceBytes: dev, TailBytes: tail,
		TPS: params.TokensPerSecond(dev, tail),
	}
}

// Measurement is one measured decode speed, the input of Fit.
type Measurement struct {
	// Pair is the KV format the run used.
	Pair kvq.Pair `json:"-"`
	// Format is Pair written as K/V.
	Format string `json:"format"`
	// Ctx is the context in tokens.
	Ctx int64 `json:"ctx"`
	// ResidentCells is how many cells stayed on the device (0: all of them).
	ResidentCells int64 `json:"resident_cells"`
	// TPS is the measured decode speed in tokens per second.
	TPS float64 `json:"tps"`
	// Excluded, when not empty, says why the point is shown but not fitted.
	Excluded string `json:"excluded,omitempty"`
}

// Calibration is a set of measurements on one model and one machine.
type Calibration struct {
	// Name and Source say what was measured where.
	Name   string `json:"name"`
	Source string `json:"source"`
	// Model and Quant are the model preset and weight quantization of the runs.
	Model string `json:"model"`
	Quant string `json:"quant"`
	// GPU is the hardware preset of the runs.
	GPU string `json:"gpu"`
	// Points are the measurements.
	Points []Measurement `json:"points"`
}

// Seed000Calibration is seed 000 §3a: Qwen2.5-14B-1M Q8_0 on the RTX 6000 Blackwell host (bs2,
// PCIe ~50 GB/s) with the KV budget cut to simulate a 24 GB card, 64-token greedy decode. The
// spilled f16 runs kept 43008 cells resident (the boot log's 8064 MiB). The q4_0 runs are shown
// but not fitted: they ran on the pre-#620 quant decode reader, which seed 000 §3b found
// kernel-bound rather than bandwidth-bound, so their bytes do not explain their speed.
func Seed000Calibration() Calibration {
	f16 := kvq.Pair{K: kvq.F16, V: kvq.F16}
	q4 := kvq.Pair{K: kvq.Q4_0, V: kvq.Q4_0}
	m := func(p kvq.Pair, ctx, resident int64, tps float64) Measurement {
		return Measurement{Pair: p, Format: PairName(p), Ctx: ctx, ResidentCells: resident, TPS: tps}
	}
	kernelBound := "an older quantized decode reader, limited by its kernel rather than by memory bandwidth"
	q4a, q4b := m(q4, 65536, 0, 27.1), m(q4, 131072, 0, 16.2)
	q4a.Excluded, q4b.Excluded = kernelBound, kernelBound
	return Calibration{
		Name:   "Measured spill cliff",
		Source: "Qwen2.5-14B-1M Q8_0 on an RTX PRO 6000 Blackwell with the KV budget cut to a 24 GB card's, 64-token greedy decode",
		Model:  "qwen2.5-14b-1m", Quant: "q8_0", GPU: "rtx-6000-blackwell",
		Points: []Measurement{
			m(f16, 32768, 0, 67.3),
			m(f16, 49152, 43008, 57.6),
			m(f16, 65536, 43008, 0.99),
			m(f16, 98304, 43008, 0.71),
			q4a, q4b,
		},
	}
}

// FitPoint is one measurement with the fitted model's prediction.
type FitPoint struct {
	Measurement
	// DeviceBytes and TailBytes are what the model charges for the run.
	DeviceBytes int64 `json:"device_bytes"`
	TailBytes   int64 `json:"tail_bytes"`
	// PredictedTPS is the fitted model's decode speed.
	PredictedTPS float64 `json:"predicted_tps"`
	// Ratio is predicted / measured tokens per second.
	Ratio float64 `json:"ratio"`
}

// FitResult is the outcome of Fit.
type FitResult struct {
	// Params are the fitted parameters. A bandwidth the fit drove past MaxFitGBps is reported
	// as 0: that term costs nothing in the best fit.
	Params SpillParams `json:"params"`
	// Points are the measurements with predictions, excluded ones included.
	Points []FitPoint `json:"points"`
	// Fitted is the number of points the fit used.
	Fitted int `json:"fitted"`
	// RMSLogErr is the root mean square of ln(predicted/measured) over the fitted points: 0.1
	// means typically within about 10 %.
	RMSLogErr float64 `json:"rms_log_err"`
	// MaxRatio is the largest factor between prediction and measurement over the fitted points
	// (≥ 1, in either direction).
	MaxRatio float64 `json:"max_ratio"`
}

// FitOptions constrain Fit.
type FitOptions struct {
	// DeviceGBps, when positive, holds the device bandwidth at this value (a vendor figure)
	// and fits only the link bandwidth and the overhead.
	DeviceGBps float64
}

// MaxFitGBps is the bandwidth above which a fitted term is reported as costing nothing.
const MaxFitGBps = 1e6

// ErrFit reports measurements that cannot be fitted.
var ErrFit = errors.New("spill fit")

// Fit finds the spill parameters that best explain the measurements of shape s whose weights
// read activeWeights bytes per token on one GPU. It minimizes the sum of squared log ratios of
// predicted to measured time per token, Σ ln²(t̂ᵢ/tᵢ) — least squares on relative error that
// treats a 2× over- and under-prediction alike — over non-negative 1/DeviceGBps, 1/LinkGBps and
// overhead, by Levenberg–Marquardt on their logarithms from a grid of starting points.
func Fit(s Shape, activeWeights int64, pts []Measurement, opt FitOptions) (FitResult, error) {
	if len(pts) == 0 {
		return FitResult{}, fmt.Errorf("%w: no measurements", ErrFit)
	}
	if opt.DeviceGBps < 0 {
		return FitResult{}, fmt.Errorf("%w: fixed device bandwidth %g GB/s is negative", ErrFit, opt.DeviceGBps)
	}
	res := FitResult{Points: make([]FitPoint, len(pts))}
	var obs []fitObs
	for i, m := range pts {
		if !m.Pair.Valid() {
			return FitResult{}, fmt.Errorf("%w: measurement %d: invalid format pair", ErrFit, i+1)
		}
		if !(m.TPS > 0) || math.IsInf(m.TPS, 0) {
			return FitResult{}, fmt.Errorf("%w: measurement %d: decode speed %g tokens/s must be positive", ErrFit, i+1, m.TPS)
		}
		if m.Ctx <= 0 || m.Ctx > MaxContext || m.ResidentCells < 0 || m.ResidentCells > m.Ctx {
			return FitResult{}, fmt.Errorf("%w: measurement %d: context %d tokens with %d resident cells", ErrFit, i+1, m.Ctx, m.ResidentCells)
		}
		limit := Unbounded
		if m.ResidentCells > 0 {
			limit = m.ResidentCells
		}
		sp := Spill(s, m.Pair, Overlay{}, m.Ctx, limit, activeWeights, 1, SpillParams{})
		res.Points[i] = FitPoint{Measurement: m, DeviceBytes: sp.DeviceBytes, TailBytes: sp.TailBytes}
		if m.Excluded == "" {
			obs = append(obs, fitObs{x: [3]float64{float64(sp.DeviceBytes) / GB, float64(sp.TailBytes) / GB, 1}, t: 1 / m.TPS})
		}
	}
	if len(obs) == 0 {
		return FitResult{}, fmt.Errorf("%w: every measurement is excluded", ErrFit)
	}
	// Coefficients in seconds per GB (device, link) and seconds (overhead).
	free := [3]bool{true, true, true}
	var fixed [3]float64
	if opt.DeviceGBps > 0 {
		free[0], fixed[0] = false, 1/opt.DeviceGBps
	}
	best, bestCost := fixed, math.Inf(1)
	grid := [3][]float64{{1e-4, 1e-3, 1e-2}, {1e-3, 1e-2, 1e-1}, {1e-4, 1e-3, 1e-2}}
	for _, a := range pick(grid[0], free[0]) {
		for _, b := range grid[1] {
			for _, c := range grid[2] {
				start := [3]float64{a, b, c}
				if !free[0] {
					start[0] = fixed[0]
				}
				coef, cost := levenbergMarquardt(obs, start, free)
				if cost < bestCost {
					best, bestCost = coef, cost
				}
			}
		}
	}
	gbps := func(c float64) float64 {
		if c <= 0 || 1/c > MaxFitGBps {
			return 0
		}
		return 1 / c
	}
	res.Params = SpillParams{DeviceGBps: gbps(best[0]), LinkGBps: gbps(best[1]), OverheadMs: best[2] * 1e3}
	if opt.DeviceGBps > 0 {
		res.Params.DeviceGBps = opt.DeviceGBps
	}
	res.Fitted = len(obs)
	res.RMSLogErr = math.Sqrt(bestCost / float64(len(obs)))
	res.MaxRatio = 1
	for i := range res.Points {
		p := &res.Points[i]
		p.PredictedTPS = res.Params.TokensPerSecond(p.DeviceBytes, p.TailBytes)
		p.Ratio = p.PredictedTPS / p.TPS
		if p.Excluded == "" {
			res.MaxRatio = max(res.MaxRatio, p.Ratio, 1/p.Ratio)
		}
	}
	return res, nil
}

// fitObs is one fitted measurement: the time model's inputs (device GB, tail GB, 1) and the
// measured seconds per token.
type fitObs struct {
	x [3]float64
	t float64
}

func pick(grid []float64, free bool) []float64 {
	if free {
		return grid
	}
	return grid[:1]
}

// levenbergMarquardt minimizes Σ ln²((coef·xᵢ)/tᵢ) over the logarithms of the free
// coefficients, starting from start; it returns the coefficients and the cost.
func levenbergMarquardt(obs []fitObs, start [3]float64, free [3]bool) ([3]float64, float64) {
	var idx []int
	for j, f := range free {
		if f {
			idx = append(idx, j)
		}
	}
	coef := start
	cost := func(c [3]float64) float64 {
		s := 0.0
		for _, o := range obs {
			d := math.Log((c[0]*o.x[0] + c[1]*o.x[1] + c[2]*o.x[2]) / o.t)
			s += d * d
		}
		return s
	}
	cur := cost(coef)
	lambda := 1e-3
	for iter := 0; iter < 500 && lambda < 1e12; iter++ {
		var a [3][3]float64
		var g [3]float64
		for _, o := range obs {
			p := coef[0]*o.x[0] + coef[1]*o.x[1] + coef[2]*o.x[2]
			r := math.Log(p / o.t)
			for i, j := range idx {
				ji := coef[j] * o.x[j] / p // ∂r/∂ln(coef_j)
				g[i] -= ji * r
				for k, l := range idx {
					a[i][k] += ji * coef[l] * o.x[l] / p
				}
			}
		}
		for i := range idx {
			a[i][i] = a[i][i]*(1+lambda) + 1e-15
		}
		step, ok := solve(a, g, len(idx))
		if !ok {
			break
		}
		next := coef
		for i, j := range idx {
			next[j] = coef[j] * math.Exp(max(min(step[i], 20), -20))
		}
		if c := cost(next); c < cur {
			improvement := cur - c
			coef, cur = next, c
			lambda /= 3
			if improvement < 1e-14 {
				break
			}
		} else {
			lambda *= 4
		}
	}
	return coef, cur
}

// solve solves the n×n system a·x = b (n ≤ 3) by Gaussian elimination with partial pivoting;
// ok is false when the system is singular.
func solve(a [3][3]float64, b [3]float64, n int) (x [3]float64, ok bool) {
	scale := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			scale = max(scale, math.Abs(a[i][j]))
		}
	}
	if scale == 0 || math.IsNaN(scale) || math.IsInf(scale, 0) {
		return x, false
	}
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) <= 1e-14*scale {
			return x, false
		}
		a[c], a[p] = a[p], a[c]
		b[c], b[p] = b[p], b[c]
		for r := c + 1; r < n; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < n; k++ {
				a[r][k] -= f * a[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < n; k++ {
			s -= a[r][k] * x[k]
		}
		x[r] = s / a[r][r]
	}
	return x, true
}

// ParseMeasurements reads measured decode speeds, one per line as
// "format,ctx,resident_cells,tokens_per_s" (resident_cells 0 = all resident; ctx and
// resident_cells accept ParseTokens suffixes). Blank lines, # comments and a header line
// starting with "format" are skipped. Errors name the line.
func ParseMeasurements(text string) ([]Measurement, error) {
	var pts []Measurement
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || (len(pts) == 0 && strings.HasPrefix(strings.ToLower(line), "format")) {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 4 {
			return nil, fmt.Errorf("%w: measurement line %d: want format,ctx,resident_cells,tokens_per_s, got %d fields", ErrFit, i+1, len(f))
		}
		p, err := kvq.ParsePair(f[0])
		if err != nil {
			return nil, fmt.Errorf("%w: measurement line %d: %w", ErrFit, i+1, err)
		}
		ctx, err1 := ParseTokens(f[1])
		res, err2 := ParseTokens(f[2])
		tps, err3 := strconv.ParseFloat(strings.TrimSpace(f[3]), 64)
		if err3 != nil {
			err3 = fmt.Errorf("%q is not a decode speed in tokens/s", strings.TrimSpace(f[3]))
		}
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%w: measurement line %d: %w", ErrFit, i+1, err)
		}
		pts = append(pts, Measurement{Pair: p, Format: PairName(p), Ctx: ctx, ResidentCells: res, TPS: tps})
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%w: no measurements", ErrFit)
	}
	return pts, nil
}
