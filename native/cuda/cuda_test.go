package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvlab/kvlab/native/cuda/internal/cu"
	"github.com/kvlab/kvlab/native/cuda/internal/fakecu"
)

// openFake returns a context over a fresh fake driver that checks the thread discipline.
func openFake(t *testing.T) (*Context, *fakecu.Fake) {
	t.Helper()
	f := fakecu.New()
	if _, ok := fakecu.ThreadID(); ok {
		f.CheckThread = func() int64 { id, _ := fakecu.ThreadID(); return id }
	}
	d := f.Driver()
	if r := d.Init(0); r != cu.Success {
		t.Fatal(r)
	}
	c, err := OpenDriver(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if len(f.Violations) > 0 {
			t.Errorf("driver calls without a current context on the calling thread: %v", f.Violations)
		}
	})
	return c, f
}

func TestErrorMapping(t *testing.T) {
	f := fakecu.New()
	x := describer{f.Driver()}
	for _, tc := range []struct {
		code     cu.Result
		matches  []error
		excludes []error
		text     string
	}{
		{cu.ErrorOutOfMemory, []error{ErrOutOfMemory}, []error{ErrNoCUDA, ErrInvalidValue}, "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory"},
		{cu.ErrorInvalidValue, []error{ErrInvalidValue}, []error{ErrOutOfMemory}, "CUDA_ERROR_INVALID_VALUE: invalid argument"},
		{cu.ErrorNoDevice, []error{ErrNoDevice, ErrNoCUDA}, nil, "no CUDA-capable device is detected"},
		{cu.ErrorInsufficientDrv, []error{ErrNoCUDA}, []error{ErrNoDevice}, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
		{cu.ErrorInvalidImage, []error{ErrInvalidImage}, nil, "device kernel image is invalid"},
		{cu.ErrorInvalidPTX, []error{ErrInvalidImage}, nil, "CUresult 218"},
		{cu.ErrorIllegalAddress, []error{ErrLaunch}, []error{ErrInvalidImage}, "an illegal memory access"},
		{cu.ErrorLaunchFailed, []error{ErrLaunch}, nil, "unspecified launch failure"},
		{cu.ErrorNotFound, []error{ErrNotFound}, nil, "named symbol not found"},
		{cu.Result(12345), nil, []error{ErrNoCUDA, ErrLaunch, ErrOutOfMemory}, "CUresult 12345"},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", x.check("cuMemAlloc_v2", tc.code))
			for _, m := range tc.matches {
				if !errors.Is(err, m) {
					t.Errorf("%v does not match %v", err, m)
				}
			}
			for _, m := range tc.excludes {
				if errors.Is(err, m) {
					t.Errorf("%v matches %v", err, m)
				}
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%q lacks %q", err, tc.text)
			}
			if c, ok := Code(err); !ok || c != tc.code {
				t.Errorf("Code = %v, %v", c, ok)
			}
		})
	}
	if x.check("op", cu.Success) != nil {
		t.Error("Success is an error")
	}
}

// TestNoDriverOneLine runs the real loader: on a machine without libcuda.so.1 (CI) Open must
// fail with ErrNoCUDA in one line that starts "no CUDA driver found: ".
func TestNoDriverOneLine(t *testing.T) {
	t.Setenv(cu.DriverEnv, filepath.Join(t.TempDir(), "libcuda.so.1"))
	loadOnce = sync.Once{}
	defer func() { loadOnce = sync.Once{}; loaded, loadErr = nil, nil }()
	_, err := Open(0)
	if err == nil {
		t.Fatal("Open succeeded without a driver")
	}
	if !errors.Is(err, ErrNoCUDA) {
		t.Errorf("%v does not match ErrNoCUDA", err)
	}
	if !strings.HasPrefix(err.Error(), "no CUDA driver found: ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("message %q: want one line starting %q", err, "no CUDA driver found: ")
	}
	if _, err := Devices(); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("Devices: %v", err)
	}
}

func TestOpenNoDevice(t *testing.T) {
	f := fakecu.New()
	f.Devices = nil
	err := initDriver(f.Driver())
	if !errors.Is(err, ErrNoCUDA) || !errors.Is(err, ErrNoDevice) || !strings.HasPrefix(err.Error(), "no CUDA device found: ") {
		t.Errorf("initDriver with no device: %v", err)
	}
	g := fakecu.New()
	d := g.Driver()
	d.Init(0)
	if _, err := OpenDriver(d, 3); !errors.Is(err, ErrInvalidDevice) {
		t.Errorf("Open(3) of 1 device: %v", err)
	}
	if _, err := OpenDriver(nil, 0); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("OpenDriver(nil): %v", err)
	}
}

