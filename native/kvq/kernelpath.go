package kvq

import (
	"fmt"
	"runtime"
	"strings"
)

// FastDecode reports whether decode attention over rows of format f at head dimension d runs on
// this CPU and build through a fast path: SIMD kernels that read each row once for all the
// query heads that share it (MultiQuery, q2k's ScoresRangeMulti), or, for q8_0, q4_0 and f16
// rows shorter than one block, their short-row paths. Where it reports false, decode falls back
// to per-query loops in Go and is kernel-bound: several times f16's time per token however
// few bytes the format reads.
func FastDecode(f Format, d int) bool {
	switch f {
	case F16:
		return multiF16 != nil && (d >= BlockSize || f16Short && d%8 == 0)
	case Q8_0:
		return d < BlockSize || multiQ8_0 != nil
	case Q4_0:
		return d < BlockSize || multiQ4_0 != nil
	case BF16:
		return multiBF16 != nil && d >= BlockSize
	case Q4_1:
		return multiQ4_1 != nil && d >= BlockSize
	case Q5_0:
		return multiQ5_0 != nil && d >= BlockSize
	case Q5_1:
		return multiQ5_1 != nil && d >= BlockSize
	case IQ4_NL:
		return multiIQ4NL != nil && d >= BlockSize
	case FP8:
		return multiFP8 != nil && d >= BlockSize
	case TQ4:
		return multiTQ4 != nil && d >= BlockSize
	case Turbo4:
		return multiTurbo4 != nil && d >= BlockSize
	case Turbo3:
		return multiTurbo3 != nil && d >= BlockSize
	case Turbo2:
		return multiTurbo2 != nil && d >= BlockSize
	case Q2K:
		return Q2KFastPath(d)
	}
	return false // f32 (twice f16's bytes anyway): no kernels
}

// KernelWarning is one line saying which half of pair p has no fast decode path (FastDecode)
// at head dimensions dk (K) and dv (V) on this CPU, and why; "" when both have one.
func KernelWarning(p Pair, dk, dv int) string {
	kOK, vOK := FastDecode(p.K, dk), FastDecode(p.V, dv)
	if kOK && vOK {
		return ""
	}
	var which string
	switch {
	case !kOK && !vOK && p.K == p.V:
		which = p.K.String()
	case !kOK && !vOK:
		which = fmt.Sprintf("K (%s) and V (%s)", p.K, p.V)
	case !kOK:
		which = fmt.Sprintf("K (%s)", p.K)
	default:
		which = fmt.Sprintf("V (%s)", p.V)
	}
	return fmt.Sprintf("kv %s: %s has no fast decode kernel %s; decode runs in Go loops, several times f16's time per token",
		p, which, slowReason(p, kOK, dk, dv))
}

// slowReason says why a format lacks its fast path here.
func slowReason(p Pair, kOK bool, dk, dv int) string {
	f, d := p.V, dv
	if !kOK {
		f, d = p.K, dk
	}
	switch {
	case f == F32:
		return "(f32 has none)"
	case multiF16 == nil && runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64":
		return "on " + runtime.GOARCH + " (the kernels are amd64 AVX2/AVX-512 and arm64 NEON only)"
	case multiF16 == nil && runtime.GOARCH == "arm64":
		return "in a purego build (every arm64 CPU runs the NEON kernels otherwise)"
	case multiF16 == nil:
		return "on this CPU (amd64 without AVX2, FMA and F16C, or a purego build)"
	case f == Q2K:
		return fmt.Sprintf("at head_dim %d (q2k's kernel needs a multiple of 32 up to %d)", d, q2kMultiMaxDim)
	}
	if d < BlockSize {
		return fmt.Sprintf("at head_dim %d (below one 32-value block)", d)
	}
	return "(no SIMD kernel written for " + f.String() + " yet)"
}

// KernelSummary is one line saying which formats have no fast decode path (FastDecode) on this
// CPU and build, at head dimensions of at least one block (probed at 128) and below it (at 16),
// for pages that do not know the model's head dimension.
func KernelSummary() string {
	var big, small []string
	for _, f := range Formats() {
		if !FastDecode(f, 128) {
			big = append(big, f.String())
		}
		if !FastDecode(f, 16) {
			small = append(small, f.String())
		}
	}
	if len(big) == len(Formats()) {
		return "No fast decode kernels for any KV format here " + slowReason(Pair{K: F16, V: F16}, false, 128, 128) +
			": decode runs in Go loops, several times f16's time per token."
	}
	return fmt.Sprintf("Decode kernels here (%s): no fast path for %s at head_dim ≥ 32, nor for %s below 32; those run in Go loops, several times f16's time per token.",
		runtime.GOARCH+", "+KernelISA(), strings.Join(big, ", "), strings.Join(small, ", "))
}
