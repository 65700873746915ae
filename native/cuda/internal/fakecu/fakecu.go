// Package fakecu is an in-memory CUDA driver and NVRTC for tests: driver tables (cu.Driver,
// cu.NVRTC) whose funcs simulate devices, memory, modules, streams, events and launches on
// the host, check the thread discipline of the typed layer, record every launch with its
// arguments decoded by the kernel's C signature, and fail any symbol on demand.
//
// Device memory is host memory: each allocation is a []byte at a fake 256-aligned address;
// copies check their ranges. A "module image" is the source text NVRTC was given, prefixed
// with a fake ELF header; loading one parses its extern "C" __global__ signatures.
package fakecu

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/kvlab/kvlab/kernels"
	"github.com/kvlab/kvlab/native/cuda/internal/cu"
)

// Param is one kernel parameter as the fake decodes it: its C type and size in bytes.
type Param struct {
	Type string
	Size int
}

// Launch is one recorded cuLaunchKernel.
type Launch struct {
	Name   string
	Grid   [3]uint32
	Block  [3]uint32
	Shared uint32
	Stream cu.Stream
	Params []Param
	Args   []uint64 // each argument's bytes, zero-extended (little-endian)
}

// Arg returns argument i as a float32 (for f32 parameters).
func (l Launch) F32(i int) float32 { return *(*float32)(unsafe.Pointer(&l.Args[i])) }

// Impl simulates a kernel: it may read and write device memory through f.Mem.
type Impl func(f *Fake, l Launch) cu.Result

type alloc struct {
	base uint64
	data []byte
}

type module struct {
	src   string
	funcs map[string]*function
}

type function struct {
	name   string
	params []Param
	attrs  map[cu.FuncAttr]int32
}

// Fake is one simulated machine. Its exported fields may be set before use.
type Fake struct {
	mu sync.Mutex

	// Devices are the simulated devices' names; the default is one "Fake H200".
	Devices []string
	// Attrs overrides device attributes (all devices); unset ones have H200-like defaults.
	Attrs map[cu.Attribute]int32
	// MemBytes is each device's memory; allocations past it fail with out-of-memory.
	MemBytes uint64
	// Fail makes the named C symbol return the given result on every call; FailOnce on the
	// next call only.
	Fail, FailOnce map[string]cu.Result
	// Impls simulate kernels by name; a launch of a kernel without one only records.
	Impls map[string]Impl
	// KernelNanos is the simulated device time per launch, read by events.
	KernelNanos func(l Launch) int64
	// CheckThread, when set, returns an id of the calling OS thread; every call that needs a
	// current context then checks that it runs on the thread that made it current.
	CheckThread func() int64

	initialized bool
	retained    map[cu.Device]int
	current     map[int64]cu.Context
	allocs      map[uint64]*alloc
	hosts       map[unsafe.Pointer][]byte // page-locked host allocations
	used        uint64
	next        uint64
	modules     map[cu.Module]*module
	funcs       map[cu.Function]*function
	handles     uintptr
	streams     map[cu.Stream]bool
	events      map[cu.Event]int64 // recorded device time in ns, −1 when not recorded
	clock       int64
	strs        map[string][]byte

	// Launches records every launch in order.
	Launches []Launch
	// Violations records calls made without a current context on the calling thread.
	Violations []string
	// Calls counts calls per C symbol.
	Calls map[string]int

	// NVRTC state.
	NVRTCVersion [2]int32
	NVRTCArchs   []int32
	Compiles     int
	programs     map[cu.Program]*program
}

type program struct {
	src, name string
	headers   map[string]string
	out       []byte
	log       string
}

// New returns a fake with one H200-like device and 141 GiB of memory.
func New() *Fake {
	return &Fake{
		Devices:      []string{"Fake H200"},
		MemBytes:     141 << 30,
		Fail:         map[string]cu.Result{},
		FailOnce:     map[string]cu.Result{},
		Impls:        map[string]Impl{},
		retained:     map[cu.Device]int{},
		current:      map[int64]cu.Context{},
		allocs:       map[uint64]*alloc{},
		hosts:        map[unsafe.Pointer][]byte{},
		next:         0x7f0000000000,
		modules:      map[cu.Module]*module{},
		funcs:        map[cu.Function]*function{},
		streams:      map[cu.Stream]bool{},
		events:       map[cu.Event]int64{},
		strs:         map[string][]byte{},
		Calls:        map[string]int{},
		NVRTCVersion: [2]int32{12, 4},
		NVRTCArchs:   []int32{50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90},
		programs:     map[cu.Program]*program{},
	}
}

