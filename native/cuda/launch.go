package cuda

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/kvlab/kvlab/native/cuda/internal/cu"
)

// Module is a loaded CUDA module (a cubin or PTX image, cuModuleLoadData).
type Module struct {
	c      *Context
	h      cu.Module
	closed atomic.Bool

	mu    sync.Mutex
	funcs map[string]*Function
}

// LoadModule loads a cubin or PTX image; PTX must be NUL-terminated, and LoadModule adds the
// NUL when it is missing. An image the driver cannot use matches ErrInvalidImage.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: load module: empty image: %w", ErrInvalidValue)
	}
	if image[len(image)-1] != 0 && !isELF(image) {
		image = append(image[:len(image):len(image)], 0)
	}
	m := &Module{c: c, funcs: map[string]*Function{}}
	err := c.do(func() error {
		var pin runtime.Pinner
		pin.Pin(&image[0])
		defer pin.Unpin()
		return c.x.check("cuModuleLoadData", c.drv.ModuleLoadData(&m.h, unsafe.Pointer(&image[0])))
	})
	if err != nil {
		return nil, err
	}
	if err := c.track(func() { c.modules[m] = struct{}{} }); err != nil {
		return nil, err
	}
	return m, nil
}

func isELF(b []byte) bool { return len(b) >= 4 && string(b[:4]) == "\x7fELF" }

// Function returns the kernel named name (an extern "C" __global__ function). A name the
// module lacks matches ErrNotFound.
func (m *Module) Function(name string) (*Function, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.funcs[name]; ok {
		return f, nil
	}
	f := &Function{m: m, name: name}
	cname := cu.CString(name)
	err := m.c.do(func() error {
		if err := m.c.x.check("cuModuleGetFunction", m.c.drv.ModuleGetFunc(&f.h, m.h, &cname[0])); err != nil {
			return err
		}
		var v int32
		if err := m.c.x.check("cuFuncGetAttribute", m.c.drv.FuncGetAttr(&v, cu.FuncAttrMaxThreadsPerBlock, f.h)); err != nil {
			return err
		}
		f.maxThreads = int(v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: kernel %q: %w", name, err)
	}
	m.funcs[name] = f
	return f, nil
}

// Close unloads the module. Its Functions must not be launched afterwards. Idempotent.
func (m *Module) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	m.c.untrack(func() { delete(m.c.modules, m) })
	return m.c.do(func() error { return m.c.x.check("cuModuleUnload", m.c.drv.ModuleUnload(m.h)) })
}

// Function is one kernel of a Module.
type Function struct {
	m          *Module
	h          cu.Function
	name       string
	maxThreads int   // the most threads per block this kernel can be launched with
	optin      int32 // dynamic shared bytes opted in so far (cuFuncSetAttribute)
}

// Name is the kernel's name.
func (f *Function) Name() string { return f.name }

// MaxThreads is the most threads per block the compiled kernel can be launched with.
func (f *Function) MaxThreads() int { return f.maxThreads }

// Occupancy is how many blocks of blockSize threads using dynShared bytes of dynamic shared
// memory fit on one multiprocessor at once.
func (f *Function) Occupancy(blockSize int, dynShared int) (int, error) {
	var n int32
	err := f.m.c.do(func() error {
		return f.m.c.x.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", f.m.c.drv.Occupancy(&n, f.h, int32(blockSize), uint64(dynShared)))
	})
	return int(n), err
}

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z int }

// D1 is the shape (x, 1, 1); D2 is (x, y, 1); D3 is (x, y, z).
func D1(x int) Dim3       { return Dim3{x, 1, 1} }
func D2(x, y int) Dim3    { return Dim3{x, y, 1} }
func D3(x, y, z int) Dim3 { return Dim3{x, y, z} }

// Count is X·Y·Z.
func (d Dim3) Count() int { return d.X * d.Y * d.Z }

// ArgKind is the C type class of one kernel argument.
type ArgKind uint8

// The argument kinds and their sizes in bytes: pointers and 64-bit integers 8, the rest 4.
const (
	KindPtr ArgKind = iota + 1 // any T* (a device address)
	KindI32                    // int, int32_t
	KindU32                    // unsigned, uint32_t
	KindF32                    // float
	KindI64                    // long long, int64_t
	KindU64                    // unsigned long long, uint64_t, size_t
)

// Size is the kind's size in bytes.
func (k ArgKind) Size() int {
	switch k {
	case KindPtr, KindI64, KindU64:
		return 8
	case KindI32, KindU32, KindF32:
		return 4
	}
	return 0
}

func (k ArgKind) String() string {
	return [...]string{"invalid", "ptr", "i32", "u32", "f32", "i64", "u64"}[min(int(k), 6)]
}

// Arg is one kernel argument: its kind and its bits (little-endian in the low Size bytes).
// A pointer argument into a Buffer remembers the buffer, so a launch refuses a freed one.
type Arg struct {
	Kind ArgKind
	Bits uint64
	buf  *Buffer
	off  int64
}

// Ptr is the address of byte 0 of b; PtrAt the address of byte off. A nil buffer gives
// the null pointer.
func Ptr(b *Buffer) Arg { return PtrAt(b, 0) }

// PtrAt is the address of byte off of b (0 ≤ off ≤ b.Size()).
func PtrAt(b *Buffer, off int64) Arg {
	if b == nil {
		return Arg{Kind: KindPtr}
	}
	return Arg{Kind: KindPtr, Bits: b.Addr(off), buf: b, off: off}
}

