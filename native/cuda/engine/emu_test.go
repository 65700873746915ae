//go:build cudaemu

package engine

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/kvlab/kvlab/kernels/emu"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/cuda/internal/cu"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/lab"
)

// The cudaemu tests run the real binding (purego, the executor, NVRTC, module loading,
// launches) and the real kernels against the CPU emulator of kernels/emu: they need g++,
// take minutes, and check the kernels' semantics, not their speed.
//
//	go test -tags cudaemu -run Emu -v ./native/cuda/engine/

// TestMain runs the emulator tests against the CPU's float attention kernels: where the CPU has
// AVX-512 VNNI its integer attention kernels round the query and the value weights
// (kvq.ScoresGrid, kvq.AccumulateStep), a computation the device's float kernels do not share,
// so the test binary re-runs itself with KVLAB_NO_AVX512=1 (read once, at start) when it is
// not set.
func TestMain(m *testing.M) {
	if os.Getenv("KVLAB_NO_AVX512") == "" {
		if exe, err := os.Executable(); err == nil {
			os.Setenv("KVLAB_NO_AVX512", "1")
			err = syscall.Exec(exe, os.Args, os.Environ())
			panic("engine: re-running the test binary with KVLAB_NO_AVX512=1: " + err.Error())
		}
	}
	os.Exit(m.Run())
}

var (
	emuOnce sync.Once
	emuEng  *Engine
	emuErr  error
)

func emuEngine(t *testing.T) *Engine {
	t.Helper()
	emuOnce.Do(func() {
		dir := os.Getenv("KVLAB_EMU_DIR")
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "kvlab-emu-test")
		}
		os.MkdirAll(dir, 0o755)
		lib, err := emu.Build(dir)
		if err != nil {
			emuErr = err
			return
		}
		os.Setenv(cu.DriverEnv, lib)
		os.Setenv(cu.NVRTCEnv, lib)
		os.Setenv(cuda.CacheEnv, filepath.Join(dir, "cache"))
		emuEng, emuErr = Open(0)
	})
	if emuErr != nil {
		t.Fatal(emuErr)
	}
	return emuEng
}

func TestEmuGate(t *testing.T) {
	e := emuEngine(t)
	pairs := []string{"f16", "q8_0", "q4_0", "q8_0/q4_0", "q5_1/q4_0", "fp8", "q2k", "tq4"}
	if s := os.Getenv("KVLAB_EMU_PAIRS"); s != "" {
		ps, err := kvq.ParsePairs(s)
		if err != nil {
			t.Fatal(err)
		}
		pairs = nil
		for _, p := range ps {
			pairs = append(pairs, p.String())
		}
	}
	for _, name := range pairs {
		p, _ := kvq.ParsePair(name)
		for i, tc := range []lab.DeviceGateCase{
			{Pair: p, HeadDim: 128, Cells: 700, Heads: 10, KVHeads: 2, Prefill: 40, Data: lab.Outlier5, Seed: 7},
			{Pair: p, HeadDim: 64, Cells: 333, Heads: 8, KVHeads: 1, Window: 64, Sinks: 4, Data: lab.Gaussian, Seed: 9},
			{Pair: p, HeadDim: 256, Cells: 1000, Heads: 3, KVHeads: 3, Window: 100, Sinks: 1, Prefill: 33, Data: lab.Outlier75, Seed: 11},
			{Pair: p, HeadDim: 64, Cells: 2000, Heads: 12, KVHeads: 4, Prefill: 70, Data: lab.Outlier75, Seed: 13},
		} {
			t.Run(tc.String(), func(t *testing.T) {
				// Few blocks in the split plan: long splits, several tiles per warp, the
				// cp.async pipeline in use.
				e.splitBlocks = []int{0, 0, 4, 3}[i]
				r, err := lab.RunDeviceGate(gateBackend(e), tc)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%+v", r)
				if !r.OK {
					t.Errorf("gate failed: %+v", r)
				}
			})
		}
	}
}