var defaultAttrs = map[cu.Attribute]int32{
	cu.AttrMaxThreadsPerBlock: 1024, cu.AttrMaxBlockDimX: 1024, cu.AttrMaxBlockDimY: 1024, cu.AttrMaxBlockDimZ: 64,
	cu.AttrMaxGridDimX: 1<<31 - 1, cu.AttrMaxGridDimY: 65535, cu.AttrMaxGridDimZ: 65535,
	cu.AttrMaxSharedPerBlock: 48 << 10, cu.AttrWarpSize: 32, cu.AttrClockRate: 1980000,
	cu.AttrMultiprocessorCount: 132, cu.AttrMemoryClockRate: 2619000, cu.AttrGlobalMemoryBusWidth: 6144,
	cu.AttrL2CacheSize: 50 << 20, cu.AttrMaxThreadsPerSM: 2048, cu.AttrComputeCapabilityMajor: 9,
	cu.AttrComputeCapabilityMinor: 0, cu.AttrMaxSharedPerSM: 228 << 10, cu.AttrMaxSharedPerBlockOptin: 227 << 10,
}

// call counts a call and returns the injected failure for it, if any.
func (f *Fake) call(sym string) (cu.Result, bool) {
	f.Calls[sym]++
	if r, ok := f.FailOnce[sym]; ok {
		delete(f.FailOnce, sym)
		return r, true
	}
	if r, ok := f.Fail[sym]; ok {
		return r, true
	}
	return cu.Success, false
}

// asyncCall is call for a symbol whose work another symbol's func does.
func (f *Fake) asyncCall(sym string) (cu.Result, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.needCtx(sym)
	return f.call(sym)
}

// needCtx records a violation when the calling thread has no current context.
func (f *Fake) needCtx(sym string) {
	if f.CheckThread == nil {
		return
	}
	if _, ok := f.current[f.CheckThread()]; !ok {
		f.Violations = append(f.Violations, sym)
	}
}

func (f *Fake) cstr(s string) *byte {
	b, ok := f.strs[s]
	if !ok {
		b = append([]byte(s), 0)
		f.strs[s] = b
	}
	return &b[0]
}

// find returns the allocation holding [p, p+n) and the offset of p in it.
func (f *Fake) find(p uint64, n uint64) (*alloc, uint64, bool) {
	for base, a := range f.allocs {
		if p >= base && p-base <= uint64(len(a.data)) && n <= uint64(len(a.data))-(p-base) {
			return a, p - base, true
		}
	}
	return nil, 0, false
}

// Mem returns the n bytes of device memory at p, or nil when the range is not allocated.
// Callers inside an Impl already hold the fake's lock.
func (f *Fake) Mem(p uint64, n int) []byte {
	a, off, ok := f.find(p, uint64(n))
	if !ok {
		return nil
	}
	return a.data[off : off+uint64(n)]
}

// LiveHostAllocs is the number of page-locked host allocations not yet freed.
func (f *Fake) LiveHostAllocs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.hosts)
}

// LiveAllocs is the number of allocations not yet freed.
func (f *Fake) LiveAllocs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.allocs)
}

// Retained is how many times device 0's primary context is retained.
func (f *Fake) Retained() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.retained[0]
}

// LaunchesOf returns the recorded launches of the named kernel.
func (f *Fake) LaunchesOf(name string) []Launch {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Launch
	for _, l := range f.Launches {
		if l.Name == name {
			out = append(out, l)
		}
	}
	return out
}

