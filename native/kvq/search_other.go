//go:build !amd64 || purego

package kvq

// symSearchVec: no vector kernel here; symSearchFast runs symSearchGo.
func symSearchVec(x []float32, id *[16]float32, lo, hi int32, sxc, scc *[16]float64) bool {
	return false
}

func symSearchKernels() map[string]func(x *float32, n int, id *[16]float32, off, lo, top float64, sxc, scc *[16]float64) {
	return nil
}

func hasSymSearchVec() bool   { return false }
func setSymSearchVec(on bool) {}
