//go:build arm64 && !purego

package wkern

import (
	"unsafe"

	"github.com/kvlab/kvlab/native/ggml"
	"github.com/kvlab/kvlab/native/gguf"
	"golang.org/x/sys/cpu"
)

// The arm64 kernels (dot_arm64.s) serve the one-token Q8_0 and Q4_0 row dots on every arm64
// CPU: with SDOT where the CPU has the ARMv8.2 dot product (hasSDOT: x/sys/cpu's ASIMDDP), else
// with the baseline widening multiplies (SMULL, SMLAL2, SADALP). Both compute the same exact
// integer block sums as the portable kernels; each block's four lane sums are converted to
// float32 and fused into four float accumulators with the block's scale (weight scale times
// activation scale), reduced pairwise at the row's end: equal to the portable kernels up to
// float32 order. The four-token, row-loop and blocked kernels stay amd64-only.
var hasSDOT = cpu.ARM64.HasASIMDDP

// hasAVX2 is false: the AVX2 kernels are amd64 assembly.
const hasAVX2 = false

// asmOn reports whether this CPU runs asmDots: every arm64 CPU runs one of the two sets.
const asmOn = true

// halfTable is ggml.HalfTable, the f16 weight scales' lookup in the assembly.
var halfTable = ggml.HalfTable

// The kernels return Σ_b f16(w_b)·d[b]·(Σ_i w_{b,i}·q_{b,i}) over nb blocks of the row at w and
// the activation codes at q with their scales d. Implemented in dot_arm64.s.

//go:noescape
func dotQ8_0SDOT(w, q, d unsafe.Pointer, nb int) float32

//go:noescape
func dotQ8_0NEON(w, q, d unsafe.Pointer, nb int) float32

//go:noescape
func dotQ4_0SDOT(w, q, d unsafe.Pointer, nb int) float32

//go:noescape
func dotQ4_0NEON(w, q, d unsafe.Pointer, nb int) float32

// rowDotArm64 wraps kernel f, with blocks of bsz bytes, as a rowDot.
func rowDotArm64(f func(w, q, d unsafe.Pointer, nb int) float32, bsz int) rowDot {
	return func(row []byte, a *Act, t int) float32 {
		q, d, _ := a.q8(t)
		if len(d) == 0 {
			return 0
		}
		_ = row[len(d)*bsz-1]
		_ = q[32*len(d)-1]
		return f(unsafe.Pointer(&row[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&d[0]), len(d))
	}
}

// arm64Dots returns the kernels for a CPU with (sdot) or without the dot product.
func arm64Dots(sdot bool) map[gguf.Type]rowDot {
	q8, q4 := dotQ8_0NEON, dotQ4_0NEON
	if sdot {
		q8, q4 = dotQ8_0SDOT, dotQ4_0SDOT
	}
	return map[gguf.Type]rowDot{gguf.Q8_0: rowDotArm64(q8, q8_0Bytes), gguf.Q4_0: rowDotArm64(q4, q4_0Bytes)}
}

// asmDots are the kernels this CPU runs.
var asmDots = arm64Dots(hasSDOT)

var asmDots4 = map[gguf.Type]rowDot4{}

func init() {
	for t, f := range asmDots {
		dots[t] = f
	}
}