// TestEmuOps checks the layer kernels against their CPU formulas (native/model's).
func TestEmuOps(t *testing.T) {
	e := emuEngine(t)
	ctx := e.Context()
	up := func(x []float32) *cuda.Buffer {
		b, err := ctx.Alloc(int64(len(x)) * 4)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(cuda.Bytes(x))
		return b
	}
	down := func(b *cuda.Buffer, n int) []float32 {
		x := make([]float32, n)
		b.Read(cuda.Bytes(x))
		return x
	}
	const rows, n = 3, 100
	x := make([]float32, rows*n)
	w := make([]float32, n)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.37)) * 3
	}
	for i := range w {
		w[i] = 1 + float32(i)/n
	}
	xb, wb := up(x), up(w)
	if err := e.Ops().RMSNorm(xb, xb, wb, rows, n, 1e-5); err != nil {
		t.Fatal(err)
	}
	got := down(xb, rows*n)
	for r := 0; r < rows; r++ {
		var ss float64
		for _, v := range x[r*n : (r+1)*n] {
			ss += float64(v) * float64(v)
		}
		s := float32(1 / math.Sqrt(ss/n+1e-5))
		for i := 0; i < n; i++ {
			if want := w[i] * (s * x[r*n+i]); math.Abs(float64(got[r*n+i]-want)) > 1e-6*math.Abs(float64(want))+1e-7 {
				t.Fatalf("rmsnorm row %d [%d] = %g, want %g", r, i, got[r*n+i], want)
			}
		}
	}
	g, u := make([]float32, 300), make([]float32, 300)
	for i := range g {
		g[i], u[i] = float32(i-150)/20, float32(i%7)-3
	}
	gb, ub := up(g), up(u)
	if err := e.Ops().SwiGLU(gb, ub, len(g)); err != nil {
		t.Fatal(err)
	}
	got = down(gb, len(g))
	for i, z := range g {
		want := z * (1 / (1 + float32(math.Exp(float64(-z))))) * u[i]
		if math.Abs(float64(got[i]-want)) > 1e-6*math.Abs(float64(want))+1e-7 {
			t.Fatalf("swiglu[%d] = %g, want %g", i, got[i], want)
		}
	}
	const heads, hd, ntok = 2, 16, 3
	v := make([]float32, ntok*heads*hd)
	for i := range v {
		v[i] = float32(i%11) - 5
	}
	freq := make([]float32, hd/2)
	for j := range freq {
		freq[j] = float32(1 / math.Pow(10000, float64(2*j)/hd))
	}
	for _, tc := range []struct {
		neox   bool
		mscale float32
	}{{false, 1}, {true, 1}, {true, 1.25}} {
		neox, mscale := tc.neox, tc.mscale
		vb, fb := up(v), up(freq)
		if err := e.Ops().RoPE(vb, fb, ntok, 5, heads, hd, hd, neox, 1, mscale); err != nil {
			t.Fatal(err)
		}
		got := down(vb, len(v))
		for tk := 0; tk < ntok; tk++ {
			for h := 0; h < heads; h++ {
				base := (tk*heads + h) * hd
				for j := 0; j < hd/2; j++ {
					s, c := math.Sincos(float64(float32(5+tk) * freq[j]))
					a, b := base+2*j, base+2*j+1
					if neox {
						a, b = base+j, base+j+hd/2
					}
					cs, sn := float32(c)*mscale, float32(s)*mscale
					w0 := v[a]*cs - v[b]*sn
					w1 := v[a]*sn + v[b]*cs
					if math.Abs(float64(got[a]-w0)) > 1e-5 || math.Abs(float64(got[b]-w1)) > 1e-5 {
						t.Fatalf("rope neox=%v token %d head %d pair %d: (%g, %g), want (%g, %g)", neox, tk, h, j, got[a], got[b], w0, w1)
					}
				}
			}
		}
	}
}

// gateBackend is the engine as lab's device gate drives it.
func gateBackend(e *Engine) lab.GateBackend {
	return lab.GateBackendFunc(func(cfg kvcache.Config) (lab.GateCache, error) {
		c, err := e.NewCache(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	})
}
