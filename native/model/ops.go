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

// swiGLU writes g_i = SiLU(g_i) · u_i, SiLU(z) = z / (1 + e^(−z)).
func swiGLU(g, u []float32) {
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