func TestDeviceInfo(t *testing.T) {
	c, _ := openFake(t)
	info := c.Info()
	if info.Name != "Fake H200" || info.Arch() != "sm_90" || info.SMs != 132 || info.TotalBytes != 141<<30 {
		t.Errorf("info %+v", info)
	}
	if bw := info.PeakBandwidth(); math.Abs(bw-2*2619e6*6144/8) > 1 {
		t.Errorf("peak bandwidth %g, want 2 × 2619 MHz × 768 bytes", bw)
	}
	free, total, err := c.MemInfo()
	if err != nil || total != 141<<30 || free != total {
		t.Errorf("MemInfo %d %d %v", free, total, err)
	}
}

func TestBufferLifetimes(t *testing.T) {
	c, f := openFake(t)
	b, err := c.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 1000)
	for i := range src {
		src[i] = byte(i * 7)
	}
	if err := b.Write(src); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 100)
	if err := b.ReadAt(got, 900); err != nil || !bytes.Equal(got, src[900:]) {
		t.Fatalf("ReadAt: %v", err)
	}
	calls := f.Calls["cuMemcpyHtoD_v2"]
	for _, tc := range []struct {
		off int64
		n   int
	}{{0, 1001}, {990, 11}, {-1, 1}, {1001, 0}} {
		if err := b.WriteAt(make([]byte, tc.n), tc.off); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("WriteAt(%d bytes at %d): %v, want ErrInvalidValue", tc.n, tc.off, err)
		}
	}
	if f.Calls["cuMemcpyHtoD_v2"] != calls {
		t.Error("an out-of-range write reached the driver")
	}
	b2, _ := c.Alloc(500)
	if err := b2.CopyFrom(b, 100, 0, 500); err != nil {
		t.Fatal(err)
	}
	if err := b2.CopyFrom(b, 600, 0, 500); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("copy past the source: %v", err)
	}
	got = make([]byte, 500)
	b2.Read(got)
	if !bytes.Equal(got, src[100:600]) {
		t.Error("CopyFrom copied the wrong bytes")
	}
	if err := b2.Memset(0xab); err != nil {
		t.Fatal(err)
	}
	b2.Read(got)
	if got[0] != 0xab || got[499] != 0xab {
		t.Error("Memset")
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if err := b.Write(src); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Free: %v", err)
	}
	if n, _, _, _ := c.Live(); n != 1 || f.LiveAllocs() != 1 {
		t.Errorf("live buffers %d (fake %d), want 1", n, f.LiveAllocs())
	}
	if _, err := c.Alloc(0); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("Alloc(0): %v", err)
	}
	if _, err := c.Alloc(1 << 50); !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Errorf("Alloc(1 PiB): %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if f.LiveAllocs() != 0 || f.Retained() != 0 {
		t.Errorf("after Close: %d allocations, primary context retained %d times", f.LiveAllocs(), f.Retained())
	}
	if err := b2.Write(src[:10]); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if _, err := c.Alloc(10); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestConcurrentUseStaysOnTheContextThread(t *testing.T) {
	c, f := openFake(t)
	if f.CheckThread == nil {
		t.Skip("no thread ids on this platform")
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 20; i++ {
				b, err := c.Alloc(64)
				if err != nil {
					t.Error(err)
					return
				}
				b.Write(make([]byte, 64))
				b.Read(make([]byte, 64))
				b.Free()
			}
		})
	}
	wg.Wait()
	if err := c.Synchronize(); err != nil {
		t.Fatal(err)
	}
	// A call from the test goroutine straight into the driver is a violation: the check works.
	var free, total uint64
	c.drv.MemGetInfo(&free, &total)
	if len(f.Violations) != 1 {
		t.Fatalf("violations %v, want exactly the direct call", f.Violations)
	}
	f.Violations = nil
}

const testKernels = `
#include "common.cuh"
extern "C" __global__ void scale_add(float* __restrict__ y, const float* x, int n, float a, unsigned long long big, unsigned u) {}
extern "C" __global__ void nothing() {}
`

func fakeCompiler(t *testing.T, f *fakecu.Fake, dir string) *Compiler {
	t.Helper()
	comp, err := NewCompilerWith(f.NVRTC(), "libnvrtc-fake.so", dir)
	if err != nil {
		t.Fatal(err)
	}
	return comp
}

