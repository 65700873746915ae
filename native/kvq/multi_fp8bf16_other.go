//go:build !amd64 || purego

package kvq

// fp8BF16Active is false: the bf16 kernel is amd64 assembly.
func fp8BF16Active() bool { return false }

func (c fp8Codec) scoresBF16(q []float32, n int, rows []byte, out, mu []float32) {
	panic("kvq: no bf16 fp8 kernel on this platform")
}

func fp8Grid(dst, q []float32, n, d int) { panic("kvq: no bf16 fp8 kernel on this platform") }
