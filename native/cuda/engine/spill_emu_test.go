//go:build cudaemu

package engine

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/internal/fixtures"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/sample"
	"github.com/kvlab/kvlab/native/tokenizer"
)

// SpillBound is the largest relative difference (max |a−b| / max |b| over a head's output)
// the spill tests accept between a decode over a host-spill tail and the all-device decode
// of the same stored bytes: both merge exact partial softmaxes, split at other cells, so
// they differ only in float32 summation order (measured ~1e-7).
const SpillBound = 1e-5

// spillData is n cells of K and V for cfg: Gaussian values with a few large K channels.
func spillData(cfg kvcache.Config, n int, seed uint64) (k, v []float32) {
	r := rand.New(rand.NewPCG(seed, 7))
	w := cfg.KVHeads * cfg.HeadDimK
	k, v = make([]float32, n*w), make([]float32, n*w)
	for i := range k {
		k[i] = float32(r.NormFloat64())
		if i%cfg.HeadDimK == 3 {
			k[i] *= 6
		}
		v[i] = float32(r.NormFloat64())
	}
	return k, v
}

func maxRel(got, want []float32) float64 {
	var d, m float64
	for i := range want {
		d = max(d, math.Abs(float64(got[i])-float64(want[i])))
		m = max(m, math.Abs(float64(want[i])))
	}
	return d / m
}

