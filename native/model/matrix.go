package model

import (
	"fmt"
	"sync"

	"github.com/kvlab/kvlab/native/gguf"
	"github.com/kvlab/kvlab/native/wkern"
)

// Matrix is a weight matrix W of Rows×Cols values stored row-major in a GGUF type: row r holds
// Cols values in Data[r·RowBytes : (r+1)·RowBytes]. A GGUF tensor of dims [ne0, ne1] is a
// Matrix of Rows = ne1 and Cols = ne0, so y = W·x maps an ne0-vector to an ne1-vector.
//
// The products read rows in place (the mapping of the file): MatVec dots every row with x
// block by block without dequantizing it; MatMul dequantizes a few rows at a time into
// scratch and reuses them for every token of the batch. Both split rows across a Pool.
type Matrix struct {
	Name       string
	Type       gguf.Type
	Rows, Cols int
	RowBytes   int
	Data       []byte
	k          kernel
	// wk is the integer kernel (activations quantized once per product) where the CPU has an
	// assembly one for the type; intK says whether it is set.
	wk   wkern.Kernel
	intK bool
}

// mulTasks recycles the state of the integer products: the quantized activations and the
// loop body handed to the pool, so a product allocates nothing in steady state.
var mulTasks = sync.Pool{New: func() any { return new(mulTask) }}

// mulTask is one integer product: y = W·x for the tokens quantized in a.
type mulTask struct {
	m   *Matrix
	y   []float32
	a   wkern.Act
	inv bool // the batch-invariant kernel (mulRowwise)
	// unit is the rows of one index of Range: the invariant kernel's row group, else 1.
	unit int
}

func (t *mulTask) Range(lo, hi int) {
	m := t.m
	if t.inv {
		m.wk.MulInvariant(t.y, m.Rows, m.Data, m.RowBytes, &t.a, lo*t.unit, min(hi*t.unit, m.Rows))
		return
	}
	m.wk.MulRows(t.y, m.Rows, m.Data, m.RowBytes, &t.a, lo, hi)
}

// NewMatrix wraps data as a rows×cols matrix of type t. It fails when the type has no kernel,
// when cols is not a whole number of the type's blocks, or when data is not rows rows long.
func NewMatrix(name string, t gguf.Type, rows, cols int, data []byte) (*Matrix, error) {
	k, ok := kernels[t]
	if !ok {
		return nil, fmt.Errorf("model: tensor %q: weight type %s is not supported (supported: %s)", name, t, supportedTypes())
	}
	rb := int(t.RowBytes(uint64(cols)))
	switch {
	case rows <= 0 || cols <= 0:
		return nil, fmt.Errorf("model: tensor %q: empty shape %d×%d", name, rows, cols)
	case rb == 0:
		return nil, fmt.Errorf("model: tensor %q: row of %d values is not a whole number of %s blocks of %d", name, cols, t, t.BlockSize())
	case len(data) != rows*rb:
		return nil, fmt.Errorf("model: tensor %q: %d bytes of data, want %d rows × %d", name, len(data), rows, rb)
	}
	m := &Matrix{Name: name, Type: t, Rows: rows, Cols: cols, RowBytes: rb, Data: data, k: k}
	if wkern.Accelerated(t) {
		m.wk, m.intK = wkern.KernelOf(t)
	}
	return m, nil
}

func supportedTypes() string {
	return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K"
}

// Row returns row r's stored bytes.
func (m *Matrix) Row(r int) []byte { return m.Data[r*m.RowBytes : (r+1)*m.RowBytes] }

// DequantRow writes row r as float32 into y (Cols values).
func (m *Matrix) DequantRow(y []float32, r int) { m.k.dequant(m.Row(r), y[:m.Cols]) }

// workGrain is the number of multiply-adds below which a product is not split further: about
// the work that costs as much as handing a chunk to another goroutine.
const workGrain = 1 << 16