func TestLaunchPacksArgumentsBySignature(t *testing.T) {
	c, f := openFake(t)
	comp := fakeCompiler(t, f, "")
	m, img, err := c.LoadSource(comp, Source{Name: "t.cu", Code: testKernels, Headers: map[string]string{"common.cuh": "//"}})
	if err != nil {
		t.Fatal(err)
	}
	if img.Arch != "sm_90" || img.PTX {
		t.Errorf("image arch %s ptx %v, want a cubin for sm_90", img.Arch, img.PTX)
	}
	fn, err := m.Function("scale_add")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Function("missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing kernel: %v", err)
	}
	y, _ := c.Alloc(4096)
	x, _ := c.Alloc(4096)
	l := Launch{Func: fn, Grid: D2(7, 3), Block: D1(128), Shared: 100 << 10,
		Args: []Arg{Ptr(y), PtrAt(x, 256), I32(-5), F32(1.5), U64(1 << 40), U32(0xfffffffe)}}
	if err := l.Run(); err != nil {
		t.Fatal(err)
	}
	if err := l.Run(); err != nil {
		t.Fatal(err)
	}
	ls := f.LaunchesOf("scale_add")
	if len(ls) != 2 {
		t.Fatalf("%d launches", len(ls))
	}
	got := ls[0]
	if got.Grid != [3]uint32{7, 3, 1} || got.Block != [3]uint32{128, 1, 1} || got.Shared != 100<<10 {
		t.Errorf("geometry %v %v %d", got.Grid, got.Block, got.Shared)
	}
	want := []uint64{y.Addr(0), x.Addr(256), uint64(uint32(0xfffffffb)), uint64(math.Float32bits(1.5)), 1 << 40, 0xfffffffe}
	for i, w := range want {
		if got.Args[i] != w {
			t.Errorf("argument %d (%s) = %#x, want %#x", i, got.Params[i].Type, got.Args[i], w)
		}
	}
	if got.F32(3) != 1.5 {
		t.Errorf("F32(3) = %g", got.F32(3))
	}
	if n := f.Calls["cuFuncSetAttribute"]; n != 1 {
		t.Errorf("cuFuncSetAttribute called %d times for two launches with 100 KiB, want 1", n)
	}
	// Without opting in, the fake refuses more than 48 KiB: the launch above proves opt-in.
	nf, _ := m.Function("nothing")
	if err := (Launch{Func: nf, Grid: D1(1), Block: D1(1)}).Run(); err != nil {
		t.Errorf("launch without arguments: %v", err)
	}
}

func TestLaunchCheckRejectsBeforeTheDriver(t *testing.T) {
	c, f := openFake(t)
	comp := fakeCompiler(t, f, "")
	m, _, err := c.LoadSource(comp, Source{Name: "t.cu", Code: testKernels})
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := m.Function("scale_add")
	dead, _ := c.Alloc(16)
	dead.Free()
	ok := Launch{Func: fn, Grid: D1(1), Block: D1(32), Args: []Arg{Ptr(nil), Ptr(nil), I32(0), F32(0), U64(0), U32(0)}}
	for name, mod := range map[string]func(l *Launch){
		"zero grid":       func(l *Launch) { l.Grid = D1(0) },
		"grid y too big":  func(l *Launch) { l.Grid = D2(1, 70000) },
		"block too big":   func(l *Launch) { l.Block = D2(64, 32) },
		"block z too big": func(l *Launch) { l.Block = D3(1, 1, 65) },
		"shared too big":  func(l *Launch) { l.Shared = 300 << 10 },
		"negative shared": func(l *Launch) { l.Shared = -1 },
		"freed buffer":    func(l *Launch) { l.Args[0] = Ptr(dead) },
		"kindless arg":    func(l *Launch) { l.Args[2] = Arg{} },
		"no function":     func(l *Launch) { l.Func = nil },
	} {
		t.Run(name, func(t *testing.T) {
			l := ok
			l.Args = append([]Arg(nil), ok.Args...)
			mod(&l)
			before := f.Calls["cuLaunchKernel"]
			if err := l.Run(); !errors.Is(err, ErrBadLaunch) {
				t.Errorf("Run: %v, want ErrBadLaunch", err)
			}
			if f.Calls["cuLaunchKernel"] != before {
				t.Error("the driver was called")
			}
		})
	}
	if err := ok.Run(); err != nil {
		t.Errorf("the valid launch: %v", err)
	}
	f.FailOnce["cuLaunchKernel"] = cu.ErrorLaunchOutOfRes
	if err := ok.Run(); !errors.Is(err, ErrLaunch) || !strings.Contains(err.Error(), "scale_add") {
		t.Errorf("failing launch: %v", err)
	}
}

