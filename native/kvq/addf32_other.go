//go:build !amd64 || purego

package kvq

// addF32Vec and scaleF32Vec do nothing here: the kernels are amd64 assembly
// (addf32_amd64.go).
func addF32Vec(dst, x []float32) int { return 0 }

func scaleF32Vec(dst []float32, s float32) int { return 0 }

var addF32VecOn = true

func addF32Kernels() map[string]addF32Kernel { return nil }
