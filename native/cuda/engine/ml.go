package engine

import (
	"fmt"

	"github.com/kvlab/kvlab/native/cuda"
	"github.com/kvlab/kvlab/native/ml"
	"github.com/kvlab/kvlab/native/model"
)

// tensor is an activation on the device: rows × cols float32 at byte off of buf.
type tensor struct {
	buf        *cuda.Buffer
	off        int64
	rows, cols int
}

func (t *tensor) Rows() int { return t.rows }
func (t *tensor) Cols() int { return t.cols }

func (t *tensor) ptr() cuda.Arg { return cuda.PtrAt(t.buf, t.off) }

// whole is the tensor's buffer when the tensor starts at its byte 0 (what the cache's
// kernels take), or an error.
func (t *tensor) whole() (*cuda.Buffer, error) {
	if t.off != 0 {
		return nil, fmt.Errorf("engine: a view at byte %d where a whole buffer is needed", t.off)
	}
	return t.buf, nil
}

// backend is native/ml on the device for one Model: every operation is a kernel launch on the
// default stream over the model's uploaded weights (found by the host model's handles) and
// its Cache. Scratch tensors are device buffers reused from pass to pass (the i-th New of a
// pass takes slot i), so a pass allocates nothing once the slots have grown; the token ids are
// the pass's one host-to-device copy, the logits its one copy back.
type backend struct {
	m       *Model
	bt      *ml.Batch
	cache   *Cache
	toks    *cuda.Buffer
	ntoks   int
	slots   []*cuda.Buffer
	nslot   int
	logits  *cuda.Buffer
	tensors []*tensor
	nt      int
	err     error
	moe     moeHost
}

func (b *backend) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

func (b *backend) Err() error { return b.err }

// Begin checks that the batch is consecutive positions of one device cache and copies its
// token ids up.
func (b *backend) Begin(bt *ml.Batch) error {
	b.bt, b.nslot, b.nt, b.err = bt, 0, 0, nil
	if len(bt.Caches) != 1 {
		return fmt.Errorf("engine: a pass over %d sequences (the device runs one at a time)", len(bt.Caches))
	}
	c, ok := bt.Caches[0].(*Cache)
	if !ok || c.e != b.m.e {
		return fmt.Errorf("engine: the cache belongs to another engine")
	}
	b.cache = c
	for i := range bt.Tokens {
		if bt.Seq[i] != 0 || int(bt.Pos[i]) != c.Len()+i {
			return fmt.Errorf("engine: token %d of the pass is at sequence %d position %d: the device runs consecutive positions of one sequence from %d",
				i, bt.Seq[i], bt.Pos[i], c.Len())
		}
	}
	n := len(bt.Tokens)
	if b.ntoks < n {
		b.m.free(b.toks)
		b.toks, b.ntoks = nil, 0
		t, err := b.m.alloc(int64(n) * 4)
		if err != nil {
			return fmt.Errorf("engine: token ids for %d tokens: %w", n, err)
		}
		b.toks, b.ntoks = t, n
	}
	return b.toks.Write(cuda.Bytes(bt.Tokens))
}

func (b *backend) tensor(buf *cuda.Buffer, off int64, rows, cols int) *tensor {
	if b.nt == len(b.tensors) {
		b.tensors = append(b.tensors, new(tensor))
	}
	t := b.tensors[b.nt]
	b.nt++
	*t = tensor{buf: buf, off: off, rows: rows, cols: cols}
	return t
}

// New takes the pass's next slot, growing it to rows × cols.
func (b *backend) New(rows, cols int) ml.Tensor {
	if b.nslot == len(b.slots) {
		b.slots = append(b.slots, nil)
	}
	i := b.nslot
	b.nslot++
	need := int64(rows) * int64(cols) * 4
	if s := b.slots[i]; s == nil || s.Size() < need {
		b.m.free(s)
		b.slots[i] = nil
		s, err := b.m.alloc(need)
		if err != nil {
			b.fail(fmt.Errorf("engine: activations of %d×%d: %w", rows, cols, err))
		} else {
			b.slots[i] = s
		}
	}
	return b.tensor(b.slots[i], 0, rows, cols)
}

func (b *backend) View(x ml.Tensor, row0, rows int) ml.Tensor {
	t := x.(*tensor)
	return b.tensor(t.buf, t.off+int64(row0)*int64(t.cols)*4, rows, t.cols)
}

func (b *backend) Reshape(x ml.Tensor, rows, cols int) ml.Tensor {
	t := x.(*tensor)
	if rows*cols != t.rows*t.cols {
		b.fail(fmt.Errorf("engine: reshape of %d×%d to %d×%d", t.rows, t.cols, rows, cols))
		return t
	}
	return b.tensor(t.buf, t.off, rows, cols)
}

// ready is false after the pass's first error.
func (b *backend) ready() bool { return b.err == nil }

// mat and vec are the device copies of host weights.
func (b *backend) mat(w ml.Matrix) *weight {
	d := b.m.mats[w.(*model.Matrix)]
	if d == nil {
		b.fail(fmt.Errorf("engine: weight matrix %q is not on the device", w.(*model.Matrix).Name))
	}
	return d
}

func (b *backend) vec(v ml.Vector) *cuda.Buffer {
	if v == nil {
		return nil
	}
	d, err := b.m.vector(v)
	if err != nil {
		b.fail(err)
	}
	return d
}