// TestEmuSpillMatchesDevice writes the same cells into an all-device cache and a cache with
// a host-spill tail (32 device cells, chunks of 64: several host chunks and a partial newest
// one), in one prompt write and then cell by cell across a chunk boundary, and checks that
// the two store the same bytes and that decode and prefill agree within SpillBound.
func TestEmuSpillMatchesDevice(t *testing.T) {
	e := emuEngine(t)
	e.splitBlocks = 0
	for _, name := range []string{"f16", "q8_0/q4_0", "q4_0", "q2k", "tq4"} {
		t.Run(strings.ReplaceAll(name, "/", "-"), func(t *testing.T) {
			p, _ := kvq.ParsePair(name)
			cfg := kvcache.Config{Layers: 2, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Pair: p, MaxCells: 400, Seed: 5}
			all, err := e.NewCache(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer all.Free()
			sp, err := e.NewSpillCache(cfg, SpillOptions{Resident: 20, Chunk: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Free()
			if o, ok := sp.Spill(); !ok || o.Resident != 32 || o.Chunk != 64 {
				t.Fatalf("spill options %+v %v, want 32 resident cells in chunks of 64", o, ok)
			}
			const prompt, steps = 230, 70 // 230 = 32 + 3·64 + 6: the fourth chunk fills and moves to the host during the steps
			write := func(k, v []float32, n int) {
				for l := 0; l < cfg.Layers; l++ {
					w := n * cfg.KVHeads * cfg.HeadDimK
					for _, c := range []*Cache{all, sp} {
						if err := c.Write(l, k[l*w:(l+1)*w], v[l*w:(l+1)*w], n); err != nil {
							t.Fatal(err)
						}
					}
				}
				for _, c := range []*Cache{all, sp} {
					if err := c.Commit(n); err != nil {
						t.Fatal(err)
					}
				}
			}
			k, v := spillData(cfg, cfg.Layers*prompt, 1)
			write(k, v, prompt)
			r := rand.New(rand.NewPCG(3, 3))
			const heads = 4
			q := make([]float32, heads*cfg.HeadDimK)
			worst := 0.0
			for s := 0; s < steps; s++ {
				k, v := spillData(cfg, cfg.Layers, uint64(100+s))
				write(k, v, 1)
				if s%13 != 0 && s != steps-1 {
					continue
				}
				for i := range q {
					q[i] = float32(r.NormFloat64())
				}
				for l := 0; l < cfg.Layers; l++ {
					want, err := all.DecodeHost(l, q, heads, 0.125)
					if err != nil {
						t.Fatal(err)
					}
					got, err := sp.DecodeHost(l, q, heads, 0.125)
					if err != nil {
						t.Fatal(err)
					}
					worst = max(worst, maxRel(got, want))
				}
			}
			t.Logf("%s: %d cells, %d in host memory; decode: worst relative difference %.2e", name, sp.Len(), sp.HostCells(), worst)
			if sp.HostCells() != 256 {
				t.Errorf("%d cells in host memory, want 4 chunks of 64", sp.HostCells())
			}
			if !(worst <= SpillBound) {
				t.Errorf("decode over the tail differs from the all-device decode by %.3e (bound %.0e)", worst, SpillBound)
			}
			for l := 0; l < cfg.Layers; l++ {
				for h := 0; h < cfg.KVHeads; h++ {
					for _, isK := range []bool{true, false} {
						a, err := all.Rows(l, h, isK)
						if err != nil {
							t.Fatal(err)
						}
						b, err := sp.Rows(l, h, isK)
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(a, b) {
							t.Fatalf("layer %d head %d K=%v: the spill cache stores other bytes (%d vs %d)", l, h, isK, len(b), len(a))
						}
					}
				}
			}
			// A prefill pass from cell 0 over all 270 cells: positions past the device pools
			// run through the decode path.
			const nq = 270
			pq := make([]float32, nq*heads*cfg.HeadDimK)
			for i := range pq {
				pq[i] = float32(r.NormFloat64())
			}
			want, err := all.PrefillHost(1, pq, nq, 0, 0, heads, 0.125)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sp.PrefillHost(1, pq, nq, 0, 0, heads, 0.125)
			if err != nil {
				t.Fatal(err)
			}
			pw := maxRel(got, want)
			t.Logf("%s: prefill of %d positions: worst relative difference %.2e", name, nq, pw)
			if !(pw <= SpillBound) {
				t.Errorf("prefill over the tail differs by %.3e (bound %.0e)", pw, SpillBound)
			}
		})
	}
}

// TestEmuSpillMergeExact checks the merge in float64 terms on an f16 cache with a tail: every
// split's partial the device wrote (maximum m, sum l and unnormalized output o, base 2) equals
// the float64 partial softmax over that split's stored cells, kv_combine's output equals the
// float64 merge of the device's own partials, and the merged result equals float64 attention
// over every stored cell at once.
func TestEmuSpillMergeExact(t *testing.T) {
	e := emuEngine(t)
	e.splitBlocks = 4
	defer func() { e.splitBlocks = 0 }()
	p, _ := kvq.ParsePair("f16")
	cfg := kvcache.Config{Layers: 1, KVHeads: 1, HeadDimK: 64, HeadDimV: 64, Pair: p, MaxCells: 700}
	sp, err := e.NewSpillCache(cfg, SpillOptions{Resident: 128, Chunk: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Free()
	const n, heads, d = 650, 2, 64
	k, v := spillData(cfg, n, 9)
	if err := sp.Write(0, k, v, n); err != nil {
		t.Fatal(err)
	}
	if err := sp.Commit(n); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	q := make([]float32, heads*d)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	const scale = 0.125
	out, err := sp.DecodeHost(0, q, heads, scale)
	if err != nil {
		t.Fatal(err)
	}
	// The stored (f16-rounded) K and V, and the split plan the decode used.
	kr, _ := sp.Rows(0, 0, true)
	vr, _ := sp.Rows(0, 0, false)
	codec, _ := kvq.NewCodec(kvq.F16, d, kvq.CodecOptions{})
	K, V := make([][]float32, n), make([][]float32, n)
	for c := 0; c < n; c++ {
		K[c], V[c] = make([]float32, d), make([]float32, d)
		codec.Decode(K[c], kr[c*codec.RowBytes():(c+1)*codec.RowBytes()])
		codec.Decode(V[c], vr[c*codec.RowBytes():(c+1)*codec.RowBytes()])
	}
	dev := min(n, sp.cap)
	cps, nb := planSplits(dev, 1, e.splitBlocks)
	nt, tcps := sp.sp.tailSplits(n, 1, e.splitBlocks)
	nsplit := nb + nt
	var ranges [][2]int
	for s := 0; s < nb; s++ {
		ranges = append(ranges, [2]int{s * cps, min((s+1)*cps, dev)})
	}
	for c0 := dev; c0 < n; c0 += sp.sp.chunk {
		end := min(c0+sp.sp.chunk, n)
		for a := c0; a < end; a += tcps {
			ranges = append(ranges, [2]int{a, min(a+tcps, end)})
		}
	}
	if len(ranges) != nsplit || nt == 0 {
		t.Fatalf("%d split ranges for %d splits (%d in the tail)", len(ranges), nsplit, nt)
	}
	po := make([]float32, heads*nsplit*d)
	pml := make([]float32, heads*nsplit*2)
	e.scratch["decode.part_o"].Read(cuda.Bytes(po))
	e.scratch["decode.part_ml"].Read(cuda.Bytes(pml))
	qs := float64(QScale(scale))
	var worstPart, worstComb, worstRef float64
	for h := 0; h < heads; h++ {
		qh := q[h*d : (h+1)*d]
		score := func(c int) float64 {
			var s float64
			for i := 0; i < d; i++ {
				s += float64(float32(float64(qh[i])*qs)) * float64(K[c][i])
			}
			return s
		}
		// Float64 partials of every split, and their merge.
		type part struct {
			m, l float64
			o    []float64
		}
		parts := make([]part, nsplit)
		for s, rg := range ranges {
			pt := part{m: math.Inf(-1), o: make([]float64, d)}
			for c := rg[0]; c < rg[1]; c++ {
				pt.m = max(pt.m, score(c))
			}
			for c := rg[0]; c < rg[1]; c++ {
				w := math.Exp2(score(c) - pt.m)
				pt.l += w
				for i := range pt.o {
					pt.o[i] += w * float64(V[c][i])
				}
			}
			parts[s] = pt
			row := h*nsplit + s
			dm, dl := float64(pml[2*row]), float64(pml[2*row+1])
			// The device's maximum may sit a float32 rounding from float64's; compare the
			// partial at float64's reference point.
			f := math.Exp2(dm - pt.m)
			worstPart = max(worstPart, math.Abs(dl*f-pt.l)/pt.l)
			for i := range pt.o {
				worstPart = max(worstPart, math.Abs(float64(po[row*d+i])*f-pt.o[i])/pt.l)
			}
		}
		merge := func(m, l []float64, o func(s, i int) float64) []float64 {
			mm := math.Inf(-1)
			for _, x := range m {
				mm = max(mm, x)
			}
			var L float64
			res := make([]float64, d)
			for s := range m {
				f := math.Exp2(m[s] - mm)
				L += f * l[s]
				for i := range res {
					res[i] += f * o(s, i)
				}
			}
			for i := range res {
				res[i] /= L
			}
			return res
		}
		dm, dl := make([]float64, nsplit), make([]float64, nsplit)
		for s := range dm {
			dm[s], dl[s] = float64(pml[2*(h*nsplit+s)]), float64(pml[2*(h*nsplit+s)+1])
		}
		comb := merge(dm, dl, func(s, i int) float64 { return float64(po[(h*nsplit+s)*d+i]) })
		// Reference: one softmax over every cell, in float64.
		ref := make([]float64, d)
		m := math.Inf(-1)
		for c := 0; c < n; c++ {
			m = max(m, score(c))
		}
		var L float64
		for c := 0; c < n; c++ {
			w := math.Exp2(score(c) - m)
			L += w
			for i := range ref {
				ref[i] += w * float64(V[c][i])
			}
		}
		pm, pl := make([]float64, nsplit), make([]float64, nsplit)
		for s := range parts {
			pm[s], pl[s] = parts[s].m, parts[s].l
		}
		m64 := merge(pm, pl, func(s, i int) float64 { return parts[s].o[i] })
		for i := range ref {
			ref[i] /= L
			worstComb = max(worstComb, math.Abs(float64(out[h*d+i])-comb[i]))
			worstRef = max(worstRef, math.Abs(float64(out[h*d+i])-ref[i]))
			if math.Abs(m64[i]-ref[i]) > 1e-12 {
				t.Fatalf("head %d [%d]: the float64 merge of float64 partials %.17g ≠ one softmax %.17g", h, i, m64[i], ref[i])
			}
		}
	}
	t.Logf("%d cells (%d on the device, %d in host memory), %d splits (%d over the tail): device partials vs float64 %.2e (relative to l); "+
		"kv_combine vs float64 merge of the device partials %.2e; device output vs float64 attention %.2e",
		n, dev, sp.HostCells(), nsplit, nt, worstPart, worstComb, worstRef)
	if worstPart > 1e-5 || worstComb > 1e-6 || worstRef > 1e-5 {
		t.Errorf("partials %.3e (bound 1e-5), combine %.3e (bound 1e-6), output %.3e (bound 1e-5)", worstPart, worstComb, worstRef)
	}
}

// TestEmuSpillModel runs kvlab-tiny-64 on the emulated device with an all-device f16 cache
// and with a cache of 32 device cells and 32-cell chunks (most of the needle prompt in host
// memory): the greedy tokens must agree and the logits stay within LogitsBound.
//
//	go test -tags cudaemu -run EmuSpillModel -v ./native/cuda/engine/
func TestEmuSpillModel(t *testing.T) {
	e := emuEngine(t)
	e.splitBlocks = 0
	path := fixtures.Path(t, "kvlab-tiny-64.gguf")
	m := loadCPU(t, path, 16)
	dm, err := e.LoadModel(m, ModelOptions{Batch: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	prompt := tok.Encode(needlePrompt, true, false)
	steps := emuSteps(24)
	for _, kv := range []string{"f16", "q8_0/q4_0"} {
		t.Run(strings.ReplaceAll(kv, "/", "-"), func(t *testing.T) {
			pair, _ := kvq.ParsePair(kv)
			cfg := dm.CacheConfig(pair, len(prompt)+steps+1)
			all, err := e.NewCache(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer all.Free()
			sp, err := e.NewSpillCache(cfg, SpillOptions{Resident: 32, Chunk: 32})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Free()
			vocab := m.Hparams.Vocab
			la, ls := make([]float32, vocab), make([]float32, vocab)
			if err := dm.Forward(prompt, all, la); err != nil {
				t.Fatal(err)
			}
			if err := dm.Forward(prompt, sp, ls); err != nil {
				t.Fatal(err)
			}
			worst := relRMS(ls, la)
			stream := tok.NewStream(false)
			var text strings.Builder
			for i := 0; i < steps; i++ {
				a, s := sample.Argmax(la), sample.Argmax(ls)
				if a != s {
					t.Fatalf("greedy token %d: spilled %d, all-device %d", i, s, a)
				}
				text.WriteString(stream.Add(a))
				if err := dm.Forward([]int32{a}, all, la); err != nil {
					t.Fatal(err)
				}
				if err := dm.Forward([]int32{a}, sp, ls); err != nil {
					t.Fatal(err)
				}
				worst = max(worst, relRMS(ls, la))
			}
			t.Logf("%s: %d-token prompt + %d steps, %d cells in host memory at the end: logits relative RMS worst %.2e; text %q",
				kv, len(prompt), steps, sp.HostCells(), worst, text.String())
			if !(worst <= LogitsBound) {
				t.Errorf("relative RMS %.3e exceeds %.0e", worst, LogitsBound)
			}
		})
	}
}
