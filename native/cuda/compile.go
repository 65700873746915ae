package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/kvlab/kvlab/native/cuda/internal/cu"
)

// CacheEnv names the environment variable that overrides the compiled-kernel cache
// directory; the value "off" disables the cache.
const CacheEnv = "KVLAB_CUDA_CACHE"

// Source is one CUDA translation unit for NVRTC: its name (used in logs), its code, and the
// headers it may #include by name.
type Source struct {
	Name    string
	Code    string
	Headers map[string]string
}

// Image is a compiled module: a cubin for the device's exact architecture, or PTX for a
// lower virtual architecture when this NVRTC does not know the device's.
type Image struct {
	Data   []byte
	PTX    bool   // Data is NUL-terminated PTX rather than a cubin
	Arch   string // the --gpu-architecture it was compiled for
	Cached bool   // read from the disk cache rather than compiled
	Key    string // the cache key: hex SHA-256 of source, headers, options, arch and NVRTC version
}

// Compiler compiles CUDA C++ with NVRTC and caches the results on disk, keyed by the source
// (with its headers and options), the architecture and the NVRTC version. It is safe for
// concurrent use; NVRTC calls are serialized.
type Compiler struct {
	nv       *cu.NVRTC
	lib      string
	major    int
	minor    int
	archs    []int // supported sm numbers (e.g. 90), ascending; nil when NVRTC cannot tell
	cacheDir string

	mu sync.Mutex
}

// NewCompiler loads NVRTC (libnvrtc.so.13 or .12, $CUDA_HOME/lib64, or $KVLAB_NVRTC) with
// the cache under os.UserCacheDir()/kvlab/cuda (or $KVLAB_CUDA_CACHE). A missing library
// is an error matching ErrNoCUDA that names the places tried.
func NewCompiler() (*Compiler, error) {
	nv, lib, err := cu.LoadNVRTC()
	if err != nil {
		return nil, &unavailable{msg: "no CUDA compiler (NVRTC) found: " + trimUnavailable(err) +
			" (set " + cu.NVRTCEnv + " to the path of libnvrtc.so)", err: err}
	}
	return NewCompilerWith(nv, lib, DefaultCacheDir())
}

// DefaultCacheDir is the compiled-kernel cache directory: $KVLAB_CUDA_CACHE when set ("" for
// "off"), else os.UserCacheDir()/kvlab/cuda, else "" (no cache).
func DefaultCacheDir() string {
	if d, ok := os.LookupEnv(CacheEnv); ok {
		if d == "off" {
			return ""
		}
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "kvlab", "cuda")
}

// NewCompilerWith builds a Compiler over a bound NVRTC table (lib names it in messages);
// cacheDir "" disables the disk cache.
func NewCompilerWith(nv *cu.NVRTC, lib, cacheDir string) (*Compiler, error) {
	c := &Compiler{nv: nv, lib: lib, cacheDir: cacheDir}
	var maj, mnr int32
	if r := nv.Version(&maj, &mnr); r != cu.NVRTCSuccess {
		return nil, c.err("nvrtcVersion", r, "", "", "")
	}
	c.major, c.minor = int(maj), int(mnr)
	if nv.NumArchs != nil && nv.Archs != nil {
		var n int32
		if nv.NumArchs(&n) == cu.NVRTCSuccess && n > 0 {
			a := make([]int32, n)
			if nv.Archs(&a[0]) == cu.NVRTCSuccess {
				for _, v := range a {
					c.archs = append(c.archs, int(v))
				}
				slices.Sort(c.archs)
			}
		}
	}
	return c, nil
}

// Version is NVRTC's version, e.g. "12.4".
func (c *Compiler) Version() string { return fmt.Sprintf("%d.%d", c.major, c.minor) }

// Library is the path or name of the NVRTC library in use.
func (c *Compiler) Library() string { return c.lib }

