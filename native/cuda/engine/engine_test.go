package engine

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvlab/kvlab/kernels"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/internal/cu"
	"github.com/kvlab/kvlab/native/cuda/internal/fakecu"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
)

// fakeEngine is an engine over the fake driver and NVRTC: kernels are "compiled" to their
// own source, launches are recorded with their arguments decoded by the C signatures.
func fakeEngine(t *testing.T) (*Engine, *fakecu.Fake) {
	t.Helper()
	f := fakecu.New()
	d := f.Driver()
	d.Init(0)
	ctx, err := cuda.OpenDriver(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := cuda.NewCompilerWith(f.NVRTC(), "libnvrtc-fake.so", "")
	if err != nil {
		t.Fatal(err)
	}
	e := New(ctx, comp)
	t.Cleanup(func() { e.Close(); ctx.Close() })
	return e, f
}

// gpuPairs are the pairs the issue names.
var gpuPairs = []string{"f16", "q8_0", "q4_0", "q8_0/q4_0", "q5_1/q4_0", "fp8", "q2k", "tq4"}

// launchedNames lists every kernel name the engine can launch for the shapes it supports.
func launchedNames() []string {
	names := []string{"kv_combine", "tq4_rotate", "rmsnorm", "rope", "swiglu", "add", "mem_read"}
	for _, f := range Formats() {
		names = append(names, WriteKernel(f))
	}
	for _, t := range WeightTypes {
		names = append(names, EmbedKernel(t), MatVecKernel(t, 1), MatVecKernel(t, prefillTokens))
	}
	for _, k := range Formats() {
		for _, v := range Formats() {
			if v == kvq.Q2K {
				continue
			}
			for _, d := range AttnDims {
				names = append(names, PrefillKernel(k, v, d))
				for g := 1; g <= MaxGroup; g++ {
					names = append(names, DecodeKernel(k, v, d, g))
				}
			}
		}
	}
	return names
}

func TestEveryLaunchedKernelIsInItsSource(t *testing.T) {
	for _, name := range launchedNames() {
		src, _, err := Source(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !strings.Contains(src.Code, `extern "C" __global__ void `+name+`(`) {
			t.Errorf("%s: the source %s does not declare it", name, src.Name)
		}
		ps, ok := kernels.Signatures(src.Code)[name]
		if !ok {
			t.Errorf("%s: no signature", name)
		}
		for _, p := range ps {
			if p.Size == 0 {
				t.Errorf("%s: parameter %q has a type the argument packer does not know", name, p.Decl)
			}
		}
		if strings.Contains(src.Code, `#include "kv_attn.cuh"`) {
			if _, ok := src.Headers["kv_attn.cuh"]; !ok {
				t.Errorf("%s: header kv_attn.cuh not passed", name)
			}
		}
	}
}

func TestInstantiationNames(t *testing.T) {
	for _, bad := range []string{
		"kv_decode_q8_0_q4_0_d128_g0", "kv_decode_q8_0_q4_0_d128_g17", "kv_decode_q8_0_q4_0_d96_g4",
		"kv_decode_q4_0_q2k_d128_g4", "kv_decode_q4_1_q4_0_d128_g4", "kv_prefill_f16_f16_d128_g4", "kv_decode_f16_d128_g4",
	} {
		if _, _, err := Source(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	src, key, err := Source("kv_decode_q8_0_q4_0_d128_g5")
	if err != nil || key != "kv_decode_q8_0_q4_0_d128_g5" || !strings.Contains(src.Code, "decode_body<KV_Q8_0, KV_Q4_0, 128, 5>") {
		t.Errorf("instantiation: %v %q\n%s", err, key, src.Code)
	}
	if _, key, _ := Source("kv_combine"); key != "kv_attn.cu" {
		t.Errorf("kv_combine lives in %q", key)
	}
}

func TestCheckArgs(t *testing.T) {
	ps := kernels.Signatures(`extern "C" __global__ void k(const float* a, int n, float s, unsigned long long m) {}`)["k"]
	ok := []cuda.Arg{cuda.Ptr(nil), cuda.Int(1), cuda.F32(1), cuda.U64(2)}
	if err := checkArgs("k", ps, ok); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]cuda.Arg{
		"too few":       ok[:3],
		"int for ptr":   {cuda.Int(0), cuda.Int(1), cuda.F32(1), cuda.U64(2)},
		"int for float": {cuda.Ptr(nil), cuda.Int(1), cuda.Int(1), cuda.U64(2)},
		"float for int": {cuda.Ptr(nil), cuda.F32(1), cuda.F32(1), cuda.U64(2)},
		"i32 for u64":   {cuda.Ptr(nil), cuda.Int(1), cuda.F32(1), cuda.Int(2)},
	} {
		if err := checkArgs("k", ps, args); !errors.Is(err, cuda.ErrBadLaunch) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestPlanSplits(t *testing.T) {
	for _, tc := range []struct{ n, heads, blocks int }{
		{131072, 8, 396}, {65536, 8, 396}, {131072, 8, 264}, {4096, 1, 396}, {100, 8, 396}, {1, 1, 1}, {1 << 20, 1, 100000}, {700, 2, 4},
	} {
		cps, nb := planSplits(tc.n, tc.heads, tc.blocks)
		if cps%Tile != 0 || cps < minCellsPerSplit || nb*cps < tc.n || (nb-1)*cps >= tc.n || nb > maxSplits {
			t.Errorf("%+v: %d splits of %d cells", tc, nb, cps)
		}
		if nb > 1 && nb*tc.heads > tc.blocks {
			t.Errorf("%+v: %d blocks spill into a second wave of %d", tc, nb*tc.heads, tc.blocks)
		}
	}
	if _, nb := planSplits(0, 8, 396); nb != 0 {
		t.Errorf("0 cells: %d splits", nb)
	}
}

// TestSharedMemoryFits checks every kernel shape against the H200's 227 KiB opt-in limit
// and the warp merge's need.
func TestSharedMemoryFits(t *testing.T) {
	for _, k := range Formats() {
		for _, v := range Formats() {
			if v == kvq.Q2K {
				continue
			}
			for _, d := range AttnDims {
				for g := 1; g <= MaxGroup; g++ {
					b, s := attnShared(k, v, d, g, false)
					stage := tileBytes(k, d) + Tile*v.RowBytes(d)
					if b > 227<<10 {
						t.Errorf("decode %s/%s d%d g%d: %d bytes of shared memory", k, v, d, g, b)
					}
					if b < attnWarps*s*stage || b < attnWarps*g*(d+2)*4 {
						t.Errorf("decode %s/%s d%d g%d: %d bytes hold neither the staging nor the merge", k, v, d, g, b)
					}
				}
				if b, _ := attnShared(k, v, d, prefillRows, true); b > 227<<10 {
					t.Errorf("prefill %s/%s d%d: %d bytes", k, v, d, b)
				}
			}
		}
	}
	// The bench shape: q8_0/q4_0 double-buffers, f16 single-buffers.
	if _, s := attnShared(kvq.Q8_0, kvq.Q4_0, 128, 5, false); s != 2 {
		t.Errorf("q8_0/q4_0 d128: %d stages", s)
	}
}

func TestRotationMatchesKVQ(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{64, 96, 100, 128, 256} {
		for _, layer := range []int{0, 3} {
			c, err := kvq.NewCodec(kvq.TQ4, d, kvq.CodecOptions{Seed: 42, Layer: layer, Head: 5})
			if err != nil {
				t.Fatal(err)
			}
			sc := RotationDiag(d, 42, layer, 5)
			q := make([]float32, d)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			want := make([]float32, d)
			c.PrepareQuery(want, q)
			got := append([]float32(nil), q...)
			rotate(got, sc, false)
			wantT := make([]float32, d)
			c.FinishAccumulate(wantT, q)
			gotT := append([]float32(nil), q...)
			rotate(gotT, sc, true)
			for i := range q {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(gotT[i]) != math.Float32bits(wantT[i]) {
					t.Fatalf("d %d layer %d: element %d: R·q %g want %g, Rᵀ·q %g want %g", d, layer, i, got[i], want[i], gotT[i], wantT[i])
				}
			}
		}
	}
}

func TestTiledLayout(t *testing.T) {
	for _, f := range []kvq.Format{kvq.F16, kvq.Q8_0, kvq.Q4_0, kvq.Q5_1, kvq.FP8, kvq.TQ4} {
		for _, d := range []int{64, 128, 256, 40} {
			rb := f.RowBytes(d)
			if d%64 == 0 && unit(rb) < 4 {
				t.Errorf("%s d%d: unit %d < 4", f, d, unit(rb))
			}
			capCells := 96
			seen := make([]bool, capCells*rb)
			for c := 0; c < capCells; c++ {
				for k := 0; k < rb; k++ {
					o := tiledOffset(0, c, k, rb)
					if o < 0 || o >= int64(len(seen)) || seen[o] {
						t.Fatalf("%s d%d: cell %d byte %d → %d: not a bijection", f, d, c, k, o)
					}
					seen[o] = true
				}
			}
			rows := make([]byte, 70*rb)
			for i := range rows {
				rows[i] = byte(i*31 + 7)
			}
			if got := Detile(Tiled(rows, 70, rb, capCells), 0, 70, rb); string(got) != string(rows) {
				t.Errorf("%s d%d: Detile(Tiled(rows)) differs", f, d)
			}
		}
	}
}

// TestLaunchGeometry runs write, decode (with an overlay), prefill and the layer ops for every
// pair on the fake driver, which checks every argument list against its C signature (via
// checkArgs) and records the launches.
func TestLaunchGeometry(t *testing.T) {
	e, f := fakeEngine(t)
	const d, hn, heads, cells = 128, 8, 40, 5000
	for _, name := range gpuPairs {
		p, _ := kvq.ParsePair(name)
		t.Run(name, func(t *testing.T) {
			f.Launches = nil
			c, err := e.NewCache(kvcache.Config{Layers: 2, KVHeads: hn, HeadDimK: d, HeadDimV: d, Pair: p, MaxCells: cells, Window: 256, Sinks: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Free()
			k := make([]float32, 100*hn*d)
			if err := c.Write(1, k, k, 100); err != nil {
				t.Fatal(err)
			}
			if err := c.Write(1, k[:37*hn*d], k[:37*hn*d], 37); err != nil {
				t.Fatal(err)
			}
			q, _ := e.ctx.Alloc(heads * d * 4 * 64)
			out, _ := e.ctx.Alloc(heads * d * 4 * 64)
			if err := c.Decode(1, q, out, heads, 0.088); err != nil {
				t.Fatal(err)
			}
			if err := c.Prefill(1, q, out, 64, 137-64, 0, heads, 0.088); err != nil {
				t.Fatal(err)
			}
			// Writes: one row-writer launch per pool per Write, q2k one per group touched.
			wk := f.LaunchesOf(WriteKernel(p.K))
			if p.K == kvq.Q2K {
				if len(wk) != 4+1+1 { // 100 cells: groups 0..3 (32+32+32+4); 37 more: 28 to group 3, 9 to group 4
					t.Errorf("q2k write launches %d, want 6", len(wk))
				}
				for _, l := range wk {
					if l.Grid != [3]uint32{hn, 1, 1} || l.Block != [3]uint32{256, 1, 1} || l.Shared != 4*d {
						t.Errorf("q2k write geometry %v %v %d", l.Grid, l.Block, l.Shared)
					}
				}
			} else {
				want := 2 // two writes to the K pool
				if p.V == p.K {
					want += 2
				}
				if p.K == kvq.F16 {
					want += 6 // overlay K and V copies: runs of slots 0–7 and 16–107, then 108–144
				}
				if len(wk) != want || wk[0].Grid != [3]uint32{100, hn, 1} || wk[0].Block != [3]uint32{32, 1, 1} {
					t.Errorf("%s write launches %d (want %d), first %v %v", p.K, len(wk), want, wk[0].Grid, wk[0].Block)
				}
			}
			// Decode: the bulk split plan, the overlay split, the combine.
			g := heads / hn
			dec := f.LaunchesOf(DecodeKernel(p.K, p.V, d, g))
			if p.K == kvq.F16 && p.V == kvq.F16 {
				if len(dec) != 2 {
					t.Fatalf("f16 decode launches %d, want bulk + overlay", len(dec))
				}
			} else if len(dec) != 1 {
				t.Fatalf("decode launches %d, want 1", len(dec))
			}
			bulk := dec[0]
			shared, _ := attnShared(p.K, p.V, d, g, false)
			perSM := occupancyFake(shared)
			cps, nb := planSplits(137, hn, perSM*132)
			if bulk.Grid != [3]uint32{uint32(nb), hn, 1} || bulk.Block != [3]uint32{128, 1, 1} || bulk.Shared != uint32(shared) {
				t.Errorf("bulk decode geometry %v %v %d, want (%d, %d) 128 %d", bulk.Grid, bulk.Block, bulk.Shared, nb, hn, shared)
			}
			// Arguments: n, limit, cap, cps, nsplit, split0, mode.
			if a := bulk.Args[8:15]; a[0] != 137 || a[1] != 137 || a[2] != 5024 || a[3] != uint64(cps) || a[4] != uint64(nb+2) || a[5] != 0 || a[6] != 0 {
				t.Errorf("bulk decode args %v", a)
			}
			if math.Abs(float64(bulk.F32(15))-0.088*math.Log2E) > 1e-6 {
				t.Errorf("qscale %g", bulk.F32(15))
			}
			ov := f.LaunchesOf(DecodeKernel(kvq.F16, kvq.F16, d, g))
			last := ov[len(ov)-1]
			if last.Grid != [3]uint32{2, hn, 1} || last.Args[9] != 264 || last.Args[10] != 288 || last.Args[13] != uint64(nb) || last.Args[14] != 1 {
				t.Errorf("overlay decode grid %v args %v", last.Grid, last.Args[8:15])
			}
			comb := f.LaunchesOf("kv_combine")
			if len(comb) != 1 || comb[0].Grid != [3]uint32{heads, 1, 1} || comb[0].Shared != uint32(4*(nb+2)) || comb[0].Args[3] != uint64(nb+2) {
				t.Errorf("combine %+v", comb)
			}
			rot := f.LaunchesOf("tq4_rotate")
			wantRot := 0
			if p.K == kvq.TQ4 {
				wantRot += 2 // decode q, prefill q
			}
			if p.V == kvq.TQ4 {
				wantRot += 2 // decode partials, prefill out
			}
			if len(rot) != wantRot {
				t.Errorf("tq4_rotate launches %d, want %d", len(rot), wantRot)
			}
			pre := f.LaunchesOf(PrefillKernel(p.K, p.V, d))
			pshared, _ := attnShared(p.K, p.V, d, prefillRows, true)
			if len(pre) != 1 || pre[0].Grid != [3]uint32{(64*5 + 31) / 32, hn, 1} || pre[0].Shared != uint32(pshared) {
				t.Errorf("prefill %+v", pre)
			}
		})
	}
	if err := e.Ops().SwiGLU(mustAlloc(t, e, 4096), mustAlloc(t, e, 4096), 1000); err != nil {
		t.Error(err)
	}
	if l := f.LaunchesOf("swiglu"); len(l) != 1 || l[0].Grid != [3]uint32{4, 1, 1} {
		t.Errorf("swiglu %+v", l)
	}
	x := mustAlloc(t, e, 40*128*4)
	for _, err := range []error{
		e.Ops().RMSNorm(x, x, x, 4, 128, 1e-5), e.Ops().Add(x, x, 100), e.Ops().RoPE(x, x, 2, 7, 20, 128, 128, true, 1, 1),
	} {
		if err != nil {
			t.Error(err)
		}
	}
}

// occupancyFake is the fake driver's occupancy rule.
func occupancyFake(shared int) int {
	return max(1, min(2048/128, (228<<10)/(shared+1024), 32))
}

func mustAlloc(t *testing.T, e *Engine, n int64) *cuda.Buffer {
	b, err := e.ctx.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCacheRejects(t *testing.T) {
	e, _ := fakeEngine(t)
	base := kvcache.Config{Layers: 1, KVHeads: 2, HeadDimK: 128, HeadDimV: 128, Pair: kvq.Pair{K: kvq.Q8_0, V: kvq.Q4_0}, MaxCells: 64}
	for name, mod := range map[string]func(c *kvcache.Config){
		"q4_1":          func(c *kvcache.Config) { c.Pair = kvq.Pair{K: kvq.Q4_1, V: kvq.Q4_1} },
		"head dim 96":   func(c *kvcache.Config) { c.HeadDimK, c.HeadDimV = 96, 96 },
		"dk != dv":      func(c *kvcache.Config) { c.HeadDimV = 64 },
		"zero cells":    func(c *kvcache.Config) { c.MaxCells = 0 },
		"negative gain": func(c *kvcache.Config) { c.KGain = -1 },
	} {
		cfg := base
		mod(&cfg)
		if _, err := e.NewCache(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c, err := e.NewCache(base)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	k := make([]float32, 65*2*128)
	if err := c.Write(0, k, k, 65); !errors.Is(err, kvcache.ErrKVFull) {
		t.Errorf("past capacity: %v", err)
	}
	q, _ := e.ctx.Alloc(3 * 128 * 4)
	if err := c.Decode(0, q, q, 3, 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("3 heads on 2 KV heads: %v", err)
	}
	if err := c.Decode(0, q, q, 2*17, 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("17 per group: %v", err)
	}
	if err := c.Prefill(0, q, q, 1, 0, 0, 2, 1); err == nil {
		t.Error("prefill over unwritten cells accepted")
	}
}

// TestBenchOnFake runs the bandwidth and decode measurements against the fake clock.
func TestBenchOnFake(t *testing.T) {
	e, f := fakeEngine(t)
	bw, err := e.CopyBandwidth(64<<20, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(fakecu.CopyBytesPerNano) * 1e9; math.Abs(bw-want)/want > 0.01 {
		t.Errorf("copy bandwidth %g, want %g", bw, want)
	}
	f.KernelNanos = func(l fakecu.Launch) int64 {
		if strings.HasPrefix(l.Name, "kv_decode") {
			return 100_000
		}
		return 1000
	}
	b, err := e.BenchDecode(kvcache.Config{KVHeads: 8, HeadDimK: 128, HeadDimV: 128, Pair: kvq.Pair{K: kvq.Q8_0, V: kvq.Q4_0}}, 9000, 40, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := kvq.Pair{K: kvq.Q8_0, V: kvq.Q4_0}.Bytes(9000, 128, 128, 8)
	if math.Abs(float64(b.Time.Nanoseconds())-101_000) > 2 || b.KVBytes != want {
		t.Errorf("bench %+v", b)
	}
	if _, err := e.ReadBandwidth(1<<20, 2); err != nil {
		t.Error(err)
	}
}

func TestOpenWithoutDriver(t *testing.T) {
	t.Setenv(cu.DriverEnv, "/nonexistent/libcuda.so.1")
	_, err := Open(0)
	if err == nil {
		t.Skip("a CUDA driver is present")
	}
	if !errors.Is(err, cuda.ErrNoCUDA) || !strings.HasPrefix(err.Error(), "no CUDA driver found: ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Open without a driver: %q", err)
	}
}
