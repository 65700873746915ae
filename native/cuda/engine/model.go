package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/kvcache"
	"github.com/kvlab/kvlab/native/kvq"
	"github.com/kvlab/kvlab/native/model"
)

// Geometry of the weight kernels (kernels/mm.cu).
const (
	matvecWarps   = 4                // rows per matvec block: one warp per row
	matvecThreads = 32 * matvecWarps // threads per matvec block
	prefillTokens = 8                // tokens per weight read in a prefill product
)

// DefaultBatch is the most tokens one prefill pass of a device Model runs when
// ModelOptions.Batch is 0 (native/model's default too).
const DefaultBatch = 512

// WeightTypes are the GGUF weight types the device kernels read in place, in their file
// layout; a matrix of any other type is dequantized at upload (see LoadModel).
var WeightTypes = []gguf.Type{gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0}

func nativeWeight(t gguf.Type) bool {
	for _, w := range WeightTypes {
		if w == t {
			return true
		}
	}
	return false
}

// MatVecKernel is the name of the matrix–vector kernel for weights of type t reading nt
// tokens per weight read (1 for decode, 8 for prefill).
func MatVecKernel(t gguf.Type, nt int) string { return fmt.Sprintf("matvec_%s_t%d", t, nt) }

// EmbedKernel is the name of the embedding-lookup kernel for a table of type t.
func EmbedKernel(t gguf.Type) string { return "embed_" + t.String() }

// DeviceOps are the operations beyond ml.Backend (model.ArchOps' names) the device backend
// has: ml.Gemma's. Its mixture-of-experts FFN (ml.MoE) is not named by ArchOps.
var DeviceOps = model.GemmaOps

// MissingOps are the operations architecture arch needs beyond ml.Backend (model.ArchOps)
// that the device backend lacks; nil when it has them all (the file's shape may still be
// outside the kernels': CheckModel).
func MissingOps(arch string) []string {
	var missing []string
	for _, op := range model.ArchOps(arch) {
		if !slices.Contains(DeviceOps, op) {
			missing = append(missing, op)
		}
	}
	return missing
}