// BaseOptions are the NVRTC options every compile gets besides the architecture: C++17 and
// IEEE single-precision division and square root (the encoders rely on them; kernels opt
// into fast intrinsics explicitly).
var BaseOptions = []string{"-std=c++17", "--prec-div=true", "--prec-sqrt=true", "--ftz=false", "-DKVLAB_NVRTC=1"}

// Compile compiles src for the device of compute capability major.minor: a cubin for
// sm_<major><minor>, or, when this NVRTC does not list that architecture, PTX for the
// highest compute_XY it supports below it. Every compile error is a *CompileError carrying
// the program log. Results are cached on disk; a cached image that is unreadable is
// recompiled.
func (c *Compiler) Compile(src Source, major, minor int, extra ...string) (Image, error) {
	sm := major*10 + minor
	arch, ptx := fmt.Sprintf("sm_%d", sm), false
	if len(c.archs) > 0 && !slices.Contains(c.archs, sm) {
		lower := -1
		for _, a := range c.archs {
			if a <= sm {
				lower = a
			}
		}
		if lower < 0 {
			return Image{}, &CompileError{Op: "architecture", Msg: fmt.Sprintf("NVRTC %s supports none of sm_%d or below (supported: %v)", c.Version(), sm, c.archs), Program: src.Name, Arch: arch}
		}
		arch, ptx = fmt.Sprintf("compute_%d", lower), true
	}
	opts := append(append([]string{"--gpu-architecture=" + arch}, BaseOptions...), extra...)
	key := c.key(src, opts)
	img := Image{PTX: ptx, Arch: arch, Key: key}
	path := ""
	if c.cacheDir != "" {
		ext := ".cubin"
		if ptx {
			ext = ".ptx"
		}
		path = filepath.Join(c.cacheDir, key[:32]+ext)
		if b, err := os.ReadFile(path); err == nil && validImage(b, ptx) {
			img.Data, img.Cached = b, true
			return img, nil
		}
	}
	data, err := c.compile(src, opts, ptx, arch)
	if err != nil {
		return Image{}, err
	}
	img.Data = data
	if path != "" {
		_ = writeAtomic(path, data) // a cache that cannot be written only costs a recompile
	}
	return img, nil
}

// Forget removes the cached image of key (after the driver rejected it).
func (c *Compiler) Forget(img Image) {
	if c.cacheDir == "" || len(img.Key) < 32 {
		return
	}
	for _, ext := range []string{".cubin", ".ptx"} {
		os.Remove(filepath.Join(c.cacheDir, img.Key[:32]+ext))
	}
}

// CacheDir is the disk cache directory ("" when off).
func (c *Compiler) CacheDir() string { return c.cacheDir }