func TestCompileCacheAndLog(t *testing.T) {
	f := fakecu.New()
	dir := t.TempDir()
	comp := fakeCompiler(t, f, dir)
	src := Source{Name: "a.cu", Code: testKernels, Headers: map[string]string{"common.cuh": "// v1"}}
	img, err := comp.Compile(src, 9, 0)
	if err != nil || img.Cached || f.Compiles != 1 {
		t.Fatalf("first compile: %v cached %v compiles %d", err, img.Cached, f.Compiles)
	}
	img2, err := comp.Compile(src, 9, 0)
	if err != nil || !img2.Cached || f.Compiles != 1 || !bytes.Equal(img.Data, img2.Data) {
		t.Fatalf("second compile: %v cached %v compiles %d", err, img2.Cached, f.Compiles)
	}
	// Every part of the key forces a compile: arch, a header, an option, the NVRTC version.
	comp.Compile(src, 8, 0)
	src2 := src
	src2.Headers = map[string]string{"common.cuh": "// v2"}
	comp.Compile(src2, 9, 0)
	comp.Compile(src, 9, 0, "-DX=1")
	f.NVRTCVersion = [2]int32{13, 0}
	comp13 := fakeCompiler(t, f, dir)
	comp13.Compile(src, 9, 0)
	if f.Compiles != 5 {
		t.Errorf("compiles = %d, want 5", f.Compiles)
	}
	// A corrupt cache entry is recompiled.
	os.WriteFile(filepath.Join(dir, img.Key[:32]+".cubin"), []byte("garbage"), 0o644)
	if img3, err := comp.Compile(src, 9, 0); err != nil || img3.Cached {
		t.Errorf("corrupt entry: %v cached %v", err, img3.Cached)
	}
	// An architecture NVRTC does not know falls back to PTX for the highest one below.
	img4, err := comp.Compile(src, 10, 0)
	if err != nil || !img4.PTX || img4.Arch != "compute_90" {
		t.Errorf("sm_100 on an NVRTC up to sm_90: arch %s ptx %v err %v", img4.Arch, img4.PTX, err)
	}
	// The log is in the error.
	_, err = comp.Compile(Source{Name: "bad.cu", Code: "#error the answer is 42\n"}, 9, 0)
	var ce *CompileError
	if !errors.Is(err, ErrCompile) || !errors.As(err, &ce) || !strings.Contains(err.Error(), "the answer is 42") ||
		!strings.Contains(err.Error(), "bad.cu") || !strings.Contains(err.Error(), "sm_90") {
		t.Errorf("compile error %v", err)
	}
}

func TestLoadSourceRecompilesARejectedCachedImage(t *testing.T) {
	c, f := openFake(t)
	comp := fakeCompiler(t, f, t.TempDir())
	src := Source{Name: "a.cu", Code: testKernels}
	if _, _, err := c.LoadSource(comp, src); err != nil {
		t.Fatal(err)
	}
	f.FailOnce["cuModuleLoadData"] = cu.ErrorInvalidImage
	m, img, err := c.LoadSource(comp, src)
	if err != nil || img.Cached || f.Compiles != 2 {
		t.Fatalf("err %v cached %v compiles %d", err, img.Cached, f.Compiles)
	}
	if _, err := m.Function("scale_add"); err != nil {
		t.Error(err)
	}
	f.Fail["cuModuleLoadData"] = cu.ErrorNoBinaryForGPU
	if _, _, err := c.LoadSource(comp, src); !errors.Is(err, ErrInvalidImage) {
		t.Errorf("unloadable: %v", err)
	}
}

func TestEventsMeasureDeviceTime(t *testing.T) {
	c, f := openFake(t)
	f.KernelNanos = func(fakecu.Launch) int64 { return 250_000 }
	comp := fakeCompiler(t, f, "")
	m, _, _ := c.LoadSource(comp, Source{Name: "a.cu", Code: testKernels})
	fn, _ := m.Function("nothing")
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.NewEvent()
	b, _ := c.NewEvent()
	a.Record(s)
	for i := 0; i < 4; i++ {
		if err := (Launch{Func: fn, Grid: D1(1), Block: D1(1), Stream: s}).Run(); err != nil {
			t.Fatal(err)
		}
	}
	b.Record(s)
	b.Synchronize()
	d, err := b.Since(a)
	if err != nil || d != time.Millisecond {
		t.Errorf("elapsed %v %v, want 1ms", d, err)
	}
	if got := f.LaunchesOf("nothing")[0].Stream; got == 0 {
		t.Error("launch went to the default stream")
	}
	s.Close()
	a.Close()
	if err := a.Record(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Record after Close: %v", err)
	}
	if _, m, s, e := c.Live(); m != 1 || s != 0 || e != 1 {
		t.Errorf("live modules %d streams %d events %d", m, s, e)
	}
}

func TestBytesView(t *testing.T) {
	x := []float32{1, -2}
	b := Bytes(x)
	if len(b) != 8 || b[3] != 0x3f || b[7] != 0xc0 {
		t.Errorf("Bytes(%v) = %x", x, b)
	}
	if Bytes([]uint16(nil)) != nil {
		t.Error("Bytes(nil)")
	}
}
