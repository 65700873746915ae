// Package engine runs kvlab's KV-cache work on a CUDA device through the typed layer of
// native/cuda: a device KV cache in any supported kvq format pair with quantize-on-write
// (bit-exact with native/kvq), decode attention that reads the packed cache in registers
// (flash-decoding splits, grouped query heads, the FP16 window + sinks overlay, an exact
// combine), prefill attention, the row-wise layers of a forward pass (Ops), and native/ml's
// operations as kernels (ml.go), which a native/model architecture drives (Model: weights
// uploaded once in their GGUF layout, matrix–vector kernels that read them in place, logits
// copied back for host sampling). The engine holds no transformer block of its own.
//
// Every kernel launch is checked against the kernel's C signature, parsed from its source,
// before it reaches the driver, so a Go/C argument mismatch is an error, not a corrupted
// launch. An Engine's kernel loading is safe for concurrent use, but the work of its caches
// and models (Cache.Write, Decode and Prefill, Model.Forward) shares the engine's scratch
// buffers and the default stream: run it from one goroutine at a time. A Cache is not safe
// for concurrent use (as kvcache.Cache).
package engine

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/kvlab/kvlab/kernels"
	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/kvq"
)

// ErrUnsupported is returned for a format, head dimension or head grouping the device
// kernels do not cover; the message names what is supported.
var ErrUnsupported = errors.New("engine: unsupported on the GPU")

// Engine owns the compiled kernels of one device context.
type Engine struct {
	ctx  *cuda.Context
	comp *cuda.Compiler
	info cuda.DeviceInfo

	mu      sync.Mutex
	modules map[string]*cuda.Module
	kerns   map[string]*kernel
	images  []cuda.Image
	scratch map[string]*cuda.Buffer
	ownsCtx bool
	// splitBlocks, when positive, replaces SMs × resident blocks in the decode split plan
	// (tests use it to force long splits on small caches).
	splitBlocks int
}

// New returns an engine over an open context and a compiler. The engine does not own them:
// Close frees the engine's modules and scratch buffers only.
func New(ctx *cuda.Context, comp *cuda.Compiler) *Engine {
	return &Engine{ctx: ctx, comp: comp, info: ctx.Info(), modules: map[string]*cuda.Module{},
		kerns: map[string]*kernel{}, scratch: map[string]*cuda.Buffer{}}
}

// Open opens device ordinal and NVRTC and returns an engine that owns both (Close releases
// them). Without a driver the error matches cuda.ErrNoCUDA.
func Open(ordinal int) (*Engine, error) {
	ctx, err := cuda.Open(ordinal)
	if err != nil {
		return nil, err
	}
	comp, err := cuda.NewCompiler()
	if err != nil {
		ctx.Close()
		return nil, err
	}
	e := New(ctx, comp)
	e.ownsCtx = true
	return e, nil
}

// Context is the engine's device context.
func (e *Engine) Context() *cuda.Context { return e.ctx }

// Info describes the device.
func (e *Engine) Info() cuda.DeviceInfo { return e.info }

// Compiler is the engine's NVRTC compiler.
func (e *Engine) Compiler() *cuda.Compiler { return e.comp }

// Images lists the modules compiled or read from the cache so far, in load order.
func (e *Engine) Images() []cuda.Image {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]cuda.Image(nil), e.images...)
}

