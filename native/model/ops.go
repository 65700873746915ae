package model

import "math"

// rmsNorm writes out_i = w_i · (x_i / √(mean(x²) + eps)) for one row, as llama2.c and ggml
// compute it (the sum of squares in float64).
func rmsNorm(out, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	s := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = w[i] * (s * v)
	}
}

// swiGLU writes g_i = SiLU(g_i) · u_i, SiLU(z) = z / (1 + e^(−z)): the float32 steps of
// swiGLUGo, bit for bit, through an assembly loop where there is one (swiGLUAsm).
func swiGLU(g, u []float32) {
	u = u[:len(g)]
	n := swiGLUAsm(g, u)
	swiGLUGo(g[n:], u[n:])
}

// swiGLUGo is swiGLU in Go, the reference: z·(1/(1+float32(math.Exp(−z))))·u, e^(−z) taken in
// float64 and rounded to float32.
func swiGLUGo(g, u []float32) {
	u = u[:len(g)]
	for i, z := range g {
		g[i] = z * (1 / (1 + float32(math.Exp(float64(-z))))) * u[i]
	}
}

// add writes x_i += y_i.
func add(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}

// addBias adds b to each of the n rows of x (n × len(b) values).
func addBias(x, b []float32, n int) {
	if b == nil {
		return
	}
	for t := 0; t < n; t++ {
		add(x[t*len(b):(t+1)*len(b)], b)
	}
}

// geGLU writes g_i = GELU(g_i) · u_i with GELU's tanh approximation (ggml's gelu formula,
// evaluated in float64 here rather than through ggml's f16 table).
func geGLU(g, u []float32) {
	u = u[:len(g)]
	const c = 0.7978845608028654 // √(2/π)
	for i, z := range g {
		x := float64(z)
		g[i] = float32(0.5*x*(1+math.Tanh(c*x*(1+0.044715*x*x)))) * u[i]
	}
}

// SoftCapAll writes x_i = c·tanh(x_i/c) (gemma's final logit soft-cap; the CUDA backend applies
// it to the logits it copies back).
func SoftCapAll(x []float32, c float32) {
	for i, v := range x {
		x[i] = c * float32(math.Tanh(float64(v/c)))
	}
}
