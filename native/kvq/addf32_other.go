//go:build !amd64 || purego

package kvq

// addF32Vec adds nothing here: the kernels are amd64 assembly (addf32_amd64.go).
func addF32Vec(dst, x []float32) int { return 0 }

var addF32VecOn = true

func addF32Kernels() map[string]addF32Kernel { return nil }