// Close unloads the engine's modules and frees its scratch buffers (and closes the context
// when Open made it).
func (e *Engine) Close() error {
	e.mu.Lock()
	mods, scr := e.modules, e.scratch
	e.modules, e.kerns, e.scratch = map[string]*cuda.Module{}, map[string]*kernel{}, map[string]*cuda.Buffer{}
	e.mu.Unlock()
	var first error
	for _, b := range scr {
		if err := b.Free(); err != nil && first == nil {
			first = err
		}
	}
	for _, m := range mods {
		if err := m.Close(); err != nil && first == nil {
			first = err
		}
	}
	if e.ownsCtx {
		if err := e.ctx.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// kernel is a loaded kernel with its C parameters.
type kernel struct {
	fn     *cuda.Function
	params []kernels.Param

	mu  sync.Mutex
	occ map[[2]int]int // resident blocks per SM by (threads, shared bytes)
}

// occupancy is fn.Occupancy, remembered per shape.
func (k *kernel) occupancy(threads, shared int) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n, ok := k.occ[[2]int{threads, shared}]; ok {
		return n, nil
	}
	n, err := k.fn.Occupancy(threads, shared)
	if err != nil {
		return 0, err
	}
	if k.occ == nil {
		k.occ = map[[2]int]int{}
	}
	k.occ[[2]int{threads, shared}] = n
	return n, nil
}

// launch checks args against the kernel's C signature and launches.
func (k *kernel) launch(grid, block cuda.Dim3, shared int, s *cuda.Stream, args ...cuda.Arg) error {
	if err := checkArgs(k.fn.Name(), k.params, args); err != nil {
		return err
	}
	return cuda.Launch{Func: k.fn, Grid: grid, Block: block, Shared: shared, Stream: s, Args: args}.Run()
}

// checkArgs reports a mismatch between Go arguments and C parameters: the count, and per
// argument pointer-ness, float-ness and size.
func checkArgs(name string, params []kernels.Param, args []cuda.Arg) error {
	if len(params) != len(args) {
		return fmt.Errorf("%w: %s takes %d arguments, given %d", cuda.ErrBadLaunch, name, len(params), len(args))
	}
	for i, p := range params {
		a := args[i]
		ok := a.Kind.Size() == p.Size
		switch {
		case p.Pointer():
			ok = ok && a.Kind == cuda.KindPtr
		case p.Float():
			ok = ok && a.Kind == cuda.KindF32
		default:
			ok = ok && a.Kind != cuda.KindPtr && a.Kind != cuda.KindF32
		}
		if !ok {
			return fmt.Errorf("%w: %s argument %d is %s, the kernel declares %q", cuda.ErrBadLaunch, name, i, a.Kind, p.Decl)
		}
	}
	return nil
}

// kernel returns the named kernel, compiling and loading its module on first use: a .cu file
// of kernels/ for the fixed kernels, a generated instantiation for decode and prefill.
func (e *Engine) kernel(name string) (*kernel, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if k, ok := e.kerns[name]; ok {
		return k, nil
	}
	src, key, err := Source(name)
	if err != nil {
		return nil, err
	}
	m, ok := e.modules[key]
	if !ok {
		var img cuda.Image
		m, img, err = e.ctx.LoadSource(e.comp, src)
		if err != nil {
			return nil, err
		}
		e.modules[key] = m
		e.images = append(e.images, img)
	}
	fn, err := m.Function(name)
	if err != nil {
		return nil, err
	}
	k := &kernel{fn: fn, params: kernels.Signatures(src.Code)[name]}
	e.kerns[name] = k
	return k, nil
}

// Source returns the NVRTC source that defines kernel name, and the key of its module (the
// .cu file, or the kernel name for a generated instantiation).
func Source(name string) (cuda.Source, string, error) {
	if code, ok := instantiation(name); ok {
		return cuda.Source{Name: name + ".cu", Code: code, Headers: kernels.Headers()}, name, nil
	}
	file := kernels.ModuleOf(name)
	if file == "" {
		return cuda.Source{}, "", fmt.Errorf("engine: no kernel %q in kernels/", name)
	}
	code, err := kernels.Read(file)
	if err != nil {
		return cuda.Source{}, "", err
	}
	return cuda.Source{Name: file, Code: code, Headers: kernels.Headers()}, file, nil
}

// The device formats and their kernel names and constants (common.cuh's KvFormat).
var deviceFormats = map[kvq.Format]string{
	kvq.F16: "KV_F16", kvq.Q8_0: "KV_Q8_0", kvq.Q4_0: "KV_Q4_0", kvq.Q5_1: "KV_Q5_1",
	kvq.FP8: "KV_FP8", kvq.TQ4: "KV_TQ4", kvq.Q2K: "KV_Q2K",
}

// Formats lists the formats the device kernels store and read.
func Formats() []kvq.Format {
	var out []kvq.Format
	for _, f := range kvq.Formats() {
		if _, ok := deviceFormats[f]; ok {
			out = append(out, f)
		}
	}
	return out
}

// AttnDims are the head dimensions the attention kernels are built for.
var AttnDims = []int{64, 128, 256}

// MaxGroup is the most query heads per KV head a decode kernel takes.
const MaxGroup = 16

// CheckPair reports whether the device kernels cover pair p at head dimension d.
func CheckPair(p kvq.Pair, d int) error {
	for _, f := range []kvq.Format{p.K, p.V} {
		if _, ok := deviceFormats[f]; !ok {
			return fmt.Errorf("%w: format %s (the GPU stores %v)", ErrUnsupported, f, Formats())
		}
	}
	if p.V == kvq.Q2K {
		return fmt.Errorf("%w: q2k stores K only", ErrUnsupported)
	}
	if d != 64 && d != 128 && d != 256 {
		return fmt.Errorf("%w: head dimension %d (the attention kernels take %v)", ErrUnsupported, d, AttnDims)
	}
	return nil
}

// DecodeKernel is the name of the decode kernel for K format k, V format v, head dimension d
// and g query heads per KV head.
func DecodeKernel(k, v kvq.Format, d, g int) string {
	return fmt.Sprintf("kv_decode_%s_%s_d%d_g%d", k, v, d, g)
}

// PrefillKernel is the name of the prefill kernel for formats k and v at head dimension d.
func PrefillKernel(k, v kvq.Format, d int) string {
	return fmt.Sprintf("kv_prefill_%s_%s_d%d", k, v, d)
}

var instRE = regexp.MustCompile(`^kv_(decode|prefill)_([a-z0-9_]+)_d(\d+)(?:_g(\d+))?$`)

// splitPair splits "q8_0_q4_0" into the two formats it names (format names contain "_").
func splitPair(s string) (k, v kvq.Format, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] != '_' {
			continue
		}
		kf, err1 := kvq.Parse(s[:i])
		vf, err2 := kvq.Parse(s[i+1:])
		if err1 == nil && err2 == nil && kf.String() == s[:i] && vf.String() == s[i+1:] {
			return kf, vf, true
		}
	}
	return 0, 0, false
}

