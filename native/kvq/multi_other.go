//go:build (!amd64 && !arm64) || purego

package kvq

// Without the assembly kernels every MultiQuery call runs DotMany and AccumulateMany per query.
var multiF16, multiQ8_0, multiQ4_0, multiTQ4 *multiKernels

// KernelISA names the instruction sets the decode-attention kernels use: none here (a purego
// build, or an architecture without kernels); decode runs in Go.
func KernelISA() string { return "Go" }