// Driver returns the fake as a driver table; cuInit has not been called.
func (f *Fake) Driver() *cu.Driver {
	lock := func() func() { f.mu.Lock(); return f.mu.Unlock }
	d := &cu.Driver{}
	d.Init = func(flags uint32) cu.Result {
		defer lock()()
		if r, bad := f.call("cuInit"); bad {
			return r
		}
		if len(f.Devices) == 0 {
			return cu.ErrorNoDevice
		}
		f.initialized = true
		return cu.Success
	}
	d.DriverGetVersion = func(v *int32) cu.Result { *v = 12040; return cu.Success }
	d.DeviceGetCount = func(n *int32) cu.Result {
		defer lock()()
		if r, bad := f.call("cuDeviceGetCount"); bad {
			return r
		}
		*n = int32(len(f.Devices))
		return cu.Success
	}
	d.DeviceGet = func(dev *cu.Device, ord int32) cu.Result {
		defer lock()()
		if r, bad := f.call("cuDeviceGet"); bad {
			return r
		}
		if ord < 0 || int(ord) >= len(f.Devices) {
			return cu.ErrorInvalidDevice
		}
		*dev = cu.Device(ord)
		return cu.Success
	}
	d.DeviceGetName = func(name *byte, n int32, dev cu.Device) cu.Result {
		defer lock()()
		s := f.Devices[dev]
		b := unsafe.Slice(name, n)
		m := copy(b[:n-1], s)
		b[m] = 0
		return cu.Success
	}
	d.DeviceGetAttr = func(v *int32, a cu.Attribute, dev cu.Device) cu.Result {
		defer lock()()
		if x, ok := f.Attrs[a]; ok {
			*v = x
			return cu.Success
		}
		x, ok := defaultAttrs[a]
		if !ok {
			return cu.ErrorInvalidValue
		}
		*v = x
		return cu.Success
	}
	d.DeviceTotalMem = func(b *uint64, dev cu.Device) cu.Result { *b = f.MemBytes; return cu.Success }
	d.PrimaryRetain = func(c *cu.Context, dev cu.Device) cu.Result {
		defer lock()()
		if r, bad := f.call("cuDevicePrimaryCtxRetain"); bad {
			return r
		}
		f.retained[dev]++
		*c = cu.Context(0x1000 + uintptr(dev))
		return cu.Success
	}
	d.PrimaryRelease = func(dev cu.Device) cu.Result {
		defer lock()()
		f.call("cuDevicePrimaryCtxRelease_v2")
		if f.retained[dev] == 0 {
			return cu.ErrorInvalidContext
		}
		f.retained[dev]--
		return cu.Success
	}
	d.CtxSetCurrent = func(c cu.Context) cu.Result {
		defer lock()()
		if r, bad := f.call("cuCtxSetCurrent"); bad {
			return r
		}
		if f.CheckThread != nil {
			f.current[f.CheckThread()] = c
		}
		return cu.Success
	}
	d.CtxPushCurrent = d.CtxSetCurrent
	d.CtxPopCurrent = func(c *cu.Context) cu.Result { return cu.Success }
	d.CtxSynchronize = func() cu.Result {
		defer lock()()
		f.needCtx("cuCtxSynchronize")
		r, _ := f.call("cuCtxSynchronize")
		return r
	}
	d.MemGetInfo = func(free, total *uint64) cu.Result {
		defer lock()()
		f.needCtx("cuMemGetInfo_v2")
		*free, *total = f.MemBytes-f.used, f.MemBytes
		return cu.Success
	}
	d.MemAlloc = func(p *cu.DevicePtr, n uint64) cu.Result {
		defer lock()()
		f.needCtx("cuMemAlloc_v2")
		if r, bad := f.call("cuMemAlloc_v2"); bad {
			return r
		}
		if n == 0 {
			return cu.ErrorInvalidValue
		}
		if f.used+n > f.MemBytes {
			return cu.ErrorOutOfMemory
		}
		base := f.next
		f.next += (n + 4095) &^ 255
		f.next += 4096 // a gap, so overruns do not land in the next allocation
		f.allocs[base] = &alloc{base: base, data: make([]byte, n)}
		f.used += n
		*p = cu.DevicePtr(base)
		return cu.Success
	}
	d.MemFree = func(p cu.DevicePtr) cu.Result {
		defer lock()()
		f.needCtx("cuMemFree_v2")
		f.call("cuMemFree_v2")
		a, ok := f.allocs[uint64(p)]
		if !ok {
			return cu.ErrorInvalidValue
		}
		f.used -= uint64(len(a.data))
		delete(f.allocs, uint64(p))
		return cu.Success
	}
	d.MemcpyHtoD = func(dst cu.DevicePtr, src unsafe.Pointer, n uint64) cu.Result {
		defer lock()()
		f.needCtx("cuMemcpyHtoD_v2")
		if r, bad := f.call("cuMemcpyHtoD_v2"); bad {
			return r
		}
		m := f.Mem(uint64(dst), int(n))
		if m == nil {
			return cu.ErrorInvalidValue
		}
		copy(m, unsafe.Slice((*byte)(src), n))
		return cu.Success
	}
	d.MemcpyDtoH = func(dst unsafe.Pointer, src cu.DevicePtr, n uint64) cu.Result {
		defer lock()()
		f.needCtx("cuMemcpyDtoH_v2")
		if r, bad := f.call("cuMemcpyDtoH_v2"); bad {
			return r
		}
		m := f.Mem(uint64(src), int(n))
		if m == nil {
			return cu.ErrorInvalidValue
		}
		copy(unsafe.Slice((*byte)(dst), n), m)
		return cu.Success
	}
	d.MemcpyDtoD = func(dst, src cu.DevicePtr, n uint64) cu.Result {
		defer lock()()
		f.needCtx("cuMemcpyDtoD_v2")
		if r, bad := f.call("cuMemcpyDtoD_v2"); bad {
			return r
		}
		a, b := f.Mem(uint64(dst), int(n)), f.Mem(uint64(src), int(n))
		if a == nil || b == nil {
			return cu.ErrorInvalidValue
		}
		copy(a, b)
		f.clock += int64(n) * 2 / CopyBytesPerNano
		return cu.Success
	}
	d.MemcpyDtoDAsync = func(dst, src cu.DevicePtr, n uint64, s cu.Stream) cu.Result {
		r := d.MemcpyDtoD(dst, src, n)
		return r
	}
	d.MemAllocHost = func(p *unsafe.Pointer, n uint64) cu.Result {
		defer lock()()
		f.needCtx("cuMemAllocHost_v2")
		if r, bad := f.call("cuMemAllocHost_v2"); bad {
			return r
		}
		if n == 0 {
			return cu.ErrorInvalidValue
		}
		b := make([]byte, n)
		*p = unsafe.Pointer(&b[0])
		f.hosts[*p] = b
		return cu.Success
	}
	d.MemFreeHost = func(p unsafe.Pointer) cu.Result {
		defer lock()()
		f.needCtx("cuMemFreeHost")
		f.call("cuMemFreeHost")
		if _, ok := f.hosts[p]; !ok {
			return cu.ErrorInvalidValue
		}
		delete(f.hosts, p)
		return cu.Success
	}
	// The asynchronous copies run at once and count under their own names.
	d.MemcpyHtoDAsync = func(dst cu.DevicePtr, src unsafe.Pointer, n uint64, s cu.Stream) cu.Result {
		if r, bad := f.asyncCall("cuMemcpyHtoDAsync_v2"); bad {
			return r
		}
		return d.MemcpyHtoD(dst, src, n)
	}
	d.MemcpyDtoHAsync = func(dst unsafe.Pointer, src cu.DevicePtr, n uint64, s cu.Stream) cu.Result {
		if r, bad := f.asyncCall("cuMemcpyDtoHAsync_v2"); bad {
			return r
		}
		return d.MemcpyDtoH(dst, src, n)
	}
	d.MemsetD8 = func(dst cu.DevicePtr, v uint8, n uint64) cu.Result {
		defer lock()()
		f.needCtx("cuMemsetD8_v2")
		m := f.Mem(uint64(dst), int(n))
		if m == nil {
			return cu.ErrorInvalidValue
		}
		for i := range m {
			m[i] = v
		}
		return cu.Success
	}
	d.ModuleLoadData = func(m *cu.Module, image unsafe.Pointer) cu.Result {
		defer lock()()
		f.needCtx("cuModuleLoadData")
		if r, bad := f.call("cuModuleLoadData"); bad {
			return r
		}
		src := cu.GoString((*byte)(image))
		if !strings.HasPrefix(src, imageMagic) && !strings.HasPrefix(src, ptxMagic) {
			return cu.ErrorInvalidImage
		}
		mod := &module{src: src, funcs: map[string]*function{}}
		for name, ps := range ParseSignatures(src) {
			mod.funcs[name] = &function{name: name, params: ps, attrs: map[cu.FuncAttr]int32{cu.FuncAttrMaxThreadsPerBlock: 1024}}
		}
		f.handles++
		*m = cu.Module(f.handles)
		f.modules[*m] = mod
		return cu.Success
	}
	d.ModuleUnload = func(m cu.Module) cu.Result {
		defer lock()()
		f.call("cuModuleUnload")
		if _, ok := f.modules[m]; !ok {
			return cu.ErrorInvalidHandle
		}
		delete(f.modules, m)
		return cu.Success
	}
	d.ModuleGetFunc = func(fn *cu.Function, m cu.Module, name *byte) cu.Result {
		defer lock()()
		f.needCtx("cuModuleGetFunction")
		mod, ok := f.modules[m]
		if !ok {
			return cu.ErrorInvalidHandle
		}
		k, ok := mod.funcs[cu.GoString(name)]
		if !ok {
			return cu.ErrorNotFound
		}
		f.handles++
		*fn = cu.Function(f.handles)
		f.funcs[*fn] = k
		return cu.Success
	}
	d.FuncGetAttr = func(v *int32, a cu.FuncAttr, fn cu.Function) cu.Result {
		defer lock()()
		k, ok := f.funcs[fn]
		if !ok {
			return cu.ErrorInvalidHandle
		}
		*v = k.attrs[a]
		return cu.Success
	}
	d.FuncSetAttr = func(fn cu.Function, a cu.FuncAttr, v int32) cu.Result {
		defer lock()()
		f.call("cuFuncSetAttribute")
		k, ok := f.funcs[fn]
		if !ok {
			return cu.ErrorInvalidHandle
		}
		k.attrs[a] = v
		return cu.Success
	}
	d.LaunchKernel = func(fn cu.Function, gx, gy, gz, bx, by, bz, shared uint32, s cu.Stream, params, extra unsafe.Pointer) cu.Result {
		defer lock()()
		f.needCtx("cuLaunchKernel")
		if r, bad := f.call("cuLaunchKernel"); bad {
			return r
		}
		k, ok := f.funcs[fn]
		if !ok {
			return cu.ErrorInvalidHandle
		}
		if shared > 48<<10 && uint32(k.attrs[cu.FuncAttrMaxDynamicSharedSize]) < shared {
			return cu.ErrorInvalidValue // not opted in
		}
		l := Launch{Name: k.name, Grid: [3]uint32{gx, gy, gz}, Block: [3]uint32{bx, by, bz}, Shared: shared, Stream: s, Params: k.params}
		ptrs := unsafe.Slice((*unsafe.Pointer)(params), max(len(k.params), 1))
		for i, p := range k.params {
			var v uint64
			b := unsafe.Slice((*byte)(ptrs[i]), p.Size)
			for j := p.Size - 1; j >= 0; j-- {
				v = v<<8 | uint64(b[j])
			}
			l.Args = append(l.Args, v)
		}
		f.Launches = append(f.Launches, l)
		if f.KernelNanos != nil {
			f.clock += f.KernelNanos(l)
		}
		if impl, ok := f.Impls[k.name]; ok {
			return impl(f, l)
		}
		return cu.Success
	}
	d.Occupancy = func(n *int32, fn cu.Function, bs int32, dyn uint64) cu.Result {
		defer lock()()
		regs := int32(2048) / max(bs, 1)
		smem := int32((228 << 10) / max(dyn+1024, 1))
		*n = max(1, min(regs, smem, 32))
		return cu.Success
	}
	d.StreamCreate = func(s *cu.Stream, flags uint32) cu.Result {
		defer lock()()
		f.needCtx("cuStreamCreate")
		f.handles++
		*s = cu.Stream(f.handles)
		f.streams[*s] = true
		return cu.Success
	}
	d.StreamDestroy = func(s cu.Stream) cu.Result {
		defer lock()()
		if !f.streams[s] {
			return cu.ErrorInvalidHandle
		}
		delete(f.streams, s)
		return cu.Success
	}
	d.StreamSync = func(s cu.Stream) cu.Result {
		defer lock()()
		f.needCtx("cuStreamSynchronize")
		r, _ := f.call("cuStreamSynchronize")
		return r
	}
	d.EventCreate = func(e *cu.Event, flags uint32) cu.Result {
		defer lock()()
		f.needCtx("cuEventCreate")
		f.handles++
		*e = cu.Event(f.handles)
		f.events[*e] = -1
		return cu.Success
	}
	d.EventDestroy = func(e cu.Event) cu.Result {
		defer lock()()
		if _, ok := f.events[e]; !ok {
			return cu.ErrorInvalidHandle
		}
		delete(f.events, e)
		return cu.Success
	}
	d.EventRecord = func(e cu.Event, s cu.Stream) cu.Result {
		defer lock()()
		f.needCtx("cuEventRecord")
		if _, ok := f.events[e]; !ok {
			return cu.ErrorInvalidHandle
		}
		f.events[e] = f.clock
		return cu.Success
	}
	d.EventSync = func(e cu.Event) cu.Result { return cu.Success }
	d.EventElapsed = func(ms *float32, a, b cu.Event) cu.Result {
		defer lock()()
		ta, tb := f.events[a], f.events[b]
		if ta < 0 || tb < 0 {
			return cu.ErrorInvalidHandle
		}
		*ms = float32(float64(tb-ta) / 1e6)
		return cu.Success
	}
	d.GetErrorName = func(r cu.Result, s **byte) cu.Result {
		defer lock()()
		*s = f.cstr(errorNames[r])
		if errorNames[r] == "" {
			return cu.ErrorInvalidValue
		}
		return cu.Success
	}
	d.GetErrorString = func(r cu.Result, s **byte) cu.Result {
		defer lock()()
		msg, ok := errorMsgs[r]
		if !ok {
			return cu.ErrorInvalidValue
		}
		*s = f.cstr(msg)
		return cu.Success
	}
	return d
}