// decodeParams and prefillParams are the C parameter lists of the generated kernels.
const (
	decodeParams  = "const float* q, const u8* kpool, const u8* vpool, const int* owner, int sinks, int window, float* part_o, float* part_ml, int n, int limit, int cap, int cps, int nsplit, int split0, int mode, float qscale, int lo, float cap2"
	decodeCall    = "q, kpool, vpool, owner, sinks, window, part_o, part_ml, n, limit, cap, cps, nsplit, split0, mode, qscale, lo, cap2"
	prefillParams = "float* out, const float* q, const u8* kpool, const u8* vpool, int nq, int p0, int window, int heads, int kvheads, int cap, float qscale, float cap2"
	prefillCall   = "out, q, kpool, vpool, nq, p0, window, heads, kvheads, cap, qscale, cap2"
)

// instantiation generates the translation unit of a decode or prefill kernel name.
func instantiation(name string) (string, bool) {
	m := instRE.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	kf, vf, ok := splitPair(m[2])
	d, _ := strconv.Atoi(m[3])
	if !ok || CheckPair(kvq.Pair{K: kf, V: vf}, d) != nil {
		return "", false
	}
	kc, vc := deviceFormats[kf], deviceFormats[vf]
	if m[1] == "decode" {
		g, _ := strconv.Atoi(m[4])
		if g < 1 || g > MaxGroup {
			return "", false
		}
		return fmt.Sprintf("// generated by native/cuda/engine\n#include \"kv_attn.cuh\"\n\nextern \"C\" __global__ void %s(%s) {\n  decode_body<%s, %s, %d, %d>(%s);\n}\n",
			name, decodeParams, kc, vc, d, g, decodeCall), true
	}
	if m[4] != "" {
		return "", false
	}
	return fmt.Sprintf("// generated by native/cuda/engine\n#include \"kv_attn.cuh\"\n\nextern \"C\" __global__ void %s(%s) {\n  prefill_body<%s, %s, %d>(%s);\n}\n",
		name, prefillParams, kc, vc, d, prefillCall), true
}

// buffer returns the engine's scratch buffer named name with at least bytes bytes, growing
// it when needed. Scratch buffers live until Close.
func (e *Engine) buffer(name string, bytes int64) (*cuda.Buffer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.scratch[name]; ok && b.Size() >= bytes {
		return b, nil
	} else if ok {
		b.Free()
		delete(e.scratch, name)
	}
	b, err := e.ctx.Alloc(max(bytes, 256))
	if err != nil {
		return nil, err
	}
	e.scratch[name] = b
	return b, nil
}