// I32, U32, F32, I64 and U64 are scalar arguments.
func I32(v int32) Arg   { return Arg{Kind: KindI32, Bits: uint64(uint32(v))} }
func U32(v uint32) Arg  { return Arg{Kind: KindU32, Bits: uint64(v)} }
func F32(v float32) Arg { return Arg{Kind: KindF32, Bits: uint64(math.Float32bits(v))} }
func I64(v int64) Arg   { return Arg{Kind: KindI64, Bits: uint64(v)} }
func U64(v uint64) Arg  { return Arg{Kind: KindU64, Bits: v} }

// Int is an int argument (C int, 32 bits); it panics if v does not fit, a caller bug.
func Int(v int) Arg {
	if v < math.MinInt32 || v > math.MaxInt32 {
		panic(fmt.Sprintf("cuda: int argument %d does not fit in 32 bits", v))
	}
	return I32(int32(v))
}

// Launch is one kernel launch: cuLaunchKernel(Func, Grid, Block, Shared, Stream, Args).
type Launch struct {
	Func   *Function
	Grid   Dim3
	Block  Dim3
	Shared int     // bytes of dynamic shared memory
	Stream *Stream // nil: the default stream
	Args   []Arg
}

// Check validates the launch against the device's limits and the kernel's, without calling
// the driver: every dimension positive and within the limits, block threads ≤ the kernel's
// maximum, dynamic shared memory within the opt-in limit, every pointer argument's buffer
// alive. Failures match ErrBadLaunch.
func (l Launch) Check() error {
	if l.Func == nil {
		return fmt.Errorf("%w: no kernel", ErrBadLaunch)
	}
	lim := l.Func.m.c.lim
	g, b := [3]int{l.Grid.X, l.Grid.Y, l.Grid.Z}, [3]int{l.Block.X, l.Block.Y, l.Block.Z}
	for i := 0; i < 3; i++ {
		if g[i] < 1 || g[i] > lim.grid[i] {
			return fmt.Errorf("%w: %s: grid %v: dimension %d must be in [1, %d]", ErrBadLaunch, l.Func.name, l.Grid, i, lim.grid[i])
		}
		if b[i] < 1 || b[i] > lim.block[i] {
			return fmt.Errorf("%w: %s: block %v: dimension %d must be in [1, %d]", ErrBadLaunch, l.Func.name, l.Block, i, lim.block[i])
		}
	}
	maxT := lim.threadsPerBlock
	if l.Func.maxThreads > 0 {
		maxT = min(maxT, l.Func.maxThreads)
	}
	if n := l.Block.Count(); n > maxT {
		return fmt.Errorf("%w: %s: %d threads per block, the kernel allows %d", ErrBadLaunch, l.Func.name, n, maxT)
	}
	if l.Shared < 0 || l.Shared > lim.sharedOptin {
		return fmt.Errorf("%w: %s: %d bytes of dynamic shared memory, the device allows %d", ErrBadLaunch, l.Func.name, l.Shared, lim.sharedOptin)
	}
	for i, a := range l.Args {
		if a.Kind.Size() == 0 {
			return fmt.Errorf("%w: %s: argument %d has no kind", ErrBadLaunch, l.Func.name, i)
		}
		if a.buf != nil {
			if err := a.buf.span("kernel argument", a.off, 0); err != nil {
				return fmt.Errorf("%w: %s: argument %d: %v", ErrBadLaunch, l.Func.name, i, err)
			}
		}
	}
	return nil
}

// packArgs lays the arguments out for cuLaunchKernel: one 8-byte word per argument holding
// its bits, and params[i] pointing at word i.
func packArgs(args []Arg) (words []uint64, params []unsafe.Pointer) {
	words = make([]uint64, max(len(args), 1))
	params = make([]unsafe.Pointer, max(len(args), 1))
	for i, a := range args {
		words[i] = a.Bits
		params[i] = unsafe.Pointer(&words[i])
	}
	return words, params
}

// Run checks and launches. The argument words and the pointer array are pinned from before
// cuLaunchKernel until it returns (the driver copies them during the call). A kernel using
// more than the default 48 KiB of dynamic shared memory is opted in first
// (cuFuncSetAttribute). Errors of the kernel itself surface at the next synchronization.
func (l Launch) Run() error {
	if err := l.Check(); err != nil {
		return err
	}
	f := l.Func
	c := f.m.c
	if f.m.closed.Load() {
		return fmt.Errorf("cuda: launch %s: %w", f.name, ErrClosed)
	}
	words, params := packArgs(l.Args)
	return c.do(func() error {
		if l.Shared > c.lim.sharedDefault && int32(l.Shared) > f.optin {
			if err := c.x.check("cuFuncSetAttribute", c.drv.FuncSetAttr(f.h, cu.FuncAttrMaxDynamicSharedSize, int32(l.Shared))); err != nil {
				return fmt.Errorf("cuda: launch %s: %w", f.name, err)
			}
			f.optin = int32(l.Shared)
		}
		var pin runtime.Pinner
		pin.Pin(&words[0])
		pin.Pin(&params[0])
		defer pin.Unpin()
		r := c.drv.LaunchKernel(f.h, uint32(l.Grid.X), uint32(l.Grid.Y), uint32(l.Grid.Z),
			uint32(l.Block.X), uint32(l.Block.Y), uint32(l.Block.Z), uint32(l.Shared), l.Stream.handle(),
			unsafe.Pointer(&params[0]), nil)
		if err := c.x.check("cuLaunchKernel", r); err != nil {
			return fmt.Errorf("cuda: launch %s grid %v block %v: %w", f.name, l.Grid, l.Block, err)
		}
		return nil
	})
}
