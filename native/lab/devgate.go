package lab

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/kvlab/kvlab/native/attn"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// DeviceAttnBound is the largest relative RMS difference between a backend's attention output
// and the CPU reference over the same stored cache that the device gate accepts. Both compute the same
// formula on the same stored values; they differ in float32 summation order and in the
// GPU's exp2f (≤ 2 ulp), about 1e-6 relative.
const DeviceAttnBound = 1e-4

// GateBackend is a compute backend as the device gate drives it: it holds a cache of kvcache's
// configuration in its own memory, and runs decode and prefill attention over it.
type GateBackend interface {
	NewGateCache(cfg kvcache.Config) (GateCache, error)
}

// GateCache is a backend's KV cache as the device gate drives it (native/cuda/engine's Cache
// has these methods). DecodeHost and PrefillHost take host queries, heads × head dim per
// position, and return the attention outputs in the same layout.
type GateCache interface {
	Write(layer int, k, v []float32, n int) error
	Commit(n int) error
	DecodeHost(layer int, q []float32, heads int, scale float32) ([]float32, error)
	PrefillHost(layer int, q []float32, nq, p0, window, heads int, scale float32) ([]float32, error)
	Free()
}

// StoredRows is implemented by a GateCache whose stored bytes the gate compares with
// native/kvq's encoders: one head's rows of one layer, cell-major, as kvq encodes them.
type StoredRows interface {
	Rows(layer, head int, isK bool) ([]byte, error)
}

// GateBackendFunc adapts a constructor to GateBackend.
type GateBackendFunc func(cfg kvcache.Config) (GateCache, error)

// NewGateCache calls f.
func (f GateBackendFunc) NewGateCache(cfg kvcache.Config) (GateCache, error) { return f(cfg) }

// DeviceGateCase is one cache the device gate checks: a format pair at one shape, with
// synthetic K/V drawn from a distribution of the gate (Gaussian, Outlier5, Outlier75).
type DeviceGateCase struct {
	Pair           kvq.Pair
	HeadDim        int
	Cells          int
	Heads, KVHeads int
	Window, Sinks  int // the FP16 overlay (0, 0: none)
	Prefill        int // query positions of the prefill check (0: skip)
	Data           GateData
	Seed           uint64
}

// DeviceGateResult is the device gate's verdict on one case.
type DeviceGateResult struct {
	Pair    string   `json:"pair"`
	Data    GateData `json:"data"`
	HeadDim int      `json:"head_dim"`
	Cells   int      `json:"cells"`
	Window  int      `json:"window"`
	Sinks   int      `json:"sinks"`
	// KBytesDiff and VBytesDiff count the stored bytes that differ from native/kvq's
	// encoders on the same input (0: bit-exact; 0 too when the cache is not StoredRows).
	KBytesDiff int `json:"k_bytes_diff"`
	VBytesDiff int `json:"v_bytes_diff"`
	// Decode is ‖o_gpu − o_ref‖/‖o_ref‖ for one decode step, o_ref being attn.DecodeReference
	// over the CPU cache (kvcache) holding the same bytes, overlay included.
	Decode float64 `json:"decode_vs_cpu"`
	// Prefill is the same for the prefill of the last Prefill positions (−1: not run).
	Prefill float64 `json:"prefill_vs_cpu"`
	// VsF32 is the format's own cost: the CPU reference over the stored cache against the
	// exact f32 cache (the seed-003 gate's number), for context.
	VsF32 float64 `json:"err_vs_f32"`
	OK    bool    `json:"ok"`
}

// deviceGateData draws cells × kvHeads rows of K and V with per-channel outliers as lab's gate does
// (channel RMS around 1, a few channels up to the dataset's spread, K with a per-channel
// bias), and queries scaled so the scaled scores have a standard deviation near 2.5.
func deviceGateData(gc DeviceGateCase, rows int) (k, v, q []float32) {
	r := rand.New(rand.NewPCG(gc.Seed, uint64(gc.HeadDim)*31+uint64(gc.Cells)))
	d, hn := gc.HeadDim, gc.KVHeads
	ks, vs := 1.0, 1.0
	switch gc.Data {
	case Outlier5:
		ks, vs = 5, 8
	case Outlier75:
		ks, vs = 75, 14
	}
	rms := func(spread float64) []float64 {
		s := make([]float64, d)
		for c := range s {
			s[c] = 0.7 + 0.6*r.Float64()
		}
		if spread > 1 {
			nOut := max(d/32, 2)
			for i := 0; i < nOut; i++ {
				s[r.IntN(d)] = math.Pow(spread, float64(i+1)/float64(nOut))
			}
		}
		return s
	}
	kr, vr := rms(ks), rms(vs)
	bias := make([]float64, d)
	for c := range bias {
		bias[c] = 0.3 * kr[c] * r.NormFloat64()
	}
	k = make([]float32, gc.Cells*hn*d)
	v = make([]float32, gc.Cells*hn*d)
	for i := 0; i < gc.Cells*hn; i++ {
		for c := 0; c < d; c++ {
			k[i*d+c] = float32(bias[c] + kr[c]*r.NormFloat64())
			v[i*d+c] = float32(vr[c] * r.NormFloat64())
		}
	}
	// Query scale: the scores' spread over K, estimated from the channel statistics.
	var varK float64
	for c := 0; c < d; c++ {
		varK += kr[c] * kr[c]
	}
	qs := 2.5 * math.Sqrt(float64(d)) / math.Sqrt(varK)
	q = make([]float32, rows*d)
	for i := range q {
		q[i] = float32(qs * r.NormFloat64())
	}
	return k, v, q
}