func (c *Compiler) key(src Source, opts []string) string {
	h := sha256.New()
	w := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	w("kvlab-cuda-cache-v1")
	w(c.Version())
	for _, o := range opts {
		w(o)
	}
	w(src.Name)
	w(src.Code)
	names := make([]string, 0, len(src.Headers))
	for n := range src.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w(n)
		w(src.Headers[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// validImage reports whether cached bytes look like what the cache stores: an ELF cubin, or
// PTX ending in NUL.
func validImage(b []byte, ptx bool) bool {
	if ptx {
		return len(b) > 1 && b[len(b)-1] == 0
	}
	return isELF(b)
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

// cStrings returns NUL-terminated copies of ss and an array of pointers to them; the caller
// pins every element while C reads them.
func cStrings(ss []string) ([][]byte, []*byte) {
	bufs := make([][]byte, len(ss))
	ptrs := make([]*byte, max(len(ss), 1))
	for i, s := range ss {
		bufs[i] = cu.CString(s)
		ptrs[i] = &bufs[i][0]
	}
	return bufs, ptrs
}

func (c *Compiler) compile(src Source, opts []string, ptx bool, arch string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pin runtime.Pinner
	defer pin.Unpin()
	names := make([]string, 0, len(src.Headers))
	for n := range src.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	bodies := make([]string, len(names))
	for i, n := range names {
		bodies[i] = src.Headers[n]
	}
	hb, hp := cStrings(bodies)
	nb, np := cStrings(names)
	ob, op := cStrings(opts)
	for _, group := range [][][]byte{hb, nb, ob} {
		for _, b := range group {
			pin.Pin(&b[0])
		}
	}
	pin.Pin(&hp[0])
	pin.Pin(&np[0])
	pin.Pin(&op[0])
	code, name := cu.CString(src.Code), cu.CString(src.Name)
	pin.Pin(&code[0])
	pin.Pin(&name[0])

	var prog cu.Program
	var hptr, nptr unsafe.Pointer
	if len(names) > 0 {
		hptr, nptr = unsafe.Pointer(&hp[0]), unsafe.Pointer(&np[0])
	}
	if r := c.nv.CreateProgram(&prog, &code[0], &name[0], int32(len(names)), hptr, nptr); r != cu.NVRTCSuccess {
		return nil, c.err("nvrtcCreateProgram", r, src.Name, arch, "")
	}
	defer c.nv.DestroyProgram(&prog)
	if r := c.nv.CompileProgram(prog, int32(len(opts)), unsafe.Pointer(&op[0])); r != cu.NVRTCSuccess {
		return nil, c.err("nvrtcCompileProgram", r, src.Name, arch, c.log(prog))
	}
	sizeFn, getFn, op2 := c.nv.CUBINSize, c.nv.CUBIN, "nvrtcGetCUBIN"
	if ptx {
		sizeFn, getFn, op2 = c.nv.PTXSize, c.nv.PTX, "nvrtcGetPTX"
	}
	var n uint64
	if r := sizeFn(prog, &n); r != cu.NVRTCSuccess {
		return nil, c.err(op2+"Size", r, src.Name, arch, c.log(prog))
	}
	if n == 0 {
		return nil, c.err(op2+"Size", cu.NVRTCCompilationError, src.Name, arch, "empty image\n"+c.log(prog))
	}
	out := make([]byte, n)
	pin.Pin(&out[0])
	if r := getFn(prog, &out[0]); r != cu.NVRTCSuccess {
		return nil, c.err(op2, r, src.Name, arch, c.log(prog))
	}
	return out, nil
}

func (c *Compiler) log(prog cu.Program) string {
	var n uint64
	if c.nv.LogSize(prog, &n) != cu.NVRTCSuccess || n <= 1 {
		return ""
	}
	b := make([]byte, n)
	var pin runtime.Pinner
	pin.Pin(&b[0])
	defer pin.Unpin()
	if c.nv.Log(prog, &b[0]) != cu.NVRTCSuccess {
		return ""
	}
	return cu.GoString(&b[0])
}

func (c *Compiler) err(op string, r cu.NVRTCResult, prog, arch, log string) error {
	msg := fmt.Sprintf("nvrtcResult %d", int32(r))
	if c.nv.ErrorString != nil {
		if s := c.nv.ErrorString(r); s != "" {
			msg = s
		}
	}
	return &CompileError{Op: op, Code: r, Msg: msg, Program: prog, Arch: arch, Log: log}
}

// LoadSource compiles src for the context's device with comp and loads the module. A cached
// image the driver rejects is dropped from the cache and compiled afresh once.
func (ctx *Context) LoadSource(comp *Compiler, src Source, extra ...string) (*Module, Image, error) {
	info := ctx.Info()
	img, err := comp.Compile(src, info.Major, info.Minor, extra...)
	if err != nil {
		return nil, img, err
	}
	m, err := ctx.LoadModule(img.Data)
	if err != nil && img.Cached && errors.Is(err, ErrInvalidImage) {
		comp.Forget(img)
		if img, err = comp.Compile(src, info.Major, info.Minor, extra...); err != nil {
			return nil, img, err
		}
		m, err = ctx.LoadModule(img.Data)
	}
	if err != nil {
		return nil, img, fmt.Errorf("cuda: load %s (%s): %w", src.Name, img.Arch, err)
	}
	return m, img, nil
}
