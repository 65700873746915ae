//go:build !amd64 || purego

package kvq

// rotRowVec: no vector kernel here; the callers run the Go loops.
func rotRowVec(r *rotation, dst, src, mu, ilam []float32) bool { return false }

func rotRowTVec(r *rotation, dst, src []float32) bool { return false }

func setRotVec(on bool) {}

func rotRowTKernels() map[string]func(dst, src, sc *float32) { return nil }

func rotRowKernels() map[string]func(dst, src, sc, mu, ilam *float32) { return nil }