// MatVec computes y = W·x: y has Rows values and x Cols values. Rows are split across the
// pool when the matrix is large enough to pay for it.
func (m *Matrix) MatVec(y, x []float32, p *Pool) {
	y, x = y[:m.Rows], x[:m.Cols]
	if m.intK {
		m.mulInt(y, x, 1, p, false)
		return
	}
	if p.Threads() == 1 || m.Rows*m.Cols <= workGrain {
		m.matVec(y, x, 0, m.Rows)
		return
	}
	p.For(m.Rows, max(1, workGrain/m.Cols), func(lo, hi int) { m.matVec(y, x, lo, hi) })
}

func (m *Matrix) matVec(y, x []float32, lo, hi int) {
	dot, rb := m.k.dot, m.RowBytes
	if m.Type == gguf.F16 && matVecF16(y, x, m.Data, rb, lo, hi) {
		return
	}
	if m.Type == gguf.F32 {
		if w := f32s(m.Data); w != nil {
			// Four rows a dot4, a quarter of the range apart: four sequential streams from
			// memory, which one thread reads faster than one (as rowsF16x4AVX512; on an AMD Zen
			// 5 VM a 1.1B model's f32 matrices streamed 23 % faster than with four adjacent
			// rows). Each row's sum does not depend on its neighbours, so the outputs are those
			// of adjacent rows bit for bit; the last (hi−lo)%4 rows take dotF32.
			c, q := m.Cols, (hi-lo)/4
			var out [4]float32
			for r := lo; r < lo+q; r++ {
				dot4(x, w[r*c:(r+3*q+1)*c], q*c, &out)
				y[r], y[r+q], y[r+2*q], y[r+3*q] = out[0], out[1], out[2], out[3]
			}
			for r := lo + 4*q; r < hi; r++ {
				y[r] = dotF32(x, w[r*c:(r+1)*c])
			}
			return
		}
	}
	for r := lo; r < hi; r++ {
		y[r] = dot(m.Data[r*rb:(r+1)*rb], x)
	}
}

// MatMul computes Y = X·Wᵀ for a batch of n tokens: X is n×Cols (token-major) and Y n×Rows,
// Y[t][r] = W_r·X[t]. Each worker takes a range of rows, converts a tile of them to float32
// once and dots every token against the tile, so each weight row is read once per batch.
func (m *Matrix) MatMul(y, x []float32, n int, p *Pool) {
	y, x = y[:n*m.Rows], x[:n*m.Cols]
	if n == 1 {
		m.MatVec(y, x, p)
		return
	}
	if n >= gemmMinTokens && wkern.GEMMAccelerated() && wkern.FloatGEMM(m.Type) && !(m.intK && m.wk.Blocked()) {
		m.mulFloat(y, x, n, p)
		return
	}
	if m.intK {
		m.mulInt(y, x, n, p, false)
		return
	}
	if p.Threads() == 1 || n*m.Rows*m.Cols <= workGrain {
		m.matMul(y, x, n, 0, m.Rows)
		return
	}
	p.For(m.Rows, max(1, workGrain/(n*m.Cols)), func(lo, hi int) { m.matMul(y, x, n, lo, hi) })
}

// mulInt is MatMul with the integer kernel: the n activation rows are quantized once into the
// kernel's format, then each worker multiplies a range of weight rows against all of them.
// inv picks the batch-invariant kernel (mulRowwise), whose outputs do not depend on the split.
func (m *Matrix) mulInt(y, x []float32, n int, p *Pool, inv bool) {
	t := mulTasks.Get().(*mulTask)
	t.m, t.y, t.inv, t.unit = m, y, inv, 1
	if inv {
		t.unit = m.wk.InvariantRows()
	}
	t.a.Prepare(m.wk.Format(), n, m.Cols)
	if n >= 2*p.Threads() && p.Threads() > 1 {
		p.For(n, max(1, workGrain/(8*m.Cols)), func(lo, hi int) { t.a.QuantizeTokens(x, lo, hi) })
	} else {
		t.a.QuantizeTokens(x, 0, n)
	}
	if units := (m.Rows + t.unit - 1) / t.unit; p.Threads() == 1 || n*m.Rows*m.Cols <= workGrain {
		t.Range(0, units)
	} else {
		p.ForRange(units, max(1, workGrain/(n*m.Cols*t.unit)), t)
	}
	t.m, t.y = nil, nil
	mulTasks.Put(t)
}

