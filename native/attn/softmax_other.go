//go:build !amd64 || purego

package attn

// softmaxVec has no vector path here: softmaxRows runs in Go.
func softmaxVec(sco []float32, n int, scale float32, mx, sums []float32) (int, bool) { return 0, false }