func (b *backend) launch(name string, grid, block cuda.Dim3, args ...cuda.Arg) {
	if !b.ready() {
		return
	}
	k, err := b.m.e.kernel(name)
	if err == nil {
		err = k.launch(grid, block, 0, nil, args...)
	}
	if err != nil {
		b.fail(err)
	}
}

func (b *backend) Embed(dst ml.Tensor, table ml.Matrix) {
	w, x := b.mat(table), dst.(*tensor)
	if !b.ready() {
		return
	}
	b.launch(EmbedKernel(w.typ), cuda.D1(x.rows), cuda.D1(256), x.ptr(), cuda.Ptr(w.buf), cuda.Ptr(b.toks), cuda.Int(x.cols))
}

func (b *backend) MatMul(dst ml.Tensor, w ml.Matrix, x ml.Tensor, bias ml.Vector) {
	b.matVec(dst, w, x, bias, false)
}

// MatMulAdd is the fused dst += W·x (+ bias): mm.cu's accumulate flag.
func (b *backend) MatMulAdd(dst ml.Tensor, w ml.Matrix, x ml.Tensor, bias ml.Vector) {
	b.matVec(dst, w, x, bias, true)
}

func (b *backend) matVec(dst ml.Tensor, w ml.Matrix, x ml.Tensor, bias ml.Vector, accumulate bool) {
	dw, bb := b.mat(w), b.vec(bias)
	if !b.ready() {
		return
	}
	if err := b.m.e.matVecAt(dst.(*tensor).ptr(), dw, x.(*tensor).ptr(), bb, x.Rows(), accumulate); err != nil {
		b.fail(err)
	}
}

func (b *backend) RMSNorm(dst, x ml.Tensor, w ml.Vector, eps float32) {
	wb, in := b.vec(w), x.(*tensor)
	b.launch("rmsnorm", cuda.D1(in.rows), cuda.D1(256), dst.(*tensor).ptr(), in.ptr(), cuda.Ptr(wb), cuda.Int(in.cols), cuda.F32(eps))
}

// RoPE is kernels' rope at the pass's first position (the positions are consecutive), with
// the magnitude MScale.
func (b *backend) RoPE(x ml.Tensor, heads int, r *ml.Rope) {
	freq, t := b.vec(r.Freq), x.(*tensor)
	if !b.ready() || len(b.bt.Pos) == 0 {
		return
	}
	nx := 0
	if r.Style == ml.RopeNeox {
		nx = 1
	}
	b.launch("rope", cuda.D2(t.rows, heads), cuda.D1(64), t.ptr(), cuda.Ptr(freq), cuda.Int(int(b.bt.Pos[0])), cuda.Int(heads),
		cuda.Int(t.cols/heads), cuda.Int(r.Dims), cuda.Int(nx), cuda.F32(r.Scale), cuda.F32(r.MScale))
}

func (b *backend) SwiGLU(gate, up ml.Tensor) {
	g := gate.(*tensor)
	n := g.rows * g.cols
	b.launch("swiglu", cuda.D1((n+255)/256), cuda.D1(256), g.ptr(), up.(*tensor).ptr(), cuda.Int(n))
}

func (b *backend) Add(x, y ml.Tensor) {
	t := x.(*tensor)
	n := t.rows * t.cols
	b.launch("add", cuda.D1((n+255)/256), cuda.D1(256), t.ptr(), y.(*tensor).ptr(), cuda.Int(n))
}

func (b *backend) Attention(out, q, k, v ml.Tensor, layer int, scale float32) {
	b.attention(out, q, k, v, layer, scale, ml.AttnOptions{})
}

// attention is Attention with AttentionOpts' window and soft-cap.
func (b *backend) attention(out, q, k, v ml.Tensor, layer int, scale float32, o ml.AttnOptions) {
	if !b.ready() {
		return
	}
	qt := q.(*tensor)
	bufs := make([]*cuda.Buffer, 0, 4)
	for _, t := range []ml.Tensor{out, q, k, v} {
		buf, err := t.(*tensor).whole()
		if err != nil {
			b.fail(err)
			return
		}
		bufs = append(bufs, buf)
	}
	n, c := qt.rows, b.cache
	heads := qt.cols / c.Config().HeadDimK
	p0 := c.Len()
	var err error
	if err = c.WriteDevice(layer, bufs[2], bufs[3], n); err == nil {
		if n == 1 {
			err = c.DecodeOpts(layer, bufs[1], bufs[0], heads, scale, o.Window, o.SoftCap)
		} else {
			err = c.PrefillOpts(layer, bufs[1], bufs[0], n, p0, o.Window, heads, scale, o.SoftCap)
		}
	}
	if err != nil {
		b.fail(fmt.Errorf("engine: layer %d: %w", layer, err))
	}
}

// Logits runs the output product into the logits buffer and copies it to the batch's Out.
func (b *backend) Logits(x ml.Tensor, w ml.Matrix) {
	h := x.(*tensor)
	dw := b.mat(w)
	if !b.ready() {
		return
	}
	need := int64(h.rows) * int64(dw.rows) * 4
	if b.logits == nil || b.logits.Size() < need {
		b.m.free(b.logits)
		b.logits = nil
		lb, err := b.m.alloc(need)
		if err != nil {
			b.fail(fmt.Errorf("engine: logits for %d positions: %w", h.rows, err))
			return
		}
		b.logits = lb
	}
	if err := b.m.e.matVecAt(cuda.Ptr(b.logits), dw, h.ptr(), nil, h.rows, false); err != nil {
		b.fail(err)
		return
	}
	if err := b.logits.Read(cuda.Bytes(b.bt.Out)); err != nil {
		b.fail(err)
	}
}
