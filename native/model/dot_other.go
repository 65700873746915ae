//go:build !amd64 || purego

package model

// dotF32 returns Σ a_i·b_i over len(a) values; b must hold at least len(a). The sum is taken in
// several partial sums, so it differs from a sequential float32 loop by rounding only.
func dotF32(a, b []float32) float32 { return dotF32Go(a, b[:len(a)]) }

// dot4 writes out[k] = Σ_i a_i·b[k·stride+i] over len(a) values for k < 4.
func dot4(a, b []float32, stride int, out *[4]float32) { dot4Go(a, b, stride, out) }

// dotF16 returns Σ x_i·w_i over len(x) values of an f16 row (w: 2·len(x) bytes).
func dotF16(row []byte, x []float32) float32 { return dotF16Go(row, x) }

// matVecF16 reports false: there is no assembly row loop here.
func matVecF16(y, x []float32, data []byte, rowBytes, lo, hi int) bool { return false }

// swiGLUAsm does nothing here (no assembly loop): swiGLU runs swiGLUGo over every value.
func swiGLUAsm(g, u []float32) int { return 0 }
