package engine

import (
	"github.com/kvlab/kvlab/native/cuda"
)

// Ops are the row-wise layers of a llama-family forward pass on the device, callable one by
// one (the emulator tests check them; the forward pass launches the same kernels through
// ml.go): each matches native/model's CPU operation (double-precision
// sums and transcendentals where the CPU uses float64). The matrix products are Model's
// (kernels/mm.cu). All buffers hold float32; every method runs on the default stream.
type Ops struct{ e *Engine }

// Ops returns the engine's layer operations.
func (e *Engine) Ops() Ops { return Ops{e} }

// RMSNorm writes out[r][i] = w[i]·x[r][i]/√(mean x[r]² + eps) for rows rows of n values
// (out may be x).
func (o Ops) RMSNorm(out, x, w *cuda.Buffer, rows, n int, eps float32) error {
	k, err := o.e.kernel("rmsnorm")
	if err != nil {
		return err
	}
	return k.launch(cuda.D1(rows), cuda.D1(256), 0, nil, cuda.Ptr(out), cuda.Ptr(x), cuda.Ptr(w), cuda.Int(n), cuda.F32(eps))
}

// RoPE rotates the first dims values of every head of ntok tokens (x: ntok × heads × hd)
// at positions pos0…pos0+ntok−1 by freq (dims/2 inverse frequencies); neox selects pairs
// (j, j+dims/2) over (2j, 2j+1); positions are divided by scale; cos and sin are multiplied by
// mscale (YaRN's magnitude; 0 or 1 for none), as native/model's rope does.
func (o Ops) RoPE(x, freq *cuda.Buffer, ntok, pos0, heads, hd, dims int, neox bool, scale, mscale float32) error {
	k, err := o.e.kernel("rope")
	if err != nil {
		return err
	}
	nx := 0
	if neox {
		nx = 1
	}
	return k.launch(cuda.D2(ntok, heads), cuda.D1(64), 0, nil, cuda.Ptr(x), cuda.Ptr(freq), cuda.Int(pos0), cuda.Int(heads),
		cuda.Int(hd), cuda.Int(dims), cuda.Int(nx), cuda.F32(scale), cuda.F32(mscale))
}

// SwiGLU writes g[i] = SiLU(g[i])·u[i] for n values.
func (o Ops) SwiGLU(g, u *cuda.Buffer, n int) error {
	k, err := o.e.kernel("swiglu")
	if err != nil {
		return err
	}
	return k.launch(cuda.D1((n+255)/256), cuda.D1(256), 0, nil, cuda.Ptr(g), cuda.Ptr(u), cuda.Int(n))
}

// Add writes x[i] += y[i] for n values.
func (o Ops) Add(x, y *cuda.Buffer, n int) error {
	k, err := o.e.kernel("add")
	if err != nil {
		return err
	}
	return k.launch(cuda.D1((n+255)/256), cuda.D1(256), 0, nil, cuda.Ptr(x), cuda.Ptr(y), cuda.Int(n))
}