// gemmMinTokens is the smallest batch multiplied with wkern's blocked float GEMM (the float
// types, Q8_0 and Q4_0); smaller ones, and decode, take the row dots.
const gemmMinTokens = 4

// mulFloat is MatMul with wkern's float GEMM: the tokens are packed once (wkern.PackTokens,
// split across the pool by token groups), then workers take ranges of 16-row slivers.
func (m *Matrix) mulFloat(y, x []float32, n int, p *Pool) {
	const mr = 16
	bp := packedTokens.Get().(*[]float32)
	need := wkern.PackedTokensLen(n, m.Cols)
	if cap(*bp) < need {
		*bp = make([]float32, need)
	}
	xp := (*bp)[:need]
	slivers := (m.Rows + mr - 1) / mr
	body := func(lo, hi int) {
		wkern.MulFloatPacked(y, m.Rows, m.Type, m.Data, m.RowBytes, xp, n, m.Cols, lo*mr, min(hi*mr, m.Rows))
	}
	if groups := wkern.TokenGroups(n); p.Threads() == 1 || groups < 2 {
		wkern.PackTokens(xp, x, n, m.Cols, 0, groups)
	} else {
		p.For(groups, 1, func(lo, hi int) { wkern.PackTokens(xp, x, n, m.Cols, lo, hi) })
	}
	if p.Threads() == 1 || n*m.Rows*m.Cols <= workGrain {
		body(0, slivers)
	} else {
		p.For(slivers, max(1, workGrain/(n*m.Cols*mr)), body)
	}
	packedTokens.Put(bp)
}

// packedTokens recycles mulFloat's packed token buffers.
var packedTokens = sync.Pool{New: func() any { return new([]float32) }}

// tileBytes is the size of the float32 row tile MatMul keeps hot while it sweeps the tokens.
const tileBytes = 32 << 10

func (m *Matrix) matMul(y, x []float32, n, lo, hi int) {
	c, rows := m.Cols, m.Rows
	tile := max(1, tileBytes/(4*c))
	var w []float32
	if m.Type == gguf.F32 {
		w = f32s(m.Data)
	}
	var buf []float32
	if w == nil {
		buf = make([]float32, min(tile, hi-lo)*c)
	}
	for r0 := lo; r0 < hi; r0 += tile {
		r1 := min(r0+tile, hi)
		var ws []float32
		if w != nil {
			ws = w[r0*c : r1*c]
		} else {
			ws = buf[:(r1-r0)*c]
			for r := r0; r < r1; r++ {
				m.k.dequant(m.Row(r), ws[(r-r0)*c:(r-r0+1)*c])
			}
		}
		t := 0
		var out [4]float32
		for ; t+4 <= n; t += 4 {
			xt := x[t*c : (t+4)*c]
			for r := r0; r < r1; r++ {
				dot4(ws[(r-r0)*c:(r-r0+1)*c], xt, c, &out)
				y[t*rows+r], y[(t+1)*rows+r], y[(t+2)*rows+r], y[(t+3)*rows+r] = out[0], out[1], out[2], out[3]
			}
		}
		for ; t < n; t++ {
			xt := x[t*c : (t+1)*c]
			yt := y[t*rows : (t+1)*rows]
			for r := r0; r < r1; r++ {
				yt[r] = dotF32(xt, ws[(r-r0)*c:(r-r0+1)*c])
			}
		}
	}
}

// MatVecReference computes y = W·x the plain way, the oracle for MatVec and MatMul: every row
// converted by gguf.DequantizeRow, then a sequential float32 dot product.
func (m *Matrix) MatVecReference(y, x []float32) error {
	row := make([]float32, m.Cols)
	for r := 0; r < m.Rows; r++ {
		if err := gguf.DequantizeRow(m.Type, m.Row(r), row); err != nil {
			return fmt.Errorf("model: tensor %q row %d: %w", m.Name, r, err)
		}
		var s float32
		for i, w := range row {
			s += w * x[i]
		}
		y[r] = s
	}
	return nil
}
