//go:build amd64 && !purego

package kvq

import "github.com/kvlab/kvlab/internal/isa"

//go:noescape
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// amdFamily is the CPU's family (CPUID leaf 1, base plus extended family) on AMD CPUs and 0
// elsewhere: 0x19 is Zen 3 and Zen 4, 0x1A Zen 5.
var amdFamily = func() uint32 {
	_, b, c, d := cpuid(0, 0)
	if b != 0x68747541 || d != 0x69746e65 || c != 0x444d4163 { // "AuthenticAMD"
		return 0
	}
	a, _, _, _ := cpuid(1, 0)
	f := a >> 8 & 0xF
	if f == 0xF {
		f += a >> 20 & 0xFF
	}
	return f
}()

// intelCPU reports an Intel CPU (CPUID leaf 0's vendor "GenuineIntel"). On the Intel cores
// with AVX-512 (Sapphire Rapids class, measured: 2 vCPUs of a Xeon, family 6 model 167 as
// reported, ~4.07 GHz) port 1 takes no 512-bit work, and some operations AMD Zen 4 and Zen 5
// run at one or more a cycle take two: in a loop of 16 independent operations (thread CPU
// time, best of 15 runs of 200000 loops; gen_avx512.go's fp8 comments) VDPBF16PS Z and
// VPERMI2B Z 2.2 and 2.0 cycles each, VPERMB, VPUNPCKLBW, VPMOVSXBW and VEXTRACTI64X4 1,
// VCVTPH2PS 1.15, VFMADD231PS, VPDPBUSD, VFMADD231PH and VPTERNLOGD 0.55; an FMA with a
// subnormal float32 input or result ~146 cycles (a microcode assist). intelCPU selects the
// kernels that suit those costs where they differ from AMD's; some are the flavours Zen 4
// takes (zen4Stream) where Zen 5 keeps the generic ones. Each selection says what was measured.
var intelCPU = func() bool {
	_, b, c, d := cpuid(0, 0)
	return b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e // "GenuineIntel"
}()

// zen4Stream reports the CPUs whose q8_0 AVX-512 kernels prefetch into L2 (PREFETCHT1), not L1:
// AMD family 0x19, whose AVX-512 parts are Zen 4 (32 KiB L1D). Their flavours
// (multiScoresQ80Z4VNNI where AVX-512 VBMI2 is present too (q80Z4Scores), multiAccQ80Z4INT and
// multiAccQ80Z4TwoINT, prefetching as far ahead)
// give the same results bit for bit. Measured on a Zen 4 (EPYC Genoa; 4096 rows of 128 values,
// 4 queries, thread CPU time, the flavours interleaved, 11 rounds, median; streamed: rows past
// the caches, 96 MiB; two runs): values 14.5–15.9 -> 9.9–12.1 ns a row streamed, 7.6–7.7 ->
// 7.2–7.5 in cache; scores 10.4 -> 9.2 streamed, 7.3 in cache both. With PREFETCHT0 the q8_0
// values kernel streamed at ~2× its in-cache time (the other block formats, half the bytes a
// row, at ~1.2–1.3×) and as fast as with no prefetch at all. The nibble formats' kernels ran up
// to ~20% slower streamed with PREFETCHT1 (q4_1's scores 3% faster) and keep PREFETCHT0, but
// the values kernels with 8-bit weights take it: q4_0's, q4_1's and iq4_nl's
// (multiAccQ40V8Z4INT, multiAccQ41V8Z4INT, multiAccIQ4NLV8Z4INT, and their two-accumulator
// variants, multiAccQ40V8Z4TwoINT etc., multi_intacc2_amd64.go), q5_0's and q5_1's
// (multiAccQ51V8Z4INT; multi_intacc_amd64.go and gen_intacc.go have the measurements) took less
// time streamed. The Zen 5 the kernels were tuned on (48 KiB L1D) keeps PREFETCHT0: not
// measured with PREFETCHT1. KVLAB_NO_ZEN4 (isa.NoZen4) turns the flavours off, so that a Zen 4
// can run and measure what other AVX-512 CPUs run.
var zen4Stream = amdFamily == 0x19 && !isa.NoZen4