// RunDeviceGate stores the case's cache in the backend and in native/kvcache, compares the
// stored bytes head by head (when the backend's cache is StoredRows), and compares one decode
// step (and a prefill) with the CPU reference.
func RunDeviceGate(b GateBackend, gc DeviceGateCase) (DeviceGateResult, error) {
	res := DeviceGateResult{Pair: gc.Pair.String(), Data: gc.Data, HeadDim: gc.HeadDim, Cells: gc.Cells,
		Window: gc.Window, Sinks: gc.Sinks, Prefill: -1}
	d, hn, heads := gc.HeadDim, gc.KVHeads, gc.Heads
	cfg := kvcache.Config{Layers: 1, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: gc.Pair, MaxCells: gc.Cells,
		Window: gc.Window, Sinks: gc.Sinks, KGain: 1, Seed: gc.Seed}
	k, v, q := deviceGateData(gc, heads*(1+gc.Prefill))
	qd, qp := q[:heads*d], q[heads*d:]
	gpu, err := b.NewGateCache(cfg)
	if err != nil {
		return res, err
	}
	defer gpu.Free()
	// A backend may store another variant of the pair (the CUDA cache stores rotated halves
	// unrotated): the CPU reference holds what the backend holds.
	if c, ok := gpu.(interface{ Config() kvcache.Config }); ok {
		cfg.Pair = c.Config().Pair
	}
	cpu, err := kvcache.New(cfg)
	if err != nil {
		return res, err
	}
	// Irregular chunks exercise partial q2k groups, tile boundaries and the overlay ring.
	row := hn * d
	for pos, step := 0, 1; pos < gc.Cells; step = step*3 + 1 {
		n := min(step%509+1, gc.Cells-pos)
		kc, vc := k[pos*row:(pos+n)*row], v[pos*row:(pos+n)*row]
		if err := cpu.Write(0, kc, vc, n); err != nil {
			return res, err
		}
		if err := gpu.Write(0, kc, vc, n); err != nil {
			return res, err
		}
		if err := cpu.Commit(n); err != nil {
			return res, err
		}
		if err := gpu.Commit(n); err != nil {
			return res, err
		}
		pos += n
	}
	stored, _ := gpu.(StoredRows)
	for h := 0; h < hn && stored != nil; h++ {
		for _, isK := range []bool{true, false} {
			f := cfg.Pair.V
			if isK {
				f = cfg.Pair.K
			}
			want, err := kvqBytes(f, d, gc.Seed, h, cfg.KGain, k, v, isK, gc.Cells, hn)
			if err != nil {
				return res, err
			}
			got, err := stored.Rows(0, h, isK)
			if err != nil {
				return res, err
			}
			diff := bytesDiff(got, want)
			if isK {
				res.KBytesDiff += diff
			} else {
				res.VBytesDiff += diff
			}
		}
	}
	scale := float32(1 / math.Sqrt(float64(d)))
	shape := attn.Shape{Heads: heads, KVHeads: hn, HeadDimK: d, HeadDimV: d, Scale: scale}
	kr, vr := cpu.Rows(0, true)
	ref := make([]float32, heads*d)
	if err := attn.DecodeReference(ref, qd, shape, kr, vr, 0, gc.Cells); err != nil {
		return res, err
	}
	out, err := gpu.DecodeHost(0, qd, heads, scale)
	if err != nil {
		return res, err
	}
	res.Decode = RelRMS(out, ref)
	exact := make([]float32, heads*d)
	fk, fv := f32Heads(k, hn, d), f32Heads(v, hn, d)
	if err := attn.DecodeReference(exact, qd, shape, fk, fv, 0, gc.Cells); err != nil {
		return res, err
	}
	res.VsF32 = RelRMS(ref, exact)
	if gc.Prefill > 0 {
		p0 := gc.Cells - gc.Prefill
		pout, err := gpu.PrefillHost(0, qp, gc.Prefill, p0, 0, heads, scale)
		if err != nil {
			return res, err
		}
		kb, vb := cpu.Rows(0, false)
		pref := make([]float32, len(qp))
		errs := make([]error, gc.Prefill)
		var wg sync.WaitGroup
		next := make(chan int, gc.Prefill)
		for i := 0; i < gc.Prefill; i++ {
			next <- i
		}
		close(next)
		for w := 0; w < min(runtime.GOMAXPROCS(0), gc.Prefill); w++ {
			wg.Go(func() {
				for i := range next {
					errs[i] = attn.DecodeReference(pref[i*heads*d:(i+1)*heads*d], qp[i*heads*d:(i+1)*heads*d], shape, kb, vb, 0, p0+i+1)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return res, err
		}
		res.Prefill = RelRMS(pout, pref)
	}
	res.OK = res.KBytesDiff == 0 && res.VBytesDiff == 0 && res.Decode <= DeviceAttnBound && res.Prefill <= DeviceAttnBound &&
		!math.IsNaN(res.Decode) && !math.IsNaN(res.Prefill)
	return res, nil
}

// kvqBytes encodes one head's rows with native/kvq, as kvcache stores them.
func kvqBytes(f kvq.Format, d int, seed uint64, head int, gain float32, k, v []float32, isK bool, cells, hn int) ([]byte, error) {
	src := v
	if isK {
		src = k
	}
	rowsOf := func(c int) []float32 { return src[(c*hn+head)*d : (c*hn+head+1)*d] }
	if f == kvq.Q2K {
		h, err := kvq.NewQ2KHead(d, gain)
		if err != nil {
			return nil, err
		}
		for c := 0; c < cells; c++ {
			h.Append(rowsOf(c))
		}
		return append([]byte(nil), h.Groups()...), nil
	}
	codec, err := kvq.NewCodec(f, d, kvq.CodecOptions{Seed: seed, Layer: 0, Head: head})
	if err != nil {
		return nil, err
	}
	rb := codec.RowBytes()
	out := make([]byte, cells*rb)
	for c := 0; c < cells; c++ {
		codec.Encode(out[c*rb:(c+1)*rb], rowsOf(c))
	}
	return out, nil
}

func bytesDiff(a, b []byte) int {
	n := 0
	if len(a) != len(b) {
		n = max(len(a), len(b)) - min(len(a), len(b))
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// f32Heads returns exact per-head readers over cell-major data.
func f32Heads(x []float32, hn, d int) []attn.Rows {
	out := make([]attn.Rows, hn)
	for h := range out {
		out[h] = headRows{x: x, hn: hn, d: d, h: h}
	}
	return out
}

type headRows struct {
	x        []float32
	hn, d, h int
}

func (r headRows) Len() int { return len(r.x) / (r.hn * r.d) }
func (r headRows) Row(dst []float32, i int) {
	copy(dst, r.x[(i*r.hn+r.h)*r.d:(i*r.hn+r.h+1)*r.d])
}

// String is one line describing the case, for errors and progress.
func (gc DeviceGateCase) String() string {
	return fmt.Sprintf("%s d%d %s %d cells, %d/%d heads, window %d sinks %d", gc.Pair, gc.HeadDim, gc.Data, gc.Cells, gc.Heads, gc.KVHeads, gc.Window, gc.Sinks)
}

// CPUGate is the CPU backend for the device gate: native/kvcache's cache read through
// native/attn's fast decode and prefill paths, against the reference over the same cache.
var CPUGate GateBackend = GateBackendFunc(func(cfg kvcache.Config) (GateCache, error) {
	c, err := kvcache.New(cfg)
	if err != nil {
		return nil, err
	}
	return cpuGateCache{c}, nil
})

type cpuGateCache struct{ *kvcache.Cache }

func (c cpuGateCache) shape(heads int, scale float32) attn.Shape {
	cfg := c.Config()
	return attn.Shape{Heads: heads, KVHeads: cfg.KVHeads, HeadDimK: cfg.HeadDimK, HeadDimV: cfg.HeadDimV, Scale: scale}
}

func (c cpuGateCache) DecodeHost(layer int, q []float32, heads int, scale float32) ([]float32, error) {
	out := make([]float32, heads*c.Config().HeadDimV)
	err := attn.Decode(out, q, c.shape(heads, scale), c.Keys(layer, true), c.Values(layer, true), 0, c.Len())
	return out, err
}

func (c cpuGateCache) PrefillHost(layer int, q []float32, nq, p0, window, heads int, scale float32) ([]float32, error) {
	out := make([]float32, nq*heads*c.Config().HeadDimV)
	err := attn.Prefill(out, q, nq, p0, window, c.shape(heads, scale), c.Keys(layer, false), c.Values(layer, false))
	return out, err
}

func (cpuGateCache) Free() {}
