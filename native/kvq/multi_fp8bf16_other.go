//go:build !amd64 || purego

package kvq

// fp8BF16Active is false: the bf16 kernel is amd64 assembly.
func fp8BF16Active() bool { return false }

// fp8BF16AccActive is false, and fp8AccKernels multiFP8: the bf16 values kernel is amd64
// assembly.
func fp8BF16AccActive() bool { return false }

func fp8AccKernels() *multiKernels { return multiFP8 }

func (c fp8Codec) scoresBF16(q []float32, n int, rows []byte, out, mu []float32) {
	panic("kvq: no bf16 fp8 kernel on this platform")
}

func fp8Grid(dst, q []float32, n, d int) { panic("kvq: no bf16 fp8 kernel on this platform") }

// fp8AMXActive is false: the AMX kernel is amd64 assembly.
func fp8AMXActive() bool { return false }

// fp8AMXAccActive is false, and fp8AMXAcc never called: the AMX kernel is amd64 assembly.
func fp8AMXAccActive() bool { return false }

func fp8AMXAcc(acc []float32, n int, w []float32, rows []byte) {
	panic("kvq: no AMX fp8 kernel on this platform")
}