var errorNames = map[cu.Result]string{
	cu.ErrorInvalidValue: "CUDA_ERROR_INVALID_VALUE", cu.ErrorOutOfMemory: "CUDA_ERROR_OUT_OF_MEMORY",
	cu.ErrorNotInitialized: "CUDA_ERROR_NOT_INITIALIZED", cu.ErrorNoDevice: "CUDA_ERROR_NO_DEVICE",
	cu.ErrorInvalidDevice: "CUDA_ERROR_INVALID_DEVICE", cu.ErrorInvalidImage: "CUDA_ERROR_INVALID_IMAGE",
	cu.ErrorNotFound: "CUDA_ERROR_NOT_FOUND", cu.ErrorLaunchFailed: "CUDA_ERROR_LAUNCH_FAILED",
	cu.ErrorIllegalAddress: "CUDA_ERROR_ILLEGAL_ADDRESS", cu.ErrorInvalidHandle: "CUDA_ERROR_INVALID_HANDLE",
	cu.ErrorInvalidContext: "CUDA_ERROR_INVALID_CONTEXT", cu.ErrorInsufficientDrv: "CUDA_ERROR_INSUFFICIENT_DRIVER",
}

var errorMsgs = map[cu.Result]string{
	cu.ErrorInvalidValue: "invalid argument", cu.ErrorOutOfMemory: "out of memory",
	cu.ErrorNotInitialized: "initialization error", cu.ErrorNoDevice: "no CUDA-capable device is detected",
	cu.ErrorInvalidDevice: "invalid device ordinal", cu.ErrorInvalidImage: "device kernel image is invalid",
	cu.ErrorNotFound: "named symbol not found", cu.ErrorLaunchFailed: "unspecified launch failure",
	cu.ErrorIllegalAddress: "an illegal memory access was encountered", cu.ErrorInvalidHandle: "invalid resource handle",
	cu.ErrorInvalidContext: "invalid device context", cu.ErrorInsufficientDrv: "CUDA driver version is insufficient for CUDA runtime version",
}

