package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
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

// CheckModel reports whether the device forward pass covers a model of these
// hyperparameters: equal K and V head dimensions of 64, 128 or 256 (AttnDims) and at most
// MaxGroup query heads per KV head. The error matches ErrUnsupported and names the limit.
func CheckModel(hp model.Hparams) error {
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

// activations are a forward pass's device buffers for up to n tokens (float32, token-major):
// x, h n × Embd; q n × Heads·HeadDimK; k, v n × KVHeads·HeadDimK; a n × Heads·HeadDimV; gate,
// up n × FFN; tokens n int32; logits rows × Vocab (rows 1, or n when every position's
// logits are asked for).
type activations struct {
	n                                int
	x, h, q, k, v, a, gate, up, toks *cuda.Buffer
	logits                           *cuda.Buffer
	logitRows                        int
}

// Model is a llama-family model (native/model: llama, qwen2) on the device: its weights
// uploaded once by LoadModel, and a forward pass that runs as kernels on the legacy default
// stream, with the KV cache in a device Cache. Forward's only transfers are the token ids
// in and the logits out; nothing inside a layer waits for the host (except the overlay's
// slot table when the cache has an FP16 window or sinks, which Cache.WriteDevice copies up).
//
// A Model is safe for concurrent use: Forward calls are serialized, since they share the
// model's activations and the engine's scratch buffers. It must not be used concurrently
// with other work on the same Engine (Cache.Decode and Prefill share those scratch buffers).
type Model struct {
	e      *Engine
	hp     model.Hparams
	neox   bool
	embd   *weight
	output *weight // embd when the embeddings are tied
	norm   *cuda.Buffer
	freq   *cuda.Buffer
	layers []layerWeights
	batch  int
	info   UploadInfo
	bufs   []*cuda.Buffer // weights, then activations: everything Close frees
	// uploaded, when set, is told the file bytes of each matrix uploaded (LoadModel's progress).
	uploaded func(n int64)

	mu     sync.Mutex
	act    activations
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
	dm := &Model{e: e, hp: hp, neox: m.Arch.Rope == model.RopeNeox, batch: opts.Batch,
		info: UploadInfo{Types: map[string]int{}, Dequantized: map[string]int{}}}
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
	if m.freq, err = m.vector(w.RopeFreq); err != nil {
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
			if *x.dst, err = m.matrix(x.src); err != nil {
				return err
			}
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

// vector uploads float32 values; nil stays nil (an absent bias).
func (m *Model) vector(v []float32) (*cuda.Buffer, error) {
	if v == nil {
		return nil, nil
	}
	b, err := m.alloc(int64(len(v)) * 4)
	if err != nil {
		return nil, err
	}
	m.info.Bytes += b.Size()
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

// grow makes the activations hold n tokens and rows of logits.
func (m *Model) grow(n, logitRows int) error {
	hp := m.hp
	a := &m.act
	if a.n < n {
		for _, b := range []*cuda.Buffer{a.x, a.h, a.q, a.k, a.v, a.a, a.gate, a.up, a.toks} {
			m.free(b)
		}
		f := int64(n) * 4
		for _, s := range []struct {
			dst   **cuda.Buffer
			bytes int64
		}{
			{&a.x, f * int64(hp.Embd)}, {&a.h, f * int64(hp.Embd)}, {&a.q, f * int64(hp.Heads*hp.HeadDimK)},
			{&a.k, f * int64(hp.KVHeads*hp.HeadDimK)}, {&a.v, f * int64(hp.KVHeads*hp.HeadDimV)},
			{&a.a, f * int64(hp.Heads*hp.HeadDimV)}, {&a.gate, f * int64(hp.FFN)}, {&a.up, f * int64(hp.FFN)}, {&a.toks, f},
		} {
			var err error
			if *s.dst, err = m.alloc(s.bytes); err != nil {
				a.n = 0
				return fmt.Errorf("engine: activations for %d tokens: %w", n, err)
			}
		}
		a.n = n
	}
	if a.logitRows < logitRows {
		m.free(a.logits)
		var err error
		if a.logits, err = m.alloc(int64(logitRows) * int64(hp.Vocab) * 4); err != nil {
			a.logitRows = 0
			return fmt.Errorf("engine: logits for %d positions: %w", logitRows, err)
		}
		a.logitRows = logitRows
	}
	return nil
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
// One token decodes (Cache.Decode, the FP16 overlay included); several prefill in passes of
// up to ModelOptions.Batch tokens (Cache.Prefill over the bulk pools). Every input is checked
// before any device work: tokens outside the vocabulary, a cache of another geometry or
// engine, and tokens past the cache's capacity (an error wrapping kvcache.ErrKVFull) leave the
// cache as it was. A device failure midway leaves uncommitted cells in some layers; the next
// Commit then fails, and the cache must be freed.
func (m *Model) Forward(tokens []int32, c *Cache, logits []float32) error {
	hp := m.hp
	n := len(tokens)
	if n == 0 {
		return fmt.Errorf("engine: forward of no tokens")
	}
	if l := len(logits); l != 0 && l != hp.Vocab && l != n*hp.Vocab {
		return fmt.Errorf("engine: logits buffer of %d values: want 0, %d (last position) or %d (%d positions × %d)",
			l, hp.Vocab, n*hp.Vocab, n, hp.Vocab)
	}
	if c == nil || c.e != m.e {
		return fmt.Errorf("engine: the cache belongs to another engine")
	}
	cfg := c.Config()
	if cfg.Layers != hp.Layers || cfg.KVHeads != hp.KVHeads || cfg.HeadDimK != hp.HeadDimK || cfg.HeadDimV != hp.HeadDimV {
		return fmt.Errorf("engine: cache of %d layers × %d KV heads × %d/%d dims does not fit the model's %d × %d × %d/%d",
			cfg.Layers, cfg.KVHeads, cfg.HeadDimK, cfg.HeadDimV, hp.Layers, hp.KVHeads, hp.HeadDimK, hp.HeadDimV)
	}
	if p0 := c.Len(); p0+n > c.Cap() {
		return fmt.Errorf("engine: %d tokens at position %d: %w (capacity %d cells)", n, p0, kvcache.ErrKVFull, c.Cap())
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= hp.Vocab {
			return fmt.Errorf("engine: token %d at index %d is outside the vocabulary [0, %d)", t, i, hp.Vocab)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return cuda.ErrClosed
	}
	all := len(logits) == n*hp.Vocab && n > 1
	rows := 1
	if all {
		rows = min(n, m.batch)
	}
	if err := m.grow(min(n, m.batch), rows); err != nil {
		return err
	}
	for lo := 0; lo < n; lo += m.batch {
		hi := min(lo+m.batch, n)
		var out []float32
		switch {
		case all:
			out = logits[lo*hp.Vocab : hi*hp.Vocab]
		case len(logits) > 0 && hi == n:
			out = logits
		}
		if err := m.pass(tokens[lo:hi], c, out, all); err != nil {
			return err
		}
	}
	return nil
}

// pass runs one batch of n ≤ batch tokens (see native/model's pass): out receives the last
// position's logits (all false) or every position's (all true), or nothing when empty.
func (m *Model) pass(tokens []int32, c *Cache, out []float32, all bool) error {
	hp, a := m.hp, &m.act
	n, p0 := len(tokens), c.Len()
	e := hp.Embd
	if err := a.toks.Write(cuda.Bytes(tokens)); err != nil {
		return err
	}
	ek, err := m.e.kernel(EmbedKernel(m.embd.typ))
	if err != nil {
		return err
	}
	if err := ek.launch(cuda.D1(n), cuda.D1(256), 0, nil, cuda.Ptr(a.x), cuda.Ptr(m.embd.buf), cuda.Ptr(a.toks), cuda.Int(e)); err != nil {
		return err
	}
	scale := float32(1 / math.Sqrt(float64(hp.HeadDimK)))
	for l := range m.layers {
		w := &m.layers[l]
		steps := []func() error{
			func() error { return m.rmsNorm(a.h, a.x, w.attnNorm, 0, n) },
			func() error { return m.matVec(a.q, w.wq, a.h, w.bq, n, false) },
			func() error { return m.matVec(a.k, w.wk, a.h, w.bk, n, false) },
			func() error { return m.matVec(a.v, w.wv, a.h, w.bv, n, false) },
			func() error { return m.rope(a.q, n, p0, hp.Heads) },
			func() error { return m.rope(a.k, n, p0, hp.KVHeads) },
			func() error { return c.WriteDevice(l, a.k, a.v, n) },
			func() error {
				if n == 1 {
					return c.Decode(l, a.q, a.a, hp.Heads, scale)
				}
				return c.Prefill(l, a.q, a.a, n, p0, 0, hp.Heads, scale)
			},
			func() error { return m.matVec(a.x, w.wo, a.a, w.bo, n, true) },
			func() error { return m.rmsNorm(a.h, a.x, w.ffnNorm, 0, n) },
			func() error { return m.matVec(a.gate, w.gate, a.h, nil, n, false) },
			func() error { return m.matVec(a.up, w.up, a.h, nil, n, false) },
			func() error { return m.swiGLU(a.gate, a.up, n*hp.FFN) },
			func() error { return m.matVec(a.x, w.down, a.gate, nil, n, true) },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("engine: layer %d: %w", l, err)
			}
		}
	}
	if err := c.Commit(n); err != nil {
		return err
	}
	switch {
	case len(out) == 0:
		return nil
	case all:
		if err := m.rmsNorm(a.h, a.x, m.norm, 0, n); err != nil {
			return err
		}
		if err := m.matVec(a.logits, m.output, a.h, nil, n, false); err != nil {
			return err
		}
	default:
		if err := m.rmsNorm(a.h, a.x, m.norm, n-1, 1); err != nil {
			return err
		}
		if err := m.matVec(a.logits, m.output, a.h, nil, 1, false); err != nil {
			return err
		}
	}
	return a.logits.Read(cuda.Bytes(out))
}

// rmsNorm normalizes rows [from, from+rows) of x (Embd values each) into rows [0, rows) of out.
func (m *Model) rmsNorm(out, x, w *cuda.Buffer, from, rows int) error {
	k, err := m.e.kernel("rmsnorm")
	if err != nil {
		return err
	}
	e := m.hp.Embd
	return k.launch(cuda.D1(rows), cuda.D1(256), 0, nil, cuda.Ptr(out), cuda.PtrAt(x, int64(from)*int64(e)*4), cuda.Ptr(w),
		cuda.Int(e), cuda.F32(m.hp.RMSEps))
}

func (m *Model) matVec(y *cuda.Buffer, w *weight, x, bias *cuda.Buffer, n int, accumulate bool) error {
	return m.e.matVec(y, w, x, bias, n, accumulate)
}

// matVec computes y[t] = W·x[t] (+ bias) for n tokens, added to y when accumulate is set
// (mm.cu's matvec_body): grid (⌈rows/4⌉, ⌈n/NT⌉), block 128, NT = 1 for one token, else 8.
func (e *Engine) matVec(y *cuda.Buffer, w *weight, x, bias *cuda.Buffer, n int, accumulate bool) error {
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
		cuda.Ptr(y), cuda.Ptr(w.buf), cuda.Ptr(x), cuda.Ptr(bias), cuda.Int(w.rows), cuda.Int(w.cols), cuda.Int(n), cuda.Int(acc))
}

// rope rotates the heads of n tokens at positions p0… (x: n × heads × HeadDimK).
func (m *Model) rope(x *cuda.Buffer, n, p0, heads int) error {
	return m.e.Ops().RoPE(x, m.freq, n, p0, heads, m.hp.HeadDimK, m.hp.RopeDims, m.neox, m.hp.RopeScale)
}

func (m *Model) swiGLU(g, u *cuda.Buffer, n int) error { return m.e.Ops().SwiGLU(g, u, n) }