// CheckModel reports whether the device forward pass covers a model of these
// hyperparameters: an architecture whose operations beyond ml.Backend (model.ArchOps) are all
// DeviceOps, equal K and V head dimensions of 64, 128 or 256 (AttnDims) and at most MaxGroup
// query heads per KV head. The error matches ErrUnsupported and names the limit.
func CheckModel(hp model.Hparams) error {
	if missing := MissingOps(hp.Arch); len(missing) > 0 {
		return fmt.Errorf("%w: %s needs operations the device backend does not have: %s", ErrUnsupported, hp.Arch, strings.Join(missing, ", "))
	}
	switch {
	case hp.HeadDimK != hp.HeadDimV:
		return fmt.Errorf("%w: K head dimension %d ≠ V head dimension %d", ErrUnsupported, hp.HeadDimK, hp.HeadDimV)
	case !containsInt(AttnDims, hp.HeadDimK):
		return fmt.Errorf("%w: head dimension %d (the attention kernels take %s)", ErrUnsupported, hp.HeadDimK, joinInts(AttnDims))
	case hp.KVHeads <= 0 || hp.Heads%hp.KVHeads != 0 || hp.Heads/hp.KVHeads > MaxGroup:
		return fmt.Errorf("%w: %d query heads on %d KV heads (1 to %d per KV head)", ErrUnsupported, hp.Heads, hp.KVHeads, MaxGroup)
	}
	return nil
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func joinInts(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	if len(parts) > 1 {
		return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return strings.Join(parts, "")
}

// ModelOptions configure LoadModel.
type ModelOptions struct {
	// Batch is the most tokens one prefill pass runs at once; the activations are sized for
	// it. 0 means DefaultBatch.
	Batch int
	// Progress, when set, is called as the matrices are uploaded with the file bytes done so
	// far and the total (model.Model.WeightBytes).
	Progress func(done, total int64)
}

// UploadInfo describes a model's weights on the device.
type UploadInfo struct {
	// Bytes is the device memory of the weights: matrices, norms, biases and RoPE
	// frequencies.
	Bytes int64 `json:"bytes"`
	// Types counts the matrices per device type ("q8_0": 224). A tied output matrix is the
	// embedding table and counts once.
	Types map[string]int `json:"types"`
	// Dequantized counts the matrices converted at upload, per file type ("q6_K": 1).
	Dequantized map[string]int `json:"dequantized,omitempty"`
}

// String is a one-line summary: "3.5 MiB: f32 ×29" or "4.1 GiB: q8_0 ×224, f16 ×1 (from
// q6_K ×1, dequantized at upload)".
func (u UploadInfo) String() string {
	var b strings.Builder
	b.WriteString(formatBytes(u.Bytes) + ": ")
	b.WriteString(countList(u.Types))
	if len(u.Dequantized) > 0 {
		b.WriteString(" (from " + countList(u.Dequantized) + ", dequantized at upload)")
	}
	return b.String()
}

func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// weight is one weight matrix on the device: rows × cols values in the GGUF row layout of
// typ (mm.cu), row r at byte r·typ.RowBytes(cols) of buf.
type weight struct {
	buf        *cuda.Buffer
	typ        gguf.Type // the device layout: one of WeightTypes
	rows, cols int
}

// layerWeights are one decoder block on the device; vectors are float32, biases nil when
// the file has none.
type layerWeights struct {
	attnNorm, ffnNorm              *cuda.Buffer
	wq, wk, wv, wo, gate, up, down *weight
	bq, bk, bv, bo                 *cuda.Buffer
}

// Model is a native/model model's weights on the device, uploaded once by LoadModel, and the
// model's architecture (its Arch.Forward, written once against native/ml) driven through
// this package's ml.Backend: every operation a kernel on the legacy default stream, with the
// KV cache in a device Cache. Forward's only transfers are the token ids in and the logits
// out; nothing inside a layer waits for the host (except the overlay's slot table when the
// cache has an FP16 window or sinks, which Cache.WriteDevice copies up).
//
// A Model is safe for concurrent use: Forward calls are serialized, since they share the
// model's activations and the engine's scratch buffers. It must not be used concurrently
// with other work on the same Engine (Cache.Decode and Prefill share those scratch buffers).
type Model struct {
	e      *Engine
	host   *model.Model
	hp     model.Hparams
	embd   *weight
	output *weight // embd when the embeddings are tied
	norm   *cuda.Buffer
	layers []layerWeights
	batch  int
	info   UploadInfo
	bufs   []*cuda.Buffer // weights, then activations: everything Close frees
	// uploaded, when set, is told the file bytes of each matrix uploaded (LoadModel's progress).
	uploaded func(n int64)

	// mats and vecs are the device copies of the host's weights, by the host's handles (a
	// vector by the address of its first value).
	mats map[*model.Matrix]*weight
	vecs map[*float32]*cuda.Buffer

	mu     sync.Mutex
	ml     backend
	closed bool
}

// LoadModel uploads m's weights to the device once. Matrices of a type the kernels read in
// place (WeightTypes: f32, f16, q8_0, q4_0) keep their GGUF bytes exactly; any other type
// (the K-quants, q4_1, q5_0, q5_1, bf16) is dequantized on the host, exactly as
// gguf.DequantizeRow does, and rounded to f16 (kept as f32 when a value lies outside f16's
// finite range), so its products differ from the CPU's by f16 rounding (2⁻¹¹ relative per
// weight). Vectors (norms, biases) are float32. The model must pass CheckModel. m stays
// usable on the CPU, and LoadModel keeps no reference to its memory.
func (e *Engine) LoadModel(m *model.Model, opts ModelOptions) (*Model, error) {
	hp := m.Hparams
	if err := CheckModel(hp); err != nil {
		return nil, err
	}
	if opts.Batch < 0 {
		return nil, fmt.Errorf("engine: batch %d must not be negative", opts.Batch)
	}
	dm := &Model{e: e, host: m, hp: hp, batch: opts.Batch,
		info: UploadInfo{Types: map[string]int{}, Dequantized: map[string]int{}},
		mats: map[*model.Matrix]*weight{}, vecs: map[*float32]*cuda.Buffer{}}
	dm.ml.m = dm
	if dm.batch == 0 {
		dm.batch = DefaultBatch
	}
	if opts.Progress != nil {
		total := m.WeightBytes()
		var done int64
		opts.Progress(0, total)
		dm.uploaded = func(n int64) {
			done += n
			opts.Progress(done, total)
		}
	}
	if err := dm.upload(m.Weights()); err != nil {
		dm.Close()
		return nil, err
	}
	return dm, nil
}

func (m *Model) upload(w model.Weights) error {
	var err error
	if m.embd, err = m.matrix(w.Embd); err != nil {
		return err
	}
	m.output = m.embd
	if w.Output != w.Embd {
		if m.output, err = m.matrix(w.Output); err != nil {
			return err
		}
	}
	if m.norm, err = m.vector(w.Norm); err != nil {
		return err
	}
	if _, err = m.vector(m.host.Rope().Freq); err != nil {
		return err
	}
	for l, b := range w.Blocks {
		var lw layerWeights
		for _, v := range []struct {
			dst **cuda.Buffer
			src []float32
		}{{&lw.attnNorm, b.AttnNorm}, {&lw.ffnNorm, b.FFNNorm}, {&lw.bq, b.Bq}, {&lw.bk, b.Bk}, {&lw.bv, b.Bv}, {&lw.bo, b.Bo}} {
			if *v.dst, err = m.vector(v.src); err != nil {
				return fmt.Errorf("engine: layer %d: %w", l, err)
			}
		}
		for _, x := range []struct {
			dst **weight
			src *model.Matrix
		}{{&lw.wq, b.Wq}, {&lw.wk, b.Wk}, {&lw.wv, b.Wv}, {&lw.wo, b.Wo}, {&lw.gate, b.Gate}, {&lw.up, b.Up}, {&lw.down, b.Down}} {
			if x.src == nil { // a mixture-of-experts block has no dense FFN
				continue
			}
			if *x.dst, err = m.matrix(x.src); err != nil {
				return err
			}
		}
		if err := m.uploadExperts(&b); err != nil {
			return fmt.Errorf("engine: layer %d: %w", l, err)
		}
		m.layers = append(m.layers, lw)
	}
	return nil
}

// alloc allocates a buffer that Close frees.
func (m *Model) alloc(bytes int64) (*cuda.Buffer, error) {
	b, err := m.e.ctx.Alloc(bytes)
	if err != nil {
		return nil, err
	}
	m.bufs = append(m.bufs, b)
	return b, nil
}

// vector is the device copy of float32 values, uploaded on first use (LoadModel's weights, and
// an Arch.Layer weight the architecture reads later) and found again by the host slice; nil
// stays nil (an absent bias).
func (m *Model) vector(v []float32) (*cuda.Buffer, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if b := m.vecs[&v[0]]; b != nil && b.Size() >= int64(len(v))*4 {
		return b, nil
	}
	b, err := m.alloc(int64(len(v)) * 4)
	if err != nil {
		return nil, err
	}
	m.info.Bytes += b.Size()
	m.vecs[&v[0]] = b
	return b, b.Write(cuda.Bytes(v))
}

// convertChunk is the most bytes of converted rows dequantized and uploaded at a time.
const convertChunk = 16 << 20

// matrix uploads one weight matrix (see LoadModel for the layouts).
func (m *Model) matrix(src *model.Matrix) (*weight, error) {
	w := &weight{typ: src.Type, rows: src.Rows, cols: src.Cols}
	if nativeWeight(src.Type) {
		b, err := m.alloc(int64(len(src.Data)))
		if err != nil {
			return nil, fmt.Errorf("engine: tensor %q: %w", src.Name, err)
		}
		if err := b.Write(src.Data); err != nil {
			return nil, fmt.Errorf("engine: tensor %q: %w", src.Name, err)
		}
		w.buf = b
	} else {
		if err := m.convert(w, src, gguf.F16); errors.Is(err, errF16Range) {
			err = m.convert(w, src, gguf.F32)
		} else if err != nil {
			return nil, err
		}
		m.info.Dequantized[src.Type.String()]++
	}
	m.info.Bytes += w.buf.Size()
	m.info.Types[w.typ.String()]++
	m.mats[src] = w
	if m.uploaded != nil {
		m.uploaded(int64(len(src.Data)))
	}
	return w, nil
}

var errF16Range = errors.New("a value outside f16's finite range")

// convert dequantizes src into the device layout typ (F16 or F32), chunk by chunk, into a
// new buffer of w. For F16 it fails with errF16Range (freeing the buffer) at the first value
// f16 cannot hold.
func (m *Model) convert(w *weight, src *model.Matrix, typ gguf.Type) error {
	rb := int64(typ.RowBytes(uint64(src.Cols)))
	b, err := m.e.ctx.Alloc(int64(src.Rows) * rb)
	if err != nil {
		return fmt.Errorf("engine: tensor %q: %w", src.Name, err)
	}
	rowsPer := max(1, int(convertChunk/rb))
	host := make([]byte, int64(min(rowsPer, src.Rows))*rb)
	for r0 := 0; r0 < src.Rows; r0 += rowsPer {
		r1 := min(r0+rowsPer, src.Rows)
		chunk := host[:int64(r1-r0)*rb]
		if err := convertRows(src, typ, r0, r1, chunk); err != nil {
			b.Free()
			return err
		}
		if err := b.WriteAt(chunk, int64(r0)*rb); err != nil {
			b.Free()
			return fmt.Errorf("engine: tensor %q: %w", src.Name, err)
		}
	}
	m.bufs = append(m.bufs, b)
	w.buf, w.typ = b, typ
	return nil
}

// convertRows writes rows [r0, r1) of src, dequantized exactly (gguf.DequantizeRow), into dst
// in layout typ: F32 (4 bytes a value) or F16 (2 bytes, rounded to nearest even). For F16 a
// value outside f16's finite range fails with an error. Rows are converted on up to
// GOMAXPROCS goroutines.
func convertRows(src *model.Matrix, typ gguf.Type, r0, r1 int, dst []byte) error {
	if typ != gguf.F16 && typ != gguf.F32 {
		return fmt.Errorf("engine: convert to %s: want f16 or f32", typ)
	}
	rb := int(typ.RowBytes(uint64(src.Cols)))
	if len(dst) != (r1-r0)*rb {
		return fmt.Errorf("engine: convert of %d rows needs %d bytes, have %d", r1-r0, (r1-r0)*rb, len(dst))
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), (r1-r0+63)/64))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (r1 - r0 + workers - 1) / workers
	for k := 0; k < workers; k++ {
		lo, hi := r0+k*per, min(r0+(k+1)*per, r1)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(k, lo, hi int) {
			defer wg.Done()
			vals := make([]float32, src.Cols)
			for r := lo; r < hi; r++ {
				if err := gguf.DequantizeRow(src.Type, src.Row(r), vals); err != nil {
					errs[k] = fmt.Errorf("engine: tensor %q row %d: %w", src.Name, r, err)
					return
				}
				out := dst[(r-r0)*rb : (r-r0+1)*rb]
				for i, v := range vals {
					if typ == gguf.F32 {
						binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
						continue
					}
					h := kvq.F32ToF16(v)
					if h&0x7fff == 0x7c00 && !math.IsInf(float64(v), 0) {
						errs[k] = fmt.Errorf("engine: tensor %q row %d: %g: %w", src.Name, r, v, errF16Range)
						return
					}
					binary.LittleEndian.PutUint16(out[2*i:], h)
				}
			}
		}(k, lo, hi)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Hparams are the model's hyperparameters.
func (m *Model) Hparams() model.Hparams { return m.hp }

// Upload describes the weights on the device.
func (m *Model) Upload() UploadInfo { return m.info }

// Engine is the engine the model lives on.
func (m *Model) Engine() *Engine { return m.e }

// CacheConfig is a kvcache configuration of the model's geometry for pair and maxCells cells
// (native/model's CacheConfig); the caller sets the overlay, gain and seed.
func (m *Model) CacheConfig(pair kvq.Pair, maxCells int) kvcache.Config {
	hp := m.hp
	return kvcache.Config{Layers: hp.Layers, KVHeads: hp.KVHeads, HeadDimK: hp.HeadDimK, HeadDimV: hp.HeadDimV,
		Pair: pair, MaxCells: maxCells}
}

// Close frees the model's device memory. It is idempotent; it waits for a Forward in
// progress.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var first error
	for _, b := range m.bufs {
		if err := b.Free(); err != nil && first == nil && !errors.Is(err, cuda.ErrClosed) {
			first = err
		}
	}
	m.bufs = nil
	return first
}

// free releases b and forgets it.
func (m *Model) free(b *cuda.Buffer) {
	if b == nil {
		return
	}
	b.Free()
	for i, x := range m.bufs {
		if x == b {
			m.bufs = append(m.bufs[:i], m.bufs[i+1:]...)
			break
		}
	}
}

// Forward runs tokens through the model at positions c.Len() … c.Len()+len(tokens)−1 on the
// device, stores their keys and values in c (quantized on write in c's format pair),
// commits them, and copies logits back, with native/model's Forward contract:
//
//	len(logits) == 0                  no logits
//	len(logits) == Vocab              the last position's logits
//	len(logits) == len(tokens)·Vocab  every position's logits, position-major
//
// The pass is the host model's architecture (model.Model.Run) over this package's
// ml.Backend. One token decodes (Cache.Decode, the FP16 overlay included); several prefill in
// passes of up to ModelOptions.Batch tokens (Cache.Prefill over the bulk pools). Every input
// is checked before any device work: tokens outside the vocabulary, a cache of another
// geometry or engine, and tokens past the cache's capacity (an error wrapping
// kvcache.ErrKVFull) leave the cache as it was. A device failure midway leaves uncommitted
// cells in some layers; the next Commit then fails, and the cache must be freed.
func (m *Model) Forward(tokens []int32, c *Cache, logits []float32) error {
	if c == nil || c.e != m.e {
		return fmt.Errorf("engine: the cache belongs to another engine")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return cuda.ErrClosed
	}
	return m.host.Run(&m.ml, c, tokens, logits, m.batch)
}

// matVec computes y[t] = W·x[t] (+ bias) for n tokens, added to y when accumulate is set
// (mm.cu's matvec_body): grid (⌈rows/4⌉, ⌈n/NT⌉), block 128, NT = 1 for one token, else 8.
func (e *Engine) matVec(y *cuda.Buffer, w *weight, x, bias *cuda.Buffer, n int, accumulate bool) error {
	return e.matVecAt(cuda.Ptr(y), w, cuda.Ptr(x), bias, n, accumulate)
}

// matVecAt is matVec with y and x given as device addresses (views).
func (e *Engine) matVecAt(y cuda.Arg, w *weight, x cuda.Arg, bias *cuda.Buffer, n int, accumulate bool) error {
	nt := 1
	if n > 1 {
		nt = prefillTokens
	}
	k, err := e.kernel(MatVecKernel(w.typ, nt))
	if err != nil {
		return err
	}
	acc := 0
	if accumulate {
		acc = 1
	}
	return k.launch(cuda.D2((w.rows+matvecWarps-1)/matvecWarps, (n+nt-1)/nt), cuda.D1(matvecThreads), 0, nil,
		y, cuda.Ptr(w.buf), x, cuda.Ptr(bias), cuda.Int(w.rows), cuda.Int(w.cols), cuda.Int(n), cuda.Int(acc))
}