// CopyBytesPerNano is the fake's device-to-device copy rate counting bytes read plus bytes
// written: 4000 bytes per nanosecond (4 TB/s).
const CopyBytesPerNano = 4000

const (
	imageMagic = "\x7fELF fake cubin "
	ptxMagic   = "// fake ptx "
)

// ParseSignatures finds every extern "C" __global__ kernel in src and returns each one's
// parameters with their sizes (kernels.Signatures).
func ParseSignatures(src string) map[string][]Param {
	out := map[string][]Param{}
	for name, ps := range kernels.Signatures(src) {
		var qs []Param
		for _, p := range ps {
			qs = append(qs, Param{Type: p.Decl, Size: p.Size})
		}
		out[name] = qs
	}
	return out
}

// NVRTC returns the fake as an NVRTC table. A program whose source contains "#error" fails
// to compile with the text after it as the log; otherwise the output is the source itself
// behind a fake header, so a fake driver can load it and parse its kernels.
func (f *Fake) NVRTC() *cu.NVRTC {
	lock := func() func() { f.mu.Lock(); return f.mu.Unlock }
	n := &cu.NVRTC{}
	n.Version = func(a, b *int32) cu.NVRTCResult { *a, *b = f.NVRTCVersion[0], f.NVRTCVersion[1]; return 0 }
	n.NumArchs = func(k *int32) cu.NVRTCResult { *k = int32(len(f.NVRTCArchs)); return 0 }
	n.Archs = func(a *int32) cu.NVRTCResult {
		copy(unsafe.Slice(a, len(f.NVRTCArchs)), f.NVRTCArchs)
		return 0
	}
	strs := func(p unsafe.Pointer, k int) []string {
		if k == 0 {
			return nil
		}
		ps := unsafe.Slice((**byte)(p), k)
		out := make([]string, k)
		for i, q := range ps {
			out[i] = cu.GoString(q)
		}
		return out
	}
	n.CreateProgram = func(p *cu.Program, src, name *byte, nh int32, hs, hn unsafe.Pointer) cu.NVRTCResult {
		defer lock()()
		pr := &program{src: cu.GoString(src), name: cu.GoString(name), headers: map[string]string{}}
		bodies, names := strs(hs, int(nh)), strs(hn, int(nh))
		for i := range names {
			pr.headers[names[i]] = bodies[i]
		}
		f.handles++
		*p = cu.Program(f.handles)
		f.programs[*p] = pr
		return 0
	}
	n.CompileProgram = func(p cu.Program, no int32, opts unsafe.Pointer) cu.NVRTCResult {
		defer lock()()
		f.Compiles++
		pr := f.programs[p]
		os := strs(opts, int(no))
		arch := ""
		for _, o := range os {
			if a, ok := strings.CutPrefix(o, "--gpu-architecture="); ok {
				arch = a
			}
		}
		if arch == "" {
			pr.log = "error: no --gpu-architecture"
			return cu.NVRTCInvalidOption
		}
		if i := strings.Index(pr.src, "#error"); i >= 0 {
			line, _, _ := strings.Cut(pr.src[i+len("#error"):], "\n")
			pr.log = pr.name + "(1): error: " + strings.TrimSpace(line)
			return cu.NVRTCCompilationError
		}
		names := make([]string, 0, len(pr.headers))
		for h := range pr.headers {
			names = append(names, h)
		}
		sort.Strings(names)
		pr.log = fmt.Sprintf("compiled %s for %s with %d headers %v", pr.name, arch, len(names), names)
		magic := imageMagic
		if strings.HasPrefix(arch, "compute_") {
			magic = ptxMagic
		}
		pr.out = []byte(magic + arch + "\n" + pr.src + "\x00")
		return 0
	}
	size := func(p cu.Program, s *uint64) cu.NVRTCResult {
		defer lock()()
		*s = uint64(len(f.programs[p].out))
		return 0
	}
	get := func(p cu.Program, b *byte) cu.NVRTCResult {
		defer lock()()
		copy(unsafe.Slice(b, len(f.programs[p].out)), f.programs[p].out)
		return 0
	}
	n.CUBINSize, n.CUBIN, n.PTXSize, n.PTX = size, get, size, get
	n.LogSize = func(p cu.Program, s *uint64) cu.NVRTCResult {
		defer lock()()
		*s = uint64(len(f.programs[p].log) + 1)
		return 0
	}
	n.Log = func(p cu.Program, b *byte) cu.NVRTCResult {
		defer lock()()
		l := f.programs[p].log
		copy(unsafe.Slice(b, len(l)+1), l+"\x00")
		return 0
	}
	n.DestroyProgram = func(p *cu.Program) cu.NVRTCResult {
		defer lock()()
		delete(f.programs, *p)
		return 0
	}
	n.ErrorString = func(r cu.NVRTCResult) string {
		switch r {
		case cu.NVRTCCompilationError:
			return "NVRTC_ERROR_COMPILATION"
		case cu.NVRTCInvalidOption:
			return "NVRTC_ERROR_INVALID_OPTION"
		}
		return fmt.Sprintf("NVRTC_ERROR_%d", r)
	}
	return n
}
